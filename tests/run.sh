#!/usr/bin/env bash
# Install what is missing, build with sanitizers (build-test/, build-dev.ini) and run every test.
# build-test/ is the suite's own: deploy/quickstart.sh builds release daemons in build-release/.
# Ends with one line: "N passed, N failed[, N skipped]". Under CI=true a skipped test fails.
set -uo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh --test || exit 1

b=build-test
if [ ! -f $b/build.ninja ]; then
	meson setup $b --native-file build-dev.ini || exit 1
else
	meson configure $b -Dbuildtype=debug -Dwerror=true -Db_sanitize=address,undefined \
		-Db_lundef=false >/dev/null || exit 1
fi
ninja -C $b || { echo "0 passed, 1 failed"; exit 1; }

meson test -C $b --print-errorlogs --num-processes 2 "$@"
rc=$?

# Count individual cases from the TAP each test printed (meson counts executables).
log=$b/meson-logs/testlog.txt
# (cmocka 1.1.5 prints a skipped case as "not ok N # SKIP"; a whole skipped program "1..0 # SKIP".)
skip_re='^(not )?ok [0-9]+.*# (SKIP|skip)|^1\.\.0 # (SKIP|skip)'
ok=$(grep -cE '^ok [0-9]+' "$log")
notok=$(grep -cE '^not ok [0-9]+' "$log")
skipped=$(grep -cE "$skip_re" "$log")
okskip=$(grep -cE '^ok [0-9]+.*# (SKIP|skip)' "$log")
notokskip=$(grep -cE '^not ok [0-9]+.*# (SKIP|skip)' "$log")
passed=$((ok - okskip))
failed=$((notok - notokskip))
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	failed=1 # a test binary crashed or timed out before printing its TAP
fi
if [ "$failed" -gt 0 ]; then
	# meson prints a TAP test's stderr only: the failing cases' own messages (cmocka writes
	# them to stdout as "# ..." lines after "not ok") come from the log.
	echo "Failing cases, with their messages (from $log):"
	awk '/^not ok [0-9]+/ && !/# (SKIP|skip)/ { n = 12; print; next }
	     n > 0 && /^#/ { print "    " $0; n--; next } { n = 0 }' "$log"
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
