// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suites for simgpu's device model, cut loose from VFIO: a fake
 * environment stands in for guest memory (an array at FAKE_IOVA) and the
 * interrupt line (a counter), and the tests step the command processor
 * themselves with simgpu_core_run() instead of running its thread.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>

#include <gpumig/compat.h>

#include "../drivers/gpu/simgpu/simgpu_host.h"

#define FAKE_IOVA	0x100000ULL
#define FAKE_SIZE	(2 << 20)
#define T_VRAM		(4 << 20)
#define VA_BUF		0x10000000ULL
#define VA_VRAM		0x40000000ULL

struct fake_env {
	u8 *mem;
	u64 next;		/* bump allocator, IOVA */
	u64 root;
	unsigned int irqs;
	unsigned int dma_faults;
	unsigned int kicks;
	unsigned int guest_resets;
	unsigned int demands;
	u64 last_demand;
	struct simgpu_core core;
	struct simgpu_vram vram;
};

static int fake_dma_rw(void *ctx, u64 iova, void *buf, size_t len, bool write)
{
	struct fake_env *e = ctx;

	if (iova < FAKE_IOVA || iova + len > FAKE_IOVA + FAKE_SIZE || iova + len < iova) {
		e->dma_faults++;
		return -EFAULT;
	}
	if (write)
		memcpy(e->mem + iova - FAKE_IOVA, buf, len);
	else
		memcpy(buf, e->mem + iova - FAKE_IOVA, len);
	return 0;
}

static int fake_vram_rw(void *ctx, u64 off, void *buf, size_t len, bool write)
{
	struct fake_env *e = ctx;

	return simgpu_vram_rw(&e->vram, off, buf, len, write);
}

static void fake_raise_irq(void *ctx)
{
	struct fake_env *e = ctx;

	e->irqs++;
}

/* The tests run the processor themselves: a kick is only counted. */
static void fake_kick(void *ctx)
{
	struct fake_env *e = ctx;

	e->kicks++;
}

static void fake_stepped(void *ctx)
{
}

static void fake_guest_reset(void *ctx)
{
	struct fake_env *e = ctx;

	e->guest_resets++;
}

static void fake_demand(void *ctx, u64 blk)
{
	struct fake_env *e = ctx;

	e->demands++;
	e->last_demand = blk;
}

static const struct simgpu_env_ops fake_env_ops = {
	.dma_rw = fake_dma_rw,
	.vram_rw = fake_vram_rw,
	.raise_irq = fake_raise_irq,
	.kick = fake_kick,
	.stepped = fake_stepped,
	.guest_reset = fake_guest_reset,
	.demand = fake_demand,
};

static void *fake_ptr(struct fake_env *e, u64 iova)
{
	return e->mem + iova - FAKE_IOVA;
}

static u64 fake_alloc(struct fake_env *e, size_t len)
{
	u64 iova = e->next;

	e->next += ALIGN(len, 4096);
	WARN_ON(e->next > FAKE_IOVA + FAKE_SIZE);
	return iova;
}

static u64 *fake_pte(struct fake_env *e, u64 va)
{
	u64 table = e->root;
	int level;

	for (level = SIMGPU_PT_ROOT_LEVEL; level > 0; level--) {
		u64 *ent = (u64 *)fake_ptr(e, table) + SIMGPU_PT_INDEX(va, level);

		if (!(*ent & SIMGPU_PTE_VALID))
			*ent = fake_alloc(e, 4096) | SIMGPU_PTE_VALID;
		table = *ent & SIMGPU_PTE_ADDR_MASK;
	}
	return (u64 *)fake_ptr(e, table) + SIMGPU_PT_INDEX(va, 0);
}

static void fake_map(struct fake_env *e, u64 va, u64 target, u64 len, u64 flags)
{
	u64 off;

	for (off = 0; off < len; off += 4096)
		*fake_pte(e, va + off) = ((target + off) & SIMGPU_PTE_ADDR_MASK) |
					 flags | SIMGPU_PTE_VALID;
}

static void fake_env_free(void *p)
{
	struct fake_env *e = p;

	mutex_lock(&e->core.lock);
	simgpu_vram_scrub(&e->vram);
	mutex_unlock(&e->core.lock);
	simgpu_core_destroy(&e->core);
	vfree(e->mem);
}

/* What a driver programs after a reset: page tables, rings, enables. */
static void fake_program(struct fake_env *e, u32 queues)
{
	u32 q;

	simgpu_mmio_write(&e->core, SIMGPU_REG_PT_ROOT_LO, lower_32_bits(e->root));
	simgpu_mmio_write(&e->core, SIMGPU_REG_PT_ROOT_HI, upper_32_bits(e->root));
	for (q = 0; q < queues; q++) {
		u64 ring = fake_alloc(e, 16 * sizeof(struct simgpu_cmd));
		u32 base = SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE;

		simgpu_mmio_write(&e->core, base + SIMGPU_QREG_RING_LO, lower_32_bits(ring));
		simgpu_mmio_write(&e->core, base + SIMGPU_QREG_RING_HI, upper_32_bits(ring));
		simgpu_mmio_write(&e->core, base + SIMGPU_QREG_RING_SIZE, 16);
		simgpu_mmio_write(&e->core, base + SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_ENABLE);
	}
	simgpu_mmio_write(&e->core, SIMGPU_REG_INT_MASK, ~0U);
	simgpu_mmio_write(&e->core, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
}

static struct fake_env *fake_env_new(struct kunit *test, u32 queues)
{
	struct fake_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->mem = vzalloc(FAKE_SIZE);
	KUNIT_ASSERT_NOT_NULL(test, e->mem);
	e->next = FAKE_IOVA;
	KUNIT_ASSERT_EQ(test, 0, simgpu_core_init(&e->core, &fake_env_ops, e, queues, T_VRAM));
	simgpu_vram_init(&e->vram, T_VRAM, &e->core.lock);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, fake_env_free, e));
	e->root = fake_alloc(e, 4096);
	fake_program(e, queues);
	return e;
}

static u32 qreg(struct fake_env *e, u32 q, u32 reg)
{
	return simgpu_mmio_read(&e->core, SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + reg);
}

static void submit(struct fake_env *e, u32 q, u32 op, u32 flags, u64 a0, u64 a1,
		   u64 a2, u64 a3)
{
	struct simgpu_queue *sq = &e->core.q[q];
	struct simgpu_cmd *c = fake_ptr(e, sq->ring) + (sq->tail & (sq->size - 1)) * sizeof(*c);

	memset(c, 0, sizeof(*c));
	c->opcode = cpu_to_le32(op);
	c->flags = cpu_to_le32(flags);
	c->args[0] = cpu_to_le64(a0);
	c->args[1] = cpu_to_le64(a1);
	c->args[2] = cpu_to_le64(a2);
	c->args[3] = cpu_to_le64(a3);
	simgpu_mmio_write(&e->core, SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + SIMGPU_QREG_TAIL,
			  sq->tail + 1);
}

static void run_all(struct fake_env *e)
{
	int i;

	for (i = 0; i < 100000 && simgpu_core_run(&e->core, 64); i++)
		;
}

/* ---- VRAM ------------------------------------------------------------- */

