// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig-mover: carries the VRAM blocks a post-copy migration still owes
 * from the source host's kernel to the destination host's
 * (Documentation/gpumig/postcopy.rst, gpumig-mover.8).
 *
 *   gpumig-mover source TOKEN [--rate BYTES_PER_S]
 *   gpumig-mover destination TOKEN [--abandon-after SECONDS] -- COMMAND...
 *   gpumig-mover follow DEVICE [--timeout SECONDS] [--abandon-after SECONDS]
 *                -- COMMAND...
 *   gpumig-mover abandon TOKEN source|destination
 *   gpumig-mover status TOKEN source|destination
 *
 * follow waits (--timeout, 600 s by default) until DEVICE (an mdev UUID, a
 * PCI address or a sysfs directory) is a post-copy destination with
 * blocks owed, then acts as destination with COMMAND, where "{}" stands
 * for the session token: what a hook does that starts before the stream
 * was restored (tools/libvirt/gpumig-mover-hook).  It exits 4 when no post-copy
 * came.
 *
 * The destination end runs COMMAND, which starts the source end with its
 * stdin and stdout as the link: "ssh SOURCE-HOST gpumig-mover source
 * TOKEN" across hosts (ssh encrypts and authenticates it), or plain
 * "gpumig-mover source TOKEN" on one host.  Over the link the destination
 * sends the blocks its device waits on (WANT) and answers each block, in
 * turn: its kernel took it (ACK) or refused it (NAK: its CRC did not check
 * out, so the link changed it; the source sends it again, three times at
 * most); the source sends blocks, those asked for first, the rest at
 * --rate at most, and END once every block was acknowledged.  Either end
 * may die and be started again: the kernel keeps what is owed, and a block
 * sent twice is answered EALREADY, which counts as delivered.
 *
 * Exit status: 0 when every block was delivered, 1 on an error (the
 * post-copy goes on: start the mover again), 2 on bad usage, 3 when the
 * post-copy was abandoned, 4 when follow found no post-copy.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/gpumig_postcopy.h>

#define MV_MAGIC	0x564d4d47	/* "GMMV" */
#define MV_HELLO	1	/* source -> destination: @block is the block size */
#define MV_BLOCK	2	/* source -> destination: a record follows */
#define MV_END		3	/* source -> destination: everything delivered */
#define MV_WANT		4	/* destination -> source */
#define MV_ACK		5	/* destination -> source */
#define MV_NAK		6	/* destination -> source: the record was refused */

/*
 * The destination answers every record, in the order they came, with an
 * ACK or a NAK; the source end keeps the blocks it sent in that order and
 * sends a refused one again (its CRC did not check out: the link changed
 * it), at most MV_TRIES times in all; the NAK carries the destination's
 * errno, and a refusal of the device's own (not the link's) is retried
 * after a pause instead.
 */
#define MV_TRIES	3
#define MV_DEVICE_TRIES	50	/* 100 ms apart: the device's refusals */

struct mv_msg {
	uint32_t magic;
	uint32_t type;
	uint64_t block;
};

static const char *prog = "gpumig-mover";

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static int bad_usage(void)
{
	fprintf(stderr,
		"Usage: %s source TOKEN [--rate BYTES_PER_S]\n"
		"       %s destination TOKEN [--abandon-after SECONDS] -- COMMAND...\n"
		"       %s follow DEVICE [--timeout SECONDS] [--abandon-after SECONDS] -- COMMAND...\n"
		"       %s abandon TOKEN source|destination\n"
		"       %s status TOKEN source|destination\n",
		prog, prog, prog, prog, prog);
	return 2;
}

static int parse_token(const char *hex, uint8_t *token)
{
	int i;

	if (strlen(hex) != 2 * GPUMIG_PC_TOKEN_LEN)
		return -1;
	for (i = 0; i < 2 * GPUMIG_PC_TOKEN_LEN; i++)
		if (!isxdigit((unsigned char)hex[i]))
			return -1;	/* sscanf's %x would take "+f" or " f" */
	for (i = 0; i < GPUMIG_PC_TOKEN_LEN; i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		token[i] = v;
	}
	return 0;
}

