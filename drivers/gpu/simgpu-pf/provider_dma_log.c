// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf's provider: the device's own DMA log of the guest pages a VF
 * writes, in its 4 KiB page, whose cut pages a report keeps dirty; see
 * provider.h.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/interval_tree.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "provider.h"

#define SIMGPU_MIG_LOG_PAGE	SIMGPU_PF_LOG_PAGE_SIZE	/* the device's DMA-log grain */
#define SIMGPU_MIG_LOG_CHUNK	(256UL * 1024)	/* pages per report request */

int simgpu_mig_dma_log_start(struct gpumig_vf *gvf, struct rb_root_cached *ranges,
			     u32 nnodes, u64 *page_size)
{
	struct simgpu_mig *s = to_mig(gvf);
	struct simgpu_pf_iova_range *r;
	struct interval_tree_node *node;
	unsigned int n = 0;
	int ret;

	if (s->log_bits)
		return -EBUSY;
	/* Reports are made at any grain of 4 KiB or more (iova_bitmap_set). */
	if (*page_size < SIMGPU_MIG_LOG_PAGE)
		return -EINVAL;
	if (nnodes > s->info.log_ranges)
		vfio_combine_iova_ranges(ranges, nnodes, s->info.log_ranges);
	r = kcalloc(s->info.log_ranges, sizeof(*r), GFP_KERNEL_ACCOUNT);
	s->log_bits = bitmap_zalloc(SIMGPU_MIG_LOG_CHUNK, GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!r || !s->log_bits)
		goto out;
	for (node = interval_tree_iter_first(ranges, 0, ULONG_MAX); node;
	     node = interval_tree_iter_next(node, 0, ULONG_MAX)) {
		u64 start = ALIGN_DOWN(node->start, SIMGPU_MIG_LOG_PAGE);
		u64 end = ALIGN((u64)node->last + 1, SIMGPU_MIG_LOG_PAGE);

		ret = -E2BIG;
		if (n == s->info.log_ranges)
			goto out;
		/* Combined ranges may touch once aligned: join them. */
		if (n && start <= r[n - 1].iova + r[n - 1].length) {
			r[n - 1].length = max(end, r[n - 1].iova + r[n - 1].length) - r[n - 1].iova;
			continue;
		}
		r[n].iova = start;
		r[n].length = end - start;
		n++;
	}
	ret = n ? simgpu_pf_vf_dma_log_start(s->vf, r, n, SIMGPU_MIG_LOG_PAGE) : -EINVAL;
out:
	if (ret) {
		kfree(r);
		bitmap_free(s->log_bits);
		s->log_bits = NULL;
		return ret;
	}
	s->log_ranges = r;
	s->log_nr = n;
	return 0;
}

void simgpu_mig_log_free(struct simgpu_mig *s)
{
	bitmap_free(s->log_bits);
	s->log_bits = NULL;
	kfree(s->log_ranges);
	s->log_ranges = NULL;
	s->log_nr = 0;
	xa_destroy(&s->log_carry);
}

void simgpu_mig_dma_log_stop(struct gpumig_vf *gvf)
{
	struct simgpu_mig *s = to_mig(gvf);

	if (!s->log_bits)
		return;
	simgpu_pf_vf_dma_log_stop(s->vf);
	simgpu_mig_log_free(s);
}

/*
 * Report the dirty 4 KiB pages of one chunk, [@first, @first + @n pages),
 * clipped to [@iova, @last].  A page the device cleared in an earlier
 * report that asked for only part of it counts as dirty; a dirty page this
 * range cuts is remembered so.  The slots of the cut pages were reserved
 * by the caller: nothing here allocates or fails.
 */
