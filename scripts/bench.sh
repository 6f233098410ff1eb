#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# gpumig's benchmarks (`make bench`): boots the debug kernel (the one whose
# config carries DMA logging reports) in a VM, loads the modules and runs
# the client's benchmark scenarios.  Every figure is printed with its ratio
# to a baseline measured in the same run; nothing here passes or fails on
# time.  Installs what it needs and reuses the cached kernel.
#
#   scripts/bench.sh           every benchmark
#   scripts/bench.sh --vram    only the VRAM migration benchmark (Debian's
#                              kernel; the client still builds from the
#                              debug kernel's headers)
#   scripts/bench.sh --converge  only the auto-converge benchmark (the same
#                              VM as --vram's)
#   scripts/bench.sh --postcopy  only the post-copy benchmark (the same VM)
#   scripts/bench.sh --several   only the several-devices downtime benchmark
#                              (the debug kernel, QEMU 10.0 in the VM)
#
# BENCH_REPS (default 7): runs of each VRAM benchmark type, interleaved;
# BENCH_CONVERGE_REPS (default 3): rounds of auto-converge's idle and hot
# runs of each type; BENCH_POSTCOPY_REPS (default 11): rounds of
# post-copy's runs of each type;
# BENCH_SEVERAL_REPS (default 5): rounds of the several-devices runs;
# BENCH_CPUS (default 2): the VRAM benchmark VM's vCPUs.
# BENCH_APPEND adds to the VRAM benchmark VM's kernel command line, to
# measure what a boot option costs: BENCH_APPEND=init_on_alloc=0 (Debian's
# kernel zeroes every page it allocates by default, simgpu's lazily backed
# VRAM included; performance.rst).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vram_only=0 converge_only=0 only="" several=1
case "${1:-}" in
"") ;;
--several) vram_only=1 several=2 ;;
--vram) vram_only=1 only=vram ;;
--converge) vram_only=1 converge_only=1 only=converge ;;
--postcopy) vram_only=1 converge_only=1 only=postcopy ;;
*) die "usage: $0 [--vram | --converge | --postcopy | --several]" ;;
esac
[ -z "$only" ] || several=0

"$GPUMIG_TOP/scripts/install-deps.sh" >&2
kdir=$(debug_kdir)
out=$BUILD/bench
rm -rf "$out"
mkdir -p "$out"
dir=$(stage debug)
make -s -C "$kdir" M="$dir" modules >"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "module build failed"; }
client_build "$kdir" >>"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "client build failed"; }
if [ $vram_only = 0 ]; then
	"$GPUMIG_TOP/scripts/vm.sh" "$kdir" "$out" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" bench "$out" "$dir" "$BUILD/tools" "$kdir" ||
		die "the benchmark VM failed: see $out/console.log"
	[ -s "$out/bench.txt" ] || die "no benchmark output: see $out/console.log"
	echo "gpumig benchmarks ($(cat "$out/uname.txt"), under TCG emulation; KASAN and lockdep inflate absolute times, the ratios are what to read)"
	sed -n 's/^    # //p' "$out/bench.txt" | grep -v '^Subtest:'
	grep -q '^ok 1' "$out/bench.txt" || die "a benchmark's own correctness check failed: see $out/bench.txt"
	echo
fi

