// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-guest: /dev/simgpuN (linux/simgpu_guest.h).  Buffers belong to
 * the open file and go with it; a guest-memory buffer can be mmap()ed and
 * is not freed while it is.  Commands are passed to the device as they
 * come: the device checks them, and what it refuses comes back as an
 * error of the fence (SGG_IOCTL_WAIT) and in the error log.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "sgg.h"

static int sgg_open(struct inode *inode, struct file *f)
{
	struct sgg_dev *s = container_of(f->private_data, struct sgg_dev, misc);
	struct sgg_file *sf = kzalloc(sizeof(*sf), GFP_KERNEL);

	if (!sf)
		return -ENOMEM;
	sf->s = s;
	sf->mapping = f->f_mapping;
	xa_init_flags(&sf->bos, XA_FLAGS_ALLOC1);
	mutex_lock(&s->lock);
	if (s->gone) {
		mutex_unlock(&s->lock);
		kfree(sf);
		return -ENODEV;
	}
	kref_get(&s->ref);
	list_add(&sf->node, &s->files);
	mutex_unlock(&s->lock);
	f->private_data = sf;
	return 0;
}

/*
 * Out of the GPU's address space, then freed: lock held.  Once the device
 * went, its translations went with it and the memory is freed already.
 */
static int sgg_bo_free(struct sgg_dev *s, struct sgg_bo *bo)
{
	int ret = s->gone ? 0 : sgg_unmap(s, bo->gpu_va, bo->size);

	if (ret)
		return ret;	/* the device may still use it: kept */
	if (bo->domain == SGG_DOMAIN_VRAM)
		bitmap_clear(s->vram_map, bo->vram_off >> SIMGPU_PAGE_SHIFT,
			     bo->size >> SIMGPU_PAGE_SHIFT);
	else if (bo->cpu)
		dma_free_coherent(&s->pdev->dev, bo->size, bo->cpu, bo->dma);
	kfree(bo);
	return 0;
}

/**
 * sgg_cdev_gone() - the device is going: its memory goes before it
 * @s: device, lock held, marked gone and stopped
 *
 * User mappings of every guest-memory buffer are zapped (an access after
 * this is SIGBUS) and the buffers' DMA memory freed, so nothing of the
 * device's DMA outlives its driver; the buffers themselves stay until
 * their files close.
 */
void sgg_cdev_gone(struct sgg_dev *s)
{
	struct sgg_file *sf;
	struct sgg_bo *bo;
	unsigned long h;

	lockdep_assert_held(&s->lock);
	list_for_each_entry(sf, &s->files, node) {
		unmap_mapping_range(sf->mapping, 0, 0, 1);
		xa_for_each(&sf->bos, h, bo) {
			if (bo->domain != SGG_DOMAIN_SYS || !bo->cpu)
				continue;
			dma_free_coherent(&s->pdev->dev, bo->size, bo->cpu, bo->dma);
			bo->cpu = NULL;
		}
	}
}

static int sgg_release_file(struct inode *inode, struct file *f)
{
	struct sgg_file *sf = f->private_data;
	struct sgg_dev *s = sf->s;
	struct sgg_bo *bo;
	unsigned long h;

	mutex_lock(&s->lock);
	/* the device's own use of a buffer ends with the writer and its queues */
	if (!s->gone && !s->resetting)
		sgg_wr(s, SIMGPU_REG_DIRTY_PAGES, 0);
	xa_for_each(&sf->bos, h, bo)
		if (sgg_bo_free(s, bo))
			dev_warn(&s->pdev->dev, "a buffer stays allocated: its unmap was not acknowledged\n");
	list_del(&sf->node);
	mutex_unlock(&s->lock);
	xa_destroy(&sf->bos);
	kfree(sf);
	sgg_put(s);
	return 0;
}

