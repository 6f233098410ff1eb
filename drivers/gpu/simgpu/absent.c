// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu device memory that has not arrived yet.
 *
 * A migration with deferred VRAM restoration (post-copy) starts the
 * destination before all of VRAM is there: the host marks the blocks
 * still owed absent (simgpu_core_set_absent()) before the device runs, and
 * each as it arrives (simgpu_core_block_arrived()).  A step of a queue, or
 * a stamp of the background writer, that would touch an absent block waits
 * for it, as a GPU with replayable faults parks the faulting context: the
 * step is not run at all until every block it touches is there, so a
 * command never sees part of its data, and other queues run on.  A block
 * that will never arrive (the source was lost) is marked lost, page by
 * page: an access to a lost page ends its queue with SIMGPU_ERR_VRAM_LOST
 * until the guest writes all of that page or resets the device.  Nothing
 * ever reads zeroes or stale data in place of an owed block.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/lockdep.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "simgpu.h"

/* Pages of one block. */
static u64 simgpu_absent_block_pages(const struct simgpu_absent *ab)
{
	return 1ULL << (ab->shift - SIMGPU_PAGE_SHIFT);
}

/**
 * simgpu_absent_free() - forget every absent and lost block
 * @core: device, lock held or not yet running
 */
void simgpu_absent_free(struct simgpu_core *core)
{
	struct simgpu_absent *ab = &core->ab;

	bitmap_free(ab->absent);
	bitmap_free(ab->lost_blk);
	kvfree(ab->lost);
	ab->absent = NULL;
	ab->lost_blk = NULL;
	ab->lost = NULL;
	ab->nr_absent = 0;
	ab->nr_lost = 0;
}

/**
 * simgpu_absent_reset_locked() - a device reset: nothing waits, nothing is lost
 * @core: device, lock held (or not yet running)
 *
 * The blocks still owed stay absent: they are the tenant's and arrive
 * after the reset as before it.
 */
void simgpu_absent_reset_locked(struct simgpu_core *core)
{
	u32 i;

	for (i = 0; i < SIMGPU_MAX_QUEUES; i++)
		core->q[i].wait_blk = -1;
	core->workload_wait = -1;
	if (core->ab.lost_blk)
		bitmap_zero(core->ab.lost_blk, core->ab.nr_blocks);
	if (core->ab.lost)
		bitmap_zero(core->ab.lost, core->vram_size >> SIMGPU_PAGE_SHIFT);
	core->ab.nr_lost = 0;
}

/**
 * simgpu_absent_wake_locked() - work waiting on @blk may run again
 * @core: device, lock held
 * @blk: the block, or -1 for every block
 */
void simgpu_absent_wake_locked(struct simgpu_core *core, s64 blk)
{
	u32 i;

	lockdep_assert_held(&core->lock);
	for (i = 0; i < SIMGPU_MAX_QUEUES; i++)
		if (core->q[i].wait_blk >= 0 && (blk < 0 || core->q[i].wait_blk == blk))
			core->q[i].wait_blk = -1;
	if (core->workload_wait >= 0 && (blk < 0 || core->workload_wait == blk))
		core->workload_wait = -1;
}

/**
 * simgpu_core_set_absent() - the blocks a migration still owes
 * @core: device, not running (a destination before it leaves RESUMING)
 * @map: one bit per block, set for each that has not arrived
 * @nr_blocks: bits in @map: the VRAM size in blocks
 * @shift: log2 of the block, at least the page
 *
 * Return: 0, -EINVAL for a map that does not cover VRAM exactly, -EBUSY
 * when blocks are absent already, -ENOMEM.
 */
