// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: drive a simgpu instance through VFIO as a VMM would and
 * check every result byte for byte.  Prints KTAP.
 *
 *   simgpu-client [-s SCENARIO[,SCENARIO...]] [-l] UUID
 *
 * Each scenario opens the instance afresh (a new tenant), builds page
 * tables and rings in its "guest memory", runs work and checks it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "client.h"

char fail_msg[512];

int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
	va_end(ap);
	return -1;
}

static uint32_t rnd_state = 12345;

uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

void fill_random(void *p, size_t len)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = rnd();
}

uint32_t kernel_word(uint32_t w, uint32_t key, uint32_t it)
{
	return (w ^ key) * 2654435761U + it;
}

/* A guest buffer mapped at @va; returns its host pointer. */
void *sysbuf(struct gpu *g, uint64_t va, size_t len, uint64_t *iova)
{
	uint64_t a = galloc(g, len);

	gpu_map_range(g, va, a, (len + 4095) & ~4095ULL, SIMGPU_PTE_WRITE);
	if (iova)
		*iova = a;
	return gptr(g, a);
}

static int expect_error(struct gpu *g, int q, uint32_t code, const char *what)
{
	int r = gpu_wait_idle(g, q, TMO);

	CHECK(r == 1, "%s: queue did not halt on an error (wait=%d)", what, r);
	CHECK(qrd(g, q, SIMGPU_QREG_ERROR) == code,
	      "%s: queue error %u, expected %u", what,
	      qrd(g, q, SIMGPU_QREG_ERROR), code);
	CHECK(rd(g, SIMGPU_REG_ERROR_CODE) == code,
	      "%s: ERROR_CODE %u, expected %u", what,
	      rd(g, SIMGPU_REG_ERROR_CODE), code);
	CHECK(rd(g, SIMGPU_REG_INT_STATUS) & SIMGPU_INT_ERROR,
	      "%s: no error interrupt status", what);
	CHECK(rd(g, SIMGPU_REG_STATUS) & SIMGPU_STATUS_ERROR,
	      "%s: STATUS lacks ERROR", what);
	/* Recover: clear the interrupt, reset the queue. */
	wr(g, SIMGPU_REG_INT_STATUS, SIMGPU_INT_ERROR);
	qwr(g, q, SIMGPU_QREG_CONTROL,
	    SIMGPU_QCTRL_RESET | SIMGPU_QCTRL_ENABLE);
	g->q[q].tail = 0;
	CHECK(!(qrd(g, q, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_ERROR),
	      "%s: queue reset kept the error", what);
	return 0;
}

/* ---- scenarios ------------------------------------------------------ */

static int t_info(struct gpu *g)
{
	uint16_t vid, did, flags;
	uint8_t cls[3], cap, capid;
	uint32_t bar;

	CHECK(rd(g, SIMGPU_REG_ID) == SIMGPU_ID_MAGIC, "ID register 0x%x",
	      rd(g, SIMGPU_REG_ID));
	CHECK(rd(g, SIMGPU_REG_VERSION) == SIMGPU_ABI_VERSION, "VERSION");
	CHECK(g->nr_queues >= 1 && g->nr_queues <= SIMGPU_MAX_QUEUES,
	      "queues %u", g->nr_queues);
	CHECK(g->vram >= (64ULL << 20), "VRAM %llu",
	      (unsigned long long)g->vram);
	CHECK(!cfg_read(g, PCI_VENDOR_ID, &vid, 2) &&
	      vid == SIMGPU_PCI_VENDOR_ID,
	      "vendor 0x%x", vid);
	CHECK(!cfg_read(g, PCI_DEVICE_ID, &did, 2) &&
	      did == SIMGPU_PCI_DEVICE_ID,
	      "device 0x%x", did);
	CHECK(!cfg_read(g, PCI_CLASS_PROG, cls, 3) &&
	      (cls[0] | cls[1] << 8 | cls[2] << 16) == SIMGPU_PCI_CLASS,
	      "class");
	CHECK(!cfg_read(g, PCI_CAPABILITY_LIST, &cap, 1) && cap,
	      "no capability list");
	CHECK(!cfg_read(g, cap, &capid, 1) && capid == PCI_CAP_ID_MSI,
	      "first capability is not MSI");
	CHECK(!cfg_read(g, cap + PCI_MSI_FLAGS, &flags, 2) &&
	      (flags & PCI_MSI_FLAGS_64BIT),
	      "MSI flags");
	/* BAR sizing as firmware does it. */
	bar = 0xffffffff;
	CHECK(pwrite(g->fd, &bar, 4, g->cfg_off + PCI_BASE_ADDRESS_0) == 4,
	      "BAR0 write");
	CHECK(!cfg_read(g, PCI_BASE_ADDRESS_0, &bar, 4), "BAR0 read");
	CHECK((bar & PCI_BASE_ADDRESS_MEM_MASK) ==
	      (uint32_t)~(SIMGPU_BAR0_SIZE - 1),
	      "BAR0 sizing gave 0x%x", bar);
	CHECK(rd(g, SIMGPU_REG_STATUS) & SIMGPU_STATUS_IDLE,
	      "not idle after open");
	CHECK(rd(g, 0xfffc) == 0, "unknown register reads nonzero");
	return 0;
}

static int t_fill_copy(struct gpu *g)
{
	const size_t len = 300 * 1024 + 12;
	uint8_t *src, *dst, *back;
	size_t i;

	gpu_setup(g, 64);
	src = sysbuf(g, VA_SYS, len, NULL);
	dst = sysbuf(g, VA_SYS + (1 << 20), len, NULL);
	back = sysbuf(g, VA_SYS + (2 << 20), len, NULL);
	gpu_map_range(g, VA_VRAM, 0x200000, 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	fill_random(src, len);

	/* FILL VRAM, COPY VRAM -> guest. */
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 256 * 1024, 0xa5a55a5a, 0);
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS + (1 << 20), VA_VRAM,
		   256 * 1024, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fill/copy did not finish");
	for (i = 0; i < 256 * 1024; i += 4)
		CHECK(*(uint32_t *)(dst + i) == 0xa5a55a5a,
		      "fill pattern wrong at %zu", i);

	/* guest -> VRAM at an odd offset, VRAM -> guest, odd length. */
	gpu_submit(g, 1, SIMGPU_OP_COPY, 0, VA_VRAM + 4093, VA_SYS + 7, len - 7,
		   0);
	gpu_submit(g, 1, SIMGPU_OP_COPY, 0, VA_SYS + (2 << 20) + 7,
		   VA_VRAM + 4093, len - 7, 0);
	CHECK(gpu_wait_idle(g, 1, TMO) == 0, "copy round trip did not finish");
	CHECK(!memcmp(back + 7, src + 7, len - 7), "VRAM round trip differs");
	for (i = 0; i < 7; i++)
		CHECK(back[i] == 0, "copy wrote before its destination");

	/* guest -> guest directly. */
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS + (1 << 20), VA_SYS, len, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "sys copy did not finish");
	CHECK(!memcmp(dst, src, len), "guest-to-guest copy differs");
	return 0;
}

