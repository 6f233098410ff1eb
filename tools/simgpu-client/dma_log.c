// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: DMA logging of guest memory (VFIO_DEVICE_FEATURE_DMA_LOGGING_*)
 * and the VMM-side pre-copy of guest memory that uses it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

bool bm_test(const uint64_t *bm, size_t i)
{
	return bm[i / 64] & (1ULL << (i % 64));
}

/*
 * The device reports exactly the guest pages it wrote, once.  On a kernel
 * without DMA logging reports the module must not offer it at all.
 */
int t_dma_logging(struct gpu *g)
{
	const size_t nbits = NPAGES;
	uint64_t bm[BM_WORDS_MAX] = { 0 };
	uint64_t buf_iova, fence_iova;
	char status[256];
	size_t i, set = 0;
	int ret;

	CHECK(mig_text(g->name, "dirty_tracking", status, sizeof(status)) == 0,
	      "no migration/dirty_tracking");
	gpu_setup(g, 16);
	sysbuf(g, VA_SYS, 3 * 4096, &buf_iova);
	sysbuf(g, VA_SYS + (1 << 20), 4096, &fence_iova);
	ret = dma_log_start(g, GUEST_IOVA, guest_size);
	if (!strcmp(status, "none")) {
		CHECK(ret < 0,
		      "DMA logging accepted although the module says none");
		return 0;
	}
	CHECK(!strcmp(status, "device"), "migration/dirty_tracking: %s", status);
	CHECK(ret == 0, "DMA_LOGGING_START: %s", strerror(-ret));
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS + 100 * 4, 2 * 4096, 7, 0);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS + (1 << 20), 1, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "work");
	CHECK(dma_log_report(g, GUEST_IOVA, guest_size, bm) == 0, "REPORT: %s",
	      strerror(errno));
	for (i = 0; i < nbits; i++) {
		uint64_t iova = GUEST_IOVA + i * 4096;
		int dirty = !!(bm[i / 64] & (1ULL << (i % 64)));
		int wrote = (iova >= buf_iova && iova < buf_iova + 3 * 4096) ||
			    iova == fence_iova;

		CHECK(dirty == wrote,
		      "page at IOVA 0x%llx: reported %d, written %d",
		      (unsigned long long)iova, dirty, wrote);
		set += dirty;
	}
	CHECK(set == 4, "%zu pages reported", set);
	memset(bm, 0, nbits / 8);
	CHECK(dma_log_report(g, GUEST_IOVA, guest_size, bm) == 0,
	      "second REPORT");
	for (i = 0; i < nbits / 64; i++)
		CHECK(!bm[i], "pages reported twice without a new write");
	return 0;
}

size_t gpage(uint64_t iova)
{
	return (iova - GUEST_IOVA) / 4096;
}

/* Report all of guest memory into @bm: the number of dirty pages or -errno. */
long report_guest(struct gpu *g, uint64_t *bm)
{
	long n = 0;
	size_t i;
	int ret;

	memset(bm, 0, BM_WORDS * 8);
	ret = dma_log_report(g, GUEST_IOVA, guest_size, bm);
	if (ret)
		return ret;
	for (i = 0; i < BM_WORDS; i++)
		n += __builtin_popcountll(bm[i]);
	return n;
}

/* @bm holds exactly the @n guest pages from @iova. */
int expect_pages(const uint64_t *bm, uint64_t iova, size_t n, const char *what)
{
	size_t i, a = gpage(iova);

	for (i = 0; i < NPAGES; i++) {
		bool want = i >= a && i < a + n;

		CHECK(bm_test(bm, i) == want,
		      "%s: guest page %zu (IOVA 0x%llx) reported %d, expected %d",
		      what, i, GUEST_IOVA + i * 4096ULL, bm_test(bm, i), want);
	}
	return 0;
}

