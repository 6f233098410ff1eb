/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _GPUMIGCTL_COMPAT_H
#define _GPUMIGCTL_COMPAT_H

#include <stddef.h>

/*
 * May a destination with descriptor @dst accept a stream from a source
 * with descriptor @src (both as migration/compat prints them)?  0, or a
 * negative errno with @msg naming the first mismatch, as the kernel would,
 * or the stream version the source writes when the destination reads
 * only older ones.  On 0, @cap holds what to cap the source's
 * migration/stream_max at ("1.1": a destination of an older release,
 * which would refuse what the source may write later, post-copy), or "".
 */
int gpumigctl_compat_check(const char *src, const char *dst, char *msg, size_t len,
			   char *cap, size_t caplen);

#endif
