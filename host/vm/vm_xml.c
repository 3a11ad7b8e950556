/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small reader for libvirt domain XML: <domain type=>, <vcpu>, the org.virtwatt.power.0 unix
 * channel, the virtwatt filesystem, the PCI and mdev host devices, and the owner OpenStack Nova
 * writes into <metadata> (instance name, flavor, user and project). libvirt-dev does not pull
 * in libxml2, and these few values do not justify a DOM parser; this one is a single forward
 * pass with no recursion and no allocation, so a huge or deeply nested document costs linear
 * time and constant memory.
 * Element names are remembered for the first TRACK_DEPTH levels (the values sit at depth <= 5);
 * deeper elements are still checked for balance by count. DOCTYPEs (entity expansion) are
 * refused; character references and the five predefined entities are decoded in the attribute
 * values that are kept.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "vm_priv.h"

#define TRACK_DEPTH 8
#define MAX_ATTRS 16

struct view {
	const char *s;
	size_t n;
};

struct attr {
	struct view name, value;
};

struct tag {
	struct view name;
	struct attr attrs[MAX_ATTRS];
	size_t n_attrs;
	bool end, empty; /* </name>, <name/> */
};

/* One <channel> or <filesystem> being read. */
struct device {
	bool open, wanted_type, target_ok, readonly; /* readonly: <readonly/> (a filesystem) */
	char path[256];
};

/* One <hostdev mode='subsystem'> of type pci or mdev being read: its source's address. */
struct hostdev {
	bool open, pci, mdev, addressed;
	char id[VW_UUID_LEN]; /* canonical PCI address or mdev UUID; "" when invalid */
};

/*
 * Nova's <metadata><nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
 * being read (nova/virt/libvirt/config.py, LibvirtConfigGuestMetaNovaInstance): the prefix the
 * element binds to Nova's namespace, and the text of the element being captured.
 */
#define NOVA_NS "http://openstack.org/xmlns/libvirt/nova/"
struct nova {
	bool open, in_owner;
	char prefix[32]; /* "" for a default namespace */
	char *cap;       /* where the captured element's text goes, or NULL */
	size_t cap_size, cap_depth;
	char raw[256];
	size_t raw_len;
};

struct parser {
	const char *p, *end;
	size_t depth;
	struct view stack[TRACK_DEPTH];
	bool root_seen, root_closed;
	struct device chan, fs;
	struct hostdev hd;
	bool in_vcpu, vcpu_current;
	char vcpu_text[32];
	size_t vcpu_len;
	struct nova nova;
	struct vw_domxml *out;
};

static bool view_eq(struct view v, const char *lit)
{
	return v.n == strlen(lit) && memcmp(v.s, lit, v.n) == 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == ':' || c == '.' || c == '-' || (unsigned char)c >= 0x80;
}

static const struct view *find_attr(const struct tag *t, const char *name)
{
	for (size_t i = 0; i < t->n_attrs; i++)
		if (view_eq(t->attrs[i].name, name))
			return &t->attrs[i].value;
	return NULL;
}

