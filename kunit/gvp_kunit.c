// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for gpumig-vfio-pci's glue (drivers/vfio/pci/gpumig/glue.c)
 * over a fake PF provider that is not simgpu-pf's and looks nothing like
 * it, in three shapes:
 *
 *   plain   only what the interface requires: no VRAM dirty tracking (so
 *           PRE_COPY carries only the header and stop-copy all of VRAM),
 *           no DMA logging, a state of its own size
 *   geo     16 KiB VRAM blocks, tracked; a state of 150,000 bytes in three
 *           parts; two vendor sections; its own compatibility rule; a P2P
 *           stop of its own
 *   big     128 KiB blocks, untracked; one state part of 100,000 bytes
 *
 * The engine migrates one fake VF to another through the glue, as it
 * migrates a real one, and the fake records the order of its calls.
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

#define FV_VRAM		(6 * GPUMIG_BLOCK_SIZE)	/* 384 KiB */
#define FV_ARCH		5000			/* plain: not simgpu's 912 */
#define FV_GEO_SHIFT	14			/* geo: 16 KiB blocks */
#define FV_GEO_BLOCKS	(FV_VRAM >> FV_GEO_SHIFT)
#define FV_GEO_PART	50000			/* geo: three of these */
#define FV_BIG_SHIFT	17			/* big: 128 KiB blocks */
#define FV_BIG_ARCH	100000			/* big: one part, over 64 KiB */
#define FV_VENDOR_MAX	40000
#define FV_ARCH_VERSION	7
/* A vendor's own wire value: QEMU's test PCI vendor ID, family 0x7f. */
#define FV_BACKEND	GPUMIG_BACKEND_VENDOR(0x1234, 0x7f)

enum fv_shape { FV_PLAIN, FV_GEO, FV_GEO2, FV_BIG };

static const u32 fv_vendor_len[] = { 100, FV_VENDOR_MAX };

/**
 * struct fake_vf - a VF of the fake provider
 * @gvf: what the glue sees
 * @ops: its services, as its shape has them
 * @glue: gpumig-vfio-pci's glue over it
 * @vdev: what the engine sees of the VFIO device
 * @mig: the engine's state
 * @vram: FV_VRAM bytes
 * @arch: its architectural state, @arch_total bytes in @parts equal parts
 * @arch_total: its length
 * @parts: how many parts
 * @restored: parts restored so far, in order
 * @dirty: geo: the dirty 16 KiB blocks
 * @tracking: geo: dirty tracking is on
 * @vendor_got: vendor sections taken
 * @vendor_refuse: vendor_restore refuses
 * @paused: pause called and not resumed
 * @p2p_stopped: its P2P DMA is stopped
 * @reset_seen: teardown finds the function reset
 * @log: calls, in order: P pause, U resume, I invalidate, A save a part,
 *	R restore a part, r VRAM read, w VRAM write, z VRAM zero, S scrub,
 *	B close begins, C teardown, X release, T/t tracking on/off, V/v
 *	vendor section saved/restored, Y/y P2P stopped/restarted
 */
