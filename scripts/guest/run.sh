#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside a test VM (see scripts/vm.sh): load gpumig, run every suite,
# write KTAP and logs to OUT.
#
#   run.sh MODE OUT MODDIR TOOLDIR [KDIR [KUNIT_MODULE...]]
#
# KDIR: the debug kernel's build tree; its own modules (vfio, mdev, ...)
# are loaded from there by path, in dependency order.
# MODE "kunit": only the KUnit modules named (default: every suite).
# MODE "pci": simgpu-pci hardware (QEMU's simgpu-pf): the PF driver, VFs,
# the PF's services (KUnit) and the client on VFs bound to vfio-pci.
# MODE "bench": the benchmarks only, output in OUT/bench.txt.
# MODE "demo": one QEMU live migration, report in OUT/qemu/demo.txt.
# MODE "debug": the debug kernel; modules are insmod-ed from MODDIR and the
# KUnit module runs.  MODE "distro": Debian's kernel; modules come from the
# DKMS install (modprobe), proving the packaging.
set -u
mode=$1 out=$2 moddir=$3 tooldir=$4 kdir=${5:-}
shift $(($# < 5 ? $# : 5))

# The VFIO stack simgpu needs: type1 container and mediated devices.
vfio_stack() {
	local m

	if [ -z "$kdir" ]; then
		modprobe -a vfio_iommu_type1 mdev vfio-pci
		return
	fi
	for m in virt/lib/irqbypass drivers/iommu/iommufd/iommufd drivers/vfio/vfio \
		 drivers/vfio/vfio_iommu_type1 drivers/vfio/mdev/mdev \
		 drivers/vfio/pci/vfio-pci-core drivers/vfio/pci/vfio-pci; do
		[ -f "$kdir/$m.ko" ] || continue
		grep -q "^$(basename $m) " /proc/modules || insmod "$kdir/$m.ko" || return 1
	done
}
ktap=$out/vm-$mode.ktap
# One module per KUnit suite; the arguments after KDIR pick some.
KUNIT_MODULES=${*:-gpumig_stream_kunit gpumig_mig_kunit gpumig_dirty_kunit simgpu_kunit}
n=0

ok() {
	n=$((n + 1))
	echo "    ok $n $*" >>"$ktap"
	echo "vm: ok $*"
}

not_ok() {
	n=$((n + 1))
	echo "    not ok $n $*" >>"$ktap"
	echo "vm: NOT OK $*"
}

# check DESC CMD...: one KTAP result for one command.
check() {
	local desc=$1
	shift
	if "$@" >>"$out/guest.log" 2>&1; then ok "$desc"; else not_ok "$desc"; fi
}

printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: vm_%s\n' "$mode" >"$ktap"
uname -r >"$out/uname.txt"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
kml=/sys/kernel/debug/kmemleak
if [ -w "$kml" ]; then
	# Report and forget whatever the boot itself left behind.
	echo scan >"$kml"
	echo clear >"$kml"
fi

# Each KUnit module runs its suite when loaded; its results are copied
# before it is unloaded (its debugfs directory goes with it).
kunit_suites() {
	local k d

	mkdir -p "$out/kunit"
	for k in $KUNIT_MODULES; do
		check "KUnit: load $k (runs its suite)" insmod "$moddir/$k.ko" || continue
		for d in /sys/kernel/debug/kunit/*/; do
			[ -f "$d/results" ] && cp "$d/results" "$out/kunit/$(basename "$d").ktap"
		done
		check "KUnit: unload $k" rmmod "$k"
	done
}

# QEMU realizes vfio-pci on the mdev and its guest sees a 3D controller
# with our IDs and a 64 KiB BAR0 (the CPUs never run: -S).
qemu_assign() {
	local log=$out/qemu-assign.txt

	printf 'info pci\nquit\n' | timeout 180 qemu-system-x86_64 -machine q35 \
		-accel tcg -m 128 -S -nodefaults -display none -monitor stdio \
		-device vfio-pci,sysfsdev=/sys/bus/mdev/devices/$1 >"$log" 2>&1
	grep -q "3D controller: PCI device 1234:5347" "$log" &&
		grep -A3 "1234:5347" "$log" | grep -q "BAR0: 32 bit memory"
}

# The mdevctl definitions Documentation/gpumig/qemu.rst gives, one per type.
mdevctl_types() {
	local t u
	for t in 64M 256M 1G; do
		u=$(cat /proc/sys/kernel/random/uuid)
		mdevctl define --uuid "$u" --parent simgpu --type "simgpu-$t" --auto &&
			mdevctl start --uuid "$u" &&
			[ "$(basename "$(readlink /sys/bus/mdev/devices/$u/mdev_type)")" = "simgpu-$t" ] &&
			mdevctl list | grep -q "$u simgpu simgpu-$t" &&
			mdevctl stop --uuid "$u" &&
			[ ! -e /sys/bus/mdev/devices/$u ] &&
			mdevctl undefine --uuid "$u" || return 1
	done
}

# simgpu_suite: one instance of every type, the client's scenarios on each,
# a second tenant on a reused instance, removal while open.
simgpu_suite() {
	local parent=/sys/class/mdev_bus/simgpu t uuid
	local -a uuids=()

	check "VFIO type1 and mdev available" vfio_stack
	for t in 64M 256M 1G; do
		uuid=$(cat /proc/sys/kernel/random/uuid)
		if check "create a simgpu-$t instance" \
			sh -c "echo $uuid > $parent/mdev_supported_types/simgpu-$t/create"; then
			uuids+=("$uuid")
		fi
	done
	# 2048 MiB budget - 64 - 256 - 1024 = 704 MiB left.
	check "available_instances follows the VRAM budget" sh -c \
		"[ \$(cat $parent/mdev_supported_types/simgpu-1G/available_instances) -eq 0 ] &&
		 [ \$(cat $parent/mdev_supported_types/simgpu-256M/available_instances) -eq 2 ] &&
		 [ \$(cat $parent/mdev_supported_types/simgpu-64M/available_instances) -eq 11 ]"
	check "types and instances publish the migration descriptor" sh -c \
		"grep -q 'type=simgpu-256M vram=268435456 queues=4' $parent/mdev_supported_types/simgpu-256M/description &&
		 grep -q 'backend=1 type=simgpu-64M' /sys/bus/mdev/devices/${uuids[0]}/migration/compat"
	for uuid in "${uuids[@]}"; do
		t=$(basename "$(readlink /sys/bus/mdev/devices/$uuid/mdev_type)")
		if [ "$t" = simgpu-256M ]; then
			scen=""
		else
			scen="-s info,fill_copy,kernel,fences_irq,stale_tlb,scrub,dma_logging"
		fi
		timeout 600 "$tooldir/simgpu-client" $scen -n "${t//-/_}" "$uuid" \
			>"$out/client-$t.ktap" 2>>"$out/guest.log"
		echo "vm: client on $t exited $?"
	done
	# Migration between two instances of one type, then to another type.
	local src dst
	src=$(cat /proc/sys/kernel/random/uuid)
	dst=$(cat /proc/sys/kernel/random/uuid)
	if check "create two more simgpu-256M instances for migration" sh -c \
		"echo $src > $parent/mdev_supported_types/simgpu-256M/create &&
		 echo $dst > $parent/mdev_supported_types/simgpu-256M/create"; then
		timeout 900 "$tooldir/simgpu-client" -s migrate,dirty_precopy,stop_fails,reset_precopy,hostile,pingpong,quarantine -n simgpu_migration \
			-d "$dst" "$src" >"$out/client-migration.ktap" 2>>"$out/guest.log"
		timeout 300 "$tooldir/simgpu-client" -s incompatible -n simgpu_migration_compat \
			-d "${uuids[0]}" "$src" >"$out/client-migration-compat.ktap" 2>>"$out/guest.log"
		# The benchmark's own exactness checks; its figures go to the log.
		timeout 300 "$tooldir/simgpu-client" -s bench_dirty -n simgpu_bench "$src" \
			>"$out/client-bench.ktap" 2>>"$out/guest.log"
		echo 1 > /sys/bus/mdev/devices/$src/remove
		echo 1 > /sys/bus/mdev/devices/$dst/remove
	fi
	if [ ${#uuids[@]} -gt 0 ]; then
		check "QEMU 10 assigns a simgpu with -device vfio-pci,sysfsdev=" \
			qemu_assign "${uuids[0]}"
		timeout 120 "$tooldir/simgpu-client" -s remove_open -n simgpu_remove "${uuids[0]}" \
			>"$out/client-remove.ktap" 2>>"$out/guest.log"
	fi
	for uuid in "${uuids[@]}"; do
		[ -e /sys/bus/mdev/devices/$uuid ] && echo 1 > /sys/bus/mdev/devices/$uuid/remove
	done
	check "mdevctl defines, starts and stops one instance of each type (qemu.rst)" \
		mdevctl_types
	# QEMU end to end: the guest program, live migration, negative paths,
	# ping-pong (it creates its own instances).
	check "QEMU end to end: every check passed (qemu/qemu.ktap)" \
		timeout 1800 python3 "$(dirname "$0")/qemu_mig.py" \
		--guest "$tooldir/gpumig-guest.elf" --out "$out/qemu"
}


# simgpu-pci: the PF driver, VF profiles, SR-IOV on and off, the PF's
# services from the kernel (KUnit on an unbound VF), and the client's
# scenarios on VFs of two profiles bound to plain vfio-pci.
PFDRV=/sys/bus/pci/drivers/simgpu-pf

pf_addr() {
	basename "$(readlink -f "$PFDRV"/0000:*)" 2>/dev/null
}

vf_addr() {
	basename "$(readlink -f "/sys/bus/pci/devices/$1/virtfn$2")"
}

# Each VF is a simgpu (1234:5347) in an IOMMU group of its own.
vfs_check() {
	local pf=$1 n=$2 i vf g
	local -A groups=()

	[ "$(ls -d /sys/bus/pci/devices/$pf/virtfn* | wc -l)" -eq "$n" ] || return 1
	for ((i = 0; i < n; i++)); do
		vf=$(vf_addr "$pf" $i)
		[ "$(cat /sys/bus/pci/devices/$vf/vendor):$(cat /sys/bus/pci/devices/$vf/device)" = \
		  "0x1234:0x5347" ] || return 1
		g=$(basename "$(readlink /sys/bus/pci/devices/$vf/iommu_group)")
		[ -n "$g" ] && [ -z "${groups[$g]:-}" ] || return 1
		groups[$g]=1
		[ "$(ls /sys/bus/pci/devices/$vf/iommu_group/devices | wc -l)" -eq 1 ] || return 1
		[ -d "/sys/kernel/debug/simgpu-pf/$vf" ] || return 1
	done
}

vf_bind() {
	echo "$2" >"/sys/bus/pci/devices/$1/driver_override" &&
		echo "$1" >/sys/bus/pci/drivers_probe &&
		[ "$(basename "$(readlink "/sys/bus/pci/devices/$1/driver")")" = "$2" ]
}

vf_unbind() {
	echo >"/sys/bus/pci/devices/$1/driver_override"
	echo "$1" >"/sys/bus/pci/devices/$1/driver/unbind"
}

pci_suite() {
	local pf sys vf0 vf1 vf2

	check "VFIO type1 and vfio-pci available" vfio_stack
	check "load simgpu-pf.ko" $loadmod "$moddir_pf"
	pf=$(pf_addr)
	check "the PF probed ($pf)" test -n "$pf"
	sys=/sys/bus/pci/devices/$pf/simgpu
	check "the PF offers the profiles its aperture holds" \
		sh -c "[ \"\$(cat $sys/profiles)\" = '64M 256M' ]"
	check "a profile the PF does not offer is refused" \
		sh -c "! echo 1G > $sys/vf1_profile && [ \$(cat $sys/vf1_profile) = 64M ]"
	check "choose VF profiles before SR-IOV: 64M, 256M, 64M" \
		sh -c "echo 256M > $sys/vf1_profile && [ \$(cat $sys/vf1_profile) = 256M ]"
	check "enable 3 VFs" sh -c "echo 3 > /sys/bus/pci/devices/$pf/sriov_numvfs"
	check "3 simgpu VFs, each in its own IOMMU group, with knobs" vfs_check "$pf" 3
	check "profiles are fixed while VFs are enabled" \
		sh -c "! echo 64M > $sys/vf1_profile 2>/dev/null"
	vf0=$(vf_addr "$pf" 0)
	vf1=$(vf_addr "$pf" 1)
	vf2=$(vf_addr "$pf" 2)
	# The PF's services, from the kernel, on the unbound VF 2.
	KUNIT_MODULES="simgpu_pf_kunit" kunit_suites
	check "bind VF 0 (64M) to vfio-pci" vf_bind "$vf0" vfio-pci
	check "bind VF 1 (256M) to vfio-pci" vf_bind "$vf1" vfio-pci
	check "VF 1 reports its profile's VRAM and queues" sh -c \
		"[ \$(cat /sys/kernel/debug/simgpu-pf/$vf1/stats | wc -l) -gt 5 ]"
	timeout 900 "$tooldir/simgpu-client" -n simgpu_vf_64M "$vf0" \
		>"$out/client-vf-64M.ktap" 2>>"$out/guest.log"
	echo "vm: client on VF 0 exited $?"
	timeout 900 "$tooldir/simgpu-client" -n simgpu_vf_256M "$vf1" \
		>"$out/client-vf-256M.ktap" 2>>"$out/guest.log"
	echo "vm: client on VF 1 exited $?"
	check "SR-IOV cannot be disabled while a VF is bound" \
		sh -c "! echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs 2>/dev/null && [ -e /sys/bus/pci/devices/$vf0 ]"
	vf_unbind "$vf0"
	vf_unbind "$vf1"
	check "with every VF unbound, SR-IOV is disabled" \
		sh -c "echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs && [ ! -e /sys/bus/pci/devices/$vf0 ] &&
		       [ -z \"\$(ls /sys/kernel/debug/simgpu-pf)\" ]"
	check "and enabled again, with the same profiles" sh -c \
		"echo 2 > /sys/bus/pci/devices/$pf/sriov_numvfs && [ \$(cat $sys/vf1_profile) = 256M ] &&
		 echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs"
	check "unload simgpu-pf" rmmod simgpu_pf
}

case $mode in
pci)
	loadmod=insmod
	moddir_pf=$moddir/simgpu-pf.ko
	[ -n "$kdir" ] || { loadmod="modprobe"; moddir_pf=simgpu_pf; }
	pci_suite
	;;
debug)
	check "kmemleak is active" test -w "$kml"
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	kunit_suites
	simgpu_suite
	check "unload simgpu" rmmod simgpu
	check "unload gpumig" rmmod gpumig
	;;
kunit)
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	kunit_suites
	check "unload simgpu" rmmod simgpu
	check "unload gpumig" rmmod gpumig
	;;
demo)
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	python3 "$(dirname "$0")/qemu_mig.py" --demo --guest "$tooldir/gpumig-guest.elf" \
		--out "$out/qemu" >>"$out/guest.log" 2>&1
	;;
bench)
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	uuid=$(cat /proc/sys/kernel/random/uuid)
	if check "create a simgpu-256M instance" sh -c \
		"echo $uuid > /sys/class/mdev_bus/simgpu/mdev_supported_types/simgpu-256M/create"; then
		timeout 900 "$tooldir/simgpu-client" -s bench_dirty -n simgpu_bench "$uuid" \
			>"$out/bench.txt" 2>>"$out/guest.log"
		echo 1 > /sys/bus/mdev/devices/$uuid/remove
	fi
	;;
distro)
	check "modprobe gpumig and simgpu (DKMS install)" modprobe -a gpumig simgpu
	check "the modules are the DKMS build" sh -c \
		"modinfo -n gpumig | grep -q /updates/dkms/ && modinfo -n simgpu | grep -q /updates/dkms/"
	simgpu_suite
	check "unload simgpu" rmmod simgpu
	check "unload gpumig" rmmod gpumig
	;;
esac

if [ -w "$kml" ]; then
	sleep 6
	echo scan >"$kml"
	echo scan >"$kml"
	cat "$kml" >"$out/kmemleak.txt"
fi
echo "    1..$n" >>"$ktap"
echo "ok 1 vm_$mode" >>"$ktap"
dmesg >"$out/dmesg.txt"
echo "vm: done"
