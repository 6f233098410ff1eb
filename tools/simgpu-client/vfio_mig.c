// SPDX-License-Identifier: GPL-2.0
/*
 * The VFIO migration uAPI from the VMM's side, for any gpumig device; see
 * vfio_mig.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "vfio_mig.h"

/* ---- migration state ---------------------------------------------------- */

int mig_set(struct gpu *g, uint32_t state, int *data_fd)
{
	struct vfio_device_feature_mig_state ms = { .device_state = state,
						    .data_fd = -1 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_SET |
				      VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			      &ms, sizeof(ms));

	if (ret)
		return ret;
	if (data_fd) {
		*data_fd = ms.data_fd;
		data_fd_track(ms.data_fd);	/* closed after the scenario if not before */
	} else if (ms.data_fd >= 0) {
		close(ms.data_fd);
	}
	return 0;
}

/* The device's migration state (GET): 0 or -errno. */
int mig_get(struct gpu *g, uint32_t *state)
{
	struct vfio_device_feature_mig_state ms = { 0 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				      VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			      &ms, sizeof(ms));

	*state = ms.device_state;
	return ret;
}

int64_t mig_data_size(struct gpu *g)
{
	struct vfio_device_feature_mig_data_size ds = { 0 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				      VFIO_DEVICE_FEATURE_MIG_DATA_SIZE,
			      &ds, sizeof(ds));

	return ret ? ret : (int64_t)ds.stop_copy_length;
}

/* PRE_COPY's initial and dirty bytes, of the saving fd @fd. */
int mig_precopy_info(int fd, struct vfio_precopy_info *info)
{
	info->argsz = sizeof(*info);
	return ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, info);
}

/* ---- the data fd -------------------------------------------------------- */

/* Read until EOF (0) or ENOMSG; returns the last read()'s result. */
int mig_read(int fd, struct blob *b)
{
	for (;;) {
		ssize_t n;

		if (b->cap - b->len < (1 << 20)) {
			b->cap = b->cap * 2 + (4 << 20);
			b->p = realloc(b->p, b->cap);
		}
		n = read(fd, b->p + b->len,
			 1 << 20); /* QEMU reads at most 1 MiB */
		if (n <= 0)
			return n < 0 ? -errno : 0;
		b->len += n;
	}
}

int mig_write(int fd, const uint8_t *p, size_t len, size_t piece)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, p + off,
				  len - off < piece ? len - off : piece);

		if (n < 0)
			return -errno;
		off += n;
	}
	return 0;
}

/*
 * mig_write() from memory this process has not touched yet: a memfd's
 * pages, mapped afresh, so that the kernel's copy of VRAM data straight
 * into VRAM (with page faults disabled) ends short at each page it finds
 * unmapped and the rest of that chunk goes through the engine's buffer,
 * where the page faults in: the path a VMM's freshly received buffer
 * takes.
 */
int mig_write_untouched(int fd, const uint8_t *p, size_t len, size_t piece)
{
	size_t off = 0;
	uint8_t *m;
	int mfd, ret;

	if (!len)
		return 0;
	mfd = memfd_create("gpumig-stream", MFD_CLOEXEC);
	if (mfd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(mfd, p + off, len - off);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			close(mfd);
			return ret;
		}
		off += n;
	}
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, mfd, 0);
	ret = m == MAP_FAILED ? -errno : 0;
	close(mfd);
	if (ret)
		return ret;
	ret = mig_write(fd, m, len, piece);
	munmap(m, len);
	return ret;
}

/* Capture a whole stream (STOP_COPY) of @g into @b; @g runs again after. */
int mig_capture(struct gpu *g, struct blob *b)
{
	int fd = -1, ret;

	if (mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, &fd))
		return -1;
	ret = mig_read(fd, b);
	data_fd_close(fd);
	mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL);
	return ret;
}

/* ---- DMA logging -------------------------------------------------------- */

int dma_log_start(struct gpu *g, uint64_t iova, uint64_t len)
{
	struct vfio_device_feature_dma_logging_range r = { .iova = iova,
							   .length = len };
	struct vfio_device_feature_dma_logging_control c = {
		.page_size = 4096, .num_ranges = 1, .ranges = (uintptr_t)&r
	};

	return gpu_feature(g, VFIO_DEVICE_FEATURE_SET |
				      VFIO_DEVICE_FEATURE_DMA_LOGGING_START,
			   &c, sizeof(c));
}

int dma_log_report(struct gpu *g, uint64_t iova, uint64_t len, uint64_t *bitmap)
{
	struct vfio_device_feature_dma_logging_report r = {
		.iova = iova, .length = len, .page_size = 4096,
		.bitmap = (uintptr_t)bitmap
	};

	return gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				      VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			   &r, sizeof(r));
}

int dma_log_stop(struct gpu *g)
{
	return gpu_feature(g, VFIO_DEVICE_FEATURE_SET |
				      VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP,
			   NULL, 0);
}

/* ---- gpumig's migration/ sysfs ------------------------------------------ */

/*
 * One file of a device's migration/ directory, by name, without its
 * newline: 0, or -1 when the device has no such file.
 */
int mig_text(const char *name, const char *key, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "migration/%s", key);
	if (read_attr(name, path, buf, len))
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* A number from one file of a device's migration/ directory, or -1. */
long long mig_value(const char *name, const char *key)
{
	char v[64], *end;
	long long n;

	if (mig_text(name, key, v, sizeof(v)) || !v[0])
		return -1;
	n = strtoll(v, &end, 10);
	return *end ? -1 : n;
}

/*
 * The producer the last stream resumed on @name named ("gpumig/0.2"), ""
 * for none: migration/source, or on a release without that file (0.1) the
 * source= of its migration/status summary.
 */
void mig_source(const char *name, char *buf, size_t len)
{
	char st[512];
	const char *p;

	if (!mig_text(name, "source", buf, len))
		return;
	buf[0] = 0;
	if (read_attr(name, "migration/status", st, sizeof(st)))
		return;
	p = strstr(st, " source=");
	if (p)
		snprintf(buf, len, "%.*s", (int)strcspn(p + 8, "\n "), p + 8);
}

/* One metric file of migration/: its number, or -1. */
long long metric(struct gpu *g, const char *name)
{
	char path[64], v[128];

	snprintf(path, sizeof(path), "migration/%s", name);
	if (read_attr(g->name, path, v, sizeof(v)))
		return -1;
	return atoll(v);
}

/*
 * 1 when the module offers DMA logging, 0 when it does not, -1 unknown:
 * migration/dirty_tracking, or on a release without it (0.1) the
 * dirty_tracking= of its migration/status summary.
 */
int device_tracking(struct gpu *g)
{
	char v[256];

	if (mig_text(g->name, "dirty_tracking", v, sizeof(v))) {
		if (read_attr(g->name, "migration/status", v, sizeof(v)))
			return -1;
		return strstr(v, "dirty_tracking=device") ? 1 :
		       strstr(v, "dirty_tracking=none") ? 0 : -1;
	}
	return !strcmp(v, "device") ? 1 : !strcmp(v, "none") ? 0 : -1;
}
