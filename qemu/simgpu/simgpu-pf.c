/*
 * simgpu-pci: gpumig's simulated GPU as SR-IOV PCIe hardware.
 *
 * The physical function ("simgpu-pf") provisions up to seven virtual
 * functions ("simgpu-vf").  Each VF is a simgpu, run by the same device
 * model as the kernel's mdev simgpu (drivers/gpu/simgpu, built here with a
 * shim behind simgpu-model.h): BAR0 registers, BAR1 MSI-X, BAR2 a VRAM
 * aperture backed by RAM so a VMM can map it.  The VF's DMA goes through
 * the platform IOMMU (pci_dma_rw), so it reaches only what is mapped.  The
 * PF's BAR0 holds a mailbox per VF through which its driver asks for the
 * services a migration needs (pause, acknowledged invalidation, state
 * save/restore, VRAM transfer and dirty bits, DMA logging, scrub); the
 * PF's own DMA carries their data.  <linux/simgpu_pf.h> is the ABI and
 * Documentation/gpumig/simgpu-pci.rst explains it.
 *
 * This file is the PF: its mailbox and the commands behind it, its
 * registers, SR-IOV, its reset, and both devices' QOM types; the VF is
 * simgpu-vf.c.
 *
 * Everything runs under QEMU's big lock: MMIO, the VF processors (a bottom
 * half and a timer each) and the PF's commands (a bottom half: in the main
 * loop, never on a vCPU thread; simgpu_pf_cmd()).
 *
 * Copyright (C) 2026 The gpumig authors
 * This work is licensed under the terms of the GNU GPL, version 2.
 */

#include "qemu/osdep.h"
#include "simgpu-pci.h"
#include "hw/core/cpu.h"

const SimgpuProfile simgpu_profiles[SIMGPU_PF_NR_PROFILES] = {
	[SIMGPU_PF_PROFILE_64M] = { 64 * MiB, 2 },
	[SIMGPU_PF_PROFILE_256M] = { 256 * MiB, 4 },
	[SIMGPU_PF_PROFILE_1G] = { 1 * GiB, 8 },
};

/* ---- PF commands ------------------------------------------------------- */

static uint32_t simgpu_cmd_vram(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s,
				bool read, bool take);
static bool simgpu_pf_write_covers(struct simgpu_model *m, uint64_t off, uint64_t len);
static void simgpu_pf_arrived(struct simgpu_model *m, uint64_t off, uint64_t len);

static void simgpu_pf_irq(SimgpuPfState *pf)
{
	PCIDevice *d = PCI_DEVICE(pf);

	if ((pf->int_status & pf->int_mask) && msi_enabled(d))
		msi_notify(d, 0);
}

void simgpu_pf_done(SimgpuPfState *pf, unsigned int n, uint32_t status)
{
	SimgpuSlot *s = &pf->slot[n];

	s->queued = false;	/* ended before it ran: a disable, a reset */
	timer_del(s->timer);
	s->status = status;
	pf->int_status |= 1U << n;
	simgpu_pf_irq(pf);
}

static bool simgpu_pf_dma(SimgpuPfState *pf, uint64_t addr, void *buf, uint64_t len,
			  bool to_host)
{
	return pci_dma_rw(PCI_DEVICE(pf), addr, buf, len,
			  to_host ? DMA_DIRECTION_FROM_DEVICE : DMA_DIRECTION_TO_DEVICE,
			  MEMTXATTRS_UNSPECIFIED) == MEMTX_OK;
}

/* A waiting PAUSE or INVALIDATE: done, failed at its deadline, or still waiting. */
void simgpu_pf_poll(SimgpuPfState *pf, unsigned int n)
{
	SimgpuSlot *s = &pf->slot[n];
	SimgpuVfState *vf = simgpu_pf_vf(pf, n);
	bool late = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) >= s->deadline;

	/* A command not yet run (simgpu_pf_cmd()) has nothing to wait for yet. */
	if (!(s->status & SIMGPU_PF_STATUS_BUSY) || s->queued || !vf || !vf->model)
		return;
	if (s->cmd == SIMGPU_PF_CMD_PAUSE) {
		if (simgpu_model_paused(vf->model)) {
			simgpu_pf_done(pf, n, SIMGPU_PF_OK);
		} else if (late) {
			simgpu_model_resume(vf->model);
			simgpu_pf_done(pf, n, SIMGPU_PF_ERR_BUSY);
		}
	} else if (s->cmd == SIMGPU_PF_CMD_INVALIDATE) {
		if (simgpu_model_host_inval_acked(vf->model, s->inval_seq) || late)
			simgpu_pf_done(pf, n, simgpu_model_host_inval_end(vf->model, s->inval_seq) ?
				       SIMGPU_PF_OK : SIMGPU_PF_ERR_TIMEOUT);
	}
}

static void simgpu_pf_deadline(void *opaque)
{
	SimgpuSlot *s = opaque;

	simgpu_pf_poll(s->pf, s->n);
}

/*
 * Start a command that completes later; @timeout_ms bounds it, from the
 * write of its opcode (the driver's wait starts there too).
 */
static void simgpu_pf_wait(SimgpuPfState *pf, unsigned int n, uint64_t timeout_ms)
{
	SimgpuSlot *s = &pf->slot[n];

	s->deadline = s->written + MIN(timeout_ms, 60000) * SCALE_MS;
	timer_mod(s->timer, s->deadline);
	simgpu_pf_poll(pf, n);
}

/*
 * A PF command's own DMA may reach anything, the PF's SR-IOV control
 * (through ECAM) included: after each, the command goes on only if its VF
 * still has the model it began with.  Until then no pointer into the VF's
 * state (bitmaps, log) is held across a DMA.
 */
static uint32_t simgpu_pf_dma_vf(SimgpuPfState *pf, SimgpuVfState *vf,
				 struct simgpu_model *m, uint64_t addr, void *buf,
				 uint64_t len, bool to_host)
{
	if (!simgpu_pf_dma(pf, addr, buf, len, to_host))
		return SIMGPU_PF_ERR_DMA;
	return vf->model == m ? SIMGPU_PF_OK : SIMGPU_PF_ERR_DISABLED;
}

