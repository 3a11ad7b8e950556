/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VMs by UUID (host/vm/vm_index.c) and the lists built with it: the registry's merge of its
 * sources (vm_source.c) and the process scan's (vm_procscan.c), at 1,000 VMs, with names shared
 * between VMs, a UUID listed twice and a VM whose UUID changes.
 */
#include "vw_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "vm_fixture.h"
#include "vm_index.h"
#include "vm_priv.h"

#define N 1000

/* VM i's UUID: distinct for distinct i, all sharing their first 24 characters. */
static void uuid_of(unsigned i, char out[VW_UUID_LEN])
{
	snprintf(out, VW_UUID_LEN, "6f0d3c2a-1b2c-4d5e-8f90-%012x", i * 7919u);
}

static struct vw_vm_info *vms_new(size_t n)
{
	struct vw_vm_info *v = calloc(n, sizeof(*v));

	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		uuid_of((unsigned)i, v[i].uuid);
		snprintf(v[i].name, sizeof(v[i].name), "%s", i % 2 ? "web" : "db"); /* shared */
		v[i].state = VW_VM_RUNNING;
	}
	return v;
}

static void test_index(void **state)
{
	struct vw_vm_index x = { 0 };
	struct vw_vm_info *v = vms_new(N), *moved;
	char u[VW_UUID_LEN];

	(void)state;
	assert_int_equal(vw_vm_index_find(&x, v, v[0].uuid), -1); /* empty, never sized */
	for (size_t i = 0; i < N; i++)
		assert_int_equal(vw_vm_index_add(&x, v, i), 0);
	assert_int_equal(x.n, N);
	assert_true(x.cap >= 2 * N);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(vw_vm_index_find(&x, v, v[i].uuid), (ptrdiff_t)i);
	for (unsigned i = N; i < 3 * N; i++) { /* never added */
		uuid_of(i, u);
		assert_int_equal(vw_vm_index_find(&x, v, u), -1);
	}
	assert_int_equal(vw_vm_index_find(&x, v, ""), -1);
	assert_int_equal(vw_vm_index_find(&x, v, "web"), -1); /* a name is no UUID */

	/* The array moved (grown elsewhere): positions, not pointers, were kept. */
	moved = malloc(N * sizeof(*moved));
	assert_non_null(moved);
	memcpy(moved, v, N * sizeof(*v));
	memset(v, 0, N * sizeof(*v));
	for (size_t i = 0; i < N; i += 37)
		assert_int_equal(vw_vm_index_find(&x, moved, moved[i].uuid), (ptrdiff_t)i);

	/* VM 5's UUID changes: the old one names nothing, whatever its slot held. */
	memcpy(u, moved[5].uuid, VW_UUID_LEN);
	uuid_of(5000, moved[5].uuid);
	assert_int_equal(vw_vm_index_find(&x, moved, u), -1);
	vw_vm_index_clear(&x);
	assert_int_equal(x.n, 0);
	assert_int_equal(vw_vm_index_find(&x, moved, moved[0].uuid), -1);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(vw_vm_index_add(&x, moved, i), 0);
	assert_int_equal(vw_vm_index_find(&x, moved, moved[5].uuid), 5);
	assert_int_equal(vw_vm_index_find(&x, moved, u), -1);
	vw_vm_index_free(&x);
	assert_null(x.slot);
	free(moved);
	free(v);
}

/* ---- The registry's merge: two static sources, 1,000 VMs each ---- */

static struct vw_vm_info *src_vms[2];
static size_t src_n[2];

static int src_open(const struct vw_vm_env *env, void **ret)
{
	(void)env;
	*ret = NULL;
	return 0;
}

static int src_list(int which, struct vw_vm_info **ret, size_t *ret_n)
{
	*ret = malloc((src_n[which] ? src_n[which] : 1) * sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, src_vms[which], src_n[which] * sizeof(**ret));
	*ret_n = src_n[which];
	return 0;
}

