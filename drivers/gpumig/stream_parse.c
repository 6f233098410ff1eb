// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration stream: the incremental parser.
 *
 * The destination treats the stream as hostile.  Every section header is
 * checked (magic, its own CRC, sequence number, type, length against the
 * destination's limits) before any byte of its payload is accepted, and a
 * payload reaches its callback only after its CRC matched.  The only
 * allocation is the payload buffer, sized once from the limits.  Input may
 * arrive in any split; the parser keeps no pointer into the caller's data.
 *
 * One exception saves a copy per byte of VRAM: a caller may put a VRAM
 * chunk's data into VRAM itself as it arrives (gpumig_parser_vram_room()),
 * once the chunk's own header was checked (offset and length inside the
 * destination).  Its CRC is still checked before the chunk is announced
 * (@vram_placed), but a refused stream may have left such bytes in VRAM:
 * a destination that places data must never run after a refusal (the
 * engine keeps the device in RESUMING until a reset).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <kunit/visibility.h>

#include "stream_priv.h"

static __printf(3, 0) int gpumig_parser_verror(struct gpumig_parser *p, int err,
						 const char *fmt, va_list args)
{
	if (p->state == GPUMIG_PARSE_FAILED)
		return p->err;
	p->state = GPUMIG_PARSE_FAILED;
	p->err = err;
	vsnprintf(p->msg, sizeof(p->msg), fmt, args);
	return err;
}

/**
 * gpumig_parser_set_error() - fail the parser with a reason
 * @p: parser
 * @err: negative errno
 * @fmt: message format
 *
 * The first error sticks: later calls leave the first reason in place.
 *
 * Return: the parser's error.
 */
int gpumig_parser_set_error(struct gpumig_parser *p, int err,
			    const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	err = gpumig_parser_verror(p, err, fmt, args);
	va_end(args);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_set_error);

/**
 * gpumig_parser_init() - prepare to read a stream
 * @p: parser
 * @lim: what the destination accepts
 * @ops: where checked sections go
 * @priv: argument for @ops
 *
 * Allocates the payload buffer, bounded by @lim.
 *
 * Return: 0, -EINVAL for unusable limits or -ENOMEM.
 */
int gpumig_parser_init(struct gpumig_parser *p,
		       const struct gpumig_parser_limits *lim,
		       const struct gpumig_parser_ops *ops, void *priv)
{
	size_t size = sizeof(struct gpumig_wire_header);

	memset(p, 0, sizeof(*p));
	if (!lim->max_chunk || lim->max_chunk > GPUMIG_SEC_MAX_PAYLOAD ||
	    lim->max_arch > GPUMIG_SEC_MAX_PAYLOAD ||
	    lim->max_vendor > GPUMIG_SEC_MAX_PAYLOAD)
		return -EINVAL;
	size = max(size, sizeof(struct gpumig_wire_vram) + lim->max_chunk);
	size = max(size, sizeof(struct gpumig_wire_arch_part) + lim->max_arch);
	if (lim->max_vendor)
		size = max(size, sizeof(struct gpumig_wire_vendor) + lim->max_vendor);
	size = max(size, sizeof(struct gpumig_wire_end));
	size = max_t(size_t, size, GPUMIG_NOTE_MAX);
	if (ops->postcopy && ops->owed)
		size = max_t(size_t, size, sizeof(struct gpumig_wire_owed) +
				       GPUMIG_OWED_MAX_BLOCKS / 8);

	p->buf = kvmalloc(size, GFP_KERNEL_ACCOUNT);
	if (!p->buf)
		return -ENOMEM;
	p->buf_size = size;
	p->lim = *lim;
	p->ops = ops;
	p->priv = priv;
	p->state = GPUMIG_PARSE_HDR;
	p->stream_crc = ~0U;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_init);

/**
 * gpumig_parser_destroy() - free what gpumig_parser_init() allocated
 * @p: parser
 */
void gpumig_parser_destroy(struct gpumig_parser *p)
{
	kvfree(p->buf);
	p->buf = NULL;
	p->buf_size = 0;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_destroy);

