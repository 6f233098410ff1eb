// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu: gpumig's simulated GPU, exposed as VFIO mediated devices.
 *
 * One parent device ("simgpu", class simgpu) offers the types of types.c,
 * like a vendor's vGPU profiles; each instance is a VFIO device
 * (vfio_dev.c) around the device model (simgpu.h).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/device.h>
#include <linux/module.h>

#include "simgpu_mdev.h"

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
	.get_available = simgpu_type_available,
	.show_description = simgpu_type_description,
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

	simgpu_debugfs_init();
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
				   &simgpu_driver, simgpu_mdev_types, simgpu_nr_types);
	if (ret)
		goto err_device;
	pr_info("simgpu: %u types, guest-memory dirty tracking: %s\n", simgpu_nr_types,
		gpumig_dma_logging_supported() ? "device" : "none");
	return 0;

err_device:
	device_del(&simgpu_parent.dev);
err_put:
	put_device(&simgpu_parent.dev);
	class_unregister(&simgpu_class);
err_driver:
	mdev_unregister_driver(&simgpu_driver);
err_debugfs:
	simgpu_debugfs_exit();
	return ret;
}

static void __exit simgpu_exit(void)
{
	mdev_unregister_parent(&simgpu_parent.parent);
	device_unregister(&simgpu_parent.dev);
	class_unregister(&simgpu_class);
	mdev_unregister_driver(&simgpu_driver);
	simgpu_debugfs_exit();
}

module_init(simgpu_init);
module_exit(simgpu_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The gpumig authors");
MODULE_DESCRIPTION("simgpu: a simulated GPU as VFIO mediated devices");
MODULE_VERSION(GPUMIG_VERSION);
