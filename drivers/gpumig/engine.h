/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig engine internals, shared by state.c (the state machine and the
 * lock protocol), file.c (the migration data files), log.c (DMA logging),
 * reason.c (the reason reports show), metrics.c (what reports show, and
 * how often a report may look), converge.c (device auto-converge) and
 * quarantine.c (quarantine records, which outlive a binding).  Front ends
 * see none of this: include/gpumig/migration.h declares struct gpumig_mig
 * without its fields, so any access from outside the engine fails to
 * compile.
 *
 * Locks, outermost first:
 *   view_lock     one per device; a report's refresh of what it shows,
 *                 taken before the state mutex
 *   state_mutex   one per device; every entry point of the engine takes
 *                 it and releases it with gpumig_state_mutex_unlock(),
 *                 which runs a reset that arrived meanwhile
 *   file->io_lock one per data file: a read or a write, across its user
 *                 copies; taken without the state mutex, before file->lock
 *   file->lock    one per data file; reads, writes and PRECOPY_INFO take
 *                 it without the state mutex (never across a user copy
 *                 that may fault: the reset path takes it under
 *                 vfio-pci-core's memory lock; a copy with page faults
 *                 disabled ends short instead), the state machine takes it
 *                 inside the state mutex
 *   reset_lock    spinlock; only guards deferred_reset
 *   why_lock      spinlock; only guards why
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_ENGINE_H
#define _GPUMIG_ENGINE_H

#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/vfio.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <asm/byteorder.h>

#include <gpumig/migration.h>
#include <gpumig/stream.h>

struct gpumig_pc;

/**
 * enum gpumig_file_state - where a data file is in its life
 * @GPUMIG_FILE_PRECOPY: saving, the device runs: passes over dirty VRAM;
 *	a read finds nothing when every block was sent and none changed
 * @GPUMIG_FILE_STOPCOPY: saving, the device is stopped: the blocks still
 *	dirty, then the vendor sections and the architectural state
 * @GPUMIG_FILE_END: saving: the end section comes next
 * @GPUMIG_FILE_COMPLETE: saving: the end section was produced; once it is
 *	read, reads return 0
 * @GPUMIG_FILE_RESUMING: resuming: sections are checked as they arrive
 * @GPUMIG_FILE_RESTORED: resuming: a whole stream arrived, checked out and
 *	its architectural state was installed
 * @GPUMIG_FILE_ERROR: broken for good (a block already taken off the dirty
 *	set cannot be sent again; a refused stream stays refused); reads and
 *	writes return the file's error
 * @GPUMIG_FILE_DISABLED: the state machine left the file's state; reads
 *	and writes return -ENODEV
 */
enum gpumig_file_state {
	GPUMIG_FILE_PRECOPY,
	GPUMIG_FILE_STOPCOPY,
	GPUMIG_FILE_END,
	GPUMIG_FILE_COMPLETE,
	GPUMIG_FILE_RESUMING,
	GPUMIG_FILE_RESTORED,
	GPUMIG_FILE_ERROR,
	GPUMIG_FILE_DISABLED,
};

