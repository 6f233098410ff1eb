// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu instance attributes: simgpu/vram_size and simgpu/queues (the
 * type's resources), migration/compat (the compatibility descriptor a
 * destination must match), migration/status (the engine's report) and
 * migration/unquarantine (write 1: an operator who checked a quarantined
 * instance releases it; it is scrubbed first).  gpumig-vfio-pci lays out
 * a VF's attributes the same way.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/device.h>
#include <linux/kstrtox.h>
#include <linux/sysfs.h>

#include "simgpu_mdev.h"

static ssize_t vram_size_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%llu\n", sdev->type->vram);
}
static DEVICE_ATTR_RO(vram_size);

static ssize_t queues_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", sdev->type->queues);
}
static DEVICE_ATTR_RO(queues);

static struct attribute *simgpu_dev_attrs[] = {
	&dev_attr_vram_size.attr,
	&dev_attr_queues.attr,
	NULL,
};

static const struct attribute_group simgpu_dev_group = {
	.name = "simgpu",
	.attrs = simgpu_dev_attrs,
};

static struct gpumig_mig *simgpu_dev_to_mig(struct device *dev)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);

	return sdev->mig;
}

static ssize_t compat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);

	return gpumig_mig_compat_show(sdev->mig, buf);
}
static DEVICE_ATTR_RO(compat);

static ssize_t status_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);

	return gpumig_mig_status_show(sdev->mig, buf);
}
static DEVICE_ATTR_RO(status);

static ssize_t unquarantine_store(struct device *dev, struct device_attribute *attr,
				  const char *buf, size_t count)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);
	int ret = gpumig_sysfs_confirm(buf);

	if (!ret)
		ret = gpumig_mig_unquarantine(sdev->mig);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(unquarantine);

GPUMIG_DEFINE_MIGRATION_ATTRS(simgpu, simgpu_dev_to_mig,
			      &dev_attr_compat.attr, &dev_attr_status.attr,
			      &dev_attr_unquarantine.attr);

static const struct attribute_group simgpu_mig_group = {
	.name = "migration",
	.attrs = simgpu_mig_attrs,
};

const struct attribute_group *simgpu_dev_groups[] = {
	&simgpu_dev_group,
	&simgpu_mig_group,
	NULL,
};
