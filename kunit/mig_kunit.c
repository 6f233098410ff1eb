// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the migration engine (drivers/gpumig/mig.c) with a fake
 * backend that records the order of its calls and can fail any of them.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <gpumig/compat.h>
#include <gpumig/migration.h>

#define F_BLOCKS	8
#define F_VRAM		(F_BLOCKS * GPUMIG_BLOCK_SIZE)

enum fake_fail { FAIL_NONE, FAIL_QUIESCE, FAIL_INVALIDATE, FAIL_ARCH_RESTORE,
		 FAIL_TEARDOWN, FAIL_VRAM_READ };

struct fake_dev {
	struct vfio_device vdev;
	struct gpumig_mig mig;
	u8 *vram;
	unsigned long dirty;
	bool tracking;
	bool running;
	u8 arch[100];
	size_t arch_len;
	bool arch_restored;
	char log[512];
	char name[32];
	enum fake_fail fail;
	void (*during_count)(struct fake_dev *f);
};

static atomic_t fake_seq = ATOMIC_INIT(0);

static struct fake_dev *to_fake(struct gpumig_mig *m)
{
	return m->priv;
}

static void flog(struct fake_dev *f, char c)
{
	size_t n = strlen(f->log);

	if (n + 1 < sizeof(f->log))
		f->log[n] = c;
}

static int f_quiesce(struct gpumig_mig *m)
{
	struct fake_dev *f = to_fake(m);

	flog(f, 'Q');
	if (f->fail == FAIL_QUIESCE)
		return -EBUSY;
	f->running = false;
	return 0;
}

static void f_unquiesce(struct gpumig_mig *m)
{
	struct fake_dev *f = to_fake(m);

	flog(f, 'U');
	f->running = true;
}

static int f_invalidate(struct gpumig_mig *m)
{
	struct fake_dev *f = to_fake(m);

	flog(f, 'I');
	return f->fail == FAIL_INVALIDATE ? -ETIMEDOUT : 0;
}

static void f_track(struct gpumig_mig *m, bool on)
{
	struct fake_dev *f = to_fake(m);

	flog(f, on ? 'T' : 't');
	f->tracking = on;
	f->dirty = on ? (1UL << F_BLOCKS) - 1 : 0;
}

static bool f_block_zero(struct fake_dev *f, unsigned long b)
{
	return !memchr_inv(f->vram + b * GPUMIG_BLOCK_SIZE, 0, GPUMIG_BLOCK_SIZE);
}

static long f_next_dirty(struct gpumig_mig *m, unsigned long from, bool *zero)
{
	struct fake_dev *f = to_fake(m);
	unsigned long b = find_next_bit(&f->dirty, F_BLOCKS, from);

	if (b >= F_BLOCKS)
		return -ENOENT;
	clear_bit(b, &f->dirty);
	*zero = f_block_zero(f, b);
	return b;
}

static void f_dirty_count(struct gpumig_mig *m, unsigned long *nonzero, unsigned long *zero)
{
	struct fake_dev *f = to_fake(m);
	unsigned long b;

	if (f->during_count)
		f->during_count(f);
	*nonzero = 0;
	*zero = 0;
	for (b = 0; b < F_BLOCKS; b++) {
		if (f->tracking && !test_bit(b, &f->dirty))
			continue;
		if (f_block_zero(f, b))
			(*zero)++;
		else
			(*nonzero)++;
	}
}

static int f_vram_read(struct gpumig_mig *m, u64 off, void *buf, u32 len)
{
	struct fake_dev *f = to_fake(m);

	flog(f, 'r');
	if (f->fail == FAIL_VRAM_READ)
		return -EIO;
	memcpy(buf, f->vram + off, len);
	return 0;
}

static int f_vram_write(struct gpumig_mig *m, u64 off, const void *buf, u32 len)
{
	struct fake_dev *f = to_fake(m);

	flog(f, buf ? 'w' : 'z');
	if (buf)
		memcpy(f->vram + off, buf, len);
	else
		memset(f->vram + off, 0, len);
	return 0;
}

