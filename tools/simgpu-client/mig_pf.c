// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: a VF's PF reset, or its driver unbound, in the middle of
 * a pre-copy: the migration ends and says why, the VF's user hears, and
 * the VF works again after a reset (or is gone with its PF).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

/* Write @val to sysfs @path: 0 or -errno. */
int sysfs_write(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -errno : 0;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

/* @vf's PF's address (in @pf, @len bytes), or NULL when @vf is not a VF. */
const char *pf_of(const char *vf, char *pf, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/physfn", dev_sysdir(vf));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return NULL;
	link[n] = 0;
	snprintf(pf, len, "%s", strrchr(link, '/') + 1);
	return pf;
}

/* Interrupts the PF @pf took so far (its line in /proc/interrupts), or -1. */
static long long pf_irqs(const char *pf)
{
	char line[1024];
	long long sum = -1;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		if (!p || !strstr(line, pf) || !strstr(line, "simgpu-pf"))
			continue;
		for (sum = 0, p++;;) {
			char *e;
			long long v = strtoll(p, &e, 10);

			if (e == p)
				break;
			sum += v;
			p = e;
		}
		break;
	}
	fclose(f);
	return sum;
}

/*
 * The VF's PF is reset (a function-level reset, as an operator's
 * .../reset or an error recovery does) in the middle of a pre-copy: the
 * VF's GPU state and VRAM go with it, and every party hears so.  The data
 * file's reads fail, the migration state reads ERROR and refuses every
 * arc until a device reset, last_error says why, and the VF itself tells
 * its user DEVICE_LOST.  After VFIO_DEVICE_RESET the VF works and migrates
 * again, its PF's commands completing by interrupt (the PF driver set its
 * interrupt mask again after the reset).
 */
int t_pf_reset(struct gpu *g)
{
	char pf[64], path[PATH_MAX], why[512] = "";
	long long irqs;
	struct blob b = { 0 };
	uint8_t first[64];
	uint32_t st = 0;
	int fd = -1, ret;

	if (!pf_of(g->name, pf, sizeof(pf))) {
		snprintf(fail_msg, sizeof(fail_msg), "%s is not a VF", g->name);
		return SKIP;
	}
	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 1 << 20, 0x5eed, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "a FILL of VRAM");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(read(fd, first, sizeof(first)) == sizeof(first), "first pre-copy bytes");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", pf);
	CHECK(sysfs_write(path, "1") == 0, "resetting the PF %s: %s", pf, strerror(errno));

	ret = mig_read(fd, &b);
	free(b.p);
	CHECK(ret == -EIO, "pre-copy read after the PF's reset: %d, not -EIO", ret);
	CHECK(mig_get(g, &st) == 0 && st == VFIO_DEVICE_STATE_ERROR,
	      "the migration state after the PF's reset is %u, not ERROR", st);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) < 0,
	      "RUNNING accepted in ERROR, before a device reset");
	read_attr(g->name, "migration/last_error", why, sizeof(why));
	CHECK(strstr(why, "its PF was reset"), "last_error does not say why: %s", why);
	CHECK(rd(g, SIMGPU_REG_ERROR_CODE) == SIMGPU_ERR_DEVICE_LOST &&
	      rd(g, SIMGPU_REG_ERROR_QUEUE) == SIMGPU_QUEUE_DEVICE,
	      "the VF's error registers say %u on 0x%x, not DEVICE_LOST on the device",
	      rd(g, SIMGPU_REG_ERROR_CODE), rd(g, SIMGPU_REG_ERROR_QUEUE));
	CHECK(rd(g, SIMGPU_REG_STATUS) & SIMGPU_STATUS_ERROR, "STATUS shows no error");
	data_fd_close(fd);
	printf("    # pf_reset: after the PF's reset: %s", why);

	CHECK(gpu_reset(g) == 0, "VFIO_DEVICE_RESET: %s", strerror(errno));
	CHECK(mig_get(g, &st) == 0 && st == VFIO_DEVICE_STATE_RUNNING,
	      "the migration state after a device reset is %u, not RUNNING", st);
	CHECK(rd(g, SIMGPU_REG_ERROR_CODE) == 0, "the device reset left error %u",
	      rd(g, SIMGPU_REG_ERROR_CODE));
	gpu_setup(g, 16);
	gpu_map_range(g, VA_VRAM, 0, 1 << 20, SIMGPU_PTE_VRAM | SIMGPU_PTE_WRITE);
	gpu_submit(g, 0, SIMGPU_OP_FILL, 0, VA_VRAM, 4096, 0x77, 0);
	CHECK(gpu_wait_idle(g, 0, TMO) == 0, "work after the reset");
	irqs = pf_irqs(pf);
	CHECK(irqs >= 0, "no interrupt line of %s in /proc/interrupts", pf);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_STOP, NULL) == 0, "STOP after the reset");
	CHECK(pf_irqs(pf) > irqs,
	      "the PF's commands of a STOP completed without an interrupt (its mask was not restored)");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "RUNNING");
	return 0;
}

/*
 * The PF's driver is unbound in the middle of pre-copy (which cannot be
 * refused): the migration ends with ENODEV and says why, the VF's user is
 * asked to let go, and once it has, the VF is gone and nothing crashed.
 */
int t_pf_gone(struct gpu *g)
{
	struct pollfd p = { .fd = g->req_efd, .events = POLLIN };
	char link[PATH_MAX], path[PATH_MAX], status[512];
	struct blob b = { 0 };
	uint8_t first[64];
	const char *pf;
	ssize_t n;
	pid_t pid;
	int fd = -1, st, ret;

	snprintf(path, sizeof(path), "%s/physfn", dev_sysdir(g->name));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		snprintf(fail_msg, sizeof(fail_msg), "%s is not a VF", g->name);
		return SKIP;
	}
	link[n] = 0;
	pf = strrchr(link, '/') + 1;
	gpu_setup(g, 16);
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, &fd) == 0, "PRE_COPY");
	CHECK(read(fd, first, sizeof(first)) == sizeof(first), "first pre-copy bytes");
	pid = fork();
	if (pid == 0) {
		/* The child holds nothing of the device's. */
		data_fds_close();
		gpu_close(g);
		_exit(sysfs_write("/sys/bus/pci/drivers/simgpu-pf/unbind", pf) ? 1 : 0);
	}
	CHECK(pid > 0, "fork");
	CHECK(poll(&p, 1, TMO) == 1, "the VF's user was not asked to let go");
	ret = mig_read(fd, &b);
	free(b.p);
	CHECK(ret == -ENODEV, "pre-copy read after the PF went away: %d, not -ENODEV", ret);
	/* The VF's attributes may be gone already: it is being removed. */
	if (mig_text(g->name, "last_error", status, sizeof(status)) == 0) {
		CHECK(strstr(status, "migration aborted: the PF's driver was removed"),
		      "last_error does not say why: %s", status);
		printf("    # pf_gone: %s\n", status);
	}
	CHECK(mig_set(g, VFIO_DEVICE_STATE_RUNNING, NULL) == 0, "cancel back to RUNNING");
	CHECK(mig_set(g, VFIO_DEVICE_STATE_PRE_COPY, NULL) == -ENODEV,
	      "a new migration without the PF did not fail with ENODEV");
	data_fd_close(fd);
	snprintf(path, sizeof(path), "%s", g->name);
	gpu_close(g);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "unbinding the PF's driver failed");
	CHECK(!dev_sysdir(path), "the VF is still there after its PF's driver went away");
	return 0;
}
