// SPDX-License-Identifier: GPL-2.0
/*
 * gpumigctl: the operator's view of gpumig devices (simgpu mdev instances
 * and functions bound to gpumig-vfio-pci), from sysfs; VFIO probing of
 * other functions; and the Nova [pci] configuration those devices call
 * for.  See gpumigctl.8.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/vfio.h>

#include "compat.h"

#define MDEV_DIR "/sys/bus/mdev/devices"
#define PCI_DIR "/sys/bus/pci/devices"
#define GPUMIG_PCI_DRIVER "gpumig-vfio-pci"

static bool json;

static void print_help(FILE *f)
{
	fputs("usage: gpumigctl [--json] COMMAND [ARGS]\n"
	      "       gpumigctl --version\n"
	      "\n"
	      "  list                  gpumig devices: mdev instances and functions bound to\n"
	      "                        gpumig-vfio-pci, with their migration status\n"
	      "  status DEVICE         one device's migration status and descriptor\n"
	      "  unquarantine DEVICE   lift a quarantine (the device is scrubbed first)\n"
	      "  probe ADDRESS         open a free PCI function through VFIO and say\n"
	      "                        whether its driver offers VFIO migration\n"
	      "  nova-config [--probe] [--modules-alias FILE]\n"
	      "                        the Nova [pci] device_spec and alias entries for\n"
	      "                        the functions bound to VFIO drivers on this host;\n"
	      "                        \"managed\": \"no\" for a migratable VF that libvirt's\n"
	      "                        managed='yes' would not keep on its driver (FILE:\n"
	      "                        the modules.alias libvirt reads, by default\n"
	      "                        /lib/modules/$(uname -r)/modules.alias)\n"
	      "  watch DEVICE [--interval MS] [--count N] [--link MBIT] [--domain DOM]\n"
	      "                        sample the device's migration metrics: state,\n"
	      "                        remaining bytes, dirty rate, stop-copy estimate,\n"
	      "                        how long the rest takes at the link's speed;\n"
	      "                        auto-converge's drain and re-dirty rates,\n"
	      "                        throttle and verdict, the time left and the\n"
	      "                        downtime to expect at the measured rates; with\n"
	      "                        --domain, libvirt's job figures for RAM beside,\n"
	      "                        and the time left and downtime of RAM and the\n"
	      "                        device together at the job's bandwidth\n"
	      "  check-compat SRC DST  may DST accept SRC's migration stream?  Each is a\n"
	      "                        device or a descriptor line as migration/compat\n"
	      "                        prints it; the kernel's own rule decides, and\n"
	      "                        the stream versions: for a destination of an\n"
	      "                        older release, the source's stream_max to set\n"
	      "\n"
	      "DEVICE is an mdev UUID or a PCI address (0000:01:00.1).\n", f);
}

/* Read a sysfs attribute into @buf without its newline: 0 or -1. */
static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int dev_attr(const char *dir, const char *name, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, attr);
	return read_file(path, buf, len);
}

/* The link's last component (a driver's or a group's name), or "". */
static void link_name(const char *path, char *buf, size_t len)
{
	char link[PATH_MAX];
	ssize_t n = readlink(path, link, sizeof(link) - 1);

	buf[0] = 0;
	if (n > 0) {
		link[n] = 0;
		snprintf(buf, len, "%s", strrchr(link, '/') + 1);
	}
}

static void pci_driver(const char *addr, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/driver", PCI_DIR, addr);
	link_name(path, buf, len);
}

static const char mdev_dir[] = MDEV_DIR, pci_dir[] = PCI_DIR;

