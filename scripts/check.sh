#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# gpumig's test command (`make check`): everything, from a fresh machine.
#
#   scripts/check.sh [--only STEP[,STEP...]] [--fuzz-seconds N] [--round-trips N]
#
# Steps: deps nova kernels qemu qtest static dkms debug-vm distro-vm fuzz; and,
# only when named, releases: migrations to and from older releases alone
# (distro-vm runs them too); two-host: the libvirt lane (testing.rst; `make
# check-two-host`, 36 minutes on 2026-12-06 (11 before libvirt ran as
# Debian installs it, with qemu+ssh), too long for make
# check's budget); kunit: the
# KUnit suites alone in the debug kernel (all, or those of KUNIT_MODULES,
# e.g. "gpumig_mig_kunit"; debug-vm runs them too); and pci-vm: the PCI
# suite alone in the debug kernel (debug-vm and distro-vm run it too).
# --round-trips N: the two hosts migrate the mdev domain A to B and back
# N more times (a soak of the lane; each takes 2-3 minutes).
# Each kernel boots once, on the project's QEMU with simgpu-pci, and runs
# every suite in that boot.  Each result is a
# line in build/results/checks.tsv or a KTAP file under build/results; the
# summary at the end prints "N passed, N failed" and the exit status says
# whether everything passed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# The fuzzers run a number of executions (FUZZ_RUNS: the stream parser's;
# the validator a tenth), which is what 30 s on two idle cores gave, or
# for a time (--fuzz-seconds, FUZZ_SECONDS).
only="" fuzz_seconds=${FUZZ_SECONDS:-} fuzz_runs=${FUZZ_RUNS:-400000} round_trips=0
while [ $# -gt 0 ]; do
	case $1 in
	--only) only=$2; shift 2 ;;
	--fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
	--round-trips) round_trips=$2; shift 2 ;;
	*) die "usage: check.sh [--only STEP,...] [--fuzz-seconds N] [--round-trips N]" ;;
	esac
done

RES=$BUILD/results
rm -rf "$RES"
mkdir -p "$RES"
CHECKS=$RES/checks.tsv
: >"$CHECKS"

want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
named() { [[ ",$only," == *",$1,"* ]]; }

# record NAME STATUS SECONDS [DETAIL]
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$CHECKS"; }

# run_check NAME CMD...: run CMD, log to RES/NAME.log, record the result.
run_check() {
	local name=$1 t0 rc logf
	shift
	logf=$RES/$(echo "$name" | tr -c 'A-Za-z0-9.-' '_').log
	t0=$(date +%s)
	log "check: $name"
	"$@" >"$logf" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		record "$name" pass $(($(date +%s) - t0))
	else
		record "$name" FAIL $(($(date +%s) - t0)) "see ${logf#"$GPUMIG_TOP"/}"
		tail -n 30 "$logf" >&2
	fi
	return $rc
}

# sparse_runs KDIR: does KDIR's own test (scripts/checker-valid.sh) accept
# the host's sparse?  A kernel that does not silently builds without it
# ("C=2 specified, but sparse is not available or not up to date").
sparse_runs() {
	[ -x "$1/scripts/checker-valid.sh" ] || return 0
	[ "$(sh "$1/scripts/checker-valid.sh" sparse --arch=x86 -mlittle-endian -m64 2>/dev/null)" = 1 ]
}

# linux_guest_image KO: the small Linux guest the distro VM's QEMU boots:
# Debian's own kernel image and an initramfs with KO, simgpu-guest as
# DKMS built it from the guest's package for that kernel
# (scripts/guest-pkg.sh, scripts/linux-guest.sh); TOOLS/linux-guest.args
# says where both are.
# Both files are replaced whole (made aside, then renamed): the debug VM
# may read them meanwhile (its QEMU 10 lanes, when QEMU 11.1's root failed).
linux_guest_image() {
	"$GPUMIG_TOP/scripts/linux-guest.sh" "$1" "$TOOLS/linux-guest.cpio.gz.new" &&
		mv "$TOOLS/linux-guest.cpio.gz.new" "$TOOLS/linux-guest.cpio.gz" &&
		echo "$DISTRO_VMLINUZ,$TOOLS/linux-guest.cpio.gz" >"$TOOLS/linux-guest.args.new" &&
		mv "$TOOLS/linux-guest.args.new" "$TOOLS/linux-guest.args"
}