/**
 * struct gpumig_mig_file - one migration data fd
 * @filp: the file (fixed)
 * @m: its device; NULL once @state is DISABLED (guarded by @lock)
 * @io_lock: one read or write at a time, held across the user copy (which
 *	may fault); @buf (saving) and @tmp (resuming) change only under it
 * @lock: guards every field below; never held across a user copy that
 *	may fault (a resuming file's copy straight into VRAM runs under it
 *	with page faults disabled)
 * @state: enum gpumig_file_state
 * @err: the error of GPUMIG_FILE_ERROR
 * @w: saving: stream writer
 * @buf: saving: encoded bytes of the current section
 * @buf_len: bytes in @buf
 * @buf_pos: bytes of @buf already read
 * @tmp: saving: a vendor section or a part of the architectural state;
 *	resuming: input chunk
 * @buf_size: saving: size of @buf, the largest section the device makes
 * @tmp_size: size of @tmp
 * @cursor: saving: next VRAM block to look at
 * @ahead: saving: a dirty block the backend gave (its dirty bit cleared)
 *	that ended a zero run and is not sent yet, or -1
 * @ahead_zero: saving: the backend's zero hint for @ahead
 * @initial_left: saving: bytes of the first full pass not read yet
 * @round_bytes: saving: bytes read since the last pre-copy round ended
 * @vram_done: saving, stopped: every dirty block was sent; the tail
 *	(vendor sections, the architectural state) is being produced
 * @tail_left: saving: then, what the tail still owes but the end section
 * @next: saving: the tail's next vendor section, then (with @in_arch) its
 *	next part; resuming: the next vendor section expected
 * @in_arch: saving: the vendor sections are done
 * @wq: saving: poll() waits here for data, a state change or an error
 * @recheck: saving: wakes @wq again for a backend that cannot notify
 * @parser: resuming: stream parser
 * @arch: resuming: architectural state, every part at its slot of the
 *	geometry's @arch_part_max bytes, held until the end section
 * @arch_len: resuming: each part's length
 * @arch_parts: resuming: parts that arrived (in order)
 * @tail_seen: resuming: a vendor section or the state arrived: no more
 *	VRAM
 * @idle_since: saving, pre-copy: when a read last found nothing to give
 *	(-ENOMSG) and none found data since, or 0 (converge.c)
 * @idle_ns: saving: time spent so since auto-converge's last period
 * @pc: saving: the stream announced post-copy; resuming: it did
 * @pc_refused: saving: post-copy may not be announced (the device still
 *	holds VRAM for an earlier one)
 * @pc_zeroed: saving: the pre-copy pass of a post-copy stream (its zero
 *	runs sent, its blocks with data owed) is over
 * @pc_token: then: the session token
 * @pc_owed: then: the blocks owed (saving: found as stop-copy goes;
 *	resuming: as the manifest says)
 * @pc_owed_end: saving: one past the last block owed, 0 while none is
 * @pc_next: saving: the first block of the next manifest section;
 *	resuming: the one expected next
 * @pc_payload: saving: one manifest section's payload
 * @pc_sess: resuming: the destination's session, allocated at the
 *	announcement, until the stop takes it (gpumig_pc_dest_begin())
 */
struct gpumig_mig_file {
	struct file *filp;
	struct gpumig_mig *m;
	struct mutex io_lock;	/* see above */
	struct mutex lock;	/* guards the fields below */
	enum gpumig_file_state state;
	int err;

	struct gpumig_writer w;
	u8 *buf;
	size_t buf_len;
	size_t buf_pos;
	u8 *tmp;
	size_t buf_size;
	size_t tmp_size;
	unsigned long cursor;
	long ahead;
	bool ahead_zero;
	u64 initial_left;
	int reconfig_seen;
	u64 round_bytes;
	bool vram_done;
	u64 tail_left;
	u32 next;
	bool in_arch;
	wait_queue_head_t wq;
	struct delayed_work recheck;

	struct gpumig_parser parser;
	u8 *arch;
	u32 *arch_len;
	u32 arch_parts;
	bool tail_seen;
	u64 idle_since;
	u64 idle_ns;
	bool pc;
	bool pc_refused;
	bool pc_zeroed;
	u8 pc_token[GPUMIG_TOKEN_LEN];
	unsigned long *pc_owed;
	unsigned long pc_owed_end;
	unsigned long pc_next;
	u8 *pc_payload;
	struct gpumig_pc *pc_sess;
};

/* The stream minor that carries post-copy (GPUMIG_SEC_POSTCOPY, _OWED). */
#define GPUMIG_PC_STREAM_MINOR		3
/* A destination that gets no block for this long abandons (postcopy_timeout_s). */
#define GPUMIG_PC_TIMEOUT_S		300
#define GPUMIG_PC_TIMEOUT_MAX_S		86400

/* Auto-converge's period and the periods its verdict looks at (converge.c). */
#define GPUMIG_CONVERGE_PERIOD_MS	1000
#define GPUMIG_CONVERGE_WINDOW		3

/**
 * struct gpumig_converge_cfg - auto-converge's settings (migration/)
 * @enabled: auto_converge
 * @initial_pct: throttle_initial_pct, the first step
 * @increment_pct: throttle_increment_pct, each step after it
 * @max_pct: throttle_max_pct, the most a step reaches
 * @threshold_pct: throttle_trigger_threshold: the rule fires when more than
 *	this share of what was drained in a period became dirty again
 */
struct gpumig_converge_cfg {
	bool enabled;
	u32 initial_pct;
	u32 increment_pct;
	u32 max_pct;
	u32 threshold_pct;
};