static size_t put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* "&...;" at s (n bytes left) into o; returns the bytes consumed, 0 when invalid. */
static size_t decode_entity(const char *s, size_t n, char *o, size_t *olen)
{
	static const struct {
		const char *name;
		char c;
	} named[] = { { "lt", '<' }, { "gt", '>' }, { "amp", '&' }, { "quot", '"' }, { "apos", '\'' } };
	const char *semi = memchr(s, ';', VW_MIN(n, (size_t)12));
	size_t len;

	if (!semi)
		return 0;
	len = (size_t)(semi - s) - 1; /* between & and ; */
	if (len >= 2 && s[1] == '#') {
		bool hex = s[2] == 'x';
		unsigned long cp = 0;
		size_t digits = 0;

		for (const char *q = s + (hex ? 3 : 2); q < semi; q++, digits++) {
			int d = (*q >= '0' && *q <= '9') ? *q - '0'
				: hex && (*q | 0x20) >= 'a' && (*q | 0x20) <= 'f' ? (*q | 0x20) - 'a' + 10
										    : -1;
			if (d < 0 || cp > 0x10ffff)
				return 0;
			cp = cp * (hex ? 16 : 10) + (unsigned long)d;
		}
		if (!digits || cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		*olen = put_utf8(o, cp);
		return (size_t)(semi - s) + 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(named); i++)
		if (len == strlen(named[i].name) && memcmp(s + 1, named[i].name, len) == 0) {
			o[0] = named[i].c;
			*olen = 1;
			return (size_t)(semi - s) + 1;
		}
	return 0;
}

/* A decoded attribute value into buf. -EINVAL bad entity, -ENAMETOOLONG when it does not fit. */
static int attr_value(const struct view *v, char *buf, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < v->n;) {
		char tmp[4];
		size_t tn = 1, used = 1;

		if (v->s[i] == '&') {
			used = decode_entity(v->s + i, v->n - i, tmp, &tn);
			if (!used)
				return -EINVAL;
		} else {
			tmp[0] = v->s[i];
		}
		if (o + tn >= size)
			return -ENAMETOOLONG;
		memcpy(buf + o, tmp, tn);
		o += tn;
		i += used;
	}
	buf[o] = '\0';
	return 0;
}

static bool attr_is(const struct tag *t, const char *name, const char *want)
{
	const struct view *v = find_attr(t, name);
	char buf[64];

	return v && attr_value(v, buf, sizeof(buf)) == 0 && strcmp(buf, want) == 0;
}

static void attr_copy(const struct tag *t, const char *name, char *out, size_t size)
{
	const struct view *v = find_attr(t, name);

	if (!v || attr_value(v, out, size) < 0)
		out[0] = '\0';
}

/* ---- Tokens ---- */

/* Skip past the terminator lit; -EINVAL when it never comes. */
static int skip_past(struct parser *ps, const char *lit)
{
	const char *q = memmem(ps->p, (size_t)(ps->end - ps->p), lit, strlen(lit));

	if (!q)
		return -EINVAL;
	ps->p = q + strlen(lit);
	return 0;
}

static void skip_space(struct parser *ps)
{
	while (ps->p < ps->end && is_space(*ps->p))
		ps->p++;
}

static int read_name(struct parser *ps, struct view *v)
{
	v->s = ps->p;
	while (ps->p < ps->end && is_name_char(*ps->p))
		ps->p++;
	v->n = (size_t)(ps->p - v->s);
	return v->n ? 0 : -EINVAL;
}

/* A start or end tag; ps->p is just after '<'. */
static int read_tag(struct parser *ps, struct tag *t)
{
	memset(t, 0, sizeof(*t));
	if (ps->p < ps->end && *ps->p == '/') {
		t->end = true;
		ps->p++;
	}
	if (read_name(ps, &t->name) < 0)
		return -EINVAL;
	for (;;) {
		struct attr a;
		const char *q;
		char quote;

		skip_space(ps);
		if (ps->p >= ps->end)
			return -EINVAL;
		if (*ps->p == '>') {
			ps->p++;
			return 0;
		}
		if (!t->end && *ps->p == '/' && ps->p + 1 < ps->end && ps->p[1] == '>') {
			t->empty = true;
			ps->p += 2;
			return 0;
		}
		if (t->end || read_name(ps, &a.name) < 0)
			return -EINVAL;
		skip_space(ps);
		if (ps->p >= ps->end || *ps->p != '=')
			return -EINVAL;
		ps->p++;
		skip_space(ps);
		if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
			return -EINVAL;
		quote = *ps->p++;
		q = memchr(ps->p, quote, (size_t)(ps->end - ps->p));
		if (!q || memchr(ps->p, '<', (size_t)(q - ps->p)))
			return -EINVAL;
		a.value = (struct view){ ps->p, (size_t)(q - ps->p) };
		ps->p = q + 1;
		if (t->n_attrs < MAX_ATTRS)
			t->attrs[t->n_attrs++] = a;
	}
}

/* ---- Elements ---- */