static uint32_t simgpu_cmd_state(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s,
				 bool save)
{
	struct simgpu_model *m = vf->model;
	size_t len = simgpu_model_arch_size();
	g_autofree uint8_t *buf = NULL;
	uint32_t st;
	long n;

	if (!simgpu_model_paused(m))
		return SIMGPU_PF_ERR_ORDER;
	if (save) {
		if (s->args[1] < len)
			return SIMGPU_PF_ERR_ARGS;
		buf = g_malloc(len);
		n = simgpu_model_arch_save(m, buf, len);
		if (n < 0)
			return SIMGPU_PF_ERR_STATE;
		st = simgpu_pf_dma_vf(pf, vf, m, s->args[0], buf, n, true);
		if (st)
			return st;
		s->result = n;
		return SIMGPU_PF_OK;
	}
	if (!s->args[1] || s->args[1] > SIMGPU_ARCH_MAX)
		return SIMGPU_PF_ERR_ARGS;
	buf = g_malloc(s->args[1]);
	st = simgpu_pf_dma_vf(pf, vf, m, s->args[0], buf, s->args[1], false);
	if (st)
		return st;
	return simgpu_model_arch_restore(m, buf, s->args[1]) ?
	       SIMGPU_PF_ERR_STATE : SIMGPU_PF_OK;
}

/*
 * Zeroes written: a block covered whole reads as zeroes again, as after a
 * scrub (it is no longer "written", so a later migration sends it as a
 * zero range, not as data; a restore that wrote every zero block of a
 * stream left all of VRAM counted as data before); it changed, so it is
 * dirty while tracking.  Pending writes are folded first: none is lost or
 * mistaken for this one.  Part of a block is an ordinary write.
 */
static void simgpu_vram_zero(SimgpuVfState *vf, uint64_t off, uint64_t len)
{
	uint8_t *p = memory_region_get_ram_ptr(&vf->vram);
	uint64_t first = DIV_ROUND_UP(off, SIMGPU_BLOCK_SIZE);
	uint64_t last = (off + len) / SIMGPU_BLOCK_SIZE, b;

	if (first >= last) {
		memset(p + off, 0, len);
		memory_region_set_dirty(&vf->vram, off, len);
		return;
	}
	simgpu_vf_sync_vram(vf);
	if (off < first * SIMGPU_BLOCK_SIZE) {
		memset(p + off, 0, first * SIMGPU_BLOCK_SIZE - off);
		memory_region_set_dirty(&vf->vram, off, first * SIMGPU_BLOCK_SIZE - off);
	}
	if (off + len > last * SIMGPU_BLOCK_SIZE) {
		memset(p + last * SIMGPU_BLOCK_SIZE, 0, off + len - last * SIMGPU_BLOCK_SIZE);
		memory_region_set_dirty(&vf->vram, last * SIMGPU_BLOCK_SIZE,
					off + len - last * SIMGPU_BLOCK_SIZE);
	}
	/*
	 * A block never written since the last scrub or clear reads zero
	 * already (the fold just above made populated current): only the
	 * others are cleared, so a range costs what it holds, not its
	 * length, and a fresh destination's RAM stays untouched.
	 */
	for (b = first; b < last; b++) {
		if (test_bit(b, vf->populated)) {
			memset(p + b * SIMGPU_BLOCK_SIZE, 0, SIMGPU_BLOCK_SIZE);
			clear_bit(b, vf->populated);
		}
		if (vf->tracking)
			set_bit(b, vf->vdirty);
	}
}

static uint32_t simgpu_cmd_vram(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s,
				bool read, bool take)
{
	uint64_t off = s->args[0], addr = s->args[1], len = s->args[2];
	uint8_t *p = memory_region_get_ram_ptr(&vf->vram);
	struct simgpu_model *m = vf->model;

	/* Zeroes (no address) clear any range inside VRAM: SIMGPU_PF_CAP_ZERO_RANGE. */
	if (!len || (len > SIMGPU_XFER_MAX && (addr || read || take)) || off > vf->vram_size ||
	    len > vf->vram_size - off)
		return SIMGPU_PF_ERR_ARGS;
	if (take) {
		/*
		 * Whole blocks only: a part would clear a write outside it.
		 * Cleared before the copy: a write racing it marks the log
		 * after its data landed, so the next fold sets the bit again.
		 * A write already in the log but not folded is copied now and
		 * sent again later: a block too many, never one too few.
		 */
		if ((off | len) & (SIMGPU_BLOCK_SIZE - 1))
			return SIMGPU_PF_ERR_ARGS;
		bitmap_clear(vf->vdirty, off / SIMGPU_BLOCK_SIZE, len / SIMGPU_BLOCK_SIZE);
	}
	/* The aperture's RAM lives as long as the VF: only the model may go. */
	if (read)
		return simgpu_pf_dma_vf(pf, vf, m, addr, p + off, len, true);
	if (!simgpu_pf_write_covers(m, off, len))
		return SIMGPU_PF_ERR_ARGS;
	if (!addr) {
		simgpu_vram_zero(vf, off, len);
	} else {
		if (!simgpu_pf_dma(pf, addr, p + off, len, false))
			return SIMGPU_PF_ERR_DMA;
		memory_region_set_dirty(&vf->vram, off, len);
	}
	if (vf->model != m)
		return SIMGPU_PF_ERR_DISABLED;
	simgpu_pf_arrived(m, off, len);
	return SIMGPU_PF_OK;
}

static uint32_t simgpu_cmd_vram_dirty(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s,
				      bool peek)
{
	struct simgpu_model *m = vf->model;
	uint64_t nr = vf->nr_blocks, bytes = BITS_TO_LONGS(nr) * sizeof(unsigned long);
	g_autofree unsigned long *dirty = NULL, *populated = NULL;
	uint32_t st;

	if (s->args[1] < bytes || s->args[1] % 8)
		return SIMGPU_PF_ERR_ARGS;
	simgpu_vf_sync_vram(vf);
	/* Copies: the first DMA may disable the VF, which frees its bitmaps. */
	dirty = g_memdup2(vf->vdirty, bytes);
	populated = g_memdup2(vf->populated, bytes);
	st = simgpu_pf_dma_vf(pf, vf, m, s->args[0], dirty, bytes, true);
	if (!st)
		st = simgpu_pf_dma_vf(pf, vf, m, s->args[0] + s->args[1], populated, bytes, true);
	if (st)
		return st;
	/* Exactly what was reported: a block that turned dirty since stays. */
	if (!peek)
		bitmap_andnot(vf->vdirty, vf->vdirty, dirty, nr);
	s->result = nr;
	return SIMGPU_PF_OK;
}

