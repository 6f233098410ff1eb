// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for simgpu-pf's services (drivers/gpu/simgpu-pf/simgpu_pf.h) on
 * real simgpu-pci hardware: the QEMU device of qemu/simgpu, in a VM.  The
 * test drives an unbound VF itself, as a tiny guest driver would (page
 * tables, a ring and buffers in DMA memory through the platform IOMMU),
 * and asks its PF for each service.  Without such a VF every case skips.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/unaligned.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <uapi/linux/simgpu.h>
#include <uapi/linux/simgpu_pf.h>

#include <gpumig/compat.h>
#include "../drivers/gpu/simgpu-pf/simgpu_pf.h"

#define T_MEM		SZ_1M		/* DMA memory: tables, ring, buffers */
#define T_ROOT		0		/* page-table pages in it */
#define T_L1		SZ_4K
#define T_L0_SYS	(2 * SZ_4K)
#define T_L0_VRAM	(3 * SZ_4K)
#define T_RING		(4 * SZ_4K)
#define T_BUF		(64 * SZ_1K)	/* guest buffers from here */
#define T_VA_SYS	0x10000000ULL	/* maps T_MEM */
#define T_VA_VRAM	0x40000000ULL	/* maps the first 2 MiB of VRAM */
#define T_RING_SIZE	64
#define T_TMO_MS	5000

/**
 * struct vfenv - one VF driven by the test
 * @pdev: the VF
 * @vf: its PF's services, claimed
 * @info: its profile and the PF's limits
 * @regs: BAR0
 * @vram: BAR2, the VRAM aperture
 * @mem: DMA memory, @mem_dma its IOVA
 * @mem_dma: see @mem
 * @tail: ring tail of queue 0
 */
struct vfenv {
	struct pci_dev *pdev;
	struct simgpu_pf_vf *vf;
	struct simgpu_pf_vf_info info;
	void __iomem *regs;
	void __iomem *vram;
	void *mem;
	dma_addr_t mem_dma;
	u32 tail;
};

static struct pci_dev *simgpu_unbound_vf(void)
{
	struct pci_dev *p = NULL;

	while ((p = pci_get_device(SIMGPU_PCI_VENDOR_ID, SIMGPU_PCI_DEVICE_ID, p)))
		if (p->is_virtfn && !p->dev.driver)
			return p;
	return NULL;
}

static void vfenv_release(void *data)
{
	struct vfenv *e = data;

	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_ACK_DROP, 0);
	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_PREEMPT, 1);
	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US, 0);
	simgpu_pf_vf_dma_log_stop(e->vf);
	simgpu_pf_vf_vram_track(e->vf, false);
	simgpu_pf_vf_resume(e->vf);
	simgpu_pf_vf_scrub(e->vf);
	pci_clear_master(e->pdev);
	if (e->mem)
		dma_free_coherent(&e->pdev->dev, T_MEM, e->mem, e->mem_dma);
	if (e->vram)
		pci_iounmap(e->pdev, e->vram);
	if (e->regs)
		pci_iounmap(e->pdev, e->regs);
	pci_disable_device(e->pdev);
	simgpu_pf_vf_put(e->vf);
	pci_dev_put(e->pdev);
}

static u32 rd(struct vfenv *e, u32 reg)
{
	return readl(e->regs + reg);
}

static void wr(struct vfenv *e, u32 reg, u32 val)
{
	writel(val, e->regs + reg);
}

static u64 *pte(struct vfenv *e, u32 table, u64 va)
{
	return (u64 *)(e->mem + table) + SIMGPU_PT_INDEX(va, 0);
}

