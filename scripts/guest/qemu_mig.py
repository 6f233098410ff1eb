#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Live-migrate a QEMU VM that holds a simgpu, inside the test VM.

Boots tools/guest's multiboot program in QEMU (10.0, or with --qemu another,
such as 11.1 from a trixie root) with a simgpu assigned
(vfio-pci, enable-migration=on); the guest drives the GPU forever and
checks every result, printing "iter N ok" or "FAIL ..." on its debug
console.  Then migrates it over unix sockets between QEMU processes while
the work runs, and checks the negative paths.  Prints KTAP (one result per
check) and, for the demo, a short human report.

  qemu_mig.py --guest ELF --out DIR [--demo] [--pingpong N] [--qemu CMD]
              [--several PROFILE,PROFILE... ...] [--cross CMD [--cross-machine TYPE]]
              [--linux KERNEL,INITRD] [--only SCENARIO,...]
              [--first PROFILE,PROFILE...] [--pci 256M=ADDR,ADDR,ADDR 64M=ADDR]

With --linux the guest is the small Linux one instead (Debian's kernel,
simgpu-guest and simgpu-work in an initramfs: scripts/linux-guest.sh),
which reports on its serial console in the multiboot guest's words.
With --first the first migration's VM holds a device of each profile
named (e.g. "256M,mdev:256M": a VF and an mdev) instead of one 256M; then
only the first migration runs (--only none).

Runs as root inside the VM.  Without --pci, simgpu is loaded and the
script creates and removes its own mdev instances; with --pci, the VFs
named (bound to gpumig-vfio-pci, by profile) are assigned with
-device vfio-pci,host=ADDR instead.

