// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the migration engine (drivers/gpumig/) with a fake
 * backend that records the order of its calls and can fail any of them.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>

#include <gpumig/compat.h>
#include <gpumig/migration.h>
#include "../drivers/gpumig/engine.h"	/* auto-converge's rule (converge.c) */

#define F_BLOCKS	8
#define F_VRAM		(F_BLOCKS * GPUMIG_BLOCK_SIZE)
#define T_PRODUCER	GPUMIG_NOTE_PRODUCER "gpumig/" GPUMIG_VERSION	/* every stream's note */
#define T_VRAM_DATA_LEN	(sizeof(GPUMIG_NOTE_VRAM_DATA) - 1 + 20)	/* and its second */

enum fake_fail { FAIL_NONE, FAIL_QUIESCE, FAIL_INVALIDATE, FAIL_ARCH_RESTORE,
		 FAIL_TEARDOWN, FAIL_VRAM_READ, FAIL_TRACK, FAIL_SCRUB };

/**
 * struct fake_dev - a device behind the fake backend
 * @vdev: what the engine sees of the VFIO device
 * @mig: the engine's state
 * @vram: F_VRAM bytes
 * @dirty: one bit per block
 * @tracking: VRAM dirty tracking is on
 * @running: the device runs (not quiesced)
 * @arch: architectural state
 * @arch_len: its length
 * @arch_restored: arch_restore was called and accepted
 * @logging: DMA logging is on
 * @log: the order of calls: Q quiesce, U unquiesce, I invalidate, T/t
 *	tracking on/off, r VRAM read, w/z VRAM write/zero, A arch save,
 *	R arch restore, C teardown, S scrub, L/l logging start/stop
 * @name: device name
 * @fail: the op that fails
 * @hw_resets: the guest's resets as hardware counts them (guest_resets)
 * @backed: blocks that hint "not zero" whatever they hold, as simgpu's
 *	hint does for a backed page of zeroes
 * @during_count: called inside vram_dirty_count (an engine lock held)
 * @during_quiesce: called at the end of a quiesce (the state mutex held)
 * @zero_runs: calls of vram_take_zero_run (fake_zero_run_ops only)
 * @place_cap: bytes vram_write_iter copies at most per call
 *	(fake_place_ops only): fewer than asked for is a short copy
 * @place_ret: when not zero, what vram_write_iter returns instead
 * @placed: bytes vram_write_iter copied
 * @written: bytes of data vram_write wrote
 * @throttle: what the last throttle call asked for (fake_throttle_ops)
 * @throttles: throttle calls
 * @absent: the blocks vram_absent was given (the first 64), or ~0UL for a
 *	count other than the device's
 * @absent_hi: blocks 64 to 127 of a 128-block device
 * @absent_calls: vram_absent calls
 * @lost: vram_lose calls
 */
struct fake_dev {
	struct vfio_device vdev;
	struct gpumig_mig *mig;
	u8 *vram;
	unsigned long dirty;
	bool tracking;
	bool running;
	u8 arch[100];
	size_t arch_len;
	bool arch_restored;
	bool logging;
	char log[512];
	char name[32];
	enum fake_fail fail;
	unsigned long backed;
	u32 hw_resets;
	void (*during_count)(struct fake_dev *f);
	void (*during_quiesce)(struct fake_dev *f);
	unsigned int zero_runs;
	size_t place_cap;
	ssize_t place_ret;
	size_t placed;
	size_t written;
	u32 throttle;
	unsigned int throttles;
	unsigned long absent, absent_hi;
	unsigned int absent_calls, lost;
};

static atomic_t fake_seq = ATOMIC_INIT(0);

static struct gpumig_mig *fake_to_mig(struct vfio_device *vdev)
{
	return container_of(vdev, struct fake_dev, vdev)->mig;
}

GPUMIG_DEFINE_VFIO_OPS(fake, fake_to_mig);

static void flog(struct fake_dev *f, char c)
{
	size_t n = strlen(f->log);

	if (n + 1 < sizeof(f->log))
		f->log[n] = c;
}

static int f_quiesce(void *priv)
{
	struct fake_dev *f = priv;

	flog(f, 'Q');
	if (f->fail == FAIL_QUIESCE)
		return -EBUSY;
	f->running = false;
	if (f->during_quiesce)
		f->during_quiesce(f);
	return 0;
}

static void f_unquiesce(void *priv)
{
	struct fake_dev *f = priv;

	flog(f, 'U');
	f->running = true;
}

static int f_invalidate(void *priv)
{
	struct fake_dev *f = priv;

	flog(f, 'I');
	return f->fail == FAIL_INVALIDATE ? -ETIMEDOUT : 0;
}

static int f_track(void *priv, bool on)
{
	struct fake_dev *f = priv;

	flog(f, on ? 'T' : 't');
	if (on && f->fail == FAIL_TRACK)
		return -ENOMEM;
	f->tracking = on;
	f->dirty = on ? (1UL << F_BLOCKS) - 1 : 0;
	return 0;
}

static u32 f_guest_resets(void *priv)
{
	struct fake_dev *f = priv;

	return f->hw_resets;
}

static bool f_block_zero(struct fake_dev *f, unsigned long b)
{
	if (test_bit(b, &f->backed))
		return false;
	return !memchr_inv(f->vram + b * GPUMIG_BLOCK_SIZE, 0, GPUMIG_BLOCK_SIZE);
}

static long f_next_dirty(void *priv, unsigned long from, bool *zero)
{
	struct fake_dev *f = priv;
	unsigned long b = find_next_bit(&f->dirty, F_BLOCKS, from);

	if (b >= F_BLOCKS)
		return -ENOENT;
	clear_bit(b, &f->dirty);
	*zero = f_block_zero(f, b);
	return b;
}

/* Block by block, as a backend with a bitmap does it in one search. */
static unsigned long f_take_zero_run(void *priv, unsigned long from, unsigned long max)
{
	struct fake_dev *f = priv;
	unsigned long b = from;

	f->zero_runs++;
	while (b < F_BLOCKS && b - from < max && test_bit(b, &f->dirty) && f_block_zero(f, b))
		clear_bit(b++, &f->dirty);
	return b - from;
}

static void f_dirty_count(void *priv, unsigned long *nonzero, unsigned long *zero)
{
	struct fake_dev *f = priv;
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

static int f_vram_read(void *priv, u64 off, void *buf, u32 len)
{
	struct fake_dev *f = priv;

	flog(f, 'r');
	if (f->fail == FAIL_VRAM_READ)
		return -EIO;
	memcpy(buf, f->vram + off, len);
	return 0;
}

static int f_vram_write(void *priv, u64 off, const void *buf, u32 len)
{
	struct fake_dev *f = priv;

	flog(f, buf ? 'w' : 'z');
	if (buf) {
		memcpy(f->vram + off, buf, len);
		f->written += len;
	} else {
		memset(f->vram + off, 0, len);
	}
	return 0;
}

/* Straight from the stream into VRAM; short at @place_cap, as a fault. */
static ssize_t f_vram_write_iter(void *priv, u64 off, struct iov_iter *from, u32 len,
				 u32 *crc)
{
	struct fake_dev *f = priv;
	size_t got;

	flog(f, 'p');
	if (f->place_ret)
		return f->place_ret;
	got = copy_from_iter(f->vram + off, min_t(size_t, len, f->place_cap), from);
	*crc = crc32_le(*crc, f->vram + off, got);
	f->placed += got;
	return got;
}

static size_t f_arch_size(void *priv)
{
	struct fake_dev *f = priv;

	return f->arch_len;
}

static ssize_t f_arch_save(void *priv, u32 part, void *buf, size_t len)
{
	struct fake_dev *f = priv;

	flog(f, 'A');
	memcpy(buf, f->arch, f->arch_len);
	return f->arch_len;
}

static int f_arch_restore(void *priv, u32 part, const void *buf, size_t len)
{
	struct fake_dev *f = priv;

	flog(f, 'R');
	if (f->fail == FAIL_ARCH_RESTORE)
		return -EINVAL;
	memcpy(f->arch, buf, len);
	f->arch_len = len;
	f->arch_restored = true;
	return 0;
}

static int f_teardown(void *priv, char *why, size_t len)
{
	struct fake_dev *f = priv;

	flog(f, 'C');
	f->running = false;
	if (f->fail == FAIL_TEARDOWN) {
		snprintf(why, len, "engine still busy");
		return -EBUSY;
	}
	return 0;
}

static int f_scrub(void *priv)
{
	struct fake_dev *f = priv;

	flog(f, 'S');
	if (f->fail == FAIL_SCRUB)
		return -ENODEV;
	memset(f->vram, 0, F_VRAM);
	return 0;
}

static int f_log_start(void *priv, struct rb_root_cached *ranges, u32 nnodes,
		       u64 *page_size)
{
	struct fake_dev *f = priv;

	flog(f, 'L');
	f->logging = true;
	return 0;
}

static void f_log_stop(void *priv)
{
	struct fake_dev *f = priv;

	flog(f, 'l');
	f->logging = false;
}

static int f_log_report(void *priv, u64 iova, u64 len,
			void (*report)(void *ctx, u64 iova, u64 len), void *ctx)
{
	return 0;
}

static const struct gpumig_backend_ops fake_ops = {
	.quiesce = f_quiesce,
	.unquiesce = f_unquiesce,
	.invalidate = f_invalidate,
	.vram_track = f_track,
	.vram_next_dirty = f_next_dirty,
	.vram_dirty_count = f_dirty_count,
	.guest_resets = f_guest_resets,
	.vram_read = f_vram_read,
	.vram_write = f_vram_write,
	.arch_size = f_arch_size,
	.arch_save = f_arch_save,
	.arch_restore = f_arch_restore,
	.teardown = f_teardown,
	.scrub = f_scrub,
	.dma_log_start = f_log_start,
	.dma_log_stop = f_log_stop,
	.dma_log_report = f_log_report,
};

static int f_throttle(void *priv, u32 pct)
{
	struct fake_dev *f = priv;

	WRITE_ONCE(f->throttle, pct);
	WRITE_ONCE(f->throttles, f->throttles + 1);
	return 0;
}

/* The same backend with the optional throttle (auto-converge). */
static struct gpumig_backend_ops fake_throttle_ops;
/* The same backend with the optional vram_take_zero_run. */
static struct gpumig_backend_ops fake_zero_run_ops;
/* The same backend with the optional vram_write_iter. */
static struct gpumig_backend_ops fake_place_ops;

static void fake_free(void *p)
{
	struct fake_dev *f = p;

	gpumig_mig_destroy(f->mig);
	gpumig_quarantine_clear(f->vdev.dev);	/* the record holds the device */
}

static void fake_free_vram(void *p)
{
	vfree(p);
}

static struct fake_dev *fake_new_geo(struct kunit *test, u32 queues,
				     const struct gpumig_backend_ops *ops,
				     const struct gpumig_geometry *geo)
{
	struct fake_dev *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct gpumig_compat c = {
		.type_name = "fake-512K",
		.vram_size = F_VRAM,
		.backend = 0xf0,	/* the fake's own family */
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
	c.nr_queues = queues;
	f->running = true;
	f->arch_len = sizeof(f->arch);
	for (i = 0; i < sizeof(f->arch); i++)
		f->arch[i] = i ^ queues;
	f->mig = gpumig_mig_create(&f->vdev, &fake_vfio_ops, ops, f, &c, geo);
	KUNIT_ASSERT_FALSE(test, IS_ERR(f->mig));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, fake_free, f));
	return f;
}

