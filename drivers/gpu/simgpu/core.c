// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu device model: registers, command processing, interrupts.
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

static bool simgpu_queue_has_work(struct simgpu_core *core, struct simgpu_queue *q)
{
	return (q->ctrl & SIMGPU_QCTRL_ENABLE) && !q->error &&
	       (q->active || q->head != q->tail);
}

static bool simgpu_queue_ready(struct simgpu_core *core, struct simgpu_queue *q)
{
	return simgpu_queue_has_work(core, q) &&
	       (!q->active || !ktime_before(ktime_get(), q->ready_at));
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

static void simgpu_service_workload(struct simgpu_core *core)
{
	u32 rate = READ_ONCE(core->knobs.dirty_rate);
	u64 due, n;
	s64 ns;

	if (!rate || !core->dirty_pages || core->err_queue == SIMGPU_QUEUE_WORKLOAD ||
	    core->run_state != SIMGPU_RUN)
		return;
	ns = ktime_to_ns(ktime_sub(ktime_get(), core->dirty_start));
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
	if (READ_ONCE(core->knobs.dirty_rate) && core->dirty_pages)
		return true;
	for (i = 0; i < core->nr_queues; i++)
		if (simgpu_queue_has_work(core, &core->q[i]))
			return true;
	return false;
}

/* A drain is done when nothing is in flight: the device is stopped. */
static void simgpu_drain_done(struct simgpu_core *core)
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
	if (core->control & SIMGPU_CTRL_ENABLE) {
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

static void simgpu_reset_locked(struct simgpu_core *core)
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
 * (the tenant is the same); it is scrubbed when the tenant closes.
 */
void simgpu_core_reset(struct simgpu_core *core)
{
	mutex_lock(&core->lock);
	simgpu_reset_locked(core);
	mutex_unlock(&core->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_reset);

static u32 simgpu_qreg_read(struct simgpu_core *core, struct simgpu_queue *q, u32 reg)
{
	switch (reg) {
	case SIMGPU_QREG_RING_LO:
		return lower_32_bits(q->ring);
	case SIMGPU_QREG_RING_HI:
		return upper_32_bits(q->ring);
	case SIMGPU_QREG_RING_SIZE:
		return q->size;
	case SIMGPU_QREG_HEAD:
		return q->head;
	case SIMGPU_QREG_TAIL:
		return q->tail;
	case SIMGPU_QREG_CONTROL:
		return q->ctrl;
	case SIMGPU_QREG_STATUS:
		return (q->active || q->head != q->tail ? SIMGPU_QSTATUS_BUSY : 0) |
		       (q->error ? SIMGPU_QSTATUS_ERROR : 0);
	case SIMGPU_QREG_ERROR:
		return q->error;
	case SIMGPU_QREG_FENCE_LO:
		return lower_32_bits(q->fence);
	case SIMGPU_QREG_FENCE_HI:
		return upper_32_bits(q->fence);
	default:
		return 0;
	}
}

static void simgpu_qreg_write(struct simgpu_core *core, struct simgpu_queue *q,
			      u32 reg, u32 val)
{
	switch (reg) {
	case SIMGPU_QREG_RING_LO:
		q->ring = (q->ring & GENMASK_ULL(63, 32)) | val;
		break;
	case SIMGPU_QREG_RING_HI:
		q->ring = (q->ring & GENMASK_ULL(31, 0)) | (u64)val << 32;
		break;
	case SIMGPU_QREG_RING_SIZE:
		q->size = val;
		break;
	case SIMGPU_QREG_TAIL:
		q->tail = val;
		core->env->kick(core->ctx);
		break;
	case SIMGPU_QREG_CONTROL:
		if (val & SIMGPU_QCTRL_RESET) {
			q->head = 0;
			q->tail = 0;
			q->error = 0;
			q->active = false;
		}
		q->ctrl = val & SIMGPU_QCTRL_ENABLE;
		core->env->kick(core->ctx);
		break;
	}
}

/**
 * simgpu_mmio_read() - guest read of a BAR0 register
 * @core: device
 * @offset: register offset, 4-byte aligned
 *
 * Return: the value; unknown registers read as zero.
 */
u32 simgpu_mmio_read(struct simgpu_core *core, u32 offset)
{
	u32 val = 0;

	mutex_lock(&core->lock);
	if (offset >= SIMGPU_QUEUE_BASE) {
		u32 qi = (offset - SIMGPU_QUEUE_BASE) / SIMGPU_QUEUE_STRIDE;

		if (qi < core->nr_queues)
			val = simgpu_qreg_read(core, &core->q[qi],
					       (offset - SIMGPU_QUEUE_BASE) % SIMGPU_QUEUE_STRIDE);
		goto out;
	}
	switch (offset) {
	case SIMGPU_REG_ID:
		val = SIMGPU_ID_MAGIC;
		break;
	case SIMGPU_REG_VERSION:
		val = SIMGPU_ABI_VERSION;
		break;
	case SIMGPU_REG_CAPS:
		val = SIMGPU_CAPS;
		break;
	case SIMGPU_REG_NUM_QUEUES:
		val = core->nr_queues;
		break;
	case SIMGPU_REG_VRAM_SIZE_LO:
		val = lower_32_bits(core->vram_size);
		break;
	case SIMGPU_REG_VRAM_SIZE_HI:
		val = upper_32_bits(core->vram_size);
		break;
	case SIMGPU_REG_STATUS: {
		u32 i;

		val = SIMGPU_STATUS_IDLE;
		for (i = 0; i < core->nr_queues; i++) {
			if (simgpu_queue_has_work(core, &core->q[i]))
				val &= ~SIMGPU_STATUS_IDLE;
			if (core->q[i].error)
				val |= SIMGPU_STATUS_ERROR;
		}
		if ((core->err_queue == SIMGPU_QUEUE_WORKLOAD ||
		     core->err_queue == SIMGPU_QUEUE_DEVICE) && core->err_code)
			val |= SIMGPU_STATUS_ERROR;
		if (core->control & SIMGPU_CTRL_ENABLE)
			val |= SIMGPU_STATUS_ENABLED;
		break;
	}
	case SIMGPU_REG_CONTROL:
		val = core->control;
		break;
	case SIMGPU_REG_INT_STATUS:
		val = core->int_status;
		break;
	case SIMGPU_REG_INT_MASK:
		val = core->int_mask;
		break;
	case SIMGPU_REG_ERROR_CODE:
		val = core->err_code;
		break;
	case SIMGPU_REG_ERROR_QUEUE:
		val = core->err_queue;
		break;
	case SIMGPU_REG_ERROR_ADDR_LO:
		val = lower_32_bits(core->err_addr);
		break;
	case SIMGPU_REG_ERROR_ADDR_HI:
		val = upper_32_bits(core->err_addr);
		break;
	case SIMGPU_REG_PT_ROOT_LO:
		val = lower_32_bits(core->pt_root);
		break;
	case SIMGPU_REG_PT_ROOT_HI:
		val = upper_32_bits(core->pt_root);
		break;
	case SIMGPU_REG_INVAL_REQ:
		val = core->inval_req;
		break;
	case SIMGPU_REG_INVAL_ACK:
		val = core->inval_ack;
		break;
	case SIMGPU_REG_DIRTY_BASE_LO:
		val = lower_32_bits(core->dirty_base);
		break;
	case SIMGPU_REG_DIRTY_BASE_HI:
		val = upper_32_bits(core->dirty_base);
		break;
	case SIMGPU_REG_DIRTY_PAGES:
		val = core->dirty_pages;
		break;
	case SIMGPU_REG_DIRTY_COUNT:
		val = core->dirty_count;
		break;
	}
out:
	mutex_unlock(&core->lock);
	return val;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_mmio_read);

/**
 * simgpu_mmio_write() - guest write of a BAR0 register
 * @core: device
 * @offset: register offset, 4-byte aligned
 * @val: value; writes to read-only or unknown registers are ignored
 */
void simgpu_mmio_write(struct simgpu_core *core, u32 offset, u32 val)
{
	mutex_lock(&core->lock);
	if (offset >= SIMGPU_QUEUE_BASE) {
		u32 qi = (offset - SIMGPU_QUEUE_BASE) / SIMGPU_QUEUE_STRIDE;

		if (qi < core->nr_queues)
			simgpu_qreg_write(core, &core->q[qi],
					  (offset - SIMGPU_QUEUE_BASE) % SIMGPU_QUEUE_STRIDE,
					  val);
		goto out;
	}
	switch (offset) {
	case SIMGPU_REG_CONTROL:
		if (val & SIMGPU_CTRL_RESET) {
			enum simgpu_run_state run = core->run_state;

			/*
			 * The guest's reset takes effect at once (registers,
			 * queues, work in flight), but it does not undo the
			 * host's pause: a device that migration holds stopped
			 * (STOP, STOP_COPY, RESUMING) runs again only when the
			 * host resumes it, at the next RUNNING.
			 */
			simgpu_reset_locked(core);
			if (core->env->guest_reset)
				core->env->guest_reset(core->ctx);
			if (run != SIMGPU_RUN) {
				WRITE_ONCE(core->run_state, SIMGPU_STOPPED);
				core->env->kick(core->ctx);	/* a drain waiter */
			}
			break;
		}
		core->control = val & SIMGPU_CTRL_ENABLE;
		core->dirty_start = ktime_get();
		core->dirty_done = 0;
		core->env->kick(core->ctx);
		break;
	case SIMGPU_REG_INT_STATUS:
		core->int_status &= ~val;
		if (val & SIMGPU_INT_ERROR && !(core->int_status & SIMGPU_INT_ERROR)) {
			core->err_code = 0;
			core->err_queue = 0;
			core->err_addr = 0;
		}
		break;
	case SIMGPU_REG_INT_MASK:
		core->int_mask = val;
		break;
	case SIMGPU_REG_PT_ROOT_LO:
		core->pt_root = (core->pt_root & GENMASK_ULL(63, 32)) | val;
		break;
	case SIMGPU_REG_PT_ROOT_HI:
		core->pt_root = (core->pt_root & GENMASK_ULL(31, 0)) | (u64)val << 32;
		break;
	case SIMGPU_REG_INVAL_REQ:
		core->inval_req = val;
		core->inval_pending = true;
		core->inval_at = ktime_add_ms(ktime_get(),
					      READ_ONCE(core->knobs.ack_delay_ms));
		core->env->kick(core->ctx);
		break;
	case SIMGPU_REG_DIRTY_BASE_LO:
		core->dirty_base = (core->dirty_base & GENMASK_ULL(63, 32)) | val;
		break;
	case SIMGPU_REG_DIRTY_BASE_HI:
		core->dirty_base = (core->dirty_base & GENMASK_ULL(31, 0)) | (u64)val << 32;
		break;
	case SIMGPU_REG_DIRTY_PAGES:
		core->dirty_pages = val;
		core->dirty_start = ktime_get();
		core->dirty_done = 0;
		if (core->err_queue == SIMGPU_QUEUE_WORKLOAD) {
			core->err_code = 0;
			core->err_queue = 0;
		}
		core->env->kick(core->ctx);
		break;
	}
out:
	mutex_unlock(&core->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_mmio_write);

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
	mutex_destroy(&core->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_core_destroy);

/**
 * simgpu_core_timed_work() - will work become runnable with time alone?
 * @core: device
 *
 * Return: true when a knob makes steps wait for a clock (kernel steps,
 * late acknowledgments, the background writer), so the processor's host
 * should come back on a timer rather than wait for a kick.
 */
bool simgpu_core_timed_work(struct simgpu_core *core)
{
	return READ_ONCE(core->knobs.kernel_step_us) ||
	       READ_ONCE(core->knobs.ack_delay_ms) ||
	       READ_ONCE(core->knobs.dirty_rate);
}

/* ---- what a host drives for migration --------------------------------- */

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
	core->dirty_start = ktime_get();
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
