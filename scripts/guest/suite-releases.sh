# SPDX-License-Identifier: GPL-2.0
#
# The releases suite: this release and each older one, one module set
# at a time.
# Sourced by run.sh (which says what each mode runs).

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
	unload_gpumig && vfio_stack || return 1
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

# rel_qemu SET DIR save|load FILE [CAP]: half of a QEMU migration through
# FILE (qemu_file_mig.py) on a fresh simgpu-64M under SET, with its
# migration/stream_max at CAP first.
rel_qemu() {
	local u rc
	rel_load "$1" "$2" || return 1
	u=$(cat /proc/sys/kernel/random/uuid)
	echo "$u" >/sys/class/mdev_bus/simgpu/mdev_supported_types/simgpu-64M/create || return 1
	if [ -z "${5:-}" ] || echo "$5" >"/sys/bus/mdev/devices/$u/migration/stream_max"; then
		timeout 900 python3 "$(dirname "$0")/qemu_file_mig.py" "$3" "$u" "$4" \
			--guest "$tooldir/gpumig-guest.elf" --out "$out/qemu-file"
		rc=$?
	else
		rc=1
	fi
	echo 1 >"/sys/bus/mdev/devices/$u/remove"
	rel_unload && return $rc
}

# rel_qemu_pair SET DIR SET2 DIR2 FILE [CAP]: SET saves (capped at CAP),
# SET2 restores.
rel_qemu_pair() {
	rel_qemu "$1" "$2" save "$5" "${6:-}" && rel_qemu "$3" "$4" load "$5"
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
			# Post-copy, asked for in pre-copy: the older release
			# refuses its announcement, an unknown mandatory section,
			# from what the source sends before the stop.
			local pc=$out/rel-$cur-pc-$kind.bin
			check "releases: $cur announces post-copy in pre-copy (stream 1.3) ($kind)" \
				rel_$kind ours "" postcopy_save "$pc" "rel_${cur//./_}_save_pc_$kind" &&
				GOLDEN_WHY="unknown mandatory section type 0x0008" check \
					"releases: $ver refuses post-copy at its announcement, before the stop ($kind)" \
					rel_$kind old "$dir" golden_refused "$pc" \
					"rel_${ver//./_}_refuses_${cur//./_}_pc_$kind"
			rm -f "$pc"
			if [ -n "$gd" ] && [ -s "$old" ]; then
				local t=simgpu-64M
				[ "$kind" = vf ] && t=simgpu-vf-64M
				gzip -9n <"$old" >"$gd/gpumig-$ver-$t.stream.gz"
			fi
			rm -f "$new" "$old"
		done
		# What an operator's rolling upgrade does, by QEMU: the running
		# guest leaves under one release and goes on under the other,
		# both ways; back to the older one with the cap it reads (1.1).
		local f=$out/rel-qemu.bin
		check "releases: QEMU: $ver saves a running guest to a file, $cur restores it, the guest verifies on" \
			rel_qemu_pair old "$dir" ours "" "$f"
		check "releases: QEMU: $cur, capped at stream 1.1, saves a running guest to a file, $ver restores it" \
			rel_qemu_pair ours "" old "$dir" "$f" 1.1
		rm -f "$f" "$f.iter"
	done <"$out/releases"
}
