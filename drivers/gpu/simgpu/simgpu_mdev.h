/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu's mdev front end: a mediated device per instance, a VFIO PCI
 * device whose config space and BAR0 are emulated around the device model
 * (simgpu.h) and whose migration is the gpumig engine's.  One file per
 * job, each depending only on those listed after it:
 *
 *   main.c      module, the parent device and its mdev driver
 *   vfio_dev.c  the VFIO device: ops table, open/close, ioctls, probe
 *   sysfs.c     per-instance attributes (simgpu/, migration/)
 *   debugfs.c   test knobs, counters, quarantine release
 *   regions.c   VFIO regions: config space and BAR0 accesses
 *   backend.c   the device's services to the engine, reset and scrub
 *   config.c    the emulated PCI config space
 *   env.c       the model's outside world: DMA and the interrupt
 *   irq.c       VFIO interrupts: MSI and request eventfds
 *   types.c     mdev types, the VRAM budget, compat descriptors
 *
 * Below them, the kernel host of the model (simgpu_host.h: vram.c,
 * proc.c) and the model itself (simgpu.h: core.c, mmu.c, arch.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _SIMGPU_MDEV_H
#define _SIMGPU_MDEV_H

#include <linux/mdev.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/vfio.h>

#include <gpumig/migration.h>

#include "simgpu_host.h"

struct dentry;
struct eventfd_ctx;
struct gpumig_dirty;

#define SIMGPU_CFG_SIZE		256

/**
 * struct simgpu_type - an mdev type, like a vendor's vGPU profile
 * @type: the mdev core's type
 * @vram: VRAM bytes
 * @queues: command queues
 */
struct simgpu_type {
	struct mdev_type type;
	u64 vram;
	u32 queues;
};

/**
 * struct simgpu_dev - one simgpu mediated device
 * @vdev: the VFIO device
 * @core: the device model (its own lock guards it)
 * @vram: its device memory (the core's lock guards it)
 * @proc: the thread that runs the model while the device is open
 * @type: its type (fixed)
 * @mig: migration state, the engine's (fixed after init)
 * @dirty: the backend's tracker of guest pages the device writes (fixed
 *	after init; its own lock guards it)
 * @debugfs: the instance's knob directory (fixed after probe)
 * @cfg_lock: guards @config
 * @config: emulated PCI config space
 * @irq_lock: guards @msi_trigger and @req_trigger; a spinlock, because
 *	the model raises the interrupt from its processor step
 * @msi_trigger: eventfd signalled for the MSI vector
 * @req_trigger: eventfd signalled to ask the user to release the device
 */
struct simgpu_dev {
	struct vfio_device vdev;
	struct simgpu_core core;
	struct simgpu_vram vram;
	struct simgpu_proc proc;
	const struct simgpu_type *type;
	struct gpumig_mig *mig;
	struct gpumig_dirty *dirty;
	struct dentry *debugfs;

	struct mutex cfg_lock;		/* guards config */
	u8 config[SIMGPU_CFG_SIZE];

	spinlock_t irq_lock;		/* guards the triggers */
	struct eventfd_ctx *msi_trigger;
	struct eventfd_ctx *req_trigger;
};

static inline struct simgpu_dev *to_simgpu(struct vfio_device *vdev)
{
	return container_of(vdev, struct simgpu_dev, vdev);
}

static inline const struct simgpu_type *to_simgpu_type(struct mdev_type *t)
{
	return container_of(t, struct simgpu_type, type);
}

/* vfio_dev.c */
int simgpu_probe(struct mdev_device *mdev);
void simgpu_remove(struct mdev_device *mdev);

/* sysfs.c */
extern const struct attribute_group *simgpu_dev_groups[];

/* debugfs.c */
void simgpu_debugfs_init(void);
void simgpu_debugfs_exit(void);
void simgpu_debugfs_add(struct simgpu_dev *sdev);
void simgpu_debugfs_remove(struct simgpu_dev *sdev);

/* regions.c */
#ifdef GPUMIG_HAVE_REGION_INFO_CAPS
struct vfio_info_cap;
struct vfio_region_info;
int simgpu_region_info_caps(struct vfio_device *vdev, struct vfio_region_info *info,
			    struct vfio_info_cap *caps);
#else
int simgpu_region_info(unsigned long arg);
#endif
ssize_t simgpu_region_rw(struct simgpu_dev *sdev, char __user *buf, size_t count,
			 loff_t *ppos, bool write);

/* backend.c */
extern const struct gpumig_backend_ops simgpu_backend_ops;
void simgpu_vram_dirtied(void *ctx);
void simgpu_reset(struct simgpu_dev *sdev);

/* config.c */
void simgpu_cfg_init(struct simgpu_dev *sdev);
u32 simgpu_cfg_read(struct simgpu_dev *sdev, u32 off, u32 len);
void simgpu_cfg_write(struct simgpu_dev *sdev, u32 off, u32 val, u32 len);

/* env.c */
extern const struct simgpu_env_ops simgpu_mdev_env;

/* irq.c */
int simgpu_irq_info(unsigned long arg);
int simgpu_set_irqs(struct simgpu_dev *sdev, unsigned long arg);
void simgpu_irq_signal(struct simgpu_dev *sdev);
void simgpu_irq_release(struct simgpu_dev *sdev);
void simgpu_request(struct vfio_device *vdev, unsigned int count);

/* types.c */
extern struct mdev_type *simgpu_mdev_types[];
extern const unsigned int simgpu_nr_types;
int simgpu_budget_take(u64 vram);
void simgpu_budget_put(u64 vram);
unsigned int simgpu_type_available(struct mdev_type *mtype);
ssize_t simgpu_type_description(struct mdev_type *mtype, char *buf);
void simgpu_type_compat(const struct simgpu_type *t, struct gpumig_compat *c);

#endif /* _SIMGPU_MDEV_H */