static struct fake_dev *fake_new_ops(struct kunit *test, u32 queues,
				     const struct gpumig_backend_ops *ops)
{
	return fake_new_geo(test, queues, ops, NULL);
}

static struct fake_dev *fake_new(struct kunit *test, u32 queues)
{
	return fake_new_ops(test, queues, &fake_ops);
}

/* The device's quarantine reason or last refusal. */
static const char *reason(struct kunit *test, struct fake_dev *f)
{
	struct gpumig_mig_status *st = kunit_kzalloc(test, sizeof(*st), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, st);
	gpumig_mig_status(f->mig, st);
	return st->why;
}

static struct file *go(struct kunit *test, struct fake_dev *f, enum vfio_device_mig_state s)
{
	struct file *filp = gpumig_mig_set_state(f->mig, s);

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
	const struct gpumig_sec_hdr *note;
	struct vfio_precopy_info info;
	struct gpumig_mig_status st;
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
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_data_size(src->mig, &est));
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
	KUNIT_EXPECT_STREQ(test, src->log, "QI");	/* quiesce before invalidate */
	KUNIT_EXPECT_FALSE(test, src->running);
	n2 = drain(sf, stream + n, 2 * F_VRAM - n, &last);
	KUNIT_EXPECT_EQ(test, last, 0);			/* EOF, never ENOMSG */
	KUNIT_EXPECT_STREQ(test, src->log, "QIrA");	/* the delta, then arch */
	/* The estimate before STOP_COPY is what STOP_COPY produced. */
	KUNIT_EXPECT_EQ(test, (unsigned long)n2, est);
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));

	/* The second section names the producer: this release. */
	note = (const void *)(stream + sizeof(*note) + sizeof(struct gpumig_wire_header));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(note->type), GPUMIG_SEC_NOTE);
	KUNIT_ASSERT_EQ(test, le32_to_cpu(note->len), (u32)strlen(T_PRODUCER));
	KUNIT_EXPECT_EQ(test, 0, memcmp(note + 1, T_PRODUCER, strlen(T_PRODUCER)));
	/* The third, what the first pass sends: blocks 0 and 3 hold data. */
	note = (const void *)((const u8 *)(note + 1) + strlen(T_PRODUCER));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(note->type), GPUMIG_SEC_NOTE);
	KUNIT_ASSERT_EQ(test, le32_to_cpu(note->len), (u32)T_VRAM_DATA_LEN);
	KUNIT_EXPECT_EQ(test, 0, memcmp(note + 1, GPUMIG_NOTE_VRAM_DATA "00000000000000000002",
					T_VRAM_DATA_LEN));

	/* Destination. */
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	memset(dst->log, 0, sizeof(dst->log));
	w = kernel_write(rf, stream, n + n2, &pos);
	KUNIT_EXPECT_EQ(test, w, n + n2);
	gpumig_mig_status(dst->mig, &st);
	KUNIT_EXPECT_STREQ(test, st.source, "gpumig/" GPUMIG_VERSION);
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

/*
 * An operator's cap on the stream version: under 1.0 the device writes a
 * 1.0 header and a zero chunk per zero block (no ranges), exactly what
 * MIG_DATA_SIZE said, and the stream restores; the cap is refused during
 * a migration and for a version the engine cannot write; the descriptor
 * says what the device writes.
 */
static void mig_stream_cap(struct kunit *test)
{
	struct fake_dev *src = fake_new(test, 4), *dst = fake_new(test, 4);
	u8 *stream = vzalloc(2 * F_VRAM);
	char *line = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	struct gpumig_wire_header h;
	size_t off, zero_chunks = 0, ranges = 0;
	struct file *sf, *rf;
	unsigned long est;
	ssize_t n, n2;
	loff_t pos = 0;
	int last;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	KUNIT_ASSERT_NOT_NULL(test, line);
	KUNIT_EXPECT_EQ(test, gpumig_mig_stream_max(src->mig), (u16)GPUMIG_STREAM_MINOR);
	gpumig_mig_compat_show(src->mig, line);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(line, "stream=1.1 "), "%s", line);
	KUNIT_EXPECT_EQ(test, gpumig_mig_set_stream_max(src->mig, GPUMIG_STREAM_MINOR + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, gpumig_mig_set_stream_max(src->mig, 0), 0);
	gpumig_mig_compat_show(src->mig, line);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(line, "stream=1.0 "), "%s", line);

	memset(src->vram, 0x11, GPUMIG_BLOCK_SIZE);		/* block 0; 1-7 zero */
	sf = go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	KUNIT_EXPECT_EQ(test, gpumig_mig_set_stream_max(src->mig, 1), -EBUSY);
	n = drain(sf, stream, 2 * F_VRAM, &last);
	memset(src->vram + 6 * GPUMIG_BLOCK_SIZE, 0x66, 10);
	set_bit(6, &src->dirty);
	set_bit(7, &src->dirty);				/* zero, dirty again */
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_PRE_COPY_P2P));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_data_size(src->mig, &est));
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
	n2 = drain(sf, stream + n, 2 * F_VRAM - n, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	KUNIT_EXPECT_EQ(test, (unsigned long)n2, est);
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));
	memcpy(&h, stream + sizeof(struct gpumig_sec_hdr), sizeof(h));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(h.minor), 0);
	for (off = 0; off + sizeof(struct gpumig_sec_hdr) <= n + n2;) {
		const struct gpumig_sec_hdr *sh = (const void *)(stream + off);
		const struct gpumig_wire_vram *v = (const void *)(sh + 1);

		if (le16_to_cpu(sh->type) == GPUMIG_SEC_ZERO)
			ranges++;
		if (le16_to_cpu(sh->type) == GPUMIG_SEC_VRAM &&
		    le32_to_cpu(v->flags) & GPUMIG_VRAM_ZERO)
			zero_chunks++;
		off += sizeof(*sh) + le32_to_cpu(sh->len);
	}
	KUNIT_EXPECT_EQ(test, ranges, (size_t)0);
	KUNIT_EXPECT_EQ(test, zero_chunks, (size_t)(F_BLOCKS - 1 + 1));	/* 1-7, then 7 */

	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	KUNIT_EXPECT_EQ(test, kernel_write(rf, stream, n + n2, &pos), n + n2);
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	KUNIT_EXPECT_EQ(test, 0, memcmp(dst->vram, src->vram, F_VRAM));
	/* The cap may change again once the migration is over. */
	KUNIT_EXPECT_EQ(test, gpumig_mig_set_stream_max(src->mig, GPUMIG_STREAM_MINOR), 0);
	fput(sf);
	fput(rf);
	vfree(stream);
}

/*
 * QEMU switches over as soon as what is pending fits its downtime limit,
 * possibly before it read any pre-copy data, or halfway through a
 * section: STOP_COPY then goes on from wherever the reader stopped, and
 * the whole stream restores exactly.
 */
static void mig_early_switchover(struct kunit *test)
{
	static const size_t first[] = { 0, 1, 100, 4096 + 7 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(first); i++) {
		struct fake_dev *src = fake_new(test, 4), *dst = fake_new(test, 4);
		u8 *stream = vzalloc(2 * F_VRAM);
		struct file *sf, *rf;
		ssize_t n = 0, n2, w;
		loff_t pos = 0;
		int last;

		KUNIT_ASSERT_NOT_NULL(test, stream);
		memset(src->vram, 0x11, GPUMIG_BLOCK_SIZE);
		memset(src->vram + 3 * GPUMIG_BLOCK_SIZE, 0x33, 100);
		src->arch[1] = 0x5a + i;	/* not what dst starts with */
		sf = go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
		KUNIT_ASSERT_NOT_NULL(test, sf);
		if (first[i])
			n = kernel_read(sf, stream, first[i], &pos);
		KUNIT_EXPECT_EQ_MSG(test, n, (ssize_t)first[i], "first read of %zu", first[i]);
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_PRE_COPY_P2P));
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
		n2 = drain(sf, stream + n, 2 * F_VRAM - n, &last);
		KUNIT_EXPECT_EQ(test, last, 0);
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));

		KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
		rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
		KUNIT_ASSERT_NOT_NULL(test, rf);
		pos = 0;
		w = kernel_write(rf, stream, n + n2, &pos);
		KUNIT_EXPECT_EQ_MSG(test, w, n + n2, "first read of %zu", first[i]);
		KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
		KUNIT_EXPECT_EQ(test, 0, memcmp(dst->vram, src->vram, F_VRAM));
		KUNIT_EXPECT_EQ(test, 0, memcmp(dst->arch, src->arch, sizeof(src->arch)));
		KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_RUNNING));
		KUNIT_EXPECT_TRUE(test, dst->running);
		fput(sf);
		fput(rf);
		vfree(stream);
	}
}

/*
 * VRAM laid out as data, zero runs and a block that hints data but holds
 * zeroes, migrated with a pre-copy round that zeroes a data block: a
 * backend that takes zero runs at once (vram_take_zero_run) produces the
 * very stream of one found block by block, and it restores exactly.
 */
