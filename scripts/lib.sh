# SPDX-License-Identifier: GPL-2.0
# Common settings for gpumig's scripts.  Sourced, not run.

GPUMIG_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Kernel trees are cached outside the repository so that later runs on the
# same machine reuse them; keyed by kernel version and config hash.
# The cache must be visible inside virtme-ng guests, which mount fresh
# tmpfs/overlays over /var, /tmp, /etc, /usr...: a home directory is not.
GPUMIG_CACHE=${GPUMIG_CACHE:-${HOME:-/root}/.cache/gpumig}
KVER_DISTRO=${KVER_DISTRO:-6.12.117+deb12-amd64}
DISTRO_KDIR=/lib/modules/$KVER_DISTRO/build
DISTRO_VMLINUZ=/boot/vmlinuz-$KVER_DISTRO
JOBS=${JOBS:-$(nproc)}

# apt_uri SUITE: the archive the host's own apt configuration uses for
# SUITE, or, when it has no entry for SUITE (bookworm-backports and trixie
# before install-deps.sh added them), the one it uses for bookworm, which
# carries every suite; security updates live in an archive of their own.
# No script names an archive host: a machine with a local mirror or a
# proxy keeps using it.  DEBIAN_MIRROR overrides.
apt_uri() {
	local all uri
	all=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 2>/dev/null) || all=""
	uri=$(awk -v s="$1" '$1 == s && u == "" { u = $2 } END { print u }' <<<"$all")
	[ -n "$uri" ] || [[ $1 == *-security ]] ||
		uri=$(awk '$1 == "bookworm" && u == "" { u = $2 } END { print u }' <<<"$all")
	[ -n "$uri" ] || die "the host's apt configuration has no archive for $1 (or bookworm): add one to /etc/apt/sources.list.d"
	echo "${uri%/}"
}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# A script that stops on the first error (set -e) says which command it
# was, so no step's log is ever empty when it fails.
if [[ $- == *e* ]]; then
	set -o errtrace
	trap 'rc=$?; [[ $- != *e* ]] || log "error: ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" exited $rc"' ERR
fi

# kernel_tree SERIES FRAGMENT MODE: print the path of a configured tree of
# linux-source-SERIES built with FRAGMENT.  MODE is "full" (bzImage and
# modules, for booting) or "prepare" (modules_prepare only, compile checks).
kernel_tree() {
	local series=$1 frag=$2 mode=$3 tarball key dir
	tarball=$(find /usr/src -maxdepth 1 -name "linux-source-$series.tar.*" | sort | sed -n 1p)
	[ -n "$tarball" ] || die "linux-source-$series not installed (run scripts/install-deps.sh)"
	key=$( { echo "$mode"; basename "$tarball"; stat -c %s "$tarball"; cat "$frag"; gcc --version | sed -n 1p; } |
		sha256sum | cut -c1-12)
	dir=$GPUMIG_CACHE/linux-$series-$mode-$key
	if [ -f "$dir/.gpumig-done" ]; then
		echo "$dir/src"
		return 0
	fi
	log "building kernel tree $dir ($mode); this is cached for later runs"
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -C "$dir" -xf "$tarball"
	mv "$dir"/linux-source-"$series" "$dir/src"
	(
		cd "$dir/src"
		make -s allnoconfig >/dev/null
		cat "$frag" >> .config
		make -s olddefconfig >/dev/null
		if [ "$mode" = full ]; then
			make -s -j"$JOBS" bzImage modules >"$dir/build.log" 2>&1 ||
				{ tail -n 40 "$dir/build.log" >&2; exit 1; }
		else
			make -s -j"$JOBS" modules_prepare >"$dir/build.log" 2>&1 ||
				{ tail -n 40 "$dir/build.log" >&2; exit 1; }
		fi
	) || die "kernel build failed in $dir"
	touch "$dir/.gpumig-done"
	echo "$dir/src"
}

# The debug kernel (KUnit, KASAN, lockdep, kmemleak, IOMMUFD_DRIVER) is built
# from the newest kernel source Debian carries, 7.3: it is both the
# sanitizer lane and the newest kernel's lane.  Users' 6.12 is Debian's own
# kernel (the distro lane) and the 6.12 compile checks (its headers).
DEBUG_SERIES=7.3
debug_kdir() { kernel_tree $DEBUG_SERIES "$GPUMIG_TOP/scripts/kconfig/debug.config" full; }

