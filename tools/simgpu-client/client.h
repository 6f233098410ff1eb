/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What simgpu-client's scenario files share: failure reporting, guest
 * buffers, the migration uAPI helpers.
 */
#ifndef _SIMGPU_CLIENT_H
#define _SIMGPU_CLIENT_H

#include <stdint.h>
#include <stddef.h>

#include "vfio_dev.h"

#define VA_SYS 0x10000000ULL /* guest-memory buffers */
#define VA_VRAM 0x40000000ULL /* VRAM */
#define TMO 10000 /* ms */

extern char fail_msg[512];
extern const char *dst_uuid;

int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CHECK(cond, ...)                          \
	do {                                      \
		if (!(cond))                      \
			return fail(__VA_ARGS__); \
	} while (0)

uint32_t rnd(void);
void fill_random(void *p, size_t len);
uint32_t kernel_word(uint32_t w, uint32_t key, uint32_t it);
void *sysbuf(struct gpu *g, uint64_t va, size_t len, uint64_t *iova);
int read_attr(const char *uuid, const char *attr, char *buf, size_t len);

struct blob {
	uint8_t *p;
	size_t len, cap;
};

int mig_set(struct gpu *g, uint32_t state, int *data_fd);
int64_t mig_data_size(struct gpu *g);
int mig_read(int fd, struct blob *b);
int mig_write(int fd, const uint8_t *p, size_t len, size_t piece);

/* dma_log.c */
int t_dma_logging(struct gpu *g);
int t_dma_log_race(struct gpu *g);
int t_dma_log_lifecycle(struct gpu *g);
int t_dirty_precopy(struct gpu *g);
int t_bench_dirty(struct gpu *g);

#endif
