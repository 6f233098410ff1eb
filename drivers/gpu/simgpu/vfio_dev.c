// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu's VFIO device: one per mediated device.  The ops table, the
 * device's life (init, open, close, release) and its ioctls; each job is
 * one call into the file that does it, and migration is one call into the
 * gpumig engine.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/mdev.h>
#include <linux/uaccess.h>
#include <linux/vfio.h>

#include <gpumig/dirty.h>

#include "simgpu_mdev.h"

static struct gpumig_mig *simgpu_to_mig(struct vfio_device *vdev)
{
	return to_simgpu(vdev)->mig;
}

GPUMIG_DEFINE_VFIO_OPS(simgpu, simgpu_to_mig);

static ssize_t simgpu_read(struct vfio_device *vdev, char __user *buf,
			   size_t count, loff_t *ppos)
{
	return simgpu_region_rw(to_simgpu(vdev), buf, count, ppos, false);
}

static ssize_t simgpu_write(struct vfio_device *vdev, const char __user *buf,
			    size_t count, loff_t *ppos)
{
	return simgpu_region_rw(to_simgpu(vdev), (char __user *)buf, count, ppos, true);
}

static int simgpu_device_info(unsigned long arg)
{
	unsigned long minsz = offsetofend(struct vfio_device_info, num_irqs);
	struct vfio_device_info info;

	if (copy_from_user(&info, (void __user *)arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz)
		return -EINVAL;
	info.flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
	info.num_regions = VFIO_PCI_NUM_REGIONS;
	info.num_irqs = VFIO_PCI_NUM_IRQS;
	return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
}

static long simgpu_ioctl(struct vfio_device *vdev, unsigned int cmd, unsigned long arg)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);

	switch (cmd) {
	case VFIO_DEVICE_GET_INFO:
		return simgpu_device_info(arg);
#ifndef GPUMIG_HAVE_REGION_INFO_CAPS
	case VFIO_DEVICE_GET_REGION_INFO:
		return simgpu_region_info(arg);
#endif
	case VFIO_DEVICE_GET_IRQ_INFO:
		return simgpu_irq_info(arg);
	case VFIO_DEVICE_SET_IRQS:
		return simgpu_set_irqs(sdev, arg);
	case VFIO_DEVICE_RESET:
		gpumig_mig_reset(sdev->mig);
		simgpu_reset(sdev);
		return 0;
	}
	return -ENOTTY;
}

static int simgpu_open_device(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);
	int ret;

	ret = gpumig_mig_open(sdev->mig);
	if (ret)
		return ret;
	simgpu_reset(sdev);
	/* Counters describe the current tenant's session. */
	simgpu_core_clear_stats(&sdev->core);
	return simgpu_proc_start(&sdev->proc, dev_name(vdev->dev));
}

/*
 * The tenant is gone.  The engine's verified teardown stops the device,
 * has it acknowledge that every translation is gone, stops the processor
 * and checks; a device that passes is scrubbed, one that fails is
 * quarantined with its memory kept.  Then the interrupts are let go.
 */
static void simgpu_close_device(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);

	gpumig_mig_close(sdev->mig);
	simgpu_irq_release(sdev);
}

/*
 * All DMA happens under the core's lock, one step at a time: taking it
 * here means no access to the range being unmapped is in flight when the
 * unmap completes.  Nothing is cached per IOVA (vfio_dma_rw pins nothing
 * beyond one access), so there is nothing else to drop.
 */
static void simgpu_dma_unmap(struct vfio_device *vdev, u64 iova, u64 length)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);

	mutex_lock(&sdev->core.lock);
	mutex_unlock(&sdev->core.lock);
}

