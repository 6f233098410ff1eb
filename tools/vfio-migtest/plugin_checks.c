// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: the checks that need the device to act, through its plug-in
 * (vfio-migtest-plugin.h): data round trips, REINIT, ERROR.
 */
#include "migtest.h"

/* ---- with the device plug-in ---------------------------------------------- */

static uint32_t plug_seed(unsigned int k)
{
	return seed * 7919 + k;
}

int plug_err(const char *op, int ret)
{
	if (ret == -EOPNOTSUPP)
		return skip("the %s plug-in cannot %s on this device", plug->name, op);
	return failed("the %s plug-in's %s: %s", plug->name, op, strerror(-ret));
}

/*
 * Save the running @d: through PRE_COPY to its temporary end when @pre
 * (where the plug-in then loads @again into the running device, and the
 * rest is read again), then STOP_COPY to the end; the device is in STOP.
 */
static int save_running(struct dev *d, struct blob *b, bool pre, uint32_t again)
{
	int fd = -1, ret;

	b->len = 0;
	if (set_state(d->fd, pre ? S_PRE : S_SC, &fd) || fd < 0)
		return failed("RUNNING -> %s: %s", pre ? "PRE_COPY" : "STOP_COPY",
			      strerror(errno));
	if (pre) {
		ret = read_all(fd, b, 1 << 20, 0);
		if (ret != -ENOMSG) {
			ret = failed("pre-copy read: %s", ret ? strerror(-ret) : "end of data");
			goto out;
		}
		ret = plug->load(d->plugged, again);
		if (ret) {
			ret = plug_err("load state during PRE_COPY", ret);
			goto out;
		}
		ret = read_all(fd, b, 1 << 20, 0);
		if (ret != -ENOMSG && ret) {
			ret = failed("pre-copy read after the change: %s", strerror(-ret));
			goto out;
		}
		if (set_state(d->fd, S_SC, NULL)) {
			ret = failed("PRE_COPY -> STOP_COPY: %s", strerror(errno));
			goto out;
		}
	}
	ret = read_all(fd, b, 1 << 20, 0);
	if (ret) {
		ret = failed("STOP_COPY's read: %s", strerror(-ret));
		goto out;
	}
	ret = set_state(d->fd, S_STOP, NULL) ? failed("STOP_COPY -> STOP: %s", strerror(errno)) : 0;
out:
	close(fd);
	return ret;
}

/*
 * A data round trip: the destination, resumed from the stream, holds what
 * the source held when it stopped (as the plug-in verifies it): state
 * loaded before a stop-and-copy, or, with @pre, state changed while
 * pre-copy ran.  When the destination is the source itself, the source is
 * loaded with other state first, so only the stream can bring it back.
 */
int t_plug_round_trip(bool pre)
{
	uint32_t s1 = plug_seed(1), s2 = plug_seed(2), want = pre ? s2 : s1;
	struct blob b = { 0 };
	char what[256] = "";
	int ret;

	if (!plug || !plug->load || !plug->verify)
		return NO_PLUG("load and verify device state");
	if (pre && !(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src) || plug_attach(&src))
		return -1;
	ret = plug->load(src.plugged, s1);
	if (ret) {
		ret = plug_err("load state", ret);
		goto out;
	}
	ret = save_running(&src, &b, pre, s2);
	if (ret)
		goto out;
	if (!two) {
		if (set_state(src.fd, S_RUN, NULL)) {
			ret = failed("STOP -> RUNNING: %s", strerror(errno));
			goto out;
		}
		ret = plug->load(src.plugged, plug_seed(3));
		if (ret) {
			ret = plug_err("load state", ret);
			goto out;
		}
	}
	plug_detach(&src);
	ret = offer(dst, b.p, b.len, 1 << 20);
	if (ret) {
		if (ret > 0)
			ret = failed("the destination refused the stream (%zu bytes)", b.len);
		goto out;
	}
	if (set_state(dst->fd, S_RUN, NULL) || plug_attach(dst)) {
		ret = failed("%s: STOP -> RUNNING after resuming: %s", dst->name, strerror(errno));
		goto out;
	}
	ret = plug->verify(dst->plugged, want, what, sizeof(what));
	if (ret > 0)
		ret = failed("the destination does not hold what the source held: %s", what);
	else if (ret)
		ret = plug_err("verify state", ret);
	diag("round trip%s: %zu bytes of stream", pre ? " through pre-copy" : "", b.len);
out:
	plug_detach(&src);
	plug_detach(dst);
	free(b.p);
	return ret;
}

/*
 * VFIO_PRECOPY_INFO_REINIT: after the opt-in, a device its guest
 * re-initialised in the middle of PRE_COPY says so once it has, with new
 * initial bytes the fd then gives; the stream, re-initialisation and all,
 * loads.
 */
