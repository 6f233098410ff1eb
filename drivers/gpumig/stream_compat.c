// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig migration stream: the compatibility descriptor, its rule (may a
 * destination take a source's state?), its sysfs line and its wire
 * layout.  gpumigctl builds this file unchanged in userspace.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include <kunit/visibility.h>

#include "stream_priv.h"

/**
 * gpumig_compat_check() - may a destination accept a source's state?
 * @src: the source's descriptor, from the stream
 * @dst: the destination's own descriptor
 * @msg: buffer for a message naming the first mismatch
 * @len: size of @msg
 *
 * The rule is "what the source's guest may rely on is a subset of what the
 * destination offers": the same device family, type, memory size, page size,
 * VRAM block and a state layout the destination understands; at least as
 * many queues; every feature the source has.  A backend may add its own
 * rule on top (gpumig_backend_ops.compat_check).
 *
 * Return: 0 when compatible, -EOPNOTSUPP with @msg set otherwise.
 */
int gpumig_compat_check(const struct gpumig_compat *src,
			const struct gpumig_compat *dst, char *msg, size_t len)
{
	if (src->backend != dst->backend) {
		snprintf(msg, len, "device family mismatch: source %u, destination %u",
			 src->backend, dst->backend);
		return -EOPNOTSUPP;
	}
	if (strncmp(src->type_name, dst->type_name, GPUMIG_TYPE_NAME_LEN)) {
		snprintf(msg, len, "type mismatch: source %.32s, destination %.32s",
			 src->type_name, dst->type_name);
		return -EOPNOTSUPP;
	}
	if (src->vram_size != dst->vram_size) {
		snprintf(msg, len, "VRAM size mismatch: source %llu bytes, destination %llu bytes",
			 src->vram_size, dst->vram_size);
		return -EOPNOTSUPP;
	}
	if (src->nr_queues > dst->nr_queues) {
		snprintf(msg, len, "queue count: source has %u, destination only %u",
			 src->nr_queues, dst->nr_queues);
		return -EOPNOTSUPP;
	}
	if (src->features & ~dst->features) {
		snprintf(msg, len, "features 0x%llx of the source are missing on the destination",
			 src->features & ~dst->features);
		return -EOPNOTSUPP;
	}
	if (src->page_size != dst->page_size) {
		snprintf(msg, len, "MMU page size mismatch: source %u, destination %u",
			 src->page_size, dst->page_size);
		return -EOPNOTSUPP;
	}
	if (src->block_shift != dst->block_shift) {
		snprintf(msg, len, "VRAM block mismatch: source %lu KiB, destination %lu KiB",
			 BIT(src->block_shift) >> 10, BIT(dst->block_shift) >> 10);
		return -EOPNOTSUPP;
	}
	if (src->arch_version > dst->arch_version) {
		snprintf(msg, len, "state layout version %u is newer than the destination's %u",
			 src->arch_version, dst->arch_version);
		return -EOPNOTSUPP;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_compat_check);

/**
 * gpumig_compat_format() - print a descriptor as one "key=value" line
 * @c: descriptor
 * @buf: output
 * @len: size of @buf
 *
 * This is the form sysfs shows to schedulers: stream= is the version the
 * device writes, reads= the newest this engine reads as a destination
 * (0.1's line has no reads=: it reads 1.0 and 1.1), and block_size=
 * appears only for a block other than 64 KiB.
 *
 * Return: characters written, as scnprintf().
 */
int gpumig_compat_format(const struct gpumig_compat *c, char *buf, size_t len)
{
	int n;

	n = scnprintf(buf, len,
		      "stream=%u.%u reads=%u.%u backend=%u type=%.32s vram=%llu queues=%u features=0x%llx page_size=%u state_version=%u",
		      GPUMIG_STREAM_MAJOR, c->stream_minor, GPUMIG_STREAM_MAJOR,
		      GPUMIG_STREAM_MINOR, c->backend,
		      c->type_name, c->vram_size, c->nr_queues, c->features,
		      c->page_size, c->arch_version);
	if (c->block_shift != GPUMIG_BLOCK_SHIFT_DEFAULT)
		n += scnprintf(buf + n, len - n, " block_size=%lu", BIT(c->block_shift));
	return n + scnprintf(buf + n, len - n, "\n");
}
EXPORT_SYMBOL_GPL(gpumig_compat_format);

void gpumig_compat_to_wire(const struct gpumig_compat *c, struct gpumig_wire_compat *w)
{
	memset(w, 0, sizeof(*w));
	strscpy_pad(w->type_name, c->type_name, sizeof(w->type_name));
	w->vram_size = cpu_to_le64(c->vram_size);
	w->backend = cpu_to_le32(c->backend);
	w->nr_queues = cpu_to_le32(c->nr_queues);
	w->features = cpu_to_le64(c->features);
	w->page_size = cpu_to_le32(c->page_size);
	w->arch_version = cpu_to_le32(c->arch_version);
	/* Named from 1.2 on, so that a reader of 1.1 refuses at the header. */
	if (c->stream_minor >= 2)
		w->block_shift = cpu_to_le32(c->block_shift);
}

void gpumig_compat_from_wire(const struct gpumig_wire_compat *w, struct gpumig_compat *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->type_name, w->type_name, sizeof(c->type_name) - 1);
	c->vram_size = le64_to_cpu(w->vram_size);
	c->backend = le32_to_cpu(w->backend);
	c->nr_queues = le32_to_cpu(w->nr_queues);
	c->features = le64_to_cpu(w->features);
	c->page_size = le32_to_cpu(w->page_size);
	c->arch_version = le32_to_cpu(w->arch_version);
	c->block_shift = le32_to_cpu(w->block_shift) ?: GPUMIG_BLOCK_SHIFT_DEFAULT;
}

/**
 * gpumig_block_shift_valid() - can a stream carry VRAM in blocks of 2^@shift?
 * @shift: log2 of the block
 *
 * Return: true for GPUMIG_BLOCK_SHIFT_MIN to GPUMIG_BLOCK_SHIFT_MAX.
 */
bool gpumig_block_shift_valid(u32 shift)
{
	return shift >= GPUMIG_BLOCK_SHIFT_MIN && shift <= GPUMIG_BLOCK_SHIFT_MAX;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_block_shift_valid);