static void mig_zero_runs_whole(struct kunit *test)
{
	struct fake_dev *a, *b, *dst;
	struct file *af, *bf, *rf;
	ssize_t na, nb, w;
	loff_t pos = 0;
	u8 *sa, *sb;
	int last, i;

	fake_zero_run_ops = fake_ops;
	fake_zero_run_ops.vram_take_zero_run = f_take_zero_run;
	a = fake_new(test, 4);
	b = fake_new_ops(test, 4, &fake_zero_run_ops);
	dst = fake_new(test, 4);
	sa = vzalloc(2 * F_VRAM);
	sb = vzalloc(2 * F_VRAM);
	KUNIT_ASSERT_NOT_NULL(test, sa);
	KUNIT_ASSERT_NOT_NULL(test, sb);
	for (i = 0; i < 2; i++) {
		struct fake_dev *f = i ? b : a;

		/* 0: data, 1-3: zero, 4: hints data, holds zeroes, 5: zero, 6: data, 7: zero */
		memset(f->vram, 0x11, GPUMIG_BLOCK_SIZE);
		memset(f->vram + 6 * GPUMIG_BLOCK_SIZE + 7, 0x66, 9);
		f->backed = BIT(4);
	}
	af = go(test, a, VFIO_DEVICE_STATE_PRE_COPY);
	bf = go(test, b, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, af);
	KUNIT_ASSERT_NOT_NULL(test, bf);
	na = drain(af, sa, 2 * F_VRAM, &last);
	KUNIT_EXPECT_EQ(test, last, -ENOMSG);
	nb = drain(bf, sb, 2 * F_VRAM, &last);
	KUNIT_EXPECT_EQ(test, last, -ENOMSG);
	KUNIT_EXPECT_EQ(test, b->zero_runs, 3U);	/* runs at 1, 5 and 7 */
	/* Block 0 is zeroed: it and block 1 go again, as one run. */
	for (i = 0; i < 2; i++) {
		struct fake_dev *f = i ? b : a;

		memset(f->vram, 0, GPUMIG_BLOCK_SIZE);
		f->dirty |= BIT(0) | BIT(1);
	}
	KUNIT_EXPECT_NULL(test, go(test, a, VFIO_DEVICE_STATE_STOP_COPY));
	KUNIT_EXPECT_NULL(test, go(test, b, VFIO_DEVICE_STATE_STOP_COPY));
	na += drain(af, sa + na, 2 * F_VRAM - na, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	nb += drain(bf, sb + nb, 2 * F_VRAM - nb, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	KUNIT_EXPECT_EQ(test, b->zero_runs, 4U);
	KUNIT_EXPECT_EQ(test, a->zero_runs, 0U);
	KUNIT_EXPECT_EQ(test, na, nb);
	KUNIT_EXPECT_EQ(test, 0, memcmp(sa, sb, min(na, nb)));

	memset(dst->vram, 0x77, F_VRAM);
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	w = kernel_write(rf, sb, nb, &pos);
	KUNIT_EXPECT_EQ(test, w, nb);
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	KUNIT_EXPECT_EQ(test, 0, memcmp(dst->vram, b->vram, F_VRAM));
	fput(rf);
	fput(af);
	fput(bf);
	vfree(sa);
	vfree(sb);
}

/*
 * A destination that takes VRAM chunk data straight from the stream
 * (vram_write_iter): whole, short at a fault (the rest of that chunk then
 * goes through the engine's buffer and vram_write), or not at all, in
 * writes of any size; VRAM ends exactly as the source's, and the stream's
 * checksums still hold.  A backend that fails or overruns the copy has
 * the stream refused.
 */
static void mig_resume_placed(struct kunit *test)
{
	static const size_t caps[] = { SIZE_MAX, 0, 1000, 4096 + 3 };
	static const size_t writes[] = { SIZE_MAX, 7000, 100 };
	struct fake_dev *src = fake_new(test, 4);
	u8 *stream = vzalloc(2 * F_VRAM);
	struct gpumig_mig_status st;
	struct file *sf, *rf;
	unsigned int i, j;
	ssize_t n, w;
	loff_t pos;
	int last;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	fake_place_ops = fake_ops;
	fake_place_ops.vram_write_iter = f_vram_write_iter;
	for (i = 0; i < F_VRAM; i += 4)
		*(u32 *)(src->vram + i) = i * 2654435761U;
	memset(src->vram + 2 * GPUMIG_BLOCK_SIZE, 0, GPUMIG_BLOCK_SIZE);	/* a zero chunk */
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));
	sf = go(test, src, VFIO_DEVICE_STATE_STOP_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	n = drain(sf, stream, 2 * F_VRAM, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	fput(sf);

	for (i = 0; i < ARRAY_SIZE(caps); i++) {
		for (j = 0; j < ARRAY_SIZE(writes); j++) {
			struct fake_dev *dst = fake_new_ops(test, 4, &fake_place_ops);
			ssize_t off = 0;

			dst->place_cap = caps[i];
			memset(dst->vram, 0x77, F_VRAM);
			KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
			rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
			KUNIT_ASSERT_NOT_NULL(test, rf);
			memset(dst->log, 0, sizeof(dst->log));
			while (off < n) {
				size_t step = min_t(size_t, n - off, writes[j]);

				pos = 0;
				w = kernel_write(rf, stream + off, step, &pos);
				if (w <= 0)
					break;
				off += w;
			}
			KUNIT_EXPECT_EQ_MSG(test, off, n, "cap %zu, writes of %zu", caps[i],
					    writes[j]);
			KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
			KUNIT_EXPECT_EQ_MSG(test, 0, memcmp(dst->vram, src->vram, F_VRAM),
					    "cap %zu, writes of %zu", caps[i], writes[j]);
			/*
			 * Placed where it could be; through the buffer where a
			 * copy fell short: 7 of the 8 blocks hold data.
			 */
			KUNIT_EXPECT_EQ(test, dst->placed + dst->written,
					(size_t)7 * GPUMIG_BLOCK_SIZE);
			if (caps[i] >= writes[j]) {
				KUNIT_EXPECT_EQ(test, dst->written, (size_t)0);
			} else {
				KUNIT_EXPECT_GT(test, dst->written, (size_t)0);
				if (caps[i])
					KUNIT_EXPECT_GT(test, dst->placed, (size_t)0);
			}
			gpumig_mig_status(dst->mig, &st);
			KUNIT_EXPECT_EQ(test, st.resumed_bytes, (u64)n);
			KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_RUNNING));
			fput(rf);
		}
	}

	/* A backend that fails the copy, or claims more than it was given. */
	for (i = 0; i < 2; i++) {
		struct fake_dev *dst = fake_new_ops(test, 4, &fake_place_ops);

		dst->place_ret = i ? 1 << 30 : -EIO;
		KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
		rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
		KUNIT_ASSERT_NOT_NULL(test, rf);
		pos = 0;
		KUNIT_EXPECT_EQ(test, kernel_write(rf, stream, n, &pos), (ssize_t)-EIO);
		KUNIT_EXPECT_NOT_NULL(test, strstr(reason(test, dst),
						   "refused by the destination"));
		sf = gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_RUNNING);
		KUNIT_EXPECT_TRUE(test, IS_ERR(sf));
		/* The file stays refused: a later write places nothing. */
		memset(dst->log, 0, sizeof(dst->log));
		pos = 0;
		KUNIT_EXPECT_LT(test, kernel_write(rf, stream, n, &pos), 0);
		KUNIT_EXPECT_NULL(test, strchr(dst->log, 'p'));
		fput(rf);
	}
	vfree(stream);
}

/*
 * A source that cannot quiesce stays RUNNING (the way to STOP fails at
 * RUNNING_P2P, the first arc that stops its DMA); one whose invalidation
 * is not acknowledged stays in RUNNING_P2P, quiesced.  Either goes back
 * to RUNNING and runs.
 */
static void mig_stop_failures_keep_running(struct kunit *test)
{
	static const enum fake_fail fails[] = { FAIL_QUIESCE, FAIL_INVALIDATE };
	int i;

	for (i = 0; i < ARRAY_SIZE(fails); i++) {
		struct fake_dev *f = fake_new(test, 2);
		bool inval = fails[i] == FAIL_INVALIDATE;
		struct file *filp;
		enum vfio_device_mig_state st;

		f->fail = fails[i];
		filp = gpumig_mig_set_state(f->mig, VFIO_DEVICE_STATE_STOP);
		KUNIT_EXPECT_TRUE(test, IS_ERR(filp));
		gpumig_mig_get_state(f->mig, &st);
		KUNIT_EXPECT_EQ(test, st, inval ? VFIO_DEVICE_STATE_RUNNING_P2P :
						  VFIO_DEVICE_STATE_RUNNING);
		KUNIT_EXPECT_EQ(test, f->running, !inval);
		KUNIT_EXPECT_NE(test, reason(test, f)[0], '\0');
		KUNIT_EXPECT_STREQ(test, f->log, inval ? "QI" : "Q");
		/* And it can still go back to RUNNING. */
		KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING));
		KUNIT_EXPECT_TRUE(test, f->running);
		KUNIT_EXPECT_STREQ(test, f->log, inval ? "QIU" : "Q");
	}
}

/*
 * The P2P states stop the device's own DMA (simgpu cannot tell a peer's
 * BAR from memory, so all of it) while it stays a target: QEMU moves every
 * device of a VM to RUNNING_P2P before it stops any, and a device that
 * still wrote a peer's memory then would lose those writes.  Pre-copy
 * data still flows in PRE_COPY_P2P; leaving a P2P state runs again.
 */
static void mig_p2p_quiesces(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	struct file *sf;
	u8 buf[256];
	loff_t pos = 0;

	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING_P2P));
	KUNIT_EXPECT_FALSE(test, f->running);
	KUNIT_EXPECT_STREQ(test, f->log, "Q");
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING));
	KUNIT_EXPECT_TRUE(test, f->running);
	KUNIT_EXPECT_STREQ(test, f->log, "QU");
	/* STOP and back through RUNNING_P2P: quiesced in between, once. */
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_STOP));
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING_P2P));
	KUNIT_EXPECT_FALSE(test, f->running);
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING));
	KUNIT_EXPECT_TRUE(test, f->running);
	KUNIT_EXPECT_STREQ(test, f->log, "QUQIU");

	memset(f->log, 0, sizeof(f->log));
	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	KUNIT_EXPECT_TRUE(test, f->running);
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_PRE_COPY_P2P));
	KUNIT_EXPECT_FALSE(test, f->running);
	KUNIT_EXPECT_GT(test, kernel_read(sf, buf, sizeof(buf), &pos), 0);
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_PRE_COPY));
	KUNIT_EXPECT_TRUE(test, f->running);
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING));
	fput(sf);
	/* A device that cannot quiesce refuses RUNNING_P2P and runs on. */
	f->fail = FAIL_QUIESCE;
	KUNIT_EXPECT_TRUE(test, IS_ERR(gpumig_mig_set_state(f->mig,
							    VFIO_DEVICE_STATE_RUNNING_P2P)));
	KUNIT_EXPECT_TRUE(test, f->running);
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
	KUNIT_EXPECT_NOT_NULL(test, strstr(reason(test, dst), "queue count: source has 8"));
	/* The source never stopped. */
	KUNIT_EXPECT_TRUE(test, src->running);
	KUNIT_EXPECT_NULL(test, strchr(src->log, 'Q'));
	/* The destination refuses to leave RESUMING. */
	KUNIT_EXPECT_TRUE(test, IS_ERR(gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_STOP)));
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
		res = gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_RUNNING);
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
	gpumig_mig_reset(f->mig);
	gpumig_mig_get_state(f->mig, &st);
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RUNNING);
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, sizeof(b), &pos), (ssize_t)-ENODEV);
	KUNIT_EXPECT_FALSE(test, f->tracking);
	fput(sf);
}

