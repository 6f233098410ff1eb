// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: device auto-converge.  A hot workload (the background
 * writer rewrites a 4 MiB VRAM working set every half second) against a
 * VMM that drains the saving fd at 2 MiB/s, so every block read is dirty
 * again at once: with auto-converge on, the throttle climbs, the device
 * converges, stop-copy carries little and the destination's VRAM is
 * exactly the source's; with it off, the verdict is "no" and a cancel
 * leaves the writer at its full rate; a reset or a cancel while throttled
 * ends the throttle at once; nonsense in each new file is refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "converge.h"
#include "vfio_mig.h"

#define CONVERGE_S	45		/* the most a converging pre-copy may take */

/* migration/@file of @g: @val written, 0 or -errno (the write's). */
int mig_attr_write(struct gpu *g, const char *file, const char *val)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/migration/%s", dev_sysdir(g->name), file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

void mig_attr(struct gpu *g, const char *file, char *buf, size_t len)
{
	char attr[128];

	snprintf(attr, sizeof(attr), "migration/%s", file);
	if (read_attr(g->name, attr, buf, len))
		snprintf(buf, len, "?");
	buf[strcspn(buf, "\n")] = 0;
}

/* The settings a scenario changes, put back after it. */
static const char *const settings[] = { "auto_converge", "throttle_initial_pct",
					"throttle_increment_pct", "throttle_max_pct",
					"throttle_trigger_threshold" };
_Static_assert(ARRAY_SIZE(settings) == CONVERGE_SETTINGS, "struct saved holds them all");

void settings_save(struct gpu *g, struct saved *s)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(settings); i++)
		mig_attr(g, settings[i], s->v[i], sizeof(s->v[i]));
}

void settings_restore(struct gpu *g, const struct saved *s)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(settings); i++)
		if (strcmp(s->v[i], "?"))
			mig_attr_write(g, settings[i], s->v[i]);
}

/*
 * The hot workload: VRAM [0, 4 MiB) mapped at VA_VRAM, the background writer
 * stamping it page after page; returned once it went round twice, so every
 * page holds a stamp (its count, its page).
 */
int hot_setup(struct gpu *g)
{
	unsigned long long n0 = 0, n = 0;
	uint64_t end;
	char rate[16];

	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, HOT_PAGES * 4096ULL, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	wr(g, SIMGPU_REG_DIRTY_BASE_LO, (uint32_t)VA_VRAM);
	wr(g, SIMGPU_REG_DIRTY_BASE_HI, VA_VRAM >> 32);
	snprintf(rate, sizeof(rate), "%u", HOT_RATE);
	CHECK(knob_set(g, "dirty_rate", rate) == 0, "dirty_rate knob");
	stat_read(g, "dirty_pages", &n0);
	wr(g, SIMGPU_REG_DIRTY_PAGES, HOT_PAGES);
	end = now_ms() + 10000;
	do {
		usleep(50000);
		CHECK(stat_read(g, "dirty_pages", &n) == 0, "no dirty_pages counter");
	} while (n - n0 < 2 * HOT_PAGES && now_ms() < end);
	CHECK(n - n0 >= 2 * HOT_PAGES, "the writer wrote %llu pages in 10 s", n - n0);
	return 0;
}

/* The writer's rate over @ms, pages per second. */
double writer_rate(struct gpu *g, int ms)
{
	unsigned long long a = 0, b = 0;
	uint64_t t0, t1;

	t0 = now_ms();
	stat_read(g, "dirty_pages", &a);
	usleep(ms * 1000);
	stat_read(g, "dirty_pages", &b);
	t1 = now_ms();
	return t1 > t0 ? (b - a) * 1000.0 / (t1 - t0) : 0;
}

/* Read the saving fd for @ms at DRAIN_BPS into @b (NULL: discard). */
int drain_for(int fd, struct blob *b, int ms)
{
	static uint8_t scratch[DRAIN_PIECE];
	uint64_t t0 = now_ms(), sent = 0, t;

	while ((t = now_ms() - t0) < (uint64_t)ms) {
		uint8_t *dst = scratch;
		ssize_t n;

		/* ahead of the link: wait for it */
		if (sent > t * (DRAIN_BPS / 1000)) {
			usleep(2000);
			continue;
		}
		if (b) {
			if (b->cap - b->len < DRAIN_PIECE) {
				b->cap = b->cap * 2 + (4 << 20);
				b->p = realloc(b->p, b->cap);
				CHECK(b->p, "out of memory");
			}
			dst = b->p + b->len;
		}
		n = read(fd, dst, DRAIN_PIECE);
		if (n < 0 && errno == ENOMSG) {
			usleep(5000);
			continue;
		}
		CHECK(n > 0, "pre-copy read: %zd (%s)", n, n < 0 ? strerror(errno) : "EOF");
		if (b)
			b->len += n;
		sent += n;
	}
	return 0;
}

