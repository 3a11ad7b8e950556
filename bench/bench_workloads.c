/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload registry benchmark: the daemon's per-interval CPU cost of per-process attribution,
 * without the accountant (bench/daemon_cpu.sh measures the whole daemon).
 *
 * For each process count N and each --metrics.process-top-n value, a child process builds a
 * procfs fixture tree of N processes (stat, cgroup, comm, an exe link: 60 % in ~50 containers of
 * which most belong to 20 Kubernetes pods, the rest system services, sessions and kernel
 * threads), serves those pods (with CPU requests) from an in-process fake kubelet, then drives
 * the real registry as the daemon does each interval: vw_workloads_update() with a snapshot of
 * random CPU deltas and four zones of energy, vw_workloads_render() in text and OpenMetrics
 * (both are rendered per publish), vw_workloads_published(). It prints one row per run: median
 * and p95 CPU time (CLOCK_PROCESS_CPUTIME_ID) of update, render and their total over the
 * intervals after the first (the first one discovers every process and is shown apart), the
 * series count, and memory: VmRSS before and after, VmHWM, and the heap the registry holds.
 *
 * The fixture lives under $TMPDIR, else /dev/shm (tmpfs: in memory like procfs, and building
 * 10,000 process directories there takes a second, not a minute as on ext4), else /tmp.
 *
 *   bench_workloads [--procs N[,N...]] [--top-n N[,N...]] [--intervals M] [--interval-s S]
 *                   [--churn PERMILLE] [--cpus N] [--no-pods] [--seed S]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "workloads.h"

#define MAX_LIST 8
#define N_PODS 20
#define N_SIDECARS 5  /* pods with a second app container */
#define N_DOCKER 5    /* standalone docker containers */
#define N_CONTAINERS (N_PODS * 2 + N_SIDECARS + N_DOCKER) /* pause + app (+ sidecar) per pod */
#define FIRST_PID 300

struct opts {
	unsigned long procs[MAX_LIST], top_n[MAX_LIST];
	size_t n_procs, n_top_n;
	unsigned intervals;
	unsigned interval_s;
	unsigned churn_permille; /* processes replaced per interval, per thousand */
	unsigned cpus;
	bool pods;
	uint64_t seed;
};

/* ---- The synthetic node ---- */

enum kind { K_KERNEL, K_SYSTEM, K_CONTAINER };

struct container {
	char id[VW_CONTAINER_ID_LEN];
	char cgroup[320]; /* the /proc/PID/cgroup line */
	int pod;          /* -1: docker */
};

struct pod {
	char uid[VW_POD_UID_LEN];
	char name[40];
	unsigned request_m;
};

struct proc {
	uint32_t pid;
	enum kind kind;
	int container;   /* index into node.conts, or -1 */
	unsigned system; /* which system cgroup */
	const char *comm;
	uint64_t start_time, cpu_ns;
};

struct node {
	char *root;
	uint64_t rng;
	struct pod pods[N_PODS];
	struct container conts[N_CONTAINERS];
	struct proc *procs;
	size_t n;
	uint32_t next_pid;
	uint64_t ticks; /* boot time in clock ticks, for starttime */
};

static uint64_t rnd(struct node *nd)
{
	nd->rng ^= nd->rng << 13;
	nd->rng ^= nd->rng >> 7;
	nd->rng ^= nd->rng << 17;
	return nd->rng;
}

static void hex(struct node *nd, char *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = "0123456789abcdef"[rnd(nd) & 0xf];
	out[n] = '\0';
}

static const char *const system_cgroups[] = {
	"0::/init.scope\n",
	"0::/system.slice/systemd-journald.service\n",
	"0::/system.slice/containerd.service\n",
	"0::/system.slice/kubelet.service\n",
	"0::/system.slice/ssh.service\n",
	"0::/system.slice/cron.service\n",
	"0::/system.slice/rsyslog.service\n",
	"0::/user.slice/user-1000.slice/session-4.scope\n",
	"0::/user.slice/user-1000.slice/user@1000.service/app.slice/tmux.scope\n",
};
static const char *const system_comms[] = {
	"systemd", "systemd-journal", "containerd", "kubelet", "sshd", "cron", "rsyslogd", "bash",
	"tmux: server",
};
static const char *const kernel_comms[] = {
	"kworker/0:1H-kblockd", "ksoftirqd/3", "migration/7", "rcu_preempt", "kworker/u64:2-events",
	"xfsaild/dm-0", "jbd2/sda1-8",
};
static const char *const app_comms[] = {
	"java", "nginx", "php-fpm", "postgres", "python3", "node", "envoy", "redis-server",
	"gunicorn", "prometheus",
};
static const char *const qos[] = { "burstable", "besteffort", "guaranteed" };

