/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's API for simgpu's device model (core.c,
 * regs.c, host.c, mmu.c, absent.c, arch.c from drivers/gpu/simgpu) to build unchanged inside QEMU,
 * the way the stream codec builds into the fuzzer.
 *
 * The model's lock becomes nothing: QEMU runs every access to the device,
 * MMIO and the processor's passes alike, under its big lock.  Time is
 * QEMU's virtual clock, from the device (simgpu_qemu_now_ns()).
 * Little-endian hosts only.
 */
#ifndef SIMGPU_SHIM_H
#define SIMGPU_SHIM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the model shim assumes a little-endian host"
#endif

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;
typedef uint16_t __le16;
typedef uint32_t __le32;
typedef uint64_t __le64;
typedef s64 ktime_t;

#define U32_MAX			UINT32_MAX
#define NSEC_PER_SEC		1000000000LL
#define GFP_KERNEL		0

#define __packed		__attribute__((packed))
#define static_assert(e, ...)	_Static_assert(e, #e)
#define EXPORT_SYMBOL_IF_KUNIT(sym)
#define VISIBLE_IF_KUNIT	static

#define cpu_to_le32(x)		((u32)(x))
#define cpu_to_le64(x)		((u64)(x))
#define le32_to_cpu(x)		((u32)(x))
#define le64_to_cpu(x)		((u64)(x))

#define READ_ONCE(x)		(*(const volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile typeof(x) *)&(x) = (v))

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define lower_32_bits(n)	((u32)((n) & 0xffffffff))
#define upper_32_bits(n)	((u32)((u64)(n) >> 32))
#define GENMASK_ULL(h, l)	((~0ULL << (l)) & (~0ULL >> (63 - (h))))
#define min_t(t, a, b)		({ t a_ = (a); t b_ = (b); a_ < b_ ? a_ : b_; })
#define div_u64(a, b)		((u64)(a) / (u32)(b))

/* The big lock serialises everything: the model's mutex is a token. */
struct mutex {
	int unused;
};

static inline void mutex_init(struct mutex *m) { (void)m; }
static inline void mutex_destroy(struct mutex *m) { (void)m; }
static inline void mutex_lock(struct mutex *m) { (void)m; }
static inline void mutex_unlock(struct mutex *m) { (void)m; }
#define lockdep_assert_held(l)	((void)(l))

static inline void *kmalloc(size_t n, int gfp) { (void)gfp; return malloc(n); }
static inline void *kvmalloc(size_t n, int gfp) { (void)gfp; return malloc(n); }
static inline void *kcalloc(size_t n, size_t sz, int gfp) { (void)gfp; return calloc(n, sz); }
static inline void kfree(const void *p) { free((void *)p); }
static inline void kvfree(const void *p) { free((void *)p); }
static inline void *kvcalloc(size_t n, size_t size, int gfp)
{
	(void)gfp;
	return calloc(n ? n : 1, size);
}

/* QEMU_CLOCK_VIRTUAL, in nanoseconds; the device provides it. */
s64 simgpu_qemu_now_ns(void);

static inline ktime_t ktime_get(void) { return simgpu_qemu_now_ns(); }
static inline ktime_t ktime_add_ms(ktime_t t, u64 ms) { return t + (s64)ms * 1000000; }
static inline ktime_t ktime_add_us(ktime_t t, u64 us) { return t + (s64)us * 1000; }
static inline ktime_t ktime_sub(ktime_t a, ktime_t b) { return a - b; }
static inline bool ktime_before(ktime_t a, ktime_t b) { return a < b; }
static inline s64 ktime_to_ns(ktime_t t) { return t; }

/* Bitmaps, as absent.c uses them (not atomic: the big lock serialises). */
#define BITS_PER_LONG		(8 * sizeof(long))
#define BITS_TO_LONGS(n)	(((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#ifndef DIV_ROUND_UP
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#endif

static inline unsigned long *bitmap_zalloc(u64 nbits, int gfp)
{
	(void)gfp;
	return calloc(BITS_TO_LONGS(nbits) ? BITS_TO_LONGS(nbits) : 1, sizeof(long));
}

static inline void bitmap_free(const unsigned long *map) { free((void *)map); }

static inline bool test_bit(u64 nr, const unsigned long *map)
{
	return (map[nr / BITS_PER_LONG] >> (nr % BITS_PER_LONG)) & 1;
}

static inline void __set_bit(u64 nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG);
}

static inline void __clear_bit(u64 nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] &= ~(1UL << (nr % BITS_PER_LONG));
}

static inline void bitmap_copy(unsigned long *dst, const unsigned long *src, u64 nbits)
{
	memcpy(dst, src, BITS_TO_LONGS(nbits) * sizeof(long));
	if (nbits % BITS_PER_LONG)
		dst[nbits / BITS_PER_LONG] &= (1UL << (nbits % BITS_PER_LONG)) - 1;
}

static inline void bitmap_zero(unsigned long *map, u64 nbits)
{
	memset(map, 0, BITS_TO_LONGS(nbits) * sizeof(long));
}

static inline void bitmap_set(unsigned long *map, u64 start, u64 n)
{
	while (n--)
		__set_bit(start++, map);
}

static inline u64 bitmap_weight(const unsigned long *map, u64 nbits)
{
	u64 i, w = 0;

	for (i = 0; i < nbits; i++)
		w += test_bit(i, map);
	return w;
}

#endif /* SIMGPU_SHIM_H */
