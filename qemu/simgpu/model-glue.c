// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu's device model for QEMU: simgpu-model.h over the model's own API
 * (simgpu.h), built with the kernel-API shim.  The model's sources are the
 * kernel's, unchanged.
 */
#include "simgpu.h"
#include "simgpu-model.h"
#include <uapi/linux/simgpu_pf.h>

/**
 * struct simgpu_model - one VF's model and its environment
 * @core: the model
 * @ops: the environment, as the model calls it
 */
struct simgpu_model {
	struct simgpu_core core;
	struct simgpu_env_ops ops;
};

struct simgpu_model *simgpu_model_new(const struct simgpu_model_env *env, void *ctx,
				      uint32_t nr_queues, uint64_t vram_size)
{
	struct simgpu_model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->ops.dma_rw = env->dma_rw;
	m->ops.vram_rw = env->vram_rw;
	m->ops.raise_irq = env->raise_irq;
	m->ops.kick = env->kick;
	m->ops.stepped = env->stepped;
	m->ops.guest_reset = env->guest_reset;
	m->ops.demand = env->demand;
	if (simgpu_core_init(&m->core, &m->ops, ctx, nr_queues, vram_size)) {
		free(m);
		return NULL;
	}
	return m;
}

void simgpu_model_free(struct simgpu_model *m)
{
	if (!m)
		return;
	simgpu_core_destroy(&m->core);
	free(m);
}

void simgpu_model_reset(struct simgpu_model *m)
{
	simgpu_core_reset(&m->core);
}

void simgpu_model_clear_stats(struct simgpu_model *m)
{
	simgpu_core_clear_stats(&m->core);
}

void simgpu_model_lost(struct simgpu_model *m)
{
	simgpu_core_lost(&m->core);
}

uint32_t simgpu_model_mmio_read(struct simgpu_model *m, uint32_t offset)
{
	return simgpu_mmio_read(&m->core, offset);
}

void simgpu_model_mmio_write(struct simgpu_model *m, uint32_t offset, uint32_t val)
{
	simgpu_mmio_write(&m->core, offset, val);
}

bool simgpu_model_run(struct simgpu_model *m, unsigned int budget)
{
	return simgpu_core_run(&m->core, budget);
}

bool simgpu_model_pause(struct simgpu_model *m, bool drain)
{
	return simgpu_core_pause(&m->core, drain);
}

bool simgpu_model_paused(struct simgpu_model *m)
{
	return simgpu_core_paused(&m->core);
}

void simgpu_model_resume(struct simgpu_model *m)
{
	simgpu_core_resume(&m->core);
}

uint32_t simgpu_model_host_inval(struct simgpu_model *m)
{
	return simgpu_core_host_inval(&m->core);
}

bool simgpu_model_host_inval_acked(struct simgpu_model *m, uint32_t seq)
{
	return simgpu_core_host_inval_acked_racy(&m->core, seq);
}

bool simgpu_model_host_inval_end(struct simgpu_model *m, uint32_t seq)
{
	return simgpu_core_host_inval_end(&m->core, seq);
}

bool simgpu_model_tlb_empty(struct simgpu_model *m)
{
	return simgpu_tlb_empty(&m->core);
}

size_t simgpu_model_arch_size(void)
{
	return simgpu_arch_size();
}

uint32_t simgpu_model_arch_version(void)
{
	return SIMGPU_ARCH_VERSION;
}

long simgpu_model_arch_save(struct simgpu_model *m, void *buf, size_t len)
{
	return simgpu_arch_save(&m->core, buf, len);
}

int simgpu_model_arch_restore(struct simgpu_model *m, const void *buf, size_t len)
{
	return simgpu_arch_restore(&m->core, buf, len);
}

