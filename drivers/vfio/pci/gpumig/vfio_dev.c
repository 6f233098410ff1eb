// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-vfio-pci's VFIO device: vfio-pci-core does the assignment; a
 * simgpu VF whose PF is driven by simgpu-pf also gets the gpumig engine,
 * with the PF's services as its backend.  Every other function (a PF, a
 * VF whose PF cannot serve it) is assigned without migration and says
 * why.  At close, vfio-pci-core disables and resets the function first;
 * then the engine's verified teardown (a VF) or the inert check (any
 * other function) decides whether it may be handed on.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/io.h>
#include <linux/pci.h>
#include <uapi/linux/simgpu.h>

#include "gpumig_vfio_pci.h"

static struct gpumig_mig *gvp_to_mig(struct vfio_device *vdev)
{
	return to_gvp(vdev)->mig;
}

GPUMIG_DEFINE_VFIO_OPS(gvp_mig, gvp_to_mig);

/*
 * The PF's driver is going away (under the PF's lock, so the claim is not
 * released meanwhile): no service works from now on, and a migration in
 * flight ends with -ENODEV and says why.
 */
static void gvp_pf_gone(void *priv)
{
	struct gvp_dev *g = priv;
	struct gpumig_mig *m = READ_ONCE(g->mig);

	WRITE_ONCE(g->pf_gone, true);
	if (m)
		gpumig_mig_abort(m, -ENODEV, "the PF's driver was removed");
}

/*
 * The PF is being reset (under the PF's lock): the VF's GPU state and VRAM
 * are lost with it.  The migration breaks into the uAPI's ERROR state and
 * a quarantine says what it lost; the VF itself tells its user
 * SIMGPU_ERR_DEVICE_LOST.
 */
static void gvp_pf_reset(void *priv)
{
	struct gvp_dev *g = priv;
	struct gpumig_mig *m = READ_ONCE(g->mig);

	if (m)
		gpumig_mig_fail(m, -EIO, "its PF was reset: the VF's state and VRAM were lost");
}

static const struct simgpu_pf_vf_ops gvp_pf_ops = {
	.pf_gone = gvp_pf_gone,
	.pf_reset = gvp_pf_reset,
};

/*
 * What the VF itself says: its identity and capabilities, from BAR0.  The
 * function is enabled for the read (memory decoding) and left as it was.
 */
static int gvp_read_caps(struct pci_dev *pdev, u32 *caps)
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

/* A claimed VF: its limits must suit the engine.  0, or why not. */
static const char *gvp_vf_unfit(struct gvp_dev *g)
{
	const struct simgpu_pf_vf_info *i = &g->info;

	if (i->block_shift != GPUMIG_BLOCK_SHIFT)
		return "its VRAM dirty block is not the engine's";
	if (!i->arch_size || i->arch_size > GPUMIG_ARCH_MAX)
		return "its architectural state does not fit the stream";
	if (!i->vram_size || i->vram_size & (GPUMIG_BLOCK_SIZE - 1))
		return "its VRAM is not a whole number of blocks";
	return NULL;
}

/*
 * Give a simgpu VF the engine, its VRAM scrubbed.  A function that cannot
 * migrate is still assignable and @not_migratable says why; the probe
 * fails only when memory runs out or a VF's VRAM cannot be scrubbed (it
 * would hand the last tenant's data to the next).
 */
static int gvp_migration_init(struct gvp_dev *g)
{
	struct pci_dev *pdev = to_pci_dev(g->core.vdev.dev);	/* before core init */
	struct gpumig_compat c = {};
	struct simgpu_pf_vf *vf;
	struct gpumig_mig *m;
	const char *unfit;
	u32 caps;
	int ret;

	if (!pdev->is_virtfn) {
		strscpy(g->not_migratable, "physical function");
		return 0;
	}
	if (pdev->vendor != SIMGPU_PCI_VENDOR_ID || pdev->device != SIMGPU_PCI_DEVICE_ID) {
		strscpy(g->not_migratable, "not a simgpu VF");
		return 0;
	}
	vf = simgpu_pf_vf_get(pdev, &gvp_pf_ops, g);
	if (IS_ERR(vf)) {
		strscpy(g->not_migratable, PTR_ERR(vf) == -EBUSY ?
			"its PF's services are claimed by another driver" :
			PTR_ERR(vf) == -EAGAIN ? "its PF is enabling or disabling SR-IOV" :
			"its PF is not driven by simgpu-pf");
		return 0;
	}
	simgpu_pf_vf_info(vf, &g->info);
	g->vf = vf;
	unfit = gvp_vf_unfit(g);
	if (!unfit && gvp_read_caps(pdev, &caps))
		unfit = "its registers do not identify a simgpu of this ABI";
	if (unfit) {
		snprintf(g->not_migratable, sizeof(g->not_migratable), "%s", unfit);
		g->vf = NULL;
		simgpu_pf_vf_put(vf);
		return 0;
	}
	g->nr_blocks = g->info.vram_size >> GPUMIG_BLOCK_SHIFT;
	ret = gvp_backend_init(g);
	if (ret)
		goto err_put;
	/*
	 * VRAM belongs to the PF and outlives drivers: what a tenant of
	 * another driver (plain vfio-pci) left there is not for this
	 * driver's first tenant.  Every later tenant gets it scrubbed at the
	 * last one's close.  A quarantined VF's is kept for inspection until
	 * the operator releases it (which scrubs).
	 */
	ret = gpumig_quarantine_get(&pdev->dev, NULL, 0) ? 0 : simgpu_pf_vf_scrub(vf);
	if (ret) {
		pci_err(pdev, "the VF's VRAM could not be scrubbed (%d)\n", ret);
		goto err_backend;
	}

	snprintf(c.type_name, sizeof(c.type_name), "simgpu-vf-%s", g->info.name);
	c.vram_size = g->info.vram_size;
	c.backend = GPUMIG_BACKEND_PCI;
	c.nr_queues = g->info.nr_queues;
	c.features = caps;
	c.page_size = SIMGPU_PAGE_SIZE;
	c.arch_version = g->info.arch_version;
	m = gpumig_mig_create(&g->core.vdev, &gvp_mig_vfio_ops, &gvp_backend_ops, g, &c);
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto err_backend;
	}
	/* gvp_pf_gone() runs under the PF's lock, as simgpu_pf_vf_put() does. */
	WRITE_ONCE(g->mig, m);
	return 0;

