// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for the migration stream codec (drivers/gpumig/stream_*.c).
 *
 * A fake destination records every callback.  The reference stream holds
 * one section of every kind; the tests round-trip it, feed it in every
 * split, corrupt every byte of it, truncate it at every offset and feed
 * hand-made hostile sections.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/test.h>
#include <linux/crc32.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <gpumig/compat.h>
#include <gpumig/stream.h>

#define T_VRAM_SIZE	(1024 * 1024)
#define T_CHUNK		4096
#define T_MAX_CALLS	32

/*
 * kind: h header, v/z VRAM data/zero, r zero range, a arch, q arch part,
 * d vendor, e end, n note, p placed
 */
struct fake_call {
	char kind;
	u64 offset;
	u32 len;
	u32 sum;		/* crc of the data handed over */
};

struct fake_dst {
	struct gpumig_compat self;
	struct gpumig_compat got;
	struct fake_call calls[T_MAX_CALLS];
	int nr_calls;
	int fail_at;		/* call index that returns -EIO, or -1 */
	char msg[GPUMIG_PARSER_MSG_LEN];
	struct gpumig_parser *parser;
};

static int fake_record(struct fake_dst *d, char kind, u64 offset,
		       const void *data, u32 len)
{
	struct fake_call *c;

	if (d->nr_calls >= T_MAX_CALLS)
		return -ENOSPC;
	c = &d->calls[d->nr_calls];
	c->kind = kind;
	c->offset = offset;
	c->len = len;
	c->sum = data ? crc32_le(0, (const u8 *)data, len) : 0;
	if (d->nr_calls++ == d->fail_at)
		return -EIO;
	return 0;
}

static int fake_header(void *priv, u16 major, u16 minor,
		       const struct gpumig_compat *src)
{
	struct fake_dst *d = priv;
	int ret;

	d->got = *src;
	ret = gpumig_compat_check(src, &d->self, d->msg, sizeof(d->msg));
	if (ret) {
		gpumig_parser_set_error(d->parser, ret, "%s", d->msg);
		return ret;
	}
	return fake_record(d, 'h', major, NULL, minor);
}

static int fake_vram(void *priv, u64 offset, const void *data, u32 len)
{
	return fake_record(priv, data ? 'v' : 'z', offset, data, len);
}

static int fake_zero(void *priv, u64 offset, u64 len)
{
	if (len > U32_MAX)
		return -E2BIG;
	return fake_record(priv, 'r', offset, NULL, len);
}

static int fake_arch(void *priv, const void *data, u32 len)
{
	return fake_record(priv, 'a', 0, data, len);
}

static int fake_part(void *priv, u16 part, u16 nr_parts, const void *data, u32 len)
{
	return fake_record(priv, 'q', part | (u32)nr_parts << 16, data, len);
}

static int fake_vendor(void *priv, u32 index, const void *data, u32 len)
{
	return fake_record(priv, 'd', index, data, len);
}

static int fake_end(void *priv)
{
	return fake_record(priv, 'e', 0, NULL, 0);
}

static int fake_postcopy(void *priv, const u8 *token)
{
	return fake_record(priv, 'p', token[0], token, GPUMIG_TOKEN_LEN);
}

static int fake_owed(void *priv, const u8 *token, u64 first, u64 nr, const u8 *map)
{
	return fake_record(priv, 'o', first, map, DIV_ROUND_UP(nr, 8));
}

static const struct gpumig_parser_ops fake_ops = {
	.header = fake_header,
	.vram = fake_vram,
	.zero = fake_zero,
	.arch = fake_arch,
	.arch_part = fake_part,
	.vendor = fake_vendor,
	.end = fake_end,
	.postcopy = fake_postcopy,
	.owed = fake_owed,
};

static const struct gpumig_parser_limits t_limits = {
	.vram_size = T_VRAM_SIZE,
	.max_chunk = T_CHUNK,
	.max_arch = 512,
	.max_vendor = 256,
	.max_skip = 1024,
};

#define T_BACKEND	0xf0	/* the test's own family */

static void t_compat(struct gpumig_compat *c)
{
	memset(c, 0, sizeof(*c));
	strscpy(c->type_name, "simgpu-test", sizeof(c->type_name));
	c->vram_size = T_VRAM_SIZE;
	c->backend = T_BACKEND;
	c->nr_queues = 4;
	c->features = 0x5;
	c->page_size = 4096;
	c->arch_version = 1;
	c->block_shift = GPUMIG_BLOCK_SHIFT_DEFAULT;
	c->stream_minor = 1;
}

struct t_stream {
	u8 *buf;
	size_t len;
	size_t size;
	struct gpumig_writer w;
};

static void t_stream_free(void *p)
{
	struct t_stream *s = p;

	kfree(s->buf);
}

static struct t_stream *t_stream_new(struct kunit *test, size_t size)
{
	struct t_stream *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	s->buf = kzalloc(size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s->buf);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, t_stream_free, s));
	s->size = size;
	gpumig_writer_init(&s->w);
	return s;
}

static void t_put(struct kunit *test, struct t_stream *s, ssize_t n)
{
	KUNIT_ASSERT_GT(test, n, 0);
	s->len += n;
}

static u8 t_pattern[T_CHUNK];
static u8 t_arch[96];
static u8 t_work[40];
static u8 t_part[24];

/*
 * Header, a data chunk, a zero chunk, a zero range, a note, arch, a vendor
 * section, an arch part, end: one of each kind the codec knows.
 */
static struct t_stream *t_reference(struct kunit *test, u32 chunk_len)
{
	struct t_stream *s = t_stream_new(test, 4 * T_CHUNK);
	struct gpumig_compat c;
	size_t i;

	for (i = 0; i < sizeof(t_pattern); i++)
		t_pattern[i] = (u8)(i * 7 + 3);
	for (i = 0; i < sizeof(t_arch); i++)
		t_arch[i] = (u8)(0xa0 ^ i);
	for (i = 0; i < sizeof(t_work); i++)
		t_work[i] = (u8)(0x50 + i);
	for (i = 0; i < sizeof(t_part); i++)
		t_part[i] = (u8)(0x33 ^ i);

	t_compat(&c);
	t_put(test, s, gpumig_emit_header(&s->w, s->buf + s->len, s->size - s->len, &c));
	t_put(test, s, gpumig_emit_vram(&s->w, s->buf + s->len, s->size - s->len,
					0x2000, t_pattern, chunk_len));
	t_put(test, s, gpumig_emit_vram(&s->w, s->buf + s->len, s->size - s->len,
					0x10000, NULL, T_CHUNK));
	t_put(test, s, gpumig_emit_zero(&s->w, s->buf + s->len, s->size - s->len,
					0x20000, T_VRAM_SIZE - 0x20000));
	t_put(test, s, gpumig_emit_blob(&s->w, s->buf + s->len, s->size - s->len,
					GPUMIG_SEC_NOTE, "hello", 5));
	t_put(test, s, gpumig_emit_blob(&s->w, s->buf + s->len, s->size - s->len,
					GPUMIG_SEC_ARCH, t_arch, sizeof(t_arch)));
	t_put(test, s, gpumig_emit_vendor(&s->w, s->buf + s->len, s->size - s->len,
					  3, t_work, sizeof(t_work)));
	t_put(test, s, gpumig_emit_arch_part(&s->w, s->buf + s->len, s->size - s->len,
					     1, 2, t_part, sizeof(t_part)));
	t_put(test, s, gpumig_emit_end(&s->w, s->buf + s->len, s->size - s->len));
	return s;
}

static void t_parser_free(void *p)
{
	gpumig_parser_destroy(p);
}

static struct fake_dst *t_dst(struct kunit *test)
{
	struct fake_dst *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, d);
	d->parser = kunit_kzalloc(test, sizeof(*d->parser), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d->parser);
	t_compat(&d->self);
	d->fail_at = -1;
	KUNIT_ASSERT_EQ(test, 0, gpumig_parser_init(d->parser, &t_limits,
						    &fake_ops, d));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, t_parser_free,
							   d->parser));
	return d;
}

