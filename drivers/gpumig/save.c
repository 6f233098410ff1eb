// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration data files: the saving side (PRE_COPY, STOP_COPY).
 *
 * The saving file produces the stream lazily, one section per refill, so
 * its memory is one section whatever the device's size.  Its header
 * section is encoded when the file is made; then VRAM blocks as the
 * backend reports them dirty (the first pass covers all of VRAM, later
 * passes only what changed), and, once the device is stopped, the
 * architectural state and the end section.  What it still owes is counted
 * from the same section sizes the encoder writes (gpumig_*_section_size()).
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

/*
 * Dirty VRAM as the stream carries it: a chunk per data block, a range per
 * run of zero blocks.  The runs are counted as one: how many there are
 * depends on where the blocks lie, which counts do not say.  So the figure
 * falls short by 40 bytes (a zero range section) per further run, and
 * never exceeds what the stream will carry: a VMM reads at least the
 * initial bytes it was told of.
 */
static u64 gpumig_vram_bytes(struct gpumig_mig *m, unsigned long nonzero, unsigned long zero)
{
	u64 n = (u64)nonzero * gpumig_vram_section_size(gpumig_block_size(m), false);

	/* Stream 1.0 has no ranges: a zero chunk per block. */
	if (!gpumig_stream_written(m))
		return n + (u64)zero * gpumig_vram_section_size(gpumig_block_size(m), true);
	return n + (zero ? gpumig_zero_section_size() : 0);
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
	return m->compat.vram_size >> m->geo.block_shift;
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
		return gpumig_vram_bytes(m, nonzero, zero);
	}
	n = gpumig_nr_blocks(m);
	return stop && from < n ? gpumig_vram_bytes(m, n - from, 0) : 0;
}

/* What every stream of this engine says it is (the release's version). */
static const char gpumig_producer_note[] = GPUMIG_NOTE_PRODUCER "gpumig/" GPUMIG_VERSION;
static_assert(sizeof(gpumig_producer_note) - 1 <= GPUMIG_NOTE_MAX);

/* "vram_data=" and a count of 20 digits: every stream's note is as long. */
#define GPUMIG_VRAM_DATA_NOTE_LEN	(sizeof(GPUMIG_NOTE_VRAM_DATA) - 1 + 20)
static_assert(GPUMIG_VRAM_DATA_NOTE_LEN <= GPUMIG_NOTE_MAX);

/* The header and the two notes: the head of every stream. */
static u64 gpumig_head_bytes(void)
{
	return gpumig_blob_section_size(sizeof(struct gpumig_wire_header)) +
	       gpumig_blob_section_size(sizeof(gpumig_producer_note) - 1) +
	       gpumig_blob_section_size(GPUMIG_VRAM_DATA_NOTE_LEN);
}

/*
 * One part of at most 64 KiB goes as one GPUMIG_SEC_ARCH, as before 1.2;
 * any other shape as GPUMIG_SEC_ARCH_PART sections.
 */
static bool gpumig_arch_whole(struct gpumig_mig *m)
{
	return m->geo.arch_parts == 1 && m->geo.arch_part_max <= GPUMIG_ARCH_MAX;
}

/*
 * The tail of every stream, what the stop adds after VRAM: the vendor
 * sections and the architectural state (not the end section).
 */
static u64 gpumig_tail_bytes(struct gpumig_mig *m)
{
	u64 n = m->ops->arch_size(m->priv);
	u32 sections = 0;

	if (gpumig_arch_whole(m))
		n = gpumig_blob_section_size(n);
	else
		n += (u64)m->geo.arch_parts * gpumig_arch_part_section_size(0);
	if (m->ops->vendor_size) {
		n += m->ops->vendor_size(m->priv, &sections);
		n += (u64)sections * gpumig_vendor_section_size(0);
	}
	return n;
}

static u64 gpumig_end_bytes(void)
{
	return gpumig_blob_section_size(sizeof(struct gpumig_wire_end));
}

