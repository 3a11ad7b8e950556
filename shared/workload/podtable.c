/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod table behind podmeta.c: pods by UID (and by static-pod config hash), containers by ID,
 * deleted entries kept for a grace period, and the JSON -> pod parsing that fills it. Pure: no
 * threads, no I/O, time passed in; podmeta.c holds its lock around every call.
 */
#include "podmeta-priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"

#define GPU_RESOURCE "nvidia.com/gpu" /* NVIDIA's device plugin's extended resource */

#define MAX_PODS 16384
#define MAX_CTRS 65536
#define MAX_CTRS_PER_POD 256

/* ---- string-keyed hash table with intrusive nodes ---- */

struct hnode {
	struct hnode *next;
	const char *key;
};

struct htab {
	struct hnode **b;
	size_t nb;
};

static size_t hash_str(const char *s, size_t nb)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)(h % nb);
}

static int htab_init(struct htab *t, size_t nb)
{
	t->b = calloc(nb, sizeof(*t->b));
	t->nb = nb;
	return t->b ? 0 : -ENOMEM;
}

static struct hnode *htab_get(const struct htab *t, const char *key)
{
	for (struct hnode *n = t->b[hash_str(key, t->nb)]; n; n = n->next) {
		if (strcmp(n->key, key) == 0)
			return n;
	}
	return NULL;
}

static void htab_put(struct htab *t, struct hnode *n)
{
	struct hnode **head = &t->b[hash_str(n->key, t->nb)];

	n->next = *head;
	*head = n;
}

static void htab_del(struct htab *t, struct hnode *n)
{
	for (struct hnode **pp = &t->b[hash_str(n->key, t->nb)]; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			return;
		}
	}
}

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#define htab_foreach(t, i, n, nx)                                                                  \
	for (size_t i = 0; i < (t)->nb; i++)                                                       \
		for (struct hnode *n = (t)->b[i], *nx = n ? n->next : NULL; n;                     \
		     n = nx, nx = n ? n->next : NULL)

struct pod {
	struct hnode by_uid;
	struct hnode by_hash; /* static pods: kubernetes.io/config.hash, the UID in their cgroups */
	struct vw_pod_info info;
	char hash[33];
	uint64_t list_gen; /* last list or poll that held it */
	uint64_t gone_ns;  /* 0 while it exists */
};

struct ctr {
	struct hnode by_id;
	char id[VW_CONTAINER_ID_LEN];
	char name[64];
	char pod_uid[VW_POD_UID_LEN];
	uint64_t stamp;
	uint64_t gone_ns;
};

/* One pod as parsed from JSON, before it is applied. */
struct pod_doc {
	struct vw_pod_info info;
	char hash[33];
	size_t nctr;
	struct {
		char id[VW_CONTAINER_ID_LEN];
		char name[64];
	} ctr[MAX_CTRS_PER_POD];
};

struct vw_podtable {
	uint64_t grace_ns;
	struct htab pods, hashes, ctrs;
	size_t npods, nctrs;
	size_t max_pods, max_ctrs;
	uint64_t evicted_pods, evicted_ctrs; /* at the cap: deleted ones let go early, or refused */
	uint64_t stamp;
	struct pod_doc doc; /* parse scratch */
	struct vw_complaint c_pod, c_full;
};

/* ---- quantities and IDs ---- */

