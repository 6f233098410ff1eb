#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The gpumig demo (`make demo`): a live migration of a GPU-holding VM on
# simgpu, with its report.  Installs what it needs, reuses the cached
# debug kernel (builds it the first time), boots it in a VM, and in there
# migrates a QEMU 10 guest that keeps a GPU workload running and checks
# every result, from one QEMU process to another.  See
# Documentation/gpumig/qemu.rst.
#
# With --linux (`make demo-linux`) the guest is a Linux one instead:
# Debian's own 6.12 image with simgpu-guest and simgpu-work in an
# initramfs (scripts/linux-guest.sh), holding a simgpu mdev, in a VM that
# boots Debian's 6.12 too (faster than the debug kernel under emulation).
# See Documentation/gpumig/guest-driver.rst.
#
#   scripts/demo.sh [--linux]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

linux=""
case ${1:-} in
--linux) linux=1 ;;
"") ;;
*) die "usage: $0 [--linux]" ;;
esac

log "demo: installing dependencies (once per machine)"
"$GPUMIG_TOP/scripts/install-deps.sh" >&2
log "demo: the debug kernel (cached after the first build, 8-14 min cold)"
kdir=$(debug_kdir)
out=$BUILD/demo${linux:+-linux}
rm -rf "$out"
mkdir -p "$out"
log "demo: building the modules, the VFIO client and the test guest"
client_build "$kdir" >>"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "client build failed"; }
if [ -z "$linux" ]; then
	dir=$(stage debug)
	make -s -C "$kdir" M="$dir" modules >>"$out/build.log" 2>&1 ||
		{ cat "$out/build.log" >&2; die "module build failed"; }
	log "demo: booting the VM (emulated, about 2-4 minutes)"
	"$GPUMIG_TOP/scripts/vm.sh" "$kdir" "$out" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" demo "$out" "$dir" "$BUILD/tools" "$kdir" ||
		log "demo: the VM run failed (see $out/console.log)"
else
	# Debian's kernel outside and inside: the host's modules and the
	# guest's driver built against its headers (install-deps.sh).
	dir=$(stage distro)
	{ make -s -C "$DISTRO_KDIR" M="$dir" modules &&
		make -s -C "$DISTRO_KDIR" M="$dir/guest" modules; } >>"$out/build.log" 2>&1 ||
		{ cat "$out/build.log" >&2; die "module build for $KVER_DISTRO failed"; }
	"$GPUMIG_TOP/scripts/linux-guest.sh" "$dir/guest/simgpu-guest.ko" "$out/linux-guest.cpio.gz"
	echo "$DISTRO_VMLINUZ,$out/linux-guest.cpio.gz" >"$out/linux-guest.args"
	log "demo: booting the VM, then the Linux guest in it (emulated, about 3-4 minutes)"
	"$GPUMIG_TOP/scripts/vm.sh" "$DISTRO_VMLINUZ" "$out" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" demo-linux "$out" "$dir" "$BUILD/tools" ||
		log "demo: the VM run failed (see $out/console.log)"
fi
if [ ! -s "$out/qemu/demo.txt" ]; then
	grep -h "qemu:" "$out/guest.log" >&2 || true
	die "the demo migration did not complete: see $out/guest.log and $out/qemu/"
fi
echo
cat "$out/qemu/demo.txt"
echo
echo "Logs: $out/qemu (the guest's console on each side, QEMU's stderr)."
