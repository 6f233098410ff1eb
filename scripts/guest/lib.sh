# SPDX-License-Identifier: GPL-2.0
#
# The guest suites' library: KTAP reporting, loading the VFIO stack and
# the KUnit modules, and the helpers more than one suite uses (VFs and
# their drivers, the QEMU lanes, golden streams).
# Sourced by run.sh (which says what each mode runs).

# simgpu-pci: the PF driver, VF profiles, SR-IOV on and off, the PF's
# services from the kernel (KUnit on an unbound VF), a VF on plain
# vfio-pci, then gpumig-vfio-pci: the client's migration scenarios on VFs,
# QEMU end to end, a PF assigned plainly, gpumigctl, and the PF's driver
# unbound mid-migration.
PFDRV=/sys/bus/pci/drivers/simgpu-pf
GVP=gpumig-vfio-pci

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

# unload_gpumig: the project's modules unloaded, users first: on a machine
# where make check installed the DKMS package, udev loads simgpu-pf (and
# gpumig with it) for the PF at boot, and a suite loads its own.
unload_gpumig() {
	local m
	for m in gpumig_vfio_pci simgpu_pf simgpu gpumig; do
		! grep -q "^$m " /proc/modules || rmmod $m || return 1
	done
}

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
	local desc=$1 t0=$SECONDS rc=0
	shift
	"$@" >>"$out/guest.log" 2>&1 || rc=1
	# each check's seconds, for make check's list of the slowest
	printf '%s\t%s\n' $((SECONDS - t0)) "$desc" >>"$out/check-times.tsv"
	if [ $rc -eq 0 ]; then
		ok "$desc"
	else
		not_ok "$desc"
		return 1
	fi
}

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

# compat_versions DEV: check-compat on the stream versions, with DEV's
# descriptor as it is (reads=1.3) and as release 0.1 prints it (no reads=):
# to 0.1 compatible only with the source capped at 1.1 (--json says it as
# stream_max), from 0.1 compatible, a stream 1.2 refused by 0.1.
compat_versions() {
	local c="$tooldir/gpumigctl" d old s12
	d=$(cat "$(gpumig_sysdir "$1")/migration/compat")
	echo "$d" | grep -q '^stream=1\.1 reads=1\.3 ' || { echo "descriptor: $d"; return 1; }
	old=$(echo "$d" | sed 's/ reads=[0-9.]*//')
	s12=$(echo "$d" | sed 's/^stream=1\.1/stream=1.2/')
	"$c" check-compat "$d" "$old" |
		grep -qx "compatible with the source's migration/stream_max at 1.1 (the destination reads up to 1.1)" &&
		"$c" --json check-compat "$d" "$old" | grep -q '"compatible": true, .*"stream_max": "1.1"' &&
		"$c" check-compat "$old" "$d" | grep -qx compatible &&
		{ "$c" check-compat "$s12" "$old"; [ $? -eq 1 ]; } &&
		"$c" check-compat "$s12" "$old" |
		grep -qx "incompatible: the source writes stream 1.2, the destination reads up to 1.1"
}

gpumig_sysdir() {
	if [ -e "/sys/bus/mdev/devices/$1" ]; then
		echo "/sys/bus/mdev/devices/$1"
	else
		echo "/sys/bus/pci/devices/$1"
	fi
}

