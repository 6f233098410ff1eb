// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: the stream itself: read and written back in every split, MIG_DATA_SIZE,
 * truncated and corrupted copies, a second saving fd.
 */
#include "migtest.h"

/* MIG_DATA_SIZE in STOP against what STOP_COPY then produced. */
int t_data_size(void)
{
	struct blob b = { 0 };
	uint64_t est = 0;
	int fd, ret;

	if (dev_reopen(&src) || set_state(src.fd, VFIO_DEVICE_STATE_STOP, NULL))
		return failed("-> STOP: %s", strerror(errno));
	ret = data_size(src.fd, &est);
	if (ret == -ENOTTY || ret == -EOPNOTSUPP)
		return skip("the driver has no VFIO_DEVICE_FEATURE_MIG_DATA_SIZE");
	if (ret)
		return failed("MIG_DATA_SIZE in STOP: %s", strerror(-ret));
	if (set_state(src.fd, VFIO_DEVICE_STATE_STOP_COPY, &fd) || fd < 0)
		return failed("STOP -> STOP_COPY: %s", strerror(errno));
	ret = read_all(fd, &b, 1 << 20, 0);
	close(fd);
	if (ret) {
		free(b.p);
		return failed("reading STOP_COPY's fd: %s", strerror(-ret));
	}
	diag("MIG_DATA_SIZE %llu bytes, STOP_COPY gave %zu (%.2fx)", (unsigned long long)est,
	     b.len, b.len ? (double)est / b.len : 0);
	free(b.p);
	if (est < b.len)
		return failed("MIG_DATA_SIZE said %llu bytes, STOP_COPY gave more: %zu",
			      (unsigned long long)est, b.len);
	if (b.len && est > 4 * b.len)
		diag("warning: MIG_DATA_SIZE is %.1f times what STOP_COPY gave",
		     (double)est / b.len);
	return 0;
}

/*
 * The stream read in one split and written back in another is accepted
 * (RESUMING -> STOP succeeds).  Bytewise for the first 64 KiB only (a
 * syscall a byte), then the split's size.
 */
static const size_t splits[NR_SPLITS][3] = {	/* read piece, bytewise head, write piece */
	{ 1 << 20, 0, 1 << 20 },
	{ 4096, 65536, 4093 },
	{ 4093, 0, 1 << 20 },
	{ 1 << 20, 65536, 1 },
};

static int t_split(unsigned int k)
{
	size_t rp = splits[k][0], wp = splits[k][2];
	size_t whead = wp == 1 ? 65536 : 0;
	struct blob b = { 0 };
	int ret;

	ret = capture(&src, &b, rp, splits[k][1]);
	if (!ret)
		ret = offer_split(dst, b.p, b.len, whead, wp == 1 ? 4093 : wp);
	if (ret >= 0)
		diag("a stream of %zu bytes read in pieces of %zu%s, written in %zu%s: %s", b.len,
		     rp, splits[k][1] ? " (its first 64 KiB bytewise)" : "", wp == 1 ? 4093 : wp,
		     whead ? " (its first 64 KiB bytewise)" : "", ret ? "refused" : "accepted");
	if (!ret && !golden.p) {
		golden = b;
		return 0;
	}
	free(b.p);
	if (ret > 0)
		return failed("a whole stream was refused (a write or RESUMING -> STOP failed)");
	return ret;
}

/* A truncated stream is refused (by a write or by RESUMING -> STOP). */
int t_truncated(void)
{
	static const double cut[] = { 0.5, 0.9, 0.999 };
	unsigned int i;

	if (!golden.p)
		return skip("no stream was accepted whole");
	for (i = 0; i < ARRAY_SIZE(cut); i++) {
		size_t n = (size_t)(golden.len * cut[i]);
		int ret = offer(dst, golden.p, n, 1 << 20);

		if (ret < 0)
			return -1;
		if (!ret)
			return failed("the first %zu of %zu bytes were accepted as a whole stream",
				      n, golden.len);
	}
	return 0;
}

static uint32_t rnd(void)
{
	seed = seed * 1103515245 + 12345;
	return seed >> 8;
}

/*
 * Corrupted copies: random bytes flipped, or a piece cut out of the
 * middle.  What a device accepts of them is its figure; without knowing
 * the format, any accepted one may be a flip in padding, so this only
 * fails when more than half are accepted and says the count either way.
 */
