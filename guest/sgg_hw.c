// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-guest: the hardware.  Page tables, rings and fence slots live in
 * coherent guest memory; every changed translation is followed by an
 * acknowledged invalidation before anything that relied on the old one
 * is freed.  Errors halt a queue; the error work fails the queue's
 * pending fences with the device's code and restarts it.  A device that
 * lost its state (the device says so, or a function-level reset) is set
 * up again from the driver's own copy of everything but VRAM.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/iopoll.h>
#include <linux/slab.h>

#include "sgg.h"

#define SGG_INVAL_TIMEOUT_US	1000000
#define SGG_RING_WAIT_US	1000000

static struct sgg_pt *sgg_pt_alloc(struct sgg_dev *s)
{
	struct sgg_pt *pt = kzalloc(sizeof(*pt), GFP_KERNEL);

	if (!pt)
		return NULL;
	pt->cpu = dma_alloc_coherent(&s->pdev->dev, SIMGPU_PAGE_SIZE, &pt->dma, GFP_KERNEL);
	if (!pt->cpu) {
		kfree(pt);
		return NULL;
	}
	return pt;
}

static void sgg_pt_free(struct sgg_dev *s, struct sgg_pt *pt)
{
	int i;

	if (!pt)
		return;
	for (i = 0; i < SIMGPU_PT_ENTRIES; i++)
		sgg_pt_free(s, pt->child[i]);
	dma_free_coherent(&s->pdev->dev, SIMGPU_PAGE_SIZE, pt->cpu, pt->dma);
	kfree(pt);
}

/* The leaf entry of @va, its tables allocated on the way when @alloc. */
static u64 *sgg_pte(struct sgg_dev *s, u64 va, bool alloc)
{
	struct sgg_pt *pt = s->root;
	int level;

	for (level = SIMGPU_PT_ROOT_LEVEL; level > 0; level--) {
		unsigned int i = SIMGPU_PT_INDEX(va, level);

		if (!pt->child[i]) {
			if (!alloc)
				return NULL;
			pt->child[i] = sgg_pt_alloc(s);
			if (!pt->child[i])
				return NULL;
			WRITE_ONCE(pt->cpu[i], pt->child[i]->dma | SIMGPU_PTE_VALID);
		}
		pt = pt->child[i];
	}
	return &pt->cpu[SIMGPU_PT_INDEX(va, 0)];
}

/* The device forgets every translation it cached: 0, or -ETIMEDOUT. */
static int sgg_invalidate(struct sgg_dev *s)
{
	u32 seq = ++s->inval_seq, ack;
	int ret;

	lockdep_assert_held(&s->lock);
	if (s->gone || s->resetting)
		return 0;
	sgg_wr(s, SIMGPU_REG_INVAL_REQ, seq);
	ret = readl_poll_timeout(s->regs + SIMGPU_REG_INVAL_ACK, ack, ack == seq, 20,
				 SGG_INVAL_TIMEOUT_US);
	if (ret)
		dev_err(&s->pdev->dev, "IOTLB invalidation %u not acknowledged (ack %u)\n",
			seq, ack);
	return ret;
}

/**
 * sgg_unmap() - take @len bytes at GPU VA @va out of the GPU's address space
 * @s: device, lock held
 * @va: page aligned
 * @len: page aligned
 *
 * Return: 0 once the device acknowledged the invalidation (what was mapped
 * there may then be freed), or -ETIMEDOUT: it may not be.
 */
int sgg_unmap(struct sgg_dev *s, u64 va, u64 len)
{
	u64 off, *e;

	lockdep_assert_held(&s->lock);
	if (!s->root)
		return 0;	/* the device went, and its tables */
	for (off = 0; off < len; off += SIMGPU_PAGE_SIZE) {
		e = sgg_pte(s, va + off, false);
		if (e)
			WRITE_ONCE(*e, 0);
	}
	return sgg_invalidate(s);
}

/**
 * sgg_map() - map @len bytes at GPU VA @va to @target
 * @s: device, lock held
 * @va: page aligned, unmapped
 * @target: an IOVA of guest memory, or a VRAM offset with SIMGPU_PTE_VRAM
 * @len: page aligned
 * @flags: SIMGPU_PTE_WRITE, SIMGPU_PTE_VRAM
 *
 * Return: 0, or -ENOMEM with nothing mapped.
 */
