/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig migration stream: framing, encoder and incremental parser.
 *
 * The stream is a sequence of sections.  Every section starts with a
 * struct gpumig_sec_hdr whose own CRC covers the framing (so a corrupted
 * length is caught before it is trusted) and which carries the CRC of its
 * payload.  The first section is always GPUMIG_SEC_HEADER (stream version
 * and compatibility descriptor), the last GPUMIG_SEC_END (section count,
 * byte count and a CRC over everything before it).  The wire layouts are
 * in <uapi/linux/gpumig_stream.h>; Documentation/gpumig/stream-format.rst
 * explains them.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_STREAM_H
#define _GPUMIG_STREAM_H

#include <linux/types.h>
#include <uapi/linux/gpumig_stream.h>

/**
 * struct gpumig_compat - compatibility descriptor, CPU byte order
 * @type_name: instance type, NUL terminated
 * @vram_size: device memory in bytes
 * @backend: GPUMIG_BACKEND_*
 * @nr_queues: command queues
 * @features: feature bits
 * @page_size: GPU MMU page size
 * @arch_version: architectural-state layout version
 * @block_shift: log2 of the VRAM block (chunk and dirty grain); 16 for
 *	64 KiB, whatever the wire says (0 there)
 * @stream_minor: the stream minor version the device writes (what its
 *	geometry needs, within its migration/stream_max), or the one a
 *	stream names
 */
struct gpumig_compat {
	char type_name[GPUMIG_TYPE_NAME_LEN];
	u64 vram_size;
	u32 backend;
	u32 nr_queues;
	u64 features;
	u32 page_size;
	u32 arch_version;
	u32 block_shift;
	u16 stream_minor;
};

/* The block a descriptor of stream 1.1 or earlier implies: 64 KiB. */
#define GPUMIG_BLOCK_SHIFT_DEFAULT	16

int gpumig_compat_check(const struct gpumig_compat *src,
			const struct gpumig_compat *dst, char *msg, size_t len);
int gpumig_compat_format(const struct gpumig_compat *c, char *buf, size_t len);
bool gpumig_block_shift_valid(u32 shift);

/**
 * struct gpumig_writer - state of a stream being produced
 * @seq: number of the next section
 * @bytes: bytes emitted so far
 * @crc: running crc32_le over every byte emitted so far
 */
struct gpumig_writer {
	u32 seq;
	u64 bytes;
	u32 crc;
};

void gpumig_writer_init(struct gpumig_writer *w);
u32 gpumig_crc_extend(u32 crc, u32 pcrc, size_t len);
size_t gpumig_vram_section_size(u32 len, bool zero);
size_t gpumig_zero_section_size(void);
size_t gpumig_blob_section_size(u32 len);
void *gpumig_vram_payload(void *dst);
ssize_t gpumig_emit_header(struct gpumig_writer *w, void *dst, size_t room,
			   const struct gpumig_compat *compat);
size_t gpumig_arch_part_section_size(u32 len);
size_t gpumig_vendor_section_size(u32 len);
ssize_t gpumig_emit_arch_part(struct gpumig_writer *w, void *dst, size_t room,
			      u16 part, u16 nr_parts, const void *data, u32 len);
ssize_t gpumig_emit_vendor(struct gpumig_writer *w, void *dst, size_t room,
			   u32 index, const void *data, u32 len);
ssize_t gpumig_emit_vram(struct gpumig_writer *w, void *dst, size_t room,
			 u64 offset, const void *data, u32 len);
ssize_t gpumig_emit_zero(struct gpumig_writer *w, void *dst, size_t room,
			 u64 offset, u64 len);
ssize_t gpumig_emit_blob(struct gpumig_writer *w, void *dst, size_t room,
			 u16 type, const void *data, u32 len);
ssize_t gpumig_emit_end(struct gpumig_writer *w, void *dst, size_t room);

/**
 * struct gpumig_parser_limits - what the destination can accept
 * @vram_size: device memory; every VRAM chunk must lie inside it
 * @max_chunk: largest VRAM chunk data the destination buffers
 * @max_arch: largest architectural-state section or part
 * @max_vendor: largest vendor section (0: the destination takes none)
 * @max_skip: largest unknown optional section that will be skipped
 */
struct gpumig_parser_limits {
	u64 vram_size;
	u32 max_chunk;
	u32 max_arch;
	u32 max_vendor;
	u32 max_skip;
};

/**
 * struct gpumig_parser_ops - where a parsed, checked section goes
 * @header: the source's version and descriptor; decide compatibility.
 *	May call gpumig_parser_set_error() to explain a refusal.
 * @vram: a VRAM chunk; @data is NULL for a zero chunk
 * @vram_placed: optional: the first @len bytes of the data of the VRAM
 *	chunk at @offset, which the caller put into VRAM itself
 *	(gpumig_parser_vram_room()), checked out; @crc is crc32_le(~0, those
 *	bytes).  The rest of the chunk, if any, follows through @vram.
 *	Without it nothing is placed: every chunk goes through @vram.
 * @zero: a range of VRAM that reads zero (stream 1.1); without it such a
 *	section fails the stream
 * @arch: architectural state, in one section (GPUMIG_SEC_ARCH)
 * @arch_part: optional: part @part of @nr_parts of the architectural
 *	state (stream 1.2); without it such a section fails the stream
 * @vendor: optional: vendor section @index (stream 1.2); without it such
 *	a section fails the stream
 * @end: the stream is complete and every check passed
 * @postcopy: optional: the source defers VRAM past the stop, in session
 *	@token (GPUMIG_TOKEN_LEN bytes, not all zero); without it (or @owed)
 *	such a stream fails at that section, in pre-copy
 * @owed: optional: blocks @first to @first + @nr - 1 of which those set
 *	in @map (DIV_ROUND_UP(@nr, 8) bytes, checked: no bit past @nr) are
 *	owed in session @token
 * @note: optional; a note section of at most GPUMIG_NOTE_MAX bytes (not
 *	NUL terminated).  Notes never fail a stream: longer ones are
 *	skipped unread, and without @note every one is.
 *
 * Each other returns 0 or a negative errno, which fails the parser for
 * good.  A callback is only called once its section's CRCs have been
 * checked.
 */
