/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libvirt VM source with a FAKE libvirt plugged into the same core (vm_libvirt_core.c)
 * through struct vw_virt_api: domains start, stop, are renamed and re-created under their UUID,
 * QEMU PIDs get reused, libvirtd dies (calls fail) and comes back
 * (reconnect with backoff, the VM list survives meanwhile) or hangs, events arrive between
 * reconciles, and domain XML is hostile. The clock is fake; QEMU processes live in a procfs
 * fixture tree. Also: the XML reader itself, the merge by UUID, and the real libvirt calls
 * against libvirt's test:///default driver when libvirt is built in.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"
#include "passthrough.h"
#include "publish.h"
#include "vm_fixture.h"
#include "vm_libvirt_child.h"
#include "vm_libvirt_priv.h"
#include "vm_priv.h"
#include "vm_tracker.h"

#define UA "11111111-2222-4333-8444-555555555555"
#define UB "bbbbbbbb-2222-4333-8444-555555555555"
#define UC "cccccccc-2222-4333-8444-555555555555"
#define SETTLE_MS 5000
#define FAKE_DOMS 8

/* ---- The fake libvirt ---- */

struct fake_dom {
	char uuid[VW_UUID_LEN];
	char name[256];
	int id;
	bool active;
	enum vw_vm_state state;
	char *xml;
};

struct fake_conn {
	struct fake *f;
	unsigned epoch;
};

struct fake {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool up;
	unsigned epoch; /* a restart of libvirtd kills the connections of older epochs */
	struct fake_dom doms[FAKE_DOMS];
	size_t n;
	int next_id;
	struct fake_conn *conn;
	int loop_refs;
	bool hang_stats;
	unsigned connect_attempts, xml_calls;
};

static struct fake fk = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int fake_loop_start(void *data)
{
	struct fake *f = data;

	pthread_mutex_lock(&f->mu);
	f->loop_refs++;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static void fake_loop_stop(void *data)
{
	struct fake *f = data;

	pthread_mutex_lock(&f->mu);
	f->loop_refs--;
	pthread_mutex_unlock(&f->mu);
}

static int fake_connect(void *data, const char *uri, void **ret)
{
	struct fake *f = data;
	struct fake_conn *c;

	assert_string_equal(uri, "fake:///system");
	pthread_mutex_lock(&f->mu);
	f->connect_attempts++;
	if (!f->up) {
		pthread_mutex_unlock(&f->mu);
		return -ECONNREFUSED;
	}
	c = calloc(1, sizeof(*c));
	c->f = f;
	c->epoch = f->epoch;
	f->conn = c;
	pthread_mutex_unlock(&f->mu);
	*ret = c;
	return 0;
}

static void fake_close(void *conn)
{
	struct fake_conn *c = conn;
	struct fake *f = c->f;

	pthread_mutex_lock(&f->mu);
	if (f->conn == c)
		f->conn = NULL;
	pthread_mutex_unlock(&f->mu);
	free(c);
}

static bool alive(struct fake_conn *c)
{
	return c->f->up && c->epoch == c->f->epoch;
}

/* The active domains as a call on connection c sees them (copies, for reading). -ENOTCONN. */
static int fake_active(struct fake_conn *c, struct fake_dom out[FAKE_DOMS], size_t *ret_n)
{
	struct fake *f = c->f;
	size_t o = 0;
	int r = 0;

	pthread_mutex_lock(&f->mu);
	if (!alive(c))
		r = -ENOTCONN;
	for (size_t i = 0; r == 0 && i < f->n; i++)
		if (f->doms[i].active)
			out[o++] = f->doms[i];
	pthread_mutex_unlock(&f->mu);
	*ret_n = o;
	return r;
}

static int fake_list(void *conn, struct vw_virt_dom **ret, size_t *ret_n)
{
	struct fake_dom doms[FAKE_DOMS];
	struct vw_virt_dom *out;
	size_t n;
	int r = fake_active(conn, doms, &n);

	if (r < 0)
		return r;
	out = calloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		memcpy(out[i].uuid, doms[i].uuid, VW_UUID_LEN);
		memcpy(out[i].name, doms[i].name, sizeof(out[i].name));
		out[i].id = doms[i].id;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

static struct fake_dom *fake_find(struct fake *f, const char *uuid)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->doms[i].uuid, uuid) == 0)
			return &f->doms[i];
	return NULL;
}

static int fake_get_xml(void *conn, const char *uuid, char **ret)
{
	struct fake_conn *c = conn;
	struct fake *f = c->f;
	struct fake_dom *d;
	int r = 0;

	pthread_mutex_lock(&f->mu);
	f->xml_calls++;
	d = fake_find(f, uuid);
	if (!alive(c))
		r = -ENOTCONN;
	else if (!d || !d->active)
		r = -ENOENT;
	else
		*ret = strdup(d->xml);
	pthread_mutex_unlock(&f->mu);
	return r;
}

static int fake_stats(void *conn, struct vw_virt_stat **ret, size_t *ret_n)
{
	struct fake_conn *c = conn;
	struct fake *f = c->f;
	struct fake_dom doms[FAKE_DOMS];
	struct vw_virt_stat *out;
	size_t n;
	int r;

	pthread_mutex_lock(&f->mu);
	while (f->hang_stats)
		pthread_cond_wait(&f->cond, &f->mu);
	pthread_mutex_unlock(&f->mu);
	r = fake_active(c, doms, &n);
	if (r < 0)
		return r;
	out = calloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		memcpy(out[i].uuid, doms[i].uuid, VW_UUID_LEN);
		out[i].state = doms[i].state;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

static const char *fake_last_error(void *data)
{
	(void)data;
	return "fake libvirt: no";
}

static const struct vw_virt_api fake_api = {
	.loop_start = fake_loop_start,
	.loop_stop = fake_loop_stop,
	.connect = fake_connect,
	.close = fake_close,
	.list = fake_list,
	.get_xml = fake_get_xml,
	.stats = fake_stats,
	.last_error = fake_last_error,
};

/* ---- Driving the fake (the test plays libvirtd and the hypervisor) ---- */

static char *dom_xml(const char *name, unsigned vcpus, const char *chan, const char *share)
{
	char *x;

	assert_true(asprintf(&x,
			     "<domain type='kvm' id='1'>\n  <name>%s</name>\n"
			     "  <vcpu placement='static'>%u</vcpu>\n  <devices>\n"
			     "    <channel type='unix'><source mode='bind' path='%s'/>"
			     "<target type='virtio' name='org.virtwatt.power.0'/></channel>\n"
			     "    <filesystem type='mount' accessmode='passthrough'><source dir='%s'/>"
			     "<target dir='virtwatt'/></filesystem>\n  </devices>\n</domain>\n",
			     name, vcpus, chan, share) > 0);
	return x;
}

/* Start (or create) a domain: a new domain ID, like libvirt. xml is taken. */
static void fake_start(struct fake *f, const char *uuid, const char *name, char *xml)
{
	struct fake_dom *d;

	pthread_mutex_lock(&f->mu);
	d = fake_find(f, uuid);
	if (!d) {
		d = &f->doms[f->n++];
		memset(d, 0, sizeof(*d));
		snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	free(d->xml);
	d->xml = xml;
	d->id = ++f->next_id;
	d->active = true;
	d->state = VW_VM_RUNNING;
	pthread_mutex_unlock(&f->mu);
}

static void fake_stop(struct fake *f, const char *uuid)
{
	pthread_mutex_lock(&f->mu);
	fake_find(f, uuid)->active = false;
	pthread_mutex_unlock(&f->mu);
}

static void fake_set(struct fake *f, const char *uuid, enum vw_vm_state st)
{
	pthread_mutex_lock(&f->mu);
	fake_find(f, uuid)->state = st;
	pthread_mutex_unlock(&f->mu);
}

static void fake_rename(struct fake *f, const char *uuid, const char *name)
{
	pthread_mutex_lock(&f->mu);
	snprintf(fake_find(f, uuid)->name, sizeof(fake_find(f, uuid)->name), "%s", name);
	pthread_mutex_unlock(&f->mu);
}

/* libvirtd exits: its connections die; the next call on one fails. */
static void fake_kill(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	f->up = false;
	f->epoch++;
	pthread_mutex_unlock(&f->mu);
}

static void fake_revive(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	f->up = true;
	pthread_mutex_unlock(&f->mu);
}

static void fake_reset(struct fake *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->doms[i].xml);
	f->n = 0;
	f->up = true;
	f->epoch++;
	f->hang_stats = false;
	f->connect_attempts = f->xml_calls = 0;
	assert_null(f->conn);
	assert_int_equal(f->loop_refs, 0);
}

/* ---- Fixture ---- */

struct fx {
	char *root;
	int procfd;
	uint64_t now;
	void *src;
	struct vw_vm_info *v; /* the last list_n() */
};

static struct fx *fx_new(void)
{
	struct fx *x = calloc(1, sizeof(*x));

	x->root = vw_fixture_mkdtemp("vmlv");
	assert_non_null(x->root);
	x->procfd = open(x->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(x->procfd >= 0);
	x->now = 1000 * VW_NSEC_PER_SEC;
	vw_clock_set_fake(&x->now);
	fake_reset(&fk);
	return x;
}

static void fx_open(struct fx *x, uint64_t list_timeout_ns)
{
	struct vw_vm_env env = {
		.procfs_fd = x->procfd,
		.libvirt_uri = "fake:///system",
		.reconcile_ns = 3600 * VW_NSEC_PER_SEC,
		.backoff_min_ns = VW_NSEC_PER_SEC,
		.backoff_max_ns = 8 * VW_NSEC_PER_SEC,
		.list_timeout_ns = list_timeout_ns ? list_timeout_ns : 5 * VW_NSEC_PER_SEC,
	};

	assert_int_equal(vw_vm_libvirt_open_api(&env, &fake_api, &fk, &x->src), 0);
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
}

static void fx_free(struct fx *x)
{
	vw_vm_libvirt_close(x->src);
	free(x->v);
	vw_clock_set_fake(NULL);
	close(x->procfd);
	vw_fixture_rm(x->root);
	free(x);
	fake_reset(&fk);
}

static void qemu_proc(struct fx *x, uint32_t pid, uint64_t start, const char *uuid,
		      const char *name)
{
	static const char *const threads[] = { "qemu-system-x86", "IO mon_iothread", "CPU 0/TCG",
					       "CPU 1/TCG", NULL };
	char argv[512];

	snprintf(argv, sizeof(argv),
		 "/usr/bin/qemu-system-x86_64|-name|guest=%s,debug-threads=on|-uuid|%s|-smp|2", name,
		 uuid);
	assert_int_equal(vm_fixture_proc(x->root, pid, start, argv, threads, NULL), 0);
}

/* List the source's VMs into x->v (the previous list freed), asserting there are n. */
static struct vw_vm_info *list_n(struct fx *x, size_t n)
{
	size_t got = 0;

	free(x->v);
	x->v = NULL;
	assert_int_equal(vw_vm_libvirt_list(x->src, &x->v, &got), 0);
	assert_int_equal(got, n);
	return x->v;
}

/* A listed VM's i-th PCI host device, and its i-th mediated device, as text. */
static const char *pci_at(const struct vw_vm_info *v, size_t i)
{
	static char buf[VW_PCI_ADDR_SIZE];

	assert_true(i < v->n_pci_hostdev);
	vw_vm_pci_format(v->pci_hostdev[i], buf);
	return buf;
}

static const char *mdev_at(const struct vw_vm_info *v, size_t i)
{
	static char buf[VW_UUID_LEN];

	assert_true(i < v->n_mdev);
	vw_vm_mdev_format(v->mdev[i], buf);
	return buf;
}

static const struct vw_vm_info *find(const struct vw_vm_info *v, size_t n, const char *uuid)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].uuid, uuid) == 0)
			return &v[i];
	return NULL;
}

static void counters(struct fx *x, struct vw_vm_libvirt_counters *c)
{
	vw_vm_libvirt_get_counters(x->src, c);
}