static void vram_sparse_and_scrub(struct kunit *test)
{
	struct simgpu_vram v;
	u8 buf[64], zero[64] = { 0 };
	struct mutex lock;	/* stands for the core's */

	mutex_init(&lock);
	simgpu_vram_init(&v, 1 << 20, &lock);
	mutex_lock(&lock);
	memset(buf, 0x77, sizeof(buf));
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 8192, buf, sizeof(buf), false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, zero, sizeof(buf)));
	KUNIT_EXPECT_EQ(test, v.present, 0UL);	/* reads do not back pages */

	memset(buf, 0x5a, sizeof(buf));
	/* Across a page boundary: two pages backed. */
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 4096 - 32, buf, sizeof(buf), true));
	KUNIT_EXPECT_EQ(test, v.present, 2UL);
	memset(buf, 0, sizeof(buf));
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 4096 - 32, buf, sizeof(buf), false));
	KUNIT_EXPECT_EQ(test, buf[0], 0x5a);
	KUNIT_EXPECT_EQ(test, buf[63], 0x5a);

	KUNIT_EXPECT_EQ(test, -ERANGE, simgpu_vram_rw(&v, (1 << 20) - 8, buf, 16, true));
	KUNIT_EXPECT_EQ(test, -ERANGE, simgpu_vram_rw(&v, U64_MAX - 4, buf, 16, false));
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, (1 << 20) - 16, buf, 16, true));

	simgpu_vram_scrub(&v);
	KUNIT_EXPECT_EQ(test, v.present, 0UL);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 4096 - 32, buf, sizeof(buf), false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, zero, sizeof(buf)));
	simgpu_vram_scrub(&v);
	mutex_unlock(&lock);
	mutex_destroy(&lock);
}

/* simgpu_vram_write_iter() from @len bytes of @src, asked for @want. */
static ssize_t vram_put(struct simgpu_vram *v, u64 off, const u8 *src, size_t len,
			size_t want, u32 *crc)
{
	struct kvec kv = { .iov_base = (void *)src, .iov_len = len };
	struct iov_iter it;

	iov_iter_kvec(&it, ITER_SOURCE, &kv, 1, len);
	*crc = ~0U;
	return simgpu_vram_write_iter(v, off, &it, want, crc);
}

/*
 * A VRAM chunk's data straight from the stream: the CRC covers what VRAM
 * holds, a copy that ends short (an iterator that runs out stands for a
 * fault) leaves a page it backed zeroed beyond it, never old memory, and
 * an existing page's bytes beyond it as they were.
 */
static void vram_write_iter_short(struct kunit *test)
{
	u8 *src = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	u8 *buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	struct simgpu_vram v;
	struct mutex lock;	/* stands for the core's */
	unsigned int i;
	u32 crc;

	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < PAGE_SIZE; i++)
		src[i] = i * 7 + 1;
	mutex_init(&lock);
	simgpu_vram_init(&v, 1 << 20, &lock);
	mutex_lock(&lock);

	/* Whole, across a page boundary. */
	KUNIT_EXPECT_EQ(test, 64, vram_put(&v, PAGE_SIZE - 32, src, 64, 64, &crc));
	KUNIT_EXPECT_EQ(test, crc, crc32_le(~0U, src, 64));
	KUNIT_EXPECT_EQ(test, v.present, 2UL);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, PAGE_SIZE - 32, buf, 64, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, src, 64));

	/* Short into a page it backs: zeroes beyond, CRC of what came. */
	KUNIT_EXPECT_EQ(test, 100, vram_put(&v, 4 * PAGE_SIZE, src, 100, PAGE_SIZE, &crc));
	KUNIT_EXPECT_EQ(test, crc, crc32_le(~0U, src, 100));
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 4 * PAGE_SIZE, buf, PAGE_SIZE, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, src, 100));
	KUNIT_EXPECT_NULL(test, memchr_inv(buf + 100, 0, PAGE_SIZE - 100));

	/* Short into a page that holds data: beyond, the data stays. */
	memset(buf, 0x5a, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 8 * PAGE_SIZE, buf, PAGE_SIZE, true));
	KUNIT_EXPECT_EQ(test, 10, vram_put(&v, 8 * PAGE_SIZE, src, 10, PAGE_SIZE, &crc));
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 8 * PAGE_SIZE, buf, PAGE_SIZE, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, src, 10));
	KUNIT_EXPECT_NULL(test, memchr_inv(buf + 10, 0x5a, PAGE_SIZE - 10));

	/* Nothing at all: 0, and the CRC untouched. */
	KUNIT_EXPECT_EQ(test, 0, vram_put(&v, 12 * PAGE_SIZE, src, 0, PAGE_SIZE, &crc));
	KUNIT_EXPECT_EQ(test, crc, ~0U);

	/* Outside VRAM. */
	KUNIT_EXPECT_EQ(test, -ERANGE, vram_put(&v, (1 << 20) - 8, src, 16, 16, &crc));
	KUNIT_EXPECT_EQ(test, -ERANGE, vram_put(&v, U64_MAX - 4, src, 16, 16, &crc));
	simgpu_vram_scrub(&v);
	mutex_unlock(&lock);
	mutex_destroy(&lock);
}

/*
 * A write that covers a block with no page yet backs the block in one go
 * (a destination's VRAM on restore): every page of it, its data exact, the
 * block counted backed once; a copy that ends short inside it leaves the
 * rest of the block zero, never what the pages held before they were
 * allocated (primed here with pages freed dirty, which the allocator
 * hands out again first); a block with a page already, or a write not
 * aligned to a block, goes page by page as before.
 */
static void vram_write_iter_block(struct kunit *test)
{
	const size_t blk = 1 << 16, pages = blk / PAGE_SIZE;
	u8 *src = kunit_kmalloc(test, blk, GFP_KERNEL);
	u8 *buf = kunit_kmalloc(test, blk, GFP_KERNEL);
	struct page *stale[16];
	struct simgpu_vram v;
	struct mutex lock;	/* stands for the core's */
	unsigned long backed, zero;
	unsigned int i;
	u32 crc;

	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_LE(test, pages, ARRAY_SIZE(stale));
	for (i = 0; i < blk; i++)
		src[i] = i * 13 + 5;
	mutex_init(&lock);
	simgpu_vram_init(&v, 1 << 20, &lock);
	mutex_lock(&lock);

	/* Block 0 whole. */
	KUNIT_EXPECT_EQ(test, (ssize_t)blk, vram_put(&v, 0, src, blk, blk, &crc));
	KUNIT_EXPECT_EQ(test, crc, crc32_le(~0U, src, blk));
	KUNIT_EXPECT_EQ(test, v.present, pages);
	KUNIT_EXPECT_EQ(test, v.nr_backed, 1UL);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 0, buf, blk, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, src, blk));

	/* Block 1, the copy ending short at 5000 bytes, over stale pages. */
	for (i = 0; i < pages; i++) {
		stale[i] = alloc_page(GFP_KERNEL);
		if (stale[i])
			memset_page(stale[i], 0, 0xa5, PAGE_SIZE);
	}
	for (i = 0; i < pages; i++)
		if (stale[i])
			__free_page(stale[i]);
	KUNIT_EXPECT_EQ(test, 5000, vram_put(&v, blk, src, 5000, blk, &crc));
	KUNIT_EXPECT_EQ(test, crc, crc32_le(~0U, src, 5000));
	KUNIT_EXPECT_EQ(test, v.present, 2 * pages);
	KUNIT_EXPECT_EQ(test, v.nr_backed, 2UL);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, blk, buf, blk, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, src, 5000));
	KUNIT_EXPECT_NULL(test, memchr_inv(buf + 5000, 0, blk - 5000));

	/* Block 2 holds a page already: page by page, data exact. */
	KUNIT_EXPECT_EQ(test, 10, vram_put(&v, 2 * blk + 3 * PAGE_SIZE, src, 10, 10, &crc));
	KUNIT_EXPECT_EQ(test, (ssize_t)blk, vram_put(&v, 2 * blk, src, blk, blk, &crc));
	KUNIT_EXPECT_EQ(test, v.present, 3 * pages);
	KUNIT_EXPECT_EQ(test, v.nr_backed, 3UL);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 2 * blk, buf, blk, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, src, blk));

	/* Not block aligned: page by page across blocks 4 and 5. */
	KUNIT_EXPECT_EQ(test, (ssize_t)blk, vram_put(&v, 4 * blk + 100, src, blk, blk, &crc));
	KUNIT_EXPECT_EQ(test, crc, crc32_le(~0U, src, blk));
	KUNIT_EXPECT_EQ(test, v.present, 4 * pages + 1);
	KUNIT_EXPECT_EQ(test, v.nr_backed, 5UL);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 4 * blk + 100, buf, blk, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, src, blk));

	/* The counts agree with a walk of what is backed. */
	for (i = 0, backed = 0, zero = 0; i < 16; i++) {
		if (simgpu_vram_block_zero(&v, i))
			zero++;
		else
			backed++;
	}
	KUNIT_EXPECT_EQ(test, backed, v.nr_backed);
	KUNIT_EXPECT_EQ(test, zero, 11UL);
	simgpu_vram_scrub(&v);
	KUNIT_EXPECT_EQ(test, v.present, 0UL);
	KUNIT_EXPECT_EQ(test, v.nr_backed, 0UL);
	mutex_unlock(&lock);
	mutex_destroy(&lock);
}

