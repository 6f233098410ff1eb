// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the migration stream parser
 * (drivers/gpumig/stream_*.c, built unchanged through include/kshim.h).
 *
 * Input: two bytes that seed how the rest is split into write()s, then the
 * stream.  Every input is parsed twice, in one piece and in random pieces,
 * into a destination whose VRAM and state buffers are exactly as large as
 * the limits it declared (so AddressSanitizer sees any write the parser let
 * past a bound), and the two runs must agree on every callback and on the
 * result: the parser must not depend on how data is split.  The split run
 * also puts some VRAM chunks' data into VRAM itself, as the kernel's
 * write does (gpumig_parser_vram_room()): each such chunk whole, so that
 * it reaches the same callbacks with the same digest.
 *
 * Random bytes almost never carry valid CRCs, so when bit 7 of the second
 * seed byte is set the target first repairs every checksum in the input:
 * that lets the fuzzer reach the checks behind them (lengths, bounds,
 * ordering, the callbacks) with hostile but well-framed sections.
 */
#include <kshim.h>

#include "fuzz_common.h"

/*
 * The two runs' VRAM, allocated once: a 1 MiB malloc and free per run (with
 * AddressSanitizer poisoning both) was most of an execution's cost.  Each is
 * its own global, so AddressSanitizer keeps a redzone after each.
 */
static u8 fz_vram_whole[FZ_VRAM_SIZE], fz_vram_split[FZ_VRAM_SIZE];

struct fz_dst {
	struct gpumig_parser p;
	u8 *vram;
	u8 arch[FZ_ARCH];
	u8 part[FZ_ARCH];
	u8 vendor[FZ_VENDOR];
	u32 digest;
	unsigned int calls;
	bool ended;
};

static u32 fz_mix(u32 d, u64 v)
{
	return crc32_le(d, &v, sizeof(v));
}

static int fz_header(void *priv, u16 major, u16 minor, const struct gpumig_compat *src)
{
	struct fz_dst *d = priv;
	struct gpumig_compat self;
	char msg[GPUMIG_PARSER_MSG_LEN];
	int ret;

	fz_compat(&self);
	ret = gpumig_compat_check(src, &self, msg, sizeof(msg));
	d->digest = fz_mix(d->digest, major << 16 | minor);
	d->calls++;
	return ret;
}

static int fz_vram(void *priv, u64 offset, const void *data, u32 len)
{
	struct fz_dst *d = priv;

	if (offset + len > FZ_VRAM_SIZE || len > FZ_CHUNK)
		abort();	/* the parser let a bad chunk through */
	if (data)
		memcpy(d->vram + offset, data, len);
	else
		memset(d->vram + offset, 0, len);
	d->digest = fz_mix(fz_mix(d->digest, offset), len);
	if (data)
		d->digest = crc32_le(d->digest, data, len);
	d->calls++;
	return 0;
}

/* A chunk the split run placed: digested as fz_vram() digests it. */
static int fz_vram_placed(void *priv, u64 offset, u32 len, u32 crc)
{
	struct fz_dst *d = priv;

	if (offset + len > FZ_VRAM_SIZE || len > FZ_CHUNK)
		abort();
	if (crc != crc32_le(~0U, d->vram + offset, len))
		abort();	/* the CRC it reports is not of the bytes placed */
	d->digest = fz_mix(fz_mix(d->digest, offset), len);
	d->digest = crc32_le(d->digest, d->vram + offset, len);
	d->calls++;
	return 0;
}

static int fz_zero(void *priv, u64 offset, u64 len)
{
	struct fz_dst *d = priv;

	if (!len || offset > FZ_VRAM_SIZE || len > FZ_VRAM_SIZE - offset)
		abort();	/* the parser let a bad range through */
	memset(d->vram + offset, 0, len);
	d->digest = fz_mix(fz_mix(d->digest, offset), len);
	d->calls++;
	return 0;
}

