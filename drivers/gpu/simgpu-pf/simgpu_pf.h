/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu-pf internals.  One file per job, each depending only on those
 * after it:
 *
 *   pci_drv.c  probe and remove, SR-IOV, the interrupt
 *   sysfs.c    VF profiles, chosen before VFs are enabled; a claimed VF's
 *              resources
 *   debugfs.c  each VF's test knobs and counters
 *   provider.c what gpumig-vfio-pci gets: the gpumig provider of the
 *              PF's VFs (include/gpumig/provider.h), over the services;
 *              provider_vram.c and provider_dma_log.c its VRAM blocks
 *              and DMA log (provider.h)
 *   cmds.c     the mailbox and every service (below); cmds_postcopy.c
 *              those of post-copy, and the PF's hold of a VF's VRAM
 *   vf.c       a VF's life: claims, SR-IOV enabling it, the PF's reset
 *              and removal
 *
 * Locks, outermost first: the PF's lock (SR-IOV, claims, profiles), then
 * a VF's command lock (its mailbox and DMA buffer).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _SIMGPU_PF_INTERNAL_H
#define _SIMGPU_PF_INTERNAL_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <uapi/linux/simgpu_pf.h>

#include <gpumig/provider.h>

struct dentry;

/*
 * The PF's services to a VF's migration, one mailbox command or register
 * read each (cmds.c).  The provider (provider.c) serves them to
 * gpumig-vfio-pci through include/gpumig/provider.h; the KUnit suite
 * simgpu_pf_kunit calls them directly (exported only for it).  A claim
 * (simgpu_pf_vf_get()) keeps SR-IOV enabled; when the PF's driver goes
 * away the claimer's @pf_gone runs first and every service fails with
 * -ENODEV from then on; a reset of the PF is heard through @pf_reset.
 * Every call sleeps; calls for one VF are serialised.
 */
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

struct simgpu_pf_vf *simgpu_pf_vf_get(struct pci_dev *vf, const struct gpumig_vf_events *ev,
				      void *priv);
void simgpu_pf_vf_put(struct simgpu_pf_vf *vf);
void simgpu_pf_vf_info(struct simgpu_pf_vf *vf, struct simgpu_pf_vf_info *info);
u32 simgpu_pf_vf_resets(struct simgpu_pf_vf *vf);
u32 simgpu_pf_vf_guest_resets(struct simgpu_pf_vf *vf);
u32 simgpu_pf_vf_state(struct simgpu_pf_vf *vf);
void simgpu_pf_vf_flr_prepare(struct simgpu_pf_vf *vf);
int simgpu_pf_vf_flr_done(struct simgpu_pf_vf *vf);
u64 simgpu_pf_vf_stat(struct simgpu_pf_vf *vf, unsigned int s);
u32 simgpu_pf_vf_knob(struct simgpu_pf_vf *vf, unsigned int k);
void simgpu_pf_vf_set_knob(struct simgpu_pf_vf *vf, unsigned int k, u32 val);

int simgpu_pf_vf_pause(struct simgpu_pf_vf *vf, unsigned int timeout_ms);
int simgpu_pf_vf_resume(struct simgpu_pf_vf *vf);
int simgpu_pf_vf_set_share(struct simgpu_pf_vf *vf, u32 pct, u32 *before);
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

/**
 * struct simgpu_pf_hold - VRAM the PF holds for a post-copy source
 * @base: what the engine holds (its ops read and free it)
 * @vf: whose blocks; its PF's state is kept while the hold exists
 * @blocks: how many blocks the device holds
 */
struct simgpu_pf_hold {
	struct gpumig_vram_hold base;
	struct simgpu_pf_vf *vf;
	u64 blocks;
};

int simgpu_pf_vf_set_absent(struct simgpu_pf_vf *vf, const unsigned long *map, unsigned long nr);
int simgpu_pf_vf_vram_deliver(struct simgpu_pf_vf *vf, u64 off, const void *buf, u32 len);
int simgpu_pf_vf_vram_lose(struct simgpu_pf_vf *vf, u64 blk);
u64 simgpu_pf_vf_demand(struct simgpu_pf_vf *vf);
struct simgpu_pf_hold *simgpu_pf_vf_hold(struct simgpu_pf_vf *vf, const unsigned long *map,
					 unsigned long nr);
void simgpu_pf_vf_hold_return(struct simgpu_pf_vf *vf, struct simgpu_pf_hold *h);
void simgpu_pf_vf_hold_lost(struct simgpu_pf_vf *vf, const char *why, bool free);

#if IS_ENABLED(CONFIG_KUNIT)
u64 simgpu_pf_vram_bitmap_bytes(u64 vram_size, u32 block_shift);
#endif

/* Blocks the device's DEMAND register remembers. */
#define SIMGPU_PF_DEMANDS	64

/* Per-VF DMA buffer: state, a VRAM block, bitmaps, report chunks. */
#define SIMGPU_PF_BUF_SIZE	(256 * 1024)

