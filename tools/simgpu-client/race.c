// SPDX-License-Identifier: GPL-2.0
/*
 * The race scenario: threads that interleave, on one device, everything a
 * VMM, a guest and an operator can do at once (issue 13, "Races"):
 *
 *   state:  migration state changes to random states (the VFIO core takes
 *           multi-arc paths), publishing each new data fd;
 *   data:   reads of a saving fd, writes of a real or a broken stream to a
 *           resuming fd, PRECOPY_INFO, poll(), on a dup of the current fd;
 *   close:  closes the published data fd early;
 *   reset:  VFIO_DEVICE_RESET;
 *   status: migration/status and every metric file, GET of the state,
 *           MIG_DATA_SIZE;
 *   log:    DMA logging start, report, stop (where the kernel has it);
 *   guest:  the guest's own work: kernels, fills, invalidations, nonsense
 *           register writes, and setting the GPU up again after a reset.
 *
 * RACE_SECONDS (10 unless set) of that, under the debug kernel's lockdep
 * and KASAN.  What must hold: no errno that means the kernel lost track of
 * an object (EFAULT, EBADF, ENOTTY), every GET of the state a valid state,
 * every thread making progress and stopping when asked (no hang); then a
 * device reset leaves the device RUNNING, not quarantined, and a migration
 * to the second device carries a kernel's exact result.  Last, the device
 * is closed while a thread still reads its data fd: the reads end with an
 * error, nothing else.
 */
#define _GNU_SOURCE	/* pthread_tryjoin_np() */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

enum { T_STATE, T_DATA, T_CLOSE, T_RESET, T_STATUS, T_LOG, T_GUEST, NR_T };

static const char *const race_names[NR_T] = {
	"state", "data", "close", "reset", "status", "log", "guest",
};

struct race {
	struct gpu *g;
	bool stop;			/* __atomic */
	pthread_mutex_t lock;		/* guards fd and resuming */
	int fd;				/* the published data fd, or -1 */
	bool resuming;			/* it came from RESUMING */
	const struct blob *stream;	/* a whole stream of this device */
	long ops[NR_T];
	long errs[NR_T];
	char bad[256];			/* the first forbidden outcome */
};

static bool race_running(struct race *r)
{
	return !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
}

static void race_bad(struct race *r, int t, const char *what, int err)
{
	pthread_mutex_lock(&r->lock);
	if (!r->bad[0])
		snprintf(r->bad, sizeof(r->bad), "%s thread: %s: %s", race_names[t],
			 what, strerror(err));
	pthread_mutex_unlock(&r->lock);
}

/* Count an outcome; EFAULT, EBADF and ENOTTY are never right here. */
static void race_count(struct race *r, int t, const char *what, int ret)
{
	int err = ret < 0 ? -ret : 0;

	r->ops[t]++;
	if (!err)
		return;
	r->errs[t]++;
	if (err == EFAULT || err == EBADF || err == ENOTTY)
		race_bad(r, t, what, err);
}

static void race_nap(uint32_t max_us)
{
	usleep(rnd() % max_us);
}

/* Replace the published fd with @fd (-1: none). */
static void race_publish(struct race *r, int fd, bool resuming)
{
	int old;

	pthread_mutex_lock(&r->lock);
	old = r->fd;
	r->fd = fd;
	r->resuming = resuming;
	pthread_mutex_unlock(&r->lock);
	if (old >= 0)
		close(old);
}

/* A dup of the published fd, or -1. */
static int race_take(struct race *r, bool *resuming)
{
	int fd = -1;

	pthread_mutex_lock(&r->lock);
	if (r->fd >= 0)
		fd = dup(r->fd);
	*resuming = r->resuming;
	pthread_mutex_unlock(&r->lock);
	return fd;
}

static int race_set(struct gpu *g, uint32_t state, int *fd)
{
	struct vfio_device_feature_mig_state ms = { .device_state = state,
						    .data_fd = -1 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_SET |
				      VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			      &ms, sizeof(ms));

	*fd = ret ? -1 : ms.data_fd;
	return ret;
}

static void *race_state(void *p)
{
	static const uint32_t states[] = {
		VFIO_DEVICE_STATE_RUNNING, VFIO_DEVICE_STATE_PRE_COPY,
		VFIO_DEVICE_STATE_PRE_COPY_P2P, VFIO_DEVICE_STATE_RUNNING_P2P,
		VFIO_DEVICE_STATE_STOP, VFIO_DEVICE_STATE_STOP_COPY,
		VFIO_DEVICE_STATE_RESUMING, VFIO_DEVICE_STATE_RUNNING,
	};
	struct race *r = p;

	while (race_running(r)) {
		uint32_t s = states[rnd() % ARRAY_SIZE(states)];
		int fd, ret = race_set(r->g, s, &fd);

		race_count(r, T_STATE, "SET MIG_DEVICE_STATE", ret);
		if (!ret && fd >= 0)
			race_publish(r, fd, s == VFIO_DEVICE_STATE_RESUMING);
		race_nap(20000);
	}
	return NULL;
}

