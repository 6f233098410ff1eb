// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: PRE_COPY: PRECOPY_INFO and its figures, poll() of a saving fd, the
 * PRECOPY_INFOv2 opt-in.
 */
#include "migtest.h"

int precopy_info(int fd, struct vfio_precopy_info *i)
{
	memset(i, 0, sizeof(*i));
	i->argsz = sizeof(*i);
	return ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, i) ? -errno : 0;
}

/*
 * PRE_COPY: PRECOPY_INFO answers in PRE_COPY and PRE_COPY_P2P and is
 * refused (EINVAL) once the fd went on to STOP_COPY; its two figures
 * never exceed what the fd then produces before ENOMSG; poll(), where
 * the fd has it, is not readable exactly when a read returns ENOMSG.
 */
int t_precopy(void)
{
	struct vfio_precopy_info i;
	struct blob b = { 0 };
	struct pollfd p;
	int fd = -1, ret;
	uint64_t said;

	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src) || set_state(src.fd, VFIO_DEVICE_STATE_PRE_COPY, &fd) || fd < 0)
		return failed("RUNNING -> PRE_COPY: %s", strerror(errno));
	ret = precopy_info(fd, &i);
	if (ret) {
		ret = failed("PRECOPY_INFO in PRE_COPY: %s", strerror(-ret));
		goto out;
	}
	said = i.initial_bytes + i.dirty_bytes;
	ret = read_all(fd, &b, 65536, 0);
	if (ret != -ENOMSG) {
		ret = failed("pre-copy read ended with %s, not ENOMSG",
			     ret ? strerror(-ret) : "end of data");
		goto out;
	}
	diag("pre-copy: PRECOPY_INFO said %llu + %llu bytes, the fd gave %zu before ENOMSG",
	     (unsigned long long)i.initial_bytes, (unsigned long long)i.dirty_bytes, b.len);
	if (said > b.len) {
		ret = failed("PRECOPY_INFO said %llu bytes, the fd gave %zu before ENOMSG",
			     (unsigned long long)said, b.len);
		goto out;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
		uint8_t c;

		/* readable: a read must not be ENOMSG (or the fd has no poll) */
		if (read(fd, &c, 1) < 0 && errno == ENOMSG)
			diag("poll() says readable where a read is ENOMSG: the fd has no poll()");
	}
	if (set_state(src.fd, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) == 0 &&
	    (src.flags & VFIO_MIGRATION_P2P)) {
		ret = precopy_info(fd, &i);
		if (ret) {
			ret = failed("PRECOPY_INFO in PRE_COPY_P2P: %s", strerror(-ret));
			goto out;
		}
	}
	if (set_state(src.fd, VFIO_DEVICE_STATE_STOP_COPY, NULL)) {
		ret = failed("-> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	ret = precopy_info(fd, &i);
	ret = ret == -EINVAL ? 0 : failed("PRECOPY_INFO in STOP_COPY: %s, not EINVAL",
					  ret ? strerror(-ret) : "answered");
out:
	if (fd >= 0)
		close(fd);
	free(b.p);
	return ret;
}

/* PRECOPY_INFO on a fd that is not a saving fd in PRE_COPY: refused. */
int t_precopy_info_elsewhere(void)
{
	struct vfio_precopy_info i;
	int fd, ret;

	if (dev_reopen(&src) || set_state(src.fd, VFIO_DEVICE_STATE_STOP, NULL) ||
	    set_state(src.fd, VFIO_DEVICE_STATE_RESUMING, &fd) || fd < 0)
		return failed("-> RESUMING: %s", strerror(errno));
	ret = precopy_info(fd, &i);
	close(fd);
	if (ret != -EINVAL && ret != -ENOTTY)
		return failed("PRECOPY_INFO on a resuming fd: %s, not EINVAL",
			      ret ? strerror(-ret) : "answered");
	return 0;
}

/* poll() of @fd with no wait: its revents, or -errno. */
static int poll_now(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	return n < 0 ? -errno : n ? p.revents : 0;
}

/*
 * poll() of a saving fd, where the device offers it: on a device doing
 * nothing, readable exactly when a read does not fail with ENOMSG, a wait
 * at the temporary end times out, and in STOP_COPY always readable, at
 * the end of the stream too.  The VFS's default for a file without poll
 * (readable and writable, always) means the device offers none.
 */
int t_saving_poll(void)
{
	struct blob b = { 0 };
	int fd = -1, r, ret;
	uint8_t c;
	ssize_t n;

	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src) || set_state(src.fd, S_PRE, &fd) || fd < 0)
		return failed("RUNNING -> PRE_COPY: %s", strerror(errno));
	{
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

		r = poll(&p, 1, 0) == 1 ? p.revents : 0;
	}
	if (r & POLLOUT) {
		ret = skip("the saving fd has no poll() (it polls 0x%x, the VFS's default)", r);
		goto out;
	}
	ret = read_all(fd, &b, 1 << 20, 0);
	if (ret != -ENOMSG) {
		ret = failed("pre-copy read ended with %s, not ENOMSG",
			     ret ? strerror(-ret) : "end of data");
		goto out;
	}
	r = poll_now(fd, 0);
	n = read(fd, &c, 1);
	if (r < 0) {
		ret = failed("poll(): %s", strerror(-r));
		goto out;
	}
	if ((r & POLLIN) && n < 0 && errno == ENOMSG) {
		ret = failed("the saving fd polls readable (0x%x) where a read is ENOMSG", r);
		goto out;
	}
	if (!(r & POLLIN) && n >= 0) {
		ret = failed("the saving fd polls 0x%x, not readable, where a read gives %zd", r,
			     n);
		goto out;
	}
	/* a wait at the temporary end of an idle device times out */
	r = poll_now(fd, 200);
	if (r > 0 && (r & POLLIN) && read(fd, &c, 1) < 0 && errno == ENOMSG) {
		ret = failed("poll() woke (0x%x) where a read is still ENOMSG", r);
		goto out;
	}
	if (set_state(src.fd, S_SC, NULL)) {
		ret = failed("-> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	r = poll_now(fd, 0);
	if (r <= 0 || !(r & POLLIN)) {
		ret = failed("in STOP_COPY the saving fd polls 0x%x, not readable", r);
		goto out;
	}
	b.len = 0;
	ret = read_all(fd, &b, 1 << 20, 0);
	if (ret) {
		ret = failed("STOP_COPY's read: %s", strerror(-ret));
		goto out;
	}
	r = poll_now(fd, 0);
	ret = r > 0 && (r & POLLIN) ? 0 :
	      failed("at the end of the stream the saving fd polls 0x%x, not readable", r);
out:
	if (fd >= 0)
		close(fd);
	free(b.p);
	return ret;
}

int feature(int fd, uint32_t flags)
{
	return log_feature(fd, flags, NULL, 0);
}

bool v2_offered;

/*
 * VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2 (6.19): a SET only opt-in, after
 * which PRECOPY_INFO's flags are an output: nothing but
 * VFIO_PRECOPY_INFO_REINIT, whatever the VMM passed in.
 */
int t_precopy_info_v2(void)
{
	struct vfio_precopy_info i;
	int fd = -1, ret;

	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		return skip("the device does not offer PRE_COPY");
	if (dev_reopen(&src))
		return -1;
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_PROBE | VFIO_DEVICE_FEATURE_SET |
		      VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	/* an older core passes the feature to the driver: ENOTTY, or EINVAL without one */
	if (ret == -ENOTTY || ret == -EINVAL)
		return skip("the kernel has no VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2 (6.19 and later): %s",
			    strerror(-ret));
	if (ret)
		return failed("PROBE of PRECOPY_INFOv2 for SET: %s", strerror(-ret));
	v2_offered = true;
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_PROBE | VFIO_DEVICE_FEATURE_GET |
		      VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	if (ret != -EINVAL)
		return failed("PROBE of PRECOPY_INFOv2 for GET: %s, not EINVAL",
			      ret ? strerror(-ret) : "offered");
	ret = feature(src.fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_MIG_PRECOPY_INFOv2);
	if (ret)
		return failed("SET of PRECOPY_INFOv2: %s", strerror(-ret));
	if (set_state(src.fd, S_PRE, &fd) || fd < 0)
		return failed("RUNNING -> PRE_COPY: %s", strerror(errno));
	memset(&i, 0, sizeof(i));
	i.argsz = sizeof(i);
	i.flags = ~0U;
	if (ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &i)) {
		ret = failed("PRECOPY_INFO after the opt-in: %s", strerror(errno));
	} else if (i.flags & ~VFIO_PRECOPY_INFO_REINIT) {
		ret = failed("PRECOPY_INFO's flags after the opt-in are 0x%x: bits the uAPI does not define (passed in 0xffffffff)",
			     i.flags);
	} else {
		if (i.flags)
			diag("a fresh saving fd says REINIT");
		ret = 0;
	}
	close(fd);
	set_state(src.fd, S_RUN, NULL);
	return ret;
}