/* Page tables: T_VA_SYS -> all of T_MEM, T_VA_VRAM -> VRAM [0, 2 MiB). */
static void vfenv_map(struct vfenv *e)
{
	u64 *root = e->mem + T_ROOT, *l1 = e->mem + T_L1, off;

	root[SIMGPU_PT_INDEX(T_VA_SYS, 2)] = (e->mem_dma + T_L1) | SIMGPU_PTE_VALID;
	l1[SIMGPU_PT_INDEX(T_VA_SYS, 1)] = (e->mem_dma + T_L0_SYS) | SIMGPU_PTE_VALID;
	root[SIMGPU_PT_INDEX(T_VA_VRAM, 2)] = (e->mem_dma + T_L1) | SIMGPU_PTE_VALID;
	l1[SIMGPU_PT_INDEX(T_VA_VRAM, 1)] = (e->mem_dma + T_L0_VRAM) | SIMGPU_PTE_VALID;
	for (off = 0; off < T_MEM; off += SZ_4K)
		*pte(e, T_L0_SYS, T_VA_SYS + off) = (e->mem_dma + off) | SIMGPU_PTE_VALID |
						    SIMGPU_PTE_WRITE;
	for (off = 0; off < SZ_2M; off += SZ_4K)
		*pte(e, T_L0_VRAM, T_VA_VRAM + off) = off | SIMGPU_PTE_VALID |
						      SIMGPU_PTE_WRITE | SIMGPU_PTE_VRAM;
}

/* The VF set up as a guest driver would: tables, queue 0, processor on. */
static void vfenv_setup(struct vfenv *e)
{
	u32 q = SIMGPU_QUEUE_BASE;

	wr(e, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	memset(e->mem, 0, T_BUF);
	vfenv_map(e);
	wr(e, SIMGPU_REG_PT_ROOT_LO, lower_32_bits(e->mem_dma + T_ROOT));
	wr(e, SIMGPU_REG_PT_ROOT_HI, upper_32_bits(e->mem_dma + T_ROOT));
	wr(e, q + SIMGPU_QREG_RING_LO, lower_32_bits(e->mem_dma + T_RING));
	wr(e, q + SIMGPU_QREG_RING_HI, upper_32_bits(e->mem_dma + T_RING));
	wr(e, q + SIMGPU_QREG_RING_SIZE, T_RING_SIZE);
	wr(e, q + SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_ENABLE);
	wr(e, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
	e->tail = 0;
}

static struct vfenv *vfenv_new(struct kunit *test)
{
	struct vfenv *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);
	struct pci_dev *pdev = simgpu_unbound_vf();

	KUNIT_ASSERT_NOT_NULL(test, e);
	if (!pdev)
		kunit_skip(test, "no unbound simgpu-pci VF (simgpu-pci hardware in a VM)");
	e->pdev = pdev;
	e->vf = simgpu_pf_vf_get(pdev, NULL, NULL);
	if (IS_ERR(e->vf)) {
		pci_dev_put(pdev);
		KUNIT_FAIL_AND_ABORT(test, "claim: %ld", PTR_ERR(e->vf));
	}
	KUNIT_ASSERT_EQ(test, 0, pci_enable_device_mem(pdev));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, vfenv_release, e));
	pci_set_master(pdev);
	KUNIT_ASSERT_EQ(test, 0, dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64)));
	simgpu_pf_vf_info(e->vf, &e->info);
	e->regs = pci_iomap(pdev, SIMGPU_VF_BAR_REGS, SIMGPU_BAR0_SIZE);
	e->vram = pci_iomap_wc(pdev, SIMGPU_VF_BAR_VRAM, SZ_2M);
	e->mem = dma_alloc_coherent(&pdev->dev, T_MEM, &e->mem_dma, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, e->regs && e->vram && e->mem);
	KUNIT_ASSERT_EQ(test, rd(e, SIMGPU_REG_ID), SIMGPU_ID_MAGIC);
	vfenv_setup(e);
	return e;
}

static void submit(struct vfenv *e, u32 op, u64 a0, u64 a1, u64 a2, u64 a3)
{
	struct simgpu_cmd *c = (struct simgpu_cmd *)(e->mem + T_RING) +
			       (e->tail % T_RING_SIZE);

	memset(c, 0, sizeof(*c));
	c->opcode = cpu_to_le32(op);
	c->args[0] = cpu_to_le64(a0);
	c->args[1] = cpu_to_le64(a1);
	c->args[2] = cpu_to_le64(a2);
	c->args[3] = cpu_to_le64(a3);
	dma_wmb();
	wr(e, SIMGPU_QUEUE_BASE + SIMGPU_QREG_TAIL, ++e->tail);
}

static int wait_idle(struct vfenv *e)
{
	unsigned long end = jiffies + msecs_to_jiffies(T_TMO_MS);
	u32 st;

	do {
		st = rd(e, SIMGPU_QUEUE_BASE + SIMGPU_QREG_STATUS);
		if (st & SIMGPU_QSTATUS_ERROR)
			return -EIO;
		if (!(st & SIMGPU_QSTATUS_BUSY))
			return 0;
		usleep_range(500, 1000);
	} while (time_before(jiffies, end));
	return -ETIMEDOUT;
}

