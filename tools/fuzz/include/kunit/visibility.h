/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel's KUnit-only exports: nothing to export in userspace. */
#include <kshim.h>
#define EXPORT_SYMBOL_IF_KUNIT(sym)
#define VISIBLE_IF_KUNIT static
