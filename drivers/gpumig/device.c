// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration engine: a device's life around the state machine
 * (state.c): creation with its backend and geometry, open, reset, a
 * failure the device reports, verified close with scrub or quarantine,
 * the operator's release, destruction.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/file.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "engine.h"

#include <trace/events/gpumig.h>

/* ---- the device's life ---------------------------------------------------- */

/**
 * gpumig_mig_reset() - the device is being reset
 * @m: device
 *
 * For VFIO_DEVICE_RESET and for a PCI front end's reset_done callback (an
 * FLR the VFIO core or the PCI core did).  Discards captured data and
 * returns the state machine to RUNNING, now or, when the state mutex is
 * busy, when its holder releases it.  Never sleeps on the state mutex.
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
 * gpumig_mig_abort() - the device can no longer serve its migration
 * @m: device
 * @err: what the data files' reads and writes return from now on
 * @why: for reports ("the PF's driver was removed")
 *
 * For a front end that loses the services its backend needs (a VF whose
 * PF's driver goes away).  A stream in flight ends at once with @err
 * unless it was produced whole or restored; the state machine goes on,
 * its transitions failing wherever the backend fails.  A post-copy still
 * owing VRAM to the device ends: nothing can deliver those blocks any
 * more, so they are lost now, not waited on.  Sleeps.
 */
void gpumig_mig_abort(struct gpumig_mig *m, int err, const char *why)
{
	bool aborted = false;

	gpumig_state_mutex_lock(m);
	if (m->saving)
		aborted |= gpumig_file_abort(m->saving, err);
	if (m->resuming)
		aborted |= gpumig_file_abort(m->resuming, err);
	gpumig_pc_dest_end(m, why);
	gpumig_set_why(m, "migration aborted: %s", why);
	gpumig_view_changed(m);
	gpumig_state_mutex_unlock(m);
	dev_warn(m->vdev->dev, "%s%s\n", why,
		 aborted ? ": the migration in flight was aborted" : "");
}
EXPORT_SYMBOL_GPL(gpumig_mig_abort);

/**
 * gpumig_mig_fail() - the device lost its state under the engine
 * @m: device
 * @err: what the data files' reads and writes return from now on
 * @why: for reports and the log ("its PF was reset: ...")
 *
 * For a front end that learns asynchronously that its device failed (the
 * hardware it is part of was reset).  As the uAPI's ERROR state has it: a
 * stream in flight ends with @err, DMA logging ends with the device's
 * log, the state reads ERROR and every arc fails until the device is
 * reset (VFIO_DEVICE_RESET, a reset the front end reports, or the next
 * open).  A post-copy still owing it VRAM ends: those blocks are lost.  A
 * quarantined device keeps its quarantine, and its reason says what it
 * lost.  Sleeps.
 */
void gpumig_mig_fail(struct gpumig_mig *m, int err, const char *why)
{
	char q[GPUMIG_MSG_LEN];

	gpumig_state_mutex_lock(m);
	if (m->saving)
		gpumig_file_abort(m->saving, err);
	if (m->resuming)
		gpumig_file_abort(m->resuming, err);
	if (m->log_ops)
		m->ops->dma_log_stop(m->priv);
	trace_gpumig_state(m->vdev->dev, m->state, VFIO_DEVICE_STATE_ERROR, err);
	WRITE_ONCE(m->state, VFIO_DEVICE_STATE_ERROR);
	gpumig_notify(m, GPUMIG_NOTIFY_STATE);
	m->quiesced = false;
	m->p2p_stopped = false;
	/* VRAM still owed to it went with the rest of its memory. */
	gpumig_pc_dest_end(m, why);
	if (m->quarantined) {
		gpumig_quarantine_note(m->vdev->dev, why);
		gpumig_quarantine_get(m->vdev->dev, q, sizeof(q));
		gpumig_set_why(m, "quarantined: %s", q);
	} else {
		gpumig_set_why(m, "%s", why);
	}
	gpumig_view_changed(m);
	gpumig_state_mutex_unlock(m);
	dev_err(m->vdev->dev, "the device failed: %s\n", why);
}
EXPORT_SYMBOL_GPL(gpumig_mig_fail);

/**
 * gpumig_mig_vram_dirtied() - a VRAM block became dirty while tracking
 * @m: device
 *
 * For a backend with @notifies_dirty: wakes whoever polls the saving file
 * (a VMM that waits after -ENOMSG instead of spinning).  Cheap enough to
 * call on every clean-to-dirty change.
 *
 * Context: any; takes only a spinlock.
 */