static u64 kernel_steps(struct vfenv *e)
{
	return simgpu_pf_vf_stat(e->vf, SIMGPU_PF_STAT_KERNEL_STEPS);
}

static u32 kernel_word(u32 w, u32 key, u32 i)
{
	return (w ^ key) * 2654435761U + i;
}

/* Pause with a kernel in flight: it stops, keeps its progress, finishes right. */
static void pf_pause_keeps_progress(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	__le32 *buf = e->mem + T_BUF;
	u32 expect[16], i, it, key = 0x1234;
	u64 s1, s2;

	for (i = 0; i < 16; i++)
		expect[i] = i;
	for (it = 0; it < 400; it++)
		for (i = 0; i < 16; i++)
			expect[i] = kernel_word(expect[i], key, it);
	for (i = 0; i < 16; i++)
		buf[i] = cpu_to_le32(i);
	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US, 2000);
	s1 = kernel_steps(e);
	submit(e, SIMGPU_OP_KERNEL, T_VA_SYS + T_BUF, 64, 400, key);
	while (kernel_steps(e) < s1 + 5)
		usleep_range(1000, 2000);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_pause(e->vf, 1000));
	s1 = kernel_steps(e);
	msleep(100);
	s2 = kernel_steps(e);
	KUNIT_EXPECT_EQ(test, s1, s2);		/* nothing runs */
	KUNIT_EXPECT_GT(test, rd(e, SIMGPU_QUEUE_BASE + SIMGPU_QREG_STATUS) &
			SIMGPU_QSTATUS_BUSY, 0U);	/* and it was in flight */
	KUNIT_EXPECT_TRUE(test, simgpu_pf_vf_knob(e->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US));
	KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_resume(e->vf));
	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US, 0);
	KUNIT_ASSERT_EQ(test, 0, wait_idle(e));
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, le32_to_cpu(buf[i]), expect[i]);
}

/* Preemption off and a kernel longer than the bound: -EBUSY, it runs on. */
static void pf_pause_refused(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	u64 s1;

	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_PREEMPT, 0);
	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US, 10000);
	s1 = kernel_steps(e);
	submit(e, SIMGPU_OP_KERNEL, T_VA_SYS + T_BUF, 64, 1000, 1);
	while (kernel_steps(e) < s1 + 2)
		usleep_range(1000, 2000);
	KUNIT_EXPECT_EQ(test, -EBUSY, simgpu_pf_vf_pause(e->vf, 200));
	s1 = kernel_steps(e);
	msleep(100);
	KUNIT_EXPECT_GT(test, kernel_steps(e), s1);	/* it runs as before */
	wr(e, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
}

/* Invalidation completes only when acknowledged. */
static void pf_invalidate(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);

	submit(e, SIMGPU_OP_FENCE, T_VA_SYS + T_BUF, 7, 0, 0);	/* a translation */
	KUNIT_ASSERT_EQ(test, 0, wait_idle(e));
	KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_invalidate(e->vf, 1000));
	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_ACK_DROP, 1);
	KUNIT_EXPECT_EQ(test, -ETIMEDOUT, simgpu_pf_vf_invalidate(e->vf, 300));
	simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_ACK_DROP, 0);
	KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_invalidate(e->vf, 1000));
	KUNIT_EXPECT_GE(test, simgpu_pf_vf_stat(e->vf, SIMGPU_PF_STAT_INVAL_DROPPED), 1ULL);
}

