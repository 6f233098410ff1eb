// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: scenarios of the device itself, as a guest driver would
 * use it: copies, fills, kernels, fences and interrupts, the MMU and its
 * translation cache, bad input, reset, scrub for the next tenant, the
 * fault knobs, preemption, the background writer, removal while open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/gpumig_stream.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "client.h"

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

int t_info(struct gpu *g)
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
	/* An interrupt capability: MSI (64-bit) on an mdev, MSI-X on a VF. */
	CHECK(!cfg_read(g, PCI_CAPABILITY_LIST, &cap, 1) && cap,
	      "no capability list");
	for (capid = 0; cap && capid != PCI_CAP_ID_MSI && capid != PCI_CAP_ID_MSIX;) {
		CHECK(!cfg_read(g, cap, &capid, 1), "capability at 0x%x", cap);
		if (capid != PCI_CAP_ID_MSI && capid != PCI_CAP_ID_MSIX)
			CHECK(!cfg_read(g, cap + PCI_CAP_LIST_NEXT, &cap, 1), "next capability");
	}
	CHECK(cap, "neither MSI nor MSI-X capability");
	CHECK(capid == PCI_CAP_ID_MSIX ||
	      (!cfg_read(g, cap + PCI_MSI_FLAGS, &flags, 2) && (flags & PCI_MSI_FLAGS_64BIT)),
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

int t_fill_copy(struct gpu *g)
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

int t_kernel(struct gpu *g)
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

/* Every queue's last fence raised its interrupt; no error interrupt came. */
static int wait_queue_irqs(struct gpu *g)
{
	uint32_t st, seen = 0, all = (1U << g->nr_queues) - 1;
	uint64_t end = now_ms() + TMO;

	while (seen != all) {
		CHECK(now_ms() < end, "interrupts missing: status 0x%x", seen);
		if (gpu_wait_irq(g, 1000) < 0)
			continue;
		st = rd(g, SIMGPU_REG_INT_STATUS);
		wr(g, SIMGPU_REG_INT_STATUS, st);
		CHECK(!(st & SIMGPU_INT_ERROR), "error interrupt: code %u",
		      rd(g, SIMGPU_REG_ERROR_CODE));
		seen |= st & all;
	}
	return 0;
}

/* The counters saw it: 10 commands per queue, interrupts, bytes. */
static int fence_stats(struct gpu *g)
{
	unsigned long long cmds = 0, irqs = 0, bytes = 0;

	CHECK(stat_read(g, "commands", &cmds) == 0 && cmds == 10ULL * g->nr_queues,
	      "stats: %llu commands", cmds);
	CHECK(stat_read(g, "irqs", &irqs) == 0 && irqs >= 1, "stats: %llu irqs", irqs);
	CHECK(stat_read(g, "bytes", &bytes) == 0 &&
	      bytes == 5ULL * 64 * 1024 * g->nr_queues,
	      "stats: %llu bytes", bytes);
	return 0;
}

/* Copies and fences on every queue; the last fence of each interrupts. */
int t_fences_irq(struct gpu *g)
{
	uint64_t *fences;
	uint8_t *src, *dst;
	uint32_t q, n;

	gpu_setup(g, 32);
	fences = sysbuf(g, VA_SYS, 4096, NULL);
	src = sysbuf(g, VA_SYS + 0x10000, 64 * 1024, NULL);
	dst = sysbuf(g, VA_SYS + 0x100000, 8 * 64 * 1024, NULL);
	fill_random(src, 64 * 1024);
	for (q = 0; q < g->nr_queues; q++)
		for (n = 1; n <= 5; n++) {
			gpu_submit(g, q, SIMGPU_OP_COPY, 0, VA_SYS + 0x100000 + q * 0x10000,
				   VA_SYS + 0x10000, 64 * 1024, 0);
			gpu_submit(g, q, SIMGPU_OP_FENCE, n == 5 ? SIMGPU_CMD_F_IRQ : 0,
				   VA_SYS + q * 8, (uint64_t)q << 32 | n, 0, 0);
		}
	TRY(wait_queue_irqs(g));
	for (q = 0; q < g->nr_queues; q++) {
		CHECK(fences[q] == ((uint64_t)q << 32 | 5), "queue %u fence 0x%llx", q,
		      (unsigned long long)fences[q]);
		CHECK((qrd(g, q, SIMGPU_QREG_FENCE_LO) |
		       (uint64_t)qrd(g, q, SIMGPU_QREG_FENCE_HI) << 32) ==
		      ((uint64_t)q << 32 | 5), "queue %u FENCE register", q);
		CHECK(qrd(g, q, SIMGPU_QREG_HEAD) == 10, "queue %u head %u", q,
		      qrd(g, q, SIMGPU_QREG_HEAD));
		CHECK(!memcmp(dst + q * 0x10000, src, 64 * 1024), "queue %u copy differs", q);
	}
	TRY(fence_stats(g));
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
int t_stale_tlb(struct gpu *g)
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

int t_bad_ring(struct gpu *g)
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

int t_faults(struct gpu *g)
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

/* Commands the device must refuse, and the error it must give. */
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

int t_bad_args(struct gpu *g)
{
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
	/*
	 * Out-of-range BAR and config accesses are refused; misaligned BAR
	 * accesses too where the driver emulates BAR0 (an mdev; on a PCI
	 * function they reach the hardware, which ignores them).
	 */
	CHECK(g->pci || pread(g->fd, &i, 2, g->bar_off + 2) < 0,
	      "2-byte BAR read accepted");
	CHECK(pread(g->fd, &i, 4, g->bar_off + SIMGPU_BAR0_SIZE) < 0,
	      "read past BAR0 accepted");
	CHECK(pread(g->fd, &i, 4, g->cfg_off + g->cfg_size) < 0,
	      "read past config space accepted");
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 3, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0 && f[0] == 3,
	      "device unusable after bad input");
	return 0;
}

int t_inval_storm(struct gpu *g)
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

int t_reset_busy(struct gpu *g)
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
int t_scrub(struct gpu *g)
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

		snprintf(uuid, sizeof(uuid), "%s", g->name);
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

int t_ack_knobs(struct gpu *g)
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
int t_preempt(struct gpu *g)
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

int t_workload(struct gpu *g)
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
int t_remove_open(struct gpu *g)
{
	struct pollfd p = { .fd = g->req_efd, .events = POLLIN };
	char path[256];
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		/* The child must not hold the device open through inherited fds. */
		gpu_close(g);
		_exit(dev_remove(g->name) ? 1 : 0);
	}
	CHECK(poll(&p, 1, TMO) == 1, "no release request while removing");
	gpu_close(g);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "remove failed");
	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s", g->name);
	CHECK(access(path, F_OK) != 0, "device still present after removal");
	return 0;
}
