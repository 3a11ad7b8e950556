#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# bench/truth/run.sh OUTDIR [--seconds N] [truth.py options]
#     The truth check on this machine's real meters (NVIDIA GPUs through the driver's NVML;
#     CPU packages through RAPL or hwmon where readable), with virtwatt-host from the bundle
#     (.truth-bundle/, made by bench/truth/bundle.sh). Writes OUTDIR/table.md (also printed),
#     results.json, meter_series.csv, tool_series.csv, host.log, run.log. See README.md.
#
# bench/truth/run.sh OUTDIR --fake [--host-bin BIN] [--nvml-library LIB]
#     The same protocol and analysis on fakes with known truth (tests/fake_nvml.c and a fixture
#     RAPL and procfs): a self-test, not a measurement. Defaults: build/host/virtwatt-host and
#     build/tests/libnvidia-ml.so.1 (the dev build: meson setup build; ninja -C build).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
	sed -n '4,13s/^# \{0,1\}//p' "$0" >&2
	exit 2
fi
outdir=$1
shift

py=$(command -v python3 || true)
if [ -z "$py" ]; then
	echo "truth: no python3 on this machine" >&2
	exit 1
fi

fake=0 host_bin="" nvml=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case "${args[$i]}" in
	--fake) fake=1 ;;
	--host-bin) host_bin=${args[$((i + 1))]} ;;
	--host-bin=*) host_bin=${args[$i]#*=} ;;
	--nvml-library) nvml=${args[$((i + 1))]} ;;
	--nvml-library=*) nvml=${args[$i]#*=} ;;
	esac
done

extra=()
if [ "$fake" = 1 ]; then
	if [ -z "$host_bin" ]; then
		host_bin=$root/build/host/virtwatt-host
		[ -x "$host_bin" ] || { echo "truth: --fake needs $host_bin (meson setup build; ninja -C build) or --host-bin" >&2; exit 1; }
		extra+=(--host-bin "$host_bin")
	fi
	if [ -z "$nvml" ]; then
		nvml=$root/build/tests/libnvidia-ml.so.1
		[ -e "$nvml" ] || { echo "truth: --fake needs the fake NVML $nvml (ninja -C build) or --nvml-library" >&2; exit 1; }
		extra+=(--nvml-library "$nvml")
	fi
	# The dev build's fake NVML is built with ASan; python3 loading it is told not to mind.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
elif [ -z "$host_bin" ]; then
	bundle=${VW_TRUTH_BUNDLE:-$root/.truth-bundle}
	if [ ! -x "$bundle/bin/virtwatt-host" ]; then
		echo "truth: no bundle at $bundle: run bench/truth/bundle.sh on the build machine" \
			"(and carry .truth-bundle to this one)" >&2
		exit 1
	fi
	wrap=$(mktemp -d /tmp/vw-truth-wrap.XXXXXX)
	trap 'rm -rf "$wrap"' EXIT
	# The machine's loader with the bundled libraries if that runs; else the bundled glibc.
	# (VW_TRUTH_BUNDLED_GLIBC=1 takes the bundled glibc whatever this machine's: to test it.)
	if [ -z "${VW_TRUTH_BUNDLED_GLIBC:-}" ] &&
		LD_LIBRARY_PATH=$bundle/lib "$bundle/bin/virtwatt-host" --version >/dev/null 2>&1; then
		printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bin/virtwatt-host "$@"\n' \
			"$bundle" "$bundle" >"$wrap/virtwatt-host"
		echo "truth: virtwatt-host from $bundle (this machine's glibc)"
	elif "$bundle/glibc/ld-linux-x86-64.so.2" --library-path "$bundle/lib:$bundle/glibc" \
		"$bundle/bin/virtwatt-host" --version >/dev/null 2>&1; then
		printf '#!/bin/sh\nexec %s/glibc/ld-linux-x86-64.so.2 --library-path %s/lib:%s/glibc %s/bin/virtwatt-host "$@"\n' \
			"$bundle" "$bundle" "$bundle" "$bundle" >"$wrap/virtwatt-host"
		echo "truth: virtwatt-host from $bundle (the bundled glibc: this machine's is older)"
	else
		echo "truth: the bundled virtwatt-host does not run here:" >&2
		LD_LIBRARY_PATH=$bundle/lib "$bundle/bin/virtwatt-host" --version >&2 || true
		exit 1
	fi
	chmod +x "$wrap/virtwatt-host"
	extra+=(--host-bin "$wrap/virtwatt-host")
fi

# A SIGTERM (a timeout) goes on to the check, which stops its workloads and the daemon and
# writes what it measured so far.
"$py" "$here/truth.py" "$outdir" "$@" "${extra[@]}" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
rc=0
wait "$child" || rc=$?
if [ "$rc" -gt 128 ]; then # the trap ran: wait for the check itself
	rc=0
	wait "$child" || rc=$?
fi
exit "$rc"
