# SPDX-License-Identifier: GPL-2.0
#
# The PCI suite: simgpu-pci's PF and VFs, simgpu-pf, vfio-pci and
# gpumig-vfio-pci, other geometries, quarantine, PF resets, QEMU on VFs.
# Sourced by run.sh (which says what each mode runs).

# The modules of the PCI suite: built ones by path, or the DKMS install.
loadmod=insmod
moddir_pf=$moddir/simgpu-pf.ko
moddir_gpumig=$moddir/gpumig.ko
moddir_gvp=$moddir/gpumig-vfio-pci.ko
moddir_simgpu=$moddir/simgpu.ko
[ -n "$kdir" ] || {
	loadmod="modprobe"
	moddir_pf=simgpu_pf moddir_gpumig=gpumig moddir_gvp=gpumig_vfio_pci moddir_simgpu=simgpu
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

# A VF on gpumig-vfio-pci says it migrates and describes its profile.
gvp_bind() {
	vf_bind "$1" "$GVP" &&
		[ "$(mig_file "$1" migratable)" = 1 ] && [ "$(mig_file "$1" state)" = RUNNING ] &&
		[ "$(mig_file "$1" dirty_tracking)" = "$3" ] &&
		grep -q "backend=2 type=simgpu-vf-$2 " "/sys/bus/pci/devices/$1/migration/compat" &&
		[ "$(cat "/sys/bus/pci/devices/$1/simgpu/profile")" = "$2" ]
}

# third_pf PF: the third PF's four VFs as the first's (64M, 256M, 64M,
# 256M), each on $GVP.
third_pf() {
	# (not "n": check's counter)
	local sys=/sys/bus/pci/devices/$1/simgpu k v

	check "a third PF ($1): VF profiles 64M, 256M, 64M, 256M, 4 VFs enabled" sh -c \
		"echo 256M > $sys/vf1_profile && echo 256M > $sys/vf3_profile &&
		 echo 4 > /sys/bus/pci/devices/$1/sriov_numvfs" || return 1
	for k in 0 1 2 3; do
		v=$(vf_addr "$1" $k)
		check "bind the third PF's VF $k ($v) to $GVP" \
			gvp_bind "$v" "$( [ $((k % 2)) = 1 ] && echo 256M || echo 64M)" "$tracking" || return 1
	done
}

# third_pf_off PF: every VF of PF that is bound unbound (third_pf may have
# stopped halfway), SR-IOV off.
third_pf_off() {
	local v

	for v in /sys/bus/pci/devices/$1/virtfn*; do
		[ -e "$v/driver" ] || continue
		vf_unbind "$(basename "$(readlink -f "$v")")" || return 1
	done
	echo 0 >"/sys/bus/pci/devices/$1/sriov_numvfs"
}

# geometry_vf SRC DST GEOMETRY WHAT: with simgpu-pf's test_geometry, the
# two VFs migrate as a device of another shape would: the descriptor says
# WHAT (the stream version, the block), a kernel in flight finishes on DST
# with the right results, and with "vendor" the PF's scheduling settings of
# SRC at the stop (a vendor section) are DST's after.  Both VFs get their
# own geometry back after.
geometry_vf() {
	local src=$1 dst=$2 geo=$3 what=$4 p=/sys/module/simgpu_pf/parameters/test_geometry
	local dd=/sys/kernel/debug/simgpu-pf/$2 rc=0 v

	echo "$geo" >"$p" || return 1
	for v in "$src" "$dst"; do
		vf_unbind "$v" && vf_bind "$v" "$GVP" || rc=1
	done
	for v in "$src" "$dst"; do
		grep -q "$what" "/sys/bus/pci/devices/$v/migration/compat" || rc=1
	done
	# The source preempts (a kernel stays in flight at the stop) and the
	# client's workload slows its kernel's steps; DST does neither.
	echo 0 >"$dd/preempt" && echo 0 >"$dd/kernel_step_us" || rc=1
	[ $rc = 0 ] && timeout 600 "$tooldir/simgpu-client" -s migrate -n "geometry_${geo//[=,]/_}" \
		-d "$dst" "$src" >"$out/client-geometry-${geo//[=,]/_}.ktap" || rc=1
	if [ $rc = 0 ] && [[ $geo == *vendor* ]]; then
		[ "$(cat "$dd/preempt")" = 1 ] && [ "$(cat "$dd/kernel_step_us")" != 0 ] || rc=1
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

# stream_cap_vf SRC DST: migration/stream_max takes 1.0 to 1.3 and nothing
# else; under 1.0 SRC says so in its descriptor and a kernel in flight
# migrates to DST in a stream 1.0 (zero chunks, no ranges); back to 1.3.
stream_cap_vf() {
	local f=/sys/bus/pci/devices/$1/migration/stream_max c=/sys/bus/pci/devices/$1/migration/compat
	local v rc=0

	[ "$(cat "$f")" = 1.3 ] || return 1
	for v in 2.0 1.4 "1.0 x" 1 " 1.2" 01.2 1.02 +1.2 1.4294967298 4294967297.3; do
		! echo "$v" >"$f" 2>/dev/null || { echo "stream_max took '$v'"; rc=1; }
	done
	[ "$(cat "$f")" = 1.3 ] || rc=1
	# Post-copy asked for: a cap that cannot carry it is refused until
	# postcopy is 0 again.
	echo 1 >"/sys/bus/pci/devices/$1/migration/postcopy" || rc=1
	! echo 1.2 >"$f" 2>/dev/null && [ "$(cat "$f")" = 1.3 ] ||
		{ echo "stream_max 1.2 taken while postcopy is 1"; rc=1; }
	echo 0 >"/sys/bus/pci/devices/$1/migration/postcopy" || rc=1
	echo 1.0 >"$f" && [ "$(cat "$f")" = 1.0 ] && grep -q "^stream=1.0 " "$c" || rc=1
	[ $rc = 0 ] && timeout 600 "$tooldir/simgpu-client" -s migrate -n stream_1_0 \
		-d "$2" "$1" >"$out/client-stream-1-0.ktap" || rc=1
	echo 1.3 >"$f" && grep -q "^stream=1.1 " "$c" || rc=1
	return $rc
}

# vf_quarantined VF PATTERN: the VF is quarantined (migratable 0) and its
# last_error gives the reason PATTERN (a grep pattern) begins with.
vf_quarantined() {
	[ "$(mig_file "$1" migratable)" = 0 ] &&
		mig_file "$1" last_error | grep -q "^quarantined: $2"
}

# A function whose reset methods are all disabled is not reset at release:
# the VF is quarantined, says so, refuses a tenant, and is usable again
# once its reset works and an operator lifted the quarantine.
flr_quarantine() {
	local vf=$1 rm=/sys/bus/pci/devices/$1/reset_method

	echo "" >"$rm" || return 1
	"$tooldir/simgpu-client" -s info -n flr_off "$vf" >/dev/null 2>&1
	vf_quarantined "$vf" "the function was not reset" || return 1
	! "$tooldir/simgpu-client" -s info -n flr_refused "$vf" >/dev/null 2>&1 || return 1
	echo default >"$rm" &&
		"$tooldir/gpumigctl" unquarantine "$vf" &&
		[ "$(mig_file "$vf" migratable)" = 1 ] &&
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
	vf_quarantined "$vf" "the function was not reset" || return 1
	vf_unbind "$vf" && vf_bind "$vf" "$GVP" || return 1
	if ! vf_quarantined "$vf" "the function was not reset"; then
		echo "rebound, the VF says: $(mig_file "$vf" last_error)"
		return 1
	fi
	! "$tooldir/simgpu-client" -s info -n q_rebind_refused "$vf" >/dev/null 2>&1 || return 1
	echo 1 >"/sys/bus/pci/devices/$pf/reset" || return 1
	if ! vf_quarantined "$vf" "the function was not reset.*; then its PF was reset: the VF.s state and VRAM were lost"; then
		echo "after the PF's reset, the VF says: $(mig_file "$vf" last_error)"
		return 1
	fi
	echo default >"$rm" &&
		"$tooldir/gpumigctl" unquarantine "$vf" &&
		[ "$(mig_file "$vf" migratable)" = 1 ] &&
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

	[ "$(mig_file "$pf" status)" = "not migratable: physical function" ] &&
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
		[ "$(mig_file "$pf" status)" = "not migratable: physical function" ]
}

# SR-IOV disabled while a VF is being bound to gpumig-vfio-pci: the PF's
# driver finds nothing bound and, with sriov_delay_ms holding that window
# open, the bind starts and asks the PF for the VF's services.  Both must
# end (the VF goes with SR-IOV), neither may hang, and the bind is refused
# (bound without its provider, nothing would scrub the VF's VRAM).
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
	# Refused, not bound without migration: nothing would scrub its VRAM.
	dmesg | grep -q "$vf: not bound: its PF is enabling or disabling SR-IOV" ||
		{ echo "the VF's bind in that window was not refused"; return 1; }
	[ ! -e "/sys/bus/pci/devices/$vf" ] && [ "$(cat "/sys/bus/pci/devices/$pf/sriov_numvfs")" = 0 ]
}

# pf_back PF VF: PF bound to simgpu-pf again, its four VFs enabled (the
# second 256M), VF bound to gpumig-vfio-pci.
pf_back() {
	echo "$1" >"$PFDRV/bind" && echo 256M >"/sys/bus/pci/devices/$1/simgpu/vf1_profile" &&
		echo 4 >"/sys/bus/pci/devices/$1/sriov_numvfs" && vf_bind "$2" "$GVP"
}

# profile_race PF: a VF's profile written while SR-IOV is being enabled
# (sriov_delay_ms holds the window open, the profiles already written to
# the device) is refused, and vf0_profile still names the profile the VF
# was enabled with.
profile_race() {
	local pf=$1 dbg=/sys/kernel/debug/simgpu-pf/$1 sys=/sys/bus/pci/devices/$1/simgpu e rc=0
	local before

	before=$(cat "$sys/vf0_profile") || return 1
	echo 2000 >"$dbg/sriov_delay_ms" || return 1
	echo 1 >"/sys/bus/pci/devices/$pf/sriov_numvfs" &
	e=$!
	sleep 0.5
	if echo 256M >"$sys/vf0_profile" 2>/dev/null; then
		echo "vf0_profile taken while SR-IOV was being enabled"
		rc=1
	fi
	wait $e || rc=1
	echo 0 >"$dbg/sriov_delay_ms"
	[ "$(cat "$sys/vf0_profile")" = "$before" ] || rc=1
	echo 0 >"/sys/bus/pci/devices/$pf/sriov_numvfs" || rc=1
	return $rc
}

# The Nova entries for a host with VFs and a PF bound.
#
# "managed": libvirt's <hostdev managed='yes'> (Nova's default) keeps a VF
# on gpumig-vfio-pci only where modules.alias names it for the VF: with
# the file depmod writes for the module (--modules-alias), no "managed"
# key; with a file without it, or none, "managed": "no" on each migratable
# VF and nowhere else.  With the DKMS install, the kernel's own file says
# it works.
nova_check() {
	local out=$1 al=$1.alias vf
	shift
	{ echo "# Aliases extracted from modules themselves."
	  modinfo -F alias "$moddir_gvp" | sed 's/.*/alias & gpumig_vfio_pci/'; } >"$al" || return 1
	"$tooldir/gpumigctl" nova-config --modules-alias "$al" >"$out" || return 1
	for vf in "$@"; do
		grep -q "device_spec = {\"address\": \"$vf\", .*\"resource_class\": \"CUSTOM_SIMGPU_VF_[0-9]*M\", \"live_migratable\": \"yes\"}" "$out" &&
			grep -q "^#   $vf .*managed='yes' works: libvirt finds gpumig_vfio_pci in $al" "$out" ||
			return 1
	done
	grep -q "device_spec = {\"address\": \"$pf2\", \"vendor_id\": \"1234\", \"product_id\": \"5350\", \"live_migratable\": \"no\"}" "$out" &&
		grep -q '"device_type": "type-PF", "live_migratable": "no"}' "$out" &&
		grep -q '"name": "simgpu-vf-256M", .*"device_type": "type-VF", .*"live_migratable": "yes"}' "$out" &&
		! grep '"type-PF"' "$out" | grep -q '"yes"' &&
		! grep -q '"managed"' "$out" || return 1
	echo "# Aliases extracted from modules themselves." >"$al.none"
	"$tooldir/gpumigctl" nova-config --modules-alias "$al.none" >"$out.none" &&
		"$tooldir/gpumigctl" nova-config --modules-alias "$al.missing" >"$out.missing" || return 1
	for vf in "$@"; do
		grep -q "device_spec = {\"address\": \"$vf\", .*\"managed\": \"no\", \"live_migratable\": \"yes\"}" "$out.none" &&
			grep -q "^#   $vf .*libvirt's managed='yes' would bind vfio-pci" "$out.none" &&
			grep -q "device_spec = {\"address\": \"$vf\", .*\"managed\": \"no\", \"live_migratable\": \"yes\"}" "$out.missing" &&
			grep -q "^#   $vf .*$al.missing cannot be read" "$out.missing" || return 1
	done
	[ "$(grep -c '"managed"' "$out.none")" -eq $# ] || return 1
	if [ "$loadmod" = modprobe ]; then
		"$tooldir/gpumigctl" nova-config | grep -q "managed='yes' works: libvirt finds gpumig_vfio_pci in /lib/modules/$(uname -r)/modules.alias"
	fi
}

# sgg_node VF: the /dev node simgpu-guest gave the VF.
sgg_node() {
	echo "/dev/$(ls "/sys/bus/pci/devices/$1/misc" 2>/dev/null)"
}

# sgg_json FILE EXPR: EXPR (Python, over the summary d) holds for
# simgpu-work's summary in FILE; the summary goes to the log either way.
sgg_json() {
	cat "$1" >>"$out/guest.log"
	python3 -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"
}

# simgpu-guest (guest/), the Linux guest driver, and its workload tool on
# VFs 0 and 2, as a Linux guest sees them (a VF speaks the guest ABI):
# two GPUs at once, clean; refused commands and the background writer; an
# FLR of one mid-run; a PF reset (both lose their state); an unbind
# mid-run.  Every result checked, every error reported, none wrong.  The
# module claims every unclaimed VF, so it is loaded only here.
guest_drv() {
	local ko=$moddir/guest/simgpu-guest.ko w=$tooldir/simgpu-work g0 g2 t0=$(date +%s) j=$out/sgg
	[ -f "$ko" ] && [ -x "$w" ] || { echo "no $ko or $w"; return 1; }
	insmod "$ko" || return 1
	g0=$(sgg_node "$vf0") g2=$(sgg_node "$vf2")
	[ -c "$g0" ] && [ -c "$g2" ] || { echo "no node for $vf0 or $vf2"; rmmod simgpu_guest; return 1; }
	(
	set -e
	timeout 120 "$w" -t 4 -s "$g0" "$g2" >"$j-clean.json"
	sgg_json "$j-clean.json" "d['checked'] > 20 and d['wrong'] == 0 and d['errors'] == 0"
	timeout 120 "$w" -t 4 -s -m vram,dma,kernel,bad,dirty "$g0" "$g2" >"$j-bad.json"
	sgg_json "$j-bad.json" "d['wrong'] == 0 and all(x['refused'] > 0 and
		all(e['name'] == 'BAD_ARGS' for e in x['errors']) for x in d['devices'])"
	( sleep 2; echo 1 >"/sys/bus/pci/devices/$vf0/reset" ) &
	timeout 120 "$w" -t 5 "$g0" "$g2" >"$j-flr.json"
	wait
	sgg_json "$j-flr.json" "d['wrong'] == 0 and d['devices'][0]['resets'] == 1 and
		any(e['name'] == 'RESET' for e in d['devices'][0]['errors']) and
		d['devices'][1]['resets'] == 0 and d['devices'][1]['errors'] == []"
	( sleep 2; echo 1 >"/sys/bus/pci/devices/$pf/reset" ) &
	timeout 120 "$w" -t 6 "$g0" "$g2" >"$j-pf.json"
	wait
	sgg_json "$j-pf.json" "d['wrong'] == 0 and all(x['resets'] >= 1 and
		any(e['name'] == 'DEVICE_LOST' for e in x['errors']) for x in d['devices'][:2])"
	timeout 120 "$w" -t 2 -s "$g0" "$g2" >"$j-after.json"
	sgg_json "$j-after.json" "d['checked'] > 5 and d['wrong'] == 0"
	( sleep 2; vf_unbind "$vf2" ) &
	timeout 120 "$w" -t 4 "$g2" >"$j-unbind.json" || true
	wait
	sgg_json "$j-unbind.json" "d['wrong'] == 0 and d['devices'][0]['errored'] > 0 and d['devices'][0]['gone']"
	)
	local rc=$?
	rmmod simgpu_guest || rc=1
	echo "vm: simgpu-guest lane took $(($(date +%s) - t0)) s"
	return $rc
}

