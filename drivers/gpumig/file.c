// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration data files.
 *
 * The saving file produces the stream lazily, one section per refill, so
 * its memory is one section whatever the device's size.  Its header
 * section is encoded when the file is made; then VRAM blocks as the
 * backend reports them dirty (the first pass covers all of VRAM, later
 * passes only what changed), and, once the device is stopped, the
 * architectural state and the end section.  The resuming file feeds the
 * hostile-input parser and installs the architectural state only when the
 * whole stream has arrived and checked out.
 *
 * Each file's life is one enum gpumig_file_state, changed under the
 * file's lock.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/anon_inodes.h>
#include <linux/crc32.h>
#include <linux/ctype.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <kunit/visibility.h>

#include "engine.h"

#include <trace/events/gpumig.h>

/* One section: a VRAM block with its framing, or the architectural state. */
#define GPUMIG_SECTION_BUF	(sizeof(struct gpumig_sec_hdr) + \
				 sizeof(struct gpumig_wire_vram) + GPUMIG_BLOCK_SIZE)
#define GPUMIG_TMP_SIZE		max_t(size_t, GPUMIG_BLOCK_SIZE, GPUMIG_ARCH_MAX)
/* A resume write is fed to the parser in pieces of this size. */
#define GPUMIG_WRITE_CHUNK	GPUMIG_TMP_SIZE
/* Largest unknown optional section a destination skips. */
#define GPUMIG_MAX_SKIP		4096

/* Producers send VRAM in blocks: the size the stream format names. */
static_assert(GPUMIG_BLOCK_SIZE == GPUMIG_VRAM_CHUNK);
/* The section buffer holds the largest architectural state and the header. */
static_assert(sizeof(struct gpumig_sec_hdr) + GPUMIG_ARCH_MAX <= GPUMIG_SECTION_BUF);
static_assert(sizeof(struct gpumig_sec_hdr) + sizeof(struct gpumig_wire_header) <=
	      GPUMIG_SECTION_BUF);

/*
 * Dirty VRAM as the stream carries it: a chunk per data block, a range per
 * run of zero blocks.  The runs are counted as one: how many there are
 * depends on where the blocks lie, which counts do not say.  So the figure
 * falls short by 40 bytes (a zero range section) per further run, and
 * never exceeds what the stream will carry: a VMM reads at least the
 * initial bytes it was told of.
 */
static u64 gpumig_vram_bytes(unsigned long nonzero, unsigned long zero)
{
	return (u64)nonzero * gpumig_vram_section_size(GPUMIG_BLOCK_SIZE, false) +
	       (zero ? gpumig_zero_section_size() : 0);
}

/*
 * A backend without VRAM dirty tracking (no @vram_track) sends no VRAM
 * before the stop and every block at it: its pre-copy carries the header
 * alone (which a destination checks before the stop all the same).
 */
static bool gpumig_tracks(struct gpumig_mig *m)
{
	return m->ops->vram_track;
}

static unsigned long gpumig_nr_blocks(struct gpumig_mig *m)
{
	return m->compat.vram_size >> GPUMIG_BLOCK_SHIFT;
}

/*
 * What VRAM still owes the stream now (@stop false: in pre-copy) or once
 * the device stops (@stop: in stop-copy, from block @from on).  Without
 * tracking, every block left is counted as data: one that reads zero goes
 * shorter, so the figure stays an upper bound.
 */
static u64 gpumig_owed_vram_bytes(struct gpumig_mig *m, bool stop, unsigned long from)
{
	unsigned long nonzero, zero, n;

	if (gpumig_tracks(m)) {
		m->ops->vram_dirty_count(m->priv, &nonzero, &zero);
		return gpumig_vram_bytes(nonzero, zero);
	}
	n = gpumig_nr_blocks(m);
	return stop && from < n ? gpumig_vram_bytes(n - from, 0) : 0;
}

/* What every stream of this engine says it is (the release's version). */
static const char gpumig_producer_note[] = GPUMIG_NOTE_PRODUCER "gpumig/" GPUMIG_VERSION;
static_assert(sizeof(gpumig_producer_note) - 1 <= GPUMIG_NOTE_MAX);

/* The header and the producer note: the head of every stream. */
static u64 gpumig_head_bytes(void)
{
	return gpumig_blob_section_size(sizeof(struct gpumig_wire_header)) +
	       gpumig_blob_section_size(sizeof(gpumig_producer_note) - 1);
}

/* The architectural state and the end section: the tail of every stream. */
static u64 gpumig_tail_bytes(struct gpumig_mig *m)
{
	return gpumig_blob_section_size(m->ops->arch_size(m->priv)) +
	       gpumig_blob_section_size(sizeof(struct gpumig_wire_end));
}

/* 0 while the file can be used, else what reads and writes return. */
static int gpumig_file_usable(struct gpumig_mig_file *migf)
{
	lockdep_assert_held(&migf->lock);
	if (migf->state == GPUMIG_FILE_DISABLED)
		return -ENODEV;
	if (migf->state == GPUMIG_FILE_ERROR)
		return migf->err;
	return 0;
}

/**
 * gpumig_file_wake() - wake whoever polls the file: it may be readable now
 * @migf: file
 *
 * Context: any; takes no lock of the engine's.
 */
void gpumig_file_wake(struct gpumig_mig_file *migf)
{
	wake_up_interruptible_poll(&migf->wq, EPOLLIN | EPOLLRDNORM);
}

