// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for gpumig-vfio-pci's glue (drivers/vfio/pci/gpumig/glue.c)
 * over a fake PF provider that is not simgpu-pf's and looks nothing like
 * it: no VRAM dirty tracking at all (so PRE_COPY carries only the header
 * and stop-copy all of VRAM), no DMA logging, an architectural state of
 * its own size, none of the optional services.  The engine migrates one
 * fake VF to another through the glue, as it migrates a real one, and the
 * fake records the order of its calls.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/vmalloc.h>

#include <gpumig/compat.h>
#include <gpumig/migration.h>
#include <gpumig/provider.h>

#include "../drivers/vfio/pci/gpumig/gpumig_vfio_pci.h"

#define FV_BLOCKS	6
#define FV_VRAM		(FV_BLOCKS * GPUMIG_BLOCK_SIZE)
#define FV_ARCH		5000	/* not simgpu's 912 */
#define FV_BACKEND	0xf1	/* the fake's own wire value */

/**
 * struct fake_vf - a VF of the fake provider
 * @gvf: what the glue sees
 * @glue: gpumig-vfio-pci's glue over it
 * @vdev: what the engine sees of the VFIO device
 * @mig: the engine's state
 * @vram: FV_VRAM bytes
 * @arch: its architectural state
 * @paused: pause called and not resumed
 * @reset_seen: teardown finds the function reset
 * @log: calls, in order: P pause, U resume, I invalidate, A save state,
 *	R restore state, r VRAM read, w VRAM write, z VRAM zero, S scrub,
 *	B close begins, C teardown, X release
 */
struct fake_vf {
	struct gpumig_vf gvf;
	struct gvp_glue glue;
	struct vfio_device vdev;
	struct gpumig_mig *mig;
	u8 *vram;
	u8 arch[FV_ARCH];
	bool paused;
	bool reset_seen;
	char log[256];
};

static struct fake_vf *fv(struct gpumig_vf *gvf)
{
	return container_of(gvf, struct fake_vf, gvf);
}

static void fv_log(struct fake_vf *f, char c)
{
	size_t n = strlen(f->log);

	if (n + 1 < sizeof(f->log))
		f->log[n] = c;
}

static struct gpumig_mig *fv_to_mig(struct vfio_device *vdev)
{
	return container_of(vdev, struct fake_vf, vdev)->mig;
}

GPUMIG_DEFINE_VFIO_OPS(fv, fv_to_mig);

static void fv_release(struct gpumig_vf *gvf)
{
	fv_log(fv(gvf), 'X');
}

static int fv_pause(struct gpumig_vf *gvf)
{
	fv_log(fv(gvf), 'P');
	fv(gvf)->paused = true;
	return 0;
}

static void fv_resume(struct gpumig_vf *gvf)
{
	fv_log(fv(gvf), 'U');
	fv(gvf)->paused = false;
}

static int fv_invalidate(struct gpumig_vf *gvf)
{
	fv_log(fv(gvf), 'I');
	return 0;
}

static bool fv_paused(struct gpumig_vf *gvf)
{
	return fv(gvf)->paused;
}

static ssize_t fv_save_state(struct gpumig_vf *gvf, void *buf, size_t len)
{
	fv_log(fv(gvf), 'A');
	if (len < FV_ARCH)
		return -ENOSPC;
	memcpy(buf, fv(gvf)->arch, FV_ARCH);
	return FV_ARCH;
}

static int fv_restore_state(struct gpumig_vf *gvf, const void *buf, size_t len)
{
	fv_log(fv(gvf), 'R');
	if (len != FV_ARCH)
		return -EINVAL;
	memcpy(fv(gvf)->arch, buf, len);
	return 0;
}

static int fv_vram_read(struct gpumig_vf *gvf, u64 off, void *buf, u32 len)
{
	fv_log(fv(gvf), 'r');
	if (off > FV_VRAM || len > FV_VRAM - off)
		return -EINVAL;
	memcpy(buf, fv(gvf)->vram + off, len);
	return 0;
}

static int fv_vram_write(struct gpumig_vf *gvf, u64 off, const void *buf, u32 len)
{
	fv_log(fv(gvf), buf ? 'w' : 'z');
	if (off > FV_VRAM || len > FV_VRAM - off)
		return -EINVAL;
	if (buf)
		memcpy(fv(gvf)->vram + off, buf, len);
	else
		memset(fv(gvf)->vram + off, 0, len);
	return 0;
}

static int fv_scrub(struct gpumig_vf *gvf)
{
	fv_log(fv(gvf), 'S');
	memset(fv(gvf)->vram, 0, FV_VRAM);
	return 0;
}

static void fv_close_begin(struct gpumig_vf *gvf)
{
	fv_log(fv(gvf), 'B');
}

