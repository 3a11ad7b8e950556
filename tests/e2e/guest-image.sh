#!/usr/bin/env bash
# Build the e2e test guest: a Debian kernel extracted from its package (not installed), and an
# initramfs with static busybox, the virtio/9p/net modules in load order, virtwatt-guest with
# every library ldd lists (and the loader) at the same paths, udev (Debian's udevadm, extracted
# from its package, with the rule that links the port and deploy/udev/70-virtwatt.rules), the
# virtwatt user and group, tests/e2e/runas.c (the unit's User=/Group=) and a CPU burner.
#   tests/e2e/guest-image.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/vmlinuz and OUT_DIR/initrd.gz. The kernel and its modules are cached in
# OUT_DIR/kernel (one download per kernel version), udev in OUT_DIR/udev; the initramfs is
# rebuilt every time (the guest binary changes).
set -euo pipefail

build=$(realpath "$1")
out=$(mkdir -p "$2" && realpath "$2")
src=$(cd "$(dirname "$0")" && pwd)
guest_bin="$build/guest/virtwatt-guest"
[ -x "$guest_bin" ] || { echo "no $guest_bin" >&2; exit 1; }

# PKG (a name, or NAME=VERSION) downloaded and extracted into DIR/root (not installed); its
# name and version in DIR/package.
extract_deb() {
	local tmp
	tmp=$(mktemp -d "$out/dl.XXXXXX")
	(cd "$tmp" && apt-get download "$1" >/dev/null 2>&1) ||
		{ rm -rf "$tmp"; echo "apt-get download $1 failed" >&2; exit 1; }
	rm -rf "$2"
	mkdir -p "$2"
	dpkg -x "$tmp"/*.deb "$2/root"
	dpkg-deb -W --showformat='${Package} ${Version}' "$tmp"/*.deb >"$2/package"
	rm -rf "$tmp"
}

# ---- Kernel: the version linux-image-amd64 depends on, extracted once ----
if [ ! -f "$out/kernel/version" ]; then
	kpkg() {
		apt-cache depends linux-image-amd64 2>/dev/null |
			awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
	}
	pkg=$(kpkg)
	[ -n "$pkg" ] || { apt-get update -qq >&2 && pkg=$(kpkg); } || true
	[ -n "$pkg" ] || { echo "apt-cache knows no linux-image-amd64 (apt-get update?)" >&2; exit 1; }
	ver=${pkg#linux-image-}
	extract_deb "$pkg" "$out/kernel"
	cp "$out/kernel/root/boot/vmlinuz-$ver" "$out/kernel/vmlinuz"
	depmod -b "$out/kernel/root" "$ver"
	echo "$ver" >"$out/kernel/version"
fi
# ---- udev: the candidate udev package's, extracted once (its udevadm is systemd-udevd) ----
if [ ! -f "$out/udev/package" ]; then
	apt-cache show udev >/dev/null 2>&1 || apt-get update -qq >&2 || true
	extract_deb udev "$out/udev"
fi
ver=$(cat "$out/kernel/version")
kroot="$out/kernel/root"
cp "$out/kernel/vmlinuz" "$out/vmlinuz"

# ---- Initramfs ----
ir="$out/initrd"
rm -rf "$ir"
mkdir -p "$ir"/{bin,sbin,dev,proc,sys,mnt,run,tmp,etc,lib/modules,var/lib/virtwatt-guest}
cp "$(command -v busybox)" "$ir/bin/busybox"
file "$ir/bin/busybox" 2>/dev/null | grep -q dynamic && { echo "busybox is not static" >&2; exit 1; }
for a in $("$ir/bin/busybox" --list); do
	[ "$a" = busybox ] || ln -sf busybox "$ir/bin/$a"
done

# Modules in dependency order (busybox insmod resolves nothing).
order=()
for m in virtio_pci virtio_console virtio_net 9pnet_virtio 9p; do
	while read -r _ path _; do
		base=$(basename "$path")
		[[ " ${order[*]-} " == *" $base "* ]] || order+=("$base")
		cp "$path" "$ir/lib/modules/$base"
	done < <(modprobe -d "$kroot" -S "$ver" --show-depends "$m" | grep '^insmod')
done
printf '%s\n' "${order[@]}" >"$ir/lib/modules/order"

# A dynamically linked program's every library at its path, and the loader.
copy_libs() {
	if ldd "$1" | grep -q 'not found'; then
		echo "$1 needs a library this machine lacks: $(ldd "$1" | grep 'not found' | tr -d '\t')" >&2
		exit 1
	fi
	ldd "$1" | awk '/=> \// { print $3 } /^\t\/.*\(0x/ { print $1 }' | sort -u |
		while read -r lib; do
			mkdir -p "$ir$(dirname "$lib")"
			cp -L "$lib" "$ir$lib"
		done
}

# virtwatt-guest at a fixed path: the build tree's own path may lie under /tmp, which the
# guest's init covers with a tmpfs.
mkdir -p "$ir/usr/local/sbin"
cp "$guest_bin" "$ir/usr/local/sbin/virtwatt-guest"
ln -sf /usr/local/sbin/virtwatt-guest "$ir/bin/virtwatt-guest"
copy_libs "$guest_bin"

# udev as a tenant's VM runs it: systemd-udevd (udevadm), the default rule that makes the
# /dev/virtio-ports/NAME links, and our rule where the docs install it (docs/deploying.md).
udevadm="$out/udev/root/bin/udevadm"
[ -x "$udevadm" ] || { echo "no udevadm in $out/udev/root" >&2; exit 1; }
mkdir -p "$ir/lib/systemd" "$ir/lib/udev/rules.d" "$ir/etc/udev/rules.d"
cp "$udevadm" "$ir/bin/udevadm"
ln -sf /bin/udevadm "$ir/lib/systemd/systemd-udevd"
copy_libs "$udevadm"
cp "$out/udev/root/lib/udev/rules.d/50-udev-default.rules" "$ir/lib/udev/rules.d/"
install -m644 "$src/../../deploy/udev/70-virtwatt.rules" "$ir/etc/udev/rules.d/"

# The virtwatt user and group (useradd -r, as the docs and the package make them), found by
# udev's GROUP= and by runas (the unit's User=/Group=: setgroups, setgid, setuid, exec).
printf 'root:x:0:0:root:/root:/bin/sh\nvirtwatt:x:999:999::/nonexistent:/usr/sbin/nologin\n' \
	>"$ir/etc/passwd"
printf 'root:x:0:\nvirtwatt:x:999:\n' >"$ir/etc/group"
printf 'passwd: files\ngroup: files\n' >"$ir/etc/nsswitch.conf"
cc -O1 -static -Wall -Werror -o "$ir/bin/runas" "$src/runas.c"
# The loader is also reached through /lib64 on merged-/usr Debian.
[ -e "$ir/lib64" ] || { [ -d "$ir/usr/lib64" ] && ln -s usr/lib64 "$ir/lib64"; } || true

# The workload: a static CPU burner, its own comm ("burner").
cc -O1 -static -o "$ir/bin/burner" -x c - <<'EOF'
int main(void) { volatile unsigned long x = 0; for (;;) x++; }
EOF

cp "$src/guest-init.sh" "$ir/init"
chmod 755 "$ir/init"
(cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$out/initrd.gz")
rm -rf "$ir"
echo "guest image: kernel $ver, $(cat "$out/udev/package"), initrd $(du -h "$out/initrd.gz" | cut -f1)"
