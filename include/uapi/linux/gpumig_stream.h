/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * gpumig migration stream: the wire format, as a VMM or a tool sees the
 * bytes of a VFIO migration data fd of a gpumig device.  The engine's
 * encoder and parser (include/gpumig/stream.h) use these layouts; tools
 * that build or inspect streams include this header instead of counting
 * bytes.  Documentation/gpumig/stream-format.rst explains the format.
 *
 * All fields are little endian.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _UAPI_LINUX_GPUMIG_STREAM_H
#define _UAPI_LINUX_GPUMIG_STREAM_H

#include <linux/types.h>

#define GPUMIG_SEC_MAGIC		0x474d5047	/* "GPMG" on the wire */
#define GPUMIG_STREAM_MAJOR		1
#define GPUMIG_STREAM_MINOR		3

/* No destination buffers more than this of one section. */
#define GPUMIG_SEC_MAX_PAYLOAD		(16U << 20)

/* A section type with this bit set may be skipped by a reader that does not know it. */
#define GPUMIG_SEC_OPTIONAL		0x8000

#define GPUMIG_SEC_HEADER		0x0001	/* first: version, descriptor */
#define GPUMIG_SEC_VRAM			0x0002	/* one chunk of device memory */
#define GPUMIG_SEC_ARCH			0x0003	/* architectural state */
#define GPUMIG_SEC_WORK			0x0004	/* reserved: never produced, always refused */
#define GPUMIG_SEC_ZERO			0x0005	/* a range of device memory reads zero (1.1) */
#define GPUMIG_SEC_ARCH_PART		0x0006	/* one part of the architectural state (1.2) */
#define GPUMIG_SEC_VENDOR		0x0007	/* a device's own opaque state (1.2) */
#define GPUMIG_SEC_POSTCOPY		0x0008	/* pre-copy: VRAM will follow the stop (1.3) */
#define GPUMIG_SEC_OWED			0x0009	/* stop-copy: blocks still owed (1.3) */
#define GPUMIG_SEC_END			0x000f	/* last: counts and stream CRC */
#define GPUMIG_SEC_NOTE			(GPUMIG_SEC_OPTIONAL | 0x0001)

/*
 * A note's payload is "key=value" text without a NUL.  gpumig's engine
 * sends one as the second section of every stream it produces:
 * "producer=gpumig/<release>" (e.g. "producer=gpumig/0.1").  A reader
 * skips a note it does not want, and may skip one longer than
 * GPUMIG_NOTE_MAX bytes unread; a note never changes what the stream
 * restores.
 */
#define GPUMIG_NOTE_MAX			64
#define GPUMIG_NOTE_PRODUCER		"producer="
/*
 * After it: "vram_data=" and 20 decimal digits, the VRAM blocks with data
 * when the stream began (the first pass sends them): a destination may
 * back that much memory ahead.
 */
#define GPUMIG_NOTE_VRAM_DATA		"vram_data="

/**
 * struct gpumig_sec_hdr - framing of one section (24 bytes)
 * @magic: GPUMIG_SEC_MAGIC
 * @type: GPUMIG_SEC_*
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
} __attribute__((packed));

#define GPUMIG_TYPE_NAME_LEN		32

/**
 * struct gpumig_wire_compat - compatibility descriptor (72 bytes)
 * @type_name: instance type, NUL padded (e.g. "simgpu-256M")
 * @vram_size: device memory in bytes
 * @backend: which device family produced the state (GPUMIG_BACKEND_*)
 * @nr_queues: command queues the guest may use
 * @features: feature bits the source's guest may rely on
 * @page_size: GPU MMU page size
 * @arch_version: version of the backend's architectural-state layout
 * @block_shift: log2 of the device's VRAM block, which is both the
 *	chunk the stream carries VRAM in and the grain of its dirty
 *	tracking, GPUMIG_BLOCK_SHIFT_MIN to GPUMIG_BLOCK_SHIFT_MAX.  Stream
 *	1.2: every 1.2 stream names it (a reader of 1.1, for which it is
 *	part of @reserved, refuses such a stream at its header); zero in a
 *	stream of a lower minor, which means 16 (64 KiB)
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
	__le32 block_shift;
	__le32 reserved;
} __attribute__((packed));

#define GPUMIG_BLOCK_SHIFT_MIN		12	/* 4 KiB */
#define GPUMIG_BLOCK_SHIFT_MAX		23	/* 8 MiB: a chunk fits GPUMIG_SEC_MAX_PAYLOAD */

/*
 * Backend IDs name a device family on the wire: a destination takes only
 * its own family's state.  IDs below 0x10000 are gpumig's; a GPU vendor's
 * provider uses its PCI vendor ID in the upper 16 bits and numbers its
 * families in the lower 16 ((0x8086 << 16) | 1, say), so that a new
 * family needs no number from anyone.
 */
#define GPUMIG_BACKEND_SIMGPU		1	/* simgpu mdev */
#define GPUMIG_BACKEND_PCI		2	/* simgpu-pci VF */
#define GPUMIG_BACKEND_VENDOR(pci_vendor, n)	((__u32)(pci_vendor) << 16 | (__u16)(n))