int t_corrupted(void)
{
	unsigned int i, flips = 0, cuts = 0, n = nr_corrupt;
	uint8_t *c;

	if (!golden.p)
		return skip("no stream was accepted whole");
	c = malloc(golden.len);
	if (!c)
		return failed("out of memory");
	for (i = 0; i < n; i++) {
		size_t len = golden.len, at = rnd() % golden.len;
		int ret, j;

		memcpy(c, golden.p, golden.len);
		if (i % 2) {
			size_t cut = 1 + rnd() % (golden.len / 8 + 1);

			if (at + cut > len)
				cut = len - at;
			memmove(c + at, c + at + cut, len - at - cut);
			len -= cut;
		} else {
			for (j = 0; j < 1 + (int)(rnd() % 4); j++)
				c[rnd() % len] ^= 1 + rnd() % 255;
		}
		ret = offer(dst, c, len, 1 << 20);
		if (ret < 0) {
			free(c);
			return -1;
		}
		if (!ret)
			*(i % 2 ? &cuts : &flips) += 1;
	}
	free(c);
	diag("accepted %u of %u corrupted streams (%u with bytes flipped, %u with a piece cut)",
	     flips + cuts, n, flips, cuts);
	if ((flips + cuts) * 2 > n)
		return failed("accepted %u of %u corrupted streams", flips + cuts, n);
	return 0;
}

/* ---- second saving fd, poll(), PRECOPY_INFOv2 ------------------------------ */

/*
 * A second saving fd: a save after a save gives a complete stream of its
 * own, which loads, and the first fd, its state left, gives no more data.
 * The same for a second PRE_COPY after RUNNING.
 */
int t_second_saving_fd(void)
{
	struct blob b = { 0 };
	int fd1 = -1, fd2 = -1, ret;
	uint8_t c;

	if (dev_reopen(&src) || set_state(src.fd, S_SC, &fd1) || fd1 < 0)
		return failed("RUNNING -> STOP_COPY: %s", strerror(errno));
	ret = read_all(fd1, &b, 1 << 20, 0);
	if (ret) {
		ret = failed("the first STOP_COPY fd: %s", strerror(-ret));
		goto out;
	}
	if (set_state(src.fd, S_STOP, NULL) || set_state(src.fd, S_SC, &fd2) || fd2 < 0) {
		ret = failed("STOP_COPY -> STOP -> STOP_COPY: %s", strerror(errno));
		goto out;
	}
	if (read(fd1, &c, 1) > 0) {
		ret = failed("the first saving fd gave data after STOP and a second STOP_COPY");
		goto out;
	}
	b.len = 0;
	ret = read_all(fd2, &b, 1 << 20, 0);
	if (ret || !b.len) {
		ret = failed("the second STOP_COPY fd: %s", ret ? strerror(-ret) : "no data");
		goto out;
	}
	close(fd2);
	fd2 = -1;
	if (set_state(src.fd, S_STOP, NULL)) {
		ret = failed("STOP_COPY -> STOP: %s", strerror(errno));
		goto out;
	}
	ret = offer(dst, b.p, b.len, 1 << 20);
	if (ret) {
		if (ret > 0)
			ret = failed("the second save's stream (%zu bytes) was refused", b.len);
		goto out;
	}
	close(fd1);
	fd1 = -1;
	if (!(src.flags & VFIO_MIGRATION_PRE_COPY))
		goto out;
	if (dev_reopen(&src) || set_state(src.fd, S_PRE, &fd1) || fd1 < 0 ||
	    set_state(src.fd, S_RUN, NULL) || set_state(src.fd, S_PRE, &fd2) || fd2 < 0) {
		ret = failed("RUNNING -> PRE_COPY -> RUNNING -> PRE_COPY: %s", strerror(errno));
		goto out;
	}
	if (read(fd1, &c, 1) > 0) {
		ret = failed("the first PRE_COPY fd gave data after RUNNING and a second PRE_COPY");
		goto out;
	}
	if (read(fd2, &c, 1) != 1)
		ret = failed("the second PRE_COPY fd gave no initial data: %s", strerror(errno));
	set_state(src.fd, S_RUN, NULL);
out:
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
	free(b.p);
	return ret;
}

/* The stream read and written back in every split. */
void t_splits(void)
{
	char name[64];
	unsigned int k;

	for (k = 0; k < NR_SPLITS; k++) {
		snprintf(name, sizeof(name), "stream_read_%zu_written_%zu", splits[k][0],
			 splits[k][2]);
		report(name, t_split(k));
	}
}
