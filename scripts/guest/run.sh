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
# MODES "libvirt-a" and "libvirt-b": the two hosts of the libvirt lane
# (scripts/guest/libvirt.sh); OUT/libvirt-root names libvirt's root and
# OUT/shared the directory both hosts have.
# MODE "demo": one QEMU live migration, report in OUT/qemu/demo.txt.
# MODE "debug": the debug kernel; modules are insmod-ed from MODDIR and the
# KUnit module runs.  MODE "distro": Debian's kernel; modules come from the
# DKMS install (modprobe), proving the packaging.
set -u
mode=$1 out=$2 moddir=$3 tooldir=$4 kdir=${5:-}
shift $(($# < 5 ? $# : 5))

# The VFIO stack simgpu needs: type1 container and mediated devices.
vfio_stack() {
	local m b

	if [ -z "$kdir" ]; then
		modprobe -a vfio_iommu_type1 mdev vfio-pci
		return
	fi
	for m in virt/lib/irqbypass drivers/iommu/iommufd/iommufd drivers/vfio/vfio \
		 drivers/vfio/vfio_iommu_type1 drivers/vfio/mdev/mdev \
		 drivers/vfio/pci/vfio-pci-core drivers/vfio/pci/vfio-pci; do
		[ -f "$kdir/$m.ko" ] || continue
		b=$(basename $m)
		grep -q "^${b//-/_} " /proc/modules || insmod "$kdir/$m.ko" || return 1
	done
}
ktap=$out/vm-$mode.ktap
# One module per KUnit suite; the arguments after KDIR pick some.
KUNIT_MODULES=${*:-gpumig_stream_kunit gpumig_mig_kunit gpumig_dirty_kunit simgpu_kunit}
n=0

ok() {
	n=$((n + 1))
	echo "    ok $n $*" >>"$ktap"
	echo "vm: ok $* [${SECONDS} s]"
}

not_ok() {
	n=$((n + 1))
	echo "    not ok $n $*" >>"$ktap"
	echo "vm: NOT OK $* [${SECONDS} s]"
}

# check DESC CMD...: run CMD, report it; the status says whether it passed.
check() {
	local desc=$1
	shift
	if "$@" >>"$out/guest.log" 2>&1; then
		ok "$desc"
	else
		not_ok "$desc"
		return 1
	fi
}

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

# unload_refused DEV MODULE...: while a VMM (QEMU, stopped before its
# first instruction) holds DEV open, unloading any of MODULE is refused and
# breaks nothing; DEV works for the next user.
unload_refused() {
	local dev=$1 pid m i held=""
	shift
	qemu-system-x86_64 -machine q35 -accel tcg -m 128 -S -nodefaults -display none \
		-monitor none -device vfio-pci,sysfsdev="$dev" >"$out/qemu-unload.txt" 2>&1 &
	pid=$!
	for i in $(seq 300); do
		ls -l /proc/$pid/fd 2>/dev/null | grep -Eq 'vfio-device|/dev/vfio/devices/' && {
			held=1
			break
		}
		sleep 0.2
	done
	[ -n "$held" ] || { echo "QEMU never opened $dev"; kill $pid; return 1; }
	for m in "$@"; do
		if rmmod "$m" 2>/dev/null; then
			echo "rmmod $m succeeded while $dev was open"
			kill $pid
			return 1
		fi
	done
	kill $pid
	wait $pid 2>/dev/null
	return 0
}

# in_order FILE REGEX...: each REGEX matches a line of FILE after the line
# the one before it matched.
in_order() {
	local f=$1
	shift
	awk -v n=$# 'BEGIN { for (i = 1; i < ARGC; i++) re[i] = ARGV[i]; ARGC = 1; i = 1 }
		i <= n && $0 ~ re[i] { i++ }
		END { if (i <= n) { print "no trace line after the earlier ones matches: " re[i]; exit 1 } }' \
		"$@" <"$f"
}

# trace_events SRC DST OTHER: the engine's trace events of one migration
# SRC -> DST, a stream refused by OTHER (another type), a quarantine and
# its lifting, and DMA logging appear, each in the order it happened.
trace_events() {
	local src=$1 dst=$2 other=$3 t=/sys/kernel/tracing log=$out/trace-$1.txt
	[ -d $t/events ] || mount -t tracefs nodev $t 2>/dev/null
	[ -d $t/events/gpumig ] || { echo "no gpumig trace events in $t"; return 1; }
	echo 0 > $t/tracing_on
	echo > $t/trace
	echo 16384 > $t/buffer_size_kb
	echo 1 > $t/events/gpumig/enable
	echo 1 > $t/tracing_on
	"$tooldir/simgpu-client" -s migrate,quarantine -n trace_migrate -d "$dst" "$src" >/dev/null 2>&1
	"$tooldir/simgpu-client" -s incompatible -n trace_refused -d "$other" "$src" >/dev/null 2>&1
	"$tooldir/simgpu-client" -s dma_logging,dma_log_cut -n trace_logging "$src" >/dev/null 2>&1
	echo 0 > $t/tracing_on
	echo 0 > $t/events/gpumig/enable
	cat $t/trace >"$log"
	echo > $t/trace
	local -a logging=()
	grep -q dirty_tracking=device /sys/bus/mdev/devices/$src/migration/status && logging=(
		"gpumig_dma_log_start: $src ranges=1 page_size=4096 ret=0"
		"gpumig_dma_log_report: $src iova=0x[0-9a-f]+ length=0x[0-9a-f]+ dirty_bytes=[1-9][0-9]* ret=0"
		"gpumig_dma_log_stop: $src")
	in_order "$log" \
		"gpumig_state: $src RUNNING -> PRE_COPY ret=0" \
		"gpumig_vram: $src save offset=0x[0-9a-f]+ len=0x10000 data crc=[0-9a-f]+" \
		"gpumig_save_read: $src pre-copy bytes=[1-9]" \
		"gpumig_quiesce: $src us=[0-9]+ ret=0" \
		"gpumig_invalidate: $src us=[0-9]+ ret=0" \
		"gpumig_state: $src PRE_COPY_P2P -> STOP_COPY ret=0" \
		"gpumig_save_read: $src stop-copy bytes=[1-9]" \
		"gpumig_save_read: $src stop-copy bytes=0 remaining=0" \
		"gpumig_state: $dst STOP -> RESUMING ret=0" \
		"gpumig_vram: $dst load offset=0x[0-9a-f]+ len=0x[0-9a-f]+ data crc=[0-9a-f]+" \
		"gpumig_state: $dst RESUMING -> STOP ret=0" \
		"gpumig_state: $dst STOP -> RUNNING_P2P ret=0" \
		"gpumig_quarantine: $src " \
		"gpumig_unquarantine: $src ret=0" \
		"gpumig_stream_refused: $other err=-[0-9]+ incompatible source" \
		"${logging[@]}"
}

# compat_check SRC SAME OTHER WHY: gpumigctl check-compat says SAME may
# take SRC's stream (exit 0) and OTHER may not, for the kernel's reason.
compat_check() {
	local c="$tooldir/gpumigctl"
	"$c" check-compat "$1" "$2" | grep -qx compatible &&
		{ "$c" check-compat "$1" "$3"; [ $? -eq 1 ]; } &&
		"$c" check-compat "$1" "$3" | grep -qF "incompatible: $4" &&
		"$c" --json check-compat "$(cat "$(gpumig_sysdir "$1")/migration/compat")" "$2" |
			grep -q '"compatible": true'
}

gpumig_sysdir() {
	if [ -e "/sys/bus/mdev/devices/$1" ]; then
		echo "/sys/bus/mdev/devices/$1"
	else
		echo "/sys/bus/pci/devices/$1"
	fi
}

# watch_check DEV: two samples, each a JSON line with the device's state.
watch_check() {
	[ "$("$tooldir/gpumigctl" --json watch "$1" --interval 100 --count 2 |
		grep -c "\"device\": \"$1\", \"state\": \"RUNNING\", \"remaining_bytes\": 0")" -eq 2 ]
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

# orchestrator_names: every mdevNameSelector, mediatedDeviceTypes entry
# and enabled_mdev_types value of orchestrators.rst is the name and the id
# of one simgpu type.
orchestrator_names() {
	local doc v n=0
	doc=$(dirname "$0")/../../Documentation/gpumig/orchestrators.rst
	for v in $(sed -n -e 's/^ *- mdevNameSelector: \(.*\)$/\1/p' \
			  -e 's/^ *enabled_mdev_types = \(.*\)$/\1/p' \
			  -e '/mediatedDeviceTypes:/{n;s/^ *- \(.*\)$/\1/p}' "$doc"); do
		[ "$(cat "/sys/class/mdev_bus/simgpu/mdev_supported_types/$v/name")" = "$v" ] ||
			{ echo "$v: not a simgpu type"; return 1; }
		n=$((n + 1))
	done
	[ $n -ge 3 ]
}

# golden_load DEV: every golden stream of tools/golden for DEV's type
# (*-simgpu-64M.stream.gz for a simgpu-64M mdev, *-simgpu-vf-64M for a
# 64M VF) into DEV: it loads, the device holds its VRAM and names the
# stream's producer, and edited copies of it (newer major, newer state
# version) are refused with a message.  One KTAP file per stream.
golden_load() {
	local dev=$1 t f name sys=/sys/bus/mdev/devices/$1
	[ -e "$sys" ] || sys=/sys/bus/pci/devices/$dev
	t=$(grep -o 'type=[^ ]*' "$sys/migration/compat" 2>/dev/null | cut -d= -f2)
	[ -n "$t" ] || { check "golden streams: the type of $dev" false; return; }
	for f in "$(dirname "$0")"/../../tools/golden/*-"$t".stream.gz; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .stream.gz)
		gunzip -c "$f" >"$out/golden.bin" || { check "$name: unpack" false; continue; }
		GOLDEN_STREAM=$out/golden.bin timeout 300 "$tooldir/simgpu-client" -s golden_load \
			-n "golden_${name//[-.]/_}" "$dev" >"$out/client-golden-$name.ktap" 2>>"$out/guest.log"
		rm -f "$out/golden.bin"
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
		 [ \$(cat $parent/mdev_supported_types/simgpu-64M/available_instances) -eq 11 ] &&
		 [ \$(cat $parent/mdev_supported_types/simgpu-16G/available_instances) -eq 0 ]"
	# Selectors (KubeVirt's mdevNameSelector, Nova's enabled_mdev_types)
	# match a type's name or id: the same string, no spaces or commas.
	check "each type's name is its type id (selector-safe: no spaces, no commas)" sh -c \
		"for d in $parent/mdev_supported_types/*; do
		     n=\$(cat \$d/name) && [ \"\$n\" = \"\${d##*/}\" ] || exit 1
		     case \$n in *[' ,']*) exit 1 ;; esac
		 done"
	check "the type names orchestrators.rst gives KubeVirt and Nova are simgpu's" \
		orchestrator_names
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
	# The golden streams of earlier releases load (tools/golden/README).
	golden_load "${uuids[0]}"
	# Migration between two instances of one type, then to another type.
	local src dst
	src=$(cat /proc/sys/kernel/random/uuid)
	dst=$(cat /proc/sys/kernel/random/uuid)
	if check "create two more simgpu-256M instances for migration" sh -c \
		"echo $src > $parent/mdev_supported_types/simgpu-256M/create &&
		 echo $dst > $parent/mdev_supported_types/simgpu-256M/create"; then
		SOAK_MIGRATIONS=20 timeout 1500 "$tooldir/simgpu-client" \
			-s "migrate,dirty_precopy,stop_fails,reset_precopy,hostile,$(mig_extra)race,quarantine,fault_sweep" \
			-n simgpu_migration -d "$dst" "$src" >"$out/client-migration.ktap" 2>>"$out/guest.log"
		timeout 300 "$tooldir/simgpu-client" -s incompatible -n simgpu_migration_compat \
			-d "${uuids[0]}" "$src" >"$out/client-migration-compat.ktap" 2>>"$out/guest.log"
		check "trace events of a migration, a refused stream, a quarantine, DMA logging" \
			trace_events "$src" "$dst" "${uuids[0]}"
		check "gpumigctl check-compat: same type compatible, another type refused as the kernel does" \
			compat_check "$src" "$dst" "${uuids[0]}" "type mismatch: source simgpu-256M, destination simgpu-64M"
		check "gpumigctl watch: samples of the metrics, as JSON" watch_check "$src"
		# The benchmarks' own exactness checks; their figures go to the log.
		timeout 300 "$tooldir/simgpu-client" -s bench_dirty -n simgpu_bench "$src" \
			>"$out/client-bench.ktap" 2>>"$out/guest.log"
		# bench_vram's checks on Debian's kernel only (budget: under KASAN
		# its copies are slow, and nothing in it is kernel-specific).
		[ "$mode" = distro ] &&
			BENCH_VRAM_MB=8 timeout 600 "$tooldir/simgpu-client" -s bench_vram \
				-n simgpu_bench_vram -d "$dst" "$src" \
				>"$out/client-bench-vram.ktap" 2>>"$out/guest.log"
		echo 1 > /sys/bus/mdev/devices/$src/remove
		echo 1 > /sys/bus/mdev/devices/$dst/remove
	fi
	if [ ${#uuids[@]} -gt 0 ]; then
		check "QEMU 10 assigns a simgpu with -device vfio-pci,sysfsdev=" \
			qemu_assign "${uuids[0]}"
		check "simgpu and gpumig cannot be unloaded while QEMU holds an instance" \
			unload_refused "/sys/bus/mdev/devices/${uuids[0]}" simgpu gpumig
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
	qemu10_here && check "QEMU end to end: every check passed (qemu/qemu.ktap)" \
		timeout 1800 python3 "$(dirname "$0")/qemu_mig.py" --pingpong "$(pingpongs)" \
		--guest "$tooldir/gpumig-guest.elf" --out "$out/qemu"
	qemu11_lane "QEMU 11.1 end to end on mdevs: every check passed (qemu11/qemu.ktap)" \
		"$out/qemu11" $(reinit_arg)
}

# The client's migration scenarios that run in one VM only (make check's
# budget): on the debug kernel (KASAN, kmemleak) the soak, one batch of 20
# migrations with a kernel in flight (make soak runs 1,000 on mdevs and
# VFs); on Debian's kernel, where they cost a fifth, the 20 round trips
# of pingpong and the VMM killed inside a long resume write.
mig_extra() {
	if [ "$mode" = distro ]; then echo kill_resume,pingpong,; else echo soak,; fi
}

# Whether the QEMU 10.0 end-to-end suites run in this boot: everywhere
# but in the debug VM that has QEMU 11.1's root.  There QEMU 11.1 runs
# them (with REINIT, on the same kernel paths: DMA logging, PRECOPY_INFO,
# P2P), and QEMU 10.0's run in the distro VM; both on the debug kernel
# took about ten minutes, which put a warm make check over its 40.
qemu10_here() {
	[ "$mode" != debug ] || [ ! -s "$out/qemu11-root" ]
}

# QEMU 10 ping-pongs in make check: two on Debian's kernel, four on the
# debug kernel where it runs them (no trixie root; make soak runs fifty).
pingpongs() {
	if [ "$mode" = distro ]; then echo 2; else echo 4; fi
}

# --reinit for qemu_mig.py where the kernel has
# VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2 (7.3's uAPI), else nothing.
reinit_arg() {
	grep -qs VFIO_PRECOPY_INFO_REINIT "$kdir/include/uapi/linux/vfio.h" && echo --reinit
	return 0
}

# overlay_root LOWER MNT [DIR...]: the root filesystem LOWER made writable
# by an overlay on a tmpfs at MNT, with /dev, /proc, /sys, /tmp, the run's
# directories and each DIR bound at their own paths, so a program run in
# it with chroot sees what the harness gives it.  Prints the root (made
# once per boot).
overlay_root() {
	local lower=$1 m=$2 d
	shift 2
	if [ ! -d $m/merged/usr ]; then
		mkdir -p $m && mount -t tmpfs tmpfs $m &&
			mkdir -p $m/upper $m/work $m/merged &&
			mount -t overlay overlay \
				-o "lowerdir=$lower,upperdir=$m/upper,workdir=$m/work" $m/merged ||
			return 1
		for d in /dev /proc /sys /tmp "$out" "$tooldir" "$@"; do
			mkdir -p "$m/merged$d" && mount --rbind "$d" "$m/merged$d" || return 1
		done
	fi
	echo $m/merged
}

# qemu11_root: QEMU 11.1's trixie root (scripts/trixie-root.sh) as an
# overlay_root.  Prints the root; fails without one.
qemu11_root() {
	[ -s "$out/qemu11-root" ] || return 1
	overlay_root "$(cat "$out/qemu11-root")" /run/gpumig-trixie
}

# qemu11_lane NAME OUT [qemu_mig.py args]: the QEMU end-to-end suite again
# with QEMU 11.1 (and its system-wide remaining bytes), three ping-pongs.
qemu11_lane() {
	local name=$1 dir=$2 root
	shift 2
	[ -s "$out/qemu11-root" ] || return 0
	root=$(qemu11_root) || { check "QEMU 11.1's trixie root mounted in the VM" false; return; }
	vram_trace on
	check "$name" timeout 2400 python3 "$(dirname "$0")/qemu_mig.py" \
		--qemu "chroot $root qemu-system-x86_64" --pingpong 2 \
		--guest "$tooldir/gpumig-guest.elf" --out "$dir" "$@"
	vram_trace off "$dir"
}

# vram_trace on | off DIR: the engine's state and VRAM-chunk events
# (gpumig_vram: offset, zero or data, CRC) while a QEMU suite runs, kept in
# DIR/trace.txt when the suite failed: where the destination's guest reads
# other VRAM than the source's had, they say which side changed it.
vram_trace() {
	local t=/sys/kernel/tracing
	[ -d $t/events ] || mount -t tracefs nodev $t 2>/dev/null
	[ -d $t/events/gpumig ] || return 0
	if [ "$1" = on ]; then
		echo 0 > $t/tracing_on
		echo > $t/trace
		echo 32768 > $t/buffer_size_kb
		echo 1 > $t/events/gpumig/gpumig_vram/enable
		echo 1 > $t/events/gpumig/gpumig_state/enable
		echo 1 > $t/tracing_on
		return 0
	fi
	echo 0 > $t/tracing_on
	echo 0 > $t/events/gpumig/enable
	grep -qs '^ *not ok' "$2/qemu.ktap" && cat $t/trace >"$2/trace.txt"
	echo > $t/trace
	echo 1408 > $t/buffer_size_kb
	return 0
}


# simgpu-pci: the PF driver, VF profiles, SR-IOV on and off, the PF's
# services from the kernel (KUnit on an unbound VF), a VF on plain
# vfio-pci, then gpumig-vfio-pci: the client's migration scenarios on VFs,
# QEMU end to end, a PF assigned plainly, gpumigctl, and the PF's driver
# unbound mid-migration.
PFDRV=/sys/bus/pci/drivers/simgpu-pf
GVP=gpumig-vfio-pci

# The simgpu PFs, by address.
pf_addrs() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x1234:0x5350 ] && basename "$d"
	done
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

mig_status() {
	cat "/sys/bus/pci/devices/$1/migration/status"
}

# A VF on gpumig-vfio-pci says it migrates and describes its profile.
gvp_bind() {
	vf_bind "$1" "$GVP" &&
		mig_status "$1" | grep -q "^migratable state=2 dirty_tracking=$3 " &&
		grep -q "backend=2 type=simgpu-vf-$2 " "/sys/bus/pci/devices/$1/migration/compat" &&
		[ "$(cat "/sys/bus/pci/devices/$1/simgpu/profile")" = "$2" ]
}

# geometry_vf SRC DST GEOMETRY WHAT: with simgpu-pf's test_geometry, the
# two VFs migrate as a device of another shape would: the descriptor says
# WHAT (the stream version, the block), a kernel in flight finishes on DST
# with the right results, and with "vendor" the PF's scheduling settings of
# SRC (a vendor section) are DST's after.  Both VFs get their own geometry
# back after.
geometry_vf() {
	local src=$1 dst=$2 geo=$3 what=$4 p=/sys/module/simgpu_pf/parameters/test_geometry
	local ds=/sys/kernel/debug/simgpu-pf/$1 dd=/sys/kernel/debug/simgpu-pf/$2 rc=0 v

	echo "$geo" >"$p" || return 1
	for v in "$src" "$dst"; do
		vf_unbind "$v" && vf_bind "$v" "$GVP" || rc=1
	done
	for v in "$src" "$dst"; do
		grep -q "$what" "/sys/bus/pci/devices/$v/migration/compat" || rc=1
	done
	# The source preempts (a kernel stays in flight at the stop), DST not.
	echo 37 >"$ds/kernel_step_us" && echo 0 >"$dd/preempt" || rc=1
	[ $rc = 0 ] && timeout 600 "$tooldir/simgpu-client" -s migrate -n "geometry_${geo//[=,]/_}" \
		-d "$dst" "$src" >"$out/client-geometry-${geo//[=,]/_}.ktap" || rc=1
	if [ $rc = 0 ] && [[ $geo == *vendor* ]]; then
		[ "$(cat "$dd/preempt") $(cat "$dd/kernel_step_us")" = "1 37" ] || rc=1
	fi
	echo >"$p"
	for v in "$src" "$dst"; do
		echo 1 >"/sys/kernel/debug/simgpu-pf/$v/preempt"
		echo 0 >"/sys/kernel/debug/simgpu-pf/$v/kernel_step_us"
		vf_unbind "$v" && vf_bind "$v" "$GVP" || rc=1
		grep -q "^stream=1.1 " "/sys/bus/pci/devices/$v/migration/compat" || rc=1
	done
	return $rc
}

# A function whose reset methods are all disabled is not reset at release:
# the VF is quarantined, says so, refuses a tenant, and is usable again
# once its reset works and an operator lifted the quarantine.
flr_quarantine() {
	local vf=$1 rm=/sys/bus/pci/devices/$1/reset_method

	echo "" >"$rm" || return 1
	"$tooldir/simgpu-client" -s info -n flr_off "$vf" >/dev/null 2>&1
	mig_status "$vf" | grep -q "^quarantined: the function was not reset" || return 1
	! "$tooldir/simgpu-client" -s info -n flr_refused "$vf" >/dev/null 2>&1 || return 1
	echo default >"$rm" &&
		"$tooldir/gpumigctl" unquarantine "$vf" &&
		mig_status "$vf" | grep -q "^migratable" &&
		"$tooldir/simgpu-client" -s info -n flr_back "$vf" >/dev/null 2>&1
}

# A quarantine outlives an unbind and a bind of gpumig-vfio-pci (what
# libvirt's managed hostdev does at every domain stop and start): the VF
# comes back quarantined with its reason, refuses a tenant, and only the
# operator releases it.  A reset of its PF meanwhile loses the VRAM kept
# for inspection, and the quarantine says so.
quarantine_rebind() {
	local vf=$1 pf=$2 rm=/sys/bus/pci/devices/$1/reset_method

	echo "" >"$rm" || return 1
	"$tooldir/simgpu-client" -s info -n q_rebind_flr_off "$vf" >/dev/null 2>&1
	mig_status "$vf" | grep -q "^quarantined: the function was not reset" || return 1
	vf_unbind "$vf" && vf_bind "$vf" "$GVP" || return 1
	if ! mig_status "$vf" | grep -q "^quarantined: the function was not reset"; then
		echo "rebound, the VF says: $(mig_status "$vf")"
		return 1
	fi
	! "$tooldir/simgpu-client" -s info -n q_rebind_refused "$vf" >/dev/null 2>&1 || return 1
	echo 1 >"/sys/bus/pci/devices/$pf/reset" || return 1
	if ! mig_status "$vf" | grep -q "^quarantined: the function was not reset.*; then its PF was reset: the VF.s state and VRAM were lost"; then
		echo "after the PF's reset, the VF says: $(mig_status "$vf")"
		return 1
	fi
	echo default >"$rm" &&
		"$tooldir/gpumigctl" unquarantine "$vf" &&
		mig_status "$vf" | grep -q "^migratable" &&
		"$tooldir/simgpu-client" -s info -n q_rebind_back "$vf" >/dev/null 2>&1
}

# migration/ files are readable by everyone (monitoring agents do not run
# as root), and a reader in a loop cannot make the device work once per
# read: what a read shows is cached, refreshed at most once a period (and
# when the migration itself moves).  An unprivileged reader takes 3,000
# reads of the files that cost a PF command each; the VF's mailbox may
# have seen one refresh per 20 ms of it, and a little more.
metrics_cached() {
	local vf=$1 dir=/sys/bus/pci/devices/$1/migration st=/sys/kernel/debug/simgpu-pf/$1/stats
	local c0 c1 ms

	c0=$(awk '$1 == "mailbox_commands" { print $2 }' "$st")
	[ -n "$c0" ] || { echo "no mailbox_commands in $st"; return 1; }
	ms=$(setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c "
import time
t = time.monotonic()
for i in range(1000):
    for f in ('stopcopy_estimate_bytes', 'remaining_bytes', 'state'):
        with open('$dir/' + f) as h:
            h.read()
print(int((time.monotonic() - t) * 1000))") || { echo "an unprivileged reader cannot read $dir"; return 1; }
	c1=$(awk '$1 == "mailbox_commands" { print $2 }' "$st")
	echo "3000 reads in $ms ms: $((c1 - c0)) PF commands"
	[ $((c1 - c0)) -le $((ms / 20 + 5)) ]
}

pf_rebind() {
	echo "$1" >"/sys/bus/pci/devices/$1/driver/unbind" && vf_bind "$1" "$2"
}

# A PF bound to gpumig-vfio-pci: assignable (QEMU's guest sees it), no
# migration (QEMU refuses enable-migration=on, gpumigctl's probe finds
# none), says so, and inert (bus mastering off, not quarantined) after
# each tenant left.
pf_plain() {
	local pf=$1 cmd log=$out/qemu-assign-pf.txt

	mig_status "$pf" | grep -qx "not migratable: physical function" &&
		[ ! -e "/sys/bus/pci/devices/$pf/migration/compat" ] || return 1
	printf 'info pci\nquit\n' | timeout 180 qemu-system-x86_64 -machine q35 -accel tcg \
		-m 128 -S -nodefaults -display none -monitor stdio \
		-device vfio-pci,host="$pf" >"$log" 2>&1 &&
		grep -q "PCI device 1234:5350" "$log" || return 1
	printf 'quit\n' | timeout 180 qemu-system-x86_64 -machine q35 -accel tcg \
		-m 128 -S -nodefaults -display none -monitor stdio \
		-device vfio-pci,host="$pf",enable-migration=on >>"$log" 2>&1
	[ $? -eq 1 ] && grep -q "VFIO migration is not supported in kernel" "$log" || return 1
	"$tooldir/gpumigctl" probe "$pf"
	[ $? -eq 1 ] || return 1
	cmd=$(od -An -tx2 -j4 -N2 "/sys/bus/pci/devices/$pf/config" | tr -d ' ')
	[ $((0x$cmd & 4)) -eq 0 ] &&
		mig_status "$pf" | grep -qx "not migratable: physical function"
}

# SR-IOV disabled while a VF is being bound to gpumig-vfio-pci: the PF's
# driver finds nothing bound and, with sriov_delay_ms holding that window
# open, the bind starts and asks the PF for the VF's services.  Both must
# end (the VF goes with SR-IOV), neither may hang.
sriov_bind_race() {
	local pf=$1 vf dbg=/sys/kernel/debug/simgpu-pf/$1 d b t
	echo 1 >"/sys/bus/pci/devices/$pf/sriov_numvfs" || return 1
	vf=$(vf_addr "$pf" 0)
	echo "$GVP" >"/sys/bus/pci/devices/$vf/driver_override" || return 1
	echo 3000 >"$dbg/sriov_delay_ms" || return 1
	echo 0 >"/sys/bus/pci/devices/$pf/sriov_numvfs" &
	d=$!
	sleep 1
	echo "$vf" >/sys/bus/pci/drivers_probe &
	b=$!
	for t in $(seq 60); do
		if ! kill -0 $d 2>/dev/null && ! kill -0 $b 2>/dev/null; then
			break
		fi
		sleep 1
	done
	echo 0 >"$dbg/sriov_delay_ms"
	if kill -0 $d 2>/dev/null || kill -0 $b 2>/dev/null; then
		echo "SR-IOV disable or the VF's bind still blocked after 60 s"
		return 1
	fi
	wait $d || { echo "SR-IOV disable failed"; return 1; }
	[ ! -e "/sys/bus/pci/devices/$vf" ] && [ "$(cat "/sys/bus/pci/devices/$pf/sriov_numvfs")" = 0 ]
}

# The Nova entries for a host with VFs and a PF bound.
nova_check() {
	local out=$1 vf
	shift
	"$tooldir/gpumigctl" nova-config >"$out" || return 1
	for vf in "$@"; do
		grep -q "device_spec = {\"address\": \"$vf\", .*\"resource_class\": \"CUSTOM_SIMGPU_VF_[0-9]*M\", \"live_migratable\": \"yes\"}" "$out" ||
			return 1
	done
	grep -q "device_spec = {\"address\": \"$pf2\", \"vendor_id\": \"1234\", \"product_id\": \"5350\", \"live_migratable\": \"no\"}" "$out" &&
		grep -q '"device_type": "type-PF", "live_migratable": "no"}' "$out" &&
		grep -q '"name": "simgpu-vf-256M", .*"device_type": "type-VF", .*"live_migratable": "yes"}' "$out" &&
		! grep '"type-PF"' "$out" | grep -q '"yes"'
}

pci_suite() {
	local pf pf2 sys vf0 vf1 vf2 vf3 tracking=device

	check "VFIO type1 and vfio-pci available" vfio_stack
	check "load gpumig, simgpu-pf (its provider registers) and gpumig-vfio-pci" \
		sh -c "$loadmod $moddir_gpumig && $loadmod $moddir_pf && $loadmod $moddir_gvp &&
		       dmesg | grep -q 'gpumig: simgpu-pf serves VFs'"
	set -- $(pf_addrs)
	pf=${1:-} pf2=${2:-}
	check "two simgpu PFs probed ($pf, $pf2)" sh -c "[ -e $PFDRV/$pf ] && [ -e $PFDRV/$pf2 ]"
	check "a PF whose device offers fewer VFs than its capability: sriov_totalvfs says so, more refused" \
		sh -c "[ \$(cat /sys/bus/pci/devices/$pf2/sriov_totalvfs) = 0 ] &&
		       ! echo 1 > /sys/bus/pci/devices/$pf2/sriov_numvfs 2>/dev/null &&
		       [ \$(cat /sys/bus/pci/devices/$pf2/sriov_numvfs) = 0 ]"
	sys=/sys/bus/pci/devices/$pf/simgpu
	check "the PF offers the profiles its aperture holds" \
		sh -c "[ \"\$(cat $sys/profiles)\" = '64M 256M' ]"
	check "a profile the PF does not offer is refused" \
		sh -c "! echo 1G > $sys/vf1_profile && [ \$(cat $sys/vf1_profile) = 64M ]"
	check "choose VF profiles before SR-IOV: 64M, 256M, 64M, 256M" \
		sh -c "echo 256M > $sys/vf1_profile && echo 256M > $sys/vf3_profile &&
		       [ \$(cat $sys/vf1_profile) = 256M ]"
	check "enable 4 VFs" sh -c "echo 4 > /sys/bus/pci/devices/$pf/sriov_numvfs"
	check "4 simgpu VFs, each in its own IOMMU group, with knobs" vfs_check "$pf" 4
	check "profiles are fixed while VFs are enabled" \
		sh -c "! echo 64M > $sys/vf1_profile 2>/dev/null"
	vf0=$(vf_addr "$pf" 0)
	vf1=$(vf_addr "$pf" 1)
	vf2=$(vf_addr "$pf" 2)
	vf3=$(vf_addr "$pf" 3)
	# The PF's services, from the kernel, on the first unbound VF, and
	# gpumig-vfio-pci's glue over a fake provider (KUnit: the debug
	# kernel only).
	[ -n "$kdir" ] && KUNIT_MODULES="simgpu_pf_kunit gpumig_vfio_pci_kunit" kunit_suites
	check "nothing binds gpumig-vfio-pci by itself (driver_override only)" \
		sh -c "[ ! -e /sys/bus/pci/devices/$vf0/driver ]"

	# Plain vfio-pci: the device scenarios; migration is refused.
	check "bind VF 0 (64M) to vfio-pci" vf_bind "$vf0" vfio-pci
	timeout 900 "$tooldir/simgpu-client" -n simgpu_vf_vfio_pci "$vf0" \
		>"$out/client-vf-vfio-pci.ktap" 2>>"$out/guest.log"
	echo "vm: client on VF 0 (vfio-pci) exited $?"
	check "SR-IOV cannot be disabled while a VF is bound" \
		sh -c "! echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs 2>/dev/null && [ -e /sys/bus/pci/devices/$vf0 ]"
	vf_unbind "$vf0"

	# gpumig-vfio-pci on every VF.
	grep -q "CONFIG_IOMMUFD_DRIVER=y" "${kdir:-/nonexistent}/.config" 2>/dev/null || tracking=none
	for v in "$vf0:64M" "$vf1:256M" "$vf2:64M" "$vf3:256M"; do
		check "bind ${v%:*} to $GVP: migratable, simgpu-vf-${v##*:}, dirty tracking $tracking" \
			gvp_bind "${v%:*}" "${v##*:}" "$tracking"
	done
	check "SR-IOV cannot be disabled while VFs are claimed" \
		sh -c "! echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs 2>/dev/null"
	# The golden streams of earlier releases load into a VF of their type
	# (tools/golden/README); with OUT/golden-save, first write one.
	if [ -s "$out/golden-save" ]; then
		GOLDEN_STREAM=$(cat "$out/golden-save") "$tooldir/simgpu-client" -s golden_save \
			-n golden_save_vf "$vf0" >"$out/client-golden-save-vf.ktap" 2>>"$out/guest.log"
	fi
	golden_load "$vf0"
	timeout 900 "$tooldir/simgpu-client" -n gvp_vf_256M "$vf1" \
		>"$out/client-gvp-256M.ktap" 2>>"$out/guest.log"
	echo "vm: client on VF 1 ($GVP) exited $?"
	SOAK_MIGRATIONS=20 timeout 1800 "$tooldir/simgpu-client" \
		-s "migrate,dirty_precopy,aperture,stop_fails,reset_precopy,close_mid_migration,hostile,$(mig_extra)race,quarantine,fault_sweep" \
		-n gvp_migration -d "$vf3" "$vf1" >"$out/client-gvp-migration.ktap" 2>>"$out/guest.log"
	echo "vm: client migration scenarios on VFs exited $?"
	timeout 300 "$tooldir/simgpu-client" -s incompatible -n gvp_migration_compat \
		-d "$vf0" "$vf1" >"$out/client-gvp-compat.ktap" 2>>"$out/guest.log"
	# Other geometries on real VFs (simgpu-pf's test_geometry), 64M each.
	check "geometry: the state in 3 parts and a vendor section (stream 1.2): migrates, settings follow" \
		geometry_vf "$vf0" "$vf2" "parts=3,vendor" "^stream=1.2 .*state_version=1\$"
	check "geometry: 256 KiB blocks, no VRAM dirty tracking (stream 1.2): migrates" \
		geometry_vf "$vf2" "$vf0" "block=256,untracked" " block_size=262144\$"
	check "migration/ files: readable by all, a reader in a loop costs the device one refresh a period" \
		metrics_cached "$vf1"
	check "a VF that was not reset at release is quarantined, then lifted" flr_quarantine "$vf2"
	check "a quarantine outlives a rebind of $GVP and says when a PF reset lost its VRAM" \
		quarantine_rebind "$vf2" "$pf"
	# One ping-pong on VFs (two on mdevs): each VF migration under nested
	# emulation takes about ten times an mdev's (make check's budget).
	if qemu10_here; then
		vram_trace on
		check "QEMU end to end on VFs: every check passed (qemu-pci/qemu.ktap)" \
			timeout 2400 python3 "$(dirname "$0")/qemu_mig.py" --pingpong 1 \
			--guest "$tooldir/gpumig-guest.elf" --out "$out/qemu-pci" \
			--pci "256M=$vf1,$vf3" "64M=$vf0"
		vram_trace off "$out/qemu-pci"
	fi
	qemu11_lane "QEMU 11.1 end to end on VFs: every check passed (qemu11-pci/qemu.ktap)" \
		"$out/qemu11-pci" $(reinit_arg) --pingpong 1 --pci "256M=$vf1,$vf3" "64M=$vf0"

	check "$GVP, simgpu-pf and gpumig cannot be unloaded while QEMU holds a VF" \
		unload_refused "/sys/bus/pci/devices/$vf0" gpumig_vfio_pci simgpu_pf gpumig

	# A PF assigned plainly.
	check "bind the second PF ($pf2) to $GVP" pf_rebind "$pf2" "$GVP"
	check "the PF: assignable, no migration, says so, inert after release" pf_plain "$pf2"
	check "gpumigctl lists the VFs and the PF" sh -c \
		"[ \$('$tooldir/gpumigctl' list | grep -c '^0000:.*$GVP') -eq 5 ]"
	check "gpumigctl check-compat on VFs: same profile compatible, 64M refused for a 256M source" \
		compat_check "$vf1" "$vf3" "$vf0" "type mismatch: source simgpu-vf-256M, destination simgpu-vf-64M"
	check "gpumigctl watch on a VF" watch_check "$vf1"
	check "gpumigctl nova-config: live_migratable for VFs only, never the PF" \
		nova_check "$out/nova.conf" "$vf0" "$vf1" "$vf2" "$vf3"

	# The PF is reset while VF 1 pre-copies: loud, and the VF works after.
	timeout 300 "$tooldir/simgpu-client" -s pf_reset -n gvp_pf_reset "$vf1" \
		>"$out/client-gvp-pf-reset.ktap" 2>>"$out/guest.log"
	echo "vm: client pf_reset on VF 1 exited $?"

	# The PF's driver goes away while VF 1 migrates.
	timeout 300 "$tooldir/simgpu-client" -s pf_gone -n gvp_pf_gone "$vf1" \
		>"$out/client-gvp-pf-gone.ktap" 2>>"$out/guest.log"
	check "every VF went with its PF's driver" sh -c "[ ! -e /sys/bus/pci/devices/$vf0 ] &&
		[ ! -e /sys/bus/pci/devices/$vf3 ]"
	check "the VF said its migration was aborted because the PF's driver went" sh -c \
		"dmesg | grep -q '$GVP $vf1: the PF.s driver was removed: the migration in flight was aborted'"
	check "the PF binds to simgpu-pf again and enables VFs" sh -c \
		"echo $pf > $PFDRV/bind && echo 2 > /sys/bus/pci/devices/$pf/sriov_numvfs &&
		 echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs"
	check "SR-IOV disabled while a VF binds to $GVP: both end, nothing hangs" \
		sriov_bind_race "$pf"
	check "the second PF back to simgpu-pf" sh -c \
		"echo > /sys/bus/pci/devices/$pf2/driver_override && echo $pf2 > /sys/bus/pci/drivers/$GVP/unbind &&
		 echo $pf2 > $PFDRV/bind"
	check "unload gpumig-vfio-pci, simgpu-pf, gpumig" rmmod gpumig_vfio_pci simgpu_pf gpumig
}

# ---- releases: this one and each older one, one module set at a time ----
#
# OUT/releases names the older releases' modules built for this kernel,
# "VERSION MODDIR" a line (scripts/release.sh).  Two module sets cannot
# share a kernel (same names, same symbols, the same mdev parent), so each
# step loads one set, uses it and unloads it: this release writes a
# stream (the golden stream's pattern, tools/golden/README), the older one
# restores it and writes its own, and this one restores that; on an mdev
# and on a VF.  With OUT/golden-dir, the older release's streams are kept
# there as its golden streams.

# rel_load SET DIR: "ours" (the DKMS build, or MODDIR's) or "old" (DIR's).
rel_load() {
	local m
	for m in gpumig_vfio_pci simgpu_pf simgpu gpumig; do
		! grep -q "^$m " /proc/modules || rmmod $m || return 1
	done
	vfio_stack || return 1
	if [ "$1" = old ]; then
		insmod "$2/gpumig.ko" && insmod "$2/simgpu.ko" && insmod "$2/simgpu-pf.ko" &&
			insmod "$2/gpumig-vfio-pci.ko"
	elif [ -n "$kdir" ]; then
		insmod "$moddir/gpumig.ko" && insmod "$moddir/simgpu.ko" &&
			insmod "$moddir/simgpu-pf.ko" && insmod "$moddir/gpumig-vfio-pci.ko"
	else
		modprobe -a gpumig simgpu simgpu_pf gpumig_vfio_pci
	fi
}

rel_unload() {
	rmmod gpumig_vfio_pci simgpu_pf simgpu gpumig
}

# rel_mdev SET DIR SCENARIO FILE NAME: SCENARIO (golden_save or
# golden_restore, GOLDEN_STREAM=FILE) on a fresh simgpu-64M under SET.
rel_mdev() {
	local u rc
	rel_load "$1" "$2" || return 1
	u=$(cat /proc/sys/kernel/random/uuid)
	echo "$u" >/sys/class/mdev_bus/simgpu/mdev_supported_types/simgpu-64M/create || return 1
	GOLDEN_STREAM=$4 timeout 300 "$tooldir/simgpu-client" -s "$3" -n "$5" "$u" \
		>"$out/client-$5.ktap" 2>>"$out/guest.log"
	rc=$?
	echo 1 >"/sys/bus/mdev/devices/$u/remove"
	rel_unload && return $rc
}

# rel_vf SET DIR SCENARIO FILE NAME [GEOMETRY]: the same on VF 0 (64M) of
# the first PF, on gpumig-vfio-pci under SET (with simgpu-pf's
# test_geometry GEOMETRY).
rel_vf() {
	local pf vf rc
	rel_load "$1" "$2" || return 1
	[ -z "${6:-}" ] || echo "$6" >/sys/module/simgpu_pf/parameters/test_geometry || return 1
	pf=$(pf_addrs | sed -n 1p)
	[ -n "$pf" ] && echo 64M >"/sys/bus/pci/devices/$pf/simgpu/vf0_profile" &&
		echo 1 >"/sys/bus/pci/devices/$pf/sriov_numvfs" || return 1
	vf=$(vf_addr "$pf" 0)
	if vf_bind "$vf" "$GVP"; then
		GOLDEN_STREAM=$4 timeout 300 "$tooldir/simgpu-client" -s "$3" -n "$5" "$vf" \
			>"$out/client-$5.ktap" 2>>"$out/guest.log"
		rc=$?
		vf_unbind "$vf"
	else
		rc=1
	fi
	echo 0 >"/sys/bus/pci/devices/$pf/sriov_numvfs"
	rel_unload && return $rc
}

releases_suite() {
	local ver dir cur kind gd
	cur=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$(dirname "$0")/../../dkms.conf")
	if [ ! -s "$out/releases" ]; then
		check "releases: the older releases' modules were built for $(uname -r)" false
		return
	fi
	gd=$(cat "$out/golden-dir" 2>/dev/null)
	while read -r ver dir; do
		for kind in mdev vf; do
			[ "$kind" = vf ] && [ -z "$(pf_addrs)" ] && continue
			local new=$out/rel-$cur-$kind.bin old=$out/rel-$ver-$kind.bin
			check "releases: $cur writes a stream ($kind)" \
				rel_$kind ours "" golden_save "$new" "rel_${cur//./_}_save_$kind" &&
				check "releases: $ver restores $cur's stream ($kind)" \
					rel_$kind old "$dir" golden_restore "$new" \
					"rel_${ver//./_}_restores_${cur//./_}_$kind"
			check "releases: $ver writes a stream ($kind)" \
				rel_$kind old "$dir" golden_save "$old" "rel_${ver//./_}_save_$kind" &&
				check "releases: $cur restores $ver's stream ($kind)" \
					rel_$kind ours "" golden_restore "$old" \
					"rel_${cur//./_}_restores_${ver//./_}_$kind"
			# A geometry only stream 1.2 carries: the older release
			# refuses it at its header (1.2 names the VRAM block in
			# what was reserved), before the source would stop.
			if [ "$kind" = vf ]; then
				local geo=$out/rel-$cur-geo.bin
				check "releases: $cur writes a stream 1.2 (state in parts, a vendor section)" \
					rel_vf ours "" golden_save "$geo" "rel_${cur//./_}_save_geo" "parts=3,vendor" &&
					GOLDEN_WHY="header has unknown flags or reserved bits set" check \
						"releases: $ver refuses it at the header: reserved bits set" \
						rel_vf old "$dir" golden_refused "$geo" \
						"rel_${ver//./_}_refuses_${cur//./_}_geo"
				rm -f "$geo"
			fi
			if [ -n "$gd" ] && [ -s "$old" ]; then
				local t=simgpu-64M
				[ "$kind" = vf ] && t=simgpu-vf-64M
				gzip -9n <"$old" >"$gd/gpumig-$ver-$t.stream.gz"
			fi
			rm -f "$new" "$old"
		done
	done <"$out/releases"
}

# The modules of the PCI suite: built ones by path, or the DKMS install.
loadmod=insmod
moddir_pf=$moddir/simgpu-pf.ko
moddir_gpumig=$moddir/gpumig.ko
moddir_gvp=$moddir/gpumig-vfio-pci.ko
[ -n "$kdir" ] || {
	loadmod="modprobe"
	moddir_pf=simgpu_pf moddir_gpumig=gpumig moddir_gvp=gpumig_vfio_pci
}

# The VM runs on the project's QEMU with simgpu-pci: the PCI suite too, in
# the same boot.
# package_suite: the gpumig-dkms package (scripts/deb.sh) on a Debian
# host (scripts/bookworm-root.sh: Debian's kernel image and headers, DKMS,
# udev, mdevctl), the way an operator meets it: apt installed it (DKMS
# built the modules for this kernel; natively on the host, in the root
# this VM gets as a disk, scripts/pkg-root.sh), mdevctl defines two
# auto-start instances, the boot-time steps run (systemd-modules-load,
# then udevd's coldplug; and again with udevd already running), the
# instances come back and migrate, gpumig-bugreport describes them, and
# removal in the documented order leaves nothing behind.  The root is an
# overlay on tmpfs; the VM's own udevd is stopped first (the host root's
# rules are not the package's), so this runs last.
PKG=/run/gpumig-pkg
pkg_root() {
	local lower m=$PKG d dev
	lower=$(cat "$out/pkg-root")
	mkdir -p $m && mount -t tmpfs tmpfs $m || return 1
	# The same root on a read-only disk, where the VM has it: page-cached,
	# unlike the 9p root (bookworm-root.sh), and with the package
	# installed (pkg-root.sh).
	dev=$(findfs LABEL=gpumig-host 2>/dev/null)
	if [ -n "$dev" ]; then
		mkdir -p $m/disk && mount -o ro,noload "$dev" $m/disk && lower=$m/disk || return 1
		echo "package root: $dev" >>"$out/guest.log"
	fi
	mkdir -p $m/upper $m/work $m/merged &&
		mount -t overlay overlay \
			-o "lowerdir=$lower,upperdir=$m/upper,workdir=$m/work" $m/merged || return 1
	mount -t tmpfs tmpfs $m/merged/run && mount -t tmpfs tmpfs $m/merged/tmp || return 1
	for d in /dev /proc /sys "$out" "$tooldir" "$(dirname "$(cat "$out/pkg-deb")")"; do
		mkdir -p "$m/merged$d" && mount --rbind "$d" "$m/merged$d" || return 1
	done
}
# systemd's tools (udevadm) ignore requests in a chroot unless told not to.
in_root() { chroot $PKG/merged env SYSTEMD_IGNORE_CHROOT=1 "$@"; }

# The root the host installed the package into natively with apt
# (scripts/pkg-root.sh: under emulation DKMS's build took ten minutes)
# comes with it; a plain root gets it here, the same way.
pkg_installed() {
	local k t0
	k=$(uname -r) t0=$(date +%s)
	if in_root dpkg-query -W -f='${Status}' gpumig-dkms 2>/dev/null | grep -qx "install ok installed"; then
		echo "package: installed with apt natively before boot (pkg-install-native.log)" \
			>"$out/pkg-install.log"
	else
		DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q \
			"$(cat "$out/pkg-deb")" >"$out/pkg-install.log" 2>&1 ||
			{ cat "$out/pkg-install.log"; return 1; }
		echo "package: apt install took $(($(date +%s) - t0)) s" | tee -a "$out/pkg-install.log"
	fi
	in_root dkms status gpumig | tee -a "$out/pkg-install.log" | grep -q "gpumig/.*, $k, .*: installed" &&
		for m in gpumig simgpu simgpu-pf gpumig-vfio-pci; do
			in_root modinfo -k "$k" -n $m | grep -q "^/lib/modules/$k/updates/dkms/$m.ko" || return 1
		done &&
		in_root dpkg -L gpumig-dkms >"$out/pkg-files.txt"
}

# pkg_boot ORDER: the boot-time steps.  "coldplug": modules-load.d first,
# then udevd starts and replays the devices (systemd's order at boot);
# "hotplug": udevd running when simgpu loads.  Then both auto-start
# instances exist.
pkg_boot() {
	local u
	if [ "$1" = coldplug ]; then
		in_root /lib/systemd/systemd-modules-load || return 1
		in_root /lib/systemd/systemd-udevd --daemon || return 1
		in_root udevadm trigger --type=subsystems --action=add &&
			in_root udevadm trigger --type=devices --action=add || return 1
	else
		in_root udevadm control --ping || return 1
		in_root /lib/systemd/systemd-modules-load || return 1
	fi
	in_root udevadm settle --timeout=120
	for u in "$PKG_SRC" "$PKG_DST"; do
		[ "$(basename "$(readlink /sys/bus/mdev/devices/$u/mdev_type)")" = simgpu-256M ] ||
			{ echo "instance $u not started"; return 1; }
	done
}

# pkg_down: what a reboot does to the running state (the instances and the
# modules go; mdevctl's definitions stay).
pkg_down() {
	echo 1 > /sys/bus/mdev/devices/$PKG_SRC/remove &&
		echo 1 > /sys/bus/mdev/devices/$PKG_DST/remove &&
		pkg_unload
}

# Unload what is loaded of the four, in operating.rst's order (udev's
# coldplug loads simgpu-pf by itself where simgpu-pci hardware is present).
pkg_unload() {
	local m
	for m in gpumig_vfio_pci simgpu simgpu_pf gpumig; do
		grep -q "^$m " /proc/modules || continue
		in_root modprobe -r "$m" || return 1
	done
}

pkg_reboot() { pkg_down && pkg_boot hotplug; }

pkg_bugreport() {
	local f=$out/pkg-bugreport.txt v
	v=$(in_root dpkg-query -W -f='${Version}' gpumig-dkms) &&
		in_root gpumig-bugreport -o /tmp/report.txt >/dev/null &&
		cp $PKG/merged/tmp/report.txt "$f" || return 1
	grep -q "gpumig/$v, $(uname -r), .*: installed" "$f" &&
		grep -qx "/sys/module/simgpu/version: $v" "$f" &&
		grep -qx "/sys/module/gpumig/version: $v" "$f" &&
		grep -q "^-- $PKG_SRC " "$f" && grep -q "^-- $PKG_DST " "$f" &&
		[ "$(grep -c '/migration/state: RUNNING$' "$f")" -eq 2 ] &&
		[ "$(grep -c '/migration/precopy_bytes: [0-9]' "$f")" -eq 2 ] &&
		grep -qx "/sys/module/simgpu/parameters/vram_budget_mb: 2048" "$f" &&
		grep -q "simgpu: 4 types" "$f" &&
		grep -q "\"$PKG_SRC\"" "$f"
}

# Removal in the order operating.rst gives: stop the instances (and
# undefine them: they are the operator's, not the package's), unload,
# purge; then nothing of the package is left on the root.
pkg_removed() {
	local left t0
	in_root mdevctl stop --uuid "$PKG_SRC" && in_root mdevctl stop --uuid "$PKG_DST" &&
		in_root mdevctl undefine --uuid "$PKG_SRC" && in_root mdevctl undefine --uuid "$PKG_DST" &&
		pkg_unload || return 1
	t0=$(date +%s)
	DEBIAN_FRONTEND=noninteractive in_root apt-get purge -y -q gpumig-dkms \
		>"$out/pkg-purge.log" 2>&1 || { cat "$out/pkg-purge.log"; return 1; }
	echo "package: apt purge took $(($(date +%s) - t0)) s" | tee -a "$out/pkg-purge.log"
	! grep -q 'still loaded' "$out/pkg-purge.log" || return 1
	left=$(cd $PKG/merged && find . -xdev \( -iname '*gpumig*' -o -iname '*simgpu*' \) \
		-not -path './var/lib/dpkg/*' -not -path './var/log/*' -not -path './var/cache/*' \
		-not -path './etc/mdevctl.d/*' -print)
	[ -z "$left" ] || { echo "left behind: $left"; return 1; }
	while read -r f; do
		[ -d "$PKG/merged$f" ] || [ ! -e "$PKG/merged$f" ] || { echo "left behind: $f"; return 1; }
	done <"$out/pkg-files.txt"
	! in_root dpkg -s gpumig-dkms >/dev/null 2>&1 &&
		! grep -qE '^(gpumig|simgpu) ' /proc/modules
}

package_suite() {
	[ -s "$out/pkg-root" ] && [ -s "$out/pkg-deb" ] || return 0
	PKG_SRC=6b8d3e0a-3f4b-4c4e-9a53-5a0b3c5d0011 PKG_DST=6b8d3e0a-3f4b-4c4e-9a53-5a0b3c5d0012
	modprobe -r gpumig_vfio_pci simgpu_pf simgpu gpumig 2>/dev/null
	udevadm control --exit 2>/dev/null
	check "package: a writable Debian root with $(uname -r)'s image and headers" pkg_root ||
		return
	check "package: gpumig-dkms installed with apt; DKMS's 4 modules for $(uname -r) in place" \
		pkg_installed || return
	check "package: modules-load.d loads simgpu, modprobe.d's options are all commented" sh -c \
		"grep -qx simgpu $PKG/merged/usr/lib/modules-load.d/gpumig.conf &&
		 ! grep -v '^#' $PKG/merged/etc/modprobe.d/gpumig.conf | grep -q .  &&
		 grep -q '^#options simgpu vram_budget_mb=' $PKG/merged/etc/modprobe.d/gpumig.conf"
	check "package: mdevctl defines two auto-start simgpu-256M instances" sh -c \
		"chroot $PKG/merged mdevctl define --uuid $PKG_SRC --parent simgpu --type simgpu-256M --auto &&
		 chroot $PKG/merged mdevctl define --uuid $PKG_DST --parent simgpu --type simgpu-256M --auto"
	check "package: boot (modules-load.d, then udev coldplug): both instances started" \
		pkg_boot coldplug
	timeout 300 "$tooldir/simgpu-client" -s migrate,dirty_precopy -n package_migration \
		-d "$PKG_DST" "$PKG_SRC" >"$out/client-package.ktap" 2>>"$out/guest.log"
	check "package: gpumig-bugreport lists versions, DKMS, both instances' metrics, the log" \
		pkg_bugreport
	check "package: reboot with udevd running (MDEV_STATE=registered): both instances started" \
		pkg_reboot
	check "package: removal in the documented order; apt purge leaves no module, no file" \
		pkg_removed
}

pci_if_present() {
	if [ -n "$(pf_addrs)" ]; then
		pci_suite
	else
		check "simgpu-pci hardware present (the VM runs on the project's QEMU)" false
	fi
}

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
bench-vram)
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	# Two instances of every type, simgpu-16G's included: its budget.
	check "load simgpu.ko" insmod "$moddir/simgpu.ko" vram_budget_mb=40960
	# A first pair, not reported: the first migration of a boot pays for
	# page faults and caches that every later one finds warm.  Each type
	# runs BENCH_REPS times, 7 by default (bench-vram.awk prints medians):
	# single runs under TCG moved a ratio by up to 2x, the same run on
	# this machine taking one time or about twice it, at random.  The runs
	# are interleaved, every type once per round: three runs of a type
	# back to back once shared one slow or fast spell, and a row's median
	# then differed from the next row's by up to 1.7x for the same work.
	reps=$(cat "$out/bench-reps" 2>/dev/null || echo 7)
	types=/sys/class/mdev_bus/simgpu/mdev_supported_types
	a=$(cat /proc/sys/kernel/random/uuid) b=$(cat /proc/sys/kernel/random/uuid)
	if check "create two simgpu-64M instances for the warm-up" sh -c \
		"echo $a > $types/simgpu-64M/create && echo $b > $types/simgpu-64M/create"; then
		timeout 1200 "$tooldir/simgpu-client" -s bench_vram -n simgpu_bench_vram_warm_up \
			-d "$b" "$a" >>"$out/warm-up.txt" 2>>"$out/guest.log"
		echo 1 > /sys/bus/mdev/devices/$a/remove
		echo 1 > /sys/bus/mdev/devices/$b/remove
	fi
	# "TYPE SRC DST" per pair: two instances of every type, then pairs of
	# VFs of each profile the PF offers, on gpumig-vfio-pci (the VM runs
	# on the project's QEMU).
	pairs=()
	for t in 64M 256M 1G 16G; do
		a=$(cat /proc/sys/kernel/random/uuid) b=$(cat /proc/sys/kernel/random/uuid)
		check "create two simgpu-$t instances" sh -c \
			"echo $a > $types/simgpu-$t/create && echo $b > $types/simgpu-$t/create" &&
			pairs+=("$t $a $b")
	done
	# udev may have loaded an installed simgpu_pf (DKMS) for the PF: ours.
	pf=$(pf_addrs | head -n 1)
	! grep -q '^simgpu_pf ' /proc/modules || rmmod simgpu_pf
	if [ -n "$pf" ] && check "simgpu-pf, gpumig-vfio-pci; VFs 64M, 256M, 64M, 256M bound" sh -c \
		"insmod $moddir/simgpu-pf.ko && insmod $moddir/gpumig-vfio-pci.ko &&
		 echo 256M > /sys/bus/pci/devices/$pf/simgpu/vf1_profile &&
		 echo 256M > /sys/bus/pci/devices/$pf/simgpu/vf3_profile &&
		 echo 4 > /sys/bus/pci/devices/$pf/sriov_numvfs"; then
		for i in 0 1 2 3; do
			vf_bind "$(vf_addr "$pf" $i)" gpumig-vfio-pci
		done
		for i in 0 1; do
			pairs+=("vf$i $(vf_addr "$pf" $i) $(vf_addr "$pf" $((i + 2)))")
		done
	fi
	for r in $(seq $reps); do
		for p in "${pairs[@]}"; do
			read -r pt ps pd <<<"$p"
			timeout 1200 "$tooldir/simgpu-client" -s bench_vram \
				-n "simgpu_bench_vram_$pt" -d "$pd" "$ps" \
				>>"$out/bench-vram.txt" 2>>"$out/guest.log"
		done
	done
	for p in "${pairs[@]}"; do
		read -r pt ps pd <<<"$p"
		[ -e /sys/bus/mdev/devices/$ps ] || continue
		echo 1 > /sys/bus/mdev/devices/$ps/remove
		echo 1 > /sys/bus/mdev/devices/$pd/remove
	done
	;;
soak)
	# make soak: the soak scenario, SOAK_MIGRATIONS from the host, on two
	# mdevs, QEMU ping-pong on mdevs, then the scenario on two VFs on
	# gpumig-vfio-pci.
	export SOAK_MIGRATIONS=$(cat "$out/soak-migrations")
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	a=$(cat /proc/sys/kernel/random/uuid) b=$(cat /proc/sys/kernel/random/uuid)
	types=/sys/class/mdev_bus/simgpu/mdev_supported_types
	if check "create two simgpu-256M instances" sh -c \
		"echo $a > $types/simgpu-256M/create && echo $b > $types/simgpu-256M/create"; then
		"$tooldir/simgpu-client" -s soak -n simgpu_soak -d "$b" "$a" \
			>"$out/soak-mdev.ktap" 2>>"$out/guest.log"
		echo 1 > /sys/bus/mdev/devices/$a/remove
		echo 1 > /sys/bus/mdev/devices/$b/remove
	fi
	# QEMU-driven: SOAK_QEMU_MIGRATIONS ping-pong migrations of the
	# verifying guest (qemu_mig.py makes its own instances), with the
	# kernel's memory before and after.
	n=$(cat "$out/soak-qemu-migrations")
	if [ "$n" -gt 0 ]; then
		# As the client's soak measures: each cache shrunk first, which
		# also empties KASAN's quarantine of it, so Slab counts live
		# objects (without, 50 migrations "grew" it by 95 %).
		mem_line() {
			sync; echo 3 > /proc/sys/vm/drop_caches
			for c in /sys/kernel/slab/*/shrink; do echo 1 >"$c"; done 2>/dev/null
			awk '/^(Slab|MemAvailable):/ { printf "%s %s KiB ", $1, $2 }' /proc/meminfo
		}
		echo "before: $(mem_line)" >"$out/soak-qemu.txt"
		check "QEMU soak: $n ping-pong migrations, guest verifying (soak-qemu/qemu.ktap)" \
			timeout $((600 + 30 * n)) python3 "$(dirname "$0")/qemu_mig.py" \
			--guest "$tooldir/gpumig-guest.elf" --out "$out/soak-qemu" --pingpong "$n"
		echo "after: $(mem_line)" >>"$out/soak-qemu.txt"
	fi
	check "unload simgpu" rmmod simgpu
	pf=$(pf_addrs | head -n 1)
	if check "simgpu-pci present" test -n "$pf" &&
		check "simgpu-pf, gpumig-vfio-pci; VFs 1 and 3 of 256M enabled, bound" sh -c \
			"insmod $moddir/simgpu-pf.ko && insmod $moddir/gpumig-vfio-pci.ko &&
			 echo 256M > /sys/bus/pci/devices/$pf/simgpu/vf1_profile &&
			 echo 256M > /sys/bus/pci/devices/$pf/simgpu/vf3_profile &&
			 echo 4 > /sys/bus/pci/devices/$pf/sriov_numvfs"; then
		vf1=$(vf_addr "$pf" 1) vf3=$(vf_addr "$pf" 3)
		if check "bind VF 1 to $GVP" vf_bind "$vf1" "$GVP" &&
			check "bind VF 3 to $GVP" vf_bind "$vf3" "$GVP"; then
			"$tooldir/simgpu-client" -s soak -n gvp_soak -d "$vf3" "$vf1" \
				>"$out/soak-vf.ktap" 2>>"$out/guest.log"
		fi
		vf_unbind "$vf1"
		vf_unbind "$vf3"
		check "disable VFs, unload" sh -c "echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs &&
			rmmod gpumig_vfio_pci simgpu_pf"
	fi
	check "unload gpumig" rmmod gpumig
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
	check "unload gpumig" rmmod gpumig
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
