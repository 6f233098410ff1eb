#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the path of a Debian bookworm root filesystem holding libvirt 11.3
# and QEMU 10.0 from bookworm-backports (the pair Debian ships for
# bookworm), mdevctl and iproute2: what a GPU host that libvirt manages
# runs (with the node-device driver nova-compute reads PCI devices
# through, Debian's libvirt-daemon-system and ssh).  The two-host lane (scripts/guest/libvirt.sh) runs
# libvirt's daemons and virsh from it with chroot in each of its two VMs;
# installing libvirt 11.3 on the host itself would upgrade its systemd.
# Made with mmdebstrap, cached outside the repository keyed by its inputs.
#
#   scripts/libvirt-root.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mirror=${DEBIAN_MIRROR:-$(apt_uri bookworm-backports)}
pkgs="libvirt-daemon-driver-qemu,libvirt-daemon-driver-nodedev,libvirt-daemon,libvirt-clients,qemu-system-x86"
# libvirt-daemon-system: Debian's default configuration and the
# libvirt-qemu user QEMU runs as; ssh for qemu+ssh:// (the lane's
# production-like half).
pkgs+=",libvirt-daemon-system,openssh-server,openssh-client"
pkgs+=",mdevctl,iproute2,procps"
key=$( { echo "$mirror $pkgs"; echo bookworm bookworm-backports; } | sha256sum | cut -c1-12)
dir=$GPUMIG_CACHE/libvirt-host-$key
if [ -f "$dir.done" ]; then
	echo "$dir"
	exit 0
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap missing (run scripts/install-deps.sh)"
log "making a bookworm root with libvirt 11.3 and QEMU 10.0 in $dir; cached for later runs"
rm -rf "$dir"
# mmdebstrap needs the target's parent (a fresh machine has no cache yet)
mkdir -p "$GPUMIG_CACHE"
# APT::Default-Release makes bookworm-backports win, so libvirt and QEMU
# come from it and their dependencies agree.
mmdebstrap --quiet --variant=apt --components=main \
	--aptopt='APT::Default-Release "bookworm-backports"' \
	--aptopt='APT::Install-Recommends "false"' \
	--include="$pkgs" bookworm "$dir" \
	"deb $mirror bookworm main" "deb $mirror bookworm-backports main" >&2 ||
	die "mmdebstrap failed"
v=$(chroot "$dir" virsh --version)
case $v in
11.3.*) ;;
*) die "the libvirt root has libvirt $v, not 11.3" ;;
esac
v=$(chroot "$dir" qemu-system-x86_64 --version | sed -n 1p)
case $v in
*"version 10.0"*) ;;
*) die "the libvirt root has $v, not QEMU 10.0" ;;
esac
touch "$dir.done"
echo "$dir"
