#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The gpumig demo (`make demo`): a live migration of a GPU-holding VM on
# simgpu, with its report.  Installs what it needs, reuses the cached
# debug kernel (builds it the first time), boots it in a VM, and in there
# migrates a QEMU 10 guest that keeps a GPU workload running and checks
# every result, from one QEMU process to another.  See
# Documentation/gpumig/qemu.rst.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

log "demo: installing dependencies (once per machine)"
"$GPUMIG_TOP/scripts/install-deps.sh" >&2
log "demo: the debug kernel (cached after the first build, 8-14 min cold)"
kdir=$(debug_kdir)
out=$BUILD/demo
rm -rf "$out"
mkdir -p "$out"
log "demo: building the modules, the VFIO client and the test guest"
dir=$(stage debug)
make -s -C "$kdir" M="$dir" modules >"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "module build failed"; }
client_build "$kdir" >>"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "client build failed"; }
log "demo: booting the VM (emulated, about 2-4 minutes)"
"$GPUMIG_TOP/scripts/vm.sh" "$kdir" "$out" -- \
	"$GPUMIG_TOP/scripts/guest/run.sh" demo "$out" "$dir" "$BUILD/tools" "$kdir" ||
	log "demo: the VM run failed (see $out/console.log)"
if [ ! -s "$out/qemu/demo.txt" ]; then
	grep -h "qemu:" "$out/guest.log" >&2 || true
	die "the demo migration did not complete: see $out/guest.log and $out/qemu/"
fi
echo
cat "$out/qemu/demo.txt"
echo
echo "Logs: $out/qemu (the guest's console on each side, QEMU's stderr)."
