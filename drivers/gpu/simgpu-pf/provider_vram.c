// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf's provider: the VF's VRAM, and the blocks of it still to send
 * (counted by the device, or mirrored here); see provider.h.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/crc32.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "provider.h"

/*
 * Two ways to keep the blocks still to send.  A device with
 * SIMGPU_PF_CAP_VRAM_COUNT keeps them itself: @vdirty is a copy taken at
 * the start of each pass, a block leaves the device's set when it is read
 * (VRAM_READ_TAKE) or sent as zeroes (VRAM_TAKE_ZERO), and the device
 * counts the set in one command, whatever the VRAM size.  Otherwise the
 * device hands its bits over (VRAM_DIRTY clears them) and @vdirty keeps
 * those the engine has not taken, OR-ed with each new report, and counting
 * means fetching and walking both bitmaps.
 */
static bool simgpu_mig_counted(struct simgpu_mig *s)
{
	return s->info.caps & SIMGPU_PF_CAP_VRAM_COUNT;
}

/* Ask the device for the blocks to send now. */
static int simgpu_mig_sync(struct simgpu_mig *s)
{
	lockdep_assert_held(&s->vram_lock);
	if (simgpu_mig_counted(s))
		return simgpu_pf_vf_vram_peek(s->vf, s->vdirty, s->populated);
	return simgpu_pf_vf_vram_dirty(s->vf, s->vdirty, s->populated);
}

int simgpu_mig_vram_track(struct gpumig_vf *gvf, bool on)
{
	struct simgpu_mig *s = to_mig(gvf);
	int ret;

	mutex_lock(&s->vram_lock);
	bitmap_zero(s->vdirty, s->nr_blocks);
	s->tracking = false;
	ret = simgpu_pf_vf_vram_track(s->vf, on);
	if (!ret && on) {
		/*
		 * The device marks every block dirty: the first pass sends
		 * all.  A device that keeps the set is asked at the pass.
		 */
		ret = simgpu_mig_counted(s) ? 0 : simgpu_mig_sync(s);
		if (ret)
			simgpu_pf_vf_vram_track(s->vf, false);
		else
			s->tracking = true;
	}
	mutex_unlock(&s->vram_lock);
	return ret;
}

/*
 * A block to be sent as zeroes without a read, taken in the device now.
 * Written since the pass began, it is read (and taken) as data instead.
 */
static long simgpu_mig_take_zero_block(struct simgpu_mig *s, unsigned long b, bool *zero)
{
	u64 taken;
	int ret = simgpu_pf_vf_vram_take_zero(s->vf, b, 1, &taken);

	if (ret)
		return ret;
	*zero = taken;
	return b;
}

long simgpu_mig_vram_next_dirty(struct gpumig_vf *gvf, unsigned long from, bool *zero)
{
	struct simgpu_mig *s = to_mig(gvf);
	unsigned long b;
	long ret = 0;

	mutex_lock(&s->vram_lock);
	if (WARN_ON_ONCE(!s->tracking))
		ret = -ENOENT;
	else if (!from)
		ret = simgpu_mig_sync(s);	/* a new pass: what changed meanwhile */
	if (!ret) {
		b = find_next_bit(s->vdirty, s->nr_blocks, from);
		if (b < s->nr_blocks) {
			clear_bit(b, s->vdirty);
			*zero = !test_bit(b, s->populated);
			ret = b;
			if (*zero && simgpu_mig_counted(s))
				ret = simgpu_mig_take_zero_block(s, b, zero);
		} else {
			ret = -ENOENT;
		}
	}
	mutex_unlock(&s->vram_lock);
	return ret;
}

/* The dirty unpopulated blocks from @from on, at most @max, taken at once. */
unsigned long simgpu_mig_vram_take_zero_run(struct gpumig_vf *gvf, unsigned long from,
					    unsigned long max)
{
	struct simgpu_mig *s = to_mig(gvf);
	unsigned long end = 0;

	mutex_lock(&s->vram_lock);
	if (s->tracking && from < s->nr_blocks) {
		end = from + min(max, s->nr_blocks - from);
		end = find_next_zero_bit(s->vdirty, end, from);
		end = find_next_bit(s->populated, end, from);
		if (end > from && simgpu_mig_counted(s)) {
			u64 taken = 0;

			/* The device's word: a block written meanwhile ends the run. */
			if (simgpu_pf_vf_vram_take_zero(s->vf, from, end - from, &taken))
				taken = 0;	/* the blocks stay dirty: sent later */
			end = from + min_t(u64, taken, end - from);
		}
		bitmap_clear(s->vdirty, from, end - from);
	}
	mutex_unlock(&s->vram_lock);
	return end > from ? end - from : 0;
}

