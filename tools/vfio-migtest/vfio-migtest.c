// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: a conformance test of a device's VFIO live-migration uAPI
 * (the kernel's include/uapi/linux/vfio.h, migration v2), from the uAPI
 * alone: it knows nothing of the device, its stream or its driver.  Any
 * VFIO migration driver's author can run it on their device.  Output is
 * KTAP, one case per check; the exit status is 0 only when every check
 * passed (or was skipped for a reason it names).  See vfio-migtest.8.
 *
 *   vfio-migtest [-c] [-d DST] [-k KNOWN] [-n CORRUPT] [-p PLUGIN] [-s SEED] [-N SUITE] DEVICE
 *
 * -c opens the devices through the iommufd cdev (/dev/vfio/devices/vfioN)
 * instead of their group and a type1 container.  -p loads a device plug-in
 * (vfio-migtest-plugin.h) for the checks that need the device to act.
 *
 * DEVICE and DST are PCI addresses (0000:01:00.2) or mdev UUIDs, each in
 * an IOMMU group of its own, unused, bound to a VFIO driver.  Streams are
 * written back into DST (by default DEVICE itself).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include <dlfcn.h>
#include <linux/vfio.h>
#ifdef VFIO_DEVICE_BIND_IOMMUFD
#include <linux/iommufd.h>
#endif

#include "vfio-migtest-plugin.h"

/*
 * Built against libc headers older than 6.2 (Debian 12's are 6.1): the
 * uAPI's PRE_COPY and MIG_DATA_SIZE, as include/uapi/linux/vfio.h has them.
 */
#ifndef VFIO_MIG_GET_PRECOPY_INFO
#define VFIO_MIGRATION_PRE_COPY		4
#define VFIO_DEVICE_STATE_PRE_COPY	6
#define VFIO_DEVICE_STATE_PRE_COPY_P2P	7
struct vfio_precopy_info {
	__u32 argsz;
	__u32 flags;
	__aligned_u64 initial_bytes;
	__aligned_u64 dirty_bytes;
};

#define VFIO_MIG_GET_PRECOPY_INFO _IO(VFIO_TYPE, VFIO_BASE + 21)
#endif
#ifndef VFIO_DEVICE_FEATURE_MIG_DATA_SIZE
struct vfio_device_feature_mig_data_size {
	__aligned_u64 stop_copy_length;
};

#define VFIO_DEVICE_FEATURE_MIG_DATA_SIZE 9
#endif
/* 6.19's opt-in to VFIO_PRECOPY_INFO_REINIT (older headers lack it). */
#ifndef VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2
#define VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2 12
#endif
#ifndef VFIO_PRECOPY_INFO_REINIT
#define VFIO_PRECOPY_INFO_REINIT 1U
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NR_STATES 8	/* ERROR .. PRE_COPY_P2P */
#define STREAM_MAX 0x80000000ULL	/* the largest stream read: 2 GiB */

static const char *const state_names[NR_STATES] = {
	[VFIO_DEVICE_STATE_ERROR] = "ERROR",
	[VFIO_DEVICE_STATE_STOP] = "STOP",
	[VFIO_DEVICE_STATE_RUNNING] = "RUNNING",
	[VFIO_DEVICE_STATE_STOP_COPY] = "STOP_COPY",
	[VFIO_DEVICE_STATE_RESUMING] = "RESUMING",
	[VFIO_DEVICE_STATE_RUNNING_P2P] = "RUNNING_P2P",
	[VFIO_DEVICE_STATE_PRE_COPY] = "PRE_COPY",
	[VFIO_DEVICE_STATE_PRE_COPY_P2P] = "PRE_COPY_P2P",
};

/* ---- KTAP ----------------------------------------------------------- */

static int nr_case, nr_fail;
static char why[512];

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("    # ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Say why a check fails: returns -1, for "return failed(...)". */
static int failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failed(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Known failures (-k FILE): a line "CASE reason" each.  Such a case that
 * fails is reported skipped with its reason; one that passes fails, so a
 * change in the device's behaviour shows.
 */
#define MAX_KNOWN 64
static struct {
	char name[64];
	char reason[256];
} known[MAX_KNOWN];
static int nr_known;

static int known_load(const char *path)
{
	char line[400];
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && nr_known < MAX_KNOWN) {
		char *r;

		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		r = line + strcspn(line, " \t");
		if (*r)
			*r++ = 0;
		r += strspn(r, " \t");
		snprintf(known[nr_known].name, sizeof(known[0].name), "%.63s", line);
		snprintf(known[nr_known].reason, sizeof(known[0].reason), "%.255s", r);
		nr_known++;
	}
	fclose(f);
	return 0;
}

static const char *known_reason(const char *name)
{
	int i;

	for (i = 0; i < nr_known; i++)
		if (!strcmp(known[i].name, name))
			return known[i].reason;
	return NULL;
}

/* One case: 0 ok, -1 not ok (why), 1 skipped (why). */
static void report(const char *name, int ret)
{
	const char *k = known_reason(name);

	nr_case++;
	if (k && ret < 0) {
		printf("    # %s: %s\n    ok %d %s # SKIP known failure: %s\n", name, why, nr_case,
		       name, k);
	} else if (k && ret == 0) {
		nr_fail++;
		printf("    # %s: listed as a known failure (%s) but passed: the device changed\n"
		       "    not ok %d %s\n", name, k, nr_case, name);
	} else if (ret > 0) {
		printf("    ok %d %s # SKIP %s\n", nr_case, name, why);
	} else if (ret < 0) {
		nr_fail++;
		printf("    # %s: %s\n    not ok %d %s\n", name, why, nr_case, name);
	} else {
		printf("    ok %d %s\n", nr_case, name);
	}
	fflush(stdout);
	why[0] = 0;
}

static int skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return 1;
}

/* ---- the device, through its group (type1 container) ---------------- */

struct dev {
	const char *name;
	int container, group, fd;
	bool cdev;		/* the iommufd cdev, not the group */
	int iommufd;
	uint32_t ioas;
	char cdev_path[PATH_MAX];
	uint64_t flags;		/* VFIO_MIGRATION_* */
	bool can_reset;
	struct vfio_migtest_host host;	/* lent to the plug-in */
	void *plugged;		/* the plug-in's state for it */
};

static int group_of(const char *name, char *path, size_t len)
{
	static const char *const buses[] = { "/sys/bus/pci/devices", "/sys/bus/mdev/devices" };
	char link[PATH_MAX], grp[PATH_MAX];
	unsigned int i;
	ssize_t n;

	for (i = 0; i < ARRAY_SIZE(buses); i++) {
		snprintf(link, sizeof(link), "%s/%s/iommu_group", buses[i], name);
		n = readlink(link, grp, sizeof(grp) - 1);
		if (n > 0) {
			grp[n] = 0;
			snprintf(path, len, "/dev/vfio/%s", strrchr(grp, '/') + 1);
			return 0;
		}
	}
	return -1;
}

static bool use_cdev;	/* -c */

#ifdef VFIO_DEVICE_BIND_IOMMUFD
/* /dev/vfio/devices/vfioN of @name: 0, or -1. */
static int cdev_of(const char *name, char *path, size_t len)
{
	static const char *const buses[] = { "/sys/bus/pci/devices", "/sys/bus/mdev/devices" };
	char dir[PATH_MAX];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(buses); i++) {
		struct dirent *e;
		DIR *dd;

		snprintf(dir, sizeof(dir), "%s/%s/vfio-dev", buses[i], name);
		dd = opendir(dir);
		if (!dd)
			continue;
		while ((e = readdir(dd)))
			if (!strncmp(e->d_name, "vfio", 4)) {
				snprintf(path, len, "/dev/vfio/devices/%s", e->d_name);
				closedir(dd);
				return 0;
			}
		closedir(dd);
	}
	return -1;
}
#endif

/* Open the cdev, bind it to the iommufd and attach it to the IOAS. */
static int cdev_attach(struct dev *d)
{
#ifdef VFIO_DEVICE_BIND_IOMMUFD
	struct vfio_device_bind_iommufd bind = { .argsz = sizeof(bind), .iommufd = d->iommufd };
	struct vfio_device_attach_iommufd_pt at = { .argsz = sizeof(at), .pt_id = d->ioas };

	d->fd = open(d->cdev_path, O_RDWR);
	if (d->fd < 0)
		return failed("%s: %s", d->cdev_path, strerror(errno));
	if (ioctl(d->fd, VFIO_DEVICE_BIND_IOMMUFD, &bind))
		return failed("%s: VFIO_DEVICE_BIND_IOMMUFD: %s", d->name, strerror(errno));
	if (ioctl(d->fd, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &at))
		return failed("%s: VFIO_DEVICE_ATTACH_IOMMUFD_PT: %s", d->name, strerror(errno));
	return 0;
#else
	(void)d;
	return failed("built without the iommufd uAPI (headers older than 6.6)");
#endif
}

/* The device through its cdev on an iommufd with one IOAS. */
static int dev_open_cdev(struct dev *d)
{
#ifdef VFIO_DEVICE_BIND_IOMMUFD
	struct iommu_ioas_alloc alloc = { .size = sizeof(alloc) };

	if (cdev_of(d->name, d->cdev_path, sizeof(d->cdev_path)))
		return failed("%s: no VFIO device cdev (CONFIG_VFIO_DEVICE_CDEV)", d->name);
	d->iommufd = open("/dev/iommu", O_RDWR);
	if (d->iommufd < 0)
		return failed("/dev/iommu: %s", strerror(errno));
	if (ioctl(d->iommufd, IOMMU_IOAS_ALLOC, &alloc))
		return failed("IOMMU_IOAS_ALLOC: %s", strerror(errno));
	d->ioas = alloc.out_ioas_id;
	d->cdev = true;
	return cdev_attach(d);
#else
	(void)d;
	return failed("built without the iommufd uAPI (headers older than 6.6)");
#endif
}

