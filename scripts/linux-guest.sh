#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The small Linux guest's initramfs: busybox (static), simgpu-guest built
# for the guest's kernel, simgpu-work (static) and guest/linux/init.
#
#   scripts/linux-guest.sh MODULE OUT.cpio.gz
#
# MODULE is simgpu-guest.ko for the kernel the guest boots (make check
# boots Debian's own, /boot/vmlinuz-<its release>, and builds the module
# against its headers).  Cheap (a second or two): built every run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ko=$1 out=$2
# Debian's busybox-static installs a static /bin/busybox
bb=/bin/busybox
[ -x "$bb" ] || die "linux-guest.sh: $bb (busybox-static) is needed"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,tmp,lib/modules}
cp "$bb" "$root/bin/busybox"
install -m 0644 "$ko" "$root/lib/modules/simgpu-guest.ko"
strip --strip-debug "$root/lib/modules/simgpu-guest.ko"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$GPUMIG_TOP/guest/dkms.conf")
${CC:-cc} -O2 -static -I"$GPUMIG_TOP/include/uapi" -DSGW_VERSION="\"$ver\"" \
	-o "$root/bin/simgpu-work" \
	"$GPUMIG_TOP/guest/tools/simgpu-work.c" -lpthread
install -m 0755 "$GPUMIG_TOP/guest/linux/init" "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