static ssize_t f_arch_save(struct gpumig_mig *m, void *buf, size_t len)
{
	struct fake_dev *f = to_fake(m);

	if (!buf)
		return f->arch_len;
	flog(f, 'A');
	memcpy(buf, f->arch, f->arch_len);
	return f->arch_len;
}

static int f_arch_restore(struct gpumig_mig *m, const void *buf, size_t len)
{
	struct fake_dev *f = to_fake(m);

	flog(f, 'R');
	if (f->fail == FAIL_ARCH_RESTORE)
		return -EINVAL;
	memcpy(f->arch, buf, len);
	f->arch_len = len;
	f->arch_restored = true;
	return 0;
}

static int f_teardown(struct gpumig_mig *m, char *why, size_t len)
{
	struct fake_dev *f = to_fake(m);

	flog(f, 'C');
	if (f->fail == FAIL_TEARDOWN) {
		snprintf(why, len, "engine still busy");
		return -EBUSY;
	}
	return 0;
}

static const struct gpumig_backend_ops fake_ops = {
	.quiesce = f_quiesce,
	.unquiesce = f_unquiesce,
	.invalidate = f_invalidate,
	.vram_track = f_track,
	.vram_next_dirty = f_next_dirty,
	.vram_dirty_count = f_dirty_count,
	.vram_read = f_vram_read,
	.vram_write = f_vram_write,
	.arch_save = f_arch_save,
	.arch_restore = f_arch_restore,
	.teardown_check = f_teardown,
};

static void fake_free(void *p)
{
	struct fake_dev *f = p;

	gpumig_mig_destroy(&f->mig);
}

static void fake_free_vram(void *p)
{
	vfree(p);
}

static struct fake_dev *fake_new(struct kunit *test, u32 queues)
{
	struct fake_dev *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct gpumig_compat c = {
		.type_name = "fake-512K",
		.vram_size = F_VRAM,
		.backend = GPUMIG_BACKEND_FAKE,
		.page_size = 4096,
		.arch_version = 1,
	};
	struct device *dev;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->vram = vzalloc(F_VRAM);
	KUNIT_ASSERT_NOT_NULL(test, f->vram);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, fake_free_vram, f->vram));
	snprintf(f->name, sizeof(f->name), "gpumig-fake-%d", atomic_inc_return(&fake_seq));
	dev = kunit_device_register(test, f->name);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	f->vdev.dev = dev;
	f->vdev.migration_flags = VFIO_MIGRATION_STOP_COPY | VFIO_MIGRATION_P2P |
				  VFIO_MIGRATION_PRE_COPY;
	c.nr_queues = queues;
	f->running = true;
	f->arch_len = sizeof(f->arch);
	for (i = 0; i < sizeof(f->arch); i++)
		f->arch[i] = i ^ queues;
	gpumig_mig_init(&f->mig, &f->vdev, &fake_ops, f, &c);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, fake_free, f));
	return f;
}

static struct file *go(struct kunit *test, struct fake_dev *f, enum vfio_device_mig_state s)
{
	struct file *filp = gpumig_mig_set_state(&f->mig, s);

	KUNIT_EXPECT_FALSE_MSG(test, IS_ERR(filp), "to state %d: %ld", s, PTR_ERR(filp));
	return IS_ERR(filp) ? NULL : filp;
}

/* Read a saving file until EOF or -ENOMSG into buf; returns bytes. */
static ssize_t drain(struct file *filp, u8 *buf, size_t room, int *last)
{
	size_t total = 0;
	ssize_t n;

	for (;;) {
		loff_t pos = 0;

		n = kernel_read(filp, buf + total, min_t(size_t, room - total, 7000), &pos);
		if (n <= 0)
			break;
		total += n;
	}
	*last = n;
	return total;
}

