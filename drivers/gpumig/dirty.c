// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig device-side dirty tracking of guest memory; see
 * include/gpumig/dirty.h.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/visibility.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/export.h>
#include <linux/log2.h>
#include <linux/math.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/sizes.h>

#include <linux/interval_tree.h>
#include <linux/mutex.h>

#include <gpumig/dirty.h>

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
 * @active: logging is on; also read without @lock (READ_ONCE) to skip
 *	marking while logging is off, and rechecked under it
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

static unsigned int dirty_budget_mb = 64;
module_param(dirty_budget_mb, uint, 0644);
MODULE_PARM_DESC(dirty_budget_mb,
		 "most MiB of dirty bitmaps one device's DMA log may use (32.5 KiB per GiB tracked at 4 KiB pages; default 64, about 2 TiB)");

/* Bits per level: a summary bit covers one word of the level below. */
#define L_SHIFT		ilog2(BITS_PER_LONG)

/**
 * gpumig_dirty_create() - an empty, inactive log
 *
 * Return: the log, or NULL.
 */
struct gpumig_dirty *gpumig_dirty_create(void)
{
	/* uncharged: one per device, made when the device is created */
	struct gpumig_dirty *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	mutex_init(&d->lock);
	d->budget = (size_t)READ_ONCE(dirty_budget_mb) * SZ_1M;
	return d;
}
EXPORT_SYMBOL_GPL(gpumig_dirty_create);

static void gpumig_dirty_free(struct gpumig_dirty *d)
{
	unsigned int i;

	for (i = 0; i < d->nr_ranges; i++)
		kvfree(d->ranges[i].l0);
	kfree(d->ranges);
	d->ranges = NULL;
	d->nr_ranges = 0;
	d->bytes = 0;
}

/**
 * gpumig_dirty_destroy() - stop logging and free the log
 * @d: log, or NULL
 */
void gpumig_dirty_destroy(struct gpumig_dirty *d)
{
	if (!d)
		return;
	gpumig_dirty_stop(d);
	mutex_destroy(&d->lock);
	kfree(d);
}
EXPORT_SYMBOL_GPL(gpumig_dirty_destroy);

/**
 * gpumig_dirty_bytes() - bitmap memory the log holds now
 * @d: log
 *
 * Return: bytes.
 */
size_t gpumig_dirty_bytes(struct gpumig_dirty *d)
{
	size_t n;

	mutex_lock(&d->lock);
	n = d->bytes;
	mutex_unlock(&d->lock);
	return n;
}
EXPORT_SYMBOL_GPL(gpumig_dirty_bytes);

/**
 * gpumig_dirty_active() - is logging on?
 * @d: log
 *
 * Return: true between a successful start and the next stop.
 */
bool gpumig_dirty_active(struct gpumig_dirty *d)
{
	return READ_ONCE(d->active);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_dirty_active);

/**
 * gpumig_dirty_set_budget() - most bitmap memory the next start may take
 * @d: log
 * @bytes: the budget; the module parameter dirty_budget_mb sets the default
 */
void gpumig_dirty_set_budget(struct gpumig_dirty *d, size_t bytes)
{
	mutex_lock(&d->lock);
	d->budget = bytes;
	mutex_unlock(&d->lock);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_dirty_set_budget);

/**
 * gpumig_dirty_bitmap_bytes() - bitmap memory for a range of @npages pages
 * @npages: pages tracked
 *
 * Return: bytes, or U64_MAX when it would not even fit a u64.
 */
u64 gpumig_dirty_bitmap_bytes(u64 npages)
{
	u64 w0 = DIV_ROUND_UP_ULL(npages, BITS_PER_LONG);
	u64 w1 = DIV_ROUND_UP_ULL(w0, BITS_PER_LONG);
	u64 w2 = DIV_ROUND_UP_ULL(w1, BITS_PER_LONG);

	if (npages > U64_MAX / 2)
		return U64_MAX;
	return (w0 + w1 + w2) * sizeof(unsigned long);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_dirty_bitmap_bytes);

