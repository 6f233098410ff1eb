// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig: what a device's migration shows in sysfs (migration/status and
 * the one-value metric files) and to tools.  Those files are readable by
 * everyone, for monitoring agents that do not run as root, so a read must
 * not cost the device: the state, the bytes pending and the stop-copy
 * estimate come from a view taken under the state mutex at most once per
 * GPUMIG_VIEW_PERIOD_MS, and again whenever the migration itself moved
 * (a state change, a read of the saving file, the VMM's own PRECOPY_INFO
 * or MIG_DATA_SIZE, a block the device dirtied and said so).  A reader in
 * a loop then costs the device one look per period at most; what it sees
 * is never older than the period, and exact right after the VMM's query.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/visibility.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "engine.h"

#define GPUMIG_VIEW_PERIOD_MS	20

/* The migration/ file each GPUMIG_NOTIFY_* wakes (status wakes with all). */
static const char *const gpumig_notify_files[GPUMIG_NR_NOTIFY] = {
	[GPUMIG_NOTIFY_STATE] = "state",
	[GPUMIG_NOTIFY_ERROR] = "last_error",
	[GPUMIG_NOTIFY_QUARANTINE] = "migratable",
};

static void gpumig_notify_work(struct work_struct *work)
{
	struct gpumig_mig *m = container_of(work, struct gpumig_mig, notify_work);
	struct kobject *kobj = &m->vdev->dev->kobj;
	bool any = false;
	unsigned int i;

	for (i = 0; i < GPUMIG_NR_NOTIFY; i++) {
		if (test_and_clear_bit(i, &m->notify)) {
			sysfs_notify(kobj, "migration", gpumig_notify_files[i]);
			any = true;
		}
	}
	if (any)
		sysfs_notify(kobj, "migration", "status");
}

/**
 * gpumig_notify_init() - set up the wake-ups of poll() on migration/ files
 * @m: device
 */
void gpumig_notify_init(struct gpumig_mig *m)
{
	INIT_WORK(&m->notify_work, gpumig_notify_work);
}

/**
 * gpumig_notify() - wake whoever polls the file that shows @what
 * @m: device
 * @what: what changed
 *
 * A monitor sleeps in poll() on migration/state, last_error or migratable
 * (or status, which wakes with each) instead of reading it in a loop; as
 * sysfs.rst says, it reads the file again after the wake-up (POLLPRI |
 * POLLERR) and from offset 0.  sysfs_notify() looks the file up under
 * kernfs's own lock, so it runs from a work item: callers hold the state
 * mutex, or a spinlock.
 *
 * Context: any.
 */
void gpumig_notify(struct gpumig_mig *m, enum gpumig_notify_what what)
{
	if (!m->vdev || !m->vdev->dev)	/* KUnit's devices have no sysfs */
		return;
	set_bit(what, &m->notify);
	schedule_work(&m->notify_work);
}

/**
 * gpumig_notify_exit() - no wake-up runs after this
 * @m: device, its front end's files still there or already gone
 */
void gpumig_notify_exit(struct gpumig_mig *m)
{
	cancel_work_sync(&m->notify_work);
}

/**
 * gpumig_view_changed() - what the view shows may have moved
 * @m: device
 *
 * Context: any; lockless.
 */
void gpumig_view_changed(struct gpumig_mig *m)
{
	atomic_inc(&m->view_seq);
}

/**
 * gpumig_view_get() - the state, the bytes pending and the stop-copy estimate
 * @m: device
 * @v: filled
 *
 * One refresh at a time (the view's lock, not the state mutex, is what
 * readers wait on), and only when the view is older than the period or
 * the migration moved since it was taken.
 */
void gpumig_view_get(struct gpumig_mig *m, struct gpumig_view *v)
{
	u64 now = ktime_get_ns();
	int seq;

	mutex_lock(&m->view_lock);
	seq = atomic_read(&m->view_seq);
	if (!m->view.taken_ns || m->view.seq != seq ||
	    now - m->view.taken_ns >= GPUMIG_VIEW_PERIOD_MS * NSEC_PER_MSEC) {
		gpumig_state_mutex_lock(m);
		m->view.state = m->state;
		m->view.remaining = m->saving ? gpumig_file_pending(m->saving, false) : 0;
		m->view.estimate = gpumig_stopcopy_size(m);
		gpumig_state_mutex_unlock(m);
		m->view.taken_ns = ktime_get_ns();
		m->view.seq = seq;
	}
	*v = m->view;
	mutex_unlock(&m->view_lock);
}

