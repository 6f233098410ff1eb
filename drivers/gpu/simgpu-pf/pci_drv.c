// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf: the driver of simgpu-pci's physical function.  It enables
 * SR-IOV with the VF profiles chosen in sysfs, refuses to disable it while
 * a VF is in use, and serves each VF's migration driver through the PF's
 * mailbox (cmds.c) as a gpumig provider (provider.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "simgpu_pf.h"

/* The PF's interrupt: which VFs' commands completed, which VFs wait on absent VRAM. */
static irqreturn_t simgpu_pf_irq(int irq, void *data)
{
	struct simgpu_pf *pf = data;
	unsigned long done = simgpu_pf_read(pf, SIMGPU_PF_REG_INT_STATUS);
	unsigned int n;

	if (!done)
		return IRQ_NONE;
	simgpu_pf_write(pf, SIMGPU_PF_REG_INT_STATUS, done);
	for_each_set_bit(n, &done, SIMGPU_PF_MAX_VFS)
		wake_up(&pf->vf[n].wq);
	if (done & GENMASK(16 + SIMGPU_PF_MAX_VFS - 1, 16))
		schedule_work(&pf->demand_work);
	return IRQ_HANDLED;
}

/*
 * VFs whose work waits on absent VRAM (a post-copy destination): each
 * block they name goes to the VF's claimer, which has it carried first.
 * Drained whether claimed or not: the register keeps only the last ones.
 */
static void simgpu_pf_demand_work(struct work_struct *work)
{
	struct simgpu_pf *pf = container_of(work, struct simgpu_pf, demand_work);
	unsigned int n, i;
	u64 v;

	mutex_lock(&pf->lock);
	for (n = 0; n < pf->num_vfs; n++) {
		struct simgpu_pf_vf *vf = &pf->vf[n];

		if (!vf->pdev || READ_ONCE(vf->gone))
			continue;
		for (i = 0; i < 2 * SIMGPU_PF_DEMANDS && (v = simgpu_pf_vf_demand(vf)); i++)
			if (vf->ops && vf->ops->demand)
				vf->ops->demand(vf->priv, v - 1);
	}
	mutex_unlock(&pf->lock);
}

/* The interrupt mask for every VF the device has (none: 0). */
static u32 simgpu_pf_int_mask(struct simgpu_pf *pf)
{
	u32 mask = pf->total_vfs ? GENMASK(pf->total_vfs - 1, 0) : 0;

	if (pf->info.caps & SIMGPU_PF_CAP_ABSENT)
		mask |= mask << 16;
	return mask;
}

/*
 * Why SR-IOV may not be disabled now, or NULL.  The PF's lock held.  A
 * hold first: unbinding drivers does not end it.
 */
static const char *simgpu_pf_vfs_busy(struct simgpu_pf *pf, unsigned int *n)
{
	for (*n = 0; *n < pf->num_vfs; (*n)++)
		if (READ_ONCE(pf->vf[*n].hold))
			return "the PF holds VRAM for a post-copy (let it finish, or abandon it)";
	for (*n = 0; *n < pf->num_vfs; (*n)++) {
		struct simgpu_pf_vf *vf = &pf->vf[*n];

		if (vf->ops)
			return "claimed by its migration driver";
		if (vf->pdev && vf->pdev->dev.driver)
			return "bound to a driver (unbind it first)";
	}
	return NULL;
}

/* SR-IOV is off: each VF's buffer and device reference go. */
static void simgpu_pf_put_vfs(struct simgpu_pf *pf)
{
	unsigned int n;

	lockdep_assert_held(&pf->lock);
	for (n = 0; n < pf->num_vfs; n++) {
		struct pci_dev *vf_pdev = pf->vf[n].pdev;

		simgpu_pf_vf_disable(&pf->vf[n]);
		pci_dev_put(vf_pdev);
	}
	pf->num_vfs = 0;
}

/*
 * SR-IOV changes without the PF's lock: pci_enable_sriov() probes the new
 * VFs' drivers and pci_disable_sriov() waits for each VF's device lock,
 * while a VF driver's bind holds that lock and claims its VF under the
 * PF's lock.  @sriov_changing, set under the lock by the caller, keeps
 * claims out meanwhile; the PF's device lock (held around sriov_configure
 * and remove) keeps the two from overlapping.
 */
static void simgpu_pf_sriov_off(struct simgpu_pf *pf)
{
	unsigned int n;

	mutex_lock(&pf->lock);
	WARN_ON_ONCE(!pf->sriov_changing);
	for (n = 0; n < pf->num_vfs; n++)
		simgpu_pf_debugfs_remove(&pf->vf[n]);
	mutex_unlock(&pf->lock);
	pci_disable_sriov(pf->pdev);
	mutex_lock(&pf->lock);
	simgpu_pf_put_vfs(pf);
	pf->sriov_changing = false;
	mutex_unlock(&pf->lock);
}

/* VF @n of @pdev, with a reference. */
static struct pci_dev *simgpu_pf_find_vf(struct pci_dev *pdev, unsigned int n)
{
	struct pci_dev *vf = NULL;

	while ((vf = pci_get_device(pdev->vendor, PCI_ANY_ID, vf)))
		if (vf->is_virtfn && pci_physfn(vf) == pdev && pci_iov_vf_id(vf) == n)
			return vf;
	return NULL;
}

static int simgpu_pf_enable_vfs(struct simgpu_pf *pf, unsigned int num)
{
	struct pci_dev *pdev = pf->pdev;
	unsigned int n;
	int ret;

	/* The PCI core checked @num against pci_sriov_set_totalvfs(). */
	if (WARN_ON_ONCE(num > pf->total_vfs))
		return -EINVAL;
	mutex_lock(&pf->lock);
	pf->sriov_changing = true;
	for (n = 0; n < num; n++)
		simgpu_pf_vf_set_reg(&pf->vf[n], SIMGPU_PF_VF_PROFILE, pf->profile[n]);
	mutex_unlock(&pf->lock);
	msleep(READ_ONCE(pf->sriov_delay_ms));
	ret = pci_enable_sriov(pdev, num);
	mutex_lock(&pf->lock);
	for (n = 0; !ret && n < num; n++) {
		struct pci_dev *vf_pdev = simgpu_pf_find_vf(pdev, n);

		ret = vf_pdev ? simgpu_pf_vf_enable(&pf->vf[n], vf_pdev) : -ENODEV;
		if (ret) {
			pci_dev_put(vf_pdev);
			break;
		}
		pf->num_vfs = n + 1;
		simgpu_pf_debugfs_add(&pf->vf[n]);
	}
	if (!ret)
		pf->sriov_changing = false;
	mutex_unlock(&pf->lock);
	if (!ret)
		return num;
	if (pci_num_vf(pdev)) {
		pci_err(pdev, "VF %u could not be set up (%d): SR-IOV disabled again\n", n, ret);
		simgpu_pf_sriov_off(pf);
	} else {
		mutex_lock(&pf->lock);
		pf->sriov_changing = false;
		mutex_unlock(&pf->lock);
	}
	return ret;
}

/* sriov_numvfs: enable @num VFs with their profiles, or disable them all. */
static int simgpu_pf_sriov_configure(struct pci_dev *pdev, int num)
{
	struct simgpu_pf *pf = pci_get_drvdata(pdev);
	const char *why;
	unsigned int n;

	if (num)
		return simgpu_pf_enable_vfs(pf, num);
	mutex_lock(&pf->lock);
	why = simgpu_pf_vfs_busy(pf, &n);
	if (!why)
		pf->sriov_changing = true;
	mutex_unlock(&pf->lock);
	if (why) {
		pci_warn(pdev, "SR-IOV stays enabled: VF %u is in use, %s\n", n, why);
		return -EBUSY;
	}
	/*
	 * A driver may bind a VF from here on: it cannot claim the VF's
	 * services (simgpu_pf_vf_get()), and pci_disable_sriov() unbinds it.
	 */
	msleep(READ_ONCE(pf->sriov_delay_ms));
	simgpu_pf_sriov_off(pf);
	return 0;
}

/**
 * simgpu_pf_free() - the last reference to a PF's state is gone
 * @ref: its kref
 */
void simgpu_pf_free(struct kref *ref)
{
	struct simgpu_pf *pf = container_of(ref, struct simgpu_pf, ref);
	unsigned int n;

	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		mutex_destroy(&pf->vf[n].cmd_lock);
	mutex_destroy(&pf->lock);
	kfree(pf);
}

static struct simgpu_pf *simgpu_pf_alloc(struct pci_dev *pdev)
{
	struct simgpu_pf *pf = kzalloc(sizeof(*pf), GFP_KERNEL);
	unsigned int n;

	if (!pf)
		return NULL;
	kref_init(&pf->ref);
	mutex_init(&pf->lock);
	INIT_WORK(&pf->demand_work, simgpu_pf_demand_work);
	pf->pdev = pdev;
	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++) {
		pf->vf[n].pf = pf;
		pf->vf[n].n = n;
		init_waitqueue_head(&pf->vf[n].wq);
		mutex_init(&pf->vf[n].cmd_lock);
	}
	return pf;
}