static int sgg_ioc_bo_create(struct sgg_file *sf, struct sgg_bo_create *a)
{
	struct sgg_dev *s = sf->s;
	unsigned long pages, off;
	struct sgg_bo *bo;
	u32 handle;
	int ret;

	if (!a->size || a->size > s->vram_size || a->domain > SGG_DOMAIN_VRAM)
		return -EINVAL;
	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	bo->size = PAGE_ALIGN(a->size);
	bo->domain = a->domain;
	pages = bo->size >> SIMGPU_PAGE_SHIFT;
	mutex_lock(&s->lock);
	ret = -ENODEV;
	if (s->gone)
		goto err;
	if (bo->domain == SGG_DOMAIN_VRAM) {
		off = bitmap_find_next_zero_area(s->vram_map, s->vram_size >> SIMGPU_PAGE_SHIFT,
						 0, pages, 0);
		ret = -ENOSPC;
		if (off >= s->vram_size >> SIMGPU_PAGE_SHIFT)
			goto err;
		bitmap_set(s->vram_map, off, pages);
		bo->vram_off = (u64)off << SIMGPU_PAGE_SHIFT;
		bo->gpu_va = SGG_VA_VRAM + bo->vram_off;
		ret = sgg_map(s, bo->gpu_va, bo->vram_off, bo->size,
			      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
		if (ret) {
			bitmap_clear(s->vram_map, off, pages);
			goto err;
		}
	} else {
		ret = -E2BIG;
		if (bo->size > SGG_SYS_MAX)
			goto err;
		ret = -ENOSPC;
		if (s->sys_next + bo->size > SGG_VA_END)
			goto err;
		ret = -ENOMEM;
		bo->cpu = dma_alloc_coherent(&s->pdev->dev, bo->size, &bo->dma, GFP_KERNEL);
		if (!bo->cpu)
			goto err;
		bo->gpu_va = s->sys_next;
		ret = sgg_map(s, bo->gpu_va, bo->dma, bo->size, SIMGPU_PTE_WRITE);
		if (ret) {
			dma_free_coherent(&s->pdev->dev, bo->size, bo->cpu, bo->dma);
			goto err;
		}
		s->sys_next += bo->size + SIMGPU_PAGE_SIZE;	/* a guard page */
	}
	ret = xa_alloc(&sf->bos, &handle, bo, xa_limit_31b, GFP_KERNEL);
	if (ret) {
		sgg_bo_free(s, bo);
		mutex_unlock(&s->lock);
		return ret;
	}
	mutex_unlock(&s->lock);
	bo->handle = handle;
	a->handle = handle;
	a->gpu_va = bo->gpu_va;
	a->mmap_offset = bo->domain == SGG_DOMAIN_SYS ? (u64)handle << 32 : 0;
	return 0;
err:
	mutex_unlock(&s->lock);
	kfree(bo);
	return ret;
}

static int sgg_ioc_bo_destroy(struct sgg_file *sf, u32 handle)
{
	struct sgg_dev *s = sf->s;
	struct sgg_bo *bo;
	int ret;

	mutex_lock(&s->lock);
	bo = xa_load(&sf->bos, handle);
	ret = -ENOENT;
	if (!bo)
		goto out;
	ret = -EBUSY;
	if (atomic_read(&bo->mapped))
		goto out;
	if (bo->domain == SGG_DOMAIN_VRAM && !s->gone && !s->resetting) {
		u64 base = sgg_rd(s, SIMGPU_REG_DIRTY_BASE_LO) |
			   (u64)sgg_rd(s, SIMGPU_REG_DIRTY_BASE_HI) << 32;

		if (sgg_rd(s, SIMGPU_REG_DIRTY_PAGES) && base >= bo->gpu_va &&
		    base < bo->gpu_va + bo->size)
			sgg_wr(s, SIMGPU_REG_DIRTY_PAGES, 0);
	}
	xa_erase(&sf->bos, handle);
	ret = sgg_bo_free(s, bo);
	if (ret)
		xa_store(&sf->bos, handle, bo, GFP_KERNEL);
out:
	mutex_unlock(&s->lock);
	return ret;
}

static int sgg_ioc_submit(struct sgg_file *sf, struct sgg_submit *a)
{
	struct sgg_dev *s = sf->s;
	struct simgpu_cmd cmd = { };
	int i, ret;

	if (a->queue >= s->nr_queues)
		return -EINVAL;
	switch (a->op) {
	case SIMGPU_OP_NOP:
	case SIMGPU_OP_FILL:
	case SIMGPU_OP_COPY:
	case SIMGPU_OP_KERNEL:
		break;
	default:
		return -EINVAL;	/* FENCE is the driver's */
	}
	cmd.opcode = cpu_to_le32(a->op);
	for (i = 0; i < ARRAY_SIZE(a->args); i++)
		cmd.args[i] = cpu_to_le64(a->args[i]);
	mutex_lock(&s->lock);
	ret = s->gone ? -ENODEV : sgg_submit(s, a->queue, &cmd, &a->fence);
	mutex_unlock(&s->lock);
	return ret;
}

static int sgg_ioc_errors(struct sgg_dev *s, struct sgg_errors *e)
{
	spin_lock_irq(&s->irq_lock);
	e->count = s->nr_log;
	e->lost = s->lost;
	memcpy(e->e, s->log, sizeof(s->log[0]) * s->nr_log);
	s->nr_log = 0;
	s->lost = 0;
	spin_unlock_irq(&s->irq_lock);
	return 0;
}

static int sgg_ioc_dirty(struct sgg_file *sf, struct sgg_dirty *a)
{
	struct sgg_dev *s = sf->s;
	struct sgg_bo *bo;
	int ret = 0;

	if (!(s->caps & SIMGPU_CAP_DIRTY_WORKLOAD))
		return -EOPNOTSUPP;
	mutex_lock(&s->lock);
	bo = xa_load(&sf->bos, a->handle);
	if (s->gone || s->resetting) {
		ret = -ENODEV;
	} else if (!bo || (u64)a->pages << SIMGPU_PAGE_SHIFT > bo->size) {
		ret = -EINVAL;
	} else {
		sgg_wr(s, SIMGPU_REG_DIRTY_PAGES, 0);
		sgg_wr(s, SIMGPU_REG_DIRTY_BASE_LO, lower_32_bits(bo->gpu_va));
		sgg_wr(s, SIMGPU_REG_DIRTY_BASE_HI, upper_32_bits(bo->gpu_va));
		sgg_wr(s, SIMGPU_REG_DIRTY_PAGES, a->pages);
	}
	mutex_unlock(&s->lock);
	return ret;
}

static long sgg_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct sgg_file *sf = f->private_data;
	struct sgg_dev *s = sf->s;
	void __user *up = (void __user *)arg;
	union {
		struct sgg_info info;
		struct sgg_bo_create bc;
		struct sgg_bo_destroy bd;
		struct sgg_submit sub;
		struct sgg_wait w;
		struct sgg_errors e;
		struct sgg_dirty d;
	} *a;
	int ret;

	if (_IOC_TYPE(cmd) != SGG_IOCTL_BASE || _IOC_SIZE(cmd) > sizeof(*a))
		return -ENOTTY;
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(a, up, _IOC_SIZE(cmd))) {
		ret = -EFAULT;
		goto out;
	}
	switch (cmd) {
	case SGG_IOCTL_INFO:
		a->info = (struct sgg_info){
			.abi = SGG_ABI_VERSION, .device_abi = s->device_abi,
			.queues = s->nr_queues, .caps = s->caps, .vram_size = s->vram_size,
			.errors = READ_ONCE(s->errors), .resets = READ_ONCE(s->resets) };
		ret = 0;
		break;
	case SGG_IOCTL_BO_CREATE:
		ret = sgg_ioc_bo_create(sf, &a->bc);
		break;
	case SGG_IOCTL_BO_DESTROY:
		ret = sgg_ioc_bo_destroy(sf, a->bd.handle);
		break;
	case SGG_IOCTL_SUBMIT:
		ret = sgg_ioc_submit(sf, &a->sub);
		break;
	case SGG_IOCTL_WAIT:
		ret = sgg_wait(s, &a->w);
		break;
	case SGG_IOCTL_ERRORS:
		ret = sgg_ioc_errors(s, &a->e);
		break;
	case SGG_IOCTL_DIRTY:
		ret = sgg_ioc_dirty(sf, &a->d);
		break;
	default:
		ret = -ENOTTY;
		goto out;
	}
	/* WAIT's error is an answer too */
	if ((!ret || (cmd == SGG_IOCTL_WAIT && ret == -EIO)) && (_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(up, a, _IOC_SIZE(cmd)))
		ret = -EFAULT;
out:
	kfree(a);
	return ret;
}

