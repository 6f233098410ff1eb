// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu VFIO front end: each mediated device is a VFIO PCI device whose
 * config space and BAR0 are emulated here and whose DMA goes through the
 * mdev's emulated IOMMU (vfio_dma_rw), so the guest can never make the
 * device touch memory it did not map.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/debugfs.h>
#include <linux/eventfd.h>
#include <linux/iova_bitmap.h>
#include <linux/ktime.h>
#include <linux/mdev.h>
#include <linux/module.h>
#include <linux/pci_regs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/vfio.h>
#include <linux/vfio_pci_core.h>

#include "simgpu_vfio.h"

#define SIMGPU_CFG_SIZE		256
#define SIMGPU_MSI_CAP		0x40
#define SIMGPU_REGION_SHIFT	40
#define SIMGPU_REGION_MASK	((1ULL << SIMGPU_REGION_SHIFT) - 1)
#define SIMGPU_QUIESCE_MS	2000	/* drain bound with preemption off */
#define SIMGPU_INVAL_MS		1000	/* acknowledgment bound */

static void simgpu_cfg_init(struct simgpu_dev *sdev)
{
	u8 *c = sdev->config;

	memset(c, 0, SIMGPU_CFG_SIZE);
	*(__le16 *)&c[PCI_VENDOR_ID] = cpu_to_le16(SIMGPU_PCI_VENDOR_ID);
	*(__le16 *)&c[PCI_DEVICE_ID] = cpu_to_le16(SIMGPU_PCI_DEVICE_ID);
	*(__le16 *)&c[PCI_STATUS] = cpu_to_le16(PCI_STATUS_CAP_LIST);
	c[PCI_REVISION_ID] = SIMGPU_ABI_VERSION;
	c[PCI_CLASS_PROG] = SIMGPU_PCI_CLASS & 0xff;
	*(__le16 *)&c[PCI_CLASS_DEVICE] = cpu_to_le16(SIMGPU_PCI_CLASS >> 8);
	*(__le32 *)&c[PCI_BASE_ADDRESS_0] = cpu_to_le32(PCI_BASE_ADDRESS_SPACE_MEMORY |
							PCI_BASE_ADDRESS_MEM_TYPE_32);
	*(__le16 *)&c[PCI_SUBSYSTEM_VENDOR_ID] = cpu_to_le16(SIMGPU_PCI_VENDOR_ID);
	*(__le16 *)&c[PCI_SUBSYSTEM_ID] = cpu_to_le16(SIMGPU_PCI_DEVICE_ID);
	c[PCI_CAPABILITY_LIST] = SIMGPU_MSI_CAP;
	c[PCI_INTERRUPT_PIN] = 0;	/* MSI only */
	c[SIMGPU_MSI_CAP + PCI_CAP_LIST_ID] = PCI_CAP_ID_MSI;
	c[SIMGPU_MSI_CAP + PCI_CAP_LIST_NEXT] = 0;
	*(__le16 *)&c[SIMGPU_MSI_CAP + PCI_MSI_FLAGS] = cpu_to_le16(PCI_MSI_FLAGS_64BIT);
}