static void gpumig_file_fail(struct gpumig_mig_file *migf, int err)
{
	lockdep_assert_held(&migf->lock);
	migf->state = GPUMIG_FILE_ERROR;
	migf->err = err;
	gpumig_file_wake(migf);
}

/* ---- saving ----------------------------------------------------------- */

/* @n bytes (or an error) were just encoded into @migf->buf. */
static int gpumig_produced(struct gpumig_mig_file *migf, ssize_t n)
{
	if (n < 0)
		return n;
	migf->buf_pos = 0;
	migf->buf_len = n;
	return 0;
}

/* Zero blocks one range takes at most; a run of more goes on in the next one. */
#define GPUMIG_ZERO_RUN_MAX	BIT(20)
/* Blocks looked at between two chances for others to run. */
#define GPUMIG_RESCHED_BLOCKS	1024

/*
 * The next dirty block at or after @from: the one looked at last time and
 * not sent yet, or the backend's.
 */
static long gpumig_next_dirty(struct gpumig_mig_file *migf, unsigned long from,
			      bool *zero)
{
	struct gpumig_mig *m = migf->m;
	long blk = migf->ahead;

	if (blk >= 0) {
		migf->ahead = -1;
		*zero = migf->ahead_zero;
		return blk;
	}
	if (!gpumig_tracks(m)) {
		/* Every block, in order, once the device stopped; read to see. */
		*zero = false;
		if (migf->state != GPUMIG_FILE_STOPCOPY || from >= gpumig_nr_blocks(m))
			return -ENOENT;
		return from;
	}
	return m->ops->vram_next_dirty(m->priv, from, zero);
}

/*
 * The dirty zero blocks right after @blk, as one range: their count with
 * @blk's.  A backend that takes a run at once (@vram_take_zero_run) leaves
 * the block that ends it dirty; otherwise the first dirty block that does
 * not continue the run is kept for the next section.
 */
static long gpumig_zero_run(struct gpumig_mig_file *migf, unsigned long blk)
{
	struct gpumig_mig *m = migf->m;
	unsigned long run = 1;
	bool zero;
	long next;

	if (m->ops->vram_take_zero_run)
		return run + min(m->ops->vram_take_zero_run(m->priv, blk + 1,
							    GPUMIG_ZERO_RUN_MAX - 1),
				 GPUMIG_ZERO_RUN_MAX - 1);
	while (run < GPUMIG_ZERO_RUN_MAX) {
		if (!(run % GPUMIG_RESCHED_BLOCKS))
			cond_resched();
		next = m->ops->vram_next_dirty(m->priv, blk + run, &zero);
		if (next == -ENOENT)
			break;
		if (next < 0)
			return next;
		if (next != blk + run || !zero) {
			migf->ahead = next;
			migf->ahead_zero = zero;
			break;
		}
		run++;
	}
	return run;
}

/*
 * The next dirty VRAM as a section: a data block read straight into the
 * section buffer, or a run of zero blocks as one range.  Return: bytes, 0
 * when nothing is dirty, or -errno.
 */
static ssize_t gpumig_produce_vram(struct gpumig_mig_file *migf)
{
	struct gpumig_mig *m = migf->m;
	void *data = gpumig_vram_payload(migf->buf);
	long blk, run;
	bool zero;
	u64 off;
	int ret;

	blk = gpumig_next_dirty(migf, migf->cursor, &zero);
	if (blk == -ENOENT && migf->cursor && gpumig_tracks(m)) {
		/* The first pass is over; later passes resend what changed. */
		migf->initial_left = 0;
		migf->cursor = 0;
		blk = gpumig_next_dirty(migf, 0, &zero);
	}
	if (blk == -ENOENT) {
		migf->initial_left = 0;
		return 0;
	}
	if (blk < 0)
		return blk;

	off = (u64)blk << GPUMIG_BLOCK_SHIFT;
	if (!zero) {
		ret = m->ops->vram_read(m->priv, off, data, GPUMIG_BLOCK_SIZE);
		if (ret)
			return ret;
		if (memchr_inv(data, 0, GPUMIG_BLOCK_SIZE)) {
			if (trace_gpumig_vram_enabled())
				trace_gpumig_vram(m->vdev->dev, true, off, GPUMIG_BLOCK_SIZE,
						  false, crc32_le(~0U, data, GPUMIG_BLOCK_SIZE));
			migf->cursor = blk + 1;
			return gpumig_emit_vram(&migf->w, migf->buf, GPUMIG_SECTION_BUF,
						off, data, GPUMIG_BLOCK_SIZE);
		}
		/*
		 * Counted as data (the hint said so), sent as a range of its
		 * own: what remains of the first pass shrinks by the
		 * difference, and the zero runs the count holds stay whole.
		 */
		migf->initial_left -=
			min_t(u64, migf->initial_left,
			      gpumig_vram_section_size(GPUMIG_BLOCK_SIZE, false) -
			      gpumig_zero_section_size());
		run = 1;
	} else {
		run = gpumig_zero_run(migf, blk);
		if (run < 0)
			return run;
	}
	if (trace_gpumig_vram_enabled())
		trace_gpumig_vram(m->vdev->dev, true, off, (u64)run << GPUMIG_BLOCK_SHIFT,
				  true, 0);
	migf->cursor = blk + run;
	return gpumig_emit_zero(&migf->w, migf->buf, GPUMIG_SECTION_BUF, off,
				(u64)run << GPUMIG_BLOCK_SHIFT);
}

