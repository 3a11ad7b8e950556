#!/bin/sh
# Offline validation of deploy/k8s/ (TAP): installs kubernetes-models@5, yaml@2 and the
# Prometheus Operator's models into BUILD_ROOT/deploy-npm once, then runs validate_k8s.mjs.
# Without node/npm (or a registry to install from) it skips; under CI=true that is a failure.
# usage: validate_k8s.sh SOURCE_ROOT BUILD_ROOT HOST_BIN GUEST_BIN [DIR --rendered]
#   DIR --rendered: the YAML under DIR (helm template output, tests/deploy/check_chart.py)
set -u
src=$1 build=$2 host_bin=$3 guest_bin=$4
dir=${5:-$src/deploy/k8s} mode=${6:-}
here=$(dirname "$0")

skip() {
	if [ "${CI:-}" = true ]; then
		echo "not ok 1 - k8s manifests validated # $1"
		echo "1..1"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}

command -v node >/dev/null 2>&1 || skip "node not installed (deploy/install-deps.sh --test)"
command -v npm >/dev/null 2>&1 || skip "npm not installed (deploy/install-deps.sh --test)"

cache=$build/deploy-npm
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one install at a time (deploy_k8s and deploy_chart share it)
if [ ! -f "$cache/.installed" ]; then
	if ! timeout 300 npm install --prefix "$cache" --no-audit --no-fund --loglevel=error \
		kubernetes-models@5 yaml@2 @kubernetes-models/prometheus-operator@6 >"$cache/npm.log" 2>&1; then
		sed 's/^/# /' "$cache/npm.log" | tail -20
		skip "npm install kubernetes-models@5 yaml@2 failed (offline?)"
	fi
	touch "$cache/.installed"
fi
flock -u 9
exec node "$here/validate_k8s.mjs" "$cache/node_modules" "$dir" "$host_bin" "$guest_bin" $mode
