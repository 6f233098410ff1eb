// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: golden streams, the upgrade story's test.  A release
 * keeps streams its engine produced (tools/golden/); every later release
 * must load them.  golden_save writes one; golden_load restores one into
 * the device, saves the device again and checks that its VRAM is the
 * golden stream's, then offers edited copies: a newer stream minor is
 * accepted, a newer major or a newer architectural-state version is
 * refused with a message; golden_restore only loads and checks (a stream
 * of another release, under that release's rule).  GOLDEN_STREAM names
 * the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/gpumig_stream.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

#define GOLDEN_VRAM (256 * 1024)	/* written with a known pattern */

static const char *golden_path(void)
{
	const char *p = getenv("GOLDEN_STREAM");

	return p && *p ? p : NULL;
}

/* The kernel's crc32_le(): reflected 0xedb88320, no final inversion. */
static uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return crc;
}

/*
 * Walk the sections of @b: call @fn (if any) with each header and
 * payload.  Returns the number of sections, or -1 when the framing is
 * broken.
 */
static int walk(const struct blob *b,
		void (*fn)(struct gpumig_sec_hdr *h, uint8_t *payload, void *arg), void *arg)
{
	size_t off = 0;
	int n = 0;

	while (off < b->len) {
		struct gpumig_sec_hdr *h = (void *)(b->p + off);

		if (b->len - off < sizeof(*h) || b->len - off - sizeof(*h) < h->len)
			return -1;
		if (fn)
			fn(h, b->p + off + sizeof(*h), arg);
		off += sizeof(*h) + h->len;
		n++;
	}
	return n;
}

/* Recompute every CRC of @b after an edit (little-endian host assumed). */
static void restamp(struct blob *b)
{
	size_t off = 0;

	while (off + sizeof(struct gpumig_sec_hdr) <= b->len) {
		struct gpumig_sec_hdr *h = (void *)(b->p + off);
		uint8_t *pl = b->p + off + sizeof(*h);

		if (h->type == GPUMIG_SEC_END && h->len >= sizeof(struct gpumig_wire_end)) {
			struct gpumig_wire_end *e = (void *)pl;

			e->stream_crc = crc32_le(~0U, b->p, off);
		}
		h->payload_crc = crc32_le(~0U, pl, h->len);
		h->hdr_crc = crc32_le(~0U, (uint8_t *)h, offsetof(struct gpumig_sec_hdr, hdr_crc));
		off += sizeof(*h) + h->len;
	}
}

struct image {
	uint8_t *vram;
	size_t size;
	int chunks, arch;
	char type[GPUMIG_TYPE_NAME_LEN + 1];
	char producer[GPUMIG_NOTE_MAX + 1];	/* the producer note's value, or "" */
};

static void to_image(struct gpumig_sec_hdr *h, uint8_t *pl, void *arg)
{
	struct image *im = arg;

	if (h->type == GPUMIG_SEC_HEADER) {
		struct gpumig_wire_header *wh = (void *)pl;

		memcpy(im->type, wh->compat.type_name, GPUMIG_TYPE_NAME_LEN);
	} else if (h->type == GPUMIG_SEC_VRAM) {
		struct gpumig_wire_vram *v = (void *)pl;

		if (v->offset >= im->size || im->size - v->offset < v->len)
			return;
		if (v->flags & GPUMIG_VRAM_ZERO)
			memset(im->vram + v->offset, 0, v->len);
		else
			memcpy(im->vram + v->offset, pl + sizeof(*v), v->len);
		im->chunks++;
	} else if (h->type == GPUMIG_SEC_ZERO) {
		struct gpumig_wire_zero *z = (void *)pl;

		if (z->offset < im->size)
			memset(im->vram + z->offset, 0,
			       z->len < im->size - z->offset ? z->len : im->size - z->offset);
		im->chunks++;
	} else if (h->type == GPUMIG_SEC_ARCH) {
		im->arch++;
	} else if (h->type == GPUMIG_SEC_NOTE && h->len <= GPUMIG_NOTE_MAX &&
		   h->len > strlen(GPUMIG_NOTE_PRODUCER) &&
		   !memcmp(pl, GPUMIG_NOTE_PRODUCER, strlen(GPUMIG_NOTE_PRODUCER))) {
		size_t k = strlen(GPUMIG_NOTE_PRODUCER);

		memcpy(im->producer, pl + k, h->len - k);
		im->producer[h->len - k] = '\0';
	}
}

/* The VRAM @b leaves behind (first @size bytes), and its section counts. */
static int image_of(const struct blob *b, struct image *im, size_t size)
{
	memset(im, 0, sizeof(*im));
	im->size = size;
	im->vram = calloc(1, size);
	if (!im->vram || walk(b, to_image, im) < 0) {
		free(im->vram);
		return -1;
	}
	return 0;
}