/**
 * struct gpumig_converge_rule - the rule's state over one pre-copy
 * @throttle: the throttle it asks for, percent
 * @hits: periods the rule fired in since the last step (0 or 1)
 * @n: periods measured, up to GPUMIG_CONVERGE_WINDOW
 * @next: the window's slot for the next period
 * @drained: bytes drained in each of the last periods
 * @redirtied: bytes that became dirty again in each
 * @owed: what the saving file owed at the last period's end
 * @last_drained: what the last period drained
 */
struct gpumig_converge_rule {
	u32 throttle;
	u32 hits;
	u32 n;
	u32 next;
	u64 owed;
	u64 last_drained;
	u64 drained[GPUMIG_CONVERGE_WINDOW];
	u64 redirtied[GPUMIG_CONVERGE_WINDOW];
};

enum gpumig_converge_verdict {
	GPUMIG_CONVERGE_UNKNOWN,
	GPUMIG_CONVERGE_YES,
	GPUMIG_CONVERGE_NO,
};

/**
 * struct gpumig_converge - one device's auto-converge (converge.c)
 * @work: the period's measurement while a pre-copy runs
 * @cfg: settings (written under the state mutex, shown locklessly)
 * @rule: the rule's state (the state mutex)
 * @active: a pre-copy is measured (the state mutex)
 * @period_at: when the period began, ns (the state mutex)
 * @drained_at: precopy_bytes then (the state mutex)
 * @owed_at: what the saving file owed then (the state mutex)
 * @drain_rate: the last period's drain rate, bytes/s (lockless reads)
 * @redirty_rate: its re-dirty rate, bytes/s (lockless reads)
 * @throttle: what the device has now, percent (lockless reads)
 * @verdict: enum gpumig_converge_verdict (lockless reads)
 */
struct gpumig_converge {
	struct delayed_work work;
	struct gpumig_converge_cfg cfg;
	struct gpumig_converge_rule rule;
	bool active;
	u64 period_at;
	u64 drained_at;
	u64 owed_at;
	u64 drain_rate;
	u64 redirty_rate;
	u32 throttle;
	int verdict;
};

/**
 * struct gpumig_view - what reports show, taken at once (metrics.c)
 * @taken_ns: when (0: never)
 * @seq: gpumig_mig.view_seq then
 * @state: the migration state
 * @remaining: bytes the saving file still has (0 without one)
 * @estimate: what STOP_COPY would produce from then
 */
struct gpumig_view {
	u64 taken_ns;
	int seq;
	u32 state;
	u64 remaining;
	u64 estimate;
};

/**
 * struct gpumig_mig - migration state of one device
 * @vdev: the VFIO device (fixed)
 * @ops: backend (fixed)
 * @priv: backend data, the argument of every op (fixed)
 * @compat: this device's compatibility descriptor (fixed)
 * @geo: its geometry, defaults filled in (fixed)
 * @stream_need: the stream minor its geometry needs (fixed)
 * @stream_max: the newest minor the operator lets it write
 *	(migration/stream_max); under @state_mutex, changed only while no
 *	saving file exists
 * @log_ops: the VFIO core was given DMA-logging ops (fixed)
 * @state_mutex: guards @state, @saving, @resuming, @quiesced,
 *	@migrated_away, @vram_left, @quarantined
 * @state: current VFIO migration state
 * @saving: data file of PRE_COPY/STOP_COPY, or NULL
 * @resuming: data file of RESUMING, or NULL
 * @quiesced: the engine quiesced the backend (the P2P states, STOP and below)
 * @p2p_stopped: the engine stopped the backend's P2P DMA (@p2p)
 * @migrated_away: a STOP_COPY stream was read to its end
 * @vram_left: that stream was a post-copy's and its owed blocks moved into
 *	a hold: they are not in the device, which has not run or been reset
 *	since, nor been restored from a stream (a second save would carry
 *	zeroes for them; a failed switchover gives them back)
 * @quarantined: teardown verification failed: do not reuse; written under
 *	@state_mutex, read locklessly for reports
 * @reset_lock: guards @deferred_reset; never held across a sleep
 * @deferred_reset: a reset arrived while @state_mutex was held
 * @poll_lock: guards @poll_file; never held across a sleep
 * @poll_file: the saving file gpumig_mig_vram_dirtied() wakes, or NULL;
 *	set and cleared with @saving
 * @why_lock: guards @why, which the state machine (under @state_mutex)
 *	and a resuming file (under its own lock) both write
 * @why: the quarantine reason or the last refusal
 * @source: the producer the last stream resumed named ("gpumig/0.1"), or
 *	empty; under @why_lock
 * @reconfig_seq: bumped by gpumig_mig_reconfigured(); a saving file
 *	compares it with the value it last saw (lockless)
 * @view_lock: guards @view; taken before the state mutex, never under it
 * @view: the last view reports showed (gpumig_view_get())
 * @view_seq: bumped whenever the migration moves (lockless)
 * @stats: the last migration, as the device saw it (atomics)
 * @conv: device auto-converge
 * @pc_enabled: migration/postcopy (written and read locklessly)
 * @pc_timeout_s: migration/postcopy_timeout_s (likewise)
 * @pc_src: the source's post-copy session of the last stream, or NULL
 *	(the state mutex)
 * @pc_dst: the destination's, or NULL (the state mutex to change, with
 *	@pc_lock too)
 * @pc_lock: guards @pc_dst for gpumig_mig_postcopy_demand(); never held
 *	across a sleep
 * @notify_work: wakes poll() on the migration/ files @notify names
 *	(gpumig_notify(), metrics.c)
 * @notify: GPUMIG_NOTIFY_* bits not yet sent (atomic bitops)
 */
