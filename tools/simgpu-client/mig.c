// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the VFIO migration uAPI from the VMM's side, and the
 * scenarios that migrate a device with work in flight: pre-copy and
 * stop-copy with byte-exact results, an incompatible destination, stops
 * that must fail, reset and close in the middle, twenty round trips,
 * quarantine.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/gpumig_stream.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "client.h"

/* ---- migration ---------------------------------------------------------- */

const char *dst_name;

int mig_set(struct gpu *g, uint32_t state, int *data_fd)
{
	struct vfio_device_feature_mig_state ms = { .device_state = state,
						    .data_fd = -1 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_SET |
				      VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			      &ms, sizeof(ms));

	if (ret)
		return ret;
	if (data_fd) {
		*data_fd = ms.data_fd;
		data_fd_track(ms.data_fd);	/* closed after the scenario if not before */
	} else if (ms.data_fd >= 0) {
		close(ms.data_fd);
	}
	return 0;
}

/* The device's migration state (GET): 0 or -errno. */
int mig_get(struct gpu *g, uint32_t *state)
{
	struct vfio_device_feature_mig_state ms = { 0 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				      VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			      &ms, sizeof(ms));

	*state = ms.device_state;
	return ret;
}

int64_t mig_data_size(struct gpu *g)
{
	struct vfio_device_feature_mig_data_size ds = { 0 };
	int ret = gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				      VFIO_DEVICE_FEATURE_MIG_DATA_SIZE,
			      &ds, sizeof(ds));

	return ret ? ret : (int64_t)ds.stop_copy_length;
}

/* Read until EOF (0) or ENOMSG; returns the last read()'s result. */
int mig_read(int fd, struct blob *b)
{
	for (;;) {
		ssize_t n;

		if (b->cap - b->len < (1 << 20)) {
			b->cap = b->cap * 2 + (4 << 20);
			b->p = realloc(b->p, b->cap);
		}
		n = read(fd, b->p + b->len,
			 1 << 20); /* QEMU reads at most 1 MiB */
		if (n <= 0)
			return n < 0 ? -errno : 0;
		b->len += n;
	}
}

int mig_write(int fd, const uint8_t *p, size_t len, size_t piece)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, p + off,
				  len - off < piece ? len - off : piece);

		if (n < 0)
			return -errno;
		off += n;
	}
	return 0;
}

/*
 * mig_write() from memory this process has not touched yet: a memfd's
 * pages, mapped afresh, so that the kernel's copy of VRAM data straight
 * into VRAM (with page faults disabled) ends short at each page it finds
 * unmapped and the rest of that chunk goes through the engine's buffer,
 * where the page faults in: the path a VMM's freshly received buffer
 * takes.
 */
static int mig_write_untouched(int fd, const uint8_t *p, size_t len, size_t piece)
{
	size_t off = 0;
	uint8_t *m;
	int mfd, ret;

	if (!len)
		return 0;
	mfd = memfd_create("gpumig-stream", MFD_CLOEXEC);
	if (mfd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(mfd, p + off, len - off);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			close(mfd);
			return ret;
		}
		off += n;
	}
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, mfd, 0);
	ret = m == MAP_FAILED ? -errno : 0;
	close(mfd);
	if (ret)
		return ret;
	ret = mig_write(fd, m, len, piece);
	munmap(m, len);
	return ret;
}

#define MIG_WORDS (32 * 1024)
#define MIG_ITERS \
	1000 /* at 3 ms a step: seconds, so it is still running at the stop */
#define MIG_KEY 0x600dcafe

/* A workload with a kernel in flight, copies through VRAM and fences. */
static void mig_workload(struct gpu *g, uint32_t **kbuf, uint32_t **expect,
			 uint8_t **src)
{
	uint32_t i, it;

	gpu_setup(g, 64);
	*kbuf = sysbuf(g, VA_SYS, MIG_WORDS * 4, NULL);
	sysbuf(g, VA_SYS + (1 << 20), 4096, NULL); /* fences */
	*src = sysbuf(g, VA_SYS + (2 << 20), 1 << 20, NULL);
	sysbuf(g, VA_SYS + (4 << 20), 1 << 20, NULL); /* copy target */
	gpu_map_range(g, VA_VRAM, 0, 4 << 20,
		      SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	fill_random(*kbuf, MIG_WORDS * 4);
	fill_random(*src, 1 << 20);
	*expect = malloc(MIG_WORDS * 4);
	memcpy(*expect, *kbuf, MIG_WORDS * 4);
	for (it = 0; it < MIG_ITERS; it++)
		for (i = 0; i < MIG_WORDS; i++)
			(*expect)[i] = kernel_word((*expect)[i], MIG_KEY, it);
	knob_set(g, "kernel_step_us", "3000");
	gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, MIG_WORDS * 4, MIG_ITERS,
		   MIG_KEY);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, SIMGPU_CMD_F_IRQ, VA_SYS + (1 << 20),
		   0xf00d, 0, 0);
	gpu_submit(g, 1, SIMGPU_OP_FILL, 0, VA_VRAM + (2 << 20), 1 << 20,
		   0x12345678, 0);
	gpu_submit(g, 1, SIMGPU_OP_COPY, 0, VA_VRAM, VA_SYS + (2 << 20),
		   1 << 20, 0);
	gpu_submit(g, 1, SIMGPU_OP_FENCE, 0, VA_SYS + (1 << 20) + 8, 0xbeef, 0,
		   0);
}

/*
 * Pre-copy while the device runs: read rounds until initial_bytes is 0,
 * as QEMU does; all of it lands in @pre.
 */
