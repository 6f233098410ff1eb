// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu mdev types, like a vendor's vGPU profiles, and the VRAM budget
 * instances draw from (module parameter vram_budget_mb): a type's
 * available_instances is what the budget still allows.  A type's
 * description is its migration compatibility descriptor, so a scheduler
 * can check placement before any instance exists.  A type's name (its
 * "name" attribute, which KubeVirt's mdevNameSelector and other selectors
 * match) is its type id: no spaces, no commas.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/sizes.h>

#include "simgpu_mdev.h"

static unsigned int vram_budget_mb = 2048;	/* see simgpu-16G below */
module_param(vram_budget_mb, uint, 0444);
MODULE_PARM_DESC(vram_budget_mb, "VRAM all instances together may have, in MiB (default 2048)");

static DEFINE_MUTEX(simgpu_budget_lock);
static u64 simgpu_vram_used;	/* guarded by simgpu_budget_lock */

static struct simgpu_type simgpu_types[] = {
	{ .type.sysfs_name = "64M", .type.pretty_name = "simgpu-64M",
	  .vram = SZ_64M, .queues = 2 },
	{ .type.sysfs_name = "256M", .type.pretty_name = "simgpu-256M",
	  .vram = SZ_256M, .queues = 4 },
	{ .type.sysfs_name = "1G", .type.pretty_name = "simgpu-1G",
	  .vram = SZ_1G, .queues = 8 },
	/*
	 * For scale: like every type's, its VRAM costs memory only where the
	 * tenant writes, but the budget counts what a type declares, so an
	 * instance needs vram_budget_mb of at least 16384.
	 */
	{ .type.sysfs_name = "16G", .type.pretty_name = "simgpu-16G",
	  .vram = SZ_16G, .queues = 8 },
};

struct mdev_type *simgpu_mdev_types[] = {
	&simgpu_types[0].type,
	&simgpu_types[1].type,
	&simgpu_types[2].type,
	&simgpu_types[3].type,
};

const unsigned int simgpu_nr_types = ARRAY_SIZE(simgpu_mdev_types);
static_assert(ARRAY_SIZE(simgpu_mdev_types) == ARRAY_SIZE(simgpu_types));

/**
 * simgpu_budget_take() - reserve VRAM for a new instance
 * @vram: bytes
 *
 * Return: 0, or -ENOSPC when the parent's budget cannot cover it.
 */
int simgpu_budget_take(u64 vram)
{
	int ret = -ENOSPC;

	mutex_lock(&simgpu_budget_lock);
	if (simgpu_vram_used + vram <= (u64)vram_budget_mb * SZ_1M) {
		simgpu_vram_used += vram;
		ret = 0;
	}
	mutex_unlock(&simgpu_budget_lock);
	return ret;
}

/**
 * simgpu_budget_put() - return an instance's VRAM to the budget
 * @vram: bytes
 */
void simgpu_budget_put(u64 vram)
{
	mutex_lock(&simgpu_budget_lock);
	simgpu_vram_used -= vram;
	mutex_unlock(&simgpu_budget_lock);
}

/**
 * simgpu_type_available() - mdev_driver.get_available
 * @mtype: type
 *
 * Return: instances of @mtype the budget still allows.
 */
unsigned int simgpu_type_available(struct mdev_type *mtype)
{
	const struct simgpu_type *t = to_simgpu_type(mtype);
	u64 left;

	mutex_lock(&simgpu_budget_lock);
	left = (u64)vram_budget_mb * SZ_1M - simgpu_vram_used;
	mutex_unlock(&simgpu_budget_lock);
	return div64_u64(left, t->vram);
}

/**
 * simgpu_type_compat() - the compatibility descriptor of a type
 * @t: type
 * @c: descriptor
 */
void simgpu_type_compat(const struct simgpu_type *t, struct gpumig_compat *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->type_name, sizeof(c->type_name), "simgpu-%s", t->type.sysfs_name);
	c->vram_size = t->vram;
	c->backend = GPUMIG_BACKEND_SIMGPU;
	c->nr_queues = t->queues;
	c->features = SIMGPU_CAPS;
	c->page_size = SIMGPU_PAGE_SIZE;
	c->arch_version = SIMGPU_ARCH_VERSION;
}

/**
 * simgpu_type_description() - mdev_driver.show_description
 * @mtype: type
 * @buf: sysfs buffer
 *
 * Return: bytes written: the type's compatibility descriptor.
 */
ssize_t simgpu_type_description(struct mdev_type *mtype, char *buf)
{
	struct gpumig_compat c;

	simgpu_type_compat(to_simgpu_type(mtype), &c);
	return gpumig_compat_format(&c, buf, PAGE_SIZE);
}
