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
#include <linux/crc32.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/uio.h>

#include <gpumig/compat.h>
#include <kunit/visibility.h>

#include "simgpu_host.h"

static void simgpu_vram_pool_work(struct work_struct *work);

/**
 * simgpu_vram_init() - empty VRAM of @size bytes
 * @vram: VRAM
 * @size: bytes
 * @lock: the lock every later call holds (the core's)
 */
void simgpu_vram_init(struct simgpu_vram *vram, u64 size, struct mutex *lock)
{
	vram->lock = lock;
	INIT_LIST_HEAD(&vram->pool);
	vram->pool_len = 0;
	vram->pool_want = 0;
	INIT_WORK(&vram->pool_work, simgpu_vram_pool_work);
	xa_init(&vram->pages);
	vram->size = size;
	vram->present = 0;
	vram->dirty = NULL;
	vram->dirtied = NULL;
	vram->nr_blocks = DIV_ROUND_UP(size, 1ULL << SIMGPU_VRAM_BLOCK_SHIFT);
	vram->nr_backed = 0;
	vram->nr_dirty = 0;
	vram->nr_dirty_backed = 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_init);

static bool simgpu_vram_tracks(struct simgpu_vram *vram, unsigned long blk)
{
	return vram->dirty && test_bit(blk, vram->dirty);
}

/* Block @blk got its first backed page, or (@backed false) lost its last. */
static void simgpu_vram_backing(struct simgpu_vram *vram, unsigned long blk, bool backed)
{
	long d = backed ? 1 : -1;

	vram->nr_backed += d;
	if (simgpu_vram_tracks(vram, blk))
		vram->nr_dirty_backed += d;
}

/* Mark @blk dirty while tracking: true when it was clean. */
static bool simgpu_vram_mark(struct simgpu_vram *vram, unsigned long blk)
{
	if (!vram->dirty || test_and_set_bit(blk, vram->dirty))
		return false;
	vram->nr_dirty++;
	if (!simgpu_vram_block_zero(vram, blk))
		vram->nr_dirty_backed++;
	return true;
}

/* A zeroed page backed ahead (simgpu_vram_prepare()), or NULL.  @vram->lock held. */
static struct page *simgpu_vram_pool_take(struct simgpu_vram *vram)
{
	struct page *page;

	lockdep_assert_held(vram->lock);
	if (!vram->pool_len)
		return NULL;
	page = list_first_entry(&vram->pool, struct page, lru);
	list_del(&page->lru);
	vram->pool_len--;
	return page;
}

/*
 * The page backing @offset, for a write: allocated if none does yet
 * (*@fresh then), zeroed unless the caller writes it whole (@whole;
 * readers hold the lock it holds until then).  The block it lies in is
 * dirty.  Return: the page, or an ERR_PTR.
 */
static struct page *simgpu_vram_page(struct simgpu_vram *vram, u64 offset, bool whole,
				     bool *fresh)
{
	unsigned long idx = offset >> PAGE_SHIFT, blk = offset >> SIMGPU_VRAM_BLOCK_SHIFT;
	struct page *page = xa_load(&vram->pages, idx);
	bool first;
	int ret;

	*fresh = !page;
	if (!page) {
		first = simgpu_vram_block_zero(vram, blk);
		page = simgpu_vram_pool_take(vram);
		if (!page)
			page = alloc_page(whole ? GFP_KERNEL : GFP_KERNEL | __GFP_ZERO);
		if (!page)
			return ERR_PTR(-ENOMEM);
		ret = xa_err(xa_store(&vram->pages, idx, page, GFP_KERNEL));
		if (ret) {
			__free_page(page);
			return ERR_PTR(ret);
		}
		vram->present++;
		if (first)
			simgpu_vram_backing(vram, blk, true);
	}
	if (simgpu_vram_mark(vram, blk) && vram->dirtied)
		vram->dirtied(vram->dirtied_ctx);
	return page;
}

