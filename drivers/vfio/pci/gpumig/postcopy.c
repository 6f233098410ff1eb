// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-vfio-pci: post-copy of a VF's VRAM (Documentation/gpumig/
 * postcopy.rst).  The engine's post-copy ops over the provider's (a
 * destination's absent blocks, a source's hold), and the VF's VRAM
 * aperture while blocks are absent.  The device parks its own accesses to
 * an absent block, but the CPU's through the aperture never reach it: so
 * this driver maps the aperture itself, a 2 MiB window (a huge page where
 * the kernel has them) at a fault where all of its blocks are present,
 * page by page near absent ones, and a fault on an absent
 * block asks the mover for it first and waits for it, killably and never
 * under vfio-pci-core's memory lock; once the block is lost it fails with
 * VM_FAULT_HWPOISON (a machine check in a KVM guest).  Before the device
 * runs, such a fault fails with SIGBUS instead: a VMM that sets up peer
 * DMA to the aperture while the device is being restored (QEMU's type1
 * mapping faults every page in at once) must not wait on the mover, and
 * QEMU runs on without peer DMA to that BAR.  The mapping of a page
 * present at that time stays with the IOMMU: peer DMA into a post-copy
 * destination is not supported.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>

#include <gpumig/compat.h>

#include "gpumig_vfio_pci.h"

static struct gpumig_vf *gvp_pc_vf(void *priv)
{
	return ((struct gvp_glue *)priv)->vf;
}

/* Both maps go, and every fault that waits looks again. */
static void gvp_pc_forget(struct gvp_glue *gl)
{
	unsigned long *absent, *lost;

	spin_lock(&gl->pc_lock);
	absent = gl->absent;
	lost = gl->lost;
	gl->absent = NULL;
	gl->lost = NULL;
	spin_unlock(&gl->pc_lock);
	bitmap_free(absent);
	bitmap_free(lost);
	wake_up_all(&gl->pc_wq);
}

/* Every mapping of the aperture goes: each page faults again (gvp_aperture_fault()). */
static void gvp_pc_unmap(struct gvp_glue *gl)
{
	if (gl->mapping && gl->vf->vram_bar >= 0)
		unmap_mapping_range(gl->mapping, VFIO_PCI_INDEX_TO_OFFSET(gl->vf->vram_bar),
				    gl->aperture_len, true);
}

static int gvp_vram_absent(void *priv, const unsigned long *map, unsigned long nr)
{
	struct gvp_glue *gl = priv;
	unsigned long *absent, *lost;
	int ret;

	absent = bitmap_zalloc(nr, GFP_KERNEL_ACCOUNT);
	lost = bitmap_zalloc(nr, GFP_KERNEL_ACCOUNT);
	if (!absent || !lost) {
		bitmap_free(absent);
		bitmap_free(lost);
		return -ENOMEM;
	}
	bitmap_copy(absent, map, nr);
	ret = gl->vf->ops->vram_absent(gl->vf, map, nr);
	if (ret) {
		bitmap_free(absent);
		bitmap_free(lost);
		return ret;
	}
	gvp_pc_forget(gl);
	/*
	 * Published and zapped under @map_sem: a fault that found the block
	 * present before this inserts its page under that lock too, so it
	 * either finishes before the zap (which removes it) or sees the
	 * block absent.  (Not vfio-pci-core's memory_lock: this runs under
	 * the resuming file's lock, which a reset takes under memory_lock.)
	 */
	down_write(&gl->map_sem);
	spin_lock(&gl->pc_lock);
	gl->absent = absent;
	gl->lost = lost;
	gl->pc_blocks = nr;
	spin_unlock(&gl->pc_lock);
	gvp_pc_unmap(gl);
	up_write(&gl->map_sem);
	return 0;
}

