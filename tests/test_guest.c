/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-guest fed through a FIFO: the energy split over fake workloads (a procfs fixture
 * with the procfs accountant) equals the frames' VM energy exactly, per zone, active and idle;
 * every switch (fresh, stale, back, a host epoch change, a daemon restart with the state file)
 * keeps every exported counter monotonic; a second publisher's frames and a spike change nothing
 * the VM and its processes export, and the one left takes over when the other exits; a model
 * server that fails falls back to the local model; and the real binary serves /metrics with
 * source passthrough, and rejects a second publisher and a spike, counting why; and in its
 * default configuration it maps none of the libraries loaded on first use.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "fixture.h"
#include "host_fixture.h"
#include "http.h"
#include "log.h"
#include "macro.h"
#include "options.h"
#include "model_rx.h"
#include "proto.h"
#include "exposition_fixture.h"

#define UUID "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"
#define CID "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static uint64_t fake_now;

struct ctx {
	struct host_fixture f;
	char fifo[600], state[600];
	char *metrics_levels[3];
	char *listen[2];
	struct vw_guest_config cfg;
	struct vw_guest *g;
	int w; /* the FIFO's writing end */
	uint64_t cpu_ns[3];
	/* the host's cumulative counters, per zone (package, dram) and mode */
	uint64_t idle[2], active[2];
	uint64_t epoch, seq;
	char *last_metrics;
};

static const uint32_t pids[3] = { 100, 200, 300 };

static void write_proc(struct ctx *c, size_t i)
{
	char rel[128], text[256];

	snprintf(rel, sizeof(rel), "%u/stat", pids[i]);
	snprintf(text, sizeof(text), "%u (p%u) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %u 0 0\n",
		 pids[i], pids[i], 1000 + pids[i]);
	assert_int_equal(vw_fixture_write(c->f.proc, rel, text, 0), 0);
	snprintf(rel, sizeof(rel), "%u/cgroup", pids[i]);
	assert_int_equal(vw_fixture_write(c->f.proc, rel,
					  i == 0 ? "0::/system.slice/docker-" CID ".scope\n"
						 : "0::/system.slice/ssh.service\n",
					  0),
			 0);
	snprintf(rel, sizeof(rel), "%u/task/%u/schedstat", pids[i], pids[i]);
	snprintf(text, sizeof(text), "%llu 0 0\n", (unsigned long long)c->cpu_ns[i]);
	assert_int_equal(vw_fixture_write(c->f.proc, rel, text, 0), 0);
}

static void run_procs(struct ctx *c)
{
	static const uint64_t ms[3] = { 1500, 700, 300 };

	for (size_t i = 0; i < 3; i++) {
		c->cpu_ns[i] += ms[i] * 1000000ULL;
		write_proc(c, i);
	}
	for (int s = 0; s < 5; s++)
		assert_int_equal(host_fixture_advance(&c->f, 0.5), 0);
}

static void send_frame_of(struct ctx *c, uint64_t epoch, uint64_t seq, const uint64_t idle[2],
			  const uint64_t active[2])
{
	struct vw_host_frame fr = { .version = 1, .epoch = epoch, .seq = seq, .interval_ms = 5000,
				    .n_zones = 2 };
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;

	snprintf(fr.vm_uuid, sizeof(fr.vm_uuid), UUID);
	snprintf(fr.source, sizeof(fr.source), "rapl");
	fr.zones[0] = (struct vw_proto_zone){ VW_ZONE_PACKAGE, idle[0], active[0], 10, 5 };
	fr.zones[1] = (struct vw_proto_zone){ VW_ZONE_DRAM, idle[1], active[1], 1, 0.5 };
	assert_int_equal(vw_proto_encode_host(&fr, buf, sizeof(buf), &len), 0);
	assert_int_equal(write(c->w, buf, len), (ssize_t)len);
}

static void send_frame(struct ctx *c)
{
	send_frame_of(c, c->epoch, ++c->seq, c->idle, c->active);
}