static int t_kernel(struct gpu *g)
{
	const uint32_t words = 16 * 1024, iters = 40, key = 0x1234abcd;
	uint32_t *buf, *expect, *vout;
	uint32_t i, it;

	gpu_setup(g, 16);
	buf = sysbuf(g, VA_SYS, words * 4, NULL);
	vout = sysbuf(g, VA_SYS + (1 << 20), words * 4, NULL);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	expect = malloc(words * 4);
	fill_random(buf, words * 4);
	memcpy(expect, buf, words * 4);
	for (it = 0; it < iters; it++)
		for (i = 0; i < words; i++)
			expect[i] = kernel_word(expect[i], key, it);

	/* In guest memory, and in VRAM. */
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_VRAM, VA_SYS, words * 4, 0);
	gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, words * 4, iters, key);
	gpu_submit(g, 1, SIMGPU_OP_NOP, 0, 0, 0, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0,
	      "kernel on guest memory did not finish");
	CHECK(!memcmp(buf, expect, words * 4),
	      "kernel result in guest memory wrong");
	gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0, VA_VRAM, words * 4, iters, key);
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS + (1 << 20), VA_VRAM,
		   words * 4, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "kernel on VRAM did not finish");
	CHECK(!memcmp(vout, expect, words * 4), "kernel result in VRAM wrong");
	free(expect);
	return 0;
}

static int t_fences_irq(struct gpu *g)
{
	uint64_t *fences;
	uint8_t *src, *dst;
	uint32_t q, n, st, seen = 0;
	uint64_t end;

	gpu_setup(g, 32);
	fences = sysbuf(g, VA_SYS, 4096, NULL);
	src = sysbuf(g, VA_SYS + 0x10000, 64 * 1024, NULL);
	dst = sysbuf(g, VA_SYS + 0x100000, 8 * 64 * 1024, NULL);
	fill_random(src, 64 * 1024);
	for (q = 0; q < g->nr_queues; q++)
		for (n = 1; n <= 5; n++) {
			gpu_submit(g, q, SIMGPU_OP_COPY, 0,
				   VA_SYS + 0x100000 + q * 0x10000,
				   VA_SYS + 0x10000, 64 * 1024, 0);
			gpu_submit(g, q, SIMGPU_OP_FENCE,
				   n == 5 ? SIMGPU_CMD_F_IRQ : 0,
				   VA_SYS + q * 8, (uint64_t)q << 32 | n, 0, 0);
		}
	end = now_ms() + TMO;
	while (seen != (1U << g->nr_queues) - 1) {
		CHECK(now_ms() < end, "interrupts missing: status 0x%x", seen);
		if (gpu_wait_irq(g, 1000) < 0)
			continue;
		st = rd(g, SIMGPU_REG_INT_STATUS);
		wr(g, SIMGPU_REG_INT_STATUS, st);
		CHECK(!(st & SIMGPU_INT_ERROR), "error interrupt: code %u",
		      rd(g, SIMGPU_REG_ERROR_CODE));
		seen |= st & ((1U << g->nr_queues) - 1);
	}
	for (q = 0; q < g->nr_queues; q++) {
		CHECK(fences[q] == ((uint64_t)q << 32 | 5),
		      "queue %u fence 0x%llx", q,
		      (unsigned long long)fences[q]);
		CHECK((qrd(g, q, SIMGPU_QREG_FENCE_LO) |
		       (uint64_t)qrd(g, q, SIMGPU_QREG_FENCE_HI) << 32) ==
		      ((uint64_t)q << 32 | 5),
		      "queue %u FENCE register", q);
		CHECK(qrd(g, q, SIMGPU_QREG_HEAD) == 10, "queue %u head %u", q,
		      qrd(g, q, SIMGPU_QREG_HEAD));
		CHECK(!memcmp(dst + q * 0x10000, src, 64 * 1024),
		      "queue %u copy differs", q);
	}
	/* The counters saw it: 10 commands per queue, interrupts, bytes. */
	{
		unsigned long long cmds = 0, irqs = 0, bytes = 0;

		CHECK(stat_read(g, "commands", &cmds) == 0 &&
		      cmds == 10ULL * g->nr_queues,
		      "stats: %llu commands", cmds);
		CHECK(stat_read(g, "irqs", &irqs) == 0 && irqs >= 1,
		      "stats: %llu irqs", irqs);
		CHECK(stat_read(g, "bytes", &bytes) == 0 &&
		      bytes == 5ULL * 64 * 1024 * g->nr_queues,
		      "stats: %llu bytes", bytes);
	}
	/* Masked: no interrupt, status still set. */
	wr(g, SIMGPU_REG_INT_MASK, 0);
	gpu_wait_irq(g, 0); /* drain what the loop above left */
	wr(g, SIMGPU_REG_INT_STATUS, ~0U);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, SIMGPU_CMD_F_IRQ, VA_SYS, 99, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "masked fence");
	CHECK(gpu_wait_irq(g, 200) < 0, "interrupt while masked");
	CHECK(rd(g, SIMGPU_REG_INT_STATUS) & SIMGPU_INT_QUEUE(0),
	      "status bit not set while masked");
	return 0;
}

/*
 * The IOTLB: a translation changed in memory is used stale until an
 * acknowledged invalidation, and never after it.
 */
static int t_stale_tlb(struct gpu *g)
{
	/* Its own IOTLB slot: the buffers below use slots 0-2 (vpn % 64). */
	const uint64_t win = VA_SYS + 0x800000 + 9 * 4096;
	uint64_t a_iova, b_iova;
	uint32_t *a, *b, *out;

	gpu_setup(g, 16);
	a = sysbuf(g, VA_SYS + 0x100000, 4096, &a_iova);
	b = sysbuf(g, VA_SYS + 0x200000, 4096, &b_iova);
	out = sysbuf(g, VA_SYS, 3 * 4096, NULL);
	gpu_map(g, win, a_iova, 0); /* the window */
	a[0] = 0xaaaaaaaa;
	b[0] = 0xbbbbbbbb;

	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS, win, 4, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "first copy");
	CHECK(out[0] == 0xaaaaaaaa, "first read through the window: 0x%x",
	      out[0]);

	/* Retarget the window in memory only: the device may keep using A. */
	gpu_map(g, win, b_iova, 0);
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS + 4096, win, 4, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "second copy");
	CHECK(out[1024] == 0xaaaaaaaa,
	      "no translation cache? read 0x%x before invalidation", out[1024]);

	CHECK(gpu_invalidate(g, 7, TMO) == 0,
	      "invalidation 7 not acknowledged");
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS + 8192, win, 4, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "third copy");
	CHECK(out[2048] == 0xbbbbbbbb,
	      "stale translation used after acknowledgment: 0x%x", out[2048]);
	CHECK(rd(g, SIMGPU_REG_INT_STATUS) & SIMGPU_INT_INVAL,
	      "no invalidation interrupt status");

	/* Unmap the window entirely: after invalidation, a page fault. */
	*gpu_pte(g, win) = 0;
	CHECK(gpu_invalidate(g, 8, TMO) == 0,
	      "invalidation 8 not acknowledged");
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS, win, 4, 0);
	return expect_error(g, 0, SIMGPU_ERR_PAGE_FAULT,
			    "read of an unmapped window");
}

