// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-vfio-pci's glue: the gpumig engine's backend over the services a
 * PF's provider gives for a claimed VF (include/gpumig/provider.h), each
 * op one call into the provider, and the checks that a released function
 * is inert (reset, no DMA), which hold for any PCI function.  Nothing here
 * touches vfio-pci-core, so the KUnit suite gvp_glue runs it over a fake
 * provider without a real VF.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/visibility.h>
#include <linux/pci.h>

#include "gpumig_vfio_pci.h"

static struct gpumig_vf *gvp_vf(void *priv)
{
	return ((struct gvp_glue *)priv)->vf;
}

static int gvp_quiesce(void *priv)
{
	return gvp_vf(priv)->ops->pause(gvp_vf(priv));
}

static void gvp_unquiesce(void *priv)
{
	gvp_vf(priv)->ops->resume(gvp_vf(priv));
}

static int gvp_invalidate(void *priv)
{
	return gvp_vf(priv)->ops->invalidate(gvp_vf(priv));
}

static int gvp_vram_track(void *priv, bool on)
{
	return gvp_vf(priv)->ops->vram_track(gvp_vf(priv), on);
}

static long gvp_vram_next_dirty(void *priv, unsigned long from, bool *zero)
{
	return gvp_vf(priv)->ops->vram_next_dirty(gvp_vf(priv), from, zero);
}

static unsigned long gvp_vram_take_zero_run(void *priv, unsigned long from, unsigned long max)
{
	return gvp_vf(priv)->ops->vram_take_zero_run(gvp_vf(priv), from, max);
}

static void gvp_vram_dirty_count(void *priv, unsigned long *nonzero, unsigned long *zero)
{
	gvp_vf(priv)->ops->vram_dirty_count(gvp_vf(priv), nonzero, zero);
}

static int gvp_vram_read(void *priv, u64 off, void *buf, u32 len)
{
	return gvp_vf(priv)->ops->vram_read(gvp_vf(priv), off, buf, len);
}

static int gvp_vram_write(void *priv, u64 off, const void *buf, u32 len)
{
	return gvp_vf(priv)->ops->vram_write(gvp_vf(priv), off, buf, len);
}

static ssize_t gvp_vram_write_iter(void *priv, u64 off, struct iov_iter *from, u32 len,
				   u32 *crc)
{
	return gvp_vf(priv)->ops->vram_write_iter(gvp_vf(priv), off, from, len, crc);
}

static size_t gvp_arch_size(void *priv)
{
	return gvp_vf(priv)->arch_size;
}

static ssize_t gvp_arch_save(void *priv, u32 part, void *buf, size_t len)
{
	return gvp_vf(priv)->ops->save_state(gvp_vf(priv), part, buf, len);
}

static int gvp_arch_restore(void *priv, u32 part, const void *buf, size_t len)
{
	return gvp_vf(priv)->ops->restore_state(gvp_vf(priv), part, buf, len);
}

static size_t gvp_vendor_size(void *priv, u32 *sections)
{
	return gvp_vf(priv)->ops->vendor_size(gvp_vf(priv), sections);
}

static ssize_t gvp_vendor_save(void *priv, u32 index, void *buf, size_t len)
{
	return gvp_vf(priv)->ops->vendor_save(gvp_vf(priv), index, buf, len);
}

static int gvp_vendor_restore(void *priv, u32 index, const void *buf, size_t len)
{
	return gvp_vf(priv)->ops->vendor_restore(gvp_vf(priv), index, buf, len);
}

static int gvp_compat_check(void *priv, const struct gpumig_compat *src, char *why,
			    size_t len)
{
	return gvp_vf(priv)->ops->compat_check(gvp_vf(priv), src, why, len);
}

static int gvp_p2p(void *priv, bool stop)
{
	return gvp_vf(priv)->ops->p2p(gvp_vf(priv), stop);
}

static u32 gvp_guest_resets(void *priv)
{
	return gvp_vf(priv)->ops->guest_resets(gvp_vf(priv));
}

/* No tenant's DMA may still reach memory: bus mastering off (it is turned off). */
static int gvp_check_master(struct pci_dev *pdev, char *why, size_t len)
{
	u16 cmd;

	pci_read_config_word(pdev, PCI_COMMAND, &cmd);
	if (!(cmd & PCI_COMMAND_MASTER))
		return 0;
	pci_clear_master(pdev);
	snprintf(why, len, "bus mastering was still enabled after release");
	return -EBUSY;
}

/*
 * vfio-pci-core closed the function (bus mastering off, reset tried) and
 * the engine paused it and had it acknowledge an invalidation: the
 * provider checks the device, then what holds for any PCI function.
 */
