// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for device-side dirty tracking (drivers/gpumig/dirty.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/test.h>
#include <linux/interval_tree.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include <gpumig/compat.h>
#include <gpumig/dirty.h>

#define PG	4096ULL
#define T_MAX	64

struct seen {
	u64 iova[T_MAX];
	u64 len[T_MAX];
	int n;
	u64 bytes;
};

static void record(void *ctx, u64 iova, u64 len)
{
	struct seen *s = ctx;

	if (s->n < T_MAX) {
		s->iova[s->n] = iova;
		s->len[s->n] = len;
	}
	s->n++;
	s->bytes += len;
}

static struct seen *new_seen(struct kunit *test)
{
	struct seen *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	return s;
}

static void dirty_free(void *p)
{
	gpumig_dirty_destroy(p);
}

/* A log over [0x100000, +1 MiB) and [1 GiB, +64 GiB). */
static struct gpumig_dirty *new_log(struct kunit *test)
{
	struct interval_tree_node *n = kunit_kcalloc(test, 2, sizeof(*n), GFP_KERNEL);
	struct gpumig_dirty *d = gpumig_dirty_create();
	struct rb_root_cached root = RB_ROOT_CACHED;
	u64 ps = PG;

	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, dirty_free, d));
	n[0].start = 0x100000;
	n[0].last = 0x100000 + SZ_1M - 1;
	n[1].start = SZ_1G;
	n[1].last = SZ_1G + (64ULL << 30) - 1;
	interval_tree_insert(&n[0], &root);
	interval_tree_insert(&n[1], &root);
	KUNIT_ASSERT_EQ(test, 0, gpumig_dirty_start(d, &root, 2, &ps));
	return d;
}

static void dirty_exact_and_cleared(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct seen *s = new_seen(test);

	gpumig_dirty_mark(d, 0x100000 + 5 * PG + 100, 10);	/* one page */
	gpumig_dirty_mark(d, 0x100000 + 7 * PG - 1, 2);		/* two pages */
	gpumig_dirty_mark(d, 0x100000 + 5 * PG, 1);		/* again */
	gpumig_dirty_mark(d, 0x100000 + 9 * PG, PG);
	gpumig_dirty_mark(d, 0x50000, PG);			/* not tracked */
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, SZ_1G, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 2);			/* runs are merged */
	KUNIT_EXPECT_EQ(test, s->iova[0], 0x100000 + 5 * PG);
	KUNIT_EXPECT_EQ(test, s->len[0], 3 * PG);
	KUNIT_EXPECT_EQ(test, s->iova[1], 0x100000 + 9 * PG);
	KUNIT_EXPECT_EQ(test, s->len[1], PG);
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, SZ_1G, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 0);		/* reported once until written again */
	gpumig_dirty_mark(d, 0x100000 + 5 * PG, 8);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, SZ_1G, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 1);
}

/* A run across bitmap words and summary words is one report. */
static void dirty_runs_across_words(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct seen *s = new_seen(test);

	/* pages 4000..4200 of the second range cross a summary word (4096) */
	gpumig_dirty_mark(d, SZ_1G + 4000 * PG, 201 * PG);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, ~0ULL, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 1);
	KUNIT_EXPECT_EQ(test, s->iova[0], SZ_1G + 4000 * PG);
	KUNIT_EXPECT_EQ(test, s->len[0], 201 * PG);
}

/* A report of part of the range leaves the rest for later, to the page. */
static void dirty_subrange(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct seen *s = new_seen(test);

	gpumig_dirty_mark(d, SZ_1G, PG);
	gpumig_dirty_mark(d, SZ_1G + (63ULL << 30), PG);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, SZ_1G, SZ_1G, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 1);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, SZ_1G, 64ULL << 30, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 2);
	KUNIT_EXPECT_EQ(test, s->iova[1], SZ_1G + (63ULL << 30));

	/* pages 10..20 dirty; take 13..15 only, inside one word */
	memset(s, 0, sizeof(*s));
	gpumig_dirty_mark(d, 0x100000 + 10 * PG, 11 * PG);
	KUNIT_EXPECT_EQ(test, 0,
			gpumig_dirty_collect(d, 0x100000 + 13 * PG, 3 * PG, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 1);
	KUNIT_EXPECT_EQ(test, s->iova[0], 0x100000 + 13 * PG);
	KUNIT_EXPECT_EQ(test, s->len[0], 3 * PG);
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, SZ_1G, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 2);
	KUNIT_EXPECT_EQ(test, s->iova[0], 0x100000 + 10 * PG);
	KUNIT_EXPECT_EQ(test, s->len[0], 3 * PG);
	KUNIT_EXPECT_EQ(test, s->iova[1], 0x100000 + 16 * PG);
	KUNIT_EXPECT_EQ(test, s->len[1], 5 * PG);
}

/*
 * A report whose range cuts a tracking page (an unaligned IOVA or length,
 * or tracking pages larger than the report's, 16 KiB here) is told only
 * the overlap, and the page stays dirty until a report asks for all of it.
 */
