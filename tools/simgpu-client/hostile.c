// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: hostile streams offered to a destination in RESUMING.
 * Each must be refused with a clear error and the device must never run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/gpumig_stream.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

/* Offer @len bytes of @p to @name in RESUMING; 0 if it ran, else <0. */
static int offer(const char *name, const uint8_t *p, size_t len, int *werr)
{
	struct gpu d;
	int rfd = -1, ret;

	if (gpu_open(&d, name))
		return -100;
	ret = mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL);
	if (!ret)
		ret = mig_set(&d, VFIO_DEVICE_STATE_RESUMING, &rfd);
	if (!ret) {
		*werr = mig_write(rfd, p, len, 4096);
		data_fd_close(rfd);
		ret = mig_set(&d, VFIO_DEVICE_STATE_RUNNING, NULL);
	}
	gpu_close(&d);
	return ret;
}

/* Where the stream's framing puts things (<linux/gpumig_stream.h>). */
#define SEC_HDR sizeof(struct gpumig_sec_hdr)
#define SEC_LEN offsetof(struct gpumig_sec_hdr, len)

/*
 * Where the first VRAM section starts (after the header and any notes),
 * or 0 when the framing is broken or there is none.
 */
static size_t first_vram(const struct blob *b)
{
	size_t off = 0;

	while (b->len - off >= SEC_HDR) {
		const struct gpumig_sec_hdr *h = (const void *)(b->p + off);

		if (h->type == GPUMIG_SEC_VRAM)
			return off;
		if (b->len - off - SEC_HDR < h->len)
			break;
		off += SEC_HDR + h->len;
	}
	return 0;
}

/* A byte flipped at @off: the CRCs catch it. */
static size_t flip(uint8_t *m, const struct blob *b, size_t off)
{
	memcpy(m, b->p, b->len);
	m[off] ^= 0x40;
	return b->len;
}

static size_t flip_header(uint8_t *m, const struct blob *b)
{
	return flip(m, b, SEC_HDR + 6);
}

static size_t flip_chunk(uint8_t *m, const struct blob *b)
{
	return flip(m, b, first_vram(b) + SEC_HDR + sizeof(struct gpumig_wire_vram) + 8);
}

static size_t flip_arch(uint8_t *m, const struct blob *b)
{
	return flip(m, b, b->len - SEC_HDR - sizeof(struct gpumig_wire_end) - 100);
}

static size_t flip_end(uint8_t *m, const struct blob *b)
{
	return flip(m, b, b->len - 5);
}

/*
 * A section claiming 4 GiB: the header CRC catches it first, which is
 * the point: a length is never trusted.
 */
static size_t oversized(uint8_t *m, const struct blob *b)
{
	uint32_t len = 0xffffffff;

	memcpy(m, b->p, b->len);
	memcpy(m + first_vram(b) + SEC_LEN, &len, sizeof(len));
	return b->len;
}

/* The first two VRAM sections swapped (both intact): sequence numbers catch it. */
static size_t reordered(uint8_t *m, const struct blob *b)
{
	size_t sec2 = first_vram(b), sec3, end3;
	uint32_t len;

	memcpy(&len, b->p + sec2 + SEC_LEN, sizeof(len));
	sec3 = sec2 + SEC_HDR + len;
	memcpy(&len, b->p + sec3 + SEC_LEN, sizeof(len));
	end3 = sec3 + SEC_HDR + len;
	memcpy(m, b->p, sec2);
	memcpy(m + sec2, b->p + sec3, end3 - sec3);
	memcpy(m + sec2 + end3 - sec3, b->p + sec2, sec3 - sec2);
	memcpy(m + end3, b->p + end3, b->len - end3);
	return b->len;
}

static size_t garbage(uint8_t *m, const struct blob *b)
{
	fill_random(m, 4096);
	return 4096;
}

static const struct mutation {
	const char *what;
	size_t (*make)(uint8_t *m, const struct blob *b);
	int werr;	/* the write's error, or 1 for any */
} mutations[] = {
	{ "a byte flipped in the header", flip_header, 1 },
	{ "a byte flipped in a VRAM chunk", flip_chunk, 1 },
	{ "a byte flipped in the architectural state", flip_arch, 1 },
	{ "a byte flipped in the end section", flip_end, 1 },
	{ "a section claiming 4 GiB", oversized, -EBADMSG },
	{ "the first two VRAM sections swapped", reordered, -EINVAL },
	{ "4 KiB of garbage", garbage, 1 },
};