static int src_list0(void *s, struct vw_vm_info **ret, size_t *ret_n)
{
	(void)s;
	return src_list(0, ret, ret_n);
}

static int src_list1(void *s, struct vw_vm_info **ret, size_t *ret_n)
{
	(void)s;
	return src_list(1, ret, ret_n);
}

static void src_close(void *s)
{
	(void)s;
}

static size_t count_uuid(const struct vw_vm_info *v, size_t n, const char *uuid)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += strcmp(v[i].uuid, uuid) == 0;
	return k;
}

static void test_merge(void **state)
{
	static const struct vw_vm_source_ops s0 = { "first", src_open, src_list0, src_close };
	static const struct vw_vm_source_ops s1 = { "second", src_open, src_list1, src_close };
	static const struct vw_vm_source_ops *const sources[] = { &s0, &s1, NULL };
	struct vw_vm_env env = { .procfs_fd = 0 };
	struct vw_vms *reg;
	struct vw_vm_info *v, *a, *b;
	char old[VW_UUID_LEN];
	size_t n;

	(void)state;
	/* The preferred source: 1,000 VMs, VM 7 listed twice (its second entry knows its PID),
	 * no PIDs otherwise. */
	a = src_vms[0] = vms_new(N + 1);
	src_n[0] = N + 1;
	a[N] = a[7];
	a[N].qemu_pid = 7007;
	snprintf(a[N].name, sizeof(a[N].name), "second-entry");
	/* The other: the same VMs in reverse order with PIDs, and 10 of its own (the same names). */
	b = src_vms[1] = calloc(N + 10, sizeof(*b));
	assert_non_null(b);
	src_n[1] = N + 10;
	for (size_t i = 0; i < N; i++) {
		b[i] = a[N - 1 - i];
		b[i].qemu_pid = (uint32_t)(10000 + N - 1 - i);
		snprintf(b[i].source, sizeof(b[i].source), "second");
	}
	for (size_t i = 0; i < 10; i++) {
		uuid_of((unsigned)(N + i), b[N + i].uuid);
		snprintf(b[N + i].name, sizeof(b[N + i].name), "web");
		b[N + i].qemu_pid = (uint32_t)(20000 + i);
	}
	reg = vw_vms_open_with(&env, sources);
	assert_non_null(reg);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(vw_vms_list(reg, &v, &n), 0);
		assert_int_equal(n, N + 10);
		/* The preferred source's order, then the other's new VMs in its order. */
		for (size_t i = 0; i < N; i++) {
			assert_string_equal(v[i].uuid, a[i].uuid);
			assert_string_equal(v[i].name, a[i].name); /* the first entry's */
			/* What it lacked: VM 7's from its own second entry, the rest from the
			 * other source. */
			assert_int_equal(v[i].qemu_pid, i == 7 ? 7007 : 10000 + i);
			assert_string_equal(v[i].source, "");
		}
		for (size_t i = 0; i < 10; i++) {
			assert_string_equal(v[N + i].uuid, b[N + i].uuid);
			assert_int_equal(v[N + i].qemu_pid, 20000 + i);
		}
		free(v);
	}

	/* VM 3's UUID changes in the preferred source, not yet in the other: two VMs, the new
	 * one first, the old one the other's alone; then both agree: one again. */
	memcpy(old, a[3].uuid, VW_UUID_LEN);
	uuid_of(9999, a[3].uuid);
	assert_int_equal(vw_vms_list(reg, &v, &n), 0);
	assert_int_equal(n, N + 11);
	assert_string_equal(v[3].uuid, a[3].uuid);
	assert_int_equal(v[3].qemu_pid, 0); /* nobody else knows it */
	assert_int_equal(count_uuid(v, n, old), 1);
	assert_int_equal(count_uuid(v, n, a[3].uuid), 1);
	free(v);
	memcpy(b[N - 1 - 3].uuid, a[3].uuid, VW_UUID_LEN);
	assert_int_equal(vw_vms_list(reg, &v, &n), 0);
	assert_int_equal(n, N + 10);
	assert_int_equal(count_uuid(v, n, old), 0);
	assert_int_equal(v[3].qemu_pid, 10003);

	/* A shorter list in another order: every VM found again, none from the last round. */
	free(v);
	src_n[0] = N / 2;
	for (size_t i = 0; i < N / 2; i++) {
		struct vw_vm_info t = a[i];

		a[i] = a[N - 1 - i];
		a[N - 1 - i] = t;
	}
	src_n[1] = 0;
	assert_int_equal(vw_vms_list(reg, &v, &n), 0);
	assert_int_equal(n, N / 2);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(v[i].uuid, a[i].uuid);
		assert_int_equal(count_uuid(v, n, a[i].uuid), 1);
	}
	free(v);
	vw_vms_close(reg);
	free(a);
	free(b);
}

