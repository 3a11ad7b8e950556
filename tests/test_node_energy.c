/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node-energy stage (shared/engine/node.c) on fixed numbers: fake sources (a meter cannot
 * run here) behind the real ops interface, a /proc/stat written per sample, and every zone's
 * interval named to the microjoule: the idle choice (configured, residual, fitted, the source's
 * own split), wraps, gaps and read errors, the non-CPU remainder, and the switch between a
 * chain's sources with its rebase.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "node.h"

#define SEC 1000000000ULL
#define J 1000000ULL

/* A fake source: its zones, its counters as the test sets them, its freshness. */
struct fake {
	struct vw_zone_info zi[4];
	size_t n;
	uint64_t raw[4], idle[4]; /* idle: a source that splits (read_split) */
	int errs[4];
	bool fresh;
	uint64_t gaps; /* a polled meter's own gap count */
	unsigned reads;
};

static int fake_open(const struct vw_power_env *env, void **ret)
{
	*ret = (void *)env->ctx;
	return 0;
}

static size_t fake_zones(void *state, const struct vw_zone_info **ret)
{
	struct fake *f = state;

	*ret = f->zi;
	return f->n;
}

static int fake_read(void *state, const struct vw_node_activity *act, uint64_t *raw, int *errs)
{
	struct fake *f = state;

	(void)act;
	f->reads++;
	for (size_t i = 0; i < f->n; i++) {
		raw[i] = f->raw[i];
		errs[i] = f->errs[i];
	}
	return vw_power_read_result(errs, f->n);
}

static int fake_read_split(void *state, const struct vw_node_activity *act, uint64_t *idle,
			   uint64_t *active, int *errs)
{
	struct fake *f = state;

	for (size_t i = 0; i < f->n; i++)
		idle[i] = f->idle[i];
	return fake_read(state, act, active, errs);
}

static bool fake_fresh(void *state)
{
	return ((struct fake *)state)->fresh;
}

static void fake_stats(void *state, struct vw_power_source_stats *ret)
{
	*ret = (struct vw_power_source_stats){ .gaps = ((struct fake *)state)->gaps };
}

static void fake_close(void *state)
{
	(void)state;
}

static const struct vw_power_source_ops meter_ops = {
	.name = "meter", .measured = true, .open = fake_open, .zones = fake_zones,
	.read = fake_read, .stats = fake_stats, .close = fake_close,
};
static const struct vw_power_source_ops split_ops = {
	.name = "split", .measured = true, .open = fake_open, .zones = fake_zones,
	.read_split = fake_read_split, .fresh = fake_fresh, .close = fake_close,
};
static const struct vw_power_source_ops model_ops = {
	.name = "model", .open = fake_open, .zones = fake_zones, .read = fake_read,
	.close = fake_close,
};

static struct vw_power_source src(const struct vw_power_source_ops *ops, struct fake *f)
{
	return (struct vw_power_source){ .ops = ops, .state = f };
}

static struct vw_zone_info zone(enum vw_zone z, uint64_t max_range_uj, double idle_w)
{
	return (struct vw_zone_info){ .zone = z, .max_range_uj = max_range_uj, .idle_w = idle_w,
				      .path = "fake" };
}

/* A procfs root whose stat the test rewrites before each sample. */
struct rig {
	char *root;
	int fd;
	uint64_t user, idle;
};

static void rig_stat(struct rig *r, uint64_t busy, uint64_t idle)
{
	char text[128];

	r->user += busy;
	r->idle += idle;
	snprintf(text, sizeof(text), "cpu  %llu 0 0 %llu 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n",
		 (unsigned long long)r->user, (unsigned long long)r->idle);
	assert_int_equal(vw_fixture_write(r->root, "stat", text, 0644), 0);
}

static void rig_init(struct rig *r, struct vw_node_opts *o)
{
	*r = (struct rig){ .root = vw_fixture_mkdtemp("node") };
	assert_non_null(r->root);
	rig_stat(r, 0, 0);
	r->fd = vw_dir_open_at(AT_FDCWD, r->root);
	assert_true(r->fd >= 0);
	o->procfs_fd = r->fd;
	o->procfs = r->root;
	o->who = "test";
	assert_int_equal(vw_procfs_read_stat(r->fd, &o->stat), 0);
}

