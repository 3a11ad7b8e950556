/* SPDX-License-Identifier: Apache-2.0 */
/* Every static table is complete and consistent: power and VM sources, metric families. */
#include "vw_test.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "config_fixture.h"
#include "family_tables.h"
#include "metrics.h"
#include "workloads.h"
#include "options.h"
#include "power.h"
#include "vm_source.h"

static void test_power_sources(void **state)
{
	size_t n = 0;

	(void)state;
	for (size_t i = 0; vw_host_power_sources[i]; i++, n++) {
		const struct vw_power_source_ops *o = vw_host_power_sources[i];

		assert_non_null(o->name);
		assert_non_null(o->open);
		assert_non_null(o->zones);
		assert_non_null(o->read);
		assert_non_null(o->close);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(o->name, vw_host_power_sources[j]->name);
	}
	assert_true(n >= 2);
	/* Real meters come before estimates. */
	assert_true(vw_host_power_sources[0]->measured);
	assert_false(vw_host_power_sources[n - 1]->measured);
}

static void test_vm_sources(void **state)
{
	size_t n = 0;

	(void)state;
	for (size_t i = 0; vw_vm_sources[i]; i++, n++) {
		const struct vw_vm_source_ops *o = vw_vm_sources[i];

		assert_non_null(o->name);
		assert_true(strlen(o->name) < sizeof(((struct vw_vm_info *)0)->source));
		assert_non_null(o->open);
		assert_non_null(o->list);
		assert_non_null(o->close);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(o->name, vw_vm_sources[j]->name);
	}
	/* libvirt (when built) first: its data wins the merge; the process scan catches the rest. */
	assert_int_equal(n, VW_HAVE_LIBVIRT ? 2 : 1);
	assert_ptr_equal(vw_vm_sources[n - 1], &vw_vm_procscan);
#if VW_HAVE_LIBVIRT
	assert_ptr_equal(vw_vm_sources[0], &vw_vm_libvirt);
#endif
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

static void test_host_options(void **state)
{
	(void)state;
	config_fixture_check_table(&vw_host_program);
}

/* The example configuration shipped in deploy/ loads as it is. */
static void test_example_config_loads(void **state)
{
	struct vw_host_config cfg = { 0 };

	(void)state;
	config_fixture_load_example(&vw_host_program, &cfg);
	assert_int_equal(cfg.common.interval_ns, 5 * VW_NSEC_PER_SEC);
	assert_string_equal(cfg.common.listen_address, ":28282");
	vw_config_free(&vw_host_program, &cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_sources),
		cmocka_unit_test(test_vm_sources),
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_host_options),
		cmocka_unit_test(test_example_config_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