/**
 * gpumig_dirty_start() - start logging (vfio_log_ops.log_start)
 * @d: log
 * @ranges: the ranges from the VFIO core
 * @nnodes: how many
 * @page_size: in: the page size asked for, a hint; out: the one used (a
 *	power of two from PAGE_SIZE to 1 GiB, the nearest not above the hint)
 *
 * All bitmap memory is allocated here, charged to the caller's memory
 * cgroup.
 *
 * Return: 0, -EINVAL for a bad range, -E2BIG for too many
 * ranges or bitmaps over the budget, -EBUSY when already logging,
 * -ENOMEM.
 */
int gpumig_dirty_start(struct gpumig_dirty *d, struct rb_root_cached *ranges,
		       u32 nnodes, u64 *page_size)
{
	struct gpumig_dirty_range *r, *tab;
	struct interval_tree_node *n;
	unsigned int nr = 0, shift, i;
	u64 ps = *page_size, total = 0;
	size_t budget;
	int ret;

	mutex_lock(&d->lock);
	budget = d->budget;
	mutex_unlock(&d->lock);
	/*
	 * The page size asked for is a hint (the uAPI's DMA_LOGGING_START):
	 * the tracker takes the nearest it can do and says which.
	 */
	if (ps < PAGE_SIZE)
		ps = PAGE_SIZE;
	else if (ps > SZ_1G)
		ps = SZ_1G;
	else
		ps = rounddown_pow_of_two(ps);
	if (nnodes > GPUMIG_DIRTY_MAX_RANGES)
		return -E2BIG;
	shift = ilog2(ps);
	tab = kcalloc(max(nnodes, 1U), sizeof(*tab), GFP_KERNEL_ACCOUNT);
	if (!tab)
		return -ENOMEM;
	for (n = interval_tree_iter_first(ranges, 0, ULONG_MAX); n;
	     n = interval_tree_iter_next(n, 0, ULONG_MAX)) {
		u64 bytes;

		ret = -E2BIG;
		if (nr == nnodes)
			goto err;
		ret = -EINVAL;
		if (n->last < n->start)
			goto err;
		r = &tab[nr++];
		r->start = n->start;
		r->last = n->last;
		r->npages = (n->last >> shift) - (n->start >> shift) + 1;
		bytes = gpumig_dirty_bitmap_bytes(r->npages);
		/* kvmalloc() takes at most INT_MAX: about 64 TiB at 4 KiB pages */
		if (bytes > INT_MAX || check_add_overflow(total, bytes, &total) ||
		    total > budget) {
			pr_warn_ratelimited("gpumig: DMA logging refused: %u ranges need more than the %zu KiB of dirty bitmaps allowed (dirty_budget_mb)\n",
					    nnodes, budget / SZ_1K);
			ret = -E2BIG;
			goto err;
		}
	}
	for (i = 0; i < nr; i++) {
		u64 w0, w1;

		r = &tab[i];
		w0 = BITS_TO_LONGS(r->npages);
		w1 = BITS_TO_LONGS(w0);
		r->l0 = kvzalloc(gpumig_dirty_bitmap_bytes(r->npages), GFP_KERNEL_ACCOUNT);
		if (!r->l0) {
			ret = -ENOMEM;
			goto err;
		}
		r->l1 = r->l0 + w0;
		r->l2 = r->l1 + w1;
	}

	mutex_lock(&d->lock);
	if (d->active) {
		mutex_unlock(&d->lock);
		ret = -EBUSY;
		goto err;
	}
	d->ranges = tab;
	d->nr_ranges = nr;
	d->bytes = total;
	d->shift = shift;
	WRITE_ONCE(d->active, true);
	mutex_unlock(&d->lock);
	*page_size = ps;
	return 0;

err:
	for (i = 0; i < nr; i++)
		kvfree(tab[i].l0);
	kfree(tab);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_dirty_start);

/**
 * gpumig_dirty_stop() - stop logging and free the log's memory
 * @d: log
 */