/* Save, restore, save again: the same state; nonsense is refused. */
static void pf_state_round_trip(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	u8 *a = kunit_kzalloc(test, SZ_64K, GFP_KERNEL);
	u8 *b = kunit_kzalloc(test, SZ_64K, GFP_KERNEL);
	ssize_t n, m;

	KUNIT_ASSERT_TRUE(test, a && b);
	submit(e, SIMGPU_OP_FENCE, T_VA_SYS + T_BUF, 0x55, 0, 0);
	KUNIT_ASSERT_EQ(test, 0, wait_idle(e));
	KUNIT_EXPECT_EQ(test, -EINVAL, (int)simgpu_pf_vf_save_state(e->vf, a, SZ_64K));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_pause(e->vf, 1000));
	n = simgpu_pf_vf_save_state(e->vf, a, SZ_64K);
	KUNIT_ASSERT_EQ(test, n, (ssize_t)e->info.arch_size);
	KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_restore_state(e->vf, a, n));
	m = simgpu_pf_vf_save_state(e->vf, b, SZ_64K);
	KUNIT_EXPECT_EQ(test, m, n);
	KUNIT_EXPECT_EQ(test, 0, memcmp(a, b, n));
	a[0] ^= 0xff;			/* the magic */
	KUNIT_EXPECT_EQ(test, -EINVAL, simgpu_pf_vf_restore_state(e->vf, a, n));
	KUNIT_EXPECT_EQ(test, -EINVAL, simgpu_pf_vf_restore_state(e->vf, b, n - 1));
	KUNIT_EXPECT_EQ(test, -EINVAL, (int)simgpu_pf_vf_save_state(e->vf, a, 8));
	KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_resume(e->vf));
	KUNIT_EXPECT_EQ(test, rd(e, SIMGPU_QUEUE_BASE + SIMGPU_QREG_FENCE_LO), 0x55U);
}

/* The VRAM dirty bits see the PF's, the VF's and the CPU's writes. */
static void pf_vram_dirty(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	u64 blocks = e->info.vram_size >> e->info.block_shift;
	unsigned long *d = kunit_kcalloc(test, BITS_TO_LONGS(blocks), sizeof(long), GFP_KERNEL);
	unsigned long *pop = kunit_kcalloc(test, BITS_TO_LONGS(blocks), sizeof(long),
					   GFP_KERNEL);
	u32 blk = 1U << e->info.block_shift, v = 0;
	u8 *pat = kunit_kzalloc(test, 256, GFP_KERNEL);
	int ret;

	KUNIT_ASSERT_TRUE(test, d && pop && pat);
	KUNIT_ASSERT_EQ(test, SZ_64K, blk);
	/* Tracking off: nothing dirty, but what is populated is known. */
	KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_vram_dirty(e->vf, d, pop));
	KUNIT_EXPECT_EQ(test, bitmap_weight(d, blocks), 0U);
	KUNIT_EXPECT_FALSE(test, simgpu_pf_vf_state(e->vf) & SIMGPU_PF_VF_STATE_TRACKING);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_track(e->vf, true));
	KUNIT_EXPECT_TRUE(test, simgpu_pf_vf_state(e->vf) & SIMGPU_PF_VF_STATE_TRACKING);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_dirty(e->vf, d, pop));
	KUNIT_EXPECT_EQ(test, bitmap_weight(d, blocks), (unsigned int)blocks);
	KUNIT_EXPECT_EQ(test, bitmap_weight(pop, blocks), 0U);	/* scrubbed */
	bitmap_zero(d, blocks);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_dirty(e->vf, d, NULL));
	KUNIT_EXPECT_EQ(test, bitmap_weight(d, blocks), 0U);

	memset(pat, 0x3c, 256);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_write(e->vf, 3 * blk + 100, pat, 256));
	writel(0xc0ffee, e->vram + 7 * blk + 8);	/* the CPU, through the aperture */
	wmb();
	submit(e, SIMGPU_OP_FILL, T_VA_VRAM + 9 * blk, 4096, 0x99, 0);	/* the VF */
	KUNIT_ASSERT_EQ(test, 0, wait_idle(e));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_dirty(e->vf, d, pop));
	KUNIT_EXPECT_EQ(test, bitmap_weight(d, blocks), 3U);
	KUNIT_EXPECT_TRUE(test, test_bit(3, d) && test_bit(7, d) && test_bit(9, d));
	KUNIT_EXPECT_EQ(test, bitmap_weight(pop, blocks), 3U);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read(e->vf, 7 * blk + 8, &v, 4));
	KUNIT_EXPECT_EQ(test, v, 0xc0ffeeU);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read(e->vf, 9 * blk, &v, 4));
	KUNIT_EXPECT_EQ(test, v, 0x99U);
	/* Outside VRAM: refused. */
	ret = simgpu_pf_vf_vram_read(e->vf, e->info.vram_size - 2, &v, 4);
	KUNIT_EXPECT_EQ(test, -EINVAL, ret);
	/* A scrub: zeroes, nothing populated. */
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_scrub(e->vf));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read(e->vf, 7 * blk + 8, &v, 4));
	KUNIT_EXPECT_EQ(test, v, 0U);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_track(e->vf, true));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_dirty(e->vf, d, pop));
	KUNIT_EXPECT_EQ(test, bitmap_weight(pop, blocks), 0U);
}