int simgpu_core_set_absent(struct simgpu_core *core, const unsigned long *map,
			   u64 nr_blocks, u32 shift)
{
	struct simgpu_absent *ab = &core->ab;
	unsigned long *absent, *lost;
	int ret = 0;

	if (shift < SIMGPU_PAGE_SHIFT || shift > 30 ||
	    nr_blocks != DIV_ROUND_UP(core->vram_size, 1ULL << shift))
		return -EINVAL;
	/* A bit per block each; the pages' map waits for a loss. */
	absent = bitmap_zalloc(nr_blocks, GFP_KERNEL);
	lost = bitmap_zalloc(nr_blocks, GFP_KERNEL);
	if (!absent || !lost) {
		bitmap_free(absent);
		bitmap_free(lost);
		return -ENOMEM;
	}
	bitmap_copy(absent, map, nr_blocks);

	mutex_lock(&core->lock);
	if (ab->nr_absent) {
		ret = -EBUSY;
	} else {
		simgpu_absent_free(core);
		ab->absent = absent;
		ab->lost_blk = lost;
		ab->nr_blocks = nr_blocks;
		ab->shift = shift;
		ab->nr_absent = bitmap_weight(absent, nr_blocks);
		ab->waits = 0;
		ab->lost_hits = 0;
		absent = NULL;
		lost = NULL;
	}
	mutex_unlock(&core->lock);
	bitmap_free(absent);
	bitmap_free(lost);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_set_absent);

/**
 * simgpu_absent_arrive_check() - is @blk one still owed?
 * @core: device, lock held
 * @blk: block
 *
 * Return: 0, -ERANGE outside VRAM, -EALREADY when it is not absent.
 */
int simgpu_absent_arrive_check(struct simgpu_core *core, u64 blk)
{
	struct simgpu_absent *ab = &core->ab;

	lockdep_assert_held(&core->lock);
	if (!ab->absent)
		return -EALREADY;
	if (blk >= ab->nr_blocks)
		return -ERANGE;
	return test_bit(blk, ab->absent) ? 0 : -EALREADY;
}

/**
 * simgpu_absent_arrived_locked() - owed block @blk was written: work may use it
 * @core: device, lock held; simgpu_absent_arrive_check() said 0
 * @blk: block
 *
 * The caller kicks the processor after dropping the lock.
 */
void simgpu_absent_arrived_locked(struct simgpu_core *core, u64 blk)
{
	lockdep_assert_held(&core->lock);
	__clear_bit(blk, core->ab.absent);
	core->ab.nr_absent--;
	simgpu_absent_wake_locked(core, blk);
}

/**
 * simgpu_core_block_arrived() - block @blk is in VRAM now
 * @core: device
 * @blk: the block; its contents were written before this call
 *
 * Work that waited on it runs again.
 *
 * Return: 0, -ERANGE outside VRAM, -EALREADY when it was not absent.
 */
int simgpu_core_block_arrived(struct simgpu_core *core, u64 blk)
{
	int ret;

	mutex_lock(&core->lock);
	ret = simgpu_absent_arrive_check(core, blk);
	if (!ret)
		simgpu_absent_arrived_locked(core, blk);
	mutex_unlock(&core->lock);
	if (!ret)
		core->env->kick(core->ctx);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_block_arrived);

/**
 * simgpu_core_block_lost() - block @blk will never arrive
 * @core: device
 * @blk: an absent block
 *
 * Its pages are lost: work that waited on it runs again and fails with
 * SIMGPU_ERR_VRAM_LOST.
 *
 * Return: 0, -ERANGE outside VRAM, -EALREADY when it was not absent.
 */
int simgpu_core_block_lost(struct simgpu_core *core, u64 blk)
{
	struct simgpu_absent *ab = &core->ab;
	u64 per, first, nr_pages = core->vram_size >> SIMGPU_PAGE_SHIFT;
	int ret = 0;

	mutex_lock(&core->lock);
	if (!ab->absent || blk >= ab->nr_blocks) {
		ret = ab->absent ? -ERANGE : -EALREADY;
	} else if (!test_bit(blk, ab->absent)) {
		ret = -EALREADY;
	} else {
		/*
		 * Page by page from the first loss on.  Without the map (no
		 * memory for it), the block stays lost whole until a reset:
		 * more refused, never less.
		 */
		if (!ab->lost)
			ab->lost = kvcalloc(BITS_TO_LONGS(nr_pages), sizeof(unsigned long),
					    GFP_KERNEL);
		per = simgpu_absent_block_pages(ab);
		first = blk * per;
		per = min_t(u64, per, nr_pages - first);
		__clear_bit(blk, ab->absent);
		ab->nr_absent--;
		__set_bit(blk, ab->lost_blk);
		if (ab->lost)
			bitmap_set(ab->lost, first, per);
		ab->nr_lost++;
		simgpu_absent_wake_locked(core, blk);
	}
	mutex_unlock(&core->lock);
	if (!ret)
		core->env->kick(core->ctx);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_block_lost);

