// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu: gpumig's simulated GPU, exposed as VFIO mediated devices.
 *
 * One parent device ("simgpu", class simgpu) offers three types, like a
 * vendor's vGPU profiles.  Instances draw their VRAM from a parent-wide
 * budget (module parameter vram_budget_mb); available_instances is what
 * the budget still allows.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/sizes.h>

#include <gpumig/compat.h>

#include "simgpu_vfio.h"

static unsigned int vram_budget_mb = 2048;
module_param(vram_budget_mb, uint, 0444);
MODULE_PARM_DESC(vram_budget_mb, "VRAM all instances together may have, in MiB (default 2048)");

static DEFINE_MUTEX(simgpu_budget_lock);
static u64 simgpu_vram_used;	/* guarded by simgpu_budget_lock */

struct dentry *simgpu_debugfs_root;

/**
 * simgpu_budget_take() - reserve VRAM for a new instance
 * @vram: bytes
 *
 * Return: 0, or -ENOSPC when the parent's budget cannot cover it.
 */
int simgpu_budget_take(u64 vram)
{
	int ret = -ENOSPC;

	mutex_lock(&simgpu_budget_lock);
	if (simgpu_vram_used + vram <= (u64)vram_budget_mb * SZ_1M) {
		simgpu_vram_used += vram;
		ret = 0;
	}
	mutex_unlock(&simgpu_budget_lock);
	return ret;
}

/**
 * simgpu_budget_put() - return an instance's VRAM to the budget
 * @vram: bytes
 */
void simgpu_budget_put(u64 vram)
{
	mutex_lock(&simgpu_budget_lock);
	simgpu_vram_used -= vram;
	mutex_unlock(&simgpu_budget_lock);
}

static struct simgpu_type simgpu_types[] = {
	{ .type.sysfs_name = "64M", .type.pretty_name = "simgpu 64 MiB, 2 queues",
	  .vram = SZ_64M, .queues = 2 },
	{ .type.sysfs_name = "256M", .type.pretty_name = "simgpu 256 MiB, 4 queues",
	  .vram = SZ_256M, .queues = 4 },
	{ .type.sysfs_name = "1G", .type.pretty_name = "simgpu 1 GiB, 8 queues",
	  .vram = SZ_1G, .queues = 8 },
};

static struct mdev_type *simgpu_mdev_types[] = {
	&simgpu_types[0].type,
	&simgpu_types[1].type,
	&simgpu_types[2].type,
};

static unsigned int simgpu_get_available(struct mdev_type *mtype)
{
	const struct simgpu_type *t = to_simgpu_type(mtype);
	u64 left;

	mutex_lock(&simgpu_budget_lock);
	left = (u64)vram_budget_mb * SZ_1M - simgpu_vram_used;
	mutex_unlock(&simgpu_budget_lock);
	return div64_u64(left, t->vram);
}

/*
 * The type's description is its migration compatibility descriptor, so a
 * scheduler can check placement before any instance exists.
 */
static ssize_t simgpu_show_description(struct mdev_type *mtype, char *buf)
{
	struct gpumig_compat c;

	simgpu_compat(to_simgpu_type(mtype), &c);
	return gpumig_compat_format(&c, buf, PAGE_SIZE);
}

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

static const struct attribute_group *simgpu_dev_groups[] = {
	&simgpu_dev_group,
	&simgpu_mig_group,
	NULL,
};

static struct mdev_driver simgpu_driver = {
	.device_api = VFIO_DEVICE_API_PCI_STRING,
	.driver = {
		.name = "simgpu",
		.owner = THIS_MODULE,
		.mod_name = KBUILD_MODNAME,
		.dev_groups = simgpu_dev_groups,
	},
	.probe = simgpu_probe,
	.remove = simgpu_remove,
	.get_available = simgpu_get_available,
	.show_description = simgpu_show_description,
};

static const struct class simgpu_class = {
	.name = "simgpu",
};

static struct simgpu_parent {
	struct device dev;
	struct mdev_parent parent;
} simgpu_parent;

static void simgpu_parent_release(struct device *dev)
{
}

static int __init simgpu_init(void)
{
	int ret;

	simgpu_debugfs_root = debugfs_create_dir("simgpu", NULL);
	ret = mdev_register_driver(&simgpu_driver);
	if (ret)
		goto err_debugfs;
	ret = class_register(&simgpu_class);
	if (ret)
		goto err_driver;

	simgpu_parent.dev.class = &simgpu_class;
	simgpu_parent.dev.release = simgpu_parent_release;
	dev_set_name(&simgpu_parent.dev, "simgpu");
	ret = device_register(&simgpu_parent.dev);
	if (ret)
		goto err_put;
	ret = mdev_register_parent(&simgpu_parent.parent, &simgpu_parent.dev,
				   &simgpu_driver, simgpu_mdev_types,
				   ARRAY_SIZE(simgpu_mdev_types));
	if (ret)
		goto err_device;
	pr_info("simgpu: %u types, VRAM budget %u MiB, guest-memory dirty tracking: %s\n",
		(unsigned int)ARRAY_SIZE(simgpu_types), vram_budget_mb,
		simgpu_dirty_tracking());
	return 0;

err_device:
	device_del(&simgpu_parent.dev);
err_put:
	put_device(&simgpu_parent.dev);
	class_unregister(&simgpu_class);
err_driver:
	mdev_unregister_driver(&simgpu_driver);
err_debugfs:
	debugfs_remove_recursive(simgpu_debugfs_root);
	return ret;
}

static void __exit simgpu_exit(void)
{
	mdev_unregister_parent(&simgpu_parent.parent);
	device_unregister(&simgpu_parent.dev);
	class_unregister(&simgpu_class);
	mdev_unregister_driver(&simgpu_driver);
	debugfs_remove_recursive(simgpu_debugfs_root);
}

module_init(simgpu_init);
module_exit(simgpu_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The gpumig authors");
MODULE_DESCRIPTION("simgpu: a simulated GPU as VFIO mediated devices");
MODULE_VERSION("0.1");
#if IS_ENABLED(CONFIG_IOMMUFD_DRIVER)
GPUMIG_IMPORT_IOMMUFD_NS();
#endif
