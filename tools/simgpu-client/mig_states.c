// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the migration state machine off its straight path, where
 * only simgpu can take it: stops that must fail (and the device runs on),
 * a teardown that cannot verify the device (a quarantine), RUNNING_P2P
 * holding the device's DMA.  A reset and a close in every state, and the
 * data fds after them, are vfio-migtest's (reset_in_*, close_in_*).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

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

/* Teardown that cannot verify the device quarantines it. */
int t_quarantine(struct gpu *g)
{
	char uuid[64], status[256];
	struct mig_watch w;
	struct gpu again;

	snprintf(uuid, sizeof(uuid), "%s", g->name);
	gpu_setup(g, 16);
	sysbuf(g, VA_SYS, 4096, NULL);
	gpu_submit(g, 0, SIMGPU_OP_FENCE, 0, VA_SYS, 1, 0,
		   0); /* a cached translation */
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "fence");
	knob_set(g, "ack_drop", "1");
	/* A monitor asleep in poll() on migratable wakes, then on the lift. */
	TRY(mig_watch_begin(&w, uuid, "migratable"));
	gpu_close(g);
	TRY(mig_watch_end(&w));
	CHECK(!strcmp(w.after, "0"), "migration/migratable woke with \"%s\"", w.after);
	CHECK(mig_text(uuid, "last_error", status, sizeof(status)) == 0 &&
	      !strncmp(status, "quarantined: ", 13),
	      "quarantined, and migration/last_error says: %s", status);
	CHECK(gpu_open(&again, uuid) != 0, "a quarantined instance was reused");
	TRY(mig_watch_begin(&w, uuid, "migratable"));
	CHECK(unquarantine(uuid) == 0, "unquarantine: %s", strerror(errno));
	TRY(mig_watch_end(&w));
	CHECK(!strcmp(w.after, "1"), "migration/migratable woke with \"%s\" after the lift",
	      w.after);
	CHECK(gpu_open(g, uuid) == 0, "reopen after the quarantine was lifted");
	knob_set(g, "ack_drop", "0");
	return 0;
}

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
