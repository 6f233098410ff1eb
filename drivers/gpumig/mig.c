// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration engine: the VFIO migration uAPI v2 state machine and
 * the migration data files, for any backend (struct gpumig_backend_ops).
 *
 * The step function sees single arcs (the VFIO core computes the path)
 * and is a flat list of "if (cur == X && new == Y)" cases.  The saving
 * file produces the stream lazily, one section per refill, so its memory
 * is one section whatever the device's size; the resuming file feeds the
 * hostile-input parser and installs architectural state only when the
 * whole stream has arrived and checked out.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <kunit/visibility.h>

#include <gpumig/migration.h>

#define GPUMIG_SECTION_BUF	(sizeof(struct gpumig_sec_hdr) + \
				 sizeof(struct gpumig_wire_vram) + GPUMIG_BLOCK_SIZE)
#define GPUMIG_WRITE_CHUNK	(64 * 1024)

/**
 * struct gpumig_mig_file - one migration data fd
 * @filp: the file
 * @m: its device, while not @disabled
 * @lock: guards every field below
 * @disabled: the state machine left this file's state: reads and writes fail
 * @err: saving: the stream broke (a backend read failed); every later read
 *	fails with it, since a block already taken off the dirty set is lost
 * @stop_copy: saving: the device is stopped, produce the final part
 * @w: saving: stream writer
 * @buf: saving: encoded bytes not yet read
 * @buf_len: bytes in @buf
 * @buf_pos: bytes of @buf already read
 * @tmp: saving: one block or the architectural state
 * @cursor: saving: next VRAM block to look at
 * @hdr_sent: saving: the header section was produced
 * @arch_sent: saving: the architectural state was produced
 * @end_sent: saving: the end section was produced
 * @initial_left: saving: bytes of the first full pass not yet read
 * @initial_done: saving: the first full pass is over
 * @round_bytes: saving: bytes read since the last pre-copy round ended
 * @parser: resuming: stream parser
 * @arch: resuming: architectural state, held until the end section
 * @arch_len: its length, or 0 while none arrived
 * @complete: resuming: a whole, valid stream arrived and was installed
 */
struct gpumig_mig_file {
	struct file *filp;
	struct gpumig_mig *m;
	struct mutex lock;	/* see above */
	bool disabled;
	int err;

	bool stop_copy;
	struct gpumig_writer w;
	u8 *buf;
	size_t buf_len;
	size_t buf_pos;
	u8 *tmp;
	unsigned long cursor;
	bool hdr_sent;
	bool arch_sent;
	bool end_sent;
	u64 initial_left;
	bool initial_done;
	u64 round_bytes;

	struct gpumig_parser parser;
	u8 *arch;
	size_t arch_len;
	bool complete;
};

static size_t gpumig_vram_bytes(unsigned long nonzero, unsigned long zero)
{
	return nonzero * gpumig_vram_section_size(GPUMIG_BLOCK_SIZE, false) +
	       zero * gpumig_vram_section_size(GPUMIG_BLOCK_SIZE, true);
}

static size_t gpumig_hdr_bytes(void)
{
	return gpumig_blob_section_size(sizeof(struct gpumig_wire_header));
}

static size_t gpumig_end_bytes(void)
{
	return gpumig_blob_section_size(sizeof(struct gpumig_wire_end));
}

/* ---- saving ----------------------------------------------------------- */

/* Produce the next section into migf->buf: 0, -ENOMSG (nothing now), or EOF. */
#define GPUMIG_EOF	1

