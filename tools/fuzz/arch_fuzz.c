// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for simgpu's architectural-state validator
 * (drivers/gpu/simgpu/arch.c: simgpu_arch_restore()), built unchanged with
 * the device model (core.c, regs.c, host.c, mmu.c) through the kernel-API shim that QEMU's
 * simgpu-pci uses (qemu/simgpu/shim, model-glue.c).
 *
 * Input: one byte of device shape (queues), SIMGPU_ARCH_SIZE bytes of
 * state, then a program of register writes and processor passes.
 *
 * What must hold:
 * - a state the validator accepts is one the device keeps running from
 *   without undefined behaviour (AddressSanitizer, UBSan), whatever the
 *   guest then writes to its registers;
 * - what the device saves is always accepted again (by a fresh device of
 *   the same shape) and saves back identically: a destination never
 *   refuses a state a source of its type produced;
 * - that holds after the program has run too: the device cannot reach a
 *   state its own validator refuses;
 * - a refused state leaves the device exactly as it was.
 *
 * Guest memory is the same for every input (af_setup()): page tables that
 * map GPU VA 0..AF_MAPPED to guest pages, and a ring of fences, fills,
 * copies and kernels at AF_RING, so that states pointing there run real
 * commands.  Built with -DAF_MKSEED, this file is the seed generator: it
 * saves devices stopped in the middle of each kind of command.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simgpu-model.h"
#include <uapi/linux/simgpu.h>

#define AF_VRAM		(256 * 1024)
#define AF_GUEST	(256 * 1024)
#define AF_MAX_STEPS	64

/* Guest memory layout (IOVA): the page tables, the ring, mapped pages. */
#define AF_PT_L2	0x1000
#define AF_PT_L1	0x2000
#define AF_PT_L0	0x3000
#define AF_RING		0x4000
#define AF_RING_SIZE	64
#define AF_PAGES	0x10000
#define AF_MAPPED	(48 * 4096)	/* GPU VA 0.. maps IOVA AF_PAGES.. */

static uint8_t af_guest[AF_GUEST], af_vram[AF_VRAM];
static int64_t af_clock;

/* The model's clock (simgpu_shim.h): it advances as the model looks. */
int64_t simgpu_qemu_now_ns(void)
{
	af_clock += 50000;
	return af_clock;
}

static int af_rw(uint8_t *mem, size_t size, uint64_t at, void *buf, size_t len,
		 bool write)
{
	if (at >= size || len > size - at)
		return -14;	/* -EFAULT: not mapped */
	if (write)
		memcpy(mem + at, buf, len);
	else
		memcpy(buf, mem + at, len);
	return 0;
}

static int af_dma_rw(void *ctx, uint64_t iova, void *buf, size_t len, bool write)
{
	return af_rw(af_guest, sizeof(af_guest), iova, buf, len, write);
}

static int af_vram_rw(void *ctx, uint64_t off, void *buf, size_t len, bool write)
{
	if (off >= AF_VRAM || len > AF_VRAM - off)
		return -34;	/* -ERANGE */
	return af_rw(af_vram, sizeof(af_vram), off, buf, len, write);
}

static void af_nop(void *ctx)
{
}

static const struct simgpu_model_env af_env = {
	.dma_rw = af_dma_rw, .vram_rw = af_vram_rw,
	.raise_irq = af_nop, .kick = af_nop, .stepped = af_nop,
};

static void af_put64(uint64_t iova, uint64_t v)
{
	memcpy(af_guest + iova, &v, sizeof(v));
}