/* The usual start: domain alpha running on QEMU 100, the source open and seeing it. */
static struct fx *fx_alpha(void)
{
	struct fx *x = fx_new();
	struct vw_vm_info *v;

	qemu_proc(x, 100, 5000, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	fx_open(x, 0);
	v = list_n(x, 1);
	assert_int_equal(v[0].qemu_pid, 100);
	return x;
}

/* ---- Lifecycle ---- */

static void test_start_stop(void **state)
{
	struct fx *x = fx_new();
	struct vw_vm_libvirt_counters c0, c1;
	struct vw_vm_info *v;
	const struct vw_vm_info *a;

	(void)state;
	qemu_proc(x, 100, 5000, UA, "alpha");
	{ /* alpha's folder exported read-only, as deploy/libvirt/power-share.xml does */
		char *xml = dom_xml("alpha", 2, "/run/vw/alpha.sock", "/srv/vw/alpha"), *ro = NULL;
		char *end = strstr(xml, "</filesystem>");

		assert_non_null(end);
		assert_true(asprintf(&ro, "%.*s<readonly/>%s", (int)(end - xml), xml, end) > 0);
		free(xml);
		fake_start(&fk, UA, "alpha", ro);
	}
	fx_open(x, 0);

	v = list_n(x, 1);
	a = &v[0];
	assert_string_equal(a->uuid, UA);
	assert_string_equal(a->name, "alpha");
	assert_string_equal(a->source, "libvirt");
	assert_string_equal(a->hypervisor, "kvm");
	assert_int_equal(a->state, VW_VM_RUNNING);
	assert_int_equal(a->vcpus, 2);
	assert_int_equal(a->qemu_pid, 100);
	assert_int_equal(a->qemu_start_time, 5000);
	assert_string_equal(a->channel_path, "/run/vw/alpha.sock");
	assert_string_equal(a->share_dir, "/srv/vw/alpha");
	assert_true(a->share_readonly);

	/* list() asks for stats only every 30 s (the reconcile's period) while every active
	 * domain's QEMU is found. A pause that sent no event (the daemon's helper sends none)
	 * shows once they are due. */
	counters(x, &c0);
	fake_set(&fk, UA, VW_VM_PAUSED);
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	x->now += 29 * VW_NSEC_PER_SEC;
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	counters(x, &c1);
	assert_int_equal(c1.stats_fetches, c0.stats_fetches);
	x->now += VW_NSEC_PER_SEC;
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_PAUSED);
	counters(x, &c1);
	assert_int_equal(c1.stats_fetches, c0.stats_fetches + 1);
	fake_set(&fk, UA, VW_VM_RUNNING);
	x->now += 30 * VW_NSEC_PER_SEC;
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);

	/* Paused, then stopped: the pause at the next stats; the stop as soon as its QEMU is
	 * found gone (stats due at once); shutoff is reported once, then the VM is forgotten. */
	fake_set(&fk, UA, VW_VM_PAUSED);
	x->now += 30 * VW_NSEC_PER_SEC;
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_PAUSED);
	fake_stop(&fk, UA);
	vm_fixture_kill(x->root, 100);
	v = list_n(x, 1); /* its QEMU is found gone */
	assert_int_equal(v[0].state, VW_VM_PAUSED);
	assert_int_equal(v[0].qemu_pid, 0);
	v = list_n(x, 1); /* so stats now, 0 s after the last */
	assert_int_equal(v[0].state, VW_VM_SHUTOFF);
	list_n(x, 0);
	fx_free(x);
}

/* A stop whose event was missed: its QEMU is gone, so the next list() asks for stats, however
 * recent the last ones, and the domain is reported stopped. */
static void test_missed_stop_without_qemu(void **state)
{
	struct fx *x = fx_alpha();
	struct vw_vm_libvirt_counters c0, c1;
	struct vw_vm_info *v;

	(void)state;
	counters(x, &c0);
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	counters(x, &c1);
	assert_int_equal(c1.stats_fetches, c0.stats_fetches); /* its QEMU runs: none due */

	fake_stop(&fk, UA);
	vm_fixture_kill(x->root, 100);
	v = list_n(x, 1); /* its QEMU is found gone */
	assert_int_equal(v[0].qemu_pid, 0);
	v = list_n(x, 1); /* so stats now */
	assert_int_equal(v[0].state, VW_VM_SHUTOFF);
	counters(x, &c1);
	assert_int_equal(c1.stats_fetches, c0.stats_fetches + 1);
	list_n(x, 0);
	fx_free(x);
}

/*
 * A domain destroyed before its QEMU was ever found (started and destroyed within a second,
 * the helper's answer listing it after its QEMU exited): nothing is ever found gone, so before
 * it stayed listed until the 30 s stats. Its QEMU not found at a list(), the next one asks for
 * stats, once a domain: it is reported stopped there. One never found (Xen, remote) costs one
 * helper run, not one a list().
 */
static void test_stop_before_qemu_found(void **state)
{
	struct fx *x = fx_new();
	struct vw_vm_libvirt_counters c0, c1;
	struct vw_vm_info *v;

	(void)state;
	fx_open(x, 0);
	assert_false(vw_vm_libvirt_vms_seen(x->src, 0)); /* the first round: only noted */
	fake_start(&fk, UB, "beta", dom_xml("beta", 1, "/b.sock", "/b"));
	fake_start(&fk, UC, "gamma", dom_xml("gamma", 1, "/c.sock", "/c"));
	assert_false(vw_vm_libvirt_vms_seen(x->src, 2));
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	fake_stop(&fk, UB); /* destroyed: no QEMU was ever in /proc */
	counters(x, &c0);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UB)->qemu_pid, 0);
	assert_int_equal(find(v, 2, UB)->state, VW_VM_RUNNING);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UB)->state, VW_VM_SHUTOFF);
	assert_int_equal(find(v, 2, UC)->state, VW_VM_RUNNING);
	counters(x, &c1);
	assert_int_equal(c1.stats_fetches, c0.stats_fetches + 1);
	/* gamma's QEMU is never found: no more stats for it within the 30 s. */
	list_n(x, 1);
	list_n(x, 1);
	x->now += 10 * VW_NSEC_PER_SEC;
	list_n(x, 1);
	counters(x, &c1);
	assert_int_equal(c1.stats_fetches, c0.stats_fetches + 1);
	fx_free(x);
}

static void test_start_seen_between_reconciles(void **state)
{
	struct fx *x = fx_new();
	struct vw_vm_libvirt_counters c0, c1;
	struct vw_vm_info *v;

	(void)state;
	fx_open(x, 0);
	counters(x, &c0);
	assert_true(c0.connected);
	assert_int_equal(c0.reconciles, 1);

	/* The registry's first round is only noted; the same count again asks for nothing. */
	assert_false(vw_vm_libvirt_vms_seen(x->src, 0));
	assert_false(vw_vm_libvirt_vms_seen(x->src, 0));
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c1);
	assert_int_equal(c1.reconciles, 1);

	/* A start: the process scan finds its QEMU, the registry's next round reports one VM
	 * more, and the worker fetches the new domain at once: no list(), no periodic pass. */
	qemu_proc(x, 200, 6000, UB, "beta");
	fake_start(&fk, UB, "beta", dom_xml("beta", 1, "/b.sock", "/b"));
	assert_false(vw_vm_libvirt_vms_seen(x->src, 1));
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c1);
	assert_int_equal(c1.reconciles, 2);
	assert_int_equal(c1.xml_fetches, c0.xml_fetches + 1);
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	assert_int_equal(v[0].qemu_pid, 200);
	assert_int_equal(v[0].vcpus, 1);

	/* A start no vms_seen() told of: the stats, once due (every 30 s while each domain's QEMU
	 * is found), show an unknown domain -> reconcile. */
	qemu_proc(x, 300, 7000, UC, "gamma");
	fake_start(&fk, UC, "gamma", dom_xml("gamma", 4, "/c.sock", "/c"));
	list_n(x, 1);
	x->now += 30 * VW_NSEC_PER_SEC;
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UC)->state, VW_VM_RUNNING);
	assert_int_equal(find(v, 2, UC)->qemu_pid, 300);
	/* ... and a stop: its QEMU is found gone, so the next list() asks for stats: gone
	 * from them -> shutoff. */
	fake_stop(&fk, UC);
	vm_fixture_kill(x->root, 300);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UC)->qemu_pid, 0);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UC)->state, VW_VM_SHUTOFF);

	/* The periodic reconcile fetches every XML again (a hot-plugged channel appears). */
	pthread_mutex_lock(&fk.mu);
	free(fake_find(&fk, UB)->xml);
	fake_find(&fk, UB)->xml = dom_xml("beta", 1, "/b2.sock", "/b");
	pthread_mutex_unlock(&fk.mu);
	counters(x, &c0);
	x->now += 3601 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c1);
	assert_int_equal(c1.reconciles, c0.reconciles + 1);
	v = list_n(x, 1);
	assert_string_equal(v[0].channel_path, "/b2.sock");
	fx_free(x);
}

/* Whether the source told news since the last look (its news_fd read, so emptied). */
static bool news_told(struct fx *x)
{
	int fd = vw_vm_libvirt_news_fd(x->src);
	uint64_t count;

	assert_true(fd >= 0);
	return read(fd, &count, sizeof(count)) == (ssize_t)sizeof(count);
}

/*
 * The worker tells the daemon (news_fd) when a reconcile changed what list() says of a domain's
 * channel (a domain new or started again, its channel's path changed), so that a restored VM's
 * channel reaches the publisher when libvirt's answer comes, not at the next interval; anything
 * else is no news: a stop (the interval sees it), a full pass that finds the same, stats.
 */
static void test_news(void **state)
{
	struct fx *x = fx_alpha(); /* the first reconcile found alpha */
	struct vw_vm_libvirt_counters c0, c1;
	struct vw_vm_info *v;

	(void)state;
	assert_true(news_told(x));
	assert_false(news_told(x));
	assert_false(vw_vm_libvirt_vms_seen(x->src, 1)); /* the registry's first round: noted */

	/* The periodic full pass, every XML fetched again, the same: no news. */
	counters(x, &c0);
	x->now += 3601 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c1);
	assert_int_equal(c1.reconciles, c0.reconciles + 1);
	assert_int_equal(c1.xml_fetches, c0.xml_fetches + 1);
	assert_false(news_told(x));

	/* Saved: its QEMU exits; the lists find it gone, then stopped. No news. */
	fake_stop(&fk, UA);
	vm_fixture_kill(x->root, 100);
	v = list_n(x, 1);
	assert_int_equal(v[0].qemu_pid, 0);
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_SHUTOFF);
	list_n(x, 0);
	assert_false(vw_vm_libvirt_vms_seen(x->src, 0));
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	assert_false(news_told(x));

	/* Restored: a new QEMU, a new domain ID, its channel at another path. The process scan's
	 * round reports one VM more: the reconcile that follows is news. */
	qemu_proc(x, 150, 5500, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a-restored.sock", "/a"));
	counters(x, &c0);
	assert_false(vw_vm_libvirt_vms_seen(x->src, 1));
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c1);
	assert_int_equal(c1.reconciles, c0.reconciles + 1);
	assert_int_equal(c1.news, c0.news + 1);
	assert_true(news_told(x));
	v = list_n(x, 1);
	assert_string_equal(v[0].channel_path, "/a-restored.sock");
	assert_int_equal(v[0].qemu_pid, 150);
	assert_false(news_told(x)); /* list() itself tells nothing */

	/* A channel hot-plugged at another path, seen at the periodic pass: news. */
	pthread_mutex_lock(&fk.mu);
	free(fake_find(&fk, UA)->xml);
	fake_find(&fk, UA)->xml = dom_xml("alpha", 2, "/a-plugged.sock", "/a");
	pthread_mutex_unlock(&fk.mu);
	x->now += 3601 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	assert_true(news_told(x));
	v = list_n(x, 1);
	assert_string_equal(v[0].channel_path, "/a-plugged.sock");
	fx_free(x);
}