static void race_data_one(struct race *r, int fd, bool resuming, uint8_t *buf,
			  size_t len)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int err;

	switch (rnd() % 4) {
	case 0:
		if (resuming) {
			/* A piece of a real stream, or garbage. */
			const struct blob *s = r->stream;
			size_t off = rnd() % s->len, k = 1 + rnd() % len;

			if (rnd() % 2) {
				if (k > s->len - off)
					k = s->len - off;
				memcpy(buf, s->p + off, k);
			} else {
				fill_random(buf, k);
			}
			n = write(fd, buf, k);
		} else {
			n = read(fd, buf, 1 + rnd() % len);
		}
		race_count(r, T_DATA, resuming ? "write" : "read", n < 0 ? -errno : 0);
		break;
	case 1:
		n = ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info);
		/*
		 * A saving fd refuses it outside PRE_COPY (EINVAL); a resuming
		 * fd has no ioctls at all (ENOTTY, and only there).
		 */
		err = n < 0 ? errno : 0;
		if (err == ENOTTY && resuming)
			err = EINVAL;
		race_count(r, T_DATA, "PRECOPY_INFO", -err);
		break;
	case 2:
		n = poll(&pfd, 1, rnd() % 20);
		race_count(r, T_DATA, "poll", n < 0 ? -errno : 0);
		break;
	default:
		if (!resuming) {
			/* The whole of it, as a VMM does at stop-copy. */
			do {
				n = read(fd, buf, len);
			} while (n > 0 && race_running(r));
			race_count(r, T_DATA, "read to the end", n < 0 ? -errno : 0);
		} else {
			n = write(fd, r->stream->p, r->stream->len);
			race_count(r, T_DATA, "write a whole stream", n < 0 ? -errno : 0);
		}
		break;
	}
}

static void *race_data(void *p)
{
	const size_t len = 256 << 10;
	struct race *r = p;
	uint8_t *buf = malloc(len);

	while (buf && race_running(r)) {
		bool resuming;
		int fd = race_take(r, &resuming), i;

		if (fd < 0) {
			race_nap(2000);
			continue;
		}
		for (i = 0; i < 8 && race_running(r); i++)
			race_data_one(r, fd, resuming, buf, len);
		close(fd);
	}
	free(buf);
	return NULL;
}

static void *race_close(void *p)
{
	struct race *r = p;

	while (race_running(r)) {
		race_nap(30000);
		race_publish(r, -1, false);
		r->ops[T_CLOSE]++;
	}
	return NULL;
}

static void *race_reset(void *p)
{
	struct race *r = p;

	while (race_running(r)) {
		race_nap(80000);
		race_count(r, T_RESET, "VFIO_DEVICE_RESET",
			   gpu_reset(r->g) ? -errno : 0);
	}
	return NULL;
}

static void *race_status(void *p)
{
	static const char *const files[] = {
		"migration/status", "migration/state", "migration/remaining_bytes",
		"migration/stopcopy_estimate_bytes", "migration/dirty_rate_bytes_per_sec",
		"migration/precopy_rounds", "migration/last_error", "migration/migratable",
		"migration/dirty_tracking", "migration/dma_log_reports", "migration/source",
	};
	struct race *r = p;
	char v[512];

	while (race_running(r)) {
		struct vfio_device_feature_mig_data_size ds = { 0 };
		uint32_t s;
		int ret;

		ret = read_attr(r->g->name, files[rnd() % ARRAY_SIZE(files)], v, sizeof(v));
		race_count(r, T_STATUS, "a migration/ file", ret ? -errno : 0);
		ret = mig_get(r->g, &s);
		race_count(r, T_STATUS, "GET MIG_DEVICE_STATE", ret);
		if (!ret && s > VFIO_DEVICE_STATE_PRE_COPY_P2P)
			race_bad(r, T_STATUS, "GET returned no state", EINVAL);
		ret = gpu_feature(r->g, VFIO_DEVICE_FEATURE_GET |
					VFIO_DEVICE_FEATURE_MIG_DATA_SIZE, &ds, sizeof(ds));
		race_count(r, T_STATUS, "MIG_DATA_SIZE", ret);
		race_nap(5000);
	}
	return NULL;
}

