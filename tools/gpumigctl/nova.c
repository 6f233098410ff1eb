// SPDX-License-Identifier: GPL-2.0
/*
 * gpumigctl probe and nova-config: whether a PCI function's VFIO driver
 * offers migration, and the Nova [pci] entries for the functions bound to
 * VFIO drivers on this host.
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
#include <unistd.h>
#include <linux/vfio.h>

#include "gpumigctl.h"

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

int cmd_probe(const char *addr)
{
	unsigned long long flags = 0;
	char why[256];
	int ret = vfio_probe(addr, &flags, why, sizeof(why));

	if (json) {
		json_begin();
		json_str("device", addr);
		if (ret < 0)
			json_null("migration");
		else
			json_bool("migration", ret > 0);
		if (ret < 0)
			json_null("flags");
		else
			json_int("flags", (long long)flags);
		json_str("detail", why);
		json_end();
	} else {
		printf("%s: %s\n", addr, why);
	}
	return ret < 0 ? EXIT_USAGE : ret ? EXIT_OK : EXIT_NO;
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
		char mig[8];

		if (!mig_attr(PCI_DIR, f->addr, "migratable", mig, sizeof(mig)) &&
		    !strcmp(mig, "1")) {
			f->migratable = true;
			snprintf(f->note, sizeof(f->note), "%s offers VFIO migration", f->drv);
		} else if (!mig_attr(PCI_DIR, f->addr, "migratable", mig, sizeof(mig))) {
			mig_attr(PCI_DIR, f->addr, "last_error", st, sizeof(st));
			snprintf(f->note, sizeof(f->note), "not migratable now: %s", st);
		} else if (!dev_attr(PCI_DIR, f->addr, "migration/status", st, sizeof(st))) {
			/* "not migratable: <why>" */
			snprintf(f->note, sizeof(f->note), "%s", st);
		} else {
			snprintf(f->note, sizeof(f->note), "no migration status");
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

int cmd_nova(bool probe, const char *alias_file)
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

