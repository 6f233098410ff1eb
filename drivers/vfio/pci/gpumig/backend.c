// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-vfio-pci's backend: the gpumig engine's services for a simgpu
 * VF, each one a request to the PF driver (include/gpumig/simgpu_pf.h).
 * VRAM dirty bits live in the device; this file keeps the blocks the
 * device reported and the engine has not taken yet, and asks the device
 * again at the start of every pass.  Also here: the check that a function
 * whose tenant left is inert (reset, no DMA), for VFs and for functions
 * that do not migrate alike.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/crc32.h>
#include <linux/interval_tree.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/uio.h>
#include <linux/vfio.h>
#include <uapi/linux/simgpu_pf.h>

#include "gpumig_vfio_pci.h"

#define GVP_QUIESCE_MS		2000	/* drain bound with preemption off */
#define GVP_INVAL_MS		1000	/* acknowledgment bound */
#define GVP_LOG_PAGE		SIMGPU_PF_LOG_PAGE_SIZE	/* the device's DMA-log grain */
#define GVP_LOG_CHUNK		(256UL * 1024)	/* pages per report request */

static struct pci_dev *gvp_pdev(struct gvp_dev *g)
{
	return g->core.pdev;
}

/**
 * gvp_check_inert() - is a function whose tenant left safe to hand on?
 * @g: function, closed by vfio-pci-core (which disabled it and tried to
 *	reset it)
 * @vf_reset: judge the reset by the VF's FLR count (a simgpu VF) rather
 *	than by vfio-pci-core's needs_reset
 * @why: what is wrong, on failure
 * @len: its size
 *
 * A reset that did not happen is tried once more.  Bus mastering must be
 * off: nothing of the tenant's may still reach memory.
 *
 * Return: 0, or a negative errno with @why set.
 */
int gvp_check_inert(struct gvp_dev *g, bool vf_reset, char *why, size_t len)
{
	struct pci_dev *pdev = gvp_pdev(g);
	bool reset;
	u16 cmd;
	int ret;

	if (vf_reset)
		reset = simgpu_pf_vf_resets(g->vf) != g->resets_at_close;
	else
		reset = !g->core.needs_reset;
	if (!reset) {
		ret = pci_try_reset_function(pdev);
		if (vf_reset && !ret)
			reset = simgpu_pf_vf_resets(g->vf) != g->resets_at_close;
		else
			reset = !ret;
		if (!reset) {
			snprintf(why, len,
				 "the function was not reset (%d): it may hold the tenant's state",
				 ret);
			return ret ? ret : -EIO;
		}
	}
	pci_read_config_word(pdev, PCI_COMMAND, &cmd);
	if (cmd & PCI_COMMAND_MASTER) {
		pci_clear_master(pdev);
		snprintf(why, len, "bus mastering was still enabled after release");
		return -EBUSY;
	}
	return 0;
}

/**
 * gvp_release_check() - a function without migration was released
 * @g: function, closed by vfio-pci-core
 *
 * An inert function is handed on; one that is not is quarantined: it
 * refuses the next open until an operator lifts the quarantine.
 *
 * Return: 0, or -EBUSY when quarantined.
 */
int gvp_release_check(struct gvp_dev *g)
{
	char why[GVP_WHY_LEN] = "";
	int ret = gvp_check_inert(g, false, why, sizeof(why));

	if (ret) {
		gpumig_quarantine_set(&gvp_pdev(g)->dev, why);
		pci_err(gvp_pdev(g), "quarantined: %s\n", why);
	}
	return ret ? -EBUSY : 0;
}

/**
 * gvp_unquarantine() - an operator lifts a quarantine
 * @g: function
 *
 * Return: 0, -EINVAL when not quarantined, or the error of the engine or
 * of the reset that must succeed first.
 */
int gvp_unquarantine(struct gvp_dev *g)
{
	struct pci_dev *pdev = gvp_pdev(g);
	int ret;

	if (g->mig)
		return gpumig_mig_unquarantine(g->mig);
	if (!gpumig_quarantine_get(&pdev->dev, NULL, 0))
		return -EINVAL;
	ret = pci_reset_function(pdev);
	if (!ret && !gpumig_quarantine_clear(&pdev->dev))
		pci_notice(pdev, "quarantine lifted by the operator\n");
	return ret;
}

/* ---- VRAM ----------------------------------------------------------------- */

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
static bool gvp_counted(struct gvp_dev *g)
{
	return g->info.caps & SIMGPU_PF_CAP_VRAM_COUNT;
}

