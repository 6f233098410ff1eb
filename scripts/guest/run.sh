#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside a test VM (see scripts/vm.sh): load gpumig, run every suite,
# write KTAP and logs to OUT.
#
#   run.sh MODE OUT MODDIR
#
# MODE "debug": the debug kernel; modules are insmod-ed from MODDIR and the
# KUnit module runs.  MODE "distro": Debian's kernel; modules come from the
# DKMS install (modprobe), proving the packaging.
set -u
mode=$1 out=$2 moddir=$3
ktap=$out/vm-$mode.ktap
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

case $mode in
debug)
	check "load gpumig.ko" insmod "$moddir/gpumig.ko"
	check "load and run the KUnit module" insmod "$moddir/gpumig_kunit.ko"
	mkdir -p "$out/kunit"
	for d in /sys/kernel/debug/kunit/*/; do
		s=$(basename "$d")
		cp "$d/results" "$out/kunit/$s.ktap"
	done
	check "unload the KUnit module" rmmod gpumig_kunit
	check "unload gpumig" rmmod gpumig
	;;
distro)
	check "modprobe gpumig (DKMS install)" modprobe gpumig
	check "gpumig is the DKMS build" sh -c "modinfo -n gpumig | grep -q /updates/dkms/"
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
