// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: DMA logging: START's refusals, REPORTs, STOP, a huge span, logging
 * across a close and a reset, and pages a device really wrote (plug-in).
 */
#include "migtest.h"

/* ---- DMA logging --------------------------------------------------------- */

int log_feature(int fd, uint32_t op, void *data, size_t len)
{
	uint8_t buf[sizeof(struct vfio_device_feature) + 64] __attribute__((aligned(8)));
	struct vfio_device_feature *f = (void *)buf;

	memset(buf, 0, sizeof(buf));
	f->argsz = sizeof(*f) + len;
	f->flags = op;
	if (len)
		memcpy(f->data, data, len);
	if (ioctl(fd, VFIO_DEVICE_FEATURE, f))
		return -errno;
	if (len)
		memcpy(data, f->data, len);
	return 0;
}

/* START with @n ranges of @r at @page: 0 or -errno; *@page the size it took. */
static int log_start(int fd, struct vfio_device_feature_dma_logging_range *r, uint32_t n,
		     uint64_t *page)
{
	struct vfio_device_feature_dma_logging_control c = {
		.page_size = *page, .num_ranges = n, .ranges = (uintptr_t)r };
	int ret = log_feature(fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_START,
			      &c, sizeof(c));

	if (!ret)
		*page = c.page_size;
	return ret;
}

static int log_stop(int fd)
{
	return log_feature(fd, VFIO_DEVICE_FEATURE_SET | VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP,
			   NULL, 0);
}

static int log_report(int fd, uint64_t iova, uint64_t len, uint64_t page, void *bitmap)
{
	struct vfio_device_feature_dma_logging_report r = {
		.iova = iova, .length = len, .page_size = page, .bitmap = (uintptr_t)bitmap };

	return log_feature(fd, VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT,
			   &r, sizeof(r));
}

#define LOG_IOVA	0x100000ULL	/* 1 MiB */
#define LOG_LEN		(16ULL << 20)

static uint64_t log_page = 4096;
static uint64_t log_bitmap[LOG_LEN / 4096 / 64];
static bool log_offered;

/* START's refusals the uAPI names: no ranges, overlapping, unaligned. */
static int t_log_start_refused(void)
{
	struct vfio_device_feature_dma_logging_range r[2] = {
		{ .iova = LOG_IOVA, .length = LOG_LEN },
		{ .iova = LOG_IOVA + 4096, .length = 4096 } };
	uint64_t page = 4096;
	int ret;

	if (dev_reopen(&src))
		return -1;
	ret = log_start(src.fd, r, 0, &page);
	if (ret != -EINVAL)
		return failed("START with no range: %s, not EINVAL", ret ? strerror(-ret) : "taken");
	ret = log_start(src.fd, r, 2, &page);
	if (ret != -EINVAL)
		return failed("START with overlapping ranges: %s, not EINVAL",
			      ret ? strerror(-ret) : "taken");
	r[0].iova = LOG_IOVA + 1;
	ret = log_start(src.fd, r, 1, &page);
	if (ret != -EINVAL)
		return failed("START at an IOVA not aligned to the page: %s, not EINVAL",
			      ret ? strerror(-ret) : "taken");
	return 0;
}

/* START of one range, and a second START refused while it runs. */
static int t_log_start(void)
{
	struct vfio_device_feature_dma_logging_range r = { .iova = LOG_IOVA, .length = LOG_LEN };
	uint64_t page = 4096;
	int ret;

	if (dev_reopen(&src))
		return -1;
	ret = log_start(src.fd, &r, 1, &log_page);
	if (ret)
		return failed("START of [0x%llx, +16 MiB) at 4 KiB: %s",
			      (unsigned long long)LOG_IOVA, strerror(-ret));
	if (log_page < 4096 || (log_page & (log_page - 1)) || log_page > LOG_LEN / 64)
		return failed("START answered page size %llu", (unsigned long long)log_page);
	ret = log_start(src.fd, &r, 1, &page);
	if (!ret)
		return failed("a second START was taken while logging ran");
	return 0;
}