/*
 * Encode the next section of the stream into @migf->buf.
 *
 * Return: 0 when a section is ready or the stream is complete (state
 * COMPLETE, nothing more), -ENOMSG when pre-copy has nothing to send now,
 * or another negative errno when the stream cannot go on.
 */
static int gpumig_produce(struct gpumig_mig_file *migf)
{
	struct gpumig_mig *m = migf->m;
	ssize_t n;

	lockdep_assert_held(&migf->lock);
	switch (migf->state) {
	case GPUMIG_FILE_PRECOPY:
	case GPUMIG_FILE_STOPCOPY:
		n = gpumig_produce_vram(migf);
		if (n)
			return gpumig_produced(migf, n);
		if (migf->state == GPUMIG_FILE_PRECOPY)
			return -ENOMSG;
		/* Everything else is still: the architectural state, last. */
		n = m->ops->arch_save(m->priv, migf->tmp, GPUMIG_ARCH_MAX);
		if (n >= 0)
			n = gpumig_emit_blob(&migf->w, migf->buf, GPUMIG_SECTION_BUF,
					     GPUMIG_SEC_ARCH, migf->tmp, n);
		if (n >= 0)
			migf->state = GPUMIG_FILE_END;
		return gpumig_produced(migf, n);
	case GPUMIG_FILE_END:
		n = gpumig_emit_end(&migf->w, migf->buf, GPUMIG_SECTION_BUF);
		if (n >= 0)
			migf->state = GPUMIG_FILE_COMPLETE;
		return gpumig_produced(migf, n);
	case GPUMIG_FILE_COMPLETE:
		return 0;
	default:
		WARN_ON(true);
		return -EINVAL;
	}
}

/* Bytes of the current section still to be read. */
static size_t gpumig_buffered(struct gpumig_mig_file *migf)
{
	return migf->buf_len - migf->buf_pos;
}

/* @n bytes of the current section were read: count them. */
static void gpumig_consumed(struct gpumig_mig_file *migf, size_t n)
{
	lockdep_assert_held(&migf->lock);
	migf->buf_pos += n;
	migf->initial_left -= min_t(u64, migf->initial_left, n);
	if (!migf->m)
		return;		/* disabled meanwhile */
	if (migf->state == GPUMIG_FILE_PRECOPY) {
		atomic64_add(n, &migf->m->stats.precopy_bytes);
		migf->round_bytes += n;
	} else {
		atomic64_add(n, &migf->m->stats.stopcopy_bytes);
	}
}

/*
 * Make sure a section is buffered: 0 with bytes ready, 1 at the end of the
 * stream, or a negative errno (-ENOMSG: pre-copy has nothing now).
 */
static int gpumig_fill(struct gpumig_mig_file *migf)
{
	int ret;

	lockdep_assert_held(&migf->lock);
	ret = gpumig_file_usable(migf);
	if (ret || gpumig_buffered(migf))
		return ret;
	if (migf->state == GPUMIG_FILE_COMPLETE)
		return 1;
	ret = gpumig_produce(migf);
	if (ret == -ENOMSG && migf->round_bytes) {
		/* All that was ready is read: one pre-copy round. */
		struct gpumig_mig_stats *s = &migf->m->stats;
		u64 now = ktime_get_ns(), prev = atomic64_read(&s->round_end_ns);

		atomic64_inc(&s->precopy_rounds);
		/* The first round is the initial pass: no rate from it. */
		if (prev && now > prev)
			atomic64_set(&s->dirty_rate, mul_u64_u64_div_u64(migf->round_bytes,
									 NSEC_PER_SEC, now - prev));
		atomic64_set(&s->round_end_ns, now);
		migf->round_bytes = 0;
	}
	if (ret && ret != -ENOMSG) {
		dev_err(migf->m->vdev->dev, "migration stream broken: %d\n", ret);
		gpumig_file_fail(migf, ret);
	}
	if (!ret && !gpumig_buffered(migf))
		return 1;	/* produced nothing: the stream is complete */
	return ret;
}

static u64 gpumig_file_pending_locked(struct gpumig_mig_file *migf, bool stopped);

/*
 * The file lock is never held across a copy to the user: a fault there may
 * wait for locks (the mm's, vfio-pci-core's memory lock) that are held
 * around a device reset, which takes the file lock.  The io lock keeps
 * readers in order and the section buffer still meanwhile; only readers
 * change it.
 */
static ssize_t gpumig_save_read(struct kiocb *iocb, struct iov_iter *to)
{
	struct gpumig_mig_file *migf = iocb->ki_filp->private_data;
	size_t len = iov_iter_count(to), n, pos;
	ssize_t done = 0;
	int ret;

	mutex_lock(&migf->io_lock);
	while (done < len) {
		/* A whole stream may be asked for at once: stay killable. */
		if (done && fatal_signal_pending(current))
			break;
		cond_resched();
		mutex_lock(&migf->lock);
		ret = gpumig_fill(migf);
		n = min(len - done, gpumig_buffered(migf));
		pos = migf->buf_pos;
		mutex_unlock(&migf->lock);
		if (ret) {
			if (!done && ret < 0)
				done = ret;
			break;
		}
		if (copy_to_iter(migf->buf + pos, n, to) != n) {
			done = -EFAULT;
			break;
		}
		mutex_lock(&migf->lock);
		gpumig_consumed(migf, n);
		if (migf->m)
			gpumig_view_changed(migf->m);
		mutex_unlock(&migf->lock);
		done += n;
	}
	if (trace_gpumig_save_read_enabled()) {
		mutex_lock(&migf->lock);
		if (migf->m)	/* not disabled: the device is still there */
			trace_gpumig_save_read(migf->m->vdev->dev,
					       migf->state != GPUMIG_FILE_PRECOPY, done,
					       gpumig_file_pending_locked(migf, false));
		mutex_unlock(&migf->lock);
	}
	mutex_unlock(&migf->io_lock);
	return done;
}

