// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: a live migration with work in flight, pre-copy and
 * stop-copy, its sizes and counters checked and the destination's results
 * byte-exact; and a destination that refuses an incompatible stream while
 * the source runs on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/gpumig_stream.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

#define MIG_WORDS (32 * 1024)
#define MIG_ITERS \
	1000 /* at 3 ms a step: seconds, so it is still running at the stop */
#define MIG_KEY 0x600dcafe

/* A workload with a kernel in flight, copies through VRAM and fences. */
static void mig_workload(struct gpu *g, uint32_t **kbuf, uint32_t **expect,
			 uint8_t **src)
{
	uint32_t i, it;

	gpu_setup(g, 64);
	*kbuf = sysbuf(g, VA_SYS, MIG_WORDS * 4, NULL);
	sysbuf(g, VA_SYS + (1 << 20), 4096, NULL); /* fences */
	*src = sysbuf(g, VA_SYS + (2 << 20), 1 << 20, NULL);
	sysbuf(g, VA_SYS + (4 << 20), 1 << 20, NULL); /* copy target */
	gpu_map_range(g, VA_VRAM, 0, 4 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	fill_random(*kbuf, MIG_WORDS * 4);
	fill_random(*src, 1 << 20);
	*expect = malloc(MIG_WORDS * 4);
	memcpy(*expect, *kbuf, MIG_WORDS * 4);
	for (it = 0; it < MIG_ITERS; it++)
		for (i = 0; i < MIG_WORDS; i++)
			(*expect)[i] = kernel_word((*expect)[i], MIG_KEY, it);
	knob_set(g, "kernel_step_us", "3000");
	gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, MIG_WORDS * 4, MIG_ITERS,
		   MIG_KEY);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, SIMGPU_CMD_F_IRQ, VA_SYS + (1 << 20),
		   0xf00d, 0, 0);
	gpu_submit(g, 1, SIMGPU_OP_FILL, 0, VA_VRAM + (2 << 20), 1 << 20,
		   0x12345678, 0);
	gpu_submit(g, 1, SIMGPU_OP_COPY, 0, VA_VRAM, VA_SYS + (2 << 20),
		   1 << 20, 0);
	gpu_submit(g, 1, SIMGPU_OP_FENCE, 0, VA_SYS + (1 << 20) + 8, 0xbeef, 0,
		   0);
}

/*
 * Pre-copy while the device runs: read rounds until initial_bytes is 0,
 * as QEMU does; all of it lands in @pre.
 */
static int migrate_precopy(struct gpu *src, int fd, struct blob *pre, int *rounds)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };
	uint64_t first_initial;
	int ret;

	CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0,
	      "PRECOPY_INFO: %s", strerror(errno));
	first_initial = info.initial_bytes;
	CHECK(first_initial > 0, "initial_bytes is 0 at the start");
	*rounds = 0;
	do {
		ret = mig_read(fd, pre);
		CHECK(ret == -ENOMSG, "pre-copy read ended with %d, not ENOMSG",
		      ret);
		CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0,
		      "PRECOPY_INFO");
		(*rounds)++;
	} while (info.initial_bytes && *rounds < 50);
	CHECK(info.initial_bytes == 0, "initial_bytes never reached 0");
	CHECK(pre->len >= first_initial,
	      "read %zu bytes, initial_bytes said %llu", pre->len,
	      (unsigned long long)first_initial);
	return 0;
}

/* Stop-copy: the rest, which MIG_DATA_SIZE estimated within 3 blocks. */
static int migrate_stopcopy(struct gpu *src, int fd, const struct blob *pre,
			    struct blob *stop)
{
	const int64_t slack = 3 * (GPUMIG_VRAM_CHUNK + sizeof(struct gpumig_sec_hdr) +
				   sizeof(struct gpumig_wire_vram));
	bool untracked;
	int64_t est;
	int ret;

	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) == 0,
	      "PRE_COPY_P2P");
	est = mig_data_size(src);
	CHECK(est > 0, "MIG_DATA_SIZE: %lld", (long long)est);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0,
	      "STOP_COPY");
	CHECK(qrd(src, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "the kernel finished before the stop: nothing in flight to migrate");
	ret = mig_read(fd, stop);
	CHECK(ret == 0, "stop-copy read: %d", ret);
	/*
	 * A device without VRAM dirty tracking sends only its head before
	 * the stop, all of VRAM at it, and counts every block as data in
	 * MIG_DATA_SIZE (an upper bound: a block that reads zero goes as a
	 * range); one that tracks sent VRAM in pre-copy and estimates
	 * within 3 blocks.
	 */
	untracked = pre->len < 4096;
	CHECK(untracked || stop->len < pre->len,
	      "stop-copy (%zu) not smaller than pre-copy (%zu)", stop->len,
	      pre->len);
	CHECK((int64_t)stop->len <= est + slack &&
	      (untracked || (int64_t)stop->len + slack >= est),
	      "MIG_DATA_SIZE %lld, STOP_COPY produced %zu", (long long)est,
	      stop->len);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	printf("    # migrate: %zu pre-copy bytes, %zu stop-copy bytes (estimate %lld)\n",
	       pre->len, stop->len, (long long)est);
	return 0;
}