static void make_container(struct node *nd, struct container *ct, int pod, const char *parent,
			   const char *prefix)
{
	char id[VW_CONTAINER_ID_LEN];

	hex(nd, id, 64);
	memcpy(ct->id, id, sizeof(id));
	ct->pod = pod;
	snprintf(ct->cgroup, sizeof(ct->cgroup), "0::%s/%s-%s.scope\n", parent, prefix, id);
}

static void make_containers(struct node *nd)
{
	size_t c = 0;

	for (int p = 0; p < N_PODS; p++) {
		struct pod *pod = &nd->pods[p];
		char h[33], uid_us[VW_POD_UID_LEN], slice[200];
		const char *q = qos[p % 3];

		hex(nd, h, 32);
		snprintf(pod->uid, sizeof(pod->uid), "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12,
			 h + 16, h + 20);
		snprintf(pod->name, sizeof(pod->name), "app-%d-%.5s", p, h + 27);
		pod->request_m = p % 3 == 1 ? 0 : 250 * (1 + (unsigned)(rnd(nd) % 6));
		snprintf(uid_us, sizeof(uid_us), "%s", pod->uid);
		for (char *s = uid_us; *s; s++)
			if (*s == '-')
				*s = '_';
		if (p % 3 == 2) /* guaranteed pods sit directly under kubepods.slice */
			snprintf(slice, sizeof(slice), "/kubepods.slice/kubepods-pod%s.slice", uid_us);
		else
			snprintf(slice, sizeof(slice), "/kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice",
				 q, q, uid_us);
		/* The sandbox (pause), the app, and for some pods a sidecar. */
		for (int k = 0; k < (p < N_SIDECARS ? 3 : 2); k++, c++)
			make_container(nd, &nd->conts[c], p, slice, "cri-containerd");
	}
	for (; c < N_CONTAINERS; c++)
		make_container(nd, &nd->conts[c], -1, "/system.slice", "docker");
}

/* A pod's first container is its sandbox (pause): one process, listed by no pod spec. */
static bool is_sandbox(const struct node *nd, int c)
{
	return nd->conts[c].pod >= 0 && (c == 0 || nd->conts[c - 1].pod != nd->conts[c].pod);
}

/* Container sizes are skewed: container k gets weight 1/(k+1) (a few hold most processes),
 * and every one holds at least its first process; sandboxes hold only that one. */
static int pick_container(struct node *nd)
{
	static double cdf[N_CONTAINERS];

	if (cdf[N_CONTAINERS - 1] == 0) {
		double sum = 0;

		for (int k = 0; k < N_CONTAINERS; k++)
			cdf[k] = (sum += 1.0 / (k + 1));
		for (int k = 0; k < N_CONTAINERS; k++)
			cdf[k] /= sum;
	}
	for (;;) {
		double x = (double)(rnd(nd) % 1000000) / 1e6;
		int k = 0;

		while (k < N_CONTAINERS - 1 && x >= cdf[k])
			k++;
		if (!is_sandbox(nd, k))
			return k;
	}
}

