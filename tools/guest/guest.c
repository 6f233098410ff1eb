// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-guest: a freestanding 32-bit multiboot program that QEMU boots
 * with -kernel.  It finds the simgpu on the PCI bus, builds GPU page
 * tables and rings in its own memory and runs GPU work forever: a kernel,
 * DMA copies through VRAM into its memory, fills, fences, and the
 * device's background writer; every result is checked by the CPU.
 * Progress and failures go to the debug console (isa-debugcon, port
 * 0xe9) and to the first serial port (COM1, 0x3f8, which libvirt's
 * domains have), one line each:
 *
 *   gpumig-guest: iter N ok
 *   gpumig-guest: FAIL iter N: what
 *   gpumig-guest: device reset under iter N: set up again
 *
 * The last one is what a driver does after a GPU reset it did not ask
 * for (QEMU resets the device when a migration fails at stop-copy): the
 * iteration's results are void, not wrong, and it is run again.
 *
 * The test harness can also ask the guest to re-initialise its GPU, as a
 * driver does after a hang or a reconfiguration: it writes a generation
 * number into mailbox[0] (whose address the guest prints at start) through
 * QEMU's memory; between iterations the guest resets the GPU, sets it up
 * again, loads RCHUNKS * 64 KiB of VRAM with that generation's data, sets
 * mailbox[1] and says
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
	u64 fence[SIMGPU_PAGE_SIZE / sizeof(u64)];
	u64 stamps[STAMP_PAGES][SIMGPU_PAGE_SIZE / sizeof(u64)];
} __attribute__((aligned(4096)));

#define DMA_PAGES	((sizeof(struct dma_area) + 4095) / 4096)
#define VA_OF(field)	(VA_SYS + __builtin_offsetof(struct dma_area, field))

static struct dma_area dma;
static u64 pt_root[SIMGPU_PT_ENTRIES] __attribute__((aligned(4096)));
static u64 pt_l1[2][SIMGPU_PT_ENTRIES] __attribute__((aligned(4096)));
/* system memory's table, then VRAM's: VA_VRAM's 2 MiB, the hot set's 4 */
static u64 pt_l0[4][SIMGPU_PT_ENTRIES] __attribute__((aligned(4096)));
static u32 expect[KWORDS];
static u32 vpattern[CBYTES / 4];
static u32 *bar;		/* BAR0, accessed with mmio_read/mmio_write */
static u32 tail[2];
/* what was written into each ring slot, to tell a stale ring page */
static struct simgpu_cmd shadow[2][RING];
/* the harness's generation; the one loaded; the hot pages it asks for */
static u32 mailbox[3];
static u32 hot_pages;		/* the writer rewrites the hot set's pages, or 0 */
static u32 region_gen;		/* the generation the VRAM region holds, or 0 */

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
static u32 rd(u32 reg)
{
	u32 v;

	asm volatile("movl %1, %0" : "=r"(v) : "m"(bar[reg / 4]) : "memory");
	return v;
}

