// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu's processor: the kthread that runs the device model while the
 * device is open, and what waits on it: a quiesce that is verified (stop
 * at a step boundary, or drain and check within a bound) and a host
 * invalidation that completes only when the device acknowledges it.  The
 * model never sleeps on anything; it tells its host through the
 * environment's kick and stepped ops, which land here.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/wait.h>

#include "simgpu_host.h"

/**
 * simgpu_proc_init() - a stopped processor for @core
 * @p: processor
 * @core: the model it will run
 */
void simgpu_proc_init(struct simgpu_proc *p, struct simgpu_core *core)
{
	p->core = core;
	init_waitqueue_head(&p->wq);
	init_waitqueue_head(&p->step_wq);
	atomic_set(&p->kick, 0);
	p->thread = NULL;
}

/**
 * simgpu_proc_kick() - wake the processor (the model's env kick)
 * @p: processor
 */
void simgpu_proc_kick(struct simgpu_proc *p)
{
	atomic_set(&p->kick, 1);
	wake_up(&p->wq);
}

/**
 * simgpu_proc_stepped() - a pass ended (the model's env stepped)
 * @p: processor
 */
void simgpu_proc_stepped(struct simgpu_proc *p)
{
	wake_up_all(&p->step_wq);
}

/**
 * simgpu_quiesce() - stop the device, verified
 * @p: its processor
 * @timeout_ms: how long draining may take
 *
 * With preemption on, the device stops at its next step boundary; a
 * command in flight keeps its progress, which the architectural state
 * carries.  With preemption off, commands already started must finish
 * first; if they do not within @timeout_ms the device runs on and
 * -EBUSY is returned.
 *
 * Return: 0 or -EBUSY.
 */
int simgpu_quiesce(struct simgpu_proc *p, unsigned int timeout_ms)
{
	struct simgpu_core *core = p->core;

	if (simgpu_core_pause(core, !READ_ONCE(core->knobs.preempt)))
		return 0;	/* taking the lock once was the step boundary */
	wait_event_timeout(p->step_wq, simgpu_core_paused_racy(core),
			   msecs_to_jiffies(timeout_ms));
	if (simgpu_core_paused(core))
		return 0;
	simgpu_core_resume(core);
	return -EBUSY;
}

/**
 * simgpu_unquiesce() - let the device run again
 * @p: its processor
 */
void simgpu_unquiesce(struct simgpu_proc *p)
{
	simgpu_core_resume(p->core);
}

/**
 * simgpu_host_invalidate() - invalidate every translation, acknowledged
 * @p: the device's processor, running
 * @timeout_ms: how long to wait for the acknowledgment
 *
 * Return: 0 or -ETIMEDOUT.
 */
int simgpu_host_invalidate(struct simgpu_proc *p, unsigned int timeout_ms)
{
	struct simgpu_core *core = p->core;
	u32 seq = simgpu_core_host_inval(core);

	wait_event_timeout(p->step_wq, simgpu_core_host_inval_acked_racy(core, seq),
			   msecs_to_jiffies(timeout_ms));
	return simgpu_core_host_inval_end(core, seq) ? 0 : -ETIMEDOUT;
}

static bool simgpu_woken(struct simgpu_proc *p)
{
	return atomic_read(&p->kick) || kthread_should_stop();
}

static int simgpu_thread(void *data)
{
	struct simgpu_proc *p = data;
	struct simgpu_core *core = p->core;

	while (!kthread_should_stop()) {
		u32 throttle = READ_ONCE(core->knobs.throttle_us);
		bool more;

		atomic_set(&p->kick, 0);
		more = simgpu_core_run(core, throttle ? 1 : 16);
		if (throttle)
			usleep_range(throttle, throttle + throttle / 8 + 1);
		if (more) {
			/* Waiting for a timed step: do not spin. */
			if (simgpu_core_timed_work(core))
				wait_event_interruptible_timeout(p->wq, simgpu_woken(p),
								 usecs_to_jiffies(500));
			cond_resched();
			continue;
		}
		wait_event_interruptible(p->wq, simgpu_woken(p));
	}
	return 0;
}

/**
 * simgpu_proc_start() - start the processor
 * @p: processor
 * @name: thread name
 *
 * Return: 0 or a negative errno.
 */
int simgpu_proc_start(struct simgpu_proc *p, const char *name)
{
	struct task_struct *t;

	t = kthread_run(simgpu_thread, p, "simgpu/%s", name);
	if (IS_ERR(t))
		return PTR_ERR(t);
	p->thread = t;
	return 0;
}

/**
 * simgpu_proc_stop() - stop the processor
 * @p: processor
 *
 * Returns after the current pass finished; nothing runs afterwards.
 */
void simgpu_proc_stop(struct simgpu_proc *p)
{
	if (!p->thread)
		return;
	kthread_stop(p->thread);
	p->thread = NULL;
}

/**
 * simgpu_proc_running() - is the thread there?
 * @p: processor
 *
 * Return: true between start and stop.
 */
bool simgpu_proc_running(struct simgpu_proc *p)
{
	return p->thread;
}