void gpumig_mig_vram_dirtied(struct gpumig_mig *m)
{
	unsigned long flags;

	gpumig_view_changed(m);
	spin_lock_irqsave(&m->poll_lock, flags);
	if (m->poll_file)
		gpumig_file_wake(m->poll_file);
	spin_unlock_irqrestore(&m->poll_lock, flags);
}
EXPORT_SYMBOL_GPL(gpumig_mig_vram_dirtied);

/**
 * gpumig_mig_reconfigured() - the guest re-initialised the device
 * @m: device
 *
 * A front end calls this when the guest resets or reconfigures the device
 * through its own registers (not a VMM's VFIO_DEVICE_RESET, which ends the
 * data files).  During PRE_COPY, when the VMM opted in to
 * VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2, the next VFIO_MIG_GET_PRECOPY_INFO
 * reports VFIO_PRECOPY_INFO_REINIT once, with everything the device has
 * pending at that moment as new initial bytes: a VMM that waits for the
 * initial data before switching over (QEMU's switchover-ack) then waits
 * for the re-initialised state too.  Without the opt-in nothing changes:
 * the new state is dirty data, as the original uAPI has it.
 *
 * Context: any; lockless.
 */
void gpumig_mig_reconfigured(struct gpumig_mig *m)
{
	atomic_inc(&m->reconfig_seq);
}
EXPORT_SYMBOL_GPL(gpumig_mig_reconfigured);

/**
 * gpumig_mig_open() - a tenant opens the device
 * @m: device
 *
 * Return: 0, or -EBUSY when the device is quarantined (it says why).
 */
int gpumig_mig_open(struct gpumig_mig *m)
{
	char why[GPUMIG_MSG_LEN];
	int ret = 0;

	gpumig_state_mutex_lock(m);
	if (m->quarantined) {
		gpumig_get_why(m, why, sizeof(why));
		dev_err(m->vdev->dev, "refusing to reuse a quarantined device: %s\n", why);
		ret = -EBUSY;
	} else {
		/* a new session, ERROR or not */
		if (m->state != VFIO_DEVICE_STATE_RUNNING)
			gpumig_notify(m, GPUMIG_NOTIFY_STATE);
		WRITE_ONCE(m->state, VFIO_DEVICE_STATE_RUNNING);
		gpumig_set_why(m, "%s", "");	/* the last tenant's is not this one's */
		gpumig_set_source(m, "");
		atomic64_set(&m->stats.log_reports, 0);
		atomic64_set(&m->stats.log_report_ns, 0);
		atomic64_set(&m->stats.log_bitmap_ns, 0);
	}
	gpumig_view_changed(m);
	gpumig_state_mutex_unlock(m);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_mig_open);

/* Make the device inert and check it: 0, or an errno with @why. */
static int gpumig_teardown_locked(struct gpumig_mig *m, char *why, size_t len)
{
	int inval, ret;

	lockdep_assert_held(&m->state_mutex);
	if (!m->quiesced && m->ops->quiesce(m->priv))
		dev_warn(m->vdev->dev, "teardown: the device did not quiesce; stopping it\n");
	inval = m->ops->invalidate(m->priv);
	/* Whatever happened, the backend stops what is left. */
	ret = m->ops->teardown(m->priv, why, len);
	if (!ret && inval) {
		snprintf(why, len, "translation invalidation not acknowledged (%d)", inval);
		ret = inval;
	}
	return ret;
}

/* End the tenant's data files: before anything resets the device. */
static void gpumig_close_files_locked(struct gpumig_mig *m)
{
	lockdep_assert_held(&m->state_mutex);
	gpumig_disable_files(m);
	gpumig_pc_dest_detach(m, "the tenant closed the device");
}

/**
 * gpumig_mig_close_begin() - the tenant is leaving: end its data files now
 * @m: device
 *
 * For a front end whose close resets the function before
 * gpumig_mig_close() runs (vfio-pci-core's close_device does): a thread
 * still reading or writing a data file must see it end (-ENODEV), never
 * the device's reset under it.  Ends the data files as gpumig_mig_close()
 * does, which then finds none; calling it is optional.
 */
void gpumig_mig_close_begin(struct gpumig_mig *m)
{
	gpumig_state_mutex_lock(m);
	gpumig_close_files_locked(m);
	gpumig_state_mutex_unlock(m);
}
EXPORT_SYMBOL_GPL(gpumig_mig_close_begin);

