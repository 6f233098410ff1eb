/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * simgpu-pci: simgpu as SR-IOV PCIe hardware, a device model of QEMU built
 * by gpumig.  The physical function (PF) provisions virtual functions
 * (VFs); each VF is a simgpu as <linux/simgpu.h> describes it (BAR0
 * registers, rings, the MMU) plus a VRAM aperture and MSI-X; the PF offers,
 * per VF, the services a migration driver needs, as commands in a mailbox
 * with completion status and an interrupt.
 *
 * The IDs are QEMU's test vendor's (0x1234), as simgpu's and QEMU's own
 * "edu" device use: this hardware exists only in QEMU, for testing.
 * Documentation/gpumig/simgpu-pci.rst explains the protocol.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _UAPI_LINUX_SIMGPU_PF_H
#define _UAPI_LINUX_SIMGPU_PF_H

#include <linux/types.h>

#define SIMGPU_PF_VENDOR_ID		0x1234
#define SIMGPU_PF_DEVICE_ID		0x5350	/* the PF */
#define SIMGPU_PF_CLASS			0x030200	/* 3D controller */
/* VFs are simgpus: SIMGPU_PCI_DEVICE_ID (0x5347), class 3D controller. */
#define SIMGPU_PF_MAX_VFS		8
#define SIMGPU_PF_BAR0_SIZE		0x10000	/* PF registers (32-bit BAR) */

/* VF BARs: registers, MSI-X, the VRAM aperture (64-bit prefetchable). */
#define SIMGPU_VF_BAR_REGS		0	/* SIMGPU_BAR0_SIZE */
#define SIMGPU_VF_BAR_MSIX		1	/* 8 KiB: table page, PBA page */
#define SIMGPU_VF_BAR_VRAM		2	/* the PF's aperture size */
/*
 * The table fills its page (256 vectors of 16 bytes; the device raises
 * vector 0): a VMM that maps the BAR and emulates the table over it (QEMU
 * with MSI-X mappable) sees page-aligned pieces only.  A table of one
 * vector left the rest of its page as a RAM piece starting mid-page, which
 * QEMU's type1 dirty-bitmap sync refuses (EINVAL), failing any migration
 * without device DMA logging.
 */
#define SIMGPU_VF_MSIX_SIZE		0x2000
#define SIMGPU_VF_MSIX_PBA		0x1000
#define SIMGPU_VF_MSIX_VECTORS		256

/* ---- PF registers (BAR0, 32-bit accesses) ------------------------------- */

#define SIMGPU_PF_REG_ID		0x000	/* RO: SIMGPU_PF_ID_MAGIC */
#define SIMGPU_PF_ID_MAGIC		0x46504753	/* "SGPF" */
#define SIMGPU_PF_REG_VERSION		0x004	/* RO: SIMGPU_PF_ABI_VERSION */
#define SIMGPU_PF_ABI_VERSION		1
#define SIMGPU_PF_REG_TOTAL_VFS		0x008	/* RO */
#define SIMGPU_PF_REG_PROFILES		0x00c	/* RO: bit p = profile p offered */
#define SIMGPU_PF_REG_APERTURE_LO	0x010	/* RO: VF VRAM BAR size, bytes */
#define SIMGPU_PF_REG_APERTURE_HI	0x014
/*
 * RW1C: bit v = VF v's command done; bit SIMGPU_PF_INT_DEMAND(v) = VF v
 * started to wait on an absent block (its DEMAND register says which).
 */
