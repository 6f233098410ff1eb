// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf as a gpumig provider (include/gpumig/provider.h): the
 * services gpumig-vfio-pci's engine needs for a simgpu-pci VF, each over
 * the PF's mailbox (cmds.c).  What is simgpu's own lives here, not in the
 * variant driver: the VF's identity and descriptor, the two ways the
 * device keeps the VRAM blocks still to send, and the device's 4 KiB
 * DMA-log page, whose cut pages a report keeps dirty.
 *
 * A test geometry (the test_geometry parameter) serves a VF as a device
 * of another shape would be served: its state in parts, the PF's per-VF
 * scheduling settings as a vendor section, no VRAM dirty tracking, a
 * larger VRAM block.  It is how make check migrates a real VF with a
 * geometry other than simgpu's own.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/crc32.h>
#include <linux/interval_tree.h>
#include <linux/io.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uio.h>
#include <linux/vfio.h>
#include <linux/xarray.h>
#include <uapi/linux/simgpu.h>

#include <gpumig/migration.h>

#include "simgpu_pf.h"

#define SIMGPU_MIG_QUIESCE_MS	2000	/* drain bound with preemption off */
#define SIMGPU_MIG_INVAL_MS	1000	/* acknowledgment bound */
#define SIMGPU_MIG_LOG_PAGE	SIMGPU_PF_LOG_PAGE_SIZE	/* the device's DMA-log grain */
#define SIMGPU_MIG_LOG_CHUNK	(256UL * 1024)	/* pages per report request */
#define SIMGPU_MIG_PARTS_MAX	8		/* test geometry: state parts */
#define SIMGPU_MIG_BLOCK_MAX_SHIFT	21	/* test geometry: largest block */

static char test_geometry[64];
module_param_string(test_geometry, test_geometry, sizeof(test_geometry), 0644);
MODULE_PARM_DESC(test_geometry,
		 "for tests: how VFs claimed from now on migrate: a comma list of parts=N (the state in N parts), vendor (the VF's scheduling settings in a vendor section), untracked (no VRAM dirty tracking), block=KiB (64 times a power of two, untracked only); empty: the device's own");

/**
 * struct simgpu_mig_vendor - the vendor section: the PF's scheduling
 *	settings of the VF, which its guest's work depends on (test geometry)
 * @magic: SIMGPU_MIG_VENDOR_MAGIC
 * @version: SIMGPU_MIG_VENDOR_VERSION
 * @profile: the VF's profile name, NUL padded
 * @preempt: SIMGPU_PF_KNOB_PREEMPT
 * @kernel_step_us: SIMGPU_PF_KNOB_KERNEL_STEP_US
 */
struct simgpu_mig_vendor {
	__le32 magic;
	__le32 version;
	char profile[16];
	__le32 preempt;
	__le32 kernel_step_us;
} __packed;

#define SIMGPU_MIG_VENDOR_MAGIC		0x56475053	/* "SPGV" */
#define SIMGPU_MIG_VENDOR_VERSION	1

/**
 * struct simgpu_mig - one claimed VF, as the provider serves it
 * @gvf: what the claimer sees (fixed)
 * @vf: the PF's services for it (fixed)
 * @pdev: the VF (fixed)
 * @info: its profile and the PF's limits (fixed)
 * @nr_blocks: VRAM blocks (fixed)
 * @resets_at_close: the VF's FLR count when its tenant began to leave
 * @vram_lock: guards @vdirty, @populated and @tracking
 * @vdirty: VRAM blocks written and not yet taken by the engine
 * @populated: blocks written since the last scrub (others read as zeroes)
 * @tracking: VRAM dirty tracking is on
 * @log_bits: DMA-log report chunk while logging, else NULL (the engine's
 *	state mutex, as every DMA-log op)
 * @log_ranges: the tracked IOVA ranges while logging, sorted and apart
 * @log_nr: how many
 * @log_carry: 4 KiB pages (by IOVA >> 12) the device cleared in a report
 *	that asked for only part of them: still dirty
 * @ops: the services this VF gets: simgpu_mig_ops, less or more as its
 *	geometry says (fixed)
 * @untracked: test geometry: no VRAM dirty tracking (fixed)
 * @arch: test geometry with parts: the whole state, cut or put together
 *	(the engine's file lock: one save or restore at a time)
 * @arch_len: bytes of @arch saved, or restored so far
 */
