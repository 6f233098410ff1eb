// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu command processor: the kthread that runs the device model while
 * the device is open, and what waits on it: a quiesce that is verified
 * (stop at a step boundary, or drain and check), a host invalidation that
 * completes only when the device acknowledges it.  The model itself
 * (core.c) never sleeps on anything; KUnit steps it without this thread.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/wait.h>

#include "simgpu.h"

/*
 * Wait conditions cannot sleep on the lock; these read racily and are
 * rechecked under it.  q->active and host_inval_ack only change under the
 * lock, and the processor wakes step_wq after every pass.
 */
static bool simgpu_drained(struct simgpu_core *core)
{
	u32 i;

	for (i = 0; i < core->nr_queues; i++)
		if (READ_ONCE(core->q[i].active))
			return false;
	return true;
}

/**
 * simgpu_quiesce() - stop the device, verified
 * @core: device
 * @timeout_ms: how long draining may take
 *
 * With preemption on, the processor stops at its next step boundary; a
 * command in flight keeps its progress, which the architectural state
 * carries.  With preemption off, commands already started must finish
 * first; if they do not within @timeout_ms the device runs on and
 * -EBUSY is returned.
 *
 * Return: 0 or -EBUSY.
 */
int simgpu_quiesce(struct simgpu_core *core, unsigned int timeout_ms)
{
	bool preempt = READ_ONCE(core->knobs.preempt);

	mutex_lock(&core->lock);
	core->run_state = preempt ? SIMGPU_STOPPED : SIMGPU_DRAIN;
	mutex_unlock(&core->lock);
	if (preempt)
		return 0;	/* holding the lock once was the step boundary */

	simgpu_kick(core);
	wait_event_timeout(core->step_wq, simgpu_drained(core), msecs_to_jiffies(timeout_ms));
	mutex_lock(&core->lock);
	if (!simgpu_drained(core)) {
		mutex_unlock(&core->lock);
		simgpu_unquiesce(core);
		return -EBUSY;
	}
	core->run_state = SIMGPU_STOPPED;
	mutex_unlock(&core->lock);
	return 0;
}

/**
 * simgpu_unquiesce() - let the device run again
 * @core: device
 */
void simgpu_unquiesce(struct simgpu_core *core)
{
	mutex_lock(&core->lock);
	core->run_state = SIMGPU_RUN;
	core->dirty_start = ktime_get();
	core->dirty_done = 0;
	mutex_unlock(&core->lock);
	simgpu_kick(core);
}

static bool simgpu_host_acked(struct simgpu_core *core, u32 seq)
{
	return READ_ONCE(core->host_inval_ack) == seq;
}

/**
 * simgpu_host_invalidate() - invalidate every translation, acknowledged
 * @core: device, its processor running
 * @timeout_ms: how long to wait for the acknowledgment
 *
 * The request goes through the device like a guest's (the fault knobs
 * delay or lose it); only the device's acknowledgment completes it.
 *
 * Return: 0 or -ETIMEDOUT.
 */
int simgpu_host_invalidate(struct simgpu_core *core, unsigned int timeout_ms)
{
	bool acked;
	u32 seq;

	mutex_lock(&core->lock);
	seq = ++core->host_inval_seq;
	core->host_inval_pending = true;
	core->host_inval_at = ktime_add_ms(ktime_get(), READ_ONCE(core->knobs.ack_delay_ms));
	mutex_unlock(&core->lock);
	simgpu_kick(core);
	wait_event_timeout(core->step_wq, simgpu_host_acked(core, seq),
			   msecs_to_jiffies(timeout_ms));
	mutex_lock(&core->lock);
	acked = core->host_inval_ack == seq;
	core->host_inval_pending = false;	/* a late acknowledgment is no use */
	mutex_unlock(&core->lock);
	return acked ? 0 : -ETIMEDOUT;
}

/**
 * simgpu_kick() - wake the command processor
 * @core: device
 */
void simgpu_kick(struct simgpu_core *core)
{
	atomic_set(&core->kick, 1);
	wake_up(&core->wq);
}

static bool simgpu_woken(struct simgpu_core *core)
{
	return atomic_read(&core->kick) || kthread_should_stop();
}

/* Work that becomes runnable with time rather than with a doorbell. */
static bool simgpu_timed_work(struct simgpu_core *core)
{
	return READ_ONCE(core->knobs.kernel_step_us) ||
	       READ_ONCE(core->knobs.ack_delay_ms) ||
	       READ_ONCE(core->knobs.dirty_rate);
}

static int simgpu_thread(void *data)
{
	struct simgpu_core *core = data;

	while (!kthread_should_stop()) {
		u32 throttle = READ_ONCE(core->knobs.throttle_us);
		bool more;

		atomic_set(&core->kick, 0);
		more = simgpu_core_run(core, throttle ? 1 : 16);
		if (throttle)
			usleep_range(throttle, throttle + throttle / 8 + 1);
		if (more) {
			/* Waiting for a timed step: do not spin. */
			if (simgpu_timed_work(core))
				wait_event_interruptible_timeout(core->wq,
								 simgpu_woken(core),
								 usecs_to_jiffies(500));
			cond_resched();
			continue;
		}
		wait_event_interruptible(core->wq, simgpu_woken(core));
	}
	return 0;
}

/**
 * simgpu_core_start() - start the command processor
 * @core: device
 * @name: thread name
 *
 * Return: 0 or a negative errno.
 */
int simgpu_core_start(struct simgpu_core *core, const char *name)
{
	struct task_struct *t;

	t = kthread_run(simgpu_thread, core, "simgpu/%s", name);
	if (IS_ERR(t))
		return PTR_ERR(t);
	core->thread = t;
	return 0;
}

/**
 * simgpu_core_stop() - stop the command processor
 * @core: device
 *
 * Returns after the current step finished; nothing runs afterwards.
 */
void simgpu_core_stop(struct simgpu_core *core)
{
	if (!core->thread)
		return;
	kthread_stop(core->thread);
	core->thread = NULL;
}