static int t_bad_ring(struct gpu *g)
{
	uint64_t *fence;

	gpu_setup(g, 16);
	fence = sysbuf(g, VA_SYS, 4096, NULL);
	/* A ring at an IOVA the VMM never mapped. */
	qwr(g, 0, SIMGPU_QREG_RING_LO, 0x10);
	qwr(g, 0, SIMGPU_QREG_RING_HI, 0x7);
	qwr(g, 0, SIMGPU_QREG_TAIL, 1);
	CHECK(gpu_wait_irq(g, TMO) > 0, "no interrupt for the error");
	if (expect_error(g, 0, SIMGPU_ERR_RING_DMA, "unmapped ring"))
		return -1;
	/* A ring size that is not a power of two. */
	qwr(g, 1, SIMGPU_QREG_RING_SIZE, 12);
	qwr(g, 1, SIMGPU_QREG_TAIL, 1);
	if (expect_error(g, 1, SIMGPU_ERR_BAD_RING, "ring size 12"))
		return -1;
	/* A doorbell beyond the ring. */
	qwr(g, 1, SIMGPU_QREG_RING_SIZE, 16);
	qwr(g, 1, SIMGPU_QREG_TAIL, 17);
	if (expect_error(g, 1, SIMGPU_ERR_BAD_RING, "tail past the ring"))
		return -1;
	/* Queue 0, reconfigured, works again. */
	qwr(g, 0, SIMGPU_QREG_RING_LO, (uint32_t)g->q[0].ring_iova);
	qwr(g, 0, SIMGPU_QREG_RING_HI, g->q[0].ring_iova >> 32);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 0x55, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0 && fence[0] == 0x55,
	      "queue did not recover");
	return 0;
}

static int t_faults(struct gpu *g)
{
	gpu_setup(g, 16);
	sysbuf(g, VA_SYS, 4096, NULL);
	/* Unmapped VA. */
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS, 0x7000000000ULL - 4096, 16,
		   0);
	if (expect_error(g, 0, SIMGPU_ERR_PAGE_FAULT, "unmapped VA"))
		return -1;
	/* VA beyond 39 bits. */
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, 1ULL << 40, 4096, 0, 0);
	if (expect_error(g, 0, SIMGPU_ERR_PAGE_FAULT, "VA beyond 39 bits"))
		return -1;
	/* Write to a read-only page. */
	gpu_map(g, VA_SYS + 0x10000, galloc(g, 4096), 0);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS + 0x10000, 64, 1, 0);
	if (expect_error(g, 0, SIMGPU_ERR_WRITE_FAULT,
			 "write to read-only page"))
		return -1;
	CHECK(rd(g, SIMGPU_REG_ERROR_CODE) == 0, "error code not cleared");
	/* A PTE pointing at guest memory the VMM never mapped. */
	gpu_map(g, VA_SYS + 0x20000, 0x3f000000000ULL, SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS + 0x20000, 64, 1, 0);
	if (expect_error(g, 0, SIMGPU_ERR_DMA, "PTE to unmapped IOVA"))
		return -1;
	/* A PTE pointing past VRAM. */
	gpu_map(g, VA_SYS + 0x30000, g->vram,
		SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS + 0x30000, 64, 1, 0);
	if (expect_error(g, 0, SIMGPU_ERR_VRAM_RANGE, "PTE past VRAM"))
		return -1;
	/* A page-table root at an unmapped IOVA. */
	wr(g, SIMGPU_REG_PT_ROOT_LO, 0x1000);
	gpu_invalidate(g, 1, TMO);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS, 64, 1, 0);
	if (expect_error(g, 0, SIMGPU_ERR_PT_DMA, "unmapped page table"))
		return -1;
	return 0;
}

static int t_bad_args(struct gpu *g)
{
	static const struct {
		uint32_t op, flags;
		uint64_t a[4];
		uint32_t err;
		const char *what;
	} bad[] = {
		{ 99, 0, { 0 }, SIMGPU_ERR_BAD_OPCODE, "unknown opcode" },
		{ SIMGPU_OP_FILL,
		  0,
		  { VA_SYS, 0, 0 },
		  SIMGPU_ERR_BAD_ARGS,
		  "fill of 0 bytes" },
		{ SIMGPU_OP_FILL,
		  0,
		  { VA_SYS, SIMGPU_MAX_XFER + 4, 0 },
		  SIMGPU_ERR_BAD_ARGS,
		  "fill too long" },
		{ SIMGPU_OP_FILL,
		  0,
		  { VA_SYS + 1, 4, 0 },
		  SIMGPU_ERR_BAD_ARGS,
		  "fill misaligned" },
		{ SIMGPU_OP_COPY,
		  0,
		  { VA_SYS, VA_SYS, 0 },
		  SIMGPU_ERR_BAD_ARGS,
		  "copy of 0 bytes" },
		{ SIMGPU_OP_COPY,
		  0,
		  { VA_SYS, VA_SYS, ~0ULL },
		  SIMGPU_ERR_BAD_ARGS,
		  "copy of 2^64-1 bytes" },
		{ SIMGPU_OP_KERNEL,
		  0,
		  { VA_SYS, SIMGPU_MAX_KERNEL_BUF + 4, 1, 0 },
		  SIMGPU_ERR_BAD_ARGS,
		  "kernel buffer too big" },
		{ SIMGPU_OP_KERNEL,
		  0,
		  { VA_SYS, 64, 0, 0 },
		  SIMGPU_ERR_BAD_ARGS,
		  "kernel of 0 iterations" },
		{ SIMGPU_OP_KERNEL,
		  0,
		  { VA_SYS, 64, 1, 1ULL << 40 },
		  SIMGPU_ERR_BAD_ARGS,
		  "kernel key > 32 bits" },
		{ SIMGPU_OP_FENCE,
		  0,
		  { VA_SYS + 4, 1 },
		  SIMGPU_ERR_BAD_ARGS,
		  "fence misaligned" },
		{ SIMGPU_OP_FENCE,
		  0x80,
		  { VA_SYS, 1 },
		  SIMGPU_ERR_BAD_ARGS,
		  "fence unknown flag" },
	};
	uint64_t *f;
	size_t i;

	gpu_setup(g, 16);
	f = sysbuf(g, VA_SYS, 4096, NULL);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		gpu_submit(g, 0, bad[i].op, bad[i].flags, bad[i].a[0],
			   bad[i].a[1], bad[i].a[2], bad[i].a[3]);
		if (expect_error(g, 0, bad[i].err, bad[i].what))
			return -1;
	}
	/* Misaligned and out-of-range BAR accesses are refused by the driver. */
	CHECK(pread(g->fd, &i, 2, g->bar_off + 2) < 0,
	      "2-byte BAR read accepted");
	CHECK(pread(g->fd, &i, 4, g->bar_off + SIMGPU_BAR0_SIZE) < 0,
	      "read past BAR0 accepted");
	CHECK(pread(g->fd, &i, 4, g->cfg_off + 256) < 0,
	      "read past config space accepted");
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 3, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0 && f[0] == 3,
	      "device unusable after bad input");
	return 0;
}