static void test_rename(void **state)
{
	struct fx *x = fx_alpha();
	struct vw_vm_info *v;

	(void)state;
	/* Renamed (defined again): nothing tells of it until the next periodic reconcile. */
	fake_rename(&fk, UA, "alpha-renamed");
	x->now += 3599 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	v = list_n(x, 1);
	assert_string_equal(v[0].name, "alpha");
	x->now += 2 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	v = list_n(x, 1);
	assert_string_equal(v[0].uuid, UA);
	assert_string_equal(v[0].name, "alpha-renamed");
	assert_int_equal(v[0].qemu_pid, 100); /* same QEMU */
	fx_free(x);
}

static void test_recreate_same_uuid(void **state)
{
	struct fx *x = fx_alpha();
	struct vw_vm_info *v;

	(void)state;

	/* Destroyed and defined again under the same UUID: a new domain ID and a new QEMU. The
	 * consumer keeps one VM (totals are keyed by UUID) with a new PID. */
	fake_stop(&fk, UA);
	vm_fixture_kill(x->root, 100);
	qemu_proc(x, 150, 5500, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 4, "/a.sock", "/a"));
	x->now += 3601 * VW_NSEC_PER_SEC; /* the periodic pass sees the new ID */
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	v = list_n(x, 1);
	assert_string_equal(v[0].uuid, UA);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	assert_int_equal(v[0].qemu_pid, 150);
	assert_int_equal(v[0].qemu_start_time, 5500);
	assert_int_equal(v[0].vcpus, 4);

	/* Same again, the old QEMU's PID still alive: found by the new ID. */
	fake_stop(&fk, UA);
	qemu_proc(x, 160, 5600, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 4, "/a.sock", "/a"));
	x->now += 3601 * VW_NSEC_PER_SEC; /* the periodic pass sees the new ID */
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	v = list_n(x, 1);
	assert_int_equal(v[0].qemu_pid, 160); /* the younger of the two QEMUs with this UUID */
	fx_free(x);
}

static void test_pid_reuse(void **state)
{
	struct fx *x = fx_alpha();
	struct vw_vm_info *v;

	(void)state;

	/* QEMU 100 is gone and an unrelated process got PID 100 (another start time). */
	vm_fixture_kill(x->root, 100);
	assert_int_equal(vm_fixture_proc(x->root, 100, 9000, "/bin/sleep|100",
					 (const char *const[]){ "sleep", NULL }, NULL), 0);
	v = list_n(x, 1);
	assert_int_equal(v[0].qemu_pid, 0);
	assert_int_equal(v[0].qemu_start_time, 0);

	/* Its QEMU shows up under another PID (e.g. the fixture was late): found again. */
	qemu_proc(x, 300, 9100, UA, "alpha");
	v = list_n(x, 1);
	assert_int_equal(v[0].qemu_pid, 300);
	assert_int_equal(v[0].qemu_start_time, 9100);
	fx_free(x);
}

/* A domain whose XML gives no vCPU count: its QEMU's vCPU threads are counted, however many. */
static void test_vcpus_from_threads(void **state)
{
	static const char xml[] = "<domain type='kvm'><devices/></domain>";
	const char **names = calloc(601, sizeof(*names));
	struct fx *x = fx_new();
	struct vw_vm_info *v;

	(void)state;
	names[0] = "qemu-system-x86";
	for (int i = 1; i < 600; i++)
		assert_true(asprintf((char **)&names[i], "CPU %d/KVM", i - 1) > 0);
	qemu_proc(x, 100, 5000, UA, "alpha"); /* CPU 0/TCG, CPU 1/TCG */
	assert_int_equal(vm_fixture_proc(x->root, 200, 6000, "qemu-system-x86_64|-uuid|" UB, names,
					 NULL), 0);
	/* Without -name ...,debug-threads=on no thread is named as a vCPU: still unknown. */
	assert_int_equal(vm_fixture_proc(x->root, 300, 7000, "qemu-system-x86_64|-uuid|" UC, NULL,
					 NULL), 0);
	fake_start(&fk, UA, "alpha", strdup(xml));
	fake_start(&fk, UB, "beta", strdup(xml));
	fake_start(&fk, UC, "gamma", strdup(xml));
	fx_open(x, 0);
	v = list_n(x, 3);
	assert_int_equal(find(v, 3, UA)->qemu_pid, 100);
	assert_int_equal(find(v, 3, UA)->vcpus, 2);
	assert_int_equal(find(v, 3, UB)->qemu_pid, 200);
	assert_int_equal(find(v, 3, UB)->vcpus, 599);
	assert_int_equal(find(v, 3, UC)->qemu_pid, 300);
	assert_int_equal(find(v, 3, UC)->vcpus, 0);
	/* Counted once: the same QEMU without its thread names still has 2. */
	assert_int_equal(vm_fixture_kill(x->root, 100), 0);
	assert_int_equal(vm_fixture_proc(x->root, 100, 5000, "qemu-system-x86_64|-uuid|" UA, NULL,
					 NULL), 0);
	v = list_n(x, 3);
	assert_int_equal(find(v, 3, UA)->vcpus, 2);
	fx_free(x);
	for (int i = 1; i < 600; i++)
		free((char *)names[i]);
	free(names);
}

/* ---- libvirtd goes away ---- */

static void test_libvirtd_restart(void **state)
{
	struct fx *x = fx_new();
	struct vw_vm_libvirt_counters c;
	struct vw_vm_info *v;

	(void)state;
	qemu_proc(x, 100, 5000, UA, "alpha");
	qemu_proc(x, 200, 6000, UB, "beta");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	fake_start(&fk, UB, "beta", dom_xml("beta", 1, "/b.sock", "/b"));
	fx_open(x, 0);

	/* libvirtd exits; the next call, the stats due 30 s on, fails. The list survives. */
	fake_kill(&fk);
	x->now += 30 * VW_NSEC_PER_SEC;
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UA)->qemu_pid, 100);
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c);
	assert_false(c.connected);
	assert_int_equal(fk.connect_attempts, 1);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UA)->qemu_pid, 100);

	/* Retries double: +1 s, +2 s, +4 s, +8 s, capped at 8 s. */
	for (unsigned i = 0, wait = 1; i < 5; i++, wait = wait < 8 ? wait * 2 : 8) {
		x->now += (wait - 1) * VW_NSEC_PER_SEC + VW_NSEC_PER_SEC / 2;
		assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
		assert_int_equal(fk.connect_attempts, 1 + i); /* not yet */
		x->now += VW_NSEC_PER_SEC / 2;
		assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
		assert_int_equal(fk.connect_attempts, 2 + i);
		counters(x, &c);
		assert_int_equal(c.next_connect_ns, x->now + (uint64_t)(wait < 8 ? wait * 2 : 8) *
							    VW_NSEC_PER_SEC);
	}

	/* Back, with beta stopped meanwhile and alpha still running. */
	fake_stop(&fk, UB);
	fake_revive(&fk);
	x->now += 8 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c);
	assert_true(c.connected);
	assert_int_equal(c.connects, 2);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UA)->state, VW_VM_RUNNING);
	assert_int_equal(find(v, 2, UA)->qemu_pid, 100);
	assert_int_equal(find(v, 2, UB)->state, VW_VM_SHUTOFF);

	/* Dies again, this time silently: the next call (stats are due every 30 s) fails and the
	 * worker notices. */
	fake_kill(&fk);
	x->now += 30 * VW_NSEC_PER_SEC;
	list_n(x, 1);
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	counters(x, &c);
	assert_false(c.connected);
	assert_int_equal(c.next_connect_ns, x->now + VW_NSEC_PER_SEC); /* backoff was reset */
	v = list_n(x, 1);
	assert_string_equal(v[0].uuid, UA);
	fx_free(x);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_hung_libvirtd(void **state)
{
	struct fx *x = fx_new();
	struct vw_vm_info *v;
	uint64_t t0;

	(void)state;
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	fx_open(x, 200 * VW_NSEC_PER_MSEC);

	/* The domain pauses (no event) while libvirtd hangs in the stats call. */
	pthread_mutex_lock(&fk.mu);
	fk.hang_stats = true;
	fake_find(&fk, UA)->state = VW_VM_PAUSED;
	pthread_mutex_unlock(&fk.mu);
	x->now += 30 * VW_NSEC_PER_SEC; /* stats due */
	t0 = mono_ms();
	v = list_n(x, 1); /* waits list_timeout_ns for stats that never come */
	assert_true(mono_ms() - t0 >= 150);
	assert_true(mono_ms() - t0 < 2000);
	assert_int_equal(v[0].state, VW_VM_RUNNING); /* the cache */
	t0 = mono_ms();
	list_n(x, 1); /* the request is still stuck: no second wait */
	assert_true(mono_ms() - t0 < 100);

	pthread_mutex_lock(&fk.mu);
	fk.hang_stats = false;
	pthread_cond_broadcast(&fk.cond);
	pthread_mutex_unlock(&fk.mu);
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_PAUSED);
	fx_free(x);
}

static void test_no_libvirtd_at_start(void **state)
{
	struct fx *x = fx_new();
	struct vw_vm_libvirt_counters c;

	(void)state;
	fk.up = false;
	fx_open(x, 0);
	counters(x, &c);
	assert_false(c.connected);
	assert_int_equal(c.connect_failures, 1);
	list_n(x, 0);
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	fake_revive(&fk);
	x->now += VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	list_n(x, 1);
	fx_free(x);
}

/* ---- Hostile XML ---- */

static char *huge_xml(size_t size)
{
	static const char head[] = "<domain type='kvm'><devices>";
	static const char tail[] = "<channel type='unix'><source path='/h.sock'/>"
				   "<target type='virtio' name='org.virtwatt.power.0'/></channel>"
				   "</devices></domain>";
	char *x = malloc(size + sizeof(head) + sizeof(tail));
	size_t o = 0;

	memcpy(x, head, sizeof(head) - 1);
	o = sizeof(head) - 1;
	while (o + 32 < size) {
		memcpy(x + o, "<disk type='file' device='x'/>\n", 31);
		o += 31;
	}
	memcpy(x + o, tail, sizeof(tail));
	return x;
}

static char *deep_xml(size_t depth, bool balanced)
{
	char *x = malloc(depth * 7 + 4096);
	size_t o = 0;

	o += (size_t)sprintf(x, "<domain type='qemu'><devices><channel type='unix'>");
	for (size_t i = 0; i < depth; i++)
		memcpy(x + o + 3 * i, "<a>", 3);
	o += 3 * depth;
	for (size_t i = 0; i < (balanced ? depth : depth - 1); i++, o += 4)
		memcpy(x + o, "</a>", 4);
	o += (size_t)sprintf(x + o, "<source path='/deep.sock'/><target name='org.virtwatt.power.0'/>"
				    "</channel></devices></domain>");
	x[o] = '\0';
	return x;
}

static void test_hostile_xml(void **state)
{
	static const char bomb[] =
		"<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;\">]>"
		"<domain type='kvm'><devices><channel type='unix'><source path='&lol2;'/>"
		"<target name='org.virtwatt.power.0'/></channel></devices></domain>";
	struct fx *x = fx_new();
	struct vw_vm_info *v;

	(void)state;
	/* A bad-UTF-8, control-character name; a 5 MiB XML (over the cap); an entity bomb. */
	fake_start(&fk, UA, "bad\xff\xfename\x1b[31m", huge_xml(5u << 20));
	fake_start(&fk, UB, "deep", deep_xml(200000, true));
	fake_start(&fk, UC, "bomb", strdup(bomb));
	fx_open(x, 0);
	v = list_n(x, 3);
	assert_string_equal(find(v, 3, UA)->name, "bad??name?[31m");
	assert_string_equal(find(v, 3, UA)->channel_path, "");
	assert_string_equal(find(v, 3, UA)->hypervisor, "kvm"); /* the URI's default */
	assert_string_equal(find(v, 3, UB)->channel_path, "/deep.sock");
	assert_string_equal(find(v, 3, UC)->channel_path, "");
	assert_int_equal(find(v, 3, UC)->state, VW_VM_RUNNING);
	/* A bad document is not fetched again and again. */
	pthread_mutex_lock(&fk.mu);
	fk.xml_calls = 0;
	pthread_mutex_unlock(&fk.mu);
	list_n(x, 3);
	assert_int_equal(fk.xml_calls, 0);
	fx_free(x);
}

