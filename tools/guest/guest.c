// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-guest: a freestanding 32-bit multiboot program that QEMU boots
 * with -kernel.  It finds every simgpu on the PCI bus (up to MAX_GPUS),
 * builds each its own GPU page tables and rings in its own memory and
 * runs GPU work on all of them at once, forever: a kernel, DMA copies
 * through VRAM into its memory, fills, fences, and the device's
 * background writer; every result is checked by the CPU.  Each device's
 * work differs (its index is in the kernel's key and the fill pattern),
 * so a device's DMA that lands in another's buffers is a wrong result.
 * Progress and failures go to the debug console (isa-debugcon, port
 * 0xe9) and to the first serial port (COM1, 0x3f8, which libvirt's
 * domains have), one line each:
 *
 *   gpumig-guest: gpus N
 *   gpumig-guest: iter N ok
 *   gpumig-guest: FAIL iter N: gpuK: what
 *   gpumig-guest: gpuK: device reset under iter N: set up again
 *
 * An iteration is ok when every device's results are.
 * The last one is what a driver does after a GPU reset it did not ask
 * for (QEMU resets the device when a migration fails at stop-copy): the
 * iteration's results are void, not wrong, and it is run again.
 *
 * The test harness can also ask the guest to re-initialise its GPU, as a
 * driver does after a hang or a reconfiguration: it writes a generation
 * number into mailbox[0] (whose address the guest prints at start) through
 * QEMU's memory; between iterations the guest resets the GPU, sets it up
 * again, loads RCHUNKS * 64 KiB of VRAM with that generation's data, sets
 * mailbox[1] and says (the first device only, as for the hot workload)
 *
 *   gpumig-guest: reinit G done
 *
 * From then on every iteration also checks one chunk of that VRAM.
 *
 * And it can make the workload hot: a page count (a power of two from 16
 * to 1024) written into mailbox[2] moves the device's background writer
 * from its system-memory pages to that many VRAM pages from 2 MiB on
 * (mapped at VA_HOT), which it then rewrites at the host's dirty_rate; the
 * guest says "hot N on", and every iteration checks 16 of those pages' stamps
 * in turn.
 *
 * And it can reset one device: K + 1 written into mailbox[3] has the guest
 * reset gpuK through its PCI Express function-level reset (a VF's; "gpuK:
 * function-level reset done") or, without one (an mdev), through its
 * CONTROL register ("gpuK: control-register reset done"), set it up again
 * and clear mailbox[3].
 *
 * With two or more devices that have a VRAM aperture (BAR2: a VF has
 * one, an mdev has none), each of them also writes into the next one's
 * VRAM through that aperture every iteration, a peer-to-peer copy: device
 * A copies 64 KiB from its own VRAM to B's BAR2 (QEMU maps an assigned
 * device's BARs for the other devices' DMA), then B copies that VRAM out
 * into memory and the CPU checks it, and the window A wrote
 * the iteration before, which must still be there (so a migration between
 * the two iterations must have carried a peer's write).  The guest says
 *
 *   gpumig-guest: peers N: gpuA -> gpuB, ...
 *
 * once at start (N is 0 without two such devices).
 *
 * Guest physical addresses are IOVAs (QEMU maps guest RAM 1:1 for the
 * device), and paging is off, so a pointer is what the device sees.
 */
#include <linux/simgpu.h>

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;

#define VA_SYS		0x10000000ULL	/* the dma area below */
#define VA_VRAM		0x40000000ULL	/* the first VRAM pages */
#define RCHUNKS		24		/* re-initialised VRAM: 1.5 MiB */
#define VA_REGION	(VA_VRAM + 2 * CBYTES)
#define VRAM_MAPPED	(2 * CBYTES + RCHUNKS * CBYTES)
#define KWORDS		4096		/* kernel buffer: 16 KiB */
#define KITERS		16
#define CBYTES		65536		/* DMA copy size */
#define STAMP_PAGES	64
#define VA_HOT		(VA_VRAM + (2 << 20))	/* the hot working set: VRAM 2 MiB on */
#define HOT_MAX		1024		/* its pages at most: 4 MiB */
#define HOT_CHUNK	(CBYTES / 4096)	/* its pages checked per iteration */
#define RING		64
#define POLL_LIMIT	20000000U
#define MAX_GPUS	4
/*
 * Peer copies: VA_PEER maps the next device's aperture at PEER_VRAM (two
 * windows, one per iteration in turn), VA_PEER_IN this device's own VRAM
 * there (what its predecessor wrote), VA_PEER_OUT the VRAM a device sends
 * from.  All three in one last-level table, clear of the hot set.
 */
#define PEER_VRAM	(8 << 20)
#define VA_PEER		(VA_VRAM + (6 << 20))
#define VA_PEER_IN	(VA_PEER + 2 * CBYTES)
#define VA_PEER_OUT	(VA_PEER + 4 * CBYTES)

/* Everything the device reads or writes, page aligned, mapped at VA_SYS. */
struct dma_area {
	struct simgpu_cmd ring[2][RING];
	u32 kbuf[KWORDS];
	u32 csrc[CBYTES / 4];
	u32 cdst[CBYTES / 4];
	u32 vcheck[CBYTES / 4];
	u32 rcheck[CBYTES / 4];
	u64 hcheck[CBYTES / 8];
	u32 fill[1024];
	u32 psrc[CBYTES / 4];		/* what this device sends its peer */
	u32 pcheck[2][CBYTES / 4];	/* its own peer windows, copied out */
	u64 fence[SIMGPU_PAGE_SIZE / sizeof(u64)];
	u64 stamps[STAMP_PAGES][SIMGPU_PAGE_SIZE / sizeof(u64)];
} __attribute__((aligned(4096)));

#define DMA_PAGES	((sizeof(struct dma_area) + 4095) / 4096)
#define VA_OF(field)	(VA_SYS + __builtin_offsetof(struct dma_area, field))

/* What a device sees of the guest: its own buffers and page tables. */
struct gpu_mem {
	struct dma_area dma;
	u64 pt_root[SIMGPU_PT_ENTRIES];
	u64 pt_l1[2][SIMGPU_PT_ENTRIES];
	/* system memory's table, then VRAM's: VA_VRAM's 2 MiB, the hot set's 4, the peers' */
	u64 pt_l0[5][SIMGPU_PT_ENTRIES];
} __attribute__((aligned(4096)));

/* One simgpu, as the driver keeps it. */
struct gpu {
	struct gpu_mem *m;
	u32 *bar;		/* BAR0, accessed with rd()/wr() */
	u64 bar2;		/* the VRAM aperture's bus address, or 0 (an mdev) */
	struct gpu *peer;	/* the device this one writes into, or none */
	struct gpu *from;	/* the device that writes into this one */
	u32 peer_in;		/* the iteration whose window from wrote last, or 0 */
	u32 idx;
	u32 bus, dev;		/* where it is, function 0 */
	u32 tail[2];
	/* what was written into each ring slot, to tell a stale ring page */
	struct simgpu_cmd shadow[2][RING];
	u32 expect[KWORDS];
	u32 vpattern[CBYTES / 4];
	u32 hot_pages;		/* the writer rewrites the hot set's pages, or 0 */
	u32 region_gen;		/* the generation the VRAM region holds, or 0 */
	u32 key, pat;		/* this iteration's kernel key and fill pattern */
	int state;		/* this iteration's: 0, 1 reset (again), -1 failed */
};

static struct gpu_mem mem[MAX_GPUS];
static struct gpu gpus[MAX_GPUS];
static u32 ngpus;
/*
 * The harness's generation; the one loaded; the hot pages it asks for;
 * a device to reset (its index + 1: a function-level reset, then set up
 * again; the guest clears it when done).
 */
static u32 mailbox[4];

static inline void port_out8(unsigned short port, u8 v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void port_out32(unsigned short port, u32 v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline u32 port_in32(unsigned short port)
{
	u32 v;

	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

/* Either port may be absent: a write to it goes nowhere. */
static void putc(char c)
{
	port_out8(0xe9, c);
	port_out8(0x3f8, c);	/* THR: the 16550 as reset sends at once */
}

static void puts(const char *s)
{
	while (*s)
		putc(*s++);
}

static void putu(u32 v, u32 base)
{
	char b[12];
	int i = 0;

	do {
		u32 d = v % base;

		b[i++] = d < 10 ? '0' + d : 'a' + d - 10;
		v /= base;
	} while (v);
	while (i)
		putc(b[--i]);
}

/* A tiny printf: %u, %x, %s. */
static void say(const char *fmt, ...)
{
	__builtin_va_list ap;

	__builtin_va_start(ap, fmt);
	puts("gpumig-guest: ");
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			putc(*fmt);
			continue;
		}
		switch (*++fmt) {
		case 'u':
			putu(__builtin_va_arg(ap, u32), 10);
			break;
		case 'x':
			putu(__builtin_va_arg(ap, u32), 16);
			break;
		case 's':
			puts(__builtin_va_arg(ap, const char *));
			break;
		default:
			putc(*fmt);
		}
	}
	putc('\n');
	__builtin_va_end(ap);
}

static u32 pci_read(u32 bus, u32 dev, u32 fn, u32 off)
{
	port_out32(0xcf8, 0x80000000 | bus << 16 | dev << 11 | fn << 8 | (off & 0xfc));
	return port_in32(0xcfc);
}

static void pci_write(u32 bus, u32 dev, u32 fn, u32 off, u32 v)
{
	port_out32(0xcf8, 0x80000000 | bus << 16 | dev << 11 | fn << 8 | (off & 0xfc));
	port_out32(0xcfc, v);
}

/* MMIO: one 32-bit access each, never merged or elided. */
static u32 rd(struct gpu *g, u32 reg)
{
	u32 v;

	asm volatile("movl %1, %0" : "=r"(v) : "m"(g->bar[reg / 4]) : "memory");
	return v;
}

static void wr(struct gpu *g, u32 reg, u32 v)
{
	asm volatile("movl %1, %0" : "=m"(g->bar[reg / 4]) : "r"(v) : "memory");
}

static u32 qreg(int q, u32 reg)
{
	return SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + reg;
}

static u32 rng = 1;

static u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static u32 kernel_word(u32 w, u32 key, u32 it)
{
	return (w ^ key) * 2654435761U + it;
}

static void map(struct gpu *g, u64 va, u64 target, u64 flags)
{
	struct gpu_mem *m = g->m;
	u32 i2 = SIMGPU_PT_INDEX(va, 2), i1 = SIMGPU_PT_INDEX(va, 1), i0 = SIMGPU_PT_INDEX(va, 0);
	u32 t = i2 ? 1 : 0;	/* one table chain per region used */
	u32 l = t ? 1 + i1 : 0;	/* VRAM: one last-level table per 2 MiB */

	m->pt_root[i2] = (u32)m->pt_l1[t] | SIMGPU_PTE_VALID;
	m->pt_l1[t][i1] = (u32)m->pt_l0[l] | SIMGPU_PTE_VALID;
	m->pt_l0[l][i0] = target | flags | SIMGPU_PTE_VALID;
}

static void submit(struct gpu *g, int q, u32 op, u64 a0, u64 a1, u64 a2, u64 a3)
{
	u32 *tail = g->tail;
	struct simgpu_cmd *c = &g->m->dma.ring[q][tail[q] % RING];
	int i;

	c->opcode = op;
	c->flags = 0;
	c->args[0] = a0;
	c->args[1] = a1;
	c->args[2] = a2;
	c->args[3] = a3;
	for (i = 4; i < 6; i++)
		c->args[i] = 0;
	c->reserved = 0;
	for (i = 0; i < 6; i++)
		g->shadow[q][tail[q] % RING].args[i] = c->args[i];
	g->shadow[q][tail[q] % RING].opcode = op;
	asm volatile("" : : : "memory");
	tail[q]++;
	wr(g, qreg(q, SIMGPU_QREG_TAIL), tail[q]);
}

static u32 pt_root_iova(struct gpu *g)
{
	return (u32)g->m->pt_root;
}

/* The device was reset behind our back: not enabled, or tables forgotten. */
static int device_lost(struct gpu *g)
{
	return !(rd(g, SIMGPU_REG_CONTROL) & SIMGPU_CTRL_ENABLE) ||
	       rd(g, SIMGPU_REG_PT_ROOT_LO) != pt_root_iova(g);
}

/*
 * After a queue error: the slot at the device's head and the one before,
 * as memory holds them against what was written there (a difference is a
 * ring page older than the driver's last write).
 */
static void ring_report(struct gpu *g, int q, u32 head)
{
	u32 k;

	for (k = head - 1; k != head + 1; k++) {
		const struct simgpu_cmd *c = &g->m->dma.ring[q][k % RING];
		const struct simgpu_cmd *w = &g->shadow[q][k % RING];

		say("  gpu%u ring %u slot %u: op %u a0 0x%x a1 0x%x a2 0x%x; written op %u a0 0x%x a1 0x%x a2 0x%x",
		    g->idx, q, k % RING, c->opcode, (u32)c->args[0], (u32)c->args[1],
		    (u32)c->args[2], w->opcode, (u32)w->args[0], (u32)w->args[1], (u32)w->args[2]);
	}
}

static int wait_idle(struct gpu *g, u32 n)
{
	u32 polls = 0, q;

	for (q = 0; q < 2; q++) {
		for (;;) {
			u32 st = rd(g, qreg(q, SIMGPU_QREG_STATUS));

			if (device_lost(g))
				return 1;
			if (st & SIMGPU_QSTATUS_ERROR) {
				/* with the ring's state, which says who lost track */
				say("FAIL iter %u: gpu%u: queue %u error %u at 0x%x", n, g->idx,
				    q, rd(g, qreg(q, SIMGPU_QREG_ERROR)),
				    rd(g, SIMGPU_REG_ERROR_ADDR_LO));
				say("  gpu%u queue %u: head %u tail %u size %u, driver's tail %u",
				    g->idx, q, rd(g, qreg(q, SIMGPU_QREG_HEAD)),
				    rd(g, qreg(q, SIMGPU_QREG_TAIL)),
				    rd(g, qreg(q, SIMGPU_QREG_RING_SIZE)), g->tail[q]);
				ring_report(g, q, rd(g, qreg(q, SIMGPU_QREG_HEAD)));
				return -1;
			}
			if (!(st & SIMGPU_QSTATUS_BUSY))
				break;
			if (++polls == POLL_LIMIT) {
				say("FAIL iter %u: gpu%u: queue %u still busy", n, g->idx, q);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * The devices with an aperture, in a ring: each writes into the next.
 * Says who writes into whom ("peers 0" without two of them).
 */
static void find_peers(void)
{
	struct gpu *first = 0, *prev = 0;
	u32 k, n = 0;

	for (k = 0; k < ngpus; k++) {
		struct gpu *g = &gpus[k];

		if (!g->bar2)
			continue;
		if (prev)
			prev->peer = g;
		else
			first = g;
		prev = g;
		n++;
	}
	if (n < 2) {
		if (first)
			first->peer = 0;
		say("peers 0");
		return;
	}
	prev->peer = first;
	puts("gpumig-guest: peers ");
	putu(n, 10);
	puts(":");
	for (k = 0; k < ngpus; k++) {
		struct gpu *g = &gpus[k];

		if (!g->peer)
			continue;
		g->peer->from = g;
		puts(g == first ? " gpu" : ", gpu");
		putu(g->idx, 10);
		puts(" -> gpu");
		putu(g->peer->idx, 10);
	}
	putc('\n');
}

/* Every simgpu on the first buses, in bus order: gpu0, gpu1... */
static void find_gpus(void)
{
	u32 bus, dev;

	for (bus = 0; bus < 4; bus++)
		for (dev = 0; dev < 32 && ngpus < MAX_GPUS; dev++) {
			u32 id = pci_read(bus, dev, 0, 0);
			struct gpu *g = &gpus[ngpus];

			if (id != (SIMGPU_PCI_DEVICE_ID << 16 | SIMGPU_PCI_VENDOR_ID))
				continue;
			g->bar = (u32 *)(pci_read(bus, dev, 0, 0x10) & ~0xfU);
			if (!g->bar)
				continue;
			g->bar2 = pci_read(bus, dev, 0, 0x18);
			if ((g->bar2 & 0x7) == 0x4)	/* memory, 64-bit */
				g->bar2 = (g->bar2 & ~0xfULL) |
					  (u64)pci_read(bus, dev, 0, 0x1c) << 32;
			else
				g->bar2 = 0;
			/* memory space and bus master */
			pci_write(bus, dev, 0, 0x04, pci_read(bus, dev, 0, 0x04) | 0x6);
			g->bus = bus;
			g->dev = dev;
			g->m = &mem[ngpus];
			g->idx = ngpus++;
			say("gpu%u: simgpu at %x:%x.0, BAR0 0x%x", g->idx, bus, dev, (u32)g->bar);
		}
	say("gpus %u", ngpus);
	find_peers();
}

/* Return: 0, 1 when the device was reset again meanwhile, -1 on failure. */
static int gpu_setup(struct gpu *g)
{
	struct dma_area *dma = &g->m->dma;
	u32 i, q;
	int r;

	if (rd(g, SIMGPU_REG_ID) != SIMGPU_ID_MAGIC) {
		say("FAIL setup: gpu%u: ID 0x%x", g->idx, rd(g, SIMGPU_REG_ID));
		return -1;
	}
	say("gpu%u: queues %u, VRAM %u MiB", g->idx, rd(g, SIMGPU_REG_NUM_QUEUES),
	    rd(g, SIMGPU_REG_VRAM_SIZE_LO) >> 20 | rd(g, SIMGPU_REG_VRAM_SIZE_HI) << 12);
	for (i = 0; i < DMA_PAGES; i++)
		map(g, VA_SYS + i * 4096ULL, (u32)dma + i * 4096, SIMGPU_PTE_WRITE);
	for (i = 0; i < VRAM_MAPPED / 4096; i++)
		map(g, VA_VRAM + i * 4096ULL, i * 4096, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	/* the peer's aperture, and this device's own VRAM for the peer copies */
	for (i = 0; g->peer && i < 2 * CBYTES / 4096; i++)
		map(g, VA_PEER + i * 4096ULL, g->peer->bar2 + PEER_VRAM + i * 4096ULL,
		    SIMGPU_PTE_WRITE);
	for (i = 0; g->from && i < 2 * CBYTES / 4096; i++)
		map(g, VA_PEER_IN + i * 4096ULL, PEER_VRAM + i * 4096ULL,
		    SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	for (i = 0; g->peer && i < CBYTES / 4096; i++)
		map(g, VA_PEER_OUT + i * 4096ULL, PEER_VRAM + 2 * CBYTES + i * 4096ULL,
		    SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	g->peer_in = 0;	/* a reset may have cleared what the peer wrote */
	wr(g, SIMGPU_REG_PT_ROOT_LO, pt_root_iova(g));
	wr(g, SIMGPU_REG_PT_ROOT_HI, 0);
	for (q = 0; q < 2; q++) {
		g->tail[q] = 0;
		wr(g, qreg(q, SIMGPU_QREG_RING_LO), (u32)dma->ring[q]);
		wr(g, qreg(q, SIMGPU_QREG_RING_HI), 0);
		wr(g, qreg(q, SIMGPU_QREG_RING_SIZE), RING);
		/* clears an error left by a doorbell that met a reset device */
		wr(g, qreg(q, SIMGPU_QREG_CONTROL), SIMGPU_QCTRL_RESET | SIMGPU_QCTRL_ENABLE);
	}
	wr(g, SIMGPU_REG_INT_MASK, 0);
	wr(g, SIMGPU_REG_INT_STATUS, 0xffffffff);
	wr(g, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);

	/* VRAM keeps a pattern for the whole run: checked every iteration. */
	rng = 0xabcdef + g->idx;
	for (i = 0; i < CBYTES / 4; i++) {
		g->vpattern[i] = rnd();
		dma->csrc[i] = g->vpattern[i];
	}
	submit(g, 1, SIMGPU_OP_COPY, VA_VRAM + CBYTES, VA_OF(csrc), CBYTES, 0);
	r = wait_idle(g, 0);
	if (r > 0) {
		/* QEMU resets a device more than once when a stop-copy fails */
		say("gpu%u: device reset during setup: set up again", g->idx);
		return 1;
	}
	if (r) {
		say("FAIL setup: gpu%u: VRAM pattern copy", g->idx);
		return -1;
	}

	/*
	 * The device's background writer stamps its pages all along: in
	 * system memory, or the hot set in VRAM once the harness asked.
	 */
	for (i = 0; i < g->hot_pages; i++)
		map(g, VA_HOT + i * 4096ULL, (2 << 20) + i * 4096ULL,
		    SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	wr(g, SIMGPU_REG_DIRTY_BASE_LO, g->hot_pages ? (u32)VA_HOT : (u32)VA_OF(stamps));
	wr(g, SIMGPU_REG_DIRTY_BASE_HI, 0);
	wr(g, SIMGPU_REG_DIRTY_PAGES, g->hot_pages ? g->hot_pages : STAMP_PAGES);
	return 0;
}

/*
 * The harness asks for a reset of one device, as a driver recovering it
 * does: a function-level reset through its PCI Express capability (a VF
 * has one; QEMU passes it to the kernel's vfio-pci, which resets the
 * function), then the setup again.  A device without one (an mdev: its
 * config space has no PCI Express capability) is reset through its own
 * CONTROL register instead, the reset its driver has.
 */
static int reset_gpu(struct gpu *g)
{
	u32 pos = pci_read(g->bus, g->dev, 0, 0x34) & 0xfc, hops = 0, i;
	int r;

	while (pos && hops++ < 48) {
		u32 hdr = pci_read(g->bus, g->dev, 0, pos);

		if ((hdr & 0xff) == 0x10)	/* PCI Express */
			break;
		pos = hdr >> 8 & 0xfc;
	}
	if (!pos || hops > 48 || !(pci_read(g->bus, g->dev, 0, pos + 4) & 1U << 28)) {
		wr(g, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
		say("gpu%u: control-register reset done", g->idx);
	} else {
		/* Device Control is the low half of the dword at +8: BCR_FLR, bit 15 */
		pci_write(g->bus, g->dev, 0, pos + 8,
			  (pci_read(g->bus, g->dev, 0, pos + 8) & 0xffff) | 1U << 15);
		for (i = 0; rd(g, SIMGPU_REG_ID) != SIMGPU_ID_MAGIC; i++)
			if (i > POLL_LIMIT) {
				say("FAIL reset: gpu%u never came back", g->idx);
				return -1;
			}
		say("gpu%u: function-level reset done", g->idx);
	}
	for (i = 0; (r = gpu_setup(g)) > 0 && i < 5; i++)
		;
	return r ? -1 : 0;
}

/*
 * The harness asks for a hot workload: the writer moves to @pages of VRAM
 * (mapped, the device's translations invalidated, then pointed there).
 */
static int hot_on(struct gpu *g, u32 pages)
{
	u32 seq, i;

	/* a power of two: the stamp's count, cut to 32 bits, still names its page */
	if (pages > HOT_MAX || pages < HOT_CHUNK || (pages & (pages - 1))) {
		say("FAIL hot: %u pages asked: a power of two from %u to %u", pages, HOT_CHUNK,
		    HOT_MAX);
		mailbox[2] = g->hot_pages;
		return -1;
	}
	for (i = 0; i < pages; i++)
		map(g, VA_HOT + i * 4096ULL, (2 << 20) + i * 4096ULL,
		    SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	seq = rd(g, SIMGPU_REG_INVAL_ACK) + 1;
	wr(g, SIMGPU_REG_INVAL_REQ, seq);
	for (i = 0; rd(g, SIMGPU_REG_INVAL_ACK) != seq; i++)
		if (i > POLL_LIMIT) {
			say("FAIL hot: invalidation %u never acknowledged", seq);
			return -1;
		}
	g->hot_pages = pages;
	wr(g, SIMGPU_REG_DIRTY_BASE_LO, (u32)VA_HOT);
	wr(g, SIMGPU_REG_DIRTY_PAGES, pages);
	say("hot %u on", pages);
	return 0;
}

/* Word @i of chunk @c of generation @gen's VRAM region: never all zero. */
static u32 region_word(u32 gen, u32 c, u32 i)
{
	u32 x = (gen * 0x10001U + c) * 2654435761U + i * 0x9e3779b9U + 1;

	x ^= x >> 15;
	x *= 0x2c1b3c6dU;
	x ^= x >> 12;
	return x | 1;
}

/*
 * What a driver does when it re-initialises its GPU: a reset through the
 * control register, the setup again, and its working set loaded.
 */
static int reinit_gpu(struct gpu *g, u32 gen)
{
	struct dma_area *dma = &g->m->dma;
	u32 c, i;

	wr(g, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	if (gpu_setup(g))
		return -1;
	for (c = 0; c < RCHUNKS; c++) {
		for (i = 0; i < CBYTES / 4; i++)
			dma->csrc[i] = region_word(gen, c, i);
		submit(g, 1, SIMGPU_OP_COPY, VA_REGION + c * CBYTES, VA_OF(csrc), CBYTES, 0);
		if (wait_idle(g, 0)) {
			say("FAIL reinit %u: chunk %u", gen, c);
			return -1;
		}
	}
	g->region_gen = gen;
	mailbox[1] = gen;
	say("reinit %u done", gen);
	return 0;
}

static int check_words(struct gpu *g, u32 n, const char *what, const u32 *got,
		       const u32 *want, u32 words)
{
	u32 i;

	for (i = 0; i < words; i++)
		if (got[i] != want[i]) {
			say("FAIL iter %u: gpu%u: %s word %u is 0x%x, expected 0x%x", n,
			    g->idx, what, i, got[i], want[i]);
			return -1;
		}
	return 0;
}

/* Iteration @n's draw for device @g: its kernel buffer, then copy source. */
static void draw(struct gpu *g, u32 n)
{
	rng = n * 2654435761U + 1 + g->idx * 0x61c88647U;
}

/*
 * After a wrong copy: which words, whether they are the previous
 * iteration's source (old data, not noise), and what VRAM holds now,
 * copied out again: it tells a stale VRAM block from a stale page.
 */
static void copy_report(struct gpu *g, u32 n)
{
	struct dma_area *dma = &g->m->dma;
	u32 first = ~0U, last = 0, bad = 0, prev = 0, vsrc = 0, vdst = 0, vfirst = ~0U, i;

	draw(g, n - 1);		/* the previous iteration's draw */
	for (i = 0; i < KWORDS; i++)
		rnd();
	for (i = 0; i < CBYTES / 4; i++) {
		u32 p = rnd();

		if (dma->cdst[i] == dma->csrc[i])
			continue;
		if (first == ~0U)
			first = i;
		last = i;
		bad++;
		prev += dma->cdst[i] == p;
	}
	say("  gpu%u copy: %u words wrong, %u to %u; %u of them the previous iteration's source",
	    g->idx, bad, first, last, prev);
	for (i = 0; i < CBYTES / 4; i++)
		dma->rcheck[i] = 0;
	submit(g, 1, SIMGPU_OP_COPY, VA_OF(rcheck), VA_VRAM, CBYTES, 0);
	if (wait_idle(g, n)) {
		say("  gpu%u copy: VRAM could not be copied out again", g->idx);
		return;
	}
	for (i = 0; i < CBYTES / 4; i++) {
		if (dma->rcheck[i] != dma->csrc[i]) {
			vsrc++;
			if (vfirst == ~0U)
				vfirst = i;
		}
		vdst += dma->rcheck[i] != dma->cdst[i];
	}
	say("  gpu%u copy: VRAM now differs from the source in %u words (first %u), from the copy in %u",
	    g->idx, vsrc, vfirst, vdst);
}

/*
 * After a wrong fence: what each queue says it wrote last and where its
 * ring is, and the fence words read again: a fence the device never ran
 * (FENCE register behind) tells a lost command from a lost write.
 */
static void fence_report(struct gpu *g)
{
	u32 q;

	for (q = 0; q < 2; q++)
		say("  gpu%u fence: queue %u FENCE %u head %u tail %u (driver's %u) status 0x%x; memory %u",
		    g->idx, q, rd(g, qreg(q, SIMGPU_QREG_FENCE_LO)),
		    rd(g, qreg(q, SIMGPU_QREG_HEAD)), rd(g, qreg(q, SIMGPU_QREG_TAIL)),
		    g->tail[q], rd(g, qreg(q, SIMGPU_QREG_STATUS)), (u32)g->m->dma.fence[q]);
}

/*
 * After a wrong chunk of the re-initialised region: how much of it is
 * wrong, whose data it holds (another chunk's: a block sent or placed at
 * the wrong offset), and whether VRAM still holds it (copied out again).
 */
static void region_report(struct gpu *g, u32 n, u32 c)
{
	struct dma_area *dma = &g->m->dma;
	u32 bad = 0, other = ~0U, again = 0, i, k, gen = g->region_gen;

	for (i = 0; i < CBYTES / 4; i++)
		bad += dma->rcheck[i] != region_word(gen, c, i);
	for (k = 0; k < RCHUNKS && other == ~0U; k++)
		if (k != c && dma->rcheck[0] == region_word(gen, k, 0) &&
		    dma->rcheck[CBYTES / 4 - 1] == region_word(gen, k, CBYTES / 4 - 1))
			other = k;
	for (i = 0; i < CBYTES / 4; i++)
		dma->rcheck[i] = 0;
	submit(g, 1, SIMGPU_OP_COPY, VA_OF(rcheck), VA_REGION + c * CBYTES, CBYTES, 0);
	if (wait_idle(g, n)) {
		say("  reinit: chunk %u could not be copied out again", c);
		return;
	}
	for (i = 0; i < CBYTES / 4; i++)
		again += dma->rcheck[i] != region_word(gen, c, i);
	if (other == ~0U)
		say("  reinit: chunk %u: %u words wrong, no other chunk's; %u wrong copied again",
		    c, bad, again);
	else
		say("  reinit: chunk %u: %u words wrong, it holds chunk %u; %u wrong copied again",
		    c, bad, other, again);
}

/* Iteration @n's work for @g, submitted: the device runs it meanwhile. */
static void iteration_submit(struct gpu *g, u32 n)
{
	struct dma_area *dma = &g->m->dma;
	u32 i, it, hot = g->hot_pages;

	g->key = 0x9e3779b9U * n + g->idx;
	g->pat = n * 7 + 1 + (g->idx << 24);
	draw(g, n);
	for (i = 0; i < KWORDS; i++) {
		g->expect[i] = rnd();
		dma->kbuf[i] = g->expect[i];
	}
	for (it = 0; it < KITERS; it++)
		for (i = 0; i < KWORDS; i++)
			g->expect[i] = kernel_word(g->expect[i], g->key, it);
	for (i = 0; i < CBYTES / 4; i++) {
		dma->csrc[i] = rnd();
		dma->cdst[i] = 0;
		dma->vcheck[i] = 0;
	}
	for (i = 0; i < 1024; i++)
		dma->fill[i] = 0;

	submit(g, 0, SIMGPU_OP_KERNEL, VA_OF(kbuf), sizeof(dma->kbuf), KITERS, g->key);
	submit(g, 0, SIMGPU_OP_FENCE, VA_OF(fence[0]), n, 0, 0);
	submit(g, 1, SIMGPU_OP_COPY, VA_VRAM, VA_OF(csrc), CBYTES, 0);
	submit(g, 1, SIMGPU_OP_COPY, VA_OF(cdst), VA_VRAM, CBYTES, 0);
	submit(g, 1, SIMGPU_OP_COPY, VA_OF(vcheck), VA_VRAM + CBYTES, CBYTES, 0);
	submit(g, 1, SIMGPU_OP_FILL, VA_OF(fill), sizeof(dma->fill), g->pat, 0);
	if (g->region_gen) {
		for (i = 0; i < CBYTES / 4; i++)
			dma->rcheck[i] = 0;
		submit(g, 1, SIMGPU_OP_COPY, VA_OF(rcheck), VA_REGION + (n % RCHUNKS) * CBYTES,
		       CBYTES, 0);
	}
	if (hot) {	/* a chunk of the hot set's stamps, one in turn */
		for (i = 0; i < CBYTES / 8; i++)
			dma->hcheck[i] = 0;
		submit(g, 1, SIMGPU_OP_COPY, VA_OF(hcheck),
		       VA_HOT + (n % (hot / HOT_CHUNK)) * (u64)CBYTES, CBYTES, 0);
	}
	submit(g, 1, SIMGPU_OP_FENCE, VA_OF(fence[1]), n, 0, 0);
}

/*
 * Iteration @n's results on @g, once it is idle.  Return: 0, 1 when the
 * device was reset under it (set up again: run it again), -1 on failure.
 */
static int iteration_check(struct gpu *g, u32 n)
{
	struct dma_area *dma = &g->m->dma;
	u32 i, hot = g->hot_pages, pat = g->pat;
	int bad, copy_bad, region_bad = 0;

	bad = wait_idle(g, n);
	if (bad > 0 || device_lost(g)) {
		say("gpu%u: device reset under iter %u: set up again (CONTROL 0x%x, PT_ROOT 0x%x)",
		    g->idx, n, rd(g, SIMGPU_REG_CONTROL), rd(g, SIMGPU_REG_PT_ROOT_LO));
		return gpu_setup(g) < 0 ? -1 : 1;
	}
	if (bad)
		return -1;

	if (dma->fence[0] != n || dma->fence[1] != n) {
		say("FAIL iter %u: gpu%u: fences %u %u", n, g->idx, (u32)dma->fence[0],
		    (u32)dma->fence[1]);
		fence_report(g);
		bad = 1;
	}
	bad |= check_words(g, n, "kernel", dma->kbuf, g->expect, KWORDS);
	copy_bad = check_words(g, n, "copy", dma->cdst, dma->csrc, CBYTES / 4);
	bad |= copy_bad;
	bad |= check_words(g, n, "vram", dma->vcheck, g->vpattern, CBYTES / 4);
	for (i = 0; g->region_gen && i < CBYTES / 4; i++)
		if (dma->rcheck[i] != region_word(g->region_gen, n % RCHUNKS, i)) {
			say("FAIL iter %u: gpu%u: reinit %u chunk %u word %u is 0x%x", n, g->idx,
			    g->region_gen, n % RCHUNKS, i, dma->rcheck[i]);
			region_bad = 1;
			bad = 1;
			break;
		}
	for (i = 0; i < 1024; i++)
		if (dma->fill[i] != pat) {
			say("FAIL iter %u: gpu%u: fill word %u is 0x%x", n, g->idx, i,
			    dma->fill[i]);
			bad = 1;
			break;
		}
	for (i = 0; i < STAMP_PAGES; i++) {
		u64 *s = dma->stamps[i];

		if ((s[0] || s[1]) && (s[1] != i || (u32)(s[0] % STAMP_PAGES) != i)) {
			say("FAIL iter %u: gpu%u: stamp page %u holds %u/%u", n, g->idx, i,
			    (u32)s[0], (u32)s[1]);
			bad = 1;
			break;
		}
	}
	for (i = 0; hot && i < HOT_CHUNK; i++) {
		u64 *h = &dma->hcheck[i * 512];
		u32 pg = (n % (hot / HOT_CHUNK)) * HOT_CHUNK + i;

		if ((h[0] || h[1]) && (h[1] != pg || (u32)h[0] % hot != pg)) {
			say("FAIL iter %u: gpu%u: hot page %u holds %u/%u", n, g->idx, pg,
			    (u32)h[0], (u32)h[1]);
			bad = 1;
			break;
		}
	}
	if (region_bad)
		region_report(g, n, n % RCHUNKS);
	if (copy_bad)
		copy_report(g, n);	/* last: it reuses rcheck */
	return bad ? -1 : 0;
}

/* Word @i of what device @a sends its peer in iteration @n: never all zero. */
static u32 peer_word(u32 n, u32 a, u32 i)
{
	u32 x = (n * 0x10001U + a * 0x3b9ac9ffU) * 2654435761U + i * 0x9e3779b9U + 7;

	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	return x | 2;
}

/*
 * In iteration @cur, check device @b's copy of peer window @w (copied out
 * into @got): what its peer wrote in iteration @n.  Says whether it holds
 * the write before (a peer's write lost) when it is wrong.
 */
static int peer_check(struct gpu *b, u32 cur, u32 n, u32 w, const u32 *got)
{
	u32 a = b->from->idx, i, bad = 0, first = ~0U, older = 0;

	for (i = 0; i < CBYTES / 4; i++)
		if (got[i] != peer_word(n, a, i)) {
			if (first == ~0U)
				first = i;
			bad++;
		}
	if (!bad)
		return 0;
	if (n > 2 && got[first] == peer_word(n - 2, a, first))
		older = n - 2;
	say("FAIL iter %u: gpu%u: peer window %u, gpu%u's write of iter %u: %u words wrong, first %u is 0x%x, expected 0x%x; %s",
	    cur, b->idx, w, a, n, bad, first, got[first], peer_word(n, a, first),
	    older ? "it holds the write before" : "not an earlier write");
	return -1;
}

/*
 * Iteration @n's peer copies, once every device's own results were
 * right: each device with a peer copies 64 KiB from its VRAM into the
 * peer's through the peer's aperture, then each device copies out the
 * window written now and the one written the iteration before, and the
 * CPU checks both.  A device reset meanwhile voids its part (set up
 * again), it is not a failure.  Return: 0, or -1 on a wrong result.
 */
static int peer_round(u32 n)
{
	u32 k, i, w = n % 2;
	int bad = 0, r;

	for (k = 0; k < ngpus; k++) {
		struct gpu *g = &gpus[k];
		struct dma_area *dma = &g->m->dma;

		g->state = 0;	/* here: 1 once this device's write was sent */
		if (!g->peer)
			continue;
		for (i = 0; i < CBYTES / 4; i++)
			dma->psrc[i] = peer_word(n, g->idx, i);
		submit(g, 1, SIMGPU_OP_COPY, VA_PEER_OUT, VA_OF(psrc), CBYTES, 0);
		submit(g, 1, SIMGPU_OP_COPY, VA_PEER + w * CBYTES, VA_PEER_OUT, CBYTES, 0);
		g->state = 1;
	}
	for (k = 0; k < ngpus; k++) {
		struct gpu *g = &gpus[k];

		if (!g->state)
			continue;
		r = wait_idle(g, n);
		if (r > 0 || device_lost(g)) {
			say("gpu%u: device reset under iter %u's peer copy: set up again",
			    g->idx, n);
			g->state = 0;
			if (gpu_setup(g) < 0)
				bad = -1;
		} else if (r) {
			say("FAIL iter %u: gpu%u: its copy into gpu%u's aperture", n, g->idx,
			    g->peer->idx);
			g->state = 0;
			bad = -1;
		}
	}
	for (k = 0; k < ngpus; k++) {
		struct gpu *b = &gpus[k];
		struct dma_area *dma = &b->m->dma;
		int old = b->peer_in && b->peer_in == n - 1;

		if (!b->from || !b->from->state)
			continue;
		for (i = 0; i < CBYTES / 4; i++) {
			dma->pcheck[0][i] = 0;
			dma->pcheck[1][i] = 0;
		}
		submit(b, 1, SIMGPU_OP_COPY, VA_OF(pcheck[0]), VA_PEER_IN + w * CBYTES, CBYTES, 0);
		if (old)
			submit(b, 1, SIMGPU_OP_COPY, VA_OF(pcheck[1]),
			       VA_PEER_IN + (1 - w) * CBYTES, CBYTES, 0);
		r = wait_idle(b, n);
		if (r > 0 || device_lost(b)) {
			say("gpu%u: device reset under iter %u's peer check: set up again",
			    b->idx, n);
			if (gpu_setup(b) < 0)
				bad = -1;
			continue;
		}
		if (r) {
			bad = -1;
			continue;
		}
		r = peer_check(b, n, n, w, dma->pcheck[0]);
		if (old && peer_check(b, n, n - 1, 1 - w, dma->pcheck[1]))
			r = -1;
		if (r)
			bad = -1;
		else
			b->peer_in = n;
	}
	return bad;
}

/*
 * Iteration @n on every device at once: all submitted, then each
 * checked; a device reset under it runs its part again, a few times.
 * Then the peer copies (peer_round()).
 * Return: 0 when every device's results were right, -1 otherwise.
 */
static int iteration(u32 n)
{
	u32 k, tries, left = ngpus;
	int bad = 0;

	for (k = 0; k < ngpus; k++)
		gpus[k].state = 1;
	for (tries = 0; left && tries < 5; tries++) {
		for (k = 0; k < ngpus; k++)
			if (gpus[k].state > 0)
				iteration_submit(&gpus[k], n);
		for (k = 0; k < ngpus; k++) {
			struct gpu *g = &gpus[k];

			if (g->state <= 0)
				continue;
			g->state = iteration_check(g, n);
			if (g->state <= 0)
				left--;
		}
	}
	for (k = 0; k < ngpus; k++)
		bad |= gpus[k].state;	/* still reset after five: not ok either */
	if (!bad)
		bad = peer_round(n);
	return bad ? -1 : 0;
}

void guest_main(void);

void guest_main(void)
{
	struct gpu *g0 = &gpus[0];
	u32 n, k, failures = 0;

	say("start; mailbox 0x%x", (u32)mailbox);
	find_gpus();
	if (!ngpus) {
		say("FAIL setup: no simgpu on the PCI bus");
		return;
	}
	for (k = 0; k < ngpus; k++)
		if (gpu_setup(&gpus[k]) < 0)
			return;	/* reset again (1): the first iteration sets it up */
	for (n = 1;; n++) {
		if (iteration(n))
			failures++;
		else
			say("iter %u ok", n);
		asm volatile("" : : : "memory");	/* the harness writes mailbox[0] */
		if (mailbox[0] && mailbox[0] != mailbox[1] && reinit_gpu(g0, mailbox[0]))
			failures++;
		if (mailbox[2] != g0->hot_pages && hot_on(g0, mailbox[2]))
			failures++;
		if (mailbox[3]) {
			if (mailbox[3] > ngpus || reset_gpu(&gpus[mailbox[3] - 1]))
				failures++;
			mailbox[3] = 0;
		}
		if (failures > 10) {
			say("FAIL too many failures, stopping");
			return;
		}
	}
}
