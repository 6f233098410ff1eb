// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-work: a workload for simgpu GPUs in a Linux guest, through the
 * simgpu-guest driver (/dev/simgpuN, linux/simgpu_guest.h).  It runs a
 * chosen mix on every GPU at once for a while, verifies every result,
 * and prints a machine-readable summary, so an orchestrator's test can
 * start it before a migration and assert after it:
 *
 *   simgpu-work [-t SECONDS] [-m MIX] [-s] [DEVICE...]
 *   simgpu-work -V | -h
 *
 * MIX is a comma-separated list of:
 *   vram    guest memory -> VRAM -> a FILL in VRAM -> guest memory, checked
 *   dma     guest memory -> guest memory (COPY, FILL), checked
 *   kernel  KERNEL iterations over a buffer, checked against the CPU
 *   dirty   the device's background writer over 1 MiB of VRAM (a dirty rate)
 *   bad     every tenth round a command the device must refuse (a FILL of an
 *           unaligned length): its error is reported, the queue goes on
 * (default vram,dma,kernel).  DEVICEs default to every /dev/simgpu*.
 *
 * A round whose fence failed counts as an error (the device said why); a
 * round a device reset went through is discarded (its VRAM went); every
 * other round is checked, and a wrong result is counted as such.  A GPU
 * removed under it ends its thread ("gone"; its buffers' mappings went
 * with it).  Output:
 * one JSON object on stdout ("schema": 1).  Exit status 0 when no result
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

enum { W_VRAM = 1, W_DMA = 2, W_KERNEL = 4, W_DIRTY = 8, W_BAD = 16 };

struct bo {
	uint32_t handle;
	uint64_t va;
	uint8_t *p;		/* guest memory: mapped */
};

