# SPDX-License-Identifier: GPL-2.0
"""The devices and QEMU processes of the QEMU migration suite
(qemu_mig.py): a simgpu (Dev: an mdev instance of simgpu, made and removed
here through sysfs, or a VF bound to gpumig-vfio-pci), the devices by
profile (Pool), and one QEMU process running the verifying guest with one
simgpu assigned (VM: its command line, QMP connection, debug console log
and exit).  qemu_mig.py's main() sets QEMU from --qemu (mig_vm.QEMU = ...).
"""
import errno
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time

from qmp_client import QMP, QMPError

MDEV_TYPES = "/sys/class/mdev_bus/simgpu/mdev_supported_types"
# qemu_mig.py's main() sets it (mig_vm.QEMU = ...); VM reads it at each start.
QEMU = ["qemu-system-x86_64"]  # --qemu: e.g. chroot into a root with another QEMU


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

    # The migration/ files read as one sample: one value a file
    # (Documentation/ABI/testing/sysfs-gpumig-migration).
    STATUS_FILES = ("state", "dirty_tracking", "remaining_bytes", "precopy_rounds",
                    "precopy_bytes", "stopcopy_bytes", "resumed_bytes", "dma_log_reports",
                    "quiesce_us", "invalidate_us", "migratable", "last_error", "source")

    def status_line(self):
        """The human summary, for logs."""
        return sysfs(self.sysdir() + "/migration/status")

    def status(self):
        """The migration/ files by name (values as strings; a file the
        device does not have is left out)."""
        st = {}
        for f in self.STATUS_FILES:
            try:
                with open("%s/migration/%s" % (self.sysdir(), f)) as fh:
                    st[f] = fh.read().rstrip("\n")
            except OSError:
                pass
        return st

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
        """A device of @prof: a VF given, or an mdev made ("mdev:64M" makes
        one beside VFs too)."""
        if self.pci and not prof.startswith("mdev:"):
            d = self.free[prof].pop(0)
        else:
            d = Dev(create(prof.split(":")[-1]), False)
            self.made.append(d)
        d.prof = prof
        return d

    def put(self, d):
        """No VM holds @d any more: a VF is free again for a later get() of
        its profile; an mdev is removed (the VRAM budget)."""
        if d.pci:
            self.free[d.prof].append(d)
        elif d in self.made:
            self.made.remove(d)
            remove(d.name)

    def release(self):
        for d in self.made:
            remove(d.name)


class VM:
    """One QEMU process with the guest and its simgpus (@dev: one Dev, or
    a list of them, assigned in order at slots 5, 6...; the first is
    .dev): QEMU (or @qemu, a command as a list) with @machine."""

    def __init__(self, name, dev, args, incoming=False, qemu=None, machine="q35"):
        self.devs = list(dev) if isinstance(dev, (list, tuple)) else [dev]
        self.name, self.dev = name, self.devs[0]
        # The guest's report lines: QEMU writes them a byte at a time, and
        # OUT is the test VM's 9p share, where each write is a round trip
        # to the host.  The log is written on the test VM's own /tmp
        # instead and copied to OUT when QEMU ends, unless QEMU runs
        # chrooted into another root (QEMU 11.1), which sees OUT only.
        # (The Linux guest's late lines were not this: its init's loop
        # was starved of the guest's CPU, guest/linux/init.)
        self.outlog = os.path.join(args.out, name + ".debugcon")
        self.log = self.outlog
        if (qemu or QEMU)[0] != "chroot":
            self.log = os.path.join(tempfile.mkdtemp(prefix="gpumig-console-"),
                                    name + ".debugcon")
        self.errlog = os.path.join(args.out, name + ".stderr")
        qmp = os.path.join(args.out, name + ".qmp")
        for f in (self.outlog, qmp):
            if os.path.exists(f):
                os.unlink(f)
        linux = getattr(args, "linux", None)
        if linux:
            # the small Linux guest (scripts/linux-guest.sh): the same
            # report lines, on its serial console
            kernel, initrd = linux.split(",")
            boot = ["-m", "128", "-kernel", kernel, "-initrd", initrd,
                    "-append", "console=ttyS0 quiet loglevel=3 panic=-1",
                    "-serial", "file:" + self.log]
        else:
            boot = ["-m", "64", "-serial", "none", "-kernel", args.guest,
                    "-chardev", "file,id=dbg,path=" + self.log,
                    "-device", "isa-debugcon,chardev=dbg,iobase=0xe9"]
        cmd = (qemu or QEMU) + ["-machine", machine, "-accel", "tcg",
               "-nodefaults", "-display", "none", "-monitor", "none"] + boot + [
               "-qmp", "unix:%s,server=on,wait=off" % qmp]
        for k, d in enumerate(self.devs):
            cmd += ["-device", "vfio-pci,id=gpu%d,addr=%02x.0,%s,enable-migration=on"
                    % (k, 5 + k, d.vfio_arg())]
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

    def gpus(self):
        """How many simgpus the guest found ("gpus N"), or None yet."""
        for ln in self.lines():
            m = re.match(r"gpumig-guest: gpus (\d+)", ln)
            if m:
                return int(m.group(1))
        return None

    def peers(self):
        """How many devices write into each other's VRAM through their
        apertures ("peers N"), or None yet."""
        for ln in self.lines():
            m = re.match(r"gpumig-guest: peers (\d+)", ln)
            if m:
                return int(m.group(1))
        return None

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
        if self.log != self.outlog and os.path.exists(self.log):
            shutil.copyfile(self.log, self.outlog)
            shutil.rmtree(os.path.dirname(self.log), ignore_errors=True)
            self.log = self.outlog

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
