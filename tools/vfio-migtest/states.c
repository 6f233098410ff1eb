// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: the state machine: the feature, every arc against the VFIO core's own
 * table, bad targets, a reset and a close in every state.
 */
#include "migtest.h"

/* ---- the checks ------------------------------------------------------ */

int t_feature(void)
{
	int ret = mig_flags(src.fd, &src.flags);

	if (ret)
		return failed("VFIO_DEVICE_FEATURE_MIGRATION: %s", strerror(-ret));
	diag("migration flags 0x%llx:%s%s%s", (unsigned long long)src.flags,
	     src.flags & VFIO_MIGRATION_STOP_COPY ? " STOP_COPY" : "",
	     src.flags & VFIO_MIGRATION_P2P ? " P2P" : "",
	     src.flags & VFIO_MIGRATION_PRE_COPY ? " PRE_COPY" : "");
	if (!(src.flags & VFIO_MIGRATION_STOP_COPY))
		return failed("VFIO_MIGRATION_STOP_COPY is mandatory and missing");
	if (src.flags & ~(uint64_t)(VFIO_MIGRATION_STOP_COPY | VFIO_MIGRATION_P2P |
				    VFIO_MIGRATION_PRE_COPY))
		return failed("flags the uAPI does not define: 0x%llx",
			      (unsigned long long)src.flags);
	return 0;
}

int t_initial_running(void)
{
	uint32_t s;
	int ret = dev_reopen(&src) ?: get_state(src.fd, &s);

	if (ret)
		return failed("get state: %s", strerror(-ret));
	return s == VFIO_DEVICE_STATE_RUNNING ? 0 : failed("a fresh device is in state %u", s);
}

/*
 * The uAPI's state machine as the VFIO core walks it
 * (vfio_mig_get_next_state() in drivers/vfio/vfio_main.c, and its comment
 * in include/uapi/linux/vfio.h): from a state, the next one on the way to
 * a target, unsupported states skipped.  ERROR: no way.
 */

static const uint8_t fsm[NR_STATES][NR_STATES] = {
	[S_STOP] = { [S_STOP] = S_STOP, [S_RUN] = S_RP2P, [S_PRE] = S_RP2P, [S_PREP] = S_RP2P,
		     [S_SC] = S_SC, [S_RES] = S_RES, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_RUN] = { [S_STOP] = S_RP2P, [S_RUN] = S_RUN, [S_PRE] = S_PRE, [S_PREP] = S_RP2P,
		    [S_SC] = S_RP2P, [S_RES] = S_RP2P, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_PRE] = { [S_STOP] = S_RUN, [S_RUN] = S_RUN, [S_PRE] = S_PRE, [S_PREP] = S_PREP,
		    [S_SC] = S_PREP, [S_RES] = S_RUN, [S_RP2P] = S_RUN, [S_ERR] = S_ERR },
	[S_PREP] = { [S_STOP] = S_RP2P, [S_RUN] = S_RP2P, [S_PRE] = S_PRE, [S_PREP] = S_PREP,
		     [S_SC] = S_SC, [S_RES] = S_RP2P, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_SC] = { [S_STOP] = S_STOP, [S_RUN] = S_STOP, [S_PRE] = S_ERR, [S_PREP] = S_ERR,
		   [S_SC] = S_SC, [S_RES] = S_STOP, [S_RP2P] = S_STOP, [S_ERR] = S_ERR },
	[S_RES] = { [S_STOP] = S_STOP, [S_RUN] = S_STOP, [S_PRE] = S_STOP, [S_PREP] = S_STOP,
		    [S_SC] = S_STOP, [S_RES] = S_RES, [S_RP2P] = S_STOP, [S_ERR] = S_ERR },
	[S_RP2P] = { [S_STOP] = S_STOP, [S_RUN] = S_RUN, [S_PRE] = S_RUN, [S_PREP] = S_PREP,
		     [S_SC] = S_STOP, [S_RES] = S_STOP, [S_RP2P] = S_RP2P, [S_ERR] = S_ERR },
	[S_ERR] = { [S_STOP] = S_ERR, [S_RUN] = S_ERR, [S_PRE] = S_ERR, [S_PREP] = S_ERR,
		    [S_SC] = S_ERR, [S_RES] = S_ERR, [S_RP2P] = S_ERR, [S_ERR] = S_ERR },
};

