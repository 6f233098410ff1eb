/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu mdev/VFIO front end: shared between vfio.c (the device) and
 * main.c (module, parent device, types, budget).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _SIMGPU_VFIO_H
#define _SIMGPU_VFIO_H

#include <linux/mdev.h>
#include <linux/spinlock.h>
#include <linux/vfio.h>

#include <gpumig/dirty.h>
#include <gpumig/migration.h>

#include "simgpu.h"

struct dentry;
struct eventfd_ctx;

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
 * @core: the device model
 * @type: its type
 * @cfg_lock: guards @config
 * @config: emulated PCI config space
 * @irq_lock: guards @msi_trigger and @req_trigger
 * @msi_trigger: eventfd signalled for the MSI vector
 * @req_trigger: eventfd signalled to ask the user to release the device
 * @debugfs: the instance's knob directory
 * @mig: migration state (the engine's)
 * @dirty: guest pages this device wrote, while DMA logging is on
 * @log_reports: log_read_and_clear calls (debugfs stats)
 * @log_report_ns: time spent in them, for the benchmark
 * @log_bitmap_ns: of which in the first iova_bitmap_set() of each (the
 *	VFIO core pinning the user's bitmap)
 */
struct simgpu_dev {
	struct vfio_device vdev;
	struct simgpu_core core;
	const struct simgpu_type *type;
	struct mutex cfg_lock;		/* guards config */
	u8 config[256];
	spinlock_t irq_lock;		/* guards the triggers */
	struct eventfd_ctx *msi_trigger;
	struct eventfd_ctx *req_trigger;
	struct dentry *debugfs;
	struct gpumig_mig mig;
	struct gpumig_dirty dirty;
	atomic64_t log_reports;
	atomic64_t log_report_ns;
	atomic64_t log_bitmap_ns;
};

static inline struct simgpu_dev *to_simgpu(struct vfio_device *vdev)
{
	return container_of(vdev, struct simgpu_dev, vdev);
}

static inline const struct simgpu_type *to_simgpu_type(struct mdev_type *t)
{
	return container_of(t, struct simgpu_type, type);
}

extern const struct vfio_device_ops simgpu_vfio_ops;
extern const struct attribute_group simgpu_mig_group;
extern struct dentry *simgpu_debugfs_root;

void simgpu_compat(const struct simgpu_type *t, struct gpumig_compat *c);
const char *simgpu_dirty_tracking(void);
int simgpu_probe(struct mdev_device *mdev);
void simgpu_remove(struct mdev_device *mdev);
int simgpu_budget_take(u64 vram);
void simgpu_budget_put(u64 vram);

#endif /* _SIMGPU_VFIO_H */
