// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: the device: opened through its group (type1) or its iommufd cdev, reopened
 * fresh for each check, its DMA mappings, the plug-in, the migration uAPI's
 * ioctls.
 */
#include "migtest.h"

/* ---- the device, through its group (type1 container) ---------------- */

const char *const state_names[NR_STATES] = {
	[VFIO_DEVICE_STATE_ERROR] = "ERROR",
	[VFIO_DEVICE_STATE_STOP] = "STOP",
	[VFIO_DEVICE_STATE_RUNNING] = "RUNNING",
	[VFIO_DEVICE_STATE_STOP_COPY] = "STOP_COPY",
	[VFIO_DEVICE_STATE_RESUMING] = "RESUMING",
	[VFIO_DEVICE_STATE_RUNNING_P2P] = "RUNNING_P2P",
	[VFIO_DEVICE_STATE_PRE_COPY] = "PRE_COPY",
	[VFIO_DEVICE_STATE_PRE_COPY_P2P] = "PRE_COPY_P2P",
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

bool use_cdev;	/* -c */

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

int dev_open(struct dev *d, const char *name)
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

/* Close the device fd and open it again, nothing more. */
int dev_reopen_raw(struct dev *d)
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
uint32_t stale_state = VFIO_DEVICE_STATE_RUNNING;	/* the first seen */

int dev_reopen(struct dev *d)
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

void dev_close(struct dev *d)
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

const struct vfio_migtest_plugin *plug;

/* Map @len bytes at @vaddr for @d's DMA at @iova: 0 or -errno. */
int dma_map(struct dev *d, uint64_t iova, void *vaddr, uint64_t len)
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

int dma_unmap(struct dev *d, uint64_t iova, uint64_t len)
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
int plug_load(const char *path)
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
int plug_attach(struct dev *d)
{
	d->host = (struct vfio_migtest_host){
		.name = d->name, .device_fd = d->fd, .map = host_map, .unmap = host_unmap,
		.tool = d };
	errno = 0;
	d->plugged = plug->attach(&d->host);
	return d->plugged ? 0 : failed("the %s plug-in did not take %s: %s", plug->name, d->name,
				       errno ? strerror(errno) : "it did not say why");
}

void plug_detach(struct dev *d)
{
	if (d->plugged)
		plug->detach(d->plugged);
	d->plugged = NULL;
}

/* VFIO_DEVICE_FEATURE_MIGRATION: 0 and the flags, or -errno. */
int mig_flags(int fd, uint64_t *flags)
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
int set_state(int fd, uint32_t state, int *data_fd)
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

int get_state(int fd, uint32_t *state)
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

int data_size(int fd, uint64_t *size)
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

bool supported(const struct dev *d, uint32_t s)
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