struct fake_vf {
	struct gpumig_vf gvf;
	struct gpumig_vf_ops ops;
	struct gvp_glue glue;
	struct vfio_device vdev;
	struct gpumig_mig *mig;
	u8 *vram;
	u8 *arch;
	u32 arch_total;
	u32 parts;
	u32 restored;
	unsigned long dirty;
	bool tracking;
	u32 vendor_got;
	bool vendor_refuse;
	bool paused;
	bool p2p_stopped;
	bool reset_seen;
	char log[512];
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

static u32 fv_part_len(struct fake_vf *f)
{
	return f->arch_total / f->parts;
}

static ssize_t fv_save_state(struct gpumig_vf *gvf, u32 part, void *buf, size_t len)
{
	struct fake_vf *f = fv(gvf);

	fv_log(f, 'A');
	if (part >= f->parts)
		return -EINVAL;
	if (len < fv_part_len(f))
		return -ENOSPC;
	memcpy(buf, f->arch + part * fv_part_len(f), fv_part_len(f));
	return fv_part_len(f);
}

static int fv_restore_state(struct gpumig_vf *gvf, u32 part, const void *buf, size_t len)
{
	struct fake_vf *f = fv(gvf);

	fv_log(f, 'R');
	if (!part)
		f->restored = 0;
	if (part != f->restored || len != fv_part_len(f))
		return -EINVAL;
	memcpy(f->arch + part * fv_part_len(f), buf, len);
	f->restored++;
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

/* ---- geo: 16 KiB blocks tracked, vendor sections, its own rules ---------- */

static int fv_track(struct gpumig_vf *gvf, bool on)
{
	struct fake_vf *f = fv(gvf);

	fv_log(f, on ? 'T' : 't');
	f->tracking = on;
	f->dirty = on ? BIT(FV_GEO_BLOCKS) - 1 : 0;
	return 0;
}

static bool fv_block_zero(struct fake_vf *f, unsigned long b)
{
	return !memchr_inv(f->vram + (b << FV_GEO_SHIFT), 0, BIT(FV_GEO_SHIFT));
}

static long fv_next_dirty(struct gpumig_vf *gvf, unsigned long from, bool *zero)
{
	struct fake_vf *f = fv(gvf);
	unsigned long b = find_next_bit(&f->dirty, FV_GEO_BLOCKS, from);

	if (b >= FV_GEO_BLOCKS)
		return -ENOENT;
	clear_bit(b, &f->dirty);
	*zero = fv_block_zero(f, b);
	return b;
}

static void fv_dirty_count(struct gpumig_vf *gvf, unsigned long *nonzero, unsigned long *zero)
{
	struct fake_vf *f = fv(gvf);
	unsigned long b;

	*nonzero = 0;
	*zero = 0;
	for (b = 0; b < FV_GEO_BLOCKS; b++) {
		if (f->tracking && !test_bit(b, &f->dirty))
			continue;
		if (fv_block_zero(f, b))
			(*zero)++;
		else
			(*nonzero)++;
	}
}

static u8 fv_vendor_byte(u32 index, u32 i)
{
	return index * 31 + i;
}

static size_t fv_vendor_size(struct gpumig_vf *gvf, u32 *sections)
{
	*sections = ARRAY_SIZE(fv_vendor_len);
	return fv_vendor_len[0] + fv_vendor_len[1];
}

static ssize_t fv_vendor_save(struct gpumig_vf *gvf, u32 index, void *buf, size_t len)
{
	u8 *p = buf;
	u32 i;

	if (index >= ARRAY_SIZE(fv_vendor_len))
		return -ENOENT;
	if (len < fv_vendor_len[index])
		return -ENOSPC;
	fv_log(fv(gvf), 'V');
	for (i = 0; i < fv_vendor_len[index]; i++)
		p[i] = fv_vendor_byte(index, i);
	return fv_vendor_len[index];
}

static int fv_vendor_restore(struct gpumig_vf *gvf, u32 index, const void *buf, size_t len)
{
	struct fake_vf *f = fv(gvf);
	const u8 *p = buf;
	u32 i;

	fv_log(f, 'v');
	if (f->vendor_refuse || index >= ARRAY_SIZE(fv_vendor_len) ||
	    len != fv_vendor_len[index])
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (p[i] != fv_vendor_byte(index, i))
			return -EINVAL;
	f->vendor_got++;
	return 0;
}

/* The fake reads its own layout and the one before it, no older. */
static int fv_compat_check(struct gpumig_vf *gvf, const struct gpumig_compat *src, char *why,
			   size_t len)
{
	if (src->arch_version + 1 >= gvf->compat.arch_version)
		return 0;
	snprintf(why, len, "state layout %u is older than the fake reads (%u and %u)",
		 src->arch_version, gvf->compat.arch_version - 1, gvf->compat.arch_version);
	return -EOPNOTSUPP;
}

static int fv_p2p(struct gpumig_vf *gvf, bool stop)
{
	fv_log(fv(gvf), stop ? 'Y' : 'y');
	fv(gvf)->p2p_stopped = stop;
	return 0;
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
	vfree(f->arch);
}

static struct fake_vf *fv_new(struct kunit *test, const char *name, enum fv_shape shape)
{
	struct fake_vf *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct gpumig_geometry *g;
	struct gpumig_compat *c;
	struct device *dev;
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->vram = vzalloc(FV_VRAM);
	KUNIT_ASSERT_NOT_NULL(test, f->vram);
	f->ops = fv_ops;
	f->gvf.ops = &f->ops;
	g = &f->gvf.geo;
	f->parts = 1;
	f->arch_total = FV_ARCH;
	switch (shape) {
	case FV_PLAIN:
		break;
	case FV_GEO:
	case FV_GEO2:
		f->parts = shape == FV_GEO ? 3 : 2;
		f->arch_total = 3 * FV_GEO_PART;
		g->block_shift = FV_GEO_SHIFT;
		g->arch_parts = f->parts;
		g->arch_part_max = f->arch_total / f->parts;
		g->vendor_max = FV_VENDOR_MAX;
		f->ops.vram_track = fv_track;
		f->ops.vram_next_dirty = fv_next_dirty;
		f->ops.vram_dirty_count = fv_dirty_count;
		f->ops.vendor_size = fv_vendor_size;
		f->ops.vendor_save = fv_vendor_save;
		f->ops.vendor_restore = fv_vendor_restore;
		f->ops.compat_check = fv_compat_check;
		f->ops.p2p = fv_p2p;
		break;
	case FV_BIG:
		f->arch_total = FV_BIG_ARCH;
		g->block_shift = FV_BIG_SHIFT;
		g->arch_part_max = FV_BIG_ARCH;
		break;
	}
	f->arch = vmalloc(f->arch_total);
	KUNIT_ASSERT_NOT_NULL(test, f->arch);
	for (i = 0; i < f->arch_total; i++)
		f->arch[i] = i * 7 + 1;
	f->gvf.arch_size = f->arch_total;
	c = &f->gvf.compat;
	strscpy(c->type_name, "fakevf-384K");
	c->vram_size = FV_VRAM;
	c->backend = FV_BACKEND;
	c->nr_queues = 1;
	c->page_size = 4096;
	c->arch_version = FV_ARCH_VERSION;
	f->reset_seen = true;
	f->glue.vf = &f->gvf;
	gvp_glue_init(&f->glue);
	dev = kunit_device_register(test, name);
	KUNIT_ASSERT_FALSE(test, IS_ERR(dev));
	f->vdev.dev = dev;
	f->mig = gpumig_mig_create(&f->vdev, &fv_vfio_ops, &f->glue.ops, &f->glue, c, g);
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

/*
 * The sections of a stream as letters: H header, N note, V VRAM chunk, Z
 * zero range, D vendor, A state, Q state part, E end, ? other; the VRAM
 * chunks' largest length in *@chunk.
 */
static void fv_sections(const u8 *buf, size_t len, char *out, size_t room, u32 *chunk)
{
	size_t off = 0, n = 0;

	*chunk = 0;
	while (off + sizeof(struct gpumig_sec_hdr) <= len && n + 1 < room) {
		const struct gpumig_sec_hdr *h = (const void *)(buf + off);
		u32 l = le32_to_cpu(h->len);

		switch (le16_to_cpu(h->type)) {
		case GPUMIG_SEC_HEADER:
			out[n++] = 'H';
			break;
		case GPUMIG_SEC_NOTE:
			out[n++] = 'N';
			break;
		case GPUMIG_SEC_VRAM:
			out[n++] = 'V';
			*chunk = max_t(u32, *chunk, l - sizeof(struct gpumig_wire_vram));
			break;
		case GPUMIG_SEC_ZERO:
			out[n++] = 'Z';
			break;
		case GPUMIG_SEC_VENDOR:
			out[n++] = 'D';
			break;
		case GPUMIG_SEC_ARCH:
			out[n++] = 'A';
			break;
		case GPUMIG_SEC_ARCH_PART:
			out[n++] = 'Q';
			break;
		case GPUMIG_SEC_END:
			out[n++] = 'E';
			break;
		default:
			out[n++] = '?';
		}
		off += sizeof(*h) + l;
	}
	out[n] = '\0';
}

/* The stream's header, as the destination reads it. */
static struct gpumig_wire_header fv_header(const u8 *stream)
{
	struct gpumig_wire_header h;

	memcpy(&h, stream + sizeof(struct gpumig_sec_hdr), sizeof(h));
	return h;
}

/* The descriptor line migration/compat shows. */
static char *fv_compat_line(struct kunit *test, struct fake_vf *f)
{
	char *buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_EXPECT_GT(test, gpumig_mig_compat_show(f->mig, buf), 0);
	return buf;
}

/* The glue offers the engine the provider's optional services and no more. */
static void glue_ops_follow_provider(struct kunit *test)
{
	struct fake_vf *f = fv_new(test, "gvp-fake-ops", FV_PLAIN);
	struct fake_vf *g = fv_new(test, "gvp-fake-ops-geo", FV_GEO);
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
	KUNIT_EXPECT_NULL(test, o->vendor_save);
	KUNIT_EXPECT_NULL(test, o->compat_check);
	KUNIT_EXPECT_NULL(test, o->p2p);
	KUNIT_EXPECT_EQ(test, o->arch_size(&f->glue), (size_t)FV_ARCH);

	o = &g->glue.ops;
	KUNIT_EXPECT_NOT_NULL(test, o->vram_track);
	KUNIT_EXPECT_NOT_NULL(test, o->vram_next_dirty);
	KUNIT_EXPECT_NOT_NULL(test, o->vram_dirty_count);
	KUNIT_EXPECT_NULL(test, o->vram_take_zero_run);
	KUNIT_EXPECT_NOT_NULL(test, o->vendor_size);
	KUNIT_EXPECT_NOT_NULL(test, o->vendor_save);
	KUNIT_EXPECT_NOT_NULL(test, o->vendor_restore);
	KUNIT_EXPECT_NOT_NULL(test, o->compat_check);
	KUNIT_EXPECT_NOT_NULL(test, o->p2p);
	KUNIT_EXPECT_EQ(test, o->arch_size(&g->glue), (size_t)3 * FV_GEO_PART);
}

/*
 * A whole migration over the glue: pre-copy carries the header and the
 * two notes, nothing of VRAM (the device tracks none); stop-copy
 * sends every block, the zero ones as ranges, then the state of its own
 * size; the destination ends with the source's VRAM and state, restored
 * last, and runs.  The default geometry writes stream 1.1, which every
 * release reads.
 */
static void glue_untracked_migration(struct kunit *test)
{
	struct fake_vf *src = fv_new(test, "gvp-fake-src", FV_PLAIN);
	struct fake_vf *dst = fv_new(test, "gvp-fake-dst", FV_PLAIN);
	size_t room = FV_VRAM + FV_ARCH + 65536;
	u8 *stream = vzalloc(room);
	struct vfio_precopy_info info = {};
	char *line, secs[64];
	struct file *sf, *rf;
	unsigned long est;
	ssize_t pre, all;
	loff_t pos = 0;
	int last, i;
	u32 chunk;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	for (i = 0; i < GPUMIG_BLOCK_SIZE; i++) {
		src->vram[i] = i * 3 + 1;			/* block 0 */
		src->vram[4 * GPUMIG_BLOCK_SIZE + i] = i ^ 0x5a;	/* block 4 */
	}
	line = fv_compat_line(test, src);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(line, "stream=1.1 "), "%s", line);
	KUNIT_EXPECT_NULL_MSG(test, strstr(line, "block_size"), "%s", line);
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
	KUNIT_EXPECT_EQ(test, le16_to_cpu(fv_header(stream).minor), 1);
	fv_sections(stream, all, secs, sizeof(secs), &chunk);
	KUNIT_EXPECT_STREQ(test, secs, "HNNVZZZVZAE");	/* untracked: each zero block read */
	KUNIT_EXPECT_EQ(test, chunk, (u32)GPUMIG_BLOCK_SIZE);

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

/* Migrate @src's whole stream into @dst; the stream's length, or an errno. */
static ssize_t fv_stream(struct kunit *test, struct fake_vf *src, u8 *stream, size_t room)
{
	struct file *sf = fv_go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	ssize_t n;
	int last;

	KUNIT_ASSERT_NOT_NULL(test, sf);
	n = fv_drain(sf, stream, room, &last);
	KUNIT_EXPECT_NULL(test, fv_go(test, src, VFIO_DEVICE_STATE_PRE_COPY_P2P));
	KUNIT_EXPECT_NULL(test, fv_go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
	n += fv_drain(sf, stream + n, room - n, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	KUNIT_EXPECT_NULL(test, fv_go(test, src, VFIO_DEVICE_STATE_STOP));
	fput(sf);
	return n;
}

/*
 * Another geometry end to end: VRAM pre-copied in 16 KiB blocks and only
 * the one written since resent; the P2P state stops the VF's P2P DMA, not
 * the VF; at the stop, the two vendor sections and then the three parts
 * of a 150,000-byte state, in stream 1.2 with the block in the
 * descriptor; exactly what MIG_DATA_SIZE said; the destination takes the
 * vendor sections as they come and the parts, in order, last.
 */
static void glue_geometry_migration(struct kunit *test)
{
	struct fake_vf *src = fv_new(test, "gvp-geo-src", FV_GEO);
	struct fake_vf *dst = fv_new(test, "gvp-geo-dst", FV_GEO);
	size_t room = 2 * FV_VRAM + 3 * FV_GEO_PART + 2 * FV_VENDOR_MAX;
	u8 *stream = vzalloc(room);
	struct vfio_precopy_info info = {};
	struct gpumig_wire_header h;
	char *line, secs[128];
	struct file *sf, *rf;
	ssize_t pre, all;
	unsigned long est;
	loff_t pos = 0;
	const char *r;
	int last;
	u32 chunk;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	memset(src->vram, 0x11, 1 << FV_GEO_SHIFT);				/* block 0 */
	memset(src->vram + (5 << FV_GEO_SHIFT), 0x55, 1 << FV_GEO_SHIFT);	/* block 5 */
	memset(dst->arch, 0, dst->arch_total);
	line = fv_compat_line(test, src);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(line, "stream=1.2 "), "%s", line);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(line, " block_size=16384\n"), "%s", line);

	sf = fv_go(test, src, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_ASSERT_NOT_NULL(test, sf);
	pre = fv_drain(sf, stream, room, &last);
	KUNIT_EXPECT_EQ(test, last, -ENOMSG);
	KUNIT_EXPECT_STREQ(test, src->log, "Trr");	/* the two data blocks */
	/* The device writes block 9: it is resent, and only its 16 KiB. */
	memset(src->vram + (9 << FV_GEO_SHIFT), 0x99, 1 << FV_GEO_SHIFT);
	set_bit(9, &src->dirty);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_precopy_info(sf, &info));
	KUNIT_EXPECT_EQ(test, info.dirty_bytes,
			(u64)gpumig_vram_section_size(1 << FV_GEO_SHIFT, false));
	KUNIT_EXPECT_NULL(test, fv_go(test, src, VFIO_DEVICE_STATE_PRE_COPY_P2P));
	KUNIT_EXPECT_STREQ(test, src->log, "TrrY");	/* P2P stopped, the VF runs */
	KUNIT_EXPECT_FALSE(test, src->paused);
	KUNIT_EXPECT_EQ(test, 0, gpumig_mig_data_size(src->mig, &est));
	KUNIT_EXPECT_NULL(test, fv_go(test, src, VFIO_DEVICE_STATE_STOP_COPY));
	all = pre + fv_drain(sf, stream + pre, room - pre, &last);
	KUNIT_EXPECT_EQ(test, last, 0);
	KUNIT_EXPECT_STREQ(test, src->log, "TrrYPIrVVAAA");
	KUNIT_EXPECT_EQ(test, (unsigned long)(all - pre), est);
	KUNIT_EXPECT_NULL(test, fv_go(test, src, VFIO_DEVICE_STATE_STOP));
	h = fv_header(stream);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(h.minor), 2);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(h.compat.block_shift), (u32)FV_GEO_SHIFT);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(h.compat.backend), (u32)FV_BACKEND);
	fv_sections(stream, all, secs, sizeof(secs), &chunk);
	KUNIT_EXPECT_STREQ(test, secs, "HNNVZVZVDDQQQE");
	KUNIT_EXPECT_EQ(test, chunk, 1U << FV_GEO_SHIFT);

