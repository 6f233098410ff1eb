/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's API for drivers/gpumig/stream_*.c to build
 * unchanged in userspace, for the fuzzer and the userspace tools.
 * Little-endian hosts only.
 */
#ifndef _GPUMIG_KSHIM_H
#define _GPUMIG_KSHIM_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the userspace shim assumes a little-endian host"
#endif

typedef uint8_t u8;
typedef uint8_t __u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef unsigned long long u64;
typedef uint16_t __le16;
typedef uint32_t __le32;
typedef unsigned long long __le64;

#define U32_MAX		UINT32_MAX
#define U64_MAX		UINT64_MAX
#define GFP_KERNEL	0
#define GFP_KERNEL_ACCOUNT	0

#define __packed		__attribute__((packed))
#define __printf(a, b)		__attribute__((format(printf, a, b)))
#define EXPORT_SYMBOL_GPL(sym)
#define static_assert(e, ...)	_Static_assert(e, #e)

#define cpu_to_le16(x)	((u16)(x))
#define cpu_to_le32(x)	((u32)(x))
#define cpu_to_le64(x)	((u64)(x))
#define le16_to_cpu(x)	((u16)(x))
#define le32_to_cpu(x)	((u32)(x))
#define le64_to_cpu(x)	((u64)(x))

#define min(a, b)	({ __auto_type a_ = (a); __auto_type b_ = (b); a_ < b_ ? a_ : b_; })
#define max(a, b)	({ __auto_type a_ = (a); __auto_type b_ = (b); a_ > b_ ? a_ : b_; })
#define min_t(t, a, b)	min((t)(a), (t)(b))
#define max_t(t, a, b)	max((t)(a), (t)(b))
#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define BIT(n)		(1UL << (n))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))

static inline void *memchr_inv(const void *p, int c, size_t n)
{
	const unsigned char *s = p;

	for (; n; n--, s++)
		if (*s != (unsigned char)c)
			return (void *)s;
	return NULL;
}

static inline void *kvmalloc(size_t n, int gfp)
{
	(void)gfp;
	return malloc(n);
}

static inline void kvfree(const void *p)
{
	free((void *)p);
}

/* Copy with NUL termination and zero padding; -E2BIG when truncated. */
static inline ssize_t strscpy_pad(char *dst, const char *src, size_t size)
{
	size_t len;

	memset(dst, 0, size);
	for (len = 0; len + 1 < size && src[len]; len++)
		dst[len] = src[len];
	return src[len] ? -E2BIG : (ssize_t)len;
}

static inline int scnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!size)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0)
		return 0;
	return (size_t)n >= size ? (int)size - 1 : n;
}

/* The kernel's crc32_le(): reflected 0xedb88320, no pre/post inversion. */
static inline u32 crc32_le(u32 crc, const void *p, size_t len)
{
	static u32 table[256];
	const u8 *b = p;
	size_t i;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			u32 c = i;
			int k;

			for (k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0xedb88320 : c >> 1;
			table[i] = c;
		}
	}
	for (i = 0; i < len; i++)
		crc = table[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
	return crc;
}

#endif /* _GPUMIG_KSHIM_H */
