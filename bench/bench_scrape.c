/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exposition benchmark: renders a Kepler-like exposition (per-process, per-container and
 * per-VM families, 10,000 series by default) N times and reports median and p95 render
 * time, then serves it with the real vw_http server on loopback and times sequential libcurl
 * scrapes, and prints VmRSS/VmHWM. Output is "key value" lines (bench/run.sh parses them).
 *
 *   bench_scrape [--series N] [--iterations N] [--scrapes N] [--proc-root DIR]
 *   bench_scrape --serve ADDR     publish once, serve on ADDR until SIGINT/SIGTERM
 *   bench_scrape --url URL        only time --scrapes libcurl scrapes of URL
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "http.h"
#include "log.h"
#include "macro.h"
#include "prom.h"

#define ZONES 3
#define MAX_OUTPUT (256u << 20)

static const char *const zones[ZONES] = {"package", "core", "dram"};
static const char *const comms[] = {
	"qemu-system-x86", "kworker/0:1H-kblockd", "java", "postgres", "nginx", "python3",
	"containerd-shim-runc-v2", "envoy", "node", "etcd", "kube-apiserver", "prometheus",
};
static const char *const namespaces[] = {"default", "kube-system", "monitoring", "payments",
					 "search"};

enum entity { ENT_PROCESS, ENT_CONTAINER, ENT_VM };

struct bench_family {
	struct vw_metric_family f;
	enum entity ent;
	bool zoned; /* one series per RAPL zone */
};

static const char *const proc_labels[] = {"pid", "comm", "container_id", "zone", NULL};
static const char *const proc_cpu_labels[] = {"pid", "comm", "container_id", NULL};
static const char *const ctr_labels[] = {"container_id", "pod", "namespace", "zone", NULL};
static const char *const vm_labels[] = {"uuid", "name", "zone", NULL};

static const struct bench_family families[] = {
	{{"virtwatt_process_energy_joules_total", VW_METRIC_COUNTER,
	  "Energy attributed to a process, by RAPL zone.", "joules", proc_labels}, ENT_PROCESS, true},
	{{"virtwatt_process_power_watts", VW_METRIC_GAUGE,
	  "Power attributed to a process over the last interval, by RAPL zone.", "watts",
	  proc_labels}, ENT_PROCESS, true},
	{{"virtwatt_process_cpu_seconds_total", VW_METRIC_COUNTER, "CPU time of a process.",
	  "seconds", proc_cpu_labels}, ENT_PROCESS, false},
	{{"virtwatt_container_energy_joules_total", VW_METRIC_COUNTER,
	  "Energy attributed to a container, by RAPL zone.", "joules", ctr_labels}, ENT_CONTAINER, true},
	{{"virtwatt_container_power_watts", VW_METRIC_GAUGE,
	  "Power attributed to a container, by RAPL zone.", "watts", ctr_labels}, ENT_CONTAINER, true},
	{{"virtwatt_vm_energy_joules_total", VW_METRIC_COUNTER,
	  "Energy attributed to a virtual machine, by RAPL zone.", "joules", vm_labels}, ENT_VM, true},
	{{"virtwatt_vm_power_watts", VW_METRIC_GAUGE,
	  "Power attributed to a virtual machine, by RAPL zone.", "watts", vm_labels}, ENT_VM, true},
};