#define SIMGPU_PF_REG_INT_STATUS	0x018
#define SIMGPU_PF_INT_DEMAND(v)		(1U << (16 + (v)))
#define SIMGPU_PF_REG_INT_MASK		0x01c	/* RW: 1 = interrupt enabled */
#define SIMGPU_PF_REG_BLOCK_SHIFT	0x020	/* RO: VRAM dirty block, log2 bytes */
#define SIMGPU_PF_REG_ARCH_VERSION	0x024	/* RO: architectural-state layout */
#define SIMGPU_PF_REG_ARCH_SIZE		0x028	/* RO: its size in bytes */
#define SIMGPU_PF_REG_LOG_RANGES	0x02c	/* RO: most DMA-log ranges */
#define SIMGPU_PF_REG_LOG_PAGES		0x030	/* RO: most pages tracked, in all */
#define SIMGPU_PF_REG_XFER_MAX		0x034	/* RO: most bytes of one VRAM_READ/WRITE */
#define SIMGPU_PF_REG_CAPS		0x038	/* RO: SIMGPU_PF_CAP_* (0 before them) */
/*
 * The device keeps the VRAM blocks still to migrate itself: VRAM_COUNT,
 * VRAM_TAKE_ZERO, VRAM_READ_TAKE and VRAM_DIRTY_PEEK exist.
 */
#define SIMGPU_PF_CAP_VRAM_COUNT	(1U << 0)
/* Each VF has a scheduling share the PF sets: SET_SHARE exists. */
#define SIMGPU_PF_CAP_SHARE		(1U << 1)
/*
 * Post-copy of VRAM: a VF runs with blocks absent (SET_ABSENT, VRAM_LOSE,
 * the DEMAND register) and the PF holds a VF's blocks out of its reach
 * (VRAM_HOLD, HOLD_READ, HOLD_RETURN, HOLD_FREE).
 */
#define SIMGPU_PF_CAP_ABSENT		(1U << 2)
/*
 * VRAM_WRITE of zeroes (no address) clears any range inside VRAM in one
 * command, XFER_MAX bounding only transfers; the blocks never written
 * since the last clear cost nothing.
 */
#define SIMGPU_PF_CAP_ZERO_RANGE	(1U << 3)

/*
 * Profiles a VF can have: VRAM size and queue count, like the mdev types.
 * A PF offers those whose VRAM fits its aperture.
 */
#define SIMGPU_PF_PROFILE_64M		0	/* 64 MiB, 2 queues */
#define SIMGPU_PF_PROFILE_256M		1	/* 256 MiB, 4 queues */
#define SIMGPU_PF_PROFILE_1G		2	/* 1 GiB, 8 queues */
#define SIMGPU_PF_NR_PROFILES		3

/* Per-VF window: SIMGPU_PF_VF_BASE + vf * SIMGPU_PF_VF_STRIDE + reg. */
#define SIMGPU_PF_VF_BASE		0x1000
#define SIMGPU_PF_VF_STRIDE		0x100

#define SIMGPU_PF_VF_CMD		0x00	/* W: opcode, starts the command */
#define SIMGPU_PF_VF_STATUS		0x04	/* RO: SIMGPU_PF_STATUS_* */
#define SIMGPU_PF_VF_ARG0_LO		0x10	/* RW: command arguments, 64-bit */
#define SIMGPU_PF_VF_ARG0_HI		0x14
#define SIMGPU_PF_VF_ARG1_LO		0x18
#define SIMGPU_PF_VF_ARG1_HI		0x1c
#define SIMGPU_PF_VF_ARG2_LO		0x20
#define SIMGPU_PF_VF_ARG2_HI		0x24
#define SIMGPU_PF_VF_ARG3_LO		0x28
#define SIMGPU_PF_VF_ARG3_HI		0x2c
#define SIMGPU_PF_VF_RESULT_LO		0x30	/* RO: the command's result */
#define SIMGPU_PF_VF_RESULT_HI		0x34
#define SIMGPU_PF_VF_PROFILE		0x40	/* RW while VFs are disabled */
#define SIMGPU_PF_VF_VRAM_LO		0x44	/* RO: the profile's VRAM, bytes */
#define SIMGPU_PF_VF_VRAM_HI		0x48
#define SIMGPU_PF_VF_QUEUES		0x4c	/* RO: the profile's queues */
#define SIMGPU_PF_VF_RESETS		0x50	/* RO: function-level resets so far */
#define SIMGPU_PF_VF_STATE		0x54	/* RO: SIMGPU_PF_VF_STATE_* */
#define SIMGPU_PF_VF_GUEST_RESETS	0x58	/* RO: the VF user's CONTROL resets */
/*
 * CAP_ABSENT.  RO, read to take: 1 + the oldest absent block the VF's work
 * started to wait on that was not read yet, or 0 when none is left; the
 * device remembers the last 64 (older ones are dropped, and the VF still
 * waits for its block).
 */