# watch_check DEV: gpumigctl's JSON, read by a JSON parser: two watch
# samples (options after the command), each one object with the schema,
# a UTC timestamp and typed figures; list and status give DEV's object,
# the same with --json anywhere; unquarantine of a device that is not
# quarantined says so and exits 1; a device that is not there likewise.
watch_check() {
	local c="$tooldir/gpumigctl"
	"$c" watch "$1" --json --interval 100 --count 2 >"$out/watch-$1.json" &&
		"$c" --json list >"$out/list.json" && "$c" status "$1" --json >"$out/status-$1.json" ||
		return 1
	{ "$c" unquarantine "$1" 2>"$out/unq-$1.err"; [ $? -eq 1 ]; } &&
		grep -qx "gpumigctl: $1: not quarantined: nothing to lift" "$out/unq-$1.err" &&
		{ "$c" status 0000:7f:1f.7 2>"$out/nodev.err"; [ $? -eq 1 ]; } &&
		grep -q "no such device" "$out/nodev.err" || return 1
	python3 - "$out" "$1" <<'PY'
import json, re, sys
d, dev = sys.argv[1], sys.argv[2]
w = [json.loads(l) for l in open(f"{d}/watch-{dev}.json")]
assert len(w) == 2, w
for x in w:
    assert x["schema"] == 1 and x["device"] == dev and x["state"] == "RUNNING", x
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", x["timestamp"]), x
    assert x["remaining_bytes"] == 0 and isinstance(x["stopcopy_estimate_bytes"], int), x
    assert x["converges_at_link"] is True and x["seconds_left"] == 0, x
    assert x["converging"] in ("yes", "no", "unknown"), x
    assert isinstance(x["throttle_pct"], int), x
lst = [json.loads(l) for l in open(f"{d}/list.json")]
me = [x for x in lst if x["device"] == dev]
st = json.loads(open(f"{d}/status-{dev}.json").read())
assert len(me) == 1 and me[0] == st, (me, st)
assert st["schema"] == 1 and st["migratable"] is True and st["quarantined"] is False, st
assert st["state"] == "RUNNING" and st["dirty_tracking"] in ("device", "none"), st
assert st["reason"] is None and st["last_error"] is None, st
for k in ("remaining_bytes", "precopy_rounds", "resumed_bytes", "dma_log_reports"):
    assert isinstance(st[k], int), (k, st)
c = st["compat"]
assert isinstance(c["vram"], int) and isinstance(c["features"], int), c
assert isinstance(c["type"], str) and c["stream"] == "1.1" and c["descriptor"].startswith("stream="), c
assert re.fullmatch(r"1\.\d", st["stream_max"]), st
PY
}

# migtest NAME ARGS...: vfio-migtest (the vendor-neutral conformance
# suite, tools/vfio-migtest) through the group, and through the iommufd
# cdev where the kernel has one (/dev/iommu: the debug kernel); KTAP into
# OUT/NAME.ktap and OUT/NAME_cdev.ktap.
migtest() {
	local name=$1
	shift
	timeout 600 "$tooldir/vfio-migtest" -N "$name" "$@" >"$out/$name.ktap" 2>>"$out/guest.log"
	echo "vm: vfio-migtest $name exited $?"
	[ -e /dev/iommu ] || return 0
	timeout 600 "$tooldir/vfio-migtest" -c -N "${name}_cdev" "$@" >"$out/${name}_cdev.ktap" \
		2>>"$out/guest.log"
	echo "vm: vfio-migtest ${name}_cdev exited $?"
}

# migtest_mtty: the same on two instances of the kernel's mtty sample
# (the debug kernel builds it), its known failures listed with mtty's
# reasons (tools/vfio-migtest/known-failures/mtty).
migtest_mtty() {
	local ko=$kdir/samples/vfio-mdev/mtty.ko m1 m2 t=/sys/class/mdev_bus/mtty/mdev_supported_types/mtty-2
	[ -n "$kdir" ] && [ -f "$ko" ] || return 0
	check "load the kernel's mtty sample" insmod "$ko" || return 0
	m1=$(cat /proc/sys/kernel/random/uuid)
	m2=$(cat /proc/sys/kernel/random/uuid)
	if check "two mtty-2 instances" sh -c "echo $m1 > $t/create && echo $m2 > $t/create"; then
		migtest migtest_mtty -k "$(dirname "$0")/../../tools/vfio-migtest/known-failures/mtty" \
			-d "$m2" "$m1"
		echo 1 >"/sys/bus/mdev/devices/$m1/remove"
		echo 1 >"/sys/bus/mdev/devices/$m2/remove"
	fi
	check "unload mtty" rmmod mtty
}

# watch_gone: watch of an mdev that is removed meanwhile ends, exit 1,
# and says the device is gone.
watch_gone() {
	local u pid rc
	u=$(cat /proc/sys/kernel/random/uuid)
	echo "$u" >/sys/class/mdev_bus/simgpu/mdev_supported_types/simgpu-64M/create || return 1
	"$tooldir/gpumigctl" --json watch "$u" --interval 100 >"$out/watch-gone.json" 2>"$out/watch-gone.err" &
	pid=$!
	sleep 1
	echo 1 >"/sys/bus/mdev/devices/$u/remove"
	for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.2; done
	kill $pid 2>/dev/null && { echo "watch still runs"; return 1; }
	wait $pid
	rc=$?
	[ $rc -eq 1 ] && grep -qx "gpumigctl: $u: the device is gone" "$out/watch-gone.err"
}