struct gpumig_parser_ops {
	int (*header)(void *priv, u16 major, u16 minor,
		      const struct gpumig_compat *src);
	int (*vram)(void *priv, u64 offset, const void *data, u32 len);
	int (*vram_placed)(void *priv, u64 offset, u32 len, u32 crc);
	int (*zero)(void *priv, u64 offset, u64 len);
	int (*arch)(void *priv, const void *data, u32 len);
	int (*arch_part)(void *priv, u16 part, u16 nr_parts, const void *data, u32 len);
	int (*vendor)(void *priv, u32 index, const void *data, u32 len);
	int (*end)(void *priv);
	int (*postcopy)(void *priv, const u8 *token);
	int (*owed)(void *priv, const u8 *token, u64 first, u64 nr, const u8 *map);
	void (*note)(void *priv, const char *text, u32 len);
};

enum gpumig_parser_state {
	GPUMIG_PARSE_HDR,
	GPUMIG_PARSE_PAYLOAD,
	GPUMIG_PARSE_DONE,
	GPUMIG_PARSE_FAILED,
};

#define GPUMIG_PARSER_MSG_LEN		160

/**
 * struct gpumig_parser - incremental, hostile-input-safe stream reader
 * @ops: section callbacks
 * @priv: their argument
 * @lim: bounds on what is accepted
 * @state: where in a section the parser is
 * @hdr: raw bytes of the section header being collected
 * @hdr_fill: bytes of @hdr collected
 * @type: current section's type
 * @len: current section's payload length
 * @want_crc: current section's payload CRC from the header
 * @crc: CRC of the payload bytes collected so far
 * @buf: payload buffer, sized once from @lim
 * @buf_size: its size
 * @fill: payload bytes collected
 * @skip: current section is an unknown optional one being skipped
 * @chunk_ok: a VRAM section's chunk header has arrived and was checked
 * @chunk_zero: then: it is a zero chunk
 * @chunk_off: then: the chunk's VRAM offset
 * @chunk_len: then: its length
 * @chunk_crc: @crc as it was right after the chunk header, once data is
 *	placed
 * @placed: bytes of the chunk's data the caller put into VRAM itself
 *	(gpumig_parser_vram_commit()), all before any that came through the
 *	parser's buffer
 * @placed_crc: @crc as it was right after them
 * @seq: next expected section number
 * @offset: stream bytes consumed
 * @sec_start: offset of the current section
 * @stream_crc: CRC over every byte consumed
 * @sec_crc: @stream_crc as it was at the start of the current section
 * @err: sticky error, once failed
 * @msg: human-readable reason for @err
 */
struct gpumig_parser {
	const struct gpumig_parser_ops *ops;
	void *priv;
	struct gpumig_parser_limits lim;
	enum gpumig_parser_state state;
	u8 hdr[sizeof(struct gpumig_sec_hdr)];
	u32 hdr_fill;
	u16 type;
	u32 len;
	u32 want_crc;
	u32 crc;
	u8 *buf;
	u32 buf_size;
	u32 fill;
	bool skip;
	bool chunk_ok;
	bool chunk_zero;
	u64 chunk_off;
	u32 chunk_len;
	u32 chunk_crc;
	u32 placed;
	u32 placed_crc;
	u32 seq;
	u64 offset;
	u64 sec_start;
	u32 stream_crc;
	u32 sec_crc;
	int err;
	char msg[GPUMIG_PARSER_MSG_LEN];
};

int gpumig_parser_init(struct gpumig_parser *p,
		       const struct gpumig_parser_limits *lim,
		       const struct gpumig_parser_ops *ops, void *priv);
void gpumig_parser_destroy(struct gpumig_parser *p);
ssize_t gpumig_parser_feed(struct gpumig_parser *p, const void *data,
			   size_t len);
size_t gpumig_parser_room(struct gpumig_parser *p, void **dst);
size_t gpumig_parser_hdr_left(const struct gpumig_parser *p);
ssize_t gpumig_parser_commit(struct gpumig_parser *p, size_t n);
size_t gpumig_parser_vram_room(struct gpumig_parser *p, u64 *offset, u32 *crc);
ssize_t gpumig_parser_vram_commit(struct gpumig_parser *p, size_t n, u32 crc);
int gpumig_parser_finish(struct gpumig_parser *p);
__printf(3, 4) int gpumig_parser_set_error(struct gpumig_parser *p, int err,
					   const char *fmt, ...);

static inline bool gpumig_parser_done(const struct gpumig_parser *p)
{
	return p->state == GPUMIG_PARSE_DONE;
}

static inline const char *gpumig_parser_error(const struct gpumig_parser *p)
{
	return p->msg;
}

#endif /* _GPUMIG_STREAM_H */
