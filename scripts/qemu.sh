#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build QEMU 10.0.2 from Debian's source tarball with gpumig's simgpu-pci
# device (qemu/simgpu) and print the path of its qemu-system-x86_64.
# Cached under $GPUMIG_CACHE, keyed by the tarball and everything copied
# into the tree; a change to any of it rebuilds (incrementally: only the
# device's files recompile).
#
#   scripts/qemu.sh            build if needed, print the binary's path
set -euo pipefail
. "$(dirname "$0")/lib.sh"

QEMU_VER=10.0.2
QEMU_DEB=1:10.0.2+ds-2+deb13u1~bpo12+1
SRC=$GPUMIG_CACHE/qemu-src
TARBALL=$SRC/qemu_${QEMU_VER}+ds.orig.tar.xz
DEV=$GPUMIG_TOP/qemu/simgpu
# What the device is made of: laid out in hw/misc/simgpu.
DEV_FILES=(
	"$DEV/meson.build" "$DEV/simgpu-pf.c" "$DEV/simgpu-vf.c" "$DEV/simgpu-pci.h" "$DEV/simgpu-model.h" "$DEV/model-glue.c"
	"$DEV"/shim/*.h "$DEV"/shim/linux/*.h "$DEV"/shim/kunit/*.h
	"$GPUMIG_TOP/qemu/Kconfig.simgpu" "$GPUMIG_TOP/scripts/qemu.sh"
	"$GPUMIG_TOP"/drivers/gpu/simgpu/{core.c,regs.c,host.c,mmu.c,absent.c,arch.c,simgpu.h}
	"$GPUMIG_TOP/include/uapi/linux/simgpu.h" "$GPUMIG_TOP/include/uapi/linux/simgpu_pf.h"
)

fetch_source() {
	[ -f "$TARBALL" ] && return 0
	mkdir -p "$SRC"
	# The DFSG tarball is served; the .dsc and debian.tar.xz are not (404),
	# so apt-get source fails after fetching what we need: check it is there
	# and matches the archive's checksum.
	(cd "$SRC" && apt-get source --download-only "qemu=$QEMU_DEB" >"$SRC/fetch.log" 2>&1) || true
	[ -f "$TARBALL" ] || die "could not fetch $TARBALL (see $SRC/fetch.log)"
	local stanzas want
	# apt-cache showsrc takes no "=version": pick the stanza of $QEMU_DEB.
	# Its output is read whole before awk sees it: under pipefail, a
	# reader that stops early (awk's exit) kills the writer with SIGPIPE
	# and fails the pipeline at random.
	stanzas=$(apt-cache showsrc qemu) || die "apt-cache showsrc qemu failed (no deb-src for bookworm-backports? run scripts/install-deps.sh)"
	want=$(awk -v v="$QEMU_DEB" '
		/^Package:/ { mine = 0 } /^Version:/ { mine = ($2 == v) }
		/^Checksums-Sha256:/ { s = 1; next } /^[^ ]/ { s = 0 }
		mine && s && $3 ~ /orig\.tar\.xz$/ && want == "" { want = $1 }
		END { print want }' <<<"$stanzas")
	[ -n "$want" ] || die "apt-cache showsrc qemu has no checksum for $QEMU_DEB's orig tarball"
	echo "$want  $TARBALL" | sha256sum -c --quiet - ||
		die "$TARBALL does not match the archive's checksum ($want)"
}

# Lay out the device in QEMU's tree, and the small wiring it needs.
install_device() {
	local tree=$1 d=$1/hw/misc/simgpu

	rm -rf "$d"
	mkdir -p "$d/model" "$d/abi" "$d/shim/uapi/linux"
	cp "$DEV/meson.build" "$DEV/simgpu-pf.c" "$DEV/simgpu-vf.c" "$DEV/simgpu-pci.h" "$DEV/simgpu-model.h" "$DEV/model-glue.c" "$d/"
	cp -r "$DEV/shim/." "$d/shim/"
	cp "$GPUMIG_TOP"/drivers/gpu/simgpu/{core.c,regs.c,host.c,mmu.c,absent.c,arch.c,simgpu.h} "$d/model/"
	cp "$GPUMIG_TOP"/include/uapi/linux/{simgpu.h,simgpu_pf.h} "$d/abi/"
	cp "$GPUMIG_TOP"/include/uapi/linux/{simgpu.h,simgpu_pf.h} "$d/shim/uapi/linux/"
	grep -q "subdir('simgpu')" "$tree/hw/misc/meson.build" ||
		echo "subdir('simgpu')" >>"$tree/hw/misc/meson.build"
	grep -q "config SIMGPU_PCI" "$tree/hw/misc/Kconfig" ||
		cat "$GPUMIG_TOP/qemu/Kconfig.simgpu" >>"$tree/hw/misc/Kconfig"
	# The DFSG tarball has no edk2 firmware: do not try to unpack it.
	sed -i "s|^    unpack_edk2_blobs = bzip2.found()$|    unpack_edk2_blobs = bzip2.found() and fs.exists('pc-bios/edk2-x86_64-code.fd.bz2')|" \
		"$tree/meson.build"
}

fetch_source
key=$( { basename "$TARBALL"; sha256sum "${DEV_FILES[@]}" | cut -c1-64; gcc --version | sed -n 1p; } |
	sha256sum | cut -c1-12)
dir=$GPUMIG_CACHE/qemu-$QEMU_VER-simgpu
bin=$dir/build/qemu-system-x86_64
if [ -f "$dir/.gpumig-key" ] && [ "$(cat "$dir/.gpumig-key")" = "$key" ] && [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi
if [ ! -f "$dir/.gpumig-configured" ]; then
	log "building QEMU $QEMU_VER with simgpu-pci in $dir; cached for later runs"
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -C "$dir" -xJf "$TARBALL"
	mv "$dir/qemu-$QEMU_VER" "$dir/src"
	install_device "$dir/src"
	mkdir -p "$dir/build"
	(cd "$dir/build" && "$dir/src/configure" --target-list=x86_64-softmmu \
		--without-default-features --enable-tcg --enable-slirp --enable-attr \
		--enable-virtfs --disable-docs --disable-download --disable-install-blobs \
		--python=/usr/bin/python3 >"$dir/configure.log" 2>&1) ||
		{ tail -n 30 "$dir/configure.log" >&2; die "QEMU configure failed"; }
	touch "$dir/.gpumig-configured"
else
	log "rebuilding QEMU's simgpu-pci in $dir"
	install_device "$dir/src"
fi
ninja -C "$dir/build" -j "$JOBS" qemu-system-x86_64 >"$dir/build.log" 2>&1 ||
	{ grep -E "error|Error" "$dir/build.log" | head -n 30 >&2; die "QEMU build failed (see $dir/build.log)"; }
echo "$key" >"$dir/.gpumig-key"
echo "$bin"