static void rig_free(struct rig *r)
{
	close(r->fd);
	vw_fixture_rm(r->root);
}

static const struct vw_node_zone_view *view_of(const struct vw_node *n, enum vw_zone z)
{
	for (size_t i = 0; i < vw_node_n_zones(n); i++)
		if (vw_node_zone(n, i, NULL)->zone == z)
			return vw_node_zone(n, i, NULL);
	return NULL;
}

/*
 * The host's shape: a meter for the CPU zones (its model platform zone replaced by the platform
 * meter's), configured idle for package, the residual rule for dram and platform, a wrap, the
 * non-CPU remainder; then a failed read and a polled meter's gaps.
 */
static void test_meters(void **state)
{
	struct fake cpu = { .n = 3, .zi = { zone(VW_ZONE_PACKAGE, 100 * J, -1),
					    zone(VW_ZONE_DRAM, 0, -1),
					    zone(VW_ZONE_PLATFORM, 0, -1) },
			    .raw = { 95 * J, 0, 7 * J } };
	struct fake plat = { .n = 1, .zi = { zone(VW_ZONE_PLATFORM, 0, -1) } };
	double idle_w[VW_ZONE__COUNT] = { [VW_ZONE_PACKAGE] = 2.0, [VW_ZONE_CORE] = -1,
					  [VW_ZONE_UNCORE] = -1, [VW_ZONE_DRAM] = -1,
					  [VW_ZONE_PSYS] = -1, [VW_ZONE_PLATFORM] = -1 };
	struct vw_node_chain chains[2] = { { .src = { src(&meter_ops, &cpu) }, .n = 1 },
					   { .src = { src(&meter_ops, &plat) }, .n = 1 } };
	struct vw_node_opts o = { .idle_w = idle_w, .noncpu = true };
	struct vw_node_zone_view zv[VW_POWER_MAX_ZONES];
	struct vw_zone_energy ze[VW_ZONE__COUNT];
	const struct vw_node_zone_view *pkg, *dram, *pl;
	struct vw_node_view v = { 0 };
	struct vw_node *n;
	struct rig r;

	(void)state;
	rig_init(&r, &o);
	assert_int_equal(vw_node_new(&o, chains, 2, &n), 0);
	assert_int_equal(vw_node_n_zones(n), 3); /* package, dram, the platform meter's */
	assert_int_equal(vw_node_sample(n, 10 * SEC), 0);
	/* 1 s later: package wrapped (100 J range: 5 J to the wrap, 3 J after). */
	cpu.raw[0] = 3 * J, cpu.raw[1] = 2 * J;
	plat.raw[0] = 15 * J;
	rig_stat(&r, 75, 25);
	assert_int_equal(vw_node_sample(n, 11 * SEC), 0);
	cpu.raw[0] = 11 * J, cpu.raw[1] = 4 * J;
	plat.raw[0] = 30 * J;
	rig_stat(&r, 75, 25);
	assert_int_equal(vw_node_sample(n, 12 * SEC), 0);
	assert_int_equal(vw_node_close(n), 2 * SEC);
	assert_double_near(vw_node_usage(n), 0.75, 1e-12);

	pkg = view_of(n, VW_ZONE_PACKAGE);
	dram = view_of(n, VW_ZONE_DRAM);
	pl = view_of(n, VW_ZONE_PLATFORM);
	/* package 16 J: the configured 2 W x 2 s idle, the rest active */
	assert_int_equal(pkg->idle_method, VW_IDLE_CONFIGURED);
	assert_int_equal(pkg->idle_uj, 4 * J);
	assert_int_equal(pkg->active_uj, 12 * J);
	assert_int_equal(pkg->total_uj, 16 * J);
	assert_int_equal(pkg->wraps, 1);
	assert_double_near(pkg->watts, 8.0, 1e-9);
	/* dram 4 J, no idle power known: (1 - usage) of it is idle */
	assert_int_equal(dram->idle_method, VW_IDLE_RESIDUAL);
	assert_int_equal(dram->idle_uj, 1 * J);
	assert_int_equal(dram->active_uj, 3 * J);
	/* the platform meter's 30 J, not the CPU meter's own platform zone */
	assert_string_equal(pl->path, "fake");
	assert_int_equal(pl->total_uj, 30 * J);
	assert_int_equal(pl->idle_uj, 7500000);
	vw_node_fill_view(n, &v, zv);
	assert_int_equal(v.n_zones, 3);
	assert_true(v.has_noncpu);
	assert_int_equal(v.noncpu_uj, 10 * J); /* 30 - (16 + 4) */
	assert_double_near(v.noncpu_watts, 5.0, 1e-9);
	vw_node_zone_energy(n, ze);
	assert_true(ze[VW_ZONE_PACKAGE].present && !ze[VW_ZONE_PACKAGE].idle_to_node);
	assert_int_equal(ze[VW_ZONE_PACKAGE].idle_uj, 4 * J);
	assert_int_equal(ze[VW_ZONE_PACKAGE].active_uj, 12 * J);
	assert_false(ze[VW_ZONE_CORE].present);

	/* dram cannot be read, the meter reports two gaps: counted, no energy invented. */
	cpu.raw[0] = 12 * J;
	cpu.errs[1] = -EIO;
	cpu.raw[1] = 1000 * J;
	cpu.gaps = 2;
	plat.raw[0] = 31 * J;
	rig_stat(&r, 10, 90);
	assert_int_equal(vw_node_sample(n, 13 * SEC), 0);
	assert_int_equal(vw_node_close(n), 1 * SEC);
	assert_int_equal(pkg->total_uj, 17 * J);
	assert_int_equal(pkg->gaps, 2);
	assert_int_equal(dram->gaps, 2);
	assert_int_equal(pl->gaps, 0);
	assert_int_equal(dram->read_errors, 1);
	assert_int_equal(dram->total_uj, 4 * J);
	assert_double_near(dram->watts, 0, 0);
	assert_int_equal(pl->total_uj, 31 * J);
	vw_node_free(n);
	rig_free(&r);
}