static int suffix_exponents(const char *s, int *exp10, int *exp2)
{
	static const struct {
		const char *sfx;
		int e10, e2;
	} sfx[] = {
		{ "", 0, 0 },	 { "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },  { "k", 3, 0 },
		{ "M", 6, 0 },	 { "G", 9, 0 },	  { "T", 12, 0 },  { "P", 15, 0 },  { "E", 18, 0 },
		{ "Ki", 0, 10 }, { "Mi", 0, 20 }, { "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 },
		{ "Ei", 0, 60 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(sfx); i++) {
		if (strcmp(s, sfx[i].sfx) == 0) {
			*exp10 = sfx[i].e10;
			*exp2 = sfx[i].e2;
			return 0;
		}
	}
	/* Decimal exponent: e|E, optional sign, digits ("1e3"). A lone "E" is exa, above. */
	if ((s[0] == 'e' || s[0] == 'E') && s[1]) {
		const char *p = s + 1;
		int sign = 1, v = 0;

		if (*p == '+' || *p == '-')
			sign = *p++ == '-' ? -1 : 1;
		if (!*p)
			return -EINVAL;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			if (v > 9999)
				return -ERANGE;
			v = v * 10 + (*p - '0');
		}
		*exp10 = sign * v;
		*exp2 = 0;
		return 0;
	}
	return -EINVAL;
}

int vw_podmeta_parse_cpu_millis(const char *s, uint64_t *ret)
{
	char dig[64];
	size_t nd = 0, frac = 0, lead = 0;
	bool dot = false;
	int e10, e2, r;
	uint64_t d = 0;
	unsigned __int128 v;

	if (!s || !ret)
		return -EINVAL;
	if (*s == '+')
		s++;
	for (; (*s >= '0' && *s <= '9') || *s == '.'; s++) {
		if (*s == '.') {
			if (dot)
				return -EINVAL;
			dot = true;
			continue;
		}
		if (nd == sizeof(dig))
			return -ERANGE;
		dig[nd++] = *s;
		frac += dot;
	}
	if (nd == 0)
		return -EINVAL; /* "", "m", ".", "-1" */
	r = suffix_exponents(s, &e10, &e2);
	if (r < 0)
		return r;
	/* Significant digits only: leading zeros add nothing, trailing fraction zeros neither. */
	while (lead < nd && dig[lead] == '0')
		lead++;
	while (nd > lead && frac > 0 && dig[nd - 1] == '0')
		nd--, frac--;
	if (nd - lead > 18)
		return -ERANGE;
	for (size_t i = lead; i < nd; i++)
		d = d * 10 + (uint64_t)(dig[i] - '0');
	/* millicores = ceil(d * 10^(3 + e10 - frac) * 2^e2), exactly as MilliValue() rounds. */
	v = (unsigned __int128)d << e2;
	e10 += 3 - (int)frac;
	if (d == 0) {
		*ret = 0;
		return 0;
	}
	if (e10 >= 0) {
		for (int i = 0; i < e10; i++) {
			v *= 10;
			if (v > UINT64_MAX)
				return -ERANGE;
		}
	} else if (-e10 > 38) {
		v = 1; /* v < 2^120 < 10^38: a positive sliver rounds up to 1 */
	} else {
		unsigned __int128 div = 1;

		for (int i = 0; i < -e10; i++)
			div *= 10;
		v = (v + div - 1) / div;
	}
	if (v > UINT64_MAX)
		return -ERANGE;
	*ret = (uint64_t)v;
	return 0;
}

static bool is_hex64(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n == 64 && s[n] == '\0';
}

int vw_podmeta_parse_container_id(const char *s, char id[VW_CONTAINER_ID_LEN],
				  enum vw_runtime *ret_runtime)
{
	static const struct {
		const char *scheme;
		enum vw_runtime rt;
	} schemes[] = {
		{ "containerd", VW_RUNTIME_CONTAINERD },
		{ "docker", VW_RUNTIME_DOCKER },
		{ "cri-o", VW_RUNTIME_CRIO },
	};
	const char *sep;
	enum vw_runtime rt = VW_RUNTIME_UNKNOWN;

	if (!s || !(sep = strstr(s, "://")) || sep == s || !is_hex64(sep + 3))
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++) {
		if (strlen(schemes[i].scheme) == (size_t)(sep - s) &&
		    memcmp(s, schemes[i].scheme, (size_t)(sep - s)) == 0)
			rt = schemes[i].rt;
	}
	memcpy(id, sep + 3, VW_CONTAINER_ID_LEN);
	if (ret_runtime)
		*ret_runtime = rt;
	return 0;
}

/* ---- pod documents ---- */

static bool valid_uid(const char *s)
{
	size_t n = strlen(s);

	return (n == 36 || n == 32) && strspn(s, "0123456789abcdef-") == n;
}

static uint64_t container_request(struct vw_podtable *t, struct json_object *c, const char *pod)
{
	const char *q = vw_jstr(vw_jobj(vw_jobj(c, "resources"), "requests"), "cpu");
	uint64_t m;

	if (!q)
		return 0;
	if (vw_podmeta_parse_cpu_millis(q, &m) < 0) {
		vw_complain(&t->c_pod, VW_LOG_WARN, "podmeta: pod %s: bad CPU request '%.32s'", pod,
			    q);
		return 0;
	}
	return m;
}

/*
 * Whole GPUs a container asks for: an extended resource, so its request equals its limit and
 * may be given as the limit alone (Kubernetes then copies it to the request).
 */
static uint64_t container_gpus(struct vw_podtable *t, struct json_object *c, const char *pod)
{
	struct json_object *res = vw_jobj(c, "resources");
	const char *q = vw_jstr(vw_jobj(res, "limits"), GPU_RESOURCE);
	uint64_t m;

	if (!q)
		q = vw_jstr(vw_jobj(res, "requests"), GPU_RESOURCE);
	if (!q)
		return 0;
	if (vw_podmeta_parse_cpu_millis(q, &m) < 0 || m % 1000) {
		vw_complain(&t->c_pod, VW_LOG_WARN, "podmeta: pod %s: bad %s request '%.32s'", pod,
			    GPU_RESOURCE, q);
		return 0;
	}
	return m / 1000;
}

/* Regular containers, plus restartable init containers (sidecars) that run alongside them. */
static uint64_t pod_request(struct vw_podtable *t, struct json_object *spec, const char *pod,
			    uint64_t (*each)(struct vw_podtable *, struct json_object *,
					     const char *))
{
	struct json_object *a;
	uint64_t sum = 0;

	if ((a = vw_jarr(spec, "containers"))) {
		for (size_t i = 0; i < json_object_array_length(a); i++)
			sum = vw_add_sat(sum, each(t, json_object_array_get_idx(a, i), pod));
	}
	if ((a = vw_jarr(spec, "initContainers"))) {
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			struct json_object *c = json_object_array_get_idx(a, i);
			const char *policy = vw_jstr(c, "restartPolicy");

			if (policy && strcmp(policy, "Always") == 0)
				sum = vw_add_sat(sum, each(t, c, pod));
		}
	}
	return sum;
}

