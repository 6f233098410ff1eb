// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu device model: the register file.  The guest's and the host's
 * MMIO accesses of BAR0 (simgpu-abi.rst), each under the core's lock: a
 * register never changes under a step of the command processor (core.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/mutex.h>

#include <kunit/visibility.h>

#include "simgpu.h"

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
		core->dirty_start = simgpu_run_clock(core, ktime_get());
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
		core->dirty_start = simgpu_run_clock(core, ktime_get());
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