static const char *gpumig_sec_name(u16 type)
{
	switch (type) {
	case GPUMIG_SEC_HEADER:
		return "header";
	case GPUMIG_SEC_VRAM:
		return "VRAM";
	case GPUMIG_SEC_ZERO:
		return "zero range";
	case GPUMIG_SEC_ARCH:
		return "architectural state";
	case GPUMIG_SEC_ARCH_PART:
		return "architectural state part";
	case GPUMIG_SEC_VENDOR:
		return "vendor";
	case GPUMIG_SEC_END:
		return "end";
	case GPUMIG_SEC_POSTCOPY:
		return "post-copy";
	case GPUMIG_SEC_OWED:
		return "owed blocks";
	case GPUMIG_SEC_NOTE:
		return "note";
	default:
		return "unknown";
	}
}

/* Largest payload the destination accepts for a known section type. */
static u64 gpumig_sec_max_len(const struct gpumig_parser *p, u16 type)
{
	switch (type) {
	case GPUMIG_SEC_HEADER:
		return sizeof(struct gpumig_wire_header);
	case GPUMIG_SEC_VRAM:
		return sizeof(struct gpumig_wire_vram) + (u64)p->lim.max_chunk;
	case GPUMIG_SEC_ARCH:
		return p->lim.max_arch;
	case GPUMIG_SEC_ARCH_PART:
		return sizeof(struct gpumig_wire_arch_part) + (u64)p->lim.max_arch;
	case GPUMIG_SEC_VENDOR:
		return sizeof(struct gpumig_wire_vendor) + (u64)p->lim.max_vendor;
	case GPUMIG_SEC_END:
		return sizeof(struct gpumig_wire_end);
	case GPUMIG_SEC_ZERO:
		return sizeof(struct gpumig_wire_zero);
	case GPUMIG_SEC_POSTCOPY:
		return sizeof(struct gpumig_wire_postcopy);
	case GPUMIG_SEC_OWED:
		return sizeof(struct gpumig_wire_owed) + GPUMIG_OWED_MAX_BLOCKS / 8;
	default:
		return p->lim.max_skip;
	}
}

static bool gpumig_sec_known(u16 type)
{
	switch (type) {
	case GPUMIG_SEC_HEADER:
	case GPUMIG_SEC_VRAM:
	case GPUMIG_SEC_ARCH:
	case GPUMIG_SEC_ARCH_PART:
	case GPUMIG_SEC_VENDOR:
	case GPUMIG_SEC_END:
	case GPUMIG_SEC_ZERO:
	case GPUMIG_SEC_POSTCOPY:
	case GPUMIG_SEC_OWED:
		return true;
	default:
		return false;
	}
}