static void wr(u32 reg, u32 v)
{
	asm volatile("movl %1, %0" : "=m"(bar[reg / 4]) : "r"(v) : "memory");
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

static void map(u64 va, u64 target, u64 flags)
{
	u32 i2 = SIMGPU_PT_INDEX(va, 2), i1 = SIMGPU_PT_INDEX(va, 1), i0 = SIMGPU_PT_INDEX(va, 0);
	u32 t = i2 ? 1 : 0;	/* one table chain per region used */
	u32 l = t ? 1 + i1 : 0;	/* VRAM: one last-level table per 2 MiB */

	pt_root[i2] = (u32)pt_l1[t] | SIMGPU_PTE_VALID;
	pt_l1[t][i1] = (u32)pt_l0[l] | SIMGPU_PTE_VALID;
	pt_l0[l][i0] = target | flags | SIMGPU_PTE_VALID;
}

static void submit(int q, u32 op, u64 a0, u64 a1, u64 a2, u64 a3)
{
	struct simgpu_cmd *c = &dma.ring[q][tail[q] % RING];
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
		shadow[q][tail[q] % RING].args[i] = c->args[i];
	shadow[q][tail[q] % RING].opcode = op;
	asm volatile("" : : : "memory");
	tail[q]++;
	wr(qreg(q, SIMGPU_QREG_TAIL), tail[q]);
}

static u32 pt_root_iova(void)
{
	return (u32)pt_root;
}

/* The device was reset behind our back: not enabled, or tables forgotten. */
static int device_lost(void)
{
	return !(rd(SIMGPU_REG_CONTROL) & SIMGPU_CTRL_ENABLE) ||
	       rd(SIMGPU_REG_PT_ROOT_LO) != pt_root_iova();
}

/*
 * After a queue error: the slot at the device's head and the one before,
 * as memory holds them against what was written there (a difference is a
 * ring page older than the driver's last write).
 */
static void ring_report(int q, u32 head)
{
	u32 k;

	for (k = head - 1; k != head + 1; k++) {
		const struct simgpu_cmd *c = &dma.ring[q][k % RING], *w = &shadow[q][k % RING];

		say("  ring %u slot %u: op %u a0 0x%x a1 0x%x a2 0x%x; written op %u a0 0x%x a1 0x%x a2 0x%x",
		    q, k % RING, c->opcode, (u32)c->args[0], (u32)c->args[1], (u32)c->args[2],
		    w->opcode, (u32)w->args[0], (u32)w->args[1], (u32)w->args[2]);
	}
}

static int wait_idle(u32 n)
{
	u32 polls = 0, q;

	for (q = 0; q < 2; q++) {
		for (;;) {
			u32 st = rd(qreg(q, SIMGPU_QREG_STATUS));

			if (device_lost())
				return 1;
			if (st & SIMGPU_QSTATUS_ERROR) {
				/* with the ring's state, which says who lost track */
				say("FAIL iter %u: queue %u error %u at 0x%x (head %u tail %u size %u, driver's tail %u)",
				    n, q, rd(qreg(q, SIMGPU_QREG_ERROR)),
				    rd(SIMGPU_REG_ERROR_ADDR_LO), rd(qreg(q, SIMGPU_QREG_HEAD)),
				    rd(qreg(q, SIMGPU_QREG_TAIL)),
				    rd(qreg(q, SIMGPU_QREG_RING_SIZE)), tail[q]);
				ring_report(q, rd(qreg(q, SIMGPU_QREG_HEAD)));
				return -1;
			}
			if (!(st & SIMGPU_QSTATUS_BUSY))
				break;
			if (++polls == POLL_LIMIT) {
				say("FAIL iter %u: queue %u still busy", n, q);
				return -1;
			}
		}
	}
	return 0;
}

static int find_gpu(void)
{
	u32 bus, dev;

	for (bus = 0; bus < 4; bus++)
		for (dev = 0; dev < 32; dev++) {
			u32 id = pci_read(bus, dev, 0, 0);

			if (id != (SIMGPU_PCI_DEVICE_ID << 16 | SIMGPU_PCI_VENDOR_ID))
				continue;
			bar = (u32 *)(pci_read(bus, dev, 0, 0x10) & ~0xfU);
			/* memory space and bus master */
			pci_write(bus, dev, 0, 0x04, pci_read(bus, dev, 0, 0x04) | 0x6);
			say("simgpu at %x:%x.0, BAR0 0x%x", bus, dev, (u32)bar);
			return bar ? 0 : -1;
		}
	return -1;
}

/* Return: 0, 1 when the device was reset again meanwhile, -1 on failure. */
static int gpu_setup(void)
{
	u32 i, q;
	int r;

	if (rd(SIMGPU_REG_ID) != SIMGPU_ID_MAGIC) {
		say("FAIL setup: ID 0x%x", rd(SIMGPU_REG_ID));
		return -1;
	}
	say("queues %u, VRAM %u MiB", rd(SIMGPU_REG_NUM_QUEUES),
	    rd(SIMGPU_REG_VRAM_SIZE_LO) >> 20 | rd(SIMGPU_REG_VRAM_SIZE_HI) << 12);
	for (i = 0; i < DMA_PAGES; i++)
		map(VA_SYS + i * 4096ULL, (u32)&dma + i * 4096, SIMGPU_PTE_WRITE);
	for (i = 0; i < VRAM_MAPPED / 4096; i++)
		map(VA_VRAM + i * 4096ULL, i * 4096, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	wr(SIMGPU_REG_PT_ROOT_LO, pt_root_iova());
	wr(SIMGPU_REG_PT_ROOT_HI, 0);
	for (q = 0; q < 2; q++) {
		tail[q] = 0;
		wr(qreg(q, SIMGPU_QREG_RING_LO), (u32)dma.ring[q]);
		wr(qreg(q, SIMGPU_QREG_RING_HI), 0);
		wr(qreg(q, SIMGPU_QREG_RING_SIZE), RING);
		/* clears an error left by a doorbell that met a reset device */
		wr(qreg(q, SIMGPU_QREG_CONTROL), SIMGPU_QCTRL_RESET | SIMGPU_QCTRL_ENABLE);
	}
	wr(SIMGPU_REG_INT_MASK, 0);
	wr(SIMGPU_REG_INT_STATUS, 0xffffffff);
	wr(SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);

	/* VRAM keeps a pattern for the whole run: checked every iteration. */
	rng = 0xabcdef;
	for (i = 0; i < CBYTES / 4; i++) {
		vpattern[i] = rnd();
		dma.csrc[i] = vpattern[i];
	}
	submit(1, SIMGPU_OP_COPY, VA_VRAM + CBYTES, VA_OF(csrc), CBYTES, 0);
	r = wait_idle(0);
	if (r > 0) {
		/* QEMU resets a device more than once when a stop-copy fails */
		say("device reset during setup: set up again");
		return 1;
	}
	if (r) {
		say("FAIL setup: VRAM pattern copy");
		return -1;
	}

	/*
	 * The device's background writer stamps its pages all along: in
	 * system memory, or the hot set in VRAM once the harness asked.
	 */
	for (i = 0; i < hot_pages; i++)
		map(VA_HOT + i * 4096ULL, (2 << 20) + i * 4096ULL,
		    SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	wr(SIMGPU_REG_DIRTY_BASE_LO, hot_pages ? (u32)VA_HOT : (u32)VA_OF(stamps));
	wr(SIMGPU_REG_DIRTY_BASE_HI, 0);
	wr(SIMGPU_REG_DIRTY_PAGES, hot_pages ? hot_pages : STAMP_PAGES);
	return 0;
}

/*
 * The harness asks for a hot workload: the writer moves to @pages of VRAM
 * (mapped, the device's translations invalidated, then pointed there).
 */
static int hot_on(u32 pages)
{
	u32 seq, i;

	/* a power of two: the stamp's count, cut to 32 bits, still names its page */
	if (pages > HOT_MAX || pages < HOT_CHUNK || (pages & (pages - 1))) {
		say("FAIL hot: %u pages asked: a power of two from %u to %u", pages, HOT_CHUNK,
		    HOT_MAX);
		mailbox[2] = hot_pages;
		return -1;
	}
	for (i = 0; i < pages; i++)
		map(VA_HOT + i * 4096ULL, (2 << 20) + i * 4096ULL,
		    SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	seq = rd(SIMGPU_REG_INVAL_ACK) + 1;
	wr(SIMGPU_REG_INVAL_REQ, seq);
	for (i = 0; rd(SIMGPU_REG_INVAL_ACK) != seq; i++)
		if (i > POLL_LIMIT) {
			say("FAIL hot: invalidation %u never acknowledged", seq);
			return -1;
		}
	hot_pages = pages;
	wr(SIMGPU_REG_DIRTY_BASE_LO, (u32)VA_HOT);
	wr(SIMGPU_REG_DIRTY_PAGES, pages);
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
static int reinit_gpu(u32 gen)
{
	u32 c, i;

	wr(SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	if (gpu_setup())
		return -1;
	for (c = 0; c < RCHUNKS; c++) {
		for (i = 0; i < CBYTES / 4; i++)
			dma.csrc[i] = region_word(gen, c, i);
		submit(1, SIMGPU_OP_COPY, VA_REGION + c * CBYTES, VA_OF(csrc), CBYTES, 0);
		if (wait_idle(0)) {
			say("FAIL reinit %u: chunk %u", gen, c);
			return -1;
		}
	}
	region_gen = gen;
	mailbox[1] = gen;
	say("reinit %u done", gen);
	return 0;
}

static int check_words(u32 n, const char *what, const u32 *got, const u32 *want,
		       u32 words)
{
	u32 i;

	for (i = 0; i < words; i++)
		if (got[i] != want[i]) {
			say("FAIL iter %u: %s word %u is 0x%x, expected 0x%x", n,
			    what, i, got[i], want[i]);
			return -1;
		}
	return 0;
}

/*
 * After a wrong copy: which words, whether they are the previous
 * iteration's source (old data, not noise), and what VRAM holds now,
 * copied out again: it tells a stale VRAM block from a stale page.
 */
static void copy_report(u32 n)
{
	u32 first = ~0U, last = 0, bad = 0, prev = 0, vsrc = 0, vdst = 0, vfirst = ~0U, i;

	rng = (n - 1) * 2654435761U + 1;	/* the previous iteration's draw */
	for (i = 0; i < KWORDS; i++)
		rnd();
	for (i = 0; i < CBYTES / 4; i++) {
		u32 p = rnd();

		if (dma.cdst[i] == dma.csrc[i])
			continue;
		if (first == ~0U)
			first = i;
		last = i;
		bad++;
		prev += dma.cdst[i] == p;
	}
	say("  copy: %u words wrong, %u to %u; %u of them the previous iteration's source",
	    bad, first, last, prev);
	for (i = 0; i < CBYTES / 4; i++)
		dma.rcheck[i] = 0;
	submit(1, SIMGPU_OP_COPY, VA_OF(rcheck), VA_VRAM, CBYTES, 0);
	if (wait_idle(n)) {
		say("  copy: VRAM could not be copied out again");
		return;
	}
	for (i = 0; i < CBYTES / 4; i++) {
		if (dma.rcheck[i] != dma.csrc[i]) {
			vsrc++;
			if (vfirst == ~0U)
				vfirst = i;
		}
		vdst += dma.rcheck[i] != dma.cdst[i];
	}
	say("  copy: VRAM now differs from the source in %u words (first %u), from the copy in %u",
	    vsrc, vfirst, vdst);
}

/*
 * After a wrong fence: what each queue says it wrote last and where its
 * ring is, and the fence words read again: a fence the device never ran
 * (FENCE register behind) tells a lost command from a lost write.
 */
static void fence_report(void)
{
	u32 q;

	for (q = 0; q < 2; q++)
		say("  fence: queue %u FENCE %u head %u tail %u (driver's %u) status 0x%x; memory %u",
		    q, rd(qreg(q, SIMGPU_QREG_FENCE_LO)), rd(qreg(q, SIMGPU_QREG_HEAD)),
		    rd(qreg(q, SIMGPU_QREG_TAIL)), tail[q], rd(qreg(q, SIMGPU_QREG_STATUS)),
		    (u32)dma.fence[q]);
}

/*
 * After a wrong chunk of the re-initialised region: how much of it is
 * wrong, whose data it holds (another chunk's: a block sent or placed at
 * the wrong offset), and whether VRAM still holds it (copied out again).
 */
static void region_report(u32 n, u32 c)
{
	u32 bad = 0, other = ~0U, again = 0, i, k;

	for (i = 0; i < CBYTES / 4; i++)
		bad += dma.rcheck[i] != region_word(region_gen, c, i);
	for (k = 0; k < RCHUNKS && other == ~0U; k++)
		if (k != c && dma.rcheck[0] == region_word(region_gen, k, 0) &&
		    dma.rcheck[CBYTES / 4 - 1] == region_word(region_gen, k, CBYTES / 4 - 1))
			other = k;
	for (i = 0; i < CBYTES / 4; i++)
		dma.rcheck[i] = 0;
	submit(1, SIMGPU_OP_COPY, VA_OF(rcheck), VA_REGION + c * CBYTES, CBYTES, 0);
	if (wait_idle(n)) {
		say("  reinit: chunk %u could not be copied out again", c);
		return;
	}
	for (i = 0; i < CBYTES / 4; i++)
		again += dma.rcheck[i] != region_word(region_gen, c, i);
	if (other == ~0U)
		say("  reinit: chunk %u: %u words wrong, no other chunk's; %u wrong copied again",
		    c, bad, again);
	else
		say("  reinit: chunk %u: %u words wrong, it holds chunk %u; %u wrong copied again",
		    c, bad, other, again);
}

static int iteration(u32 n)
{
	u32 key = 0x9e3779b9U * n, pat = n * 7 + 1, i, it, hot;
	int bad = 0, copy_bad, region_bad = 0;

	rng = n * 2654435761U + 1;
	for (i = 0; i < KWORDS; i++) {
		expect[i] = rnd();
		dma.kbuf[i] = expect[i];
	}
	for (it = 0; it < KITERS; it++)
		for (i = 0; i < KWORDS; i++)
			expect[i] = kernel_word(expect[i], key, it);
	for (i = 0; i < CBYTES / 4; i++) {
		dma.csrc[i] = rnd();
		dma.cdst[i] = 0;
		dma.vcheck[i] = 0;
	}
	for (i = 0; i < 1024; i++)
		dma.fill[i] = 0;

	submit(0, SIMGPU_OP_KERNEL, VA_OF(kbuf), sizeof(dma.kbuf), KITERS, key);
	submit(0, SIMGPU_OP_FENCE, VA_OF(fence[0]), n, 0, 0);
	submit(1, SIMGPU_OP_COPY, VA_VRAM, VA_OF(csrc), CBYTES, 0);
	submit(1, SIMGPU_OP_COPY, VA_OF(cdst), VA_VRAM, CBYTES, 0);
	submit(1, SIMGPU_OP_COPY, VA_OF(vcheck), VA_VRAM + CBYTES, CBYTES, 0);
	submit(1, SIMGPU_OP_FILL, VA_OF(fill), sizeof(dma.fill), pat, 0);
	if (region_gen) {
		for (i = 0; i < CBYTES / 4; i++)
			dma.rcheck[i] = 0;
		submit(1, SIMGPU_OP_COPY, VA_OF(rcheck), VA_REGION + (n % RCHUNKS) * CBYTES,
		       CBYTES, 0);
	}
	hot = hot_pages;	/* a chunk of the hot set's stamps, one in turn */
	if (hot) {
		for (i = 0; i < CBYTES / 8; i++)
			dma.hcheck[i] = 0;
		submit(1, SIMGPU_OP_COPY, VA_OF(hcheck),
		       VA_HOT + (n % (hot / HOT_CHUNK)) * (u64)CBYTES, CBYTES, 0);
	}
	submit(1, SIMGPU_OP_FENCE, VA_OF(fence[1]), n, 0, 0);
	bad = wait_idle(n);
	if (bad > 0 || device_lost()) {
		say("device reset under iter %u: set up again (CONTROL 0x%x, PT_ROOT 0x%x)", n,
		    rd(SIMGPU_REG_CONTROL), rd(SIMGPU_REG_PT_ROOT_LO));
		return gpu_setup() < 0 ? -1 : 1;
	}
	if (bad)
		return -1;

	if (dma.fence[0] != n || dma.fence[1] != n) {
		say("FAIL iter %u: fences %u %u", n, (u32)dma.fence[0],
		    (u32)dma.fence[1]);
		fence_report();
		bad = 1;
	}
	bad |= check_words(n, "kernel", dma.kbuf, expect, KWORDS);
	copy_bad = check_words(n, "copy", dma.cdst, dma.csrc, CBYTES / 4);
	bad |= copy_bad;
	bad |= check_words(n, "vram", dma.vcheck, vpattern, CBYTES / 4);
	for (i = 0; region_gen && i < CBYTES / 4; i++)
		if (dma.rcheck[i] != region_word(region_gen, n % RCHUNKS, i)) {
			say("FAIL iter %u: reinit %u chunk %u word %u is 0x%x", n, region_gen,
			    n % RCHUNKS, i, dma.rcheck[i]);
			region_bad = 1;
			bad = 1;
			break;
		}
	for (i = 0; i < 1024; i++)
		if (dma.fill[i] != pat) {
			say("FAIL iter %u: fill word %u is 0x%x", n, i, dma.fill[i]);
			bad = 1;
			break;
		}
	for (i = 0; i < STAMP_PAGES; i++) {
		u64 *s = dma.stamps[i];

		if ((s[0] || s[1]) && (s[1] != i || (u32)(s[0] % STAMP_PAGES) != i)) {
			say("FAIL iter %u: stamp page %u holds %u/%u", n, i,
			    (u32)s[0], (u32)s[1]);
			bad = 1;
			break;
		}
	}
	for (i = 0; hot && i < HOT_CHUNK; i++) {
		u64 *h = &dma.hcheck[i * 512];
		u32 pg = (n % (hot / HOT_CHUNK)) * HOT_CHUNK + i;

		if ((h[0] || h[1]) && (h[1] != pg || (u32)h[0] % hot != pg)) {
			say("FAIL iter %u: hot page %u holds %u/%u", n, pg, (u32)h[0],
			    (u32)h[1]);
			bad = 1;
			break;
		}
	}
	if (region_bad)
		region_report(n, n % RCHUNKS);
	if (copy_bad)
		copy_report(n);	/* last: it reuses rcheck */
	return bad ? -1 : 0;
}

void guest_main(void);

void guest_main(void)
{
	u32 n, failures = 0;

	say("start; mailbox 0x%x", (u32)mailbox);
	if (find_gpu()) {
		say("FAIL setup: no simgpu on the PCI bus");
		return;
	}
	if (gpu_setup() < 0)
		return;	/* reset again (1): the first iteration sets it up */
	for (n = 1;; n++) {
		int r, tries = 0;

		/* again after a reset, a few times */
		while ((r = iteration(n)) > 0 && ++tries < 5)
			;
		if (r)
			failures++;
		else
			say("iter %u ok", n);
		asm volatile("" : : : "memory");	/* the harness writes mailbox[0] */
		if (mailbox[0] && mailbox[0] != mailbox[1] && reinit_gpu(mailbox[0]))
			failures++;
		if (mailbox[2] != hot_pages && hot_on(mailbox[2]))
			failures++;
		if (failures > 10) {
			say("FAIL too many failures, stopping");
			return;
		}
	}
}