/* Feed @len bytes in pieces of at most @step; return the final result. */
static int t_feed(struct fake_dst *d, const u8 *buf, size_t len, size_t step)
{
	size_t off = 0;

	while (off < len) {
		size_t n = min(step, len - off);
		ssize_t r = gpumig_parser_feed(d->parser, buf + off, n);

		if (r < 0)
			return r;
		if (r != n)
			return -EFAULT;
		off += n;
	}
	return gpumig_parser_finish(d->parser);
}

static void t_check_reference_calls(struct kunit *test, struct fake_dst *d,
				    u32 chunk_len)
{
	static const char order[] = "hvzradqe";
	int i;

	KUNIT_ASSERT_EQ(test, d->nr_calls, (int)strlen(order));
	for (i = 0; i < d->nr_calls; i++)
		KUNIT_EXPECT_EQ(test, d->calls[i].kind, order[i]);
	KUNIT_EXPECT_EQ(test, d->calls[0].offset, (u64)GPUMIG_STREAM_MAJOR);
	KUNIT_EXPECT_EQ(test, d->calls[1].offset, 0x2000ULL);
	KUNIT_EXPECT_EQ(test, d->calls[1].len, chunk_len);
	KUNIT_EXPECT_EQ(test, d->calls[1].sum, crc32_le(0, t_pattern, chunk_len));
	KUNIT_EXPECT_EQ(test, d->calls[2].offset, 0x10000ULL);
	KUNIT_EXPECT_EQ(test, d->calls[2].len, (u32)T_CHUNK);
	KUNIT_EXPECT_EQ(test, d->calls[3].offset, 0x20000ULL);
	KUNIT_EXPECT_EQ(test, d->calls[3].len, (u32)(T_VRAM_SIZE - 0x20000));
	KUNIT_EXPECT_EQ(test, d->calls[4].sum, crc32_le(0, t_arch, sizeof(t_arch)));
	KUNIT_EXPECT_EQ(test, d->calls[5].sum, crc32_le(0, t_work, sizeof(t_work)));
	KUNIT_EXPECT_EQ(test, d->calls[5].offset, 3ULL);
	KUNIT_EXPECT_EQ(test, d->calls[6].sum, crc32_le(0, t_part, sizeof(t_part)));
	KUNIT_EXPECT_EQ(test, d->calls[6].offset, 1ULL | 2 << 16);
	KUNIT_EXPECT_EQ(test, d->got.block_shift, (u32)GPUMIG_BLOCK_SHIFT_DEFAULT);
	KUNIT_EXPECT_EQ(test, d->got.stream_minor, (u16)1);
	KUNIT_EXPECT_STREQ(test, d->got.type_name, "simgpu-test");
	KUNIT_EXPECT_EQ(test, d->got.vram_size, (u64)T_VRAM_SIZE);
	KUNIT_EXPECT_EQ(test, d->got.features, 0x5ULL);
	KUNIT_EXPECT_EQ(test, d->got.nr_queues, 4U);
}

static void stream_round_trip(struct kunit *test)
{
	struct t_stream *s = t_reference(test, T_CHUNK);
	struct fake_dst *d = t_dst(test);

	KUNIT_EXPECT_EQ(test, s->len, (size_t)s->w.bytes);
	KUNIT_EXPECT_EQ(test, s->w.seq, 9U);
	KUNIT_ASSERT_EQ(test, 0, t_feed(d, s->buf, s->len, s->len));
	KUNIT_EXPECT_TRUE(test, gpumig_parser_done(d->parser));
	t_check_reference_calls(test, d, T_CHUNK);
}

/*
 * The stream's CRC is advanced from each payload's own CRC, not by a
 * second pass: it must equal crc32_le() over the bytes, computed plainly,
 * for every length and seed.
 */
static u32 t_extend(u32 seed, size_t len)
{
	return gpumig_crc_extend(seed, crc32_le(~0U, t_pattern, len), len);
}

static void stream_crc_extend(struct kunit *test)
{
	struct t_stream *s = t_reference(test, T_CHUNK);
	struct gpumig_wire_end e;
	size_t len, end_off = s->len - sizeof(struct gpumig_sec_hdr) - sizeof(e);
	u32 seeds[] = { ~0U, 0, 0x12345678, 0x80000001 };
	int i;

	memcpy(&e, s->buf + end_off + sizeof(struct gpumig_sec_hdr), sizeof(e));
	KUNIT_EXPECT_EQ(test, le32_to_cpu(e.stream_crc), crc32_le(~0U, s->buf, end_off));
	for (i = 0; i < ARRAY_SIZE(seeds); i++)
		for (len = 0; len <= 300; len += len < 20 ? 1 : 37)
			KUNIT_EXPECT_EQ_MSG(test, t_extend(seeds[i], len),
					    crc32_le(seeds[i], t_pattern, len),
					    "seed %x len %zu", seeds[i], len);
	KUNIT_EXPECT_EQ(test, t_extend(0x5a5a5a5a, T_CHUNK),
			crc32_le(0x5a5a5a5a, t_pattern, T_CHUNK));
}

/*
 * Bytes put straight into the parser's buffer (gpumig_parser_room() and
 * gpumig_parser_commit(), as a resuming file copies from the user) parse
 * as fed ones do, in any piece size; a commit outside a payload fails.
 */
static void stream_direct_commit(struct kunit *test)
{
	struct t_stream *s = t_reference(test, T_CHUNK);
	static const size_t steps[] = { 1, 7, 100, 4096, 1 << 20 };
	int i;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		struct fake_dst *d = t_dst(test);
		size_t off = 0, direct = 0;
		ssize_t r = 0;

		while (off < s->len && r >= 0) {
			size_t n = min(steps[i], s->len - off), room;
			void *dst;

			room = gpumig_parser_room(d->parser, &dst);
			if (room) {
				n = min(n, room);
				memcpy(dst, s->buf + off, n);
				r = gpumig_parser_commit(d->parser, n);
				direct += n;
			} else {
				n = min(n, gpumig_parser_hdr_left(d->parser) ?: n);
				r = gpumig_parser_feed(d->parser, s->buf + off, n);
			}
			off += n;
		}
		KUNIT_ASSERT_GE(test, r, 0);
		KUNIT_ASSERT_EQ(test, 0, gpumig_parser_finish(d->parser));
		t_check_reference_calls(test, d, T_CHUNK);
		/* Every payload but the skipped note's went in directly. */
		KUNIT_EXPECT_GE(test, direct, (size_t)T_CHUNK + sizeof(t_arch));
	}
	{
		struct fake_dst *d = t_dst(test);

		KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_parser_commit(d->parser, 1));
	}
}

/* A destination that places VRAM data itself: 'p' calls, crc32_le(~0) sums. */
static int fake_placed(void *priv, u64 offset, u32 len, u32 crc)
{
	struct fake_dst *d = priv;
	int ret = fake_record(d, 'p', offset, NULL, len);

	d->calls[d->nr_calls - 1].sum = crc;
	return ret;
}

static const struct gpumig_parser_ops placing_ops = {
	.header = fake_header,
	.vram = fake_vram,
	.vram_placed = fake_placed,
	.zero = fake_zero,
	.arch = fake_arch,
	.arch_part = fake_part,
	.vendor = fake_vendor,
	.end = fake_end,
};

static struct fake_dst *t_placing_dst(struct kunit *test)
{
	struct fake_dst *d = t_dst(test);

	gpumig_parser_destroy(d->parser);
	KUNIT_ASSERT_EQ(test, 0, gpumig_parser_init(d->parser, &t_limits, &placing_ops, d));
	return d;
}

/*
 * Offer @s to @d as a resuming file does: VRAM data placed into @vram (a
 * T_VRAM_SIZE buffer) while gpumig_parser_vram_room() allows and fewer
 * than @place_max bytes of the chunk were placed, the rest through the
 * parser's buffer, in pieces of at most @step.  Return the final result.
 */
