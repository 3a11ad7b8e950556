#!/bin/sh
# A long fuzzing campaign for one target, figures for tests/fuzz/README.md.
#   tests/fuzz/campaign.sh TARGET SECONDS [BUILD_DIR]
# Runs BUILD_DIR/tests/fuzz/fuzz_TARGET (BUILD_DIR: build) under nice -n 19, one process (the
# development machines are shared), over the checked-in corpus tests/fuzz/corpus/TARGET, which
# it only reads: new inputs go to a temporary directory, crashers to $ARTIFACTS (default
# build/fuzz-artifacts/TARGET/). Prints one Markdown table row: target, time (measured on the
# monotonic clock), executions, executions per second, coverage (cov: edges, ft: features),
# corpus (inputs/size), crashes (new crash-, leak-, timeout- and oom- files).
# VW_FUZZ_MERGE=1 then merges the new inputs that add coverage into the checked-in corpus
# (libFuzzer -merge=1 -use_counters=0: the existing files stay, and only inputs reaching new
# edges are added, not every new hit count: a small corpus).
set -u
target=${1:?usage: campaign.sh TARGET SECONDS [BUILD_DIR]}
secs=${2:?usage: campaign.sh TARGET SECONDS [BUILD_DIR]}
src=$(cd "$(dirname "$0")" && pwd)
build=${3:-$src/../../build}
fuzzer=$build/tests/fuzz/fuzz_$target
corpus=$src/corpus/$target
artifacts=${ARTIFACTS:-$build/fuzz-artifacts/$target}

[ -x "$fuzzer" ] || { echo "campaign.sh: $fuzzer not built (clang with libFuzzer?)" >&2; exit 1; }
[ -d "$corpus" ] || { echo "campaign.sh: no corpus $corpus" >&2; exit 1; }
# A tmpfs keeps targets that write files (series_state) from waiting on fsync.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/vw-campaign-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/new" "$artifacts"

# Time is kept by timeout(1) on the monotonic clock, which interrupts libFuzzer (it prints its
# final stats and exits): libFuzzer's -max_total_time follows the wall clock, and a jump of it
# ended campaigns early on the shared development machines.
uptime_s() { cut -d' ' -f1 /proc/uptime; }
crashers() { ls "$artifacts" | grep -cE '^(crash|leak|timeout|oom)-'; }
crashes_before=$(crashers)
t0=$(uptime_s)
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=32:malloc_context_size=10} \
	timeout -s INT "$secs" nice -n 19 "$fuzzer" -rss_limit_mb=1024 -timeout=20 \
	-max_len=32768 -print_final_stats=1 -artifact_prefix="$artifacts/" \
	"$work/new" "$corpus" </dev/null >"$work/log" 2>&1
rc=$?
# 124: timeout(1) interrupted it as planned; 72 is libFuzzer's own exit code for that.
[ "$rc" -eq 124 ] || [ "$rc" -eq 72 ] && rc=0
elapsed=$(echo "$t0 $(uptime_s)" | awk '{printf "%d", $2 - $1}')

final_stat() { sed -n "s/^stat::$1: *//p" "$work/log"; }
done_line=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$work/log" | tail -n 1)
cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ft=$(echo "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
corp=$(echo "$done_line" | sed -n 's/.*corp: \([^ ]*\).*/\1/p')
execs=$(final_stat number_of_executed_units)

echo "| $target | ${elapsed} s | ${execs:-?} | $((${execs:-0} / (elapsed ? elapsed : 1))) |" \
	"${cov:-?} | ${ft:-?} | ${corp:-?} | $(($(crashers) - crashes_before)) |"
if [ "$rc" -ne 0 ]; then
	echo "campaign.sh: $target stopped (exit $rc); crashers in $artifacts:" >&2
	grep -E 'ERROR|SUMMARY|property broken' "$work/log" | head -n 5 >&2
fi
if [ "${VW_FUZZ_MERGE:-0}" = "1" ] && [ "$rc" -eq 0 ]; then
	before=$(ls "$corpus" | wc -l)
	nice -n 19 "$fuzzer" -merge=1 -use_counters=0 -max_len=32768 -timeout=20 \
		"$corpus" "$work/new" \
		</dev/null >"$work/merge.log" 2>&1 || { tail -n 5 "$work/merge.log" >&2; exit 1; }
	echo "campaign.sh: merged $(($(ls "$corpus" | wc -l) - before)) new input(s) into $corpus" \
		"($(du -sk "$corpus" | cut -f1) KiB)" >&2
fi
exit $rc
