// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: post-copy of device memory (deferred VRAM restoration),
 * the client as both the VMM and the mover on one host.  The source
 * announces post-copy in pre-copy and owes every block with data at the
 * stop; the destination runs at once, a GPU access to an owed block waits
 * for it while another queue runs on; the mover (/dev/gpumig-postcopy)
 * carries the blocks, the demanded one first; hostile blocks are refused
 * and write nothing; a mover killed halfway resumes; every byte of VRAM
 * ends right and the source's hold is scrubbed.  postcopy_abandon: the
 * source is given up halfway, the guest's access to a missing block fails
 * with SIMGPU_ERR_VRAM_LOST and no wrong data is ever read; the one it
 * had got reads right.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/gpumig_postcopy.h>
#include <linux/gpumig_stream.h>
#include <linux/vfio.h>

#include "client.h"
#include "converge.h"
#include "vfio_mig.h"

#define PC_DATA		(4 << 20)	/* VRAM with data: 64 blocks of 64 KiB */
#define PC_BLOCK	65536
#define PC_WAIT_BLK	5		/* the block a GPU access waits on */
/* The block a CPU access (a VF's aperture) waits on; 11 and 13: pread(), pwrite(). */
#define PC_CPU_BLK	9
#define PC_LOST_BLK	7		/* abandoned: a block never delivered */
#define PC_MOVER_LOG	"/tmp/simgpu-client-mover.log"