/**
 * gpumig_mig_close() - the tenant closed the device: verified teardown
 * @m: device
 *
 * Ends the data files and DMA logging, then quiesces the device, has it
 * acknowledge the invalidation of every translation, and lets the backend
 * stop and verify it.  A device that passes is scrubbed for the next
 * tenant; one that fails is quarantined with its memory kept: it must not
 * be reused, and reports say why.
 *
 * Return: 0, or -EBUSY when quarantined.
 */
int gpumig_mig_close(struct gpumig_mig *m)
{
	char why[GPUMIG_MSG_LEN] = "";
	int ret;

	gpumig_state_mutex_lock(m);
	gpumig_close_files_locked(m);
	if (m->ops->dma_log_stop)
		m->ops->dma_log_stop(m->priv);
	ret = gpumig_teardown_locked(m, why, sizeof(why));
	if (!ret) {
		ret = m->ops->scrub(m->priv);
		if (ret)
			snprintf(why, sizeof(why), "memory could not be scrubbed (%d)", ret);
	}
	if (ret) {
		WRITE_ONCE(m->quarantined, true);
		gpumig_notify(m, GPUMIG_NOTIFY_QUARANTINE);
		gpumig_quarantine_set(m->vdev->dev, why);
		gpumig_set_why(m, "quarantined: %s", why);
		trace_gpumig_quarantine(m->vdev->dev, why);
		dev_err(m->vdev->dev, "quarantined: %s%s\n", why,
			m->migrated_away ? " (after migrating away)" : "");
	}
	if (m->state != VFIO_DEVICE_STATE_RUNNING)
		gpumig_notify(m, GPUMIG_NOTIFY_STATE);
	WRITE_ONCE(m->state, VFIO_DEVICE_STATE_RUNNING);
	m->quiesced = false;
	m->p2p_stopped = false;	/* scrubbed: reset, or quarantined and never run */
	m->migrated_away = false;
	m->vram_left = false;	/* the hold outlives the tenant; it is no longer its */
	gpumig_view_changed(m);
	gpumig_state_mutex_unlock(m);
	return ret ? -EBUSY : 0;
}
EXPORT_SYMBOL_GPL(gpumig_mig_close);

/**
 * gpumig_mig_unquarantine() - an operator releases a quarantined device
 * @m: device
 *
 * The backend scrubs the device (reset, memory erased) before it becomes
 * usable again, so no tenant can open it half cleaned.
 *
 * Return: 0, -EINVAL when the device was not quarantined, or the scrub's
 * error (the device stays quarantined).
 */
int gpumig_mig_unquarantine(struct gpumig_mig *m)
{
	int ret = -EINVAL;

	gpumig_state_mutex_lock(m);
	if (m->quarantined) {
		ret = m->ops->scrub(m->priv);
		if (ret) {
			dev_err(m->vdev->dev, "quarantine stays: the scrub failed (%d)\n", ret);
		} else {
			gpumig_quarantine_clear(m->vdev->dev);
			gpumig_set_why(m, "%s", "");
			WRITE_ONCE(m->quarantined, false);
			gpumig_notify(m, GPUMIG_NOTIFY_QUARANTINE);
			dev_notice(m->vdev->dev, "quarantine lifted by the operator\n");
		}
	}
	trace_gpumig_unquarantine(m->vdev->dev, ret);
	gpumig_state_mutex_unlock(m);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_mig_unquarantine);

/**
 * gpumig_sysfs_confirm() - an operator's yes to an action attribute
 * @buf: what was written: exactly "1", "y", "Y", "yes" or "on", a newline
 *	after it at most (kstrtobool() would take "1x" or "yes-please")
 *
 * For front ends' write-only attributes such as migration/unquarantine.
 *
 * Return: 0 to go ahead, -EINVAL for a no or for nonsense.
 */
int gpumig_sysfs_confirm(const char *buf)
{
	static const char *const yes[] = { "1", "y", "Y", "yes", "on" };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(yes); i++)
		if (sysfs_streq(buf, yes[i]))
			return 0;
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(gpumig_sysfs_confirm);

/* ---- setup ---------------------------------------------------------------- */

/**
 * gpumig_dma_logging_supported() - can this kernel carry DMA-logging reports?
 *
 * Only a kernel built with CONFIG_IOMMUFD_DRIVER has a working
 * iova_bitmap_set(); elsewhere (Debian's 6.12) every DMA_LOGGING_REPORT
 * fails in the VFIO core before a driver is asked.
 *
 * Return: true where devices may offer VFIO DMA logging.
 */
bool gpumig_dma_logging_supported(void)
{
	return IS_ENABLED(CONFIG_IOMMUFD_DRIVER);
}
EXPORT_SYMBOL_GPL(gpumig_dma_logging_supported);