/* REPORTs: the range, a part of it, outside it; a bad page size; EFAULT. */
static int t_log_reports(void)
{
	void *none;
	int ret;

	memset(log_bitmap, 0, sizeof(log_bitmap));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, log_page, log_bitmap);
	if (ret)
		return failed("REPORT of the whole range: %s", strerror(-ret));
	ret = log_report(src.fd, LOG_IOVA + (4ULL << 20), 1ULL << 20, log_page, log_bitmap);
	if (ret)
		return failed("REPORT of a part of the range: %s", strerror(-ret));
	memset(log_bitmap, 0, sizeof(log_bitmap));
	ret = log_report(src.fd, 1ULL << 30, 1ULL << 20, log_page, log_bitmap);
	if (!ret) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(log_bitmap); i++)
			if (log_bitmap[i])
				return failed("REPORT outside every range set bits");
	}
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, 1000, log_bitmap);
	if (ret != -EINVAL)
		return failed("REPORT at page size 1000: %s, not EINVAL",
			      ret ? strerror(-ret) : "answered");
	none = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED)
		return failed("mmap: %s", strerror(errno));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, log_page, none);
	munmap(none, 1 << 16);
	/*
	 * The core pins the bitmap only to set bits in it (iova_bitmap): with
	 * nothing dirty, an unmapped one is never touched.  Any error but
	 * EFAULT is wrong.
	 */
	if (!ret)
		diag("REPORT into an unmapped bitmap answered: nothing was dirty to set in it");
	else if (ret != -EFAULT)
		return failed("REPORT into an unmapped bitmap: %s, not EFAULT", strerror(-ret));
	return 0;
}

/* STOP, and no REPORT after it. */
static int t_log_stop(void)
{
	int ret = log_stop(src.fd);

	if (ret)
		return failed("STOP: %s", strerror(-ret));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, log_page, log_bitmap);
	if (!ret)
		return failed("a REPORT answered after STOP");
	return 0;
}

/*
 * A report over a huge tracked span (1 TiB) is bounded in time (it costs
 * what was tracked, not the span: 120 s allowed under emulation) and
 * killable (a SIGKILL ends it within 10 s).
 */
static int log_huge_child(bool wait_kill)
{
	struct vfio_device_feature_dma_logging_range r = { .iova = 0, .length = 1ULL << 40 };
	uint64_t page = 4096;
	void *bm;
	int ret;

	if (dev_reopen(&src))
		_exit(3);
	ret = log_start(src.fd, &r, 1, &page);
	if (ret)
		_exit(ret == -ENOMEM || ret == -E2BIG || ret == -EINVAL ? 4 : 3);
	bm = mmap(NULL, (1ULL << 40) / page / 8, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bm == MAP_FAILED)
		_exit(3);
	if (wait_kill)
		kill(getppid(), SIGUSR1);
	ret = log_report(src.fd, 0, 1ULL << 40, page, bm);
	_exit(ret ? 5 : 0);
}

static sig_atomic_t huge_started;

static void on_usr1(int sig)
{
	(void)sig;
	__atomic_store_n(&huge_started, 1, __ATOMIC_RELAXED);
}

