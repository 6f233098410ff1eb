// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: allocation-failure sweeps with the kernel's fail-nth.
 *
 * For each operation a VMM performs (open the device, each migration arc,
 * reading and writing the data fd, DMA logging, creating an mdev), the
 * N-th fault-injection point the kernel meets in this thread fails, for
 * N = 1, 2, ... until the operation runs with nothing injected (fail-nth
 * reads back non-zero).  Each attempt must end in success or a clean
 * error with the device in a defined state: after it, VFIO_DEVICE_RESET
 * brings the device to RUNNING, and at the end of each sweep the device
 * works.  The harness then checks the kernel log and kmemleak.  Needs
 * CONFIG_FAULT_INJECTION with failslab and fail_page_alloc (the debug
 * kernel); skipped elsewhere.
 *
 * Two paths outside gpumig are swept only with FAULT_SWEEP_UPSTREAM=1,
 * because the sweep found error-path bugs there that the kernel has not
 * fixed (Documentation/gpumig/testing.rst): creating an mdev (the VFIO
 * core's vfio_create_group() drops a group it failed to add with its
 * iommu_group still set: a WARN and a leaked reference) and enabling a
 * PCI function's interrupts (genirq warns when it removes /proc entries
 * of an irq whose registration failed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

#define FI "/sys/kernel/debug/"
/* A sweep that has not finished by then says so and fails. */
#define MAX_POINTS 2000

struct sweep {
	struct gpu *g;
	char name[64];		/* the device */
	int fd;			/* data fd of the arc under test, or -1 */
	struct blob stream;	/* a whole stream of this device, for resume */
	char uuid[64];		/* mdev create: the instance made */
};

static int fnfd = -1;

static int put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* Fail the @n-th injection point from now on, in this thread. */
static void arm(unsigned int n)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", n);
	if (pwrite(fnfd, v, strlen(v), 0) < 0)
		fprintf(stderr, "# fail-nth: %s\n", strerror(errno));
}

/* Disarm; true when a failure was injected since arm(). */
static bool disarm(void)
{
	char v[16] = "";
	bool hit;

	if (pread(fnfd, v, sizeof(v) - 1, 0) <= 0)
		return false;
	hit = atoi(v) == 0;
	if (pwrite(fnfd, "0", 1, 0) < 0)
		fprintf(stderr, "# fail-nth: %s\n", strerror(errno));
	return hit;
}

static void close_data(struct sweep *s)
{
	if (s->fd >= 0)
		data_fd_close(s->fd);
	s->fd = -1;
}

/* After an attempt: data fd closed, a reset brings the device to RUNNING. */
static int settle(struct sweep *s)
{
	uint32_t st = ~0U;

	close_data(s);
	dma_log_stop(s->g);
	CHECK(gpu_reset(s->g) == 0, "reset after an injected failure: %s",
	      strerror(errno));
	CHECK(mig_get(s->g, &st) == 0 && st == VFIO_DEVICE_STATE_RUNNING,
	      "state %u after reset, not RUNNING", st);
	return 0;
}

/* ---- the operations: prepare (not injected), then the one injected ---- */

static int to_stop(struct sweep *s)
{
	return mig_set(s->g, VFIO_DEVICE_STATE_STOP, NULL);
}

static int to_precopy_fd(struct sweep *s)
{
	return mig_set(s->g, VFIO_DEVICE_STATE_PRE_COPY, &s->fd);
}

static int stop_and_stopcopy_fd(struct sweep *s)
{
	return to_stop(s) ? -1 : mig_set(s->g, VFIO_DEVICE_STATE_STOP_COPY, &s->fd);
}

/* From STOP a new fd; from PRE_COPY the same fd goes on (none returned). */
static int op_stopcopy(struct sweep *s)
{
	return mig_set(s->g, VFIO_DEVICE_STATE_STOP_COPY, s->fd < 0 ? &s->fd : NULL);
}

static int op_resuming(struct sweep *s)
{
	return mig_set(s->g, VFIO_DEVICE_STATE_RESUMING, &s->fd);
}

static int stop_and_resuming_fd(struct sweep *s)
{
	return to_stop(s) ? -1 : op_resuming(s);
}

static int op_read_all(struct sweep *s)
{
	struct blob b = { 0 };
	int ret = mig_read(s->fd, &b);

	free(b.p);
	return ret == -ENOMSG ? 0 : ret;
}

