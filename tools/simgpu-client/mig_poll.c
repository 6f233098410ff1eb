// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: poll() of a saving data fd woken by what only a device
 * that runs can do: dirtied VRAM, the stop, a reset.  The uAPI's rules on
 * an idle device (readable exactly when a read is not ENOMSG, always in
 * STOP_COPY) are vfio-migtest's saving_fd_poll.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

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
 * A VMM may sleep in poll() after ENOMSG and is woken when the device
 * dirties VRAM, when the device stops (the rest of the stream), and when
 * the fd breaks (a reset).
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
	CHECK(mig_read(fd, &b) == -ENOMSG, "pre-copy read did not end in ENOMSG");

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

	/* A reset disables the fd: the read fails, and poll() says so. */
	CHECK(gpu_reset(g) == 0, "reset");
	r = poll_now(fd);
	CHECK((r & POLLERR) && (r & POLLIN), "a disabled fd polls 0x%x", r);
	data_fd_close(fd);
	free(b.p);
	return 0;
}
