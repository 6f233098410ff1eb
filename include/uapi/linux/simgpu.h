/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * simgpu: the guest-visible ABI of gpumig's simulated GPU.
 *
 * simgpu is a PCI function (vendor 0x1234, device 0x5347, class 0x030200)
 * with one 64 KiB MMIO BAR (BAR0) of 32-bit little-endian registers and
 * one MSI vector.  The guest drives it through command rings in its own
 * memory; every address inside a command is a GPU virtual address,
 * translated by the device's MMU through page tables the guest builds in
 * its memory.  Documentation/gpumig/simgpu-abi.rst explains the protocol.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _UAPI_LINUX_SIMGPU_H
#define _UAPI_LINUX_SIMGPU_H

#include <linux/types.h>

#define SIMGPU_PCI_VENDOR_ID		0x1234
#define SIMGPU_PCI_DEVICE_ID		0x5347
#define SIMGPU_PCI_CLASS		0x030200	/* 3D controller */
#define SIMGPU_BAR0_SIZE		0x10000

/* ---- BAR0 registers (offsets, 32-bit access only) ------------------- */

#define SIMGPU_REG_ID			0x000	/* RO: SIMGPU_ID_MAGIC */
#define SIMGPU_ID_MAGIC			0x55504753	/* "SGPU" */
#define SIMGPU_REG_VERSION		0x004	/* RO: ABI version */
#define SIMGPU_ABI_VERSION		1
#define SIMGPU_REG_CAPS			0x008	/* RO: SIMGPU_CAP_* */
#define SIMGPU_CAP_PREEMPT		(1U << 0)	/* kernels yield at steps */
#define SIMGPU_CAP_DIRTY_WORKLOAD	(1U << 1)	/* background DMA writer */
#define SIMGPU_REG_NUM_QUEUES		0x00c	/* RO */
#define SIMGPU_REG_VRAM_SIZE_LO		0x010	/* RO: bytes */
#define SIMGPU_REG_VRAM_SIZE_HI		0x014	/* RO */
#define SIMGPU_REG_STATUS		0x018	/* RO: SIMGPU_STATUS_* */
#define SIMGPU_STATUS_IDLE		(1U << 0)	/* nothing queued or running */
#define SIMGPU_STATUS_ERROR		(1U << 1)	/* a queue halted on an error */
#define SIMGPU_STATUS_ENABLED		(1U << 2)
#define SIMGPU_REG_CONTROL		0x01c	/* RW */
#define SIMGPU_CTRL_ENABLE		(1U << 0)	/* command processor runs */
#define SIMGPU_CTRL_RESET		(1U << 1)	/* W1: reset the function */
#define SIMGPU_REG_INT_STATUS		0x020	/* RW1C: SIMGPU_INT_* */
#define SIMGPU_REG_INT_MASK		0x024	/* RW: 1 = enabled */
#define SIMGPU_INT_QUEUE(q)		(1U << (q))	/* fence with IRQ flag */
#define SIMGPU_INT_ERROR		(1U << 16)
#define SIMGPU_INT_INVAL		(1U << 17)	/* invalidation acked */
#define SIMGPU_REG_ERROR_CODE		0x028	/* RO: first SIMGPU_ERR_* */
#define SIMGPU_REG_ERROR_QUEUE		0x02c	/* RO */
#define SIMGPU_REG_ERROR_ADDR_LO	0x030	/* RO: faulting address */
#define SIMGPU_REG_ERROR_ADDR_HI	0x034	/* RO */

#define SIMGPU_REG_PT_ROOT_LO		0x040	/* RW: IOVA of level-2 table */
#define SIMGPU_REG_PT_ROOT_HI		0x044	/* RW */
#define SIMGPU_REG_INVAL_REQ		0x048	/* W: sequence number */
#define SIMGPU_REG_INVAL_ACK		0x04c	/* RO: last acknowledged */

#define SIMGPU_REG_DIRTY_BASE_LO	0x050	/* RW: GPU VA of the region */
#define SIMGPU_REG_DIRTY_BASE_HI	0x054	/* RW */
#define SIMGPU_REG_DIRTY_PAGES		0x058	/* RW: region size in pages */
#define SIMGPU_REG_DIRTY_COUNT		0x05c	/* RO: pages written so far */

/* Per-queue registers: SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + reg. */
#define SIMGPU_MAX_QUEUES		8
#define SIMGPU_QUEUE_BASE		0x100
#define SIMGPU_QUEUE_STRIDE		0x40
#define SIMGPU_QREG_RING_LO		0x00	/* RW: IOVA of the ring */
#define SIMGPU_QREG_RING_HI		0x04	/* RW */
#define SIMGPU_QREG_RING_SIZE		0x08	/* RW: entries, power of 2 */
#define SIMGPU_QREG_HEAD		0x0c	/* RO: commands consumed */
#define SIMGPU_QREG_TAIL		0x10	/* RW: doorbell */
#define SIMGPU_QREG_CONTROL		0x14	/* RW: SIMGPU_QCTRL_* */
#define SIMGPU_QCTRL_ENABLE		(1U << 0)
#define SIMGPU_QCTRL_RESET		(1U << 1)	/* W1: clear error, head=tail=0 */
#define SIMGPU_QREG_STATUS		0x18	/* RO: SIMGPU_QSTATUS_* */
#define SIMGPU_QSTATUS_BUSY		(1U << 0)
#define SIMGPU_QSTATUS_ERROR		(1U << 1)
#define SIMGPU_QREG_ERROR		0x1c	/* RO: SIMGPU_ERR_* of this queue */
#define SIMGPU_QREG_FENCE_LO		0x20	/* RO: last fence value written */
#define SIMGPU_QREG_FENCE_HI		0x24