/*
 * Readable exactly when a read would not fail with -ENOMSG: a section is
 * buffered or dirty VRAM waits (PRE_COPY), the device stopped (the rest of
 * the stream, then end of file), or the file broke (the read fails).  A
 * backend wakes a PRE_COPY poller when VRAM becomes dirty; for one that
 * cannot, the engine looks again a little later.
 */
static __poll_t gpumig_save_poll(struct file *filp, struct poll_table_struct *wait)
{
	struct gpumig_mig_file *migf = filp->private_data;
	bool recheck = false;
	__poll_t mask;

	poll_wait(filp, &migf->wq, wait);
	mutex_lock(&migf->lock);
	switch (migf->state) {
	case GPUMIG_FILE_PRECOPY:
		mask = 0;
		if (gpumig_buffered(migf) || gpumig_owed_vram_bytes(migf->m, false, 0))
			mask = EPOLLIN | EPOLLRDNORM;
		else
			recheck = !migf->m->ops->notifies_dirty;
		break;
	case GPUMIG_FILE_ERROR:
	case GPUMIG_FILE_DISABLED:
		mask = EPOLLIN | EPOLLRDNORM | EPOLLERR;
		break;
	default:
		mask = EPOLLIN | EPOLLRDNORM;
	}
	mutex_unlock(&migf->lock);
	if (recheck)
		mod_delayed_work(system_wq, &migf->recheck,
				 msecs_to_jiffies(GPUMIG_POLL_RECHECK_MS));
	return mask;
}

static void gpumig_file_recheck(struct work_struct *work)
{
	struct gpumig_mig_file *migf = container_of(to_delayed_work(work),
						    struct gpumig_mig_file, recheck);

	gpumig_file_wake(migf);
}

/*
 * What the file would still produce: the dirty VRAM, the section being
 * read, and, once the device is (or, with @stopped, would be) stopped, the
 * architectural state and the end section.
 */
static u64 gpumig_file_pending_locked(struct gpumig_mig_file *migf, bool stopped)
{
	struct gpumig_mig *m = migf->m;
	u64 n = gpumig_buffered(migf);

	lockdep_assert_held(&migf->lock);
	switch (migf->state) {
	case GPUMIG_FILE_PRECOPY:
		if (stopped)
			return n + gpumig_owed_vram_bytes(m, true, 0) + gpumig_tail_bytes(m);
		return n + gpumig_owed_vram_bytes(m, false, 0);
	case GPUMIG_FILE_STOPCOPY:
		return n + gpumig_owed_vram_bytes(m, true, migf->cursor) + gpumig_tail_bytes(m);
	case GPUMIG_FILE_END:
		return n + gpumig_blob_section_size(sizeof(struct gpumig_wire_end));
	case GPUMIG_FILE_COMPLETE:
		return n;
	default:
		return 0;
	}
}

/**
 * gpumig_file_pending() - what a saving file still has to send
 * @migf: file
 * @stopped: count what STOP_COPY would add if the device stopped now
 *
 * Return: bytes.
 */
u64 gpumig_file_pending(struct gpumig_mig_file *migf, bool stopped)
{
	u64 n;

	mutex_lock(&migf->lock);
	n = gpumig_file_pending_locked(migf, stopped);
	mutex_unlock(&migf->lock);
	return n;
}

/**
 * gpumig_stopcopy_size() - bytes STOP_COPY would produce from now
 * @m: device, state mutex held
 *
 * With no saving file: a whole stream (header, every block, the
 * architectural state, the end).  With one: what it has left.
 *
 * Return: bytes.
 */
u64 gpumig_stopcopy_size(struct gpumig_mig *m)
{
	lockdep_assert_held(&m->state_mutex);
	if (m->saving)
		return gpumig_file_pending(m->saving, true);
	return gpumig_head_bytes() + gpumig_owed_vram_bytes(m, true, 0) + gpumig_tail_bytes(m);
}

/* Re-initialisations so far: the front end's and the hardware's count. */
static int gpumig_reconfig_seq(struct gpumig_mig *m)
{
	int seq = atomic_read(&m->reconfig_seq);

	if (m->ops->guest_resets)
		seq += m->ops->guest_resets(m->priv);
	return seq;
}

#ifdef VFIO_PRECOPY_INFO_REINIT
#define GPUMIG_PRECOPY_REINIT	VFIO_PRECOPY_INFO_REINIT

/*
 * Was the device re-initialised (gpumig_mig_reconfigured()) since @migf
 * last looked, and may the VMM be told (it opted in to
 * VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2, which the VFIO core records)?
 */
static bool gpumig_file_reinit(struct gpumig_mig_file *migf)
{
	int seq = gpumig_reconfig_seq(migf->m);

	lockdep_assert_held(&migf->lock);
	if (seq == migf->reconfig_seen)
		return false;
	migf->reconfig_seen = seq;
	return migf->m->vdev->precopy_info_v2;
}
#else
/* A kernel without VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2: never. */
#define GPUMIG_PRECOPY_REINIT	0

