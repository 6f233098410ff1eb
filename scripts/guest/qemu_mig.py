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
              [--pci 256M=ADDR,ADDR,ADDR 64M=ADDR]

Runs as root inside the VM.  Without --pci, simgpu is loaded and the
script creates and removes its own mdev instances; with --pci, the VFs
named (bound to gpumig-vfio-pci, by profile) are assigned with
-device vfio-pci,host=ADDR instead.
"""
import argparse
import ctypes
import errno
import fcntl
import json
import os
import re
import shlex
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

MDEV_TYPES = "/sys/class/mdev_bus/simgpu/mdev_supported_types"
QEMU = ["qemu-system-x86_64"]  # --qemu: e.g. chroot into a root with another QEMU
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


class QMPError(Exception):
    pass


class QMP:
    """Just enough QMP: json lines over a unix socket."""

    # The first QEMU 11.1 of a debug VM (chroot into the trixie root over
    # 9p, page cache cold, under KASAN) once took about 3 minutes to open
    # its QMP socket on a loaded machine.
    def __init__(self, path, timeout=360):
        deadline = time.time() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        self.f = self.sock.makefile("rw")
        self.events = []
        self._read()                     # greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        line = self.f.readline()
        if not line:
            raise EOFError("QMP connection closed")
        return json.loads(line)

    def cmd(self, _command, **args):
        name = _command
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.f.write(json.dumps(msg) + "\n")
        self.f.flush()
        while True:
            r = self._read()
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r:
                raise QMPError("%s: %s" % (name, r["error"].get("desc")))
            return r.get("return")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Dev:
    """A simgpu: an mdev instance (by UUID) or a VF bound to gpumig-vfio-pci
    (by PCI address).  Both lay out migration/ alike; their test knobs are
    simgpu's debugfs or the PF driver's."""

    def __init__(self, name, pci):
        self.name, self.pci = name, pci

    def __str__(self):
        return self.name

    def vfio_arg(self):
        if self.pci:
            return "host=%s" % self.name
        return "sysfsdev=/sys/bus/mdev/devices/%s" % self.name

    def sysdir(self):
        return "/sys/bus/%s/devices/%s" % ("pci" if self.pci else "mdev", self.name)

    def status_line(self):
        return sysfs(self.sysdir() + "/migration/status")

    def status(self):
        return dict(kv.split("=", 1) for kv in self.status_line().split() if "=" in kv)

    def knob(self, name, value):
        sysfs("/sys/kernel/debug/%s/%s/%s" % ("simgpu-pf" if self.pci else "simgpu",
                                              self.name, name), str(value))


class Pool:
    """Devices by profile: mdev instances made on demand, or given VFs."""

    def __init__(self, pci):
        self.free = {}
        self.made = []
        self.pci = pci is not None
        for spec in pci or []:
            prof, addrs = spec.split("=", 1)
            self.free[prof] = [Dev(a, True) for a in addrs.split(",") if a]

    def get(self, prof):
        if self.pci:
            return self.free[prof].pop(0)
        d = Dev(create(prof), False)
        self.made.append(d)
        return d

    def release(self):
        for d in self.made:
            remove(d.name)


class VM:
    """One QEMU process with the guest and one simgpu."""

    def __init__(self, name, dev, args, incoming=False):
        self.name, self.dev = name, dev
        self.log = os.path.join(args.out, name + ".debugcon")
        self.errlog = os.path.join(args.out, name + ".stderr")
        qmp = os.path.join(args.out, name + ".qmp")
        for f in (self.log, qmp):
            if os.path.exists(f):
                os.unlink(f)
        cmd = QEMU + ["-machine", "q35", "-accel", "tcg", "-m", "64",
               "-nodefaults", "-display", "none", "-serial", "none",
               "-monitor", "none", "-kernel", args.guest,
               "-chardev", "file,id=dbg,path=" + self.log,
               "-device", "isa-debugcon,chardev=dbg,iobase=0xe9",
               "-device", "vfio-pci,id=gpu0,addr=05.0,%s,enable-migration=on" % dev.vfio_arg(),
               "-qmp", "unix:%s,server=on,wait=off" % qmp]
        if incoming:
            cmd += ["-incoming", "defer"]
        self.err = open(self.errlog, "w")
        self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                  stdout=self.err, stderr=self.err)
        try:
            self.qmp = QMP(qmp)
            v = self.qmp.cmd("query-version")["qemu"]
            self.version = (v["major"], v["minor"])
        except Exception:
            self.kill()
            raise

    def lines(self):
        # The log is on the VM's 9p share while QEMU appends to it; 7.3's
        # 9p client now and then fails such a read with ENODATA: try again,
        # and fall back on what the last read saw.
        for _ in range(20):
            try:
                with open(self.log, errors="replace") as f:
                    self._lines = f.read().splitlines()
                return self._lines
            except FileNotFoundError:
                return []
            except OSError as e:
                if e.errno != errno.ENODATA:
                    raise
                time.sleep(0.05)
        return getattr(self, "_lines", [])

    def last_iter(self):
        last = 0
        for ln in self.lines():
            m = re.match(r"gpumig-guest: iter (\d+) ok", ln)
            if m:
                last = int(m.group(1))
        return last

    def failures(self):
        return [ln for ln in self.lines() if "FAIL" in ln]

    def wait_iter(self, n, timeout=300):
        """Wait until the guest reports iteration >= n; True if it did."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.last_iter() >= n:
                return True
            if self.failures() or self.p.poll() is not None:
                return False
            time.sleep(0.2)
        return False

    def status(self):
        return self.qmp.cmd("query-status")["status"]

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        self.err.close()

    def quit(self):
        try:
            self.qmp.cmd("quit")
        except (QMPError, EOFError, OSError):
            pass
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self.qmp.close()
        self.kill()


