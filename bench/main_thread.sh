#!/usr/bin/env bash
# The host's main thread with containers (bench/README "2026-11-29: keptfile"), as root:
#   bench/main_thread.sh HOST OUT [NCONT]
# virtwatt-host HOST (1 s interval, an empty libvirt test node, the real /proc and /sys) with
# NCONT docker-like cgroups (cgroup v1 cpuacct where mounted, else v2), each holding a sleeping
# process; `strace -c -p` of its main thread for 10 s after 5 s of warm-up into OUT (OUT.fds:
# its descriptors, OUT.containers: containers in /metrics). CG=1: instead, callgrind over
# CG_S (20) seconds of it into OUT.cg.PID.1 (bench/callgrind_ir.py; callgrind_annotate).
# Everything it starts and the cgroups it makes go on exit. Not part of the timed tests.
set -euo pipefail
host=$1 out=$2 ncont=${3:-5}
dir=$(mktemp -d)
printf '<node>\n</node>\n' >"$dir/node.xml"
if [ -e /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
	cgroot=/sys/fs/cgroup/cpuacct/vw-kfbench-$$
else
	cgroot=/sys/fs/cgroup/vw-kfbench-$$
fi
mkdir "$cgroot"
sleepers=()
cleanup() {
	[ -z "${hpid:-}" ] || { kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null || true; }
	for p in "${sleepers[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	sleep 0.2
	for d in "$cgroot"/docker-*.scope; do [ -d "$d" ] && rmdir "$d"; done
	rmdir "$cgroot" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
for i in $(seq "$ncont"); do
	id=$(printf '%056x%08x' 0xbe7c "$i")
	mkdir "$cgroot/docker-$id.scope"
	sleep 1000 &
	sleepers+=($!)
	echo $! >"$cgroot/docker-$id.scope/cgroup.procs"
done
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
${CG:+valgrind --tool=callgrind --instr-atstart=no -q --callgrind-out-file="$out.cg.%p"} \
"$host" --monitor.interval=1s --web.listen-address="127.0.0.1:$port" \
	--libvirt.uri="test://$dir/node.xml" --passthrough.lock-dir="$dir/lock" >"$dir/host.log" 2>&1 &
hpid=$!
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 1; done
sleep 5
curl -sf "http://127.0.0.1:$port/metrics" | grep -c '^kepler_container_cpu_joules_total' >"$out.containers" || true
if [ -n "${CG:-}" ]; then
	sleep 3
	callgrind_control -i on "$hpid" >/dev/null 2>&1
	sleep "${CG_S:-20}"
	callgrind_control -i off "$hpid" >/dev/null 2>&1
	callgrind_control -d "$hpid" >/dev/null 2>&1
	sleep 1
else
	timeout -s INT 10 strace -c -p "$hpid" -o "$out" >/dev/null 2>&1 || true
fi
ls -l "/proc/$hpid/fd" >"$out.fds" 2>&1 || true