static int dev_open(struct dev *d, const char *name)
{
	struct vfio_group_status gs = { .argsz = sizeof(gs) };
	struct vfio_device_info info = { .argsz = sizeof(info) };
	char path[PATH_MAX];

	memset(d, 0, sizeof(*d));
	d->name = name;
	d->fd = -1;
	d->group = -1;
	d->container = -1;
	d->iommufd = -1;
	if (use_cdev) {
		if (dev_open_cdev(d))
			return -1;
		goto info;
	}
	if (group_of(name, path, sizeof(path)))
		return failed("%s: no IOMMU group (not a PCI function or mdev in sysfs)", name);
	d->container = open("/dev/vfio/vfio", O_RDWR);
	d->group = open(path, O_RDWR);
	if (d->container < 0 || d->group < 0)
		return failed("%s: %s", path, strerror(errno));
	if (ioctl(d->group, VFIO_GROUP_GET_STATUS, &gs) || !(gs.flags & VFIO_GROUP_FLAGS_VIABLE))
		return failed("%s: group not viable (another device of it is bound elsewhere)",
			      path);
	if (ioctl(d->group, VFIO_GROUP_SET_CONTAINER, &d->container) ||
	    ioctl(d->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return failed("%s: no type1 IOMMU container: %s", path, strerror(errno));
	d->fd = ioctl(d->group, VFIO_GROUP_GET_DEVICE_FD, name);
	if (d->fd < 0)
		return failed("%s: cannot open the device: %s", name, strerror(errno));
info:
	if (!ioctl(d->fd, VFIO_DEVICE_GET_INFO, &info))
		d->can_reset = info.flags & VFIO_DEVICE_FLAGS_RESET;
	return 0;
}

static int get_state(int fd, uint32_t *state);
static int set_state(int fd, uint32_t state, int *data_fd);

static void plug_detach(struct dev *d);

/* Close the device fd and open it again, nothing more. */
static int dev_reopen_raw(struct dev *d)
{
	plug_detach(d);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	if (d->cdev)
		return cdev_attach(d);
	d->fd = ioctl(d->group, VFIO_GROUP_GET_DEVICE_FD, d->name);
	return d->fd < 0 ? failed("reopening %s: %s", d->name, strerror(errno)) : 0;
}

/*
 * A fresh device fd for the next check: the uAPI says a newly opened
 * device is RUNNING.  One that is not (close_in_STATE reports it) is
 * reset first (VFIO_DEVICE_RESET, tried even where GET_INFO does not
 * offer it), or walked back to RUNNING, but never out of RESUMING: its
 * files went with the close, and mtty oopses on RESUMING -> STOP then.
 */
static uint32_t stale_state = VFIO_DEVICE_STATE_RUNNING;	/* the first seen */

static int dev_reopen(struct dev *d)
{
	uint32_t s = VFIO_DEVICE_STATE_RUNNING;

	if (dev_reopen_raw(d))
		return -1;
	if (get_state(d->fd, &s) || s == VFIO_DEVICE_STATE_RUNNING)
		return 0;
	if (stale_state == VFIO_DEVICE_STATE_RUNNING)
		stale_state = s;
	ioctl(d->fd, VFIO_DEVICE_RESET);
	if (!get_state(d->fd, &s) && s != VFIO_DEVICE_STATE_RUNNING &&
	    s != VFIO_DEVICE_STATE_RESUMING && s != VFIO_DEVICE_STATE_ERROR)
		set_state(d->fd, VFIO_DEVICE_STATE_RUNNING, NULL);
	if (get_state(d->fd, &s) || s != VFIO_DEVICE_STATE_RUNNING)
		return failed("%s: reopened in %s, and neither a reset nor the arcs bring it to RUNNING",
			      d->name, s < NR_STATES ? state_names[s] : "?");
	return 0;
}

static void dev_close(struct dev *d)
{
	plug_detach(d);
	if (d->fd >= 0)
		close(d->fd);
	if (d->group >= 0)
		close(d->group);
	if (d->container >= 0)
		close(d->container);
	if (d->iommufd >= 0)
		close(d->iommufd);
}

/* ---- the device plug-in (-p) ------------------------------------------ */

static const struct vfio_migtest_plugin *plug;

/* Map @len bytes at @vaddr for @d's DMA at @iova: 0 or -errno. */
static int dma_map(struct dev *d, uint64_t iova, void *vaddr, uint64_t len)
{
	struct vfio_iommu_type1_dma_map m = {
		.argsz = sizeof(m), .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)vaddr, .iova = iova, .size = len };

#ifdef VFIO_DEVICE_BIND_IOMMUFD
	if (d->cdev) {
		struct iommu_ioas_map im = {
			.size = sizeof(im), .ioas_id = d->ioas, .user_va = (uintptr_t)vaddr,
			.length = len, .iova = iova,
			.flags = IOMMU_IOAS_MAP_FIXED_IOVA | IOMMU_IOAS_MAP_READABLE |
				 IOMMU_IOAS_MAP_WRITEABLE };

		return ioctl(d->iommufd, IOMMU_IOAS_MAP, &im) ? -errno : 0;
	}
#endif
	return ioctl(d->container, VFIO_IOMMU_MAP_DMA, &m) ? -errno : 0;
}

static int dma_unmap(struct dev *d, uint64_t iova, uint64_t len)
{
	struct vfio_iommu_type1_dma_unmap u = { .argsz = sizeof(u), .iova = iova, .size = len };

#ifdef VFIO_DEVICE_BIND_IOMMUFD
	if (d->cdev) {
		struct iommu_ioas_unmap iu = {
			.size = sizeof(iu), .ioas_id = d->ioas, .iova = iova, .length = len };

		return ioctl(d->iommufd, IOMMU_IOAS_UNMAP, &iu) ? -errno : 0;
	}
#endif
	return ioctl(d->container, VFIO_IOMMU_UNMAP_DMA, &u) ? -errno : 0;
}

static int host_map(const struct vfio_migtest_host *h, uint64_t iova, void *vaddr, uint64_t len)
{
	if (iova < VFIO_MIGTEST_PLUGIN_IOVA ||
	    iova + len > VFIO_MIGTEST_PLUGIN_IOVA + VFIO_MIGTEST_PLUGIN_IOVA_LEN)
		return -ERANGE;
	return dma_map(h->tool, iova, vaddr, len);
}

static int host_unmap(const struct vfio_migtest_host *h, uint64_t iova, uint64_t len)
{
	return dma_unmap(h->tool, iova, len);
}

/*
 * Load the plug-in at @path (a name without a slash: PLUGINDIR/NAME.so):
 * 0, or -1 with the reason on stderr.
 */
#ifndef PLUGINDIR
#define PLUGINDIR "/usr/local/lib/vfio-migtest"
#endif
static int plug_load(const char *path)
{
	char buf[PATH_MAX];
	void *h;

	if (!strchr(path, '/')) {
		snprintf(buf, sizeof(buf), "%s/%s.so", PLUGINDIR, path);
		path = buf;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "vfio-migtest: %s\n", dlerror());
		return -1;
	}
	plug = dlsym(h, "vfio_migtest_plugin");
	if (!plug || plug->abi != VFIO_MIGTEST_PLUGIN_ABI || !plug->attach || !plug->detach) {
		fprintf(stderr, "vfio-migtest: %s: %s\n", path,
			plug ? "not a plug-in of this interface (abi, attach, detach)" :
			"no vfio_migtest_plugin");
		plug = NULL;
		return -1;
	}
	return 0;
}

/* The plug-in takes @d (RUNNING): 0, or -1 (why). */
static int plug_attach(struct dev *d)
{
	d->host = (struct vfio_migtest_host){
		.name = d->name, .device_fd = d->fd, .map = host_map, .unmap = host_unmap,
		.tool = d };
	errno = 0;
	d->plugged = plug->attach(&d->host);
	return d->plugged ? 0 : failed("the %s plug-in did not take %s: %s", plug->name, d->name,
				       errno ? strerror(errno) : "it did not say why");
}

static void plug_detach(struct dev *d)
{
	if (d->plugged)
		plug->detach(d->plugged);
	d->plugged = NULL;
}

/* VFIO_DEVICE_FEATURE_MIGRATION: 0 and the flags, or -errno. */
static int mig_flags(int fd, uint64_t *flags)
{
	struct {
		struct vfio_device_feature f;
		struct vfio_device_feature_migration m;
	} a = { .f = { .argsz = sizeof(a),
		       .flags = VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIGRATION } };

	if (ioctl(fd, VFIO_DEVICE_FEATURE, &a))
		return -errno;
	*flags = a.m.flags;
	return 0;
}

/* Set the state: 0 (@data_fd the new fd or -1), or -errno. */
static int set_state(int fd, uint32_t state, int *data_fd)
{
	struct {
		struct vfio_device_feature f;
		struct vfio_device_feature_mig_state s;
	} a = { .f = { .argsz = sizeof(a),
		       .flags = VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE },
		.s = { .device_state = state, .data_fd = -1 } };

	if (data_fd)
		*data_fd = -1;
	if (ioctl(fd, VFIO_DEVICE_FEATURE, &a))
		return -errno;
	if (data_fd)
		*data_fd = a.s.data_fd;
	else if (a.s.data_fd >= 0)
		close(a.s.data_fd);
	return 0;
}

static int get_state(int fd, uint32_t *state)
{
	struct {
		struct vfio_device_feature f;
		struct vfio_device_feature_mig_state s;
	} a = { .f = { .argsz = sizeof(a),
		       .flags = VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE } };

	if (ioctl(fd, VFIO_DEVICE_FEATURE, &a))
		return -errno;
	*state = a.s.device_state;
	return 0;
}

static int data_size(int fd, uint64_t *size)
{
	struct {
		struct vfio_device_feature f;
		struct vfio_device_feature_mig_data_size s;
	} a = { .f = { .argsz = sizeof(a),
		       .flags = VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIG_DATA_SIZE } };

	if (ioctl(fd, VFIO_DEVICE_FEATURE, &a))
		return -errno;
	*size = a.s.stop_copy_length;
	return 0;
}

static bool supported(const struct dev *d, uint32_t s)
{
	switch (s) {
	case VFIO_DEVICE_STATE_STOP:
	case VFIO_DEVICE_STATE_RUNNING:
	case VFIO_DEVICE_STATE_STOP_COPY:
	case VFIO_DEVICE_STATE_RESUMING:
		return d->flags & VFIO_MIGRATION_STOP_COPY;
	case VFIO_DEVICE_STATE_RUNNING_P2P:
		return d->flags & VFIO_MIGRATION_P2P;
	case VFIO_DEVICE_STATE_PRE_COPY:
		return d->flags & VFIO_MIGRATION_PRE_COPY;
	case VFIO_DEVICE_STATE_PRE_COPY_P2P:
		return (d->flags & VFIO_MIGRATION_PRE_COPY) && (d->flags & VFIO_MIGRATION_P2P);
	}
	return false;
}

