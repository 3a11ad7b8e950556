/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf accountant's ghost check (shared/engine/cpu_ghost.c) on simulated reads: which
 * processes known only from their exited threads it looks up in /proc, and when. The lookup is
 * the test's: it records each call and answers "there" (a zombie) or "gone". The real
 * accountant's check against a real mass kill is test_cpu_account's mass_kill cases.
 */
#include "vw_test.h"

#include "cpu_account_priv.h"
#include "cpu_ghost.h"

#define MAX_PROCS 64
#define MAX_READS 512
#define TGID0 1000u

static struct {
	struct vw_cpu_history hist;
	struct vw_ghost_check g;
	size_t n;                               /* processes, tgids TGID0.. */
	bool live[MAX_PROCS];                   /* has a live thread: kind USER */
	bool gone[MAX_PROCS];                   /* the lookup says gone */
	bool reported_exited[MAX_PROCS];
	unsigned freed_at[MAX_PROCS];           /* 1 + the read its free reaches (0: never) */
	bool by_check[MAX_PROCS];               /* reported exited by the check, not its free */
	unsigned read;                          /* the read in progress */
	int looked[MAX_PROCS][MAX_READS];       /* reads at which each was looked up */
	size_t n_looked[MAX_PROCS];
	size_t per_read[MAX_READS];             /* lookups in each read */
} sim;

static int lookup(void *ctx, const struct vw_proc_cpu *p)
{
	size_t k = p->tgid - TGID0;

	(void)ctx;
	assert_true(k < sim.n);
	assert_false(sim.live[k]); /* a process with a live thread is never looked up */
	sim.looked[k][sim.n_looked[k]++] = (int)sim.read;
	sim.per_read[sim.read]++;
	return sim.gone[k] ? 1 : 0;
}

static void sim_start(size_t n, unsigned budget)
{
	vw_cpu_history_free(&sim.hist);
	memset(&sim, 0, sizeof(sim));
	sim.n = n;
	sim.g = (struct vw_ghost_check){ .budget = budget, .gone = lookup };
}

/* One read at now_ns: every process not yet reported exited, as the bpf reader lists it. */
static size_t sim_read(uint64_t now_ns)
{
	struct vw_cpu_table *t;
	struct vw_cpu_snapshot snap;
	size_t caught;

	assert_int_equal(vw_cpu_history_begin(&sim.hist, &t), 0);
	for (size_t k = 0; k < sim.n; k++) {
		struct vw_proc_cpu *p;

		if (sim.reported_exited[k])
			continue; /* its map entry went with the report */
		assert_non_null(p = vw_cpu_table_new_proc(t));
		p->tgid = TGID0 + (uint32_t)k;
		p->start_time = 77;
		p->cpu_ns = 1000;
		p->kind = sim.live[k] ? VW_PROC_KIND_USER : VW_PROC_KIND_UNKNOWN;
		if (sim.freed_at[k] && sim.read + 1 >= sim.freed_at[k]) { /* as the records give it */
			p->exited = true;
			p->kind = VW_PROC_KIND_USER;
		}
	}
	vw_cpu_history_finish(&sim.hist, &snap);
	caught = vw_ghost_check_run(&sim.g, &snap, vw_cpu_history_prev(&sim.hist), now_ns);
	for (size_t i = 0; i < snap.n_procs; i++) {
		size_t k = snap.procs[i].tgid - TGID0;

		if (!snap.procs[i].exited)
			continue;
		sim.reported_exited[k] = true;
		sim.by_check[k] = !sim.freed_at[k] || sim.read + 1 < sim.freed_at[k];
	}
	assert_true(sim.per_read[sim.read] <= sim.g.budget);
	sim.read++;
	return caught;
}

/*
 * A budget smaller than the quiet set (a mass kill larger than VW_GHOST_BUDGET): every process
 * is looked up within ceil(n / budget) reads of becoming due, and again at most
 * max(VW_GHOST_RECHECK, ceil(n / budget)) reads after each lookup. The old cadence took the
 * budget's worth in table order each time the quiet count hit a multiple of the recheck period:
 * the same first ones every time, the rest never.
 */