/* One 8-byte FILL into each page @va + idx[i] * 4096, in ring-sized batches. */
int fill_pages(struct gpu *g, int q, uint64_t va, const uint32_t *idx,
	       size_t n, uint32_t val)
{
	size_t i;

	for (i = 0; i < n; i++) {
		gpu_submit(g, q, SIMGPU_OP_FILL, 0,
			   va + (uint64_t)idx[i] * 4096 + 64, 8, val, 0);
		if ((i + 1) % (g->q[q].size - 1) == 0 || i + 1 == n)
			CHECK(gpu_wait_idle(g, q, 60000) == 0,
			      "FILL batch did not finish");
	}
	return 0;
}

int fill_span(struct gpu *g, uint64_t va, uint32_t first, uint32_t n)
{
	uint32_t idx[64], i;

	for (i = 0; i < n && i < 64; i++)
		idx[i] = first + i;
	return fill_pages(g, 0, va, idx, i, first + 1);
}

/* Where the module does not offer DMA logging, the core refuses it. */
int expect_no_logging(struct gpu *g)
{
	CHECK(dma_log_start(g, GUEST_IOVA, guest_size) < 0,
	      "DMA logging accepted although the module says none");
	return 0;
}

/*
 * REPORT the range [@iova, @iova + @len) at 4 KiB into a one-word bitmap
 * with guard words on both sides: the word, or -1 when the report failed
 * or wrote outside the word.
 */
static int64_t cut_report(struct gpu *g, uint64_t iova, uint64_t len)
{
	uint64_t bm[9];
	int i;

	for (i = 0; i < 9; i++)
		bm[i] = 0xa5a5a5a5a5a5a5a5ULL;
	bm[1] = 0;
	if (dma_log_report(g, iova, len, &bm[1])) {
		fprintf(stderr, "    # REPORT 0x%llx+0x%llx: %s\n",
			(unsigned long long)iova, (unsigned long long)len,
			strerror(errno));
		return -1;
	}
	for (i = 0; i < 9; i++) {
		if (i != 1 && bm[i] != 0xa5a5a5a5a5a5a5a5ULL) {
			fprintf(stderr, "    # REPORT 0x%llx+0x%llx wrote word %d past its bitmap: 0x%llx\n",
				(unsigned long long)iova, (unsigned long long)len,
				i - 1, (unsigned long long)bm[i]);
			return -1;
		}
	}
	return (int64_t)(bm[1] & INT64_MAX);
}

/*
 * A REPORT whose range cuts a tracking page (an IOVA or a length that is
 * not page aligned) sets bits only for the range asked, writes nothing
 * past the user's bitmap, and leaves the page dirty for the part not
 * asked: the later report of the whole page still returns it.
 */
int t_dma_log_cut(struct gpu *g)
{
	int mode = device_tracking(g);
	uint64_t bm[BM_WORDS_MAX], buf_iova, p;

	CHECK(mode >= 0, "cannot read migration/dirty_tracking");
	gpu_setup(g, 16);
	sysbuf(g, VA_SYS, 4 * 4096, &buf_iova);
	if (!mode)
		return expect_no_logging(g);
	CHECK(dma_log_start(g, GUEST_IOVA, guest_size) == 0, "START: %s",
	      strerror(errno));
	CHECK(report_guest(g, bm) >= 0, "first REPORT");
	/* The device writes 8 bytes at offset 64 of the buffer's second page. */
	p = buf_iova + 4096;
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS + 4096 + 64, 8, 0x1234, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "FILL");

	/* Half a page, from its middle: one bit, nothing else. */
	CHECK(cut_report(g, p + 2048, 1024) == 1,
	      "a report of half of a dirty page must set exactly its one bit");
	/* The page's first 100 bytes and a 64-page range ending there. */
	CHECK(cut_report(g, p, 100) == 1, "the first bytes of the page");
	CHECK(cut_report(g, p - 63 * 4096 + 100, 63 * 4096) == (int64_t)1 << 62,
	      "a 63-page range ending 100 bytes into the page");
	/* Asked whole at last, the page is reported and then clean. */
	CHECK(cut_report(g, p, 4096) == 1,
	      "a page reported only in part must stay dirty for the rest");
	CHECK(cut_report(g, p, 4096) == 0, "the page reported twice");
	CHECK(cut_report(g, p + 1, 4095) == 0, "the page's tail reported again");
	printf("    # dma_log_cut: reports cutting a dirty page set one bit in place and keep it dirty until asked whole\n");
	dma_log_stop(g);
	return 0;
}