/* Ask the device for the blocks to send now. */
static int gvp_sync(struct gvp_dev *g)
{
	lockdep_assert_held(&g->vram_lock);
	if (gvp_counted(g))
		return simgpu_pf_vf_vram_peek(g->vf, g->vdirty, g->populated);
	return simgpu_pf_vf_vram_dirty(g->vf, g->vdirty, g->populated);
}

static int gvp_be_vram_track(void *priv, bool on)
{
	struct gvp_dev *g = priv;
	int ret;

	mutex_lock(&g->vram_lock);
	bitmap_zero(g->vdirty, g->nr_blocks);
	g->tracking = false;
	ret = simgpu_pf_vf_vram_track(g->vf, on);
	if (!ret && on) {
		/*
		 * The device marks every block dirty: the first pass sends
		 * all.  A device that keeps the set is asked at the pass.
		 */
		ret = gvp_counted(g) ? 0 : gvp_sync(g);
		if (ret)
			simgpu_pf_vf_vram_track(g->vf, false);
		else
			g->tracking = true;
	}
	mutex_unlock(&g->vram_lock);
	return ret;
}

/*
 * A block to be sent as zeroes without a read, taken in the device now.
 * Written since the pass began, it is read (and taken) as data instead.
 */
static long gvp_take_zero_block(struct gvp_dev *g, unsigned long b, bool *zero)
{
	u64 taken;
	int ret = simgpu_pf_vf_vram_take_zero(g->vf, b, 1, &taken);

	if (ret)
		return ret;
	*zero = taken;
	return b;
}

static long gvp_be_vram_next_dirty(void *priv, unsigned long from, bool *zero)
{
	struct gvp_dev *g = priv;
	unsigned long b;
	long ret = 0;

	mutex_lock(&g->vram_lock);
	if (WARN_ON_ONCE(!g->tracking))
		ret = -ENOENT;
	else if (!from)
		ret = gvp_sync(g);	/* a new pass: what changed meanwhile */
	if (!ret) {
		b = find_next_bit(g->vdirty, g->nr_blocks, from);
		if (b < g->nr_blocks) {
			clear_bit(b, g->vdirty);
			*zero = !test_bit(b, g->populated);
			ret = b;
			if (*zero && gvp_counted(g))
				ret = gvp_take_zero_block(g, b, zero);
		} else {
			ret = -ENOENT;
		}
	}
	mutex_unlock(&g->vram_lock);
	return ret;
}

/* The dirty unpopulated blocks from @from on, at most @max, taken at once. */
static unsigned long gvp_be_vram_take_zero_run(void *priv, unsigned long from,
					       unsigned long max)
{
	struct gvp_dev *g = priv;
	unsigned long end = 0;

	mutex_lock(&g->vram_lock);
	if (g->tracking && from < g->nr_blocks) {
		end = from + min(max, g->nr_blocks - from);
		end = find_next_zero_bit(g->vdirty, end, from);
		end = find_next_bit(g->populated, end, from);
		if (end > from && gvp_counted(g)) {
			u64 taken = 0;

			/* The device's word: a block written meanwhile ends the run. */
			if (simgpu_pf_vf_vram_take_zero(g->vf, from, end - from, &taken))
				taken = 0;	/* the blocks stay dirty: sent later */
			end = from + min_t(u64, taken, end - from);
		}
		bitmap_clear(g->vdirty, from, end - from);
	}
	mutex_unlock(&g->vram_lock);
	return end > from ? end - from : 0;
}

/* Blocks still to send (all of VRAM while no pre-copy runs). */
static void gvp_be_vram_dirty_count(void *priv, unsigned long *nonzero, unsigned long *zero)
{
	struct gvp_dev *g = priv;
	unsigned long n = g->nr_blocks, all;

	mutex_lock(&g->vram_lock);
	if (gvp_counted(g)) {
		u64 dirty, written;

		/* On failure, the pass's own copy answers. */
		if (!simgpu_pf_vf_vram_count(g->vf, &dirty, &written)) {
			*nonzero = written;
			*zero = dirty - written;
			mutex_unlock(&g->vram_lock);
			return;
		}
	} else {
		/* On failure the last answer stands; the stream itself will fail. */
		gvp_sync(g);
	}
	if (g->tracking) {
		all = bitmap_weight(g->vdirty, n);
		*nonzero = bitmap_weight_and(g->vdirty, g->populated, n);
	} else {
		all = n;
		*nonzero = bitmap_weight(g->populated, n);
	}
	*zero = all - *nonzero;
	mutex_unlock(&g->vram_lock);
}

