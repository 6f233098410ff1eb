// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the VRAM migration benchmark of one instance type
 * (`-s bench_vram -d DST SRC`, both of the same type).  Every figure is
 * measured, none is asserted; what is asserted is that each migration it
 * times is correct (the destination holds the source's VRAM, block for
 * block) and that the stream is what the format says.  One line of
 * key=value figures per type goes to the output ("vram_bench"), and
 * scripts/bench.sh puts the lines of several types side by side, as
 * ratios to the smallest.
 *
 * What it does, on SRC and DST:
 *  1. the stream of the idle, fresh SRC (stop-and-copy: everything);
 *  2. BENCH_DATA bytes of non-zero data into SRC's VRAM (all of it for a
 *     64 MiB type: the same amount whatever the size);
 *  3. a pre-copy migration to DST: the first pass (save and restore
 *     throughput; read into memory touched beforehand, as QEMU's reused
 *     buffer and the baseline's are), PRECOPY_INFO and MIG_DATA_SIZE
 *     timed in a loop, two rounds each dirtying BENCH_DIRTY blocks, and
 *     the stop with the same dirt: the device's part of the downtime,
 *     split into its steps, and the stop-copy bytes;
 *  4. the same VRAM moved as stop-and-copy (no pre-copy, as the kernel's
 *     upstream GPU variant driver does): its downtime;
 *  5. memcpy, and memcpy plus one CRC-32 pass, over the same bytes in
 *     this process (the median of five): the baseline of the throughputs;
 *  6. the quiesce of an idle device and of one running a long kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/gpumig_stream.h>
#include <linux/simgpu.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

#define BLK		GPUMIG_VRAM_CHUNK
#define BENCH_DATA	(64ULL << 20)		/* non-zero VRAM, every type (BENCH_VRAM_MB) */
#define BENCH_DIRTY	8			/* blocks per round: 1 % of 64 MiB or less */
#define BENCH_CALLS	2000			/* PRECOPY_INFO / MIG_DATA_SIZE calls timed */
#define FILL_STEP	(1024U * 1024)		/* initial fill: one value per MiB */
#define VERIFY_STEP	(4 * FILL_STEP)		/* VRAM read back in pieces of this */
#define KERNEL_WORDS	(32 * 1024)
#define KERNEL_ITERS	2000
#define KERNEL_STEP_US	5000			/* one preemption step of the long kernel */
#define KERNEL_STEP_STR	"5000"

/* The value block @b holds: set per MiB first, then per dirtied block. */
static uint32_t *want;

static uint32_t block_value(uint64_t b, uint32_t round)
{
	return 0x5a000000u ^ (uint32_t)(b * 2654435761u) ^ (round << 20) ^ 1;
}

/* FILL [@off, +@len) of VRAM (mapped at VA_VRAM) with @val; wait. */
static int vram_fill(struct gpu *g, uint64_t off, uint32_t len, uint32_t val)
{
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM + off, len, val, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "FILL at 0x%llx did not finish",
	      (unsigned long long)off);
	return 0;
}

/* Dirty BENCH_DIRTY blocks spread over the data, with round @r's values. */
static int dirty_round(struct gpu *g, uint64_t data, uint32_t r)
{
	uint64_t nblk = data / BLK, i;

	for (i = 0; i < BENCH_DIRTY; i++) {
		uint64_t b = (i * nblk / BENCH_DIRTY + r * 3) % nblk;

		want[b] = block_value(b, r);
		TRY(vram_fill(g, b * BLK, BLK, want[b]));
	}
	return 0;
}

/* @d's VRAM, read back through its own COPY, holds what @want says. */
static int verify(struct gpu *d, uint64_t data, const char *what)
{
	uint32_t *buf = sysbuf(d, VA_SYS, VERIFY_STEP, NULL);
	uint64_t off, i;

	for (off = 0; off < data; off += VERIFY_STEP) {
		gpu_submit(d, 0, SIMGPU_OP_COPY, 0, VA_SYS, VA_VRAM + off, VERIFY_STEP, 0);
		CHECK(gpu_wait_idle(d, 0, TMO) == 0, "%s: read back did not finish", what);
		for (i = 0; i < VERIFY_STEP / 4; i++) {
			uint64_t b = (off + i * 4) / BLK;

			CHECK(buf[i] == want[b],
			      "%s: VRAM word at 0x%llx is 0x%08x, the source wrote 0x%08x",
			      what, (unsigned long long)(off + i * 4), buf[i], want[b]);
		}
	}
	return 0;
}

