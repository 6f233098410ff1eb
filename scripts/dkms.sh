#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install gpumig through DKMS for one kernel (the running one unless
# KVER is given), the way a user of a distribution kernel does, or remove
# it from every kernel.
#
#   scripts/dkms.sh install [KVER]
#   scripts/dkms.sh remove
set -euo pipefail
. "$(dirname "$0")/lib.sh"

action=$1 kver=${2:-$(uname -r)}
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$GPUMIG_TOP/dkms.conf")
dest=/usr/src/gpumig-$ver

if [[ $(dkms status -m gpumig -v "$ver" 2>/dev/null) == *gpumig* ]]; then
	dkms remove -m gpumig -v "$ver" --all >/dev/null
fi
rm -rf "$dest"
[ "$action" = remove ] && exit 0
[ "$action" = install ] || die "usage: dkms.sh install|remove [KVER]"

[ -d "/lib/modules/$kver/build" ] ||
	die "no headers for kernel $kver: install linux-headers-$kver (apt install linux-headers-$kver)"
mkdir -p "$dest"
cp -r "$GPUMIG_TOP"/{Kbuild,Makefile,dkms.conf,include,drivers,kunit} "$dest"/
dkms add -m gpumig -v "$ver"
dkms build -m gpumig -v "$ver" -k "$kver"
dkms install -m gpumig -v "$ver" -k "$kver" --force
