/* SPDX-License-Identifier: GPL-2.0 */
/* What <linux/simgpu.h> needs, for a freestanding guest without libc. */
#ifndef _GUEST_LINUX_TYPES_H
#define _GUEST_LINUX_TYPES_H
typedef unsigned int __le32;
typedef unsigned long long __le64;
#endif
