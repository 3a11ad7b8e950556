/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The folders' worker pool (host/publish/publish_share_io.c) wakes its threads a few times a
 * round, not twice a VM: a round's work is queued without a signal per VM, the idle workers are
 * woken once by the round's wait, and a job back wakes the publisher only when it is the last
 * one waited for. pthread_cond_signal and pthread_cond_broadcast are wrapped (-Wl,--wrap) and
 * counted over rounds of 16 VMs; each VM's folder still holds the round's energy at its end.
 */
#include "vw_test.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "macro.h"
#include "publish.h"
#include "publish_input.h"

#define SEC VW_NSEC_PER_SEC
#define N_VMS 16
#define ROUNDS 4

int __real_pthread_cond_signal(pthread_cond_t *cv);
int __wrap_pthread_cond_signal(pthread_cond_t *cv);
int __real_pthread_cond_broadcast(pthread_cond_t *cv);
int __wrap_pthread_cond_broadcast(pthread_cond_t *cv);

static atomic_uint wakes; /* calls of either, from any thread */

int __wrap_pthread_cond_signal(pthread_cond_t *cv)
{
	atomic_fetch_add(&wakes, 1);
	return __real_pthread_cond_signal(cv);
}

int __wrap_pthread_cond_broadcast(pthread_cond_t *cv)
{
	atomic_fetch_add(&wakes, 1);
	return __real_pthread_cond_broadcast(cv);
}

static void test_round_wakes_few(void **state)
{
	char *root = vw_fixture_mkdtemp("wake");
	struct vw_vm_energy vms[N_VMS] = { 0 };
	struct vw_publisher *p;
	uint64_t now = 1000 * SEC;
	unsigned counted = 0;
	int fd;

	(void)state;
	assert_non_null(root);
	p = vw_publisher_new(&(struct vw_publish_opts){ .period_ns = SEC, .share_root = root,
							.epoch = 1, .seed = 1,
							.max_energy_range_uj = 1ULL << 48,
							.source = "rapl" });
	assert_non_null(p);
	for (int i = 0; i < N_VMS; i++) {
		snprintf(vms[i].uuid, sizeof(vms[i].uuid), "5a0c9e0e-7f3b-4c61-9d1e-2b7a4f6c8d%02x",
			 i);
		vms[i].n_zones = 1;
		vms[i].zones[0].zone = VW_ZONE_PACKAGE;
	}
	for (int round = 0; round < ROUNDS; round++) {
		bool pub;

		for (int i = 0; i < N_VMS; i++) {
			vms[i].zones[0].idle_uj = 1000000;
			vms[i].zones[0].active_uj = (uint64_t)(i + 1) * 1000000;
		}
		now = VW_MAX(now + SEC, vw_publisher_next_due(p));
		assert_int_equal(vw_test_publish_update(p, vms, N_VMS), 0);
		atomic_store(&wakes, 0);
		assert_int_equal(vw_publisher_tick(p, now, &pub), 0);
		assert_true(pub);
		if (round > 0) /* (the first: the root's open, the workers started) */
			counted += atomic_load(&wakes);
	}
	/* Two a round: the idle workers woken, the publisher woken by the last job back. The pool
	 * before: a signal per VM's job and a broadcast per job back, 2 x 16 a round. */
	print_message("# %u wake-ups over %d rounds of %d VMs\n", counted, ROUNDS - 1, N_VMS);
	assert_true(counted <= 2 * (ROUNDS - 1));

	/* The rounds' work was done by their end: each VM's totals in its folder. */
	fd = vw_dir_open_at(AT_FDCWD, root);
	assert_true(fd >= 0);
	for (int i = 0; i < N_VMS; i++) {
		char rel[96];
		uint64_t v;

		snprintf(rel, sizeof(rel), "%s/intel-rapl:0/energy_uj", vms[i].uuid);
		assert_int_equal(vw_read_u64_at(fd, rel, &v), 0);
		assert_int_equal(v, (uint64_t)ROUNDS * (uint64_t)(i + 2) * 1000000);
	}
	close(fd);
	vw_publisher_free(p);
	vw_fixture_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_wakes_few),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
