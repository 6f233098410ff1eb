// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: the VRAM aperture of a PCI function (BAR2), mapped as a
 * VMM maps it into its guest.  Guest CPU writes through it during
 * pre-copy must be seen by the device's dirty tracking, counted by
 * PRECOPY_INFO, and arrive on the destination byte for byte.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <linux/gpumig_stream.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

#define AP_LEN (8u << 20)		/* the first 128 blocks */
#define AP_BLK GPUMIG_VRAM_CHUNK
#define AP_ALIGN (2u << 20)

/* The first @len bytes of the aperture, or NULL (errno ENODEV: none). */
uint8_t *aperture_map(struct gpu *g, size_t len)
{
	struct vfio_region_info ri = { .argsz = sizeof(ri),
				       .index = VFIO_PCI_BAR2_REGION_INDEX };
	uint8_t *r, *at;
	void *p;

	if (ioctl(g->fd, VFIO_DEVICE_GET_REGION_INFO, &ri) ||
	    !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP) || ri.size < len || g->vram < len) {
		errno = ENODEV;
		return NULL;
	}
	/* at a 2 MiB boundary, as QEMU maps a BAR (huge mappings can serve it) */
	r = mmap(NULL, len + AP_ALIGN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)r + AP_ALIGN - 1) & ~(uintptr_t)(AP_ALIGN - 1));
	if (at > r)
		munmap(r, at - r);
	munmap(at + len, r + len + AP_ALIGN - (at + len));
	p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, g->fd, ri.offset);
	if (p == MAP_FAILED) {
		munmap(at, len);
		return NULL;
	}
	return p;
}

/*
 * One read maps the whole 2 MiB window around it (a huge page where the
 * kernel has them), not one page: QEMU's type1 DMA mapping of the
 * aperture faults in all of it, on the destination inside the downtime.
 * The process's page faults say how many reads of the window faulted
 * (pagemap cannot: it skips VM_PFNMAP mappings).  The first touch is in
 * the window's middle: on Debian's kernel (transparent huge pages) the
 * fault maps the window as one huge page, on the debug kernel (none) as
 * its 512 pages.
 */
static int ap_window(const uint8_t *a)
{
	const size_t win = AP_ALIGN, pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t w = (uintptr_t)a + win;	/* the second window: aperture_map() aligned it */
	struct rusage r0, r1;
	long faults;
	size_t i;

	CHECK(getrusage(RUSAGE_SELF, &r0) == 0, "getrusage: %s", strerror(errno));
	for (i = 0; i < win; i += pg)
		(void)__atomic_load_n((const uint8_t *)(w + (i + win / 2) % win), __ATOMIC_RELAXED);
	CHECK(getrusage(RUSAGE_SELF, &r1) == 0, "getrusage: %s", strerror(errno));
	faults = (r1.ru_minflt - r0.ru_minflt) + (r1.ru_majflt - r0.ru_majflt);
	CHECK(faults <= 8, "the %zu pages of a 2 MiB aperture window: %ld faults",
	      win / pg, faults);
	printf("    # aperture: a 2 MiB window of %zu pages read with %ld page faults\n",
	       win / pg, faults);
	return 0;
}

static int ap_migrate(struct gpu *src, uint8_t *a, const uint8_t *pat)
{
	struct vfio_precopy_info info;
	struct blob pre = { 0 }, stop = { 0 };
	unsigned long long dirty;
	struct gpu dst;
	uint8_t *b;
	int fd = -1, ret;

	/* Before the migration: blocks 0-2 through the aperture. */
	memcpy(a, pat, 3 * AP_BLK);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	ret = mig_read(fd, &pre);
	CHECK(ret == -ENOMSG, "first pass ended with %d, not ENOMSG", ret);
	CHECK(mig_precopy_info(fd, &info) == 0 && !info.initial_bytes && !info.dirty_bytes,
	      "after the first pass: initial %llu, dirty %llu",
	      (unsigned long long)info.initial_bytes, (unsigned long long)info.dirty_bytes);
	/* The guest's CPU rewrites block 1 and writes block 40 and 41. */
	memcpy(a + AP_BLK + 123, pat + 5 * AP_BLK, 1000);
	memcpy(a + 40 * AP_BLK, pat + 40 * AP_BLK, 2 * AP_BLK);
	CHECK(mig_precopy_info(fd, &info) == 0, "PRECOPY_INFO: %s", strerror(errno));
	dirty = info.dirty_bytes;
	CHECK(dirty >= 3 * AP_BLK && dirty < 8 * AP_BLK,
	      "three blocks written through the aperture, dirty_bytes %llu", dirty);
	ret = mig_read(fd, &pre);
	CHECK(ret == -ENOMSG, "second pass ended with %d", ret);
	CHECK(mig_precopy_info(fd, &info) == 0 && !info.dirty_bytes,
	      "dirty_bytes %llu after the second pass", (unsigned long long)info.dirty_bytes);
	/* One more write just before the stop: stop-copy carries it. */
	a[100 * AP_BLK + 7] = 0x5a;
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP_COPY, NULL) == 0, "STOP_COPY");
	ret = mig_read(fd, &stop);
	CHECK(ret == 0, "stop-copy read: %d", ret);
	CHECK(stop.len < 3 * AP_BLK, "stop-copy sent %zu bytes: more than the one block", stop.len);
	CHECK(mig_set(src, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP");
	data_fd_close(fd);

	CHECK(gpu_open(&dst, dst_name) == 0, "open destination");
	TRY(migrate_into(&dst, src, src->mem, &pre, &stop));
	b = aperture_map(&dst, AP_LEN);
	CHECK(b, "map the destination's aperture: %s", strerror(errno));
	ret = memcmp(a, b, AP_LEN);
	munmap(b, AP_LEN);
	free(pre.p);
	free(stop.p);
	CHECK(ret == 0, "the destination's VRAM differs from the source's");
	printf("    # aperture: %llu dirty bytes from 3 CPU-written blocks; %zu stop-copy bytes\n",
	       dirty, stop.len);
	return 0;
}

int t_aperture(struct gpu *src)
{
	uint8_t *a = aperture_map(src, AP_LEN), *pat;
	int ret;

	if (!a) {
		snprintf(fail_msg, sizeof(fail_msg), "no mappable VRAM aperture (%s)",
			 strerror(errno));
		return SKIP;
	}
	pat = malloc(AP_LEN);
	if (pat) {
		fill_random(pat, AP_LEN);
		ret = ap_window(a);
		if (!ret)
			ret = ap_migrate(src, a, pat);
	} else {
		ret = fail("out of memory");
	}
	free(pat);
	munmap(a, AP_LEN);
	return ret;
}