The scenarios are here, in the order they run; the library is beside
this file: qmp_client.py (QMP), mig_vm.py (the devices and QEMU
processes), mig_ktap.py (the results), mig_checks.py (driving and
checking a migration) and mig_sampler.py (the device's figures against
VFIO's).
"""
import argparse
import errno
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import traceback

import mig_checks
import mig_vm
from mig_checks import (DEFAULT_BW, keeps_running, landed, link_bandwidth, migrate,
                        one_migration, start_migration, stopped, wait_for,
                        wait_migration, wait_running)
from mig_ktap import Run
from mig_vm import VM, Pool, guest_write, sysfs


# While the guest re-initialises its GPU the harness holds the switchover
# back with a downtime limit of 0 ms: QEMU then switches over only when
# nothing at all is pending, which never happens while the guest runs its
# GPU work.  (A crawling max-bandwidth held it too, but starved the device:
# QEMU iterates RAM first and stops at the rate limit, so the device's
# initial data could wait minutes for a turn.)
REINIT_HOLD_DOWNTIME_MS = 0
REINIT_GEN = 7


def trace_on(vm, events):
    """QEMU's trace @events on in @vm; where its log (stderr) is now."""
    for ev in events:
        vm.qmp.cmd("trace-event-set-state", name=ev, enable=True)
    return os.path.getsize(vm.errlog)


def trace_since(vm, base):
    """@vm's QEMU log from @base on (trace_on())."""
    # On the 9p share, as VM.lines() says: ENODATA now and then.
    for _ in range(20):
        try:
            with open(vm.errlog, errors="replace") as f:
                f.seek(base)
                return f.read()
        except OSError as e:
            if e.errno != errno.ENODATA:
                raise
            time.sleep(0.05)
    return ""


def reinit_migration(run, src, dst, sock, mailbox):
    """Issue 15: the guest resets and re-initialises its GPU during
    pre-copy.  On a kernel with VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2,
    QEMU 11.1 (which opts in, with switchover-ack on a pc-q35-11.1
    machine) must see VFIO_PRECOPY_INFO_REINIT, have the destination
    acknowledge the new initial data before it switches over, and the
    guest must find its re-initialised VRAM intact on the destination.
    QEMU's own trace events are the witness."""
    label = "REINIT"
    base = trace_on(src, ("vfio_query_precopy_size*", "vfio_send_init_data_flag"))

    def trace():
        return trace_since(src, base)

    before = src.last_iter()
    limit = src.qmp.cmd("query-migrate-parameters")["downtime-limit"]
    start_migration(src, dst, sock, REINIT_HOLD_DOWNTIME_MS)
    sent = wait_for(lambda: "vfio_send_init_data_flag" in trace(), 300)
    run.check("%s: QEMU sent the device's initial data and asked the destination to "
              "acknowledge it" % label, sent, trace()[-400:])
    guest_write(src, mailbox, REINIT_GEN)
    done = wait_for(lambda: any("reinit %d done" % REINIT_GEN in ln for ln in src.lines()),
                    300)
    st = src.qmp.cmd("query-migrate").get("status")
    run.check("%s: the guest reset its GPU and loaded 1.5 MiB of VRAM again, in pre-copy"
              % label, done and st == "active",
              "reinit done: %s, migration %s; %s" % (done, st, "; ".join(src.lines()[-2:])))
    src.qmp.cmd("migrate-set-parameters", **{"downtime-limit": limit,
                                             "avail-switchover-bandwidth":
                                             link_bandwidth(src)})
    info = wait_migration(src)
    t = trace()
    seen = re.findall(r"vfio_query_precopy_size +\(([^)]*)\) init (\d+), dirty (\d+), "
                      r"reinit 1", t)
    run.check("%s: QEMU 11.1 saw VFIO_PRECOPY_INFO_REINIT" % label, seen,
              "no 'reinit 1' in QEMU's trace: %s" % t[-600:])
    if seen:
        run.note("%s: QEMU saw REINIT with %s new initial bytes (%s dirty)"
                 % (label, seen[0][1], seen[0][2]))
    acks = t.count("vfio_send_init_data_flag")
    run.check("%s: QEMU asked the destination to acknowledge the new initial data, and "
              "sent it again (%d INIT_DATA_SENT)" % (label, acks),
              "vfio_query_precopy_size_request_switchover_ack" in t and acks >= 2, t[-600:])
    # every chunk of the re-initialised VRAM is checked once in 24
    return landed(run, src, dst, info, label, before, 3 + 24,
                  ", its re-initialised VRAM too") is not None


# Issue 36's hot workload under QEMU: the guest moves its device's
# background writer onto HOT_PAGES of VRAM (4 MiB), which the device then
# rewrites at HOT_RATE pages a second (16 MiB/s), while QEMU's link is
# HOT_BW (2 MiB/s): without a throttle the device's part never converges.
HOT_PAGES = 1024
HOT_RATE = 4000
HOT_BW = 2 << 20
HOT_SETTINGS = ("auto_converge", "throttle_initial_pct", "throttle_increment_pct")


def hot_converge(run, src, dst, sock, mailbox, tracked):
    """Issue 36: device auto-converge under QEMU.  With the source device's
    auto_converge on (steps 60 % then +20 %), QEMU is held from switching
    over (downtime limit 1 ms; 0 does not hold QEMU 10.0, which then
    completes on its estimate alone once that reads 0, without asking the
    devices again) until the device's verdict reads "yes", as an
    orchestrator acting on it would; the throttle must have climbed.  Then
    QEMU may switch over: at the same 2 MiB/s link when the device tracks
    guest memory (the stop-copy must then be smaller than the working set),
    at the full link where simgpu tracks no guest memory (an mdev on a
    kernel without DMA logging); a VF there is cancelled (hot_cancel()).
    The throttle ends at the stop, and the guest verifies on, its hot VRAM
    pages too.  True when the guest migrated."""
    label = "auto-converge"
    mig = src.dev.sysdir() + "/migration/"
    saved = {f: sysfs(mig + f) for f in HOT_SETTINGS}
    for d in (src.dev, dst.dev):
        d.knob("dirty_rate", HOT_RATE)
    guest_write(src, mailbox + 8, HOT_PAGES)
    on = wait_for(lambda: any("hot %d on" % HOT_PAGES in ln for ln in src.lines()), 120)
    if not run.check("%s: the guest's device writer rewrites 4 MiB of VRAM" % label, on,
                     "; ".join(src.lines()[-2:])):
        return False
    for f, v in (("throttle_initial_pct", "60"), ("throttle_increment_pct", "20"),
                 ("auto_converge", "1")):
        sysfs(mig + f, v)
    before = src.last_iter()
    limit = src.qmp.cmd("query-migrate-parameters")["downtime-limit"]
    src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": HOT_BW})
    t0 = time.time()
    start_migration(src, dst, sock, 1)
    # what the device owed as the pre-copy began (what it owes now and what
    # it has given): no less than QEMU's initial data
    wait_for(lambda: sysfs(mig + "state") == "PRE_COPY", 30)
    owed0 = int(sysfs(mig + "remaining_bytes")) + int(sysfs(mig + "precopy_bytes"))
    top, verdict, st = 0, "", "active"
    deadline = time.time() + 240
    while time.time() < deadline and st in ("setup", "active"):
        top = max(top, int(sysfs(mig + "throttle_pct")))
        verdict = sysfs(mig + "converging")
        if verdict == "yes" and top:
            break
        st = src.qmp.cmd("query-migrate").get("status")
        time.sleep(0.5)
    held = time.time() - t0
    run.check("%s: with QEMU's link at 2 MiB/s the device throttled its tenant and "
                   "then said it converges" % label, verdict == "yes" and top >= 60,
                   "after %.0f s: converging %s, throttle up to %d %%, migration %s"
                   % (held, verdict, top, st))
    run.note("%s: converging after %.1f s, throttle up to %d %%" % (label, held, top))
    if mig_checks.SWITCHOVER_AT_LINK:
        return hot_cancel(run, src, mig, saved, owed0, limit)
    if tracked:
        rel = {"downtime-limit": 1000, "avail-switchover-bandwidth": HOT_BW}
    else:
        # The full link first, still held: QEMU resends all guest RAM after
        # each sync, and with a limit that lets the whole of it go in the
        # stop, it syncs at every step and RAM takes every step; the
        # device's initial data must have gone before that, or the
        # destination never acks it (switchover-ack) and QEMU never
        # switches over.  QEMU counts as initial what the device owed at
        # the start; it has read that when precopy_bytes reaches it.
        src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": DEFAULT_BW})
        sent = wait_for(lambda: int(sysfs(mig + "precopy_bytes")) >= owed0, 120)
        run.check("%s: at the full link QEMU read the device's initial data" % label, sent,
                  "%s of %d bytes" % (sysfs(mig + "precopy_bytes"), owed0))
        # link_bandwidth() reads the max-bandwidth in force
        rel = {"downtime-limit": limit, "avail-switchover-bandwidth": link_bandwidth(src)}
    src.qmp.cmd("migrate-set-parameters", **rel)
    info = wait_migration(src, timeout=300)
    if info["status"] == "timeout":
        src.qmp.cmd("migrate_cancel")
    dev = landed(run, src, dst, info, label, before, 3, ", its hot VRAM pages too")
    for f in reversed(HOT_SETTINGS):
        sysfs(mig + f, saved[f])
    if dev is None:
        return False
    stop = int(dev.get("stopcopy_bytes", -1))
    if tracked:
        run.check("%s: the stop carried %d bytes of device state, less than the 4 MiB "
                  "working set" % (label, stop), 0 <= stop < HOT_PAGES * 4096, str(dev))
    else:
        run.note("%s: the stop carried %d bytes of device state" % (label, stop))
    run.check("%s: the throttle ended with the pre-copy, on both devices" % label,
              sysfs(mig + "throttle_pct") == "0" and
              sysfs(dst.dev.sysdir() + "/migration/throttle_pct") == "0",
              "source %s, destination %s" % (sysfs(mig + "throttle_pct"),
                                             sysfs(dst.dev.sysdir() +
                                                   "/migration/throttle_pct")))
    return True


def hot_cancel(run, src, mig, saved, owed0, limit):
    """The end of hot_converge() for a VF on a kernel without DMA logging:
    QEMU resends all guest RAM each round there, and the VF owed all of
    its VRAM as the pre-copy began (268 MB when this was chosen: a VF
    that had restored a stream counted its zeroed blocks as data, fixed
    since), minutes at an emulated VF's rate; the device's part is judged (the verdict above),
    then the migration is cancelled: the throttle must end with it and the
    source go on verifying.  False: the guest stays."""
    label = "auto-converge"
    run.note("%s: the device owed %d bytes as the pre-copy began: cancelled" % (label, owed0))
    src.qmp.cmd("migrate_cancel")
    info = wait_migration(src, timeout=60)
    # the next migration of this VM gets QEMU's link and limit back
    src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": DEFAULT_BW,
                                             "downtime-limit": limit})
    run.check("%s: migrate_cancel: cancelled" % label, info.get("status") == "cancelled",
              "status %s" % info.get("status"))
    for f in reversed(HOT_SETTINGS):
        sysfs(mig + f, saved[f])
    run.check("%s: the throttle ended with the cancel" % label,
              sysfs(mig + "throttle_pct") == "0", "throttle_pct %s" % sysfs(mig + "throttle_pct"))
    keeps_running(run, src, label)
    return False


class Suite:
    """What the scenarios share: the options, the results, the migration
    socket, the devices and the QEMU processes still to be stopped."""

    def __init__(self, args):
        self.args = args
        self.run = Run(args)
        self.sock = os.path.join(args.out, "mig.sock")
        self.pool = Pool(args.pci)
        self.vms = []

    def vm(self, name, dev, incoming=False, **kw):
        vm = VM(name, dev, self.args, incoming=incoming, **kw)
        self.vms.append(vm)
        return vm

    def quit(self, vm):
        vm.quit()
        self.vms.remove(vm)

    def kill(self, vm):
        vm.kill()
        self.vms.remove(vm)


