# SPDX-License-Identifier: GPL-2.0
#
# The two-host lane, sourced by run.sh: two test VMs ("hosts"), each with
# its own kernel and simgpu, joined by a network only they share, each
# running libvirt 11.3 from a cached bookworm root (scripts/libvirt-root.sh)
# with chroot.  Host A (10.77.0.1, the debug kernel) drives: it defines
# and starts the domain of Documentation/gpumig/libvirt/gpumig-guest.xml
# and migrates it with virsh as libvirt.rst shows; host B (10.77.0.2,
# Debian's kernel) sets up, says it is ready and waits until A is done.
# The hosts meet in SHARED (both VMs have it writable): B's readiness,
# A's end, and each host's guest serial log (SHARED/a-serial,
# SHARED/b-serial), which is how the guest's verdict reaches the test.

LV_DOC=$(cd "$(dirname "$0")/../../Documentation/gpumig/libvirt" && pwd)
LV_DOM=gpumig-guest
LV_U1=0f5d6a8e-5a0c-4c43-9b1e-6d2f00000001	# in gpumig-guest.xml, on both hosts
LV_U2=0f5d6a8e-5a0c-4c43-9b1e-6d2f00000002	# B: another UUID, same type
LV_U3=0f5d6a8e-5a0c-4c43-9b1e-6d2f00000003	# B: simgpu-64M, the wrong type
LV_VF_DOM=gpumig-guest-vf	# gpumig-guest-vf.xml: VF 0 of the first PF, 0000:01:00.1
LV_VF=0000:01:00.1
LV_VF2=0000:01:00.2	# A: VF 1, the destination of the domain Nova rewrote
LV_LOG=gpumig-guest	# the serial log lv_iter reads: /var/log/gpumig/$LV_LOG.log
LV_M=/run/gpumig-libvirt
LV_A=10.77.0.1
LV_B=10.77.0.2

# lv_root: the libvirt root made writable (overlay_root), the docs' XML
# and SHARED bound too, the guest program where the XML has it (a copy:
# libvirt's DAC driver gives it to the libvirt-qemu user while a domain
# runs), /var/log/gpumig on this host's serial directory in SHARED.
# Prints the root.
lv_root() {
	local r
	r=$(overlay_root "$(cat "$out/libvirt-root")" $LV_M "$shared" "$LV_DOC") || return 1
	if ! mountpoint -q $r/var/log/gpumig; then
		mkdir -p $r/usr/local/share/gpumig $r/var/log/gpumig "$shared/$role-serial" &&
			cp "$tooldir/gpumig-guest.elf" $r/usr/local/share/gpumig/gpumig-guest.elf &&
			mount --bind "$shared/$role-serial" $r/var/log/gpumig || return 1
	fi
	echo $r
}

# lv_cgroup: the cgroup v2 hierarchy at /sys/fs/cgroup (the test VMs boot
# without one), before lv_root binds /sys into the root: libvirt puts
# each QEMU in a group of its own and controls its devices there (a BPF
# device program on cgroup v2).
lv_cgroup() {
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup || return 1
	grep -qw memory /sys/fs/cgroup/cgroup.controllers
}

# lv_qemu_runs_as DOMAIN [devices]: the domain's QEMU runs as libvirt-qemu
# (DAC), and, when /sys/fs/cgroup is mounted, in a cgroup of its own under
# libvirt's machine group; with "devices", that group's device control
# holds (a BPF program: not on a kernel without CONFIG_CGROUP_BPF).
# Prints what it saw.
lv_qemu_runs_as() {
	local pid uid cg
	pid=$(pgrep -f "guest=$1," | head -n 1)
	[ -n "$pid" ] || return 1
	uid=$(awk '/^Uid:/ { print $2 }' /proc/$pid/status)
	echo "$1: QEMU $pid runs as uid $uid, cgroup $(cat /proc/$pid/cgroup)"
	[ "$uid" = "$(chroot "$LVR" id -u libvirt-qemu)" ] || return 1
	mountpoint -q /sys/fs/cgroup || return 0
	grep -q "^0::/machine/qemu-[0-9]*-$1.libvirt-qemu\(/\|$\)" /proc/$pid/cgroup || return 1
	[ "${2:-}" = devices ] || return 0
	# Device control: a process of that group opens /dev/zero (libvirt's
	# default cgroup_device_acl) and is refused /dev/kmsg (not in it).
	cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/$pid/cgroup)
	sh -c "echo \$\$ >$cg/cgroup.procs && head -c 1 /dev/zero >/dev/null &&
	       ! head -c 1 /dev/kmsg >/dev/null 2>&1" &&
		echo "in $cg: /dev/zero opened, /dev/kmsg refused"
}

# lv_sshd ROLE: sshd of the root on port 22, root logging in with A's key
# only (SHARED/a.pub; A makes it), for virsh's qemu+ssh:// URIs.
lv_sshd() {
	local i
	mkdir -p "$LVR/run/sshd" "$LVR/root/.ssh" && chmod 700 "$LVR/root/.ssh" || return 1
	if [ "$1" = a ]; then
		[ -s "$LVR/root/.ssh/id_ed25519" ] ||
			chroot "$LVR" ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519 || return 1
		cp "$LVR/root/.ssh/id_ed25519.pub" "$shared/a.pub.tmp" && mv "$shared/a.pub.tmp" "$shared/a.pub"
	fi
	for i in $(seq 600); do
		[ -s "$shared/a.pub" ] && break
		sleep 0.5
	done
	cp "$shared/a.pub" "$LVR/root/.ssh/authorized_keys" &&
		chroot "$LVR" /usr/sbin/sshd
}