#define RACE_PAGES 2048

/*
 * Reports taken in a loop while the device writes 2,048 distinct pages
 * once each: every page shows up in exactly one report, and nothing else.
 */
int t_dma_log_race(struct gpu *g)
{
	uint64_t bm[BM_WORDS_MAX], buf_iova;
	uint8_t count[NPAGES_MAX] = { 0 };
	uint32_t order[RACE_PAGES], i, busy;
	int mode = device_tracking(g), reports = 0;
	size_t p, a;

	CHECK(mode >= 0, "cannot read migration/dirty_tracking");
	gpu_setup(g, 4096);
	sysbuf(g, VA_SYS, RACE_PAGES * 4096, &buf_iova);
	if (!mode)
		return expect_no_logging(g);
	for (i = 0; i < RACE_PAGES; i++)
		order[i] = i;
	for (i = RACE_PAGES - 1; i > 0; i--) {
		uint32_t j = rnd() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	CHECK(dma_log_start(g, GUEST_IOVA, guest_size) == 0, "START: %s",
	      strerror(errno));
	knob_set(g, "throttle_us", "200");
	for (i = 0; i < RACE_PAGES; i++)
		gpu_submit(g, 0, SIMGPU_OP_FILL, 0,
			   VA_SYS + order[i] * 4096ULL + 8 * (i % 500), 8, i + 1,
			   0);
	do {
		/* Idle before the report: then that report is the last one. */
		busy = qrd(g, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY;
		CHECK(report_guest(g, bm) >= 0, "REPORT: %s", strerror(errno));
		for (p = 0; p < NPAGES; p++)
			count[p] += bm_test(bm, p);
		reports++;
	} while (busy);
	knob_set(g, "throttle_us", "0");
	CHECK(!(qrd(g, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_ERROR),
	      "queue error %u", qrd(g, 0, SIMGPU_QREG_ERROR));
	a = gpage(buf_iova);
	for (p = 0; p < NPAGES; p++) {
		int want = p >= a && p < a + RACE_PAGES;

		CHECK(count[p] == want,
		      "guest page %zu reported %u times in %d reports, written %d times",
		      p, count[p], reports, want);
	}
	CHECK(reports >= 3, "only %d reports raced with the writes", reports);
	printf("    # dma_log_race: %d pages written once each while %d reports ran: each reported exactly once\n",
	       RACE_PAGES, reports);
	dma_log_stop(g);
	return 0;
}

struct reporter {
	struct gpu *g;
	bool stop;	/* accessed with __atomic builtins */
	uint64_t *bm;
	long ok, off, bad;
	int bad_errno;
};

static void *reporter_fn(void *p)
{
	struct reporter *r = p;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		long n = report_guest(r->g, r->bm);

		if (n >= 0) {
			r->ok++;
		} else if (n == -EINVAL) {
			r->off++;	/* between a STOP and the next START */
		} else {
			r->bad++;
			r->bad_errno = -n;
		}
	}
	return NULL;
}

static int unmap_guest(struct gpu *g)
{
	struct vfio_iommu_type1_dma_unmap um = {
		.argsz = sizeof(um), .iova = GUEST_IOVA, .size = guest_size
	};

	return ioctl(g->container, VFIO_IOMMU_UNMAP_DMA, &um) ? -errno : 0;
}

static int map_guest(struct gpu *g)
{
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)g->mem,
		.iova = GUEST_IOVA,
		.size = guest_size,
	};

	return ioctl(g->container, VFIO_IOMMU_MAP_DMA, &map) ? -errno : 0;
}