/*
 * What OpenStack Nova writes into each domain's <metadata> (nova/virt/libvirt/config.py,
 * LibvirtConfigGuestMetaNovaInstance; namespace .../nova/1.1), as `virsh dumpxml` shows it on a
 * compute node; IDs are Keystone's (32 hex digits, no dashes).
 */
#define NOVA_META                                                                                  \
	"<metadata>"                                                                               \
	"<nova:instance xmlns:nova=\"http://openstack.org/xmlns/libvirt/nova/1.1\">"               \
	"<nova:package version=\"29.0.1\"/>"                                                       \
	"<nova:name>web-01</nova:name>"                                                            \
	"<nova:creationTime>2025-03-04 09:12:51</nova:creationTime>"                               \
	"<nova:flavor name=\"m1.small\"><nova:memory>2048</nova:memory><nova:disk>20</nova:disk>"  \
	"<nova:swap>0</nova:swap><nova:ephemeral>0</nova:ephemeral><nova:vcpus>1</nova:vcpus>"     \
	"</nova:flavor>"                                                                           \
	"<nova:owner>"                                                                             \
	"<nova:user uuid=\"85bd8e9aba8a4d5d8b6a3a7a5c2e1f00\">admin</nova:user>"                  \
	"<nova:project uuid=\"2fa3b6c8d1e04b5f9a7c6d5e4f3a2b10\">demo</nova:project>"             \
	"</nova:owner>"                                                                            \
	"<nova:root type=\"image\" uuid=\"0e1a3a4e-1f5c-4a43-9a3b-2c7d9c1b8f55\"/>"                \
	"<nova:ports><nova:port uuid=\"3d3a0f53-3bd6-4c3d-8f4f-5e8d6f1f0f7e\">"                    \
	"<nova:ip type=\"fixed\" address=\"10.0.0.5\" ipVersion=\"4\"/></nova:port></nova:ports>"  \
	"</nova:instance>"                                                                         \
	"</metadata>"

static void assert_nova_owner(const struct vw_vm_owner *o)
{
	assert_string_equal(o->platform, "openstack");
	assert_string_equal(o->instance_name, "web-01");
	assert_string_equal(o->flavor, "m1.small");
	assert_string_equal(o->user_id, "85bd8e9aba8a4d5d8b6a3a7a5c2e1f00");
	assert_string_equal(o->user_name, "admin");
	assert_string_equal(o->project_id, "2fa3b6c8d1e04b5f9a7c6d5e4f3a2b10");
	assert_string_equal(o->project_name, "demo");
	assert_string_equal(o->vmid, "");
}

static void parse_owner(const char *doc, struct vw_domxml *d)
{
	assert_int_equal(vw_domxml_parse(doc, strlen(doc), d), 0);
}

/* Nova's owner of an instance, whatever prefix binds its namespace; nothing from elsewhere. */
static void test_domxml_nova(void **state)
{
	struct vw_domxml d;

	(void)state;
	parse_owner("<domain type='kvm'><name>instance-0000002a</name>" NOVA_META
		    "<vcpu>1</vcpu><devices/></domain>",
		    &d);
	assert_nova_owner(&d.owner);
	assert_int_equal(d.vcpus, 1); /* the rest of the document is still read */

	/* Another prefix, namespace 1.0, and a default namespace. */
	parse_owner("<domain><metadata><os:instance xmlns:os='http://openstack.org/xmlns/libvirt/"
		    "nova/1.0'><os:name>a</os:name><os:flavor name='f'/><os:owner>"
		    "<os:project uuid='p1'>proj</os:project></os:owner></os:instance></metadata>"
		    "</domain>",
		    &d);
	assert_string_equal(d.owner.platform, "openstack");
	assert_string_equal(d.owner.instance_name, "a");
	assert_string_equal(d.owner.flavor, "f");
	assert_string_equal(d.owner.project_id, "p1");
	assert_string_equal(d.owner.project_name, "proj");
	assert_string_equal(d.owner.user_name, "");
	parse_owner("<domain><metadata><instance xmlns='http://openstack.org/xmlns/libvirt/nova/1.1'>"
		    "<name> spaced \n</name></instance></metadata></domain>",
		    &d);
	assert_string_equal(d.owner.platform, "openstack");
	assert_string_equal(d.owner.instance_name, "spaced");

	/* Not Nova's: another namespace, Nova's element outside <metadata>, a name under
	 * <flavor>, a user outside <owner>. (libvirt writes each metadata element with its own
	 * namespace declaration, which is where the reader looks for it.) */
	parse_owner("<domain><metadata><nova:instance xmlns:nova='http://example.com/nova/1.1'>"
		    "<nova:name>x</nova:name></nova:instance></metadata></domain>",
		    &d);
	assert_string_equal(d.owner.platform, "");
	assert_string_equal(d.owner.instance_name, "");
	parse_owner("<domain><devices><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/"
		    "nova/1.1'><nova:name>x</nova:name></nova:instance></devices></domain>",
		    &d);
	assert_string_equal(d.owner.platform, "");
	parse_owner("<domain><metadata><app:x xmlns:app='urn:a'><app:name>no</app:name></app:x>"
		    "<n:instance xmlns:n='http://openstack.org/xmlns/libvirt/nova/1.1'>"
		    "<n:flavor name='f'><n:name>inner</n:name></n:flavor>"
		    "<n:user uuid='u'>loose</n:user><n:name>a&amp;b &lt;c&gt;&#x1;</n:name>"
		    "</n:instance></metadata></domain>",
		    &d);
	assert_string_equal(d.owner.platform, "openstack");
	assert_string_equal(d.owner.instance_name, "a&b <c>?"); /* decoded, control char '?' */
	assert_string_equal(d.owner.flavor, "f");
	assert_string_equal(d.owner.user_id, "");
	assert_string_equal(d.owner.user_name, "");

	/* A bad reference empties that value only. */
	parse_owner("<domain><metadata><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/"
		    "nova/1.1'><nova:name>a&bogus;</nova:name><nova:flavor name='ok'/>"
		    "</nova:instance></metadata></domain>",
		    &d);
	assert_string_equal(d.owner.instance_name, "");
	assert_string_equal(d.owner.flavor, "ok");
}

static void test_domxml(void **state)
{
	struct vw_domxml d;
	char *big;

	(void)state;
	{
		static const char doc[] =
			"<?xml version='1.0'?>\n<!-- c -->\n"
			"<domain type='qemu' id='3'><name>x</name>"
			"<vcpu placement='static' current='3'>8</vcpu><devices>"
			"<channel type='pty'><target type='virtio' "
			"name='org.virtwatt.power.0'/></channel>"
			"<channel type='unix'><source mode='bind' path='/other'/>"
			"<target type='virtio' name='org.qemu.guest_agent.0'/></channel>"
			"<channel type=\"unix\"><source mode=\"bind\" "
			"path=\"/run/a&amp;b&#x2F;c&#233;.sock\"/><target type='virtio' "
			"name='org.virtwatt.power.0' state='connected'/></channel>"
			"<filesystem type='mount'><source dir='/wrong'/>"
			"<target dir='other'/></filesystem>"
			"<filesystem type='mount' accessmode='passthrough'>"
			"<driver type='path'/><source dir='/srv/share'/>"
			"<target dir='virtwatt'/><readonly/></filesystem>"
			"<![CDATA[ <channel> ]]>"
			"</devices></domain>\n";

		assert_int_equal(vw_domxml_parse(doc, sizeof(doc) - 1, &d), 0);
		assert_string_equal(d.hypervisor, "kvm");
		assert_int_equal(d.vcpus, 3);
		assert_string_equal(d.channel_path, "/run/a&b/c\xc3\xa9.sock");
		assert_string_equal(d.share_dir, "/srv/share");
		assert_true(d.share_readonly);
	}
	{ /* <readonly/> is the virtwatt filesystem's own: another one's is not taken for it */
		static const char doc[] =
			"<domain><devices>"
			"<filesystem type='mount'><source dir='/ro'/><readonly/>"
			"<target dir='other'/></filesystem>"
			"<filesystem type='mount'><driver type='virtiofs'/><source dir='/srv/rw'/>"
			"<target dir='virtwatt'/></filesystem>"
			"<filesystem type='mount'><source dir='/late'/><target dir='virtwatt'/>"
			"<readonly/></filesystem>"
			"</devices></domain>";

		assert_int_equal(vw_domxml_parse(doc, sizeof(doc) - 1, &d), 0);
		assert_string_equal(d.share_dir, "/srv/rw");
		assert_false(d.share_readonly);
	}
#define BAD(s) assert_int_equal(vw_domxml_parse(s, strlen(s), &d), -EINVAL)
	BAD("");
	BAD("<domain>");
	BAD("<domain></devices>");
	BAD("<domain><a></b></domain>");
	BAD("<domain a='1></domain>");
	BAD("<domain a=1></domain>");
	BAD("<domain></domain><domain></domain>");
	BAD("text<domain/>");
	BAD("<notdomain/>");
	BAD("<domain><!-- open </domain>");
	BAD("<domain><x a='<'/></domain>");
	BAD("<!DOCTYPE domain><domain/>");
	BAD("<domain/><![CDATA[x]]>");
#undef BAD
	/* Invalid references make that value absent, not the document invalid. */
	assert_int_equal(vw_domxml_parse("<domain type='&bogus;'/>", 24, &d), 0);
	assert_string_equal(d.hypervisor, "");
	assert_int_equal(vw_domxml_parse("<domain type='xen'><vcpu>0</vcpu></domain>", 42, &d), 0);
	assert_string_equal(d.hypervisor, "xen");
	assert_int_equal(d.vcpus, 0);
	/* A path that does not fit is dropped, never cut. */
	big = malloc(600);
	memset(big, 'p', 599);
	big[599] = '\0';
	{
		char *doc;

		assert_true(asprintf(&doc, "<domain><devices><filesystem><source dir='/%s'/>"
					   "<target dir='virtwatt'/></filesystem></devices></domain>",
				     big) > 0);
		assert_int_equal(vw_domxml_parse(doc, strlen(doc), &d), 0);
		assert_string_equal(d.share_dir, "");
		free(doc);
	}
	free(big);
	/* Unbalanced deep nesting, and the size cap. */
	big = deep_xml(100000, false);
	assert_int_equal(vw_domxml_parse(big, strlen(big), &d), -EINVAL);
	free(big);
	big = huge_xml(VW_DOMXML_MAX + 1);
	assert_int_equal(vw_domxml_parse(big, strlen(big), &d), -EFBIG);
	free(big);
	big = huge_xml(VW_DOMXML_MAX - 256);
	assert_int_equal(vw_domxml_parse(big, strlen(big), &d), 0);
	assert_string_equal(d.channel_path, "/h.sock");
	free(big);
}