err_backend:
	gvp_backend_destroy(g);
err_put:
	g->vf = NULL;
	simgpu_pf_vf_put(vf);
	return ret;
}

static void gvp_migration_release(struct gvp_dev *g)
{
	struct simgpu_pf_vf *vf = g->vf;

	if (!vf)
		return;
	/*
	 * Once the claim is released, gvp_pf_gone() cannot run; the engine
	 * needs no service any more (close_device ended every data file).
	 */
	simgpu_pf_vf_put(vf);
	gpumig_mig_destroy(g->mig);
	g->mig = NULL;
	g->vf = NULL;
	gvp_backend_destroy(g);
}

static int gvp_init_dev(struct vfio_device *vdev)
{
	struct gvp_dev *g = to_gvp(vdev);
	int ret;

	ret = gvp_migration_init(g);
	if (!ret)
		ret = vfio_pci_core_init_dev(vdev);
	if (ret)
		gvp_migration_release(g);
	return ret;
}

static void gvp_release_dev(struct vfio_device *vdev)
{
	struct gvp_dev *g = to_gvp(vdev);

	gvp_migration_release(g);
	vfio_pci_core_release_dev(vdev);
}

static int gvp_open_device(struct vfio_device *vdev)
{
	struct gvp_dev *g = to_gvp(vdev);
	char why[GVP_WHY_LEN];
	int ret = 0;

	if (g->mig) {
		ret = gpumig_mig_open(g->mig);
	} else if (gpumig_quarantine_get(vdev->dev, why, sizeof(why))) {
		pci_err(g->core.pdev, "refusing to reuse a quarantined function: %s\n", why);
		ret = -EBUSY;
	}
	if (ret)
		return ret;
	ret = vfio_pci_core_enable(&g->core);
	if (ret)
		return ret;
	vfio_pci_core_finish_enable(&g->core);
	return 0;
}

/*
 * The tenant left.  vfio-pci-core disables the function (bus mastering
 * off, interrupts gone) and resets it; then a VF goes through the engine's
 * verified teardown (paused, invalidation acknowledged, FLR seen, VRAM
 * scrubbed by the PF) and any other function through the inert check.
 * Either quarantines what fails.
 */
static void gvp_close_device(struct vfio_device *vdev)
{
	struct gvp_dev *g = to_gvp(vdev);

	if (g->mig)
		g->resets_at_close = simgpu_pf_vf_resets(g->vf);
	vfio_pci_core_close_device(vdev);
	if (g->mig) {
		/*
		 * vfio-pci-core's reset at close does not go through the
		 * reset_done callback: the engine hears of it here.
		 */
		gpumig_mig_reset(g->mig);
		gpumig_mig_close(g->mig);
	} else {
		gvp_release_check(g);
	}
}

/**
 * gvp_reset_done() - the PCI core reset the function (FLR, VFIO_DEVICE_RESET)
 * @g: function
 *
 * Captured migration data is gone and the state machine returns to
 * RUNNING, now or when the state mutex's holder lets go (the reset path
 * may not wait for it: the VFIO core holds locks across a reset that are
 * taken with the mm's lock elsewhere).
 */
void gvp_reset_done(struct gvp_dev *g)
{
	if (g->mig)
		gpumig_mig_reset(g->mig);
}

const struct vfio_device_ops gvp_vfio_ops = {
	.name = "gpumig-vfio-pci",
	.init = gvp_init_dev,
	.release = gvp_release_dev,
	.open_device = gvp_open_device,
	.close_device = gvp_close_device,
	.ioctl = vfio_pci_core_ioctl,
#ifdef GPUMIG_HAVE_REGION_INFO_CAPS
	.get_region_info_caps = vfio_pci_ioctl_get_region_info,
#endif
	.device_feature = vfio_pci_core_ioctl_feature,
	.read = vfio_pci_core_read,
	.write = vfio_pci_core_write,
	.mmap = vfio_pci_core_mmap,
	.request = vfio_pci_core_request,
	.match = vfio_pci_core_match,
#ifdef GPUMIG_HAVE_MATCH_TOKEN_UUID
	.match_token_uuid = vfio_pci_core_match_token_uuid,
#endif
	.bind_iommufd = vfio_iommufd_physical_bind,
	.unbind_iommufd = vfio_iommufd_physical_unbind,
	.attach_ioas = vfio_iommufd_physical_attach_ioas,
	.detach_ioas = vfio_iommufd_physical_detach_ioas,
};