/*
 * What VRAM_DIRTY would report, counted: the dirty blocks, and those of
 * them ever written.  Hardware would keep the two counts as bits flip;
 * here the bitmaps are counted a word at a time, which costs the host a
 * fraction of a microsecond even for a 16 GiB VF, next to the fold.
 */
static uint32_t simgpu_cmd_vram_count(SimgpuVfState *vf, SimgpuSlot *s)
{
	uint64_t dirty = 0, written = 0, i;

	simgpu_vf_sync_vram(vf);
	if (!vf->tracking) {
		dirty = vf->nr_blocks;
		written = bitmap_count_one(vf->populated, vf->nr_blocks);
	} else {
		for (i = 0; i < BITS_TO_LONGS(vf->nr_blocks); i++) {
			dirty += ctpopl(vf->vdirty[i]);
			written += ctpopl(vf->vdirty[i] & vf->populated[i]);
		}
	}
	s->result = dirty | written << 32;
	return SIMGPU_PF_OK;
}

/*
 * A run of blocks to be sent as zeroes: taken up to the first that is
 * clean or was written (folded first, so a write the driver has not seen
 * yet ends the run: its block is read and sent as data instead).
 */
static uint32_t simgpu_cmd_vram_take_zero(SimgpuVfState *vf, SimgpuSlot *s)
{
	uint64_t first = s->args[0], n = s->args[1], b;

	if (first > vf->nr_blocks || n > vf->nr_blocks - first)
		return SIMGPU_PF_ERR_ARGS;
	simgpu_vf_sync_vram(vf);
	for (b = first; b < first + n; b++) {
		if (test_bit(b, vf->populated) || !test_bit(b, vf->vdirty))
			break;
		clear_bit(b, vf->vdirty);
	}
	s->result = b - first;
	return SIMGPU_PF_OK;
}

static uint32_t simgpu_cmd_log_start(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s)
{
	struct simgpu_pf_range r[SIMGPU_LOG_RANGES];
	uint64_t n = s->args[1], total = 0, prev_end = 0;
	SimgpuLog *log = &vf->log;
	unsigned int i;
	uint32_t st;

	if (log->active)
		return SIMGPU_PF_ERR_ORDER;
	if (!n || n > SIMGPU_LOG_RANGES || s->args[2] != SIMGPU_LOG_PAGE)
		return SIMGPU_PF_ERR_ARGS;
	st = simgpu_pf_dma_vf(pf, vf, vf->model, s->args[0], r, n * sizeof(r[0]), false);
	if (st)
		return st;
	for (i = 0; i < n; i++) {
		uint64_t iova = le64_to_cpu(r[i].iova), len = le64_to_cpu(r[i].length);

		if (!len || (iova | len) % SIMGPU_LOG_PAGE || iova + len < iova ||
		    (i && iova < prev_end) || len / SIMGPU_LOG_PAGE > SIMGPU_LOG_PAGES - total)
			return SIMGPU_PF_ERR_ARGS;
		prev_end = iova + len;
		total += len / SIMGPU_LOG_PAGE;
	}
	for (i = 0; i < n; i++) {
		log->iova[i] = le64_to_cpu(r[i].iova);
		log->pages[i] = le64_to_cpu(r[i].length) / SIMGPU_LOG_PAGE;
		log->bits[i] = bitmap_new(log->pages[i]);
	}
	log->nr = n;
	log->active = true;
	return SIMGPU_PF_OK;
}

/* Report [iova, iova + len) and clear exactly what was reported. */
static uint32_t simgpu_cmd_log_report(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s)
{
	uint64_t iova = s->args[0], len = s->args[1], pages = len / SIMGPU_LOG_PAGE;
	SimgpuLog *log = &vf->log;
	g_autofree unsigned long *out = NULL;
	uint64_t bytes = DIV_ROUND_UP(pages, 8), p;
	unsigned int i;

	if (!log->active)
		return SIMGPU_PF_ERR_ORDER;
	if (!len || (iova | len) % SIMGPU_LOG_PAGE || iova + len < iova ||
	    pages > SIMGPU_LOG_PAGES || s->args[3] < bytes)
		return SIMGPU_PF_ERR_ARGS;
	out = bitmap_new(pages);
	for (i = 0; i < log->nr; i++) {
		uint64_t base = log->iova[i] / SIMGPU_LOG_PAGE, first = iova / SIMGPU_LOG_PAGE;
		uint64_t a = MAX(first, base);
		uint64_t b = MIN(first + pages, base + log->pages[i]);

		for (p = a; p < b; p++)
			if (test_and_clear_bit(p - base, log->bits[i]))
				set_bit(p - first, out);
	}
	if (!simgpu_pf_dma(pf, s->args[2], out, bytes, true))
		return SIMGPU_PF_ERR_DMA;
	return SIMGPU_PF_OK;
}

/* ---- post-copy: absent blocks, and what the PF holds ---------------------- */

void simgpu_pf_demand(SimgpuPfState *pf, unsigned int n)
{
	pf->int_status |= SIMGPU_PF_INT_DEMAND(n);
	simgpu_pf_irq(pf);
}

/* ARG0 addr, ARG1 bytes: a bitmap of the VF's blocks, as VRAM_DIRTY's. */
static uint32_t simgpu_pf_bitmap_in(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s,
				    unsigned long **map)
{
	uint64_t nr = vf->nr_blocks, bytes = BITS_TO_LONGS(nr) * sizeof(unsigned long);
	uint32_t st;

	if (s->args[1] < bytes || s->args[1] % 8)
		return SIMGPU_PF_ERR_ARGS;
	*map = g_malloc(bytes);
	st = simgpu_pf_dma_vf(pf, vf, vf->model, s->args[0], *map, bytes, false);
	if (st) {
		g_free(*map);
		*map = NULL;
		return st;
	}
	if (nr % BITS_PER_LONG)
		(*map)[nr / BITS_PER_LONG] &= BIT_MASK(nr % BITS_PER_LONG) - 1;
	return SIMGPU_PF_OK;
}