/* Label values of the synthetic host, made once. */
struct workload {
	size_t nproc, nctr, nvm;
	char (*pid)[12];
	char (*ctr_id)[65];
	char (*pod)[48];
	char (*uuid)[37];
	char (*vm_name)[32];
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void hex(char *out, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		out[i] = "0123456789abcdef"[mix(seed + i / 16) >> (4 * (i % 16)) & 0xf];
	out[n] = '\0';
}

static void workload_free(struct workload *wl)
{
	free(wl->pid);
	free(wl->ctr_id);
	free(wl->pod);
	free(wl->uuid);
	free(wl->vm_name);
}

/* series = 6 per process x 1/10 + ... : 0.6 + 0.1 + 0.24 + 0.06 of the requested count. */
static int workload_init(struct workload *wl, size_t series)
{
	*wl = (struct workload){.nproc = series / 10, .nctr = series / 25, .nvm = series / 100};
	wl->pid = calloc(wl->nproc, sizeof(*wl->pid));
	wl->ctr_id = calloc(wl->nctr, sizeof(*wl->ctr_id));
	wl->pod = calloc(wl->nctr, sizeof(*wl->pod));
	wl->uuid = calloc(wl->nvm, sizeof(*wl->uuid));
	wl->vm_name = calloc(wl->nvm, sizeof(*wl->vm_name));
	if (!wl->pid || !wl->ctr_id || !wl->pod || !wl->uuid || !wl->vm_name)
		return -ENOMEM;
	for (size_t i = 0; i < wl->nproc; i++)
		snprintf(wl->pid[i], sizeof(wl->pid[i]), "%zu", 1000 + i * 7);
	for (size_t i = 0; i < wl->nctr; i++) {
		hex(wl->ctr_id[i], 64, i * 131);
		snprintf(wl->pod[i], sizeof(wl->pod[i]), "web-%.10s-%.5s", wl->ctr_id[i] + 20,
			 wl->ctr_id[i] + 40);
	}
	for (size_t i = 0; i < wl->nvm; i++) {
		char h[33];

		hex(h, 32, i * 977 + 5);
		snprintf(wl->uuid[i], sizeof(wl->uuid[i]), "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8,
			 h + 12, h + 16, h + 20);
		snprintf(wl->vm_name[i], sizeof(wl->vm_name[i]), "tenant-%zu-vm", i);
	}
	return 0;
}

static size_t entity_count(const struct workload *wl, enum entity ent)
{
	return ent == ENT_PROCESS ? wl->nproc : ent == ENT_CONTAINER ? wl->nctr : wl->nvm;
}

/* Label values of entity i (zone z where the family has a zone label). */
static void entity_labels(const struct workload *wl, enum entity ent, size_t i, size_t z,
			  const char *v[5])
{
	if (ent == ENT_PROCESS) {
		v[0] = wl->pid[i], v[1] = comms[i % ARRAY_SIZE(comms)];
		v[2] = wl->nctr ? wl->ctr_id[i % wl->nctr] : "host", v[3] = zones[z];
	} else if (ent == ENT_CONTAINER) {
		v[0] = wl->ctr_id[i], v[1] = wl->pod[i];
		v[2] = namespaces[i % ARRAY_SIZE(namespaces)], v[3] = zones[z];
	} else {
		v[0] = wl->uuid[i], v[1] = wl->vm_name[i], v[2] = zones[z], v[3] = NULL;
	}
}

static int write_family(struct vw_prom_writer *w, const struct workload *wl,
			const struct bench_family *bf, uint64_t seed)
{
	size_t nz = bf->zoned ? ZONES : 1;
	int r = vw_prom_family(w, &bf->f);

	for (size_t i = 0; r >= 0 && i < entity_count(wl, bf->ent); i++) {
		for (size_t z = 0; r >= 0 && z < nz; z++) {
			const char *v[5] = {0};
			uint64_t x = mix(seed ^ (i * ZONES + z));

			entity_labels(wl, bf->ent, i, z, v);
			if (!bf->zoned)
				v[3] = NULL;
			if (bf->f.type == VW_METRIC_COUNTER)
				r = vw_prom_counter_micro(w, v, x % 1000000000000ULL);
			else
				r = vw_prom_gauge(w, v, (double)(x % 100000) / 1000.0);
		}
	}
	if (r >= 0)
		r = vw_prom_family_end(w);
	return r;
}

static int render(const struct workload *wl, enum vw_prom_format fmt, uint64_t seed, char **ret,
		  size_t *ret_len)
{
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, MAX_OUTPUT);
	int r = w ? 0 : -errno;

	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(families); i++)
		r = write_family(w, wl, &families[i], seed + i);
	if (r >= 0)
		r = vw_prom_finish(w, ret, ret_len);
	vw_prom_writer_free(w);
	return r;
}

/* ---- Timing ---- */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void report(const char *what, double *ms, size_t n)
{
	vw_bench_sort(ms, n);
	printf("%s_median_ms %.3f\n%s_p95_ms %.3f\n", what, vw_bench_percentile(ms, n, 50), what,
	       vw_bench_percentile(ms, n, 95));
}

static int bench_render(const struct workload *wl, enum vw_prom_format fmt, unsigned iterations,
			const char *what)
{
	_cleanup_free_ double *ms = calloc(iterations, sizeof(*ms));
	size_t len = 0;

	if (!ms)
		return -ENOMEM;
	for (unsigned i = 0; i < iterations; i++) {
		_cleanup_free_ char *out = NULL;
		double t0 = now_ms();
		int r = render(wl, fmt, i, &out, &len);

		if (r < 0)
			return r;
		ms[i] = now_ms() - t0;
	}
	printf("%s_bytes %zu\n", what, len);
	report(what, ms, iterations);
	return 0;
}

/* ---- Scraping ---- */

struct sink {
	size_t bytes;
	size_t samples; /* lines not starting with '#' */
	bool line_start;
};

static size_t sink_write(char *p, size_t size, size_t n, void *userdata)
{
	struct sink *s = userdata;
	const char *end = p + size * n;

	for (const char *q = p; q < end;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));

		if (s->line_start && *q != '#')
			s->samples++;
		s->line_start = nl != NULL;
		q = nl ? nl + 1 : end;
	}
	s->bytes += size * n;
	return size * n;
}

/* Time n sequential GETs of url on one keep-alive handle. */
static int bench_scrapes(const char *url, unsigned n, const char *what)
{
	_cleanup_free_ double *ms = calloc(n, sizeof(*ms));
	CURL *c = curl_easy_init();
	struct sink s = {0};
	int r = (ms && c) ? 0 : -ENOMEM;

	if (c) {
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
		curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	}
	for (unsigned i = 0; r >= 0 && i < n; i++) {
		double t0 = now_ms();
		CURLcode cc;

		s = (struct sink){.line_start = true};
		cc = curl_easy_perform(c);
		ms[i] = now_ms() - t0;
		if (cc != CURLE_OK) {
			vw_error("bench: scrape %s: %s", url, curl_easy_strerror(cc));
			r = -EIO;
		}
	}
	curl_easy_cleanup(c);
	if (r < 0)
		return r;
	printf("%s_bytes %zu\n%s_samples %zu\n", what, s.bytes, what, s.samples);
	report(what, ms, n);
	return 0;
}