/*
 * A device that keeps the blocks to send: a peek leaves them, a block read
 * with take or a zero run leaves the set, a write after the take puts its
 * block back, and the device's count follows every step.
 */
static void pf_vram_count(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	u64 blocks = e->info.vram_size >> e->info.block_shift, dirty, written, taken;
	unsigned long *d = kunit_kcalloc(test, BITS_TO_LONGS(blocks), sizeof(long), GFP_KERNEL);
	unsigned long *pop = kunit_kcalloc(test, BITS_TO_LONGS(blocks), sizeof(long),
					   GFP_KERNEL);
	u32 blk = 1U << e->info.block_shift;
	u8 *buf = kunit_kzalloc(test, blk, GFP_KERNEL);

	KUNIT_ASSERT_TRUE(test, d && pop && buf);
	if (!(e->info.caps & SIMGPU_PF_CAP_VRAM_COUNT)) {
		KUNIT_EXPECT_EQ(test, -EOPNOTSUPP,
				simgpu_pf_vf_vram_count(e->vf, &dirty, &written));
		kunit_skip(test, "the device does not keep VRAM counts");
	}
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_scrub(e->vf));	/* nothing written yet */
	vfenv_setup(e);					/* (the scrub reset the VF) */
	writel(0xc0ffee, e->vram + 5 * blk + 8);	/* the CPU, through the aperture */
	wmb();
	/* Tracking off: every block, the written one holds data. */
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_count(e->vf, &dirty, &written));
	KUNIT_EXPECT_EQ(test, dirty, blocks);
	KUNIT_EXPECT_EQ(test, written, 1ULL);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_track(e->vf, true));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_peek(e->vf, d, pop));
	KUNIT_EXPECT_EQ(test, bitmap_weight(d, blocks), (unsigned int)blocks);
	KUNIT_EXPECT_TRUE(test, test_bit(5, pop));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_count(e->vf, &dirty, &written));
	KUNIT_EXPECT_EQ(test, dirty, blocks);		/* the peek took nothing */

	/* Blocks 0..4 as a zero run (5 holds data and ends it), 5 read. */
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_take_zero(e->vf, 0, 8, &taken));
	KUNIT_EXPECT_EQ(test, taken, 5ULL);
	KUNIT_EXPECT_EQ(test, -EINVAL, simgpu_pf_vf_vram_read_take(e->vf, 5 * blk + 8, buf, blk));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read_take(e->vf, 5 * blk, buf, blk));
	KUNIT_EXPECT_EQ(test, *(u32 *)(buf + 8), 0xc0ffeeU);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_count(e->vf, &dirty, &written));
	KUNIT_EXPECT_EQ(test, dirty, blocks - 6);
	KUNIT_EXPECT_EQ(test, written, 0ULL);
	/* The VF writes block 2 after it was taken as zeroes: dirty again. */
	submit(e, SIMGPU_OP_FILL, T_VA_VRAM + 2 * blk, 4096, 0x77, 0);
	KUNIT_ASSERT_EQ(test, 0, wait_idle(e));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_count(e->vf, &dirty, &written));
	KUNIT_EXPECT_EQ(test, dirty, blocks - 5);
	KUNIT_EXPECT_EQ(test, written, 1ULL);
	/* A zero run from a written block takes nothing. */
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_take_zero(e->vf, 2, 1, &taken));
	KUNIT_EXPECT_EQ(test, taken, 0ULL);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_peek(e->vf, d, pop));
	KUNIT_EXPECT_TRUE(test, test_bit(2, d) && !test_bit(3, d) && !test_bit(5, d));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_scrub(e->vf));
}

KUNIT_DEFINE_ACTION_WRAPPER(vfree_action, vfree, const void *);

