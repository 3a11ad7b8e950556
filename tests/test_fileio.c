/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmi.h"
#include "fileio.h"
#include "fixture.h"

/* A text, what parsing it returns, and the value when that is 0. */
struct parse_case {
	const char *in;
	int r;
	uint64_t v;
};

static void check_parse(const char *what, int (*parse)(const char *s, uint64_t *ret),
			const struct parse_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0;
		int r = parse(cases[i].in, &v);

		if (r != cases[i].r || (r == 0 && v != cases[i].v))
			fail_msg("%s(\"%s\"): %d, %" PRIu64 "; expected %d, %" PRIu64, what,
				 cases[i].in, r, v, cases[i].r, cases[i].v);
	}
}

static void test_parse_u64(void **state)
{
	static const struct parse_case cases[] = {
		{ "42\n", 0, 42 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE },
		{ "", -ENODATA },
		{ "  \n", -ENODATA },
		{ "-1", -EINVAL },
		{ "12abc", -EINVAL },
		{ "1 2", -EINVAL },
	};

	(void)state;
	check_parse("vw_parse_u64", vw_parse_u64, cases, ARRAY_SIZE(cases));
}

/* vw_parse_pid() with the uint64_t result check_parse() compares. */
static int parse_pid(const char *s, uint64_t *ret)
{
	uint32_t pid = 0;
	int r = vw_parse_pid(s, &pid);

	*ret = pid;
	return r;
}

/* /proc's PID names: what the process scans, the thread lists and vhost-<pid> read. */
static void test_parse_pid_and_dirs(void **state)
{
	const struct vw_fixture_root *r = *state;
	static const struct parse_case cases[] = {
		{ "1", 0, 1 },
		{ "2147483647", 0, 2147483647 },
		{ "2147483648", -EINVAL },
		{ "0", -EINVAL },
		{ "017", -EINVAL },
		{ "+5", -EINVAL },
		{ "self", -EINVAL },
		{ "", -EINVAL },
	};
	uint32_t pid = 0;
	int n = 0;
	DIR *d;
	struct dirent *de;

	check_parse("vw_parse_pid", parse_pid, cases, ARRAY_SIZE(cases));

	assert_int_equal(vw_fixture_write(r->path, "d/1/x", "", 0), 0);
	assert_int_equal(vw_fixture_write(r->path, "d/22/x", "", 0), 0);
	assert_non_null(d = vw_opendir_at(r->fd, "d"));
	while ((de = readdir(d)))
		n += vw_parse_pid(de->d_name, &pid) == 0;
	closedir(d);
	assert_int_equal(n, 2);
	errno = 0;
	assert_null(vw_opendir_at(r->fd, "none"));
	assert_int_equal(errno, ENOENT);
	assert_null(vw_opendir_at(r->fd, "d/1/x"));
	assert_int_equal(errno, ENOTDIR);
}

static void test_read_at(void **state)
{
	const struct vw_fixture_root *r = *state;
	int fd = r->fd;
	char buf[8];
	uint64_t v;

	assert_int_equal(vw_fixture_write(r->path, "a/num", "123456\n", 0), 0);
	assert_int_equal(vw_fixture_write(r->path, "a/junk", "12x\n", 0), 0);
	assert_int_equal(vw_fixture_write(r->path, "a/empty", "", 0), 0);
	assert_int_equal(vw_fixture_write(r->path, "a/long", "0123456789abcdef", 0), 0);
	assert_int_equal(vw_fixture_write(r->path, "a/name", "package-0\n", 0), 0);
	assert_int_equal(vw_read_u64_at(fd, "a/num", &v), 0);
	assert_int_equal(v, 123456);
	assert_int_equal(vw_read_u64_at(fd, "a/junk", &v), -EINVAL);
	assert_int_equal(vw_read_u64_at(fd, "a/empty", &v), -ENODATA);
	assert_int_equal(vw_read_u64_at(fd, "a/missing", &v), -ENOENT);
	assert_int_equal(vw_read_str_at(fd, "a/long", buf, sizeof(buf)), -EFBIG);
	char name[32];
	assert_int_equal(vw_read_str_at(fd, "a/name", name, sizeof(name)), 0);
	assert_string_equal(name, "package-0");
	/* A prefix read stops at the buffer, where a whole-file read refuses. */
	size_t len = 0;
	assert_int_equal(vw_read_file_at(fd, "a/long", buf, sizeof(buf), &len), -EFBIG);
	assert_int_equal(vw_read_prefix_at(fd, "a/long", buf, sizeof(buf), &len), 0);
	assert_int_equal(len, sizeof(buf) - 1);
	assert_string_equal(buf, "0123456");
	assert_int_equal(vw_read_file_at(fd, "a/num", buf, 8, &len), 0); /* exactly 7 bytes fit */
	assert_int_equal(len, 7);
}

