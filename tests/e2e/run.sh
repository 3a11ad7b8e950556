#!/usr/bin/env bash
# End-to-end test (issue #7): a real VM under a real libvirtd, virtwatt-host on a powercap
# fixture fed at a known wattage, virtwatt-guest inside the VM, and a real Prometheus.
#   tests/e2e/run.sh [BUILD_DIR [checks|faults|lifecycle]]  (meson: suites 'e2e', 'faults'; root)
# "checks" (the default) runs tests/e2e/checks.py; "faults" runs the fault campaign of issue #11,
# tests/e2e/faults.py, on the same set-up with these differences: the meter wraps every 2^32 uJ,
# the shared folders live on an 8 MiB tmpfs (so it can be filled), virtwatt-host polls a fake
# kubelet that faults.py serves, and ASan keeps no quarantine (so RSS means what is kept).
# "lifecycle" runs tests/e2e/lifecycle.py (virsh suspend/resume, save/restore, reset) alone; the
# domain restarts on a reset there (elsewhere a reboot, e.g. a guest panic, ends it).
#
# 1. The guest image (tests/e2e/guest-image.sh): a Debian kernel extracted from its package,
#    busybox, virtwatt-guest with its libraries (run as the virtwatt user), udev with
#    deploy/udev/70-virtwatt.rules, a CPU burner; cached in BUILD_DIR/e2e-cache.
# 2. virtlogd + libvirtd in a mount namespace of their own whose /etc/libvirt, /run/libvirt and
#    /var/{lib,cache,log}/libvirt are directories of a temporary work dir (the approach of
#    tests/test_vm_integration.c): a host libvirtd is neither seen nor disturbed.
# 3. A TCG domain with the org.virtwatt.power.0 channel, the VM's shared folder (9p, read-only)
#    and a user-mode network forwarding a 127.0.0.1 port to the guest's :28282.
# 4. tests/e2e/feeder.py advances sys/class/powercap/intel-rapl:0/energy_uj at E2E_WATTS and
#    keeps the test BMC (tests/redfish/bmc.py: DMTF's mockup over HTTPS, the platform zone) at
#    E2E_PLATFORM_WATTS; virtwatt-host reads both (--host.sysfs; the BMC through a Kepler BMC
#    file with a password file and the BMC's CA), the real /proc (BPF accounting), the private
#    libvirtd.
# 5. Prometheus on 127.0.0.1 scraping both; tests/e2e/checks.py runs the checks (TAP).
# Everything is stopped and removed on exit (VW_KEEP_WORK=1 keeps the work dir).
set -uo pipefail

src=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$src/../.." && pwd)
build=$(realpath "${1:-$root/build}")
mode=${2:-checks}
case $mode in checks | faults | lifecycle) ;; *) echo "usage: $0 [BUILD_DIR [checks|faults|lifecycle]]" >&2; exit 2 ;; esac
export E2E_WATTS=${E2E_WATTS:-40}
export E2E_PLATFORM_WATTS=${E2E_PLATFORM_WATTS:-100} # the BMC's power: the platform zone
t_start=$(date +%s)

