#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Hostile register and DMA tests of the simgpu-pci QEMU device, through
QEMU's qtest accelerator: no guest code runs, this script is the guest.

It enumerates the PF behind a PCIe root port itself (ECAM, bus numbers,
windows, BARs), enables SR-IOV and the VFs, then throws nonsense at the
PF's mailbox (unknown opcodes, lengths past everything, DMA to nowhere,
broken DMA-log ranges, garbage architectural states) and at the VFs'
registers (random writes, rings and page tables anywhere), advancing the
virtual clock so the device runs.  After each phase the device must still
answer and every command must end with a status, never BUSY forever; QEMU
must still be alive.  Last, a VF does real work again, checked byte for
byte.  Prints KTAP.

    simgpu_qtest.py QEMU [--ops N] [--seed S]
"""
import argparse
import os
import random
import re
import struct
import subprocess
import sys

# <linux/simgpu_pf.h> and <linux/simgpu.h>, as far as this script needs them.
PF_ID, PF_VERSION, PF_TOTAL_VFS, PF_PROFILES = 0x000, 0x004, 0x008, 0x00c
PF_APERTURE_LO, PF_INT_STATUS, PF_ARCH_SIZE, PF_XFER_MAX = 0x010, 0x018, 0x028, 0x034
PF_VF_BASE, PF_VF_STRIDE = 0x1000, 0x100
VF_CMD, VF_STATUS, VF_ARG0, VF_RESULT = 0x00, 0x04, 0x10, 0x30
VF_PROFILE, VF_VRAM_LO, VF_QUEUES, VF_STATE = 0x40, 0x44, 0x4c, 0x54
VF_RESETS, VF_GUEST_RESETS = 0x50, 0x58
STATUS_BUSY = 1 << 31
CMD_PAUSE, CMD_RESUME, CMD_INVALIDATE, CMD_SAVE, CMD_RESTORE = 1, 2, 3, 4, 5
CMD_VRAM_READ, CMD_VRAM_WRITE, CMD_TRACK, CMD_DIRTY, CMD_SCRUB = 6, 7, 8, 9, 10
CMD_LOG_START, CMD_LOG_STOP, CMD_LOG_REPORT = 11, 12, 13
CMD_COUNT, CMD_TAKE_ZERO, CMD_READ_TAKE, CMD_PEEK = 14, 15, 16, 17
PF_CAPS, CAP_VRAM_COUNT, CAP_SHARE, CAP_ABSENT = 0x038, 1, 2, 4
CMD_SET_SHARE, SHARE_MAX = 18, 99
CMD_SET_ABSENT, CMD_LOSE, CMD_HOLD, CMD_HOLD_READ = 19, 20, 21, 22
CMD_HOLD_RETURN, CMD_HOLD_FREE, CMD_DELIVER = 23, 24, 25
VF_DEMAND, VF_ABSENT, VF_HELD = 0x5c, 0x60, 0x64
ERR_VRAM_LOST = 12
ERR_ARGS, ERR_DMA, ERR_STATE, ERR_ORDER = 2, 5, 6, 8
SG_ID, SG_CONTROL, SG_PT_ROOT_LO = 0x000, 0x01c, 0x040
SG_ERR_CODE, SG_ERR_QUEUE = 0x028, 0x02c
SG_DIRTY_BASE_LO, SG_DIRTY_BASE_HI, SG_DIRTY_PAGES = 0x050, 0x054, 0x058
Q_ERROR = 0x1c
ERR_SG_DMA, QUEUE_WORKLOAD = 6, 0xff
KNOB_KERNEL_STEP_US, KNOB_DIRTY_RATE = 1, 5
ERR_DISABLED = 7
SG_QBASE, SG_QSTRIDE = 0x100, 0x40
Q_RING_LO, Q_RING_HI, Q_SIZE, Q_TAIL, Q_CTRL, Q_STATUS = 0x00, 0x04, 0x08, 0x10, 0x14, 0x18
OP_FENCE, OP_FILL, OP_KERNEL = 1, 2, 4

# Each register, command and code above is the uapi headers' (checked
# first, abi_checked()); the PF's VRAM block is read from its register.
ABI = {
    "simgpu_pf.h": {
        "PF_ID": "SIMGPU_PF_REG_ID", "PF_VERSION": "SIMGPU_PF_REG_VERSION",
        "PF_TOTAL_VFS": "SIMGPU_PF_REG_TOTAL_VFS", "PF_PROFILES": "SIMGPU_PF_REG_PROFILES",
        "PF_APERTURE_LO": "SIMGPU_PF_REG_APERTURE_LO",
        "PF_INT_STATUS": "SIMGPU_PF_REG_INT_STATUS", "PF_ARCH_SIZE": "SIMGPU_PF_REG_ARCH_SIZE",
        "PF_XFER_MAX": "SIMGPU_PF_REG_XFER_MAX", "PF_BLOCK_SHIFT": "SIMGPU_PF_REG_BLOCK_SHIFT",
        "PF_CAPS": "SIMGPU_PF_REG_CAPS", "CAP_VRAM_COUNT": "SIMGPU_PF_CAP_VRAM_COUNT",
        "CAP_SHARE": "SIMGPU_PF_CAP_SHARE", "CMD_SET_SHARE": "SIMGPU_PF_CMD_SET_SHARE",
        "SHARE_MAX": "SIMGPU_PF_SHARE_MAX", "CAP_ABSENT": "SIMGPU_PF_CAP_ABSENT",
        "CMD_SET_ABSENT": "SIMGPU_PF_CMD_SET_ABSENT", "CMD_LOSE": "SIMGPU_PF_CMD_VRAM_LOSE",
        "CMD_HOLD": "SIMGPU_PF_CMD_VRAM_HOLD", "CMD_HOLD_READ": "SIMGPU_PF_CMD_HOLD_READ",
        "CMD_HOLD_RETURN": "SIMGPU_PF_CMD_HOLD_RETURN",
        "CMD_HOLD_FREE": "SIMGPU_PF_CMD_HOLD_FREE", "CMD_DELIVER": "SIMGPU_PF_CMD_VRAM_DELIVER",
        "VF_DEMAND": "SIMGPU_PF_VF_DEMAND", "VF_ABSENT": "SIMGPU_PF_VF_ABSENT",
        "VF_HELD": "SIMGPU_PF_VF_HELD",
        "PF_VF_BASE": "SIMGPU_PF_VF_BASE", "PF_VF_STRIDE": "SIMGPU_PF_VF_STRIDE",
        "VF_CMD": "SIMGPU_PF_VF_CMD", "VF_STATUS": "SIMGPU_PF_VF_STATUS",
        "VF_ARG0": "SIMGPU_PF_VF_ARG0_LO", "VF_RESULT": "SIMGPU_PF_VF_RESULT_LO",
        "VF_PROFILE": "SIMGPU_PF_VF_PROFILE", "VF_VRAM_LO": "SIMGPU_PF_VF_VRAM_LO",
        "VF_QUEUES": "SIMGPU_PF_VF_QUEUES", "VF_STATE": "SIMGPU_PF_VF_STATE",
        "VF_RESETS": "SIMGPU_PF_VF_RESETS", "VF_GUEST_RESETS": "SIMGPU_PF_VF_GUEST_RESETS",
        "STATUS_BUSY": "SIMGPU_PF_STATUS_BUSY",
        "CMD_PAUSE": "SIMGPU_PF_CMD_PAUSE", "CMD_RESUME": "SIMGPU_PF_CMD_RESUME",
        "CMD_INVALIDATE": "SIMGPU_PF_CMD_INVALIDATE", "CMD_SAVE": "SIMGPU_PF_CMD_SAVE_STATE",
        "CMD_RESTORE": "SIMGPU_PF_CMD_RESTORE_STATE", "CMD_VRAM_READ": "SIMGPU_PF_CMD_VRAM_READ",
        "CMD_VRAM_WRITE": "SIMGPU_PF_CMD_VRAM_WRITE", "CMD_TRACK": "SIMGPU_PF_CMD_VRAM_TRACK",
        "CMD_DIRTY": "SIMGPU_PF_CMD_VRAM_DIRTY", "CMD_SCRUB": "SIMGPU_PF_CMD_SCRUB",
        "CMD_LOG_START": "SIMGPU_PF_CMD_DMA_LOG_START",
        "CMD_LOG_STOP": "SIMGPU_PF_CMD_DMA_LOG_STOP",
        "CMD_LOG_REPORT": "SIMGPU_PF_CMD_DMA_LOG_REPORT", "CMD_COUNT": "SIMGPU_PF_CMD_VRAM_COUNT",
        "CMD_TAKE_ZERO": "SIMGPU_PF_CMD_VRAM_TAKE_ZERO",
        "CMD_READ_TAKE": "SIMGPU_PF_CMD_VRAM_READ_TAKE",
        "CMD_PEEK": "SIMGPU_PF_CMD_VRAM_DIRTY_PEEK",
        "ERR_ARGS": "SIMGPU_PF_ERR_ARGS", "ERR_DMA": "SIMGPU_PF_ERR_DMA",
        "ERR_STATE": "SIMGPU_PF_ERR_STATE", "ERR_ORDER": "SIMGPU_PF_ERR_ORDER",
        "ERR_DISABLED": "SIMGPU_PF_ERR_DISABLED",
        "KNOB_KERNEL_STEP_US": "SIMGPU_PF_KNOB_KERNEL_STEP_US",
        "KNOB_DIRTY_RATE": "SIMGPU_PF_KNOB_DIRTY_RATE",
    },
    "simgpu.h": {
        "SG_ID": "SIMGPU_REG_ID", "SG_CONTROL": "SIMGPU_REG_CONTROL",
        "SG_PT_ROOT_LO": "SIMGPU_REG_PT_ROOT_LO", "SG_ERR_CODE": "SIMGPU_REG_ERROR_CODE",
        "SG_ERR_QUEUE": "SIMGPU_REG_ERROR_QUEUE", "SG_DIRTY_BASE_LO": "SIMGPU_REG_DIRTY_BASE_LO",
        "SG_DIRTY_BASE_HI": "SIMGPU_REG_DIRTY_BASE_HI", "SG_DIRTY_PAGES": "SIMGPU_REG_DIRTY_PAGES",
        "ERR_SG_DMA": "SIMGPU_ERR_DMA", "QUEUE_WORKLOAD": "SIMGPU_QUEUE_WORKLOAD",
        "ERR_VRAM_LOST": "SIMGPU_ERR_VRAM_LOST",
        "SG_QBASE": "SIMGPU_QUEUE_BASE", "SG_QSTRIDE": "SIMGPU_QUEUE_STRIDE",
        "Q_RING_LO": "SIMGPU_QREG_RING_LO", "Q_RING_HI": "SIMGPU_QREG_RING_HI",
        "Q_SIZE": "SIMGPU_QREG_RING_SIZE", "Q_TAIL": "SIMGPU_QREG_TAIL",
        "Q_CTRL": "SIMGPU_QREG_CONTROL", "Q_STATUS": "SIMGPU_QREG_STATUS",
        "Q_ERROR": "SIMGPU_QREG_ERROR",
        "OP_FENCE": "SIMGPU_OP_FENCE", "OP_FILL": "SIMGPU_OP_FILL",
        "OP_KERNEL": "SIMGPU_OP_KERNEL",
    },
}
PF_BLOCK_SHIFT = 0x020


def header_defines(path):
    """The numeric #defines of a uapi header: (1U << 3) and the like."""
    out = {}
    for ln in open(path):
        m = re.match(r"#define\s+(\w+)\s+([^/]+?)\s*(/\*.*)?$", ln)
        if not m:
            continue
        expr = re.sub(r"(\b0x[0-9a-fA-F]+|\b\d+)[uUlL]+\b", r"\1", m.group(2))
        if re.fullmatch(r"[0-9a-fA-Fx()<>| +-]+", expr):
            out[m.group(1)] = eval(expr)     # noqa: S307 - digits and operators only
    return out