/* The device's own reset, as VFIO_DEVICE_RESET does it: engine, then device. */
static void fake_reset_now(struct fake_dev *f)
{
	gpumig_mig_reset(f->mig);
	f->running = true;
}

/*
 * A reset that arrives while the state machine holds the state mutex (here
 * inside quiesce, on the way to STOP_COPY) is deferred: the arc completes,
 * then the reset runs when the state mutex is released.
 */
static void mig_reset_during_transition(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	enum vfio_device_mig_state st;
	struct file *sf;
	loff_t pos = 0;
	u8 b[16];

	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	f->during_quiesce = fake_reset_now;
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_STOP_COPY));
	f->during_quiesce = NULL;
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_get_state(f->mig, &st));
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RUNNING);
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, sizeof(b), &pos), (ssize_t)-ENODEV);
	KUNIT_EXPECT_FALSE(test, f->tracking);
	KUNIT_EXPECT_TRUE(test, f->running);
	/* And a migration works again from there. */
	fput(sf);
	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_EXPECT_NOT_NULL(test, sf);
	if (sf)
		fput(sf);
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
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_status(f->mig, &st));
	f->during_count = NULL;
	/* The reader saw the state from before the reset... */
	KUNIT_EXPECT_EQ(test, st.state, VFIO_DEVICE_STATE_PRE_COPY);
	/* ...and the reset took effect when it released the lock. */
	KUNIT_EXPECT_FALSE(test, f->tracking);
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, sizeof(b), &pos), (ssize_t)-ENODEV);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_get_state(f->mig, &s));
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
	/* The header and the two notes come out; the first block's read fails. */
	KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, 4096, &pos),
			(ssize_t)(3 * sizeof(struct gpumig_sec_hdr) +
				  sizeof(struct gpumig_wire_header) + strlen(T_PRODUCER) +
				  T_VRAM_DATA_LEN));
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
	KUNIT_EXPECT_NOT_NULL(test, strstr(reason(test, dst), "refused the architectural state"));
	KUNIT_EXPECT_TRUE(test, IS_ERR(gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_RUNNING)));
	KUNIT_EXPECT_FALSE(test, dst->running);
	fput(sf);
	fput(rf);
	vfree(buf);
}

/* Close: quiesce, invalidate, teardown, then scrub; a failure quarantines. */
static void mig_close_scrub_or_quarantine(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	struct gpumig_mig_status st;

	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_open(f->mig));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_close(f->mig));
	/* Logging is stopped before the device is made inert. */
	KUNIT_EXPECT_STREQ(test, f->log, "lQICS");
	gpumig_mig_status(f->mig, &st);
	KUNIT_EXPECT_FALSE(test, st.quarantined);

	memset(f->log, 0, sizeof(f->log));
	memset(f->vram, 0x5a, GPUMIG_BLOCK_SIZE);
	f->fail = FAIL_TEARDOWN;
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_close(f->mig));
	KUNIT_EXPECT_STREQ(test, f->log, "lQIC");	/* no scrub: memory kept */
	KUNIT_EXPECT_EQ(test, f->vram[0], 0x5a);
	gpumig_mig_status(f->mig, &st);
	KUNIT_EXPECT_TRUE(test, st.quarantined);
	KUNIT_EXPECT_NOT_NULL(test, strstr(st.why, "quarantined: engine still busy"));
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_open(f->mig));

	/* The operator lifts it: scrubbed first, then usable. */
	f->fail = FAIL_NONE;
	memset(f->log, 0, sizeof(f->log));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_unquarantine(f->mig));
	KUNIT_EXPECT_STREQ(test, f->log, "S");
	KUNIT_EXPECT_EQ(test, f->vram[0], 0);
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_mig_unquarantine(f->mig));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_open(f->mig));

	/* An invalidation that is never acknowledged quarantines too. */
	f->fail = FAIL_INVALIDATE;
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_close(f->mig));
	gpumig_mig_status(f->mig, &st);
	KUNIT_EXPECT_NOT_NULL(test, strstr(st.why, "invalidation not acknowledged"));
}

/* A scrub that fails quarantines; lifting the quarantine needs a scrub. */
static void mig_scrub_failure(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);

	memset(f->vram, 0x5a, GPUMIG_BLOCK_SIZE);
	f->fail = FAIL_SCRUB;
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_open(f->mig));
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_close(f->mig));
	KUNIT_EXPECT_STREQ(test, f->log, "lQICS");
	KUNIT_EXPECT_NOT_NULL(test, strstr(reason(test, f),
					   "quarantined: memory could not be scrubbed"));
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_open(f->mig));
	/* Still failing: the quarantine stays. */
	KUNIT_EXPECT_EQ(test, -ENODEV, gpumig_mig_unquarantine(f->mig));
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_open(f->mig));
	KUNIT_EXPECT_EQ(test, f->vram[0], 0x5a);
	f->fail = FAIL_NONE;
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_unquarantine(f->mig));
	KUNIT_EXPECT_EQ(test, f->vram[0], 0);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_open(f->mig));
}

/*
 * The backend's services end (a VF's PF driver went away): the streams in
 * flight fail at once with the given error and the reason is reported; a
 * cancel still works and a new migration fails where the backend fails.
 */
static void mig_abort(struct kunit *test)
{
	struct fake_dev *src = fake_new(test, 2), *dst = fake_new(test, 2);
	struct file *sf, *rf;
	loff_t pos = 0;
	u8 b[64];

	sf = go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, 16, &pos), (ssize_t)16);
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);

	gpumig_mig_abort(src->mig, -ENODEV, "the PF's driver was removed");
	gpumig_mig_abort(dst->mig, -ENODEV, "the PF's driver was removed");
	pos = 0;
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, sizeof(b), &pos), (ssize_t)-ENODEV);
	pos = 0;
	KUNIT_EXPECT_EQ(test, kernel_write(rf, b, 16, &pos), (ssize_t)-ENODEV);
	KUNIT_EXPECT_STREQ(test, reason(test, src),
			   "migration aborted: the PF's driver was removed");
	/* A half-restored device never runs. */
	KUNIT_EXPECT_TRUE(test, IS_ERR(gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_STOP)));
	KUNIT_EXPECT_FALSE(test, dst->arch_restored);
	/* The source can be cancelled back to RUNNING. */
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_RUNNING));
	KUNIT_EXPECT_TRUE(test, src->running);
	fput(sf);
	fput(rf);
}

/* Closing mid-migration ends the data fd before the teardown. */
static void mig_close_mid_migration(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	struct file *sf;
	loff_t pos = 0;
	u8 b[16];

	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	memset(f->log, 0, sizeof(f->log));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_close(f->mig));
	KUNIT_EXPECT_STREQ(test, f->log, "tlQICS");
	KUNIT_EXPECT_EQ(test, kernel_read(sf, b, sizeof(b), &pos), (ssize_t)-ENODEV);
	fput(sf);
}

/* VRAM tracking that cannot start fails the arc; nothing is half started. */
static void mig_track_failure(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	enum vfio_device_mig_state st;
	struct file *sf;

	f->fail = FAIL_TRACK;
	sf = gpumig_mig_set_state(f->mig, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(sf), -ENOMEM);
	gpumig_mig_get_state(f->mig, &st);
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RUNNING);
	KUNIT_EXPECT_NOT_NULL(test, strstr(reason(test, f), "VRAM dirty tracking"));
	KUNIT_EXPECT_TRUE(test, f->running);
	sf = gpumig_mig_set_state(f->mig, VFIO_DEVICE_STATE_STOP_COPY);
	KUNIT_EXPECT_TRUE(test, IS_ERR(sf));
	gpumig_mig_get_state(f->mig, &st);
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_STOP);
	f->fail = FAIL_NONE;
	sf = go(test, f, VFIO_DEVICE_STATE_STOP_COPY);
	KUNIT_EXPECT_NOT_NULL(test, sf);
	if (sf)
		fput(sf);
}

/* The status's pending bytes are what PRECOPY_INFO says, initial plus dirty. */
static void mig_status_pending(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	struct vfio_precopy_info info;
	struct gpumig_mig_status st;
	struct file *sf;
	loff_t pos = 0;
	u8 *buf = kunit_kzalloc(test, 3000, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(f->vram + 2 * GPUMIG_BLOCK_SIZE, 1, 10);
	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	/* Part of the header, then part of the first blocks. */
	KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, 50, &pos), (ssize_t)50);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	gpumig_mig_status(f->mig, &st);
	KUNIT_EXPECT_EQ(test, st.pending_bytes, info.initial_bytes + info.dirty_bytes);
	KUNIT_EXPECT_EQ(test, info.dirty_bytes, 0ULL);
	KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, 3000, &pos), (ssize_t)3000);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	gpumig_mig_status(f->mig, &st);
	KUNIT_EXPECT_EQ(test, st.pending_bytes, info.initial_bytes + info.dirty_bytes);
	KUNIT_EXPECT_EQ(test, st.state, VFIO_DEVICE_STATE_PRE_COPY);
	fput(sf);
}

/*
 * A block counted at full size that turns out to hold zeroes is sent as a
 * short zero section: what remains of the first pass must shrink with
 * what was counted, so PRECOPY_INFO still adds up to the pending bytes.
 */
