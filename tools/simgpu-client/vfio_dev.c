// SPDX-License-Identifier: GPL-2.0
/*
 * VMM-side VFIO plumbing for simgpu-client; see vfio_dev.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "vfio_dev.h"

uint64_t guest_size = GUEST_DEFAULT;	/* a user may set it before gpu_open() */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return 0;
}

static int set_irq(struct gpu *g, uint32_t index, int efd)
{
	char buf[sizeof(struct vfio_irq_set) + sizeof(int32_t)];
	struct vfio_irq_set *s = (void *)buf;
	int32_t fd = efd;

	s->argsz = sizeof(buf);
	s->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	s->index = index;
	s->start = 0;
	s->count = 1;
	memcpy(s->data, &fd, sizeof(fd));
	return ioctl(g->fd, VFIO_DEVICE_SET_IRQS, s);
}

/* ---- what a scenario opened, undone after it ---------------------------- */

#define MAX_TRACKED 16

/* A copy of what gpu_close() releases: the scenario's struct may be gone. */
static struct gpu open_gpus[MAX_TRACKED];
static int data_fds[MAX_TRACKED];
static int nr_data_fds;

static struct {
	char path[PATH_MAX];
	char old[64];
} knobs[MAX_TRACKED * 4];
static int nr_knobs;

/* Devices opened during this run, for unquarantine_all(). */
static char seen[MAX_TRACKED][64];
static int nr_seen;

static void track_gpu(const struct gpu *g)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++) {
		if (open_gpus[i].fd <= 0) {
			open_gpus[i] = *g;
			break;
		}
	}
	for (i = 0; i < nr_seen; i++)
		if (!strcmp(seen[i], g->name))
			return;
	if (nr_seen < MAX_TRACKED)
		snprintf(seen[nr_seen++], sizeof(seen[0]), "%s", g->name);
}

static void untrack_gpu(int fd)
{
	int i;

	for (i = 0; i < MAX_TRACKED; i++)
		if (open_gpus[i].fd == fd)
			open_gpus[i].fd = 0;
}

static void gpu_release(struct gpu *g)
{
	if (g->fd >= 0)
		close(g->fd);
	if (g->group >= 0)
		close(g->group);
	if (g->container >= 0)
		close(g->container);
	if (g->msi_efd >= 0)
		close(g->msi_efd);
	if (g->req_efd >= 0)
		close(g->req_efd);
	if (g->mem)
		munmap(g->mem, g->mem_size);
}

/**
 * gpus_close() - close every device a scenario left open
 *
 * Return: how many there were.
 */
int gpus_close(void)
{
	int i, n = 0;

	for (i = 0; i < MAX_TRACKED; i++) {
		if (open_gpus[i].fd > 0) {
			gpu_release(&open_gpus[i]);
			open_gpus[i].fd = 0;
			n++;
		}
	}
	return n;
}

/* mig_set() hands out data fds; close them with data_fd_close(). */
void data_fd_track(int fd)
{
	if (fd >= 0 && nr_data_fds < MAX_TRACKED)
		data_fds[nr_data_fds++] = fd;
}

void data_fd_close(int fd)
{
	int i;

	for (i = 0; i < nr_data_fds; i++) {
		if (data_fds[i] == fd) {
			data_fds[i] = data_fds[--nr_data_fds];
			break;
		}
	}
	if (fd >= 0)
		close(fd);
}

void data_fds_close(void)
{
	while (nr_data_fds)
		close(data_fds[--nr_data_fds]);
}

void knobs_restore(void)
{
	while (nr_knobs) {
		FILE *f = fopen(knobs[--nr_knobs].path, "w");

		if (f) {
			fputs(knobs[nr_knobs].old, f);
			fclose(f);
		}
	}
}

/* Write "1" to a sysfs file: 0, or -1 with errno. */
static int write_one(const char *path)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, "1", 1) == 1 ? 0 : -1;
	close(fd);
	return ret;
}

