/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel host of simgpu's device model (simgpu.h): VRAM backed by
 * pages as it is written (vram.c) and the processor thread that runs the
 * model while the device is open, with what waits on it (proc.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _SIMGPU_HOST_H
#define _SIMGPU_HOST_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "simgpu.h"

struct iov_iter;
struct task_struct;

/*
 * VRAM dirty tracking grain: 64 KiB blocks.  The migration engine moves
 * VRAM in blocks of the same size (GPUMIG_BLOCK_SHIFT); backend.c checks
 * at build time that the two agree.
 */
#define SIMGPU_VRAM_BLOCK_SHIFT		16

/**
 * struct simgpu_vram - device memory, backed lazily page by page
 * @lock: the lock that guards everything below (the core's), held by every
 *	simgpu_vram_*() call after init
 * @pages: page index -> struct page; an absent page reads as zeroes
 * @size: bytes (fixed)
 * @present: pages currently backed
 * @dirty: while migration tracks it, one bit per VRAM block written
 * @nr_blocks: blocks in VRAM (fixed)
 * @nr_backed: blocks with at least one backed page
 * @nr_dirty: bits set in @dirty
 * @nr_dirty_backed: of which blocks with a backed page
 *
 * The three counts change as blocks do, so what migration asks most
 * often (how much is dirty, split into data and zero) costs the same
 * whatever the VRAM's size.
 * @dirtied: called with @dirtied_ctx when a block turns dirty while
 *	tracking, or NULL (set once before use)
 * @dirtied_ctx: its argument
 * @pool: zeroed pages backed ahead of a restore (simgpu_vram_prepare()),
 *	which writes take before allocating
 * @pool_len: pages in @pool
 * @pool_want: pages @pool_work still backs; 0 stops it
 * @pool_work: backs them, outside @lock but to add them
 */
struct simgpu_vram {
	struct mutex *lock;		/* the core's; see above */
	struct xarray pages;
	u64 size;
	unsigned long present;
	unsigned long *dirty;
	unsigned long nr_blocks;
	unsigned long nr_backed;
	unsigned long nr_dirty;
	unsigned long nr_dirty_backed;
	void (*dirtied)(void *ctx);
	void *dirtied_ctx;
	struct list_head pool;
	unsigned long pool_len;
	unsigned long pool_want;
	struct work_struct pool_work;
};

/**
 * struct simgpu_proc - the thread that runs a device model
 * @core: the model (fixed)
 * @wq: the thread waits here for work
 * @step_wq: woken after every pass (quiesce and host invalidation wait)
 * @kick: set by simgpu_proc_kick(), cleared by the thread
 * @thread: the thread, while the device is open; set and cleared only by
 *	the front end's open and close, which the VFIO core serialises
 */
struct simgpu_proc {
	struct simgpu_core *core;
	wait_queue_head_t wq;
	wait_queue_head_t step_wq;
	atomic_t kick;
	struct task_struct *thread;
};

/* vram.c */
void simgpu_vram_init(struct simgpu_vram *vram, u64 size, struct mutex *lock);
int simgpu_vram_rw(struct simgpu_vram *vram, u64 offset, void *buf, size_t len,
		   bool write);
ssize_t simgpu_vram_write_iter(struct simgpu_vram *vram, u64 offset, struct iov_iter *from,
			       size_t len, u32 *crc);
int simgpu_vram_track(struct simgpu_vram *vram, bool on);
void simgpu_vram_prepare(struct simgpu_vram *vram, u64 bytes);
void simgpu_vram_pool_stop(struct simgpu_vram *vram);
bool simgpu_vram_block_zero(struct simgpu_vram *vram, unsigned long blk);
long simgpu_vram_next_dirty(struct simgpu_vram *vram, unsigned long from, bool *zero);
unsigned long simgpu_vram_take_zero_run(struct simgpu_vram *vram,
					unsigned long from, unsigned long max);
void simgpu_vram_dirty_count(struct simgpu_vram *vram, unsigned long *backed,
			     unsigned long *zero);
void simgpu_vram_zero(struct simgpu_vram *vram, u64 offset, u64 len);
void simgpu_vram_scrub(struct simgpu_vram *vram);
struct simgpu_vram_hold;
struct simgpu_vram_hold *simgpu_vram_hold(struct simgpu_vram *vram, const unsigned long *map,
					  unsigned long nr);
int simgpu_vram_hold_read(struct simgpu_vram_hold *h, u64 offset, void *buf, size_t len);
void simgpu_vram_hold_return(struct simgpu_vram *vram, struct simgpu_vram_hold *h);
void simgpu_vram_hold_free(struct simgpu_vram_hold *h);

/* proc.c */
void simgpu_proc_init(struct simgpu_proc *p, struct simgpu_core *core);
int simgpu_proc_start(struct simgpu_proc *p, const char *name);
void simgpu_proc_stop(struct simgpu_proc *p);
bool simgpu_proc_running(struct simgpu_proc *p);
void simgpu_proc_kick(struct simgpu_proc *p);
void simgpu_proc_stepped(struct simgpu_proc *p);
int simgpu_quiesce(struct simgpu_proc *p, unsigned int timeout_ms);
void simgpu_unquiesce(struct simgpu_proc *p);
int simgpu_host_invalidate(struct simgpu_proc *p, unsigned int timeout_ms);

#endif /* _SIMGPU_HOST_H */