/* A domain with host devices around and between the ones that count. */
static const char hostdev_doc[] =
	"<domain type='kvm'><devices>"
	/* The H100: its source address counts, not the guest-side <address type='pci'>. */
	"<hostdev mode='subsystem' type='pci' managed='yes'><driver name='vfio'/>"
	"<source><address domain='0x0000' bus='0x3B' slot='0x00' function='0x0'/></source>"
	"<alias name='hostdev0'/>"
	"<address type='pci' domain='0x0000' bus='0x06' slot='0x00' function='0x0'/></hostdev>"
	/* Its audio function, in decimal and octal as libvirt also reads them, no domain. */
	"<hostdev mode='subsystem' type='pci'><source>"
	"<address bus='59' slot='0' function='01'/></source></hostdev>"
	/* The same device again: kept once. */
	"<hostdev mode='subsystem' type='pci'><source><address domain='0' bus='0x3b' "
	"slot='0x0' function='0x0'/></source></hostdev>"
	/* Out of range or not numbers: left out. */
	"<hostdev mode='subsystem' type='pci'><source><address domain='0x10000' bus='0' "
	"slot='0' function='0'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus='0x100' slot='0' "
	"function='0'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus='1' slot='0x20' "
	"function='0'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus='1' slot='0' "
	"function='8'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus='+1' slot='0' "
	"function='0'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus=' 1' slot='0' "
	"function='0'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus='0x1g' slot='0' "
	"function='0'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus='08' slot='0' "
	"function='0'/></source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address slot='0' function='0'/>"
	"</source></hostdev>"
	"<hostdev mode='subsystem' type='pci'><source><address bus='99999999999999999999' "
	"slot='0' function='0'/></source></hostdev>"
	/* The first source address decides: this one is bad, the second does not count. */
	"<hostdev mode='subsystem' type='pci'><source><address bus='0x100' slot='0' "
	"function='0'/><address bus='0x77' slot='0' function='0'/></source></hostdev>"
	/* No source; a USB device; mode capabilities; an SR-IOV NIC as <interface>. */
	"<hostdev mode='subsystem' type='pci'><address type='pci' bus='0x55' slot='0' "
	"function='0'/></hostdev>"
	"<hostdev mode='subsystem' type='usb'><source><address bus='1' device='2'/></source>"
	"</hostdev>"
	"<hostdev mode='capabilities' type='pci'><source><address bus='0x56' slot='0' "
	"function='0'/></source></hostdev>"
	"<interface type='hostdev'><source><address type='pci' domain='0' bus='0x57' "
	"slot='0' function='0'/></source></interface>"
	/* A function at the top of every range, through character references. */
	"<hostdev mode='subsystem' type='pci'><source><address domain='&#x30;xffff' "
	"bus='0xff' slot='0x1f' function='7'/></source></hostdev>"
	/* mdevs: upper case made lower, a repeat kept once, a bad UUID left out. */
	"<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source>"
	"<address uuid='C2177883-F1BB-47F0-914D-32A22E3A8804'/></source></hostdev>"
	"<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source>"
	"<address uuid='c2177883-f1bb-47f0-914d-32a22e3a8804'/></source></hostdev>"
	"<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source>"
	"<address uuid='c2177883-f1bb-47f0-914d-32a22e3a880'/></source></hostdev>"
	"<hostdev mode='subsystem' type='mdev' model='vfio-ap'><source>"
	"<address uuid='9f2c1e8a-0d4b-4c3e-8a7f-1b2c3d4e5f60'/></source></hostdev>"
	"</devices>"
	/* Outside <devices>: not a device. */
	"<hostdev mode='subsystem' type='pci'><source><address bus='0x58' slot='0' "
	"function='0'/></source></hostdev>"
	"</domain>";

static void test_domxml_hostdevs(void **state)
{
	struct vw_domxml d;
	char *doc = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(vw_domxml_parse(hostdev_doc, strlen(hostdev_doc), &d), 0);
	assert_int_equal(d.n_pci_hostdev, 3);
	assert_string_equal(d.pci_hostdev[0], "0000:3b:00.0");
	assert_string_equal(d.pci_hostdev[1], "0000:3b:00.1");
	assert_string_equal(d.pci_hostdev[2], "ffff:ff:1f.7");
	assert_int_equal(d.n_mdev, 2);
	assert_string_equal(d.mdev_uuid[0], "c2177883-f1bb-47f0-914d-32a22e3a8804");
	assert_string_equal(d.mdev_uuid[1], "9f2c1e8a-0d4b-4c3e-8a7f-1b2c3d4e5f60");

	/* More than VW_VM_MAX_HOSTDEVS: the first ones are kept. */
	f = open_memstream(&doc, &len);
	fputs("<domain><devices>", f);
	for (unsigned i = 0; i < VW_VM_MAX_HOSTDEVS + 4; i++)
		fprintf(f, "<hostdev mode='subsystem' type='pci'><source><address bus='%u' "
			   "slot='0' function='0'/></source></hostdev><hostdev mode='subsystem' "
			   "type='mdev'><source><address uuid='00000000-0000-4000-8000-%012x'/>"
			   "</source></hostdev>", i, i);
	fputs("</devices></domain>", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(vw_domxml_parse(doc, len, &d), 0);
	assert_int_equal(d.n_pci_hostdev, VW_VM_MAX_HOSTDEVS);
	assert_int_equal(d.n_mdev, VW_VM_MAX_HOSTDEVS);
	assert_string_equal(d.pci_hostdev[VW_VM_MAX_HOSTDEVS - 1], "0000:1f:00.0");
	assert_string_equal(d.mdev_uuid[VW_VM_MAX_HOSTDEVS - 1],
			    "00000000-0000-4000-8000-00000000001f");
	free(doc);

	/* A malformed document keeps nothing, host devices included. */
	assert_int_equal(vw_domxml_parse(hostdev_doc, strlen(hostdev_doc) - 3, &d), -EINVAL);
	assert_int_equal(d.n_pci_hostdev, 0);
	assert_int_equal(d.n_mdev, 0);
	assert_string_equal(d.pci_hostdev[0], "");
}

/* Host devices packed into a VM (4 and 16 bytes) and back: every field's extremes, in order,
 * the full lists; anything not canonical packs to nothing. */
static void test_hostdevs_packed(void **state)
{
	static const char *const pci[] = { "0000:00:00.0", "ffff:ff:1f.7", "0000:3b:00.1",
					   "abcd:80:10.4" };
	static const char *const bad_pci[] = { "", "0000:3b:00.8", "0000:3b:20.0", "0000:3B:00.0",
					       "0000:3b:00.0x", "000:3b:00.0", "0000-3b:00.0" };
	static const char *const bad_uuid[] = { "", "not-a-uuid", "c2177883-f1bb-47f0-914d-32a22e3a880",
						"c2177883f1bb-47f0-914d-32a22e3a88044",
						"g2177883-f1bb-47f0-914d-32a22e3a8804" };
	struct vw_vm_info vm = { 0 };
	struct vw_domxml d = { 0 };
	char buf[VW_UUID_LEN];
	uint32_t p = 0;
	uint8_t u[16];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(pci); i++) {
		assert_int_equal(vw_vm_pci_pack(pci[i], &p), 0);
		vw_vm_pci_format(p, buf);
		assert_string_equal(buf, pci[i]);
	}
	assert_int_equal(vw_vm_pci_pack("ffff:ff:1f.7", &p), 0);
	assert_int_equal(p, 0xffffffffu);
	assert_int_equal(vw_vm_pci_pack("0001:02:03.4", &p), 0);
	assert_int_equal(p, 1u << 16 | 2u << 8 | 3u << 3 | 4u);
	for (size_t i = 0; i < ARRAY_SIZE(bad_pci); i++)
		assert_int_equal(vw_vm_pci_pack(bad_pci[i], &p), -EINVAL);
	assert_int_equal(vw_vm_pci_pack(NULL, &p), -EINVAL);

	assert_int_equal(vw_vm_mdev_pack("C2177883-F1BB-47F0-914D-32A22E3A8804", u), 0);
	assert_int_equal(u[0], 0xc2);
	assert_int_equal(u[15], 0x04);
	vw_vm_mdev_format(u, buf);
	assert_string_equal(buf, "c2177883-f1bb-47f0-914d-32a22e3a8804");
	for (size_t i = 0; i < ARRAY_SIZE(bad_uuid); i++)
		assert_int_equal(vw_vm_mdev_pack(bad_uuid[i], u), -EINVAL);
	assert_int_equal(vw_vm_mdev_pack(NULL, u), -EINVAL);

	/* The parser's full lists into the VM, in order; a slot that does not pack is left out. */
	for (unsigned i = 0; i < VW_VM_MAX_HOSTDEVS; i++) {
		snprintf(d.pci_hostdev[i], VW_PCI_ADDR_SIZE, "%04x:%02x:%02x.%x", i * 0x801, i * 7,
			 i, i % 8);
		snprintf(d.mdev_uuid[i], VW_UUID_LEN, "00000000-0000-4000-8000-%012x", i * 0x1111);
	}
	d.n_pci_hostdev = d.n_mdev = VW_VM_MAX_HOSTDEVS;
	vw_vm_hostdevs_from_xml(&vm, &d);
	assert_int_equal(vm.n_pci_hostdev, VW_VM_MAX_HOSTDEVS);
	assert_int_equal(vm.n_mdev, VW_VM_MAX_HOSTDEVS);
	for (size_t i = 0; i < VW_VM_MAX_HOSTDEVS; i++) {
		assert_string_equal(pci_at(&vm, i), d.pci_hostdev[i]);
		assert_string_equal(mdev_at(&vm, i), d.mdev_uuid[i]);
	}
	snprintf(d.pci_hostdev[1], VW_PCI_ADDR_SIZE, "junk");
	d.n_pci_hostdev = 3;
	d.n_mdev = 0;
	vw_vm_hostdevs_from_xml(&vm, &d);
	assert_int_equal(vm.n_pci_hostdev, 2);
	assert_string_equal(pci_at(&vm, 1), d.pci_hostdev[2]);
	assert_int_equal(vm.n_mdev, 0);
}

/* The source hands a domain's host devices on, and a domain re-created without them has none. */
static void test_hostdevs_listed(void **state)
{
	struct fx *x = fx_new();
	struct vw_vm_info *v;

	(void)state;
	qemu_proc(x, 100, 5000, UA, "alpha");
	fake_start(&fk, UA, "alpha", strdup(hostdev_doc));
	fx_open(x, 0);
	v = list_n(x, 1);
	assert_int_equal(v[0].n_pci_hostdev, 3);
	assert_string_equal(pci_at(&v[0], 0), "0000:3b:00.0");
	assert_string_equal(pci_at(&v[0], 1), "0000:3b:00.1");
	assert_string_equal(pci_at(&v[0], 2), "ffff:ff:1f.7");
	assert_int_equal(v[0].n_mdev, 2);
	assert_string_equal(mdev_at(&v[0], 0), "c2177883-f1bb-47f0-914d-32a22e3a8804");
	assert_string_equal(mdev_at(&v[0], 1), "9f2c1e8a-0d4b-4c3e-8a7f-1b2c3d4e5f60");

	/* Stopped and started again: its QEMU found gone, then a new one; the reconcile that the
	 * registry's count (one VM more) asks for fetches the new XML. */
	fake_stop(&fk, UA);
	vm_fixture_kill(x->root, 100);
	list_n(x, 1);
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_SHUTOFF);
	assert_false(vw_vm_libvirt_vms_seen(x->src, 0));
	qemu_proc(x, 150, 5500, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	assert_false(vw_vm_libvirt_vms_seen(x->src, 1));
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	v = list_n(x, 1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	assert_int_equal(v[0].n_pci_hostdev, 0);
	assert_int_equal(v[0].n_mdev, 0);
	assert_int_equal(v[0].pci_hostdev[0], 0);
	fx_free(x);
}

/* ---- Merge by UUID ---- */

static const struct vw_vm_source_ops fake_libvirt_ops;

static void *fake_libvirt_src; /* the last one fake_libvirt_open opened, to settle */

static int fake_libvirt_open(const struct vw_vm_env *env, void **ret)
{
	int r = vw_vm_libvirt_open_api(env, &fake_api, &fk, ret);

	fake_libvirt_src = r == 0 ? *ret : NULL;
	return r;
}

static const struct vw_vm_source_ops fake_libvirt_ops = {
	.name = "libvirt",
	.open = fake_libvirt_open,
	.list = vw_vm_libvirt_list,
	.close = vw_vm_libvirt_close,
	.vms_seen = vw_vm_libvirt_vms_seen, /* as the daemon's source */
	.news_fd = vw_vm_libvirt_news_fd,
};

/* The registry over these sources (fake libvirt at fake:///system), on x's procfs. */
static struct vw_vms *fx_registry(struct fx *x, const struct vw_vm_source_ops *const *sources)
{
	struct vw_vm_env env = { .procfs_fd = x->procfd, .libvirt_uri = "fake:///system" };
	struct vw_vms *vms = vw_vms_open_with(&env, sources);

	assert_non_null(vms);
	return vms;
}

static int fake_libvirt_open_dormant(const struct vw_vm_env *env, void **ret)
{
	return vw_vm_libvirt_open_dormant(env, &fake_api, &fk, ret);
}

static const struct vw_vm_source_ops fake_dormant_ops = {
	.name = "libvirt",
	.open = fake_libvirt_open_dormant,
	.list = vw_vm_libvirt_list,
	.close = vw_vm_libvirt_close,
	.vms_seen = vw_vm_libvirt_vms_seen,
};

/*
 * The host's own QEMU driver waits for a VM: with libvirt up and a domain defined but no QEMU
 * process, nothing of libvirt is touched (no event loop, no connection: the real table would
 * not even have loaded the library). The process scan's first QEMU wakes it, and that very
 * round is listed again: the VM is libvirt's from its first appearance, with what only its XML
 * says (a VM that changed source between rounds would be a new workload).
 */
static void test_dormant_until_a_vm(void **state)
{
	static const struct vw_vm_source_ops *const sources[] = { &fake_dormant_ops,
								  &vw_vm_procscan, NULL };
	struct fx *x = fx_new();
	struct vw_vms *vms;
	struct vw_vm_info *v;
	size_t n;

	(void)state;
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	vms = fx_registry(x, sources);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vw_vms_list(vms, &v, &n), 0);
		assert_int_equal(n, 0);
		free(v);
	}
	assert_int_equal(fk.loop_refs, 0);
	assert_int_equal(fk.connect_attempts, 0);

	qemu_proc(x, 100, 5000, UA, "alpha"); /* its QEMU starts */
	for (int round = 0; round < 3; round++) { /* libvirt's from the round that woke it on */
		assert_int_equal(vw_vms_list(vms, &v, &n), 0);
		assert_int_equal(fk.loop_refs, 1);
		assert_int_equal(n, 1);
		assert_string_equal(v[0].source, "libvirt");
		assert_string_equal(v[0].channel_path, "/a.sock");
		assert_int_equal(v[0].qemu_pid, 100);
		free(v);
	}
	assert_true(fk.connect_attempts >= 1);
	vw_vms_close(vms);
	assert_int_equal(fk.loop_refs, 0);
	fx_free(x);
}