# Not runnable here: a TAP skip, except under CI=true where it is a failure.
skip() {
	if [ "${CI:-}" = "true" ]; then
		echo "not ok 1 - e2e cannot run: $1"
		echo "1..1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}
note() { sed 's/^/# /'; }

[ "$(id -u)" -eq 0 ] || skip "needs root (libvirtd with the qemu driver, mount namespaces, BPF)"
tools=(libvirtd virtlogd virsh qemu-system-x86_64 prometheus promtool busybox modprobe depmod
	python3 curl unshare apt-get dpkg cc useradd openssl nsenter)
have_tools() {
	for t in "${tools[@]}"; do
		command -v "$t" >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v "$t" >/dev/null ||
			return 1
	done
}
export PATH=$PATH:/usr/sbin:/sbin
if ! have_tools; then
	"$root/deploy/install-deps.sh" --test 2>&1 | note
	have_tools || skip "a tool is missing (${tools[*]}) and deploy/install-deps.sh --test could not install it"
fi
host_bin="$build/host/virtwatt-host"
[ -x "$host_bin" ] && [ -x "$build/guest/virtwatt-guest" ] || skip "no build in $build"

# ---- Work dir and cleanup ----
work=$(mktemp -d /tmp/vw-e2e.XXXXXX)
chmod 755 "$work"
uuid=$(cat /proc/sys/kernel/random/uuid)
name="vw-e2e-$$"
uri_rw="qemu:///system?socket=$work/sock/libvirt-sock"
uri_ro="qemu:///system?socket=$work/sock/libvirt-sock-ro"
pids_file="$work/pids" # every process started, for the cleanup check
: >"$pids_file"
# Each of them with its start time (/proc/PID/stat field 22), taken while it runs: on a busy
# machine a PID freed mid-run (the host's first daemon) is soon another's (another test's
# "spawn_idle" failed the cleanup check), and that process is not ours.
cat >"$work/stamp.sh" <<EOF
#!/bin/sh
for p in \$(cat "$pids_file" "$work"/*.pid 2>/dev/null | sort -u); do
	grep -q "^\$p " "$work/stamps" 2>/dev/null && continue
	t=\$(sed 's/.*) //' /proc/\$p/stat 2>/dev/null | cut -d' ' -f20)
	[ -n "\$t" ] && echo "\$p \$t" >>"$work/stamps"
done
exit 0
EOF
chmod +x "$work/stamp.sh"

pid_of() { cat "$work/$1.pid" 2>/dev/null; }
alive() { [ -n "${1:-}" ] && [ -d "/proc/$1" ] && ! grep -q '^State:.*[ZX]' "/proc/$1/status" 2>/dev/null; }
stop_pid() {
	local p=$1 i
	alive "$p" || return 0
	kill -TERM "$p" 2>/dev/null
	for i in $(seq 100); do alive "$p" || return 0; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	for i in $(seq 50); do alive "$p" || return 0; sleep 0.1; done
}

cleanup() {
	local p
	stop_pid "$(pid_of checks)"
	stop_pid "$(pid_of prometheus)"
	stop_pid "$(pid_of host)"
	stop_pid "$(pid_of feeder)"
	stop_pid "$(pid_of bmc)"
	if alive "$(pid_of libvirtd)"; then
		timeout 30 virsh -c "$uri_rw" destroy "$name" >/dev/null 2>&1
	fi
	stop_pid "$(pid_of qemu)"
	stop_pid "$(pid_of libvirtd)"
	stop_pid "$(pid_of virtlogd)"
	mountpoint -q "$work/share" && umount -l "$work/share"
	mountpoint -q "$work/sys" && umount -l "$work/sys"
	left=""
	for p in $(cat "$pids_file" "$work"/*.pid 2>/dev/null | sort -u); do
		alive "$p" || continue
		was=$(grep "^$p " "$work/stamps" 2>/dev/null | head -1 | cut -d' ' -f2)
		now=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f20)
		[ -n "$was" ] && [ "$was" != "$now" ] && continue # the PID is another's now
		left="$left $p($(cat /proc/$p/comm 2>/dev/null))"
	done
	if [ -z "${VW_KEEP_WORK:-}" ]; then
		rm -rf "$work"
	else
		echo "# work dir kept: $work"
	fi
}
on_exit() {
	local rc=$?
	trap - EXIT INT TERM
	cleanup
	if [ -z "${tap_n:-}" ] && [ "$rc" -ge 128 ]; then
		echo "# interrupted by signal $((rc - 128)); VM and daemons cleaned up"
	fi
	if [ -n "${tap_n:-}" ]; then
		tap_n=$((tap_n + 1))
		if [ -z "$left" ]; then
			echo "ok $tap_n - cleanup: VM, QEMU and every daemon stopped, work dir removed"
		else
			echo "not ok $tap_n - cleanup: still running:$left"
			rc=1
		fi
		echo "1..$tap_n"
		echo "# e2e: $(($(date +%s) - t_start)) s in all"
	fi
	exit $rc
}
trap on_exit EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# A setup step failed: one failing TAP line, the logs, and out.
fail_setup() {
	echo "not ok 1 - setup: $1"
	for f in libvirtd.log console.log host.log prometheus.log feeder.log; do
		[ -s "$work/$f" ] && { echo "# ---- $f (tail)"; tail -n 30 "$work/$f" | note; }
	done
	tap_n=1
	exit 1
}
elapsed() { echo "$(($(date +%s) - t_start)) s"; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
host_port=$(free_port)
guest_port=$(free_port)
prom_port=$(free_port)
while [ "$guest_port" = "$host_port" ]; do guest_port=$(free_port); done
while [ "$prom_port" = "$host_port" ] || [ "$prom_port" = "$guest_port" ]; do prom_port=$(free_port); done

# ---- 1. Guest image ----
"$src/guest-image.sh" "$build" "$build/e2e-cache" 2>&1 | note
[ "${PIPESTATUS[0]}" -eq 0 ] || fail_setup "cannot build the guest image"
echo "# guest image ready ($(elapsed))"

# ---- 2. Private libvirtd ----
getent passwd libvirt-qemu >/dev/null ||
	useradd -r -U -M -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu ||
	fail_setup "cannot create the libvirt-qemu user"
mkdir -p "$work"/{etc,run,lib/qemu,cache/qemu,log/qemu,sock,share,sys}
# The sysfs stand-in on a tmpfs, as the real one never waits on a disk: on /tmp (ext4 on this
# VM's disk) the feeder's renames waited behind other processes' fsync on a busy machine, and
# the package counter the host read lagged by hundreds of ms.
mount -t tmpfs -o size=4m,mode=755 vw-e2e-sys "$work/sys" ||
	fail_setup "cannot mount a tmpfs on $work/sys"
if [ "$mode" = faults ]; then
	mount -t tmpfs -o size=8m,mode=755 vw-faults-share "$work/share" ||
		fail_setup "cannot mount a tmpfs on $work/share"
fi
# The VM's folder is made by the hook libvirt runs before QEMU opens it (deploy/libvirt/qemu.d,
# as the Debian package installs it), not here: QEMU refuses a VM whose folder is missing.
mkdir -p "$work/etc/hooks/qemu.d"
install -m 0755 "$src/../../deploy/libvirt/qemu.d/virtwatt" "$work/etc/hooks/qemu.d/virtwatt" ||
	fail_setup "cannot install the libvirt hook"
# QEMU as root: /dev/kvm exists but is unusable, and as libvirt-qemu libvirt re-probes QEMU
# on every lookup (see tests/test_vm_integration.c).
printf 'user = "root"\ngroup = "root"\n' >"$work/etc/qemu.conf"
printf 'unix_sock_dir = "%s/sock"\nlog_outputs = "3:file:%s/libvirtd.log"\n' "$work" "$work" \
	>"$work/libvirtd.conf"
mkdir -p /etc/libvirt /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt
unshare -m --propagation private sh -c '
	w=$1
	mount --bind "$w/etc" /etc/libvirt && mount --bind "$w/run" /run/libvirt &&
	mount --bind "$w/lib" /var/lib/libvirt && mount --bind "$w/cache" /var/cache/libvirt &&
	mount --bind "$w/log" /var/log/libvirt || exit 12
	virtlogd -d -p "$w/virtlogd.pid" || exit 20
	libvirtd -d -p "$w/libvirtd.pid" -f "$w/libvirtd.conf" || exit 21' sh "$work" ||
	fail_setup "private libvirtd did not start (status $?)"
# libvirtd again, in the same private namespace (faults.py kills it with SIGKILL).
cat >"$work/start-libvirtd.sh" <<EOF
#!/bin/sh
nsenter -t \$(cat "$work/virtlogd.pid") -m libvirtd -d -p "$work/libvirtd.pid" -f "$work/libvirtd.conf" || exit 1
cat "$work/libvirtd.pid" >>"$pids_file"
"$work/stamp.sh"
for i in \$(seq 150); do virsh -c "$uri_rw" version >/dev/null 2>&1 && exit 0; sleep 0.2; done
exit 1
EOF
chmod +x "$work/start-libvirtd.sh"
for i in $(seq 150); do
	virsh -c "$uri_rw" version >/dev/null 2>&1 && break
	sleep 0.2
done
virsh -c "$uri_rw" version >/dev/null 2>&1 || fail_setup "libvirtd does not answer on $uri_rw"
echo "# libvirtd up ($(elapsed))"

# ---- 3. The domain ----
cache="$build/e2e-cache"
on_reboot=destroy
share_fs="    <filesystem type='mount' accessmode='mapped'>
      <source dir='$work/share/$uuid'/>
      <target dir='virtwatt'/>
      <readonly/>
    </filesystem>
"
if [ "$mode" = lifecycle ]; then
	on_reboot=restart # virsh reset: QEMU's -no-reboot would end the domain
	# No 9p share: QEMU refuses to save or migrate a VM with a 9p export mounted ("Migration is
	# disabled when VirtFS export path ... is mounted"); the channel alone, as a VM that migrates.
	share_fs=""
fi
cat >"$work/domain.xml" <<EOF
<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$name</name>
  <uuid>$uuid</uuid>
  <memory unit='MiB'>512</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>$cache/vmlinuz</kernel>
    <initrd>$cache/initrd.gz</initrd>
    <cmdline>console=ttyS0 quiet panic=-1</cmdline>
  </os>
  <cpu mode='custom' match='exact'><model fallback='allow'>qemu64</model></cpu>
  <on_reboot>$on_reboot</on_reboot>
  <devices>
    <serial type='file'><source path='$work/console.log'/><target port='0'/></serial>
    <channel type='unix'>
      <source mode='bind' path='$work/power.sock'/>
      <target type='virtio' name='org.virtwatt.power.0'/>
    </channel>
$share_fs    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='user,id=e2enet,restrict=on,hostfwd=tcp:127.0.0.1:$guest_port-:28282'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='virtio-net-pci,netdev=e2enet,bus=pcie.0,addr=0x10'/>
  </qemu:commandline>
</domain>
EOF
[ ! -e "$work/share/$uuid" ] || fail_setup "$work/share/$uuid exists before the VM's start"
virsh -c "$uri_rw" create "$work/domain.xml" 2>&1 | note
[ "${PIPESTATUS[0]}" -eq 0 ] || fail_setup "virsh create failed (the hook should have made $work/share/$uuid)"
cat "/proc/$(pid_of libvirtd)/root/run/libvirt/qemu/$name.pid" >"$work/qemu.pid" 2>/dev/null
echo "# domain $name ($uuid) started, QEMU $(pid_of qemu) ($(elapsed))"
# The VM's claim to CPU over the other load of a shared machine (builds run under nice): a TCG
# guest has no steal clock, so time its vCPU waits for the host's CPU it counts as its own, and
# the model check (checks.py) needs the host to give the VM the CPU its guest counted. Every
# thread: Linux's nice is per thread.
for t in /proc/"$(pid_of qemu)"/task/*; do renice -n -10 -p "${t##*/}" >/dev/null 2>&1 || true; done

# ---- 4. Meter feeder and virtwatt-host ----
meter_range=262143328850 # a real package's max_energy_range_uj
[ "$mode" = faults ] && meter_range=4294967296 # 107 s at 40 W: wraps happen, and can be outrun
mkdir -p "$work/bmc"
head -c 12 /dev/urandom | base64 | tr -d '/+=' >"$work/bmc-password"
python3 "$root/tests/redfish/bmc.py" --port 0 --control "$work/bmc" --ca-out "$work/bmc-ca.pem" \
	--user e2e --password "$(cat "$work/bmc-password")" >"$work/bmc.log" 2>&1 &
echo $! >"$work/bmc.pid"
for i in $(seq 100); do grep -q '^port [0-9]' "$work/bmc.log" 2>/dev/null && break; sleep 0.1; done
bmc_port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$work/bmc.log")
[ -n "$bmc_port" ] || fail_setup "the test BMC did not start: $(cat "$work/bmc.log")"
cat >"$work/bmcs.yaml" <<EOF
nodes:
  e2e-host: e2e-bmc
bmcs:
  e2e-bmc:
    endpoint: https://127.0.0.1:$bmc_port
    username: e2e
    passwordFile: $work/bmc-password
    caFile: $work/bmc-ca.pem
EOF
python3 "$src/feeder.py" "$work/sys" "$E2E_WATTS" "$meter_range" "$E2E_PLATFORM_WATTS" \
	"$work/bmc" >"$work/feeder.log" 2>&1 &
echo $! >"$work/feeder.pid"
for i in $(seq 50); do [ -f "$work/sys/class/powercap/intel-rapl:0/energy_uj" ] && [ -f "$work/sys/platform_truth" ] && break; sleep 0.1; done

kubelet_port=$(free_port)
host_flags="" host_env=""
if [ "$mode" = faults ]; then
	# The fake kubelet (served by faults.py) has a self-signed certificate for 127.0.0.1.
	echo "faults-token" >"$work/token"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$work/kubelet.key" \
		-out "$work/kubelet.crt" >/dev/null 2>&1 || fail_setup "openssl cannot make a certificate"
	host_flags="--kube.enable --kube.pod-source=kubelet --kube.kubelet-url=https://127.0.0.1:$kubelet_port"
	host_flags="$host_flags --kube.poll-interval=1s --kube.token-file=$work/token"
	host_flags="$host_flags --kube.ca-file=$work/kubelet.crt"
	host_env="ASAN_OPTIONS=quarantine_size_mb=0:allocator_release_to_os_interval_ms=500"
fi
cat >"$work/start-host.sh" <<EOF
#!/bin/sh
$host_env "$host_bin" --host.sysfs="$work/sys" --host.procfs=/proc --libvirt.uri="$uri_ro" \\
	--passthrough.share-root="$work/share" --passthrough.lock-dir="$work/lock" \\
	--web.listen-address=127.0.0.1:$host_port \\
	--monitor.interval=1s --monitor.sample-interval=250ms --passthrough.interval=1s \\
	--model.train.interval=12s --model.train.min-samples=10 --model.train.max-samples=15 \\
	--model.train.dir="$work/models" \\
	--platform.sources=redfish --platform.redfish.config-file="$work/bmcs.yaml" \\
	--platform.redfish.interval=250ms \\
	--kube.node-name=e2e-host --log.level=info $host_flags >>"$work/host.log" 2>&1 &
echo \$! >"$work/host.pid"
echo \$! >>"$pids_file"
"$work/stamp.sh"
for i in \$(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$host_port/readyz && exit 0; sleep 0.1; done
exit 1
EOF
cat >"$work/stop-host.sh" <<EOF
#!/bin/sh
p=\$(cat "$work/host.pid")
kill -TERM "\$p"
for i in \$(seq 100); do [ -d /proc/\$p ] || exit 0; grep -q '^State:.*Z' /proc/\$p/status && exit 0; sleep 0.1; done
kill -KILL "\$p"
EOF
chmod +x "$work/start-host.sh" "$work/stop-host.sh"
"$work/start-host.sh" || fail_setup "virtwatt-host not ready on 127.0.0.1:$host_port"
echo "# virtwatt-host up on 127.0.0.1:$host_port ($(elapsed))"

# ---- 5. Prometheus ----
cat >"$work/prometheus.yml" <<EOF
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: host
    static_configs: [{targets: ['127.0.0.1:$host_port']}]
  - job_name: guest
    static_configs: [{targets: ['127.0.0.1:$guest_port']}]
EOF
promtool check config "$work/prometheus.yml" 2>&1 | note
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--web.listen-address=127.0.0.1:$prom_port >"$work/prometheus.log" 2>&1 &
echo $! >"$work/prometheus.pid"
cat "$work"/*.pid >>"$pids_file"
"$work/stamp.sh"

# ---- The guest's exporter, through the forwarded port ----
for i in $(seq 240); do
	curl -sf -m 2 -o /dev/null "http://127.0.0.1:$guest_port/metrics" && break
	alive "$(pid_of qemu)" || break
	sleep 0.5
done
curl -sf -m 2 -o /dev/null "http://127.0.0.1:$guest_port/metrics" ||
	fail_setup "the guest's /metrics never answered on 127.0.0.1:$guest_port"
echo "# guest exporter up on 127.0.0.1:$guest_port ($(elapsed))"

# ---- Checks ----
E2E_WORK=$work E2E_HOST=127.0.0.1:$host_port E2E_GUEST=127.0.0.1:$guest_port \
	E2E_PROM=127.0.0.1:$prom_port E2E_UUID=$uuid E2E_NAME=$name E2E_SYSFS=$work/sys \
	E2E_START_HOST=$work/start-host.sh E2E_STOP_HOST=$work/stop-host.sh \
	E2E_URI=$uri_rw E2E_START_LIBVIRTD=$work/start-libvirtd.sh E2E_KUBELET_PORT=$kubelet_port \
	E2E_METER_RANGE=$meter_range E2E_PIDS=$pids_file E2E_MODEL_CLI=$build/shared/virtwatt-model \
	python3 -u "$src/$mode.py" &
echo $! >"$work/checks.pid"
"$work/stamp.sh"
wait "$(pid_of checks)" # in the background, so a SIGTERM (meson's timeout) is handled at once
rc=$?
tap_n=$(cat "$work/ntests" 2>/dev/null || echo 0)
if [ "$tap_n" -eq 0 ]; then
	echo "not ok 1 - $mode.py crashed (status $rc)"
	tap_n=1
fi
if [ "$rc" -ne 0 ] || [ -n "${VW_E2E_VERBOSE:-}" ]; then
	for f in console.log host.log; do
		[ -s "$work/$f" ] && { echo "# ---- $f (tail)"; tail -n 40 "$work/$f" | note; }
	done
fi
exit $rc