/**
 * gpumig_mig_status() - what the device says about its migration
 * @m: device
 * @st: the snapshot; its state and pending bytes are the view's
 *
 * Return: 0.
 */
int gpumig_mig_status(struct gpumig_mig *m, struct gpumig_mig_status *st)
{
	struct gpumig_mig_stats *s = &m->stats;

	struct gpumig_view v;

	memset(st, 0, sizeof(*st));
	gpumig_view_get(m, &v);
	st->state = v.state;
	st->quarantined = READ_ONCE(m->quarantined);
	st->pending_bytes = v.remaining;
	st->dirty_tracking = m->log_ops;
	st->precopy_rounds = atomic64_read(&s->precopy_rounds);
	st->precopy_bytes = atomic64_read(&s->precopy_bytes);
	st->stopcopy_bytes = atomic64_read(&s->stopcopy_bytes);
	st->resumed_bytes = atomic64_read(&s->resumed_bytes);
	st->log_reports = atomic64_read(&s->log_reports);
	st->log_report_ns = atomic64_read(&s->log_report_ns);
	st->log_bitmap_ns = atomic64_read(&s->log_bitmap_ns);
	st->quiesce_ns = atomic64_read(&s->quiesce_ns);
	st->invalidate_ns = atomic64_read(&s->invalidate_ns);
	gpumig_get_why(m, st->why, sizeof(st->why));
	gpumig_get_source(m, st->source, sizeof(st->source));
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_mig_status);

/**
 * gpumig_mig_status_show() - the sysfs "migration/status" line
 * @m: device
 * @buf: sysfs buffer
 *
 * "quarantined: <why>" for a quarantined device, else "migratable" and
 * key=value pairs; every front end shows the same line.  A summary for
 * people: each value has its own file (GPUMIG_DEFINE_MIGRATION_ATTRS()),
 * which is what programs read.
 *
 * Return: bytes written.
 */
ssize_t gpumig_mig_status_show(struct gpumig_mig *m, char *buf)
{
	struct gpumig_mig_status st;
	ssize_t n;

	gpumig_mig_status(m, &st);
	if (st.quarantined)
		return sysfs_emit(buf, "%s\n", st.why);
	n = sysfs_emit(buf, "migratable state=%s dirty_tracking=%s remaining_bytes=%llu",
		       gpumig_state_name(st.state), st.dirty_tracking ? "device" : "none",
		       st.pending_bytes);
	n += sysfs_emit_at(buf, n, " precopy_rounds=%llu precopy_bytes=%llu",
			   st.precopy_rounds, st.precopy_bytes);
	n += sysfs_emit_at(buf, n, " stopcopy_bytes=%llu resumed_bytes=%llu dma_log_reports=%llu",
			   st.stopcopy_bytes, st.resumed_bytes, st.log_reports);
	n += sysfs_emit_at(buf, n, " quiesce_us=%llu invalidate_us=%llu",
			   st.quiesce_ns / NSEC_PER_USEC, st.invalidate_ns / NSEC_PER_USEC);
	if (st.source[0])
		n += sysfs_emit_at(buf, n, " source=%s", st.source);
	n += sysfs_emit_at(buf, n, "%s%s\n", st.why[0] ? " last_error=" : "", st.why);
	return n;
}
EXPORT_SYMBOL_GPL(gpumig_mig_status_show);

static const char *const gpumig_state_names[] = {
	[VFIO_DEVICE_STATE_ERROR] = "ERROR",
	[VFIO_DEVICE_STATE_STOP] = "STOP",
	[VFIO_DEVICE_STATE_RUNNING] = "RUNNING",
	[VFIO_DEVICE_STATE_STOP_COPY] = "STOP_COPY",
	[VFIO_DEVICE_STATE_RESUMING] = "RESUMING",
	[VFIO_DEVICE_STATE_RUNNING_P2P] = "RUNNING_P2P",
	[VFIO_DEVICE_STATE_PRE_COPY] = "PRE_COPY",
	[VFIO_DEVICE_STATE_PRE_COPY_P2P] = "PRE_COPY_P2P",
};

/**
 * gpumig_state_name() - a VFIO migration state by its uAPI name
 * @state: enum vfio_device_mig_state
 *
 * Return: "RUNNING", "PRE_COPY"...; "?" for a value the uAPI does not have.
 */
