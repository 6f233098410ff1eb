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

#include <linux/types.h>

struct rb_root_cached;

/* Largest number of ranges kept; the VFIO core hands over at most a page. */
#define GPUMIG_DIRTY_MAX_RANGES		256

struct gpumig_dirty;

struct gpumig_dirty *gpumig_dirty_create(void);
void gpumig_dirty_destroy(struct gpumig_dirty *d);
size_t gpumig_dirty_bytes(struct gpumig_dirty *d);
bool gpumig_dirty_active(struct gpumig_dirty *d);
void gpumig_dirty_set_budget(struct gpumig_dirty *d, size_t bytes);
u64 gpumig_dirty_bitmap_bytes(u64 npages);
int gpumig_dirty_start(struct gpumig_dirty *d, struct rb_root_cached *ranges,
		       u32 nnodes, u64 *page_size);
void gpumig_dirty_stop(struct gpumig_dirty *d);
void gpumig_dirty_mark(struct gpumig_dirty *d, u64 iova, u64 len);
int gpumig_dirty_collect(struct gpumig_dirty *d, u64 iova, u64 len,
			 void (*report)(void *ctx, u64 iova, u64 len), void *ctx);

#endif /* _GPUMIG_DIRTY_H */
