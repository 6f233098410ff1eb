/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu-pf's provider, inside: one claimed VF as it is served
 * (provider.c: the device's state, the tenant's leaving, the claim and the
 * test geometry; provider_vram.c: the VRAM blocks still to send;
 * provider_dma_log.c: the device's DMA log of guest pages;
 * provider_postcopy.c: post-copy's absent and held VRAM).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _SIMGPU_PF_PROVIDER_H
#define _SIMGPU_PF_PROVIDER_H

#include <linux/mutex.h>
#include <linux/xarray.h>

#include <gpumig/provider.h>

#include "simgpu_pf.h"

/**
 * struct simgpu_mig - one claimed VF, as the provider serves it
 * @gvf: what the claimer sees (fixed)
 * @vf: the PF's services for it (fixed)
 * @pdev: the VF (fixed)
 * @info: its profile and the PF's limits (fixed)
 * @nr_blocks: VRAM blocks (fixed)
 * @resets_at_close: the VF's FLR count when its tenant began to leave
 * @vram_lock: guards @vdirty, @populated and @tracking
 * @vdirty: VRAM blocks written and not yet taken by the engine
 * @populated: blocks written since the last scrub (others read as zeroes)
 * @tracking: VRAM dirty tracking is on
 * @log_bits: DMA-log report chunk while logging, else NULL (the engine's
 *	state mutex, as every DMA-log op)
 * @log_ranges: the tracked IOVA ranges while logging, sorted and apart
 * @log_nr: how many
 * @log_carry: 4 KiB pages (by IOVA >> 12) the device cleared in a report
 *	that asked for only part of them: still dirty
 * @ops: the services this VF gets: simgpu_mig_ops, less or more as its
 *	geometry says (fixed)
 * @untracked: test geometry: no VRAM dirty tracking (fixed)
 * @arch: test geometry with parts: the whole state, cut or put together
 *	(the engine's file lock: one save or restore at a time)
 * @arch_len: bytes of @arch saved, or restored so far
 */
struct simgpu_mig {
	struct gpumig_vf gvf;
	struct simgpu_pf_vf *vf;
	struct pci_dev *pdev;
	struct simgpu_pf_vf_info info;
	unsigned long nr_blocks;
	u32 resets_at_close;

	struct mutex vram_lock;		/* see above */
	unsigned long *vdirty;
	unsigned long *populated;
	bool tracking;

	unsigned long *log_bits;
	struct simgpu_pf_iova_range *log_ranges;
	unsigned int log_nr;
	struct xarray log_carry;

	struct gpumig_vf_ops ops;
	bool untracked;
	u8 *arch;
	size_t arch_len;
};

static inline struct simgpu_mig *to_mig(struct gpumig_vf *gvf)
{
	return container_of(gvf, struct simgpu_mig, gvf);
}

/* provider_vram.c */
int simgpu_mig_vram_track(struct gpumig_vf *gvf, bool on);
long simgpu_mig_vram_next_dirty(struct gpumig_vf *gvf, unsigned long from, bool *zero);
unsigned long simgpu_mig_vram_take_zero_run(struct gpumig_vf *gvf, unsigned long from,
					    unsigned long max);
void simgpu_mig_vram_dirty_count(struct gpumig_vf *gvf, unsigned long *nonzero,
				 unsigned long *zero);
int simgpu_mig_vram_read(struct gpumig_vf *gvf, u64 off, void *buf, u32 len);
int simgpu_mig_vram_write(struct gpumig_vf *gvf, u64 off, const void *buf, u32 len);
ssize_t simgpu_mig_vram_write_iter(struct gpumig_vf *gvf, u64 off, struct iov_iter *from,
				   u32 len, u32 *crc);
int simgpu_mig_scrub(struct gpumig_vf *gvf);

/* provider_postcopy.c */
void simgpu_mig_postcopy_ops(struct simgpu_mig *s);

/* provider_dma_log.c */
int simgpu_mig_dma_log_start(struct gpumig_vf *gvf, struct rb_root_cached *ranges,
			     u32 nnodes, u64 *page_size);
void simgpu_mig_dma_log_stop(struct gpumig_vf *gvf);
int simgpu_mig_dma_log_report(struct gpumig_vf *gvf, u64 iova, u64 len,
			      void (*report)(void *ctx, u64 iova, u64 len), void *ctx);
void simgpu_mig_log_free(struct simgpu_mig *s);

#endif /* _SIMGPU_PF_PROVIDER_H */