def sysfs(path, value=None):
    if value is None:
        with open(path) as f:
            return f.read().strip()
    with open(path, "w") as f:
        f.write(value)
    return None


def create(t):
    with open("/proc/sys/kernel/random/uuid") as f:
        uuid = f.read().strip()
    sysfs("%s/simgpu-%s/create" % (MDEV_TYPES, t), uuid)
    return uuid


def remove(uuid):
    try:
        sysfs("/sys/bus/mdev/devices/%s/remove" % uuid, "1")
    except OSError:
        pass


class Run:
    """KTAP results and the report."""

    def __init__(self, args):
        self.args, self.n, self.failed = args, 0, 0
        self.ktap = open(os.path.join(args.out, "qemu.ktap"), "w")
        self.ktap.write("KTAP version 1\n1..1\n    KTAP version 1\n"
                        "    # Subtest: qemu_migration\n")
        self.report = []

    def note(self, msg):
        print("qemu: " + msg, flush=True)
        self.ktap.write("    # %s\n" % msg)

    def check(self, desc, ok, why=""):
        self.n += 1
        if ok:
            self.ktap.write("    ok %d %s\n" % (self.n, desc))
        else:
            self.failed += 1
            if why:
                self.ktap.write("    # %s: %s\n" % (desc, why))
            self.ktap.write("    not ok %d %s\n" % (self.n, desc))
        self.ktap.flush()
        print("qemu: %s %s%s" % ("ok" if ok else "NOT OK", desc,
                                 "" if ok or not why else ": " + why), flush=True)
        return ok

    def finish(self):
        self.ktap.write("    1..%d\n%s 1 qemu_migration\n" %
                        (self.n, "not ok" if self.failed else "ok"))
        self.ktap.close()


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
    RELEASE_LATEST: pre-copy lasts until the samplers have enough."""
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
    while time.time() < deadline:
        el = time.time() - start
        if release and (release[0].is_set() or el > RELEASE_LATEST or
                        (el > RELEASE_AFTER and release[1].is_set())):
            src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": release[2],
                                                     "downtime-limit": limit})
            src.qmp.cmd("migrate-set-parameters",
                        **{"avail-switchover-bandwidth": link_bandwidth(src)})
            release = None
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


def migrate(src, dst, sock):
    """Migrate src -> dst to the end; query-migrate's last answer."""
    start_migration(src, dst, sock, switchover_bw=link_bandwidth(src))
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