/* A backend that keeps producing vendor sections past this breaks the stream. */
#define GPUMIG_VENDOR_SECTIONS_MAX	4096

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
	u32 bsize = gpumig_block_size(m);
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

	off = (u64)blk << m->geo.block_shift;
	if (!zero) {
		ret = m->ops->vram_read(m->priv, off, data, bsize);
		if (ret)
			return ret;
		if (memchr_inv(data, 0, bsize)) {
			if (trace_gpumig_vram_enabled())
				trace_gpumig_vram(m->vdev->dev, true, off, bsize,
						  false, crc32_le(~0U, data, bsize));
			migf->cursor = blk + 1;
			return gpumig_emit_vram(&migf->w, migf->buf, migf->buf_size,
						off, data, bsize);
		}
		/*
		 * Counted as data (the hint said so), sent as a range of its
		 * own: what remains of the first pass shrinks by the
		 * difference, and the zero runs the count holds stay whole.
		 */
		migf->initial_left -=
			min_t(u64, migf->initial_left,
			      gpumig_vram_section_size(bsize, false) -
			      gpumig_zero_section_size());
		run = 1;
	} else {
		/* Stream 1.0: one block at a time, a zero chunk each. */
		run = gpumig_stream_written(m) ? gpumig_zero_run(migf, blk) : 1;
		if (run < 0)
			return run;
	}
	if (trace_gpumig_vram_enabled())
		trace_gpumig_vram(m->vdev->dev, true, off, (u64)run << m->geo.block_shift,
				  true, 0);
	migf->cursor = blk + run;
	/* Stream 1.0 (the operator's cap) has no ranges: a zero chunk. */
	if (!gpumig_stream_written(m))
		return gpumig_emit_vram(&migf->w, migf->buf, migf->buf_size, off, NULL,
					gpumig_block_size(m));
	return gpumig_emit_zero(&migf->w, migf->buf, migf->buf_size, off,
				(u64)run << m->geo.block_shift);
}

/* ---- post-copy (postcopy.c) ------------------------------------------- */

/*
 * Blocks one manifest section covers: 1024 (a 128-byte bitmap, 64 MiB of
 * VRAM at 64 KiB blocks), so that a range without an owed block, which
 * needs no section, is not large.  A 16 GiB device's manifest was one
 * 32 KiB bitmap written, checked and read inside the stop; a few owed
 * runs now cost a few sections.
 */
#define GPUMIG_OWED_CHUNK	1024UL

static unsigned long gpumig_owed_chunk(struct gpumig_mig_file *migf)
{
	size_t room = migf->buf_size - sizeof(struct gpumig_sec_hdr) -
		      sizeof(struct gpumig_wire_owed);

	return min3(GPUMIG_OWED_CHUNK, (unsigned long)GPUMIG_OWED_MAX_BLOCKS,
		    (unsigned long)((room * 8) & ~63UL));
}

/* What the manifest sections take at most: every one of them sent. */
static u64 gpumig_owed_bytes(struct gpumig_mig_file *migf)
{
	unsigned long nr = gpumig_nr_blocks(migf->m), chunk = gpumig_owed_chunk(migf);
	unsigned long full = nr / chunk, rest = nr % chunk;
	u64 n = (u64)full * gpumig_blob_section_size(sizeof(struct gpumig_wire_owed) +
						     chunk / 8);

	if (rest)
		n += gpumig_blob_section_size(sizeof(struct gpumig_wire_owed) +
					      DIV_ROUND_UP(rest, 8));
	return n;
}

/* The ranges the dirty zero blocks take: at most one run more than the blocks with data. */
static u64 gpumig_pc_zero_bytes(struct gpumig_mig_file *migf)
{
	struct gpumig_mig *m = migf->m;
	unsigned long nonzero, zero;

	m->ops->vram_dirty_count(m->priv, &nonzero, &zero);
	return (u64)min(zero, nonzero + 1) * gpumig_zero_section_size();
}

/*
 * After the announcement, what the stop adds for VRAM: a range per run of
 * zero blocks still dirty and the manifest; the blocks with data are
 * owed, not carried.
 */
static u64 gpumig_pc_stop_bytes(struct gpumig_mig_file *migf)
{
	u64 n = 0;

	if (!migf->vram_done || migf->pc_next < gpumig_nr_blocks(migf->m))
		n = gpumig_pc_zero_bytes(migf);
	return n + gpumig_owed_bytes(migf);
}

/* Pre-copy of a post-copy stream: what its one pass has still to send. */
static u64 gpumig_pc_precopy_bytes(struct gpumig_mig_file *migf)
{
	return migf->pc_zeroed || !gpumig_tracks(migf->m) ? 0 : gpumig_pc_zero_bytes(migf);
}