/*
 * A zero range applies exactly (a stream's ZERO chunk need not be page
 * aligned): bytes outside it keep their data, whole pages inside it are
 * dropped, every block it touches is dirty.
 */
static void vram_zero_exact(struct kunit *test)
{
	const size_t size = 4 * PAGE_SIZE;
	static const struct { u64 off, len; } r[] = {
		{ 100, PAGE_SIZE + 900 },	/* sub-page start and end */
		{ 2 * PAGE_SIZE, PAGE_SIZE },	/* one whole page */
		{ 4 * PAGE_SIZE - 1, 1 },	/* the last byte */
	};
	u8 *buf = kunit_kzalloc(test, size, GFP_KERNEL);
	u8 *want = kunit_kzalloc(test, size, GFP_KERNEL);
	const u64 blk = 1ULL << SIMGPU_VRAM_BLOCK_SHIFT;
	struct simgpu_vram v;
	struct mutex lock;	/* stands for the core's */
	unsigned int i;
	bool z;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, want);
	mutex_init(&lock);
	simgpu_vram_init(&v, 4 * blk, &lock);
	mutex_lock(&lock);
	memset(want, 0xa5, size);
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 0, want, size, true));
	KUNIT_EXPECT_EQ(test, v.present, 4UL);
	for (i = 0; i < ARRAY_SIZE(r); i++) {
		simgpu_vram_zero(&v, r[i].off, r[i].len);
		memset(want + r[i].off, 0, r[i].len);
	}
	KUNIT_EXPECT_EQ(test, 0, simgpu_vram_rw(&v, 0, buf, size, false));
	KUNIT_EXPECT_EQ(test, 0, memcmp(buf, want, size));
	KUNIT_EXPECT_EQ(test, v.present, 3UL);	/* the whole page went */

	/* Two bytes across a block boundary dirty both blocks. */
	KUNIT_ASSERT_EQ(test, 0, simgpu_vram_track(&v, true));
	while (simgpu_vram_next_dirty(&v, 0, &z) >= 0)
		;
	simgpu_vram_zero(&v, 2 * blk - 1, 2);
	KUNIT_EXPECT_FALSE(test, test_bit(0, v.dirty));
	KUNIT_EXPECT_TRUE(test, test_bit(1, v.dirty));
	KUNIT_EXPECT_TRUE(test, test_bit(2, v.dirty));
	KUNIT_EXPECT_FALSE(test, test_bit(3, v.dirty));
	simgpu_vram_track(&v, false);
	simgpu_vram_scrub(&v);
	mutex_unlock(&lock);
	mutex_destroy(&lock);
}

/* The O(1) dirty counts against a walk of every block. */
static void vram_counts_match_walk(struct kunit *test, struct simgpu_vram *v,
				   const char *after)
{
	unsigned long b, backed = 0, zero = 0, got_backed, got_zero;

	for (b = 0; b < v->nr_blocks; b++) {
		if (v->dirty && !test_bit(b, v->dirty))
			continue;
		if (simgpu_vram_block_zero(v, b))
			zero++;
		else
			backed++;
	}
	simgpu_vram_dirty_count(v, &got_backed, &got_zero);
	KUNIT_EXPECT_EQ_MSG(test, got_backed, backed, "after %s", after);
	KUNIT_EXPECT_EQ_MSG(test, got_zero, zero, "after %s", after);
}

/*
 * A run of dirty zero blocks taken at once is the run a walk block by
 * block finds: it ends at the first clean or backed block (left as it
 * was) or after @max blocks, and every block of it is clean after.
 */
static void vram_zero_run_matches_walk(struct kunit *test, struct simgpu_vram *v,
				       unsigned long from, unsigned long max)
{
	unsigned long b, want = 0, got;
	bool end_dirty = false;

	for (b = from; b < v->nr_blocks && want < max; b++, want++)
		if (!test_bit(b, v->dirty) || !simgpu_vram_block_zero(v, b))
			break;
	if (b < v->nr_blocks)
		end_dirty = test_bit(b, v->dirty);
	got = simgpu_vram_take_zero_run(v, from, max);
	KUNIT_EXPECT_EQ_MSG(test, got, want, "run from block %lu, at most %lu", from, max);
	for (b = from; b < from + want; b++)
		KUNIT_EXPECT_FALSE_MSG(test, test_bit(b, v->dirty), "block %lu of the run", b);
	if (from + want < v->nr_blocks)
		KUNIT_EXPECT_EQ_MSG(test, test_bit(from + want, v->dirty), end_dirty,
				    "block %lu after the run", from + want);
}

/*
 * What migration asks on every PRECOPY_INFO (dirty blocks, data and zero)
 * is kept as counts that change with the blocks: after any mix of writes,
 * zero ranges, blocks and zero runs taken, tracking on and off and scrubs,
 * the counts are what walking every block finds.
 */
static void vram_dirty_counts(struct kunit *test)
{
	const u64 blk = 1ULL << SIMGPU_VRAM_BLOCK_SHIFT, size = 16 * blk;
	u8 *buf = kunit_kzalloc(test, 3 * PAGE_SIZE, GFP_KERNEL);
	struct simgpu_vram v;
	struct mutex lock;	/* stands for the core's */
	u32 seed = 12345;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(buf, 0x3c, 3 * PAGE_SIZE);
	mutex_init(&lock);
	simgpu_vram_init(&v, size, &lock);
	mutex_lock(&lock);
	vram_counts_match_walk(test, &v, "init");
	for (i = 0; i < 3000; i++) {
		u64 off, len;
		bool z;

		seed = seed * 1103515245 + 12345;
		off = (seed >> 8) % size;
		len = min_t(u64, size - off, 1 + (seed >> 3) % (3 * PAGE_SIZE));
		switch ((seed >> 24) % 8) {
		case 0:
		case 1:
		case 2:
			KUNIT_ASSERT_EQ(test, 0, simgpu_vram_rw(&v, off, buf, len, true));
			vram_counts_match_walk(test, &v, "a write");
			break;
		case 3:
			simgpu_vram_zero(&v, off, (seed & 1) ? len : min(size - off, 5 * blk));
			vram_counts_match_walk(test, &v, "a zero range");
			break;
		case 4:
			if (v.dirty)
				simgpu_vram_next_dirty(&v, off / blk, &z);
			vram_counts_match_walk(test, &v, "a block taken");
			break;
		case 5:
			if (v.dirty)
				vram_zero_run_matches_walk(test, &v, off / blk,
							   1 + (seed >> 4) % 8);
			vram_counts_match_walk(test, &v, "a zero run taken");
			break;
		case 6:
			KUNIT_ASSERT_EQ(test, 0, simgpu_vram_track(&v, !v.dirty));
			vram_counts_match_walk(test, &v, "tracking on or off");
			break;
		default:
			if (!(seed & 0xf0))
				simgpu_vram_scrub(&v);
			vram_counts_match_walk(test, &v, "a scrub");
			break;
		}
		if (test->status == KUNIT_FAILURE)
			break;
	}
	simgpu_vram_track(&v, false);
	simgpu_vram_scrub(&v);
	mutex_unlock(&lock);
	mutex_destroy(&lock);
}

