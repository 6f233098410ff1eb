// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu architectural state: what a migration carries besides memory
 * (registers, queues, the command in flight on each queue and its
 * progress), saved from a quiesced device and checked field by field
 * before a destination installs it.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/slab.h>

#include "simgpu.h"

#define SIMGPU_ARCH_MAGIC	0x53414753	/* "SGAS" */

/* One queue in the architectural state (little endian). */
struct simgpu_arch_queue {
	__le64 ring;
	__le64 fence;
	__le32 size;
	__le32 head;
	__le32 tail;
	__le32 ctrl;
	__le32 error;
	__le32 active;
	__le32 op;
	__le32 flags;
	__le64 args[6];
	__le64 progress;
} __packed;

/* The architectural state, version SIMGPU_ARCH_VERSION. */
struct simgpu_arch {
	__le32 magic;
	__le32 version;
	__le32 nr_queues;
	__le32 control;
	__le32 int_status;
	__le32 int_mask;
	__le32 err_code;
	__le32 err_queue;
	__le64 err_addr;
	__le64 pt_root;
	__le32 inval_req;
	__le32 inval_ack;
	__le32 inval_pending;
	__le32 dirty_pages;
	__le64 dirty_base;
	__le32 dirty_count;
	__le32 reserved;
	struct simgpu_arch_queue q[SIMGPU_MAX_QUEUES];
} __packed;

static_assert(sizeof(struct simgpu_arch) == SIMGPU_ARCH_SIZE);

/**
 * simgpu_arch_size() - length of the architectural state
 *
 * Return: bytes simgpu_arch_save() produces.
 */
size_t simgpu_arch_size(void)
{
	return sizeof(struct simgpu_arch);
}

/**
 * simgpu_arch_save() - capture the architectural state
 * @core: device, quiesced
 * @buf: output
 * @len: its size
 *
 * Return: the state's length, or -ENOSPC.
 */
ssize_t simgpu_arch_save(struct simgpu_core *core, void *buf, size_t len)
{
	struct simgpu_arch *a = buf;
	u32 i, j;

	if (len < sizeof(*a))
		return -ENOSPC;
	memset(a, 0, sizeof(*a));
	mutex_lock(&core->lock);
	a->magic = cpu_to_le32(SIMGPU_ARCH_MAGIC);
	a->version = cpu_to_le32(SIMGPU_ARCH_VERSION);
	a->nr_queues = cpu_to_le32(core->nr_queues);
	a->control = cpu_to_le32(core->control);
	a->int_status = cpu_to_le32(core->int_status);
	a->int_mask = cpu_to_le32(core->int_mask);
	a->err_code = cpu_to_le32(core->err_code);
	a->err_queue = cpu_to_le32(core->err_queue);
	a->err_addr = cpu_to_le64(core->err_addr);
	a->pt_root = cpu_to_le64(core->pt_root);
	a->inval_req = cpu_to_le32(core->inval_req);
	a->inval_ack = cpu_to_le32(core->inval_ack);
	a->inval_pending = cpu_to_le32(core->inval_pending);
	a->dirty_base = cpu_to_le64(core->dirty_base);
	a->dirty_pages = cpu_to_le32(core->dirty_pages);
	a->dirty_count = cpu_to_le32(core->dirty_count);
	for (i = 0; i < core->nr_queues; i++) {
		struct simgpu_queue *q = &core->q[i];
		struct simgpu_arch_queue *aq = &a->q[i];

		aq->ring = cpu_to_le64(q->ring);
		aq->fence = cpu_to_le64(q->fence);
		aq->size = cpu_to_le32(q->size);
		aq->head = cpu_to_le32(q->head);
		aq->tail = cpu_to_le32(q->tail);
		aq->ctrl = cpu_to_le32(q->ctrl);
		aq->error = cpu_to_le32(q->error);
		aq->active = cpu_to_le32(q->active);
		aq->op = cpu_to_le32(q->cur.op);
		aq->flags = cpu_to_le32(q->cur.flags);
		for (j = 0; j < ARRAY_SIZE(aq->args); j++)
			aq->args[j] = cpu_to_le64(q->cur.args[j]);
		aq->progress = cpu_to_le64(q->cur.progress);
	}
	mutex_unlock(&core->lock);
	return sizeof(*a);
}