def devices(suite):
    """The first migration's devices (each a Dev, or with --first a list
    of them); how simgpu tracks guest memory decides the downtime and
    switchover QEMU is allowed (the first device's tracking: with a VF
    and an mdev, the VF's is the stricter)."""
    run, pool = suite.run, suite.pool
    profs = (suite.args.first or "256M").split(",")
    s1, s2 = [pool.get(p) for p in profs], [pool.get(p) for p in profs]
    run.note("devices: %s" % ", ".join(
        "VF on gpumig-vfio-pci" if d.pci else "simgpu mdev" for d in s1))
    tracking = s1[0].status().get("dirty_tracking")
    run.note("simgpu dirty tracking of guest memory: %s" % tracking)
    if tracking != "device":
        mig_checks.DOWNTIME_MS = 5000
        mig_checks.SWITCHOVER_AT_LINK = bool(pool.pci)
    for u in s1 + s2:
        # a kernel is in flight most of the time; the device's own
        # background writer dirties guest memory all along
        u.knob("kernel_step_us", 1000)
        u.knob("dirty_rate", 200)
    if len(profs) == 1:
        return s1[0], s2[0], tracking
    return s1, s2, tracking


def demo_report(suite, info, tracking, dst):
    """--demo: the first migration for a human, in OUT/demo.txt (@dst:
    the destination's VM)."""
    dev = info["_device"]
    ram, vfio = info.get("ram", {}), info.get("vfio", {})
    rep = [
        "Live migration of a running VM holding a simgpu %s (QEMU 10, %s)"
        % ("VF" if suite.pool.pci else "mdev", os.uname().release),
        "  guest: %d GPU iterations verified before the migration started, %d by the "
        "end on the destination; %s" % (info["_iters"] + (
            "WRONG RESULTS: " + "; ".join(dst.failures()[:3]) if dst.failures()
            else "no wrong result",)),
    ]
    if suite.args.linux:
        last = last_round(dst)
        rep += ["  the guest is Linux (%s, simgpu-guest; an iteration is a round of "
                "simgpu-work on every GPU); its last round on the destination: %s results "
                "checked, %s wrong, %s errors" % (
                    os.path.basename(suite.args.linux.split(",")[0]),
                    last.get("checked"), last.get("wrong"), last.get("errors"))]
    rep += [
        "  QEMU: %s ms in all, %s ms downtime, %d KiB of RAM in %s dirty syncs, "
        "%d KiB of device state" % (info.get("total-time"), info.get("downtime"),
                                    ram.get("transferred", 0) // 1024,
                                    ram.get("dirty-sync-count"),
                                    vfio.get("transferred", 0) // 1024),
        "  device: %s pre-copy rounds (%d KiB), %d bytes at stop-copy; guest-memory "
        "dirty tracking: %s (%s DMA log reports)"
        % (dev.get("precopy_rounds"), int(dev.get("precopy_bytes", 0)) // 1024,
           int(dev.get("stopcopy_bytes", 0)), tracking,
           dev.get("dma_log_reports")),
    ]
    with open(os.path.join(suite.args.out, "demo.txt"), "w") as f:
        f.write("\n".join(rep) + "\n")


def first_migration(suite, m1, m2, tracking):
    """QEMU boots the guest on m1 and it migrates live to m2 (sampled; with
    --demo, reported instead).  Returns the first VM and the destination,
    or None when the suite ends here (a failure, or --demo)."""
    run, args = suite.run, suite.args
    a = suite.vm("a", m1)
    # a Linux kernel boots for minutes under nested emulation
    if not run.check("QEMU boots the guest and it drives %s" % (
            "all %d simgpus" % len(a.devs) if len(a.devs) > 1 else "simgpu"),
            a.wait_iter(3, timeout=1200 if args.linux else 300) and
            a.gpus() == len(a.devs),
            "gpus %s; %s" % (a.gpus(), "; ".join(a.lines()[-3:]))):
        return None
    b = suite.vm("b", m2, incoming=True)
    info = one_migration(run, a, b, suite.sock, "live migration", sample=not args.demo)
    if info and args.linux:
        linux_rounds(run, a, b, len(a.devs))
    if info and len(a.devs) > 1:
        after = [d.status() for d in a.devs]
        run.check("live migration: every device pre-copied and sent its own stop-copy data",
                  all(int(x.get("precopy_rounds", 0)) > 0 and
                      int(x.get("stopcopy_bytes", 0)) > 0 for x in after),
                  "; ".join("%s: %s pre-copy rounds, %s bytes at stop" % (
                      d, x.get("precopy_rounds"), x.get("stopcopy_bytes"))
                      for d, x in zip(a.devs, after)))
    if info and args.demo:
        demo_report(suite, info, tracking, b)
    suite.quit(a)
    if not info or args.demo:
        return None
    return a, b


def linux_summaries(vm):
    """The Linux guest's simgpu-work summaries on @vm's console
    ("gpumig-guest: json ...", one every few seconds)."""
    out = []
    for ln in vm.lines():
        if ln.startswith("gpumig-guest: json "):
            try:
                out.append(json.loads(ln.split(" ", 2)[2]))
            except ValueError:
                pass        # a line cut short by the switchover
    return out


def last_round(vm):
    """The Linux guest's last simgpu-work summary on @vm, or {}."""
    rounds = linux_summaries(vm)
    return rounds[-1] if rounds else {}


def per_gpu(rounds, key, n):
    """@key summed over simgpu-work summaries @rounds, for each of @n GPUs."""
    return [sum(r["devices"][k].get(key, 0) for r in rounds if len(r["devices"]) == n)
            for k in range(n)]


def linux_rounds(run, src, dst, n, timeout=180):
    """The Linux guest's simgpu-work summaries on @dst checked results on
    each of its @n GPUs, none wrong, none gone; and the 1 MiB of VRAM each
    GPU's "keep" wrote on @src was read back right on @dst, never written
    again (one simgpu-work process spans the migration).

    The first summary @dst prints spans the switchover (its interval began
    on the source), so what is judged is the summaries after it, waited
    for (up to @timeout s) until each GPU checked results and read its
    kept VRAM there: a GPU's rounds take seconds under emulation, its
    "keep" is every fourth."""
    def after():
        return linux_summaries(dst)[1:]

    def enough():
        r = after()
        return bool(r) and all(c > 0 for c in per_gpu(r, "checked", n)) and \
            all(k > 0 for k in per_gpu(r, "keep_checked", n))

    deadline = time.time() + timeout
    while not enough() and time.time() < deadline and dst.p.poll() is None and \
            not dst.failures():
        time.sleep(0.5)
    rounds = after()
    run.note("the Linux guest printed %d simgpu-work summaries on the destination after "
             "the one spanning the switchover" % len(rounds))
    checked = per_gpu(rounds, "checked", n)
    run.check("the Linux guest's rounds on the destination verified results on each of "
              "its %d GPUs, none wrong" % n,
              bool(rounds) and all(c > 0 for c in checked) and
              not any(per_gpu(rounds, "wrong", n)) and
              not any(d.get("gone") for r in rounds for d in r["devices"]),
              "checked %s; last %s" % (checked, json.dumps(rounds[-1] if rounds else {})[:500]))
    filled = per_gpu(linux_summaries(src), "keep_fills", n)
    refilled = per_gpu(linux_summaries(dst), "keep_fills", n)
    kept = per_gpu(rounds, "keep_checked", n)
    run.check("the Linux guest's kept VRAM (1 MiB a GPU, written on the source) read back "
              "right on the destination, never written again",
              all(f >= 1 for f in filled) and not any(refilled) and all(k > 0 for k in kept),
              "written on the source %s, again on the destination %s, read back right "
              "there %s" % (filled, refilled, kept))


def linux_lost(suite, cur, free):
    """--only lost, with --linux and --first: the Linux guest on @cur
    migrates to fresh devices (@free: the first migration's sources) with
    post-copy on its mdev and no mover; the destination abandons the
    post-copy once the guest waited on an owed block, the source scrubs.
    simgpu-work must then see its device's VRAM-lost error (a queue error
    it handles, as after a GPU reset), never a wrong result, and go on
    checking results on every GPU.  Returns the VM the guest runs in."""
    run = suite.run
    label = "post-copy abandoned under the Linux guest"
    k = next((i for i, d in enumerate(cur.devs) if not d.pci), None)
    if not run.check("%s: the guest holds an mdev" % label, k is not None,
                     "--first gave VFs only"):
        return cur
    src_dev, dst_dev = cur.devs[k], free[k]
    sysfs(src_dev.sysdir() + "/migration/postcopy", "1")
    nxt = suite.vm("lost", free, incoming=True)
    info = migrate(cur, nxt, suite.sock)
    if not run.check("%s: migration completed, the mdev's VRAM owed" % label,
                     info.get("status") == "completed" and wait_running(nxt) and
                     sysfs(dst_dev.sysdir() + "/migration/postcopy_state") == "active",
                     "status %s, destination's post-copy %s" % (
                         info.get("status"),
                         sysfs(dst_dev.sysdir() + "/migration/postcopy_state"))):
        sysfs(src_dev.sysdir() + "/migration/postcopy", "0")
        suite.kill(nxt)
        return cur
    mig = dst_dev.sysdir() + "/migration/"
    waited = wait_for(lambda: int(sysfs(mig + "postcopy_waits") or 0) > 0, 120)
    token = sysfs(mig + "postcopy_token")
    for side, dev in (("destination", dst_dev), ("source", src_dev)):
        r = subprocess.run([MOVER, "abandon", token, side], capture_output=True, text=True,
                           timeout=60, check=False)
        run.check("%s: gpumig-mover abandon on the %s" % (label, side), r.returncode == 0,
                  "exit %d: %s" % (r.returncode, (r.stdout + r.stderr)[-300:]))
    lost = int(sysfs(mig + "postcopy_lost_blocks") or 0)
    run.check("%s: the guest waited on an owed block; the destination marked %d blocks lost, "
              "the source scrubbed what it held" % (label, lost),
              waited and lost > 0 and
              sysfs(mig + "postcopy_state") == "abandoned" and
              sysfs(src_dev.sysdir() + "/migration/postcopy_state") == "abandoned",
              "waits %s, states %s/%s" % (sysfs(mig + "postcopy_waits"),
                                          sysfs(src_dev.sysdir() + "/migration/postcopy_state"),
                                          sysfs(mig + "postcopy_state")))
    suite.quit(cur)

    # The guest meets the loss when a round next reads that VRAM (its
    # "keep", every fourth round, seconds apart under emulation): wait for
    # the error, then for two summaries after it in which every GPU
    # checked results.
    n = len(free)

    def lost_at(rounds):
        return next((i for i, r in enumerate(rounds)
                     if any(e.get("name") == "VRAM_LOST"
                            for d in r["devices"] for e in d.get("errors", []))), None)

    def seen():
        rounds = linux_summaries(nxt)
        k = lost_at(rounds)
        return k is not None and len(rounds) >= k + 3 and \
            all(c > 0 for c in per_gpu(rounds[k + 1:], "checked", n))

    t0 = time.time()
    done = wait_for(seen, 300, step=0.5)
    rounds = linux_summaries(nxt)
    k = lost_at(rounds)
    run.note("%s: the guest's summaries on the destination (GPU: checked/errored/keep "
             "fills/keep checked/errors), the error %s: %s" % (
                 label, "%.0f s after the abandon" % (time.time() - t0) if done else "not seen",
                 "; ".join("%d: %s" % (r.get("interval", 0), ", ".join(
                     "%s %d/%d/%d/%d/%s" % (d["device"], d["checked"], d["errored"],
                                            d["keep_fills"], d["keep_checked"],
                                            "+".join(e["name"] for e in d["errors"]) or "-")
                     for d in r["devices"])) for r in rounds)))
    run.check("%s: simgpu-work saw VRAM_LOST (a queue error), no wrong result in %d "
              "summaries, and every GPU checked results after it" % (label, len(rounds)),
              done and not any(per_gpu(rounds, "wrong", n)) and
              not any(d.get("gone") for r in rounds for d in r["devices"]),
              "error in summary %s; wrong %s; checked after it %s" % (
                  k, per_gpu(rounds, "wrong", n),
                  per_gpu(rounds[k + 1:], "checked", n) if k is not None else "-"))
    return nxt


def incompatible_destination(suite, cur):
    """An incompatible destination (another type) fails before the
    source stops: switchover-ack holds the switch until the
    destination accepted the device's first data."""
    run = suite.run
    m3 = suite.pool.get("64M")
    c = suite.vm("c", m3, incoming=True)
    cur.qmp.events.clear()
    info = migrate(cur, c, suite.sock)
    run.check("incompatible destination: the migration fails",
              info.get("status") == "failed", "status %s" % info.get("status"))
    run.check("incompatible destination: the source never stopped",
              not stopped(cur), str(cur.qmp.events))
    st = m3.status().get("last_error", "")
    run.note("incompatible destination: QEMU says \"%s\"; the destination device says \"%s\""
             % (info.get("error-desc"), st))
    run.check("incompatible destination: the destination device names the mismatch",
              "mismatch" in st, st)
    keeps_running(run, cur, "incompatible destination")
    suite.kill(c)
    suite.pool.put(m3)


def cancel_in_precopy(suite, cur, spare):
    """migrate_cancel in the middle of pre-copy."""
    run = suite.run
    d = suite.vm("d", spare, incoming=True)
    cur.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": 1 << 20})
    cur.qmp.events.clear()
    start_migration(cur, d, suite.sock)
    deadline = time.time() + 60
    while time.time() < deadline:
        st = cur.qmp.cmd("query-migrate")
        if st.get("status") == "active" and st.get("ram", {}).get("transferred", 0) > 0:
            break
        time.sleep(0.2)
    run.note("cancel at %d KiB of RAM sent, device state %s" %
             (st.get("ram", {}).get("transferred", 0) // 1024,
              cur.dev.status().get("state")))
    cur.qmp.cmd("migrate_cancel")
    st = wait_migration(cur, timeout=60)
    cur.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": DEFAULT_BW})
    run.check("migrate_cancel in pre-copy: cancelled", st.get("status") == "cancelled",
              "status %s" % st.get("status"))
    run.check("migrate_cancel: the source never stopped", not stopped(cur),
              str(cur.qmp.events))
    keeps_running(run, cur, "migrate_cancel")
    run.check("migrate_cancel: the device is RUNNING again",
              cur.dev.status().get("state") == "RUNNING", str(cur.dev.status()))
    suite.kill(d)


def source_cannot_quiesce(suite, cur, spare):
    """A source that cannot quiesce (its invalidation is never
    acknowledged) fails the migration and keeps running."""
    run = suite.run
    e = suite.vm("e", spare, incoming=True)
    cur.dev.knob("ack_drop", 1)
    cur.qmp.events.clear()
    info = migrate(cur, e, suite.sock)
    cur.dev.knob("ack_drop", 0)
    run.check("source cannot quiesce: the migration fails",
              info.get("status") == "failed", "status %s" % info.get("status"))
    # (this one did reach stop-copy: the STOP event the two checks
    # above look for is there)
    run.check("source cannot quiesce: paused for stop-copy, then resumed",
              stopped(cur) and wait_running(cur), str(cur.qmp.events))
    run.note("source cannot quiesce: %s" % info.get("error-desc"))
    # QEMU resets a device whose STOP_COPY failed; the guest sees the
    # reset, sets the GPU up again and goes on verifying.
    keeps_running(run, cur, "source cannot quiesce")
    resets = [ln for ln in cur.lines() if "device reset under" in ln]
    run.note("source cannot quiesce: the guest saw %d device reset(s) by QEMU" % len(resets))
    suite.kill(e)


def ping_pong(suite, cur, spare):
    """--pingpong migrations back and forth between two devices; returns
    the VM the guest runs in, the device free and how many were done."""
    run, args = suite.run, suite.args
    done = 0
    for i in range(args.pingpong):
        nxt = suite.vm("p%d" % i, spare, incoming=True)
        info = one_migration(run, cur, nxt, suite.sock, "ping-pong %d" % (i + 1))
        if not info:
            break
        spare = cur.dev
        suite.quit(cur)
        cur = nxt
        done += 1
    run.check("%d ping-pong migrations with the guest verifying" % args.pingpong,
              done == args.pingpong, "%d done" % done)
    return cur, spare, done


def mailbox_of(run, a, label):
    """The mailbox the guest named on the first VM's console, or None."""
    mailbox = [re.search(r"mailbox (0x[0-9a-f]+)", ln) for ln in a.lines()]
    mailbox = [int(m.group(1), 16) for m in mailbox if m]
    run.check("%s: the guest said where its mailbox is" % label, mailbox)
    return mailbox[0] if mailbox else None


def reinit(suite, a, cur, spare):
    """--reinit: the REINIT migration (reinit_migration()), at the mailbox
    the guest named on the first VM's console; returns the VM the guest
    runs in and the device free."""
    run = suite.run
    mailbox = mailbox_of(run, a, "REINIT")
    nxt = suite.vm("r", spare, incoming=True)
    if mailbox and reinit_migration(run, cur, nxt, suite.sock, mailbox):
        spare = cur.dev
        suite.quit(cur)
        return nxt, spare
    suite.kill(nxt)
    return cur, spare


def auto_converge(suite, a, cur, spare, tracking):
    """The hot migration (hot_converge()); returns the VM the guest runs
    in and the device free."""
    run = suite.run
    mailbox = mailbox_of(run, a, "auto-converge")
    if not mailbox:
        return cur, spare
    nxt = suite.vm("h", spare, incoming=True)
    if hot_converge(run, cur, nxt, suite.sock, mailbox, tracking == "device"):
        spare = cur.dev
        suite.quit(cur)
        return nxt, spare
    suite.kill(nxt)
    return cur, spare


# gpumig-mover, next to the guest image (main() sets it), and the libvirt
# hook that starts it (tools/libvirt).
MOVER = "gpumig-mover"
MOVER_HOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                          "libvirt", "gpumig-mover-hook")


