# SPDX-License-Identifier: GPL-2.0
#
# The benchmark and soak modes (make bench, make bench-vram, make soak).
# Sourced by run.sh (which says what each mode runs).

# make bench: the dirty-tracking benchmark on a simgpu-256M.
bench_mode() {
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
}

# make bench-several: QEMU's downtime for a VM of four simgpus against one,
# multifd device-state transfer off and on (bench_several.py).
bench_several_mode() {
	check "load the VFIO stack" vfio_stack
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load simgpu.ko" insmod "$moddir/simgpu.ko"
	timeout 5000 python3 "$(dirname "$0")/bench_several.py" \
		--reps "$(cat "$out/bench-reps" 2>/dev/null || echo 5)" \
		--guest "$tooldir/gpumig-guest.elf" --out "$out/qemu" >"$out/bench-several.txt" 2>>"$out/guest.log"
	check "the several-devices benchmark ran every run to its end" [ $? -eq 0 ]
}

# make bench-vram: the VRAM migration benchmark on every type and on VFs.
bench_vram_mode() {
	# Ours are the ones measured, not an installed (DKMS) build udev loaded.
	unload_gpumig
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
	# OUT/bench-only: "vram" (make bench-vram), "converge" (make
	# bench-converge) or "postcopy" (make bench-postcopy) runs only that
	# benchmark; empty, all.
	only=$(cat "$out/bench-only" 2>/dev/null || true)
	[ -z "$only" ] || [ "$only" = vram ] || reps=0
	if [ "$reps" -gt 0 ] && check "create two simgpu-64M instances for the warm-up" sh -c \
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
	pf=$(pf_addrs | head -n 1)
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
	# The auto-converge benchmark (bench_converge.c): simgpu-256M,
	# simgpu-1G and a 256M VF (vf1: VFs 1 and 3), each type's idle,
	# hot-without and hot-with runs in the same process.
	for p in "${pairs[@]}"; do
		read -r pt ps pd <<<"$p"
		[ -z "$only" ] || [ "$only" = converge ] || break
		case $pt in 256M | 1G | vf1) ;; *) continue ;; esac
		timeout 1200 "$tooldir/simgpu-client" -s bench_converge \
			-n "simgpu_bench_converge_$pt" -d "$pd" "$ps" \
			>>"$out/bench-converge.txt" 2>>"$out/guest.log"
	done
	# The post-copy benchmark (bench_postcopy.c): simgpu-256M, -1G, -16G
	# and a 256M VF, each type's runs without and with post-copy in the
	# same process.
	for p in "${pairs[@]}"; do
		read -r pt ps pd <<<"$p"
		[ -z "$only" ] || [ "$only" = postcopy ] || break
		case $pt in 256M | 1G | 16G | vf1) ;; *) continue ;; esac
		GPUMIG_MOVER=$tooldir/gpumig-mover timeout 1800 "$tooldir/simgpu-client" \
			-s bench_postcopy -n "simgpu_bench_postcopy_$pt" -d "$pd" "$ps" \
			>>"$out/bench-postcopy.txt" 2>>"$out/guest.log"
	done
	for p in "${pairs[@]}"; do
		read -r pt ps pd <<<"$p"
		[ -e /sys/bus/mdev/devices/$ps ] || continue
		echo 1 > /sys/bus/mdev/devices/$ps/remove
		echo 1 > /sys/bus/mdev/devices/$pd/remove
	done
}

# make soak: the long soak on mdevs, QEMU and VFs.
soak_mode() {
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
	# Not n: that is the KTAP counter (it once was overwritten here, and the
	# plan then promised cases that never ran).
	local qn
	qn=$(cat "$out/soak-qemu-migrations")
	if [ "$qn" -gt 0 ]; then
		# As the client's soak measures: each cache shrunk first, which
		# also empties KASAN's quarantine of it, so Slab counts live
		# objects (without, 50 migrations "grew" it by 95 %).
		mem_line() {
			sync; echo 3 > /proc/sys/vm/drop_caches
			for c in /sys/kernel/slab/*/shrink; do echo 1 >"$c"; done 2>/dev/null
			awk '/^(Slab|MemAvailable):/ { printf "%s %s KiB ", $1, $2 }' /proc/meminfo
		}
		echo "before: $(mem_line)" >"$out/soak-qemu.txt"
		check "QEMU soak: $qn ping-pong migrations, guest verifying (soak-qemu/qemu.ktap)" \
			timeout $((600 + 30 * qn)) python3 "$(dirname "$0")/qemu_mig.py" \
			--guest "$tooldir/gpumig-guest.elf" --out "$out/soak-qemu" --pingpong "$qn"
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
}