static int write_proc(const struct node *nd, const struct proc *p)
{
	char rel[48], text[512];
	const char *cgroup = p->kind == K_KERNEL      ? "0::/\n"
			     : p->kind == K_CONTAINER ? nd->conts[p->container].cgroup
						      : system_cgroups[p->system];
	uint32_t ppid = p->kind == K_KERNEL ? 2 : p->pid == 1 ? 0 : 1;
	int r;

	snprintf(rel, sizeof(rel), "%u/stat", p->pid);
	snprintf(text, sizeof(text),
		 "%u (%s) S %u %u %u 0 -1 4194560 %u 0 0 0 %" PRIu64 " %" PRIu64 " 0 0 20 0 %u 0 "
		 "%" PRIu64 " 23891968 1466 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 %u "
		 "0 0 0 0 0 0 0 0 0 0 0\n",
		 p->pid, p->comm, ppid, p->pid, p->pid, 1000 + p->pid % 977,
		 p->cpu_ns / 20000000, p->cpu_ns / 20000000, p->kind == K_KERNEL ? 1 : 4,
		 p->start_time, p->pid % 2);
	r = vw_fixture_write(nd->root, rel, text, 0);
	snprintf(rel, sizeof(rel), "%u/cgroup", p->pid);
	if (r == 0)
		r = vw_fixture_write(nd->root, rel, cgroup, 0);
	snprintf(rel, sizeof(rel), "%u/comm", p->pid);
	snprintf(text, sizeof(text), "%s\n", p->comm);
	if (r == 0)
		r = vw_fixture_write(nd->root, rel, text, 0);
	if (r == 0 && p->kind != K_KERNEL) {
		snprintf(rel, sizeof(rel), "%u/exe", p->pid);
		snprintf(text, sizeof(text), "/usr/bin/%s", p->comm);
		r = vw_fixture_symlink(nd->root, text, rel);
	}
	return r;
}

/* Slot i gets a new process (kind chosen for slot i's share: 60 % container). */
static int spawn(struct node *nd, size_t i)
{
	struct proc *p = &nd->procs[i];
	uint64_t share = i * 1000 / nd->n;

	*p = (struct proc){ .pid = nd->next_pid, .container = -1, .start_time = nd->ticks };
	nd->next_pid += 1 + (uint32_t)(rnd(nd) % 3);
	nd->ticks += 1 + rnd(nd) % 50;
	if (i < N_CONTAINERS && i * 1000 / nd->n < 600) {
		p->kind = K_CONTAINER, p->container = (int)i; /* every container has a process */
	} else if (share < 600) {
		p->kind = K_CONTAINER, p->container = pick_container(nd);
	} else if (share < 750) {
		p->kind = K_KERNEL;
		p->comm = kernel_comms[rnd(nd) % ARRAY_SIZE(kernel_comms)];
	} else {
		p->kind = K_SYSTEM;
		p->system = (unsigned)(rnd(nd) % ARRAY_SIZE(system_cgroups));
		p->comm = system_comms[p->system];
	}
	if (p->kind == K_CONTAINER)
		p->comm = is_sandbox(nd, p->container) ? "pause"
						       : app_comms[p->container % ARRAY_SIZE(app_comms)];
	return write_proc(nd, p);
}

static int remove_proc(const struct node *nd, uint32_t pid)
{
	static const char *const files[] = { "stat", "cgroup", "comm", "exe" };
	char path[4096];

	for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
		snprintf(path, sizeof(path), "%s/%u/%s", nd->root, pid, files[f]);
		(void)unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%u", nd->root, pid);
	return rmdir(path) < 0 ? -errno : 0;
}

static int node_init(struct node *nd, size_t n, uint64_t seed)
{
	*nd = (struct node){ .rng = seed | 1, .n = n, .next_pid = FIRST_PID, .ticks = 2000 };
	nd->root = vw_fixture_mkdtemp("bench-wl");
	nd->procs = calloc(n, sizeof(*nd->procs));
	if (!nd->root || !nd->procs)
		return -ENOMEM;
	make_containers(nd);
	for (size_t i = 0; i < n; i++) {
		int r = spawn(nd, i);

		if (r < 0)
			return r;
	}
	return 0;
}

static void node_free(struct node *nd)
{
	vw_fixture_rm(nd->root);
	free(nd->procs);
}

/* ---- A fake kubelet serving the pods ---- */

