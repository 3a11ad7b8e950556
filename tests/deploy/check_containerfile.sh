#!/bin/sh
# deploy/Containerfile built by the real Podman as a user with a registry would, against a
# Debian 12 base made here instead of docker.io/library/debian:12 (mmdebstrap --variant=apt,
# imported once as localhost/virtwatt-test-base:bookworm; apt inside reaches Debian's mirror):
# the image builds, its programs run, virtwatt-host serves /metrics in it (TAP). No layer cache
# (--layers=false: no 1 GB build stage left behind per run); the image is removed. Root only;
# skips without Podman or mmdebstrap, a failure under CI=true.
# usage: check_containerfile.sh SOURCE_ROOT BUILD_ROOT
set -u
src=$1 build=$2
. "$src/tests/deploy/podman_lib.sh"
base=$vw_base
tag=localhost/virtwatt-containerfile-test:$$
n=0 failed=0

skip() {
	if [ "${CI:-}" = true ]; then
		printf 'not ok 1 - Containerfile builds # %s\n1..1\n' "$1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}
t() { # t NAME COMMAND...: one TAP line, the command's output shown when it fails
	name=$1
	shift
	n=$((n + 1))
	if "$@" >"$work/out" 2>&1; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		tail -n 40 "$work/out" | sed 's/^/# /'
		failed=$((failed + 1))
	fi
}

[ "$(id -u)" = 0 ] || skip "needs root (Podman's root storage)"
for p in podman runc mmdebstrap nsenter curl; do
	command -v $p >/dev/null 2>&1 || skip "$p not installed (deploy/install-deps.sh --test)"
done
work=$build/deploy-containerfile
mkdir -p "$work"
vw_podman_setup "$work"
cleanup() {
	$podman rm -f -t 0 "vw-cf-$$" >/dev/null 2>&1
	$podman rmi -f "$tag" >/dev/null 2>&1
}
trap cleanup EXIT

t "a Debian 12 base image made with mmdebstrap ($base)" vw_make_base "$work"
t "podman build -f deploy/Containerfile --build-arg BASE=$base" \
	$podman build --layers=false --network host --build-arg BASE=$base -f "$src/deploy/Containerfile" \
	-t "$tag" "$src"
t "virtwatt-host --version in the image" $podman run --rm --network none "$tag" --version
t "virtwatt-guest --version in the image" \
	$podman run --rm --network none --entrypoint /usr/sbin/virtwatt-guest "$tag" --version
t "virtwatt-model --help in the image" \
	$podman run --rm --network none --entrypoint /usr/bin/virtwatt-model "$tag" --help
t "the seccomp profile and configs are where the manifests expect them" \
	$podman run --rm -i --network none --entrypoint /bin/sh "$tag" -c \
	'cmp /usr/share/virtwatt/seccomp/virtwatt-host.json /dev/stdin && test -f /etc/virtwatt/virtwatt-host.yaml' \
	<"$src/deploy/seccomp/virtwatt-host.json"
serve() {
	$podman run -d --name "vw-cf-$$" --network none --read-only --cap-drop ALL \
		--cap-add BPF,PERFMON,DAC_READ_SEARCH,SYS_PTRACE -v /sys:/host/sys:ro -v /proc:/host/proc:ro \
		"$tag" --host.sysfs=/host/sys --host.procfs=/host/proc --web.listen-address=:28282 \
		--metrics=node,process --passthrough.enable=false --kube.node-name=cf-test \
		--monitor.interval=1s >/dev/null || return 1
	pid=$($podman inspect -f '{{.State.Pid}}' "vw-cf-$$")
	for _ in $(seq 40); do
		if nsenter -t "$pid" -n curl -sf http://127.0.0.1:28282/metrics >"$work/metrics"; then
			grep -q '^virtwatt_cpu_accounting_info{' "$work/metrics" && return 0
		fi
		sleep 0.5
	done
	$podman logs "vw-cf-$$"
	return 1
}
t "virtwatt-host from the image serves /metrics" serve
echo "1..$n"
[ $failed -eq 0 ]