static int attach(const uint8_t *token, uint32_t role, struct gpumig_pc_attach *a)
{
	int fd = open("/dev/" GPUMIG_PC_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die(1, "/dev/%s: %s (is gpumig loaded, and are you root?)", GPUMIG_PC_DEVICE,
		    strerror(errno));
	memset(a, 0, sizeof(*a));
	a->argsz = sizeof(*a);
	a->role = role;
	memcpy(a->token, token, GPUMIG_PC_TOKEN_LEN);
	if (ioctl(fd, GPUMIG_PC_ATTACH, a))
		die(errno == ENOENT ? 3 : 1, "no active %s session of that token: %s",
		    role == GPUMIG_PC_ROLE_SOURCE ? "source" : "destination", strerror(errno));
	return fd;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * Wait until @fd is ready for @events, or until @deadline (now_s()'s
 * clock; 0: none) passes: 1 ready, 0 past the deadline.
 */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int tmo = -1, r;

		if (deadline > 0) {
			double left = deadline - now_s();

			if (left <= 0)
				return 0;
			tmo = left > 1 ? 1000 : (int)(left * 1000) + 1;
		}
		r = poll(&p, 1, tmo);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			die(1, "poll: %s", strerror(errno));
	}
}

/*
 * All @len bytes, by @deadline (0: none): 1, 0 at the end of the file,
 * -1 with errno (ETIMEDOUT past the deadline).  A non-blocking @fd (the
 * link's stdio may be one) is waited on, not an error.
 */
static int read_full(int fd, void *buf, size_t len, double deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (deadline > 0 && !wait_fd(fd, POLLIN, deadline)) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = read(fd, p, len);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!wait_fd(fd, POLLIN, deadline)) {
					errno = ETIMEDOUT;
					return -1;
				}
				continue;
			}
			return -1;
		}
		p += n;
		len -= n;
	}
	return 1;
}

/* All @len bytes, by @deadline (0: none): 0, or -1 with errno. */
static int write_full(int fd, const void *buf, size_t len, double deadline)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (deadline > 0 && !wait_fd(fd, POLLOUT, deadline)) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!wait_fd(fd, POLLOUT, deadline)) {
					errno = ETIMEDOUT;
					return -1;
				}
				continue;
			}
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int send_msg(int fd, uint32_t type, uint64_t block, double deadline)
{
	struct mv_msg m = { .magic = MV_MAGIC, .type = type, .block = block };

	return write_full(fd, &m, sizeof(m), deadline);
}

/* Is there something to read on @fd right now? */
static bool readable_now(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
}

/* ---- source: stdin has WANT/ACK/NAK, stdout gets blocks ------------------ */

/* The blocks sent and not yet answered, oldest first. */
struct sent {
	uint64_t *v;
	size_t head, tail, cap;
};

static void sent_push(struct sent *q, uint64_t blk)
{
	if (q->tail == q->cap && q->head) {
		memmove(q->v, q->v + q->head, (q->tail - q->head) * sizeof(*q->v));
		q->tail -= q->head;
		q->head = 0;
	}
	if (q->tail == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 64;
		q->v = realloc(q->v, q->cap * sizeof(*q->v));
		if (!q->v)
			die(1, "out of memory");
	}
	q->v[q->tail++] = blk;
}

/* The oldest block sent, which the destination just answered. */
static uint64_t sent_pop(struct sent *q)
{
	if (q->head == q->tail)
		die(1, "link: an answer from the destination for no block sent");
	return q->v[q->head++];
}

/* A refusal that says the record changed on the link, not the device. */
static bool link_error(int err)
{
	return err == EBADMSG || err == ERANGE || err == ENOENT || err == EACCES ||
	       err == EINVAL;
}

/* Every block the destination refused, with its counts: few, in practice. */
static struct refusal {
	uint64_t blk;
	unsigned int link, dev;
} *refused;
static size_t nr_refused, refused_cap;

static struct refusal *refusal_of(uint64_t blk)
{
	size_t i;

	for (i = 0; i < nr_refused; i++)
		if (refused[i].blk == blk)
			return &refused[i];
	if (nr_refused == refused_cap) {
		refused_cap = refused_cap ? 2 * refused_cap : 64;
		refused = realloc(refused, refused_cap * sizeof(*refused));
		if (!refused)
			die(1, "out of memory");
	}
	refused[nr_refused] = (struct refusal){ .blk = blk };
	return &refused[nr_refused++];
}

/*
 * A block the destination refused with @err: asked for again, at once for
 * a record the link changed (MV_TRIES times at most), after a pause for a
 * device that could not take it then (MV_DEVICE_TRIES; a PF reset, say).
 * The counts are kept per block for the whole run.
 *
 * Return: true when the block is asked for again.
 */
