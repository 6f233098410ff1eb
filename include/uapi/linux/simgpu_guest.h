/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * simgpu-guest: the user interface of the guest driver for simgpu (the
 * mdev and the simgpu-pci VF speak the same guest ABI, linux/simgpu.h).
 * A character device per GPU, /dev/simgpuN, with ioctls fit for a test
 * double: buffers in guest memory or VRAM, commands on the GPU's queues,
 * fences to wait on, and every error the device reports, handed to user
 * space rather than hidden.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _UAPI_LINUX_SIMGPU_GUEST_H
#define _UAPI_LINUX_SIMGPU_GUEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SGG_ABI_VERSION		1

/* SGG_IOCTL_INFO: the GPU and what happened to it so far. */
struct sgg_info {
	__u32 abi;		/* SGG_ABI_VERSION */
	__u32 device_abi;	/* the device's SIMGPU_REG_VERSION */
	__u32 queues;
	__u32 caps;		/* SIMGPU_CAP_* */
	__u64 vram_size;	/* bytes */
	__u64 errors;		/* errors the device reported since probe */
	__u64 resets;		/* device resets (function-level, or the device lost) */
};

/* Where a buffer lives. */
#define SGG_DOMAIN_SYS		0	/* guest memory, mmap()able */
#define SGG_DOMAIN_VRAM		1

/* SGG_IOCTL_BO_CREATE: a buffer, mapped in the GPU's address space. */
struct sgg_bo_create {
	__u64 size;		/* in: bytes, rounded up to 4 KiB */
	__u32 domain;		/* in: SGG_DOMAIN_* */
	__u32 handle;		/* out */
	__u64 gpu_va;		/* out: its GPU virtual address */
	__u64 mmap_offset;	/* out: SGG_DOMAIN_SYS, for mmap() of the fd */
};

/* SGG_IOCTL_BO_DESTROY: unmapped (acknowledged invalidation) and freed. */
struct sgg_bo_destroy {
	__u32 handle;
	__u32 pad;
};

/*
 * SGG_IOCTL_SUBMIT: one command (SIMGPU_OP_FILL, COPY, KERNEL or NOP with
 * its args, GPU virtual addresses) on a queue, followed by a fence; out:
 * the fence's value, which SGG_IOCTL_WAIT waits for.
 */
struct sgg_submit {
	__u32 queue;
	__u32 op;
	__u64 args[4];
	__u64 fence;		/* out */
};

/*
 * SGG_IOCTL_WAIT: until the queue's fence reaches @fence: 0; -ETIMEDOUT;
 * -EIO when the queue stopped on an error before it (@error, @addr say
 * which: a SIMGPU_ERR_* or SGG_ERR_RESET), after which the queue was reset
 * and takes new work.
 */
struct sgg_wait {
	__u32 queue;
	__u32 timeout_ms;
	__u64 fence;
	__u32 error;		/* out */
	__u32 pad;
	__u64 addr;		/* out: the faulting GPU virtual address */
};

/* A device reset (FLR, or the device lost its state): VRAM is gone. */
#define SGG_ERR_RESET		0x100

/*
 * SGG_IOCTL_ERRORS: the errors the device reported, oldest first, read
 * and cleared (at most SGG_MAX_ERRORS kept; @lost counts the others).
 */
#define SGG_MAX_ERRORS		16
struct sgg_error {
	__u32 code;		/* SIMGPU_ERR_* or SGG_ERR_RESET */
	__u32 queue;		/* SIMGPU_QUEUE_* for the device or its writer */
	__u64 addr;
};

struct sgg_errors {
	__u32 count;		/* out: entries filled */
	__u32 lost;		/* out */
	struct sgg_error e[SGG_MAX_ERRORS];
};

/*
 * SGG_IOCTL_DIRTY: the device's background writer over a VRAM buffer's
 * first @pages pages (0 stops it): the dirty-rate workload.
 */
struct sgg_dirty {
	__u32 handle;
	__u32 pages;
};

#define SGG_IOCTL_BASE		'G'
#define SGG_IOCTL_INFO		_IOR(SGG_IOCTL_BASE, 0, struct sgg_info)
#define SGG_IOCTL_BO_CREATE	_IOWR(SGG_IOCTL_BASE, 1, struct sgg_bo_create)
#define SGG_IOCTL_BO_DESTROY	_IOW(SGG_IOCTL_BASE, 2, struct sgg_bo_destroy)
#define SGG_IOCTL_SUBMIT	_IOWR(SGG_IOCTL_BASE, 3, struct sgg_submit)
#define SGG_IOCTL_WAIT		_IOWR(SGG_IOCTL_BASE, 4, struct sgg_wait)
#define SGG_IOCTL_ERRORS	_IOR(SGG_IOCTL_BASE, 5, struct sgg_errors)
#define SGG_IOCTL_DIRTY		_IOW(SGG_IOCTL_BASE, 6, struct sgg_dirty)

#endif /* _UAPI_LINUX_SIMGPU_GUEST_H */
