// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration data files: the resuming side (RESUMING).  The file
 * feeds the hostile-input parser (stream_parse.c), puts VRAM in place as
 * chunks check out, and installs the architectural state only when the
 * whole stream has arrived and checked out.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/anon_inodes.h>
#include <linux/crc32.h>
#include <linux/ctype.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/overflow.h>
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

/* A resume write is fed to the parser in pieces of this size. */
#define GPUMIG_WRITE_CHUNK	SZ_64K
/* Largest unknown optional section a destination skips. */
#define GPUMIG_MAX_SKIP		4096

/* ---- resuming ----------------------------------------------------------- */

static int gpumig_rx_header(void *priv, u16 major, u16 minor,
			    const struct gpumig_compat *src)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;
	char why[GPUMIG_MSG_LEN];
	int ret;

	ret = gpumig_compat_check(src, &m->compat, why, sizeof(why));
	if (!ret && m->ops->compat_check) {
		snprintf(why, sizeof(why), "the device refused it");
		ret = m->ops->compat_check(m->priv, src, why, sizeof(why));
	}
	if (ret)
		gpumig_parser_set_error(&migf->parser, ret, "incompatible source: %s", why);
	return ret;
}

static int gpumig_rx_vram(void *priv, u64 off, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;

	if (migf->tail_seen || migf->pc_next)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"VRAM chunk at 0x%llx after the device's state or the owed blocks", off);
	if (trace_gpumig_vram_enabled())
		trace_gpumig_vram(migf->m->vdev->dev, false, off, len, !data,
				  data ? crc32_le(~0U, data, len) : 0);
	return migf->m->ops->vram_write(migf->m->priv, off, data, len);
}

/* The backend put a chunk's data into VRAM itself, and it checked out. */
static int gpumig_rx_vram_placed(void *priv, u64 off, u32 len, u32 crc)
{
	struct gpumig_mig_file *migf = priv;

	/* As gpumig_rx_vram(); the write path offers no room then. */
	if (migf->tail_seen || migf->pc_next)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"VRAM chunk at 0x%llx after the device's state or the owed blocks", off);
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

	if (migf->tail_seen || migf->pc_next)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"zero range at 0x%llx after the device's state or the owed blocks", off);
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

/* Part @part of the state, kept at its slot until the end section. */
static int gpumig_rx_keep_part(struct gpumig_mig_file *migf, u32 part, const void *data,
			       u32 len)
{
	const struct gpumig_geometry *g = &migf->m->geo;

	if (part != migf->arch_parts)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"architectural state part %u arrived where part %u was due",
			part, migf->arch_parts);
	/* The parser bounds each part by the device's largest. */
	memcpy(migf->arch + (size_t)part * g->arch_part_max, data, len);
	migf->arch_len[part] = len;
	migf->arch_parts++;
	migf->tail_seen = true;
	return 0;
}

static int gpumig_rx_arch(void *priv, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;
	u32 nr = migf->m->geo.arch_parts;

	if (migf->arch_parts)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"second architectural state section");
	if (nr != 1)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"architectural state in one section; this device's is in %u parts", nr);
	if (!len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"empty architectural state section");
	return gpumig_rx_keep_part(migf, 0, data, len);
}

static int gpumig_rx_arch_part(void *priv, u16 part, u16 nr_parts, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;
	u32 nr = migf->m->geo.arch_parts;

	if (nr_parts != nr)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"architectural state in %u parts; this device's is in %u",
			nr_parts, nr);
	return gpumig_rx_keep_part(migf, part, data, len);
}

/* A vendor section goes to the device at once, in order, before the state. */
static int gpumig_rx_vendor(void *priv, u32 index, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;
	int ret;

	if (!m->ops->vendor_restore)
		return gpumig_parser_set_error(&migf->parser, -EPROTONOSUPPORT,
			"vendor section %u: this device has none", index);
	if (migf->arch_parts)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"vendor section %u after the architectural state", index);
	if (index != migf->next)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"vendor section %u arrived where section %u was due", index, migf->next);
	migf->tail_seen = true;
	ret = m->ops->vendor_restore(m->priv, index, data, len);
	if (ret)
		return gpumig_parser_set_error(&migf->parser, ret,
			"the device refused vendor section %u (%d)", index, ret);
	migf->next++;
	return 0;
}

