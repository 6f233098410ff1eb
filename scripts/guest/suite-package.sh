# SPDX-License-Identifier: GPL-2.0
#
# The package suite: gpumig-dkms and gpumig-tools on a Debian host, as an
# operator meets them.
# Sourced by run.sh (which says what each mode runs).

# The VM runs on the project's QEMU with simgpu-pci: the PCI suite too, in
# the same boot.
# package_suite: the packages gpumig-dkms and gpumig-tools (scripts/deb.sh)
# on a Debian host (scripts/bookworm-root.sh: Debian's kernel image and
# headers, DKMS, udev, mdevctl), the way an operator meets them: apt
# installed them (DKMS built the modules for this kernel; natively on the
# host, in the root this VM gets as a disk, scripts/pkg-root.sh), a boot
# loads no simgpu until the operator writes the documented switch, mdevctl
# defines two auto-start instances, the boot-time steps run
# (systemd-modules-load, then udevd's coldplug; and again with udevd
# already running), the instances come back and migrate, gpumigctl lists
# them, gpumig-bugreport describes them, and removal in the documented
# order leaves nothing behind.  The root is an
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
	for d in /dev /proc /sys "$out" "$tooldir" "$(dirname "$(head -n 1 "$out/pkg-deb")")"; do
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
	if in_root dpkg-query -W -f='${Status}' gpumig-dkms gpumig-tools 2>/dev/null |
		grep -c "install ok installed" | grep -qx 2; then
		echo "package: installed with apt natively before boot (pkg-install-native.log)" \
			>"$out/pkg-install.log"
	else
		# shellcheck disable=SC2046 # the two paths, one a line
		DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q \
			$(cat "$out/pkg-deb") >"$out/pkg-install.log" 2>&1 ||
			{ cat "$out/pkg-install.log"; return 1; }
		echo "package: apt install took $(($(date +%s) - t0)) s" | tee -a "$out/pkg-install.log"
	fi
	in_root dkms status gpumig | tee -a "$out/pkg-install.log" | grep -q "gpumig/.*, $k, .*: installed" &&
		for m in gpumig simgpu simgpu-pf gpumig-vfio-pci; do
			in_root modinfo -k "$k" -n $m | grep -q "^/lib/modules/$k/updates/dkms/$m.ko" || return 1
		done &&
		in_root dpkg -L gpumig-dkms gpumig-tools >"$out/pkg-files.txt" &&
		for f in /usr/sbin/gpumigctl /usr/sbin/gpumig-mover /usr/sbin/gpumig-bugreport \
			/usr/sbin/vfio-migtest /usr/share/man/man8/gpumigctl.8.gz \
			/usr/share/man/man8/gpumig-mover.8.gz /usr/share/man/man8/gpumig-bugreport.8.gz \
			/usr/share/man/man8/vfio-migtest.8.gz \
			"$(grep -x '/usr/lib/[^/]*/vfio-migtest/simgpu.so' "$out/pkg-files.txt")" \
			/usr/share/doc/gpumig-tools/examples/vfio-migtest-plugin/vfio-migtest-plugin.h; do
			grep -qx "$f" "$out/pkg-files.txt" || { echo "not installed: $f"; return 1; }
		done &&
		# the installed tool finds its plug-in by name (the device is none: exit 1, not 2)
		{ in_root vfio-migtest -p simgpu -N pkg no-such-device >"$out/pkg-migtest.txt" 2>&1
		  [ $? = 1 ] && grep -q "not ok 1 open" "$out/pkg-migtest.txt"; } ||
		{ cat "$out/pkg-migtest.txt"; return 1; }
}

# No simgpu at boot until the operator asks (modules-load.d's switch);
# then it loads.  udev's coldplug may load simgpu-pf for simgpu-pci
# hardware (and gpumig with it), never simgpu.
pkg_switch() {
	in_root /lib/systemd/systemd-modules-load || return 1
	! grep -q '^simgpu ' /proc/modules || { echo "simgpu loaded with no switch"; return 1; }
	! grep -v '^#' $PKG/merged/usr/lib/modules-load.d/gpumig.conf | grep -q . || return 1
	grep -q '^#     echo simgpu > /etc/modules-load.d/gpumig.conf$' \
		$PKG/merged/usr/lib/modules-load.d/gpumig.conf || return 1
	echo simgpu >$PKG/merged/etc/modules-load.d/gpumig.conf
}