static int gpumig_produce(struct gpumig_mig_file *migf)
{
	struct gpumig_mig *m = migf->m;
	ssize_t n;
	bool zero;
	long blk;
	int ret;

	migf->buf_pos = 0;
	migf->buf_len = 0;
	if (!migf->hdr_sent) {
		n = gpumig_emit_header(&migf->w, migf->buf, GPUMIG_SECTION_BUF, &m->compat);
		if (n < 0)
			return n;
		migf->hdr_sent = true;
		goto out;
	}

	blk = m->ops->vram_next_dirty(m, migf->cursor, &zero);
	if (blk == -ENOENT && migf->cursor) {
		/* The first pass is over; later passes resend what changed. */
		migf->initial_done = true;
		migf->initial_left = 0;
		migf->cursor = 0;
		blk = m->ops->vram_next_dirty(m, 0, &zero);
	}
	if (blk >= 0) {
		u64 off = (u64)blk * GPUMIG_BLOCK_SIZE;

		if (!zero) {
			ret = m->ops->vram_read(m, off, migf->tmp, GPUMIG_BLOCK_SIZE);
			if (ret)
				return ret;
			zero = !memchr_inv(migf->tmp, 0, GPUMIG_BLOCK_SIZE);
		}
		n = gpumig_emit_vram(&migf->w, migf->buf, GPUMIG_SECTION_BUF, off,
				     zero ? NULL : migf->tmp, GPUMIG_BLOCK_SIZE);
		if (n < 0)
			return n;
		migf->cursor = blk + 1;
		goto out;
	}
	if (blk != -ENOENT)
		return blk;

	migf->initial_done = true;
	migf->initial_left = 0;
	if (!migf->stop_copy)
		return -ENOMSG;

	if (!migf->arch_sent) {
		n = m->ops->arch_save(m, migf->tmp, GPUMIG_ARCH_MAX);
		if (n < 0)
			return n;
		n = gpumig_emit_blob(&migf->w, migf->buf, GPUMIG_SECTION_BUF,
				     GPUMIG_SEC_ARCH, migf->tmp, n);
		if (n < 0)
			return n;
		migf->arch_sent = true;
		goto out;
	}
	if (!migf->end_sent) {
		n = gpumig_emit_end(&migf->w, migf->buf, GPUMIG_SECTION_BUF);
		if (n < 0)
			return n;
		migf->end_sent = true;
		m->migrated_away = true;
		goto out;
	}
	return GPUMIG_EOF;
out:
	migf->buf_len = n;
	if (!migf->initial_done)
		migf->initial_left -= min_t(u64, migf->initial_left, n);
	return 0;
}

static ssize_t gpumig_save_read(struct kiocb *iocb, struct iov_iter *to)
{
	struct gpumig_mig_file *migf = iocb->ki_filp->private_data;
	size_t len = iov_iter_count(to);
	ssize_t done = 0;
	int ret = 0;

	mutex_lock(&migf->lock);
	if (migf->disabled || migf->err) {
		done = migf->disabled ? -ENODEV : migf->err;
		goto out;
	}
	while (done < len) {
		size_t n;

		if (migf->buf_pos == migf->buf_len) {
			ret = gpumig_produce(migf);
			if (ret == GPUMIG_EOF)
				break;
			if (ret && ret != -ENOMSG) {
				dev_err(migf->m->vdev->dev, "migration stream broken: %d\n", ret);
				migf->err = ret;
			}
			if (ret == -ENOMSG && migf->round_bytes) {
				/* All that was ready is read: one pre-copy round. */
				atomic64_inc(&migf->m->stats.precopy_rounds);
				migf->round_bytes = 0;
			}
			if (ret) {
				if (!done)
					done = ret;
				break;
			}
		}
		n = min(len - done, migf->buf_len - migf->buf_pos);
		if (copy_to_iter(migf->buf + migf->buf_pos, n, to) != n) {
			done = -EFAULT;
			break;
		}
		migf->buf_pos += n;
		done += n;
		if (migf->stop_copy) {
			atomic64_add(n, &migf->m->stats.stopcopy_bytes);
		} else {
			atomic64_add(n, &migf->m->stats.precopy_bytes);
			migf->round_bytes += n;
		}
	}
out:
	mutex_unlock(&migf->lock);
	return done;
}

/**
 * gpumig_mig_precopy_info() - VFIO_MIG_GET_PRECOPY_INFO of a saving file
 * @filp: the data file
 * @info: filled with initial_bytes (what remains of the first full pass)
 *	and dirty_bytes (what changed since and is not read yet)
 *
 * Return: 0, or -EINVAL outside PRE_COPY.
 */
VISIBLE_IF_KUNIT int gpumig_mig_precopy_info(struct file *filp,
					     struct vfio_precopy_info *info)
{
	struct gpumig_mig_file *migf = filp->private_data;
	unsigned long nonzero, zero;
	int ret = 0;
	u64 dirty;

