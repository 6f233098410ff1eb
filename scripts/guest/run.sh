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
# MODE "pci": the PCI suite alone (simgpu-pci hardware: the PF driver, VFs,
# the PF's services, vfio-pci and gpumig-vfio-pci, QEMU on VFs); "debug"
# and "distro" run it too, in the same boot, after the mdev suites.
# MODE "bench": the benchmarks only, output in OUT/bench.txt.
# MODE "bench-vram": the VRAM migration benchmark on every simgpu type
# (Debian's kernel: KASAN would skew it), output in OUT/bench-vram.txt.
# MODE "nova-capture": what nova-compute reads on a host of the VF recipe,
# in OUT/nova-capture (OUT/libvirt-root names libvirt's root).
# MODES "libvirt-a" and "libvirt-b": the two hosts of the libvirt lane
# (scripts/guest/libvirt.sh); OUT/libvirt-root names libvirt's root and
# OUT/shared the directory both hosts have; B's OUT/releases names the
# older release it swaps to at the end (two releases in one pool).
# MODE "demo": one QEMU live migration, report in OUT/qemu/demo.txt.
# MODE "demo-linux": the same with the small Linux guest (Debian's kernel:
# modules from MODDIR; OUT/linux-guest.args names the guest's kernel and
# initramfs).
# MODE "debug": the debug kernel; modules are insmod-ed from MODDIR and the
# KUnit module runs.  MODE "distro": Debian's kernel; modules come from the
# DKMS install (modprobe), proving the packaging.
set -u
mode=$1 out=$2 moddir=$3 tooldir=$4 kdir=${5:-}
shift $(($# < 5 ? $# : 5))

# The suites (each file says what it holds).
here=$(dirname "$0")
. "$here/lib.sh"
. "$here/suite-mdev.sh"
. "$here/suite-pci.sh"
. "$here/suite-releases.sh"
. "$here/suite-package.sh"
. "$here/suite-bench.sh"

ktap=$out/vm-$mode.ktap
# One module per KUnit suite; the arguments after KDIR pick some.
KUNIT_MODULES=${*:-gpumig_stream_kunit gpumig_mig_kunit gpumig_dirty_kunit simgpu_kunit}
n=0

printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: vm_%s\n' "$mode" >"$ktap"
# The kernel log as it happens: what an oops or a hang left behind is on
# the host even when this script never reaches its end.
cat /dev/kmsg >"$out/kmsg.txt" 2>/dev/null &
uname -r >"$out/uname.txt"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
kml=/sys/kernel/debug/kmemleak
if [ -w "$kml" ]; then
	# Report and forget whatever the boot itself left behind.
	echo scan >"$kml"
	echo clear >"$kml"
fi

case $mode in
pci)
	pci_suite
	;;
debug)
	check "kmemleak is active" test -w "$kml"
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	kunit_suites
	simgpu_suite
	check "unload simgpu with an instance left: the instance goes with it" sh -c \
		"u=\$(cat /proc/sys/kernel/random/uuid) &&
		 echo \$u > /sys/class/mdev_bus/simgpu/mdev_supported_types/simgpu-64M/create &&
		 rmmod simgpu && [ ! -e /sys/bus/mdev/devices/\$u ]"
	check "unload gpumig" rmmod gpumig
	pci_if_present
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
demo-linux)
	check "load the VFIO stack" vfio_stack
	# a host where make check installed the DKMS package has its own
	check "unload the installed gpumig modules" unload_gpumig
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	python3 "$(dirname "$0")/qemu_mig.py" --demo --guest "$tooldir/gpumig-guest.elf" \
		--linux "$(cat "$out/linux-guest.args")" --out "$out/qemu" >>"$out/guest.log" 2>&1
	;;
bench)
	bench_mode
	;;
bench-vram)
	bench_vram_mode
	;;
bench-several)
	bench_several_mode
	;;
soak)
	soak_mode
	;;
package)
	# The package suite alone (Debian's kernel), after the golden streams
	# load; with OUT/golden-save, first write a golden stream to the file
	# it names (tools/golden/README).
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko and simgpu.ko" sh -c "insmod $moddir/gpumig.ko && insmod $moddir/simgpu.ko"
	u=$(cat /proc/sys/kernel/random/uuid)
	echo "$u" > /sys/class/mdev_bus/simgpu/mdev_supported_types/simgpu-64M/create
	if [ -s "$out/golden-save" ]; then
		GOLDEN_STREAM=$(cat "$out/golden-save") "$tooldir/simgpu-client" -s golden_save \
			-n golden_save "$u" >"$out/client-golden-save.ktap" 2>>"$out/guest.log"
	fi
	golden_load "$u"
	echo 1 > /sys/bus/mdev/devices/$u/remove
	check "unload" rmmod simgpu gpumig
	package_suite
	;;
nova-capture)
	# What nova-compute reads on a host of the VF recipe (libvirt 11.3 from
	# OUT/libvirt-root), in OUT/nova-capture: the Nova lane's input
	# (scripts/nova-judge.sh; the fixture in tools/nova/capture).
	role=b shared=$out/shared
	mkdir -p "$shared"
	. "$(dirname "$0")/libvirt.sh"
	check "load the VFIO stack and gpumig.ko" sh -c "$(declare -f unload_gpumig vfio_stack); kdir='$kdir'; unload_gpumig && vfio_stack && insmod $moddir/gpumig.ko"
	if LVR=$(lv_root); then
		check "libvirtd $(chroot "$LVR" virsh --version) answers" lv_daemon 2
		check "simgpu-pci VF $LV_VF (256M) on gpumig-vfio-pci" lv_vf
		check "gpumig-vfio-pci in modules.alias, as DKMS and depmod leave it" lv_modules_alias
		check "a VF on plain vfio-pci, the second PF whole on vfio-pci" lv_nova_host
		check "what nova-compute reads, captured" lv_nova_capture "$out/nova-capture"
	else
		check "the libvirt root" false
	fi
	;;
libvirt-a | libvirt-b)
	role=${mode#libvirt-}
	shared=$(cat "$out/shared")
	. "$(dirname "$0")/libvirt.sh"
	libvirt_$role
	;;
distro)
	check "modprobe gpumig and simgpu (DKMS install)" modprobe -a gpumig simgpu
	check "the modules are the DKMS build" sh -c \
		"for m in gpumig simgpu simgpu_pf gpumig_vfio_pci; do
		     modinfo -n \$m | grep -q /updates/dkms/ || exit 1; done"
	simgpu_suite
	check "unload simgpu" rmmod simgpu
	# udev may have loaded the DKMS simgpu-pf for the PF at boot: a user of gpumig
	check "unload gpumig (after simgpu-pf, which udev may have loaded for the PF)" sh -c \
		"for m in gpumig_vfio_pci simgpu_pf; do
		     [ ! -d /sys/module/\$m ] || rmmod \$m || exit 1; done
		 rmmod gpumig || { lsmod | grep -E 'gpumig|simgpu'; exit 1; }"
	pci_if_present
	releases_suite
	package_suite
	;;
releases)
	# The releases suite alone (scripts/check.sh --only releases).
	releases_suite
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
