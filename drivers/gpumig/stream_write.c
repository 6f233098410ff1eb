// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration stream: the encoder.  Each emit writes one whole
 * section (framing, payload, both CRCs) into the caller's buffer and
 * advances the writer's count and running CRC; the *_section_size()
 * helpers give what a section will take, for the engine's size reports.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include <kunit/visibility.h>

#include "stream_priv.h"

/* The wire layouts are an ABI: a change of size is a new stream version. */
static_assert(sizeof(struct gpumig_sec_hdr) == 24);
static_assert(sizeof(struct gpumig_wire_compat) == 72);
static_assert(sizeof(struct gpumig_wire_header) == 80);
static_assert(sizeof(struct gpumig_wire_vram) == 16);
static_assert(sizeof(struct gpumig_wire_end) == 16);
static_assert(sizeof(struct gpumig_wire_zero) == 16);
static_assert(sizeof(struct gpumig_wire_arch_part) == 8);
static_assert(sizeof(struct gpumig_wire_vendor) == 8);

/**
 * gpumig_writer_init() - start a new stream
 * @w: writer
 */
void gpumig_writer_init(struct gpumig_writer *w)
{
	w->seq = 0;
	w->bytes = 0;
	w->crc = ~0U;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_writer_init);

/**
 * gpumig_vram_section_size() - bytes a VRAM chunk takes in the stream
 * @len: chunk length
 * @zero: the chunk is sent as a zero chunk
 *
 * Return: the section's size including framing.
 */
size_t gpumig_vram_section_size(u32 len, bool zero)
{
	return sizeof(struct gpumig_sec_hdr) + sizeof(struct gpumig_wire_vram) +
	       (zero ? 0 : len);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_vram_section_size);

/**
 * gpumig_blob_section_size() - bytes an arch/work section takes
 * @len: payload length
 *
 * Return: the section's size including framing.
 */
size_t gpumig_blob_section_size(u32 len)
{
	return sizeof(struct gpumig_sec_hdr) + len;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_blob_section_size);

/*
 * Emit one section whose payload is the concatenation of @p1 and @p2
 * (either may be empty).  Everything is written to @dst at once, so the
 * writer never holds a half-emitted section.  @p2 may already be in place
 * (gpumig_vram_payload()): then it is not copied.  The payload is read
 * once, for its CRC; the stream's CRC is extended from that.
 */
static ssize_t gpumig_emit(struct gpumig_writer *w, void *dst, size_t room,
			   u16 type, const void *p1, u32 l1,
			   const void *p2, u32 l2)
{
	struct gpumig_sec_hdr h;
	size_t total = sizeof(h) + (size_t)l1 + l2;
	u8 *out = dst;
	u32 crc;

	if ((u64)l1 + l2 > U32_MAX)
		return -EMSGSIZE;
	if (room < total)
		return -ENOSPC;

	if (l1)
		memcpy(out + sizeof(h), p1, l1);
	if (l2 && p2 != out + sizeof(h) + l1)
		memcpy(out + sizeof(h) + l1, p2, l2);
	crc = gpumig_crc(~0U, out + sizeof(h), (size_t)l1 + l2);
	h.magic = cpu_to_le32(GPUMIG_SEC_MAGIC);
	h.type = cpu_to_le16(type);
	h.flags = 0;
	h.seq = cpu_to_le32(w->seq);
	h.len = cpu_to_le32(l1 + l2);
	h.payload_crc = cpu_to_le32(crc);
	h.hdr_crc = cpu_to_le32(gpumig_crc(~0U, &h,
					   offsetof(struct gpumig_sec_hdr, hdr_crc)));

	memcpy(out, &h, sizeof(h));

	w->crc = gpumig_crc(w->crc, out, sizeof(h));
	w->crc = gpumig_crc_extend(w->crc, crc, (size_t)l1 + l2);
	w->bytes += total;
	w->seq++;
	return total;
}

