/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig migration engine: the VFIO migration state machine and the data
 * files, independent of any device.  A backend (simgpu, a PCI variant
 * driver, a KUnit fake) implements struct gpumig_backend_ops; the engine
 * decides the order of its calls:
 *
 *   source stop:  quiesce -> invalidate -> (read) remaining VRAM -> arch
 *   destination:  VRAM chunks as they arrive -> arch_restore last, only
 *                 once the whole stream arrived and checked out
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_MIGRATION_H
#define _GPUMIG_MIGRATION_H

#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/vfio.h>

#include <gpumig/stream.h>

struct gpumig_mig;
struct gpumig_mig_file;

/* VRAM moves in blocks of this size; it is also the dirty-tracking grain. */
#define GPUMIG_BLOCK_SIZE	(64 * 1024)
#define GPUMIG_ARCH_MAX		(64 * 1024)

/**
 * struct gpumig_backend_ops - what the engine needs from a device
 * @quiesce: stop taking new work, preempt or drain what runs, and verify
 *	the device is idle, within a bound.  Return 0, or -EBUSY (or another
 *	errno) with the device still running as before.
 * @unquiesce: undo @quiesce: the device runs again.
 * @invalidate: invalidate the device's translations for the tenant and
 *	wait for the device's acknowledgment; -ETIMEDOUT when none comes.
 * @vram_track: start (true) or stop per-block dirty tracking of VRAM.
 *	Starting marks every block dirty.
 * @vram_next_dirty: the first dirty block at or after @from, its dirty
 *	bit cleared; *@zero tells whether it is all zeroes.  -ENOENT if none.
 * @vram_dirty_count: dirty blocks now, split into non-zero and zero; while
 *	tracking is off, every block (all would be sent).
 * @vram_read: read @len bytes of VRAM at @off.
 * @vram_write: write @len bytes at @off; @buf NULL writes zeroes.
 * @arch_save: write the architectural state (registers, queues, in-flight
 *	work and its progress, page-table root...) to @buf; return its length.
 *	With @buf NULL, only return the length it would have.
 * @arch_restore: install architectural state; the device may run after.
 * @teardown_check: is the device idle with no translation left?  0, or an
 *	errno with @why explaining.
 */
struct gpumig_backend_ops {
	int (*quiesce)(struct gpumig_mig *m);
	void (*unquiesce)(struct gpumig_mig *m);
	int (*invalidate)(struct gpumig_mig *m);
	void (*vram_track)(struct gpumig_mig *m, bool on);
	long (*vram_next_dirty)(struct gpumig_mig *m, unsigned long from, bool *zero);
	void (*vram_dirty_count)(struct gpumig_mig *m, unsigned long *nonzero,
				 unsigned long *zero);
	int (*vram_read)(struct gpumig_mig *m, u64 off, void *buf, u32 len);
	int (*vram_write)(struct gpumig_mig *m, u64 off, const void *buf, u32 len);
	ssize_t (*arch_save)(struct gpumig_mig *m, void *buf, size_t len);
	int (*arch_restore)(struct gpumig_mig *m, const void *buf, size_t len);
	int (*teardown_check)(struct gpumig_mig *m, char *why, size_t len);
};

/**
 * struct gpumig_mig_stats - what the device saw of its last migration
 * @precopy_rounds: PRE_COPY reads that drained all data ready then (ENOMSG
 *	after some data): the user's pre-copy iterations
 * @precopy_bytes: bytes read in PRE_COPY
 * @stopcopy_bytes: bytes read in STOP_COPY
 * @resumed_bytes: bytes written while RESUMING
 *
 * Reset when a saving (or resuming) file is opened.
 */
struct gpumig_mig_stats {
	atomic64_t precopy_rounds;
	atomic64_t precopy_bytes;
	atomic64_t stopcopy_bytes;
	atomic64_t resumed_bytes;
};

/**
 * struct gpumig_mig - migration state of one device
 * @vdev: the VFIO device (its migration_flags drive the arc computation)
 * @ops: backend
 * @priv: backend data
 * @compat: this device's compatibility descriptor
 * @state_mutex: guards @state, @saving, @resuming, @quarantined
 * @state: current VFIO migration state
 * @saving: data file of PRE_COPY/STOP_COPY, or NULL
 * @resuming: data file of RESUMING, or NULL
 * @reset_lock: guards @deferred_reset (taken inside @state_mutex's holder
 *	only by trylock paths; see gpumig_mig_reset())
 * @deferred_reset: a reset arrived while @state_mutex was held
 * @quiesced: the backend is quiesced by the engine
 * @migrated_away: a STOP_COPY stream was read to its end
 * @quarantined: teardown verification failed: do not reuse
 * @why: the reason for @quarantined, or the last refusal
 * @stats: the last migration, as the device saw it
 */
struct gpumig_mig {
	struct vfio_device *vdev;
	const struct gpumig_backend_ops *ops;
	void *priv;
	struct gpumig_compat compat;

	struct mutex state_mutex;	/* see above */
	enum vfio_device_mig_state state;
	struct gpumig_mig_file *saving;
	struct gpumig_mig_file *resuming;
	spinlock_t reset_lock;		/* see above */
	bool deferred_reset;
	bool quiesced;
	bool migrated_away;
	bool quarantined;
	char why[GPUMIG_PARSER_MSG_LEN];
	struct gpumig_mig_stats stats;
};

/**
 * struct gpumig_mig_status - a snapshot for sysfs and tools
 * @state: VFIO migration state
 * @quarantined: teardown verification failed
 * @precopy_rounds: see struct gpumig_mig_stats
 * @precopy_bytes: see struct gpumig_mig_stats
 * @stopcopy_bytes: see struct gpumig_mig_stats
 * @resumed_bytes: see struct gpumig_mig_stats
 * @pending_bytes: VRAM bytes still to send while a saving file is open
 * @why: quarantine reason or last refusal
 */
struct gpumig_mig_status {
	enum vfio_device_mig_state state;
	bool quarantined;
	u64 precopy_rounds;
	u64 precopy_bytes;
	u64 stopcopy_bytes;
	u64 resumed_bytes;
	u64 pending_bytes;
	char why[GPUMIG_PARSER_MSG_LEN];
};

int gpumig_mig_status(struct gpumig_mig *m, struct gpumig_mig_status *st);
void gpumig_mig_init(struct gpumig_mig *m, struct vfio_device *vdev,
		     const struct gpumig_backend_ops *ops, void *priv,
		     const struct gpumig_compat *compat);
void gpumig_mig_destroy(struct gpumig_mig *m);
struct file *gpumig_mig_set_state(struct gpumig_mig *m,
				  enum vfio_device_mig_state new_state);
int gpumig_mig_get_state(struct gpumig_mig *m, enum vfio_device_mig_state *state);
int gpumig_mig_data_size(struct gpumig_mig *m, unsigned long *len);
void gpumig_mig_reset(struct gpumig_mig *m);
int gpumig_mig_teardown(struct gpumig_mig *m);
int gpumig_mig_unquarantine(struct gpumig_mig *m, void (*release)(struct gpumig_mig *m));
#if IS_ENABLED(CONFIG_KUNIT)
int gpumig_mig_precopy_info(struct file *filp, struct vfio_precopy_info *info);
#endif

#endif /* _GPUMIG_MIGRATION_H */
