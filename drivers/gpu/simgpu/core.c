// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu device model: command processing, interrupts, reset.  The
 * register file is regs.c; what a host drives for migration, host.c.
 *
 * simgpu_core_run() is one pass of the command processor: it takes the
 * core's lock for one step at a time (fetch and run a short command, one
 * FILL/COPY chunk, one kernel iteration, one invalidation), so register
 * accesses from the guest interleave with work at step granularity and a
 * step never sees a half-written register.  The thread that calls it
 * while the device is open lives in proc.c; KUnit calls it directly to
 * step the device deterministically.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include <kunit/visibility.h>

#include "simgpu.h"

/**
 * simgpu_kernel_word() - what one kernel iteration does to one word
 * @w: the word
 * @key: the kernel's key
 * @iteration: iteration number, from 0
 *
 * Return: the new word; guests and tests compute the same function.
 */
u32 simgpu_kernel_word(u32 w, u32 key, u32 iteration)
{
	return (w ^ key) * 2654435761U + iteration;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_kernel_word);

static void simgpu_irq(struct simgpu_core *core, u32 bits)
{
	lockdep_assert_held(&core->lock);
	core->int_status |= bits;
	if (bits & core->int_mask) {
		core->stats.irqs++;
		core->env->raise_irq(core->ctx);
	}
}

static void simgpu_queue_fail(struct simgpu_core *core, u32 qi, u32 err, u64 addr)
{
	if (qi < SIMGPU_MAX_QUEUES) {
		core->q[qi].error = err;
		core->q[qi].active = false;
	}
	core->stats.faults++;
	if (!core->err_code) {
		core->err_code = err;
		core->err_queue = qi;
		core->err_addr = addr;
	}
	simgpu_irq(core, SIMGPU_INT_ERROR);
}

bool simgpu_queue_has_work(struct simgpu_core *core, struct simgpu_queue *q)
{
	return (q->ctrl & SIMGPU_QCTRL_ENABLE) && !q->error &&
	       (q->active || q->head != q->tail);
}

static bool simgpu_queue_ready(struct simgpu_core *core, struct simgpu_queue *q)
{
	return simgpu_queue_has_work(core, q) && q->wait_blk < 0 &&
	       (!q->active || !ktime_before(ktime_get(), q->ready_at));
}

/*
 * A step found a block absent: the queue waits for it, and whoever brings
 * blocks in hears which one, the first time.
 */
static void simgpu_wait_block(struct simgpu_core *core, s64 *wait)
{
	*wait = core->wait_blk;
	core->ab.waits++;
	if (core->env->demand)
		core->env->demand(core->ctx, core->wait_blk);
}

/**
 * simgpu_cmd_check() - validate a command
 * @c: decoded command
 *
 * Return: 0 or SIMGPU_ERR_*.
 */
u32 simgpu_cmd_check(const struct simgpu_cmd_state *c)
{
	switch (c->op) {
	case SIMGPU_OP_NOP:
		return 0;
	case SIMGPU_OP_FENCE:
		if (c->args[0] & 7 || c->flags & ~SIMGPU_CMD_F_IRQ)
			return SIMGPU_ERR_BAD_ARGS;
		return 0;
	case SIMGPU_OP_FILL:
		if (c->args[0] & 3 || c->args[1] & 3 || !c->args[1] ||
		    c->args[1] > SIMGPU_MAX_XFER || c->flags)
			return SIMGPU_ERR_BAD_ARGS;
		return 0;
	case SIMGPU_OP_COPY:
		if (!c->args[2] || c->args[2] > SIMGPU_MAX_XFER || c->flags)
			return SIMGPU_ERR_BAD_ARGS;
		return 0;
	case SIMGPU_OP_KERNEL:
		if (c->args[0] & 3 || c->args[1] & 3 || !c->args[1] ||
		    c->args[1] > SIMGPU_MAX_KERNEL_BUF || !c->args[2] ||
		    c->args[2] > SIMGPU_MAX_KERNEL_ITERS || c->args[3] > U32_MAX ||
		    c->flags)
			return SIMGPU_ERR_BAD_ARGS;
		return 0;
	default:
		return SIMGPU_ERR_BAD_OPCODE;
	}
}