# The VRAM migration benchmark: Debian's kernel (KASAN would skew the
# ratios), every simgpu type, pairs of instances; the modules built for
# that kernel, the same client.
if [ $several != 0 ]; then
	# Several devices in one VM: QEMU 10.0's downtime, four against one.
	mkdir -p "$out/several"
	echo "${BENCH_SEVERAL_REPS:-5}" >"$out/several/bench-reps"
	VM_MEMORY=3G VM_TIMEOUT=5400 "$GPUMIG_TOP/scripts/vm.sh" "$kdir" "$out/several" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" bench-several "$out/several" "$dir" "$BUILD/tools" "$kdir" ||
		die "the several-devices benchmark VM failed: see $out/several/console.log"
	[ -s "$out/several/bench-several.txt" ] ||
		die "no several-devices benchmark output: see $out/several/console.log"
	echo "Several devices in one VM ($(cat "$out/several/uname.txt"), QEMU 10.0 under TCG inside the VM): the VM's downtime as QEMU reports it, four simgpu-64M against one, each device running the guest's work; medians"
	grep -v '^several_bench ' "$out/several/bench-several.txt"
	grep -q 'ok=False' "$out/several/bench-several.txt" &&
		die "a several-devices run's own checks failed: see $out/several/bench-several.txt"
	echo
	[ $several = 2 ] && exit 0
fi

dist=$(stage distro)
make -s -C "$DISTRO_KDIR" M="$dist" modules >>"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; die "module build for $KVER_DISTRO failed"; }
mkdir -p "$out/vram"
echo "${BENCH_REPS:-7}" >"$out/vram/bench-reps"
echo "$only" >"$out/vram/bench-only"
# The project's QEMU (cached), so that the VM has simgpu-pci VFs too.
qemu=$("$GPUMIG_TOP/scripts/qemu.sh" 2>"$out/qemu-build.log") ||
	{ cat "$out/qemu-build.log" >&2; die "QEMU with simgpu-pci failed to build"; }
VM_MEMORY=3G VM_CPUS=${BENCH_CPUS:-2} "$GPUMIG_TOP/scripts/vm.sh" "$DISTRO_VMLINUZ" "$out/vram" --qemu "$qemu" \
	--append "intel_iommu=on${BENCH_APPEND:+ $BENCH_APPEND}" --qemu-opts "$SIMGPU_PCI_QEMU_OPTS" -- \
	"$GPUMIG_TOP/scripts/guest/run.sh" bench-vram "$out/vram" "$dist" "$BUILD/tools" ||
	die "the VRAM benchmark VM failed: see $out/vram/console.log"
[ -z "${BENCH_APPEND:-}" ] || echo "VRAM benchmark VM booted with: $BENCH_APPEND"
if [ $converge_only = 0 ]; then
[ -s "$out/vram/bench-vram.txt" ] || die "no VRAM benchmark output: see $out/vram/console.log"
echo "VRAM migration ($(cat "$out/vram/uname.txt"), simgpu mdevs and simgpu-pci VFs under TCG; each holds the same non-zero data (64 MiB), 8 blocks dirtied per pre-copy round and before the stop; ratios to the first row)"
awk -f "$GPUMIG_TOP/scripts/bench-vram.awk" "$out/vram/bench-vram.txt"
# The boot's first restore (the warm-up pair, left out of the medians):
# its destination's VRAM was never backed, which costs the most.
[ -s "$out/vram/warm-up.txt" ] && awk '/vram_bench / {
	for (i = 1; i <= NF; i++) { k = index($i, "="); if (k) v[substr($i, 1, k - 1)] = substr($i, k + 1) }
	w = v["first_pass_bytes"] * 1000 / v["restore_ns"]; c = v["first_pass_bytes"] * 1000 / v["memcpy_crc_ns"]
	printf "\n  The boot'"'"'s first restore (%s, the warm-up pair, not in the medians): %.0f MB/s, %.2f of memcpy + CRC-32 beside it (goal >= 0.8: %s)\n", v["type"], w, w / c, (w >= 0.8 * c ? "met" : "NOT MET")
	exit
}' "$out/vram/warm-up.txt"
if grep -q '^not ok' "$out/vram/bench-vram.txt"; then
	grep '^    # ' "$out/vram/bench-vram.txt" | grep -v vram_bench >&2
	die "a VRAM benchmark's own correctness check failed: see $out/vram/bench-vram.txt"
fi
echo
fi