/* ---- streams -------------------------------------------------------- */

struct blob {
	uint8_t *p;
	size_t len, cap;
};

static int blob_add(struct blob *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1 << 20;
		uint8_t *q;

		while (cap < b->len + n)
			cap *= 2;
		if (cap > STREAM_MAX)
			return -EFBIG;
		q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/*
 * Read @fd in pieces of @piece bytes (the first @small bytes one at a
 * time when @small) until end of data (0) or ENOMSG (-ENOMSG); -errno on
 * another error.
 */
static int read_all(int fd, struct blob *b, size_t piece, size_t small)
{
	uint8_t buf[1 << 20];
	ssize_t n;
	int ret;

	for (;;) {
		size_t want = b->len < small ? 1 : piece;

		n = read(fd, buf, want);
		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		ret = blob_add(b, buf, n);
		if (ret)
			return ret;
	}
}

/* Write @len bytes in pieces of @piece: 0, or -errno of the first refusal. */
static int write_all(int fd, const uint8_t *p, size_t len, size_t piece)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		size_t want = len - off < piece ? len - off : piece;

		n = write(fd, p + off, want);
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		off += n;
	}
	return 0;
}

/* The STOP_COPY stream of a fresh device, read in @piece (first @small bytewise). */
static int capture(struct dev *d, struct blob *b, size_t piece, size_t small)
{
	int fd, ret;

	b->len = 0;
	ret = dev_reopen(d);
	if (ret)
		return ret;
	ret = set_state(d->fd, VFIO_DEVICE_STATE_STOP_COPY, &fd);
	if (ret || fd < 0)
		return failed("RUNNING -> STOP_COPY: %s", ret ? strerror(-ret) : "no data fd");
	ret = read_all(fd, b, piece, small);
	close(fd);
	if (ret)
		return failed("reading STOP_COPY's fd: %s", strerror(-ret));
	if (!b->len)
		return failed("STOP_COPY produced no data");
	return set_state(d->fd, VFIO_DEVICE_STATE_STOP, NULL) ?
	       failed("STOP_COPY -> STOP: %s", strerror(errno)) : 0;
}

/*
 * Offer @len bytes to a fresh @dst in RESUMING, the first @head bytes one
 * at a time, the rest in @piece: 0 when RESUMING -> STOP accepted it, 1
 * when it was refused (by a write or by the arc), -1 when the test could
 * not run.
 */
static int offer_split(struct dev *dst, const uint8_t *p, size_t len, size_t head,
		       size_t piece)
{
	int fd, ret;

	if (head > len)
		head = len;
	if (dev_reopen(dst) || set_state(dst->fd, VFIO_DEVICE_STATE_STOP, NULL) ||
	    set_state(dst->fd, VFIO_DEVICE_STATE_RESUMING, &fd) || fd < 0)
		return failed("%s: cannot enter RESUMING: %s", dst->name, strerror(errno));
	ret = write_all(fd, p, head, 1);
	if (!ret)
		ret = write_all(fd, p + head, len - head, piece);
	if (!ret)
		ret = set_state(dst->fd, VFIO_DEVICE_STATE_STOP, NULL);
	close(fd);
	return ret ? 1 : 0;
}

static int offer(struct dev *dst, const uint8_t *p, size_t len, size_t piece)
{
	return offer_split(dst, p, len, 0, piece);
}

/* ---- the checks ------------------------------------------------------ */

static struct blob golden;	/* a stream of the device that it took back */
static struct dev src, dstdev;
static struct dev *dst = &src;	/* where streams are written back */
static bool two;	/* dst is another device */

static int t_feature(void)
{
	int ret = mig_flags(src.fd, &src.flags);

	if (ret)
		return failed("VFIO_DEVICE_FEATURE_MIGRATION: %s", strerror(-ret));
	diag("migration flags 0x%llx:%s%s%s", (unsigned long long)src.flags,
	     src.flags & VFIO_MIGRATION_STOP_COPY ? " STOP_COPY" : "",
	     src.flags & VFIO_MIGRATION_P2P ? " P2P" : "",
	     src.flags & VFIO_MIGRATION_PRE_COPY ? " PRE_COPY" : "");
	if (!(src.flags & VFIO_MIGRATION_STOP_COPY))
		return failed("VFIO_MIGRATION_STOP_COPY is mandatory and missing");
	if (src.flags & ~(uint64_t)(VFIO_MIGRATION_STOP_COPY | VFIO_MIGRATION_P2P |
				    VFIO_MIGRATION_PRE_COPY))
		return failed("flags the uAPI does not define: 0x%llx",
			      (unsigned long long)src.flags);
	return 0;
}

static int t_initial_running(void)
{
	uint32_t s;
	int ret = dev_reopen(&src) ?: get_state(src.fd, &s);

	if (ret)
		return failed("get state: %s", strerror(-ret));
	return s == VFIO_DEVICE_STATE_RUNNING ? 0 : failed("a fresh device is in state %u", s);
}

/*
 * The uAPI's state machine as the VFIO core walks it
 * (vfio_mig_get_next_state() in drivers/vfio/vfio_main.c, and its comment
 * in include/uapi/linux/vfio.h): from a state, the next one on the way to
 * a target, unsupported states skipped.  ERROR: no way.
 */
#define S_STOP VFIO_DEVICE_STATE_STOP
#define S_RUN VFIO_DEVICE_STATE_RUNNING
#define S_PRE VFIO_DEVICE_STATE_PRE_COPY
#define S_PREP VFIO_DEVICE_STATE_PRE_COPY_P2P
#define S_SC VFIO_DEVICE_STATE_STOP_COPY
#define S_RES VFIO_DEVICE_STATE_RESUMING
#define S_RP2P VFIO_DEVICE_STATE_RUNNING_P2P
#define S_ERR VFIO_DEVICE_STATE_ERROR

static const uint8_t fsm[NR_STATES][NR_STATES] = {
	[S_STOP] = { [S_STOP] = S_STOP, [S_RUN] = S_RP2P, [S_PRE] = S_RP2P, [S_PREP] = S_RP2P,
		     [S_SC] = S_SC, [S_RES] = S_RES, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_RUN] = { [S_STOP] = S_RP2P, [S_RUN] = S_RUN, [S_PRE] = S_PRE, [S_PREP] = S_RP2P,
		    [S_SC] = S_RP2P, [S_RES] = S_RP2P, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_PRE] = { [S_STOP] = S_RUN, [S_RUN] = S_RUN, [S_PRE] = S_PRE, [S_PREP] = S_PREP,
		    [S_SC] = S_PREP, [S_RES] = S_RUN, [S_RP2P] = S_RUN, [S_ERR] = S_ERR },
	[S_PREP] = { [S_STOP] = S_RP2P, [S_RUN] = S_RP2P, [S_PRE] = S_PRE, [S_PREP] = S_PREP,
		     [S_SC] = S_SC, [S_RES] = S_RP2P, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_SC] = { [S_STOP] = S_STOP, [S_RUN] = S_STOP, [S_PRE] = S_ERR, [S_PREP] = S_ERR,
		   [S_SC] = S_SC, [S_RES] = S_STOP, [S_RP2P] = S_STOP, [S_ERR] = S_ERR },
	[S_RES] = { [S_STOP] = S_STOP, [S_RUN] = S_STOP, [S_PRE] = S_STOP, [S_PREP] = S_STOP,
		    [S_SC] = S_STOP, [S_RES] = S_RES, [S_RP2P] = S_STOP, [S_ERR] = S_ERR },
	[S_RP2P] = { [S_STOP] = S_STOP, [S_RUN] = S_RUN, [S_PRE] = S_RUN, [S_PREP] = S_PREP,
		     [S_SC] = S_STOP, [S_RES] = S_STOP, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_ERR] = { [S_STOP] = S_ERR, [S_RUN] = S_ERR, [S_PRE] = S_ERR, [S_PREP] = S_ERR,
		    [S_SC] = S_ERR, [S_RES] = S_ERR, [S_RP2P] = S_ERR, [S_ERR] = S_ERR },
};

/* The arcs that open a data fd: into a saving state from a running one, RESUMING. */
static bool opens_fd(uint32_t a, uint32_t b)
{
	return (a == S_STOP && (b == S_SC || b == S_RES)) || (a == S_RUN && b == S_PRE) ||
	       (a == S_RP2P && b == S_PREP);
}

/*
 * The core's way from @from to @to on this device: 0 (and *@fd whether
 * one of its arcs opens a data fd), or -1 when there is none (the core
 * then says EINVAL).
 */
static int uapi_path(const struct dev *d, uint32_t from, uint32_t to, bool *fd)
{
	uint32_t cur = from, next;
	int steps = 0;

	*fd = false;
	if (!supported(d, to) || !supported(d, from))
		return -1;
	while (cur != to) {
		next = fsm[cur][to];
		while (next != S_ERR && !supported(d, next))
			next = fsm[next][to];
		if (next == S_ERR || ++steps > NR_STATES)
			return -1;
		*fd |= opens_fd(cur, next);
		cur = next;
	}
	return 0;
}

/* From a fresh device: to @from, then to @to; checked against the uAPI. */
static int arc(uint32_t from, uint32_t to)
{
	uint32_t now = 0;
	int fd1 = -1, fd2 = -1, ret;
	bool got_fd, want_fd;

	if (from == VFIO_DEVICE_STATE_RESUMING && to != from && !golden.p)
		return skip("no stream of the device was accepted back to resume from");
	if (dev_reopen(&src))
		return -1;
	ret = set_state(src.fd, from, &fd1);
	if (ret) {
		failed("RUNNING -> %s: %s", state_names[from], strerror(-ret));
		goto out;
	}
	/* Leaving RESUMING loads what was written: a whole stream. */
	if (from == VFIO_DEVICE_STATE_RESUMING && to != from) {
		ret = write_all(fd1, golden.p, golden.len, 1 << 20);
		if (ret) {
			failed("writing the device's own stream in RESUMING: %s", strerror(-ret));
			goto out;
		}
	}
	ret = set_state(src.fd, to, &fd2);
	if (uapi_path(&src, from, to, &want_fd)) {
		if (ret != -EINVAL)
			ret = failed("%s -> %s, which the uAPI has no way to on this device: %s, not EINVAL",
				     state_names[from], state_names[to],
				     ret ? strerror(-ret) : "accepted");
		else
			ret = 0;
		goto out;
	}
	if (ret) {
		failed("%s -> %s: %s", state_names[from], state_names[to], strerror(-ret));
		goto out;
	}
	ret = get_state(src.fd, &now);
	if (ret || now != to) {
		ret = failed("%s -> %s: the state reads %s", state_names[from], state_names[to],
			     ret ? strerror(-ret) : now < NR_STATES ? state_names[now] : "?");
		goto out;
	}
	got_fd = fd2 >= 0;
	if (want_fd != got_fd)
		ret = failed("%s -> %s: %s data fd", state_names[from], state_names[to],
			     fd2 >= 0 ? "an unexpected" : "no");
out:
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
	return ret;
}