static int t_log_huge(void)
{
	uint64_t t0;
	pid_t pid;
	int st, i;

	/* the children open the device: a device may take one opener at a time */
	close(src.fd);
	src.fd = -1;
	fflush(stdout);
	pid = fork();
	if (!pid)
		log_huge_child(false);
	t0 = 0;
	for (i = 0; i < 1200 && waitpid(pid, &st, WNOHANG) != pid; i++, t0++)
		usleep(100000);
	if (i == 1200) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return failed("a REPORT over a 1 TiB tracked span took over 120 s");
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 4)
		return skip("the device does not track a 1 TiB range");
	if (!WIFEXITED(st) || (WEXITSTATUS(st) && WEXITSTATUS(st) != 5))
		return failed("the huge-span child ended %d", st);
	diag("a REPORT over a 1 TiB tracked span took %.1f s", t0 / 10.0);
	/* killable: the same report, SIGKILL a moment after it began */
	signal(SIGUSR1, on_usr1);
	huge_started = 0;
	pid = fork();
	if (!pid)
		log_huge_child(true);
	for (i = 0; i < 300 && !__atomic_load_n(&huge_started, __ATOMIC_RELAXED); i++)
		usleep(100000);
	usleep(200000);
	kill(pid, SIGKILL);
	for (i = 0; i < 100 && waitpid(pid, &st, WNOHANG) != pid; i++)
		usleep(100000);
	if (i == 100)
		return failed("a REPORT over a 1 TiB span did not end within 10 s of SIGKILL");
	return dev_reopen(&src);
}

void t_dma_logging(void)
{
	static const char *const names[NR_LOG_CASES] = {
		"dma_logging_offered", "dma_log_start_refusals", "dma_log_start",
		"dma_log_reports", "dma_log_stop", "dma_log_huge_span",
		"dma_log_closed_while_logging", "dma_log_reset_while_logging",
		"dma_log_after_reopen",
	};
	struct vfio_device_feature_dma_logging_range r = { .iova = LOG_IOVA, .length = LOG_LEN };
	uint64_t page = 4096;
	unsigned int i;
	int ret;

	ret = dev_reopen(&src) ?: log_feature(src.fd, VFIO_DEVICE_FEATURE_PROBE |
					     VFIO_DEVICE_FEATURE_SET |
					     VFIO_DEVICE_FEATURE_DMA_LOGGING_START, NULL, 0);
	log_offered = !ret;
	if (!log_offered) {
		for (i = 0; i < NR_LOG_CASES; i++)
			report(names[i], skip("the device offers no DMA logging (%s)",
					      strerror(-ret)));
		return;
	}
	report(names[0], 0);
	report(names[1], t_log_start_refused());
	ret = t_log_start();
	report(names[2], ret);
	report(names[3], ret ? skip("START failed") : t_log_reports());
	report(names[4], ret ? skip("START failed") : t_log_stop());
	report(names[5], t_log_huge());
	/* logging ends with the device's close and with its reset */
	if (dev_reopen(&src) || log_start(src.fd, &r, 1, &page)) {
		report(names[6], failed("START: %s", strerror(errno)));
	} else {
		ret = dev_reopen_raw(&src) ?: log_report(src.fd, LOG_IOVA, LOG_LEN, page,
							 log_bitmap);
		report(names[6], ret ? 0 : failed("a REPORT answered after a close while logging"));
	}
	page = 4096;
	if (!src.can_reset) {
		report(names[7], skip("the device does not offer VFIO_DEVICE_RESET"));
	} else if (dev_reopen(&src) || log_start(src.fd, &r, 1, &page)) {
		report(names[7], failed("START: %s", strerror(errno)));
	} else {
		ioctl(src.fd, VFIO_DEVICE_RESET);
		ret = log_start(src.fd, &r, 1, &page);
		report(names[7], ret == 0 || ret == -EBUSY ? 0 :
		       failed("START after a reset while logging: %s", strerror(-ret)));
		log_stop(src.fd);
	}
	page = 4096;
	ret = dev_reopen(&src) ?: log_start(src.fd, &r, 1, &page);
	report(names[8], ret ? failed("START on a device opened again: %s", strerror(-ret)) : 0);
	log_stop(src.fd);
}

/*
 * DMA logging reports the pages the device really wrote: the plug-in's
 * device writes guest pages of the logged range (mapped for it), and a
 * REPORT has each of them; a REPORT into an unmapped bitmap, with bits to
 * set, fails with EFAULT.
 */
