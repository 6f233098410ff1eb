// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the post-copy benchmark of one instance type
 * (`-s bench_postcopy -d DST SRC`, both of the same type; GPUMIG_MOVER names
 * gpumig-mover).  This process is the VMM, as QEMU is (it reads the saving
 * fd and writes the destination's resuming fd), and the guest on both
 * sides; the project's mover carries the owed blocks at PCB_MOVER_BPS
 * (its --rate), demanded ones first.  VRAM holds PCB_DATA of data (a
 * value per block) beside the auto-converge workload's 4 MiB working set
 * (converge.h).  Three kinds of run, in rounds:
 *
 *  base     no post-copy, the writer stopped: pre-copy until nothing is
 *           left, then the stop: the downtime to compare with;
 *  pc-idle  post-copy, the writer stopped; on the destination the guest
 *           first reads 5 % of the data blocks, in a scattered order;
 *  pc-hot   post-copy, the writer rewriting its working set at 8 MiB/s
 *           (four times the auto-converge benchmark's link) up to the
 *           stop; the guest reads every data block.
 *
 * The downtime is the device's part, as bench_vram and bench_converge
 * measure it: from PRE_COPY_P2P to the destination's RESUMING -> STOP.
 * After it, the time until the destination has its last block, against
 * what the mover's cap allows for the owed bytes: judged on pc-idle,
 * where the cap governs all but the 5 % asked for (pc-hot asks for every
 * block, and asked-for blocks go at once, so its figure is printed
 * beside, not judged); the guest's reads (each
 * a COPY of one page of a block): how many, how many the device waited on
 * (its count of waits), their median and worst latency.  Every read is
 * checked against the block's value, the working set against the
 * writer's stamps: a wrong word fails the run.  Nothing is asserted on
 * time.  One "pc_bench" line per run, then a summary of medians
 * (BENCH_POSTCOPY_REPS rounds, 11).  The downtime ratios are paired: each
 * round's post-copy run over the same round's base run, then the median
 * of those (sub-millisecond stops under TCG spread 2-7x between runs, and
 * a round's three runs follow each other within seconds); the ratio of
 * the medians is printed beside.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/simgpu.h>
#include <linux/vfio.h>

#include "client.h"
#include "converge.h"
#include "vfio_mig.h"

#define PCB_BLOCK	65536
#define PCB_DATA_OFF	(8ULL << 20)	/* the data blocks, past the working set */
#define PCB_DATA	(8ULL << 20)	/* 128 blocks */
#define PCB_NR		(PCB_DATA / PCB_BLOCK)
#define PCB_MOVER_BPS	(4 << 20)	/* the mover's cap */
#define PCB_MOVER_STR	"4194304"
#define VA_DATA		(VA_VRAM + PCB_DATA_OFF)
#define MAX_REPS	21

enum kind { BASE, PC_IDLE, PC_HOT, KINDS };

/* The stop's parts, in order: what pcb_stop() times. */
enum part { P_P2P, P_STOP_COPY, P_READ, P_WRITE, P_DST_STOP, PARTS };

static const char *const part_name[PARTS] = {
	"source PRE_COPY_P2P", "STOP_COPY", "read", "destination write", "destination STOP"
};

static const char *const kind_name[KINDS] = { "base", "pc-idle", "pc-hot" };

struct result {
	double down_us, part_us[PARTS];
	long long stop_bytes;
	unsigned long owed;
	double last_s, ideal_s;
	unsigned int reads;
	unsigned long long waits;
	double lat_med_ms, lat_max_ms;
};

static uint32_t pcb_value(uint64_t b)
{
	return 0x3c000000u ^ (uint32_t)(b * 2246822519u) ^ 7;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_of(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n ? v[(n - 1) / 2] : 0;
}

/* The source: its working set (stamped by the writer) and the data blocks. */
static int pcb_setup(struct gpu *src, enum kind k)
{
	uint64_t b;

	/* A new guest each run: the queues start over (their heads too). */
	wr(src, SIMGPU_REG_CONTROL, SIMGPU_CTRL_RESET);
	TRY(hot_setup(src));
	if (k != PC_HOT)
		wr(src, SIMGPU_REG_DIRTY_PAGES, 0);
	gpu_map_range(src, VA_DATA, PCB_DATA_OFF, PCB_DATA, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	for (b = 0; b < PCB_NR; b++) {
		gpu_submit(src, 0, SIMGPU_OP_FILL, 0, VA_DATA + b * PCB_BLOCK, PCB_BLOCK,
			   pcb_value(b), 0);
		/* hot_setup()'s ring holds 16 commands */
		if (b % 8 == 7 || b == PCB_NR - 1)
			CHECK(gpu_wait_idle(src, 0, TMO) == 0,
			      "filling data block %llu: queue status 0x%x, error %u",
			      (unsigned long long)b, qrd(src, 0, SIMGPU_QREG_STATUS),
			      qrd(src, 0, SIMGPU_QREG_ERROR));
	}
	return 0;
}

/* The mover, as an operator starts it: its pid. */
static pid_t pcb_mover(const char *mover, const char *hex)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(mover, mover, "destination", hex, "--", mover, "source", hex, "--rate",
		      PCB_MOVER_STR, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * The guest on the destination reads @n data blocks (every @stride-th, in
 * a scattered order), a page of each, timing each read.
 */
static int pcb_reads(struct gpu *dst, unsigned int n, unsigned int stride, struct result *r)
{
	uint32_t *buf = sysbuf(dst, VA_SYS + (64 << 20), 4096, NULL);
	double lat[PCB_NR];
	unsigned int i, j;

	gpu_map_range(dst, VA_DATA, PCB_DATA_OFF, PCB_DATA, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	for (i = 0; i < n; i++) {
		uint64_t b = ((uint64_t)i * stride * 37) % PCB_NR, t0 = now_ns();

		gpu_submit(dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (64 << 20),
			   VA_DATA + b * PCB_BLOCK + 8192, 4096, 0);
		CHECK(gpu_wait_idle(dst, 1, 60000) == 0, "a read of data block %llu did not end",
		      (unsigned long long)b);
		lat[i] = (now_ns() - t0) / 1e6;
		for (j = 0; j < 1024; j++)
			CHECK(buf[j] == pcb_value(b),
			      "data block %llu word %u reads 0x%08x, the source wrote 0x%08x",
			      (unsigned long long)b, j, buf[j], pcb_value(b));
	}
	r->reads = n;
	r->lat_max_ms = 0;
	for (i = 0; i < n; i++)
		r->lat_max_ms = lat[i] > r->lat_max_ms ? lat[i] : r->lat_max_ms;
	r->lat_med_ms = median_of(lat, n);
	return 0;
}

/* The stop: PRE_COPY_P2P to the destination's STOP, stop-copy on the way. */
static int pcb_stop(struct gpu *src, struct gpu *dst, int fd, int rfd, struct result *r)
{
	struct blob stop = { 0 };
	uint64_t t0 = now_ns(), t[PARTS + 1];
	int ret = 0, p;

	/* Each part timed as it ends; the first that fails ends the stop. */
	t[0] = t0;
	if (mig_set(src, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL))
		ret = fail("to PRE_COPY_P2P: %s", strerror(errno));
	t[1] = now_ns();
	if (!ret && mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL))
		ret = fail("to STOP_COPY: %s", strerror(errno));
	t[2] = now_ns();
	if (!ret && mig_read(fd, &stop))
		ret = fail("stop-copy read");
	t[3] = now_ns();
	if (!ret && mig_write(rfd, stop.p, stop.len, 1 << 20))
		ret = fail("destination: writing stop-copy: %s", strerror(errno));
	t[4] = now_ns();
	if (!ret && mig_set(dst, VFIO_DEVICE_STATE_STOP, NULL))
		ret = fail("destination: RESUMING -> STOP refused the stream: %s", strerror(errno));
	t[5] = now_ns();
	r->down_us = (t[5] - t0) / 1e3;
	for (p = 0; !ret && p < PARTS; p++)
		r->part_us[p] = (t[p + 1] - t[p]) / 1e3;
	r->stop_bytes = stop.len;
	free(stop.p);
	return ret;
}

/* One migration of @src into @dst of kind @k: 0 with @r filled, or fail(). */
static int one_run(struct gpu *src, struct gpu *dst, enum kind k, const char *mover,
		   struct result *r)
{
	struct blob pre = { 0 };
	char hex[64], v[64];
	int fd = -1, rfd = -1, ret = -1, st;
	uint64_t t0, end;
	pid_t pid = -1;

	memset(r, 0, sizeof(*r));
	TRY(pcb_setup(src, k));
	CHECK(mig_attr_write(src, "postcopy", k == BASE ? "0" : "1") == 0, "migration/postcopy");
	guest_follow(dst, src, src->mem);
	if (mig_set(dst, VFIO_DEVICE_STATE_STOP, NULL) ||
	    mig_set(dst, VFIO_DEVICE_STATE_RESUMING, &rfd))
		return fail("destination: STOP, RESUMING: %s", strerror(errno));
	if (mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd)) {
		fail("PRE_COPY: %s", strerror(errno));
		goto out;
	}
	/* Pre-copy until the device has nothing left (post-copy: at once). */
	if (mig_read(fd, &pre) != -ENOMSG || mig_write(rfd, pre.p, pre.len, 1 << 20)) {
		fail("pre-copy: %s", strerror(errno));
		goto out;
	}
	if (pcb_stop(src, dst, fd, rfd, r))
		goto out;
	data_fd_close(rfd);
	rfd = -1;
	/* As QEMU does after the switchover (its save_cleanup): the hold begins. */
	if (mig_set(src, VFIO_DEVICE_STATE_STOP, NULL)) {
		fail("source STOP: %s", strerror(errno));
		goto out;
	}
	guest_follow(dst, src, src->mem);
	if (mig_set(dst, VFIO_DEVICE_STATE_RUNNING, NULL)) {
		fail("destination RUNNING: %s", strerror(errno));
		goto out;
	}
	wr(dst, SIMGPU_REG_DIRTY_PAGES, 0);	/* the last sweep's stamps stay */
	if (k != BASE) {
		mig_attr(src, "postcopy_owed_blocks", v, sizeof(v));
		r->owed = strtoul(v, NULL, 10);
		r->ideal_s = (double)r->owed * PCB_BLOCK / PCB_MOVER_BPS;
		mig_attr(src, "postcopy_token", hex, sizeof(hex));
		t0 = now_ns();
		pid = pcb_mover(mover, hex);
		if (pid < 0) {
			fail("fork");
			goto out;
		}
		if (pcb_reads(dst, k == PC_IDLE ? (PCB_NR + 19) / 20 : PCB_NR,
			      k == PC_IDLE ? 20 : 1, r))
			goto out;
		end = now_ms() + 600000;
		do {
			mig_attr(dst, "postcopy_state", v, sizeof(v));
			if (strcmp(v, "active"))
				break;
			usleep(2000);
		} while (now_ms() < end);
		r->last_s = (now_ns() - t0) / 1e9;
		if (strcmp(v, "done")) {
			fail("post-copy ended %s, not done", v);
			goto out;
		}
		mig_attr(dst, "postcopy_waits", v, sizeof(v));
		r->waits = strtoull(v, NULL, 10);
	} else if (pcb_reads(dst, PCB_NR, 1, r)) {
		goto out;
	}
	if (hot_verify(dst, kind_name[k]))
		goto out;
	if (mig_set(src, VFIO_DEVICE_STATE_RUNNING, NULL)) {
		fail("source back to RUNNING: %s", strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (pid > 0) {
		if (waitpid(pid, &st, WNOHANG) != pid) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
	}
	mig_attr_write(src, "postcopy", "0");
	data_fd_close(fd);
	if (rfd >= 0)
		data_fd_close(rfd);
	free(pre.p);
	return ret;
}

int t_bench_postcopy(struct gpu *src)
{
	double down[KINDS][MAX_REPS], last[KINDS][MAX_REPS], ideal[KINDS][MAX_REPS];
	double med[KINDS][MAX_REPS], worst[KINDS], ri[MAX_REPS], rh[MAX_REPS];
	double part[KINDS][PARTS][MAX_REPS];
	int p;
	unsigned long long waits[KINDS] = { 0 };
	unsigned int reads[KINDS] = { 0 };
	const char *e = getenv("BENCH_POSTCOPY_REPS"), *mover = getenv("GPUMIG_MOVER");
	int reps = e ? atoi(e) : 11, n[KINDS] = { 0 }, i, ret = 0;
	struct result r;
	struct gpu dst;
	char type[32];
	enum kind k;

	if (!mover) {
		snprintf(fail_msg, sizeof(fail_msg), "GPUMIG_MOVER does not name gpumig-mover");
		return SKIP;
	}
	if (reps < 1 || reps > MAX_REPS)
		reps = 11;
	type_of(src, type, sizeof(type));
	if (mig_attr_write(src, "postcopy", "0") == -EOPNOTSUPP ||
	    mig_attr_write(src, "postcopy", "1") == -EOPNOTSUPP) {
		snprintf(fail_msg, sizeof(fail_msg), "the device cannot hold VRAM for post-copy");
		return SKIP;
	}
	mig_attr_write(src, "postcopy", "0");
	memset(worst, 0, sizeof(worst));
	CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
	for (i = 0; i < reps && !ret; i++)
		for (k = BASE; k < KINDS && !ret; k++) {
			ret = one_run(src, &dst, k, mover, &r);
			if (ret)
				break;
			printf("    # pc_bench type=%s run=%s down_us=%.0f stop_bytes=%lld owed_blocks=%lu last_block_s=%.2f ideal_s=%.2f reads=%u waits=%llu read_median_ms=%.2f read_worst_ms=%.2f wrong=0\n",
			       type, kind_name[k], r.down_us, r.stop_bytes, r.owed, r.last_s,
			       r.ideal_s, r.reads, r.waits, r.lat_med_ms, r.lat_max_ms);
			fflush(stdout);
			down[k][n[k]] = r.down_us;
			for (p = 0; p < PARTS; p++)
				part[k][p][n[k]] = r.part_us[p];
			med[k][n[k]] = r.lat_med_ms;
			worst[k] = r.lat_max_ms > worst[k] ? r.lat_max_ms : worst[k];
			waits[k] += r.waits;
			reads[k] += r.reads;
			last[k][n[k]] = r.last_s;
			ideal[k][n[k]] = r.ideal_s;
			n[k]++;
		}
	gpu_close(&dst);
	if (ret)
		return ret;
	/* Paired, before median_of() sorts the runs: every round ran all three. */
	for (i = 0; i < n[BASE]; i++) {
		ri[i] = down[PC_IDLE][i] / down[BASE][i];
		rh[i] = down[PC_HOT][i] / down[BASE][i];
	}
	{
		double pi = median_of(ri, n[BASE]), ph = median_of(rh, n[BASE]);
		double base = median_of(down[BASE], n[BASE]);
		double idle = median_of(down[PC_IDLE], n[PC_IDLE]);
		double hot = median_of(down[PC_HOT], n[PC_HOT]);
		double l = median_of(last[PC_IDLE], n[PC_IDLE]);
		double id = median_of(ideal[PC_IDLE], n[PC_IDLE]);
		double lh = median_of(last[PC_HOT], n[PC_HOT]);
		double idh = median_of(ideal[PC_HOT], n[PC_HOT]);

		printf("    # %s: downtime without post-copy %.0f us (median of %d); with post-copy, idle %.0f us, hot %.0f us; each round's over its base, median: idle %.2fx, hot %.2fx (goal <= 1.5: %s); ratio of the medians: idle %.2fx, hot %.2fx\n",
		       type, base, n[BASE], idle, hot, pi, ph,
		       pi <= 1.5 && ph <= 1.5 ? "met" : "NOT MET", idle / base, hot / base);
		printf("    # %s: idle: the last block after %.2f s, %.2fx the owed bytes at the mover's cap (%.2f s; goal <= 1.3: %s); hot, every block asked for: %.2f s, %.2fx (%.2f s)\n",
		       type, l, id > 0 ? l / id : 0, id, id > 0 && l <= 1.3 * id ? "met" : "NOT MET",
		       lh, idh > 0 ? lh / idh : 0, idh);
		printf("    # %s: the guest's reads on the destination: 5%% first: %u reads, %llu waited, median %.2f ms, worst %.2f ms; all: %u reads, %llu waited, median %.2f ms, worst %.2f ms; without post-copy: median %.2f ms, worst %.2f ms; 0 wrong\n",
		       type, reads[PC_IDLE], waits[PC_IDLE], median_of(med[PC_IDLE], n[PC_IDLE]),
		       worst[PC_IDLE], reads[PC_HOT], waits[PC_HOT],
		       median_of(med[PC_HOT], n[PC_HOT]), worst[PC_HOT],
		       median_of(med[BASE], n[BASE]), worst[BASE]);
		/* where the stop's time goes: the medians of its parts */
		for (k = BASE; k < KINDS; k++) {
			printf("    # %s: the stop's parts, %s (medians, us):", type, kind_name[k]);
			for (p = 0; p < PARTS; p++)
				printf("%s %s %.0f", p ? "," : "", part_name[p],
				       median_of(part[k][p], n[k]));
			printf("\n");
		}
	}
	return 0;
}