/*
 * VRAM moves to and from kmalloc and vmalloc memory alike, at unaligned
 * offsets and in several steps when the transfer is larger than the VF's
 * DMA buffer, and lands where the aperture shows it.
 */
static void pf_vram_xfer(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	u32 blk = 1U << e->info.block_shift, len = 5 * blk + 100, i;
	u64 off = 7 * (u64)blk + 12;
	u8 *k = kunit_kmalloc(test, len + 8, GFP_KERNEL);
	u8 *v = vmalloc(len);

	KUNIT_ASSERT_NOT_NULL(test, v);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, vfree_action, v));
	KUNIT_ASSERT_NOT_NULL(test, k);
	KUNIT_ASSERT_LE(test, off + len, (u64)SZ_2M);	/* inside the aperture */
	/* kmalloc out, vmalloc back. */
	get_random_bytes(k + 8, len);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_write(e->vf, off, k + 8, len));
	memset(v, 0, len);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read(e->vf, off, v, len));
	KUNIT_EXPECT_EQ(test, 0, memcmp(k + 8, v, len));
	for (i = 0; i < len - 3; i += blk - 4)
		KUNIT_EXPECT_EQ(test, readl(e->vram + off + i), get_unaligned((u32 *)(k + 8 + i)));
	/* vmalloc out, kmalloc back. */
	get_random_bytes(v, len);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_write(e->vf, off, v, len));
	memset(k, 0, len + 8);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read(e->vf, off, k + 8, len));
	KUNIT_EXPECT_EQ(test, 0, memcmp(k + 8, v, len));
	KUNIT_EXPECT_EQ(test, 0, get_unaligned((u64 *)k));	/* nothing before */
	/* Zeroes, without a buffer; outside VRAM refused either way. */
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_write(e->vf, off, NULL, len));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read(e->vf, off, k + 8, len));
	KUNIT_EXPECT_NULL(test, memchr_inv(k + 8, 0, len));
	KUNIT_EXPECT_EQ(test, -EINVAL,
			simgpu_pf_vf_vram_read(e->vf, e->info.vram_size - blk, k, len));
	KUNIT_EXPECT_EQ(test, -EINVAL,
			simgpu_pf_vf_vram_write(e->vf, e->info.vram_size - blk, v, len));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_scrub(e->vf));
}

/* The DMA log holds exactly the pages the VF wrote, inside the range. */
static void pf_dma_log(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	struct simgpu_pf_iova_range r = { e->mem_dma + T_BUF, 32 * SZ_4K };
	unsigned long *bm = kunit_kzalloc(test, SZ_4K, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, bm);
	KUNIT_EXPECT_EQ(test, -EINVAL, simgpu_pf_vf_dma_log_report(e->vf, r.iova, r.length, bm));
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_dma_log_start(e->vf, &r, 1, SZ_4K));
	KUNIT_EXPECT_EQ(test, -EINVAL, simgpu_pf_vf_dma_log_start(e->vf, &r, 1, SZ_4K));
	submit(e, SIMGPU_OP_FILL, T_VA_SYS + T_BUF + 5 * SZ_4K + 64, 8, 1, 0);
	submit(e, SIMGPU_OP_FILL, T_VA_SYS + T_BUF + 6 * SZ_4K - 4, 8, 1, 0);	/* 5 and 6 */
	submit(e, SIMGPU_OP_FILL, T_VA_SYS + T_BUF + 40 * SZ_4K, 8, 1, 0);	/* outside */
	KUNIT_ASSERT_EQ(test, 0, wait_idle(e));
	/* Half the range first: only its page is reported, and cleared. */
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_dma_log_report(e->vf, r.iova + 6 * SZ_4K,
							     SZ_4K, bm));
	KUNIT_EXPECT_EQ(test, bm[0] & 1, 1UL);
	bitmap_zero(bm, 32);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_dma_log_report(e->vf, r.iova, r.length, bm));
	KUNIT_EXPECT_EQ(test, bitmap_weight(bm, 32), 1U);
	KUNIT_EXPECT_TRUE(test, test_bit(5, bm));
	bitmap_zero(bm, 32);
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_dma_log_report(e->vf, r.iova, r.length, bm));
	KUNIT_EXPECT_EQ(test, bitmap_weight(bm, 32), 0U);
	KUNIT_EXPECT_EQ(test, -EINVAL, simgpu_pf_vf_dma_log_report(e->vf, r.iova + 1, SZ_4K, bm));
	KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_dma_log_stop(e->vf));
}