/* A meter's clean intervals teach the zone its idle power: the fit's intercept is used. */
static void test_fitted_idle(void **state)
{
	static const unsigned busy[] = { 10, 90, 30, 70, 50, 20, 80, 40 };
	struct fake m = { .n = 1, .zi = { zone(VW_ZONE_PACKAGE, 0, -1) } };
	struct vw_node_chain c = { .src = { src(&meter_ops, &m) }, .n = 1 };
	struct vw_node_opts o = { .idle_window = 8, .idle_min_spread = 0.1 };
	struct vw_zone_energy ze[VW_ZONE__COUNT];
	const struct vw_node_zone_view *pkg;
	struct vw_node *n;
	struct rig r;

	(void)state;
	rig_init(&r, &o);
	assert_int_equal(vw_node_new(&o, &c, 1, &n), 0);
	pkg = view_of(n, VW_ZONE_PACKAGE);
	assert_int_equal(vw_node_sample(n, SEC), 0);
	(void)vw_node_close(n);
	for (size_t i = 0; i < ARRAY_SIZE(busy); i++) { /* 10 W + 20 W x usage */
		m.raw[0] += 10 * J + busy[i] * J / 5;
		rig_stat(&r, busy[i], 100 - busy[i]);
		assert_int_equal(vw_node_sample(n, (i + 2) * SEC), 0);
		assert_int_equal(vw_node_close(n), SEC);
		/* three clean intervals before the first fit */
		assert_int_equal(pkg->idle_method, i < 3 ? VW_IDLE_RESIDUAL : VW_IDLE_FITTED);
	}
	assert_double_near(pkg->idle_baseline_w, 10.0, 1e-6);
	/* the next interval at 50 %: 20 J, 10 J of it idle */
	m.raw[0] += 20 * J;
	rig_stat(&r, 50, 50);
	assert_int_equal(vw_node_sample(n, (ARRAY_SIZE(busy) + 2) * SEC), 0);
	assert_int_equal(vw_node_close(n), SEC);
	vw_node_zone_energy(n, ze);
	assert_true(llabs((long long)ze[VW_ZONE_PACKAGE].idle_uj - (long long)(10 * J)) <= 1);
	assert_int_equal(ze[VW_ZONE_PACKAGE].idle_uj + ze[VW_ZONE_PACKAGE].active_uj, 20 * J);
	vw_node_free(n);
	rig_free(&r);
}