static void mig_full_migration(struct kunit *test)
{
	struct fake_dev *src = fake_new(test, 4), *dst = fake_new(test, 4);
	struct vfio_precopy_info info;
	struct file *sf, *rf;
	u8 *stream = vzalloc(2 * F_VRAM);
	ssize_t n, n2, w;
	unsigned long est;
	loff_t pos = 0;
	int last;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	memset(src->vram, 0x11, GPUMIG_BLOCK_SIZE);		/* block 0 */
	memset(src->vram + 3 * GPUMIG_BLOCK_SIZE, 0x33, 100);	/* block 3 */

	/* Pre-copy while running: header and the first pass. */
	sf = go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_GT(test, info.initial_bytes, 2ULL * GPUMIG_BLOCK_SIZE);
	n = drain(sf, stream, 2 * F_VRAM, &last);
	KUNIT_EXPECT_EQ(test, last, -ENOMSG);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_EQ(test, info.initial_bytes, 0ULL);
	KUNIT_EXPECT_EQ(test, info.dirty_bytes, 0ULL);
	KUNIT_EXPECT_TRUE(test, src->running);

	/* The device writes block 5: it is resent, and only it. */
	memset(src->vram + 5 * GPUMIG_BLOCK_SIZE, 0x55, GPUMIG_BLOCK_SIZE);
	set_bit(5, &src->dirty);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_EQ(test, info.dirty_bytes,
			(u64)gpumig_vram_section_size(GPUMIG_BLOCK_SIZE, false));
	memset(src->log, 0, sizeof(src->log));
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_PRE_COPY_P2P));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_data_size(&src->mig, &est));
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
	KUNIT_EXPECT_STREQ(test, src->log, "QI");	/* quiesce before invalidate */
	KUNIT_EXPECT_FALSE(test, src->running);
	n2 = drain(sf, stream + n, 2 * F_VRAM - n, &last);
	KUNIT_EXPECT_EQ(test, last, 0);			/* EOF, never ENOMSG */
	KUNIT_EXPECT_STREQ(test, src->log, "QIrA");	/* the delta, then arch */
	/* The estimate before STOP_COPY is what STOP_COPY produced. */
	KUNIT_EXPECT_EQ(test, (unsigned long)n2, est);
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));

	/* Destination. */
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	memset(dst->log, 0, sizeof(dst->log));
	w = kernel_write(rf, stream, n + n2, &pos);
	KUNIT_EXPECT_EQ(test, w, n + n2);
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	/* VRAM first, architectural state last. */
	KUNIT_EXPECT_EQ_MSG(test, strchr(dst->log, 'R') - dst->log,
			    (long)strlen(dst->log) - 1, "calls: %s", dst->log);
	KUNIT_EXPECT_NOT_NULL(test, strchr(dst->log, 'w'));
	KUNIT_EXPECT_EQ(test, 0, memcmp(dst->vram, src->vram, F_VRAM));
	KUNIT_EXPECT_EQ(test, 0, memcmp(dst->arch, src->arch, sizeof(src->arch)));
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_RUNNING));
	KUNIT_EXPECT_TRUE(test, dst->running);
	/* A data fd used after its phase ended says so. */
	pos = 0;
	KUNIT_EXPECT_EQ(test, kernel_read(sf, stream, 10, &pos), (ssize_t)-ENODEV);
	fput(sf);
	fput(rf);
	vfree(stream);
}