/* A function-level reset resets the VF and says so; its VRAM stays. */
static void pf_flr(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	u32 before = simgpu_pf_vf_resets(e->vf), v = 0x77;

	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_write(e->vf, 0, &v, 4));
	KUNIT_EXPECT_TRUE(test, rd(e, SIMGPU_REG_CONTROL) & SIMGPU_CTRL_ENABLE);
	pci_save_state(e->pdev);
	KUNIT_ASSERT_EQ(test, 0, pcie_flr(e->pdev));
	KUNIT_EXPECT_EQ(test, simgpu_pf_vf_resets(e->vf), before + 1);
	/* The FLR cleared the command register: reads would be nothing's. */
	pci_restore_state(e->pdev);
	KUNIT_EXPECT_EQ(test, rd(e, SIMGPU_REG_ID), SIMGPU_ID_MAGIC);
	KUNIT_EXPECT_EQ(test, rd(e, SIMGPU_REG_CONTROL), 0U);
	KUNIT_EXPECT_EQ(test, rd(e, SIMGPU_REG_PT_ROOT_LO), 0U);
	v = 0;
	KUNIT_ASSERT_EQ(test, 0, simgpu_pf_vf_vram_read(e->vf, 0, &v, 4));
	KUNIT_EXPECT_EQ(test, v, 0x77U);
}

/* A PAUSE the PF runs on a worker, while the test resets the VF. */
struct pause_work {
	struct work_struct work;
	struct simgpu_pf_vf *vf;
	int ret;
};

KUNIT_DEFINE_ACTION_WRAPPER(destroy_wq_action, destroy_workqueue, struct workqueue_struct *);

static void pause_work_fn(struct work_struct *work)
{
	struct pause_work *p = container_of(work, struct pause_work, work);

	p->ret = simgpu_pf_vf_pause(p->vf, 1000);
}

/* Wait, at most T_TMO_MS, for @cond. */
#define T_WAIT(cond) ({							\
	unsigned long __end = jiffies + msecs_to_jiffies(T_TMO_MS);	\
	bool __ok;							\
									\
	while (!(__ok = (cond)) && time_before(jiffies, __end))		\
		usleep_range(500, 1000);				\
	__ok;								\
})

/*
 * A pause that cannot drain (preemption off, a long kernel) is in flight
 * when the VF is reset.  Reset as is, the device ends the command
 * (-EAGAIN); between flr_prepare and flr_done (the provider's reset hooks),
 * the reset waits for the command, which ends as it would have without
 * one (-EBUSY).  Either way the device counted the reset.
 */
static void pf_flr_mid_command(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	struct pause_work *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	struct workqueue_struct *wq;
	unsigned int round;
	u64 issued, s1;
	u32 before;

	KUNIT_ASSERT_NOT_NULL(test, p);
	p->vf = e->vf;
	INIT_WORK(&p->work, pause_work_fn);
	/* Destroyed (drained) before @p is freed, whatever fails. */
	wq = alloc_workqueue("simgpu_pf_kunit", WQ_UNBOUND, 0);
	KUNIT_ASSERT_NOT_NULL(test, wq);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, destroy_wq_action, wq));
	for (round = 0; round < 2; round++) {
		vfenv_setup(e);
		simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_PREEMPT, 0);
		simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US, 10000);
		s1 = kernel_steps(e);
		submit(e, SIMGPU_OP_KERNEL, T_VA_SYS + T_BUF, 64, 1000, 1);
		KUNIT_ASSERT_TRUE_MSG(test, T_WAIT(kernel_steps(e) >= s1 + 2),
				      "round %u: the kernel does not run", round);
		/* Before the PAUSE: a service waits for the command in flight. */
		before = simgpu_pf_vf_resets(e->vf);
		pci_save_state(e->pdev);
		issued = READ_ONCE(e->vf->mailbox);
		p->ret = 1;
		queue_work(wq, &p->work);
		KUNIT_ASSERT_TRUE_MSG(test, T_WAIT(READ_ONCE(e->vf->mailbox) != issued),
				      "round %u: the PAUSE is not issued", round);
		if (round) {
			simgpu_pf_vf_flr_prepare(e->vf);
			KUNIT_EXPECT_EQ(test, 0, pcie_flr(e->pdev));
			KUNIT_EXPECT_EQ(test, 0, simgpu_pf_vf_flr_done(e->vf));
		} else {
			KUNIT_EXPECT_EQ(test, 0, pcie_flr(e->pdev));
		}
		pci_restore_state(e->pdev);
		flush_work(&p->work);
		KUNIT_EXPECT_EQ(test, p->ret, round ? -EBUSY : -EAGAIN);
		KUNIT_EXPECT_EQ(test, simgpu_pf_vf_resets(e->vf), before + 1);
		KUNIT_EXPECT_EQ(test, rd(e, SIMGPU_REG_CONTROL), 0U);	/* reset */
		simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_KERNEL_STEP_US, 0);
		simgpu_pf_vf_set_knob(e->vf, SIMGPU_PF_KNOB_PREEMPT, 1);
	}
}