	mutex_lock(&migf->lock);
	if (migf->disabled || migf->stop_copy) {
		ret = -EINVAL;
		goto out;
	}
	migf->m->ops->vram_dirty_count(migf->m, &nonzero, &zero);
	dirty = gpumig_vram_bytes(nonzero, zero) + (migf->buf_len - migf->buf_pos);
	info->initial_bytes = migf->initial_left;
	info->dirty_bytes = dirty > migf->initial_left ? dirty - migf->initial_left : 0;
	info->flags = 0;
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
	int ret;

	ret = gpumig_compat_check(src, &m->compat, m->why, sizeof(m->why));
	if (ret) {
		gpumig_parser_set_error(&migf->parser, ret, "incompatible source: %s", m->why);
		dev_err(m->vdev->dev, "migration refused: %s\n", m->why);
	}
	return ret;
}

static int gpumig_rx_vram(void *priv, u64 off, const void *data, u32 len)
{
	struct gpumig_mig_file *migf = priv;

	if (migf->arch_len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"VRAM chunk at 0x%llx after the architectural state", off);
	return migf->m->ops->vram_write(migf->m, off, data, len);
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
	int ret;

	if (!migf->arch_len)
		return gpumig_parser_set_error(&migf->parser, -EINVAL,
			"stream ended without architectural state");
	ret = migf->m->ops->arch_restore(migf->m, migf->arch, migf->arch_len);
	if (ret)
		return gpumig_parser_set_error(&migf->parser, ret,
			"device refused the architectural state (%d)", ret);
	migf->complete = true;
	return 0;
}

static const struct gpumig_parser_ops gpumig_rx_ops = {
	.header = gpumig_rx_header,
	.vram = gpumig_rx_vram,
	.arch = gpumig_rx_arch,
	.work = gpumig_rx_work,
	.end = gpumig_rx_end,
};

static ssize_t gpumig_resume_write(struct kiocb *iocb, struct iov_iter *from)
{
	struct gpumig_mig_file *migf = iocb->ki_filp->private_data;
	size_t len = iov_iter_count(from);
	ssize_t done = 0, ret;

	mutex_lock(&migf->lock);
	if (migf->disabled) {
		done = -ENODEV;
		goto out;
	}
	while (done < len) {
		size_t n = min_t(size_t, len - done, GPUMIG_WRITE_CHUNK);

		if (copy_from_iter(migf->tmp, n, from) != n) {
			done = -EFAULT;
			break;
		}
		ret = gpumig_parser_feed(&migf->parser, migf->tmp, n);
		if (ret >= 0)
			atomic64_add(n, &migf->m->stats.resumed_bytes);
		if (ret < 0) {
			dev_err_ratelimited(migf->m->vdev->dev, "migration stream refused: %s\n",
					    gpumig_parser_error(&migf->parser));
			strscpy(migf->m->why, gpumig_parser_error(&migf->parser),
				sizeof(migf->m->why));
			done = ret;
			break;
		}
		done += n;
	}
out:
	mutex_unlock(&migf->lock);
	return done;
}

/* ---- files -------------------------------------------------------------- */

static void gpumig_file_free(struct gpumig_mig_file *migf)
{
	if (migf->parser.buf)
		gpumig_parser_destroy(&migf->parser);
	kvfree(migf->buf);
	kvfree(migf->tmp);
	kvfree(migf->arch);
	mutex_destroy(&migf->lock);
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
	.unlocked_ioctl = gpumig_save_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.release = gpumig_file_release,
};

static const struct file_operations gpumig_resume_fops = {
	.owner = THIS_MODULE,
	.write_iter = gpumig_resume_write,
	.release = gpumig_file_release,
};

static struct gpumig_mig_file *gpumig_file_new(struct gpumig_mig *m, bool save)
{
	struct gpumig_mig_file *migf;
	int ret = -ENOMEM;