/* The open ancestors are exactly these names (the first n levels). */
static bool at(const struct parser *ps, size_t n, const char *const *names)
{
	if (ps->depth != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!view_eq(ps->stack[i], names[i]))
			return false;
	return true;
}

static void hypervisor_label(const struct tag *t, char *out, size_t size)
{
	static const struct {
		const char *type, *label;
	} map[] = { { "kvm", "kvm" }, { "qemu", "kvm" }, { "kqemu", "kvm" }, { "xen", "xen" },
		    { "vbox", "virtualbox" }, { "vmware", "vmware" } };
	char type[32];
	size_t o = 0;

	/* Keep [a-z0-9] first, then map, so the label is the same when read again (fuzz_domxml:
	 * "C\xff\xffkqemu[" once gave "kqemu", which reads back as "kvm"). */
	attr_copy(t, "type", type, sizeof(type));
	for (const char *c = type; *c && o + 1 < size; c++)
		if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))
			out[o++] = *c;
	out[o] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (strcmp(out, map[i].type) == 0) {
			snprintf(out, size, "%s", map[i].label);
			return;
		}
}

static void vcpu_set(struct parser *ps, const char *text)
{
	uint64_t v;

	if (vw_parse_u64(text, &v) == 0 && v > 0 && v <= 16384)
		ps->out->vcpus = (unsigned)v;
}

/*
 * A PCI address number as libvirt reads it (strtoul base 0: 0x hex, 0 octal, else decimal) up
 * to max; an absent attribute is 0 when optional. -EINVAL otherwise (a sign, space, junk).
 */