/* The host's counters grow by odd amounts so that any rounding would show. */
static void host_runs(struct ctx *c, uint64_t k)
{
	c->idle[0] += 50000003 + k;
	c->active[0] += 25000007 + 3 * k;
	c->idle[1] += 5000001 + k;
	c->active[1] += 2500003;
}

/* No counter sample ("name{labels}" -> value) of the current exposition is below the same
 * series in the previous one. */
static void check_monotonic(struct ctx *c)
{
	char *text = NULL;
	struct vw_expo_cursor cur;
	struct vw_expo_sample s;
	size_t len;

	assert_int_equal(vw_exposition_copy(vw_guest_exposition(c->g), 0, &text, &len), 0);
	vw_expo_begin(&cur, text);
	while (c->last_metrics && vw_expo_next(&cur, &s)) {
		char key[1024];
		double before;

		if (!s.counter)
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)s.series_len, s.series);
		before = vw_expo_value(c->last_metrics, key);
		if (s.value < before)
			fail_msg("counter went back: %s %.17g -> %.17g", key, before, s.value);
	}
	free(c->last_metrics);
	c->last_metrics = text;
}

static void tick(struct ctx *c)
{
	fake_now += 5 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_guest_tick(c->g, fake_now), 0);
	check_monotonic(c);
}

static void start_guest(struct ctx *c)
{
	assert_int_equal(vw_guest_new(&c->cfg, &c->g), 0);
	assert_int_equal(vw_guest_tick(c->g, fake_now), 0); /* baselines; opens the FIFO */
	check_monotonic(c);
}

static int setup(void **state)
{
	static const struct host_fixture_zone none[1];
	struct ctx *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	(void)none;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(host_fixture_init(&c->f, NULL, 0, 4), 0);
	for (size_t i = 0; i < 3; i++)
		write_proc(c, i);
	snprintf(c->fifo, sizeof(c->fifo), "%s/port", c->f.root);
	snprintf(c->state, sizeof(c->state), "%s/state/state.json", c->f.root);
	assert_int_equal(mkfifo(c->fifo, 0600), 0);
	c->w = open(c->fifo, O_RDWR | O_CLOEXEC);
	assert_true(c->w >= 0);
	c->listen[0] = "127.0.0.1:0";
	c->metrics_levels[0] = "process";
	c->metrics_levels[1] = "container";
	c->metrics_levels[2] = "pod";
	c->cfg = (struct vw_guest_config){
		.common = { .listen_address = { c->listen, 1 },
			    .sysfs = c->f.sys,
			    .procfs = c->f.proc,
			    .interval_ns = 5 * VW_NSEC_PER_SEC,
			    .node_name = "vm1",
			    .process_top_n = 0,
			    .max_terminated = 100,
			    .cpu_accounting = "procfs",
			    .kube_pod_source = "apiserver" },
		.metrics = { c->metrics_levels, 3 },
		.passthrough_path = c->fifo,
		.passthrough_stale_after = 3,
		.passthrough_enable = true,
		.state_file = c->state,
	};
	c->epoch = 1700000000123456ULL;
	fake_now = 1000 * VW_NSEC_PER_SEC;
	vw_clock_set_fake(&fake_now);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	vw_guest_free(c->g);
	vw_clock_set_fake(NULL);
	close(c->w);
	free(c->last_metrics);
	host_fixture_fini(&c->f);
	free(c);
	return 0;
}

static void sum_workloads(struct ctx *c, uint64_t out[VW_ZONE__COUNT][2])
{
	struct vw_workloads_totals t;

	vw_guest_workload_totals(c->g, &t);
	for (size_t z = 0; z < VW_ZONE__COUNT; z++)
		for (int m = 0; m < 2; m++)
			out[z][m] = t.containers[z][m] + t.uncontained[z][m] +
				    t.unattributed[z][m];
}

