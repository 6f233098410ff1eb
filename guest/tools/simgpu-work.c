// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-work: a workload for simgpu GPUs in a Linux guest, through the
 * simgpu-guest driver (/dev/simgpuN, linux/simgpu_guest.h).  It runs a
 * chosen mix on every GPU at once for a while, verifies every result,
 * and prints a machine-readable summary, so an orchestrator's test can
 * start it before a migration and assert after it:
 *
 *   simgpu-work [-t SECONDS] [-i SECONDS] [-m MIX] [-s] [DEVICE...]
 *   simgpu-work -V | -h
 *
 * MIX is a comma-separated list of:
 *   vram    guest memory -> VRAM -> a FILL in VRAM -> guest memory, checked
 *   dma     guest memory -> guest memory (COPY, FILL), checked
 *   kernel  KERNEL iterations over a buffer, checked against the CPU
 *   keep    1 MiB of VRAM written once and read back whole every round: what
 *           happens to VRAM between rounds (a migration) is checked
 *   dirty   the device's background writer over 1 MiB of VRAM (a dirty rate)
 *   bad     every tenth round a command the device must refuse (a FILL of an
 *           unaligned length): its error is reported, the queue goes on
 * (default vram,dma,kernel,keep).  DEVICEs default to every /dev/simgpu*.
 * With -i, a summary line every SECONDS of what happened since the last
 * one ("interval": its number) instead of one at the end, so that a
 * single run can span a migration and keep's VRAM with it.
 *
 * A round whose fence failed counts as an error (the device said why); a
 * round a device reset went through is discarded (its VRAM went); every
 * other round is checked, and a wrong result is counted as such.  A GPU
 * removed under it ends its thread ("gone"; its buffers' mappings went
 * with it).  Output:
 * one JSON object on stdout ("schema": 1; keep_fills counts keep's
 * writes, 1 when its VRAM held all along, keep_checked its reads that
 * found it right).  Exit status 0 when no result
 * was wrong (with -s, and no error either), 1 otherwise, 2 on a bad
 * command line or a device that cannot be used.  -V prints the version
 * (simgpu-guest's, guest/dkms.conf), -h the usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/simgpu.h>
#include <linux/simgpu_guest.h>

#define BUF		0x100000U	/* 1 MiB */
#define MAX_DEV		16
#define MAX_SECONDS	3600
#define MAX_LOG		64
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#ifndef SGW_VERSION	/* the Makefile's, from ../dkms.conf */
#define SGW_VERSION	"unknown"
#endif

enum { W_VRAM = 1, W_DMA = 2, W_KERNEL = 4, W_DIRTY = 8, W_BAD = 16, W_KEEP = 32 };

struct bo {
	uint32_t handle;
	uint64_t va;
	uint8_t *p;		/* guest memory: mapped */
};

/* What a summary counts; with -i, also as of the last interval's line. */
struct counts {
	unsigned long checked, wrong, errored, discarded;
	unsigned long refused;	/* bad commands refused as they must be */
	unsigned long keep_fills;	/* times the kept VRAM was (re)written */
	unsigned long keep_checked;	/* ... and read back right */
	unsigned int nlog, lost;
};

struct gpu {
	const char *path;
	int fd;
	struct sgg_info info;
	struct bo a, b, k, v, d, kp;
	uint32_t seed;
	/* keep: what kp holds (kseed's words), since the reset count kresets */
	uint32_t kseed;
	bool kfilled;
	uint64_t kresets;
	/* results, under mu (with -i the main thread reads them meanwhile) */
	pthread_mutex_t mu;
	struct counts c, prev;
	uint64_t bytes[MAX_SECONDS + 1];	/* moved, per second of the run */
	struct sgg_error log[MAX_LOG];
	bool gone;		/* its buffers' mappings went (SIGBUS): removed */
	char fatal[256];
};

/* A removed GPU's buffers fault (SIGBUS) in the thread that touched them. */
static __thread sigjmp_buf gone_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(gone_jmp, 1);
}