static bool gpumig_file_reinit(struct gpumig_mig_file *migf)
{
	return false;
}
#endif

/**
 * gpumig_mig_precopy_info() - VFIO_MIG_GET_PRECOPY_INFO of a saving file
 * @filp: the data file
 * @info: filled with initial_bytes (what remains of the first full pass)
 *	and dirty_bytes (what changed since and is not read yet); after the
 *	guest re-initialised the device, once, VFIO_PRECOPY_INFO_REINIT and
 *	everything pending as initial_bytes (see gpumig_mig_reconfigured())
 *
 * Return: 0, or -EINVAL outside PRE_COPY.
 */
VISIBLE_IF_KUNIT int gpumig_mig_precopy_info(struct file *filp,
					     struct vfio_precopy_info *info)
{
	struct gpumig_mig_file *migf = filp->private_data;
	int ret = 0;
	u64 pending;

	mutex_lock(&migf->lock);
	if (migf->state != GPUMIG_FILE_PRECOPY) {
		ret = -EINVAL;
		goto out;
	}
	/*
	 * initial_left is counted ahead (a block's hint can change before it
	 * is read): never more than what is pending, so initial plus dirty is
	 * always what the device still has, as the status reports it.
	 */
	pending = gpumig_file_pending_locked(migf, false);
	info->flags = 0;
	if (gpumig_file_reinit(migf)) {
		/*
		 * Everything pending now is the new initial data, possibly
		 * none yet: reported at once all the same, since a VMM that
		 * first learns of it as it stops the device fails the
		 * migration (QEMU 11.1's last check before switchover).
		 */
		migf->initial_left = pending;
		info->flags = GPUMIG_PRECOPY_REINIT;
	}
	info->initial_bytes = min(migf->initial_left, pending);
	info->dirty_bytes = pending - info->initial_bytes;
	/* Reports show what the VMM was just told. */
	gpumig_view_changed(migf->m);
out:
	mutex_unlock(&migf->lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_mig_precopy_info);

static long gpumig_save_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	unsigned long minsz = offsetofend(struct vfio_precopy_info, dirty_bytes);
	struct vfio_precopy_info info;
	int ret;

	if (cmd != VFIO_MIG_GET_PRECOPY_INFO)
		return -ENOTTY;
	if (copy_from_user(&info, (void __user *)arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz)
		return -EINVAL;
	ret = gpumig_mig_precopy_info(filp, &info);
	if (ret)
		return ret;
	return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
}

/* ---- resuming ----------------------------------------------------------- */

static int gpumig_rx_header(void *priv, u16 major, u16 minor,
			    const struct gpumig_compat *src)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;
	char why[GPUMIG_MSG_LEN];
	int ret;

	ret = gpumig_compat_check(src, &m->compat, why, sizeof(why));
	if (ret)
		gpumig_parser_set_error(&migf->parser, ret, "incompatible source: %s", why);
	return ret;
}

static int gpumig_rx_vram(void *priv, u64 off, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;

	if (migf->arch_len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"VRAM chunk at 0x%llx after the architectural state", off);
	if (trace_gpumig_vram_enabled())
		trace_gpumig_vram(migf->m->vdev->dev, false, off, len, !data,
				  data ? crc32_le(~0U, data, len) : 0);
	return migf->m->ops->vram_write(migf->m->priv, off, data, len);
}

/* The backend put a chunk's data into VRAM itself, and it checked out. */
static int gpumig_rx_vram_placed(void *priv, u64 off, u32 len, u32 crc)
{
	struct gpumig_mig_file *migf = priv;

	if (trace_gpumig_vram_enabled())
		trace_gpumig_vram(migf->m->vdev->dev, false, off, len, false, crc);
	return 0;
}

/* Bytes of a zero range the backend is asked to clear at once. */
#define GPUMIG_ZERO_STEP	SZ_1G

/* A range that reads zero (the parser checked it lies inside VRAM). */
static int gpumig_rx_zero(void *priv, u64 off, u64 len)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;
	int ret;

	if (migf->arch_len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"zero range at 0x%llx after the architectural state", off);
	if (trace_gpumig_vram_enabled())
		trace_gpumig_vram(m->vdev->dev, false, off, len, true, 0);
	while (len) {
		u32 n = min_t(u64, len, GPUMIG_ZERO_STEP);

		/* As long as VRAM, and a device may clear it slowly: killable. */
		if (fatal_signal_pending(current))
			return gpumig_parser_set_error(&migf->parser, -EINTR,
				"zero range at 0x%llx: interrupted", off);
		ret = m->ops->vram_write(m->priv, off, NULL, n);
		if (ret)
			return ret;
		off += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

static int gpumig_rx_arch(void *priv, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;

	if (migf->arch_len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"second architectural state section");
	if (!len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"empty architectural state section");
	memcpy(migf->arch, data, len);
	migf->arch_len = len;
	return 0;
}

static int gpumig_rx_work(void *priv, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;

	/* In-flight work travels inside the architectural state. */
	return gpumig_parser_set_error(&migf->parser, -EPROTO,
		"separate in-flight work section not used by this device");
}

/* Everything arrived and checked out: install the architectural state, last. */
static int gpumig_rx_end(void *priv)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;
	int ret;

	if (!migf->arch_len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"stream ended without architectural state");
	ret = m->ops->arch_restore(m->priv, migf->arch, migf->arch_len);
	if (ret)
		return gpumig_parser_set_error(&migf->parser, ret,
			"device refused the architectural state (%d)", ret);
	migf->state = GPUMIG_FILE_RESTORED;
	return 0;
}

