// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig DMA logging: the VFIO core's vfio_log_ops, in the engine's lock
 * protocol, calling the backend's tracker wherever its bits live (the
 * engine's software tracker in gpumig_dirty, or a device's own).
 *
 * Only a kernel with CONFIG_IOMMUFD_DRIVER can carry the reports
 * (iova_bitmap_set() is a stub elsewhere); gpumig_mig_create() offers
 * these ops only there, and they refuse to run anywhere else.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/iova_bitmap.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/module.h>

#include <gpumig/compat.h>

#include "engine.h"

#include <trace/events/gpumig.h>

#if IS_ENABLED(CONFIG_IOMMUFD_DRIVER)
GPUMIG_IMPORT_IOMMUFD_NS();
#endif

/**
 * gpumig_log_start() - vfio_log_ops.log_start
 * @m: device
 * @ranges: IOVA ranges to track (the VFIO core's interval tree)
 * @nnodes: how many
 * @page_size: in: the page size asked for; out: the one used
 *
 * Return: 0 or the backend's errno; -EOPNOTSUPP where DMA logging is not
 * offered.
 */
int gpumig_log_start(struct gpumig_mig *m, struct rb_root_cached *ranges,
		     u32 nnodes, u64 *page_size)
{
	int ret;

	if (!m->log_ops)
		return -EOPNOTSUPP;
	gpumig_state_mutex_lock(m);
	ret = m->ops->dma_log_start(m->priv, ranges, nnodes, page_size);
	trace_gpumig_dma_log_start(m->vdev->dev, nnodes, *page_size, ret);
	gpumig_state_mutex_unlock(m);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_log_start);

/**
 * gpumig_log_stop() - vfio_log_ops.log_stop
 * @m: device
 *
 * Return: 0, or -EOPNOTSUPP where DMA logging is not offered.
 */
int gpumig_log_stop(struct gpumig_mig *m)
{
	if (!m->log_ops)
		return -EOPNOTSUPP;
	gpumig_state_mutex_lock(m);
	m->ops->dma_log_stop(m->priv);
	trace_gpumig_dma_log_stop(m->vdev->dev);
	gpumig_state_mutex_unlock(m);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_log_stop);

/**
 * struct gpumig_log_report - one report in progress
 * @bitmap: the user's bitmap, from the VFIO core
 * @first: first byte of the range the user asked for
 * @last: its last byte
 * @dirty: bytes reported dirty so far
 * @first_done: the first run was reported
 * @bitmap_ns: time of the first iova_bitmap_set()
 */
struct gpumig_log_report {
	struct iova_bitmap *bitmap;
	u64 first, last;
	u64 dirty;
	bool first_done;
	u64 bitmap_ns;
};

/*
 * For the benchmark, the first iova_bitmap_set() of a report is timed
 * apart: there the VFIO core pins the user's bitmap (up to 2 MiB of it),
 * a cost that follows the range's size and is not the tracker's.  Only
 * the first: a clock read per run would cost more than the report.
 */
static void gpumig_log_report_run(void *ctx, u64 iova, u64 len)
{
	struct gpumig_log_report *r = ctx;
	u64 last, t0;

	/*
	 * Only bits of the range asked for: the user's bitmap has room for
	 * no more (backends clip too; this is the last line).
	 */
	if (!len || check_add_overflow(iova, len - 1, &last))
		return;
	if (WARN_ON_ONCE(iova < r->first || last > r->last)) {
		iova = max(iova, r->first);
		last = min(last, r->last);
		if (iova > last)
			return;
		len = last - iova + 1;
	}
	r->dirty += len;
	if (r->first_done) {
		iova_bitmap_set(r->bitmap, iova, len);
		return;
	}
	t0 = ktime_get_ns();
	iova_bitmap_set(r->bitmap, iova, len);
	r->bitmap_ns = ktime_get_ns() - t0;
	r->first_done = true;
}

/**
 * gpumig_log_read_and_clear() - vfio_log_ops.log_read_and_clear
 * @m: device
 * @iova: start of the range the user asked for
 * @length: its length
 * @dirty: the user's bitmap
 *
 * Return: 0 or the backend's errno; -EOPNOTSUPP where DMA logging is not
 * offered.
 */
int gpumig_log_read_and_clear(struct gpumig_mig *m, unsigned long iova,
			      unsigned long length, struct iova_bitmap *dirty)
{
	struct gpumig_log_report r = { .bitmap = dirty, .first = iova };
	u64 t0;
	int ret;

	if (!IS_ENABLED(CONFIG_IOMMUFD_DRIVER) || !m->log_ops)
		return -EOPNOTSUPP;
	if (!length || check_add_overflow((u64)iova, (u64)length - 1, &r.last))
		return -EINVAL;
	t0 = ktime_get_ns();
	gpumig_state_mutex_lock(m);
	ret = m->ops->dma_log_report(m->priv, iova, length, gpumig_log_report_run, &r);
	trace_gpumig_dma_log_report(m->vdev->dev, iova, length, r.dirty, ret);
	gpumig_state_mutex_unlock(m);
	atomic64_add(ktime_get_ns() - t0, &m->stats.log_report_ns);
	atomic64_add(r.bitmap_ns, &m->stats.log_bitmap_ns);
	atomic64_inc(&m->stats.log_reports);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_log_read_and_clear);
