// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu's services to the gpumig engine (struct gpumig_backend_ops), in
 * device-model terms: quiesce and host invalidation through the processor,
 * VRAM blocks and their dirty bits, the architectural state, teardown and
 * scrub, and the DMA log of guest pages the device wrote, kept by the
 * engine's software tracker (the model's DMA goes through env.c, which
 * marks it).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>

#include <gpumig/dirty.h>

#include "simgpu_mdev.h"

#define SIMGPU_QUIESCE_MS	2000	/* drain bound with preemption off */
#define SIMGPU_INVAL_MS		1000	/* acknowledgment bound */

/* The model's VRAM dirty grain is the engine's block; its state fits. */
static_assert(SIMGPU_VRAM_BLOCK_SHIFT == GPUMIG_BLOCK_SHIFT);
static_assert(SIMGPU_ARCH_SIZE <= GPUMIG_ARCH_MAX);

/**
 * simgpu_reset() - function-level reset: the model and config space
 * @sdev: device
 *
 * VRAM keeps its contents (the tenant is the same); scrubbing is for a
 * new tenant.
 */
void simgpu_reset(struct simgpu_dev *sdev)
{
	simgpu_core_reset(&sdev->core);
	simgpu_cfg_init(sdev);
}

static int simgpu_be_quiesce(void *priv)
{
	struct simgpu_dev *sdev = priv;

	return simgpu_quiesce(&sdev->proc, SIMGPU_QUIESCE_MS);
}

static void simgpu_be_unquiesce(void *priv)
{
	struct simgpu_dev *sdev = priv;

	simgpu_unquiesce(&sdev->proc);
}

static int simgpu_be_invalidate(void *priv)
{
	struct simgpu_dev *sdev = priv;

	return simgpu_host_invalidate(&sdev->proc, SIMGPU_INVAL_MS);
}

static int simgpu_be_vram_track(void *priv, bool on)
{
	struct simgpu_dev *sdev = priv;
	int ret;

	mutex_lock(&sdev->core.lock);
	ret = simgpu_vram_track(&sdev->vram, on);
	mutex_unlock(&sdev->core.lock);
	return ret;
}

static long simgpu_be_vram_next_dirty(void *priv, unsigned long from, bool *zero)
{
	struct simgpu_dev *sdev = priv;
	long ret;

	mutex_lock(&sdev->core.lock);
	ret = simgpu_vram_next_dirty(&sdev->vram, from, zero);
	mutex_unlock(&sdev->core.lock);
	return ret;
}

static unsigned long simgpu_be_vram_take_zero_run(void *priv, unsigned long from,
						  unsigned long max)
{
	struct simgpu_dev *sdev = priv;
	unsigned long ret;

	mutex_lock(&sdev->core.lock);
	ret = simgpu_vram_take_zero_run(&sdev->vram, from, max);
	mutex_unlock(&sdev->core.lock);
	return ret;
}

static void simgpu_be_vram_dirty_count(void *priv, unsigned long *nonzero,
				       unsigned long *zero)
{
	struct simgpu_dev *sdev = priv;

	mutex_lock(&sdev->core.lock);
	simgpu_vram_dirty_count(&sdev->vram, nonzero, zero);
	mutex_unlock(&sdev->core.lock);
}

static int simgpu_be_vram_read(void *priv, u64 off, void *buf, u32 len)
{
	struct simgpu_dev *sdev = priv;
	int ret;

	mutex_lock(&sdev->core.lock);
	ret = simgpu_vram_rw(&sdev->vram, off, buf, len, false);
	mutex_unlock(&sdev->core.lock);
	return ret;
}

static int simgpu_be_vram_write(void *priv, u64 off, const void *buf, u32 len)
{
	struct simgpu_dev *sdev = priv;
	int ret = 0;

	mutex_lock(&sdev->core.lock);
	if (buf)
		ret = simgpu_vram_rw(&sdev->vram, off, (void *)buf, len, true);
	else
		simgpu_vram_zero(&sdev->vram, off, len);
	mutex_unlock(&sdev->core.lock);
	return ret;
}