/* Which URIs wait: this host's QEMU driver (also as the default, an empty URI); not others. */
static void test_local_uri_waits(void **state)
{
	static const char *const local[] = { "", "qemu:///system", "qemu:///session" };
	struct fx *x = fx_new();
	struct vw_vm_env env = { .procfs_fd = x->procfd };
	void *src = NULL;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(local); i++) {
		env.libvirt_uri = local[i];
		assert_int_equal(vw_vm_libvirt_open_local(&env, &fake_api, &fk, &src), 0);
		assert_int_equal(fk.loop_refs, 0); /* nothing started */
		vw_vm_libvirt_close(src);
	}
	env.libvirt_uri = "fake:///system";
	assert_int_equal(vw_vm_libvirt_open_local(&env, &fake_api, &fk, &src), 0);
	assert_int_equal(fk.loop_refs, 1);
	assert_true(fk.connect_attempts >= 1);
	vw_vm_libvirt_close(src);
	assert_int_equal(fk.loop_refs, 0);
	fx_free(x);
}

/* ---- A restore as the daemon sees it: tracker, passthrough, publisher ---- */

/* The daemon's part (host/daemon.c): the VMs each interval (vms_listed: the channel map, the
 * groups), their energy to the publisher (passthrough's feed), and the news between. */
struct restore_rig {
	struct vw_host_passthrough *pt;
	struct vw_vm_info vms[4]; /* the interval's last list */
	size_t n;
	unsigned listed, channels; /* listed(): interval refreshes that handed a list over */
};

static int rr_listed(void *ud, const struct vw_vm_info *vms, size_t n,
		     const struct vw_group *groups, size_t n_groups)
{
	struct restore_rig *rr = ud;

	(void)groups;
	(void)n_groups;
	assert_true(n <= ARRAY_SIZE(rr->vms));
	memcpy(rr->vms, vms, n * sizeof(*vms));
	rr->n = n;
	rr->listed++;
	return vw_host_passthrough_list(rr->pt, vms, n);
}

static int rr_channels(void *ud, const struct vw_vm_info *vms, size_t n)
{
	struct restore_rig *rr = ud;

	rr->channels++;
	return vw_host_passthrough_channels(rr->pt, vms, n);
}

/* The interval's end: the VMs listed, their energy (1 J each) with the listing's channel. */
static void rr_interval(struct restore_rig *rr, struct vw_vm_tracker *t, uint64_t now)
{
	struct vw_publisher *p = vw_host_passthrough_publisher(rr->pt);
	struct vw_vm_energy e[ARRAY_SIZE(rr->vms)];
	size_t k = 0;

	vw_vm_tracker_refresh(t, NULL, NULL, rr_listed, rr);
	for (size_t i = 0; i < rr->n; i++) {
		if (rr->vms[i].state == VW_VM_SHUTOFF)
			continue; /* no group: not fed */
		e[k] = (struct vw_vm_energy){ .n_zones = 1, .qemu_pid = rr->vms[i].qemu_pid,
					      .qemu_start_time = rr->vms[i].qemu_start_time };
		memcpy(e[k].uuid, rr->vms[i].uuid, sizeof(e[k].uuid));
		memcpy(e[k].channel_path, rr->vms[i].channel_path, sizeof(e[k].channel_path));
		e[k].zones[0] = (struct vw_zone_owner_energy){ .zone = VW_ZONE_PACKAGE,
							       .active_uj = 1000000 };
		k++;
	}
	assert_int_equal(vw_publisher_update(p, e, k), 0);
	assert_int_equal(vw_publisher_tick(p, now, NULL), 0);
}

static int unix_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static const struct vw_power_source_ops rr_cpu_ops = { .name = "rapl", .measured = true };

/*
 * virsh save, then restore: the restored VM's QEMU is listed at an interval by the process scan
 * alone (libvirt's cache dropped the domain at the save), without its channel; that round wakes
 * libvirt's worker, whose answer (the channel's path) is news: told on the tracker's descriptor,
 * it reaches the publisher at once (vw_vm_tracker_news), which connects to the new QEMU's
 * channel and sends its guest a frame before the next interval, where it waited for that
 * interval's end before. The workloads' groups are not handed over meanwhile (the interval's
 * refresh does that); no news, nothing listed.
 */
static void test_restore_channel_news(void **state)
{
	static const struct vw_vm_source_ops *const sources[] = { &fake_libvirt_ops,
								  &vw_vm_procscan, NULL };
	struct fx *x = fx_new();
	struct vw_vm_env env = { .procfs_fd = x->procfd, .libvirt_uri = "fake:///system",
				 .reconcile_ns = 3600 * VW_NSEC_PER_SEC };
	/* (rounds 30 s apart: none comes due after the first, which the first interval ticks) */
	struct vw_publish_opts po = { .period_ns = 30 * VW_NSEC_PER_SEC, .seed = 42, .epoch = 7 };
	struct vw_power_source cpu = { .ops = &rr_cpu_ops };
	struct restore_rig rr = { 0 };
	struct vw_publish_vm_stats st;
	struct vw_vm_tracker *t;
	struct pollfd pfd = { .events = POLLIN };
	char saved_path[256], restored_path[256];
	uint64_t now = 10 * VW_NSEC_PER_SEC;
	int lfd, qemu = (int)getpid(); /* the restored QEMU: its listener is this process */
	unsigned listed;
	bool pub;

	(void)state;
	snprintf(saved_path, sizeof(saved_path), "%s/a.sock", x->root);
	snprintf(restored_path, sizeof(restored_path), "%s/a-restored.sock", x->root);
	qemu_proc(x, 100, 5000, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, saved_path, "/a"));
	assert_int_equal(vw_vm_tracker_open_with(&env, sources, -1, &t), 0);
	assert_int_equal(vw_vm_libvirt_settle(fake_libvirt_src, SETTLE_MS), 0);
	assert_int_equal(vw_host_passthrough_new(&po, &cpu, &rr.pt), 0);
	pfd.fd = vw_vm_tracker_news_fd(t);
	assert_true(pfd.fd >= 0);

	/* Running: listed with its channel (the first reconcile's news taken by the listing). */
	rr_interval(&rr, t, now);
	assert_int_equal(rr.n, 1);
	assert_string_equal(rr.vms[0].channel_path, saved_path);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	vw_vm_tracker_news(t, rr_channels, &rr);
	assert_int_equal(rr.channels, 0); /* no news: nothing listed */

	/* Saved: its QEMU exits; gone from the list within a few intervals. */
	fake_stop(&fk, UA);
	vm_fixture_kill(x->root, 100);
	for (int i = 0; i < 4 && rr.n > 0; i++) {
		now += VW_NSEC_PER_SEC;
		rr_interval(&rr, t, now);
	}
	assert_int_equal(rr.n, 0);
	assert_int_equal(vw_vm_libvirt_settle(fake_libvirt_src, SETTLE_MS), 0);

	/* Restored: its new QEMU, listed by the process scan at the next interval, no channel. */
	qemu_proc(x, (uint32_t)qemu, 5500, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, restored_path, "/a"));
	lfd = unix_listen(restored_path);
	now += VW_NSEC_PER_SEC;
	rr_interval(&rr, t, now);
	assert_int_equal(rr.n, 1);
	assert_string_equal(rr.vms[0].source, "procscan");
	assert_string_equal(rr.vms[0].channel_path, "");
	listed = rr.listed;
	assert_int_equal(vw_publisher_vm_stats(vw_host_passthrough_publisher(rr.pt), UA, &st), 0);
	assert_false(st.has_channel);
	assert_int_equal(st.connects, 0);

	/* ... which woke libvirt's worker: its answer is news, before the next interval. */
	assert_int_equal(vw_vm_libvirt_settle(fake_libvirt_src, SETTLE_MS), 0);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	vw_vm_tracker_news(t, rr_channels, &rr);
	assert_int_equal(rr.channels, 1);
	assert_int_equal(rr.listed, listed); /* the groups wait for the interval */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	/* The publisher connects and sends the guest its frame at its next tick: no interval. */
	now += VW_NSEC_PER_SEC / 10;
	assert_true(vw_publisher_next_wake(vw_host_passthrough_publisher(rr.pt)) <= now);
	assert_int_equal(vw_publisher_tick(vw_host_passthrough_publisher(rr.pt), now, &pub), 0);
	assert_false(pub); /* not the round's */
	assert_int_equal(vw_publisher_vm_stats(vw_host_passthrough_publisher(rr.pt), UA, &st), 0);
	assert_true(st.has_channel);
	assert_int_equal(st.connects, 1);
	assert_int_equal(st.sent, 1);

	/* The next interval hands the list over whole, libvirt's now: the same channel. */
	now += VW_NSEC_PER_SEC;
	rr_interval(&rr, t, now);
	assert_int_equal(rr.listed, listed + 1);
	assert_string_equal(rr.vms[0].source, "libvirt");
	assert_string_equal(rr.vms[0].channel_path, restored_path);
	assert_int_equal(vw_publisher_vm_stats(vw_host_passthrough_publisher(rr.pt), UA, &st), 0);
	assert_int_equal(st.connects, 1);

	vw_host_passthrough_free(rr.pt);
	vw_vm_tracker_free(t);
	close(lfd);
	fx_free(x);
}