def hostdev_xml(dev):
    """A libvirt <hostdev> for @dev, as a domain's XML names it."""
    if not dev.pci:
        return ("<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source>"
                "<address uuid='%s'/></source></hostdev>" % dev.name)
    dom, bus, rest = dev.name.split(":")
    slot, fn = rest.split(".")
    return ("<hostdev mode='subsystem' type='pci' managed='no'><source><address "
            "domain='0x%s' bus='0x%s' slot='0x%s' function='0x%s'/></source></hostdev>"
            % (dom, bus, slot, fn))


def start_mover_hook(dst_dev, out):
    """Run the libvirt hook as libvirt's "migrate begin" on the destination
    would, with the domain's metadata naming this host as the source
    (source="local": no ssh); it leaves gpumig-mover following the
    destination device.  Returns the mover's log."""
    xml = ("<domain type='qemu'><name>gpumig-pc</name><metadata>"
           "<gpumig:mover xmlns:gpumig='urn:gpumig:mover:1' source='local'/></metadata>"
           "<devices>%s</devices></domain>" % hostdev_xml(dst_dev))
    env = dict(os.environ, GPUMIG_MOVER=MOVER, GPUMIG_MOVER_LOGDIR=out,
               GPUMIG_MOVER_TIMEOUT="300")
    log = os.path.join(out, "mover-gpumig-pc-%s.log" % dst_dev.name.replace(":", "_"))
    if os.path.exists(log):
        os.unlink(log)
    subprocess.run([MOVER_HOOK, "gpumig-pc", "migrate", "begin", "-"], input=xml, text=True,
                   env=env, check=True, timeout=60)
    return log