/* What the device says it is and offers. */
static int simgpu_pf_identify(struct simgpu_pf *pf)
{
	struct simgpu_pf_vf_info *info = &pf->info;
	u32 id = simgpu_pf_read(pf, SIMGPU_PF_REG_ID);
	u32 ver = simgpu_pf_read(pf, SIMGPU_PF_REG_VERSION);
	unsigned int n;

	if (id != SIMGPU_PF_ID_MAGIC || ver != SIMGPU_PF_ABI_VERSION) {
		pci_err(pf->pdev, "not a simgpu-pci PF of ABI %u (id 0x%x, version %u)\n",
			SIMGPU_PF_ABI_VERSION, id, ver);
		return -ENODEV;
	}
	pf->total_vfs = min3(simgpu_pf_read(pf, SIMGPU_PF_REG_TOTAL_VFS),
			     (u32)pci_sriov_get_totalvfs(pf->pdev), (u32)SIMGPU_PF_MAX_VFS);
	/*
	 * The capability's TotalVFs may promise more than the device's
	 * register or this driver's array: sriov_numvfs offers no more.
	 */
	if (pci_sriov_set_totalvfs(pf->pdev, pf->total_vfs)) {
		pci_err(pf->pdev, "cannot limit SR-IOV to %u VFs\n", pf->total_vfs);
		return -ENODEV;
	}
	pf->offered = simgpu_pf_read(pf, SIMGPU_PF_REG_PROFILES) &
		      GENMASK(SIMGPU_PF_NR_PROFILES - 1, 0);
	if (!pf->offered) {
		pci_err(pf->pdev, "the PF offers no VF profile\n");
		return -ENODEV;
	}
	info->block_shift = simgpu_pf_read(pf, SIMGPU_PF_REG_BLOCK_SHIFT);
	info->arch_version = simgpu_pf_read(pf, SIMGPU_PF_REG_ARCH_VERSION);
	info->arch_size = simgpu_pf_read(pf, SIMGPU_PF_REG_ARCH_SIZE);
	info->xfer_max = simgpu_pf_read(pf, SIMGPU_PF_REG_XFER_MAX);
	info->log_ranges = simgpu_pf_read(pf, SIMGPU_PF_REG_LOG_RANGES);
	info->log_pages = simgpu_pf_read(pf, SIMGPU_PF_REG_LOG_PAGES);
	info->caps = simgpu_pf_read(pf, SIMGPU_PF_REG_CAPS);
	if (!info->xfer_max || !info->log_ranges || info->block_shift < PAGE_SHIFT ||
	    info->block_shift > 30) {
		pci_err(pf->pdev, "the PF reports nonsense limits\n");
		return -ENODEV;
	}
	/* Every VF starts with the smallest profile offered. */
	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		pf->profile[n] = __ffs(pf->offered);
	return 0;
}