/* Config space write of one naturally aligned 1, 2 or 4 byte field. */
static void simgpu_cfg_write(struct simgpu_dev *sdev, u32 off, u32 val, u32 len)
{
	u8 *c = sdev->config;
	u32 msi = SIMGPU_MSI_CAP;

	switch (off) {
	case PCI_COMMAND:
		if (len >= 2)
			*(__le16 *)&c[off] = cpu_to_le16(val & (PCI_COMMAND_MEMORY |
						PCI_COMMAND_MASTER | PCI_COMMAND_INTX_DISABLE));
		break;
	case PCI_BASE_ADDRESS_0:
		if (len == 4) {
			val &= ~(SIMGPU_BAR0_SIZE - 1);
			*(__le32 *)&c[off] = cpu_to_le32(val | PCI_BASE_ADDRESS_SPACE_MEMORY |
							 PCI_BASE_ADDRESS_MEM_TYPE_32);
		}
		break;
	case PCI_INTERRUPT_LINE:
		c[off] = val;
		break;
	default:
		if (off == msi + PCI_MSI_FLAGS && len >= 2) {
			u16 f = le16_to_cpu(*(__le16 *)&c[off]);

			f = (f & ~PCI_MSI_FLAGS_ENABLE) | (val & PCI_MSI_FLAGS_ENABLE);
			*(__le16 *)&c[off] = cpu_to_le16(f);
		} else if (off == msi + PCI_MSI_ADDRESS_LO && len == 4) {
			*(__le32 *)&c[off] = cpu_to_le32(val & ~3U);
		} else if (off == msi + PCI_MSI_ADDRESS_HI && len == 4) {
			*(__le32 *)&c[off] = cpu_to_le32(val);
		} else if (off == msi + PCI_MSI_DATA_64 && len >= 2) {
			*(__le16 *)&c[off] = cpu_to_le16(val);
		}
		/* Everything else is read-only. */
		break;
	}
}

static ssize_t simgpu_rw(struct simgpu_dev *sdev, char __user *ubuf, size_t count,
			 loff_t *ppos, bool write)
{
	unsigned int index = *ppos >> SIMGPU_REGION_SHIFT;
	u64 pos = *ppos & SIMGPU_REGION_MASK;
	size_t done = 0;

	while (done < count) {
		size_t left = count - done;
		u32 len, val = 0;

		if (index == VFIO_PCI_CONFIG_REGION_INDEX) {
			if (pos >= SIMGPU_CFG_SIZE)
				return done ? done : -EINVAL;
			len = (left >= 4 && !(pos & 3)) ? 4 :
			      (left >= 2 && !(pos & 1)) ? 2 : 1;
		} else if (index == VFIO_PCI_BAR0_REGION_INDEX) {
			/* Registers are 32 bits wide and accessed whole. */
			if (pos >= SIMGPU_BAR0_SIZE || pos & 3 || left < 4)
				return done ? done : -EINVAL;
			len = 4;
		} else {
			return -EINVAL;
		}

		if (write) {
			if (copy_from_user(&val, ubuf + done, len))
				return -EFAULT;
			val = le32_to_cpu((__force __le32)val);
			if (index == VFIO_PCI_BAR0_REGION_INDEX) {
				simgpu_mmio_write(&sdev->core, pos, val);
			} else {
				mutex_lock(&sdev->cfg_lock);
				simgpu_cfg_write(sdev, pos, val, len);
				mutex_unlock(&sdev->cfg_lock);
			}
		} else {
			if (index == VFIO_PCI_BAR0_REGION_INDEX) {
				val = (__force u32)cpu_to_le32(simgpu_mmio_read(&sdev->core, pos));
			} else {
				mutex_lock(&sdev->cfg_lock);
				memcpy(&val, &sdev->config[pos], len);
				mutex_unlock(&sdev->cfg_lock);
			}
			if (copy_to_user(ubuf + done, &val, len))
				return -EFAULT;
		}
		done += len;
		pos += len;
	}
	*ppos += done;
	return done;
}

static ssize_t simgpu_read(struct vfio_device *vdev, char __user *buf,
			   size_t count, loff_t *ppos)
{
	return simgpu_rw(to_simgpu(vdev), buf, count, ppos, false);
}

static ssize_t simgpu_write(struct vfio_device *vdev, const char __user *buf,
			    size_t count, loff_t *ppos)
{
	return simgpu_rw(to_simgpu(vdev), (char __user *)buf, count, ppos, true);
}

