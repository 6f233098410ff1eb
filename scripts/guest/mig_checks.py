# SPDX-License-Identifier: GPL-2.0
"""Driving a QEMU live migration and checking it, for the QEMU migration
suite (qemu_mig.py): starting one between two VMs over a unix socket and
waiting for its end (start_migration, wait_migration, migrate), the
sampled migration whose pre-copy is held open for the Sampler
(migrate_sampled), what query-migrate says of the device's pending data
(check_remaining), and the checks of one migration that must succeed
(one_migration, landed) or of a source that must keep running
(stopped, keeps_running).  qemu_mig.py sets GPUMIGCTL, DOWNTIME_MS and
SWITCHOVER_AT_LINK here (mig_checks.DOWNTIME_MS = ...).
"""
import json
import os
import subprocess
import time

from mig_sampler import VRAM_SECTION, Sampler, check_samples
from mig_vm import sysfs
from qmp_client import QMPError

# GPUMIGCTL, DOWNTIME_MS and SWITCHOVER_AT_LINK are set by qemu_mig.py
# (main(), and devices() by simgpu's dirty tracking) as attributes of this
# module, and read here at each use: import them by name nowhere.
GPUMIGCTL = "gpumigctl"          # next to the guest program (main())
DEFAULT_BW = 128 << 20          # QEMU's default max-bandwidth
# Without device dirty tracking QEMU counts all guest memory dirty in every
# round, so what stop-copy must send never shrinks below guest RAM: allow
# the downtime that takes, as an operator would (0: QEMU's default).
DOWNTIME_MS = 0
# On a VF, which can reach all guest memory, type1 then reports all of it
# dirty in every round, and QEMU's own bandwidth figure swings too widely
# under emulation to fit even 5 s (the VF suite on Debian's kernel met it
# after 100 s on one machine, never in 900 s on CI's): tell QEMU the
# link's bandwidth for the switchover decision (avail-switchover-bandwidth)
# as an operator with a known link would.  Early switchover is safe there:
# all guest memory is sent again in stop-copy (libvirt.rst).  An mdev's
# type1 bitmap holds only the pages it wrote, and needs neither.
SWITCHOVER_AT_LINK = False


def start_migration(src, dst, sock, downtime_ms=None, switchover_bw=0):
    """Start src -> dst (dst started with -incoming defer) over a unix socket,
    with a downtime limit of @downtime_ms when given, and QEMU deciding on
    switchover at @switchover_bw (0: at the bandwidth it measures)."""
    if os.path.exists(sock):
        os.unlink(sock)
    caps = [{"capability": "return-path", "state": True},
            {"capability": "switchover-ack", "state": True}]
    for vm in (src, dst):
        vm.qmp.cmd("migrate-set-capabilities", capabilities=caps)
    if downtime_ms is None and DOWNTIME_MS:
        downtime_ms = DOWNTIME_MS
    if downtime_ms is not None:
        src.qmp.cmd("migrate-set-parameters", **{"downtime-limit": downtime_ms})
    src.qmp.cmd("migrate-set-parameters", **{"avail-switchover-bandwidth": switchover_bw})
    dst.qmp.cmd("migrate-incoming", uri="unix:" + sock)
    src.qmp.cmd("migrate", uri="unix:" + sock)


