#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Half of a QEMU migration through a file, for the releases suite: the
running guest (tools/guest) with one simgpu is saved by one module set
and restored by another, in the same boot.

  qemu_file_mig.py save DEV FILE --guest ELF --out DIR [--qemu CMD]
  qemu_file_mig.py load DEV FILE --guest ELF --out DIR [--qemu CMD]

DEV: an mdev UUID or a VF's PCI address (bound to gpumig-vfio-pci).
save: QEMU boots the guest on DEV; once it has verified a few
iterations, the running VM migrates live to file:FILE (QEMU's own
format, the device's stream inside), and QEMU quits.  FILE.iter keeps
the guest's last iteration.  load: a QEMU with -incoming defer on DEV
restores FILE; the guest must run on and verify three more iterations
with no wrong result.  Exit 0 when it all held; else 1 and why on
standard output.
"""
import argparse
import os
import sys
import time

import mig_vm
from mig_checks import wait_migration, wait_running
from mig_vm import VM, Dev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("save", "load"))
    ap.add_argument("dev")
    ap.add_argument("file")
    ap.add_argument("--guest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    args = ap.parse_args()
    mig_vm.QEMU = args.qemu.split()
    os.makedirs(args.out, exist_ok=True)
    dev = Dev(args.dev, ":" in args.dev)
    name = "file-" + args.what
    if args.what == "save":
        vm = VM(name, dev, args)
        try:
            if not vm.wait_iter(3):
                print("the guest did not run: %s" % "; ".join(vm.lines()[-3:]))
                return 1
            if os.path.exists(args.file):
                os.unlink(args.file)
            vm.qmp.cmd("migrate", uri="file:" + args.file)
            info = wait_migration(vm, timeout=600)
            last = vm.last_iter()
            if info.get("status") != "completed" or vm.failures():
                print("save: %s %s; %s" % (info.get("status"), info.get("error-desc", ""),
                                          "; ".join(vm.failures()[:3])))
                return 1
            with open(args.file + ".iter", "w") as f:
                f.write("%d\n" % last)
            print("saved at iteration %d: %d KiB, device %d KiB" % (
                last, os.path.getsize(args.file) // 1024,
                info.get("vfio", {}).get("transferred", 0) // 1024))
            return 0
        finally:
            vm.quit()
    with open(args.file + ".iter") as f:
        before = int(f.read())
    vm = VM(name, dev, args, incoming=True)
    try:
        vm.qmp.cmd("migrate-incoming", uri="file:" + args.file)
        deadline = time.time() + 600
        while time.time() < deadline:
            st = vm.qmp.cmd("query-migrate").get("status")
            if st in ("completed", "failed"):
                break
            time.sleep(0.2)
        if st != "completed":
            print("load: incoming migration %s; device: %s" % (st, dev.status_line()))
            return 1
        # The saved VM was running; should QEMU leave it paused, go on.
        if vm.status() == "paused":
            vm.qmp.cmd("cont")
        ok = wait_running(vm) and vm.wait_iter(before + 3)
        if not ok or vm.failures():
            print("load: the guest did not verify on (iteration %d, saved at %d); %s" % (
                vm.last_iter(), before, "; ".join(vm.failures()[:3] or vm.lines()[-3:])))
            return 1
        print("restored: the guest verified iterations %d to %d" % (before, vm.last_iter()))
        return 0
    finally:
        vm.quit()


if __name__ == "__main__":
    sys.exit(main())
