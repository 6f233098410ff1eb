// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration stream: the CRC algebra.  Every section's payload CRC
 * is computed once, over its bytes; the stream's running CRC is advanced
 * from it (gpumig_crc_extend()) instead of by a second pass.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/export.h>
#include <linux/kernel.h>

#include <kunit/visibility.h>

#include "stream_priv.h"

/* crc32_le()'s polynomial, bit-reflected. */
#define GPUMIG_CRC32_POLY	0xedb88320

/* Product of two polynomials modulo the CRC-32 polynomial, bit-reflected. */
static u32 gpumig_gf2_mul(u32 x, u32 y)
{
	u32 product = x & 1 ? y : 0;
	int i;

	for (i = 0; i < 31; i++) {
		product = (product >> 1) ^ (product & 1 ? GPUMIG_CRC32_POLY : 0);
		x >>= 1;
		product ^= x & 1 ? y : 0;
	}
	return product;
}

/*
 * crc32_le(@crc, @len zero bytes): @crc times x^(8 @len) modulo the
 * polynomial, in O(log @len) steps.  (Kernels before 6.15 export this as
 * crc32_le_shift(); later ones do not, so it lives here.)
 */
static u32 gpumig_crc_shift(u32 crc, size_t len)
{
	u32 power = GPUMIG_CRC32_POLY;	/* x^32, then x^64, x^128, ... */
	int i;

	for (i = 0; i < 8 * (int)(len & 3); i++)
		crc = (crc >> 1) ^ (crc & 1 ? GPUMIG_CRC32_POLY : 0);
	for (len >>= 2; len; len >>= 1) {
		if (len & 1)
			crc = gpumig_gf2_mul(crc, power);
		power = gpumig_gf2_mul(power, power);
	}
	return crc;
}

/**
 * gpumig_crc_extend() - crc32_le(@crc, P) from P's own CRC
 * @crc: the running CRC before P
 * @pcrc: crc32_le(~0, P), P's payload CRC as its section header carries it
 * @len: length of P
 *
 * The CRC is linear: crc32_le(a, P) = crc32_le(~0, P) ^ shift(a ^ ~0, len).
 * So the stream's running CRC advances over a payload without a second
 * pass over its bytes.
 *
 * Return: the running CRC after P.
 */
u32 gpumig_crc_extend(u32 crc, u32 pcrc, size_t len)
{
	return pcrc ^ gpumig_crc_shift(crc ^ ~0U, len);
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_crc_extend);