	fv_go(test, dst, VFIO_DEVICE_STATE_STOP);
	rf = fv_go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	memset(dst->log, 0, sizeof(dst->log));
	KUNIT_EXPECT_EQ(test, kernel_write(rf, stream, all, &pos), (ssize_t)all);
	KUNIT_EXPECT_NULL(test, fv_go(test, dst, VFIO_DEVICE_STATE_STOP));
	r = strchr(dst->log, 'R');
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_STREQ_MSG(test, r, "RRR", "calls: %s", dst->log);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(dst->log, "vvRRR"), "calls: %s", dst->log);
	KUNIT_EXPECT_EQ(test, dst->vendor_got, 2U);
	KUNIT_EXPECT_EQ(test, dst->restored, 3U);
	KUNIT_EXPECT_EQ(test, memcmp(dst->vram, src->vram, FV_VRAM), 0);
	KUNIT_EXPECT_EQ(test, memcmp(dst->arch, src->arch, src->arch_total), 0);
	/*
	 * Runs again with its P2P DMA still stopped (since its way to STOP
	 * through RUNNING_P2P), then P2P too.
	 */
	KUNIT_EXPECT_TRUE(test, dst->p2p_stopped);
	memset(dst->log, 0, sizeof(dst->log));
	KUNIT_EXPECT_NULL(test, fv_go(test, dst, VFIO_DEVICE_STATE_RUNNING_P2P));
	KUNIT_EXPECT_STREQ(test, dst->log, "U");
	KUNIT_EXPECT_TRUE(test, dst->p2p_stopped);
	KUNIT_EXPECT_NULL(test, fv_go(test, dst, VFIO_DEVICE_STATE_RUNNING));
	KUNIT_EXPECT_STREQ(test, dst->log, "Uy");
	KUNIT_EXPECT_FALSE(test, dst->p2p_stopped);
	fput(rf);
	fput(sf);
	vfree(stream);
}