static int migrate_precopy(struct gpu *src, int fd, struct blob *pre, int *rounds)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };
	uint64_t first_initial;
	int ret;

	CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0,
	      "PRECOPY_INFO: %s", strerror(errno));
	first_initial = info.initial_bytes;
	CHECK(first_initial > 0, "initial_bytes is 0 at the start");
	*rounds = 0;
	do {
		ret = mig_read(fd, pre);
		CHECK(ret == -ENOMSG, "pre-copy read ended with %d, not ENOMSG",
		      ret);
		CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0,
		      "PRECOPY_INFO");
		(*rounds)++;
	} while (info.initial_bytes && *rounds < 50);
	CHECK(info.initial_bytes == 0, "initial_bytes never reached 0");
	CHECK(pre->len >= first_initial,
	      "read %zu bytes, initial_bytes said %llu", pre->len,
	      (unsigned long long)first_initial);
	return 0;
}

/* Stop-copy: the rest, which MIG_DATA_SIZE estimated within 3 blocks. */
static int migrate_stopcopy(struct gpu *src, int fd, const struct blob *pre,
			    struct blob *stop)
{
	const int64_t slack = 3 * (GPUMIG_VRAM_CHUNK + sizeof(struct gpumig_sec_hdr) +
				   sizeof(struct gpumig_wire_vram));
	bool untracked;
	int64_t est;
	int ret;

	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) == 0,
	      "PRE_COPY_P2P");
	est = mig_data_size(src);
	CHECK(est > 0, "MIG_DATA_SIZE: %lld", (long long)est);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0,
	      "STOP_COPY");
	CHECK(qrd(src, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "the kernel finished before the stop: nothing in flight to migrate");
	ret = mig_read(fd, stop);
	CHECK(ret == 0, "stop-copy read: %d", ret);
	/*
	 * A device without VRAM dirty tracking sends only its head before
	 * the stop, all of VRAM at it, and counts every block as data in
	 * MIG_DATA_SIZE (an upper bound: a block that reads zero goes as a
	 * range); one that tracks sent VRAM in pre-copy and estimates
	 * within 3 blocks.
	 */
	untracked = pre->len < 4096;
	CHECK(untracked || stop->len < pre->len,
	      "stop-copy (%zu) not smaller than pre-copy (%zu)", stop->len,
	      pre->len);
	CHECK((int64_t)stop->len <= est + slack &&
	      (untracked || (int64_t)stop->len + slack >= est),
	      "MIG_DATA_SIZE %lld, STOP_COPY produced %zu", (long long)est,
	      stop->len);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	printf("    # migrate: %zu pre-copy bytes, %zu stop-copy bytes (estimate %lld)\n",
	       pre->len, stop->len, (long long)est);
	return 0;
}

/*
 * The destination: the VMM copied guest memory @mem (and its own view of
 * it), then the device state goes in and the device runs.
 */
/*
 * The VMM's part of a migration, for a client that plays both sides: the
 * guest memory @mem of @src (its IOVA layout, page tables, rings) becomes
 * @dst's, as RAM migration would make it.
 */
void guest_follow(struct gpu *dst, const struct gpu *src, const uint8_t *mem)
{
	uint32_t i;

	memcpy(dst->mem, mem, guest_size);
	dst->next = src->next;
	dst->pt_root = src->pt_root;
	for (i = 0; i < src->nr_queues; i++) {
		dst->q[i] = src->q[i];
		dst->q[i].ring = gptr(dst, src->q[i].ring_iova);
	}
}

int migrate_into(struct gpu *dst, const struct gpu *src, const uint8_t *mem,
		 const struct blob *pre, const struct blob *stop)
{
	int rfd = -1;

	guest_follow(dst, src, mem);
	CHECK(mig_set(dst, VFIO_DEVICE_STATE_STOP, NULL) == 0, "dst STOP");
	CHECK(mig_set(dst, VFIO_DEVICE_STATE_RESUMING, &rfd) == 0,
	      "dst RESUMING");
	CHECK(mig_write_untouched(rfd, pre->p, pre->len, 1 << 20) == 0,
	      "write pre-copy data (from pages not yet mapped)");
	CHECK(mig_write(rfd, stop->p, stop->len, 77777) == 0,
	      "write stop-copy data");
	data_fd_close(rfd);
	CHECK(mig_set(dst, VFIO_DEVICE_STATE_STOP, NULL) == 0,
	      "dst RESUMING -> STOP: %s", strerror(errno));
	CHECK(mig_set(dst, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
	      "dst RUNNING");
	return 0;
}

/* A number from a device's migration/status line ("key=value ..."). */
long long status_value(const char *name, const char *key)
{
	char st[512], pat[64];
	long long v = -1;
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	if (read_attr(name, "migration/status", st, sizeof(st)))
		return -1;
	p = strstr(st, pat);
	if (!p || sscanf(p + strlen(pat), "%lld", &v) != 1)
		return -1;
	return v;
}

/* What the devices say they saw is what the VMM read and wrote. */
static int migrate_counters(struct gpu *src, const struct blob *pre,
			    const struct blob *stop, int rounds)
{
	long long r = status_value(src->name, "precopy_rounds");
	long long pb = status_value(src->name, "precopy_bytes");
	long long sb = status_value(src->name, "stopcopy_bytes");
	long long rb = status_value(dst_name, "resumed_bytes");
	char st[512] = "";

	CHECK(r >= 1 && r <= rounds && pb == (long long)pre->len &&
	      sb == (long long)stop->len,
	      "source counted %lld rounds, %lld + %lld bytes; read %d, %zu + %zu",
	      r, pb, sb, rounds, pre->len, stop->len);
	CHECK(rb == (long long)(pre->len + stop->len),
	      "destination counted %lld bytes, %zu written", rb,
	      pre->len + stop->len);
	/* The stream named its producer, this release; the destination says so. */
	read_attr(dst_name, "migration/status", st, sizeof(st));
	CHECK(strstr(st, " source=gpumig/" GPUMIG_VERSION),
	      "the destination does not name the stream's producer gpumig/%s: %s",
	      GPUMIG_VERSION, st);
	return 0;
}

/* The work of mig_workload() finishes on @dst with exactly the right results. */
static int migrate_results(struct gpu *dst, const struct gpu *src, const uint32_t *kbuf,
			   const uint32_t *expect, const uint8_t *data)
{
	const uint32_t *dk = gptr(dst, GUEST_IOVA + ((const uint8_t *)kbuf - src->mem));
	const uint8_t *srcdata = gptr(dst, GUEST_IOVA + (data - src->mem));
	uint8_t *dout;
	size_t i;

	CHECK(gpu_wait_idle(dst, 0, 30000) == 0,
	      "kernel did not finish on the destination");
	CHECK(gpu_wait_idle(dst, 1, 30000) == 0,
	      "queue 1 did not finish on the destination");
	for (i = 0; i < MIG_WORDS; i++)
		CHECK(dk[i] == expect[i],
		      "kernel word %zu: 0x%x, expected 0x%x", i, dk[i],
		      expect[i]);
	/* Fences and the VRAM round trip, read back through the device. */
	dout = sysbuf(dst, VA_SYS + (8 << 20), 1 << 20, NULL);
	gpu_submit(dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20), VA_VRAM, 1 << 20, 0);
	CHECK(gpu_wait_idle(dst, 1, 30000) == 0, "read back VRAM");
	CHECK(!memcmp(dout, srcdata, 1 << 20), "VRAM contents differ after migration");
	gpu_submit(dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20), VA_VRAM + (2 << 20),
		   4096, 0);
	CHECK(gpu_wait_idle(dst, 1, 30000) == 0, "read back fill");
	CHECK(*(uint32_t *)dout == 0x12345678, "fill lost in migration");
	CHECK(qrd(dst, 0, SIMGPU_QREG_FENCE_LO) == 0xf00d,
	      "queue 0 fence 0x%x", qrd(dst, 0, SIMGPU_QREG_FENCE_LO));
	return 0;
}

