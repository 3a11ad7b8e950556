/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start-up pages let go (shared/core/residency.c), on this process's own mappings: a clean
 * read-only file mapping leaves the resident set and reads back the same; a mapping holding a
 * page of ours (written then made read-only, as the loader's RELRO is; a writable one; an
 * anonymous one) keeps every page and its contents.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"
#include "residency.h"

#define LEN (64 * 4096)

/* The KiB resident now of the mapping that holds p (its smaps Rss; an anonymous mapping may
 * have merged with a neighbour). */
static long rss_kib(const void *p)
{
	uintptr_t a = (uintptr_t)p, start, end;
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "re");
	bool in = false;
	long kib = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2 &&
		    strchr(line, ' ') && line[strcspn(line, " ") - 1] != ':')
			in = start <= a && a < end;
		else if (in && strncmp(line, "Rss:", 4) == 0) {
			kib = strtol(line + 4, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kib;
}

static uint64_t sum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* A file of LEN bytes of a known pattern, open for reading. */
static int pattern_file(void)
{
	char path[] = "/tmp/vw-residency-XXXXXX";
	unsigned char *buf = malloc(LEN);
	int fd = mkstemp(path);

	assert_non_null(buf);
	assert_true(fd >= 0);
	unlink(path);
	for (size_t i = 0; i < LEN; i++)
		buf[i] = (unsigned char)(i * 7 + i / 4096);
	assert_int_equal(write(fd, buf, LEN), LEN);
	free(buf);
	return fd;
}

static void touch(volatile const unsigned char *p)
{
	unsigned x = 0;

	for (size_t i = 0; i < LEN; i += 4096)
		x += p[i];
	(void)x;
}

static void test_drops_clean_keeps_ours(void **state)
{
	int fd = pattern_file(), self = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unsigned char *clean, *relro, *rw, *anon;
	uint64_t clean_sum, relro_sum, rw_sum;
	size_t kib = 0, n = 0;

	(void)state;
	assert_true(self >= 0);
	clean = mmap(NULL, LEN, PROT_READ, MAP_PRIVATE, fd, 0);
	relro = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	rw = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	anon = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(clean != MAP_FAILED && relro != MAP_FAILED && rw != MAP_FAILED &&
		    anon != MAP_FAILED);
	touch(clean);
	relro[4096] = 0xAB; /* one page of ours, as a relocation is, then read-only */
	touch(relro);
	assert_int_equal(mprotect(relro, LEN, PROT_READ), 0);
	touch(rw); /* writable: never a candidate, written or not */
	memset(anon, 0x5A, LEN);
	clean_sum = sum(clean, LEN);
	relro_sum = sum(relro, LEN);
	rw_sum = sum(rw, LEN);
	assert_int_equal(rss_kib(clean), LEN / 1024);
	assert_int_equal(rss_kib(relro), LEN / 1024);

	assert_int_equal(vw_residency_drop_startup(self, &kib, &n), 0);
	print_message("# let go: %zu KiB in %zu mappings\n", kib, n);
	assert_int_equal(rss_kib(clean), 0);
	assert_true(kib >= LEN / 1024 && n >= 1);
	assert_int_equal(rss_kib(relro), LEN / 1024);
	assert_int_equal(rss_kib(rw), LEN / 1024);
	assert_true(rss_kib(anon) >= LEN / 1024);
	/* the same bytes: the clean one from the file again, the others as they were */
	assert_true(sum(clean, LEN) == clean_sum);
	assert_int_equal(rss_kib(clean), LEN / 1024);
	assert_int_equal(relro[4096], 0xAB);
	assert_true(sum(relro, LEN) == relro_sum);
	assert_true(sum(rw, LEN) == rw_sum);
	for (size_t i = 0; i < LEN; i += 4096)
		assert_int_equal(anon[i], 0x5A);

	munmap(clean, LEN);
	munmap(relro, LEN);
	munmap(rw, LEN);
	munmap(anon, LEN);
	close(fd);
	close(self);
}

/* No procfs of our own (a fixture root): nothing done, said so. */
static void test_no_self(void **state)
{
	size_t kib = 1, n = 1;

	(void)state;
	assert_int_equal(vw_residency_drop_startup(-1, &kib, &n), -EBADF);
	assert_int_equal(kib, 1); /* untouched */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drops_clean_keeps_ours),
		cmocka_unit_test(test_no_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