/* Environment of the device model: VFIO DMA and the MSI eventfd. */
static int simgpu_env_dma_rw(void *ctx, u64 iova, void *buf, size_t len, bool write)
{
	struct simgpu_dev *sdev = ctx;
	int ret;

	ret = vfio_dma_rw(&sdev->vdev, iova, buf, len, write);
	/* Marked after the write landed: see gpumig_dirty_mark(). */
	if (!ret && write)
		gpumig_dirty_mark(&sdev->dirty, iova, len);
	return ret;
}

static void simgpu_env_raise_irq(void *ctx)
{
	struct simgpu_dev *sdev = ctx;

	spin_lock(&sdev->irq_lock);
	if (sdev->msi_trigger)
		eventfd_signal(sdev->msi_trigger);
	spin_unlock(&sdev->irq_lock);
}

static const struct simgpu_env_ops simgpu_vfio_env = {
	.dma_rw = simgpu_env_dma_rw,
	.raise_irq = simgpu_env_raise_irq,
};

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

static int simgpu_set_irqs(struct simgpu_dev *sdev, unsigned long arg)
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
	/* DATA_NONE or DATA_BOOL: fire the interrupt once, for loopback tests. */
	if (hdr.flags & VFIO_IRQ_SET_DATA_BOOL) {
		u8 b;

		if (copy_from_user(&b, (void __user *)(arg + sizeof(hdr)), 1))
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

static int simgpu_reset(struct simgpu_dev *sdev)
{
	simgpu_core_reset(&sdev->core);
	mutex_lock(&sdev->cfg_lock);
	simgpu_cfg_init(sdev);
	mutex_unlock(&sdev->cfg_lock);
	return 0;
}

static long simgpu_ioctl(struct vfio_device *vdev, unsigned int cmd, unsigned long arg)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);
	unsigned long minsz;

	switch (cmd) {
	case VFIO_DEVICE_GET_INFO: {
		struct vfio_device_info info;

		minsz = offsetofend(struct vfio_device_info, num_irqs);
		if (copy_from_user(&info, (void __user *)arg, minsz))
			return -EFAULT;
		if (info.argsz < minsz)
			return -EINVAL;
		info.flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
		info.num_regions = VFIO_PCI_NUM_REGIONS;
		info.num_irqs = VFIO_PCI_NUM_IRQS;
		return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
	}
	case VFIO_DEVICE_GET_REGION_INFO: {
		struct vfio_region_info info;

		minsz = offsetofend(struct vfio_region_info, offset);
		if (copy_from_user(&info, (void __user *)arg, minsz))
			return -EFAULT;
		if (info.argsz < minsz || info.index >= VFIO_PCI_NUM_REGIONS)
			return -EINVAL;
		info.offset = (u64)info.index << SIMGPU_REGION_SHIFT;
		info.cap_offset = 0;
		switch (info.index) {
		case VFIO_PCI_CONFIG_REGION_INDEX:
			info.size = SIMGPU_CFG_SIZE;
			info.flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
			break;
		case VFIO_PCI_BAR0_REGION_INDEX:
			info.size = SIMGPU_BAR0_SIZE;
			info.flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
			break;
		default:
			info.size = 0;
			info.flags = 0;
			break;
		}
		return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
	}
	case VFIO_DEVICE_GET_IRQ_INFO: {
		struct vfio_irq_info info;

		minsz = offsetofend(struct vfio_irq_info, count);
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
	case VFIO_DEVICE_SET_IRQS:
		return simgpu_set_irqs(sdev, arg);
	case VFIO_DEVICE_RESET:
		gpumig_mig_reset(&sdev->mig);
		return simgpu_reset(sdev);
	}
	return -ENOTTY;
}