# Auto-converge (the same VM): per type, the runs, then the medians and
# the ratios to the idle downtime measured in the same process.
[ "$only" = vram ] && exit 0
if [ "$only" != postcopy ]; then
[ -s "$out/vram/bench-converge.txt" ] || die "no auto-converge benchmark output: see $out/vram/console.log"
echo "Auto-converge ($(cat "$out/vram/uname.txt"), under TCG): a 4 MiB VRAM working set rewritten at 8 MiB/s, the VMM's link 2 MiB/s, switchover when what is owed fits 300 ms of it or forced after 40 s; downtime = the device's part (PRE_COPY_P2P to the destination's STOP)"
sed -n 's/^    # //p' "$out/vram/bench-converge.txt" | grep -v '^converge_bench ' | grep -v '^Subtest:'
if grep -q '^not ok' "$out/vram/bench-converge.txt"; then
	grep '^    # ' "$out/vram/bench-converge.txt" | grep -v '^    # [^ ]*: ' >&2
	die "an auto-converge benchmark run's own correctness check failed: see $out/vram/bench-converge.txt"
fi
echo
fi

# Post-copy (the same VM): per type, the runs, the medians and ratios to
# the downtime without post-copy of the same type, measured in the same
# process; then the largest type's downtime over the smallest's.
[ "$only" = converge ] && exit 0
[ -s "$out/vram/bench-postcopy.txt" ] || die "no post-copy benchmark output: see $out/vram/console.log"
echo "Post-copy ($(cat "$out/vram/uname.txt"), under TCG): 8 MiB of data blocks beside a 4 MiB working set; the VMM reads pre-copy unthrottled; gpumig-mover carries the owed blocks at 4 MiB/s; downtime = the device's part (PRE_COPY_P2P to the destination's STOP)"
sed -n 's/^    # //p' "$out/vram/bench-postcopy.txt" | grep -v '^pc_bench ' | grep -v '^Subtest:'
awk '/^    # pc_bench / && / run=pc-hot / && / type=simgpu-/ {
	for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	d[v["type"]] = d[v["type"]] " " v["down_us"]
}
END {
	for (t in d) {
		n = split(d[t], a, " ")
		for (i = 2; i <= n; i++)	# insertion sort: mawk has no asort
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
				x = a[j]; a[j] = a[j - 1]; a[j - 1] = x
			}
		m = a[int((n + 1) / 2)]
		if (lo == "" || m < lo) { lo = m; lt = t }
		if (hi == "" || m > hi) { hi = m; ht = t }
		# the VRAM size, of the mdev types (one front end)
		if (t ~ /-vf-/ || !match(t, /[0-9]+[MG]$/))
			continue
		sz = substr(t, RSTART, RLENGTH - 1) * (substr(t, RSTART + RLENGTH - 1) == "G" ? 1024 : 1)
		if (ssz == "" || sz < ssz) { ssz = sz; sm = m; st = t }
		if (lsz == "" || sz > lsz) { lsz = sz; lm = m; ltp = t }
	}
	if (sm > 0 && lsz > ssz)
		printf "post-copy, hot: the largest type'"'"'s downtime over the smallest'"'"'s (VRAM size, mdevs; medians): %s %.0f us / %s %.0f us = %.2fx (goal <= 1.5: %s)\n", ltp, lm, st, sm, lm / sm, lm <= 1.5 * sm ? "met" : "NOT MET"
	if (lo > 0)
		printf "post-copy, hot: the longest type over the shortest (every type, the VF included; not a goal): %s %.0f us / %s %.0f us = %.2fx\n", ht, hi, lt, lo, hi / lo
}' "$out/vram/bench-postcopy.txt"
if grep -q '^not ok' "$out/vram/bench-postcopy.txt"; then
	grep '^    # ' "$out/vram/bench-postcopy.txt" | grep -v '^    # [^ ]*: ' >&2
	die "a post-copy benchmark run's own correctness check failed: see $out/vram/bench-postcopy.txt"
fi