/*
 * A note: the producer's "gpumig/<release>" is kept for reports when it is
 * plain text of the expected characters; every other note is ignored.
 */
static void gpumig_rx_note(void *priv, const char *text, u32 len)
{
	struct gpumig_mig_file *migf = priv;
	const size_t k = strlen(GPUMIG_NOTE_PRODUCER);
	char v[GPUMIG_NOTE_MAX + 1];
	u32 i;

	if (len <= k || memcmp(text, GPUMIG_NOTE_PRODUCER, k))
		return;
	for (i = k; i < len; i++)
		if (!isalnum(text[i]) && !strchr("._+-/~", text[i]))
			return;
	memcpy(v, text + k, len - k);
	v[len - k] = '\0';
	gpumig_set_source(migf->m, v);
}

static const struct gpumig_parser_ops gpumig_rx_ops = {
	.header = gpumig_rx_header,
	.vram = gpumig_rx_vram,
	.vram_placed = gpumig_rx_vram_placed,
	.zero = gpumig_rx_zero,
	.arch = gpumig_rx_arch,
	.work = gpumig_rx_work,
	.end = gpumig_rx_end,
	.note = gpumig_rx_note,
};

/* A refused stream stays refused; the device says why. */
static void gpumig_resume_refused(struct gpumig_mig_file *migf, int err)
{
	const char *why = gpumig_parser_error(&migf->parser);

	dev_err_ratelimited(migf->m->vdev->dev, "migration stream refused: %s\n", why);
	trace_gpumig_stream_refused(migf->m->vdev->dev, err, why);
	gpumig_set_why(migf->m, "%s", why);
	gpumig_file_fail(migf, err);
}

/*
 * A VRAM chunk's data straight from the user into VRAM (the backend's
 * @vram_write_iter), under the file lock, so that a file disabled or
 * failed meanwhile writes nothing: with page faults disabled, so the copy
 * takes no lock of the mm's under it and ends short where the user's
 * memory is not present.  Return: bytes placed, or a negative errno with
 * the stream refused.
 */
static ssize_t gpumig_resume_place(struct gpumig_mig_file *migf, struct iov_iter *from,
				   size_t n, u64 off, u32 crc)
{
	struct gpumig_mig *m = migf->m;
	ssize_t got, ret;

	lockdep_assert_held(&migf->lock);
	pagefault_disable();
	got = m->ops->vram_write_iter(m->priv, off, from, n, &crc);
	pagefault_enable();
	if (got < 0 || got > n) {
		ret = gpumig_parser_set_error(&migf->parser,
					      got < 0 ? got : -EIO,
					      "VRAM chunk at 0x%llx refused by the destination",
					      off);
	} else if (got) {
		ret = gpumig_parser_vram_commit(&migf->parser, got, crc);
		if (ret >= 0)
			atomic64_add(got, &m->stats.resumed_bytes);
	} else {
		return 0;
	}
	if (ret < 0)
		gpumig_resume_refused(migf, ret);
	return ret;
}

/*
 * As for reads, the user's bytes are copied with only the io lock held:
 * into the parser's own buffer when it is in the middle of a payload it
 * keeps, else into @tmp and fed from there; a section header is fed
 * alone, so that its payload can then go in directly.  A VRAM chunk's
 * data goes straight into VRAM instead where the backend can take it
 * (gpumig_resume_place()): one copy, not two.  Where that copy ended
 * short, the rest of the chunk goes through the parser's buffer, copied
 * without the file lock, where the user's pages may fault in.  Only
 * writers, under the io lock, move the parser, so the place it gave stays
 * its until the commit.
 */
static ssize_t gpumig_resume_write(struct kiocb *iocb, struct iov_iter *from)
{
	struct gpumig_mig_file *migf = iocb->ki_filp->private_data;
	size_t len = iov_iter_count(from);
	ssize_t done = 0, ret;
	bool place = true;

	mutex_lock(&migf->io_lock);
	while (done < len) {
		size_t n = min_t(size_t, len - done, GPUMIG_WRITE_CHUNK), room;
		void *dst = NULL;
		u64 off;
		u32 crc;

		/* A hostile stream may be long: stay preemptible and killable. */
		if (done && fatal_signal_pending(current))
			break;
		cond_resched();
		mutex_lock(&migf->lock);
		if (!gpumig_file_usable(migf)) {
			room = place && migf->m->ops->vram_write_iter && !migf->arch_len ?
			       gpumig_parser_vram_room(&migf->parser, &off, &crc) : 0;
			if (room) {
				n = min(n, room);
				ret = gpumig_resume_place(migf, from, n, off, crc);
				mutex_unlock(&migf->lock);
				if (ret < 0) {
					done = ret;
					break;
				}
				done += ret;
				/*
				 * Short (the user's memory is not present): the
				 * rest of the chunk through the buffer, whose copy
				 * may fault.
				 */
				place = ret == n;
				continue;
			}
			place = true;
			n = min(n, gpumig_parser_room(&migf->parser, &dst) ?:
				   gpumig_parser_hdr_left(&migf->parser) ?: n);
		}
		mutex_unlock(&migf->lock);
		if (copy_from_iter(dst ?: migf->tmp, n, from) != n) {
			done = -EFAULT;
			break;
		}
		mutex_lock(&migf->lock);
		ret = gpumig_file_usable(migf);
		if (!ret) {
			if (dst)
				ret = gpumig_parser_commit(&migf->parser, n);
			else
				ret = gpumig_parser_feed(&migf->parser, migf->tmp, n);
			if (ret < 0)
				gpumig_resume_refused(migf, ret);
			else
				atomic64_add(n, &migf->m->stats.resumed_bytes);
		}
		mutex_unlock(&migf->lock);
		if (ret < 0) {
			/* A refused stream is refused whole, whatever went before. */
			done = ret;
			break;
		}
		done += n;
	}
	mutex_unlock(&migf->io_lock);
	return done;
}