static void test_merge(void **state)
{
	static const struct vw_vm_source_ops *const sources[] = { &fake_libvirt_ops,
								  &vw_vm_procscan, NULL };
	struct fx *x = fx_new();
	struct vw_vms *vms;
	struct vw_vm_info *v;
	size_t n;

	(void)state;
	qemu_proc(x, 100, 5000, UA, "alpha");
	assert_int_equal(vm_fixture_proc(x->root, 400, 7000,
					 "qemu-system-x86_64|-name|guest=loose|-uuid|" UC, NULL,
					 NULL), 0);
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	vms = fx_registry(x, sources);

	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(find(v, n, UA)->source, "libvirt"); /* libvirt wins */
	assert_string_equal(find(v, n, UA)->channel_path, "/a.sock");
	assert_int_equal(find(v, n, UA)->qemu_pid, 100);
	assert_string_equal(find(v, n, UC)->source, "procscan");
	assert_string_equal(find(v, n, UC)->name, "loose");
	free(v);

	/* libvirt says stopped (its next stats: fake:// is no QEMU driver, so every 30 s) while
	 * QEMU 100 is still exiting: one shutoff, no resurrection. */
	fake_stop(&fk, UA);
	x->now += 301 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(fake_libvirt_src, SETTLE_MS), 0);
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(find(v, n, UA)->state, VW_VM_SHUTOFF);
	free(v);
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_null(find(v, n, UA));
	free(v);
	vm_fixture_kill(x->root, 100); /* procscan now reports it stopped: dropped too */
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_null(find(v, n, UA));
	free(v);

	/* Started again under the same UUID: the process scan finds its new QEMU at once; the
	 * round's count (one VM more) has libvirt reconcile, and its entry wins from then on. */
	qemu_proc(x, 150, 5500, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(find(v, n, UA)->state, VW_VM_RUNNING);
	assert_int_equal(find(v, n, UA)->qemu_pid, 150);
	free(v);
	assert_int_equal(vw_vm_libvirt_settle(fake_libvirt_src, SETTLE_MS), 0);
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(find(v, n, UA)->source, "libvirt");
	assert_string_equal(find(v, n, UA)->channel_path, "/a.sock");
	assert_int_equal(find(v, n, UA)->qemu_pid, 150);
	free(v);
	vw_vms_close(vms);
	fx_free(x);
}

/*
 * Through the registry, libvirt's PID check and the process scan's check of its last list
 * share one <pid>/stat read a QEMU a round; a PID reused by a non-QEMU between two rounds is
 * caught by both the next round.
 */
static void test_merge_pid_reuse(void **state)
{
	static const struct vw_vm_source_ops *const sources[] = { &fake_libvirt_ops,
								  &vw_vm_procscan, NULL };
	struct fx *x = fx_new();
	struct vw_vm_env env = { .procfs_fd = x->procfd, .libvirt_uri = "fake:///system",
				 .procscan_interval_ns = 3600 * VW_NSEC_PER_SEC };
	struct vw_vms *vms;
	struct vw_vm_info *v;
	size_t n;

	(void)state;
	qemu_proc(x, 100, 5000, UA, "alpha");
	fake_start(&fk, UA, "alpha", dom_xml("alpha", 2, "/a.sock", "/a"));
	vms = vw_vms_open_with(&env, sources);
	assert_non_null(vms);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(vw_vms_list(vms, &v, &n), 0);
		assert_int_equal(n, 1);
		assert_int_equal(v[0].qemu_pid, 100);
		assert_int_equal(v[0].qemu_start_time, 5000);
		free(v);
		x->now += VW_NSEC_PER_SEC;
	}
	/* QEMU 100 is gone and an unrelated process got PID 100 (another start time). */
	vm_fixture_kill(x->root, 100);
	assert_int_equal(vm_fixture_proc(x->root, 100, 9000, "/bin/sleep|100",
					 (const char *const[]){ "sleep", NULL }, NULL), 0);
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].source, "libvirt");
	assert_int_equal(v[0].qemu_pid, 0);
	assert_int_equal(v[0].qemu_start_time, 0);
	free(v);
	vw_vms_close(vms);
	fx_free(x);
}

/* Two static sources: what the preferred one lacks comes from the other. */
static struct vw_vm_info stat_vms[2][1];

static int stat_open(const struct vw_vm_env *env, void **ret)
{
	(void)env;
	*ret = NULL;
	return 0;
}

static int stat_list(int which, struct vw_vm_info **ret, size_t *ret_n)
{
	*ret = malloc(sizeof(stat_vms[which]));
	memcpy(*ret, stat_vms[which], sizeof(stat_vms[which]));
	*ret_n = 1;
	return 0;
}

static int stat_list0(void *s, struct vw_vm_info **ret, size_t *ret_n)
{
	(void)s;
	return stat_list(0, ret, ret_n);
}

static int stat_list1(void *s, struct vw_vm_info **ret, size_t *ret_n)
{
	(void)s;
	return stat_list(1, ret, ret_n);
}

static int fail_open(const struct vw_vm_env *env, void **ret)
{
	(void)env;
	(void)ret;
	return -ENODEV;
}

static void stat_close(void *s)
{
	(void)s;
}

static void test_merge_fill(void **state)
{
	static const struct vw_vm_source_ops s0 = { "first", stat_open, stat_list0, stat_close };
	static const struct vw_vm_source_ops s1 = { "second", stat_open, stat_list1, stat_close };
	static const struct vw_vm_source_ops bad = { "absent", fail_open, stat_list0, stat_close };
	static const struct vw_vm_source_ops *const sources[] = { &bad, &s0, &s1, NULL };
	struct vw_vm_env env = { .procfs_fd = 0 };
	struct vw_vms *vms;
	struct vw_vm_info *v;
	size_t n;

	(void)state;
	memset(stat_vms, 0, sizeof(stat_vms));
	snprintf(stat_vms[0][0].uuid, VW_UUID_LEN, "%s", UA);
	snprintf(stat_vms[0][0].source, 16, "first");
	snprintf(stat_vms[0][0].channel_path, 256, "/first.sock");
	stat_vms[1][0] = stat_vms[0][0];
	snprintf(stat_vms[1][0].source, 16, "second");
	snprintf(stat_vms[1][0].name, 256, "from-second");
	snprintf(stat_vms[1][0].channel_path, 256, "/second.sock");
	stat_vms[1][0].qemu_pid = 77;
	stat_vms[1][0].qemu_start_time = 8;
	stat_vms[1][0].vcpus = 3;
	assert_int_equal(vw_vm_pci_pack("0000:3b:00.0", &stat_vms[1][0].pci_hostdev[0]), 0);
	stat_vms[1][0].n_pci_hostdev = 1;
	assert_int_equal(vw_vm_mdev_pack(UB, stat_vms[0][0].mdev[0]), 0);
	stat_vms[0][0].n_mdev = 1;
	assert_int_equal(vw_vm_mdev_pack(UC, stat_vms[1][0].mdev[0]), 0);
	stat_vms[1][0].n_mdev = 1;

	vms = vw_vms_open_with(&env, sources);
	assert_non_null(vms);
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 1);
	/* Room was made for both sources' VMs; the list kept holds the one VM they name. */
	assert_true(malloc_usable_size(v) < 2 * sizeof(*v));
	assert_string_equal(v[0].source, "first");
	assert_string_equal(v[0].channel_path, "/first.sock"); /* kept */
	assert_string_equal(v[0].name, "from-second");          /* filled */
	assert_int_equal(v[0].qemu_pid, 77);
	assert_int_equal(v[0].qemu_start_time, 8);
	assert_int_equal(v[0].vcpus, 3);
	assert_int_equal(v[0].n_pci_hostdev, 1); /* filled */
	assert_string_equal(pci_at(&v[0], 0), "0000:3b:00.0");
	assert_int_equal(v[0].n_mdev, 1); /* kept */
	assert_string_equal(mdev_at(&v[0], 0), UB);
	free(v);
	vw_vms_close(vms);
	assert_null(vw_vms_open_with(&(struct vw_vm_env){ .procfs_fd = -1 }, sources));
	/* Not one source opens: no registry that lists nothing forever, but ENODEV. */
	errno = 0;
	assert_null(vw_vms_open_with(&env, (const struct vw_vm_source_ops *const[]){ &bad, NULL }));
	assert_int_equal(errno, ENODEV);
}

/* ---- The real libvirt calls, on libvirt's test driver ---- */

#if VW_HAVE_LIBVIRT
#define TEST_NODE_XML                                                                              \
	"<node><domain type='test'><name>gpuvm</name>"                                             \
	"<uuid>4dea22b3-1d52-d8f3-2516-782e98ab3fa0</uuid><memory>1048576</memory>"                \
	"<vcpu>2</vcpu><os><type>hvm</type></os>" NOVA_META "<devices>"                            \
	"<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0' "          \
	"bus='59' slot='0' function='0'/></source></hostdev>"                                      \
	"<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source>"                          \
	"<address uuid='C2177883-F1BB-47F0-914D-32A22E3A8804'/></source></hostdev>"                \
	"</devices></domain></node>\n"

