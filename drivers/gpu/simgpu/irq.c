// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu's VFIO interrupts: one MSI vector and the request interrupt (the
 * mdev is being removed while open), each an eventfd the user gives.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/eventfd.h>
#include <linux/uaccess.h>
#include <linux/vfio.h>

#include "simgpu_mdev.h"

static void simgpu_set_trigger(struct simgpu_dev *sdev, struct eventfd_ctx **slot,
			       struct eventfd_ctx *ctx)
{
	struct eventfd_ctx *old;

	spin_lock(&sdev->irq_lock);
	old = *slot;
	*slot = ctx;
	spin_unlock(&sdev->irq_lock);
	if (old)
		eventfd_ctx_put(old);
}

/**
 * simgpu_irq_info() - VFIO_DEVICE_GET_IRQ_INFO
 * @arg: the user's struct vfio_irq_info
 *
 * Return: 0 or a negative errno.
 */
int simgpu_irq_info(unsigned long arg)
{
	unsigned long minsz = offsetofend(struct vfio_irq_info, count);
	struct vfio_irq_info info;

	if (copy_from_user(&info, (void __user *)arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz || info.index >= VFIO_PCI_NUM_IRQS)
		return -EINVAL;
	info.flags = VFIO_IRQ_INFO_EVENTFD;
	info.count = (info.index == VFIO_PCI_MSI_IRQ_INDEX ||
		      info.index == VFIO_PCI_REQ_IRQ_INDEX) ? 1 : 0;
	if (info.index == VFIO_PCI_MSI_IRQ_INDEX)
		info.flags |= VFIO_IRQ_INFO_NORESIZE;
	return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
}

/* DATA_NONE or DATA_BOOL: fire the interrupt once, for loopback tests. */
static int simgpu_irq_loopback(struct simgpu_dev *sdev, struct eventfd_ctx **slot,
			       const struct vfio_irq_set *hdr, unsigned long arg)
{
	if (hdr->flags & VFIO_IRQ_SET_DATA_BOOL) {
		u8 b;

		if (copy_from_user(&b, (void __user *)(arg + sizeof(*hdr)), 1))
			return -EFAULT;
		if (!b)
			return 0;
	}
	spin_lock(&sdev->irq_lock);
	if (*slot)
		eventfd_signal(*slot);
	spin_unlock(&sdev->irq_lock);
	return 0;
}

/**
 * simgpu_set_irqs() - VFIO_DEVICE_SET_IRQS
 * @sdev: device
 * @arg: the user's struct vfio_irq_set and its data
 *
 * Return: 0 or a negative errno.
 */
int simgpu_set_irqs(struct simgpu_dev *sdev, unsigned long arg)
{
	struct vfio_irq_set hdr;
	struct eventfd_ctx **slot;
	size_t data_size = 0;
	int ret;

	if (copy_from_user(&hdr, (void __user *)arg, offsetofend(struct vfio_irq_set, count)))
		return -EFAULT;
	ret = vfio_set_irqs_validate_and_prepare(&hdr, hdr.index == VFIO_PCI_MSI_IRQ_INDEX ||
						 hdr.index == VFIO_PCI_REQ_IRQ_INDEX ? 1 : 0,
						 VFIO_PCI_NUM_IRQS, &data_size);
	if (ret)
		return ret;
	if (hdr.index == VFIO_PCI_MSI_IRQ_INDEX)
		slot = &sdev->msi_trigger;
	else if (hdr.index == VFIO_PCI_REQ_IRQ_INDEX)
		slot = &sdev->req_trigger;
	else
		return -EINVAL;
	if ((hdr.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK) != VFIO_IRQ_SET_ACTION_TRIGGER)
		return -EINVAL;

	if (!hdr.count) {
		if (!(hdr.flags & VFIO_IRQ_SET_DATA_NONE))
			return -EINVAL;
		simgpu_set_trigger(sdev, slot, NULL);
		return 0;
	}
	if (hdr.flags & VFIO_IRQ_SET_DATA_EVENTFD) {
		struct eventfd_ctx *ctx = NULL;
		s32 fd;

		if (copy_from_user(&fd, (void __user *)(arg + sizeof(hdr)), sizeof(fd)))
			return -EFAULT;
		if (fd >= 0) {
			ctx = eventfd_ctx_fdget(fd);
			if (IS_ERR(ctx))
				return PTR_ERR(ctx);
		}
		simgpu_set_trigger(sdev, slot, ctx);
		return 0;
	}
	return simgpu_irq_loopback(sdev, slot, &hdr, arg);
}

/**
 * simgpu_irq_signal() - raise the MSI vector, if the user wired it
 * @sdev: device
 *
 * Context: any, the model's processor step included (a spinlock only).
 */
void simgpu_irq_signal(struct simgpu_dev *sdev)
{
	spin_lock(&sdev->irq_lock);
	if (sdev->msi_trigger)
		eventfd_signal(sdev->msi_trigger);
	spin_unlock(&sdev->irq_lock);
}

/**
 * simgpu_irq_release() - the tenant is gone: drop both eventfds
 * @sdev: device
 */
void simgpu_irq_release(struct simgpu_dev *sdev)
{
	simgpu_set_trigger(sdev, &sdev->msi_trigger, NULL);
	simgpu_set_trigger(sdev, &sdev->req_trigger, NULL);
}

/**
 * simgpu_request() - vfio_device_ops.request: removal waits for the user
 * @vdev: device
 * @count: how many times the core asked already
 */
void simgpu_request(struct vfio_device *vdev, unsigned int count)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);

	spin_lock(&sdev->irq_lock);
	if (sdev->req_trigger) {
		if (!(count % 10))
			dev_notice_ratelimited(vdev->dev, "asking the user to release the device (%u)\n",
					       count);
		eventfd_signal(sdev->req_trigger);
	} else if (count == 0) {
		dev_notice(vdev->dev, "removal waits for the user to close the device\n");
	}
	spin_unlock(&sdev->irq_lock);
}