/* Truncated at several places: never runs. */
static int hostile_truncated(const struct blob *b)
{
	int i, werr = 0;

	for (i = 1; i < 8; i++)
		CHECK(offer(dst_name, b->p, b->len * i / 8, &werr) < 0,
		      "stream truncated at %zu accepted", b->len * i / 8);
	return 0;
}

static int hostile_mutated(const struct blob *b)
{
	uint8_t *m = malloc(b->len + 64);
	size_t i, len;
	int ret, werr;

	CHECK(m, "out of memory");
	for (i = 0; i < ARRAY_SIZE(mutations); i++) {
		len = mutations[i].make(m, b);
		werr = 0;
		ret = offer(dst_name, m, len, &werr);
		if (ret >= 0 || werr >= 0 ||
		    (mutations[i].werr != 1 && werr != mutations[i].werr)) {
			free(m);
			return fail("%s: accepted or wrong error (%d/%d)",
				    mutations[i].what, ret, werr);
		}
	}
	free(m);
	return 0;
}

/* Hostile streams into RESUMING: each refused, the device never runs. */
int t_hostile(struct gpu *g)
{
	struct blob b = { 0 };
	int werr = 0, ret;

	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 1 << 20, 0x77, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fill");
	CHECK(mig_capture(g, &b) == 0 && b.len > 1000, "capture");

	/* The intact stream is accepted (control). */
	ret = offer(dst_name, b.p, b.len, &werr);
	if (!ret && !werr)
		ret = hostile_truncated(&b);
	else
		ret = fail("intact stream refused: %d/%d", ret, werr);
	if (!ret)
		ret = hostile_mutated(&b);
	/* And the destination still takes a good stream afterwards. */
	if (!ret && (offer(dst_name, b.p, b.len, &werr) || werr))
		ret = fail("intact stream refused after the hostile ones");
	free(b.p);
	return ret;
}

/*
 * A VMM killed in the middle of one long resume write(): the kernel stops
 * at the next piece instead of consuming the whole stream first, the
 * half-written stream is refused at RESUMING -> STOP, and the destination
 * takes the whole stream afterwards.  256 MiB of non-zero VRAM make the
 * write long enough that the kill lands inside it.
 */
int t_kill_resume(struct gpu *g)
{
	int werr = 0, rfd = -1, pfd[2], st;
	struct blob b = { 0 };
	long long got;
	uint64_t off;
	struct gpu d;
	pid_t pid;
	char c;

	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, g->vram, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	for (off = 0; off < g->vram; off += SIMGPU_MAX_XFER)	/* the most one FILL takes */
		gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM + off, SIMGPU_MAX_XFER, 0x5eed, 0);
	CHECK(gpu_wait_idle(g, 0, 600000) == 0, "fill all VRAM: error %u",
	      qrd(g, 0, SIMGPU_QREG_ERROR));
	CHECK(mig_capture(g, &b) == 0 && b.len > g->vram, "capture (%zu bytes)", b.len);

	CHECK(gpu_open(&d, dst_name) == 0, "open the destination");
	CHECK(mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL) == 0 &&
	      mig_set(&d, VFIO_DEVICE_STATE_RESUMING, &rfd) == 0, "RESUMING");
	CHECK(pipe(pfd) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		close(pfd[0]);
		if (write(pfd[1], "w", 1) == 1)
			(void)!write(rfd, b.p, b.len);	/* one call, all of it */
		_exit(0);
	}
	close(pfd[1]);
	CHECK(read(pfd[0], &c, 1) == 1, "writer did not start");
	close(pfd[0]);
	usleep(20 * 1000);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st), "writer not killed");
	got = mig_value(d.name, "resumed_bytes");
	printf("    # kill_resume: killed after %lld of %zu bytes\n", got, b.len);
	CHECK(got > 0 && got < (long long)b.len,
	      "a killed writer's write ran on: %lld of %zu bytes consumed", got, b.len);
	CHECK(mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL) < 0,
	      "a half-written stream was accepted");
	CHECK(gpu_reset(&d) == 0, "reset the destination");
	data_fd_close(rfd);
	gpu_close(&d);

	CHECK(offer(dst_name, b.p, b.len, &werr) == 0 && !werr,
	      "the whole stream refused after the kill: %d", werr);
	free(b.p);
	return 0;
}