/* ---- The process scan: 1,000 QEMUs, some restarted under their UUID ---- */

static void test_procscan(void **state)
{
	char *root = vw_fixture_mkdtemp("vmindex");
	struct vw_vm_env env = { 0 };
	struct vw_vm_info *v;
	void *src;
	size_t n;

	(void)state;
	/* QEMU i < 900 runs VM i; QEMUs 900..999 run VMs 800..899 started again (younger). */
	for (unsigned i = 0; i < N; i++) {
		char u[VW_UUID_LEN], argv[256];

		uuid_of(i < 900 ? i : i - 100, u);
		snprintf(argv, sizeof(argv), "qemu-system-x86_64|-uuid|%s|-name|%s", u,
			 i % 2 ? "web" : "db");
		assert_int_equal(vm_fixture_proc(root, 1000 + i, 100 + i, argv, NULL, NULL), 0);
	}
	env.procfs_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(env.procfs_fd >= 0);
	assert_int_equal(vw_vm_procscan.open(&env, &src), 0);
	assert_int_equal(vw_vm_procscan.list(src, &v, &n), 0);
	assert_int_equal(n, 900);
	for (unsigned k = 0; k < 900; k++) {
		char u[VW_UUID_LEN];
		size_t at = n;

		uuid_of(k, u);
		for (size_t i = 0; i < n; i++)
			if (strcmp(v[i].uuid, u) == 0) {
				assert_int_equal(at, n); /* once */
				at = i;
			}
		assert_true(at < n);
		assert_int_equal(v[at].qemu_pid, k >= 800 && k < 900 ? 1000 + k + 100 : 1000 + k);
		assert_int_equal(v[at].state, VW_VM_RUNNING);
	}
	free(v);

	/* VMs 0..99's QEMUs exit, and VM 800's young one (its old one still runs): VMs 0..99
	 * are reported stopped once, with their UUIDs; VM 800 runs on in its old QEMU. */
	for (unsigned i = 0; i < 100; i++)
		assert_int_equal(vm_fixture_kill(root, 1000 + i), 0);
	assert_int_equal(vm_fixture_kill(root, 1900), 0);
	assert_int_equal(vw_vm_procscan.list(src, &v, &n), 0);
	assert_int_equal(n, 900);
	for (size_t i = 0; i < n; i++) {
		char u[VW_UUID_LEN];

		if (v[i].state == VW_VM_SHUTOFF) {
			unsigned k = v[i].qemu_pid - 1000;

			assert_true(k < 100);
			uuid_of(k, u);
			assert_string_equal(v[i].uuid, u);
		} else {
			assert_true(v[i].qemu_pid >= 1100);
		}
		if (v[i].qemu_pid == 1800)
			assert_int_equal(v[i].state, VW_VM_RUNNING);
	}
	free(v);
	assert_int_equal(vw_vm_procscan.list(src, &v, &n), 0);
	assert_int_equal(n, 800);
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_procscan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