static u32 simgpu_cmd_fetch(struct simgpu_core *core, struct simgpu_queue *q)
{
	struct simgpu_cmd raw;
	u64 addr;
	int i;

	if (!q->size || q->size > SIMGPU_RING_MAX_ENTRIES ||
	    (q->size & (q->size - 1)) || q->tail - q->head > q->size) {
		core->fault_addr = q->ring;
		return SIMGPU_ERR_BAD_RING;
	}
	addr = q->ring + (u64)(q->head & (q->size - 1)) * sizeof(raw);
	if (core->env->dma_rw(core->ctx, addr, &raw, sizeof(raw), false)) {
		core->fault_addr = addr;
		return SIMGPU_ERR_RING_DMA;
	}
	memset(&q->cur, 0, sizeof(q->cur));
	q->cur.op = le32_to_cpu(raw.opcode);
	q->cur.flags = le32_to_cpu(raw.flags);
	for (i = 0; i < ARRAY_SIZE(raw.args); i++)
		q->cur.args[i] = le64_to_cpu(raw.args[i]);
	core->fault_addr = addr;
	return simgpu_cmd_check(&q->cur);
}

/* One unit of the current command: 0 and *done, or SIMGPU_ERR_*. */
static u32 simgpu_cmd_step(struct simgpu_core *core, u32 qi, bool *done)
{
	struct simgpu_queue *q = &core->q[qi];
	struct simgpu_cmd_state *c = &q->cur;
	u64 left, n;
	u32 err, i;

	*done = false;
	switch (c->op) {
	case SIMGPU_OP_NOP:
		break;
	case SIMGPU_OP_FENCE: {
		__le64 v = cpu_to_le64(c->args[1]);

		err = simgpu_mem_access(core, c->args[0], &v, sizeof(v), true);
		if (err)
			return err;
		q->fence = c->args[1];
		if (c->flags & SIMGPU_CMD_F_IRQ)
			simgpu_irq(core, SIMGPU_INT_QUEUE(qi));
		break;
	}
	case SIMGPU_OP_FILL:
		left = c->args[1] - c->progress;
		n = min_t(u64, left, SIMGPU_XFER_STEP);
		for (i = 0; i < n / 4; i++)
			((__le32 *)core->bounce)[i] = cpu_to_le32((u32)c->args[2]);
		err = simgpu_mem_access(core, c->args[0] + c->progress,
					core->bounce, n, true);
		if (err)
			return err;
		c->progress += n;
		core->stats.bytes += n;
		if (c->progress < c->args[1])
			return 0;
		break;
	case SIMGPU_OP_COPY:
		left = c->args[2] - c->progress;
		n = min_t(u64, left, SIMGPU_XFER_STEP);
		err = simgpu_mem_access(core, c->args[1] + c->progress,
					core->bounce, n, false);
		if (!err)
			err = simgpu_mem_access(core, c->args[0] + c->progress,
						core->bounce, n, true);
		if (err)
			return err;
		c->progress += n;
		core->stats.bytes += n;
		if (c->progress < c->args[2])
			return 0;
		break;
	case SIMGPU_OP_KERNEL:
		n = c->args[1];
		err = simgpu_mem_access(core, c->args[0], core->scratch, n, false);
		if (err)
			return err;
		for (i = 0; i < n / 4; i++) {
			u32 w = le32_to_cpu(core->scratch[i]);

			w = simgpu_kernel_word(w, (u32)c->args[3], (u32)c->progress);
			core->scratch[i] = cpu_to_le32(w);
		}
		err = simgpu_mem_access(core, c->args[0], core->scratch, n, true);
		if (err)
			return err;
		c->progress++;
		core->stats.kernel_steps++;
		core->stats.bytes += n;
		q->ready_at = ktime_add_us(ktime_get(),
					   READ_ONCE(core->knobs.kernel_step_us));
		if (c->progress < c->args[2])
			return 0;
		break;
	}
	*done = true;
	return 0;
}

static void simgpu_queue_step(struct simgpu_core *core, u32 qi)
{
	struct simgpu_queue *q = &core->q[qi];
	bool done;
	u32 err;

	lockdep_assert_held(&core->lock);
	if (!q->active) {
		err = simgpu_cmd_fetch(core, q);
		if (err) {
			simgpu_queue_fail(core, qi, err, core->fault_addr);
			return;
		}
		q->active = true;
	}
	err = simgpu_cmd_step(core, qi, &done);
	if (err == SIMGPU_STEP_WAIT) {
		simgpu_wait_block(core, &q->wait_blk);
		return;
	}
	if (err) {
		simgpu_queue_fail(core, qi, err, core->fault_addr);
		return;
	}
	if (done) {
		WRITE_ONCE(q->active, false);
		q->head++;
		core->stats.cmds++;
	}
}