static void *race_log(void *p)
{
	struct race *r = p;
	uint64_t *bm = malloc(BM_WORDS * 8);

	while (bm && race_running(r)) {
		int i;

		race_count(r, T_LOG, "DMA_LOGGING_START",
			   dma_log_start(r->g, GUEST_IOVA, guest_size));
		for (i = 0; i < 4 && race_running(r); i++) {
			long n = report_guest(r->g, bm);

			race_count(r, T_LOG, "DMA_LOGGING_REPORT", n < 0 ? (int)n : 0);
			race_nap(10000);
		}
		race_count(r, T_LOG, "DMA_LOGGING_STOP", dma_log_stop(r->g));
	}
	free(bm);
	return NULL;
}

/* The guest's registers again after a reset: the same tables and rings. */
static void race_guest_setup(struct gpu *g)
{
	uint32_t i;

	wr(g, SIMGPU_REG_PT_ROOT_LO, (uint32_t)g->pt_root);
	wr(g, SIMGPU_REG_PT_ROOT_HI, g->pt_root >> 32);
	for (i = 0; i < g->nr_queues; i++) {
		struct gpu_queue *q = &g->q[i];

		qwr(g, i, SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_RESET);
		q->tail = 0;
		qwr(g, i, SIMGPU_QREG_RING_LO, (uint32_t)q->ring_iova);
		qwr(g, i, SIMGPU_QREG_RING_HI, q->ring_iova >> 32);
		qwr(g, i, SIMGPU_QREG_RING_SIZE, q->size);
		qwr(g, i, SIMGPU_QREG_CONTROL, SIMGPU_QCTRL_ENABLE);
	}
	wr(g, SIMGPU_REG_INT_MASK, 0xffffffff);
	wr(g, SIMGPU_REG_CONTROL, SIMGPU_CTRL_ENABLE);
}

static void *race_guest(void *p)
{
	struct race *r = p;
	struct gpu *g = r->g;
	uint32_t seq = 1;

	while (race_running(r)) {
		uint32_t q = rnd() % 2;

		if (!(rd(g, SIMGPU_REG_CONTROL) & SIMGPU_CTRL_ENABLE) ||
		    qrd(g, q, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_ERROR)
			race_guest_setup(g);
		/* Never more than half a ring in flight. */
		if (g->q[q].tail - qrd(g, q, SIMGPU_QREG_HEAD) < g->q[q].size / 2) {
			switch (rnd() % 4) {
			case 0:
				gpu_submit(g, q, SIMGPU_OP_KERNEL, 0, VA_SYS, 4096, 20, rnd());
				break;
			case 1:
				gpu_submit(g, q, SIMGPU_OP_FILL, 0, VA_VRAM + (rnd() % 64) * 4096,
					   4096, rnd(), 0);
				break;
			case 2:
				gpu_submit(g, q, SIMGPU_OP_COPY, 0, VA_VRAM, VA_SYS, 8192, 0);
				break;
			default:
				gpu_submit(g, q, SIMGPU_OP_FENCE, SIMGPU_CMD_F_IRQ,
					   VA_SYS + (1 << 20), seq, 0, 0);
				break;
			}
		}
		if (rnd() % 8 == 0)
			wr(g, SIMGPU_REG_INVAL_REQ, seq++);
		if (rnd() % 32 == 0)	/* nonsense in a queue register */
			qwr(g, rnd() % g->nr_queues, SIMGPU_QREG_RING_SIZE, rnd());
		r->ops[T_GUEST]++;
		race_nap(3000);
	}
	return NULL;
}

static void *(*const race_fns[NR_T])(void *) = {
	race_state, race_data, race_close, race_reset, race_status, race_log,
	race_guest,
};

/* A whole stream of @g, stopped, for the data thread to write back. */
static int race_stream(struct gpu *g, struct blob *s)
{
	int fd = -1, ret;

	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0 &&
	      mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, &fd) == 0, "STOP_COPY");
	ret = mig_read(fd, s);
	data_fd_close(fd);
	CHECK(ret == 0 && s->len, "the stop-copy stream: %s", strerror(-ret));
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0 &&
	      mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "back to RUNNING");
	return 0;
}

