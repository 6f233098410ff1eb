/* SPDX-License-Identifier: GPL-2.0 */
/* The model shim stands in for <linux/mm.h>. */
#include "simgpu_shim.h"