def wait_migration(src, until=("completed", "failed", "cancelled"), timeout=900):
    """Poll query-migrate until its status is one of @until."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        info = src.qmp.cmd("query-migrate")
        if info.get("status") in until:
            return info
        time.sleep(0.2)
    return {"status": "timeout"}


def migrate_sampled(src, dst, sock, samples, release=None):
    """migrate(), sampling query-migrate between two readings of the source
    device's remaining_bytes while it is in PRE_COPY: (before, info, after).
    With @release (two Events, enough and some, and a max-bandwidth), the
    migration starts at RELEASE_BW and gets that bandwidth once enough is
    set, or after RELEASE_AFTER seconds once some is, or after
    RELEASE_LATEST: pre-copy lasts until the samplers have enough.  The
    downtime limit stays RELEASE_HOLD_MS after that until each of @src's
    devices finished a pre-copy round (up to PRECOPIED_LATEST): the
    samplers watch the first device only, and a Linux guest's mdev beside
    a VF had none when the release let QEMU switch over.  (Not the
    bandwidth: at RELEASE_BW the second device's rounds starved behind
    guest RAM for all of PRECOPIED_LATEST.)"""
    path = src.dev.sysdir() + "/migration/"
    hold = None
    if release:
        # QEMU's own bandwidth figure until the release, at RELEASE_BW and
        # RELEASE_HOLD_MS: that keeps pre-copy going.
        src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": RELEASE_BW})
        hold = RELEASE_HOLD_MS
        limit = DOWNTIME_MS or src.qmp.cmd("query-migrate-parameters")["downtime-limit"]
    start_migration(src, dst, sock, hold)
    start = time.time()
    deadline = start + 900
    held = False
    while time.time() < deadline:
        el = time.time() - start
        if release and (release[0].is_set() or el > RELEASE_LATEST or
                        (el > RELEASE_AFTER and release[1].is_set())):
            src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": release[2]})
            src.qmp.cmd("migrate-set-parameters",
                        **{"avail-switchover-bandwidth": link_bandwidth(src)})
            release, held = None, True
        if held and (el > PRECOPIED_LATEST or all_precopied(src.devs)):
            src.qmp.cmd("migrate-set-parameters", **{"downtime-limit": limit})
            held = False
        d1 = int(sysfs(path + "remaining_bytes"))
        info = src.qmp.cmd("query-migrate")
        d2 = int(sysfs(path + "remaining_bytes"))
        if info.get("status") in ("completed", "failed", "cancelled"):
            return info
        if info.get("status") == "active" and sysfs(path + "state") == "PRE_COPY":
            samples.append((d1, info, d2))
        time.sleep(0.05)
    src.qmp.cmd("migrate_cancel")
    return {"status": "timeout"}


def check_remaining(run, vm, samples, label):
    """What query-migrate says of the device's pending data, by QEMU version
    (issue 15): 11.1's system-wide `remaining` holds it, 10.0 has none."""
    busy = [(d1, i, d2) for d1, i, d2 in samples if max(d1, d2) > 0]
    ver = "%d.%d" % vm.version
    if vm.version < (11, 1):
        run.check("%s: QEMU %s's query-migrate has no device figure while the device "
                  "has data pending (ram.remaining is guest RAM only)" % (label, ver),
                  busy and all("remaining" not in i for _, i, _ in samples),
                  "%d samples, %d with device data" % (len(samples), len(busy)))
        if busy:
            d1, i, d2 = max(busy, key=lambda x: x[0])
            run.note("%s: QEMU %s: ram.remaining %d bytes while the device had %d bytes "
                     "pending: an orchestrator adds migration/remaining_bytes"
                     % (label, ver, i["ram"]["remaining"], d1))
        return
    # QEMU 11.1 adds to `remaining` what its VFIO code last learnt of the
    # device (PRECOPY_INFO and MIG_DATA_SIZE at its own exact queries, less
    # what it read since; stop-copy's share included): it never ignores the
    # device, but between two exact queries it can be stale.  Required: a
    # device share (remaining - ram.remaining) in every sample where the
    # device has data pending; counted and printed: samples where it lies
    # between two readings of the device's figure, and how far off the
    # others were.
    qdev = [(d1, i.get("remaining", -1) - i["ram"]["remaining"], d2) for d1, i, d2 in busy]
    inside = [min(d1, d2) - VRAM_SECTION <= q <= max(d1, d2) + VRAM_SECTION for d1, q, d2 in qdev]
    # Required where the device had more than one VRAM section pending at
    # both readings around QEMU's.  QEMU learns of newly dirtied data only
    # at its next exact query, and the guest dirties one VRAM block between
    # two of them: a sample with one section pending may meet QEMU's cache
    # from before that block (seen: 65576 then 64600, device share 0), and
    # one whose second reading is 0 may meet QEMU's query after the last
    # byte was read (seen: 65576 then 0).
    missing = [(d1, q, d2) for d1, q, d2 in qdev if q <= 0 and min(d1, d2) > VRAM_SECTION]
    run.check("%s: QEMU %s's query-migrate remaining includes the device's pending data "
              "(remaining - ram.remaining > 0 whenever the device has more than one VRAM "
              "section pending)"
              % (label, ver), busy and not missing and all("remaining" in i for _, i, _ in busy),
              "%d samples with device data, without a device share: %s"
              % (len(busy), missing[:4]))
    if busy:
        stale = max(abs(q - (d1 + d2) // 2) for d1, q, d2 in qdev)
        run.note("%s: QEMU %s: in %d of %d samples QEMU's device share lay between two "
                 "readings of remaining_bytes (within a VRAM section); the others were "
                 "QEMU's cached estimate, up to %d bytes off the device's figure"
                 % (label, ver, sum(inside), len(busy), max(stale, 0)))
        d1, q, d2 = qdev[0]
        run.note("%s: e.g. the device said %d then %d, QEMU's device share %d"
                 % (label, d1, d2, q))


def link_bandwidth(vm):
    """With SWITCHOVER_AT_LINK, the bandwidth QEMU is to decide on
    switchover at: the max-bandwidth in force; 0 (its own figure)
    otherwise."""
    if not SWITCHOVER_AT_LINK:
        return 0
    return vm.qmp.cmd("query-migrate-parameters")["max-bandwidth"]


def all_precopied(devs):
    """Whether each of @devs finished a pre-copy round."""
    return all(int(d.status().get("precopy_rounds", 0)) > 0 for d in devs)


def wait_precopied(src, devs, timeout=300):
    """Until each of @devs finished a pre-copy round, or @src's migration
    ended, or @timeout seconds passed."""
    deadline = time.time() + timeout
    while time.time() < deadline and not all_precopied(devs):
        if src.qmp.cmd("query-migrate").get("status") in ("completed", "failed",
                                                          "cancelled"):
            return
        time.sleep(0.2)


def migrate(src, dst, sock, precopied=None):
    """Migrate src -> dst to the end; query-migrate's last answer.  With
    @precopied (devices), QEMU may switch over only once each of them
    finished a pre-copy round (300 s at most): a 1 ms downtime limit holds
    it until then.  Switchover-ack waits for a device's initial data only,
    and where QEMU re-sends all guest RAM each round (a VF on Debian's
    6.12) and switches over at the link's rate, it did so after its first
    round, with three of four devices' rounds unfinished."""
    limit = src.qmp.cmd("query-migrate-parameters")["downtime-limit"]
    start_migration(src, dst, sock, 1 if precopied else None,
                    switchover_bw=link_bandwidth(src))
    if precopied:
        wait_precopied(src, precopied)
        src.qmp.cmd("migrate-set-parameters", **{"downtime-limit": DOWNTIME_MS or limit})
    info = wait_migration(src)
    if info["status"] == "timeout":
        src.qmp.cmd("migrate_cancel")
    return info


def wait_running(vm, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if vm.status() == "running":
                return True
        except (QMPError, EOFError, OSError):
            return False
        time.sleep(0.2)
    return False


def describe(info, src_dev):
    ram = info.get("ram", {})
    vfio = info.get("vfio", {})
    return ("QEMU: total %s ms, downtime %s ms, setup %s ms, RAM %d KiB in %s dirty syncs, "
            "device %d KiB (vfio transferred); device: %s pre-copy rounds, %d KiB pre-copy, "
            "%d bytes stop-copy, %s DMA log reports"
            % (info.get("total-time"), info.get("downtime"), info.get("setup-time"),
               ram.get("transferred", 0) // 1024, ram.get("dirty-sync-count"),
               vfio.get("transferred", 0) // 1024, src_dev.get("precopy_rounds"),
               int(src_dev.get("precopy_bytes", 0)) // 1024,
               int(src_dev.get("stopcopy_bytes", 0)), src_dev.get("dma_log_reports")))


# A sampled migration starts this slow, whatever the machine's speed, and
# speeds up once the Sampler holds SAMPLES_WANTED samples with data pending
# (or after RELEASE_AFTER seconds once it holds SAMPLES_NEEDED, the fewest
# the check accepts; at the latest after RELEASE_LATEST): a fast machine's
# pre-copy is otherwise over in a few samples (about 170 ms on the distro
# kernel), and under KASAN 8 s once gave only two.
RELEASE_BW = 1 << 20
RELEASE_AFTER = 8
RELEASE_LATEST = 150
PRECOPIED_LATEST = 300
# ...and with a downtime limit of 10 ms until then.  With device dirty
# tracking the guest's RAM dirties only its 64 stamp pages between two
# syncs: at RELEASE_BW and QEMU's 300 ms (about 300 KiB) QEMU once
# switched over after 21 s by itself, the sampler holding one sample with
# device data pending.  10 ms is about 10 KiB, which the stamps alone
# pass every sync.  (Not 0: below any threshold at all QEMU switches over
# as soon as a RAM round drains, without the sync that would refill it.)
RELEASE_HOLD_MS = 10


def one_migration(run, src, dst, sock, label, sample=False, precopied=None):
    """A live migration that must succeed; returns the query-migrate info.
    With @sample, the device's figures are checked against VFIO's; with
    @precopied, see migrate()."""
    before = src.last_iter()
    sampler = Sampler(src) if sample else None
    if sampler:
        # Slow enough that pre-copy lasts: samples with data pending.
        # Without device dirty tracking all 64 MiB of guest RAM is re-sent
        # each round: at 32 MiB/s that still fits DOWNTIME_MS (QEMU is
        # told so on a VF: SWITCHOVER_AT_LINK).  Slower still (RELEASE_BW,
        # QEMU's own switchover figure) until the Sampler has enough.
        tracked = src.dev.status().get("dirty_tracking") == "device"
        release = (sampler.enough, sampler.some, (8 if tracked else 32) << 20)
        sampler.start()
        # What an orchestrator's script sees meanwhile: gpumigctl watch.
        watch = subprocess.Popen([GPUMIGCTL, "--json", "watch", src.dev.name,
                                  "--interval", "20", "--count", "150", "--link", "64"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples = []
    info = migrate_sampled(src, dst, sock, samples, release) if sampler \
        else migrate(src, dst, sock, precopied)
    if sampler:
        check_remaining(run, src, samples, label)
        sampler.stop.set()
        sampler.join(60)
        check_samples(run, sampler, label)
        try:
            out = watch.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            watch.kill()
            out = watch.communicate()[0]
        lines = [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
        pre = [x for x in lines if x.get("state") == "PRE_COPY" and x["remaining_bytes"] > 0]
        link = 64e6 / 8

        def eta_ok(x):
            rate = x["dirty_rate_bytes_per_sec"]
            if rate >= link:
                return x["seconds_left"] == -1
            return abs(x["seconds_left"] - x["remaining_bytes"] / (link - rate)) < 0.002

        run.check("%s: gpumigctl watch saw pre-copy with data pending, and the time "
                  "it takes at the link" % label,
                  pre and all(eta_ok(x) for x in pre),
                  "%d samples, %d in pre-copy with data; %s" % (len(lines), len(pre),
                                                                out[-300:]))
        if pre:
            run.note("%s: gpumigctl watch: %d samples, %d in pre-copy with data pending, "
                     "e.g. %s" % (label, len(lines), len(pre), json.dumps(pre[0])))
    dev = landed(run, src, dst, info, label, before, 3)
    if dev is None:
        return None
    info["_device"] = dev
    info["_iters"] = (before, dst.last_iter())
    return info


def landed(run, src, dst, info, label, before, iters, what=""):
    """The checks after a migration that must succeed: completed, the
    destination runs, the guest verifies @iters more iterations there
    (@what says what else it checks).  Returns the source device's status,
    or None when the migration did not complete."""
    dev = src.dev.status()
    ok = info.get("status") == "completed"
    run.check("%s: migration completed" % label, ok,
              "status %s: %s" % (info.get("status"), info.get("error-desc", "")))
    if not ok:
        return None
    run.note("%s: %s" % (label, describe(info, dev)))
    # what the guest verified on the source up to the switchover counts too
    run.check("%s: no wrong result in the guest on the source" % label,
              not src.failures(), "; ".join(src.failures()[:3]))
    run.check("%s: destination running" % label, wait_running(dst))
    resumed = dst.wait_iter(before + iters)
    run.check("%s: the guest keeps verifying on the destination%s" % (label, what),
              resumed and not dst.failures(),
              "last iteration %d (source had %d); %s" %
              (dst.last_iter(), before, "; ".join(dst.failures()[:3])))
    return dev


def stopped(vm):
    """Whether the VM paused since its events were last cleared."""
    vm.qmp.cmd("query-status")          # collects pending events
    return any(e.get("event") == "STOP" for e in vm.qmp.events)


def keeps_running(run, vm, label):
    before = vm.last_iter()
    ok = wait_running(vm, 30) and vm.wait_iter(before + 2) and not vm.failures()
    run.check("%s: the source keeps running and verifying" % label, ok,
              "status %s, iteration %d -> %d; %s" %
              (vm.status() if vm.p.poll() is None else "exited", before,
               vm.last_iter(), "; ".join(vm.failures()[:3])))


def wait_for(cond, timeout, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()