static void doc_add_ctr(struct vw_podtable *t, struct pod_doc *d, const char *cid,
			const char *name)
{
	char id[VW_CONTAINER_ID_LEN];

	if (!cid || !*cid)
		return; /* waiting: no container yet */
	if (vw_podmeta_parse_container_id(cid, id, NULL) < 0 || !name || strlen(name) >= 64) {
		vw_complain(&t->c_pod, VW_LOG_WARN, "podmeta: pod %s: bad container '%.80s'",
			    d->info.name, cid);
		return;
	}
	for (size_t i = 0; i < d->nctr; i++) {
		if (strcmp(d->ctr[i].id, id) == 0)
			return;
	}
	if (d->nctr == MAX_CTRS_PER_POD)
		return;
	memcpy(d->ctr[d->nctr].id, id, sizeof(id));
	snprintf(d->ctr[d->nctr].name, sizeof(d->ctr[d->nctr].name), "%s", name);
	d->nctr++;
}

/* Current and last-terminated IDs of every container, init and ephemeral container. */
static void doc_add_statuses(struct vw_podtable *t, struct pod_doc *d, struct json_object *status)
{
	static const char *const lists[] = { "containerStatuses", "initContainerStatuses",
					     "ephemeralContainerStatuses" };

	for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
		struct json_object *a = vw_jarr(status, lists[l]);

		for (size_t i = 0; a && i < json_object_array_length(a); i++) {
			struct json_object *cs = json_object_array_get_idx(a, i);
			struct json_object *last = vw_jobj(vw_jobj(cs, "lastState"), "terminated");
			const char *name = vw_jstr(cs, "name");

			doc_add_ctr(t, d, vw_jstr(cs, "containerID"), name);
			doc_add_ctr(t, d, vw_jstr(last, "containerID"), name);
		}
	}
}

/* A virt-launcher pod's VMI and VM names, from its labels (values up to 63 bytes, as
 * Kubernetes allows; a value that is not a label value is ignored). */
static void kubevirt_labels(struct json_object *labels, struct vw_pod_info *info)
{
	const char *role = vw_jstr(labels, "kubevirt.io");

	if (!role || strcmp(role, "virt-launcher") != 0)
		return;
	if (vw_copy_str(info->kubevirt_vmi, sizeof(info->kubevirt_vmi),
			vw_jstr(labels, "kubevirt.io/domain")) < 0)
		info->kubevirt_vmi[0] = '\0';
	if (!info->kubevirt_vmi[0] ||
	    vw_copy_str(info->kubevirt_vm, sizeof(info->kubevirt_vm),
			vw_jstr(labels, "vm.kubevirt.io/name")) < 0)
		info->kubevirt_vm[0] = '\0';
}