/* Whole files of unknown length: every size around the first buffer's and its doublings. */
static void test_read_whole(void **state)
{
	const struct vw_fixture_root *r = *state;
	const size_t first = VW_READ_WHOLE_FIRST;
	const size_t sizes[] = { 0, 1, first - 2, first - 1, first, first + 1, 2 * first - 1,
				 2 * first, 5 * first + 7 };
	char *text = malloc(5 * first + 8);
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_non_null(text);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		_cleanup_free_ char *got = NULL;
		size_t len = SIZE_MAX;

		for (size_t k = 0; k < sizes[i]; k++)
			text[k] = (char)('a' + (k * 7 + i) % 26);
		text[sizes[i]] = '\0';
		assert_int_equal(vw_fixture_write(r->path, "w/file", text, 0), 0);
		assert_int_equal(vw_read_whole_at(r->fd, "w/file", 1 << 20, &got, &len), 0);
		assert_int_equal(len, sizes[i]);
		assert_string_equal(got, text);
	}
	/* The cap: a file of max bytes is read whole, one byte more is refused. */
	char *got = NULL;

	assert_int_equal(vw_read_whole_at(r->fd, "w/file", 5 * first + 6, &got, NULL), -EFBIG);
	assert_null(got);
	assert_int_equal(vw_read_whole_at(r->fd, "w/file", 2 * first, &got, NULL), -EFBIG);
	assert_int_equal(vw_read_whole_at(r->fd, "w/file", 0, &got, NULL), -EFBIG);
	assert_int_equal(vw_read_whole_at(r->fd, "w/file", 5 * first + 7, &got, NULL), 0);
	assert_string_equal(got, text);
	free(got);
	/* A file as long as a doubled buffer and as max. */
	text[2 * first] = '\0';
	assert_int_equal(vw_fixture_write(r->path, "w/file", text, 0), 0);
	assert_int_equal(vw_read_whole_at(r->fd, "w/file", 2 * first, &got, NULL), 0);
	assert_string_equal(got, text);
	free(got);
	assert_int_equal(vw_fixture_write(r->path, "w/empty", "", 0), 0);
	assert_int_equal(vw_read_whole_at(r->fd, "w/empty", 0, &got, NULL), 0);
	assert_string_equal(got, "");
	free(got);
	assert_int_equal(vw_read_whole_at(r->fd, "w/missing", 100, &got, NULL), -ENOENT);
	/* procfs: st_size 0, the length known only at the end. */
	assert_true(proc >= 0);
	assert_int_equal(vw_read_whole_at(proc, "self/status", 1 << 20, &got, NULL), 0);
	assert_non_null(strstr(got, "\nVmRSS:"));
	free(got);
	close(proc);
	free(text);
}