/* A started kernel that may not be preempted keeps the processor. */
static int simgpu_pick_queue(struct simgpu_core *core)
{
	u32 i;

	if (core->run_state == SIMGPU_STOPPED)
		return -ENOENT;
	if (core->run_state == SIMGPU_DRAIN) {
		for (i = 0; i < core->nr_queues; i++)
			if (core->q[i].active && simgpu_queue_ready(core, &core->q[i]))
				return i;
		return -ENOENT;
	}

	if (!READ_ONCE(core->knobs.preempt)) {
		for (i = 0; i < core->nr_queues; i++) {
			struct simgpu_queue *q = &core->q[i];

			if (q->active && q->cur.op == SIMGPU_OP_KERNEL &&
			    simgpu_queue_has_work(core, q))
				return simgpu_queue_ready(core, q) ? i : -EAGAIN;
		}
	}
	for (i = 0; i < core->nr_queues; i++) {
		u32 qi = (core->rr + i) % core->nr_queues;

		if (simgpu_queue_ready(core, &core->q[qi])) {
			core->rr = qi + 1;
			return qi;
		}
	}
	return -ENOENT;
}

static void simgpu_service_host_inval(struct simgpu_core *core)
{
	if (!core->host_inval_pending || ktime_before(ktime_get(), core->host_inval_at))
		return;
	core->host_inval_pending = false;
	if (READ_ONCE(core->knobs.ack_drop)) {
		core->stats.inval_dropped++;
		return;
	}
	simgpu_mmu_flush(core);
	WRITE_ONCE(core->host_inval_ack, core->host_inval_seq);
	core->stats.invalidations++;
}

static void simgpu_service_inval(struct simgpu_core *core)
{
	simgpu_service_host_inval(core);
	if (core->run_state == SIMGPU_STOPPED)
		return;		/* the guest's request stays pending, saved */
	if (!core->inval_pending || ktime_before(ktime_get(), core->inval_at))
		return;
	core->inval_pending = false;
	if (READ_ONCE(core->knobs.ack_drop)) {
		core->stats.inval_dropped++;
		return;
	}
	/* Flush first, under the lock every access takes: then acknowledge. */
	simgpu_mmu_flush(core);
	core->inval_ack = core->inval_req;
	core->stats.invalidations++;
	simgpu_irq(core, SIMGPU_INT_INVAL);
}

/**
 * simgpu_share_ns() - the tenant's run time in a throttled span
 * @elapsed: ns since the slices began
 * @pct: throttle, 0..%SIMGPU_THROTTLE_MAX
 *
 * Return: ns of @elapsed in which the tenant's work could run: the first
 * (100 - @pct) % of every %SIMGPU_SLICE_NS slice.
 */
u64 simgpu_share_ns(u64 elapsed, u32 pct)
{
	u64 on = div_u64(SIMGPU_SLICE_NS * (100 - min_t(u32, pct, SIMGPU_THROTTLE_MAX)), 100);
	u64 slices = div_u64(elapsed, SIMGPU_SLICE_NS);
	u64 rest = elapsed - slices * SIMGPU_SLICE_NS;

	return slices * on + min_t(u64, rest, on);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_share_ns);

/**
 * simgpu_share_on() - may the tenant's work run now?
 * @elapsed: ns since the slices began
 * @pct: throttle, 0..%SIMGPU_THROTTLE_MAX
 *
 * Return: true in the tenant's part of the current slice.
 */
bool simgpu_share_on(u64 elapsed, u32 pct)
{
	u64 on = div_u64(SIMGPU_SLICE_NS * (100 - min_t(u32, pct, SIMGPU_THROTTLE_MAX)), 100);

	return !pct || elapsed - div_u64(elapsed, SIMGPU_SLICE_NS) * SIMGPU_SLICE_NS < on;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_share_on);

/**
 * simgpu_run_clock() - the tenant's run clock: wall time, less what a
 *	throttle took from it
 * @core: device, its lock held
 * @now: ktime_get()
 *
 * Return: ns; only differences mean anything.
 */
u64 simgpu_run_clock(struct simgpu_core *core, ktime_t now)
{
	s64 d = ktime_to_ns(ktime_sub(now, core->share_from));

	lockdep_assert_held(&core->lock);
	return core->share_base + simgpu_share_ns(d > 0 ? d : 0, core->throttle_pct);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_run_clock);

/* The tenant's work runs now: unthrottled, or in its share of the slice. */
static bool simgpu_tenant_runs(struct simgpu_core *core)
{
	s64 d;

	if (!core->throttle_pct || core->run_state != SIMGPU_RUN)
		return true;	/* a drain finishes at full speed */
	d = ktime_to_ns(ktime_sub(ktime_get(), core->share_from));
	return simgpu_share_on(d > 0 ? d : 0, core->throttle_pct);
}