int t_plug_reinit(void)
{
	struct vfio_precopy_info i;
	struct blob b = { 0 };
	int fd = -1, ret;

	if (!plug || !plug->reinit)
		return NO_PLUG("re-initialise the device as its guest would");
	if (!v2_offered)
		return skip("no PRECOPY_INFOv2 opt-in (see precopy_info_v2)");
	if (dev_reopen(&src) || plug_attach(&src))
		return -1;
	if (plug->load) {
		ret = plug->load(src.plugged, plug_seed(4));
		if (ret) {
			ret = plug_err("load state", ret);
			goto out;
		}
	}
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	if (ret || set_state(src.fd, S_PRE, &fd) || fd < 0) {
		ret = failed("the opt-in and RUNNING -> PRE_COPY: %s",
			     strerror(ret ? -ret : errno));
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	if (ret != -ENOMSG) {
		ret = failed("pre-copy read: %s", ret ? strerror(-ret) : "end of data");
		goto out;
	}
	ret = precopy_info(fd, &i);
	if (ret || (i.flags & VFIO_PRECOPY_INFO_REINIT)) {
		ret = failed("PRECOPY_INFO before the re-initialisation: %s",
			     ret ? strerror(-ret) : "REINIT already");
		goto out;
	}
	ret = plug->reinit(src.plugged);
	if (ret) {
		ret = plug_err("re-initialise the device", ret);
		goto out;
	}
	ret = precopy_info(fd, &i);
	/* its initial_bytes "may" be non-zero: a reset that changed no memory has none */
	if (ret || !(i.flags & VFIO_PRECOPY_INFO_REINIT)) {
		ret = failed("PRECOPY_INFO after the guest re-initialised the device: %s",
			     ret ? strerror(-ret) : "no REINIT");
		goto out;
	}
	diag("REINIT with %llu new initial bytes", (unsigned long long)i.initial_bytes);
	{
		size_t before = b.len;
		uint64_t said = i.initial_bytes;

		ret = read_all(fd, &b, 1 << 20, 0);
		if (ret != -ENOMSG && ret) {
			ret = failed("pre-copy read after REINIT: %s", strerror(-ret));
			goto out;
		}
		if (b.len - before < said) {
			ret = failed("REINIT said %llu initial bytes, the fd gave %zu",
				     (unsigned long long)said, b.len - before);
			goto out;
		}
	}
	ret = precopy_info(fd, &i);
	if (ret || i.initial_bytes) {
		ret = failed("PRECOPY_INFO once the new initial data was read: %s",
			     ret ? strerror(-ret) : "initial bytes left");
		goto out;
	}
	if (set_state(src.fd, S_SC, NULL)) {
		ret = failed("PRE_COPY -> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	close(fd);
	fd = -1;
	if (ret || set_state(src.fd, S_STOP, NULL)) {
		ret = failed("STOP_COPY: %s", ret ? strerror(-ret) : strerror(errno));
		goto out;
	}
	plug_detach(&src);
	ret = offer(dst, b.p, b.len, 1 << 20);
	if (ret > 0)
		ret = failed("a stream with a re-initialisation in it (%zu bytes) was refused",
			     b.len);
out:
	if (fd >= 0)
		close(fd);
	plug_detach(&src);
	free(b.p);
	return ret;
}

/*
 * ERROR: a device that lost its state under the VMM (the plug-in makes it
 * so) ends the stream in flight with an error, reads ERROR, refuses every
 * arc, and a reset (or a close) brings it back RUNNING.
 */
int t_plug_error(void)
{
	struct blob b = { 0 };
	uint32_t now = 0, s = (src.flags & VFIO_MIGRATION_PRE_COPY) ? S_PRE : S_SC;
	int fd = -1, ret;
	uint8_t c;

	if (!plug || !plug->lose)
		return NO_PLUG("make the device lose its state");
	if (dev_reopen(&src) || plug_attach(&src))
		return -1;
	if (set_state(src.fd, s, &fd) || fd < 0) {
		ret = failed("RUNNING -> %s: %s", state_names[s], strerror(errno));
		goto out;
	}
	if (read(fd, &c, 1) != 1) {
		ret = failed("the saving fd's first byte: %s", strerror(errno));
		goto out;
	}
	ret = plug->lose(src.plugged);
	if (ret) {
		ret = plug_err("make the device lose its state", ret);
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	if (!ret || ret == -ENOMSG) {
		ret = failed("the stream in flight ended with %s after the device lost its state, not an error",
			     ret ? "ENOMSG" : "end of data");
		goto out;
	}
	diag("the stream in flight ended with %s", strerror(-ret));
	if (get_state(src.fd, &now) || now != S_ERR) {
		ret = failed("after the device lost its state the migration state is %s, not ERROR",
			     now < NR_STATES ? state_names[now] : "?");
		goto out;
	}
	if (!set_state(src.fd, S_RUN, NULL) || !set_state(src.fd, S_STOP, NULL)) {
		ret = failed("an arc out of ERROR was taken (only a reset leaves it)");
		goto out;
	}
	if (src.can_reset) {
		if (ioctl(src.fd, VFIO_DEVICE_RESET) || get_state(src.fd, &now) || now != S_RUN) {
			ret = failed("VFIO_DEVICE_RESET in ERROR: %s, the state %s",
				     strerror(errno), now < NR_STATES ? state_names[now] : "?");
			goto out;
		}
	}
	close(fd);
	fd = -1;
	ret = dev_reopen_raw(&src) ?: get_state(src.fd, &now);
	if (!ret && now != S_RUN)
		ret = failed("a device closed in ERROR is opened again in %s",
			     now < NR_STATES ? state_names[now] : "?");
out:
	if (fd >= 0)
		close(fd);
	plug_detach(&src);
	/* a destination of the same hardware (a VF of the same PF) is reset too */
	if (two)
		dev_reopen(dst);
	free(b.p);
	return ret;
}