const char *gpumig_state_name(u32 state)
{
	return state < ARRAY_SIZE(gpumig_state_names) && gpumig_state_names[state] ?
	       gpumig_state_names[state] : "?";
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_state_name);

/**
 * gpumig_metric_attr_show() - the show of every metric file
 * @dev: the front end's device
 * @attr: a struct gpumig_metric_attr's
 * @buf: sysfs buffer
 *
 * Return: bytes written, or -ENODEV for a function that does not migrate.
 */
ssize_t gpumig_metric_attr_show(struct device *dev, struct device_attribute *attr,
				char *buf)
{
	struct gpumig_metric_attr *ma = container_of(attr, struct gpumig_metric_attr, attr);
	unsigned int which = ma - ma->set->m;
	struct gpumig_mig *m = ma->set->to_mig(dev);
	struct gpumig_mig_stats *s;
	char why[GPUMIG_MSG_LEN];
	struct gpumig_view view;
	u64 v;

	if (!m)
		return -ENODEV;
	s = &m->stats;
	switch (which) {
	case GPUMIG_METRIC_STATE:
		gpumig_view_get(m, &view);
		return sysfs_emit(buf, "%s\n", gpumig_state_name(view.state));
	case GPUMIG_METRIC_REMAINING:
		gpumig_view_get(m, &view);
		v = view.remaining;
		break;
	case GPUMIG_METRIC_STOPCOPY_ESTIMATE:
		gpumig_view_get(m, &view);
		v = view.estimate;
		break;
	case GPUMIG_METRIC_DIRTY_RATE:
		v = atomic64_read(&s->dirty_rate);
		break;
	case GPUMIG_METRIC_PRECOPY_ROUNDS:
		v = atomic64_read(&s->precopy_rounds);
		break;
	case GPUMIG_METRIC_PRECOPY_BYTES:
		v = atomic64_read(&s->precopy_bytes);
		break;
	case GPUMIG_METRIC_STOPCOPY_BYTES:
		v = atomic64_read(&s->stopcopy_bytes);
		break;
	case GPUMIG_METRIC_RESUMED_BYTES:
		v = atomic64_read(&s->resumed_bytes);
		break;
	case GPUMIG_METRIC_QUIESCE_US:
		v = div_u64(atomic64_read(&s->quiesce_ns), NSEC_PER_USEC);
		break;
	case GPUMIG_METRIC_INVALIDATE_US:
		v = div_u64(atomic64_read(&s->invalidate_ns), NSEC_PER_USEC);
		break;
	case GPUMIG_METRIC_LAST_ERROR:
		gpumig_get_why(m, why, sizeof(why));
		return sysfs_emit(buf, "%s\n", why);
	case GPUMIG_METRIC_MIGRATABLE:
		v = !READ_ONCE(m->quarantined);
		break;
	case GPUMIG_METRIC_DIRTY_TRACKING:
		return sysfs_emit(buf, "%s\n", m->log_ops ? "device" : "none");
	case GPUMIG_METRIC_DMA_LOG_REPORTS:
		v = atomic64_read(&s->log_reports);
		break;
	case GPUMIG_METRIC_SOURCE:
		gpumig_get_source(m, why, sizeof(why));
		return sysfs_emit(buf, "%s\n", why);
	default:
		return -EINVAL;
	}
	return sysfs_emit(buf, "%llu\n", v);
}
EXPORT_SYMBOL_GPL(gpumig_metric_attr_show);

/* The device behind a settings file of the front end's migration/ group. */
static struct gpumig_mig *gpumig_setting_mig(struct device *dev, struct device_attribute *attr)
{
	struct gpumig_metric_attr *ma = container_of(attr, struct gpumig_metric_attr, attr);

	return ma->set->to_mig(dev);
}

/**
 * gpumig_stream_max_show() - migration/stream_max: "1.2", say
 * @dev: the front end's device
 * @attr: the set's stream_max
 * @buf: sysfs buffer
 *
 * Return: bytes written, or -ENODEV for a function that does not migrate.
 */
ssize_t gpumig_stream_max_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct gpumig_mig *m = gpumig_setting_mig(dev, attr);

	if (!m)
		return -ENODEV;
	return sysfs_emit(buf, "%u.%u\n", GPUMIG_STREAM_MAJOR, gpumig_mig_stream_max(m));
}
EXPORT_SYMBOL_GPL(gpumig_stream_max_show);