static ssize_t simgpu_be_vram_write_iter(void *priv, u64 off, struct iov_iter *from,
					 u32 len, u32 *crc)
{
	struct simgpu_dev *sdev = priv;
	ssize_t ret;

	mutex_lock(&sdev->core.lock);
	ret = simgpu_vram_write_iter(&sdev->vram, off, from, len, crc);
	mutex_unlock(&sdev->core.lock);
	return ret;
}

static size_t simgpu_be_arch_size(void *priv)
{
	return simgpu_arch_size();
}

/* One part: the geometry's default. */
static ssize_t simgpu_be_arch_save(void *priv, u32 part, void *buf, size_t len)
{
	struct simgpu_dev *sdev = priv;

	return simgpu_arch_save(&sdev->core, buf, len);
}

static int simgpu_be_arch_restore(void *priv, u32 part, const void *buf, size_t len)
{
	struct simgpu_dev *sdev = priv;

	return simgpu_arch_restore(&sdev->core, buf, len);
}

/* Quiesced and invalidated by the engine: stop the processor and check. */
static int simgpu_be_teardown(void *priv, char *why, size_t len)
{
	struct simgpu_dev *sdev = priv;

	simgpu_proc_stop(&sdev->proc);
	if (!simgpu_tlb_empty(&sdev->core)) {
		snprintf(why, len, "translations still cached: invalidation was not acknowledged");
		return -EBUSY;
	}
	return 0;
}

/* The next tenant finds a reset device whose VRAM reads as zeroes. */
static int simgpu_be_scrub(void *priv)
{
	struct simgpu_dev *sdev = priv;

	simgpu_reset(sdev);
	simgpu_core_set_throttle(&sdev->core, 0);	/* never the next tenant's */
	simgpu_core_absent_clear(&sdev->core);		/* nor its owed VRAM */
	mutex_lock(&sdev->core.lock);
	simgpu_vram_scrub(&sdev->vram);
	mutex_unlock(&sdev->core.lock);
	return 0;
}

static int simgpu_be_dma_log_start(void *priv, struct rb_root_cached *ranges,
				   u32 nnodes, u64 *page_size)
{
	struct simgpu_dev *sdev = priv;

	return gpumig_dirty_start(sdev->dirty, ranges, nnodes, page_size);
}

static void simgpu_be_dma_log_stop(void *priv)
{
	struct simgpu_dev *sdev = priv;

	gpumig_dirty_stop(sdev->dirty);
}

static int simgpu_be_dma_log_report(void *priv, u64 iova, u64 len,
				    void (*report)(void *ctx, u64 iova, u64 len),
				    void *ctx)
{
	struct simgpu_dev *sdev = priv;

	return gpumig_dirty_collect(sdev->dirty, iova, len, report, ctx);
}

/* Auto-converge: the tenant's share of the command processor's time. */
static int simgpu_be_throttle(void *priv, u32 pct)
{
	struct simgpu_dev *sdev = priv;

	simgpu_core_set_throttle(&sdev->core, pct);
	return 0;
}

/* A restore will write about @bytes: back them ahead (vram.c). */
static void simgpu_be_vram_prepare(void *priv, u64 bytes)
{
	struct simgpu_dev *sdev = priv;

	simgpu_vram_prepare(&sdev->vram, bytes);
}

/* ---- post-copy: the destination runs with blocks absent (absent.c) ---- */

static int simgpu_be_vram_absent(void *priv, const unsigned long *map, unsigned long nr)
{
	struct simgpu_dev *sdev = priv;

	return simgpu_core_set_absent(&sdev->core, map, nr, SIMGPU_VRAM_BLOCK_SHIFT);
}

