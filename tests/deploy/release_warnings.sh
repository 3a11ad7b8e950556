#!/bin/sh
# The release builds users make print no warning: the README's deploy/quickstart.sh (meson
# release, -O3, its options read from the script) and deploy/package.sh deb (debian/rules'
# dh_auto_configure options with dpkg-buildflags' hardening=+all CFLAGS: -O2, _FORTIFY_SOURCE);
# deploy/Containerfile's build is the quickstart's with --prefix=/usr. Each is configured with
# --werror and builds the three programs; meson's own WARNING:/DEPRECATION: lines fail too.
# The dev builds (-O0) cannot see the optimiser's warnings (-Wmaybe-uninitialized,
# -Wformat-truncation, -Wnull-dereference after inlining). The trees are kept in WORK_DIR between
# runs: with -Werror a file that warned has no object, so it is compiled (and fails) again.
# TAP. usage: release_warnings.sh SOURCE_ROOT WORK_DIR
set -u
src=$1 work=$2
mkdir -p "$work"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
	grep -E -B2 -A8 'warning:|error:|WARNING|DEPRECATION' "$tmp/out" | head -80 | sed 's/^/# /'
	tail -5 "$tmp/out" | sed 's/^/# /'
}
programs="host/virtwatt-host guest/virtwatt-guest shared/virtwatt-model"

# build NAME OPTIONS...: configure (again) with --werror, then build the programs.
build() {
	name=$1; shift
	b=$work/$name
	if [ -f "$b/build.ninja" ]; then set -- --reconfigure "$@"; fi
	if ! meson setup --werror "$@" "$b" "$src" >"$tmp/out" 2>&1; then
		notok "$name: meson setup $*"; return
	fi
	if grep -E '^(WARNING|DEPRECATION):' "$tmp/out" >/dev/null; then
		notok "$name: meson setup prints no WARNING: or DEPRECATION: line"
	else
		ok "$name: meson setup prints no WARNING: or DEPRECATION: line"
	fi
	# shellcheck disable=SC2086
	if ! nice ninja -k 0 -C "$b" $programs >"$tmp/out" 2>&1; then
		notok "$name: the programs build with -Werror (options: $*)"
	elif grep -E 'warning:|WARNING' "$tmp/out" >/dev/null; then
		notok "$name: the programs build with -Werror and print no warning (bpftool, clang)"
	else
		ok "$name: the programs build with -Werror, no warning (options: $*)"
	fi
}

# A subshell's results ($tmp/sub, numbered on from n) shown and counted.
tally() {
	cat "$tmp/sub"
	n=$((n + $(grep -c '^\(not \)\?ok ' "$tmp/sub")))
	failed=$((failed + $(grep -c '^not ok ' "$tmp/sub")))
}

# deploy/quickstart.sh's opts=(...), as a new user's shell has them (no CFLAGS).
qs_opts=$(sed -n 's/^opts=(\(.*\))$/\1/p' "$src/deploy/quickstart.sh")
if [ -z "$qs_opts" ]; then
	echo "no opts=(...) line" >"$tmp/out"; notok "deploy/quickstart.sh's meson options found"
else
	# shellcheck disable=SC2086
	(unset CFLAGS CPPFLAGS LDFLAGS CC; build quickstart $qs_opts) >"$tmp/sub"
	tally
fi

# deploy/debian/rules: dh_auto_configure -- OPTIONS (continued lines joined).
deb_opts=$(awk '/dh_auto_configure --/ { on = 1 } on { line = line " " $0; if ($0 !~ /\\$/) exit }
	END { sub(/.*dh_auto_configure --/, "", line); gsub(/\\/, "", line); print line }' \
	"$src/deploy/debian/rules")
if ! command -v dpkg-buildflags >/dev/null; then
	n=$((n + 1)); echo "ok $n - # SKIP package.sh deb's build: no dpkg-buildflags"
elif [ -z "$deb_opts" ]; then
	echo "no dh_auto_configure -- line" >"$tmp/out"; notok "deploy/debian/rules' meson options found"
else
	flags=$(cd "$src" && DEB_BUILD_MAINT_OPTIONS=$(sed -n 's/^export DEB_BUILD_MAINT_OPTIONS = //p' \
		deploy/debian/rules) dpkg-buildflags --export=sh)
	# shellcheck disable=SC2086
	(unset CC; eval "$flags"; build deb --prefix=/usr $deb_opts) >"$tmp/sub"
	tally
fi

echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