/*
 * Restore @len bytes into @g: 0 when it runs, else the first error (the
 * device then stays where the refusal left it, its last_error set, until
 * the caller resets it).
 */
static int restore(struct gpu *g, const uint8_t *p, size_t len, int *werr)
{
	int fd = -1, ret;

	*werr = 0;
	ret = mig_set(g, VFIO_DEVICE_STATE_STOP, NULL);
	if (!ret)
		ret = mig_set(g, VFIO_DEVICE_STATE_RESUMING, &fd);
	if (ret)
		return ret;
	*werr = mig_write(fd, p, len, 1 << 20);
	data_fd_close(fd);
	ret = mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL);
	return *werr ? *werr : ret;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 9) * 7 + 1);
}

/* The end of the furthest VRAM data section past GOLDEN_VRAM, in *arg. */
static void beyond_pattern(struct gpumig_sec_hdr *h, uint8_t *pl, void *arg)
{
	struct gpumig_wire_vram *v = (void *)pl;
	size_t *stray = arg;

	if (h->type == GPUMIG_SEC_VRAM && !(v->flags & GPUMIG_VRAM_ZERO) &&
	    v->offset + v->len > GOLDEN_VRAM && v->offset + v->len > *stray)
		*stray = v->offset + v->len;
}

int t_golden_save(struct gpu *g)
{
	const char *path = golden_path();
	struct blob b = { 0 };
	size_t stray = 0;
	uint8_t *src;
	size_t i;
	FILE *f;

	CHECK(path, "GOLDEN_STREAM is not set");
	gpu_setup(g, 16);
	src = sysbuf(g, VA_SYS, GOLDEN_VRAM, NULL);
	for (i = 0; i < GOLDEN_VRAM; i++)
		src[i] = pattern(i);
	gpu_map_range(g, VA_VRAM, 0, GOLDEN_VRAM, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_VRAM, VA_SYS, GOLDEN_VRAM, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "copy into VRAM did not finish");
	CHECK(mig_capture(g, &b) == 0 && b.len > GOLDEN_VRAM, "capture");
	/* The device started clean: no data beyond the pattern (an earlier tenant's). */
	CHECK(walk(&b, beyond_pattern, &stray) > 0 && !stray,
	      "the stream holds data beyond the pattern, up to 0x%zx: not a clean device", stray);
	f = fopen(path, "w");
	CHECK(f, "cannot write %s", path);
	if (fwrite(b.p, 1, b.len, f) != b.len) {
		fclose(f);
		free(b.p);
		return fail("short write to %s", path);
	}
	fclose(f);
	printf("    # golden stream: %zu bytes in %s\n", b.len, path);
	free(b.p);
	return 0;
}

/* An edited copy of @gold: @edit changes the header section's payload. */
static int offer_edited(struct gpu *g, const struct blob *gold,
			void (*edit)(struct gpumig_wire_header *wh), int *werr)
{
	struct blob e = { .len = gold->len, .cap = gold->len };
	struct gpumig_sec_hdr *h;
	int ret;

	e.p = malloc(e.len);
	if (!e.p)
		return -ENOMEM;
	memcpy(e.p, gold->p, e.len);
	h = (void *)e.p;
	edit((void *)(e.p + sizeof(*h)));
	restamp(&e);
	ret = restore(g, e.p, e.len, werr);
	free(e.p);
	return ret;
}

static void newer_minor(struct gpumig_wire_header *wh) { wh->minor++; }
static void unread_minor(struct gpumig_wire_header *wh) { wh->minor = GPUMIG_STREAM_MINOR + 1; }
static void newer_major(struct gpumig_wire_header *wh) { wh->major++; }
static void newer_state(struct gpumig_wire_header *wh) { wh->compat.arch_version++; }

/* A refused stream said why; then the device is reset for the next. */
static int refused_with(struct gpu *g, const char *what, const char *msg)
{
	char why[512] = "";

	read_attr(g->name, "migration/last_error", why, sizeof(why));
	gpu_reset(g);
	CHECK(strstr(why, msg), "%s: refused, but last_error is \"%s\", not \"%s\"",
	      what, why, msg);
	printf("    # %s: refused: %s", what, why);
	return 0;
}

static int golden_load(struct gpu *g, bool edited);

int t_golden_load(struct gpu *g)
{
	return golden_load(g, true);
}

/*
 * Another release's stream (scripts/guest/suite-releases.sh): it
 * loads and the device then holds its VRAM; what the edited copies test
 * is this release's own rule, not the other's.
 */
int t_golden_restore(struct gpu *g)
{
	return golden_load(g, false);
}

