/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Benchmark loader: attach the bpf CPU accountant's programs (tp_btf, or raw_tp with
 * --raw-tp; with --hw-standin also the counter program on software stand-in events), or one of
 * the baselines in bench.bpf.c (--null, --kepler-like; --tail-switch: the accountant with the
 * exit-tail switch program it had until 2026-11-24 beside it), print "attached",
 * hold them until SIGINT/SIGTERM or --seconds run out, then print what one read saw.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_account.h"
#include "fileio.h"
#include "bench.skel.h"
#include "log.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void hold(unsigned seconds)
{
	printf("attached\n");
	fflush(stdout);
	for (unsigned i = 0; !stop && (!seconds || i < seconds * 10); i++)
		usleep(100 * 1000);
}

enum baseline { BASE_NONE, BASE_NULL, BASE_TAIL, BASE_KEPLER };

/* One baseline program of bench.bpf.c, loaded and attached; NULL with errno set. */
static struct bench_bpf *baseline_open(enum baseline which)
{
	struct bench_bpf *skel = bench_bpf__open();
	int r;

	if (!skel)
		return NULL;
	bpf_program__set_autoload(skel->progs.null_switch, which == BASE_NULL);
	bpf_program__set_autoload(skel->progs.tail_switch, which == BASE_TAIL);
	bpf_program__set_autoload(skel->progs.kl_switch, which == BASE_KEPLER);
	r = bench_bpf__load(skel);
	if (r == 0)
		r = bench_bpf__attach(skel);
	if (r < 0) {
		bench_bpf__destroy(skel);
		errno = -r;
		return NULL;
	}
	return skel;
}

/* The accountant; with the exit-tail switch program beside it when tail is set (the shape
 * the accountant had until 2026-11-24). */
static int run_accountant(uint32_t flags, unsigned seconds, bool tail)
{
	struct bench_bpf *base = NULL;
	struct vw_cpu_env env = { .procfs_fd = vw_root_open("/proc"),
				  .sysfs_fd = vw_root_open("/sys"),
				  .flags = flags };
	struct vw_cpu_accountant acc;
	struct vw_cpu_snapshot snap;
	uint64_t total = 0;
	int r;

	r = vw_cpu_accountant_open(&env, "bpf", &acc);
	if (r < 0)
		return r;
	if (tail && !(base = baseline_open(BASE_TAIL))) {
		r = -errno;
		vw_cpu_accountant_close(&acc);
		return r;
	}
	hold(seconds);
	bench_bpf__destroy(base);
	r = acc.ops->read(acc.state, &snap);
	if (r == 0) {
		for (size_t i = 0; i < snap.n_procs; i++)
			total += snap.procs[i].cpu_ns;
		printf("read: %zu processes, %.3f CPU-s since open\n", snap.n_procs,
		       (double)total / 1e9);
		if (snap.counters) {
			uint64_t instr = 0;

			for (size_t i = 0; i < snap.n_procs; i++)
				instr += snap.counters[i].instructions;
			printf("counters (mask 0x%x): %.3f G instructions\n", snap.hw_available,
			       (double)instr / 1e9);
		}
	}
	vw_cpu_accountant_close(&acc);
	vw_closep(&env.procfs_fd);
	vw_closep(&env.sysfs_fd);
	return r;
}

static int run_baseline(enum baseline which, unsigned seconds)
{
	struct bench_bpf *skel = baseline_open(which);

	if (!skel)
		return -errno;
	hold(seconds);
	bench_bpf__destroy(skel);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "raw-tp", no_argument, NULL, 'r' },
		{ "hw-standin", no_argument, NULL, 'w' },
		{ "kepler-like", no_argument, NULL, 'k' },
		{ "null", no_argument, NULL, 'n' },
		{ "tail-switch", no_argument, NULL, 't' },
		{ "no-ran", no_argument, NULL, 'f' },
		{ "seconds", required_argument, NULL, 's' },
		{ 0 },
	};
	enum baseline base = BASE_NONE;
	uint32_t flags = 0;
	unsigned seconds = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "rwkntfs:", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			flags |= VW_CPU_BPF_RAW_TP;
			break;
		case 'w':
			flags |= VW_CPU_BPF_HW_STANDIN;
			break;
		case 'k':
			base = BASE_KEPLER;
			break;
		case 'n':
			base = BASE_NULL;
			break;
		case 't':
			base = BASE_TAIL;
			break;
		case 'f':
			flags |= VW_CPU_BPF_NO_RAN;
			break;
		case 's':
			seconds = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: %s [[--raw-tp] [--hw-standin] [--no-ran] | --kepler-like | --null | "
				"--tail-switch] "
				"[--seconds N]\n",
				argv[0]);
			return 2;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (base == BASE_NONE || base == BASE_TAIL)
		r = run_accountant(flags, seconds, base == BASE_TAIL);
	else
		r = run_baseline(base, seconds);
	if (r < 0)
		fprintf(stderr, "vw-bpf-load: %s\n", strerror(-r));
	return r < 0 ? 1 : 0;
}