static bool resend_refused(int fd, uint64_t blk, int err)
{
	struct refusal *r = refusal_of(blk);
	bool link = link_error(err);

	if (link && ++r->link >= MV_TRIES)
		die(1, "block %llu refused %u times by the destination (%s): the link changes the data",
		    (unsigned long long)blk, r->link, strerror(err));
	if (!link && ++r->dev >= MV_DEVICE_TRIES)
		die(1, "block %llu refused %u times by the destination's device (%s)",
		    (unsigned long long)blk, r->dev, strerror(err));
	fprintf(stderr, "%s: block %llu refused by the destination (%s): sending it again\n",
		prog, (unsigned long long)blk, strerror(err));
	if (!link)
		usleep(100000);
	if (!ioctl(fd, GPUMIG_PC_WANT, &blk))
		return true;
	if (errno != EALREADY)
		die(errno == ECONNABORTED ? 3 : 1, "want block %llu again: %s",
		    (unsigned long long)blk, strerror(errno));
	return false;
}

static int run_source(const uint8_t *token, double rate)
{
	struct gpumig_pc_attach a;
	int fd = attach(token, GPUMIG_PC_ROLE_SOURCE, &a);
	size_t reclen = sizeof(struct gpumig_pc_block) + a.block_size;
	uint8_t *rec = malloc(reclen);
	double next = now_s();
	unsigned int wanted = 0;
	struct sent q = { 0 };
	bool more = true;

	if (!rec)
		die(1, "out of memory");
	/* A destination end that went is a write error (exit 1), not a signal. */
	signal(SIGPIPE, SIG_IGN);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (send_msg(1, MV_HELLO, a.block_size, 0))
		die(1, "link: %s", strerror(errno));
	for (;;) {
		struct pollfd p[2] = { { .fd = 0, .events = POLLIN },
				       { .fd = fd, .events = POLLIN } };
		int tmo = -1;
		double t;

		/* Blocks nobody waits on go at --rate; asked-for ones at once. */
		t = now_s();
		if (more && rate > 0 && !wanted && t < next) {
			p[1].events = 0;
			/* a second at most: a tiny --rate must not overflow it */
			tmo = next - t >= 1 ? 1000 : (int)((next - t) * 1000) + 1;
		}
		if (poll(p, 2, tmo) < 0 && errno != EINTR)
			die(1, "poll: %s", strerror(errno));
		/*
		 * Every message already there, before the next block: a
		 * WANT must not wait behind a backlog of ACKs, nor may the
		 * destination end block on a full pipe while this end
		 * blocks sending it a block.
		 */
		if (p[0].revents & (POLLIN | POLLHUP)) {
			do {
				struct mv_msg m;
				int r = read_full(0, &m, sizeof(m), 0);

				if (r == 0)
					return 1;	/* the destination went: start again */
				if (r < 0 || m.magic != MV_MAGIC ||
				    (m.type != MV_WANT && m.type != MV_ACK && m.type != MV_NAK))
					die(1, "link: a bad message from the destination");
				more = true;
				if (m.type == MV_NAK) {
					/* @block is the destination's errno */
					if (resend_refused(fd, sent_pop(&q), (int)m.block))
						wanted++;
					continue;
				}
				if (m.type == MV_ACK && sent_pop(&q) != m.block)
					die(1, "link: block %llu acknowledged out of turn",
					    (unsigned long long)m.block);
				if (!ioctl(fd, m.type == MV_WANT ? GPUMIG_PC_WANT : GPUMIG_PC_ACK,
					   &m.block)) {
					if (m.type == MV_WANT)
						wanted++;
				} else if (errno != EALREADY) {
					die(errno == ECONNABORTED ? 3 : 1, "%s block %llu: %s",
					    m.type == MV_WANT ? "want" : "ack",
					    (unsigned long long)m.block, strerror(errno));
				}
			} while (readable_now(0));
		}
		if (p[1].revents & POLLIN) {
			ssize_t n = read(fd, rec, reclen);

			if (n == 0) {
				send_msg(1, MV_END, 0, 0);
				return 0;
			}
			if (n < 0 && errno == ECONNABORTED)
				die(3, "the post-copy was abandoned");
			if (n < 0 && errno != EAGAIN)
				die(1, "read a held block: %s", strerror(errno));
			if (n < 0) {
				more = false;
				wanted = 0;	/* asked-for blocks come first: none left */
				continue;
			}
			if (send_msg(1, MV_BLOCK, 0, 0) || write_full(1, rec, n, 0))
				return 1;	/* the destination went */
			sent_push(&q, le64toh(((struct gpumig_pc_block *)rec)->block));
			if (wanted)
				wanted--;
			else if (rate > 0)
				next = (next > t ? next : t) + n / rate;
		}
	}
}

