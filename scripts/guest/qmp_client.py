# SPDX-License-Identifier: GPL-2.0
"""The QMP client of the QEMU migration suite (qemu_mig.py): one blocking
connection per QEMU process, JSON lines over its unix socket; a command's
reply is awaited, the events read on the way are kept in order in
QMP.events, and a QMP error is raised as QMPError.

python3-qemu-qmp 0.0.6 (trixie-backports; its synchronous
qemu.qmp.legacy.QEMUMonitorProtocol) was tried against QEMU 10.0 on
bookworm's Python 3.11 and not taken: once QEMU quits or is killed its
commands raise qemu.qmp's StateError or ExecInterruptedError and its
close() raises EOFError, where the suite expects EOFError or OSError and
a quiet close, and a connection left open (a killed QEMU) prints an
"Exception ignored in __del__" traceback at exit.  Every connection made
on one thread also shares one asyncio loop, so commands from two threads
at once fail ("This event loop is already running"); a wrapper hiding
all that would be larger than this client.
"""
import json
import socket
import time


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