static int t_inval_storm(struct gpu *g)
{
	const size_t len = 128 * 1024;
	uint8_t *src, *dst;
	uint32_t i;

	gpu_setup(g, 64);
	src = sysbuf(g, VA_SYS, len, NULL);
	dst = sysbuf(g, VA_SYS + (1 << 20), 32 * len, NULL);
	fill_random(src, len);
	for (i = 0; i < 32; i++)
		gpu_submit(g, i % g->nr_queues, SIMGPU_OP_COPY, 0,
			   VA_SYS + (1 << 20) + i * len, VA_SYS, len, 0);
	for (i = 1; i <= 5000; i++)
		wr(g, SIMGPU_REG_INVAL_REQ, i);
	CHECK(gpu_invalidate(g, 5001, TMO) == 0,
	      "last invalidation not acknowledged");
	for (i = 0; i < g->nr_queues; i++)
		CHECK(gpu_wait_idle(g, i, TMO) == 0,
		      "queue %u stuck after storm", i);
	for (i = 0; i < 32; i++)
		CHECK(!memcmp(dst + i * len, src, len),
		      "copy %u wrong after storm", i);
	return 0;
}

static int t_reset_busy(struct gpu *g)
{
	uint64_t *f;

	gpu_setup(g, 16);
	f = sysbuf(g, VA_SYS + (1 << 20), 4096, NULL);
	sysbuf(g, VA_SYS, 256 * 1024, NULL);
	knob_set(g, "kernel_step_us", "2000");
	gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, 256 * 1024, 100000, 1);
	gpu_submit(g, 1, SIMGPU_OP_KERNEL, 0, VA_SYS, 256 * 1024, 100000, 2);
	usleep(50000);
	CHECK(qrd(g, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "kernel not running");
	CHECK(gpu_reset(g) == 0, "VFIO_DEVICE_RESET: %s", strerror(errno));
	CHECK(rd(g, SIMGPU_REG_CONTROL) == 0 &&
	      qrd(g, 0, SIMGPU_QREG_HEAD) == 0 &&
	      qrd(g, 0, SIMGPU_QREG_CONTROL) == 0 &&
	      rd(g, SIMGPU_REG_PT_ROOT_LO) == 0 &&
	      rd(g, SIMGPU_REG_INT_MASK) == 0,
	      "registers not at reset values");
	CHECK(rd(g, SIMGPU_REG_STATUS) & SIMGPU_STATUS_IDLE,
	      "busy after reset");
	knob_set(g, "kernel_step_us", "0");
	/* Set up again: works. */
	g->pt_root = 0;
	gpu_setup(g, 16);
	gpu_map_range(g, VA_SYS + (1 << 20),
		      (uint64_t)((uint8_t *)f - g->mem) + GUEST_IOVA, 4096,
		      SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS + (1 << 20), 42, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0 && f[0] == 42,
	      "device unusable after reset");
	return 0;
}

/* A tenant fills VRAM and leaves with work queued; the next reads zeroes. */
static int t_scrub(struct gpu *g)
{
	uint8_t *out;
	size_t i;

	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_map_range(g, VA_VRAM + (1 << 20), g->vram - (1 << 20), 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 2 << 20, 0x5ec2e7, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fill");
	knob_set(g, "kernel_step_us", "5000");
	gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0, VA_VRAM, 4096, 100000, 9);
	gpu_submit(g, 1, SIMGPU_OP_KERNEL, 0, VA_VRAM + 8192, 4096, 100000, 9);
	usleep(20000);
	/* Close with the kernels in flight; reopen as a new tenant. */
	{
		char uuid[64];

		snprintf(uuid, sizeof(uuid), "%s", g->uuid);
		gpu_close(g);
		CHECK(gpu_open(g, uuid) == 0,
		      "reopen after close with work queued");
	}
	gpu_setup(g, 16);
	out = sysbuf(g, VA_SYS, 2 << 20, NULL);
	memset(out, 0xff, 2 << 20);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_map_range(g, VA_VRAM + (1 << 20), g->vram - (1 << 20), 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS, VA_VRAM, 2 << 20, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "copy out of VRAM");
	for (i = 0; i < (2 << 20); i++)
		CHECK(out[i] == 0, "new tenant read 0x%02x at VRAM byte %zu",
		      out[i], i);
	CHECK(qrd(g, 0, SIMGPU_QREG_HEAD) == 1, "old tenant's work still ran");
	return 0;
}

static int t_ack_knobs(struct gpu *g)
{
	uint64_t t0, dt;

	gpu_setup(g, 16);
	CHECK(knob_set(g, "ack_drop", "1") == 0, "ack_drop knob");
	wr(g, SIMGPU_REG_INVAL_REQ, 11);
	usleep(300000);
	CHECK(rd(g, SIMGPU_REG_INVAL_ACK) != 11,
	      "dropped invalidation was acknowledged");
	knob_set(g, "ack_drop", "0");
	CHECK(gpu_invalidate(g, 12, TMO) == 0,
	      "invalidation after ack_drop cleared");

	/* throttle_us: every processor step is followed by a pause. */
	CHECK(knob_set(g, "throttle_us", "5000") == 0, "throttle_us knob");
	t0 = now_ms();
	for (dt = 0; dt < 10; dt++)
		gpu_submit(g, 0, SIMGPU_OP_NOP, 0, 0, 0, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "throttled NOPs");
	dt = now_ms() - t0;
	knob_set(g, "throttle_us", "0");
	CHECK(dt >= 45, "10 steps took %llu ms with a 5 ms throttle",
	      (unsigned long long)dt);

	CHECK(knob_set(g, "ack_delay_ms", "300") == 0, "ack_delay_ms knob");
	t0 = now_ms();
	CHECK(gpu_invalidate(g, 13, TMO) == 0, "delayed invalidation");
	dt = now_ms() - t0;
	knob_set(g, "ack_delay_ms", "0");
	CHECK(dt >= 290, "acknowledged after %llu ms despite a 300 ms delay",
	      (unsigned long long)dt);
	return 0;
}

/* With preemption a fence overtakes a long kernel; without, it waits. */
static int t_preempt(struct gpu *g)
{
	uint64_t *f;
	int pass;

	gpu_setup(g, 16);
	CHECK(g->nr_queues >= 2, "needs two queues");
	f = sysbuf(g, VA_SYS + (1 << 20), 4096, NULL);
	sysbuf(g, VA_SYS, 4096, NULL);
	knob_set(g, "kernel_step_us", "10000");
	for (pass = 0; pass < 2; pass++) {
		knob_set(g, "preempt", pass ? "0" : "1");
		f[0] = 0;
		gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, 4096, 40, 3);
		usleep(30000);
		gpu_submit(g, 1, SIMGPU_OP_FENCE, 0, VA_SYS + (1 << 20), 77, 0,
			   0);
		CHECK(gpu_wait_idle(g, 1, TMO) == 0, "fence");
		if (!pass)
			CHECK(qrd(g, 0, SIMGPU_QREG_STATUS) &
			      SIMGPU_QSTATUS_BUSY,
			      "preempt on: the fence waited for the kernel");
		else
			CHECK(!(qrd(g, 0, SIMGPU_QREG_STATUS) &
				SIMGPU_QSTATUS_BUSY),
			      "preempt off: the fence overtook a running kernel");
		CHECK(gpu_wait_idle(g, 0, TMO) == 0, "kernel");
	}
	knob_set(g, "kernel_step_us", "0");
	knob_set(g, "preempt", "1");
	return 0;
}

