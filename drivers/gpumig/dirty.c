// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig device-side dirty tracking of guest memory; see
 * include/gpumig/dirty.h.
 *
 * Memory: one xarray entry per page dirtied since the last report (no
 * memory at all for clean pages, whatever the size of the ranges), at
 * most GPUMIG_DIRTY_MAX_PAGES of them; past that the log degrades to
 * "everything tracked is dirty" instead of growing.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/export.h>
#include <linux/log2.h>
#include <linux/sizes.h>
#include <linux/xarray.h>

#include <gpumig/dirty.h>

/**
 * gpumig_dirty_init() - an empty, inactive log
 * @d: log
 */
void gpumig_dirty_init(struct gpumig_dirty *d)
{
	memset(d, 0, sizeof(*d));
	mutex_init(&d->lock);
	xa_init(&d->pages);
	d->max_pages = GPUMIG_DIRTY_MAX_PAGES;
}
EXPORT_SYMBOL_GPL(gpumig_dirty_init);

/**
 * gpumig_dirty_destroy() - free the log
 * @d: log
 */
void gpumig_dirty_destroy(struct gpumig_dirty *d)
{
	xa_destroy(&d->pages);
	mutex_destroy(&d->lock);
}
EXPORT_SYMBOL_GPL(gpumig_dirty_destroy);

/**
 * gpumig_dirty_start() - start logging (vfio_log_ops.log_start)
 * @d: log
 * @ranges: the ranges from the VFIO core
 * @nnodes: how many
 * @page_size: in: the page size asked for; out: the one used
 *
 * Return: 0, -EINVAL for a bad page size, -E2BIG for too many ranges,
 * -EBUSY when already logging.
 */
int gpumig_dirty_start(struct gpumig_dirty *d, struct rb_root_cached *ranges,
		       u32 nnodes, u64 *page_size)
{
	struct interval_tree_node *n;
	u64 ps = *page_size;
	int ret = 0;

	if (ps < PAGE_SIZE || !is_power_of_2(ps) || ps > SZ_1G)
		return -EINVAL;
	if (nnodes > GPUMIG_DIRTY_MAX_RANGES)
		return -E2BIG;
	mutex_lock(&d->lock);
	if (d->active) {
		ret = -EBUSY;
		goto out;
	}
	d->nr_ranges = 0;
	for (n = interval_tree_iter_first(ranges, 0, ULONG_MAX); n;
	     n = interval_tree_iter_next(n, 0, ULONG_MAX)) {
		if (d->nr_ranges == GPUMIG_DIRTY_MAX_RANGES) {
			ret = -E2BIG;
			goto out;
		}
		d->ranges[d->nr_ranges].start = n->start;
		d->ranges[d->nr_ranges].last = n->last;
		d->nr_ranges++;
	}
	d->shift = ilog2(ps);
	xa_destroy(&d->pages);
	d->nr_dirty = 0;
	bitmap_zero(d->overflow, GPUMIG_DIRTY_MAX_RANGES);
	d->active = true;
out:
	mutex_unlock(&d->lock);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_dirty_start);

/**
 * gpumig_dirty_stop() - stop logging and forget the log
 * @d: log
 */
void gpumig_dirty_stop(struct gpumig_dirty *d)
{
	mutex_lock(&d->lock);
	d->active = false;
	xa_destroy(&d->pages);
	d->nr_dirty = 0;
	bitmap_zero(d->overflow, GPUMIG_DIRTY_MAX_RANGES);
	d->nr_ranges = 0;
	mutex_unlock(&d->lock);
}
EXPORT_SYMBOL_GPL(gpumig_dirty_stop);

static bool gpumig_dirty_tracked(struct gpumig_dirty *d, u64 iova)
{
	unsigned int i;

	for (i = 0; i < d->nr_ranges; i++)
		if (iova >= d->ranges[i].start && iova <= d->ranges[i].last)
			return true;
	return false;
}

/**
 * gpumig_dirty_mark() - the device wrote [@iova, @iova + @len)
 * @d: log
 * @iova: start
 * @len: bytes
 *
 * Call after the write landed: a report that clears the page before that
 * would otherwise let the old contents be copied with no later report.
 */
void gpumig_dirty_mark(struct gpumig_dirty *d, u64 iova, u64 len)
{
	u64 pfn, last;

	if (!len || !READ_ONCE(d->active))
		return;
	mutex_lock(&d->lock);
	if (!d->active)
		goto out;
	last = (iova + len - 1) >> d->shift;
	for (pfn = iova >> d->shift; pfn <= last; pfn++) {
		if (!gpumig_dirty_tracked(d, pfn << d->shift))
			continue;
		if (xa_load(&d->pages, pfn))
			continue;
		if (d->nr_dirty >= d->max_pages ||
		    xa_err(xa_store(&d->pages, pfn, xa_mk_value(1), GFP_KERNEL))) {
			/* Cannot remember it: every tracked range is dirty, once. */
			bitmap_fill(d->overflow, d->nr_ranges);
			xa_destroy(&d->pages);
			d->nr_dirty = 0;
			break;
		}
		d->nr_dirty++;
	}
out:
	mutex_unlock(&d->lock);
}
EXPORT_SYMBOL_GPL(gpumig_dirty_mark);

/**
 * gpumig_dirty_collect() - report and clear the dirty pages of a range
 * @d: log
 * @iova: start of the range asked for
 * @len: its length
 * @report: called for each dirty page (or, after an overflow, each
 *	tracked span) inside the range
 * @ctx: its argument
 *
 * Return: 0, or -EINVAL when logging is off.
 */
int gpumig_dirty_collect(struct gpumig_dirty *d, u64 iova, u64 len,
			 void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	unsigned long first, last, pfn;
	void *entry;

	if (!len)
		return 0;
	mutex_lock(&d->lock);
	if (!d->active) {
		mutex_unlock(&d->lock);
		return -EINVAL;
	}
	if (!bitmap_empty(d->overflow, d->nr_ranges)) {
		unsigned int i;

		for_each_set_bit(i, d->overflow, d->nr_ranges) {
			u64 s = max(iova, d->ranges[i].start);
			u64 e = min(iova + len - 1, d->ranges[i].last);

			if (s > e)
				continue;
			report(ctx, s, e - s + 1);
			/* Forgotten only once the whole range was reported. */
			if (s == d->ranges[i].start && e == d->ranges[i].last)
				clear_bit(i, d->overflow);
		}
	}
	first = iova >> d->shift;
	last = (iova + len - 1) >> d->shift;
	xa_for_each_range(&d->pages, pfn, entry, first, last) {
		xa_erase(&d->pages, pfn);
		d->nr_dirty--;
		report(ctx, (u64)pfn << d->shift, 1ULL << d->shift);
	}
	mutex_unlock(&d->lock);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_dirty_collect);