/* @dst refuses @src's stream; the write's error, its reason in @why. */
static int fv_refused(struct kunit *test, struct fake_vf *src, struct fake_vf *dst,
		      const char *why)
{
	size_t room = 2 * FV_VRAM + 3 * FV_GEO_PART + 2 * FV_VENDOR_MAX;
	u8 *stream = vzalloc(room);
	struct gpumig_mig_status st;
	struct file *rf;
	ssize_t n, w;
	loff_t pos = 0;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	n = fv_stream(test, src, stream, room);
	fv_go(test, dst, VFIO_DEVICE_STATE_STOP);
	rf = fv_go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	w = kernel_write(rf, stream, n, &pos);
	KUNIT_EXPECT_LT(test, w, 0);
	/* A refused stream never runs: the device stays in RESUMING. */
	KUNIT_EXPECT_TRUE(test, IS_ERR(gpumig_mig_set_state(dst->mig, VFIO_DEVICE_STATE_STOP)));
	KUNIT_EXPECT_EQ(test, dst->restored, 0U);
	gpumig_mig_status(dst->mig, &st);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(st.why, why), "reason: %s", st.why);
	gpumig_mig_reset(dst->mig);
	fput(rf);
	vfree(stream);
	return w;
}

/*
 * Each thing a destination of another geometry, or the provider's own
 * rule, does not take is refused with a reason, and nothing is restored:
 * another VRAM block (at the header), a state of another number of parts,
 * a layout too old for the provider, a vendor section the provider
 * refuses.
 */