/* One passthrough interval: the workloads' shares add up to the frame deltas exactly. */
static void exact_interval(struct ctx *c, uint64_t k)
{
	uint64_t before[VW_ZONE__COUNT][2], after[VW_ZONE__COUNT][2];
	uint64_t node[VW_ZONE__COUNT][2], given[VW_ZONE__COUNT][2];
	uint64_t idle0[2] = { c->idle[0], c->idle[1] }, act0[2] = { c->active[0], c->active[1] };
	static const enum vw_zone zones[2] = { VW_ZONE_PACKAGE, VW_ZONE_DRAM };

	sum_workloads(c, before);
	host_runs(c, k);
	send_frame(c);
	run_procs(c);
	tick(c);
	assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_PASSTHROUGH);
	sum_workloads(c, after);
	vw_guest_last_interval(c->g, node, given);
	for (size_t i = 0; i < 2; i++) {
		enum vw_zone z = zones[i];

		assert_int_equal(node[z][0], c->active[i] - act0[i]);
		assert_int_equal(node[z][1], c->idle[i] - idle0[i]);
		assert_int_equal(given[z][1], node[z][1]); /* passthrough: idle is attributed */
		assert_int_equal(after[z][0] - before[z][0], c->active[i] - act0[i]);
		assert_int_equal(after[z][1] - before[z][1], c->idle[i] - idle0[i]);
	}
}

static void test_passthrough_exact_and_monotonic(void **state)
{
	struct ctx *c = *state;
	uint64_t node[VW_ZONE__COUNT][2], given[VW_ZONE__COUNT][2];
	_cleanup_free_ char *text = NULL;
	size_t len;

	start_guest(c);
	assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_MODEL);
	/* The first frame: fresh, but this interval is still the model's (hysteresis). */
	host_runs(c, 0);
	send_frame(c);
	run_procs(c);
	tick(c);
	assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_MODEL);
	vw_guest_last_interval(c->g, node, given);
	assert_true(node[VW_ZONE_PACKAGE][1] > 0); /* the model's idle: the node's only */
	assert_int_equal(given[VW_ZONE_PACKAGE][1], 0);
	for (uint64_t k = 1; k <= 3; k++)
		exact_interval(c, k);
	assert_int_equal(vw_exposition_copy(vw_guest_exposition(c->g), 0, &text, &len), 0);
	assert_non_null(strstr(text, "virtwatt_guest_power_source_info{source=\"passthrough\","
				     "host_source=\"rapl\",kind=\"measured\""));
	assert_non_null(strstr(text, "virtwatt_guest_passthrough_accepted_total{node_name=\"vm1\"} 4"));
	assert_non_null(strstr(text, "kepler_container_cpu_joules_total"));

	/* Stale: no frames for more than 3 publication intervals, then the model. */
	for (int i = 0; i < 3; i++) {
		run_procs(c);
		tick(c);
	}
	run_procs(c);
	tick(c);
	assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_MODEL);
	run_procs(c);
	tick(c);
	assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_MODEL);
	vw_guest_last_interval(c->g, node, given);
	assert_int_equal(given[VW_ZONE_PACKAGE][1], 0); /* estimator-only: no idle to workloads */

	/* Back: the returning frame's interval is the model's; the next ones exact again. */
	host_runs(c, 9);
	send_frame(c);
	run_procs(c);
	tick(c);
	assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_MODEL);
	exact_interval(c, 10);

	/* A host restart: the old host stops, and two intervals on a new epoch counts from zero;
	 * the guest adds the frame's values (sooner it would be held: it could be a second
	 * publisher, whose history must not count). */
	for (int i = 0; i < 2; i++) {
		run_procs(c);
		tick(c);
	}
	c->epoch++;
	c->seq = 0;
	memset(c->idle, 0, sizeof(c->idle));
	memset(c->active, 0, sizeof(c->active));
	exact_interval(c, 11);
	exact_interval(c, 12);

	/* A daemon restart: the state file carries every series on. */
	vw_guest_free(c->g);
	c->g = NULL;
	start_guest(c);
	/* A scraper asks for OpenMetrics: the next snapshot has it, with the same offsets. */
	vw_exposition_openmetrics_asked(vw_guest_exposition(c->g), fake_now);
	host_runs(c, 13);
	send_frame(c);
	run_procs(c);
	tick(c);
	exact_interval(c, 14);
	free(text);
	text = NULL;
	assert_int_equal(vw_exposition_copy(vw_guest_exposition(c->g), 1, &text, &len), 0);
	assert_non_null(strstr(text, "# EOF"));
	/* Its counters carry the offsets the text rendering learnt: every sample the same. */
	{
		_cleanup_free_ char *plain = NULL;
		size_t counters = 0;
		bool counter = false;

		assert_int_equal(vw_exposition_copy(vw_guest_exposition(c->g), 0, &plain, &len), 0);
		assert_null(strstr(plain, "# EOF"));
		/* 2 frames accepted since the restart, more before it: an offset applies */
		assert_true(vw_fixture_sample_sum(plain, "virtwatt_guest_passthrough_accepted_total",
						  NULL) > 2);
		for (char *save = NULL, *line = strtok_r(plain, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char needle[4096];

			if (strncmp(line, "# TYPE ", 7) == 0)
				counter = strstr(line, " counter") != NULL;
			if (!counter || line[0] == '#')
				continue;
			counters++;
			assert_true(strlen(line) + 3 <= sizeof(needle));
			snprintf(needle, sizeof(needle), "\n%s\n", line);
			if (!strstr(text, needle))
				fail_msg("not in the OpenMetrics rendering: %s", line);
		}
		assert_true(counters > 10);
	}
}