/**
 * struct gpumig_wire_header - payload of GPUMIG_SEC_HEADER (80 bytes)
 * @major: GPUMIG_STREAM_MAJOR of the producer
 * @minor: GPUMIG_STREAM_MINOR of the producer
 * @flags: must be zero
 * @compat: the source's compatibility descriptor
 */
struct gpumig_wire_header {
	__le16 major;
	__le16 minor;
	__le32 flags;
	struct gpumig_wire_compat compat;
} __attribute__((packed));

#define GPUMIG_VRAM_ZERO		0x1	/* chunk is all zeroes; no data */
/*
 * gpumig's engine sends VRAM in chunks of the device's block: this size
 * unless the descriptor's block_shift says otherwise.
 */
#define GPUMIG_VRAM_CHUNK		65536

/**
 * struct gpumig_wire_vram - payload of GPUMIG_SEC_VRAM, then @len bytes
 *	unless @flags has GPUMIG_VRAM_ZERO (16 bytes)
 * @offset: chunk offset in VRAM
 * @flags: GPUMIG_VRAM_*
 * @len: chunk length
 */
struct gpumig_wire_vram {
	__le64 offset;
	__le32 flags;
	__le32 len;
} __attribute__((packed));

/**
 * struct gpumig_wire_zero - payload of GPUMIG_SEC_ZERO (16 bytes): the
 *	range [@offset, @offset + @len) of VRAM reads zero.  Stream 1.1: one
 *	section for a run of zero blocks of any length, where 1.0 sent one
 *	zero chunk per block.
 * @offset: range start in VRAM
 * @len: range length, not zero
 */
struct gpumig_wire_zero {
	__le64 offset;
	__le64 len;
} __attribute__((packed));

/**
 * struct gpumig_wire_arch_part - payload of GPUMIG_SEC_ARCH_PART, then the
 *	part's bytes (8 bytes).  Stream 1.2: a device whose architectural
 *	state is in several parts, or larger than 64 KiB, sends each part,
 *	0 to @nr_parts - 1 in order, instead of one GPUMIG_SEC_ARCH.
 * @part: which part
 * @nr_parts: how many the device has (the same in every part)
 * @flags: must be zero
 */
struct gpumig_wire_arch_part {
	__le16 part;
	__le16 nr_parts;
	__le32 flags;
} __attribute__((packed));

/**
 * struct gpumig_wire_vendor - payload of GPUMIG_SEC_VENDOR, then the
 *	section's bytes (8 bytes).  Stream 1.2: state that the device's own
 *	driver produces and consumes and gpumig carries unread (firmware
 *	context, a PF's per-VF configuration), sent after VRAM and before the
 *	architectural state, @index 0, 1, ... in order.
 * @index: which section of the device's
 * @flags: must be zero
 */
struct gpumig_wire_vendor {
	__le32 index;
	__le32 flags;
} __attribute__((packed));

/* Bytes of a post-copy session token. */
#define GPUMIG_TOKEN_LEN		16

/**
 * struct gpumig_wire_postcopy - payload of GPUMIG_SEC_POSTCOPY (32 bytes).
 *	Stream 1.3: the source defers part of VRAM past the stop (deferred
 *	restoration, Documentation/gpumig/postcopy.rst).  Sent in pre-copy,
 *	before any stop-copy data, so that a destination that cannot run with
 *	VRAM still owed refuses the stream while the source still runs (a
 *	reader of 1.2 or earlier refuses it as an unknown mandatory section).
 *	After it the stream carries no more VRAM data before the stop.
 * @token: the session token: random, the same in GPUMIG_SEC_OWED and in
 *	every block the mover delivers
 * @flags: must be zero
 * @reserved: must be zero
 */
struct gpumig_wire_postcopy {
	__u8 token[GPUMIG_TOKEN_LEN];
	__le32 flags;
	__le32 reserved[3];
} __attribute__((packed));

/**
 * struct gpumig_wire_owed - payload of GPUMIG_SEC_OWED (32 bytes), then a
 *	bitmap of @nr_blocks bits in DIV_ROUND_UP(@nr_blocks, 8) bytes (bit i
 *	of byte j is block @first + 8 * j + i; the bits past @nr_blocks are
 *	zero).  Stream 1.3, stop-copy, in a stream that carried a
 *	GPUMIG_SEC_POSTCOPY: the blocks set are owed, delivered after the
 *	stop by the mover; one section covers at most 524288 blocks, further
 *	ones follow with a higher @first, in order, without overlap.
 * @token: the session's, as in GPUMIG_SEC_POSTCOPY
 * @first: first block the bitmap covers
 * @nr_blocks: blocks it covers, not zero
 */
struct gpumig_wire_owed {
	__u8 token[GPUMIG_TOKEN_LEN];
	__le64 first;
	__le64 nr_blocks;
} __attribute__((packed));

#define GPUMIG_OWED_MAX_BLOCKS		524288

/**
 * struct gpumig_wire_end - payload of GPUMIG_SEC_END (16 bytes)
 * @nr_sections: sections before this one
 * @stream_crc: crc32_le(~0) of every byte before this section
 * @total_bytes: bytes before this section
 */
struct gpumig_wire_end {
	__le32 nr_sections;
	__le32 stream_crc;
	__le64 total_bytes;
} __attribute__((packed));

#endif /* _UAPI_LINUX_GPUMIG_STREAM_H */