static void t_arcs(void)
{
	char name[64];
	uint32_t f, t;

	for (f = VFIO_DEVICE_STATE_STOP; f < NR_STATES; f++) {
		if (!supported(&src, f))
			continue;
		for (t = VFIO_DEVICE_STATE_STOP; t < NR_STATES; t++) {
			snprintf(name, sizeof(name), "arc_%s_to_%s", state_names[f],
				 state_names[t]);
			report(name, arc(f, t));
		}
	}
}

/* ERROR and values outside the uAPI are refused as targets (EINVAL). */
static int t_bad_targets(void)
{
	static const uint32_t bad[] = { VFIO_DEVICE_STATE_ERROR, NR_STATES, 0x7fffffff };
	unsigned int i;
	uint32_t s;
	int ret;

	if (dev_reopen(&src))
		return -1;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ret = set_state(src.fd, bad[i], NULL);
		if (ret != -EINVAL)
			return failed("target %u: %s, not EINVAL", bad[i],
				      ret ? strerror(-ret) : "accepted");
	}
	if (get_state(src.fd, &s) || s != VFIO_DEVICE_STATE_RUNNING)
		return failed("a refused target left the device out of RUNNING");
	return 0;
}

static int precopy_info(int fd, struct vfio_precopy_info *i)
{
	memset(i, 0, sizeof(*i));
	i->argsz = sizeof(*i);
	return ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, i) ? -errno : 0;
}

/*
 * PRE_COPY: PRECOPY_INFO answers in PRE_COPY and PRE_COPY_P2P and is
 * refused (EINVAL) once the fd went on to STOP_COPY; its two figures
 * never exceed what the fd then produces before ENOMSG; poll(), where
 * the fd has it, is not readable exactly when a read returns ENOMSG.
 */
