/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig-vfio-pci: a vfio-pci variant driver for the virtual functions of
 * GPUs whose PF driver is a gpumig provider (include/gpumig/provider.h).
 * A VF a provider serves is live-migrated through the gpumig engine, every
 * device step one call into the provider; any other function bound to it
 * (a PF, a VF no provider serves) is assigned plainly, says it cannot
 * migrate, and is checked inert when its tenant leaves.  It knows no
 * device but by its ID table.  One file per job, each depending only on
 * those after it:
 *
 *   main.c      the PCI driver: ID table, probe, remove, reset callbacks
 *   vfio_dev.c  the VFIO device: ops table, init (the claim), open, close,
 *               release
 *   sysfs.c     migration/ (status, compat, unquarantine, the metrics),
 *               and the provider's own attributes
 *   glue.c      the engine's backend over the provider's services; the
 *               checks that a released function is inert
 *   postcopy.c  post-copy's ops over the provider's, and the VRAM aperture
 *               while blocks are absent (its faults wait for them)
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_VFIO_PCI_H
#define _GPUMIG_VFIO_PCI_H

#include <linux/vfio_pci_core.h>

#include <gpumig/migration.h>
#include <gpumig/provider.h>

/* Length of a reason a function gives (not migratable, quarantined). */
#define GVP_WHY_LEN		GPUMIG_MSG_LEN

/**
 * struct gvp_glue - the engine's backend over a claimed VF (glue.c)
 * @vf: the provider's services (fixed while claimed)
 * @pdev: the function, for the checks any PCI function gets (fixed; NULL
 *	in KUnit)
 * @ops: the backend ops: the provider's optional services and no more
 *	(fixed)
 * @pf_gone: the PF's driver went away: no service works any more
 * @block_shift: the VF's VRAM block, log2 bytes (fixed)
 * @mapping: the VFIO device's address space (the user's mmaps), where the
 *	aperture is unmapped when blocks go absent; NULL in KUnit (fixed)
 * @aperture_len: the aperture BAR's length (fixed)
 * @pc_lock: guards @absent, @lost and @pc_blocks (postcopy.c)
 * @absent: VRAM blocks a post-copy still owes this destination, or NULL
 * @lost: blocks it will never get (with @absent)
 * @pc_blocks: bits of both
 * @pc_wq: the aperture's faults wait here for their block
 * @map_sem: held by a fault from its last look at @absent to its pages'
 *	insertion (for reading; a huge fault's for writing), for writing
 *	while blocks go absent and the aperture is unmapped (postcopy.c);
 *	its own lock, not vfio-pci-core's
 *	memory_lock, which a reset holds while it ends the data files
 */
struct gvp_glue {
	struct gpumig_vf *vf;
	struct pci_dev *pdev;
	struct gpumig_backend_ops ops;
	bool pf_gone;
	u32 block_shift;
	struct address_space *mapping;
	u64 aperture_len;

	spinlock_t pc_lock;		/* see above */
	unsigned long *absent;
	unsigned long *lost;
	unsigned long pc_blocks;
	wait_queue_head_t pc_wq;
	struct rw_semaphore map_sem;
};

/**
 * struct gvp_dev - one function bound to gpumig-vfio-pci
 * @core: vfio-pci-core's device
 * @glue: the backend, while a provider serves the function
 * @mig: the engine's migration state, or NULL when the function does not
 *	migrate (fixed after init)
 * @not_migratable: why @mig is NULL (fixed after init)
 *
 * A quarantine is the engine's record of the function
 * (gpumig_quarantine_*()), kept across a rebind, for functions with and
 * without @mig alike.
 */
struct gvp_dev {
	struct vfio_pci_core_device core;
	struct gvp_glue glue;
	struct gpumig_mig *mig;
	char not_migratable[GVP_WHY_LEN];
};

static inline struct gvp_dev *to_gvp(struct vfio_device *vdev)
{
	return container_of(vdev, struct gvp_dev, core.vdev);
}

/* vfio_dev.c */
extern const struct vfio_device_ops gvp_vfio_ops;
void gvp_reset_prepare(struct gvp_dev *g);
void gvp_reset_done(struct gvp_dev *g);
int gvp_unquarantine(struct gvp_dev *g);

/* sysfs.c */
extern const struct attribute_group *gvp_dev_groups[];

/* glue.c */
void gvp_glue_init(struct gvp_glue *gl);
int gvp_check_inert(struct pci_dev *pdev, bool reset, char *why, size_t len);

/* postcopy.c */
void gvp_pc_glue_init(struct gvp_glue *gl);
void gvp_pc_scrubbed(struct gvp_glue *gl);
void gvp_pc_release(struct gvp_glue *gl);
void gvp_pc_reset(struct gvp_glue *gl);
int gvp_mmap(struct vfio_device *vdev, struct vm_area_struct *vma);
ssize_t gvp_read(struct vfio_device *vdev, char __user *buf, size_t count, loff_t *ppos);
ssize_t gvp_write(struct vfio_device *vdev, const char __user *buf, size_t count,
		  loff_t *ppos);

#endif /* _GPUMIG_VFIO_PCI_H */
