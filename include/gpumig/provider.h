/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumig's PF provider interface: what gpumig-vfio-pci, the variant
 * driver of a GPU's virtual functions, asks of the driver of their
 * physical function.  As the kernel's xe-vfio-pci relies on the xe PF
 * driver, every device-side step of a VF's migration is one call into the
 * PF driver; here the PF driver registers those calls as an ops table (a
 * provider), so that any PF driver can serve gpumig-vfio-pci without
 * exporting symbols to it (restricting exports to one module needs Linux
 * 6.16; Debian's kernel is 6.12) and without gpumig-vfio-pci knowing it.
 *
 *   PF driver:  gpumig_provider_register() when it can serve VFs (module
 *               init), gpumig_provider_unregister() before it goes; its
 *               ->claim() hands out a struct gpumig_vf for each VF it
 *               drives, or -ENODEV for a function that is not one of its
 *   VF driver:  gpumig_vf_claim(pdev, events, priv) at bind, then the
 *               services through vf->ops, gpumig_vf_release() at unbind
 *   PF -> VF:   events->pf_gone (the PF's driver is being removed: every
 *               service fails from then on) and events->pf_reset (the PF
 *               is being reset: the VF's state and memory are lost), both
 *               under the provider's lock: they may not claim or release
 *
 * Documentation/gpumig/porting.rst maps the services onto what real PF
 * drivers offer.  simgpu-pf (drivers/gpu/simgpu-pf/provider.c) is the
 * reference provider.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_PROVIDER_H
#define _GPUMIG_PROVIDER_H

#include <linux/list.h>
#include <linux/types.h>

#include <gpumig/migration.h>
#include <gpumig/stream.h>

struct attribute_group;
struct iov_iter;
struct module;
struct pci_dev;
struct rb_root_cached;
struct gpumig_vf;

/**
 * struct gpumig_vf_events - what a claimer hears from the provider
 * @pf_gone: the PF's driver is being removed; every service fails with
 *	-ENODEV from now on
 * @pf_reset: the PF is being reset (optional): the VF's state and memory
 *	are lost; services fail with -EAGAIN until the reset is done
 * @demand: the VF's device waits on absent VRAM block @blk (a post-copy
 *	destination, @vram_absent); from any context but NMI, possibly under
 *	the provider's own locks: it may not call a service
 */
struct gpumig_vf_events {
	void (*pf_gone)(void *priv);
	void (*pf_reset)(void *priv);
	void (*demand)(void *priv, u64 blk);
};

struct gpumig_vram_hold;

/**
 * struct gpumig_vram_hold_ops - what can be done with a held VRAM
 * @read: @len bytes at VRAM offset @off of a held block into @buf; 0,
 *	-ENOENT for a block not held, -ENODEV once the PF's driver is gone
 * @free: scrub what is held and free the hold (it may outlive the claim,
 *	the VF's driver and the device: called once, from any of them)
 */
struct gpumig_vram_hold_ops {
	int (*read)(struct gpumig_vram_hold *h, u64 off, void *buf, u32 len);
	void (*free)(struct gpumig_vram_hold *h);
};

/**
 * struct gpumig_vram_hold - VRAM a post-copy source holds for the
 *	destination, out of the VF's reach; the provider embeds it
 * @ops: its operations (fixed)
 * @owner: the provider's module, which the hold keeps loaded (the provider
 *	takes the reference); the claimer puts it once @free or the
 *	provider's @hold_return has returned (fixed)
 */
struct gpumig_vram_hold {
	const struct gpumig_vram_hold_ops *ops;
	struct module *owner;
};

/**
 * struct gpumig_vf_ops - the services of one claimed VF
 *
 * Each gets the claimed VF; each may sleep, and the provider serialises
 * calls for one VF.  The engine's locking (include/gpumig/migration.h,
 * struct gpumig_backend_ops) holds for the ones it calls.  What a
 * service returns on a device that fails is a negative errno, never a
 * hang: every wait on the device is bounded.
 *
 * @release: the claimer lets go (the VF's driver unbinds)
 * @pause: stop the VF taking work, preempt or drain what runs, and verify
 *	it is idle within the provider's bound; -EBUSY (the VF runs on)
 * @resume: undo @pause
 * @invalidate: invalidate every translation the VF caches for its tenant
 *	and wait for the device's acknowledgment; -ETIMEDOUT when none comes
 * @paused: whether the device says the VF is paused now
 * @save_state: part @part (0 to the VF's @geo.arch_parts - 1) of the
 *	paused VF's architectural state into @buf; its length
 * @restore_state: check and install part @part of an architectural state
 *	(hostile input until the device checked it); every part in order, at
 *	the end of a stream that checked out
 * @vendor_size: optional, with the next two (and the VF's @geo.vendor_max):
 *	the bytes of the vendor sections @vendor_save would produce now, and
 *	how many in *@sections
 * @vendor_save: section @index of the VF's own state that only the
 *	provider reads (firmware context, the PF's per-VF settings); its
 *	length, -ENOENT after the last.  After VRAM, before the state
 * @vendor_restore: check and take section @index (hostile input), as it
 *	arrives, before the state
 * @compat_check: optional: the provider's own rule for a source whose
 *	descriptor passed the common one; -EOPNOTSUPP with @why
 * @p2p: optional: stop (@stop) or restart only the VF's peer-to-peer DMA
 *	(the uAPI's P2P states); without it those states pause the VF
 * @vram_track: start or stop VRAM dirty tracking at the provider's block
 *	grain (starting marks every block dirty).  Optional, with
 *	@vram_next_dirty and @vram_dirty_count: without them the engine sends
 *	only the header during PRE_COPY and all of VRAM at STOP_COPY
 * @vram_next_dirty: the first dirty block at or after @from, taken (it
 *	leaves the dirty set); *@zero when it reads as zeroes; -ENOENT
 * @vram_take_zero_run: optional: take the run of dirty zero blocks from
 *	@from on, at most @max; how many
 * @vram_dirty_count: dirty blocks now, those holding data and the zero
 *	ones (every block while tracking is off)
 * @vram_read: copy VRAM out
 * @vram_write: copy into VRAM; @buf NULL writes zeroes
 * @vram_write_iter: optional: from a user's buffer straight into the
 *	device, page faults disabled, extending *@crc (crc32_le()) over what
 *	it copied; bytes copied
 * @scrub: zero the VF's VRAM and reset it, for a new tenant
 * @close_begin: the tenant is leaving: vfio-pci-core is about to disable
 *	and reset the function (the provider notes what @teardown checks)
 * @teardown: after the engine paused the VF and had an invalidation
 *	acknowledged, and vfio-pci-core reset it: verify the device is inert
 *	(paused, its reset seen); 0, or an errno with @why
 * @dma_log_start: start logging the guest pages the VF writes by DMA in
 *	@ranges (optional, with the next two: all three or none)
 * @dma_log_stop: stop and forget
 * @dma_log_report: call @report for each run of pages written in
 *	[@iova, @iova + @len) since the last report, and clear them; cost
 *	what was tracked, not the span asked, and stop on a fatal signal
 * @guest_resets: optional: the resets the VF's user made through the VF's
 *	own registers so far, if the device counts them
 * @reset_prepare: optional: the VF is about to be reset (an FLR the guest
 *	or vfio-pci-core asks for); the PF gets ready for it
 * @reset_done: optional, with @reset_prepare: the VF's reset is over; wait
 *	(bounded) until the PF has finished its part of it
 * @throttle: optional: the VF's scheduling share, for device auto-converge:
 *	give the tenant's work only (100 - @pct) % of the VF's time, @pct 0
 *	to GPUMIG_THROTTLE_MAX (0: all of it); nothing stopped, nothing in
 *	flight lost.  Without it auto-converge is unsupported on the VF
 * @vram_absent: optional, with @vram_deliver, @vram_lose and the claimer's
 *	@demand event: post-copy's destination (Documentation/gpumig/
 *	postcopy.rst).  The paused VF will run with the blocks set in @map
 *	(@nr bits, the VF's blocks) absent: an access of the device to one
 *	parks that work until the block arrives (replayable VRAM faults) and
 *	the device says which block through @demand; nothing reads in its
 *	place.  The CPU's access through the VF's aperture is not the
 *	device's to see: the claimer keeps it off absent blocks
 * @vram_deliver: owed block @blk arrived: write its @len bytes and make it
 *	present, at once for the device (work parked on it runs); -EALREADY
 *	when it is not absent
 * @vram_lose: absent block @blk will never arrive: the device's accesses
 *	to it fail with its own error (SIMGPU_ERR_VRAM_LOST on simgpu) until
 *	the tenant rewrites it or resets the VF; -EALREADY when not absent
 * @vram_hold: optional, with @hold_return: post-copy's source.  The paused
 *	VF's blocks set in @map leave it (its aperture and its device read
 *	zero there) into a hold the provider keeps past the claim, a scrub,
 *	an FLR and a rebind of the VF, until its @free; SR-IOV cannot be
 *	disabled while a hold of the PF's exists.  The hold, or an ERR_PTR
 * @hold_return: the VF runs again (a failed switchover): what @hold keeps
 *	goes back where it was and the hold is freed
 */
struct gpumig_vf_ops {
	void (*release)(struct gpumig_vf *vf);
	int (*pause)(struct gpumig_vf *vf);
	void (*resume)(struct gpumig_vf *vf);
	int (*invalidate)(struct gpumig_vf *vf);
	bool (*paused)(struct gpumig_vf *vf);
	ssize_t (*save_state)(struct gpumig_vf *vf, u32 part, void *buf, size_t len);
	int (*restore_state)(struct gpumig_vf *vf, u32 part, const void *buf, size_t len);
	size_t (*vendor_size)(struct gpumig_vf *vf, u32 *sections);
	ssize_t (*vendor_save)(struct gpumig_vf *vf, u32 index, void *buf, size_t len);
	int (*vendor_restore)(struct gpumig_vf *vf, u32 index, const void *buf, size_t len);
	int (*compat_check)(struct gpumig_vf *vf, const struct gpumig_compat *src,
			    char *why, size_t len);
	int (*p2p)(struct gpumig_vf *vf, bool stop);
	int (*vram_track)(struct gpumig_vf *vf, bool on);
	long (*vram_next_dirty)(struct gpumig_vf *vf, unsigned long from, bool *zero);
	unsigned long (*vram_take_zero_run)(struct gpumig_vf *vf, unsigned long from,
					    unsigned long max);
	void (*vram_dirty_count)(struct gpumig_vf *vf, unsigned long *nonzero,
				 unsigned long *zero);
	int (*vram_read)(struct gpumig_vf *vf, u64 off, void *buf, u32 len);
	int (*vram_write)(struct gpumig_vf *vf, u64 off, const void *buf, u32 len);
	ssize_t (*vram_write_iter)(struct gpumig_vf *vf, u64 off, struct iov_iter *from,
				   u32 len, u32 *crc);
	int (*scrub)(struct gpumig_vf *vf);
	void (*close_begin)(struct gpumig_vf *vf);
	int (*teardown)(struct gpumig_vf *vf, char *why, size_t len);
	int (*dma_log_start)(struct gpumig_vf *vf, struct rb_root_cached *ranges,
			     u32 nnodes, u64 *page_size);
	void (*dma_log_stop)(struct gpumig_vf *vf);
	int (*dma_log_report)(struct gpumig_vf *vf, u64 iova, u64 len,
			      void (*report)(void *ctx, u64 iova, u64 len), void *ctx);
	u32 (*guest_resets)(struct gpumig_vf *vf);
	void (*reset_prepare)(struct gpumig_vf *vf);
	void (*reset_done)(struct gpumig_vf *vf);
	int (*throttle)(struct gpumig_vf *vf, u32 pct);
	int (*vram_absent)(struct gpumig_vf *vf, const unsigned long *map, unsigned long nr);
	int (*vram_deliver)(struct gpumig_vf *vf, unsigned long blk, const void *buf, u32 len);
	int (*vram_lose)(struct gpumig_vf *vf, unsigned long blk);
	struct gpumig_vram_hold *(*vram_hold)(struct gpumig_vf *vf, const unsigned long *map,
					      unsigned long nr);
	void (*hold_return)(struct gpumig_vf *vf, struct gpumig_vram_hold *h);
};

/**
 * struct gpumig_vf - a VF a provider serves, as its claimer sees it
 * @ops: its services (fixed)
 * @compat: the descriptor a destination must match: the VF's type name,
 *	VRAM size, backend (a wire value the provider owns: for a GPU
 *	vendor's, GPUMIG_BACKEND_VENDOR() of its PCI vendor ID), queues,
 *	features, page size and state version (fixed)
 * @geo: how its migration is cut (struct gpumig_geometry: VRAM block,
 *	state parts, vendor sections); zeroes for the defaults (fixed)
 * @arch_size: the most bytes @ops->save_state produces, all parts
 *	together (fixed)
 * @attrs: optional attributes the VF shows while claimed, in a directory
 *	of the provider's name (simgpu's VRAM size, queues, profile); their
 *	show gets the VF's struct device (fixed)
 * @owner: the provider's module, held while claimed (fixed)
 * @vram_bar: with @ops->vram_absent: the BAR through which the CPU reaches
 *	the VF's VRAM (its aperture), whose faults the claimer holds back
 *	while blocks are absent; -1 for a VF without one (fixed)
 *
 * The provider embeds it in its own per-VF state.
 */
struct gpumig_vf {
	const struct gpumig_vf_ops *ops;
	struct gpumig_compat compat;
	struct gpumig_geometry geo;
	u32 arch_size;
	const struct attribute_group *attrs;
	struct module *owner;
	int vram_bar;
};

/**
 * struct gpumig_provider - a PF driver that serves its VFs
 * @name: for logs ("simgpu-pf")
 * @owner: THIS_MODULE
 * @claim: a VF of a PF this provider drives: claim it (one claimer at a
 *	time) and return its services.  ERR_PTR(-ENODEV) for a function that
 *	is not one of its VFs (the next provider is asked); -ENXIO for one of
 *	its kind whose PF it does not drive (nobody else is asked; the VF is
 *	bound without migration, its VRAM the PF's driver's business); any
 *	other errno refuses the VF and fails gpumig-vfio-pci's bind (-EBUSY
 *	claimed already, -EAGAIN while its PF changes SR-IOV or is being
 *	reset, -EOPNOTSUPP a VF the engine cannot migrate...), since nothing
 *	would scrub its VRAM between tenants; @why, of @len bytes, says why
 *	for the operator
 * @node: on the engine's list (the engine's)
 */
struct gpumig_provider {
	const char *name;
	struct module *owner;
	struct gpumig_vf *(*claim)(struct pci_dev *pdev, const struct gpumig_vf_events *ev,
				   void *priv, char *why, size_t len);
	struct list_head node;
};

int gpumig_provider_register(struct gpumig_provider *p);
void gpumig_provider_unregister(struct gpumig_provider *p);
struct gpumig_vf *gpumig_vf_claim(struct pci_dev *pdev, const struct gpumig_vf_events *ev,
				  void *priv, char *why, size_t len);
void gpumig_vf_release(struct gpumig_vf *vf);

#endif /* _GPUMIG_PROVIDER_H */