static int t_offer_placing(struct kunit *test, struct fake_dst *d, const u8 *buf, size_t len,
			   size_t step, u32 place_max, u8 *vram)
{
	size_t off = 0, placed = 0;
	ssize_t r = 0;

	while (off < len && r >= 0) {
		size_t n = min(step, len - off), room;
		void *dst;
		u64 voff;
		u32 crc;

		room = gpumig_parser_vram_room(d->parser, &voff, &crc);
		if (room && placed < place_max) {
			n = min3(n, room, place_max - placed);
			memcpy(vram + voff, buf + off, n);
			r = gpumig_parser_vram_commit(d->parser, n, crc32_le(crc, vram + voff, n));
			placed += n;
			off += n;
			continue;
		}
		room = gpumig_parser_room(d->parser, &dst);
		if (room) {
			n = min(n, room);
			memcpy(dst, buf + off, n);
			r = gpumig_parser_commit(d->parser, n);
			/* Once a data byte came through the buffer, none is placed. */
			if (r >= 0 && placed && placed < T_CHUNK)
				KUNIT_EXPECT_EQ(test, 0,
						gpumig_parser_vram_room(d->parser, &voff, &crc));
		} else {
			n = min(n, gpumig_parser_hdr_left(d->parser) ?: n);
			r = gpumig_parser_feed(d->parser, buf + off, n);
		}
		off += n;
	}
	return r < 0 ? r : gpumig_parser_finish(d->parser);
}

static void t_vram_free(void *p)
{
	kvfree(p);
}

/*
 * A VRAM chunk's data placed by the caller (gpumig_parser_vram_room() and
 * gpumig_parser_vram_commit()), whole or in part, in any piece size: the
 * same stream, the placed part announced with its own CRC, the rest
 * through @vram; data that fails its CRC is never announced; a chunk
 * outside VRAM is refused before a byte of it is placed.
 */
static void stream_vram_placed(struct kunit *test)
{
	static const size_t steps[] = { 1, 7, 100, 4096, 1 << 20 };
	static const u32 splits[] = { T_CHUNK, T_CHUNK / 2, 1 };
	struct t_stream *s = t_reference(test, T_CHUNK);
	u8 *vram = kvzalloc(T_VRAM_SIZE, GFP_KERNEL);
	const size_t data = 2 * sizeof(struct gpumig_sec_hdr) +
			    sizeof(struct gpumig_wire_header) + sizeof(struct gpumig_wire_vram);
	struct fake_dst *d;
	u8 *bad;
	int i, j;

	KUNIT_ASSERT_NOT_NULL(test, vram);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, t_vram_free, vram));
	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		for (j = 0; j < ARRAY_SIZE(splits); j++) {
			u32 split = splits[j];

			memset(vram, 0, T_VRAM_SIZE);
			d = t_placing_dst(test);
			KUNIT_ASSERT_EQ_MSG(test, 0, t_offer_placing(test, d, s->buf, s->len,
								     steps[i], split, vram),
					    "step %zu split %u: %s", steps[i], split,
					    gpumig_parser_error(d->parser));
			KUNIT_EXPECT_EQ(test, 0, memcmp(vram + 0x2000, t_pattern, split));
			KUNIT_ASSERT_EQ(test, d->nr_calls, split < T_CHUNK ? 9 : 8);
			KUNIT_EXPECT_EQ(test, d->calls[1].kind, 'p');
			KUNIT_EXPECT_EQ(test, d->calls[1].offset, 0x2000ULL);
			KUNIT_EXPECT_EQ(test, d->calls[1].len, split);
			KUNIT_EXPECT_EQ(test, d->calls[1].sum, crc32_le(~0U, t_pattern, split));
			if (split < T_CHUNK) {
				KUNIT_EXPECT_EQ(test, d->calls[2].kind, 'v');
				KUNIT_EXPECT_EQ(test, d->calls[2].offset, 0x2000ULL + split);
				KUNIT_EXPECT_EQ(test, d->calls[2].len, T_CHUNK - split);
				KUNIT_EXPECT_EQ(test, d->calls[2].sum,
						crc32_le(0, t_pattern + split, T_CHUNK - split));
			}
			KUNIT_EXPECT_EQ(test, d->calls[d->nr_calls - 1].kind, 'e');
		}
	}

	/* A flipped data byte: placed, refused at the chunk's end, never announced. */
	bad = kunit_kmalloc(test, s->len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bad);
	memcpy(bad, s->buf, s->len);
	bad[data + 100] ^= 0x40;
	d = t_placing_dst(test);
	KUNIT_EXPECT_EQ(test, -EBADMSG, t_offer_placing(test, d, bad, s->len, 4096, T_CHUNK, vram));
	KUNIT_EXPECT_NOT_NULL(test, strstr(gpumig_parser_error(d->parser),
					   "payload checksum mismatch"));
	for (i = 0; i < d->nr_calls; i++)
		KUNIT_EXPECT_NE(test, d->calls[i].kind, 'p');

	/*
	 * A chunk reaching past VRAM: nothing of it is placed, and it is
	 * refused once its section is whole (after its CRC, as in any split).
	 */
	s = t_stream_new(test, 4 * T_CHUNK);
	{
		struct gpumig_compat c;
		u64 voff;
		u32 crc;

		t_compat(&c);
		t_put(test, s, gpumig_emit_header(&s->w, s->buf, s->size, &c));
		t_put(test, s, gpumig_emit_vram(&s->w, s->buf + s->len, s->size - s->len,
						T_VRAM_SIZE - 100, t_pattern, T_CHUNK));
		d = t_placing_dst(test);
		KUNIT_ASSERT_EQ(test, data, (size_t)gpumig_parser_feed(d->parser, s->buf, data));
		KUNIT_EXPECT_EQ(test, 0, gpumig_parser_vram_room(d->parser, &voff, &crc));
		KUNIT_EXPECT_EQ(test, -ERANGE,
				gpumig_parser_feed(d->parser, s->buf + data, s->len - data));
		KUNIT_EXPECT_NOT_NULL(test, strstr(gpumig_parser_error(d->parser),
						   "lies outside"));
	}

	/* Nothing may be placed outside a chunk's data. */
	d = t_placing_dst(test);
	KUNIT_EXPECT_EQ(test, -EINVAL, gpumig_parser_vram_commit(d->parser, 1, 0));
	d = t_dst(test);	/* no @vram_placed: nothing is ever placed */
	{
		u64 voff;
		u32 crc;

		s = t_reference(test, T_CHUNK);
		KUNIT_ASSERT_EQ(test, data, (size_t)gpumig_parser_feed(d->parser, s->buf, data));
		KUNIT_EXPECT_EQ(test, 0, gpumig_parser_vram_room(d->parser, &voff, &crc));
	}
}

static void stream_section_sizes(struct kunit *test)
{
	struct t_stream *s = t_stream_new(test, 2 * T_CHUNK);
	ssize_t n;

	n = gpumig_emit_vram(&s->w, s->buf, s->size, 0, t_pattern, 100);
	KUNIT_EXPECT_EQ(test, (size_t)n, gpumig_vram_section_size(100, false));
	n = gpumig_emit_vram(&s->w, s->buf, s->size, 0, NULL, 100);
	KUNIT_EXPECT_EQ(test, (size_t)n, gpumig_vram_section_size(100, true));
	n = gpumig_emit_blob(&s->w, s->buf, s->size, GPUMIG_SEC_ARCH, t_arch, 33);
	KUNIT_EXPECT_EQ(test, (size_t)n, gpumig_blob_section_size(33));
	/* Too little room: nothing written, the writer unchanged. */
	n = gpumig_emit_blob(&s->w, s->buf, 10, GPUMIG_SEC_ARCH, t_arch, 33);
	KUNIT_EXPECT_EQ(test, n, (ssize_t)-ENOSPC);
	KUNIT_EXPECT_EQ(test, s->w.seq, 3U);
	/* Framing types cannot be emitted as blobs. */
	n = gpumig_emit_blob(&s->w, s->buf, s->size, GPUMIG_SEC_END, t_arch, 4);
	KUNIT_EXPECT_EQ(test, n, (ssize_t)-EINVAL);
}

/* Two pieces, split at every position, and byte by byte. */
static void stream_every_split(struct kunit *test)
{
	struct t_stream *s = t_reference(test, 64);
	size_t split;

	for (split = 0; split <= s->len; split++) {
		struct fake_dst *d = t_dst(test);
		ssize_t r1, r2;

		r1 = gpumig_parser_feed(d->parser, s->buf, split);
		r2 = gpumig_parser_feed(d->parser, s->buf + split, s->len - split);
		KUNIT_ASSERT_EQ_MSG(test, r1, (ssize_t)split, "split %zu", split);
		KUNIT_ASSERT_EQ_MSG(test, r2, (ssize_t)(s->len - split), "split %zu", split);
		KUNIT_ASSERT_EQ(test, 0, gpumig_parser_finish(d->parser));
		t_check_reference_calls(test, d, 64);
		kunit_release_action(test, t_parser_free, d->parser);
	}
	{
		struct fake_dst *d = t_dst(test);

		KUNIT_ASSERT_EQ(test, 0, t_feed(d, s->buf, s->len, 1));
		t_check_reference_calls(test, d, 64);
	}
}