# lv_known_hosts: A knows both hosts' keys (ssh-keyscan, as an operator
# would check them).
lv_known_hosts() {
	chroot "$LVR" ssh-keyscan -T 30 -t ed25519 $LV_A $LV_B >"$LVR/root/.ssh/known_hosts" 2>/dev/null &&
		[ "$(grep -c ssh-ed25519 "$LVR/root/.ssh/known_hosts")" -eq 2 ]
}

# lv_net N: the shared network's interface (MAC 52:54:00:77:00:0N) as
# 10.77.0.N.
lv_net() {
	local i n
	modprobe -q virtio_net 2>/dev/null
	for n in $(seq 20); do
		i=$(ip -o link | awk -v mac="52:54:00:77:00:0$1" 'index($0, mac) { sub(":", "", $2); print $2 }')
		[ -n "$i" ] && break
		sleep 0.5
	done
	i=$(ip -o link | awk -v mac="52:54:00:77:00:0$1" 'index($0, mac) { sub(":", "", $2); print $2 }')
	[ -n "$i" ] && ip link set lo up && ip link set "$i" up &&
		ip addr add "10.77.0.$1/24" dev "$i"
}

# lv_daemon N: libvirtd with the docs' configuration and a host UUID of
# its own (the two VMs share one SMBIOS UUID, which libvirt would take for
# "the same host"), listening on TCP; waits until it answers.
lv_daemon() {
	local i
	cat "$LV_DOC/libvirtd.conf" >>"$LVR/etc/libvirt/libvirtd.conf" &&
		echo "host_uuid = \"7e57a000-0000-4000-8000-00000000000$1\"" \
			>>"$LVR/etc/libvirt/libvirtd.conf" &&
		echo 'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"' \
			>>"$LVR/etc/libvirt/libvirtd.conf" &&
		cat "$LV_DOC/qemu.conf" >>"$LVR/etc/libvirt/qemu.conf" &&
		chroot "$LVR" /usr/sbin/virtlogd -d &&
		chroot "$LVR" /usr/sbin/libvirtd -d -l || return 1
	for i in $(seq 300); do
		chroot "$LVR" virsh -c qemu:///system version >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}

# lv_mdev UUID TYPE: an instance, started with mdevctl as libvirt.rst says.
lv_mdev() {
	chroot "$LVR" mdevctl start --uuid "$1" --parent simgpu --type "$2"
}

# lv_vf: simgpu-pf and gpumig-vfio-pci loaded, the first PF's VFs 0 and 1
# given the 256M profile and enabled, VF 0 bound to gpumig-vfio-pci
# (vfio-pci.rst) at the address gpumig-guest-vf.xml names.
lv_vf() {
	local pf
	insmod "$moddir/simgpu-pf.ko" && insmod "$moddir/gpumig-vfio-pci.ko" || return 1
	pf=$(pf_addrs | head -n 1)
	[ -n "$pf" ] && echo 256M >"/sys/bus/pci/devices/$pf/simgpu/vf0_profile" &&
		echo 256M >"/sys/bus/pci/devices/$pf/simgpu/vf1_profile" &&
		echo 2 >"/sys/bus/pci/devices/$pf/sriov_numvfs" &&
		[ "$(vf_addr "$pf" 0)" = $LV_VF ] && vf_bind $LV_VF gpumig-vfio-pci &&
		grep -q 'type=simgpu-vf-256M' /sys/bus/pci/devices/$LV_VF/migration/compat
}

# lv_modules_alias: gpumig-vfio-pci where DKMS puts it, in the libvirt
# root's /lib/modules/$(uname -r)/updates/dkms, indexed by depmod as on a
# host with the package: for <hostdev managed='yes'> libvirt (10.0 and
# later) picks the VFIO variant driver whose "alias vfio_pci:..." line in
# that modules.alias matches the function's modalias best.  (Without the
# file libvirt refuses managed='yes' hostdevs; without the line it binds
# plain vfio-pci, and QEMU then refuses enable-migration=on.)
lv_modules_alias() {
	local d=$LVR/lib/modules/$(uname -r)
	mkdir -p "$d/updates/dkms" && cp "$moddir/gpumig-vfio-pci.ko" "$d/updates/dkms/" &&
		depmod -b "$LVR" "$(uname -r)" 2>/dev/null &&
		grep -q '^alias vfio_pci:v00001234d00005347sv\*sd\*bc\*sc\*i\* gpumig_vfio_pci$' "$d/modules.alias"
}

# lv_nova_host: what else a Nova compute host of the VF recipe may have
# bound to VFIO: the first PF's VF 1 on plain vfio-pci (no migration) and
# the second PF bound whole to vfio-pci.  After lv_vf.
lv_nova_host() {
	local pf pf2 vf1
	set -- $(pf_addrs)
	pf=$1 pf2=${2:-}
	vf1=$(vf_addr "$pf" 1)
	[ -n "$pf2" ] && [ -n "$vf1" ] || return 1
	vf_unbind "$vf1" 2>/dev/null
	vf_bind "$vf1" vfio-pci || return 1
	echo "$pf2" >"/sys/bus/pci/devices/$pf2/driver/unbind" 2>/dev/null
	vf_bind "$pf2" vfio-pci
}

# lv_nova_capture DIR: what nova-compute reads on this host, for the Nova
# lane (scripts/nova-judge.sh): the versions libvirt reports, every PCI
# node device's XML, what gpumigctl nova-config prints, the simgpu
# functions with their drivers ("none" for an unbound one: the lane's
# expectations), and the VF
# domain's migratable XML as libvirt gives it to Nova (defined, dumped,
# undefined again: B receives the domain later).
lv_nova_capture() {
	local d=$1 n a list
	drv() { local l; l=$(readlink "/sys/bus/pci/devices/$1/driver") && echo "${l##*/}" || echo none; }
	mkdir -p "$d/nodedev" || return 1
	lv_virsh -c qemu:///system version >"$d/version.txt" &&
		list=$(lv_virsh -c qemu:///system nodedev-list --cap pci) || return 1
	for n in $list; do
		lv_virsh -c qemu:///system nodedev-dumpxml "$n" >"$d/nodedev/$n.xml" || return 1
	done
	# The modules.alias this host's libvirt reads is its root's.
	"$tooldir/gpumigctl" nova-config --modules-alias "$LVR/lib/modules/$(uname -r)/modules.alias" \
		>"$d/nova-config.txt" || return 1
	for a in $(pf_addrs); do
		echo "$a pf $(drv "$a")"
		for n in /sys/bus/pci/devices/$a/virtfn*; do
			[ -e "$n" ] || continue
			n=$(basename "$(readlink -f "$n")")
			echo "$n vf $(drv "$n")"
		done
	done >"$d/functions.txt"
	# Every simgpu function is a node device libvirt reports.
	while read -r a n; do
		[ -s "$d/nodedev/pci_${a//[:.]/_}.xml" ] || { echo "no node device for $a"; return 1; }
	done <"$d/functions.txt"
	uname -r >"$d/kernel.txt"
	lv_virsh define "$LV_DOC/gpumig-guest-vf.xml" >/dev/null &&
		lv_virsh dumpxml --migratable $LV_VF_DOM >"$d/domain-vf.xml" &&
		lv_virsh undefine $LV_VF_DOM >/dev/null
}

# lv_iter ROLE: the guest's last verified iteration in ROLE's serial log.
lv_iter() {
	grep -ao 'gpumig-guest: iter [0-9]* ok' "$shared/$1-serial/$LV_LOG.log" 2>/dev/null |
		tail -n 1 | awk '{ print $3 }'
}

# lv_verifying ROLE N: ROLE's guest passes iteration N + 3 with no failure.
lv_verifying() {
	local i it
	for i in $(seq 600); do
		grep -aq FAIL "$shared/$1-serial/$LV_LOG.log" 2>/dev/null && break
		it=$(lv_iter "$1")
		[ "${it:-0}" -ge $(($2 + 3)) ] && return 0
		sleep 0.5
	done
	echo "$1's guest: last iteration ${it:-none} (wanted $(($2 + 3)))"
	lv_keep_serial "not-verifying-on-$1"
	grep -a FAIL "$shared/$1-serial/$LV_LOG.log" | head -n 3
	return 1
}

# virsh as the operator types it on host A; "-c qemu+tcp://..." for B.
lv_virsh() {
	chroot "$LVR" virsh "$@"
}

# lv_migrate FROM TO [virsh migrate options]: the guest (domain $LV_DOM)
# moves from host FROM to host TO (addresses) as libvirt.rst shows, virsh
# reaching both daemons over ssh (qemu+ssh://),
# sampled with domjobinfo while it runs (OUT/domjobinfo.txt).  Nothing
# else talks to the source's QEMU meanwhile (a monitor command beside the
# job was seen to leave virsh migrate waiting for ever after the
# switchover).  The VF domain from host B (Debian's kernel: no DMA
# logging, so type1 reports all guest memory dirty in every round) gets a
# higher allowed downtime first, as libvirt.rst tells operators: its job
# never ended at libvirt's 300 ms, nor at 5 s (QEMU expected 10 s: all 64
# MiB again at 6 MiB/s).  The mdev domain keeps libvirt's 300 ms: type1
# reports only the pages its device wrote, and at 30 s QEMU 10.0 under
# TCG switched over after its first 100 ms, when guest pages written
# since they were sent can still be untracked (testing.rst: 2 of 27 such
# migrations broke the guest).  A job that has not ended in 15 minutes
# fails the check (virsh's exit aborts it; the guest stays).
lv_migrate() {
	local from=$1 to=$2 pid rc
	shift 2
	if [ "$from" = "$LV_B" ] && [ "$LV_DOM" = "$LV_VF_DOM" ]; then
		lv_virsh -c "qemu+tcp://$from/system" migrate-setmaxdowntime $LV_DOM 30000 &&
			echo "allowed downtime from B: $(lv_virsh -c "qemu+tcp://$from/system" \
				migrate-getmaxdowntime $LV_DOM) ms" || return 1
	fi
	timeout 900 chroot "$LVR" virsh -c "qemu+ssh://root@$from/system" migrate --live --verbose "$@" \
		$LV_DOM "qemu+ssh://root@$to/system" --migrateuri "tcp://$to" &
	pid=$!
	# What this host's CPUs do a minute into the job, and its TCP
	# retransmissions over it (OUT/during-FROM-TO.txt): the lane's
	# migrations took minutes with little sent, and the host's own
	# UDP counters showed no drop of the VMs' network.
	local t0 tops=0 rt0
	t0=$(date +%s) rt0=$(awk '/^Tcp: [0-9]/ { print $13 }' /proc/net/snmp)
	while kill -0 $pid 2>/dev/null; do
		lv_virsh -c "qemu+tcp://$from/system" domjobinfo $LV_DOM >"$out/domjobinfo.now" 2>&1 &&
			grep -q 'Data remaining' "$out/domjobinfo.now" && cp "$out/domjobinfo.now" "$out/domjobinfo.txt"
		if [ $tops = 0 ] && [ $(($(date +%s) - t0)) -ge 60 ]; then
			# top's first frame averages since boot: its second.
			top -b -n 2 -d 1 -w 160 | awk '/^top -/ { f++ } f == 2' | head -n 25 \
				>"$out/during-$from-$to.txt" 2>&1
			tops=1
		fi
		sleep 0.5
	done
	echo "TCP segments retransmitted by this host during the job: $(($(awk '/^Tcp: [0-9]/ { print $13 }' /proc/net/snmp) - rt0)), $(($(date +%s) - t0)) s" \
		>>"$out/during-$from-$to.txt"
	wait $pid
	rc=$?
	lv_keep_serial "$from-$to"
	return $rc
}

# lv_watch: on host B, from the VF's binding until A is done, what an
# operator runs on a source host: gpumigctl --json watch of VF $LV_VF
# with --domain $LV_VF_DOM, every second, into OUT/watch-domain.json.
# B sends that domain back to A twice (tens of seconds each: no DMA
# logging on Debian's kernel).  Its virsh is the root's under libvirt's
# default URI for root (qemu:///system), through a wrapper first on PATH
# that runs it by its full path (the root has OUT, and so the wrapper).
lv_watch() {
	local bin=$out/lvbin
	mkdir -p "$bin" && printf '#!/bin/sh\nexec chroot %s /usr/bin/virsh "$@"\n' "$LVR" >"$bin/virsh" &&
		chmod +x "$bin/virsh" || return 1
	PATH=$bin:$PATH "$tooldir/gpumigctl" --json watch $LV_VF --interval 1000 --domain $LV_VF_DOM \
		>"$out/watch-domain.json" 2>"$out/watch-domain.err" &
	LV_WATCH=$!
}

# lv_watch_saw: watch's samples during a migration of the domain away,
# once libvirt has measured a bandwidth, carry libvirt's RAM figures and
# the whole migration's time left and downtime, as gpumigctl(8) computes
# them from the figures beside.  (Allowed 30 s, QEMU switches over at its
# first check: most samples find the VF in STOP_COPY.)
lv_watch_saw() {
	python3 - "$out/watch-domain.json" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    w = json.loads(line)
    if "ram_remaining_bytes" not in w or w["ram_bandwidth_bytes_per_sec"] <= 0:
        continue
    bw = w["ram_bandwidth_bytes_per_sec"]
    dirty = w["ram_dirty_bytes_per_sec"] + max(w["redirty_rate_bytes_per_sec"], 0)
    if bw <= dirty:
        assert w["converges_with_ram"] is False and w["seconds_left_with_ram"] is None, w
        n += 1
        continue
    left = (w["ram_remaining_bytes"] + w["remaining_bytes"]) / (bw - dirty)
    stop = w["stopcopy_estimate_bytes"] / bw + (w["ram_expected_downtime_seconds"] or 0)
    assert abs(w["seconds_left_with_ram"] - left) <= max(0.002, left * 0.01), (w, left)
    assert abs(w["downtime_seconds_with_ram"] - stop) <= max(0.002, stop * 0.01), (w, stop)
    n += 1
print(f"{n} samples during the job with libvirt's figures")
sys.exit(0 if n else 1)
PY
}

# lv_nova_rewrite FROM SRC DST: the domain running on host FROM, its
# migratable XML as Nova's driver dumps it (SHARED/nova-rewrite/in.xml),
# rewritten by Nova 31's own get_updated_guest_xml with the PCI map SRC ->
# DST.  Nova runs on the machine that started the VMs (scripts/check.sh
# answers SHARED/nova-rewrite/request with scripts/nova-judge.sh
# --rewrite: importing Nova in an emulated VM takes minutes).  Leaves
# SHARED/nova-rewrite/out.xml.
lv_nova_rewrite() {
	local d=$shared/nova-rewrite i
	rm -rf "$d" && mkdir -p "$d" &&
		lv_virsh -c "qemu+tcp://$1/system" dumpxml --migratable $LV_DOM >"$d/in.xml" &&
		echo "$2 $3" >"$d/request" || return 1
	for i in $(seq 300); do
		[ -e "$d/answered" ] && break
		sleep 1
	done
	cat "$d/log" 2>/dev/null
	[ "$(cat "$d/answered" 2>/dev/null)" = 0 ] && [ -s "$d/out.xml" ]
}

# lv_vf_released PCI: after a managed='yes' domain left, PCI is free on
# this host within 30 s: no QEMU holds it, and it is unbound (libvirt gave
# it back to its host driver, none for a VF of gpumig-vfio-pci's
# override-only ID table: what virsh destroy did in a run by hand) or
# still on gpumig-vfio-pci (what libvirt 11.3 left after the migration
# away in the lane's runs).  Prints which.
lv_vf_released() {
	local i d
	for i in $(seq 60); do
		pgrep -f "\"host\":\"$1\"" >/dev/null || break
		sleep 0.5
	done
	pgrep -f "\"host\":\"$1\"" >/dev/null && { echo "$1: a QEMU still holds it"; return 1; }
	d=$(basename "$(readlink "/sys/bus/pci/devices/$1/driver")")
	echo "$1: ${d:-unbound} after the domain left (driver_override ${d:+$(cat "/sys/bus/pci/devices/$1/driver_override")})"
	[ -z "$d" ] || [ "$d" = gpumig-vfio-pci ]
}

# lv_hostdev_on ADDR PCI: the domain running on host ADDR has the one
# PCI hostdev PCI (libvirt's live XML).
lv_hostdev_on() {
	local f=${2##*.} b=${2#*:}
	b=${b%%:*}
	lv_virsh -c "qemu+tcp://$1/system" dumpxml $LV_DOM |
		grep -A3 "<hostdev mode='subsystem' type='pci'" |
		grep -q "<address domain='0x0000' bus='0x$b' slot='0x00' function='0x$f'/>"
}

# lv_keep_serial TAG: both hosts' serial logs of $LV_DOM as they are now,
# kept as OUT/serial/N-TAG-{a,b}.log (a domain started or migrated in
# later truncates its host's file).
lv_keep_serial() {
	local h
	LV_SERIAL_N=$((${LV_SERIAL_N:-0} + 1))
	mkdir -p "$out/serial"
	for h in a b; do
		cp "$shared/$h-serial/$LV_LOG.log" "$out/serial/$LV_SERIAL_N-$LV_DOM-$1-$h.log" 2>/dev/null
	done
	# and what host A's instance says of its last migration
	grep -r . /sys/bus/mdev/devices/$LV_U1/migration/ \
		>"$out/serial/$LV_SERIAL_N-$LV_DOM-$1-mdev-a.txt" 2>&1
	return 0
}

lv_running_on() {
	[ "$(lv_virsh -c "qemu+tcp://$1/system" domstate $LV_DOM 2>/dev/null | head -n 1)" = running ]
}

# lv_runs_on ADDR ROLE N: the domain runs on host ADDR and its guest passes
# iteration N + 3 there (ROLE's serial log).
lv_runs_on() {
	lv_running_on "$1" && lv_verifying "$2" "$3"
}

# lv_qemu_logs ROLE: each domain's QEMU log on this host (libvirt appends
# every QEMU process's stderr: a device state QEMU failed to set, and the
# reset it did instead, show there) as OUT/qemu-ROLE-DOMAIN.log.
lv_qemu_logs() {
	local f
	for f in "$LVR"/var/log/libvirt/qemu/*.log; do
		[ -f "$f" ] && cp "$f" "$out/qemu-$1-$(basename "$f")"
	done
	return 0
}

# lv_b_end: B's checks of what A did, on today's modules (each reads a
# file of this release), and its logs.
lv_b_end() {
	local i
	check "B: the domain that arrived ran as libvirt-qemu (DAC), in its own cgroup v2 group whose device control held" \
		sh -c "[ -n '$1' ] && cat $out/qemu-runs-as.txt"
	kill $LV_WATCH 2>/dev/null
	check "B: gpumigctl watch --domain while B sent the VF domain back: libvirt's RAM figures and the whole migration's" \
		lv_watch_saw
	check "B: the simgpu-64M instance refused A's simgpu-256M stream and says why" \
		grep -q "type mismatch: source simgpu-256M, destination simgpu-64M" \
		/sys/bus/mdev/devices/$LV_U3/migration/last_error
	check "B: the instance A migrated to through --xml names the stream's producer" \
		grep -q "^gpumig/" /sys/bus/mdev/devices/$LV_U2/migration/source
	for i in $LV_U1 $LV_U2 $LV_U3; do
		echo "$i: $(cat /sys/bus/mdev/devices/$i/migration/status 2>&1)"
	done >"$out/instances-b.txt"
}

# lv_b_swap: B becomes a host of the older release (the first line of
# OUT/releases: scripts/release.sh built it for this kernel): no domain
# left here, its instances stopped and SR-IOV off, today's modules out,
# the older gpumig.ko and simgpu.ko in, $LV_U1 started again; its
# migration/compat descriptor in SHARED/b-compat for A's check-compat.
lv_b_swap() {
	local ver dir u pf vf
	read -r ver dir <"$out/releases" || return 1
	for u in $LV_U1 $LV_U2 $LV_U3; do
		chroot "$LVR" mdevctl stop --uuid $u || return 1
	done
	# simgpu-pf keeps SR-IOV on while a VF is bound to a driver ("claimed
	# by its migration driver", or "in use, bound to a driver": the Nova
	# host's VF on plain vfio-pci): every bound VF is unbound first.
	pf=$(pf_addrs | head -n 1)
	for vf in /sys/bus/pci/devices/$pf/virtfn*; do
		[ -e "$vf/driver" ] &&
			{ vf_unbind "$(basename "$(readlink -f "$vf")")" || return 1; }
	done
	echo 0 >"/sys/bus/pci/devices/$pf/sriov_numvfs" &&
		unload_gpumig && insmod "$dir/gpumig.ko" && insmod "$dir/simgpu.ko" &&
		[ "$(cat /sys/module/gpumig/version)" = "$ver" ] &&
		lv_mdev $LV_U1 simgpu-256M &&
		cat /sys/bus/mdev/devices/$LV_U1/migration/compat >"$shared/b-compat" &&
		echo "B: gpumig $(cat /sys/module/gpumig/version), $LV_U1: $(cat "$shared/b-compat")"
}

# host B: set up, say so, wait for A; halfway through A's last part,
# become a host of the older release (lv_b_swap) when A asks.
libvirt_b() {
	local i seen= ended= rel
	rel=$(awk 'NR == 1 { print "gpumig " $1 }' "$out/releases" 2>/dev/null)
	check "B: load the VFIO stack, gpumig.ko and simgpu.ko" bash -c \
		"$(declare -f unload_gpumig vfio_stack); kdir='$kdir'; unload_gpumig && vfio_stack && insmod $moddir/gpumig.ko && insmod $moddir/simgpu.ko"
	check "B: the network to host A ($LV_B)" lv_net 2
	check "B: cgroup v2 mounted, for libvirt's groups and device control" lv_cgroup
	LVR=$(lv_root) || { check "B: the libvirt root" false; return; }
	check "B: libvirtd $(chroot "$LVR" virsh --version) (QEMU $(chroot "$LVR" qemu-system-x86_64 --version | head -n 1 | awk '{ print $4 }')) answers" lv_daemon 2
	check "B: mdevctl starts simgpu-256M $LV_U1 and $LV_U2, simgpu-64M $LV_U3" bash -c \
		"$(declare -f lv_mdev); LVR=$LVR; lv_mdev $LV_U1 simgpu-256M && lv_mdev $LV_U2 simgpu-256M &&
		 lv_mdev $LV_U3 simgpu-64M"
	check "B: simgpu-pci VF $LV_VF (256M) on gpumig-vfio-pci" lv_vf
	check "B: gpumig-vfio-pci in modules.alias, as DKMS and depmod leave it" lv_modules_alias
	check "B: a VF on plain vfio-pci, the second PF whole on vfio-pci (a Nova host)" lv_nova_host
	check "B: what nova-compute reads, captured for the Nova lane" lv_nova_capture "$out/nova-capture"
	check "B: gpumigctl watch --domain $LV_VF_DOM on VF $LV_VF, in the background" lv_watch
	check "B: sshd, root's login by host A's key (virsh's qemu+ssh://)" lv_sshd b
	touch "$shared/b-ready"
	for i in $(seq 3600); do
		[ -e "$shared/a-done" ] && break
		# The first domain to arrive: how its QEMU runs here.
		[ -n "$seen" ] || { lv_qemu_runs_as $LV_DOM devices >"$out/qemu-runs-as.txt" 2>&1 && seen=1; }
		if [ -e "$shared/b-swap" ] && [ -z "$ended" ]; then
			lv_b_end "$seen"
			ended=1
			if check "B: ${rel:-an older release (none was built)} loaded in place of today's, $LV_U1 started again" \
				lv_b_swap; then
				touch "$shared/b-swapped"
			else
				touch "$shared/b-swap-failed"
			fi
		fi
		sleep 1
	done
	check "B: host A finished" test -e "$shared/a-done"
	[ -n "$ended" ] || lv_b_end "$seen"
	cp "$LVR/var/log/libvirt/libvirtd.log" "$out/libvirtd-b.log" 2>/dev/null
	lv_qemu_logs b
}

# lv_releases: two releases in one pool (operating.rst).  B turns into a
# host of the older release (lv_b_swap); a guest started there moves to
# A (today's) and back, A's instance capped at the stream version
# gpumigctl check-compat names for B's descriptor.
lv_releases() {
	local i it cap
	LV_DOM=gpumig-guest LV_LOG=gpumig-guest
	touch "$shared/b-swap"
	for i in $(seq 300); do
		[ -e "$shared/b-swapped" ] || [ -e "$shared/b-swap-failed" ] && break
		sleep 1
	done
	check "A: host B now runs the older release" test -e "$shared/b-swapped" || return
	check "A: B (older release) starts gpumig-guest on its simgpu-256M $LV_U1" \
		lv_virsh -c "qemu+tcp://$LV_B/system" create "$LV_DOC/gpumig-guest.xml"
	check "A: the guest drives its simgpu on B (older release)" lv_verifying b 0 || return
	it=$(lv_iter b)
	check "A: virsh migrate --live gpumig-guest from B (older release) to A (today's)" \
		lv_migrate $LV_B $LV_A
	check "A: the guest runs on A and verifies 3 more iterations" lv_runs_on $LV_A a "${it:-0}"
	# Both directions, as operating.rst says; then A's instance pinned to
	# the stream version the older release writes itself (B's stream=), as
	# a pool being upgraded pins its devices, or to the cap check-compat
	# names if it names one.
	"$tooldir/gpumigctl" check-compat "$(cat "$shared/b-compat")" $LV_U1 >"$out/check-compat-b-a.txt"
	check "A: gpumigctl check-compat: B's instance (older release) to A's: $(cat "$out/check-compat-b-a.txt")" \
		grep -q '^compatible' "$out/check-compat-b-a.txt"
	"$tooldir/gpumigctl" check-compat $LV_U1 "$(cat "$shared/b-compat")" >"$out/check-compat-a-b.txt"
	check "A: gpumigctl check-compat: A's instance to B's (older release): $(cat "$out/check-compat-a-b.txt")" \
		grep -q '^compatible' "$out/check-compat-a-b.txt"
	cap=$(sed -n 's/^compatible with the source.s migration\/stream_max at \([0-9.]*\) .*/\1/p' \
		"$out/check-compat-a-b.txt")
	[ -n "$cap" ] || cap=$(tr ' ' '\n' <"$shared/b-compat" | sed -n 's/^stream=//p')
	check "A: migration/stream_max of $LV_U1 set to ${cap:-?}, the older release's stream version" \
		sh -c "[ -n '$cap' ] && echo $cap >/sys/bus/mdev/devices/$LV_U1/migration/stream_max &&
		       [ \"\$(cat /sys/bus/mdev/devices/$LV_U1/migration/stream_max)\" = $cap ]"
	it=$(lv_iter a)
	check "A: virsh migrate --live gpumig-guest from A (today's, capped) back to B (older release)" \
		lv_migrate $LV_A $LV_B
	check "A: the guest runs on B (older release) and verifies 3 more iterations" \
		lv_runs_on $LV_B b "${it:-0}"
	lv_virsh -c "qemu+tcp://$LV_B/system" destroy $LV_DOM >/dev/null 2>&1
}

# host A: the operator's commands of libvirt.rst, each a check.
libvirt_a() {
	local i it x
	check "A: load the VFIO stack, gpumig.ko and simgpu.ko" bash -c \
		"$(declare -f unload_gpumig vfio_stack); kdir='$kdir'; unload_gpumig && vfio_stack && insmod $moddir/gpumig.ko && insmod $moddir/simgpu.ko"
	check "A: the network to host B ($LV_A)" lv_net 1
	LVR=$(lv_root) || { check "A: the libvirt root" false; touch "$shared/a-done"; return; }
	check "A: libvirtd answers" lv_daemon 1
	check "A: sshd, and root's key for both hosts (virsh's qemu+ssh://)" lv_sshd a
	check "A: mdevctl starts simgpu-256M $LV_U1" lv_mdev $LV_U1 simgpu-256M
	check "A: simgpu-pci VF $LV_VF (256M) on gpumig-vfio-pci" lv_vf
	check "A: gpumig-vfio-pci in modules.alias, as DKMS and depmod leave it" lv_modules_alias
	check "A: what nova-compute reads, captured for the Nova lane" lv_nova_capture "$out/nova-capture"
	check "A: VF 1 ($LV_VF2, 256M) on gpumig-vfio-pci too: where Nova's rewrite sends the VF domain" \
		vf_bind $LV_VF2 gpumig-vfio-pci
	for i in $(seq 600); do
		[ -e "$shared/b-ready" ] && break
		sleep 1
	done
	if ! check "A: host B is ready and answers over TCP" lv_virsh -c "qemu+tcp://$LV_B/system" version ||
		! check "A: both hosts' ssh keys known (ssh-keyscan)" lv_known_hosts ||
		! check "A: virsh -c qemu+ssh://root@$LV_B/system answers" \
			lv_virsh -c "qemu+ssh://root@$LV_B/system" version; then
		touch "$shared/a-done"
		return
	fi
	check "A: virsh define gpumig-guest.xml; virsh start gpumig-guest" sh -c \
		"chroot $LVR virsh define $LV_DOC/gpumig-guest.xml && chroot $LVR virsh start $LV_DOM"
	check "A: the guest drives its simgpu (serial log)" lv_verifying a 0
	check "A: its QEMU runs as libvirt-qemu (DAC), in a cgroup of its own (no device control: no CONFIG_CGROUP_BPF)" \
		lv_qemu_runs_as $LV_DOM

	# A destination instance of another type: refused, the source runs on.
	lv_virsh dumpxml --migratable $LV_DOM | sed "s/$LV_U1/$LV_U3/" >"$out/dst-64M.xml"
	it=$(lv_iter a)
	check "A: migrating to B's simgpu-64M instance (--xml) fails" \
		sh -c "! chroot $LVR virsh migrate --live --verbose --xml $out/dst-64M.xml $LV_DOM \
			qemu+tcp://$LV_B/system --migrateuri tcp://$LV_B"
	check "A: ... and the guest keeps running and verifying on A" lv_runs_on $LV_A a ${it:-0}
	# (B checks that its instance named the mismatch, at the end.)

	# A to B, sampled with domjobinfo, and back: Debian's kernel (B) has
	# no DMA logging; the override in the XML lets QEMU migrate anyway.
	it=$(lv_iter a)
	check "A: virsh migrate --live gpumig-guest to B" lv_migrate $LV_A $LV_B
	# What libvirt set in the destination's QEMU for the incoming job.
	lv_virsh -c "qemu+tcp://$LV_B/system" qemu-monitor-command $LV_DOM \
		'{"execute":"query-migrate-capabilities"}' >"$out/migrate-caps.txt" 2>&1
	x=$(grep -o '"capability":"switchover-ack","state":[a-z]*\|"state":[a-z]*,"capability":"switchover-ack"' \
		"$out/migrate-caps.txt" | grep -o 'true\|false')
	check "A: QEMU's migration capabilities of the destination after the job: switchover-ack ${x:-unknown}" \
		test -n "$x"
	check "A: the guest runs on B and keeps verifying there (B's serial log)" lv_runs_on $LV_B b 0
	check "A: virsh migrate --live gpumig-guest back from B to A" lv_migrate $LV_B $LV_A
	check "A: the guest runs on A again and keeps verifying" lv_runs_on $LV_A a 0
	# More round trips when asked (check.sh --round-trips N).
	for i in $(seq "$(cat "$shared/round-trips" 2>/dev/null || echo 0)"); do
		it=$(lv_iter a)
		if ! { check "A: round trip $i: to B" lv_migrate $LV_A $LV_B &&
			check "A: round trip $i: the guest verifies 3 more iterations on B" \
				lv_runs_on $LV_B b "${it:-0}" &&
			it=$(lv_iter b) &&
			check "A: round trip $i: back to A" lv_migrate $LV_B $LV_A &&
			check "A: round trip $i: the guest verifies 3 more iterations on A" \
				lv_runs_on $LV_A a "${it:-0}"; }; then
			break
		fi
	done

	# A destination instance with another UUID, through --xml.
	lv_virsh dumpxml --migratable $LV_DOM | sed "s/$LV_U1/$LV_U2/" >"$out/dst-other-uuid.xml"
	check "A: virsh migrate --xml: B's instance $LV_U2" \
		lv_migrate $LV_A $LV_B --xml "$out/dst-other-uuid.xml"
	check "A: the guest runs on B's $LV_U2 and keeps verifying" lv_runs_on $LV_B b 0
	lv_virsh -c "qemu+tcp://$LV_B/system" destroy $LV_DOM >/dev/null 2>&1

	# Without the override, Debian's kernel (no DMA logging) cannot be
	# migrated from: QEMU blocks it and libvirt refuses.
	sed '/<qemu:override>/,/<\/qemu:override>/d' "$LV_DOC/gpumig-guest.xml" >"$out/no-override.xml"
	check "B (Debian's kernel): a domain without the override starts" \
		sh -c "chroot $LVR virsh -c qemu+tcp://$LV_B/system create $out/no-override.xml"
	x=$(lv_virsh -c "qemu+tcp://$LV_B/system" migrate --live $LV_DOM "qemu+tcp://$LV_A/system" \
		--migrateuri "tcp://$LV_A" 2>&1)
	echo "$x" >"$out/no-override-refusal.txt"
	check "B: without the override, libvirt refuses to migrate it: QEMU's dirty-tracking blocker" \
		grep -qi 'dirty tracking' "$out/no-override-refusal.txt"
	lv_virsh -c "qemu+tcp://$LV_B/system" destroy $LV_DOM >/dev/null 2>&1
	lv_virsh destroy $LV_DOM >/dev/null 2>&1

	# The same with a VF on gpumig-vfio-pci as a PCI hostdev.
	LV_DOM=$LV_VF_DOM LV_LOG=$LV_VF_DOM
	check "A: virsh define gpumig-guest-vf.xml; virsh start gpumig-guest-vf (VF $LV_VF)" sh -c \
		"chroot $LVR virsh define $LV_DOC/gpumig-guest-vf.xml && chroot $LVR virsh start $LV_DOM"
	check "A: the guest drives its VF (serial log)" lv_verifying a 0
	check "A: virsh migrate --live gpumig-guest-vf to B" lv_migrate $LV_A $LV_B
	check "A: the VF guest runs on B and keeps verifying there" lv_runs_on $LV_B b 0
	# Back as Nova sends it: the domain's XML rewritten by Nova's own code
	# for another VF of A (the PCI device map of a Nova live migration).
	check "A: Nova 31's get_updated_guest_xml rewrites B's running domain for A's VF $LV_VF2" \
		lv_nova_rewrite $LV_B $LV_VF $LV_VF2
	check "A: virsh migrate --live --xml (Nova's rewrite) gpumig-guest-vf back from B to A's $LV_VF2" \
		lv_migrate $LV_B $LV_A --xml "$shared/nova-rewrite/out.xml"
	check "A: the VF guest runs on A again, on $LV_VF2 (libvirt's live XML)" lv_hostdev_on $LV_A $LV_VF2
	check "A: ... and keeps verifying" lv_runs_on $LV_A a 0
	lv_virsh destroy $LV_DOM >/dev/null 2>&1

	# As Nova writes it: <hostdev managed='yes'>, the VF left unbound
	# (libvirt finds gpumig-vfio-pci through modules.alias), and no
	# <qemu:override>: QEMU's default enable-migration=auto, which
	# migrates only with dirty tracking, here the VF's DMA logging on A's
	# 7.3 kernel.
	sed -e "s/managed='no'/managed='yes'/" -e '/<qemu:override>/,/<\/qemu:override>/d' \
		"$LV_DOC/gpumig-guest-vf.xml" >"$out/vf-managed.xml"
	check "A: VF $LV_VF unbound, for libvirt to bind" vf_unbind $LV_VF
	lv_virsh undefine $LV_DOM >/dev/null 2>&1
	check "A: virsh define + start a domain as Nova writes it: <hostdev managed='yes'> (VF $LV_VF), no override" sh -c \
		"chroot $LVR virsh define $out/vf-managed.xml && chroot $LVR virsh start $LV_DOM"
	check "A: libvirt bound VF $LV_VF to gpumig-vfio-pci, found through modules.alias" \
		test "$(basename "$(readlink /sys/bus/pci/devices/$LV_VF/driver)")" = gpumig-vfio-pci
	check "A: the managed='yes' guest drives its VF" lv_verifying a 0
	check "A: virsh migrate --live it to B (QEMU's enable-migration=auto: the VF's DMA logging)" \
		lv_migrate $LV_A $LV_B
	check "A: it runs on B and keeps verifying there" lv_runs_on $LV_B b 0
	lv_virsh -c "qemu+tcp://$LV_B/system" destroy $LV_DOM >/dev/null 2>&1
	check "A: VF $LV_VF free again after the migration (no QEMU; unbound or on gpumig-vfio-pci)" \
		lv_vf_released $LV_VF
	# Sampled every half second, a short job can end unseen: one of the
	# five must have been caught (the three mdev ones alone were missed
	# in a run on 2026-12-06).
	check "A: virsh domjobinfo during a migration showed the job and its data remaining" \
		grep -q 'Data remaining' "$out/domjobinfo.txt"
	lv_releases
	cp "$LVR/var/log/libvirt/libvirtd.log" "$out/libvirtd-a.log" 2>/dev/null
	lv_qemu_logs a
	touch "$shared/a-done"
}
