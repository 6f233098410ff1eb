// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: migrations back and forth between two instances with a
 * kernel in flight: twenty round trips, and the soak (many, the timing
 * knobs at random, the kernel's memory bounded).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"

/* Back and forth 20 times with a kernel in flight; the result is exact. */
int t_pingpong(struct gpu *a)
{
	const uint32_t words = 4096, iters = 2000, key = 0x5eed;
	uint32_t expect[4096], *kbuf, *res, i, it;
	struct gpu b, *from = a, *to = &b;
	uint64_t koff;
	int n;

	gpu_setup(a, 16);
	kbuf = sysbuf(a, VA_SYS, words * 4, NULL);
	koff = (uint8_t *)kbuf - a->mem;
	fill_random(kbuf, words * 4);
	memcpy(expect, kbuf, words * 4);
	for (it = 0; it < iters; it++)
		for (i = 0; i < words; i++)
			expect[i] = kernel_word(expect[i], key, it);
	knob_set(a, "kernel_step_us", "1000");
	gpu_submit(a, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, words * 4, iters, key);
	CHECK(gpu_open(&b, dst_name) == 0, "open second instance");
	knob_set(&b, "kernel_step_us", "1000");
	for (n = 0; n < 20; n++) {
		TRY(migrate_trip(from, to, n));
		usleep(20000);
		from = to;
		to = from == a ? &b : a;
	}
	CHECK(gpu_wait_idle(from, 0, 120000) == 0,
	      "kernel did not finish after 20 migrations");
	res = (uint32_t *)(from->mem + koff);
	for (i = 0; i < words; i++)
		CHECK(res[i] == expect[i], "word %u wrong after 20 migrations", i);
	gpu_close(&b);
	return 0;
}

/*
 * Shrink every slab cache: empty slabs go back to the page allocator, and
 * under KASAN (kmem_cache_shrink() -> kasan_cache_shrink()) the objects
 * its quarantine still holds for the cache are freed first, so that Slab
 * counts live objects, not recently freed ones.  Returns the caches shrunk.
 */
static int slab_shrink_all(void)
{
	DIR *d = opendir("/sys/kernel/slab");
	struct dirent *e;
	char path[512];
	int n = 0;

	while (d && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.' || e->d_type == DT_LNK)
			continue;	/* aliases of merged caches: shrunk once */
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", e->d_name);
		f = fopen(path, "w");
		if (!f)
			continue;
		n += fputs("1", f) >= 0;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* A /proc/meminfo figure in KiB, caches dropped first; -1 if absent. */
static long long meminfo_kib(const char *key)
{
	char line[256];
	long long v = -1;
	size_t n = strlen(key);
	FILE *f;

	sync();
	f = fopen("/proc/sys/vm/drop_caches", "w");
	if (f) {
		fputs("3", f);
		fclose(f);
	}
	slab_shrink_all();
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = atoll(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

/* KASAN's quarantine holds freed objects in slab for a while. */
static bool kasan_on(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[256];
	bool on = false;

	while (f && !on && fgets(line, sizeof(line), f))
		on = !!strstr(line, " kasan_quarantine_put");
	if (f)
		fclose(f);
	return on;
}

static double pct(long long from, long long to)
{
	return from > 0 ? 100.0 * (double)(to - from) / (double)from : 0;
}

/*
 * Migrations back and forth, SOAK_MIGRATIONS of them (60 unless the
 * environment says otherwise), with a kernel
 * in flight across each batch of 20 and its result checked word by word
 * after the batch, and the timing knobs (step length, acknowledgment
 * delay) changed at random between migrations.  After a warm-up (50, or
 * half of a shorter run)
 * the kernel's slab and available memory are taken; at the end they must
 * be within 2 % of that.  Leaks and splats are the harness's to find.
 */
/* Migrations after the warm-up from which a KASAN kernel's memory is bounded. */
#define SOAK_LONG	500

int t_soak(struct gpu *a)
{
	const uint32_t words = 1024, batch = 20;
	uint32_t expect[1024], *kbuf, i, it, iters, key, wrong = 0;
	uint64_t kiova;
	long long slab0 = -1, avail0 = -1, slab1, avail1;
	struct gpu b, *from = a, *to = &b;
	int total = 60, warm, n = 0;
	const char *env = getenv("SOAK_MIGRATIONS");
	char v[32];

	if (env)
		total = atoi(env);
	warm = total >= 100 ? 50 : total / 2;
	CHECK(gpu_open(&b, dst_name) == 0, "open second instance");
	while (n < total) {
		/* A new kernel for each batch, running across its migrations. */
		key = rnd();
		iters = 2000 + rnd() % 2000;
		/* The guest sets the GPU up afresh, as after a reboot. */
		CHECK(gpu_reset(from) == 0, "reset before batch %d", n / (int)batch);
		from->pt_root = 0;
		gpu_setup(from, 16);
		kbuf = sysbuf(from, VA_SYS, words * 4, &kiova);
		fill_random(kbuf, words * 4);
		memcpy(expect, kbuf, words * 4);
		for (it = 0; it < iters; it++)
			for (i = 0; i < words; i++)
				expect[i] = kernel_word(expect[i], key, it);
		gpu_submit(from, 0, SIMGPU_OP_KERNEL, 0, VA_SYS, words * 4, iters, key);
		for (i = 0; i < batch && n < total; i++, n++) {
			snprintf(v, sizeof(v), "%u", 100 + rnd() % 900);
			knob_set(to, "kernel_step_us", v);
			snprintf(v, sizeof(v), "%u", rnd() % 20);
			knob_set(from, "ack_delay_ms", v);
			TRY(migrate_trip(from, to, n));
			from = to;
			to = from == a ? &b : a;
			if (n + 1 == warm) {
				slab0 = meminfo_kib("Slab");
				avail0 = meminfo_kib("MemAvailable");
			}
		}
		CHECK(gpu_wait_idle(from, 0, 300000) == 0, "batch kernel did not finish");
		kbuf = gptr(from, kiova);	/* the guest memory came along */
		wrong += memcmp(kbuf, expect, words * 4) != 0;
	}
	slab1 = meminfo_kib("Slab");
	avail1 = meminfo_kib("MemAvailable");
	printf("    # soak: %d migrations, %u wrong results; after %d: Slab %lld KiB, MemAvailable %lld KiB; at the end: Slab %lld KiB (%+.2f %%), MemAvailable %lld KiB (%+.2f %%)\n",
	       n, wrong, warm, slab0, avail0, slab1, pct(slab0, slab1), avail1,
	       pct(avail0, avail1));
	gpu_close(&b);
	CHECK(!wrong, "%u of %d batches ended with a wrong result", wrong,
	      (total + (int)batch - 1) / (int)batch);
	CHECK(slab0 > 0 && avail0 > 0, "no memory figures after the warm-up");
	/*
	 * Under KASAN freed objects wait in its quarantine (up to 1/32 of
	 * memory) before slab gets them back.  meminfo_kib() drains it (each
	 * cache's shrink), but the figures of a short run still swing by a
	 * few percent with what is in flight at that moment: under KASAN
	 * only a long run (SOAK_LONG migrations after the warm-up, as `make
	 * soak` does) is bounded; a short one prints, and kmemleak is the
	 * leak check.
	 */
	if (kasan_on() && n - warm < SOAK_LONG) {
		printf("    # soak: KASAN on, %d migrations after the warm-up: memory figures printed, bounded from %d\n",
		       n - warm, SOAK_LONG);
		return 0;
	}
	CHECK(pct(slab0, slab1) <= 2.0 && pct(avail0, avail1) >= -2.0,
	      "memory grew over the soak: Slab %+.2f %%, MemAvailable %+.2f %%",
	      pct(slab0, slab1), pct(avail0, avail1));
	return 0;
}