/* Flipping any bits of any single byte must be detected. */
static void stream_every_corruption(struct kunit *test)
{
	static const u8 flips[] = { 0x01, 0x80, 0xff, 0x5a };
	struct t_stream *s = t_reference(test, 64);
	size_t off;
	int f;

	for (off = 0; off < s->len; off++) {
		for (f = 0; f < ARRAY_SIZE(flips); f++) {
			struct fake_dst *d = t_dst(test);
			int ret;

			s->buf[off] ^= flips[f];
			ret = t_feed(d, s->buf, s->len, 37);
			s->buf[off] ^= flips[f];
			KUNIT_ASSERT_LT_MSG(test, ret, 0,
					    "corruption 0x%02x at %zu accepted",
					    flips[f], off);
			KUNIT_EXPECT_NE(test, d->parser->msg[0], '\0');
			/* Nothing after the damaged section reached the device. */
			KUNIT_EXPECT_FALSE(test, gpumig_parser_done(d->parser));
			kunit_release_action(test, t_parser_free, d->parser);
		}
	}
}

static void stream_every_truncation(struct kunit *test)
{
	struct t_stream *s = t_reference(test, 64);
	size_t cut;

	for (cut = 0; cut < s->len; cut++) {
		struct fake_dst *d = t_dst(test);
		int ret = t_feed(d, s->buf, cut, 29);

		KUNIT_ASSERT_EQ_MSG(test, ret, -ENODATA, "truncated at %zu", cut);
		KUNIT_EXPECT_NOT_NULL(test, strstr(d->parser->msg,
						   cut ? "truncated" : "empty"));
		KUNIT_EXPECT_NE(test, d->nr_calls ? d->calls[d->nr_calls - 1].kind : 0,
				'e');
		kunit_release_action(test, t_parser_free, d->parser);
	}
}

static void stream_data_after_end(struct kunit *test)
{
	struct t_stream *s = t_reference(test, 64);
	struct fake_dst *d = t_dst(test);

	KUNIT_ASSERT_EQ(test, 0, t_feed(d, s->buf, s->len, s->len));
	KUNIT_EXPECT_EQ(test, gpumig_parser_feed(d->parser, s->buf, 1),
			(ssize_t)-EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, strstr(d->parser->msg, "after the end"));
	/* Sticky: finishing now reports the same error. */
	KUNIT_EXPECT_EQ(test, gpumig_parser_finish(d->parser), -EINVAL);
}

static void stream_callback_error_sticks(struct kunit *test)
{
	struct t_stream *s = t_reference(test, 64);
	struct fake_dst *d = t_dst(test);

	d->fail_at = 1;		/* the first VRAM chunk */
	KUNIT_EXPECT_EQ(test, t_feed(d, s->buf, s->len, 11), -EIO);
	KUNIT_EXPECT_EQ(test, d->nr_calls, 2);
	KUNIT_EXPECT_EQ(test, gpumig_parser_feed(d->parser, s->buf, 1),
			(ssize_t)-EIO);
	KUNIT_EXPECT_NOT_NULL(test, strstr(d->parser->msg, "0x2000"));
}

/* ---- hostile, well-checksummed sections --------------------------- */

static __le32 t_hdr_crc(const struct gpumig_sec_hdr *h)
{
	return cpu_to_le32(crc32_le(~0U, (const u8 *)h,
				    offsetof(struct gpumig_sec_hdr, hdr_crc)));
}

/* Frame an arbitrary section with correct checksums. */
static size_t t_raw_section(u8 *out, u16 type, u32 seq, const void *payload,
			    u32 len, u32 claimed_len)
{
	struct gpumig_sec_hdr h = {
		.magic = cpu_to_le32(GPUMIG_SEC_MAGIC),
		.type = cpu_to_le16(type),
		.seq = cpu_to_le32(seq),
		.len = cpu_to_le32(claimed_len),
		.payload_crc = cpu_to_le32(crc32_le(~0U, (const u8 *)payload, len)),
	};

	h.hdr_crc = t_hdr_crc(&h);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), payload, len);
	return sizeof(h) + len;
}

struct hostile_case {
	const char *name;
	int err;
	const char *msg;	/* substring of the parser's message */
};

enum hostile_kind {
	H_HUGE_LEN, H_HUGE_ARCH, H_VRAM_OUTSIDE, H_VRAM_WRAP, H_VRAM_LEN_MISMATCH,
	H_VRAM_ZERO_WITH_DATA, H_VRAM_SHORT, H_UNKNOWN_MANDATORY, H_NO_HEADER,
	H_TWO_HEADERS, H_SEQ_GAP, H_REORDERED, H_MAJOR, H_FLAGS, H_END_COUNT,
	H_VRAM_FLAGS, H_OPTIONAL_TOO_BIG, H_ZERO_OUTSIDE, H_ZERO_WRAP, H_ZERO_EMPTY,
	H_ZERO_LEN, H_WORK, H_PART_INDEX, H_PART_FLAGS, H_PART_SHORT, H_PART_HUGE,
	H_VENDOR_FLAGS, H_VENDOR_HUGE, H_BLOCK_OLD_MINOR, H_BLOCK_BAD, H_RESERVED,
	H_PC_FLAGS, H_PC_NO_TOKEN, H_PC_LEN, H_OWED_SHORT, H_OWED_LEN, H_OWED_BITS,
	H_OWED_EMPTY, H_NEWER_MINOR,
	H_COUNT
};

static const struct hostile_case hostile_cases[H_COUNT] = {
	[H_HUGE_LEN] = { "VRAM length 4 GiB", -EMSGSIZE, "exceeds" },
	[H_HUGE_ARCH] = { "arch state too large", -EMSGSIZE, "architectural state section" },
	[H_VRAM_OUTSIDE] = { "VRAM chunk past the end", -ERANGE, "outside" },
	[H_VRAM_WRAP] = { "VRAM offset wraps", -ERANGE, "outside" },
	[H_VRAM_LEN_MISMATCH] = { "VRAM inner length lies", -EINVAL, "does not match" },
	[H_VRAM_ZERO_WITH_DATA] = { "zero chunk carrying data", -EINVAL, "does not match" },
	[H_VRAM_SHORT] = { "VRAM section shorter than its header", -EINVAL, "shorter" },
	[H_UNKNOWN_MANDATORY] = { "unknown mandatory section", -EPROTONOSUPPORT,
				  "unknown mandatory" },
	[H_NO_HEADER] = { "stream without header", -EINVAL, "does not start" },
	[H_TWO_HEADERS] = { "second header", -EINVAL, "second header" },
	[H_SEQ_GAP] = { "missing section", -EINVAL, "out of order" },
	[H_REORDERED] = { "reordered sections", -EINVAL, "out of order" },
	[H_MAJOR] = { "stream major version 2", -EPROTONOSUPPORT, "version 2.1" },
	[H_FLAGS] = { "unknown section flags", -EINVAL, "flags" },
	[H_END_COUNT] = { "end section lies about the count", -EINVAL, "end section counts" },
	[H_VRAM_FLAGS] = { "unknown chunk flags", -EINVAL, "unknown flags" },
	[H_OPTIONAL_TOO_BIG] = { "optional section over the skip limit", -EMSGSIZE, "exceeds" },
	[H_ZERO_OUTSIDE] = { "zero range past the end", -ERANGE, "outside" },
	[H_ZERO_WRAP] = { "zero range wraps", -ERANGE, "outside" },
	[H_ZERO_EMPTY] = { "empty zero range", -EINVAL, "empty zero range" },
	[H_ZERO_LEN] = { "zero range section of the wrong size", -EINVAL, "expected 16" },
	[H_WORK] = { "in-flight work section (never produced)", -EPROTONOSUPPORT,
		     "unknown mandatory section type 0x0004" },
	[H_PART_INDEX] = { "state part 2 of 2", -EINVAL, "part 2 of 2" },
	[H_PART_FLAGS] = { "state part with flags", -EINVAL, "unknown flags" },
	[H_PART_SHORT] = { "state part shorter than its header", -EINVAL,
			   "shorter than its own header" },
	[H_PART_HUGE] = { "state part over the limit", -EMSGSIZE, "exceeds" },
	[H_VENDOR_FLAGS] = { "vendor section with flags", -EINVAL, "unknown flags" },
	[H_VENDOR_HUGE] = { "vendor section over the limit", -EMSGSIZE, "exceeds" },
	[H_BLOCK_OLD_MINOR] = { "VRAM block in a 1.1 header", -EINVAL, "reserved bits" },
	[H_BLOCK_BAD] = { "VRAM block of 1 GiB", -EINVAL, "not one a stream can carry" },
	[H_RESERVED] = { "reserved descriptor bits", -EINVAL, "reserved bits" },
	[H_PC_FLAGS] = { "post-copy section with flags", -EINVAL, "unknown flags" },
	[H_PC_NO_TOKEN] = { "post-copy section without a token", -EINVAL, "no session token" },
	[H_PC_LEN] = { "post-copy section of the wrong size", -EINVAL, "expected 32" },
	[H_OWED_SHORT] = { "owed blocks shorter than their header", -EINVAL,
			   "shorter than its own header" },
	[H_OWED_LEN] = { "owed blocks: bitmap and count disagree", -EINVAL,
			 "owed-blocks section of" },
	[H_OWED_BITS] = { "owed blocks: bits past the count", -EINVAL, "past its" },
	[H_OWED_EMPTY] = { "owed blocks: none covered", -EINVAL, "for 0 blocks" },
	[H_NEWER_MINOR] = { "a newer minor than this reader's", -EPROTONOSUPPORT,
			    "newer than this destination reads" },
};

