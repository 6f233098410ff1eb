#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the Debian packages (debian/) with Debian's own dh-dkms, from a
# copy of the tracked files, into build/deb/, and run lintian on them (its
# report: build/deb/lintian.txt; an error fails).  Prints the four .debs'
# paths, one a line: the host's gpumig-dkms and gpumig-tools, then the
# guest's simgpu-guest-dkms and simgpu-guest-tools.  Needs debhelper,
# dh-dkms and lintian (scripts/install-deps.sh).
#
#   scripts/deb.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v dh_dkms >/dev/null || die "dh-dkms missing (apt install debhelper dh-dkms, or scripts/install-deps.sh)"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$GPUMIG_TOP/dkms.conf")
out=$BUILD/deb
rm -rf "$out"
mkdir -p "$out/src"
# What git tracks (or, outside a git checkout, the tree without its build
# products): a package of exactly the sources.
if git -C "$GPUMIG_TOP" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$GPUMIG_TOP" ls-files -z --cached --others --exclude-standard |
		(cd "$GPUMIG_TOP" && xargs -0 cp --parents -t "$out/src" 2>/dev/null || true)
else
	(cd "$GPUMIG_TOP" && tar --exclude=./build --exclude='*.ko' --exclude='*.o' -cf - .) |
		tar -C "$out/src" -xf -
fi
(cd "$out/src" && dpkg-buildpackage -b -us -uc --no-sign >"$out/build.log" 2>&1) ||
	{ tail -n 30 "$out/build.log" >&2; die "dpkg-buildpackage failed (see $out/build.log)"; }
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
debs=("$out/gpumig-dkms_${ver}_all.deb" "$out/gpumig-tools_${ver}_$arch.deb"
      "$out/simgpu-guest-dkms_${ver}_all.deb" "$out/simgpu-guest-tools_${ver}_$arch.deb")
for d in "${debs[@]}"; do
	[ -f "$d" ] || die "no $d"
done
if command -v lintian >/dev/null; then
	lintian --no-tag-display-limit "${debs[@]}" >"$out/lintian.txt" 2>&1
	echo "lintian: $(grep -c '^E: ' "$out/lintian.txt") errors, $(grep -c '^W: ' "$out/lintian.txt") warnings (build/deb/lintian.txt)" >&2
	! grep '^E: ' "$out/lintian.txt" >&2 || die "lintian reports errors"
else
	die "lintian missing (scripts/install-deps.sh)"
fi
printf '%s\n' "${debs[@]}"