# build_clean NAME KDIR [MAKE ARGS]: build with W=1 and sparse; any
# compiler or sparse diagnostic fails, and so does a sparse the kernel
# refused to run.
build_clean() {
	local name=$1 kdir=$2 dir out
	shift 2
	dir=$(stage "$name")
	make -s -C "$dir" clean KDIR="$kdir" >/dev/null 2>&1
	rm -f "$dir"/*.ko "$dir"/guest/*.ko
	# the host's modules, then the guest driver (guest/, its own Kbuild)
	out=$(make -C "$kdir" M="$dir" W=1 "$@" modules 2>&1 &&
	      make -C "$kdir" M="$dir/guest" W=1 "$@" modules 2>&1)
	local rc=$?
	echo "$out"
	[ $rc -eq 0 ] || return $rc
	if echo "$out" | grep -q "specified, but .* is not available or not up to date"; then
		echo "build_clean: the kernel did not run sparse" >&2
		return 1
	fi
	# modpost cannot resolve symbols in a tree that was only prepared: there
	# only compiler and sparse diagnostics count.
	local pat='warning|error'
	[[ " $* " == *" KBUILD_MODPOST_WARN=1 "* ]] && pat='\.[ch]:[0-9]+(:[0-9]+)?: (warning|error)'
	if echo "$out" | grep -E "$pat"; then
		echo "build_clean: diagnostics above" >&2
		return 1
	fi
}

checkpatch() {
	local cp=$1/scripts/checkpatch.pl files
	# Kernel code: every rule but one: 7.x's checkpatch asks for
	# kzalloc_obj(), which 6.12 (Debian's kernel, built from the same
	# source) does not have.
	files=$(cd "$GPUMIG_TOP" && find include drivers kunit guest -name '*.[ch]' \
		-not -path 'include/trace/*' -not -path 'guest/tools/*' | sort)
	(cd "$GPUMIG_TOP" && perl "$cp" --strict --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,ALLOC_WITH_SIZEOF -f $files) || return 1
	# Trace event headers: the same, but for the layout of the TRACE_EVENT
	# language (the kernel's own include/trace/events read the same way).
	files=$(cd "$GPUMIG_TOP" && find include/trace -name '*.h' | sort)
	(cd "$GPUMIG_TOP" && perl "$cp" --strict --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT \
		-f $files) || return 1
	# Userspace tools: the same rules but for what userspace must differ
	# in (libc types, the libFuzzer entry point, the kernel-API shim, the
	# test macro that returns, message strings kept whole).
	files=$(cd "$GPUMIG_TOP" && find tools guest/tools -name '*.[ch]' | sort)
	(cd "$GPUMIG_TOP" && perl "$cp" --strict --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,PREFER_KERNEL_TYPES,CAMELCASE,MACRO_WITH_FLOW_CONTROL,MACRO_ARG_REUSE,MACRO_ARG_UNUSED,PREFER_DEFINED_ATTRIBUTE_MACRO,LONG_LINE_STRING \
		-f $files) || return 1
}

# One version number (dkms.conf's PACKAGE_VERSION): every module built in
# @1 and gpumigctl report it.
versions_agree() {
	local dir=$1 want ko got n=0 tmp
	want=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$GPUMIG_TOP/dkms.conf")
	[ -n "$want" ] || { echo "no PACKAGE_VERSION in dkms.conf"; return 1; }
	got=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$GPUMIG_TOP/guest/dkms.conf")
	[ "$got" = "$want" ] || { echo "guest/dkms.conf: '$got', dkms.conf: '$want'"; return 1; }
	for ko in "$dir"/*.ko "$dir"/guest/*.ko; do
		[ -e "$ko" ] || continue
		got=$(modinfo -F version "$ko")
		[ "$got" = "$want" ] || { echo "$ko: version '$got', dkms.conf: '$want'"; return 1; }
		n=$((n + 1))
	done
	[ $n -ge 5 ] || { echo "only $n modules in $dir (and guest/)"; return 1; }
	tmp=$(mktemp -d)
	make -s -C "$GPUMIG_TOP/tools/gpumigctl" O="$tmp" >/dev/null &&
		got=$("$tmp/gpumigctl" --version)
	rm -rf "$tmp"
	[ "$got" = "gpumigctl $want" ] || { echo "gpumigctl --version: '$got'"; return 1; }
	echo "$n modules and gpumigctl: $want"
}

# make uninstall, on a module tree of its own (INSTALL_MOD_PATH): each of
# gpumig's modules, plain or compressed, in updates/ or extra/, goes;
# another module stays; depmod runs.
uninstall_check() {
	local t k=0.0.0-gpumig-test m
	t=$(mktemp -d)
	mkdir -p "$t/lib/modules/$k/updates" "$t/lib/modules/$k/extra" "$t/lib/modules/$k/kernel"
	for m in gpumig simgpu simgpu-pf gpumig-vfio-pci; do
		touch "$t/lib/modules/$k/updates/$m.ko" "$t/lib/modules/$k/extra/$m.ko.xz"
	done
	touch "$t/lib/modules/$k/updates/other.ko" "$t/lib/modules/$k/kernel/vfio.ko"
	make -s -C "$GPUMIG_TOP" uninstall KVER=$k INSTALL_MOD_PATH="$t" || { rm -rf "$t"; return 1; }
	find "$t/lib/modules/$k" -name '*.ko*' | sort
	[ "$(find "$t/lib/modules/$k" -name '*.ko*' | wc -l)" -eq 2 ] &&
		[ -e "$t/lib/modules/$k/updates/other.ko" ] && [ -e "$t/lib/modules/$k/modules.dep" ]
	local rc=$?
	rm -rf "$t"
	return $rc
}

# Memory a user's migration or DMA-logging fd makes the kernel allocate is
# charged to the user's memory cgroup (GFP_KERNEL_ACCOUNT), as vfio-pci's
# own migration drivers do; an allocation there that is not says why in an
# "uncharged:" comment just above it (one comment covers the allocations on
# the lines right after it).
charged_allocs() {
	local f bad=0
	for f in $(cd "$GPUMIG_TOP" && ls drivers/gpumig/*.c drivers/vfio/pci/gpumig/*.c \
		 drivers/gpu/simgpu-pf/provider.c); do
		awk -v f="$f" '
			/uncharged:/ { cover = 1; next }
			!/alloc/ { cover = 0 }
			/GFP_KERNEL([^_]|$)/ && /alloc/ && !cover {
				printf "%s:%d: not charged to the caller: %s\n", f, NR, $0; bad = 1
			}
			END { exit bad }' "$GPUMIG_TOP/$f" || bad=1
	done
	return $bad
}

# slowest DIR: the eight slowest checks of a VM run (scripts/guest/lib.sh
# times each), where its minutes went.
slowest() {
	[ -s "$1/check-times.tsv" ] || return 0
	log "the slowest checks of $(basename "$1") (seconds):"
	sort -rn "$1/check-times.tsv" | head -n 8 | cut -c1-150 | sed 's/^/    /'
}

# Kernel log and kmemleak of a VM run: any splat fails it.
log_clean() {
	local dir=$1 pat
	pat='BUG:|WARNING:|KASAN|UBSAN|Oops|general protection|Kernel panic|'
	pat+='possible (recursive|circular) locking|inconsistent lock state|'
	pat+='suspicious RCU|lock held when returning|INFO: task .* blocked|'
	pat+='kmemleak: .* new suspected memory leaks|refcount_t:'
	[ -s "$dir/dmesg.txt" ] || { echo "no kernel log came back"; return 1; }
	# One kernel defect outside gpumig is set aside, and counted: from 7.3
	# pci_stop_and_remove_bus_device() asserts pci_rescan_remove_lock, but a
	# PF driver's .remove reached through a driver unbind (sysfs, rmmod)
	# runs without it, and pci_disable_sriov() there removes the VFs
	# through that function (the PF-gone test unbinds simgpu-pf with VFs
	# enabled; in-tree PF drivers do the same).  Taking the lock in .remove
	# would deadlock when the PF itself is hot-removed (the lock is held
	# then).  Only a WARNING of that function whose trace holds
	# pci_disable_sriov under pci_device_remove is set aside (testing.rst).
	awk '
		/WARNING: drivers\/pci\/remove\.c:[0-9]+ at pci_stop_and_remove_bus_device/ {
			held = $0; n = 0; next
		}
		held != "" {
			trace = trace "\n" $0
			if (++n < 40 && !/---\[ end trace/) next
			if (trace ~ /pci_disable_sriov/ && trace ~ /pci_device_remove/)
				known++
			else
				print held trace
			held = ""; trace = ""
			next
		}
		{ print }
		END {
			if (held != "") print held trace
			if (known) printf "known upstream defect set aside: %d x pci_stop_and_remove_bus_device without pci_rescan_remove_lock (pci_disable_sriov in a PF driver'"'"'s remove)\n", known > "/dev/stderr"
		}' "$dir/dmesg.txt" >"$dir/dmesg.checked"
	if grep -E "$pat" "$dir/dmesg.checked"; then
		return 1
	fi
	if [ -s "$dir/kmemleak.txt" ]; then
		cat "$dir/kmemleak.txt"
		return 1
	fi
	return 0
}

timed() {
	local name=$1 t0
	shift
	t0=$(date +%s)
	"$@"
	local rc=$?
	log "$name took $(($(date +%s) - t0)) s"
	return $rc
}

T_START=$(date +%s)

if want deps; then
	run_check "install dependencies" "$GPUMIG_TOP/scripts/install-deps.sh"
fi

# OpenStack Nova 31's own code judges gpumigctl's entries and a VF
# domain's migration XML, replayed from tools/nova/capture (natively, in a
# cached trixie root: about a minute cold, seconds warm).
if want nova; then
	run_check "Nova 31's own PCI and migration code accepts what gpumigctl prints (replayed capture)" \
		sh -c "'$GPUMIG_TOP/scripts/nova-judge.sh' >'$RES/nova.ktap'"
fi

DEBUG_KDIR=""
if want kernels || want static || want debug-vm || want distro-vm || named pci-vm || named kunit ||
   want two-host || named releases; then
	t0=$(date +%s)
	if DEBUG_KDIR=$(debug_kdir 2>"$RES/kernel-debug.log"); then
		record "debug kernel $DEBUG_SERIES (KASAN, lockdep, kmemleak, KUnit) ready" pass $(($(date +%s) - t0))
	else
		record "debug kernel $DEBUG_SERIES (KASAN, lockdep, kmemleak, KUnit) ready" FAIL $(($(date +%s) - t0)) "see build/results/kernel-debug.log"
		DEBUG_KDIR=""
	fi
fi

# QEMU 11.1 from a trixie root, for the debug VM's QEMU 11.1 lane.
TRIXIE_ROOT=""
if want qemu || want debug-vm || named pci-vm; then
	t0=$(date +%s)
	if TRIXIE_ROOT=$("$GPUMIG_TOP/scripts/trixie-root.sh" 2>"$RES/trixie-root.log"); then
		record "trixie root with QEMU 11.1 ready" pass $(($(date +%s) - t0))
	else
		record "trixie root with QEMU 11.1 ready" FAIL $(($(date +%s) - t0)) "see build/results/trixie-root.log"
		TRIXIE_ROOT=""
	fi
fi

QEMU_BIN=""
if want qemu || want qtest || want debug-vm || want distro-vm || named pci-vm || want two-host ||
   named releases; then
	t0=$(date +%s)
	if QEMU_BIN=$("$GPUMIG_TOP/scripts/qemu.sh" 2>"$RES/qemu-build.log"); then
		record "QEMU 10.0.2 with simgpu-pci built" pass $(($(date +%s) - t0))
	else
		record "QEMU 10.0.2 with simgpu-pci built" FAIL $(($(date +%s) - t0)) "see build/results/qemu-build.log"
		QEMU_BIN=""
	fi
fi

if want qtest && [ -n "$QEMU_BIN" ]; then
	# The device under QEMU's qtest accelerator: hostile registers and DMA.
	run_check "simgpu-pci under qtest: hostile mailbox commands and registers" \
		sh -c "python3 '$GPUMIG_TOP/tools/qtest/simgpu_qtest.py' '$QEMU_BIN' \
			--ops ${QTEST_OPS:-2000} >'$RES/qtest.ktap'"
fi

# The debug kernel's modules, W=1 (and sparse where the host's can): the
# debug VM loads them, so this comes first; the rest of the static step
# runs beside the debug VM (static_rest).
DEBUG_BUILD_CHECK=""
if want static && [ -n "$DEBUG_KDIR" ]; then
	# Debian's sparse (0.6.4, bookworm and trixie) predates
	# __typeof_unqual__, which 7.x's compiler_types.h uses under
	# sparse: 7.3 cannot be checked with it, and says so here.
	if sparse_runs "$DEBUG_KDIR"; then
		DEBUG_BUILD_CHECK="build W=1 + sparse C=2: debug $DEBUG_SERIES"
		run_check "$DEBUG_BUILD_CHECK" build_clean debug "$DEBUG_KDIR" C=2
	else
		DEBUG_BUILD_CHECK="build W=1: debug $DEBUG_SERIES (no sparse: the host's $(sparse --version 2>/dev/null | cut -d' ' -f1) lacks __typeof_unqual__, which $DEBUG_SERIES needs)"
		run_check "$DEBUG_BUILD_CHECK" build_clean debug "$DEBUG_KDIR"
	fi
fi

static_rest() {
	[ -n "$DEBUG_KDIR" ] && run_check "checkpatch --strict" checkpatch "$DEBUG_KDIR"
	run_check "allocations under a user's fd charged to its memory cgroup" charged_allocs
	run_check "the libvirt hook refuses metadata that would be an ssh option or shell text; restarts a mover that exits 1, a bounded number of times" \
		"$GPUMIG_TOP/tools/libvirt/test-hook.sh"
	run_check "build W=1 + sparse C=2: Debian $KVER_DISTRO" build_clean distro "$DISTRO_KDIR" C=2
	run_check "one version: the modules and gpumigctl report dkms.conf's" \
		versions_agree "$BUILD/distro"
	run_check "make uninstall removes what make install put in updates/ and extra/, nothing else" \
		uninstall_check
}

TOOLS=$BUILD/tools
# The VMs run on the project's QEMU with two simgpu PFs behind an IOMMU
# (lib.sh); without it (its build failed, recorded above) on vng's own.
PCI_VM_ARGS=()
[ -n "$QEMU_BIN" ] && PCI_VM_ARGS=(--qemu "$QEMU_BIN" --append "intel_iommu=on"
				   --qemu-opts "$SIMGPU_PCI_QEMU_OPTS")
if (want debug-vm || want distro-vm || named pci-vm || named releases) && [ -n "$DEBUG_KDIR" ]; then
	run_check "build the userspace VFIO client" client_build "$DEBUG_KDIR"
fi

# debug_vm: the debug kernel, one boot: KUnit, the mdev and PCI suites,
# QEMU 11.1 (QEMU 10.0 runs in the distro VM).
debug_vm() {
	# The static step built them (and failed on any diagnostic); without it
	# (--only), build them here.
	if [ -z "$DEBUG_BUILD_CHECK" ] || ! grep -qF "$DEBUG_BUILD_CHECK	pass" "$CHECKS"; then
		build_clean debug "$DEBUG_KDIR" >"$RES/build-debug-vm.log" 2>&1 ||
			record "build modules for the debug VM" FAIL 0 "see build/results/build-debug-vm.log"
	fi
	mkdir -p "$RES/debug"
	[ -n "$TRIXIE_ROOT" ] && echo "$TRIXIE_ROOT" >"$RES/debug/qemu11-root"
	VM_MEMORY=3G VM_TIMEOUT=3300 run_check "debug VM: boot $DEBUG_SERIES, KUnit, mdev and PCI suites, QEMU 11.1" \
		"$GPUMIG_TOP/scripts/vm.sh" "$DEBUG_KDIR" "$RES/debug" "${PCI_VM_ARGS[@]}" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" debug "$RES/debug" "$BUILD/debug" "$TOOLS" \
		"$DEBUG_KDIR"
	run_check "debug VM: kernel log clean (KASAN, lockdep, WARN, kmemleak)" \
		log_clean "$RES/debug"
	slowest "$RES/debug"
}

if named pci-vm && [ -n "$DEBUG_KDIR" ] && [ -n "$QEMU_BIN" ]; then
	want debug-vm || build_clean debug "$DEBUG_KDIR" >"$RES/build-pci-vm.log" 2>&1 ||
		record "build modules for the PCI VM" FAIL 0 "see build/results/build-pci-vm.log"
	mkdir -p "$RES/pci"
	[ -n "$TRIXIE_ROOT" ] && echo "$TRIXIE_ROOT" >"$RES/pci/qemu11-root"
	VM_MEMORY=3G VM_TIMEOUT=2400 run_check "PCI VM (simgpu-pci): PF, VFs, gpumig-vfio-pci, QEMU on VFs" \
		"$GPUMIG_TOP/scripts/vm.sh" "$DEBUG_KDIR" "$RES/pci" "${PCI_VM_ARGS[@]}" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" pci "$RES/pci" "$BUILD/debug" "$TOOLS" \
		"$DEBUG_KDIR"
	run_check "PCI VM: kernel log clean (KASAN, lockdep, WARN, kmemleak)" \
		log_clean "$RES/pci"
fi

if named kunit && [ -n "$DEBUG_KDIR" ]; then
	build_clean debug "$DEBUG_KDIR" >"$RES/build-kunit.log" 2>&1 ||
		record "build modules for the KUnit VM" FAIL 0 "see build/results/build-kunit.log"
	# shellcheck disable=SC2086
	run_check "KUnit VM: ${KUNIT_MODULES:-every suite}" \
		"$GPUMIG_TOP/scripts/vm.sh" "$DEBUG_KDIR" "$RES/kunit" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" kunit "$RES/kunit" "$BUILD/debug" "$TOOLS" \
		"$DEBUG_KDIR" ${KUNIT_MODULES:-}
	run_check "KUnit VM: kernel log clean" log_clean "$RES/kunit"
fi

dkms_step() {
	run_check "DKMS build and install for $KVER_DISTRO" \
		"$GPUMIG_TOP/scripts/dkms.sh" install "$KVER_DISTRO"
}

# releases_build DIR: every older release's modules for Debian's kernel
# (scripts/release.sh), listed in DIR/releases for the VM's releases
# suite; GOLDEN_RELEASES=1 also keeps the streams those releases write,
# in DIR/golden (tools/golden/README).
releases_build() {
	local rv rc d t0
	: >"$1/releases"
	if [ "${GOLDEN_RELEASES:-0}" = 1 ]; then
		mkdir -p "$1/golden"
		echo "$1/golden" >"$1/golden-dir"
	fi
	local list
	if ! list=$("$GPUMIG_TOP/scripts/release.sh" --list 2>"$RES/release-list.log") ||
	   [ -z "$list" ]; then
		record "the releases CHANGELOG.md names" FAIL 0 "see build/results/release-list.log"
		return
	fi
	while read -r rv rc; do
		t0=$(date +%s)
		if d=$("$GPUMIG_TOP/scripts/release.sh" "$rv" "$DISTRO_KDIR" 2>"$RES/release-$rv.log"); then
			record "gpumig $rv (commit ${rc:0:12}) built for $KVER_DISTRO" pass $(($(date +%s) - t0))
			echo "$rv $d" >>"$1/releases"
		else
			record "gpumig $rv (commit ${rc:0:12}) built for $KVER_DISTRO" FAIL \
				$(($(date +%s) - t0)) "see build/results/release-$rv.log"
		fi
	done <<<"$list"
}

# distro_prep, then distro_boot: Debian's kernel, one boot: DKMS's
# modules, the mdev and PCI suites, migrations to and from older releases,
# the package lane.  distro_prep builds the boot's inputs on the host (it
# runs beside the debug VM).
distro_prep() {
	# The static step builds the modules and the guest driver for Debian's
	# kernel (the guest driver's check loads them); without it (--only),
	# here.
	want static || build_clean distro "$DISTRO_KDIR" >"$RES/build-distro-vm.log" 2>&1 ||
		record "build modules for the distro VM" FAIL 0 "see build/results/build-distro-vm.log"
	# The package lane's inputs: gpumig-dkms built with dh-dkms, and a
	# Debian root for it to be installed into (scripts/guest/suite-package.sh).
	mkdir -p "$RES/distro"
	releases_build "$RES/distro"
	t0=$(date +%s)
	deb="" gdeb=""
	if debs=$("$GPUMIG_TOP/scripts/deb.sh" 2>"$RES/deb.log"); then
		record "Debian packages gpumig-dkms (dh-dkms), gpumig-tools, simgpu-guest-dkms, simgpu-guest-tools built; lintian: no error" pass $(($(date +%s) - t0))
		# the host's two, then the guest's two
		deb=$(head -n 2 <<<"$debs") gdeb=$(tail -n 2 <<<"$debs")
		echo "$deb" >"$RES/distro/pkg-deb"
		cp "$BUILD/deb/lintian.txt" "$RES/lintian.txt" 2>/dev/null
	else
		record "Debian packages gpumig-dkms (dh-dkms), gpumig-tools, simgpu-guest-dkms, simgpu-guest-tools built; lintian: no error" FAIL $(($(date +%s) - t0)) "see build/results/deb.log"
	fi
	t0=$(date +%s)
	if root=$("$GPUMIG_TOP/scripts/bookworm-root.sh" 2>"$RES/bookworm-root.log"); then
		record "bookworm root with Debian's $KVER_DISTRO and DKMS ready" pass $(($(date +%s) - t0))
		echo "$root" >"$RES/distro/pkg-root"
	else
		record "bookworm root with Debian's $KVER_DISTRO and DKMS ready" FAIL $(($(date +%s) - t0)) "see build/results/bookworm-root.log"
	fi
	# The package installed with apt natively into that root, as an image
	# the VM gets as a read-only disk (scripts/pkg-root.sh); without it
	# the VM installs the package itself from the plain root.
	pkgimg=""
	if [ -s "$RES/distro/pkg-deb" ] && [ -s "$RES/distro/pkg-root" ]; then
		t0=$(date +%s)
		# shellcheck disable=SC2086 # two paths, one a line
		if pkgimg=$("$GPUMIG_TOP/scripts/pkg-root.sh" "$root" "$BUILD/pkg-root.img" $deb \
				2>"$RES/pkg-root.log"); then
			record "gpumig-dkms and gpumig-tools installed with apt into that root, natively (DKMS builds the modules)" pass $(($(date +%s) - t0))
			cp "$pkgimg.install.log" "$RES/distro/pkg-install-native.log"
		else
			record "gpumig-dkms and gpumig-tools installed with apt into that root, natively (DKMS builds the modules)" FAIL $(($(date +%s) - t0)) "see build/results/pkg-root.log"
			pkgimg=""
		fi
	fi
	# The package lane's root as a read-only disk: the installed one, or
	# the plain one (bookworm-root.sh).
	[ -z "$pkgimg" ] && [ -s "$RES/distro/pkg-root" ] && pkgimg=$(cat "$RES/distro/pkg-root").img
	# Its hardware has a third PF (lib.sh): four VFs live between two sets.
	disk=""
	[ -n "$pkgimg" ] && [ -f "$pkgimg" ] &&
		disk="-drive file=$pkgimg,if=virtio,format=raw,readonly=on"
	if [ -n "$QEMU_BIN" ]; then
		DISTRO_VM_ARGS=(--qemu "$QEMU_BIN" --append "intel_iommu=on"
				--qemu-opts "$SIMGPU_PCI_QEMU_OPTS $SIMGPU_PCI_THIRD_PF${disk:+ $disk}")
	elif [ -n "$disk" ]; then
		DISTRO_VM_ARGS=(--qemu-opts "$disk")
	else
		DISTRO_VM_ARGS=()
	fi
	# The guest's packages, natively in that root as a Debian guest has
	# them; the module DKMS built there goes into the small Linux guest.
	if [ -n "$gdeb" ] && [ -s "$RES/distro/pkg-root" ]; then
		# shellcheck disable=SC2086 # two paths, one a line
		if run_check "the guest's packages in a Debian root: apt installs them natively (DKMS builds simgpu-guest), simgpu-work runs, gpumig-dkms refused beside them, purge leaves nothing" \
			"$GPUMIG_TOP/scripts/guest-pkg.sh" "$root" "$BUILD/guest-pkg" $gdeb \
				"$(head -n 1 <<<"$deb")"; then
			run_check "the small Linux guest: Debian's kernel, an initramfs with the packaged simgpu-guest and simgpu-work" \
				linux_guest_image "$BUILD/guest-pkg/simgpu-guest.ko"
		fi
	fi
}

distro_boot() {
	VM_MEMORY=3G VM_TIMEOUT=2400 run_check "distro VM: boot $KVER_DISTRO, DKMS modules, mdev and PCI suites, the package" \
		"$GPUMIG_TOP/scripts/vm.sh" "$DISTRO_VMLINUZ" "$RES/distro" "${DISTRO_VM_ARGS[@]}" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" distro "$RES/distro" "$BUILD/distro" "$TOOLS"
	run_check "distro VM: kernel log clean" log_clean "$RES/distro"
	slowest "$RES/distro"
}

# Two hosts: VM A on the debug kernel and VM B on Debian's, each with
# simgpu and libvirt 11.3 (scripts/libvirt-root.sh), joined by a network
# only they share (QEMU's dgram netdev over the loopback address); A
# migrates a GPU-holding domain to B and back with virsh
# (scripts/guest/libvirt.sh, Documentation/gpumig/libvirt.rst).
nova_responder() {
	local d=$1/nova-rewrite src dst
	while [ ! -e "$1/a-done" ]; do
		if [ -e "$d/request" ] && [ ! -e "$d/answered" ]; then
			read -r src dst <"$d/request"
			"$GPUMIG_TOP/scripts/nova-judge.sh" --rewrite "$d" "$src" "$dst" >"$d/log" 2>&1
			echo $? >"$d/answered"
		fi
		sleep 1
	done
}

two_host() {
	[ -n "$DEBUG_KDIR" ] && [ -n "$QEMU_BIN" ] || return 0
	want debug-vm || want static ||
		build_clean debug "$DEBUG_KDIR" >"$RES/build-two-host-a.log" 2>&1 ||
		record "build modules for host A" FAIL 0 "see build/results/build-two-host-a.log"
	want static ||
		build_clean distro "$DISTRO_KDIR" >"$RES/build-two-host-b.log" 2>&1 ||
		record "build modules for host B" FAIL 0 "see build/results/build-two-host-b.log"
	want debug-vm || want distro-vm || named pci-vm ||
		run_check "build the userspace VFIO client" client_build "$DEBUG_KDIR"
	t0=$(date +%s)
	if lvroot=$("$GPUMIG_TOP/scripts/libvirt-root.sh" 2>"$RES/libvirt-root.log"); then
		record "bookworm root with libvirt 11.3 and QEMU 10.0 ready" pass $(($(date +%s) - t0))
		TH=$RES/two-host
		mkdir -p "$TH/a" "$TH/b" "$TH/shared"
		# B ends as a host of the older release (0.1), built for its kernel.
		releases_build "$TH/b"
		echo "$round_trips" >"$TH/shared/round-trips"
		for h in a b; do
			echo "$lvroot" >"$TH/$h/libvirt-root"
			echo "$TH/shared" >"$TH/$h/shared"
		done
		# Host A asks for Nova's rewrite of a running domain's XML here
		# (lv_nova_rewrite): Nova runs natively, not in the emulated VM.
		"$GPUMIG_TOP/scripts/nova-root.sh" >/dev/null 2>"$RES/nova-root.log" ||
			record "the Nova root for the two hosts' rewrite" FAIL 0 "see build/results/nova-root.log"
		nova_responder "$TH/shared" &
		nrpid=$!
		p1=$((20000 + RANDOM % 20000)) p2=$((p1 + 1))
		net="-netdev dgram,id=lv,local.type=inet,local.host=127.0.0.1,remote.type=inet,remote.host=127.0.0.1"
		# Both hosts on the project's QEMU: each has simgpu-pci, for the VF.
		# 3 GiB, as the PCI suite's VMs: with 2 GiB the firmware put the
		# 64-bit PCI window where the VFs' 1 GiB BAR found no room.
		VM_MEMORY=3G VM_TIMEOUT=3600 "$GPUMIG_TOP/scripts/vm.sh" "$DISTRO_VMLINUZ" "$TH/b" \
			--rwdir "$TH/shared" --qemu "$QEMU_BIN" --append "intel_iommu=on" \
			--qemu-opts "$SIMGPU_PCI_QEMU_OPTS $net,local.port=$p2,remote.port=$p1 -device virtio-net-pci,netdev=lv,mac=52:54:00:77:00:02,romfile=" -- \
			"$GPUMIG_TOP/scripts/guest/run.sh" libvirt-b "$TH/b" "$BUILD/distro" "$TOOLS" \
			>"$RES/two-host-b.log" 2>&1 &
		bpid=$!
		# A boots once B's VM printed something: twice (2026-12-06) one of
		# the two exited at once with no output.  The host's dmesg shows
		# the project's QEMU crashing in TCG's address-space translation
		# (address_space_translate_for_iotlb) then, and again later in a
		# run: not understood yet, and not prevented by this wait.
		for i in $(seq 60); do
			[ -s "$TH/b/console.log" ] && break
			sleep 1
		done
		VM_MEMORY=3G VM_TIMEOUT=3600 run_check "two hosts: A ($DEBUG_SERIES debug) migrates domains (an mdev, a VF) to B ($KVER_DISTRO) and back with virsh" \
			"$GPUMIG_TOP/scripts/vm.sh" "$DEBUG_KDIR" "$TH/a" --rwdir "$TH/shared" \
			--qemu "$QEMU_BIN" --append "intel_iommu=on" \
			--qemu-opts "$SIMGPU_PCI_QEMU_OPTS $net,local.port=$p1,remote.port=$p2 -device virtio-net-pci,netdev=lv,mac=52:54:00:77:00:01,romfile=" -- \
			"$GPUMIG_TOP/scripts/guest/run.sh" libvirt-a "$TH/a" "$BUILD/debug" "$TOOLS" \
			"$DEBUG_KDIR"
		touch "$TH/shared/a-done"
		wait $nrpid
		run_check "two hosts: B ran to its end" wait $bpid
		run_check "two hosts: A's kernel log clean" log_clean "$TH/a"
		run_check "two hosts: B's kernel log clean" log_clean "$TH/b"
		# What nova-compute read on B (all of the recipe's kinds of
		# function), judged by Nova 31; the VF domain rewritten to A's VF.
		run_check "two hosts: Nova 31's own code on B's capture, its VF domain rewritten for A" \
			sh -c "'$GPUMIG_TOP/scripts/nova-judge.sh' '$TH/b/nova-capture' '$TH/a/nova-capture' \
				>'$RES/nova-two-host.ktap'"
	else
		record "bookworm root with libvirt 11.3 and QEMU 10.0 ready" FAIL $(($(date +%s) - t0)) "see build/results/libvirt-root.log"
	fi
}

# fuzz_step: the fuzz targets built and run (scripts/fuzz.sh).
fuzz_step() {
	local limit=(--runs "$fuzz_runs") what="$fuzz_runs executions of the parser, $((fuzz_runs / 10)) of the validator"
	[ -z "$fuzz_seconds" ] || limit=(--seconds "$fuzz_seconds") what="$fuzz_seconds s"
	run_check "fuzz: build the fuzz targets (clang, libFuzzer, ASan, UBSan)" \
		make -C "$GPUMIG_TOP/tools/fuzz" O="$BUILD/fuzz-bin" all
	run_check "fuzz: stream parser and architectural-state validator, $what on 2 processes" \
		"$GPUMIG_TOP/scripts/fuzz.sh" "${limit[@]}" "$BUILD/fuzz-bin"
}

# One VM at a time: the debug VM, then the distro VM, then (only when
# named) the two hosts (two VMs, alone).  Run beside the debug VM, the
# lanes were starved of CPU on two cores (a migration from B, which
# re-sends all guest memory each round, no longer converged; QEMU's
# pre-copy ended before the sampler saw it).  What runs on the host alone
# (the static step's rest, DKMS, the distro VM's inputs: about 5 minutes,
# one process at a time, where the debug VM leaves about a third of the
# two cores idle) runs beside the debug VM instead of after it, at the
# lowest priority; the fuzzers too, as a number of executions (at that
# priority they get what the VM leaves: the same work, more time, off the
# run's critical path).
# The Linux guest's image is this run's or none (distro_prep makes it).
want distro-vm && rm -f "$TOOLS/linux-guest.args"
dvm_pid=""
if want debug-vm && [ -n "$DEBUG_KDIR" ]; then
	timed "the debug VM" debug_vm &
	dvm_pid=$!
	# Interrupted, the VM goes too (a background job ignores SIGINT, and
	# vm.sh's timeout runs in a process group of its own): else it ran on
	# into the next run's results.
	trap 'pkill -TERM -P "$dvm_pid"; wait; exit 130' INT TERM
fi
t_host=$(date +%s)
# At the lowest priority while the debug VM runs: they take the cycles it
# leaves idle, not its own (at the same priority they slowed its boot and
# KUnit by half).
[ -n "$dvm_pid" ] && renice -n 19 -p $$ >/dev/null
want static && static_rest
want dkms && dkms_step
want distro-vm && distro_prep
want fuzz && fuzz_step
if [ -n "$dvm_pid" ]; then
	log "host steps beside the debug VM took $(($(date +%s) - t_host)) s"
	wait "$dvm_pid"
	trap - INT TERM
	log "then waited for the debug VM until $(($(date +%s) - t_host)) s"
	# Back to the usual priority (root may); alone, it does not matter.
	renice -n 0 -p $$ >/dev/null 2>&1 || true
fi
want distro-vm && timed "the distro VM" distro_boot
if named releases && ! want distro-vm; then
	# The releases suite alone, on Debian's kernel with the DKMS install.
	mkdir -p "$RES/releases"
	releases_build "$RES/releases"
	VM_MEMORY=3G VM_TIMEOUT=1200 run_check "releases VM: $KVER_DISTRO, migrations to and from older releases" \
		"$GPUMIG_TOP/scripts/vm.sh" "$DISTRO_VMLINUZ" "$RES/releases" "${PCI_VM_ARGS[@]}" -- \
		"$GPUMIG_TOP/scripts/guest/run.sh" releases "$RES/releases" "$BUILD/distro" "$TOOLS"
	run_check "releases VM: kernel log clean" log_clean "$RES/releases"
fi
named two-host && timed "the two hosts" two_host

log "all steps took $(($(date +%s) - T_START)) s"
python3 "$GPUMIG_TOP/scripts/summary.py" "$RES"