/* The command in flight must be one this device could have been running. */
static bool simgpu_arch_cmd_ok(const struct simgpu_cmd_state *c)
{
	if (simgpu_cmd_check(c))
		return false;
	switch (c->op) {
	case SIMGPU_OP_FILL:
		return c->progress < c->args[1] && !(c->progress & 3);
	case SIMGPU_OP_COPY:
		return c->progress < c->args[2];
	case SIMGPU_OP_KERNEL:
		return c->progress < c->args[2];
	default:
		return c->progress == 0;
	}
}

/**
 * simgpu_arch_restore() - install an architectural state, checked
 * @core: device, stopped
 * @buf: the state from the stream (hostile until checked)
 * @len: its length
 *
 * Nothing is installed unless every field is one this device could have
 * had.
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int simgpu_arch_restore(struct simgpu_core *core, const void *buf, size_t len)
{
	const struct simgpu_arch *a = buf;
	struct simgpu_queue *q;
	u32 i, j, err_queue;
	int ret = -EINVAL;

	if (len != sizeof(*a) || le32_to_cpu(a->magic) != SIMGPU_ARCH_MAGIC ||
	    le32_to_cpu(a->version) != SIMGPU_ARCH_VERSION ||
	    le32_to_cpu(a->nr_queues) > core->nr_queues ||
	    le32_to_cpu(a->control) & ~SIMGPU_CTRL_ENABLE)
		return -EINVAL;
	err_queue = le32_to_cpu(a->err_queue);
	if (err_queue >= core->nr_queues && err_queue != SIMGPU_QUEUE_WORKLOAD)
		return -EINVAL;
	q = kcalloc(SIMGPU_MAX_QUEUES, sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	for (i = 0; i < le32_to_cpu(a->nr_queues); i++) {
		const struct simgpu_arch_queue *aq = &a->q[i];

		q[i].ring = le64_to_cpu(aq->ring);
		q[i].fence = le64_to_cpu(aq->fence);
		q[i].size = le32_to_cpu(aq->size);
		q[i].head = le32_to_cpu(aq->head);
		q[i].tail = le32_to_cpu(aq->tail);
		q[i].ctrl = le32_to_cpu(aq->ctrl);
		q[i].error = le32_to_cpu(aq->error);
		q[i].active = le32_to_cpu(aq->active);
		q[i].cur.op = le32_to_cpu(aq->op);
		q[i].cur.flags = le32_to_cpu(aq->flags);
		for (j = 0; j < ARRAY_SIZE(aq->args); j++)
			q[i].cur.args[j] = le64_to_cpu(aq->args[j]);
		q[i].cur.progress = le64_to_cpu(aq->progress);
		if (q[i].ctrl & ~SIMGPU_QCTRL_ENABLE ||
		    (q[i].error > SIMGPU_ERR_INTERNAL && q[i].error != SIMGPU_ERR_VRAM_LOST) ||
		    le32_to_cpu(aq->active) > 1 ||
		    (q[i].active && !simgpu_arch_cmd_ok(&q[i].cur)))
			goto out;
	}

	mutex_lock(&core->lock);
	core->control = le32_to_cpu(a->control);
	core->int_status = le32_to_cpu(a->int_status);
	core->int_mask = le32_to_cpu(a->int_mask);
	core->err_code = le32_to_cpu(a->err_code);
	core->err_queue = err_queue;
	core->err_addr = le64_to_cpu(a->err_addr);
	core->pt_root = le64_to_cpu(a->pt_root);
	core->inval_req = le32_to_cpu(a->inval_req);
	core->inval_ack = le32_to_cpu(a->inval_ack);
	core->inval_pending = !!le32_to_cpu(a->inval_pending);
	core->inval_at = ktime_get();
	core->dirty_base = le64_to_cpu(a->dirty_base);
	core->dirty_pages = le32_to_cpu(a->dirty_pages);
	core->dirty_count = le32_to_cpu(a->dirty_count);
	for (i = 0; i < SIMGPU_MAX_QUEUES; i++) {
		q[i].ready_at = ktime_get();
		q[i].wait_blk = -1;
	}
	core->workload_wait = -1;
	memcpy(core->q, q, sizeof(core->q));
	simgpu_mmu_flush(core);
	mutex_unlock(&core->lock);
	ret = 0;
out:
	kfree(q);
	return ret;
}