def mover_result(log, timeout):
    """The mover's exit status and the end of its log, once it exited."""
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline:
        try:
            with open(log, errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        m = re.search(r"gpumig-mover exited (\d+)", text)
        if m:
            return int(m.group(1)), text[-400:]
        time.sleep(0.2)
    return None, text[-400:] or "no log"


# The VRAM generation the guest loads before the post-copy migration.
POSTCOPY_GEN = 9


def postcopy(suite, a, cur, spare):
    """Post-copy of device memory under an unchanged QEMU: the guest first
    loads 1.5 MiB of VRAM it then checks a chunk per iteration; with
    migration/postcopy on, the source owes its VRAM at the stop and QEMU
    switches over at once; the guest runs on the destination, its accesses
    to VRAM waiting for their blocks; gpumig-mover carries them, demanded
    ones first; the guest verifies every chunk there and the source scrubs
    what it held.  Returns the VM the guest runs in and the device free."""
    run = suite.run
    mailbox = mailbox_of(run, a, "post-copy")
    if mailbox:
        guest_write(cur, mailbox, POSTCOPY_GEN)
        loaded = wait_for(lambda: any("reinit %d done" % POSTCOPY_GEN in ln
                                      for ln in cur.lines()), 300)
        run.check("post-copy: the guest loaded 1.5 MiB of VRAM it checks chunk by chunk",
                  loaded, "; ".join(cur.lines()[-2:]))
    src_dev = cur.dev
    sysfs(src_dev.sysdir() + "/migration/postcopy", "1")
    nxt = suite.vm("pc", spare, incoming=True)
    before = cur.last_iter()
    log = start_mover_hook(spare, suite.args.out)
    info = migrate(cur, nxt, suite.sock)
    # every chunk of that VRAM is checked once in 24 iterations
    dev = landed(run, cur, nxt, info, "post-copy", before, 3 + 24,
                 " (its VRAM carried after the switchover by gpumig-mover, every chunk "
                 "of the 1.5 MiB checked)")
    if dev is None:
        # no post-copy came: the mover the hook left following the device goes
        subprocess.run(["pkill", "-f", "follow %s " % spare.name], check=False)
    rc, out = mover_result(log, 360 if dev is not None else 10)
    run.check("post-copy: migration/postcopy reads 0 again: it was this migration's",
              sysfs(src_dev.sysdir() + "/migration/postcopy") == "0")
    state = (sysfs(src_dev.sysdir() + "/migration/postcopy_state"),
             sysfs(spare.sysdir() + "/migration/postcopy_state"))
    owed = re.search(r"(\d+) of \d+ blocks owed", out)
    asked = re.search(r"(\d+) asked for first", out)
    run.check("post-copy: the libvirt hook's gpumig-mover delivered every block (%s owed "
              "when it started), blocks the guest waited on first (%s); both sides done"
              % (owed.group(1) if owed else "?", asked.group(1) if asked else "?"),
              rc == 0 and state == ("done", "done") and asked and int(asked.group(1)) > 0,
              "mover %s: %s; states %s" % (rc, out, state))
    if dev is not None:
        run.check("post-copy: the stop carried no VRAM (%s bytes of stop-copy data)"
                  % dev.get("stopcopy_bytes"),
                  int(dev.get("stopcopy_bytes", 1 << 30)) < 65536)
        spare = cur.dev
        suite.quit(cur)
        return nxt, spare
    suite.kill(nxt)
    return cur, spare


def drives_every_device(run, vm, n, label):
    """The guest in @vm runs and drives all @n of its simgpus; where two
    or more are VFs, those also copy into each other's VRAM through their
    apertures (peer to peer), every copy checked."""
    vfs = sum(1 for d in vm.devs if d.pci)
    peers = vfs if vfs > 1 else 0
    what = (", the %d VFs copying into each other's VRAM through their apertures" % vfs
            if peers else "")
    return run.check("%s: QEMU boots the guest and it drives every device%s" % (label, what),
                     vm.wait_iter(3) and vm.gpus() == n and vm.peers() == peers,
                     "gpus %s, peers %s; %s" % (vm.gpus(), vm.peers(),
                                                "; ".join(vm.lines()[-3:])))


def each_device_sent(run, devs, after, label):
    """Each of @devs (@after: their migration/ files once the migration
    completed) pre-copied and sent its own stop-copy data."""
    run.check("%s: every device pre-copied and sent its own stop-copy data" % label,
              all(int(x.get("precopy_rounds", 0)) > 0 and int(x.get("stopcopy_bytes", 0)) > 0
                  for x in after),
              "; ".join("%s: %s pre-copy rounds, %s bytes at stop" % (
                  d, x.get("precopy_rounds"), x.get("stopcopy_bytes"))
                  for d, x in zip(devs, after)))


def several(suite, spec, failures):
    """--several: one VM holding several simgpus (@spec: their profiles,
    e.g. "64M,64M,64M,64M" or "256M,mdev:64M"), the guest driving all of
    them at once; it migrates live to as many fresh devices and back,
    each device pre-copying and stopping.  With @failures, one device of
    the set makes the whole migration fail, the source running on with
    every device usable: a destination of another type for the last one,
    then a first device that cannot quiesce; and where the last device is
    an mdev, the guest resets it in the pre-copy of the way back."""
    if spec.startswith("file:"):
        return several_file(suite, spec[len("file:"):])
    run, pool = suite.run, suite.pool
    profs = spec.split(",")
    label = "%d devices (%s)" % (len(profs), spec)
    src = [pool.get(p) for p in profs]
    dst = [pool.get(p) for p in profs]
    for d in src + dst:
        d.knob("kernel_step_us", 1000)
        d.knob("dirty_rate", 200)
    vms = [suite.vm("s0", src)]
    try:
        a = vms[0]
        if not drives_every_device(run, a, len(src), label):
            return
        for k, (frm, to) in enumerate(((src, dst), (dst, src))):
            nxt = suite.vm("s%d" % (k + 1), to, incoming=True)
            vms.append(nxt)
            cur = vms[-2]
            if k and failures and not to[-1].pci:
                info = several_mdev_reset(suite, a, cur, nxt, "%s: back" % label)
            else:
                # Each device is to pre-copy (each_device_sent below):
                # where QEMU switches over at the link's rate (VFs
                # without DMA logging) it must wait for every round.
                info = one_migration(run, cur, nxt, suite.sock,
                                     "%s: %s" % (label, ("there", "back")[k]),
                                     precopied=frm if mig_checks.SWITCHOVER_AT_LINK else None)
            if not info:
                return
            each_device_sent(run, frm, [d.status() for d in frm],
                             "%s: %s" % (label, ("there", "back")[k]))
            suite.quit(cur)
        cur = vms[-1]
        if failures:
            several_failures(suite, a, cur, profs, dst, label)
        run.check("%s: no wrong result in the guest, %d iterations verified"
                  % (label, cur.last_iter()), not cur.failures(),
                  "; ".join(cur.failures()[:3]))
    finally:
        for vm in vms:
            if vm in suite.vms:
                suite.quit(vm)
        for d in src + dst:
            pool.put(d)


def several_file(suite, spec):
    """--several file:P,P...: one VM holding a device of each profile, the
    guest driving all of them, migrates live to a file (QEMU's file:
    transport: every device pre-copies and stops, its stream in the file);
    QEMU quits, and a new QEMU restores the file onto the same devices,
    the guest verifying on with every one of them (where the test VM
    has no third PF for a second set of four VFs)."""
    run, pool = suite.run, suite.pool
    profs = spec.split(",")
    label = "%d devices (%s) through a file" % (len(profs), spec)
    devs, vms, where, path = [], [], None, None
    try:
        devs = [pool.get(p) for p in profs]
        for d in devs:
            d.knob("kernel_step_us", 1000)
            d.knob("dirty_rate", 200)
        # QEMU 11.1 runs chrooted and sees OUT only; QEMU 10 writes the
        # test VM's own /tmp, not OUT's 9p share (a round trip a write).
        where = (suite.args.out if mig_vm.QEMU[0] == "chroot"
                 else tempfile.mkdtemp(prefix="gpumig-"))
        path = os.path.join(where, "several.mig")
        vms.append(suite.vm("f0", devs))
        a = vms[0]
        if not drives_every_device(run, a, len(devs), label):
            return
        # A file takes the whole stream, every round appended: without
        # device dirty tracking of guest RAM (a VF on Debian's 6.12) QEMU
        # resends all of it each round, and under emulation it never
        # converged within the default 300 ms: the test VM's /tmp filled.
        # Switch over once every device finished a pre-copy round (at once,
        # two of four had none: a file has no return path, so no
        # switchover-ack waits for their initial data).
        a.qmp.cmd("migrate", uri="file:" + path)
        mig_checks.wait_precopied(a, devs)
        a.qmp.cmd("migrate-set-parameters", **{"downtime-limit": 60000})
        info = wait_migration(a, timeout=600)
        after = [d.status() for d in devs]
        saved = a.last_iter()
        if not run.check("%s: the running VM migrated to the file" % label,
                         info.get("status") == "completed" and not a.failures(),
                         "%s %s; %s" % (info.get("status"), info.get("error-desc", ""),
                                        "; ".join(a.failures()[:3]))):
            return
        each_device_sent(run, devs, after, label)
        suite.quit(a)
        b = suite.vm("f1", devs, incoming=True)
        vms.append(b)
        b.qmp.cmd("migrate-incoming", uri="file:" + path)
        info = wait_migration(b, timeout=600)
        if info.get("status") == "completed" and b.status() == "paused":
            b.qmp.cmd("cont")
        ok = (info.get("status") == "completed" and wait_running(b)
              and b.wait_iter(saved + 3))
        run.check("%s: restored onto the same devices, the guest verifies on with every one "
                  "(iterations %d to %d)" % (label, saved, b.last_iter()),
                  ok and not b.failures(),
                  "%s %s; %s" % (info.get("status"), info.get("error-desc", ""),
                                 "; ".join(b.failures()[:3] or b.lines()[-3:])))
    finally:
        for vm in vms:
            if vm in suite.vms:
                suite.quit(vm)
        for d in devs:
            pool.put(d)
        if path and os.path.exists(path):
            os.unlink(path)
        if where and where != suite.args.out:
            os.rmdir(where)


def several_failures(suite, a, cur, profs, free, label):
    """One device of @cur's set fails the migration of them all; @free:
    devices of the set's profiles that no VM holds; @a: the guest's first
    VM (its console names the mailbox).  Where the last device is a VF,
    the guest also resets it (a function-level reset) in pre-copy."""
    run = suite.run
    other = "mdev:" + ("256M" if profs[-1].endswith("64M") else "64M")
    bad = suite.pool.get(other)
    c = suite.vm("sx", free[:-1] + [bad], incoming=True)
    cur.qmp.events.clear()
    info = migrate(cur, c, suite.sock)
    run.check("%s: a destination of another type for the last device: the migration fails"
              % label, info.get("status") == "failed", "status %s" % info.get("status"))
    run.check("%s: ... and the source never stopped" % label, not stopped(cur),
              str(cur.qmp.events))
    keeps_running(run, cur, "%s, incompatible last device" % label)
    suite.kill(c)
    suite.pool.put(bad)
    c = suite.vm("sq", free, incoming=True)
    cur.dev.knob("ack_drop", 1)
    cur.qmp.events.clear()
    info = migrate(cur, c, suite.sock)
    cur.dev.knob("ack_drop", 0)
    run.check("%s: a first device that cannot quiesce: the migration fails" % label,
              info.get("status") == "failed", "status %s" % info.get("status"))
    run.note("%s, first device cannot quiesce: %s" % (label, info.get("error-desc")))
    keeps_running(run, cur, "%s, first device cannot quiesce" % label)
    if cur.devs[-1].pci:
        several_reset(suite, a, cur, free, label)
    run.check("%s: after the failures every device is running again" % label,
              all(d.status().get("state") == "RUNNING" for d in cur.devs),
              "; ".join("%s: %s" % (d, d.status_line()) for d in cur.devs))
    suite.kill(c)


def several_mdev_reset(suite, a, cur, nxt, label):
    """@cur's migration to @nxt, with the guest resetting its last device,
    an mdev, in pre-copy: an mdev has no function-level reset, so the
    guest resets it through its CONTROL register, as its driver would.
    Unlike a VF's FLR (several_reset()), that reset is not VFIO's: the
    device's state after it is what the stream carries on (new initial
    data, VFIO_PRECOPY_INFO_REINIT where QEMU opted in), so the migration
    must complete, the guest verifying every device on the destination.
    Returns what one_migration() does."""
    run = suite.run
    k = len(cur.devs) - 1
    mailbox = mailbox_of(run, a, "%s, reset of gpu%d" % (label, k))
    if not mailbox:
        return None
    before = cur.last_iter()
    # Where QEMU opted in (--reinit), its trace must show the reset as
    # new initial data: gpumig saw it.
    base = trace_on(cur, ("vfio_query_precopy_size*",)) if suite.args.reinit else None
    # Held in pre-copy until the guest has reset the device, as
    # migrate_sampled() holds it: a slow link and a downtime limit (about
    # 10 KiB) that the guest's own RAM stamps exceed every round.
    limit = cur.qmp.cmd("query-migrate-parameters")["downtime-limit"]
    cur.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": mig_checks.RELEASE_BW})
    start_migration(cur, nxt, suite.sock, mig_checks.RELEASE_HOLD_MS)
    pre = wait_for(lambda: cur.devs[k].status().get("state") == "PRE_COPY", 120)
    guest_write(cur, mailbox + 12, k + 1)
    done = wait_for(lambda: any("gpu%d: control-register reset done" % k in ln
                                for ln in cur.lines()), 120)
    st = cur.qmp.cmd("query-migrate").get("status")
    run.check("%s: the guest reset gpu%d (an mdev) through its CONTROL register in "
              "pre-copy" % (label, k), pre and done and st == "active",
              "in pre-copy %s, reset seen %s, migration %s" % (pre, done, st))
    # Released as migrate() runs a migration: link_bandwidth() reads the
    # max-bandwidth in force.
    cur.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": DEFAULT_BW})
    cur.qmp.cmd("migrate-set-parameters",
                **{"downtime-limit": mig_checks.DOWNTIME_MS or limit,
                   "avail-switchover-bandwidth": link_bandwidth(cur)})
    info = wait_migration(cur)
    if info["status"] == "timeout":
        cur.qmp.cmd("migrate_cancel")
    if base is not None:
        t = trace_since(cur, base)
        run.check("%s: QEMU saw the reset as new initial data (VFIO_PRECOPY_INFO_REINIT)"
                  % label, re.search(r"vfio_query_precopy_size .*reinit 1", t),
                  "no 'reinit 1' in QEMU's trace: %s" % t[-400:])
    dev = landed(run, cur, nxt, info, label, before, 3,
                 ", the reset device set up again before the stop")
    if dev is None:
        return None
    info["_device"] = dev
    return info


def several_reset(suite, a, cur, free, label):
    """The guest resets its last device (a VF: function-level reset) while
    the migration is in pre-copy: the device's data stops there, so the
    whole migration fails, the source running on."""
    run = suite.run
    k = len(cur.devs) - 1
    mailbox = mailbox_of(run, a, "%s, reset of gpu%d" % (label, k))
    if not mailbox:
        return
    c = suite.vm("sr", free, incoming=True)
    cur.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": 1 << 20})
    cur.qmp.events.clear()
    start_migration(cur, c, suite.sock)
    pre = wait_for(lambda: cur.devs[k].status().get("state") == "PRE_COPY", 120)
    guest_write(cur, mailbox + 12, k + 1)
    done = wait_for(lambda: any("gpu%d: function-level reset done" % k in ln
                                for ln in cur.lines()), 120)
    cur.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": DEFAULT_BW})
    info = wait_migration(cur)
    run.check("%s: gpu%d reset by the guest in pre-copy: the migration fails" % (label, k),
              pre and done and info.get("status") == "failed",
              "in pre-copy %s, reset seen %s, status %s" % (pre, done, info.get("status")))
    run.note("%s, gpu%d reset in pre-copy: %s" % (label, k, info.get("error-desc")))
    keeps_running(run, cur, "%s, gpu%d reset in pre-copy" % (label, k))
    suite.kill(c)


def cross_version(suite):
    """--cross: hosts upgrade QEMU apart from gpumig, so a guest started
    under the other QEMU (--cross, e.g. 10.0) on a machine type both know
    (--cross-machine) migrates live to this one (--qemu, e.g. 11.1) and
    back, device included, the guest verifying throughout."""
    run, args = suite.run, suite.args
    other, mt = shlex.split(args.cross), args.cross_machine
    d1, d2 = suite.pool.get("256M"), suite.pool.get("256M")
    a = suite.vm("x0", d1, qemu=other, machine=mt)
    b = None
    try:
        if not run.check("cross-version: the other QEMU boots the guest on %s" % mt,
                         a.wait_iter(3), "; ".join(a.lines()[-3:] + [a.errlog])):
            return
        b = suite.vm("x1", d2, incoming=True, machine=mt)
        there = "QEMU %d.%d to %d.%d (%s)" % (a.version + b.version + (mt,))
        if not one_migration(run, a, b, suite.sock, "cross-version: " + there):
            return
        suite.quit(a)
        a = suite.vm("x2", d1, qemu=other, incoming=True, machine=mt)
        back = "QEMU %d.%d back to %d.%d (%s)" % (b.version + a.version + (mt,))
        if not one_migration(run, b, a, suite.sock, "cross-version: " + back):
            return
        run.check("cross-version: no wrong result in the guest, %d iterations verified"
                  % a.last_iter(), not a.failures(), "; ".join(a.failures()[:3]))
    finally:
        for vm in (a, b):
            if vm is not None and vm in suite.vms:
                suite.quit(vm)
        suite.pool.put(d1)
        suite.pool.put(d2)


def scenarios(suite):
    """Every scenario, in order; False when the suite ended after the
    first migration (a failure, or --demo)."""
    m1, m2, tracking = devices(suite)
    first = first_migration(suite, m1, m2, tracking)
    if not first:
        return False
    a, cur = first
    spare = m1
    only = suite.args.only.split(",") if suite.args.only else None
    if isinstance(m1, list):
        # --first: the scenarios after the first migration are written
        # for one device; this set ends here
        suite.run.check("no wrong result in the guest, %d iterations verified"
                        % cur.last_iter(), not cur.failures(),
                        "; ".join(cur.failures()[:3]))
        if suite.args.linux and only and "lost" in only:
            cur = linux_lost(suite, cur, m1)
        suite.quit(cur)
        for d in m1 + m2:
            suite.pool.put(d)
        return True

    def want(name):
        return only is None or name in only

    if want("incompatible"):
        incompatible_destination(suite, cur)
    if want("cancel"):
        cancel_in_precopy(suite, cur, spare)
    if want("quiesce"):
        source_cannot_quiesce(suite, cur, spare)
    done = 0
    if want("pingpong"):
        cur, spare, done = ping_pong(suite, cur, spare)
    if suite.args.reinit and done == suite.args.pingpong and want("reinit"):
        cur, spare = reinit(suite, a, cur, spare)
    if want("converge"):
        cur, spare = auto_converge(suite, a, cur, spare, tracking)
    if want("postcopy"):
        cur, spare = postcopy(suite, a, cur, spare)
    suite.run.check("no wrong result in the guest, %d iterations verified" % cur.last_iter(),
                    not cur.failures(), "; ".join(cur.failures()[:3]))
    # Last, on fresh VMs: the devices go back to the pool.
    suite.quit(cur)
    suite.pool.put(cur.dev)
    suite.pool.put(spare)
    for k, spec in enumerate(suite.args.several or []):
        if want("several"):
            several(suite, spec, k == 0 and not suite.args.no_several_failures)
    if suite.args.cross and want("crossver"):
        cross_version(suite)
    return True


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--guest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--demo", action="store_true",
                    help="one migration and a short human report")
    ap.add_argument("--pingpong", type=int, default=10)
    ap.add_argument("--only", metavar="SCENARIO,...",
                    help="after the first migration, only these: incompatible, cancel, "
                         "quiesce, pingpong, reinit, converge, postcopy, several, crossver, "
                         "lost (--linux with --first: post-copy abandoned under the guest) "
                         "(none: the first migration alone)")
    ap.add_argument("--qemu", default="qemu-system-x86_64",
                    help="the QEMU command, e.g. 'chroot ROOT qemu-system-x86_64'")
    ap.add_argument("--several", nargs="+", metavar="PROFILE,PROFILE...",
                    help="also a VM with several devices of these profiles (mdev:P makes "
                    "an mdev beside VFs), migrated there and back; the first set also "
                    "fails a migration by one device; file:P,P... migrates to a file "
                    "and restores it onto the same devices")
    ap.add_argument("--no-several-failures", action="store_true",
                    help="the first --several set only migrates there and back")
    ap.add_argument("--cross", metavar="CMD",
                    help="also the cross-version scenario: a guest started under CMD "
                    "(another QEMU) migrates to --qemu's and back")
    ap.add_argument("--cross-machine", default="pc-q35-10.0",
                    help="the machine type both QEMUs run it on (default %(default)s)")
    ap.add_argument("--reinit", action="store_true",
                    help="also the REINIT scenario: QEMU 11.1 on a kernel with "
                    "VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2")
    ap.add_argument("--linux", metavar="KERNEL,INITRD",
                    help="boot the small Linux guest (simgpu-guest and simgpu-work, "
                    "scripts/linux-guest.sh) instead of the multiboot one")
    ap.add_argument("--first", metavar="PROFILE,PROFILE...",
                    help="the first migration's VM holds a device of each profile "
                    "(mdev:P an mdev beside VFs); then only that migration runs "
                    "(with --linux and --only lost, and the abandoned post-copy)")
    ap.add_argument("--pci", nargs="+", metavar="PROFILE=ADDR,...",
                    help="VFs bound to gpumig-vfio-pci: three of 256M, one of 64M")
    args = ap.parse_args()
    if args.first and "," in args.first and args.only != "none" and \
            not (args.linux and args.only == "lost"):
        ap.error("--first with several devices runs the first migration alone: add --only "
                 "none (or, with --linux, --only lost)")
    return args


def main():
    args = parse_args()
    mig_vm.QEMU = shlex.split(args.qemu)
    mig_checks.GPUMIGCTL = os.path.join(os.path.dirname(os.path.abspath(args.guest)),
                                        "gpumigctl")
    global MOVER
    MOVER = os.path.join(os.path.dirname(os.path.abspath(args.guest)), "gpumig-mover")
    os.makedirs(args.out, exist_ok=True)
    suite = Suite(args)
    run = suite.run

    try:
        scenarios(suite)        # False: it stopped early (demo, or a failure)
    except Exception as ex:          # report, never hang the VM run
        tb = traceback.extract_tb(ex.__traceback__)
        run.check("the QEMU harness ran to its end", False, "%r at %s" % (
            ex, " <- ".join("%s:%d" % (f.name, f.lineno) for f in reversed(tb))))
    finally:
        for vm in suite.vms:
            vm.quit()
        suite.pool.release()
        run.finish()
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