static void dirty_cut_pages(struct kunit *test)
{
	struct interval_tree_node *n = kunit_kzalloc(test, sizeof(*n), GFP_KERNEL);
	struct gpumig_dirty *d = gpumig_dirty_create();
	struct rb_root_cached root = RB_ROOT_CACHED;
	struct seen *s = new_seen(test);
	const u64 base = 0x100000, tp = 4 * PG;
	u64 ps = tp;

	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, dirty_free, d));
	n->start = base;
	n->last = base + SZ_1M - 1;
	interval_tree_insert(n, &root);
	KUNIT_ASSERT_EQ(test, 0, gpumig_dirty_start(d, &root, 1, &ps));

	/* Tracking page 2 dirty; ask for its second 4 KiB page only. */
	gpumig_dirty_mark(d, base + 2 * tp + 10, 1);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, base + 2 * tp + PG, PG, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 1);
	KUNIT_EXPECT_EQ(test, s->iova[0], base + 2 * tp + PG);
	KUNIT_EXPECT_EQ(test, s->len[0], PG);
	/* An unaligned range over pages 1..2: page 1 clean, page 2 cut. */
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, base + tp + 100, tp + 200, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 1);
	KUNIT_EXPECT_EQ(test, s->iova[0], base + 2 * tp);
	KUNIT_EXPECT_EQ(test, s->len[0], 300);
	/* Asked whole, it is reported whole, once. */
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, base, SZ_1M, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 1);
	KUNIT_EXPECT_EQ(test, s->iova[0], base + 2 * tp);
	KUNIT_EXPECT_EQ(test, s->len[0], tp);
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, base, SZ_1M, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 0);

	/* A dirty run with both ends cut: the middle is taken, the ends stay. */
	gpumig_dirty_mark(d, base + 4 * tp, 4 * tp);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, base + 4 * tp + 1, 4 * tp - 2, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 3);		/* cut end, middle, cut end */
	KUNIT_EXPECT_EQ(test, s->iova[0], base + 4 * tp + 1);
	KUNIT_EXPECT_EQ(test, s->iova[1], base + 5 * tp);
	KUNIT_EXPECT_EQ(test, s->iova[2], base + 7 * tp);
	KUNIT_EXPECT_EQ(test, s->iova[2] + s->len[2], base + 8 * tp - 1);
	KUNIT_EXPECT_EQ(test, s->bytes, 4 * tp - 2);
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, base, SZ_1M, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 2);
	KUNIT_EXPECT_EQ(test, s->iova[0], base + 4 * tp);
	KUNIT_EXPECT_EQ(test, s->len[0], tp);
	KUNIT_EXPECT_EQ(test, s->iova[1], base + 7 * tp);
	KUNIT_EXPECT_EQ(test, s->len[1], tp);
}

/* A thousand dirty pages in 64 GiB: exactly those, nothing else. */
static void dirty_sparse_large_range(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct seen *s = new_seen(test);
	int i;

	for (i = 0; i < 1000; i++)
		gpumig_dirty_mark(d, SZ_1G + (u64)i * 65 * SZ_1M, 8);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, SZ_1G, 64ULL << 30, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 1000);
	KUNIT_EXPECT_EQ(test, s->bytes, 1000 * PG);
	for (i = 0; i < T_MAX; i++)
		KUNIT_EXPECT_EQ(test, s->iova[i], SZ_1G + (u64)i * 65 * SZ_1M);
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, ~0ULL, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 0);
}

/* Memory is fixed at start, as stated, and a request over budget refused. */
static void dirty_memory_bound(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct rb_root_cached root = RB_ROOT_CACHED;
	struct interval_tree_node n = { .start = 0, .last = SZ_1G - 1 };
	u64 ps = PG;

	/* 33,288 bytes per GiB of 4 KiB pages */
	KUNIT_EXPECT_EQ(test, gpumig_dirty_bitmap_bytes(SZ_1G / PG), 33288ULL);
	KUNIT_EXPECT_EQ(test, gpumig_dirty_bytes(d),
			(size_t)(gpumig_dirty_bitmap_bytes(SZ_1M / PG) +
				 gpumig_dirty_bitmap_bytes((64ULL << 30) / PG)));
	gpumig_dirty_stop(d);
	KUNIT_EXPECT_EQ(test, gpumig_dirty_bytes(d), (size_t)0);

	interval_tree_insert(&n, &root);
	gpumig_dirty_set_budget(d, 33287);
	KUNIT_EXPECT_EQ(test, -E2BIG, gpumig_dirty_start(d, &root, 1, &ps));
	KUNIT_EXPECT_FALSE(test, gpumig_dirty_active(d));
	KUNIT_EXPECT_EQ(test, gpumig_dirty_bytes(d), (size_t)0);
	gpumig_dirty_set_budget(d, 33288);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_start(d, &root, 1, &ps));
	KUNIT_EXPECT_EQ(test, gpumig_dirty_bytes(d), (size_t)33288);
	/* the whole 64-bit space: refused, not an overflow or an OOM */
	gpumig_dirty_stop(d);
	interval_tree_remove(&n, &root);
	n.last = ~0UL;
	interval_tree_insert(&n, &root);
	gpumig_dirty_set_budget(d, SIZE_MAX);
	KUNIT_EXPECT_EQ(test, -E2BIG, gpumig_dirty_start(d, &root, 1, &ps));
}