/**
 * gpumig_emit_header() - emit the header section (must be first)
 * @w: writer
 * @dst: output buffer
 * @room: its size
 * @compat: the source's compatibility descriptor; its @stream_minor is
 *	the minor the header names, 0 to GPUMIG_STREAM_MINOR
 *
 * Return: bytes written, -ENOSPC if @room is too small, -EINVAL if a
 * section was already emitted or the minor is one this codec cannot write.
 */
ssize_t gpumig_emit_header(struct gpumig_writer *w, void *dst, size_t room,
			   const struct gpumig_compat *compat)
{
	u16 minor = compat->stream_minor;
	struct gpumig_wire_header hdr = {
		.major = cpu_to_le16(GPUMIG_STREAM_MAJOR),
		.minor = cpu_to_le16(minor),
	};

	struct gpumig_compat c = *compat;

	if (w->seq || minor > GPUMIG_STREAM_MINOR)
		return -EINVAL;
	/* Before 1.2 the block lived in reserved bits: only 64 KiB then. */
	if (minor < 2 && compat->block_shift != GPUMIG_BLOCK_SHIFT_DEFAULT)
		return -EINVAL;
	c.stream_minor = minor;
	gpumig_compat_to_wire(&c, &hdr.compat);
	return gpumig_emit(w, dst, room, GPUMIG_SEC_HEADER, &hdr, sizeof(hdr),
			   NULL, 0);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_emit_header);

/**
 * gpumig_vram_payload() - where a VRAM chunk's data goes in a section
 * @dst: the output buffer gpumig_emit_vram() will be given
 *
 * A producer may read device memory straight to this address and pass it
 * as gpumig_emit_vram()'s @data: the data is then not copied again.
 *
 * Return: @dst plus the section and chunk headers.
 */
void *gpumig_vram_payload(void *dst)
{
	return (u8 *)dst + sizeof(struct gpumig_sec_hdr) + sizeof(struct gpumig_wire_vram);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_vram_payload);

/**
 * gpumig_emit_vram() - emit one chunk of device memory
 * @w: writer
 * @dst: output buffer
 * @room: its size
 * @offset: chunk offset in VRAM
 * @data: chunk contents (possibly in place, at gpumig_vram_payload(@dst)),
 *	or NULL for an all-zero chunk
 * @len: chunk length
 *
 * Return: bytes written or a negative errno.
 */
ssize_t gpumig_emit_vram(struct gpumig_writer *w, void *dst, size_t room,
			 u64 offset, const void *data, u32 len)
{
	struct gpumig_wire_vram v = {
		.offset = cpu_to_le64(offset),
		.flags = cpu_to_le32(data ? 0 : GPUMIG_VRAM_ZERO),
		.len = cpu_to_le32(len),
	};

	return gpumig_emit(w, dst, room, GPUMIG_SEC_VRAM, &v, sizeof(v),
			   data, data ? len : 0);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_emit_vram);

/**
 * gpumig_zero_section_size() - bytes a zero range takes in the stream
 *
 * Return: the section's size including framing, whatever the range's length.
 */
size_t gpumig_zero_section_size(void)
{
	return sizeof(struct gpumig_sec_hdr) + sizeof(struct gpumig_wire_zero);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_zero_section_size);

/**
 * gpumig_emit_zero() - emit a range of device memory that reads zero
 * @w: writer
 * @dst: output buffer
 * @room: its size
 * @offset: range start
 * @len: range length, not zero
 *
 * Return: bytes written or a negative errno.
 */
ssize_t gpumig_emit_zero(struct gpumig_writer *w, void *dst, size_t room,
			 u64 offset, u64 len)
{
	struct gpumig_wire_zero z = {
		.offset = cpu_to_le64(offset),
		.len = cpu_to_le64(len),
	};

	if (!len)
		return -EINVAL;
	return gpumig_emit(w, dst, room, GPUMIG_SEC_ZERO, &z, sizeof(z), NULL, 0);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_emit_zero);