static int t_precopy(void)
{
	struct vfio_precopy_info i;
	struct blob b = { 0 };
	struct pollfd p;
	int fd = -1, ret;
	uint64_t said;

	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src) || set_state(src.fd, VFIO_DEVICE_STATE_PRE_COPY, &fd) || fd < 0)
		return failed("RUNNING -> PRE_COPY: %s", strerror(errno));
	ret = precopy_info(fd, &i);
	if (ret) {
		ret = failed("PRECOPY_INFO in PRE_COPY: %s", strerror(-ret));
		goto out;
	}
	said = i.initial_bytes + i.dirty_bytes;
	ret = read_all(fd, &b, 65536, 0);
	if (ret != -ENOMSG) {
		ret = failed("pre-copy read ended with %s, not ENOMSG",
			     ret ? strerror(-ret) : "end of data");
		goto out;
	}
	diag("pre-copy: PRECOPY_INFO said %llu + %llu bytes, the fd gave %zu before ENOMSG",
	     (unsigned long long)i.initial_bytes, (unsigned long long)i.dirty_bytes, b.len);
	if (said > b.len) {
		ret = failed("PRECOPY_INFO said %llu bytes, the fd gave %zu before ENOMSG",
			     (unsigned long long)said, b.len);
		goto out;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
		uint8_t c;

		/* readable: a read must not be ENOMSG (or the fd has no poll) */
		if (read(fd, &c, 1) < 0 && errno == ENOMSG)
			diag("poll() says readable where a read is ENOMSG: the fd has no poll()");
	}
	if (set_state(src.fd, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) == 0 &&
	    (src.flags & VFIO_MIGRATION_P2P)) {
		ret = precopy_info(fd, &i);
		if (ret) {
			ret = failed("PRECOPY_INFO in PRE_COPY_P2P: %s", strerror(-ret));
			goto out;
		}
	}
	if (set_state(src.fd, VFIO_DEVICE_STATE_STOP_COPY, NULL)) {
		ret = failed("-> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	ret = precopy_info(fd, &i);
	ret = ret == -EINVAL ? 0 : failed("PRECOPY_INFO in STOP_COPY: %s, not EINVAL",
					  ret ? strerror(-ret) : "answered");
out:
	if (fd >= 0)
		close(fd);
	free(b.p);
	return ret;
}

/* PRECOPY_INFO on a fd that is not a saving fd in PRE_COPY: refused. */
static int t_precopy_info_elsewhere(void)
{
	struct vfio_precopy_info i;
	int fd, ret;

	if (dev_reopen(&src) || set_state(src.fd, VFIO_DEVICE_STATE_STOP, NULL) ||
	    set_state(src.fd, VFIO_DEVICE_STATE_RESUMING, &fd) || fd < 0)
		return failed("-> RESUMING: %s", strerror(errno));
	ret = precopy_info(fd, &i);
	close(fd);
	if (ret != -EINVAL && ret != -ENOTTY)
		return failed("PRECOPY_INFO on a resuming fd: %s, not EINVAL",
			      ret ? strerror(-ret) : "answered");
	return 0;
}

/* MIG_DATA_SIZE in STOP against what STOP_COPY then produced. */
static int t_data_size(void)
{
	struct blob b = { 0 };
	uint64_t est = 0;
	int fd, ret;

	if (dev_reopen(&src) || set_state(src.fd, VFIO_DEVICE_STATE_STOP, NULL))
		return failed("-> STOP: %s", strerror(errno));
	ret = data_size(src.fd, &est);
	if (ret == -ENOTTY || ret == -EOPNOTSUPP)
		return skip("the driver has no VFIO_DEVICE_FEATURE_MIG_DATA_SIZE");
	if (ret)
		return failed("MIG_DATA_SIZE in STOP: %s", strerror(-ret));
	if (set_state(src.fd, VFIO_DEVICE_STATE_STOP_COPY, &fd) || fd < 0)
		return failed("STOP -> STOP_COPY: %s", strerror(errno));
	ret = read_all(fd, &b, 1 << 20, 0);
	close(fd);
	if (ret) {
		free(b.p);
		return failed("reading STOP_COPY's fd: %s", strerror(-ret));
	}
	diag("MIG_DATA_SIZE %llu bytes, STOP_COPY gave %zu (%.2fx)", (unsigned long long)est,
	     b.len, b.len ? (double)est / b.len : 0);
	free(b.p);
	if (est < b.len)
		return failed("MIG_DATA_SIZE said %llu bytes, STOP_COPY gave more: %zu",
			      (unsigned long long)est, b.len);
	if (b.len && est > 4 * b.len)
		diag("warning: MIG_DATA_SIZE is %.1f times what STOP_COPY gave",
		     (double)est / b.len);
	return 0;
}

/*
 * The stream read in one split and written back in another is accepted
 * (RESUMING -> STOP succeeds).  Bytewise for the first 64 KiB only (a
 * syscall a byte), then the split's size.
 */
static const size_t splits[][3] = {	/* read piece, bytewise head, write piece */
	{ 1 << 20, 0, 1 << 20 },
	{ 4096, 65536, 4093 },
	{ 4093, 0, 1 << 20 },
	{ 1 << 20, 65536, 1 },
};

static int t_split(unsigned int k)
{
	size_t rp = splits[k][0], wp = splits[k][2];
	size_t whead = wp == 1 ? 65536 : 0;
	struct blob b = { 0 };
	int ret;

	ret = capture(&src, &b, rp, splits[k][1]);
	if (!ret)
		ret = offer_split(dst, b.p, b.len, whead, wp == 1 ? 4093 : wp);
	if (ret >= 0)
		diag("a stream of %zu bytes read in pieces of %zu%s, written in %zu%s: %s", b.len,
		     rp, splits[k][1] ? " (its first 64 KiB bytewise)" : "", wp == 1 ? 4093 : wp,
		     whead ? " (its first 64 KiB bytewise)" : "", ret ? "refused" : "accepted");
	if (!ret && !golden.p) {
		golden = b;
		return 0;
	}
	free(b.p);
	if (ret > 0)
		return failed("a whole stream was refused (a write or RESUMING -> STOP failed)");
	return ret;
}

/* A truncated stream is refused (by a write or by RESUMING -> STOP). */
static int t_truncated(void)
{
	static const double cut[] = { 0.5, 0.9, 0.999 };
	unsigned int i;

	if (!golden.p)
		return skip("no stream was accepted whole");
	for (i = 0; i < ARRAY_SIZE(cut); i++) {
		size_t n = (size_t)(golden.len * cut[i]);
		int ret = offer(dst, golden.p, n, 1 << 20);

		if (ret < 0)
			return -1;
		if (!ret)
			return failed("the first %zu of %zu bytes were accepted as a whole stream",
				      n, golden.len);
	}
	return 0;
}

static unsigned int nr_corrupt = 20, seed = 1;
static const char *suite = "vfio_migtest";

/* The end of the suite, its plan said: the whole run's result. */
static int finish(void)
{
	printf("%s 1 %s\n", nr_fail ? "not ok" : "ok", suite);
	return nr_fail ? 1 : 0;
}

static uint32_t rnd(void)
{
	seed = seed * 1103515245 + 12345;
	return seed >> 8;
}

/*
 * Corrupted copies: random bytes flipped, or a piece cut out of the
 * middle.  What a device accepts of them is its figure; without knowing
 * the format, any accepted one may be a flip in padding, so this only
 * fails when more than half are accepted and says the count either way.
 */
static int t_corrupted(void)
{
	unsigned int i, flips = 0, cuts = 0, n = nr_corrupt;
	uint8_t *c;

	if (!golden.p)
		return skip("no stream was accepted whole");
	c = malloc(golden.len);
	if (!c)
		return failed("out of memory");
	for (i = 0; i < n; i++) {
		size_t len = golden.len, at = rnd() % golden.len;
		int ret, j;

		memcpy(c, golden.p, golden.len);
		if (i % 2) {
			size_t cut = 1 + rnd() % (golden.len / 8 + 1);

			if (at + cut > len)
				cut = len - at;
			memmove(c + at, c + at + cut, len - at - cut);
			len -= cut;
		} else {
			for (j = 0; j < 1 + (int)(rnd() % 4); j++)
				c[rnd() % len] ^= 1 + rnd() % 255;
		}
		ret = offer(dst, c, len, 1 << 20);
		if (ret < 0) {
			free(c);
			return -1;
		}
		if (!ret)
			*(i % 2 ? &cuts : &flips) += 1;
	}
	free(c);
	diag("accepted %u of %u corrupted streams (%u with bytes flipped, %u with a piece cut)",
	     flips + cuts, n, flips, cuts);
	if ((flips + cuts) * 2 > n)
		return failed("accepted %u of %u corrupted streams", flips + cuts, n);
	return 0;
}

/*
 * A reset (VFIO_DEVICE_RESET) in every state: the device is RUNNING
 * after it, and a data fd of before it reads or writes an error, never
 * hangs and never more data.
 */
static int reset_in(uint32_t s)
{
	uint32_t now = 0;
	uint8_t buf[4096];
	int fd = -1, ret = 0;

	if (dev_reopen(&src) || set_state(src.fd, s, &fd))
		return failed("-> %s: %s", state_names[s], strerror(errno));
	if (ioctl(src.fd, VFIO_DEVICE_RESET)) {
		ret = failed("VFIO_DEVICE_RESET in %s: %s", state_names[s], strerror(errno));
		goto out;
	}
	if (get_state(src.fd, &now) || now != VFIO_DEVICE_STATE_RUNNING) {
		ret = failed("after a reset in %s the state is %u, not RUNNING", state_names[s],
			     now);
		goto out;
	}
	if (fd >= 0) {
		ssize_t n = s == VFIO_DEVICE_STATE_RESUMING ? write(fd, buf, sizeof(buf)) :
			    read(fd, buf, sizeof(buf));

		if (n > 0)
			ret = failed("the data fd of %s still %s after the reset", state_names[s],
				     s == VFIO_DEVICE_STATE_RESUMING ? "takes data" : "gives data");
	}
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Closing the device in every state: reopened, it is RUNNING again. */
static int close_in(uint32_t s)
{
	uint32_t now = 0;
	int fd = -1, ret;

	if (dev_reopen(&src) || set_state(src.fd, s, &fd))
		return failed("-> %s: %s", state_names[s], strerror(errno));
	/* the device closed with its data fd still open, as a killed VMM leaves it */
	ret = dev_reopen_raw(&src) ?: get_state(src.fd, &now);
	if (fd >= 0) {
		uint8_t buf[4096] = { 0 };
		ssize_t n = s == VFIO_DEVICE_STATE_RESUMING ? write(fd, buf, sizeof(buf)) :
			    read(fd, buf, sizeof(buf));

		close(fd);
		if (n > 0)
			return failed("the data fd of %s still %s after the device closed",
				      state_names[s],
				      s == VFIO_DEVICE_STATE_RESUMING ? "takes data" : "gives data");
	}
	if (ret)
		return failed("reopened after a close in %s: %s", state_names[s], strerror(-ret));
	return now == VFIO_DEVICE_STATE_RUNNING ? 0 :
	       failed("reopened after a close in %s, the device is still in %s, not RUNNING",
		      state_names[s], now < NR_STATES ? state_names[now] : "?");
}

static void t_every_state(void)
{
	char name[64];
	uint32_t s;

	for (s = VFIO_DEVICE_STATE_STOP; s < NR_STATES; s++) {
		if (!supported(&src, s))
			continue;
		snprintf(name, sizeof(name), "reset_in_%s", state_names[s]);
		report(name, src.can_reset ? reset_in(s) :
		       skip("the device does not offer VFIO_DEVICE_RESET"));
		snprintf(name, sizeof(name), "close_in_%s", state_names[s]);
		report(name, close_in(s));
	}
}

/* ---- DMA logging --------------------------------------------------------- */

static int log_feature(int fd, uint32_t op, void *data, size_t len)
{
	uint8_t buf[sizeof(struct vfio_device_feature) + 64] __attribute__((aligned(8)));
	struct vfio_device_feature *f = (void *)buf;

	memset(buf, 0, sizeof(buf));
	f->argsz = sizeof(*f) + len;
	f->flags = op;
	if (len)
		memcpy(f->data, data, len);
	if (ioctl(fd, VFIO_DEVICE_FEATURE, f))
		return -errno;
	if (len)
		memcpy(data, f->data, len);
	return 0;
}

/* START with @n ranges of @r at @page: 0 or -errno; *@page the size it took. */
static int log_start(int fd, struct vfio_device_feature_dma_logging_range *r, uint32_t n,
		     uint64_t *page)
{
	struct vfio_device_feature_dma_logging_control c = {
		.page_size = *page, .num_ranges = n, .ranges = (uintptr_t)r };
	int ret = log_feature(fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START,
			      &c, sizeof(c));

	if (!ret)
		*page = c.page_size;
	return ret;
}

static int log_stop(int fd)
{
	return log_feature(fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP,
			   NULL, 0);
}

static int log_report(int fd, uint64_t iova, uint64_t len, uint64_t page, void *bitmap)
{
	struct vfio_device_feature_dma_logging_report r = {
		.iova = iova, .length = len, .page_size = page, .bitmap = (uintptr_t)bitmap };

	return log_feature(fd, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			   &r, sizeof(r));
}

#define LOG_IOVA	0x100000ULL	/* 1 MiB */
#define LOG_LEN		(16ULL << 20)
#define NR_LOG_CASES	9

static uint64_t log_page = 4096;
static uint64_t log_bitmap[LOG_LEN / 4096 / 64];
static bool log_offered;

/* START's refusals the uAPI names: no ranges, overlapping, unaligned. */
static int t_log_start_refused(void)
{
	struct vfio_device_feature_dma_logging_range r[2] = {
		{ .iova = LOG_IOVA, .length = LOG_LEN },
		{ .iova = LOG_IOVA + 4096, .length = 4096 } };
	uint64_t page = 4096;
	int ret;

	if (dev_reopen(&src))
		return -1;
	ret = log_start(src.fd, r, 0, &page);
	if (ret != -EINVAL)
		return failed("START with no range: %s, not EINVAL", ret ? strerror(-ret) : "taken");
	ret = log_start(src.fd, r, 2, &page);
	if (ret != -EINVAL)
		return failed("START with overlapping ranges: %s, not EINVAL",
			      ret ? strerror(-ret) : "taken");
	r[0].iova = LOG_IOVA + 1;
	ret = log_start(src.fd, r, 1, &page);
	if (ret != -EINVAL)
		return failed("START at an IOVA not aligned to the page: %s, not EINVAL",
			      ret ? strerror(-ret) : "taken");
	return 0;
}

/* START of one range, and a second START refused while it runs. */
static int t_log_start(void)
{
	struct vfio_device_feature_dma_logging_range r = { .iova = LOG_IOVA, .length = LOG_LEN };
	uint64_t page = 4096;
	int ret;

	if (dev_reopen(&src))
		return -1;
	ret = log_start(src.fd, &r, 1, &log_page);
	if (ret)
		return failed("START of [0x%llx, +16 MiB) at 4 KiB: %s",
			      (unsigned long long)LOG_IOVA, strerror(-ret));
	if (log_page < 4096 || (log_page & (log_page - 1)) || log_page > LOG_LEN / 64)
		return failed("START answered page size %llu", (unsigned long long)log_page);
	ret = log_start(src.fd, &r, 1, &page);
	if (!ret)
		return failed("a second START was taken while logging ran");
	return 0;
}

/* REPORTs: the range, a part of it, outside it; a bad page size; EFAULT. */
static int t_log_reports(void)
{
	void *none;
	int ret;

	memset(log_bitmap, 0, sizeof(log_bitmap));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, log_page, log_bitmap);
	if (ret)
		return failed("REPORT of the whole range: %s", strerror(-ret));
	ret = log_report(src.fd, LOG_IOVA + (4ULL << 20), 1ULL << 20, log_page, log_bitmap);
	if (ret)
		return failed("REPORT of a part of the range: %s", strerror(-ret));
	memset(log_bitmap, 0, sizeof(log_bitmap));
	ret = log_report(src.fd, 1ULL << 30, 1ULL << 20, log_page, log_bitmap);
	if (!ret) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(log_bitmap); i++)
			if (log_bitmap[i])
				return failed("REPORT outside every range set bits");
	}
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, 1000, log_bitmap);
	if (ret != -EINVAL)
		return failed("REPORT at page size 1000: %s, not EINVAL",
			      ret ? strerror(-ret) : "answered");
	none = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED)
		return failed("mmap: %s", strerror(errno));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, log_page, none);
	munmap(none, 1 << 16);
	/*
	 * The core pins the bitmap only to set bits in it (iova_bitmap): with
	 * nothing dirty, an unmapped one is never touched.  Any error but
	 * EFAULT is wrong.
	 */
	if (!ret)
		diag("REPORT into an unmapped bitmap answered: nothing was dirty to set in it");
	else if (ret != -EFAULT)
		return failed("REPORT into an unmapped bitmap: %s, not EFAULT", strerror(-ret));
	return 0;
}

/* STOP, and no REPORT after it. */
static int t_log_stop(void)
{
	int ret = log_stop(src.fd);

	if (ret)
		return failed("STOP: %s", strerror(-ret));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, log_page, log_bitmap);
	if (!ret)
		return failed("a REPORT answered after STOP");
	return 0;
}

/*
 * A report over a huge tracked span (1 TiB) is bounded in time (it costs
 * what was tracked, not the span: 120 s allowed under emulation) and
 * killable (a SIGKILL ends it within 10 s).
 */
