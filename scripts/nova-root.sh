#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the path of a Debian trixie root filesystem holding OpenStack Nova
# 31 (2025.1, python3-nova) and python3-libvirt, made with mmdebstrap from the host's own apt
# sources and cached outside the repository keyed by its inputs.  The
# Nova lane (scripts/nova-judge.sh) runs Nova's own PCI and migration code
# in it with chroot, natively on the host: nothing of Nova is installed on
# the host, and no Nova service runs.
#
#   scripts/nova-root.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mirror=${DEBIAN_MIRROR:-$(apt_uri trixie)}
pkgs=python3-nova,python3-libvirt
key=$( { echo "$mirror $pkgs"; echo trixie; } | sha256sum | cut -c1-12)
dir=$GPUMIG_CACHE/trixie-nova-$key
if [ -f "$dir.done" ]; then
	echo "$dir"
	exit 0
fi
command -v mmdebstrap >/dev/null || die "mmdebstrap missing (run scripts/install-deps.sh)"
log "making a trixie root with Nova 31 in $dir; this is cached for later runs"
rm -rf "$dir"
# mmdebstrap needs the target's parent (a fresh machine has no cache yet)
mkdir -p "$GPUMIG_CACHE"
mmdebstrap --quiet --variant=apt --components=main \
	--aptopt='APT::Install-Recommends "false"' \
	--include="$pkgs" trixie "$dir" "deb $mirror trixie main" >&2 ||
	die "mmdebstrap failed"
v=$(chroot "$dir" dpkg-query -W -f='${Version}' python3-nova)
case $v in
*:31.*|31.*) ;;
*) die "the trixie root has python3-nova $v, not Nova 31" ;;
esac
touch "$dir.done"
echo "$dir"