	migf = kzalloc(sizeof(*migf), GFP_KERNEL_ACCOUNT);
	if (!migf)
		return ERR_PTR(-ENOMEM);
	mutex_init(&migf->lock);
	migf->m = m;
	if (save) {
		atomic64_set(&m->stats.precopy_rounds, 0);
		atomic64_set(&m->stats.precopy_bytes, 0);
		atomic64_set(&m->stats.stopcopy_bytes, 0);
	} else {
		atomic64_set(&m->stats.resumed_bytes, 0);
	}
	migf->tmp = kvmalloc(max(GPUMIG_BLOCK_SIZE, GPUMIG_ARCH_MAX), GFP_KERNEL_ACCOUNT);
	if (!migf->tmp)
		goto err;
	if (save) {
		unsigned long nonzero, zero;

		migf->buf = kvmalloc(GPUMIG_SECTION_BUF, GFP_KERNEL_ACCOUNT);
		if (!migf->buf)
			goto err;
		gpumig_writer_init(&migf->w);
		m->ops->vram_track(m, true);
		m->ops->vram_dirty_count(m, &nonzero, &zero);
		migf->initial_left = gpumig_hdr_bytes() + gpumig_vram_bytes(nonzero, zero);
	} else {
		struct gpumig_parser_limits lim = {
			.vram_size = m->compat.vram_size,
			.max_chunk = GPUMIG_BLOCK_SIZE,
			.max_arch = GPUMIG_ARCH_MAX,
			.max_work = 0,
			.max_skip = 4096,
		};

		migf->arch = kvmalloc(GPUMIG_ARCH_MAX, GFP_KERNEL_ACCOUNT);
		if (!migf->arch)
			goto err;
		ret = gpumig_parser_init(&migf->parser, &lim, &gpumig_rx_ops, migf);
		if (ret)
			goto err;
	}
	migf->filp = anon_inode_getfile(save ? "gpumig_save" : "gpumig_resume",
					save ? &gpumig_save_fops : &gpumig_resume_fops,
					migf, save ? O_RDONLY : O_WRONLY);
	if (IS_ERR(migf->filp)) {
		ret = PTR_ERR(migf->filp);
		if (save)
			m->ops->vram_track(m, false);
		goto err;
	}
	stream_open(migf->filp->f_inode, migf->filp);
	return migf;
err:
	gpumig_file_free(migf);
	return ERR_PTR(ret);
}

static void gpumig_file_disable(struct gpumig_mig_file *migf)
{
	mutex_lock(&migf->lock);
	migf->disabled = true;
	migf->m = NULL;
	mutex_unlock(&migf->lock);
}

static void gpumig_disable_files(struct gpumig_mig *m)
{
	if (m->saving) {
		gpumig_file_disable(m->saving);
		fput(m->saving->filp);
		m->saving = NULL;
		m->ops->vram_track(m, false);
	}
	if (m->resuming) {
		gpumig_file_disable(m->resuming);
		fput(m->resuming->filp);
		m->resuming = NULL;
	}
}

/* ---- state machine ------------------------------------------------------ */

/* Stop the device for capture: quiesce, then acknowledged invalidation. */
static int gpumig_stop_device(struct gpumig_mig *m)
{
	int ret;

	ret = m->ops->quiesce(m);
	if (ret) {
		snprintf(m->why, sizeof(m->why), "device did not quiesce (%d)", ret);
		dev_warn(m->vdev->dev, "migration: %s; it keeps running\n", m->why);
		return ret;
	}
	ret = m->ops->invalidate(m);
	if (ret) {
		snprintf(m->why, sizeof(m->why), "translation invalidation not acknowledged (%d)",
			 ret);
		dev_warn(m->vdev->dev, "migration: %s; it keeps running\n", m->why);
		m->ops->unquiesce(m);
		return ret;
	}
	m->quiesced = true;
	return 0;
}

static void gpumig_start_device(struct gpumig_mig *m)
{
	if (m->quiesced) {
		m->ops->unquiesce(m);
		m->quiesced = false;
	}
}

static struct file *gpumig_new_saving(struct gpumig_mig *m, bool stop_copy)
{
	struct gpumig_mig_file *migf = gpumig_file_new(m, true);

	if (IS_ERR(migf))
		return ERR_CAST(migf);
	migf->stop_copy = stop_copy;
	get_file(migf->filp);
	m->saving = migf;
	return migf->filp;
}

static struct file *gpumig_step(struct gpumig_mig *m, enum vfio_device_mig_state next)
{
	enum vfio_device_mig_state cur = m->state;
	int ret;

