// SPDX-License-Identifier: GPL-2.0
/*
 * gpumigctl's compatibility check: the kernel's own rule,
 * gpumig_compat_check() from drivers/gpumig/stream_compat.c built unchanged with
 * the userspace shim (tools/fuzz/include), applied to the descriptors
 * sysfs prints (migration/compat, gpumig_compat_format()).
 */
#include <kshim.h>
#include <gpumig/stream.h>

#include "compat.h"

/* The number after "@key=" in @line, or false when it is not there. */
static bool field(const char *line, const char *key, int base, unsigned long long *v)
{
	size_t n = strlen(key);
	const char *p;
	char *end;

	for (p = line; (p = strstr(p, key)); p += n) {
		if ((p == line || p[-1] == ' ') && p[n] == '=') {
			errno = 0;
			*v = strtoull(p + n + 1, &end, base);
			return !errno && end != p + n + 1;
		}
	}
	return false;
}

/*
 * "@key=MAJOR.MINOR" in @line: the minor, or @absent when the key is not
 * there; -1 when it is there but not of that form.
 */
static long minor_of(const char *line, const char *key, long absent)
{
	size_t n = strlen(key);
	const char *p, *dot;
	char *end;
	long v;

	for (p = line; (p = strstr(p, key)); p += n) {
		if ((p != line && p[-1] != ' ') || p[n] != '=')
			continue;
		dot = strchr(p + n + 1, '.');
		if (!dot || dot - p > 16)
			return -1;
		errno = 0;
		v = strtol(dot + 1, &end, 10);
		return errno || end == dot + 1 || v < 0 || v > 0xffff ? -1 : v;
	}
	return absent;
}

/* A descriptor line back into the struct: 0, or -1 if a field is missing. */
static int parse(const char *line, struct gpumig_compat *c, unsigned int *major)
{
	unsigned long long v[8];
	const char *t = strstr(line, "type=");
	size_t n;

	memset(c, 0, sizeof(*c));
	if (!field(line, "stream", 10, &v[0]) || !field(line, "backend", 10, &v[1]) ||
	    !field(line, "vram", 10, &v[2]) || !field(line, "queues", 10, &v[3]) ||
	    !field(line, "features", 16, &v[4]) || !field(line, "page_size", 10, &v[5]) ||
	    !field(line, "state_version", 10, &v[6]) || !t || (t != line && t[-1] != ' '))
		return -1;
	t += strlen("type=");
	n = strcspn(t, "\n ");
	if (!n || n >= sizeof(c->type_name))
		return -1;
	memcpy(c->type_name, t, n);
	*major = v[0];
	/* Only a device whose VRAM block is not 64 KiB names it. */
	c->block_shift = GPUMIG_BLOCK_SHIFT_DEFAULT;
	if (field(line, "block_size", 10, &v[7])) {
		if (!v[7] || v[7] & (v[7] - 1))
			return -1;
		c->block_shift = __builtin_ctzll(v[7]);
	}
	c->backend = v[1];
	c->vram_size = v[2];
	c->nr_queues = v[3];
	c->features = v[4];
	c->page_size = v[5];
	c->arch_version = v[6];
	return 0;
}

int gpumigctl_compat_check(const char *src, const char *dst, char *msg, size_t len,
			   char *cap, size_t caplen)
{
	struct gpumig_compat s, d;
	unsigned int smaj = 0, dmaj = 0;
	long swrites, sreads, dreads;
	int ret;

	if (parse(src, &s, &smaj)) {
		snprintf(msg, len, "the source's descriptor cannot be read: %s", src);
		return -EINVAL;
	}
	if (parse(dst, &d, &dmaj)) {
		snprintf(msg, len, "the destination's descriptor cannot be read: %s", dst);
		return -EINVAL;
	}
	if (smaj != dmaj) {
		snprintf(msg, len, "stream version %u.x is not read by the destination (%u.x)",
			 smaj, dmaj);
		return -EPROTONOSUPPORT;
	}
	ret = gpumig_compat_check(&s, &d, msg, len);
	if (ret)
		return ret;
	/*
	 * The minors: what the source writes now, and what each side reads
	 * (no reads=: a release before 0.2, which reads 1.0 and 1.1).
	 */
	swrites = minor_of(src, "stream", 0);
	sreads = minor_of(src, "reads", 1);
	dreads = minor_of(dst, "reads", 1);
	if (swrites < 0 || sreads < 0 || dreads < 0) {
		snprintf(msg, len, "a stream version in the descriptors cannot be read");
		return -EINVAL;
	}
	if (caplen)
		cap[0] = 0;
	if (swrites > dreads) {
		snprintf(msg, len,
			 "the source writes stream %u.%ld, the destination reads up to %u.%ld",
			 smaj, swrites, dmaj, dreads);
		return -EPROTONOSUPPORT;
	}
	/* An older destination: cap what the source may go on to write. */
	if (dreads < sreads)
		snprintf(cap, caplen, "%u.%ld", smaj, dreads);
	return 0;
}
