/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf accountant's sweep of its fallback hash (shared/engine/cpu_slots.c) on simulated
 * reads: which entries it looks up in /proc, when it deletes one, and that it never deletes the
 * slot of a thread /proc still shows or one whose entry changed. The lookup and the delete are
 * the test's. The real accountant's sweep against real threads is test_cpu_exitring's
 * test_slots_* cases.
 */
#include "vw_test.h"

#include "cpu_slots.h"

#define N_MAX 64
#define PID0 5000u

static struct {
	struct vw_slot_sweep w;
	struct vw_slot slots[N_MAX];
	size_t n;
	bool gone[N_MAX];        /* the lookup says gone */
	int err[N_MAX];          /* the lookup cannot tell (-errno) */
	bool deleted[N_MAX];
	bool refuse_delete;      /* the entry changed in the map meanwhile */
	unsigned looked[N_MAX];  /* lookups of each */
	unsigned per_read;       /* lookups this read */
} sim;

static size_t idx(uint32_t pid)
{
	assert_true(pid >= PID0 && pid - PID0 < sim.n);
	return pid - PID0;
}

static int lookup(void *ctx, uint32_t pid)
{
	size_t k = idx(pid);

	(void)ctx;
	assert_false(sim.deleted[k]);
	sim.looked[k]++;
	sim.per_read++;
	return sim.err[k] ? sim.err[k] : sim.gone[k];
}

static int delete_slot(void *ctx, const struct vw_slot *s)
{
	size_t k = idx(s->pid);

	(void)ctx;
	assert_true(sim.gone[k]); /* never a thread /proc shows */
	assert_int_equal(s->start_ns, sim.slots[k].start_ns);
	if (sim.refuse_delete)
		return -ESTALE;
	sim.deleted[k] = true;
	return 0;
}

static void sim_start(size_t n, unsigned budget, uint64_t confirm_ns)
{
	vw_slot_sweep_free(&sim.w);
	memset(&sim, 0, sizeof(sim));
	sim.n = n;
	for (size_t k = 0; k < n; k++)
		sim.slots[k] = (struct vw_slot){ .pid = PID0 + (uint32_t)k, .start_ns = 1000 + k };
	sim.w = (struct vw_slot_sweep){ .budget = budget, .confirm_ns = confirm_ns,
					.gone = lookup, .del = delete_slot };
}

/* One read at now: the entries not deleted, in another order than the PIDs' (a hash's). */
static int sim_read(uint64_t now_ns)
{
	struct vw_slot in[N_MAX];
	size_t m = 0;

	for (size_t k = sim.n; k-- > 0;)
		if (!sim.deleted[k])
			in[m++] = sim.slots[k];
	sim.per_read = 0;
	return vw_slot_sweep_run(&sim.w, in, m, now_ns);
}

static int teardown(void **state)
{
	(void)state;
	vw_slot_sweep_free(&sim.w);
	return 0;
}

/* Gone at two lookups confirm_ns apart: deleted, counted; a thread /proc shows: never. */
static void test_gone_twice_deleted(void **state)
{
	(void)state;
	sim_start(4, 16, 1000);
	sim.gone[1] = sim.gone[3] = true;
	assert_int_equal(sim_read(10000), 0); /* first found gone: candidates */
	assert_false(sim.deleted[1] || sim.deleted[3]);
	assert_int_equal(sim_read(10500), 0); /* not confirm_ns since: not looked up again */
	assert_int_equal(sim.looked[1], 1);
	assert_int_equal(sim_read(11000), 2);
	assert_true(sim.deleted[1] && sim.deleted[3]);
	assert_false(sim.deleted[0] || sim.deleted[2]);
	assert_int_equal(sim.w.removed, 2);
	for (int i = 0; i < 5; i++)
		assert_int_equal(sim_read(12000 + 1000 * (uint64_t)i), 0);
	assert_false(sim.deleted[0] || sim.deleted[2]);
}

/* A slot found gone once, then there again (a zombie's PID, a late lookup), is not deleted
 * at its next sighting gone: that one starts the wait over. */
static void test_there_again_starts_over(void **state)
{
	(void)state;
	sim_start(1, 16, 1000);
	sim.gone[0] = true;
	assert_int_equal(sim_read(10000), 0);
	sim.gone[0] = false;
	assert_int_equal(sim_read(11000), 0);
	sim.gone[0] = true;
	assert_int_equal(sim_read(12000), 0);
	assert_false(sim.deleted[0]);
	assert_int_equal(sim_read(13000), 1);
}

/* The entry changed between the two sightings (its PID's slot taken over by a new thread: another
 * start time): not the candidate, not deleted then. */
static void test_changed_entry_kept(void **state)
{
	(void)state;
	sim_start(2, 16, 0);
	sim.gone[0] = sim.gone[1] = true;
	assert_int_equal(sim_read(1), 0);
	sim.slots[0].start_ns += 7;
	assert_int_equal(sim_read(2), 1);
	assert_false(sim.deleted[0]);
	assert_true(sim.deleted[1]);
	assert_int_equal(sim_read(3), 1);
	assert_true(sim.deleted[0]);
}

/* A delete refused (the map's entry is another thread's by then) is not counted. */
static void test_refused_delete_not_counted(void **state)
{
	(void)state;
	sim_start(3, 16, 0);
	sim.gone[0] = sim.gone[1] = sim.gone[2] = true;
	sim.refuse_delete = true;
	assert_int_equal(sim_read(1), 0);
	assert_int_equal(sim_read(2), 0);
	assert_int_equal(sim.w.removed, 0);
}

/* A lookup that cannot tell keeps the candidate as it was. */
static void test_cannot_tell_keeps(void **state)
{
	(void)state;
	sim_start(1, 16, 0);
	sim.gone[0] = true;
	assert_int_equal(sim_read(1), 0);
	sim.err[0] = -EMFILE;
	assert_int_equal(sim_read(2), 0);
	assert_false(sim.deleted[0]);
	sim.err[0] = 0;
	assert_int_equal(sim_read(3), 1);
}

/* 40 entries, 7 lookups a read: never more a read, each looked up within ceil(40 / 7) reads,
 * every gone one deleted within twice that. */
static void test_budget_rotates(void **state)
{
	unsigned reads = 0;

	(void)state;
	sim_start(40, 7, 0);
	for (size_t k = 0; k < 40; k += 3)
		sim.gone[k] = true;
	for (int i = 0; i < 6; i++) {
		assert_true(sim_read(++reads) >= 0);
		assert_true(sim.per_read <= 7);
	}
	for (size_t k = 0; k < 40; k++)
		assert_true(sim.looked[k] >= 1);
	for (int i = 0; i < 6; i++) {
		assert_true(sim_read(++reads) >= 0);
		assert_true(sim.per_read <= 7);
	}
	for (size_t k = 0; k < 40; k++)
		assert_int_equal(sim.deleted[k], sim.gone[k]);
	assert_int_equal(sim.w.removed, 14);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_gone_twice_deleted, teardown),
		cmocka_unit_test_teardown(test_there_again_starts_over, teardown),
		cmocka_unit_test_teardown(test_changed_entry_kept, teardown),
		cmocka_unit_test_teardown(test_refused_delete_not_counted, teardown),
		cmocka_unit_test_teardown(test_cannot_tell_keeps, teardown),
		cmocka_unit_test_teardown(test_budget_rotates, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
