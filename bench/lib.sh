# shellcheck shell=bash
# Helpers the benchmark scripts share (sourced from bench/*.sh, run from the repository root).

# release_build DIR TARGET...: configure DIR as a release build without sanitizers if it is not
# configured yet, refuse one configured otherwise (its figures would mean nothing), build TARGETs.
release_build() {
	local dir=$1 buildtype sanitize
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" --buildtype=release -Db_sanitize=none -Dwerror=false >/dev/null
	fi
	read -r buildtype sanitize < <(meson introspect "$dir" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["buildtype"], o["b_sanitize"])')
	if [ "$buildtype" != release ] || [ "$sanitize" != none ]; then
		echo "$dir is buildtype=$buildtype b_sanitize=$sanitize; want release and none (BUILD=...)" >&2
		return 1
	fi
	ninja -C "$dir" "$@" >/dev/null
}

# stop_pids PID...: SIGTERM each and reap it.
stop_pids() {
	local p
	for p in "$@"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# A free loopback port (the kernel picks one; small race until the server binds it).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_ready URL [SECONDS]: wait until URL answers 200 (10 s by default).
wait_ready() {
	local tries=$((${2:-10} * 10))
	for _ in $(seq "$tries"); do
		curl -sf -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "no answer from $1" >&2
	return 1
}

# VmRSS and VmHWM (KiB) of a PID.
memory_of() {
	awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { print r, h }' "/proc/$1/status"
}