/* The source defers VRAM past the stop: refused here unless the device can run without it. */
static int gpumig_rx_postcopy(void *priv, const u8 *token)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;

	if (!gpumig_pc_dest_possible(m))
		return gpumig_parser_set_error(&migf->parser, -EPROTONOSUPPORT,
			"post-copy: this destination cannot run with VRAM still owed");
	if (migf->pc)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"second post-copy section");
	migf->pc_owed = bitmap_zalloc(m->compat.vram_size >> m->geo.block_shift,
				      GFP_KERNEL_ACCOUNT);
	if (!migf->pc_owed)
		return -ENOMEM;
	memcpy(migf->pc_token, token, GPUMIG_TOKEN_LEN);
	if (gpumig_pc_dest_prepare(m, migf))
		return -ENOMEM;
	migf->pc = true;
	return 0;
}

/* Part of the manifest: blocks @first to @first + @nr - 1, in order. */
static int gpumig_rx_owed(void *priv, const u8 *token, u64 first, u64 nr, const u8 *map)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;
	u64 blocks = m->compat.vram_size >> m->geo.block_shift, i;

	if (!migf->pc)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"owed blocks in a stream that announced no post-copy");
	if (memcmp(token, migf->pc_token, GPUMIG_TOKEN_LEN))
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"owed blocks of another post-copy session");
	if (migf->tail_seen)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"owed blocks after the device's own state");
	/* In order, no overlap; a range no section covers owes nothing. */
	if (first < migf->pc_next || first >= blocks || nr > blocks - first)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"owed blocks %llu-%llu out of order (from block %lu on) or past block %llu",
			first, first + nr - 1, migf->pc_next, blocks - 1);
	if (gpumig_wire_bitmap_order() && !(first % 8)) {
		/* The wire's byte order is the bitmap's: a copy (16 GiB: 32 KiB). */
		memcpy((u8 *)migf->pc_owed + first / 8, map, DIV_ROUND_UP(nr, 8));
		/*
		 * Bits past @nr in the last byte are not the sender's to set
		 * (that byte lies inside the bitmap: @first is on a byte).
		 */
		if (nr % 8)
			bitmap_clear(migf->pc_owed, first + nr, 8 - nr % 8);
	} else {
		/*
		 * Bit by bit: eight at a time from an unaligned @first would
		 * write past the last block, past the bitmap's last word
		 * when the device's block count is a multiple of its bits.
		 */
		for (i = 0; i < nr; i++)
			if (map[i / 8] & BIT(i % 8))
				__set_bit(first + i, migf->pc_owed);
	}
	migf->pc_next = first + nr;
	return 0;
}

/* Everything arrived and checked out: install the architectural state, last. */
static int gpumig_rx_end(void *priv)
{
	struct gpumig_mig_file *migf = priv;
	struct gpumig_mig *m = migf->m;
	const struct gpumig_geometry *g = &m->geo;
	u32 part;
	int ret;

	if (!migf->arch_parts)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"stream ended without architectural state");
	if (migf->pc && migf->pc_next != m->compat.vram_size >> m->geo.block_shift)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"post-copy stream ended before its manifest of owed blocks reached the last block");
	if (migf->arch_parts != g->arch_parts)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"stream ended after %u of %u parts of the architectural state",
			migf->arch_parts, g->arch_parts);
	for (part = 0; part < g->arch_parts; part++) {
		ret = m->ops->arch_restore(m->priv, part,
					   migf->arch + (size_t)part * g->arch_part_max,
					   migf->arch_len[part]);
		if (ret && g->arch_parts == 1)
			return gpumig_parser_set_error(&migf->parser, ret,
				"device refused the architectural state (%d)", ret);
		if (ret)
			return gpumig_parser_set_error(&migf->parser, ret,
				"device refused part %u of the architectural state (%d)",
				part, ret);
	}
	migf->state = GPUMIG_FILE_RESTORED;
	return 0;
}

/*
 * A note: the producer's "gpumig/<release>" is kept for reports when it is
 * plain text of the expected characters; every other note is ignored.
 */
/* "vram_data=N": the source's blocks with data; the backend may back them ahead. */
static void gpumig_rx_vram_data(struct gpumig_mig_file *migf, const char *text, u32 len)
{
	struct gpumig_mig *m = migf->m;
	char v[GPUMIG_NOTE_MAX + 1];
	u64 blocks;

	memcpy(v, text, len);
	v[len] = '\0';
	if (!m->ops->vram_prepare || kstrtou64(v, 10, &blocks) ||
	    blocks > m->compat.vram_size >> m->geo.block_shift)
		return;
	m->ops->vram_prepare(m->priv, blocks << m->geo.block_shift);
}