/* The whole file @path into @b (freed by the caller): 0, or -1. */
static int read_stream(const char *path, struct blob *b)
{
	FILE *f = fopen(path, "r");
	long sz;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	rewind(f);
	b->len = sz > 0 ? sz : 0;
	b->cap = b->len;
	b->p = malloc(b->len ? b->len : 1);
	if (!b->p || fread(b->p, 1, b->len, f) != b->len) {
		fclose(f);
		free(b->p);
		b->p = NULL;
		return -1;
	}
	fclose(f);
	return 0;
}

/*
 * A stream this device must refuse (an older release given a stream of a
 * newer format, scripts/guest/suite-releases.sh): refused, saying GOLDEN_WHY, and
 * the device does not run it.
 */
int t_golden_refused(struct gpu *g)
{
	const char *path = golden_path(), *why = getenv("GOLDEN_WHY");
	struct blob s = { 0 };
	int werr, ret;

	CHECK(path && why && *why, "GOLDEN_STREAM and GOLDEN_WHY must be set");
	CHECK(read_stream(path, &s) == 0, "cannot read %s", path);
	ret = restore(g, s.p, s.len, &werr);
	free(s.p);
	CHECK(ret, "the stream was accepted");
	return refused_with(g, "the stream", why);
}

static int golden_load(struct gpu *g, bool edited)
{
	const char *path = golden_path();
	struct blob gold = { 0 }, again = { 0 };
	char st[512] = "";
	struct image a, b;
	int werr, ret;
	size_t i;

	CHECK(path, "GOLDEN_STREAM is not set");
	CHECK(read_stream(path, &gold) == 0, "cannot read %s", path);
	CHECK(walk(&gold, NULL, NULL) > 3, "%s is not a gpumig stream", path);

	/* The golden stream loads, and the device then holds its VRAM. */
	ret = restore(g, gold.p, gold.len, &werr);
	CHECK(!ret, "the golden stream was refused (%d)", ret);
	CHECK(mig_capture(g, &again) == 0, "capture after the restore");
	ret = image_of(&gold, &a, GOLDEN_VRAM);
	if (!ret)
		ret = image_of(&again, &b, GOLDEN_VRAM);
	CHECK(!ret, "cannot parse the streams");
	for (i = 0; i < GOLDEN_VRAM && a.vram[i] == pattern(i); i++)
		;
	ret = 0;
	if (i < GOLDEN_VRAM)
		ret = fail("the golden stream's VRAM differs from the pattern at %zu", i);
	if (!ret && memcmp(a.vram, b.vram, GOLDEN_VRAM))
		ret = fail("the restored device's VRAM is not the golden stream's");
	if (!ret && (a.arch != 1 || b.arch != 1 || strcmp(a.type, b.type)))
		ret = fail("sections: golden %d arch (%s), again %d arch (%s)",
			   a.arch, a.type, b.arch, b.type);
	/*
	 * The destination names the producer the stream's note named (the
	 * restore was the last stream it resumed), and none without a note.
	 */
	mig_source(g->name, st, sizeof(st));
	if (!ret && strcmp(st, a.producer))
		ret = fail("the golden stream's producer is \"%s\", the device's migration/source says \"%s\"",
			   a.producer, st);
	free(a.vram);
	free(b.vram);
	free(again.p);
	if (ret)
		goto out;
	printf("    # golden stream of %s by %s: %zu bytes, %d VRAM sections, restored and saved again\n",
	       a.type, a.producer[0] ? a.producer : "a producer it does not name", gold.len,
	       a.chunks);
	if (!edited)
		goto out;

	/* A newer minor only adds what an older reader may skip: accepted. */
	ret = offer_edited(g, &gold, newer_minor, &werr);
	if (ret) {
		ret = fail("a stream of a newer minor version was refused (%d)", ret);
		goto out;
	}
	/* A minor newer than this reader reads: refused at the header. */
	ret = offer_edited(g, &gold, unread_minor, &werr);
	if (!ret) {
		ret = fail("a stream of minor %d, newer than this reader's, was accepted",
			   GPUMIG_STREAM_MINOR + 1);
		goto out;
	}
	ret = refused_with(g, "minor newer than this reader's", "newer than this destination reads");
	if (ret)
		goto out;
	/* A newer major, or a newer state layout: refused, with a message. */
	ret = offer_edited(g, &gold, newer_major, &werr);
	if (!ret) {
		ret = fail("a stream of a newer major version was accepted");
		goto out;
	}
	ret = refused_with(g, "newer major", "version");
	if (ret)
		goto out;
	ret = offer_edited(g, &gold, newer_state, &werr);
	if (!ret) {
		ret = fail("a stream with a newer state version was accepted");
		goto out;
	}
	ret = refused_with(g, "newer state version", "is newer than the destination's");
	if (ret)
		goto out;
	/* And the device still takes the golden stream afterwards. */
	ret = restore(g, gold.p, gold.len, &werr);
	if (ret)
		ret = fail("the golden stream was refused after the edited ones (%d)", ret);
out:
	free(gold.p);
	return ret;
}