static struct gpu gpus[MAX_DEV];
static unsigned int ngpu, seconds = 10, interval, mix = W_VRAM | W_DMA | W_KERNEL | W_KEEP;
static unsigned int running;	/* threads not done yet */
static bool strict;
static uint64_t t0;

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ULL + t.tv_nsec / 1000000;
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static int bo_new(struct gpu *g, struct bo *bo, uint32_t domain)
{
	struct sgg_bo_create c = { .size = BUF, .domain = domain };

	if (ioctl(g->fd, SGG_IOCTL_BO_CREATE, &c))
		return -errno;
	bo->handle = c.handle;
	bo->va = c.gpu_va;
	if (domain == SGG_DOMAIN_SYS) {
		bo->p = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, c.mmap_offset);
		if (bo->p == MAP_FAILED)
			return -errno;
	}
	return 0;
}

/* The device's errors so far, kept for the summary. */
static void errors_drain(struct gpu *g)
{
	struct sgg_errors e;
	unsigned int i;

	if (ioctl(g->fd, SGG_IOCTL_ERRORS, &e))
		return;
	for (i = 0; i < e.count; i++)
		if (g->c.nlog < MAX_LOG)
			g->log[g->c.nlog++] = e.e[i];
		else
			g->c.lost++;
	g->c.lost += e.lost;
}

static uint64_t submit(struct gpu *g, uint32_t q, uint32_t op, uint64_t a0, uint64_t a1,
		       uint64_t a2, uint64_t a3)
{
	struct sgg_submit s = { .queue = q, .op = op, .args = { a0, a1, a2, a3 } };

	if (ioctl(g->fd, SGG_IOCTL_SUBMIT, &s))
		return 0;
	return s.fence;
}

/* 0 when @fence came; -1 when it failed (an error) or never was. */
static int wait_fence(struct gpu *g, uint32_t q, uint64_t fence)
{
	struct sgg_wait w = { .queue = q, .fence = fence, .timeout_ms = 30000 };

	if (!fence)
		return -1;
	return ioctl(g->fd, SGG_IOCTL_WAIT, &w) ? -1 : 0;
}

static uint64_t resets(struct gpu *g)
{
	struct sgg_info i;

	return ioctl(g->fd, SGG_IOCTL_INFO, &i) ? ~0ULL : i.resets;
}

static uint32_t kernel_word(uint32_t w, uint32_t key, uint32_t it)
{
	return (w ^ key) * 2654435761U + it;
}

/* Word @i of what the kept VRAM holds after a fill with @seed. */
static uint32_t keep_word(uint32_t seed, size_t i)
{
	uint32_t w = seed ^ (uint32_t)i * 2246822519U;

	return w ^ w >> 15;
}

/*
 * keep: 1 MiB of VRAM written once and read back whole every round, so
 * that what a migration (or anything else) does to VRAM between rounds
 * is seen.  Written again after an error (a lost page is usable again
 * once rewritten), a reset (VRAM went with it) or a wrong result (counted
 * once).  Returns as round_of() does.
 */
static int keep_round(struct gpu *g, uint32_t q, uint64_t before, uint64_t *moved)
{
	uint32_t *a = (uint32_t *)g->a.p, *b = (uint32_t *)g->b.p;
	uint64_t f;
	size_t i;
	int bad = 0;

	if (!g->kfilled) {
		g->kseed = rnd(&g->seed);
		for (i = 0; i < BUF / 4; i++)
			a[i] = keep_word(g->kseed, i);
		f = submit(g, q, SIMGPU_OP_COPY, g->kp.va, g->a.va, BUF, 0);
		*moved += BUF;
		if (wait_fence(g, q, f))
			return -1;
		if (resets(g) != before)
			return 2;
		g->kresets = before;
		g->kfilled = true;
		return 3;
	}
	memset(b, 0, BUF);
	f = submit(g, q, SIMGPU_OP_COPY, g->b.va, g->kp.va, BUF, 0);
	*moved += BUF;
	g->kfilled = false;
	if (wait_fence(g, q, f))
		return -1;
	if (resets(g) != g->kresets)
		return 2;
	for (i = 0; i < BUF / 4 && !bad; i++)
		bad = b[i] != keep_word(g->kseed, i);
	g->kfilled = !bad;
	return bad ? 1 : 4;
}

/*
 * One round of @what on queue @q: 0 checked right, 1 wrong, -1 error, 2
 * discarded, 3 nothing to check (keep wrote its VRAM), 4 keep's VRAM
 * checked right.
 */
