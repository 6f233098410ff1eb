// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf's provider: post-copy of VRAM (include/gpumig/provider.h's
 * @vram_absent, @vram_deliver, @vram_lose, @vram_hold, @hold_return) over
 * the PF's services of cmds_postcopy.c.  Offered where the device has
 * SIMGPU_PF_CAP_ABSENT and the VF migrates in the device's own 64 KiB
 * blocks, the grain at which it parks work on an absent block.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/err.h>

#include "provider.h"

static int simgpu_mig_vram_absent(struct gpumig_vf *gvf, const unsigned long *map,
				  unsigned long nr)
{
	struct simgpu_mig *s = to_mig(gvf);

	if (nr != s->nr_blocks)
		return -EINVAL;
	return simgpu_pf_vf_set_absent(s->vf, map, nr);
}

static int simgpu_mig_vram_deliver(struct gpumig_vf *gvf, unsigned long blk, const void *buf,
				   u32 len)
{
	struct simgpu_mig *s = to_mig(gvf);

	if (blk >= s->nr_blocks || len != GPUMIG_BLOCK_SIZE)
		return -EINVAL;
	return simgpu_pf_vf_vram_deliver(s->vf, (u64)blk << GPUMIG_BLOCK_SHIFT, buf, len);
}

static int simgpu_mig_vram_lose(struct gpumig_vf *gvf, unsigned long blk)
{
	struct simgpu_mig *s = to_mig(gvf);

	if (blk >= s->nr_blocks)
		return -EINVAL;
	return simgpu_pf_vf_vram_lose(s->vf, blk);
}

static struct gpumig_vram_hold *simgpu_mig_vram_hold(struct gpumig_vf *gvf,
						     const unsigned long *map, unsigned long nr)
{
	struct simgpu_mig *s = to_mig(gvf);
	struct simgpu_pf_hold *h;

	if (nr != s->nr_blocks)
		return ERR_PTR(-EINVAL);
	h = simgpu_pf_vf_hold(s->vf, map, nr);
	return IS_ERR(h) ? ERR_CAST(h) : &h->base;
}

static void simgpu_mig_hold_return(struct gpumig_vf *gvf, struct gpumig_vram_hold *base)
{
	simgpu_pf_vf_hold_return(to_mig(gvf)->vf, container_of(base, struct simgpu_pf_hold, base));
}

/**
 * simgpu_mig_postcopy_ops() - post-copy's services, where the VF can have them
 * @s: the claimed VF, its ops and geometry set
 */
void simgpu_mig_postcopy_ops(struct simgpu_mig *s)
{
	struct gpumig_vf_ops *o = &s->ops;

	if (!(s->info.caps & SIMGPU_PF_CAP_ABSENT) || s->gvf.geo.block_shift)
		return;
	o->vram_absent = simgpu_mig_vram_absent;
	o->vram_deliver = simgpu_mig_vram_deliver;
	o->vram_lose = simgpu_mig_vram_lose;
	if (s->untracked)
		return;		/* a source needs to know which blocks hold data */
	o->vram_hold = simgpu_mig_vram_hold;
	o->hold_return = simgpu_mig_hold_return;
}