static void glue_geometry_refusals(struct kunit *test)
{
	struct fake_vf *src = fv_new(test, "gvp-ref-src", FV_GEO);

	KUNIT_EXPECT_EQ(test, -EOPNOTSUPP,
			fv_refused(test, src, fv_new(test, "gvp-ref-plain", FV_PLAIN),
				   "VRAM block mismatch: source 16 KiB, destination 64 KiB"));
	KUNIT_EXPECT_EQ(test, -EINVAL,
			fv_refused(test, src, fv_new(test, "gvp-ref-parts", FV_GEO2),
				   "architectural state in 3 parts; this device's is in 2"));
	src = fv_new(test, "gvp-ref-old", FV_GEO);
	src->gvf.compat.arch_version = FV_ARCH_VERSION - 2;
	gpumig_mig_destroy(src->mig);
	src->mig = gpumig_mig_create(&src->vdev, &fv_vfio_ops, &src->glue.ops, &src->glue,
				     &src->gvf.compat, &src->gvf.geo);
	KUNIT_ASSERT_FALSE(test, IS_ERR(src->mig));
	KUNIT_EXPECT_EQ(test, -EOPNOTSUPP,
			fv_refused(test, src, fv_new(test, "gvp-ref-new", FV_GEO),
				   "state layout 5 is older than the fake reads (6 and 7)"));
	{
		struct fake_vf *dst = fv_new(test, "gvp-ref-vendor", FV_GEO);

		dst->vendor_refuse = true;
		KUNIT_EXPECT_EQ(test, -EINVAL,
				fv_refused(test, fv_new(test, "gvp-ref-vsrc", FV_GEO), dst,
					   "the device refused vendor section 0 (-22)"));
	}
}