static int simgpu_open_device(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);

	if (READ_ONCE(sdev->mig.quarantined)) {
		dev_err(vdev->dev, "refusing to reuse a quarantined instance: %s\n",
			sdev->mig.why);
		return -EBUSY;
	}
	simgpu_reset(sdev);
	/* Counters describe the current tenant's session. */
	mutex_lock(&sdev->core.lock);
	memset(&sdev->core.stats, 0, sizeof(sdev->core.stats));
	atomic64_set(&sdev->log_reports, 0);
	atomic64_set(&sdev->log_report_ns, 0);
	atomic64_set(&sdev->log_bitmap_ns, 0);
	mutex_unlock(&sdev->core.lock);
	return simgpu_core_start(&sdev->core, dev_name(vdev->dev));
}

/*
 * The tenant is gone: stop the processor (after its current step), drop
 * its interrupts, reset, and scrub VRAM so the next tenant reads zeroes.
 */
static void simgpu_close_device(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);
	struct simgpu_core *core = &sdev->core;

	/*
	 * Verified teardown: stop the device, have it acknowledge that every
	 * translation is gone, stop the processor, then check.  A device that
	 * fails is quarantined with its memory kept, not handed to anyone.
	 */
	simgpu_quiesce(core, SIMGPU_QUIESCE_MS);
	simgpu_host_invalidate(core, SIMGPU_INVAL_MS);
	simgpu_core_stop(core);
	gpumig_dirty_stop(&sdev->dirty);
	simgpu_set_trigger(sdev, &sdev->msi_trigger, NULL);
	simgpu_set_trigger(sdev, &sdev->req_trigger, NULL);
	if (gpumig_mig_teardown(&sdev->mig))
		return;
	simgpu_reset(sdev);
	mutex_lock(&core->lock);
	simgpu_vram_scrub(&core->vram);
	mutex_unlock(&core->lock);
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

/* The mdev is being removed while open: ask the user to let go. */
static void simgpu_request(struct vfio_device *vdev, unsigned int count)
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

/* ---- migration backend ------------------------------------------------ */

static struct simgpu_core *mig_core(struct gpumig_mig *m)
{
	return &((struct simgpu_dev *)m->priv)->core;
}

static int simgpu_mig_quiesce(struct gpumig_mig *m)
{
	return simgpu_quiesce(mig_core(m), SIMGPU_QUIESCE_MS);
}

static void simgpu_mig_unquiesce(struct gpumig_mig *m)
{
	simgpu_unquiesce(mig_core(m));
}

static int simgpu_mig_invalidate(struct gpumig_mig *m)
{
	return simgpu_host_invalidate(mig_core(m), SIMGPU_INVAL_MS);
}

static void simgpu_mig_track(struct gpumig_mig *m, bool on)
{
	struct simgpu_core *core = mig_core(m);

	mutex_lock(&core->lock);
	if (simgpu_vram_track(&core->vram, on))
		dev_warn(m->vdev->dev, "no memory for VRAM dirty tracking: all of VRAM is resent\n");
	mutex_unlock(&core->lock);
}

static long simgpu_mig_next_dirty(struct gpumig_mig *m, unsigned long from, bool *zero)
{
	struct simgpu_core *core = mig_core(m);
	struct simgpu_vram *v = &core->vram;
	unsigned long b;
	long ret = -ENOENT;

	mutex_lock(&core->lock);
	if (!v->dirty) {
		/* No tracking (no memory for it): every block, once. */
		if (from < v->nr_blocks) {
			*zero = simgpu_vram_block_zero(v, from);
			ret = from;
		}
	} else {
		b = find_next_bit(v->dirty, v->nr_blocks, from);
		if (b < v->nr_blocks) {
			clear_bit(b, v->dirty);
			*zero = simgpu_vram_block_zero(v, b);
			ret = b;
		}
	}
	mutex_unlock(&core->lock);
	return ret;
}

static void simgpu_mig_dirty_count(struct gpumig_mig *m, unsigned long *nonzero,
				   unsigned long *zero)
{
	struct simgpu_core *core = mig_core(m);
	struct simgpu_vram *v = &core->vram;
	unsigned long b;

	*nonzero = 0;
	*zero = 0;
	mutex_lock(&core->lock);
	for (b = 0; b < v->nr_blocks; b++) {
		if (v->dirty && !test_bit(b, v->dirty))
			continue;
		if (simgpu_vram_block_zero(v, b))
			(*zero)++;
		else
			(*nonzero)++;
	}
	mutex_unlock(&core->lock);
}

