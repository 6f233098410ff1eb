// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu device model: what a host drives for migration.  Pause (stop
 * scheduling, or drain), resume, and the host's acknowledged translation
 * invalidation, and the throttle of the tenant's work (auto-converge);
 * the front ends (the mdev's proc.c, simgpu-pci's PF commands) wait on the
 * racy forms and end with the locked ones.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/mutex.h>

#include <kunit/visibility.h>

#include "simgpu.h"
/**
 * simgpu_core_pause() - stop scheduling work
 * @core: device
 * @drain: let commands already started finish first (preemption off);
 *	otherwise stop at the current step boundary, each command in flight
 *	keeping its progress for the architectural state
 *
 * A drain completes when the processor finds nothing in flight; the host
 * waits for simgpu_core_paused() (or its racy form in a wait condition)
 * and calls simgpu_core_resume() if it gives up.
 *
 * Return: true when the device is stopped already.
 */
bool simgpu_core_pause(struct simgpu_core *core, bool drain)
{
	bool stopped;

	mutex_lock(&core->lock);
	WRITE_ONCE(core->run_state, drain ? SIMGPU_DRAIN : SIMGPU_STOPPED);
	simgpu_drain_done(core);
	stopped = core->run_state == SIMGPU_STOPPED;
	mutex_unlock(&core->lock);
	if (!stopped)
		core->env->kick(core->ctx);
	return stopped;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_pause);

/**
 * simgpu_core_paused() - is the device stopped?
 * @core: device
 *
 * Return: true once a pause completed.
 */
bool simgpu_core_paused(struct simgpu_core *core)
{
	bool stopped;

	mutex_lock(&core->lock);
	stopped = core->run_state == SIMGPU_STOPPED;
	mutex_unlock(&core->lock);
	return stopped;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_paused);

/**
 * simgpu_core_paused_racy() - simgpu_core_paused() for a wait condition
 * @core: device
 *
 * Return: what the state looked like; recheck with simgpu_core_paused().
 */
bool simgpu_core_paused_racy(struct simgpu_core *core)
{
	return READ_ONCE(core->run_state) == SIMGPU_STOPPED;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_paused_racy);

/**
 * simgpu_core_resume() - schedule work again
 * @core: device
 */
void simgpu_core_resume(struct simgpu_core *core)
{
	mutex_lock(&core->lock);
	WRITE_ONCE(core->run_state, SIMGPU_RUN);
	core->dirty_start = simgpu_run_clock(core, ktime_get());
	core->dirty_done = 0;
	mutex_unlock(&core->lock);
	core->env->kick(core->ctx);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_resume);

/**
 * simgpu_core_host_inval() - ask the device to invalidate every translation
 * @core: device
 *
 * The request goes through the device like a guest's (the fault knobs
 * delay or lose it); it is acknowledged by a processor pass, even while
 * the device is paused.
 *
 * Return: the request's sequence number.
 */
u32 simgpu_core_host_inval(struct simgpu_core *core)
{
	u32 seq;

	mutex_lock(&core->lock);
	seq = ++core->host_inval_seq;
	core->host_inval_pending = true;
	core->host_inval_at = ktime_add_ms(ktime_get(), READ_ONCE(core->knobs.ack_delay_ms));
	mutex_unlock(&core->lock);
	core->env->kick(core->ctx);
	return seq;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_host_inval);

/**
 * simgpu_core_host_inval_acked_racy() - for a wait condition
 * @core: device
 * @seq: the request
 *
 * Return: whether the acknowledgment looked there.
 */
bool simgpu_core_host_inval_acked_racy(struct simgpu_core *core, u32 seq)
{
	return READ_ONCE(core->host_inval_ack) == seq;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_host_inval_acked_racy);

/**
 * simgpu_core_host_inval_end() - the host stops waiting for a request
 * @core: device
 * @seq: the request
 *
 * A late acknowledgment is no use: the request is withdrawn.
 *
 * Return: true when the device acknowledged @seq.
 */
bool simgpu_core_host_inval_end(struct simgpu_core *core, u32 seq)
{
	bool acked;

	mutex_lock(&core->lock);
	acked = core->host_inval_ack == seq;
	core->host_inval_pending = false;
	mutex_unlock(&core->lock);
	return acked;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_host_inval_end);

/**
 * simgpu_core_set_throttle() - give the tenant's work a smaller share of
 *	the device's time, or all of it again
 * @core: device
 * @pct: share taken, 0 (none) to %SIMGPU_THROTTLE_MAX; more is clamped
 *
 * The tenant's queues and its background writer run in the first
 * (100 - @pct) % of each %SIMGPU_SLICE_NS slice: less time, nothing
 * stopped, nothing in flight lost.  A drain (simgpu_core_pause()) runs at
 * full speed whatever the throttle.  The throttle is the host's, as a
 * pause is: the guest's reset does not end it.
 */
void simgpu_core_set_throttle(struct simgpu_core *core, u32 pct)
{
	ktime_t now = ktime_get();

	pct = min_t(u32, pct, SIMGPU_THROTTLE_MAX);
	mutex_lock(&core->lock);
	core->share_base = simgpu_run_clock(core, now);
	core->share_from = now;
	WRITE_ONCE(core->throttle_pct, pct);
	mutex_unlock(&core->lock);
	core->env->kick(core->ctx);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_set_throttle);

/**
 * simgpu_core_throttle() - the host's throttle now
 * @core: device
 *
 * Return: 0..%SIMGPU_THROTTLE_MAX.
 */
u32 simgpu_core_throttle(struct simgpu_core *core)
{
	return READ_ONCE(core->throttle_pct);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_throttle);