/* Where DEVICE lives: mdev_dir or pci_dir, or NULL. */
static const char *dev_dir(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", MDEV_DIR, name);
	if (!access(path, F_OK))
		return mdev_dir;
	snprintf(path, sizeof(path), "%s/%s", PCI_DIR, name);
	if (!access(path, F_OK))
		return pci_dir;
	return NULL;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* One device: name, kind, status, compat. */
static int show(const char *name, bool first)
{
	const char *dir = dev_dir(name);
	char status[1024] = "", compat[512] = "", drv[64] = "";

	if (!dir || dev_attr(dir, name, "migration/status", status, sizeof(status))) {
		fprintf(stderr, "gpumigctl: %s: not a gpumig device\n", name);
		return -1;
	}
	dev_attr(dir, name, "migration/compat", compat, sizeof(compat));
	if (dir == pci_dir)
		pci_driver(name, drv, sizeof(drv));
	else
		snprintf(drv, sizeof(drv), "simgpu (mdev)");
	if (json) {
		printf("%s{\"device\": ", first ? "" : ", ");
		json_str(name);
		printf(", \"driver\": ");
		json_str(drv);
		printf(", \"status\": ");
		json_str(status);
		printf(", \"compat\": ");
		json_str(compat);
		printf("}");
	} else {
		printf("%s  %s\n  status: %s\n", name, drv, status);
		if (compat[0])
			printf("  compat: %s\n", compat);
	}
	return 0;
}

static int cmd_list(void)
{
	static const char * const dirs[] = { MDEV_DIR, PCI_DIR };
	bool first = true;
	unsigned int i;

	if (json)
		printf("[");
	for (i = 0; i < 2; i++) {
		struct dirent **ents;
		int n, j;

		n = scandir(dirs[i], &ents, NULL, alphasort);
		for (j = 0; j < n; j++) {
			char st[16];

			if (ents[j]->d_name[0] != '.' &&
			    !dev_attr(dirs[i], ents[j]->d_name, "migration/status", st,
				      sizeof(st)) &&
			    !show(ents[j]->d_name, first))
				first = false;
			free(ents[j]);
		}
		if (n >= 0)
			free(ents);
	}
	if (json)
		printf("]\n");
	return 0;
}

static int cmd_unquarantine(const char *name)
{
	const char *dir = dev_dir(name);
	char path[PATH_MAX];
	int fd, ret;

	if (!dir) {
		fprintf(stderr, "gpumigctl: %s: no such device\n", name);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s/migration/unquarantine", dir, name);
	fd = open(path, O_WRONLY);
	ret = fd < 0 ? -1 : (write(fd, "1", 1) == 1 ? 0 : -1);
	if (ret)
		fprintf(stderr, "gpumigctl: %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret ? 1 : 0;
}

/*
 * Open a PCI function through its VFIO group (type1) and ask for the
 * migration feature.  1 when offered, 0 when not, -1 when it cannot be
 * asked (in use, not VFIO, no IOMMU group); @flags gets the migration
 * flags.  Opening resets the function, as any VMM's open would.
 */
static int vfio_probe(const char *addr, unsigned long long *flags, char *why, size_t len)
{
	struct {
		struct vfio_device_feature f;
		struct vfio_device_feature_migration m;
	} feat = { .f = { .argsz = sizeof(feat),
			  .flags = VFIO_DEVICE_FEATURE_GET | VFIO_DEVICE_FEATURE_MIGRATION } };
	struct vfio_group_status gs = { .argsz = sizeof(gs) };
	char path[128], group[64];
	int container = -1, grp = -1, dev = -1, ret = -1;

	{
		char sys[PATH_MAX];

		snprintf(sys, sizeof(sys), "%s/%s/iommu_group", PCI_DIR, addr);
		link_name(sys, group, sizeof(group));
	}
	if (!group[0]) {
		snprintf(why, len, "no IOMMU group");
		return -1;
	}
	snprintf(path, sizeof(path), "/dev/vfio/%s", group);
	container = open("/dev/vfio/vfio", O_RDWR);
	grp = open(path, O_RDWR);
	if (container < 0 || grp < 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (ioctl(grp, VFIO_GROUP_GET_STATUS, &gs) || !(gs.flags & VFIO_GROUP_FLAGS_VIABLE) ||
	    ioctl(grp, VFIO_GROUP_SET_CONTAINER, &container) ||
	    ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
		snprintf(why, len, "group %s not usable: %s", group, strerror(errno));
		goto out;
	}
	dev = ioctl(grp, VFIO_GROUP_GET_DEVICE_FD, addr);
	if (dev < 0) {
		snprintf(why, len, "open: %s", strerror(errno));
		goto out;
	}
	if (ioctl(dev, VFIO_DEVICE_FEATURE, &feat)) {
		ret = 0;
		*flags = 0;
		snprintf(why, len, "no VFIO migration (%s)", strerror(errno));
	} else {
		ret = 1;
		*flags = feat.m.flags;
		snprintf(why, len, "VFIO migration, flags 0x%llx", *flags);
	}
out:
	if (dev >= 0)
		close(dev);
	if (grp >= 0)
		close(grp);
	if (container >= 0)
		close(container);
	return ret;
}

static int cmd_probe(const char *addr)
{
	unsigned long long flags = 0;
	char why[256];
	int ret = vfio_probe(addr, &flags, why, sizeof(why));

	if (json) {
		printf("{\"device\": ");
		json_str(addr);
		printf(", \"migration\": %s, \"flags\": %llu, \"detail\": ",
		       ret > 0 ? "true" : ret == 0 ? "false" : "null", flags);
		json_str(why);
		printf("}\n");
	} else {
		printf("%s: %s\n", addr, why);
	}
	return ret < 0 ? 2 : !ret;
}

/* ---- nova-config ------------------------------------------------------ */

struct fn {
	char addr[256], drv[64], vendor[16], product[16], type[16], rc[96], name[96];
	bool migratable, unmanaged;
	char note[1200];
};

/*
 * The module libvirt would bind to @addr for <hostdev managed='yes'>:
 * libvirt (10.0 and later) takes the "alias vfio_pci:PATTERN MODULE" line
 * of the kernel's modules.alias that matches the function's modalias with
 * the fewest wildcards, the first of equals (virPCIDeviceFindBestVFIOVariant),
 * and plain vfio-pci when none does.  @best gets the module ("" for
 * none).  Returns 0, or -1 when @file cannot be read (libvirt then
 * refuses managed hostdevs).
 */
static int libvirt_variant(const char *addr, const char *file, char *best, size_t len)
{
	char modalias[256], line[512];
	unsigned int bestw = UINT_MAX;
	FILE *f;

	best[0] = 0;
	if (dev_attr(PCI_DIR, addr, "modalias", modalias, sizeof(modalias)) ||
	    strncmp(modalias, "pci:", 4))
		return -1;
	f = fopen(file, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *pat = line + strlen("alias vfio_pci:"), *mod;
		unsigned int w = 0;
		const char *c;

		if (strncmp(line, "alias vfio_pci:", strlen("alias vfio_pci:")))
			continue;
		mod = strchr(pat, ' ');
		if (!mod)
			continue;
		*mod++ = 0;
		mod[strcspn(mod, "\n\t ")] = 0;
		if (fnmatch(pat, modalias + 4, 0))
			continue;
		for (c = pat; *c; c++)
			w += *c == '*';
		if (w < bestw) {
			bestw = w;
			snprintf(best, len, "%s", mod);
		}
	}
	fclose(f);
	return 0;
}

/* The module of the driver bound to @addr ("gpumig_vfio_pci"), or "". */
static void driver_module(const char *addr, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/driver/module", PCI_DIR, addr);
	link_name(path, buf, len);
}

/*
 * A VF that migrates: does Nova's default <hostdev managed='yes'> keep it
 * on its driver?  Otherwise its device_spec says "managed": "no" and the
 * VF must stay bound (vfio-pci.rst).
 */
static void managed_check(struct fn *f, const char *alias_file)
{
	char best[128], mod[128];
	size_t n = strlen(f->note);

	driver_module(f->addr, mod, sizeof(mod));
	if (libvirt_variant(f->addr, alias_file, best, sizeof(best))) {
		f->unmanaged = true;
		snprintf(f->note + n, sizeof(f->note) - n,
			 "; managed no: %s cannot be read, and libvirt refuses managed='yes' without it",
			 alias_file);
	} else if (!mod[0] || strcmp(best, mod)) {
		f->unmanaged = true;
		snprintf(f->note + n, sizeof(f->note) - n,
			 "; managed no: libvirt's managed='yes' would bind %s (%s names %s for it); keep the VF bound",
			 best[0] ? best : "vfio-pci", alias_file, best[0] ? best : "no variant");
	} else {
		snprintf(f->note + n, sizeof(f->note) - n,
			 "; managed='yes' works: libvirt finds %s in %s", mod, alias_file);
	}
}

/* "0x1234" -> "1234" */
static void hex_id(const char *addr, const char *attr, char *buf, size_t len)
{
	char v[16] = "";

	dev_attr(PCI_DIR, addr, attr, v, sizeof(v));
	snprintf(buf, len, "%s", strncmp(v, "0x", 2) ? v : v + 2);
}

/* Nova's normalization of a custom resource class. */
static void resource_class(const char *type, char *buf, size_t len)
{
	size_t n = snprintf(buf, len, "CUSTOM_");
	bool sep = false;

	for (; *type && n + 2 < len; type++) {
		if (isalnum((unsigned char)*type)) {
			buf[n++] = toupper((unsigned char)*type);
			sep = false;
		} else if (!sep) {
			buf[n++] = '_';
			sep = true;
		}
	}
	buf[n] = 0;
}

static bool vfio_driver(const char *drv)
{
	return strstr(drv, "vfio");
}

static void classify(struct fn *f, bool probe)
{
	char path[PATH_MAX], st[1024], compat[512], *t;
	unsigned long long flags;

	snprintf(path, sizeof(path), "%s/%s/physfn", PCI_DIR, f->addr);
	if (!access(path, F_OK))
		snprintf(f->type, sizeof(f->type), "type-VF");
	else if (!dev_attr(PCI_DIR, f->addr, "sriov_totalvfs", st, sizeof(st)) && atoi(st) > 0)
		snprintf(f->type, sizeof(f->type), "type-PF");
	else
		snprintf(f->type, sizeof(f->type), "type-PCI");
	snprintf(f->name, sizeof(f->name), "%s-%s-%s", f->vendor, f->product, f->type + 5);

	if (!strcmp(f->drv, GPUMIG_PCI_DRIVER)) {
		if (dev_attr(PCI_DIR, f->addr, "migration/status", st, sizeof(st))) {
			snprintf(f->note, sizeof(f->note), "no migration status");
		} else if (!strncmp(st, "migratable", 10)) {
			f->migratable = true;
			snprintf(f->note, sizeof(f->note), "%s offers VFIO migration", f->drv);
		} else {
			snprintf(f->note, sizeof(f->note), "%s", st);
		}
		t = NULL;
		if (!dev_attr(PCI_DIR, f->addr, "migration/compat", compat, sizeof(compat)))
			t = strstr(compat, "type=");
		if (t) {
			t += 5;
			t[strcspn(t, " ")] = 0;
			snprintf(f->name, sizeof(f->name), "%s", t);
			resource_class(t, f->rc, sizeof(f->rc));
		}
	} else if (!strcmp(f->drv, "vfio-pci")) {
		snprintf(f->note, sizeof(f->note), "vfio-pci offers no migration");
	} else if (probe) {
		char why[256];
		int r = vfio_probe(f->addr, &flags, why, sizeof(why));

		f->migratable = r > 0 && (flags & VFIO_MIGRATION_STOP_COPY);
		snprintf(f->note, sizeof(f->note), "%s: %s%s", f->drv,
			 r < 0 ? "could not be probed: " : "", why);
	} else {
		snprintf(f->note, sizeof(f->note),
			 "%s may offer migration: run with --probe to ask it", f->drv);
	}
	/* A whole PF never migrates, whatever its driver says. */
	if (f->migratable && strcmp(f->type, "type-VF")) {
		f->migratable = false;
		snprintf(f->note, sizeof(f->note), "not migratable: physical function");
	}
}

static int cmd_nova(bool probe, const char *alias_file)
{
	struct dirent **ents;
	struct fn *fns;
	char host[256] = "", deflt[PATH_MAX];
	struct utsname u;
	int n, i, j, nr = 0;

	if (!alias_file) {
		uname(&u);
		snprintf(deflt, sizeof(deflt), "/lib/modules/%s/modules.alias", u.release);
		alias_file = deflt;
	}

	n = scandir(PCI_DIR, &ents, NULL, alphasort);
	if (n < 0) {
		perror(PCI_DIR);
		return 1;
	}
	fns = calloc(n ? n : 1, sizeof(*fns));
	for (i = 0; i < n; i++) {
		struct fn *f = &fns[nr];

		if (ents[i]->d_name[0] != '.') {
			snprintf(f->addr, sizeof(f->addr), "%s", ents[i]->d_name);
			pci_driver(f->addr, f->drv, sizeof(f->drv));
			if (vfio_driver(f->drv)) {
				hex_id(f->addr, "vendor", f->vendor, sizeof(f->vendor));
				hex_id(f->addr, "device", f->product, sizeof(f->product));
				classify(f, probe);
				if (f->migratable)
					managed_check(f, alias_file);
				nr++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	gethostname(host, sizeof(host) - 1);
	printf("# Nova [pci] entries for the functions bound to VFIO drivers on %s\n", host);
	printf("# (gpumigctl nova-config).  live_migratable is \"yes\" only where the bound\n"
	       "# driver offers VFIO migration, and never for a physical function.\n"
	       "# resource_class needs [pci] report_in_placement = True and\n"
	       "# [filter_scheduler] pci_in_placement = True; it tells profiles that\n"
	       "# share PCI IDs apart.\n");
	for (i = 0; i < nr; i++)
		printf("#   %s %s %s:%s %s: %s\n", fns[i].addr, fns[i].type, fns[i].vendor,
		       fns[i].product, fns[i].drv, fns[i].note);
	printf("[pci]\n");
	for (i = 0; i < nr; i++) {
		struct fn *f = &fns[i];

		printf("device_spec = {\"address\": \"%s\", \"vendor_id\": \"%s\", \"product_id\": \"%s\"",
		       f->addr, f->vendor, f->product);
		if (f->rc[0])
			printf(", \"resource_class\": \"%s\"", f->rc);
		if (f->unmanaged)
			printf(", \"managed\": \"no\"");
		printf(", \"live_migratable\": \"%s\"}\n", f->migratable ? "yes" : "no");
	}
	/* One alias per kind of function, first seen first. */
	for (i = 0; i < nr; i++) {
		struct fn *f = &fns[i];

		for (j = 0; j < i; j++)
			if (!strcmp(fns[j].name, f->name) && fns[j].migratable == f->migratable &&
			    !strcmp(fns[j].type, f->type))
				break;
		if (j < i)
			continue;
		printf("alias = {\"name\": \"%s%s\", ", f->name,
		       !f->migratable && f->rc[0] ? "-nomig" : "");
		printf("\"vendor_id\": \"%s\", \"product_id\": \"%s\", \"device_type\": \"%s\"",
		       f->vendor, f->product, f->type);
		if (f->rc[0])
			printf(", \"resource_class\": \"%s\"", f->rc);
		printf(", \"live_migratable\": \"%s\"}\n", f->migratable ? "yes" : "no");
	}
	free(fns);
	return 0;
}

static int nova_args(int argc, char **argv, int i)
{
	const char *alias_file = NULL;
	bool probe = false;

	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--probe")) {
			probe = true;
		} else if (!strcmp(argv[i], "--modules-alias") && i + 1 < argc) {
			alias_file = argv[++i];
		} else {
			print_help(stderr);
			return 2;
		}
	}
	return cmd_nova(probe, alias_file);
}

static int cmd_status(const char *name)
{
	int ret;

	if (json)
		printf("[");
	ret = show(name, true);
	if (json)
		printf("]\n");
	return ret ? 1 : 0;
}

/* A device's descriptor, or @arg itself when it is a descriptor line. */
static int read_compat(const char *arg, char *buf, size_t len)
{
	const char *dir;

	if (strchr(arg, '=')) {
		snprintf(buf, len, "%s", arg);
		return 0;
	}
	dir = dev_dir(arg);
	if (!dir || dev_attr(dir, arg, "migration/compat", buf, len) || !buf[0]) {
		fprintf(stderr, "gpumigctl: %s: no migration descriptor (not a migratable gpumig device)\n",
			arg);
		return -1;
	}
	return 0;
}

/* Exit 0 when compatible, 1 when not (the reason printed), 2 on bad input. */
static int cmd_check_compat(const char *src, const char *dst)
{
	char s[512], d[512], msg[256] = "", cap[16] = "";
	int ret;

	if (read_compat(src, s, sizeof(s)) || read_compat(dst, d, sizeof(d)))
		return 2;
	ret = gpumigctl_compat_check(s, d, msg, sizeof(msg), cap, sizeof(cap));
	if (ret == -EINVAL) {
		fprintf(stderr, "gpumigctl: %s\n", msg);
		return 2;
	}
	if (json) {
		printf("{\"compatible\": %s, \"reason\": ", ret ? "false" : "true");
		json_str(msg);
		if (!ret && cap[0])
			printf(", \"stream_max\": \"%s\"", cap);
		printf("}\n");
	} else if (ret) {
		printf("incompatible: %s\n", msg);
	} else if (cap[0]) {
		printf("compatible with the source's migration/stream_max at %s (the destination reads up to %s)\n",
		       cap, cap);
	} else {
		printf("compatible\n");
	}
	return ret ? 1 : 0;
}

static long long metric(const char *dir, const char *name, const char *m)
{
	char path[128], v[64];

	snprintf(path, sizeof(path), "migration/%s", m);
	if (dev_attr(dir, name, path, v, sizeof(v)))
		return -1;
	return atoll(v);
}

/* A one-word value of migration/ (converging: yes, no, unknown), or "?". */
static void word(const char *dir, const char *name, const char *m, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "migration/%s", m);
	if (dev_attr(dir, name, path, buf, len) || !buf[0])
		snprintf(buf, len, "?");
}

/**
 * struct ram_job - what libvirt says of a domain's migration job (RAM)
 * @ok: a job was read
 * @remaining: "Memory remaining", bytes
 * @bandwidth: "Memory bandwidth", bytes/s
 * @dirty_rate: "Dirty rate", pages/s
 * @page: "Page size", bytes
 * @downtime_ms: "Expected downtime", ms: QEMU's estimate of RAM's part of
 *	the stop once it has measured a dirty rate (before, the limit it
 *	holds, which is not an estimate: then left at -1)
 */
struct ram_job {
	bool ok;
	double remaining;
	double bandwidth;
	double dirty_rate;
	double page;
	double downtime_ms;
};

/* "12.5 MiB" or "12.5 MiB/s" -> bytes (per second). */
static double job_bytes(const char *v)
{
	char unit[16] = "";
	double x = 0;

	if (sscanf(v, "%lf %15s", &x, unit) < 1)
		return 0;
	if (!strncmp(unit, "KiB", 3))
		x *= 1024;
	else if (!strncmp(unit, "MiB", 3))
		x *= 1024 * 1024;
	else if (!strncmp(unit, "GiB", 3))
		x *= 1024.0 * 1024 * 1024;
	else if (!strncmp(unit, "TiB", 3))
		x *= 1024.0 * 1024 * 1024 * 1024;
	return x;
}

/* virsh domjobinfo DOM, run without a shell (the name is passed as is). */
static void ram_job_read(const char *dom, struct ram_job *j)
{
	char line[256];
	int fd[2], st;
	FILE *f;
	pid_t pid;

	memset(j, 0, sizeof(*j));
	j->downtime_ms = -1;
	if (!dom || pipe(fd))
		return;
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return;
	}
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fd[1], 1);
		if (null >= 0)
			dup2(null, 2);
		close(fd[0]);
		close(fd[1]);
		execlp("virsh", "virsh", "domjobinfo", "--", dom, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		*v++ = 0;
		while (*v == ' ')
			v++;
		if (!strcmp(line, "Job type"))
			j->ok = strncmp(v, "None", 4) != 0;
		else if (!strcmp(line, "Memory remaining"))
			j->remaining = job_bytes(v);
		else if (!strcmp(line, "Memory bandwidth"))
			j->bandwidth = job_bytes(v);
		else if (!strcmp(line, "Dirty rate"))
			j->dirty_rate = atof(v);
		else if (!strcmp(line, "Page size"))
			j->page = atof(v);
		else if (!strcmp(line, "Expected downtime"))
			j->downtime_ms = atof(v);
	}
	if (f)
		fclose(f);
	else
		close(fd[0]);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		j->ok = false;
	/* QEMU reports its downtime limit until it has a dirty rate. */
	if (j->dirty_rate <= 0)
		j->downtime_ms = -1;
}

/**
 * ram_and_device() - the whole migration's figures, RAM and this device
 * @j: libvirt's job (j->ok)
 * @rem: the device's remaining bytes
 * @redirty: the device's re-dirty rate, bytes/s (-1: not measured)
 * @est: the device's stop-copy estimate, bytes
 * @left: set to the seconds left at the job's bandwidth, -1 for never (or
 *	no bandwidth measured yet)
 * @stop: set to the stop's seconds: the device's estimate at that
 *	bandwidth, plus RAM's part when QEMU has estimated it; -1 before a
 *	bandwidth is measured
 *
 * libvirt's "Memory bandwidth" is QEMU's throughput of the whole stream
 * (RAM and devices alike), so it is the link both share.  Only the device
 * named is counted: with several, watch each and add.
 */
static void ram_and_device(const struct ram_job *j, long long rem, long long redirty,
			   long long est, double *left, double *stop)
{
	double bw = j->bandwidth;
	double dirty = j->dirty_rate * j->page + (redirty > 0 ? redirty : 0);

	*left = *stop = -1;
	if (bw <= 0)		/* nothing sent yet: no rate to judge by */
		return;
	*left = bw > dirty ? (j->remaining + (rem > 0 ? rem : 0)) / (bw - dirty) : -1;
	*stop = bw > 0 ? (est > 0 ? est : 0) / bw : -1;
	if (*stop >= 0 && j->downtime_ms >= 0)
		*stop += j->downtime_ms / 1000;
}

/*
 * Samples of the metrics a switchover decision needs.  The rest's time is
 * remaining / (link - dirty rate): what pre-copy still has to send while
 * the device keeps dirtying VRAM; "never" when the rate reaches the link.
 */
static int cmd_watch(const char *name, long interval_ms, long count, double link_mbit,
		     const char *dom)
{
	const char *dir = dev_dir(name);
	double link = link_mbit * 1e6 / 8;	/* bytes per second */
	struct timespec ts = { interval_ms / 1000, (interval_ms % 1000) * 1000000 };
	char state[32];
	long i;

	if (!dir || dev_attr(dir, name, "migration/state", state, sizeof(state))) {
		fprintf(stderr, "gpumigctl: %s: no migration metrics (not a migratable gpumig device)\n",
			name);
		return 1;
	}
	for (i = 0; !count || i < count; i++) {
		long long rem, rate, est, drain, redirty, thr;
		double eta, left, downtime, all_left = -1, all_stop = -1;
		char verdict[16];
		struct ram_job j;

		/* One sample: the state and the figures read together. */
		if (i)
			nanosleep(&ts, NULL);
		dev_attr(dir, name, "migration/state", state, sizeof(state));
		rem = metric(dir, name, "remaining_bytes");
		rate = metric(dir, name, "dirty_rate_bytes_per_sec");
		est = metric(dir, name, "stopcopy_estimate_bytes");
		drain = metric(dir, name, "drain_rate_bytes_per_sec");
		redirty = metric(dir, name, "redirty_rate_bytes_per_sec");
		thr = metric(dir, name, "throttle_pct");
		word(dir, name, "converging", verdict, sizeof(verdict));
		ram_job_read(dom, &j);
		eta = link > rate ? rem / (link - rate) : -1;
		/* At the rates auto-converge measured: the rest, then the stop. */
		left = drain > redirty && redirty >= 0 ? rem / (double)(drain - redirty) : -1;
		downtime = drain > 0 ? est / (double)drain : -1;
		if (j.ok)
			ram_and_device(&j, rem, redirty, est, &all_left, &all_stop);
		if (json) {
			printf("{\"device\": \"%s\", \"state\": \"%s\", \"remaining_bytes\": %lld, \"dirty_rate_bytes_per_sec\": %lld, \"stopcopy_estimate_bytes\": %lld, \"seconds_left\": %.3f",
			       name, state, rem, rate, est, eta);
			printf(", \"drain_rate_bytes_per_sec\": %lld, \"redirty_rate_bytes_per_sec\": %lld, \"throttle_pct\": %lld, \"converging\": \"%s\", \"seconds_left_measured\": %.3f, \"downtime_seconds\": %.3f",
			       drain, redirty, thr, verdict, left, downtime);
			if (j.ok)
				printf(", \"ram_remaining_bytes\": %.0f, \"ram_bandwidth_bytes_per_sec\": %.0f, \"ram_dirty_bytes_per_sec\": %.0f, \"ram_expected_downtime_seconds\": %.3f, \"seconds_left_with_ram\": %.3f, \"downtime_seconds_with_ram\": %.3f",
				       j.remaining, j.bandwidth, j.dirty_rate * j.page,
				       j.downtime_ms >= 0 ? j.downtime_ms / 1000 : -1,
				       all_left, all_stop);
			printf("}\n");
			fflush(stdout);
			continue;
		}
		if (eta >= 0)
			printf("%s %-12s remaining %lld B, dirty %lld B/s, stop-copy %lld B, %.2f s left at %.0f Mbit/s",
			       name, state, rem, rate, est, eta, link_mbit);
		else
			printf("%s %-12s remaining %lld B, dirty %lld B/s, stop-copy %lld B, never converges at %.0f Mbit/s",
			       name, state, rem, rate, est, link_mbit);
		printf("; drain %lld B/s, re-dirty %lld B/s, throttle %lld%%, converging %s",
		       drain, redirty, thr, verdict);
		if (left >= 0)
			printf(", %.2f s left", left);
		if (downtime >= 0)
			printf(", downtime %.3f s", downtime);
		if (j.ok) {
			printf("; RAM remaining %.0f B, bandwidth %.0f B/s, dirty %.0f B/s",
			       j.remaining, j.bandwidth, j.dirty_rate * j.page);
			if (all_left >= 0)
				printf("; with RAM %.2f s left", all_left);
			else if (j.bandwidth > 0)
				printf("; with RAM never converges at this bandwidth");
			else
				printf("; with RAM no bandwidth yet");
			if (all_stop >= 0)
				printf(", downtime %.3f s%s", all_stop,
				       j.downtime_ms >= 0 ? "" : " (device part)");
		}
		printf("\n");
		fflush(stdout);
	}
	return 0;
}

static int watch_args(int argc, char **argv, int i)
{
	long interval = 1000, count = 0;
	double link = 10000;
	const char *name = argv[i++], *dom = NULL;

	for (; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--interval"))
			interval = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--count"))
			count = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--link"))
			link = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--domain"))
			dom = argv[i + 1];
		else
			break;
	}
	if (i != argc || interval <= 0 || count < 0 || link <= 0) {
		print_help(stderr);
		return 2;
	}
	return cmd_watch(name, interval, count, link, dom);
}

int main(int argc, char **argv)
{
	int i = 1;

	if (i < argc && !strcmp(argv[i], "--json")) {
		json = true;
		i++;
	}
	if (i < argc && !strcmp(argv[i], "--version") && argc == i + 1) {
		printf("gpumigctl %s\n", GPUMIG_VERSION);
		return 0;
	}
	if (i >= argc || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
		print_help(i >= argc ? stderr : stdout);
		return i >= argc ? 2 : 0;
	}
	if (!strcmp(argv[i], "list") && argc == i + 1)
		return cmd_list();
	if (!strcmp(argv[i], "status") && argc == i + 2)
		return cmd_status(argv[i + 1]);
	if (!strcmp(argv[i], "unquarantine") && argc == i + 2)
		return cmd_unquarantine(argv[i + 1]);
	if (!strcmp(argv[i], "probe") && argc == i + 2)
		return cmd_probe(argv[i + 1]);
	if (!strcmp(argv[i], "nova-config"))
		return nova_args(argc, argv, i + 1);
	if (!strcmp(argv[i], "check-compat") && argc == i + 3)
		return cmd_check_compat(argv[i + 1], argv[i + 2]);
	if (!strcmp(argv[i], "watch") && argc >= i + 2)
		return watch_args(argc, argv, i + 1);
	print_help(stderr);
	return 2;
}