/* A source that cannot quiesce or invalidate keeps running. */
static void mig_stop_failures_keep_running(struct kunit *test)
{
	static const enum fake_fail fails[] = { FAIL_QUIESCE, FAIL_INVALIDATE };
	int i;

	for (i = 0; i < ARRAY_SIZE(fails); i++) {
		struct fake_dev *f = fake_new(test, 2);
		struct file *filp;
		enum vfio_device_mig_state st;

		f->fail = fails[i];
		filp = gpumig_mig_set_state(&f->mig, VFIO_DEVICE_STATE_STOP);
		KUNIT_EXPECT_TRUE(test, IS_ERR(filp));
		gpumig_mig_get_state(&f->mig, &st);
		KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RUNNING_P2P);
		KUNIT_EXPECT_TRUE(test, f->running);
		KUNIT_EXPECT_NE(test, f->mig.why[0], '\0');
		KUNIT_EXPECT_STREQ(test, f->log, fails[i] == FAIL_QUIESCE ? "Q" : "QIU");
		/* And it can still go back to RUNNING. */
		KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING));
	}
}

static void mig_incompatible_refused_in_precopy(struct kunit *test)
{
	struct fake_dev *src = fake_new(test, 8), *dst = fake_new(test, 4);
	struct file *sf, *rf;
	u8 *buf = vzalloc(F_VRAM);
	loff_t pos = 0;
	ssize_t n;
	int last;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	sf = go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	n = drain(sf, buf, F_VRAM, &last);
	go(test, dst, VFIO_DEVICE_STATE_STOP);
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	KUNIT_EXPECT_EQ(test, kernel_write(rf, buf, n, &pos), (ssize_t)-EOPNOTSUPP);
	KUNIT_EXPECT_NOT_NULL(test, strstr(dst->mig.why, "queue count: source has 8"));
	/* The source never stopped. */
	KUNIT_EXPECT_TRUE(test, src->running);
	KUNIT_EXPECT_NULL(test, strchr(src->log, 'Q'));
	/* The destination refuses to leave RESUMING. */
	KUNIT_EXPECT_TRUE(test, IS_ERR(gpumig_mig_set_state(&dst->mig, VFIO_DEVICE_STATE_STOP)));
	KUNIT_EXPECT_FALSE(test, dst->arch_restored);
	fput(sf);
	fput(rf);
	vfree(buf);
}

/* Truncated at any section boundary or inside: never runs, never restores arch. */
static void mig_truncated_never_runs(struct kunit *test)
{
	struct fake_dev *src = fake_new(test, 2);
	u8 *buf = vzalloc(2 * F_VRAM);
	struct file *sf;
	ssize_t n;
	size_t cut;
	int last;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(src->vram, 0x42, 3 * GPUMIG_BLOCK_SIZE);
	go(test, src, VFIO_DEVICE_STATE_STOP);
	sf = go(test, src, VFIO_DEVICE_STATE_STOP_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	n = drain(sf, buf, 2 * F_VRAM, &last);
	KUNIT_ASSERT_GT(test, n, 0);
	for (cut = 0; cut < n; cut += n / 7 + 1) {
		struct fake_dev *dst = fake_new(test, 2);
		struct file *rf, *res;
		loff_t pos = 0;

		go(test, dst, VFIO_DEVICE_STATE_STOP);
		rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
		KUNIT_ASSERT_NOT_NULL(test, rf);
		if (cut)
			KUNIT_EXPECT_EQ(test, kernel_write(rf, buf, cut, &pos), (ssize_t)cut);
		res = gpumig_mig_set_state(&dst->mig, VFIO_DEVICE_STATE_RUNNING);
		KUNIT_EXPECT_TRUE_MSG(test, IS_ERR(res), "cut at %zu of %zd", cut, n);
		KUNIT_EXPECT_FALSE(test, dst->arch_restored);
		KUNIT_EXPECT_FALSE(test, dst->running);
		fput(rf);
	}
	fput(sf);
	vfree(buf);
}

/* Reset in the middle of pre-copy: files end, state is RUNNING. */
static void mig_reset_mid_precopy(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	enum vfio_device_mig_state st;
	struct file *sf;
	loff_t pos = 0;
	u8 b[16];

	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	gpumig_mig_reset(&f->mig);
	gpumig_mig_get_state(&f->mig, &st);
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RUNNING);
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, sizeof(b), &pos), (ssize_t)-ENODEV);
	KUNIT_EXPECT_FALSE(test, f->tracking);
	/* Deferred: a reset while the state mutex is held runs at unlock. */
	mutex_lock(&f->mig.state_mutex);
	gpumig_mig_reset(&f->mig);
	KUNIT_EXPECT_TRUE(test, f->mig.deferred_reset);
	f->mig.state = VFIO_DEVICE_STATE_STOP;
	mutex_unlock(&f->mig.state_mutex);
	/* The next holder runs the deferred reset when it lets go. */
	gpumig_mig_get_state(&f->mig, &st);
	gpumig_mig_get_state(&f->mig, &st);
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RUNNING);
	KUNIT_EXPECT_FALSE(test, f->mig.deferred_reset);
	fput(sf);
}