struct gpu {
	const char *path;
	int fd;
	struct sgg_info info;
	struct bo a, b, k, v, d;
	uint32_t seed;
	/* results */
	unsigned long checked, wrong, errored, discarded;
	unsigned long refused;	/* bad commands refused as they must be */
	uint64_t bytes[MAX_SECONDS + 1];	/* moved, per second of the run */
	struct sgg_error log[MAX_LOG];
	unsigned int nlog, lost;
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
static unsigned int ngpu, seconds = 10, mix = W_VRAM | W_DMA | W_KERNEL;
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
		if (g->nlog < MAX_LOG)
			g->log[g->nlog++] = e.e[i];
		else
			g->lost++;
	g->lost += e.lost;
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

/* One round of @what on queue @q: 0 checked right, 1 wrong, -1 error, 2 discarded. */
static int round_of(struct gpu *g, unsigned int what, uint32_t q, uint64_t *moved)
{
	uint64_t before = resets(g), f1, f2, f3;
	uint32_t *a = (uint32_t *)g->a.p, *b = (uint32_t *)g->b.p, *k = (uint32_t *)g->k.p;
	uint32_t val = rnd(&g->seed), key = rnd(&g->seed), it = 1 + rnd(&g->seed) % 8;
	size_t i, off = (rnd(&g->seed) % (BUF / 4096 / 2)) * 4096, flen = 64 * 1024;
	int bad = 0;

	switch (what) {
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
	static const unsigned int kinds[] = { W_VRAM, W_DMA, W_KERNEL };
	uint64_t end = t0 + seconds * 1000ULL;
	unsigned int n = 0;

	while (now_ms() < end) {
		unsigned int what = kinds[n % 3];
		uint64_t moved = 0, t;
		int r;

		n++;
		if ((mix & W_BAD) && n % 10 == 0) {
			uint32_t q = n % g->info.queues;
			uint64_t f = submit(g, q, SIMGPU_OP_FILL, g->a.va, 3, 0, 0);

			if (wait_fence(g, q, f))
				g->refused++;
			else
				g->wrong++;	/* a nonsense command ran */
			continue;
		}
		if (!(mix & what))
			continue;
		r = round_of(g, what, n % g->info.queues, &moved);
		t = (now_ms() - t0) / 1000;
		if (t <= MAX_SECONDS)
			g->bytes[t] += moved;
		if (r == 0 || r == 1) {
			g->checked++;
			g->wrong += r;
		} else if (r < 0) {
			g->errored++;
		} else {
			g->discarded++;
		}
		errors_drain(g);
	}
}

static void *run(void *arg)
{
	struct gpu *g = arg;
	struct sgg_dirty d = { .handle = g->d.handle, .pages = BUF / 4096 };

	if ((mix & W_DIRTY) && ioctl(g->fd, SGG_IOCTL_DIRTY, &d))
		snprintf(g->fatal, sizeof(g->fatal), "the background writer: %s", strerror(errno));
	if (sigsetjmp(gone_jmp, 1)) {
		g->gone = true;
		g->errored++;
		return NULL;
	}
	rounds(g);
	if (mix & W_DIRTY) {
		d.pages = 0;
		ioctl(g->fd, SGG_IOCTL_DIRTY, &d);
	}
	errors_drain(g);
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
	g->fd = open(path, O_RDWR | O_CLOEXEC);
	if (g->fd < 0)
		return -errno;
	if (ioctl(g->fd, SGG_IOCTL_INFO, &g->info))
		return -errno;
	if (g->info.abi != SGG_ABI_VERSION || !g->info.queues)
		return -EPROTO;
	ret = bo_new(g, &g->a, SGG_DOMAIN_SYS) ?: bo_new(g, &g->b, SGG_DOMAIN_SYS) ?:
	      bo_new(g, &g->k, SGG_DOMAIN_SYS) ?: bo_new(g, &g->v, SGG_DOMAIN_VRAM) ?:
	      bo_new(g, &g->d, SGG_DOMAIN_VRAM);
	return ret;
}

static void summary(void)
{
	unsigned long checked = 0, wrong = 0, errored = 0, discarded = 0, nerr = 0;
	unsigned int i, j, t;

	printf("{\"schema\": 1, \"seconds\": %u, \"devices\": [", seconds);
	for (i = 0; i < ngpu; i++) {
		struct gpu *g = &gpus[i];
		struct sgg_info info = g->info;

		ioctl(g->fd, SGG_IOCTL_INFO, &info);
		printf("%s{\"device\": \"%s\", \"queues\": %u, \"vram_bytes\": %llu, ",
		       i ? ", " : "", g->path, info.queues, (unsigned long long)info.vram_size);
		printf("\"checked\": %lu, \"wrong\": %lu, \"errored\": %lu, \"discarded\": %lu, ",
		       g->checked, g->wrong, g->errored, g->discarded);
		printf("\"refused\": %lu, \"resets\": %llu, \"errors_lost\": %u, \"errors\": [",
		       g->refused, (unsigned long long)info.resets, g->lost);
		for (j = 0; j < g->nlog; j++)
			printf("%s{\"code\": %u, \"name\": \"%s\", \"queue\": %u, \"addr\": %llu}",
			       j ? ", " : "", g->log[j].code, err_name(g->log[j].code),
			       g->log[j].queue, (unsigned long long)g->log[j].addr);
		printf("], \"bytes_per_second\": [");
		for (t = 0; t < seconds && t <= MAX_SECONDS; t++)
			printf("%s%llu", t ? ", " : "", (unsigned long long)g->bytes[t]);
		printf("], \"gone\": %s%s%s%s}", g->gone ? "true" : "false",
		       g->fatal[0] ? ", \"fatal\": \"" : "", g->fatal, g->fatal[0] ? "\"" : "");
		checked += g->checked;
		wrong += g->wrong;
		errored += g->errored;
		discarded += g->discarded;
		nerr += g->nlog + g->lost;
	}
	printf("], \"checked\": %lu, \"wrong\": %lu, \"errored\": %lu, \"discarded\": %lu, ",
	       checked, wrong, errored, discarded);
	printf("\"errors\": %lu}\n", nerr);
}

static void print_usage(FILE *f)
{
	fputs("usage: simgpu-work [-t SECONDS] [-m vram,dma,kernel,dirty,bad] [-s] [DEVICE...]\n"
	      "       simgpu-work -V | -h\n", f);
	exit(f == stdout ? 0 : 2);
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_DEV];
	glob_t gl = { 0 };
	unsigned int i;
	int c, ret = 0;

	while ((c = getopt(argc, argv, "t:m:sVh")) != -1) {
		switch (c) {
		case 't':
			seconds = strtoul(optarg, NULL, 10);
			if (!seconds || seconds > MAX_SECONDS)
				print_usage(stderr);
			break;
		case 'm': {
			char *tok, *save = NULL;

			mix = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				mix |= !strcmp(tok, "vram") ? W_VRAM : !strcmp(tok, "dma") ? W_DMA :
				       !strcmp(tok, "kernel") ? W_KERNEL :
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
	for (i = 0; i < ngpu; i++)
		pthread_create(&th[i], NULL, run, &gpus[i]);
	for (i = 0; i < ngpu; i++)
		pthread_join(th[i], NULL);
	summary();
	for (i = 0; i < ngpu; i++) {
		if (gpus[i].wrong || gpus[i].fatal[0] ||
		    (strict && (gpus[i].errored || gpus[i].nlog + gpus[i].lost > gpus[i].refused)))
			ret = 1;
	}
	globfree(&gl);
	return ret;
}
