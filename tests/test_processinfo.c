/* SPDX-License-Identifier: Apache-2.0 */
/*
 * process_* gauges: read from a fixture /proc/<pid> (exact figures), from this process's own
 * (against what the kernel says through getrusage and a file we open), and written as the
 * Prometheus client libraries write them.
 */
#include "vw_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "prom.h"
#include "processinfo.h"

static void test_fixture(void **state)
{
	const struct vw_fixture_root *root = *state;
	struct vw_processinfo s;
	double start = 0;
	int self, empty;

	assert_int_equal(vw_fixture_write(root->path, "self/status",
					  "Name:\tvirtwatt-host\nVmPeak:\t 9000 kB\nVmSize:\t"
					  "    8000 kB\nVmHWM:\t    3000 kB\nVmRSS:\t    2048 kB\n",
					  0), 0);
	for (int i = 0; i < 5; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "self/fd/%d", i);
		assert_int_equal(vw_fixture_write(root->path, rel, "", 0), 0);
	}
	self = vw_processinfo_open(root->fd, &start);
	assert_true(self >= 0);
	assert_true(start > 1.6e9); /* a Unix time, not a monotonic one */
	assert_int_equal(vw_processinfo_read(self, &s), 0);
	assert_int_equal(s.rss_bytes, 2048 * 1024);
	assert_int_equal(s.peak_rss_bytes, 3000 * 1024);
	assert_int_equal(s.vm_bytes, 8000 * 1024);
	assert_int_equal(s.open_fds, 4); /* five entries, one of them the reader's own */
	close(self);

	/* A status file without the fields: zeros and an error, nothing invented. */
	assert_int_equal(vw_fixture_write(root->path, "self/status", "garbage\n", 0), 0);
	self = vw_processinfo_open(root->fd, &start);
	assert_true(self >= 0);
	assert_int_equal(vw_processinfo_read(self, &s), -ENODATA);
	assert_int_equal(s.rss_bytes, 0);
	close(self);
	/* Values that are not a size in kB: a sign, nothing, one whose bytes overflow. */
	static const char *const bad[] = { "VmRSS:\t-5 kB\n", "VmRSS:\t kB\n", "VmRSS:",
					   "VmRSS:\t18014398509481984 kB\n" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(vw_fixture_write(root->path, "self/status", bad[i], 0), 0);
		self = vw_processinfo_open(root->fd, &start);
		assert_true(self >= 0);
		assert_int_equal(vw_processinfo_read(self, &s), -ENODATA);
		assert_int_equal(s.rss_bytes, 0);
		close(self);
	}
	assert_int_equal(vw_fixture_write(root->path, "self/status",
					  "VmSize:\t18014398509481983 kB\nVmHWM:\t0 kB\nVmRSS:\t7 kB\n",
					  0), 0);
	self = vw_processinfo_open(root->fd, &start);
	assert_int_equal(vw_processinfo_read(self, &s), 0);
	assert_int_equal(s.vm_bytes, 18014398509481983ull * 1024);
	assert_int_equal(s.rss_bytes, 7 * 1024);
	close(self);
	/* A procfs root without self (another test's fixture): no process_* at all. */
	assert_int_equal(vw_fixture_mkdir(root->path, "empty"), 0);
	empty = vw_dir_open_at(root->fd, "empty");
	assert_true(empty >= 0);
	assert_int_equal(vw_processinfo_open(empty, &start), -1);
	close(empty);
}

/* This process's descriptors as /proc/self/fd lists them, less the listing's own. */
static uint64_t listed_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	uint64_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