/* Every page holds the stamp of the writer's last sweep: none is stale. */
int hot_verify(struct gpu *g, const char *who)
{
	uint64_t *pg, max = 0, c;
	uint32_t p;

	pg = sysbuf(g, VA_SYS + (8 << 20), HOT_PAGES * 4096, NULL);
	gpu_submit(g, 0, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20), VA_VRAM, HOT_PAGES * 4096, 0);
	CHECK(gpu_wait_idle(g, 0, 30000) == 0, "%s: reading VRAM back", who);
	for (p = 0; p < HOT_PAGES; p++)
		if (pg[p * 512] > max)
			max = pg[p * 512];
	CHECK(max >= HOT_PAGES, "%s: the writer never went round (count %llu)", who,
	      (unsigned long long)max);
	for (p = 0; p < HOT_PAGES; p++) {
		c = pg[p * 512];
		/* page p's count in the last sweep: the one in (max - N, max] */
		CHECK(pg[p * 512 + 1] == p && c % HOT_PAGES == p && c + HOT_PAGES > max,
		      "%s: VRAM page %u holds stamp (%llu, %llu); the last sweep ends at %llu",
		      who, p, (unsigned long long)c, (unsigned long long)pg[p * 512 + 1],
		      (unsigned long long)max);
	}
	return 0;
}

#define TRACE "/sys/kernel/tracing"

