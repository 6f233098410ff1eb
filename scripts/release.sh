#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the path of a directory holding a released gpumig's four modules,
# built for one kernel from the release's own commit, which CHANGELOG.md
# names ("## 0.1 (released DATE at commit SHA)"; a tag may not travel with
# a clone, the changelog does).  Cached outside the repository, keyed by
# the commit, the kernel and the compiler.  A clone without the commit (a
# shallow one) fails here, with what to do: the lanes that compare
# releases fail rather than skip.
#
#   scripts/release.sh VERSION KDIR     e.g. 0.1 /lib/modules/6.12.117+deb12-amd64/build
#   scripts/release.sh --list           every released VERSION and its commit
set -euo pipefail
. "$(dirname "$0")/lib.sh"

releases() {
	sed -n 's/^## \([0-9][0-9.]*\) (released [^ ]* at commit \([0-9a-f]\{40\}\))$/\1 \2/p' \
		"$GPUMIG_TOP/CHANGELOG.md"
}

if [ "${1:-}" = --list ]; then
	releases
	exit 0
fi
[ $# -eq 2 ] || die "usage: release.sh VERSION KDIR | --list"
ver=$1 kdir=$2
commit=$(releases | awk -v v="$ver" '$1 == v { c = $2 } END { print c }')
[ -n "$commit" ] || die "CHANGELOG.md names no commit for release $ver"
git -C "$GPUMIG_TOP" cat-file -e "$commit^{commit}" 2>/dev/null ||
	die "release $ver's commit $commit is not in this clone (shallow?): git fetch --unshallow, or clone without --depth"
[ -f "$kdir/.config" ] || die "$kdir is not a configured kernel tree"
krel=$(cat "$kdir/include/config/kernel.release" 2>/dev/null || basename "$(dirname "$kdir")")
key=$( { echo "$commit"; echo "$krel"; sha256sum <"$kdir/.config"; gcc --version | sed -n 1p; } |
	sha256sum | cut -c1-12)
dir=$GPUMIG_CACHE/gpumig-$ver-$key
if [ -f "$dir/.gpumig-done" ]; then
	echo "$dir"
	exit 0
fi
log "building gpumig $ver (commit ${commit:0:12}) for $krel in $dir; cached for later runs"
rm -rf "$dir"
mkdir -p "$dir/src"
git -C "$GPUMIG_TOP" archive "$commit" Kbuild Makefile dkms.conf include drivers kunit |
	tar -x -C "$dir/src"
got=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$dir/src/dkms.conf")
[ "$got" = "$ver" ] || die "commit $commit says it is version '$got', not $ver"
make -C "$kdir" M="$dir/src" -j"$JOBS" modules >"$dir/build.log" 2>&1 ||
	{ tail -n 30 "$dir/build.log" >&2; die "gpumig $ver did not build for $krel (see $dir/build.log)"; }
for m in gpumig simgpu simgpu-pf gpumig-vfio-pci; do
	[ -f "$dir/src/$m.ko" ] || die "gpumig $ver built no $m.ko"
	cp "$dir/src/$m.ko" "$dir/"
done
touch "$dir/.gpumig-done"
echo "$dir"