static bool gpumig_ops_valid(const struct gpumig_backend_ops *o)
{
	bool log = o->dma_log_start && o->dma_log_stop && o->dma_log_report;
	bool track = o->vram_track && o->vram_next_dirty && o->vram_dirty_count;
	bool vendor = o->vendor_size && o->vendor_save && o->vendor_restore;

	/* Each set all or none. */
	if (!log && (o->dma_log_start || o->dma_log_stop || o->dma_log_report))
		return false;
	if (!vendor && (o->vendor_size || o->vendor_save || o->vendor_restore))
		return false;
	if (!track && (o->vram_track || o->vram_next_dirty || o->vram_dirty_count ||
		       o->vram_take_zero_run))
		return false;
	return o->quiesce && o->unquiesce && o->invalidate && o->vram_read &&
	       o->vram_write && o->arch_size && o->arch_save && o->arch_restore &&
	       o->teardown && o->scrub;
}

/**
 * gpumig_stream_minor() - the oldest stream minor that carries a geometry
 * @geo: geometry, defaults filled in
 *
 * Return: 0 for the defaults (every version carries them; the device
 * writes 1.1 unless capped, gpumig_stream_written()), else 2.
 */
u16 gpumig_stream_minor(const struct gpumig_geometry *geo)
{
	if (geo->block_shift == GPUMIG_BLOCK_SHIFT && geo->arch_parts == 1 &&
	    geo->arch_part_max <= GPUMIG_ARCH_MAX && !geo->vendor_max)
		return 0;
	return 2;
}

/**
 * gpumig_stream_written() - the stream minor the device writes now
 * @m: device, state mutex held or the result used as a hint
 *
 * A geometry that needs 1.2 writes 1.2 (or nothing: the saving file is
 * refused under a lower cap); the default one writes 1.1, or 1.0 under
 * that cap (zero runs as a zero chunk per block, which 1.0 readers take).
 *
 * Return: the minor.
 */
u16 gpumig_stream_written(const struct gpumig_mig *m)
{
	return m->stream_need >= 2 ? m->stream_need : min_t(u16, m->stream_max, 1);
}

/**
 * gpumig_mig_set_stream_max() - cap the stream version the device writes
 * @m: device
 * @minor: the newest minor of major GPUMIG_STREAM_MAJOR it may write
 *
 * For a pool of hosts running several releases: a device capped at what
 * the oldest destination reads migrates to it (migration/stream_max).
 * Only while no saving file exists; the cap lasts for the binding.
 *
 * A cap below what post-copy needs is refused while migration/postcopy
 * is 1: the next migration would not defer its VRAM although asked to,
 * and the request would outlive the cap into a later migration.
 *
 * Return: 0, -EINVAL for a minor this engine cannot write, -EBUSY while a
 * migration is under way or while post-copy is asked for and @minor
 * cannot carry it.
 */
int gpumig_mig_set_stream_max(struct gpumig_mig *m, u16 minor)
{
	int ret = 0;

	if (minor > GPUMIG_STREAM_MINOR)
		return -EINVAL;
	gpumig_state_mutex_lock(m);
	if (m->saving || (minor < GPUMIG_PC_STREAM_MINOR && READ_ONCE(m->pc_enabled)))
		ret = -EBUSY;
	else
		m->stream_max = minor;
	gpumig_view_changed(m);
	gpumig_state_mutex_unlock(m);
	return ret;
}
EXPORT_SYMBOL_GPL(gpumig_mig_set_stream_max);

/**
 * gpumig_mig_stream_max() - the cap of gpumig_mig_set_stream_max()
 * @m: device
 *
 * Return: the minor.
 */
u16 gpumig_mig_stream_max(struct gpumig_mig *m)
{
	return READ_ONCE(m->stream_max);
}
EXPORT_SYMBOL_GPL(gpumig_mig_stream_max);

/* @geo with its defaults filled in, checked against @ops and @compat. */
static int gpumig_geometry_fill(struct gpumig_geometry *g, const struct gpumig_geometry *geo,
				const struct gpumig_backend_ops *ops,
				const struct gpumig_compat *compat)
{
	if (geo)
		*g = *geo;
	else
		memset(g, 0, sizeof(*g));
	g->block_shift = g->block_shift ?: GPUMIG_BLOCK_SHIFT;
	g->arch_parts = g->arch_parts ?: 1;
	g->arch_part_max = g->arch_part_max ?: GPUMIG_ARCH_MAX;
	if (!gpumig_block_shift_valid(g->block_shift) || !compat->vram_size ||
	    compat->vram_size & (BIT_ULL(g->block_shift) - 1))
		return -EINVAL;
	if (g->arch_parts > GPUMIG_ARCH_PARTS_MAX || g->arch_part_max > GPUMIG_ARCH_PART_MAX ||
	    (u64)g->arch_parts * g->arch_part_max > GPUMIG_ARCH_TOTAL_MAX)
		return -EINVAL;
	if (g->vendor_max > GPUMIG_VENDOR_MAX || !g->vendor_max != !ops->vendor_save)
		return -EINVAL;
	return 0;
}

