// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-vfio-pci's VFIO device: vfio-pci-core does the assignment; a VF
 * that a PF's provider serves also gets the gpumig engine, with the glue
 * over the provider's services as its backend.  Every other function (a
 * PF, a VF no provider serves) is assigned without migration and says
 * why.  At close, vfio-pci-core disables and resets the function first;
 * then the engine's verified teardown (a VF) or the inert check (any
 * other function) decides whether it may be handed on.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/pci.h>

#include "gpumig_vfio_pci.h"

static struct gpumig_mig *gvp_to_mig(struct vfio_device *vdev)
{
	return to_gvp(vdev)->mig;
}

GPUMIG_DEFINE_VFIO_OPS(gvp_mig, gvp_to_mig);

/*
 * The PF's driver is going away (under the provider's lock, so the claim
 * is not released meanwhile): no service works from now on, and a
 * migration in flight ends with -ENODEV and says why.
 */
static void gvp_pf_gone(void *priv)
{
	struct gvp_dev *g = priv;
	struct gpumig_mig *m = READ_ONCE(g->mig);

	WRITE_ONCE(g->glue.pf_gone, true);
	if (m)
		gpumig_mig_abort(m, -ENODEV, "the PF's driver was removed");
}

/*
 * The PF is being reset (under the provider's lock): the VF's GPU state
 * and VRAM are lost with it.  The migration breaks into the uAPI's ERROR
 * state and a quarantine says what it lost.
 */
static void gvp_pf_reset(void *priv)
{
	struct gvp_dev *g = priv;
	struct gpumig_mig *m = READ_ONCE(g->mig);

	if (m)
		gpumig_mig_fail(m, -EIO, "its PF was reset: the VF's state and VRAM were lost");
}

/* The VF's device waits on an absent block: the mover carries it first. */
static void gvp_demand(void *priv, u64 blk)
{
	struct gvp_dev *g = priv;

	gpumig_mig_postcopy_demand(READ_ONCE(g->mig), blk);
}

static const struct gpumig_vf_events gvp_events = {
	.pf_gone = gvp_pf_gone,
	.pf_reset = gvp_pf_reset,
	.demand = gvp_demand,
};

/*
 * Give a VF its provider's services and the engine, its VRAM scrubbed.  A
 * function no provider serves (a PF, another vendor's VF, a VF whose PF
 * another driver drives) is still assignable and @not_migratable says
 * why, as under plain vfio-pci.  The probe fails when memory runs out,
 * when a VF's VRAM cannot be scrubbed, and when a provider serves the VF
 * but refuses it (its PF changing SR-IOV or being reset, a VF the engine
 * cannot migrate): bound without its provider, nothing would scrub its
 * VRAM between tenants, and it would hand the last tenant's data to the
 * next.
 */
static int gvp_migration_init(struct gvp_dev *g)
{
	struct pci_dev *pdev = to_pci_dev(g->core.vdev.dev);	/* before core init */
	struct gpumig_vf *vf;
	struct gpumig_mig *m;
	int ret;

	if (!pdev->is_virtfn) {
		strscpy(g->not_migratable, "physical function");
		return 0;
	}
	vf = gpumig_vf_claim(pdev, &gvp_events, g, g->not_migratable,
			     sizeof(g->not_migratable));
	if (IS_ERR(vf)) {
		ret = PTR_ERR(vf);
		if (ret == -ENODEV || ret == -ENXIO)
			return 0;
		pci_err(pdev, "not bound: %s (%d)%s\n", g->not_migratable, ret,
			ret == -EAGAIN ? ": bind it again once that is over" : "");
		return ret;
	}
	g->glue.vf = vf;
	g->glue.pdev = pdev;
	g->glue.mapping = g->core.vdev.inode->i_mapping;
	if (vf->vram_bar >= 0 && vf->vram_bar < PCI_STD_NUM_BARS)
		g->glue.aperture_len = pci_resource_len(pdev, vf->vram_bar);
	gvp_glue_init(&g->glue);
	/*
	 * VRAM belongs to the PF and outlives drivers: what a tenant of
	 * another driver (plain vfio-pci) left there is not for this
	 * driver's first tenant.  Every later tenant gets it scrubbed at the
	 * last one's close.  A quarantined VF's is kept for inspection until
	 * the operator releases it (which scrubs).
	 */
	ret = gpumig_quarantine_get(&pdev->dev, NULL, 0) ? 0 : vf->ops->scrub(vf);
	if (ret) {
		pci_err(pdev, "the VF's VRAM could not be scrubbed (%d)\n", ret);
		goto err_release;
	}
	if (vf->attrs) {
		ret = sysfs_create_group(&pdev->dev.kobj, vf->attrs);
		if (ret)
			goto err_release;
	}
	m = gpumig_mig_create(&g->core.vdev, &gvp_mig_vfio_ops, &g->glue.ops, &g->glue,
			      &vf->compat, &vf->geo);
	if (IS_ERR(m)) {
		ret = PTR_ERR(m);
		goto err_attrs;
	}
	/* gvp_pf_gone() runs under the provider's lock, as the release does. */
	WRITE_ONCE(g->mig, m);
	return 0;

err_attrs:
	if (vf->attrs)
		sysfs_remove_group(&pdev->dev.kobj, vf->attrs);
err_release:
	g->glue.vf = NULL;
	gpumig_vf_release(vf);
	return ret;
}