/* A complete section header is in p->hdr: check it before trusting it. */
static int gpumig_parse_sec_hdr(struct gpumig_parser *p)
{
	struct gpumig_sec_hdr h;
	u32 crc, seq;
	u64 max;

	memcpy(&h, p->hdr, sizeof(h));
	if (le32_to_cpu(h.magic) != GPUMIG_SEC_MAGIC)
		return gpumig_parser_set_error(p, -EBADMSG,
			"bad section magic 0x%08x at offset %llu",
			le32_to_cpu(h.magic), p->sec_start);
	crc = gpumig_crc(~0U, &h, offsetof(struct gpumig_sec_hdr, hdr_crc));
	if (crc != le32_to_cpu(h.hdr_crc))
		return gpumig_parser_set_error(p, -EBADMSG,
			"section header checksum mismatch at offset %llu",
			p->sec_start);

	p->type = le16_to_cpu(h.type);
	p->len = le32_to_cpu(h.len);
	p->want_crc = le32_to_cpu(h.payload_crc);
	seq = le32_to_cpu(h.seq);

	if (h.flags)
		return gpumig_parser_set_error(p, -EINVAL,
			"section %u has unknown flags 0x%x", seq,
			le16_to_cpu(h.flags));
	if (seq != p->seq)
		return gpumig_parser_set_error(p, -EINVAL,
			"section out of order: got number %u, expected %u (offset %llu)",
			seq, p->seq, p->sec_start);
	if (p->seq == 0 && p->type != GPUMIG_SEC_HEADER)
		return gpumig_parser_set_error(p, -EINVAL,
			"stream does not start with a header section (type 0x%04x)",
			p->type);
	if (p->seq != 0 && p->type == GPUMIG_SEC_HEADER)
		return gpumig_parser_set_error(p, -EINVAL,
			"second header section at offset %llu", p->sec_start);
	if (!gpumig_sec_known(p->type) && !(p->type & GPUMIG_SEC_OPTIONAL))
		return gpumig_parser_set_error(p, -EPROTONOSUPPORT,
			"unknown mandatory section type 0x%04x at offset %llu",
			p->type, p->sec_start);
	if ((p->type == GPUMIG_SEC_ARCH_PART && !p->ops->arch_part) ||
	    (p->type == GPUMIG_SEC_VENDOR && !p->ops->vendor) ||
	    ((p->type == GPUMIG_SEC_POSTCOPY || p->type == GPUMIG_SEC_OWED) &&
	     (!p->ops->postcopy || !p->ops->owed)))
		return gpumig_parser_set_error(p, -EPROTONOSUPPORT,
			"%s sections are not read by this destination (offset %llu)",
			gpumig_sec_name(p->type), p->sec_start);

	max = gpumig_sec_max_len(p, p->type);
	if (p->len > max)
		return gpumig_parser_set_error(p, -EMSGSIZE,
			"%s section of %u bytes exceeds the destination's limit of %llu",
			gpumig_sec_name(p->type), p->len, max);
	if ((p->type == GPUMIG_SEC_HEADER || p->type == GPUMIG_SEC_END ||
	     p->type == GPUMIG_SEC_ZERO || p->type == GPUMIG_SEC_POSTCOPY) && p->len != max)
		return gpumig_parser_set_error(p, -EINVAL,
			"%s section has length %u, expected %llu",
			gpumig_sec_name(p->type), p->len, max);
	if (p->type == GPUMIG_SEC_VRAM && p->len < sizeof(struct gpumig_wire_vram))
		return gpumig_parser_set_error(p, -EINVAL,
			"VRAM section of %u bytes is shorter than its chunk header",
			p->len);
	if ((p->type == GPUMIG_SEC_ARCH_PART &&
	     p->len < sizeof(struct gpumig_wire_arch_part)) ||
	    (p->type == GPUMIG_SEC_OWED && p->len <= sizeof(struct gpumig_wire_owed)) ||
	    (p->type == GPUMIG_SEC_VENDOR && p->len < sizeof(struct gpumig_wire_vendor)))
		return gpumig_parser_set_error(p, -EINVAL,
			"%s section of %u bytes is shorter than its own header",
			gpumig_sec_name(p->type), p->len);

	/* A short note is read when someone listens; any other is skipped. */
	p->skip = !gpumig_sec_known(p->type) &&
		  !(p->type == GPUMIG_SEC_NOTE && p->ops->note && p->len <= GPUMIG_NOTE_MAX);
	p->crc = ~0U;
	p->fill = 0;
	p->chunk_ok = false;
	p->placed = 0;
	p->state = GPUMIG_PARSE_PAYLOAD;
	return 0;
}

static int gpumig_parse_header(struct gpumig_parser *p)
{
	struct gpumig_wire_header h;
	struct gpumig_compat c;
	u16 major, minor;
	int ret;

	memcpy(&h, p->buf, sizeof(h));
	major = le16_to_cpu(h.major);
	minor = le16_to_cpu(h.minor);
	if (major != GPUMIG_STREAM_MAJOR)
		return gpumig_parser_set_error(p, -EPROTONOSUPPORT,
			"stream version %u.%u is not supported (this destination reads %u.x)",
			major, minor, GPUMIG_STREAM_MAJOR);
	/*
	 * A newer minor may carry sections this reader does not know: refuse
	 * it here, during pre-copy, rather than at the first of them.
	 */
	if (minor > GPUMIG_STREAM_MINOR)
		return gpumig_parser_set_error(p, -EPROTONOSUPPORT,
			"stream version %u.%u is newer than this destination reads (%u.%u): cap the source's migration/stream_max at %u.%u",
			major, minor, GPUMIG_STREAM_MAJOR, GPUMIG_STREAM_MINOR,
			GPUMIG_STREAM_MAJOR, GPUMIG_STREAM_MINOR);
	/* Before 1.2 the block's field was reserved. */
	if (h.flags || h.compat.reserved || (minor < 2 && h.compat.block_shift))
		return gpumig_parser_set_error(p, -EINVAL,
			"header has unknown flags or reserved bits set");
	if (h.compat.block_shift &&
	    !gpumig_block_shift_valid(le32_to_cpu(h.compat.block_shift)))
		return gpumig_parser_set_error(p, -EINVAL,
			"VRAM block of 2^%u bytes is not one a stream can carry",
			le32_to_cpu(h.compat.block_shift));
	if (h.compat.type_name[GPUMIG_TYPE_NAME_LEN - 1])
		return gpumig_parser_set_error(p, -EINVAL,
			"header type name is not NUL terminated");

	gpumig_compat_from_wire(&h.compat, &c);
	c.stream_minor = minor;
	ret = p->ops->header(p->priv, major, minor, &c);
	if (ret)
		return gpumig_parser_set_error(p, ret,
			"source refused by the destination");
	return 0;
}

