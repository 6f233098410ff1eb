#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the path of a Debian trixie root filesystem holding QEMU 11.1 from
# trixie-backports (and python3 for the QEMU harness), made with
# mmdebstrap and cached outside the repository keyed by its inputs.  The
# test VMs run QEMU 11.1 from it with chroot (scripts/guest/lib.sh,
# qemu11_lane), since trixie's QEMU needs trixie's libraries and the host
# is bookworm: nothing of it is installed on the host.
#
#   scripts/trixie-root.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mirror=${DEBIAN_MIRROR:-$(apt_uri trixie)}
pkgs=qemu-system-x86,python3
key=$( { echo "$mirror $pkgs"; echo trixie trixie-backports; } | sha256sum | cut -c1-12)
dir=$GPUMIG_CACHE/trixie-qemu-$key
if [ -f "$dir.done" ]; then
	echo "$dir"
	exit 0
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap missing (run scripts/install-deps.sh)"
log "making a trixie root with QEMU 11.1 in $dir; this is cached for later runs"
rm -rf "$dir"
# mmdebstrap needs the target's parent (a fresh machine has no cache yet)
mkdir -p "$GPUMIG_CACHE"
# APT::Default-Release makes trixie-backports win for every package, so
# QEMU's dependencies come from the same suite as QEMU.
mmdebstrap --quiet --variant=apt --components=main \
	--aptopt='APT::Default-Release "trixie-backports"' \
	--include="$pkgs" trixie "$dir" \
	"deb $mirror trixie main" "deb $mirror trixie-backports main" >&2 ||
	die "mmdebstrap failed"
v=$(chroot "$dir" qemu-system-x86_64 --version | sed -n 1p)
case $v in
*"version 11.1"*) ;;
*) die "the trixie root has $v, not QEMU 11.1" ;;
esac
touch "$dir.done"
echo "$dir"