static void gvp_migration_release(struct gvp_dev *g)
{
	struct gpumig_vf *vf = g->glue.vf;

	if (!vf)
		return;
	if (vf->attrs)
		sysfs_remove_group(&g->glue.pdev->dev.kobj, vf->attrs);
	/*
	 * Once the claim is released, gvp_pf_gone() cannot run; the engine
	 * needs no service any more (close_device ended every data file).
	 */
	gpumig_vf_release(vf);
	gvp_pc_release(&g->glue);
	gpumig_mig_destroy(g->mig);
	g->mig = NULL;
	g->glue.vf = NULL;
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
 * verified teardown (paused, invalidation acknowledged, the reset seen by
 * the provider, VRAM scrubbed) and any other function through the inert
 * check.  Either quarantines what fails.
 */
static void gvp_close_device(struct vfio_device *vdev)
{
	struct gvp_dev *g = to_gvp(vdev);
	char why[GVP_WHY_LEN] = "";
	struct pci_dev *pdev = g->core.pdev;

	if (g->mig) {
		/*
		 * The data files end before the core's reset: a reader
		 * must see them end, not the VF's reset (-EAGAIN from
		 * the PF while it runs), as mlx5 disables its files first.
		 */
		gpumig_mig_close_begin(g->mig);
		g->glue.vf->ops->close_begin(g->glue.vf);
	}
	vfio_pci_core_close_device(vdev);
	if (g->mig) {
		/*
		 * vfio-pci-core's reset at close does not go through the
		 * reset_done callback: the engine hears of it here.
		 */
		gpumig_mig_reset(g->mig);
		gpumig_mig_close(g->mig);
	} else if (gvp_check_inert(pdev, !g->core.needs_reset, why, sizeof(why))) {
		gpumig_quarantine_set(&pdev->dev, why);
		pci_err(pdev, "quarantined: %s\n", why);
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
	struct gpumig_vf *vf = g->glue.vf;

	if (vf && vf->ops->reset_done)
		vf->ops->reset_done(vf);
	if (vf)
		gvp_pc_reset(&g->glue);
	if (g->mig)
		gpumig_mig_reset(g->mig);
}

/**
 * gvp_reset_prepare() - the PCI core is about to reset the function
 * @g: function
 *
 * The provider gets its PF ready for the VF's reset (the PF's part of an
 * FLR, as xe's flr_prepare); gvp_reset_done() waits for it to finish.
 */
void gvp_reset_prepare(struct gvp_dev *g)
{
	struct gpumig_vf *vf = g->glue.vf;

	if (vf && vf->ops->reset_prepare)
		vf->ops->reset_prepare(vf);
}

/* One operator's unquarantine of a function that does not migrate at a time. */
static DEFINE_MUTEX(gvp_unquarantine_lock);

/**
 * gvp_unquarantine() - an operator lifts a quarantine
 * @g: function
 *
 * A function that does not migrate is reset with pci_try_reset_function():
 * the attribute is the driver's, and an unbind holds the device lock
 * while it waits for this write to end, so pci_reset_function() here
 * would wait for that lock for ever.
 *
 * Return: 0, -EINVAL when not quarantined, -EAGAIN when the device lock is
 * held (a bind, an unbind or a reset under way), or the error of the
 * engine or of the reset that must succeed first.
 */
int gvp_unquarantine(struct gvp_dev *g)
{
	struct pci_dev *pdev = g->core.pdev;
	int ret;

	if (g->mig)
		return gpumig_mig_unquarantine(g->mig);
	mutex_lock(&gvp_unquarantine_lock);
	if (!gpumig_quarantine_get(&pdev->dev, NULL, 0)) {
		ret = -EINVAL;
	} else {
		ret = pci_try_reset_function(pdev);
		if (!ret && !gpumig_quarantine_clear(&pdev->dev))
			pci_notice(pdev, "quarantine lifted by the operator\n");
	}
	mutex_unlock(&gvp_unquarantine_lock);
	return ret;
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
	.read = gvp_read,
	.write = gvp_write,
	.mmap = gvp_mmap,
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
