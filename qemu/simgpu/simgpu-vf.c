/*
 * simgpu-pci: the virtual function ("simgpu-vf"), a simgpu run by the
 * kernel's own device model (simgpu-model.h): its environment (DMA through
 * the platform IOMMU, VRAM, interrupts, the processor's bottom half and
 * timer), its VRAM's dirty blocks, its BARs, reset and life.  The PF
 * (simgpu-pf.c) enables and disables it and serves its migration.
 *
 * Everything runs under QEMU's big lock: MMIO, the VF processors (a bottom
 * half and a timer each) and the PF's commands.
 *
 * Copyright (C) 2026 The gpumig authors
 * This work is licensed under the terms of the GNU GPL, version 2.
 */

#include "qemu/osdep.h"
#include "simgpu-pci.h"
#include "hw/core/cpu.h"

/* ---- the model's environment ------------------------------------------ */

int64_t simgpu_qemu_now_ns(void);
int64_t simgpu_qemu_now_ns(void)
{
	return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void simgpu_log_mark(SimgpuLog *log, uint64_t iova, uint64_t len)
{
	uint64_t first = iova / SIMGPU_LOG_PAGE;
	uint64_t last = (iova + len - 1) / SIMGPU_LOG_PAGE;
	unsigned int i;

	for (i = 0; i < log->nr; i++) {
		uint64_t base = log->iova[i] / SIMGPU_LOG_PAGE;
		uint64_t end = base + log->pages[i] - 1;
		uint64_t a = MAX(first, base), b = MIN(last, end);

		if (a <= b)
			bitmap_set(log->bits[i], a - base, b - a + 1);
	}
}

static int simgpu_env_dma_rw(void *ctx, uint64_t iova, void *buf, size_t len, bool write)
{
	SimgpuVfCtx *c = ctx;
	SimgpuVfState *vf = c->vf;
	MemTxResult r;

	if (c->dead)
		return -ENODEV;
	r = pci_dma_rw(PCI_DEVICE(vf), iova, buf, len,
		       write ? DMA_DIRECTION_FROM_DEVICE : DMA_DIRECTION_TO_DEVICE,
		       MEMTXATTRS_UNSPECIFIED);
	if (r != MEMTX_OK)
		return -EFAULT;
	/* The DMA itself may have disabled the VF (and freed its log). */
	if (c->dead)
		return -ENODEV;
	/* Marked after the write landed, as the kernel's tracker is. */
	if (write && vf->log.active && len)
		simgpu_log_mark(&vf->log, iova, len);
	return 0;
}

static int simgpu_env_vram_rw(void *ctx, uint64_t off, void *buf, size_t len, bool write)
{
	SimgpuVfCtx *c = ctx;
	SimgpuVfState *vf = c->vf;
	uint8_t *p = memory_region_get_ram_ptr(&vf->vram);

	if (c->dead)
		return -ENODEV;
	if (off > vf->vram_size || len > vf->vram_size - off)
		return -ERANGE;
	if (write) {
		memcpy(p + off, buf, len);
		memory_region_set_dirty(&vf->vram, off, len);
	} else {
		memcpy(buf, p + off, len);
	}
	return 0;
}

static void simgpu_env_raise_irq(void *ctx)
{
	SimgpuVfCtx *c = ctx;
	PCIDevice *d = PCI_DEVICE(c->vf);

	if (!c->dead && msix_enabled(d))
		msix_notify(d, 0);
}

static void simgpu_env_kick(void *ctx)
{
	SimgpuVfCtx *c = ctx;

	if (!c->dead)
		qemu_bh_schedule(c->vf->bh);
}


static void simgpu_env_stepped(void *ctx)
{
	SimgpuVfCtx *c = ctx;

	if (!c->dead)
		simgpu_pf_poll(simgpu_vf_pf(c->vf), simgpu_vf_index(c->vf));
}

/* The PF counts them: a migration driver reports new initial data. */
static void simgpu_env_guest_reset(void *ctx)
{
	SimgpuVfCtx *c = ctx;

	if (!c->dead)
		c->vf->guest_resets++;
}

/* Post-copy: the VF's work waits on an absent block; the PF says which. */
static void simgpu_env_demand(void *ctx, uint64_t blk)
{
	SimgpuVfCtx *c = ctx;
	SimgpuVfState *vf = c->vf;

	if (c->dead)
		return;
	if (vf->dtail - vf->dhead == SIMGPU_DEMANDS)
		vf->dhead++;	/* the oldest is forgotten; its work still waits */
	vf->demand[vf->dtail++ % SIMGPU_DEMANDS] = blk;
	simgpu_pf_demand(simgpu_vf_pf(vf), simgpu_vf_index(vf));
}

static const struct simgpu_model_env simgpu_env = {
	.dma_rw = simgpu_env_dma_rw,
	.vram_rw = simgpu_env_vram_rw,
	.raise_irq = simgpu_env_raise_irq,
	.kick = simgpu_env_kick,
	.stepped = simgpu_env_stepped,
	.guest_reset = simgpu_env_guest_reset,
	.demand = simgpu_env_demand,
};

static void simgpu_vf_ctx_free(gpointer data)
{
	SimgpuVfCtx *c = data;

	simgpu_model_free(c->model);
	g_free(c);
}

/*
 * Every entry into a VF's model (a processor pass, a PF command for the
 * VF) is counted: a DMA of the model's that reaches the VF's own
 * registers (a GPU address the tenant pointed at its BAR, which QEMU maps
 * for P2P) fails as a DMA error instead of changing registers mid-step,
 * as QEMU's re-entrancy guard would have it fail, and the model
 * lives until the entry ends, should that DMA disable the VF.
 *
 * QEMU's own guard (a flag per device, engaged for any access to any of
 * its regions) is not used for the registers: engaged from a timer pass
 * or a PF command it also refused vCPUs' accesses to the VF's and the
 * PF's registers, now and then, from other threads (the tenant's driver
 * read a STATUS of 0, idle, with its commands still queued; the PF
 * driver's command arguments were dropped).  Only an access on the thread
 * that entered, from inside the entry, is a re-entry.
 */
void simgpu_vf_enter(SimgpuVfState *vf)
{
	if (!vf->busy++)
		qemu_thread_get_self(&vf->busy_thread);
}

void simgpu_vf_leave(SimgpuVfState *vf)
{
	if (!--vf->busy && vf->retired) {
		g_slist_free_full(vf->retired, simgpu_vf_ctx_free);
		vf->retired = NULL;
	}
}

static bool simgpu_vf_reentered(SimgpuVfState *vf, hwaddr addr)
{
	if (!vf->busy || !qemu_thread_is_self(&vf->busy_thread))
		return false;
	warn_report_once("simgpu-vf: the device's own DMA reached its registers (0x%"
			 HWADDR_PRIx "): refused", addr);
	return true;
}

/*
 * The processor: a pass per bottom half or timer, as long as work remains.
 * With the throttle knob, a pause follows every pass, kick or not, as the
 * kernel's processor thread sleeps after each.
 */
static void simgpu_vf_run(void *opaque)
{
	SimgpuVfState *vf = opaque;
	struct simgpu_model *m = vf->model;
	int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL), delay_ns;
	uint32_t throttle;
	bool more, timed;

	if (!m)
		return;
	if (now < vf->not_before) {
		timer_mod(vf->timer, vf->not_before);
		return;
	}
	throttle = simgpu_model_knob(m, SIMGPU_PF_KNOB_THROTTLE_US);
	simgpu_vf_enter(vf);
	more = simgpu_model_run(m, throttle ? 1 : 16);
	timed = vf->model == m && simgpu_model_timed_work(m);
	simgpu_vf_leave(vf);
	if (vf->model != m)
		return;		/* the pass's DMA disabled the VF */
	vf->not_before = now + throttle * 1000LL;
	if (!more)
		return;
	if (throttle)
		delay_ns = throttle * 1000LL;
	else if (timed)
		delay_ns = 500 * 1000LL;	/* a timed step: do not spin */
	else
		delay_ns = 10 * 1000LL;
	timer_mod(vf->timer, now + delay_ns);
}

