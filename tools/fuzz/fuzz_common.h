/* SPDX-License-Identifier: GPL-2.0 */
/* The destination the stream fuzzer and its seed corpus agree on. */
#ifndef _GPUMIG_FUZZ_COMMON_H
#define _GPUMIG_FUZZ_COMMON_H

#include <gpumig/stream.h>

#define FZ_VRAM_SIZE	(1024 * 1024)
#define FZ_CHUNK	(64 * 1024)
#define FZ_ARCH		4096
#define FZ_VENDOR	4096

static inline void fz_compat(struct gpumig_compat *c)
{
	memset(c, 0, sizeof(*c));
	strscpy_pad(c->type_name, "simgpu-fuzz", sizeof(c->type_name));
	c->vram_size = FZ_VRAM_SIZE;
	c->backend = GPUMIG_BACKEND_SIMGPU;
	c->nr_queues = 4;
	c->features = 0x3;
	c->page_size = 4096;
	c->arch_version = 1;
	c->block_shift = GPUMIG_BLOCK_SHIFT_DEFAULT;
}

static const struct gpumig_parser_limits fz_limits = {
	.vram_size = FZ_VRAM_SIZE,
	.max_chunk = FZ_CHUNK,
	.max_arch = FZ_ARCH,
	.max_vendor = FZ_VENDOR,
	.max_skip = 65536,
};

#endif