static int gvp_teardown(void *priv, char *why, size_t len)
{
	struct gvp_glue *gl = priv;
	int ret;

	if (READ_ONCE(gl->pf_gone)) {
		snprintf(why, len, "its PF's driver was removed: the VF cannot be verified");
		return -ENODEV;
	}
	ret = gl->vf->ops->teardown(gl->vf, why, len);
	if (!ret && gl->pdev)
		ret = gvp_check_master(gl->pdev, why, len);
	return ret;
}

static int gvp_scrub(void *priv)
{
	int ret = gvp_vf(priv)->ops->scrub(gvp_vf(priv));

	if (!ret)
		gvp_pc_scrubbed(priv);
	return ret;
}

static int gvp_dma_log_start(void *priv, struct rb_root_cached *ranges, u32 nnodes,
			     u64 *page_size)
{
	return gvp_vf(priv)->ops->dma_log_start(gvp_vf(priv), ranges, nnodes, page_size);
}

static void gvp_dma_log_stop(void *priv)
{
	gvp_vf(priv)->ops->dma_log_stop(gvp_vf(priv));
}

static int gvp_dma_log_report(void *priv, u64 iova, u64 len,
			      void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	return gvp_vf(priv)->ops->dma_log_report(gvp_vf(priv), iova, len, report, ctx);
}

static int gvp_throttle(void *priv, u32 pct)
{
	return gvp_vf(priv)->ops->throttle(gvp_vf(priv), pct);
}

/**
 * gvp_glue_init() - the engine's backend over a claimed VF
 * @gl: the glue, with @vf and @pdev set
 *
 * The ops table holds the optional ops the provider offers, and no more.
 */
void gvp_glue_init(struct gvp_glue *gl)
{
	const struct gpumig_vf_ops *o = gl->vf->ops;
	struct gpumig_backend_ops *b = &gl->ops;

	*b = (struct gpumig_backend_ops) {
		.quiesce = gvp_quiesce,
		.unquiesce = gvp_unquiesce,
		.invalidate = gvp_invalidate,
		.vram_read = gvp_vram_read,
		.vram_write = gvp_vram_write,
		.arch_size = gvp_arch_size,
		.arch_save = gvp_arch_save,
		.arch_restore = gvp_arch_restore,
		.teardown = gvp_teardown,
		.scrub = gvp_scrub,
	};
	if (o->vram_track) {
		b->vram_track = gvp_vram_track;
		b->vram_next_dirty = gvp_vram_next_dirty;
		b->vram_dirty_count = gvp_vram_dirty_count;
	}
	if (o->vram_take_zero_run)
		b->vram_take_zero_run = gvp_vram_take_zero_run;
	if (o->vram_write_iter)
		b->vram_write_iter = gvp_vram_write_iter;
	if (o->dma_log_start) {
		b->dma_log_start = gvp_dma_log_start;
		b->dma_log_stop = gvp_dma_log_stop;
		b->dma_log_report = gvp_dma_log_report;
	}
	if (o->guest_resets)
		b->guest_resets = gvp_guest_resets;
	if (o->vendor_save) {
		b->vendor_size = gvp_vendor_size;
		b->vendor_save = gvp_vendor_save;
		b->vendor_restore = gvp_vendor_restore;
	}
	if (o->compat_check)
		b->compat_check = gvp_compat_check;
	if (o->p2p)
		b->p2p = gvp_p2p;
	if (o->throttle)
		b->throttle = gvp_throttle;
	gl->block_shift = gl->vf->geo.block_shift ?: GPUMIG_BLOCK_SHIFT;
	gvp_pc_glue_init(gl);
	if (gl->vf->vram_bar < -1 || gl->vf->vram_bar >= PCI_STD_NUM_BARS) {
		b->vram_absent = NULL;	/* an aperture it cannot hold back: no post-copy */
		b->vram_deliver = NULL;
		b->vram_lose = NULL;
	}
}
EXPORT_SYMBOL_IF_KUNIT(gvp_glue_init);

/**
 * gvp_check_inert() - is a function without migration safe to hand on?
 * @pdev: function, closed by vfio-pci-core (which disabled it and tried to
 *	reset it)
 * @reset: vfio-pci-core's reset succeeded
 * @why: what is wrong, on failure
 * @len: its size
 *
 * A reset that did not happen is tried once more.
 *
 * Return: 0, or a negative errno with @why set.
 */
int gvp_check_inert(struct pci_dev *pdev, bool reset, char *why, size_t len)
{
	int ret;

	if (!reset) {
		ret = pci_try_reset_function(pdev);
		if (ret) {
			snprintf(why, len,
				 "the function was not reset (%d): it may hold the tenant's state",
				 ret);
			return ret;
		}
	}
	return gvp_check_master(pdev, why, len);
}