/* An operator lifts a quarantine: 0, or -1 with errno. */
int unquarantine(const char *name)
{
	const char *sys = dev_sysdir(name);
	char path[PATH_MAX];

	if (!sys) {
		errno = ENODEV;
		return -1;
	}
	snprintf(path, sizeof(path), "%s/migration/%s", sys, "unquarantine");
	return write_one(path);
}

/* 0 when a quarantine of a device this run opened was lifted. */
int unquarantine_all(void)
{
	char status[256];
	int i, ret = -1;

	for (i = 0; i < nr_seen; i++) {
		if (read_attr(seen[i], "migration/migratable", status, sizeof(status)) ||
		    strcmp(status, "0\n"))
			continue;
		if (!unquarantine(seen[i]))
			ret = 0;
	}
	return ret;
}

/* ---- devices ---------------------------------------------------------- */

/*
 * A device is an mdev (by UUID) or a PCI function bound to vfio-pci (by
 * address); this is its directory in sysfs, or NULL.
 */
const char *dev_sysdir(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s", name);
	if (!access(path, F_OK))
		return path;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", name);
	if (!access(path, F_OK))
		return path;
	return NULL;
}

/* The driver a PCI function is bound to, or "". */
void dev_driver(const char *name, char *buf, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = 0;
		snprintf(buf, len, "%s", strrchr(link, '/') + 1);
	}
}

/* Test knobs: simgpu's debugfs for an mdev, the PF driver's for a VF. */
const char *knob_dir(const char *name)
{
	static char path[256];
	const char *sys = dev_sysdir(name);

	snprintf(path, sizeof(path), "/sys/kernel/debug/%s/%s",
		 sys && strstr(sys, "/pci/") ? "simgpu-pf" : "simgpu", name);
	return path;
}

/* Set by a fault sweep: called around the parts of gpu_open() it sweeps. */
void (*gpu_open_window)(bool open);

