# SPDX-License-Identifier: GPL-2.0
"""The device's own migration figures against VFIO's during a QEMU
migration (issue 14), for the QEMU migration suite (qemu_mig.py): a
Sampler thread reads migration/remaining_bytes between two
VFIO_MIG_GET_PRECOPY_INFO answers on a copy of QEMU's saving fd while the
device is in PRE_COPY, and the stop-copy estimate when it enters
STOP_COPY; check_samples() makes the checks on what it saw.  It uses no
QMP: the main thread drives QEMU meanwhile.
"""
import ctypes
import fcntl
import os
import struct
import threading
import time

from mig_vm import sysfs

VFIO_MIG_GET_PRECOPY_INFO = 0x3B79     # _IO(';', 100 + 21)
# One VRAM block as the stream carries it: 64 KiB and its section header.
# A block can turn dirty and be read between two samples, so figures
# taken a moment apart may differ by that much.
VRAM_SECTION = (64 << 10) + 40
SYS_PIDFD_GETFD = 438
# Samples with data pending: at SAMPLES_WANTED the Sampler sets enough,
# at SAMPLES_NEEDED (the fewest check_samples() accepts) some; a sampled
# migration keeps pre-copy going until then (mig_checks, RELEASE_*).
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
    closed there, before QEMU ends the migration.  An mdev's STOP_COPY can
    be over within the 2 ms between two looks (a QEMU 11.1 run once missed
    it): then the estimate read in PRE_COPY_P2P stands, with nothing sent
    yet (the device is quiesced there, and the state change made the view
    fresh)."""

    def __init__(self, vm):
        super().__init__(daemon=True)
        self.vm, self.dev = vm, vm.dev
        self.stop = threading.Event()
        self.enough = threading.Event()     # SAMPLES_WANTED with data pending
        self.some = threading.Event()       # SAMPLES_NEEDED with data pending
        self.samples, self.bad = [], []
        self.retaken = 0
        self.estimate = None            # (estimate, sent by then)
        self.p2p_estimate = None        # the same, read in PRE_COPY_P2P
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
                if state == "PRE_COPY_P2P":
                    est = self._metric("stopcopy_estimate_bytes")
                    if self._metric("state") == "PRE_COPY_P2P":
                        self.p2p_estimate = (int(est), 0)
                elif state == "PRE_COPY":
                    self.p2p_estimate = None    # back from P2P: a new stop later
                elif self.p2p_estimate:
                    return                      # STOP_COPY came and went
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
            if self.estimate is None:
                self.estimate = self.p2p_estimate
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
