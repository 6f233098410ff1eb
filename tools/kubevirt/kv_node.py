#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What KubeVirt's virt-handler does with mediated devices on a node, run
against this host's sysfs: a transcription, rule for rule, of KubeVirt's
Go code at kubevirt/kubevirt d923fdb815cd (2026-08-22; the
VGPULiveMigration gate is in v1.9.0 and later), so that a test can see
what a KubeVirt node would make of simgpu without Kubernetes:

  configure  pkg/virt-handler/device-manager/mediated_devices_types.go
             (updateMDEVTypesConfiguration, run by every heartbeat):
             remove every instance whose type is not wanted, then give
             each parent that holds no instance one wanted type and create
             as many instances as its available_instances says;
  discover   mediated_device.go (discoverPermittedHostMediatedDevices):
             which instances the device plugin offers under which
             resourceName, with the IOMMU group (the device ID kubelet
             sees), the parent's NUMA node, and the environment variable
             Allocate hands the pod.

Input: a KubeVirt custom resource in YAML (its spec.configuration: the
mediatedDevicesConfiguration, permittedHostDevices and feature gates),
and the node's labels for nodeMediatedDeviceTypes.  Output: JSON.
Where KubeVirt's order is Go's map order (the types handed to parents),
this takes them sorted.  --sysfs moves the sysfs root.

  kv_node.py configure CR.yaml [--label k=v ...] [--sysfs DIR]
  kv_node.py discover CR.yaml [--sysfs DIR]
