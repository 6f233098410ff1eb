/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * gpumig post-copy of device memory: the interface of /dev/gpumig-postcopy,
 * through which a mover carries the VRAM blocks a migration still owes
 * from the source host's kernel to the destination host's kernel
 * (Documentation/gpumig/postcopy.rst).
 *
 * The device node is root's alone (mode 0600).  An open file attaches to
 * one session, as its source or its destination (GPUMIG_PC_ATTACH), by the
 * session token both streams' GPUMIG_SEC_POSTCOPY carried.
 *
 * Source: read() returns one block at a time, as a struct gpumig_pc_block
 * and its data: first the blocks the destination asked for
 * (GPUMIG_PC_WANT), then the rest, each owed block once per open file; a
 * read with nothing left to give waits (or fails with EAGAIN on a
 * non-blocking file) and returns 0 once every block was acknowledged
 * (GPUMIG_PC_ACK), which scrubs what the source held.
 *
 * Destination: write() takes exactly one struct gpumig_pc_block and its
 * data.  It returns the length written once the block is in VRAM and what
 * waited on it runs again: that is the acknowledgment.  It fails, writing
 * nothing, with EINVAL (bad magic, flags or length), EACCES (another
 * session's token), ERANGE (outside VRAM), ENOENT (a block never owed),
 * EBADMSG (its CRC does not match), EALREADY (delivered before: a
 * restarted mover resends; not a failure; also once every block arrived)
 * or ENODEV (the post-copy ended on this host without it: abandoned,
 * timed out, the device closed; said before anything about the block).
 * read() returns struct gpumig_pc_event records: the blocks the device
 * waits on, in the order it first waited; 0 once nothing is owed any
 * more.  poll() says when.
 *
 * Threads may share an open file: its reads, writes and attach run one
 * at a time.  GPUMIG_PC_ACK and GPUMIG_PC_WANT fail with EALREADY once
 * every block was delivered and ECONNABORTED once the session ended
 * otherwise, as a source read does.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _UAPI_LINUX_GPUMIG_POSTCOPY_H
#define _UAPI_LINUX_GPUMIG_POSTCOPY_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GPUMIG_PC_DEVICE		"gpumig-postcopy"
#define GPUMIG_PC_TOKEN_LEN		16
#define GPUMIG_PC_MAGIC			0x43504d47	/* "GMPC" on the wire */

#define GPUMIG_PC_ROLE_SOURCE		1
#define GPUMIG_PC_ROLE_DESTINATION	2

/**
 * struct gpumig_pc_attach - GPUMIG_PC_ATTACH
 * @argsz: sizeof(struct gpumig_pc_attach)
 * @role: GPUMIG_PC_ROLE_*
 * @token: the session token (gpumig_pc_status of either side shows it)
 * @nr_blocks: out: blocks of the device's VRAM
 * @block_size: out: bytes of one block
 * @flags: must be zero
 * @owed: out: blocks still owed now
 * @total: out: blocks owed at the stop
 */
struct gpumig_pc_attach {
	__u32 argsz;
	__u32 role;
	__u8 token[GPUMIG_PC_TOKEN_LEN];
	__u64 nr_blocks;
	__u32 block_size;
	__u32 flags;
	__u64 owed;
	__u64 total;
};

/**
 * struct gpumig_pc_block - one owed block, as a source reads it and a
 *	destination takes it (40 bytes, then @len bytes of data)
 * @magic: GPUMIG_PC_MAGIC
 * @flags: zero
 * @token: the session's
 * @block: block number
 * @len: bytes of data: the block size
 * @crc: crc32_le(~0) of @block (its 8 bytes, as here) and then the data,
 *	as the source held it: the zlib CRC-32 without its final inversion.
 *	A record whose block number changed on the way fails it too.
 */
struct gpumig_pc_block {
	__le32 magic;
	__le32 flags;
	__u8 token[GPUMIG_PC_TOKEN_LEN];
	__le64 block;
	__le32 len;
	__le32 crc;
};

#define GPUMIG_PC_EVENT_DEMAND		1	/* the device waits on @block */

/**
 * struct gpumig_pc_event - what a destination's read() returns
 * @type: GPUMIG_PC_EVENT_*
 * @flags: zero
 * @block: the block
 */
struct gpumig_pc_event {
	__u32 type;
	__u32 flags;
	__u64 block;
};

/**
 * struct gpumig_pc_status - GPUMIG_PC_STATUS of an attached file
 * @argsz: sizeof(struct gpumig_pc_status)
 * @state: GPUMIG_PC_STATE_*
 * @owed: blocks still owed (source: not acknowledged; destination: not
 *	arrived)
 * @total: blocks owed at the stop
 * @lost: destination: blocks marked lost
 * @waits: destination: times the device started to wait on a block
 */
struct gpumig_pc_status {
	__u32 argsz;
	__u32 state;
	__u64 owed;
	__u64 total;
	__u64 lost;
	__u64 waits;
};

#define GPUMIG_PC_STATE_ACTIVE		1	/* blocks are owed */
#define GPUMIG_PC_STATE_DONE		2	/* every block was delivered */
#define GPUMIG_PC_STATE_ABANDONED	3	/* given up: the rest is lost */

#define GPUMIG_PC_ATTACH	_IOWR('G', 0x40, struct gpumig_pc_attach)
/* Source: the destination took this block (a __u64). */
#define GPUMIG_PC_ACK		_IOW('G', 0x41, __u64)
/* Source: give this block (a __u64) before the others. */
#define GPUMIG_PC_WANT		_IOW('G', 0x42, __u64)
/*
 * Either side: give up.  The source scrubs what it held; the destination
 * marks every block still owed lost (the guest sees its device's error on
 * an access to one, never other data).
 */
#define GPUMIG_PC_ABANDON	_IO('G', 0x43)
#define GPUMIG_PC_STATUS	_IOR('G', 0x44, struct gpumig_pc_status)

#endif /* _UAPI_LINUX_GPUMIG_POSTCOPY_H */