static int t_workload(struct gpu *g)
{
	uint64_t iova, *pages;
	uint32_t n, i, stamped = 0;

	gpu_setup(g, 16);
	pages = sysbuf(g, VA_SYS, 16 * 4096, &iova);
	wr(g, SIMGPU_REG_DIRTY_BASE_LO, (uint32_t)VA_SYS);
	wr(g, SIMGPU_REG_DIRTY_BASE_HI, VA_SYS >> 32);
	CHECK(knob_set(g, "dirty_rate", "2000") == 0, "dirty_rate knob");
	wr(g, SIMGPU_REG_DIRTY_PAGES, 16);
	usleep(200000);
	wr(g, SIMGPU_REG_DIRTY_PAGES, 0);
	n = rd(g, SIMGPU_REG_DIRTY_COUNT);
	knob_set(g, "dirty_rate", "0");
	CHECK(n >= 16, "background workload wrote only %u pages", n);
	for (i = 0; i < 16; i++) {
		uint64_t *p = pages + i * 512;

		if (p[1] == i && p[0] < n)
			stamped++;
	}
	CHECK(stamped == 16, "only %u of 16 pages carry the workload's stamp",
	      stamped);
	return 0;
}

/* Removal while open: the driver asks through the request eventfd. */
static int t_remove_open(struct gpu *g)
{
	struct pollfd p = { .fd = g->req_efd, .events = POLLIN };
	char path[256];
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		/* The child must not hold the device open through inherited fds. */
		gpu_close(g);
		_exit(dev_remove(g->uuid) ? 1 : 0);
	}
	CHECK(poll(&p, 1, TMO) == 1, "no release request while removing");
	gpu_close(g);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "remove failed");
	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s", g->uuid);
	CHECK(access(path, F_OK) != 0, "device still present after removal");
	return 0;
}

/* ---- migration ---------------------------------------------------------- */

const char *dst_uuid;

int mig_set(struct gpu *g, uint32_t state, int *data_fd)
{
	struct vfio_device_feature_mig_state ms = { .device_state = state,
						    .data_fd = -1 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_SET |
				      VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			      &ms, sizeof(ms));

	if (ret)
		return ret;
	if (data_fd)
		*data_fd = ms.data_fd;
	else if (ms.data_fd >= 0)
		close(ms.data_fd);
	return 0;
}

int64_t mig_data_size(struct gpu *g)
{
	struct vfio_device_feature_mig_data_size ds = { 0 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				      VFIO_DEVICE_FEATURE_MIG_DATA_SIZE,
			      &ds, sizeof(ds));

	return ret ? ret : (int64_t)ds.stop_copy_length;
}

/* Read until EOF (0) or ENOMSG; returns the last read()'s result. */
int mig_read(int fd, struct blob *b)
{
	for (;;) {
		ssize_t n;

		if (b->cap - b->len < (1 << 20)) {
			b->cap = b->cap * 2 + (4 << 20);
			b->p = realloc(b->p, b->cap);
		}
		n = read(fd, b->p + b->len,
			 1 << 20); /* QEMU reads at most 1 MiB */
		if (n <= 0)
			return n < 0 ? -errno : 0;
		b->len += n;
	}
}

int mig_write(int fd, const uint8_t *p, size_t len, size_t piece)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, p + off,
				  len - off < piece ? len - off : piece);

		if (n < 0)
			return -errno;
		off += n;
	}
	return 0;
}

int read_attr(const char *uuid, const char *attr, char *buf, size_t len)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/%s", uuid, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return 0;
}

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

