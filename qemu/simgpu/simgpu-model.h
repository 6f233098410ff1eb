/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu's device model (drivers/gpu/simgpu: core.c, regs.c, host.c, mmu.c,
 * arch.c), as QEMU's simgpu-pci device sees it: an opaque object behind
 * plain C types, so that the model builds with its kernel-API shim
 * (model-glue.c) and the device with QEMU's headers, and neither sees the
 * other's.
 */
#ifndef SIMGPU_MODEL_H
#define SIMGPU_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct simgpu_model;

/**
 * struct simgpu_model_env - the model's outside world (simgpu_env_ops)
 * @dma_rw: guest memory at a device address, through the IOMMU: 0 or -errno
 * @vram_rw: device memory: 0, -ERANGE outside VRAM
 * @raise_irq: the VF's interrupt
 * @kick: work arrived: run the processor soon
 * @stepped: a processor pass ended
 * @guest_reset: the guest reset the VF through its control register
 * @demand: work of the VF's started to wait on absent VRAM block @blk
 */
struct simgpu_model_env {
	int (*dma_rw)(void *ctx, uint64_t iova, void *buf, size_t len, bool write);
	int (*vram_rw)(void *ctx, uint64_t off, void *buf, size_t len, bool write);
	void (*raise_irq)(void *ctx);
	void (*kick)(void *ctx);
	void (*stepped)(void *ctx);
	void (*guest_reset)(void *ctx);
	void (*demand)(void *ctx, uint64_t blk);
};

struct simgpu_model *simgpu_model_new(const struct simgpu_model_env *env, void *ctx,
				      uint32_t nr_queues, uint64_t vram_size);
void simgpu_model_free(struct simgpu_model *m);
void simgpu_model_reset(struct simgpu_model *m);
void simgpu_model_clear_stats(struct simgpu_model *m);
void simgpu_model_lost(struct simgpu_model *m);
uint32_t simgpu_model_mmio_read(struct simgpu_model *m, uint32_t offset);
void simgpu_model_mmio_write(struct simgpu_model *m, uint32_t offset, uint32_t val);
bool simgpu_model_run(struct simgpu_model *m, unsigned int budget);
bool simgpu_model_pause(struct simgpu_model *m, bool drain);
bool simgpu_model_paused(struct simgpu_model *m);
void simgpu_model_resume(struct simgpu_model *m);
uint32_t simgpu_model_host_inval(struct simgpu_model *m);
bool simgpu_model_host_inval_acked(struct simgpu_model *m, uint32_t seq);
bool simgpu_model_host_inval_end(struct simgpu_model *m, uint32_t seq);
bool simgpu_model_tlb_empty(struct simgpu_model *m);
size_t simgpu_model_arch_size(void);
uint32_t simgpu_model_arch_version(void);
long simgpu_model_arch_save(struct simgpu_model *m, void *buf, size_t len);
int simgpu_model_arch_restore(struct simgpu_model *m, const void *buf, size_t len);
/* Knobs and counters by SIMGPU_PF_KNOB_* / SIMGPU_PF_STAT_* index. */
uint32_t simgpu_model_knob(struct simgpu_model *m, unsigned int k);
void simgpu_model_set_knob(struct simgpu_model *m, unsigned int k, uint32_t val);
uint64_t simgpu_model_stat(struct simgpu_model *m, unsigned int s);
bool simgpu_model_timed_work(struct simgpu_model *m);
uint32_t simgpu_model_throttle(struct simgpu_model *m);
void simgpu_model_set_throttle(struct simgpu_model *m, uint32_t pct);
/* Post-copy: VRAM blocks absent (absent.c); @map has one bit per block. */
int simgpu_model_set_absent(struct simgpu_model *m, const unsigned long *map, uint64_t nr_blocks,
			    uint32_t shift);
bool simgpu_model_absent(struct simgpu_model *m, uint64_t blk);
int simgpu_model_block_arrived(struct simgpu_model *m, uint64_t blk);
int simgpu_model_block_lost(struct simgpu_model *m, uint64_t blk);
void simgpu_model_absent_clear(struct simgpu_model *m);
uint64_t simgpu_model_absent_count(struct simgpu_model *m);

#endif /* SIMGPU_MODEL_H */
