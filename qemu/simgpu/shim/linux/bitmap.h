/* SPDX-License-Identifier: GPL-2.0 */
/* The model shim stands in for <linux/bitmap.h>. */
#include "simgpu_shim.h"
