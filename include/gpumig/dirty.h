/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig device-side dirty tracking of guest memory (VFIO DMA logging).
 *
 * The device marks every guest page it wrote, after the write landed.
 * Each tracked range has a three-level bitmap allocated when logging
 * starts: one bit per page, one summary bit per 64-bit word of page bits,
 * one top bit per word of summary bits.  A report follows set bits down
 * from the top, so its cost grows with the number of dirty pages, not
 * with the size of the tracked range; it clears what it reports, under
 * the same lock the device takes to mark, so a write racing with a report
 * is reported by it or by the next one, never lost.
 *
 * Memory is fixed when logging starts: (1/8 + 1/512 + 1/32768) bytes per
 * tracked page, 33,288 bytes per GiB with 4 KiB pages, and nothing is
 * allocated while the device writes.  A request whose bitmaps would
 * exceed the budget (module parameter dirty_budget_mb) is refused with
 * -E2BIG.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_DIRTY_H
#define _GPUMIG_DIRTY_H

#include <linux/interval_tree.h>
#include <linux/mutex.h>
#include <linux/types.h>

/* Largest number of ranges kept; the VFIO core hands over at most a page. */
#define GPUMIG_DIRTY_MAX_RANGES		256

/**
 * struct gpumig_dirty_range - one tracked IOVA range and its bitmaps
 * @start: first IOVA
 * @last: last IOVA (inclusive)
 * @npages: pages in the range
 * @l0: one bit per page
 * @l1: bit i set when @l0 word i may be nonzero
 * @l2: bit j set when @l1 word j may be nonzero
 */
struct gpumig_dirty_range {
	u64 start;
	u64 last;
	unsigned long npages;
	unsigned long *l0;
	unsigned long *l1;
	unsigned long *l2;
};

/**
 * struct gpumig_dirty - one device's dirty-page log
 * @lock: guards everything below
 * @active: logging is on
 * @shift: log2 of the page size asked for
 * @nr_ranges: ranges tracked
 * @ranges: the ranges, sorted by IOVA (allocated by gpumig_dirty_start())
 * @bytes: bitmap memory held now
 * @budget: most bitmap memory one log may hold (from dirty_budget_mb;
 *	tests lower it)
 */
struct gpumig_dirty {
	struct mutex lock;	/* see above */
	bool active;
	unsigned int shift;
	unsigned int nr_ranges;
	struct gpumig_dirty_range *ranges;
	size_t bytes;
	size_t budget;
};

void gpumig_dirty_init(struct gpumig_dirty *d);
void gpumig_dirty_destroy(struct gpumig_dirty *d);
u64 gpumig_dirty_bitmap_bytes(u64 npages);
int gpumig_dirty_start(struct gpumig_dirty *d, struct rb_root_cached *ranges,
		       u32 nnodes, u64 *page_size);
void gpumig_dirty_stop(struct gpumig_dirty *d);
void gpumig_dirty_mark(struct gpumig_dirty *d, u64 iova, u64 len);
int gpumig_dirty_collect(struct gpumig_dirty *d, u64 iova, u64 len,
			 void (*report)(void *ctx, u64 iova, u64 len), void *ctx);

#endif /* _GPUMIG_DIRTY_H */