/* Does the operator want post-copy (migration/postcopy), and can the device? */
static bool gpumig_pc_wanted(struct gpumig_mig_file *migf)
{
	return !migf->pc && !migf->pc_refused && READ_ONCE(migf->m->pc_enabled) &&
	       gpumig_pc_source_possible(migf->m);
}

/*
 * Pre-copy: announce post-copy into @buf (@room bytes), when the saving
 * file is made or at the first read after the operator asked for it.
 * Return: bytes of the section, 0 when not announcing, or -errno.
 */
static ssize_t gpumig_produce_announce(struct gpumig_mig_file *migf, u8 *buf, size_t room)
{
	struct gpumig_mig *m = migf->m;
	struct gpumig_wire_postcopy pc = {};
	unsigned long chunk = gpumig_owed_chunk(migf);
	size_t len;

	if (!gpumig_pc_wanted(migf))
		return 0;
	migf->pc_owed = bitmap_zalloc(gpumig_nr_blocks(m), GFP_KERNEL_ACCOUNT);
	len = sizeof(struct gpumig_wire_owed) + chunk / 8;
	migf->pc_payload = kvzalloc(len, GFP_KERNEL_ACCOUNT);
	if (!migf->pc_owed || !migf->pc_payload)
		return -ENOMEM;
	gpumig_pc_new_token(migf->pc_token);
	memcpy(pc.token, migf->pc_token, sizeof(pc.token));
	migf->pc = true;
	/* Its pass starts over from the first block (see gpumig_produce_pc_vram()). */
	migf->cursor = 0;
	/* One migration's: the next one copies VRAM first unless asked again. */
	WRITE_ONCE(m->pc_enabled, false);
	/* Nothing of VRAM goes before the stop any more: no initial data is owed. */
	migf->initial_left = 0;
	dev_info(m->vdev->dev, "post-copy: announced; VRAM with data follows the stop\n");
	return gpumig_emit_blob(&migf->w, buf, room, GPUMIG_SEC_POSTCOPY, &pc, sizeof(pc));
}

/* A post-copy stream: @blk's data is owed, not sent. */
static void gpumig_pc_owe(struct gpumig_mig_file *migf, unsigned long blk)
{
	__set_bit(blk, migf->pc_owed);
	migf->pc_owed_end = max(migf->pc_owed_end, blk + 1);
}

/*
 * A post-copy stream: @nr blocks from @blk go as zeroes, owed no more (a
 * block with data when pre-copy looked, zeroed since).
 */
static ssize_t gpumig_pc_zero(struct gpumig_mig_file *migf, unsigned long blk,
			      unsigned long nr)
{
	struct gpumig_mig *m = migf->m;

	bitmap_clear(migf->pc_owed, blk, nr);
	return gpumig_emit_zero(&migf->w, migf->buf, migf->buf_size,
				(u64)blk << m->geo.block_shift, (u64)nr << m->geo.block_shift);
}

/* The next manifest section, or 0 once all of it was produced. */
static ssize_t gpumig_produce_owed(struct gpumig_mig_file *migf)
{
	struct gpumig_wire_owed *o = (void *)migf->pc_payload;
	unsigned long nr = gpumig_nr_blocks(migf->m), first = migf->pc_next, n, i;
	u8 *map = migf->pc_payload + sizeof(*o);

	if (first >= nr)
		return 0;
	/*
	 * A range with no owed block needs no section (the destination owes
	 * nothing it was not told of); the last one always goes, so that the
	 * manifest is seen to be whole.
	 */
	for (;;) {
		n = min(nr - first, gpumig_owed_chunk(migf));
		if (first + n == nr)
			break;
		if (first >= migf->pc_owed_end) {
			/* Nothing owed from here: straight to the last one. */
			first += (nr - first - 1) / gpumig_owed_chunk(migf) *
				 gpumig_owed_chunk(migf);
			n = nr - first;
			break;
		}
		if (find_next_bit(migf->pc_owed, first + n, first) < first + n)
			break;
		first += n;
	}
	memcpy(o->token, migf->pc_token, sizeof(o->token));
	o->first = cpu_to_le64(first);
	o->nr_blocks = cpu_to_le64(n);
	if (gpumig_wire_bitmap_order() && !(first % 8)) {
		/* The bitmap's byte order is the wire's: a copy. */
		memcpy(map, (u8 *)migf->pc_owed + first / 8, DIV_ROUND_UP(n, 8));
		if (n % 8)
			map[n / 8] &= (1U << (n % 8)) - 1;
	} else {
		for (i = 0; i < n; i += 8)
			map[i / 8] = bitmap_get_value8(migf->pc_owed, first + i) &
				     (n - i >= 8 ? 0xff : (1U << (n - i)) - 1);
	}
	migf->pc_next = first + n;
	return gpumig_emit_blob(&migf->w, migf->buf, migf->buf_size, GPUMIG_SEC_OWED,
				o, sizeof(*o) + DIV_ROUND_UP(n, 8));
}