/*
 * The pod's controller, when it is a kubevirt.io VirtualMachineInstance: its name. A
 * virt-launcher pod's metadata.ownerReferences holds one such (apiVersion kubevirt.io/v1, kind
 * VirtualMachineInstance, controller true, name and uid the VMI's; e.g. `oc get pod
 * virt-launcher-fedora06-wwtvw -o yaml` in github.com/akaliwod/ocp-virtualization,
 * doc/ocp-kubevirt-fedora-disk/OcPod.md). The API server allows one controller per object: the
 * first counts. Any kubevirt.io version (v1alpha3 before v1).
 */
static void kubevirt_owner(struct json_object *refs, struct vw_pod_info *info)
{
	for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);
		struct json_object *ctl = vw_jget(ref, "controller", json_type_boolean);
		const char *api = vw_jstr(ref, "apiVersion"), *kind = vw_jstr(ref, "kind");

		if (!ctl || !json_object_get_boolean(ctl))
			continue;
		if (api && strncmp(api, "kubevirt.io/", strlen("kubevirt.io/")) == 0 && kind &&
		    strcmp(kind, "VirtualMachineInstance") == 0) {
			info->kubevirt_owned = true;
			if (vw_copy_str(info->kubevirt_owner, sizeof(info->kubevirt_owner),
					vw_jstr(ref, "name")) < 0)
				info->kubevirt_owner[0] = '\0';
		}
		return;
	}
}

static int parse_pod(struct vw_podtable *t, struct json_object *pod, struct pod_doc *d)
{
	struct json_object *meta = vw_jobj(pod, "metadata");
	const char *hash = vw_jstr(vw_jobj(meta, "annotations"), "kubernetes.io/config.hash");

	memset(&d->info, 0, sizeof(d->info));
	d->hash[0] = '\0';
	d->nctr = 0;
	if (vw_copy_str(d->info.uid, sizeof(d->info.uid), vw_jstr(meta, "uid")) < 0 ||
	    !valid_uid(d->info.uid) ||
	    vw_copy_str(d->info.name, sizeof(d->info.name), vw_jstr(meta, "name")) < 0 ||
	    vw_copy_str(d->info.namespace_, sizeof(d->info.namespace_), vw_jstr(meta, "namespace")) < 0)
		return -EINVAL;
	if (hash && strlen(hash) == 32 && strspn(hash, "0123456789abcdef") == 32)
		memcpy(d->hash, hash, 33);
	d->info.cpu_request_millis =
		pod_request(t, vw_jobj(pod, "spec"), d->info.name, container_request);
	d->info.gpu_request = pod_request(t, vw_jobj(pod, "spec"), d->info.name, container_gpus);
	kubevirt_labels(vw_jobj(meta, "labels"), &d->info);
	kubevirt_owner(vw_jarr(meta, "ownerReferences"), &d->info);
	doc_add_statuses(t, d, vw_jobj(pod, "status"));
	return 0;
}

/* ---- the table ---- */

static bool expired(const struct vw_podtable *t, uint64_t gone_ns, uint64_t now)
{
	return gone_ns && now - gone_ns >= t->grace_ns;
}

static struct pod *pod_get(struct vw_podtable *t, const char *uid)
{
	struct hnode *n = htab_get(&t->pods, uid);

	return n ? container_of(n, struct pod, by_uid) : NULL;
}

static struct ctr *ctr_get(struct vw_podtable *t, const char *id)
{
	struct hnode *n = htab_get(&t->ctrs, id);

	return n ? container_of(n, struct ctr, by_id) : NULL;
}

/* Containers of a pod whose stamp is not `keep` are gone as of now (all of them: keep = 0). */
static void ctrs_gone(struct vw_podtable *t, const char *uid, uint64_t keep, uint64_t now)
{
	htab_foreach(&t->ctrs, i, n, nx) {
		struct ctr *c = container_of(n, struct ctr, by_id);

		if (!c->gone_ns && c->stamp != keep && strcmp(c->pod_uid, uid) == 0)
			c->gone_ns = now;
	}
}

static void pod_gone(struct vw_podtable *t, struct pod *p, uint64_t now)
{
	if (!p->gone_ns)
		p->gone_ns = now;
	ctrs_gone(t, p->info.uid, 0, now);
}

static void pod_set_hash(struct vw_podtable *t, struct pod *p, const char *hash)
{
	if (strcmp(p->hash, hash) == 0)
		return;
	if (p->hash[0])
		htab_del(&t->hashes, &p->by_hash);
	snprintf(p->hash, sizeof(p->hash), "%s", hash); /* "" unindexes */
	if (p->hash[0] && !htab_get(&t->hashes, p->hash))
		htab_put(&t->hashes, &p->by_hash);
	else
		p->hash[0] = '\0';
}