"""
import argparse
import glob
import json
import os
import sys
import time
import uuid

import yaml

SYS = "/sys"


def mdev_config(cr):
    spec = (cr or {}).get("spec") or {}
    conf = spec.get("configuration") or {}
    return conf, conf.get("mediatedDevicesConfiguration") or {}


def handling_disabled(conf, mdc):
    """virt-config.go MediatedDevicesHandlingDisabled: `enabled` decides
    when set, else the DisableMediatedDevicesHandling feature gate."""
    if mdc.get("enabled") is not None:
        return not mdc["enabled"]
    gates = ((conf.get("developerConfiguration") or {}).get("featureGates")) or []
    return "DisableMediatedDevicesHandling" in gates


def types_of(entry):
    # mediatedDevicesTypes: the deprecated spelling, read when the other
    # is empty
    return list(entry.get("mediatedDeviceTypes") or entry.get("mediatedDevicesTypes") or [])


def desired_types(mdc, labels):
    """GetDesiredMDEVTypes: the types of every nodeMediatedDeviceTypes
    entry whose nodeSelector the node's labels satisfy; the cluster-wide
    list only when that gives none."""
    want = []
    for entry in mdc.get("nodeMediatedDeviceTypes") or []:
        sel = entry.get("nodeSelector") or {}
        if all(labels.get(k) == v for k, v in sel.items()):
            want += [t for t in types_of(entry) if t not in want]
    if not want:
        want = [t for t in types_of(mdc) if t not in want]
    return want


def selector_key(s):
    # removeSelectorSpaces: spaces made underscores, then TrimSpace
    return s.replace(" ", "_").strip()


def read(path):
    with open(path) as f:
        return f.read()


def type_name(sysfs, uid):
    """getMdevTypeName: mdev_type/name, or the type id when the type has
    no name file; spaces made underscores, trimmed."""
    base = os.path.join(sysfs, "bus/mdev/devices", uid)
    try:
        raw = read(os.path.join(base, "mdev_type/name"))
    except FileNotFoundError:
        raw = os.path.basename(os.readlink(os.path.join(base, "mdev_type")))
    return selector_key(raw)


def write(path, text):
    """virt-chroot create-mdev / remove-mdev: wait up to 5 s for the file,
    then one write of the text, no newline."""
    for _ in range(5):
        if os.path.exists(path):
            break
        time.sleep(1)
    with open(path, "w") as f:
        f.write(text)


def remove_undesired(sysfs, keep, log):
    """removeUndesiredMDEVs: every instance whose type's name (or id) is
    not kept is removed, whether or not a VM holds it; with no type
    wanted, that is every instance not of an externalResourceProvider's
    type (KubeVirt's default: handling on, no types)."""
    devs = os.path.join(sysfs, "bus/mdev/devices")
    for uid in sorted(os.listdir(devs)) if os.path.isdir(devs) else []:
        try:
            if type_name(sysfs, uid) in keep:
                continue
        except OSError:
            pass
        try:
            tid = os.path.basename(os.readlink(os.path.join(devs, uid, "mdev_type")))
        except OSError:
            continue
        if selector_key(tid) in keep:
            continue
        try:
            write(os.path.join(devs, uid, "remove"), "1")
            log.append({"removed": uid, "type": tid})
        except OSError as e:
            # KubeVirt logs the failure and goes on
            log.append({"remove_failed": uid, "type": tid, "error": e.strerror})


def configured_parents(sysfs):
    """getAlreadyConfiguredMdevParents: the parent of every instance (the
    path part before the instance's own)."""
    out = set()
    for d in glob.glob(os.path.join(sysfs, "bus/mdev/devices/*")):
        out.add(os.path.realpath(d).split("/")[-2])
    return out


def configure(sysfs, conf, mdc, labels):
    log = []
    if handling_disabled(conf, mdc):
        return {"handling": "disabled", "actions": log}
    want = desired_types(mdc, labels)
    keep = set(want)
    for m in ((conf.get("permittedHostDevices") or {}).get("mediatedDevices")) or []:
        if m.get("externalResourceProvider"):
            keep.add(selector_key(m.get("mdevNameSelector", "")))
    remove_undesired(sysfs, keep, log)
    if not want:
        return {"handling": "enabled", "desired": want, "actions": log}
    # discoverConfigurableMDEVTypes: types of parents that hold no
    # instance, matched by name (spaces made underscores) or by type id.
    busy = configured_parents(sysfs)
    avail, unconfigured = {}, set()
    for t in sorted(glob.glob(os.path.join(sysfs, "class/mdev_bus/*/mdev_supported_types/*"))):
        parts = t.split("/")
        parent, tid = parts[-3], parts[-1]
        if parent in busy:
            continue
        try:
            name = selector_key(read(os.path.join(t, "name")))
        except FileNotFoundError:
            name = ""
        if name in want or tid in want:
            avail.setdefault(tid, []).append(parent)
            unconfigured.add(parent)
    # configureDesiredMDEVTypes: a ring of the matched types (Go's map
    # order there; sorted here), each taking its next parent still
    # unconfigured: one type per parent.
    ring = sorted(avail)
    while ring and unconfigured:
        for tid in list(ring):
            parent = next((p for p in avail[tid] if p in unconfigured), None)
            if parent is None:
                ring.remove(tid)
                continue
            create(sysfs, parent, tid, log)
            unconfigured.discard(parent)
            if not unconfigured:
                break
    return {"handling": "enabled", "desired": want, "actions": log}


def create(sysfs, parent, tid, log):
    """createMdevTypes: available_instances read once, then that many
    instances, each a random UUID, stopping at the first failure."""
    d = os.path.join(sysfs, "class/mdev_bus", parent, "mdev_supported_types", tid)
    n = int(read(os.path.join(d, "available_instances")).splitlines()[0])
    for _ in range(n):
        uid = str(uuid.uuid4())
        try:
            write(os.path.join(d, "create"), uid)
        except OSError as e:
            log.append({"create_failed": tid, "parent": parent, "error": e.strerror})
            return
        log.append({"created": uid, "type": tid, "parent": parent})


def discover(sysfs, conf):
    """The device plugin's view: per resourceName, the instances whose
    type name matches a selector, each with the device ID kubelet gets
    (the IOMMU group), /dev/vfio/GROUP's presence (Allocate refuses
    without it), the parent's NUMA node (-1 when the parent is not a PCI
    device: KubeVirt logs it and offers the device without topology), and
    the environment variable Allocate sets."""
    sel = {}
    for m in ((conf.get("permittedHostDevices") or {}).get("mediatedDevices")) or []:
        if not m.get("externalResourceProvider"):
            sel[selector_key(m.get("mdevNameSelector", ""))] = m.get("resourceName", "")
    devs = os.path.join(sysfs, "bus/mdev/devices")
    res = {}
    for uid in sorted(os.listdir(devs)) if os.path.isdir(devs) else []:
        p = os.path.join(devs, uid)
        if not os.path.islink(p):
            continue
        try:
            name = type_name(sysfs, uid)
        except OSError:
            continue
        if name not in sel:
            continue
        parent = os.readlink(p).split("/")[-2]
        try:
            numa = int(read(os.path.join(sysfs, "bus/pci/devices", parent, "numa_node")))
        except (OSError, ValueError):
            numa = -1
        try:
            group = os.path.basename(os.readlink(os.path.join(p, "iommu_group")))
        except OSError:
            continue
        rn = sel[name]
        res.setdefault(rn, {"devices": [], "env": {}})
        res[rn]["devices"].append({"uuid": uid, "type_name": name, "parent": parent,
                                   "iommu_group": group, "numa_node": numa,
                                   "vfio_dev": os.path.exists("/dev/vfio/" + group)})
    for rn, r in res.items():
        var = "MDEV_PCI_RESOURCE_" + rn.upper().replace("/", "_").replace(".", "_")
        r["env"][var] = ",".join(d["uuid"] for d in r["devices"])
        # deviceplugin: the socket is named after what follows the "/"
        r["socket"] = "kubevirt-%s.sock" % rn.split("/", 1)[-1]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("configure", "discover"))
    ap.add_argument("cr", help="the KubeVirt custom resource, YAML")
    ap.add_argument("--label", action="append", default=[], help="a node label, k=v")
    ap.add_argument("--sysfs", default=SYS)
    a = ap.parse_args()
    with open(a.cr) as f:
        cr = yaml.safe_load(f)
    if (cr or {}).get("kind") != "KubeVirt":
        sys.exit("%s: not a KubeVirt custom resource (kind: %s)"
                 % (a.cr, (cr or {}).get("kind")))
    conf, mdc = mdev_config(cr)
    if a.what == "configure":
        labels = dict(x.split("=", 1) for x in a.label)
        out = configure(a.sysfs, conf, mdc, labels)
    else:
        out = discover(a.sysfs, conf)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