static int log_huge_child(bool wait_kill)
{
	struct vfio_device_feature_dma_logging_range r = { .iova = 0, .length = 1ULL << 40 };
	uint64_t page = 4096;
	void *bm;
	int ret;

	if (dev_reopen(&src))
		_exit(3);
	ret = log_start(src.fd, &r, 1, &page);
	if (ret)
		_exit(ret == -ENOMEM || ret == -E2BIG || ret == -EINVAL ? 4 : 3);
	bm = mmap(NULL, (1ULL << 40) / page / 8, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bm == MAP_FAILED)
		_exit(3);
	if (wait_kill)
		kill(getppid(), SIGUSR1);
	ret = log_report(src.fd, 0, 1ULL << 40, page, bm);
	_exit(ret ? 5 : 0);
}

static sig_atomic_t huge_started;

static void on_usr1(int sig)
{
	(void)sig;
	__atomic_store_n(&huge_started, 1, __ATOMIC_RELAXED);
}

static int t_log_huge(void)
{
	uint64_t t0;
	pid_t pid;
	int st, i;

	/* the children open the device: a device may take one opener at a time */
	close(src.fd);
	src.fd = -1;
	fflush(stdout);
	pid = fork();
	if (!pid)
		log_huge_child(false);
	t0 = 0;
	for (i = 0; i < 1200 && waitpid(pid, &st, WNOHANG) != pid; i++, t0++)
		usleep(100000);
	if (i == 1200) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return failed("a REPORT over a 1 TiB tracked span took over 120 s");
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 4)
		return skip("the device does not track a 1 TiB range");
	if (!WIFEXITED(st) || (WEXITSTATUS(st) && WEXITSTATUS(st) != 5))
		return failed("the huge-span child ended %d", st);
	diag("a REPORT over a 1 TiB tracked span took %.1f s", t0 / 10.0);
	/* killable: the same report, SIGKILL a moment after it began */
	signal(SIGUSR1, on_usr1);
	huge_started = 0;
	pid = fork();
	if (!pid)
		log_huge_child(true);
	for (i = 0; i < 300 && !__atomic_load_n(&huge_started, __ATOMIC_RELAXED); i++)
		usleep(100000);
	usleep(200000);
	kill(pid, SIGKILL);
	for (i = 0; i < 100 && waitpid(pid, &st, WNOHANG) != pid; i++)
		usleep(100000);
	if (i == 100)
		return failed("a REPORT over a 1 TiB span did not end within 10 s of SIGKILL");
	return dev_reopen(&src);
}

static void t_dma_logging(void)
{
	static const char *const names[NR_LOG_CASES] = {
		"dma_logging_offered", "dma_log_start_refusals", "dma_log_start",
		"dma_log_reports", "dma_log_stop", "dma_log_huge_span",
		"dma_log_closed_while_logging", "dma_log_reset_while_logging",
		"dma_log_after_reopen",
	};
	struct vfio_device_feature_dma_logging_range r = { .iova = LOG_IOVA, .length = LOG_LEN };
	uint64_t page = 4096;
	unsigned int i;
	int ret;

	ret = dev_reopen(&src) ?: log_feature(src.fd, VFIO_DEVICE_FEATURE_PROBE |
					     VFIO_DEVICE_FEATURE_SET |
					     VFIO_DEVICE_FEATURE_DMA_LOGGING_START, NULL, 0);
	log_offered = !ret;
	if (!log_offered) {
		for (i = 0; i < NR_LOG_CASES; i++)
			report(names[i], skip("the device offers no DMA logging (%s)",
					      strerror(-ret)));
		return;
	}
	report(names[0], 0);
	report(names[1], t_log_start_refused());
	ret = t_log_start();
	report(names[2], ret);
	report(names[3], ret ? skip("START failed") : t_log_reports());
	report(names[4], ret ? skip("START failed") : t_log_stop());
	report(names[5], t_log_huge());
	/* logging ends with the device's close and with its reset */
	if (dev_reopen(&src) || log_start(src.fd, &r, 1, &page)) {
		report(names[6], failed("START: %s", strerror(errno)));
	} else {
		ret = dev_reopen_raw(&src) ?: log_report(src.fd, LOG_IOVA, LOG_LEN, page,
							 log_bitmap);
		report(names[6], ret ? 0 : failed("a REPORT answered after a close while logging"));
	}
	page = 4096;
	if (!src.can_reset) {
		report(names[7], skip("the device does not offer VFIO_DEVICE_RESET"));
	} else if (dev_reopen(&src) || log_start(src.fd, &r, 1, &page)) {
		report(names[7], failed("START: %s", strerror(errno)));
	} else {
		ioctl(src.fd, VFIO_DEVICE_RESET);
		ret = log_start(src.fd, &r, 1, &page);
		report(names[7], ret == 0 || ret == -EBUSY ? 0 :
		       failed("START after a reset while logging: %s", strerror(-ret)));
		log_stop(src.fd);
	}
	page = 4096;
	ret = dev_reopen(&src) ?: log_start(src.fd, &r, 1, &page);
	report(names[8], ret ? failed("START on a device opened again: %s", strerror(-ret)) : 0);
	log_stop(src.fd);
}

/* ---- second saving fd, poll(), PRECOPY_INFOv2 ------------------------------ */

/*
 * A second saving fd: a save after a save gives a complete stream of its
 * own, which loads, and the first fd, its state left, gives no more data.
 * The same for a second PRE_COPY after RUNNING.
 */
static int t_second_saving_fd(void)
{
	struct blob b = { 0 };
	int fd1 = -1, fd2 = -1, ret;
	uint8_t c;

	if (dev_reopen(&src) || set_state(src.fd, S_SC, &fd1) || fd1 < 0)
		return failed("RUNNING -> STOP_COPY: %s", strerror(errno));
	ret = read_all(fd1, &b, 1 << 20, 0);
	if (ret) {
		ret = failed("the first STOP_COPY fd: %s", strerror(-ret));
		goto out;
	}
	if (set_state(src.fd, S_STOP, NULL) || set_state(src.fd, S_SC, &fd2) || fd2 < 0) {
		ret = failed("STOP_COPY -> STOP -> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	if (read(fd1, &c, 1) > 0) {
		ret = failed("the first saving fd gave data after STOP and a second STOP_COPY");
		goto out;
	}
	b.len = 0;
	ret = read_all(fd2, &b, 1 << 20, 0);
	if (ret || !b.len) {
		ret = failed("the second STOP_COPY fd: %s", ret ? strerror(-ret) : "no data");
		goto out;
	}
	close(fd2);
	fd2 = -1;
	if (set_state(src.fd, S_STOP, NULL)) {
		ret = failed("STOP_COPY -> STOP: %s", strerror(errno));
		goto out;
	}
	ret = offer(dst, b.p, b.len, 1 << 20);
	if (ret) {
		if (ret > 0)
			ret = failed("the second save's stream (%zu bytes) was refused", b.len);
		goto out;
	}
	close(fd1);
	fd1 = -1;
	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		goto out;
	if (dev_reopen(&src) || set_state(src.fd, S_PRE, &fd1) || fd1 < 0 ||
	    set_state(src.fd, S_RUN, NULL) || set_state(src.fd, S_PRE, &fd2) || fd2 < 0) {
		ret = failed("RUNNING -> PRE_COPY -> RUNNING -> PRE_COPY: %s", strerror(errno));
		goto out;
	}
	if (read(fd1, &c, 1) > 0) {
		ret = failed("the first PRE_COPY fd gave data after RUNNING and a second PRE_COPY");
		goto out;
	}
	if (read(fd2, &c, 1) != 1)
		ret = failed("the second PRE_COPY fd gave no initial data: %s", strerror(errno));
	set_state(src.fd, S_RUN, NULL);
out:
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
	free(b.p);
	return ret;
}

/* poll() of @fd with no wait: its revents, or -errno. */
static int poll_now(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	return n < 0 ? -errno : n ? p.revents : 0;
}

/*
 * poll() of a saving fd, where the device offers it: on a device doing
 * nothing, readable exactly when a read does not fail with ENOMSG, a wait
 * at the temporary end times out, and in STOP_COPY always readable, at
 * the end of the stream too.  The VFS's default for a file without poll
 * (readable and writable, always) means the device offers none.
 */
static int t_saving_poll(void)
{
	struct blob b = { 0 };
	int fd = -1, r, ret;
	uint8_t c;
	ssize_t n;

	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src) || set_state(src.fd, S_PRE, &fd) || fd < 0)
		return failed("RUNNING -> PRE_COPY: %s", strerror(errno));
	{
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

		r = poll(&p, 1, 0) == 1 ? p.revents : 0;
	}
	if (r & POLLOUT) {
		ret = skip("the saving fd has no poll() (it polls 0x%x, the VFS's default)", r);
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	if (ret != -ENOMSG) {
		ret = failed("pre-copy read ended with %s, not ENOMSG",
			     ret ? strerror(-ret) : "end of data");
		goto out;
	}
	r = poll_now(fd, 0);
	n = read(fd, &c, 1);
	if (r < 0) {
		ret = failed("poll(): %s", strerror(-r));
		goto out;
	}
	if ((r & POLLIN) && n < 0 && errno == ENOMSG) {
		ret = failed("the saving fd polls readable (0x%x) where a read is ENOMSG", r);
		goto out;
	}
	if (!(r & POLLIN) && n >= 0) {
		ret = failed("the saving fd polls 0x%x, not readable, where a read gives %zd", r,
			     n);
		goto out;
	}
	/* a wait at the temporary end of an idle device times out */
	r = poll_now(fd, 200);
	if (r > 0 && (r & POLLIN) && read(fd, &c, 1) < 0 && errno == ENOMSG) {
		ret = failed("poll() woke (0x%x) where a read is still ENOMSG", r);
		goto out;
	}
	if (set_state(src.fd, S_SC, NULL)) {
		ret = failed("-> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	r = poll_now(fd, 0);
	if (r <= 0 || !(r & POLLIN)) {
		ret = failed("in STOP_COPY the saving fd polls 0x%x, not readable", r);
		goto out;
	}
	b.len = 0;
	ret = read_all(fd, &b, 1 << 20, 0);
	if (ret) {
		ret = failed("STOP_COPY's read: %s", strerror(-ret));
		goto out;
	}
	r = poll_now(fd, 0);
	ret = r > 0 && (r & POLLIN) ? 0 :
	      failed("at the end of the stream the saving fd polls 0x%x, not readable", r);
out:
	if (fd >= 0)
		close(fd);
	free(b.p);
	return ret;
}

static int feature(int fd, uint32_t flags)
{
	return log_feature(fd, flags, NULL, 0);
}

static bool v2_offered;

/*
 * VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2 (6.19): a SET only opt-in, after
 * which PRECOPY_INFO's flags are an output: nothing but
 * VFIO_PRECOPY_INFO_REINIT, whatever the VMM passed in.
 */
static int t_precopy_info_v2(void)
{
	struct vfio_precopy_info i;
	int fd = -1, ret;

	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src))
		return -1;
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_PROBE | VFIO_DEVICE_FEATURE_SET |
		      VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	/* an older core passes the feature to the driver: ENOTTY, or EINVAL without one */
	if (ret == -ENOTTY || ret == -EINVAL)
		return skip("the kernel has no VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2 (6.19 and later): %s",
			    strerror(-ret));
	if (ret)
		return failed("PROBE of PRECOPY_INFOv2 for SET: %s", strerror(-ret));
	v2_offered = true;
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_PROBE | VFIO_DEVICE_FEATURE_GET |
		      VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	if (ret != -EINVAL)
		return failed("PROBE of PRECOPY_INFOv2 for GET: %s, not EINVAL",
			      ret ? strerror(-ret) : "offered");
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	if (ret)
		return failed("SET of PRECOPY_INFOv2: %s", strerror(-ret));
	if (set_state(src.fd, S_PRE, &fd) || fd < 0)
		return failed("RUNNING -> PRE_COPY: %s", strerror(errno));
	memset(&i, 0, sizeof(i));
	i.argsz = sizeof(i);
	i.flags = ~0U;
	if (ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &i)) {
		ret = failed("PRECOPY_INFO after the opt-in: %s", strerror(errno));
	} else if (i.flags & ~VFIO_PRECOPY_INFO_REINIT) {
		ret = failed("PRECOPY_INFO's flags after the opt-in are 0x%x: bits the uAPI does not define (passed in 0xffffffff)",
			     i.flags);
	} else {
		if (i.flags)
			diag("a fresh saving fd says REINIT");
		ret = 0;
	}
	close(fd);
	set_state(src.fd, S_RUN, NULL);
	return ret;
}

