// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: a monitor that sleeps in poll() on a migration/ file
 * wakes when what the file shows changes (sysfs_notify(), as
 * Documentation/filesystems/sysfs.rst describes): the state on a state
 * change, last_error on a refused stream, migratable on a quarantine and
 * on its end (mig_states.c's quarantine scenario).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

#define WAKE_MS	10000	/* the longest a wake-up may take */

static void *watch_thread(void *arg)
{
	struct mig_watch *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLPRI };
	ssize_t n;
	int r;

	__atomic_store_n(&w->sleeping, 1, __ATOMIC_RELEASE);
	r = poll(&p, 1, WAKE_MS);
	w->woke_ms = now_ms() - w->start_ms;
	w->revents = r == 1 ? p.revents : 0;
	/* sysfs: after a wake-up, read again from the start */
	n = pread(w->fd, w->after, sizeof(w->after) - 1, 0);
	w->after[n > 0 ? n : 0] = 0;
	w->after[strcspn(w->after, "\n")] = 0;
	return NULL;
}

/*
 * mig_watch_begin() - sleep in poll() on migration/@key of @name, in a
 * thread: 0 once the file was read and nothing woke a first poll of
 * 100 ms (a file that always polls ready would prove nothing), and the
 * thread is in its poll.
 */
int mig_watch_begin(struct mig_watch *w, const char *name, const char *key)
{
	struct pollfd p;
	char path[PATH_MAX];
	int tries;
	ssize_t n;

	memset(w, 0, sizeof(*w));
	snprintf(w->key, sizeof(w->key), "%s", key);
	snprintf(path, sizeof(path), "%s/migration/%s", dev_sysdir(name), key);
	w->fd = open(path, O_RDONLY);
	if (w->fd < 0)
		return fail("%s: %s", path, strerror(errno));
	/*
	 * A wake-up of an earlier change may still be on its way (they are
	 * sent from a work item): read again after one, five times at most.
	 */
	for (tries = 0;; tries++) {
		n = pread(w->fd, w->before, sizeof(w->before) - 1, 0);
		w->before[n > 0 ? n : 0] = 0;
		w->before[strcspn(w->before, "\n")] = 0;
		p = (struct pollfd){ .fd = w->fd, .events = POLLPRI };
		if (poll(&p, 1, 100) == 0)
			break;
		if (tries == 4) {
			close(w->fd);
			return fail("migration/%s polls ready with nothing changed (revents 0x%x)",
				    key, p.revents);
		}
	}
	w->start_ms = now_ms();
	if (pthread_create(&w->t, NULL, watch_thread, w)) {
		close(w->fd);
		return fail("pthread_create");
	}
	while (!__atomic_load_n(&w->sleeping, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(200 * 1000);	/* well inside poll() by now */
	return 0;
}

/*
 * mig_watch_end() - the poll woke (POLLPRI) after the change: 0, with
 * w->after what the file then says.
 */
int mig_watch_end(struct mig_watch *w)
{
	pthread_join(w->t, NULL);
	close(w->fd);
	CHECK(w->revents & POLLPRI,
	      "a poll() on migration/%s did not wake within %d ms (revents 0x%x; \"%s\" then \"%s\")",
	      w->key, WAKE_MS, w->revents, w->before, w->after);
	CHECK(w->woke_ms >= 200,
	      "migration/%s woke after %llu ms, before the change", w->key,
	      (unsigned long long)w->woke_ms);
	printf("    # poll() on migration/%s woke %llu ms after it began: \"%s\" -> \"%s\"\n",
	       w->key, (unsigned long long)w->woke_ms, w->before, w->after);
	return 0;
}

/*
 * A monitor's poll() wakes on a state change (migration/state and the
 * status summary), and on a refused stream (migration/last_error).
 */
int t_notify(struct gpu *g)
{
	static const uint8_t junk[64] = "not a gpumig stream at all";
	struct mig_watch w, ws;
	int fd = -1;

	gpu_setup(g, 16);
	CHECK(mig_text(g->name, "state", w.after, sizeof(w.after)) == 0 &&
	      !strcmp(w.after, "RUNNING"), "not RUNNING: %s", w.after);

	TRY(mig_watch_begin(&w, g->name, "state"));
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	TRY(mig_watch_end(&w));
	CHECK(!strcmp(w.after, "STOP"), "migration/state woke with \"%s\", not STOP", w.after);

	TRY(mig_watch_begin(&ws, g->name, "status"));
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	TRY(mig_watch_end(&ws));
	CHECK(strstr(ws.after, "state=RUNNING "), "migration/status woke with \"%s\"", ws.after);

	/* A stream that is no stream: refused, and last_error says so. */
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0 &&
	      mig_set(g, VFIO_DEVICE_STATE_RESUMING, &fd) == 0, "RESUMING");
	TRY(mig_watch_begin(&w, g->name, "last_error"));
	if (mig_write(fd, junk, sizeof(junk), sizeof(junk)) == 0)
		CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) < 0, "a junk stream was accepted");
	TRY(mig_watch_end(&w));
	CHECK(w.after[0] && strcmp(w.after, w.before),
	      "migration/last_error woke with \"%s\" (was \"%s\")", w.after, w.before);
	data_fd_close(fd);
	CHECK(gpu_reset(g) == 0, "reset after the refused stream");
	CHECK(mig_text(g->name, "state", w.after, sizeof(w.after)) == 0 &&
	      !strcmp(w.after, "RUNNING"), "not RUNNING after the reset: %s", w.after);
	return 0;
}