struct simgpu_mig {
	struct gpumig_vf gvf;
	struct simgpu_pf_vf *vf;
	struct pci_dev *pdev;
	struct simgpu_pf_vf_info info;
	unsigned long nr_blocks;
	u32 resets_at_close;

	struct mutex vram_lock;		/* see above */
	unsigned long *vdirty;
	unsigned long *populated;
	bool tracking;

	unsigned long *log_bits;
	struct simgpu_pf_iova_range *log_ranges;
	unsigned int log_nr;
	struct xarray log_carry;

	struct gpumig_vf_ops ops;
	bool untracked;
	u8 *arch;
	size_t arch_len;
};

static struct simgpu_mig *to_mig(struct gpumig_vf *gvf)
{
	return container_of(gvf, struct simgpu_mig, gvf);
}

/* ---- the device ------------------------------------------------------------ */

static int simgpu_mig_pause(struct gpumig_vf *gvf)
{
	return simgpu_pf_vf_pause(to_mig(gvf)->vf, SIMGPU_MIG_QUIESCE_MS);
}

static void simgpu_mig_resume(struct gpumig_vf *gvf)
{
	struct simgpu_mig *s = to_mig(gvf);
	int ret = simgpu_pf_vf_resume(s->vf);

	if (ret)
		pci_warn(s->pdev, "the VF could not be resumed (%d)\n", ret);
}

static int simgpu_mig_invalidate(struct gpumig_vf *gvf)
{
	return simgpu_pf_vf_invalidate(to_mig(gvf)->vf, SIMGPU_MIG_INVAL_MS);
}

static bool simgpu_mig_paused(struct gpumig_vf *gvf)
{
	return simgpu_pf_vf_state(to_mig(gvf)->vf) & SIMGPU_PF_VF_STATE_PAUSED;
}

/* Part @part of @n bytes cut in @parts: its start. */
static size_t simgpu_mig_cut(size_t n, u32 part, u32 parts)
{
	return n * part / parts;
}

/*
 * The device's state is one blob; a geometry of several parts cuts it at
 * the save of part 0 and hands out the rest from there.
 */
static ssize_t simgpu_mig_save_state(struct gpumig_vf *gvf, u32 part, void *buf, size_t len)
{
	struct simgpu_mig *s = to_mig(gvf);
	u32 parts = gvf->geo.arch_parts;
	ssize_t n;
	size_t a, b;

	if (!s->arch)
		return simgpu_pf_vf_save_state(s->vf, buf, len);
	if (part >= parts)
		return -EINVAL;
	if (!part) {
		n = simgpu_pf_vf_save_state(s->vf, s->arch, s->info.arch_size);
		if (n < 0)
			return n;
		s->arch_len = n;
	}
	a = simgpu_mig_cut(s->arch_len, part, parts);
	b = simgpu_mig_cut(s->arch_len, part + 1, parts);
	if (b - a > len)
		return -ENOSPC;
	memcpy(buf, s->arch + a, b - a);
	return b - a;
}

/* Parts arrive in order; the last one has the device check the whole. */
static int simgpu_mig_restore_state(struct gpumig_vf *gvf, u32 part, const void *buf,
				    size_t len)
{
	struct simgpu_mig *s = to_mig(gvf);
	u32 parts = gvf->geo.arch_parts;

	if (!s->arch)
		return simgpu_pf_vf_restore_state(s->vf, buf, len);
	if (!part)
		s->arch_len = 0;
	if (part >= parts || len > s->info.arch_size - s->arch_len)
		return -EINVAL;
	memcpy(s->arch + s->arch_len, buf, len);
	s->arch_len += len;
	if (part < parts - 1)
		return 0;
	return simgpu_pf_vf_restore_state(s->vf, s->arch, s->arch_len);
}

/* ---- the vendor section (test geometry) ----------------------------------- */

static size_t simgpu_mig_vendor_size(struct gpumig_vf *gvf, u32 *sections)
{
	*sections = 1;
	return sizeof(struct simgpu_mig_vendor);
}