#define SIMGPU_VRAM_BLOCK	BIT_ULL(SIMGPU_VRAM_BLOCK_SHIFT)
#define SIMGPU_VRAM_BLOCK_PAGES	(1U << (SIMGPU_VRAM_BLOCK_SHIFT - PAGE_SHIFT))

/*
 * Back all of block @blk at once, for a write that covers it whole (a
 * stream's chunk, on restore): one bulk allocation and no per-page lookup
 * of the block, where it has no page yet.  The pages are not zeroed: the
 * caller writes them all or clears what it did not reach.  Return: true
 * when this call backed the block; false when the block had a page
 * already, or the bulk allocation or the xarray came up short (nothing is
 * left backed then, and the caller backs page by page, as it would have).
 */
static bool simgpu_vram_back_block(struct simgpu_vram *vram, unsigned long blk)
{
	struct page *pages[SIMGPU_VRAM_BLOCK_PAGES] = {};
	unsigned long idx = blk * SIMGPU_VRAM_BLOCK_PAGES;
	unsigned int i;

	if (!simgpu_vram_block_zero(vram, blk))
		return false;
	if (vram->pool_len >= SIMGPU_VRAM_BLOCK_PAGES) {
		for (i = 0; i < SIMGPU_VRAM_BLOCK_PAGES; i++)
			pages[i] = simgpu_vram_pool_take(vram);
	} else if (gpumig_alloc_pages_bulk(GFP_KERNEL, SIMGPU_VRAM_BLOCK_PAGES, pages) <
		   SIMGPU_VRAM_BLOCK_PAGES) {
		goto free;
	}
	for (i = 0; i < SIMGPU_VRAM_BLOCK_PAGES; i++)
		if (xa_err(xa_store(&vram->pages, idx + i, pages[i], GFP_KERNEL)))
			goto unstore;
	vram->present += SIMGPU_VRAM_BLOCK_PAGES;
	simgpu_vram_backing(vram, blk, true);
	return true;
unstore:
	while (i--)
		xa_erase(&vram->pages, idx + i);
free:
	for (i = 0; i < SIMGPU_VRAM_BLOCK_PAGES; i++)
		if (pages[i])
			__free_page(pages[i]);
	return false;
}

static int simgpu_vram_range(struct simgpu_vram *vram, u64 offset, size_t len)
{
	u64 end;

	if (check_add_overflow(offset, (u64)len, &end) || end > vram->size)
		return -ERANGE;
	return 0;
}

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
	int ret;

	lockdep_assert_held(vram->lock);
	ret = simgpu_vram_range(vram, offset, len);
	if (ret)
		return ret;

	while (len) {
		size_t off = offset & ~PAGE_MASK;
		size_t n = min_t(size_t, len, PAGE_SIZE - off);
		struct page *page;
		bool fresh;

		if (write)
			page = simgpu_vram_page(vram, offset, n == PAGE_SIZE, &fresh);
		else
			page = xa_load(&vram->pages, offset >> PAGE_SHIFT);
		if (IS_ERR(page))
			return PTR_ERR(page);
		if (!page)
			memset(p, 0, n);
		else if (write)
			memcpy_to_page(page, off, p, n);
		else
			memcpy_from_page(p, page, off, n);
		p += n;
		offset += n;
		len -= n;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_rw);

/**
 * simgpu_vram_write_iter() - copy from an iterator straight into VRAM
 * @vram: VRAM
 * @offset: byte offset in VRAM
 * @from: the source (a user's buffer, say)
 * @len: bytes
 * @crc: extended (crc32_le()) over the bytes written, as VRAM holds them
 *
 * The copy may end short (a fault with page faults disabled); a page this
 * call backed holds zeroes where it did not reach, never old memory.  A
 * block the write covers whole and that has no page yet is backed in one
 * go (simgpu_vram_back_block()): a destination's VRAM fills that way.
 *
 * Context: @vram->lock held.
 * Return: the bytes copied, -ERANGE outside VRAM, -ENOMEM when a page
 * cannot be backed.
 */