static int t_migrate(struct gpu *src)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };
	struct blob pre = { 0 }, stop = { 0 };
	uint32_t *kbuf, *expect, *dk;
	uint8_t *data, *dout;
	struct gpu dst;
	int fd = -1, rfd = -1, ret, rounds = 0;
	uint64_t first_initial;
	int64_t est;
	size_t i;

	CHECK(dst_uuid, "needs a destination (-d UUID)");
	mig_workload(src, &kbuf, &expect, &data);
	usleep(100000);
	CHECK(qrd(src, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "kernel not in flight");

	/* Pre-copy while the device runs. */
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0 && fd >= 0,
	      "PRE_COPY");
	CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0,
	      "PRECOPY_INFO: %s", strerror(errno));
	first_initial = info.initial_bytes;
	CHECK(first_initial > 0, "initial_bytes is 0 at the start");
	do {
		ret = mig_read(fd, &pre);
		CHECK(ret == -ENOMSG, "pre-copy read ended with %d, not ENOMSG",
		      ret);
		CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0,
		      "PRECOPY_INFO");
		rounds++;
	} while (info.initial_bytes && rounds < 50);
	CHECK(info.initial_bytes == 0, "initial_bytes never reached 0");
	CHECK(pre.len >= first_initial,
	      "read %zu bytes, initial_bytes said %llu", pre.len,
	      (unsigned long long)first_initial);

	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) == 0,
	      "PRE_COPY_P2P");
	est = mig_data_size(src);
	CHECK(est > 0, "MIG_DATA_SIZE: %lld", (long long)est);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0,
	      "STOP_COPY");
	CHECK(qrd(src, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "the kernel finished before the stop: nothing in flight to migrate");
	ret = mig_read(fd, &stop);
	CHECK(ret == 0, "stop-copy read: %d", ret);
	CHECK(stop.len < pre.len,
	      "stop-copy (%zu) not smaller than pre-copy (%zu)", stop.len,
	      pre.len);
	CHECK((int64_t)stop.len <= est + 3 * (65536 + 40) &&
	      (int64_t)stop.len + 3 * (65536 + 40) >= est,
	      "MIG_DATA_SIZE %lld, STOP_COPY produced %zu", (long long)est,
	      stop.len);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	close(fd);
	printf("    # migrate: %d pre-copy rounds, %zu pre-copy bytes, ",
	       rounds, pre.len);
	printf("%zu stop-copy bytes (estimate %lld)\n", stop.len, (long long)est);

	/* Destination: same guest memory (the VMM copies it), then the device. */
	CHECK(gpu_open(&dst, dst_uuid) == 0, "open destination");
	memcpy(dst.mem, src->mem, GUEST_SIZE);
	/* The VMM's own view of its guest moves with it. */
	dst.next = src->next;
	dst.pt_root = src->pt_root;
	for (i = 0; i < src->nr_queues; i++) {
		dst.q[i] = src->q[i];
		dst.q[i].ring = gptr(&dst, src->q[i].ring_iova);
	}
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_STOP, NULL) == 0, "dst STOP");
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RESUMING, &rfd) == 0,
	      "dst RESUMING");
	CHECK(mig_write(rfd, pre.p, pre.len, 1 << 20) == 0,
	      "write pre-copy data");
	CHECK(mig_write(rfd, stop.p, stop.len, 77777) == 0,
	      "write stop-copy data");
	close(rfd);
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_STOP, NULL) == 0,
	      "dst RESUMING -> STOP: %s", strerror(errno));
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
	      "dst RUNNING");

	/* What the devices say they saw of it. */
	{
		char st[512];
		long long r = -1, pb = -1, sb = -1, rb = -1;
		const char *p;

		CHECK(read_attr(src->uuid, "migration/status", st, sizeof(st)) == 0 &&
		      (p = strstr(st, "precopy_rounds=")) &&
		      sscanf(p, "precopy_rounds=%lld precopy_bytes=%lld stopcopy_bytes=%lld",
			     &r, &pb, &sb) == 3,
		      "source status: %s", st);
		CHECK(r >= 1 && r <= rounds && pb == (long long)pre.len &&
		      sb == (long long)stop.len,
		      "source counted %lld rounds, %lld + %lld bytes; read %d, %zu + %zu",
		      r, pb, sb, rounds, pre.len, stop.len);
		CHECK(read_attr(dst_uuid, "migration/status", st, sizeof(st)) == 0 &&
		      (p = strstr(st, "resumed_bytes=")) &&
		      sscanf(p, "resumed_bytes=%lld", &rb) == 1,
		      "destination status: %s", st);
		CHECK(rb == (long long)(pre.len + stop.len),
		      "destination counted %lld bytes, %zu written", rb,
		      pre.len + stop.len);
	}

	/* The work finishes on the destination with exactly the right results. */
	CHECK(gpu_wait_idle(&dst, 0, 30000) == 0,
	      "kernel did not finish on the destination");
	CHECK(gpu_wait_idle(&dst, 1, 30000) == 0,
	      "queue 1 did not finish on the destination");
	dk = gptr(&dst, GUEST_IOVA + ((uint8_t *)kbuf - src->mem));
	for (i = 0; i < MIG_WORDS; i++)
		CHECK(dk[i] == expect[i],
		      "kernel word %zu: 0x%x, expected 0x%x", i, dk[i],
		      expect[i]);
	{
		uint8_t *srcdata = gptr(&dst, GUEST_IOVA + (data - src->mem));

		/* Fences and the VRAM round trip, read back through the device. */
		dout = sysbuf(&dst, VA_SYS + (8 << 20), 1 << 20, NULL);
		gpu_submit(&dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20),
			   VA_VRAM, 1 << 20, 0);
		CHECK(gpu_wait_idle(&dst, 1, 30000) == 0, "read back VRAM");
		CHECK(!memcmp(dout, srcdata, 1 << 20),
		      "VRAM contents differ after migration");
		gpu_submit(&dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20),
			   VA_VRAM + (2 << 20), 4096, 0);
		CHECK(gpu_wait_idle(&dst, 1, 30000) == 0, "read back fill");
		CHECK(*(uint32_t *)dout == 0x12345678,
		      "fill lost in migration");
	}
	CHECK(qrd(&dst, 0, SIMGPU_QREG_FENCE_LO) == 0xf00d,
	      "queue 0 fence 0x%x", qrd(&dst, 0, SIMGPU_QREG_FENCE_LO));
	gpu_close(&dst);
	free(expect);
	free(pre.p);
	free(stop.p);
	return 0;
}

static int t_incompatible(struct gpu *src)
{
	struct blob pre = { 0 };
	struct gpu dst;
	char status[256];
	int fd = -1, rfd = -1, ret;

	CHECK(dst_uuid, "needs a destination (-d UUID)");
	gpu_setup(src, 16);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(mig_read(fd, &pre) == -ENOMSG, "pre-copy read");
	CHECK(gpu_open(&dst, dst_uuid) == 0, "open destination");
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_STOP, NULL) == 0, "dst STOP");
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RESUMING, &rfd) == 0,
	      "dst RESUMING");
	ret = mig_write(rfd, pre.p, pre.len, 1 << 20);
	CHECK(ret == -EOPNOTSUPP, "incompatible stream accepted (%d)", ret);
	CHECK(read_attr(dst_uuid, "migration/status", status, sizeof(status)) ==
		      0 &&
	      strstr(status, "mismatch"),
	      "status does not name the mismatch: %s", status);
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RUNNING, NULL) < 0,
	      "destination ran a refused stream");
	close(rfd);
	gpu_close(&dst);
	/* The source never stopped: back to RUNNING, still working. */
	CHECK(mig_set(src, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
	      "source back to RUNNING");
	close(fd);
	sysbuf(src, VA_SYS, 4096, NULL);
	gpu_submit(src, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 5, 0, 0);
	CHECK(gpu_wait_idle(src, 0, TMO) == 0, "source stopped working");
	free(pre.p);
	return 0;
}

/*
 * Each fault knob makes the stop fail cleanly: lost acknowledgments, an
 * acknowledgment later than the 1 s bound, a kernel that cannot be
 * preempted and outlasts the 2 s drain.  The source keeps running.
 */
static int t_stop_fails(struct gpu *g)
{
	static const struct {
		const char *knob, *val, *reset;
		int err;
	} faults[] = {
		{ "ack_drop", "1", "0", -ETIMEDOUT },
		{ "ack_delay_ms", "1500", "0", -ETIMEDOUT },
		{ "preempt", "0", "1", -EBUSY },
	};
	uint64_t *f;
	size_t i;
	int ret;

	gpu_setup(g, 16);
	f = sysbuf(g, VA_SYS, 4096, NULL);
	sysbuf(g, VA_SYS + (1 << 20), 4096, NULL);
	for (i = 0; i < ARRAY_SIZE(faults); i++) {
		knob_set(g, faults[i].knob, faults[i].val);
		if (faults[i].err == -EBUSY) {
			/* 400 iterations at 10 ms: 4 s, longer than the drain bound. */
			knob_set(g, "kernel_step_us", "10000");
			gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0,
				   VA_SYS + (1 << 20), 64, 400, 1);
			usleep(50000);
		}
		ret = mig_set(g, VFIO_DEVICE_STATE_STOP, NULL);
		knob_set(g, faults[i].knob, faults[i].reset);
		knob_set(g, "kernel_step_us", "0");
		CHECK(ret == faults[i].err,
		      "%s=%s: STOP returned %d, expected %d", faults[i].knob,
		      faults[i].val, ret, faults[i].err);
		CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
		      "back to RUNNING");
		gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 6 + i, 0, 0);
		CHECK(gpu_wait_idle(g, 0, 60000) == 0 && f[0] == 6 + i,
		      "%s: device stopped working", faults[i].knob);
	}
	return 0;
}