/* Live migration with a kernel in flight; the destination finishes it exactly. */
int t_migrate(struct gpu *src)
{
	struct blob pre = { 0 }, stop = { 0 };
	uint32_t *kbuf, *expect;
	int fd = -1, rounds = 0, ret;
	struct gpu dst;
	uint8_t *data;

	mig_workload(src, &kbuf, &expect, &data);
	usleep(100000);
	CHECK(qrd(src, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "kernel not in flight");
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0 && fd >= 0,
	      "PRE_COPY");
	ret = migrate_precopy(src, fd, &pre, &rounds);
	if (!ret)
		ret = migrate_stopcopy(src, fd, &pre, &stop);
	data_fd_close(fd);
	if (!ret) {
		CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
		ret = migrate_into(&dst, src, src->mem, &pre, &stop);
		if (!ret)
			ret = migrate_counters(src, &pre, &stop, rounds);
		if (!ret)
			ret = migrate_results(&dst, src, kbuf, expect, data);
		gpu_close(&dst);
	}
	free(expect);
	free(pre.p);
	free(stop.p);
	return ret;
}

int t_incompatible(struct gpu *src)
{
	struct blob pre = { 0 };
	struct gpu dst;
	char status[256];
	int fd = -1, rfd = -1, ret;

	gpu_setup(src, 16);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(mig_read(fd, &pre) == -ENOMSG, "pre-copy read");
	CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_STOP, NULL) == 0, "dst STOP");
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RESUMING, &rfd) == 0,
	      "dst RESUMING");
	ret = mig_write(rfd, pre.p, pre.len, 1 << 20);
	CHECK(ret == -EOPNOTSUPP, "incompatible stream accepted (%d)", ret);
	CHECK(read_attr(dst_name, "migration/status", status, sizeof(status)) ==
		      0 &&
	      strstr(status, "mismatch"),
	      "status does not name the mismatch: %s", status);
	CHECK(mig_set(&dst, VFIO_DEVICE_STATE_RUNNING, NULL) < 0,
	      "destination ran a refused stream");
	data_fd_close(rfd);
	gpu_close(&dst);
	/* The source never stopped: back to RUNNING, still working. */
	CHECK(mig_set(src, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
	      "source back to RUNNING");
	data_fd_close(fd);
	sysbuf(src, VA_SYS, 4096, NULL);
	gpu_submit(src, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 5, 0, 0);
	CHECK(gpu_wait_idle(src, 0, TMO) == 0, "source stopped working");
	free(pre.p);
	return 0;
}

/*
 * Each fault knob makes the stop fail cleanly: lost acknowledgments, an
 * acknowledgment later than the 1 s bound, a kernel that cannot be
 * preempted and outlasts the 2 s drain.  The source keeps running.
 */
int t_stop_fails(struct gpu *g)
{
	static const struct {
		const char *knob, *val, *reset;
		int err;
	} faults[] = {
		{ "ack_drop", "1", "0", -ETIMEDOUT },
		{ "ack_delay_ms", "1500", "0", -ETIMEDOUT },
		{ "preempt", "0", "1", -EBUSY },
	};
	uint64_t *f;
	size_t i;
	int ret;

	gpu_setup(g, 16);
	f = sysbuf(g, VA_SYS, 4096, NULL);
	sysbuf(g, VA_SYS + (1 << 20), 4096, NULL);
	for (i = 0; i < ARRAY_SIZE(faults); i++) {
		knob_set(g, faults[i].knob, faults[i].val);
		if (faults[i].err == -EBUSY) {
			/* 400 iterations at 10 ms: 4 s, longer than the drain bound. */
			knob_set(g, "kernel_step_us", "10000");
			gpu_submit(g, 0, SIMGPU_OP_KERNEL, 0,
				   VA_SYS + (1 << 20), 64, 400, 1);
			usleep(50000);
		}
		ret = mig_set(g, VFIO_DEVICE_STATE_STOP, NULL);
		knob_set(g, faults[i].knob, faults[i].reset);
		knob_set(g, "kernel_step_us", "0");
		CHECK(ret == faults[i].err,
		      "%s=%s: STOP returned %d, expected %d", faults[i].knob,
		      faults[i].val, ret, faults[i].err);
		CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
		      "back to RUNNING");
		gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 6 + i, 0, 0);
		CHECK(gpu_wait_idle(g, 0, 60000) == 0 && f[0] == 6 + i,
		      "%s: device stopped working", faults[i].knob);
	}
	return 0;
}