	if ((cur == VFIO_DEVICE_STATE_RUNNING && next == VFIO_DEVICE_STATE_RUNNING_P2P) ||
	    (cur == VFIO_DEVICE_STATE_RUNNING_P2P && next == VFIO_DEVICE_STATE_RUNNING) ||
	    (cur == VFIO_DEVICE_STATE_PRE_COPY && next == VFIO_DEVICE_STATE_PRE_COPY_P2P) ||
	    (cur == VFIO_DEVICE_STATE_PRE_COPY_P2P && next == VFIO_DEVICE_STATE_PRE_COPY))
		return NULL;	/* simgpu-class devices issue no peer-to-peer DMA */

	if (cur == VFIO_DEVICE_STATE_RUNNING_P2P && next == VFIO_DEVICE_STATE_STOP) {
		ret = gpumig_stop_device(m);
		return ret ? ERR_PTR(ret) : NULL;
	}
	if (cur == VFIO_DEVICE_STATE_STOP && next == VFIO_DEVICE_STATE_RUNNING_P2P) {
		gpumig_start_device(m);
		return NULL;
	}
	if (cur == VFIO_DEVICE_STATE_STOP && next == VFIO_DEVICE_STATE_STOP_COPY)
		return gpumig_new_saving(m, true);
	if (cur == VFIO_DEVICE_STATE_PRE_COPY_P2P && next == VFIO_DEVICE_STATE_STOP_COPY) {
		ret = gpumig_stop_device(m);
		if (ret)
			return ERR_PTR(ret);
		mutex_lock(&m->saving->lock);
		m->saving->stop_copy = true;
		mutex_unlock(&m->saving->lock);
		return NULL;
	}
	if ((cur == VFIO_DEVICE_STATE_STOP_COPY && next == VFIO_DEVICE_STATE_STOP) ||
	    (cur == VFIO_DEVICE_STATE_PRE_COPY && next == VFIO_DEVICE_STATE_RUNNING) ||
	    (cur == VFIO_DEVICE_STATE_PRE_COPY_P2P && next == VFIO_DEVICE_STATE_RUNNING_P2P)) {
		gpumig_disable_files(m);
		return NULL;
	}
	if ((cur == VFIO_DEVICE_STATE_RUNNING && next == VFIO_DEVICE_STATE_PRE_COPY) ||
	    (cur == VFIO_DEVICE_STATE_RUNNING_P2P && next == VFIO_DEVICE_STATE_PRE_COPY_P2P))
		return gpumig_new_saving(m, false);
	if (cur == VFIO_DEVICE_STATE_STOP && next == VFIO_DEVICE_STATE_RESUMING) {
		struct gpumig_mig_file *migf = gpumig_file_new(m, false);

		if (IS_ERR(migf))
			return ERR_CAST(migf);
		get_file(migf->filp);
		m->resuming = migf;
		m->why[0] = 0;
		return migf->filp;
	}
	if (cur == VFIO_DEVICE_STATE_RESUMING && next == VFIO_DEVICE_STATE_STOP) {
		struct gpumig_mig_file *migf = m->resuming;

		mutex_lock(&migf->lock);
		ret = gpumig_parser_finish(&migf->parser);
		if (!ret && !migf->complete)
			ret = -EINVAL;
		if (ret)
			strscpy(m->why, gpumig_parser_error(&migf->parser), sizeof(m->why));
		mutex_unlock(&migf->lock);
		if (ret) {
			/* A half-restored device never runs: stay in RESUMING. */
			dev_err(m->vdev->dev, "migration: resume refused: %s\n", m->why);
			return ERR_PTR(ret);
		}
		gpumig_disable_files(m);
		m->quiesced = true;	/* restored, stopped; RUNNING starts it */
		return NULL;
	}

	WARN_ON(true);
	return ERR_PTR(-EINVAL);
}

/*
 * A reset that arrived while the state mutex was held is run by whoever
 * releases it, here: the reset path may not sleep on the state mutex (lock
 * order with the IOMMU and mm locks, as in the kernel's mlx5 driver).
 * The reset discards captured data and moves the device to RUNNING, as
 * the uAPI defines for VFIO_DEVICE_RESET.
 */