/* VFIO_DEVICE_RESET in the middle of pre-copy: fd ends, state RUNNING. */
static int t_reset_precopy(struct gpu *g)
{
	struct vfio_device_feature_mig_state ms = { 0 };
	struct blob b = { 0 };
	uint64_t *f;
	int fd = -1;

	gpu_setup(g, 16);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	{
		uint8_t first[64];

		CHECK(read(fd, first, sizeof(first)) == sizeof(first),
		      "first pre-copy bytes");
	}
	CHECK(gpu_reset(g) == 0, "reset");
	CHECK(gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				     VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			  &ms, sizeof(ms)) == 0,
	      "get state");
	CHECK(ms.device_state == VFIO_DEVICE_STATE_RUNNING,
	      "state %u after reset", ms.device_state);
	CHECK(mig_read(fd, &b) == -ENODEV,
	      "data fd still readable after reset");
	close(fd);
	free(b.p);
	/* A fresh migration can start, and the device works. */
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0,
	      "PRE_COPY again");
	close(fd); /* closing the fd early ends nothing but the fd */
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	g->pt_root = 0;
	gpu_setup(g, 16);
	f = sysbuf(g, VA_SYS, 4096, NULL);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 9, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0 && f[0] == 9,
	      "device unusable after reset");
	return 0;
}

/* The device fd closed with a migration data fd still open. */
static int t_close_mid_migration(struct gpu *g)
{
	char uuid[64];
	uint8_t b[64];
	int fd = -1;

	snprintf(uuid, sizeof(uuid), "%s", g->uuid);
	gpu_setup(g, 16);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(read(fd, b, sizeof(b)) == sizeof(b), "pre-copy bytes");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY");
	gpu_close(g);
	/* The data fd outlived its device: it ends, it does not crash. */
	CHECK(read(fd, b, sizeof(b)) < 0 && errno == ENODEV,
	      "data fd after close: %s", strerror(errno));
	close(fd);
	CHECK(gpu_open(g, uuid) == 0, "reopen after closing mid-migration");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0 &&
	      mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
	      "a fresh state machine");
	return 0;
}

/* Capture a whole stream (STOP_COPY) of @g into @b. */
static int capture(struct gpu *g, struct blob *b)
{
	int fd = -1, ret;

	if (mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, &fd))
		return -1;
	ret = mig_read(fd, b);
	close(fd);
	mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL);
	return ret;
}

/* Offer @len bytes of @p to @uuid in RESUMING; 0 if it ran, else <0. */
static int offer(const char *uuid, const uint8_t *p, size_t len, int *werr)
{
	struct gpu d;
	int rfd = -1, ret;

	if (gpu_open(&d, uuid))
		return -100;
	ret = mig_set(&d, VFIO_DEVICE_STATE_STOP, NULL);
	if (!ret)
		ret = mig_set(&d, VFIO_DEVICE_STATE_RESUMING, &rfd);
	if (!ret) {
		*werr = mig_write(rfd, p, len, 4096);
		close(rfd);
		ret = mig_set(&d, VFIO_DEVICE_STATE_RUNNING, NULL);
	}
	gpu_close(&d);
	return ret;
}

/* Hostile streams into RESUMING: each refused, the device never runs. */
static int t_hostile(struct gpu *g)
{
	struct blob b = { 0 };
	uint8_t *m;
	size_t off, sec2, sec3;
	uint32_t len;
	int werr, ret, i;

	CHECK(dst_uuid, "needs a destination (-d UUID)");
	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 1 << 20, 0x77, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fill");
	CHECK(capture(g, &b) == 0 && b.len > 1000, "capture");
	m = malloc(b.len + 64);

	/* The intact stream is accepted (control). */
	ret = offer(dst_uuid, b.p, b.len, &werr);
	CHECK(ret == 0 && werr == 0, "intact stream refused: %d/%d", ret, werr);

	/* Truncated at several places. */
	for (i = 1; i < 8; i++) {
		werr = 0;
		ret = offer(dst_uuid, b.p, b.len * i / 8, &werr);
		CHECK(ret < 0, "stream truncated at %zu accepted",
		      b.len * i / 8);
	}
	/* One byte flipped, in the header, a chunk, the arch state, the end. */
	for (i = 0; i < 4; i++) {
		const size_t offs[] = { 30, 200, b.len - 200, b.len - 5 };

		off = offs[i];
		memcpy(m, b.p, b.len);
		m[off] ^= 0x40;
		werr = 0;
		ret = offer(dst_uuid, m, b.len, &werr);
		CHECK(ret < 0 && werr < 0, "corruption at %zu accepted (%d/%d)",
		      off, ret, werr);
	}
	/*
	 * A section claiming 4 GiB: the header CRC catches it first, which is
	 * the point: a length is never trusted.
	 */
	memcpy(m, b.p, b.len);
	len = 0xffffffff;
	memcpy(m + 24 + 80 + 12, &len, 4);
	werr = 0;
	ret = offer(dst_uuid, m, b.len, &werr);
	CHECK(ret < 0 && werr == -EBADMSG, "oversized section: %d/%d", ret,
	      werr);
	/* Sections 2 and 3 swapped (both intact): sequence numbers catch it. */
	sec2 = 24 + 80;
	memcpy(&len, b.p + sec2 + 12, 4);
	sec3 = sec2 + 24 + len;
	memcpy(&len, b.p + sec3 + 12, 4);
	memcpy(m, b.p, sec2);
	memcpy(m + sec2, b.p + sec3, 24 + len);
	memcpy(m + sec2 + 24 + len, b.p + sec2, sec3 - sec2);
	memcpy(m + sec3 + 24 + len, b.p + sec3 + 24 + len,
	       b.len - (sec3 + 24 + len));
	werr = 0;
	ret = offer(dst_uuid, m, b.len, &werr);
	CHECK(ret < 0 && werr == -EINVAL, "reordered sections: %d/%d", ret,
	      werr);
	/* Garbage. */
	fill_random(m, 4096);
	werr = 0;
	ret = offer(dst_uuid, m, 4096, &werr);
	CHECK(ret < 0 && werr < 0, "garbage accepted");
	/* And the destination still takes a good stream afterwards. */
	ret = offer(dst_uuid, b.p, b.len, &werr);
	CHECK(ret == 0 && werr == 0,
	      "intact stream refused after the hostile ones");
	free(m);
	free(b.p);
	return 0;
}