/**
 * gpumig_mig_create() - hand a device's migration to the engine
 * @vdev: the VFIO device, not registered yet
 * @vops: the front end's VFIO callbacks (GPUMIG_DEFINE_VFIO_OPS())
 * @ops: backend
 * @priv: argument of every backend op
 * @compat: the device's compatibility descriptor (its @block_shift and
 *	@stream_minor are the engine's to fill, from @geo)
 * @geo: how the device's migration is cut, or NULL for the defaults
 *
 * Sets @vdev's migration flags (STOP_COPY, P2P, PRE_COPY) and ops.  A
 * device quarantined before (under an earlier binding) starts quarantined.  DMA
 * logging is offered only where the kernel can carry the reports
 * (gpumig_dma_logging_supported()): QEMU aborts the migration of a device
 * that claimed log_ops whose reports then fail; without them QEMU treats
 * all guest memory as dirty, which is slower but right.
 *
 * Return: the migration state, or an ERR_PTR.
 */
struct gpumig_mig *gpumig_mig_create(struct vfio_device *vdev,
				     const struct gpumig_vfio_ops *vops,
				     const struct gpumig_backend_ops *ops, void *priv,
				     const struct gpumig_compat *compat,
				     const struct gpumig_geometry *geo)
{
	struct gpumig_geometry g;
	char why[GPUMIG_MSG_LEN];
	struct gpumig_mig *m;

	if (WARN_ON(!gpumig_ops_valid(ops)) ||
	    WARN_ON(gpumig_geometry_fill(&g, geo, ops, compat)))
		return ERR_PTR(-EINVAL);
	/* uncharged: made once when the device is created, not by a user's fd */
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->vdev = vdev;
	m->ops = ops;
	m->priv = priv;
	m->compat = *compat;
	m->geo = g;
	m->compat.block_shift = g.block_shift;
	m->stream_need = gpumig_stream_minor(&g);
	m->stream_max = GPUMIG_STREAM_MINOR;
	m->compat.stream_minor = gpumig_stream_written(m);
	m->log_ops = gpumig_dma_logging_supported() && ops->dma_log_start;
	WRITE_ONCE(m->state, VFIO_DEVICE_STATE_RUNNING);
	mutex_init(&m->state_mutex);
	mutex_init(&m->view_lock);
	spin_lock_init(&m->reset_lock);
	spin_lock_init(&m->why_lock);
	spin_lock_init(&m->poll_lock);
	spin_lock_init(&m->pc_lock);
	m->pc_timeout_s = GPUMIG_PC_TIMEOUT_S;
	gpumig_notify_init(m);
	gpumig_pc_source_adopt(m);
	gpumig_converge_init(m);
	/* A quarantine from before this binding still holds. */
	if (gpumig_quarantine_get(vdev->dev, why, sizeof(why))) {
		m->quarantined = true;
		gpumig_set_why(m, "quarantined: %s", why);
		dev_warn(vdev->dev, "still quarantined: %s\n", why);
	}

	vdev->migration_flags = VFIO_MIGRATION_STOP_COPY | VFIO_MIGRATION_P2P |
				VFIO_MIGRATION_PRE_COPY;
	vdev->mig_ops = &vops->mig;
	vdev->log_ops = m->log_ops ? &vops->log : NULL;
	return m;
}
EXPORT_SYMBOL_GPL(gpumig_mig_create);

/**
 * gpumig_mig_destroy() - end every data file and free the state
 * @m: state, or NULL
 */
void gpumig_mig_destroy(struct gpumig_mig *m)
{
	if (!m)
		return;
	gpumig_state_mutex_lock(m);
	gpumig_disable_files(m);
	gpumig_pc_device_gone(m);
	gpumig_state_mutex_unlock(m);
	gpumig_converge_exit(m);
	gpumig_notify_exit(m);
	mutex_destroy(&m->view_lock);
	mutex_destroy(&m->state_mutex);
	kfree(m);
}
EXPORT_SYMBOL_GPL(gpumig_mig_destroy);
