#!/usr/bin/env bash
# Install the Debian packages that are missing, build the two daemons (release, no sanitizers,
# no tests or fuzzers, in build-release/), and run virtwatt-host in the foreground on its
# embedded defaults (RAPL where readable, else the built-in model). Extra arguments are passed
# to virtwatt-host, e.g. ./deploy/quickstart.sh --web.listen-address=127.0.0.1:9102
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
b=build-release
opts=(-Dbuildtype=release -Db_sanitize=none -Dtests=disabled -Dfuzz=disabled)
echo "quickstart: building virtwatt-host and virtwatt-guest (release) in $b/ ..." >&2
if [ ! -f "$b/build.ninja" ]; then
	meson setup "${opts[@]}" "$b" >/dev/null
else
	meson configure "${opts[@]}" "$b" >/dev/null # whatever was changed there since
fi
ninja -C "$b" host/virtwatt-host guest/virtwatt-guest
# Never serve a sanitizer build (slow, and ASan's reports are not for a quick start).
if readelf -d "$b/host/virtwatt-host" | grep -qE 'NEEDED.*lib(a|ub|t)san'; then
	echo "quickstart: $b/host/virtwatt-host is a sanitizer build: remove $b/ and run this again" >&2
	exit 1
fi

listen=":28282"
for a in "$@"; do
	case "$a" in --web.listen-address=*) listen="${a#*=}" ;; esac
done
host="${listen%:*}"
port="${listen##*:}"
echo "virtwatt-host: metrics at http://${host:-localhost}:${port}/metrics  (Ctrl-C stops it)"
if [ "$(id -u)" -ne 0 ]; then
	echo "virtwatt-host: not root: RAPL energy files are root-only (Linux 5.10+), so the" \
		"built-in model estimates power unless you run this with sudo" >&2
fi
exec "./$b/host/virtwatt-host" "$@"
