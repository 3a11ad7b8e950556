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
bpf_loader_setup "$BUILD"

PROGS="vw_irq_entry vw_irq_exit vw_sirq_entry vw_sirq_exit vw_timer_entry vw_timer_exit"
echo "# ${SECONDS_RUN}s per row, $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %10s %8s %10s %10s\n' load runs ns/run "kern ms/s" "spans/s"
for load in idle udp sock hrtimers; do
	# shellcheck disable=SC2119 # no options: the loader's default programs
	loader_start
	read -r ns0 cnt0 < <(bpf_prog_stats "$loader" "$PROGS")
	t0=$(date +%s.%N)
	if [ "$load" = idle ]; then sleep "$SECONDS_RUN"
	else (cd "$tmp" && stress-ng --"$load" 1 --timeout "${SECONDS_RUN}s" --quiet); fi
	t1=$(date +%s.%N)
	read -r ns cnt < <(bpf_prog_stats "$loader" "$PROGS")
	loader_stop
	awk -v load="$load" -v ns=$((ns - ns0)) -v c=$((cnt - cnt0)) \
		-v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
		'BEGIN { printf "%-9s %10d %8s %10.3f %10.0f\n", load, c,
			 c ? sprintf("%.1f", ns / c) : "-", ns / s / 1e6, c / 2 / s }'
done
