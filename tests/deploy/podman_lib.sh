# Sourced by the deploy tests that run the real Podman (check_containerfile.sh, deb_systemd.sh):
# podman as they call it (runc, cgroupfs: no systemd on the test machine), a containers.conf
# within this sandbox's hard limits (runc: "error setting rlimits"), and the Debian 12 base
# image made here (mmdebstrap --variant=apt, imported once as $vw_base; apt inside reaches
# Debian's mirror) in place of docker.io/library/debian:12.
#   vw_podman_setup WORK_DIR   exports CONTAINERS_CONF into WORK_DIR
#   vw_make_base WORK_DIR      imports $vw_base unless it exists
podman="podman --runtime runc --cgroup-manager cgroupfs"
vw_base=localhost/virtwatt-test-base:bookworm

vw_podman_setup() {
	printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n' >"$1/containers.conf"
	export CONTAINERS_CONF="$1/containers.conf"
}

vw_make_base() {
	$podman image exists $vw_base && return 0
	mmdebstrap --variant=apt --mode=root bookworm "$1/base.tar" &&
		$podman import "$1/base.tar" $vw_base && rm -f "$1/base.tar"
}