static void pod_free(struct vw_podtable *t, struct pod *p)
{
	pod_set_hash(t, p, "");
	htab_del(&t->pods, &p->by_uid);
	t->npods--;
	free(p);
}

static void ctr_free(struct vw_podtable *t, struct ctr *c)
{
	htab_del(&t->ctrs, &c->by_id);
	t->nctrs--;
	free(c);
}

static void drop_pod(struct vw_podtable *t, struct hnode *n)
{
	pod_free(t, container_of(n, struct pod, by_uid));
}

static void drop_ctr(struct vw_podtable *t, struct hnode *n)
{
	ctr_free(t, container_of(n, struct ctr, by_id));
}

/* A table the cap applies to: where its entries keep their node and gone_ns, how one goes. */
struct capped {
	size_t node_off, gone_off;
	void (*drop)(struct vw_podtable *t, struct hnode *n);
};
static const struct capped capped_pods = { offsetof(struct pod, by_uid),
					   offsetof(struct pod, gone_ns), drop_pod };
static const struct capped capped_ctrs = { offsetof(struct ctr, by_id),
					   offsetof(struct ctr, gone_ns), drop_ctr };

static uint64_t gone_ns(const struct capped *k, const struct hnode *n)
{
	return *(const uint64_t *)((const char *)n - k->node_off + k->gone_off);
}

/* The entry gone the longest ago; NULL when none is gone. */
static struct hnode *oldest_gone(const struct capped *k, const struct htab *h)
{
	struct hnode *old = NULL;

	htab_foreach(h, i, n, nx) {
		uint64_t gone = gone_ns(k, n);

		if (gone && (!old || gone < gone_ns(k, old)))
			old = n;
	}
	return old;
}

/*
 * Room for one more entry in h, which holds n of at most max: at the cap, the entry deleted (or,
 * for containers, replaced) the longest ago goes, counted in *evicted when its grace period had
 * not ended; none deleted: false (the new entry is refused, counted too).
 */
static bool room(struct vw_podtable *t, uint64_t now, const struct capped *k, struct htab *h,
		 size_t n, size_t max, uint64_t *evicted)
{
	struct hnode *old;

	if (n < max)
		return true;
	old = oldest_gone(k, h);
	*evicted += !old || !expired(t, gone_ns(k, old), now);
	if (old)
		k->drop(t, old);
	return old != NULL;
}

static struct pod *pod_upsert(struct vw_podtable *t, const struct pod_doc *d, uint64_t now)
{
	struct pod *p = pod_get(t, d->info.uid);
	uint64_t stamp = ++t->stamp;

	if (!p) {
		if (!room(t, now, &capped_pods, &t->pods, t->npods, t->max_pods, &t->evicted_pods) ||
		    !(p = calloc(1, sizeof(*p)))) {
			vw_complain(&t->c_full, VW_LOG_WARN,
				    "podmeta: pod table full (%zu pods, none deleted): pod %s/%s "
				    "has no metadata", t->npods, d->info.namespace_, d->info.name);
			return NULL;
		}
		p->info = d->info;
		p->by_uid.key = p->info.uid;
		p->by_hash.key = p->hash;
		htab_put(&t->pods, &p->by_uid);
		t->npods++;
	}
	p->info = d->info;
	p->gone_ns = 0;
	pod_set_hash(t, p, d->hash);
	for (size_t i = 0; i < d->nctr; i++) {
		struct ctr *c = ctr_get(t, d->ctr[i].id);

		if (!c) {
			if (!room(t, now, &capped_ctrs, &t->ctrs, t->nctrs, t->max_ctrs,
				  &t->evicted_ctrs) ||
			    !(c = calloc(1, sizeof(*c)))) {
				vw_complain(&t->c_full, VW_LOG_WARN,
					    "podmeta: container table full (%zu containers, none "
					    "gone)", t->nctrs);
				continue;
			}
			memcpy(c->id, d->ctr[i].id, sizeof(c->id));
			c->by_id.key = c->id;
			htab_put(&t->ctrs, &c->by_id);
			t->nctrs++;
		}
		memcpy(c->name, d->ctr[i].name, sizeof(c->name));
		memcpy(c->pod_uid, d->info.uid, sizeof(c->pod_uid));
		c->stamp = stamp;
		c->gone_ns = 0;
	}
	ctrs_gone(t, d->info.uid, stamp, now);
	return p;
}

