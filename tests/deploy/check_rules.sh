#!/bin/sh
# Every rules file under deploy/prometheus/ through `promtool check rules`, and every unit test
# under tests/deploy/rules/ through `promtool test rules`. TAP. No promtool is a skip, or a
# failure under CI=true.
# usage: check_rules.sh SOURCE_ROOT
set -u
src=$1
n=0 failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

check() { # description, command...
	desc=$1
	shift
	n=$((n + 1))
	if "$@" >"$out" 2>&1; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		sed 's/^/# /' "$out"
	fi
}

if ! command -v promtool >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then echo "not ok 1 - promtool # not installed"; echo "1..1"; exit 1; fi
	echo "1..0 # SKIP promtool not installed"
	exit 0
fi
found=0
for f in "$src"/deploy/prometheus/*rules*.yml; do
	[ -e "$f" ] || continue
	found=1
	check "promtool check rules $(basename "$f")" promtool check rules "$f"
done
for t in "$src"/tests/deploy/rules/*.test.yml; do
	[ -e "$t" ] || continue
	found=1
	check "promtool test rules $(basename "$t")" promtool test rules "$t"
done
if [ "$found" = 0 ]; then
	n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - no rules files found under $src"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
