// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu GPU MMU: a three-level page-table walk over tables in guest
 * memory, and a direct-mapped translation cache (IOTLB) in front of it.
 *
 * The cache is the point: a translation the guest changed in memory keeps
 * being used until the guest (or the host driver) invalidates it and the
 * device acknowledges; after the acknowledgment it never is.  Every
 * access goes through simgpu_mmu_translate(), under the core's lock, and
 * the flush that precedes an acknowledgment happens under the same lock.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/lockdep.h>
#include <kunit/visibility.h>

#include "simgpu.h"

/* A table is one page of 64-bit entries; the VA is covered exactly. */
static_assert(SIMGPU_PT_ENTRIES * sizeof(u64) == SIMGPU_PAGE_SIZE);
static_assert(SIMGPU_VA_BITS == 39);

/**
 * simgpu_mmu_flush() - forget every cached translation
 * @core: device, lock held
 */
void simgpu_mmu_flush(struct simgpu_core *core)
{
	lockdep_assert_held(&core->lock);
	memset(core->tlb, 0, sizeof(core->tlb));
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_mmu_flush);

/**
 * simgpu_tlb_empty() - no translation is cached
 * @core: device
 *
 * Return: true when the IOTLB holds nothing.
 */
bool simgpu_tlb_empty(struct simgpu_core *core)
{
	bool empty = true;
	int i;

	mutex_lock(&core->lock);
	for (i = 0; i < SIMGPU_TLB_ENTRIES; i++)
		empty &= !core->tlb[i].valid;
	mutex_unlock(&core->lock);
	return empty;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_tlb_empty);

static u32 simgpu_mmu_walk(struct simgpu_core *core, u64 va, u64 *pte)
{
	u64 table = core->pt_root & SIMGPU_PTE_ADDR_MASK;
	int level;

	for (level = SIMGPU_PT_ROOT_LEVEL; level >= 0; level--) {
		u64 addr = table + SIMGPU_PT_INDEX(va, level) * sizeof(__le64);
		__le64 raw;
		u64 e;

		if (core->env->dma_rw(core->ctx, addr, &raw, sizeof(raw), false)) {
			core->fault_addr = addr;
			return SIMGPU_ERR_PT_DMA;
		}
		e = le64_to_cpu(raw);
		if (!(e & SIMGPU_PTE_VALID)) {
			core->fault_addr = va;
			return SIMGPU_ERR_PAGE_FAULT;
		}
		if (!level)
			*pte = e;
		else
			table = e & SIMGPU_PTE_ADDR_MASK;
	}
	return 0;
}

/**
 * simgpu_mmu_translate() - GPU VA to a leaf page-table entry
 * @core: device, lock held
 * @va: GPU virtual address
 * @write: the access writes
 * @pte: the leaf entry
 *
 * Return: 0 or SIMGPU_ERR_*; core->fault_addr says where it failed.
 */
u32 simgpu_mmu_translate(struct simgpu_core *core, u64 va, bool write, u64 *pte)
{
	u64 vpn = va >> SIMGPU_PAGE_SHIFT;
	struct simgpu_tlb_entry *t = &core->tlb[vpn % SIMGPU_TLB_ENTRIES];
	u32 err;

	lockdep_assert_held(&core->lock);
	if (va >> SIMGPU_VA_BITS) {
		core->fault_addr = va;
		return SIMGPU_ERR_PAGE_FAULT;
	}
	if (t->valid && t->vpn == vpn) {
		core->stats.tlb_hits++;
		*pte = t->pte;
	} else {
		core->stats.tlb_misses++;
		err = simgpu_mmu_walk(core, va, pte);
		if (err)
			return err;
		t->vpn = vpn;
		t->pte = *pte;
		t->valid = true;
	}
	if (write && !(*pte & SIMGPU_PTE_WRITE)) {
		core->fault_addr = va;
		return SIMGPU_ERR_WRITE_FAULT;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_mmu_translate);

/*
 * Before an access moves a byte: is any VRAM page it touches absent (a
 * migration still owes it) or lost?  Translation errors are left to the
 * access itself.
 */
static u32 simgpu_mem_probe(struct simgpu_core *core, u64 va, size_t len, bool write)
{
	while (len) {
		size_t off = va & (SIMGPU_PAGE_SIZE - 1);
		size_t n = min_t(size_t, len, SIMGPU_PAGE_SIZE - off);
		u64 pte;
		u32 err;

		if (simgpu_mmu_translate(core, va, write, &pte))
			return 0;
		if (pte & SIMGPU_PTE_VRAM) {
			err = simgpu_absent_probe(core, (pte & SIMGPU_PTE_ADDR_MASK) + off, n,
						  write);
			if (err) {
				core->fault_addr = va;
				return err;
			}
		}
		va += n;
		len -= n;
	}
	return 0;
}

/**
 * simgpu_mem_access() - read or write GPU virtual memory
 * @core: device, lock held
 * @va: GPU virtual address
 * @buf: kernel buffer
 * @len: bytes
 * @write: true to write @buf to the device's memory
 *
 * Each page is translated separately and lands in VRAM or, through the
 * environment (VFIO), in guest memory.  While a migration still owes VRAM
 * (absent.c), nothing moves unless every VRAM page the access touches is
 * there.
 *
 * Return: 0, SIMGPU_STEP_WAIT (core->wait_blk is the absent block), or
 * SIMGPU_ERR_*; core->fault_addr says where it failed.
 */
u32 simgpu_mem_access(struct simgpu_core *core, u64 va, void *buf, size_t len,
		      bool write)
{
	u8 *p = buf;
	u32 err;

	lockdep_assert_held(&core->lock);
	if (core->ab.nr_absent || core->ab.nr_lost) {
		err = simgpu_mem_probe(core, va, len, write);
		if (err)
			return err;
	}
	while (len) {
		size_t off = va & (SIMGPU_PAGE_SIZE - 1);
		size_t n = min_t(size_t, len, SIMGPU_PAGE_SIZE - off);
		u64 pte, addr;
		int ret;

		err = simgpu_mmu_translate(core, va, write, &pte);
		if (err)
			return err;
		addr = (pte & SIMGPU_PTE_ADDR_MASK) + off;
		if (pte & SIMGPU_PTE_VRAM) {
			ret = core->env->vram_rw(core->ctx, addr, p, n, write);
			if (ret) {
				core->fault_addr = va;
				return ret == -ERANGE ? SIMGPU_ERR_VRAM_RANGE :
							SIMGPU_ERR_INTERNAL;
			}
			if (write && core->ab.nr_lost)
				simgpu_absent_written(core, addr, n);
		} else if (core->env->dma_rw(core->ctx, addr, p, n, write)) {
			core->fault_addr = va;
			return SIMGPU_ERR_DMA;
		}
		p += n;
		va += n;
		len -= n;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_mem_access);
