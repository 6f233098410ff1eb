# SPDX-License-Identifier: GPL-2.0
#
# The mdev suite: simgpu's instances, the client's scenarios on them,
# trace events, mdevctl and the orchestrators' names, QEMU end to end.
# Sourced by run.sh (which says what each mode runs).

# trace_events SRC DST OTHER: the engine's trace events of one migration
# SRC -> DST, a stream refused by OTHER (another type), a quarantine and
# its lifting, DMA logging, and a post-copy abandoned halfway (which blocks
# were lost) appear, each in the order it happened.
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
	"$tooldir/simgpu-client" -s postcopy_abandon -n trace_postcopy -d "$dst" "$src" >/dev/null 2>&1
	echo 0 > $t/tracing_on
	echo 0 > $t/events/gpumig/enable
	cat $t/trace >"$log"
	echo > $t/trace
	echo 1 > $t/tracing_on	# the kernel's default, for whoever traces next
	local -a logging=()
	[ "$(cat /sys/bus/mdev/devices/$src/migration/dirty_tracking)" = device ] && logging=(
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
		"${logging[@]}" \
		"gpumig_postcopy: $src source active owed=64 lost=0 first_lost=-1" \
		"gpumig_postcopy: $dst destination active owed=64 lost=0 first_lost=-1" \
		"gpumig_postcopy: $dst destination abandoned owed=0 lost=60 first_lost=4" \
		"gpumig_postcopy: $src source abandoned owed=60 lost=0 first_lost=-1"
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

# kubevirt_node: what a KubeVirt node makes of simgpu: KubeVirt's
# virt-handler rules for mediated devices, transcribed from its source
# (tools/kubevirt/kv_node.py), run on this host's sysfs with the custom
# resource orchestrators.rst gives and four others
# (tools/kubevirt/kv_contract.py: one Python process, its lines become
# checks).  Starts and ends with no instance on the host.
kubevirt_node() {
	local top st desc rc bad=0 u
	top=$(dirname "$0")/../..
	python3 "$top/tools/kubevirt/kv_contract.py" "$top/Documentation/gpumig/orchestrators.rst" \
		"$tooldir/simgpu-client" "$out/kubevirt" >"$out/kubevirt.txt" 2>>"$out/guest.log"
	rc=$?
	while read -r st desc; do
		case $st in
		ok) ok "$desc" ;;
		not) not_ok "${desc#ok }"; bad=$((bad + 1)) ;;
		esac
	done <"$out/kubevirt.txt"
	[ $rc -eq 0 ] || [ $bad -gt 0 ] || not_ok "KubeVirt: kv_contract.py exited $rc (see guest.log)"
	for u in /sys/bus/mdev/devices/*; do
		[ -e "$u/remove" ] && echo 1 >"$u/remove"
	done
	return 0
}

# simgpu_suite: one instance of every type, the client's scenarios on each,
# a second tenant on a reused instance, removal while open.
simgpu_suite() {
	local parent=/sys/class/mdev_bus/simgpu t uuid
	local -a uuids=()

	check "VFIO type1 and mdev available" vfio_stack
	# KubeVirt's node rules: on Debian's kernel only (budget: 15 s under
	# the debug kernel, 4 s here; nothing in them is kernel-specific, and
	# the debug VM's suites create and remove instances more than this).
	[ "$mode" = distro ] && kubevirt_node
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
		GPUMIG_MOVER=$tooldir/gpumig-mover SOAK_MIGRATIONS=20 timeout 1500 "$tooldir/simgpu-client" \
			-s "migrate,postcopy,postcopy_abandon,postcopy_threads,postcopy_mover,postcopy_reset,postcopy_timeout,postcopy_remove,converge,converge_off,converge_reset,dirty_precopy,stop_fails,hostile,$(mig_extra)race,quarantine,fault_sweep" \
			-n simgpu_migration -d "$dst" "$src" >"$out/client-migration.ktap" 2>>"$out/guest.log"
		timeout 300 "$tooldir/simgpu-client" -s incompatible -n simgpu_migration_compat \
			-d "${uuids[0]}" "$src" >"$out/client-migration-compat.ktap" 2>>"$out/guest.log"
		check "trace events of a migration, a refused stream, a quarantine, DMA logging" \
			trace_events "$src" "$dst" "${uuids[0]}"
		# The vendor-neutral uAPI conformance suite (tools/vfio-migtest),
		# through the group and, where the kernel has it, the iommufd cdev.
		migtest migtest_mdev -p "$tooldir/vfio-migtest-plugins/simgpu.so" -d "$dst" "$src"
		check "gpumigctl check-compat: same type compatible, another type refused as the kernel does" \
			compat_check "$src" "$dst" "${uuids[0]}" "type mismatch: source simgpu-256M, destination simgpu-64M"
		check "gpumigctl check-compat across releases: to 0.1 with stream_max 1.1, from 0.1, 1.2 refused by 0.1" \
			compat_versions "$src"
		check "gpumigctl's JSON (watch, list, status), options anywhere, its messages" watch_check "$src"
		check "gpumigctl watch ends, exit 1, when the device goes" watch_gone
		migtest_mtty
		check "gpumigctl watch --domain: libvirt 11.3's job figures for RAM, and RAM and device together" \
			watch_domain_check "$src"
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
	# With QEMU 11.1, also VMs of two and of four devices.
	qemu11_lane "QEMU 11.1 end to end on mdevs: every check passed (qemu11/qemu.ktap)" \
		"$out/qemu11" $(reinit_arg) --several 64M,64M 64M,64M,64M,64M
}