static int simgpu_mig_vram_read(struct gpumig_mig *m, u64 off, void *buf, u32 len)
{
	struct simgpu_core *core = mig_core(m);
	int ret;

	mutex_lock(&core->lock);
	ret = simgpu_vram_rw(&core->vram, off, buf, len, false);
	mutex_unlock(&core->lock);
	return ret;
}

static int simgpu_mig_vram_write(struct gpumig_mig *m, u64 off, const void *buf, u32 len)
{
	struct simgpu_core *core = mig_core(m);
	int ret = 0;

	mutex_lock(&core->lock);
	if (buf)
		ret = simgpu_vram_rw(&core->vram, off, (void *)buf, len, true);
	else
		simgpu_vram_zero(&core->vram, off, len);
	mutex_unlock(&core->lock);
	return ret;
}

static ssize_t simgpu_mig_arch_save(struct gpumig_mig *m, void *buf, size_t len)
{
	return simgpu_arch_save(mig_core(m), buf, len);
}

static int simgpu_mig_arch_restore(struct gpumig_mig *m, const void *buf, size_t len)
{
	return simgpu_arch_restore(mig_core(m), buf, len);
}

/* Before the instance is released or reused: stopped, nothing cached. */
static int simgpu_mig_teardown_check(struct gpumig_mig *m, char *why, size_t len)
{
	struct simgpu_core *core = mig_core(m);

	if (core->thread) {
		snprintf(why, len, "command processor still running");
		return -EBUSY;
	}
	if (!simgpu_tlb_empty(core)) {
		snprintf(why, len, "translations still cached: invalidation was not acknowledged");
		return -EBUSY;
	}
	return 0;
}

static const struct gpumig_backend_ops simgpu_backend_ops = {
	.quiesce = simgpu_mig_quiesce,
	.unquiesce = simgpu_mig_unquiesce,
	.invalidate = simgpu_mig_invalidate,
	.vram_track = simgpu_mig_track,
	.vram_next_dirty = simgpu_mig_next_dirty,
	.vram_dirty_count = simgpu_mig_dirty_count,
	.vram_read = simgpu_mig_vram_read,
	.vram_write = simgpu_mig_vram_write,
	.arch_save = simgpu_mig_arch_save,
	.arch_restore = simgpu_mig_arch_restore,
	.teardown_check = simgpu_mig_teardown_check,
};

static struct file *simgpu_set_state(struct vfio_device *vdev,
				     enum vfio_device_mig_state new_state)
{
	return gpumig_mig_set_state(&to_simgpu(vdev)->mig, new_state);
}

static int simgpu_get_state(struct vfio_device *vdev, enum vfio_device_mig_state *state)
{
	return gpumig_mig_get_state(&to_simgpu(vdev)->mig, state);
}

static int simgpu_get_data_size(struct vfio_device *vdev, unsigned long *len)
{
	return gpumig_mig_data_size(&to_simgpu(vdev)->mig, len);
}

/*
 * DMA logging: offered only where the kernel can carry the reports.  A
 * kernel built without CONFIG_IOMMUFD_DRIVER (Debian's 6.12) fails every
 * DMA_LOGGING_REPORT in the VFIO core before a driver is asked, and QEMU
 * then aborts the migration of a device that claimed log_ops; without
 * them QEMU treats all guest memory as dirty, which is slower but right.
 */
#if IS_ENABLED(CONFIG_IOMMUFD_DRIVER)
static int simgpu_log_start(struct vfio_device *vdev, struct rb_root_cached *ranges,
			    u32 nnodes, u64 *page_size)
{
	return gpumig_dirty_start(&to_simgpu(vdev)->dirty, ranges, nnodes, page_size);
}

