#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest's packages, simgpu-guest-dkms and simgpu-guest-tools, the way
# a guest's administrator meets them: installed with apt natively into a
# throw-away overlay of the bookworm root (scripts/bookworm-root.sh:
# Debian's 6.12 image and headers, DKMS), as in a Debian guest.  Checks
# that DKMS built and installed simgpu-guest for that kernel (modinfo:
# the version, simgpu's PCI ID), that simgpu-work runs (-V, -h, and no
# GPU: exit 2 with a clear message), that gpumig-dkms cannot be installed
# beside them, and that purging both leaves nothing behind.  Copies the
# module DKMS built to OUT/simgpu-guest.ko and prints that path: make
# check's small Linux guest boots with it (scripts/linux-guest.sh), so
# the migrated guest runs the packaged driver.  Compiled objects are
# cached in $GPUMIG_CACHE/ccache-pkg, as in scripts/pkg-root.sh.
#
#   scripts/guest-pkg.sh ROOT OUT SIMGPU-GUEST-DKMS.deb SIMGPU-GUEST-TOOLS.deb [GPUMIG-DKMS.deb]
#
# With GPUMIG-DKMS.deb, also that apt refuses it beside the guest's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

root=$1 out=$2 gdkms=$3 gtools=$4 host=${5:-}
k=$KVER_DISTRO
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$GPUMIG_TOP/guest/dkms.conf")
mkdir -p "$out"
rm -f "$out/simgpu-guest.ko"
pkg_overlay "$root" "$gdkms" "$gtools" ${host:+"$host"}
tmp=$PKG_TMP
in_root() { chroot "$tmp/m" env DEBIAN_FRONTEND=noninteractive "$@"; }
log=$out/install.log

t0=$(date +%s)
in_root env DEBIAN_KERNEL_USE_CCACHE=1 CCACHE_DIR=/ccache apt-get install -y -q \
	"/deb/$(basename "$gdkms")" "/deb/$(basename "$gtools")" >"$log" 2>&1 ||
	{ tail -n 30 "$log" >&2; die "apt install of the guest's packages failed (see $log)"; }
echo "guest package: apt install took $(($(date +%s) - t0)) s (natively)" | tee -a "$log" >&2

# DKMS built and installed the driver for Debian's kernel
st=$(in_root dkms status simgpu-guest)
echo "$st" >>"$log"
grep -q "simgpu-guest/$ver, $k, .*: installed" <<<"$st" ||
	die "dkms status: simgpu-guest/$ver is not installed for $k ($st)"
ko=$(in_root modinfo -k "$k" -n simgpu-guest)
[ "$ko" = "/lib/modules/$k/updates/dkms/simgpu-guest.ko" ] ||
	[ "$ko" = "/lib/modules/$k/updates/dkms/simgpu-guest.ko.xz" ] ||
	die "modinfo finds simgpu-guest at '$ko', not in updates/dkms"
[ "$(in_root modinfo -k "$k" -F version simgpu-guest)" = "$ver" ] ||
	die "simgpu-guest's version is not $ver"
id=$(sed -n 's/^#define SIMGPU_PCI_DEVICE_ID[[:space:]]*0x\([0-9a-fA-F]*\).*/\1/p' \
	"$GPUMIG_TOP/include/uapi/linux/simgpu.h" | tr a-f A-F)
al=$(in_root modinfo -k "$k" -F alias simgpu-guest)
grep -q "^pci:v[0-9A-F]*d0000${id}sv" <<<"$al" ||
	die "simgpu-guest has no PCI alias for simgpu's device $id (udev would not load it): $al"

# the tool: its version, its usage, and no GPU here (exit 2, says why)
[ "$(in_root simgpu-work -V)" = "simgpu-work $ver" ] || die "simgpu-work -V is not 'simgpu-work $ver'"
grep -q "^usage: simgpu-work" <<<"$(in_root simgpu-work -h)" || die "simgpu-work -h prints no usage"
rc=0
in_root simgpu-work -t 1 >"$tmp/none.txt" 2>&1 || rc=$?
if [ $rc != 2 ] || ! grep -q "no /dev/simgpu" "$tmp/none.txt"; then
	die "simgpu-work with no GPU: exit $rc, '$(cat "$tmp/none.txt")' (want 2, 'no /dev/simgpu*')"
fi
for f in /usr/bin/simgpu-work /usr/share/man/man1/simgpu-work.1.gz \
	"/usr/src/simgpu-guest-$ver/dkms.conf" "/usr/src/simgpu-guest-$ver/include/uapi/linux/simgpu_guest.h"; do
	[ -e "$tmp/m$f" ] || die "not installed: $f"
done

# the host's package is refused beside the guest's (the same PCI IDs)
if [ -n "$host" ]; then
	if in_root apt-get install -y -q --no-remove "/deb/$(basename "$host")" >"$out/conflict.log" 2>&1; then
		die "apt installed gpumig-dkms beside simgpu-guest-dkms"
	fi
	in_root dpkg-query -W -f='${Status}' simgpu-guest-dkms | grep -q "install ok installed" ||
		die "simgpu-guest-dkms went when gpumig-dkms was asked for"
fi

# Debian's DKMS compresses the modules it installs as the kernel's are
case $ko in
*.xz) xz -dc "$tmp/m$ko" >"$out/simgpu-guest.ko" ;;
*) cp "$tmp/m$ko" "$out/simgpu-guest.ko" ;;
esac

# purge: nothing of either left
in_root dpkg -L simgpu-guest-dkms simgpu-guest-tools >"$out/files.txt"
in_root apt-get purge -y -q simgpu-guest-dkms simgpu-guest-tools >>"$log" 2>&1 ||
	{ tail -n 30 "$log" >&2; die "apt purge of the guest's packages failed"; }
left=$(cd "$tmp/m" && find . -xdev \( -iname '*simgpu*' \) -not -path './var/lib/dpkg/*' \
	-not -path './var/log/*' -not -path './var/cache/*' -not -path './deb/*' -print)
[ -z "$left" ] || die "left behind after purge: $left"
while read -r f; do
	[ -d "$tmp/m$f" ] || [ ! -e "$tmp/m$f" ] || die "left behind after purge: $f"
done <"$out/files.txt"
echo "$out/simgpu-guest.ko"