/*
 * VRAM of a post-copy stream, in two passes over the dirty blocks: one in
 * pre-copy, right after the announcement, and one at the stop.  Each sends
 * the dirty blocks that read zero as ranges and notes those with data
 * owed (not read: at the stop, reading them would sit in the downtime);
 * the stop's pass then sends the manifest.  The zero runs go before the
 * stop so that the stop's pass finds none but those the tenant made since
 * (on a VF each run costs the PF commands that take it, at the source and
 * at the destination); a backend that keeps a block dirty until it is
 * read (simgpu-pf with CAP_VRAM_COUNT) shows the stop's pass the owed
 * blocks again, a walk over its bitmap.  A block owed by the first pass
 * and zero at the stop goes as zeroes and is owed no more; one sent as
 * zeroes and written since is owed.  The second pass is the last word on
 * every block either pass saw: the source's VRAM is frozen from the stop
 * on.  Return: bytes, 0 at the end (of pre-copy's pass: nothing sent), or
 * -errno.
 */
static ssize_t gpumig_produce_pc_vram(struct gpumig_mig_file *migf)
{
	unsigned long looked = 0;
	long blk, run;
	bool zero;

	for (;;) {
		if (migf->ahead >= 0) {
			/*
			 * A block taken off the dirty set and kept (it ended a
			 * zero run): on its own, wherever the cursor is.
			 */
			blk = migf->ahead;
			migf->ahead = -1;
			if (!migf->ahead_zero) {
				gpumig_pc_owe(migf, blk);
				continue;
			}
			return gpumig_pc_zero(migf, blk, 1);
		}
		blk = gpumig_next_dirty(migf, migf->cursor, &zero);
		if (blk == -ENOENT)
			return migf->state == GPUMIG_FILE_PRECOPY ? 0 : gpumig_produce_owed(migf);
		if (blk < 0)
			return blk;
		if (zero) {
			run = gpumig_zero_run(migf, blk);
			if (run < 0)
				return run;
			migf->cursor = blk + run;
			return gpumig_pc_zero(migf, blk, run);
		}
		gpumig_pc_owe(migf, blk);
		migf->cursor = blk + 1;
		if (!(++looked % GPUMIG_RESCHED_BLOCKS))
			cond_resched();
	}
}

/*
 * The device is still and its VRAM sent: the next section of the tail,
 * its vendor sections in order, then each part of its architectural state.
 * Return: bytes, or -errno.
 */