/* VFIO_DEVICE_RESET in the middle of pre-copy: fd ends, state RUNNING. */
int t_reset_precopy(struct gpu *g)
{
	struct vfio_device_feature_mig_state ms = { 0 };
	struct blob b = { 0 };
	uint64_t *f;
	int fd = -1;

	gpu_setup(g, 16);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	{
		uint8_t first[64];

		CHECK(read(fd, first, sizeof(first)) == sizeof(first),
		      "first pre-copy bytes");
	}
	CHECK(gpu_reset(g) == 0, "reset");
	CHECK(gpu_feature(g, VFIO_DEVICE_FEATURE_GET |
				     VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE,
			  &ms, sizeof(ms)) == 0,
	      "get state");
	CHECK(ms.device_state == VFIO_DEVICE_STATE_RUNNING,
	      "state %u after reset", ms.device_state);
	CHECK(mig_read(fd, &b) == -ENODEV,
	      "data fd still readable after reset");
	data_fd_close(fd);
	free(b.p);
	/* A fresh migration can start, and the device works. */
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0,
	      "PRE_COPY again");
	data_fd_close(fd); /* closing the fd early ends nothing but the fd */
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	g->pt_root = 0;
	gpu_setup(g, 16);
	f = sysbuf(g, VA_SYS, 4096, NULL);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 9, 0, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0 && f[0] == 9,
	      "device unusable after reset");
	return 0;
}

struct poller {
	int fd;
	int ret;
	short revents;
};

static void *poller_fn(void *p)
{
	struct poller *w = p;
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };

	w->ret = poll(&pfd, 1, 60000);
	w->revents = pfd.revents;
	return NULL;
}

/* poll() of the saving fd with no wait: its revents, or -errno. */
static int poll_now(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n = poll(&pfd, 1, 0);

	return n < 0 ? -errno : n ? pfd.revents : 0;
}

/*
 * The saving fd is readable exactly when a read would not fail with
 * ENOMSG: a VMM may sleep in poll() after ENOMSG and is woken when the
 * device dirties VRAM, when the device stops (the rest of the stream),
 * and when the fd breaks (a reset).
 */
int t_poll(struct gpu *g)
{
	struct poller w = { .fd = -1 };
	struct blob b = { 0 };
	pthread_t th;
	int fd = -1, r;

	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 1 << 20, 0x55, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fill");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	r = poll_now(fd);
	CHECK(r > 0 && (r & POLLIN), "a fresh saving fd polls 0x%x, not readable", r);
	CHECK(mig_read(fd, &b) == -ENOMSG, "pre-copy read did not end in ENOMSG");
	CHECK(poll_now(fd) == 0, "saving fd polls readable (0x%x) with nothing to read",
	      poll_now(fd));

	/* Asleep in poll() when the device writes VRAM: woken, readable. */
	w.fd = fd;
	CHECK(pthread_create(&th, NULL, poller_fn, &w) == 0, "thread");
	usleep(100 * 1000);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM + (3 << 16) + 8, 8, 0x66, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "VRAM write");
	pthread_join(th, NULL);
	CHECK(w.ret == 1 && (w.revents & POLLIN),
	      "poll() after a VRAM write: %d, revents 0x%x (not woken in 60 s)",
	      w.ret, w.revents);
	b.len = 0;
	CHECK(mig_read(fd, &b) == -ENOMSG && b.len > 65536,
	      "the dirtied block was not read after the wake (%zu bytes)", b.len);
	CHECK(poll_now(fd) == 0, "readable again with nothing new");

	/* Asleep when the device stops: the rest of the stream is readable. */
	CHECK(pthread_create(&th, NULL, poller_fn, &w) == 0, "thread");
	usleep(100 * 1000);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY");
	pthread_join(th, NULL);
	CHECK(w.ret == 1 && (w.revents & POLLIN), "poll() at STOP_COPY: %d, 0x%x",
	      w.ret, w.revents);
	b.len = 0;
	CHECK(mig_read(fd, &b) == 0 && b.len, "stop-copy to its end");
	r = poll_now(fd);
	CHECK(r & POLLIN, "end of stream polls 0x%x, not readable", r);

	/* A reset disables the fd: the read fails, and poll() says so. */
	CHECK(gpu_reset(g) == 0, "reset");
	r = poll_now(fd);
	CHECK((r & POLLERR) && (r & POLLIN), "a disabled fd polls 0x%x", r);
	data_fd_close(fd);
	free(b.p);
	return 0;
}

/* The device fd closed with a migration data fd still open. */
int t_close_mid_migration(struct gpu *g)
{
	char uuid[64];
	uint8_t b[64];
	int fd = -1;

	snprintf(uuid, sizeof(uuid), "%s", g->name);
	gpu_setup(g, 16);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(read(fd, b, sizeof(b)) == sizeof(b), "pre-copy bytes");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY");
	gpu_close(g);
	/* The data fd outlived its device: it ends, it does not crash. */
	CHECK(read(fd, b, sizeof(b)) < 0 && errno == ENODEV,
	      "data fd after close: %s", strerror(errno));
	data_fd_close(fd);
	CHECK(gpu_open(g, uuid) == 0, "reopen after closing mid-migration");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0 &&
	      mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0,
	      "a fresh state machine");
	return 0;
}