/* The kernel's crc32_le(): reflected 0xedb88320, no final inversion. */
static uint32_t pc_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	int i;

	while (len--) {
		crc ^= *p++;
		for (i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return crc;
}

/* A record's CRC (gpumig_postcopy.h): its block number, then its data. */
static uint32_t pc_crc(uint64_t block, const uint8_t *p, size_t len)
{
	uint8_t le[8];
	int i;

	for (i = 0; i < 8; i++)
		le[i] = block >> (8 * i);
	return pc_crc32(pc_crc32(~0U, le, sizeof(le)), p, len);
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* migration/postcopy_token of @g, as bytes: 0 or -1. */
static int pc_token(struct gpu *g, uint8_t *token)
{
	char hex[64];
	int i;

	mig_attr(g, "postcopy_token", hex, sizeof(hex));
	if (strlen(hex) != 2 * GPUMIG_PC_TOKEN_LEN)
		return -1;
	for (i = 0; i < GPUMIG_PC_TOKEN_LEN; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		token[i] = hi << 4 | lo;
	}
	return 0;
}

/* An open file of /dev/gpumig-postcopy attached to @token as @role, or -errno. */
static int pc_attach(const uint8_t *token, uint32_t role, struct gpumig_pc_attach *a)
{
	int fd = open("/dev/" GPUMIG_PC_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	memset(a, 0, sizeof(*a));
	a->argsz = sizeof(*a);
	a->role = role;
	memcpy(a->token, token, GPUMIG_PC_TOKEN_LEN);
	if (ioctl(fd, GPUMIG_PC_ATTACH, a)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/*
 * A mover's two files, non-blocking, attached to @token: 0, or -1 with
 * both closed (fail_msg says which could not attach).
 */
static int pc_attach_both(const uint8_t *token, int *sfd, int *dfd,
			  struct gpumig_pc_attach *sa, struct gpumig_pc_attach *da)
{
	*sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, sa);
	*dfd = pc_attach(token, GPUMIG_PC_ROLE_DESTINATION, da);
	if (*sfd < 0 || *dfd < 0) {
		if (*sfd >= 0)
			close(*sfd);
		if (*dfd >= 0)
			close(*dfd);
		return fail("attach: source %s, destination %s",
			    strerror(*sfd < 0 ? -*sfd : 0), strerror(*dfd < 0 ? -*dfd : 0));
	}
	fcntl(*sfd, F_SETFL, O_NONBLOCK);
	fcntl(*dfd, F_SETFL, O_NONBLOCK);
	return 0;
}

static int pc_state(struct gpu *g, const char *want)
{
	char st[64];

	mig_attr(g, "postcopy_state", st, sizeof(st));
	return strcmp(st, want) ? -1 : 0;
}

/* A destination write of @rec (a block record): 0 or -errno. */
static int pc_put(int dfd, const uint8_t *rec, size_t len)
{
	ssize_t n = write(dfd, rec, len);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/*
 * Move up to @max blocks (demanded first), acknowledging each: the count
 * moved, or -1 (fail_msg says why).  0 when the source has none left.
 */
static int pc_move(int sfd, int dfd, uint8_t *rec, size_t reclen, int max)
{
	const struct gpumig_pc_block *b = (const void *)rec;
	struct gpumig_pc_event ev;
	int moved = 0, ret;
	uint64_t blk;
	ssize_t n;

	while (moved < max) {
		while (read(dfd, &ev, sizeof(ev)) == sizeof(ev))
			if (ioctl(sfd, GPUMIG_PC_WANT, &ev.block) && errno != EALREADY)
				return fail("WANT %llu: %s", (unsigned long long)ev.block,
					    strerror(errno));
		n = read(sfd, rec, reclen);
		if (n == 0 || (n < 0 && errno == EAGAIN))
			break;
		if (n != (ssize_t)reclen)
			return fail("source read: %zd (%s)", n, strerror(errno));
		ret = pc_put(dfd, rec, reclen);
		if (ret && ret != -EALREADY)
			return fail("destination took block %llu: %s",
				    (unsigned long long)b->block, strerror(-ret));
		blk = b->block;
		if (ioctl(sfd, GPUMIG_PC_ACK, &blk))
			return fail("ACK %llu: %s", (unsigned long long)blk, strerror(errno));
		moved++;
	}
	return moved;
}

/*
 * Hostile records, each refused with its errno and nothing written,
 * from the good one in @rec (left as it was).
 */
static int pc_hostile(int dfd, uint8_t *rec, size_t reclen, uint64_t never)
{
	struct gpumig_pc_block *b = (void *)rec, keep = *b;
	uint8_t *data = rec + sizeof(*b);
	int ret;

	data[7] ^= 0x40;	/* the data changed in transit */
	ret = pc_put(dfd, rec, reclen);
	data[7] ^= 0x40;
	CHECK(ret == -EBADMSG, "a block with a bad CRC: %d, not EBADMSG", ret);
	b->block = keep.block + 1;	/* the number changed in transit: owed too */
	ret = pc_put(dfd, rec, reclen);
	*b = keep;
	CHECK(ret == -EBADMSG, "a block whose number changed on the way: %d, not EBADMSG", ret);
	b->token[3] ^= 1;	/* another session's */
	ret = pc_put(dfd, rec, reclen);
	*b = keep;
	CHECK(ret == -EACCES, "a block of another session: %d, not EACCES", ret);
	b->block = 1ULL << 40;	/* outside VRAM */
	ret = pc_put(dfd, rec, reclen);
	*b = keep;
	CHECK(ret == -ERANGE, "a block outside VRAM: %d, not ERANGE", ret);
	b->block = never;	/* never owed: it read zero at the stop */
	ret = pc_put(dfd, rec, reclen);
	*b = keep;
	CHECK(ret == -ENOENT, "a block never owed: %d, not ENOENT", ret);
	ret = pc_put(dfd, rec, reclen - 1);
	CHECK(ret == -EINVAL, "a short block: %d, not EINVAL", ret);
	return 0;
}

/* SIGBUS in pc_probe(): 2 for a hardware memory error (a lost block), else 1. */
static void pc_sigbus(int sig, siginfo_t *si, void *uc)
{
	_exit(si->si_code == BUS_MCEERR_AR ? 2 : 1);
}

/*
 * Read one byte at @p in a child process: 0 when it read, 1 on SIGBUS, 2
 * on SIGBUS for a memory error, -1 when it did not end in 5 s.
 */
static int pc_probe(const uint8_t *p)
{
	int st, i;
	pid_t pid = fork();

	if (pid == 0) {
		struct sigaction sa = { .sa_sigaction = pc_sigbus, .sa_flags = SA_SIGINFO };

		sigaction(SIGBUS, &sa, NULL);
		alarm(10);
		_exit(__atomic_load_n(p, __ATOMIC_RELAXED) & 0);	/* the read faults */
	}
	for (i = 0; i < 500; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* A CPU read through a VF's aperture that must wait for its block. */
/* How a CPU reaches the aperture (pc_cpu_wait()). */
enum pc_cpu { PC_MMAP, PC_PREAD, PC_PWRITE };

static const char *const pc_cpu_name[] = {
	"a CPU read through the mapped aperture", "a pread() of the aperture",
	"a pwrite() to the aperture",
};

struct pc_reader {
	const uint8_t *p;	/* PC_MMAP */
	int fd;			/* PC_PREAD, PC_PWRITE: the device, @off in it */
	off_t off;
	enum pc_cpu how;
	uint8_t out[256];	/* what was read, or is written */
	ssize_t n;
	int done;		/* read with __atomic_load_n() */
};

static void *pc_read_thread(void *arg)
{
	struct pc_reader *r = arg;

	if (r->how == PC_MMAP) {
		memcpy(r->out, r->p, sizeof(r->out));
		r->n = sizeof(r->out);
	} else if (r->how == PC_PREAD) {
		r->n = pread(r->fd, r->out, sizeof(r->out), r->off);
	} else {
		r->n = pwrite(r->fd, r->out, sizeof(r->out), r->off);
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The stop's manifest (stream-format.rst): OWED sections in order, each
 * but the last holding an owed block (a range with none needs no
 * section), @owed blocks set in all.
 */
static int pc_manifest_sparse(const struct blob *b, unsigned int owed)
{
	uint64_t next = 0, first, nr, i;
	unsigned int sections = 0, set = 0, in = 0;
	bool empty_before_last = false;
	size_t off = 0;

	while (off + sizeof(struct gpumig_sec_hdr) <= b->len) {
		const struct gpumig_sec_hdr *h = (const void *)(b->p + off);
		const struct gpumig_wire_owed *o = (const void *)(h + 1);
		const uint8_t *map = (const uint8_t *)(o + 1);

		if (le16toh(h->type) == GPUMIG_SEC_OWED) {
			first = le64toh(o->first);
			nr = le64toh(o->nr_blocks);
			CHECK(first >= next, "owed blocks %llu-%llu before block %llu",
			      (unsigned long long)first, (unsigned long long)(first + nr - 1),
			      (unsigned long long)next);
			if (sections && !in)
				empty_before_last = true;	/* the previous one */
			for (i = 0, in = 0; i < nr; i++)
				in += map[i / 8] >> (i % 8) & 1;
			set += in;
			next = first + nr;
			sections++;
		}
		off += sizeof(*h) + le32toh(h->len);
	}
	CHECK(sections && !empty_before_last && set == owed,
	      "manifest: %u sections, %u blocks set (%u owed), an empty one before the last: %d",
	      sections, set, owed, empty_before_last);
	return 0;
}

/*
 * The source: 4 MiB of VRAM with data, post-copy on, migrated; the
 * destination open and RUNNING with the 64 blocks owed.  *@data is what
 * VRAM holds (the source's guest buffer).  On a VF, before the destination
 * runs, a CPU access through its aperture to an owed block fails with
 * SIGBUS (it may not wait while the device is being restored).
 */
static int pc_migrate(struct gpu *src, struct gpu *dst, uint8_t **data)
{
	struct vfio_precopy_info info = { .argsz = sizeof(info) };
	struct blob pre = { 0 }, stop = { 0 };
	uint8_t *ap;
	char v[64];
	int64_t est;
	int fd = -1, ret;

	gpu_setup(src, 64);
	*data = sysbuf(src, VA_SYS, PC_DATA, NULL);
	fill_random(*data, PC_DATA);
	gpu_map_range(src, VA_VRAM, 0, 8 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(src, 0, SIMGPU_OP_COPY, 0, VA_VRAM, VA_SYS, PC_DATA, 0);
	CHECK(gpu_wait_idle(src, 0, TMO) == 0, "fill VRAM");

	ret = mig_attr_write(src, "postcopy", "1");
	if (ret == -EOPNOTSUPP) {
		snprintf(fail_msg, sizeof(fail_msg), "the device cannot hold VRAM for post-copy");
		return SKIP;
	}
	CHECK(ret == 0, "migration/postcopy: %s", strerror(-ret));
	CHECK(mig_attr_write(src, "postcopy", "2") == -EINVAL, "postcopy took 2");
	mig_attr(src, "postcopy", v, sizeof(v));
	CHECK(!strcmp(v, "1"), "postcopy reads %s", v);

	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	ret = mig_read(fd, &pre);
	CHECK(ret == -ENOMSG, "pre-copy read: %d", ret);
	CHECK(ioctl(fd, VFIO_MIG_GET_PRECOPY_INFO, &info) == 0, "PRECOPY_INFO");
	CHECK(info.initial_bytes == 0 && info.dirty_bytes == 0,
	      "announced post-copy, PRECOPY_INFO still owes %llu + %llu",
	      (unsigned long long)info.initial_bytes, (unsigned long long)info.dirty_bytes);
	{
		/* Nothing more to read before the stop: poll says so. */
		struct pollfd p = { .fd = fd, .events = POLLIN };

		CHECK(poll(&p, 1, 0) == 0, "poll on the saving fd says readable (0x%x) while a read gives ENOMSG",
		      p.revents);
	}
	CHECK(pre.len < 4096, "pre-copy carried %zu bytes: VRAM went before the stop", pre.len);
	mig_attr(src, "postcopy", v, sizeof(v));
	CHECK(!strcmp(v, "0"), "postcopy reads %s after the announcement: one migration's", v);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY_P2P, NULL) == 0, "PRE_COPY_P2P");
	est = mig_data_size(src);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY");
	ret = mig_read(fd, &stop);
	CHECK(ret == 0, "stop-copy read: %d", ret);
	CHECK(stop.len < PC_BLOCK, "stop-copy carried %zu bytes: VRAM data in it", stop.len);
	CHECK(est >= (int64_t)stop.len && est < (int64_t)stop.len + 8192,
	      "MIG_DATA_SIZE %lld, stop-copy %zu", (long long)est, stop.len);
	TRY(pc_manifest_sparse(&stop, PC_DATA / PC_BLOCK));
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	data_fd_close(fd);
	/* Its owed VRAM is held now, not in it: a second save is refused. */
	fd = -1;
	ret = mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, &fd);
	if (fd >= 0)
		data_fd_close(fd);
	CHECK(ret == -EBUSY, "a second STOP_COPY of a post-copy source: %d, not -EBUSY", ret);
	CHECK(pc_state(src, "active") == 0, "the source does not say it holds VRAM");
	mig_attr(src, "postcopy_owed_blocks", v, sizeof(v));
	CHECK(atoi(v) == PC_DATA / PC_BLOCK, "the source owes %s blocks, not %d", v,
	      PC_DATA / PC_BLOCK);
	printf("    # postcopy: %zu pre-copy bytes, %zu stop-copy bytes (estimate %lld), %s blocks owed\n",
	       pre.len, stop.len, (long long)est, v);

	CHECK(gpu_open(dst, dst_name) == 0, "open destination");
	ret = migrate_into(dst, src, src->mem, &pre, &stop);
	free(pre.p);
	free(stop.p);
	if (ret)
		return ret;
	CHECK(pc_state(dst, "active") == 0, "the destination does not say it waits for VRAM");
	mig_attr(dst, "postcopy_role", v, sizeof(v));
	CHECK(!strcmp(v, "destination"), "destination's role: %s", v);
	CHECK(mig_set(dst, VFIO_DEVICE_STATE_PRE_COPY, NULL) < 0,
	      "a destination still owed VRAM started a second migration");
	CHECK(mig_set(dst, VFIO_DEVICE_STATE_STOP, NULL) == 0, "dst to STOP");
	ap = aperture_map(dst, PC_DATA);
	if (ap) {
		ret = pc_probe(ap + PC_CPU_BLK * PC_BLOCK + 17);
		munmap(ap, PC_DATA);
		CHECK(ret == 1, "a CPU read of an owed block before the device runs: %d, not SIGBUS",
		      ret);
	}
	CHECK(mig_set(dst, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "dst back to RUNNING");
	return 0;
}

/* Queue 0 of @dst reads block PC_WAIT_BLK; queue 1 runs on meanwhile. */
static int pc_park(struct gpu *dst, uint8_t **out)
{
	*out = sysbuf(dst, VA_SYS + (8 << 20), 4096, NULL);
	sysbuf(dst, VA_SYS + (9 << 20), 4096, NULL);
	gpu_submit(dst, 0, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20),
		   VA_VRAM + PC_WAIT_BLK * PC_BLOCK + 4096, 4096, 0);
	gpu_submit(dst, 1, SIMGPU_OP_FENCE, 0, VA_SYS + (9 << 20), 0x77, 0, 0);
	CHECK(gpu_wait_idle(dst, 1, TMO) == 0, "queue 1 stopped while queue 0 waits");
	usleep(200000);
	CHECK(qrd(dst, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "a copy from an owed block did not wait for it");
	CHECK(qrd(dst, 0, SIMGPU_QREG_ERROR) == 0, "the waiting queue failed: %u",
	      qrd(dst, 0, SIMGPU_QREG_ERROR));
	return 0;
}

/* The destination's first event names the block its queue waits on. */
static int pc_demanded(int dfd)
{
	struct pollfd p = { .fd = dfd, .events = POLLIN };
	struct gpumig_pc_event ev;

	CHECK(poll(&p, 1, TMO) == 1, "no demand event from the destination");
	CHECK(read(dfd, &ev, sizeof(ev)) == sizeof(ev), "demand read: %s", strerror(errno));
	CHECK(ev.type == GPUMIG_PC_EVENT_DEMAND && ev.block == PC_WAIT_BLK,
	      "demand for block %llu (type %u), expected %d", (unsigned long long)ev.block,
	      ev.type, PC_WAIT_BLK);
	return 0;
}

/* All of the first @len bytes of @dst's VRAM against @want. */
static int pc_verify(struct gpu *dst, const uint8_t *want, size_t len)
{
	uint8_t *back = sysbuf(dst, VA_SYS + (16 << 20), len, NULL);

	gpu_submit(dst, 1, SIMGPU_OP_COPY, 0, VA_SYS + (16 << 20), VA_VRAM, len, 0);
	CHECK(gpu_wait_idle(dst, 1, 30000) == 0, "read VRAM back");
	CHECK(!memcmp(back, want, len), "VRAM differs after post-copy");
	return 0;
}

/*
 * A VF: a CPU access to an owed block through the aperture (@how: mapped,
 * or the device fd's pread() and pwrite(), QEMU's path for a BAR it does
 * not map) waits, asks for the block (a demand event), and once it
 * arrived reads its data, or writes over it (@data then holds what was
 * written: nothing the delivery brought may land over it).  The blocks
 * moved (1), or 0 without an aperture, or -1.
 */
static int pc_cpu_wait(struct gpu *dst, int sfd, int dfd, uint8_t *rec, size_t reclen,
		       uint8_t *data, enum pc_cpu how)
{
	struct vfio_region_info ri = { .argsz = sizeof(ri),
				       .index = VFIO_PCI_BAR2_REGION_INDEX };
	uint64_t blk = PC_CPU_BLK + 2 * how;
	size_t at = blk * PC_BLOCK + 4000;
	struct pc_reader r = { .how = how, .fd = dst->fd };
	struct gpumig_pc_event ev;
	struct pollfd p = { .fd = dfd, .events = POLLIN };
	uint8_t *ap = aperture_map(dst, PC_DATA);
	pthread_t t;
	int ret;

	if (!ap)
		return 0;
	if (ioctl(dst->fd, VFIO_DEVICE_GET_REGION_INFO, &ri)) {
		munmap(ap, PC_DATA);
		return fail("BAR2's region: %s", strerror(errno));
	}
	r.p = ap + at;
	r.off = ri.offset + at;
	if (how == PC_PWRITE)
		memset(r.out, 0x5d, sizeof(r.out));
	if (pthread_create(&t, NULL, pc_read_thread, &r)) {
		munmap(ap, PC_DATA);
		return fail("pthread_create");
	}
	usleep(300000);
	ret = __atomic_load_n(&r.done, __ATOMIC_ACQUIRE) ?
	      fail("%s of an owed block did not wait for it (%zd)", pc_cpu_name[how], r.n) : 0;
	if (!ret && (poll(&p, 1, TMO) != 1 || read(dfd, &ev, sizeof(ev)) != sizeof(ev) ||
		     ev.block != blk))
		ret = fail("no demand event for the block %s waits on", pc_cpu_name[how]);
	/* Delivered whatever happened above, so that the access ends. */
	if (ioctl(sfd, GPUMIG_PC_WANT, &blk) || read(sfd, rec, reclen) != (ssize_t)reclen ||
	    pc_put(dfd, rec, reclen) || ioctl(sfd, GPUMIG_PC_ACK, &blk))
		ret = ret ?: fail("deliver block %llu: %s", (unsigned long long)blk,
				  strerror(errno));
	pthread_join(t, NULL);
	if (!ret && r.n != (ssize_t)sizeof(r.out))
		ret = fail("%s: %zd bytes, not %zu", pc_cpu_name[how], r.n, sizeof(r.out));
	if (how == PC_PWRITE) {
		/* what VRAM must hold from now on (pc_verify()), and the aperture reads */
		memcpy(data + at, r.out, sizeof(r.out));
		if (!ret && memcmp(ap + at, r.out, sizeof(r.out)))
			ret = fail("a pwrite() to an owed block was lost when the block arrived");
	} else if (!ret && memcmp(r.out, data + at, sizeof(r.out))) {
		ret = fail("%s got other data than the block's once it arrived",
			   pc_cpu_name[how]);
	}
	munmap(ap, PC_DATA);
	if (!ret)
		printf("    # postcopy: %s waited for its block\n", pc_cpu_name[how]);
	return ret ? -1 : 1;
}

int t_postcopy(struct gpu *src)
{
	const size_t reclen = sizeof(struct gpumig_pc_block) + PC_BLOCK;
	const struct gpumig_pc_block *b;
	struct gpumig_pc_attach sa, da;
	struct gpumig_pc_status st = { .argsz = sizeof(st) };
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data, *out, *rec;
	int sfd, dfd, n, total = 0, ret;
	uint64_t blk = PC_WAIT_BLK;
	enum pc_cpu how;
	struct gpu dst;

	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	TRY(pc_park(&dst, &out));
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa);
	CHECK(sfd >= 0, "attach to the source: %s", strerror(-sfd));
	dfd = pc_attach(token, GPUMIG_PC_ROLE_DESTINATION, &da);
	CHECK(dfd >= 0, "attach to the destination: %s", strerror(-dfd));
	CHECK(sa.owed == PC_DATA / PC_BLOCK && da.owed == sa.owed && da.block_size == PC_BLOCK,
	      "attached: source owes %llu, destination %llu, blocks of %u",
	      (unsigned long long)sa.owed, (unsigned long long)da.owed, da.block_size);
	TRY(pc_demanded(dfd));

	/* The demanded block first, then hostile copies of it, then it. */
	CHECK(ioctl(sfd, GPUMIG_PC_WANT, &blk) == 0, "WANT: %s", strerror(errno));
	rec = malloc(reclen);
	CHECK(read(sfd, rec, reclen) == (ssize_t)reclen, "source read: %s", strerror(errno));
	b = (const void *)rec;
	CHECK(b->block == PC_WAIT_BLK && b->len == PC_BLOCK &&
	      !memcmp(rec + sizeof(*b), data + PC_WAIT_BLK * PC_BLOCK, PC_BLOCK) &&
	      b->crc == pc_crc(PC_WAIT_BLK, rec + sizeof(*b), PC_BLOCK),
	      "the source gave block %llu, not the demanded one with its data and CRC",
	      (unsigned long long)b->block);
	TRY(pc_hostile(dfd, rec, reclen, (8 << 20) / PC_BLOCK));
	CHECK(qrd(&dst, 0, SIMGPU_QREG_STATUS) & SIMGPU_QSTATUS_BUSY,
	      "a refused block let the waiting queue run");
	CHECK(pc_put(dfd, rec, reclen) == 0, "deliver block %d: %s", PC_WAIT_BLK, strerror(errno));
	CHECK(pc_put(dfd, rec, reclen) == -EALREADY, "a block sent twice was not EALREADY");
	CHECK(ioctl(sfd, GPUMIG_PC_ACK, &blk) == 0, "ACK");
	CHECK(gpu_wait_idle(&dst, 0, TMO) == 0, "the waiting copy did not finish");
	CHECK(!memcmp(out, data + PC_WAIT_BLK * PC_BLOCK + 4096, 4096),
	      "the waiting copy read other data than the block's");
	total = 1;
	for (how = PC_MMAP; how <= PC_PWRITE; how++) {
		n = pc_cpu_wait(&dst, sfd, dfd, rec, reclen, data, how);
		TRY(n < 0);
		total += n;
	}

	/* Half, then the mover dies; a new one finishes from what is left. */
	fcntl(sfd, F_SETFL, O_NONBLOCK);
	fcntl(dfd, F_SETFL, O_NONBLOCK);
	n = pc_move(sfd, dfd, rec, reclen, 30);
	TRY(n < 0);
	total += n;
	close(sfd);
	close(dfd);
	TRY(pc_attach_both(token, &sfd, &dfd, &sa, &da));
	CHECK(sa.owed == (uint64_t)(PC_DATA / PC_BLOCK - total) && da.owed == sa.owed,
	      "after %d blocks the source owes %llu, the destination %llu", total,
	      (unsigned long long)sa.owed, (unsigned long long)da.owed);
	n = pc_move(sfd, dfd, rec, reclen, 1000);
	TRY(n < 0);
	total += n;
	CHECK(total == PC_DATA / PC_BLOCK, "moved %d blocks of %d", total, PC_DATA / PC_BLOCK);
	CHECK(ioctl(dfd, GPUMIG_PC_STATUS, &st) == 0 && st.state == GPUMIG_PC_STATE_DONE &&
	      !st.owed && st.total == (uint64_t)total && !st.lost && st.waits >= 1,
	      "destination status: state %u, %llu owed of %llu, %llu lost, %llu waits",
	      st.state, (unsigned long long)st.owed, (unsigned long long)st.total,
	      (unsigned long long)st.lost, (unsigned long long)st.waits);
	CHECK(read(sfd, rec, reclen) == 0, "the source did not end when all was delivered");
	close(sfd);
	close(dfd);
	free(rec);
	CHECK(pc_state(src, "done") == 0 && pc_state(&dst, "done") == 0,
	      "post-copy not done on both sides");
	CHECK(pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa) == -ENOENT,
	      "a finished session can still be attached to");
	TRY(pc_verify(&dst, data, PC_DATA));
	gpu_close(&dst);
	printf("    # postcopy: %d blocks delivered, the demanded one first; hostile blocks refused\n",
	       total);
	return 0;
}

int t_postcopy_abandon(struct gpu *src)
{
	const size_t reclen = sizeof(struct gpumig_pc_block) + PC_BLOCK;
	struct gpumig_pc_attach sa, da;
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data, *out, *rec, *ap;
	struct blob pre, stop;
	uint64_t blk;
	int sfd, dfd, fd, ret, n;
	struct gpu dst;
	uint32_t err;
	char v[64];

	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	TRY(pc_attach_both(token, &sfd, &dfd, &sa, &da));
	/* Blocks 0-3 arrive; then the source host is lost. */
	rec = malloc(reclen);
	n = pc_move(sfd, dfd, rec, reclen, 4);
	TRY(n < 0);
	CHECK(n == 4, "moved %d blocks of 4", n);
	close(sfd);
	CHECK(ioctl(dfd, GPUMIG_PC_ABANDON) == 0, "ABANDON: %s", strerror(errno));
	mig_attr(&dst, "postcopy_lost_blocks", v, sizeof(v));
	CHECK(atoi(v) == PC_DATA / PC_BLOCK - 4, "%s blocks lost, expected %d", v,
	      PC_DATA / PC_BLOCK - 4);
	CHECK(pc_state(&dst, "abandoned") == 0, "the destination does not say it was abandoned");
	mig_attr(&dst, "last_error", v, sizeof(v));
	CHECK(strstr(v, "lost"), "last_error does not say blocks were lost: %s", v);
	/* What arrived reads right; an access to what did not fails, loudly. */
	TRY(pc_verify(&dst, data, 4 * PC_BLOCK));
	out = sysbuf(&dst, VA_SYS + (8 << 20), 4096, NULL);
	memset(out, 0xa5, 4096);
	gpu_submit(&dst, 0, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20), VA_VRAM + PC_LOST_BLK * PC_BLOCK,
		   4096, 0);
	usleep(200000);
	err = qrd(&dst, 0, SIMGPU_QREG_ERROR);
	CHECK(err == SIMGPU_ERR_VRAM_LOST, "a read of a lost block: queue error %u, not %u",
	      err, SIMGPU_ERR_VRAM_LOST);
	for (n = 0; n < 4096; n++)
		CHECK(out[n] == 0xa5, "a read of a lost block wrote data into guest memory");
	ap = aperture_map(&dst, PC_DATA);
	if (ap) {
		ret = pc_probe(ap + PC_LOST_BLK * PC_BLOCK + 8);
		n = pc_probe(ap + 2 * PC_BLOCK + 8);
		munmap(ap, PC_DATA);
		CHECK(ret == 2, "a CPU read of a lost block: %d, not a memory error", ret);
		CHECK(n == 0, "a CPU read of a delivered block failed: %d", n);
	}
	/* The source's side: abandoned, scrubbed. */
	sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa);
	CHECK(sfd >= 0, "attach to the source again: %s", strerror(-sfd));
	CHECK(ioctl(sfd, GPUMIG_PC_ABANDON) == 0, "source ABANDON");
	CHECK(read(sfd, rec, reclen) < 0 && errno == ECONNABORTED,
	      "an abandoned source still gives blocks");
	blk = PC_LOST_BLK;
	CHECK(ioctl(sfd, GPUMIG_PC_ACK, &blk) < 0 && errno == ECONNABORTED,
	      "ACK on an abandoned source: %s, not ECONNABORTED", strerror(errno));
	CHECK(ioctl(sfd, GPUMIG_PC_WANT, &blk) < 0 && errno == ECONNABORTED,
	      "WANT on an abandoned source: %s, not ECONNABORTED", strerror(errno));
	mig_attr(src, "postcopy_owed_blocks", v, sizeof(v));
	CHECK(atoi(v) == PC_DATA / PC_BLOCK - 4,
	      "an ACK after the end changed what is owed: %s", v);
	/* The ended destination says so before anything about the block. */
	rec[sizeof(struct gpumig_pc_block) + 9] ^= 1;
	ret = pc_put(dfd, rec, reclen);
	CHECK(ret == -ENODEV, "a bad block after the abandon: %d, not ENODEV", ret);
	close(sfd);
	close(dfd);
	free(rec);
	CHECK(pc_state(src, "abandoned") == 0, "the source does not say it was abandoned");
	/*
	 * The same open destination then restores an ordinary stream of the
	 * same data: the blocks the post-copy lost are that stream's, and
	 * read back whole (before, they stayed lost).
	 */
	CHECK(gpu_reset(src) == 0, "reset the source: %s", strerror(errno));
	gpu_setup(src, 64);
	memcpy(sysbuf(src, VA_SYS, PC_DATA, NULL), data, PC_DATA);
	gpu_map_range(src, VA_VRAM, 0, 8 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(src, 0, SIMGPU_OP_COPY, 0, VA_VRAM, VA_SYS, PC_DATA, 0);
	CHECK(gpu_wait_idle(src, 0, TMO) == 0, "fill the source's VRAM again");
	pre = (struct blob){ 0 };
	stop = (struct blob){ 0 };
	fd = -1;
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY again");
	CHECK(mig_read(fd, &pre) == -ENOMSG, "pre-copy read again");
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY again");
	CHECK(mig_read(fd, &stop) == 0, "stop-copy read again");
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP again");
	data_fd_close(fd);
	ret = migrate_into(&dst, src, src->mem, &pre, &stop);
	free(pre.p);
	free(stop.p);
	TRY(ret);
	CHECK(qrd(&dst, 0, SIMGPU_QREG_ERROR) == 0, "queue 0 restored with error %u",
	      qrd(&dst, 0, SIMGPU_QREG_ERROR));
	TRY(pc_verify(&dst, data, PC_DATA));
	mig_attr(&dst, "postcopy_lost_blocks", v, sizeof(v));
	CHECK(atoi(v) == 0, "%s blocks still lost after an ordinary restore", v);
	gpu_close(&dst);
	return 0;
}

struct pc_writer {
	int dfd;
	uint8_t *recs;
	size_t reclen;
	unsigned int first, n, bad;
	int err;
};

/* Every other record, twice: delivered, then EALREADY. */
static void *pc_write_thread(void *arg)
{
	struct pc_writer *w = arg;
	unsigned int i, pass;
	int ret;

	for (pass = 0; pass < 2; pass++)
		for (i = w->first; i < w->n; i += 2) {
			ret = pc_put(w->dfd, w->recs + i * w->reclen, w->reclen);
			if (ret && !(pass && ret == -EALREADY)) {
				w->bad++;
				w->err = ret;
			}
		}
	return NULL;
}

struct pc_blocked_reader {
	int sfd;
	uint8_t *rec;
	size_t reclen;
	ssize_t n;
	int err;
};

static void *pc_blocking_read(void *arg)
{
	struct pc_blocked_reader *r = arg;

	r->n = read(r->sfd, r->rec, r->reclen);
	r->err = errno;
	return NULL;
}

/*
 * One destination file written by two threads at once (a mover's worker
 * threads may share it): each record is checked and delivered as it was
 * written, none with another's data.  And a blocking source read with
 * nothing left to give waits until every block is acknowledged, then
 * returns 0 (its wait takes the session's lock awake: a debug kernel
 * would warn otherwise).
 */
int t_postcopy_threads(struct gpu *src)
{
	const size_t reclen = sizeof(struct gpumig_pc_block) + PC_BLOCK;
	const unsigned int nr = PC_DATA / PC_BLOCK;
	struct gpumig_pc_attach sa, da;
	struct pc_writer w[2];
	struct pc_blocked_reader r = { .reclen = reclen };
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data, *recs;
	pthread_t tw[2], tr;
	unsigned int i;
	uint64_t blk;
	int sfd, dfd, ret;
	struct gpu dst;

	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa);
	CHECK(sfd >= 0, "attach to the source: %s", strerror(-sfd));
	dfd = pc_attach(token, GPUMIG_PC_ROLE_DESTINATION, &da);
	CHECK(dfd >= 0, "attach to the destination: %s", strerror(-dfd));
	recs = malloc(nr * reclen);
	r.rec = malloc(reclen);
	CHECK(recs && r.rec, "no memory");
	for (i = 0; i < nr; i++)
		CHECK(read(sfd, recs + i * reclen, reclen) == (ssize_t)reclen,
		      "source read %u: %s", i, strerror(errno));
	r.sfd = sfd;
	CHECK(pthread_create(&tr, NULL, pc_blocking_read, &r) == 0, "reader thread");
	for (i = 0; i < 2; i++) {
		w[i] = (struct pc_writer){ .dfd = dfd, .recs = recs, .reclen = reclen,
					   .first = i, .n = nr };
		CHECK(pthread_create(&tw[i], NULL, pc_write_thread, &w[i]) == 0, "writer thread");
	}
	for (i = 0; i < 2; i++)
		pthread_join(tw[i], NULL);
	usleep(200000);
	CHECK(pthread_tryjoin_np(tr, NULL) == EBUSY,
	      "a blocking source read with nothing to give returned %zd", r.n);
	for (i = 0; i < nr; i++) {
		blk = ((struct gpumig_pc_block *)(recs + i * reclen))->block;
		CHECK(ioctl(sfd, GPUMIG_PC_ACK, &blk) == 0, "ACK %llu: %s",
		      (unsigned long long)blk, strerror(errno));
	}
	pthread_join(tr, NULL);
	CHECK(r.n == 0, "the blocking read after every ACK: %zd (%s), not 0", r.n,
	      strerror(r.err));
	CHECK(!w[0].bad && !w[1].bad, "two writers on one file: %u and %u writes refused (%s)",
	      w[0].bad, w[1].bad, strerror(-(w[0].err ? w[0].err : w[1].err)));
	close(sfd);
	close(dfd);
	free(recs);
	free(r.rec);
	CHECK(pc_state(&dst, "done") == 0, "the destination is not done");
	TRY(pc_verify(&dst, data, PC_DATA));
	gpu_close(&dst);
	return 0;
}

/*
 * In a forked mover: none of the client's files (its VFIO group and
 * device fds) may outlive the client in a process the mover leaves behind.
 */
static void pc_child_close_fds(void)
{
	int fd;

	for (fd = 3; fd < 1024; fd++)
		close(fd);
}

/* gpumig-mover destination TOKEN -- gpumig-mover source TOKEN [--rate R]: its pid. */
static pid_t pc_spawn_mover(const char *mover, const char *hex, const char *rate)
{
	pid_t pid = fork();

	if (pid == 0) {
		pc_child_close_fds();
		if (rate)
			execl(mover, mover, "destination", hex, "--", mover, "source", hex,
			      "--rate", rate, (char *)NULL);
		else
			execl(mover, mover, "destination", hex, "--", mover, "source", hex,
			      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * The same over a link that changes one byte on the way: the low byte of
 * the first record's block number (HELLO and BLOCK messages are 16 bytes
 * each, then the record's magic, flags and token, 24), added 1 to.  The
 * destination end's messages go to @errlog.
 */
static pid_t pc_spawn_mover_bad_link(const char *mover, const char *hex, const char *errlog)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd;

		pc_child_close_fds();
		fd = open(errlog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execl(mover, mover, "destination", hex, "--", "sh", "-c",
		      "\"$0\" source \"$1\" | { dd bs=1 count=56 2>/dev/null; "
		      "dd bs=1 count=1 2>/dev/null | tr '\\000-\\377' '\\001-\\377\\000'; exec cat; }",
		      mover, hex, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * The same over a link that stops in the middle of the first record (its
 * HELLO and BLOCK messages and 8 bytes of it pass, then nothing), the
 * destination end giving up after @after seconds without a block.
 */
static pid_t pc_spawn_mover_stalled(const char *mover, const char *hex, const char *after)
{
	pid_t pid = fork();

	if (pid == 0) {
		pc_child_close_fds();
		execl(mover, mover, "destination", hex, "--abandon-after", after, "--", "sh", "-c",
		      "\"$0\" source \"$1\" | { dd bs=1 count=40 2>/dev/null; exec sleep 30; }",
		      mover, hex, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Wait up to @ms for @pid: its exit status, or -1 (then it is killed). */
static int pc_wait(pid_t pid, int ms)
{
	int st, i;

	for (i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* The source's hold, which no destination will take any more, let go. */
static int pc_abandon_source(struct gpu *src)
{
	struct gpumig_pc_attach sa;
	uint8_t token[GPUMIG_PC_TOKEN_LEN];
	int sfd;

	CHECK(pc_token(src, token) == 0, "no session token on the source");
	sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa);
	CHECK(sfd >= 0, "the source's hold cannot be attached to (%d)", sfd);
	CHECK(ioctl(sfd, GPUMIG_PC_ABANDON) == 0, "source ABANDON: %s", strerror(errno));
	close(sfd);
	return 0;
}

/* The source afresh, as a new tenant's VM would have it (reset, reopened). */
static int pc_reopen_source(struct gpu *src)
{
	char name[sizeof(src->name)];

	memcpy(name, src->name, sizeof(name));
	CHECK(gpu_reset(src) == 0, "source VFIO_DEVICE_RESET: %s", strerror(errno));
	gpu_close(src);
	CHECK(gpu_open(src, name) == 0, "reopen the source");
	return 0;
}

/*
 * The project's mover (GPUMIG_MOVER names it), as an operator runs it on
 * one host: the waiting queue's block arrives first even at a low rate
 * cap; killed halfway, it is started again and finishes; every byte ends
 * right and both sides say done.
 */
int t_postcopy_mover(struct gpu *src)
{
	const char *mover = getenv("GPUMIG_MOVER");
	uint8_t *data, *out;
	char hex[64], v[64];
	struct gpu dst;
	pid_t pid;
	int ret;

	if (!mover) {
		snprintf(fail_msg, sizeof(fail_msg), "GPUMIG_MOVER does not name gpumig-mover");
		return SKIP;
	}
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	TRY(pc_park(&dst, &out));
	mig_attr(src, "postcopy_token", hex, sizeof(hex));
	/* 256 KiB/s: the 64 blocks would take 16 s; the demanded one goes at once. */
	pid = pc_spawn_mover(mover, hex, "262144");
	CHECK(pid > 0, "fork");
	CHECK(gpu_wait_idle(&dst, 0, 3000) == 0,
	      "the waiting copy did not finish within 3 s under a 256 KiB/s cap");
	CHECK(!memcmp(out, data + PC_WAIT_BLK * PC_BLOCK + 4096, 4096),
	      "the waiting copy read other data than the block's");
	usleep(500000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	mig_attr(&dst, "postcopy_owed_blocks", v, sizeof(v));
	CHECK(atoi(v) > 0 && atoi(v) < PC_DATA / PC_BLOCK - 1,
	      "after a killed mover %s blocks are owed", v);
	/*
	 * A new mover, no cap, over a link that changes the first record's
	 * block number: the destination refuses that record (the CRC covers
	 * the number), the source end sends the block again; it resumes and
	 * finishes, every block where it belongs.
	 */
	pid = pc_spawn_mover_bad_link(mover, hex, PC_MOVER_LOG);
	CHECK(pid > 0, "fork");
	ret = pc_wait(pid, 60000);
	{
		char log[2048] = "";
		FILE *f = fopen(PC_MOVER_LOG, "re");
		size_t got = f ? fread(log, 1, sizeof(log) - 1, f) : 0;

		if (f)
			fclose(f);
		log[got] = 0;
		unlink(PC_MOVER_LOG);
		CHECK(ret == 0, "gpumig-mover exited %d: %s", ret, log);
		CHECK(strstr(log, "refused") && strstr(log, "sending it again"),
		      "the changed record was not refused and sent again: %s", log);
	}
	CHECK(pc_state(src, "done") == 0 && pc_state(&dst, "done") == 0,
	      "post-copy not done on both sides after the mover");
	TRY(pc_verify(&dst, data, PC_DATA));
	gpu_close(&dst);

	/*
	 * A post-copy that ends on the destination's host while the mover
	 * runs (its device closed): the mover stops, exit 3, instead of
	 * waiting for acknowledgments that never come.  The source starts
	 * afresh, as a new tenant's VM would (the first one stopped it).
	 */
	TRY(pc_reopen_source(src));
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	mig_attr(src, "postcopy_token", hex, sizeof(hex));
	pid = pc_spawn_mover(mover, hex, "262144");
	CHECK(pid > 0, "fork");
	usleep(1000000);
	gpu_close(&dst);
	ret = pc_wait(pid, 20000);
	CHECK(ret == 3, "the mover exited %d when the destination's post-copy ended, not 3", ret);
	TRY(pc_abandon_source(src));

	/*
	 * A link that stops in the middle of a record: --abandon-after
	 * still counts while the destination end waits for the rest of
	 * it, abandons the session and exits 3.
	 */
	{
		uint64_t t0;

		TRY(pc_reopen_source(src));
		ret = pc_migrate(src, &dst, &data);
		if (ret)
			return ret;
		mig_attr(src, "postcopy_token", hex, sizeof(hex));
		t0 = now_ms();
		pid = pc_spawn_mover_stalled(mover, hex, "1");
		CHECK(pid > 0, "fork");
		ret = pc_wait(pid, 30000);
		CHECK(ret == 3, "the mover exited %d on a link stalled mid-record with --abandon-after 1, not 3",
		      ret);
		CHECK(now_ms() - t0 < 20000, "the mover took %llu ms to give up on a stalled link",
		      (unsigned long long)(now_ms() - t0));
		CHECK(pc_state(&dst, "abandoned") == 0,
		      "the destination's post-copy is not abandoned after --abandon-after");
		gpu_close(&dst);
	}
	TRY(pc_abandon_source(src));
	printf("    # postcopy_mover: the demanded block first under a cap; killed at %s owed, restarted over a link that changed a block number (refused, sent again), done; a destination that went: exit 3; a link stalled mid-record: abandoned after 1 s, exit 3\n",
	       v);
	return 0;
}

/*
 * Resets and closes while blocks are owed.  The source reset, then closed
 * and opened again: what it holds is untouched.  The destination reset:
 * its blocks stay owed (the guest sets its GPU up again) and arrive after,
 * right.  Then a second post-copy whose destination is closed halfway: its
 * session ends (a mover can no longer attach to it), the source gives up
 * and scrubs.
 */
int t_postcopy_reset(struct gpu *src)
{
	const size_t reclen = sizeof(struct gpumig_pc_block) + PC_BLOCK;
	struct gpumig_pc_attach sa, da;
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data, *rec, *keep;
	char name[sizeof(src->name)], v[64];
	int sfd, dfd, ret, n;
	struct gpu dst;

	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	/* The source's guest memory goes with its close: keep what VRAM holds. */
	keep = malloc(PC_DATA);
	CHECK(keep, "out of memory");
	memcpy(keep, data, PC_DATA);
	data = keep;
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	CHECK(gpu_reset(src) == 0, "source VFIO_DEVICE_RESET: %s", strerror(errno));
	memcpy(name, src->name, sizeof(name));
	gpu_close(src);
	CHECK(gpu_open(src, name) == 0, "reopen the source");
	CHECK(pc_state(src, "active") == 0, "a reset and a close of the source ended its hold");
	CHECK(gpu_reset(&dst) == 0, "destination VFIO_DEVICE_RESET: %s", strerror(errno));
	CHECK(pc_state(&dst, "active") == 0, "a reset of the destination ended its post-copy");
	mig_attr(&dst, "postcopy_owed_blocks", v, sizeof(v));
	CHECK(atoi(v) == PC_DATA / PC_BLOCK, "after the resets %s blocks owed, not %d", v,
	      PC_DATA / PC_BLOCK);
	gpu_setup(&dst, 64);
	gpu_map_range(&dst, VA_VRAM, 0, 8 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	TRY(pc_attach_both(token, &sfd, &dfd, &sa, &da));
	rec = malloc(reclen);
	n = pc_move(sfd, dfd, rec, reclen, 1000);
	close(sfd);
	close(dfd);
	TRY(n < 0);
	CHECK(n == PC_DATA / PC_BLOCK, "moved %d blocks after the resets", n);
	CHECK(pc_state(src, "done") == 0 && pc_state(&dst, "done") == 0, "not done on both sides");
	ret = pc_verify(&dst, data, PC_DATA);
	free(keep);
	TRY(ret);
	gpu_close(&dst);

	/* The destination closed halfway. */
	ret = pc_migrate(src, &dst, &data);
	if (ret) {
		free(rec);
		return ret;
	}
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	TRY(pc_attach_both(token, &sfd, &dfd, &sa, &da));
	n = pc_move(sfd, dfd, rec, reclen, 10);
	TRY(n < 0);
	close(dfd);
	gpu_close(&dst);
	n = pc_attach(token, GPUMIG_PC_ROLE_DESTINATION, &da);
	CHECK(n == -ENOENT, "a closed destination's session can still be attached to (%d)", n);
	CHECK(pc_state(src, "active") == 0, "the source stopped holding when the destination went");
	CHECK(ioctl(sfd, GPUMIG_PC_ABANDON) == 0, "source ABANDON: %s", strerror(errno));
	close(sfd);
	free(rec);
	CHECK(pc_state(src, "abandoned") == 0, "the source does not say it was abandoned");
	printf("    # postcopy_reset: resets and a close of the source, a reset of the destination: every block arrived right; a destination closed halfway ends its session\n");
	return 0;
}

/*
 * A destination whose source never sends (no mover at all) takes it as
 * lost after postcopy_timeout_s: the owed blocks are lost, loudly; the
 * setting refuses what it cannot take.
 */
int t_postcopy_timeout(struct gpu *src)
{
	static const char *const bad[] = { "abc", "-1", "86401", "1e3", "" };
	uint8_t *data, *out;
	struct gpu dst;
	char v[128], keep[16];
	unsigned int i;
	uint32_t err;
	int ret;

	mig_attr(src, "postcopy_timeout_s", keep, sizeof(keep));
	CHECK(!strcmp(keep, "300"), "postcopy_timeout_s reads %s, not the default 300", keep);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(mig_attr_write(src, "postcopy_timeout_s", *bad[i] ? bad[i] : "\n") == -EINVAL,
		      "postcopy_timeout_s took \"%s\"", bad[i]);
	mig_attr(src, "postcopy_timeout_s", v, sizeof(v));
	CHECK(!strcmp(v, keep), "a refused value changed postcopy_timeout_s to %s", v);
	/* The destination's setting counts: the source's is not read. */
	CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
	CHECK(mig_attr_write(&dst, "postcopy_timeout_s", "2") == 0, "postcopy_timeout_s 2");
	gpu_close(&dst);
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	sleep(4);
	mig_attr_write(&dst, "postcopy_timeout_s", keep);
	CHECK(pc_state(&dst, "abandoned") == 0, "no block for 4 s, yet the destination waits on");
	mig_attr(&dst, "postcopy_lost_blocks", v, sizeof(v));
	CHECK(atoi(v) == PC_DATA / PC_BLOCK, "%s blocks lost, not %d", v, PC_DATA / PC_BLOCK);
	mig_attr(&dst, "last_error", v, sizeof(v));
	CHECK(strstr(v, "lost"), "last_error does not say blocks were lost: %s", v);
	out = sysbuf(&dst, VA_SYS + (8 << 20), 4096, NULL);
	gpu_submit(&dst, 0, SIMGPU_OP_COPY, 0, VA_SYS + (8 << 20), VA_VRAM, 4096, 0);
	usleep(200000);
	err = qrd(&dst, 0, SIMGPU_QREG_ERROR);
	CHECK(err == SIMGPU_ERR_VRAM_LOST, "a read after the timeout: queue error %u", err);
	CHECK(out[0] == 0 && !memcmp(out, out + 1, 4095), "a lost block's read wrote data");
	gpu_close(&dst);
	/* The source still holds: abandoned by hand, as an operator would. */
	{
		uint8_t token[GPUMIG_PC_TOKEN_LEN];
		struct gpumig_pc_attach sa;
		int sfd;

		CHECK(pc_token(src, token) == 0, "no session token on the source");
		sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa);
		CHECK(sfd >= 0, "attach to the source");
		CHECK(ioctl(sfd, GPUMIG_PC_ABANDON) == 0, "source ABANDON");
		close(sfd);
	}
	printf("    # postcopy_timeout: no block in 2 s: every owed block lost, the guest told\n");
	return 0;
}

/*
 * What a post-copy source sends before the stop, to GOLDEN_STREAM (for the
 * releases suite: a destination of an older release must refuse it then).
 * Post-copy is asked for once pre-copy has begun, so the announcement is
 * a section of its own after a header of the geometry's minor; the
 * migration is then cancelled (RUNNING) and the device runs on.
 */
int t_postcopy_save(struct gpu *src)
{
	const char *path = getenv("GOLDEN_STREAM");
	struct blob pre = { 0 };
	int fd = -1, ret;
	FILE *f;

	CHECK(path, "GOLDEN_STREAM is not set");
	gpu_setup(src, 16);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	ret = mig_attr_write(src, "postcopy", "1");
	if (ret) {
		mig_set(src, VFIO_DEVICE_STATE_RUNNING, NULL);
		data_fd_close(fd);
		CHECK(ret == 0, "migration/postcopy: %s", strerror(-ret));
	}
	ret = mig_read(fd, &pre);
	mig_attr_write(src, "postcopy", "0");
	CHECK(mig_set(src, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "cancel: RUNNING");
	data_fd_close(fd);
	CHECK(ret == -ENOMSG, "pre-copy read: %d", ret);
	f = fopen(path, "w");
	CHECK(f, "cannot write %s", path);
	ret = fwrite(pre.p, 1, pre.len, f) == pre.len ? 0 : -EIO;
	fclose(f);
	free(pre.p);
	CHECK(!ret, "short write to %s", path);
	printf("    # postcopy_save: %zu bytes of pre-copy with the announcement in %s\n",
	       pre.len, path);
	return 0;
}

/* Block @blk of @g's aperture reads all zero: 1; holds something: 0; no aperture: -1. */
static int pc_aperture_zero(struct gpu *g, unsigned int blk)
{
	uint8_t *ap = aperture_map(g, PC_DATA);
	int zero;

	if (!ap)
		return -1;
	zero = ap[blk * PC_BLOCK] == 0 &&
	       !memcmp(ap + blk * PC_BLOCK, ap + blk * PC_BLOCK + 1, PC_BLOCK - 1);
	munmap(ap, PC_DATA);
	return zero;
}

/* Bind @name to @drv (driver_override), from whatever it is bound to: 0 or -1. */
static int pc_rebind(const char *name, const char *drv)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver/unbind", name);
	sysfs_write(path, name);	/* not bound: nothing to do */
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver_override", name);
	if (sysfs_write(path, drv) || sysfs_write("/sys/bus/pci/drivers_probe", name))
		return -1;
	dev_driver(name, path, sizeof(path));
	return strcmp(path, drv) ? -1 : 0;
}

/*
 * A VF source's hold: its owed blocks left the VF, whose aperture reads
 * zero there, under gpumig-vfio-pci and under plain vfio-pci after a
 * rebind; the PF refuses to disable SR-IOV while it holds them and says
 * why; gpumig-vfio-pci bound again finds the session, which then gives
 * every block, right.  VFs only.
 */
int t_postcopy_hold(struct gpu *src)
{
	const size_t reclen = sizeof(struct gpumig_pc_block) + PC_BLOCK;
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data, *keep = NULL, *rec = NULL;
	char name[sizeof(src->name)], pf[64], path[256], drv[32];
	struct gpumig_pc_attach sa, da;
	int ret, sfd, dfd, n;
	struct gpu dst;

	if (!src->pci) {
		snprintf(fail_msg, sizeof(fail_msg), "an mdev's hold is the engine's own");
		return SKIP;
	}
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	keep = malloc(PC_DATA);
	CHECK(keep, "out of memory");
	memcpy(keep, data, PC_DATA);
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	CHECK(pc_aperture_zero(src, PC_WAIT_BLK) == 1,
	      "a held block still reads its data through the source's aperture");
	memcpy(name, src->name, sizeof(name));
	dev_driver(name, drv, sizeof(drv));
	gpu_close(src);
	ret = pc_rebind(name, "vfio-pci");
	if (!ret) {
		ret = gpu_open(src, name);
		if (!ret) {
			n = pc_aperture_zero(src, PC_WAIT_BLK);
			gpu_close(src);
			ret = n == 1 ? 0 : fail("plain vfio-pci reads a held block's data (%d)", n);
		} else {
			ret = fail("open the VF under vfio-pci");
		}
	} else {
		ret = fail("bind the source VF to vfio-pci");
	}
	if (!ret && pf_of(name, pf, sizeof(pf))) {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/sriov_numvfs", pf);
		n = sysfs_write(path, "0");
		ret = n == -EBUSY ? 0 : fail("SR-IOV off while the PF holds VRAM: %d", n);
	}
	if (pc_rebind(name, drv) || gpu_open(src, name)) {
		free(keep);
		return fail("bind the source VF back to %s", drv);
	}
	TRY(ret);
	CHECK(pc_state(src, "active") == 0, "the source, bound again, does not say it holds VRAM");
	TRY(pc_attach_both(token, &sfd, &dfd, &sa, &da));
	rec = malloc(reclen);
	CHECK(rec, "out of memory");
	n = pc_move(sfd, dfd, rec, reclen, 1000);
	close(sfd);
	close(dfd);
	free(rec);
	TRY(n < 0);
	CHECK(n == PC_DATA / PC_BLOCK, "moved %d blocks after the rebind", n);
	CHECK(pc_state(src, "done") == 0 && pc_state(&dst, "done") == 0, "not done on both sides");
	ret = pc_verify(&dst, keep, PC_DATA);
	free(keep);
	TRY(ret);
	gpu_close(&dst);
	printf("    # postcopy_hold: held blocks read zero under %s and under vfio-pci; SR-IOV stays on; rebound, the session gave every block\n",
	       drv);
	return 0;
}

/*
 * The PF of both VFs is reset halfway through a post-copy: the source's
 * hold is lost with it (the mover's read fails, it never gives other
 * data), the destination's post-copy ends with its lost memory (its
 * engine reads ERROR, a CPU read of an owed block through its aperture
 * fails at once rather than waiting for a block nobody will bring); an
 * abandon on the source and a reset of the destination bring both back.
 * VFs only.
 */
int t_postcopy_pf_reset(struct gpu *src)
{
	const size_t reclen = sizeof(struct gpumig_pc_block) + PC_BLOCK;
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data, *rec, *ap;
	char pf[64], path[256], v[64];
	struct gpumig_pc_attach sa;
	int ret, sfd, n;
	struct gpu dst;
	ssize_t got;

	if (!src->pci || !pf_of(src->name, pf, sizeof(pf))) {
		snprintf(fail_msg, sizeof(fail_msg), "not a VF");
		return SKIP;
	}
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", pf);
	CHECK(sysfs_write(path, "1") == 0, "resetting the PF %s", pf);
	sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa);
	CHECK(sfd >= 0, "attach to the source after the PF's reset: %s", strerror(-sfd));
	rec = malloc(reclen);
	CHECK(rec, "out of memory");
	got = read(sfd, rec, reclen);
	n = errno;
	free(rec);
	CHECK(got < 0 && n == ENODEV, "a held block read after the PF's reset: %zd (%s)", got,
	      strerror(n));
	CHECK(pc_state(&dst, "abandoned") == 0, "the destination's post-copy outlived its PF's reset");
	mig_attr(&dst, "postcopy_lost_blocks", v, sizeof(v));
	CHECK(atoi(v) == PC_DATA / PC_BLOCK, "%s blocks lost with the PF's reset, not %d", v,
	      PC_DATA / PC_BLOCK);
	ap = aperture_map(&dst, PC_DATA);
	CHECK(ap, "map the destination's aperture");
	ret = pc_probe(ap + PC_CPU_BLK * PC_BLOCK);
	munmap(ap, PC_DATA);
	CHECK(ret == 2, "a CPU read of a block lost with the PF's reset: %d, not a memory error",
	      ret);
	CHECK(ioctl(sfd, GPUMIG_PC_ABANDON) == 0, "source ABANDON");
	close(sfd);
	CHECK(pc_state(src, "abandoned") == 0, "the source does not say it was abandoned");
	CHECK(gpu_reset(&dst) == 0, "destination VFIO_DEVICE_RESET");
	gpu_setup(&dst, 16);
	gpu_map_range(&dst, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(&dst, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 4096, 0x77, 0);
	CHECK(gpu_wait_idle(&dst, 0, TMO) == 0, "the destination works after its reset");
	gpu_close(&dst);
	CHECK(gpu_reset(src) == 0, "source VFIO_DEVICE_RESET");
	printf("    # postcopy_pf_reset: the hold lost with the PF, loudly; the destination's blocks lost, not waited on\n");
	return 0;
}

/*
 * The PF's driver goes away while a destination VF (@dst, of the same PF)
 * still waits for owed blocks: nothing can deliver them any more, so its
 * post-copy ends at once, the blocks lost, and a CPU read through the
 * aperture that waited on one ends with a memory error, instead of
 * waiting for the session's timeout (300 s) while the PF's removal waits
 * for the VF's user.  Unbinds the PF: every VF goes with it.
 */
int t_postcopy_pf_gone(struct gpu *src)
{
	const size_t reclen = sizeof(struct gpumig_pc_block) + PC_BLOCK;
	char pf[64], v[64], sname[sizeof(src->name)], dname[sizeof(src->name)];
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data, *ap, *rec;
	struct gpumig_pc_attach sa;
	pid_t pid, probe;
	struct gpu dst;
	int ret, st, i, sfd;
	ssize_t got;

	if (!src->pci || !pf_of(src->name, pf, sizeof(pf))) {
		snprintf(fail_msg, sizeof(fail_msg), "not a VF");
		return SKIP;
	}
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	ap = aperture_map(&dst, PC_DATA);
	CHECK(ap, "map the destination's aperture");
	probe = fork();
	if (probe == 0) {
		struct sigaction sa = { .sa_sigaction = pc_sigbus, .sa_flags = SA_SIGINFO };

		data_fds_close();
		sigaction(SIGBUS, &sa, NULL);
		alarm(60);
		_exit(__atomic_load_n(ap + PC_CPU_BLK * PC_BLOCK, __ATOMIC_RELAXED) & 0);
	}
	CHECK(probe > 0, "fork");
	usleep(300000);
	CHECK(waitpid(probe, &st, WNOHANG) == 0, "a CPU read of an owed block did not wait");
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	memcpy(sname, src->name, sizeof(sname));
	memcpy(dname, dst.name, sizeof(dname));
	pid = fork();
	if (pid == 0) {
		/*
		 * The child holds nothing of the devices': not even the
		 * aperture's mapping, which keeps the device open (the
		 * unbind would wait for itself).
		 */
		munmap(ap, PC_DATA);
		data_fds_close();
		gpu_close(src);
		gpu_close(&dst);
		_exit(sysfs_write("/sys/bus/pci/drivers/simgpu-pf/unbind", pf) ? 1 : 0);
	}
	CHECK(pid > 0, "fork");
	/*
	 * The PF's driver tells each VF's claimer first, then removes the
	 * VFs one by one, each waiting for its user (this process) to let
	 * go: the session must have ended before any of that.
	 */
	for (i = 0; i < 1000 && pc_state(&dst, "abandoned"); i++)
		usleep(10000);
	CHECK(i < 1000, "the destination's post-copy still waits 10 s after its PF's driver began to go");
	mig_attr(&dst, "postcopy_lost_blocks", v, sizeof(v));
	CHECK(atoi(v) > 0, "%s blocks lost with the PF's driver", v);
	for (i = 0; i < 1000 && waitpid(probe, &st, WNOHANG) != probe; i++)
		usleep(10000);
	if (i == 1000) {
		kill(probe, SIGKILL);
		waitpid(probe, &st, 0);
	}
	CHECK(i < 1000 && WIFEXITED(st) && WEXITSTATUS(st) == 2,
	      "the CPU read that waited on an owed block did not end with a memory error within 10 s of its PF's driver going");
	munmap(ap, PC_DATA);
	gpu_close(&dst);
	gpu_close(src);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "unbinding the PF's driver failed");
	CHECK(!dev_sysdir(sname) && !dev_sysdir(dname),
	      "a VF is still there after its PF's driver went away");
	/* The source's hold went with the PF's driver: a mover is told so. */
	sfd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &sa);
	CHECK(sfd >= 0, "attach to the source after its PF's driver went: %s", strerror(-sfd));
	rec = malloc(reclen);
	CHECK(rec, "out of memory");
	got = read(sfd, rec, reclen);
	st = errno;
	free(rec);
	CHECK(got < 0 && st == ENODEV, "a held block read after the PF's driver went: %zd (%s)",
	      got, strerror(st));
	CHECK(ioctl(sfd, GPUMIG_PC_ABANDON) == 0, "source ABANDON: %s", strerror(errno));
	close(sfd);
	printf("    # postcopy_pf_gone: the destination's %s owed blocks lost at once; a CPU read that waited on one: a memory error; both VFs went with the PF's driver, the source's hold with them\n",
	       v);
	return 0;
}

/* An mdev's type ("simgpu-256M"), from its sysfs link: 0 or -1. */
static int pc_mdev_type(const char *name, char *type, size_t len)
{
	char path[256], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/mdev_type", name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -1;
	link[n] = 0;
	snprintf(type, len, "%s", strrchr(link, '/') + 1);
	return 0;
}

/* Remove the closed mdev @name; then create it again, of @type: 0 or -1. */
static int pc_mdev_recreate(const char *name, const char *type)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/remove", name);
	if (sysfs_write(path, "1"))
		return -1;
	snprintf(path, sizeof(path), "/sys/class/mdev_bus/simgpu/mdev_supported_types/%s/create",
		 type);
	return sysfs_write(path, name) ? -1 : 0;
}

/*
 * mdevs removed mid post-copy (a removal cannot be refused): the source's
 * removal abandons its hold, loudly (a mover can no longer attach to it),
 * while the destination waits on; the destination's removal ends its
 * session, and its source then gives up.  Both instances are created again
 * with their names.  mdevs only.
 */
int t_postcopy_remove(struct gpu *src)
{
	uint8_t token[GPUMIG_PC_TOKEN_LEN], *data;
	char name[sizeof(src->name)], type[64];
	struct gpumig_pc_attach a;
	struct gpu dst;
	int ret, fd;

	if (src->pci || pc_mdev_type(src->name, type, sizeof(type))) {
		snprintf(fail_msg, sizeof(fail_msg), "a VF is not removed: its hold is the PF's");
		return SKIP;
	}
	memcpy(name, src->name, sizeof(name));
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	gpu_close(src);
	ret = pc_mdev_recreate(name, type);
	if (!ret)
		ret = gpu_open(src, name);
	CHECK(!ret, "remove and create the source %s again", name);
	fd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &a);
	CHECK(fd == -ENOENT, "a removed source's session can still be attached to (%d)", fd);
	CHECK(pc_state(&dst, "active") == 0, "the destination stopped waiting when the source went");
	fd = pc_attach(token, GPUMIG_PC_ROLE_DESTINATION, &a);
	CHECK(fd >= 0, "attach to the destination");
	CHECK(ioctl(fd, GPUMIG_PC_ABANDON) == 0, "destination ABANDON");
	close(fd);
	gpu_close(&dst);

	/* The destination removed halfway. */
	ret = pc_migrate(src, &dst, &data);
	if (ret)
		return ret;
	CHECK(pc_token(src, token) == 0, "no session token on the source");
	gpu_close(&dst);
	CHECK(pc_mdev_type(dst_name, type, sizeof(type)) == 0 &&
	      pc_mdev_recreate(dst_name, type) == 0, "remove and create the destination again");
	fd = pc_attach(token, GPUMIG_PC_ROLE_DESTINATION, &a);
	CHECK(fd == -ENOENT, "a removed destination's session can still be attached to (%d)", fd);
	CHECK(pc_state(src, "active") == 0, "the source stopped holding when the destination went");
	fd = pc_attach(token, GPUMIG_PC_ROLE_SOURCE, &a);
	CHECK(fd >= 0, "attach to the source");
	CHECK(ioctl(fd, GPUMIG_PC_ABANDON) == 0, "source ABANDON");
	close(fd);
	CHECK(pc_state(src, "abandoned") == 0, "the source does not say it was abandoned");
	printf("    # postcopy_remove: a source removed abandons its hold; a destination removed ends its session\n");
	return 0;
}