static int fz_blob(struct fz_dst *d, u8 *dst, size_t room, const void *data, u32 len)
{
	if (len > room)
		abort();
	memcpy(dst, data, len);
	d->digest = crc32_le(fz_mix(d->digest, len), data, len);
	d->calls++;
	return 0;
}

static int fz_arch(void *priv, const void *data, u32 len)
{
	struct fz_dst *d = priv;

	return fz_blob(d, d->arch, sizeof(d->arch), data, len);
}

static int fz_arch_part(void *priv, u16 part, u16 nr_parts, const void *data, u32 len)
{
	struct fz_dst *d = priv;

	if (part >= nr_parts)
		abort();	/* the parser let a bad part through */
	d->digest = fz_mix(d->digest, (u32)part << 16 | nr_parts);
	return fz_blob(d, d->part, sizeof(d->part), data, len);
}

static int fz_vendor(void *priv, u32 index, const void *data, u32 len)
{
	struct fz_dst *d = priv;

	d->digest = fz_mix(d->digest, index);
	return fz_blob(d, d->vendor, sizeof(d->vendor), data, len);
}

static int fz_end(void *priv)
{
	struct fz_dst *d = priv;

	if (d->ended)
		abort();
	d->ended = true;
	d->calls++;
	return 0;
}

static void fz_note(void *priv, const char *text, u32 len)
{
	struct fz_dst *d = priv;
	u8 note[GPUMIG_NOTE_MAX];

	fz_blob(d, note, sizeof(note), text, len);
}

static int fz_postcopy(void *priv, const u8 *token)
{
	struct fz_dst *d = priv;

	if (!memchr_inv(token, 0, GPUMIG_TOKEN_LEN))
		abort();	/* the parser let a session without a token through */
	d->digest = crc32_le(d->digest, token, GPUMIG_TOKEN_LEN);
	d->calls++;
	return 0;
}

static int fz_owed(void *priv, const u8 *token, u64 first, u64 nr, const u8 *map)
{
	struct fz_dst *d = priv;

	if (!nr || nr > GPUMIG_OWED_MAX_BLOCKS || (nr % 8 && map[nr / 8] >> (nr % 8)))
		abort();	/* the parser let a bad manifest through */
	d->digest = fz_mix(fz_mix(d->digest, first), nr);
	d->digest = crc32_le(d->digest, map, DIV_ROUND_UP(nr, 8));
	d->calls++;
	return 0;
}

static const struct gpumig_parser_ops fz_ops = {
	.header = fz_header, .vram = fz_vram, .zero = fz_zero, .arch = fz_arch,
	.arch_part = fz_arch_part, .vendor = fz_vendor, .end = fz_end, .note = fz_note,
	.postcopy = fz_postcopy, .owed = fz_owed,
};

/* The split run's: the same, and VRAM data may be placed. */
static const struct gpumig_parser_ops fz_place_ops = {
	.header = fz_header, .vram = fz_vram, .vram_placed = fz_vram_placed,
	.zero = fz_zero, .arch = fz_arch, .arch_part = fz_arch_part, .vendor = fz_vendor,
	.end = fz_end, .note = fz_note, .postcopy = fz_postcopy, .owed = fz_owed,
};

struct fz_result {
	int ret;
	u32 digest;
	unsigned int calls;
	char msg[GPUMIG_PARSER_MSG_LEN];
};

/*
 * One write of the split run, of at most *@n bytes (set to what it took):
 * payload bytes go straight into the parser's buffer where it offers
 * room, as the kernel's write does, and a VRAM chunk's data into VRAM
 * (on one seed bit, decided at its first byte; then the chunk whole).
 * Both runs must end the same.
 */