/* ---- with the device plug-in ---------------------------------------------- */

#define NO_PLUG(op) skip("no plug-in (-p) that can " op)

static uint32_t plug_seed(unsigned int k)
{
	return seed * 7919 + k;
}

static int plug_err(const char *op, int ret)
{
	if (ret == -EOPNOTSUPP)
		return skip("the %s plug-in cannot %s on this device", plug->name, op);
	return failed("the %s plug-in's %s: %s", plug->name, op, strerror(-ret));
}

/*
 * Save the running @d: through PRE_COPY to its temporary end when @pre
 * (where the plug-in then loads @again into the running device, and the
 * rest is read again), then STOP_COPY to the end; the device is in STOP.
 */
static int save_running(struct dev *d, struct blob *b, bool pre, uint32_t again)
{
	int fd = -1, ret;

	b->len = 0;
	if (set_state(d->fd, pre ? S_PRE : S_SC, &fd) || fd < 0)
		return failed("RUNNING -> %s: %s", pre ? "PRE_COPY" : "STOP_COPY",
			      strerror(errno));
	if (pre) {
		ret = read_all(fd, b, 1 << 20, 0);
		if (ret != -ENOMSG) {
			ret = failed("pre-copy read: %s", ret ? strerror(-ret) : "end of data");
			goto out;
		}
		ret = plug->load(d->plugged, again);
		if (ret) {
			ret = plug_err("load state during PRE_COPY", ret);
			goto out;
		}
		ret = read_all(fd, b, 1 << 20, 0);
		if (ret != -ENOMSG && ret) {
			ret = failed("pre-copy read after the change: %s", strerror(-ret));
			goto out;
		}
		if (set_state(d->fd, S_SC, NULL)) {
			ret = failed("PRE_COPY -> STOP_COPY: %s", strerror(errno));
			goto out;
		}
	}
	ret = read_all(fd, b, 1 << 20, 0);
	if (ret) {
		ret = failed("STOP_COPY's read: %s", strerror(-ret));
		goto out;
	}
	ret = set_state(d->fd, S_STOP, NULL) ? failed("STOP_COPY -> STOP: %s", strerror(errno)) : 0;
out:
	close(fd);
	return ret;
}

/*
 * A data round trip: the destination, resumed from the stream, holds what
 * the source held when it stopped (as the plug-in verifies it): state
 * loaded before a stop-and-copy, or, with @pre, state changed while
 * pre-copy ran.  When the destination is the source itself, the source is
 * loaded with other state first, so only the stream can bring it back.
 */
static int t_plug_round_trip(bool pre)
{
	uint32_t s1 = plug_seed(1), s2 = plug_seed(2), want = pre ? s2 : s1;
	struct blob b = { 0 };
	char what[256] = "";
	int ret;

	if (!plug || !plug->load || !plug->verify)
		return NO_PLUG("load and verify device state");
	if (pre && !(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src) || plug_attach(&src))
		return -1;
	ret = plug->load(src.plugged, s1);
	if (ret) {
		ret = plug_err("load state", ret);
		goto out;
	}
	ret = save_running(&src, &b, pre, s2);
	if (ret)
		goto out;
	if (!two) {
		if (set_state(src.fd, S_RUN, NULL)) {
			ret = failed("STOP -> RUNNING: %s", strerror(errno));
			goto out;
		}
		ret = plug->load(src.plugged, plug_seed(3));
		if (ret) {
			ret = plug_err("load state", ret);
			goto out;
		}
	}
	plug_detach(&src);
	ret = offer(dst, b.p, b.len, 1 << 20);
	if (ret) {
		if (ret > 0)
			ret = failed("the destination refused the stream (%zu bytes)", b.len);
		goto out;
	}
	if (set_state(dst->fd, S_RUN, NULL) || plug_attach(dst)) {
		ret = failed("%s: STOP -> RUNNING after resuming: %s", dst->name, strerror(errno));
		goto out;
	}
	ret = plug->verify(dst->plugged, want, what, sizeof(what));
	if (ret > 0)
		ret = failed("the destination does not hold what the source held: %s", what);
	else if (ret)
		ret = plug_err("verify state", ret);
	diag("round trip%s: %zu bytes of stream", pre ? " through pre-copy" : "", b.len);
out:
	plug_detach(&src);
	plug_detach(dst);
	free(b.p);
	return ret;
}

/*
 * VFIO_PRECOPY_INFO_REINIT: after the opt-in, a device its guest
 * re-initialised in the middle of PRE_COPY says so once it has, with new
 * initial bytes the fd then gives; the stream, re-initialisation and all,
 * loads.
 */
