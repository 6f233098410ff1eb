// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig: post-copy of device memory (deferred VRAM restoration).
 *
 * A saving file that announced post-copy (GPUMIG_SEC_POSTCOPY, save.c)
 * ends its stream with a manifest of the blocks it did not carry
 * (GPUMIG_SEC_OWED).  When such a stream was read to its end and the
 * source leaves STOP_COPY, their contents leave the device into a hold
 * (the backend's @vram_hold): a session here, the source's, keyed by the
 * stream's token.  The destination that restored the stream runs with
 * those blocks absent (the backend's @vram_absent): a session too, its
 * destination.  A mover, root's, attaches to both through
 * /dev/gpumig-postcopy (<uapi/linux/gpumig_postcopy.h>) and carries each
 * block: a source reads it with its CRC, the destination checks and
 * installs it and its write returns once the device can use it, the
 * mover acknowledges it to the source.  The last acknowledgment scrubs
 * the hold; an abandon on the destination marks what is still missing
 * lost, on the source scrubs what it held.
 *
 * A session outlives the open files on it and the device's binding: the
 * source's hold lives as long as blocks are owed, whatever the tenant or
 * the VMM does with the device, unless the device itself goes (removing
 * it abandons the session, loudly) or runs again (a failed switchover: the
 * contents go back).  A destination session ends with its device's
 * tenant: a VM that closed its device no longer waits for its memory.
 *
 * Locks: the state mutex of a device, then a session's @lock; a session's
 * @demand_lock (a spinlock: the backend reports demand from under its own
 * locks) nests inside everything.  gpumig_pc_list_lock guards the list
 * and is taken with no session lock held, or before one.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/crc32.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include <uapi/linux/gpumig_postcopy.h>

#include "engine.h"

#include <trace/events/gpumig.h>

static_assert(GPUMIG_PC_TOKEN_LEN == GPUMIG_TOKEN_LEN);
static_assert(sizeof(struct gpumig_pc_block) == 40);

#define GPUMIG_PC_DEMANDS	64

/**
 * struct gpumig_pc - one post-copy session, one side of it
 * @node: in gpumig_pc_list while the session is active
 * @ref: the list's, each open file's and the device's
 * @token: the streams' session token
 * @source: the source's side (else the destination's)
 * @dev_name: the device's name, for messages after it is gone
 * @lock: guards every field below but the demand ring
 * @state: GPUMIG_PC_STATE_*
 * @m: destination: its device, until the tenant closes it or it goes
 * @hold_read: source: the backend's, which reads @hold (kept here: the
 *	hold may outlive the device's binding, @owner does not go before it)
 * @hold_free: source: the backend's, which scrubs and frees @hold
 * @owner: source: the module of those two, held while @hold is
 * @hold: source: the held contents, or NULL once scrubbed
 * @nr_blocks: blocks of the device's VRAM
 * @block_shift: log2 of the block
 * @owed: source: blocks not acknowledged; destination: not arrived
 * @ever: destination: blocks owed at the stop
 * @wanted: source: blocks the destination asked for first
 * @nr_owed: bits set in @owed
 * @total: blocks owed at the stop
 * @lost: destination: blocks marked lost
 * @first_lost: destination: the first of them, or -1
 * @wq: readers and pollers wait here
 * @demand_lock: guards the demand ring; a spinlock, taken under the
 *	backend's locks
 * @demand: destination: blocks the device started to wait on
 * @dhead: next to read
 * @dtail: next to write
 * @waits: destination: every time the device started to wait
 * @timeout: destination: abandons the session when no block arrived for
 *	@timeout_s (it holds a reference while queued)
 * @timeout_s: 0 for never
 * @last_arrival: destination: jiffies of the session's start or its last
 *	block (@lock)
 */
struct gpumig_pc {
	struct list_head node;
	struct kref ref;
	u8 token[GPUMIG_TOKEN_LEN];
	bool source;
	char dev_name[64];

	struct mutex lock;	/* see above */
	u32 state;
	struct gpumig_mig *m;
	int (*hold_read)(void *hold, u64 off, void *buf, u32 len);
	void (*hold_free)(void *hold);
	struct module *owner;
	void *hold;
	unsigned long nr_blocks;
	u32 block_shift;
	unsigned long *owed;
	unsigned long *ever;
	unsigned long *wanted;
	unsigned long nr_owed;
	unsigned long total;
	unsigned long lost;
	long first_lost;
	wait_queue_head_t wq;

	spinlock_t demand_lock;	/* see above */
	u64 demand[GPUMIG_PC_DEMANDS];
	u32 dhead;
	u32 dtail;
	u64 waits;

	struct delayed_work timeout;
	u32 timeout_s;
	unsigned long last_arrival;
};

static LIST_HEAD(gpumig_pc_list);
static DEFINE_MUTEX(gpumig_pc_list_lock);	/* guards gpumig_pc_list */

static void gpumig_pc_free(struct kref *ref)
{
	struct gpumig_pc *s = container_of(ref, struct gpumig_pc, ref);

	WARN_ON(s->hold);
	bitmap_free(s->owed);
	bitmap_free(s->ever);
	bitmap_free(s->wanted);
	mutex_destroy(&s->lock);
	kfree(s);
}

static void gpumig_pc_put(struct gpumig_pc *s)
{
	kref_put(&s->ref, gpumig_pc_free);
}

static void gpumig_pc_timeout(struct work_struct *work);

/*
 * A session of @m's geometry on side @source, its maps allocated (@wanted
 * zeroed), owing nothing yet: gpumig_pc_fill() gives it its blocks.
 */
static struct gpumig_pc *gpumig_pc_alloc(struct gpumig_mig *m, const u8 *token, bool source)
{
	unsigned long nr = m->compat.vram_size >> m->geo.block_shift;
	struct gpumig_pc *s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);

	if (!s)
		return NULL;
	/* @owed and @ever become copies of a manifest whole: not zeroed first */
	s->owed = bitmap_alloc(nr, GFP_KERNEL_ACCOUNT);
	s->ever = bitmap_alloc(nr, GFP_KERNEL_ACCOUNT);
	s->wanted = bitmap_zalloc(nr, GFP_KERNEL_ACCOUNT);
	if (!s->owed || !s->ever || !s->wanted) {
		bitmap_free(s->owed);
		bitmap_free(s->ever);
		bitmap_free(s->wanted);
		kfree(s);
		return NULL;
	}
	kref_init(&s->ref);
	INIT_LIST_HEAD(&s->node);
	memcpy(s->token, token, GPUMIG_TOKEN_LEN);
	s->source = source;
	strscpy(s->dev_name, dev_name(m->vdev->dev), sizeof(s->dev_name));
	mutex_init(&s->lock);
	init_waitqueue_head(&s->wq);
	spin_lock_init(&s->demand_lock);
	s->state = GPUMIG_PC_STATE_ACTIVE;
	s->nr_blocks = nr;
	s->block_shift = m->geo.block_shift;
	s->first_lost = -1;
	INIT_DELAYED_WORK(&s->timeout, gpumig_pc_timeout);
	return s;
}

/* @s owes the blocks set in @owed. */
static void gpumig_pc_fill(struct gpumig_pc *s, const unsigned long *owed)
{
	bitmap_copy(s->owed, owed, s->nr_blocks);
	bitmap_copy(s->ever, owed, s->nr_blocks);
	s->nr_owed = bitmap_weight(owed, s->nr_blocks);
	s->total = s->nr_owed;
}

static struct gpumig_pc *gpumig_pc_new(struct gpumig_mig *m, const u8 *token, bool source,
				       const unsigned long *owed)
{
	struct gpumig_pc *s = gpumig_pc_alloc(m, token, source);

	if (s)
		gpumig_pc_fill(s, owed);
	return s;
}

/* The session of @token on side @source that is still active, with a reference. */
static struct gpumig_pc *gpumig_pc_find(const u8 *token, bool source)
{
	struct gpumig_pc *s;

	lockdep_assert_held(&gpumig_pc_list_lock);
	list_for_each_entry(s, &gpumig_pc_list, node)
		if (s->source == source && !memcmp(s->token, token, GPUMIG_TOKEN_LEN)) {
			kref_get(&s->ref);
			return s;
		}
	return NULL;
}

/* Put @s on the list, unless its side of @token is there already. */
static int gpumig_pc_publish(struct gpumig_pc *s)
{
	struct gpumig_pc *old;
	int ret = 0;

	mutex_lock(&gpumig_pc_list_lock);
	old = gpumig_pc_find(s->token, s->source);
	if (old) {
		gpumig_pc_put(old);
		ret = -EEXIST;
	} else {
		kref_get(&s->ref);
		list_add_tail(&s->node, &gpumig_pc_list);
	}
	mutex_unlock(&gpumig_pc_list_lock);
	return ret;
}

/* Is @token's side already on the list? */
static bool gpumig_pc_listed(const u8 *token, bool source)
{
	struct gpumig_pc *old;
	bool listed;

	mutex_lock(&gpumig_pc_list_lock);
	old = gpumig_pc_find(token, source);
	mutex_unlock(&gpumig_pc_list_lock);
	listed = old;
	if (old)
		gpumig_pc_put(old);
	return listed;
}

static void gpumig_pc_unpublish(struct gpumig_pc *s)
{
	bool listed;

	mutex_lock(&gpumig_pc_list_lock);
	listed = !list_empty(&s->node);
	list_del_init(&s->node);
	mutex_unlock(&gpumig_pc_list_lock);
	if (listed)
		gpumig_pc_put(s);
}

/* Source: scrub and let go of what is held.  The session's lock held. */
static void gpumig_pc_drop_hold(struct gpumig_pc *s)
{
	lockdep_assert_held(&s->lock);
	if (!s->hold)
		return;
	s->hold_free(s->hold);
	module_put(s->owner);
	s->hold = NULL;
}

/*
 * The session ends in @state: it leaves the list (no mover attaches any
 * more), readers wake.  Its lock held; the caller unpublishes after.
 */
static const char *const gpumig_pc_state_names[] = {
	[GPUMIG_PC_STATE_ACTIVE] = "active",
	[GPUMIG_PC_STATE_DONE] = "done",
	[GPUMIG_PC_STATE_ABANDONED] = "abandoned",
};

static void gpumig_pc_trace(struct gpumig_pc *s)
{
	trace_gpumig_postcopy(s->dev_name, s->source, gpumig_pc_state_names[s->state],
			      s->nr_owed, s->lost, s->first_lost);
}

static void gpumig_pc_end_locked(struct gpumig_pc *s, u32 state)
{
	lockdep_assert_held(&s->lock);
	if (s->state != GPUMIG_PC_STATE_ACTIVE)
		return;
	s->state = state;
	gpumig_pc_trace(s);
	if (s->source)
		gpumig_pc_drop_hold(s);
	wake_up_interruptible_all(&s->wq);
}

/* ---- the source ------------------------------------------------------- */

/**
 * gpumig_pc_source_possible() - may this device's saving file announce post-copy?
 * @m: device
 *
 * Return: true with the backend's hold and dirty tracking, and a cap that
 * lets the device write stream 1.3.
 */
bool gpumig_pc_source_possible(struct gpumig_mig *m)
{
	const struct gpumig_backend_ops *o = m->ops;

	return o->vram_hold && o->hold_read && o->hold_return && o->hold_free &&
	       o->vram_track && READ_ONCE(m->stream_max) >= GPUMIG_PC_STREAM_MINOR;
}

/**
 * gpumig_pc_source_holding() - does the device still hold VRAM for an
 *	earlier post-copy's destination?
 * @m: device, state mutex held
 *
 * A new post-copy must not start then: a backend keeps one hold at a time
 * (a VF's PF does), and the earlier destination still waits for its
 * blocks.  Such a migration copies VRAM before the stop instead, and says
 * why.
 *
 * Return: true while that session is active.
 */
bool gpumig_pc_source_holding(struct gpumig_mig *m)
{
	struct gpumig_pc *s = m->pc_src;
	bool active;

	lockdep_assert_held(&m->state_mutex);
	if (!s)
		return false;
	mutex_lock(&s->lock);
	active = s->state == GPUMIG_PC_STATE_ACTIVE;
	mutex_unlock(&s->lock);
	return active;
}

/**
 * gpumig_pc_source_begin() - a post-copy stream was read to its end
 * @m: device, state mutex held, stopped
 * @migf: its saving file, complete, with the manifest it sent
 *
 * The owed blocks leave the device into a hold and the source's session
 * starts.  On failure the post-copy cannot go on: the destination's mover
 * finds no source and the operator abandons it; the log and last_error
 * say why.
 */
void gpumig_pc_source_begin(struct gpumig_mig *m, struct gpumig_mig_file *migf)
{
	struct gpumig_pc *s;
	void *hold;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	if (m->pc_src) {
		gpumig_pc_put(m->pc_src);
		m->pc_src = NULL;
	}
	s = gpumig_pc_new(m, migf->pc_token, true, migf->pc_owed);
	if (!s) {
		ret = -ENOMEM;
		goto fail;
	}
	s->hold_read = m->ops->hold_read;
	s->hold_free = m->ops->hold_free;
	s->owner = m->ops->owner;
	if (!try_module_get(s->owner)) {
		ret = -ENODEV;
		goto fail_put;
	}
	hold = m->ops->vram_hold(m->priv, migf->pc_owed, s->nr_blocks);
	if (IS_ERR(hold)) {
		module_put(m->ops->owner);
		ret = PTR_ERR(hold);
		goto fail_put;
	}
	s->hold = hold;
	if (!s->nr_owed) {
		mutex_lock(&s->lock);
		gpumig_pc_end_locked(s, GPUMIG_PC_STATE_DONE);
		mutex_unlock(&s->lock);
	} else {
		ret = gpumig_pc_publish(s);
		if (ret) {
			m->ops->hold_return(m->priv, hold);
			module_put(m->ops->owner);
			s->hold = NULL;
			goto fail_put;
		}
	}
	m->pc_src = s;
	m->vram_left = true;
	if (s->nr_owed)
		gpumig_pc_trace(s);
	dev_info(m->vdev->dev, "post-copy: holding %lu VRAM blocks for the destination\n",
		 s->total);
	gpumig_view_changed(m);
	return;
fail_put:
	gpumig_pc_put(s);
fail:
	gpumig_set_why(m, "post-copy: the owed VRAM could not be held (%d)", ret);
	dev_err(m->vdev->dev, "post-copy: the owed VRAM could not be held (%d)\n", ret);
}

/**
 * gpumig_pc_source_resumed() - the source runs again: the owed set is dropped
 * @m: device, state mutex held, about to run
 *
 * A failed switchover: what was held goes back into the device, whatever
 * a mover did meanwhile (the destination that took blocks will not run).
 */
void gpumig_pc_source_resumed(struct gpumig_mig *m)
{
	struct gpumig_pc *s = m->pc_src;

	lockdep_assert_held(&m->state_mutex);
	/* Only what this tenant's own migration moved out goes back. */
	if (!s || !m->vram_left)
		return;
	m->vram_left = false;
	mutex_lock(&s->lock);
	if (s->hold) {
		m->ops->hold_return(m->priv, s->hold);
		module_put(s->owner);
		s->hold = NULL;
		dev_warn(m->vdev->dev,
			 "post-copy: the source runs again; %lu owed blocks went back into it\n",
			 s->nr_owed);
	}
	gpumig_pc_end_locked(s, GPUMIG_PC_STATE_ABANDONED);
	mutex_unlock(&s->lock);
	gpumig_pc_unpublish(s);
	gpumig_pc_put(s);
	m->pc_src = NULL;
	gpumig_view_changed(m);
}

/*
 * A record's CRC: over its block number (little-endian, as in the record)
 * and then its data, so that a block number changed on the way is refused
 * like changed data, instead of putting the data in another block.
 */
static u32 gpumig_pc_crc(__le64 block, const u8 *data, u32 len)
{
	return crc32_le(crc32_le(~0U, (const u8 *)&block, sizeof(block)), data, len);
}

/* One record for the mover: @blk's header and data into @buf. */
static ssize_t gpumig_pc_source_fill(struct gpumig_pc *s, unsigned long blk, u8 *buf)
{
	struct gpumig_pc_block *b = (void *)buf;
	u32 len = 1U << s->block_shift;
	int ret;

	lockdep_assert_held(&s->lock);
	ret = s->hold_read(s->hold, (u64)blk << s->block_shift, buf + sizeof(*b), len);
	if (ret)
		return ret;
	b->magic = cpu_to_le32(GPUMIG_PC_MAGIC);
	b->flags = 0;
	memcpy(b->token, s->token, GPUMIG_TOKEN_LEN);
	b->block = cpu_to_le64(blk);
	b->len = cpu_to_le32(len);
	b->crc = cpu_to_le32(gpumig_pc_crc(b->block, buf + sizeof(*b), len));
	return sizeof(*b) + len;
}

/* ---- the destination -------------------------------------------------- */

/**
 * gpumig_pc_dest_possible() - may this device restore a post-copy stream?
 * @m: device
 *
 * Return: true when its backend runs with blocks absent.
 */
bool gpumig_pc_dest_possible(struct gpumig_mig *m)
{
	return m->ops->vram_absent && m->ops->vram_deliver && m->ops->vram_lose;
}

/**
 * gpumig_pc_dest_prepare() - a stream being restored announced post-copy
 * @m: device
 * @migf: its resuming file, with the session token
 *
 * The destination's session is allocated now, in pre-copy, so that the
 * stop only fills it: its maps are sized by VRAM (32 KiB each on a 16 GiB
 * device).  gpumig_pc_file_free() drops it if the stream never checks out.
 *
 * Return: 0 or -ENOMEM.
 */
int gpumig_pc_dest_prepare(struct gpumig_mig *m, struct gpumig_mig_file *migf)
{
	if (WARN_ON_ONCE(migf->pc_sess))
		return -EINVAL;
	migf->pc_sess = gpumig_pc_alloc(m, migf->pc_token, false);
	return migf->pc_sess ? 0 : -ENOMEM;
}

/**
 * gpumig_pc_file_free() - a migration file goes: its unused session too
 * @migf: the file
 */
void gpumig_pc_file_free(struct gpumig_mig_file *migf)
{
	if (migf->pc_sess)
		gpumig_pc_put(migf->pc_sess);
	migf->pc_sess = NULL;
}

/**
 * gpumig_pc_dest_begin() - a post-copy stream checked out: the device runs without the rest
 * @m: device, state mutex held, about to leave RESUMING
 * @migf: its resuming file, with the manifest
 *
 * Return: 0, or an errno (the device stays in RESUMING).
 */
int gpumig_pc_dest_begin(struct gpumig_mig *m, struct gpumig_mig_file *migf)
{
	struct gpumig_pc *s;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	/* Allocated when the stream announced post-copy, outside the stop. */
	s = migf->pc_sess ?: gpumig_pc_alloc(m, migf->pc_token, false);
	migf->pc_sess = NULL;
	if (!s)
		return -ENOMEM;
	gpumig_pc_fill(s, migf->pc_owed);
	/*
	 * A token in use on this host (a replayed or forged stream) is
	 * refused before any block goes absent: with no session to deliver
	 * or lose them, they would wait for ever.
	 */
	if (s->nr_owed && gpumig_pc_listed(s->token, false)) {
		gpumig_set_why(m, "post-copy: session token already in use on this host");
		gpumig_pc_put(s);
		return -EEXIST;
	}
	ret = m->ops->vram_absent(m->priv, migf->pc_owed, s->nr_blocks);
	if (ret) {
		gpumig_pc_put(s);
		return ret;
	}
	/*
	 * The device before the session can be found: a mover that attaches
	 * at once and abandons must mark the blocks lost on it, not on none.
	 */
	s->m = m;
	if (s->nr_owed) {
		ret = gpumig_pc_publish(s);
		if (ret) {
			unsigned long blk;

			/*
			 * Another device took the token since the check
			 * above: no session will ever bring these blocks,
			 * so they are lost now, loudly, not waited on.
			 */
			for_each_set_bit(blk, s->owed, s->nr_blocks)
				m->ops->vram_lose(m->priv, blk);
			gpumig_set_why(m, "post-copy: session token already in use on this host");
			dev_err(m->vdev->dev, "post-copy: token taken meanwhile: %lu owed blocks lost\n",
				s->nr_owed);
			gpumig_pc_put(s);
			return ret;
		}
	} else {
		s->state = GPUMIG_PC_STATE_DONE;
	}
	gpumig_pc_dest_detach(m, "a new stream was restored");
	spin_lock_irq(&m->pc_lock);
	m->pc_dst = s;
	spin_unlock_irq(&m->pc_lock);
	s->timeout_s = READ_ONCE(m->pc_timeout_s);
	s->last_arrival = jiffies;
	if (s->nr_owed && s->timeout_s) {
		kref_get(&s->ref);
		schedule_delayed_work(&s->timeout, (unsigned long)s->timeout_s * HZ);
	}
	if (s->nr_owed)
		gpumig_pc_trace(s);
	dev_info(m->vdev->dev, "post-copy: running with %lu VRAM blocks still owed\n",
		 s->total);
	gpumig_view_changed(m);
	return 0;
}

/* Mark every block still owed lost.  The session's lock held, with its device. */
static unsigned long gpumig_pc_lose_all(struct gpumig_pc *s)
{
	unsigned long blk, first = ULONG_MAX, n = 0;

	lockdep_assert_held(&s->lock);
	for_each_set_bit(blk, s->owed, s->nr_blocks) {
		/* A device that fails the call lost it all the same. */
		if (s->m && s->m->ops->vram_lose(s->m->priv, blk) != -EALREADY)
			n++;
		if (first == ULONG_MAX)
			first = blk;
	}
	bitmap_zero(s->owed, s->nr_blocks);
	s->lost += n;
	s->nr_owed = 0;
	if (n && s->first_lost < 0)
		s->first_lost = first;
	if (n && s->m) {
		gpumig_set_why(s->m,
			       "post-copy abandoned: %lu VRAM blocks lost (the first block %lu)",
			       n, first);
		dev_err(s->m->vdev->dev,
			"post-copy abandoned: %lu VRAM blocks lost (the first block %lu); the guest sees its device's VRAM-lost error on them\n",
			n, first);
	}
	return n;
}

/*
 * A destination's source is taken as lost when no block arrived for
 * @timeout_s: what is missing is lost, loudly, rather than the guest
 * waiting on it for ever.
 */
static void gpumig_pc_timeout(struct work_struct *work)
{
	struct gpumig_pc *s = container_of(to_delayed_work(work), struct gpumig_pc, timeout);
	unsigned long due;
	bool again = false;

	mutex_lock(&s->lock);
	due = s->last_arrival + (unsigned long)s->timeout_s * HZ;
	if (s->state == GPUMIG_PC_STATE_ACTIVE && s->m) {
		if (time_before(jiffies, due)) {
			again = true;
		} else {
			dev_err(s->m->vdev->dev,
				"post-copy: no VRAM block arrived for %u s: the source is taken as lost\n",
				s->timeout_s);
			gpumig_pc_lose_all(s);
			gpumig_pc_end_locked(s, GPUMIG_PC_STATE_ABANDONED);
		}
	}
	if (again)
		schedule_delayed_work(&s->timeout, due - jiffies);
	mutex_unlock(&s->lock);
	if (!again) {
		gpumig_pc_unpublish(s);
		gpumig_pc_put(s);
	}
}

/* The timeout's work is over, or was never queued: its reference goes. */
static void gpumig_pc_timeout_stop(struct gpumig_pc *s)
{
	if (cancel_delayed_work_sync(&s->timeout))
		gpumig_pc_put(s);
}

/* End the destination's session (what is missing is lost); the device keeps it to show. */
static void gpumig_pc_dest_stop(struct gpumig_mig *m, struct gpumig_pc *s, const char *how)
{
	mutex_lock(&s->lock);
	if (s->state == GPUMIG_PC_STATE_ACTIVE) {
		dev_warn(m->vdev->dev, "post-copy ended with %lu VRAM blocks owed: %s\n",
			 s->nr_owed, how);
		gpumig_pc_lose_all(s);
		gpumig_pc_end_locked(s, GPUMIG_PC_STATE_ABANDONED);
	}
	s->m = NULL;
	mutex_unlock(&s->lock);
	gpumig_pc_timeout_stop(s);
	gpumig_pc_unpublish(s);
}

/**
 * gpumig_pc_dest_end() - the destination lost its memory: its post-copy ends
 * @m: device, state mutex held
 * @how: why, for the log
 *
 * What is still owed is lost (the device's accesses fail, loudly); the
 * device goes on showing the ended session until the next restore or its
 * tenant's close.
 */
void gpumig_pc_dest_end(struct gpumig_mig *m, const char *how)
{
	lockdep_assert_held(&m->state_mutex);
	if (m->pc_dst)
		gpumig_pc_dest_stop(m, m->pc_dst, how);
}

/**
 * gpumig_pc_dest_detach() - the destination's device no longer waits for its memory
 * @m: device, state mutex held
 * @how: why, for the log
 */
void gpumig_pc_dest_detach(struct gpumig_mig *m, const char *how)
{
	struct gpumig_pc *s = m->pc_dst;

	lockdep_assert_held(&m->state_mutex);
	if (!s)
		return;
	spin_lock_irq(&m->pc_lock);
	m->pc_dst = NULL;
	spin_unlock_irq(&m->pc_lock);
	gpumig_pc_dest_stop(m, s, how);
	gpumig_pc_put(s);
}

/**
 * gpumig_pc_dest_replaced() - a whole ordinary stream replaces what a post-copy left
 * @m: device, state mutex held, about to leave RESUMING
 *
 * A device that was a post-copy destination (its session ended: delivered,
 * or abandoned with blocks lost) took a stream without post-copy: every
 * block is the new stream's now, so none may stay lost (or absent) from
 * before.  Nothing to do, and no call to the backend, on a device that
 * never was one.
 *
 * Return: 0, or an errno when the backend could not forget them (the
 * restore is refused: the device would fail reads of restored blocks).
 */
int gpumig_pc_dest_replaced(struct gpumig_mig *m)
{
	unsigned long nr = m->compat.vram_size >> m->geo.block_shift, *none;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	if (!m->pc_dst)
		return 0;
	none = bitmap_zalloc(nr, GFP_KERNEL_ACCOUNT);
	if (!none)
		return -ENOMEM;
	ret = m->ops->vram_absent(m->priv, none, nr);
	bitmap_free(none);
	if (ret)
		return ret;
	gpumig_pc_dest_detach(m, "a new stream was restored");
	gpumig_view_changed(m);
	return 0;
}

/**
 * gpumig_pc_busy() - does the device still wait for owed VRAM?
 * @m: device, state mutex held
 *
 * Return: true while a destination session is active: the device may
 * not be saved (a second migration) until its memory has arrived.
 */
bool gpumig_pc_busy(struct gpumig_mig *m)
{
	struct gpumig_pc *s = m->pc_dst;
	bool busy;

	lockdep_assert_held(&m->state_mutex);
	if (!s)
		return false;
	mutex_lock(&s->lock);
	busy = s->state == GPUMIG_PC_STATE_ACTIVE;
	mutex_unlock(&s->lock);
	return busy;
}

/**
 * gpumig_mig_postcopy_demand() - the device waits on an owed block
 * @m: device
 * @blk: the block
 *
 * For the backend, from any context but NMI: the mover hears of it and
 * carries that block first.
 */
void gpumig_mig_postcopy_demand(struct gpumig_mig *m, unsigned long blk)
{
	struct gpumig_pc *s;
	unsigned long flags;
	bool woke = false;

	if (!m)
		return;
	spin_lock_irqsave(&m->pc_lock, flags);
	s = m->pc_dst;
	if (s) {
		spin_lock(&s->demand_lock);
		s->waits++;
		if (s->dtail - s->dhead < GPUMIG_PC_DEMANDS) {
			s->demand[s->dtail++ % GPUMIG_PC_DEMANDS] = blk;
			woke = true;
		}
		spin_unlock(&s->demand_lock);
		if (woke)
			wake_up_interruptible_all(&s->wq);
	}
	spin_unlock_irqrestore(&m->pc_lock, flags);
}
EXPORT_SYMBOL_GPL(gpumig_mig_postcopy_demand);

/**
 * gpumig_mig_device_runs() - does the device run now?
 * @m: device
 *
 * For a front end's CPU fault on absent VRAM: it waits for the block while
 * the device runs, and fails before (a VMM setting up its mappings while
 * the device is still being restored must not wait on the mover).
 * Lockless: the answer may be stale by the time it is used.
 *
 * Return: true in RUNNING, RUNNING_P2P, PRE_COPY and PRE_COPY_P2P.
 */
bool gpumig_mig_device_runs(struct gpumig_mig *m)
{
	switch (READ_ONCE(m->state)) {
	case VFIO_DEVICE_STATE_RUNNING:
	case VFIO_DEVICE_STATE_RUNNING_P2P:
	case VFIO_DEVICE_STATE_PRE_COPY:
	case VFIO_DEVICE_STATE_PRE_COPY_P2P:
		return true;
	default:
		return false;
	}
}
EXPORT_SYMBOL_GPL(gpumig_mig_device_runs);

/* Check and install one block from the mover.  The session's lock held. */
static int gpumig_pc_deliver(struct gpumig_pc *s, const struct gpumig_pc_block *b,
			     const u8 *data, size_t len)
{
	u64 blk = le64_to_cpu(b->block);
	u32 bsize = 1U << s->block_shift;
	int ret;

	lockdep_assert_held(&s->lock);
	if (le32_to_cpu(b->magic) != GPUMIG_PC_MAGIC || b->flags ||
	    le32_to_cpu(b->len) != bsize || len != bsize)
		return -EINVAL;
	if (memcmp(b->token, s->token, GPUMIG_TOKEN_LEN))
		return -EACCES;
	/*
	 * Everything arrived: a late copy is a resend.  Ended any other way
	 * (abandoned, timed out, the device closed or gone), the block can
	 * go nowhere, and a mover must hear that rather than "delivered
	 * before" for the blocks the end took off the owed list, or a
	 * complaint about the block that would make it send it again.
	 */
	if (s->state == GPUMIG_PC_STATE_DONE)
		return -EALREADY;
	if (s->state != GPUMIG_PC_STATE_ACTIVE || !s->m)
		return -ENODEV;
	if (blk >= s->nr_blocks)
		return -ERANGE;
	if (!test_bit(blk, s->ever))
		return -ENOENT;
	if (gpumig_pc_crc(b->block, data, len) != le32_to_cpu(b->crc))
		return -EBADMSG;
	if (!test_bit(blk, s->owed))
		return -EALREADY;
	ret = s->m->ops->vram_deliver(s->m->priv, blk, data, len);
	if (ret)
		return ret;
	__clear_bit(blk, s->owed);
	s->last_arrival = jiffies;
	if (!--s->nr_owed) {
		dev_info(s->m->vdev->dev, "post-copy: every owed VRAM block arrived (%lu)\n",
			 s->total);
		gpumig_pc_end_locked(s, GPUMIG_PC_STATE_DONE);
	}
	return 0;
}

/* ---- the device node -------------------------------------------------- */

/**
 * struct gpumig_pc_open_file - one open file of /dev/gpumig-postcopy
 * @lock: one read, write or attach of the file at a time (threads of a
 *	mover may share it): @buf holds one record between the user's copy
 *	and the check of it, @cursor one reader's place.  Taken before the
 *	session's lock.
 * @s: the session it attached to, or NULL; set once, under @lock, after
 *	@buf (readers without @lock load it with acquire)
 * @cursor: source: the next block to look at
 * @buf: source: one record; destination: one block being written
 */
struct gpumig_pc_open_file {
	struct mutex lock;	/* see above: @buf, @cursor, attaching */
	struct gpumig_pc *s;
	unsigned long cursor;
	u8 *buf;
};

static struct gpumig_pc *gpumig_pc_file_session(struct gpumig_pc_open_file *f)
{
	/* pairs with the release in gpumig_pc_attach(): @buf is set before @s */
	return smp_load_acquire(&f->s);
}

static int gpumig_pc_open(struct inode *inode, struct file *filp)
{
	struct gpumig_pc_open_file *f;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	filp->private_data = f;
	return stream_open(inode, filp);
}

static int gpumig_pc_release(struct inode *inode, struct file *filp)
{
	struct gpumig_pc_open_file *f = filp->private_data;

	if (f->s)
		gpumig_pc_put(f->s);
	kvfree(f->buf);
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static int gpumig_pc_attach(struct gpumig_pc_open_file *f, void __user *arg)
{
	struct gpumig_pc_attach a;
	struct gpumig_pc *s;
	size_t len;
	u8 *buf;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.argsz < sizeof(a) || a.flags ||
	    (a.role != GPUMIG_PC_ROLE_SOURCE && a.role != GPUMIG_PC_ROLE_DESTINATION))
		return -EINVAL;
	mutex_lock(&f->lock);
	if (f->s) {
		mutex_unlock(&f->lock);
		return -EBUSY;
	}
	mutex_lock(&gpumig_pc_list_lock);
	s = gpumig_pc_find(a.token, a.role == GPUMIG_PC_ROLE_SOURCE);
	mutex_unlock(&gpumig_pc_list_lock);
	if (!s) {
		mutex_unlock(&f->lock);
		return -ENOENT;
	}
	len = sizeof(struct gpumig_pc_block) + (1UL << s->block_shift);
	buf = kvmalloc(len, GFP_KERNEL_ACCOUNT);
	if (!buf) {
		mutex_unlock(&f->lock);
		gpumig_pc_put(s);
		return -ENOMEM;
	}
	mutex_lock(&s->lock);
	a.nr_blocks = s->nr_blocks;
	a.block_size = 1U << s->block_shift;
	a.owed = s->nr_owed;
	a.total = s->total;
	mutex_unlock(&s->lock);
	/* attached only when the caller heard of it: a retry may attach */
	if (copy_to_user(arg, &a, sizeof(a))) {
		mutex_unlock(&f->lock);
		kvfree(buf);
		gpumig_pc_put(s);
		return -EFAULT;
	}
	f->buf = buf;
	/* pairs with gpumig_pc_file_session(): @buf before @s */
	smp_store_release(&f->s, s);
	mutex_unlock(&f->lock);
	return 0;
}

static int gpumig_pc_status(struct gpumig_pc *s, void __user *arg)
{
	struct gpumig_pc_status st = { .argsz = sizeof(st) };

	mutex_lock(&s->lock);
	st.state = s->state;
	st.owed = s->nr_owed;
	st.total = s->total;
	st.lost = s->lost;
	mutex_unlock(&s->lock);
	spin_lock_irq(&s->demand_lock);
	st.waits = s->waits;
	spin_unlock_irq(&s->demand_lock);
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

/* Source: the destination took @blk. */
static int gpumig_pc_ack(struct gpumig_pc *s, u64 blk)
{
	int ret = 0;

	mutex_lock(&s->lock);
	if (s->state != GPUMIG_PC_STATE_ACTIVE) {
		/* as a read says it: every block went, or the session ended */
		ret = s->state == GPUMIG_PC_STATE_DONE ? -EALREADY : -ECONNABORTED;
	} else if (blk >= s->nr_blocks) {
		ret = -ERANGE;
	} else if (!test_bit(blk, s->ever)) {
		ret = -ENOENT;
	} else if (!test_bit(blk, s->owed)) {
		ret = -EALREADY;
	} else {
		__clear_bit(blk, s->owed);
		__clear_bit(blk, s->wanted);
		if (!--s->nr_owed) {
			pr_info("%s: post-copy: every held VRAM block was delivered (%lu); scrubbed\n",
				s->dev_name, s->total);
			gpumig_pc_end_locked(s, GPUMIG_PC_STATE_DONE);
		}
	}
	mutex_unlock(&s->lock);
	if (READ_ONCE(s->state) != GPUMIG_PC_STATE_ACTIVE)
		gpumig_pc_unpublish(s);
	return ret;
}

static int gpumig_pc_want(struct gpumig_pc *s, u64 blk)
{
	int ret = 0;

	mutex_lock(&s->lock);
	if (s->state != GPUMIG_PC_STATE_ACTIVE)
		ret = s->state == GPUMIG_PC_STATE_DONE ? -EALREADY : -ECONNABORTED;
	else if (blk >= s->nr_blocks)
		ret = -ERANGE;
	else if (!test_bit(blk, s->owed))
		ret = -EALREADY;
	else
		__set_bit(blk, s->wanted);
	mutex_unlock(&s->lock);
	wake_up_interruptible_all(&s->wq);
	return ret;
}

static void gpumig_pc_abandon(struct gpumig_pc *s)
{
	mutex_lock(&s->lock);
	if (s->state == GPUMIG_PC_STATE_ACTIVE) {
		if (s->source)
			pr_warn("%s: post-copy abandoned with %lu VRAM blocks not delivered; scrubbed\n",
				s->dev_name, s->nr_owed);
		else
			gpumig_pc_lose_all(s);
		gpumig_pc_end_locked(s, GPUMIG_PC_STATE_ABANDONED);
	}
	mutex_unlock(&s->lock);
	gpumig_pc_unpublish(s);
}

static long gpumig_pc_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct gpumig_pc_open_file *f = filp->private_data;
	void __user *uarg = (void __user *)arg;
	struct gpumig_pc *s;
	u64 blk;

	if (cmd == GPUMIG_PC_ATTACH)
		return gpumig_pc_attach(f, uarg);
	s = gpumig_pc_file_session(f);
	if (!s)
		return -ENXIO;
	switch (cmd) {
	case GPUMIG_PC_STATUS:
		return gpumig_pc_status(s, uarg);
	case GPUMIG_PC_ABANDON:
		gpumig_pc_abandon(s);
		return 0;
	case GPUMIG_PC_ACK:
	case GPUMIG_PC_WANT:
		if (!s->source)
			return -EINVAL;
		if (copy_from_user(&blk, uarg, sizeof(blk)))
			return -EFAULT;
		return cmd == GPUMIG_PC_ACK ? gpumig_pc_ack(s, blk) : gpumig_pc_want(s, blk);
	default:
		return -ENOTTY;
	}
}

/*
 * Source: the next block this file gives, or -ENOENT when it gave each
 * once.  The session's lock held.
 */
static long gpumig_pc_source_next(struct gpumig_pc *s, struct gpumig_pc_open_file *f)
{
	unsigned long blk;

	lockdep_assert_held(&s->lock);
	blk = find_first_bit(s->wanted, s->nr_blocks);
	if (blk < s->nr_blocks) {
		__clear_bit(blk, s->wanted);
		return blk;
	}
	if (f->cursor >= s->nr_blocks)
		return -ENOENT;
	blk = find_next_bit(s->owed, s->nr_blocks, f->cursor);
	if (blk >= s->nr_blocks) {
		f->cursor = s->nr_blocks;
		return -ENOENT;
	}
	f->cursor = blk + 1;
	return blk;
}

static bool gpumig_pc_source_ready(struct gpumig_pc *s, struct gpumig_pc_open_file *f)
{
	bool ready;

	mutex_lock(&s->lock);
	ready = s->state != GPUMIG_PC_STATE_ACTIVE ||
		find_first_bit(s->wanted, s->nr_blocks) < s->nr_blocks ||
		(f->cursor < s->nr_blocks &&
		 find_next_bit(s->owed, s->nr_blocks, f->cursor) < s->nr_blocks);
	mutex_unlock(&s->lock);
	return ready;
}

/* One record into the file's buffer and out to the user; -EAGAIN: none now. */
static ssize_t gpumig_pc_source_read_one(struct gpumig_pc *s, struct gpumig_pc_open_file *f,
					 char __user *ubuf)
{
	ssize_t n;
	long blk;

	mutex_lock(&f->lock);
	mutex_lock(&s->lock);
	if (s->state != GPUMIG_PC_STATE_ACTIVE) {
		n = s->state == GPUMIG_PC_STATE_DONE ? 0 : -ECONNABORTED;
		goto out;
	}
	blk = gpumig_pc_source_next(s, f);
	if (blk < 0) {
		n = -EAGAIN;
		goto out;
	}
	n = gpumig_pc_source_fill(s, blk, f->buf);
	if (n < 0) {
		/* not given: asked for first again at the next read */
		__set_bit(blk, s->wanted);
		goto out;
	}
	mutex_unlock(&s->lock);
	if (copy_to_user(ubuf, f->buf, n))
		n = -EFAULT;
	mutex_unlock(&f->lock);
	return n;
out:
	mutex_unlock(&s->lock);
	mutex_unlock(&f->lock);
	return n;
}

static ssize_t gpumig_pc_source_read(struct file *filp, struct gpumig_pc_open_file *f,
				     struct gpumig_pc *s, char __user *ubuf, size_t count)
{
	size_t need = sizeof(struct gpumig_pc_block) + (1UL << s->block_shift);
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	ssize_t n;

	if (count < need)
		return -EINVAL;
	n = gpumig_pc_source_read_one(s, f, ubuf);
	if (n != -EAGAIN || (filp->f_flags & O_NONBLOCK))
		return n;
	/*
	 * Wait for a block: the readiness check takes the session's mutex,
	 * so it runs awake (wait_woken), never inside wait_event's sleep.
	 */
	add_wait_queue(&s->wq, &wait);
	for (;;) {
		long timeout = MAX_SCHEDULE_TIMEOUT;

		if (gpumig_pc_source_ready(s, f)) {
			n = gpumig_pc_source_read_one(s, f, ubuf);
			if (n != -EAGAIN)
				break;
			/* the backend could not read a block now: try again soon */
			timeout = HZ / 10;
		}
		if (signal_pending(current)) {
			n = -ERESTARTSYS;
			break;
		}
		wait_woken(&wait, TASK_INTERRUPTIBLE, timeout);
	}
	remove_wait_queue(&s->wq, &wait);
	return n;
}

static bool gpumig_pc_dest_ready(struct gpumig_pc *s)
{
	bool ready;

	spin_lock_irq(&s->demand_lock);
	ready = s->dhead != s->dtail;
	spin_unlock_irq(&s->demand_lock);
	return ready || READ_ONCE(s->state) != GPUMIG_PC_STATE_ACTIVE;
}

static ssize_t gpumig_pc_dest_read(struct file *filp, struct gpumig_pc *s,
				   char __user *ubuf, size_t count)
{
	struct gpumig_pc_event ev = { .type = GPUMIG_PC_EVENT_DEMAND };
	bool got;

	if (count < sizeof(ev))
		return -EINVAL;
	for (;;) {
		spin_lock_irq(&s->demand_lock);
		got = s->dhead != s->dtail;
		if (got)
			ev.block = s->demand[s->dhead++ % GPUMIG_PC_DEMANDS];
		spin_unlock_irq(&s->demand_lock);
		if (got)
			return copy_to_user(ubuf, &ev, sizeof(ev)) ? -EFAULT : sizeof(ev);
		if (READ_ONCE(s->state) != GPUMIG_PC_STATE_ACTIVE)
			return 0;
		if (filp->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(s->wq, gpumig_pc_dest_ready(s)))
			return -ERESTARTSYS;
	}
}

static ssize_t gpumig_pc_read(struct file *filp, char __user *ubuf, size_t count, loff_t *ppos)
{
	struct gpumig_pc_open_file *f = filp->private_data;
	struct gpumig_pc *s = gpumig_pc_file_session(f);

	if (!s)
		return -ENXIO;
	if (s->source)
		return gpumig_pc_source_read(filp, f, s, ubuf, count);
	return gpumig_pc_dest_read(filp, s, ubuf, count);
}

static ssize_t gpumig_pc_write(struct file *filp, const char __user *ubuf, size_t count,
			       loff_t *ppos)
{
	struct gpumig_pc_open_file *f = filp->private_data;
	struct gpumig_pc *s = gpumig_pc_file_session(f);
	const size_t hdr = sizeof(struct gpumig_pc_block);
	int ret;

	if (!s)
		return -ENXIO;
	if (s->source)
		return -EINVAL;
	if (count < hdr || count > hdr + (1UL << s->block_shift))
		return -EINVAL;
	/*
	 * One write at a time: the record is checked where it was copied,
	 * and another thread's copy must not land between the check and
	 * the delivery (its data in this block, under this block's CRC).
	 */
	mutex_lock(&f->lock);
	if (copy_from_user(f->buf, ubuf, count)) {
		mutex_unlock(&f->lock);
		return -EFAULT;
	}
	mutex_lock(&s->lock);
	ret = gpumig_pc_deliver(s, (void *)f->buf, f->buf + hdr, count - hdr);
	mutex_unlock(&s->lock);
	mutex_unlock(&f->lock);
	if (READ_ONCE(s->state) != GPUMIG_PC_STATE_ACTIVE)
		gpumig_pc_unpublish(s);
	return ret ? ret : count;
}

static __poll_t gpumig_pc_poll(struct file *filp, struct poll_table_struct *wait)
{
	struct gpumig_pc_open_file *f = filp->private_data;
	struct gpumig_pc *s = gpumig_pc_file_session(f);
	__poll_t mask = 0;

	if (!s)
		return EPOLLERR;
	poll_wait(filp, &s->wq, wait);
	if (s->source) {
		if (gpumig_pc_source_ready(s, f))
			mask |= EPOLLIN | EPOLLRDNORM;
	} else {
		if (gpumig_pc_dest_ready(s))
			mask |= EPOLLIN | EPOLLRDNORM;
		mask |= EPOLLOUT | EPOLLWRNORM;
	}
	return mask;
}

static const struct file_operations gpumig_pc_fops = {
	.owner = THIS_MODULE,
	.open = gpumig_pc_open,
	.release = gpumig_pc_release,
	.read = gpumig_pc_read,
	.write = gpumig_pc_write,
	.poll = gpumig_pc_poll,
	.unlocked_ioctl = gpumig_pc_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice gpumig_pc_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = GPUMIG_PC_DEVICE,
	.fops = &gpumig_pc_fops,
	.mode = 0600,
};

/* ---- the device's side ------------------------------------------------ */

/**
 * gpumig_pc_device_gone() - the device goes: its sessions end
 * @m: device, state mutex held
 *
 * A source's hold is scrubbed (an mdev's removal cannot be refused), a
 * destination's owed blocks are lost with it; both loudly.
 */
void gpumig_pc_device_gone(struct gpumig_mig *m)
{
	struct gpumig_pc *s = m->pc_src;

	lockdep_assert_held(&m->state_mutex);
	gpumig_pc_dest_detach(m, "the device was removed");
	if (!s)
		return;
	m->pc_src = NULL;
	if (m->ops->hold_outlives_binding) {
		/* The PF keeps it: the device's next binding finds the session. */
		mutex_lock(&s->lock);
		if (s->state == GPUMIG_PC_STATE_ACTIVE)
			dev_info(m->vdev->dev,
				 "post-copy: its driver lets go; %lu VRAM blocks stay held for the destination\n",
				 s->nr_owed);
		mutex_unlock(&s->lock);
		gpumig_pc_put(s);
		return;
	}
	mutex_lock(&s->lock);
	if (s->state == GPUMIG_PC_STATE_ACTIVE)
		dev_err(m->vdev->dev,
			"post-copy abandoned: the device was removed with %lu VRAM blocks not delivered; scrubbed\n",
			s->nr_owed);
	gpumig_pc_end_locked(s, GPUMIG_PC_STATE_ABANDONED);
	mutex_unlock(&s->lock);
	gpumig_pc_unpublish(s);
	gpumig_pc_put(s);
}

/**
 * gpumig_pc_source_adopt() - a new binding of a device finds what it holds
 * @m: device, being created
 *
 * A hold that outlives the binding (a PF's provider keeps it) stays the
 * device's: its source session, still active, becomes this binding's, as
 * a quarantine does.
 */
void gpumig_pc_source_adopt(struct gpumig_mig *m)
{
	struct gpumig_pc *s;

	if (!m->ops->hold_outlives_binding)
		return;
	mutex_lock(&gpumig_pc_list_lock);
	list_for_each_entry(s, &gpumig_pc_list, node)
		if (s->source && !strcmp(s->dev_name, dev_name(m->vdev->dev))) {
			kref_get(&s->ref);
			m->pc_src = s;
			break;
		}
	mutex_unlock(&gpumig_pc_list_lock);
	if (m->pc_src)
		dev_info(m->vdev->dev, "post-copy: still holding VRAM for a destination\n");
}

/**
 * gpumig_pc_show() - the device's post-copy files
 * @m: device
 * @which: enum gpumig_pc_file
 * @buf: sysfs buffer
 *
 * Return: bytes written.
 */
ssize_t gpumig_pc_show(struct gpumig_mig *m, unsigned int which, char *buf)
{
	struct gpumig_pc *s;
	unsigned long owed = 0, lost = 0;
	u64 waits = 0;
	const char *role = "none", *state = "none";
	u8 token[GPUMIG_TOKEN_LEN] = {};
	ssize_t n;

	if (which == GPUMIG_PCF_ENABLED)
		return sysfs_emit(buf, "%d\n", READ_ONCE(m->pc_enabled));
	if (which == GPUMIG_PCF_TIMEOUT)
		return sysfs_emit(buf, "%u\n", READ_ONCE(m->pc_timeout_s));
	gpumig_state_mutex_lock(m);
	s = m->pc_dst ? m->pc_dst : m->pc_src;
	if (s) {
		mutex_lock(&s->lock);
		role = s->source ? "source" : "destination";
		state = gpumig_pc_state_names[s->state];
		owed = s->nr_owed;
		lost = s->lost;
		memcpy(token, s->token, sizeof(token));
		mutex_unlock(&s->lock);
		spin_lock_irq(&s->demand_lock);
		waits = s->waits;
		spin_unlock_irq(&s->demand_lock);
	}
	switch (which) {
	case GPUMIG_PCF_ROLE:
		n = sysfs_emit(buf, "%s\n", role);
		break;
	case GPUMIG_PCF_STATE:
		n = sysfs_emit(buf, "%s\n", state);
		break;
	case GPUMIG_PCF_OWED:
		n = sysfs_emit(buf, "%lu\n", owed);
		break;
	case GPUMIG_PCF_LOST:
		n = sysfs_emit(buf, "%lu\n", lost);
		break;
	case GPUMIG_PCF_WAITS:
		n = sysfs_emit(buf, "%llu\n", waits);
		break;
	case GPUMIG_PCF_TOKEN:
		n = s ? sysfs_emit(buf, "%*phN\n", GPUMIG_TOKEN_LEN, token) : sysfs_emit(buf, "\n");
		break;
	default:
		n = -EINVAL;
	}
	gpumig_state_mutex_unlock(m);
	return n;
}

/**
 * gpumig_pc_store() - post-copy's settings
 * @m: device
 * @which: GPUMIG_PCF_ENABLED (migration/postcopy: 1 lets the next or
 *	current pre-copy defer VRAM past the stop, 0 does not) or
 *	GPUMIG_PCF_TIMEOUT (migration/postcopy_timeout_s: seconds without a
 *	block after which a destination takes its source as lost, 0 never,
 *	at most GPUMIG_PC_TIMEOUT_MAX_S; for post-copies restored from then on)
 * @buf: what was written
 *
 * Return: 0, -EINVAL for another value, -EOPNOTSUPP to turn post-copy on
 * for a device that cannot (no hold, no dirty tracking, or capped below
 * stream 1.3).
 */
int gpumig_pc_store(struct gpumig_mig *m, unsigned int which, const char *buf)
{
	unsigned int t;
	bool on;

	if (which == GPUMIG_PCF_TIMEOUT) {
		if (kstrtouint(buf, 10, &t) || t > GPUMIG_PC_TIMEOUT_MAX_S)
			return -EINVAL;
		WRITE_ONCE(m->pc_timeout_s, t);
		return 0;
	}
	if (which != GPUMIG_PCF_ENABLED)
		return -EINVAL;
	if (sysfs_streq(buf, "1"))
		on = true;
	else if (sysfs_streq(buf, "0"))
		on = false;
	else
		return -EINVAL;
	/* under the state mutex: stream_max's store checks this against its cap */
	gpumig_state_mutex_lock(m);
	if (on && !gpumig_pc_source_possible(m)) {
		gpumig_state_mutex_unlock(m);
		return -EOPNOTSUPP;
	}
	WRITE_ONCE(m->pc_enabled, on);
	/* Asked for during a pre-copy: its announcement is due, tell a poller. */
	spin_lock_irq(&m->poll_lock);
	if (on && m->poll_file)
		gpumig_file_wake(m->poll_file);
	spin_unlock_irq(&m->poll_lock);
	gpumig_state_mutex_unlock(m);
	return 0;
}

int gpumig_pc_init(void)
{
	return misc_register(&gpumig_pc_misc);
}

void gpumig_pc_exit(void)
{
	misc_deregister(&gpumig_pc_misc);
}

/**
 * gpumig_pc_new_token() - a fresh session token
 * @token: GPUMIG_TOKEN_LEN bytes, never all zero
 */
void gpumig_pc_new_token(u8 *token)
{
	do {
		get_random_bytes(token, GPUMIG_TOKEN_LEN);
	} while (!memchr_inv(token, 0, GPUMIG_TOKEN_LEN));
}