static void run_budget(size_t n, unsigned budget)
{
	unsigned rounds = (unsigned)((n + budget - 1) / budget);
	unsigned gap = VW_MAX(VW_GHOST_RECHECK, rounds), reads = 1 + 3 * gap + 2;

	sim_start(n, budget);
	for (unsigned r = 0; r < reads; r++)
		assert_int_equal(sim_read((uint64_t)(r + 1) * VW_NSEC_PER_SEC), 0);
	for (size_t k = 0; k < n; k++) {
		int last = 0; /* read 1 is the first at which any is due (quiet for 2 reads, 1 s) */

		assert_true(sim.n_looked[k] > 0);
		assert_true(sim.looked[k][0] >= 1);
		if (sim.looked[k][0] > (int)rounds) /* read 1 .. rounds */
			fail_msg("process %zu of %zu (budget %u) first looked up at read %d, "
				 "not within %u reads", k, n, budget, sim.looked[k][0], rounds);
		last = sim.looked[k][0];
		for (size_t i = 1; i < sim.n_looked[k]; i++) {
			if (sim.looked[k][i] - last > (int)gap)
				fail_msg("process %zu looked up at reads %d then %d: > %u apart", k,
					 last, sim.looked[k][i], gap);
			if (budget >= n) /* no shortage: exactly the recheck period */
				assert_int_equal(sim.looked[k][i] - last, VW_GHOST_RECHECK);
			last = sim.looked[k][i];
		}
		if ((int)reads - 1 - last > (int)gap)
			fail_msg("process %zu last looked up at read %d of %u", k, last, reads);
	}
}

static void test_budget_short(void **state)
{
	(void)state;
	run_budget(10, 3);  /* ceil = 4: the recheck period */
	run_budget(23, 4);  /* ceil = 6: longer than it */
	run_budget(50, 7);
	run_budget(9, 1);
}

static void test_budget_enough(void **state)
{
	(void)state;
	run_budget(12, VW_GHOST_BUDGET);
	run_budget(12, 12);
}

/* Reads closer together than VW_GHOST_QUIET_NS: the first lookup waits for it, whatever the
 * read count, then each VW_GHOST_RECHECK reads. */
static void test_quiet_time(void **state)
{
	(void)state;
	sim_start(3, VW_GHOST_BUDGET);
	for (unsigned r = 0; r < 12; r++) /* 200 ms apart: quiet long enough at read 3 */
		assert_int_equal(sim_read(VW_NSEC_PER_SEC + (uint64_t)r * 200 * VW_NSEC_PER_MSEC), 0);
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(sim.n_looked[k], 3);
		assert_int_equal(sim.looked[k][0], 3);
		assert_int_equal(sim.looked[k][1], 7);
		assert_int_equal(sim.looked[k][2], 11);
	}
}

/* One gone is reported exited once, counted, and never looked up again; one with a live thread
 * is never looked up; one that comes back to life (a live thread listed) starts quiet again. */
static void test_gone(void **state)
{
	size_t caught = 0;

	(void)state;
	sim_start(4, 2);
	sim.live[1] = true;
	sim.gone[2] = sim.gone[3] = true;
	for (unsigned r = 0; r < 10; r++) {
		if (r == 5)
			sim.live[0] = true;
		if (r == 6)
			sim.live[0] = false;
		caught += sim_read((uint64_t)(r + 1) * VW_NSEC_PER_SEC);
	}
	assert_int_equal(caught, 2);
	assert_int_equal(sim.g.ghosts, 2);
	assert_true(sim.reported_exited[2] && sim.reported_exited[3]);
	assert_false(sim.reported_exited[0] || sim.reported_exited[1]);
	assert_int_equal(sim.n_looked[1], 0);
	/* each gone one looked up twice: found gone, then confirmed a read (1 s) later */
	assert_int_equal(sim.n_looked[2], 2);
	assert_int_equal(sim.n_looked[3], 2);
	/* 0: looked up at 1 (both gone ones too: budget 2, 0 comes first) ... */
	assert_int_equal(sim.looked[2][0], 1);
	assert_true(sim.looked[3][0] <= 2);
	assert_int_equal(sim.looked[2][1], sim.looked[2][0] + 1);
	assert_int_equal(sim.looked[3][1], sim.looked[3][0] + 1);
	/* ... alive at read 5, quiet again from 6: due at 7 */
	assert_int_equal(sim.looked[0][sim.n_looked[0] - 1], 7);
}