def abi_checked():
    """Every constant of this script is the uapi headers' own."""
    inc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include",
                       "uapi", "linux")
    wrong = []
    for hdr, names in ABI.items():
        defs = header_defines(os.path.join(inc, hdr))
        for py, c in names.items():
            if defs.get(c) != globals()[py]:
                wrong.append("%s = 0x%x, %s %s is %s" % (py, globals()[py], hdr, c,
                                                         defs.get(c, "missing")))
    assert not wrong, "; ".join(wrong)


ECAM = 0xb0000000
SRIOV = 0x100               # the PF's SR-IOV capability
PF_BAR = 0xc0000000
VF_BAR0 = 0xc0100000
VF_BAR1 = 0xc0200000
VF_BAR2 = 0x800000000
RAM_BUF = 0x01000000        # guest RAM this script uses for DMA
NO_RAM = 0xfffffff000       # nothing there


class Qtest:
    def __init__(self, qemu):
        self.p = subprocess.Popen(
            [qemu, "-machine", "q35", "-accel", "qtest", "-qtest", "stdio", "-display", "none",
             "-nodefaults", "-m", "512", "-qtest-log", "/dev/null",
             "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
             "-device", "pcie-root-port,id=rp1,chassis=1,pref64-reserve=1G",
             "-device", "simgpu-pf,bus=rp1,total-vfs=2,aperture=64M"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1)
        self.cmds = 0

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        self.cmds += 1
        while True:
            r = self.p.stdout.readline()
            if not r:
                raise RuntimeError("QEMU exited (status %s)" % self.p.poll())
            if r.startswith("OK") or r.startswith("FAIL") or r.startswith("ERR"):
                return r.split()

    def readl(self, a):
        return int(self.cmd("readl 0x%x" % a)[1], 16)

    def writel(self, a, v):
        self.cmd("writel 0x%x 0x%x" % (a, v & 0xffffffff))

    def readw(self, a):
        return int(self.cmd("readw 0x%x" % a)[1], 16)

    def writew(self, a, v):
        self.cmd("writew 0x%x 0x%x" % (a, v & 0xffff))

    def outl(self, port, v):
        self.cmd("outl 0x%x 0x%x" % (port, v))

    def write(self, a, data):
        self.cmd("write 0x%x 0x%x 0x%s" % (a, len(data), data.hex()))

    def read(self, a, n):
        return bytes.fromhex(self.cmd("read 0x%x 0x%x" % (a, n))[1][2:])

    def step(self, ns):
        self.cmd("clock_step %d" % ns)

    def alive(self):
        return self.p.poll() is None

    def close(self):
        if self.alive():
            self.p.terminate()
            self.p.wait(timeout=30)


def cfg(bus, dev, fn, reg):
    return ECAM + (bus << 20 | dev << 15 | fn << 12 | reg)


class Rig:
    """The PF and its VFs, enumerated by hand."""

    def __init__(self, q):
        self.q = q
        # Enable ECAM in the q35 host bridge (PCIEXBAR), then find the root port.
        q.outl(0xcf8, 0x80000000 | 0x60)
        q.outl(0xcfc, ECAM | 1)
        q.outl(0xcf8, 0x80000000 | 0x64)
        q.outl(0xcfc, 0)
        rp = next(d for d in range(32) if q.readl(cfg(0, d, 0, 0)) == 0x000c1b36)
        q.writel(cfg(0, rp, 0, 0x18), 0x00010100)               # buses 0/1/1
        q.writel(cfg(0, rp, 0, 0x20), 0xc030c000)               # MMIO window
        q.writel(cfg(0, rp, 0, 0x24), 0xfff10001)               # pref 64-bit
        q.writel(cfg(0, rp, 0, 0x28), VF_BAR2 >> 32)
        q.writel(cfg(0, rp, 0, 0x2c), (VF_BAR2 >> 32) + 1)
        q.writew(cfg(0, rp, 0, 0x04), 0x6)
        assert q.readl(cfg(1, 0, 0, 0)) == 0x53501234, "no simgpu-pf at 01:00.0"
        q.writel(cfg(1, 0, 0, 0x10), PF_BAR)
        q.writew(cfg(1, 0, 0, 0x04), 0x6)
        assert q.readl(PF_BAR + PF_ID) == 0x46504753
        self.nvfs = q.readl(PF_BAR + PF_TOTAL_VFS)
        assert q.readl(cfg(1, 0, 0, SRIOV)) & 0xffff == 0x10, "no SR-IOV capability"
        self.enable_vfs()
        self.aperture = q.readl(PF_BAR + PF_APERTURE_LO)
        self.shift = q.readl(PF_BAR + PF_BLOCK_SHIFT)     # the VRAM block, log2

    def enable_vfs(self):
        q = self.q
        q.writew(cfg(1, 0, 0, SRIOV + 0x10), self.nvfs)         # NumVFs
        q.writel(cfg(1, 0, 0, SRIOV + 0x24), VF_BAR0)
        q.writel(cfg(1, 0, 0, SRIOV + 0x28), VF_BAR1)
        q.writel(cfg(1, 0, 0, SRIOV + 0x2c), VF_BAR2 & 0xffffffff)
        q.writel(cfg(1, 0, 0, SRIOV + 0x30), VF_BAR2 >> 32)
        q.writew(cfg(1, 0, 0, SRIOV + 0x08), 0x9)              # VFE | MSE
        for n in range(self.nvfs):
            q.writew(cfg(1, 0, 1 + n, 0x04), 0x6)

    def vf_enabled(self):
        return self.q.readw(cfg(1, 0, 0, SRIOV + 0x08)) & 1

    def vfreg(self, n, reg):
        return PF_BAR + PF_VF_BASE + n * PF_VF_STRIDE + reg

    def vf_bar0(self, n):
        return VF_BAR0 + n * 0x10000

    def vf_vram(self, n):
        return VF_BAR2 + n * self.aperture

    def command(self, n, op, *args, steps=200):
        """Run a PF command; return its status (never BUSY, or RuntimeError)."""
        q = self.q
        for i, a in enumerate(args):
            q.writel(self.vfreg(n, VF_ARG0 + 8 * i), a & 0xffffffff)
            q.writel(self.vfreg(n, VF_ARG0 + 8 * i + 4), (a >> 32) & 0xffffffff)
        q.writel(self.vfreg(n, VF_CMD), op)
        for _ in range(steps):
            st = q.readl(self.vfreg(n, VF_STATUS))
            if not st & STATUS_BUSY:
                return st
            q.step(10_000_000)
        raise RuntimeError("VF %d: command %d stayed BUSY" % (n, op))


def ktap(results):
    print("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: simgpu_pci_qtest")
    for i, (name, ok, why) in enumerate(results, 1):
        if not ok:
            print("    # %s: %s" % (name, why))
        print("    %sok %d %s" % ("" if ok else "not ", i, name))
    print("    1..%d" % len(results))
    print("%sok 1 simgpu_pci_qtest" % ("" if all(r[1] for r in results) else "not "))


def t_enumerate(r):
    q = r.q
    assert r.nvfs == 2
    assert q.readl(PF_BAR + PF_PROFILES) == 1, "a 64M aperture offers only 64M"
    for n in range(r.nvfs):
        assert q.readl(r.vf_bar0(n) + SG_ID) == 0x55504753, "VF %d BAR0" % n
    # Profiles are fixed while VFs are enabled, and only offered ones take.
    q.writel(r.vfreg(0, VF_PROFILE), 1)
    assert q.readl(r.vfreg(0, VF_PROFILE)) == 0


def t_bad_commands(r, rnd, ops):
    """Every opcode with nonsense arguments: each ends with a status."""
    errors = 0
    for _ in range(ops):
        op = rnd.choice([rnd.randrange(0, 32), rnd.randrange(1, 18), 0xffffffff])
        args = [rnd.choice([0, 1, 7, 4096, 65536, 1 << 20, (1 << 20) + 1, 1 << 40,
                            (1 << 64) - 1, NO_RAM, RAM_BUF, rnd.getrandbits(64)])
                for _ in range(4)]
        st = r.command(rnd.randrange(r.nvfs), op, *args)
        errors += st != 0
    assert errors > ops // 4, "almost every nonsense command succeeded (%d errors)" % errors
    return errors


def settle(r, n):
    """Whatever the nonsense before left on VF @n (a pause, a log, tracking,
    VRAM): gone."""
    for op in (CMD_RESUME, CMD_LOG_STOP, CMD_SCRUB):
        assert r.command(n, op) == 0
    assert r.command(n, CMD_SET_SHARE, 0) == 0


def t_limits(r):
    """The edges: exact errors where the ABI promises them."""
    q = r.q
    settle(r, 0)
    vram = q.readl(r.vfreg(0, VF_VRAM_LO))
    xfer = q.readl(PF_BAR + PF_XFER_MAX)
    shift = q.readl(PF_BAR + PF_BLOCK_SHIFT)
    block = 1 << shift
    arch = q.readl(PF_BAR + PF_ARCH_SIZE)
    checks = [
        ((CMD_VRAM_READ, vram - 4, RAM_BUF, 8), ERR_ARGS),
        ((CMD_VRAM_READ, 0, RAM_BUF, 0), ERR_ARGS),
        ((CMD_VRAM_READ, 0, RAM_BUF, xfer + 1), ERR_ARGS),
        ((CMD_VRAM_READ, (1 << 64) - 4, RAM_BUF, 8), ERR_ARGS),
        ((CMD_VRAM_READ, 0, NO_RAM, 4096), ERR_DMA),
        ((CMD_DIRTY, RAM_BUF, 8), ERR_ARGS),
        ((CMD_LOG_REPORT, 0, 4096, RAM_BUF, 1), ERR_ORDER),
        ((CMD_LOG_START, RAM_BUF, 0, 4096), ERR_ARGS),
        ((CMD_LOG_START, RAM_BUF, 17, 4096), ERR_ARGS),
        ((CMD_LOG_START, RAM_BUF, 1, 8192), ERR_ARGS),
        ((CMD_SAVE, RAM_BUF, arch), ERR_ORDER),
        ((CMD_TRACK, 2), ERR_ARGS),
        ((CMD_READ_TAKE, 4096, RAM_BUF, block), ERR_ARGS),     # not a whole block
        ((CMD_READ_TAKE, 0, RAM_BUF, 4096), ERR_ARGS),
        ((CMD_READ_TAKE, vram, RAM_BUF, block), ERR_ARGS),
        ((CMD_TAKE_ZERO, vram >> shift, 1), ERR_ARGS),
        ((CMD_TAKE_ZERO, 0, (vram >> shift) + 1), ERR_ARGS),
        ((CMD_TAKE_ZERO, (1 << 64) - 1, 2), ERR_ARGS),
        ((CMD_PEEK, RAM_BUF, 8), ERR_ARGS),
    ]
    for args, want in checks:
        st = r.command(0, *args)
        assert st == want, "%s: status %d, expected %d" % (args, st, want)
    # DMA-log ranges that overlap, wrap or are not aligned.
    for ranges in ([(0x1000, 0x2000), (0x2000, 0x1000)], [((1 << 64) - 4096, 8192)],
                   [(0x1001, 4096)], [(0, 0)], [(0, (1 << 40))]):
        q.write(RAM_BUF, b"".join(struct.pack("<QQ", a, n) for a, n in ranges))
        st = r.command(0, CMD_LOG_START, RAM_BUF, len(ranges), 4096)
        assert st == ERR_ARGS, "ranges %s: status %d" % (ranges, st)
    # Paused: a state of garbage and a state with one flipped field.
    assert r.command(0, CMD_PAUSE, 100) == 0
    assert r.command(0, CMD_SAVE, RAM_BUF, arch) == 0
    good = q.read(RAM_BUF, arch)
    for bad in (os.urandom(arch), good[:-1], good[:8] + struct.pack("<I", 0xffff) + good[12:]):
        q.write(RAM_BUF, bad)
        st = r.command(0, CMD_RESTORE, RAM_BUF, len(bad))
        assert st == ERR_STATE, "a broken state: status %d" % st
    q.write(RAM_BUF, good)
    assert r.command(0, CMD_RESTORE, RAM_BUF, arch) == 0
    assert r.command(0, CMD_RESTORE, RAM_BUF, 1 << 20) == ERR_ARGS
    assert r.command(0, CMD_RESUME) == 0


def t_vf_registers(r, rnd, ops):
    """Random writes to every VF register, the device running meanwhile."""
    q = r.q
    for i in range(ops):
        n = rnd.randrange(r.nvfs)
        reg = rnd.choice([rnd.randrange(0, 0x10000, 4), rnd.randrange(0, 0x300, 4)])
        val = rnd.choice([0, 1, 0xffffffff, rnd.getrandbits(32), RAM_BUF, 0x80000000])
        q.writel(r.vf_bar0(n) + reg, val)
        q.readl(r.vf_bar0(n) + rnd.randrange(0, 0x300, 4))
        if i % 50 == 0:
            q.step(2_000_000)
    q.step(100_000_000)


def dirty_bits(r, n, nr, op=CMD_DIRTY):
    """CMD_DIRTY (or CMD_PEEK) on VF @n: (the blocks written since the last
    one, the blocks written since the scrub), as sets of block numbers."""
    q = r.q
    size = (nr + 63) // 64 * 8
    q.write(RAM_BUF, b"\xee" * 2 * size)
    st = r.command(n, op, RAM_BUF, size)
    assert st == 0, "VRAM_DIRTY: status %d" % st
    assert q.readl(r.vfreg(n, VF_RESULT)) == nr, "VRAM_DIRTY: result is not the block count"

    def blocks(raw):
        v = int.from_bytes(raw, "little")
        return {b for b in range(size * 8) if v >> b & 1}
    return blocks(q.read(RAM_BUF, size)), blocks(q.read(RAM_BUF + size, size))


def t_vram_dirty(r):
    """The device's VRAM dirty bits: exactly the blocks written through the
    aperture or by a VRAM_WRITE, at the edges of the groups the device
    folds its log by (64 blocks) and of VRAM, and nothing when nothing was
    written."""
    q = r.q
    nr = q.readl(r.vfreg(0, VF_VRAM_LO)) >> r.shift
    assert nr >= 256, "VF 0 has %d blocks" % nr
    assert r.command(0, CMD_SCRUB) == 0
    assert r.command(0, CMD_TRACK, 1) == 0
    d, p = dirty_bits(r, 0, nr)
    assert d == set(range(nr)) and not p, "tracking on: %d dirty, %d populated" % (len(d), len(p))
    d, p = dirty_bits(r, 0, nr)
    assert not d and not p, "nothing written: %d dirty, %d populated" % (len(d), len(p))
    wrote = {0, 63, 64, 127, 200, nr - 64, nr - 1}
    for b in sorted(wrote):
        q.write(r.vf_vram(0) + (b << r.shift) + 5 * 4096 + 8, struct.pack("<Q", 0x1234567800 + b))
    d, p = dirty_bits(r, 0, nr)
    assert d == wrote and p == wrote, "wrote %s: dirty %s, populated %s" % (
        sorted(wrote), sorted(d), sorted(p))
    d, p = dirty_bits(r, 0, nr)
    assert not d and p == wrote, "nothing more written: dirty %s" % sorted(d)
    # The device's own write (a VRAM_WRITE of zeroes) marks its block too.
    assert r.command(0, CMD_VRAM_WRITE, (nr - 30) << r.shift, 0, 4096) == 0
    d, p = dirty_bits(r, 0, nr)
    assert d == {nr - 30} and p == wrote | {nr - 30}, "VRAM_WRITE: dirty %s" % sorted(d)
    assert r.command(0, CMD_TRACK, 0) == 0
    assert r.command(0, CMD_SCRUB) == 0


def count(r, n):
    """CMD_COUNT on VF @n: (dirty blocks, those of them ever written)."""
    assert r.command(n, CMD_COUNT) == 0, "VRAM_COUNT failed"
    lo, hi = r.q.readl(r.vfreg(n, VF_RESULT)), r.q.readl(r.vfreg(n, VF_RESULT + 4))
    return lo, hi


def t_vram_count(r):
    """The device keeps the blocks still to send: PEEK leaves them, a
    READ_TAKE of a block or a TAKE_ZERO run takes exactly those, a write
    after the take makes the block dirty again, and COUNT says how many
    there are (and how many hold data) at every step."""
    q = r.q
    assert q.readl(PF_BAR + PF_CAPS) & CAP_VRAM_COUNT, "CAP_VRAM_COUNT not offered"
    nr = q.readl(r.vfreg(0, VF_VRAM_LO)) >> r.shift
    assert r.command(0, CMD_SCRUB) == 0
    data = {3, 64, nr - 1}
    for b in sorted(data):
        q.write(r.vf_vram(0) + (b << r.shift) + 100, struct.pack("<Q", 0xabcdef00 + b))
    # tracking off: every block would be sent, those written hold data
    assert count(r, 0) == (nr, len(data)), "tracking off: %s" % (count(r, 0),)
    assert r.command(0, CMD_TRACK, 1) == 0
    assert count(r, 0) == (nr, len(data)), "tracking on: %s" % (count(r, 0),)
    d, p = dirty_bits(r, 0, nr, CMD_PEEK)
    assert d == set(range(nr)) and p == data, "PEEK: %d dirty, populated %s" % (len(d), p)
    assert count(r, 0) == (nr, len(data)), "PEEK took something: %s" % (count(r, 0),)
    # a data block read and taken
    assert r.command(0, CMD_READ_TAKE, 3 << r.shift, RAM_BUF, 1 << r.shift) == 0
    got = struct.unpack("<Q", q.read(RAM_BUF + 100, 8))[0]
    assert got == 0xabcdef03, "READ_TAKE read 0x%x" % got
    assert count(r, 0) == (nr - 1, len(data) - 1), "after READ_TAKE: %s" % (count(r, 0),)
    # a zero run stops at the first block holding data (3 is clean now: 4..63)
    assert r.command(0, CMD_TAKE_ZERO, 0, 3) == 0
    assert q.readl(r.vfreg(0, VF_RESULT)) == 3, "TAKE_ZERO 0..2 took %d" % q.readl(
        r.vfreg(0, VF_RESULT))
    assert r.command(0, CMD_TAKE_ZERO, 3, 10) == 0
    assert q.readl(r.vfreg(0, VF_RESULT)) == 0, "TAKE_ZERO from a clean block took some"
    assert r.command(0, CMD_TAKE_ZERO, 4, nr - 4) == 0
    assert q.readl(r.vfreg(0, VF_RESULT)) == 60, "TAKE_ZERO 4.. took %d, not 60" % q.readl(
        r.vfreg(0, VF_RESULT))
    assert count(r, 0) == (nr - 64, 2), "after the zero runs: %s" % (count(r, 0),)
    # a block written after the driver saw it as zero is not taken as zero
    q.write(r.vf_vram(0) + (100 << r.shift), struct.pack("<Q", 7))
    assert r.command(0, CMD_TAKE_ZERO, 100, 1) == 0
    assert q.readl(r.vfreg(0, VF_RESULT)) == 0, "a written block was taken as zero"
    assert count(r, 0) == (nr - 64, 3), "block 100 written: %s" % (count(r, 0),)
    # a block taken and written again is dirty again
    q.write(r.vf_vram(0) + (3 << r.shift), struct.pack("<Q", 9))
    assert count(r, 0) == (nr - 63, 4), "block 3 rewritten: %s" % (count(r, 0),)
    d, p = dirty_bits(r, 0, nr, CMD_PEEK)
    assert d == set(range(64, nr)) | {3}, "PEEK after the takes: %s" % sorted(
        set(range(nr)) - d)
    # the classic VRAM_DIRTY still hands the bits over and clears them
    d, p = dirty_bits(r, 0, nr)
    assert count(r, 0) == (0, 0), "after VRAM_DIRTY: %s" % (count(r, 0),)
    assert r.command(0, CMD_TRACK, 0) == 0
    assert r.command(0, CMD_SCRUB) == 0


def vf_program(r, n, base, pages):
    """VF @n reset, its page tables at @base mapping GPU VA 0x10000000 + 4 KiB
    * i to the bus address pages[i] (all in one 2 MiB), enabled; a ring at
    @base + 0x10000 on queue 0.  Returns (BAR0, ring address)."""
    q = r.q
    bar = r.vf_bar0(n)
    q.writel(bar + SG_CONTROL, 2)                               # reset
    va = 0x10000000
    q.write(base, bytes(0x3000))
    q.write(base, struct.pack("<Q", (base + 0x1000) | 1))
    q.write(base + 0x1000 + 8 * ((va >> 21) & 511), struct.pack("<Q", (base + 0x2000) | 1))
    for i, pa in enumerate(pages):
        q.write(base + 0x2000 + 8 * (((va >> 12) + i) & 511), struct.pack("<Q", pa | 3))
    ring = base + 0x10000
    q.write(ring, bytes(64 * 16))
    q.writel(bar + SG_PT_ROOT_LO, base)
    qb = bar + SG_QBASE
    q.writel(qb + Q_RING_LO, ring)
    q.writel(qb + Q_RING_HI, 0)
    q.writel(qb + Q_SIZE, 16)
    q.writel(qb + Q_CTRL, 1)
    q.writel(bar + SG_CONTROL, 1)
    return bar, ring


def vf_knob(r, n, k, v):
    r.q.writel(r.vfreg(n, 0x80 + 4 * k), v)


def t_reentry(r):
    """The VF's own DMA aimed at its own registers, from every entry of its
    processor (the bottom half a doorbell kicks and the timer that paces
    kernel steps and the background writer): refused as a DMA error, the
    registers untouched, QEMU alive.  A FENCE rewriting PT_ROOT mid-step;
    the background writer's stamp rewriting DIRTY_PAGES (to 0, which the
    next stamp divides by)."""
    q = r.q
    n, base, buf = 1, RAM_BUF + 0x40000, RAM_BUF + 0x70000
    va = 0x10000000
    settle(r, n)
    bar, ring = vf_program(r, n, base, [buf, r.vf_bar0(n)])
    q.write(buf, bytes(4096))
    # A kernel of 3 steps of at least 2 ms each keeps the processor on its
    # timer; the FENCE after it runs from there.
    vf_knob(r, n, KNOB_KERNEL_STEP_US, 2000)
    q.write(ring, struct.pack("<II6QQ", OP_KERNEL, 0, va, 64, 3, 1, 0, 0, 0) +
            struct.pack("<II6QQ", OP_FENCE, 0, va + 0x1000 + SG_PT_ROOT_LO, 0x12345000,
                        0, 0, 0, 0, 0))
    qb = bar + SG_QBASE
    q.writel(qb + Q_TAIL, 2)
    for _ in range(200):
        if not q.readl(qb + Q_STATUS) & 1 or not q.alive():
            break
        q.step(1_000_000)
    vf_knob(r, n, KNOB_KERNEL_STEP_US, 0)
    root = q.readl(bar + SG_PT_ROOT_LO)
    assert root == base, "a FENCE from the processor's timer rewrote PT_ROOT to 0x%x" % root
    err = q.readl(qb + Q_ERROR)
    assert err == ERR_SG_DMA, "the FENCE at the VF's own BAR: queue error %d, not DMA" % err
    # The background writer, its region on the VF's own BAR: a stamp at
    # DIRTY_BASE_LO writes DIRTY_PAGES too.
    bar, ring = vf_program(r, n, base, [buf, r.vf_bar0(n)])
    q.writel(bar + SG_DIRTY_BASE_LO, va + 0x1000 + SG_DIRTY_BASE_LO)
    q.writel(bar + SG_DIRTY_BASE_HI, 0)
    vf_knob(r, n, KNOB_DIRTY_RATE, 100000)
    q.writel(bar + SG_DIRTY_PAGES, 1)
    for _ in range(50):
        q.step(1_000_000)
        if not q.alive():
            break
    vf_knob(r, n, KNOB_DIRTY_RATE, 0)
    assert q.alive(), "QEMU died"
    pages, code, queue = (q.readl(bar + SG_DIRTY_PAGES), q.readl(bar + SG_ERR_CODE),
                          q.readl(bar + SG_ERR_QUEUE))
    assert pages == 1, "the writer's stamp rewrote DIRTY_PAGES to %d" % pages
    assert (code, queue) == (ERR_SG_DMA, QUEUE_WORKLOAD), \
        "the writer at the VF's own BAR: error %d on queue 0x%x, not DMA on the writer" % (code, queue)
    q.writel(bar + SG_DIRTY_PAGES, 0)
    q.writel(bar + SG_CONTROL, 2)


def t_share(r):
    """SET_SHARE (CAP_SHARE): its result is the share before; past SHARE_MAX
    it is refused and nothing changes; at 50 the background writer does half
    its work in the same (virtual) time, at 0 all of it again: it is paced
    in the VF's run time."""
    q = r.q
    n, base, page = 0, RAM_BUF + 0x40000, RAM_BUF + 0x70000
    assert q.readl(PF_BAR + PF_CAPS) & CAP_SHARE, "CAP_SHARE not offered"
    settle(r, n)
    assert r.command(n, CMD_SET_SHARE, 30) == 0
    assert q.readl(r.vfreg(n, VF_RESULT)) == 0, "the share before was not 0"
    assert r.command(n, CMD_SET_SHARE, SHARE_MAX + 1) == ERR_ARGS
    assert r.command(n, CMD_SET_SHARE, 1 << 32) == ERR_ARGS
    assert r.command(n, CMD_SET_SHARE, 0) == 0
    got = q.readl(r.vfreg(n, VF_RESULT))
    assert got == 30, "a refused SET_SHARE changed the share (to %d)" % got
    bar, ring = vf_program(r, n, base, [page])
    q.write(page, bytes(16))
    q.writel(bar + SG_DIRTY_BASE_LO, 0x10000000)
    q.writel(bar + SG_DIRTY_BASE_HI, 0)
    vf_knob(r, n, KNOB_DIRTY_RATE, 1000)
    q.writel(bar + SG_DIRTY_PAGES, 1)

    def written(ms):
        """Stamps the writer made in @ms of virtual time (its count)."""
        c0 = struct.unpack("<Q", q.read(page, 8))[0]
        for _ in range(ms):
            q.step(1_000_000)
        return struct.unpack("<Q", q.read(page, 8))[0] - c0

    full = written(200)
    assert r.command(n, CMD_SET_SHARE, 50) == 0
    half = written(200)
    assert r.command(n, CMD_SET_SHARE, 0) == 0
    again = written(200)
    vf_knob(r, n, KNOB_DIRTY_RATE, 0)
    q.writel(bar + SG_DIRTY_PAGES, 0)
    q.writel(bar + SG_CONTROL, 2)
    assert 180 <= full <= 220, "unthrottled, 1000 pages/s wrote %d in 200 ms" % full
    assert 80 <= half <= 120, "at a share of 50, %d in 200 ms (unthrottled %d)" % (half, full)
    assert 180 <= again <= 220, "back at 0, %d in 200 ms" % again


def t_zero_write(r):
    """A VRAM_WRITE of zeroes over whole blocks leaves them unwritten (they
    read as zeroes, as after a scrub: a later migration sends them as a
    zero range, not as data) and dirty while tracking; over part of a block
    it is a write like any other."""
    q = r.q
    nr = q.readl(r.vfreg(0, VF_VRAM_LO)) >> r.shift
    assert r.command(0, CMD_SCRUB) == 0
    for b in (10, 11, 12):
        q.write(r.vf_vram(0) + (b << r.shift) + 64, struct.pack("<Q", 0x77 + b))
    assert r.command(0, CMD_TRACK, 1) == 0
    dirty_bits(r, 0, nr)
    assert r.command(0, CMD_VRAM_WRITE, 10 << r.shift, 0, 2 << r.shift) == 0
    assert r.command(0, CMD_VRAM_WRITE, (12 << r.shift) + 4096, 0, 4096) == 0
    d, p = dirty_bits(r, 0, nr)
    assert d == {10, 11, 12} and p == {12}, "zeroed 10-11 whole, part of 12: dirty %s, " \
        "written %s" % (sorted(d), sorted(p))
    assert q.read(r.vf_vram(0) + (10 << r.shift) + 64, 8) == bytes(8), "block 10 not zeroed"
    assert r.command(0, CMD_TRACK, 0) == 0
    assert r.command(0, CMD_SCRUB) == 0


def t_absent(r):
    """Post-copy (CAP_ABSENT).  Destination: SET_ABSENT only on a paused VF;
    a FILL into an absent block waits whole (nothing written, the queue
    busy, DEMAND names it once, INT_STATUS says so) while another queue
    runs; a partial VRAM_WRITE into it is ARGS; VRAM_DELIVER brings it and
    the FILL runs; a second DELIVER is ORDER and writes nothing; VRAM_LOSE
    fails the next access with VRAM_LOST.  Source: VRAM_HOLD takes blocks
    out (the aperture reads zero), survives the VF's SCRUB, HOLD_READ
    reads them (held ones only), HOLD_RETURN puts them back, HOLD_FREE
    lets go."""
    q = r.q
    n = 1
    assert q.readl(PF_BAR + PF_CAPS) & CAP_ABSENT, "CAP_ABSENT not offered"
    nr = q.readl(r.vfreg(n, VF_VRAM_LO)) >> r.shift
    size = (nr + 63) // 64 * 8
    bs = 1 << r.shift
    settle(r, n)
    assert r.command(n, CMD_SCRUB) == 0
    bar, ring = vf_program(r, n, RAM_BUF + 0x40000, [])
    tables = RAM_BUF + 0x40000
    va = 0x20000000
    # GPU VA 0x20000000 + 4 KiB * i -> VRAM block 5, page i (2 MiB table of its own)
    q.write(tables + 8 * ((va >> 30) & 511), struct.pack("<Q", (tables + 0x3000) | 1))
    q.write(tables + 0x3000 + 8 * ((va >> 21) & 511), struct.pack("<Q", (tables + 0x4000) | 1))
    q.write(tables + 0x4000, b"".join(struct.pack("<Q", (5 * bs + 4096 * i) | 7)
                                      for i in range(16)))
    bitmap = bytearray(size)
    bitmap[0] = 1 << 5 | 1 << 6
    q.write(RAM_BUF, bytes(bitmap))
    assert r.command(n, CMD_SET_ABSENT, RAM_BUF, size) == ERR_ORDER, "SET_ABSENT while running"
    assert r.command(n, CMD_PAUSE, 100) == 0
    assert r.command(n, CMD_SET_ABSENT, RAM_BUF, size - 8 if size > 8 else 4) == ERR_ARGS
    assert r.command(n, CMD_SET_ABSENT, RAM_BUF, size) == 0
    assert q.readl(r.vfreg(n, VF_RESULT)) == 2 and q.readl(r.vfreg(n, VF_ABSENT)) == 2
    assert r.command(n, CMD_SET_ABSENT, RAM_BUF, size) == ERR_ORDER, "SET_ABSENT twice"
    assert r.command(n, CMD_RESUME) == 0
    q.writel(PF_BAR + PF_INT_STATUS, 0xffffffff)
    q.write(ring, struct.pack("<II6QQ", OP_FILL, 0, va, 4096, 0x66666666, 0, 0, 0, 0))
    q.writel(bar + SG_QBASE + Q_TAIL, 1)
    for _ in range(50):
        q.step(1_000_000)
    qb = bar + SG_QBASE
    assert q.readl(qb + Q_STATUS) & 1, "a FILL into an absent block did not wait"
    assert q.readl(PF_BAR + PF_INT_STATUS) & (1 << (16 + n)), "no demand interrupt"
    assert q.readl(r.vfreg(n, VF_DEMAND)) == 5 + 1, "DEMAND does not name block 5"
    assert q.readl(r.vfreg(n, VF_DEMAND)) == 0, "DEMAND said it twice"
    assert q.read(r.vf_vram(n) + 5 * bs, 16) == bytes(16), "a waiting FILL wrote"
    assert r.command(n, CMD_VRAM_WRITE, 5 * bs, 0, 4096) == ERR_ARGS, "part of an absent block"
    q.write(RAM_BUF + 0x10000, b"\x11" * bs)
    assert r.command(n, CMD_DELIVER, 5 * bs, RAM_BUF + 0x10000, bs) == 0
    for _ in range(50):
        if not q.readl(qb + Q_STATUS) & 3:
            break
        q.step(1_000_000)
    assert not q.readl(qb + Q_STATUS) & 3, "the FILL did not run once its block arrived"
    assert q.read(r.vf_vram(n) + 5 * bs, 8) == b"\x66" * 8, "FILL result"
    assert q.read(r.vf_vram(n) + 5 * bs + 8192, 8) == b"\x11" * 8, "delivered data"
    q.write(RAM_BUF + 0x10000, b"\x22" * bs)
    assert r.command(n, CMD_DELIVER, 5 * bs, RAM_BUF + 0x10000, bs) == ERR_ORDER, "twice"
    assert q.read(r.vf_vram(n) + 5 * bs + 8192, 8) == b"\x11" * 8, "a duplicate wrote"
    assert r.command(n, CMD_LOSE, 5) == ERR_ARGS, "LOSE of a present block"
    assert r.command(n, CMD_LOSE, 6) == 0 and q.readl(r.vfreg(n, VF_ABSENT)) == 0
    # block 6 lost: an access fails with VRAM_LOST (PTE 0 of 6 via a new VA)
    q.write(tables + 0x4000 + 8 * 16, struct.pack("<Q", (6 * bs) | 7))
    q.write(ring + 64, struct.pack("<II6QQ", OP_FILL, 0, va + 16 * 4096 + 8, 8, 1, 0, 0, 0, 0))
    q.writel(qb + Q_TAIL, 2)
    for _ in range(50):
        q.step(1_000_000)
    assert q.readl(qb + Q_ERROR) == ERR_VRAM_LOST, "a lost block: queue error %d" % q.readl(
        qb + Q_ERROR)
    # the source side
    assert r.command(n, CMD_SCRUB) == 0
    for b in (2, 3):
        q.write(r.vf_vram(n) + b * bs + 100, struct.pack("<Q", 0xfeed0000 + b))
    bitmap = bytearray(size)
    bitmap[0] = 1 << 2 | 1 << 3 | 1 << 4
    q.write(RAM_BUF, bytes(bitmap))
    assert r.command(n, CMD_HOLD, RAM_BUF, size) == ERR_ORDER, "HOLD while running"
    assert r.command(n, CMD_PAUSE, 100) == 0
    assert r.command(n, CMD_HOLD, RAM_BUF, size) == 0
    assert q.readl(r.vfreg(n, VF_HELD)) == 3
    assert r.command(n, CMD_HOLD, RAM_BUF, size) == ERR_ORDER, "HOLD twice"
    assert q.read(r.vf_vram(n) + 2 * bs + 100, 8) == bytes(8), "a held block still in the VF"
    assert r.command(n, CMD_SCRUB) == 0 and q.readl(r.vfreg(n, VF_HELD)) == 3
    assert r.command(n, CMD_HOLD_READ, 1 * bs, RAM_BUF + 0x10000, bs) == ERR_ARGS, "not held"
    assert r.command(n, CMD_HOLD_READ, 2 * bs, RAM_BUF + 0x10000, 2 * bs) == 0
    assert struct.unpack("<Q", q.read(RAM_BUF + 0x10000 + 100, 8))[0] == 0xfeed0002
    assert struct.unpack("<Q", q.read(RAM_BUF + 0x10000 + bs + 100, 8))[0] == 0xfeed0003
    assert r.command(n, CMD_HOLD_READ, 4 * bs, RAM_BUF + 0x10000, bs) == 0
    assert q.read(RAM_BUF + 0x10000, bs) == bytes(bs), "a held block never written"
    assert r.command(n, CMD_PAUSE, 100) == 0
    assert r.command(n, CMD_HOLD_RETURN) == 0 and q.readl(r.vfreg(n, VF_HELD)) == 0
    assert struct.unpack("<Q", q.read(r.vf_vram(n) + 3 * bs + 100, 8))[0] == 0xfeed0003
    assert r.command(n, CMD_HOLD_RETURN) == ERR_ORDER
    assert r.command(n, CMD_HOLD, RAM_BUF, size) == 0
    assert r.command(n, CMD_HOLD_FREE) == 0 and q.readl(r.vfreg(n, VF_HELD)) == 0
    assert r.command(n, CMD_HOLD_FREE) == ERR_ORDER
    assert r.command(n, CMD_RESUME) == 0
    assert r.command(n, CMD_SCRUB) == 0
    q.writel(bar + SG_CONTROL, 2)


def t_dma_disables_sriov(r):
    """A hostile PF driver points VRAM_DIRTY's first bitmap at the PF's own
    SR-IOV control (through ECAM): that DMA disables the VFs, the VF's
    bitmaps are freed, and the command must not use them for its second
    bitmap.  It ends with DISABLED and QEMU lives; SR-IOV comes back."""
    q = r.q
    nr = q.readl(r.vfreg(0, VF_VRAM_LO)) >> r.shift
    size = (nr + 63) // 64 * 8
    assert r.command(0, CMD_TRACK, 1) == 0
    dirty_bits(r, 0, nr)                # the dirty bits are zero now
    q.write(RAM_BUF, b"\x5a" * size)
    st = r.command(0, CMD_DIRTY, cfg(1, 0, 0, SRIOV + 0x08), RAM_BUF - cfg(1, 0, 0, SRIOV + 0x08))
    assert q.alive(), "QEMU died"
    assert not r.vf_enabled(), "the DMA did not disable SR-IOV (the test did not reach the bug)"
    assert st == ERR_DISABLED, "VRAM_DIRTY whose own DMA disabled its VF: status %d" % st
    assert q.read(RAM_BUF, size) == b"\x5a" * size, "the second bitmap was written from a freed VF"
    r.enable_vfs()
    assert r.vf_enabled() and q.readl(r.vf_bar0(0) + SG_ID) == 0x55504753


def t_still_works(r):
    """After all that: reset, and a VF fills guest memory exactly."""
    q = r.q
    for n in range(r.nvfs):
        assert r.command(n, CMD_SCRUB) == 0
    bar = r.vf_bar0(0)
    guest, flr = q.readl(r.vfreg(0, VF_GUEST_RESETS)), q.readl(r.vfreg(0, VF_RESETS))
    q.writel(bar + SG_CONTROL, 2)                                   # reset
    # the PF counts the VF user's own reset (not as a function-level one)
    assert q.readl(r.vfreg(0, VF_GUEST_RESETS)) == guest + 1, "GUEST_RESETS not counted"
    assert q.readl(r.vfreg(0, VF_RESETS)) == flr, "a CONTROL reset counted as an FLR"
    tables, ring, buf = RAM_BUF + 0x10000, RAM_BUF + 0x20000, RAM_BUF + 0x30000
    va = 0x10000000
    q.write(tables, bytes(0x3000))
    q.write(tables, struct.pack("<Q", (tables + 0x1000) | 1))      # root[0]
    q.write(tables + 0x1000 + 8 * ((va >> 21) & 511), struct.pack("<Q", (tables + 0x2000) | 1))
    q.write(tables + 0x2000 + 8 * ((va >> 12) & 511), struct.pack("<Q", buf | 3))
    q.write(buf, bytes(4096))
    cmd = struct.pack("<II6QQ", OP_FILL, 0, va + 16, 64, 0x5a5a5a5a, 0, 0, 0, 0)
    q.write(ring, cmd)
    q.writel(bar + SG_PT_ROOT_LO, tables)
    qb = bar + SG_QBASE
    q.writel(qb + Q_RING_LO, ring)
    q.writel(qb + Q_RING_HI, 0)
    q.writel(qb + Q_SIZE, 16)
    q.writel(qb + Q_CTRL, 1)
    q.writel(bar + SG_CONTROL, 1)
    q.writel(qb + Q_TAIL, 1)
    for _ in range(100):
        if not q.readl(qb + Q_STATUS) & 3:
            break
        q.step(1_000_000)
    data = q.read(buf, 128)
    assert data == bytes(16) + b"\x5a" * 64 + bytes(48), "FILL result %s" % data.hex()
    assert q.readl(PF_BAR + PF_ID) == 0x46504753


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qemu")
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    q = Qtest(a.qemu)
    results = []

    def run(name, fn, *args):
        try:
            out = fn(*args)
            ok = q.alive()
            results.append((name, ok, "QEMU died" if not ok else ""))
            return out
        except Exception as e:      # noqa: BLE001 - every failure is a result
            results.append((name, False, "%s: %s" % (type(e).__name__, e)))
            return None

    try:
        abi_checked()
        results.append(("the script's registers and codes are the uapi headers'", True, ""))
    except Exception as e:          # noqa: BLE001
        results.append(("the script's registers and codes are the uapi headers'", False,
                        str(e)))
    r = None
    try:
        r = Rig(q)
        results.append(("enumerate the PF, enable SR-IOV and 2 VFs by hand", True, ""))
    except Exception as e:          # noqa: BLE001
        results.append(("enumerate the PF, enable SR-IOV and 2 VFs by hand", False, str(e)))
    if r:
        run("PF and VF identities; profiles fixed while enabled", t_enumerate, r)
        errors = run("%d nonsense mailbox commands each end with a status" % a.ops,
                     t_bad_commands, r, rnd, a.ops)
        run("exact errors at the ABI's edges; broken states refused", t_limits, r)
        run("%d random VF register writes while it runs" % a.ops, t_vf_registers, r, rnd,
            a.ops)
        run("VRAM dirty bits: exactly the blocks written, at the edges of the device's "
            "fold groups and of VRAM", t_vram_dirty, r)
        run("VRAM blocks kept by the device: PEEK, READ_TAKE, TAKE_ZERO and COUNT agree",
            t_vram_count, r)
        run("SET_SHARE: bounds, the share before, the background writer paced in the "
            "VF's run time (half at 50)", t_share, r)
        run("VRAM_WRITE of zeroes over whole blocks leaves them unwritten, dirty",
            t_zero_write, r)
        run("post-copy: absent blocks park the VF's work, DEMAND, DELIVER, LOSE; the PF's "
            "hold: HOLD, HOLD_READ, RETURN, FREE", t_absent, r)
        run("the VF's DMA at its own registers, from its bottom half and its timer: "
            "refused, registers intact", t_reentry, r)
        run("a PF command whose own DMA disables SR-IOV ends DISABLED, touches no freed "
            "VF", t_dma_disables_sriov, r)
        run("the device still works afterwards, byte for byte; the PF counts a VF "
            "user's reset", t_still_works, r)
        print("# %d qtest commands; %s of the nonsense commands failed with a status"
              % (q.cmds, errors))
    q.close()
    ktap(results)
    return 0 if all(x[1] for x in results) else 1


if __name__ == "__main__":
    sys.exit(main())
