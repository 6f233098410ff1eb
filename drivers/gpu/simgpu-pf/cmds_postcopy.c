// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf: the services of post-copy of VRAM (SIMGPU_PF_CAP_ABSENT,
 * Documentation/gpumig/postcopy.rst), each one mailbox command (cmds.c)
 * or register.  A destination VF runs with blocks absent: the device parks
 * its work on one and names it in the VF's DEMAND register, a delivery
 * makes a block present, a lost one fails its accesses.  A source VF's
 * blocks leave it into a hold of the PF's, which outlives the claim, the
 * VF's scrub, its FLR and any rebind (struct simgpu_pf_hold), until the
 * engine frees it; SR-IOV stays enabled meanwhile (pci_drv.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "simgpu_pf.h"

static int simgpu_pf_absent_cap(struct simgpu_pf_vf *vf)
{
	return vf->pf->info.caps & SIMGPU_PF_CAP_ABSENT ? 0 : -EOPNOTSUPP;
}

/* SET_ABSENT or VRAM_HOLD with the bitmap @map of @nr blocks; the command lock held. */
static int simgpu_pf_bitmap_cmd(struct simgpu_pf_vf *vf, u32 op, const unsigned long *map,
				unsigned long nr, u64 *res)
{
	u64 bytes = BITS_TO_LONGS(nr) * sizeof(unsigned long);
	u64 args[2];

	lockdep_assert_held(&vf->cmd_lock);
	if (bytes > SIMGPU_PF_BUF_SIZE)
		return -E2BIG;
	if (!vf->buf)
		return -ENODEV;
	memcpy(vf->buf, map, bytes);
	args[0] = vf->buf_dma;
	args[1] = bytes;
	return simgpu_pf_cmd(vf, op, args, 2, SIMGPU_PF_CMD_MS, res);
}

/**
 * simgpu_pf_vf_set_absent() - the paused VF will run with these blocks absent
 * @vf: claimed VF
 * @map: one bit per block of its VRAM, set for each still owed
 * @nr: bits in @map
 *
 * Return: 0, -EOPNOTSUPP without SIMGPU_PF_CAP_ABSENT, -EINVAL (not
 * paused, blocks absent already, a bad map), or another negative errno.
 */
int simgpu_pf_vf_set_absent(struct simgpu_pf_vf *vf, const unsigned long *map, unsigned long nr)
{
	int ret = simgpu_pf_absent_cap(vf);

	if (ret)
		return ret;
	mutex_lock(&vf->cmd_lock);
	ret = simgpu_pf_bitmap_cmd(vf, SIMGPU_PF_CMD_SET_ABSENT, map, nr, NULL);
	mutex_unlock(&vf->cmd_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_set_absent);

/**
 * simgpu_pf_vf_vram_deliver() - absent blocks arrive
 * @vf: claimed VF
 * @off: VRAM offset, block aligned
 * @buf: their contents
 * @len: whole blocks, at most one DMA buffer
 *
 * Return: 0, -EALREADY (nothing written) when one of them is not absent,
 * -EINVAL, or another negative errno.
 */
int simgpu_pf_vf_vram_deliver(struct simgpu_pf_vf *vf, u64 off, const void *buf, u32 len)
{
	u64 args[3] = { off, 0, len };
	int ret = simgpu_pf_absent_cap(vf);

	if (ret)
		return ret;
	if (!len || len > min_t(u32, SIMGPU_PF_BUF_SIZE, vf->pf->info.xfer_max))
		return -EINVAL;
	mutex_lock(&vf->cmd_lock);
	if (!vf->buf) {
		ret = -ENODEV;
	} else {
		memcpy(vf->buf, buf, len);
		args[1] = vf->buf_dma;
		ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_VRAM_DELIVER, args, 3, SIMGPU_PF_CMD_MS,
				    NULL);
		if (ret == -EINVAL &&
		    simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_STATUS) == SIMGPU_PF_ERR_ORDER)
			ret = -EALREADY;
	}
	mutex_unlock(&vf->cmd_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_deliver);

/**
 * simgpu_pf_vf_vram_lose() - an absent block will never arrive
 * @vf: claimed VF
 * @blk: the block
 *
 * Return: 0, -EALREADY when it is not absent, or another negative errno.
 */
int simgpu_pf_vf_vram_lose(struct simgpu_pf_vf *vf, u64 blk)
{
	int ret = simgpu_pf_absent_cap(vf);

	if (ret)
		return ret;
	mutex_lock(&vf->cmd_lock);
	ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_VRAM_LOSE, &blk, 1, SIMGPU_PF_CMD_MS, NULL);
	mutex_unlock(&vf->cmd_lock);
	return ret == -EINVAL ? -EALREADY : ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_lose);

/**
 * simgpu_pf_vf_demand() - the oldest absent block the VF's work waits on
 * @vf: VF, enabled
 *
 * Reading takes it from the device.
 *
 * Return: 1 + the block, or 0 when none is left.
 */
u64 simgpu_pf_vf_demand(struct simgpu_pf_vf *vf)
{
	return simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_DEMAND);
}

/* ---- the PF's hold --------------------------------------------------------- */

static struct simgpu_pf_hold *to_hold(struct gpumig_vram_hold *h)
{
	return container_of(h, struct simgpu_pf_hold, base);
}