static void fake_reset_now(struct fake_dev *f)
{
	gpumig_mig_reset(&f->mig);
}

/*
 * A reset that arrives while a status reader holds the state mutex is
 * deferred, and must be applied when the reader lets go: captured data
 * discarded, the data fd ended, the state RUNNING.
 */
static void mig_reset_during_status_read(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	struct gpumig_mig_status st;
	enum vfio_device_mig_state s;
	struct file *sf;
	loff_t pos = 0;
	u8 b[16];

	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	f->during_count = fake_reset_now;
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_status(&f->mig, &st));
	f->during_count = NULL;
	/* The reader saw the state from before the reset... */
	KUNIT_EXPECT_EQ(test, st.state, VFIO_DEVICE_STATE_PRE_COPY);
	/* ...and the reset took effect when it released the lock. */
	KUNIT_EXPECT_FALSE(test, f->tracking);
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, sizeof(b), &pos), (ssize_t)-ENODEV);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_get_state(&f->mig, &s));
	KUNIT_EXPECT_EQ(test, s, VFIO_DEVICE_STATE_RUNNING);
	fput(sf);
}

/* A source whose VRAM cannot be read, a destination that refuses the state. */
static void mig_backend_failures(struct kunit *test)
{
	struct fake_dev *src = fake_new(test, 2), *dst = fake_new(test, 2);
	u8 *buf = vzalloc(2 * F_VRAM);
	struct file *sf, *rf;
	loff_t pos = 0;
	ssize_t n;
	int last;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(src->vram, 0x9, GPUMIG_BLOCK_SIZE);
	go(test, src, VFIO_DEVICE_STATE_STOP);
	sf = go(test, src, VFIO_DEVICE_STATE_STOP_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	src->fail = FAIL_VRAM_READ;
	pos = 0;
	/* The header comes out; the first block's read fails. */
	KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, 4096, &pos),
			(ssize_t)(sizeof(struct gpumig_sec_hdr) +
				  sizeof(struct gpumig_wire_header)));
	pos = 0;
	KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, 4096, &pos), (ssize_t)-EIO);
	/* Sticky: the failed block left the dirty set, so the stream is broken. */
	src->fail = FAIL_NONE;
	pos = 0;
	KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, 4096, &pos), (ssize_t)-EIO);
	fput(sf);
	/* A new capture works. */
	go(test, src, VFIO_DEVICE_STATE_STOP);
	sf = go(test, src, VFIO_DEVICE_STATE_STOP_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	n = drain(sf, buf, 2 * F_VRAM, &last);
	KUNIT_EXPECT_EQ(test, last, 0);

	go(test, dst, VFIO_DEVICE_STATE_STOP);
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	dst->fail = FAIL_ARCH_RESTORE;
	pos = 0;
	KUNIT_EXPECT_EQ(test, kernel_write(rf, buf, n, &pos), (ssize_t)-EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, strstr(dst->mig.why, "refused the architectural state"));
	KUNIT_EXPECT_TRUE(test, IS_ERR(gpumig_mig_set_state(&dst->mig, VFIO_DEVICE_STATE_RUNNING)));
	KUNIT_EXPECT_FALSE(test, dst->running);
	fput(sf);
	fput(rf);
	vfree(buf);
}

