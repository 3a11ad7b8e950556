#!/usr/bin/env bash
# Install the Debian packages that are missing, build, and run virtwatt-host in the foreground
# on its embedded defaults (RAPL where readable, else the built-in model). Extra arguments are
# passed to virtwatt-host, e.g. ./deploy/quickstart.sh --web.listen-address=127.0.0.1:9102
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build >/dev/null
fi
ninja -C build >/dev/null

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
exec ./build/host/virtwatt-host "$@"