static ssize_t simgpu_mig_vendor_save(struct gpumig_vf *gvf, u32 index, void *buf, size_t len)
{
	struct simgpu_mig *s = to_mig(gvf);
	struct simgpu_mig_vendor v = {
		.magic = cpu_to_le32(SIMGPU_MIG_VENDOR_MAGIC),
		.version = cpu_to_le32(SIMGPU_MIG_VENDOR_VERSION),
	};

	if (index)
		return -ENOENT;
	if (len < sizeof(v))
		return -ENOSPC;
	strscpy_pad(v.profile, s->info.name, sizeof(v.profile));
	v.preempt = cpu_to_le32(simgpu_pf_vf_knob(s->vf, SIMGPU_PF_KNOB_PREEMPT));
	v.kernel_step_us = cpu_to_le32(simgpu_pf_vf_knob(s->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US));
	memcpy(buf, &v, sizeof(v));
	return sizeof(v);
}

/* Hostile input: only a section of this layout, for this profile, is taken. */
static int simgpu_mig_vendor_restore(struct gpumig_vf *gvf, u32 index, const void *buf,
				     size_t len)
{
	struct simgpu_mig *s = to_mig(gvf);
	struct simgpu_mig_vendor v;

	if (index || len != sizeof(v))
		return -EINVAL;
	memcpy(&v, buf, sizeof(v));
	if (le32_to_cpu(v.magic) != SIMGPU_MIG_VENDOR_MAGIC ||
	    le32_to_cpu(v.version) != SIMGPU_MIG_VENDOR_VERSION ||
	    v.profile[sizeof(v.profile) - 1] ||
	    strncmp(v.profile, s->info.name, sizeof(v.profile)) ||
	    le32_to_cpu(v.preempt) > 1)
		return -EINVAL;
	simgpu_pf_vf_set_knob(s->vf, SIMGPU_PF_KNOB_PREEMPT, le32_to_cpu(v.preempt));
	simgpu_pf_vf_set_knob(s->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US,
			      le32_to_cpu(v.kernel_step_us));
	return 0;
}

static u32 simgpu_mig_guest_resets(struct gpumig_vf *gvf)
{
	return simgpu_pf_vf_guest_resets(to_mig(gvf)->vf);
}

/*
 * The PF's part of a VF's FLR: no command in flight across it (the device
 * would end it), and the device counted it before the VF is used again.
 */
static void simgpu_mig_reset_prepare(struct gpumig_vf *gvf)
{
	simgpu_pf_vf_flr_prepare(to_mig(gvf)->vf);
}