static int round_of(struct gpu *g, unsigned int what, uint32_t q, uint64_t *moved)
{
	uint64_t before = resets(g), f1, f2, f3;
	uint32_t *a = (uint32_t *)g->a.p, *b = (uint32_t *)g->b.p, *k = (uint32_t *)g->k.p;
	uint32_t val = rnd(&g->seed), key = rnd(&g->seed), it = 1 + rnd(&g->seed) % 8;
	size_t i, off = (rnd(&g->seed) % (BUF / 4096 / 2)) * 4096, flen = 64 * 1024;
	int bad = 0;

	switch (what) {
	case W_KEEP:
		return keep_round(g, q, before, moved);
	case W_VRAM:
	case W_DMA:
		for (i = 0; i < BUF / 4; i++)
			a[i] = rnd(&g->seed);
		memset(b, 0, BUF);
		if (what == W_VRAM) {
			f1 = submit(g, q, SIMGPU_OP_COPY, g->v.va, g->a.va, BUF, 0);
			f2 = submit(g, q, SIMGPU_OP_FILL, g->v.va + off, flen, val, 0);
			f3 = submit(g, q, SIMGPU_OP_COPY, g->b.va, g->v.va, BUF, 0);
			*moved += 3 * BUF;
		} else {
			f1 = submit(g, q, SIMGPU_OP_COPY, g->b.va, g->a.va, BUF, 0);
			f2 = submit(g, q, SIMGPU_OP_FILL, g->b.va + off, flen, val, 0);
			f3 = f2;
			*moved += 2 * BUF;
		}
		if (wait_fence(g, q, f1) || wait_fence(g, q, f2) || wait_fence(g, q, f3))
			return -1;
		if (resets(g) != before)
			return 2;
		for (i = 0; i < BUF / 4 && !bad; i++) {
			uint32_t want = i >= off / 4 && i < (off + flen) / 4 ? val : a[i];

			bad = b[i] != want;
		}
		return bad;
	case W_KERNEL:
		for (i = 0; i < 4096; i++)
			k[i] = rnd(&g->seed);
		memcpy(a, k, 4096 * 4);
		f1 = submit(g, q, SIMGPU_OP_KERNEL, g->k.va, 4096 * 4, it, key);
		*moved += 4096 * 4 * it;
		if (wait_fence(g, q, f1))
			return -1;
		if (resets(g) != before)
			return 2;
		for (i = 0; i < 4096 && !bad; i++) {
			uint32_t w = a[i], n;

			for (n = 0; n < it; n++)
				w = kernel_word(w, key, n);
			bad = k[i] != w;
		}
		return bad;
	}
	return 0;
}

/* Rounds until the end of the run. */
static void rounds(struct gpu *g)
{
	static const unsigned int kinds[] = { W_VRAM, W_DMA, W_KERNEL, W_KEEP };
	uint64_t end = t0 + seconds * 1000ULL;
	unsigned int n = 0;

	while (now_ms() < end) {
		unsigned int what = kinds[n % ARRAY_SIZE(kinds)];
		uint64_t moved = 0, t;
		int r;

		n++;
		if ((mix & W_BAD) && n % 10 == 0) {
			uint32_t q = n % g->info.queues;
			uint64_t f = submit(g, q, SIMGPU_OP_FILL, g->a.va, 3, 0, 0);
			int ran = !wait_fence(g, q, f);

			pthread_mutex_lock(&g->mu);
			if (ran)
				g->c.wrong++;	/* a nonsense command ran */
			else
				g->c.refused++;
			pthread_mutex_unlock(&g->mu);
			continue;
		}
		if (!(mix & what))
			continue;
		r = round_of(g, what, n % g->info.queues, &moved);
		t = (now_ms() - t0) / 1000;
		pthread_mutex_lock(&g->mu);
		if (t <= MAX_SECONDS)
			g->bytes[t] += moved;
		if (r == 0 || r == 1 || r == 4) {
			g->c.checked++;
			g->c.wrong += r == 1;
			g->c.keep_checked += r == 4;
		} else if (r < 0) {
			g->c.errored++;
		} else if (r == 2) {
			g->c.discarded++;
		} else {
			g->c.keep_fills++;
		}
		errors_drain(g);
		pthread_mutex_unlock(&g->mu);
	}
}

