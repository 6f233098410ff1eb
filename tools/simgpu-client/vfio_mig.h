/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The VFIO migration uAPI from the VMM's side, for any gpumig device: the
 * migration state (with its data fd), PRE_COPY's and STOP_COPY's sizes,
 * the data fd read and written in pieces, a whole stream captured, DMA
 * logging, and the numbers of gpumig's migration/ sysfs files.  It knows
 * nothing of simgpu's scenarios: errors come back as return values (and
 * errno), as in vfio_dev.h, for the caller to report.
 */
#ifndef _SIMGPU_VFIO_MIG_H
#define _SIMGPU_VFIO_MIG_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/vfio.h>

#include "vfio_dev.h"

/* A migration stream, or a part of one, in memory. */
struct blob {
	uint8_t *p;
	size_t len, cap;
};

/* Migration state: 0 or -errno.  mig_set()'s data fd: see data_fd_close(). */
int mig_set(struct gpu *g, uint32_t state, int *data_fd);
int mig_get(struct gpu *g, uint32_t *state);
/* MIG_DATA_SIZE's stop-copy length, or -errno. */
int64_t mig_data_size(struct gpu *g);
/* VFIO_MIG_GET_PRECOPY_INFO on a saving fd: 0, or -1 with errno. */
int mig_precopy_info(int fd, struct vfio_precopy_info *info);

/*
 * The data fd, read to its end or to ENOMSG and written in pieces: 0 or
 * -errno (mig_capture(): -1 when a state change failed).
 */
int mig_read(int fd, struct blob *b);
int mig_write(int fd, const uint8_t *p, size_t len, size_t piece);
int mig_write_untouched(int fd, const uint8_t *p, size_t len, size_t piece);
int mig_capture(struct gpu *g, struct blob *b);

/* DMA logging (VFIO_DEVICE_FEATURE_DMA_LOGGING_*) at 4 KiB: 0 or -errno. */
int dma_log_start(struct gpu *g, uint64_t iova, uint64_t len);
int dma_log_stop(struct gpu *g);
int dma_log_report(struct gpu *g, uint64_t iova, uint64_t len, uint64_t *bitmap);

/* gpumig's migration/ sysfs files of a device: what they say, or -1. */
int mig_text(const char *name, const char *key, char *buf, size_t len);
long long mig_value(const char *name, const char *key);
void mig_source(const char *name, char *buf, size_t len);
long long metric(struct gpu *g, const char *name);
int device_tracking(struct gpu *g);

/* A poll() on one migration/ file, in a thread (mig_notify.c). */
struct mig_watch {
	char key[32];
	int fd;
	pthread_t t;
	int sleeping;
	uint64_t start_ms, woke_ms;
	short revents;
	char before[512], after[512];
};

int mig_watch_begin(struct mig_watch *w, const char *name, const char *key);
int mig_watch_end(struct mig_watch *w);

#endif
