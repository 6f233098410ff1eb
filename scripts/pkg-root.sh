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
# The VM's apt purge runs DKMS's depmod over every module of the root's
# kernel: under emulation that took 94 s of the distro VM's time for
# Debian's few thousand modules.  The root keeps the ones the package's
# four need, with their directories (vfio, iommu, virt), and the rest of
# Debian's tree goes; depmod here makes its indexes match.  What the test
# sees of DKMS's removal does not change: depmod has the same work per
# module, on fewer of them.
for k in "$tmp/m/lib/modules/"*/; do
	k=$(basename "$k")
	[ -d "$tmp/m/lib/modules/$k/kernel" ] || continue
	keep=$(chroot "$tmp/m" modprobe -S "$k" --show-depends gpumig simgpu simgpu-pf \
		gpumig-vfio-pci | awk '$1 == "insmod" && $2 ~ /\/kernel\// { print $2 }') ||
		die "the package's modules' dependencies on $k"
	[ -n "$keep" ] || die "no dependency of the package's modules found in $k's tree"
	(cd "$tmp/m" && find "lib/modules/$k/kernel" -type f \
		-not -path "*/kernel/drivers/vfio/*" -not -path "*/kernel/drivers/iommu/*" \
		-not -path "*/kernel/virt/*" -printf '/%p\n' | grep -vxF "$keep" | sed 's|^/||' |
		xargs -r rm -f)
	chroot "$tmp/m" depmod "$k" || die "depmod $k in the root"
	echo "package: the root keeps $(find "$tmp/m/lib/modules/$k/kernel" -type f | wc -l) of $k's modules" \
		>>"$img.install.log"
done
umount -R "$tmp/m/ccache" "$tmp/m/proc" "$tmp/m/sys" "$tmp/m/dev"
rmdir "$tmp/m/ccache"
rm -f "$img"
mke2fs -q -t ext4 -L gpumig-host -d "$tmp/m" "$img" 2G >&2 || die "mke2fs of the installed root failed"
echo "$img"