/* Process 100's series (its active and idle joules): the workload checked. */
#define P100_PACKAGE "pid=\"100\",comm=\"p100\""

struct exported {
	double node, process, rejected_conflict, rejected_spike; /* package zone */
};

#define REJECTED "virtwatt_guest_passthrough_rejected_total"

static void parse_exported(const char *text, struct exported *e)
{
	*e = (struct exported){
		.node = vw_fixture_sample_sum(text, "kepler_node_cpu_joules_total",
					      "zone=\"package\""),
		.process = vw_fixture_sample_sum(text, "kepler_process_cpu_joules_total",
						 P100_PACKAGE) +
			   vw_fixture_sample_sum(text, "virtwatt_process_cpu_idle_joules_total",
						 P100_PACKAGE),
		.rejected_conflict = vw_fixture_sample_sum(text, REJECTED, "reason=\"conflict\""),
		.rejected_spike = vw_fixture_sample_sum(text, REJECTED, "reason=\"spike\""),
	};
}

static void read_exported(struct ctx *c, struct exported *e)
{
	_cleanup_free_ char *text = NULL;
	size_t len;

	assert_int_equal(vw_exposition_copy(vw_guest_exposition(c->g), 0, &text, &len), 0);
	parse_exported(text, e);
}

/*
 * Two publishers for this VM (the frames of a second host epoch, with its own history, come
 * between ours) and a megajoule spike, through the FIFO into the guest daemon: what the VM and
 * its busiest process export is what the current publisher delivered, and the rejections say
 * why.
 * Then the current publisher exits and the other takes over, losing about one interval.
 */