static int gvp_vram_deliver(void *priv, unsigned long blk, const void *buf, u32 len)
{
	struct gvp_glue *gl = priv;
	int ret = gl->vf->ops->vram_deliver(gl->vf, blk, buf, len);

	if (ret)
		return ret;
	spin_lock(&gl->pc_lock);
	if (gl->absent && blk < gl->pc_blocks)
		__clear_bit(blk, gl->absent);
	spin_unlock(&gl->pc_lock);
	wake_up_all(&gl->pc_wq);
	return 0;
}

/*
 * A block that will never arrive.  Unless the device says it is there
 * (-EALREADY), the aperture treats it as lost whatever the device said:
 * a PF being reset refuses the command, and a fault must not wait for
 * ever on a block nobody will bring.
 */
static int gvp_vram_lose(void *priv, unsigned long blk)
{
	struct gvp_glue *gl = priv;
	int ret = gl->vf->ops->vram_lose(gl->vf, blk);

	if (ret == -EALREADY)
		return ret;
	spin_lock(&gl->pc_lock);
	if (gl->absent && blk < gl->pc_blocks) {
		__clear_bit(blk, gl->absent);
		__set_bit(blk, gl->lost);
	}
	spin_unlock(&gl->pc_lock);
	wake_up_all(&gl->pc_wq);
	return ret;
}

static void *gvp_vram_hold(void *priv, const unsigned long *map, unsigned long nr)
{
	return gvp_pc_vf(priv)->ops->vram_hold(gvp_pc_vf(priv), map, nr);
}

static int gvp_hold_read(void *hold, u64 off, void *buf, u32 len)
{
	struct gpumig_vram_hold *h = hold;

	return h->ops->read(h, off, buf, len);
}

/* The hold keeps its provider loaded: let go of the module once it is gone. */
static void gvp_hold_free(void *hold)
{
	struct gpumig_vram_hold *h = hold;
	struct module *owner = h->owner;

	h->ops->free(h);
	module_put(owner);
}

static void gvp_hold_return(void *priv, void *hold)
{
	struct gpumig_vram_hold *h = hold;
	struct module *owner = h->owner;

	gvp_pc_vf(priv)->ops->hold_return(gvp_pc_vf(priv), h);
	module_put(owner);
}

/**
 * gvp_pc_glue_init() - post-copy's backend ops, where the provider has them
 * @gl: the glue, its ops set
 */
void gvp_pc_glue_init(struct gvp_glue *gl)
{
	const struct gpumig_vf_ops *o = gl->vf->ops;
	struct gpumig_backend_ops *b = &gl->ops;

	spin_lock_init(&gl->pc_lock);
	init_waitqueue_head(&gl->pc_wq);
	init_rwsem(&gl->map_sem);
	b->owner = THIS_MODULE;
	if (o->vram_absent && o->vram_deliver && o->vram_lose) {
		b->vram_absent = gvp_vram_absent;
		b->vram_deliver = gvp_vram_deliver;
		b->vram_lose = gvp_vram_lose;
	}
	if (o->vram_hold && o->hold_return) {
		b->vram_hold = gvp_vram_hold;
		b->hold_read = gvp_hold_read;
		b->hold_return = gvp_hold_return;
		b->hold_free = gvp_hold_free;
		b->hold_outlives_binding = true;	/* the PF keeps it */
	}
}

/**
 * gvp_pc_scrubbed() - the VF's VRAM starts over: nothing is absent or lost
 * @gl: the glue
 */
void gvp_pc_scrubbed(struct gvp_glue *gl)
{
	gvp_pc_forget(gl);
}

/**
 * gvp_pc_release() - the driver lets go of the VF: the maps go with it
 * @gl: the glue
 *
 * A VF whose VRAM was never scrubbed after a post-copy (its PF's driver
 * went, so it was quarantined instead) still has them.
 */
void gvp_pc_release(struct gvp_glue *gl)
{
	gvp_pc_forget(gl);
}

/**
 * gvp_pc_reset() - the VF was reset: its lost blocks read again (as
 *	zeroes), its absent ones stay owed
 * @gl: the glue
 */
void gvp_pc_reset(struct gvp_glue *gl)
{
	spin_lock(&gl->pc_lock);
	if (gl->lost)
		bitmap_zero(gl->lost, gl->pc_blocks);
	spin_unlock(&gl->pc_lock);
}