static void simgpu_service_workload(struct simgpu_core *core)
{
	u32 rate = READ_ONCE(core->knobs.dirty_rate);
	u64 due, n, ns;

	if (!rate || !core->dirty_pages || core->err_queue == SIMGPU_QUEUE_WORKLOAD ||
	    core->run_state != SIMGPU_RUN || core->workload_wait >= 0)
		return;
	ns = simgpu_run_clock(core, ktime_get()) - core->dirty_start;
	due = div_u64((u64)ns * rate, NSEC_PER_SEC);
	/* Never more than a bounded burst per pass, even after a long stall. */
	for (n = 0; core->dirty_done < due && n < 256; n++) {
		__le64 stamp[2];
		u64 page;
		u32 err;

		/*
		 * Registers are read again after every write: where a host lets
		 * the device's DMA reach its own registers, the last stamp may
		 * have rewritten them (a region of 0 pages ends the pass).
		 */
		if (!core->dirty_pages)
			break;
		page = core->dirty_count % core->dirty_pages;
		stamp[0] = cpu_to_le64(core->dirty_count);
		stamp[1] = cpu_to_le64(page);

		err = simgpu_mem_access(core, core->dirty_base + page * SIMGPU_PAGE_SIZE,
					stamp, sizeof(stamp), true);
		if (err == SIMGPU_STEP_WAIT) {
			/* Paced in run time: what it could not write waits with it. */
			simgpu_wait_block(core, &core->workload_wait);
			core->dirty_done = due;
			return;
		}
		if (err) {
			simgpu_queue_fail(core, SIMGPU_QUEUE_WORKLOAD, err,
					  core->fault_addr);
			return;
		}
		core->dirty_count++;
		core->dirty_done++;
		core->stats.dirty_pages++;
	}
	if (core->dirty_done < due)	/* fell behind: do not catch up later */
		core->dirty_done = due;
}

static bool simgpu_has_work_locked(struct simgpu_core *core)
{
	u32 i;

	lockdep_assert_held(&core->lock);
	if (core->host_inval_pending)
		return true;
	if (core->run_state == SIMGPU_STOPPED)
		return false;
	if (core->inval_pending)
		return true;
	if (!(core->control & SIMGPU_CTRL_ENABLE))
		return false;
	if (READ_ONCE(core->knobs.dirty_rate) && core->dirty_pages && core->workload_wait < 0)
		return true;
	/* A queue waiting for an absent block is woken by its arrival. */
	for (i = 0; i < core->nr_queues; i++)
		if (simgpu_queue_has_work(core, &core->q[i]) && core->q[i].wait_blk < 0)
			return true;
	return false;
}

/* A drain is done when nothing is in flight: the device is stopped. */
void simgpu_drain_done(struct simgpu_core *core)
{
	u32 i;

	lockdep_assert_held(&core->lock);
	if (core->run_state != SIMGPU_DRAIN)
		return;
	for (i = 0; i < core->nr_queues; i++)
		if (core->q[i].active)
			return;
	WRITE_ONCE(core->run_state, SIMGPU_STOPPED);
}

/**
 * simgpu_core_run() - one pass of the command processor
 * @core: device
 * @budget: most queue steps to run
 *
 * Return: true if work remains.
 */
bool simgpu_core_run(struct simgpu_core *core, unsigned int budget)
{
	bool more;

	mutex_lock(&core->lock);
	simgpu_service_inval(core);
	if (core->control & SIMGPU_CTRL_ENABLE && simgpu_tenant_runs(core)) {
		simgpu_service_workload(core);
		while (budget--) {
			int qi = simgpu_pick_queue(core);

			if (qi < 0)
				break;
			simgpu_queue_step(core, qi);
		}
	}
	simgpu_drain_done(core);
	more = simgpu_has_work_locked(core);
	mutex_unlock(&core->lock);
	core->env->stepped(core->ctx);
	return more;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_run);

/**
 * simgpu_core_idle() - nothing queued, running or pending
 * @core: device
 *
 * Return: true when idle.
 */
bool simgpu_core_idle(struct simgpu_core *core)
{
	bool idle;
	u32 i;

	mutex_lock(&core->lock);
	idle = !core->inval_pending;
	for (i = 0; i < core->nr_queues; i++)
		if (simgpu_queue_has_work(core, &core->q[i]))
			idle = false;
	mutex_unlock(&core->lock);
	return idle;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_idle);

