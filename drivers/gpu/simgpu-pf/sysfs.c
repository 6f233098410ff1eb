// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf sysfs, in the PF's directory:
 *
 *   simgpu/profiles       the profiles this PF offers ("64M 256M")
 *   simgpu/vfN_profile    VF N's profile; writable while VFs are disabled
 *
 * and in a VF's directory, while gpumig-vfio-pci has it claimed (the
 * provider hands the group over, provider.c):
 *
 *   simgpu/vram_size, simgpu/queues, simgpu/profile   the VF's resources
 *
 * SR-IOV gives every VF of a PF the same BAR sizes, so the VRAM aperture
 * is sized for the largest profile the PF offers and a VF of a smaller
 * profile uses its start.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/pci.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "simgpu_pf.h"

static ssize_t profiles_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_pf *pf = dev_get_drvdata(dev);
	ssize_t n = 0;
	u32 p;

	for (p = 0; p < SIMGPU_PF_NR_PROFILES; p++)
		if (pf->offered & BIT(p))
			n += sysfs_emit_at(buf, n, "%s%s", n ? " " : "",
					   simgpu_pf_profile_names[p]);
	return n + sysfs_emit_at(buf, n, "\n");
}
static DEVICE_ATTR_RO(profiles);

/* VF N's attribute is vfN_profile: which N it is, the name says. */
static int simgpu_pf_attr_vf(struct device_attribute *attr)
{
	unsigned int n;

	if (sscanf(attr->attr.name, "vf%u_profile", &n) != 1 || n >= SIMGPU_PF_MAX_VFS)
		return -EINVAL;
	return n;
}

static ssize_t vf_profile_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_pf *pf = dev_get_drvdata(dev);
	int n = simgpu_pf_attr_vf(attr);
	u32 p;

	if (n < 0)
		return n;
	mutex_lock(&pf->lock);
	p = pf->profile[n];
	mutex_unlock(&pf->lock);
	return sysfs_emit(buf, "%s\n", simgpu_pf_profile_names[p]);
}

static ssize_t vf_profile_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct simgpu_pf *pf = dev_get_drvdata(dev);
	int n = simgpu_pf_attr_vf(attr);
	int p = sysfs_match_string(simgpu_pf_profile_names, buf);
	ssize_t ret = count;

	if (n < 0)
		return n;
	if (p < 0 || !(pf->offered & BIT(p)))
		return -EINVAL;
	mutex_lock(&pf->lock);
	/*
	 * SR-IOV fixed the profiles when it enabled the VFs; while it is
	 * being enabled (the lock dropped around pci_enable_sriov(), before
	 * num_vfs is set) the registers are already written.
	 */
	if (pf->num_vfs || pf->sriov_changing)
		ret = -EBUSY;
	else
		pf->profile[n] = p;
	mutex_unlock(&pf->lock);
	return ret;
}

#define SIMGPU_PF_VF_ATTR(n)						\
	static struct device_attribute dev_attr_vf##n =			\
		__ATTR(vf##n##_profile, 0644, vf_profile_show, vf_profile_store)

SIMGPU_PF_VF_ATTR(0);
SIMGPU_PF_VF_ATTR(1);
SIMGPU_PF_VF_ATTR(2);
SIMGPU_PF_VF_ATTR(3);
SIMGPU_PF_VF_ATTR(4);
SIMGPU_PF_VF_ATTR(5);
SIMGPU_PF_VF_ATTR(6);
SIMGPU_PF_VF_ATTR(7);

static struct attribute *simgpu_pf_attrs[] = {
	&dev_attr_profiles.attr,
	&dev_attr_vf0.attr, &dev_attr_vf1.attr, &dev_attr_vf2.attr, &dev_attr_vf3.attr,
	&dev_attr_vf4.attr, &dev_attr_vf5.attr, &dev_attr_vf6.attr, &dev_attr_vf7.attr,
	NULL,
};

static_assert(ARRAY_SIZE(simgpu_pf_attrs) == SIMGPU_PF_MAX_VFS + 2);

/* profiles, and the VFs this PF has. */
static umode_t simgpu_pf_visible(struct kobject *kobj, struct attribute *a, int i)
{
	struct simgpu_pf *pf = dev_get_drvdata(kobj_to_dev(kobj));

	return i == 0 || i - 1 < pf->total_vfs ? a->mode : 0;
}

static const struct attribute_group simgpu_pf_group = {
	.name = "simgpu",
	.attrs = simgpu_pf_attrs,
	.is_visible = simgpu_pf_visible,
};

const struct attribute_group *simgpu_pf_groups[] = {
	&simgpu_pf_group,
	NULL,
};

/* The VF's resources, as its PF's registers give them. */
static int simgpu_pf_vf_dev_info(struct device *dev, struct simgpu_pf_vf_info *info)
{
	struct pci_dev *pdev = to_pci_dev(dev);
	struct simgpu_pf *pf = pci_iov_get_pf_drvdata(pdev, &simgpu_pf_driver);
	struct simgpu_pf_vf *vf = NULL;
	int id = pci_iov_vf_id(pdev);

	if (IS_ERR(pf) || id < 0)
		return -ENODEV;
	mutex_lock(&pf->lock);
	if (id < pf->num_vfs && pf->vf[id].pdev == pdev)
		vf = &pf->vf[id];
	mutex_unlock(&pf->lock);
	if (!vf)
		return -ENODEV;
	simgpu_pf_vf_info(vf, info);
	return 0;
}

static ssize_t vram_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_pf_vf_info info;
	int ret = simgpu_pf_vf_dev_info(dev, &info);

	return ret ?: sysfs_emit(buf, "%llu\n", info.vram_size);
}
static DEVICE_ATTR_RO(vram_size);

static ssize_t queues_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_pf_vf_info info;
	int ret = simgpu_pf_vf_dev_info(dev, &info);

	return ret ?: sysfs_emit(buf, "%u\n", info.nr_queues);
}
static DEVICE_ATTR_RO(queues);

static ssize_t profile_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_pf_vf_info info;
	int ret = simgpu_pf_vf_dev_info(dev, &info);

	return ret ?: sysfs_emit(buf, "%s\n", info.name);
}
static DEVICE_ATTR_RO(profile);

static struct attribute *simgpu_pf_vf_attrs[] = {
	&dev_attr_vram_size.attr,
	&dev_attr_queues.attr,
	&dev_attr_profile.attr,
	NULL,
};

const struct attribute_group simgpu_pf_vf_group = {
	.name = "simgpu",
	.attrs = simgpu_pf_vf_attrs,
};