/* ---- the aperture ------------------------------------------------------- */

/* 1: absent, 2: lost, 0: neither. */
static int gvp_pc_block(struct gvp_glue *gl, unsigned long blk)
{
	int st = 0;

	spin_lock(&gl->pc_lock);
	if (gl->absent && blk < gl->pc_blocks)
		st = test_bit(blk, gl->absent) ? 1 : test_bit(blk, gl->lost) ? 2 : 0;
	spin_unlock(&gl->pc_lock);
	return st;
}

/*
 * The aperture's block @blk may be mapped now: 0; or the fault's outcome
 * (a block lost, the device not running yet, a fatal signal).
 */
static vm_fault_t gvp_aperture_wait(struct gvp_dev *g, unsigned long blk)
{
	struct gvp_glue *gl = &g->glue;
	int st = gvp_pc_block(gl, blk);

	if (st == 1) {
		if (!g->mig || !gpumig_mig_device_runs(g->mig))
			return VM_FAULT_SIGBUS;
		gpumig_mig_postcopy_demand(g->mig, blk);
		if (wait_event_killable(gl->pc_wq, gvp_pc_block(gl, blk) != 1))
			return VM_FAULT_SIGBUS;	/* dying: nothing more to wait for */
		st = gvp_pc_block(gl, blk);
	}
	return st == 2 ? VM_FAULT_HWPOISON : 0;
}

/* As vfio-pci-core's own test: the function decodes memory now. */
static bool gvp_memory_enabled(struct vfio_pci_core_device *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	u16 cmd = le16_to_cpu(*(__le16 *)&vdev->vconfig[PCI_COMMAND]);

	lockdep_assert_held(&vdev->memory_lock);
	return !vdev->pm_runtime_engaged &&
	       (__force int)pdev->current_state < (__force int)PCI_D3hot &&
	       (pdev->no_command_memory || (cmd & PCI_COMMAND_MEMORY));
}

/* Nothing in blocks [@first, @last] is absent or lost: a page there may be mapped. */
static bool gvp_pc_range_clear(struct gvp_glue *gl, unsigned long first, unsigned long last)
{
	unsigned long end;
	bool clear = true;

	spin_lock(&gl->pc_lock);
	if (gl->absent && first < gl->pc_blocks) {
		end = min(last + 1, gl->pc_blocks);
		clear = find_next_bit(gl->absent, end, first) >= end &&
			find_next_bit(gl->lost, end, first) >= end;
	}
	spin_unlock(&gl->pc_lock);
	return clear;
}

/* The aperture's page offset (from the BAR's start) of @addr in @vma. */
static unsigned long gvp_aperture_pgoff(struct vm_area_struct *vma, unsigned long addr)
{
	return (vma->vm_pgoff & (BIT(VFIO_PCI_OFFSET_SHIFT - PAGE_SHIFT) - 1)) +
	       ((addr - vma->vm_start) >> PAGE_SHIFT);
}

/*
 * Pages [@start, @end) of @vma, all in present blocks, mapped; under
 * memory_lock (read) and @map_sem.  A huge mapping where the kernel can
 * (@order: PMD or PUD, @start aligned to it and to its pfn), else each
 * page: either way one fault maps a whole window, not one page.  (QEMU's
 * type1 DMA mapping of the aperture faults in every page of it, on the
 * destination inside the downtime: page by page a 256 MiB VF cost 65,536
 * faults, seconds under emulation, where vfio-pci-core's own huge faults
 * cost 128.)
 */
static vm_fault_t gvp_aperture_insert(struct vm_fault *vmf, unsigned long start,
				      unsigned long end, unsigned long pfn, unsigned int order)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr;
	vm_fault_t ret;

#ifdef CONFIG_ARCH_SUPPORTS_PMD_PFNMAP
	if (order == PMD_ORDER)
		return gpumig_insert_pfn_pmd(vmf, pfn);
