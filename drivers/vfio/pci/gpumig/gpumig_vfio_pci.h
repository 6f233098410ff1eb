/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig-vfio-pci: a vfio-pci variant driver.  simgpu-pci VFs are
 * live-migrated through the gpumig engine, their backend being the PF
 * driver's per-VF services (include/gpumig/simgpu_pf.h); any other
 * function bound to it (a PF, a display controller) is assigned plainly,
 * says it cannot migrate, and is checked inert when its tenant leaves.
 * One file per job, each depending only on those after it:
 *
 *   main.c      the PCI driver: ID table, probe, remove, reset callbacks
 *   vfio_dev.c  the VFIO device: ops table, init, open, close, release
 *   sysfs.c     migration/ (status, compat, unquarantine) and simgpu/
 *   backend.c   the engine's backend over the PF's services; the check
 *               that a released function is inert
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_VFIO_PCI_H
#define _GPUMIG_VFIO_PCI_H

#include <linux/mutex.h>
#include <linux/vfio_pci_core.h>
#include <linux/xarray.h>

#include <gpumig/migration.h>
#include <gpumig/simgpu_pf.h>

/* Length of a reason a function gives (not migratable, quarantined). */
#define GVP_WHY_LEN		GPUMIG_MSG_LEN

/**
 * struct gvp_dev - one function bound to gpumig-vfio-pci
 * @core: vfio-pci-core's device
 * @vf: the PF driver's services for a simgpu VF, or NULL (fixed after init)
 * @mig: the engine's migration state, or NULL when the function does not
 *	migrate (fixed after init)
 * @info: the VF's profile and its PF's limits (fixed after init)
 * @nr_blocks: VRAM blocks (fixed after init)
 * @not_migratable: why @mig is NULL (fixed after init)
 * @pf_gone: the PF's driver went away: no service works any more
 * @resets_at_close: the VF's FLR count when its close began (close only)
 * @vram_lock: guards @vdirty, @populated and @tracking
 * @vdirty: VRAM blocks written and not yet taken by the engine
 * @populated: blocks written since the last scrub (others read as zeroes)
 * @tracking: VRAM dirty tracking is on
 * @log_bits: DMA-log report chunk while logging, else NULL (state mutex)
 * @log_ranges: the tracked IOVA ranges while logging, sorted and apart
 *	(state mutex)
 * @log_nr: how many
 * @log_carry: 4 KiB pages (by IOVA >> 12) the device cleared in a report
 *	that asked for only part of them: still dirty (state mutex)
 *
 * A quarantine is the engine's record of the function (gpumig_quarantine_*()),
 * kept across a rebind, for functions with and without @mig alike.
 */
struct gvp_dev {
	struct vfio_pci_core_device core;
	struct simgpu_pf_vf *vf;
	struct gpumig_mig *mig;
	struct simgpu_pf_vf_info info;
	unsigned long nr_blocks;
	char not_migratable[GVP_WHY_LEN];
	bool pf_gone;
	u32 resets_at_close;

	struct mutex vram_lock;		/* see above */
	unsigned long *vdirty;
	unsigned long *populated;
	bool tracking;

	unsigned long *log_bits;
	struct simgpu_pf_iova_range *log_ranges;
	unsigned int log_nr;
	struct xarray log_carry;
};

static inline struct gvp_dev *to_gvp(struct vfio_device *vdev)
{
	return container_of(vdev, struct gvp_dev, core.vdev);
}

/* vfio_dev.c */
extern const struct vfio_device_ops gvp_vfio_ops;
void gvp_reset_done(struct gvp_dev *g);

/* sysfs.c */
extern const struct attribute_group *gvp_dev_groups[];

/* backend.c */
extern const struct gpumig_backend_ops gvp_backend_ops;
int gvp_backend_init(struct gvp_dev *g);
void gvp_backend_destroy(struct gvp_dev *g);
int gvp_check_inert(struct gvp_dev *g, bool vf_reset, char *why, size_t len);
int gvp_release_check(struct gvp_dev *g);
int gvp_unquarantine(struct gvp_dev *g);

#endif /* _GPUMIG_VFIO_PCI_H */