static int simgpu_init_dev(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);
	struct mdev_device *mdev = to_mdev_device(vdev->dev);
	const struct simgpu_type *type = to_simgpu_type(mdev->type);
	struct gpumig_compat compat;
	int ret;

	ret = simgpu_budget_take(type->vram);
	if (ret)
		return ret;
	ret = simgpu_core_init(&sdev->core, &simgpu_mdev_env, sdev, type->queues,
			       type->vram);
	if (ret)
		goto err_budget;
	simgpu_vram_init(&sdev->vram, type->vram, &sdev->core.lock);
	simgpu_proc_init(&sdev->proc, &sdev->core);
	sdev->type = type;
	mutex_init(&sdev->cfg_lock);
	spin_lock_init(&sdev->irq_lock);
	simgpu_cfg_init(sdev);
	ret = -ENOMEM;
	sdev->dirty = gpumig_dirty_create();
	if (!sdev->dirty)
		goto err_core;
	simgpu_type_compat(type, &compat);
	sdev->mig = gpumig_mig_create(vdev, &simgpu_vfio_ops, &simgpu_backend_ops, sdev,
				      &compat, NULL);
	if (IS_ERR(sdev->mig)) {
		ret = PTR_ERR(sdev->mig);
		goto err_dirty;
	}
	sdev->vram.dirtied_ctx = sdev;
	sdev->vram.dirtied = simgpu_vram_dirtied;
	return 0;

err_dirty:
	gpumig_dirty_destroy(sdev->dirty);
err_core:
	mutex_destroy(&sdev->cfg_lock);
	simgpu_core_destroy(&sdev->core);
err_budget:
	simgpu_budget_put(type->vram);
	return ret;
}

static void simgpu_release_dev(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);

	gpumig_mig_destroy(sdev->mig);
	gpumig_dirty_destroy(sdev->dirty);
	WARN_ON(simgpu_proc_running(&sdev->proc));
	simgpu_vram_pool_stop(&sdev->vram);
	mutex_lock(&sdev->core.lock);
	simgpu_vram_track(&sdev->vram, false);
	simgpu_vram_scrub(&sdev->vram);
	mutex_unlock(&sdev->core.lock);
	simgpu_core_destroy(&sdev->core);
	mutex_destroy(&sdev->cfg_lock);
	simgpu_budget_put(sdev->type->vram);
}

static const struct vfio_device_ops simgpu_vfio_dev_ops = {
	.name = "simgpu",
	.init = simgpu_init_dev,
	.release = simgpu_release_dev,
	.open_device = simgpu_open_device,
	.close_device = simgpu_close_device,
	.read = simgpu_read,
	.write = simgpu_write,
	.ioctl = simgpu_ioctl,
#ifdef GPUMIG_HAVE_REGION_INFO_CAPS
	.get_region_info_caps = simgpu_region_info_caps,
#endif
	.request = simgpu_request,
	.dma_unmap = simgpu_dma_unmap,
	.bind_iommufd = vfio_iommufd_emulated_bind,
	.unbind_iommufd = vfio_iommufd_emulated_unbind,
	.attach_ioas = vfio_iommufd_emulated_attach_ioas,
	.detach_ioas = vfio_iommufd_emulated_detach_ioas,
};

/**
 * simgpu_probe() - mdev_driver.probe: a new instance
 * @mdev: the mediated device
 *
 * Return: 0 or a negative errno.
 */
int simgpu_probe(struct mdev_device *mdev)
{
	struct simgpu_dev *sdev;
	int ret;

	sdev = vfio_alloc_device(simgpu_dev, vdev, &mdev->dev, &simgpu_vfio_dev_ops);
	if (IS_ERR(sdev))
		return PTR_ERR(sdev);
	ret = vfio_register_emulated_iommu_dev(&sdev->vdev);
	if (ret) {
		vfio_put_device(&sdev->vdev);
		return ret;
	}
	dev_set_drvdata(&mdev->dev, sdev);
	simgpu_debugfs_add(sdev);
	return 0;
}

/**
 * simgpu_remove() - mdev_driver.remove: waits for the tenant to close
 * @mdev: the mediated device
 */
void simgpu_remove(struct mdev_device *mdev)
{
	struct simgpu_dev *sdev = dev_get_drvdata(&mdev->dev);

	simgpu_debugfs_remove(sdev);
	vfio_unregister_group_dev(&sdev->vdev);
	vfio_put_device(&sdev->vdev);
	/* The instance's VRAM went with it: so does a quarantine (logged). */
	gpumig_quarantine_gone(&mdev->dev, "instance removed, its VRAM scrubbed,");
}
