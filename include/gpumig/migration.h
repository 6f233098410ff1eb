/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig migration engine: the API of a front end.
 *
 * A front end (simgpu's mdev, the vfio-pci variant driver) owns a VFIO
 * device and hands its migration to the engine:
 *
 *   init:      gpumig_mig_create() with a backend (the device's services)
 *              and the VFIO ops made by GPUMIG_DEFINE_VFIO_OPS(); it sets
 *              the device's mig_ops, log_ops and migration_flags
 *   open:      gpumig_mig_open() refuses a quarantined device
 *   reset:     gpumig_mig_reset() from VFIO_DEVICE_RESET or the PCI
 *              reset_done callback; never sleeps on the engine's locks
 *   close:     gpumig_mig_close(): verified teardown, then scrub or
 *              quarantine; a front end that resets the function first
 *              calls gpumig_mig_close_begin() before that reset
 *   report:    gpumig_mig_status(), gpumig_mig_status_show(),
 *              gpumig_mig_compat_show()
 *   failure:   gpumig_mig_fail() when the device loses its state under
 *              the engine (the uAPI's ERROR state, until a reset)
 *   operator:  gpumig_mig_unquarantine()
 *   release:   gpumig_mig_destroy()
 *
 * A quarantine belongs to the device, not to its binding: the records of
 * gpumig_quarantine_*() outlive a driver's unbind and bind, and end only
 * when the operator releases the device or it goes away (logged).
 *
 * The engine decides the order of the backend's calls:
 *
 *   source stop:  quiesce -> invalidate -> remaining VRAM -> arch_save
 *   destination:  VRAM chunks as they arrive -> arch_restore last, only
 *                 once the whole stream arrived and checked out
 *   close:        quiesce -> invalidate -> teardown -> scrub, or quarantine
 *
 * Locking: the engine's locks are its own.  struct gpumig_mig has no
 * visible fields, so a front end cannot take them or read state behind
 * the engine's back; every entry point below takes what it needs and
 * releases the state mutex through the deferred-reset path.  Backend ops
 * are called with an engine lock held (each op says which) and must not
 * call back into the engine, except gpumig_mig_reset().
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_MIGRATION_H
#define _GPUMIG_MIGRATION_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/device.h>
#include <linux/types.h>
#include <linux/vfio.h>

#include <gpumig/stream.h>

struct gpumig_mig;
struct iov_iter;
struct iova_bitmap;
struct rb_root_cached;

/*
 * The default VRAM block (struct gpumig_geometry): VRAM moves in blocks
 * of this size unless the device says otherwise, and it is then also the
 * grain of the backend's VRAM dirty tracking.
 */
#define GPUMIG_BLOCK_SHIFT	GPUMIG_BLOCK_SHIFT_DEFAULT
#define GPUMIG_BLOCK_SIZE	BIT(GPUMIG_BLOCK_SHIFT)
/* The default and the largest size of the architectural state in one part. */
#define GPUMIG_ARCH_MAX		(64U * 1024)
#define GPUMIG_ARCH_PART_MAX	(4U << 20)
#define GPUMIG_ARCH_PARTS_MAX	64
/* What a destination buffers of the state, all parts together, at most. */
#define GPUMIG_ARCH_TOTAL_MAX	(64U << 20)
/* The largest vendor section. */
#define GPUMIG_VENDOR_MAX	(4U << 20)

/**
 * struct gpumig_geometry - how a device's migration is cut, given at creation
 * @block_shift: log2 of the VRAM block: the stream's chunk and the grain of
 *	the backend's VRAM dirty tracking (@vram_next_dirty and the counts
 *	are in these blocks), GPUMIG_BLOCK_SHIFT_MIN to
 *	GPUMIG_BLOCK_SHIFT_MAX; VRAM is a whole number of them.  0:
 *	GPUMIG_BLOCK_SHIFT (64 KiB)
 * @arch_parts: parts the architectural state is saved and restored in,
 *	1 to GPUMIG_ARCH_PARTS_MAX.  0: 1
 * @arch_part_max: the largest a part may be, up to GPUMIG_ARCH_PART_MAX
 *	(and @arch_parts of them up to GPUMIG_ARCH_TOTAL_MAX).  0:
 *	GPUMIG_ARCH_MAX
 * @vendor_max: the largest vendor section (@vendor_save), up to
 *	GPUMIG_VENDOR_MAX; 0 for a backend without them
 *
 * A device of the defaults (64 KiB blocks, one part of at most 64 KiB, no
 * vendor sections) writes stream 1.1, which every release of gpumig
 * reads; any other geometry needs stream 1.2 (migration/compat says which
 * a device writes), which releases before 0.2 refuse by name.
 */
struct gpumig_geometry {
	u32 block_shift;
	u32 arch_parts;
	u32 arch_part_max;
	u32 vendor_max;
};

/* Length of a reason (quarantine, refusal), terminator included. */
#define GPUMIG_MSG_LEN		GPUMIG_PARSER_MSG_LEN

/**
 * struct gpumig_backend_ops - the device services the engine needs
 *
 * Every op gets the @priv given to gpumig_mig_create().  "State mutex"
 * and "file lock" are the engine's: the state mutex is held for the
 * state machine, open, close and DMA logging; a data file's lock for its
 * reads and writes, which run concurrently with the state machine, so a
 * backend serialises its own device state (simgpu uses its core lock).
 *
 * @quiesce: stop taking new work, preempt or drain what runs, and verify
 *	the device is idle, within a bound.  0, or -EBUSY (or another errno)
 *	with the device still running as before.  State mutex.
 * @unquiesce: undo @quiesce: the device runs again.  State mutex.
 * @invalidate: invalidate the device's translations for the tenant and
 *	wait for the device's acknowledgment; -ETIMEDOUT when none comes.
 *	State mutex.
 * @vram_track: start (true) or stop per-block dirty tracking of VRAM.
 *	Starting marks every block dirty.  0, or an errno when tracking
 *	cannot start (the migration step then fails).  State mutex.
 * @vram_next_dirty: the first dirty block at or after @from, its dirty
 *	bit cleared; *@zero tells whether it is all zeroes.  -ENOENT if none.
 *	File lock.
 * @vram_take_zero_run: take (clear) the dirty blocks from @from on that
 *	are all zeroes, at most @max, stopping at the first that is clean or
 *	holds data; return how many, 0 when @from is not one.  Optional: the
 *	engine sends a run of zero blocks as one range either way, and
 *	without it finds the run block by block with @vram_next_dirty, which
 *	costs a call per block.  File lock.
 * @vram_dirty_count: dirty blocks now, split into non-zero and zero; while
 *	tracking is off, every block (all would be sent).  Either lock.
 * @vram_read: read @len bytes of VRAM at @off.  File lock.
 * @vram_write: write @len bytes at @off; @buf NULL writes zeroes.  File
 *	lock.
 * @vram_write_iter: optional: copy @len bytes of a VRAM chunk's data from
 *	@from straight into VRAM at @off (the range lies inside VRAM: the
 *	stream parser checked it) and extend *@crc (crc32_le()) over them as
 *	VRAM now holds them; a VRAM page it had to allocate holds no stale
 *	memory where the copy did not reach.  Called with page faults
 *	disabled, so a copy from user memory that is not present ends short
 *	instead of faulting under the engine's locks; the engine then faults
 *	it in without them and goes on.  Return the bytes copied (0 to @len)
 *	or a negative errno.  Without it the data is copied into the
 *	engine's buffer first and handed to @vram_write, one copy more.
 *	File lock.
 * @arch_size: the length of every part @arch_save would produce now,
 *	together.  Either lock.
 * @arch_save: write part @part (0 to the geometry's @arch_parts - 1) of
 *	the architectural state (registers, queues, in-flight work and its
 *	progress, page-table root...) to @buf, of @len bytes (the geometry's
 *	@arch_part_max); return its length.  The device is quiesced.  File
 *	lock.
 * @arch_restore: install part @part of the architectural state: at the end
 *	of a stream that checked out, every part in order, so a part may rely
 *	on the ones before it; the device may run after the last.  File
 *	lock.
 * @vendor_size: optional, with the next two (all three or none; the
 *	geometry's @vendor_max says how large a section may be): the bytes
 *	of the vendor sections the device would produce at the stop now,
 *	their count in *@sections.  Either lock.
 * @vendor_save: section @index (0, 1, ...) of the device's own state, which
 *	gpumig carries unread (firmware context, a PF's per-VF settings), to
 *	@buf of @len bytes; return its length, or -ENOENT after the last.
 *	After VRAM, before the architectural state; the device is quiesced.
 *	File lock.
 * @vendor_restore: take section @index, hostile input the backend checks;
 *	called as each arrives, in order, before the architectural state.
 *	File lock.
 * @compat_check: optional: the backend's own rule on top of the common
 *	one (gpumig_compat_check()), for a source whose descriptor passed it;
 *	0, or -EOPNOTSUPP with @why saying what differs.  File lock.
 * @teardown: the tenant is gone and the engine quiesced and invalidated
 *	the device: stop whatever is left (a processor, a pending DMA) and
 *	verify the device is inert with no translation cached.  0, or an
 *	errno with @why saying what is wrong.  State mutex.
 * @scrub: make the device fit for the next tenant: reset it and erase its
 *	memory.  0, or an errno when the memory may not be erased (the
 *	device is then quarantined).  State mutex.
 * @dma_log_start: start tracking guest pages the device writes, in the
 *	ranges given (vfio_log_ops.log_start).  Optional, with the next two:
 *	all three or none.  State mutex.
 * @dma_log_stop: stop tracking and forget.  State mutex.
 * @dma_log_report: call @report for every run of pages written in
 *	[@iova, @iova + @len) since the last report, and clear them.  State
 *	mutex.
 * @p2p: optional: stop (@stop) or restart the device's peer-to-peer DMA
 *	only, for the P2P states: the device keeps running otherwise.  Without
 *	it the P2P states quiesce the whole device (a GPU whose page tables
 *	the tenant writes cannot tell a peer's BAR from memory).  May be
 *	called on a quiesced device.  State mutex.
 * @guest_resets: how many times the guest has reset the device through
 *	its own registers so far, for hardware that counts them (a VF's
 *	PF does); a change during PRE_COPY is a gpumig_mig_reconfigured().
 *	Optional (a front end that sees the reset calls that instead).
 *	File lock, or the state mutex.
 * @vram_prepare: optional: a restore will write about @bytes of VRAM data
 *	(the source's own count, early in its stream): the backend may back
 *	that much memory ahead, outside the writes' path.  A hint; it must
 *	not sleep long (queue the work).  Called from the resuming fd's write.
 * @vram_absent: optional, with @vram_deliver and @vram_lose (all three or
 *	none): a post-copy destination (Documentation/gpumig/postcopy.rst)
 *	runs with the blocks set in @map (@nr bits, the device's blocks)
 *	still owed: any access of the device to one waits until it arrives
 *	(a GPU access parks its queue, others run on); nothing ever reads in
 *	its place.  Called once, before the device first runs.  0 or an
 *	errno.  State mutex.
 * @vram_deliver: owed block @blk arrived: write its @len bytes (one
 *	block) and let what waited on it run, at once (atomically for the
 *	device).  0, -EALREADY when it is not owed, or an errno.  Called
 *	without the engine's device locks, while the device runs.
 * @vram_lose: owed block @blk will never arrive: what touches it fails
 *	with the device's own error until the guest rewrites it or resets
 *	the device.  0 or -EALREADY.  As @vram_deliver.
 * @vram_hold: optional, with @hold_read, @hold_return and @hold_free: a
 *	post-copy source, stopped and read to its end, gives up the contents
 *	of the blocks set in @map: they leave the device (which then reads
 *	zero there, so closing and scrubbing it loses nothing of them) into
 *	a hold only the engine reaches.  Return the hold or an ERR_PTR.
 *	State mutex.
 * @hold_read: read @len bytes at VRAM offset @off of a held block.  Any
 *	context that may sleep; the engine serialises calls on one hold.
 * @hold_return: the source runs again (a failed switchover): the held
 *	contents go back into the device, the hold is freed.  State mutex.
 * @hold_free: scrub and free a hold (every block was delivered, or the
 *	post-copy was abandoned); the device may be gone by then.
 * @owner: the module the hold's code lives in (THIS_MODULE); the engine
 *	pins it while a hold exists
 * @hold_outlives_binding: the hold is kept outside the front end (a PF's
 *	provider keeps a VF's): unbinding the front end leaves the post-copy
 *	to the device's next binding, which finds it by the device's name,
 *	instead of abandoning it
 * @notifies_dirty: the backend calls gpumig_mig_vram_dirtied() whenever a
 *	VRAM block becomes dirty while tracking; without it (hardware that
 *	raises no interrupt for that) the engine looks again every
 *	GPUMIG_POLL_RECHECK_MS while someone polls a saving file.
 * @throttle: optional: give the tenant's work (its queues and whatever it
 *	programmed the device to do by itself) only (100 - @pct) % of the
 *	device's time, @pct 0 to GPUMIG_THROTTLE_MAX; 0 gives it all again.
 *	Less time, nothing stopped: work in flight is never lost or
 *	corrupted.  Device auto-converge (migration/auto_converge) needs it.
 *	0 or an errno.  State mutex.
 */
struct gpumig_backend_ops {
	int (*quiesce)(void *priv);
	void (*unquiesce)(void *priv);
	int (*invalidate)(void *priv);
	int (*vram_track)(void *priv, bool on);
	long (*vram_next_dirty)(void *priv, unsigned long from, bool *zero);
	unsigned long (*vram_take_zero_run)(void *priv, unsigned long from,
					    unsigned long max);
	void (*vram_dirty_count)(void *priv, unsigned long *nonzero,
				 unsigned long *zero);
	int (*vram_read)(void *priv, u64 off, void *buf, u32 len);
	int (*vram_write)(void *priv, u64 off, const void *buf, u32 len);
	ssize_t (*vram_write_iter)(void *priv, u64 off, struct iov_iter *from, u32 len,
				   u32 *crc);
	size_t (*arch_size)(void *priv);
	ssize_t (*arch_save)(void *priv, u32 part, void *buf, size_t len);
	int (*arch_restore)(void *priv, u32 part, const void *buf, size_t len);
	size_t (*vendor_size)(void *priv, u32 *sections);
	ssize_t (*vendor_save)(void *priv, u32 index, void *buf, size_t len);
	int (*vendor_restore)(void *priv, u32 index, const void *buf, size_t len);
	int (*compat_check)(void *priv, const struct gpumig_compat *src, char *why,
			    size_t len);
	int (*p2p)(void *priv, bool stop);
	int (*teardown)(void *priv, char *why, size_t len);
	int (*scrub)(void *priv);
	int (*dma_log_start)(void *priv, struct rb_root_cached *ranges,
			     u32 nnodes, u64 *page_size);
	void (*dma_log_stop)(void *priv);
	int (*dma_log_report)(void *priv, u64 iova, u64 len,
			      void (*report)(void *ctx, u64 iova, u64 len),
			      void *ctx);
	u32 (*guest_resets)(void *priv);
	int (*throttle)(void *priv, u32 pct);
	void (*vram_prepare)(void *priv, u64 bytes);
	int (*vram_absent)(void *priv, const unsigned long *map, unsigned long nr);
	int (*vram_deliver)(void *priv, unsigned long blk, const void *buf, u32 len);
	int (*vram_lose)(void *priv, unsigned long blk);
	void *(*vram_hold)(void *priv, const unsigned long *map, unsigned long nr);
	int (*hold_read)(void *hold, u64 off, void *buf, u32 len);
	void (*hold_return)(void *priv, void *hold);
	void (*hold_free)(void *hold);
	struct module *owner;
	bool hold_outlives_binding;
	bool notifies_dirty;
};

/* The most of the device's time auto-converge takes from the tenant. */
#define GPUMIG_THROTTLE_MAX	99

/* How often a poll of a saving file re-checks a backend that cannot notify. */
#define GPUMIG_POLL_RECHECK_MS	10

/**
 * struct gpumig_mig_stats - what the device saw of its last migration
 * @precopy_rounds: PRE_COPY reads that drained all data ready then (ENOMSG
 *	after some data): the user's pre-copy iterations
 * @precopy_bytes: bytes read in PRE_COPY
 * @stopcopy_bytes: bytes read in STOP_COPY
 * @resumed_bytes: bytes written while RESUMING
 * @log_reports: DMA-logging reports
 * @log_report_ns: time spent in them
 * @log_bitmap_ns: of which in the first iova_bitmap_set() of each report
 *	(where the VFIO core pins the user's bitmap), for the benchmark
 * @quiesce_ns: how long the last stop's quiesce took
 * @invalidate_ns: how long the last stop's acknowledged invalidation took
 * @dirty_rate: bytes per second that became dirty again during the last
 *	pre-copy round (its bytes over the time since the round before ended)
 * @round_end_ns: when the last pre-copy round ended
 *
 * The migration counters restart when a saving (or resuming) file is
 * opened, the logging ones when the device is opened.
 */
struct gpumig_mig_stats {
	atomic64_t precopy_rounds;
	atomic64_t precopy_bytes;
	atomic64_t stopcopy_bytes;
	atomic64_t resumed_bytes;
	atomic64_t log_reports;
	atomic64_t log_report_ns;
	atomic64_t log_bitmap_ns;
	atomic64_t quiesce_ns;
	atomic64_t invalidate_ns;
	atomic64_t dirty_rate;
	atomic64_t round_end_ns;
};

/**
 * struct gpumig_mig_status - a snapshot for sysfs, debugfs and tools
 * @state: VFIO migration state
 * @quarantined: teardown verification failed; @why says why
 * @dirty_tracking: the device tracks the guest memory it writes (VFIO DMA
 *	logging is offered)
 * @pending_bytes: what the device still has to send now: in PRE_COPY
 *	what VFIO_MIG_GET_PRECOPY_INFO reports (initial plus dirty), in
 *	STOP_COPY what is left of the stream; 0 otherwise
 * @precopy_rounds: see struct gpumig_mig_stats
 * @precopy_bytes: see struct gpumig_mig_stats
 * @stopcopy_bytes: see struct gpumig_mig_stats
 * @resumed_bytes: see struct gpumig_mig_stats
 * @log_reports: see struct gpumig_mig_stats
 * @log_report_ns: see struct gpumig_mig_stats
 * @log_bitmap_ns: see struct gpumig_mig_stats
 * @quiesce_ns: see struct gpumig_mig_stats
 * @invalidate_ns: see struct gpumig_mig_stats
 * @why: the quarantine reason or the last refusal, or ""
 * @source: the producer the last resumed stream named ("gpumig/0.1"), or ""
 */
struct gpumig_mig_status {
	enum vfio_device_mig_state state;
	bool quarantined;
	bool dirty_tracking;
	u64 pending_bytes;
	u64 precopy_rounds;
	u64 precopy_bytes;
	u64 stopcopy_bytes;
	u64 resumed_bytes;
	u64 log_reports;
	u64 log_report_ns;
	u64 log_bitmap_ns;
	u64 quiesce_ns;
	u64 invalidate_ns;
	char why[GPUMIG_MSG_LEN];
	char source[GPUMIG_NOTE_MAX + 1];
};

/**
 * struct gpumig_vfio_ops - the VFIO callbacks of one front end
 * @mig: migration (vfio_device.mig_ops)
 * @log: DMA logging (vfio_device.log_ops), used only where the kernel can
 *	carry the reports and the backend tracks guest memory
 *
 * Made by GPUMIG_DEFINE_VFIO_OPS(); each callback finds the device's
 * struct gpumig_mig and calls the engine.
 */
struct gpumig_vfio_ops {
	struct vfio_migration_ops mig;
	struct vfio_log_ops log;
};

struct gpumig_mig *gpumig_mig_create(struct vfio_device *vdev,
				     const struct gpumig_vfio_ops *vops,
				     const struct gpumig_backend_ops *ops, void *priv,
				     const struct gpumig_compat *compat,
				     const struct gpumig_geometry *geo);
void gpumig_mig_destroy(struct gpumig_mig *m);

struct file *gpumig_mig_set_state(struct gpumig_mig *m,
				  enum vfio_device_mig_state new_state);
int gpumig_mig_get_state(struct gpumig_mig *m, enum vfio_device_mig_state *state);
int gpumig_mig_data_size(struct gpumig_mig *m, unsigned long *len);
int gpumig_log_start(struct gpumig_mig *m, struct rb_root_cached *ranges,
		     u32 nnodes, u64 *page_size);
int gpumig_log_stop(struct gpumig_mig *m);
int gpumig_log_read_and_clear(struct gpumig_mig *m, unsigned long iova,
			      unsigned long length, struct iova_bitmap *dirty);

int gpumig_mig_open(struct gpumig_mig *m);
void gpumig_mig_close_begin(struct gpumig_mig *m);
int gpumig_mig_close(struct gpumig_mig *m);
void gpumig_mig_reset(struct gpumig_mig *m);
void gpumig_mig_abort(struct gpumig_mig *m, int err, const char *why);
void gpumig_mig_fail(struct gpumig_mig *m, int err, const char *why);
void gpumig_mig_vram_dirtied(struct gpumig_mig *m);
void gpumig_mig_reconfigured(struct gpumig_mig *m);
int gpumig_mig_unquarantine(struct gpumig_mig *m);
int gpumig_mig_set_stream_max(struct gpumig_mig *m, u16 minor);
void gpumig_mig_postcopy_demand(struct gpumig_mig *m, unsigned long blk);
bool gpumig_mig_device_runs(struct gpumig_mig *m);
u16 gpumig_mig_stream_max(struct gpumig_mig *m);
int gpumig_sysfs_confirm(const char *buf);

int gpumig_quarantine_set(struct device *dev, const char *why);
bool gpumig_quarantine_get(struct device *dev, char *why, size_t len);
int gpumig_quarantine_clear(struct device *dev);
void gpumig_quarantine_gone(struct device *dev, const char *how);
const char *gpumig_state_name(u32 state);

int gpumig_mig_status(struct gpumig_mig *m, struct gpumig_mig_status *st);
ssize_t gpumig_mig_status_show(struct gpumig_mig *m, char *buf);
ssize_t gpumig_mig_compat_show(struct gpumig_mig *m, char *buf);
const struct gpumig_compat *gpumig_mig_compat(struct gpumig_mig *m);
bool gpumig_mig_dirty_tracking(struct gpumig_mig *m);
bool gpumig_dma_logging_supported(void);

#if IS_ENABLED(CONFIG_KUNIT)
int gpumig_mig_precopy_info(struct file *filp, struct vfio_precopy_info *info);
#endif

/*
 * Metrics: one value per sysfs file in the device's migration/ directory,
 * the same files for every front end (Documentation/ABI/testing/
 * sysfs-gpumig-migration).
 */
enum gpumig_metric {
	GPUMIG_METRIC_STATE,
	GPUMIG_METRIC_REMAINING,
	GPUMIG_METRIC_STOPCOPY_ESTIMATE,
	GPUMIG_METRIC_DIRTY_RATE,
	GPUMIG_METRIC_PRECOPY_ROUNDS,
	GPUMIG_METRIC_PRECOPY_BYTES,
	GPUMIG_METRIC_STOPCOPY_BYTES,
	GPUMIG_METRIC_RESUMED_BYTES,
	GPUMIG_METRIC_QUIESCE_US,
	GPUMIG_METRIC_INVALIDATE_US,
	GPUMIG_METRIC_LAST_ERROR,
	GPUMIG_METRIC_MIGRATABLE,
	GPUMIG_METRIC_DIRTY_TRACKING,
	GPUMIG_METRIC_DMA_LOG_REPORTS,
	GPUMIG_METRIC_SOURCE,
	GPUMIG_NR_METRICS
};

/*
 * Device auto-converge's files in migration/: the settings (root may
 * write them), then what the device says of its last pre-copy.
 */
enum gpumig_converge_file {
	GPUMIG_CONV_ENABLED,
	GPUMIG_CONV_INITIAL,
	GPUMIG_CONV_INCREMENT,
	GPUMIG_CONV_MAX,
	GPUMIG_CONV_THRESHOLD,
	GPUMIG_CONV_DRAIN_RATE,
	GPUMIG_CONV_REDIRTY_RATE,
	GPUMIG_CONV_THROTTLE,
	GPUMIG_CONV_VERDICT,
	GPUMIG_NR_CONV_FILES
};

/* Post-copy's files (migration/), in this order. */
enum gpumig_pc_file {
	GPUMIG_PCF_ENABLED,
	GPUMIG_PCF_ROLE,
	GPUMIG_PCF_STATE,
	GPUMIG_PCF_OWED,
	GPUMIG_PCF_LOST,
	GPUMIG_PCF_TOKEN,
	GPUMIG_PCF_TIMEOUT,
	GPUMIG_PCF_WAITS,
	GPUMIG_NR_PC_FILES
};

struct gpumig_metric_set;

/* The groups of migration/ files one show and store serve (below). */
enum gpumig_attr_group {
	GPUMIG_GROUP_METRIC,	/* enum gpumig_metric: gpumig_metric_attr_show() */
	GPUMIG_GROUP_CONV,	/* enum gpumig_converge_file */
	GPUMIG_GROUP_PC,	/* enum gpumig_pc_file */
};

/**
 * struct gpumig_metric_attr - a file of migration/
 * @attr: the file
 * @set: the set it is in, at the index of its enum in its group's array
 * @group: enum gpumig_attr_group
 */
struct gpumig_metric_attr {
	struct device_attribute attr;
	struct gpumig_metric_set *set;
	u8 group;
};

/**
 * struct gpumig_metric_set - a front end's metric files and settings
 * @to_mig: the front end's device -> engine state (NULL: not migratable)
 * @m: the files, in the order of enum gpumig_metric
 * @stream_max: the setting migration/stream_max (root may write it)
 * @conv: auto-converge's files, in the order of enum gpumig_converge_file
 * @pc: post-copy's files, in the order of enum gpumig_pc_file
 */
struct gpumig_metric_set {
	struct gpumig_mig *(*to_mig)(struct device *dev);
	struct gpumig_metric_attr m[GPUMIG_NR_METRICS];
	struct gpumig_metric_attr stream_max;
	struct gpumig_metric_attr conv[GPUMIG_NR_CONV_FILES];
	struct gpumig_metric_attr pc[GPUMIG_NR_PC_FILES];
};

ssize_t gpumig_metric_attr_show(struct device *dev, struct device_attribute *attr,
				char *buf);
ssize_t gpumig_stream_max_show(struct device *dev, struct device_attribute *attr, char *buf);
ssize_t gpumig_stream_max_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count);
ssize_t gpumig_group_attr_show(struct device *dev, struct device_attribute *attr, char *buf);
ssize_t gpumig_group_attr_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count);

#define GPUMIG_METRIC(_set, _name)						\
	{ .attr = __ATTR(_name, 0444, gpumig_metric_attr_show, NULL),		\
	  .set = &(_set) }
#define GPUMIG_CONV_SETTING(_set, _name)					\
	{ .attr = __ATTR(_name, 0644, gpumig_group_attr_show, gpumig_group_attr_store), \
	  .set = &(_set), .group = GPUMIG_GROUP_CONV }
#define GPUMIG_CONV_METRIC(_set, _name)						\
	{ .attr = __ATTR(_name, 0444, gpumig_group_attr_show, NULL),		\
	  .set = &(_set), .group = GPUMIG_GROUP_CONV }
#define GPUMIG_PC_SETTING(_set, _name)						\
	{ .attr = __ATTR(_name, 0644, gpumig_group_attr_show, gpumig_group_attr_store), \
	  .set = &(_set), .group = GPUMIG_GROUP_PC }
#define GPUMIG_PC_METRIC(_set, _name)						\
	{ .attr = __ATTR(_name, 0444, gpumig_group_attr_show, NULL),		\
	  .set = &(_set), .group = GPUMIG_GROUP_PC }
#define GPUMIG_PC_SECRET(_set, _name)						\
	{ .attr = __ATTR(_name, 0400, gpumig_group_attr_show, NULL),		\
	  .set = &(_set), .group = GPUMIG_GROUP_PC }

/**
 * GPUMIG_DEFINE_MIGRATION_ATTRS() - define a front end's migration/ files
 * @_p: prefix: defines static struct attribute *@_p_mig_attrs[], for the
 *	front end's "migration" attribute group
 * @_to_mig: struct gpumig_mig *(*)(struct device *) of the front end
 * @...: the front end's own attributes of the group (status, compat,
 *	unquarantine), listed first
 *
 * The metric files, the setting stream_max and auto-converge's files are
 * the engine's, the same for every front end.
 */
#define GPUMIG_DEFINE_MIGRATION_ATTRS(_p, _to_mig, ...)				\
	static struct gpumig_metric_set _p##_metrics = {			\
		.to_mig = _to_mig,						\
		.m = {	/* in the order of enum gpumig_metric */		\
		GPUMIG_METRIC(_p##_metrics, state),					\
		GPUMIG_METRIC(_p##_metrics, remaining_bytes),				\
		GPUMIG_METRIC(_p##_metrics, stopcopy_estimate_bytes),			\
		GPUMIG_METRIC(_p##_metrics, dirty_rate_bytes_per_sec),			\
		GPUMIG_METRIC(_p##_metrics, precopy_rounds),				\
		GPUMIG_METRIC(_p##_metrics, precopy_bytes),				\
		GPUMIG_METRIC(_p##_metrics, stopcopy_bytes),				\
		GPUMIG_METRIC(_p##_metrics, resumed_bytes),				\
		GPUMIG_METRIC(_p##_metrics, quiesce_us),					\
		GPUMIG_METRIC(_p##_metrics, invalidate_us),				\
		GPUMIG_METRIC(_p##_metrics, last_error),					\
		GPUMIG_METRIC(_p##_metrics, migratable),					\
		GPUMIG_METRIC(_p##_metrics, dirty_tracking),				\
		GPUMIG_METRIC(_p##_metrics, dma_log_reports),				\
		GPUMIG_METRIC(_p##_metrics, source),					\
		},								\
		.stream_max = { .attr = __ATTR(stream_max, 0644, gpumig_stream_max_show,	\
					       gpumig_stream_max_store),		\
				.set = &(_p##_metrics) },				\
		.conv = {	/* in the order of enum gpumig_converge_file */	\
		GPUMIG_CONV_SETTING(_p##_metrics, auto_converge),			\
		GPUMIG_CONV_SETTING(_p##_metrics, throttle_initial_pct),		\
		GPUMIG_CONV_SETTING(_p##_metrics, throttle_increment_pct),		\
		GPUMIG_CONV_SETTING(_p##_metrics, throttle_max_pct),			\
		GPUMIG_CONV_SETTING(_p##_metrics, throttle_trigger_threshold),		\
		GPUMIG_CONV_METRIC(_p##_metrics, drain_rate_bytes_per_sec),		\
		GPUMIG_CONV_METRIC(_p##_metrics, redirty_rate_bytes_per_sec),		\
		GPUMIG_CONV_METRIC(_p##_metrics, throttle_pct),			\
		GPUMIG_CONV_METRIC(_p##_metrics, converging),				\
		},								\
		.pc = {	/* in the order of enum gpumig_pc_file */		\
		GPUMIG_PC_SETTING(_p##_metrics, postcopy),				\
		GPUMIG_PC_METRIC(_p##_metrics, postcopy_role),			\
		GPUMIG_PC_METRIC(_p##_metrics, postcopy_state),			\
		GPUMIG_PC_METRIC(_p##_metrics, postcopy_owed_blocks),		\
		GPUMIG_PC_METRIC(_p##_metrics, postcopy_lost_blocks),		\
		GPUMIG_PC_SECRET(_p##_metrics, postcopy_token),			\
		GPUMIG_PC_SETTING(_p##_metrics, postcopy_timeout_s),		\
		GPUMIG_PC_METRIC(_p##_metrics, postcopy_waits),			\
		},								\
	};									\
	static struct attribute *_p##_mig_attrs[] = {				\
		__VA_ARGS__,							\
		&_p##_metrics.m[0].attr.attr, &_p##_metrics.m[1].attr.attr,	\
		&_p##_metrics.m[2].attr.attr, &_p##_metrics.m[3].attr.attr,	\
		&_p##_metrics.m[4].attr.attr, &_p##_metrics.m[5].attr.attr,	\
		&_p##_metrics.m[6].attr.attr, &_p##_metrics.m[7].attr.attr,	\
		&_p##_metrics.m[8].attr.attr, &_p##_metrics.m[9].attr.attr,	\
		&_p##_metrics.m[10].attr.attr, &_p##_metrics.m[11].attr.attr,	\
		&_p##_metrics.m[12].attr.attr, &_p##_metrics.m[13].attr.attr,	\
		&_p##_metrics.m[14].attr.attr,					\
		&_p##_metrics.stream_max.attr.attr,				\
		&_p##_metrics.conv[0].attr.attr, &_p##_metrics.conv[1].attr.attr,	\
		&_p##_metrics.conv[2].attr.attr, &_p##_metrics.conv[3].attr.attr,	\
		&_p##_metrics.conv[4].attr.attr, &_p##_metrics.conv[5].attr.attr,	\
		&_p##_metrics.conv[6].attr.attr, &_p##_metrics.conv[7].attr.attr,	\
		&_p##_metrics.conv[8].attr.attr,				\
		&_p##_metrics.pc[0].attr.attr, &_p##_metrics.pc[1].attr.attr,	\
		&_p##_metrics.pc[2].attr.attr, &_p##_metrics.pc[3].attr.attr,	\
		&_p##_metrics.pc[4].attr.attr, &_p##_metrics.pc[5].attr.attr,	\
		&_p##_metrics.pc[6].attr.attr, &_p##_metrics.pc[7].attr.attr,	\
		NULL								\
	}

/**
 * GPUMIG_DEFINE_VFIO_OPS() - define a front end's VFIO migration and
 *	DMA-logging callbacks
 * @name: prefix of what is defined: static struct gpumig_vfio_ops
 *	@name_vfio_ops, and its callbacks
 * @to_mig: a function or macro giving the struct gpumig_mig * of a
 *	struct vfio_device *
 *
 * Every callback is one call into the engine, which holds the lock
 * protocol; pass &@name_vfio_ops to gpumig_mig_create().
 */
#define GPUMIG_DEFINE_VFIO_OPS(name, to_mig)					\
static struct gpumig_mig *name##_mig(struct vfio_device *vdev)			\
{										\
	return to_mig(vdev);							\
}										\
static struct file *name##_set_state(struct vfio_device *vdev,			\
				     enum vfio_device_mig_state new_state)	\
{										\
	return gpumig_mig_set_state(name##_mig(vdev), new_state);			\
}										\
static int name##_get_state(struct vfio_device *vdev,				\
			    enum vfio_device_mig_state *state)			\
{										\
	return gpumig_mig_get_state(name##_mig(vdev), state);			\
}										\
static int name##_get_data_size(struct vfio_device *vdev, unsigned long *len)	\
{										\
	return gpumig_mig_data_size(name##_mig(vdev), len);				\
}										\
static int name##_log_start(struct vfio_device *vdev,				\
			    struct rb_root_cached *ranges, u32 nnodes,		\
			    u64 *page_size)					\
{										\
	return gpumig_log_start(name##_mig(vdev), ranges, nnodes, page_size);	\
}										\
static int name##_log_stop(struct vfio_device *vdev)				\
{										\
	return gpumig_log_stop(name##_mig(vdev));					\
}										\
static int name##_log_read_and_clear(struct vfio_device *vdev,			\
				     unsigned long iova, unsigned long length,	\
				     struct iova_bitmap *dirty)			\
{										\
	return gpumig_log_read_and_clear(name##_mig(vdev), iova, length, dirty);	\
}										\
static const struct gpumig_vfio_ops name##_vfio_ops = {			\
	.mig = {								\
		.migration_set_state = name##_set_state,			\
		.migration_get_state = name##_get_state,			\
		.migration_get_data_size = name##_get_data_size,		\
	},									\
	.log = {								\
		.log_start = name##_log_start,					\
		.log_stop = name##_log_stop,					\
		.log_read_and_clear = name##_log_read_and_clear,		\
	},									\
}

#endif /* _GPUMIG_MIGRATION_H */