/* Blocks still to send (all of VRAM while no pre-copy runs). */
void simgpu_mig_vram_dirty_count(struct gpumig_vf *gvf, unsigned long *nonzero,
				 unsigned long *zero)
{
	struct simgpu_mig *s = to_mig(gvf);
	unsigned long n = s->nr_blocks, all;

	mutex_lock(&s->vram_lock);
	if (simgpu_mig_counted(s)) {
		u64 dirty, written;

		/* On failure, the pass's own copy answers. */
		if (!simgpu_pf_vf_vram_count(s->vf, &dirty, &written)) {
			*nonzero = written;
			*zero = dirty - written;
			mutex_unlock(&s->vram_lock);
			return;
		}
	} else {
		/* On failure the last answer stands; the stream itself will fail. */
		simgpu_mig_sync(s);
	}
	if (s->tracking) {
		all = bitmap_weight(s->vdirty, n);
		*nonzero = bitmap_weight_and(s->vdirty, s->populated, n);
	} else {
		all = n;
		*nonzero = bitmap_weight(s->populated, n);
	}
	*zero = all - *nonzero;
	mutex_unlock(&s->vram_lock);
}

int simgpu_mig_vram_read(struct gpumig_vf *gvf, u64 off, void *buf, u32 len)
{
	struct simgpu_mig *s = to_mig(gvf);

	/* The engine reads whole blocks it took from vram_next_dirty. */
	if (simgpu_mig_counted(s) && !s->untracked && !((off | len) & (GPUMIG_BLOCK_SIZE - 1)))
		return simgpu_pf_vf_vram_read_take(s->vf, off, buf, len);
	return simgpu_pf_vf_vram_read(s->vf, off, buf, len);
}

int simgpu_mig_vram_write(struct gpumig_vf *gvf, u64 off, const void *buf, u32 len)
{
	return simgpu_pf_vf_vram_write(to_mig(gvf)->vf, off, buf, len);
}

/* simgpu_pf_vf_vram_write_from()'s fill: the user's bytes into the DMA buffer. */
struct simgpu_mig_fill {
	struct iov_iter *from;
	u32 *crc;
};

static ssize_t simgpu_mig_fill_from_iter(void *ctx, void *buf, u32 len)
{
	struct simgpu_mig_fill *f = ctx;
	size_t got = copy_from_iter(buf, len, f->from);

	*f->crc = crc32_le(*f->crc, buf, got);
	return got;
}

/* Straight from the user into the buffer the VF's DMA reads: one copy. */
ssize_t simgpu_mig_vram_write_iter(struct gpumig_vf *gvf, u64 off, struct iov_iter *from,
				   u32 len, u32 *crc)
{
	struct simgpu_mig_fill f = { .from = from, .crc = crc };

	return simgpu_pf_vf_vram_write_from(to_mig(gvf)->vf, off, len,
					    simgpu_mig_fill_from_iter, &f);
}

/* The PF zeroes the VF's VRAM and resets it (its share too) for the next tenant. */
int simgpu_mig_scrub(struct gpumig_vf *gvf)
{
	struct simgpu_mig *s = to_mig(gvf);
	int ret = simgpu_pf_vf_scrub(s->vf);

	/* The next tenant gets the whole VF, whatever a migration left. */
	if (!ret && s->info.caps & SIMGPU_PF_CAP_SHARE)
		ret = simgpu_pf_vf_set_share(s->vf, 0, NULL);
	mutex_lock(&s->vram_lock);
	if (!ret) {
		bitmap_zero(s->populated, s->nr_blocks);
		s->tracking = false;
	}
	mutex_unlock(&s->vram_lock);
	return ret;
}