/* ---- Modes ---- */

struct opts {
	size_t series;
	unsigned iterations;
	unsigned scrapes;
	const char *proc_root;
	const char *serve;
	const char *url;
};

/* Render both formats once and publish them. */
static int publish_once(const struct workload *wl, struct vw_exposition *x)
{
	char *text = NULL, *om = NULL;
	size_t text_len, om_len;
	int r = render(wl, VW_PROM_TEXT_0_0_4, 0, &text, &text_len);

	if (r >= 0)
		r = render(wl, VW_PROM_OPENMETRICS_1_0_0, 0, &om, &om_len);
	if (r < 0) {
		free(text);
		return r;
	}
	vw_exposition_publish(x, text, text_len, om, om_len);
	return 0;
}

static struct vw_http *serve_start(const struct workload *wl, struct vw_exposition *x,
				   const char *addr)
{
	struct vw_http_opts ho = {.listen_address = addr, .program = "bench_scrape",
				  .version = VW_VERSION};
	int r = publish_once(wl, x);

	if (r < 0) {
		errno = -r;
		return NULL;
	}
	return vw_http_start(&ho, x);
}

static int run_benchmarks(const struct workload *wl, const struct opts *o)
{
	struct vw_exposition *x = vw_exposition_new();
	struct vw_http *h = NULL;
	char url[64];
	int r = x ? 0 : -ENOMEM;

	printf("series %zu\n", o->series);
	if (r >= 0)
		r = bench_render(wl, VW_PROM_TEXT_0_0_4, o->iterations, "render_text");
	if (r >= 0)
		r = bench_render(wl, VW_PROM_OPENMETRICS_1_0_0, o->iterations, "render_om");
	if (r >= 0) {
		h = serve_start(wl, x, "127.0.0.1:0");
		r = h ? 0 : -errno;
	}
	if (r >= 0) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", (unsigned)vw_http_port(h));
		r = bench_scrapes(url, o->scrapes, "scrape");
	}
	if (r >= 0)
		r = vw_bench_print_memory(o->proc_root, "");
	vw_http_stop(h);
	vw_exposition_free(x);
	return r;
}

/* Serve until SIGINT or SIGTERM; signals are blocked first so MHD's thread inherits that. */
static int run_serve(const struct workload *wl, const char *addr)
{
	struct vw_exposition *x = vw_exposition_new();
	struct vw_http *h;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	h = x ? serve_start(wl, x, addr) : NULL;
	if (!h) {
		vw_exposition_free(x);
		return -errno;
	}
	printf("port %u\n", (unsigned)vw_http_port(h));
	fflush(stdout);
	sigwait(&set, &sig);
	vw_http_stop(h);
	vw_exposition_free(x);
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;

	errno = 0;
	*ret = strtoul(s, &end, 10);
	if (errno || end == s || *end || *ret == 0 || *ret > max)
		return -EINVAL;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"series", required_argument, NULL, 's'},   {"iterations", required_argument, NULL, 'i'},
		{"scrapes", required_argument, NULL, 'n'},  {"proc-root", required_argument, NULL, 'p'},
		{"serve", required_argument, NULL, 'S'},    {"url", required_argument, NULL, 'u'},
		{NULL, 0, NULL, 0},
	};
	unsigned long v;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'p' || c == 'S' || c == 'u') {
			*(c == 'p' ? &o->proc_root : c == 'S' ? &o->serve : &o->url) = optarg;
			continue;
		}
		if (c == '?' || parse_uint(optarg, 10000000, &v) < 0)
			return -EINVAL;
		if (c == 's')
			o->series = v;
		else if (c == 'i')
			o->iterations = (unsigned)v;
		else
			o->scrapes = (unsigned)v;
	}
	return optind == argc ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct opts o = {.series = 10000, .iterations = 100, .scrapes = 200, .proc_root = "/proc"};
	struct workload wl;
	int r;

	if (parse_opts(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: %s [--series N] [--iterations N] [--scrapes N] "
				"[--proc-root DIR] [--serve ADDR | --url URL]\n",
			argv[0]);
		return 2;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	vw_log_set_level(VW_LOG_WARN);
	r = workload_init(&wl, o.series);
	if (r >= 0) {
		if (o.url)
			r = bench_scrapes(o.url, o.scrapes, "scrape");
		else if (o.serve)
			r = run_serve(&wl, o.serve);
		else
			r = run_benchmarks(&wl, &o);
	}
	workload_free(&wl);
	curl_global_cleanup();
	if (r < 0) {
		fprintf(stderr, "bench_scrape: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}