void simgpu_reset_locked(struct simgpu_core *core)
{
	lockdep_assert_held(&core->lock);
	core->control = 0;
	core->int_status = 0;
	core->int_mask = 0;
	core->err_code = 0;
	core->err_queue = 0;
	core->err_addr = 0;
	core->pt_root = 0;
	core->inval_req = 0;
	core->inval_ack = 0;
	core->inval_pending = false;
	core->dirty_base = 0;
	core->dirty_pages = 0;
	core->dirty_count = 0;
	core->dirty_done = 0;
	core->rr = 0;
	WRITE_ONCE(core->run_state, SIMGPU_RUN);
	memset(core->q, 0, sizeof(core->q));
	simgpu_absent_reset_locked(core);
	simgpu_mmu_flush(core);
}

/**
 * simgpu_core_lost() - the device's state was lost under its user
 * @core: device, just made or reset
 *
 * For a host whose hardware was reset under the tenant (simgpu-pci's PF):
 * the device says so until its user resets it, with SIMGPU_ERR_DEVICE_LOST
 * on SIMGPU_QUEUE_DEVICE, as a GPU reports a reset it did not ask for.
 */
void simgpu_core_lost(struct simgpu_core *core)
{
	mutex_lock(&core->lock);
	core->err_code = SIMGPU_ERR_DEVICE_LOST;
	core->err_queue = SIMGPU_QUEUE_DEVICE;
	core->err_addr = 0;
	core->stats.faults++;
	simgpu_irq(core, SIMGPU_INT_ERROR);
	mutex_unlock(&core->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_lost);

/**
 * simgpu_core_clear_stats() - counters start again, for a new session
 * @core: device
 */
void simgpu_core_clear_stats(struct simgpu_core *core)
{
	mutex_lock(&core->lock);
	memset(&core->stats, 0, sizeof(core->stats));
	mutex_unlock(&core->lock);
}

/**
 * simgpu_core_reset() - function-level reset
 * @core: device
 *
 * Every register returns to its reset value, queued and running work is
 * dropped and the translation cache flushed.  VRAM keeps its contents
 * (the tenant is the same); it is scrubbed when the tenant closes.  VRAM
 * a migration still owes stays owed; what was lost of it reads again (as
 * whatever VRAM then holds there: the guest reset its device, whose
 * memory it no longer trusts).
 */
void simgpu_core_reset(struct simgpu_core *core)
{
	mutex_lock(&core->lock);
	simgpu_reset_locked(core);
	mutex_unlock(&core->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_reset);

/**
 * simgpu_core_init() - set up a device model
 * @core: device
 * @env: how it reaches guest memory and raises interrupts
 * @ctx: argument for @env
 * @nr_queues: 1..SIMGPU_MAX_QUEUES
 * @vram_size: bytes, a multiple of the page size
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int simgpu_core_init(struct simgpu_core *core, const struct simgpu_env_ops *env,
		     void *ctx, u32 nr_queues, u64 vram_size)
{
	memset(core, 0, sizeof(*core));
	if (!nr_queues || nr_queues > SIMGPU_MAX_QUEUES ||
	    !vram_size || vram_size & (SIMGPU_PAGE_SIZE - 1))
		return -EINVAL;
	core->scratch = kvmalloc(SIMGPU_MAX_KERNEL_BUF, GFP_KERNEL);
	core->bounce = kmalloc(SIMGPU_XFER_STEP, GFP_KERNEL);
	if (!core->scratch || !core->bounce) {
		kvfree(core->scratch);
		kfree(core->bounce);
		return -ENOMEM;
	}
	core->env = env;
	core->ctx = ctx;
	core->nr_queues = nr_queues;
	core->knobs.preempt = true;
	core->vram_size = vram_size;
	core->share_from = ktime_get();
	simgpu_absent_reset_locked(core);
	mutex_init(&core->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_init);

/**
 * simgpu_core_destroy() - free the model
 * @core: device, no longer run
 */
void simgpu_core_destroy(struct simgpu_core *core)
{
	kvfree(core->scratch);
	kfree(core->bounce);
	simgpu_absent_free(core);
	mutex_destroy(&core->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_destroy);

/**
 * simgpu_core_timed_work() - will work become runnable with time alone?
 * @core: device
 *
 * Return: true when a knob makes steps wait for a clock (kernel steps,
 * late acknowledgments, the background writer, a throttle), so the
 * processor's host should come back on a timer rather than wait for a
 * kick.
 */
bool simgpu_core_timed_work(struct simgpu_core *core)
{
	return READ_ONCE(core->knobs.kernel_step_us) ||
	       READ_ONCE(core->knobs.ack_delay_ms) ||
	       READ_ONCE(core->knobs.dirty_rate) ||
	       READ_ONCE(core->throttle_pct);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_timed_work);
