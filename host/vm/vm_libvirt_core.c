/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libvirt VM source, minus libvirt itself (calls go through struct vw_virt_api).
 *
 * A worker thread owns the connection and makes every libvirt call: connect (read-only; in the
 * daemon's table, vm_libvirt_child.c, each call is a run of a helper process and libvirt sends
 * no lifecycle events), a reconcile (list the active domains, fetch the XML of new ones, then
 * their stats) at connect, after a vms_seen() that reports more VMs, when stats show an unknown
 * active domain, and periodically:
 * every reconcile_ns (30 s), or covered_reconcile_ns (5 min) while the last list() found every
 * active domain's QEMU on a QEMU driver, since the process scan then sees each start and stop
 * (fetching every XML again then, for hot-plugged devices). A lost connection is closed and
 * retried with a doubling delay; the domain list is kept meanwhile. A connection is lost when a
 * call fails with a connection error (every failed helper run, in the daemon's table).
 *
 * list() asks the worker for fresh stats when they are due and waits at most list_timeout_ns for
 * them (not at all while a previous request is still outstanding: a hung libvirtd costs one
 * timeout, not one per call), then returns the cache. Stats are due at once when a domain's
 * QEMU process, found before, is gone (how a stop is seen without events), and every
 * stats_every_ns (30 s) unless every QEMU is found (then the reconcile brings them). A start is
 * seen by the other sources (the process scan finds its QEMU): vms_seen() then asks for a
 * reconcile, whose answer (the domain's channel) is news: news_fd tells the daemon, which lists
 * at once rather than at its next interval (a restored VM's channel to the publisher). A pause
 * or resume shows at the next stats (paused and running VMs are accounted alike). QEMU PIDs (and vCPU counts the XML lacks) come from procfs in
 * the caller's thread: libvirt has no API for the PID (the pid file and status XML under
 * /run/libvirt are root-only and per-driver), so the QEMU whose -uuid is the domain's is found
 * by a scan of command lines, kept with its start time and rechecked on every list() (a reused
 * PID has another start time).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "thread.h"
#include "vm_libvirt_priv.h"
#include "vm_priv.h"

#define DEFAULT_URI "qemu:///system"
#define DEFAULT_RECONCILE_NS (30 * VW_NSEC_PER_SEC)
#define DEFAULT_BACKOFF_MIN_NS VW_NSEC_PER_SEC
#define DEFAULT_BACKOFF_MAX_NS (60 * VW_NSEC_PER_SEC)
#define DEFAULT_LIST_TIMEOUT_NS (500 * VW_NSEC_PER_MSEC)
#define DEFAULT_STATS_EVERY_NS DEFAULT_RECONCILE_NS
/* The reconcile period while the process scan sees every domain's QEMU: one helper run costs
 * ~15 ms of CPU (exec, libvirt loaded and initialised, a connection) before any domain, so
 * 100 VMs every 30 s would cost ~0.5 ms per second; every 5 min, ~0.05. */
#define COVERED_RECONCILE_NS (300 * VW_NSEC_PER_SEC)
#define MAX_WAIT_NS VW_NSEC_PER_SEC /* the worker looks at the clock at least this often */

struct dom {
	/* Packed (vm_priv.h): the table lives as long as the daemon, and a struct vw_vm_info is
	 * 2,312 B, most of it strings and host-device slots a domain leaves empty. */
	struct vw_vm_packed info;
	int id;
	bool have_xml;
	bool gone; /* stopped: reported once as VW_VM_SHUTOFF, then dropped */
	bool unfound_asked; /* its QEMU not found at a list(): stats asked for once (below) */
};

struct lv {
	const struct vw_virt_api *api;
	void *data;
	int procfd;
	struct vw_qemu_starts *starts; /* env->qemu_starts: this round's start times, or NULL */
	const struct vw_qemu_trust *trust; /* env->qemu_trust: whose QEMUs name VMs */
	char *uri;
	char hypervisor[16]; /* when the XML says nothing */
	uint64_t reconcile_ns, backoff_min_ns, backoff_max_ns, list_timeout_ns, stats_every_ns;
	/* An eventfd the worker signals when a reconcile changed what list() says of a domain
	 * that matters to the publisher (new, started again, its channel or share): the daemon
	 * lists then, not at the next interval (vw_vm_libvirt_news_fd); -1: none. */
	int news_fd;

	pthread_mutex_t mu; /* everything below */
	pthread_cond_t wake, done;
	pthread_t thread;
	bool locks_ready, thread_started, loop_started, stop, busy;
	bool dormant; /* opened with vw_vm_libvirt_open_dormant, no VM seen yet: nothing started */
	void *conn;
	bool lost;
	uint64_t backoff_ns, next_connect_ns;
	uint64_t last_reconcile_ns; /* when the last reconcile listed (vw_now_ns()), 0: none yet */
	/* The last list() found every active domain's QEMU (and this is a QEMU driver): the process
	 * scan sees each start and each stop, so reconciles (renames, hot-plugged devices, pauses)
	 * are due only every covered_reconcile_ns and stats only with them. */
	bool covered;
	bool qemu_driver; /* qemu:, or libvirt's test driver (benchmarks, tests) */
	uint64_t covered_reconcile_ns;
	bool want_reconcile, reconciling;
	uint64_t stats_req, stats_done;
	uint64_t stats_ns;    /* when stats were last applied (vw_now_ns()), 0: never */
	bool qemu_lost;       /* the last list() found the QEMU of an active domain gone */
	size_t vms_seen;      /* what the last vms_seen() was told */
	struct dom *doms;
	size_t n_doms, cap_doms;
	struct vw_vm_libvirt_counters counters;
	struct vw_complaint connect_complaint, call_complaint;

	pthread_mutex_t list_mu; /* one list() at a time */
};

static struct dom *find_dom(struct lv *lv, const char *uuid)
{
	for (size_t i = 0; i < lv->n_doms; i++)
		if (strcmp(lv->doms[i].info.uuid, uuid) == 0)
			return &lv->doms[i];
	return NULL;
}

/* find_dom, looking at entry `hint` first: lists of the same domains come in the same order
 * interval after interval, and 100 VMs made each pass 5,000 strcmp. */
static struct dom *find_dom_at(struct lv *lv, const char *uuid, size_t hint)
{
	if (hint < lv->n_doms && strcmp(lv->doms[hint].info.uuid, uuid) == 0)
		return &lv->doms[hint];
	return find_dom(lv, uuid);
}

static bool conn_error(int r)
{
	return r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE || r == -ECONNREFUSED ||
	       r == -ESHUTDOWN;
}

/* A failed call (lock held): a dead connection is dropped, anything else is logged. */
static void call_failed(struct lv *lv, int r, const char *what, const char *msg)
{
	if (conn_error(r)) {
		lv->lost = true;
		return;
	}
	vw_complain(&lv->call_complaint, VW_LOG_WARN, "vm: libvirt: %s: %s", what,
		    msg[0] ? msg : strerror(-r));
}

/* ---- Worker: connection ---- */

static void disconnect(struct lv *lv, uint64_t now)
{
	void *conn = VW_TAKE_PTR(lv->conn);

	lv->counters.connected = false;
	lv->next_connect_ns = now + lv->backoff_ns;
	lv->counters.next_connect_ns = lv->next_connect_ns;
	lv->backoff_ns = VW_MIN(lv->backoff_ns * 2, lv->backoff_max_ns);
	vw_warn("vm: libvirt: lost the connection to %s; keeping the last %zu VMs, reconnecting",
		lv->uri, lv->n_doms);
	pthread_mutex_unlock(&lv->mu);
	lv->api->close(conn);
	pthread_mutex_lock(&lv->mu);
}

static void try_connect(struct lv *lv, uint64_t now)
{
	char msg[256] = "";
	void *conn = NULL;
	int r;

	lv->lost = false; /* a failed call from here on is about the new connection */
	pthread_mutex_unlock(&lv->mu);
	r = lv->api->connect(lv->data, lv->uri, &conn);
	if (r < 0)
		snprintf(msg, sizeof(msg), "%s", lv->api->last_error(lv->data));
	pthread_mutex_lock(&lv->mu);
	if (r < 0) {
		lv->counters.connect_failures++;
		vw_complain(&lv->connect_complaint, VW_LOG_WARN,
			    "vm: libvirt: cannot connect to %s: %s (retrying in %" PRIu64 " ms)",
			    lv->uri, msg[0] ? msg : strerror(-r), (uint64_t)(lv->backoff_ns / VW_NSEC_PER_MSEC));
		lv->next_connect_ns = now + lv->backoff_ns;
		lv->counters.next_connect_ns = lv->next_connect_ns;
		lv->backoff_ns = VW_MIN(lv->backoff_ns * 2, lv->backoff_max_ns);
		return;
	}
	lv->conn = conn;
	lv->counters.connected = true;
	lv->counters.connects++;
	lv->backoff_ns = lv->backoff_min_ns;
	lv->want_reconcile = true;
	if (lv->connect_complaint.active)
		vw_release(&lv->connect_complaint, VW_LOG_INFO, "vm: libvirt: connected to %s",
			   lv->uri);
	else
		vw_info("vm: libvirt: connected to %s", lv->uri);
}

/* ---- Worker: reconcile and stats ---- */

/* What a reconcile learnt about one listed domain, gathered without the lock. */
struct fetched {
	struct vw_virt_dom dom;
	bool have_xml;
	/* What its XML says, packed (a parsed document is 3 KiB, and a reconcile holds every
	 * domain's at once): hypervisor ("" when it names none), vCPUs, channel, share, host
	 * devices, owner. */
	struct vw_vm_packed xml;
};

static void apply_xml(struct lv *lv, struct vw_vm_info *info, const struct fetched *f)
{
	struct vw_vm_info x;

	vw_vm_unpack(&f->xml, &x);
	snprintf(info->hypervisor, sizeof(info->hypervisor), "%s",
		 x.hypervisor[0] ? x.hypervisor : lv->hypervisor);
	info->vcpus = x.vcpus;
	memcpy(info->channel_path, x.channel_path, sizeof(info->channel_path));
	memcpy(info->share_dir, x.share_dir, sizeof(info->share_dir));
	info->share_readonly = x.share_readonly;
	info->n_pci_hostdev = x.n_pci_hostdev;
	info->n_mdev = x.n_mdev;
	memcpy(info->pci_hostdev, x.pci_hostdev, sizeof(info->pci_hostdev));
	memcpy(info->mdev, x.mdev, sizeof(info->mdev));
	info->owner = x.owner;
}

/* A listed domain into the table: new, or a known UUID started again (new ID: new QEMU).
 * *ret_news: set when list() now says something new of its channel: the domain is new or
 * started again, or its channel's or share's path changed. */
static int apply_listed(struct lv *lv, const struct fetched *f, bool *ret_news)
{
	struct dom *d = find_dom(lv, f->dom.uuid);
	struct vw_vm_info info;
	char was_chan[sizeof(info.channel_path)] = "", was_share[sizeof(info.share_dir)] = "";
	int r;

	if (!d) {
		*ret_news = true;
		if (vw_array_grow((void **)&lv->doms, sizeof(*lv->doms), lv->n_doms, &lv->cap_doms) < 0)
			return -ENOMEM;
		d = &lv->doms[lv->n_doms++];
		memset(d, 0, sizeof(*d));
		memcpy(d->info.uuid, f->dom.uuid, VW_UUID_LEN);
		snprintf(d->info.source, sizeof(d->info.source), "libvirt");
		snprintf(d->info.hypervisor, sizeof(d->info.hypervisor), "%s", lv->hypervisor);
		d->id = f->dom.id;
	}
	if (d->gone && d->id == f->dom.id)
		return 0; /* listed just before its stats found it stopped: they were right */
	vw_vm_unpack(&d->info, &info);
	memcpy(was_chan, info.channel_path, sizeof(was_chan));
	memcpy(was_share, info.share_dir, sizeof(was_share));
	if (d->gone || d->id != f->dom.id) {
		struct vw_vm_info keep = info;

		*ret_news = true;
		memset(&info, 0, sizeof(info));
		memcpy(info.uuid, keep.uuid, VW_UUID_LEN);
		memcpy(info.source, keep.source, sizeof(keep.source));
		memcpy(info.hypervisor, keep.hypervisor, sizeof(keep.hypervisor));
		d->gone = false;
		d->have_xml = false;
		d->unfound_asked = false;
		d->id = f->dom.id;
	}
	if (info.state == VW_VM_SHUTOFF)
		info.state = VW_VM_RUNNING;
	vw_vm_name_sanitize(info.name, sizeof(info.name), f->dom.name, sizeof(f->dom.name));
	if (f->have_xml)
		apply_xml(lv, &info, f);
	if (strcmp(was_chan, info.channel_path) != 0 || strcmp(was_share, info.share_dir) != 0)
		*ret_news = true;
	r = vw_vm_pack(&info, &d->info);
	if (r < 0) {
		/* Its fixed fields at least; its strings, and its XML, at the next pass. */
		vw_vm_packed_free(&d->info);
		memcpy(d->info.hypervisor, info.hypervisor, sizeof(info.hypervisor));
		d->info.n_pci_hostdev = d->info.n_mdev = 0;
		d->info.state = info.state;
		d->info.vcpus = info.vcpus;
		d->info.qemu_pid = info.qemu_pid;
		d->info.qemu_start_time = info.qemu_start_time;
		d->have_xml = false;
		return r;
	}
	d->have_xml |= f->have_xml;
	return 0;
}

static void apply_stats(struct lv *lv, const struct vw_virt_stat *st, size_t n)
{
	for (size_t i = 0; i < lv->n_doms; i++) {
		struct dom *d = &lv->doms[i];
		const struct vw_virt_stat *s = NULL;

		if (d->gone)
			continue;
		if (i < n && strcmp(st[i].uuid, d->info.uuid) == 0)
			s = &st[i];
		for (size_t j = 0; j < n && !s; j++)
			if (strcmp(st[j].uuid, d->info.uuid) == 0)
				s = &st[j];
		if (!s || s->state == VW_VM_SHUTOFF) { /* no longer active */
			d->gone = true;
			d->info.state = VW_VM_SHUTOFF;
			continue;
		}
		d->info.state = s->state;
	}
	for (size_t j = 0; j < n; j++)
		if (st[j].state != VW_VM_SHUTOFF && !find_dom_at(lv, st[j].uuid, j))
			lv->want_reconcile = true; /* started, and no vms_seen() told of it */
}

/* Stats for the whole host (lock held on entry and exit). */
static void refresh_stats(struct lv *lv)
{
	_cleanup_free_ struct vw_virt_stat *st = NULL;
	uint64_t asked = lv->stats_req; /* requests made so far: these stats answer them */
	void *conn = lv->conn;
	char msg[256] = "";
	size_t n = 0;
	int r;

	pthread_mutex_unlock(&lv->mu);
	r = lv->api->stats(conn, &st, &n);
	if (r < 0)
		snprintf(msg, sizeof(msg), "%s", lv->api->last_error(lv->data));
	pthread_mutex_lock(&lv->mu);
	if (r < 0) {
		call_failed(lv, r, "domain stats", msg);
		return;
	}
	apply_stats(lv, st, n);
	lv->stats_ns = vw_now_ns();
	lv->counters.stats_fetches++;
	if (lv->stats_done < asked)
		lv->stats_done = asked; /* (a reconcile's stats answer a list() that waits) */
}

/* Whether the XML of a listed domain must be fetched (lock held). */
static bool need_xml(struct lv *lv, const struct vw_virt_dom *vd, bool full)
{
	struct dom *d = find_dom(lv, vd->uuid);

	return full || !d || d->gone || d->id != vd->id || !d->have_xml;
}

/* Fetch the XML of one domain (no lock held). */
static void fetch_xml(struct lv *lv, void *conn, struct fetched *f)
{
	_cleanup_free_ char *xml = NULL;
	struct vw_domxml x;
	struct vw_vm_info v = { 0 };
	int r;

	r = lv->api->get_xml(conn, f->dom.uuid, &xml);
	if (r < 0) {
		vw_debug("vm: libvirt: XML of %s: %s", f->dom.uuid, lv->api->last_error(lv->data));
		return;
	}
	r = vw_domxml_parse(xml, strlen(xml), &x); /* (all empty when refused) */
	if (r < 0)
		vw_debug("vm: libvirt: XML of %s unreadable (%s): no channel, share or host device",
			 f->dom.uuid, strerror(-r));
	memcpy(v.hypervisor, x.hypervisor, sizeof(v.hypervisor));
	v.vcpus = x.vcpus;
	memcpy(v.channel_path, x.channel_path, sizeof(v.channel_path));
	memcpy(v.share_dir, x.share_dir, sizeof(v.share_dir));
	v.share_readonly = x.share_readonly;
	vw_vm_hostdevs_from_xml(&v, &x);
	v.owner = x.owner;
	if (vw_vm_pack(&v, &f->xml) < 0) {
		vw_debug("vm: libvirt: XML of %s: out of memory (fetched again)", f->dom.uuid);
		return;
	}
	f->have_xml = true; /* a bad document is not fetched again until the next full pass */
}

/* Wake the daemon: list() has news for it (lock held; the stats are applied by then). */
static void tell_news(struct lv *lv)
{
	uint64_t one = 1;

	lv->counters.news++;
	if (lv->news_fd >= 0 && write(lv->news_fd, &one, sizeof(one)) < 0)
		vw_debug("vm: libvirt: news not told: %m"); /* (EAGAIN: told already, unread) */
}

static void reconcile_pass(struct lv *lv, bool full)
{
	_cleanup_free_ struct vw_virt_dom *doms = NULL;
	_cleanup_free_ struct fetched *f = NULL;
	_cleanup_free_ bool *want = NULL;
	void *conn = lv->conn;
	char msg[256] = "";
	bool news = false;
	size_t n = 0;
	int r;

	lv->want_reconcile = false;
	lv->reconciling = true;
	lv->counters.reconciles++;
	pthread_mutex_unlock(&lv->mu);
	if (lv->api->pass)
		lv->api->pass(conn, full);
	r = lv->api->list(conn, &doms, &n);
	if (r < 0)
		snprintf(msg, sizeof(msg), "%s", lv->api->last_error(lv->data));
	pthread_mutex_lock(&lv->mu);
	lv->last_reconcile_ns = vw_now_ns();
	if (r < 0) {
		call_failed(lv, r, "list domains", msg);
		return;
	}
	f = calloc(n ? n : 1, sizeof(*f));
	want = calloc(n ? n : 1, sizeof(*want));
	if (!f || !want)
		return;
	for (size_t i = 0; i < n; i++) {
		f[i].dom = doms[i];
		f[i].dom.uuid[VW_UUID_LEN - 1] = '\0';
		f[i].dom.name[sizeof(f[i].dom.name) - 1] = '\0';
		want[i] = need_xml(lv, &doms[i], full);
	}
	pthread_mutex_unlock(&lv->mu);
	for (size_t i = 0; i < n; i++)
		if (want[i])
			fetch_xml(lv, conn, &f[i]);
	pthread_mutex_lock(&lv->mu);
	for (size_t i = 0; i < n; i++) {
		lv->counters.xml_fetches += want[i];
		if (apply_listed(lv, &f[i], &news) < 0)
			vw_warn("vm: libvirt: out of memory for domain %s", f[i].dom.uuid);
	}
	/* Known domains not listed have stopped; stats below would find the same. */
	for (size_t i = 0; i < lv->n_doms; i++) {
		bool listed = false;

		for (size_t j = 0; j < n && !listed; j++)
			listed = strcmp(doms[j].uuid, lv->doms[i].info.uuid) == 0;
		if (!listed && !lv->doms[i].gone) {
			lv->doms[i].gone = true;
			lv->doms[i].info.state = VW_VM_SHUTOFF;
		}
	}
	for (size_t i = 0; i < n; i++)
		vw_vm_packed_free(&f[i].xml);
	refresh_stats(lv);
	if (news)
		tell_news(lv);
}

static void reconcile(struct lv *lv, bool full)
{
	reconcile_pass(lv, full);
	lv->reconciling = false;
}

/* ---- Worker loop ---- */

/* CLOCK_MONOTONIC now + ns, for pthread_cond_timedwait on our condition variables. */
static struct timespec deadline_in(uint64_t ns)
{
	struct timespec ts;
	uint64_t t;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = (uint64_t)ts.tv_nsec + ns;
	ts.tv_sec += (time_t)(t / VW_NSEC_PER_SEC);
	ts.tv_nsec = (long)(t % VW_NSEC_PER_SEC);
	return ts;
}

/* When the next periodic reconcile is due (lock held). */
static uint64_t next_reconcile(const struct lv *lv)
{
	if (!lv->last_reconcile_ns)
		return 0;
	return lv->last_reconcile_ns + (lv->covered ? lv->covered_reconcile_ns : lv->reconcile_ns);
}

static bool work_due(const struct lv *lv, uint64_t now)
{
	if (lv->stop)
		return false;
	if (!lv->conn)
		return now >= lv->next_connect_ns || lv->stats_done != lv->stats_req;
	return lv->lost || lv->want_reconcile || now >= next_reconcile(lv) ||
	       lv->stats_done != lv->stats_req;
}

static void step(struct lv *lv)
{
	uint64_t now = vw_now_ns();

	if (lv->conn && lv->lost)
		disconnect(lv, now);
	if (!lv->conn && now >= lv->next_connect_ns)
		try_connect(lv, now);
	if (lv->conn && !lv->lost && (lv->want_reconcile || now >= next_reconcile(lv)))
		reconcile(lv, now >= next_reconcile(lv));
	if (lv->conn && !lv->lost && lv->stats_done != lv->stats_req) {
		uint64_t target = lv->stats_req;

		refresh_stats(lv);
		if (lv->want_reconcile && lv->conn && !lv->lost)
			reconcile(lv, false);
		lv->stats_done = target;
	}
	if (!lv->conn || lv->lost)
		lv->stats_done = lv->stats_req; /* answer from the cache */
}

static void wait_work(struct lv *lv)
{
	uint64_t now = vw_now_ns(), deadline;
	struct timespec ts;

	deadline = lv->conn ? next_reconcile(lv) : lv->next_connect_ns;
	ts = deadline_in(deadline > now ? VW_MIN(deadline - now, (uint64_t)MAX_WAIT_NS) : 0);
	pthread_cond_timedwait(&lv->wake, &lv->mu, &ts);
}

static void *worker(void *arg)
{
	struct lv *lv = arg;

	pthread_mutex_lock(&lv->mu);
	while (!lv->stop) {
		lv->busy = true;
		step(lv);
		lv->busy = false;
		pthread_cond_broadcast(&lv->done);
		if (!work_due(lv, vw_now_ns()))
			wait_work(lv);
	}
	if (lv->conn) {
		void *conn = VW_TAKE_PTR(lv->conn);

		pthread_mutex_unlock(&lv->mu);
		lv->api->close(conn);
		pthread_mutex_lock(&lv->mu);
	}
	lv->counters.connected = false;
	pthread_cond_broadcast(&lv->done);
	pthread_mutex_unlock(&lv->mu);
	return NULL;
}

/* ---- Public ---- */

static int init_locks(struct lv *lv)
{
	pthread_condattr_t ca;
	int r;

	r = pthread_condattr_init(&ca);
	if (r)
		return -r;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&lv->mu, NULL);
	pthread_mutex_init(&lv->list_mu, NULL);
	pthread_cond_init(&lv->wake, &ca);
	pthread_cond_init(&lv->done, &ca);
	pthread_condattr_destroy(&ca);
	lv->locks_ready = true;
	return 0;
}

/* Until the first connection attempt (and its reconcile) is over, at most list_timeout_ns. */
static void wait_first(struct lv *lv)
{
	struct timespec ts = deadline_in(lv->list_timeout_ns);

	pthread_mutex_lock(&lv->mu);
	while (!lv->counters.connects && !lv->counters.connect_failures)
		if (pthread_cond_timedwait(&lv->done, &lv->mu, &ts) == ETIMEDOUT)
			break;
	while (lv->counters.connects && !lv->counters.reconciles)
		if (pthread_cond_timedwait(&lv->done, &lv->mu, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&lv->mu);
}

/* The table's loop_start, the worker, its first connection. */
static int start(struct lv *lv)
{
	int r = lv->api->loop_start(lv->data);

	lv->loop_started = r == 0;
	if (r == 0) {
		r = vw_thread_create(&lv->thread, worker, lv);
		lv->thread_started = r == 0;
	}
	if (r == 0)
		wait_first(lv);
	return r;
}

static int open_lv(const struct vw_vm_env *env, const struct vw_virt_api *api, void *data,
		   bool dormant, void **ret_state)
{
	const char *uri = env->libvirt_uri && env->libvirt_uri[0] ? env->libvirt_uri : DEFAULT_URI;
	struct lv *lv;
	int r;

	if (env->procfs_fd < 0 || !api || !ret_state)
		return -EINVAL;
	lv = calloc(1, sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	/* (None: the daemon lists at its intervals only, as before.) */
	lv->news_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	lv->api = api;
	lv->data = data;
	lv->procfd = env->procfs_fd;
	lv->starts = env->qemu_starts;
	lv->trust = env->qemu_trust;
	lv->uri = strdup(uri);
	snprintf(lv->hypervisor, sizeof(lv->hypervisor), "%s",
		 strncmp(uri, "xen", 3) == 0 ? "xen" : "kvm");
	lv->reconcile_ns = env->reconcile_ns ? env->reconcile_ns : DEFAULT_RECONCILE_NS;
	lv->covered_reconcile_ns = env->reconcile_covered_ns
					   ? env->reconcile_covered_ns
					   : VW_MAX(lv->reconcile_ns, (uint64_t)COVERED_RECONCILE_NS);
	lv->qemu_driver = strncmp(uri, "qemu", 4) == 0 || strncmp(uri, "test:", 5) == 0;
	lv->backoff_min_ns = env->backoff_min_ns ? env->backoff_min_ns : DEFAULT_BACKOFF_MIN_NS;
	lv->backoff_max_ns = VW_MAX(env->backoff_max_ns ? env->backoff_max_ns
							 : DEFAULT_BACKOFF_MAX_NS,
				    lv->backoff_min_ns);
	lv->list_timeout_ns = env->list_timeout_ns ? env->list_timeout_ns : DEFAULT_LIST_TIMEOUT_NS;
	lv->stats_every_ns = env->libvirt_stats_every_ns ? env->libvirt_stats_every_ns
							  : DEFAULT_STATS_EVERY_NS;
	lv->backoff_ns = lv->backoff_min_ns;
	lv->vms_seen = SIZE_MAX; /* the first round's count is only noted */
	lv->next_connect_ns = vw_now_ns();
	lv->dormant = dormant;
	r = lv->uri ? init_locks(lv) : -ENOMEM;
	if (r == 0 && !dormant)
		r = start(lv);
	if (r < 0) {
		vw_vm_libvirt_close(lv);
		return r;
	}
	*ret_state = lv;
	return 0;
}

int vw_vm_libvirt_open_api(const struct vw_vm_env *env, const struct vw_virt_api *api, void *data,
			   void **ret_state)
{
	return open_lv(env, api, data, false, ret_state);
}

int vw_vm_libvirt_open_local(const struct vw_vm_env *env, const struct vw_virt_api *api,
			     void *data, void **ret_state)
{
	const char *uri = env->libvirt_uri && env->libvirt_uri[0] ? env->libvirt_uri : DEFAULT_URI;
	bool local = strncmp(uri, "qemu:///", 8) == 0;

	if (local)
		vw_info("vm: libvirt: %s is opened once a VM runs here (a QEMU process)", uri);
	return open_lv(env, api, data, local, ret_state);
}

int vw_vm_libvirt_open_dormant(const struct vw_vm_env *env, const struct vw_virt_api *api,
			       void *data, void **ret_state)
{
	return open_lv(env, api, data, true, ret_state);
}

bool vw_vm_libvirt_vms_seen(void *state, size_t n)
{
	struct lv *lv = state;
	int r;

	if (!lv)
		return false;
	if (!lv->dormant) {
		/* More VMs than last round: one started (its QEMU found by the process scan). */
		if (lv->thread_started) {
			pthread_mutex_lock(&lv->mu);
			if (lv->vms_seen != SIZE_MAX && n > lv->vms_seen) {
				lv->want_reconcile = true;
				if (!lv->conn) /* not connected: try now, whatever the backoff */
					lv->next_connect_ns = vw_now_ns();
				pthread_cond_signal(&lv->wake);
			}
			lv->vms_seen = n;
			pthread_mutex_unlock(&lv->mu);
		}
		return false;
	}
	if (n == 0)
		return false;
	lv->dormant = false;
	lv->vms_seen = n;
	vw_info("vm: libvirt: a VM runs here: connecting to %s", lv->uri);
	lv->next_connect_ns = vw_now_ns();
	r = start(lv);
	if (r < 0) /* the library missing (said where it was looked for) or no thread */
		vw_warn("vm: libvirt: not started (%s): VMs are found by the process scan alone",
			strerror(-r));
	return r == 0;
}

void vw_vm_libvirt_close(void *state)
{
	struct lv *lv = state;

	if (!lv)
		return;
	if (lv->thread_started) {
		pthread_mutex_lock(&lv->mu);
		lv->stop = true;
		pthread_cond_signal(&lv->wake);
		pthread_mutex_unlock(&lv->mu);
		pthread_join(lv->thread, NULL);
	}
	if (lv->loop_started)
		lv->api->loop_stop(lv->data);
	if (lv->locks_ready) {
		pthread_mutex_destroy(&lv->mu);
		pthread_mutex_destroy(&lv->list_mu);
		pthread_cond_destroy(&lv->wake);
		pthread_cond_destroy(&lv->done);
	}
	for (size_t i = 0; i < lv->n_doms; i++)
		vw_vm_packed_free(&lv->doms[i].info);
	free(lv->doms);
	free(lv->uri);
	vw_closep(&lv->news_fd);
	free(lv);
}

int vw_vm_libvirt_news_fd(void *state)
{
	const struct lv *lv = state;

	return lv ? lv->news_fd : -1;
}

/* Whether list() needs fresh stats (lock held): stats_every_ns passed, the QEMU of a domain the
 * cache calls active was found gone in the last list() (stopped?), or a reconcile is asked for
 * or running, which the list waits for (the worker does it first). */
static bool stats_due(const struct lv *lv)
{
	uint64_t now = vw_now_ns();

	if (lv->qemu_lost || lv->want_reconcile || lv->reconciling || !lv->stats_ns)
		return true;
	if (lv->covered)
		return false; /* the process scan sees starts and stops; the reconcile brings stats */
	return now < lv->stats_ns || now - lv->stats_ns >= lv->stats_every_ns;
}

/* Ask the worker for fresh stats when due and wait a bounded time (lock held). */
static void fresh_stats(struct lv *lv)
{
	struct timespec ts;
	uint64_t target;

	if (!lv->conn || lv->lost || lv->stats_done != lv->stats_req)
		return; /* nothing to ask, or a request is stuck in a hung libvirtd */
	if (!stats_due(lv))
		return; /* the process scan and the periodic reconcile keep the cache current */
	target = ++lv->stats_req;
	pthread_cond_signal(&lv->wake);
	ts = deadline_in(lv->list_timeout_ns);
	while (lv->stats_done < target && !lv->stop)
		if (pthread_cond_timedwait(&lv->done, &lv->mu, &ts) == ETIMEDOUT)
			break;
}

/* Copy the table out (lock held); stopped domains leave it. ids[] gets each entry's domain ID. */
static int snapshot(struct lv *lv, struct vw_vm_info **ret, int **ret_ids, size_t *ret_n)
{
	size_t n = lv->n_doms, o = 0;
	struct vw_vm_info *out = malloc((n ? n : 1) * sizeof(*out));
	int *ids = malloc((n ? n : 1) * sizeof(*ids));

	if (!out || !ids) {
		free(out);
		free(ids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct dom *d = &lv->doms[i];

		vw_vm_unpack(&d->info, &out[i]);
		ids[i] = d->id;
		if (d->gone) {
			vw_vm_packed_free(&d->info);
			continue;
		}
		if (o != i) /* (a whole domain each: not onto itself) */
			lv->doms[o] = *d;
		o++;
	}
	lv->n_doms = o;
	*ret = out;
	*ret_ids = ids;
	*ret_n = n;
	return 0;
}

/* What procfs found goes back into the table, unless the domain restarted meanwhile. */
static void write_back(struct lv *lv, const struct vw_vm_info *vms, const int *ids, size_t n)
{
	lv->qemu_lost = false;
	lv->covered = lv->qemu_driver;
	for (size_t i = 0; i < n; i++) {
		struct dom *d;

		if (vms[i].state == VW_VM_SHUTOFF)
			continue;
		lv->covered &= vms[i].qemu_pid != 0;
		d = find_dom_at(lv, vms[i].uuid, i);
		if (!d || d->gone || d->id != ids[i])
			continue;
		/* Its QEMU was found before and is gone now: stopped, most likely. (A domain whose
		 * QEMU was never found, as on libvirt's test driver or Xen, waits for the next
		 * stats: no helper run every interval for it.) */
		lv->qemu_lost |= d->info.qemu_pid != 0 && vms[i].qemu_pid == 0;
		/* Never found: perhaps its QEMU is gone already (a domain destroyed within a second
		 * of its start, the helper's answer listing it after), perhaps not yet there or never
		 * here (Xen, a remote host, the test driver). Stats once, at the next list(): a stopped
		 * one is reported stopped then, not at the 30 s stats (faults.py's VM cycles: a VM
		 * still shown 5 s after its destroy), for one helper run a domain. */
		if (!d->info.qemu_pid && !vms[i].qemu_pid && !d->unfound_asked) {
			d->unfound_asked = true;
			lv->qemu_lost = true;
		}
		d->info.qemu_pid = vms[i].qemu_pid;
		d->info.qemu_start_time = vms[i].qemu_start_time;
		if (!d->info.vcpus)
			d->info.vcpus = vms[i].vcpus;
	}
}

int vw_vm_libvirt_list(void *state, struct vw_vm_info **ret, size_t *ret_n)
{
	struct lv *lv = state;
	_cleanup_free_ int *ids = NULL;
	struct vw_vm_info *vms = NULL;
	size_t n = 0;
	int r;

	if (!lv || !ret || !ret_n)
		return -EINVAL;
	if (!lv->thread_started) { /* dormant, or it could not start: nothing of libvirt's */
		*ret = calloc(1, sizeof(**ret));
		*ret_n = 0;
		return *ret ? 0 : -ENOMEM;
	}
	pthread_mutex_lock(&lv->list_mu);
	pthread_mutex_lock(&lv->mu);
	fresh_stats(lv);
	r = snapshot(lv, &vms, &ids, &n);
	pthread_mutex_unlock(&lv->mu);
	if (r == 0) {
		vw_qemu_resolve(lv->procfd, lv->starts, lv->trust, vms, n);
		pthread_mutex_lock(&lv->mu);
		write_back(lv, vms, ids, n);
		pthread_mutex_unlock(&lv->mu);
		*ret = vms;
		*ret_n = n;
	}
	pthread_mutex_unlock(&lv->list_mu);
	return r;
}

void vw_vm_libvirt_get_counters(void *state, struct vw_vm_libvirt_counters *ret)
{
	struct lv *lv = state;

	pthread_mutex_lock(&lv->mu);
	*ret = lv->counters;
	pthread_mutex_unlock(&lv->mu);
}

int vw_vm_libvirt_settle(void *state, uint64_t timeout_ms)
{
	struct lv *lv = state;
	struct timespec end = deadline_in(timeout_ms * VW_NSEC_PER_MSEC);
	int r = 0;

	pthread_mutex_lock(&lv->mu);
	while (lv->busy || work_due(lv, vw_now_ns())) {
		struct timespec ts = deadline_in(10 * VW_NSEC_PER_MSEC), now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) {
			r = -ETIMEDOUT;
			break;
		}
		pthread_cond_signal(&lv->wake);
		pthread_cond_timedwait(&lv->done, &lv->mu, &ts);
	}
	pthread_mutex_unlock(&lv->mu);
	return r;
}