static void gpumig_state_mutex_unlock(struct gpumig_mig *m)
{
again:
	spin_lock(&m->reset_lock);
	if (m->deferred_reset) {
		m->deferred_reset = false;
		spin_unlock(&m->reset_lock);
		gpumig_disable_files(m);
		m->quiesced = false;
		m->state = VFIO_DEVICE_STATE_RUNNING;
		goto again;
	}
	mutex_unlock(&m->state_mutex);
	spin_unlock(&m->reset_lock);
}

/**
 * gpumig_mig_set_state() - VFIO migration_set_state
 * @m: device
 * @new_state: requested state
 *
 * Return: the data file of a new saving or resuming phase, NULL, or an
 * ERR_PTR; on error the device stays in the last state it reached.
 */
struct file *gpumig_mig_set_state(struct gpumig_mig *m,
				  enum vfio_device_mig_state new_state)
{
	enum vfio_device_mig_state next;
	struct file *res = NULL;
	int ret;

	mutex_lock(&m->state_mutex);
	while (new_state != m->state) {
		ret = vfio_mig_get_next_state(m->vdev, m->state, new_state, &next);
		if (ret) {
			res = ERR_PTR(ret);
			break;
		}
		res = gpumig_step(m, next);
		if (IS_ERR(res))
			break;
		m->state = next;
		if (WARN_ON(res && new_state != m->state)) {
			fput(res);
			res = ERR_PTR(-EINVAL);
			break;
		}
	}
	gpumig_state_mutex_unlock(m);
	return res;
}
EXPORT_SYMBOL_GPL(gpumig_mig_set_state);

/**
 * gpumig_mig_get_state() - VFIO migration_get_state
 * @m: device
 * @state: the current state
 *
 * Return: 0.
 */
int gpumig_mig_get_state(struct gpumig_mig *m, enum vfio_device_mig_state *state)
{
	mutex_lock(&m->state_mutex);
	*state = m->state;
	gpumig_state_mutex_unlock(m);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_mig_get_state);

/**
 * gpumig_mig_data_size() - VFIO migration_get_data_size
 * @m: device
 * @len: bytes STOP_COPY would produce from now: every block dirty now (all
 *	of VRAM when no pre-copy runs), the architectural state, the header
 *	if not sent yet, and the end section
 *
 * Return: 0 or a negative errno.
 */
int gpumig_mig_data_size(struct gpumig_mig *m, unsigned long *len)
{
	unsigned long nonzero, zero;
	ssize_t arch;
	size_t total;

	mutex_lock(&m->state_mutex);
	m->ops->vram_dirty_count(m, &nonzero, &zero);
	arch = m->ops->arch_save(m, NULL, 0);
	total = gpumig_vram_bytes(nonzero, zero) + gpumig_end_bytes();
	if (arch > 0)
		total += gpumig_blob_section_size(arch);
	if (m->saving) {
		mutex_lock(&m->saving->lock);
		if (!m->saving->hdr_sent)
			total += gpumig_hdr_bytes();
		total += m->saving->buf_len - m->saving->buf_pos;
		mutex_unlock(&m->saving->lock);
	} else {
		total += gpumig_hdr_bytes();
	}
	gpumig_state_mutex_unlock(m);
	if (arch < 0)
		return arch;
	*len = total;
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_mig_data_size);

/**
 * gpumig_mig_status() - what the device says about its migration
 * @m: device
 * @st: filled with the state, the counters of the last migration, what
 *	the device still has to send now, and the quarantine or last error
 *
 * Return: 0.
 */
int gpumig_mig_status(struct gpumig_mig *m, struct gpumig_mig_status *st)
{
	unsigned long nonzero, zero;

	memset(st, 0, sizeof(*st));
	mutex_lock(&m->state_mutex);
	st->state = m->state;
	st->quarantined = m->quarantined;
	st->precopy_rounds = atomic64_read(&m->stats.precopy_rounds);
	st->precopy_bytes = atomic64_read(&m->stats.precopy_bytes);
	st->stopcopy_bytes = atomic64_read(&m->stats.stopcopy_bytes);
	st->resumed_bytes = atomic64_read(&m->stats.resumed_bytes);
	if (m->saving) {
		m->ops->vram_dirty_count(m, &nonzero, &zero);
		st->pending_bytes = gpumig_vram_bytes(nonzero, zero);
	}
	strscpy(st->why, m->why, sizeof(st->why));
	gpumig_state_mutex_unlock(m);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_mig_status);