/* One trip of a ping-pong: the whole stream of @from goes into @to. */
int migrate_trip(struct gpu *from, struct gpu *to, int n)
{
	struct blob s = { 0 };
	int fd = -1, rfd = -1, ret = -1;

	CHECK(mig_set(from, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0,
	      "round %d PRE_COPY", n);
	if (mig_read(fd, &s) != -ENOMSG)
		fail("round %d pre-copy", n);
	else if (mig_set(from, VFIO_DEVICE_STATE_STOP_COPY, NULL))
		fail("round %d STOP_COPY", n);
	else if (mig_read(fd, &s))
		fail("round %d stop-copy", n);
	else if (mig_set(from, VFIO_DEVICE_STATE_STOP, NULL))
		fail("round %d STOP", n);
	else
		ret = 0;
	data_fd_close(fd);
	if (!ret) {
		memcpy(to->mem, from->mem, guest_size);
		to->next = from->next;
		to->pt_root = from->pt_root;
		if (mig_set(to, VFIO_DEVICE_STATE_STOP, NULL) ||
		    mig_set(to, VFIO_DEVICE_STATE_RESUMING, &rfd))
			ret = fail("round %d RESUMING", n);
		else if (mig_write(rfd, s.p, s.len, 1 << 20))
			ret = fail("round %d write", n);
		data_fd_close(rfd);
	}
	free(s.p);
	TRY(ret);
	CHECK(mig_set(to, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "round %d RUNNING", n);
	/* The old side is reset, as a VMM would before reusing it. */
	CHECK(gpu_reset(from) == 0, "round %d reset source", n);
	return 0;
}

/* Back and forth 20 times with a kernel in flight; the result is exact. */
int t_pingpong(struct gpu *a)
{
	const uint32_t words = 4096, iters = 2000, key = 0x5eed;
	uint32_t expect[4096], *kbuf, *res, i, it;
	struct gpu b, *from = a, *to = &b;
	uint64_t koff;
	int n;

	gpu_setup(a, 16);
	kbuf = sysbuf(a, VA_SYS, words * 4, NULL);
	koff = (uint8_t *)kbuf - a->mem;
	fill_random(kbuf, words * 4);
	memcpy(expect, kbuf, words * 4);
	for (it = 0; it < iters; it++)
		for (i = 0; i < words; i++)
			expect[i] = kernel_word(expect[i], key, it);
	knob_set(a, "kernel_step_us", "1000");
	gpu_submit(a, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, words * 4, iters, key);
	CHECK(gpu_open(&b, dst_name) == 0, "open second instance");
	knob_set(&b, "kernel_step_us", "1000");
	for (n = 0; n < 20; n++) {
		TRY(migrate_trip(from, to, n));
		usleep(20000);
		from = to;
		to = from == a ? &b : a;
	}
	CHECK(gpu_wait_idle(from, 0, 120000) == 0,
	      "kernel did not finish after 20 migrations");
	res = (uint32_t *)(from->mem + koff);
	for (i = 0; i < words; i++)
		CHECK(res[i] == expect[i], "word %u wrong after 20 migrations", i);
	gpu_close(&b);
	return 0;
}

/* A /proc/meminfo figure in KiB, caches dropped first; -1 if absent. */
/*
 * Shrink every slab cache: empty slabs go back to the page allocator, and
 * under KASAN (kmem_cache_shrink() -> kasan_cache_shrink()) the objects
 * its quarantine still holds for the cache are freed first, so that Slab
 * counts live objects, not recently freed ones.  Returns the caches shrunk.
 */
static int slab_shrink_all(void)
{
	DIR *d = opendir("/sys/kernel/slab");
	struct dirent *e;
	char path[512];
	int n = 0;

	while (d && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.' || e->d_type == DT_LNK)
			continue;	/* aliases of merged caches: shrunk once */
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", e->d_name);
		f = fopen(path, "w");
		if (!f)
			continue;
		n += fputs("1", f) >= 0;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static long long meminfo_kib(const char *key)
{
	char line[256];
	long long v = -1;
	size_t n = strlen(key);
	FILE *f;

	sync();
	f = fopen("/proc/sys/vm/drop_caches", "w");
	if (f) {
		fputs("3", f);
		fclose(f);
	}
	slab_shrink_all();
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = atoll(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

/* KASAN's quarantine holds freed objects in slab for a while. */
static bool kasan_on(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[256];
	bool on = false;

	while (f && !on && fgets(line, sizeof(line), f))
		on = !!strstr(line, " kasan_quarantine_put");
	if (f)
		fclose(f);
	return on;
}

static double pct(long long from, long long to)
{
	return from > 0 ? 100.0 * (double)(to - from) / (double)from : 0;
}

/*
 * Migrations back and forth, SOAK_MIGRATIONS of them (60 unless the
 * environment says otherwise), with a kernel
 * in flight across each batch of 20 and its result checked word by word
 * after the batch, and the timing knobs (step length, acknowledgment
 * delay) changed at random between migrations.  After a warm-up (50, or
 * half of a shorter run)
 * the kernel's slab and available memory are taken; at the end they must
 * be within 2 % of that.  Leaks and splats are the harness's to find.
 */
/* Migrations after the warm-up from which a KASAN kernel's memory is bounded. */
#define SOAK_LONG	500

int t_soak(struct gpu *a)
{
	const uint32_t words = 1024, batch = 20;
	uint32_t expect[1024], *kbuf, i, it, iters, key, wrong = 0;
	uint64_t kiova;
	long long slab0 = -1, avail0 = -1, slab1, avail1;
	struct gpu b, *from = a, *to = &b;
	int total = 60, warm, n = 0;
	const char *env = getenv("SOAK_MIGRATIONS");
	char v[32];

	if (env)
		total = atoi(env);
	warm = total >= 100 ? 50 : total / 2;
	CHECK(gpu_open(&b, dst_name) == 0, "open second instance");
	while (n < total) {
		/* A new kernel for each batch, running across its migrations. */
		key = rnd();
		iters = 2000 + rnd() % 2000;
		/* The guest sets the GPU up afresh, as after a reboot. */
		CHECK(gpu_reset(from) == 0, "reset before batch %d", n / (int)batch);
		from->pt_root = 0;
		gpu_setup(from, 16);
		kbuf = sysbuf(from, VA_SYS, words * 4, &kiova);
		fill_random(kbuf, words * 4);
		memcpy(expect, kbuf, words * 4);
		for (it = 0; it < iters; it++)
			for (i = 0; i < words; i++)
				expect[i] = kernel_word(expect[i], key, it);
		gpu_submit(from, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, words * 4, iters, key);
		for (i = 0; i < batch && n < total; i++, n++) {
			snprintf(v, sizeof(v), "%u", 100 + rnd() % 900);
			knob_set(to, "kernel_step_us", v);
			snprintf(v, sizeof(v), "%u", rnd() % 20);
			knob_set(from, "ack_delay_ms", v);
			TRY(migrate_trip(from, to, n));
			from = to;
			to = from == a ? &b : a;
			if (n + 1 == warm) {
				slab0 = meminfo_kib("Slab");
				avail0 = meminfo_kib("MemAvailable");
			}
		}
		CHECK(gpu_wait_idle(from, 0, 300000) == 0, "batch kernel did not finish");
		kbuf = gptr(from, kiova);	/* the guest memory came along */
		wrong += memcmp(kbuf, expect, words * 4) != 0;
	}
	slab1 = meminfo_kib("Slab");
	avail1 = meminfo_kib("MemAvailable");
	printf("    # soak: %d migrations, %u wrong results; after %d: Slab %lld KiB, MemAvailable %lld KiB; at the end: Slab %lld KiB (%+.2f %%), MemAvailable %lld KiB (%+.2f %%)\n",
	       n, wrong, warm, slab0, avail0, slab1, pct(slab0, slab1), avail1,
	       pct(avail0, avail1));
	gpu_close(&b);
	CHECK(!wrong, "%u of %d batches ended with a wrong result", wrong,
	      (total + (int)batch - 1) / (int)batch);
	CHECK(slab0 > 0 && avail0 > 0, "no memory figures after the warm-up");
	/*
	 * Under KASAN freed objects wait in its quarantine (up to 1/32 of
	 * memory) before slab gets them back.  meminfo_kib() drains it (each
	 * cache's shrink), but the figures of a short run still swing by a
	 * few percent with what is in flight at that moment: under KASAN
	 * only a long run (SOAK_LONG migrations after the warm-up, as `make
	 * soak` does) is bounded; a short one prints, and kmemleak is the
	 * leak check.
	 */
	if (kasan_on() && n - warm < SOAK_LONG) {
		printf("    # soak: KASAN on, %d migrations after the warm-up: memory figures printed, bounded from %d\n",
		       n - warm, SOAK_LONG);
		return 0;
	}
	CHECK(pct(slab0, slab1) <= 2.0 && pct(avail0, avail1) >= -2.0,
	      "memory grew over the soak: Slab %+.2f %%, MemAvailable %+.2f %%",
	      pct(slab0, slab1), pct(avail0, avail1));
	return 0;
}

/* One metric file of migration/: its number, or -1. */
long long metric(struct gpu *g, const char *name)
{
	char path[64], v[128];

	snprintf(path, sizeof(path), "migration/%s", name);
	if (read_attr(g->name, path, v, sizeof(v)))
		return -1;
	return atoll(v);
}

static int metric_is(struct gpu *g, const char *name, const char *want)
{
	char path[64], v[128];

	snprintf(path, sizeof(path), "migration/%s", name);
	CHECK(read_attr(g->name, path, v, sizeof(v)) == 0, "no %s", path);
	v[strcspn(v, "\n")] = 0;
	CHECK(!strcmp(v, want), "%s is \"%s\", not \"%s\"", path, v, want);
	return 0;
}

static long long precopy_left(int fd)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };

	if (ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info))
		return -1;
	return (long long)(info.initial_bytes + info.dirty_bytes);
}

/*
 * The metric files an orchestrator reads: the state, what remains (equal
 * to PRECOPY_INFO's initial plus dirty at every sample), the stop-copy
 * estimate (MIG_DATA_SIZE's) never exceeded by what stop-copy sends, the
 * byte and round counters against what the client read, a dirty rate
 * once VRAM changed between rounds, the stop's timings.
 */
int t_metrics(struct gpu *g)
{
	long long left, est, rounds, got = 0;
	struct blob b = { 0 };
	uint8_t chunk[65536];
	int fd = -1, i;
	ssize_t n;

	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 1 << 20, 0x3e7, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fill");
	TRY(metric_is(g, "state", "RUNNING"));
	TRY(metric_is(g, "migratable", "1"));
	CHECK(metric(g, "remaining_bytes") == 0, "remaining_bytes outside a migration");
	CHECK(metric(g, "stopcopy_estimate_bytes") == mig_data_size(g),
	      "stop-copy estimate %lld, MIG_DATA_SIZE %lld",
	      metric(g, "stopcopy_estimate_bytes"), (long long)mig_data_size(g));

	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	TRY(metric_is(g, "state", "PRE_COPY"));
	for (i = 0; i < 8; i++) {
		left = precopy_left(fd);
		CHECK(left >= 0 && metric(g, "remaining_bytes") == left,
		      "sample %d: remaining_bytes %lld, PRECOPY_INFO %lld", i,
		      metric(g, "remaining_bytes"), left);
		n = read(fd, chunk, sizeof(chunk));
		CHECK(n > 0, "pre-copy read %d: %s", i, strerror(errno));
		got += n;
	}
	CHECK(mig_read(fd, &b) == -ENOMSG, "pre-copy to ENOMSG");
	got += b.len;
	CHECK(metric(g, "remaining_bytes") == 0 && precopy_left(fd) == 0,
	      "remaining after the first round");
	CHECK(metric(g, "precopy_bytes") == got, "precopy_bytes %lld, read %lld",
	      metric(g, "precopy_bytes"), got);
	rounds = metric(g, "precopy_rounds");
	CHECK(rounds == 1, "precopy_rounds %lld after one round", rounds);

	/* VRAM changes; the second round gives a dirty rate. */
	usleep(50000);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 3 << 16, 0x3e8, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "second fill");
	left = precopy_left(fd);
	CHECK(left > 0 && metric(g, "remaining_bytes") == left,
	      "after the fill: remaining_bytes %lld, PRECOPY_INFO %lld",
	      metric(g, "remaining_bytes"), left);
	b.len = 0;
	CHECK(mig_read(fd, &b) == -ENOMSG && b.len, "second round");
	CHECK(metric(g, "precopy_rounds") == 2, "two rounds");
	CHECK(metric(g, "dirty_rate_bytes_per_sec") > 0, "no dirty rate after a second round");

	est = metric(g, "stopcopy_estimate_bytes");
	CHECK(est > 0 && est == mig_data_size(g), "estimate %lld, MIG_DATA_SIZE %lld", est,
	      (long long)mig_data_size(g));
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY");
	TRY(metric_is(g, "state", "STOP_COPY"));
	CHECK(metric(g, "quiesce_us") >= 0 && metric(g, "invalidate_us") >= 0, "stop timings");
	b.len = 0;
	CHECK(mig_read(fd, &b) == 0, "stop-copy");
	CHECK(metric(g, "stopcopy_bytes") == (long long)b.len && (long long)b.len <= est,
	      "stop-copy sent %zu bytes (stopcopy_bytes %lld), estimate at the stop %lld",
	      b.len, metric(g, "stopcopy_bytes"), est);
	TRY(metric_is(g, "last_error", ""));
	data_fd_close(fd);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	free(b.p);
	return 0;
}

/* Teardown that cannot verify the device quarantines it. */
int t_quarantine(struct gpu *g)
{
	char uuid[64], status[256];
	struct gpu again;

	snprintf(uuid, sizeof(uuid), "%s", g->name);
	gpu_setup(g, 16);
	sysbuf(g, VA_SYS, 4096, NULL);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 1, 0,
		   0); /* a cached translation */
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fence");
	knob_set(g, "ack_drop", "1");
	gpu_close(g);
	CHECK(read_attr(uuid, "migration/status", status, sizeof(status)) ==
		      0 &&
	      strstr(status, "quarantined"),
	      "not quarantined: %s", status);
	CHECK(gpu_open(&again, uuid) != 0, "a quarantined instance was reused");
	CHECK(unquarantine(uuid) == 0, "unquarantine: %s", strerror(errno));
	CHECK(gpu_open(g, uuid) == 0, "reopen after the quarantine was lifted");
	knob_set(g, "ack_drop", "0");
	return 0;
}

/* Write @val to sysfs @path: 0 or -errno. */
static int sysfs_write(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -errno : 0;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

/*
 * The PF's driver is unbound in the middle of pre-copy (which cannot be
 * refused): the migration ends with ENODEV and says why, the VF's user is
 * asked to let go, and once it has, the VF is gone and nothing crashed.
 */
/*
 * RUNNING_P2P stops the device's own DMA, all of it (simgpu cannot tell a
 * peer's BAR from memory), while its registers keep answering: QEMU moves
 * every device of a VM there before it stops any, and one that went on
 * writing a peer's VRAM would lose those writes.  Work submitted then
 * waits, the background writer holds, and RUNNING lets both go on.
 */
int t_p2p(struct gpu *g)
{
	uint64_t iova;
	uint32_t count, i;
	uint32_t *buf;

	gpu_setup(g, 16);
	buf = sysbuf(g, VA_SYS, 2 * 4096, &iova);
	memset(buf, 0, 2 * 4096);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING_P2P, NULL) == 0, "RUNNING_P2P");
	CHECK(rd(g, SIMGPU_REG_ID) == SIMGPU_ID_MAGIC, "the registers do not answer in RUNNING_P2P");
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_SYS, 4096, 0xabcd1234, 0);
	wr(g, SIMGPU_REG_DIRTY_BASE_LO, (uint32_t)(VA_SYS + 4096));
	wr(g, SIMGPU_REG_DIRTY_BASE_HI, (VA_SYS + 4096) >> 32);
	knob_set(g, "dirty_rate", "10000");
	wr(g, SIMGPU_REG_DIRTY_PAGES, 1);
	usleep(300000);
	count = rd(g, SIMGPU_REG_DIRTY_COUNT);
	CHECK(!buf[0] && (qrd(g, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY),
	      "the device ran a FILL into guest memory in RUNNING_P2P");
	CHECK(!count && !buf[1024], "the background writer wrote %u pages in RUNNING_P2P", count);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "the FILL did not run after RUNNING_P2P");
	for (i = 0; i < 1024; i++)
		CHECK(buf[i] == 0xabcd1234, "word %u of the FILL is 0x%x", i, buf[i]);
	usleep(200000);
	count = rd(g, SIMGPU_REG_DIRTY_COUNT);
	wr(g, SIMGPU_REG_DIRTY_PAGES, 0);
	knob_set(g, "dirty_rate", "0");
	CHECK(count > 0, "the background writer did not go on after RUNNING_P2P");
	return 0;
}