static void hostile_desc(const struct hostile_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(hostile, hostile_cases, hostile_desc);

/* A header whose minor and descriptor's block field are @minor and @block_shift. */
static size_t t_header_geo(u8 *out, u16 major, u16 minor, u32 seq, u32 block_shift,
			   u32 reserved)
{
	struct gpumig_wire_header h = {
		.major = cpu_to_le16(major),
		.minor = cpu_to_le16(minor),
	};
	struct gpumig_compat c;

	t_compat(&c);
	strscpy(h.compat.type_name, c.type_name, sizeof(h.compat.type_name));
	h.compat.vram_size = cpu_to_le64(c.vram_size);
	h.compat.backend = cpu_to_le32(c.backend);
	h.compat.nr_queues = cpu_to_le32(c.nr_queues);
	h.compat.features = cpu_to_le64(c.features);
	h.compat.page_size = cpu_to_le32(c.page_size);
	h.compat.arch_version = cpu_to_le32(c.arch_version);
	h.compat.block_shift = cpu_to_le32(block_shift);
	h.compat.reserved = cpu_to_le32(reserved);
	return t_raw_section(out, GPUMIG_SEC_HEADER, seq, &h, sizeof(h), sizeof(h));
}

static size_t t_valid_header(u8 *out, u16 major, u32 seq)
{
	return t_header_geo(out, major, 1, seq, 0, 0);
}

/* A section with an 8-byte sub-header (@a, @b as two __le32) and @len more bytes. */
static size_t t_sub_section(u8 *out, u16 type, u32 seq, u32 a, u32 b, u32 len,
			    u32 claimed_len)
{
	u8 payload[8 + 64] = {};
	__le32 w[2] = { cpu_to_le32(a), cpu_to_le32(b) };

	memcpy(payload, w, sizeof(w));
	return t_raw_section(out, type, seq, payload, min_t(u32, len + 8, sizeof(payload)),
			     claimed_len);
}

static size_t t_vram_raw(u8 *out, u32 seq, u64 offset, u32 flags, u32 inner_len,
			 u32 data_len)
{
	struct gpumig_wire_vram v = {
		.offset = cpu_to_le64(offset),
		.flags = cpu_to_le32(flags),
		.len = cpu_to_le32(inner_len),
	};
	u8 *payload = kzalloc(sizeof(v) + data_len, GFP_KERNEL);
	size_t n;

	if (!payload)
		return 0;
	memcpy(payload, &v, sizeof(v));
	n = t_raw_section(out, GPUMIG_SEC_VRAM, seq, payload, sizeof(v) + data_len,
			  sizeof(v) + data_len);
	kfree(payload);
	return n;
}

static void stream_hostile(struct kunit *test)
{
	const struct hostile_case *c = test->param_value;
	enum hostile_kind k = c - hostile_cases;
	struct fake_dst *d = t_dst(test);
	u8 *buf = kunit_kzalloc(test, 4 * T_CHUNK, GFP_KERNEL);
	size_t n = 0;
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	if (k != H_NO_HEADER && k != H_MAJOR && k != H_BLOCK_OLD_MINOR && k != H_BLOCK_BAD &&
	    k != H_RESERVED && k != H_NEWER_MINOR)
		n += t_valid_header(buf, GPUMIG_STREAM_MAJOR, 0);

	switch (k) {
	case H_HUGE_LEN:
		n += t_raw_section(buf + n, GPUMIG_SEC_VRAM, 1, t_pattern, 16, U32_MAX);
		break;
	case H_HUGE_ARCH:
		n += t_raw_section(buf + n, GPUMIG_SEC_ARCH, 1, t_pattern, 513, 513);
		break;
	case H_VRAM_OUTSIDE:
		n += t_vram_raw(buf + n, 1, T_VRAM_SIZE - 8, 0, 16, 16);
		break;
	case H_VRAM_WRAP:
		n += t_vram_raw(buf + n, 1, U64_MAX - 7, 0, 16, 16);
		break;
	case H_VRAM_LEN_MISMATCH:
		n += t_vram_raw(buf + n, 1, 0, 0, 2048, 16);
		break;
	case H_VRAM_ZERO_WITH_DATA:
		n += t_vram_raw(buf + n, 1, 0, GPUMIG_VRAM_ZERO, 16, 16);
		break;
	case H_VRAM_SHORT:
		n += t_raw_section(buf + n, GPUMIG_SEC_VRAM, 1, t_pattern, 8, 8);
		break;
	case H_UNKNOWN_MANDATORY:
		n += t_raw_section(buf + n, 0x0042, 1, t_pattern, 8, 8);
		break;
	case H_NO_HEADER:
		n += t_raw_section(buf + n, GPUMIG_SEC_ARCH, 0, t_arch, 8, 8);
		break;
	case H_TWO_HEADERS:
		n += t_valid_header(buf + n, GPUMIG_STREAM_MAJOR, 1);
		break;
	case H_SEQ_GAP:
		n += t_raw_section(buf + n, GPUMIG_SEC_ARCH, 2, t_arch, 8, 8);
		break;
	case H_REORDERED:
		n += t_raw_section(buf + n, GPUMIG_SEC_ARCH, 2, t_work, 8, 8);
		n += t_raw_section(buf + n, GPUMIG_SEC_ARCH, 1, t_arch, 8, 8);
		break;
	case H_MAJOR:
		n += t_valid_header(buf, 2, 0);
		break;
	case H_FLAGS: {
		struct gpumig_sec_hdr *h = (void *)(buf + n);

		n += t_raw_section(buf + n, GPUMIG_SEC_ARCH, 1, t_arch, 8, 8);
		h->flags = cpu_to_le16(4);
		h->hdr_crc = t_hdr_crc(h);
		break;
	}
	case H_END_COUNT: {
		struct gpumig_wire_end e = { .nr_sections = cpu_to_le32(7) };

		n += t_raw_section(buf + n, GPUMIG_SEC_END, 1, &e, sizeof(e), sizeof(e));
		break;
	}
	case H_VRAM_FLAGS:
		n += t_vram_raw(buf + n, 1, 0, 0x10, 16, 16);
		break;
	case H_OPTIONAL_TOO_BIG:
		n += t_raw_section(buf + n, GPUMIG_SEC_NOTE, 1, t_pattern, 1025, 1025);
		break;
	case H_ZERO_OUTSIDE:
	case H_ZERO_WRAP:
	case H_ZERO_EMPTY: {
		struct gpumig_wire_zero z = {
			.offset = cpu_to_le64(k == H_ZERO_WRAP ? U64_MAX - 0xfff : 0x1000),
			.len = cpu_to_le64(k == H_ZERO_EMPTY ? 0 :
					   k == H_ZERO_WRAP ? 0x2000 : T_VRAM_SIZE),
		};

		n += t_raw_section(buf + n, GPUMIG_SEC_ZERO, 1, &z, sizeof(z), sizeof(z));
		break;
	}
	case H_ZERO_LEN:
		n += t_raw_section(buf + n, GPUMIG_SEC_ZERO, 1, t_pattern, 8, 8);
		break;
	case H_WORK:
		n += t_raw_section(buf + n, GPUMIG_SEC_WORK, 1, t_work, 8, 8);
		break;
	case H_PART_INDEX:	/* part 2 of 2: the two __le16 */
		n += t_sub_section(buf + n, GPUMIG_SEC_ARCH_PART, 1, 2 | 2 << 16, 0, 4, 12);
		break;
	case H_PART_FLAGS:
		n += t_sub_section(buf + n, GPUMIG_SEC_ARCH_PART, 1, 1 << 16, 1, 4, 12);
		break;
	case H_PART_SHORT:
		n += t_raw_section(buf + n, GPUMIG_SEC_ARCH_PART, 1, t_part, 4, 4);
		break;
	case H_PART_HUGE:
		n += t_sub_section(buf + n, GPUMIG_SEC_ARCH_PART, 1, 1 << 16, 0, 0, 8 + 513);
		break;
	case H_VENDOR_FLAGS:
		n += t_sub_section(buf + n, GPUMIG_SEC_VENDOR, 1, 0, 2, 4, 12);
		break;
	case H_VENDOR_HUGE:
		n += t_sub_section(buf + n, GPUMIG_SEC_VENDOR, 1, 0, 0, 0, 8 + 257);
		break;
	case H_BLOCK_OLD_MINOR:
		n += t_header_geo(buf, GPUMIG_STREAM_MAJOR, 1, 0, 14, 0);
		break;
	case H_BLOCK_BAD:
		n += t_header_geo(buf, GPUMIG_STREAM_MAJOR, 2, 0, 30, 0);
		break;
	case H_RESERVED:
		n += t_header_geo(buf, GPUMIG_STREAM_MAJOR, 2, 0, 0, 1);
		break;
	case H_NEWER_MINOR:
		n += t_header_geo(buf, GPUMIG_STREAM_MAJOR, GPUMIG_STREAM_MINOR + 1, 0, 0, 0);
		break;
	case H_PC_FLAGS:
	case H_PC_NO_TOKEN:
	case H_PC_LEN: {
		struct gpumig_wire_postcopy pc = { .token = { 1, 2, 3 } };

		if (k == H_PC_FLAGS)
			pc.flags = cpu_to_le32(1);
		if (k == H_PC_NO_TOKEN)
			memset(pc.token, 0, sizeof(pc.token));
		n += t_raw_section(buf + n, GPUMIG_SEC_POSTCOPY, 1, &pc,
				   k == H_PC_LEN ? 16 : sizeof(pc),
				   k == H_PC_LEN ? 16 : sizeof(pc));
		break;
	}
	case H_OWED_SHORT:
	case H_OWED_LEN:
	case H_OWED_BITS:
	case H_OWED_EMPTY: {
		struct {
			struct gpumig_wire_owed o;
			u8 map[4];
		} __packed ow = { .o = { .token = { 1 } } };
		u32 len = sizeof(ow.o) + 2;

		ow.o.nr_blocks = cpu_to_le64(k == H_OWED_LEN ? 30 : k == H_OWED_EMPTY ? 0 : 12);
		ow.map[1] = k == H_OWED_BITS ? 0x10 : 0x0f;	/* block 12 is past 12 */
		if (k == H_OWED_SHORT)
			len = sizeof(ow.o);
		n += t_raw_section(buf + n, GPUMIG_SEC_OWED, 1, &ow, len, len);
		break;
	}
	default:
		KUNIT_FAIL(test, "no case %d", k);
		return;
	}
	KUNIT_ASSERT_GT(test, n, 0);
	ret = t_feed(d, buf, n, 13);
	KUNIT_EXPECT_EQ_MSG(test, ret, c->err, "message: %s", d->parser->msg);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(d->parser->msg, c->msg),
				  "message: %s", d->parser->msg);
	/* No hostile section may reach the device. */
	KUNIT_EXPECT_LE(test, d->nr_calls, 1);
}

