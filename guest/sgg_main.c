// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-guest: the PCI driver.  Binds to simgpu's guest ABI (1234:5347:
 * an mdev as a VMM presents it, or a simgpu-pci VF), one character device
 * per GPU.  A function-level reset (sysfs reset, a VMM's) goes through
 * reset_prepare/reset_done: pending work fails with SGG_ERR_RESET and the
 * device is set up again.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "sgg.h"

static DEFINE_IDA(sgg_ida);

static void sgg_release(struct kref *ref)
{
	struct sgg_dev *s = container_of(ref, struct sgg_dev, ref);

	sgg_hw_fini(s);		/* a probe that failed */
	bitmap_free(s->vram_map);
	pci_dev_put(s->pdev);
	ida_free(&sgg_ida, s->id);
	kfree(s);
}

void sgg_put(struct sgg_dev *s)
{
	kref_put(&s->ref, sgg_release);
}

static int sgg_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct sgg_dev *s;
	int ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	ret = ida_alloc(&sgg_ida, GFP_KERNEL);
	if (ret < 0) {
		kfree(s);
		return ret;
	}
	s->id = ret;
	kref_init(&s->ref);
	s->pdev = pci_dev_get(pdev);
	mutex_init(&s->lock);
	INIT_LIST_HEAD(&s->files);
	spin_lock_init(&s->irq_lock);
	init_waitqueue_head(&s->wq);
	INIT_WORK(&s->err_work, sgg_err_work);
	INIT_DELAYED_WORK(&s->watch, sgg_watch);
	snprintf(s->name, sizeof(s->name), "simgpu%d", s->id);
	pci_set_drvdata(pdev, s);

	ret = pci_enable_device_mem(pdev);
	if (ret)
		goto err_put;
	ret = pci_request_region(pdev, 0, "simgpu-guest");
	if (ret)
		goto err_disable;
	s->regs = pci_iomap(pdev, 0, SIMGPU_BAR0_SIZE);
	if (!s->regs) {
		ret = -ENOMEM;
		goto err_region;
	}
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(52));
	if (ret)
		goto err_unmap;
	pci_set_master(pdev);
	if (sgg_rd(s, SIMGPU_REG_ID) != SIMGPU_ID_MAGIC) {
		dev_err(&pdev->dev, "not a simgpu (ID 0x%x)\n", sgg_rd(s, SIMGPU_REG_ID));
		ret = -ENODEV;
		goto err_unmap;
	}
	s->device_abi = sgg_rd(s, SIMGPU_REG_VERSION);
	s->caps = sgg_rd(s, SIMGPU_REG_CAPS);
	s->nr_queues = sgg_rd(s, SIMGPU_REG_NUM_QUEUES);
	s->vram_size = sgg_rd(s, SIMGPU_REG_VRAM_SIZE_LO) |
		       (u64)sgg_rd(s, SIMGPU_REG_VRAM_SIZE_HI) << 32;
	if (!s->nr_queues || s->nr_queues > SIMGPU_MAX_QUEUES ||
	    !s->vram_size || s->vram_size % SIMGPU_PAGE_SIZE ||
	    s->vram_size > SGG_VA_SYS - SGG_VA_VRAM) {
		dev_err(&pdev->dev, "unusable geometry: %u queues, %llu bytes of VRAM\n",
			s->nr_queues, s->vram_size);
		ret = -ENODEV;
		goto err_unmap;
	}
	ret = sgg_hw_init(s);
	if (ret)
		goto err_unmap;
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_MSIX);
	if (ret < 0)
		goto err_unmap;
	ret = request_irq(pci_irq_vector(pdev, 0), sgg_irq, 0, s->name, s);
	if (ret)
		goto err_vectors;
	mutex_lock(&s->lock);
	ret = sgg_hw_start(s);
	mutex_unlock(&s->lock);
	if (ret)
		goto err_irq;
	ret = sgg_cdev_register(s);
	if (ret)
		goto err_stop;
	schedule_delayed_work(&s->watch, msecs_to_jiffies(SGG_WATCH_MS));
	dev_info(&pdev->dev, "%s: ABI %u, %u queues, %llu MiB of VRAM\n", s->name,
		 s->device_abi, s->nr_queues, s->vram_size >> 20);
	return 0;

err_stop:
	sgg_hw_stop(s);
err_irq:
	free_irq(pci_irq_vector(pdev, 0), s);
err_vectors:
	pci_free_irq_vectors(pdev);
err_unmap:
	cancel_work_sync(&s->err_work);
	pci_iounmap(pdev, s->regs);
err_region:
	pci_release_region(pdev, 0);
err_disable:
	pci_disable_device(pdev);
err_put:
	s->gone = true;
	sgg_put(s);
	return ret;
}

static void sgg_remove(struct pci_dev *pdev)
{
	struct sgg_dev *s = pci_get_drvdata(pdev);

	sgg_cdev_unregister(s);
	mutex_lock(&s->lock);
	sgg_hw_stop(s);
	spin_lock_irq(&s->irq_lock);
	WRITE_ONCE(s->gone, true);
	spin_unlock_irq(&s->irq_lock);
	mutex_unlock(&s->lock);
	wake_up_all(&s->wq);
	cancel_delayed_work_sync(&s->watch);
	free_irq(pci_irq_vector(pdev, 0), s);
	pci_free_irq_vectors(pdev);
	cancel_work_sync(&s->err_work);
	/* nothing of its DMA outlives the driver: open files keep only handles */
	mutex_lock(&s->lock);
	sgg_cdev_gone(s);
	sgg_hw_fini(s);
	mutex_unlock(&s->lock);
	pci_clear_master(pdev);
	pci_iounmap(pdev, s->regs);
	pci_release_region(pdev, 0);
	pci_disable_device(pdev);
	sgg_put(s);
}

/* A function-level reset: nothing touches the device until it is done. */
static void sgg_reset_prepare(struct pci_dev *pdev)
{
	struct sgg_dev *s = pci_get_drvdata(pdev);

	mutex_lock(&s->lock);
	WRITE_ONCE(s->resetting, true);
}

static void sgg_reset_done(struct pci_dev *pdev)
{
	struct sgg_dev *s = pci_get_drvdata(pdev);

	WRITE_ONCE(s->resetting, false);
	sgg_log_error(s, SGG_ERR_RESET, SIMGPU_QUEUE_DEVICE, 0);
	sgg_device_reset(s, SGG_ERR_RESET);
	atomic_set(&s->lost_pending, 0);
	mutex_unlock(&s->lock);
}

static const struct pci_error_handlers sgg_err_handlers = {
	.reset_prepare = sgg_reset_prepare,
	.reset_done = sgg_reset_done,
};

static const struct pci_device_id sgg_ids[] = {
	{ PCI_DEVICE(SIMGPU_PCI_VENDOR_ID, SIMGPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, sgg_ids);

static struct pci_driver sgg_driver = {
	.name = "simgpu-guest",
	.id_table = sgg_ids,
	.probe = sgg_probe,
	.remove = sgg_remove,
	.err_handler = &sgg_err_handlers,
};
module_pci_driver(sgg_driver);

MODULE_DESCRIPTION("Guest driver for simgpu, gpumig's simulated GPU");
MODULE_AUTHOR("The gpumig authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(SGG_VERSION);
