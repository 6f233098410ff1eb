#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Nova lane's host half: OpenStack Nova 31's own PCI and migration code
# (scripts/nova-root.sh's chroot, natively) judges what nova-compute reads
# on a gpumig host, replayed from a capture (scripts/guest/libvirt.sh,
# lv_nova_capture).  KTAP on standard output (tools/nova/nova_judge.py says
# what each check calls); the exit status is 1 when one fails.
#
#   scripts/nova-judge.sh [CAPTURE [CAPTURE_DST]]
#
# CAPTURE defaults to the fixture tools/nova/capture (a capture from a real
# run: simgpu-pci under Debian's kernel, libvirt 11.3); CAPTURE_DST, the
# destination host's capture for the live migration's XML rewrite.
#   scripts/nova-judge.sh --rewrite DIR SRC_ADDR DST_ADDR
#
# rewrites DIR/in.xml (a running domain's migratable XML) with Nova's own
# get_updated_guest_xml, its <hostdev> SRC_ADDR becoming DST_ADDR, into
# DIR/out.xml: the two-host lane migrates with it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${1:-}" = --rewrite ]; then
	[ $# -eq 4 ] && [ -s "$2/in.xml" ] || { echo "usage: $0 --rewrite DIR SRC_ADDR DST_ADDR" >&2; exit 2; }
	root=$("$GPUMIG_TOP/scripts/nova-root.sh")
	exec unshare -m bash -c '
		set -e
		root=$1 judge=$2 dir=$3
		mkdir -p "$root/judge" "$root/rewrite"
		mount --bind "$judge" "$root/judge"
		mount --bind "$dir" "$root/rewrite"
		exec chroot "$root" python3 -B /judge/nova_judge.py --rewrite /rewrite/in.xml "$4" "$5" /rewrite/out.xml
	' nova-judge "$root" "$GPUMIG_TOP/tools/nova" "$(cd "$2" && pwd)" "$3" "$4"
fi

cap=${1:-$GPUMIG_TOP/tools/nova/capture}
dst=${2:-}
root=$("$GPUMIG_TOP/scripts/nova-root.sh")
# A throw-away mount namespace: nothing stays mounted in the cached root.
exec unshare -m bash -c '
	set -e
	root=$1 judge=$2 cap=$3 dst=$4
	mkdir -p "$root/judge" "$root/capture" "$root/capture-dst"
	mount --bind "$judge" "$root/judge"
	mount --bind "$cap" "$root/capture"
	args=(/capture)
	if [ -n "$dst" ]; then
		mount --bind "$dst" "$root/capture-dst"
		args+=(/capture-dst)
	fi
	exec chroot "$root" python3 -B /judge/nova_judge.py "${args[@]}"
' nova-judge "$root" "$GPUMIG_TOP/tools/nova" "$(cd "$cap" && pwd)" "${dst:+$(cd "$dst" && pwd)}"