#define RACE_BASE	((u64)SZ_1G)
#define RACE_PAGES	65536U

struct race {
	struct gpumig_dirty *d;
	u8 *count;
	unsigned int npages;
	bool done;
};

static int race_writer(void *p)
{
	struct race *r = p;
	unsigned int i;

	/* every page exactly once, in an order that jumps around */
	for (i = 0; i < r->npages; i++) {
		gpumig_dirty_mark(r->d, RACE_BASE + (u64)((i * 97) % r->npages) * PG, 1);
		if (!(i % 64))
			cond_resched();
	}
	/* pairs with the reader's acquire: every mark is done before */
	smp_store_release(&r->done, true);
	return 0;
}

static void race_record(void *ctx, u64 iova, u64 len)
{
	struct race *r = ctx;
	u64 p;

	for (p = (iova - RACE_BASE) / PG; p < (iova - RACE_BASE + len) / PG; p++)
		r->count[p]++;
}

/* Reports racing with the writer: every write reported exactly once. */
static void dirty_race_with_writer(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct race *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct task_struct *t;
	unsigned int i, reports = 0;

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->d = d;
	r->npages = RACE_PAGES;	/* 256 MiB of the second range */
	r->count = kunit_kzalloc(test, r->npages, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r->count);
	t = kthread_run(race_writer, r, "gpumig-dirty-race");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	get_task_struct(t);
	/* pairs with the writer's release */
	while (!smp_load_acquire(&r->done)) {
		KUNIT_EXPECT_EQ(test, 0,
				gpumig_dirty_collect(d, RACE_BASE, SZ_1G, race_record, r));
		reports++;
		cond_resched();
	}
	kthread_stop(t);
	put_task_struct(t);
	KUNIT_EXPECT_GT(test, reports, 1U);
	KUNIT_ASSERT_EQ(test, 0, gpumig_dirty_collect(d, RACE_BASE, SZ_1G, race_record, r));
	for (i = 0; i < r->npages; i++)
		KUNIT_EXPECT_EQ_MSG(test, r->count[i], 1, "page %u (%u reports)", i, reports);
}

static void dirty_bad_input(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct rb_root_cached root = RB_ROOT_CACHED;
	struct seen *s = new_seen(test);
	u64 ps = 4096;

	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_dirty_start(d, &root, 0, &ps));
	gpumig_dirty_stop(d);
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_dirty_collect(d, 0, PG, record, s));
	gpumig_dirty_mark(d, 0x100000, PG);		/* ignored when stopped */
	gpumig_dirty_mark(d, ~0ULL - 10, 100);		/* wraps: ignored */
	/* A page size is a hint: the nearest the tracker can do, said back. */
	ps = 3 * PG;
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_start(d, &root, 0, &ps));
	KUNIT_EXPECT_EQ(test, ps, 2 * PG);
	gpumig_dirty_stop(d);
	ps = 512;
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_start(d, &root, 0, &ps));
	KUNIT_EXPECT_EQ(test, ps, (u64)PAGE_SIZE);
	gpumig_dirty_stop(d);
	ps = 1ULL << 40;
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_start(d, &root, 0, &ps));
	KUNIT_EXPECT_EQ(test, ps, (u64)SZ_1G);
	gpumig_dirty_stop(d);
	ps = PG;
	KUNIT_EXPECT_EQ(test, -E2BIG,
			gpumig_dirty_start(d, &root, GPUMIG_DIRTY_MAX_RANGES + 1, &ps));
	ps = 2 * PG;
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_start(d, &root, 0, &ps));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, ~0ULL, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 0);
}

static struct kunit_case dirty_cases[] = {
	KUNIT_CASE(dirty_exact_and_cleared),
	KUNIT_CASE(dirty_runs_across_words),
	KUNIT_CASE(dirty_subrange),
	KUNIT_CASE(dirty_cut_pages),
	KUNIT_CASE(dirty_sparse_large_range),
	KUNIT_CASE(dirty_memory_bound),
	KUNIT_CASE(dirty_race_with_writer),
	KUNIT_CASE(dirty_bad_input),
	{}
};

static struct kunit_suite dirty_suite = {
	.name = "gpumig_dirty",
	.test_cases = dirty_cases,
};

kunit_test_suites(&dirty_suite);

GPUMIG_IMPORT_KUNIT_NS();
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suite gpumig_dirty: the DMA-logging dirty tracker");