/* The guest memory every input starts from (see the top of this file). */
static void af_setup(void)
{
	static const uint32_t ops[] = {
		SIMGPU_OP_FENCE, SIMGPU_OP_FILL, SIMGPU_OP_COPY, SIMGPU_OP_KERNEL,
		SIMGPU_OP_NOP,
	};
	uint64_t i;

	memset(af_guest, 0, sizeof(af_guest));
	memset(af_vram, 0, sizeof(af_vram));
	af_clock = 0;
	af_put64(AF_PT_L2, AF_PT_L1 | SIMGPU_PTE_VALID);
	af_put64(AF_PT_L1, AF_PT_L0 | SIMGPU_PTE_VALID);
	for (i = 0; i < AF_MAPPED / 4096; i++)
		af_put64(AF_PT_L0 + 8 * i, (AF_PAGES + 4096 * i) | SIMGPU_PTE_VALID |
			 SIMGPU_PTE_WRITE);
	/* One VRAM page at the end of the mapping, for copies to VRAM. */
	af_put64(AF_PT_L0 + 8 * (AF_MAPPED / 4096), SIMGPU_PTE_VALID | SIMGPU_PTE_WRITE |
		 SIMGPU_PTE_VRAM);
	for (i = 0; i < AF_RING_SIZE; i++) {
		struct simgpu_cmd c = { .opcode = ops[i % 5] };

		switch (c.opcode) {
		case SIMGPU_OP_FENCE:
			c.args[0] = 8 * i;
			c.args[1] = i + 1;
			c.flags = SIMGPU_CMD_F_IRQ;
			break;
		case SIMGPU_OP_FILL:
			c.args[0] = 4096;
			c.args[1] = 16 * 4096;
			c.args[2] = 0x5a5a0000 | i;
			break;
		case SIMGPU_OP_COPY:
			c.args[0] = 24 * 4096;
			c.args[1] = 4096;
			c.args[2] = 16 * 4096;
			break;
		case SIMGPU_OP_KERNEL:
			c.args[0] = 40 * 4096;
			c.args[1] = 4096;
			c.args[2] = 1000;
			c.args[3] = i;
			break;
		}
		memcpy(af_guest + AF_RING + sizeof(c) * i, &c, sizeof(c));
	}
}

static struct simgpu_model *af_new(uint32_t nr_queues)
{
	struct simgpu_model *m = simgpu_model_new(&af_env, NULL, nr_queues, AF_VRAM);

	if (!m)
		abort();
	return m;
}

/* Save @m; a fresh device of its shape must accept it and save it back. */
static void af_roundtrip(struct simgpu_model *m, uint32_t nr_queues)
{
	size_t size = simgpu_model_arch_size();
	uint8_t *a = malloc(size), *b = malloc(size);
	struct simgpu_model *d = af_new(nr_queues);
	long n;
	int ret;

	if (!a || !b)
		abort();
	simgpu_model_pause(m, false);
	n = simgpu_model_arch_save(m, a, size);
	simgpu_model_resume(m);
	if (n != (long)size)
		abort();
	simgpu_model_pause(d, false);
	ret = simgpu_model_arch_restore(d, a, size);
	if (ret) {
		fprintf(stderr, "a saved state was refused: %d\n", ret);
		abort();
	}
	if (simgpu_model_arch_save(d, b, size) != (long)size || memcmp(a, b, size)) {
		fprintf(stderr, "a restored state saves back differently\n");
		abort();
	}
	simgpu_model_free(d);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t arch = simgpu_model_arch_size();
	uint8_t *before, *after, *state;
	struct simgpu_model *m;
	uint32_t nr_queues;
	size_t off, steps;
	int ret;

	if (size < 1 + arch)
		return 0;
	nr_queues = data[0] % 8 + 1;
	af_setup();
	m = af_new(nr_queues);
	before = malloc(arch);
	after = malloc(arch);
	state = malloc(arch);		/* exactly as long: ASan sees over-reads */
	if (!before || !after || !state)
		abort();
	memcpy(state, data + 1, arch);

	simgpu_model_pause(m, false);
	if (simgpu_model_arch_save(m, before, arch) != (long)arch)
		abort();
	ret = simgpu_model_arch_restore(m, state, arch);
	if (ret) {
		/* Refused: nothing of it was installed. */
		if (simgpu_model_arch_save(m, after, arch) != (long)arch ||
		    memcmp(before, after, arch)) {
			fprintf(stderr, "a refused state changed the device\n");
			abort();
		}
		goto out;
	}
	af_roundtrip(m, nr_queues);
	simgpu_model_resume(m);

	/* The program: 6 bytes a step (register, value; or a pass). */
	for (off = 1 + arch, steps = 0; off + 6 <= size && steps < AF_MAX_STEPS;
	     off += 6, steps++) {
		uint16_t reg = data[off] | data[off + 1] << 8;
		uint32_t val;

		memcpy(&val, data + off + 2, sizeof(val));
		switch (reg >> 14) {
		case 0:
			simgpu_model_mmio_write(m, reg & 0x3ffc, val);
			break;
		case 1:
			(void)simgpu_model_mmio_read(m, reg & 0x3ffc);
			break;
		case 2:
			simgpu_model_run(m, val % 16 + 1);
			break;
		default:
			af_clock += (int64_t)(val % 1000) * 1000000;
			simgpu_model_run(m, 4);
			break;
		}
	}
	simgpu_model_run(m, 8);
	af_roundtrip(m, nr_queues);
out:
	simgpu_model_free(m);
	free(before);
	free(after);
	free(state);
	return 0;
}