/* @vf's PF's address (in @pf, @len bytes), or NULL when @vf is not a VF. */
static const char *pf_of(const char *vf, char *pf, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/physfn", dev_sysdir(vf));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return NULL;
	link[n] = 0;
	snprintf(pf, len, "%s", strrchr(link, '/') + 1);
	return pf;
}

/* Interrupts the PF @pf took so far (its line in /proc/interrupts), or -1. */
static long long pf_irqs(const char *pf)
{
	char line[1024];
	long long sum = -1;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (!p || !strstr(line, pf) || !strstr(line, "simgpu-pf"))
			continue;
		for (sum = 0, p++;;) {
			char *e;
			long long v = strtoll(p, &e, 10);

			if (e == p)
				break;
			sum += v;
			p = e;
		}
		break;
	}
	fclose(f);
	return sum;
}

/*
 * The VF's PF is reset (a function-level reset, as an operator's
 * .../reset or an error recovery does) in the middle of a pre-copy: the
 * VF's GPU state and VRAM go with it, and every party hears so.  The data
 * file's reads fail, the migration state reads ERROR and refuses every
 * arc until a device reset, last_error says why, and the VF itself tells
 * its user DEVICE_LOST.  After VFIO_DEVICE_RESET the VF works and migrates
 * again, its PF's commands completing by interrupt (the PF driver set its
 * interrupt mask again after the reset).
 */