/* The whole stream in 1 MiB writes, then RESUMING -> STOP installs it. */
static int op_resume(struct sweep *s)
{
	int ret = mig_write(s->fd, s->stream.p, s->stream.len, 1 << 20);

	return ret ? ret : to_stop(s);
}

static int op_log_start(struct sweep *s)
{
	return dma_log_start(s->g, GUEST_IOVA, guest_size);
}

static int op_log_report(struct sweep *s)
{
	uint64_t bm[BM_WORDS_MAX];

	return report_guest(s->g, bm) < 0 ? -1 : 0;
}

static int op_precopy_info(struct sweep *s)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };

	return ioctl(s->fd, VFIO_MIG_GET_PRECOPY_INFO, &info) ? -errno : 0;
}

static int op_data_size(struct sweep *s)
{
	int64_t n = mig_data_size(s->g);

	return n < 0 ? (int)n : 0;
}

static const char *mdev_create_path(void)
{
	return "/sys/class/mdev_bus/simgpu/mdev_supported_types/simgpu-64M/create";
}

/* A fresh UUID for the next instance, read with nothing armed. */
static int new_uuid(struct sweep *s)
{
	FILE *f = fopen("/proc/sys/kernel/random/uuid", "r");
	bool ok = f && fgets(s->uuid, sizeof(s->uuid), f);

	if (f)
		fclose(f);
	s->uuid[ok ? strcspn(s->uuid, "\n") : 0] = 0;
	return ok ? 0 : -1;
}

/* Whatever the create did, the instance goes, and a new one can be made. */
static int after_mdev_create(struct sweep *s)
{
	char path[160];

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/remove", s->uuid);
	if (access(path, F_OK) == 0)
		CHECK(put(path, "1") == 0, "remove %s after its create", s->uuid);
	return 0;
}

struct op {
	const char *name;
	int (*prep)(struct sweep *s);	/* from RUNNING, not injected */
	int (*op)(struct sweep *s);	/* injected */
	bool logging;			/* needs device DMA logging */
};

static const struct op ops[] = {
	{ "RUNNING->PRE_COPY", NULL, to_precopy_fd, false },
	{ "RUNNING->STOP", NULL, to_stop, false },
	{ "STOP->STOP_COPY", to_stop, op_stopcopy, false },
	{ "PRE_COPY->STOP_COPY", to_precopy_fd, op_stopcopy, false },
	{ "STOP->RESUMING", to_stop, op_resuming, false },
	{ "PRE_COPY read", to_precopy_fd, op_read_all, false },
	{ "PRECOPY_INFO", to_precopy_fd, op_precopy_info, false },
	{ "MIG_DATA_SIZE", NULL, op_data_size, false },
	{ "STOP_COPY read", stop_and_stopcopy_fd, op_read_all, false },
	{ "resume write, RESUMING->STOP", stop_and_resuming_fd, op_resume, false },
	{ "DMA_LOGGING_START", NULL, op_log_start, true },
	{ "DMA_LOGGING_REPORT", op_log_start, op_log_report, true },
};

/* The device still runs work after a sweep. */
static int works(struct gpu *g)
{
	uint64_t *f;

	g->pt_root = 0;
	gpu_setup(g, 16);
	f = sysbuf(g, VA_SYS, 4096, NULL);
	f[0] = 0;
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 0x5157, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0 && f[0] == 0x5157,
	      "the device does not work after the sweep");
	return 0;
}

/* Sweep one operation: the number of injection points it met, or -1. */
static int sweep_op(struct sweep *s, const struct op *o)
{
	unsigned int n;
	bool hit;
	int ret;

	for (n = 1; n <= MAX_POINTS; n++) {
		if (o->prep && o->prep(s))
			return fail("%s: preparing it failed with nothing injected", o->name);
		arm(n);
		ret = o->op(s);
		hit = disarm();
		if (!hit && ret)
			return fail("%s failed (%d) with nothing injected", o->name, ret);
		TRY(settle(s));
		if (!hit)
			return n - 1;
	}
	return fail("%s: still meeting injection points after %u", o->name, MAX_POINTS);
}

/*
 * The open sweep fails points only where the device is opened (the device
 * fd, its regions and config space, its interrupts), not in the VMM's own
 * guest memory around them (pinning 48 MiB through an IOMMU meets one
 * point a page): gpu_open() calls this around those parts, and the count
 * carries from one part to the next.
 */