# The PCI test VM's hardware: an IOMMU with interrupt remapping and a
# simgpu-pci PF behind a root port whose prefetchable window holds the VFs'
# VRAM apertures (4 x 256 MiB); firmware comes from Debian's packages.
# Two PFs: the first's VFs migrate; the second is assigned whole (a PF
# bound to gpumig-vfio-pci), and its TOTAL_VFS register says 0 while its
# SR-IOV capability says 1 (the PF driver must believe the fewer).  Each
# root port leaves room for its VFs' apertures.
SIMGPU_PCI_QEMU_OPTS="-L /usr/share/seabios -L /usr/share/qemu -device intel-iommu,intremap=on \
-device pcie-root-port,id=rp1,chassis=1,pref64-reserve=2G -device simgpu-pf,bus=rp1 \
-device pcie-root-port,id=rp2,chassis=2,pref64-reserve=512M \
-device simgpu-pf,bus=rp2,total-vfs=1,aperture=64M,x-vfs-offered=0"
# A third PF, as the first, for the distro VM only: its four VFs are the
# destination of a VM holding all four of the first PF's (issue 39).
SIMGPU_PCI_THIRD_PF="-device pcie-root-port,id=rp3,chassis=3,pref64-reserve=2G -device simgpu-pf,bus=rp3"

BUILD=$GPUMIG_TOP/build
SRC_FILES="Kbuild Makefile dkms.conf include drivers kunit guest"

# stage NAME: a private copy of the sources per kernel under build/NAME,
# so builds never mix objects.
stage() {
	local dir=$BUILD/$1
	mkdir -p "$dir"
	(cd "$GPUMIG_TOP" && rsync -a --delete-excluded --exclude='*.o' \
		--exclude='*.ko' --exclude='*.cmd' $SRC_FILES "$dir"/)
	echo "$dir"
}

# client_build KDIR: the userspace VFIO client and the QEMU test guest in
# build/tools.  The client needs a 6.12 <linux/vfio.h> (Debian 12's libc
# headers are 6.1): KDIR's, installed.
client_build() {
	rm -rf "$BUILD/uapi"
	make -s -C "$1" headers_install INSTALL_HDR_PATH="$BUILD/uapi" &&
		make -C "$GPUMIG_TOP/tools/simgpu-client" O="$BUILD/tools" \
			UAPI="$BUILD/uapi/include" CFLAGS="-O2 -g -Werror" &&
		make -C "$GPUMIG_TOP/tools/gpumigctl" O="$BUILD/tools" \
			UAPI="$BUILD/uapi/include" CFLAGS="-O2 -g -Werror" &&
		make -C "$GPUMIG_TOP/tools/gpumig-mover" O="$BUILD/tools" CFLAGS="-O2 -g -Werror" &&
		make -C "$GPUMIG_TOP/tools/vfio-migtest" O="$BUILD/tools" \
			UAPI="$BUILD/uapi/include" CFLAGS="-O2 -g -Werror" &&
		make -C "$GPUMIG_TOP/guest/tools" O="$BUILD/tools" CFLAGS="-O2 -g -Werror" &&
		make -C "$GPUMIG_TOP/tools/guest" O="$BUILD/tools" EXTRA_CFLAGS=-Werror
}

# pkg_overlay ROOT DEB...: a throw-away writable overlay of the root
# filesystem ROOT, in a new directory PKG_TMP (the overlay is PKG_TMP/m),
# with /proc, /sys and /dev bound into it, the packages' compiler cache
# ($GPUMIG_CACHE/ccache-pkg) at /ccache and the DEBs in /deb; an EXIT trap
# undoes it all.  Not in a subshell: it sets PKG_TMP and the trap.
pkg_overlay() {
	local root=$1 cc=$GPUMIG_CACHE/ccache-pkg d
	shift
	[ "$(id -u)" -eq 0 ] || die "$(basename "$0") needs root (overlay mounts, chroot)"
	mkdir -p "$cc"
	PKG_TMP=$(mktemp -d /tmp/gpumig-pkg.XXXXXX)
	trap 'umount -R "$PKG_TMP/m" 2>/dev/null || true; rm -rf "$PKG_TMP"' EXIT
	mkdir -p "$PKG_TMP/u" "$PKG_TMP/w" "$PKG_TMP/m"
	mount -t overlay overlay \
		-o "lowerdir=$root,upperdir=$PKG_TMP/u,workdir=$PKG_TMP/w" "$PKG_TMP/m"
	for d in /proc /sys /dev; do
		mount --rbind "$d" "$PKG_TMP/m$d"
	done
	mkdir -p "$PKG_TMP/m/ccache" "$PKG_TMP/m/deb"
	mount --bind "$cc" "$PKG_TMP/m/ccache"
	cp "$@" "$PKG_TMP/m/deb/"
}
