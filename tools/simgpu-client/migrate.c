// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the VMM's part of a migration, for a client that plays
 * both sides: guest memory follows the device (guest_follow()), a stream
 * read from the source goes into a destination that then runs
 * (migrate_into()), and one whole trip of a ping-pong (migrate_trip()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

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

/*
 * The destination: the VMM copied guest memory @mem (and its own view of
 * it), then the device state goes in and the device runs.
 */
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
