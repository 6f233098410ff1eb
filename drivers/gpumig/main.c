// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig: the VFIO live-migration engine shared by gpumig's front ends.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/module.h>

#include <gpumig/stream.h>

#include "engine.h"

#define CREATE_TRACE_POINTS
#include <trace/events/gpumig.h>

static int __init gpumig_init(void)
{
	int ret = gpumig_quarantine_init();

	if (ret)
		return ret;
	ret = gpumig_pc_init();
	if (ret) {
		gpumig_quarantine_exit();
		return ret;
	}
	pr_info("gpumig: migration engine loaded (stream version %u.%u)\n",
		GPUMIG_STREAM_MAJOR, GPUMIG_STREAM_MINOR);
	return 0;
}

static void __exit gpumig_exit(void)
{
	gpumig_pc_exit();
	gpumig_quarantine_exit();
}

module_init(gpumig_init);
module_exit(gpumig_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The gpumig authors");
MODULE_DESCRIPTION("gpumig VFIO live-migration engine");
MODULE_VERSION(GPUMIG_VERSION);