/*
 * Post-copy's sections reach the reader whole, in a stream of any minor:
 * the announcement with its token, each part of the manifest with its
 * first block and its bitmap; a reader without them refuses the stream at
 * the announcement, which comes before any stop.
 */
static void stream_postcopy_sections(struct kunit *test)
{
	static const struct gpumig_parser_ops old_ops = {
		.header = fake_header, .vram = fake_vram, .arch = fake_arch, .end = fake_end,
	};
	struct fake_dst *d = t_dst(test);
	struct gpumig_wire_postcopy pc = { .token = { 0x5a, 2, 3 } };
	struct {
		struct gpumig_wire_owed o;
		u8 map[2];
	} __packed ow = { .o = { .token = { 0x5a, 2, 3 } }, .map = { 0x81, 0x05 } };
	u8 buf[512];
	size_t n = t_valid_header(buf, GPUMIG_STREAM_MAJOR, 0);

	n += t_raw_section(buf + n, GPUMIG_SEC_POSTCOPY, 1, &pc, sizeof(pc), sizeof(pc));
	ow.o.first = cpu_to_le64(64);
	ow.o.nr_blocks = cpu_to_le64(11);
	n += t_raw_section(buf + n, GPUMIG_SEC_OWED, 2, &ow, sizeof(ow), sizeof(ow));
	KUNIT_ASSERT_EQ(test, gpumig_parser_feed(d->parser, buf, n), (ssize_t)n);
	KUNIT_ASSERT_EQ(test, d->nr_calls, 3);
	KUNIT_EXPECT_EQ(test, d->calls[1].kind, 'p');
	KUNIT_EXPECT_EQ(test, d->calls[1].offset, 0x5aULL);
	KUNIT_EXPECT_EQ(test, d->calls[1].sum, crc32_le(0, pc.token, sizeof(pc.token)));
	KUNIT_EXPECT_EQ(test, d->calls[2].kind, 'o');
	KUNIT_EXPECT_EQ(test, d->calls[2].offset, 64ULL);
	KUNIT_EXPECT_EQ(test, d->calls[2].len, 2U);
	KUNIT_EXPECT_EQ(test, d->calls[2].sum, crc32_le(0, ow.map, 2));

	gpumig_parser_destroy(d->parser);
	KUNIT_ASSERT_EQ(test, 0, gpumig_parser_init(d->parser, &t_limits, &old_ops, d));
	d->nr_calls = 0;
	KUNIT_EXPECT_EQ(test, gpumig_parser_feed(d->parser, buf, n), (ssize_t)-EPROTONOSUPPORT);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(d->parser->msg, "post-copy sections are not read"),
				  "message: %s", d->parser->msg);
}

/* A length over the limit is refused from the header alone. */
static void stream_length_checked_before_payload(struct kunit *test)
{
	struct fake_dst *d = t_dst(test);
	u8 buf[256];
	size_t n = t_valid_header(buf, GPUMIG_STREAM_MAJOR, 0);

	n += t_raw_section(buf + n, GPUMIG_SEC_VENDOR, 1, t_work, 0, 8 + 257);
	KUNIT_EXPECT_EQ(test, gpumig_parser_feed(d->parser, buf, n), (ssize_t)-EMSGSIZE);
}

static void fake_note(void *priv, const char *text, u32 len)
{
	fake_record(priv, 'n', 0, text, len);
}

/*
 * A reader that wants notes gets each short one, whole and only after its
 * CRC matched; a note over GPUMIG_NOTE_MAX is skipped unread and fails
 * nothing, and so is a broken one's payload never handed over.
 */
