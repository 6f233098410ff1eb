// SPDX-License-Identifier: GPL-2.0
/*
 * The outside world of an mdev's device model: DMA goes through the mdev's
 * emulated IOMMU (vfio_dma_rw), so the guest can never make the device
 * touch memory it did not map, and every write that landed is marked in
 * the DMA log; VRAM is the instance's pages; the interrupt is the MSI
 * eventfd; the processor is the instance's thread.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/vfio.h>

#include <gpumig/dirty.h>

#include "simgpu_mdev.h"

static int simgpu_env_dma_rw(void *ctx, u64 iova, void *buf, size_t len, bool write)
{
	struct simgpu_dev *sdev = ctx;
	int ret;

	ret = vfio_dma_rw(&sdev->vdev, iova, buf, len, write);
	/* Marked after the write landed: see gpumig_dirty_mark(). */
	if (!ret && write)
		gpumig_dirty_mark(sdev->dirty, iova, len);
	return ret;
}

static int simgpu_env_vram_rw(void *ctx, u64 off, void *buf, size_t len, bool write)
{
	struct simgpu_dev *sdev = ctx;

	return simgpu_vram_rw(&sdev->vram, off, buf, len, write);
}

static void simgpu_env_raise_irq(void *ctx)
{
	simgpu_irq_signal(ctx);
}

static void simgpu_env_kick(void *ctx)
{
	struct simgpu_dev *sdev = ctx;

	simgpu_proc_kick(&sdev->proc);
}

static void simgpu_env_stepped(void *ctx)
{
	struct simgpu_dev *sdev = ctx;

	simgpu_proc_stepped(&sdev->proc);
}

/* A migration in pre-copy reports the state that follows as new initial data. */
static void simgpu_env_guest_reset(void *ctx)
{
	struct simgpu_dev *sdev = ctx;

	if (sdev->mig)
		gpumig_mig_reconfigured(sdev->mig);
}

/* Post-copy: the model waits on an owed block; the engine's mover hears. */
static void simgpu_env_demand(void *ctx, u64 blk)
{
	struct simgpu_dev *sdev = ctx;

	gpumig_mig_postcopy_demand(sdev->mig, blk);
}

const struct simgpu_env_ops simgpu_mdev_env = {
	.dma_rw = simgpu_env_dma_rw,
	.vram_rw = simgpu_env_vram_rw,
	.raise_irq = simgpu_env_raise_irq,
	.kick = simgpu_env_kick,
	.stepped = simgpu_env_stepped,
	.guest_reset = simgpu_env_guest_reset,
	.demand = simgpu_env_demand,
};
