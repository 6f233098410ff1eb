/* SPDX-License-Identifier: GPL-2.0 */
/* glibc reaches the errno values through <linux/errno.h>. */
#include <asm/errno.h>
#include <kshim.h>
