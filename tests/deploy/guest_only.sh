#!/bin/sh
# A guest-only build, as a VM's tenant makes it: configured where pkg-config knows neither libvirt
# nor libfreeipmi (the host daemon's libraries), release, no tests or fuzzers; virtwatt-guest
# built alone; it neither links nor loads libvirt, libfreeipmi or libcurl's Redfish client
# (NEEDED entries and the sonames it can dlopen), and asking for the host daemon there fails
# naming the missing library. TAP.
# usage: guest_only.sh SOURCE_ROOT WORK_DIR
set -u
src=$1 work=$2
mkdir -p "$work"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/out" | tail -40; }

# pkg-config's own search path, every .pc but libvirt's and libfreeipmi's.
mkdir "$tmp/pc"
for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
	for f in "$d"/*.pc; do
		[ -e "$f" ] || continue
		case ${f##*/} in libvirt*.pc | libfreeipmi*.pc) continue ;; esac
		[ -e "$tmp/pc/${f##*/}" ] || ln -s "$f" "$tmp/pc/"
	done
done
export PKG_CONFIG_LIBDIR="$tmp/pc" PKG_CONFIG_PATH=
opts="-Dbuildtype=release -Dtests=disabled -Dfuzz=disabled -Dmodel_cli=disabled"

# The host daemon asked for where its libraries are not: an error naming libfreeipmi.
rm -rf "$work/host-enabled"
# shellcheck disable=SC2086
if meson setup $opts -Dhost=enabled "$work/host-enabled" "$src" >"$tmp/out" 2>&1; then
	notok "-Dhost=enabled without libfreeipmi fails"
elif grep -q 'libfreeipmi' "$tmp/out"; then
	ok "-Dhost=enabled without libfreeipmi fails, naming it"
else
	notok "-Dhost=enabled without libfreeipmi fails, naming it"
fi
rm -rf "$work/host-enabled"

# auto: the host daemon left out, said so.
rm -rf "$work/host-auto"
# shellcheck disable=SC2086
if meson setup $opts "$work/host-auto" "$src" >"$tmp/out" 2>&1 &&
	grep -q 'virtwatt-host *: NO (libfreeipmi not found)' "$tmp/out"; then
	ok "-Dhost=auto without libfreeipmi: configured, virtwatt-host left out and said so"
else
	notok "-Dhost=auto without libfreeipmi: configured, virtwatt-host left out and said so"
fi
rm -rf "$work/host-auto"

b=$work/guest
# shellcheck disable=SC2086
if [ -f "$b/build.ninja" ]; then
	meson setup --reconfigure $opts -Dhost=disabled "$b" "$src" >"$tmp/out" 2>&1
else
	meson setup $opts -Dhost=disabled "$b" "$src" >"$tmp/out" 2>&1
fi
if [ $? -ne 0 ]; then
	notok "guest-only configure (-Dhost=disabled, no libvirt or libfreeipmi .pc)"
	echo "1..$n"
	exit 1
fi
ok "guest-only configure (-Dhost=disabled, no libvirt or libfreeipmi .pc)"
if meson introspect --targets "$b" | grep -q '"name": "virtwatt-host"'; then
	echo "virtwatt-host is a target" >"$tmp/out"; notok "no host target in the guest-only build"
else
	ok "no host target in the guest-only build"
fi

if ninja -C "$b" guest/virtwatt-guest >"$tmp/out" 2>&1; then
	ok "ninja guest/virtwatt-guest"
else
	notok "ninja guest/virtwatt-guest"; echo "1..$n"; exit 1
fi
bin=$b/guest/virtwatt-guest
readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' >"$tmp/needed"
if grep -E 'libvirt|libfreeipmi|libcurl' "$tmp/needed" >"$tmp/out"; then
	notok "virtwatt-guest NEEDED has no libvirt, libfreeipmi, libcurl"
else
	ok "virtwatt-guest NEEDED has no libvirt, libfreeipmi, libcurl ($(tr '\n' ' ' <"$tmp/needed"))"
fi
# What it may dlopen: the sonames it carries. libcurl.so.4 is the pods' API-server client
# (shared/workload), loaded only with --kube.enable; libvirt and libfreeipmi never.
if strings "$bin" | grep -E '^lib(virt|freeipmi)[.a-z0-9_-]*\.so' >"$tmp/out"; then
	notok "virtwatt-guest cannot dlopen libvirt or libfreeipmi"
else
	ok "virtwatt-guest cannot dlopen libvirt or libfreeipmi"
fi
if "$bin" --version >"$tmp/out" 2>&1 && grep -q 'virtwatt' "$tmp/out"; then
	ok "virtwatt-guest --version runs"
else
	notok "virtwatt-guest --version runs"
fi

echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