/*
 * A geometry that needs stream 1.2, capped at 1.1 by the operator: the
 * migration is refused as it starts, with a reason, the VF still runs,
 * and it migrates once the cap allows.
 */
static void glue_geometry_capped(struct kunit *test)
{
	struct fake_vf *f = fv_new(test, "gvp-cap", FV_GEO);
	struct gpumig_mig_status st;
	struct file *filp;

	KUNIT_EXPECT_EQ(test, gpumig_mig_set_stream_max(f->mig, 1), 0);
	filp = gpumig_mig_set_state(f->mig, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(filp), -EOPNOTSUPP);
	gpumig_mig_status(f->mig, &st);
	KUNIT_EXPECT_STREQ(test, st.why,
			   "this device needs stream 1.2; migration/stream_max is 1.1");
	KUNIT_EXPECT_EQ(test, st.state, VFIO_DEVICE_STATE_RUNNING);
	KUNIT_EXPECT_FALSE(test, f->paused);
	KUNIT_EXPECT_NOT_NULL(test, strstr(fv_compat_line(test, f), "stream=1.2 "));
	KUNIT_EXPECT_EQ(test, gpumig_mig_set_stream_max(f->mig, 2), 0);
	filp = fv_go(test, f, VFIO_DEVICE_STATE_PRE_COPY);
	KUNIT_EXPECT_NOT_NULL(test, filp);
	if (filp)
		fput(filp);
	fv_go(test, f, VFIO_DEVICE_STATE_RUNNING);
}