ssize_t simgpu_vram_write_iter(struct simgpu_vram *vram, u64 offset, struct iov_iter *from,
			       size_t len, u32 *crc)
{
	u64 backed_end = 0;	/* a block backed here (not zeroed) ends there */
	size_t done = 0;
	int ret;

	lockdep_assert_held(vram->lock);
	ret = simgpu_vram_range(vram, offset, len);
	if (ret)
		return ret;

	while (done < len) {
		size_t off = offset & ~PAGE_MASK;
		size_t n = min_t(size_t, len - done, PAGE_SIZE - off), got;
		struct page *page;
		bool fresh;
		u8 *va;

		if (!(offset & (SIMGPU_VRAM_BLOCK - 1)) && len - done >= SIMGPU_VRAM_BLOCK &&
		    simgpu_vram_back_block(vram, offset >> SIMGPU_VRAM_BLOCK_SHIFT))
			backed_end = offset + SIMGPU_VRAM_BLOCK;
		page = simgpu_vram_page(vram, offset, n == PAGE_SIZE, &fresh);
		if (IS_ERR(page))
			return done ?: PTR_ERR(page);
		fresh |= offset < backed_end;
		va = kmap_local_page(page);
		got = copy_from_iter(va + off, n, from);
		if (got < n && fresh && n == PAGE_SIZE)
			memset(va + got, 0, n - got);	/* not zeroed when backed */
		*crc = crc32_le(*crc, va + off, got);
		kunmap_local(va);
		done += got;
		if (got < n) {
			u64 o = (offset & PAGE_MASK) + PAGE_SIZE;

			/* the rest of a block backed here, never reached */
			for (; o < backed_end; o += PAGE_SIZE)
				clear_highpage(xa_load(&vram->pages, o >> PAGE_SHIFT));
			break;
		}
		offset += got;
	}
	return done;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_write_iter);

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
	vram->nr_dirty = 0;
	vram->nr_dirty_backed = 0;
	if (!on)
		return 0;
	vram->dirty = bitmap_alloc(vram->nr_blocks, GFP_KERNEL);
	if (!vram->dirty)
		return -ENOMEM;
	bitmap_fill(vram->dirty, vram->nr_blocks);
	vram->nr_dirty = vram->nr_blocks;
	vram->nr_dirty_backed = vram->nr_backed;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_track);

/**
 * simgpu_vram_next_dirty() - take the first dirty block at or after @from
 * @vram: VRAM, @vram->lock held, tracking
 * @from: block index
 * @zero: set when nothing backs the block (it reads zero)
 *
 * The block is clean again once returned.
 *
 * Return: the block index, or -ENOENT when none is dirty from @from on.
 */
long simgpu_vram_next_dirty(struct simgpu_vram *vram, unsigned long from, bool *zero)
{
	unsigned long b;

	lockdep_assert_held(vram->lock);
	if (WARN_ON_ONCE(!vram->dirty))
		return -ENOENT;
	b = find_next_bit(vram->dirty, vram->nr_blocks, from);
	if (b >= vram->nr_blocks)
		return -ENOENT;
	*zero = simgpu_vram_block_zero(vram, b);
	clear_bit(b, vram->dirty);
	vram->nr_dirty--;
	if (!*zero)
		vram->nr_dirty_backed--;
	return b;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_next_dirty);

/**
 * simgpu_vram_take_zero_run() - take the dirty unbacked blocks from @from on
 * @vram: VRAM, @vram->lock held, tracking
 * @from: block index
 * @max: most blocks to take
 *
 * The run ends at the first block that is clean or has a backed page: one
 * bitmap search and one lookup in the page array, however long the run.
 * The blocks taken are clean again.
 *
 * Return: how many blocks were taken, 0 when @from is not a dirty
 * unbacked block.
 */