/**
 * gpumig_file_finish_resume() - RESUMING -> STOP: did a whole stream arrive?
 * @migf: the resuming file
 *
 * Return: 0 when a complete, valid stream was installed; else an errno,
 * the file is broken for good and the device says why.
 */
int gpumig_file_finish_resume(struct gpumig_mig_file *migf)
{
	int ret;

	mutex_lock(&migf->lock);
	ret = gpumig_file_usable(migf);
	if (ret)
		goto out;	/* refused already, and said why */
	ret = gpumig_parser_finish(&migf->parser);
	if (!ret && migf->state != GPUMIG_FILE_RESTORED)
		ret = gpumig_parser_set_error(&migf->parser, -EINVAL,
					      "stream ended before its end section");
	if (ret)
		gpumig_resume_refused(migf, ret);
out:
	mutex_unlock(&migf->lock);
	return ret;
}

/* ---- files -------------------------------------------------------------- */

static void gpumig_file_free(struct gpumig_mig_file *migf)
{
	cancel_delayed_work_sync(&migf->recheck);
	if (migf->parser.buf)
		gpumig_parser_destroy(&migf->parser);
	kvfree(migf->buf);
	kvfree(migf->tmp);
	kvfree(migf->arch);
	mutex_destroy(&migf->lock);
	mutex_destroy(&migf->io_lock);
	kfree(migf);
}

static int gpumig_file_release(struct inode *inode, struct file *filp)
{
	gpumig_file_free(filp->private_data);
	return 0;
}

static const struct file_operations gpumig_save_fops = {
	.owner = THIS_MODULE,
	.read_iter = gpumig_save_read,
	.poll = gpumig_save_poll,
	.unlocked_ioctl = gpumig_save_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = gpumig_file_release,
};

static const struct file_operations gpumig_resume_fops = {
	.owner = THIS_MODULE,
	.write_iter = gpumig_resume_write,
	.release = gpumig_file_release,
};

static struct gpumig_mig_file *gpumig_file_alloc(struct gpumig_mig *m)
{
	struct gpumig_mig_file *migf;

	migf = kzalloc(sizeof(*migf), GFP_KERNEL_ACCOUNT);
	if (!migf)
		return NULL;
	mutex_init(&migf->lock);
	mutex_init(&migf->io_lock);
	init_waitqueue_head(&migf->wq);
	INIT_DELAYED_WORK(&migf->recheck, gpumig_file_recheck);
	migf->m = m;
	migf->ahead = -1;
	migf->tmp = kvmalloc(GPUMIG_TMP_SIZE, GFP_KERNEL_ACCOUNT);
	if (!migf->tmp) {
		gpumig_file_free(migf);
		return NULL;
	}
	return migf;
}

/* The anonymous file; on failure @migf is freed. */
static int gpumig_file_open(struct gpumig_mig_file *migf, bool save)
{
	migf->filp = anon_inode_getfile(save ? "gpumig_save" : "gpumig_resume",
					save ? &gpumig_save_fops : &gpumig_resume_fops,
					migf, save ? O_RDONLY : O_WRONLY);
	if (IS_ERR(migf->filp)) {
		int ret = PTR_ERR(migf->filp);

		gpumig_file_free(migf);
		return ret;
	}
	stream_open(migf->filp->f_inode, migf->filp);
	return 0;
}

/**
 * gpumig_file_new_saving() - a saving file for PRE_COPY or STOP_COPY
 * @m: device, state mutex held
 * @stop_copy: the device is stopped already (STOP -> STOP_COPY)
 *
 * Starts VRAM dirty tracking (every block dirty) and encodes the header
 * section, so the destination learns the descriptor from the first bytes,
 * and the producer note after it.
 *
 * Return: the file, or an ERR_PTR with tracking off again.
 */