static int simgpu_log_stop(struct vfio_device *vdev)
{
	gpumig_dirty_stop(&to_simgpu(vdev)->dirty);
	return 0;
}

struct simgpu_log_report {
	struct iova_bitmap *bitmap;
	bool first_done;
	u64 bitmap_ns;
};

/*
 * For the benchmark, the first iova_bitmap_set() of a report is timed
 * apart: there the VFIO core pins the user's bitmap (up to 2 MiB of it),
 * a cost that follows the range's size and is not the tracker's.  Only
 * the first: a clock read per page would cost more than the report.
 */
static void simgpu_log_report(void *ctx, u64 iova, u64 len)
{
	struct simgpu_log_report *r = ctx;
	u64 t0;

	if (r->first_done) {
		iova_bitmap_set(r->bitmap, iova, len);
		return;
	}
	t0 = ktime_get_ns();
	iova_bitmap_set(r->bitmap, iova, len);
	r->bitmap_ns = ktime_get_ns() - t0;
	r->first_done = true;
}

static int simgpu_log_read_and_clear(struct vfio_device *vdev, unsigned long iova,
				     unsigned long length, struct iova_bitmap *dirty)
{
	struct simgpu_log_report r = { .bitmap = dirty };
	struct simgpu_dev *sdev = to_simgpu(vdev);
	u64 t0 = ktime_get_ns();
	int ret;

	ret = gpumig_dirty_collect(&sdev->dirty, iova, length, simgpu_log_report, &r);
	atomic64_add(ktime_get_ns() - t0, &sdev->log_report_ns);
	atomic64_add(r.bitmap_ns, &sdev->log_bitmap_ns);
	atomic64_inc(&sdev->log_reports);
	return ret;
}

static const struct vfio_log_ops simgpu_log_ops = {
	.log_start = simgpu_log_start,
	.log_stop = simgpu_log_stop,
	.log_read_and_clear = simgpu_log_read_and_clear,
};

#define SIMGPU_LOG_OPS		(&simgpu_log_ops)
#else
#define SIMGPU_LOG_OPS		NULL
#endif

/**
 * simgpu_dirty_tracking() - how guest memory dirtied by the device is found
 *
 * Return: "device" when the module offers DMA logging, else "none".
 */
const char *simgpu_dirty_tracking(void)
{
	return IS_ENABLED(CONFIG_IOMMUFD_DRIVER) ? "device" : "none";
}

static const struct vfio_migration_ops simgpu_mig_ops = {
	.migration_set_state = simgpu_set_state,
	.migration_get_state = simgpu_get_state,
	.migration_get_data_size = simgpu_get_data_size,
};

/**
 * simgpu_compat() - the compatibility descriptor of a type
 * @t: type
 * @c: descriptor
 */
void simgpu_compat(const struct simgpu_type *t, struct gpumig_compat *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->type_name, sizeof(c->type_name), "simgpu-%s", t->type.sysfs_name);
	c->vram_size = t->vram;
	c->backend = GPUMIG_BACKEND_SIMGPU;
	c->nr_queues = t->queues;
	c->features = SIMGPU_CAP_PREEMPT | SIMGPU_CAP_DIRTY_WORKLOAD;
	c->page_size = SIMGPU_PAGE_SIZE;
	c->arch_version = 1;
}

static ssize_t compat_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);

	return gpumig_compat_format(&sdev->mig.compat, buf, PAGE_SIZE);
}
static DEVICE_ATTR_RO(compat);