unsigned long simgpu_vram_take_zero_run(struct simgpu_vram *vram,
					unsigned long from, unsigned long max)
{
	const unsigned int shift = SIMGPU_VRAM_BLOCK_SHIFT - PAGE_SHIFT;
	unsigned long end, first;

	lockdep_assert_held(vram->lock);
	if (WARN_ON_ONCE(!vram->dirty) || from >= vram->nr_blocks || !max)
		return 0;
	end = from + min(max, vram->nr_blocks - from);
	/*
	 * The first backed page bounds the run before the bitmap is searched:
	 * at a stop every block may be dirty, and a search from here to the
	 * end of VRAM would pass over all of its map for a short run.
	 */
	first = from << shift;
	if (xa_find(&vram->pages, &first, (end << shift) - 1, XA_PRESENT))
		end = first >> shift;
	if (end > from)
		end = find_next_zero_bit(vram->dirty, end, from);
	if (end <= from)
		return 0;
	bitmap_clear(vram->dirty, from, end - from);
	vram->nr_dirty -= end - from;
	return end - from;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_take_zero_run);

/**
 * simgpu_vram_dirty_count() - dirty blocks, backed and not, in O(1)
 * @vram: VRAM, @vram->lock held
 * @backed: dirty blocks with a backed page (data, as far as the hint goes)
 * @zero: dirty blocks without (they read zero)
 *
 * Without tracking every block counts as dirty: a whole stream's worth.
 */
void simgpu_vram_dirty_count(struct simgpu_vram *vram, unsigned long *backed,
			     unsigned long *zero)
{
	lockdep_assert_held(vram->lock);
	if (vram->dirty) {
		*backed = vram->nr_dirty_backed;
		*zero = vram->nr_dirty - vram->nr_dirty_backed;
	} else {
		*backed = vram->nr_backed;
		*zero = vram->nr_blocks - vram->nr_backed;
	}
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_dirty_count);

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
		unsigned long idx = offset >> PAGE_SHIFT, next = idx;
		size_t off = offset & ~PAGE_MASK;
		size_t n = min_t(u64, end - offset, PAGE_SIZE - off);
		struct page *page;

		if (n == PAGE_SIZE) {
			/*
			 * Whole pages: on to the next backed one, so a range
			 * costs what it holds, not its length (a 16 GiB range
			 * of a fresh destination is nearly free).
			 */
			if (!xa_find(&vram->pages, &next, (end >> PAGE_SHIFT) - 1, XA_PRESENT)) {
				offset = end & PAGE_MASK;
				continue;
			}
			if (next != idx) {
				offset = (u64)next << PAGE_SHIFT;
				continue;
			}
			page = xa_erase(&vram->pages, idx);
			if (page) {
				unsigned long blk = offset >> SIMGPU_VRAM_BLOCK_SHIFT;

				__free_page(page);
				vram->present--;
				if (simgpu_vram_block_zero(vram, blk))
					simgpu_vram_backing(vram, blk, false);
			}
		} else {
			page = xa_load(&vram->pages, idx);
			if (page)
				memzero_page(page, off, n);
		}
		offset += n;
	}
	if (vram->dirty) {
		u64 b = (end - len) >> SIMGPU_VRAM_BLOCK_SHIFT;
		u64 last = (end - 1) >> SIMGPU_VRAM_BLOCK_SHIFT;

		for (; b <= last; b++)
			simgpu_vram_mark(vram, b);
	}
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_zero);

/* Pages the worker backs at a time, between two takes of the lock. */
#define SIMGPU_VRAM_POOL_BATCH	64

/*
 * Back what simgpu_vram_prepare() asked for: zeroed pages (the kernel's
 * init_on_alloc zeroes them anyway), added to the pool a batch at a time,
 * while the stream that fills them is still on its way.
 */
