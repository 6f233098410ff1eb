// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu device memory.
 *
 * VRAM is backed lazily: a page is allocated (zeroed) on its first write
 * and an absent page reads as zeroes.  So a 1 GiB instance costs only what
 * its tenant wrote, and scrubbing is freeing: after simgpu_vram_scrub()
 * every byte reads as zero and no page of the old tenant is left.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/lockdep.h>
#include <linux/mm.h>

#include <kunit/visibility.h>

#include "simgpu_host.h"

/**
 * simgpu_vram_init() - empty VRAM of @size bytes
 * @vram: VRAM
 * @size: bytes
 * @lock: the lock every later call holds (the core's)
 */
void simgpu_vram_init(struct simgpu_vram *vram, u64 size, struct mutex *lock)
{
	vram->lock = lock;
	xa_init(&vram->pages);
	vram->size = size;
	vram->present = 0;
	vram->dirty = NULL;
	vram->dirtied = NULL;
	vram->nr_blocks = DIV_ROUND_UP(size, 1ULL << SIMGPU_VRAM_BLOCK_SHIFT);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_init);

/**
 * simgpu_vram_rw() - copy between VRAM and a kernel buffer
 * @vram: VRAM
 * @offset: byte offset in VRAM
 * @buf: kernel buffer
 * @len: bytes
 * @write: true to copy @buf into VRAM
 *
 * Context: @vram->lock held.
 * Return: 0, -ERANGE outside VRAM, -ENOMEM when a page cannot be backed.
 */
int simgpu_vram_rw(struct simgpu_vram *vram, u64 offset, void *buf, size_t len,
		   bool write)
{
	u8 *p = buf;
	u64 end;

	lockdep_assert_held(vram->lock);
	if (check_add_overflow(offset, (u64)len, &end) || end > vram->size)
		return -ERANGE;

	while (len) {
		unsigned long idx = offset >> PAGE_SHIFT;
		size_t off = offset & ~PAGE_MASK;
		size_t n = min_t(size_t, len, PAGE_SIZE - off);
		struct page *page = xa_load(&vram->pages, idx);
		void *va;

		if (!page && !write) {
			memset(p, 0, n);
		} else {
			if (!page) {
				int ret;

				page = alloc_page(GFP_KERNEL | __GFP_ZERO);
				if (!page)
					return -ENOMEM;
				ret = xa_err(xa_store(&vram->pages, idx, page,
						      GFP_KERNEL));
				if (ret) {
					__free_page(page);
					return ret;
				}
				vram->present++;
			}
			va = kmap_local_page(page);
			if (write && vram->dirty &&
			    !test_and_set_bit(offset >> SIMGPU_VRAM_BLOCK_SHIFT, vram->dirty) &&
			    vram->dirtied)
				vram->dirtied(vram->dirtied_ctx);
			if (write)
				memcpy(va + off, p, n);
			else
				memcpy(p, va + off, n);
			kunmap_local(va);
		}
		p += n;
		offset += n;
		len -= n;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_rw);

/**
 * simgpu_vram_track() - start or stop per-block dirty tracking
 * @vram: VRAM, @vram->lock held
 * @on: start (every block marked dirty) or stop
 *
 * Return: 0 or -ENOMEM.
 */
int simgpu_vram_track(struct simgpu_vram *vram, bool on)
{
	lockdep_assert_held(vram->lock);
	bitmap_free(vram->dirty);
	vram->dirty = NULL;
	if (!on)
		return 0;
	vram->dirty = bitmap_alloc(vram->nr_blocks, GFP_KERNEL);
	if (!vram->dirty)
		return -ENOMEM;
	bitmap_fill(vram->dirty, vram->nr_blocks);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_track);

/**
 * simgpu_vram_block_zero() - does a block have no backed page?
 * @vram: VRAM, @vram->lock held
 * @blk: block index
 *
 * Return: true when every byte of the block reads as zero because nothing
 * backs it.  (A backed page may hold zeroes too; callers check data.)
 */
bool simgpu_vram_block_zero(struct simgpu_vram *vram, unsigned long blk)
{
	lockdep_assert_held(vram->lock);
	unsigned long first = blk << (SIMGPU_VRAM_BLOCK_SHIFT - PAGE_SHIFT);
	unsigned long last = first + (1UL << (SIMGPU_VRAM_BLOCK_SHIFT - PAGE_SHIFT)) - 1;

	return !xa_find(&vram->pages, &first, last, XA_PRESENT);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_block_zero);

/**
 * simgpu_vram_zero() - make a range read as zero, exactly
 * @vram: VRAM, @vram->lock held
 * @offset: start, any byte
 * @len: length, any; the range lies inside VRAM (the caller checked)
 *
 * Whole pages inside the range are dropped (an absent page reads as zero);
 * a page the range covers only in part keeps the bytes outside the range
 * and has those inside cleared.  Every block the range touches is dirty.
 */
void simgpu_vram_zero(struct simgpu_vram *vram, u64 offset, u64 len)
{
	u64 end = offset + len;

	lockdep_assert_held(vram->lock);
	if (!len)
		return;
	while (offset < end) {
		unsigned long idx = offset >> PAGE_SHIFT;
		size_t off = offset & ~PAGE_MASK;
		size_t n = min_t(u64, end - offset, PAGE_SIZE - off);
		struct page *page;

		if (n == PAGE_SIZE) {
			page = xa_erase(&vram->pages, idx);
			if (page) {
				__free_page(page);
				vram->present--;
			}
		} else {
			page = xa_load(&vram->pages, idx);
			if (page)
				memzero_page(page, off, n);
		}
		offset += n;
	}
	if (vram->dirty) {
		u64 first = (end - len) >> SIMGPU_VRAM_BLOCK_SHIFT;
		u64 last = (end - 1) >> SIMGPU_VRAM_BLOCK_SHIFT;

		bitmap_set(vram->dirty, first, last - first + 1);
	}
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_zero);

/**
 * simgpu_vram_scrub() - drop every page: all of VRAM reads zero again
 * @vram: VRAM, @vram->lock held
 */
void simgpu_vram_scrub(struct simgpu_vram *vram)
{
	struct page *page;
	unsigned long idx;

	lockdep_assert_held(vram->lock);
	xa_for_each(&vram->pages, idx, page)
		__free_page(page);
	xa_destroy(&vram->pages);
	vram->present = 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_scrub);