#endif
#ifdef CONFIG_ARCH_SUPPORTS_PUD_PFNMAP
	if (order == PUD_ORDER)
		return gpumig_insert_pfn_pud(vmf, pfn);
#endif
	if (order)
		return VM_FAULT_FALLBACK;
	ret = vmf_insert_pfn(vma, vmf->address, pfn + ((vmf->address - start) >> PAGE_SHIFT));
	if (ret != VM_FAULT_NOPAGE)
		return ret;
	/* the rest of the window: a page already mapped is left as it is */
	for (addr = start; addr < end; addr += PAGE_SIZE, pfn++)
		if (addr != vmf->address && vmf_insert_pfn(vma, addr, pfn) != VM_FAULT_NOPAGE)
			break;
	return ret;
}

/* The VRAM block of the aperture's page at @addr in @vma. */
static unsigned long gvp_aperture_blk(struct gvp_glue *gl, struct vm_area_struct *vma,
				      unsigned long addr)
{
	return ((u64)gvp_aperture_pgoff(vma, addr) << PAGE_SHIFT) >> gl->block_shift;
}

/*
 * A huge fault holds @map_sem for writing, a page's for reading: a window's
 * pages are never inserted beside the huge entry of a huge fault that
 * found it clear meanwhile (a page's fault may have waited for its block
 * while another block of the window was absent, then another thread's
 * huge fault mapped the window: it sees the huge entry and is done).
 */
static vm_fault_t gvp_aperture_huge_fault(struct vm_fault *vmf, unsigned int order)
{
	struct vm_area_struct *vma = vmf->vma;
	struct vfio_pci_core_device *vdev = vma->vm_private_data;
	struct gvp_dev *g = container_of(vdev, struct gvp_dev, core);
	struct gvp_glue *gl = &g->glue;
	unsigned long pfn = pci_resource_start(vdev->pdev, gl->vf->vram_bar) >> PAGE_SHIFT;
	unsigned long win = order ? PAGE_SIZE << order : PMD_SIZE;
	unsigned long start = max(vmf->address & ~(win - 1), vma->vm_start);
	unsigned long end = min((vmf->address & ~(win - 1)) + win, vma->vm_end);
	unsigned long blk = gvp_aperture_blk(gl, vma, vmf->address);
	vm_fault_t ret;

	if (order && (end - start != win ||
		      !IS_ALIGNED(pfn + gvp_aperture_pgoff(vma, start), 1UL << order)))
		return VM_FAULT_FALLBACK;
	if (!order) {
		ret = gvp_aperture_wait(g, blk);
		if (ret)
			return ret;
	}
	down_read(&vdev->memory_lock);
	if (order)
		down_write(&gl->map_sem);
	else
		down_read(&gl->map_sem);
	if (!gvp_memory_enabled(vdev))
		ret = VM_FAULT_SIGBUS;
	else if (!order && pmd_leaf(pmdp_get_lockless(vmf->pmd)))
		ret = VM_FAULT_NOPAGE;	/* a huge fault mapped the window meanwhile */
	else if (!gvp_pc_range_clear(gl, blk, blk))
		/* absent again meanwhile: fault again (a huge fault: page by page) */
		ret = order ? VM_FAULT_FALLBACK : VM_FAULT_NOPAGE;
	else if (!gvp_pc_range_clear(gl, gvp_aperture_blk(gl, vma, start),
				     gvp_aperture_blk(gl, vma, end - 1)))
		/* the window holds an absent or lost block: this page alone */
		ret = order ? VM_FAULT_FALLBACK :
		      gvp_aperture_insert(vmf, vmf->address, vmf->address + PAGE_SIZE,
					  pfn + gvp_aperture_pgoff(vma, vmf->address), 0);
	else
		ret = gvp_aperture_insert(vmf, start, end, pfn + gvp_aperture_pgoff(vma, start),
					  order);
	if (order)
		up_write(&gl->map_sem);
	else
		up_read(&gl->map_sem);
	up_read(&vdev->memory_lock);
	return ret;
}