static uint32_t simgpu_cmd_set_absent(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s)
{
	g_autofree unsigned long *map = NULL;
	uint32_t st;
	int ret;

	if (!simgpu_model_paused(vf->model))
		return SIMGPU_PF_ERR_ORDER;
	st = simgpu_pf_bitmap_in(pf, vf, s, &map);
	if (st)
		return st;
	ret = simgpu_model_set_absent(vf->model, map, vf->nr_blocks, SIMGPU_BLOCK_SHIFT);
	if (ret)
		return ret == -EBUSY ? SIMGPU_PF_ERR_ORDER : SIMGPU_PF_ERR_ARGS;
	s->result = simgpu_model_absent_count(vf->model);
	return SIMGPU_PF_OK;
}

/* Whole blocks, each absent: written, then present (a duplicate writes nothing). */
static uint32_t simgpu_cmd_vram_deliver(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s)
{
	uint64_t off = s->args[0], len = s->args[2], b;

	if (!len || len > SIMGPU_XFER_MAX || off > vf->vram_size || len > vf->vram_size - off ||
	    (off | len) & (SIMGPU_BLOCK_SIZE - 1))
		return SIMGPU_PF_ERR_ARGS;
	for (b = off / SIMGPU_BLOCK_SIZE; b < (off + len) / SIMGPU_BLOCK_SIZE; b++)
		if (!simgpu_model_absent(vf->model, b))
			return SIMGPU_PF_ERR_ORDER;
	return simgpu_cmd_vram(pf, vf, s, false, false);
}

/* A write into absent blocks must cover each whole: it brings them. */
static bool simgpu_pf_write_covers(struct simgpu_model *m, uint64_t off, uint64_t len)
{
	uint64_t b;

	if (!simgpu_model_absent_count(m))
		return true;
	for (b = off / SIMGPU_BLOCK_SIZE; b <= (off + len - 1) / SIMGPU_BLOCK_SIZE; b++)
		if (simgpu_model_absent(m, b) &&
		    (b * SIMGPU_BLOCK_SIZE < off || (b + 1) * SIMGPU_BLOCK_SIZE > off + len))
			return false;
	return true;
}

static void simgpu_pf_arrived(struct simgpu_model *m, uint64_t off, uint64_t len)
{
	uint64_t b;

	if (!simgpu_model_absent_count(m))
		return;
	for (b = off / SIMGPU_BLOCK_SIZE; b <= (off + len - 1) / SIMGPU_BLOCK_SIZE; b++)
		simgpu_model_block_arrived(m, b);	/* -EALREADY for those present */
}

static void simgpu_hold_block_free(gpointer p)
{
	memset(p, 0, SIMGPU_BLOCK_SIZE);	/* scrubbed, as VRAM is */
	g_free(p);
}

void simgpu_hold_free(SimgpuSlot *s)
{
	SimgpuHold *h = s->hold;

	if (!h)
		return;
	g_hash_table_destroy(h->data);
	g_free(h->held);
	g_free(h);
	s->hold = NULL;
}

/*
 * The blocks leave the VF: what was ever written is kept, the aperture
 * reads zero there (folded first, so no write is lost or mistaken).
 */
static uint32_t simgpu_cmd_vram_hold(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s)
{
	uint8_t *p = memory_region_get_ram_ptr(&vf->vram);
	g_autofree unsigned long *map = NULL;
	SimgpuHold *h;
	uint64_t b;
	uint32_t st;

	if (!simgpu_model_paused(vf->model) || s->hold)
		return SIMGPU_PF_ERR_ORDER;
	st = simgpu_pf_bitmap_in(pf, vf, s, &map);
	if (st)
		return st;
	simgpu_vf_sync_vram(vf);
	h = g_new0(SimgpuHold, 1);
	h->nr_blocks = vf->nr_blocks;
	h->held = bitmap_new(vf->nr_blocks);
	h->data = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
					simgpu_hold_block_free);
	for (b = find_first_bit(map, vf->nr_blocks); b < vf->nr_blocks;
	     b = find_next_bit(map, vf->nr_blocks, b + 1)) {
		set_bit(b, h->held);
		h->count++;
		if (!test_bit(b, vf->populated))
			continue;
		g_hash_table_insert(h->data, g_memdup2(&b, sizeof(b)),
				    g_memdup2(p + b * SIMGPU_BLOCK_SIZE, SIMGPU_BLOCK_SIZE));
		memset(p + b * SIMGPU_BLOCK_SIZE, 0, SIMGPU_BLOCK_SIZE);
		clear_bit(b, vf->populated);
		clear_bit(b, vf->vdirty);
	}
	s->hold = h;
	s->result = h->count;
	return SIMGPU_PF_OK;
}

static uint32_t simgpu_cmd_hold_read(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s)
{
	uint64_t off = s->args[0], len = s->args[2], b, o;
	SimgpuHold *h = s->hold;
	g_autofree uint8_t *buf = NULL;

	if (!h)
		return SIMGPU_PF_ERR_ORDER;
	if (!len || len > SIMGPU_XFER_MAX || off > vf->vram_size || len > vf->vram_size - off)
		return SIMGPU_PF_ERR_ARGS;
	for (b = off / SIMGPU_BLOCK_SIZE; b <= (off + len - 1) / SIMGPU_BLOCK_SIZE; b++)
		if (!test_bit(b, h->held))
			return SIMGPU_PF_ERR_ARGS;
	buf = g_malloc0(len);
	for (o = off; o < off + len; ) {
		uint64_t blk = o / SIMGPU_BLOCK_SIZE, in = o % SIMGPU_BLOCK_SIZE;
		uint64_t n = MIN(SIMGPU_BLOCK_SIZE - in, off + len - o);
		uint8_t *d = g_hash_table_lookup(h->data, &blk);

		if (d)
			memcpy(buf + (o - off), d + in, n);
		o += n;
	}
	return simgpu_pf_dma_vf(pf, vf, vf->model, s->args[1], buf, len, true);
}

/* The VF runs again: what was held goes back (and counts as written). */
static uint32_t simgpu_cmd_hold_return(SimgpuVfState *vf, SimgpuSlot *s)
{
	uint8_t *p = memory_region_get_ram_ptr(&vf->vram);
	GHashTableIter it;
	gpointer key, val;

	if (!s->hold)
		return SIMGPU_PF_ERR_ORDER;
	g_hash_table_iter_init(&it, s->hold->data);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		uint64_t b = *(uint64_t *)key;

		memcpy(p + b * SIMGPU_BLOCK_SIZE, val, SIMGPU_BLOCK_SIZE);
		memory_region_set_dirty(&vf->vram, b * SIMGPU_BLOCK_SIZE, SIMGPU_BLOCK_SIZE);
	}
	simgpu_hold_free(s);
	return SIMGPU_PF_OK;
}