/* A bad chunk header: @err, and the parser fails where @report says so. */
static __printf(4, 5) int gpumig_chunk_refuse(struct gpumig_parser *p, bool report, int err,
					      const char *fmt, ...)
{
	va_list args;

	if (!report)
		return err;
	va_start(args, fmt);
	err = gpumig_parser_verror(p, err, fmt, args);
	va_end(args);
	return err;
}

/*
 * The chunk header of the current VRAM section is in p->buf: check it and
 * keep what it says (p->chunk_*).  Its bytes are not covered by a checked
 * CRC yet; only what cannot harm the destination is trusted: a place
 * inside VRAM and a length the section carries.  Before the section's
 * CRC is checked (@report false) a bad header only means nothing is
 * placed: the stream then fails as it would in any split, on the CRC if
 * that is wrong too.
 */
static int gpumig_vram_chunk_hdr(struct gpumig_parser *p, bool report)
{
	struct gpumig_wire_vram v;
	u32 flags, len, data_len = p->len - sizeof(v);
	u64 offset, end;

	if (p->chunk_ok)
		return 0;
	memcpy(&v, p->buf, sizeof(v));
	offset = le64_to_cpu(v.offset);
	flags = le32_to_cpu(v.flags);
	len = le32_to_cpu(v.len);

	if (flags & ~GPUMIG_VRAM_ZERO)
		return gpumig_chunk_refuse(p, report, -EINVAL,
			"VRAM chunk has unknown flags 0x%x", flags);
	if (flags & GPUMIG_VRAM_ZERO ? data_len != 0 : data_len != len)
		return gpumig_chunk_refuse(p, report, -EINVAL,
			"VRAM chunk length %u does not match its section (%u data bytes)",
			len, data_len);
	if (!len || len > p->lim.max_chunk)
		return gpumig_chunk_refuse(p, report, -EMSGSIZE,
			"VRAM chunk of %u bytes (limit %u)", len, p->lim.max_chunk);
	if (check_add_overflow(offset, (u64)len, &end) || end > p->lim.vram_size)
		return gpumig_chunk_refuse(p, report, -ERANGE,
			"VRAM chunk at 0x%llx+0x%x lies outside the destination's %llu bytes",
			offset, len, p->lim.vram_size);
	p->chunk_ok = true;
	p->chunk_zero = flags & GPUMIG_VRAM_ZERO;
	p->chunk_off = offset;
	p->chunk_len = len;
	return 0;
}

static int gpumig_parse_vram(struct gpumig_parser *p)
{
	const u8 *data = p->buf + sizeof(struct gpumig_wire_vram);
	u32 placed = p->placed;
	int ret;

	ret = gpumig_vram_chunk_hdr(p, true);
	if (ret)
		return ret;
	if (placed)
		/* crc32_le(~0, placed bytes), from the running CRC around them */
		ret = p->ops->vram_placed(p->priv, p->chunk_off, placed,
					  gpumig_crc_extend(p->chunk_crc, p->placed_crc, placed));
	if (!ret && placed < p->chunk_len)
		ret = p->ops->vram(p->priv, p->chunk_off + placed,
				   p->chunk_zero ? NULL : data + placed, p->chunk_len - placed);
	if (ret)
		return gpumig_parser_set_error(p, ret,
			"VRAM chunk at 0x%llx refused by the destination", p->chunk_off);
	return 0;
}

