#!/usr/bin/env bash
# Install what is missing, build with sanitizers (build/, build-dev.ini) and run every test.
# Ends with one line: "N passed, N failed[, N skipped]". Under CI=true a skipped test fails.
set -uo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh --test || exit 1

if [ ! -f build/build.ninja ]; then
	meson setup build --native-file build-dev.ini || exit 1
else
	meson configure build -Dbuildtype=debug -Dwerror=true -Db_sanitize=address,undefined \
		-Db_lundef=false >/dev/null || exit 1
fi
ninja -C build || { echo "0 passed, 1 failed"; exit 1; }

meson test -C build --print-errorlogs --num-processes 2 "$@"
rc=$?

# Count individual cases from the TAP each test printed (meson counts executables).
log=build/meson-logs/testlog.txt
passed=$(grep -cE '^ok [0-9]+' "$log" | tr -d ' ')
# cmocka 1.1 prints a skipped case as "not ok N # SKIP name": a skip, not a failure.
skip_re='^(not )?ok [0-9]+.*# (SKIP|skip)'
skipped=$(grep -cE "$skip_re" "$log" | tr -d ' ')
failed=$(grep -E '^not ok [0-9]+' "$log" | grep -cvE "$skip_re" | tr -d ' ')
passed=$((passed - $(grep -cE '^ok [0-9]+.*# (SKIP|skip)' "$log" | tr -d ' ')))
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	failed=1 # a test binary crashed or timed out before printing its TAP
fi
if [ "${CI:-}" = "true" ] && [ "$skipped" -gt 0 ]; then
	echo "CI=true: $skipped test(s) skipped; a skip is a failure here:"
	grep -E "$skip_re" "$log"
	failed=$((failed + skipped))
	rc=1
fi
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
exit $rc