/* What the devices say they saw is what the VMM read and wrote. */
static int migrate_counters(struct gpu *src, const struct blob *pre,
			    const struct blob *stop, int rounds)
{
	long long r = mig_value(src->name, "precopy_rounds");
	long long pb = mig_value(src->name, "precopy_bytes");
	long long sb = mig_value(src->name, "stopcopy_bytes");
	long long rb = mig_value(dst_name, "resumed_bytes");
	char st[512] = "";

	CHECK(r >= 1 && r <= rounds && pb == (long long)pre->len &&
	      sb == (long long)stop->len,
	      "source counted %lld rounds, %lld + %lld bytes; read %d, %zu + %zu",
	      r, pb, sb, rounds, pre->len, stop->len);
	CHECK(rb == (long long)(pre->len + stop->len),
	      "destination counted %lld bytes, %zu written", rb,
	      pre->len + stop->len);
	/* The stream named its producer, this release; the destination says so. */
	mig_source(dst_name, st, sizeof(st));
	CHECK(!strcmp(st, "gpumig/" GPUMIG_VERSION),
	      "the destination does not name the stream's producer gpumig/%s: \"%s\"",
	      GPUMIG_VERSION, st);
	return 0;
}

/* The work of mig_workload() finishes on @dst with exactly the right results. */
static int migrate_results(struct gpu *dst, const struct gpu *src, const uint32_t *kbuf,
			   const uint32_t *expect, const uint8_t *data)
{
	const uint32_t *dk = gptr(dst, GUEST_IOVA + ((const uint8_t *)kbuf - src->mem));
	const uint8_t *srcdata = gptr(dst, GUEST_IOVA + (data - src->mem));
	uint8_t *dout;
	size_t i;

	CHECK(gpu_wait_idle(dst, 0, 30000) == 0,
	      "kernel did not finish on the destination");
	CHECK(gpu_wait_idle(dst, 1, 30000) == 0,
	      "queue 1 did not finish on the destination");
	for (i = 0; i < MIG_WORDS; i++)
		CHECK(dk[i] == expect[i],
		      "kernel word %zu: 0x%x, expected 0x%x", i, dk[i],
		      expect[i]);
	/* Fences and the VRAM round trip, read back through the device. */
	dout = sysbuf(dst, VA_SYS + (8 << 20), 1 << 20, NULL);
	gpu_submit(dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20), VA_VRAM, 1 << 20, 0);
	CHECK(gpu_wait_idle(dst, 1, 30000) == 0, "read back VRAM");
	CHECK(!memcmp(dout, srcdata, 1 << 20), "VRAM contents differ after migration");
	gpu_submit(dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20), VA_VRAM + (2 << 20),
		   4096, 0);
	CHECK(gpu_wait_idle(dst, 1, 30000) == 0, "read back fill");
	CHECK(*(uint32_t *)dout == 0x12345678, "fill lost in migration");
	CHECK(qrd(dst, 0, SIMGPU_QREG_FENCE_LO) == 0xf00d,
	      "queue 0 fence 0x%x", qrd(dst, 0, SIMGPU_QREG_FENCE_LO));
	return 0;
}

/* Live migration with a kernel in flight; the destination finishes it exactly. */
int t_migrate(struct gpu *src)
{
	struct blob pre = { 0 }, stop = { 0 };
	uint32_t *kbuf, *expect;
	int fd = -1, rounds = 0, ret;
	struct gpu dst;
	uint8_t *data;

	mig_workload(src, &kbuf, &expect, &data);
	usleep(100000);
	CHECK(qrd(src, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "kernel not in flight");
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0 && fd >= 0,
	      "PRE_COPY");
	ret = migrate_precopy(src, fd, &pre, &rounds);
	if (!ret)
		ret = migrate_stopcopy(src, fd, &pre, &stop);
	data_fd_close(fd);
	if (!ret) {
		CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
		ret = migrate_into(&dst, src, src->mem, &pre, &stop);
		if (!ret)
			ret = migrate_counters(src, &pre, &stop, rounds);
		if (!ret)
			ret = migrate_results(&dst, src, kbuf, expect, data);
		gpu_close(&dst);
	}
	free(expect);
	free(pre.p);
	free(stop.p);
	return ret;
}

int t_incompatible(struct gpu *src)
{
	struct blob pre = { 0 };
	struct gpu dst;
	char status[256];
	int fd = -1, rfd = -1, ret;

	gpu_setup(src, 16);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(mig_read(fd, &pre) == -ENOMSG, "pre-copy read");
	CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_STOP, NULL) == 0, "dst STOP");
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RESUMING, &rfd) == 0,
	      "dst RESUMING");
	ret = mig_write(rfd, pre.p, pre.len, 1 << 20);
	CHECK(ret == -EOPNOTSUPP, "incompatible stream accepted (%d)", ret);
	CHECK(mig_text(dst_name, "last_error", status, sizeof(status)) == 0 &&
	      strstr(status, "mismatch"),
	      "last_error does not name the mismatch: %s", status);
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RUNNING, NULL) < 0,
	      "destination ran a refused stream");
	data_fd_close(rfd);
	gpu_close(&dst);
	/* The source never stopped: back to RUNNING, still working. */
	CHECK(mig_set(src, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
	      "source back to RUNNING");
	data_fd_close(fd);
	sysbuf(src, VA_SYS, 4096, NULL);
	gpu_submit(src, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 5, 0, 0);
	CHECK(gpu_wait_idle(src, 0, TMO) == 0, "source stopped working");
	free(pre.p);
	return 0;
}
