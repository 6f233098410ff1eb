/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hot workload of the auto-converge scenarios (mig_converge.c) and of
 * their benchmark (bench_converge.c): the background writer rewriting a
 * 4 MiB VRAM working set at HOT_RATE pages a second, a VMM draining the
 * saving fd at DRAIN_BPS (its link), and the migration/ settings a run
 * changes, saved and put back.
 */
#ifndef _SIMGPU_CONVERGE_H
#define _SIMGPU_CONVERGE_H

#include <stddef.h>

#include "vfio_mig.h"

#define HOT_PAGES	1024		/* the working set: 4 MiB, 64 blocks */
#define HOT_RATE	2000		/* pages/s: every page twice a second */
#define DRAIN_BPS	(2 << 20)	/* the VMM's "link" */
#define DRAIN_PIECE	(64 << 10)

/* auto_converge and the four throttle_* settings */
#define CONVERGE_SETTINGS	5

struct saved {
	char v[CONVERGE_SETTINGS][16];
};

/* migration/@file of @g: written (0 or -errno), read (newline cut; "?"). */
int mig_attr_write(struct gpu *g, const char *file, const char *val);
void mig_attr(struct gpu *g, const char *file, char *buf, size_t len);
void settings_save(struct gpu *g, struct saved *s);
void settings_restore(struct gpu *g, const struct saved *s);

/* The writer stamping VRAM [0, 4 MiB), gone round twice: 0 or fail(). */
int hot_setup(struct gpu *g);
/* Every page holds a stamp of the writer's last sweep: 0 or fail(). */
int hot_verify(struct gpu *g, const char *who);
/* The writer's rate over @ms, pages per second. */
double writer_rate(struct gpu *g, int ms);
/* The saving fd read for @ms at DRAIN_BPS into @b (NULL: discarded). */
int drain_for(int fd, struct blob *b, int ms);

#endif
