// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration engine: the VFIO migration uAPI v2 state machine and
 * the engine's lock protocol, for any backend (device.c holds the
 * device's life around it).
 *
 * The step function sees single arcs (the VFIO core computes the path)
 * and is a flat list of "if (cur == X && new == Y)" cases.  Every entry
 * point takes the state mutex with gpumig_state_mutex_lock() and lets go
 * with gpumig_state_mutex_unlock(), which runs a reset that arrived
 * meanwhile: no path releases it any other way.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/file.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/module.h>

#include "engine.h"

#include <trace/events/gpumig.h>

/* ---- lock protocol -------------------------------------------------------- */

/**
 * gpumig_state_mutex_lock() - take the device's state mutex
 * @m: device
 *
 * Pair with gpumig_state_mutex_unlock(), never with mutex_unlock().
 */
void gpumig_state_mutex_lock(struct gpumig_mig *m)
{
	mutex_lock(&m->state_mutex);
}

void gpumig_disable_files(struct gpumig_mig *m)
{
	lockdep_assert_held(&m->state_mutex);
	if (m->saving) {
		gpumig_converge_stop(m);
		spin_lock_irq(&m->poll_lock);
		m->poll_file = NULL;
		spin_unlock_irq(&m->poll_lock);
		if (gpumig_file_complete(m->saving)) {
			m->migrated_away = true;
			/* Read to its end: what the manifest owes leaves the device. */
			mutex_lock(&m->saving->lock);
			if (m->saving->pc)
				gpumig_pc_source_begin(m, m->saving);
			mutex_unlock(&m->saving->lock);
		}
		gpumig_file_disable(m->saving);
		m->saving = NULL;
		if (m->ops->vram_track)
			m->ops->vram_track(m->priv, false);
	}
	if (m->resuming) {
		gpumig_file_disable(m->resuming);
		m->resuming = NULL;
	}
}

/* The uAPI's VFIO_DEVICE_RESET: captured data is gone, the state RUNNING. */
void gpumig_reset_locked(struct gpumig_mig *m)
{
	lockdep_assert_held(&m->state_mutex);
	gpumig_disable_files(m);
	m->quiesced = false;	/* the device's own reset restarted it */
	m->p2p_stopped = false;
	m->vram_left = false;	/* what it holds stays its destination's */
	WRITE_ONCE(m->state, VFIO_DEVICE_STATE_RUNNING);
	gpumig_view_changed(m);
	gpumig_notify(m, GPUMIG_NOTIFY_STATE);
}

/**
 * gpumig_state_mutex_unlock() - release the state mutex, running a reset
 *	that arrived while it was held
 * @m: device, state mutex held
 *
 * The reset path may not sleep on the state mutex (lock order with the
 * IOMMU and mm locks, as in the kernel's mlx5 driver), so it leaves the
 * work to the holder, which does it here before letting go.  The reset
 * lock is dropped before the reset itself, which sleeps.
 */
void gpumig_state_mutex_unlock(struct gpumig_mig *m)
{
	lockdep_assert_held(&m->state_mutex);
again:
	spin_lock(&m->reset_lock);
	if (m->deferred_reset) {
		m->deferred_reset = false;
		spin_unlock(&m->reset_lock);
		gpumig_reset_locked(m);
		goto again;
	}
	mutex_unlock(&m->state_mutex);
	spin_unlock(&m->reset_lock);
}

/* ---- state machine -------------------------------------------------------- */

/*
 * The P2P states stop the device's own DMA: the uAPI lets a device stop
 * only its peer-to-peer DMA there, but a GPU whose page tables the tenant
 * writes cannot tell a peer's BAR from memory, so all of it stops (the
 * backend's verified quiesce) while the device still answers as a target.
 */
static int gpumig_quiesce_device(struct gpumig_mig *m)
{
	u64 t0, t1;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	if (m->quiesced)
		return 0;
	t0 = ktime_get_ns();
	ret = m->ops->quiesce(m->priv);
	t1 = ktime_get_ns();
	atomic64_set(&m->stats.quiesce_ns, t1 - t0);
	trace_gpumig_quiesce(m->vdev->dev, t1 - t0, ret);
	if (ret) {
		gpumig_set_why(m, "device did not quiesce (%d)", ret);
		dev_warn(m->vdev->dev, "migration: device did not quiesce (%d); it keeps running\n",
			 ret);
		return ret;
	}
	m->quiesced = true;
	return 0;
}