static int pci_number(const struct tag *t, const char *name, unsigned long max, bool optional,
		      unsigned *ret)
{
	const struct view *v = find_attr(t, name);
	char buf[24], *end;
	unsigned long n;

	if (!v) {
		*ret = 0;
		return optional ? 0 : -EINVAL;
	}
	if (attr_value(v, buf, sizeof(buf)) < 0 || buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	errno = 0;
	n = strtoul(buf, &end, 0);
	if (errno || *end || n > max)
		return -EINVAL;
	*ret = (unsigned)n;
	return 0;
}

/* <source><address …/> of a host device: the first one decides, valid or not. */
static void hostdev_address(struct hostdev *hd, const struct tag *t)
{
	unsigned dom, bus, slot, fn;

	if (hd->addressed)
		return;
	hd->addressed = true;
	if (hd->mdev) {
		char uuid[64];

		attr_copy(t, "uuid", uuid, sizeof(uuid));
		if (vw_vm_uuid_canon(uuid, strlen(uuid), hd->id) < 0)
			hd->id[0] = '\0';
	} else if (pci_number(t, "domain", 0xffff, true, &dom) == 0 &&
		   pci_number(t, "bus", 0xff, false, &bus) == 0 &&
		   pci_number(t, "slot", 0x1f, false, &slot) == 0 &&
		   pci_number(t, "function", 7, false, &fn) == 0) {
		snprintf(hd->id, sizeof(hd->id), "%04x:%02x:%02x.%x", dom, bus, slot, fn);
	}
}

/* ---- Nova's metadata ---- */

/* Whether name is the Nova element local (prefix:local, or local in a default namespace). */
static bool nova_is(const struct nova *nv, struct view name, const char *local)
{
	size_t pl = strlen(nv->prefix), ll = strlen(local);

	if (!pl)
		return view_eq(name, local);
	return name.n == pl + 1 + ll && memcmp(name.s, nv->prefix, pl) == 0 && name.s[pl] == ':' &&
	       memcmp(name.s + pl + 1, local, ll) == 0;
}

/* <P:instance> (or <instance>) under <metadata> whose own xmlns:P names Nova's namespace. */
static void nova_open(struct parser *ps, const struct tag *t)
{
	struct nova *nv = &ps->nova;
	const char *colon = memchr(t->name.s, ':', t->name.n);
	size_t pl = colon ? (size_t)(colon - t->name.s) : 0;
	char decl[40], ns[128];

	if (t->name.n - (colon ? pl + 1 : 0) != strlen("instance") ||
	    memcmp(t->name.s + (colon ? pl + 1 : 0), "instance", 8) != 0 || pl >= sizeof(nv->prefix))
		return;
	snprintf(decl, sizeof(decl), "xmlns%s%.*s", colon ? ":" : "", (int)pl, t->name.s);
	attr_copy(t, decl, ns, sizeof(ns));
	if (strncmp(ns, NOVA_NS, strlen(NOVA_NS)) != 0)
		return;
	*nv = (struct nova){ .open = true };
	memcpy(nv->prefix, t->name.s, pl);
	nv->prefix[pl] = '\0';
	snprintf(ps->out->owner.platform, sizeof(ps->out->owner.platform), "openstack");
}

/* An attribute value, decoded and made label-safe, into out ("" when absent or invalid). */
static void attr_label(const struct tag *t, const char *name, char *out, size_t size)
{
	char buf[256];

	attr_copy(t, name, buf, sizeof(buf));
	vw_vm_name_sanitize(out, size, buf, strlen(buf));
}

static void nova_capture(struct parser *ps, char *out, size_t size)
{
	ps->nova.cap = out;
	ps->nova.cap_size = size;
	ps->nova.cap_depth = ps->depth;
	ps->nova.raw_len = 0;
}

/* An element inside the open <nova:instance> (ps->depth is its depth). */
static void nova_element(struct parser *ps, const struct tag *t)
{
	struct nova *nv = &ps->nova;
	struct vw_vm_owner *o = &ps->out->owner;

	if (ps->depth == 3 && nova_is(nv, t->name, "name")) {
		nova_capture(ps, o->instance_name, sizeof(o->instance_name));
	} else if (ps->depth == 3 && nova_is(nv, t->name, "flavor")) {
		attr_label(t, "name", o->flavor, sizeof(o->flavor));
	} else if (ps->depth == 3 && nova_is(nv, t->name, "owner")) {
		nv->in_owner = true;
	} else if (ps->depth == 4 && nv->in_owner && nova_is(nv, t->name, "user")) {
		attr_label(t, "uuid", o->user_id, sizeof(o->user_id));
		nova_capture(ps, o->user_name, sizeof(o->user_name));
	} else if (ps->depth == 4 && nv->in_owner && nova_is(nv, t->name, "project")) {
		attr_label(t, "uuid", o->project_id, sizeof(o->project_id));
		nova_capture(ps, o->project_name, sizeof(o->project_name));
	}
}

/* The captured text, entities decoded, spaces trimmed, label-safe; "" when invalid. */
static void nova_capture_end(struct nova *nv)
{
	struct view v = { nv->raw, nv->raw_len };
	char buf[sizeof(nv->raw) + 4];

	while (v.n && is_space(v.s[0])) {
		v.s++;
		v.n--;
	}
	while (v.n && is_space(v.s[v.n - 1]))
		v.n--;
	if (attr_value(&v, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	vw_vm_name_sanitize(nv->cap, nv->cap_size, buf, strlen(buf));
	nv->cap = NULL;
}

static void nova_end(struct parser *ps, struct view name)
{
	struct nova *nv = &ps->nova;

	if (nv->cap && ps->depth == nv->cap_depth)
		nova_capture_end(nv);
	if (ps->depth == 3 && nova_is(nv, name, "owner"))
		nv->in_owner = false;
	else if (ps->depth == 2 && nova_is(nv, name, "instance"))
		nv->open = false;
}

/* ---- The elements kept ---- */

static void start_element(struct parser *ps, const struct tag *t)
{
	static const char *const p_dom[] = { "domain" };
	static const char *const p_dev[] = { "domain", "devices" };
	static const char *const p_chan[] = { "domain", "devices", "channel" };
	static const char *const p_fs[] = { "domain", "devices", "filesystem" };
	static const char *const p_hd_src[] = { "domain", "devices", "hostdev", "source" };
	static const char *const p_meta[] = { "domain", "metadata" };

	if (ps->nova.open) {
		nova_element(ps, t);
	} else if (at(ps, 2, p_meta) && !ps->out->owner.platform[0]) {
		nova_open(ps, t);
	} else if (ps->depth == 0) {
		hypervisor_label(t, ps->out->hypervisor, sizeof(ps->out->hypervisor));
	} else if (at(ps, 1, p_dom) && view_eq(t->name, "vcpu")) {
		char cur[32];

		ps->in_vcpu = true;
		ps->vcpu_len = 0;
		attr_copy(t, "current", cur, sizeof(cur));
		ps->vcpu_current = cur[0] != '\0';
		if (ps->vcpu_current)
			vcpu_set(ps, cur);
	} else if (at(ps, 2, p_dev) && view_eq(t->name, "channel")) {
		ps->chan = (struct device){ .open = true, .wanted_type = attr_is(t, "type", "unix") };
	} else if (at(ps, 2, p_dev) && view_eq(t->name, "filesystem")) {
		ps->fs = (struct device){ .open = true, .wanted_type = true };
	} else if (at(ps, 2, p_dev) && view_eq(t->name, "hostdev")) {
		bool sub = attr_is(t, "mode", "subsystem");

		ps->hd = (struct hostdev){ .open = true,
					   .pci = sub && attr_is(t, "type", "pci"),
					   .mdev = sub && attr_is(t, "type", "mdev") };
	} else if (at(ps, 4, p_hd_src) && ps->hd.open && (ps->hd.pci || ps->hd.mdev) &&
		   view_eq(t->name, "address")) {
		hostdev_address(&ps->hd, t);
	} else if (at(ps, 3, p_chan) && ps->chan.open) {
		if (view_eq(t->name, "source"))
			attr_copy(t, "path", ps->chan.path, sizeof(ps->chan.path));
		else if (view_eq(t->name, "target"))
			ps->chan.target_ok = attr_is(t, "name", VW_DOMXML_CHANNEL);
	} else if (at(ps, 3, p_fs) && ps->fs.open) {
		if (view_eq(t->name, "source"))
			attr_copy(t, "dir", ps->fs.path, sizeof(ps->fs.path));
		else if (view_eq(t->name, "target"))
			ps->fs.target_ok = attr_is(t, "dir", VW_DOMXML_SHARE);
		else if (view_eq(t->name, "readonly"))
			ps->fs.readonly = true;
	}
}

static void finish_device(struct device *d, char *out, size_t size)
{
	if (d->open && d->wanted_type && d->target_ok && d->path[0] && !out[0])
		snprintf(out, size, "%s", d->path);
	d->open = false;
}

/*
 * id into rows[*n] (rows of width bytes) unless already there, the list is full or it does not
 * fit (never: a PCI address takes 13 bytes of VW_PCI_ADDR_SIZE, a UUID VW_UUID_LEN).
 */
static void add_once(char *rows, size_t width, size_t *n, const char *id)
{
	size_t len = strlen(id);

	for (size_t i = 0; i < *n; i++)
		if (strcmp(rows + i * width, id) == 0)
			return;
	if (*n < VW_VM_MAX_HOSTDEVS && len < width)
		memcpy(rows + (*n)++ * width, id, len + 1);
}

static void finish_hostdev(struct parser *ps)
{
	struct hostdev *hd = &ps->hd;

	if (hd->open && hd->id[0] && hd->pci)
		add_once((char *)ps->out->pci_hostdev, VW_PCI_ADDR_SIZE, &ps->out->n_pci_hostdev,
			 hd->id);
	else if (hd->open && hd->id[0] && hd->mdev)
		add_once((char *)ps->out->mdev_uuid, VW_UUID_LEN, &ps->out->n_mdev, hd->id);
	hd->open = false;
}

/* ps->depth is the closed element's depth. */
static void end_element(struct parser *ps, struct view name)
{
	if (ps->nova.open)
		nova_end(ps, name);
	else if (ps->depth == 2 && view_eq(name, "hostdev"))
		finish_hostdev(ps);
	else if (ps->depth == 2 && view_eq(name, "channel"))
		finish_device(&ps->chan, ps->out->channel_path, sizeof(ps->out->channel_path));
	else if (ps->depth == 2 && view_eq(name, "filesystem")) {
		bool had = ps->out->share_dir[0] != '\0';

		finish_device(&ps->fs, ps->out->share_dir, sizeof(ps->out->share_dir));
		if (!had && ps->out->share_dir[0])
			ps->out->share_readonly = ps->fs.readonly;
	}
	else if (ps->depth == 1 && ps->in_vcpu) {
		ps->vcpu_text[ps->vcpu_len] = '\0';
		if (!ps->vcpu_current)
			vcpu_set(ps, ps->vcpu_text);
		ps->in_vcpu = false;
	}
}

static int handle_tag(struct parser *ps, const struct tag *t)
{
	if (t->end) {
		if (ps->depth == 0)
			return -EINVAL;
		ps->depth--;
		if (ps->depth < TRACK_DEPTH && (ps->stack[ps->depth].n != t->name.n ||
						memcmp(ps->stack[ps->depth].s, t->name.s, t->name.n)))
			return -EINVAL;
		end_element(ps, t->name);
		if (ps->depth == 0)
			ps->root_closed = true;
		return 0;
	}
	if (ps->root_closed || (ps->depth == 0 && !view_eq(t->name, "domain")))
		return -EINVAL;
	ps->root_seen = true;
	start_element(ps, t);
	if (t->empty) {
		end_element(ps, t->name);
		return 0;
	}
	if (ps->depth < TRACK_DEPTH)
		ps->stack[ps->depth] = t->name;
	ps->depth++;
	return 0;
}

/* Character data up to the next '<': only <vcpu>'s and Nova's names matter, and nothing outside
 * the root. */
static int text(struct parser *ps)
{
	const char *lt = memchr(ps->p, '<', (size_t)(ps->end - ps->p));
	const char *stop = lt ? lt : ps->end;

	if (ps->depth == 0) {
		for (const char *q = ps->p; q < stop; q++)
			if (!is_space(*q))
				return -EINVAL;
	} else if (ps->in_vcpu && ps->depth == 2) {
		for (const char *q = ps->p; q < stop; q++)
			if (!is_space(*q) && ps->vcpu_len + 1 < sizeof(ps->vcpu_text))
				ps->vcpu_text[ps->vcpu_len++] = *q;
	} else if (ps->nova.cap && ps->depth == ps->nova.cap_depth + 1) {
		struct nova *nv = &ps->nova;
		size_t n = VW_MIN((size_t)(stop - ps->p), sizeof(nv->raw) - 1 - nv->raw_len);

		memcpy(nv->raw + nv->raw_len, ps->p, n);
		nv->raw_len += n;
	}
	ps->p = stop;
	return 0;
}

static int parse(struct parser *ps)
{
	while (ps->p < ps->end) {
		struct tag t;
		size_t left;
		int r;

		if (*ps->p != '<') {
			r = text(ps);
			if (r < 0)
				return r;
			continue;
		}
		ps->p++;
		left = (size_t)(ps->end - ps->p);
		if (left >= 3 && memcmp(ps->p, "!--", 3) == 0)
			r = skip_past(ps, "-->");
		else if (left >= 8 && memcmp(ps->p, "![CDATA[", 8) == 0)
			r = ps->depth ? skip_past(ps, "]]>") : -EINVAL;
		else if (left >= 1 && *ps->p == '?')
			r = skip_past(ps, "?>");
		else if (left >= 1 && *ps->p == '!')
			r = -EINVAL; /* DOCTYPE and friends */
		else if ((r = read_tag(ps, &t)) == 0)
			r = handle_tag(ps, &t);
		if (r < 0)
			return r;
	}
	return ps->root_seen && ps->depth == 0 ? 0 : -EINVAL;
}

int vw_domxml_parse(const char *xml, size_t len, struct vw_domxml *ret)
{
	struct parser ps = { .p = xml, .end = xml + len, .out = ret };
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!xml)
		return -EINVAL;
	if (len > VW_DOMXML_MAX)
		return -EFBIG;
	if (memchr(xml, '\0', len))
		return -EINVAL;
	r = parse(&ps);
	if (r < 0)
		memset(ret, 0, sizeof(*ret));
	return r;
}