static void mig_status_pending_zero_hint(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 4);
	struct vfio_precopy_info info;
	struct gpumig_mig_status st;
	struct file *sf;
	loff_t pos = 0;
	size_t room = 4 * GPUMIG_BLOCK_SIZE;
	u8 *buf = kunit_kzalloc(test, room, GFP_KERNEL);
	u64 full = gpumig_vram_section_size(GPUMIG_BLOCK_SIZE, false);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	f->backed = 0x3f;			/* blocks 0-5: backed, all zero */
	memset(f->vram + 6 * GPUMIG_BLOCK_SIZE, 1, 10);
	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_GE(test, info.initial_bytes, 7 * full);
	/* The header and the six short sections of blocks 0-5, a bit more. */
	for (i = 0; i < 7; i++) {
		KUNIT_EXPECT_GT(test, kernel_read(sf, buf, 200, &pos), 0);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		gpumig_mig_status(f->mig, &st);
		KUNIT_EXPECT_EQ(test, st.pending_bytes, info.initial_bytes + info.dirty_bytes);
		KUNIT_EXPECT_EQ(test, info.dirty_bytes, 0ULL);
	}
	KUNIT_EXPECT_LT(test, info.initial_bytes, 3 * full);
	/* Block 0, already sent, changes: that is dirty, not initial. */
	memset(f->vram, 2, 10);
	set_bit(0, &f->dirty);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_EQ(test, info.dirty_bytes, full);
	fput(sf);
}

/*
 * The guest re-initialises the device during PRE_COPY: with the VMM's
 * PRECOPY_INFOv2 opt-in, the next PRECOPY_INFO says REINIT once, with all
 * that is pending as initial bytes; without it, nothing changes.
 */
static void mig_precopy_reinit(struct kunit *test)
{
#ifdef VFIO_PRECOPY_INFO_REINIT
	u64 full = gpumig_vram_section_size(GPUMIG_BLOCK_SIZE, false);
	struct vfio_precopy_info info;
	int v2, last;

	for (v2 = 0; v2 <= 1; v2++) {
		struct fake_dev *f = fake_new(test, 2);
		u8 *buf = kunit_kzalloc(test, F_VRAM * 2, GFP_KERNEL);
		struct file *sf;
		loff_t pos = 0;

		KUNIT_ASSERT_NOT_NULL(test, buf);
		f->vdev.precopy_info_v2 = v2;
		memset(f->vram, 1, 10);
		/* Before pre-copy: part of the first pass, no REINIT. */
		gpumig_mig_reconfigured(f->mig);
		sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
		KUNIT_ASSERT_NOT_NULL(test, sf);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		KUNIT_EXPECT_EQ(test, info.flags, 0U);
		drain(sf, buf, F_VRAM * 2, &last);
		KUNIT_EXPECT_EQ(test, last, -ENOMSG);

		/* The guest resets the device and writes two blocks. */
		gpumig_mig_reconfigured(f->mig);
		memset(f->vram + 2 * GPUMIG_BLOCK_SIZE, 2, 10);
		memset(f->vram + 3 * GPUMIG_BLOCK_SIZE, 3, 10);
		set_bit(2, &f->dirty);
		set_bit(3, &f->dirty);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		if (v2) {
			KUNIT_EXPECT_EQ(test, info.flags, (u32)VFIO_PRECOPY_INFO_REINIT);
			KUNIT_EXPECT_EQ(test, info.initial_bytes, 2 * full);
			KUNIT_EXPECT_EQ(test, info.dirty_bytes, 0ULL);
		} else {
			KUNIT_EXPECT_EQ(test, info.flags, 0U);
			KUNIT_EXPECT_EQ(test, info.initial_bytes, 0ULL);
			KUNIT_EXPECT_EQ(test, info.dirty_bytes, 2 * full);
		}
		/* Once: the next answer has no flag, and reads count down. */
		KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, 100, &pos), (ssize_t)100);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		KUNIT_EXPECT_EQ(test, info.flags, 0U);
		KUNIT_EXPECT_EQ(test, info.initial_bytes, v2 ? 2 * full - 100 : 0ULL);
		/* A block dirtied now is dirty, not initial. */
		memset(f->vram + 5 * GPUMIG_BLOCK_SIZE, 5, 10);
		set_bit(5, &f->dirty);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		KUNIT_EXPECT_EQ(test, info.dirty_bytes, v2 ? full : 3 * full - 100);
		drain(sf, buf, F_VRAM * 2, &last);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		KUNIT_EXPECT_EQ(test, info.initial_bytes + info.dirty_bytes, 0ULL);
		/* With nothing pending, said at once all the same. */
		gpumig_mig_reconfigured(f->mig);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		KUNIT_EXPECT_EQ(test, info.flags, v2 ? (u32)VFIO_PRECOPY_INFO_REINIT : 0U);
		KUNIT_EXPECT_EQ(test, info.initial_bytes + info.dirty_bytes, 0ULL);
		/* A reset the hardware counted (a VF's PF): the same, once. */
		f->hw_resets++;
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		KUNIT_EXPECT_EQ(test, info.flags, v2 ? (u32)VFIO_PRECOPY_INFO_REINIT : 0U);
		KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
		KUNIT_EXPECT_EQ(test, info.flags, 0U);
		fput(sf);
	}
#else
	kunit_skip(test, "the kernel has no VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2");
#endif
}

/* DMA logging goes to the backend under the engine; stopped at close. */
static void mig_dma_log_routing(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	struct rb_root_cached ranges = RB_ROOT_CACHED;
	u64 ps = 4096;

	if (!gpumig_dma_logging_supported()) {
		KUNIT_EXPECT_NULL(test, f->vdev.log_ops);
		KUNIT_EXPECT_EQ(test, -EOPNOTSUPP, gpumig_log_start(f->mig, &ranges, 0, &ps));
		return;
	}
	KUNIT_EXPECT_PTR_EQ(test, f->vdev.log_ops, &fake_vfio_ops.log);
	KUNIT_EXPECT_EQ(test, 0, f->vdev.log_ops->log_start(&f->vdev, &ranges, 0, &ps));
	KUNIT_EXPECT_TRUE(test, f->logging);
	KUNIT_EXPECT_EQ(test, 0, f->vdev.log_ops->log_stop(&f->vdev));
	KUNIT_EXPECT_FALSE(test, f->logging);
	KUNIT_EXPECT_EQ(test, 0, gpumig_log_start(f->mig, &ranges, 0, &ps));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_close(f->mig));
	KUNIT_EXPECT_FALSE(test, f->logging);
	KUNIT_EXPECT_STREQ(test, f->log, "LlLlQICS");
}

static const enum vfio_device_mig_state mig_states[] = {
	VFIO_DEVICE_STATE_STOP, VFIO_DEVICE_STATE_RUNNING,
	VFIO_DEVICE_STATE_STOP_COPY, VFIO_DEVICE_STATE_RESUMING,
	VFIO_DEVICE_STATE_RUNNING_P2P, VFIO_DEVICE_STATE_PRE_COPY,
	VFIO_DEVICE_STATE_PRE_COPY_P2P,
};

struct mig_pair {
	enum vfio_device_mig_state from;
	enum vfio_device_mig_state to;
};

static struct mig_pair mig_pairs[ARRAY_SIZE(mig_states) * ARRAY_SIZE(mig_states)];

static void mig_pair_desc(struct mig_pair *p, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s -> %s", gpumig_state_name(p->from),
		 gpumig_state_name(p->to));
}

KUNIT_ARRAY_PARAM(mig_pair, mig_pairs, mig_pair_desc);

static int mig_suite_init(struct kunit_suite *suite)
{
	int i, j;

	for (i = 0; i < ARRAY_SIZE(mig_states); i++) {
		for (j = 0; j < ARRAY_SIZE(mig_states); j++) {
			mig_pairs[i * ARRAY_SIZE(mig_states) + j].from = mig_states[i];
			mig_pairs[i * ARRAY_SIZE(mig_states) + j].to = mig_states[j];
		}
	}
	return 0;
}

/* One pair of states: the engine reaches the target or fails cleanly. */
static void mig_state_pair(struct kunit *test)
{
	const struct mig_pair *p = test->param_value;
	struct fake_dev *f = fake_new(test, 2);
	enum vfio_device_mig_state st, next;
	struct file *a, *b;
	int no_path;

	a = gpumig_mig_set_state(f->mig, p->from);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a));
	no_path = vfio_mig_get_next_state(&f->vdev, p->from, p->to, &next);
	b = gpumig_mig_set_state(f->mig, p->to);
	gpumig_mig_get_state(f->mig, &st);
	if (no_path) {
		/* The uAPI has no path (e.g. STOP_COPY -> PRE_COPY). */
		KUNIT_EXPECT_TRUE(test, IS_ERR(b));
		KUNIT_EXPECT_EQ(test, st, p->from);
	} else if (IS_ERR(b)) {
		/* Only RESUMING -> anything without a stream may fail. */
		KUNIT_EXPECT_EQ_MSG(test, p->from, VFIO_DEVICE_STATE_RESUMING, "%ld",
				    PTR_ERR(b));
		KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RESUMING);
	} else {
		KUNIT_EXPECT_EQ(test, st, p->to);
		/* A data fd comes back exactly when a data phase starts. */
		KUNIT_EXPECT_EQ(test, !!b, p->from != p->to &&
				(p->to == VFIO_DEVICE_STATE_RESUMING ||
				 ((p->to == VFIO_DEVICE_STATE_PRE_COPY ||
				   p->to == VFIO_DEVICE_STATE_PRE_COPY_P2P) &&
				  p->from != VFIO_DEVICE_STATE_PRE_COPY &&
				  p->from != VFIO_DEVICE_STATE_PRE_COPY_P2P) ||
				 (p->to == VFIO_DEVICE_STATE_STOP_COPY &&
				  p->from != VFIO_DEVICE_STATE_PRE_COPY &&
				  p->from != VFIO_DEVICE_STATE_PRE_COPY_P2P)));
		if (b)
			fput(b);
	}
	/*
	 * The device runs (its own DMA included) exactly in RUNNING and
	 * PRE_COPY; in the P2P states it is only a target.
	 */
	if (!IS_ERR(b))
		KUNIT_EXPECT_EQ(test, f->running,
				st == VFIO_DEVICE_STATE_RUNNING ||
				st == VFIO_DEVICE_STATE_PRE_COPY);
	if (a)
		fput(a);
}

/*
 * The device loses its state under the engine (a VF whose PF was reset):
 * the stream in flight breaks with the error given, the state reads ERROR
 * and no arc leaves it (the VFIO core would WARN if asked for a path from
 * ERROR), until a reset brings it back to RUNNING.
 */