static ssize_t gpumig_produce_tail(struct gpumig_mig_file *migf)
{
	struct gpumig_mig *m = migf->m;
	const struct gpumig_geometry *g = &m->geo;
	ssize_t n;

	if (!migf->in_arch && m->ops->vendor_save) {
		if (migf->next >= GPUMIG_VENDOR_SECTIONS_MAX)
			return -E2BIG;
		n = m->ops->vendor_save(m->priv, migf->next, migf->tmp, g->vendor_max);
		if (n >= 0) {
			if (WARN_ON_ONCE(n > g->vendor_max))
				return -EOVERFLOW;
			return gpumig_emit_vendor(&migf->w, migf->buf, migf->buf_size,
						  migf->next++, migf->tmp, n);
		}
		if (n != -ENOENT)
			return n;
	}
	if (!migf->in_arch) {
		migf->in_arch = true;
		migf->next = 0;
	}
	n = m->ops->arch_save(m->priv, migf->next, migf->tmp, g->arch_part_max);
	if (n < 0)
		return n;
	if (WARN_ON_ONCE(n > g->arch_part_max))
		return -EOVERFLOW;
	if (gpumig_arch_whole(m))
		n = gpumig_emit_blob(&migf->w, migf->buf, migf->buf_size, GPUMIG_SEC_ARCH,
				     migf->tmp, n);
	else
		n = gpumig_emit_arch_part(&migf->w, migf->buf, migf->buf_size, migf->next,
					  g->arch_parts, migf->tmp, n);
	if (n >= 0 && ++migf->next == g->arch_parts)
		migf->state = GPUMIG_FILE_END;
	return n;
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
		n = gpumig_produce_announce(migf, migf->buf, migf->buf_size);
		if (n)
			return gpumig_produced(migf, n);
		if (migf->pc) {
			/* Its zero runs go now, in one pass; VRAM with data after the stop. */
			if (migf->pc_zeroed)
				return -ENOMSG;
			n = gpumig_produce_pc_vram(migf);
			if (n)
				return gpumig_produced(migf, n);
			migf->pc_zeroed = true;
			return -ENOMSG;
		}
		fallthrough;
	case GPUMIG_FILE_STOPCOPY:
		if (!migf->vram_done) {
			n = migf->pc ? gpumig_produce_pc_vram(migf) : gpumig_produce_vram(migf);
			if (n)
				return gpumig_produced(migf, n);
			if (migf->state == GPUMIG_FILE_PRECOPY)
				return -ENOMSG;
			/* Everything else is still: the device's own sections, the state last. */
			migf->vram_done = true;
			migf->tail_left = gpumig_tail_bytes(m);
		}
		n = gpumig_produce_tail(migf);
		if (n > 0)
			migf->tail_left -= min_t(u64, migf->tail_left, n);
		return gpumig_produced(migf, n);
	case GPUMIG_FILE_END:
		n = gpumig_emit_end(&migf->w, migf->buf, migf->buf_size);
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
 * For auto-converge's drain rate: the time from a read that found nothing
 * to give to the next that found data is not the VMM's to drain.
 */
static void gpumig_file_idle(struct gpumig_mig_file *migf, bool idle)
{
	u64 now;

	lockdep_assert_held(&migf->lock);
	if (idle == !!migf->idle_since)
		return;
	now = ktime_get_ns();
	if (idle) {
		migf->idle_since = now;
	} else {
		migf->idle_ns += now - migf->idle_since;
		migf->idle_since = 0;
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
	gpumig_file_idle(migf, ret == -ENOMSG);
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
		/*
		 * A post-copy stream sends its announcement and one pass of
		 * zero runs before the stop, nothing more.
		 */
		if (gpumig_buffered(migf) || gpumig_pc_wanted(migf) ||
		    (migf->pc && gpumig_pc_precopy_bytes(migf)) ||
		    (!migf->pc && gpumig_owed_vram_bytes(migf->m, false, 0)))
			mask = EPOLLIN | EPOLLRDNORM;
		else
			recheck = !migf->pc && !migf->m->ops->notifies_dirty;
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

/*
 * What the file would still produce: the dirty VRAM, the section being
 * read, and, once the device is (or, with @stopped, would be) stopped, the
 * architectural state and the end section.
 */
u64 gpumig_file_pending_locked(struct gpumig_mig_file *migf, bool stopped)
{
	struct gpumig_mig *m = migf->m;
	u64 n = gpumig_buffered(migf);

	lockdep_assert_held(&migf->lock);
	switch (migf->state) {
	case GPUMIG_FILE_PRECOPY:
		if (migf->pc)
			return n + (stopped ? gpumig_pc_stop_bytes(migf) + gpumig_tail_bytes(m) +
					      gpumig_end_bytes() : gpumig_pc_precopy_bytes(migf));
		if (stopped)
			return n + gpumig_owed_vram_bytes(m, true, 0) + gpumig_tail_bytes(m) +
			       gpumig_end_bytes();
		return n + gpumig_owed_vram_bytes(m, false, 0);
	case GPUMIG_FILE_STOPCOPY:
		if (migf->vram_done)
			return n + migf->tail_left + gpumig_end_bytes();
		if (migf->pc)
			return n + gpumig_pc_stop_bytes(migf) + gpumig_tail_bytes(m) +
			       gpumig_end_bytes();
		return n + gpumig_owed_vram_bytes(m, true, migf->cursor) + gpumig_tail_bytes(m) +
		       gpumig_end_bytes();
	case GPUMIG_FILE_END:
		return n + gpumig_end_bytes();
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
	return gpumig_head_bytes() + gpumig_owed_vram_bytes(m, true, 0) + gpumig_tail_bytes(m) +
	       gpumig_end_bytes();
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

static const struct file_operations gpumig_save_fops = {
	.owner = THIS_MODULE,
	.read_iter = gpumig_save_read,
	.poll = gpumig_save_poll,
	.unlocked_ioctl = gpumig_save_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = gpumig_file_release,
};

/*
 * The largest section the device makes (a VRAM block, a part of its
 * state, a vendor section, the head), and the largest the backend writes
 * into the scratch buffer.
 */
static size_t gpumig_save_buf_size(struct gpumig_mig *m)
{
	const struct gpumig_geometry *g = &m->geo;
	size_t n = gpumig_vram_section_size(gpumig_block_size(m), false);

	n = max(n, gpumig_arch_part_section_size(g->arch_part_max));
	n = max(n, gpumig_blob_section_size(g->arch_part_max));
	n = max(n, gpumig_vendor_section_size(g->vendor_max));
	return max_t(size_t, n, gpumig_head_bytes());
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
	struct gpumig_compat compat;
	struct gpumig_mig_file *migf;
	ssize_t n, len;
	bool pc;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	migf = gpumig_file_alloc(m, max(m->geo.arch_part_max, m->geo.vendor_max));
	if (!migf)
		return ERR_PTR(-ENOMEM);
	migf->buf_size = gpumig_save_buf_size(m);
	migf->buf = kvmalloc(migf->buf_size, GFP_KERNEL_ACCOUNT);
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
	/* One post-copy's hold at a time: a later one copies VRAM before the stop. */
	migf->pc_refused = gpumig_pc_source_holding(m);
	/* Post-copy asked for before pre-copy: announced right after the header. */
	pc = !stop_copy && gpumig_pc_wanted(migf);
	compat = m->compat;
	compat.stream_minor = pc ? GPUMIG_PC_STREAM_MINOR : gpumig_stream_written(m);
	n = gpumig_emit_header(&migf->w, migf->buf, migf->buf_size, &compat);
	if (n >= 0) {
		len = gpumig_emit_blob(&migf->w, migf->buf + n, migf->buf_size - n,
				       GPUMIG_SEC_NOTE, gpumig_producer_note,
				       sizeof(gpumig_producer_note) - 1);
		n = len < 0 ? len : n + len;
	}
	if (n >= 0) {
		char note[GPUMIG_VRAM_DATA_NOTE_LEN + 1];
		unsigned long data = 0, zero;

		/* What the first pass will send: a destination backs it ahead. */
		if (gpumig_tracks(m))
			m->ops->vram_dirty_count(m->priv, &data, &zero);
		snprintf(note, sizeof(note), GPUMIG_NOTE_VRAM_DATA "%020lu", data);
		len = gpumig_emit_blob(&migf->w, migf->buf + n, migf->buf_size - n,
				       GPUMIG_SEC_NOTE, note, GPUMIG_VRAM_DATA_NOTE_LEN);
		n = len < 0 ? len : n + len;
	}
	if (n >= 0 && pc) {
		len = gpumig_produce_announce(migf, migf->buf + n, migf->buf_size - n);
		n = len < 0 ? len : n + len;
		migf->initial_left = n;
	}
	ret = gpumig_produced(migf, n);
	if (!ret)
		ret = gpumig_file_open(migf, "gpumig_save", &gpumig_save_fops, O_RDONLY);
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
 * gpumig_file_stop_copy() - the device stopped: the saving file finishes
 * @migf: saving file in PRE_COPY
 */
void gpumig_file_stop_copy(struct gpumig_mig_file *migf)
{
	mutex_lock(&migf->lock);
	if (migf->state == GPUMIG_FILE_PRECOPY) {
		migf->state = GPUMIG_FILE_STOPCOPY;
		/* Post-copy: every block still dirty is looked at once, from the first. */
		if (migf->pc)
			migf->cursor = 0;
	}
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