/* A command that completes at once: its status. */
static uint32_t simgpu_cmd_now(SimgpuPfState *pf, SimgpuVfState *vf, SimgpuSlot *s)
{
	switch (s->cmd) {
	case SIMGPU_PF_CMD_NOP:
		return SIMGPU_PF_OK;
	case SIMGPU_PF_CMD_RESUME:
		simgpu_model_resume(vf->model);
		return SIMGPU_PF_OK;
	case SIMGPU_PF_CMD_SAVE_STATE:
	case SIMGPU_PF_CMD_RESTORE_STATE:
		return simgpu_cmd_state(pf, vf, s, s->cmd == SIMGPU_PF_CMD_SAVE_STATE);
	case SIMGPU_PF_CMD_VRAM_READ:
	case SIMGPU_PF_CMD_VRAM_WRITE:
		return simgpu_cmd_vram(pf, vf, s, s->cmd == SIMGPU_PF_CMD_VRAM_READ, false);
	case SIMGPU_PF_CMD_SET_ABSENT:
		return simgpu_cmd_set_absent(pf, vf, s);
	case SIMGPU_PF_CMD_VRAM_DELIVER:
		return simgpu_cmd_vram_deliver(pf, vf, s);
	case SIMGPU_PF_CMD_VRAM_LOSE:
		return simgpu_model_block_lost(vf->model, s->args[0]) ? SIMGPU_PF_ERR_ARGS :
									SIMGPU_PF_OK;
	case SIMGPU_PF_CMD_VRAM_HOLD:
		return simgpu_cmd_vram_hold(pf, vf, s);
	case SIMGPU_PF_CMD_HOLD_READ:
		return simgpu_cmd_hold_read(pf, vf, s);
	case SIMGPU_PF_CMD_HOLD_RETURN:
		return simgpu_cmd_hold_return(vf, s);
	case SIMGPU_PF_CMD_HOLD_FREE:
		if (!s->hold)
			return SIMGPU_PF_ERR_ORDER;
		simgpu_hold_free(s);
		return SIMGPU_PF_OK;
	case SIMGPU_PF_CMD_VRAM_READ_TAKE:
		return simgpu_cmd_vram(pf, vf, s, true, true);
	case SIMGPU_PF_CMD_VRAM_TRACK:
		if (s->args[0] > 1)
			return SIMGPU_PF_ERR_ARGS;
		simgpu_vf_sync_vram(vf);
		vf->tracking = s->args[0];
		bitmap_fill(vf->vdirty, vf->nr_blocks);
		return SIMGPU_PF_OK;
	case SIMGPU_PF_CMD_VRAM_DIRTY:
	case SIMGPU_PF_CMD_VRAM_DIRTY_PEEK:
		return simgpu_cmd_vram_dirty(pf, vf, s, s->cmd == SIMGPU_PF_CMD_VRAM_DIRTY_PEEK);
	case SIMGPU_PF_CMD_SCRUB:
		simgpu_vf_scrub(vf);
		return SIMGPU_PF_OK;
	case SIMGPU_PF_CMD_DMA_LOG_START:
		return simgpu_cmd_log_start(pf, vf, s);
	case SIMGPU_PF_CMD_DMA_LOG_STOP:
		simgpu_log_stop(&vf->log);
		return SIMGPU_PF_OK;
	case SIMGPU_PF_CMD_DMA_LOG_REPORT:
		return simgpu_cmd_log_report(pf, vf, s);
	case SIMGPU_PF_CMD_VRAM_COUNT:
		return simgpu_cmd_vram_count(vf, s);
	case SIMGPU_PF_CMD_VRAM_TAKE_ZERO:
		return simgpu_cmd_vram_take_zero(vf, s);
	case SIMGPU_PF_CMD_SET_SHARE:
		if (s->args[0] > SIMGPU_PF_SHARE_MAX)
			return SIMGPU_PF_ERR_ARGS;
		s->result = simgpu_model_throttle(vf->model);
		simgpu_model_set_throttle(vf->model, s->args[0]);
		return SIMGPU_PF_OK;
	default:
		return SIMGPU_PF_ERR_OPCODE;
	}
}

/*
 * A command written: BUSY at once, run by the PF's bottom half, in the
 * main loop, never on the vCPU thread whose MMIO wrote it.  Commands fold
 * the aperture's dirty log (simgpu_vf_sync_vram()), and TCG's part of a
 * dirty-log sync waits for every vCPU to end its translation block
 * (run_on_cpu(), dropping the big lock): from a vCPU thread that waits on
 * the others, and two vCPUs writing two VFs' commands at once waited on
 * each other for ever (seen: the VM hung, its watchdog fired, QEMU stuck
 * pausing the vCPUs to shut down).
 */
static void simgpu_pf_cmd(SimgpuPfState *pf, unsigned int n, uint32_t op)
{
	SimgpuSlot *s = &pf->slot[n];

	if (s->status & SIMGPU_PF_STATUS_BUSY)
		return;		/* one command at a time: ignored */
	s->cmd = op;
	s->result = 0;
	s->status = SIMGPU_PF_STATUS_BUSY;
	s->written = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
	s->queued = true;
	qemu_bh_schedule(pf->cmd_bh);
}

static void simgpu_pf_cmd_run(SimgpuPfState *pf, unsigned int n)
{
	SimgpuSlot *s = &pf->slot[n];
	SimgpuVfState *vf = simgpu_pf_vf(pf, n);
	uint32_t op = s->cmd;

	if (!vf || !vf->model) {
		simgpu_pf_done(pf, n, SIMGPU_PF_ERR_DISABLED);
		return;
	}
	simgpu_vf_enter(vf);
	if (!pf->busy++)
		qemu_thread_get_self(&pf->busy_thread);
	switch (op) {
	case SIMGPU_PF_CMD_PAUSE:
		simgpu_model_pause(vf->model,
				   !simgpu_model_knob(vf->model, SIMGPU_PF_KNOB_PREEMPT));
		simgpu_pf_wait(pf, n, s->args[0]);
		break;
	case SIMGPU_PF_CMD_INVALIDATE:
		s->inval_seq = simgpu_model_host_inval(vf->model);
		simgpu_pf_wait(pf, n, s->args[0]);
		break;
	default:
		simgpu_pf_done(pf, n, simgpu_cmd_now(pf, vf, s));
	}
	pf->busy--;
	simgpu_vf_leave(vf);
}