static void mig_fail_error_state(struct kunit *test)
{
	struct fake_dev *f = fake_new(test, 2);
	enum vfio_device_mig_state st;
	struct file *sf;
	u8 buf[64];
	loff_t pos = 0;

	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	gpumig_mig_fail(f->mig, -EIO, "its PF was reset");
	KUNIT_EXPECT_EQ(test, kernel_read(sf, buf, sizeof(buf), &pos), (ssize_t)-EIO);
	gpumig_mig_get_state(f->mig, &st);
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_ERROR);
	KUNIT_EXPECT_STREQ(test, reason(test, f), "its PF was reset");
	KUNIT_EXPECT_EQ(test, PTR_ERR(gpumig_mig_set_state(f->mig, VFIO_DEVICE_STATE_RUNNING)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(gpumig_mig_set_state(f->mig, VFIO_DEVICE_STATE_STOP)),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, gpumig_mig_set_state(f->mig, VFIO_DEVICE_STATE_ERROR));
	gpumig_mig_reset(f->mig);
	gpumig_mig_get_state(f->mig, &st);
	KUNIT_EXPECT_EQ(test, st, VFIO_DEVICE_STATE_RUNNING);
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_STOP));
	KUNIT_EXPECT_NULL(test, go(test, f, VFIO_DEVICE_STATE_RUNNING));
	fput(sf);
}

/* ---- device auto-converge (converge.c) ------------------------------------ */

#define OWED	BIT_ULL(40)	/* much more than a period drains */

/*
 * QEMU's rule: the throttle steps every second period in which more than
 * the threshold of what was drained became dirty again, first to the
 * initial share, then by the increment, never above the maximum; a period
 * under the threshold holds the throttle and the count (QEMU does not
 * reset dirty_rate_high_cnt); nothing drained never fires; switched off,
 * it never steps and forgets the count.
 */
/* ---- a post-copy destination's manifest ----------------------------- */

static int f_vram_absent(void *priv, const unsigned long *map, unsigned long nr)
{
	struct fake_dev *f = priv;

	f->absent = nr == F_BLOCKS || nr == 128 ? map[0] : ~0UL;
	f->absent_hi = nr == 128 ? map[1] : 0;
	f->absent_calls++;
	return 0;
}

static int f_vram_deliver(void *priv, unsigned long blk, const void *buf, u32 len)
{
	return 0;
}

static int f_vram_lose(void *priv, unsigned long blk)
{
	((struct fake_dev *)priv)->lost++;
	return 0;
}

/* The backend with a post-copy destination's services. */
static struct gpumig_backend_ops fake_pc_ops;

/* One OWED section: blocks @first to @first + @nr - 1, @map their bits. */
struct pc_owed {
	u64 first, nr;
	u8 map;
	bool other_token;
};

/*
 * A post-copy stream for a fake like @f, made with the stream's own
 * encoder: the header, POSTCOPY (unless @nr_owed is negative: OWED with
 * no announcement), the OWED sections of @owed, the architectural state,
 * the end; @session makes the token (one per session: a second session of
 * a live token is refused).  Returns its length.
 */
static ssize_t pc_stream(struct kunit *test, struct fake_dev *f, u8 *buf, size_t room,
			 const struct pc_owed *owed, int nr_owed, u8 session)
{
	struct gpumig_wire_postcopy pc = { .token = { 0x5a, session, 2, 3 } };
	struct {
		struct gpumig_wire_owed o;
		u8 map[8];
	} __packed sec;
	struct gpumig_writer w;
	ssize_t n, len = 0;
	int i;

	gpumig_writer_init(&w);
#define PC_EMIT(call) do { n = (call); KUNIT_ASSERT_GT(test, n, (ssize_t)0); len += n; } while (0)
	PC_EMIT(gpumig_emit_header(&w, buf, room, &f->mig->compat));
	if (nr_owed >= 0)
		PC_EMIT(gpumig_emit_blob(&w, buf + len, room - len, GPUMIG_SEC_POSTCOPY,
					 &pc, sizeof(pc)));
	for (i = 0; i < abs(nr_owed); i++) {
		memset(&sec, 0, sizeof(sec));
		memcpy(sec.o.token, pc.token, sizeof(pc.token));
		sec.o.token[15] = owed[i].other_token;
		sec.o.first = cpu_to_le64(owed[i].first);
		sec.o.nr_blocks = cpu_to_le64(owed[i].nr);
		sec.map[0] = owed[i].map;
		PC_EMIT(gpumig_emit_blob(&w, buf + len, room - len, GPUMIG_SEC_OWED, &sec,
					 sizeof(sec.o) + DIV_ROUND_UP(owed[i].nr, 8)));
	}
	PC_EMIT(gpumig_emit_blob(&w, buf + len, room - len, GPUMIG_SEC_ARCH, f->arch,
				 f->arch_len));
	PC_EMIT(gpumig_emit_end(&w, buf + len, room - len));
#undef PC_EMIT
	return len;
}

/* Restore @len bytes of @buf into @dst and leave RESUMING: the new state's error or 0. */
static int pc_restore(struct kunit *test, struct fake_dev *dst, const u8 *buf, ssize_t len)
{
	struct file *rf, *to;
	loff_t pos = 0;
	ssize_t w;

	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	w = kernel_write(rf, buf, len, &pos);
	to = gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_STOP);
	fput(rf);
	if (w != len)
		return w < 0 ? w : -EIO;
	return IS_ERR(to) ? PTR_ERR(to) : 0;
}

/* The fake's backend, with a post-copy destination's services. */
static void fake_pc_ops_init(void)
{
	fake_pc_ops = fake_ops;
	fake_pc_ops.vram_absent = f_vram_absent;
	fake_pc_ops.vram_deliver = f_vram_deliver;
	fake_pc_ops.vram_lose = f_vram_lose;
}

/*
 * A destination takes the manifest as the format says (stream-format.rst):
 * in order, without overlap, reaching the last block, a range no section
 * covers owing nothing; the blocks it sets go to the device absent.
 * Everything else is refused with a reason, and the device never leaves
 * RESUMING with a partial manifest.
 */
static void mig_pc_manifest(struct kunit *test)
{
	static const struct {
		const char *what;
		struct pc_owed owed[3];
		int nr_owed;
		const char *refused;	/* NULL: accepted */
		unsigned long absent;
	} cases[] = {
		{ "one section", { { 0, 8, 0x06 } }, 1, NULL, 0x06 },
		{ "two in order", { { 0, 4, 0x01 }, { 4, 4, 0x08 } }, 2, NULL, 0x81 },
		{ "overlapping", { { 0, 4, 0x01 }, { 2, 6, 0x01 } }, 2, "owed blocks 2-7" },
		{ "a gap (nothing owed there)", { { 0, 2, 0x02 }, { 4, 4, 0x02 } }, 2, NULL, 0x22 },
		{ "only the last", { { 6, 2, 0x01 } }, 1, NULL, 0x40 },
		{ "backwards", { { 4, 4, 0x01 }, { 0, 4, 0x01 } }, 2, "owed blocks 0-3" },
		{ "past VRAM", { { 0, 16, 0x01 } }, 1, "owed blocks 0-15" },
		{ "short of the last block", { { 0, 4, 0x01 } }, 1, "manifest" },
		{ "another session's", { { 0, 8, 0x01, true } }, 1, "another post-copy session" },
		{ "without an announcement", { { 0, 8, 0x01 } }, -1, "announced no post-copy" },
	};
	u8 *buf = kunit_kzalloc(test, 4096, GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	fake_pc_ops_init();
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake_dev *dst = fake_new_ops(test, 4, &fake_pc_ops);
		ssize_t len = pc_stream(test, dst, buf, 4096, cases[i].owed, cases[i].nr_owed, i);
		int ret = pc_restore(test, dst, buf, len);

		if (!cases[i].refused) {
			KUNIT_EXPECT_EQ_MSG(test, ret, 0, "%s: %s", cases[i].what,
					    reason(test, dst));
			KUNIT_EXPECT_EQ_MSG(test, dst->absent_calls, 1U, "%s", cases[i].what);
			KUNIT_EXPECT_EQ_MSG(test, dst->absent, cases[i].absent, "%s",
					    cases[i].what);
		} else {
			KUNIT_EXPECT_NE_MSG(test, ret, 0, "%s: accepted", cases[i].what);
			KUNIT_EXPECT_EQ_MSG(test, dst->absent_calls, 0U, "%s", cases[i].what);
			KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(reason(test, dst), cases[i].refused),
						  "%s: %s", cases[i].what, reason(test, dst));
		}
	}
}

/*
 * The manifest's edges: on a device of 128 blocks of 4 KiB (its bitmap
 * two words, nothing to spare), a section of the last block alone, at an
 * unaligned start, sets that bit and writes nothing past the bitmap
 * (KASAN watches).  And a second device restoring a session token this
 * host already has is refused before any block goes absent: no session
 * would ever bring them.
 */
static void mig_pc_manifest_edges(struct kunit *test)
{
	static const struct gpumig_geometry geo = { .block_shift = 12 };
	static const struct pc_owed last[] = {
		{ 0, 64, 0x01 }, { 64, 63, 0x00 }, { 127, 1, 0x01 },
	}, whole[] = { { 0, 8, 0x05 } };
	u8 *buf = kunit_kzalloc(test, 4096, GFP_KERNEL);
	struct fake_dev *a, *b, *c;
	ssize_t len;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	fake_pc_ops_init();
	a = fake_new_geo(test, 4, &fake_pc_ops, &geo);
	len = pc_stream(test, a, buf, 4096, last, ARRAY_SIZE(last), 200);
	KUNIT_EXPECT_EQ_MSG(test, pc_restore(test, a, buf, len), 0, "%s", reason(test, a));
	KUNIT_EXPECT_EQ(test, a->absent_calls, 1U);
	KUNIT_EXPECT_EQ(test, a->absent, 1UL);
	KUNIT_EXPECT_EQ(test, a->absent_hi, BIT(63));

	b = fake_new_ops(test, 4, &fake_pc_ops);
	c = fake_new_ops(test, 4, &fake_pc_ops);
	len = pc_stream(test, b, buf, 4096, whole, 1, 201);
	KUNIT_EXPECT_EQ_MSG(test, pc_restore(test, b, buf, len), 0, "%s", reason(test, b));
	KUNIT_EXPECT_EQ(test, b->absent_calls, 1U);
	len = pc_stream(test, c, buf, 4096, whole, 1, 201);
	KUNIT_EXPECT_EQ(test, pc_restore(test, c, buf, len), -EEXIST);
	KUNIT_EXPECT_EQ(test, c->absent_calls, 0U);
	KUNIT_EXPECT_EQ(test, c->lost, 0U);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(reason(test, c), "already in use"), "%s",
				  reason(test, c));
}