/* Stop the device for capture: quiesced, then acknowledged invalidation. */
static int gpumig_stop_device(struct gpumig_mig *m)
{
	u64 t0, t1;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	ret = gpumig_quiesce_device(m);
	if (ret)
		return ret;
	t0 = ktime_get_ns();
	ret = m->ops->invalidate(m->priv);
	t1 = ktime_get_ns();
	atomic64_set(&m->stats.invalidate_ns, t1 - t0);
	trace_gpumig_invalidate(m->vdev->dev, t1 - t0, ret);
	if (ret) {
		gpumig_set_why(m, "translation invalidation not acknowledged (%d)", ret);
		dev_warn(m->vdev->dev,
			 "migration: translation invalidation not acknowledged (%d); it stays quiesced until RUNNING\n",
			 ret);
		return ret;
	}
	return 0;
}

static void gpumig_start_device(struct gpumig_mig *m)
{
	lockdep_assert_held(&m->state_mutex);
	if (m->quiesced) {
		m->ops->unquiesce(m->priv);
		m->quiesced = false;
	}
	if (m->p2p_stopped) {
		m->ops->p2p(m->priv, false);
		m->p2p_stopped = false;
	}
}

/*
 * The P2P states: the backend's own stop of its peer-to-peer DMA where it
 * has one (@p2p), else the whole device quiesced (see above).
 */
static int gpumig_p2p_stop(struct gpumig_mig *m)
{
	int ret;

	lockdep_assert_held(&m->state_mutex);
	if (!m->ops->p2p)
		return gpumig_quiesce_device(m);
	if (m->p2p_stopped)
		return 0;
	ret = m->ops->p2p(m->priv, true);
	if (ret) {
		gpumig_set_why(m, "device did not stop its peer-to-peer DMA (%d)", ret);
		dev_warn(m->vdev->dev, "migration: device did not stop its peer-to-peer DMA (%d)\n",
			 ret);
		return ret;
	}
	m->p2p_stopped = true;
	return 0;
}

static struct file *gpumig_new_saving(struct gpumig_mig *m, bool stop_copy)
{
	struct gpumig_mig_file *migf;

	/* Its own memory still arriving: not before all of it is here. */
	if (gpumig_pc_busy(m)) {
		gpumig_set_why(m, "post-copy: the VRAM of its last migration is still arriving");
		dev_warn(m->vdev->dev, "migration refused: post-copy of its VRAM is still under way\n");
		return ERR_PTR(-EBUSY);
	}
	/*
	 * Its VRAM left with a post-copy and it has not run since: the
	 * blocks it owed are held for that destination, no longer in it, and
	 * a second stream would carry zeroes for them under valid CRCs.
	 */
	if (stop_copy && m->vram_left) {
		gpumig_set_why(m, "%s",
			       "post-copy: its owed VRAM left with the last migration; not saved again until it runs");
		dev_warn(m->vdev->dev, "migration refused: its VRAM left with a post-copy\n");
		return ERR_PTR(-EBUSY);
	}
	/* A cap the device cannot honour: refused before anything moves. */
	if (m->stream_need > m->stream_max) {
		gpumig_set_why(m, "this device needs stream %u.%u; migration/stream_max is %u.%u",
			       GPUMIG_STREAM_MAJOR, m->stream_need, GPUMIG_STREAM_MAJOR,
			       m->stream_max);
		dev_warn(m->vdev->dev, "migration refused: it needs stream %u.%u, capped at %u.%u\n",
			 GPUMIG_STREAM_MAJOR, m->stream_need, GPUMIG_STREAM_MAJOR,
			 m->stream_max);
		return ERR_PTR(-EOPNOTSUPP);
	}
	migf = gpumig_file_new_saving(m, stop_copy);

	if (IS_ERR(migf))
		return ERR_CAST(migf);
	get_file(migf->filp);
	m->saving = migf;
	gpumig_set_why(m, "%s", "");	/* a new migration: no error yet */
	if (migf->pc_refused && READ_ONCE(m->pc_enabled)) {
		gpumig_set_why(m, "%s",
			       "post-copy: the VRAM of an earlier one is still held for its destination; this migration copies VRAM before the stop");
		dev_warn(m->vdev->dev, "post-copy not used: the VRAM of an earlier post-copy is still held for its destination\n");
	}
	spin_lock_irq(&m->poll_lock);
	m->poll_file = migf;
	spin_unlock_irq(&m->poll_lock);
	if (!stop_copy)
		gpumig_converge_start(m);
	return migf->filp;
}

static struct file *gpumig_new_resuming(struct gpumig_mig *m)
{
	struct gpumig_mig_file *migf;

	/* Restoring over VRAM that is still arriving would mix two tenants' data. */
	if (gpumig_pc_busy(m)) {
		gpumig_set_why(m, "post-copy: the VRAM of its last migration is still arriving");
		dev_warn(m->vdev->dev, "restore refused: post-copy of its VRAM is still under way\n");
		return ERR_PTR(-EBUSY);
	}
	migf = gpumig_file_new_resuming(m);
	if (IS_ERR(migf))
		return ERR_CAST(migf);
	get_file(migf->filp);
	m->resuming = migf;
	gpumig_set_why(m, "%s", "");
	return migf->filp;
}