static int fv_teardown(struct gpumig_vf *gvf, char *why, size_t len)
{
	fv_log(fv(gvf), 'C');
	if (fv(gvf)->reset_seen)
		return 0;
	snprintf(why, len, "the fake was not reset");
	return -EIO;
}

/* Only what the interface requires: no tracking, no log, no extras. */
static const struct gpumig_vf_ops fv_ops = {
	.release = fv_release,
	.pause = fv_pause,
	.resume = fv_resume,
	.invalidate = fv_invalidate,
	.paused = fv_paused,
	.save_state = fv_save_state,
	.restore_state = fv_restore_state,
	.vram_read = fv_vram_read,
	.vram_write = fv_vram_write,
	.scrub = fv_scrub,
	.close_begin = fv_close_begin,
	.teardown = fv_teardown,
};

static void fv_free(void *p)
{
	struct fake_vf *f = p;

	gpumig_mig_destroy(f->mig);
	gpumig_quarantine_clear(f->vdev.dev);
	vfree(f->vram);
}

static struct fake_vf *fv_new(struct kunit *test, const char *name)
{
	struct fake_vf *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct gpumig_compat *c;
	struct device *dev;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->vram = vzalloc(FV_VRAM);
	KUNIT_ASSERT_NOT_NULL(test, f->vram);
	f->gvf.ops = &fv_ops;
	f->gvf.arch_size = FV_ARCH;
	c = &f->gvf.compat;
	strscpy(c->type_name, "fakevf-384K");
	c->vram_size = FV_VRAM;
	c->backend = FV_BACKEND;
	c->nr_queues = 1;
	c->page_size = 4096;
	c->arch_version = 7;
	for (i = 0; i < FV_ARCH; i++)
		f->arch[i] = i * 7 + 1;
	f->reset_seen = true;
	f->glue.vf = &f->gvf;
	gvp_glue_init(&f->glue);
	dev = kunit_device_register(test, name);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	f->vdev.dev = dev;
	f->mig = gpumig_mig_create(&f->vdev, &fv_vfio_ops, &f->glue.ops, &f->glue, c);
	KUNIT_ASSERT_FALSE(test, IS_ERR(f->mig));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, fv_free, f));
	return f;
}

static struct file *fv_go(struct kunit *test, struct fake_vf *f, enum vfio_device_mig_state s)
{
	struct file *filp = gpumig_mig_set_state(f->mig, s);

	KUNIT_EXPECT_FALSE_MSG(test, IS_ERR(filp), "to state %d: %ld", s, PTR_ERR(filp));
	return IS_ERR(filp) ? NULL : filp;
}

/* Read a saving file until EOF or -ENOMSG; the bytes, and what ended it. */
static ssize_t fv_drain(struct file *filp, u8 *buf, size_t room, int *last)
{
	size_t total = 0;
	ssize_t n;

	for (;;) {
		loff_t pos = 0;

		n = kernel_read(filp, buf + total, room - total, &pos);
		if (n <= 0)
			break;
		total += n;
	}
	*last = n;
	return total;
}

/* The glue offers the engine the provider's optional services and no more. */
static void glue_ops_follow_provider(struct kunit *test)
{
	struct fake_vf *f = fv_new(test, "gvp-fake-ops");
	const struct gpumig_backend_ops *o = &f->glue.ops;

	KUNIT_EXPECT_NOT_NULL(test, o->quiesce);
	KUNIT_EXPECT_NOT_NULL(test, o->teardown);
	KUNIT_EXPECT_NULL(test, o->vram_track);
	KUNIT_EXPECT_NULL(test, o->vram_next_dirty);
	KUNIT_EXPECT_NULL(test, o->vram_dirty_count);
	KUNIT_EXPECT_NULL(test, o->vram_take_zero_run);
	KUNIT_EXPECT_NULL(test, o->vram_write_iter);
	KUNIT_EXPECT_NULL(test, o->dma_log_start);
	KUNIT_EXPECT_NULL(test, o->guest_resets);
	KUNIT_EXPECT_EQ(test, o->arch_size(&f->glue), (size_t)FV_ARCH);
}

/*
 * A whole migration over the glue: pre-copy carries the header and the
 * producer's note, nothing of VRAM (the device tracks none); stop-copy
 * sends every block, the zero ones as ranges, then the state of its own
 * size; the destination ends with the source's VRAM and state, restored
 * last, and runs.
 */
