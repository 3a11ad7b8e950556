#!/bin/sh
# /init of the e2e test guest (busybox; see tests/e2e/guest-image.sh). Loads the virtio
# modules in order, recreates udev's /dev/virtio-ports links, mounts the host's shared folder,
# brings up the user-mode network (slirp: 10.0.2.15/24, the host forwards a loopback port to
# :28282), starts the CPU burner and virtwatt-guest on the org.virtwatt.power.0 port.
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
mkdir -p /dev/virtio-ports
for p in /sys/class/virtio-ports/*; do
	[ -e "$p/name" ] && ln -sf ../$(basename $p) /dev/virtio-ports/$(cat $p/name)
done
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
# The guest daemon; restarted if it dies, so the console shows why.
while :; do
	/bin/virtwatt-guest --web.listen-address=:28282 --monitor.interval=1s \
		--cpu.accounting=procfs --metrics.process-top-n=0 --kube.node-name=e2e-guest \
		--passthrough.path=/dev/virtio-ports/org.virtwatt.power.0 \
		--state.file=/var/lib/virtwatt-guest/state.json --log.level=info
	echo "e2e-guest: virtwatt-guest exited ($?)"
	sleep 1
done
