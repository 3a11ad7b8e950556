/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every static table is complete and consistent: power and VM sources, CPU accountants, metric
 * families.
 */
#include "vw_test.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "config_fixture.h"
#include "cpu_account.h"
#include "family_tables.h"
#include "metrics.h"
#include "workloads.h"
#include "options.h"
#include "power.h"
#include "vm_source.h"

#define MAX_ENTRIES 16 /* in one registry */

/* The entries of one registry (a NULL-terminated array of ops) seen so far. */
struct registry {
	const char *what; /* "power source" */
	const char *names[MAX_ENTRIES];
	size_t n;
};

/*
 * The registry's next entry: a name, unlike every earlier entry's, and no hook missing (missing:
 * the name of the first hook that is not set, or NULL).
 */
static void registry_add(struct registry *r, const char *name, const char *missing)
{
	if (!name)
		fail_msg("%s %zu has no name", r->what, r->n);
	if (missing)
		fail_msg("%s %s: no %s hook", r->what, name, missing);
	for (size_t j = 0; j < r->n; j++)
		if (strcmp(name, r->names[j]) == 0)
			fail_msg("%s %s twice", r->what, name);
	assert_true(r->n < MAX_ENTRIES);
	r->names[r->n++] = name;
}

/* The first hook an entry lacks, or NULL. */
static const char *power_source_missing(const struct vw_power_source_ops *o)
{
	return !o->open    ? "open"
	       : !o->zones ? "zones"
	       : !o->read  ? "read"
	       : !o->close ? "close"
			   : NULL;
}

static const char *vm_source_missing(const struct vw_vm_source_ops *o)
{
	return !o->open ? "open" : !o->list ? "list" : !o->close ? "close" : NULL;
}

static const char *accountant_missing(const struct vw_cpu_account_ops *o)
{
	return !o->open ? "open" : !o->read ? "read" : !o->close ? "close" : NULL;
}

static void test_power_sources(void **state)
{
	struct registry r = { .what = "power source" };

	(void)state;
	for (const struct vw_power_source_ops *const *o = vw_host_power_sources; *o; o++)
		registry_add(&r, (*o)->name, power_source_missing(*o));
	assert_true(r.n >= 2);
	/* Real meters come before estimates. */
	assert_true(vw_host_power_sources[0]->measured);
	assert_false(vw_host_power_sources[r.n - 1]->measured);
	/* Platform meters: real meters only, named apart from the CPU zones' sources. */
	for (const struct vw_power_source_ops *const *o = vw_host_platform_sources; *o; o++) {
		registry_add(&r, (*o)->name, power_source_missing(*o));
		assert_true((*o)->measured);
	}
}

static void test_vm_sources(void **state)
{
	struct registry r = { .what = "VM source" };

	(void)state;
	for (const struct vw_vm_source_ops *const *o = vw_vm_sources; *o; o++) {
		registry_add(&r, (*o)->name, vm_source_missing(*o));
		/* It fits the VM's `source` label. */
		assert_true(strlen((*o)->name) < sizeof(((struct vw_vm_info *)0)->source));
	}
	/* libvirt (when built) first: its data wins the merge; the process scan catches the rest. */
	assert_int_equal(r.n, VW_HAVE_LIBVIRT ? 2 : 1);
	assert_ptr_equal(vw_vm_sources[r.n - 1], &vw_vm_procscan);
#if VW_HAVE_LIBVIRT
	assert_ptr_equal(vw_vm_sources[0], &vw_vm_libvirt);
#endif
}

static void test_cpu_accountants(void **state)
{
	struct registry r = { .what = "CPU accountant" };

	(void)state;
	for (const struct vw_cpu_account_ops *const *o = vw_cpu_accountants; *o; o++)
		registry_add(&r, (*o)->name, accountant_missing(*o));
	/* Measured in the kernel first, the procfs scan last. */
	assert_int_equal(r.n, VW_HAVE_BPF ? 2 : 1);
	if (VW_HAVE_BPF)
		assert_string_equal(vw_cpu_accountants[0]->name, "bpf");
	assert_string_equal(vw_cpu_accountants[r.n - 1]->name, "procfs");
}

static bool valid_name(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

/* Every family of every table: a valid name with a known prefix, help, counters and only
 * counters ending in _total, valid labels, and no name twice across all tables. */
static void test_families(void **state)
{
	const struct vw_family_table *t;
	size_t seen = 0;

	(void)state;
	for (size_t k = 0; (t = vw_all_family_tables[k]); k++) {
		assert_non_null(t->producer);
		assert_non_null(strstr(t->producer, ".c: "));
		assert_non_null(t->daemons);
		assert_true(t->n > 0);
		for (size_t i = 0; i < t->n; i++, seen++) {
			const struct vw_metric_family *f = &t->families[i];
			size_t len = strlen(f->name);
			bool total = len > 6 && strcmp(f->name + len - 6, "_total") == 0;

			assert_true(valid_name(f->name));
			if (strncmp(f->name, "kepler_", 7) != 0 &&
			    strncmp(f->name, "virtwatt_", 9) != 0 && strncmp(f->name, "process_", 8) != 0)
				fail_msg("%s: neither kepler_, virtwatt_ nor process_", f->name);
			assert_non_null(f->help);
			assert_true(f->help[0] != '\0');
			/* Counters and only counters end in _total. */
			assert_int_equal(total, f->type == VW_METRIC_COUNTER);
			for (size_t j = 0; f->labels && f->labels[j]; j++) {
				assert_true(valid_name(f->labels[j]));
				assert_false(strncmp(f->labels[j], "__", 2) == 0);
			}
			for (size_t kk = 0; kk <= k; kk++)
				for (size_t j = 0; j < (kk == k ? i : vw_all_family_tables[kk]->n); j++)
					if (strcmp(f->name, vw_all_family_tables[kk]->families[j].name) == 0)
						fail_msg("%s twice", f->name);
		}
	}
	assert_true(seen >= vw_host_family_table.n + vw_workload_family_table.n);
}

/* The example configuration shipped in deploy/ loads as it is. */
static void test_example_config_loads(void **state)
{
	struct vw_host_config cfg = { 0 };

	(void)state;
	config_fixture_load_example(vw_host_program(), &cfg);
	config_fixture_check_example_common(&cfg.common);
	vw_config_free(vw_host_program(), &cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_sources),
		cmocka_unit_test(test_vm_sources),
		cmocka_unit_test(test_cpu_accountants),
		cmocka_unit_test(test_families),
		vw_unit_test_case("test_host_options", config_fixture_test_table, NULL, NULL,
				  vw_host_program()),
		cmocka_unit_test(test_example_config_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
