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
#define GPUMIG_STREAM_MINOR		1

/* No destination buffers more than this of one section. */
#define GPUMIG_SEC_MAX_PAYLOAD		(16U << 20)

/* A section type with this bit set may be skipped by a reader that does not know it. */
#define GPUMIG_SEC_OPTIONAL		0x8000

#define GPUMIG_SEC_HEADER		0x0001	/* first: version, descriptor */
#define GPUMIG_SEC_VRAM			0x0002	/* one chunk of device memory */
#define GPUMIG_SEC_ARCH			0x0003	/* architectural state */
#define GPUMIG_SEC_WORK			0x0004	/* in-flight work (unused) */
#define GPUMIG_SEC_ZERO			0x0005	/* a range of device memory reads zero (1.1) */
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
} __attribute__((packed));

#define GPUMIG_BACKEND_SIMGPU		1	/* simgpu mdev */
#define GPUMIG_BACKEND_PCI		2	/* simgpu-pci VF */
#define GPUMIG_BACKEND_FAKE		0xf0	/* KUnit */

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
/* gpumig's engine sends VRAM in chunks of this size (a reader may accept others). */
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