static void sgg_vm_open(struct vm_area_struct *vma)
{
	struct sgg_bo *bo = vma->vm_private_data;

	atomic_inc(&bo->mapped);
}

static void sgg_vm_close(struct vm_area_struct *vma)
{
	struct sgg_bo *bo = vma->vm_private_data;

	atomic_dec(&bo->mapped);
}

static const struct vm_operations_struct sgg_vm_ops = {
	.open = sgg_vm_open,
	.close = sgg_vm_close,
};

/* A guest-memory buffer at its mmap_offset, at most its size. */
static int sgg_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct sgg_file *sf = f->private_data;
	struct sgg_dev *s = sf->s;
	unsigned long len = vma->vm_end - vma->vm_start;
	struct sgg_bo *bo;
	int ret;

	if (vma->vm_pgoff & ((1UL << (32 - PAGE_SHIFT)) - 1))
		return -EINVAL;
	mutex_lock(&s->lock);
	bo = xa_load(&sf->bos, vma->vm_pgoff >> (32 - PAGE_SHIFT));
	ret = -ENODEV;
	if (s->gone)
		goto out;
	ret = -EINVAL;
	if (!bo || bo->domain != SGG_DOMAIN_SYS || !bo->cpu || len > bo->size)
		goto out;
	vma->vm_pgoff = 0;
	ret = dma_mmap_coherent(&s->pdev->dev, vma, bo->cpu, bo->dma, len);
	if (ret)
		goto out;
	vma->vm_private_data = bo;
	vma->vm_ops = &sgg_vm_ops;
	atomic_inc(&bo->mapped);
out:
	mutex_unlock(&s->lock);
	return ret;
}

static const struct file_operations sgg_fops = {
	.owner = THIS_MODULE,
	.open = sgg_open,
	.release = sgg_release_file,
	.unlocked_ioctl = sgg_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = sgg_mmap,
};

int sgg_cdev_register(struct sgg_dev *s)
{
	int ret;

	s->misc = (struct miscdevice){
		.minor = MISC_DYNAMIC_MINOR, .name = s->name, .fops = &sgg_fops,
		.parent = &s->pdev->dev };
	ret = misc_register(&s->misc);
	s->registered = !ret;
	return ret;
}

void sgg_cdev_unregister(struct sgg_dev *s)
{
	if (s->registered)
		misc_deregister(&s->misc);
	s->registered = false;
}
