/*
 * simgpu-pci: what the PF and VF halves of the device share (simgpu-pf.c,
 * simgpu-vf.c): their state, the profiles and the calls between them.
 * Include it after "qemu/osdep.h".
 *
 * Copyright (C) 2026 The gpumig authors
 * This work is licensed under the terms of the GNU GPL, version 2.
 */
#ifndef SIMGPU_PCI_H
#define SIMGPU_PCI_H

#include "qemu/bitmap.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/pcie_sriov.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "exec/memory.h"
#include "exec/cpu-common.h"
#include "exec/ram_addr.h"
#include "system/qtest.h"
#include "system/dma.h"
#include "simgpu-model.h"
#include "abi/simgpu.h"
#include "abi/simgpu_pf.h"


#define TYPE_SIMGPU_PF "simgpu-pf"
#define TYPE_SIMGPU_VF "simgpu-vf"
OBJECT_DECLARE_SIMPLE_TYPE(SimgpuPfState, SIMGPU_PF)
OBJECT_DECLARE_SIMPLE_TYPE(SimgpuVfState, SIMGPU_VF)

#define SIMGPU_VF_OFFSET	1	/* VFs are functions 1.. of the PF's slot */
#define SIMGPU_VF_STRIDE	1
#define SIMGPU_VFS_NOARI	7
#define SIMGPU_SRIOV_CAP	0x100
#define SIMGPU_BLOCK_SHIFT	16
#define SIMGPU_BLOCK_SIZE	(1ULL << SIMGPU_BLOCK_SHIFT)
#define SIMGPU_LOG_RANGES	16
#define SIMGPU_LOG_PAGES	(16ULL << 20)	/* 64 GiB of 4 KiB pages */
#define SIMGPU_LOG_PAGE		SIMGPU_PF_LOG_PAGE_SIZE
#define SIMGPU_XFER_MAX		(1U << 20)
#define SIMGPU_ARCH_MAX		(64 * KiB)
#define SIMGPU_DEMANDS		64	/* the DEMAND register's memory */

typedef struct SimgpuProfile {
	uint64_t vram;
	uint32_t queues;
} SimgpuProfile;

extern const SimgpuProfile simgpu_profiles[SIMGPU_PF_NR_PROFILES];

/* One VF's DMA log: a bitmap per range of guest pages it wrote. */
typedef struct SimgpuLog {
	bool active;
	unsigned int nr;
	uint64_t iova[SIMGPU_LOG_RANGES];
	uint64_t pages[SIMGPU_LOG_RANGES];
	unsigned long *bits[SIMGPU_LOG_RANGES];
} SimgpuLog;

/*
 * VRAM the PF holds for a VF (a post-copy source): its blocks' contents,
 * out of the VF's reach, kept until returned or freed (or the VF goes).
 */
typedef struct SimgpuHold {
	uint64_t nr_blocks;
	unsigned long *held;	/* blocks held */
	GHashTable *data;	/* block -> its contents; a held block not here reads zero */
	uint64_t count;
} SimgpuHold;

/* A VF's mailbox in the PF, with the state of a command that waits. */
typedef struct SimgpuSlot {
	uint32_t profile;
	uint32_t cmd;
	uint32_t status;
	uint64_t args[4];
	uint64_t result;
	int64_t deadline;
	uint32_t inval_seq;
	bool lost;		/* the PF's reset took the VF's state: say so */
	QEMUTimer *timer;	/* the deadline of PAUSE and INVALIDATE */
	bool queued;		/* BUSY, for the PF's bottom half to run */
	int64_t written;	/* when its opcode was written (virtual clock) */
	SimgpuHold *hold;	/* VRAM_HOLD's, or NULL */
	struct SimgpuPfState *pf;
	unsigned int n;
} SimgpuSlot;

/*
 * The model's context: what its environment callbacks are called with.
 * A VF disabled while its model is in use (its own DMA, or a PF command's,
 * reached the PF's SR-IOV control) marks the context dead, and the model
 * and context are freed only when the use ends (SimgpuVfState.busy).
 */
typedef struct SimgpuVfCtx {
	struct SimgpuVfState *vf;
	struct simgpu_model *model;
	bool dead;
} SimgpuVfCtx;

struct SimgpuVfState {
	PCIDevice parent_obj;
	MemoryRegion regs;
	MemoryRegion msix;
	MemoryRegion vram;
	struct simgpu_model *model;	/* while enabled */
	SimgpuVfCtx *ctx;		/* the model's, while enabled */
	unsigned int busy;		/* model passes and PF commands under way */
	QemuThread busy_thread;		/* the thread they run on */
	GSList *retired;		/* contexts disabled while busy */
	uint64_t vram_size;
	uint32_t queues;
	uint32_t resets;
	uint32_t guest_resets;		/* through CONTROL, since enabled */
	QEMUBH *bh;
	QEMUTimer *timer;
	int64_t not_before;		/* the throttle's pause ends */
	bool tracking;
	uint64_t nr_blocks;
	unsigned long *vdirty;		/* blocks written since the last VRAM_DIRTY */
	unsigned long *populated;	/* blocks written since the last scrub */
	SimgpuLog log;
	uint64_t demand[SIMGPU_DEMANDS];	/* absent blocks waited on, not read yet */
	unsigned int dhead, dtail;
};

struct SimgpuPfState {
	PCIDevice parent_obj;
	MemoryRegion regs;
	uint64_t aperture;
	uint32_t total_vfs;
	uint32_t vfs_offered;		/* TOTAL_VFS register; tests set it below */
	uint32_t int_status;
	uint32_t int_mask;
	unsigned int busy;		/* a command under way (its DMA may reach us) */
	QEMUBH *cmd_bh;			/* runs the commands written (simgpu_pf_cmd()) */
	QEMUTimer *cmd_timer;		/* ...or, where a vCPU ran the bottom half, this */
	QemuThread busy_thread;
	SimgpuSlot slot[SIMGPU_PF_MAX_VFS];
};

static inline SimgpuPfState *simgpu_vf_pf(SimgpuVfState *vf)
{
	return SIMGPU_PF(pcie_sriov_get_pf(PCI_DEVICE(vf)));
}

static inline unsigned int simgpu_vf_index(SimgpuVfState *vf)
{
	return pcie_sriov_vf_number(PCI_DEVICE(vf));
}

/* An enabled VF n of @pf, or NULL. */
static inline SimgpuVfState *simgpu_pf_vf(SimgpuPfState *pf, unsigned int n)
{
	PCIDevice *d = pcie_sriov_get_vf_at_index(PCI_DEVICE(pf), n);

	return d && d->enabled ? SIMGPU_VF(d) : NULL;
}

/* simgpu-vf.c: the VF and its model */
void simgpu_vf_enter(SimgpuVfState *vf);
void simgpu_vf_leave(SimgpuVfState *vf);
void simgpu_vf_sync_vram(SimgpuVfState *vf);
void simgpu_log_stop(SimgpuLog *log);
void simgpu_vf_scrub(SimgpuVfState *vf);
void simgpu_vf_class_init(ObjectClass *klass, void *data);

/* simgpu-pf.c: the PF and its mailbox */
void simgpu_pf_done(SimgpuPfState *pf, unsigned int n, uint32_t status);
void simgpu_pf_poll(SimgpuPfState *pf, unsigned int n);
void simgpu_pf_demand(SimgpuPfState *pf, unsigned int n);
void simgpu_hold_free(SimgpuSlot *s);
extern const VMStateDescription simgpu_vmstate;

#endif /* SIMGPU_PCI_H */
