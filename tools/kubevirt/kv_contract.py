#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What a KubeVirt node makes of simgpu: KubeVirt's virt-handler rules for
mediated devices (kv_node.py) run on this host's sysfs, with the
KubeVirt custom resource Documentation/gpumig/orchestrators.rst gives, a
node's own types, handling turned off, an external provider's type and
KubeVirt's default (handling on, no type).  Needs simgpu loaded and no
mediated device on the host; leaves none.  One line per check, "ok DESC"
or "not ok DESC", for the test VM's suite (scripts/guest/suite-mdev.sh).

  kv_contract.py ORCHESTRATORS_RST SIMGPU_CLIENT OUTDIR
"""
import json
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kv_node  # noqa: E402

DEVS = "/sys/bus/mdev/devices"
TYPES = "/sys/class/mdev_bus/simgpu/mdev_supported_types"
failed = 0


def check(desc, ok, detail=""):
    global failed
    print("%s %s" % ("ok" if ok else "not ok", desc), flush=True)
    if not ok:
        failed += 1
        print("#   %s" % detail, file=sys.stderr, flush=True)
    return ok


def devs():
    return {u: os.path.basename(os.readlink(os.path.join(DEVS, u, "mdev_type")))
            for u in os.listdir(DEVS)}


def doc_cr(rst):
    """orchestrators.rst's KubeVirt CR: the literal block that starts
    with its apiVersion line, unindented."""
    lines, on = [], False
    for line in open(rst):
        if line.rstrip("\n") == "    apiVersion: kubevirt.io/v1":
            on = True
        elif on and line.strip() and not line.startswith(" "):
            break
        if on:
            lines.append(line[4:])
    return yaml.safe_load("".join(lines))


def configure(out, name, cr, labels=None):
    conf, mdc = kv_node.mdev_config(cr)
    r = kv_node.configure("/sys", conf, mdc, labels or {})
    with open(os.path.join(out, "configure-%s.json" % name), "w") as f:
        json.dump(r, f, indent=1)
    acts = r["actions"]
    return (r, [a for a in acts if "created" in a],
            [a["removed"] for a in acts if "removed" in a])


def cr_of(configuration):
    return {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt",
            "spec": {"configuration": configuration}}


def main():
    rst, client, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    if not check("KubeVirt: no simgpu instance on the host before", not os.listdir(DEVS),
                 sorted(os.listdir(DEVS))):
        return 1
    cr = doc_cr(rst)
    check("KubeVirt: orchestrators.rst's KubeVirt CR parses (kind KubeVirt)",
          (cr or {}).get("kind") == "KubeVirt", cr)
    per = int(open("/sys/module/simgpu/parameters/vram_budget_mb").read()) // 256

    # An instance made by hand beforehand (as mdevctl would).
    u0 = "0f5d6a8e-5a0c-4c43-9b1e-6d2f0000c0de"
    with open(os.path.join(TYPES, "simgpu-64M/create"), "w") as f:
        f.write(u0)
    r, created, removed = configure(out, "doc", cr)
    d = devs()
    check("KubeVirt: with orchestrators.rst's CR, virt-handler's rules remove the simgpu-64M "
          "instance made by hand and make %d simgpu-256M on parent simgpu (its "
          "available_instances), nothing else; none left to give" % per,
          removed == [u0] and len(created) == per and
          all(a["type"] == "simgpu-256M" and a["parent"] == "simgpu" for a in created) and
          d == {a["created"]: "simgpu-256M" for a in created} and
          open(os.path.join(TYPES, "simgpu-256M/available_instances")).read().strip() == "0",
          (r, d))
    r, created, removed = configure(out, "doc-again", cr)
    check("KubeVirt: the next heartbeat changes nothing (the parent holds instances)",
          r["actions"] == [] and devs() == d, (r, devs()))

    conf, _ = kv_node.mdev_config(cr)
    j = kv_node.discover("/sys", conf)
    with open(os.path.join(out, "discover.json"), "w") as f:
        json.dump(j, f, indent=1)
    res = j.get("gpumig/simgpu-256M", {})
    got = res.get("devices", [])
    env = res.get("env", {}).get("MDEV_PCI_RESOURCE_GPUMIG_SIMGPU-256M", "")
    check("KubeVirt's device plugin: mdevNameSelector simgpu-256M offers all %d as "
          "gpumig/simgpu-256M, each its own IOMMU group (the device ID) with "
          "/dev/vfio/GROUP, no NUMA node (the parent is not PCI); Allocate's "
          "MDEV_PCI_RESOURCE_GPUMIG_SIMGPU-256M lists them" % per,
          list(j) == ["gpumig/simgpu-256M"] and
          sorted(x["uuid"] for x in got) == sorted(d) and
          len({x["iommu_group"] for x in got}) == per and
          all(x["vfio_dev"] and x["numa_node"] == -1 and x["parent"] == "simgpu" for x in got) and
          sorted(env.split(",")) == sorted(d) and
          res.get("socket") == "kubevirt-simgpu-256M.sock", j)
    u = sorted(d)[0]
    with open(os.path.join(out, "client.ktap"), "w") as f:
        rc = subprocess.run(["timeout", "120", client, "-s", "info", "-n", "kubevirt_instance", u],
                            stdout=f, stderr=subprocess.STDOUT).returncode
    check("KubeVirt: an instance it made works through VFIO (simgpu-client info)", rc == 0, rc)

    # A node's own types win over the cluster's.
    node = cr_of({"mediatedDevicesConfiguration": {
        "mediatedDeviceTypes": ["simgpu-256M"],
        "nodeMediatedDeviceTypes": [{"nodeSelector": {"gpumig.example/vram": "large"},
                                     "mediatedDeviceTypes": ["simgpu-1G"]}]}})
    r, created, removed = configure(out, "node", node, {"gpumig.example/vram": "large"})
    d = devs()
    check("KubeVirt: nodeMediatedDeviceTypes on a node labelled for simgpu-1G: its type "
          "wins, the %d simgpu-256M instances removed, %d simgpu-1G made" % (per, per // 4),
          len(removed) == per and len(created) == per // 4 and
          sorted(d.values()) == ["simgpu-1G"] * (per // 4), (r, d))
    off = cr_of({"mediatedDevicesConfiguration": {"enabled": False,
                                                  "mediatedDeviceTypes": ["simgpu-64M"]}})
    r, created, removed = configure(out, "off", off)
    check("KubeVirt: mediatedDevicesConfiguration enabled: false leaves the instances alone",
          r["handling"] == "disabled" and devs() == d, (r, devs()))
    ext = cr_of({"permittedHostDevices": {"mediatedDevices": [
        {"mdevNameSelector": "simgpu-1G", "resourceName": "gpumig/simgpu-1G",
         "externalResourceProvider": True}]}})
    r, created, removed = configure(out, "external", ext)
    check("KubeVirt: a permitted type with externalResourceProvider: true keeps its instances",
          r["actions"] == [] and devs() == d, (r, devs()))
    r, created, removed = configure(out, "default", {"apiVersion": "kubevirt.io/v1",
                                                     "kind": "KubeVirt", "spec": {}})
    check("KubeVirt: its default (no mediated-device configuration, handling on) removes "
          "every instance on the node", len(removed) == per // 4 and devs() == {}, (r, devs()))
    for u in os.listdir(DEVS):
        with open(os.path.join(DEVS, u, "remove"), "w") as f:
            f.write("1")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
