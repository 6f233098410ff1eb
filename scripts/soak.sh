#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# gpumig's soak (`make soak`): boots the debug kernel (KASAN, lockdep,
# kmemleak) on the project's QEMU with simgpu-pci and runs the client's
# soak scenario, SOAK_MIGRATIONS migrations back and forth (1,000 unless
# set), first between two mdevs, then between two VFs on gpumig-vfio-pci,
# with a kernel in flight, its result checked after every 20, and the
# timing knobs changed at random between migrations.  It prints the
# kernel's slab and available memory after a warm-up of 50 and at the
# end, and fails on a wrong result, a leak or any kernel splat.  Between
# the two, QEMU migrates its verifying guest SOAK_QEMU_MIGRATIONS times
# (50 unless set) back and forth between mdevs (qemu_mig.py --pingpong).  `make
# check` runs the same scenario with 60 migrations.
#
#   scripts/soak.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$GPUMIG_TOP/scripts/install-deps.sh" >&2
kdir=$(debug_kdir)
qemu=$("$GPUMIG_TOP/scripts/qemu.sh")
out=$BUILD/soak
rm -rf "$out"
mkdir -p "$out"
echo "${SOAK_MIGRATIONS:-1000}" >"$out/soak-migrations"
echo "${SOAK_QEMU_MIGRATIONS:-50}" >"$out/soak-qemu-migrations"
dir=$(stage debug)
make -s -C "$kdir" M="$dir" modules >"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "module build failed"; }
client_build "$kdir" >>"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "client build failed"; }
VM_MEMORY=3G VM_TIMEOUT=${SOAK_TIMEOUT:-14400} "$GPUMIG_TOP/scripts/vm.sh" "$kdir" "$out" \
	--qemu "$qemu" --append "intel_iommu=on" --qemu-opts "$SIMGPU_PCI_QEMU_OPTS" -- \
	"$GPUMIG_TOP/scripts/guest/run.sh" soak "$out" "$dir" "$BUILD/tools" "$kdir" ||
	die "the soak VM failed: see $out/console.log"
rc=0
for k in "$out"/soak-mdev.ktap "$out"/soak-vf.ktap; do
	[ -s "$k" ] || { echo "no results in $k"; rc=1; continue; }
	sed -n 's/^    # //p' "$k" | grep -v '^Subtest:'
	grep -q '^ok 1' "$k" || { echo "FAILED: $k"; grep 'not ok\|^    # ' "$k"; rc=1; }
done
if [ "${SOAK_QEMU_MIGRATIONS:-50}" -gt 0 ]; then
	k=$out/soak-qemu/qemu.ktap
	if [ -s "$k" ]; then
		grep -E 'ping-pong migrations|no wrong result' "$k"
		sed 's/^/QEMU soak memory, /' "$out/soak-qemu.txt"
		grep -q 'not ok' "$k" && { echo "FAILED: $k"; grep 'not ok' "$k"; rc=1; }
	else
		echo "no results in $k"
		rc=1
	fi
fi
pat='BUG:|WARNING:|KASAN|UBSAN|Oops|general protection|possible (recursive|circular) locking|kmemleak: .* new suspected'
if grep -E "$pat" "$out/dmesg.txt"; then
	echo "FAILED: the kernel log above"
	rc=1
fi
if [ -s "$out/kmemleak.txt" ]; then
	cat "$out/kmemleak.txt"
	echo "FAILED: kmemleak"
	rc=1
fi
[ $rc -eq 0 ] && echo "soak: passed (0 wrong results, no leak, no splat)"
exit $rc