/* Sections of a stream: VRAM data chunks, zero chunks, zero ranges. */
static int stream_counts(const struct blob *b, int *data, int *zero, int *ranges)
{
	size_t off = 0;

	*data = *zero = *ranges = 0;
	while (b->len - off >= sizeof(struct gpumig_sec_hdr)) {
		const struct gpumig_sec_hdr *h = (const void *)(b->p + off);
		const struct gpumig_wire_vram *v = (const void *)(h + 1);

		if (b->len - off - sizeof(*h) < h->len)
			return -1;
		if (h->type == GPUMIG_SEC_VRAM)
			(v->flags & GPUMIG_VRAM_ZERO ? (*zero)++ : (*data)++);
		else if (h->type == GPUMIG_SEC_ZERO)
			(*ranges)++;
		off += sizeof(*h) + h->len;
	}
	return off == b->len ? 0 : -1;
}

/* CRC-32 (reflected 0xedb88320) sliced by 8, as Linux's lib/crc32 does it. */
static uint32_t crc_tab[8][256];

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		for (c = i, j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320 : c >> 1;
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^
					crc_tab[0][crc_tab[j - 1][i] & 0xff];
}

static uint32_t crc32_s8(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		uint32_t a, b;

		memcpy(&a, p, 4);
		memcpy(&b, p + 4, 4);
		a ^= crc;
		crc = crc_tab[7][a & 0xff] ^ crc_tab[6][(a >> 8) & 0xff] ^
		      crc_tab[5][(a >> 16) & 0xff] ^ crc_tab[4][a >> 24] ^
		      crc_tab[3][b & 0xff] ^ crc_tab[2][(b >> 8) & 0xff] ^
		      crc_tab[1][(b >> 16) & 0xff] ^ crc_tab[0][b >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

#define BASE_RUNS	5

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median of BASE_RUNS: memcpy of @len bytes, and memcpy then one CRC
 * pass.  A median, as the throughputs it is held against are one
 * measurement each (and medians over the benchmark's runs): a best of
 * several would set a lucky run against ordinary ones.
 */
static void baseline(size_t len, uint64_t *cpy_ns, uint64_t *cpy_crc_ns, uint32_t *sink)
{
	uint8_t *a = malloc(len), *b = malloc(len);
	uint64_t c[BASE_RUNS], cc[BASE_RUNS];
	int r;

	*cpy_ns = *cpy_crc_ns = UINT64_MAX;
	if (!a || !b)
		goto out;
	fill_random(a, len);
	memset(b, 1, len);
	crc_init();
	for (r = 0; r < BASE_RUNS; r++) {
		uint64_t t0 = now_ns(), t1, t2;

		memcpy(b, a, len);
		t1 = now_ns();
		memcpy(a, b, len);
		*sink ^= crc32_s8(~0U, a, len);
		t2 = now_ns();
		c[r] = t1 - t0;
		cc[r] = t2 - t1;
	}
	qsort(c, BASE_RUNS, sizeof(c[0]), cmp_u64);
	qsort(cc, BASE_RUNS, sizeof(cc[0]), cmp_u64);
	*cpy_ns = c[BASE_RUNS / 2];
	*cpy_crc_ns = cc[BASE_RUNS / 2];
out:
	free(a);
	free(b);
}

/* Quiesce of @g, idle or with a long kernel running: the engine's figure. */
static int stop_quiesce(struct gpu *g, bool busy, long long *us)
{
	if (busy) {
		knob_set(g, "kernel_step_us", KERNEL_STEP_STR);
		gpu_submit(g, 1, SIMGPU_OP_KERNEL, 0, VA_SYS, KERNEL_WORDS * 4,
			   KERNEL_ITERS, 0x600dcafe);
		usleep(50000);
		CHECK(qrd(g, 1, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
		      "the long kernel is not running");
	}
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	*us = metric(g, "quiesce_us");
	CHECK(*us >= 0, "no migration/quiesce_us");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	if (busy)
		CHECK(gpu_reset(g) == 0, "reset after the long kernel");
	return 0;
}

/* The device's type, from its migration descriptor. */
void type_of(struct gpu *g, char *buf, size_t len)
{
	char c[512] = "", *t;

	snprintf(buf, len, "?");
	if (read_attr(g->name, "migration/compat", c, sizeof(c)))
		return;
	t = strstr(c, "type=");
	if (t)
		snprintf(buf, len, "%.*s", (int)strcspn(t + 5, "\n "), t + 5);
}

int t_bench_vram(struct gpu *g)
{
	char type[64];
	struct blob idle = { 0 }, pre = { 0 }, stop = { 0 }, sc = { 0 };
	uint64_t data, t0, t1, t2, t3, t4, first_ns, restore_ns, pi_ns, ds_ns;
	uint64_t cpy_ns, cpy_crc_ns, sc_ns;
	size_t pre_first = 0;
	long long quiesce, inval, q_idle, q_busy;
	struct vfio_precopy_info info;
	int sfd = -1, rfd = -1, ret, i, nd, nz, nr;
	uint32_t sink = 0, r;
	struct gpu d;
	uint64_t b;

	type_of(g, type, sizeof(type));
	data = getenv("BENCH_VRAM_MB") ? strtoull(getenv("BENCH_VRAM_MB"), NULL, 0) << 20 :
					 BENCH_DATA;
	data = data / VERIFY_STEP * VERIFY_STEP;
	if (data > g->vram)
		data = g->vram;
	CHECK(data >= VERIFY_STEP, "BENCH_VRAM_MB below %u", VERIFY_STEP >> 20);
	want = calloc(data / BLK, sizeof(*want));
	CHECK(want, "out of memory");

	/* 1. The idle, fresh instance's whole stream. */
	CHECK(mig_capture(g, &idle) == 0, "stream of the idle instance");
	CHECK(stream_counts(&idle, &nd, &nz, &nr) == 0, "the idle stream's framing");
	CHECK(nd == 0 && nz == 0 && nr >= 1,
	      "the idle stream has %d data chunks, %d zero chunks, %d zero ranges", nd, nz, nr);

	/* 2. Non-zero data, one value per MiB. */
	gpu_setup(g, 64);
	sysbuf(g, VA_SYS, KERNEL_WORDS * 4, NULL);
	gpu_map_range(g, VA_VRAM, 0, data, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	for (b = 0; b < data; b += FILL_STEP) {
		for (r = 0; r < FILL_STEP / BLK; r++)
			want[b / BLK + r] = block_value(b / BLK, 0);
		TRY(vram_fill(g, b, FILL_STEP, want[b / BLK]));
	}

	CHECK(gpu_open(&d, dst_name) == 0, "cannot open %s", dst_name);
	ret = -1;
	if (mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(&d, VFIO_DEVICE_STATE_RESUMING, &rfd)) {
		fail("destination: RESUMING");
		goto out;
	}

	/* 3. Pre-copy: the first pass, saved then restored. */
	if (mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &sfd)) {
		fail("PRE_COPY");
		goto out;
	}
	/*
	 * The first pass is read into memory already touched, as QEMU reads
	 * into a buffer it reuses and as the baseline's buffers are: the
	 * time is the kernel's, not this process's first page faults.
	 */
	if (mig_precopy_info(sfd, &info)) {
		fail("PRECOPY_INFO: %s", strerror(errno));
		goto out;
	}
	pre.cap = info.initial_bytes + info.dirty_bytes + (4 << 20);
	pre.p = malloc(pre.cap);
	if (!pre.p) {
		fail("out of memory");
		goto out;
	}
	memset(pre.p, 0x5a, pre.cap);
	t0 = now_ns();
	if (mig_read(sfd, &pre) != -ENOMSG) {
		fail("the first pass did not end with ENOMSG");
		goto out;
	}
	first_ns = now_ns() - t0;
	pre_first = pre.len;
	t0 = now_ns();
	if (mig_write(rfd, pre.p, pre_first, 1 << 20)) {
		fail("destination: writing the first pass");
		goto out;
	}
	restore_ns = now_ns() - t0;

	t0 = now_ns();
	for (i = 0; i < BENCH_CALLS; i++)
		if (mig_precopy_info(sfd, &info)) {
			fail("PRECOPY_INFO: %s", strerror(errno));
			goto out;
		}
	pi_ns = (now_ns() - t0) / BENCH_CALLS;
	t0 = now_ns();
	for (i = 0; i < BENCH_CALLS; i++)
		if (mig_data_size(g) < 0) {
			fail("MIG_DATA_SIZE");
			goto out;
		}
	ds_ns = (now_ns() - t0) / BENCH_CALLS;

	for (r = 1; r <= 2; r++) {
		size_t at = pre.len;

		if (dirty_round(g, data, r) || mig_read(sfd, &pre) != -ENOMSG ||
		    mig_write(rfd, pre.p + at, pre.len - at, 1 << 20)) {
			fail("pre-copy round %u", r);
			goto out;
		}
	}

	/* The stop, with one more round's dirt: the device's downtime. */
	if (dirty_round(g, data, 3))
		goto out;
	t0 = now_ns();
	if (mig_set(g, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) ||
	    mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, NULL)) {
		fail("STOP_COPY");
		goto out;
	}
	t1 = now_ns();
	if (mig_read(sfd, &stop)) {
		fail("stop-copy read");
		goto out;
	}
	t2 = now_ns();
	if (mig_write(rfd, stop.p, stop.len, 1 << 20)) {
		fail("destination: writing stop-copy");
		goto out;
	}
	t3 = now_ns();
	if (mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL)) {
		fail("destination: RESUMING -> STOP refused the stream");
		goto out;
	}
	t4 = now_ns();
	quiesce = metric(g, "quiesce_us");
	inval = metric(g, "invalidate_us");
	data_fd_close(sfd);
	data_fd_close(rfd);
	sfd = -1;
	rfd = -1;
	/* The guest's memory follows (not the device's downtime): RAM migration. */
	guest_follow(&d, g, g->mem);
	if (mig_set(&d, VFIO_DEVICE_STATE_RUNNING, NULL) || verify(&d, data, "pre-copy"))
		goto out;

	/* 4. The same VRAM as stop-and-copy. */
	if (mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) ||
	    mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(&d, VFIO_DEVICE_STATE_RESUMING, &rfd)) {
		fail("stop-and-copy: setting up");
		goto out;
	}
	if (dirty_round(g, data, 4))
		goto out;
	sc_ns = now_ns();
	if (mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, &sfd) || mig_read(sfd, &sc) ||
	    mig_write(rfd, sc.p, sc.len, 1 << 20) ||
	    mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL)) {
		fail("stop-and-copy");
		goto out;
	}
	sc_ns = now_ns() - sc_ns;
	data_fd_close(sfd);
	data_fd_close(rfd);
	sfd = -1;
	rfd = -1;
	guest_follow(&d, g, g->mem);
	if (mig_set(&d, VFIO_DEVICE_STATE_RUNNING, NULL) || verify(&d, data, "stop-and-copy") ||
	    mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL))
		goto out;

	/* 5. The baseline, over the bytes the first pass carried. */
	baseline(pre_first, &cpy_ns, &cpy_crc_ns, &sink);

	/* 6. Quiesce, idle and busy. */
	if (stop_quiesce(g, false, &q_idle) || stop_quiesce(g, true, &q_busy))
		goto out;

	/* Stop-copy carried the last round's blocks: exactly those. */
	if (stream_counts(&stop, &nd, &nz, &nr) || nd != BENCH_DIRTY) {
		fail("stop-copy carried %d VRAM data chunks, %d blocks were dirtied", nd,
		     BENCH_DIRTY);
		goto out;
	}
	printf("    # vram_bench type=%s vram=%llu data=%llu idle_stream=%zu",
	       type, (unsigned long long)g->vram, (unsigned long long)data, idle.len);
	printf(" precopy_info_ns=%llu data_size_ns=%llu",
	       (unsigned long long)pi_ns, (unsigned long long)ds_ns);
	printf(" first_pass_bytes=%zu save_ns=%llu restore_ns=%llu",
	       pre_first, (unsigned long long)first_ns, (unsigned long long)restore_ns);
	printf(" memcpy_ns=%llu memcpy_crc_ns=%llu",
	       (unsigned long long)cpy_ns, (unsigned long long)cpy_crc_ns);
	printf(" stop_bytes=%zu stop_data_chunks=%d down_stop_us=%.1f", stop.len, nd,
	       (t1 - t0) / 1e3);
	printf(" quiesce_us=%lld invalidate_us=%lld down_read_us=%.1f", quiesce, inval,
	       (t2 - t1) / 1e3);
	printf(" down_write_us=%.1f down_restore_us=%.1f down_us=%.1f",
	       (t3 - t2) / 1e3, (t4 - t3) / 1e3, (t4 - t0) / 1e3);
	printf(" stopandcopy_bytes=%zu stopandcopy_us=%.1f", sc.len, sc_ns / 1e3);
	printf(" quiesce_idle_us=%lld quiesce_busy_us=%lld step_us=%d sink=%x\n", q_idle,
	       q_busy, KERNEL_STEP_US, sink & 0xf);
	ret = 0;
out:
	if (sfd >= 0)
		data_fd_close(sfd);
	if (rfd >= 0)
		data_fd_close(rfd);
	gpu_close(&d);
	free(idle.p);
	free(pre.p);
	free(stop.p);
	free(sc.p);
	free(want);
	return ret;
}