/* Back and forth 20 times with a kernel in flight; the result is exact. */
static int t_pingpong(struct gpu *a)
{
	const uint32_t words = 4096, iters = 2000, key = 0x5eed;
	struct gpu b, *from = a, *to = &b;
	uint32_t *kbuf, *expect, *res;
	uint64_t koff;
	uint32_t i, it;
	int n;

	CHECK(dst_uuid, "needs a destination (-d UUID)");
	gpu_setup(a, 16);
	kbuf = sysbuf(a, VA_SYS, words * 4, NULL);
	koff = (uint8_t *)kbuf - a->mem;
	fill_random(kbuf, words * 4);
	expect = malloc(words * 4);
	memcpy(expect, kbuf, words * 4);
	for (it = 0; it < iters; it++)
		for (i = 0; i < words; i++)
			expect[i] = kernel_word(expect[i], key, it);
	knob_set(a, "kernel_step_us", "1000");
	gpu_submit(a, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, words * 4, iters, key);
	CHECK(gpu_open(&b, dst_uuid) == 0, "open second instance");
	knob_set(&b, "kernel_step_us", "1000");

	for (n = 0; n < 20; n++) {
		struct blob s = { 0 };
		int fd = -1, rfd = -1;

		CHECK(mig_set(from, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0,
		      "round %d PRE_COPY", n);
		CHECK(mig_read(fd, &s) == -ENOMSG, "round %d pre-copy", n);
		CHECK(mig_set(from, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0,
		      "round %d STOP_COPY", n);
		CHECK(mig_read(fd, &s) == 0, "round %d stop-copy", n);
		close(fd);
		CHECK(mig_set(from, VFIO_DEVICE_STATE_STOP, NULL) == 0,
		      "round %d STOP", n);
		memcpy(to->mem, from->mem, GUEST_SIZE);
		to->next = from->next;
		to->pt_root = from->pt_root;
		CHECK(mig_set(to, VFIO_DEVICE_STATE_STOP, NULL) == 0 &&
		      !mig_set(to, VFIO_DEVICE_STATE_RESUMING, &rfd),
		      "round %d RESUMING", n);
		CHECK(mig_write(rfd, s.p, s.len, 1 << 20) == 0,
		      "round %d write", n);
		close(rfd);
		CHECK(mig_set(to, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
		      "round %d RUNNING", n);
		/* The old side is reset, as a VMM would before reusing it. */
		CHECK(gpu_reset(from) == 0, "round %d reset source", n);
		free(s.p);
		usleep(20000);
		from = to;
		to = from == a ? &b : a;
	}
	CHECK(gpu_wait_idle(from, 0, 120000) == 0,
	      "kernel did not finish after 20 migrations");
	res = (uint32_t *)(from->mem + koff);
	for (i = 0; i < words; i++)
		CHECK(res[i] == expect[i], "word %u wrong after 20 migrations",
		      i);
	knob_set(&b, "kernel_step_us", "0");
	knob_set(a, "kernel_step_us", "0");
	gpu_close(&b);
	free(expect);
	return 0;
}

/* Teardown that cannot verify the device quarantines it. */
static int t_quarantine(struct gpu *g)
{
	char uuid[64], status[256];
	struct gpu again;

	snprintf(uuid, sizeof(uuid), "%s", g->uuid);
	gpu_setup(g, 16);
	sysbuf(g, VA_SYS, 4096, NULL);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 1, 0,
		   0); /* a cached translation */
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fence");
	knob_set(g, "ack_drop", "1");
	gpu_close(g);
	CHECK(read_attr(uuid, "migration/status", status, sizeof(status)) ==
		      0 &&
	      strstr(status, "quarantined"),
	      "not quarantined: %s", status);
	CHECK(gpu_open(&again, uuid) != 0, "a quarantined instance was reused");
	{
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path),
			 "/sys/kernel/debug/simgpu/%s/unquarantine", uuid);
		f = fopen(path, "w");
		CHECK(f && fputs("1", f) >= 0 && fclose(f) == 0,
		      "unquarantine");
	}
	CHECK(gpu_open(g, uuid) == 0, "reopen after the quarantine was lifted");
	knob_set(g, "ack_drop", "0");
	return 0;
}

static const struct scenario {
	const char *name;
	int (*fn)(struct gpu *g);
} scenarios[] = {
	{ "info", t_info },
	{ "fill_copy", t_fill_copy },
	{ "kernel", t_kernel },
	{ "fences_irq", t_fences_irq },
	{ "stale_tlb", t_stale_tlb },
	{ "bad_ring", t_bad_ring },
	{ "faults", t_faults },
	{ "bad_args", t_bad_args },
	{ "inval_storm", t_inval_storm },
	{ "reset_busy", t_reset_busy },
	{ "scrub", t_scrub },
	{ "ack_knobs", t_ack_knobs },
	{ "preempt", t_preempt },
	{ "workload", t_workload },
	{ "dma_logging", t_dma_logging },
	{ "dma_log_race", t_dma_log_race },
	{ "dma_log_lifecycle", t_dma_log_lifecycle },
	{ "dirty_precopy", t_dirty_precopy }, /* needs -d */
	{ "migrate", t_migrate }, /* needs -d */
	{ "incompatible", t_incompatible }, /* needs -d of another type */
	{ "stop_fails", t_stop_fails },
	{ "reset_precopy", t_reset_precopy },
	{ "close_mid_migration", t_close_mid_migration },
	{ "hostile", t_hostile }, /* needs -d */
	{ "pingpong", t_pingpong }, /* needs -d */
	{ "quarantine", t_quarantine },
	{ "remove_open", t_remove_open }, /* destroys the instance */
	{ "bench_dirty", t_bench_dirty }, /* the benchmark, not a test */
};

#define NR_SCENARIOS ARRAY_SIZE(scenarios)

static bool selected(const char *list, const char *name)
{
	char *dup, *tok, *save;
	bool hit = false;

	if (!list)
		return strcmp(name, "remove_open") && strcmp(name, "migrate") &&
		       strcmp(name, "incompatible") &&
		       strcmp(name, "hostile") && strcmp(name, "pingpong") &&
		       strcmp(name, "dirty_precopy") &&
		       strcmp(name, "bench_dirty");
	dup = strdup(list);
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, name))
			hit = true;
	free(dup);
	return hit;
}

int main(int argc, char **argv)
{
	const char *list = NULL, *suite = "simgpu";
	unsigned int i, n = 0, failed = 0;
	int opt;

	while ((opt = getopt(argc, argv, "s:n:d:l")) != -1) {
		switch (opt) {
		case 'd':
			dst_uuid = optarg;
			break;
		case 's':
			list = optarg;
			break;
		case 'n':
			suite = optarg;
			break;
		case 'l':
			for (i = 0; i < NR_SCENARIOS; i++)
				printf("%s\n", scenarios[i].name);
			return 0;
		default:
			fprintf(stderr,
				"usage: %s [-s SCENARIO,...] [-n SUITE] [-d DST] [-l] UUID\n",
				argv[0]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr,
			"usage: %s [-s SCENARIO,...] [-n SUITE] [-l] UUID\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n",
	       suite);
	for (i = 0; i < NR_SCENARIOS; i++) {
		struct gpu g;
		int ret;

		if (!selected(list, scenarios[i].name))
			continue;
		n++;
		fail_msg[0] = 0;
		if (gpu_open(&g, argv[optind])) {
			ret = fail("cannot open %s", argv[optind]);
		} else {
			ret = scenarios[i].fn(&g);
			gpu_close(&g);
		}
		if (ret) {
			failed++;
			printf("    # %s: %s\n    not ok %u %s\n",
			       scenarios[i].name, fail_msg, n,
			       scenarios[i].name);
		} else {
			printf("    ok %u %s\n", n, scenarios[i].name);
		}
	}
	printf("    1..%u\n%s 1 %s\n", n, failed ? "not ok" : "ok", suite);
	return failed ? 1 : 0;
}