struct gpumig_mig_file *gpumig_file_new_saving(struct gpumig_mig *m, bool stop_copy)
{
	struct gpumig_mig_file *migf;
	ssize_t n, len;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	migf = gpumig_file_alloc(m);
	if (!migf)
		return ERR_PTR(-ENOMEM);
	migf->buf = kvmalloc(GPUMIG_SECTION_BUF, GFP_KERNEL_ACCOUNT);
	if (!migf->buf) {
		gpumig_file_free(migf);
		return ERR_PTR(-ENOMEM);
	}
	ret = gpumig_tracks(m) ? m->ops->vram_track(m->priv, true) : 0;
	if (ret) {
		gpumig_set_why(m, "VRAM dirty tracking could not start (%d)", ret);
		dev_warn(m->vdev->dev, "migration: VRAM dirty tracking could not start (%d)\n",
			 ret);
		gpumig_file_free(migf);
		return ERR_PTR(ret);
	}
	gpumig_writer_init(&migf->w);
	/* A re-initialisation before now is part of the first pass. */
	migf->reconfig_seen = gpumig_reconfig_seq(m);
	migf->initial_left = gpumig_head_bytes() + gpumig_owed_vram_bytes(m, stop_copy, 0);
	n = gpumig_emit_header(&migf->w, migf->buf, GPUMIG_SECTION_BUF, &m->compat);
	if (n >= 0) {
		len = gpumig_emit_blob(&migf->w, migf->buf + n, GPUMIG_SECTION_BUF - n,
				       GPUMIG_SEC_NOTE, gpumig_producer_note,
				       sizeof(gpumig_producer_note) - 1);
		n = len < 0 ? len : n + len;
	}
	ret = gpumig_produced(migf, n);
	if (!ret)
		ret = gpumig_file_open(migf, true);
	else
		gpumig_file_free(migf);
	if (ret) {
		if (gpumig_tracks(m))
			m->ops->vram_track(m->priv, false);
		return ERR_PTR(ret);
	}
	migf->state = stop_copy ? GPUMIG_FILE_STOPCOPY : GPUMIG_FILE_PRECOPY;
	atomic64_set(&m->stats.precopy_rounds, 0);
	atomic64_set(&m->stats.dirty_rate, 0);
	atomic64_set(&m->stats.round_end_ns, 0);
	atomic64_set(&m->stats.precopy_bytes, 0);
	atomic64_set(&m->stats.stopcopy_bytes, 0);
	return migf;
}

/**
 * gpumig_file_new_resuming() - a resuming file
 * @m: device, state mutex held
 *
 * The parser's limits come from this device: nothing the stream says can
 * make it allocate more.
 *
 * Return: the file or an ERR_PTR.
 */
struct gpumig_mig_file *gpumig_file_new_resuming(struct gpumig_mig *m)
{
	struct gpumig_parser_limits lim = {
		.vram_size = m->compat.vram_size,
		.max_chunk = GPUMIG_BLOCK_SIZE,
		.max_arch = GPUMIG_ARCH_MAX,
		.max_work = 0,
		.max_skip = GPUMIG_MAX_SKIP,
	};
	struct gpumig_mig_file *migf;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	migf = gpumig_file_alloc(m);
	if (!migf)
		return ERR_PTR(-ENOMEM);
	migf->arch = kvmalloc(GPUMIG_ARCH_MAX, GFP_KERNEL_ACCOUNT);
	gpumig_set_source(m, "");	/* until this stream says */
	ret = migf->arch ? gpumig_parser_init(&migf->parser, &lim, &gpumig_rx_ops, migf) :
			   -ENOMEM;
	if (ret) {
		gpumig_file_free(migf);
		return ERR_PTR(ret);
	}
	ret = gpumig_file_open(migf, false);
	if (ret)
		return ERR_PTR(ret);
	migf->state = GPUMIG_FILE_RESUMING;
	atomic64_set(&m->stats.resumed_bytes, 0);
	return migf;
}

/**
 * gpumig_file_stop_copy() - the device stopped: the saving file finishes
 * @migf: saving file in PRE_COPY
 */
void gpumig_file_stop_copy(struct gpumig_mig_file *migf)
{
	mutex_lock(&migf->lock);
	if (migf->state == GPUMIG_FILE_PRECOPY)
		migf->state = GPUMIG_FILE_STOPCOPY;
	mutex_unlock(&migf->lock);
	gpumig_file_wake(migf);
}

/**
 * gpumig_file_complete() - did a saving file produce its end section?
 * @migf: saving file
 *
 * Return: true once the whole stream was produced.
 */
bool gpumig_file_complete(struct gpumig_mig_file *migf)
{
	bool done;

	mutex_lock(&migf->lock);
	done = migf->state == GPUMIG_FILE_COMPLETE;
	mutex_unlock(&migf->lock);
	return done;
}

/**
 * gpumig_file_abort() - the device can no longer serve the file
 * @migf: file
 * @err: what reads and writes return from now on
 *
 * A stream produced whole (COMPLETE) or restored (RESTORED) is kept: it
 * needs nothing more from the device.
 *
 * Return: true when the file was aborted.
 */
bool gpumig_file_abort(struct gpumig_mig_file *migf, int err)
{
	bool abort;

	mutex_lock(&migf->lock);
	switch (migf->state) {
	case GPUMIG_FILE_COMPLETE:
	case GPUMIG_FILE_RESTORED:
	case GPUMIG_FILE_ERROR:
	case GPUMIG_FILE_DISABLED:
		abort = false;
		break;
	default:
		abort = true;
		gpumig_file_fail(migf, err);
	}
	mutex_unlock(&migf->lock);
	return abort;
}

/**
 * gpumig_file_disable() - the file's phase ended; drop the engine's reference
 * @migf: file
 *
 * Reads and writes fail with -ENODEV from now on; the file lives until
 * the user closes it.
 */
void gpumig_file_disable(struct gpumig_mig_file *migf)
{
	mutex_lock(&migf->lock);
	migf->state = GPUMIG_FILE_DISABLED;
	migf->m = NULL;
	mutex_unlock(&migf->lock);
	gpumig_file_wake(migf);
	fput(migf->filp);
}