static int simgpu_pf_hold_read(struct gpumig_vram_hold *base, u64 off, void *buf, u32 len)
{
	struct simgpu_pf_hold *h = to_hold(base);
	struct simgpu_pf_vf *vf = h->vf;
	u32 step = min_t(u32, SIMGPU_PF_BUF_SIZE, vf->pf->info.xfer_max);
	int ret = 0;

	mutex_lock(&vf->cmd_lock);
	if (vf->hold != h)
		ret = -ENODEV;	/* lost with the PF's reset or driver */
	while (!ret && len) {
		u32 n = min(len, step);
		u64 args[3] = { off, vf->buf_dma, n };

		ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_HOLD_READ, args, 3, SIMGPU_PF_CMD_MS, NULL);
		if (!ret)
			memcpy(buf, vf->buf, n);
		off += n;
		buf += n;
		len -= n;
	}
	mutex_unlock(&vf->cmd_lock);
	return ret == -EINVAL ? -ENOENT : ret;
}

/* The device lets go of what it holds (@ret: back into the VF); the command lock held. */
static void simgpu_pf_hold_end(struct simgpu_pf_hold *h, bool ret)
{
	struct simgpu_pf_vf *vf = h->vf;
	int err;

	lockdep_assert_held(&vf->cmd_lock);
	if (vf->hold != h)
		return;
	err = simgpu_pf_cmd(vf, ret ? SIMGPU_PF_CMD_HOLD_RETURN : SIMGPU_PF_CMD_HOLD_FREE, NULL,
			    0, SIMGPU_PF_CMD_MS, NULL);
	if (err)
		pci_warn(vf->pf->pdev, "VF %u: post-copy: the held VRAM could not be %s (%d)\n",
			 vf->n, ret ? "returned" : "freed", err);
	WRITE_ONCE(vf->hold, NULL);
}

static void simgpu_pf_hold_put(struct simgpu_pf_hold *h)
{
	kref_put(&h->vf->pf->ref, simgpu_pf_free);
	kfree(h);
}

/* The claimer puts the module (base.owner) after this returns. */
static void simgpu_pf_hold_free(struct gpumig_vram_hold *base)
{
	struct simgpu_pf_hold *h = to_hold(base);

	mutex_lock(&h->vf->cmd_lock);
	simgpu_pf_hold_end(h, false);
	mutex_unlock(&h->vf->cmd_lock);
	simgpu_pf_hold_put(h);
}

static const struct gpumig_vram_hold_ops simgpu_pf_hold_ops = {
	.read = simgpu_pf_hold_read,
	.free = simgpu_pf_hold_free,
};

/**
 * simgpu_pf_vf_hold() - the paused VF's blocks leave it into the PF's hold
 * @vf: claimed VF
 * @map: one bit per block, set for each to hold
 * @nr: bits in @map
 *
 * The hold keeps the PF's state and this module (base.owner) until freed.
 *
 * Return: the hold, or an ERR_PTR: -EOPNOTSUPP without the capability,
 * -EBUSY while the VF has one, -EINVAL when not paused.
 */
struct simgpu_pf_hold *simgpu_pf_vf_hold(struct simgpu_pf_vf *vf, const unsigned long *map,
					 unsigned long nr)
{
	struct simgpu_pf_hold *h;
	int ret = simgpu_pf_absent_cap(vf);

	if (ret)
		return ERR_PTR(ret);
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return ERR_PTR(-ENOMEM);
	h->base.ops = &simgpu_pf_hold_ops;
	h->base.owner = THIS_MODULE;
	h->vf = vf;
	mutex_lock(&vf->cmd_lock);
	if (vf->hold)
		ret = -EBUSY;
	else
		ret = simgpu_pf_bitmap_cmd(vf, SIMGPU_PF_CMD_VRAM_HOLD, map, nr, &h->blocks);
	if (!ret) {
		kref_get(&vf->pf->ref);
		__module_get(THIS_MODULE);
		WRITE_ONCE(vf->hold, h);	/* SR-IOV stays on (simgpu_pf_vfs_busy()) */
	}
	mutex_unlock(&vf->cmd_lock);
	if (ret) {
		kfree(h);
		return ERR_PTR(ret);
	}
	return h;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_hold);

/**
 * simgpu_pf_vf_hold_return() - the VF runs again: what it held goes back
 * @vf: claimed VF, paused
 * @h: its hold, freed here; the claimer puts the module after
 */
void simgpu_pf_vf_hold_return(struct simgpu_pf_vf *vf, struct simgpu_pf_hold *h)
{
	mutex_lock(&vf->cmd_lock);
	simgpu_pf_hold_end(h, true);
	mutex_unlock(&vf->cmd_lock);
	simgpu_pf_hold_put(h);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_hold_return);

/**
 * simgpu_pf_vf_hold_lost() - the device can no longer keep the VF's hold
 * @vf: VF, its command lock held
 * @why: what takes it (the PF's reset, its driver's removal), for the log
 * @free: ask the device to scrub it first (it still answers)
 *
 * The engine's session learns of it at its next read (-ENODEV); the log
 * says it now, loudly: the destination will not get those blocks.
 */
void simgpu_pf_vf_hold_lost(struct simgpu_pf_vf *vf, const char *why, bool free)
{
	struct simgpu_pf_hold *h = vf->hold;

	lockdep_assert_held(&vf->cmd_lock);
	if (!h)
		return;
	pci_err(vf->pf->pdev,
		"VF %u: post-copy: %llu VRAM blocks held for a destination are lost: %s\n",
		vf->n, h->blocks, why);
	if (free)
		simgpu_pf_hold_end(h, false);
	WRITE_ONCE(vf->hold, NULL);
}
