#!/bin/sh
# Minimise a checked-in corpus: tests/fuzz/minimise.sh TARGET [BUILD_DIR]
# The named files (seeds with provenance, regress-* inputs of fixed bugs) all stay; of the
# files campaigns added (named by their SHA-1), only those reaching edges the others do not
# are kept (libFuzzer -merge=1 -use_counters=0, smallest first). Prints the count and size.
set -u
target=${1:?usage: minimise.sh TARGET [BUILD_DIR]}
src=$(cd "$(dirname "$0")" && pwd)
build=${2:-$src/../../build}
fuzzer=$build/tests/fuzz/fuzz_$target
corpus=$src/corpus/$target

[ -x "$fuzzer" ] || { echo "minimise.sh: $fuzzer not built" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/vw-minimise-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/keep" "$work/added"
for f in "$corpus"/*; do
	n=$(basename "$f")
	if [ ${#n} -eq 40 ] && [ -z "$(printf %s "$n" | tr -d 0-9a-f)" ]; then
		cp "$f" "$work/added/"
	else
		cp "$f" "$work/keep/"
	fi
done
nice -n 19 "$fuzzer" -merge=1 -use_counters=0 -max_len=32768 -timeout=20 \
	"$work/keep" "$work/added" </dev/null >"$work/log" 2>&1 || { tail -n 5 "$work/log" >&2; exit 1; }
rm -f "$corpus"/*
cp "$work/keep"/* "$corpus/"
echo "$target: $(ls "$corpus" | wc -l) files, $(cat "$corpus"/* | wc -c) bytes"
