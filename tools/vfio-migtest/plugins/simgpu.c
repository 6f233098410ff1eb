// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest's plug-in for simgpu (an mdev of the simgpu module, or a
 * simgpu-pci VF on gpumig-vfio-pci: the same guest ABI, linux/simgpu.h).
 * It drives the device as a guest driver would, through BAR0 and a ring
 * in its own guest memory, and waits by polling (no interrupts):
 *
 *   load    VRAM's first MiB from a seeded generator (a COPY from guest
 *           memory), and a FENCE value: the queue's fence register;
 *   verify  the registers a guest programmed (page-table root, ring,
 *           enables, the fence) and the MiB of VRAM read back by a COPY;
 *   dirty   a FILL of the given guest pages through the GPU MMU;
 *   reinit  the guest's own function reset (SIMGPU_CTRL_RESET);
 *   lose    a VF's PF reset (its physfn's sysfs reset), as an operator's
 *           or an error recovery's; an mdev cannot lose its state.
 *
 * Its guest memory is laid out the same way on every attach, so the
 * destination's guest memory matches what the restored registers point
 * at, as a VMM's migrated guest memory would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <linux/simgpu.h>

#include "vfio-migtest-plugin.h"

#define MEM_LEN		(4ULL << 20)	/* the plug-in's guest memory */
#define IOVA		VFIO_MIGTEST_PLUGIN_IOVA
#define BUF_IOVA	(IOVA + (2ULL << 20))	/* 1 MiB staging buffer */
#define FENCE_IOVA	(IOVA + (3ULL << 20))	/* the fence slot */
#define RING_ENTRIES	64
#define VA_VRAM		0x40000000ULL
#define VA_BUF		0x10000000ULL
#define VA_FENCE	0x18000000ULL
#define VA_DIRTY	0x80000000ULL
#define PATTERN_LEN	0x100000ULL	/* 1 MiB */
#define TMO_MS		10000

struct sg {
	const struct vfio_migtest_host *h;
	uint64_t bar, cfg;
	uint8_t *mem;
	uint64_t next;		/* bump allocator, IOVA */
	uint64_t root, ring;
	uint32_t tail;
	uint32_t inval;
	bool mapped;
};

static uint32_t rd(struct sg *s, uint32_t reg)
{
	uint32_t v = 0xffffffff;

	if (pread(s->h->device_fd, &v, 4, s->bar + reg) != 4)
		return 0xffffffff;
	return v;
}

static void wr(struct sg *s, uint32_t reg, uint32_t v)
{
	if (pwrite(s->h->device_fd, &v, 4, s->bar + reg) != 4)
		fprintf(stderr, "# simgpu plug-in: BAR0 write 0x%x: %s\n", reg, strerror(errno));
}

#define QREG(r)	(SIMGPU_QUEUE_BASE + (r))	/* queue 0 */

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ULL + t.tv_nsec / 1000000;
}

static void *ptr(struct sg *s, uint64_t iova)
{
	return s->mem + (iova - IOVA);
}

static uint64_t alloc_page(struct sg *s)
{
	uint64_t iova = s->next;

	if (s->next + 4096 > BUF_IOVA)
		return 0;
	s->next += 4096;
	memset(ptr(s, iova), 0, 4096);
	return iova;
}

/* The leaf entry of @va, its tables built on the way: NULL when out of memory. */
static uint64_t *pte(struct sg *s, uint64_t va)
{
	uint64_t table = s->root;
	int level;

	for (level = SIMGPU_PT_ROOT_LEVEL; level > 0; level--) {
		uint64_t *e = (uint64_t *)ptr(s, table) + SIMGPU_PT_INDEX(va, level);

		if (!(*e & SIMGPU_PTE_VALID)) {
			uint64_t t = alloc_page(s);

			if (!t)
				return NULL;
			*e = t | SIMGPU_PTE_VALID;
		}
		table = *e & SIMGPU_PTE_ADDR_MASK;
	}
	return (uint64_t *)ptr(s, table) + SIMGPU_PT_INDEX(va, 0);
}

static int map_range(struct sg *s, uint64_t va, uint64_t target, uint64_t len, uint64_t flags)
{
	uint64_t off, *e;

	for (off = 0; off < len; off += 4096) {
		e = pte(s, va + off);
		if (!e)
			return -ENOMEM;
		*e = ((target + off) & SIMGPU_PTE_ADDR_MASK) | flags | SIMGPU_PTE_VALID |
		     SIMGPU_PTE_WRITE;
	}
	return 0;
}

/* Acknowledged invalidation of the GPU's TLB: 0, or -ETIMEDOUT. */
static int invalidate(struct sg *s)
{
	uint64_t end = now_ms() + TMO_MS;
	uint32_t seq = rd(s, SIMGPU_REG_INVAL_ACK) + 1;

	wr(s, SIMGPU_REG_INVAL_REQ, seq);
	while (rd(s, SIMGPU_REG_INVAL_ACK) != seq) {
		if (now_ms() > end)
			return -ETIMEDOUT;
		usleep(200);
	}
	return 0;
}

