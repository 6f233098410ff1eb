/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu-pf internals.  One file per job, each depending only on those
 * after it:
 *
 *   pci_drv.c  probe and remove, SR-IOV, the interrupt
 *   sysfs.c    VF profiles, chosen before VFs are enabled
 *   debugfs.c  each VF's test knobs and counters
 *   cmds.c     the mailbox and every service (include/gpumig/simgpu_pf.h)
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
#include <uapi/linux/simgpu_pf.h>

#include <gpumig/simgpu_pf.h>

struct dentry;

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
 *	(until the PF is reset)
 * @buf: DMA buffer (coherent), @buf_dma its bus address; while enabled
 * @buf_dma: see @buf
 * @mailbox: commands issued to the device (debugfs, for tests)
 * @pdev: the VF's PCI device while SR-IOV is enabled (the PF's lock)
 * @ops: the claimer's callbacks, or NULL while unclaimed (the PF's lock)
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
	void *buf;
	dma_addr_t buf_dma;
	u64 mailbox;

	struct pci_dev *pdev;
	const struct simgpu_pf_vf_ops *ops;
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
	struct simgpu_pf_vf vf[SIMGPU_PF_MAX_VFS];
};

extern struct pci_driver simgpu_pf_driver;

/* sysfs.c */
extern const struct attribute_group *simgpu_pf_groups[];

/* debugfs.c */
void simgpu_pf_debugfs_init(void);
void simgpu_pf_debugfs_exit(void);
void simgpu_pf_debugfs_add(struct simgpu_pf_vf *vf);
void simgpu_pf_debugfs_remove(struct simgpu_pf_vf *vf);
void simgpu_pf_debugfs_pf_add(struct simgpu_pf *pf);
void simgpu_pf_debugfs_pf_remove(struct simgpu_pf *pf);

/* cmds.c */
extern const char *const simgpu_pf_profile_names[SIMGPU_PF_NR_PROFILES];
u32 simgpu_pf_read(struct simgpu_pf *pf, u32 reg);
void simgpu_pf_write(struct simgpu_pf *pf, u32 reg, u32 val);
u32 simgpu_pf_vf_reg(struct simgpu_pf_vf *vf, u32 reg);
void simgpu_pf_vf_set_reg(struct simgpu_pf_vf *vf, u32 reg, u32 val);
int simgpu_pf_vf_enable(struct simgpu_pf_vf *vf, struct pci_dev *pdev);
void simgpu_pf_vf_disable(struct simgpu_pf_vf *vf);
void simgpu_pf_vf_set_gone(struct simgpu_pf_vf *vf);
void simgpu_pf_vf_set_resetting(struct simgpu_pf_vf *vf, bool on);
void simgpu_pf_free(struct kref *ref);

#endif /* _SIMGPU_PF_INTERNAL_H */