static uint32_t *simgpu_model_knob_u32(struct simgpu_knobs *k, unsigned int i)
{
	switch (i) {
	case SIMGPU_PF_KNOB_THROTTLE_US:
		return &k->throttle_us;
	case SIMGPU_PF_KNOB_KERNEL_STEP_US:
		return &k->kernel_step_us;
	case SIMGPU_PF_KNOB_ACK_DELAY_MS:
		return &k->ack_delay_ms;
	case SIMGPU_PF_KNOB_DIRTY_RATE:
		return &k->dirty_rate;
	default:
		return NULL;
	}
}

uint32_t simgpu_model_knob(struct simgpu_model *m, unsigned int i)
{
	struct simgpu_knobs *k = &m->core.knobs;
	uint32_t *p = simgpu_model_knob_u32(k, i);

	if (p)
		return *p;
	if (i == SIMGPU_PF_KNOB_PREEMPT)
		return k->preempt;
	if (i == SIMGPU_PF_KNOB_ACK_DROP)
		return k->ack_drop;
	return 0;
}

void simgpu_model_set_knob(struct simgpu_model *m, unsigned int i, uint32_t val)
{
	struct simgpu_knobs *k = &m->core.knobs;
	uint32_t *p = simgpu_model_knob_u32(k, i);

	if (p)
		*p = val;
	else if (i == SIMGPU_PF_KNOB_PREEMPT)
		k->preempt = !!val;
	else if (i == SIMGPU_PF_KNOB_ACK_DROP)
		k->ack_drop = !!val;
}

uint64_t simgpu_model_stat(struct simgpu_model *m, unsigned int i)
{
	const struct simgpu_stats *s = &m->core.stats;
	const uint64_t v[SIMGPU_PF_NR_STATS] = {
		[SIMGPU_PF_STAT_CMDS] = s->cmds,
		[SIMGPU_PF_STAT_BYTES] = s->bytes,
		[SIMGPU_PF_STAT_KERNEL_STEPS] = s->kernel_steps,
		[SIMGPU_PF_STAT_FAULTS] = s->faults,
		[SIMGPU_PF_STAT_INVALIDATIONS] = s->invalidations,
		[SIMGPU_PF_STAT_INVAL_DROPPED] = s->inval_dropped,
		[SIMGPU_PF_STAT_IRQS] = s->irqs,
		[SIMGPU_PF_STAT_TLB_HITS] = s->tlb_hits,
		[SIMGPU_PF_STAT_TLB_MISSES] = s->tlb_misses,
		[SIMGPU_PF_STAT_DIRTY_PAGES] = s->dirty_pages,
	};

	return i < SIMGPU_PF_NR_STATS ? v[i] : 0;
}

bool simgpu_model_timed_work(struct simgpu_model *m)
{
	return simgpu_core_timed_work(&m->core);
}

uint32_t simgpu_model_throttle(struct simgpu_model *m)
{
	return simgpu_core_throttle(&m->core);
}

void simgpu_model_set_throttle(struct simgpu_model *m, uint32_t pct)
{
	simgpu_core_set_throttle(&m->core, pct);
}

int simgpu_model_set_absent(struct simgpu_model *m, const unsigned long *map, uint64_t nr_blocks,
			    uint32_t shift)
{
	return simgpu_core_set_absent(&m->core, map, nr_blocks, shift);
}

bool simgpu_model_absent(struct simgpu_model *m, uint64_t blk)
{
	return simgpu_absent_arrive_check(&m->core, blk) == 0;
}

int simgpu_model_block_arrived(struct simgpu_model *m, uint64_t blk)
{
	return simgpu_core_block_arrived(&m->core, blk);
}

int simgpu_model_block_lost(struct simgpu_model *m, uint64_t blk)
{
	return simgpu_core_block_lost(&m->core, blk);
}

void simgpu_model_absent_clear(struct simgpu_model *m)
{
	simgpu_core_absent_clear(&m->core);
}

uint64_t simgpu_model_absent_count(struct simgpu_model *m)
{
	return simgpu_core_absent_count(&m->core);
}
