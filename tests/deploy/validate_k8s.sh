#!/bin/sh
# Offline validation of deploy/k8s/ (TAP): installs kubernetes-models@5, yaml@2 and the
# Prometheus Operator's models into BUILD_ROOT/deploy-npm once, then runs validate_k8s.mjs.
# Without node/npm (or a registry to install from) it skips; under CI=true that is a failure.
# usage: validate_k8s.sh SOURCE_ROOT BUILD_ROOT HOST_BIN GUEST_BIN
set -u
src=$1 build=$2 host_bin=$3 guest_bin=$4
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
if [ ! -f "$cache/.installed" ]; then
	mkdir -p "$cache"
	if ! timeout 300 npm install --prefix "$cache" --no-audit --no-fund --loglevel=error \
		kubernetes-models@5 yaml@2 @kubernetes-models/prometheus-operator@6 >"$cache/npm.log" 2>&1; then
		sed 's/^/# /' "$cache/npm.log" | tail -20
		skip "npm install kubernetes-models@5 yaml@2 failed (offline?)"
	fi
	touch "$cache/.installed"
fi
exec node "$here/validate_k8s.mjs" "$cache/node_modules" "$src/deploy/k8s" "$host_bin" "$guest_bin"