/* After the race: a reset gives a working device that migrates exactly. */
static int race_after(struct gpu *a)
{
	const uint32_t words = 1024, iters = 300, key = 0x7ace;
	uint32_t expect[1024], *kbuf, i, it, s;
	char v[256];
	struct gpu b;
	uint64_t kiova;

	dma_log_stop(a);
	CHECK(gpu_reset(a) == 0, "reset after the race: %s", strerror(errno));
	CHECK(mig_get(a, &s) == 0 && s == VFIO_DEVICE_STATE_RUNNING,
	      "state after the reset: %u", s);
	CHECK(read_attr(a->name, "migration/migratable", v, sizeof(v)) == 0,
	      "migration/migratable");
	CHECK(v[0] == '1', "not migratable after the race: %s", v);
	a->pt_root = 0;
	gpu_setup(a, 16);
	kbuf = sysbuf(a, VA_SYS + (8 << 20), words * 4, &kiova);
	fill_random(kbuf, words * 4);
	memcpy(expect, kbuf, words * 4);
	for (it = 0; it < iters; it++)
		for (i = 0; i < words; i++)
			expect[i] = kernel_word(expect[i], key, it);
	gpu_submit(a, 0, SIMGPU_OP_KERNEL, 0, VA_SYS + (8 << 20), words * 4, iters, key);
	CHECK(gpu_open(&b, dst_name) == 0, "open second instance");
	TRY(migrate_trip(a, &b, 0));
	CHECK(gpu_wait_idle(&b, 0, 120000) == 0, "the kernel did not finish after migrating");
	kbuf = gptr(&b, kiova);
	for (i = 0; i < words; i++)
		CHECK(kbuf[i] == expect[i], "word %u wrong after the race and a migration", i);
	gpu_close(&b);
	return 0;
}

/* The device closed while a thread reads its data fd. */
struct closer {
	int fd;
	long reads;
	int err;
};

static void *race_reader(void *p)
{
	struct closer *c = p;
	uint8_t buf[4096];

	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof(buf));

		if (n < 0 && errno == ENOMSG) {
			usleep(1000);
			continue;
		}
		if (n <= 0) {
			c->err = n < 0 ? errno : 0;
			return NULL;
		}
		c->reads++;
	}
}

static int race_close_device(struct gpu *a)
{
	struct closer c = { .fd = -1 };
	pthread_t t;
	char name[64];

	snprintf(name, sizeof(name), "%s", a->name);
	CHECK(mig_set(a, VFIO_DEVICE_STATE_PRE_COPY, &c.fd) == 0, "PRE_COPY");
	CHECK(pthread_create(&t, NULL, race_reader, &c) == 0, "pthread_create");
	usleep(50000);
	gpu_close(a);
	pthread_join(t, NULL);
	data_fd_close(c.fd);
	CHECK(c.err == ENODEV, "a read after the device closed: %s (%ld reads before)",
	      c.err ? strerror(c.err) : "end of stream", c.reads);
	CHECK(gpu_open(a, name) == 0, "reopen after closing mid-read");
	return 0;
}

int t_race(struct gpu *a)
{
	struct race r = { .g = a, .fd = -1 };
	const char *env = getenv("RACE_SECONDS");
	int secs = env ? atoi(env) : 10, logging, i;
	struct blob s = { 0 };
	pthread_t t[NR_T];
	bool started[NR_T] = { false };
	uint64_t end;

	logging = device_tracking(a);
	CHECK(logging >= 0, "cannot read migration/dirty_tracking");
	gpu_setup(a, 64);
	sysbuf(a, VA_SYS, 2 << 20, NULL);
	gpu_map_range(a, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	TRY(race_stream(a, &s));
	r.stream = &s;
	pthread_mutex_init(&r.lock, NULL);
	for (i = 0; i < NR_T; i++) {
		if (i == T_LOG && !logging)
			continue;
		CHECK(pthread_create(&t[i], NULL, race_fns[i], &r) == 0, "pthread_create");
		started[i] = true;
	}
	sleep(secs);
	__atomic_store_n(&r.stop, true, __ATOMIC_RELEASE);
	/* Every thread stops within a minute, or something in the kernel hangs. */
	end = now_ms() + 60000;
	for (i = 0; i < NR_T; i++) {
		if (!started[i])
			continue;
		while (pthread_tryjoin_np(t[i], NULL) == EBUSY) {
			CHECK(now_ms() < end, "the %s thread did not stop within 60 s",
			      race_names[i]);
			usleep(10000);
		}
	}
	race_publish(&r, -1, false);
	pthread_mutex_destroy(&r.lock);
	free(s.p);
	printf("    # race: %d s:", secs);
	for (i = 0; i < NR_T; i++)
		if (started[i])
			printf(" %s %ld (%ld refused)", race_names[i], r.ops[i], r.errs[i]);
	printf("\n");
	CHECK(!r.bad[0], "%s", r.bad);
	for (i = 0; i < NR_T; i++)
		CHECK(!started[i] || r.ops[i] > 0, "the %s thread made no progress",
		      race_names[i]);
	TRY(race_after(a));
	TRY(race_close_device(a));
	return 0;
}
