// SPDX-License-Identifier: GPL-2.0
/*
 * vfio-migtest: a conformance test of a device's VFIO live-migration uAPI
 * (the kernel's include/uapi/linux/vfio.h, migration v2), from the uAPI
 * alone: it knows nothing of the device, its stream or its driver.  Any
 * VFIO migration driver's author can run it on their device.  Output is
 * KTAP, one case per check; the exit status is 0 only when every check
 * passed (or was skipped for a reason it names).  See vfio-migtest.8.
 *
 *   vfio-migtest [-c] [-d DST] [-k KNOWN] [-n CORRUPT] [-p PLUGIN] [-s SEED] [-N SUITE] DEVICE
 *
 * -c opens the devices through the iommufd cdev (/dev/vfio/devices/vfioN)
 * instead of their group and a type1 container.  -p loads a device plug-in
 * (vfio-migtest-plugin.h) for the checks that need the device to act.
 *
 * DEVICE and DST are PCI addresses (0000:01:00.2) or mdev UUIDs, each in
 * an IOMMU group of its own, unused, bound to a VFIO driver.  Streams are
 * written back into DST (by default DEVICE itself).
 *
 * This file: KTAP, known failures, the options and the plan.  The checks
 * are in the files migtest.h lists.
 */
#include "migtest.h"

/* ---- KTAP ----------------------------------------------------------- */

static int nr_case, nr_fail;
static char why[512];

struct blob golden;	/* a stream of the device that it took back */
struct dev src, dstdev;
struct dev *dst = &src;	/* where streams are written back */
bool two;	/* dst is another device */

void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("    # ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Say why a check fails: returns -1, for "return failed(...)". */
int failed(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Known failures (-k FILE): a line "CASE reason" each.  Such a case that
 * fails is reported skipped with its reason; one that passes fails, so a
 * change in the device's behaviour shows.
 */
#define MAX_KNOWN 64
static struct {
	char name[64];
	char reason[256];
} known[MAX_KNOWN];
static int nr_known;

static int known_load(const char *path)
{
	char line[400];
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && nr_known < MAX_KNOWN) {
		char *r;

		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		r = line + strcspn(line, " \t");
		if (*r)
			*r++ = 0;
		r += strspn(r, " \t");
		snprintf(known[nr_known].name, sizeof(known[0].name), "%.63s", line);
		snprintf(known[nr_known].reason, sizeof(known[0].reason), "%.255s", r);
		nr_known++;
	}
	fclose(f);
	return 0;
}

static const char *known_reason(const char *name)
{
	int i;

	for (i = 0; i < nr_known; i++)
		if (!strcmp(known[i].name, name))
			return known[i].reason;
	return NULL;
}

/* One case: 0 ok, -1 not ok (why), 1 skipped (why). */
void report(const char *name, int ret)
{
	const char *k = known_reason(name);

	nr_case++;
	if (k && ret < 0) {
		printf("    # %s: %s\n    ok %d %s # SKIP known failure: %s\n", name, why, nr_case,
		       name, k);
	} else if (k && ret == 0) {
		nr_fail++;
		printf("    # %s: listed as a known failure (%s) but passed: the device changed\n"
		       "    not ok %d %s\n", name, k, nr_case, name);
	} else if (ret > 0) {
		printf("    ok %d %s # SKIP %s\n", nr_case, name, why);
	} else if (ret < 0) {
		nr_fail++;
		printf("    # %s: %s\n    not ok %d %s\n", name, why, nr_case, name);
	} else {
		printf("    ok %d %s\n", nr_case, name);
	}
	fflush(stdout);
	why[0] = 0;
}

int skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return 1;
}

unsigned int nr_corrupt = 20, seed = 1;
static const char *suite = "vfio_migtest";

/* The end of the suite, its plan said: the whole run's result. */
static int finish(void)
{
	printf("%s 1 %s\n", nr_fail ? "not ok" : "ok", suite);
	return nr_fail ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "%s: %s [-c] [-d DST] [-k KNOWN] [-n CORRUPT] [-p PLUGIN] [-s SEED] [-N SUITE] DEVICE\n"
		"  DEVICE, DST: a PCI address or an mdev UUID bound to a VFIO driver\n",
		"usage", "vfio-migtest");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dname = NULL;
	unsigned int k, nsup;
	int c, ret;

	while ((c = getopt(argc, argv, "cd:k:n:p:s:N:h")) != -1) {
		switch (c) {
		case 'p':
			if (plug_load(optarg))
				return 2;
			break;
		case 'c':
			use_cdev = true;
			break;
		case 'd':
			dname = optarg;
			break;
		case 'n':
			nr_corrupt = strtoul(optarg, NULL, 10);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 10);
			break;
		case 'N':
			suite = optarg;
			break;
		case 'k':
			if (known_load(optarg)) {
				fprintf(stderr, "vfio-migtest: %s: %s\n", optarg, strerror(errno));
				return 2;
			}
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n", suite);
	ret = dev_open(&src, argv[optind]);
	if (ret) {
		printf("    1..1\n");
		report("open", ret);
		return finish();
	}
	diag("device %s through %s%s", src.name, src.cdev ? src.cdev_path : "its group (type1)",
	     src.can_reset ? ", resettable" : "");
	ret = mig_flags(src.fd, &src.flags);
	if (ret) {
		printf("    1..1\n");
		diag("%s does not offer VFIO migration (%s)", src.name, strerror(-ret));
		report("no_migration", skip("the device does not migrate: nothing to test"));
		dev_close(&src);
		return finish();
	}
	two = dname && strcmp(dname, argv[optind]);
	if (two) {
		ret = dev_open(&dstdev, dname);
		if (ret) {
			printf("    1..1\n");
			report("open_destination", ret);
			return finish();
		}
		dst = &dstdev;
	}
	/* The plan: every case below, from the flags. */
	for (k = VFIO_DEVICE_STATE_STOP, nsup = 0; k < NR_STATES; k++)
		nsup += supported(&src, k);
	printf("    1..%u\n", 2 + NR_SPLITS + nsup * 7 + 6 + 3 +
	       NR_LOG_CASES + 1 + 2 * nsup + 1 + 4);
	report("migration_feature", t_feature());
	report("fresh_device_is_running", t_initial_running());
	t_splits();
	t_arcs();
	report("bad_targets_refused", t_bad_targets());
	report("precopy", t_precopy());
	report("precopy_info_not_on_resuming_fd", t_precopy_info_elsewhere());
	report("mig_data_size", t_data_size());
	report("truncated_streams_refused", t_truncated());
	report("corrupted_streams", t_corrupted());
	report("second_saving_fd", t_second_saving_fd());
	report("saving_fd_poll", t_saving_poll());
	report("precopy_info_v2", t_precopy_info_v2());
	t_dma_logging();
	report("plugin_dma_log_dirty", t_plug_dirty());
	t_every_state();
	report("reopened_device_is_running", stale_state == VFIO_DEVICE_STATE_RUNNING ? 0 :
	       failed("a device closed in %s was still in it when opened again",
		      state_names[stale_state]));
	if (plug)
		diag("plug-in %s", plug->name);
	report("plugin_round_trip", t_plug_round_trip(false));
	report("plugin_round_trip_precopy", t_plug_round_trip(true));
	report("plugin_reinit", t_plug_reinit());
	report("plugin_error_state", t_plug_error());	/* last: it may reset hardware */
	diag("%d of %d checks failed", nr_fail, nr_case);
	free(golden.p);
	if (two)
		dev_close(&dstdev);
	dev_close(&src);
	return finish();
}