#define SIMGPU_RING_MAX_ENTRIES		4096

/* ---- commands --------------------------------------------------------- */

/**
 * struct simgpu_cmd - one ring entry (64 bytes, little endian)
 * @opcode: SIMGPU_OP_*
 * @flags: SIMGPU_CMD_F_*
 * @args: operands, by opcode:
 *
 * FENCE:  args[0] GPU VA (8-byte aligned), args[1] 64-bit value.
 * FILL:   args[0] dst VA, args[1] length, args[2] 32-bit pattern (dst and
 *         length 4-byte aligned).
 * COPY:   args[0] dst VA, args[1] src VA, args[2] length.
 * KERNEL: args[0] buffer VA (4-byte aligned), args[1] length, args[2]
 *         iterations, args[3] key.  Each iteration i replaces every 32-bit
 *         word w of the buffer with (w ^ key) * 2654435761 + i (mod 2^32).
 *         The device may yield between iterations (preemption points).
 * @reserved: zero
 */
struct simgpu_cmd {
	__le32 opcode;
	__le32 flags;
	__le64 args[6];
	__le64 reserved;
};

#define SIMGPU_OP_NOP			0
#define SIMGPU_OP_FENCE			1
#define SIMGPU_OP_FILL			2
#define SIMGPU_OP_COPY			3
#define SIMGPU_OP_KERNEL		4

#define SIMGPU_CMD_F_IRQ		(1U << 0)	/* FENCE: raise queue IRQ */

#define SIMGPU_MAX_XFER			(64U << 20)	/* FILL/COPY length */
#define SIMGPU_MAX_KERNEL_BUF		(1U << 20)
#define SIMGPU_MAX_KERNEL_ITERS		1000000

/* ---- GPU MMU ---------------------------------------------------------- */

/*
 * 4 KiB pages, 39-bit GPU virtual addresses, three levels of 512 64-bit
 * entries each, the tables in guest memory (IOVA).  VA bits 38:30 index the
 * root (level 2), 29:21 level 1, 20:12 level 0: SIMGPU_PT_INDEX(va, level).
 * Directory entries: bit 0 valid, bits 51:12 IOVA of the next table.  Leaf
 * entries: bit 0 valid, bit 1 writable, bit 2 VRAM (else guest memory),
 * bits 51:12 the page (a VRAM offset or an IOVA).
 */
#define SIMGPU_PAGE_SHIFT		12
#define SIMGPU_PAGE_SIZE		(1ULL << SIMGPU_PAGE_SHIFT)
#define SIMGPU_PT_LEVELS		3
#define SIMGPU_PT_BITS			9
#define SIMGPU_PT_ENTRIES		(1U << SIMGPU_PT_BITS)
#define SIMGPU_PT_ROOT_LEVEL		(SIMGPU_PT_LEVELS - 1)
#define SIMGPU_VA_BITS			(SIMGPU_PAGE_SHIFT + SIMGPU_PT_LEVELS * SIMGPU_PT_BITS)
#define SIMGPU_PT_INDEX(va, level)	\
	(((va) >> (SIMGPU_PAGE_SHIFT + (level) * SIMGPU_PT_BITS)) & (SIMGPU_PT_ENTRIES - 1))
#define SIMGPU_PTE_VALID		(1ULL << 0)
#define SIMGPU_PTE_WRITE		(1ULL << 1)
#define SIMGPU_PTE_VRAM			(1ULL << 2)
#define SIMGPU_PTE_ADDR_MASK		0x000ffffffffff000ULL

/* ---- errors (SIMGPU_REG_ERROR_CODE, SIMGPU_QREG_ERROR) --------------- */

#define SIMGPU_ERR_NONE			0
#define SIMGPU_ERR_RING_DMA		1	/* ring not readable at its IOVA */
#define SIMGPU_ERR_BAD_OPCODE		2
#define SIMGPU_ERR_BAD_ARGS		3	/* length, alignment, flags */
#define SIMGPU_ERR_PAGE_FAULT		4	/* no valid translation */
#define SIMGPU_ERR_WRITE_FAULT		5	/* write to a read-only page */
#define SIMGPU_ERR_DMA			6	/* guest memory not mapped */
#define SIMGPU_ERR_VRAM_RANGE		7	/* PTE points past VRAM */
#define SIMGPU_ERR_PT_DMA		8	/* page table not readable */
#define SIMGPU_ERR_BAD_RING		9	/* ring size not a power of 2 */
/*
 * The device's state and memory were lost under the guest (the physical
 * GPU it is a part of was reset): queues, translations and VRAM are gone.
 * SIMGPU_REG_ERROR_QUEUE is SIMGPU_QUEUE_DEVICE; a device reset clears it.
 */
#define SIMGPU_ERR_DEVICE_LOST		11
/*
 * The command touched device memory that was lost in a migration: the
 * destination ran before all of VRAM had arrived (post-copy) and the rest
 * never did.  SIMGPU_REG_ERROR_ADDR is the GPU virtual address.  A lost
 * page reads as this error until the guest writes all of it (a FILL or
 * COPY that covers it whole) or resets the device; nothing else of the
 * device is affected.
 */
#define SIMGPU_ERR_VRAM_LOST		12

/* SIMGPU_REG_ERROR_QUEUE of an error of the whole device. */
#define SIMGPU_QUEUE_DEVICE		0xfe
/* SIMGPU_REG_ERROR_QUEUE of a fault of the background writer (DIRTY_BASE). */
#define SIMGPU_QUEUE_WORKLOAD		0xff

#endif /* _UAPI_LINUX_SIMGPU_H */