#define SIMGPU_PF_VF_DEMAND		0x5c
/* CAP_ABSENT.  RO: blocks absent now, and blocks the PF holds for the VF. */
#define SIMGPU_PF_VF_ABSENT		0x60
#define SIMGPU_PF_VF_HELD		0x64
#define SIMGPU_PF_VF_STATE_ENABLED	(1U << 0)	/* SR-IOV enabled it */
#define SIMGPU_PF_VF_STATE_PAUSED	(1U << 1)	/* PAUSE completed */
#define SIMGPU_PF_VF_STATE_TRACKING	(1U << 2)	/* VRAM_TRACK on */
#define SIMGPU_PF_VF_STATE_LOGGING	(1U << 3)	/* DMA log on */

/* Test knobs, as simgpu's debugfs ones (RW, one word each). */
#define SIMGPU_PF_VF_KNOB(k)		(0x80 + (k) * 4)
#define SIMGPU_PF_KNOB_THROTTLE_US	0	/* pause after each pass */
#define SIMGPU_PF_KNOB_KERNEL_STEP_US	1	/* least time per kernel step */
#define SIMGPU_PF_KNOB_PREEMPT		2	/* kernels yield at steps */
#define SIMGPU_PF_KNOB_ACK_DELAY_MS	3	/* invalidation acks late */
#define SIMGPU_PF_KNOB_ACK_DROP		4	/* invalidation acks lost */
#define SIMGPU_PF_KNOB_DIRTY_RATE	5	/* background writer, pages/s */
#define SIMGPU_PF_NR_KNOBS		6

/* Counters, as simgpu's debugfs "stats" (RO, 64-bit: LO at +0, HI at +4). */
#define SIMGPU_PF_VF_STAT(s)		(0xa0 + (s) * 8)
#define SIMGPU_PF_STAT_CMDS		0
#define SIMGPU_PF_STAT_BYTES		1
#define SIMGPU_PF_STAT_KERNEL_STEPS	2
#define SIMGPU_PF_STAT_FAULTS		3
#define SIMGPU_PF_STAT_INVALIDATIONS	4
#define SIMGPU_PF_STAT_INVAL_DROPPED	5
#define SIMGPU_PF_STAT_IRQS		6
#define SIMGPU_PF_STAT_TLB_HITS		7
#define SIMGPU_PF_STAT_TLB_MISSES	8
#define SIMGPU_PF_STAT_DIRTY_PAGES	9
#define SIMGPU_PF_NR_STATS		10

/* SIMGPU_PF_VF_STATUS */
#define SIMGPU_PF_STATUS_BUSY		(1U << 31)	/* running; the rest is 0 */
/* Otherwise, the last command's outcome: */
#define SIMGPU_PF_OK			0
#define SIMGPU_PF_ERR_OPCODE		1	/* no such command */
#define SIMGPU_PF_ERR_ARGS		2	/* bad argument: range, length, flag */
#define SIMGPU_PF_ERR_BUSY		3	/* the VF did not quiesce in time */
#define SIMGPU_PF_ERR_TIMEOUT		4	/* no invalidation acknowledgment */
#define SIMGPU_PF_ERR_DMA		5	/* host memory not reachable */
#define SIMGPU_PF_ERR_STATE		6	/* refused architectural state */
#define SIMGPU_PF_ERR_DISABLED		7	/* the VF is not enabled */
#define SIMGPU_PF_ERR_ORDER		8	/* not in this state (e.g. no log) */
#define SIMGPU_PF_ERR_RESET		9	/* the VF was reset meanwhile */