static void *run(void *arg)
{
	struct gpu *g = arg;
	struct sgg_dirty d = { .handle = g->d.handle, .pages = BUF / 4096 };

	if ((mix & W_DIRTY) && ioctl(g->fd, SGG_IOCTL_DIRTY, &d))
		snprintf(g->fatal, sizeof(g->fatal), "the background writer: %s", strerror(errno));
	if (sigsetjmp(gone_jmp, 1)) {
		/* a fault in a round's buffers: never under the lock */
		pthread_mutex_lock(&g->mu);
		g->gone = true;
		g->c.errored++;
		pthread_mutex_unlock(&g->mu);
		__atomic_sub_fetch(&running, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	rounds(g);
	if (mix & W_DIRTY) {
		d.pages = 0;
		ioctl(g->fd, SGG_IOCTL_DIRTY, &d);
	}
	pthread_mutex_lock(&g->mu);
	errors_drain(g);
	pthread_mutex_unlock(&g->mu);
	__atomic_sub_fetch(&running, 1, __ATOMIC_RELEASE);
	return NULL;
}

static const char *err_name(uint32_t code)
{
	static const char *const names[] = {
		"NONE", "RING_DMA", "BAD_OPCODE", "BAD_ARGS", "PAGE_FAULT", "WRITE_FAULT", "DMA",
		"VRAM_RANGE", "PT_DMA", "BAD_RING", "INTERNAL", "DEVICE_LOST", "VRAM_LOST" };

	if (code == SGG_ERR_RESET)
		return "RESET";
	return code < ARRAY_SIZE(names) ? names[code] : "UNKNOWN";
}

static int gpu_open(struct gpu *g, const char *path)
{
	int ret;

	g->path = path;
	g->seed = 0x9e3779b9U ^ (uint32_t)(g - gpus) * 7919;
	pthread_mutex_init(&g->mu, NULL);
	g->fd = open(path, O_RDWR | O_CLOEXEC);
	if (g->fd < 0)
		return -errno;
	if (ioctl(g->fd, SGG_IOCTL_INFO, &g->info))
		return -errno;
	if (g->info.abi != SGG_ABI_VERSION || !g->info.queues)
		return -EPROTO;
	ret = bo_new(g, &g->a, SGG_DOMAIN_SYS) ?: bo_new(g, &g->b, SGG_DOMAIN_SYS) ?:
	      bo_new(g, &g->k, SGG_DOMAIN_SYS) ?: bo_new(g, &g->v, SGG_DOMAIN_VRAM) ?:
	      bo_new(g, &g->d, SGG_DOMAIN_VRAM) ?: bo_new(g, &g->kp, SGG_DOMAIN_VRAM);
	return ret;
}

/*
 * The JSON summary of seconds [@from, @to) of the run: with -i, of what
 * happened since the last one (line @k, counted from 1); else, @k 0, of
 * the whole run.
 */
static void summary(unsigned int k, unsigned int from, unsigned int to)
{
	struct counts tot = { 0 };
	unsigned int i, j, t;

	printf("{\"schema\": 1, ");
	if (k)
		printf("\"interval\": %u, ", k);
	printf("\"seconds\": %u, \"devices\": [", to - from);
	for (i = 0; i < ngpu; i++) {
		struct gpu *g = &gpus[i];
		struct sgg_info info = g->info;
		struct counts c, p = { 0 };

		ioctl(g->fd, SGG_IOCTL_INFO, &info);
		pthread_mutex_lock(&g->mu);
		c = g->c;
		if (k) {
			p = g->prev;
			g->prev = c;
		}
		printf("%s{\"device\": \"%s\", \"queues\": %u, \"vram_bytes\": %llu, ",
		       i ? ", " : "", g->path, info.queues, (unsigned long long)info.vram_size);
		printf("\"checked\": %lu, \"wrong\": %lu, \"errored\": %lu, \"discarded\": %lu, ",
		       c.checked - p.checked, c.wrong - p.wrong, c.errored - p.errored,
		       c.discarded - p.discarded);
		printf("\"refused\": %lu, \"keep_fills\": %lu, \"keep_checked\": %lu, ",
		       c.refused - p.refused, c.keep_fills - p.keep_fills,
		       c.keep_checked - p.keep_checked);
		printf("\"resets\": %llu, ", (unsigned long long)info.resets);
		printf("\"errors_lost\": %u, \"errors\": [", c.lost - p.lost);
		for (j = p.nlog; j < c.nlog; j++)
			printf("%s{\"code\": %u, \"name\": \"%s\", \"queue\": %u, \"addr\": %llu}",
			       j > p.nlog ? ", " : "", g->log[j].code, err_name(g->log[j].code),
			       g->log[j].queue, (unsigned long long)g->log[j].addr);
		printf("], \"bytes_per_second\": [");
		for (t = from; t < to && t <= MAX_SECONDS; t++)
			printf("%s%llu", t > from ? ", " : "", (unsigned long long)g->bytes[t]);
		printf("], \"gone\": %s%s%s%s}", g->gone ? "true" : "false",
		       g->fatal[0] ? ", \"fatal\": \"" : "", g->fatal, g->fatal[0] ? "\"" : "");
		pthread_mutex_unlock(&g->mu);
		tot.checked += c.checked - p.checked;
		tot.wrong += c.wrong - p.wrong;
		tot.errored += c.errored - p.errored;
		tot.discarded += c.discarded - p.discarded;
		tot.nlog += c.nlog - p.nlog + c.lost - p.lost;
	}
	printf("], \"checked\": %lu, \"wrong\": %lu, \"errored\": %lu, \"discarded\": %lu, ",
	       tot.checked, tot.wrong, tot.errored, tot.discarded);
	printf("\"errors\": %u}\n", tot.nlog);
	fflush(stdout);
}

/* -i: a line every @interval seconds until every thread is done. */
static void intervals(void)
{
	unsigned int k = 0, from = 0, now;

	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		usleep(100000);
		now = (now_ms() - t0) / 1000;
		if (now >= from + interval) {
			summary(++k, from, now);
			from = now;
		}
	}
	now = (now_ms() - t0 + 999) / 1000;
	if (now > from)
		summary(++k, from, now);
}

static void print_usage(FILE *f)
{
	fputs("usage: simgpu-work [-t SECONDS] [-i SECONDS] [-m vram,dma,kernel,keep,dirty,bad] [-s]\n"
	      "                   [DEVICE...]\n"
	      "       simgpu-work -V | -h\n", f);
	exit(f == stdout ? 0 : 2);
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_DEV];
	glob_t gl = { 0 };
	unsigned int i;
	int c, ret = 0;

	while ((c = getopt(argc, argv, "t:i:m:sVh")) != -1) {
		switch (c) {
		case 't':
			seconds = strtoul(optarg, NULL, 10);
			if (!seconds || seconds > MAX_SECONDS)
				print_usage(stderr);
			break;
		case 'i':
			interval = strtoul(optarg, NULL, 10);
			if (!interval || interval > MAX_SECONDS)
				print_usage(stderr);
			break;
		case 'm': {
			char *tok, *save = NULL;

			mix = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				mix |= !strcmp(tok, "vram") ? W_VRAM : !strcmp(tok, "dma") ? W_DMA :
				       !strcmp(tok, "kernel") ? W_KERNEL :
				       !strcmp(tok, "keep") ? W_KEEP :
				       !strcmp(tok, "dirty") ? W_DIRTY :
				       !strcmp(tok, "bad") ? W_BAD : (print_usage(stderr), 0);
			break;
		}
		case 's':
			strict = true;
			break;
		case 'V':
			printf("simgpu-work %s\n", SGW_VERSION);
			return 0;
		case 'h':
			print_usage(stdout);
			break;
		default:
			print_usage(stderr);
		}
	}
	if (optind == argc) {
		if (glob("/dev/simgpu[0-9]*", 0, NULL, &gl) || !gl.gl_pathc) {
			fprintf(stderr, "simgpu-work: no /dev/simgpu* (is simgpu-guest loaded?)\n");
			return 2;
		}
		argv = gl.gl_pathv;
		argc = gl.gl_pathc;
		optind = 0;
	}
	for (i = 0; optind < argc && i < MAX_DEV; i++, optind++) {
		ret = gpu_open(&gpus[i], argv[optind]);
		if (ret) {
			fprintf(stderr, "simgpu-work: %s: %s\n", argv[optind], strerror(-ret));
			return 2;
		}
	}
	ngpu = i;
	signal(SIGBUS, on_sigbus);
	t0 = now_ms();
	running = ngpu;
	for (i = 0; i < ngpu; i++)
		pthread_create(&th[i], NULL, run, &gpus[i]);
	if (interval)
		intervals();
	for (i = 0; i < ngpu; i++)
		pthread_join(th[i], NULL);
	if (!interval)
		summary(0, 0, seconds);
	for (i = 0; i < ngpu; i++) {
		struct counts *n = &gpus[i].c;

		if (n->wrong || gpus[i].fatal[0] ||
		    (strict && (n->errored || n->nlog + n->lost > n->refused)))
			ret = 1;
	}
	globfree(&gl);
	return ret;
}