static void mig_teardown_quarantine(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);

	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_teardown(&f->mig));
	KUNIT_EXPECT_FALSE(test, f->mig.quarantined);
	f->fail = FAIL_TEARDOWN;
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_teardown(&f->mig));
	KUNIT_EXPECT_TRUE(test, f->mig.quarantined);
	KUNIT_EXPECT_NOT_NULL(test, strstr(f->mig.why, "quarantined: engine still busy"));
}

/* Every pair of states: the engine reaches the target or fails cleanly. */
static void mig_every_state_pair(struct kunit *test)
{
	static const enum vfio_device_mig_state states[] = {
		VFIO_DEVICE_STATE_STOP, VFIO_DEVICE_STATE_RUNNING,
		VFIO_DEVICE_STATE_STOP_COPY, VFIO_DEVICE_STATE_RESUMING,
		VFIO_DEVICE_STATE_RUNNING_P2P, VFIO_DEVICE_STATE_PRE_COPY,
		VFIO_DEVICE_STATE_PRE_COPY_P2P,
	};
	int i, j;

	for (i = 0; i < ARRAY_SIZE(states); i++) {
		for (j = 0; j < ARRAY_SIZE(states); j++) {
			struct fake_dev *f = fake_new(test, 2);
			enum vfio_device_mig_state st, next;
			struct file *a, *b;
			int valid;

			a = gpumig_mig_set_state(&f->mig, states[i]);
			KUNIT_ASSERT_FALSE(test, IS_ERR(a));
			valid = vfio_mig_get_next_state(&f->vdev, states[i], states[j], &next);
			b = gpumig_mig_set_state(&f->mig, states[j]);
			gpumig_mig_get_state(&f->mig, &st);
			if (valid) {
				/* The uAPI has no path (e.g. STOP_COPY -> PRE_COPY). */
				KUNIT_EXPECT_TRUE(test, IS_ERR(b));
				KUNIT_EXPECT_EQ(test, st, states[i]);
			} else if (IS_ERR(b)) {
				/* Only RESUMING -> anything without a stream may fail. */
				KUNIT_EXPECT_EQ_MSG(test, states[i], VFIO_DEVICE_STATE_RESUMING,
						    "%d -> %d: %ld", states[i], states[j],
						    PTR_ERR(b));
				KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RESUMING);
			} else {
				KUNIT_EXPECT_EQ_MSG(test, st, states[j], "%d -> %d",
						    states[i], states[j]);
				if (b)
					fput(b);
			}
			/* The device runs exactly in RUNNING and the P2P/PRE_COPY states. */
			if (!IS_ERR(b))
				KUNIT_EXPECT_EQ_MSG(test, f->running,
						    st == VFIO_DEVICE_STATE_RUNNING ||
						    st == VFIO_DEVICE_STATE_RUNNING_P2P ||
						    st == VFIO_DEVICE_STATE_PRE_COPY ||
						    st == VFIO_DEVICE_STATE_PRE_COPY_P2P,
						    "%d -> %d", states[i], states[j]);
			if (a)
				fput(a);
		}
	}
}

static struct kunit_case mig_cases[] = {
	KUNIT_CASE(mig_full_migration),
	KUNIT_CASE(mig_stop_failures_keep_running),
	KUNIT_CASE(mig_incompatible_refused_in_precopy),
	KUNIT_CASE(mig_truncated_never_runs),
	KUNIT_CASE(mig_reset_mid_precopy),
	KUNIT_CASE(mig_reset_during_status_read),
	KUNIT_CASE(mig_backend_failures),
	KUNIT_CASE(mig_teardown_quarantine),
	KUNIT_CASE(mig_every_state_pair),
	{}
};

static struct kunit_suite mig_suite = {
	.name = "gpumig_mig",
	.test_cases = mig_cases,
};

kunit_test_suites(&mig_suite);
