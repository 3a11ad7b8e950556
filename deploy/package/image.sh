#!/usr/bin/env bash
# deploy/package.sh image [--hypervisor]: the OCI image dist/virtwatt-VERSION.oci.tar, both
# daemons and the CLI installed from the Debian packages deploy/package.sh deb wrote into dist/
# (run that first), on a minimal Debian 12 root made offline with mmdebstrap (the essential
# set, merged /usr, no apt): no documentation but the copyright files, no man pages, locales or
# package caches, no compiler. `podman load -i` takes it as localhost/virtwatt:VERSION; push it
# with skopeo copy oci-archive:dist/virtwatt-VERSION.oci.tar docker://REGISTRY/virtwatt:VERSION.
#
# The one image serves Kubernetes nodes: libbpf (eBPF accounting) and libcurl (the Kubernetes
# API, Redfish) as the packages recommend, not libvirt0 nor libfreeipmi17, which they only
# suggest: a Kubernetes node runs no libvirtd, a pod gets no /dev/ipmi0, and with their
# dependency trees (libxml2, ...) the root grows from 67 to 123 MiB. --hypervisor makes
# dist/virtwatt-hypervisor-VERSION.oci.tar (localhost/virtwatt-hypervisor:VERSION) with both,
# for virtwatt-host in a container on a libvirt hypervisor (docs/kubernetes.md).
#
# Labels: org.opencontainers.image.{title,version,revision,source,licenses,created}
# ($VW_SOURCE_URL overrides the source; created is the last commit's time, or $SOURCE_DATE_EPOCH).
# Needs mmdebstrap, umoci and skopeo (deploy/install-deps.sh --package). $VW_DIST: the directory
# holding the .debs and receiving the image (default dist/).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
version=$(sed -n "s/^  version : '\([^']*\)',$/\1/p" meson.build | head -1)
arch=$(dpkg --print-architecture)
dist=$(realpath -m "${VW_DIST:-dist}")
name=virtwatt
extra=()
case "${1:-}" in
--hypervisor) name=virtwatt-hypervisor extra=(libvirt0 libfreeipmi17) ;;
"") ;;
*) echo "usage: deploy/package.sh image [--hypervisor]" >&2; exit 2 ;;
esac
for t in mmdebstrap umoci skopeo; do
	command -v $t >/dev/null || { echo "image: $t missing (deploy/install-deps.sh --package)" >&2; exit 1; }
done
debs=()
for p in virtwatt-host virtwatt-guest virtwatt-model; do
	f=$dist/${p}_${version}_$arch.deb
	[ -f "$f" ] || { echo "image: $f missing: run deploy/package.sh deb first" >&2; exit 1; }
	debs+=("$f")
done

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || revision="$revision-dirty"
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
source_url=${VW_SOURCE_URL:-$(sed -n 's/^Homepage: //p' deploy/debian/control)}

work=$(mktemp -d "${TMPDIR:-/tmp}/virtwatt-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The .debs where dpkg inside the root finds them under the same path (file-mirror-automount).
mkdir -p "$work/debs"
cp "${debs[@]}" "$work/debs/"
chmod -R a+rX "$work"

echo "image: mmdebstrap bookworm (essential) + ${debs[*]##*/} ${extra[*]}" >&2
includes=$(printf '%s,' "$work"/debs/*.deb)
mmdebstrap --variant=essential --mode=root \
	--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
	--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
	--include="libbpf1,libcurl4,ca-certificates${extra:+,$(IFS=,; echo "${extra[*]}")}" \
	$(for d in "$work"/debs/*.deb; do printf -- '--include=%s ' "$d"; done) \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/lintian/*' \
	--dpkgopt='path-exclude=/usr/share/bash-completion/*' \
	--customize-hook='mkdir -p "$1/usr/share/virtwatt/seccomp"' \
	--customize-hook="copy-in deploy/seccomp/virtwatt-host.json /usr/share/virtwatt/seccomp" \
	--customize-hook='rm -rf "$1"/var/cache/apt "$1"/var/lib/apt "$1"/var/log/* "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1"/usr/lib/*-linux-gnu/gconv "$1"/etc/machine-id' \
	--customize-hook='mkdir -p "$1/var/cache/virtwatt" "$1/run/virtwatt/lock" "$1/var/lib/virtwatt-guest"' \
	bookworm "$work/rootfs.tar" >"$work/mmdebstrap.log" 2>&1 || {
	tail -n 40 "$work/mmdebstrap.log" >&2
	echo "image: mmdebstrap failed" >&2
	exit 1
}

echo "image: OCI layout (umoci), labels, archive" >&2
layout=$work/oci
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci raw add-layer --image "$layout:$version" "$work/rootfs.tar"
umoci config --image "$layout:$version" --created "$created" --author "virtwatt" \
	--os linux --architecture "$arch" \
	--config.entrypoint /usr/sbin/virtwatt-host --config.exposedports 28282/tcp \
	--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	--config.label "org.opencontainers.image.title=$name" \
	--config.label "org.opencontainers.image.description=virtwatt-host, virtwatt-guest and virtwatt-model (Debian 12)" \
	--config.label "org.opencontainers.image.version=$version" \
	--config.label "org.opencontainers.image.revision=$revision" \
	--config.label "org.opencontainers.image.source=$source_url" \
	--config.label "org.opencontainers.image.licenses=Apache-2.0 AND (GPL-2.0-only OR Apache-2.0)" \
	--config.label "org.opencontainers.image.created=$created" \
	--config.workingdir /
umoci gc --layout "$layout"
mkdir -p "$dist"
out=$dist/$name-$version.oci.tar
rm -f "$out"
skopeo copy --quiet "oci:$layout:$version" "oci-archive:$out:localhost/$name:$version"
size=$(stat -c %s "$work/rootfs.tar")
echo "image: $out ($(( $(stat -c %s "$out") / 1048576 )) MiB compressed, root $(( size / 1048576 )) MiB)" >&2
echo "$out"
