// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf as a gpumig provider (include/gpumig/provider.h): the
 * services gpumig-vfio-pci's engine needs for a simgpu-pci VF, each over
 * the PF's mailbox (cmds.c).  What is simgpu's own lives here, not in the
 * variant driver: the VF's identity and descriptor (this file), the two
 * ways the device keeps the VRAM blocks still to send (provider_vram.c),
 * and the device's 4 KiB DMA-log page, whose cut pages a report keeps
 * dirty (provider_dma_log.c).
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
#include <linux/io.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <uapi/linux/simgpu.h>

#include <gpumig/migration.h>

#include "provider.h"

#define SIMGPU_MIG_QUIESCE_MS	2000	/* drain bound with preemption off */
#define SIMGPU_MIG_INVAL_MS	1000	/* acknowledgment bound */
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

/* Auto-converge: the VF's scheduling share (SIMGPU_PF_CAP_SHARE). */
static int simgpu_mig_throttle(struct gpumig_vf *gvf, u32 pct)
{
	return simgpu_pf_vf_set_share(to_mig(gvf)->vf, pct, NULL);
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
	.throttle = simgpu_mig_throttle,
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
		} else if (!strncmp(tok, "parts=", 6) && !kstrtouint(tok + 6, 10, &v)) {
			if (v < 1 || v > SIMGPU_MIG_PARTS_MAX)
				ret = -EINVAL;
			g->arch_parts = v;
		} else if (!strncmp(tok, "block=", 6) && !kstrtouint(tok + 6, 10, &v)) {
			/* KiB; checked before the multiplication can wrap */
			if (v > (BIT(SIMGPU_MIG_BLOCK_MAX_SHIFT) >> 10))
				ret = -EINVAL;
			v *= SZ_1K;
			if (ret || !is_power_of_2(v) || v < GPUMIG_BLOCK_SIZE ||
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
	if (!(s->info.caps & SIMGPU_PF_CAP_SHARE))
		o->throttle = NULL;	/* auto-converge is unsupported */
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
	simgpu_mig_postcopy_ops(s);
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
	s->gvf.vram_bar = SIMGPU_VF_BAR_VRAM;
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
