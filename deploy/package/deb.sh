#!/usr/bin/env bash
# deploy/package.sh deb: the Debian packages virtwatt-host, virtwatt-guest and virtwatt-model
# (plus their -dbgsym, .buildinfo and .changes) into dist/, offline, with debhelper.
# The packaging lives in deploy/debian/: it is copied to debian/ in a staging copy of the tree
# (build-deb/virtwatt-VERSION/, the files git tracks or would track), built there with
# dpkg-buildpackage -b. The version is meson's project version, which must head
# deploy/debian/changelog. Build dependencies: deploy/install-deps.sh --package.
# VW_DEB_WORK and VW_DIST move the staging folder and the output (the tests do).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
work=${VW_DEB_WORK:-$src/build-deb}
dist=${VW_DIST:-$src/dist}

version=$(meson introspect --projectinfo meson.build | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
changelog_version=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
if [ "$version" != "$changelog_version" ]; then
	echo "package.sh deb: meson.build says $version, deploy/debian/changelog $changelog_version:" \
		"add an entry (dch --changelog deploy/debian/changelog -v $version)" >&2
	exit 1
fi

stage=$work/virtwatt-$version
echo "package.sh deb: staging the tree in $stage" >&2
rm -rf "$work"
mkdir -p "$stage" "$dist"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# tracked and untracked-but-not-ignored files: no build trees, no dist/
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		(cd "$src" && xargs -0 cp --parents -t "$stage" 2>/dev/null || true)
	# a file deleted in the work tree but still in the index is skipped above (cp fails): fine
else
	tar -C "$src" --exclude='./build*' --exclude=./dist --exclude=./.git -cf - . | tar -C "$stage" -xf -
fi
# what --version and the build info say (no .git in the stage)
if rev=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
	dirty=""
	git -C "$src" diff --quiet HEAD 2>/dev/null || dirty=-dirty
	echo "$rev$dirty $(git -C "$src" rev-parse --abbrev-ref HEAD)" >"$stage/.revision"
fi
rm -rf "$stage/debian"
cp -a deploy/debian "$stage/debian"

# Reproducible dates: the changelog's (help2man's man pages, file times).
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l deploy/debian/changelog -S Timestamp)
export SOURCE_DATE_EPOCH
echo "package.sh deb: dpkg-buildpackage -b (release build, no tests or fuzzers)" >&2
(cd "$stage" && dpkg-buildpackage -b -us -uc --no-sign) >"$work/build.log" 2>&1 || {
	tail -n 60 "$work/build.log" >&2
	echo "package.sh deb: dpkg-buildpackage failed; the whole log: $work/build.log" \
		"(unmet build dependencies: deploy/install-deps.sh --package)" >&2
	exit 1
}

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
rm -f "$dist"/virtwatt*_"$version"_*.deb "$dist"/virtwatt*_"$version"_*.ddeb \
	"$dist/virtwatt_${version}_$arch.changes" "$dist/virtwatt_${version}_$arch.buildinfo"
for f in "$work"/*.deb "$work"/*.ddeb "$work"/*.changes "$work"/*.buildinfo; do
	[ -e "$f" ] && cp "$f" "$dist/"
done
ls -1 "$dist"/virtwatt*_"$version"_*.deb
