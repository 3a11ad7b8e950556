#!/bin/bash
# The Debian packages as users get them (issue 28): deploy/package.sh deb builds them, lintian
# passes them (no error, no warning), a clean Debian 12 root (mmdebstrap --variant=essential)
# holding only what their Depends name receives them with dpkg -i, and each daemon is started
# there as its installed unit would start it (the unit's ExecStart with /etc/default's ARGS, its
# User and capabilities, its state directories) and scraped; systemd-analyze verifies each
# installed unit; the guest package declares no libvirt or libfreeipmi. TAP. Root only.
# usage: deb_install.sh SOURCE_ROOT WORK_DIR
# The root is cached in WORK_DIR as a tarball keyed on its package list (reruns: seconds).
set -u
src=$1 work=$2
mkdir -p "$work"
work=$(cd "$work" && pwd)
tmp=$(mktemp -d)
root=$tmp/root
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/out" | tail -40; }
bail() { echo "1..$n"; echo "# $((n - failed)) passed, $failed failed (stopped: $1)"; exit 1; }
skip_all() {
	if [ "${CI:-}" = true ]; then echo "not ok 1 - $1"; echo "1..1"; exit 1; fi
	echo "1..0 # SKIP $1"; exit 0
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root (chroot, dpkg -i into the root)"
for t in dpkg-buildpackage dh lintian help2man mmdebstrap systemd-analyze curl setpriv; do
	command -v "$t" >/dev/null || skip_all "$t not installed (deploy/install-deps.sh --test)"
done

# ---- build: what a user runs, into the work folder
dist=$work/dist
rm -rf "$dist"
if VW_DEB_WORK=$work/deb VW_DIST=$dist "$src/deploy/package.sh" deb >"$tmp/out" 2>&1; then
	ok "deploy/package.sh deb"
else
	notok "deploy/package.sh deb"; bail "no packages"
fi
changes=$(ls "$dist"/virtwatt_*.changes)
debs=()
for p in virtwatt-host virtwatt-guest virtwatt-model; do
	f=$(ls "$dist/${p}"_*.deb 2>/dev/null | head -1)
	if [ -z "$f" ]; then echo "$p missing from $dist" >"$tmp/out"; notok "$p built"; bail "missing package"; fi
	debs+=("$f")
done
ok "virtwatt-host, virtwatt-guest, virtwatt-model built"

# ---- lintian: the .changes holds the .debs and the .buildinfo; any E: or W: fails
if lintian --fail-on error,warning --display-level '>=info' "$changes" >"$tmp/out" 2>&1 &&
	! grep -qE '^[EW]: ' "$tmp/out"; then
	ok "lintian: no error or warning"
	grep -E '^[IP]: ' "$tmp/out" | sed 's/^/# lintian: /'
else
	notok "lintian: no error or warning"
fi

# ---- what the packages declare
field() { dpkg-deb -f "$1" "$2"; }
guest_deb=${debs[1]}
rel=$(field "$guest_deb" Depends; field "$guest_deb" Recommends; field "$guest_deb" Suggests)
if echo "$rel" | grep -qE 'libvirt|libfreeipmi'; then
	echo "$rel" >"$tmp/out"; notok "virtwatt-guest declares no libvirt or libfreeipmi"
else
	ok "virtwatt-guest declares no libvirt or libfreeipmi"
fi
host_deb=${debs[0]}
rel=$(field "$host_deb" Depends)
if echo "$rel" | grep -qE 'libvirt|libfreeipmi'; then
	echo "$rel" >"$tmp/out"; notok "virtwatt-host does not depend on libvirt or libfreeipmi (loaded where installed)"
else
	ok "virtwatt-host does not depend on libvirt or libfreeipmi (loaded where installed)"
fi

# ---- a clean Debian 12 root with only the Depends of the three packages (names; apt, inside
# mmdebstrap, resolves them and theirs), cached by that list
deps=$(for d in "${debs[@]}"; do field "$d" Depends | tr ',' '\n'; done |
	sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' | grep -v '^$' | sort -u | paste -sd, -)
key=$(printf 'bookworm essential %s\n' "$deps" | sha256sum | cut -c1-16)
tarball=$work/root-$key.tar
if [ ! -s "$tarball" ]; then
	rm -f "$work"/root-*.tar
	if mmdebstrap --quiet --format=tar --variant=essential --include="$deps" bookworm "$tarball.new" >"$tmp/out" 2>&1; then
		mv "$tarball.new" "$tarball"
	else
		rm -f "$tarball.new"; notok "mmdebstrap bookworm root with $deps"; bail "no root"
	fi
fi
mkdir "$root"
tar -C "$root" -xf "$tarball"
ok "clean Debian 12 root (essential + $deps)"

cp "${debs[@]}" "$root/tmp/"
in_root=()
for d in "${debs[@]}"; do in_root+=("/tmp/${d##*/}"); done
if chroot "$root" dpkg -i "${in_root[@]}" >"$tmp/out" 2>&1; then
	ok "dpkg -i the three packages into the root"
else
	notok "dpkg -i the three packages into the root"; bail "not installed"
fi
if chroot "$root" dpkg-query -W -f='${Status}\n' virtwatt-host virtwatt-guest virtwatt-model 2>&1 |
	grep -v 'install ok installed' >"$tmp/out"; then
	notok "dpkg says all three installed"
else
	ok "dpkg says all three installed"
fi
if chroot "$root" getent passwd virtwatt >"$tmp/out" 2>&1 && chroot "$root" getent group virtwatt >>"$tmp/out" 2>&1; then
	ok "postinst made the virtwatt system user and group"
else
	notok "postinst made the virtwatt system user and group"
fi
missing=""
for f in /usr/sbin/virtwatt-host /usr/sbin/virtwatt-guest /usr/bin/virtwatt-model \
	/etc/default/virtwatt-host /etc/default/virtwatt-guest \
	/etc/virtwatt/virtwatt-host.yaml /etc/virtwatt/virtwatt-guest.yaml \
	/lib/systemd/system/virtwatt-host.service /lib/systemd/system/virtwatt-guest.service \
	/lib/udev/rules.d/70-virtwatt.rules /usr/share/man/man8/virtwatt-host.8.gz \
	/usr/share/man/man8/virtwatt-guest.8.gz /usr/share/man/man1/virtwatt-model.1.gz; do
	[ -e "$root$f" ] || missing="$missing $f"
done
echo "missing:$missing" >"$tmp/out"
if [ -z "$missing" ]; then ok "files in place"; else notok "files in place"; fi
# The libvirt hook that makes a VM's shared folder before QEMU opens it: installed executable
# where libvirt looks, and working with what an essential-only root has (sed, grep, tr, chown).
hook=/etc/libvirt/hooks/qemu.d/virtwatt
hook_uuid=0b6f2d4a-8c1e-4a7b-9d3f-5e2a1c7b9d40
mkdir -p "$root/run/virtwatt/share"
chroot "$root" chown virtwatt:virtwatt /run/virtwatt/share >"$tmp/out" 2>&1
printf "<domain type='kvm'>\n  <name>vm1</name>\n  <uuid>%s</uuid>\n  <devices>\n    <filesystem type='mount' accessmode='mapped'>\n      <source dir='/run/virtwatt/share/%s'/>\n      <target dir='virtwatt'/>\n    </filesystem>\n  </devices>\n</domain>\n" \
	$hook_uuid $hook_uuid | chroot "$root" $hook vm1 prepare begin - >>"$tmp/out" 2>&1
want="$(chroot "$root" id -u virtwatt):755"
got=$(stat -c %u:%a "$root/run/virtwatt/share/$hook_uuid" 2>>"$tmp/out")
echo "folder: $got, want $want" >>"$tmp/out"
if [ -x "$root$hook" ] && [ "$got" = "$want" ]; then
	ok "the libvirt hook is installed ($hook) and makes a VM's folder, the daemon's user's"
else
	ls -l "$root$hook" >>"$tmp/out" 2>&1
	notok "the libvirt hook is installed ($hook) and makes a VM's folder, the daemon's user's"
fi
rm -rf "$root/run/virtwatt"
conffiles=$(cat "$root"/var/lib/dpkg/info/virtwatt-*.conffiles 2>/dev/null)
echo "$conffiles" >"$tmp/out"
if echo "$conffiles" | grep -qx /etc/virtwatt/virtwatt-host.yaml &&
	echo "$conffiles" | grep -qx /etc/virtwatt/virtwatt-guest.yaml &&
	echo "$conffiles" | grep -qx /etc/default/virtwatt-host; then
	ok "the YAML configs and /etc/default files are conffiles"
else
	notok "the YAML configs and /etc/default files are conffiles"
fi
# built from this tree's commit (the staging copy has no .git: package.sh passes it on)
want_rev=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if chroot "$root" virtwatt-model --version >"$tmp/out" 2>&1; then
	ok "virtwatt-model --version in the root"
else
	notok "virtwatt-model --version in the root"
fi
if chroot "$root" virtwatt-host --version >"$tmp/out" 2>&1 && grep -q "revision $want_rev" "$tmp/out"; then
	ok "virtwatt-host --version in the root: revision $want_rev"
else
	notok "virtwatt-host --version in the root: revision $want_rev"
fi

# ---- systemd-analyze on each installed unit: verify (the root has no systemd, so the unit is
# checked from here with ExecStart pointed into the root: the binary it names must be there),
# and security --offline: the exposure systemd-analyze reports stays "OK" (below 3.0)
for u in virtwatt-host virtwatt-guest; do
	unit=$root/lib/systemd/system/$u.service
	mkdir -p "$tmp/units"
	sed "s#^ExecStart=/#ExecStart=$root/#" "$unit" >"$tmp/units/$u.service"
	if ! grep -q "^ExecStart=$root/usr/sbin/$u " "$tmp/units/$u.service"; then
		grep '^ExecStart' "$unit" >"$tmp/out"; notok "systemd-analyze verify $u.service (installed): ExecStart=/usr/sbin/$u"
	elif SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$tmp/units/$u.service" >"$tmp/out" 2>&1 &&
		! [ -s "$tmp/out" ]; then
		ok "systemd-analyze verify $u.service (installed)"
	else
		notok "systemd-analyze verify $u.service (installed)"
	fi
	systemd-analyze security --offline=yes --root="$root" "$u.service" >"$tmp/out" 2>&1
	level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/out")
	if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l < 3.0) }'; then
		ok "systemd-analyze security $u.service: exposure $level"
	else
		notok "systemd-analyze security $u.service: exposure ${level:-?} (want below 3.0)"
	fi
