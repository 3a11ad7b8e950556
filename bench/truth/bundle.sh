#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# bench/truth/bundle.sh [DIR]: the release virtwatt-host and the shared libraries it needs, in
# DIR (default .truth-bundle/ at the repository root, git-ignored), for bench/truth/run.sh on a
# machine that has none of them (the GPU machine: carried there with the working tree).
#
#   DIR/bin/virtwatt-host   release build (build-rel/, configured here if absent), stripped
#   DIR/lib/                every library `ldd` names that is not glibc's, plus the ones the
#                           daemon dlopen()s for this check (libbpf.so.1: the BPF CPU accountant;
#                           libyaml-0.so.2: a config file), and their own dependencies
#   DIR/glibc/              glibc's own libraries and loader, used only where the machine's
#                           glibc is older than this build's (run.sh tries the machine's first)
#   DIR/MANIFEST            what was copied, from where, and the build's commit
#
# Not bundled: libcurl, libvirt, libfreeipmi, libcrypt (dlopen'ed for Kubernetes, libvirt, IPMI
# and web auth, none of which the check uses: the daemon says so in one line and goes on).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/.truth-bundle}
build=$root/build-rel

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" -Dbuildtype=release -Dtests=disabled -Dfuzz=disabled
fi
ninja -C "$build" -j2 host/virtwatt-host

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/glibc"
cp "$build/host/virtwatt-host" "$out/bin/"
strip "$out/bin/virtwatt-host"

is_glibc() {
	case "$(basename "$1")" in
	ld-linux*.so* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
		libresolv.so.* | libutil.so.* | libanl.so.* | libmvec.so.*) return 0 ;;
	esac
	return 1
}

# A library's path as this machine's loader resolves its soname.
resolve() {
	ldconfig -p | awk -v n="$1" '$1 == n && /x86-64|x86_64/ { print $NF; exit }'
}

copy_with_deps() { # FILE: it (unless the binary) and what ldd says it needs
	local f=$1 lib path
	while read -r lib path; do
		[ -n "$path" ] || continue
		if is_glibc "$lib"; then
			cp -Ln "$path" "$out/glibc/$lib" 2>/dev/null || true
		else
			cp -Ln "$path" "$out/lib/$lib" 2>/dev/null || true
		fi
	done < <(ldd "$f" | awk '/=>/ && $3 ~ /^\// { print $1, $3 } /^\t\/.*ld-linux/ { print $1, $1 }' |
		sed 's#^/lib64/\(ld-linux[^ ]*\) .*#\1 /lib64/\1#')
}

copy_with_deps "$out/bin/virtwatt-host"
for so in libbpf.so.1 libyaml-0.so.2; do
	p=$(resolve "$so")
	if [ -z "$p" ]; then
		echo "bundle: $so is not installed here: not bundled (see deploy/install-deps.sh)" >&2
		continue
	fi
	cp -Ln "$p" "$out/lib/$so"
	copy_with_deps "$p"
done
# The loader under its own name, and glibc's compatibility libraries that the driver's
# libnvidia-ml.so.1 may still name: with the bundled glibc they must come from the same glibc.
[ -e "$out/glibc/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$out/glibc/"
for so in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
	p=$(resolve "$so")
	[ -z "$p" ] || [ -e "$out/glibc/$so" ] || cp -L "$p" "$out/glibc/$so"
done

{
	echo "virtwatt truth bundle: built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m)," \
		"commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		"$(git -C "$root" diff --quiet 2>/dev/null || echo '(with uncommitted changes)')"
	echo "glibc here: $(ldd --version | head -1)"
	(cd "$out" && find . -type f -printf '%P %s\n' | sort)
} >"$out/MANIFEST"
du -sh "$out"
"$out/bin/virtwatt-host" --version >/dev/null 2>&1 ||
	LD_LIBRARY_PATH=$out/lib "$out/bin/virtwatt-host" --version
echo "bundle: $out ($(wc -l <"$out/MANIFEST") lines of MANIFEST)"