static void test_real_test_driver(void **state)
{
	char *root = vw_fixture_mkdtemp("vmlvt");
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct vw_vm_env env = { .procfs_fd = fd, .libvirt_uri = "test:///default",
				 .libvirt_helper = VW_HOST_BIN };
	struct vw_vm_info *v = NULL;
	void *src = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(vw_vm_libvirt.open(&env, &src), 0);
	assert_int_equal(vw_vm_libvirt.list(src, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].uuid, "6695eb01-f6a4-8304-79aa-97f2502e193f");
	assert_string_equal(v[0].name, "test");
	assert_string_equal(v[0].source, "libvirt");
	assert_string_equal(v[0].hypervisor, "test");
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	assert_int_equal(v[0].vcpus, 2);
	assert_int_equal(v[0].qemu_pid, 0); /* no QEMU behind the test driver */
	free(v);
	vw_vm_libvirt.close(src);

	/* A node file of the test driver whose running domain was given a GPU and a vGPU: the
	 * host devices come through libvirt's own parser and formatter. */
	{
		char uri[600];

		assert_int_equal(vw_fixture_write(root, "node.xml", TEST_NODE_XML, 0), 0);
		snprintf(uri, sizeof(uri), "test://%s/node.xml", root);
		env.libvirt_uri = uri;
		assert_int_equal(vw_vm_libvirt.open(&env, &src), 0);
		assert_int_equal(vw_vm_libvirt.list(src, &v, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(v[0].name, "gpuvm");
		assert_int_equal(v[0].state, VW_VM_RUNNING);
		assert_int_equal(v[0].n_pci_hostdev, 1);
		assert_string_equal(pci_at(&v[0], 0), "0000:3b:00.0");
		assert_int_equal(v[0].n_mdev, 1);
		assert_string_equal(mdev_at(&v[0], 0), "c2177883-f1bb-47f0-914d-32a22e3a8804");
		/* Nova's metadata through libvirt's own parser and formatter. */
		assert_nova_owner(&v[0].owner);
		free(v);
		vw_vm_libvirt.close(src);
	}

	/* Nothing listens there: open still succeeds, list is empty, retries run behind. */
	env.libvirt_uri = "qemu:///system?socket=/nonexistent/vw-test-sock";
	env.list_timeout_ns = 100 * VW_NSEC_PER_MSEC;
	assert_int_equal(vw_vm_libvirt.open(&env, &src), 0);
	assert_int_equal(vw_vm_libvirt.list(src, &v, &n), 0);
	assert_int_equal(n, 0);
	free(v);
	vw_vm_libvirt.close(src);
	close(fd);
	vw_fixture_rm(root);
}
#endif

#if VW_HAVE_LIBVIRT
/* ---- The daemon's table: the libvirt helper, a child process (vm_libvirt_child.c) ---- */

struct hx {
	struct fx *x;
	char dir[512], script[600], uri[700];
	struct vw_virt_child *child;
	char log[8192];
	size_t log_len;
};

static void hx_sink(enum vw_log_level level, const char *msg, void *ud)
{
	struct hx *h = ud;
	int k;

	(void)level;
	k = snprintf(h->log + h->log_len, sizeof(h->log) - h->log_len, "%s\n", msg);
	if (k > 0 && (size_t)k < sizeof(h->log) - h->log_len)
		h->log_len += (size_t)k;
}

/* The helper is a script that runs the real one, or misbehaves. */
static void hx_helper(struct hx *h, const char *body)
{
	char text[1024];

	snprintf(text, sizeof(text), "#!/bin/sh\n%s\n", body);
	assert_int_equal(vw_fixture_write(h->dir, "helper.tmp", text, 0755), 0);
	{
		char tmp[620];

		snprintf(tmp, sizeof(tmp), "%s/helper.tmp", h->dir);
		assert_int_equal(rename(tmp, h->script), 0);
	}
}

static void hx_node(struct hx *h, const char *domains)
{
	char text[4096];

	snprintf(text, sizeof(text), "<node>%s</node>\n", domains);
	assert_int_equal(vw_fixture_write(h->dir, "node.xml", text, 0), 0);
}

#define NODE_DOM(name, uuid)                                                                       \
	"<domain type='test'><name>" name "</name><uuid>" uuid "</uuid><memory>65536</memory>"      \
	"<vcpu>1</vcpu><os><type>hvm</type></os><devices><channel type='unix'><source "           \
	"mode='bind' path='/run/" name ".sock'/><target type='virtio' "                            \
	"name='org.virtwatt.power.0'/></channel></devices></domain>"

static struct hx *hx_open(uint64_t helper_timeout_ns, const char *domains)
{
	struct hx *h = calloc(1, sizeof(*h));
	struct vw_vm_env env = { .reconcile_ns = 3600 * VW_NSEC_PER_SEC,
				 .backoff_min_ns = VW_NSEC_PER_SEC,
				 .backoff_max_ns = 8 * VW_NSEC_PER_SEC,
				 .list_timeout_ns = 5 * VW_NSEC_PER_SEC };
	char *d;

	h->x = fx_new();
	d = vw_fixture_mkdtemp("vmlvh");
	snprintf(h->dir, sizeof(h->dir), "%s", d);
	free(d);
	snprintf(h->script, sizeof(h->script), "%s/helper", h->dir);
	snprintf(h->uri, sizeof(h->uri), "test://%s/node.xml", h->dir);
	hx_node(h, domains);
	hx_helper(h, "exec " VW_HOST_BIN " \"$@\"");
	vw_log_set_sink(hx_sink, h);
	vw_log_set_level(VW_LOG_WARN);
	env.procfs_fd = h->x->procfd;
	env.libvirt_uri = h->uri;
	assert_int_equal(vw_virt_child_new(h->x->procfd, h->script, helper_timeout_ns, &h->child), 0);
	assert_int_equal(vw_vm_libvirt_open_api(&env, &vw_virt_child_api, h->child, &h->x->src), 0);
	assert_int_equal(vw_vm_libvirt_settle(h->x->src, SETTLE_MS), 0);
	return h;
}

static void hx_free(struct hx *h)
{
	vw_log_set_sink(NULL, NULL);
	vw_log_set_level(VW_LOG_ERROR);
	vw_vm_libvirt_close(h->x->src);
	h->x->src = NULL;
	vw_virt_child_free(h->child);
	free(h->x->v);
	vw_clock_set_fake(NULL);
	close(h->x->procfd);
	vw_fixture_rm(h->x->root);
	free(h->x);
	vw_fixture_rm(strdup(h->dir)); /* (it frees its argument) */
	free(h);
}

static unsigned hx_runs(struct hx *h)
{
	struct vw_virt_child_counters c;

	vw_vm_libvirt_settle(h->x->src, SETTLE_MS);
	vw_virt_child_get_counters(h->child, &c);
	return c.runs;
}

/* Documents the child still holds: none once the core has read them. */
static unsigned hx_xml_held(struct hx *h)
{
	struct vw_virt_child_counters c;

	vw_vm_libvirt_settle(h->x->src, SETTLE_MS);
	vw_virt_child_get_counters(h->child, &c);
	return c.xml_held;
}

/* Records of the last answer the child still holds (domains and stats not yet taken). */
static size_t hx_answer_held(struct hx *h)
{
	struct vw_virt_child_counters c;

	vw_vm_libvirt_settle(h->x->src, SETTLE_MS);
	vw_virt_child_get_counters(h->child, &c);
	return c.held;
}

/*
 * Without lifecycle events: a domain started is listed once the process scan has seen its QEMU
 * (vms_seen: more VMs than last round), without waiting for the reconcile; one stopped is
 * reported stopped at the list() after the one that found its QEMU gone. One helper run each.
 */
static void test_helper_start_stop(void **state)
{
	struct hx *h;
	struct fx *x;
	struct vw_vm_info *v;
	unsigned runs;
	char *xml = NULL;

	(void)state;
	h = hx_open(0, NODE_DOM("alpha", UA));
	x = h->x;
	qemu_proc(x, 100, 5000, UA, "alpha");
	v = list_n(x, 1);
	assert_string_equal(v[0].name, "alpha");
	assert_string_equal(v[0].source, "libvirt");
	assert_string_equal(v[0].channel_path, "/run/alpha.sock");
	assert_int_equal(v[0].qemu_pid, 100);
	vw_vm_libvirt_vms_seen(x->src, 1); /* the first round: only noted */
	runs = hx_runs(h);
	assert_int_equal(runs, 1); /* connect and the first reconcile: one run */
	assert_int_equal(hx_xml_held(h), 0); /* read, parsed, not held twice */
	assert_int_equal(hx_answer_held(h), 0); /* the list and the stats: handed over */

	/* Nothing changes: no run, however often list() is called (the clock stands still). */
	for (int i = 0; i < 5; i++)
		list_n(x, 1);
	assert_int_equal(hx_runs(h), runs);

	/* A document asked for again once taken: refused, forgotten, and sent by the next run. */
	assert_int_equal(vw_virt_child_api.get_xml(h->child, UA, &xml), -EAGAIN);
	assert_null(xml);

	/* beta starts: the process scan finds its QEMU, the round lists 2 VMs. */
	hx_node(h, NODE_DOM("alpha", UA) NODE_DOM("beta", UB));
	qemu_proc(x, 200, 6000, UB, "beta");
	list_n(x, 1); /* libvirt's list: not yet */
	vw_vm_libvirt_vms_seen(x->src, 2);
	v = list_n(x, 2);
	assert_string_equal(find(v, 2, UB)->name, "beta");
	assert_string_equal(find(v, 2, UB)->channel_path, "/run/beta.sock");
	assert_int_equal(find(v, 2, UB)->qemu_pid, 200);
	assert_int_equal(hx_runs(h), runs + 1);
	assert_int_equal(hx_xml_held(h), 1); /* alpha's, sent again: the core had it already */
	assert_int_equal(vw_virt_child_api.get_xml(h->child, UA, &xml), 0);
	assert_non_null(strstr(xml, "/run/alpha.sock"));
	free(xml);
	assert_int_equal(hx_xml_held(h), 0);

	/* alpha stops: its QEMU is gone at once, the next list() asks the helper. */
	hx_node(h, NODE_DOM("beta", UB));
	vm_fixture_kill(x->root, 100);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UA)->qemu_pid, 0);
	v = list_n(x, 2);
	assert_int_equal(find(v, 2, UA)->state, VW_VM_SHUTOFF);
	assert_int_equal(hx_runs(h), runs + 2);
	v = list_n(x, 1);
	assert_string_equal(v[0].uuid, UB);

	/* Every domain's QEMU is found: the process scan sees starts and stops, so no stats are
	 * due by the clock (30 s) and no helper runs until the reconcile. */
	x->now += 60 * VW_NSEC_PER_SEC;
	list_n(x, 1);
	assert_int_equal(hx_runs(h), runs + 2);

	/* The reconcile period asks again, and for every document (hot-plugged devices). */
	x->now += 3601 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
	assert_int_equal(hx_runs(h), runs + 3);
	v = list_n(x, 1);
	assert_string_equal(v[0].channel_path, "/run/beta.sock");
	assert_int_equal(hx_runs(h), runs + 3);
	assert_int_equal(hx_xml_held(h), 0);
	hx_free(h);
}

/* A misbehaving helper: each fault is named in the log, the last list is kept, list() returns
 * within its timeout, and a good helper afterwards is used again. */
static void test_helper_faults(void **state)
{
	static const struct {
		const char *body, *said;
	} faults[] = {
		{ "exec sleep 30", "gave no answer within 1000 ms: killed" },
		{ "kill -SEGV $$", "died of signal 11" },
		{ "printf 'HTTP/1.1 200 OK'", "refused: not a libvirt helper answer" },
		{ "exec " VW_HOST_BIN " \"$@\" | head -c 60", "is refused: record runs past the end" },
		{ "exec cat /dev/zero", "killed" }, /* never ends: over the size limit or the time */
		{ "printf 'VWLV\\002\\0\\0\\0\\0\\0\\0\\0'", "another version" },
		{ "exec 1>&-; sleep 30", "did not exit within 1000 ms: killed" }, /* closes stdout */
	};
	struct hx *h;
	struct fx *x;
	struct vw_vm_info *v;

	(void)state;
	h = hx_open(VW_NSEC_PER_SEC, NODE_DOM("alpha", UA));
	x = h->x;
	v = list_n(x, 1);
	assert_string_equal(v[0].name, "alpha");
	for (size_t i = 0; i < ARRAY_SIZE(faults); i++) {
		struct vw_vm_libvirt_counters c;
		uint64_t t0;

		h->log_len = 0;
		h->log[0] = '\0';
		hx_helper(h, faults[i].body);
		/* Stats due (30 s): the helper is run, fails; list() waits at most its timeout. */
		x->now += 31 * VW_NSEC_PER_SEC;
		t0 = mono_ms();
		v = list_n(x, 1);
		assert_true(mono_ms() - t0 < 5500);
		assert_string_equal(v[0].name, "alpha");
		assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
		if (!strstr(h->log, faults[i].said))
			fail_msg("%s: the log says:\n%s", faults[i].body, h->log);
		vw_vm_libvirt_get_counters(x->src, &c);
		assert_false(c.connected); /* lost: retried with backoff, the list kept */
		v = list_n(x, 1);
		assert_string_equal(v[0].uuid, UA);

		/* A good helper again: reconnected at the next attempt. */
		hx_helper(h, "exec " VW_HOST_BIN " \"$@\"");
		x->now += 10 * VW_NSEC_PER_SEC;
		assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
		vw_vm_libvirt_get_counters(x->src, &c);
		assert_true(c.connected);
	}
	/* Not connected and backing off: a VM the process scan finds asks at once. */
	{
		struct vw_vm_libvirt_counters c;

		vw_vm_libvirt_vms_seen(x->src, 1);
		hx_helper(h, "kill -SEGV $$");
		x->now += 31 * VW_NSEC_PER_SEC;
		list_n(x, 1);
		assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
		vw_vm_libvirt_get_counters(x->src, &c);
		assert_false(c.connected);
		hx_helper(h, "exec " VW_HOST_BIN " \"$@\"");
		vw_vm_libvirt_vms_seen(x->src, 2); /* (the clock stands still: no backoff passes) */
		assert_int_equal(vw_vm_libvirt_settle(x->src, SETTLE_MS), 0);
		vw_vm_libvirt_get_counters(x->src, &c);
		assert_true(c.connected);
	}
	hx_free(h);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_stop),
		cmocka_unit_test(test_start_seen_between_reconciles),
		cmocka_unit_test(test_missed_stop_without_qemu),
		cmocka_unit_test(test_stop_before_qemu_found),
		cmocka_unit_test(test_news),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_recreate_same_uuid),
		cmocka_unit_test(test_pid_reuse),
		cmocka_unit_test(test_vcpus_from_threads),
		cmocka_unit_test(test_libvirtd_restart),
		cmocka_unit_test(test_hung_libvirtd),
		cmocka_unit_test(test_no_libvirtd_at_start),
		cmocka_unit_test(test_hostile_xml),
		cmocka_unit_test(test_domxml),
		cmocka_unit_test(test_domxml_nova),
		cmocka_unit_test(test_domxml_hostdevs),
		cmocka_unit_test(test_hostdevs_listed),
		cmocka_unit_test(test_hostdevs_packed),
		cmocka_unit_test(test_restore_channel_news),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_dormant_until_a_vm),
		cmocka_unit_test(test_local_uri_waits),
		cmocka_unit_test(test_merge_fill),
		cmocka_unit_test(test_merge_pid_reuse),
#if VW_HAVE_LIBVIRT
		cmocka_unit_test(test_real_test_driver),
		cmocka_unit_test(test_helper_start_stop),
		cmocka_unit_test(test_helper_faults),
#endif
	};

	vw_log_set_level(VW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
