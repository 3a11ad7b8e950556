/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"

static void test_parse_u64(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(vw_parse_u64("42\n", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(vw_parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(vw_parse_u64("18446744073709551616", &v), -ERANGE);
	assert_int_equal(vw_parse_u64("", &v), -ENODATA);
	assert_int_equal(vw_parse_u64("  \n", &v), -ENODATA);
	assert_int_equal(vw_parse_u64("-1", &v), -EINVAL);
	assert_int_equal(vw_parse_u64("12abc", &v), -EINVAL);
	assert_int_equal(vw_parse_u64("1 2", &v), -EINVAL);
}

/* /proc's PID names: what the process scans, the thread lists and vhost-<pid> read. */
static void test_parse_pid_and_dirs(void **state)
{
	char *root = vw_fixture_mkdtemp("pid");
	uint32_t pid = 0;
	int fd, n = 0;
	DIR *d;
	struct dirent *de;

	(void)state;
	assert_int_equal(vw_parse_pid("1", &pid), 0);
	assert_int_equal(pid, 1);
	assert_int_equal(vw_parse_pid("2147483647", &pid), 0);
	assert_int_equal(vw_parse_pid("2147483648", &pid), -EINVAL);
	assert_int_equal(vw_parse_pid("0", &pid), -EINVAL);
	assert_int_equal(vw_parse_pid("017", &pid), -EINVAL);
	assert_int_equal(vw_parse_pid("+5", &pid), -EINVAL);
	assert_int_equal(vw_parse_pid("self", &pid), -EINVAL);
	assert_int_equal(vw_parse_pid("", &pid), -EINVAL);

	assert_int_equal(vw_fixture_write(root, "d/1/x", "", 0), 0);
	assert_int_equal(vw_fixture_write(root, "d/22/x", "", 0), 0);
	fd = vw_root_open(root);
	assert_true(fd >= 0);
	assert_non_null(d = vw_opendir_at(fd, "d"));
	while ((de = readdir(d)))
		n += vw_parse_pid(de->d_name, &pid) == 0;
	closedir(d);
	assert_int_equal(n, 2);
	errno = 0;
	assert_null(vw_opendir_at(fd, "none"));
	assert_int_equal(errno, ENOENT);
	assert_null(vw_opendir_at(fd, "d/1/x"));
	assert_int_equal(errno, ENOTDIR);
	close(fd);
	vw_fixture_rm(root);
}

static void test_read_at(void **state)
{
	char *root = vw_fixture_mkdtemp("fileio");
	char buf[8];
	uint64_t v;
	int fd;

	(void)state;
	assert_non_null(root);
	assert_int_equal(vw_fixture_write(root, "a/num", "123456\n", 0), 0);
	assert_int_equal(vw_fixture_write(root, "a/junk", "12x\n", 0), 0);
	assert_int_equal(vw_fixture_write(root, "a/empty", "", 0), 0);
	assert_int_equal(vw_fixture_write(root, "a/long", "0123456789abcdef", 0), 0);
	assert_int_equal(vw_fixture_write(root, "a/name", "package-0\n", 0), 0);
	fd = vw_root_open(root);
	assert_true(fd >= 0);
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
	close(fd);
	vw_fixture_rm(root);
}

static void test_write_atomic(void **state)
{
	char *root = vw_fixture_mkdtemp("fileio");
	char buf[64];
	int fd;

	(void)state;
	fd = open(root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(vw_write_file_atomic_at(fd, "f", "one", 3, 0644), 0);
	assert_int_equal(vw_write_file_atomic_at(fd, "f", "two!", 4, 0644), 0);
	assert_int_equal(vw_read_str_at(fd, "f", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "two!");
	/* A planted symlink at the temporary name is never followed. */
	assert_int_equal(vw_fixture_write(root, "victim", "keep", 0), 0);
	char tmpname[64];
	snprintf(tmpname, sizeof(tmpname), "g.tmp.%ld", (long)getpid());
	assert_int_equal(vw_fixture_symlink(root, "victim", tmpname), 0);
	assert_int_equal(vw_write_file_atomic_at(fd, "g", "new", 3, 0644), 0);
	assert_int_equal(vw_read_str_at(fd, "victim", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "keep");
	close(fd);
	vw_fixture_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_parse_pid_and_dirs),
		cmocka_unit_test(test_read_at),
		cmocka_unit_test(test_write_atomic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
