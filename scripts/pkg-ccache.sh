#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Fill the compiler cache that the distro VM's package lane reads, and
# print its path.  Under emulation DKMS's build of gpumig-dkms takes about
# ten minutes, so the host first installs the same package into a
# throw-away overlay of the same bookworm root (scripts/bookworm-root.sh),
# natively, with Debian's kernel-headers ccache switch
# (DEBIAN_KERNEL_USE_CCACHE): same compiler, same headers, same paths.
# The VM's install then runs apt, DKMS, kbuild, linking, compression
# and depmod for real, and takes each compiled object from this cache
# (read-only there).  Kept in $GPUMIG_CACHE/ccache-pkg.
#
#   scripts/pkg-ccache.sh ROOT DEB
set -euo pipefail
. "$(dirname "$0")/lib.sh"

root=$1 deb=$2
cc=$GPUMIG_CACHE/ccache-pkg
mkdir -p "$cc"
[ "$(id -u)" -eq 0 ] || die "pkg-ccache.sh needs root (overlay mounts, chroot)"
tmp=$(mktemp -d /tmp/gpumig-pkg.XXXXXX)
cleanup() {
	umount -R "$tmp/m" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/u" "$tmp/w" "$tmp/m"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$tmp/u,workdir=$tmp/w" "$tmp/m"
for d in /proc /sys /dev; do
	mount --rbind "$d" "$tmp/m$d"
done
mkdir -p "$tmp/m/ccache" "$tmp/m/deb"
mount --bind "$cc" "$tmp/m/ccache"
cp "$deb" "$tmp/m/deb/"
DEBIAN_FRONTEND=noninteractive DEBIAN_KERNEL_USE_CCACHE=1 CCACHE_DIR=/ccache \
	chroot "$tmp/m" apt-get install -y -q "/deb/$(basename "$deb")" >"$tmp/install.log" 2>&1 ||
	{ tail -n 30 "$tmp/install.log" >&2; die "installing $(basename "$deb") in the root failed"; }
CCACHE_DIR=/ccache chroot "$tmp/m" ccache --show-stats >&2 || true
echo "$cc"