static int group_open(struct gpu *g)
{
	struct vfio_group_status gs = { .argsz = sizeof(gs) };
	char path[PATH_MAX], link[PATH_MAX];
	const char *sys = dev_sysdir(g->name);
	ssize_t n;

	if (!sys) {
		fprintf(stderr, "# %s: no such mdev or PCI device\n", g->name);
		return -1;
	}
	g->pci = !!strstr(sys, "/pci/");
	snprintf(path, sizeof(path), "%s/iommu_group", sys);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		fprintf(stderr, "# %s: %s\n", path, strerror(errno));
		return -1;
	}
	link[n] = 0;
	snprintf(path, sizeof(path), "/dev/vfio/%s", strrchr(link, '/') + 1);
	g->container = open("/dev/vfio/vfio", O_RDWR);
	g->group = open(path, O_RDWR);
	if (g->container < 0 || g->group < 0) {
		fprintf(stderr, "# open container/group %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (ioctl(g->group, VFIO_GROUP_GET_STATUS, &gs) || !(gs.flags & VFIO_GROUP_FLAGS_VIABLE) ||
	    ioctl(g->group, VFIO_GROUP_SET_CONTAINER, &g->container) ||
	    ioctl(g->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
		fprintf(stderr, "# group/container setup: %s\n", strerror(errno));
		return -1;
	}
	if (gpu_open_window)
		gpu_open_window(true);
	g->fd = ioctl(g->group, VFIO_GROUP_GET_DEVICE_FD, g->name);
	if (g->fd < 0) {
		fprintf(stderr, "# get device fd: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int regions_map(struct gpu *g)
{
	struct vfio_region_info ri = { .argsz = sizeof(ri) };
	struct vfio_iommu_type1_dma_map map = { .argsz = sizeof(map) };
	uint16_t cmd;

	ri.index = VFIO_PCI_CONFIG_REGION_INDEX;
	if (ioctl(g->fd, VFIO_DEVICE_GET_REGION_INFO, &ri))
		return -1;
	g->cfg_off = ri.offset;
	g->cfg_size = ri.size;
	ri.index = VFIO_PCI_BAR0_REGION_INDEX;
	ri.argsz = sizeof(ri);
	if (ioctl(g->fd, VFIO_DEVICE_GET_REGION_INFO, &ri) || ri.size != SIMGPU_BAR0_SIZE)
		return -1;
	g->bar_off = ri.offset;
	/* Memory decoding and bus mastering, as a guest driver enables them. */
	if (cfg_read(g, PCI_COMMAND, &cmd, sizeof(cmd)))
		return -1;
	cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	if (pwrite(g->fd, &cmd, sizeof(cmd), g->cfg_off + PCI_COMMAND) != sizeof(cmd))
		return -1;

	if (gpu_open_window)
		gpu_open_window(false);	/* guest memory: the VMM's, not the device's */
	g->mem_size = guest_size;
	g->mem = mmap(NULL, g->mem_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->mem == MAP_FAILED) {
		g->mem = NULL;
		return -1;
	}
	map.vaddr = (uintptr_t)g->mem;
	map.iova = GUEST_IOVA;
	map.size = g->mem_size;
	map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	if (ioctl(g->container, VFIO_IOMMU_MAP_DMA, &map)) {
		fprintf(stderr, "# map dma: %s\n", strerror(errno));
		return -1;
	}
	g->next = GUEST_IOVA;
	return 0;
}

/* The interrupt: MSI on an mdev, MSI-X where the function has no MSI. */
static int irqs_wire(struct gpu *g)
{
	struct vfio_irq_info ii = { .argsz = sizeof(ii), .index = VFIO_PCI_MSI_IRQ_INDEX };

	if (gpu_open_window)
		gpu_open_window(true);
	if (ioctl(g->fd, VFIO_DEVICE_GET_IRQ_INFO, &ii))
		return -1;
	g->irq_index = ii.count ? VFIO_PCI_MSI_IRQ_INDEX : VFIO_PCI_MSIX_IRQ_INDEX;
	g->msi_efd = eventfd(0, EFD_NONBLOCK);
	g->req_efd = eventfd(0, EFD_NONBLOCK);
	if (set_irq(g, g->irq_index, g->msi_efd) ||
	    set_irq(g, VFIO_PCI_REQ_IRQ_INDEX, g->req_efd)) {
		fprintf(stderr, "# set irqs: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

int gpu_open(struct gpu *g, const char *name)
{
	char val[64];

	memset(g, 0, sizeof(*g));
	g->container = -1;
	g->group = -1;
	g->fd = -1;
	g->msi_efd = -1;
	g->req_efd = -1;
	snprintf(g->name, sizeof(g->name), "%s", name);
	if (group_open(g) || regions_map(g) || irqs_wire(g))
		goto err;
	if (gpu_open_window)
		gpu_open_window(false);
	g->migration = !gpu_feature(g, VFIO_DEVICE_FEATURE_PROBE | VFIO_DEVICE_FEATURE_GET |
				    VFIO_DEVICE_FEATURE_MIGRATION, NULL, 0);
	if (g->pci)
		dev_driver(name, g->driver, sizeof(g->driver));
	g->nr_queues = rd(g, SIMGPU_REG_NUM_QUEUES);
	g->vram = rd(g, SIMGPU_REG_VRAM_SIZE_LO) | (uint64_t)rd(g, SIMGPU_REG_VRAM_SIZE_HI) << 32;
	if (!g->pci && (read_attr(name, "simgpu/queues", val, sizeof(val)) ||
			(uint32_t)atoi(val) != g->nr_queues)) {
		fprintf(stderr, "# queues register %u disagrees with sysfs\n", g->nr_queues);
		goto err;
	}
	track_gpu(g);
	return 0;
err:
	if (gpu_open_window)
		gpu_open_window(false);
	gpu_release(g);
	return -1;
}

void gpu_close(struct gpu *g)
{
	if (g->fd >= 0)
		untrack_gpu(g->fd);
	gpu_release(g);
	g->fd = -1;
	g->group = -1;
	g->container = -1;
	g->msi_efd = -1;
	g->req_efd = -1;
	g->mem = NULL;
}

uint32_t rd(struct gpu *g, uint32_t reg)
{
	uint32_t v = 0xdeadbeef;

	if (pread(g->fd, &v, 4, g->bar_off + reg) != 4)
		fprintf(stderr, "# BAR0 read 0x%x: %s\n", reg, strerror(errno));
	return v;
}

void wr(struct gpu *g, uint32_t reg, uint32_t val)
{
	if (pwrite(g->fd, &val, 4, g->bar_off + reg) != 4)
		fprintf(stderr, "# BAR0 write 0x%x: %s\n", reg, strerror(errno));
}

uint32_t qrd(struct gpu *g, int q, uint32_t reg)
{
	return rd(g, SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + reg);
}

void qwr(struct gpu *g, int q, uint32_t reg, uint32_t val)
{
	wr(g, SIMGPU_QUEUE_BASE + q * SIMGPU_QUEUE_STRIDE + reg, val);
}

int cfg_read(struct gpu *g, uint32_t off, void *buf, size_t len)
{
	return pread(g->fd, buf, len, g->cfg_off + off) == (ssize_t)len ? 0 : -1;
}

uint64_t galloc(struct gpu *g, size_t len)
{
	uint64_t iova = g->next;

	len = (len + 4095) & ~4095ULL;
	if (g->next + len > GUEST_IOVA + g->mem_size) {
		fprintf(stderr, "# guest memory exhausted\n");
		abort();
	}
	g->next += len;
	memset(gptr(g, iova), 0, len);
	return iova;
}

void *gptr(struct gpu *g, uint64_t iova)
{
	return g->mem + (iova - GUEST_IOVA);
}

uint64_t *gpu_pte(struct gpu *g, uint64_t va)
{
	uint64_t table = g->pt_root;
	int level;

	for (level = SIMGPU_PT_ROOT_LEVEL; level > 0; level--) {
		uint64_t *e = (uint64_t *)gptr(g, table) + SIMGPU_PT_INDEX(va, level);

		if (!(*e & SIMGPU_PTE_VALID))
			*e = galloc(g, SIMGPU_PAGE_SIZE) | SIMGPU_PTE_VALID;
		table = *e & SIMGPU_PTE_ADDR_MASK;
	}
	return (uint64_t *)gptr(g, table) + SIMGPU_PT_INDEX(va, 0);
}

void gpu_map(struct gpu *g, uint64_t va, uint64_t target, uint64_t flags)
{
	*gpu_pte(g, va) = (target & SIMGPU_PTE_ADDR_MASK) | flags | SIMGPU_PTE_VALID;
}

void gpu_map_range(struct gpu *g, uint64_t va, uint64_t target, uint64_t len,
		   uint64_t flags)
{
	uint64_t off;

	for (off = 0; off < len; off += 4096)
		gpu_map(g, va + off, target + off, flags);
}

/* Page tables, rings on every queue, interrupts unmasked, processor on. */
int gpu_setup(struct gpu *g, uint32_t ring_entries)
{
	uint32_t i;

	g->pt_root = galloc(g, 4096);
	wr(g, SIMGPU_REG_PT_ROOT_LO, (uint32_t)g->pt_root);
	wr(g, SIMGPU_REG_PT_ROOT_HI, g->pt_root >> 32);
	for (i = 0; i < g->nr_queues; i++) {
		struct gpu_queue *q = &g->q[i];

		q->size = ring_entries;
		q->ring_iova = galloc(g, ring_entries * sizeof(struct simgpu_cmd));
		q->ring = gptr(g, q->ring_iova);
		q->tail = 0;
		qwr(g, i, SIMGPU_QREG_RING_LO, (uint32_t)q->ring_iova);
		qwr(g, i, SIMGPU_QREG_RING_HI, q->ring_iova >> 32);
		qwr(g, i, SIMGPU_QREG_RING_SIZE, ring_entries);
		qwr(g, i, SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_ENABLE);
	}
	wr(g, SIMGPU_REG_INT_MASK, 0xffffffff);
	wr(g, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
	return 0;
}

void gpu_submit(struct gpu *g, int qi, uint32_t op, uint32_t flags,
		uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct gpu_queue *q = &g->q[qi];
	struct simgpu_cmd *c = &q->ring[q->tail & (q->size - 1)];

	memset(c, 0, sizeof(*c));
	c->opcode = op;
	c->flags = flags;
	c->args[0] = a0;
	c->args[1] = a1;
	c->args[2] = a2;
	c->args[3] = a3;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	q->tail++;
	qwr(g, qi, SIMGPU_QREG_TAIL, q->tail);
}

/* 0 when the queue consumed everything, 1 on a queue error, -1 on timeout. */
int gpu_wait_idle(struct gpu *g, int qi, int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;

	for (;;) {
		uint32_t st = qrd(g, qi, SIMGPU_QREG_STATUS);

		if (st & SIMGPU_QSTATUS_ERROR)
			return 1;
		if (!(st & SIMGPU_QSTATUS_BUSY))
			return 0;
		if (now_ms() > end)
			return -1;
		usleep(1000);
	}
}

/* Wait for the MSI eventfd; returns the count or -1 on timeout. */
int gpu_wait_irq(struct gpu *g, int timeout_ms)
{
	struct pollfd p = { .fd = g->msi_efd, .events = POLLIN };
	uint64_t cnt;

	if (poll(&p, 1, timeout_ms) != 1)
		return -1;
	if (read(g->msi_efd, &cnt, sizeof(cnt)) != sizeof(cnt))
		return -1;
	return (int)cnt;
}

int gpu_invalidate(struct gpu *g, uint32_t seq, int timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;

	wr(g, SIMGPU_REG_INVAL_REQ, seq);
	while (rd(g, SIMGPU_REG_INVAL_ACK) != seq) {
		if (now_ms() > end)
			return -1;
		usleep(200);
	}
	return 0;
}

int gpu_reset(struct gpu *g)
{
	return ioctl(g->fd, VFIO_DEVICE_RESET);
}

/*
 * VFIO_DEVICE_FEATURE with @flags (GET/SET and the feature) and @len bytes
 * of @data, copied in and, for what the kernel fills, back: 0 or -errno.
 */
int gpu_feature(struct gpu *g, uint32_t flags, void *data, size_t len)
{
	struct vfio_device_feature *f = calloc(1, sizeof(*f) + len);
	int ret;

	if (!f)
		return -ENOMEM;
	f->argsz = sizeof(*f) + len;
	f->flags = flags;
	if (len)
		memcpy(f->data, data, len);
	ret = ioctl(g->fd, VFIO_DEVICE_FEATURE, f) ? -errno : 0;
	if (len)
		memcpy(data, f->data, len);
	free(f);
	return ret;
}

/* Set a test knob; its old value comes back after the scenario. */
int knob_set(struct gpu *g, const char *knob, const char *val)
{
	char path[PATH_MAX];
	FILE *f;
	int i, ret;

	snprintf(path, sizeof(path), "%s/%s", knob_dir(g->name), knob);
	for (i = 0; i < nr_knobs; i++)
		if (!strcmp(knobs[i].path, path))
			break;
	if (i == nr_knobs && nr_knobs < (int)ARRAY_SIZE(knobs) &&
	    !read_file(path, knobs[i].old, sizeof(knobs[i].old))) {
		snprintf(knobs[i].path, sizeof(knobs[i].path), "%s", path);
		nr_knobs++;
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fputs(val, f) < 0 ? -1 : 0;
	if (fclose(f))
		ret = -1;
	return ret;
}

/* One counter from the instance's debugfs "stats" file. */
int stat_read(struct gpu *g, const char *name, unsigned long long *val)
{
	char path[PATH_MAX], key[64];
	unsigned long long v;
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/stats", knob_dir(g->name));
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, name)) {
			*val = v;
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

int dev_remove(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/remove", name);
	return write_one(path);
}

/* An attribute of a device's sysfs directory, as text. */
int read_attr(const char *name, const char *attr, char *buf, size_t len)
{
	const char *sys = dev_sysdir(name);
	char path[PATH_MAX];

	if (!sys)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", sys, attr);
	return read_file(path, buf, len) ? -1 : 0;
}