/* A device reset and a fresh setup, with the buffer mapped again at VA_SYS. */
static void reinit(struct gpu *g, uint64_t buf_iova, uint32_t pages)
{
	gpu_reset(g);
	gpu_setup(g, 64);
	gpu_map_range(g, VA_SYS, buf_iova, pages * 4096ULL, SIMGPU_PTE_WRITE);
}

/* A reset neither ends logging nor loses what was logged before it. */
static int lc_reset(struct gpu *g, uint64_t *bm, uint64_t iova, uint32_t pages)
{
	CHECK(fill_span(g, VA_SYS, 0, 4) == 0, "writes before the reset");
	reinit(g, iova, pages);
	CHECK(report_guest(g, bm) == 4, "report after a reset");
	TRY(expect_pages(bm, iova, 4, "after a reset"));
	CHECK(fill_span(g, VA_SYS, 4, 4) == 0, "writes after the reset");
	CHECK(report_guest(g, bm) == 4, "report of the writes after a reset");
	return expect_pages(bm, iova + 4 * 4096, 4, "after a reset");
}

/* Stopped: what it wrote before is reported, once. */
static int lc_stopped(struct gpu *g, uint64_t *bm, uint64_t iova)
{
	CHECK(fill_span(g, VA_SYS, 8, 2) == 0, "writes before STOP");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	CHECK(report_guest(g, bm) == 2, "report of a stopped device");
	TRY(expect_pages(bm, iova + 8 * 4096, 2, "stopped"));
	CHECK(report_guest(g, bm) == 0, "second report of a stopped device");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	return 0;
}

/*
 * DMA unmap while logging: writes before it are still owed; the device
 * cannot write (or even read its ring) once it is gone, and nothing is
 * reported for that.
 */
static int lc_unmap(struct gpu *g, uint64_t *bm, uint64_t iova, uint32_t pages)
{
	CHECK(fill_span(g, VA_SYS, 10, 2) == 0, "writes before the unmap");
	CHECK(unmap_guest(g) == 0, "unmap: %s", strerror(errno));
	CHECK(report_guest(g, bm) == 2, "report after the unmap");
	TRY(expect_pages(bm, iova + 10 * 4096, 2, "after the unmap"));
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS + 12 * 4096, 8, 1, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 1,
	      "the device ran a ring that is no longer mapped");
	CHECK(qrd(g, 0, SIMGPU_QREG_ERROR) == SIMGPU_ERR_RING_DMA,
	      "queue error %u, expected RING_DMA", qrd(g, 0, SIMGPU_QREG_ERROR));
	CHECK(report_guest(g, bm) == 0, "pages reported that were not written");
	CHECK(map_guest(g) == 0, "map again: %s", strerror(errno));
	reinit(g, iova, pages);
	CHECK(fill_span(g, VA_SYS, 13, 1) == 0, "writes after the remap");
	CHECK(report_guest(g, bm) == 1, "report after the remap");
	return expect_pages(bm, iova + 13 * 4096, 1, "after the remap");
}