done

# ---- each daemon started in the root as its unit starts it, and scraped
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
unit_value() { sed -n "s/^$2=//p" "$root/lib/systemd/system/$1.service" | tail -1; }
# /proc and /sys for the root: mounted in a mount namespace of the run's own, gone with it
run_unit() { # NAME PORT: the unit's ExecStart, with its EnvironmentFile (ARGS set in /etc/default/NAME)
	local name=$1 port=$2 exec_start user caps d envfile
	sed -i "s|^ARGS=.*|ARGS=\"--web.listen-address=127.0.0.1:$port --monitor.interval=1s\"|" "$root/etc/default/$name"
	envfile=$(unit_value "$name" EnvironmentFile)
	envfile=${envfile#-}
	exec_start=$(unit_value "$name" ExecStart)
	user=$(unit_value "$name" User)
	caps=$(unit_value "$name" AmbientCapabilities | tr 'A-Z' 'a-z' | sed -e 's/cap_//g' -e 's/ /,+/g')
	# the directories systemd makes for the unit, owned by its user
	for d in $(unit_value "$name" StateDirectory); do mkdir -p "$root/var/lib/$d"; chroot "$root" chown "$user:" "/var/lib/$d"; done
	for d in $(unit_value "$name" CacheDirectory); do mkdir -p "$root/var/cache/$d"; chroot "$root" chown "$user:" "/var/cache/$d"; done
	for d in $(unit_value "$name" RuntimeDirectory); do mkdir -p "$root/run/$d"; chroot "$root" chown "$user:" "/run/$d"; done
	unshare --mount --propagation private sh -c '
		mount -t proc proc "$1/proc" && mount --rbind /sys "$1/sys" || exit 1
		exec chroot "$1" setpriv --reuid="$2" --regid="$2" --init-groups \
			--inh-caps=+"$3" --ambient-caps=+"$3" --no-new-privs \
			sh -c "${4:+. $4 && }exec $5"' sh "$root" "$user" "$caps" "$envfile" "$exec_start" \
		>"$tmp/$name.log" 2>&1 &
	pids+=($!)
}
scrape() { # PORT METRIC [LABELS]: /metrics until a METRIC series (holding LABELS) is above 0 (40 s)
	local _
	for _ in $(seq 80); do
		if curl -sf "http://127.0.0.1:$1/metrics" >"$tmp/metrics" 2>/dev/null &&
			awk -v m="$2{" -v l="${3:-}" 'index($0, m) == 1 && index($0, l) && $NF + 0 > 0 { f = 1 } END { exit !f }' "$tmp/metrics"; then
			return 0
		fi
		sleep 0.5
	done
	return 1
}
hp=$(free_port)
gp=$(free_port)
run_unit virtwatt-host "$hp"
run_unit virtwatt-guest "$gp"
if scrape "$hp" kepler_node_cpu_joules_total; then
	ok "virtwatt-host from the package serves kepler_node_cpu_joules_total, counting"
else
	{ cat "$tmp/virtwatt-host.log"; grep '^kepler_node_cpu' "$tmp/metrics"; } >"$tmp/out"
	notok "virtwatt-host from the package serves kepler_node_cpu_joules_total, counting"
fi
grep -hE 'starting|power: using|cpu: accounting' "$tmp/virtwatt-host.log" | sed 's/^/# host: /'
if scrape "$gp" virtwatt_guest_power_source_info 'kind="estimated"' && scrape "$gp" kepler_node_cpu_joules_total; then
	ok "virtwatt-guest from the package (no passthrough) serves its estimated kepler_node_cpu_joules_total, counting"
else
	{ cat "$tmp/virtwatt-guest.log"; grep -E '^(kepler_node_cpu|virtwatt_guest_power)' "$tmp/metrics"; } >"$tmp/out"
	notok "virtwatt-guest from the package (no passthrough) serves its estimated kepler_node_cpu_joules_total, counting"
fi
grep -hE 'starting|power: using|cpu: accounting' "$tmp/virtwatt-guest.log" | sed 's/^/# guest: /'
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null
pids=()

# ---- the packages under the real systemd, in a container (its own file)
. "$src/tests/deploy/deb_systemd.sh"

# ---- the maintainer scripts again: a reinstall over itself (postinst with the user present),
# then a purge (conffiles and /etc/default gone; the user stays, as Debian's policy has it)
if chroot "$root" dpkg -i "${in_root[@]}" >"$tmp/out" 2>&1; then
	ok "dpkg -i again over the installed packages"
else
	notok "dpkg -i again over the installed packages"
fi
if chroot "$root" dpkg --purge virtwatt-host virtwatt-guest virtwatt-model >"$tmp/out" 2>&1 &&
	! ls "$root/etc/virtwatt/"*.yaml "$root/etc/default/virtwatt-"* >>"$tmp/out" 2>&1 &&
	! chroot "$root" dpkg-query -W -f='${Status}\n' virtwatt-host virtwatt-guest virtwatt-model 2>/dev/null |
		grep -q 'install ok installed'; then
	ok "dpkg --purge removes the three and their conffiles"
else
	notok "dpkg --purge removes the three and their conffiles"
fi

echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
