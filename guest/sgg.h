/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu-guest: a guest kernel driver for simgpu (linux/simgpu.h), the
 * mdev and the simgpu-pci VF alike.  sgg_hw.c drives the hardware (BAR0,
 * the GPU MMU, rings, interrupts, errors, resets), sgg_main.c is the PCI
 * driver, sgg_cdev.c the user interface (linux/simgpu_guest.h).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _SGG_H
#define _SGG_H

#include <linux/bits.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <uapi/linux/simgpu.h>
#include <uapi/linux/simgpu_guest.h>

#define SGG_RING_ENTRIES	256
#define SGG_SYS_MAX		(4U << 20)	/* one coherent allocation */
#define SGG_VA_FENCES		0x1000ULL	/* the queues' fence slots */
#define SGG_VA_VRAM		BIT_ULL(32)	/* + the VRAM offset */
#define SGG_VA_SYS		BIT_ULL(36)	/* guest-memory buffers, never reused */
#define SGG_VA_END		BIT_ULL(SIMGPU_VA_BITS)
#define SGG_WATCH_MS		500

/* A page table: its page (in guest memory, for the device) and children. */
struct sgg_pt {
	u64 *cpu;
	dma_addr_t dma;
	struct sgg_pt *child[SIMGPU_PT_ENTRIES];
};

struct sgg_queue {
	struct simgpu_cmd *ring;
	dma_addr_t ring_dma;
	u32 tail;
	u64 submitted;		/* the last fence value submitted */
	/* under irq_lock: fences up to failed_upto fail with failed_code */
	u64 failed_upto;
	u32 failed_code;
	u64 failed_addr;
	bool halted;		/* stopped on an error; the reset work restarts it */
};

struct sgg_dev {
	struct kref ref;
	struct pci_dev *pdev;
	void __iomem *regs;
	int id;
	char name[16];
	struct miscdevice misc;
	bool registered;

	u32 device_abi, nr_queues, caps;
	u64 vram_size;

	struct mutex lock;	/* everything but what irq_lock covers */
	bool gone;		/* removed: every call is -ENODEV */
	bool resetting;		/* between reset_prepare and reset_done */
	struct sgg_pt *root;
	__le64 *fences;		/* one per queue, written by the device */
	dma_addr_t fences_dma;
	u32 inval_seq;
	unsigned long *vram_map;	/* a bit per VRAM page in use */
	u64 sys_next;		/* next guest-memory buffer's GPU VA */
	struct sgg_queue q[SIMGPU_MAX_QUEUES];

	struct list_head files;	/* open files (struct sgg_file), under lock */

	spinlock_t irq_lock;	/* the queues' failures, the error log */
	wait_queue_head_t wq;	/* fences, errors, resets */
	struct work_struct err_work;
	struct delayed_work watch;	/* notices a device that lost its state */
	atomic_t lost_pending;	/* a loss the error work has not handled yet */
	struct sgg_error log[SGG_MAX_ERRORS];
	u32 nr_log, lost;
	u64 errors, resets;
};

struct sgg_file {
	struct sgg_dev *s;
	struct list_head node;	/* in s->files */
	struct address_space *mapping;	/* where its buffers are mmap()ed */
	struct xarray bos;	/* handle -> struct sgg_bo */
};

struct sgg_bo {
	u32 handle;
	u32 domain;
	u64 size;
	u64 gpu_va;
	void *cpu;		/* SGG_DOMAIN_SYS */
	dma_addr_t dma;
	u64 vram_off;		/* SGG_DOMAIN_VRAM */
	atomic_t mapped;	/* mmap()s of it alive */
};

static inline u32 sgg_rd(struct sgg_dev *s, u32 reg)
{
	return readl(s->regs + reg);
}

static inline void sgg_wr(struct sgg_dev *s, u32 reg, u32 val)
{
	writel(val, s->regs + reg);
}

static inline u32 sgg_qrd(struct sgg_dev *s, u32 q, u32 reg)
{
	return sgg_rd(s, SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + reg);
}

static inline void sgg_qwr(struct sgg_dev *s, u32 q, u32 reg, u32 val)
{
	sgg_wr(s, SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + reg, val);
}

/* sgg_hw.c */
int sgg_hw_init(struct sgg_dev *s);
void sgg_hw_fini(struct sgg_dev *s);
int sgg_hw_start(struct sgg_dev *s);
void sgg_hw_stop(struct sgg_dev *s);
irqreturn_t sgg_irq(int irq, void *data);
void sgg_err_work(struct work_struct *work);
void sgg_watch(struct work_struct *work);
void sgg_device_reset(struct sgg_dev *s, u32 code);
int sgg_map(struct sgg_dev *s, u64 va, u64 target, u64 len, u64 flags);
int sgg_unmap(struct sgg_dev *s, u64 va, u64 len);
int sgg_submit(struct sgg_dev *s, u32 q, const struct simgpu_cmd *cmd, u64 *fence);
int sgg_wait(struct sgg_dev *s, struct sgg_wait *w);
void sgg_log_error(struct sgg_dev *s, u32 code, u32 queue, u64 addr);

/* sgg_cdev.c */
int sgg_cdev_register(struct sgg_dev *s);
void sgg_cdev_unregister(struct sgg_dev *s);
void sgg_cdev_gone(struct sgg_dev *s);

/* sgg_main.c */
void sgg_put(struct sgg_dev *s);

#endif
