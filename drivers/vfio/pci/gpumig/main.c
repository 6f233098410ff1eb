// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-vfio-pci: the PCI driver.  Its ID table names, one line per
 * provider, the VFs that a PF driver serving gpumig provides for, with
 * PCI_DRIVER_OVERRIDE_DEVICE_VFIO: nothing binds it by itself, and
 * libvirt's managed hostdevs find it through modules.alias (which only a
 * static ID table feeds, hence one line per provider rather than a driver
 * per vendor); any display function may be bound through driver_override
 * (a PF is assigned without migration).  The reset callbacks tell the
 * engine when the PCI core reset a function.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/module.h>
#include <linux/pci.h>

#include "gpumig_vfio_pci.h"

static struct gvp_dev *pdev_to_gvp(struct pci_dev *pdev)
{
	struct vfio_pci_core_device *core = dev_get_drvdata(&pdev->dev);

	return container_of(core, struct gvp_dev, core);
}

static int gvp_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct gvp_dev *g;
	int ret;

	if (pdev->class >> 16 != PCI_BASE_CLASS_DISPLAY) {
		pci_info(pdev, "gpumig-vfio-pci drives display functions only (class 0x%06x)\n",
			 pdev->class);
		return -ENODEV;
	}
	g = vfio_alloc_device(gvp_dev, core.vdev, &pdev->dev, &gvp_vfio_ops);
	if (IS_ERR(g))
		return PTR_ERR(g);
	dev_set_drvdata(&pdev->dev, &g->core);
	ret = vfio_pci_core_register_device(&g->core);
	if (ret) {
		vfio_put_device(&g->core.vdev);
		return ret;
	}
	if (g->mig)
		pci_info(pdev, "migratable: %s, DMA logging %s\n",
			 gpumig_mig_compat(g->mig)->type_name,
			 gpumig_mig_dirty_tracking(g->mig) ? "by the device" : "not offered");
	else
		pci_info(pdev, "not migratable: %s\n", g->not_migratable);
	return 0;
}

/* Waits, as vfio-pci does, until the function's user closed it. */
static void gvp_remove(struct pci_dev *pdev)
{
	struct gvp_dev *g = pdev_to_gvp(pdev);

	vfio_pci_core_unregister_device(&g->core);
	vfio_put_device(&g->core.vdev);
}

static void gvp_reset_prepare_cb(struct pci_dev *pdev)
{
	gvp_reset_prepare(pdev_to_gvp(pdev));
}

static void gvp_reset_done_cb(struct pci_dev *pdev)
{
	gvp_reset_done(pdev_to_gvp(pdev));
}

static const struct pci_error_handlers gvp_err_handlers = {
	.reset_prepare = gvp_reset_prepare_cb,
	.reset_done = gvp_reset_done_cb,
	.error_detected = vfio_pci_core_aer_err_detected,
};

static const struct pci_device_id gvp_ids[] = {
	/* simgpu-pci's VF (provider: simgpu-pf; QEMU's test vendor ID) */
	{ PCI_DRIVER_OVERRIDE_DEVICE_VFIO(0x1234, 0x5347) },
	{}
};
MODULE_DEVICE_TABLE(pci, gvp_ids);

static struct pci_driver gvp_driver = {
	.name = "gpumig-vfio-pci",
	.id_table = gvp_ids,
	.probe = gvp_probe,
	.remove = gvp_remove,
	.err_handler = &gvp_err_handlers,
	.driver_managed_dma = true,
	.dev_groups = gvp_dev_groups,
};

module_pci_driver(gvp_driver);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The gpumig authors");
MODULE_DESCRIPTION("gpumig-vfio-pci: live migration of GPU VFs through vfio-pci-core, the gpumig engine and their PF's provider");
MODULE_VERSION(GPUMIG_VERSION);
