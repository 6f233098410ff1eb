#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the path of a Debian bookworm root filesystem (and, next to it,
# PATH.img: the same as an ext4 image) that stands for a
# GPU host running Debian's kernel: that kernel's image and headers (the
# exact version the host's test kernel is), DKMS, udev, systemd's
# modules-load and mdevctl.  The distro VM installs the gpumig-dkms
# package into it with apt, runs its boot-time steps, migrates and
# removes the package again (scripts/guest/suite-package.sh), in a
# throw-away overlay: the test VMs' own root is the host's, read-only.
# Made with mmdebstrap, cached outside the repository keyed by its inputs.
#
#   scripts/bookworm-root.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mirror=${DEBIAN_MIRROR:-$(apt_uri bookworm)}
secmirror=${DEBIAN_SECURITY_MIRROR:-$(apt_uri bookworm-security)}
kver_pkg=$(dpkg-query -W -f='${Version}' "linux-headers-$KVER_DISTRO" 2>/dev/null) ||
	die "linux-headers-$KVER_DISTRO is not installed on the host (scripts/install-deps.sh)"
pkgs="linux-image-$KVER_DISTRO-unsigned=$kver_pkg,linux-headers-$KVER_DISTRO=$kver_pkg"
pkgs+=",dkms,udev,systemd,kmod,mdevctl,ccache"
key=$( { echo "$mirror $secmirror $pkgs"; echo bookworm bookworm-security bookworm-updates; } |
	sha256sum | cut -c1-12)
dir=$GPUMIG_CACHE/bookworm-host-$key
if [ -f "$dir.done" ]; then
	echo "$dir"
	exit 0
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap missing (run scripts/install-deps.sh)"
log "making a bookworm root with Debian's $KVER_DISTRO and DKMS in $dir; cached for later runs"
rm -rf "$dir"
# mmdebstrap needs the target's parent (a fresh machine has no cache yet)
mkdir -p "$GPUMIG_CACHE"
mmdebstrap --quiet --variant=apt --components=main --include="$pkgs" \
	--customize-hook='chroot "$1" dkms --version' \
	bookworm "$dir" \
	"deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
	"deb $secmirror bookworm-security main" >&2 ||
	die "mmdebstrap failed"
[ -d "$dir/lib/modules/$KVER_DISTRO/kernel" ] && [ -e "$dir/lib/modules/$KVER_DISTRO/build" ] ||
	die "the bookworm root has no $KVER_DISTRO modules or headers"
# The same root as an ext4 image, which the VM gets as a read-only disk:
# the VMs' 9p root is read without a page cache, and DKMS's build reads
# the kernel headers thousands of times (ten minutes under emulation
# through 9p).
rm -f "$dir.img"
mke2fs -q -t ext4 -L gpumig-host -d "$dir" "$dir.img" 2G >&2 || die "mke2fs of the root failed"
touch "$dir.done"
echo "$dir"