int sgg_map(struct sgg_dev *s, u64 va, u64 target, u64 len, u64 flags)
{
	u64 off, *e;

	lockdep_assert_held(&s->lock);
	for (off = 0; off < len; off += SIMGPU_PAGE_SIZE) {
		e = sgg_pte(s, va + off, true);
		if (!e) {
			sgg_unmap(s, va, off);
			return -ENOMEM;
		}
		WRITE_ONCE(*e, ((target + off) & SIMGPU_PTE_ADDR_MASK) | flags | SIMGPU_PTE_VALID);
	}
	return 0;
}

/* Guest memory for the tables, the rings and the fence slots. */
int sgg_hw_init(struct sgg_dev *s)
{
	struct device *dev = &s->pdev->dev;
	u32 i;

	s->vram_map = bitmap_zalloc(s->vram_size >> SIMGPU_PAGE_SHIFT, GFP_KERNEL);
	s->root = sgg_pt_alloc(s);
	s->fences = dma_alloc_coherent(dev, SIMGPU_PAGE_SIZE, &s->fences_dma, GFP_KERNEL);
	if (!s->vram_map || !s->root || !s->fences)
		return -ENOMEM;
	for (i = 0; i < s->nr_queues; i++) {
		s->q[i].ring = dma_alloc_coherent(dev, SGG_RING_ENTRIES * sizeof(struct simgpu_cmd),
						  &s->q[i].ring_dma, GFP_KERNEL);
		if (!s->q[i].ring)
			return -ENOMEM;
	}
	s->sys_next = SGG_VA_SYS;
	mutex_lock(&s->lock);
	i = sgg_map(s, SGG_VA_FENCES, s->fences_dma, SIMGPU_PAGE_SIZE, SIMGPU_PTE_WRITE);
	mutex_unlock(&s->lock);
	return i;
}

/* The device's guest memory (tables, rings, fences), once it is stopped. */
void sgg_hw_fini(struct sgg_dev *s)
{
	struct device *dev = &s->pdev->dev;
	u32 i;

	for (i = 0; i < s->nr_queues && i < SIMGPU_MAX_QUEUES; i++) {
		if (s->q[i].ring)
			dma_free_coherent(dev, SGG_RING_ENTRIES * sizeof(struct simgpu_cmd),
					  s->q[i].ring, s->q[i].ring_dma);
		s->q[i].ring = NULL;
	}
	if (s->fences)
		dma_free_coherent(dev, SIMGPU_PAGE_SIZE, s->fences, s->fences_dma);
	s->fences = NULL;
	sgg_pt_free(s, s->root);
	s->root = NULL;
}

static void sgg_queue_start(struct sgg_dev *s, u32 i)
{
	struct sgg_queue *q = &s->q[i];

	sgg_qwr(s, i, SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_RESET);
	sgg_qwr(s, i, SIMGPU_QREG_RING_LO, lower_32_bits(q->ring_dma));
	sgg_qwr(s, i, SIMGPU_QREG_RING_HI, upper_32_bits(q->ring_dma));
	sgg_qwr(s, i, SIMGPU_QREG_RING_SIZE, SGG_RING_ENTRIES);
	q->tail = 0;
	sgg_qwr(s, i, SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_ENABLE);
}

/**
 * sgg_hw_start() - program the device from the driver's state
 * @s: device, lock held
 *
 * At probe and after the device lost its state: the page-table root,
 * every queue's ring (empty), interrupts, the processor on.
 *
 * Return: 0, or -ETIMEDOUT when the device does not acknowledge.
 */