static int gpumig_parse_zero(struct gpumig_parser *p)
{
	struct gpumig_wire_zero z;
	u64 offset, len, end;
	int ret;

	memcpy(&z, p->buf, sizeof(z));
	offset = le64_to_cpu(z.offset);
	len = le64_to_cpu(z.len);
	if (!len)
		return gpumig_parser_set_error(p, -EINVAL,
			"empty zero range at 0x%llx", offset);
	if (check_add_overflow(offset, len, &end) || end > p->lim.vram_size)
		return gpumig_parser_set_error(p, -ERANGE,
			"zero range at 0x%llx+0x%llx lies outside the destination's %llu bytes",
			offset, len, p->lim.vram_size);
	if (!p->ops->zero)
		return gpumig_parser_set_error(p, -EPROTONOSUPPORT,
			"zero range sections are not read by this destination");
	ret = p->ops->zero(p->priv, offset, len);
	if (ret)
		return gpumig_parser_set_error(p, ret,
			"zero range at 0x%llx refused by the destination", offset);
	return 0;
}

static int gpumig_parse_arch_part(struct gpumig_parser *p)
{
	const u32 sh = sizeof(struct gpumig_wire_arch_part);
	struct gpumig_wire_arch_part a;
	u16 part, nr;
	int ret;

	memcpy(&a, p->buf, sizeof(a));
	part = le16_to_cpu(a.part);
	nr = le16_to_cpu(a.nr_parts);
	if (a.flags)
		return gpumig_parser_set_error(p, -EINVAL,
			"architectural state part has unknown flags 0x%x",
			le32_to_cpu(a.flags));
	if (part >= nr)
		return gpumig_parser_set_error(p, -EINVAL,
			"architectural state part %u of %u", part, nr);
	ret = p->ops->arch_part(p->priv, part, nr, p->buf + sh, p->len - sh);
	if (ret)
		return gpumig_parser_set_error(p, ret,
			"architectural state part %u of %u refused by the destination", part, nr);
	return 0;
}

static int gpumig_parse_vendor(struct gpumig_parser *p)
{
	const u32 sh = sizeof(struct gpumig_wire_vendor);
	struct gpumig_wire_vendor v;
	u32 index;
	int ret;

	memcpy(&v, p->buf, sizeof(v));
	index = le32_to_cpu(v.index);
	if (v.flags)
		return gpumig_parser_set_error(p, -EINVAL,
			"vendor section has unknown flags 0x%x", le32_to_cpu(v.flags));
	ret = p->ops->vendor(p->priv, index, p->buf + sh, p->len - sh);
	if (ret)
		return gpumig_parser_set_error(p, ret,
			"vendor section %u refused by the destination", index);
	return 0;
}

static int gpumig_parse_postcopy(struct gpumig_parser *p)
{
	struct gpumig_wire_postcopy pc;
	int ret;

	memcpy(&pc, p->buf, sizeof(pc));
	if (pc.flags || memchr_inv(pc.reserved, 0, sizeof(pc.reserved)))
		return gpumig_parser_set_error(p, -EINVAL,
			"post-copy section has unknown flags 0x%x or reserved bytes set",
			le32_to_cpu(pc.flags));
	if (!memchr_inv(pc.token, 0, sizeof(pc.token)))
		return gpumig_parser_set_error(p, -EINVAL,
					       "post-copy section has no session token");
	ret = p->ops->postcopy(p->priv, pc.token);
	if (ret)
		return gpumig_parser_set_error(p, ret, "post-copy refused by the destination");
	return 0;
}

static int gpumig_parse_owed(struct gpumig_parser *p)
{
	const u32 sh = sizeof(struct gpumig_wire_owed);
	struct gpumig_wire_owed o;
	const u8 *map = p->buf + sh;
	u64 first, nr;
	int ret;

	memcpy(&o, p->buf, sizeof(o));
	first = le64_to_cpu(o.first);
	nr = le64_to_cpu(o.nr_blocks);
	if (!nr || nr > GPUMIG_OWED_MAX_BLOCKS || p->len - sh != DIV_ROUND_UP(nr, 8))
		return gpumig_parser_set_error(p, -EINVAL,
			"owed-blocks section of %u bytes for %llu blocks", p->len, nr);
	if (nr % 8 && map[nr / 8] >> (nr % 8))
		return gpumig_parser_set_error(p, -EINVAL,
			"owed-blocks section sets bits past its %llu blocks", nr);
	ret = p->ops->owed(p->priv, o.token, first, nr, map);
	if (ret)
		return gpumig_parser_set_error(p, ret,
			"owed blocks %llu-%llu refused by the destination",
			first, first + nr - 1);
	return 0;
}