/*
 * The PF's bottom half: every command written since it last ran.  A
 * bottom half of the main context can also run where a vCPU thread polls
 * that context (a drain under the big lock): from there the commands go
 * to a timer of the main loop's own, which only the main loop runs.
 */
static void simgpu_pf_cmds(void *opaque)
{
	SimgpuPfState *pf = opaque;
	unsigned int n;

	if (current_cpu) {
		timer_mod(pf->cmd_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME));
		return;
	}
	for (n = 0; n < pf->total_vfs; n++) {
		SimgpuSlot *s = &pf->slot[n];

		if (!s->queued)
			continue;
		s->queued = false;
		if (s->status & SIMGPU_PF_STATUS_BUSY)
			simgpu_pf_cmd_run(pf, n);
	}
}

/*
 * A command's own DMA that reaches the PF's registers (as for the VF's,
 * simgpu_vf_enter()): a DMA error, on the thread running it only.
 */
static bool simgpu_pf_reentered(SimgpuPfState *pf, hwaddr addr)
{
	if (!pf->busy || !qemu_thread_is_self(&pf->busy_thread))
		return false;
	warn_report_once("simgpu-pf: a command's DMA reached the PF's registers (0x%"
			 HWADDR_PRIx "): refused", addr);
	return true;
}

/* ---- PF registers --------------------------------------------------------- */

static uint64_t simgpu_pf_vf_read(SimgpuPfState *pf, unsigned int n, hwaddr reg)
{
	SimgpuSlot *s = &pf->slot[n];
	SimgpuVfState *vf = simgpu_pf_vf(pf, n);
	uint32_t p = s->profile;

	if (reg >= SIMGPU_PF_VF_ARG0_LO && reg <= SIMGPU_PF_VF_ARG3_HI) {
		uint64_t v = s->args[(reg - SIMGPU_PF_VF_ARG0_LO) / 8];

		return reg & 4 ? v >> 32 : (uint32_t)v;
	}
	if (reg >= SIMGPU_PF_VF_KNOB(0) && reg < SIMGPU_PF_VF_KNOB(SIMGPU_PF_NR_KNOBS))
		return vf ? simgpu_model_knob(vf->model, (reg - SIMGPU_PF_VF_KNOB(0)) / 4) : 0;
	if (reg >= SIMGPU_PF_VF_STAT(0) && reg < SIMGPU_PF_VF_STAT(SIMGPU_PF_NR_STATS)) {
		uint64_t v = vf ? simgpu_model_stat(vf->model, (reg - SIMGPU_PF_VF_STAT(0)) / 8) : 0;

		return reg & 4 ? v >> 32 : (uint32_t)v;
	}
	switch (reg) {
	case SIMGPU_PF_VF_CMD:
		return s->cmd;
	case SIMGPU_PF_VF_STATUS:
		return s->status;
	case SIMGPU_PF_VF_RESULT_LO:
		return (uint32_t)s->result;
	case SIMGPU_PF_VF_RESULT_HI:
		return s->result >> 32;
	case SIMGPU_PF_VF_PROFILE:
		return p;
	case SIMGPU_PF_VF_VRAM_LO:
		return (uint32_t)simgpu_profiles[p].vram;
	case SIMGPU_PF_VF_VRAM_HI:
		return simgpu_profiles[p].vram >> 32;
	case SIMGPU_PF_VF_QUEUES:
		return simgpu_profiles[p].queues;
	case SIMGPU_PF_VF_RESETS:
		return vf ? vf->resets : 0;
	case SIMGPU_PF_VF_GUEST_RESETS:
		return vf ? vf->guest_resets : 0;
	case SIMGPU_PF_VF_DEMAND:
		if (!vf || vf->dhead == vf->dtail)
			return 0;
		return vf->demand[vf->dhead++ % SIMGPU_DEMANDS] + 1;
	case SIMGPU_PF_VF_ABSENT:
		return vf && vf->model ? simgpu_model_absent_count(vf->model) : 0;
	case SIMGPU_PF_VF_HELD:
		return s->hold ? s->hold->count : 0;
	case SIMGPU_PF_VF_STATE:
		return !vf ? 0 : SIMGPU_PF_VF_STATE_ENABLED |
		       (simgpu_model_paused(vf->model) ? SIMGPU_PF_VF_STATE_PAUSED : 0) |
		       (vf->tracking ? SIMGPU_PF_VF_STATE_TRACKING : 0) |
		       (vf->log.active ? SIMGPU_PF_VF_STATE_LOGGING : 0);
	default:
		return 0;
	}
}

static uint32_t simgpu_pf_profiles(SimgpuPfState *pf)
{
	uint32_t p, mask = 0;

	for (p = 0; p < SIMGPU_PF_NR_PROFILES; p++)
		if (simgpu_profiles[p].vram <= pf->aperture)
			mask |= 1U << p;
	return mask;
}

static bool simgpu_pf_vfs_enabled(SimgpuPfState *pf)
{
	return pcie_sriov_num_vfs(PCI_DEVICE(pf)) &&
	       (pci_get_word(PCI_DEVICE(pf)->config + SIMGPU_SRIOV_CAP + PCI_SRIOV_CTRL) &
		PCI_SRIOV_CTRL_VFE);
}

static void simgpu_pf_vf_write(SimgpuPfState *pf, unsigned int n, hwaddr reg, uint32_t val)
{
	SimgpuSlot *s = &pf->slot[n];
	SimgpuVfState *vf = simgpu_pf_vf(pf, n);

	if (reg >= SIMGPU_PF_VF_ARG0_LO && reg <= SIMGPU_PF_VF_ARG3_HI) {
		uint64_t *a = &s->args[(reg - SIMGPU_PF_VF_ARG0_LO) / 8];

		*a = reg & 4 ? deposit64(*a, 32, 32, val) : deposit64(*a, 0, 32, val);
		return;
	}
	if (reg >= SIMGPU_PF_VF_KNOB(0) && reg < SIMGPU_PF_VF_KNOB(SIMGPU_PF_NR_KNOBS)) {
		if (vf) {
			simgpu_model_set_knob(vf->model, (reg - SIMGPU_PF_VF_KNOB(0)) / 4, val);
			qemu_bh_schedule(vf->bh);
		}
		return;
	}
	if (reg == SIMGPU_PF_VF_CMD)
		simgpu_pf_cmd(pf, n, val);
	else if (reg == SIMGPU_PF_VF_PROFILE && !simgpu_pf_vfs_enabled(pf) &&
		 val < SIMGPU_PF_NR_PROFILES && (simgpu_pf_profiles(pf) & (1U << val)))
		s->profile = val;	/* anything else is ignored, as hardware does */
}

