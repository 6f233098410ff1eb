// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-vfio-pci's attributes, on the PCI function while it is bound,
 * laid out as the engine's mediated devices lay theirs out:
 *
 *   migration/status        the engine's line, or "not migratable: <why>",
 *                           or "quarantined: <why>"
 *   migration/compat        the descriptor a destination must match (VFs
 *                           that migrate only)
 *   migration/unquarantine  write 1: an operator who checked a quarantined
 *                           function releases it (it is reset or scrubbed
 *                           first)
 *
 * and, while a provider serves the VF, the provider's own attributes in a
 * directory of its name (simgpu-pf: simgpu/vram_size, queues, profile),
 * added and removed with the claim (vfio_dev.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/device.h>
#include <linux/kstrtox.h>
#include <linux/pci.h>
#include <linux/sysfs.h>

#include "gpumig_vfio_pci.h"

static struct gvp_dev *dev_to_gvp(struct device *dev)
{
	struct vfio_pci_core_device *core = dev_get_drvdata(dev);

	return container_of(core, struct gvp_dev, core);
}

static struct gpumig_mig *gvp_dev_to_mig(struct device *dev)
{
	return dev_to_gvp(dev)->mig;
}

static ssize_t status_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct gvp_dev *g = dev_to_gvp(dev);
	char why[GVP_WHY_LEN];

	if (g->mig)
		return gpumig_mig_status_show(g->mig, buf);
	if (gpumig_quarantine_get(dev, why, sizeof(why)))
		return sysfs_emit(buf, "quarantined: %s\n", why);
	return sysfs_emit(buf, "not migratable: %s\n", g->not_migratable);
}
static DEVICE_ATTR_RO(status);

static ssize_t compat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return gpumig_mig_compat_show(dev_to_gvp(dev)->mig, buf);
}
static DEVICE_ATTR_RO(compat);

static ssize_t unquarantine_store(struct device *dev, struct device_attribute *attr,
				  const char *buf, size_t count)
{
	int ret = gpumig_sysfs_confirm(buf);

	if (!ret)
		ret = gvp_unquarantine(dev_to_gvp(dev));
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(unquarantine);

GPUMIG_DEFINE_MIGRATION_ATTRS(gvp, gvp_dev_to_mig,
			      &dev_attr_status.attr, &dev_attr_compat.attr,
			      &dev_attr_unquarantine.attr);

static umode_t gvp_mig_visible(struct kobject *kobj, struct attribute *a, int n)
{
	struct device_attribute *da = container_of(a, struct device_attribute, attr);
	struct gvp_dev *g = dev_to_gvp(kobj_to_dev(kobj));

	/* A function that does not migrate has status and unquarantine. */
	if (!g->mig && (a == &dev_attr_compat.attr || da->show == gpumig_metric_attr_show ||
			da->show == gpumig_group_attr_show || da->show == gpumig_stream_max_show))
		return 0;
	return a->mode;
}

static const struct attribute_group gvp_mig_group = {
	.name = "migration",
	.attrs = gvp_mig_attrs,
	.is_visible = gvp_mig_visible,
};

const struct attribute_group *gvp_dev_groups[] = {
	&gvp_mig_group,
	NULL,
};
