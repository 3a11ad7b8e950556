/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/stat and /proc/cpuinfo parsing, and the usage arithmetic built on them. */
#include "vw_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "procfs.h"

static const char stat_a[] = "cpu  100 5 50 1000 20 3 2 7 0 0\n"
			     "cpu0 50 2 25 500 10 1 1 3 0 0\n"
			     "cpu1 50 3 25 500 10 2 1 4 0 0\n"
			     "intr 12345\nctxt 999\nbtime 1700000000\n";
static const char stat_b[] = "cpu  160 5 70 1080 30 5 3 9 0 0\n"
			     "cpu0 1 1 1 1 1 1 1 1 0 0\ncpu1 1 1 1 1 1 1 1 1 0 0\n";

static void test_parse_stat(void **state)
{
	struct vw_cpu_stat a, b;

	(void)state;
	assert_int_equal(vw_procfs_parse_stat(stat_a, &a), 0);
	assert_int_equal(a.user, 100);
	assert_int_equal(a.steal, 7);
	assert_int_equal(a.ncpus, 2);
	assert_int_equal(vw_procfs_parse_stat(stat_b, &b), 0);
	/* busy: user 60 + system 20 + irq 2 + softirq 1 = 83; idle 80 + iowait 10 = 90. */
	assert_int_equal(vw_cpu_stat_busy_delta(&a, &b), 83);
	assert_int_equal(vw_cpu_stat_total_delta(&a, &b), 173);
	assert_double_near(vw_cpu_stat_usage(&a, &b), 83.0 / 173.0, 1e-12);
	/* Nothing elapsed, or counters going back (hot-unplug): 0, never negative. */
	assert_double_near(vw_cpu_stat_usage(&a, &a), 0, 0);
	assert_int_equal(vw_cpu_stat_busy_delta(&b, &a), 0);
}

static void test_parse_stat_bad(void **state)
{
	struct vw_cpu_stat s;

	(void)state;
	assert_int_equal(vw_procfs_parse_stat("", &s), -EINVAL);
	assert_int_equal(vw_procfs_parse_stat("cpu0 1 2 3 4\n", &s), -EINVAL);
	assert_int_equal(vw_procfs_parse_stat("cpu  1 2\n", &s), -EINVAL);
	assert_int_equal(vw_procfs_parse_stat("cpu  x y z w\n", &s), -EINVAL);
	/* No sign, no wrap, nothing from the next line (found by fuzz_procfs: sscanf's %llu read
	 * "-1" as 2^64 - 1, and the sums wrapped, making usage 5e13). */
	assert_int_equal(vw_procfs_parse_stat("cpu  -1 2 3 4\n", &s), -EINVAL);
	assert_int_equal(vw_procfs_parse_stat("cpu  1 2 3\n4\n", &s), -EINVAL);
	assert_int_equal(vw_procfs_parse_stat("cpu  18446744073709551616 2 3 4\n", &s), -EINVAL);
	assert_int_equal(vw_procfs_parse_stat("cpu  18446744073709551615 0 0 2 0\n", &s), 0);
	{
		struct vw_cpu_stat zero = { 0 };

		assert_int_equal(vw_cpu_stat_total_delta(&zero, &s), UINT64_MAX);
		assert_true(vw_cpu_stat_usage(&zero, &s) <= 1.0);
	}
	/* Old kernels without steal: four fields are enough. */
	assert_int_equal(vw_procfs_parse_stat("cpu  1 2 3 4\n", &s), 0);
	assert_int_equal(s.idle, 4);
	assert_int_equal(s.ncpus, 1);
}

static void test_cpuinfo(void **state)
{
	static const char text[] = "processor\t: 0\nvendor_id\t: GenuineIntel\n"
				   "model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz  \n"
				   "physical id\t: 0\ncore id\t\t: 0\n\n"
				   "processor\t: 1\nvendor_id\t: AuthenticAMD\n"
				   "model name\t: AMD EPYC 7B13\nphysical id\t: 1\ncore id\t\t: 7\n\n";
	struct vw_cpu_info *cpus = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(vw_procfs_parse_cpuinfo(text, &cpus, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(cpus[0].model_name, "Intel(R) Xeon(R) CPU @ 2.20GHz");
	assert_string_equal(cpus[1].vendor_id, "AuthenticAMD");
	assert_int_equal(cpus[1].processor, 1);
	assert_string_equal(cpus[1].physical_id, "1");
	assert_string_equal(cpus[1].core_id, "7");
	free(cpus);
	/* ARM-style cpuinfo with no vendor or model lines still lists processors. */
	assert_int_equal(vw_procfs_parse_cpuinfo("processor : 0\nBogoMIPS : 50\n", &cpus, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(cpus[0].vendor_id, "");
	free(cpus);
}

static void test_read_from_root(void **state)
{
	char *root = vw_fixture_mkdtemp("procfs");
	struct vw_cpu_info *cpus = NULL;
	struct vw_cpu_stat s;
	size_t n = 0;
	int fd;

	(void)state;
	assert_int_equal(vw_fixture_write(root, "stat", stat_a, 0), 0);
	fd = vw_root_open(root);
	assert_true(fd >= 0);
	assert_int_equal(vw_procfs_read_stat(fd, &s), 0);
	assert_int_equal(s.system, 50);
	assert_int_equal(vw_procfs_read_cpuinfo(fd, &cpus, &n), -ENOENT);
	close(fd);
	vw_fixture_rm(root);
}

/*
 * A key-value file's number (PID/status, meminfo): by its key at a line's start only. A
 * process named "VmRSS: 1" (its comm on the Name line) was read as its own RSS by strstr.
 */
static void test_field_u64(void **state)
{
	static const char status[] = "Name:\tVmRSS: 1 Uid:\t7\nUmask:\t0022\nUid:\t107\t107\t0\t0\n"
				     "VmRSS:\t    1234 kB\nVmSize:\t18446744073709551616 kB\n"
				     "VmHWM:\t kB\nVmRSSx:\t9\n";
	const char *end = NULL;
	uint64_t v = 0;

	(void)state;
	assert_int_equal(vw_procfs_field_u64(status, "VmRSS", &v, &end), 0);
	assert_int_equal(v, 1234);
	assert_string_equal(end, " kB\nVmSize:\t18446744073709551616 kB\nVmHWM:\t kB\nVmRSSx:\t9\n");
	assert_int_equal(vw_procfs_field_u64(status, "Uid", &v, &end), 0);
	assert_int_equal(v, 107);
	assert_int_equal(vw_procfs_parse_u64(&end, &v), 0); /* the effective UID after it */
	assert_int_equal(v, 107);
	assert_int_equal(vw_procfs_field_u64(status, "Name", &v, NULL), -ENODATA);
	assert_int_equal(vw_procfs_field_u64(status, "VmSize", &v, NULL), -ERANGE);
	assert_int_equal(vw_procfs_field_u64(status, "VmHWM", &v, NULL), -ENODATA);
	assert_int_equal(vw_procfs_field_u64(status, "VmRSSx", &v, NULL), 0);
	assert_int_equal(v, 9);
	assert_int_equal(vw_procfs_field_u64(status, "VmSwap", &v, NULL), -ENODATA);
	assert_int_equal(vw_procfs_field_u64("", "VmRSS", &v, NULL), -ENODATA);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_parse_stat_bad),
		cmocka_unit_test(test_cpuinfo),
		cmocka_unit_test(test_read_from_root),
		cmocka_unit_test(test_field_u64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
