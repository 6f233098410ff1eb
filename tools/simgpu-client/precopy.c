// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: live migration as a VMM does it, guest memory included.
 * Guest memory is copied whole once, then only the pages the device
 * reports dirty, in rounds, while a kernel, DMA copies and a background
 * writer keep writing guest memory; the rounds end when what is left fits
 * the stop-copy budget.  The destination gets only what was sent.  Without
 * DMA logging (the module offers none on this kernel) the VMM falls back
 * as QEMU does: all guest memory is sent again at stop-copy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

#define PC_KWORDS (16 * 1024)	/* 64 KiB kernel buffer: 16 pages per step */
#define PC_KITERS 4000
#define PC_KEY 0xd1a7d1a7
#define PC_COPIES 64		/* 64 KiB each, spread by small kernels */
#define PC_STAMP_PAGES 1024	/* the background writer's region */
#define PC_RATE "2000"		/* its pages per second */
#define PC_BW (64 << 20)	/* modelled link: bytes per second */
#define PC_CONVERGED 256	/* pages left that stop-copy may carry */
#define PC_MAX_ROUNDS 40

/**
 * struct pc - one migration with guest memory
 * @mode: the device tracks guest memory (1) or not (0)
 * @bm: the last report
 * @shadow: the destination's guest memory: what was sent
 * @naive: guest memory as first copied, never updated
 * @before_final: @shadow before the final report
 * @pre: device data read in pre-copy
 * @stop: device data read in stop-copy
 * @kiova: the long kernel's buffer
 * @tiova: the small kernels' word
 * @late_iova: the page written after the last round
 * @csrc_iova: the copies' source
 * @cdst_iova: their destination
 * @stamp_iova: the background writer's region
 * @expect: the long kernel's result
 * @tk_expect: the small kernels' result
 * @round_pages: guest pages sent per round
 * @rounds: rounds run
 * @sent: guest pages sent in all
 * @final: guest pages sent at stop-copy
 */
struct pc {
	int mode;
	uint64_t bm[BM_WORDS_MAX];
	uint8_t *shadow, *naive, *before_final;
	struct blob pre, stop;
	uint64_t kiova, tiova, late_iova, csrc_iova, cdst_iova, stamp_iova;
	uint32_t expect[PC_KWORDS], tk_expect;
	size_t round_pages[PC_MAX_ROUNDS];
	int rounds;
	size_t sent, final;
};

static void link_delay(size_t pages)
{
	usleep((useconds_t)((uint64_t)pages * 4096 * 1000000 / PC_BW));
}

static size_t copy_reported(uint8_t *shadow, const uint8_t *mem,
			    const uint64_t *bm)
{
	size_t i, n = 0;

	for (i = 0; i < NPAGES; i++)
		if (bm_test(bm, i)) {
			memcpy(shadow + i * 4096, mem + i * 4096, 4096);
			n++;
		}
	return n;
}

static size_t pages_differ(const uint8_t *a, const uint8_t *b, size_t *first)
{
	size_t i, n = 0;

	*first = NPAGES;
	for (i = 0; i < NPAGES; i++)
		if (memcmp(a + i * 4096, b + i * 4096, 4096)) {
			if (!n)
				*first = i;
			n++;
		}
	return n;
}

/* The guest's buffers and what its work must produce. */
static void pc_buffers(struct gpu *src, struct pc *pc)
{
	uint32_t *kbuf, tk = 0x1234, i, it;
	uint8_t *csrc;
	size_t q;

	gpu_setup(src, 256);
	kbuf = sysbuf(src, VA_SYS, PC_KWORDS * 4, &pc->kiova);
	sysbuf(src, VA_SYS + (256 << 10), 4096, &pc->tiova);
	sysbuf(src, VA_SYS + (260 << 10), 4096, &pc->late_iova);
	csrc = sysbuf(src, VA_SYS + (1 << 20), PC_COPIES << 16, &pc->csrc_iova);
	sysbuf(src, VA_SYS + (8 << 20), PC_COPIES << 16, &pc->cdst_iova);
	sysbuf(src, VA_SYS + (16 << 20), PC_STAMP_PAGES * 4096, &pc->stamp_iova);
	fill_random(kbuf, PC_KWORDS * 4);
	fill_random(csrc, PC_COPIES << 16);
	memcpy(pc->expect, kbuf, PC_KWORDS * 4);
	for (it = 0; it < PC_KITERS; it++)
		for (i = 0; i < PC_KWORDS; i++)
			pc->expect[i] = kernel_word(pc->expect[i], PC_KEY, it);
	memcpy(gptr(src, pc->tiova), &tk, 4);
	pc->tk_expect = tk;
	for (q = 0; q < PC_COPIES; q++)
		for (it = 0; it < 5; it++)
			pc->tk_expect = kernel_word(pc->tk_expect, PC_KEY + 1, it);
}