/* Write the block and make it present at once, under the model's lock. */
static int simgpu_be_vram_deliver(void *priv, unsigned long blk, const void *buf, u32 len)
{
	struct simgpu_dev *sdev = priv;
	int ret;

	if (len != BIT(SIMGPU_VRAM_BLOCK_SHIFT))
		return -EINVAL;
	mutex_lock(&sdev->core.lock);
	ret = simgpu_absent_arrive_check(&sdev->core, blk);
	if (!ret)
		ret = simgpu_vram_rw(&sdev->vram, (u64)blk << SIMGPU_VRAM_BLOCK_SHIFT,
				     (void *)buf, len, true);
	if (!ret)
		simgpu_absent_arrived_locked(&sdev->core, blk);
	mutex_unlock(&sdev->core.lock);
	if (!ret)
		simgpu_proc_kick(&sdev->proc);
	return ret;
}

static int simgpu_be_vram_lose(void *priv, unsigned long blk)
{
	struct simgpu_dev *sdev = priv;

	return simgpu_core_block_lost(&sdev->core, blk);
}

/* ---- post-copy: the source's held blocks ------------------------------- */

static void *simgpu_be_vram_hold(void *priv, const unsigned long *map, unsigned long nr)
{
	struct simgpu_dev *sdev = priv;
	struct simgpu_vram_hold *h;

	mutex_lock(&sdev->core.lock);
	h = simgpu_vram_hold(&sdev->vram, map, nr);
	mutex_unlock(&sdev->core.lock);
	return h;
}

static int simgpu_be_hold_read(void *hold, u64 off, void *buf, u32 len)
{
	return simgpu_vram_hold_read(hold, off, buf, len);
}

static void simgpu_be_hold_return(void *priv, void *hold)
{
	struct simgpu_dev *sdev = priv;

	mutex_lock(&sdev->core.lock);
	simgpu_vram_hold_return(&sdev->vram, hold);
	mutex_unlock(&sdev->core.lock);
}

static void simgpu_be_hold_free(void *hold)
{
	simgpu_vram_hold_free(hold);
}

const struct gpumig_backend_ops simgpu_backend_ops = {
	.quiesce = simgpu_be_quiesce,
	.unquiesce = simgpu_be_unquiesce,
	.invalidate = simgpu_be_invalidate,
	.vram_track = simgpu_be_vram_track,
	.vram_next_dirty = simgpu_be_vram_next_dirty,
	.vram_take_zero_run = simgpu_be_vram_take_zero_run,
	.vram_dirty_count = simgpu_be_vram_dirty_count,
	.vram_read = simgpu_be_vram_read,
	.vram_write = simgpu_be_vram_write,
	.vram_write_iter = simgpu_be_vram_write_iter,
	.arch_size = simgpu_be_arch_size,
	.arch_save = simgpu_be_arch_save,
	.arch_restore = simgpu_be_arch_restore,
	.teardown = simgpu_be_teardown,
	.scrub = simgpu_be_scrub,
	.dma_log_start = simgpu_be_dma_log_start,
	.dma_log_stop = simgpu_be_dma_log_stop,
	.dma_log_report = simgpu_be_dma_log_report,
	.throttle = simgpu_be_throttle,
	.vram_prepare = simgpu_be_vram_prepare,
	.vram_absent = simgpu_be_vram_absent,
	.vram_deliver = simgpu_be_vram_deliver,
	.vram_lose = simgpu_be_vram_lose,
	.vram_hold = simgpu_be_vram_hold,
	.hold_read = simgpu_be_hold_read,
	.hold_return = simgpu_be_hold_return,
	.hold_free = simgpu_be_hold_free,
	.owner = THIS_MODULE,
	.notifies_dirty = true,
};

/**
 * simgpu_vram_dirtied() - simgpu_vram.dirtied: a poller of the saving
 * file may read now
 * @ctx: the device
 */
void simgpu_vram_dirtied(void *ctx)
{
	struct simgpu_dev *sdev = ctx;

	gpumig_mig_vram_dirtied(sdev->mig);
}