static void test_write_atomic(void **state)
{
	const struct vw_fixture_root *r = *state;
	int fd = r->fd;
	char buf[64];

	assert_int_equal(vw_write_file_atomic_at(fd, "f", "one", 3, 0644), 0);
	assert_int_equal(vw_write_file_atomic_at(fd, "f", "two!", 4, 0644), 0);
	assert_int_equal(vw_read_str_at(fd, "f", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "two!");
	/* A planted symlink at the temporary name is never followed. */
	assert_int_equal(vw_fixture_write(r->path, "victim", "keep", 0), 0);
	char tmpname[64];
	snprintf(tmpname, sizeof(tmpname), "g.tmp.%ld", (long)getpid());
	assert_int_equal(vw_fixture_symlink(r->path, "victim", tmpname), 0);
	assert_int_equal(vw_write_file_atomic_at(fd, "g", "new", 3, 0644), 0);
	assert_int_equal(vw_read_str_at(fd, "victim", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "keep");
}

/* mkdir -p, then open: existing parts kept, a file in the way refused. */
static void test_dir_create_open(void **state)
{
	const struct vw_fixture_root *r = *state;
	char path[1024], buf[16];
	int fd;

	snprintf(path, sizeof(path), "%s/a/b/c", r->path);
	fd = vw_dir_create_open(path);
	assert_true(fd >= 0);
	assert_int_equal(vw_write_file_atomic_at(fd, "x", "in c", 4, 0644), 0);
	close(fd);
	assert_int_equal(vw_read_str_at(r->fd, "a/b/c/x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "in c");
	fd = vw_dir_create_open(path); /* again: all there */
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vw_fixture_write(r->path, "file", "x", 0), 0);
	snprintf(path, sizeof(path), "%s/file/d", r->path);
	assert_int_equal(vw_dir_create_open(path), -ENOTDIR);
	assert_int_equal(vw_dir_create_open(""), -EINVAL);
}

/*
 * On procfs the descriptor stays open (the same one read after read, no other opened) and each
 * read is the kernel's text anew (uptime moves every 10 ms); closed, it is released.
 */
static void test_kept_procfs(void **state)
{
	struct vw_kept_file kf = VW_KEPT_FILE_INIT, whole = VW_KEPT_FILE_INIT;
	int proc = vw_root_open("/proc");
	char a[128], b[128];
	const char *text;
	size_t n0, len;
	int fd;

	(void)state;
	assert_true(proc >= 0);
	n0 = vw_fixture_open_fds(proc);
	assert_int_equal(vw_kept_file_read(&kf, proc, "uptime", a, sizeof(a), &len), 0);
	assert_int_equal(strlen(a), len);
	fd = kf.fd;
	assert_true(fd >= 0);
	assert_int_equal(vw_fixture_open_fds(proc), n0 + 1);
	usleep(30 * 1000);
	assert_int_equal(vw_kept_file_read(&kf, proc, "uptime", b, sizeof(b), NULL), 0);
	assert_int_equal(kf.fd, fd);
	assert_string_not_equal(a, b); /* read anew, from offset 0 */
	assert_true(strlen(b) > 4 && strchr(b, '.') && b[strlen(b) - 1] == '\n');
	assert_int_equal(vw_fixture_open_fds(proc), n0 + 1);
	/* Too small a buffer: -EFBIG, the descriptor kept. */
	assert_int_equal(vw_kept_file_read(&kf, proc, "uptime", b, 4, NULL), -EFBIG);
	assert_int_equal(kf.fd, fd);
	/* The whole-file form: a cap below its size refused, the descriptor kept. */
	assert_int_equal(vw_kept_file_read_whole(&whole, proc, "stat", 1 << 20, &text, &len), 0);
	fd = whole.fd;
	assert_true(fd >= 0);
	assert_true(strncmp(text, "cpu ", 4) == 0 && len == strlen(text));
	assert_int_equal(vw_kept_file_read_whole(&whole, proc, "stat", 4, &text, &len), -EFBIG);
	assert_int_equal(whole.fd, fd);
	vw_kept_file_close(&whole);
	assert_int_equal(vw_kept_file_read_whole(&whole, proc, "stat", 1 << 20, &text, &len), 0);
	assert_true(strncmp(text, "cpu ", 4) == 0 && len == strlen(text));
	vw_kept_file_close(&whole);
	vw_kept_file_close(&kf);
	assert_int_equal(kf.fd, -1);
	assert_int_equal(vw_fixture_open_fds(proc), n0);
	assert_int_equal(vw_kept_file_read(&kf, proc, "no-such-file", a, sizeof(a), NULL), -ENOENT);
	close(proc);
}

/*
 * Elsewhere (a fixture on tmpfs or ext4) nothing stays open: a file replaced by rename is read
 * as it is now, not from the replaced one's kept descriptor.
 */
static void test_kept_fixture(void **state)
{
	const struct vw_fixture_root *r = *state;
	struct vw_kept_file kf = VW_KEPT_FILE_INIT, whole = VW_KEPT_FILE_INIT;
	int proc = vw_root_open("/proc");
	const char *text;
	char buf[64];
	size_t n0, len;

	assert_true(proc >= 0);
	n0 = vw_fixture_open_fds(proc);
	assert_int_equal(vw_fixture_replace(r->path, "stat", "cpu  1 2 3 4\n"), 0);
	assert_int_equal(vw_kept_file_read(&kf, r->fd, "stat", buf, sizeof(buf), &len), 0);
	assert_string_equal(buf, "cpu  1 2 3 4\n");
	assert_int_equal(vw_kept_file_read_whole(&whole, r->fd, "stat", 100, &text, &len), 0);
	assert_int_equal(kf.fd, -1);
	assert_int_equal(whole.fd, -1);
	assert_int_equal(vw_fixture_open_fds(proc), n0);
	assert_int_equal(vw_fixture_replace(r->path, "stat", "cpu  5 6 7 8\n"), 0);
	assert_int_equal(vw_kept_file_read(&kf, r->fd, "stat", buf, sizeof(buf), &len), 0);
	assert_string_equal(buf, "cpu  5 6 7 8\n");
	assert_int_equal(vw_kept_file_read_whole(&whole, r->fd, "stat", 100, &text, &len), 0);
	assert_string_equal(text, "cpu  5 6 7 8\n");
	/* Sizes: exactly size - 1 bytes fit, size do not; max bytes whole, one more refused. */
	assert_int_equal(vw_kept_file_read(&kf, r->fd, "stat", buf, 14, &len), 0);
	assert_int_equal(len, 13);
	assert_int_equal(vw_kept_file_read(&kf, r->fd, "stat", buf, 13, &len), -EFBIG);
	assert_int_equal(vw_kept_file_read_whole(&whole, r->fd, "stat", 13, &text, &len), 0);
	assert_int_equal(vw_kept_file_read_whole(&whole, r->fd, "stat", 12, &text, &len), -EFBIG);
	/* Grown past VW_READ_WHOLE_FIRST, read on from where each pread stopped. */
	char *big = malloc(3 * VW_READ_WHOLE_FIRST + 2);

	assert_non_null(big);
	for (size_t i = 0; i <= 3 * VW_READ_WHOLE_FIRST; i++)
		big[i] = (char)('a' + i % 26);
	big[3 * VW_READ_WHOLE_FIRST + 1] = '\0';
	assert_int_equal(vw_fixture_replace(r->path, "big", big), 0);
	assert_int_equal(vw_kept_file_read_whole(&whole, r->fd, "big", 1 << 20, &text, &len), 0);
	assert_string_equal(text, big);
	assert_int_equal(vw_kept_file_read_whole(&whole, r->fd, "big", 3 * VW_READ_WHOLE_FIRST,
						 &text, &len), -EFBIG);
	free(big);
	assert_int_equal(unlinkat(r->fd, "stat", 0), 0);
	assert_int_equal(vw_kept_file_read(&kf, r->fd, "stat", buf, sizeof(buf), NULL), -ENOENT);
	vw_kept_file_close(&whole);
	vw_kept_file_close(&kf);
	assert_int_equal(vw_fixture_open_fds(proc), n0);
	close(proc);
}

/* The machine as DMI names it, from a fixture sysfs; none where there is no DMI. */
static void test_dmi_machine(void **state)
{
	char *root = vw_fixture_mkdtemp("dmi"), buf[128];
	int fd;

	(void)state;
	assert_non_null(root);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(vw_dmi_machine(fd, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(vw_fixture_write(root, "class/dmi/id/product_name", "c5.large\n", 0), 0);
	assert_int_equal(vw_dmi_machine(fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "c5.large");
	assert_int_equal(vw_fixture_write(root, "class/dmi/id/sys_vendor", "Amazon EC2\t\x01 \n", 0),
			 0);
	assert_int_equal(vw_dmi_machine(fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "Amazon EC2?? c5.large");
	close(fd);
	vw_fixture_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dmi_machine),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test_setup_teardown(test_parse_pid_and_dirs, vw_fixture_root_setup,
						vw_fixture_root_teardown),
		cmocka_unit_test_setup_teardown(test_read_at, vw_fixture_root_setup,
						vw_fixture_root_teardown),
		cmocka_unit_test_setup_teardown(test_read_whole, vw_fixture_root_setup,
						vw_fixture_root_teardown),
		cmocka_unit_test_setup_teardown(test_write_atomic, vw_fixture_root_setup,
						vw_fixture_root_teardown),
		cmocka_unit_test_setup_teardown(test_dir_create_open, vw_fixture_root_setup,
						vw_fixture_root_teardown),
		cmocka_unit_test(test_kept_procfs),
		cmocka_unit_test_setup_teardown(test_kept_fixture, vw_fixture_root_setup,
						vw_fixture_root_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