static void test_passthrough_two_publishers_and_spike(void **state)
{
	struct ctx *c = *state;
	uint64_t b_idle[2] = { 9000000000ULL, 900000000ULL }, b_active[2] = { 4000000000ULL, 0 };
	uint64_t b_seq = 500, a0, delivered;
	struct exported e0, e1, e2;
	double ratio;

	start_guest(c);
	for (uint64_t k = 0; k < 4; k++) { /* the first frame's interval is the model's */
		host_runs(c, k);
		send_frame(c);
		run_procs(c);
		tick(c);
	}
	read_exported(c, &e0);
	exact_interval(c, 4);
	read_exported(c, &e1);
	ratio = (e1.process - e0.process) / (e1.node - e0.node); /* its share of the VM's energy */
	assert_true(ratio > 0.1 && ratio < 1);
	a0 = c->idle[0] + c->active[0];
	for (uint64_t k = 5; k < 13; k++) {
		uint64_t spike_active[2] = { c->active[0] + 1000000000000ULL, c->active[1] };

		host_runs(c, k);
		for (int m = 0; m < 2; m++) {
			b_idle[m] += 50000000;
			b_active[m] += 25000000;
		}
		if (k % 2)
			send_frame_of(c, c->epoch + 1000, ++b_seq, b_idle, b_active);
		if (k == 8)
			send_frame_of(c, c->epoch, ++c->seq, c->idle, spike_active);
		else
			send_frame(c);
		if (!(k % 2))
			send_frame_of(c, c->epoch + 1000, ++b_seq, b_idle, b_active);
		run_procs(c);
		tick(c);
		if (k != 8)
			assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_PASSTHROUGH);
	}
	read_exported(c, &e2);
	delivered = c->idle[0] + c->active[0] - a0;
	print_message("# guest: delivered %.3f J, VM %.3f J, process %.3f J (its share: %.3f J)\n",
		      (double)delivered / 1e6, e2.node - e1.node, e2.process - e1.process,
		      ratio * (double)delivered / 1e6);
	assert_double_near(e2.node - e1.node, (double)delivered / 1e6, (double)delivered / 1e7);
	assert_double_near(e2.node - e1.node, (double)delivered / 1e6, 1e-3); /* in fact exactly */
	assert_double_near(e2.process - e1.process, ratio * (double)delivered / 1e6,
			   ratio * (double)delivered / 1e7);
	assert_true(e2.rejected_conflict == 8 && e2.rejected_spike == 1);

	/* Our publisher exits; the other takes over once ours has been silent two intervals. */
	a0 = b_idle[0] + b_active[0];
	for (uint64_t k = 13; k < 19; k++) {
		for (int m = 0; m < 2; m++) {
			b_idle[m] += 50000000;
			b_active[m] += 25000000;
		}
		send_frame_of(c, c->epoch + 1000, ++b_seq, b_idle, b_active);
		run_procs(c);
		tick(c);
	}
	read_exported(c, &e1);
	delivered = b_idle[0] + b_active[0] - a0;
	print_message("# takeover: the other delivered %.3f J, node %.3f J\n",
		      (double)delivered / 1e6, e1.node - e2.node);
	assert_double_near(e1.node - e2.node, (double)delivered / 1e6, (double)delivered / 1e7);
	assert_true(e1.node - e2.node <= (double)delivered / 1e6 + 1e-3); /* never its history */
	assert_int_equal(vw_guest_source_used(c->g), VW_GUEST_PASSTHROUGH);
}

/* The host's model for this VM, package at a constant watts (its bias); tampered: one byte of
 * the body changed after the hash was taken. */
static void send_model(struct ctx *c, uint64_t mseq, const char *name, int watts, bool tampered)
{
	static struct vw_model_frame m;
	char buf[VW_PROTO_MAX_FRAME], *p;
	size_t len;

	m = (struct vw_model_frame){ .epoch = c->epoch, .mseq = mseq };
	snprintf(m.vm_uuid, sizeof(m.vm_uuid), UUID);
	snprintf(m.name, sizeof(m.name), "%s", name);
	m.body_len = (size_t)snprintf(
		m.body, sizeof(m.body),
		"{\"package\":{\"All_Weights\":{\"Bias_Weight\":%d,\"Categorical_Variables\":{},"
		"\"Numerical_Variables\":{\"bpf_cpu_time_ms\":{\"scale\":1,\"mean\":0,"
		"\"variance\":0,\"weight\":0.0}}}}}",
		watts);
	assert_int_equal(vw_proto_encode_model(&m, buf, sizeof(buf), &len), 0);
	if (tampered) {
		p = strstr(buf, "Bias_Weight");
		assert_non_null(p);
		p[0] = 'b';
	}
	assert_int_equal(write(c->w, buf, len), (ssize_t)len);
}

static char *exposition(struct ctx *c)
{
	char *text = NULL;
	size_t len;

	assert_int_equal(vw_exposition_copy(vw_guest_exposition(c->g), 0, &text, &len), 0);
	return text;
}

/* The exposition names both a and b. */
static void assert_exposes(struct ctx *c, const char *a, const char *b)
{
	_cleanup_free_ char *text = exposition(c);

	assert_non_null(strstr(text, a));
	assert_non_null(strstr(text, b));
}

