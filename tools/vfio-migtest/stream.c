// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: streams: read from a saving fd and written into a resuming one, in any
 * split.
 */
#include "migtest.h"

/* ---- streams -------------------------------------------------------- */

static int blob_add(struct blob *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1 << 20;
		uint8_t *q;

		while (cap < b->len + n)
			cap *= 2;
		if (cap > STREAM_MAX)
			return -EFBIG;
		q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/*
 * Read @fd in pieces of @piece bytes (the first @small bytes one at a
 * time when @small) until end of data (0) or ENOMSG (-ENOMSG); -errno on
 * another error.
 */
int read_all(int fd, struct blob *b, size_t piece, size_t small)
{
	uint8_t buf[1 << 20];
	ssize_t n;
	int ret;

	for (;;) {
		size_t want = b->len < small ? 1 : piece;

		n = read(fd, buf, want);
		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		ret = blob_add(b, buf, n);
		if (ret)
			return ret;
	}
}

/* Write @len bytes in pieces of @piece: 0, or -errno of the first refusal. */
int write_all(int fd, const uint8_t *p, size_t len, size_t piece)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		size_t want = len - off < piece ? len - off : piece;

		n = write(fd, p + off, want);
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		off += n;
	}
	return 0;
}

/* The STOP_COPY stream of a fresh device, read in @piece (first @small bytewise). */
int capture(struct dev *d, struct blob *b, size_t piece, size_t small)
{
	int fd, ret;

	b->len = 0;
	ret = dev_reopen(d);
	if (ret)
		return ret;
	ret = set_state(d->fd, VFIO_DEVICE_STATE_STOP_COPY, &fd);
	if (ret || fd < 0)
		return failed("RUNNING -> STOP_COPY: %s", ret ? strerror(-ret) : "no data fd");
	ret = read_all(fd, b, piece, small);
	close(fd);
	if (ret)
		return failed("reading STOP_COPY's fd: %s", strerror(-ret));
	if (!b->len)
		return failed("STOP_COPY produced no data");
	return set_state(d->fd, VFIO_DEVICE_STATE_STOP, NULL) ?
	       failed("STOP_COPY -> STOP: %s", strerror(errno)) : 0;
}

/*
 * Offer @len bytes to a fresh @to in RESUMING, the first @head bytes one
 * at a time, the rest in @piece: 0 when RESUMING -> STOP accepted it, 1
 * when it was refused (by a write or by the arc), -1 when the test could
 * not run.
 */
int offer_split(struct dev *to, const uint8_t *p, size_t len, size_t head, size_t piece)
{
	int fd, ret;

	if (head > len)
		head = len;
	if (dev_reopen(to) || set_state(to->fd, VFIO_DEVICE_STATE_STOP, NULL) ||
	    set_state(to->fd, VFIO_DEVICE_STATE_RESUMING, &fd) || fd < 0)
		return failed("%s: cannot enter RESUMING: %s", to->name, strerror(errno));
	ret = write_all(fd, p, head, 1);
	if (!ret)
		ret = write_all(fd, p + head, len - head, piece);
	if (!ret)
		ret = set_state(to->fd, VFIO_DEVICE_STATE_STOP, NULL);
	close(fd);
	return ret ? 1 : 0;
}

int offer(struct dev *to, const uint8_t *p, size_t len, size_t piece)
{
	return offer_split(to, p, len, 0, piece);
}