/*
 * The guest's shape: one chain, a source that splits idle and active itself (fresh or not),
 * then a model. The split source's counters before it takes over are never counted (rebase);
 * the model's idle stays with the node; one zone per kind whatever the source.
 */
static void test_chain_switch(void **state)
{
	struct fake pt = { .n = 2, .zi = { zone(VW_ZONE_PACKAGE, 0, 1.5), zone(VW_ZONE_DRAM, 0, -1) },
			   .idle = { 100 * J }, .raw = { 300 * J }, .errs = { 0, -ENODATA },
			   .fresh = true }; /* dram: not sent yet */
	struct fake model = { .n = 1, .zi = { zone(VW_ZONE_PACKAGE, 0, 1.0) } }; /* from 0 */
	struct vw_node_chain c = { .src = { src(&split_ops, &pt), src(&model_ops, &model) }, .n = 2 };
	struct vw_node_opts o = { .zone_path = "vm", .estimated_idle_to_node = true };
	struct vw_node_zone_view zv[VW_POWER_MAX_ZONES];
	struct vw_zone_energy ze[VW_ZONE__COUNT];
	const struct vw_node_zone_view *pkg, *dram;
	struct vw_node_view v = { 0 };
	struct vw_node *n;
	struct rig r;

	(void)state;
	rig_init(&r, &o);
	assert_int_equal(vw_node_new(&o, &c, 1, &n), 0);
	pkg = view_of(n, VW_ZONE_PACKAGE);
	dram = view_of(n, VW_ZONE_DRAM);
	/* First tick: the model until the split source is taken as it stands. */
	assert_int_equal(vw_node_sample(n, SEC), 0);
	assert_int_equal(vw_node_close(n), 0);
	assert_ptr_equal(vw_node_used(n, 0)->ops, &model_ops);
	assert_int_equal(vw_node_want_index(n, 0), 0);
	assert_int_equal(vw_node_switches(n), 0); /* the first choice is no switch */
	vw_node_fill_view(n, &v, zv);
	assert_int_equal(v.n_zones, 1); /* the model's package; dram once a source read it */
	/* Its 1 J idle + 3 J active, dram's first 0.5 + 0.5 (counted from 0), as it split them. */
	pt.idle[0] += 1 * J, pt.raw[0] += 3 * J;
	pt.idle[1] = J / 2, pt.raw[1] = J / 2, pt.errs[1] = 0;
	rig_stat(&r, 50, 50);
	assert_int_equal(vw_node_sample(n, 2 * SEC), 0);
	assert_int_equal(vw_node_close(n), SEC);
	assert_ptr_equal(vw_node_used(n, 0)->ops, &split_ops);
	assert_int_equal(pkg->idle_uj, 1 * J);
	assert_int_equal(pkg->active_uj, 3 * J);
	assert_int_equal(pkg->idle_method, VW_IDLE_SOURCE);
	assert_double_near(pkg->idle_baseline_w, 1.5, 0);
	assert_int_equal(dram->total_uj, 1 * J);
	vw_node_zone_energy(n, ze);
	assert_false(ze[VW_ZONE_PACKAGE].idle_to_node); /* the host's split: the workloads' */
	/* Stale: the model at once (2 J, its 1 W idle stays with the node). */
	pt.fresh = false;
	model.raw[0] += 2 * J;
	rig_stat(&r, 50, 50);
	assert_int_equal(vw_node_sample(n, 3 * SEC), 0);
	assert_int_equal(vw_node_close(n), SEC);
	assert_ptr_equal(vw_node_used(n, 0)->ops, &model_ops);
	assert_int_equal(pkg->total_uj, 6 * J);
	assert_int_equal(pkg->idle_uj, 2 * J);
	vw_node_zone_energy(n, ze);
	assert_true(ze[VW_ZONE_PACKAGE].idle_to_node);
	assert_int_equal(ze[VW_ZONE_PACKAGE].idle_uj, 1 * J);
	assert_int_equal(ze[VW_ZONE_DRAM].idle_uj + ze[VW_ZONE_DRAM].active_uj, 0);
	vw_node_fill_view(n, &v, zv);
	assert_int_equal(v.n_zones, 2); /* dram stays shown */
	assert_string_equal(v.zones[0].path, "vm");
	assert_int_equal(vw_node_switches(n), 1);
	/* Fresh again with 100 J it counted meanwhile: this interval still the model's; from the
	 * next on the split source's, counted from where it stands now. */
	pt.fresh = true;
	pt.idle[0] += 50 * J, pt.raw[0] += 50 * J;
	model.raw[0] += 2 * J;
	rig_stat(&r, 50, 50);
	assert_int_equal(vw_node_sample(n, 4 * SEC), 0);
	assert_int_equal(vw_node_close(n), SEC);
	assert_int_equal(pkg->total_uj, 8 * J);
	assert_int_equal(vw_node_switches(n), 2);
	pt.idle[0] += 1 * J, pt.raw[0] += 1 * J;
	rig_stat(&r, 50, 50);
	assert_int_equal(vw_node_sample(n, 5 * SEC), 0);
	assert_int_equal(vw_node_close(n), SEC);
	assert_ptr_equal(vw_node_used(n, 0)->ops, &split_ops);
	assert_int_equal(pkg->total_uj, 10 * J);
	assert_int_equal(pkg->idle_uj, 4 * J);
	assert_int_equal(pkg->active_uj, 6 * J);
	assert_int_equal(pkg->gaps, 0);
	vw_node_free(n);
	rig_free(&r);
}