/*
 * The host pushes its model for this VM: the guest shows it, refuses a tampered one (counted,
 * the good one kept), and when the host stops publishing estimates with the host's model (12 W
 * on package: 60 J per 5 s interval exactly), counters going on; restarted on its state file,
 * it has the model before any frame comes.
 */
static void test_host_model_push(void **state)
{
	struct ctx *c = *state;
	char *text;
	double before, after;

	start_guest(c);
	for (uint64_t k = 0; k < 3; k++) {
		run_procs(c);
		host_runs(c, k);
		send_frame(c);
		tick(c);
	}
	send_model(c, 1, "host-vm:lin", 12, false);
	send_frame(c);
	tick(c);
	assert_exposes(c, "virtwatt_guest_host_model_info{model=\"host-vm:lin\"",
		       "source=\"passthrough\"");
	fake_now += VW_MODEL_RX_MIN_CHANGE_NS;
	send_model(c, 2, "host-vm:evil", 999, true);
	send_frame(c);
	tick(c);
	text = exposition(c);
	assert_double_near(vw_fixture_sample_sum(text, "virtwatt_guest_host_model_refused_total",
						 "reason=\"integrity\""),
			   1, 0);
	assert_non_null(strstr(text, "virtwatt_guest_host_model_info{model=\"host-vm:lin\""));
	free(text);
	/* The host stops: stale after 3 intervals, then the host's model. */
	for (int i = 0; i < 5; i++) {
		run_procs(c);
		tick(c);
	}
	text = exposition(c);
	assert_non_null(strstr(text, "source=\"model\""));
	assert_non_null(strstr(text, "model=\"host:host-vm:lin\""));
	before = vw_fixture_sample_sum(text, "kepler_node_cpu_joules_total", "zone=\"package\"");
	free(text);
	run_procs(c);
	tick(c);
	text = exposition(c);
	after = vw_fixture_sample_sum(text, "kepler_node_cpu_joules_total", "zone=\"package\"");
	free(text);
	assert_double_near(after - before, 60, 1e-6);
	/* Restarted on its state: the host's model is there before any frame. */
	vw_guest_free(c->g);
	c->g = NULL;
	free(c->last_metrics);
	c->last_metrics = NULL;
	start_guest(c);
	run_procs(c);
	tick(c);
	assert_exposes(c, "virtwatt_guest_host_model_info{model=\"host-vm:lin\"",
		       "model=\"host:host-vm:lin\"");
}

static void test_model_server_down_falls_back(void **state)
{
	struct ctx *c = *state;
	_cleanup_free_ char *text = NULL;
	size_t len;

	c->cfg.model_server_url = "http://127.0.0.1:9"; /* discard port: refused */
	c->cfg.common.model_timeout_ns = 500 * VW_NSEC_PER_MSEC;
	c->cfg.passthrough_enable = false;
	c->cfg.state_file = "";
	start_guest(c);
	run_procs(c);
	tick(c);
	assert_int_equal(vw_exposition_copy(vw_guest_exposition(c->g), 0, &text, &len), 0);
	assert_non_null(strstr(text, "source=\"model\""));
	assert_non_null(strstr(text, "model=\"builtin:"));
	assert_non_null(strstr(text, "kind=\"estimated\""));
}