static int trace_read(const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), TRACE "/%s", file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int trace_write(const char *file, const char *val)
{
	char path[PATH_MAX];
	int fd, ret;

	snprintf(path, sizeof(path), TRACE "/%s", file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	ret = write(fd, val, strlen(val)) < 0 ? -1 : 0;
	close(fd);
	return ret;
}

/*
 * The throttle steps the trace recorded for @g, in order (at most @max),
 * or -1 without tracefs.
 */
static int trace_throttles(struct gpu *g, unsigned int *pct, int max)
{
	char line[512], needle[96];
	FILE *f = fopen(TRACE "/trace", "r");
	int n = 0;

	if (!f)
		return -1;
	snprintf(needle, sizeof(needle), "gpumig_throttle: %s pct=", g->name);
	while (fgets(line, sizeof(line), f)) {
		char *s = strstr(line, needle);

		if (s && n < max && strstr(line, "ret=0"))
			pct[n++] = atoi(s + strlen(needle));
	}
	fclose(f);
	return n;
}

/* Auto-converge on: it converges, the stop is small, the result exact. */
int t_converge(struct gpu *src)
{
	struct blob pre = { 0 }, stop = { 0 };
	unsigned int steps[32], top = 0, t;
	char verdict[16] = "", tr[16], tracing_on[8] = "";
	struct vfio_precopy_info info;
	struct saved saved;
	int fd = -1, ret = 0, n, i;
	long long stopcopy;
	struct gpu dst;
	uint64_t end;
	bool traced;

	settings_save(src, &saved);
	ret = mig_attr_write(src, "auto_converge", "1");
	if (ret == -EOPNOTSUPP) {
		snprintf(fail_msg, sizeof(fail_msg), "the device cannot be throttled");
		return SKIP;
	}
	CHECK(ret == 0, "auto_converge=1: %s", strerror(-ret));
	/* Steps as an operator of a hot GPU would set them: 60, 80, 99. */
	CHECK(mig_attr_write(src, "throttle_initial_pct", "60") == 0 &&
	      mig_attr_write(src, "throttle_increment_pct", "20") == 0, "throttle steps");
	TRY(hot_setup(src));
	/*
	 * Whatever ran before may have left recording off (tracing_on 0):
	 * turn it on for these events and put back what was there.
	 */
	traced = !trace_read("tracing_on", tracing_on, sizeof(tracing_on)) &&
		 !trace_write("events/gpumig/gpumig_throttle/enable", "1") &&
		 !trace_write("trace", "") && !trace_write("tracing_on", "1");
	if (mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd)) {
		ret = fail("PRE_COPY: %s", strerror(errno));
		goto out;
	}
	end = now_ms() + CONVERGE_S * 1000;
	for (;;) {
		if (drain_for(fd, &pre, 500))
			goto out;
		t = metric(src, "throttle_pct");
		top = t > top ? t : top;
		mig_attr(src, "converging", verdict, sizeof(verdict));
		if (mig_precopy_info(fd, &info)) {
			ret = fail("PRECOPY_INFO: %s", strerror(errno));
			goto out;
		}
		if (!strcmp(verdict, "yes") && info.initial_bytes + info.dirty_bytes < (1 << 20))
			break;
		if (now_ms() > end) {
			ret = fail("no convergence in %d s: throttle %u%% (at most %u%%), converging %s, %llu bytes owed",
				   CONVERGE_S, t, top, verdict,
				   (unsigned long long)(info.initial_bytes + info.dirty_bytes));
			goto out;
		}
	}
	if (mig_set(src, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) ||
	    mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL)) {
		ret = fail("to STOP_COPY: %s", strerror(errno));
		goto out;
	}
	mig_attr(src, "throttle_pct", tr, sizeof(tr));
	ret = mig_read(fd, &stop);
	if (ret || mig_set(src, VFIO_DEVICE_STATE_STOP, NULL)) {
		ret = fail("stop-copy: %d", ret);
		goto out;
	}
	stopcopy = metric(src, "stopcopy_bytes");
	printf("    # converge: throttle up to %u%%, %zu pre-copy bytes, %lld stop-copy bytes\n",
	       top, pre.len, stopcopy);
	if (top < 60 || strcmp(tr, "0") || stopcopy >= HOT_PAGES * 4096LL) {
		ret = fail("throttle up to %u%%, %s%% at the stop (not 0), stop-copy %lld bytes (the working set is %d)",
			   top, tr, stopcopy, HOT_PAGES * 4096);
		goto out;
	}
	n = traced ? trace_throttles(src, steps, ARRAY_SIZE(steps)) : -1;
	if (n >= 0) {
		/* The trace says what throttle_pct said: steps up to the top, then 0. */
		for (i = 1; i < n - 1; i++)
			if (steps[i] <= steps[i - 1])
				break;
		if (n < 2 || steps[n - 1] || steps[n - 2] != top || i < n - 1) {
			ret = fail("trace: %d throttle events, last %u, before it %u; throttle_pct's top %u",
				   n, n ? steps[n - 1] : 0, n > 1 ? steps[n - 2] : 0, top);
			goto out;
		}
	}
	if (gpu_open(&dst, dst_name)) {
		ret = fail("open destination");
		goto out;
	}
	ret = migrate_into(&dst, src, src->mem, &pre, &stop);
	if (!ret)
		ret = hot_verify(&dst, "destination");
	gpu_close(&dst);
out:
	if (traced) {
		trace_write("events/gpumig/gpumig_throttle/enable", "0");
		trace_write("tracing_on", tracing_on);
	}
	data_fd_close(fd);
	settings_restore(src, &saved);
	free(pre.p);
	free(stop.p);
	return ret;
}

/*
 * Auto-converge off, the same workload: the verdict reads "no", nothing is
 * throttled, the writer keeps its rate, and a cancel ends it all cleanly.
 */
int t_converge_off(struct gpu *g)
{
	char verdict[16], tr[16];
	struct saved saved;
	double before, during, after;
	int fd = -1, ret = 0;

	settings_save(g, &saved);
	CHECK(mig_attr_write(g, "auto_converge", "0") == 0, "auto_converge=0");
	TRY(hot_setup(g));
	before = writer_rate(g, 1000);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	ret = drain_for(fd, NULL, 4 * 1000 + 500);
	during = writer_rate(g, 1000);
	mig_attr(g, "converging", verdict, sizeof(verdict));
	mig_attr(g, "throttle_pct", tr, sizeof(tr));
	if (!ret && (strcmp(verdict, "no") || strcmp(tr, "0")))
		ret = fail("auto-converge off: converging %s (not no), throttle %s%%", verdict, tr);
	if (!ret && mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL))
		ret = fail("cancel (PRE_COPY -> RUNNING): %s", strerror(errno));
	data_fd_close(fd);
	after = writer_rate(g, 1000);
	printf("    # converge off: writer %.0f, %.0f, %.0f pages/s (knob %d)\n", before,
	       during, after, HOT_RATE);
	if (!ret && (during < 0.9 * HOT_RATE || after < 0.9 * HOT_RATE ||
		     during > 1.1 * HOT_RATE || after > 1.1 * HOT_RATE))
		ret = fail("the writer ran at %.0f pages/s in pre-copy, %.0f after the cancel; its knob says %d",
			   during, after, HOT_RATE);
	settings_restore(g, &saved);
	return ret;
}