static ssize_t status_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct simgpu_dev *sdev = dev_get_drvdata(dev);
	struct gpumig_mig_status st;
	ssize_t n;

	gpumig_mig_status(&sdev->mig, &st);
	if (st.quarantined)
		return sysfs_emit(buf, "%s\n", st.why);
	n = sysfs_emit(buf, "migratable state=%u dirty_tracking=%s", st.state,
		       simgpu_dirty_tracking());
	n += sysfs_emit_at(buf, n, " precopy_rounds=%llu precopy_bytes=%llu",
			   st.precopy_rounds, st.precopy_bytes);
	n += sysfs_emit_at(buf, n, " stopcopy_bytes=%llu resumed_bytes=%llu",
			   st.stopcopy_bytes, st.resumed_bytes);
	n += sysfs_emit_at(buf, n, "%s%s\n", st.why[0] ? " last_error=" : "", st.why);
	return n;
}
static DEVICE_ATTR_RO(status);

static struct attribute *simgpu_mig_attrs[] = {
	&dev_attr_compat.attr,
	&dev_attr_status.attr,
	NULL,
};

const struct attribute_group simgpu_mig_group = {
	.name = "migration",
	.attrs = simgpu_mig_attrs,
};

static int simgpu_init_dev(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);
	struct mdev_device *mdev = to_mdev_device(vdev->dev);
	const struct simgpu_type *type = to_simgpu_type(mdev->type);
	int ret;

	ret = simgpu_budget_take(type->vram);
	if (ret)
		return ret;
	ret = simgpu_core_init(&sdev->core, &simgpu_vfio_env, sdev, type->queues,
			       type->vram);
	if (ret) {
		simgpu_budget_put(type->vram);
		return ret;
	}
	sdev->type = type;
	{
		struct gpumig_compat c;

		simgpu_compat(type, &c);
		gpumig_mig_init(&sdev->mig, vdev, &simgpu_backend_ops, sdev, &c);
	}
	vdev->migration_flags = VFIO_MIGRATION_STOP_COPY | VFIO_MIGRATION_P2P |
				VFIO_MIGRATION_PRE_COPY;
	vdev->mig_ops = &simgpu_mig_ops;
	vdev->log_ops = SIMGPU_LOG_OPS;
	gpumig_dirty_init(&sdev->dirty);
	mutex_init(&sdev->cfg_lock);
	spin_lock_init(&sdev->irq_lock);
	simgpu_cfg_init(sdev);
	return 0;
}

static void simgpu_release_dev(struct vfio_device *vdev)
{
	struct simgpu_dev *sdev = to_simgpu(vdev);

	gpumig_mig_destroy(&sdev->mig);
	simgpu_core_destroy(&sdev->core);
	gpumig_dirty_destroy(&sdev->dirty);
	mutex_destroy(&sdev->cfg_lock);
	simgpu_budget_put(sdev->type->vram);
}

const struct vfio_device_ops simgpu_vfio_ops = {
	.name = "simgpu",
	.init = simgpu_init_dev,
	.release = simgpu_release_dev,
	.open_device = simgpu_open_device,
	.close_device = simgpu_close_device,
	.read = simgpu_read,
	.write = simgpu_write,
	.ioctl = simgpu_ioctl,
	.request = simgpu_request,
	.dma_unmap = simgpu_dma_unmap,
	.bind_iommufd = vfio_iommufd_emulated_bind,
	.unbind_iommufd = vfio_iommufd_emulated_unbind,
	.attach_ioas = vfio_iommufd_emulated_attach_ioas,
	.detach_ioas = vfio_iommufd_emulated_detach_ioas,
};