static void simgpu_vram_pool_work(struct work_struct *work)
{
	struct simgpu_vram *vram = container_of(work, struct simgpu_vram, pool_work);
	struct page *pages[SIMGPU_VRAM_POOL_BATCH];
	unsigned long n, got, i;

	for (;;) {
		mutex_lock(vram->lock);
		n = min_t(unsigned long, vram->pool_want, SIMGPU_VRAM_POOL_BATCH);
		mutex_unlock(vram->lock);
		if (!n)
			return;
		memset(pages, 0, sizeof(pages));
		got = gpumig_alloc_pages_bulk(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN, n, pages);
		mutex_lock(vram->lock);
		for (i = 0; i < got && vram->pool_want; i++) {
			list_add_tail(&pages[i]->lru, &vram->pool);
			vram->pool_len++;
			vram->pool_want--;
		}
		mutex_unlock(vram->lock);
		for (; i < got; i++)	/* stopped meanwhile */
			__free_page(pages[i]);
		if (got < n)
			return;		/* memory is short: the writes allocate */
		cond_resched();
	}
}

/* Every page of the pool goes back; the worker stops.  @vram->lock held. */
static void simgpu_vram_pool_drain(struct simgpu_vram *vram)
{
	struct page *page;

	lockdep_assert_held(vram->lock);
	vram->pool_want = 0;
	while ((page = simgpu_vram_pool_take(vram)))
		__free_page(page);
}

/**
 * simgpu_vram_prepare() - a restore will write about @bytes of data: back them ahead
 * @vram: VRAM, @vram->lock not held
 * @bytes: what the source said its blocks with data hold
 *
 * Backing a page costs its allocation and, with init_on_alloc (Debian's
 * default), its zeroing: on a fresh destination that cost sat in the
 * restore's own path.  A worker backs the pages while the stream is on its
 * way, never more than the VRAM not backed yet nor half the memory
 * available; the restore's writes take them.  A hint: nothing depends on
 * it, and simgpu_vram_scrub() gives back what no write took.
 */
void simgpu_vram_prepare(struct simgpu_vram *vram, u64 bytes)
{
	unsigned long want = min_t(u64, bytes >> PAGE_SHIFT, si_mem_available() / 2);

	mutex_lock(vram->lock);
	want = min(want, (unsigned long)(vram->size >> PAGE_SHIFT) - vram->present);
	vram->pool_want = want > vram->pool_len ? want - vram->pool_len : 0;
	mutex_unlock(vram->lock);
	if (want)
		queue_work(system_unbound_wq, &vram->pool_work);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_prepare);

/**
 * simgpu_vram_pool_stop() - the worker is done, the pool empty (before VRAM goes)
 * @vram: VRAM, @vram->lock not held
 */