struct gpumig_mig {
	struct vfio_device *vdev;
	const struct gpumig_backend_ops *ops;
	void *priv;
	struct gpumig_compat compat;
	struct gpumig_geometry geo;
	u16 stream_need;
	u16 stream_max;
	bool log_ops;

	struct mutex state_mutex;	/* see above */
	enum vfio_device_mig_state state;
	struct gpumig_mig_file *saving;
	struct gpumig_mig_file *resuming;
	bool quiesced;
	bool p2p_stopped;
	bool migrated_away;
	bool vram_left;
	bool quarantined;

	spinlock_t reset_lock;		/* see above */
	bool deferred_reset;

	spinlock_t poll_lock;		/* see above */
	struct gpumig_mig_file *poll_file;

	spinlock_t why_lock;		/* see above */
	char why[GPUMIG_MSG_LEN];
	char source[GPUMIG_NOTE_MAX + 1];

	atomic_t reconfig_seq;

	struct mutex view_lock;		/* see above */
	struct gpumig_view view;
	atomic_t view_seq;

	struct gpumig_mig_stats stats;
	struct gpumig_converge conv;
	bool pc_enabled;
	u32 pc_timeout_s;
	struct gpumig_pc *pc_src;
	struct gpumig_pc *pc_dst;
	spinlock_t pc_lock;		/* see above */

	struct work_struct notify_work;
	unsigned long notify;
};

/* What changed, for gpumig_notify(): the migration/ files woken. */
enum gpumig_notify_what {
	GPUMIG_NOTIFY_STATE,		/* state (and status) */
	GPUMIG_NOTIFY_ERROR,		/* last_error: a refusal, a failure */
	GPUMIG_NOTIFY_QUARANTINE,	/* migratable: quarantined or lifted */
	GPUMIG_NR_NOTIFY
};

/* state.c */
void gpumig_state_mutex_lock(struct gpumig_mig *m);
void gpumig_state_mutex_unlock(struct gpumig_mig *m);
void gpumig_disable_files(struct gpumig_mig *m);
void gpumig_reset_locked(struct gpumig_mig *m);

/* reason.c */
__printf(2, 3) void gpumig_set_why(struct gpumig_mig *m, const char *fmt, ...);
void gpumig_get_why(struct gpumig_mig *m, char *buf, size_t len);
void gpumig_set_source(struct gpumig_mig *m, const char *producer);
void gpumig_get_source(struct gpumig_mig *m, char *buf, size_t len);

/* metrics.c */
void gpumig_notify_init(struct gpumig_mig *m);
void gpumig_notify(struct gpumig_mig *m, enum gpumig_notify_what what);
void gpumig_notify_exit(struct gpumig_mig *m);
void gpumig_view_changed(struct gpumig_mig *m);
void gpumig_view_get(struct gpumig_mig *m, struct gpumig_view *v);

/* converge.c */
void gpumig_converge_defaults(struct gpumig_converge_cfg *cfg);
void gpumig_converge_begin(struct gpumig_converge_rule *r);
bool gpumig_converge_period(struct gpumig_converge_rule *r, const struct gpumig_converge_cfg *cfg,
			    u64 drained, u64 redirtied, u64 owed);