/* ---- VRAM ----------------------------------------------------------------- */

/*
 * Fold the aperture's dirty log (CPU writes through the BAR, and the
 * model's writes, which mark it too) into the per-block bits.  The log
 * is always on, so no write since the last scrub escapes populated.
 *
 * A snapshot answers only page by page (65,536 tests for 256 MiB on every
 * VRAM_DIRTY, which PRECOPY_INFO and MIG_DATA_SIZE cost), so the live log
 * is looked at first, a word at a time, per group of blocks: only the
 * span from the first to the last written group is snapshotted (and
 * cleared, in one go) and looked at block by block.  A write that races
 * the fold is in the snapshot or, outside its span, still in the log for
 * the next one.  Where an accelerator keeps its own log (KVM), the live
 * log is current only after the sync the snapshot does: there the whole
 * aperture is the span.
 */
#define SIMGPU_SYNC_GROUP	64	/* blocks: 4 MiB, whole words of the log */

void simgpu_vf_sync_vram(SimgpuVfState *vf)
{
	ram_addr_t base = memory_region_get_ram_addr(&vf->vram);
	uint64_t first = 0, last = vf->nr_blocks, g, end, b;
	DirtyBitmapSnapshot *snap;

	/* The snapshot waits on every vCPU: never from one (simgpu_pf_cmd()). */
	assert(!current_cpu);

	if (tcg_enabled() || qtest_enabled()) {
		first = vf->nr_blocks;
		last = 0;
		for (g = 0; g < vf->nr_blocks; g += SIMGPU_SYNC_GROUP) {
			end = MIN(g + SIMGPU_SYNC_GROUP, vf->nr_blocks);
			if (!cpu_physical_memory_get_dirty(base + g * SIMGPU_BLOCK_SIZE,
							   (end - g) * SIMGPU_BLOCK_SIZE,
							   DIRTY_MEMORY_VGA))
				continue;
			first = MIN(first, g);
			last = end;
		}
		if (first >= last)
			return;
	}
	snap = memory_region_snapshot_and_clear_dirty(&vf->vram, first * SIMGPU_BLOCK_SIZE,
						      (last - first) * SIMGPU_BLOCK_SIZE,
						      DIRTY_MEMORY_VGA);
	for (b = first; b < last; b++) {
		if (!memory_region_snapshot_get_dirty(&vf->vram, snap, b * SIMGPU_BLOCK_SIZE,
						      SIMGPU_BLOCK_SIZE))
			continue;
		set_bit(b, vf->populated);
		if (vf->tracking)
			set_bit(b, vf->vdirty);
	}
	g_free(snap);
}

