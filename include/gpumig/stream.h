/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig migration stream: framing, encoder and incremental parser.
 *
 * The stream is a sequence of sections.  Every section starts with a
 * struct gpumig_sec_hdr whose own CRC covers the framing (so a corrupted
 * length is caught before it is trusted) and which carries the CRC of its
 * payload.  The first section is always GPUMIG_SEC_HEADER (stream version
 * and compatibility descriptor), the last GPUMIG_SEC_END (section count,
 * byte count and a CRC over everything before it).  See
 * Documentation/gpumig/stream-format.rst.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_STREAM_H
#define _GPUMIG_STREAM_H

#include <linux/types.h>

#define GPUMIG_SEC_MAGIC		0x474d5047	/* "GPMG" on the wire */
#define GPUMIG_STREAM_MAJOR		1
#define GPUMIG_STREAM_MINOR		0

/* No destination buffers more than this of one section. */
#define GPUMIG_SEC_MAX_PAYLOAD		(16U << 20)

/* A section type with this bit set may be skipped by a reader that does not know it. */
#define GPUMIG_SEC_OPTIONAL		0x8000

enum gpumig_sec_type {
	GPUMIG_SEC_HEADER	= 0x0001,
	GPUMIG_SEC_VRAM		= 0x0002,
	GPUMIG_SEC_ARCH		= 0x0003,
	GPUMIG_SEC_WORK		= 0x0004,
	GPUMIG_SEC_END		= 0x000f,
	GPUMIG_SEC_NOTE		= GPUMIG_SEC_OPTIONAL | 0x0001,
};

/**
 * struct gpumig_sec_hdr - framing of one section (little endian, 24 bytes)
 * @magic: GPUMIG_SEC_MAGIC
 * @type: enum gpumig_sec_type
 * @flags: must be zero in version 1
 * @seq: section number, 0 for the header section, +1 for each section
 * @len: payload length in bytes
 * @payload_crc: crc32_le(~0, payload, len)
 * @hdr_crc: crc32_le(~0) of the 20 bytes before this field
 */
struct gpumig_sec_hdr {
	__le32 magic;
	__le16 type;
	__le16 flags;
	__le32 seq;
	__le32 len;
	__le32 payload_crc;
	__le32 hdr_crc;
} __packed;

#define GPUMIG_TYPE_NAME_LEN		32

/**
 * struct gpumig_wire_compat - compatibility descriptor as sent on the wire
 * @type_name: instance type, NUL padded (e.g. "simgpu-256M")
 * @vram_size: device memory in bytes
 * @backend: which device family produced the state (GPUMIG_BACKEND_*)
 * @nr_queues: command queues the guest may use
 * @features: GPUMIG_FEAT_* the source's guest may rely on
 * @page_size: GPU MMU page size
 * @arch_version: version of the backend's architectural-state layout
 * @reserved: must be zero
 */
struct gpumig_wire_compat {
	char type_name[GPUMIG_TYPE_NAME_LEN];
	__le64 vram_size;
	__le32 backend;
	__le32 nr_queues;
	__le64 features;
	__le32 page_size;
	__le32 arch_version;
	__le64 reserved;
} __packed;

/* Payload of GPUMIG_SEC_HEADER. */
struct gpumig_wire_header {
	__le16 major;
	__le16 minor;
	__le32 flags;
	struct gpumig_wire_compat compat;
} __packed;

#define GPUMIG_VRAM_ZERO		0x1	/* chunk is all zeroes; no data */

/* Payload of GPUMIG_SEC_VRAM: this, then @len bytes unless ZERO. */
struct gpumig_wire_vram {
	__le64 offset;
	__le32 flags;
	__le32 len;
} __packed;

/* Payload of GPUMIG_SEC_END. */
struct gpumig_wire_end {
	__le32 nr_sections;
	__le32 stream_crc;
	__le64 total_bytes;
} __packed;

#define GPUMIG_BACKEND_SIMGPU		1
#define GPUMIG_BACKEND_PCI		2
#define GPUMIG_BACKEND_FAKE		0xf0

/**
 * struct gpumig_compat - compatibility descriptor, CPU byte order
 * @type_name: instance type, NUL terminated
 * @vram_size: device memory in bytes
 * @backend: GPUMIG_BACKEND_*
 * @nr_queues: command queues
 * @features: feature bits
 * @page_size: GPU MMU page size
 * @arch_version: architectural-state layout version
 */
struct gpumig_compat {
	char type_name[GPUMIG_TYPE_NAME_LEN];
	u64 vram_size;
	u32 backend;
	u32 nr_queues;
	u64 features;
	u32 page_size;
	u32 arch_version;
};

int gpumig_compat_check(const struct gpumig_compat *src,
			const struct gpumig_compat *dst, char *msg, size_t len);
int gpumig_compat_format(const struct gpumig_compat *c, char *buf, size_t len);

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
size_t gpumig_vram_section_size(u32 len, bool zero);
size_t gpumig_blob_section_size(u32 len);
ssize_t gpumig_emit_header(struct gpumig_writer *w, void *dst, size_t room,
			   const struct gpumig_compat *compat);
ssize_t gpumig_emit_vram(struct gpumig_writer *w, void *dst, size_t room,
			 u64 offset, const void *data, u32 len);
ssize_t gpumig_emit_blob(struct gpumig_writer *w, void *dst, size_t room,
			 u16 type, const void *data, u32 len);
ssize_t gpumig_emit_end(struct gpumig_writer *w, void *dst, size_t room);

/**
 * struct gpumig_parser_limits - what the destination can accept
 * @vram_size: device memory; every VRAM chunk must lie inside it
 * @max_chunk: largest VRAM chunk data the destination buffers
 * @max_arch: largest architectural-state section
 * @max_work: largest in-flight-work section
 * @max_skip: largest unknown optional section that will be skipped
 */
struct gpumig_parser_limits {
	u64 vram_size;
	u32 max_chunk;
	u32 max_arch;
	u32 max_work;
	u32 max_skip;
};

/**
 * struct gpumig_parser_ops - where a parsed, checked section goes
 * @header: the source's version and descriptor; decide compatibility.
 *	May call gpumig_parser_set_error() to explain a refusal.
 * @vram: a VRAM chunk; @data is NULL for a zero chunk
 * @arch: architectural state
 * @work: in-flight work
 * @end: the stream is complete and every check passed
 *
 * Each returns 0 or a negative errno, which fails the parser for good.
 * A callback is only called once its section's CRCs have been checked.
 */
struct gpumig_parser_ops {
	int (*header)(void *priv, u16 major, u16 minor,
		      const struct gpumig_compat *src);
	int (*vram)(void *priv, u64 offset, const void *data, u32 len);
	int (*arch)(void *priv, const void *data, u32 len);
	int (*work)(void *priv, const void *data, u32 len);
	int (*end)(void *priv);
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
