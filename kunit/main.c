// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig KUnit test module: every suite of the project links into this
 * module, which runs them when it is loaded.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/module.h>

#include <gpumig/compat.h>

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpumig KUnit suites");
GPUMIG_IMPORT_KUNIT_NS();