static int simgpu_stats_show(struct seq_file *m, void *v)
{
	struct simgpu_core *core = m->private;
	struct simgpu_dev *sdev = container_of(core, struct simgpu_dev, core);
	struct simgpu_stats s;
	unsigned long present;
	size_t log_bytes;

	mutex_lock(&core->lock);
	s = core->stats;
	present = core->vram.present;
	mutex_unlock(&core->lock);
	seq_printf(m, "commands %llu\nbytes %llu\nkernel_steps %llu\nfaults %llu\n",
		   s.cmds, s.bytes, s.kernel_steps, s.faults);
	seq_printf(m, "invalidations %llu\ninvalidations_dropped %llu\nirqs %llu\n",
		   s.invalidations, s.inval_dropped, s.irqs);
	seq_printf(m, "tlb_hits %llu\ntlb_misses %llu\ndirty_pages %llu\nvram_pages_backed %lu\n",
		   s.tlb_hits, s.tlb_misses, s.dirty_pages, present);
	mutex_lock(&sdev->dirty.lock);
	log_bytes = sdev->dirty.bytes;
	mutex_unlock(&sdev->dirty.lock);
	seq_printf(m, "dma_log_bytes %zu\ndma_log_reports %lld\ndma_log_report_ns %lld\n",
		   log_bytes, atomic64_read(&sdev->log_reports),
		   atomic64_read(&sdev->log_report_ns));
	seq_printf(m, "dma_log_bitmap_ns %lld\n", atomic64_read(&sdev->log_bitmap_ns));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(simgpu_stats);

/* Reset and scrub: what a verified teardown would have done. */
static void simgpu_release_quarantined(struct gpumig_mig *m)
{
	struct simgpu_dev *sdev = m->priv;

	simgpu_reset(sdev);
	mutex_lock(&sdev->core.lock);
	simgpu_vram_scrub(&sdev->core.vram);
	mutex_unlock(&sdev->core.lock);
}

/* An operator who checked a quarantined instance releases it here. */
static int simgpu_unquarantine_set(void *data, u64 val)
{
	struct simgpu_dev *sdev = data;

	if (val != 1)
		return -EINVAL;
	return gpumig_mig_unquarantine(&sdev->mig, simgpu_release_quarantined);
}
DEFINE_DEBUGFS_ATTRIBUTE(simgpu_unquarantine_fops, NULL, simgpu_unquarantine_set, "%llu\n");

static void simgpu_debugfs_init(struct simgpu_dev *sdev, struct dentry *root)
{
	struct simgpu_knobs *k = &sdev->core.knobs;
	struct dentry *d;

	d = debugfs_create_dir(dev_name(sdev->vdev.dev), root);
	sdev->debugfs = d;
	debugfs_create_u32("throttle_us", 0600, d, &k->throttle_us);
	debugfs_create_u32("kernel_step_us", 0600, d, &k->kernel_step_us);
	debugfs_create_bool("preempt", 0600, d, &k->preempt);
	debugfs_create_u32("ack_delay_ms", 0600, d, &k->ack_delay_ms);
	debugfs_create_bool("ack_drop", 0600, d, &k->ack_drop);
	debugfs_create_u32("dirty_rate", 0600, d, &k->dirty_rate);
	debugfs_create_file("stats", 0400, d, &sdev->core, &simgpu_stats_fops);
	debugfs_create_file_unsafe("unquarantine", 0200, d, sdev, &simgpu_unquarantine_fops);
}

int simgpu_probe(struct mdev_device *mdev)
{
	struct simgpu_dev *sdev;
	int ret;

	sdev = vfio_alloc_device(simgpu_dev, vdev, &mdev->dev, &simgpu_vfio_ops);
	if (IS_ERR(sdev))
		return PTR_ERR(sdev);
	ret = vfio_register_emulated_iommu_dev(&sdev->vdev);
	if (ret) {
		vfio_put_device(&sdev->vdev);
		return ret;
	}
	dev_set_drvdata(&mdev->dev, sdev);
	simgpu_debugfs_init(sdev, simgpu_debugfs_root);
	return 0;
}

void simgpu_remove(struct mdev_device *mdev)
{
	struct simgpu_dev *sdev = dev_get_drvdata(&mdev->dev);

	debugfs_remove_recursive(sdev->debugfs);
	vfio_unregister_group_dev(&sdev->vdev);
	vfio_put_device(&sdev->vdev);
}