/* ---- destination: runs COMMAND, the source end, over two pipes ---------- */

static pid_t spawn(char **argv, int *to, int *from)
{
	int a[2], b[2];
	pid_t pid;

	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC))
		die(1, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die(1, "fork: %s", strerror(errno));
	if (!pid) {
		dup2(a[0], 0);
		dup2(b[1], 1);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s: %s\n", prog, argv[0], strerror(errno));
		_exit(127);
	}
	close(a[0]);
	close(b[1]);
	*to = a[1];
	*from = b[0];
	return pid;
}

/*
 * The source end is done with: its stdin and stdout closed (a source
 * blocked writing a block into a full pipe, or ssh, sees it) and, if it
 * has not exited, ended.  Its status in @status.
 */
static void stop_source(pid_t pid, int to, int from, int *status)
{
	close(to);
	close(from);
	if (waitpid(pid, status, WNOHANG) == pid)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, status, 0);
}

/* The destination's session ended other than with every block: 3. */
static bool dest_ended_lost(int fd)
{
	struct gpumig_pc_status st = { .argsz = sizeof(st) };

	return !ioctl(fd, GPUMIG_PC_STATUS, &st) && st.state == GPUMIG_PC_STATE_ABANDONED;
}

/* When a wait on the link ends: --abandon-after past the last block. */
static double deadline(double last, double abandon_after)
{
	return abandon_after > 0 ? last + abandon_after : 0;
}

static bool timed_out(ssize_t r)
{
	return r < 0 && errno == ETIMEDOUT;
}

/*
 * --abandon-after passed with no block (the source end silent, or stopped
 * mid-record, or not reading): the session is abandoned, exit 3.
 */
static void dest_give_up(int fd, pid_t pid, int to, int from, double abandon_after)
{
	int status;

	stop_source(pid, to, from, &status);
	if (ioctl(fd, GPUMIG_PC_ABANDON))
		die(1, "abandon: %s", strerror(errno));
	die(3, "no block arrived for %.0f s: abandoned, the rest is lost", abandon_after);
}