enum gpumig_converge_verdict gpumig_converge_verdict(const struct gpumig_converge_rule *r);
void gpumig_converge_init(struct gpumig_mig *m);
void gpumig_converge_start(struct gpumig_mig *m);
void gpumig_converge_stop(struct gpumig_mig *m);
void gpumig_converge_exit(struct gpumig_mig *m);
ssize_t gpumig_converge_show(struct gpumig_mig *m, unsigned int which, char *buf);
int gpumig_converge_store(struct gpumig_mig *m, unsigned int which, const char *buf);

/* postcopy.c */
bool gpumig_pc_source_possible(struct gpumig_mig *m);
bool gpumig_pc_source_holding(struct gpumig_mig *m);
void gpumig_pc_source_begin(struct gpumig_mig *m, struct gpumig_mig_file *migf);
void gpumig_pc_source_resumed(struct gpumig_mig *m);
bool gpumig_pc_dest_possible(struct gpumig_mig *m);
int gpumig_pc_dest_prepare(struct gpumig_mig *m, struct gpumig_mig_file *migf);
void gpumig_pc_file_free(struct gpumig_mig_file *migf);
int gpumig_pc_dest_begin(struct gpumig_mig *m, struct gpumig_mig_file *migf);
void gpumig_pc_dest_detach(struct gpumig_mig *m, const char *how);
int gpumig_pc_dest_replaced(struct gpumig_mig *m);
void gpumig_pc_dest_end(struct gpumig_mig *m, const char *how);
bool gpumig_pc_busy(struct gpumig_mig *m);
void gpumig_pc_device_gone(struct gpumig_mig *m);
void gpumig_pc_source_adopt(struct gpumig_mig *m);
void gpumig_pc_new_token(u8 *token);
ssize_t gpumig_pc_show(struct gpumig_mig *m, unsigned int which, char *buf);
int gpumig_pc_store(struct gpumig_mig *m, unsigned int which, const char *buf);
int gpumig_pc_init(void);
void gpumig_pc_exit(void);

/* quarantine.c */
void gpumig_quarantine_note(struct device *dev, const char *what);
int gpumig_quarantine_init(void);
void gpumig_quarantine_exit(void);

/* A device of the default block sends VRAM in the chunk the format names. */
static_assert(GPUMIG_BLOCK_SIZE == GPUMIG_VRAM_CHUNK);

static inline u64 gpumig_block_size(const struct gpumig_mig *m)
{
	return BIT_ULL(m->geo.block_shift);
}

/*
 * The manifest's bitmaps go bit i of byte i / 8 for block i, which is the
 * kernel's own bitmap layout in memory on a little-endian CPU: there a
 * byte-aligned part of one is a copy (a 16 GiB device's manifest is 32 KiB,
 * which the stop used to build a byte at a time).
 */
static inline bool gpumig_wire_bitmap_order(void)
{
#ifdef __LITTLE_ENDIAN
	return true;
#else
	return false;
#endif
}

/* device.c: the stream version a geometry needs, and what the device writes */
u16 gpumig_stream_minor(const struct gpumig_geometry *geo);
u16 gpumig_stream_written(const struct gpumig_mig *m);

/* file.c: what both kinds of data file share */
struct gpumig_mig_file *gpumig_file_alloc(struct gpumig_mig *m, size_t tmp_size);
void gpumig_file_free(struct gpumig_mig_file *migf);
int gpumig_file_open(struct gpumig_mig_file *migf, const char *name,
		     const struct file_operations *fops, int flags);
int gpumig_file_release(struct inode *inode, struct file *filp);
int gpumig_file_usable(struct gpumig_mig_file *migf);
void gpumig_file_fail(struct gpumig_mig_file *migf, int err);
void gpumig_file_wake(struct gpumig_mig_file *migf);
void gpumig_file_disable(struct gpumig_mig_file *migf);
bool gpumig_file_abort(struct gpumig_mig_file *migf, int err);

/* save.c: the saving file */
struct gpumig_mig_file *gpumig_file_new_saving(struct gpumig_mig *m, bool stop_copy);
void gpumig_file_stop_copy(struct gpumig_mig_file *migf);
bool gpumig_file_complete(struct gpumig_mig_file *migf);
u64 gpumig_file_pending(struct gpumig_mig_file *migf, bool stopped);
u64 gpumig_file_pending_locked(struct gpumig_mig_file *migf, bool stopped);
u64 gpumig_stopcopy_size(struct gpumig_mig *m);

/* resume.c: the resuming file */
struct gpumig_mig_file *gpumig_file_new_resuming(struct gpumig_mig *m);
int gpumig_file_finish_resume(struct gpumig_mig_file *migf);

#endif /* _GPUMIG_ENGINE_H */