static struct file *gpumig_step(struct gpumig_mig *m, enum vfio_device_mig_state next)
{
	enum vfio_device_mig_state cur = m->state;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	if ((cur == VFIO_DEVICE_STATE_RUNNING && next == VFIO_DEVICE_STATE_RUNNING_P2P) ||
	    (cur == VFIO_DEVICE_STATE_PRE_COPY && next == VFIO_DEVICE_STATE_PRE_COPY_P2P)) {
		ret = gpumig_p2p_stop(m);
		return ret ? ERR_PTR(ret) : NULL;
	}
	if ((cur == VFIO_DEVICE_STATE_RUNNING_P2P && next == VFIO_DEVICE_STATE_RUNNING) ||
	    (cur == VFIO_DEVICE_STATE_PRE_COPY_P2P && next == VFIO_DEVICE_STATE_PRE_COPY)) {
		gpumig_start_device(m);
		return NULL;
	}

	if (cur == VFIO_DEVICE_STATE_RUNNING_P2P && next == VFIO_DEVICE_STATE_STOP) {
		ret = gpumig_stop_device(m);
		return ret ? ERR_PTR(ret) : NULL;
	}
	if (cur == VFIO_DEVICE_STATE_STOP && next == VFIO_DEVICE_STATE_RUNNING_P2P) {
		/* A failed switchover: what post-copy held goes back first. */
		gpumig_pc_source_resumed(m);
		if (!m->ops->p2p)
			return NULL;	/* stays quiesced: a target only, until RUNNING */
		/* Runs again, its P2P DMA stopped first. */
		ret = gpumig_p2p_stop(m);
		if (ret)
			return ERR_PTR(ret);
		if (m->quiesced) {
			m->ops->unquiesce(m->priv);
			m->quiesced = false;
		}
		return NULL;
	}
	if (cur == VFIO_DEVICE_STATE_STOP && next == VFIO_DEVICE_STATE_STOP_COPY)
		return gpumig_new_saving(m, true);
	if (cur == VFIO_DEVICE_STATE_PRE_COPY_P2P && next == VFIO_DEVICE_STATE_STOP_COPY) {
		ret = gpumig_stop_device(m);
		if (ret)
			return ERR_PTR(ret);
		gpumig_converge_stop(m);	/* the pre-copy is over */
		gpumig_file_stop_copy(m->saving);
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
	if (cur == VFIO_DEVICE_STATE_STOP && next == VFIO_DEVICE_STATE_RESUMING)
		return gpumig_new_resuming(m);
	if (cur == VFIO_DEVICE_STATE_RESUMING && next == VFIO_DEVICE_STATE_STOP) {
		/* A half-restored device never runs: on error, stay in RESUMING. */
		ret = gpumig_file_finish_resume(m->resuming);
		if (ret)
			return ERR_PTR(ret);
		/*
		 * Its VRAM is the stream's now: what it holds for an earlier
		 * post-copy's destination stays that destination's, and never
		 * goes back over it (as after a reset).
		 */
		m->vram_left = false;
		gpumig_disable_files(m);
		m->quiesced = true;	/* restored, stopped; RUNNING starts it */
		return NULL;
	}

	WARN_ON(true);
	return ERR_PTR(-EINVAL);
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
	enum vfio_device_mig_state next, was;
	struct file *res = NULL;
	int ret;

	gpumig_state_mutex_lock(m);
	was = m->state;
	/* ERROR has no arc out but a reset (the VFIO core WARNs if asked). */
	if (m->state == VFIO_DEVICE_STATE_ERROR && new_state != m->state)
		res = ERR_PTR(-EINVAL);
	while (!res && new_state != m->state) {
		ret = vfio_mig_get_next_state(m->vdev, m->state, new_state, &next);
		if (ret) {
			res = ERR_PTR(ret);
			break;
		}
		res = gpumig_step(m, next);
		trace_gpumig_state(m->vdev->dev, m->state, next, PTR_ERR_OR_ZERO(res));
		if (IS_ERR(res))
			break;
		WRITE_ONCE(m->state, next);
		if (WARN_ON(res && new_state != m->state)) {
			fput(res);
			res = ERR_PTR(-EINVAL);
			break;
		}
	}
	gpumig_view_changed(m);
	if (m->state != was)
		gpumig_notify(m, GPUMIG_NOTIFY_STATE);
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
	gpumig_state_mutex_lock(m);
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
 *	if not read yet, and the end section
 *
 * Return: 0.
 */
int gpumig_mig_data_size(struct gpumig_mig *m, unsigned long *len)
{
	gpumig_state_mutex_lock(m);
	*len = gpumig_stopcopy_size(m);
	gpumig_view_changed(m);	/* reports show what the VMM was just told */
	gpumig_state_mutex_unlock(m);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_mig_data_size);