/* ---- a post-copy source's two passes ----------------------------------- */

/* The fake's hold: the blocks of its map leave the device (which reads zero there). */
struct f_hold {
	unsigned long map;
	u8 data[F_VRAM];
};

static void *f_vram_hold(void *priv, const unsigned long *map, unsigned long nr)
{
	struct fake_dev *f = priv;
	struct f_hold *h = vzalloc(sizeof(*h));
	unsigned long b;

	if (!h)
		return ERR_PTR(-ENOMEM);
	h->map = map[0];
	for_each_set_bit(b, &h->map, F_BLOCKS) {
		memcpy(h->data + b * GPUMIG_BLOCK_SIZE, f->vram + b * GPUMIG_BLOCK_SIZE,
		       GPUMIG_BLOCK_SIZE);
		memset(f->vram + b * GPUMIG_BLOCK_SIZE, 0, GPUMIG_BLOCK_SIZE);
	}
	f->absent = h->map;	/* what the test reads */
	return h;
}

static int f_hold_read(void *hold, u64 off, void *buf, u32 len)
{
	struct f_hold *h = hold;

	memcpy(buf, h->data + off, len);
	return 0;
}

/* What was held goes back into the device; counted in @lost. */
static void f_hold_return(void *priv, void *hold)
{
	struct fake_dev *f = priv;
	struct f_hold *h = hold;
	unsigned long b;

	for_each_set_bit(b, &h->map, F_BLOCKS)
		memcpy(f->vram + b * GPUMIG_BLOCK_SIZE, h->data + b * GPUMIG_BLOCK_SIZE,
		       GPUMIG_BLOCK_SIZE);
	f->lost++;
	vfree(h);
}

static void f_hold_free(void *hold)
{
	vfree(hold);
}

static struct gpumig_backend_ops fake_pc_src_ops;

/* The fake's backend, with a post-copy source's hold. */
static void fake_pc_src_ops_init(void)
{
	fake_pc_src_ops = fake_ops;
	fake_pc_src_ops.vram_hold = f_vram_hold;
	fake_pc_src_ops.hold_read = f_hold_read;
	fake_pc_src_ops.hold_return = f_hold_return;
	fake_pc_src_ops.hold_free = f_hold_free;
	fake_pc_src_ops.owner = THIS_MODULE;
}

/*
 * A post-copy stream's VRAM goes in two passes: in pre-copy the zero runs
 * (blocks with data owed, not read), at the stop what changed since.  A
 * block owed by the first pass and zeroed before the stop goes as zeroes
 * and is owed no more; a block sent as zeroes and written since is owed;
 * a block neither pass found dirty again stays owed.  The destination
 * gets the zero ranges over whatever it held, and exactly the owed blocks
 * absent; the source reads no VRAM and holds exactly those blocks.
 */
static void mig_pc_two_passes(struct kunit *test)
{
	struct fake_dev *src, *dst;
	struct vfio_precopy_info info;
	struct file *sf, *rf, *to;
	u8 *stream = vzalloc(2 * F_VRAM);
	ssize_t n, n2, w;
	loff_t pos = 0;
	int last, b;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	fake_pc_src_ops_init();
	fake_pc_ops_init();
	src = fake_new_ops(test, 4, &fake_pc_src_ops);
	dst = fake_new_ops(test, 4, &fake_pc_ops);
	/* 0 and 1: data; 2-7: zero */
	memset(src->vram, 0x11, GPUMIG_BLOCK_SIZE);
	memset(src->vram + GPUMIG_BLOCK_SIZE, 0x22, GPUMIG_BLOCK_SIZE);
	WRITE_ONCE(src->mig->pc_enabled, true);

	sf = go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	n = drain(sf, stream, 2 * F_VRAM, &last);
	KUNIT_EXPECT_EQ(test, last, -ENOMSG);
	KUNIT_EXPECT_LT(test, n, (ssize_t)GPUMIG_BLOCK_SIZE);	/* no data went */
	KUNIT_EXPECT_EQ(test, src->dirty, 0UL);			/* the pass took every block */
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_EQ(test, info.initial_bytes + info.dirty_bytes, 0ULL);

	/* The tenant zeroes block 0 and writes block 4. */
	memset(src->vram, 0, GPUMIG_BLOCK_SIZE);
	memset(src->vram + 4 * GPUMIG_BLOCK_SIZE, 0x44, 64);
	src->dirty = BIT(0) | BIT(4);
	memset(src->log, 0, sizeof(src->log));
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_PRE_COPY_P2P));
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
	n2 = drain(sf, stream + n, 2 * F_VRAM - n, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	KUNIT_EXPECT_STREQ(test, src->log, "QIA");	/* no VRAM read */
	KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));
	KUNIT_EXPECT_EQ_MSG(test, src->absent, BIT(1) | BIT(4), "held: %s", reason(test, src));
	fput(sf);

	/* The destination held something everywhere: the zero ranges clear it. */
	memset(dst->vram, 0xee, F_VRAM);
	KUNIT_EXPECT_NULL(test, go(test, dst, VFIO_DEVICE_STATE_STOP));
	rf = go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	w = kernel_write(rf, stream, n + n2, &pos);
	KUNIT_EXPECT_EQ(test, w, n + n2);
	to = gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_STOP);
	KUNIT_EXPECT_FALSE_MSG(test, IS_ERR(to), "%s", reason(test, dst));
	fput(rf);
	KUNIT_EXPECT_EQ(test, dst->absent_calls, 1U);
	KUNIT_EXPECT_EQ(test, dst->absent, BIT(1) | BIT(4));
	for (b = 0; b < F_BLOCKS; b++) {
		if (b == 1 || b == 4)
			continue;
		KUNIT_EXPECT_NULL_MSG(test, memchr_inv(dst->vram + b * GPUMIG_BLOCK_SIZE, 0,
						       GPUMIG_BLOCK_SIZE),
				      "block %d is not zero on the destination", b);
	}
	vfree(stream);
}

/*
 * A post-copy source that holds its owed VRAM for a destination and is
 * then restored from an ordinary stream runs with that stream's VRAM: the
 * held blocks stay the destination's, and never go back over what was
 * restored (as after a reset).  A failed switchover, by contrast, gets
 * them back.
 */
static void mig_pc_source_restored(struct kunit *test)
{
	struct fake_dev *src;
	struct file *sf, *rf;
	u8 *stream = vzalloc(2 * F_VRAM);
	ssize_t n, w;
	loff_t pos = 0;
	int last, i;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	fake_pc_src_ops_init();
	for (i = 0; i < 2; i++) {
		/* 0: an ordinary stream of block 0 = 0x11; 1: a failed switchover */
		src = fake_new_ops(test, 4, &fake_pc_src_ops);
		memset(src->vram, 0x11, GPUMIG_BLOCK_SIZE);
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));
		sf = go(test, src, VFIO_DEVICE_STATE_STOP_COPY);
		KUNIT_ASSERT_NOT_NULL(test, sf);
		n = drain(sf, stream, 2 * F_VRAM, &last);
		KUNIT_EXPECT_EQ(test, last, 0);
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));
		fput(sf);
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_RUNNING));

		/* Block 0 = 0x22 leaves with a post-copy; the source holds it. */
		memset(src->vram, 0x22, GPUMIG_BLOCK_SIZE);
		WRITE_ONCE(src->mig->pc_enabled, true);
		sf = go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
		KUNIT_ASSERT_NOT_NULL(test, sf);
		drain(sf, stream + n, 2 * F_VRAM - n, &last);
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
		drain(sf, stream + n, 2 * F_VRAM - n, &last);
		KUNIT_EXPECT_EQ(test, last, 0);
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_STOP));
		fput(sf);
		KUNIT_EXPECT_EQ(test, src->absent, BIT(0));
		src->lost = 0;
		if (!i) {
			rf = go(test, src, VFIO_DEVICE_STATE_RESUMING);
			KUNIT_ASSERT_NOT_NULL(test, rf);
			pos = 0;
			w = kernel_write(rf, stream, n, &pos);
			KUNIT_EXPECT_EQ(test, w, n);
			KUNIT_EXPECT_NULL_MSG(test, go(test, src, VFIO_DEVICE_STATE_STOP), "%s",
					      reason(test, src));
			fput(rf);
		}
		KUNIT_EXPECT_NULL(test, go(test, src, VFIO_DEVICE_STATE_RUNNING));
		KUNIT_EXPECT_EQ_MSG(test, src->vram[100], i ? 0x22 : 0x11,
				    "%s: block 0 reads 0x%02x",
				    i ? "failed switchover" : "restored", src->vram[100]);
		KUNIT_EXPECT_EQ(test, src->lost, i ? 1U : 0U);	/* hold_return calls */
	}
	vfree(stream);
}