/* ---- MMU and IOTLB ------------------------------------------------------ */

static void mmu_walk_and_faults(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	struct simgpu_core *c = &e->core;
	u64 page = fake_alloc(e, 4096), pte;

	fake_map(e, VA_BUF, page, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_BUF + 4096, page, 4096, 0);
	mutex_lock(&c->lock);
	KUNIT_EXPECT_EQ(test, 0U, simgpu_mmu_translate(c, VA_BUF + 5, true, &pte));
	KUNIT_EXPECT_EQ(test, pte & SIMGPU_PTE_ADDR_MASK, page);
	KUNIT_EXPECT_EQ(test, (u32)SIMGPU_ERR_WRITE_FAULT,
			simgpu_mmu_translate(c, VA_BUF + 4096, true, &pte));
	KUNIT_EXPECT_EQ(test, 0U, simgpu_mmu_translate(c, VA_BUF + 4096, false, &pte));
	KUNIT_EXPECT_EQ(test, (u32)SIMGPU_ERR_PAGE_FAULT,
			simgpu_mmu_translate(c, VA_BUF + 8192, false, &pte));
	KUNIT_EXPECT_EQ(test, c->fault_addr, VA_BUF + 8192);
	KUNIT_EXPECT_EQ(test, (u32)SIMGPU_ERR_PAGE_FAULT,
			simgpu_mmu_translate(c, 1ULL << SIMGPU_VA_BITS, false, &pte));
	/* A directory entry pointing outside guest memory. */
	((u64 *)fake_ptr(e, e->root))[5] = 0x7000000000ULL | SIMGPU_PTE_VALID;
	KUNIT_EXPECT_EQ(test, (u32)SIMGPU_ERR_PT_DMA,
			simgpu_mmu_translate(c, 5ULL << 30, false, &pte));
	mutex_unlock(&c->lock);
}

static void mmu_tlb_stale_until_flush(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	struct simgpu_core *c = &e->core;
	u64 a = fake_alloc(e, 4096), b = fake_alloc(e, 4096), pte, va;

	fake_map(e, VA_BUF, a, 4096, 0);
	mutex_lock(&c->lock);
	KUNIT_EXPECT_EQ(test, 0U, simgpu_mmu_translate(c, VA_BUF, false, &pte));
	KUNIT_EXPECT_EQ(test, c->stats.tlb_misses, 1ULL);
	fake_map(e, VA_BUF, b, 4096, 0);
	KUNIT_EXPECT_EQ(test, 0U, simgpu_mmu_translate(c, VA_BUF, false, &pte));
	KUNIT_EXPECT_EQ(test, pte & SIMGPU_PTE_ADDR_MASK, a);	/* cached */
	KUNIT_EXPECT_EQ(test, c->stats.tlb_hits, 1ULL);
	simgpu_mmu_flush(c);
	KUNIT_EXPECT_EQ(test, 0U, simgpu_mmu_translate(c, VA_BUF, false, &pte));
	KUNIT_EXPECT_EQ(test, pte & SIMGPU_PTE_ADDR_MASK, b);
	/* Two VAs in the same direct-mapped slot evict each other. */
	va = VA_BUF + SIMGPU_TLB_ENTRIES * 4096;
	fake_map(e, va, a, 4096, 0);
	KUNIT_EXPECT_EQ(test, 0U, simgpu_mmu_translate(c, va, false, &pte));
	KUNIT_EXPECT_EQ(test, c->stats.tlb_misses, 3ULL);
	mutex_unlock(&c->lock);
}

/* The acknowledgment comes only after the flush; knobs delay or lose it. */
static void mmu_invalidation_ack(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	struct simgpu_core *c = &e->core;
	u64 pte;
	int i;

	fake_map(e, VA_BUF, fake_alloc(e, 4096), 4096, 0);
	mutex_lock(&c->lock);
	simgpu_mmu_translate(c, VA_BUF, false, &pte);
	mutex_unlock(&c->lock);

	simgpu_mmio_write(c, SIMGPU_REG_INVAL_REQ, 5);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_INVAL_ACK), 0U);
	KUNIT_EXPECT_FALSE(test, simgpu_core_idle(c));
	simgpu_core_run(c, 1);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_INVAL_ACK), 5U);
	for (i = 0; i < SIMGPU_TLB_ENTRIES; i++)
		KUNIT_EXPECT_FALSE(test, c->tlb[i].valid);
	KUNIT_EXPECT_TRUE(test, simgpu_mmio_read(c, SIMGPU_REG_INT_STATUS) & SIMGPU_INT_INVAL);
	KUNIT_EXPECT_EQ(test, e->irqs, 1U);

	c->knobs.ack_drop = true;
	simgpu_mmio_write(c, SIMGPU_REG_INVAL_REQ, 6);
	run_all(e);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_INVAL_ACK), 5U);
	KUNIT_EXPECT_EQ(test, c->stats.inval_dropped, 1ULL);
	c->knobs.ack_drop = false;

	c->knobs.ack_delay_ms = 50;
	simgpu_mmio_write(c, SIMGPU_REG_INVAL_REQ, 7);
	simgpu_core_run(c, 1);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_INVAL_ACK), 5U);
	msleep(60);
	simgpu_core_run(c, 1);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_INVAL_ACK), 7U);
}

/* ---- commands ------------------------------------------------------------ */

static void cmd_copy_fill_fence(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 2);
	u64 src = fake_alloc(e, 3 * 4096), dst = fake_alloc(e, 3 * 4096);
	u64 fence = fake_alloc(e, 4096);
	u8 *s = fake_ptr(e, src), *d = fake_ptr(e, dst);
	int i;

	for (i = 0; i < 3 * 4096; i++)
		s[i] = i * 13;
	fake_map(e, VA_BUF, src, 3 * 4096, 0);
	fake_map(e, VA_BUF + 0x100000, dst, 3 * 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_BUF + 0x200000, fence, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);

	submit(e, 0, SIMGPU_OP_COPY, 0, VA_VRAM + 100, VA_BUF + 1, 3 * 4096 - 1, 0);
	submit(e, 0, SIMGPU_OP_COPY, 0, VA_BUF + 0x100000 + 1, VA_VRAM + 100, 3 * 4096 - 1, 0);
	submit(e, 1, SIMGPU_OP_FILL, 0, VA_VRAM + 0x10000, 8192, 0xdeadbeef, 0);
	submit(e, 0, SIMGPU_OP_FENCE, SIMGPU_CMD_F_IRQ, VA_BUF + 0x200000, 0x1122334455ULL, 0, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, 0, memcmp(d + 1, s + 1, 3 * 4096 - 1));
	KUNIT_EXPECT_EQ(test, d[0], 0);
	KUNIT_EXPECT_EQ(test, *(u64 *)fake_ptr(e, fence), 0x1122334455ULL);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_FENCE_LO), 0x22334455U);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 3U);
	KUNIT_EXPECT_TRUE(test, simgpu_mmio_read(&e->core, SIMGPU_REG_INT_STATUS) &
			  SIMGPU_INT_QUEUE(0));
	KUNIT_EXPECT_EQ(test, e->irqs, 1U);
	{
		__le32 w;

		mutex_lock(&e->core.lock);
		KUNIT_EXPECT_EQ(test, 0,
				simgpu_vram_rw(&e->vram, 0x10000 + 8188, &w, 4, false));
		mutex_unlock(&e->core.lock);
		KUNIT_EXPECT_EQ(test, le32_to_cpu(w), 0xdeadbeefU);
	}
	/* INT_STATUS is write-one-to-clear. */
	simgpu_mmio_write(&e->core, SIMGPU_REG_INT_STATUS, SIMGPU_INT_QUEUE(0));
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(&e->core, SIMGPU_REG_INT_STATUS), 0U);
	KUNIT_EXPECT_EQ(test, e->core.stats.cmds, 4ULL);
}