static void test_this_process(void **state)
{
	struct vw_processinfo a, b, c;
	struct rlimit rl;
	double start = 0;
	int procfd = vw_root_open("/proc"), self, extra[8];
	void *big;

	(void)state;
	REQUIRE(procfd >= 0, "no /proc");
	self = vw_processinfo_open(procfd, &start);
	assert_true(self >= 0);
	assert_int_equal(vw_processinfo_read(self, &a), 0);
	assert_true(a.rss_bytes > 0 && a.rss_bytes <= a.peak_rss_bytes);
	assert_true(a.vm_bytes >= a.rss_bytes);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(a.max_fds, rl.rlim_cur);

	/* Eight more descriptors and 64 MiB touched: the figures follow. */
	for (int i = 0; i < 8; i++)
		extra[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	big = malloc(64 << 20);
	assert_non_null(big);
	memset(big, 1, 64 << 20);
	assert_int_equal(vw_processinfo_read(self, &b), 0);
	assert_int_equal(b.open_fds, a.open_fds + 8);
	assert_int_equal(b.open_fds, listed_fds()); /* procfs's count (size of fd/) is exact */
	assert_true(b.rss_bytes >= a.rss_bytes + (60u << 20));
	assert_true(b.peak_rss_bytes >= b.rss_bytes);
	assert_true(a.heap_bytes > 0);
	assert_true(b.heap_bytes >= a.heap_bytes + (64u << 20));
	/* Freed: the heap says so at once, whatever the allocator keeps resident. */
	free(big);
	assert_int_equal(vw_processinfo_read(self, &c), 0);
	assert_true(c.heap_bytes + (60u << 20) <= b.heap_bytes);
	for (int i = 0; i < 8; i++)
		close(extra[i]);
	close(self);
	close(procfd);
}

/*
 * The daemon's reader: status and fd/ kept open, yet each read says what is now (procfs writes
 * status anew at a pread from 0; fd/'s size is counted at each fstat); the heap taken again
 * only once its period has passed (a fake clock).
 */
static void test_reader(void **state)
{
	struct vw_processinfo a, b, c, d;
	struct vw_processinfo_reader r;
	uint64_t now = 1000000000ull;
	double start = 0;
	int procfd = vw_root_open("/proc"), self, extra[8];
	void *big;

	(void)state;
	REQUIRE(procfd >= 0, "no /proc");
	self = vw_processinfo_open(procfd, &start);
	assert_true(self >= 0);
	vw_clock_set_fake(&now);
	vw_processinfo_reader_init(&r, self, VW_PROCESSINFO_HEAP_PERIOD_NS);
	assert_int_equal(vw_processinfo_reader_read(&r, &a), 0);
	assert_true(r.status_fd >= 0 && r.fds_fd >= 0);
	assert_int_equal(a.open_fds, listed_fds()); /* its own two descriptors are open ones */
	assert_true(a.heap_bytes > 0);

	for (int i = 0; i < 8; i++)
		extra[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	big = malloc(64 << 20);
	assert_non_null(big);
	memset(big, 1, 64 << 20);
	now += VW_PROCESSINFO_HEAP_PERIOD_NS - 1;
	assert_int_equal(vw_processinfo_reader_read(&r, &b), 0);
	assert_int_equal(b.open_fds, a.open_fds + 8);
	assert_int_equal(b.open_fds, listed_fds());
	assert_true(b.rss_bytes >= a.rss_bytes + (60u << 20)); /* status read anew */
	assert_int_equal(b.heap_bytes, a.heap_bytes);           /* within the period: kept */
	now += 1;
	assert_int_equal(vw_processinfo_reader_read(&r, &c), 0);
	assert_true(c.heap_bytes >= a.heap_bytes + (64u << 20)); /* the period passed: taken */
	free(big);
	for (int i = 0; i < 8; i++)
		close(extra[i]);
	now += 1;
	assert_int_equal(vw_processinfo_reader_read(&r, &d), 0);
	assert_int_equal(d.open_fds, a.open_fds);
	assert_int_equal(d.heap_bytes, c.heap_bytes);
	now += VW_PROCESSINFO_HEAP_PERIOD_NS;
	assert_int_equal(vw_processinfo_reader_read(&r, &d), 0);
	assert_true(d.heap_bytes + (60u << 20) <= c.heap_bytes);

	/* Closed: its descriptors go, and a read opens them again. */
	vw_processinfo_reader_close(&r);
	assert_int_equal(r.status_fd, -1);
	assert_int_equal(r.fds_fd, -1);
	assert_int_equal(listed_fds(), a.open_fds - 2);
	assert_int_equal(vw_processinfo_reader_read(&r, &d), 0);
	assert_int_equal(d.open_fds, a.open_fds);
	vw_processinfo_reader_close(&r);
	vw_clock_set_fake(NULL);
	close(self);
	close(procfd);
}

/* On a fixture (a plain file, rewritten in place): the kept status follows its content; fd/ is
 * listed again each read (not procfs: its size is no count), less nothing (its own descriptor
 * is an open one). */
static void test_reader_fixture(void **state)
{
	const struct vw_fixture_root *root = *state;
	struct vw_processinfo_reader r;
	struct vw_processinfo s;
	double start = 0;
	int self;

	assert_int_equal(vw_fixture_write(root->path, "self/status", "VmSize:\t 8 kB\nVmHWM:\t"
					  " 3 kB\nVmRSS:\t 2 kB\n", 0), 0);
	for (int i = 0; i < 3; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "self/fd/%d", i);
		assert_int_equal(vw_fixture_write(root->path, rel, "", 0), 0);
	}
	self = vw_processinfo_open(root->fd, &start);
	assert_true(self >= 0);
	vw_processinfo_reader_init(&r, self, 0);
	assert_int_equal(vw_processinfo_reader_read(&r, &s), 0);
	assert_int_equal(s.rss_bytes, 2 * 1024);
	assert_int_equal(s.open_fds, 3);
	assert_int_equal(vw_fixture_write(root->path, "self/status", "VmSize:\t 9 kB\nVmHWM:\t"
					  " 5 kB\nVmRSS:\t 4 kB\n", 0), 0);
	assert_int_equal(vw_fixture_write(root->path, "self/fd/3", "", 0), 0);
	assert_int_equal(vw_processinfo_reader_read(&r, &s), 0);
	assert_int_equal(s.rss_bytes, 4 * 1024);
	assert_int_equal(s.peak_rss_bytes, 5 * 1024);
	assert_int_equal(s.vm_bytes, 9 * 1024);
	assert_int_equal(s.open_fds, 4);
	/* Shorter now: nothing of the longer text before it is left. */
	assert_int_equal(vw_fixture_write(root->path, "self/status", "garbage\n", 0), 0);
	assert_int_equal(vw_processinfo_reader_read(&r, &s), -ENODATA);
	assert_int_equal(s.rss_bytes, 0);
	vw_processinfo_reader_close(&r);
	close(self);
}

static void test_written(void **state)
{
	struct vw_processinfo s = { .rss_bytes = 5 << 20, .peak_rss_bytes = 7 << 20,
				 .vm_bytes = 1 << 30, .heap_bytes = 3 << 20, .open_fds = 12,
				 .max_fds = 1024,
				 .start_time_s = 1700000000.5 };
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *text = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(vw_processinfo_write(w, &s), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	assert_non_null(strstr(text, "# TYPE process_resident_memory_bytes gauge\n"
				     "process_resident_memory_bytes 5242880\n"));
	assert_non_null(strstr(text, "\nvirtwatt_process_peak_resident_memory_bytes 7340032\n"));
	assert_non_null(strstr(text, "\nprocess_virtual_memory_bytes 1073741824\n"));
	assert_non_null(strstr(text, "# TYPE virtwatt_process_heap_inuse_bytes gauge\n"
				     "virtwatt_process_heap_inuse_bytes 3145728\n"));
	assert_non_null(strstr(text, "\nprocess_open_fds 12\n"));
	assert_non_null(strstr(text, "\nprocess_max_fds 1024\n"));
	assert_non_null(strstr(text, "\nprocess_start_time_seconds 1700000000.5\n"));
	free(text);
	vw_prom_writer_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fixture, vw_fixture_root_setup,
						vw_fixture_root_teardown),
		cmocka_unit_test(test_this_process),
		cmocka_unit_test(test_written),
		cmocka_unit_test(test_reader),
		cmocka_unit_test_setup_teardown(test_reader_fixture, vw_fixture_root_setup,
						vw_fixture_root_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
