/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The passthrough end to end, both modes: virtwatt-host's publisher sends a VM its energy, and
 * the guest's reader (the library virtwatt-guest uses) receives exactly that energy.
 * - Channel: the publisher connects to a unix socket as it does to QEMU's chardev; a relay
 *   standing in for QEMU and the virtio-serial port copies the bytes into a FIFO the reader
 *   opens as if it were /dev/virtio-ports/org.virtwatt.power.0.
 * - Shared folder: the reader reads <share_root>/<uuid>/ as the guest sees the mount.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"
#include "publish.h"
#include "reader.h"

#define UUID "0b5a7c1e-2d3f-4a5b-8c9d-0e1f2a3b4c5d"

struct relay {
	int listen_fd, fifo_fd;
	volatile int stop;
	pthread_t thread;
	uint64_t bytes;
};

/* QEMU's part: accept the host side of the chardev and pass every byte to the guest's port. */
static void *relay_main(void *ud)
{
	struct relay *r = ud;

	while (!r->stop) {
		int c = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		char buf[4096];
		ssize_t n;

		struct timeval tv = { 0, 200 * 1000 };

		if (c < 0)
			continue;
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (!r->stop) {
			n = read(c, buf, sizeof(buf));
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n <= 0 || write(r->fifo_fd, buf, (size_t)n) != n)
				break;
			r->bytes += (uint64_t)n;
		}
		close(c);
	}
	return NULL;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 0, 200 * 1000 };

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0)
		return -1;
	/* accept() and read() wake up now and then so the relay can stop. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The VM's energy over one interval (the publisher adds the intervals up). */
static void vm_energy(struct vw_vm_energy *e, const char *sock, uint64_t idle, uint64_t active)
{
	*e = (struct vw_vm_energy){ .n_zones = 2 };
	snprintf(e->uuid, sizeof(e->uuid), "%s", UUID);
	snprintf(e->channel_path, sizeof(e->channel_path), "%s", sock);
	e->zones[0] = (struct vw_zone_owner_energy){ VW_ZONE_PACKAGE, idle, active, 3.0, 7.0 };
	e->zones[1] = (struct vw_zone_owner_energy){ VW_ZONE_DRAM, idle / 10, active / 10, 0.3, 0.7 };
}

/* Poll the reader until it has accepted `want` frames in all (or ~3 s pass). */
static void wait_frames(struct vw_reader *rd, uint64_t want)
{
	struct vw_reader_health h;

	for (int i = 0; i < 300; i++) {
		(void)vw_reader_poll(rd);
		vw_reader_health(rd, &h);
		if (h.accepted >= want)
			return;
		usleep(10 * 1000);
	}
	fail_msg("reader accepted %" PRIu64 " frames, expected %" PRIu64, h.accepted, want);
}

static void test_channel_and_folder(void **state)
{
	char *dir = vw_fixture_mkdtemp("pt");
	char sock[256], fifo[256], share[256], vmdir[320], path[400];
	struct vw_publish_opts po = { .period_ns = VW_NSEC_PER_SEC, .energy_step_uj = 1,
				      .power_step_w = 0.001, .epoch = 42, .source = "rapl",
				      .seed = 7 };
	struct vw_reader_config port_cfg = { .vm_uuid = UUID }, folder_cfg = { .vm_uuid = UUID };
	struct vw_reader *port, *folder;
	struct vw_publisher *pub;
	struct relay relay = { 0 };
	uint64_t now = 1000 * VW_NSEC_PER_SEC, idle = 0, active = 0, dram_active = 0;

	(void)state;
	assert_non_null(dir);
	snprintf(sock, sizeof(sock), "%s/power.sock", dir);
	snprintf(fifo, sizeof(fifo), "%s/vport1p1", dir);
	snprintf(share, sizeof(share), "%s/share", dir);
	snprintf(vmdir, sizeof(vmdir), "%s/%s", share, UUID);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(share, 0755), 0);
	relay.listen_fd = listen_unix(sock);
	assert_true(relay.listen_fd >= 0);
	relay.fifo_fd = open(fifo, O_RDWR | O_CLOEXEC);
	assert_true(relay.fifo_fd >= 0);
	assert_int_equal(pthread_create(&relay.thread, NULL, relay_main, &relay), 0);

	po.share_root = share;
	pub = vw_publisher_new(&po);
	assert_non_null(pub);
	port_cfg.path = fifo;
	folder_cfg.path = vmdir;
	port = vw_reader_new(&port_cfg);
	folder = vw_reader_new(&folder_cfg);
	assert_non_null(port);
	assert_non_null(folder);

	for (uint64_t k = 1; k <= 4; k++) {
		struct vw_vm_energy e;
		bool published = false;
		const struct vw_proto_acc *acc;

		uint64_t d_idle = 3000000 * k + 1; /* odd microjoules: nothing may be rounded away */
		uint64_t d_active = 7000000 * k + 3;

		idle += d_idle; /* what the guest must read: the intervals added up */
		active += d_active;
		dram_active += d_active / 10;
		vm_energy(&e, sock, d_idle, d_active);
		assert_int_equal(vw_publisher_update(pub, &e, 1), 0);
		/* The jittered schedule publishes within 1 s +- 10 %: step past it. */
		for (int t = 0; t < 40 && !published; t++) {
			now += 50 * VW_NSEC_PER_MSEC;
			assert_int_equal(vw_publisher_tick(pub, now, &published), 0);
		}
		assert_true(published);
		for (int t = 0; t < 20; t++) { /* let the socket drain */
			usleep(5000);
			(void)vw_publisher_tick(pub, now, NULL);
		}
		wait_frames(port, k);
		wait_frames(folder, k);

		/* Both modes carry exactly the VM's energy, per zone and mode. */
		acc = vw_reader_acc(port);
		assert_int_equal(acc->zones[VW_ZONE_PACKAGE].idle_uj, idle);
		assert_int_equal(acc->zones[VW_ZONE_PACKAGE].active_uj, active);
		assert_int_equal(acc->zones[VW_ZONE_DRAM].active_uj, dram_active);
		assert_double_near(acc->zones[VW_ZONE_PACKAGE].active_w, 7.0, 1e-9);
		acc = vw_reader_acc(folder);
		assert_int_equal(acc->zones[VW_ZONE_PACKAGE].idle_uj, idle);
		assert_int_equal(acc->zones[VW_ZONE_PACKAGE].active_uj, active);
		assert_true(vw_reader_fresh(port));
		assert_int_equal(vw_reader_last(port)->seq, vw_reader_last(folder)->seq);
		assert_string_equal(vw_reader_last(port)->vm_uuid, UUID);
	}

	/* The folder's powercap tree counts the same energy (idle + active, µJ). */
	{
		char *v;

		snprintf(path, sizeof(path), "%s/intel-rapl:0/energy_uj", vmdir);
		v = vw_fixture_slurp(path, NULL);
		assert_non_null(v);
		assert_int_equal(strtoull(v, NULL, 10), idle + active);
		free(v);
	}

	relay.stop = 1;
	pthread_join(relay.thread, NULL);
	vw_reader_free(port);
	vw_reader_free(folder);
	vw_publisher_free(pub);
	close(relay.fifo_fd);
	close(relay.listen_fd);
	vw_fixture_rm(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channel_and_folder),
	};

	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