/* A kernel runs one iteration per step, and its result is exact. */
static void cmd_kernel_steps(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	u64 buf = fake_alloc(e, 4096);
	__le32 *w = fake_ptr(e, buf);
	u32 expect[16];
	int i, it;

	for (i = 0; i < 16; i++) {
		w[i] = cpu_to_le32(i * 1000);
		expect[i] = i * 1000;
	}
	for (it = 0; it < 3; it++)
		for (i = 0; i < 16; i++)
			expect[i] = simgpu_kernel_word(expect[i], 0xabc, it);
	fake_map(e, VA_BUF, buf, 4096, SIMGPU_PTE_WRITE);
	submit(e, 0, SIMGPU_OP_KERNEL, 0, VA_BUF, 64, 3, 0xabc);
	simgpu_core_run(&e->core, 1);
	KUNIT_EXPECT_EQ(test, e->core.q[0].cur.progress, 1ULL);
	KUNIT_EXPECT_TRUE(test, qreg(e, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY);
	simgpu_core_run(&e->core, 1);
	simgpu_core_run(&e->core, 1);
	KUNIT_EXPECT_FALSE(test, qreg(e, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY);
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, le32_to_cpu(w[i]), expect[i]);
	KUNIT_EXPECT_EQ(test, simgpu_kernel_word(1, 0, 0), 2654435761U);
}

/* With preemption off, a started kernel keeps the processor. */
static void cmd_preemption_knob(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 2);
	u64 buf = fake_alloc(e, 4096), f = fake_alloc(e, 4096);
	int pass;

	fake_map(e, VA_BUF, buf, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_BUF + 0x100000, f, 4096, SIMGPU_PTE_WRITE);
	for (pass = 0; pass < 2; pass++) {
		e->core.knobs.preempt = !pass;
		*(u64 *)fake_ptr(e, f) = 0;
		submit(e, 0, SIMGPU_OP_KERNEL, 0, VA_BUF, 64, 10, 1);
		simgpu_core_run(&e->core, 1);		/* the kernel starts */
		submit(e, 1, SIMGPU_OP_FENCE, 0, VA_BUF + 0x100000, 9, 0, 0);
		simgpu_core_run(&e->core, 2);
		KUNIT_EXPECT_EQ_MSG(test, *(u64 *)fake_ptr(e, f), pass ? 0ULL : 9ULL,
				    "preempt=%d", !pass);
		run_all(e);
		KUNIT_EXPECT_EQ(test, *(u64 *)fake_ptr(e, f), 9ULL);
	}
}

/*
 * What a host drives for migration.  Preempting, the device stops at
 * once and the kernel keeps its progress; draining, it stops only when
 * the kernel finished; resuming restarts it.
 */
static void core_pause_and_resume(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	struct simgpu_core *c = &e->core;
	u64 buf = fake_alloc(e, 4096);

	fake_map(e, VA_BUF, buf, 4096, SIMGPU_PTE_WRITE);
	submit(e, 0, SIMGPU_OP_KERNEL, 0, VA_BUF, 64, 10, 1);
	simgpu_core_run(c, 3);
	KUNIT_EXPECT_TRUE(test, simgpu_core_pause(c, false));
	KUNIT_EXPECT_TRUE(test, simgpu_core_paused(c));
	KUNIT_EXPECT_EQ(test, c->q[0].cur.progress, 3ULL);
	run_all(e);
	KUNIT_EXPECT_EQ(test, c->q[0].cur.progress, 3ULL);	/* nothing ran */
	simgpu_core_resume(c);
	simgpu_core_run(c, 2);

	/* Draining: not stopped while the kernel runs, stopped once it ended. */
	KUNIT_EXPECT_FALSE(test, simgpu_core_pause(c, true));
	KUNIT_EXPECT_FALSE(test, simgpu_core_paused_racy(c));
	simgpu_core_run(c, 1);
	KUNIT_EXPECT_FALSE(test, simgpu_core_paused(c));
	run_all(e);
	KUNIT_EXPECT_TRUE(test, simgpu_core_paused(c));
	KUNIT_EXPECT_FALSE(test, c->q[0].active);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 1U);
	/* Nothing new starts while stopped. */
	submit(e, 0, SIMGPU_OP_FENCE, 0, VA_BUF, 5, 0, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 1U);
	simgpu_core_resume(c);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 2U);
	KUNIT_EXPECT_GE(test, e->kicks, 3U);
}

/* The throttle's arithmetic: the tenant's share of each 10 ms slice. */
static void core_share_math(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(0, 50), 0ULL);
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(10 * NSEC_PER_MSEC, 0), 10 * NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(10 * NSEC_PER_MSEC, 50), 5 * NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(12 * NSEC_PER_MSEC, 50), 7 * NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(17 * NSEC_PER_MSEC, 50), 10 * NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(25 * NSEC_PER_MSEC, 99), 300 * NSEC_PER_USEC);
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(10 * NSEC_PER_MSEC, 250), 100 * NSEC_PER_USEC);
	KUNIT_EXPECT_EQ(test, simgpu_share_ns(NSEC_PER_SEC, 20), 800 * NSEC_PER_MSEC);
	KUNIT_EXPECT_TRUE(test, simgpu_share_on(0, 50));
	KUNIT_EXPECT_TRUE(test, simgpu_share_on(4999 * NSEC_PER_USEC, 50));
	KUNIT_EXPECT_FALSE(test, simgpu_share_on(5 * NSEC_PER_MSEC, 50));
	KUNIT_EXPECT_FALSE(test, simgpu_share_on(9999 * NSEC_PER_USEC, 50));
	KUNIT_EXPECT_TRUE(test, simgpu_share_on(10 * NSEC_PER_MSEC, 50));
	KUNIT_EXPECT_TRUE(test, simgpu_share_on(9999 * NSEC_PER_USEC, 0));
	KUNIT_EXPECT_FALSE(test, simgpu_share_on(100 * NSEC_PER_USEC, 99));
}

/* Put @c's slices so that now is @into ns into one. */
static void throttle_at(struct simgpu_core *c, u32 pct, u64 into)
{
	simgpu_core_set_throttle(c, pct);
	mutex_lock(&c->lock);
	c->share_from = ktime_sub_ns(ktime_get(), into);
	mutex_unlock(&c->lock);
}

/*
 * A throttled tenant runs in its share of each slice only; a drain runs
 * whatever the throttle; the guest's reset keeps it; the run clock (the
 * background writer's pace) counts the tenant's time only, and does not
 * jump when the throttle changes.  Each "now" below has 4.9 ms to spare.
 */