static void glue_untracked_migration(struct kunit *test)
{
	struct fake_vf *src = fv_new(test, "gvp-fake-src"), *dst = fv_new(test, "gvp-fake-dst");
	size_t room = FV_VRAM + FV_ARCH + 65536;
	u8 *stream = vzalloc(room);
	struct vfio_precopy_info info = {};
	struct file *sf, *rf;
	unsigned long est;
	ssize_t pre, all;
	loff_t pos = 0;
	int last, i;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	for (i = 0; i < GPUMIG_BLOCK_SIZE; i++) {
		src->vram[i] = i * 3 + 1;			/* block 0 */
		src->vram[4 * GPUMIG_BLOCK_SIZE + i] = i ^ 0x5a;	/* block 4 */
	}
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_data_size(src->mig, &est));
	sf = fv_go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	pre = fv_drain(sf, stream, room, &last);
	KUNIT_EXPECT_EQ(test, last, -ENOMSG);
	KUNIT_EXPECT_EQ(test, (u64)pre, info.initial_bytes);
	KUNIT_EXPECT_LT(test, pre, 512);		/* the head, no VRAM */
	KUNIT_EXPECT_NULL(test, strchr(src->log, 'r'));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_EQ(test, info.initial_bytes + info.dirty_bytes, 0ULL);

	KUNIT_EXPECT_NULL(test, fv_go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
	KUNIT_EXPECT_STREQ(test, src->log, "PI");
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_data_size(src->mig, &est));
	all = pre + fv_drain(sf, stream + pre, room - pre, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	/* Every block read once, in order, then the state. */
	KUNIT_EXPECT_STREQ(test, src->log, "PIrrrrrrA");
	KUNIT_EXPECT_LE(test, (u64)(all - pre), (u64)est);

	fv_go(test, dst, VFIO_DEVICE_STATE_STOP);
	rf = fv_go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	memset(dst->arch, 0, FV_ARCH);
	KUNIT_EXPECT_EQ(test, kernel_write(rf, stream, all, &pos), (ssize_t)all);
	KUNIT_EXPECT_NULL(test, fv_go(test, dst, VFIO_DEVICE_STATE_STOP));
	KUNIT_EXPECT_NULL(test, fv_go(test, dst, VFIO_DEVICE_STATE_RUNNING));
	KUNIT_EXPECT_EQ(test, memcmp(dst->vram, src->vram, FV_VRAM), 0);
	KUNIT_EXPECT_EQ(test, memcmp(dst->arch, src->arch, FV_ARCH), 0);
	/* Stopped, blocks 0 and 4 written, the four zero ones cleared, state last. */
	KUNIT_EXPECT_NOT_NULL(test, strstr(dst->log, "R"));
	KUNIT_EXPECT_EQ(test, strchr(dst->log, 'R') - dst->log, (long)strlen(dst->log) - 2);
	KUNIT_EXPECT_FALSE(test, dst->paused);
	fput(rf);
	fput(sf);
	vfree(stream);
}

/*
 * The tenant leaves: the provider hears of it first, then checks the
 * device; one whose reset it did not see is quarantined, its VRAM kept;
 * with the PF's driver gone nothing can be verified.
 */
static void glue_teardown_quarantines(struct kunit *test)
{
	struct fake_vf *f = fv_new(test, "gvp-fake-close");
	char why[GPUMIG_MSG_LEN];

	f->vram[7] = 0x77;
	f->reset_seen = false;
	fv_close_begin(&f->gvf);
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_close(f->mig));
	KUNIT_EXPECT_STREQ(test, f->log, "BPIC");	/* no scrub */
	KUNIT_EXPECT_EQ(test, f->vram[7], 0x77);
	KUNIT_EXPECT_TRUE(test, gpumig_quarantine_get(f->vdev.dev, why, sizeof(why)));
	KUNIT_EXPECT_STREQ(test, why, "the fake was not reset");
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_open(f->mig));
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_unquarantine(f->mig));
	KUNIT_EXPECT_EQ(test, f->vram[7], 0);
	KUNIT_EXPECT_FALSE(test, gpumig_quarantine_get(f->vdev.dev, NULL, 0));

	f->reset_seen = true;
	WRITE_ONCE(f->glue.pf_gone, true);
	memset(f->log, 0, sizeof(f->log));
	KUNIT_EXPECT_EQ(test, -EBUSY, gpumig_mig_close(f->mig));
	KUNIT_EXPECT_NULL(test, strchr(f->log, 'C'));	/* the provider is not asked */
	KUNIT_EXPECT_TRUE(test, gpumig_quarantine_get(f->vdev.dev, why, sizeof(why)));
	KUNIT_EXPECT_NOT_NULL(test, strstr(why, "PF's driver was removed"));
}

static struct kunit_case gvp_glue_cases[] = {
	KUNIT_CASE(glue_ops_follow_provider),
	KUNIT_CASE(glue_untracked_migration),
	KUNIT_CASE(glue_teardown_quarantines),
	{}
};

static struct kunit_suite gvp_glue_suite = {
	.name = "gvp_glue",
	.test_cases = gvp_glue_cases,
};

kunit_test_suites(&gvp_glue_suite);

GPUMIG_IMPORT_KUNIT_NS();
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suite gvp_glue: gpumig-vfio-pci's glue over a fake PF provider");