static unsigned int window_left, window_part;
static bool window_armed, window_hit, sweep_upstream, window_skip_irqs;

static void open_window(bool open)
{
	char v[16] = "";

	if (open) {
		/* A function's interrupts (the second part) are genirq's. */
		if (++window_part > 1 && window_skip_irqs)
			return;
		if (window_left && !window_hit) {
			arm(window_left);
			window_armed = true;
		}
		return;
	}
	if (!window_armed)
		return;
	window_armed = false;
	if (pread(fnfd, v, sizeof(v) - 1, 0) > 0 && atoi(v) == 0)
		window_hit = true;
	else
		window_left = atoi(v);
	if (pwrite(fnfd, "0", 1, 0) < 0)
		fprintf(stderr, "# fail-nth: %s\n", strerror(errno));
}

/* Open with N failing; the last attempt, with none failed, stays open. */
static int sweep_open(struct sweep *s)
{
	unsigned int n;
	int ret;

	gpu_close(s->g);
	for (n = 1; n <= MAX_POINTS; n++) {
		window_left = n;
		window_hit = false;
		window_part = 0;
		gpu_open_window = open_window;
		ret = gpu_open(s->g, s->name);
		gpu_open_window = NULL;
		if (!window_hit && ret)
			return fail("open failed with nothing injected");
		if (!window_hit)
			return n - 1;
		if (!ret)
			gpu_close(s->g);
	}
	return fail("open: still meeting injection points after %u", MAX_POINTS);
}

static int sweep_mdev_create(struct sweep *s)
{
	unsigned int n;
	bool hit;
	int ret;

	for (n = 1; n <= MAX_POINTS; n++) {
		CHECK(new_uuid(s) == 0, "no UUID");
		arm(n);
		ret = put(mdev_create_path(), s->uuid);
		hit = disarm();
		TRY(after_mdev_create(s));
		if (!hit && ret)
			return fail("mdev create failed (%d) with nothing injected", ret);
		if (!hit)
			return n - 1;
	}
	return fail("mdev create: still meeting injection points after %u", MAX_POINTS);
}

int t_fault_sweep(struct gpu *g)
{
	struct sweep s = { .g = g, .fd = -1 };
	int logging = device_tracking(g), n, total = 0;
	char line[1024] = "";
	size_t i;

	fnfd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fnfd < 0 || put(FI "failslab/ignore-gfp-wait", "N") ||
	    put(FI "fail_page_alloc/ignore-gfp-wait", "N")) {
		snprintf(fail_msg, sizeof(fail_msg),
			 "no fail-nth and failslab/fail_page_alloc (CONFIG_FAULT_INJECTION)");
		if (fnfd >= 0)
			close(fnfd);
		return SKIP;
	}
	put(FI "failslab/verbose", "0");
	put(FI "fail_page_alloc/verbose", "0");
	put(FI "fail_page_alloc/ignore-gfp-highmem", "N");
	put(FI "fail_page_alloc/min-order", "0");
	snprintf(s.name, sizeof(s.name), "%s", g->name);
	sweep_upstream = getenv("FAULT_SWEEP_UPSTREAM") && atoi(getenv("FAULT_SWEEP_UPSTREAM"));
	window_skip_irqs = g->pci && !sweep_upstream;

	/* A whole stream of this device, for the resume sweep. */
	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 1 << 20, 0xfa17, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fill");
	TRY(stop_and_stopcopy_fd(&s));
	CHECK(mig_read(s.fd, &s.stream) == 0, "capture");
	TRY(settle(&s));

	n = sweep_open(&s);
	TRY(n < 0);
	total += n;
	snprintf(line + strlen(line), sizeof(line) - strlen(line), " open %d,", n);
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		if (ops[i].logging && logging != 1)
			continue;
		n = sweep_op(&s, &ops[i]);
		TRY(n < 0);
		total += n;
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s %d,",
			 ops[i].name, n);
	}
	TRY(works(g));
	if (!g->pci && sweep_upstream) {
		n = sweep_mdev_create(&s);
		TRY(n < 0);
		total += n;
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 " mdev create %d,", n);
	}
	line[strlen(line) - 1] = 0;
	printf("    # fault_sweep: %d injection points, each failed once:%s\n", total, line);
	put(FI "failslab/ignore-gfp-wait", "Y");
	put(FI "fail_page_alloc/ignore-gfp-wait", "Y");
	close(fnfd);
	free(s.stream.p);
	return 0;
}