int t_plug_dirty(void)
{
	struct vfio_device_feature_dma_logging_range r = { .iova = LOG_IOVA, .length = LOG_LEN };
	uint64_t page = 4096, at[4];
	uint8_t *mem;
	void *none = MAP_FAILED;
	unsigned int k, set = 0;
	size_t i;
	int ret;

	if (!log_offered)
		return skip("the device offers no DMA logging");
	if (!plug || !plug->dirty)
		return NO_PLUG("make the device write guest memory");
	mem = mmap(NULL, LOG_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return failed("mmap: %s", strerror(errno));
	ret = dev_reopen(&src) ?: dma_map(&src, LOG_IOVA, mem, LOG_LEN);
	if (ret) {
		munmap(mem, LOG_LEN);
		return failed("mapping the logged range: %s", strerror(-ret));
	}
	if (plug_attach(&src)) {
		ret = -1;
		goto out;
	}
	ret = log_start(src.fd, &r, 1, &page);
	if (ret) {
		ret = failed("START: %s", strerror(-ret));
		goto out;
	}
	log_report(src.fd, LOG_IOVA, LOG_LEN, page, log_bitmap);	/* clears */
	at[0] = LOG_IOVA + 5 * page;
	at[1] = at[0] + page;
	at[2] = at[0] + 2 * page;
	at[3] = LOG_IOVA + LOG_LEN - page;
	ret = plug->dirty(src.plugged, at[0], 3 * page);
	if (!ret)
		ret = plug->dirty(src.plugged, at[3], page);
	if (ret) {
		ret = plug_err("write guest memory", ret);
		goto stop;
	}
	memset(log_bitmap, 0, sizeof(log_bitmap));
	ret = log_report(src.fd, LOG_IOVA, LOG_LEN, page, log_bitmap);
	if (ret) {
		ret = failed("REPORT: %s", strerror(-ret));
		goto stop;
	}
	for (k = 0; k < ARRAY_SIZE(at); k++) {
		i = (at[k] - LOG_IOVA) / page;
		if (!(log_bitmap[i / 64] & (1ULL << (i % 64)))) {
			ret = failed("the page at 0x%llx, written by the device, is not reported",
				     (unsigned long long)at[k]);
			goto stop;
		}
	}
	for (i = 0; i < LOG_LEN / page; i++)
		set += !!(log_bitmap[i / 64] & (1ULL << (i % 64)));
	diag("the device wrote 4 pages, the REPORT has %u", set);
	ret = plug->dirty(src.plugged, at[1], page);
	if (ret) {
		ret = plug_err("write guest memory", ret);
		goto stop;
	}
	none = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ret = none == MAP_FAILED ? -ENOMEM : log_report(src.fd, LOG_IOVA, LOG_LEN, page, none);
	if (ret && ret != -EFAULT) {
		ret = failed("REPORT of a dirty page into an unmapped bitmap: %s, not EFAULT",
			     strerror(-ret));
		goto stop;
	}
	/*
	 * Answered: the VFIO core's iova_bitmap_set() (7.3) drops a bit it
	 * cannot pin the user's page for, and the driver cannot tell.  Not
	 * the device's failure; said, with whether the page is still dirty.
	 */
	if (!ret) {
		memset(log_bitmap, 0, sizeof(log_bitmap));
		ret = log_report(src.fd, LOG_IOVA, LOG_LEN, page, log_bitmap);
		if (ret) {
			ret = failed("REPORT: %s", strerror(-ret));
			goto stop;
		}
		i = (at[1] - LOG_IOVA) / page;
		diag("warning: a REPORT of a dirty page into an unmapped bitmap answered, not EFAULT; the page is %s",
		     log_bitmap[i / 64] & (1ULL << (i % 64)) ? "reported again next" :
		     "lost to the next REPORT (the kernel's iova_bitmap drops bits it cannot set)");
	}
	ret = 0;
stop:
	log_stop(src.fd);
out:
	if (none != MAP_FAILED)
		munmap(none, 1 << 16);
	plug_detach(&src);
	dma_unmap(&src, LOG_IOVA, LOG_LEN);
	munmap(mem, LOG_LEN);
	return ret;
}
