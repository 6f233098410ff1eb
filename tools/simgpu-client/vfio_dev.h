/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal VMM-side VFIO user for simgpu: the type1 container/group path,
 * a "guest memory" arena mapped for DMA, GPU page tables built in it, BAR0
 * access, MSI and request eventfds.  Shared by the client's scenarios.
 */
#ifndef _SIMGPU_VFIO_DEV_H
#define _SIMGPU_VFIO_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/simgpu.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define GUEST_IOVA	0x100000ULL	/* IOVA 0 stays unmapped */
/*
 * Guest memory: 16 MiB for every scenario but those that ask for more (at
 * most GUEST_MAX).  A VF's container pins and maps all of it at each open
 * (an mdev's only what the device touches): 48 MiB cost every VF scenario
 * about a second and a half of open and close on the debug kernel.
 */
#define GUEST_DEFAULT	(16ULL << 20)
#define GUEST_MAX	(48ULL << 20)
extern uint64_t guest_size;	/* of the devices opened next (set by client.c's run()) */

struct gpu_queue {
	uint64_t ring_iova;
	struct simgpu_cmd *ring;
	uint32_t size;
	uint32_t tail;
};

struct gpu {
	char name[64];		/* mdev UUID or PCI address */
	bool pci;		/* a PCI function, not an mdev */
	char driver[32];	/* a PCI function's driver: vfio-pci or a variant */
	bool migration;		/* the device offers VFIO migration */
	uint32_t irq_index;	/* VFIO_PCI_MSI_IRQ_INDEX or _MSIX_ */
	int container, group, fd;
	uint64_t cfg_off, cfg_size, bar_off;
	int msi_efd, req_efd;
	uint8_t *mem;		/* guest memory, mem_size bytes at GUEST_IOVA */
	uint64_t mem_size;	/* guest_size when it was opened */
	uint64_t next;		/* bump allocator, IOVA */
	uint64_t pt_root;	/* IOVA of the root table */
	uint32_t nr_queues;
	uint64_t vram;
	struct gpu_queue q[SIMGPU_MAX_QUEUES];
};

int gpu_open(struct gpu *g, const char *name);
extern void (*gpu_open_window)(bool open);
void gpu_close(struct gpu *g);
int gpus_close(void);
void data_fd_track(int fd);
void data_fd_close(int fd);
void data_fds_close(void);
void knobs_restore(void);
int unquarantine(const char *name);
int unquarantine_all(void);
const char *dev_sysdir(const char *name);
void dev_driver(const char *name, char *buf, size_t len);
const char *knob_dir(const char *name);
int read_attr(const char *name, const char *attr, char *buf, size_t len);
uint32_t rd(struct gpu *g, uint32_t reg);
void wr(struct gpu *g, uint32_t reg, uint32_t val);
uint32_t qrd(struct gpu *g, int q, uint32_t reg);
void qwr(struct gpu *g, int q, uint32_t reg, uint32_t val);
int cfg_read(struct gpu *g, uint32_t off, void *buf, size_t len);

uint64_t galloc(struct gpu *g, size_t len);	/* page aligned, zeroed */
void *gptr(struct gpu *g, uint64_t iova);
void gpu_map(struct gpu *g, uint64_t va, uint64_t target, uint64_t flags);
void gpu_map_range(struct gpu *g, uint64_t va, uint64_t target, uint64_t len,
		   uint64_t flags);
uint64_t *gpu_pte(struct gpu *g, uint64_t va);

int gpu_setup(struct gpu *g, uint32_t ring_entries);
void gpu_submit(struct gpu *g, int q, uint32_t op, uint32_t flags,
		uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);
int gpu_wait_idle(struct gpu *g, int q, int timeout_ms);
int gpu_wait_irq(struct gpu *g, int timeout_ms);
int gpu_invalidate(struct gpu *g, uint32_t seq, int timeout_ms);
int gpu_reset(struct gpu *g);
int gpu_feature(struct gpu *g, uint32_t flags, void *data, size_t len);
int knob_set(struct gpu *g, const char *knob, const char *val);
int stat_read(struct gpu *g, const char *name, unsigned long long *val);
int dev_remove(const char *name);
uint64_t now_ms(void);
uint64_t now_ns(void);

#endif