#ifdef AF_MKSEED
/*
 * Seeds: for each queue count and each number of passes, a device whose
 * queues run the ring above, stopped after that many passes; then a short
 * program that rings the doorbell and runs.
 */
static void af_wr(struct simgpu_model *m, uint32_t reg, uint32_t val)
{
	simgpu_model_mmio_write(m, reg, val);
}

int main(int argc, char **argv)
{
	size_t arch = simgpu_model_arch_size();
	uint8_t prog[4][6] = {
		{ 0x10, 0x01, 8, 0, 0, 0 },			/* queue 0 tail */
		{ 0, 0x80, 3, 0, 0, 0 },			/* a pass */
		{ 0, 0xc0, 0, 1, 0, 0 },			/* time, a pass */
		{ 0x48, 0, 7, 0, 0, 0 },			/* invalidation */
	};
	unsigned int q, passes, n = 0;
	uint8_t *buf = malloc(1 + arch + sizeof(prog));

	if (argc != 2 || !buf)
		return 2;
	for (q = 1; q <= 8; q++) {
		for (passes = 0; passes < 24; passes += 3) {
			struct simgpu_model *m;
			char path[4096];
			unsigned int i;
			FILE *f;

			af_setup();
			m = af_new(q);
			af_wr(m, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
			af_wr(m, SIMGPU_REG_INT_MASK, ~0U);
			af_wr(m, SIMGPU_REG_PT_ROOT_LO, AF_PT_L2);
			for (i = 0; i < q; i++) {
				uint32_t b = SIMGPU_QUEUE_BASE + i * SIMGPU_QUEUE_STRIDE;

				af_wr(m, b + SIMGPU_QREG_RING_LO, AF_RING);
				af_wr(m, b + SIMGPU_QREG_RING_SIZE, AF_RING_SIZE);
				af_wr(m, b + SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_ENABLE);
				af_wr(m, b + SIMGPU_QREG_TAIL, 1 + (i * 7 + passes) % AF_RING_SIZE);
			}
			for (i = 0; i < passes; i++)
				simgpu_model_run(m, 1);
			simgpu_model_pause(m, false);
			buf[0] = q - 1;
			if (simgpu_model_arch_save(m, buf + 1, arch) != (long)arch)
				return 1;
			memcpy(buf + 1 + arch, prog, sizeof(prog));
			simgpu_model_free(m);
			snprintf(path, sizeof(path), "%s/arch-q%u-p%u", argv[1], q, passes);
			f = fopen(path, "wb");
			if (!f || fwrite(buf, 1 + arch + sizeof(prog), 1, f) != 1 || fclose(f))
				return 1;
			n++;
		}
	}
	free(buf);
	printf("%u seeds\n", n);
	return 0;
}
#endif