static int gvp_be_vram_read(void *priv, u64 off, void *buf, u32 len)
{
	struct gvp_dev *g = priv;

	/* The engine reads whole blocks it took from vram_next_dirty. */
	if (gvp_counted(g) && !((off | len) & (GPUMIG_BLOCK_SIZE - 1)))
		return simgpu_pf_vf_vram_read_take(g->vf, off, buf, len);
	return simgpu_pf_vf_vram_read(g->vf, off, buf, len);
}

/* The guest's resets through the VF's CONTROL register, as the PF counts them. */
static u32 gvp_be_guest_resets(void *priv)
{
	struct gvp_dev *g = priv;

	return simgpu_pf_vf_guest_resets(g->vf);
}

static int gvp_be_vram_write(void *priv, u64 off, const void *buf, u32 len)
{
	struct gvp_dev *g = priv;

	return simgpu_pf_vf_vram_write(g->vf, off, buf, len);
}

/* simgpu_pf_vf_vram_write_from()'s fill: the user's bytes into the DMA buffer. */
struct gvp_fill {
	struct iov_iter *from;
	u32 *crc;
};

static ssize_t gvp_fill_from_iter(void *ctx, void *buf, u32 len)
{
	struct gvp_fill *f = ctx;
	size_t got = copy_from_iter(buf, len, f->from);

	*f->crc = crc32_le(*f->crc, buf, got);
	return got;
}

/* Straight from the user into the buffer the VF's DMA reads: one copy. */
static ssize_t gvp_be_vram_write_iter(void *priv, u64 off, struct iov_iter *from, u32 len,
				      u32 *crc)
{
	struct gvp_dev *g = priv;
	struct gvp_fill f = { .from = from, .crc = crc };

	return simgpu_pf_vf_vram_write_from(g->vf, off, len, gvp_fill_from_iter, &f);
}

/* ---- the device ------------------------------------------------------------ */

static int gvp_be_quiesce(void *priv)
{
	struct gvp_dev *g = priv;

	return simgpu_pf_vf_pause(g->vf, GVP_QUIESCE_MS);
}

static void gvp_be_unquiesce(void *priv)
{
	struct gvp_dev *g = priv;
	int ret = simgpu_pf_vf_resume(g->vf);

	if (ret)
		pci_warn(gvp_pdev(g), "the VF could not be resumed (%d)\n", ret);
}

static int gvp_be_invalidate(void *priv)
{
	struct gvp_dev *g = priv;

	return simgpu_pf_vf_invalidate(g->vf, GVP_INVAL_MS);
}

static size_t gvp_be_arch_size(void *priv)
{
	struct gvp_dev *g = priv;

	return g->info.arch_size;
}

static ssize_t gvp_be_arch_save(void *priv, void *buf, size_t len)
{
	struct gvp_dev *g = priv;

	return simgpu_pf_vf_save_state(g->vf, buf, len);
}

static int gvp_be_arch_restore(void *priv, const void *buf, size_t len)
{
	struct gvp_dev *g = priv;

	return simgpu_pf_vf_restore_state(g->vf, buf, len);
}

/*
 * vfio-pci-core closed the VF (bus mastering off, FLR) and the engine
 * paused it and had it acknowledge an invalidation: check all of it.
 */
static int gvp_be_teardown(void *priv, char *why, size_t len)
{
	struct gvp_dev *g = priv;

	if (READ_ONCE(g->pf_gone)) {
		snprintf(why, len, "its PF's driver was removed: the VF cannot be verified");
		return -ENODEV;
	}
	if (!(simgpu_pf_vf_state(g->vf) & SIMGPU_PF_VF_STATE_PAUSED)) {
		snprintf(why, len, "the VF did not stop");
		return -EBUSY;
	}
	return gvp_check_inert(g, true, why, len);
}

/* The PF zeroes the VF's VRAM and resets it for the next tenant. */
static int gvp_be_scrub(void *priv)
{
	struct gvp_dev *g = priv;
	int ret = simgpu_pf_vf_scrub(g->vf);

	mutex_lock(&g->vram_lock);
	if (!ret) {
		bitmap_zero(g->populated, g->nr_blocks);
		g->tracking = false;
	}
	mutex_unlock(&g->vram_lock);
	return ret;
}

/* ---- DMA logging: the device's own, by the PF ---------------------------- */

