/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig migration stream: what the codec's files share and no one else
 * uses (the API is include/gpumig/stream.h).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_STREAM_PRIV_H
#define _GPUMIG_STREAM_PRIV_H

#include <linux/crc32.h>

#include <gpumig/stream.h>

static inline u32 gpumig_crc(u32 crc, const void *p, size_t len)
{
	return crc32_le(crc, p, len);
}

/* stream_compat.c: the descriptor in and out of its wire layout */
void gpumig_compat_to_wire(const struct gpumig_compat *c, struct gpumig_wire_compat *w);
void gpumig_compat_from_wire(const struct gpumig_wire_compat *w, struct gpumig_compat *c);

#endif /* _GPUMIG_STREAM_PRIV_H */