static int gpumig_parse_end(struct gpumig_parser *p)
{
	struct gpumig_wire_end e;
	int ret;

	memcpy(&e, p->buf, sizeof(e));
	if (le32_to_cpu(e.nr_sections) != p->seq ||
	    le64_to_cpu(e.total_bytes) != p->sec_start)
		return gpumig_parser_set_error(p, -EINVAL,
			"end section counts %u sections/%llu bytes, stream had %u/%llu",
			le32_to_cpu(e.nr_sections), le64_to_cpu(e.total_bytes),
			p->seq, p->sec_start);
	/* The end section carries the CRC of everything before it. */
	if (le32_to_cpu(e.stream_crc) != p->sec_crc)
		return gpumig_parser_set_error(p, -EBADMSG,
			"whole-stream checksum mismatch");
	ret = p->ops->end(p->priv);
	if (ret)
		return gpumig_parser_set_error(p, ret,
			"end of stream refused by the destination");
	p->state = GPUMIG_PARSE_DONE;
	return 0;
}

/* The payload of the current section is complete and its CRC matched. */
static int gpumig_dispatch(struct gpumig_parser *p)
{
	switch (p->type) {
	case GPUMIG_SEC_HEADER:
		return gpumig_parse_header(p);
	case GPUMIG_SEC_VRAM:
		return gpumig_parse_vram(p);
	case GPUMIG_SEC_ZERO:
		return gpumig_parse_zero(p);
	case GPUMIG_SEC_ARCH: {
		int ret = p->ops->arch(p->priv, p->buf, p->len);

		if (ret)
			return gpumig_parser_set_error(p, ret,
				"%s section refused by the destination",
				gpumig_sec_name(p->type));
		return 0;
	}
	case GPUMIG_SEC_ARCH_PART:
		return gpumig_parse_arch_part(p);
	case GPUMIG_SEC_VENDOR:
		return gpumig_parse_vendor(p);
	case GPUMIG_SEC_END:
		return gpumig_parse_end(p);
	case GPUMIG_SEC_POSTCOPY:
		return gpumig_parse_postcopy(p);
	case GPUMIG_SEC_OWED:
		return gpumig_parse_owed(p);
	case GPUMIG_SEC_NOTE:
		if (!p->skip)
			p->ops->note(p->priv, (const char *)p->buf, p->len);
		return 0;
	default:
		return 0;	/* optional, skipped */
	}
}

static int gpumig_sec_complete(struct gpumig_parser *p)
{
	int ret;

	p->stream_crc = gpumig_crc_extend(p->stream_crc, p->crc, p->len);
	if (p->crc != p->want_crc)
		return gpumig_parser_set_error(p, -EBADMSG,
			"%s section %u: payload checksum mismatch",
			gpumig_sec_name(p->type), p->seq);
	ret = gpumig_dispatch(p);
	if (ret)
		return ret;
	if (p->state == GPUMIG_PARSE_DONE)
		return 0;
	p->seq++;
	p->state = GPUMIG_PARSE_HDR;
	p->hdr_fill = 0;
	return 0;
}

/**
 * gpumig_parser_feed() - give the parser the next piece of the stream
 * @p: parser
 * @data: bytes
 * @len: how many
 *
 * Pieces may be split anywhere.  A section's callback runs when its last
 * byte arrives and its checksums match.
 *
 * Return: @len, or a negative errno once the stream is known to be bad
 * (the reason is in gpumig_parser_error()); the error is sticky.
 */