static int run_destination(const uint8_t *token, double abandon_after, char **cmd)
{
	struct gpumig_pc_attach a;
	int fd = attach(token, GPUMIG_PC_ROLE_DESTINATION, &a), to, from, status;
	size_t reclen = sizeof(struct gpumig_pc_block) + a.block_size;
	uint8_t *rec = malloc(reclen);
	unsigned long long delivered = 0, again = 0, asked = 0;
	double last = now_s();
	bool acks_lost = false, dev_over = false;
	uint64_t blk;
	struct mv_msg m;
	ssize_t n;
	pid_t pid;

	if (!rec)
		die(1, "out of memory");
	signal(SIGPIPE, SIG_IGN);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	pid = spawn(cmd, &to, &from);
	/* Every wait on the link ends by --abandon-after, if given. */
	n = read_full(from, &m, sizeof(m), deadline(last, abandon_after));
	if (timed_out(n))
		dest_give_up(fd, pid, to, from, abandon_after);
	if (n != 1 || m.magic != MV_MAGIC || m.type != MV_HELLO || m.block != a.block_size)
		die(1, "the source end did not start (or has another block size)");
	fprintf(stderr, "%s: %llu of %llu blocks owed\n", prog, (unsigned long long)a.owed,
		(unsigned long long)a.total);
	for (;;) {
		/*
		 * The device's events only while they are read: once its
		 * session is over it stays readable (read gives 0), and a
		 * poll on it would never sleep.
		 */
		int dfd = dev_over || acks_lost ? -1 : fd;
		struct pollfd p[2] = { { .fd = from, .events = POLLIN },
				       { .fd = dfd, .events = POLLIN } };
		int tmo = abandon_after > 0 ? 1000 : -1;
		struct gpumig_pc_event ev;

		if (poll(p, 2, tmo) < 0 && errno != EINTR)
			die(1, "poll: %s", strerror(errno));
		if (abandon_after > 0 && now_s() - last > abandon_after)
			dest_give_up(fd, pid, to, from, abandon_after);
		while (!acks_lost && !dev_over) {
			n = read(fd, &ev, sizeof(ev));
			if (n == 0)
				dev_over = true;	/* nothing owed any more */
			if (n != sizeof(ev))
				break;
			n = send_msg(to, MV_WANT, ev.block, deadline(last, abandon_after));
			if (timed_out(n))
				dest_give_up(fd, pid, to, from, abandon_after);
			if (n)
				break;
			asked++;
		}
		if (dev_over && dest_ended_lost(fd)) {
			stop_source(pid, to, from, &status);
			die(3, "the post-copy ended on this host after %llu blocks (timed out, abandoned or the device went): the rest is lost",
			    delivered);
		}
		if (!(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		n = read_full(from, &m, sizeof(m), deadline(last, abandon_after));
		if (timed_out(n))
			dest_give_up(fd, pid, to, from, abandon_after);
		if (n != 1 || m.magic != MV_MAGIC)
			break;	/* the source end went */
		if (m.type == MV_END) {
			waitpid(pid, &status, 0);
			fprintf(stderr, "%s: done: %llu blocks delivered (%llu again, %llu asked for first)\n",
				prog, delivered, again, asked);
			return 0;
		}
		if (m.type != MV_BLOCK)
			break;
		n = read_full(from, rec, reclen, deadline(last, abandon_after));
		if (timed_out(n))
			dest_give_up(fd, pid, to, from, abandon_after);
		if (n != 1)
			break;
		blk = le64toh(((struct gpumig_pc_block *)rec)->block);
		if (write(fd, rec, reclen) == (ssize_t)reclen) {
			delivered++;
		} else if (errno == EALREADY) {
			again++;
		} else if (errno == ENODEV || errno == ENXIO) {
			/* Over on this host: timed out, abandoned, the device gone. */
			stop_source(pid, to, from, &status);
			die(3, "the post-copy ended on this host after %llu blocks (timed out, abandoned or the device went): the rest is lost",
			    delivered);
		} else {
			/*
			 * A block that does not check out is not acknowledged
			 * (its number, as it came, may be wrong too): the
			 * source end sends the block it sent then again.
			 */
			int err = errno;

			fprintf(stderr, "%s: block %llu refused: %s\n", prog,
				(unsigned long long)blk, strerror(err));
			n = send_msg(to, MV_NAK, err, deadline(last, abandon_after));
			if (timed_out(n))
				dest_give_up(fd, pid, to, from, abandon_after);
			if (n && !acks_lost) {
				acks_lost = true;
				fprintf(stderr, "%s: the source end stopped reading after %llu blocks\n",
					prog, delivered);
			}
			continue;
		}
		last = now_s();
		/*
		 * The source end may already have seen the session end and
		 * sent MV_END (on one host both ends watch one session): an
		 * acknowledgment it no longer reads is no failure.  Read on;
		 * an end of the link without MV_END still is one.
		 */
		n = send_msg(to, MV_ACK, blk, deadline(last, abandon_after));
		if (timed_out(n))
			dest_give_up(fd, pid, to, from, abandon_after);
		if (n && !acks_lost) {
			acks_lost = true;
			fprintf(stderr, "%s: the source end stopped reading after %llu blocks\n",
				prog, delivered);
		}
	}
	stop_source(pid, to, from, &status);
	/* How it went, for whoever looks into it: its exit status or signal. */
	die(1, "the source end went after %llu blocks (%s %d, last message type %u); start the mover again",
	    delivered, WIFSIGNALED(status) ? "signal" : "exit status",
	    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), m.type);
	return 1;
}

/* DEVICE's post-copy file @name ("state", "token"...), or "" */
static void dev_attr(const char *dir, const char *name, char *buf, size_t len)
{
	char path[512];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/migration/postcopy_%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(buf, len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/* A device by sysfs directory, mdev UUID or PCI address: its directory. */
static void dev_dir(const char *dev, char *dir, size_t len)
{
	if (strchr(dev, '/'))
		snprintf(dir, len, "%s", dev);
	else if (strchr(dev, ':'))
		snprintf(dir, len, "/sys/bus/pci/devices/%s", dev);
	else
		snprintf(dir, len, "/sys/bus/mdev/devices/%s", dev);
}

/*
 * follow: wait until DEVICE is a post-copy destination with blocks owed,
 * then carry them with COMMAND as the source end ("{}" in it becomes the
 * session token).  For hooks that start before the stream is restored.
 */
static int run_follow(const char *dev, double timeout, double abandon_after, char **cmd)
{
	char dir[448], role[32], state[32], hex[2 * GPUMIG_PC_TOKEN_LEN + 2];
	uint8_t token[GPUMIG_PC_TOKEN_LEN];
	double end = now_s() + timeout;
	char **argv;
	int n, i;

	dev_dir(dev, dir, sizeof(dir));
	for (;;) {
		dev_attr(dir, "role", role, sizeof(role));
		dev_attr(dir, "state", state, sizeof(state));
		dev_attr(dir, "token", hex, sizeof(hex));
		if (!strcmp(role, "destination") && !strcmp(state, "active") &&
		    !parse_token(hex, token))
			break;
		if (access(dir, F_OK))
			die(1, "%s: no such device", dir);
		if (now_s() > end) {
			fprintf(stderr, "%s: %s: no post-copy within %.0f s: nothing to carry\n",
				prog, dev, timeout);
			return 4;
		}
		usleep(50000);
	}
	for (n = 0; cmd[n]; n++)
		;
	argv = calloc(n + 1, sizeof(*argv));
	if (!argv)
		die(1, "out of memory");
	for (i = 0; i < n; i++)
		argv[i] = strcmp(cmd[i], "{}") ? cmd[i] : hex;
	fprintf(stderr, "%s: %s: post-copy session %s\n", prog, dev, hex);
	return run_destination(token, abandon_after, argv);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rate", required_argument, NULL, 'r' },
		{ "abandon-after", required_argument, NULL, 'a' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	uint8_t token[GPUMIG_PC_TOKEN_LEN];
	double rate = 0, abandon_after = 0, timeout = 600;
	const char *what, *arg;
	char **cmd = NULL;
	uint32_t role;
	int c, i, nargs;

	/* COMMAND...: everything after "--", which getopt never sees. */
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			cmd = argv + i + 1;
			argv[i] = NULL;
			argc = i;
			break;
		}
	if (cmd && !*cmd)
		return bad_usage();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		double v;

		if (c == 'h') {
			bad_usage();
			return 0;
		}
		if (c == '?')
			return bad_usage();
		/* digits and a point only: strtod would take nan, inf, hex */
		v = strtod(optarg, &end);
		if (*end || !*optarg || strspn(optarg, "0123456789.") != strlen(optarg))
			die(2, "--%s: not a number: %s", c == 'r' ? "rate" : c == 'a' ?
			    "abandon-after" : "timeout", optarg);
		if (c == 'r')
			rate = v;
		else if (c == 'a')
			abandon_after = v;
		else
			timeout = v;
	}
	nargs = argc - optind;
	if (nargs < 2)
		return bad_usage();
	what = argv[optind];
	arg = argv[optind + 1];
	if (!strcmp(what, "follow")) {
		if (nargs != 2 || !cmd)
			return bad_usage();
		return run_follow(arg, timeout, abandon_after, cmd);
	}
	if (parse_token(arg, token))
		die(2, "%s: not a session token (32 hex digits)", arg);
	if (!strcmp(what, "abandon") || !strcmp(what, "status")) {
		struct gpumig_pc_status st = { .argsz = sizeof(st) };
		struct gpumig_pc_attach a;
		int fd;

		if (nargs != 3 || cmd || (strcmp(argv[optind + 2], "source") &&
					  strcmp(argv[optind + 2], "destination")))
			return bad_usage();
		role = strcmp(argv[optind + 2], "source") ? GPUMIG_PC_ROLE_DESTINATION :
							   GPUMIG_PC_ROLE_SOURCE;
		fd = attach(token, role, &a);
		if (!strcmp(what, "abandon"))
			return ioctl(fd, GPUMIG_PC_ABANDON) ? 1 : 0;
		if (ioctl(fd, GPUMIG_PC_STATUS, &st))
			die(1, "status: %s", strerror(errno));
		printf("state=%s owed=%llu total=%llu lost=%llu waits=%llu\n",
		       st.state == GPUMIG_PC_STATE_ACTIVE ? "active" :
		       st.state == GPUMIG_PC_STATE_DONE ? "done" : "abandoned",
		       (unsigned long long)st.owed, (unsigned long long)st.total,
		       (unsigned long long)st.lost, (unsigned long long)st.waits);
		return 0;
	}
	if (!strcmp(what, "source") && nargs == 2 && !cmd)
		return run_source(token, rate);
	if (!strcmp(what, "destination") && nargs == 2 && cmd)
		return run_destination(token, abandon_after, cmd);
	return bad_usage();
}