static int gvp_be_dma_log_start(void *priv, struct rb_root_cached *ranges, u32 nnodes,
				u64 *page_size)
{
	struct gvp_dev *g = priv;
	struct simgpu_pf_iova_range *r;
	struct interval_tree_node *node;
	unsigned int n = 0;
	int ret;

	if (g->log_bits)
		return -EBUSY;
	/* Reports are made at any grain of 4 KiB or more (iova_bitmap_set). */
	if (*page_size < GVP_LOG_PAGE)
		return -EINVAL;
	if (nnodes > g->info.log_ranges)
		vfio_combine_iova_ranges(ranges, nnodes, g->info.log_ranges);
	r = kcalloc(g->info.log_ranges, sizeof(*r), GFP_KERNEL_ACCOUNT);
	g->log_bits = bitmap_zalloc(GVP_LOG_CHUNK, GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!r || !g->log_bits)
		goto out;
	for (node = interval_tree_iter_first(ranges, 0, ULONG_MAX); node;
	     node = interval_tree_iter_next(node, 0, ULONG_MAX)) {
		u64 start = ALIGN_DOWN(node->start, GVP_LOG_PAGE);
		u64 end = ALIGN((u64)node->last + 1, GVP_LOG_PAGE);

		ret = -E2BIG;
		if (n == g->info.log_ranges)
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
	ret = n ? simgpu_pf_vf_dma_log_start(g->vf, r, n, GVP_LOG_PAGE) : -EINVAL;
out:
	if (ret) {
		kfree(r);
		bitmap_free(g->log_bits);
		g->log_bits = NULL;
		return ret;
	}
	g->log_ranges = r;
	g->log_nr = n;
	return 0;
}

static void gvp_be_dma_log_stop(void *priv)
{
	struct gvp_dev *g = priv;

	if (!g->log_bits)
		return;
	simgpu_pf_vf_dma_log_stop(g->vf);
	bitmap_free(g->log_bits);
	g->log_bits = NULL;
	kfree(g->log_ranges);
	g->log_ranges = NULL;
	g->log_nr = 0;
	xa_destroy(&g->log_carry);
}

/*
 * Report the dirty 4 KiB pages of one chunk, [@first, @first + @n pages),
 * clipped to [@iova, @last].  A page the device cleared in an earlier
 * report that asked for only part of it counts as dirty; a dirty page this
 * range cuts is remembered so.  The slots of the cut pages were reserved
 * by the caller: nothing here allocates or fails.
 */
static void gvp_log_chunk(struct gvp_dev *g, u64 first, unsigned long n,
			  u64 iova, u64 last,
			  void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	unsigned long base = first / GVP_LOG_PAGE, idx, s, e;
	void *entry;

	xa_for_each_range(&g->log_carry, idx, entry, base, base + n - 1) {
		u64 pg = (u64)idx * GVP_LOG_PAGE;

		if (!xa_is_value(entry))
			continue;	/* a slot reserved for this report */
		__set_bit(idx - base, g->log_bits);
		if (pg >= iova && pg + GVP_LOG_PAGE - 1 <= last)
			xa_erase(&g->log_carry, idx);
	}
	/* Only the range's first and last pages can be cut. */
	if (first < iova && test_bit(0, g->log_bits))
		xa_store(&g->log_carry, base, xa_mk_value(1), GFP_NOWAIT);
	if (first + (u64)n * GVP_LOG_PAGE - 1 > last && test_bit(n - 1, g->log_bits))
		xa_store(&g->log_carry, base + n - 1, xa_mk_value(1), GFP_NOWAIT);
	for_each_set_bitrange(s, e, g->log_bits, n) {
		u64 lo = max(first + (u64)s * GVP_LOG_PAGE, iova);
		u64 hi = min(first + (u64)e * GVP_LOG_PAGE - 1, last);

		report(ctx, lo, hi - lo + 1);
	}
}

/*
 * Report [@iova, @last] inside one tracked range: the device is asked
 * only about pages it tracks, so a report costs what was tracked (at most
 * the PF's log_pages in all), whatever span the user names, and a fatal
 * signal ends it between two chunks.
 */
static int gvp_log_range(struct gvp_dev *g, const struct simgpu_pf_iova_range *r,
			 u64 iova, u64 last,
			 void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	u64 first = max(ALIGN_DOWN(iova, GVP_LOG_PAGE), r->iova);
	u64 end = min(ALIGN_DOWN(last, GVP_LOG_PAGE), r->iova + r->length - GVP_LOG_PAGE);
	u64 pages;
	int ret;

	if (first > end)
		return 0;
	pages = (end - first) / GVP_LOG_PAGE + 1;
	while (pages) {
		unsigned long n = min_t(u64, pages, GVP_LOG_CHUNK);

		if (fatal_signal_pending(current))
			return -EINTR;
		ret = simgpu_pf_vf_dma_log_report(g->vf, first, (u64)n * GVP_LOG_PAGE,
						  g->log_bits);
		if (ret)
			return ret;
		gvp_log_chunk(g, first, n, iova, last, report, ctx);
		first += (u64)n * GVP_LOG_PAGE;
		pages -= n;
		cond_resched();
	}
	return 0;
}

static int gvp_be_dma_log_report(void *priv, u64 iova, u64 len,
				 void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	struct gvp_dev *g = priv;
	u64 last = iova + len - 1;	/* the engine checked it fits */
	u64 first = ALIGN_DOWN(iova, GVP_LOG_PAGE);
	u64 edge[2] = { first, ALIGN_DOWN(last, GVP_LOG_PAGE) };
	bool cut[2] = { first < iova, last % GVP_LOG_PAGE != GVP_LOG_PAGE - 1 };
	unsigned int k;
	int i, ret = 0;

	if (!g->log_bits)
		return -EINVAL;
	/*
	 * The device clears what it reports in whole 4 KiB pages: a page the
	 * range cuts is remembered as still dirty.  Reserve those slots
	 * first, so that no allocation can fail after the device cleared.
	 */
	for (i = 0; i < 2; i++) {
		if (!cut[i])
			continue;
		ret = xa_reserve(&g->log_carry, edge[i] / GVP_LOG_PAGE, GFP_KERNEL_ACCOUNT);
		if (ret)
			goto out;
	}
	/* The tracked ranges are sorted and apart (gvp_be_dma_log_start()). */
	for (k = 0; k < g->log_nr && !ret; k++)
		ret = gvp_log_range(g, &g->log_ranges[k], iova, last, report, ctx);
out:
	/* A reserved slot that holds no page reads as NULL: drop it. */
	for (i = 0; i < 2; i++)
		if (cut[i])
			xa_release(&g->log_carry, edge[i] / GVP_LOG_PAGE);
	return ret;
}

const struct gpumig_backend_ops gvp_backend_ops = {
	.quiesce = gvp_be_quiesce,
	.unquiesce = gvp_be_unquiesce,
	.invalidate = gvp_be_invalidate,
	.vram_track = gvp_be_vram_track,
	.vram_next_dirty = gvp_be_vram_next_dirty,
	.vram_take_zero_run = gvp_be_vram_take_zero_run,
	.vram_dirty_count = gvp_be_vram_dirty_count,
	.vram_read = gvp_be_vram_read,
	.vram_write = gvp_be_vram_write,
	.vram_write_iter = gvp_be_vram_write_iter,
	.arch_size = gvp_be_arch_size,
	.arch_save = gvp_be_arch_save,
	.arch_restore = gvp_be_arch_restore,
	.teardown = gvp_be_teardown,
	.scrub = gvp_be_scrub,
	.dma_log_start = gvp_be_dma_log_start,
	.dma_log_stop = gvp_be_dma_log_stop,
	.dma_log_report = gvp_be_dma_log_report,
	.guest_resets = gvp_be_guest_resets,
};

/**
 * gvp_backend_init() - the VRAM bitmaps of a claimed VF
 * @g: function with @vf, @info and @nr_blocks set
 *
 * Return: 0 or -ENOMEM.
 */
int gvp_backend_init(struct gvp_dev *g)
{
	mutex_init(&g->vram_lock);
	xa_init(&g->log_carry);
	/* uncharged: both made once at probe, not by a user's fd */
	g->vdirty = bitmap_zalloc(g->nr_blocks, GFP_KERNEL);
	g->populated = bitmap_zalloc(g->nr_blocks, GFP_KERNEL);
	if (!g->vdirty || !g->populated) {
		gvp_backend_destroy(g);
		return -ENOMEM;
	}
	return 0;
}

/**
 * gvp_backend_destroy() - free what gvp_backend_init() made
 * @g: function
 */
void gvp_backend_destroy(struct gvp_dev *g)
{
	bitmap_free(g->log_bits);
	g->log_bits = NULL;
	kfree(g->log_ranges);
	g->log_ranges = NULL;
	g->log_nr = 0;
	xa_destroy(&g->log_carry);
	bitmap_free(g->vdirty);
	bitmap_free(g->populated);
	g->vdirty = NULL;
	g->populated = NULL;
	mutex_destroy(&g->vram_lock);
}