static int simgpu_pf_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct simgpu_pf *pf = simgpu_pf_alloc(pdev);
	int ret;

	if (!pf)
		return -ENOMEM;
	ret = pci_enable_device_mem(pdev);
	if (ret)
		goto err_free;
	ret = pci_request_regions(pdev, KBUILD_MODNAME);
	if (ret)
		goto err_disable;
	pf->regs = pci_iomap(pdev, 0, SIMGPU_PF_BAR0_SIZE);
	ret = -ENOMEM;
	if (!pf->regs)
		goto err_regions;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (!ret)
		ret = simgpu_pf_identify(pf);
	if (ret)
		goto err_unmap;
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI);
	if (ret < 0)
		goto err_unmap;
	ret = request_irq(pci_irq_vector(pdev, 0), simgpu_pf_irq, 0, "simgpu-pf", pf);
	if (ret)
		goto err_vectors;
	pci_set_drvdata(pdev, pf);
	simgpu_pf_debugfs_pf_add(pf);
	simgpu_pf_write(pf, SIMGPU_PF_REG_INT_STATUS, ~0U);
	simgpu_pf_write(pf, SIMGPU_PF_REG_INT_MASK, simgpu_pf_int_mask(pf));
	pci_info(pdev, "simgpu-pci PF: %u VFs, profiles 0x%x, aperture %llu MiB\n",
		 pf->total_vfs, pf->offered,
		 (simgpu_pf_read(pf, SIMGPU_PF_REG_APERTURE_LO) |
		  (u64)simgpu_pf_read(pf, SIMGPU_PF_REG_APERTURE_HI) << 32) >> 20);
	return 0;

