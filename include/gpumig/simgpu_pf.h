/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu-pf: what the driver of a simgpu-pci physical function offers the
 * driver of one of its virtual functions, the way the kernel's xe PF
 * driver serves xe-vfio-pci: every device-side step of a VF's migration is
 * one call here, carried out by the PF's mailbox (<linux/simgpu_pf.h>).
 *
 * A VF driver claims its VF with simgpu_pf_vf_get() when it needs the
 * services and releases it with simgpu_pf_vf_put().  While a VF is
 * claimed, SR-IOV cannot be disabled; if the PF's driver goes away anyway
 * (it cannot be refused), the claimer's ops->pf_gone is called first and
 * every service fails with -ENODEV from then on.  A reset of the PF (an
 * FLR an operator or an error recovery asked for) resets every VF with it:
 * claimers hear it through ops->pf_reset.
 *
 * Every call sleeps; calls for one VF are serialised by the PF driver.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_SIMGPU_PF_H
#define _GPUMIG_SIMGPU_PF_H

#include <linux/types.h>

struct pci_dev;
struct simgpu_pf_vf;

/**
 * struct simgpu_pf_vf_ops - what a claimer hears from the PF driver
 * @pf_gone: the PF's driver is being removed: the services end now
 * @pf_reset: the PF is being reset (optional): the VF's state and VRAM
 *	are lost with it; services fail with -EAGAIN until the reset is done
 *	and work again afterwards, on the VF as SR-IOV brings it back
 *
 * Both are called under the PF's lock: they may not claim or release a VF.
 */
struct simgpu_pf_vf_ops {
	void (*pf_gone)(void *priv);
	void (*pf_reset)(void *priv);
};

/**
 * struct simgpu_pf_vf_info - a VF's profile and the PF's limits
 * @profile: SIMGPU_PF_PROFILE_*
 * @name: the profile's name ("64M", "256M", "1G")
 * @vram_size: VRAM bytes
 * @nr_queues: command queues
 * @block_shift: VRAM dirty block, log2 bytes
 * @arch_version: architectural-state layout version
 * @arch_size: its size in bytes
 * @xfer_max: most bytes of one VRAM transfer
 * @log_ranges: most DMA-log ranges
 * @log_pages: most guest pages tracked in all
 * @caps: SIMGPU_PF_CAP_* the device has
 */
struct simgpu_pf_vf_info {
	u32 profile;
	const char *name;
	u64 vram_size;
	u32 nr_queues;
	u32 block_shift;
	u32 arch_version;
	u32 arch_size;
	u32 xfer_max;
	u32 log_ranges;
	u64 log_pages;
	u32 caps;
};

/**
 * struct simgpu_pf_iova_range - one range to track guest pages in
 * @iova: first byte, page aligned
 * @length: bytes, a page multiple
 */
struct simgpu_pf_iova_range {
	u64 iova;
	u64 length;
};

struct simgpu_pf_vf *simgpu_pf_vf_get(struct pci_dev *vf, const struct simgpu_pf_vf_ops *ops,
				      void *priv);
void simgpu_pf_vf_put(struct simgpu_pf_vf *vf);
void simgpu_pf_vf_info(struct simgpu_pf_vf *vf, struct simgpu_pf_vf_info *info);
u32 simgpu_pf_vf_resets(struct simgpu_pf_vf *vf);
u32 simgpu_pf_vf_guest_resets(struct simgpu_pf_vf *vf);
u32 simgpu_pf_vf_state(struct simgpu_pf_vf *vf);
u64 simgpu_pf_vf_stat(struct simgpu_pf_vf *vf, unsigned int s);
u32 simgpu_pf_vf_knob(struct simgpu_pf_vf *vf, unsigned int k);
void simgpu_pf_vf_set_knob(struct simgpu_pf_vf *vf, unsigned int k, u32 val);

int simgpu_pf_vf_pause(struct simgpu_pf_vf *vf, unsigned int timeout_ms);
int simgpu_pf_vf_resume(struct simgpu_pf_vf *vf);
int simgpu_pf_vf_invalidate(struct simgpu_pf_vf *vf, unsigned int timeout_ms);
ssize_t simgpu_pf_vf_save_state(struct simgpu_pf_vf *vf, void *buf, size_t len);
int simgpu_pf_vf_restore_state(struct simgpu_pf_vf *vf, const void *buf, size_t len);
int simgpu_pf_vf_vram_read(struct simgpu_pf_vf *vf, u64 off, void *buf, u32 len);
int simgpu_pf_vf_vram_write(struct simgpu_pf_vf *vf, u64 off, const void *buf, u32 len);
ssize_t simgpu_pf_vf_vram_write_from(struct simgpu_pf_vf *vf, u64 off, u32 len,
				     ssize_t (*fill)(void *ctx, void *buf, u32 len), void *ctx);
int simgpu_pf_vf_vram_track(struct simgpu_pf_vf *vf, bool on);
int simgpu_pf_vf_vram_dirty(struct simgpu_pf_vf *vf, unsigned long *dirty,
			    unsigned long *populated);
int simgpu_pf_vf_vram_peek(struct simgpu_pf_vf *vf, unsigned long *dirty,
			   unsigned long *populated);
int simgpu_pf_vf_vram_read_take(struct simgpu_pf_vf *vf, u64 off, void *buf, u32 len);
int simgpu_pf_vf_vram_take_zero(struct simgpu_pf_vf *vf, u64 first, u64 n, u64 *taken);
int simgpu_pf_vf_vram_count(struct simgpu_pf_vf *vf, u64 *dirty, u64 *written);
int simgpu_pf_vf_scrub(struct simgpu_pf_vf *vf);
int simgpu_pf_vf_dma_log_start(struct simgpu_pf_vf *vf,
			       const struct simgpu_pf_iova_range *ranges, unsigned int nr,
			       u64 page_size);
int simgpu_pf_vf_dma_log_stop(struct simgpu_pf_vf *vf);
int simgpu_pf_vf_dma_log_report(struct simgpu_pf_vf *vf, u64 iova, u64 len,
				unsigned long *bitmap);

#if IS_ENABLED(CONFIG_KUNIT)
u64 simgpu_pf_vram_bitmap_bytes(u64 vram_size, u32 block_shift);
#endif

#endif /* _GPUMIG_SIMGPU_PF_H */