static uint64_t simgpu_pf_read(SimgpuPfState *pf, hwaddr addr)
{
	if (addr >= SIMGPU_PF_VF_BASE) {
		unsigned int n = (addr - SIMGPU_PF_VF_BASE) / SIMGPU_PF_VF_STRIDE;

		return n < pf->total_vfs ?
		       simgpu_pf_vf_read(pf, n, (addr - SIMGPU_PF_VF_BASE) % SIMGPU_PF_VF_STRIDE) : 0;
	}
	switch (addr) {
	case SIMGPU_PF_REG_ID:
		return SIMGPU_PF_ID_MAGIC;
	case SIMGPU_PF_REG_VERSION:
		return SIMGPU_PF_ABI_VERSION;
	case SIMGPU_PF_REG_TOTAL_VFS:
		return MIN(pf->vfs_offered, pf->total_vfs);
	case SIMGPU_PF_REG_PROFILES:
		return simgpu_pf_profiles(pf);
	case SIMGPU_PF_REG_APERTURE_LO:
		return (uint32_t)pf->aperture;
	case SIMGPU_PF_REG_APERTURE_HI:
		return pf->aperture >> 32;
	case SIMGPU_PF_REG_INT_STATUS:
		return pf->int_status;
	case SIMGPU_PF_REG_INT_MASK:
		return pf->int_mask;
	case SIMGPU_PF_REG_BLOCK_SHIFT:
		return SIMGPU_BLOCK_SHIFT;
	case SIMGPU_PF_REG_ARCH_VERSION:
		return simgpu_model_arch_version();
	case SIMGPU_PF_REG_ARCH_SIZE:
		return simgpu_model_arch_size();
	case SIMGPU_PF_REG_LOG_RANGES:
		return SIMGPU_LOG_RANGES;
	case SIMGPU_PF_REG_LOG_PAGES:
		return SIMGPU_LOG_PAGES;
	case SIMGPU_PF_REG_XFER_MAX:
		return SIMGPU_XFER_MAX;
	case SIMGPU_PF_REG_CAPS:
		return SIMGPU_PF_CAP_VRAM_COUNT | SIMGPU_PF_CAP_SHARE | SIMGPU_PF_CAP_ABSENT |
		       SIMGPU_PF_CAP_ZERO_RANGE;
	default:
		return 0;
	}
}

static void simgpu_pf_write(SimgpuPfState *pf, hwaddr addr, uint64_t val)
{
	if (addr >= SIMGPU_PF_VF_BASE) {
		unsigned int n = (addr - SIMGPU_PF_VF_BASE) / SIMGPU_PF_VF_STRIDE;

		if (n < pf->total_vfs)
			simgpu_pf_vf_write(pf, n, (addr - SIMGPU_PF_VF_BASE) % SIMGPU_PF_VF_STRIDE,
					   val);
		return;
	}
	if (addr == SIMGPU_PF_REG_INT_STATUS) {
		pf->int_status &= ~val;
	} else if (addr == SIMGPU_PF_REG_INT_MASK) {
		pf->int_mask = val;
		simgpu_pf_irq(pf);
	}
}

static MemTxResult simgpu_pf_mmio_read(void *opaque, hwaddr addr, uint64_t *val,
				       unsigned int size, MemTxAttrs attrs)
{
	SimgpuPfState *pf = opaque;

	*val = 0;
	if (simgpu_pf_reentered(pf, addr))
		return MEMTX_ACCESS_ERROR;
	*val = simgpu_pf_read(pf, addr);
	return MEMTX_OK;
}

static MemTxResult simgpu_pf_mmio_write(void *opaque, hwaddr addr, uint64_t val,
					unsigned int size, MemTxAttrs attrs)
{
	SimgpuPfState *pf = opaque;

	if (simgpu_pf_reentered(pf, addr))
		return MEMTX_ACCESS_ERROR;
	simgpu_pf_write(pf, addr, val);
	return MEMTX_OK;
}

static const MemoryRegionOps simgpu_pf_ops = {
	.read_with_attrs = simgpu_pf_mmio_read,
	.write_with_attrs = simgpu_pf_mmio_write,
	.endianness = DEVICE_LITTLE_ENDIAN,
	.valid = { .min_access_size = 4, .max_access_size = 4 },
	.impl = { .min_access_size = 4, .max_access_size = 4 },
};


/* ---- the PF --------------------------------------------------------------- */

/* Config space, and a function-level reset (which resets SR-IOV too). */
static void simgpu_pf_write_config(PCIDevice *d, uint32_t addr, uint32_t val, int len)
{
	pci_default_write_config(d, addr, val, len);
	pcie_cap_flr_write_config(d, addr, val, len);
}