void simgpu_log_stop(SimgpuLog *log)
{
	unsigned int i;

	for (i = 0; i < log->nr; i++)
		g_free(log->bits[i]);
	memset(log, 0, sizeof(*log));
}

/*
 * VRAM discarded, its dirty log forgotten.  The log is cleared, not
 * folded (simgpu_vf_sync_vram()): nothing in it is needed any more, and
 * SR-IOV enabling the VF calls this from a vCPU's config write, where a
 * fold's wait on every vCPU (simgpu_pf_cmd()) must not run.
 */
void simgpu_vf_scrub(SimgpuVfState *vf)
{
	ram_block_discard_range(vf->vram.ram_block, 0, memory_region_size(&vf->vram));
	memory_region_reset_dirty(&vf->vram, 0, memory_region_size(&vf->vram), DIRTY_MEMORY_VGA);
	bitmap_zero(vf->populated, vf->nr_blocks);
	bitmap_zero(vf->vdirty, vf->nr_blocks);
	vf->tracking = false;
	simgpu_log_stop(&vf->log);
	vf->dhead = vf->dtail = 0;
	if (vf->model) {
		simgpu_model_absent_clear(vf->model);
		simgpu_model_reset(vf->model);
		simgpu_model_clear_stats(vf->model);
	}
}


/* ---- the VF ------------------------------------------------------------- */

/* A re-entry fails as a bus error: the model's DMA sees a DMA error. */
static MemTxResult simgpu_vf_read(void *opaque, hwaddr addr, uint64_t *val,
				  unsigned int size, MemTxAttrs attrs)
{
	SimgpuVfState *vf = opaque;

	*val = 0;
	if (simgpu_vf_reentered(vf, addr))
		return MEMTX_ACCESS_ERROR;
	if (vf->model)
		*val = simgpu_model_mmio_read(vf->model, addr);
	return MEMTX_OK;
}