void gpumig_dirty_stop(struct gpumig_dirty *d)
{
	mutex_lock(&d->lock);
	WRITE_ONCE(d->active, false);
	gpumig_dirty_free(d);
	mutex_unlock(&d->lock);
}
EXPORT_SYMBOL_GPL(gpumig_dirty_stop);

/* The first range whose last byte is at or after @iova, or nr_ranges. */
static unsigned int gpumig_dirty_find(struct gpumig_dirty *d, u64 iova)
{
	unsigned int lo = 0, hi = d->nr_ranges;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (d->ranges[mid].last < iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Page indexes [*a, *b] of range @r that overlap [@s, @e]; false when
 * none do.
 */
static bool gpumig_dirty_span(struct gpumig_dirty *d, struct gpumig_dirty_range *r,
			      u64 s, u64 e, unsigned long *a, unsigned long *b)
{
	u64 base = r->start >> d->shift;

	if (e < r->start || s > r->last)
		return false;
	*a = (max(s, r->start) >> d->shift) - base;
	*b = (min(e, r->last) >> d->shift) - base;
	return true;
}

/**
 * gpumig_dirty_mark() - the device wrote [@iova, @iova + @len)
 * @d: log
 * @iova: start
 * @len: bytes
 *
 * Call after the write landed: a report that clears the page before that
 * would otherwise let the old contents be copied with no later report.
 * Allocates nothing.
 */
void gpumig_dirty_mark(struct gpumig_dirty *d, u64 iova, u64 len)
{
	unsigned long a, b, w;
	u64 end;
	unsigned int i;

	if (!len || !READ_ONCE(d->active) || check_add_overflow(iova, len - 1, &end))
		return;
	mutex_lock(&d->lock);
	if (!d->active)
		goto out;
	for (i = gpumig_dirty_find(d, iova); i < d->nr_ranges; i++) {
		struct gpumig_dirty_range *r = &d->ranges[i];

		if (!gpumig_dirty_span(d, r, iova, end, &a, &b))
			break;
		bitmap_set(r->l0, a, b - a + 1);
		for (w = a >> L_SHIFT; w <= b >> L_SHIFT; w++) {
			__set_bit(w, r->l1);
			__set_bit(w >> L_SHIFT, r->l2);
		}
	}
out:
	mutex_unlock(&d->lock);
}
EXPORT_SYMBOL_GPL(gpumig_dirty_mark);

struct gpumig_dirty_run {
	void (*report)(void *ctx, u64 iova, u64 len);
	void *ctx;
	unsigned int shift;
	u64 base;		/* page number of the range's first page */
	unsigned long first;	/* pending run: first page index, length */
	unsigned long count;
};

static void gpumig_dirty_flush(struct gpumig_dirty_run *run)
{
	if (run->count)
		run->report(run->ctx, (run->base + run->first) << run->shift,
			    (u64)run->count << run->shift);
	run->count = 0;
}

/* Dirty pages [@first, @first + @count) of the range; merged into runs. */
static void gpumig_dirty_emit(struct gpumig_dirty_run *run, unsigned long first,
			      unsigned long count)
{
	if (run->count && run->first + run->count == first) {
		run->count += count;
		return;
	}
	gpumig_dirty_flush(run);
	run->first = first;
	run->count = count;
}

/* Report and clear the bits [@a, @b] of page-bit word @w. */
static void gpumig_dirty_take_word(struct gpumig_dirty_range *r, unsigned long w,
				   unsigned long a, unsigned long b,
				   struct gpumig_dirty_run *run)
{
	unsigned int lo = (w == a >> L_SHIFT) ? a % BITS_PER_LONG : 0;
	unsigned int hi = (w == b >> L_SHIFT) ? b % BITS_PER_LONG : BITS_PER_LONG - 1;
	unsigned long bits = r->l0[w] & GENMASK(hi, lo);

	r->l0[w] &= ~bits;
	if (!r->l0[w])
		__clear_bit(w, r->l1);
	while (bits) {
		unsigned int s = __ffs(bits);
		unsigned long x = bits >> s;
		unsigned int n = ~x ? __ffs(~x) : BITS_PER_LONG - s;

		gpumig_dirty_emit(run, w * BITS_PER_LONG + s, n);
		bits &= ~GENMASK(s + n - 1, s);
	}
}

static void gpumig_dirty_take(struct gpumig_dirty_range *r, unsigned long a,
			      unsigned long b, struct gpumig_dirty_run *run)
{
	unsigned long w0a = a >> L_SHIFT, w0b = b >> L_SHIFT;
	unsigned long w1a = w0a >> L_SHIFT, w1b = w0b >> L_SHIFT;
	unsigned long j = w1a, w;

	for_each_set_bit_from(j, r->l2, w1b + 1) {
		unsigned long hi = min((j << L_SHIFT) + BITS_PER_LONG - 1, w0b);

		w = max(j << L_SHIFT, w0a);
		for_each_set_bit_from(w, r->l1, hi + 1)
			gpumig_dirty_take_word(r, w, a, b, run);
		if (!r->l1[j])
			__clear_bit(j, r->l2);
	}
}

/*
 * Page @p of @r reaches outside the range asked for, [@s, @e]: report the
 * overlap if the page is dirty, and leave it dirty for the part not asked
 * for (a later report of that part must still see it).
 */
static void gpumig_dirty_peek(struct gpumig_dirty_range *r, unsigned long p,
			      u64 s, u64 e, struct gpumig_dirty_run *run)
{
	u64 lo = (run->base + p) << run->shift;
	u64 hi = lo + (1ULL << run->shift) - 1;

	if (!test_bit(p, r->l0))
		return;
	gpumig_dirty_flush(run);
	lo = max(lo, s);
	hi = min(hi, e);
	run->report(run->ctx, lo, hi - lo + 1);
}

/**
 * gpumig_dirty_collect() - report and clear the dirty pages of a range
 * @d: log
 * @iova: start of the range asked for
 * @len: its length
 * @report: called for each run of dirty pages inside the range, in
 *	increasing IOVA order, clipped to the range: a tracking page that
 *	reaches outside it is reported for the overlap and stays dirty
 * @ctx: its argument
 *
 * Return: 0, or -EINVAL when logging is off.
 */
int gpumig_dirty_collect(struct gpumig_dirty *d, u64 iova, u64 len,
			 void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	struct gpumig_dirty_run run = { .report = report, .ctx = ctx };
	unsigned long a, b;
	unsigned int i;
	u64 end;

	if (!len)
		return 0;
	if (check_add_overflow(iova, len - 1, &end))
		end = U64_MAX;
	mutex_lock(&d->lock);
	if (!d->active) {
		mutex_unlock(&d->lock);
		return -EINVAL;
	}
	run.shift = d->shift;
	for (i = gpumig_dirty_find(d, iova); i < d->nr_ranges; i++) {
		struct gpumig_dirty_range *r = &d->ranges[i];

		if (!gpumig_dirty_span(d, r, iova, end, &a, &b))
			break;
		run.base = r->start >> d->shift;
		run.count = 0;
		/*
		 * A tracking page whose logged part the range asked for cuts
		 * (an IOVA or length not aligned to the tracking page, or a
		 * report page size other than START's) is reported, not
		 * cleared.
		 */
		if (max((run.base + a) << d->shift, r->start) < iova) {
			gpumig_dirty_peek(r, a, iova, end, &run);
			if (a++ == b) {
				gpumig_dirty_flush(&run);
				continue;
			}
		}
		if (min(((run.base + b) << d->shift) + (1ULL << d->shift) - 1, r->last) > end) {
			if (a < b)
				gpumig_dirty_take(r, a, b - 1, &run);
			gpumig_dirty_peek(r, b, iova, end, &run);
		} else {
			gpumig_dirty_take(r, a, b, &run);
		}
		gpumig_dirty_flush(&run);
	}
	mutex_unlock(&d->lock);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_dirty_collect);