static void simgpu_pf_realize(PCIDevice *d, Error **errp)
{
	SimgpuPfState *pf = SIMGPU_PF(d);
	unsigned int n;

	if (!pf->total_vfs || pf->total_vfs > SIMGPU_VFS_NOARI) {
		error_setg(errp, "simgpu-pf: total-vfs must be 1..%d", SIMGPU_VFS_NOARI);
		return;
	}
	if (pf->aperture < simgpu_profiles[0].vram || !is_power_of_2(pf->aperture)) {
		error_setg(errp, "simgpu-pf: aperture must be a power of 2, at least 64M");
		return;
	}
	d->config_write = simgpu_pf_write_config;
	pci_config_set_revision(d->config, SIMGPU_PF_ABI_VERSION);
	memory_region_init_io(&pf->regs, OBJECT(pf), &simgpu_pf_ops, pf, "simgpu-pf-regs",
			      SIMGPU_PF_BAR0_SIZE);
	pf->regs.disable_reentrancy_guard = true;	/* simgpu_pf_reentered() */
	pci_register_bar(d, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &pf->regs);
	if (msi_init(d, 0x50, 1, true, false, errp))
		return;
	if (pcie_endpoint_cap_init(d, 0x80) < 0) {
		error_setg(errp, "simgpu-pf: no room for the PCIe capability");
		return;
	}
	pcie_cap_flr_init(d);
	pf->cmd_bh = qemu_bh_new(simgpu_pf_cmds, pf);
	pf->cmd_timer = timer_new_ns(QEMU_CLOCK_REALTIME, simgpu_pf_cmds, pf);
	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++) {
		pf->slot[n].pf = pf;
		pf->slot[n].n = n;
		pf->slot[n].timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, simgpu_pf_deadline,
						 &pf->slot[n]);
	}
	/*
	 * QEMU 10 realizes the VFs inside pcie_sriov_pf_init(), and they read
	 * their BAR types from here: set before, or a 64-bit BAR is registered
	 * as 32-bit and truncated.
	 */
	d->exp.sriov_pf.vf_bar_type[SIMGPU_VF_BAR_REGS] = PCI_BASE_ADDRESS_SPACE_MEMORY;
	d->exp.sriov_pf.vf_bar_type[SIMGPU_VF_BAR_MSIX] = PCI_BASE_ADDRESS_SPACE_MEMORY;
	d->exp.sriov_pf.vf_bar_type[SIMGPU_VF_BAR_VRAM] = PCI_BASE_ADDRESS_SPACE_MEMORY |
							  PCI_BASE_ADDRESS_MEM_TYPE_64 |
							  PCI_BASE_ADDRESS_MEM_PREFETCH;
	if (!pcie_sriov_pf_init(d, SIMGPU_SRIOV_CAP, TYPE_SIMGPU_VF, SIMGPU_PCI_DEVICE_ID,
				pf->total_vfs, pf->total_vfs, SIMGPU_VF_OFFSET,
				SIMGPU_VF_STRIDE, errp))
		return;
	pcie_sriov_pf_init_vf_bar(d, SIMGPU_VF_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
				  SIMGPU_BAR0_SIZE);
	pcie_sriov_pf_init_vf_bar(d, SIMGPU_VF_BAR_MSIX, PCI_BASE_ADDRESS_SPACE_MEMORY,
				  SIMGPU_VF_MSIX_SIZE);
	pcie_sriov_pf_init_vf_bar(d, SIMGPU_VF_BAR_VRAM,
				  d->exp.sriov_pf.vf_bar_type[SIMGPU_VF_BAR_VRAM], pf->aperture);
}

static void simgpu_pf_exit(PCIDevice *d)
{
	SimgpuPfState *pf = SIMGPU_PF(d);
	unsigned int n;

	pcie_sriov_pf_exit(d);
	qemu_bh_delete(pf->cmd_bh);
	timer_free(pf->cmd_timer);
	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		timer_free(pf->slot[n].timer);
	pcie_cap_exit(d);
	msi_uninit(d);
}

/*
 * A reset of the PF resets SR-IOV: the VFs go, and their state and VRAM
 * with them.  A VF that SR-IOV brings back after it tells its user so
 * (SIMGPU_ERR_DEVICE_LOST) until the user resets it.
 */
static void simgpu_pf_reset_hold(Object *obj, ResetType type)
{
	SimgpuPfState *pf = SIMGPU_PF(obj);
	bool was[SIMGPU_PF_MAX_VFS];
	unsigned int n;

	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		was[n] = n < pf->total_vfs && simgpu_pf_vf(pf, n);
	pcie_sriov_pf_reset(PCI_DEVICE(obj));
	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++)
		pf->slot[n].lost = was[n];
	pf->int_status = 0;
	pf->int_mask = 0;
	qemu_bh_cancel(pf->cmd_bh);
	timer_del(pf->cmd_timer);
	for (n = 0; n < SIMGPU_PF_MAX_VFS; n++) {
		timer_del(pf->slot[n].timer);
		pf->slot[n].status = 0;
		pf->slot[n].cmd = 0;
		pf->slot[n].queued = false;
	}
}

/* This hardware exists for tests: the VM it lives in does not migrate. */
const VMStateDescription simgpu_vmstate = {
	.name = "simgpu-pci",
	.unmigratable = 1,
};

static const Property simgpu_pf_props[] = {
	DEFINE_PROP_UINT32("total-vfs", SimgpuPfState, total_vfs, 4),
	/* What TOTAL_VFS says, when a test wants it to say less than SR-IOV's. */
	DEFINE_PROP_UINT32("x-vfs-offered", SimgpuPfState, vfs_offered, UINT32_MAX),
	DEFINE_PROP_SIZE("aperture", SimgpuPfState, aperture, 256 * MiB),
};

static void simgpu_pf_class_init(ObjectClass *klass, void *data)
{
	DeviceClass *dc = DEVICE_CLASS(klass);
	PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
	ResettableClass *rc = RESETTABLE_CLASS(klass);

	k->realize = simgpu_pf_realize;
	k->exit = simgpu_pf_exit;
	k->vendor_id = SIMGPU_PF_VENDOR_ID;
	k->device_id = SIMGPU_PF_DEVICE_ID;
	k->class_id = SIMGPU_PF_CLASS >> 8;
	k->subsystem_vendor_id = SIMGPU_PF_VENDOR_ID;
	k->subsystem_id = SIMGPU_PF_DEVICE_ID;
	rc->phases.hold = simgpu_pf_reset_hold;
	dc->desc = "simgpu-pci physical function (gpumig test hardware)";
	dc->vmsd = &simgpu_vmstate;
	device_class_set_props(dc, simgpu_pf_props);
	set_bit(DEVICE_CATEGORY_DISPLAY, dc->categories);
}


static const TypeInfo simgpu_types[] = {
	{
		.name = TYPE_SIMGPU_PF,
		.parent = TYPE_PCI_DEVICE,
		.instance_size = sizeof(SimgpuPfState),
		.class_init = simgpu_pf_class_init,
		.interfaces = (InterfaceInfo[]) { { INTERFACE_PCIE_DEVICE }, { } },
	},
	{
		.name = TYPE_SIMGPU_VF,
		.parent = TYPE_PCI_DEVICE,
		.instance_size = sizeof(SimgpuVfState),
		.class_init = simgpu_vf_class_init,
		.interfaces = (InterfaceInfo[]) { { INTERFACE_PCIE_DEVICE }, { } },
	},
};

DEFINE_TYPES(simgpu_types)