static void gpumig_rx_note(void *priv, const char *text, u32 len)
{
	struct gpumig_mig_file *migf = priv;
	const size_t k = strlen(GPUMIG_NOTE_PRODUCER), d = strlen(GPUMIG_NOTE_VRAM_DATA);
	char v[GPUMIG_NOTE_MAX + 1];
	u32 i;

	if (len > d && !memcmp(text, GPUMIG_NOTE_VRAM_DATA, d)) {
		gpumig_rx_vram_data(migf, text + d, len - d);
		return;
	}
	if (len <= k || memcmp(text, GPUMIG_NOTE_PRODUCER, k))
		return;
	for (i = k; i < len; i++) {
		char c = text[i];

		/* ASCII only: the kernel's isalnum() takes Latin-1 letters */
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || (c && strchr("._+-/~", c))))
			return;
	}
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
	.arch_part = gpumig_rx_arch_part,
	.vendor = gpumig_rx_vendor,
	.end = gpumig_rx_end,
	.postcopy = gpumig_rx_postcopy,
	.owed = gpumig_rx_owed,
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
			room = place && migf->m->ops->vram_write_iter && !migf->tail_seen &&
			       !migf->pc_next ?
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
	if (!ret && migf->pc) {
		/* The device runs without the owed blocks: they follow, by the mover. */
		ret = gpumig_pc_dest_begin(migf->m, migf);
		if (ret == -EEXIST) {
			gpumig_parser_set_error(&migf->parser, ret, "%s",
						"post-copy: session token already in use on this host");
			gpumig_resume_refused(migf, ret);
		} else if (ret) {
			gpumig_parser_set_error(&migf->parser, ret,
						"post-copy: the device cannot run with VRAM owed (%d)",
						ret);
			gpumig_resume_refused(migf, ret);
		}
		goto out;
	}
	if (!ret) {
		/* Blocks a post-copy into this device lost are this stream's now. */
		ret = gpumig_pc_dest_replaced(migf->m);
		if (ret)
			gpumig_parser_set_error(&migf->parser, ret,
						"the blocks an earlier post-copy lost stay marked (%d)",
						ret);
	}
	if (ret)
		gpumig_resume_refused(migf, ret);
out:
	mutex_unlock(&migf->lock);
	return ret;
}

static const struct file_operations gpumig_resume_fops = {
	.owner = THIS_MODULE,
	.write_iter = gpumig_resume_write,
	.release = gpumig_file_release,
};

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
	const struct gpumig_geometry *g = &m->geo;
	struct gpumig_parser_limits lim = {
		.vram_size = m->compat.vram_size,
		.max_chunk = gpumig_block_size(m),
		.max_arch = g->arch_part_max,
		.max_vendor = g->vendor_max,
		.max_skip = GPUMIG_MAX_SKIP,
	};
	struct gpumig_mig_file *migf;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	migf = gpumig_file_alloc(m, GPUMIG_WRITE_CHUNK);
	if (!migf)
		return ERR_PTR(-ENOMEM);
	/* The geometry bounds both (GPUMIG_ARCH_TOTAL_MAX): nothing the stream says. */
	migf->arch = kvmalloc(array_size(g->arch_parts, g->arch_part_max), GFP_KERNEL_ACCOUNT);
	migf->arch_len = kcalloc(g->arch_parts, sizeof(*migf->arch_len), GFP_KERNEL_ACCOUNT);
	gpumig_set_source(m, "");	/* until this stream says */
	ret = migf->arch && migf->arch_len ?
	      gpumig_parser_init(&migf->parser, &lim, &gpumig_rx_ops, migf) : -ENOMEM;
	if (ret) {
		gpumig_file_free(migf);
		return ERR_PTR(ret);
	}
	ret = gpumig_file_open(migf, "gpumig_resume", &gpumig_resume_fops, O_WRONLY);
	if (ret)
		return ERR_PTR(ret);
	migf->state = GPUMIG_FILE_RESUMING;
	atomic64_set(&m->stats.resumed_bytes, 0);
	return migf;
}