/**
 * struct simgpu_pf_vf - one VF as its PF driver sees it
 * @pf: the PF (fixed)
 * @n: the VF's index (fixed)
 * @wq: woken when the PF's interrupt says this VF's command completed
 * @cmd_lock: guards the mailbox registers, @buf, @gone, @resetting,
 *	@wedged and @mailbox
 * @gone: the PF's driver was removed: every service fails with -ENODEV
 * @resetting: the PF is being reset: every service fails with -EAGAIN
 * @wedged: a command never completed: the mailbox is not trusted again
 *	(until the PF or the VF is reset)
 * @flr_from: the VF's reset count when its FLR began (held @cmd_lock)
 * @buf: DMA buffer (coherent), @buf_dma its bus address; while enabled
 * @buf_dma: see @buf
 * @mailbox: commands issued to the device (debugfs, for tests)
 * @hold: VRAM the PF holds for the VF (post-copy's source), or NULL; read
 *	locklessly by the SR-IOV check (cmds_postcopy.c)
 * @pdev: the VF's PCI device while SR-IOV is enabled (the PF's lock)
 * @ops: the claimer's events, or NULL while unclaimed (the PF's lock)
 * @priv: their argument (the PF's lock)
 * @debugfs: the VF's knob directory (the PF's lock)
 * @knob: knob k holds k, for debugfs.c (fixed)
 */
struct simgpu_pf_vf {
	struct simgpu_pf *pf;
	unsigned int n;
	wait_queue_head_t wq;

	struct mutex cmd_lock;		/* see above */
	bool gone;
	bool resetting;
	bool wedged;
	u32 flr_from;
	void *buf;
	dma_addr_t buf_dma;
	u64 mailbox;
	struct simgpu_pf_hold *hold;

	struct pci_dev *pdev;
	const struct gpumig_vf_events *ops;
	void *priv;
	struct dentry *debugfs;
	u8 knob[SIMGPU_PF_NR_KNOBS];
};

/**
 * struct simgpu_pf - one simgpu-pci physical function
 * @ref: the claimers and the driver each hold one; the last put frees it
 * @pdev: the PF (fixed while bound)
 * @regs: BAR0 (fixed while bound; no access once every VF is gone)
 * @total_vfs: VFs the device has (fixed)
 * @offered: SIMGPU_PF_PROFILE_* bits the device offers (fixed)
 * @info: the device's limits, shared by every VF (fixed)
 * @lock: guards @num_vfs, @sriov_changing, @profile and each VF's @pdev,
 *	@ops, @priv, @debugfs
 * @num_vfs: VFs enabled
 * @sriov_changing: SR-IOV is being enabled or disabled (the PF's lock is
 *	not held across it): no VF may be claimed
 * @profile: each VF's profile, written to the device at enable
 * @debugfs: the PF's knob directory (fixed while bound)
 * @sriov_delay_ms: test knob: SR-IOV configuration waits this long
 *	between its checks and the PCI core's enable or disable (debugfs)
 * @demand_work: passes the blocks VFs wait on to their claimers
 * @vf: the VFs
 */
struct simgpu_pf {
	struct kref ref;
	struct pci_dev *pdev;
	void __iomem *regs;
	unsigned int total_vfs;
	u32 offered;
	struct simgpu_pf_vf_info info;

	struct mutex lock;		/* see above */
	unsigned int num_vfs;
	bool sriov_changing;
	u32 profile[SIMGPU_PF_MAX_VFS];
	struct dentry *debugfs;
	u32 sriov_delay_ms;
	struct work_struct demand_work;
	struct simgpu_pf_vf vf[SIMGPU_PF_MAX_VFS];
};

extern struct pci_driver simgpu_pf_driver;

/* sysfs.c */
extern const struct attribute_group *simgpu_pf_groups[];
extern const struct attribute_group simgpu_pf_vf_group;

/* provider.c */
int simgpu_pf_provider_register(void);
void simgpu_pf_provider_unregister(void);

/* debugfs.c */
void simgpu_pf_debugfs_init(void);
void simgpu_pf_debugfs_exit(void);
void simgpu_pf_debugfs_add(struct simgpu_pf_vf *vf);
void simgpu_pf_debugfs_remove(struct simgpu_pf_vf *vf);
void simgpu_pf_debugfs_pf_add(struct simgpu_pf *pf);
void simgpu_pf_debugfs_pf_remove(struct simgpu_pf *pf);

/* cmds.c */
#define SIMGPU_PF_CMD_MS	2000	/* commands that do not wait on the VF */
extern const char *const simgpu_pf_profile_names[SIMGPU_PF_NR_PROFILES];
int simgpu_pf_cmd(struct simgpu_pf_vf *vf, u32 op, const u64 *args, unsigned int nargs,
		  unsigned int bound_ms, u64 *result);
u32 simgpu_pf_read(struct simgpu_pf *pf, u32 reg);
void simgpu_pf_write(struct simgpu_pf *pf, u32 reg, u32 val);
u32 simgpu_pf_vf_reg(struct simgpu_pf_vf *vf, u32 reg);
void simgpu_pf_vf_set_reg(struct simgpu_pf_vf *vf, u32 reg, u32 val);

/* vf.c */
int simgpu_pf_vf_enable(struct simgpu_pf_vf *vf, struct pci_dev *pdev);
void simgpu_pf_vf_disable(struct simgpu_pf_vf *vf);
void simgpu_pf_vf_set_gone(struct simgpu_pf_vf *vf);
void simgpu_pf_vf_set_resetting(struct simgpu_pf_vf *vf, bool on);
void simgpu_pf_free(struct kref *ref);

#endif /* _SIMGPU_PF_INTERNAL_H */