static void core_throttle(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	struct simgpu_core *c = &e->core;
	u64 buf = fake_alloc(e, 4096), a, b;
	__le64 *fence = fake_ptr(e, buf);

	fake_map(e, VA_BUF, buf, 4096, SIMGPU_PTE_WRITE);
	throttle_at(c, 50, 5100 * NSEC_PER_USEC);	/* the throttled part */
	KUNIT_EXPECT_EQ(test, simgpu_core_throttle(c), 50U);
	KUNIT_EXPECT_TRUE(test, simgpu_core_timed_work(c));
	submit(e, 0, SIMGPU_OP_FENCE, 0, VA_BUF, 7, 0, 0);
	simgpu_core_run(c, 16);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(fence[0]), 0ULL);	/* nothing ran */
	throttle_at(c, 50, 100 * NSEC_PER_USEC);	/* the tenant's part */
	simgpu_core_run(c, 16);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(fence[0]), 7ULL);

	/* A drain is not throttled. */
	submit(e, 0, SIMGPU_OP_KERNEL, 0, VA_BUF + 64, 64, 4, 1);
	simgpu_core_run(c, 1);
	KUNIT_EXPECT_TRUE(test, c->q[0].active);
	throttle_at(c, 99, 5 * NSEC_PER_MSEC);
	KUNIT_EXPECT_FALSE(test, simgpu_core_pause(c, true));
	simgpu_core_run(c, 16);
	KUNIT_EXPECT_TRUE(test, simgpu_core_paused(c));
	simgpu_core_resume(c);

	/* The guest's reset does not end the host's throttle. */
	simgpu_mmio_write(c, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	KUNIT_EXPECT_EQ(test, simgpu_core_throttle(c), 99U);

	/* Run clock: 1 s of wall time at 50 % is 0.5 s of the tenant's. */
	throttle_at(c, 50, NSEC_PER_SEC);
	mutex_lock(&c->lock);
	c->share_base = 0;
	a = simgpu_run_clock(c, ktime_get());
	mutex_unlock(&c->lock);
	KUNIT_EXPECT_GE(test, a, 500 * NSEC_PER_MSEC);
	KUNIT_EXPECT_LT(test, a, 505 * NSEC_PER_MSEC);
	simgpu_core_set_throttle(c, 0);
	mutex_lock(&c->lock);
	b = simgpu_run_clock(c, ktime_get());
	mutex_unlock(&c->lock);
	KUNIT_EXPECT_GE(test, b, a);
	KUNIT_EXPECT_LT(test, b, a + 5 * NSEC_PER_MSEC);
	KUNIT_EXPECT_FALSE(test, simgpu_core_timed_work(c));
	simgpu_core_set_throttle(c, 1000);
	KUNIT_EXPECT_EQ(test, simgpu_core_throttle(c), (u32)SIMGPU_THROTTLE_MAX);
	simgpu_core_set_throttle(c, 0);
}

/*
 * A guest's reset through the control register while the host holds the
 * device paused (migration's STOP, STOP_COPY, RESUMING): registers and
 * work are reset at once, but nothing runs until the host resumes.
 */
static void core_guest_reset_while_paused(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	struct simgpu_core *c = &e->core;
	u64 buf = fake_alloc(e, 4096);
	u64 *fence = fake_ptr(e, buf);

	KUNIT_EXPECT_TRUE(test, simgpu_core_pause(c, false));
	simgpu_mmio_write(c, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	KUNIT_EXPECT_TRUE(test, simgpu_core_paused(c));
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_CONTROL), 0U);
	/* The host hears of it (a migration's REINIT), once per reset. */
	KUNIT_EXPECT_EQ(test, e->guest_resets, 1U);
	simgpu_mmio_write(c, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
	KUNIT_EXPECT_EQ(test, e->guest_resets, 1U);
	simgpu_mmio_write(c, SIMGPU_REG_CONTROL, 0);
	/* The guest sets the device up again and submits: nothing runs. */
	fake_program(e, 1);
	fake_map(e, VA_BUF, buf, 4096, SIMGPU_PTE_WRITE);
	submit(e, 0, SIMGPU_OP_FENCE, 0, VA_BUF, 7, 0, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 0U);
	KUNIT_EXPECT_EQ(test, *fence, 0ULL);
	KUNIT_EXPECT_TRUE(test, simgpu_core_paused(c));
	/* Draining when the reset comes: nothing is in flight after it. */
	simgpu_core_resume(c);
	run_all(e);
	KUNIT_EXPECT_EQ(test, *fence, 7ULL);
	submit(e, 0, SIMGPU_OP_KERNEL, 0, VA_BUF, 64, 10, 1);
	simgpu_core_run(c, 2);
	KUNIT_EXPECT_FALSE(test, simgpu_core_pause(c, true));
	simgpu_mmio_write(c, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	KUNIT_EXPECT_TRUE(test, simgpu_core_paused(c));
	simgpu_core_resume(c);
	KUNIT_EXPECT_FALSE(test, simgpu_core_paused(c));
}

/* A host invalidation is acknowledged by a pass, even paused; or lost. */
static void core_host_invalidation(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	struct simgpu_core *c = &e->core;
	u64 pte;
	u32 seq;

	fake_map(e, VA_BUF, fake_alloc(e, 4096), 4096, 0);
	mutex_lock(&c->lock);
	simgpu_mmu_translate(c, VA_BUF, false, &pte);
	mutex_unlock(&c->lock);
	KUNIT_EXPECT_FALSE(test, simgpu_tlb_empty(c));
	simgpu_core_pause(c, false);
	seq = simgpu_core_host_inval(c);
	KUNIT_EXPECT_FALSE(test, simgpu_core_host_inval_acked_racy(c, seq));
	simgpu_core_run(c, 1);
	KUNIT_EXPECT_TRUE(test, simgpu_core_host_inval_end(c, seq));
	KUNIT_EXPECT_TRUE(test, simgpu_tlb_empty(c));

	c->knobs.ack_drop = true;
	seq = simgpu_core_host_inval(c);
	run_all(e);
	KUNIT_EXPECT_FALSE(test, simgpu_core_host_inval_end(c, seq));
	KUNIT_EXPECT_EQ(test, c->stats.inval_dropped, 1ULL);
	/* Withdrawn: nothing is pending any more. */
	KUNIT_EXPECT_FALSE(test, c->host_inval_pending);
}

/* Ring indices wrap in the ring and across 2^32. */
static void cmd_ring_wraps(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	u64 f = fake_alloc(e, 4096);
	int i;

	fake_map(e, VA_BUF, f, 4096, SIMGPU_PTE_WRITE);
	e->core.q[0].head = 0xfffffff0;
	e->core.q[0].tail = 0xfffffff0;
	for (i = 1; i <= 40; i++) {
		submit(e, 0, SIMGPU_OP_FENCE, 0, VA_BUF + (i % 8) * 8, i, 0, 0);
		if (i % 10 == 0)
			run_all(e);
	}
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 0xfffffff0U + 40);
	KUNIT_EXPECT_EQ(test, *(u64 *)fake_ptr(e, f), 40ULL);
	KUNIT_EXPECT_EQ(test, e->core.q[0].fence, 40ULL);
	KUNIT_EXPECT_EQ(test, e->core.q[0].error, 0U);
}

struct bad_cmd {
	const char *name;
	u32 op, flags;
	u64 a[4];
	u32 err;
};