/**
 * gpumig_emit_blob() - emit an opaque section (arch state, work, note)
 * @w: writer
 * @dst: output buffer
 * @room: its size
 * @type: GPUMIG_SEC_ARCH or an optional type
 * @data: payload
 * @len: its length
 *
 * Return: bytes written or a negative errno.
 */
ssize_t gpumig_emit_blob(struct gpumig_writer *w, void *dst, size_t room,
			 u16 type, const void *data, u32 len)
{
	if (type == GPUMIG_SEC_HEADER || type == GPUMIG_SEC_END ||
	    type == GPUMIG_SEC_VRAM || type == GPUMIG_SEC_ZERO ||
	    type == GPUMIG_SEC_ARCH_PART || type == GPUMIG_SEC_VENDOR)
		return -EINVAL;
	return gpumig_emit(w, dst, room, type, data, len, NULL, 0);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_emit_blob);

/**
 * gpumig_arch_part_section_size() - bytes a part of the architectural
 *	state takes in the stream
 * @len: the part's length
 *
 * Return: the section's size including framing.
 */
size_t gpumig_arch_part_section_size(u32 len)
{
	return sizeof(struct gpumig_sec_hdr) + sizeof(struct gpumig_wire_arch_part) + len;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_arch_part_section_size);

/**
 * gpumig_emit_arch_part() - emit one part of the architectural state (1.2)
 * @w: writer
 * @dst: output buffer
 * @room: its size
 * @part: which part, 0 to @nr_parts - 1
 * @nr_parts: how many the device has
 * @data: the part
 * @len: its length (may be 0)
 *
 * Return: bytes written or a negative errno.
 */
ssize_t gpumig_emit_arch_part(struct gpumig_writer *w, void *dst, size_t room,
			      u16 part, u16 nr_parts, const void *data, u32 len)
{
	struct gpumig_wire_arch_part a = {
		.part = cpu_to_le16(part),
		.nr_parts = cpu_to_le16(nr_parts),
	};

	if (part >= nr_parts)
		return -EINVAL;
	return gpumig_emit(w, dst, room, GPUMIG_SEC_ARCH_PART, &a, sizeof(a), data, len);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_emit_arch_part);

/**
 * gpumig_vendor_section_size() - bytes a vendor section takes in the stream
 * @len: its payload's length
 *
 * Return: the section's size including framing.
 */
size_t gpumig_vendor_section_size(u32 len)
{
	return sizeof(struct gpumig_sec_hdr) + sizeof(struct gpumig_wire_vendor) + len;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_vendor_section_size);

/**
 * gpumig_emit_vendor() - emit a section of the device's own state (1.2)
 * @w: writer
 * @dst: output buffer
 * @room: its size
 * @index: which section of the device's, 0, 1, ... in order
 * @data: its bytes, opaque to gpumig
 * @len: their length (may be 0)
 *
 * Return: bytes written or a negative errno.
 */
ssize_t gpumig_emit_vendor(struct gpumig_writer *w, void *dst, size_t room,
			   u32 index, const void *data, u32 len)
{
	struct gpumig_wire_vendor v = { .index = cpu_to_le32(index) };

	return gpumig_emit(w, dst, room, GPUMIG_SEC_VENDOR, &v, sizeof(v), data, len);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_emit_vendor);

/**
 * gpumig_emit_end() - emit the end section
 * @w: writer
 * @dst: output buffer
 * @room: its size
 *
 * Return: bytes written or a negative errno.
 */
ssize_t gpumig_emit_end(struct gpumig_writer *w, void *dst, size_t room)
{
	struct gpumig_wire_end e = {
		.nr_sections = cpu_to_le32(w->seq),
		.stream_crc = cpu_to_le32(w->crc),
		.total_bytes = cpu_to_le64(w->bytes),
	};

	return gpumig_emit(w, dst, room, GPUMIG_SEC_END, &e, sizeof(e), NULL, 0);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_emit_end);