static int t_plug_reinit(void)
{
	struct vfio_precopy_info i;
	struct blob b = { 0 };
	int fd = -1, ret;

	if (!plug || !plug->reinit)
		return NO_PLUG("re-initialise the device as its guest would");
	if (!v2_offered)
		return skip("no PRECOPY_INFOv2 opt-in (see precopy_info_v2)");
	if (dev_reopen(&src) || plug_attach(&src))
		return -1;
	if (plug->load) {
		ret = plug->load(src.plugged, plug_seed(4));
		if (ret) {
			ret = plug_err("load state", ret);
			goto out;
		}
	}
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	if (ret || set_state(src.fd, S_PRE, &fd) || fd < 0) {
		ret = failed("the opt-in and RUNNING -> PRE_COPY: %s",
			     strerror(ret ? -ret : errno));
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	if (ret != -ENOMSG) {
		ret = failed("pre-copy read: %s", ret ? strerror(-ret) : "end of data");
		goto out;
	}
	ret = precopy_info(fd, &i);
	if (ret || (i.flags & VFIO_PRECOPY_INFO_REINIT)) {
		ret = failed("PRECOPY_INFO before the re-initialisation: %s",
			     ret ? strerror(-ret) : "REINIT already");
		goto out;
	}
	ret = plug->reinit(src.plugged);
	if (ret) {
		ret = plug_err("re-initialise the device", ret);
		goto out;
	}
	ret = precopy_info(fd, &i);
	/* its initial_bytes "may" be non-zero: a reset that changed no memory has none */
	if (ret || !(i.flags & VFIO_PRECOPY_INFO_REINIT)) {
		ret = failed("PRECOPY_INFO after the guest re-initialised the device: %s",
			     ret ? strerror(-ret) : "no REINIT");
		goto out;
	}
	diag("REINIT with %llu new initial bytes", (unsigned long long)i.initial_bytes);
	{
		size_t before = b.len;
		uint64_t said = i.initial_bytes;

		ret = read_all(fd, &b, 1 << 20, 0);
		if (ret != -ENOMSG && ret) {
			ret = failed("pre-copy read after REINIT: %s", strerror(-ret));
			goto out;
		}
		if (b.len - before < said) {
			ret = failed("REINIT said %llu initial bytes, the fd gave %zu",
				     (unsigned long long)said, b.len - before);
			goto out;
		}
	}
	ret = precopy_info(fd, &i);
	if (ret || i.initial_bytes) {
		ret = failed("PRECOPY_INFO once the new initial data was read: %s",
			     ret ? strerror(-ret) : "initial bytes left");
		goto out;
	}
	if (set_state(src.fd, S_SC, NULL)) {
		ret = failed("PRE_COPY -> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	close(fd);
	fd = -1;
	if (ret || set_state(src.fd, S_STOP, NULL)) {
		ret = failed("STOP_COPY: %s", ret ? strerror(-ret) : strerror(errno));
		goto out;
	}
	plug_detach(&src);
	ret = offer(dst, b.p, b.len, 1 << 20);
	if (ret > 0)
		ret = failed("a stream with a re-initialisation in it (%zu bytes) was refused",
			     b.len);
out:
	if (fd >= 0)
		close(fd);
	plug_detach(&src);
	free(b.p);
	return ret;
}

/*
 * ERROR: a device that lost its state under the VMM (the plug-in makes it
 * so) ends the stream in flight with an error, reads ERROR, refuses every
 * arc, and a reset (or a close) brings it back RUNNING.
 */
static int t_plug_error(void)
{
	struct blob b = { 0 };
	uint32_t now = 0, s = (src.flags & VFIO_MIGRATION_PRE_COPY) ? S_PRE : S_SC;
	int fd = -1, ret;
	uint8_t c;

	if (!plug || !plug->lose)
		return NO_PLUG("make the device lose its state");
	if (dev_reopen(&src) || plug_attach(&src))
		return -1;
	if (set_state(src.fd, s, &fd) || fd < 0) {
		ret = failed("RUNNING -> %s: %s", state_names[s], strerror(errno));
		goto out;
	}
	if (read(fd, &c, 1) != 1) {
		ret = failed("the saving fd's first byte: %s", strerror(errno));
		goto out;
	}
	ret = plug->lose(src.plugged);
	if (ret) {
		ret = plug_err("make the device lose its state", ret);
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	if (!ret || ret == -ENOMSG) {
		ret = failed("the stream in flight ended with %s after the device lost its state, not an error",
			     ret ? "ENOMSG" : "end of data");
		goto out;
	}
	diag("the stream in flight ended with %s", strerror(-ret));
	if (get_state(src.fd, &now) || now != S_ERR) {
		ret = failed("after the device lost its state the migration state is %s, not ERROR",
			     now < NR_STATES ? state_names[now] : "?");
		goto out;
	}
	if (!set_state(src.fd, S_RUN, NULL) || !set_state(src.fd, S_STOP, NULL)) {
		ret = failed("an arc out of ERROR was taken (only a reset leaves it)");
		goto out;
	}
	if (src.can_reset) {
		if (ioctl(src.fd, VFIO_DEVICE_RESET) || get_state(src.fd, &now) || now != S_RUN) {
			ret = failed("VFIO_DEVICE_RESET in ERROR: %s, the state %s",
				     strerror(errno), now < NR_STATES ? state_names[now] : "?");
			goto out;
		}
	}
	close(fd);
	fd = -1;
	ret = dev_reopen_raw(&src) ?: get_state(src.fd, &now);
	if (!ret && now != S_RUN)
		ret = failed("a device closed in ERROR is opened again in %s",
			     now < NR_STATES ? state_names[now] : "?");
out:
	if (fd >= 0)
		close(fd);
	plug_detach(&src);
	/* a destination of the same hardware (a VF of the same PF) is reset too */
	if (two)
		dev_reopen(dst);
	free(b.p);
	return ret;
}

/*
 * DMA logging reports the pages the device really wrote: the plug-in's
 * device writes guest pages of the logged range (mapped for it), and a
 * REPORT has each of them; a REPORT into an unmapped bitmap, with bits to
 * set, fails with EFAULT.
 */
static int t_plug_dirty(void)
{
	struct vfio_device_feature_dma_logging_range r = { .iova = LOG_IOVA, .length = LOG_LEN };
	uint64_t page = 4096, at[4];
	uint8_t *mem;
	void *none = MAP_FAILED;
	unsigned int k, set = 0;
	size_t i;
	int ret;

	if (!log_offered)
		return skip("the device offers no DMA logging");
	if (!plug || !plug->dirty)
		return NO_PLUG("make the device write guest memory");
	mem = mmap(NULL, LOG_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return failed("mmap: %s", strerror(errno));
	ret = dev_reopen(&src) ?: dma_map(&src, LOG_IOVA, mem, LOG_LEN);
	if (ret) {
		munmap(mem, LOG_LEN);
		return failed("mapping the logged range: %s", strerror(-ret));
	}
	if (plug_attach(&src)) {
		ret = -1;
		goto out;
	}
	ret = log_start(src.fd, &r, 1, &page);
	if (ret) {
		ret = failed("START: %s", strerror(-ret));
		goto out;
	}
	log_report(src.fd, LOG_IOVA, LOG_LEN, page, log_bitmap);	/* clears */
	at[0] = LOG_IOVA + 5 * page;
	at[1] = at[0] + page;
	at[2] = at[0] + 2 * page;
	at[3] = LOG_IOVA + LOG_LEN - page;
	ret = plug->dirty(src.plugged, at[0], 3 * page);
	if (!ret)
		ret = plug->dirty(src.plugged, at[3], page);
	if (ret) {
		ret = plug_err("write guest memory", ret);
		goto stop;
	}
	memset(log_bitmap, 0, sizeof(log_bitmap));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, page, log_bitmap);
	if (ret) {
		ret = failed("REPORT: %s", strerror(-ret));
		goto stop;
	}
	for (k = 0; k < ARRAY_SIZE(at); k++) {
		i = (at[k] - LOG_IOVA) / page;
		if (!(log_bitmap[i / 64] & (1ULL << (i % 64)))) {
			ret = failed("the page at 0x%llx, written by the device, is not reported",
				     (unsigned long long)at[k]);
			goto stop;
		}
	}
	for (i = 0; i < LOG_LEN / page; i++)
		set += !!(log_bitmap[i / 64] & (1ULL << (i % 64)));
	diag("the device wrote 4 pages, the REPORT has %u", set);
	ret = plug->dirty(src.plugged, at[1], page);
	if (ret) {
		ret = plug_err("write guest memory", ret);
		goto stop;
	}
	none = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ret = none == MAP_FAILED ? -ENOMEM : log_report(src.fd, LOG_IOVA, LOG_LEN, page, none);
	if (ret && ret != -EFAULT) {
		ret = failed("REPORT of a dirty page into an unmapped bitmap: %s, not EFAULT",
			     strerror(-ret));
		goto stop;
	}
	/*
	 * Answered: the VFIO core's iova_bitmap_set() (7.3) drops a bit it
	 * cannot pin the user's page for, and the driver cannot tell.  Not
	 * the device's failure; said, with whether the page is still dirty.
	 */
	if (!ret) {
		memset(log_bitmap, 0, sizeof(log_bitmap));
		ret = log_report(src.fd, LOG_IOVA, LOG_LEN, page, log_bitmap);
		if (ret) {
			ret = failed("REPORT: %s", strerror(-ret));
			goto stop;
		}
		i = (at[1] - LOG_IOVA) / page;
		diag("warning: a REPORT of a dirty page into an unmapped bitmap answered, not EFAULT; the page is %s",
		     log_bitmap[i / 64] & (1ULL << (i % 64)) ? "reported again next" :
		     "lost to the next REPORT (the kernel's iova_bitmap drops bits it cannot set)");
	}
	ret = 0;
stop:
	log_stop(src.fd);
out:
	if (none != MAP_FAILED)
		munmap(none, 1 << 16);
	plug_detach(&src);
	dma_unmap(&src, LOG_IOVA, LOG_LEN);
	munmap(mem, LOG_LEN);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "%s: %s [-c] [-d DST] [-k KNOWN] [-n CORRUPT] [-p PLUGIN] [-s SEED] [-N SUITE] DEVICE\n"
		"  DEVICE, DST: a PCI address or an mdev UUID bound to a VFIO driver\n",
		"usage", "vfio-migtest");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dname = NULL;
	unsigned int k, nsup;
	int c, ret;

	while ((c = getopt(argc, argv, "cd:k:n:p:s:N:h")) != -1) {
		switch (c) {
		case 'p':
			if (plug_load(optarg))
				return 2;
			break;
		case 'c':
			use_cdev = true;
			break;
		case 'd':
			dname = optarg;
			break;
		case 'n':
			nr_corrupt = strtoul(optarg, NULL, 10);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 10);
			break;
		case 'N':
			suite = optarg;
			break;
		case 'k':
			if (known_load(optarg)) {
				fprintf(stderr, "vfio-migtest: %s: %s\n", optarg, strerror(errno));
				return 2;
			}
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n", suite);
	ret = dev_open(&src, argv[optind]);
	if (ret) {
		printf("    1..1\n");
		report("open", ret);
		return finish();
	}
	diag("device %s through %s%s", src.name, src.cdev ? src.cdev_path : "its group (type1)",
	     src.can_reset ? ", resettable" : "");
	ret = mig_flags(src.fd, &src.flags);
	if (ret) {
		printf("    1..1\n");
		diag("%s does not offer VFIO migration (%s)", src.name, strerror(-ret));
		report("no_migration", skip("the device does not migrate: nothing to test"));
		dev_close(&src);
		return finish();
	}
	two = dname && strcmp(dname, argv[optind]);
	if (two) {
		ret = dev_open(&dstdev, dname);
		if (ret) {
			printf("    1..1\n");
			report("open_destination", ret);
			return finish();
		}
		dst = &dstdev;
	}
	/* The plan: every case below, from the flags. */
	for (k = VFIO_DEVICE_STATE_STOP, nsup = 0; k < NR_STATES; k++)
		nsup += supported(&src, k);
	printf("    1..%u\n", 2 + (unsigned int)ARRAY_SIZE(splits) + nsup * 7 + 6 + 3 +
	       NR_LOG_CASES + 1 + 2 * nsup + 1 + 4);
	report("migration_feature", t_feature());
	report("fresh_device_is_running", t_initial_running());
	for (k = 0; k < ARRAY_SIZE(splits); k++) {
		char name[64];

		snprintf(name, sizeof(name), "stream_read_%zu_written_%zu", splits[k][0],
			 splits[k][2]);
		report(name, t_split(k));
	}
	t_arcs();
	report("bad_targets_refused", t_bad_targets());
	report("precopy", t_precopy());
	report("precopy_info_not_on_resuming_fd", t_precopy_info_elsewhere());
	report("mig_data_size", t_data_size());
	report("truncated_streams_refused", t_truncated());
	report("corrupted_streams", t_corrupted());
	report("second_saving_fd", t_second_saving_fd());
	report("saving_fd_poll", t_saving_poll());
	report("precopy_info_v2", t_precopy_info_v2());
	t_dma_logging();
	report("plugin_dma_log_dirty", t_plug_dirty());
	t_every_state();
	report("reopened_device_is_running", stale_state == VFIO_DEVICE_STATE_RUNNING ? 0 :
	       failed("a device closed in %s was still in it when opened again",
		      state_names[stale_state]));
	if (plug)
		diag("plug-in %s", plug->name);
	report("plugin_round_trip", t_plug_round_trip(false));
	report("plugin_round_trip_precopy", t_plug_round_trip(true));
	report("plugin_reinit", t_plug_reinit());
	report("plugin_error_state", t_plug_error());	/* last: it may reset hardware */
	diag("%d of %d checks failed", nr_fail, nr_case);
	free(golden.p);
	if (two)
		dev_close(&dstdev);
	dev_close(&src);
	return finish();
}