VFIO_MIG_GET_PRECOPY_INFO = 0x3B79     # _IO(';', 100 + 21)
# One VRAM block as the stream carries it: 64 KiB and its section header.
# A block can turn dirty and be read between two samples, so figures
# taken a moment apart may differ by that much.
VRAM_SECTION = (64 << 10) + 40
SYS_PIDFD_GETFD = 438
# A sampled migration starts this slow, whatever the machine's speed, and
# speeds up once the Sampler holds SAMPLES_WANTED samples with data pending
# (or after RELEASE_AFTER seconds once it holds SAMPLES_NEEDED, the fewest
# the check accepts; at the latest after RELEASE_LATEST): a fast machine's
# pre-copy is otherwise over in a few samples (about 170 ms on the distro
# kernel), and under KASAN 8 s once gave only two.
RELEASE_BW = 1 << 20
RELEASE_AFTER = 8
RELEASE_LATEST = 150
# ...and with a downtime limit of 10 ms until then.  With device dirty
# tracking the guest's RAM dirties only its 64 stamp pages between two
# syncs: at RELEASE_BW and QEMU's 300 ms (about 300 KiB) QEMU once
# switched over after 21 s by itself, the sampler holding one sample with
# device data pending.  10 ms is about 10 KiB, which the stamps alone
# pass every sync.  (Not 0: below any threshold at all QEMU switches over
# as soon as a RAM round drains, without the sync that would refill it.)
RELEASE_HOLD_MS = 10
SAMPLES_WANTED = 20
SAMPLES_NEEDED = 3
# A sample outside its bracket is taken again this many times: the guest
# can dirty blocks and QEMU read them between two readings, which moves
# the figures by more than a section; a wrong figure stays wrong.
RETAKES = 3


