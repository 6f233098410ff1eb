#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the gpumig-dkms and gpumig-tools packages natively into a throw-away overlay of
# the bookworm root (scripts/bookworm-root.sh) with apt, as an operator's
# host would (dh-dkms's postinst: DKMS builds the four modules for
# Debian's kernel with that kernel's headers and installs them), and write
# the installed root as an ext4 image for the distro VM; print its path.
# The VM then runs what needs the running kernel: the boot-time steps,
# the instances, a migration, gpumig-bugreport and the removal.  Under
# emulation the same apt install (DKMS's kbuild, compression, depmod over
# every module of the kernel) took ten minutes, with the compiler cache
# warm; natively it takes under a minute.  Compiled objects are cached in
# $GPUMIG_CACHE/ccache-pkg (Debian's DEBIAN_KERNEL_USE_CCACHE switch);
# the image goes to OUT (it changes with the package).
#
#   scripts/pkg-root.sh ROOT OUT.img DEB...
set -euo pipefail
. "$(dirname "$0")/lib.sh"

root=$1 img=$2
shift 2
debs=("$@")
pkg_overlay "$root" "${debs[@]}"
tmp=$PKG_TMP
t0=$(date +%s)
DEBIAN_FRONTEND=noninteractive DEBIAN_KERNEL_USE_CCACHE=1 CCACHE_DIR=/ccache \
	chroot "$tmp/m" sh -c 'apt-get install -y -q /deb/*.deb' >"$img.install.log" 2>&1 ||
	{ tail -n 30 "$img.install.log" >&2; die "installing ${debs[*]} in the root failed"; }
echo "package: apt install took $(($(date +%s) - t0)) s (natively)" >>"$img.install.log"
CCACHE_DIR=/ccache chroot "$tmp/m" ccache --show-stats >&2 || true
rm -rf "$tmp/m/deb"
umount -R "$tmp/m/ccache" "$tmp/m/proc" "$tmp/m/sys" "$tmp/m/dev"
rmdir "$tmp/m/ccache"
rm -f "$img"
mke2fs -q -t ext4 -L gpumig-host -d "$tmp/m" "$img" 2G >&2 || die "mke2fs of the installed root failed"
echo "$img"