/*
 * 128 KiB blocks without tracking: the head alone before the stop, then
 * the three blocks read whole and the one 100,000-byte part (larger than
 * a stream 1.1 state may be, so as a part).
 */
static void glue_big_block_untracked(struct kunit *test)
{
	struct fake_vf *src = fv_new(test, "gvp-big-src", FV_BIG);
	struct fake_vf *dst = fv_new(test, "gvp-big-dst", FV_BIG);
	size_t room = 2 * FV_VRAM + FV_BIG_ARCH;
	u8 *stream = vzalloc(room);
	char *line, secs[64];
	struct file *rf;
	loff_t pos = 0;
	ssize_t n;
	u32 chunk;

	KUNIT_ASSERT_NOT_NULL(test, stream);
	memset(src->vram + 100, 0xaa, 300000);		/* over all three blocks */
	line = fv_compat_line(test, src);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(line, " block_size=131072\n"), "%s", line);
	n = fv_stream(test, src, stream, room);
	KUNIT_EXPECT_STREQ(test, src->log, "PIrrrA");
	fv_sections(stream, n, secs, sizeof(secs), &chunk);
	KUNIT_EXPECT_STREQ(test, secs, "HNNVVVQE");
	KUNIT_EXPECT_EQ(test, chunk, 1U << FV_BIG_SHIFT);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(fv_header(stream).minor), 2);

	memset(dst->arch, 0, dst->arch_total);
	fv_go(test, dst, VFIO_DEVICE_STATE_STOP);
	rf = fv_go(test, dst, VFIO_DEVICE_STATE_RESUMING);
	KUNIT_ASSERT_NOT_NULL(test, rf);
	KUNIT_EXPECT_EQ(test, kernel_write(rf, stream, n, &pos), n);
	KUNIT_EXPECT_NULL(test, fv_go(test, dst, VFIO_DEVICE_STATE_STOP));
	KUNIT_EXPECT_EQ(test, memcmp(dst->vram, src->vram, FV_VRAM), 0);
	KUNIT_EXPECT_EQ(test, memcmp(dst->arch, src->arch, FV_BIG_ARCH), 0);
	fput(rf);
	vfree(stream);
}

/*
 * The tenant leaves: the provider hears of it first, then checks the
 * device; one whose reset it did not see is quarantined, its VRAM kept;
 * with the PF's driver gone nothing can be verified.
 */
static void glue_teardown_quarantines(struct kunit *test)
{
	struct fake_vf *f = fv_new(test, "gvp-fake-close", FV_PLAIN);
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
	KUNIT_CASE(glue_geometry_migration),
	KUNIT_CASE(glue_geometry_refusals),
	KUNIT_CASE(glue_geometry_capped),
	KUNIT_CASE(glue_big_block_untracked),
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