void simgpu_vram_pool_stop(struct simgpu_vram *vram)
{
	mutex_lock(vram->lock);
	vram->pool_want = 0;
	mutex_unlock(vram->lock);
	cancel_work_sync(&vram->pool_work);
	mutex_lock(vram->lock);
	simgpu_vram_pool_drain(vram);
	mutex_unlock(vram->lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_pool_stop);

/**
 * simgpu_vram_scrub() - drop every page: all of VRAM reads zero again
 * @vram: VRAM, @vram->lock held
 *
 * Pages backed ahead of a restore go too.
 */
void simgpu_vram_scrub(struct simgpu_vram *vram)
{
	struct page *page;
	unsigned long idx;

	lockdep_assert_held(vram->lock);
	simgpu_vram_pool_drain(vram);
	xa_for_each(&vram->pages, idx, page)
		__free_page(page);
	xa_destroy(&vram->pages);
	vram->present = 0;
	vram->nr_backed = 0;
	vram->nr_dirty_backed = 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_scrub);

/**
 * struct simgpu_vram_hold - VRAM pages that left a device for a post-copy
 * @pages: page index -> struct page *, as they were in the device
 * @size: the device's VRAM size, bytes
 */
struct simgpu_vram_hold {
	struct xarray pages;
	u64 size;
};

/**
 * simgpu_vram_hold() - move the pages of the blocks set in @map out of VRAM
 * @vram: VRAM, @vram->lock held
 * @map: one bit per block
 * @nr: bits in @map
 *
 * The device then reads zero there; the pages keep their contents, held.
 *
 * Return: the hold, or an ERR_PTR (nothing moved).
 */
struct simgpu_vram_hold *simgpu_vram_hold(struct simgpu_vram *vram, const unsigned long *map,
					  unsigned long nr)
{
	struct simgpu_vram_hold *h;
	unsigned long blk, idx, first, last;
	struct page *page;

	lockdep_assert_held(vram->lock);
	if (nr != vram->nr_blocks)
		return ERR_PTR(-EINVAL);
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return ERR_PTR(-ENOMEM);
	xa_init(&h->pages);
	h->size = vram->size;
	for_each_set_bit(blk, map, nr) {
		unsigned int moved = 0;

		first = blk << (SIMGPU_VRAM_BLOCK_SHIFT - PAGE_SHIFT);
		last = first + SIMGPU_VRAM_BLOCK_PAGES - 1;
		xa_for_each_range(&vram->pages, idx, page, first, last) {
			if (xa_err(xa_store(&h->pages, idx, page, GFP_KERNEL))) {
				if (moved)
					simgpu_vram_backing(vram, blk, false);
				simgpu_vram_hold_return(vram, h);
				return ERR_PTR(-ENOMEM);
			}
			xa_erase(&vram->pages, idx);
			vram->present--;
			moved++;
		}
		/* All of its pages left: the block reads zero in the device. */
		if (moved)
			simgpu_vram_backing(vram, blk, false);
		cond_resched();
	}
	return h;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_hold);

/**
 * simgpu_vram_hold_read() - read held contents
 * @h: hold; its user serialises calls
 * @offset: VRAM offset
 * @buf: kernel buffer
 * @len: bytes
 *
 * Return: 0, or -ERANGE outside VRAM.  A page never written reads zero.
 */
int simgpu_vram_hold_read(struct simgpu_vram_hold *h, u64 offset, void *buf, size_t len)
{
	u8 *p = buf;
	u64 end;

	if (check_add_overflow(offset, (u64)len, &end) || end > h->size)
		return -ERANGE;
	while (len) {
		size_t off = offset & ~PAGE_MASK;
		size_t n = min_t(size_t, len, PAGE_SIZE - off);
		struct page *page = xa_load(&h->pages, offset >> PAGE_SHIFT);

		if (page)
			memcpy_from_page(p, page, off, n);
		else
			memset(p, 0, n);
		p += n;
		offset += n;
		len -= n;
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_hold_read);

/**
 * simgpu_vram_hold_return() - put held pages back where they were, free the hold
 * @vram: VRAM, @vram->lock held; nothing was written where they go since
 * @h: hold
 *
 * A page whose place the device has filled meanwhile is scrubbed instead.
 */
void simgpu_vram_hold_return(struct simgpu_vram *vram, struct simgpu_vram_hold *h)
{
	struct page *page;
	unsigned long idx;

	lockdep_assert_held(vram->lock);
	xa_for_each(&h->pages, idx, page) {
		unsigned long blk = idx >> (SIMGPU_VRAM_BLOCK_SHIFT - PAGE_SHIFT);
		bool was_zero = simgpu_vram_block_zero(vram, blk);

		if (xa_load(&vram->pages, idx) ||
		    xa_err(xa_store(&vram->pages, idx, page, GFP_KERNEL))) {
			clear_highpage(page);
			__free_page(page);
			continue;
		}
		vram->present++;
		if (was_zero)
			simgpu_vram_backing(vram, blk, true);
	}
	xa_destroy(&h->pages);
	kfree(h);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_hold_return);

/**
 * simgpu_vram_hold_free() - scrub and free held pages
 * @h: hold
 */
void simgpu_vram_hold_free(struct simgpu_vram_hold *h)
{
	struct page *page;
	unsigned long idx;

	xa_for_each(&h->pages, idx, page) {
		clear_highpage(page);
		__free_page(page);
		cond_resched();
	}
	xa_destroy(&h->pages);
	kfree(h);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_vram_hold_free);