# gpumigctl as installed: both instances in its JSON list (parsed).
pkg_gpumigctl() {
	in_root gpumigctl --json list >"$out/pkg-list.json" &&
		in_root gpumigctl --version | grep -qx "gpumigctl $(in_root dpkg-query -W -f='${Version}' gpumig-tools)" &&
		python3 - "$out/pkg-list.json" "$PKG_SRC" "$PKG_DST" <<'PY'
import json, sys
devs = {d["device"]: d for d in map(json.loads, open(sys.argv[1]))}
for u in sys.argv[2:]:
    d = devs[u]
    assert d["schema"] == 1 and d["kind"] == "mdev" and d["migratable"] is True, d
    assert d["compat"]["type"] == "simgpu-256M" and d["state"] == "RUNNING", d
PY
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
		grep -qx "gpumigctl $v" "$f" &&
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
# undefine them: they are the operator's, not the package's), remove the
# boot switch (the operator's too), unload, purge both packages; then
# nothing of them is left on the root.
pkg_removed() {
	local left t0
	in_root mdevctl stop --uuid "$PKG_SRC" && in_root mdevctl stop --uuid "$PKG_DST" &&
		in_root mdevctl undefine --uuid "$PKG_SRC" && in_root mdevctl undefine --uuid "$PKG_DST" &&
		rm $PKG/merged/etc/modules-load.d/gpumig.conf && pkg_unload || return 1
	t0=$(date +%s)
	DEBIAN_FRONTEND=noninteractive in_root apt-get purge -y -q gpumig-dkms gpumig-tools \
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
	! in_root dpkg -s gpumig-dkms >/dev/null 2>&1 && ! in_root dpkg -s gpumig-tools >/dev/null 2>&1 &&
		! grep -qE '^(gpumig|simgpu) ' /proc/modules
}

package_suite() {
	[ -s "$out/pkg-root" ] && [ -s "$out/pkg-deb" ] || return 0
	PKG_SRC=6b8d3e0a-3f4b-4c4e-9a53-5a0b3c5d0011 PKG_DST=6b8d3e0a-3f4b-4c4e-9a53-5a0b3c5d0012
	modprobe -r gpumig_vfio_pci simgpu_pf simgpu gpumig 2>/dev/null
	udevadm control --exit 2>/dev/null
	check "package: a writable Debian root with $(uname -r)'s image and headers" pkg_root ||
		return
	check "package: gpumig-dkms and gpumig-tools installed with apt; DKMS's 4 modules for $(uname -r), the commands and their man pages in place" \
		pkg_installed || return
	check "package: modprobe.d's options are all commented" sh -c \
		"! grep -v '^#' $PKG/merged/etc/modprobe.d/gpumig.conf | grep -q .  &&
		 grep -q '^#options simgpu vram_budget_mb=' $PKG/merged/etc/modprobe.d/gpumig.conf"
	check "package: no simgpu at boot until the operator writes modules-load.d's switch" pkg_switch
	check "package: mdevctl defines two auto-start simgpu-256M instances" sh -c \
		"chroot $PKG/merged mdevctl define --uuid $PKG_SRC --parent simgpu --type simgpu-256M --auto &&
		 chroot $PKG/merged mdevctl define --uuid $PKG_DST --parent simgpu --type simgpu-256M --auto"
	check "package: boot (modules-load.d, then udev coldplug): both instances started" \
		pkg_boot coldplug
	timeout 300 "$tooldir/simgpu-client" -s migrate,dirty_precopy -n package_migration \
		-d "$PKG_DST" "$PKG_SRC" >"$out/client-package.ktap" 2>>"$out/guest.log"
	check "package: gpumigctl as installed lists both instances (JSON, parsed)" pkg_gpumigctl
	check "package: gpumig-bugreport lists versions, DKMS, gpumigctl, both instances' metrics, the log" \
		pkg_bugreport
	check "package: reboot with udevd running (MDEV_STATE=registered): both instances started" \
		pkg_reboot
	check "package: removal in the documented order; apt purge leaves no module, no file" \
		pkg_removed
}
