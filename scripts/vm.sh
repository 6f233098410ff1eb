#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot KERNEL (a bzImage, or a built kernel tree) with virtme-ng under
# emulation, run a command inside, and bring back what it wrote to OUT.
#
#   scripts/vm.sh KERNEL OUT [--append ARGS] [--qemu-opts OPTS] [--qemu PATH]
#                 [--rwdir DIR]... -- CMD...
#
# The guest sees the host's root filesystem read-only (with throw-away
# overlays on /etc, /tmp, /var...) and OUT (and each DIR) writable.  OUT is given to vng as
# GUEST=HOST: virtme-ng 1.35 refuses a plain relative --rwdir outside its
# overlays unless the current directory is /.
# The kernel log of the whole boot is saved as OUT/dmesg.txt by the guest
# scripts; OUT/console.log keeps what vng printed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=$1 out=$2
shift 2
append="" qopts="" qemu=""
rw=()
while [ $# -gt 0 ]; do
	case $1 in
	--append) append=$2; shift 2 ;;
	--qemu-opts) qopts=$2; shift 2 ;;
	--qemu) qemu=$2; shift 2 ;;
	--rwdir) rw+=("--rwdir=$2=$2"); shift 2 ;;
	--) shift; break ;;
	*) die "vm.sh: unknown option $1" ;;
	esac
done
mkdir -p "$out"
cmd=$(printf '%q ' "$@")

# --disable-kvm: /dev/kvm may exist on these machines but does not work
# (QEMU aborts setting MSRs); TCG is the only reliable accelerator.
args=(-r "$kernel" --disable-kvm --disable-microvm --memory "${VM_MEMORY:-2G}" --cpus "${VM_CPUS:-2}"
      "--rwdir=$out=$out" "${rw[@]}")
[ -n "$append" ] && args+=(--append "$append")
# A crash of the emulator itself dumps core without the guest's RAM (the
# backtrace is what counts; see the end).
qopts="${qopts:+$qopts }-machine dump-guest-core=off"
args+=(--qemu-opts="$qopts")
[ -n "$qemu" ] && args+=(--qemu "$qemu")

log "vm: booting $(basename "$kernel") for: $*"
stamp=$(mktemp)
set +e
(ulimit -c unlimited 2>/dev/null
 exec timeout "${VM_TIMEOUT:-1200}" vng "${args[@]}" --exec "$cmd" \
	>"$out/console.log" 2>&1 </dev/null)
rc=$?
set -e
[ $rc -eq 124 ] && log "vm: timed out after ${VM_TIMEOUT:-1200} s"
[ -s "$out/console.log" ] || log "vm: vng exited with status $rc and printed nothing"
# The emulator crashed (core_pattern "core" puts it here): its backtrace
# into OUT/qemu-crash.txt, the core removed (it is large).
for core in core core.[0-9]*; do
	[ -f "$core" ] && [ "$core" -nt "$stamp" ] || continue
	bin=${qemu:-$(command -v qemu-system-x86_64 || true)}
	log "vm: the VM's QEMU dumped core: backtrace in $out/qemu-crash.txt"
	if command -v gdb >/dev/null && [ -n "$bin" ]; then
		gdb -batch -nx -ex 'info threads' -ex 'thread apply all bt 16' "$bin" "$core" \
			>"$out/qemu-crash.txt" 2>&1 || true
	fi
	rm -f "$core"
done
rm -f "$stamp"
exit $rc
