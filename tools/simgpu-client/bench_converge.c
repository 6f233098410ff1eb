// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the auto-converge benchmark of one instance type
 * (`-s bench_converge -d DST SRC`, both of the same type).  This process is
 * the VMM, as QEMU is: it drains the saving fd at DRAIN_BPS (QEMU's
 * max-bandwidth; 2 MiB/s), a thread of its own (the destination's QEMU)
 * writes what was read into DST's resuming fd as it comes, and it switches
 * over when what the device still owes fits QEMU's
 * default downtime limit at that rate (300 ms: 600 KiB), or when
 * BENCH_PRECOPY_S have passed (the switchover an orchestrator forces).  The
 * workload is the auto-converge scenarios' (converge.h): the device's
 * background writer rewrites a 4 MiB VRAM working set at 8 MiB/s, four
 * times the link.  Three kinds of run, in rounds:
 *
 *  idle  the same VRAM, the writer stopped: the downtime to compare with;
 *  off   the hot workload, auto-converge off: does it converge, and the
 *        downtime of the forced switchover;
 *  on    the hot workload, auto-converge on with QEMU's steps (20 %, then
 *        +10 %, at most 99 %, threshold 50 %): the time to converge, the
 *        downtime, the throttle reached and the writer's rate in pre-copy
 *        as a share of its rate before.
 *
 * The downtime is the device's part, as bench_vram measures it: from
 * PRE_COPY_P2P to the destination's RESUMING -> STOP (stop-copy read and
 * written on the way).  Nothing is asserted on time; every run's
 * destination is checked page by page (hot_verify()) and the throttle must
 * read 0 after the stop.  One "converge_bench" line per run, then a
 * summary of medians with the ratios (BENCH_CONVERGE_REPS rounds, 3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/simgpu.h>
#include <linux/vfio.h>

#include "client.h"
#include "converge.h"
#include "vfio_mig.h"

#define BENCH_PRECOPY_S	40		/* the forced switchover */
#define DOWNTIME_LIMIT_MS	300	/* QEMU's default downtime-limit */
#define SWITCH_BYTES	((uint64_t)DRAIN_BPS * DOWNTIME_LIMIT_MS / 1000)
#define MAX_REPS	9
/* What a run's pre-copy can carry: 40 s at the link, and the first pass. */
#define PRE_CAP		(256ULL << 20)

enum kind { IDLE, OFF, ON, KINDS };

static const char *const kind_name[KINDS] = { "idle", "off", "on" };

struct result {
	int converged;
	double precopy_s;	/* PRE_COPY to the switchover */
	double down_us;		/* the device's downtime */
	/* its parts: to PRE_COPY_P2P, to STOP_COPY, read, written, dst STOP */
	double part_us[5];
	long long stop_bytes;
	unsigned int top;	/* the throttle reached, % */
	double before, during;	/* the writer's pages/s before and in pre-copy */
};

/*
 * The destination's side: what the source's side read into the blob (which
 * never moves: PRE_CAP is allocated up front) goes into the resuming fd,
 * in another thread, as the destination's QEMU would while the source's
 * goes on reading.
 */
struct forwarder {
	pthread_mutex_t lock;
	pthread_cond_t more;
	const uint8_t *p;
	size_t len;		/* what the reader published */
	bool done;
	int rfd, err;
	pthread_t thread;
};

static void *forward_thread(void *arg)
{
	struct forwarder *f = arg;
	size_t at = 0, len;
	bool done;

	for (;;) {
		pthread_mutex_lock(&f->lock);
		while (at == f->len && !f->done)
			pthread_cond_wait(&f->more, &f->lock);
		len = f->len;
		done = f->done;
		pthread_mutex_unlock(&f->lock);
		if (at < len) {
			if (!f->err && mig_write(f->rfd, f->p + at, len - at, 1 << 20))
				f->err = errno ? errno : EIO;
			at = len;
		} else if (done) {
			return NULL;
		}
	}
}

static void forward(struct forwarder *f, size_t len, bool done)
{
	pthread_mutex_lock(&f->lock);
	f->len = len;
	f->done = done;
	pthread_cond_signal(&f->more);
	pthread_mutex_unlock(&f->lock);
}

static int set_kind(struct gpu *g, enum kind k)
{
	static const char *const steps[][2] = {
		{ "throttle_initial_pct", "20" }, { "throttle_increment_pct", "10" },
		{ "throttle_max_pct", "99" }, { "throttle_trigger_threshold", "50" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(steps); i++)
		CHECK(mig_attr_write(g, steps[i][0], steps[i][1]) == 0, "%s=%s", steps[i][0],
		      steps[i][1]);
	CHECK(mig_attr_write(g, "auto_converge", k == ON ? "1" : "0") == 0, "auto_converge");
	return 0;
}

/* One migration of @src into @dst of kind @k: 0 with @r filled, or fail(). */
static int one_run(struct gpu *src, struct gpu *dst, enum kind k, struct result *r)
{
	struct blob pre = { 0 }, stop = { 0 };
	unsigned long long w0 = 0, w1 = 0;
	struct vfio_precopy_info info;
	struct forwarder f = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .more = PTHREAD_COND_INITIALIZER };
	uint64_t t0, start, end, t[6];
	int fd = -1, rfd = -1, ret = -1;
	bool forwarding = false;
	char tr[16];
	long long thr;
	int i;

	memset(r, 0, sizeof(*r));
	pre.cap = PRE_CAP;
	pre.p = malloc(pre.cap);	/* untouched until read into */
	CHECK(pre.p, "out of memory");
	TRY(set_kind(src, k));
	TRY(hot_setup(src));
	if (k == IDLE)
		wr(src, SIMGPU_REG_DIRTY_PAGES, 0);
	r->before = writer_rate(src, 1000);
	guest_follow(dst, src, src->mem);
	if (mig_set(dst, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(dst, VFIO_DEVICE_STATE_RESUMING, &rfd))
		return fail("destination: STOP, RESUMING: %s", strerror(errno));
	f.p = pre.p;
	f.rfd = rfd;
	if (pthread_create(&f.thread, NULL, forward_thread, &f)) {
		fail("no thread for the destination");
		goto out;
	}
	forwarding = true;
	stat_read(src, "dirty_pages", &w0);
	start = now_ns();
	if (mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd)) {
		fail("PRE_COPY: %s", strerror(errno));
		goto out;
	}
	end = now_ms() + BENCH_PRECOPY_S * 1000;
	for (;;) {
		if (drain_for(fd, &pre, 500))
			goto out;
		if (pre.cap - pre.len < 2 * DRAIN_BPS) {
			fail("pre-copy carried %zu bytes, more than the benchmark holds", pre.len);
			goto out;
		}
		forward(&f, pre.len, false);
		thr = metric(src, "throttle_pct");
		if (thr > (long long)r->top)
			r->top = thr;
		if (mig_precopy_info(fd, &info)) {
			fail("PRECOPY_INFO: %s", strerror(errno));
			goto out;
		}
		if (info.initial_bytes + info.dirty_bytes <= SWITCH_BYTES) {
			r->converged = 1;
			break;
		}
		if (now_ms() > end)
			break;
	}
	stat_read(src, "dirty_pages", &w1);
	r->precopy_s = (now_ns() - start) / 1e9;
	r->during = (w1 - w0) / r->precopy_s;
	/* The destination takes in all of the pre-copy before the stop. */
	forward(&f, pre.len, true);
	pthread_join(f.thread, NULL);
	forwarding = false;
	if (f.err) {
		fail("destination: writing pre-copy data: %s", strerror(f.err));
		goto out;
	}
	t0 = now_ns();
	t[0] = t0;
	if (mig_set(src, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL)) {
		fail("to PRE_COPY_P2P: %s", strerror(errno));
		goto out;
	}
	t[1] = now_ns();
	if (mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL)) {
		fail("to STOP_COPY: %s", strerror(errno));
		goto out;
	}
	t[2] = now_ns();
	if (mig_read(fd, &stop)) {
		fail("stop-copy read");
		goto out;
	}
	t[3] = now_ns();
	if (mig_write(rfd, stop.p, stop.len, 1 << 20)) {
		fail("destination: writing stop-copy: %s", strerror(errno));
		goto out;
	}
	t[4] = now_ns();
	if (mig_set(dst, VFIO_DEVICE_STATE_STOP, NULL)) {
		fail("destination: RESUMING -> STOP refused the stream: %s", strerror(errno));
		goto out;
	}
	t[5] = now_ns();
	r->down_us = (t[5] - t0) / 1e3;
	for (i = 0; i < 5; i++)
		r->part_us[i] = (t[i + 1] - t[i]) / 1e3;
	r->stop_bytes = stop.len;
	mig_attr(src, "throttle_pct", tr, sizeof(tr));
	if (strcmp(tr, "0")) {
		fail("%s: throttle_pct reads %s after the stop", kind_name[k], tr);
		goto out;
	}
	data_fd_close(rfd);
	rfd = -1;
	guest_follow(dst, src, src->mem);
	if (mig_set(dst, VFIO_DEVICE_STATE_RUNNING, NULL)) {
		fail("destination RUNNING: %s", strerror(errno));
		goto out;
	}
	wr(dst, SIMGPU_REG_DIRTY_PAGES, 0);	/* still the last sweep's stamps */
	if (hot_verify(dst, kind_name[k]))
		goto out;
	if (mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(src, VFIO_DEVICE_STATE_RUNNING, NULL)) {
		fail("source back to RUNNING: %s", strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (forwarding) {
		forward(&f, f.len, true);
		pthread_join(f.thread, NULL);
	}
	data_fd_close(fd);
	if (rfd >= 0)
		data_fd_close(rfd);
	free(pre.p);
	free(stop.p);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n values (the lower of the middle two). */
static double median(const double *v, int n)
{
	double s[MAX_REPS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return s[(n - 1) / 2];
}

int t_bench_converge(struct gpu *src)
{
	double down[KINDS][MAX_REPS], pre[KINDS][MAX_REPS], share[MAX_REPS];
	unsigned int top = 0;
	const char *e = getenv("BENCH_CONVERGE_REPS");
	int reps = e ? atoi(e) : 3, conv[KINDS] = { 0 }, n[KINDS] = { 0 }, i, ret = 0;
	struct saved saved;
	struct result r;
	struct gpu dst;
	char type[32];
	enum kind k;

	if (reps < 1 || reps > MAX_REPS)
		reps = 3;
	type_of(src, type, sizeof(type));
	settings_save(src, &saved);
	if (mig_attr_write(src, "auto_converge", "0") == -EOPNOTSUPP) {
		snprintf(fail_msg, sizeof(fail_msg), "the device cannot be throttled");
		return SKIP;
	}
	CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
	/* Rounds of idle, off, on; "off" once: its outcome does not vary. */
	for (i = 0; i < reps && !ret; i++)
		for (k = IDLE; k < KINDS && !ret; k++) {
			if (k == OFF && i)
				continue;
			ret = one_run(src, &dst, k, &r);
			if (ret)
				break;
			printf("    # converge_bench type=%s run=%s converged=%d precopy_s=%.1f down_us=%.0f stop_bytes=%lld throttle_top=%u writer_before=%.0f writer_during=%.0f p2p_us=%.0f stop_copy_us=%.0f read_us=%.0f write_us=%.0f dst_stop_us=%.0f\n",
			       type, kind_name[k], r.converged, r.precopy_s, r.down_us,
			       r.stop_bytes, r.top, r.before, r.during, r.part_us[0],
			       r.part_us[1], r.part_us[2], r.part_us[3], r.part_us[4]);
			fflush(stdout);
			down[k][n[k]] = r.down_us;
			pre[k][n[k]] = r.precopy_s;
			conv[k] += r.converged;
			if (k == ON) {
				share[n[k]] = r.before > 0 ? r.during / r.before : 0;
				top = r.top > top ? r.top : top;
			}
			n[k]++;
		}
	gpu_close(&dst);
	settings_restore(src, &saved);
	if (ret)
		return ret;
	printf("    # %s: idle downtime %.0f us (median of %d); hot, auto-converge off: converged in %d of %d runs within %d s, forced downtime %.0f us = %.2fx idle\n",
	       type, median(down[IDLE], n[IDLE]), n[IDLE], conv[OFF], n[OFF], BENCH_PRECOPY_S,
	       median(down[OFF], n[OFF]), median(down[OFF], n[OFF]) / median(down[IDLE], n[IDLE]));
	printf("    # %s: hot, auto-converge on: converged in %d of %d runs, in %.1f s (median), downtime %.0f us = %.2fx idle (goal <= 2: %s), throttle up to %u%%, writer at %.2f of its rate before\n",
	       type, conv[ON], n[ON], median(pre[ON], n[ON]), median(down[ON], n[ON]),
	       median(down[ON], n[ON]) / median(down[IDLE], n[IDLE]),
	       median(down[ON], n[ON]) <= 2 * median(down[IDLE], n[IDLE]) ? "met" : "NOT MET",
	       top, median(share, n[ON]));
	return 0;
}
