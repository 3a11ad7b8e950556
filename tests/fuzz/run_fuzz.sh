#!/bin/sh
# Run a libFuzzer target for a bounded time over its checked-in corpus; TAP on stdout.
#   run_fuzz.sh FUZZER CORPUS_DIR SECONDS ARTIFACT_DIR
# FUZZER is "" when clang with libFuzzer was not found at configure time: a skip, except
# under CI=true, where it is a failure. VW_FUZZ_SECONDS overrides SECONDS. New inputs go to a
# temporary directory, never into the checked-in corpus; crashers are kept in ARTIFACT_DIR
# (named fuzz_<target>-crash-<sha1>: targets may run at once).
fuzzer=$1 corpus=$2 secs=${VW_FUZZ_SECONDS:-$3} artifacts=$4
name=fuzz_$(basename "$corpus")

if [ -z "$fuzzer" ] || [ ! -x "$fuzzer" ]; then
	if [ "${CI:-}" = "true" ]; then
		echo "1..1"
		echo "not ok 1 - $name: not built: clang with -fsanitize=fuzzer (libclang-rt) is required under CI"
		exit 1
	fi
	echo "1..0 # SKIP clang with libFuzzer (-fsanitize=fuzzer) not found: fuzzer not built"
	exit 0
fi

# A tmpfs keeps targets that write files (series_state) from waiting on fsync.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/vw-fuzz-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/new" "$artifacts"
echo "1..1"
# A small ASan quarantine keeps RSS well under the limit on long runs.
# timeout(1) keeps the time on the monotonic clock and interrupts libFuzzer (final stats, exit
# 72 or timeout's 124): -max_total_time follows the wall clock, which jumps on shared machines.
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=32:malloc_context_size=10} \
	timeout -s INT "$secs" "$fuzzer" -rss_limit_mb=512 -timeout=10 -max_len=32768 \
	-print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$work/new" "$corpus" </dev/null \
	>"$work/log" 2>&1
rc=$?
[ "$rc" -eq 124 ] || [ "$rc" -eq 72 ] && rc=0
[ "$rc" -eq 0 ] || rc=1 # libFuzzer exits 77 on a crash, which meson reads as a skip elsewhere
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n 1)
rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/log" | tail -n 1)
if [ "$rc" -eq 0 ]; then
	echo "ok 1 - $name: ${runs:-?} runs in ${secs} s (${rate:-?} exec/s, peak RSS ${rss:-?} MB), no crash"
else
	echo "not ok 1 - $name: exit $rc; crashers in $artifacts"
	tail -n 60 "$work/log" | sed 's/^/# /'
fi
exit $rc