int t_pf_reset(struct gpu *g)
{
	char pf[64], path[PATH_MAX], why[512] = "";
	long long irqs;
	struct blob b = { 0 };
	uint8_t first[64];
	uint32_t st = 0;
	int fd = -1, ret;

	if (!pf_of(g->name, pf, sizeof(pf))) {
		snprintf(fail_msg, sizeof(fail_msg), "%s is not a VF", g->name);
		return SKIP;
	}
	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 1 << 20, 0x5eed, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "a FILL of VRAM");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(read(fd, first, sizeof(first)) == sizeof(first), "first pre-copy bytes");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", pf);
	CHECK(sysfs_write(path, "1") == 0, "resetting the PF %s: %s", pf, strerror(errno));

	ret = mig_read(fd, &b);
	free(b.p);
	CHECK(ret == -EIO, "pre-copy read after the PF's reset: %d, not -EIO", ret);
	CHECK(mig_get(g, &st) == 0 && st == VFIO_DEVICE_STATE_ERROR,
	      "the migration state after the PF's reset is %u, not ERROR", st);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) < 0,
	      "RUNNING accepted in ERROR, before a device reset");
	read_attr(g->name, "migration/last_error", why, sizeof(why));
	CHECK(strstr(why, "its PF was reset"), "last_error does not say why: %s", why);
	CHECK(rd(g, SIMGPU_REG_ERROR_CODE) == SIMGPU_ERR_DEVICE_LOST &&
	      rd(g, SIMGPU_REG_ERROR_QUEUE) == SIMGPU_QUEUE_DEVICE,
	      "the VF's error registers say %u on 0x%x, not DEVICE_LOST on the device",
	      rd(g, SIMGPU_REG_ERROR_CODE), rd(g, SIMGPU_REG_ERROR_QUEUE));
	CHECK(rd(g, SIMGPU_REG_STATUS) & SIMGPU_STATUS_ERROR, "STATUS shows no error");
	data_fd_close(fd);
	printf("    # pf_reset: after the PF's reset: %s", why);

	CHECK(gpu_reset(g) == 0, "VFIO_DEVICE_RESET: %s", strerror(errno));
	CHECK(mig_get(g, &st) == 0 && st == VFIO_DEVICE_STATE_RUNNING,
	      "the migration state after a device reset is %u, not RUNNING", st);
	CHECK(rd(g, SIMGPU_REG_ERROR_CODE) == 0, "the device reset left error %u",
	      rd(g, SIMGPU_REG_ERROR_CODE));
	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 4096, 0x77, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "work after the reset");
	irqs = pf_irqs(pf);
	CHECK(irqs >= 0, "no interrupt line of %s in /proc/interrupts", pf);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP after the reset");
	CHECK(pf_irqs(pf) > irqs,
	      "the PF's commands of a STOP completed without an interrupt (its mask was not restored)");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	return 0;
}

