#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The Nova lane's judge: OpenStack Nova's own code, fed what nova-compute
reads on a gpumig host.

Runs with Nova 31 importable (scripts/nova-root.sh's chroot; see
scripts/nova-judge.sh), natively, with no Nova service around it and no
database:

    nova_judge.py CAPTURE [CAPTURE_DST]
    nova_judge.py --rewrite XML_IN SRC_ADDR DST_ADDR XML_OUT

CAPTURE is a directory written by lv_nova_capture (scripts/guest/
libvirt.sh) on a host of the VF recipe: version.txt (virsh version),
nodedev/*.xml (every PCI node device), nova-config.txt (gpumigctl
nova-config), functions.txt ("ADDRESS pf|vf DRIVER" per simgpu function)
and domain-vf.xml (the VF domain's migratable XML).  CAPTURE_DST, when
given, is the destination host's capture for the XML rewrite; otherwise
the rewrite maps onto another VF address of CAPTURE.  With --rewrite it
only rewrites XML_IN's <hostdev> from SRC_ADDR to DST_ADDR as the source's
nova-compute does before a live migration, into XML_OUT (the two-host
lane migrates the domain with it).

Each check is one KTAP line; the exit status is 1 when one fails.  What
is Nova's is called as nova-compute calls it: the libvirt driver's node
device parsing (Host._get_pcidev_info), the PCI tracker's
update_devices_from_hypervisor_resources (Whitelist, device_spec tags,
PciDevice.create, PciDeviceStats), the alias parser, support_requests and
consume_requests, the driver's live_migratable version gate
(_check_pci_whitelist), the driver's hostdev config
(_get_guest_pci_device) and the live migration's XML rewrite
(migration.get_updated_guest_xml with a PCI map).  Only libvirt itself is
replaced: a node device object answering from the captured XML, and a
connection answering the captured versions.
"""
import copy
import json
import logging
import os
import re
import sys
import types
import xml.etree.ElementTree as ET

N = 0
FAILED = 0


def check(ok, what, why=""):
    global N, FAILED
    N += 1
    if ok:
        print(f"    ok {N} {what}")
    else:
        FAILED += 1
        # KTAP: a case's diagnostics come before its result.
        for line in str(why).splitlines():
            print(f"    # {line}")
        print(f"    not ok {N} {what}")
    sys.stdout.flush()
    return ok


def note(s):
    for line in str(s).splitlines():
        print(f"    # {line}")


# ---- the capture ----------------------------------------------------------

class Capture:
    def __init__(self, d):
        self.dir = d
        self.nodedevs = {}
        nd = os.path.join(d, "nodedev")
        for f in sorted(os.listdir(nd)):
            if f.endswith(".xml"):
                with open(os.path.join(nd, f)) as fh:
                    self.nodedevs[f[:-4]] = fh.read()
        with open(os.path.join(d, "version.txt")) as fh:
            v = fh.read()
        self.libvirt = self._ver(v, r"Using library: libvirt ([0-9.]+)")
        self.qemu = self._ver(v, r"Running hypervisor: QEMU ([0-9.]+)")
        self.specs, self.aliases = [], []
        with open(os.path.join(d, "nova-config.txt")) as fh:
            self.nova_config = fh.read()
        for line in self.nova_config.splitlines():
            k, _, v = line.partition(" = ")
            if k == "device_spec":
                self.specs.append(v)
            elif k == "alias":
                self.aliases.append(v)
        self.functions = {}
        self.pf_of = {}     # a VF's PF: the PF line that precedes its VFs
        pf = None
        with open(os.path.join(d, "functions.txt")) as fh:
            for line in fh:
                f = line.split()
                if f:   # an unbound function: "none" (or nothing, older captures)
                    self.functions[f[0]] = (f[1], f[2] if len(f) > 2 else "none")
                    if f[1] == "pf":
                        pf = f[0]
                    else:
                        self.pf_of[f[0]] = pf
        p = os.path.join(d, "domain-vf.xml")
        self.domain_vf = open(p).read() if os.path.exists(p) else None

    @staticmethod
    def _ver(text, rx):
        m = re.search(rx, text)
        if not m:
            return None
        parts = [int(x) for x in m.group(1).split(".")][:3]
        return tuple(parts + [0] * (3 - len(parts)))

    def by_driver(self, role, drv):
        return sorted(a for a, (r, d) in self.functions.items()
                      if r == role and d == drv)


class FakeNodeDev:
    """A libvirt.virNodeDevice answering from a captured XML."""

    def __init__(self, name, xml):
        self._name, self._xml = name, xml
        root = ET.fromstring(xml)
        self._parent = root.findtext("parent")
        self._caps = [c.get("type") for c in root.findall("capability")]

    def name(self):
        return self._name

    def XMLDesc(self, flags=0):
        return self._xml

    def parent(self):
        return self._parent

    def listCaps(self):
        return self._caps


class FakeConn:
    """What Host._version_check asks a libvirt connection."""

    def __init__(self, lv, qemu):
        self.lv, self.qemu = lv, qemu

    @staticmethod
    def _int(v):
        return v[0] * 1000000 + v[1] * 1000 + v[2]

    def getLibVersion(self):
        return self._int(self.lv)

    def getVersion(self):
        return self._int(self.qemu)

    def getType(self):
        return "QEMU"


# ---- Nova --------------------------------------------------------------

class LogTap(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        try:
            self.lines.append(record.getMessage())
        except Exception:  # a message that does not format is not ours
            pass


def nova_setup():
    global CONF, objects, whitelist, pci_stats, pci_request, pci_manager
    global lv_host, lv_driver, lv_migration, exception, fields
    import nova.conf
    from nova import objects
    from nova import exception
    from nova.objects import fields
    from nova.pci import whitelist
    from nova.pci import stats as pci_stats
    from nova.pci import request as pci_request
    from nova.pci import manager as pci_manager
    from nova.virt.libvirt import host as lv_host
    from nova.virt.libvirt import driver as lv_driver
    from nova.virt.libvirt import migration as lv_migration
    CONF = nova.conf.CONF
    CONF([], project="nova", default_config_files=[])
    CONF.set_override("virt_type", "qemu", group="libvirt")
    objects.register_all()
    tap = LogTap()
    logging.getLogger("nova").addHandler(tap)
    logging.getLogger("nova").setLevel(logging.DEBUG)
    return tap


def pci_records(cap):
    """The driver's _get_pci_passthrough_devices, minus libvirt."""
    host = lv_host.Host("qemu:///system")
    devs = {n: FakeNodeDev(n, x) for n, x in cap.nodedevs.items()}
    pci = [d for d in devs.values() if "pci" in d.listCaps()]
    net = [d for d in devs.values() if "net" in d.listCaps()]
    vdpa = [d for d in devs.values() if "vdpa" in d.listCaps()]
    return [host._get_pcidev_info(d.name(), d, net, vdpa, pci) for d in pci]


def configure(specs, aliases):
    CONF.set_override("device_spec", specs, group="pci")
    CONF.set_override("alias", aliases, group="pci")


def tracker_for(records):
    """A PCI tracker as nova-compute's resource tracker makes one, with no
    database (no device tracked before) and no NUMA topology."""
    empty = objects.PciDeviceList(objects=[])
    orig = objects.PciDeviceList.get_by_compute_node
    objects.PciDeviceList.get_by_compute_node = classmethod(lambda cls, ctx, nid: empty)
    try:
        node = objects.ComputeNode(id=1, numa_topology=None)
        t = pci_manager.PciDevTracker(None, node)
    finally:
        objects.PciDeviceList.get_by_compute_node = orig
    t.update_devices_from_hypervisor_resources(json.dumps(records))
    return t


def alias_names(aliases):
    return [json.loads(a)["name"] for a in aliases]


def claim_all(t, alias, limit=16):
    """Claim ALIAS:1 until Nova says no: the addresses claimed, in order."""
    got = []
    for _ in range(limit):
        reqs = pci_request._translate_alias_to_requests(f"{alias}:1")
        if not t.stats.support_requests(reqs, None):
            break
        devs = t.stats.consume_requests(reqs)
        if not devs:
            break
        got += [d for d in devs]
    return got


def version_gate(lv, qemu, specs):
    """The libvirt driver's startup check for live_migratable specs."""
    h = lv_host.Host("qemu:///system")
    h.get_connection = lambda: FakeConn(lv, qemu)
    fake = types.SimpleNamespace(_host=h)
    CONF.set_override("device_spec", specs, group="pci")
    try:
        lv_driver.LibvirtDriver._check_pci_whitelist(fake)
        return None
    except exception.InvalidConfiguration as e:
        return str(e)


def hostdev_xml(pci_device):
    """The libvirt driver's <hostdev> for a claimed device."""
    fake = types.SimpleNamespace()
    fake._set_managed_mode = lambda d, m: lv_driver.LibvirtDriver._set_managed_mode(fake, d, m)
    dev = lv_driver.LibvirtDriver._get_guest_pci_device(fake, pci_device)
    return dev.to_xml()


def rewrite(xml, src, dst):
    """migration.get_updated_guest_xml with a PCI map, as the source's
    driver calls it before libvirt's migrateToURI3."""
    guest = types.SimpleNamespace(get_xml_desc=lambda dump_migratable=False: xml)
    # What the destination's check_can_live_migrate_destination and the
    # source's pre-migration steps fill in for a guest with no graphics,
    # no volumes and a file serial port.
    md = objects.LibvirtLiveMigrateData(
        graphics_listen_addr_vnc="127.0.0.1", graphics_listen_addr_spice="127.0.0.1",
        serial_listen_addr=None, serial_listen_ports=[], bdms=[],
        supported_perf_events=[], pci_dev_map_src_dst={src: dst})
    inst = objects.Instance(flavor=objects.Flavor(extra_specs={}))
    return lv_migration.get_updated_guest_xml(inst, guest, md, lambda *a: None)


def hostdev_addrs(xml):
    root = ET.fromstring(xml)
    out = []
    for h in root.findall("./devices/hostdev"):
        a = h.find("./source/address")
        if h.get("type") == "pci" and a is not None:
            out.append("%04x:%02x:%02x.%x" % tuple(int(a.get(k), 16) for k in
                                                   ("domain", "bus", "slot", "function")))
    return out


# ---- the checks ----------------------------------------------------------

def rewrite_only(xml_in, src, dst, xml_out):
    """The two-host lane's live step: the running domain's migratable XML
    (dumped on the source host) rewritten by Nova for the destination VF,
    for virsh migrate --xml.  Exit status 1 when Nova refuses or the
    result does not name dst alone."""
    nova_setup()
    with open(xml_in) as fh:
        xml = fh.read()
    out = rewrite(xml, src, dst)
    got = hostdev_addrs(out)
    if got != [dst]:
        print(f"nova_judge: the rewritten domain names {got}, not [{dst!r}]", file=sys.stderr)
        return 1
    with open(xml_out, "w") as fh:
        fh.write(out)
    print(f"nova_judge: Nova's get_updated_guest_xml moved the <hostdev> from {src} to {dst}")
    return 0


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--rewrite":
        return rewrite_only(*sys.argv[2:])
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cap = Capture(sys.argv[1])
    dst_cap = Capture(sys.argv[2]) if len(sys.argv) > 2 else None
    print("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: nova")
    tap = nova_setup()
    import nova.version
    note(f"Nova {nova.version.version_string()}; capture {cap.dir}: "
         f"libvirt {cap.libvirt}, QEMU {cap.qemu}, {len(cap.nodedevs)} node devices")

    gm = cap.by_driver("vf", "gpumig-vfio-pci")
    plain = cap.by_driver("vf", "vfio-pci")
    pfs = [a for a, (r, d) in cap.functions.items() if r == "pf" and d == "vfio-pci"]
    check(gm and plain and pfs,
          "the capture has a VF on gpumig-vfio-pci, a VF on vfio-pci and a PF bound whole",
          f"functions: {cap.functions}")

    # 1. The libvirt driver's PCI records.
    recs = pci_records(cap)
    by_addr = {r["address"]: r for r in recs}
    bad = []
    for a, (role, drv) in cap.functions.items():
        r = by_addr.get(a)
        want = "type-PF" if role == "pf" else "type-VF"
        if r is None or r["dev_type"] != want or \
           (role == "vf" and r.get("parent_addr") != cap.pf_of.get(a)):
            bad.append(f"{a} ({role}, {drv}, PF {cap.pf_of.get(a)}): {r}")
    check(not bad, f"Nova's libvirt driver makes PCI records of the node devices "
          f"({len(recs)}): simgpu PFs type-PF, VFs type-VF with their PF", "\n".join(bad))

    # 2. The version gate.
    why = version_gate(cap.libvirt, cap.qemu, cap.specs)
    check(why is None, f"Nova's live_migratable version gate passes with libvirt "
          f"{'.'.join(map(str, cap.libvirt or ()))} and QEMU {'.'.join(map(str, cap.qemu or ()))} "
          "(needs libvirt >= 10.0, QEMU >= 8.2.2)", why)
    why = version_gate((9, 0, 0), (7, 2, 0), cap.specs)
    check(why is not None and "live_migratable" in why,
          "... and refuses bookworm's libvirt 9.0 with QEMU 7.2", why or "accepted")

    # 3. gpumigctl's entries, read by Nova's tracker and scheduler code.
    configure(cap.specs, cap.aliases)
    t = tracker_for(recs)
    tracked = sorted(d.address for d in t.pci_devs)
    check(set(gm) | set(plain) | set(pfs) <= set(tracked),
          "Nova's PCI tracker takes every function gpumigctl nova-config named", f"tracked {tracked}")
    lm = {d.address: d.extra_info.get("live_migratable") for d in t.pci_devs}
    check(all(lm.get(a) == "true" for a in gm) and all(lm.get(a) == "false" for a in plain + pfs),
          "... with live_migratable true only on the VFs of gpumig-vfio-pci", f"{lm}")
    mig = [json.loads(a) for a in cap.aliases if json.loads(a).get("live_migratable") == "yes"]
    check(len(mig) == 1 and mig[0].get("device_type") == "type-VF",
          "gpumigctl prints one live-migratable alias, for type-VF", "\n".join(cap.aliases))
    if mig:
        name = mig[0]["name"]
        reqs = pci_request._translate_alias_to_requests(f"{name}:1")
        check(reqs[0].spec[0].get("live_migratable") == "true",
              f"Nova's alias parser reads alias {name} as live_migratable", f"{reqs[0].spec}")
        got = claim_all(tracker_for(recs), name)
        addrs = [d.address for d in got]
        check(addrs and set(addrs) == set(gm),
              f"a request for alias {name} is claimable and lands on the VFs of gpumig-vfio-pci "
              f"({', '.join(addrs)}), never on the PF or the vfio-pci VF", f"claimed {addrs}")
        CLAIMED = got[0] if got else None
    else:
        CLAIMED = None

    # 4. The report: the PF whitelisted as before, its alias asking for
    # live_migratable (the device then has no such attribute: Nova 33
    # logs "live_migratable spec=true != device=None").
    pf = pfs[0] if pfs else None
    pf_rec = by_addr.get(pf, {})
    rep_spec = json.dumps({"address": pf, "vendor_id": pf_rec.get("vendor_id"),
                           "product_id": pf_rec.get("product_id")})
    rep_alias = json.dumps({"name": "gpu", "vendor_id": pf_rec.get("vendor_id"),
                            "product_id": pf_rec.get("product_id"), "device_type": "type-PF",
                            "live_migratable": "yes"})
    configure([rep_spec], [rep_alias])
    t = tracker_for(recs)
    tap.lines.clear()
    reqs = pci_request._translate_alias_to_requests("gpu:1")
    ok = t.stats.support_requests(reqs, None)
    said = [ln for ln in tap.lines if "Dropped" in ln or "Not enough PCI devices" in ln]
    check(not ok and any("Dropped 1 device(s) due to mismatched PCI attribute(s)" in ln for ln in said)
          and any("Not enough PCI devices left to satisfy request" in ln for ln in said),
          "the report's configuration (a PF alias tagged live_migratable) fails in Nova as reported",
          f"supported: {ok}; Nova said: {said}")
    note("Nova said: " + "; ".join(said))

    # 5. The documented fix, spelled as orchestrators.rst gives it.
    fix_spec = json.dumps({"vendor_id": by_addr[gm[0]]["vendor_id"] if gm else "",
                           "product_id": by_addr[gm[0]]["product_id"] if gm else "",
                           "live_migratable": "yes"})
    fix_alias = json.dumps({"name": "gpu", "vendor_id": by_addr[gm[0]]["vendor_id"] if gm else "",
                            "product_id": by_addr[gm[0]]["product_id"] if gm else "",
                            "device_type": "type-VF", "live_migratable": "yes"})
    configure([fix_spec], [fix_alias])
    got = claim_all(tracker_for(recs), "gpu")
    check(got and all(d.dev_type == "type-VF" for d in got),
          "the documented fix (the VFs, device_type type-VF) claims a VF",
          f"claimed {[d.address for d in got]}")

    # 6. managed: Nova's default and its variant-driver guide.  gpumigctl
    # writes "managed": "no" where libvirt's managed='yes' would not keep
    # the VF on gpumig-vfio-pci (no modules.alias line for it), and
    # nothing where it would.
    if CLAIMED is not None:
        x = hostdev_xml(CLAIMED)
        spec = json.loads(cap.specs[cap.specs.index(next(s for s in cap.specs
                                                              if json.loads(s)["address"] == gm[0]))])
        want = spec.get("managed", "yes")
        check(f"managed=\"{want}\"" in x, "Nova's <hostdev> for gpumigctl's entries: "
              f"managed='{want}' (" + ("Nova's default" if "managed" not in spec else
                                       "gpumigctl's \"managed\": \"no\"") + ")", x)
        spec["managed"] = "no"
        specs = [json.dumps(spec) if json.loads(s)["address"] == gm[0] else s for s in cap.specs]
        configure(specs, cap.aliases)
        got = claim_all(tracker_for(recs), mig[0]["name"])
        x = hostdev_xml(got[0]) if got else ""
        check(got and "managed=\"no\"" in x,
              "with \"managed\": \"no\" (Nova's variant-driver guide): managed='no'", x)

    # 7. The live migration's XML rewrite.
    if cap.domain_vf:
        src = hostdev_addrs(cap.domain_vf)
        # Another VF than the domain's, so that the rewrite has something
        # to change: the other host's on gpumig-vfio-pci first, else any
        # of its VFs (Nova's rewrite does not look at drivers).
        if dst_cap is not None:
            vfs = dst_cap.by_driver("vf", "gpumig-vfio-pci") + sorted(
                a for a, (r, _) in dst_cap.functions.items() if r == "vf")
        else:
            vfs = plain + gm
        dst = next((a for a in vfs if a != src[0]), None)
        check(dst is not None, "a VF other than the domain's %s to rewrite it for" % src[0],
              " ".join(vfs))
        dst = dst or src[0]
        try:
            out = rewrite(cap.domain_vf, src[0], dst)
            err = ""
        except Exception as e:  # Nova's own error, shown as it is
            out, err = "", repr(e)
        check(out and hostdev_addrs(out) == [dst],
              f"Nova's get_updated_guest_xml moves the <hostdev> from {src[0]} to {dst}",
              err or out)
        if out:
            # The whole domain, canonical, with the hostdev's source
            # address left out: it must be the same.
            def masked(xml):
                t = ET.fromstring(xml)
                for h in t.findall("./devices/hostdev"):
                    for ad in h.findall("./source/address"):
                        ad.attrib.clear()
                return ET.canonicalize(ET.tostring(t, encoding="unicode"),
                                       strip_text=True)
            check(masked(cap.domain_vf) == masked(out),
                  "... and changes nothing else of the domain (compared whole, canonical)",
                  out)
            if os.environ.get("NOVA_OUT"):
                with open(os.path.join(os.environ["NOVA_OUT"], "domain-vf-rewritten.xml"), "w") as fh:
                    fh.write(out)
    else:
        check(False, "the capture has the VF domain's XML")

    print(f"    1..{N}")
    print(f"{'not ok' if FAILED else 'ok'} 1 nova")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