static const struct bad_cmd bad_cmds[] = {
	{ "unknown opcode", 77, 0, { 0 }, SIMGPU_ERR_BAD_OPCODE },
	{ "fill zero length", SIMGPU_OP_FILL, 0, { VA_BUF, 0, 0 }, SIMGPU_ERR_BAD_ARGS },
	{ "fill over limit", SIMGPU_OP_FILL, 0, { VA_BUF, SIMGPU_MAX_XFER + 4 },
	  SIMGPU_ERR_BAD_ARGS },
	{ "fill unaligned", SIMGPU_OP_FILL, 0, { VA_BUF + 2, 8 }, SIMGPU_ERR_BAD_ARGS },
	{ "fill with flags", SIMGPU_OP_FILL, 1, { VA_BUF, 8 }, SIMGPU_ERR_BAD_ARGS },
	{ "copy zero length", SIMGPU_OP_COPY, 0, { VA_BUF, VA_BUF, 0 }, SIMGPU_ERR_BAD_ARGS },
	{ "copy huge", SIMGPU_OP_COPY, 0, { VA_BUF, VA_BUF, U64_MAX }, SIMGPU_ERR_BAD_ARGS },
	{ "kernel buffer too big", SIMGPU_OP_KERNEL, 0, { VA_BUF, SIMGPU_MAX_KERNEL_BUF + 4, 1 },
	  SIMGPU_ERR_BAD_ARGS },
	{ "kernel no iterations", SIMGPU_OP_KERNEL, 0, { VA_BUF, 64, 0 }, SIMGPU_ERR_BAD_ARGS },
	{ "kernel too many iterations", SIMGPU_OP_KERNEL, 0,
	  { VA_BUF, 64, SIMGPU_MAX_KERNEL_ITERS + 1 }, SIMGPU_ERR_BAD_ARGS },
	{ "fence unaligned", SIMGPU_OP_FENCE, 0, { VA_BUF + 4, 1 }, SIMGPU_ERR_BAD_ARGS },
	{ "fence to unmapped VA", SIMGPU_OP_FENCE, 0, { 0x7000000, 1 }, SIMGPU_ERR_PAGE_FAULT },
	{ "copy from unmapped IOVA", SIMGPU_OP_COPY, 0, { VA_BUF, VA_BUF + 0x300000, 8 },
	  SIMGPU_ERR_DMA },
	{ "fill past VRAM", SIMGPU_OP_FILL, 0, { VA_VRAM + T_VRAM, 8, 0 }, SIMGPU_ERR_VRAM_RANGE },
};

static void bad_cmd_desc(const struct bad_cmd *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(bad_cmd, bad_cmds, bad_cmd_desc);

static void cmd_bad_input(struct kunit *test)
{
	const struct bad_cmd *b = test->param_value;
	struct fake_env *e = fake_env_new(test, 1);
	u64 f = fake_alloc(e, 4096);

	fake_map(e, VA_BUF, f, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_BUF + 0x300000, 0x7000000000ULL, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_VRAM + T_VRAM, T_VRAM, 4096, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	submit(e, 0, b->op, b->flags, b->a[0], b->a[1], b->a[2], b->a[3]);
	submit(e, 0, SIMGPU_OP_FENCE, 0, VA_BUF, 1, 0, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, e->core.q[0].error, b->err);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(&e->core, SIMGPU_REG_ERROR_CODE), b->err);
	KUNIT_EXPECT_TRUE(test, simgpu_mmio_read(&e->core, SIMGPU_REG_STATUS) &
			  SIMGPU_STATUS_ERROR);
	/* The queue halted: the fence behind the bad command never ran. */
	KUNIT_EXPECT_EQ(test, *(u64 *)fake_ptr(e, f), 0ULL);
	KUNIT_EXPECT_EQ(test, e->irqs, 1U);
	/* Queue reset recovers it. */
	simgpu_mmio_write(&e->core, SIMGPU_QUEUE_BASE + SIMGPU_QREG_CONTROL,
			  SIMGPU_QCTRL_RESET | SIMGPU_QCTRL_ENABLE);
	submit(e, 0, SIMGPU_OP_FENCE, 0, VA_BUF, 2, 0, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, *(u64 *)fake_ptr(e, f), 2ULL);
}

static void core_reset_and_registers(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 2);
	struct simgpu_core *c = &e->core;

	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_ID), SIMGPU_ID_MAGIC);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_NUM_QUEUES), 2U);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_VRAM_SIZE_LO), (u32)T_VRAM);
	/* Queues past nr_queues and unknown registers read zero, ignore writes. */
	simgpu_mmio_write(c, SIMGPU_QUEUE_BASE + 5 * SIMGPU_QUEUE_STRIDE + SIMGPU_QREG_TAIL, 3);
	KUNIT_EXPECT_EQ(test, qreg(e, 5, SIMGPU_QREG_TAIL), 0U);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, 0x0f0), 0U);
	simgpu_mmio_write(c, SIMGPU_REG_ID, 0);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_ID), SIMGPU_ID_MAGIC);

	submit(e, 0, SIMGPU_OP_KERNEL, 0, VA_BUF, 64, 100, 1);
	simgpu_mmio_write(c, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_CONTROL), 0U);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_PT_ROOT_LO), 0U);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_TAIL), 0U);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_RING_SIZE), 0U);
	KUNIT_EXPECT_TRUE(test, simgpu_core_idle(c));
	KUNIT_EXPECT_FALSE(test, simgpu_core_run(c, 16));
}

/*
 * A device whose state was lost under its user (simgpu-pci after its PF's
 * reset) says so in its error registers and STATUS, raises its error
 * interrupt, and a reset of the device clears it.
 */
/*
 * Post-copy: a step that touches an absent block waits for it, whole
 * (nothing of it runs), while other queues run on; its arrival lets it
 * finish with the right data; a lost block fails its reader with
 * SIMGPU_ERR_VRAM_LOST until a write covers the page; a reset forgets
 * what was lost, not what is owed.
 */
/*
 * A lost block stays lost until the guest has written all of it again
 * (page by page, with the pages' map made at the first loss), then it is
 * the guest's.
 */
static void core_absent_rewritten(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 1);
	u64 dst = fake_alloc(e, 4096), nr = T_VRAM >> 16;
	unsigned long *map = bitmap_zalloc(nr, GFP_KERNEL);
	u8 *d = fake_ptr(e, dst);

	KUNIT_ASSERT_NOT_NULL(test, map);
	fake_map(e, VA_BUF + 0x100000, dst, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	__set_bit(3, map);
	KUNIT_ASSERT_EQ(test, 0, simgpu_core_set_absent(&e->core, map, nr, 16));
	KUNIT_EXPECT_NULL(test, e->core.ab.lost);	/* nothing of it in the stop */
	KUNIT_EXPECT_EQ(test, 0, simgpu_core_block_lost(&e->core, 3));
	KUNIT_EXPECT_NOT_NULL(test, e->core.ab.lost);
	KUNIT_EXPECT_EQ(test, e->core.ab.nr_lost, 1ULL);
	submit(e, 0, SIMGPU_OP_FILL, 0, VA_VRAM + 0x30000, 0x8000, 0x0a0b0c0d, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_ERROR), 0U);
	KUNIT_EXPECT_EQ(test, e->core.ab.nr_lost, 1ULL);	/* half of it */
	submit(e, 0, SIMGPU_OP_FILL, 0, VA_VRAM + 0x38000, 0x8000, 0x0a0b0c0d, 0);
	submit(e, 0, SIMGPU_OP_COPY, 0, VA_BUF + 0x100000, VA_VRAM + 0x3f000, 16, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_ERROR), 0U);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 3U);
	KUNIT_EXPECT_EQ(test, e->core.ab.nr_lost, 0ULL);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(*(__le32 *)d), 0x0a0b0c0dU);
	simgpu_core_absent_clear(&e->core);
	bitmap_free(map);
}