/*
 * A zombie, looked up and found there, reaped just before its recheck: gone from /proc, its
 * free still on its way (an RCU grace period after the reap: hundreds of ms on CI's loaded
 * machine, where test_cpu_ranwalk's mass exit saw 55 of 2,000 caught so). It must be reported
 * exited by its free, not by the check; one whose free never comes is reported by the check,
 * once, VW_GHOST_CONFIRM_NS after the lookup that first found it gone. Reads 150 ms apart.
 */
static void test_reaped_before_recheck(void **state)
{
	const uint64_t step = 150 * VW_NSEC_PER_MSEC;
	unsigned first = 0, reap = 0;
	size_t caught = 0;

	(void)state;
	sim_start(2, VW_GHOST_BUDGET);
	for (unsigned r = 0; r < 40; r++) {
		if (!first && sim.n_looked[0])
			first = sim.looked[0][0];
		if (first && !reap && r == first + VW_GHOST_RECHECK) { /* reaped before this read */
			reap = r;
			sim.gone[0] = sim.gone[1] = true;
			sim.freed_at[0] = r + 3 + 1; /* its free: 3 reads (450 ms) after the reap */
		}
		caught += sim_read(VW_NSEC_PER_SEC + (uint64_t)r * step);
	}
	assert_true(first > 0 && reap > 0);
	assert_int_equal(sim.looked[0][1], reap); /* the recheck found it gone ... */
	assert_true(sim.reported_exited[0]);
	assert_false(sim.by_check[0]); /* ... but its free reported it */
	assert_true(sim.reported_exited[1] && sim.by_check[1]);
	assert_int_equal(caught, 1);
	assert_int_equal(sim.g.ghosts, 1);
	/* the lost one: found gone at the reap's read, reported at the first read 1 s after */
	assert_int_equal(sim.n_looked[1], sim.n_looked[0] + 1);
	assert_int_equal(sim.looked[1][sim.n_looked[1] - 2], reap);
	assert_int_equal(sim.looked[1][sim.n_looked[1] - 1],
			 reap + (unsigned)((VW_GHOST_CONFIRM_NS + step - 1) / step));
}

/*
 * Reads 5 ms apart (a test's read_past_exit): a process found gone whose free never comes is
 * still reported, by the check, once. The unchecked count stops at VW_GHOST_UNCHECKED_MAX
 * (127 reads, 0.64 s here): the 1 s window counted from read 127 back never passed, and the
 * process stayed alive for good (test_bpf_raw_tp_no_batch, once under a fork storm).
 */
static void test_fast_reads_confirm(void **state)
{
	const uint64_t step = 5 * VW_NSEC_PER_MSEC;
	unsigned r;

	(void)state;
	sim_start(1, VW_GHOST_BUDGET);
	sim.gone[0] = true;
	for (r = 0; r < 400 && !sim.reported_exited[0]; r++)
		sim_read(VW_NSEC_PER_SEC + (uint64_t)r * step);
	assert_true(sim.reported_exited[0] && sim.by_check[0]);
	assert_int_equal(sim.g.ghosts, 1);
	/* quiet 0.5 s (100 reads), found gone, then its confirmation 127 reads on */
	assert_true(sim.n_looked[0] == 2);
	assert_int_equal(sim.looked[0][1] - sim.looked[0][0], VW_GHOST_UNCHECKED_MAX);
}

static int teardown(void **state)
{
	(void)state;
	vw_cpu_history_free(&sim.hist);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_budget_short, teardown),
		cmocka_unit_test_teardown(test_budget_enough, teardown),
		cmocka_unit_test_teardown(test_quiet_time, teardown),
		cmocka_unit_test_teardown(test_gone, teardown),
		cmocka_unit_test_teardown(test_reaped_before_recheck, teardown),
		cmocka_unit_test_teardown(test_fast_reads_confirm, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