/*
 * Commands (SIMGPU_PF_VF_CMD).  Arguments are host (PF) DMA addresses
 * where memory is named; the PF reaches them through the platform IOMMU
 * like any DMA.  A command completes with STATUS != BUSY and, if unmasked,
 * the PF's interrupt with its VF's bit in INT_STATUS.
 */
#define SIMGPU_PF_CMD_NOP		0
/* ARG0 timeout ms: stop scheduling; preempt at a step or drain; verified. */
#define SIMGPU_PF_CMD_PAUSE		1
#define SIMGPU_PF_CMD_RESUME		2
/* ARG0 timeout ms: invalidate every translation; OK only when acked. */
#define SIMGPU_PF_CMD_INVALIDATE	3
/* ARG0 addr, ARG1 len: the paused VF's state; RESULT its length. */
#define SIMGPU_PF_CMD_SAVE_STATE	4
/* ARG0 addr, ARG1 len: check and install a state (VF paused). */
#define SIMGPU_PF_CMD_RESTORE_STATE	5
/* ARG0 VRAM offset, ARG1 addr, ARG2 len (<= XFER_MAX): VRAM to host. */
#define SIMGPU_PF_CMD_VRAM_READ		6
/* The same, host to VRAM; ARG1 0 writes zeroes. */
#define SIMGPU_PF_CMD_VRAM_WRITE	7
/* ARG0 1/0: per-block VRAM dirty tracking on (every block dirty) or off. */
#define SIMGPU_PF_CMD_VRAM_TRACK	8
/*
 * ARG0 addr, ARG1 bytes per bitmap (a multiple of 8 covering every block):
 * at ARG0 the blocks written since the last VRAM_DIRTY (by the VF or by
 * CPU writes through the aperture), cleared, all zero while tracking is
 * off; at ARG0 + ARG1 the blocks written since the last scrub (the others
 * read as zeroes).  RESULT: the number of blocks.  Bit b of byte b / 8.
 */
#define SIMGPU_PF_CMD_VRAM_DIRTY	9
/* VRAM zeroed, the VF reset, logging and tracking off: for a new tenant. */
#define SIMGPU_PF_CMD_SCRUB		10
/*
 * ARG0 addr of ARG1 struct simgpu_pf_range (at most LOG_RANGES, sorted,
 * apart), ARG2 page size (SIMGPU_PF_LOG_PAGE_SIZE, whatever the host's):
 * track guest pages the VF writes by DMA.
 */
#define SIMGPU_PF_LOG_PAGE_SIZE		4096
#define SIMGPU_PF_CMD_DMA_LOG_START	11
#define SIMGPU_PF_CMD_DMA_LOG_STOP	12
/*
 * ARG0 IOVA, ARG1 length (page multiples), ARG2 addr, ARG3 bitmap bytes:
 * bit i set when page IOVA + i * page size was written since the last
 * report; reported pages are cleared, nothing outside the range is.
 */
#define SIMGPU_PF_CMD_DMA_LOG_REPORT	13
/*
 * CAP_VRAM_COUNT.  RESULT: bits 31:0 the dirty blocks (every block while
 * tracking is off), bits 63:32 those of them written since the last scrub
 * (the others read as zeroes).  Counts what VRAM_DIRTY would report now.
 */
#define SIMGPU_PF_CMD_VRAM_COUNT	14
/*
 * CAP_VRAM_COUNT.  ARG0 first block, ARG1 most blocks: clear the dirty
 * bits of the blocks from ARG0 on that are dirty and never written since
 * the scrub (sent as zeroes), stopping at the first that is clean or was
 * written.  RESULT: how many were cleared.
 */
