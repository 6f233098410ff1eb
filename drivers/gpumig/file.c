// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration data files: what a saving and a resuming file share.
 * Each file's life is one enum gpumig_file_state, changed under the
 * file's lock; the engine ends a file's phase (gpumig_file_disable()) or
 * breaks it when the device can no longer serve it (gpumig_file_abort()),
 * and the file lives on until its user closes it.  The saving side is
 * save.c, the resuming side resume.c.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/lockdep.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "engine.h"

/* 0 while the file can be used, else what reads and writes return. */
int gpumig_file_usable(struct gpumig_mig_file *migf)
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

void gpumig_file_fail(struct gpumig_mig_file *migf, int err)
{
	lockdep_assert_held(&migf->lock);
	migf->state = GPUMIG_FILE_ERROR;
	migf->err = err;
	gpumig_file_wake(migf);
}

static void gpumig_file_recheck(struct work_struct *work)
{
	struct gpumig_mig_file *migf = container_of(to_delayed_work(work),
						    struct gpumig_mig_file, recheck);

	gpumig_file_wake(migf);
}

void gpumig_file_free(struct gpumig_mig_file *migf)
{
	cancel_delayed_work_sync(&migf->recheck);
	if (migf->parser.buf)
		gpumig_parser_destroy(&migf->parser);
	kvfree(migf->buf);
	kvfree(migf->tmp);
	kvfree(migf->arch);
	kfree(migf->arch_len);
	bitmap_free(migf->pc_owed);
	kvfree(migf->pc_payload);
	gpumig_pc_file_free(migf);
	mutex_destroy(&migf->lock);
	mutex_destroy(&migf->io_lock);
	kfree(migf);
}

int gpumig_file_release(struct inode *inode, struct file *filp)
{
	gpumig_file_free(filp->private_data);
	return 0;
}

/*
 * The file lock of a PCI function's files and of other front ends' (mdev)
 * files are two lock classes.  A PCI function's reset takes its file lock
 * under vfio-pci-core's memory lock, which its aperture's faults take
 * under the mm's lock; an mdev backend takes its device lock under the
 * file lock and does its DMA (the mm's lock) under that.  Each chain is
 * sound for the devices in it, and no path takes one device's file lock
 * under another's; but with one class, an mdev and a VF in one VMM (one
 * container, one mm) join the two chains into a cycle no device can
 * close, which lockdep reported (mdev migf -> core -> type1 -> mmap ->
 * VF memory_lock -> VF migf).
 */
static struct lock_class_key gpumig_file_lock_pci, gpumig_file_lock_other;

/* A file of @m with a scratch buffer of @tmp_size bytes. */
struct gpumig_mig_file *gpumig_file_alloc(struct gpumig_mig *m, size_t tmp_size)
{
	struct gpumig_mig_file *migf;

	migf = kzalloc(sizeof(*migf), GFP_KERNEL_ACCOUNT);
	if (!migf)
		return NULL;
	mutex_init(&migf->lock);
	lockdep_set_class(&migf->lock, dev_is_pci(m->vdev->dev) ? &gpumig_file_lock_pci :
				       &gpumig_file_lock_other);
	mutex_init(&migf->io_lock);
	init_waitqueue_head(&migf->wq);
	INIT_DELAYED_WORK(&migf->recheck, gpumig_file_recheck);
	migf->m = m;
	migf->ahead = -1;
	migf->tmp_size = tmp_size;
	migf->tmp = kvmalloc(tmp_size, GFP_KERNEL_ACCOUNT);
	if (!migf->tmp) {
		gpumig_file_free(migf);
		return NULL;
	}
	return migf;
}

/* The anonymous file; on failure @migf is freed. */
int gpumig_file_open(struct gpumig_mig_file *migf, const char *name,
		     const struct file_operations *fops, int flags)
{
	migf->filp = anon_inode_getfile(name, fops, migf, flags);
	if (IS_ERR(migf->filp)) {
		int ret = PTR_ERR(migf->filp);

		gpumig_file_free(migf);
		return ret;
	}
	stream_open(migf->filp->f_inode, migf->filp);
	return 0;
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