static void stream_notes(struct kunit *test)
{
	static const struct gpumig_parser_ops note_ops = {
		.header = fake_header, .vram = fake_vram, .arch = fake_arch,
		.end = fake_end, .note = fake_note,
	};
	static const char prod[] = "producer=gpumig/9.9";
	struct fake_dst *d = t_dst(test);
	struct gpumig_writer w;
	struct gpumig_compat c;
	u8 *buf = kunit_kzalloc(test, 4 * T_CHUNK, GFP_KERNEL);
	size_t n = 0, note_at;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	gpumig_parser_destroy(d->parser);
	KUNIT_ASSERT_EQ(test, 0, gpumig_parser_init(d->parser, &t_limits, &note_ops, d));
	t_compat(&c);
	gpumig_writer_init(&w);
	n += gpumig_emit_header(&w, buf, 4 * T_CHUNK, &c);
	note_at = n;
	n += gpumig_emit_blob(&w, buf + n, 4 * T_CHUNK - n, GPUMIG_SEC_NOTE, prod,
			      sizeof(prod) - 1);
	n += gpumig_emit_blob(&w, buf + n, 4 * T_CHUNK - n, GPUMIG_SEC_NOTE, t_pattern,
			      GPUMIG_NOTE_MAX + 1);
	n += gpumig_emit_blob(&w, buf + n, 4 * T_CHUNK - n, GPUMIG_SEC_NOTE, t_pattern,
			      GPUMIG_NOTE_MAX);
	n += gpumig_emit_end(&w, buf + n, 4 * T_CHUNK - n);
	KUNIT_ASSERT_EQ_MSG(test, 0, t_feed(d, buf, n, 7), "message: %s", d->parser->msg);
	KUNIT_ASSERT_EQ(test, d->nr_calls, 4);	/* header, two notes, end */
	KUNIT_EXPECT_EQ(test, d->calls[1].kind, 'n');
	KUNIT_EXPECT_EQ(test, d->calls[1].len, (u32)sizeof(prod) - 1);
	KUNIT_EXPECT_EQ(test, d->calls[1].sum, crc32_le(0, prod, sizeof(prod) - 1));
	KUNIT_EXPECT_EQ(test, d->calls[2].kind, 'n');
	KUNIT_EXPECT_EQ(test, d->calls[2].len, (u32)GPUMIG_NOTE_MAX);
	KUNIT_EXPECT_EQ(test, d->calls[3].kind, 'e');

	/* A note whose payload does not match its CRC fails the stream unread. */
	gpumig_parser_destroy(d->parser);
	KUNIT_ASSERT_EQ(test, 0, gpumig_parser_init(d->parser, &t_limits, &note_ops, d));
	d->nr_calls = 0;
	buf[note_at + sizeof(struct gpumig_sec_hdr) + 2] ^= 1;
	KUNIT_EXPECT_EQ(test, t_feed(d, buf, n, 7), -EBADMSG);
	KUNIT_EXPECT_EQ(test, d->nr_calls, 1);	/* the header only */
	KUNIT_EXPECT_NOT_NULL(test, strstr(d->parser->msg, "note section 1"));
}

static void stream_optional_skipped(struct kunit *test)
{
	struct fake_dst *d = t_dst(test);
	struct gpumig_writer w;
	struct gpumig_compat c;
	u8 *buf = kunit_kzalloc(test, 4 * T_CHUNK, GFP_KERNEL);
	size_t n = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	t_compat(&c);
	gpumig_writer_init(&w);
	n += gpumig_emit_header(&w, buf, 4 * T_CHUNK, &c);
	/* An optional type this reader has never heard of. */
	n += gpumig_emit_blob(&w, buf + n, 4 * T_CHUNK - n, 0x8123, t_pattern, 1000);
	n += gpumig_emit_end(&w, buf + n, 4 * T_CHUNK - n);
	KUNIT_ASSERT_EQ(test, 0, t_feed(d, buf, n, 100));
	KUNIT_EXPECT_EQ(test, d->nr_calls, 2);
	KUNIT_EXPECT_EQ(test, d->calls[1].kind, 'e');
}

/* ---- compatibility ---------------------------------------------------- */

enum compat_mutation {
	M_NONE, M_TYPE, M_VRAM, M_BACKEND, M_QUEUES_MORE, M_QUEUES_FEWER,
	M_FEAT_EXTRA, M_FEAT_SUBSET, M_PAGE, M_ARCH_NEWER, M_ARCH_OLDER, M_BLOCK,
	M_MINOR,
};

struct compat_case {
	const char *name;
	enum compat_mutation m;
	int err;
	const char *msg;
};

static const struct compat_case compat_cases[] = {
	{ "identical", M_NONE, 0, "" },
	{ "type differs", M_TYPE, -EOPNOTSUPP,
	  "type mismatch: source simgpu-1G, destination simgpu-test" },
	{ "VRAM differs", M_VRAM, -EOPNOTSUPP, "VRAM size mismatch" },
	{ "other family", M_BACKEND, -EOPNOTSUPP, "device family" },
	{ "source has more queues", M_QUEUES_MORE, -EOPNOTSUPP, "queue count: source has 8" },
	{ "source has fewer queues", M_QUEUES_FEWER, 0, "" },
	{ "source has extra feature", M_FEAT_EXTRA, -EOPNOTSUPP, "features 0x100" },
	{ "source features a subset", M_FEAT_SUBSET, 0, "" },
	{ "page size differs", M_PAGE, -EOPNOTSUPP, "page size" },
	{ "newer state layout", M_ARCH_NEWER, -EOPNOTSUPP, "state layout version 2" },
	{ "older state layout", M_ARCH_OLDER, 0, "" },
	{ "VRAM block differs", M_BLOCK, -EOPNOTSUPP,
	  "VRAM block mismatch: source 16 KiB, destination 64 KiB" },
	{ "newer stream minor", M_MINOR, 0, "" },
};

static void compat_mutate(struct gpumig_compat *c, enum compat_mutation m)
{
	switch (m) {
	case M_NONE:
		break;
	case M_TYPE:
		strscpy(c->type_name, "simgpu-1G", sizeof(c->type_name));
		break;
	case M_VRAM:
		c->vram_size *= 2;
		break;
	case M_BACKEND:
		c->backend = GPUMIG_BACKEND_PCI;
		break;
	case M_QUEUES_MORE:
		c->nr_queues = 8;
		break;
	case M_QUEUES_FEWER:
		c->nr_queues = 2;
		break;
	case M_FEAT_EXTRA:
		c->features |= 0x100;
		break;
	case M_FEAT_SUBSET:
		c->features = 0x1;
		break;
	case M_PAGE:
		c->page_size = 65536;
		break;
	case M_ARCH_NEWER:
		c->arch_version = 2;
		break;
	case M_ARCH_OLDER:
		c->arch_version = 0;
		break;
	case M_BLOCK:
		c->block_shift = 14;
		break;
	case M_MINOR:
		c->stream_minor = 2;
		break;
	}
}

static void compat_desc(const struct compat_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(compat, compat_cases, compat_desc);

static void stream_compat(struct kunit *test)
{
	const struct compat_case *cc = test->param_value;
	struct gpumig_compat src, dst;
	char msg[GPUMIG_PARSER_MSG_LEN] = "";

	t_compat(&src);
	t_compat(&dst);
	compat_mutate(&src, cc->m);
	KUNIT_EXPECT_EQ(test, gpumig_compat_check(&src, &dst, msg, sizeof(msg)), cc->err);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(msg, cc->msg), "message: %s", msg);
}

/* The destination refuses at the header, before any device data. */
static void stream_incompatible_refused_at_header(struct kunit *test)
{
	struct t_stream *s = t_reference(test, 64);
	struct fake_dst *d = t_dst(test);
	size_t hdr_len = sizeof(struct gpumig_sec_hdr) + sizeof(struct gpumig_wire_header);

	d->self.nr_queues = 2;
	KUNIT_EXPECT_EQ(test, gpumig_parser_feed(d->parser, s->buf, hdr_len),
			(ssize_t)-EOPNOTSUPP);
	KUNIT_EXPECT_NOT_NULL(test, strstr(d->parser->msg, "queue count"));
	KUNIT_EXPECT_EQ(test, d->nr_calls, 0);
}

