#!/usr/bin/env bash
# Per-event cost of the CPU accountant's sched_switch program, measured by the kernel
# (kernel.bpf_stats_enabled: run_time_ns / run_cnt) under stress-ng --switch, for the tp_btf
# program, its raw_tp twin, the optional counter program (loaded only where counters open; here
# on software stand-in events, whose reads cost about what a PMU's do), and two baselines from bench/bench.bpf.c: an empty program (what
# bpf_stats reports for nothing: trampoline and clock reads) and a Kepler-v0.7-like one.
#   bench/bpf_switch.sh [seconds]      (root; BUILD=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECONDS_RUN=${1:-5}

[ "$(id -u)" -eq 0 ] || { echo "bpf_switch.sh: needs root" >&2; exit 1; }
command -v stress-ng >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >&2
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
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

# measure LABEL PROGRAM [loader options]
measure() {
	local label=$1 prog=$2 line ns cnt
	shift 2
	"$LOADER" "$@" >"$tmp/out" 2>"$tmp/err" &
	loader=$!
	for _ in $(seq 100); do
		grep -q attached "$tmp/out" && break
		kill -0 "$loader" 2>/dev/null || { cat "$tmp/err" >&2; exit 1; }
		sleep 0.1
	done
	stress-ng --switch 1 --timeout "${SECONDS_RUN}s" --quiet
	line=$("$BPFTOOL" prog show name "$prog" | grep -m1 run_time_ns || true)
	kill "$loader"
	wait "$loader" || true
	loader=
	ns=$(sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p' <<<"$line")
	cnt=$(sed -n 's/.*run_cnt \([0-9]*\).*/\1/p' <<<"$line")
	if [ -z "$ns" ] || [ -z "$cnt" ] || [ "$cnt" -eq 0 ]; then
		echo "$label: no stats for $prog" >&2
		return 1
	fi
	awk -v l="$label" -v p="$prog" -v ns="$ns" -v c="$cnt" \
		'BEGIN { printf "%-28s %-14s %10d events %8.1f ns/event\n", l, p, c, ns / c }'
}

echo "stress-ng --switch 1 for ${SECONDS_RUN}s per program, $(nproc) CPUs, $(uname -r)"
measure "empty program (floor)" null_switch --null
measure "virtwatt tp_btf" vw_switch_btf
measure "virtwatt raw_tp twin" vw_switch_raw --raw-tp
measure "+ counters (sw stand-ins)" vw_hwc_btf --hw-standin
measure "Kepler-like (no perf reads)" kl_switch --kepler-like
