#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything gpumig's build, tests and demo need, from Debian's
# archive only.  Idempotent: a second run installs nothing new.
#
# bookworm-backports gives QEMU 10 (VFIO migration v2); trixie and
# trixie-backports are pinned at priority 100 so that nothing is upgraded
# from them by accident; only virtme-ng and linux-source-7.3 are taken from
# there, by name.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KVER_DISTRO=${KVER_DISTRO:-6.12.117+deb12-amd64}
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

stamp=/var/lib/gpumig-deps.stamp
want_rev=9
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_rev" ] &&
   [ -d "/lib/modules/$KVER_DISTRO/build" ] && command -v vng >/dev/null &&
   command -v sparse >/dev/null && command -v meson >/dev/null &&
   command -v mmdebstrap >/dev/null && command -v dh_dkms >/dev/null &&
   ls /usr/src/linux-source-6.12.tar.* >/dev/null 2>&1; then
	echo "install-deps: already done"
	exit 0
fi

# The suites below come from the archive the host already uses for
# bookworm (lib.sh, apt_uri): no archive host is written here.
archive=$(apt_uri bookworm)
src=/etc/apt/sources.list.d/gpumig.sources
if [ ! -f "$src" ]; then
	$SUDO tee "$src" >/dev/null <<SRC
Types: deb
URIs: $archive
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $archive
Suites: trixie trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
# QEMU's source (for simgpu-pci, scripts/qemu.sh): Debian's tarball.
srcs=/etc/apt/sources.list.d/gpumig-src.sources
if [ ! -f "$srcs" ]; then
	$SUDO tee "$srcs" >/dev/null <<SRC
Types: deb-src
URIs: $archive
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
pin=/etc/apt/preferences.d/gpumig-trixie
if [ ! -f "$pin" ]; then
	$SUDO tee "$pin" >/dev/null <<'PIN'
Package: *
Pin: release n=trixie
Pin-Priority: 100

Package: *
Pin: release n=trixie-backports
Pin-Priority: 100
PIN
fi

export DEBIAN_FRONTEND=noninteractive
apt_install() {
	$SUDO apt-get install -y -q --no-install-recommends "$@"
}

$SUDO apt-get update -q
apt_install build-essential bc bison flex libelf-dev libssl-dev dwarves cpio \
	kmod rsync python3 python3-yaml sparse dkms mdevctl socat busybox-static mmdebstrap \
	debhelper dh-dkms lintian groff-base \
	gcc-multilib clang libclang-rt-14-dev lld xz-utils zstd \
	"linux-image-${KVER_DISTRO}-unsigned" "linux-headers-${KVER_DISTRO}" \
	linux-source-6.12
apt_install -t bookworm-backports qemu-system-x86 meson python3-pycotap
# Building QEMU with simgpu-pci (scripts/qemu.sh).
apt_install libglib2.0-dev libpixman-1-dev libslirp-dev ninja-build pkg-config \
	zlib1g-dev libattr1-dev libcap-ng-dev dpkg-dev
# virtme-ng (arch all); its dependencies all come from bookworm.
apt_install virtme-ng/trixie
apt_install linux-source-7.3/trixie-backports

echo "$want_rev" | $SUDO tee "$stamp" >/dev/null
echo "install-deps: done"