int t_pf_gone(struct gpu *g)
{
	struct pollfd p = { .fd = g->req_efd, .events = POLLIN };
	char link[PATH_MAX], path[PATH_MAX], status[512];
	struct blob b = { 0 };
	uint8_t first[64];
	const char *pf;
	ssize_t n;
	pid_t pid;
	int fd = -1, st, ret;

	snprintf(path, sizeof(path), "%s/physfn", dev_sysdir(g->name));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		snprintf(fail_msg, sizeof(fail_msg), "%s is not a VF", g->name);
		return SKIP;
	}
	link[n] = 0;
	pf = strrchr(link, '/') + 1;
	gpu_setup(g, 16);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(read(fd, first, sizeof(first)) == sizeof(first), "first pre-copy bytes");
	pid = fork();
	if (pid == 0) {
		/* The child holds nothing of the device's. */
		data_fds_close();
		gpu_close(g);
		_exit(sysfs_write("/sys/bus/pci/drivers/simgpu-pf/unbind", pf) ? 1 : 0);
	}
	CHECK(pid > 0, "fork");
	CHECK(poll(&p, 1, TMO) == 1, "the VF's user was not asked to let go");
	ret = mig_read(fd, &b);
	free(b.p);
	CHECK(ret == -ENODEV, "pre-copy read after the PF went away: %d, not -ENODEV", ret);
	/* The VF's attributes may be gone already: it is being removed. */
	if (read_attr(g->name, "migration/status", status, sizeof(status)) == 0) {
		CHECK(strstr(status, "migration aborted: the PF's driver was removed"),
		      "status does not say why: %s", status);
		printf("    # pf_gone: %s", status);
	}
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "cancel back to RUNNING");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, NULL) == -ENODEV,
	      "a new migration without the PF did not fail with ENODEV");
	data_fd_close(fd);
	snprintf(path, sizeof(path), "%s", g->name);
	gpu_close(g);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "unbinding the PF's driver failed");
	CHECK(!dev_sysdir(path), "the VF is still there after its PF's driver went away");
	return 0;
}
