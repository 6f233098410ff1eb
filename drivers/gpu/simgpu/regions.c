// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu's VFIO regions: config space (byte, word or dword accesses) and
 * BAR0 (32-bit registers, accessed whole).  Each region sits at its index
 * shifted by SIMGPU_REGION_SHIFT in the device fd; the others are empty.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/uaccess.h>
#include <linux/vfio.h>

#include "simgpu_mdev.h"

#define SIMGPU_REGION_SHIFT	40
#define SIMGPU_REGION_MASK	((1ULL << SIMGPU_REGION_SHIFT) - 1)

/* Fill @info (its index and argsz given) for region @info->index. */
static int simgpu_region_info_fill(struct vfio_region_info *info)
{
	if (info->index >= VFIO_PCI_NUM_REGIONS)
		return -EINVAL;
	info->offset = (u64)info->index << SIMGPU_REGION_SHIFT;
	info->cap_offset = 0;
	switch (info->index) {
	case VFIO_PCI_CONFIG_REGION_INDEX:
		info->size = SIMGPU_CFG_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		break;
	case VFIO_PCI_BAR0_REGION_INDEX:
		info->size = SIMGPU_BAR0_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		break;
	default:
		info->size = 0;
		info->flags = 0;
		break;
	}
	return 0;
}

#ifdef GPUMIG_HAVE_REGION_INFO_CAPS
/**
 * simgpu_region_info_caps() - vfio_device_ops.get_region_info_caps
 * @vdev: device
 * @info: the region's info, copied in and out by the VFIO core
 * @caps: capabilities (simgpu's regions have none)
 *
 * Kernels whose VFIO core answers VFIO_DEVICE_GET_REGION_INFO itself
 * (7.3 does; 6.12 passes the ioctl on) ask the driver through this.
 *
 * Return: 0 or -EINVAL.
 */
int simgpu_region_info_caps(struct vfio_device *vdev, struct vfio_region_info *info,
			    struct vfio_info_cap *caps)
{
	return simgpu_region_info_fill(info);
}
#else
/**
 * simgpu_region_info() - VFIO_DEVICE_GET_REGION_INFO
 * @arg: the user's struct vfio_region_info
 *
 * Return: 0 or a negative errno.
 */
int simgpu_region_info(unsigned long arg)
{
	unsigned long minsz = offsetofend(struct vfio_region_info, offset);
	struct vfio_region_info info;
	int ret;

	if (copy_from_user(&info, (void __user *)arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz)
		return -EINVAL;
	ret = simgpu_region_info_fill(&info);
	if (ret)
		return ret;
	return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
}
#endif

/* Width of the next access at @pos with @left bytes to go, or 0 if none fits. */
static u32 simgpu_access_len(unsigned int index, u64 pos, size_t left)
{
	if (index == VFIO_PCI_CONFIG_REGION_INDEX) {
		if (pos >= SIMGPU_CFG_SIZE)
			return 0;
		return (left >= 4 && !(pos & 3)) ? 4 : (left >= 2 && !(pos & 1)) ? 2 : 1;
	}
	if (index == VFIO_PCI_BAR0_REGION_INDEX)
		return pos < SIMGPU_BAR0_SIZE && !(pos & 3) && left >= 4 ? 4 : 0;
	return 0;
}

static u32 simgpu_access(struct simgpu_dev *sdev, unsigned int index, u64 pos,
			 u32 val, u32 len, bool write)
{
	if (index == VFIO_PCI_BAR0_REGION_INDEX) {
		if (!write)
			return simgpu_mmio_read(&sdev->core, pos);
		simgpu_mmio_write(&sdev->core, pos, val);
	} else {
		if (!write)
			return simgpu_cfg_read(sdev, pos, len);
		simgpu_cfg_write(sdev, pos, val, len);
	}
	return 0;
}

/**
 * simgpu_region_rw() - vfio_device_ops.read and .write
 * @sdev: device
 * @buf: the user's buffer
 * @count: bytes
 * @ppos: region index and offset
 * @write: write @buf to the device
 *
 * Return: bytes done, or a negative errno when none could be.
 */
ssize_t simgpu_region_rw(struct simgpu_dev *sdev, char __user *buf, size_t count,
			 loff_t *ppos, bool write)
{
	unsigned int index = *ppos >> SIMGPU_REGION_SHIFT;
	u64 pos = *ppos & SIMGPU_REGION_MASK;
	size_t done = 0;

	while (done < count) {
		u32 len = simgpu_access_len(index, pos, count - done);
		__le32 val = 0;

		if (!len)
			return done ? done : -EINVAL;
		if (write) {
			if (copy_from_user(&val, buf + done, len))
				return -EFAULT;
			simgpu_access(sdev, index, pos, le32_to_cpu(val), len, true);
		} else {
			val = cpu_to_le32(simgpu_access(sdev, index, pos, 0, len, false));
			if (copy_to_user(buf + done, &val, len))
				return -EFAULT;
		}
		done += len;
		pos += len;
	}
	*ppos += done;
	return done;
}