/**
 * simgpu_core_absent_clear() - nothing is owed or lost any more
 * @core: device
 *
 * For a device whose VRAM starts over (scrubbed for a new tenant): work
 * that waited runs again.
 */
void simgpu_core_absent_clear(struct simgpu_core *core)
{
	mutex_lock(&core->lock);
	simgpu_absent_free(core);
	simgpu_absent_wake_locked(core, -1);
	mutex_unlock(&core->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_absent_clear);

/**
 * simgpu_core_absent_count() - blocks still absent
 * @core: device
 *
 * Return: the count.
 */
u64 simgpu_core_absent_count(struct simgpu_core *core)
{
	u64 n;

	mutex_lock(&core->lock);
	n = core->ab.nr_absent;
	mutex_unlock(&core->lock);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_absent_count);

/**
 * simgpu_absent_probe() - may @len bytes of VRAM at @addr be accessed now?
 * @core: device, lock held
 * @addr: VRAM offset
 * @len: bytes, within one GPU page
 * @write: a write (which may cover a lost page whole)
 *
 * Return: 0; SIMGPU_STEP_WAIT with @core->wait_blk the absent block; or
 * SIMGPU_ERR_VRAM_LOST.
 */
u32 simgpu_absent_probe(struct simgpu_core *core, u64 addr, size_t len, bool write)
{
	struct simgpu_absent *ab = &core->ab;
	u64 blk = addr >> ab->shift, page = addr >> SIMGPU_PAGE_SHIFT;

	lockdep_assert_held(&core->lock);
	if (ab->nr_absent && blk < ab->nr_blocks && test_bit(blk, ab->absent)) {
		core->wait_blk = blk;
		return SIMGPU_STEP_WAIT;
	}
	if (ab->nr_lost && blk < ab->nr_blocks && test_bit(blk, ab->lost_blk) &&
	    (!ab->lost || test_bit(page, ab->lost)) && !(write && len == SIMGPU_PAGE_SIZE)) {
		ab->lost_hits++;
		return SIMGPU_ERR_VRAM_LOST;
	}
	return 0;
}

/**
 * simgpu_absent_written() - @len bytes of VRAM at @addr were written
 * @core: device, lock held
 * @addr: VRAM offset
 * @len: bytes, within one GPU page
 *
 * A lost page written whole holds the guest's data again.
 */
void simgpu_absent_written(struct simgpu_core *core, u64 addr, size_t len)
{
	struct simgpu_absent *ab = &core->ab;
	u64 page = addr >> SIMGPU_PAGE_SHIFT, blk = addr >> ab->shift;
	u64 per, first, nr_pages = core->vram_size >> SIMGPU_PAGE_SHIFT, p;

	lockdep_assert_held(&core->lock);
	if (!ab->nr_lost || len != SIMGPU_PAGE_SIZE || blk >= ab->nr_blocks ||
	    !test_bit(blk, ab->lost_blk) || !ab->lost || !test_bit(page, ab->lost))
		return;
	__clear_bit(page, ab->lost);
	/* The block is the guest's again once all of it was written. */
	per = simgpu_absent_block_pages(ab);
	first = blk * per;
	per = min_t(u64, per, nr_pages - first);
	for (p = first; p < first + per; p++)
		if (test_bit(p, ab->lost))
			return;
	__clear_bit(blk, ab->lost_blk);
	ab->nr_lost--;
}