#define SIMGPU_PF_CMD_VRAM_TAKE_ZERO	15
/*
 * CAP_VRAM_COUNT.  VRAM_READ of whole blocks that clears their dirty bits
 * first: a write that races the copy leaves its block dirty.
 */
#define SIMGPU_PF_CMD_VRAM_READ_TAKE	16
/*
 * CAP_VRAM_COUNT.  VRAM_DIRTY that leaves the dirty bits set: the device
 * keeps them until the blocks are taken (VRAM_READ_TAKE, VRAM_TAKE_ZERO).
 */
#define SIMGPU_PF_CMD_VRAM_DIRTY_PEEK	17
/*
 * CAP_SHARE.  ARG0: the share of each 10 ms slice the VF's work does not
 * get, 0 (none, the reset value) to SIMGPU_PF_SHARE_MAX: its queues and its
 * background writer run in the rest; nothing stops, nothing in flight is
 * lost, and the VF's FLR keeps it (the PF's setting, not the tenant's).
 * RESULT: the value before.
 */
#define SIMGPU_PF_CMD_SET_SHARE		18
#define SIMGPU_PF_SHARE_MAX		99
/*
 * CAP_ABSENT, the VF paused, none absent yet.  ARG0 addr, ARG1 bytes of a
 * bitmap (as VRAM_DIRTY's): the blocks set are absent from now on.  Work
 * of the VF's that touches one waits for it, whole steps at a time, and
 * the DEMAND register names it; other queues run on.  The device does not
 * see the CPU's accesses through the aperture: the VF's driver keeps them
 * off absent blocks.  A VRAM_WRITE of a whole absent block makes it
 * present (one that covers part of one fails with ERR_ARGS).  A SCRUB
 * forgets what is absent or lost; an FLR does not.  RESULT: blocks absent.
 */
#define SIMGPU_PF_CMD_SET_ABSENT	19
/*
 * CAP_ABSENT.  ARG0 block: an absent block will never arrive: the VF's
 * work that touches a page of it ends with SIMGPU_ERR_VRAM_LOST until it
 * writes that page whole or the VF is reset.
 */
#define SIMGPU_PF_CMD_VRAM_LOSE		20
/*
 * CAP_ABSENT, the VF paused, nothing held for it.  ARG0 addr, ARG1 bytes of
 * a bitmap: the blocks set leave the VF into the PF's hold: the aperture
 * and the VF's work read zeroes there.  The hold survives the VF's FLR, a
 * SCRUB and any change of the VF's driver; disabling the VF (SR-IOV off)
 * or resetting the PF frees it.  RESULT: blocks held.
 */
#define SIMGPU_PF_CMD_VRAM_HOLD		21
/* CAP_ABSENT.  ARG0 VRAM offset, ARG1 addr, ARG2 len: VRAM_READ from the hold. */
#define SIMGPU_PF_CMD_HOLD_READ		22
/* CAP_ABSENT.  What is held goes back into the VF's VRAM; the hold is empty. */
#define SIMGPU_PF_CMD_HOLD_RETURN	23
/* CAP_ABSENT.  What is held is zeroed and let go. */
#define SIMGPU_PF_CMD_HOLD_FREE		24
/*
 * CAP_ABSENT.  VRAM_WRITE of whole blocks that are all absent: they arrive
 * (present, their waiters run).  ERR_ORDER, writing nothing, when one of
 * them is not absent: a block delivered twice never overwrites the data
 * the tenant wrote since.
 */
#define SIMGPU_PF_CMD_VRAM_DELIVER	25

/**
 * struct simgpu_pf_range - one IOVA range of DMA_LOG_START (16 bytes)
 * @iova: first byte, page aligned
 * @length: bytes, page multiple
 */
struct simgpu_pf_range {
	__le64 iova;
	__le64 length;
};

#endif /* _UAPI_LINUX_SIMGPU_PF_H */