static vm_fault_t gvp_aperture_fault(struct vm_fault *vmf)
{
	return gvp_aperture_huge_fault(vmf, 0);
}

static const struct vm_operations_struct gvp_aperture_ops = {
	.fault = gvp_aperture_fault,
#ifdef CONFIG_ARCH_SUPPORTS_HUGE_PFNMAP
	.huge_fault = gvp_aperture_huge_fault,
#endif
};

/**
 * gvp_mmap() - vfio-pci-core's mmap, with the VF's aperture mapped through
 *	gvp_aperture_fault() where post-copy may leave blocks absent
 * @vdev: the VFIO device
 * @vma: the mapping
 *
 * Return: 0 or a negative errno, as vfio_pci_core_mmap().
 */
int gvp_mmap(struct vfio_device *vdev, struct vm_area_struct *vma)
{
	struct gvp_dev *g = to_gvp(vdev);
	unsigned int index = vma->vm_pgoff >> (VFIO_PCI_OFFSET_SHIFT - PAGE_SHIFT);
	int ret = vfio_pci_core_mmap(vdev, vma);

	if (!ret && g->glue.vf && index == g->glue.vf->vram_bar && g->glue.ops.vram_absent)
		vma->vm_ops = &gvp_aperture_ops;
	return ret;
}

/*
 * The aperture read or written through the device fd (pread()/pwrite():
 * QEMU's path for a BAR it does not map, x-no-mmap=on, or any other user)
 * reaches the VF without a fault: each block of [@pos, @pos + @count)
 * that is absent is waited for as a fault waits (the device running), so
 * that no read sees what is not there yet and no write lands under a
 * block that arrives later.  0, or -EIO for a lost block, an absent one
 * before the device runs, or a fatal signal while waiting.  Blocks
 * present once looked at stay so: only a new restore makes blocks absent,
 * and an access racing that one reads a device being restored.
 */
static ssize_t gvp_aperture_rw_wait(struct gvp_dev *g, loff_t pos, size_t count)
{
	struct gvp_glue *gl = &g->glue;
	u64 off = (u64)pos & VFIO_PCI_OFFSET_MASK;
	unsigned long blk, last;

	if (!count || !gl->vf || gl->vf->vram_bar < 0 || !gl->ops.vram_absent ||
	    VFIO_PCI_OFFSET_TO_INDEX((u64)pos) != gl->vf->vram_bar || off >= gl->aperture_len)
		return 0;
	last = (min_t(u64, off + count, gl->aperture_len) - 1) >> gl->block_shift;
	for (blk = off >> gl->block_shift; blk <= last; blk++) {
		if (!gvp_pc_block(gl, blk))
			continue;
		if (gvp_aperture_wait(g, blk))
			return -EIO;
	}
	return 0;
}

/**
 * gvp_read() - vfio-pci-core's read, waiting for absent aperture blocks
 * @vdev: the VFIO device
 * @buf: user buffer
 * @count: bytes
 * @ppos: region offset
 *
 * Return: as vfio_pci_core_read(), or -EIO (gvp_aperture_rw_wait()).
 */
ssize_t gvp_read(struct vfio_device *vdev, char __user *buf, size_t count, loff_t *ppos)
{
	ssize_t ret = gvp_aperture_rw_wait(to_gvp(vdev), *ppos, count);

	return ret ?: vfio_pci_core_read(vdev, buf, count, ppos);
}

/**
 * gvp_write() - vfio-pci-core's write, waiting for absent aperture blocks
 * @vdev: the VFIO device
 * @buf: user buffer
 * @count: bytes
 * @ppos: region offset
 *
 * Return: as vfio_pci_core_write(), or -EIO (gvp_aperture_rw_wait()).
 */
ssize_t gvp_write(struct vfio_device *vdev, const char __user *buf, size_t count,
		  loff_t *ppos)
{
	ssize_t ret = gvp_aperture_rw_wait(to_gvp(vdev), *ppos, count);

	return ret ?: vfio_pci_core_write(vdev, buf, count, ppos);
}