void vw_podtable_sweep(struct vw_podtable *t, uint64_t now_ns)
{
	htab_foreach(&t->ctrs, i, n, nx) {
		struct ctr *c = container_of(n, struct ctr, by_id);

		if (expired(t, c->gone_ns, now_ns))
			ctr_free(t, c);
	}
	htab_foreach(&t->pods, i, n, nx) {
		struct pod *p = container_of(n, struct pod, by_uid);

		if (expired(t, p->gone_ns, now_ns))
			pod_free(t, p);
	}
}

int vw_podtable_apply(struct vw_podtable *t, struct json_object *pod, uint64_t gen, bool deleted,
		      uint64_t now_ns)
{
	struct pod *p;

	if (parse_pod(t, pod, &t->doc) < 0) {
		vw_complain(&t->c_pod, VW_LOG_WARN, "podmeta: pod without valid uid/name/namespace");
		return -EINVAL;
	}
	if (deleted) {
		p = pod_get(t, t->doc.info.uid);
		if (p)
			pod_gone(t, p, now_ns);
		return 0;
	}
	p = pod_upsert(t, &t->doc, now_ns);
	if (!p)
		return -ENOSPC;
	p->list_gen = gen;
	return 0;
}

void vw_podtable_retire(struct vw_podtable *t, uint64_t gen, uint64_t now_ns)
{
	htab_foreach(&t->pods, i, n, nx) {
		struct pod *p = container_of(n, struct pod, by_uid);

		if (p->list_gen != gen)
			pod_gone(t, p, now_ns);
	}
}

/* ---- lookups ---- */

int vw_podtable_by_container(struct vw_podtable *t, const char *id, uint64_t now_ns,
			     struct vw_pod_info *ret, char *name, size_t namelen)
{
	struct ctr *c = ctr_get(t, id);
	struct pod *p;

	if (!c || expired(t, c->gone_ns, now_ns))
		return -ENOENT;
	p = pod_get(t, c->pod_uid);
	if (!p || expired(t, p->gone_ns, now_ns))
		return -ENOENT;
	*ret = p->info;
	if (name && namelen)
		snprintf(name, namelen, "%s", c->name);
	return 0;
}

int vw_podtable_by_uid(struct vw_podtable *t, const char *uid, uint64_t now_ns,
		       struct vw_pod_info *ret)
{
	struct pod *p = pod_get(t, uid);
	struct hnode *h;

	if (!p && (h = htab_get(&t->hashes, uid)))
		p = container_of(h, struct pod, by_hash);
	if (!p || expired(t, p->gone_ns, now_ns))
		return -ENOENT;
	*ret = p->info;
	return 0;
}

void vw_podtable_set_caps(struct vw_podtable *t, size_t max_pods, size_t max_ctrs)
{
	t->max_pods = max_pods;
	t->max_ctrs = max_ctrs;
}

void vw_podtable_table_stats(const struct vw_podtable *t, struct vw_table_stat *pods,
			     struct vw_table_stat *ctrs)
{
	*pods = (struct vw_table_stat){ .present = true, .entries = t->npods,
					.evictions = t->evicted_pods };
	*ctrs = (struct vw_table_stat){ .present = true, .entries = t->nctrs,
					.evictions = t->evicted_ctrs };
}

size_t vw_podtable_count(const struct vw_podtable *t)
{
	size_t live = 0;

	htab_foreach(&t->pods, i, n, nx) {
		if (!container_of(n, struct pod, by_uid)->gone_ns)
			live++;
	}
	return live;
}

/* ---- lifecycle ---- */

struct vw_podtable *vw_podtable_new(uint64_t grace_ns)
{
	struct vw_podtable *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->grace_ns = grace_ns;
	t->max_pods = MAX_PODS;
	t->max_ctrs = MAX_CTRS;
	if (htab_init(&t->pods, 1024) < 0 || htab_init(&t->hashes, 256) < 0 ||
	    htab_init(&t->ctrs, 4096) < 0) {
		vw_podtable_free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void vw_podtable_free(struct vw_podtable *t)
{
	if (!t)
		return;
	if (t->ctrs.b) {
		htab_foreach(&t->ctrs, i, n, nx)
			free(container_of(n, struct ctr, by_id));
	}
	if (t->pods.b) {
		htab_foreach(&t->pods, i, n, nx)
			free(container_of(n, struct pod, by_uid));
	}
	free(t->ctrs.b);
	free(t->pods.b);
	free(t->hashes.b);
	free(t);
}