/* The arcs that open a data fd: into a saving state from a running one, RESUMING. */
static bool opens_fd(uint32_t a, uint32_t b)
{
	return (a == S_STOP && (b == S_SC || b == S_RES)) || (a == S_RUN && b == S_PRE) ||
	       (a == S_RP2P && b == S_PREP);
}

/*
 * The core's way from @from to @to on this device: 0 (and *@fd whether
 * one of its arcs opens a data fd), or -1 when there is none (the core
 * then says EINVAL).
 */
static int uapi_path(const struct dev *d, uint32_t from, uint32_t to, bool *fd)
{
	uint32_t cur = from, next;
	int steps = 0;

	*fd = false;
	if (!supported(d, to) || !supported(d, from))
		return -1;
	while (cur != to) {
		next = fsm[cur][to];
		while (next != S_ERR && !supported(d, next))
			next = fsm[next][to];
		if (next == S_ERR || ++steps > NR_STATES)
			return -1;
		*fd |= opens_fd(cur, next);
		cur = next;
	}
	return 0;
}

/* From a fresh device: to @from, then to @to; checked against the uAPI. */
static int arc(uint32_t from, uint32_t to)
{
	uint32_t now = 0;
	int fd1 = -1, fd2 = -1, ret;
	bool got_fd, want_fd;

	if (from == VFIO_DEVICE_STATE_RESUMING && to != from && !golden.p)
		return skip("no stream of the device was accepted back to resume from");
	if (dev_reopen(&src))
		return -1;
	ret = set_state(src.fd, from, &fd1);
	if (ret) {
		failed("RUNNING -> %s: %s", state_names[from], strerror(-ret));
		goto out;
	}
	/* Leaving RESUMING loads what was written: a whole stream. */
	if (from == VFIO_DEVICE_STATE_RESUMING && to != from) {
		ret = write_all(fd1, golden.p, golden.len, 1 << 20);
		if (ret) {
			failed("writing the device's own stream in RESUMING: %s", strerror(-ret));
			goto out;
		}
	}
	ret = set_state(src.fd, to, &fd2);
	if (uapi_path(&src, from, to, &want_fd)) {
		if (ret != -EINVAL)
			ret = failed("%s -> %s, which the uAPI has no way to on this device: %s, not EINVAL",
				     state_names[from], state_names[to],
				     ret ? strerror(-ret) : "accepted");
		else
			ret = 0;
		goto out;
	}
	if (ret) {
		failed("%s -> %s: %s", state_names[from], state_names[to], strerror(-ret));
		goto out;
	}
	ret = get_state(src.fd, &now);
	if (ret || now != to) {
		ret = failed("%s -> %s: the state reads %s", state_names[from], state_names[to],
			     ret ? strerror(-ret) : now < NR_STATES ? state_names[now] : "?");
		goto out;
	}
	got_fd = fd2 >= 0;
	if (want_fd != got_fd)
		ret = failed("%s -> %s: %s data fd", state_names[from], state_names[to],
			     fd2 >= 0 ? "an unexpected" : "no");
out:
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
	return ret;
}

void t_arcs(void)
{
	char name[64];
	uint32_t f, t;

	for (f = VFIO_DEVICE_STATE_STOP; f < NR_STATES; f++) {
		if (!supported(&src, f))
			continue;
		for (t = VFIO_DEVICE_STATE_STOP; t < NR_STATES; t++) {
			snprintf(name, sizeof(name), "arc_%s_to_%s", state_names[f],
				 state_names[t]);
			report(name, arc(f, t));
		}
	}
}

