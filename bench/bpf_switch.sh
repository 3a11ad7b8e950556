#!/usr/bin/env bash
# What the CPU accountant's BPF programs cost the machine's scheduler, measured by the kernel
# (kernel.bpf_stats_enabled: run_time_ns and run_cnt per program), under two loads:
#   switch: stress-ng --switch 1 (a context-switch storm: what a per-switch program costs)
#   fork:   stress-ng --fork 1   (processes born and gone: what the exit and free programs cost)
# Rows: the accountant as it is (sched_process_exit + sched_process_free, and the ran walk's
# marker vw_mark on sched_switch: one task storage lookup and a compare per switch), the same
# without the ran walk (--no-ran: no sched_switch program, as until 2026-11-27), its raw_tp twins, the optional counter program (a sched_switch program, loaded only
# where counters open; here on software stand-ins, whose reads cost about what a PMU's do), and
# three baselines from bench/bench.bpf.c: an empty sched_switch program (the floor of a
# per-switch hook: trampoline and bpf_stats' clock reads), the exit-tail switch program the
# accountant ran until 2026-11-24, and a Kepler-v0.7-like one.
# For each: runs, ns per run, and the in-kernel time per second and per context switch.
#   bench/bpf_switch.sh [seconds]      (root; BUILD=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
BUILD=${BUILD:-build}
SECONDS_RUN=${1:-5}

[ "$(id -u)" -eq 0 ] || { echo "bpf_switch.sh: needs root" >&2; exit 1; }
command -v stress-ng >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >&2
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
bpf_loader_setup "$BUILD"

stat_field() { awk -v k="$1" '$1 == k { print $2 }' /proc/stat; }

# measure LABEL LOAD "PROGRAMS" [loader options]
measure() {
	local label=$1 load=$2 progs=$3 ns cnt ctxt0 ctxt1 t0 t1
	shift 3
	loader_start "$@"
	ctxt0=$(stat_field ctxt)
	t0=$(date +%s.%N)
	stress-ng --"$load" 1 --timeout "${SECONDS_RUN}s" --quiet
	t1=$(date +%s.%N)
	ctxt1=$(stat_field ctxt)
	read -r ns cnt < <(bpf_prog_stats "$loader" "$progs")
	loader_stop
	awk -v l="$label" -v load="$load" -v ns="$ns" -v c="$cnt" -v sw=$((ctxt1 - ctxt0)) \
		-v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
		'BEGIN { printf "%-36s %-6s %10d %9s %10.3f %12.1f %10d\n", l, load, c,
			 c ? sprintf("%.1f", ns / c) : "-", ns / s / 1e6, ns / sw, sw / s }'
}

echo "# stress-ng 1 worker for ${SECONDS_RUN}s per row, $(nproc) CPUs, $(uname -r)"
printf '%-36s %-6s %10s %9s %10s %12s %10s\n' program load runs ns/run "kern ms/s" \
	"ns/ctx-sw" "ctx-sw/s"
ACC="vw_exit_btf vw_free_btf"
for load in switch fork; do
	measure "virtwatt (exit + free + mark)" "$load" "$ACC vw_mark"
	measure "virtwatt, no ran walk (exit + free)" "$load" "$ACC" --no-ran
	measure "virtwatt raw_tp twins" "$load" "vw_exit_raw vw_free_raw" --raw-tp
	measure "virtwatt + counters (sw stand-ins)" "$load" "$ACC vw_hwc_btf" --hw-standin
	measure "empty switch program (floor)" "$load" null_switch --null
	measure "until 2026-11-24: exit + tail switch" "$load" "tail_switch vw_exit_btf" --tail-switch
	measure "Kepler-like (no perf reads)" "$load" kl_switch --kepler-like
done