/* STOP and START racing with reports, and with the device writing. */
static int lc_race(struct gpu *g, uint64_t *bm, uint64_t iova, uint32_t pages)
{
	uint64_t rbm[BM_WORDS_MAX];
	struct reporter r = { .g = g, .bm = rbm };
	int i, ret = 0;
	pthread_t t;

	wr(g, SIMGPU_REG_DIRTY_BASE_LO, (uint32_t)VA_SYS);
	wr(g, SIMGPU_REG_DIRTY_BASE_HI, VA_SYS >> 32);
	knob_set(g, "dirty_rate", "20000");
	wr(g, SIMGPU_REG_DIRTY_PAGES, pages);
	CHECK(pthread_create(&t, NULL, reporter_fn, &r) == 0, "thread");
	for (i = 0; i < 300 && !ret; i++) {
		ret = dma_log_stop(g);
		if (!ret)
			ret = dma_log_start(g, GUEST_IOVA, guest_size);
	}
	__atomic_store_n(&r.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	wr(g, SIMGPU_REG_DIRTY_PAGES, 0);
	knob_set(g, "dirty_rate", "0");
	CHECK(!ret, "STOP/START %d: %s", i, strerror(-ret));
	CHECK(!r.bad, "%ld reports failed with %s", r.bad, strerror(r.bad_errno));
	CHECK(rd(g, SIMGPU_REG_DIRTY_COUNT) > 0, "the device wrote nothing");
	usleep(50000);
	CHECK(dma_log_stop(g) == 0 && dma_log_start(g, GUEST_IOVA, guest_size) == 0,
	      "restart");
	CHECK(fill_span(g, VA_SYS, 20, 3) == 0, "writes after the race");
	CHECK(report_guest(g, bm) == 3, "report after the race");
	TRY(expect_pages(bm, iova + 20 * 4096, 3, "after the race"));
	printf("    # dma_log_lifecycle: 300 STOP/START against %ld reports (%ld while off), %u device writes\n",
	       r.ok + r.off, r.off, rd(g, SIMGPU_REG_DIRTY_COUNT));
	return 0;
}

/*
 * Logging across what a VMM does meanwhile: a device reset, the device
 * stopped, guest memory unmapped, and logging stopped and restarted while
 * another thread reports.
 */
int t_dma_log_lifecycle(struct gpu *g)
{
	int mode = device_tracking(g), ret;
	const uint32_t pages = 64;
	uint64_t bm[BM_WORDS_MAX], iova;

	CHECK(mode >= 0, "cannot read migration/dirty_tracking");
	gpu_setup(g, 64);
	sysbuf(g, VA_SYS, pages * 4096, &iova);
	if (!mode)
		return expect_no_logging(g);
	/* 4 TiB needs 130 MiB of bitmaps: over the default budget, refused. */
	ret = dma_log_start(g, 1ULL << 40, 4ULL << 40);
	CHECK(ret == -E2BIG, "START over 4 TiB: %d, expected E2BIG", ret);
	CHECK(dma_log_start(g, GUEST_IOVA, guest_size) == 0, "START: %s",
	      strerror(errno));
	TRY(lc_reset(g, bm, iova, pages));
	TRY(lc_stopped(g, bm, iova));
	TRY(lc_unmap(g, bm, iova, pages));
	TRY(lc_race(g, bm, iova, pages));
	dma_log_stop(g);
	return 0;
}

/*
 * A report over a span far larger than anything tracked: what the VFIO
 * core lets through (it checks only that iova + length does not wrap) must
 * cost what was tracked, not what was asked.  Length 2^63 at a page size
 * of 2^62 takes an 8-byte bitmap; a driver that walks the span in steps
 * of its own runs for days.  The report runs in a child: it must end
 * within SPAN_SECONDS, or at least die of SIGKILL, and it reports the
 * guest pages written (all inside its first 2^62 bytes) and clears them.
 */
#define SPAN_SECONDS 60

int t_dma_log_span(struct gpu *g)
{
	uint64_t *bm, buf_iova, words[BM_WORDS_MAX];
	int mode = device_tracking(g), status = 0, waited;
	pid_t pid;

	CHECK(mode >= 0, "cannot read migration/dirty_tracking");
	gpu_setup(g, 16);
	sysbuf(g, VA_SYS, 4 * 4096, &buf_iova);
	if (!mode)
		return expect_no_logging(g);
	bm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(bm != MAP_FAILED, "mmap");
	CHECK(dma_log_start(g, GUEST_IOVA, guest_size) == 0, "START: %s", strerror(errno));
	CHECK(report_guest(g, words) >= 0, "first REPORT");
	CHECK(fill_span(g, VA_SYS, 0, 3) == 0, "writes");
	bm[0] = 0;
	bm[1] = 0xa5a5a5a5a5a5a5a5ULL;
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		struct vfio_device_feature_dma_logging_report r = {
			.iova = 0, .length = 1ULL << 63, .page_size = 1ULL << 62,
			.bitmap = (uintptr_t)bm,
		};

		_exit(gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
					     VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
				  &r, sizeof(r)) ? 2 : 0);
	}
	for (waited = 0; waited < SPAN_SECONDS * 10; waited++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (waited == SPAN_SECONDS * 10) {
		kill(pid, SIGKILL);
		for (waited = 0; waited < 100; waited++) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				return fail("a REPORT of 2^63 bytes at 2^62 a page ran over %d s (it died of SIGKILL)",
					    SPAN_SECONDS);
			usleep(100000);
		}
		return fail("a REPORT of 2^63 bytes at 2^62 a page ran over %d s and ignored SIGKILL for 10 s more",
			    SPAN_SECONDS);
	}
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "the REPORT of 2^63 bytes failed");
	CHECK(bm[0] == 1, "the REPORT of 2^63 bytes set 0x%llx, not its first bit (pages written in it)",
	      (unsigned long long)bm[0]);
	CHECK(bm[1] == 0xa5a5a5a5a5a5a5a5ULL, "the REPORT wrote past its 8-byte bitmap");
	CHECK(report_guest(g, words) == 0, "the pages the huge REPORT returned were not cleared");
	printf("    # dma_log_span: a REPORT of 2^63 bytes at 2^62 a page took %d.%d s, reported and cleared what was written\n",
	       waited / 10, waited % 10);
	munmap(bm, 4096);
	dma_log_stop(g);
	return 0;
}