/* The guest's work, all submitted before the first copy. */
static void pc_work(struct gpu *src)
{
	size_t q;

	knob_set(src, "kernel_step_us", "2000");
	gpu_submit(src, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, PC_KWORDS * 4,
		   PC_KITERS, PC_KEY);
	for (q = 0; q < PC_COPIES; q++) {
		gpu_submit(src, 1, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20) + (q << 16),
			   VA_SYS + (1 << 20) + (q << 16), 1 << 16, 0);
		gpu_submit(src, 1, SIMGPU_OP_KERNEL, 0, VA_SYS + (256 << 10), 4, 5,
			   PC_KEY + 1);
	}
	wr(src, SIMGPU_REG_DIRTY_BASE_LO, (uint32_t)(VA_SYS + (16 << 20)));
	wr(src, SIMGPU_REG_DIRTY_BASE_HI, (VA_SYS + (16 << 20)) >> 32);
	knob_set(src, "dirty_rate", PC_RATE);
	wr(src, SIMGPU_REG_DIRTY_PAGES, PC_STAMP_PAGES);
}

/* Round 0 sends all guest memory; later rounds what the device reported. */
static int pc_rounds(struct gpu *src, struct pc *pc, int fd)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };
	unsigned int i;
	int ret;

	memcpy(pc->shadow, src->mem, guest_size);
	memcpy(pc->naive, pc->shadow, guest_size);
	link_delay(NPAGES);
	pc->sent = NPAGES;
	for (;;) {
		size_t n;

		ret = mig_read(fd, &pc->pre);
		CHECK(ret == -ENOMSG, "pre-copy read: %d", ret);
		CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0,
		      "PRECOPY_INFO: %s", strerror(errno));
		if (!pc->mode)
			break;	/* nothing to learn: everything goes at stop */
		CHECK(report_guest(src, pc->bm) >= 0, "REPORT: %s", strerror(errno));
		n = copy_reported(pc->shadow, src->mem, pc->bm);
		link_delay(n);
		pc->sent += n;
		pc->round_pages[pc->rounds++] = n;
		if ((n <= PC_CONVERGED && !info.initial_bytes && pc->rounds >= 2) ||
		    pc->rounds == PC_MAX_ROUNDS)
			break;
	}
	/*
	 * The background writer covers its region once before the stop
	 * (PC_RATE pages a second), so every page must arrive stamped
	 * however quickly the rounds went.
	 */
	for (i = 0; rd(src, SIMGPU_REG_DIRTY_COUNT) < PC_STAMP_PAGES; i++) {
		CHECK(i < 1000, "the background writer wrote %u of %u pages in 10 s",
		      rd(src, SIMGPU_REG_DIRTY_COUNT), PC_STAMP_PAGES);
		usleep(10000);
	}
	CHECK(!pc->mode || pc->round_pages[pc->rounds - 1] <= PC_CONVERGED,
	      "no convergence in %d rounds: %zu pages in the last", pc->rounds,
	      pc->round_pages[pc->rounds - 1]);
	return 0;
}

/*
 * Stop-copy, with one more device write after the last round, which only
 * the final report can tell about.  The ring entry asking for it is a CPU
 * write, which the VMM tracks itself (KVM's dirty log would): its pages
 * go with stop-copy.
 */
