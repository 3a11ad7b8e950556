#!/usr/bin/env bash
# One packaging entry point, offline (Debian's packages only). Everything lands in dist/.
#   deploy/package.sh deb     Debian packages virtwatt-host, virtwatt-guest, virtwatt-model
#   deploy/package.sh image   the OCI image, built from those .debs (dist/virtwatt-VERSION.oci.tar;
#                             --hypervisor: virtwatt-hypervisor-VERSION.oci.tar, with libvirt0)
#   deploy/package.sh chart   the Helm chart, packaged (dist/virtwatt-VERSION.tgz)
#   deploy/package.sh all     the three, in that order
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
	sed -n '2,7s/^# \{0,1\}//p' "$0" >&2
}

case "${1:-}" in
deb | image | chart)
	what=$1
	shift
	exec "deploy/package/$what.sh" "$@"
	;;
all)
	shift
	for what in deb image chart; do
		"deploy/package/$what.sh" "$@"
	done
	;;
-h | --help)
	usage
	;;
*)
	usage
	exit 2
	;;
esac
