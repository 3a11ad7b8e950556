#!/bin/sh
# /init of the e2e test guest (busybox; see tests/e2e/guest-image.sh). Loads the virtio
# modules in order, starts udev and runs the docs' trigger (the /dev/virtio-ports links, and
# deploy/udev/70-virtwatt.rules: the port 0640 root:virtwatt), mounts the host's shared folder,
# brings up the user-mode network (slirp: 10.0.2.15/24, the host forwards a loopback port to
# :28282), starts the CPU burner and virtwatt-guest on the org.virtwatt.power.0 port as the
# unprivileged virtwatt user (tests/e2e/runas.c), as deploy/systemd/virtwatt-guest.service runs it.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
for m in $(cat /lib/modules/order); do
	insmod /lib/modules/$m || echo "e2e-guest: insmod $m failed"
done
for i in $(seq 50); do
	ls /sys/class/virtio-ports 2>/dev/null | grep -q vport && break
	sleep 0.1
done
# udev as a distribution's initramfs starts it (initramfs-tools' init-top/udev), then what
# docs/deploying.md has a tenant run once the rule is installed.
/lib/systemd/systemd-udevd --daemon --resolve-names=early || echo "e2e-guest: systemd-udevd failed"
udevadm trigger --subsystem-match=virtio-ports
udevadm settle --timeout=30 || echo "e2e-guest: udevadm settle failed"
port=/dev/virtio-ports/org.virtwatt.power.0
echo "e2e-guest: udev: $port -> $(readlink $port), mode $(stat -L -c '%a %u:%g' $port)"
echo "e2e-guest: user virtwatt $(id -u virtwatt):$(id -g virtwatt)"
# The unit's StateDirectory=: /var/lib/virtwatt-guest, the user's (0755).
chown virtwatt:virtwatt /var/lib/virtwatt-guest
chmod 755 /var/lib/virtwatt-guest
mkdir -p /run/virtwatt/host
mount -t 9p -o trans=virtio,version=9p2000.L,ro virtwatt /run/virtwatt/host ||
	echo "e2e-guest: 9p mount failed"
ip link set lo up
for i in $(seq 50); do [ -e /sys/class/net/eth0 ] && break; sleep 0.1; done
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2

/bin/burner &
echo "e2e-guest: ready, burner $!"
# No ASan quarantine: freed memory is returned at once, so RSS shows what the daemon keeps
# (tests/e2e/faults.py checks it stays flat).
export ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=0:allocator_release_to_os_interval_ms=500
# The shared folder as the virtwatt user reads it (this daemon reads the port, a tenant's may
# read the folder): its frame, once the host wrote one.
if grep -q ' /run/virtwatt/host 9p ' /proc/mounts; then
	(
		for i in $(seq 240); do [ -e /run/virtwatt/host/frame.json ] && break; sleep 0.5; done
		if /bin/runas virtwatt /bin/head -c 1 /run/virtwatt/host/frame.json >/dev/null; then
			echo "e2e-guest: virtwatt reads /run/virtwatt/host/frame.json: yes"
		else
			echo "e2e-guest: virtwatt reads /run/virtwatt/host/frame.json: no"
		fi
	) &
fi
# The unit's UMask=.
umask 077
# The guest daemon as the virtwatt user (no capabilities: the port's group is its only way in);
# restarted if it dies, so the console shows why. Its credentials, as the kernel has them once
# it runs virtwatt-guest, go to the console for checks.py.
while :; do
	/bin/runas virtwatt /usr/local/sbin/virtwatt-guest --web.listen-address=:28282 \
		--monitor.interval=1s --cpu.accounting=procfs --metrics.process-top-n=0 \
		--kube.node-name=e2e-guest --passthrough.path=$port \
		--state.file=/var/lib/virtwatt-guest/state.json --log.level=info &
	pid=$!
	for i in $(seq 100); do
		[ "$(readlink /proc/$pid/exe)" = /usr/local/sbin/virtwatt-guest ] && break
		sleep 0.1
	done
	echo "e2e-guest: virtwatt-guest $pid:" $(grep -E '^(Uid|Gid|Groups|CapEff|CapPrm|CapAmb):' /proc/$pid/status)
	wait $pid
	echo "e2e-guest: virtwatt-guest exited ($?)"
	sleep 1
done