static void simgpu_mig_log_chunk(struct simgpu_mig *s, u64 first, unsigned long n,
				 u64 iova, u64 last,
				 void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	unsigned long base = first / SIMGPU_MIG_LOG_PAGE, idx, a, e;
	void *entry;

	xa_for_each_range(&s->log_carry, idx, entry, base, base + n - 1) {
		u64 pg = (u64)idx * SIMGPU_MIG_LOG_PAGE;

		if (!xa_is_value(entry))
			continue;	/* a slot reserved for this report */
		__set_bit(idx - base, s->log_bits);
		if (pg >= iova && pg + SIMGPU_MIG_LOG_PAGE - 1 <= last)
			xa_erase(&s->log_carry, idx);
	}
	/* Only the range's first and last pages can be cut. */
	if (first < iova && test_bit(0, s->log_bits))
		xa_store(&s->log_carry, base, xa_mk_value(1), GFP_NOWAIT);
	if (first + (u64)n * SIMGPU_MIG_LOG_PAGE - 1 > last && test_bit(n - 1, s->log_bits))
		xa_store(&s->log_carry, base + n - 1, xa_mk_value(1), GFP_NOWAIT);
	for_each_set_bitrange(a, e, s->log_bits, n) {
		u64 lo = max(first + (u64)a * SIMGPU_MIG_LOG_PAGE, iova);
		u64 hi = min(first + (u64)e * SIMGPU_MIG_LOG_PAGE - 1, last);

		report(ctx, lo, hi - lo + 1);
	}
}

/*
 * Report [@iova, @last] inside one tracked range: the device is asked
 * only about pages it tracks, so a report costs what was tracked (at most
 * the PF's log_pages in all), whatever span the user names, and a fatal
 * signal ends it between two chunks.
 */
static int simgpu_mig_log_range(struct simgpu_mig *s, const struct simgpu_pf_iova_range *r,
				u64 iova, u64 last,
				void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	u64 first = max(ALIGN_DOWN(iova, SIMGPU_MIG_LOG_PAGE), r->iova);
	u64 end = min(ALIGN_DOWN(last, SIMGPU_MIG_LOG_PAGE),
		      r->iova + r->length - SIMGPU_MIG_LOG_PAGE);
	u64 pages;
	int ret;

	if (first > end)
		return 0;
	pages = (end - first) / SIMGPU_MIG_LOG_PAGE + 1;
	while (pages) {
		unsigned long n = min_t(u64, pages, SIMGPU_MIG_LOG_CHUNK);

		if (fatal_signal_pending(current))
			return -EINTR;
		ret = simgpu_pf_vf_dma_log_report(s->vf, first, (u64)n * SIMGPU_MIG_LOG_PAGE,
						  s->log_bits);
		if (ret)
			return ret;
		simgpu_mig_log_chunk(s, first, n, iova, last, report, ctx);
		first += (u64)n * SIMGPU_MIG_LOG_PAGE;
		pages -= n;
		cond_resched();
	}
	return 0;
}

int simgpu_mig_dma_log_report(struct gpumig_vf *gvf, u64 iova, u64 len,
			      void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	struct simgpu_mig *s = to_mig(gvf);
	u64 last = iova + len - 1;	/* the engine checked it fits */
	u64 first = ALIGN_DOWN(iova, SIMGPU_MIG_LOG_PAGE);
	u64 edge[2] = { first, ALIGN_DOWN(last, SIMGPU_MIG_LOG_PAGE) };
	bool cut[2] = { first < iova, last % SIMGPU_MIG_LOG_PAGE != SIMGPU_MIG_LOG_PAGE - 1 };
	unsigned int k;
	int i, ret = 0;

	if (!s->log_bits)
		return -EINVAL;
	/*
	 * The device clears what it reports in whole 4 KiB pages: a page the
	 * range cuts is remembered as still dirty.  Reserve those slots
	 * first, so that no allocation can fail after the device cleared.
	 */
	for (i = 0; i < 2; i++) {
		if (!cut[i])
			continue;
		ret = xa_reserve(&s->log_carry, edge[i] / SIMGPU_MIG_LOG_PAGE, GFP_KERNEL_ACCOUNT);
		if (ret)
			goto out;
	}
	/* The tracked ranges are sorted and apart (simgpu_mig_dma_log_start()). */
	for (k = 0; k < s->log_nr && !ret; k++)
		ret = simgpu_mig_log_range(s, &s->log_ranges[k], iova, last, report, ctx);
out:
	/* A reserved slot that holds no page reads as NULL: drop it. */
	for (i = 0; i < 2; i++)
		if (cut[i])
			xa_release(&s->log_carry, edge[i] / SIMGPU_MIG_LOG_PAGE);
	return ret;
}