static void test_binary_serves_passthrough(void **state)
{
	struct ctx *c = *state;
	char fifo_arg[700], state_arg[700], sys_arg[600], proc_arg[600];
	char *argv[] = { VW_GUEST_BIN, "--web.listen-address=127.0.0.1:0", fifo_arg, state_arg,
			 sys_arg, proc_arg, "--monitor.interval=1s", "--cpu.accounting=procfs",
			 "--model.cache-dir=", NULL };
	_cleanup_free_ char *body = NULL;
	char url[64];
	unsigned port = 0;
	pid_t pid;
	long code = 0;
	bool found = false;

	vw_clock_set_fake(NULL);
	snprintf(fifo_arg, sizeof(fifo_arg), "--passthrough.path=%s", c->fifo);
	snprintf(state_arg, sizeof(state_arg), "--state.file=%s", c->state);
	snprintf(sys_arg, sizeof(sys_arg), "--host.sysfs=%s", c->f.sys);
	snprintf(proc_arg, sizeof(proc_arg), "--host.procfs=%s", c->f.proc);
	assert_int_equal(vw_fixture_start_daemon(argv, &pid, &port), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	for (int i = 0; i < 40 && !found; i++) {
		host_runs(c, (uint64_t)i);
		send_frame(c);
		usleep(250 * 1000);
		free(body);
		body = vw_fixture_http_get(url, &code);
		found = body && strstr(body, "virtwatt_guest_power_source_info{source=\"passthrough\"");
	}
	assert_int_equal(vw_fixture_stop_daemon(pid), 0);
	assert_true(found);
	assert_int_equal(code, 200);
	assert_non_null(strstr(body, "kepler_node_cpu_joules_total{zone=\"package\",path=\"vm\""));
}

/* Scrape until the VM's package joules stay put over 1.5 s (every frame sent is consumed). */
static bool settled(const char *url, struct exported *e)
{
	double prev = -1;

	for (int i = 0; i < 16; i++) {
		long code = 0;
		_cleanup_free_ char *body = vw_fixture_http_get(url, &code);

		usleep(1500 * 1000);
		if (!body)
			continue;
		parse_exported(body, e);
		if (strstr(body, "source=\"passthrough\"") && e->node == prev)
			return true;
		prev = e->node;
	}
	return false;
}

/*
 * The real binary on the FIFO, fed as two publishers would (another epoch with its own history
 * between our frames) plus a spike: its /metrics count what our publisher delivered (within
 * 10 %) and name both reasons.
 */
static void test_binary_two_publishers_and_spike(void **state)
{
	struct ctx *c = *state;
	char fifo_arg[700], sys_arg[600], proc_arg[600];
	char *argv[] = { VW_GUEST_BIN, "--web.listen-address=127.0.0.1:0", fifo_arg, sys_arg,
			 proc_arg, "--monitor.interval=1s", "--cpu.accounting=procfs",
			 "--model.cache-dir=", "--state.file=", NULL };
	uint64_t b_idle[2] = { 9000000000ULL, 900000000ULL }, b_active[2] = { 4000000000ULL, 0 };
	uint64_t b_seq = 500, a0, delivered;
	struct exported e1, e2;
	unsigned port = 0;
	char url[64];
	pid_t pid;

	vw_clock_set_fake(NULL);
	snprintf(fifo_arg, sizeof(fifo_arg), "--passthrough.path=%s", c->fifo);
	snprintf(sys_arg, sizeof(sys_arg), "--host.sysfs=%s", c->f.sys);
	snprintf(proc_arg, sizeof(proc_arg), "--host.procfs=%s", c->f.proc);
	assert_int_equal(vw_fixture_start_daemon(argv, &pid, &port), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	for (uint64_t k = 0; k < 3; k++) {
		host_runs(c, k);
		send_frame(c);
		usleep(1200 * 1000); /* the first fresh interval is the model's */
	}
	assert_true(settled(url, &e1));
	a0 = c->idle[0] + c->active[0];
	for (uint64_t k = 3; k < 9; k++) {
		uint64_t spike_active[2] = { c->active[0] + 1000000000000ULL, c->active[1] };

		host_runs(c, k);
		for (int m = 0; m < 2; m++)
			b_idle[m] += 50000000;
		send_frame_of(c, c->epoch + 1000, ++b_seq, b_idle, b_active);
		if (k == 5)
			send_frame_of(c, c->epoch, ++c->seq, c->idle, spike_active);
		else
			send_frame(c);
		usleep(300 * 1000);
	}
	assert_true(settled(url, &e2));
	assert_int_equal(vw_fixture_stop_daemon(pid), 0);
	delivered = c->idle[0] + c->active[0] - a0;
	print_message("# binary: delivered %.3f J, VM %.3f J; rejected conflict %g, spike %g\n",
		      (double)delivered / 1e6, e2.node - e1.node, e2.rejected_conflict,
		      e2.rejected_spike);
	assert_double_near(e2.node - e1.node, (double)delivered / 1e6, (double)delivered / 1e7);
	assert_true(e2.rejected_conflict == 6 && e2.rejected_spike == 1);
}

/* Whether the process maps a file whose path holds `name`. */
static bool maps_file(pid_t pid, const char *name)
{
	char path[64];
	_cleanup_free_ char *maps = NULL;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = vw_fixture_slurp(path, NULL);
	assert_non_null(maps);
	return strstr(maps, name) != NULL;
}

/*
 * The real binary in its default configuration (no host here: the estimator with the built-in
 * model; BPF accounting as root), scraped: it has not mapped the libraries loaded on first use
 * (libm_lazy.c, curl_lazy.c, yaml_lazy.c, crypt_lazy.c, libbpf_lazy.c, which only the BPF
 * loader child maps), and the dynamic loader bound none of its own symbols to libm (a
 * sanitizer's runtime maps libm for itself: the bindings tell the guest's use apart).
 */
static void test_binary_default_maps(void **state)
{
	static const char *const lazy[] = { "/libm.so", "/libcurl", "/libyaml", "/libcrypt.so",
					    "/libbpf.so" };
	struct ctx *c = *state;
	char state_arg[700], debug[640], debug_pid[700], url[64], own[600];
	char *argv[] = { VW_GUEST_BIN, "--web.listen-address=127.0.0.1:0", state_arg,
			 "--monitor.interval=1s", "--model.cache-dir=", NULL };
	_cleanup_free_ char *body = NULL, *bindings = NULL;
	bool sanitized;
	unsigned port = 0;
	long code = 0;
	pid_t pid;

	vw_clock_set_fake(NULL);
	snprintf(state_arg, sizeof(state_arg), "--state.file=%s", c->state);
	snprintf(debug, sizeof(debug), "%s/ld-debug", c->f.root);
	setenv("LD_DEBUG", "bindings", 1);
	setenv("LD_DEBUG_OUTPUT", debug, 1);
	assert_int_equal(vw_fixture_start_daemon(argv, &pid, &port), 0);
	unsetenv("LD_DEBUG");
	unsetenv("LD_DEBUG_OUTPUT");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	usleep(2500 * 1000); /* two intervals estimated */
	body = vw_fixture_http_get(url, &code);
	sanitized = maps_file(pid, "/libasan.so") || maps_file(pid, "/libubsan.so");
	for (size_t i = 0; i < ARRAY_SIZE(lazy); i++) {
		bool mapped = maps_file(pid, lazy[i]);

		if (mapped && strcmp(lazy[i], "/libm.so") == 0 && sanitized)
			continue; /* the sanitizer's runtime NEEDs it: the bindings below decide */
		if (mapped)
			print_message("# the guest maps %s\n", lazy[i]);
		assert_false(mapped);
	}
	assert_int_equal(vw_fixture_stop_daemon(pid), 0);
	assert_int_equal(code, 200);
	assert_non_null(body);
	assert_non_null(strstr(body, "virtwatt_guest_power_source_info{source=\"model\""));
	snprintf(debug_pid, sizeof(debug_pid), "%s.%d", debug, (int)pid);
	bindings = vw_fixture_slurp(debug_pid, NULL);
	assert_non_null(bindings);
	snprintf(own, sizeof(own), "binding file %s [0] to ", VW_GUEST_BIN);
	assert_non_null(strstr(bindings, own)); /* the trace is there: its libc calls */
	for (const char *l = bindings; (l = strstr(l, own)); l++) {
		const char *eol = strchr(l, '\n');
		const char *libm = strstr(l, "/libm.so");

		if (libm && (!eol || libm < eol)) {
			print_message("# %.*s\n", eol ? (int)(eol - l) : 200, l);
			fail_msg("the guest binds a symbol of its own to libm");
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_passthrough_exact_and_monotonic, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_passthrough_two_publishers_and_spike, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_host_model_push, setup, teardown),
		cmocka_unit_test_setup_teardown(test_model_server_down_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_binary_serves_passthrough, setup, teardown),
		cmocka_unit_test_setup_teardown(test_binary_two_publishers_and_spike, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_binary_default_maps, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