static MemTxResult simgpu_vf_write(void *opaque, hwaddr addr, uint64_t val,
				   unsigned int size, MemTxAttrs attrs)
{
	SimgpuVfState *vf = opaque;

	if (simgpu_vf_reentered(vf, addr))
		return MEMTX_ACCESS_ERROR;
	if (vf->model)
		simgpu_model_mmio_write(vf->model, addr, val);
	return MEMTX_OK;
}

static const MemoryRegionOps simgpu_vf_ops = {
	.read_with_attrs = simgpu_vf_read,
	.write_with_attrs = simgpu_vf_write,
	.endianness = DEVICE_LITTLE_ENDIAN,
	.valid = { .min_access_size = 4, .max_access_size = 4 },
	.impl = { .min_access_size = 4, .max_access_size = 4 },
};

/* SR-IOV enabled the VF: it gets the profile its PF slot holds. */
static void simgpu_vf_enable(SimgpuVfState *vf)
{
	SimgpuPfState *pf = simgpu_vf_pf(vf);
	uint32_t p = pf->slot[simgpu_vf_index(vf)].profile;

	vf->vram_size = simgpu_profiles[p].vram;
	vf->queues = simgpu_profiles[p].queues;
	vf->nr_blocks = DIV_ROUND_UP(vf->vram_size, SIMGPU_BLOCK_SIZE);
	vf->vdirty = bitmap_new(vf->nr_blocks);
	vf->populated = bitmap_new(vf->nr_blocks);
	vf->ctx = g_new0(SimgpuVfCtx, 1);
	vf->ctx->vf = vf;
	vf->model = simgpu_model_new(&simgpu_env, vf->ctx, vf->queues, vf->vram_size);
	vf->ctx->model = vf->model;
	vf->resets = 0;
	vf->guest_resets = 0;
	simgpu_vf_scrub(vf);
	if (pf->slot[simgpu_vf_index(vf)].lost && vf->model)
		simgpu_model_lost(vf->model);
	pf->slot[simgpu_vf_index(vf)].lost = false;
}

static void simgpu_vf_disable(SimgpuVfState *vf)
{
	SimgpuPfState *pf = simgpu_vf_pf(vf);
	SimgpuSlot *s = &pf->slot[simgpu_vf_index(vf)];

	if (!vf->model)
		return;
	if (s->status & SIMGPU_PF_STATUS_BUSY)
		simgpu_pf_done(pf, simgpu_vf_index(vf), SIMGPU_PF_ERR_DISABLED);
	simgpu_hold_free(s);	/* what the PF held for it goes with it */
	qemu_bh_cancel(vf->bh);
	timer_del(vf->timer);
	simgpu_log_stop(&vf->log);
	vf->ctx->dead = true;
	if (vf->busy)
		vf->retired = g_slist_prepend(vf->retired, vf->ctx);
	else
		simgpu_vf_ctx_free(vf->ctx);
	vf->ctx = NULL;
	vf->model = NULL;
	g_free(vf->vdirty);
	g_free(vf->populated);
	vf->vdirty = NULL;
	vf->populated = NULL;
	ram_block_discard_range(vf->vram.ram_block, 0, memory_region_size(&vf->vram));
}

/*
 * Reset: SR-IOV enabling or disabling the VF, or a function-level reset.
 * An FLR resets the function (registers, queues, translations) and ends
 * its pending PF command; VRAM, its dirty bits and the DMA log belong to
 * the PF and survive, so a migration driver loses nothing it tracked.
 */
static void simgpu_vf_reset_hold(Object *obj, ResetType type)
{
	SimgpuVfState *vf = SIMGPU_VF(obj);
	PCIDevice *d = PCI_DEVICE(obj);
	SimgpuPfState *pf = simgpu_vf_pf(vf);
	unsigned int n = simgpu_vf_index(vf);

	if (!d->enabled) {
		simgpu_vf_disable(vf);
		return;
	}
	if (!vf->model) {
		simgpu_vf_enable(vf);
		return;
	}
	vf->resets++;
	if (pf->slot[n].status & SIMGPU_PF_STATUS_BUSY) {
		simgpu_model_host_inval_end(vf->model, pf->slot[n].inval_seq);
		simgpu_pf_done(pf, n, SIMGPU_PF_ERR_RESET);
	}
	qemu_bh_cancel(vf->bh);
	timer_del(vf->timer);
	simgpu_model_reset(vf->model);
	/* A VMM resets the function when a tenant opens it: a new session. */
	simgpu_model_clear_stats(vf->model);
}

