/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Multiboot (v1) entry of the simgpu test guest: QEMU's -kernel loader
 * finds the header in the first 8 KiB, enters in 32-bit protected mode
 * with paging off, and we call guest_main() on our own stack.
 */
#define MB_MAGIC	0x1badb002
#define MB_FLAGS	0x00000003	/* page-aligned modules, memory info */

	.section .multiboot, "a"
	.align 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)

	.section .text
	.globl _start
_start:
	cli
	mov $stack_top, %esp
	call guest_main
1:	hlt
	jmp 1b

	.section .bss
	.align 16
	.space 65536
stack_top:

	.section .note.GNU-stack, "", @progbits