static void simgpu_mig_reset_done(struct gpumig_vf *gvf)
{
	simgpu_pf_vf_flr_done(to_mig(gvf)->vf);
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

static int simgpu_mig_vram_track(struct gpumig_vf *gvf, bool on)
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

static long simgpu_mig_vram_next_dirty(struct gpumig_vf *gvf, unsigned long from, bool *zero)
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
static unsigned long simgpu_mig_vram_take_zero_run(struct gpumig_vf *gvf, unsigned long from,
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
static void simgpu_mig_vram_dirty_count(struct gpumig_vf *gvf, unsigned long *nonzero,
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

static int simgpu_mig_vram_read(struct gpumig_vf *gvf, u64 off, void *buf, u32 len)
{
	struct simgpu_mig *s = to_mig(gvf);

	/* The engine reads whole blocks it took from vram_next_dirty. */
	if (simgpu_mig_counted(s) && !s->untracked && !((off | len) & (GPUMIG_BLOCK_SIZE - 1)))
		return simgpu_pf_vf_vram_read_take(s->vf, off, buf, len);
	return simgpu_pf_vf_vram_read(s->vf, off, buf, len);
}

static int simgpu_mig_vram_write(struct gpumig_vf *gvf, u64 off, const void *buf, u32 len)
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
static ssize_t simgpu_mig_vram_write_iter(struct gpumig_vf *gvf, u64 off, struct iov_iter *from,
					  u32 len, u32 *crc)
{
	struct simgpu_mig_fill f = { .from = from, .crc = crc };

	return simgpu_pf_vf_vram_write_from(to_mig(gvf)->vf, off, len,
					    simgpu_mig_fill_from_iter, &f);
}

/* The PF zeroes the VF's VRAM and resets it for the next tenant. */
static int simgpu_mig_scrub(struct gpumig_vf *gvf)
{
	struct simgpu_mig *s = to_mig(gvf);
	int ret = simgpu_pf_vf_scrub(s->vf);

	mutex_lock(&s->vram_lock);
	if (!ret) {
		bitmap_zero(s->populated, s->nr_blocks);
		s->tracking = false;
	}
	mutex_unlock(&s->vram_lock);
	return ret;
}

/* ---- the tenant leaves ------------------------------------------------------ */

static void simgpu_mig_close_begin(struct gpumig_vf *gvf)
{
	struct simgpu_mig *s = to_mig(gvf);

	s->resets_at_close = simgpu_pf_vf_resets(s->vf);
}

/*
 * vfio-pci-core disabled the VF and tried to reset it; the engine paused
 * it and had it acknowledge an invalidation.  The device must say it is
 * paused, and its FLR count must show the reset (one more is tried if
 * not): the tenant's state is then gone from the function.
 */
static int simgpu_mig_teardown(struct gpumig_vf *gvf, char *why, size_t len)
{
	struct simgpu_mig *s = to_mig(gvf);
	int ret;

	if (!(simgpu_pf_vf_state(s->vf) & SIMGPU_PF_VF_STATE_PAUSED)) {
		snprintf(why, len, "the VF did not stop");
		return -EBUSY;
	}
	if (simgpu_pf_vf_resets(s->vf) != s->resets_at_close)
		return 0;
	ret = pci_try_reset_function(s->pdev);
	if (!ret && simgpu_pf_vf_resets(s->vf) != s->resets_at_close)
		return 0;
	snprintf(why, len, "the function was not reset (%d): it may hold the tenant's state", ret);
	return ret ? ret : -EIO;
}

/* ---- DMA logging: the device's own --------------------------------------- */

static int simgpu_mig_dma_log_start(struct gpumig_vf *gvf, struct rb_root_cached *ranges,
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

static void simgpu_mig_log_free(struct simgpu_mig *s)
{
	bitmap_free(s->log_bits);
	s->log_bits = NULL;
	kfree(s->log_ranges);
	s->log_ranges = NULL;
	s->log_nr = 0;
	xa_destroy(&s->log_carry);
}

static void simgpu_mig_dma_log_stop(struct gpumig_vf *gvf)
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

static int simgpu_mig_dma_log_report(struct gpumig_vf *gvf, u64 iova, u64 len,
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

/* ---- the claim ---------------------------------------------------------- */

static void simgpu_mig_free(struct simgpu_mig *s)
{
	simgpu_mig_log_free(s);
	bitmap_free(s->vdirty);
	bitmap_free(s->populated);
	kfree(s->arch);
	mutex_destroy(&s->vram_lock);
	kfree(s);
}

static void simgpu_mig_release(struct gpumig_vf *gvf)
{
	struct simgpu_mig *s = to_mig(gvf);

	simgpu_pf_vf_put(s->vf);
	simgpu_mig_free(s);
}

static const struct gpumig_vf_ops simgpu_mig_ops = {
	.release = simgpu_mig_release,
	.pause = simgpu_mig_pause,
	.resume = simgpu_mig_resume,
	.invalidate = simgpu_mig_invalidate,
	.paused = simgpu_mig_paused,
	.save_state = simgpu_mig_save_state,
	.restore_state = simgpu_mig_restore_state,
	.vram_track = simgpu_mig_vram_track,
	.vram_next_dirty = simgpu_mig_vram_next_dirty,
	.vram_take_zero_run = simgpu_mig_vram_take_zero_run,
	.vram_dirty_count = simgpu_mig_vram_dirty_count,
	.vram_read = simgpu_mig_vram_read,
	.vram_write = simgpu_mig_vram_write,
	.vram_write_iter = simgpu_mig_vram_write_iter,
	.scrub = simgpu_mig_scrub,
	.close_begin = simgpu_mig_close_begin,
	.teardown = simgpu_mig_teardown,
	.dma_log_start = simgpu_mig_dma_log_start,
	.dma_log_stop = simgpu_mig_dma_log_stop,
	.dma_log_report = simgpu_mig_dma_log_report,
	.guest_resets = simgpu_mig_guest_resets,
	.reset_prepare = simgpu_mig_reset_prepare,
	.reset_done = simgpu_mig_reset_done,
};

/*
 * What the VF itself says: its identity and capabilities, from BAR0.  The
 * function is enabled for the read (memory decoding) and left as it was.
 */
static int simgpu_mig_read_caps(struct pci_dev *pdev, u32 *caps)
{
	void __iomem *regs;
	u32 id, ver;
	int ret;

	ret = pci_enable_device_mem(pdev);
	if (ret)
		return ret;
	regs = pci_iomap_range(pdev, 0, 0, SIMGPU_REG_NUM_QUEUES);
	if (regs) {
		id = ioread32(regs + SIMGPU_REG_ID);
		ver = ioread32(regs + SIMGPU_REG_VERSION);
		*caps = ioread32(regs + SIMGPU_REG_CAPS);
		pci_iounmap(pdev, regs);
		ret = id == SIMGPU_ID_MAGIC && ver == SIMGPU_ABI_VERSION ? 0 : -ENODEV;
	} else {
		ret = -ENOMEM;
	}
	pci_disable_device(pdev);
	return ret;
}

/* Why a claimed VF cannot migrate with the engine, or NULL. */
static const char *simgpu_mig_unfit(const struct simgpu_pf_vf_info *i)
{
	if (i->block_shift != GPUMIG_BLOCK_SHIFT)
		return "its VRAM dirty block is not the engine's";
	if (!i->arch_size || i->arch_size > GPUMIG_ARCH_MAX)
		return "its architectural state does not fit the stream";
	if (!i->vram_size || i->vram_size & (GPUMIG_BLOCK_SIZE - 1))
		return "its VRAM is not a whole number of blocks";
	return NULL;
}

/*
 * The test geometry a VF claimed now gets (test_geometry): 0, or
 * -EINVAL for a parameter that does not parse, with @why.
 */
static int simgpu_mig_test_geometry(struct simgpu_mig *s, char *why, size_t len)
{
	struct gpumig_geometry *g = &s->gvf.geo;
	char buf[sizeof(test_geometry)], *p = buf, *tok;
	unsigned int v;
	int ret = 0;

	kernel_param_lock(THIS_MODULE);
	strscpy(buf, test_geometry);
	kernel_param_unlock(THIS_MODULE);
	strim(buf);
	while (!ret && (tok = strsep(&p, ","))) {
		if (!*tok)
			continue;
		if (!strcmp(tok, "untracked")) {
			s->untracked = true;
		} else if (!strcmp(tok, "vendor")) {
			g->vendor_max = sizeof(struct simgpu_mig_vendor);
		} else if (sscanf(tok, "parts=%u", &v) == 1) {
			if (v < 1 || v > SIMGPU_MIG_PARTS_MAX)
				ret = -EINVAL;
			g->arch_parts = v;
		} else if (sscanf(tok, "block=%u", &v) == 1) {
			v *= SZ_1K;
			if (!is_power_of_2(v) || v < GPUMIG_BLOCK_SIZE ||
			    ilog2(v) > SIMGPU_MIG_BLOCK_MAX_SHIFT)
				ret = -EINVAL;
			else
				g->block_shift = ilog2(v);
		} else {
			ret = -EINVAL;
		}
	}
	if (!ret && g->block_shift && g->block_shift != GPUMIG_BLOCK_SHIFT && !s->untracked)
		ret = -EINVAL;	/* the device tracks 64 KiB blocks only */
	if (!ret && g->block_shift && s->info.vram_size & (BIT_ULL(g->block_shift) - 1))
		ret = -EINVAL;
	if (ret)
		snprintf(why, len, "simgpu-pf's test_geometry \"%s\" is not one it serves", buf);
	return ret;
}

/* The services a VF gets: all of simgpu_mig_ops, or as its geometry says. */
static int simgpu_mig_geometry(struct simgpu_mig *s, char *why, size_t len)
{
	struct gpumig_geometry *g = &s->gvf.geo;
	struct gpumig_vf_ops *o = &s->ops;
	int ret;

	*o = simgpu_mig_ops;
	s->gvf.ops = o;
	ret = simgpu_mig_test_geometry(s, why, len);
	if (ret)
		return ret;
	if (s->untracked) {
		o->vram_track = NULL;
		o->vram_next_dirty = NULL;
		o->vram_take_zero_run = NULL;
		o->vram_dirty_count = NULL;
	}
	if (g->vendor_max) {
		o->vendor_size = simgpu_mig_vendor_size;
		o->vendor_save = simgpu_mig_vendor_save;
		o->vendor_restore = simgpu_mig_vendor_restore;
	}
	if (g->arch_parts > 1) {
		g->arch_part_max = DIV_ROUND_UP(s->info.arch_size, g->arch_parts);
		/* uncharged: made once at bind, not by a user's fd */
		s->arch = kmalloc(s->info.arch_size, GFP_KERNEL);
		if (!s->arch)
			return -ENOMEM;
	}
	if (g->arch_parts || g->vendor_max || s->untracked || g->block_shift)
		pci_info(s->pdev, "test geometry: %u state parts, %svendor section, VRAM %s in %lu KiB blocks\n",
			 g->arch_parts ?: 1, g->vendor_max ? "a " : "no ",
			 s->untracked ? "untracked" : "tracked",
			 BIT(g->block_shift ?: GPUMIG_BLOCK_SHIFT) >> 10);
	return 0;
}

/* simgpu_pf_vf_get()'s errors, as the operator reads them. */
static const char *simgpu_mig_claim_why(int err)
{
	switch (err) {
	case -EBUSY:
		return "its PF's services are claimed by another driver";
	case -EAGAIN:
		return "its PF is enabling or disabling SR-IOV, or being reset";
	default:
		return "its PF is not driven by simgpu-pf";
	}
}

static struct gpumig_vf *simgpu_mig_claim(struct pci_dev *pdev, const struct gpumig_vf_events *ev,
					  void *priv, char *why, size_t len)
{
	struct gpumig_compat *c;
	struct simgpu_pf_vf *vf;
	struct simgpu_mig *s;
	const char *unfit;
	u32 caps;
	int ret;

	if (pdev->vendor != SIMGPU_PCI_VENDOR_ID || pdev->device != SIMGPU_PCI_DEVICE_ID)
		return ERR_PTR(-ENODEV);
	vf = simgpu_pf_vf_get(pdev, ev, priv);
	if (IS_ERR(vf)) {
		/* A simgpu VF whose PF another driver drives: say so, ask no one else. */
		snprintf(why, len, "%s", simgpu_mig_claim_why(PTR_ERR(vf)));
		return PTR_ERR(vf) == -ENODEV ? ERR_PTR(-ENXIO) : ERR_CAST(vf);
	}
	/* uncharged: made once at bind, not by a user's fd */
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		simgpu_pf_vf_put(vf);
		return ERR_PTR(-ENOMEM);
	}
	s->vf = vf;
	s->pdev = pdev;
	mutex_init(&s->vram_lock);
	xa_init(&s->log_carry);
	simgpu_pf_vf_info(vf, &s->info);
	unfit = simgpu_mig_unfit(&s->info);
	if (!unfit && simgpu_mig_read_caps(pdev, &caps))
		unfit = "its registers do not identify a simgpu of this ABI";
	if (unfit) {
		snprintf(why, len, "%s", unfit);
		ret = -EOPNOTSUPP;
		goto err;
	}
	s->nr_blocks = s->info.vram_size >> GPUMIG_BLOCK_SHIFT;
	/* uncharged: both made once at bind, not by a user's fd */
	s->vdirty = bitmap_zalloc(s->nr_blocks, GFP_KERNEL);
	s->populated = bitmap_zalloc(s->nr_blocks, GFP_KERNEL);
	ret = -ENOMEM;
	if (!s->vdirty || !s->populated)
		goto err;

	ret = simgpu_mig_geometry(s, why, len);
	if (ret)
		goto err;
	s->gvf.arch_size = s->info.arch_size;
	s->gvf.attrs = &simgpu_pf_vf_group;
	c = &s->gvf.compat;
	snprintf(c->type_name, sizeof(c->type_name), "simgpu-vf-%s", s->info.name);
	c->vram_size = s->info.vram_size;
	c->backend = GPUMIG_BACKEND_PCI;
	c->nr_queues = s->info.nr_queues;
	c->features = caps;
	c->page_size = SIMGPU_PAGE_SIZE;
	c->arch_version = s->info.arch_version;
	return &s->gvf;

err:
	simgpu_pf_vf_put(vf);
	simgpu_mig_free(s);
	return ERR_PTR(ret);
}

static struct gpumig_provider simgpu_pf_provider = {
	.name = "simgpu-pf",
	.owner = THIS_MODULE,
	.claim = simgpu_mig_claim,
};

/** simgpu_pf_provider_register() - serve simgpu-pci VFs to gpumig-vfio-pci */
int simgpu_pf_provider_register(void)
{
	return gpumig_provider_register(&simgpu_pf_provider);
}

/** simgpu_pf_provider_unregister() - stop serving them */
void simgpu_pf_provider_unregister(void)
{
	gpumig_provider_unregister(&simgpu_pf_provider);
}