static void simgpu_vf_write_config(PCIDevice *d, uint32_t addr, uint32_t val, int len)
{
	pci_default_write_config(d, addr, val, len);
	pcie_cap_flr_write_config(d, addr, val, len);
}

static void simgpu_vf_realize(PCIDevice *d, Error **errp)
{
	SimgpuVfState *vf = SIMGPU_VF(d);
	SimgpuPfState *pf = SIMGPU_PF(pcie_sriov_get_pf(d));

	d->config_write = simgpu_vf_write_config;
	pci_config_set_revision(d->config, SIMGPU_ABI_VERSION);
	memory_region_init_io(&vf->regs, OBJECT(vf), &simgpu_vf_ops, vf, "simgpu-vf-regs",
			      SIMGPU_BAR0_SIZE);
	vf->regs.disable_reentrancy_guard = true;	/* simgpu_vf_enter() */
	pcie_sriov_vf_register_bar(d, SIMGPU_VF_BAR_REGS, &vf->regs);
	memory_region_init(&vf->msix, OBJECT(vf), "simgpu-vf-msix", SIMGPU_VF_MSIX_SIZE);
	pcie_sriov_vf_register_bar(d, SIMGPU_VF_BAR_MSIX, &vf->msix);
	if (!memory_region_init_ram(&vf->vram, OBJECT(vf), "simgpu-vf-vram", pf->aperture,
				    errp))
		return;
	pcie_sriov_vf_register_bar(d, SIMGPU_VF_BAR_VRAM, &vf->vram);
	/* Always logged, so no write to VRAM goes unseen (simgpu_vf_sync_vram()). */
	memory_region_set_log(&vf->vram, true, DIRTY_MEMORY_VGA);
	if (msix_init(d, SIMGPU_VF_MSIX_VECTORS, &vf->msix, SIMGPU_VF_BAR_MSIX, 0, &vf->msix,
		      SIMGPU_VF_BAR_MSIX, SIMGPU_VF_MSIX_PBA, 0x70, errp))
		return;
	msix_vector_use(d, 0);
	if (pcie_endpoint_cap_init(d, 0x80) < 0) {
		error_setg(errp, "simgpu-vf: no room for the PCIe capability");
		return;
	}
	pcie_cap_flr_init(d);
	vf->bh = qemu_bh_new(simgpu_vf_run, vf);	/* its pass enters the model */
	vf->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, simgpu_vf_run, vf);
}

static void simgpu_vf_exit(PCIDevice *d)
{
	SimgpuVfState *vf = SIMGPU_VF(d);

	simgpu_vf_disable(vf);
	g_slist_free_full(vf->retired, simgpu_vf_ctx_free);
	vf->retired = NULL;
	qemu_bh_delete(vf->bh);
	timer_free(vf->timer);
	msix_unuse_all_vectors(d);
	msix_uninit(d, &vf->msix, &vf->msix);
	pcie_cap_exit(d);
}


void simgpu_vf_class_init(ObjectClass *klass, void *data)
{
	DeviceClass *dc = DEVICE_CLASS(klass);
	PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
	ResettableClass *rc = RESETTABLE_CLASS(klass);

	k->realize = simgpu_vf_realize;
	k->exit = simgpu_vf_exit;
	k->vendor_id = SIMGPU_PCI_VENDOR_ID;
	k->device_id = SIMGPU_PCI_DEVICE_ID;
	k->class_id = SIMGPU_PCI_CLASS >> 8;
	k->subsystem_vendor_id = SIMGPU_PCI_VENDOR_ID;
	k->subsystem_id = SIMGPU_PCI_DEVICE_ID;
	rc->phases.hold = simgpu_vf_reset_hold;
	dc->desc = "simgpu-pci virtual function (gpumig test hardware)";
	dc->vmsd = &simgpu_vmstate;
	dc->user_creatable = false;
	set_bit(DEVICE_CATEGORY_DISPLAY, dc->categories);
}
