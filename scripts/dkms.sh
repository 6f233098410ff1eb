#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install or remove gpumig through DKMS for one kernel, the way a user of a
# distribution kernel does.
#
#   scripts/dkms.sh install|remove [KVER]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

action=$1 kver=${2:-$KVER_DISTRO}
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$GPUMIG_TOP/dkms.conf")
dest=/usr/src/gpumig-$ver

if dkms status -m gpumig -v "$ver" 2>/dev/null | grep -q gpumig; then
	dkms remove -m gpumig -v "$ver" --all >/dev/null
fi
rm -rf "$dest"
[ "$action" = remove ] && exit 0
[ "$action" = install ] || die "usage: dkms.sh install|remove [KVER]"

mkdir -p "$dest"
cp -r "$GPUMIG_TOP"/{Kbuild,Makefile,dkms.conf,include,drivers,kunit} "$dest"/
dkms add -m gpumig -v "$ver"
dkms build -m gpumig -v "$ver" -k "$kver"
dkms install -m gpumig -v "$ver" -k "$kver" --force