ssize_t gpumig_parser_feed(struct gpumig_parser *p, const void *data,
			   size_t len)
{
	const u8 *in = data;
	size_t left = len;
	int ret;

	if (p->state == GPUMIG_PARSE_FAILED)
		return p->err;

	while (left) {
		size_t n;

		switch (p->state) {
		case GPUMIG_PARSE_HDR:
			if (!p->hdr_fill) {
				p->sec_start = p->offset;
				p->sec_crc = p->stream_crc;
			}
			n = min(left, sizeof(p->hdr) - p->hdr_fill);
			memcpy(p->hdr + p->hdr_fill, in, n);
			p->hdr_fill += n;
			p->stream_crc = gpumig_crc(p->stream_crc, in, n);
			break;
		case GPUMIG_PARSE_PAYLOAD:
			n = min_t(size_t, left, p->len - p->fill);
			if (!p->skip)
				memcpy(p->buf + p->fill, in, n);
			p->crc = gpumig_crc(p->crc, in, n);
			p->fill += n;
			break;
		case GPUMIG_PARSE_DONE:
			return gpumig_parser_set_error(p, -EINVAL,
				"%zu bytes of data after the end of the stream",
				left);
		default:
			return p->err;
		}
		in += n;
		left -= n;
		p->offset += n;

		if (p->state == GPUMIG_PARSE_HDR &&
		    p->hdr_fill == sizeof(p->hdr)) {
			ret = gpumig_parse_sec_hdr(p);
			if (ret)
				return ret;
		}
		if (p->state == GPUMIG_PARSE_PAYLOAD && p->fill == p->len) {
			ret = gpumig_sec_complete(p);
			if (ret)
				return ret;
		}
	}
	return len;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_feed);

/**
 * gpumig_parser_room() - where the next payload bytes may be put directly
 * @p: parser
 * @dst: set to that place in the parser's own buffer
 *
 * In the middle of a section whose payload the parser keeps, the caller
 * may copy up to the returned number of the stream's next bytes to @dst
 * itself (straight from a user's buffer, say) and then hand them over
 * with gpumig_parser_commit(): that saves gpumig_parser_feed()'s copy.
 * Nothing put there is checked or used before the commit.
 *
 * In a VRAM section the room ends with the chunk's own header, so that
 * its data may then go where gpumig_parser_vram_room() says.
 *
 * Return: bytes that may be put at @dst; 0 when the next bytes must go
 * through gpumig_parser_feed().
 */
size_t gpumig_parser_room(struct gpumig_parser *p, void **dst)
{
	const u32 ch = sizeof(struct gpumig_wire_vram);

	if (p->state != GPUMIG_PARSE_PAYLOAD || p->skip || p->fill == p->len)
		return 0;
	*dst = p->buf + p->fill;
	if (p->type == GPUMIG_SEC_VRAM && p->fill < ch)
		return ch - p->fill;
	return p->len - p->fill;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_room);

/**
 * gpumig_parser_hdr_left() - bytes of a section header still to come
 * @p: parser
 *
 * A caller that wants the next payload to go in directly feeds just these
 * first: then gpumig_parser_room() has room for it.
 *
 * Return: the bytes, or 0 when the parser is not between sections.
 */
size_t gpumig_parser_hdr_left(const struct gpumig_parser *p)
{
	return p->state == GPUMIG_PARSE_HDR ? sizeof(p->hdr) - p->hdr_fill : 0;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_hdr_left);

/* @n more payload bytes arrived, their CRC counted: the section may be whole. */
static ssize_t gpumig_parser_took(struct gpumig_parser *p, size_t n)
{
	int ret;

	p->fill += n;
	p->offset += n;
	if (p->fill == p->len) {
		ret = gpumig_sec_complete(p);
		if (ret)
			return ret;
	}
	return n;
}

/**
 * gpumig_parser_commit() - @n bytes were put where gpumig_parser_room() said
 * @p: parser
 * @n: how many, at most what gpumig_parser_room() returned
 *
 * Return: @n, or a negative errno as gpumig_parser_feed() returns it.
 */
ssize_t gpumig_parser_commit(struct gpumig_parser *p, size_t n)
{
	if (p->state == GPUMIG_PARSE_FAILED)
		return p->err;
	if (p->state != GPUMIG_PARSE_PAYLOAD || p->skip || n > p->len - p->fill)
		return gpumig_parser_set_error(p, -EINVAL,
			"%zu bytes committed outside a section's payload", n);
	p->crc = gpumig_crc(p->crc, p->buf + p->fill, n);
	return gpumig_parser_took(p, n);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_commit);