static void conv_rule(struct kunit *test)
{
	static const u32 steps[] = { 20, 30, 40, 50, 60, 70, 80, 90, 99 };
	const u64 half = U64_MAX / 2;
	struct gpumig_converge_cfg cfg;
	struct gpumig_converge_rule r;
	unsigned int i;

	gpumig_converge_defaults(&cfg);
	KUNIT_EXPECT_FALSE(test, cfg.enabled);
	KUNIT_EXPECT_EQ(test, cfg.initial_pct, 20U);
	KUNIT_EXPECT_EQ(test, cfg.increment_pct, 10U);
	KUNIT_EXPECT_EQ(test, cfg.max_pct, 99U);
	KUNIT_EXPECT_EQ(test, cfg.threshold_pct, 50U);
	gpumig_converge_begin(&r);
	for (i = 0; i < 6; i++)
		KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 1000, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 0U);

	cfg.enabled = true;
	gpumig_converge_begin(&r);
	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
		KUNIT_EXPECT_TRUE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
		KUNIT_EXPECT_EQ(test, r.throttle, steps[i]);
	}
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 99U);

	gpumig_converge_begin(&r);
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 500, OWED)); /* not above */
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 0, 0, OWED)); /* a pause */
	KUNIT_EXPECT_TRUE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 20U);
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	cfg.enabled = false;	/* off forgets the count; on again counts from 0 */
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	cfg.enabled = true;
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_TRUE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 30U);

	gpumig_converge_begin(&r);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 0, 1ULL << 40, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 0U);

	/* Huge figures do not overflow; a maximum below the first step caps it. */
	cfg.max_pct = 10;
	cfg.threshold_pct = 100;
	gpumig_converge_begin(&r);
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, half, half, OWED));
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, half, half + 1, OWED));
	KUNIT_EXPECT_TRUE(test, gpumig_converge_period(&r, &cfg, half, half + 1, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 10U);

	/* A maximum lowered below the throttle caps it at the next period. */
	gpumig_converge_defaults(&cfg);
	cfg.enabled = true;
	gpumig_converge_begin(&r);
	for (i = 0; i < 5; i++) {
		gpumig_converge_period(&r, &cfg, 1000, 600, OWED);
		gpumig_converge_period(&r, &cfg, 1000, 600, OWED);
	}
	KUNIT_EXPECT_EQ(test, r.throttle, 60U);
	cfg.max_pct = 30;
	KUNIT_EXPECT_TRUE(test, gpumig_converge_period(&r, &cfg, 1000, 100, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 30U);
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_FALSE(test, gpumig_converge_period(&r, &cfg, 1000, 600, OWED));
	KUNIT_EXPECT_EQ(test, r.throttle, 30U);
}

/* The verdict over the last three periods. */
static void conv_verdict(struct kunit *test)
{
	struct gpumig_converge_cfg cfg;
	struct gpumig_converge_rule r;
	unsigned int i;

	gpumig_converge_defaults(&cfg);
	gpumig_converge_begin(&r);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_UNKNOWN);
	gpumig_converge_period(&r, &cfg, 1000, 900, OWED);
	gpumig_converge_period(&r, &cfg, 1000, 900, OWED);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_UNKNOWN);
	gpumig_converge_period(&r, &cfg, 1000, 900, OWED);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_YES);

	gpumig_converge_begin(&r);
	for (i = 0; i < 3; i++)
		gpumig_converge_period(&r, &cfg, 1000, 901, OWED);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_NO);

	gpumig_converge_begin(&r);
	for (i = 0; i < 3; i++)
		gpumig_converge_period(&r, &cfg, 0, 0, OWED);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_UNKNOWN);

	/* Owing nothing, or what one period drains, is converged too. */
	gpumig_converge_begin(&r);
	for (i = 0; i < 3; i++)
		gpumig_converge_period(&r, &cfg, 1000, 1000, 1000);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_YES);
	gpumig_converge_period(&r, &cfg, 1000, 1000, 1001);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_NO);
	gpumig_converge_period(&r, &cfg, 0, 0, 0);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_YES);

	/* A burst counts while in the window, and then no longer. */
	gpumig_converge_begin(&r);
	gpumig_converge_period(&r, &cfg, 1000, 3000, OWED);
	gpumig_converge_period(&r, &cfg, 1000, 0, OWED);
	gpumig_converge_period(&r, &cfg, 1000, 0, OWED);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_NO);
	gpumig_converge_period(&r, &cfg, 1000, 0, OWED);
	KUNIT_EXPECT_EQ(test, gpumig_converge_verdict(&r), GPUMIG_CONVERGE_YES);
}

static const char *conv_show(struct kunit *test, struct fake_dev *f, unsigned int which)
{
	char *buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_EXPECT_GT(test, gpumig_converge_show(f->mig, which, buf), 0L);
	strim(buf);
	return buf;
}

/* The settings: defaults, bounds, nonsense refused with nothing changed. */
static void conv_settings(struct kunit *test)
{
	struct fake_dev *plain = fake_new(test, 1), *f;
	static const char *const bad[] = { "", "abc", "0", "100", "-1", "20x", "4294967316",
					   "50 50", " " };
	unsigned int i, w;

	fake_throttle_ops = fake_ops;
	fake_throttle_ops.throttle = f_throttle;
	f = fake_new_ops(test, 1, &fake_throttle_ops);
	KUNIT_EXPECT_EQ(test, -EOPNOTSUPP,
			gpumig_converge_store(plain->mig, GPUMIG_CONV_ENABLED, "1"));
	KUNIT_EXPECT_EQ(test, 0, gpumig_converge_store(plain->mig, GPUMIG_CONV_ENABLED, "0"));
	KUNIT_EXPECT_STREQ(test, conv_show(test, plain, GPUMIG_CONV_ENABLED), "0");
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_converge_store(f->mig, GPUMIG_CONV_ENABLED, "maybe"));
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_converge_store(f->mig, GPUMIG_CONV_ENABLED, "1e3"));
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_converge_store(f->mig, GPUMIG_CONV_ENABLED, "10"));
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_ENABLED), "0");
	KUNIT_EXPECT_EQ(test, 0, gpumig_converge_store(f->mig, GPUMIG_CONV_ENABLED, "1\n"));
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_ENABLED), "1");
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_INITIAL), "20");
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_INCREMENT), "10");
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_MAX), "99");
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_THRESHOLD), "50");
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_THROTTLE), "0");
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_VERDICT), "unknown");
	for (w = GPUMIG_CONV_INITIAL; w <= GPUMIG_CONV_THRESHOLD; w++) {
		for (i = 0; i < ARRAY_SIZE(bad); i++)
			if (w != GPUMIG_CONV_THRESHOLD || strcmp(bad[i], "100"))
				KUNIT_EXPECT_EQ_MSG(test, -EINVAL,
						    gpumig_converge_store(f->mig, w, bad[i]),
						    "file %u, \"%s\"", w, bad[i]);
		KUNIT_EXPECT_EQ(test, 0, gpumig_converge_store(f->mig, w, "7\n"));
		KUNIT_EXPECT_STREQ(test, conv_show(test, f, w), "7");
	}
	KUNIT_EXPECT_EQ(test, 0, gpumig_converge_store(f->mig, GPUMIG_CONV_THRESHOLD, "100"));
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_converge_store(f->mig, GPUMIG_CONV_MAX, "100"));
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_MAX), "7");
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_converge_store(f->mig, GPUMIG_CONV_THROTTLE, "5"));
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_converge_store(f->mig, GPUMIG_CONV_VERDICT, "yes"));
	KUNIT_EXPECT_EQ(test, f->throttles, 0U);
}

/*
 * A hot pre-copy: every block is dirty again as soon as it is read, and
 * the VMM drains less per period than VRAM holds.  With auto-converge on,
 * the throttle steps after two periods and the verdict reads "no" after
 * three; a reset ends the throttle at once.
 */
static void conv_hot_precopy(struct kunit *test)
{
	struct fake_dev *f;
	unsigned long end;
	struct file *sf;
	u8 *buf;

	fake_throttle_ops = fake_ops;
	fake_throttle_ops.throttle = f_throttle;
	f = fake_new_ops(test, 1, &fake_throttle_ops);
	memset(f->vram, 0x5a, F_VRAM);
	buf = kunit_kzalloc(test, SZ_8K, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_EQ(test, 0, gpumig_converge_store(f->mig, GPUMIG_CONV_ENABLED, "1"));
	sf = go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	end = jiffies + msecs_to_jiffies(3 * GPUMIG_CONVERGE_PERIOD_MS + 600);
	while (time_before(jiffies, end)) {
		loff_t pos = 0;

		/* 8 KiB per 20 ms: a period drains less than VRAM's 512 KiB */
		KUNIT_ASSERT_GE(test, kernel_read(sf, buf, SZ_8K, &pos), (ssize_t)-ENOMSG);
		WRITE_ONCE(f->dirty, GENMASK(F_BLOCKS - 1, 0));	/* the GPU rewrote it all */
		msleep(20);
	}
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->throttle), 20U);
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_THROTTLE), "20");
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_VERDICT), "no");
	KUNIT_EXPECT_STRNEQ(test, conv_show(test, f, GPUMIG_CONV_DRAIN_RATE), "0");
	KUNIT_EXPECT_STRNEQ(test, conv_show(test, f, GPUMIG_CONV_REDIRTY_RATE), "0");
	gpumig_mig_reset(f->mig);
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->throttle), 0U);
	KUNIT_EXPECT_STREQ(test, conv_show(test, f, GPUMIG_CONV_THROTTLE), "0");
	KUNIT_EXPECT_EQ(test, READ_ONCE(f->throttles), 2U);
	fput(sf);
}

static struct kunit_case mig_cases[] = {
	KUNIT_CASE(mig_fail_error_state),
	KUNIT_CASE(conv_rule),
	KUNIT_CASE(conv_verdict),
	KUNIT_CASE(conv_settings),
	KUNIT_CASE_SLOW(conv_hot_precopy),
	KUNIT_CASE(mig_full_migration),
	KUNIT_CASE(mig_early_switchover),
	KUNIT_CASE(mig_stream_cap),
	KUNIT_CASE(mig_zero_runs_whole),
	KUNIT_CASE(mig_resume_placed),
	KUNIT_CASE(mig_pc_manifest),
	KUNIT_CASE(mig_pc_manifest_edges),
	KUNIT_CASE(mig_pc_two_passes),
	KUNIT_CASE(mig_pc_source_restored),
	KUNIT_CASE(mig_stop_failures_keep_running),
	KUNIT_CASE(mig_p2p_quiesces),
	KUNIT_CASE(mig_incompatible_refused_in_precopy),
	KUNIT_CASE(mig_truncated_never_runs),
	KUNIT_CASE(mig_reset_mid_precopy),
	KUNIT_CASE(mig_reset_during_transition),
	KUNIT_CASE(mig_reset_during_status_read),
	KUNIT_CASE(mig_backend_failures),
	KUNIT_CASE(mig_close_scrub_or_quarantine),
	KUNIT_CASE(mig_scrub_failure),
	KUNIT_CASE(mig_abort),
	KUNIT_CASE(mig_close_mid_migration),
	KUNIT_CASE(mig_track_failure),
	KUNIT_CASE(mig_status_pending),
	KUNIT_CASE(mig_status_pending_zero_hint),
	KUNIT_CASE(mig_precopy_reinit),
	KUNIT_CASE(mig_dma_log_routing),
	KUNIT_CASE_PARAM(mig_state_pair, mig_pair_gen_params),
	{}
};

static struct kunit_suite mig_suite = {
	.name = "gpumig_mig",
	.suite_init = mig_suite_init,
	.test_cases = mig_cases,
};

kunit_test_suites(&mig_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suite gpumig_mig: the migration engine, with a fake backend");
GPUMIG_IMPORT_KUNIT_NS();