class Sampler(threading.Thread):
    """The device's own figures against VFIO's, during a QEMU migration.

    Takes a copy of QEMU's saving fd (pidfd_getfd(2), as root) and, while
    the device is in PRE_COPY, reads VFIO_MIG_GET_PRECOPY_INFO on it just
    before and just after migration/remaining_bytes: the sysfs figure must
    lie between the two answers (initial plus dirty) within one VRAM section.
    When the device enters STOP_COPY it reads stopcopy_estimate_bytes and
    what stop-copy had sent by then (stopcopy_bytes); the copy of the fd is
    closed there, before QEMU ends the migration."""

    def __init__(self, vm):
        super().__init__(daemon=True)
        self.vm, self.dev = vm, vm.dev
        self.stop = threading.Event()
        self.enough = threading.Event()     # SAMPLES_WANTED with data pending
        self.some = threading.Event()       # SAMPLES_NEEDED with data pending
        self.samples, self.bad = [], []
        self.retaken = 0
        self.estimate = None            # (estimate, sent by then)
        self.error = None

    def _metric(self, name):
        return sysfs(self.dev.sysdir() + "/migration/" + name)

    def _save_fd(self):
        fddir = "/proc/%d/fd" % self.vm.p.pid
        for fd in os.listdir(fddir):
            try:
                if os.readlink(os.path.join(fddir, fd)) == "anon_inode:gpumig_save":
                    return int(fd)
            except OSError:
                pass
        return None

    @staticmethod
    def _precopy_info(fd):
        buf = bytearray(struct.pack("=IIQQ", 24, 0, 0, 0))
        fcntl.ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, buf)
        _, _, initial, dirty = struct.unpack("=IIQQ", buf)
        return initial + dirty

    def run(self):
        libc = ctypes.CDLL(None, use_errno=True)
        pidfd = os.pidfd_open(self.vm.p.pid)
        fd = -1
        try:
            while not self.stop.is_set():
                state = self._metric("state")
                if state == "STOP_COPY":
                    est, sent = self._metric("stopcopy_estimate_bytes"), \
                        self._metric("stopcopy_bytes")
                    if self._metric("state") == "STOP_COPY":
                        self.estimate = (int(est), int(sent))
                        return
                if state != "PRE_COPY":
                    time.sleep(0.002)
                    continue
                if fd < 0:
                    target = self._save_fd()
                    if target is None:
                        time.sleep(0.002)
                        continue
                    fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, target, 0)
                    if fd < 0:
                        self.error = "pidfd_getfd: %s" % os.strerror(ctypes.get_errno())
                        return
                try:
                    for attempt in range(RETAKES + 1):
                        a = self._precopy_info(fd)
                        rem = int(self._metric("remaining_bytes"))
                        b = self._precopy_info(fd)
                        inside = min(a, b) - VRAM_SECTION <= rem <= max(a, b) + VRAM_SECTION
                        if inside:
                            break
                        self.retaken += 1
                except OSError:
                    time.sleep(0.002)       # the device left PRE_COPY
                    continue
                self.samples.append((a, rem, b))
                if not inside:
                    self.bad.append((a, rem, b))
                busy = sum(1 for x in self.samples if x[1])
                if busy >= SAMPLES_NEEDED:
                    self.some.set()
                if busy >= SAMPLES_WANTED:
                    self.enough.set()
                time.sleep(0.002)
        except Exception as ex:         # report it, never hang the run
            self.error = repr(ex)
        finally:
            if fd >= 0:
                os.close(fd)
            os.close(pidfd)


def check_samples(run, sampler, label):
    """The checks of issue 14 on one sampled migration."""
    src = sampler.dev
    busy = [x for x in sampler.samples if x[1]]
    run.check("%s: remaining_bytes equals PRECOPY_INFO (initial + dirty) within one VRAM "
              "section in every pre-copy sample" % label,
              not sampler.error and len(busy) >= SAMPLES_NEEDED and not sampler.bad,
              "%s; %d samples, %d with data pending, outside: %s"
              % (sampler.error, len(sampler.samples), len(busy), sampler.bad[:3]))
    if busy:
        a, rem, b = max(busy, key=lambda x: x[1])
        run.note("%s: %d pre-copy samples, %d with data pending, %d taken again (the "
                 "figures moved meanwhile); the largest: PRECOPY_INFO %d, remaining_bytes "
                 "%d, PRECOPY_INFO %d"
                 % (label, len(sampler.samples), len(busy), sampler.retaken, a, rem, b))
    sent = int(sysfs(src.sysdir() + "/migration/stopcopy_bytes"))
    est = sampler.estimate
    run.check("%s: stop-copy sent no more than the estimate read when it began" % label,
              est is not None and sent <= est[0] + est[1],
              "estimate %s, sent %d" % (est, sent))
    if est:
        run.note("%s: stop-copy estimate %d bytes (read with %d already sent), sent %d"
                 % (label, est[0], est[1], sent))


def one_migration(run, src, dst, sock, label, sample=False):
    """A live migration that must succeed; returns the query-migrate info.
    With @sample, the device's figures are checked against VFIO's."""
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
        else migrate(src, dst, sock)
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


def guest_write(vm, gpa, value):
    """Write a 32-bit word into the guest's memory through QEMU's own
    mapping of it (HMP gpa2hva, then /proc/PID/mem), as a debugger would."""
    out = vm.qmp.cmd("human-monitor-command", **{"command-line": "gpa2hva 0x%x" % gpa})
    m = re.search(r" is (0x[0-9a-fA-F]+)", out)
    if not m:
        raise RuntimeError("gpa2hva 0x%x: %s" % (gpa, out.strip()))
    with open("/proc/%d/mem" % vm.p.pid, "r+b", buffering=0) as f:
        f.seek(int(m.group(1), 16))
        f.write(struct.pack("<I", value))