/**
 * gpumig_mig_reset() - the device is being reset (VFIO_DEVICE_RESET)
 * @m: device
 *
 * Discards captured data and returns the state machine to RUNNING, now or,
 * when the state mutex is busy, when its holder releases it.
 */
void gpumig_mig_reset(struct gpumig_mig *m)
{
	spin_lock(&m->reset_lock);
	m->deferred_reset = true;
	spin_unlock(&m->reset_lock);
	if (!mutex_trylock(&m->state_mutex))
		return;
	gpumig_state_mutex_unlock(m);
}
EXPORT_SYMBOL_GPL(gpumig_mig_reset);

/**
 * gpumig_mig_teardown() - verify the device before it is released or reused
 * @m: device
 *
 * Called when the tenant closes the device.  Data files are ended; then
 * the backend checks the device is idle with no translation left.  If it
 * is not, the device is quarantined: it must not be reused, and @m->why
 * says why.
 *
 * Return: 0, or -EBUSY when quarantined.
 */
int gpumig_mig_teardown(struct gpumig_mig *m)
{
	char why[GPUMIG_PARSER_MSG_LEN] = "";
	int ret;

	mutex_lock(&m->state_mutex);
	gpumig_disable_files(m);
	ret = m->ops->teardown_check(m, why, sizeof(why));
	if (ret) {
		WRITE_ONCE(m->quarantined, true);
		snprintf(m->why, sizeof(m->why), "quarantined: %s", why);
		dev_err(m->vdev->dev, "%s%s\n", m->why,
			m->migrated_away ? " (after migrating away)" : "");
	}
	m->state = VFIO_DEVICE_STATE_RUNNING;
	m->quiesced = false;
	m->migrated_away = false;
	gpumig_state_mutex_unlock(m);
	return ret ? -EBUSY : 0;
}
EXPORT_SYMBOL_GPL(gpumig_mig_teardown);

/**
 * gpumig_mig_unquarantine() - an operator releases a quarantined device
 * @m: device
 * @release: the backend's cleanup (reset, scrub), run before the device
 *	becomes usable again, so no tenant can open it half cleaned
 *
 * Return: 0, or -EINVAL when the device was not quarantined.
 */
int gpumig_mig_unquarantine(struct gpumig_mig *m, void (*release)(struct gpumig_mig *m))
{
	int ret = -EINVAL;

	mutex_lock(&m->state_mutex);
	if (m->quarantined) {
		release(m);
		m->why[0] = 0;
		WRITE_ONCE(m->quarantined, false);
		dev_notice(m->vdev->dev, "quarantine lifted by the operator\n");
		ret = 0;
	}
	gpumig_state_mutex_unlock(m);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_mig_unquarantine);

/**
 * gpumig_mig_init() - set up a device's migration state
 * @m: state
 * @vdev: its VFIO device; migration_flags must be set by the caller
 * @ops: backend
 * @priv: backend data
 * @compat: the device's compatibility descriptor
 */
void gpumig_mig_init(struct gpumig_mig *m, struct vfio_device *vdev,
		     const struct gpumig_backend_ops *ops, void *priv,
		     const struct gpumig_compat *compat)
{
	memset(m, 0, sizeof(*m));
	m->vdev = vdev;
	m->ops = ops;
	m->priv = priv;
	m->compat = *compat;
	m->state = VFIO_DEVICE_STATE_RUNNING;
	mutex_init(&m->state_mutex);
	spin_lock_init(&m->reset_lock);
}
EXPORT_SYMBOL_GPL(gpumig_mig_init);

/**
 * gpumig_mig_destroy() - end every data file and free the state
 * @m: state
 */
void gpumig_mig_destroy(struct gpumig_mig *m)
{
	mutex_lock(&m->state_mutex);
	gpumig_disable_files(m);
	mutex_unlock(&m->state_mutex);
	mutex_destroy(&m->state_mutex);
}
EXPORT_SYMBOL_GPL(gpumig_mig_destroy);