static char *pods_json(const struct node *nd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fputs("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[", f);
	for (int p = 0; p < N_PODS; p++) {
		const struct pod *pod = &nd->pods[p];
		bool first = true;

		fprintf(f, "%s{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns-%d\",\"uid\":\"%s\"},"
			   "\"spec\":{\"nodeName\":\"bench\",\"containers\":[",
			p ? "," : "", pod->name, p % 4, pod->uid);
		/* The first container of a pod is its sandbox: kubelet lists only the others. */
		for (int c = 0; c < N_CONTAINERS; c++) {
			if (nd->conts[c].pod != p || is_sandbox(nd, c))
				continue;
			fprintf(f, "%s{\"name\":\"c%d\",\"resources\":{\"requests\":{\"cpu\":\"%um\"}}}",
				first ? "" : ",", c, pod->request_m);
			first = false;
		}
		fputs("]},\"status\":{\"phase\":\"Running\",\"containerStatuses\":[", f);
		first = true;
		for (int c = 0; c < N_CONTAINERS; c++) {
			if (nd->conts[c].pod != p || is_sandbox(nd, c))
				continue;
			fprintf(f, "%s{\"name\":\"c%d\",\"containerID\":\"containerd://%s\"}",
				first ? "" : ",", c, nd->conts[c].id);
			first = false;
		}
		fputs("]}}", f);
	}
	fputs("]}", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct kubelet {
	char *json;
	struct MHD_Daemon *mhd;
	struct vw_podmeta *pm;
};

static int kubelet_start(struct kubelet *k, const struct node *nd)
{
	struct vw_podmeta_opts po = { .mode = VW_PODMETA_KUBELET, .allow_http = true,
				      .node_name = "bench", .poll_ns = 3600 * VW_NSEC_PER_SEC };
	unsigned port;
	char url[64];

	k->json = pods_json(nd);
	if (!k->json)
		return -ENOMEM;
	k->mhd = vw_fixture_json_server(k->json, &port);
	if (!k->mhd)
		return -EADDRNOTAVAIL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	po.url = url;
	k->pm = vw_podmeta_start(&po);
	if (!k->pm)
		return -errno;
	for (int i = 0; i < 500 && !vw_podmeta_synced(k->pm); i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	return vw_podmeta_synced(k->pm) ? 0 : -ETIMEDOUT;
}

static void kubelet_stop(struct kubelet *k)
{
	vw_podmeta_stop(k->pm);
	if (k->mhd)
		MHD_stop_daemon(k->mhd);
	free(k->json);
}

/* ---- One interval ---- */

/* CPU time a process used this interval: most sleep through it, a few are busy. */
static uint64_t cpu_delta(struct node *nd, const struct proc *p, uint64_t dt_ns)
{
	uint64_t x = rnd(nd) % 1000;

	if (x < (p->kind == K_KERNEL ? 850u : 700u))
		return 0;
	if (x < 970) /* woke up briefly: up to 20 ms */
		return rnd(nd) % (20 * VW_NSEC_PER_MSEC);
	return rnd(nd) % (dt_ns / 4); /* busy: up to a quarter of a CPU */
}

static int cmp_pid(const void *a, const void *b)
{
	const struct vw_proc_cpu *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

/* Advance the node by an interval and fill the snapshot, as the accountant hands it over:
 * sorted by PID, processes replaced by churn reported once more as exited. */
static int step(struct node *nd, unsigned churn_permille, uint64_t dt_ns,
		struct vw_proc_cpu *snap, size_t *n_snap)
{
	size_t n = 0;

	for (size_t i = 0; i < nd->n; i++) {
		struct proc *p = &nd->procs[i];

		p->cpu_ns += cpu_delta(nd, p, dt_ns);
		if (churn_permille && i >= N_CONTAINERS && p->pid != 1 &&
		    rnd(nd) % 1000 < churn_permille) {
			int r;

			snap[n++] = (struct vw_proc_cpu){ .tgid = p->pid, .cpu_ns = p->cpu_ns,
							  .start_time = p->start_time,
							  .exited = true };
			snprintf(snap[n - 1].comm, VW_COMM_LEN, "%s", p->comm);
			r = remove_proc(nd, p->pid);
			if (r == 0)
				r = spawn(nd, i);
			if (r < 0)
				return r;
		}
		snap[n] = (struct vw_proc_cpu){ .tgid = p->pid, .cpu_ns = p->cpu_ns,
						.start_time = p->start_time };
		snprintf(snap[n].comm, VW_COMM_LEN, "%s", p->comm);
		n++;
	}
	qsort(snap, n, sizeof(*snap), cmp_pid);
	*n_snap = n;
	return 0;
}

/* This interval's node energy: four zones, idle about 40 % of package. */
static void energy(struct node *nd, uint64_t dt_s, struct vw_zone_energy ze[VW_ZONE__COUNT])
{
	static const struct {
		enum vw_zone z;
		unsigned idle_w, max_active_w;
	} zones[] = {
		{ VW_ZONE_PACKAGE, 60, 140 },
		{ VW_ZONE_CORE, 30, 110 },
		{ VW_ZONE_UNCORE, 8, 12 },
		{ VW_ZONE_DRAM, 10, 25 },
	};

	memset(ze, 0, sizeof(*ze) * VW_ZONE__COUNT);
	for (size_t i = 0; i < ARRAY_SIZE(zones); i++)
		ze[zones[i].z] = (struct vw_zone_energy){
			.present = true,
			.idle_uj = zones[i].idle_w * dt_s * VW_USEC_PER_SEC,
			.active_uj = rnd(nd) % (zones[i].max_active_w * dt_s * VW_USEC_PER_SEC),
		};
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Render both formats, as the daemon does per publish; returns the text's series count. */
static int render(const struct vw_workloads *w, size_t *ret_series, size_t *ret_bytes)
{
	static const enum vw_prom_format fmts[] = { VW_PROM_TEXT_0_0_4, VW_PROM_OPENMETRICS_1_0_0 };

	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		struct vw_prom_writer *pw = vw_prom_writer_new(fmts[f], 64u << 20);
		_cleanup_free_ char *out = NULL;
		size_t len = 0;
		int r = pw ? 0 : -errno;

		if (r == 0)
			r = vw_workloads_render(w, pw, "bench", "bpf", NULL);
		if (r == 0)
			r = vw_prom_finish(pw, &out, &len);
		vw_prom_writer_free(pw);
		if (r < 0)
			return r;
		if (getenv("BENCH_WORKLOADS_DUMP")) { /* every render appended, to compare trees */
			FILE *d = fopen(getenv("BENCH_WORKLOADS_DUMP"), "a");

			if (d) {
				fwrite(out, 1, len, d);
				fclose(d);
			}
		}
		if (f == 0) {
			size_t series = 0;

			for (size_t i = 0; i < len; i++)
				series += (i == 0 || out[i - 1] == '\n') && out[i] != '#';
			*ret_series = series;
			*ret_bytes = len;
		}
	}
	return 0;
}

struct result {
	uint64_t node_uj[VW_ZONE__COUNT][2]; /* energy handed to the registry, per mode */
	double discovery_ms;
	double update[2], render[2], total[2]; /* median, p95 */
	size_t series, text_bytes, registry_procs;
	long rss_before_kib, heap_kib;
};

static int run_intervals(struct node *nd, struct vw_workloads *w, const struct opts *o,
			 struct result *res)
{
	size_t cap = nd->n * 2 + 16, n_snap = 0, m = o->intervals;
	_cleanup_free_ struct vw_proc_cpu *snap = calloc(cap, sizeof(*snap));
	_cleanup_free_ double *t_up = calloc(m, sizeof(double));
	_cleanup_free_ double *t_re = calloc(m, sizeof(double));
	_cleanup_free_ double *t_all = calloc(m, sizeof(double));
	uint64_t dt_ns = o->interval_s * VW_NSEC_PER_SEC;
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	int r;

	if (!snap || !t_up || !t_re || !t_all)
		return -ENOMEM;
	/* The first interval: every process is new (stat, exe, cgroup read), no energy moves. */
	r = step(nd, 0, dt_ns, snap, &n_snap);
	if (r < 0)
		return r;
	double t0 = cpu_ms();
	r = vw_workloads_update(w, &(struct vw_cpu_snapshot){ .procs = snap, .n_procs = n_snap },
				ze, 0);
	res->discovery_ms = cpu_ms() - t0;
	for (uint64_t gen = 1; r == 0 && gen <= m; gen++) {
		double t1, t2, t3;

		r = step(nd, o->churn_permille, dt_ns, snap, &n_snap);
		energy(nd, o->interval_s, ze);
		if (r < 0)
			break;
		for (int z = 0; z < VW_ZONE__COUNT; z++) {
			res->node_uj[z][0] += ze[z].active_uj;
			res->node_uj[z][1] += ze[z].idle_uj;
		}
		t1 = cpu_ms();
		r = vw_workloads_update(w, &(struct vw_cpu_snapshot){ .procs = snap, .n_procs = n_snap },
					ze, dt_ns);
		t2 = cpu_ms();
		if (r == 0)
			r = render(w, &res->series, &res->text_bytes);
		/* A scraper read the previous generation. */
		vw_workloads_published(w, gen, gen - 1);
		t3 = cpu_ms();
		t_up[gen - 1] = t2 - t1;
		t_re[gen - 1] = t3 - t2;
		t_all[gen - 1] = t3 - t1;
	}
	if (r < 0)
		return r;
	double *const t[] = { t_up, t_re, t_all };
	double *const out[] = { res->update, res->render, res->total };

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		vw_bench_sort(t[i], m);
		out[i][0] = vw_bench_percentile(t[i], m, 50);
		out[i][1] = vw_bench_percentile(t[i], m, 95);
	}
	res->registry_procs = vw_workloads_n_processes(w);
	return 0;
}

static long status_kib(const char *key)
{
	char buf[8192], pat[32];
	const char *l;
	int fd = vw_root_open("/proc");

	if (fd < 0)
		return -1;
	if (vw_read_file_at(fd, "self/status", buf, sizeof(buf), NULL) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	snprintf(pat, sizeof(pat), "\n%s:", key);
	l = strstr(buf, pat);
	return l ? strtol(l + strlen(pat), NULL, 10) : -1;
}

/* Bytes malloc has handed out: arena chunks in use plus mmapped blocks (large arrays). */
static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* The run means something only if the energy was conserved and pods took their share. */
static int check(const struct vw_workloads *w, const struct result *res, bool pods)
{
	struct vw_workloads_totals t;
	uint64_t pod_uj = 0;

	vw_workloads_totals(w, &t);
	for (int z = 0; z < VW_ZONE__COUNT; z++)
		for (int m = 0; m < 2; m++) {
			if (t.containers[z][m] + t.uncontained[z][m] + t.unattributed[z][m] !=
			    res->node_uj[z][m]) {
				fprintf(stderr, "bench_workloads: zone %d mode %d not conserved\n", z, m);
				return -EPROTO;
			}
			pod_uj += t.pods[z][m];
		}
	if (pods && pod_uj == 0) {
		fprintf(stderr, "bench_workloads: no energy reached a pod (fake kubelet?)\n");
		return -EPROTO;
	}
	return 0;
}

/* One configuration, in a child process so that its memory figures are its own. */
static int run_one(const struct opts *o, size_t n, unsigned top_n)
{
	struct vw_workloads_opts wo = { .host_cpus = o->cpus, .processes = true,
					.process_top_n = top_n, .containers = true, .pods = true,
					.max_terminated = 500 };
	struct kubelet k = { 0 };
	struct result res = { 0 };
	struct vw_workloads *w = NULL;
	struct node nd;
	size_t heap0;
	int procfd = -1, r;

	r = node_init(&nd, n, o->seed);
	if (r == 0 && o->pods)
		r = kubelet_start(&k, &nd);
	if (r == 0) {
		procfd = vw_root_open(nd.root);
		r = procfd < 0 ? procfd : 0;
	}
	res.rss_before_kib = status_kib("VmRSS");
	heap0 = heap_bytes();
	if (r == 0) {
		wo.procfs_fd = procfd;
		wo.podmeta = k.pm;
		w = vw_workloads_new(&wo);
		r = w ? 0 : -ENOMEM;
	}
	if (r == 0)
		r = run_intervals(&nd, w, o, &res);
	if (r == 0)
		r = check(w, &res, o->pods);
	res.heap_kib = (long)(heap_bytes() - heap0) / 1024;
	if (r == 0) {
		char tn[12] = "all";

		if (top_n)
			snprintf(tn, sizeof(tn), "%u", top_n);
		printf("%6zu %5s %9.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7zu %6zu %8ld %8ld %8ld %8ld\n",
		       n, tn, res.discovery_ms, res.update[0],
		       res.update[1], res.render[0], res.render[1], res.total[0], res.total[1],
		       res.series, res.registry_procs, res.rss_before_kib, status_kib("VmRSS"),
		       status_kib("VmHWM"), res.heap_kib);
	}
	vw_workloads_free(w);
	if (procfd >= 0)
		close(procfd);
	kubelet_stop(&k);
	node_free(&nd);
	return r;
}

static int parse_list(const char *s, unsigned long *v, size_t *n, unsigned long max)
{
	char *end;

	*n = 0;
	do {
		if (*n == MAX_LIST)
			return -EINVAL;
		errno = 0;
		v[*n] = strtoul(s, &end, 10);
		if (errno || end == s || v[*n] > max)
			return -EINVAL;
		(*n)++;
		s = end + 1;
	} while (*end == ',');
	return *end ? -EINVAL : 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "procs", required_argument, NULL, 'p' },     { "top-n", required_argument, NULL, 't' },
		{ "intervals", required_argument, NULL, 'i' }, { "interval-s", required_argument, NULL, 's' },
		{ "churn", required_argument, NULL, 'c' },     { "cpus", required_argument, NULL, 'C' },
		{ "no-pods", no_argument, NULL, 'P' },         { "seed", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v[MAX_LIST];
	size_t n;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == '?')
			return -EINVAL;
		if (c == 'P') {
			o->pods = false;
			continue;
		}
		if (c == 'p' || c == 't') {
			if (parse_list(optarg, c == 'p' ? o->procs : o->top_n,
				       c == 'p' ? &o->n_procs : &o->n_top_n, 1000000) < 0)
				return -EINVAL;
			continue;
		}
		if (parse_list(optarg, v, &n, c == 'S' ? ULONG_MAX : 1000000) < 0 || n != 1)
			return -EINVAL;
		if (c == 'i' && v[0] > 0)
			o->intervals = (unsigned)v[0];
		else if (c == 's' && v[0] > 0)
			o->interval_s = (unsigned)v[0];
		else if (c == 'c' && v[0] <= 1000)
			o->churn_permille = (unsigned)v[0];
		else if (c == 'C' && v[0] > 0)
			o->cpus = (unsigned)v[0];
		else if (c == 'S')
			o->seed = v[0];
		else
			return -EINVAL;
	}
	for (size_t i = 0; i < o->n_procs; i++)
		if (o->procs[i] < 2 * N_CONTAINERS)
			return -EINVAL;
	return optind == argc ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct opts o = { .procs = { 1000, 10000 }, .n_procs = 2, .top_n = { 50, 0 }, .n_top_n = 2,
			  .intervals = 30, .interval_s = 5, .cpus = 32, .pods = true,
			  .seed = 0x9e3779b97f4a7c15ULL };
	int failed = 0;

	if (parse_opts(argc, argv, &o) < 0) {
		fprintf(stderr,
			"usage: %s [--procs N[,N...]] [--top-n N[,N...]] [--intervals M] "
			"[--interval-s S] [--churn PERMILLE] [--cpus N] [--no-pods] [--seed S]\n"
			"  N >= %d; top-n 0 = no limit\n",
			argv[0], 2 * N_CONTAINERS);
		return 2;
	}
	vw_log_set_level(VW_LOG_ERROR); /* podmeta warns of plain HTTP to the fake kubelet */
	if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
		setenv("TMPDIR", "/dev/shm", 0);
	printf("# fixture under %s\n", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	printf("# %u intervals of %u s after the discovery one, %d containers (%d pods%s), "
	       "churn %u/1000 per interval, %u CPUs; times are CPU ms per interval "
	       "(CLOCK_PROCESS_CPUTIME_ID), render = text + OpenMetrics\n",
	       o.intervals, o.interval_s, N_CONTAINERS, N_PODS, o.pods ? " from a fake kubelet" : ", no pod metadata",
	       o.churn_permille, o.cpus);
	printf("%6s %5s %9s %7s %7s %7s %7s %7s %7s %7s %6s %8s %8s %8s %8s\n", "procs", "top_n",
	       "discov_ms", "upd_med", "upd_p95", "ren_med", "ren_p95", "tot_med", "tot_p95",
	       "series", "in_reg", "rss0_kib", "rss_kib", "hwm_kib", "heap_kib");
	fflush(stdout);
	for (size_t i = 0; i < o.n_procs; i++)
		for (size_t j = 0; j < o.n_top_n; j++) {
			pid_t pid = fork();
			int st;

			if (pid < 0) {
				perror("fork");
				return 1;
			}
			if (pid == 0) {
				int r = run_one(&o, o.procs[i], (unsigned)o.top_n[j]);

				if (r < 0)
					fprintf(stderr, "bench_workloads: %zu processes: %s\n",
						(size_t)o.procs[i], strerror(-r));
				fflush(stdout);
				exit(r < 0); /* stdout was flushed before fork; LSan checks the child */
			}
			if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				failed = 1;
		}
	return failed;
}