/* The same guest memory on every attach: tables, the ring, the mappings. */
static int layout(struct sg *s)
{
	uint64_t vram = rd(s, SIMGPU_REG_VRAM_SIZE_LO) |
			(uint64_t)rd(s, SIMGPU_REG_VRAM_SIZE_HI) << 32;

	if (vram < PATTERN_LEN || vram == 0xffffffffffffffffULL)
		return -ENODEV;
	memset(s->mem, 0, MEM_LEN);
	s->next = IOVA;
	s->root = alloc_page(s);
	s->ring = alloc_page(s);	/* 64 entries of 64 bytes */
	if (map_range(s, VA_VRAM, 0, PATTERN_LEN, SIMGPU_PTE_VRAM) ||
	    map_range(s, VA_BUF, BUF_IOVA, PATTERN_LEN, 0) ||
	    map_range(s, VA_FENCE, FENCE_IOVA, 4096, 0))
		return -ENOMEM;
	return 0;
}

static void submit(struct sg *s, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct simgpu_cmd *c = (struct simgpu_cmd *)ptr(s, s->ring) +
			       (s->tail & (RING_ENTRIES - 1));

	memset(c, 0, sizeof(*c));
	c->opcode = op;
	c->args[0] = a0;
	c->args[1] = a1;
	c->args[2] = a2;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	wr(s, QREG(SIMGPU_QREG_TAIL), ++s->tail);
}