def wait_for(cond, timeout, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


# While the guest re-initialises its GPU the harness holds the switchover
# back with a downtime limit of 0 ms: QEMU then switches over only when
# nothing at all is pending, which never happens while the guest runs its
# GPU work.  (A crawling max-bandwidth held it too, but starved the device:
# QEMU iterates RAM first and stops at the rate limit, so the device's
# initial data could wait minutes for a turn.)
REINIT_HOLD_DOWNTIME_MS = 0
REINIT_GEN = 7


def reinit_migration(run, src, dst, sock, mailbox):
    """Issue 15: the guest resets and re-initialises its GPU during
    pre-copy.  On a kernel with VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2,
    QEMU 11.1 (which opts in, with switchover-ack on a pc-q35-11.1
    machine) must see VFIO_PRECOPY_INFO_REINIT, have the destination
    acknowledge the new initial data before it switches over, and the
    guest must find its re-initialised VRAM intact on the destination.
    QEMU's own trace events are the witness."""
    label = "REINIT"
    for ev in ("vfio_query_precopy_size*", "vfio_send_init_data_flag"):
        src.qmp.cmd("trace-event-set-state", name=ev, enable=True)
    base = os.path.getsize(src.errlog)

    def trace():
        # On the 9p share, as VM.lines() says: ENODATA now and then.
        for _ in range(20):
            try:
                with open(src.errlog, errors="replace") as f:
                    f.seek(base)
                    return f.read()
            except OSError as e:
                if e.errno != errno.ENODATA:
                    raise
                time.sleep(0.05)
        return ""

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--guest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--demo", action="store_true",
                    help="one migration and a short human report")
    ap.add_argument("--pingpong", type=int, default=10)
    ap.add_argument("--qemu", default="qemu-system-x86_64",
                    help="the QEMU command, e.g. 'chroot ROOT qemu-system-x86_64'")
    ap.add_argument("--reinit", action="store_true",
                    help="also the REINIT scenario: QEMU 11.1 on a kernel with "
                    "VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2")
    ap.add_argument("--pci", nargs="+", metavar="PROFILE=ADDR,...",
                    help="VFs bound to gpumig-vfio-pci: three of 256M, one of 64M")
    args = ap.parse_args()
    global GPUMIGCTL, QEMU
    QEMU = shlex.split(args.qemu)
    GPUMIGCTL = os.path.join(os.path.dirname(os.path.abspath(args.guest)), "gpumigctl")
    os.makedirs(args.out, exist_ok=True)
    run = Run(args)
    sock = os.path.join(args.out, "mig.sock")
    pool = Pool(args.pci)
    vms = []
    tracking = "?"

    try:
        m1, m2 = pool.get("256M"), pool.get("256M")
        run.note("devices: %s" % ("VFs on gpumig-vfio-pci" if pool.pci else "simgpu mdevs"))
        tracking = m1.status().get("dirty_tracking")
        run.note("simgpu dirty tracking of guest memory: %s" % tracking)
        if tracking != "device":
            global DOWNTIME_MS, SWITCHOVER_AT_LINK
            DOWNTIME_MS = 5000
            SWITCHOVER_AT_LINK = bool(pool.pci)
        for u in (m1, m2):
            # a kernel is in flight most of the time; the device's own
            # background writer dirties guest memory all along
            u.knob("kernel_step_us", 1000)
            u.knob("dirty_rate", 200)

        a = VM("a", m1, args)
        vms.append(a)
        if not run.check("QEMU boots the guest and it drives simgpu",
                         a.wait_iter(3), "; ".join(a.lines()[-3:])):
            return
        b = VM("b", m2, args, incoming=True)
        vms.append(b)
        info = one_migration(run, a, b, sock, "live migration", sample=not args.demo)
        if info and args.demo:
            dev = info["_device"]
            ram, vfio = info.get("ram", {}), info.get("vfio", {})
            rep = [
                "Live migration of a running VM holding a simgpu %s (QEMU 10, %s)"
                % ("VF" if pool.pci else "mdev", os.uname().release),
                "  guest: %d GPU iterations verified before the migration started, %d by the "
                "end on the destination; no wrong result" % info["_iters"],
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
            with open(os.path.join(args.out, "demo.txt"), "w") as f:
                f.write("\n".join(rep) + "\n")
        a.quit()
        vms.remove(a)
        if not info or args.demo:
            return
        cur, spare = b, m1

        # An incompatible destination (another type) fails before the
        # source stops: switchover-ack holds the switch until the
        # destination accepted the device's first data.
        m3 = pool.get("64M")
        c = VM("c", m3, args, incoming=True)
        vms.append(c)
        cur.qmp.events.clear()
        info = migrate(cur, c, sock)
        run.check("incompatible destination: the migration fails",
                  info.get("status") == "failed", "status %s" % info.get("status"))
        run.check("incompatible destination: the source never stopped",
                  not stopped(cur), str(cur.qmp.events))
        st = m3.status_line()
        run.note("incompatible destination: QEMU says \"%s\"; the destination device says \"%s\""
                 % (info.get("error-desc"), st.split("last_error=", 1)[-1]))
        run.check("incompatible destination: the destination device names the mismatch",
                  "last_error=" in st, st)
        keeps_running(run, cur, "incompatible destination")
        c.kill()
        vms.remove(c)

        # migrate_cancel in the middle of pre-copy.
        d = VM("d", spare, args, incoming=True)
        vms.append(d)
        cur.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": 1 << 20})
        cur.qmp.events.clear()
        start_migration(cur, d, sock)
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
                  cur.dev.status().get("state") == "2", str(cur.dev.status()))
        d.kill()
        vms.remove(d)

        # A source that cannot quiesce (its invalidation is never
        # acknowledged) fails the migration and keeps running.
        e = VM("e", spare, args, incoming=True)
        vms.append(e)
        cur.dev.knob("ack_drop", 1)
        cur.qmp.events.clear()
        info = migrate(cur, e, sock)
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
        e.kill()
        vms.remove(e)

        # Ping-pong.
        done = 0
        for i in range(args.pingpong):
            nxt = VM("p%d" % i, spare, args, incoming=True)
            vms.append(nxt)
            info = one_migration(run, cur, nxt, sock, "ping-pong %d" % (i + 1))
            if not info:
                break
            spare = cur.dev
            cur.quit()
            vms.remove(cur)
            cur = nxt
            done += 1
        run.check("%d ping-pong migrations with the guest verifying" % args.pingpong,
                  done == args.pingpong, "%d done" % done)
        if args.reinit and done == args.pingpong:
            mailbox = [re.search(r"mailbox (0x[0-9a-f]+)", ln) for ln in a.lines()]
            mailbox = [int(m.group(1), 16) for m in mailbox if m]
            run.check("REINIT: the guest said where its mailbox is", mailbox)
            nxt = VM("r", spare, args, incoming=True)
            vms.append(nxt)
            if mailbox and reinit_migration(run, cur, nxt, sock, mailbox[0]):
                cur.quit()
                vms.remove(cur)
                cur = nxt
        run.check("no wrong result in the guest, %d iterations verified" % cur.last_iter(),
                  not cur.failures(), "; ".join(cur.failures()[:3]))
    except Exception as ex:          # report, never hang the VM run
        tb = traceback.extract_tb(ex.__traceback__)
        run.check("the QEMU harness ran to its end", False, "%r at %s" % (
            ex, " <- ".join("%s:%d" % (f.name, f.lineno) for f in reversed(tb))))
    finally:
        for vm in vms:
            vm.quit()
        pool.release()
        run.finish()
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
