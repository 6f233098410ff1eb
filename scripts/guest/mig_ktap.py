# SPDX-License-Identifier: GPL-2.0
"""The results of the QEMU migration suite (qemu_mig.py): Run writes
OUT/qemu.ktap, one KTAP subtest "qemu_migration" with one numbered result
per check and the notes as diagnostic lines, and prints each to stdout
("qemu: ok ...", "qemu: NOT OK ...: why") as it goes.  The VM scripts,
scripts/soak.sh (by check name) and scripts/summary.py read the KTAP.
"""
import os


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