/*
 * Each interval is the raw counter's wrap-safe deltas read since the last close, summed as they
 * are read (no running total): over five intervals of three reads each, with uneven deltas and
 * four wraps, every interval's energy is exactly its own reads', nothing of the one before, and
 * their sum is the counter's whole advance to the µJ.
 */
static void test_intervals_from_raw(void **state)
{
	static const uint64_t range = 1000 * J + 7; /* wraps past this */
	static const uint64_t deltas[5][3] = { { 123456789, 1, 987654321 },
					       { 400 * J + 13, 350 * J + 17, 0 },
					       { 7, 249 * J + 999999, 3 },
					       { 999 * J, 5, 11 },
					       { 42, 424242, 424242424 } };
	struct fake cpu = { .n = 1, .zi = { zone(VW_ZONE_PACKAGE, range, -1) }, .raw = { 990 * J } };
	struct vw_node_chain c = { .src = { src(&meter_ops, &cpu) }, .n = 1 };
	struct vw_node_opts o = { 0 };
	const struct vw_node_zone_view *pkg;
	uint64_t t = 10 * SEC, all = 0, before;
	struct vw_zone_energy ze[VW_ZONE__COUNT];
	struct vw_node *n;
	struct rig r;

	(void)state;
	rig_init(&r, &o);
	assert_int_equal(vw_node_new(&o, &c, 1, &n), 0);
	pkg = view_of(n, VW_ZONE_PACKAGE);
	assert_int_equal(vw_node_sample(n, t), 0); /* the baseline */
	assert_int_equal(vw_node_close(n), 0);
	assert_int_equal(pkg->total_uj, 0);
	for (size_t i = 0; i < 5; i++) {
		uint64_t sum = 0;

		for (size_t k = 0; k < 3; k++) {
			cpu.raw[0] = (cpu.raw[0] + deltas[i][k]) % range;
			sum += deltas[i][k];
			rig_stat(&r, 40, 60);
			assert_int_equal(vw_node_sample(n, t += SEC), 0);
		}
		before = pkg->total_uj;
		assert_int_equal(vw_node_close(n), 3 * SEC);
		assert_int_equal(pkg->total_uj - before, sum);
		vw_node_zone_energy(n, ze);
		assert_int_equal(ze[VW_ZONE_PACKAGE].idle_uj + ze[VW_ZONE_PACKAGE].active_uj, sum);
		all += sum;
	}
	assert_int_equal(pkg->wraps, 4);
	assert_int_equal(pkg->gaps, 0);
	assert_int_equal(pkg->total_uj, all);
	vw_node_free(n);
	rig_free(&r);
}