/**
 * gpumig_stream_max_store() - cap the stream version: "1.0" to "1.3"
 * @dev: the front end's device
 * @attr: the set's stream_max
 * @buf: what was written
 * @count: its length
 *
 * Return: @count; -EINVAL for another value, -EBUSY during a migration
 * or below 1.3 while post-copy is asked for, -ENODEV for a function that
 * does not migrate.
 */
ssize_t gpumig_stream_max_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct gpumig_mig *m = gpumig_setting_mig(dev, attr);
	unsigned int minor;
	char want[8];
	int ret;

	if (!m)
		return -ENODEV;
	/* exactly "1.N", a newline after it at most: no spaces, no zeros added */
	for (minor = 0; minor <= GPUMIG_STREAM_MINOR; minor++) {
		snprintf(want, sizeof(want), "%u.%u", GPUMIG_STREAM_MAJOR, minor);
		if (sysfs_streq(buf, want))
			break;
	}
	if (minor > GPUMIG_STREAM_MINOR)
		return -EINVAL;
	ret = gpumig_mig_set_stream_max(m, minor);
	return ret ? ret : count;
}
EXPORT_SYMBOL_GPL(gpumig_stream_max_store);

/**
 * gpumig_group_attr_show() - the show of auto-converge's and post-copy's files
 * @dev: the front end's device
 * @attr: one of the set's conv or pc
 * @buf: sysfs buffer
 *
 * Return: bytes written, or -ENODEV for a function that does not migrate.
 */
ssize_t gpumig_group_attr_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct gpumig_metric_attr *ma = container_of(attr, struct gpumig_metric_attr, attr);
	struct gpumig_mig *m = ma->set->to_mig(dev);

	if (!m)
		return -ENODEV;
	if (ma->group == GPUMIG_GROUP_PC)
		return gpumig_pc_show(m, ma - ma->set->pc, buf);
	return gpumig_converge_show(m, ma - ma->set->conv, buf);
}
EXPORT_SYMBOL_GPL(gpumig_group_attr_show);

/**
 * gpumig_group_attr_store() - set one of auto-converge's or post-copy's settings
 * @dev: the front end's device
 * @attr: one of the set's conv or pc settings
 * @buf: what was written
 * @count: its length
 *
 * Return: @count, or gpumig_converge_store()'s or gpumig_pc_store()'s
 * error; -ENODEV for a function that does not migrate.
 */
ssize_t gpumig_group_attr_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct gpumig_metric_attr *ma = container_of(attr, struct gpumig_metric_attr, attr);
	struct gpumig_mig *m = ma->set->to_mig(dev);
	int ret;

	if (!m)
		return -ENODEV;
	if (ma->group == GPUMIG_GROUP_PC)
		ret = gpumig_pc_store(m, ma - ma->set->pc, buf);
	else
		ret = gpumig_converge_store(m, ma - ma->set->conv, buf);
	return ret ? ret : count;
}
EXPORT_SYMBOL_GPL(gpumig_group_attr_store);

/* ---- the descriptor and what the device offers ------------------------- */

/**
 * gpumig_mig_compat() - the device's compatibility descriptor
 * @m: device
 *
 * Return: the descriptor; fixed for the device's life.
 */
const struct gpumig_compat *gpumig_mig_compat(struct gpumig_mig *m)
{
	return &m->compat;
}
EXPORT_SYMBOL_GPL(gpumig_mig_compat);

/**
 * gpumig_mig_compat_show() - the sysfs "migration/compat" line
 * @m: device
 * @buf: sysfs buffer
 *
 * Return: bytes written.
 */
ssize_t gpumig_mig_compat_show(struct gpumig_mig *m, char *buf)
{
	struct gpumig_compat c = m->compat;

	c.stream_minor = gpumig_stream_written(m);
	return gpumig_compat_format(&c, buf, PAGE_SIZE);
}
EXPORT_SYMBOL_GPL(gpumig_mig_compat_show);

/**
 * gpumig_mig_dirty_tracking() - does the device track guest memory it writes?
 * @m: device
 *
 * Return: true when VFIO DMA logging is offered: the kernel can carry the
 * reports (CONFIG_IOMMUFD_DRIVER) and the backend tracks.
 */
bool gpumig_mig_dirty_tracking(struct gpumig_mig *m)
{
	return m->log_ops;
}
EXPORT_SYMBOL_GPL(gpumig_mig_dirty_tracking);
