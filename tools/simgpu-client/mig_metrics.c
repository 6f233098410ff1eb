// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the migration/ metric files an orchestrator reads,
 * against what the uAPI says and what the client read, through a
 * migration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

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