/* ---- benchmark ---------------------------------------------------------- */

#define BENCH_REPS 5

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Median wall time of a REPORT over [GUEST_IOVA, +@range) with @n pages
 * dirty (every @stride-th page of the buffer at VA_SYS), and of the
 * driver's part of it (log_read_and_clear, from the stats).
 */
static int bench_one(struct gpu *g, uint64_t range, uint32_t n,
		     uint32_t stride, uint64_t *bm, uint64_t *wall,
		     uint64_t *drv, uint64_t *trk, unsigned long long *bytes)
{
	uint64_t w[BENCH_REPS], d[BENCH_REPS], t[BENCH_REPS];
	unsigned long long b0, b1;
	uint32_t *idx = malloc(n * sizeof(*idx)), i;
	size_t words = range / 4096 / 64, k, set;
	unsigned long long ns0, ns1;
	int r;

	for (i = 0; i < n; i++)
		idx[i] = i * stride;
	CHECK(dma_log_start(g, GUEST_IOVA, range) == 0, "START of %llu GiB: %s",
	      (unsigned long long)(range >> 30), strerror(errno));
	CHECK(stat_read(g, "dma_log_bytes", bytes) == 0, "stats");
	for (r = 0; r < BENCH_REPS; r++) {
		uint64_t t0;

		TRY(fill_pages(g, 0, VA_SYS, idx, n, r));
		memset(bm, 0, words * 8);
		stat_read(g, "dma_log_report_ns", &ns0);
		stat_read(g, "dma_log_bitmap_ns", &b0);
		t0 = now_ns();
		CHECK(dma_log_report(g, GUEST_IOVA, range, bm) == 0, "REPORT: %s",
		      strerror(errno));
		w[r] = now_ns() - t0;
		stat_read(g, "dma_log_report_ns", &ns1);
		stat_read(g, "dma_log_bitmap_ns", &b1);
		d[r] = ns1 - ns0;
		t[r] = d[r] - (b1 - b0);
		for (k = 0, set = 0; k < words; k++)
			set += __builtin_popcountll(bm[k]);
		CHECK(set == n, "%zu pages reported, %u written", set, n);
	}
	CHECK(dma_log_stop(g) == 0, "STOP");
	qsort(w, BENCH_REPS, sizeof(w[0]), cmp_u64);
	qsort(d, BENCH_REPS, sizeof(d[0]), cmp_u64);
	qsort(t, BENCH_REPS, sizeof(t[0]), cmp_u64);
	*wall = w[BENCH_REPS / 2];
	*drv = d[BENCH_REPS / 2];
	*trk = t[BENCH_REPS / 2];
	free(idx);
	return 0;
}