/* Only one claimer; the PF refuses to disable SR-IOV meanwhile. */
static void pf_claims(struct kunit *test)
{
	struct vfenv *e = vfenv_new(test);
	struct pci_dev *pf = pci_physfn(e->pdev);
	struct pci_driver *drv = to_pci_driver(pf->dev.driver);

	KUNIT_EXPECT_EQ(test, PTR_ERR(simgpu_pf_vf_get(e->pdev, NULL, NULL)), -EBUSY);
	KUNIT_EXPECT_EQ(test, PTR_ERR(simgpu_pf_vf_get(pf, NULL, NULL)), -ENODEV);
	KUNIT_ASSERT_NOT_NULL(test, drv->sriov_configure);
	KUNIT_EXPECT_EQ(test, -EBUSY, drv->sriov_configure(pf, 0));
	KUNIT_EXPECT_EQ(test, pci_num_vf(pf) > 0, true);
}

/*
 * VRAM_DIRTY's two bitmaps must fit the VF's 256 KiB DMA buffer: up to
 * 64 GiB of VRAM at 64 KiB blocks, and no further (a larger VF's dirty
 * bits would overrun it).  No device here has that much VRAM: the bound
 * is checked on its own.
 */
static void pf_bitmap_limit(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, simgpu_pf_vram_bitmap_bytes(SZ_64M, 16), 128ULL);
	KUNIT_EXPECT_EQ(test, simgpu_pf_vram_bitmap_bytes(SZ_64M + SZ_4K, 16), 136ULL);
	KUNIT_EXPECT_EQ(test, simgpu_pf_vram_bitmap_bytes(64ULL << 30, 16), (u64)SZ_128K);
	KUNIT_EXPECT_EQ(test, simgpu_pf_vram_bitmap_bytes((64ULL << 30) + SZ_64K, 16), 0ULL);
	KUNIT_EXPECT_EQ(test, simgpu_pf_vram_bitmap_bytes(1ULL << 40, 16), 0ULL);
	KUNIT_EXPECT_EQ(test, simgpu_pf_vram_bitmap_bytes(1ULL << 40, 20), (u64)SZ_128K);
	KUNIT_EXPECT_EQ(test, simgpu_pf_vram_bitmap_bytes(0, 16), 0ULL);
}

static struct kunit_case simgpu_pf_cases[] = {
	KUNIT_CASE(pf_bitmap_limit),
	KUNIT_CASE(pf_pause_keeps_progress),
	KUNIT_CASE(pf_pause_refused),
	KUNIT_CASE(pf_invalidate),
	KUNIT_CASE(pf_state_round_trip),
	KUNIT_CASE(pf_vram_dirty),
	KUNIT_CASE(pf_vram_count),
	KUNIT_CASE(pf_vram_xfer),
	KUNIT_CASE(pf_dma_log),
	KUNIT_CASE(pf_flr),
	KUNIT_CASE_SLOW(pf_flr_mid_command),
	KUNIT_CASE(pf_claims),
	{}
};

static struct kunit_suite simgpu_pf_suite = {
	.name = "simgpu_pf",
	.test_cases = simgpu_pf_cases,
};

kunit_test_suites(&simgpu_pf_suite);

GPUMIG_IMPORT_KUNIT_NS();
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suite simgpu_pf: the PF's services on simgpu-pci hardware");
