/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What simgpu-client's scenario files share: failure reporting, guest
 * buffers, dirty-page bitmaps, the client's side of a migration between
 * two instances, and every scenario's entry point.  The migration uAPI
 * itself is vfio_mig.h's.
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
extern const char *dst_name;	/* -d: the destination device */

int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A scenario's result when the device cannot run it (fail_msg says why). */
#define SKIP 1

#define CHECK(cond, ...)                          \
	do {                                      \
		if (!(cond))                      \
			return fail(__VA_ARGS__); \
	} while (0)

uint32_t rnd(void);
void fill_random(void *p, size_t len);
uint32_t kernel_word(uint32_t w, uint32_t key, uint32_t it);
void *sysbuf(struct gpu *g, uint64_t va, size_t len, uint64_t *iova);

struct blob;	/* vfio_mig.h */

/* migrate.c */
void guest_follow(struct gpu *dst, const struct gpu *src, const uint8_t *mem);
int migrate_into(struct gpu *dst, const struct gpu *src, const uint8_t *mem,
		 const struct blob *pre, const struct blob *stop);
int migrate_trip(struct gpu *from, struct gpu *to, int n);

/* work.c */
int t_info(struct gpu *g);
int t_fill_copy(struct gpu *g);
int t_kernel(struct gpu *g);
int t_fences_irq(struct gpu *g);
int t_stale_tlb(struct gpu *g);
int t_bad_ring(struct gpu *g);
int t_faults(struct gpu *g);
int t_bad_args(struct gpu *g);
int t_inval_storm(struct gpu *g);
int t_reset_busy(struct gpu *g);
int t_scrub(struct gpu *g);
int t_ack_knobs(struct gpu *g);
int t_preempt(struct gpu *g);
int t_workload(struct gpu *g);
int t_remove_open(struct gpu *g);

/* mig_live.c */
/* mig_converge.c */
int t_converge(struct gpu *g);
int t_converge_off(struct gpu *g);
int t_converge_reset(struct gpu *g);
int t_converge_sysfs(struct gpu *g);
int t_migrate(struct gpu *g);
int t_incompatible(struct gpu *g);

/* mig_postcopy.c */
int t_postcopy(struct gpu *g);
int t_postcopy_abandon(struct gpu *g);
int t_postcopy_threads(struct gpu *g);
int t_postcopy_mover(struct gpu *g);
int t_postcopy_reset(struct gpu *g);
int t_postcopy_timeout(struct gpu *g);
int t_postcopy_save(struct gpu *g);
int t_bench_postcopy(struct gpu *g);
int t_postcopy_hold(struct gpu *g);
int t_postcopy_pf_reset(struct gpu *g);
int t_postcopy_pf_gone(struct gpu *g);
int t_postcopy_remove(struct gpu *g);

/* mig_states.c */
int t_stop_fails(struct gpu *g);
int t_quarantine(struct gpu *g);
int t_p2p(struct gpu *g);

/* mig_poll.c */
int t_poll(struct gpu *g);

/* mig_metrics.c */
int t_metrics(struct gpu *g);
int t_notify(struct gpu *g);

/* mig_pingpong.c */
int t_pingpong(struct gpu *g);
int t_soak(struct gpu *g);

/* mig_pf.c */
int t_pf_reset(struct gpu *g);
int t_pf_gone(struct gpu *g);

/* hostile.c */
int t_hostile(struct gpu *g);
int t_kill_resume(struct gpu *g);

/* golden.c */
int t_golden_save(struct gpu *g);
int t_golden_load(struct gpu *g);
int t_golden_restore(struct gpu *g);
int t_golden_refused(struct gpu *g);

/* dma_log.c: guest pages, one bit each, in a bitmap of BM_WORDS */
#define NPAGES (guest_size / 4096)
#define BM_WORDS (NPAGES / 64)
#define NPAGES_MAX (GUEST_MAX / 4096)	/* array bounds */
#define BM_WORDS_MAX (NPAGES_MAX / 64)

/* A check that already said why it failed. */
#define TRY(x)                     \
	do {                       \
		if (x)             \
			return -1; \
	} while (0)

bool bm_test(const uint64_t *bm, size_t i);
size_t gpage(uint64_t iova);
long report_guest(struct gpu *g, uint64_t *bm);
int expect_no_logging(struct gpu *g);
int expect_pages(const uint64_t *bm, uint64_t iova, size_t n, const char *what);
int fill_pages(struct gpu *g, int q, uint64_t va, const uint32_t *idx, size_t n,
	       uint32_t val);
int fill_span(struct gpu *g, uint64_t va, uint32_t first, uint32_t n);
int t_dma_logging(struct gpu *g);
int t_dma_log_race(struct gpu *g);
int t_dma_log_cut(struct gpu *g);
int t_dma_log_lifecycle(struct gpu *g);
int t_dma_log_span(struct gpu *g);
int t_bench_dirty(struct gpu *g);

/* race.c */
int t_race(struct gpu *g);

/* fault.c */
int t_fault_sweep(struct gpu *g);

/* mig_pf.c */
int sysfs_write(const char *path, const char *val);
const char *pf_of(const char *vf, char *pf, size_t len);

/* aperture.c */
int t_aperture(struct gpu *g);
uint8_t *aperture_map(struct gpu *g, size_t len);

/* precopy.c */
int t_dirty_precopy(struct gpu *g);

/* bench.c */
int t_bench_vram(struct gpu *g);
void type_of(struct gpu *g, char *buf, size_t len);

/* bench_converge.c */
int t_bench_converge(struct gpu *g);

#endif