/* A chain's source counts from 0 when opened: the first interval it gives after a stale one
 * hands over (no rebase: it was never used) is all energy, not a baseline. */
static void test_handover_counts_first_read(void **state)
{
	struct fake pt = { .n = 1, .zi = { zone(VW_ZONE_PACKAGE, 0, -1) }, .fresh = true };
	struct fake host_model = { .n = 1, .zi = { zone(VW_ZONE_PACKAGE, 0, 0.5) }, .fresh = true };
	struct fake model = { .n = 1, .zi = { zone(VW_ZONE_PACKAGE, 0, 1.0) } };
	struct vw_node_chain c = { .src = { src(&split_ops, &pt), src(&split_ops, &host_model),
					    src(&model_ops, &model) },
				   .n = 3 };
	struct vw_node_opts o = { .zone_path = "vm", .estimated_idle_to_node = true };
	const struct vw_node_zone_view *pkg;
	struct vw_node *n;
	struct rig r;

	(void)state;
	host_model.zi[0].idle_w = 0.5;
	rig_init(&r, &o);
	assert_int_equal(vw_node_new(&o, &c, 1, &n), 0);
	pkg = view_of(n, VW_ZONE_PACKAGE);
	assert_int_equal(vw_node_sample(n, SEC), 0);
	(void)vw_node_close(n); /* the passthrough from the next interval */
	pt.idle[0] = 1 * J, pt.raw[0] = 1 * J;
	assert_int_equal(vw_node_sample(n, 2 * SEC), 0);
	(void)vw_node_close(n);
	assert_int_equal(pkg->total_uj, 2 * J);
	pt.fresh = false; /* the host's model at once, its first reading all this interval's */
	host_model.idle[0] = J / 2, host_model.raw[0] = 3 * J / 2;
	assert_int_equal(vw_node_sample(n, 3 * SEC), 0);
	(void)vw_node_close(n);
	assert_ptr_equal(vw_node_used(n, 0)->state, &host_model);
	assert_int_equal(pkg->total_uj, 4 * J);
	assert_int_equal(model.reads, 1); /* read once, on the first tick */
	vw_node_free(n);
	rig_free(&r);
}

/* power.idle-watts: ZONE=WATTS per zone kind, anything else refused. */
static void test_parse_idle_watts(void **state)
{
	const char *good[] = { "package=12.5", "dram=0", "platform=100000" };
	const char *bad[] = { "package", "gpu0=3", "package=-1", "dram=1e9", "core=x", "=3",
			      "package=nan" };
	double w[VW_ZONE__COUNT];

	(void)state;
	assert_int_equal(vw_node_parse_idle_watts(good, ARRAY_SIZE(good), w), 0);
	assert_double_near(w[VW_ZONE_PACKAGE], 12.5, 0);
	assert_double_near(w[VW_ZONE_DRAM], 0, 0);
	assert_double_near(w[VW_ZONE_PLATFORM], 100000, 0);
	assert_double_near(w[VW_ZONE_CORE], -1, 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(vw_node_parse_idle_watts(&bad[i], 1, w), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meters),
		cmocka_unit_test(test_fitted_idle),
		cmocka_unit_test(test_chain_switch),
		cmocka_unit_test(test_handover_counts_first_read),
		cmocka_unit_test(test_intervals_from_raw),
		cmocka_unit_test(test_parse_idle_watts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