/* The queue consumed everything: 0, -EIO on its error, -ETIMEDOUT. */
static int wait_idle(struct sg *s)
{
	uint64_t end = now_ms() + TMO_MS;

	for (;;) {
		uint32_t st = rd(s, QREG(SIMGPU_QREG_STATUS));

		if (st == 0xffffffff)
			return -ENODEV;
		if (st & SIMGPU_QSTATUS_ERROR) {
			fprintf(stderr, "# simgpu plug-in: queue error %u\n",
				rd(s, QREG(SIMGPU_QREG_ERROR)));
			return -EIO;
		}
		if (!(st & SIMGPU_QSTATUS_BUSY))
			return 0;
		if (now_ms() > end)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

/* A guest driver's bring-up: tables, queue 0's ring, the processor on. */
static int bring_up(struct sg *s)
{
	int ret = layout(s);

	if (ret)
		return ret;
	wr(s, SIMGPU_REG_PT_ROOT_LO, (uint32_t)s->root);
	wr(s, SIMGPU_REG_PT_ROOT_HI, s->root >> 32);
	wr(s, QREG(SIMGPU_QREG_CONTROL), SIMGPU_QCTRL_RESET);
	wr(s, QREG(SIMGPU_QREG_RING_LO), (uint32_t)s->ring);
	wr(s, QREG(SIMGPU_QREG_RING_HI), s->ring >> 32);
	wr(s, QREG(SIMGPU_QREG_RING_SIZE), RING_ENTRIES);
	wr(s, QREG(SIMGPU_QREG_CONTROL), SIMGPU_QCTRL_ENABLE);
	wr(s, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
	s->tail = rd(s, QREG(SIMGPU_QREG_TAIL));
	return invalidate(s);
}

static void *sg_attach(const struct vfio_migtest_host *h)
{
	struct vfio_region_info ri = { .argsz = sizeof(ri) };
	struct sg *s = calloc(1, sizeof(*s));
	uint16_t cmd;

	if (!s)
		return NULL;
	s->h = h;
	ri.index = VFIO_PCI_CONFIG_REGION_INDEX;
	if (ioctl(h->device_fd, VFIO_DEVICE_GET_REGION_INFO, &ri))
		goto err;
	s->cfg = ri.offset;
	ri.argsz = sizeof(ri);
	ri.index = VFIO_PCI_BAR0_REGION_INDEX;
	if (ioctl(h->device_fd, VFIO_DEVICE_GET_REGION_INFO, &ri) || ri.size != SIMGPU_BAR0_SIZE)
		goto err;
	s->bar = ri.offset;
	if (rd(s, SIMGPU_REG_ID) != SIMGPU_ID_MAGIC) {
		errno = ENODEV;
		goto err;
	}
	/* memory decoding and bus mastering, as a guest driver enables them */
	if (pread(h->device_fd, &cmd, 2, s->cfg + PCI_COMMAND) != 2)
		goto err;
	cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	if (pwrite(h->device_fd, &cmd, 2, s->cfg + PCI_COMMAND) != 2)
		goto err;
	s->mem = mmap(NULL, MEM_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->mem == MAP_FAILED) {
		s->mem = NULL;
		goto err;
	}
	errno = -h->map(h, IOVA, s->mem, MEM_LEN);
	if (errno)
		goto err;
	s->mapped = true;
	return s;
err:
	if (s->mem)
		munmap(s->mem, MEM_LEN);
	free(s);
	return NULL;
}

static void sg_detach(void *p)
{
	struct sg *s = p;

	if (s->mapped)
		s->h->unmap(s->h, IOVA, MEM_LEN);
	munmap(s->mem, MEM_LEN);
	free(s);
}

static void pattern(uint32_t seed, uint32_t *w, size_t n)
{
	uint32_t x = seed * 2654435761U + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		w[i] = x;
	}
}

static uint64_t fence_of(uint32_t seed)
{
	return (uint64_t)0x5147 << 48 | seed;
}

static int sg_load(void *p, uint32_t seed)
{
	struct sg *s = p;
	int ret = bring_up(s);

	if (ret)
		return ret;
	pattern(seed, ptr(s, BUF_IOVA), PATTERN_LEN / 4);
	submit(s, SIMGPU_OP_COPY, VA_VRAM, VA_BUF, PATTERN_LEN);
	submit(s, SIMGPU_OP_FENCE, VA_FENCE, fence_of(seed), 0);
	return wait_idle(s);
}

static int sg_verify(void *p, uint32_t seed, char *why, size_t len)
{
	static const struct {
		uint32_t reg;
		const char *name;
	} regs[] = {
		{ SIMGPU_REG_PT_ROOT_LO, "PT_ROOT_LO" },
		{ SIMGPU_REG_PT_ROOT_HI, "PT_ROOT_HI" },
		{ QREG(SIMGPU_QREG_RING_LO), "queue 0 RING_LO" },
		{ QREG(SIMGPU_QREG_RING_HI), "queue 0 RING_HI" },
		{ QREG(SIMGPU_QREG_RING_SIZE), "queue 0 RING_SIZE" },
		{ QREG(SIMGPU_QREG_FENCE_LO), "queue 0 FENCE_LO" },
		{ QREG(SIMGPU_QREG_FENCE_HI), "queue 0 FENCE_HI" },
	};
	struct sg *s = p;
	uint32_t want[7], *got, *exp;
	size_t i;
	int ret = layout(s);

	if (ret)
		return ret;
	want[0] = (uint32_t)s->root;
	want[1] = s->root >> 32;
	want[2] = (uint32_t)s->ring;
	want[3] = s->ring >> 32;
	want[4] = RING_ENTRIES;
	want[5] = (uint32_t)fence_of(seed);
	want[6] = fence_of(seed) >> 32;
	for (i = 0; i < 7; i++) {
		uint32_t v = rd(s, regs[i].reg);

		if (v != want[i]) {
			snprintf(why, len, "%s is 0x%x, the source's was 0x%x", regs[i].name, v,
				 want[i]);
			return 1;
		}
	}
	if (!(rd(s, SIMGPU_REG_CONTROL) & SIMGPU_CTRL_ENABLE) ||
	    !(rd(s, QREG(SIMGPU_QREG_CONTROL)) & SIMGPU_QCTRL_ENABLE)) {
		snprintf(why, len, "the command processor or queue 0 is no longer enabled");
		return 1;
	}
	/* the guest goes on where it was: its next command after the tail */
	s->tail = rd(s, QREG(SIMGPU_QREG_TAIL));
	if (rd(s, QREG(SIMGPU_QREG_HEAD)) != s->tail) {
		snprintf(why, len, "queue 0's head %u is not its tail %u",
			 rd(s, QREG(SIMGPU_QREG_HEAD)), s->tail);
		return 1;
	}
	ret = invalidate(s);
	if (ret)
		return ret;
	submit(s, SIMGPU_OP_COPY, VA_BUF, VA_VRAM, PATTERN_LEN);
	ret = wait_idle(s);
	if (ret)
		return ret;
	exp = malloc(PATTERN_LEN);
	if (!exp)
		return -ENOMEM;
	pattern(seed, exp, PATTERN_LEN / 4);
	got = ptr(s, BUF_IOVA);
	for (i = 0; i < PATTERN_LEN / 4 && got[i] == exp[i]; i++)
		;
	if (i < PATTERN_LEN / 4)
		snprintf(why, len, "VRAM at 0x%zx holds 0x%08x, the source's held 0x%08x", i * 4,
			 got[i], exp[i]);
	free(exp);
	return i < PATTERN_LEN / 4;
}

static int sg_dirty(void *p, uint64_t iova, uint64_t len)
{
	struct sg *s = p;
	int ret;

	if ((iova | len) & 4095 || len > SIMGPU_MAX_XFER)
		return -EINVAL;
	ret = bring_up(s);
	if (!ret)
		ret = map_range(s, VA_DIRTY, iova, len, 0);
	if (!ret)
		ret = invalidate(s);
	if (ret)
		return ret;
	submit(s, SIMGPU_OP_FILL, VA_DIRTY, len, 0xd1d1d1d1);
	return wait_idle(s);
}

static int sg_reinit(void *p)
{
	struct sg *s = p;

	wr(s, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	return bring_up(s);
}

static int sg_lose(void *p)
{
	struct sg *s = p;
	char path[PATH_MAX];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/physfn/reset", s->h->name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno == ENOENT ? -EOPNOTSUPP : -errno;
	if (write(fd, "1", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

const struct vfio_migtest_plugin vfio_migtest_plugin = {
	.abi = VFIO_MIGTEST_PLUGIN_ABI,
	.name = "simgpu",
	.attach = sg_attach,
	.detach = sg_detach,
	.load = sg_load,
	.verify = sg_verify,
	.dirty = sg_dirty,
	.reinit = sg_reinit,
	.lose = sg_lose,
};