err_vectors:
	pci_free_irq_vectors(pdev);
err_unmap:
	pci_iounmap(pdev, pf->regs);
err_regions:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_free:
	kref_put(&pf->ref, simgpu_pf_free);
	return ret;
}

/*
 * The driver goes away, which cannot be refused: every service fails from
 * now on and every claimer hears so (under the PF's lock, so that no claim
 * is released meanwhile); then SR-IOV ends without the lock, since the
 * VFs' own drivers see their devices removed and release their claims.
 * The device lock keeps sriov_numvfs out meanwhile.
 */
static void simgpu_pf_remove(struct pci_dev *pdev)
{
	struct simgpu_pf *pf = pci_get_drvdata(pdev);
	unsigned int n, num;

	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		simgpu_pf_vf_set_gone(&pf->vf[n]);
	mutex_lock(&pf->lock);
	num = pf->num_vfs;
	for (n = 0; n < num; n++) {
		struct simgpu_pf_vf *vf = &pf->vf[n];

		simgpu_pf_debugfs_remove(vf);
		if (vf->ops && vf->ops->pf_gone) {
			pci_warn(pdev, "VF %u in use while its PF's driver goes away\n", n);
			vf->ops->pf_gone(vf->priv);
		}
	}
	mutex_unlock(&pf->lock);
	if (num)
		pci_disable_sriov(pdev);
	mutex_lock(&pf->lock);
	simgpu_pf_put_vfs(pf);
	mutex_unlock(&pf->lock);
	simgpu_pf_debugfs_pf_remove(pf);
	simgpu_pf_write(pf, SIMGPU_PF_REG_INT_MASK, 0);
	free_irq(pci_irq_vector(pdev, 0), pf);
	cancel_work_sync(&pf->demand_work);
	pci_free_irq_vectors(pdev);
	pci_iounmap(pdev, pf->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	kref_put(&pf->ref, simgpu_pf_free);
}

/*
 * The PF is reset (an FLR: its reset attribute, or an error recovery), and
 * every VF with it: SR-IOV goes off in the device, the VFs' GPU state and
 * VRAM are lost, and the PCI core's restore turns SR-IOV back on.  Before:
 * commands in flight finish, new ones fail with -EAGAIN, claims are
 * refused, each VF's config space is saved and its claimer hears.  After:
 * the interrupt mask (which the reset cleared) and the VFs' config spaces
 * come back, and the services work again.  The PCI core holds the PF's
 * device lock across both.
 */
static void simgpu_pf_reset_prepare(struct pci_dev *pdev)
{
	struct simgpu_pf *pf = pci_get_drvdata(pdev);
	unsigned int n;

	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		simgpu_pf_vf_set_resetting(&pf->vf[n], true);
	mutex_lock(&pf->lock);
	pf->sriov_changing = true;
	for (n = 0; n < pf->num_vfs; n++) {
		struct simgpu_pf_vf *vf = &pf->vf[n];

		pci_save_state(vf->pdev);
		if (vf->ops && vf->ops->pf_reset)
			vf->ops->pf_reset(vf->priv);
	}
	if (pf->num_vfs)
		pci_warn(pdev, "reset: the state and VRAM of its %u VFs are lost\n", pf->num_vfs);
	mutex_unlock(&pf->lock);
}

static void simgpu_pf_reset_done(struct pci_dev *pdev)
{
	struct simgpu_pf *pf = pci_get_drvdata(pdev);
	unsigned int n;

	simgpu_pf_write(pf, SIMGPU_PF_REG_INT_STATUS, ~0U);
	simgpu_pf_write(pf, SIMGPU_PF_REG_INT_MASK, simgpu_pf_int_mask(pf));
	mutex_lock(&pf->lock);
	for (n = 0; n < pf->num_vfs; n++)
		pci_restore_state(pf->vf[n].pdev);
	pf->sriov_changing = false;
	mutex_unlock(&pf->lock);
	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		simgpu_pf_vf_set_resetting(&pf->vf[n], false);
}

static const struct pci_error_handlers simgpu_pf_err_handlers = {
	.reset_prepare = simgpu_pf_reset_prepare,
	.reset_done = simgpu_pf_reset_done,
};

static const struct pci_device_id simgpu_pf_ids[] = {
	{ PCI_DEVICE(SIMGPU_PF_VENDOR_ID, SIMGPU_PF_DEVICE_ID) },
	{}
};
MODULE_DEVICE_TABLE(pci, simgpu_pf_ids);

struct pci_driver simgpu_pf_driver = {
	.name = "simgpu-pf",
	.id_table = simgpu_pf_ids,
	.probe = simgpu_pf_probe,
	.remove = simgpu_pf_remove,
	.sriov_configure = simgpu_pf_sriov_configure,
	.err_handler = &simgpu_pf_err_handlers,
	.dev_groups = simgpu_pf_groups,
};

static int __init simgpu_pf_init(void)
{
	int ret;

	simgpu_pf_debugfs_init();
	ret = pci_register_driver(&simgpu_pf_driver);
	if (ret)
		goto err_debugfs;
	ret = simgpu_pf_provider_register();
	if (ret)
		goto err_driver;
	return 0;

err_driver:
	pci_unregister_driver(&simgpu_pf_driver);
err_debugfs:
	simgpu_pf_debugfs_exit();
	return ret;
}

/* No VF is claimed: a claim holds this module. */
static void __exit simgpu_pf_exit(void)
{
	simgpu_pf_provider_unregister();
	pci_unregister_driver(&simgpu_pf_driver);
	simgpu_pf_debugfs_exit();
}

module_init(simgpu_pf_init);
module_exit(simgpu_pf_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The gpumig authors");
MODULE_DESCRIPTION("simgpu-pf: the physical function of simgpu-pci (gpumig test hardware)");
MODULE_VERSION(GPUMIG_VERSION);