pci_suite() {
	local pf pf2 pf3 sys vf0 vf1 vf2 vf3 tracking=device

	check "VFIO type1 and vfio-pci available" vfio_stack
	check "load gpumig, simgpu-pf (its provider registers) and gpumig-vfio-pci" \
		sh -c "$loadmod $moddir_gpumig && $loadmod $moddir_pf && $loadmod $moddir_gvp &&
		       dmesg | grep -q 'gpumig: simgpu-pf serves VFs'"
	set -- $(pf_addrs)
	pf=${1:-} pf2=${2:-} pf3=${3:-}
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
	check "vfio-migtest on a VF on plain vfio-pci: says it does not migrate" sh -c \
		"'$tooldir/vfio-migtest' -N migtest_vf_vfio_pci $vf0 >'$out/migtest-vf-vfio-pci.txt' &&
		 grep -q '^    ok 1 no_migration # SKIP' '$out/migtest-vf-vfio-pci.txt'"
	check "SR-IOV cannot be disabled while a VF is bound" \
		sh -c "! echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs 2>/dev/null && [ -e /sys/bus/pci/devices/$vf0 ]"
	vf_unbind "$vf0"
	check "simgpu-guest and simgpu-work on VFs 0 and 2: clean, refused commands, an FLR, a PF reset, an unbind; nothing wrong" \
		guest_drv

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
	GPUMIG_MOVER=$tooldir/gpumig-mover SOAK_MIGRATIONS=20 timeout 1800 "$tooldir/simgpu-client" \
		-s "migrate,postcopy,postcopy_abandon,postcopy_mover,postcopy_reset,postcopy_timeout,postcopy_hold,converge,converge_off,converge_reset,dirty_precopy,aperture,stop_fails,hostile,$(mig_extra)race,quarantine,fault_sweep" \
		-n gvp_migration -d "$vf3" "$vf1" >"$out/client-gvp-migration.ktap" 2>>"$out/guest.log"
	echo "vm: client migration scenarios on VFs exited $?"
	timeout 300 "$tooldir/simgpu-client" -s incompatible -n gvp_migration_compat \
		-d "$vf0" "$vf1" >"$out/client-gvp-compat.ktap" 2>>"$out/guest.log"
	# The vendor-neutral uAPI conformance suite (tools/vfio-migtest).
	migtest migtest_gvp -p "$tooldir/vfio-migtest-plugins/simgpu.so" -d "$vf3" "$vf1"
	# Other geometries on real VFs (simgpu-pf's test_geometry), 64M each.
	check "geometry: the state in 3 parts and a vendor section (stream 1.2): migrates, settings follow" \
		geometry_vf "$vf0" "$vf2" "parts=3,vendor" "^stream=1.2 .*state_version=1\$"
	check "geometry: 256 KiB blocks, no VRAM dirty tracking (stream 1.2): migrates" \
		geometry_vf "$vf2" "$vf0" "block=256,untracked" " block_size=262144\$"
	check "migration/stream_max: exactly 1.0 to 1.3, not below 1.3 while postcopy is 1; capped at 1.0 a VF migrates in stream 1.0" \
		stream_cap_vf "$vf0" "$vf2"
	check "migration/ files: readable by all, a reader in a loop costs the device one refresh a period" \
		metrics_cached "$vf1"
	check "a VF that was not reset at release is quarantined, then lifted" flr_quarantine "$vf2"
	check "a quarantine outlives a rebind of $GVP and says when a PF reset lost its VRAM" \
		quarantine_rebind "$vf2" "$pf"
	# One ping-pong on VFs (two on mdevs): each VF migration under nested
	# emulation takes about ten times an mdev's (make check's budget).
	# Last, all four VFs in one VM: live to the third PF's four and back
	# where the VM has that PF (the distro VM, lib.sh), else saved live to
	# a file and restored onto them.
	if qemu10_here; then
		local several=file:256M,256M,64M,64M p256="256M=$vf1,$vf3" p64="64M=$vf0,$vf2"
		local w0="" w1="" w2="" w3=""
		if [ -n "$pf3" ] && third_pf "$pf3"; then
			w0=$(vf_addr "$pf3" 0) w1=$(vf_addr "$pf3" 1)
			w2=$(vf_addr "$pf3" 2) w3=$(vf_addr "$pf3" 3)
			several=256M,256M,64M,64M p256="$p256,$w1,$w3" p64="$p64,$w0,$w2"
		fi
		vram_trace on
		check "QEMU end to end on VFs: every check passed (qemu-pci/qemu.ktap)" \
			timeout 2400 python3 "$(dirname "$0")/qemu_mig.py" --pingpong 1 \
			--guest "$tooldir/gpumig-guest.elf" --out "$out/qemu-pci" \
			--pci "$p256" "$p64" --several "$several" --no-several-failures
		vram_trace off "$out/qemu-pci"
		[ -z "$pf3" ] || check "the third PF's VFs released, its SR-IOV disabled" \
			third_pf_off "$pf3"
	fi
	# A Linux guest (Debian's kernel, simgpu-guest, simgpu-work: guest/)
	# holding a VF and an mdev (simgpu loaded for it meanwhile), booted
	# and live-migrated by QEMU 10 to another VF and mdev, simgpu-work
	# verifying both before, during and after (the host built it:
	# linux-guest.args); then on with post-copy of the mdev's VRAM and no
	# mover, abandoned: simgpu-work sees VRAM_LOST, never a wrong result.
	if qemu10_here && [ -s "$tooldir/linux-guest.args" ]; then
		check "load simgpu beside simgpu-pf, for the Linux guest's mdev" $loadmod "$moddir_simgpu"
		check "a Linux guest with simgpu-guest, a VF and an mdev migrates live, simgpu-work verifying both throughout, then sees VRAM_LOST when its mdev's post-copy is abandoned (linux-guest/qemu.ktap)" \
			timeout 1800 python3 "$(dirname "$0")/qemu_mig.py" --only lost \
			--guest "$tooldir/gpumig-guest.elf" --out "$out/linux-guest" \
			--linux "$(cat "$tooldir/linux-guest.args")" --first 256M,mdev:256M \
			--pci "256M=$vf1,$vf3"
		check "unload simgpu" rmmod simgpu
	fi
	# With QEMU 11.1, also VMs of two VFs and of four devices, two VFs
	# and two mdevs (simgpu loaded for them meanwhile), live between two
	# such sets: every VF of the first PF is used.
	if [ -s "$out/qemu11-root" ]; then
		check "load simgpu beside simgpu-pf, for mdevs beside VFs" $loadmod "$moddir_simgpu"
		qemu11_lane "QEMU 11.1 end to end on VFs: every check passed (qemu11-pci/qemu.ktap)" \
			"$out/qemu11-pci" $(reinit_arg) --pingpong 1 --pci "256M=$vf1,$vf3" "64M=$vf0,$vf2" \
			--several 256M,64M 256M,64M,mdev:64M,mdev:64M
		check "unload simgpu" rmmod simgpu
	fi

	check "$GVP, simgpu-pf and gpumig cannot be unloaded while QEMU holds a VF" \
		unload_refused "/sys/bus/pci/devices/$vf0" gpumig_vfio_pci simgpu_pf gpumig

	# A PF assigned plainly.
	check "bind the second PF ($pf2) to $GVP" pf_rebind "$pf2" "$GVP"
	check "the PF: assignable, no migration, says so, inert after release" pf_plain "$pf2"
	check "gpumigctl lists the VFs and the PF" sh -c \
		"[ \$('$tooldir/gpumigctl' list | grep -c '^0000:.*$GVP') -eq 5 ]"
	check "gpumigctl check-compat on VFs: same profile compatible, 64M refused for a 256M source" \
		compat_check "$vf1" "$vf3" "$vf0" "type mismatch: source simgpu-vf-256M, destination simgpu-vf-64M"
	check "gpumigctl's JSON on a VF (watch, list, status), options anywhere, its messages" watch_check "$vf1"
	check "gpumigctl nova-config: live_migratable for VFs only, never the PF" \
		nova_check "$out/nova.conf" "$vf0" "$vf1" "$vf2" "$vf3"

	# The PF is reset while VF 1 pre-copies: loud, and the VF works after.
	timeout 300 "$tooldir/simgpu-client" -s pf_reset -n gvp_pf_reset "$vf1" \
		>"$out/client-gvp-pf-reset.ktap" 2>>"$out/guest.log"
	echo "vm: client pf_reset on VF 1 exited $?"
	# ... and halfway through a post-copy from VF 1 to VF 3.
	timeout 300 "$tooldir/simgpu-client" -s postcopy_pf_reset -n gvp_postcopy_pf_reset \
		-d "$vf3" "$vf1" >"$out/client-gvp-postcopy-pf-reset.ktap" 2>>"$out/guest.log"
	echo "vm: client postcopy_pf_reset on VFs 1 and 3 exited $?"

	# The PF's driver goes away halfway through a post-copy from VF 1 to
	# VF 3 (the destination's blocks lost at once, not waited on); then,
	# the PF driven again, while VF 1 migrates.
	timeout 300 "$tooldir/simgpu-client" -s postcopy_pf_gone -n gvp_postcopy_pf_gone \
		-d "$vf3" "$vf1" >"$out/client-gvp-postcopy-pf-gone.ktap" 2>>"$out/guest.log"
	echo "vm: client postcopy_pf_gone on VFs 1 and 3 exited $?"
	check "the PF binds to simgpu-pf again, VF 1 (256M) to $GVP" pf_back "$pf" "$vf1"
	timeout 300 "$tooldir/simgpu-client" -s pf_gone -n gvp_pf_gone "$vf1" \
		>"$out/client-gvp-pf-gone.ktap" 2>>"$out/guest.log"
	check "every VF went with its PF's driver" sh -c "[ ! -e /sys/bus/pci/devices/$vf0 ] &&
		[ ! -e /sys/bus/pci/devices/$vf3 ]"
	check "the VF said its migration was aborted because the PF's driver went" sh -c \
		"dmesg | grep -q '$GVP $vf1: the PF.s driver was removed: the migration in flight was aborted'"
	check "the PF binds to simgpu-pf again and enables VFs" sh -c \
		"echo $pf > $PFDRV/bind && echo 2 > /sys/bus/pci/devices/$pf/sriov_numvfs &&
		 echo 0 > /sys/bus/pci/devices/$pf/sriov_numvfs"
	check "SR-IOV disabled while a VF binds to $GVP: both end, nothing hangs, the bind refused" \
		sriov_bind_race "$pf"
	check "a VF profile written while SR-IOV is being enabled: EBUSY, the VF keeps its profile" \
		profile_race "$pf"
	check "the second PF back to simgpu-pf" sh -c \
		"echo > /sys/bus/pci/devices/$pf2/driver_override && echo $pf2 > /sys/bus/pci/drivers/$GVP/unbind &&
		 echo $pf2 > $PFDRV/bind"
	check "unload gpumig-vfio-pci, simgpu-pf, gpumig" rmmod gpumig_vfio_pci simgpu_pf gpumig
}

pci_if_present() {
	if [ -n "$(pf_addrs)" ]; then
		pci_suite
	else
		check "simgpu-pci hardware present (the VM runs on the project's QEMU)" false
	fi
}