/* Pre-copy with auto-converge on until the device is throttled. */
static int throttled(struct gpu *g, int *fd, const char *what)
{
	uint64_t end = now_ms() + 20000;

	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, fd) == 0, "%s: PRE_COPY", what);
	while (metric(g, "throttle_pct") <= 0) {
		CHECK(now_ms() < end, "%s: no throttle after 20 s", what);
		TRY(drain_for(*fd, NULL, 250));
	}
	return 0;
}

/* The throttle gone (the file, and the writer at its rate again). */
static int unthrottled(struct gpu *g, const char *what)
{
	double rate;

	CHECK(metric(g, "throttle_pct") == 0, "%s: throttle_pct %lld, not 0", what,
	      metric(g, "throttle_pct"));
	rate = writer_rate(g, 1000);
	CHECK(rate >= 0.9 * HOT_RATE && rate <= 1.1 * HOT_RATE,
	      "%s: the writer runs at %.0f pages/s, its knob says %d", what, rate, HOT_RATE);
	return 0;
}

/* A cancel and a reset while throttled end the throttle at once. */
int t_converge_reset(struct gpu *g)
{
	struct saved saved;
	int fd = -1, ret;

	settings_save(g, &saved);
	ret = mig_attr_write(g, "auto_converge", "1");
	if (ret == -EOPNOTSUPP) {
		snprintf(fail_msg, sizeof(fail_msg), "the device cannot be throttled");
		return SKIP;
	}
	CHECK(ret == 0, "auto_converge=1");
	ret = hot_setup(g) || throttled(g, &fd, "cancel");
	if (!ret && mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL))
		ret = fail("cancel: %s", strerror(errno));
	data_fd_close(fd);
	fd = -1;
	if (!ret)
		ret = unthrottled(g, "after a cancel");
	if (!ret)
		ret = throttled(g, &fd, "reset");
	if (!ret && gpu_reset(g))
		ret = fail("VFIO_DEVICE_RESET: %s", strerror(errno));
	data_fd_close(fd);
	/* The reset cleared the writer's registers: program it again. */
	if (!ret)
		ret = hot_setup(g) || unthrottled(g, "after a reset");
	settings_restore(g, &saved);
	return ret ? -1 : 0;
}

/* Nonsense in each of auto-converge's files: refused, nothing changed. */
int t_converge_sysfs(struct gpu *g)
{
	/* (an empty write never reaches the file: "\n" is the empty value) */
	static const char *const bad[] = { "\n", "abc", "0", "100", "-1", "20x", "4294967316",
					   "50 50", "1e3" };
	static const char *const ro[] = { "drain_rate_bytes_per_sec",
					  "redirty_rate_bytes_per_sec", "throttle_pct",
					  "converging" };
	char before[16], after[16];
	struct saved saved;
	size_t i, j;
	int ret;

	settings_save(g, &saved);
	for (i = 0; i < ARRAY_SIZE(settings); i++) {
		CHECK(strcmp(saved.v[i], "?"), "no migration/%s", settings[i]);
		for (j = 0; j < ARRAY_SIZE(bad); j++) {
			/* 100 is the threshold's top; 0 turns auto-converge off */
			if ((i == 4 && !strcmp(bad[j], "100")) || (i == 0 && !strcmp(bad[j], "0")))
				continue;
			ret = mig_attr_write(g, settings[i], bad[j]);
			mig_attr(g, settings[i], after, sizeof(after));
			CHECK(ret == -EINVAL && !strcmp(after, saved.v[i]),
			      "migration/%s <- \"%s\": %s, it reads %s (was %s)", settings[i],
			      bad[j], ret ? strerror(-ret) : "accepted", after, saved.v[i]);
		}
	}
	for (i = 0; i < ARRAY_SIZE(ro); i++) {
		mig_attr(g, ro[i], before, sizeof(before));
		ret = mig_attr_write(g, ro[i], "1");
		mig_attr(g, ro[i], after, sizeof(after));
		CHECK(ret && !strcmp(before, after) && strcmp(before, "?"),
		      "migration/%s (read-only) <- 1: %s, %s -> %s", ro[i],
		      ret ? strerror(-ret) : "accepted", before, after);
	}
	settings_restore(g, &saved);
	return 0;
}