/*
 * The next bytes are data of a VRAM chunk whose header checked out, and
 * every data byte before them was placed: the caller may place these too.
 */
static bool gpumig_parser_placing(struct gpumig_parser *p)
{
	const u32 ch = sizeof(struct gpumig_wire_vram);

	if (p->state != GPUMIG_PARSE_PAYLOAD || p->type != GPUMIG_SEC_VRAM ||
	    !p->ops->vram_placed || p->fill < ch || p->fill == p->len ||
	    p->fill - ch != p->placed)
		return false;
	if (gpumig_vram_chunk_hdr(p, false))
		return false;	/* refused when the section is whole */
	return !p->chunk_zero;
}

/**
 * gpumig_parser_vram_room() - the next bytes are a VRAM chunk's data: where
 *	they go
 * @p: parser
 * @offset: set to the VRAM offset of the next byte
 * @crc: set to the chunk's running CRC, for the caller to extend
 *	(crc32_le()) over the bytes it places
 *
 * Once the chunk's header has arrived (and checked out: the chunk lies
 * inside the destination's VRAM), the caller may write the data that
 * follows into VRAM itself, straight from its source, and hand it over
 * with gpumig_parser_vram_commit(); the chunk reaches @vram_placed when
 * its last byte arrived and its CRC matched.  Only for a parser whose ops
 * have @vram_placed, and only until a data byte of the chunk came through
 * the parser's buffer instead.  A bad chunk header places nothing: the
 * section then fails when it is whole, as in any other split.
 *
 * Return: data bytes of the chunk still to come that may be placed; 0 when
 * the next bytes must go through gpumig_parser_room() or
 * gpumig_parser_feed().
 */
size_t gpumig_parser_vram_room(struct gpumig_parser *p, u64 *offset, u32 *crc)
{
	if (!gpumig_parser_placing(p))
		return 0;
	*offset = p->chunk_off + p->placed;
	*crc = p->crc;
	return p->len - p->fill;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_vram_room);

/**
 * gpumig_parser_vram_commit() - @n data bytes were placed in VRAM
 * @p: parser
 * @n: how many, at most what gpumig_parser_vram_room() returned
 * @crc: the CRC it gave, extended over those bytes as VRAM now holds them
 *
 * Return: @n, or a negative errno as gpumig_parser_feed() returns it.
 */
ssize_t gpumig_parser_vram_commit(struct gpumig_parser *p, size_t n, u32 crc)
{
	if (p->state == GPUMIG_PARSE_FAILED)
		return p->err;
	if (!gpumig_parser_placing(p) || n > p->len - p->fill)
		return gpumig_parser_set_error(p, -EINVAL,
			"%zu bytes placed outside a VRAM chunk's data", n);
	if (!p->placed)
		p->chunk_crc = p->crc;
	p->crc = crc;
	p->placed_crc = crc;
	p->placed += n;
	return gpumig_parser_took(p, n);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_vram_commit);

/**
 * gpumig_parser_finish() - the writer has no more data
 * @p: parser
 *
 * Return: 0 if a complete, valid stream was read; otherwise the error, with
 * truncation reported as -ENODATA.
 */
int gpumig_parser_finish(struct gpumig_parser *p)
{
	switch (p->state) {
	case GPUMIG_PARSE_DONE:
		return 0;
	case GPUMIG_PARSE_FAILED:
		return p->err;
	case GPUMIG_PARSE_HDR:
		if (!p->seq && !p->hdr_fill)
			return gpumig_parser_set_error(p, -ENODATA,
				"empty stream");
		return gpumig_parser_set_error(p, -ENODATA,
			"stream truncated after %llu bytes: %u of %zu bytes of a section header, no end section",
			p->offset, p->hdr_fill, sizeof(p->hdr));
	default:
		return gpumig_parser_set_error(p, -ENODATA,
			"stream truncated after %llu bytes: %s section %u has %u of %u bytes",
			p->offset, gpumig_sec_name(p->type), p->seq, p->fill,
			p->len);
	}
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_parser_finish);
