#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench-several: the downtime QEMU reports for a VM of four simgpus
against the same VM with one, with multifd device-state transfer off
(QEMU reads the devices' stop-copy data one after the other on its
migration thread) and on (QEMU 10.0's multifd capability, with which
vfio-pci's x-migration-multifd-transfer=auto sends device state on the
multifd channels, each device's from its own thread).

  bench_several.py --guest ELF --out DIR [--reps N] [--qemu CMD]

Every run boots the test guest (tools/guest) on fresh simgpu-64M mdevs,
lets it verify a few iterations, migrates it live over a unix socket and
checks that the guest verifies on at the destination.  The four kinds
of run are interleaved, one of each per round, so a slow spell of the
machine falls on all of them; the figures are medians over the rounds.
Prints one "several_bench" line per run and the ratios; exit status 1
when a run's own checks failed.
"""
import argparse
import os
import shlex
import statistics
import sys

import mig_vm
from mig_checks import wait_migration, wait_running
from mig_vm import VM, Pool

CHANNELS = 4


def one_run(args, pool, n, multifd, rep):
    """One migration of a VM holding @n devices; its downtime in ms, or
    None when it did not complete with the guest verifying on."""
    src = [pool.get("64M") for _ in range(n)]
    dst = [pool.get("64M") for _ in range(n)]
    for d in src + dst:
        d.knob("kernel_step_us", 1000)
    tag = "r%d-n%d-%s" % (rep, n, "mf" if multifd else "seq")
    a = b = None
    try:
        a = VM("src-" + tag, src, args)
        if not a.wait_iter(3):
            print("several_bench: %s: the guest did not run: %s"
                  % (tag, "; ".join(a.lines()[-3:])), flush=True)
            return None
        b = VM("dst-" + tag, dst, args, incoming=True)
        sock = os.path.join(args.out, "bench.sock")
        if os.path.exists(sock):
            os.unlink(sock)
        caps = [{"capability": "return-path", "state": True},
                {"capability": "switchover-ack", "state": True},
                {"capability": "multifd", "state": multifd}]
        for vm in (a, b):
            vm.qmp.cmd("migrate-set-capabilities", capabilities=caps)
            if multifd:
                vm.qmp.cmd("migrate-set-parameters", **{"multifd-channels": CHANNELS})
        b.qmp.cmd("migrate-incoming", uri="unix:" + sock)
        before = a.last_iter()
        a.qmp.cmd("migrate", uri="unix:" + sock)
        info = wait_migration(a, timeout=600)
        ok = (info.get("status") == "completed" and wait_running(b) and
              b.wait_iter(before + 2) and not a.failures() and not b.failures())
        print("several_bench devices=%d multifd=%s rep=%d status=%s downtime_ms=%s "
              "total_ms=%s device_kib=%d ok=%s%s"
              % (n, "on" if multifd else "off", rep, info.get("status"),
                 info.get("downtime"), info.get("total-time"),
                 info.get("vfio", {}).get("transferred", 0) // 1024, ok,
                 "" if ok else " why=" + "; ".join((a.failures() + b.failures())[:2] or
                                                   [str(info.get("error-desc"))])),
              flush=True)
        return info.get("downtime") if ok else None
    finally:
        for vm in (a, b):
            if vm is not None:
                vm.quit()
        for d in src + dst:
            pool.put(d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--guest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    args = ap.parse_args()
    mig_vm.QEMU = shlex.split(args.qemu)
    os.makedirs(args.out, exist_ok=True)
    pool = Pool(None)
    down = {}
    failed = 0
    try:
        for rep in range(args.reps):
            for multifd in (False, True):
                for n in (1, 4):
                    d = one_run(args, pool, n, multifd, rep)
                    if d is None:
                        failed += 1
                    else:
                        down.setdefault((n, multifd), []).append(d)
    finally:
        pool.release()
    for multifd in (False, True):
        one, four = down.get((1, multifd)), down.get((4, multifd))
        if not one or not four:
            print("several_bench: multifd %s: no completed runs to compare"
                  % ("on" if multifd else "off"))
            continue
        m1, m4 = statistics.median(one), statistics.median(four)
        goal = " (goal <= 1.5: %s)" % ("met" if m4 <= 1.5 * m1 else "NOT MET") \
            if multifd else " (no goal: QEMU reads the devices one after the other)"
        print("downtime, multifd device state %s: four devices %.0f ms / one %.0f ms = "
              "%.2fx%s (medians of %d and %d runs)"
              % ("on" if multifd else "off", m4, m1, m4 / m1 if m1 else float("inf"),
                 goal, len(four), len(one)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