static void core_absent_vram(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 2);
	u64 src = fake_alloc(e, 4096), dst = fake_alloc(e, 4096), dst2 = fake_alloc(e, 4096);
	u64 nr = T_VRAM >> 16;
	unsigned long *map = bitmap_zalloc(nr, GFP_KERNEL);
	u8 *d = fake_ptr(e, dst), *d2 = fake_ptr(e, dst2);
	u8 blk1[64];
	int i;

	KUNIT_ASSERT_NOT_NULL(test, map);
	memset(blk1, 0x5a, sizeof(blk1));
	mutex_lock(&e->core.lock);
	KUNIT_ASSERT_EQ(test, 0, simgpu_vram_rw(&e->vram, 0x10000, blk1, sizeof(blk1), true));
	mutex_unlock(&e->core.lock);
	for (i = 0; i < 4096; i++)
		((u8 *)fake_ptr(e, src))[i] = i;
	fake_map(e, VA_BUF, src, 4096, 0);
	fake_map(e, VA_BUF + 0x100000, dst, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_BUF + 0x200000, dst2, 4096, SIMGPU_PTE_WRITE);
	fake_map(e, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);

	/* Blocks 1 and 2 (64 KiB each) are owed. */
	__set_bit(1, map);
	__set_bit(2, map);
	KUNIT_EXPECT_EQ(test, -EINVAL, simgpu_core_set_absent(&e->core, map, nr + 1, 16));
	KUNIT_ASSERT_EQ(test, 0, simgpu_core_set_absent(&e->core, map, nr, 16));
	KUNIT_EXPECT_EQ(test, -EBUSY, simgpu_core_set_absent(&e->core, map, nr, 16));
	KUNIT_EXPECT_EQ(test, simgpu_core_absent_count(&e->core), 2ULL);

	/* Queue 0 reads block 1 (absent); queue 1 copies through block 0. */
	submit(e, 0, SIMGPU_OP_COPY, 0, VA_BUF + 0x100000, VA_VRAM + 0x10000, 64, 0);
	submit(e, 1, SIMGPU_OP_COPY, 0, VA_VRAM + 0x100, VA_BUF, 4096, 0);
	submit(e, 1, SIMGPU_OP_COPY, 0, VA_BUF + 0x200000, VA_VRAM + 0x100, 4096, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 1, SIMGPU_QREG_HEAD), 2U);
	KUNIT_EXPECT_EQ(test, 0, memcmp(d2, fake_ptr(e, src), 4096));
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 0U);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_ERROR), 0U);
	KUNIT_EXPECT_EQ(test, e->demands, 1U);
	KUNIT_EXPECT_EQ(test, e->last_demand, 1ULL);
	KUNIT_EXPECT_EQ(test, d[0], 0);
	/* Waiting is not work: the processor does not spin on it. */
	KUNIT_EXPECT_FALSE(test, simgpu_core_run(&e->core, 64));

	/* It arrives: the step runs, with the block's data. */
	KUNIT_EXPECT_EQ(test, -EALREADY, simgpu_core_block_arrived(&e->core, 0));
	KUNIT_EXPECT_EQ(test, -ERANGE, simgpu_core_block_arrived(&e->core, nr));
	KUNIT_EXPECT_EQ(test, 0, simgpu_core_block_arrived(&e->core, 1));
	KUNIT_EXPECT_EQ(test, -EALREADY, simgpu_core_block_arrived(&e->core, 1));
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 1U);
	KUNIT_EXPECT_EQ(test, 0, memcmp(d, blk1, sizeof(blk1)));

	/*
	 * A copy from block 0 into block 2 (absent) waits without writing
	 * anything; block 2 is lost: the copy fails, and a read too.
	 */
	memset(d, 0, 4096);
	submit(e, 0, SIMGPU_OP_COPY, 0, VA_VRAM + 0x20000 + 8, VA_VRAM + 0x100, 64, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_HEAD), 1U);
	KUNIT_EXPECT_EQ(test, e->last_demand, 2ULL);
	KUNIT_EXPECT_EQ(test, 0, simgpu_core_block_lost(&e->core, 2));
	KUNIT_EXPECT_EQ(test, -EALREADY, simgpu_core_block_lost(&e->core, 2));
	KUNIT_EXPECT_EQ(test, simgpu_core_absent_count(&e->core), 0ULL);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_ERROR), (u32)SIMGPU_ERR_VRAM_LOST);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(&e->core, SIMGPU_REG_ERROR_CODE),
			(u32)SIMGPU_ERR_VRAM_LOST);

	/* Queue 1: a FILL of one whole page of block 2 makes it readable again. */
	submit(e, 1, SIMGPU_OP_FILL, 0, VA_VRAM + 0x21000, 4096, 0x01020304, 0);
	submit(e, 1, SIMGPU_OP_COPY, 0, VA_BUF + 0x100000, VA_VRAM + 0x21000, 16, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 1, SIMGPU_QREG_ERROR), 0U);
	KUNIT_EXPECT_EQ(test, qreg(e, 1, SIMGPU_QREG_HEAD), 4U);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(*(__le32 *)d), 0x01020304U);
	/* Its other pages stay lost. */
	submit(e, 1, SIMGPU_OP_COPY, 0, VA_BUF + 0x100000, VA_VRAM + 0x22000, 16, 0);
	run_all(e);
	KUNIT_EXPECT_EQ(test, qreg(e, 1, SIMGPU_QREG_ERROR), (u32)SIMGPU_ERR_VRAM_LOST);

	/* A reset forgets what was lost. */
	simgpu_core_reset(&e->core);
	KUNIT_EXPECT_EQ(test, e->core.ab.nr_lost, 0ULL);
	simgpu_core_absent_clear(&e->core);

	simgpu_core_absent_clear(&e->core);
	bitmap_free(map);
}

static void core_lost(struct kunit *test)
{
	struct fake_env *e = fake_env_new(test, 2);
	struct simgpu_core *c = &e->core;
	unsigned int irqs = e->irqs;

	simgpu_core_lost(c);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_ERROR_CODE), SIMGPU_ERR_DEVICE_LOST);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_ERROR_QUEUE), SIMGPU_QUEUE_DEVICE);
	KUNIT_EXPECT_TRUE(test, simgpu_mmio_read(c, SIMGPU_REG_STATUS) & SIMGPU_STATUS_ERROR);
	KUNIT_EXPECT_TRUE(test, simgpu_mmio_read(c, SIMGPU_REG_INT_STATUS) & SIMGPU_INT_ERROR);
	KUNIT_EXPECT_EQ(test, e->irqs, irqs + 1);
	/* No queue stopped: a queue's own error stays its own. */
	KUNIT_EXPECT_EQ(test, qreg(e, 0, SIMGPU_QREG_ERROR), 0U);
	simgpu_mmio_write(c, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	KUNIT_EXPECT_EQ(test, simgpu_mmio_read(c, SIMGPU_REG_ERROR_CODE), 0U);
	KUNIT_EXPECT_FALSE(test, simgpu_mmio_read(c, SIMGPU_REG_STATUS) & SIMGPU_STATUS_ERROR);
}

static struct kunit_case simgpu_cases[] = {
	KUNIT_CASE(core_lost),
	KUNIT_CASE(core_absent_vram),
	KUNIT_CASE(core_absent_rewritten),
	KUNIT_CASE(vram_sparse_and_scrub),
	KUNIT_CASE(vram_zero_exact),
	KUNIT_CASE(vram_write_iter_short),
	KUNIT_CASE(vram_write_iter_block),
	KUNIT_CASE(vram_dirty_counts),
	KUNIT_CASE(mmu_walk_and_faults),
	KUNIT_CASE(mmu_tlb_stale_until_flush),
	KUNIT_CASE(mmu_invalidation_ack),
	KUNIT_CASE(cmd_copy_fill_fence),
	KUNIT_CASE(cmd_kernel_steps),
	KUNIT_CASE(cmd_preemption_knob),
	KUNIT_CASE(cmd_ring_wraps),
	KUNIT_CASE(core_pause_and_resume),
	KUNIT_CASE(core_share_math),
	KUNIT_CASE(core_throttle),
	KUNIT_CASE(core_guest_reset_while_paused),
	KUNIT_CASE(core_host_invalidation),
	KUNIT_CASE_PARAM(cmd_bad_input, bad_cmd_gen_params),
	KUNIT_CASE(core_reset_and_registers),
	{}
};

static struct kunit_suite simgpu_suite = {
	.name = "simgpu_core",
	.test_cases = simgpu_cases,
};

kunit_test_suites(&simgpu_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suite simgpu_core: simgpu's device model");
GPUMIG_IMPORT_KUNIT_NS();