static ssize_t fz_split_step(struct fz_dst *d, const u8 *data, size_t *n, u32 seed)
{
	void *dst;
	size_t room;
	u64 voff;
	u32 crc;

	room = gpumig_parser_vram_room(&d->p, &voff, &crc);
	if (room && (d->p.placed || (seed & 2))) {
		*n = min(*n, room);
		if (voff + *n > FZ_VRAM_SIZE)
			abort();	/* outside the declared VRAM */
		memcpy(d->vram + voff, data, *n);
		return gpumig_parser_vram_commit(&d->p, *n, crc32_le(crc, d->vram + voff, *n));
	}
	room = gpumig_parser_room(&d->p, &dst);
	if (room) {
		*n = min(*n, room);
		memcpy(dst, data, *n);
		return gpumig_parser_commit(&d->p, *n);
	}
	if (gpumig_parser_hdr_left(&d->p) && (seed & 1))
		*n = min(*n, gpumig_parser_hdr_left(&d->p));
	return gpumig_parser_feed(&d->p, data, *n);
}

static void fz_run(const u8 *data, size_t size, u32 seed, u8 *vram,
		   struct fz_result *r)
{
	struct fz_dst d = { .vram = vram };
	size_t off = 0;
	int ret = 0;

	if (gpumig_parser_init(&d.p, &fz_limits, seed ? &fz_place_ops : &fz_ops, &d))
		abort();
	while (off < size) {
		size_t n = size - off;
		ssize_t got;

		if (seed) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			n = min(n, (size_t)(seed % 97) + 1);
		}
		got = seed ? fz_split_step(&d, data + off, &n, seed) :
			     gpumig_parser_feed(&d.p, data + off, n);
		if (got < 0) {
			ret = got;
			break;
		}
		if ((size_t)got != n)
			abort();
		off += n;
	}
	if (!ret)
		ret = gpumig_parser_finish(&d.p);
	if (!ret && !d.ended)
		abort();	/* success without an end section */
	if (ret && !d.p.msg[0])
		abort();	/* every failure explains itself */
	r->ret = ret;
	r->digest = d.digest;
	r->calls = d.calls;
	memcpy(r->msg, d.p.msg, sizeof(r->msg));
	gpumig_parser_destroy(&d.p);
}

/* Recompute every section's CRCs, and the end section's stream CRC. */
static void fz_repair(u8 *buf, size_t size)
{
	struct gpumig_sec_hdr h;
	size_t off = 0;
	u32 stream = ~0U;

	while (off + sizeof(h) <= size) {
		size_t avail = size - off - sizeof(h);
		u8 *payload = buf + off + sizeof(h);
		u32 len;

		memcpy(&h, buf + off, sizeof(h));
		len = le32_to_cpu(h.len);
		if (le16_to_cpu(h.type) == GPUMIG_SEC_END &&
		    avail >= sizeof(struct gpumig_wire_end)) {
			struct gpumig_wire_end e;

			memcpy(&e, payload, sizeof(e));
			e.stream_crc = cpu_to_le32(stream);
			memcpy(payload, &e, sizeof(e));
		}
		h.payload_crc = cpu_to_le32(crc32_le(~0U, payload, min((size_t)len, avail)));
		h.hdr_crc = cpu_to_le32(crc32_le(~0U, &h, offsetof(struct gpumig_sec_hdr,
								   hdr_crc)));
		memcpy(buf + off, &h, sizeof(h));
		if (len > avail)
			break;
		stream = crc32_le(stream, buf + off, sizeof(h) + len);
		off += sizeof(h) + len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_result whole, split;
	u8 *copy;
	u32 seed;

	if (size < 2)
		return 0;
	seed = (data[0] | data[1] << 8) + 1;
	copy = malloc(size - 2 + 1);
	if (!copy)
		abort();
	memcpy(copy, data + 2, size - 2);
	if (data[1] & 0x80)
		fz_repair(copy, size - 2);
	fz_run(copy, size - 2, 0, fz_vram_whole, &whole);
	fz_run(copy, size - 2, seed, fz_vram_split, &split);
	free(copy);
	if (whole.ret != split.ret || whole.digest != split.digest ||
	    whole.calls != split.calls) {
		fprintf(stderr, "split-dependent result: %d/%d calls %u/%u\n%s\n%s\n",
			whole.ret, split.ret, whole.calls, split.calls,
			whole.msg, split.msg);
		abort();
	}
	return 0;
}
