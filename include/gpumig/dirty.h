/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig device-side dirty tracking of guest memory (VFIO DMA logging).
 *
 * The device marks every guest page it wrote, after the write landed;
 * a report walks only the marked pages of the range asked for and clears
 * them, so its cost grows with the number of dirty pages, not with the
 * size of the tracked range.  A write racing with a report is reported
 * by it or by the next one, never lost.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_DIRTY_H
#define _GPUMIG_DIRTY_H

#include <linux/bitmap.h>
#include <linux/bits.h>
#include <linux/interval_tree.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/xarray.h>

/* Largest number of ranges kept; the VFIO core hands over at most a page. */
#define GPUMIG_DIRTY_MAX_RANGES		256
/* Dirty pages remembered between two reports; beyond, everything is dirty. */
#define GPUMIG_DIRTY_MAX_PAGES		BIT(20)

struct gpumig_dirty_range {
	u64 start;
	u64 last;
};

/**
 * struct gpumig_dirty - one device's dirty-page log
 * @lock: guards everything below
 * @active: logging is on
 * @shift: log2 of the page size asked for
 * @nr_ranges: ranges tracked
 * @ranges: the ranges, sorted
 * @pages: dirty page numbers (iova >> @shift), only those written
 * @nr_dirty: entries in @pages
 * @max_pages: bound on @nr_dirty (GPUMIG_DIRTY_MAX_PAGES; tests lower it)
 * @overflow: ranges to report whole: more than GPUMIG_DIRTY_MAX_PAGES
 *	were written between two reports, so every tracked page is reported
 *	dirty once
 */
struct gpumig_dirty {
	struct mutex lock;	/* see above */
	bool active;
	unsigned int shift;
	unsigned int nr_ranges;
	struct gpumig_dirty_range ranges[GPUMIG_DIRTY_MAX_RANGES];
	struct xarray pages;
	unsigned long nr_dirty;
	unsigned long max_pages;
	DECLARE_BITMAP(overflow, GPUMIG_DIRTY_MAX_RANGES);
};

void gpumig_dirty_init(struct gpumig_dirty *d);
void gpumig_dirty_destroy(struct gpumig_dirty *d);
int gpumig_dirty_start(struct gpumig_dirty *d, struct rb_root_cached *ranges,
		       u32 nnodes, u64 *page_size);
void gpumig_dirty_stop(struct gpumig_dirty *d);
void gpumig_dirty_mark(struct gpumig_dirty *d, u64 iova, u64 len);
int gpumig_dirty_collect(struct gpumig_dirty *d, u64 iova, u64 len,
			 void (*report)(void *ctx, u64 iova, u64 len), void *ctx);

#endif /* _GPUMIG_DIRTY_H */