# watch_domain_check DEV: gpumigctl watch --domain against what libvirt
# 11.3's virsh domjobinfo prints (tools/gpumigctl/testdata, through a
# stand-in virsh first on PATH that answers only "domjobinfo -- DOMAIN"
# for the domain named): RAM's figures read as printed, the time left and
# the stop of RAM and the device together computed as the manual page
# says, QEMU's "Expected downtime" left out while it is only the limit
# (no dirty rate), and no RAM figures for no job or a virsh that fails.
# The domain name starts with a dash and holds a space: passed as is.
watch_domain_check() {
	local td bin=$out/fakebin dom='-gpu guest'
	td=$(cd "$(dirname "$0")/../../tools/gpumigctl/testdata" && pwd) || return 1
	mkdir -p "$bin" &&
		printf '#!/bin/sh\n[ "$1" = domjobinfo ] && [ "$2" = -- ] && [ "$3" = "$WANT_DOM" ] && [ $# -eq 3 ] || exit 1\ncat "$FAKE_JOB"\n' \
			>"$bin/virsh" && chmod +x "$bin/virsh" || return 1
	sed 's/^Job type: .*/Job type:         None/' "$td/domjobinfo-11.3-done.txt" >"$out/domjobinfo-none.txt"
	wd() { WANT_DOM=$dom FAKE_JOB=$1 PATH=$bin:$PATH "$tooldir/gpumigctl" --json watch "$2" --count 1 --domain "$3"; }
	wd "$td/domjobinfo-11.3-busy.txt" "$1" "$dom" >"$out/watch-busy.json" &&
		wd "$td/domjobinfo-11.3-done.txt" "$1" "$dom" >"$out/watch-done.json" &&
		wd "$out/domjobinfo-none.txt" "$1" "$dom" >"$out/watch-none.json" &&
		wd "$td/domjobinfo-11.3-busy.txt" "$1" "other" >"$out/watch-nodom.json" || return 1
	python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
ld = lambda n: json.loads(open(f"{d}/watch-{n}.json").read())
busy, done = ld("busy"), ld("done")
MiB = 1048576
def near(a, b):
    return abs(a - b) <= max(0.0015, abs(b) * 1e-3)
for w in (ld("none"), ld("nodom")):
    assert "ram_remaining_bytes" not in w, w
bw = 4.621 * MiB
assert busy["ram_remaining_bytes"] == 12.5 * MiB, busy
assert abs(busy["ram_bandwidth_bytes_per_sec"] - bw) <= 1, busy
assert busy["ram_dirty_bytes_per_sec"] == 256 * 4096, busy
assert busy["ram_expected_downtime_seconds"] == 0.12, busy
rem, est = busy["remaining_bytes"], busy["stopcopy_estimate_bytes"]
red = max(busy["redirty_rate_bytes_per_sec"], 0)
assert near(busy["seconds_left_with_ram"], (12.5 * MiB + rem) / (bw - 256 * 4096 - red)), busy
assert near(busy["downtime_seconds_with_ram"], est / bw + 0.12), busy
assert done["ram_remaining_bytes"] == 0 and done["ram_expected_downtime_seconds"] is None, done
assert near(done["downtime_seconds_with_ram"], done["stopcopy_estimate_bytes"] / bw), done
PY
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
# with QEMU 11.1 (and its system-wide remaining bytes), one ping-pong (the
# hot auto-converge migration after it is one more round trip of checks);
# last, a guest started under QEMU 10.0 (the VM's own, Debian's) on
# pc-q35-10.0 migrates to QEMU 11.1 and back (--cross).
qemu11_lane() {
	local name=$1 dir=$2 root
	shift 2
	[ -s "$out/qemu11-root" ] || return 0
	root=$(qemu11_root) || { check "QEMU 11.1's trixie root mounted in the VM" false; return; }
	vram_trace on
	check "$name" timeout 2400 python3 "$(dirname "$0")/qemu_mig.py" \
		--qemu "chroot $root qemu-system-x86_64" --pingpong 1 --cross qemu-system-x86_64 \
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
	echo 1 > $t/tracing_on	# the kernel's default, for whoever traces next
	return 0
}

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

vf_bind() {
	echo "$2" >"/sys/bus/pci/devices/$1/driver_override" &&
		echo "$1" >/sys/bus/pci/drivers_probe &&
		[ "$(basename "$(readlink "/sys/bus/pci/devices/$1/driver")")" = "$2" ]
}

vf_unbind() {
	echo >"/sys/bus/pci/devices/$1/driver_override"
	echo "$1" >"/sys/bus/pci/devices/$1/driver/unbind"
}

# mig_file ADDR NAME: one file of a VF's migration/ directory.
mig_file() {
	cat "/sys/bus/pci/devices/$1/migration/$2"
}