static int pc_stopcopy(struct gpu *src, struct pc *pc, int fd)
{
	size_t ring = gpage(src->q[2].ring_iova), q;
	int ret;

	gpu_submit(src, 2, SIMGPU_OP_FILL, 0, VA_SYS + (260 << 10), 4096,
		   0x1a7e1a7e, 0);
	CHECK(gpu_wait_idle(src, 2, TMO) == 0, "the late write");
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY");
	CHECK(qrd(src, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "the kernel finished before the stop: nothing in flight");
	ret = mig_read(fd, &pc->stop);
	CHECK(ret == 0, "stop-copy read: %d", ret);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	memcpy(pc->before_final, pc->shadow, guest_size);
	if (!pc->mode) {
		memcpy(pc->shadow, src->mem, guest_size);
		pc->final = NPAGES;
		pc->sent += pc->final;
		return 0;
	}
	CHECK(report_guest(src, pc->bm) >= 0, "final REPORT");
	CHECK(bm_test(pc->bm, gpage(pc->late_iova)),
	      "the write after the last round is not in the final report");
	pc->final = copy_reported(pc->shadow, src->mem, pc->bm);
	for (q = 0; q < src->q[2].size * sizeof(struct simgpu_cmd) / 4096; q++)
		memcpy(pc->shadow + (ring + q) * 4096, src->mem + (ring + q) * 4096, 4096);
	pc->sent += pc->final;
	return 0;
}

/* What was sent is exactly guest memory, and would not be without the reports. */
static int pc_check_sent(struct gpu *src, struct pc *pc)
{
	size_t stale, late, first;
	int i;

	CHECK(pages_differ(pc->shadow, src->mem, &first) == 0,
	      "destination guest memory wrong from page %zu", first);
	stale = pages_differ(pc->naive, src->mem, &first);
	late = pages_differ(pc->before_final, src->mem, &first);
	CHECK(stale > 0, "the device wrote no guest memory after the first copy");
	CHECK(!pc->mode || late > 0, "nothing was left for the final report");
	printf("    # dirty_precopy (%s tracking): %d rounds, guest pages per round:",
	       pc->mode ? "device" : "no", pc->rounds);
	for (i = 0; i < pc->rounds; i++)
		printf(" %zu", pc->round_pages[i]);
	printf("\n    # dirty_precopy: stop-copy %zu guest pages of %llu + %zu device bytes; %zu pages sent in all; device pre-copy %zu bytes\n",
	       pc->final, (unsigned long long)NPAGES, pc->stop.len, pc->sent, pc->pre.len);
	printf("    # dirty_precopy: without the device's reports %zu pages would be stale on the destination (%zu without the last one)\n",
	       stale, late);
	return 0;
}

/* The destination finishes every piece of work exactly. */
static int pc_check_results(struct gpu *dst, const struct pc *pc)
{
	uint64_t *stamps = gptr(dst, pc->stamp_iova);
	uint32_t *dk = gptr(dst, pc->kiova), dtk, i, stamped = 0;
	uint32_t count;

	CHECK(gpu_wait_idle(dst, 0, 120000) == 0 && gpu_wait_idle(dst, 1, 60000) == 0,
	      "work did not finish on the destination");
	wr(dst, SIMGPU_REG_DIRTY_PAGES, 0);
	count = rd(dst, SIMGPU_REG_DIRTY_COUNT);
	for (i = 0; i < PC_KWORDS; i++)
		CHECK(dk[i] == pc->expect[i], "kernel word %u: 0x%x, expected 0x%x",
		      i, dk[i], pc->expect[i]);
	CHECK(*(uint32_t *)gptr(dst, pc->late_iova + 4092) == 0x1a7e1a7e,
	      "the write after the last round is missing");
	memcpy(&dtk, gptr(dst, pc->tiova), 4);
	CHECK(dtk == pc->tk_expect, "small kernels: 0x%x, expected 0x%x", dtk,
	      pc->tk_expect);
	CHECK(!memcmp(gptr(dst, pc->cdst_iova), gptr(dst, pc->csrc_iova), PC_COPIES << 16),
	      "DMA copies wrong on the destination");
	for (i = 0; i < PC_STAMP_PAGES; i++) {
		uint64_t *s = stamps + i * (4096 / sizeof(*s));

		if (s[1] == i && s[0] < count && s[0] % PC_STAMP_PAGES == i)
			stamped++;
	}
	CHECK(stamped == PC_STAMP_PAGES,
	      "%u of %u pages carry the background writer's stamp",
	      stamped, PC_STAMP_PAGES);
	return 0;
}

static int pc_migrate(struct gpu *src, struct pc *pc)
{
	struct gpu dst;
	int fd = -1, ret;

	if (pc->mode)
		CHECK(dma_log_start(src, GUEST_IOVA, guest_size) == 0,
		      "START: %s", strerror(errno));
	else
		TRY(expect_no_logging(src));
	pc_work(src);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0 && fd >= 0,
	      "PRE_COPY");
	ret = pc_rounds(src, pc, fd);
	if (!ret)
		ret = pc_stopcopy(src, pc, fd);
	data_fd_close(fd);
	if (!ret)
		ret = pc_check_sent(src, pc);
	dma_log_stop(src);
	if (ret)
		return ret;
	CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
	ret = migrate_into(&dst, src, pc->shadow, &pc->pre, &pc->stop);
	if (!ret)
		ret = pc_check_results(&dst, pc);
	gpu_close(&dst);
	return ret;
}

int t_dirty_precopy(struct gpu *src)
{
	struct pc *pc = calloc(1, sizeof(*pc));
	int ret;

	CHECK(pc, "out of memory");
	pc->mode = device_tracking(src);
	pc->shadow = malloc(guest_size);
	pc->naive = malloc(guest_size);
	pc->before_final = malloc(guest_size);
	if (pc->mode < 0)
		ret = fail("cannot read migration/dirty_tracking");
	else if (!pc->shadow || !pc->naive || !pc->before_final)
		ret = fail("out of memory");
	else
		ret = (pc_buffers(src, pc), pc_migrate(src, pc));
	free(pc->pre.p);
	free(pc->stop.p);
	free(pc->shadow);
	free(pc->naive);
	free(pc->before_final);
	free(pc);
	return ret;
}