int sgg_hw_start(struct sgg_dev *s)
{
	u32 i;

	lockdep_assert_held(&s->lock);
	sgg_wr(s, SIMGPU_REG_INT_MASK, 0);
	sgg_wr(s, SIMGPU_REG_PT_ROOT_LO, lower_32_bits(s->root->dma));
	sgg_wr(s, SIMGPU_REG_PT_ROOT_HI, upper_32_bits(s->root->dma));
	for (i = 0; i < s->nr_queues; i++)
		sgg_queue_start(s, i);
	sgg_wr(s, SIMGPU_REG_INT_STATUS, ~0U);
	sgg_wr(s, SIMGPU_REG_INT_MASK, GENMASK(s->nr_queues - 1, 0) | SIMGPU_INT_ERROR);
	sgg_wr(s, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
	s->inval_seq = sgg_rd(s, SIMGPU_REG_INVAL_ACK);
	return sgg_invalidate(s);
}

void sgg_hw_stop(struct sgg_dev *s)
{
	sgg_wr(s, SIMGPU_REG_INT_MASK, 0);
	sgg_wr(s, SIMGPU_REG_DIRTY_PAGES, 0);
	sgg_wr(s, SIMGPU_REG_CONTROL, 0);
}

/* Keep @code of @queue at @addr for SGG_IOCTL_ERRORS.  Any context. */
void sgg_log_error(struct sgg_dev *s, u32 code, u32 queue, u64 addr)
{
	unsigned long flags;

	spin_lock_irqsave(&s->irq_lock, flags);
	s->errors++;
	if (s->nr_log < SGG_MAX_ERRORS)
		s->log[s->nr_log++] = (struct sgg_error){ .code = code, .queue = queue,
							  .addr = addr };
	else
		s->lost++;
	spin_unlock_irqrestore(&s->irq_lock, flags);
}

/* The fences @q still owes fail with @code (lock held). */
static void sgg_queue_fail(struct sgg_dev *s, u32 i, u32 code, u64 addr)
{
	struct sgg_queue *q = &s->q[i];
	unsigned long flags;

	spin_lock_irqsave(&s->irq_lock, flags);
	q->failed_upto = q->submitted;
	q->failed_code = code;
	q->failed_addr = addr;
	spin_unlock_irqrestore(&s->irq_lock, flags);
}

/**
 * sgg_device_reset() - the device lost its state: set it up again
 * @s: device, lock held
 * @code: SIMGPU_ERR_DEVICE_LOST (the device said so) or SGG_ERR_RESET
 *
 * Every queue's pending fences fail with @code; translations, rings and
 * interrupts are programmed again from the driver's state.  VRAM's
 * content is gone: its users learn it from the error.
 */
void sgg_device_reset(struct sgg_dev *s, u32 code)
{
	u32 i;

	lockdep_assert_held(&s->lock);
	for (i = 0; i < s->nr_queues; i++)
		sgg_queue_fail(s, i, code, 0);
	s->resets++;
	if (sgg_hw_start(s))
		dev_err(&s->pdev->dev, "the device did not come back after a reset\n");
	wake_up_all(&s->wq);
}

/*
 * After an error interrupt: a device that lost its state is set up
 * again; each halted queue fails its pending fences with its error and
 * restarts empty.
 */
void sgg_err_work(struct work_struct *work)
{
	struct sgg_dev *s = container_of(work, struct sgg_dev, err_work);
	struct sgg_error last = { };
	u32 i, st;

	mutex_lock(&s->lock);
	if (s->gone || s->resetting)
		goto out;
	spin_lock_irq(&s->irq_lock);
	if (s->nr_log)
		last = s->log[s->nr_log - 1];
	spin_unlock_irq(&s->irq_lock);
	if (sgg_rd(s, SIMGPU_REG_CONTROL) == ~0U)
		goto out;	/* the function is gone */
	if (!(sgg_rd(s, SIMGPU_REG_CONTROL) & SIMGPU_CTRL_ENABLE)) {
		/* every register at its reset value: the device lost its state */
		sgg_device_reset(s, SIMGPU_ERR_DEVICE_LOST);
		goto out;
	}
	for (i = 0; i < s->nr_queues; i++) {
		st = sgg_qrd(s, i, SIMGPU_QREG_STATUS);
		if (!(st & SIMGPU_QSTATUS_ERROR))
			continue;
		sgg_queue_fail(s, i, sgg_qrd(s, i, SIMGPU_QREG_ERROR),
			       last.queue == i ? last.addr : 0);
		sgg_queue_start(s, i);
	}
out:
	atomic_set(&s->lost_pending, 0);	/* a loss still there is seen again */
	mutex_unlock(&s->lock);
	wake_up_all(&s->wq);
}

/*
 * A device that lost its state raises nothing (its interrupt mask went
 * with the rest), so it is looked at every SGG_WATCH_MS.
 */
void sgg_watch(struct work_struct *work)
{
	struct sgg_dev *s = container_of(to_delayed_work(work), struct sgg_dev, watch);
	u32 ctrl;

	if (READ_ONCE(s->gone))
		return;
	ctrl = sgg_rd(s, SIMGPU_REG_CONTROL);
	if (ctrl != ~0U && !(ctrl & SIMGPU_CTRL_ENABLE) && !READ_ONCE(s->resetting) &&
	    atomic_cmpxchg(&s->lost_pending, 0, 1) == 0) {
		sgg_log_error(s, sgg_rd(s, SIMGPU_REG_ERROR_CODE) ?: SIMGPU_ERR_DEVICE_LOST,
			      SIMGPU_QUEUE_DEVICE, 0);
		schedule_work(&s->err_work);
	}
	schedule_delayed_work(&s->watch, msecs_to_jiffies(SGG_WATCH_MS));
}

irqreturn_t sgg_irq(int irq, void *data)
{
	struct sgg_dev *s = data;
	u32 st = sgg_rd(s, SIMGPU_REG_INT_STATUS);

	if (!st || st == ~0U)
		return IRQ_NONE;
	if (st & SIMGPU_INT_ERROR) {
		u64 addr = sgg_rd(s, SIMGPU_REG_ERROR_ADDR_LO) |
			   (u64)sgg_rd(s, SIMGPU_REG_ERROR_ADDR_HI) << 32;

		sgg_log_error(s, sgg_rd(s, SIMGPU_REG_ERROR_CODE),
			      sgg_rd(s, SIMGPU_REG_ERROR_QUEUE), addr);
		schedule_work(&s->err_work);
	}
	/* RW1C; clearing ERROR clears ERROR_CODE/QUEUE/ADDR for the next one */
	sgg_wr(s, SIMGPU_REG_INT_STATUS, st);
	wake_up_all(&s->wq);
	return IRQ_HANDLED;
}

/**
 * sgg_submit() - @cmd on queue @i, then a fence
 * @s: device, lock held
 * @i: queue
 * @cmd: the command (the device checks its arguments)
 * @fence: the fence's value
 *
 * Return: 0, -EBUSY when the ring stays full for a second, -EIO when the
 * device is being reset or gone.
 */
int sgg_submit(struct sgg_dev *s, u32 i, const struct simgpu_cmd *cmd, u64 *fence)
{
	struct sgg_queue *q = &s->q[i];
	struct simgpu_cmd *c;
	u32 head;

	lockdep_assert_held(&s->lock);
	if (s->gone || s->resetting)
		return -EIO;
	if (readl_poll_timeout(s->regs + SIMGPU_QUEUE_BASE + i * SIMGPU_QUEUE_STRIDE +
			       SIMGPU_QREG_HEAD, head, q->tail - head + 2 <= SGG_RING_ENTRIES,
			       50, SGG_RING_WAIT_US))
		return -EBUSY;
	q->ring[q->tail++ % SGG_RING_ENTRIES] = *cmd;
	c = &q->ring[q->tail++ % SGG_RING_ENTRIES];
	memset(c, 0, sizeof(*c));
	c->opcode = cpu_to_le32(SIMGPU_OP_FENCE);
	c->flags = cpu_to_le32(SIMGPU_CMD_F_IRQ);
	c->args[0] = cpu_to_le64(SGG_VA_FENCES + i * sizeof(u64));
	c->args[1] = cpu_to_le64(++q->submitted);
	*fence = q->submitted;
	/* writel() orders the ring's writes before the doorbell */
	sgg_qwr(s, i, SIMGPU_QREG_TAIL, q->tail);
	return 0;
}

/* 1 when the fence came, -1 when it failed (@w says why), 0 not yet. */
static int sgg_fence_state(struct sgg_dev *s, struct sgg_wait *w)
{
	struct sgg_queue *q = &s->q[w->queue];
	unsigned long flags;
	int ret = 0;

	/* under irq_lock: the fence slots go with the device (gone) */
	spin_lock_irqsave(&s->irq_lock, flags);
	if (s->gone) {
		ret = -1;
	} else if (le64_to_cpu(READ_ONCE(s->fences[w->queue])) >= w->fence) {
		ret = 1;
	} else if (w->fence <= q->failed_upto) {
		w->error = q->failed_code;
		w->addr = q->failed_addr;
		ret = -1;
	}
	spin_unlock_irqrestore(&s->irq_lock, flags);
	return ret;
}

/**
 * sgg_wait() - until a fence came or failed
 * @s: device
 * @w: the queue, fence and time out; filled with the error on -EIO
 *
 * Return: 0, -EIO (the fence failed), -ETIMEDOUT, -ERESTARTSYS, -ENODEV
 * (the device went), -EINVAL (no such queue or fence).
 */
int sgg_wait(struct sgg_dev *s, struct sgg_wait *w)
{
	long left;
	int st = 0;

	if (w->queue >= s->nr_queues)
		return -EINVAL;
	mutex_lock(&s->lock);
	if (w->fence > s->q[w->queue].submitted) {
		mutex_unlock(&s->lock);
		return -EINVAL;
	}
	mutex_unlock(&s->lock);
	w->error = 0;
	w->addr = 0;
	left = wait_event_interruptible_timeout(s->wq, (st = sgg_fence_state(s, w)) != 0,
						msecs_to_jiffies(min(w->timeout_ms, 600000U)));
	if (left < 0)
		return left;
	if (st > 0)
		return 0;
	if (st < 0)
		return READ_ONCE(s->gone) && !w->error ? -ENODEV : -EIO;
	return -ETIMEDOUT;
}
