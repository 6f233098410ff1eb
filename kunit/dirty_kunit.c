// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for device-side dirty tracking (drivers/gpumig/dirty.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/test.h>
#include <linux/interval_tree.h>
#include <linux/sizes.h>
#include <linux/slab.h>

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
	struct gpumig_dirty *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	struct rb_root_cached root = RB_ROOT_CACHED;
	u64 ps = PG;

	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_ASSERT_NOT_NULL(test, d);
	gpumig_dirty_init(d);
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
	gpumig_dirty_mark(d, 0x50000, PG);			/* not tracked */
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, SZ_1G, record, s));
	KUNIT_ASSERT_EQ(test, s->n, 3);
	KUNIT_EXPECT_EQ(test, s->iova[0], 0x100000 + 5 * PG);
	KUNIT_EXPECT_EQ(test, s->iova[1], 0x100000 + 6 * PG);
	KUNIT_EXPECT_EQ(test, s->iova[2], 0x100000 + 7 * PG);
	KUNIT_EXPECT_EQ(test, s->len[0], PG);
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, SZ_1G, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 0);		/* reported once until written again */
	gpumig_dirty_mark(d, 0x100000 + 5 * PG, 8);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, SZ_1G, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 1);
}

/* A report of part of the range leaves the rest for later. */
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
}

/* A thousand dirty pages in 64 GiB: exactly those, nothing else. */
static void dirty_sparse_large_range(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct seen *s = new_seen(test);
	int i;

	for (i = 0; i < 1000; i++)
		gpumig_dirty_mark(d, SZ_1G + (u64)i * 65 * SZ_1M, 8);
	KUNIT_EXPECT_EQ(test, d->nr_dirty, 1000UL);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, SZ_1G, 64ULL << 30, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 1000);
	KUNIT_EXPECT_EQ(test, s->bytes, 1000 * PG);
	KUNIT_EXPECT_EQ(test, d->nr_dirty, 0UL);
}

/* Past the memory bound the log reports whole ranges instead of growing. */
static void dirty_overflow(struct kunit *test)
{
	struct gpumig_dirty *d = new_log(test);
	struct seen *s = new_seen(test);
	int i;

	d->max_pages = 16;
	for (i = 0; i < 20; i++)
		gpumig_dirty_mark(d, 0x100000 + i * PG, 1);
	KUNIT_EXPECT_LE(test, d->nr_dirty, 16UL);
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0x100000, SZ_1M, record, s));
	KUNIT_EXPECT_EQ(test, s->iova[0], 0x100000ULL);
	KUNIT_EXPECT_EQ(test, s->len[0], (u64)SZ_1M);	/* the whole range */
	/* The other range still owes its whole-range report. */
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, SZ_1G, 64ULL << 30, record, s));
	KUNIT_EXPECT_EQ(test, s->bytes, 64ULL << 30);
	memset(s, 0, sizeof(*s));
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_collect(d, 0, ~0ULL >> 1, record, s));
	KUNIT_EXPECT_EQ(test, s->n, 0);
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
	ps = 3000;
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_dirty_start(d, &root, 0, &ps));
	ps = 512;
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_dirty_start(d, &root, 0, &ps));
	ps = PG;
	KUNIT_EXPECT_EQ(test, -E2BIG,
			gpumig_dirty_start(d, &root, GPUMIG_DIRTY_MAX_RANGES + 1, &ps));
	ps = 2 * PG;
	KUNIT_EXPECT_EQ(test, 0, gpumig_dirty_start(d, &root, 0, &ps));
	KUNIT_EXPECT_EQ(test, d->nr_dirty, 0UL);
}

static struct kunit_case dirty_cases[] = {
	KUNIT_CASE(dirty_exact_and_cleared),
	KUNIT_CASE(dirty_subrange),
	KUNIT_CASE(dirty_sparse_large_range),
	KUNIT_CASE(dirty_overflow),
	KUNIT_CASE(dirty_bad_input),
	{}
};

static struct kunit_suite dirty_suite = {
	.name = "gpumig_dirty",
	.test_cases = dirty_cases,
};

kunit_test_suites(&dirty_suite);
