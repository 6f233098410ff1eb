/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vfio-migtest's parts: the device and its migration uAPI (device.c),
 * streams (stream.c), the checks by subject (states.c, data.c, precopy.c,
 * dma_log.c, plugin_checks.c) and KTAP and the run (vfio-migtest.c).
 */
#ifndef _VFIO_MIGTEST_H
#define _VFIO_MIGTEST_H

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

#define S_STOP VFIO_DEVICE_STATE_STOP
#define S_RUN VFIO_DEVICE_STATE_RUNNING
#define S_PRE VFIO_DEVICE_STATE_PRE_COPY
#define S_PREP VFIO_DEVICE_STATE_PRE_COPY_P2P
#define S_SC VFIO_DEVICE_STATE_STOP_COPY
#define S_RES VFIO_DEVICE_STATE_RESUMING
#define S_RP2P VFIO_DEVICE_STATE_RUNNING_P2P
#define S_ERR VFIO_DEVICE_STATE_ERROR

#define NR_SPLITS 4	/* data.c's stream splits */
#define NR_LOG_CASES 9	/* dma_log.c's t_dma_logging() */

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

struct blob {
	uint8_t *p;
	size_t len, cap;
};

/* vfio-migtest.c: KTAP.  A check returns 0 (ok), -1 (failed: why) or 1 (skipped: why). */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report(const char *name, int ret);
extern struct dev src, dstdev, *dst;	/* dst: where streams are written back */
extern bool two;			/* dst is another device */
extern struct blob golden;		/* a stream of the device that it took back */
extern unsigned int nr_corrupt, seed;

/* device.c */
extern const char *const state_names[NR_STATES];
extern bool use_cdev;
extern uint32_t stale_state;
extern const struct vfio_migtest_plugin *plug;
int dev_open(struct dev *d, const char *name);
int dev_reopen(struct dev *d);
int dev_reopen_raw(struct dev *d);
void dev_close(struct dev *d);
int dma_map(struct dev *d, uint64_t iova, void *vaddr, uint64_t len);
int dma_unmap(struct dev *d, uint64_t iova, uint64_t len);
int plug_load(const char *path);
int plug_attach(struct dev *d);
void plug_detach(struct dev *d);
int mig_flags(int fd, uint64_t *flags);
int get_state(int fd, uint32_t *state);
int set_state(int fd, uint32_t state, int *data_fd);
int data_size(int fd, uint64_t *size);
bool supported(const struct dev *d, uint32_t s);

/* stream.c */
int read_all(int fd, struct blob *b, size_t piece, size_t small);
int write_all(int fd, const uint8_t *p, size_t len, size_t piece);
int capture(struct dev *d, struct blob *b, size_t piece, size_t small);
int offer_split(struct dev *to, const uint8_t *p, size_t len, size_t head, size_t piece);
int offer(struct dev *to, const uint8_t *p, size_t len, size_t piece);

/* states.c */
int t_feature(void);
int t_initial_running(void);
void t_arcs(void);
int t_bad_targets(void);
void t_every_state(void);

/* data.c */
void t_splits(void);
int t_data_size(void);
int t_truncated(void);
int t_corrupted(void);
int t_second_saving_fd(void);

/* precopy.c */
extern bool v2_offered;
int precopy_info(int fd, struct vfio_precopy_info *i);
int feature(int fd, uint32_t flags);
int t_precopy(void);
int t_precopy_info_elsewhere(void);
int t_saving_poll(void);
int t_precopy_info_v2(void);

/* dma_log.c */
int log_feature(int fd, uint32_t op, void *data, size_t len);
void t_dma_logging(void);
int t_plug_dirty(void);

/* plugin_checks.c */
#define NO_PLUG(op) skip("no plug-in (-p) that can " op)
int plug_err(const char *op, int ret);
int t_plug_round_trip(bool pre);
int t_plug_reinit(void);
int t_plug_error(void);

#endif