static void stream_compat_format(struct kunit *test)
{
	struct gpumig_compat c;
	char buf[256];

	t_compat(&c);
	gpumig_compat_format(&c, buf, sizeof(buf));
	KUNIT_EXPECT_STREQ(test, buf,
			   "stream=1.1 reads=1.3 backend=240 type=simgpu-test vram=1048576 queues=4 features=0x5 page_size=4096 state_version=1\n");
	/* Another block: the minor that carries it, and the block named. */
	c.block_shift = 21;
	c.stream_minor = 2;
	gpumig_compat_format(&c, buf, sizeof(buf));
	KUNIT_EXPECT_STREQ(test, buf,
			   "stream=1.2 reads=1.3 backend=240 type=simgpu-test vram=1048576 queues=4 features=0x5 page_size=4096 state_version=1 block_size=2097152\n");
}

/*
 * The VRAM block travels in the descriptor from stream 1.2 on; a 64 KiB
 * device writes 0 there, as every earlier stream did; a header of a lower
 * minor cannot carry another block.
 */
static void stream_geometry_header(struct kunit *test)
{
	struct t_stream *s = t_stream_new(test, 1024);
	struct gpumig_wire_header h;
	struct fake_dst *d = t_dst(test);
	struct gpumig_compat c;
	ssize_t n;

	t_compat(&c);
	c.block_shift = 14;
	KUNIT_EXPECT_EQ(test, gpumig_emit_header(&s->w, s->buf, s->size, &c), (ssize_t)-EINVAL);
	c.stream_minor = GPUMIG_STREAM_MINOR + 1;
	KUNIT_EXPECT_EQ(test, gpumig_emit_header(&s->w, s->buf, s->size, &c), (ssize_t)-EINVAL);
	c.stream_minor = 2;
	n = gpumig_emit_header(&s->w, s->buf, s->size, &c);
	KUNIT_ASSERT_GT(test, n, 0);
	memcpy(&h, s->buf + sizeof(struct gpumig_sec_hdr), sizeof(h));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(h.minor), 2);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(h.compat.block_shift), 14U);
	d->self.block_shift = 14;
	KUNIT_EXPECT_EQ(test, gpumig_parser_feed(d->parser, s->buf, n), n);
	KUNIT_EXPECT_EQ(test, d->got.block_shift, 14U);
	KUNIT_EXPECT_EQ(test, d->got.stream_minor, (u16)2);

	/*
	 * A 1.1 stream writes 0 there (the descriptor every release wrote);
	 * a 1.2 stream names even the default block, so that a reader of
	 * 1.1 refuses it at the header.
	 */
	s = t_stream_new(test, 1024);
	t_compat(&c);
	n = gpumig_emit_header(&s->w, s->buf, s->size, &c);
	KUNIT_ASSERT_GT(test, n, 0);
	memcpy(&h, s->buf + sizeof(struct gpumig_sec_hdr), sizeof(h));
	KUNIT_EXPECT_EQ(test, h.compat.block_shift, 0U);
	s = t_stream_new(test, 1024);
	c.stream_minor = 2;
	n = gpumig_emit_header(&s->w, s->buf, s->size, &c);
	KUNIT_ASSERT_GT(test, n, 0);
	memcpy(&h, s->buf + sizeof(struct gpumig_sec_hdr), sizeof(h));
	KUNIT_EXPECT_EQ(test, le32_to_cpu(h.compat.block_shift), 16U);
	KUNIT_EXPECT_TRUE(test, gpumig_block_shift_valid(GPUMIG_BLOCK_SHIFT_MIN));
	KUNIT_EXPECT_TRUE(test, gpumig_block_shift_valid(GPUMIG_BLOCK_SHIFT_MAX));
	KUNIT_EXPECT_FALSE(test, gpumig_block_shift_valid(GPUMIG_BLOCK_SHIFT_MIN - 1));
	KUNIT_EXPECT_FALSE(test, gpumig_block_shift_valid(GPUMIG_BLOCK_SHIFT_MAX + 1));
	/* Sub-headed sections cannot be emitted as blobs. */
	KUNIT_EXPECT_EQ(test, gpumig_emit_blob(&s->w, s->buf, s->size, GPUMIG_SEC_VENDOR,
					       t_work, 4), (ssize_t)-EINVAL);
	KUNIT_EXPECT_EQ(test, gpumig_emit_arch_part(&s->w, s->buf, s->size, 2, 2, t_part, 4),
			(ssize_t)-EINVAL);
}

/*
 * A reader that takes no parts and no vendor sections (a destination of
 * the default geometry without those ops) refuses each by name, before
 * its payload.
 */
static void stream_parts_unread(struct kunit *test)
{
	static const struct gpumig_parser_ops plain_ops = {
		.header = fake_header, .vram = fake_vram, .zero = fake_zero,
		.arch = fake_arch, .end = fake_end,
	};
	struct t_stream *s = t_reference(test, T_CHUNK);
	struct fake_dst *d = t_dst(test);

	gpumig_parser_destroy(d->parser);
	KUNIT_ASSERT_EQ(test, 0, gpumig_parser_init(d->parser, &t_limits, &plain_ops, d));
	KUNIT_EXPECT_EQ(test, t_feed(d, s->buf, s->len, 7), -EPROTONOSUPPORT);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(d->parser->msg,
					       "vendor sections are not read by this destination"),
				  "message: %s", d->parser->msg);
	KUNIT_EXPECT_EQ(test, d->calls[d->nr_calls - 1].kind, 'a');
}

static void stream_init_limits(struct kunit *test)
{
	static const struct gpumig_parser_ops no_pc_ops = {
		.header = fake_header, .vram = fake_vram, .zero = fake_zero,
		.arch = fake_arch, .end = fake_end,
	};
	struct gpumig_parser p;
	struct gpumig_parser_limits lim = t_limits;

	lim.max_chunk = 0;
	KUNIT_EXPECT_EQ(test, gpumig_parser_init(&p, &lim, &fake_ops, NULL), -EINVAL);
	lim.max_chunk = GPUMIG_SEC_MAX_PAYLOAD + 1;
	KUNIT_EXPECT_EQ(test, gpumig_parser_init(&p, &lim, &fake_ops, NULL), -EINVAL);
	lim = t_limits;
	KUNIT_ASSERT_EQ(test, gpumig_parser_init(&p, &lim, &no_pc_ops, NULL), 0);
	/* One buffer, sized by the largest section the limits allow. */
	KUNIT_EXPECT_EQ(test, p.buf_size,
			(u32)(sizeof(struct gpumig_wire_vram) + T_CHUNK));
	gpumig_parser_destroy(&p);
	/* A reader of post-copy takes the largest manifest section too. */
	KUNIT_ASSERT_EQ(test, gpumig_parser_init(&p, &lim, &fake_ops, NULL), 0);
	KUNIT_EXPECT_EQ(test, p.buf_size,
			(u32)(sizeof(struct gpumig_wire_owed) + GPUMIG_OWED_MAX_BLOCKS / 8));
	gpumig_parser_destroy(&p);
}

static struct kunit_case stream_cases[] = {
	KUNIT_CASE(stream_round_trip),
	KUNIT_CASE(stream_crc_extend),
	KUNIT_CASE(stream_direct_commit),
	KUNIT_CASE(stream_vram_placed),
	KUNIT_CASE(stream_section_sizes),
	KUNIT_CASE(stream_every_split),
	KUNIT_CASE_SLOW(stream_every_corruption),
	KUNIT_CASE(stream_every_truncation),
	KUNIT_CASE(stream_data_after_end),
	KUNIT_CASE(stream_callback_error_sticks),
	KUNIT_CASE_PARAM(stream_hostile, hostile_gen_params),
	KUNIT_CASE(stream_length_checked_before_payload),
	KUNIT_CASE(stream_postcopy_sections),
	KUNIT_CASE(stream_optional_skipped),
	KUNIT_CASE(stream_notes),
	KUNIT_CASE_PARAM(stream_compat, compat_gen_params),
	KUNIT_CASE(stream_incompatible_refused_at_header),
	KUNIT_CASE(stream_compat_format),
	KUNIT_CASE(stream_geometry_header),
	KUNIT_CASE(stream_parts_unread),
	KUNIT_CASE(stream_init_limits),
	{}
};

static struct kunit_suite stream_suite = {
	.name = "gpumig_stream",
	.test_cases = stream_cases,
};

kunit_test_suites(&stream_suite);

GPUMIG_IMPORT_KUNIT_NS();
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit suite gpumig_stream: the migration stream codec");