/* ERROR and values outside the uAPI are refused as targets (EINVAL). */
int t_bad_targets(void)
{
	static const uint32_t bad[] = { VFIO_DEVICE_STATE_ERROR, NR_STATES, 0x7fffffff };
	unsigned int i;
	uint32_t s;
	int ret;

	if (dev_reopen(&src))
		return -1;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ret = set_state(src.fd, bad[i], NULL);
		if (ret != -EINVAL)
			return failed("target %u: %s, not EINVAL", bad[i],
				      ret ? strerror(-ret) : "accepted");
	}
	if (get_state(src.fd, &s) || s != VFIO_DEVICE_STATE_RUNNING)
		return failed("a refused target left the device out of RUNNING");
	return 0;
}

/*
 * A reset (VFIO_DEVICE_RESET) in every state: the device is RUNNING
 * after it, and a data fd of before it reads or writes an error, never
 * hangs and never more data.
 */
static int reset_in(uint32_t s)
{
	uint32_t now = 0;
	uint8_t buf[4096];
	int fd = -1, ret = 0;

	if (dev_reopen(&src) || set_state(src.fd, s, &fd))
		return failed("-> %s: %s", state_names[s], strerror(errno));
	if (ioctl(src.fd, VFIO_DEVICE_RESET)) {
		ret = failed("VFIO_DEVICE_RESET in %s: %s", state_names[s], strerror(errno));
		goto out;
	}
	if (get_state(src.fd, &now) || now != VFIO_DEVICE_STATE_RUNNING) {
		ret = failed("after a reset in %s the state is %u, not RUNNING", state_names[s],
			     now);
		goto out;
	}
	if (fd >= 0) {
		ssize_t n = s == VFIO_DEVICE_STATE_RESUMING ? write(fd, buf, sizeof(buf)) :
			    read(fd, buf, sizeof(buf));

		if (n > 0)
			ret = failed("the data fd of %s still %s after the reset", state_names[s],
				     s == VFIO_DEVICE_STATE_RESUMING ? "takes data" : "gives data");
	}
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Closing the device in every state: reopened, it is RUNNING again. */
static int close_in(uint32_t s)
{
	uint32_t now = 0;
	int fd = -1, ret;

	if (dev_reopen(&src) || set_state(src.fd, s, &fd))
		return failed("-> %s: %s", state_names[s], strerror(errno));
	/* the device closed with its data fd still open, as a killed VMM leaves it */
	ret = dev_reopen_raw(&src) ?: get_state(src.fd, &now);
	if (fd >= 0) {
		uint8_t buf[4096] = { 0 };
		ssize_t n = s == VFIO_DEVICE_STATE_RESUMING ? write(fd, buf, sizeof(buf)) :
			    read(fd, buf, sizeof(buf));

		close(fd);
		if (n > 0)
			return failed("the data fd of %s still %s after the device closed",
				      state_names[s],
				      s == VFIO_DEVICE_STATE_RESUMING ? "takes data" : "gives data");
	}
	if (ret)
		return failed("reopened after a close in %s: %s", state_names[s], strerror(-ret));
	return now == VFIO_DEVICE_STATE_RUNNING ? 0 :
	       failed("reopened after a close in %s, the device is still in %s, not RUNNING",
		      state_names[s], now < NR_STATES ? state_names[now] : "?");
}

void t_every_state(void)
{
	char name[64];
	uint32_t s;

	for (s = VFIO_DEVICE_STATE_STOP; s < NR_STATES; s++) {
		if (!supported(&src, s))
			continue;
		snprintf(name, sizeof(name), "reset_in_%s", state_names[s]);
		report(name, src.can_reset ? reset_in(s) :
		       skip("the device does not offer VFIO_DEVICE_RESET"));
		snprintf(name, sizeof(name), "close_in_%s", state_names[s]);
		report(name, close_in(s));
	}
}