/*
 * The dirty tracking benchmark: report cost against the size of the
 * tracked range (same dirty set), and per dirty page against the number
 * of dirty pages, each as a ratio to the smallest case of the same run.
 * Every report is also checked for the exact count.
 */
int t_bench_dirty(struct gpu *g)
{
	static const uint64_t ranges[] = { 1ULL << 30, 16ULL << 30, 64ULL << 30 };
	static const uint32_t counts[] = { 100, 1000, 5000 };
	uint64_t *bm = malloc((64ULL << 30) / 4096 / 8), wall, drv, trk;
	double w0 = 0, d0 = 0, t0 = 0;
	unsigned long long bytes;
	int mode = device_tracking(g);
	size_t i;

	CHECK(mode >= 0, "cannot read migration/dirty_tracking");
	CHECK(bm, "out of memory");
	gpu_setup(g, 1024);
	sysbuf(g, VA_SYS, 10000 * 4096, NULL);
	if (!mode) {
		printf("    # bench: this kernel carries no DMA logging reports (dirty_tracking=none): nothing to measure\n");
		return expect_no_logging(g);
	}
	printf("    # bench dirty tracking: REPORT of the same 1000 dirty pages, median of %d\n",
	       BENCH_REPS);
	printf("    #   ioctl: the whole REPORT; driver: log_read_and_clear; tracker: the driver less the core pinning the user's bitmap (its first iova_bitmap_set())\n");
	printf("    #   range    bitmaps   ioctl_us ratio  driver_us ratio  tracker_us ratio\n");
	for (i = 0; i < ARRAY_SIZE(ranges); i++) {
		TRY(bench_one(g, ranges[i], 1000, 10, bm, &wall, &drv, &trk, &bytes));
		if (!i) {
			w0 = wall;
			d0 = drv;
			t0 = trk;
		}
		printf("    #   %2llu GiB %7llu KiB %9.1f %5.2f %10.1f %5.2f %11.1f %5.2f\n",
		       (unsigned long long)(ranges[i] >> 30), bytes >> 10,
		       wall / 1e3, wall / w0, drv / 1e3, drv / d0, trk / 1e3,
		       trk / t0);
	}
	printf("    # bench dirty tracking: REPORT of a 1 GiB range, cost per dirty page (every other page dirty)\n");
	printf("    #   pages ioctl_ns/page ratio driver_ns/page ratio tracker_ns/page ratio\n");
	for (i = 0; i < ARRAY_SIZE(counts); i++) {
		double wp, dp, tp;

		TRY(bench_one(g, 1ULL << 30, counts[i], 2, bm, &wall, &drv, &trk,
			      &bytes));
		wp = (double)wall / counts[i];
		dp = (double)drv / counts[i];
		tp = (double)trk / counts[i];
		if (!i) {
			w0 = wp;
			d0 = dp;
			t0 = tp;
		}
		printf("    #   %5u %13.1f %5.2f %14.1f %5.2f %15.1f %5.2f\n",
		       counts[i], wp, wp / w0, dp, dp / d0, tp, tp / t0);
	}
	free(bm);
	return 0;
}
