#!/usr/bin/env bash
# What the interrupt-span programs (cpu_time.bpf.c: vw_irq_*, vw_sirq_*, vw_timer_*: each
# hardirq and softirq timed and charged to the interrupted cgroup) cost, measured by the kernel
# (kernel.bpf_stats_enabled: run_time_ns and run_cnt), under loads that interrupt the most:
#   udp:      stress-ng --udp 1 (a loopback flood: a softirq per datagram)
#   sock:     stress-ng --sock 1 (TCP over loopback)
#   hrtimers: stress-ng --hrtimers 1 (timer interrupts)
#   idle:     sleep (the tick and the machine's own interrupts)
# For each: program runs, ns per run, in-kernel ms per second, and spans (entry+exit pairs) per s.
#   bench/irq_cost.sh [seconds]      (root; BUILD=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
SECONDS_RUN=${1:-5}

[ "$(id -u)" -eq 0 ] || { echo "irq_cost.sh: needs root" >&2; exit 1; }
command -v stress-ng >/dev/null || { echo "irq_cost.sh: needs stress-ng" >&2; exit 1; }
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" --native-file build-dev.ini >&2
ninja -C "$BUILD" bench/vw-bpf-load >&2
LOADER=$BUILD/bench/vw-bpf-load

tmp=$(mktemp -d)
old=$(sysctl -n kernel.bpf_stats_enabled)
loader=
cleanup() {
	[ -n "$loader" ] && kill "$loader" 2>/dev/null && wait "$loader" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$old"
	rm -rf "$tmp"
}
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1

PROGS="vw_irq_entry vw_irq_exit vw_sirq_entry vw_sirq_exit vw_timer_entry vw_timer_exit"
echo "# ${SECONDS_RUN}s per row, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %10s %8s %10s %10s\n' load runs ns/run "kern ms/s" "spans/s"
for load in idle udp sock hrtimers; do
	"$LOADER" >"$tmp/out" 2>"$tmp/err" &
	loader=$!
	for _ in $(seq 100); do
		grep -q attached "$tmp/out" && break
		kill -0 "$loader" 2>/dev/null || { cat "$tmp/err" >&2; exit 1; }
		sleep 0.1
	done
	read -r ns0 cnt0 < <(bpf_prog_stats "$loader" "$PROGS")
	t0=$(date +%s.%N)
	if [ "$load" = idle ]; then sleep "$SECONDS_RUN"
	else (cd "$tmp" && stress-ng --"$load" 1 --timeout "${SECONDS_RUN}s" --quiet); fi
	t1=$(date +%s.%N)
	read -r ns cnt < <(bpf_prog_stats "$loader" "$PROGS")
	kill "$loader"
	wait "$loader" || true
	loader=
	awk -v load="$load" -v ns=$((ns - ns0)) -v c=$((cnt - cnt0)) \
		-v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
		'BEGIN { printf "%-9s %10d %8s %10.3f %10.0f\n", load, c,
			 c ? sprintf("%.1f", ns / c) : "-", ns / s / 1e6, c / 2 / s }'
done
