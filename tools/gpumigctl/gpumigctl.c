// SPDX-License-Identifier: GPL-2.0
/*
 * gpumigctl: the operator's view of gpumig devices (simgpu mdev instances
 * and functions bound to gpumig-vfio-pci), from sysfs; VFIO probing of
 * other functions; and the Nova [pci] configuration those devices call
 * for.  See gpumigctl.8.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "gpumigctl.h"

static void print_help(FILE *f)
{
	fputs("usage: gpumigctl [--json] COMMAND [ARGS]\n"
	      "       gpumigctl --version | --help\n"
	      "\n"
	      "  list                  gpumig devices: mdev instances and functions bound to\n"
	      "                        gpumig-vfio-pci, with their migration status\n"
	      "  status DEVICE         one device's migration status and descriptor\n"
	      "  unquarantine DEVICE   lift a quarantine (the device is scrubbed first)\n"
	      "  probe ADDRESS         open a free PCI function through VFIO and say\n"
	      "                        whether its driver offers VFIO migration\n"
	      "  nova-config [--probe] [--modules-alias FILE]\n"
	      "                        the Nova [pci] device_spec and alias entries for\n"
	      "                        the functions bound to VFIO drivers on this host\n"
	      "  watch DEVICE [--interval MS] [--count N] [--link MBIT] [--domain DOM]\n"
	      "                        sample the device's migration metrics, with\n"
	      "                        libvirt's job figures for RAM beside (--domain)\n"
	      "  check-compat SRC DST  may DST accept SRC's migration stream?  Each is a\n"
	      "                        device or a descriptor line as migration/compat\n"
	      "                        prints it; and with which migration/stream_max\n"
	      "\n"
	      "DEVICE is an mdev UUID or a PCI address (0000:01:00.1).  Options may come\n"
	      "anywhere; --json prints one JSON object a line.  Exit status: 0 done (or\n"
	      "compatible), 1 refused, failed or incompatible, 2 bad usage or input.\n"
	      "See gpumigctl(8).\n", f);
}

bool json;

/* Read a sysfs attribute into @buf without its newline: 0 or -1. */
int read_file(const char *path, char *buf, size_t len)
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

int dev_attr(const char *dir, const char *name, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, attr);
	return read_file(path, buf, len);
}

/* The link's last component (a driver's or a group's name), or "". */
void link_name(const char *path, char *buf, size_t len)
{
	char link[PATH_MAX];
	ssize_t n = readlink(path, link, sizeof(link) - 1);

	buf[0] = 0;
	if (n > 0) {
		link[n] = 0;
		snprintf(buf, len, "%s", strrchr(link, '/') + 1);
	}
}

void pci_driver(const char *addr, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/driver", PCI_DIR, addr);
	link_name(path, buf, len);
}

static const char mdev_dir[] = MDEV_DIR, pci_dir[] = PCI_DIR;

/* Where DEVICE lives: mdev_dir or pci_dir, or NULL. */
const char *dev_dir(const char *name)
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

/* A file of DEVICE's migration/ directory, without its newline: 0 or -1. */
int mig_attr(const char *dir, const char *name, const char *file, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "migration/%s", file);
	return dev_attr(dir, name, path, buf, len);
}

/* A number of DEVICE's migration/ directory, or -1 when it has no such file. */
long long mig_number(const char *dir, const char *name, const char *file)
{
	char v[64], *end;
	long long n;

	if (mig_attr(dir, name, file, v, sizeof(v)) || !v[0])
		return -1;
	n = strtoll(v, &end, 10);
	return *end ? -1 : n;
}

/* The numbers of a migrating device's status, each a file of migration/. */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const counters[] = {
	"remaining_bytes", "stopcopy_estimate_bytes", "dirty_rate_bytes_per_sec",
	"precopy_rounds", "precopy_bytes", "stopcopy_bytes", "resumed_bytes",
	"dma_log_reports", "quiesce_us", "invalidate_us",
};

/* A text file of migration/ as a JSON string, null when absent or empty. */
static void json_file(const char *dir, const char *name, const char *file)
{
	char v[512];

	json_str(file, mig_attr(dir, name, file, v, sizeof(v)) || !v[0] ? NULL : v);
}

/*
 * One device, as one JSON object or a few lines for people: 0, or -1 when
 * @name is no gpumig device (said on stderr).
 */
static int show(const char *name)
{
	const char *dir = dev_dir(name);
	char status[1024] = "", compat[512] = "", drv[64] = "", mig[8] = "", why[512] = "";
	bool migrates, quarantined;
	unsigned int i;

	if (!dir) {
		fprintf(stderr, "gpumigctl: %s: no such device (neither an mdev UUID nor a PCI address in sysfs)\n",
			name);
		return -1;
	}
	if (dev_attr(dir, name, "migration/status", status, sizeof(status))) {
		if (!strcmp(dir, PCI_DIR))
			pci_driver(name, drv, sizeof(drv));
		fprintf(stderr, "gpumigctl: %s: not a gpumig device: %s%s (gpumigctl knows simgpu's mdevs and functions bound to %s)\n",
			name, !strcmp(dir, PCI_DIR) ? "its driver is " : "an mdev of another parent",
			!strcmp(dir, PCI_DIR) ? (drv[0] ? drv : "none") : "", GPUMIG_PCI_DRIVER);
		return -1;
	}
	if (!strcmp(dir, PCI_DIR))
		pci_driver(name, drv, sizeof(drv));
	else
		snprintf(drv, sizeof(drv), "simgpu");
	/* A function that does not migrate has status and unquarantine only. */
	migrates = !mig_attr(dir, name, "migratable", mig, sizeof(mig));
	quarantined = migrates ? !strcmp(mig, "0") : !strncmp(status, "quarantined: ", 13);
	if (!json) {
		printf("%s  %s\n  status: %s\n", name, drv, status);
		if (!dev_attr(dir, name, "migration/compat", compat, sizeof(compat)) && compat[0])
			printf("  compat: %s\n", compat);
		return 0;
	}
	json_begin();
	json_str("device", name);
	json_str("kind", !strcmp(dir, PCI_DIR) ? "pci" : "mdev");
	json_str("driver", drv);
	json_bool("migratable", migrates && !quarantined);
	json_bool("quarantined", quarantined);
	if (!migrates) {
		/* "not migratable: <why>" or "quarantined: <why>" */
		const char *colon = strchr(status, ':');

		snprintf(why, sizeof(why), "%s", colon ? colon + 2 : status);
		json_str("reason", why);
		json_end();
		return 0;
	}
	mig_attr(dir, name, "last_error", why, sizeof(why));
	json_str("reason", quarantined && why[0] ? why : NULL);
	json_file(dir, name, "state");
	json_file(dir, name, "dirty_tracking");
	for (i = 0; i < ARRAY_SIZE(counters); i++) {
		long long v = mig_number(dir, name, counters[i]);

		if (v < 0)
			json_null(counters[i]);
		else
			json_int(counters[i], v);
	}
	json_file(dir, name, "last_error");
	json_file(dir, name, "source");
	json_file(dir, name, "stream_max");
	if (!dev_attr(dir, name, "migration/compat", compat, sizeof(compat)) && compat[0])
		json_descriptor("compat", compat);
	else
		json_null("compat");
	json_end();
	return 0;
}

static int cmd_list(void)
{
	static const char * const dirs[] = { MDEV_DIR, PCI_DIR };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct dirent **ents;
		int n, j;

		n = scandir(dirs[i], &ents, NULL, alphasort);
		for (j = 0; j < n; j++) {
			char st[16];

			if (ents[j]->d_name[0] != '.' &&
			    !dev_attr(dirs[i], ents[j]->d_name, "migration/status", st, sizeof(st)))
				show(ents[j]->d_name);
			free(ents[j]);
		}
		if (n >= 0)
			free(ents);
	}
	return EXIT_OK;
}

static int cmd_status(const char *name)
{
	return show(name) ? EXIT_NO : EXIT_OK;
}

static int cmd_unquarantine(const char *name)
{
	const char *dir = dev_dir(name);
	char path[PATH_MAX], st[512] = "", mig[8] = "";
	int fd, ret, err;

	if (!dir) {
		fprintf(stderr, "gpumigctl: %s: no such device (neither an mdev UUID nor a PCI address in sysfs)\n",
			name);
		return EXIT_NO;
	}
	if (dev_attr(dir, name, "migration/status", st, sizeof(st))) {
		fprintf(stderr, "gpumigctl: %s: not a gpumig device: nothing to lift\n", name);
		return EXIT_NO;
	}
	if (mig_attr(dir, name, "migratable", mig, sizeof(mig)) ? strncmp(st, "quarantined: ", 13) :
								 strcmp(mig, "0")) {
		fprintf(stderr, "gpumigctl: %s: not quarantined: nothing to lift\n", name);
		return EXIT_NO;
	}
	snprintf(path, sizeof(path), "%s/%s/migration/unquarantine", dir, name);
	fd = open(path, O_WRONLY);
	ret = fd < 0 ? -1 : (write(fd, "1", 1) == 1 ? 0 : -1);
	err = errno;
	if (fd >= 0)
		close(fd);
	if (!ret)
		return EXIT_OK;
	if (err == ENOENT || err == ENODEV)
		fprintf(stderr, "gpumigctl: %s: the device went away\n", name);
	else if (err == EACCES || err == EPERM)
		fprintf(stderr, "gpumigctl: %s: lifting a quarantine needs root (%s)\n", name,
			strerror(err));
	else if (err == EINVAL)
		fprintf(stderr, "gpumigctl: %s: not quarantined any more: nothing to lift\n", name);
	else
		fprintf(stderr, "gpumigctl: %s: the scrub before the lift failed, the device stays quarantined: %s (the kernel log says more)\n",
			name, strerror(err));
	return EXIT_NO;
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
		return EXIT_USAGE;
	ret = gpumigctl_compat_check(s, d, msg, sizeof(msg), cap, sizeof(cap));
	if (ret == -EINVAL) {
		fprintf(stderr, "gpumigctl: %s\n", msg);
		return EXIT_USAGE;
	}
	if (json) {
		json_begin();
		json_bool("compatible", !ret);
		json_str("reason", msg[0] ? msg : NULL);
		json_str("stream_max", !ret && cap[0] ? cap : NULL);
		json_end();
	} else if (ret) {
		printf("incompatible: %s\n", msg);
	} else if (cap[0]) {
		printf("compatible with the source's migration/stream_max at %s (the destination reads up to %s)\n",
		       cap, cap);
	} else {
		printf("compatible\n");
	}
	return ret ? EXIT_NO : EXIT_OK;
}

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "gpumigctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(gpumigctl --help lists the commands)\n");
	return EXIT_USAGE;
}

/* A whole number (or, with @real, a number) for option @opt, > 0 or >= 0. */
static bool opt_number(const char *opt, const char *v, bool real, double min, double *out)
{
	char *end;

	errno = 0;
	*out = real ? strtod(v, &end) : (double)strtol(v, &end, 10);
	if (errno || end == v || *end || *out < min || *out != *out || *out > 1e12 ||
	    (real && strpbrk(v, "xXnNiI"))) {
		fprintf(stderr, "gpumigctl: --%s: \"%s\" is not %s\n", opt, v,
			real ? "a positive number" : min > 0 ? "a whole number of at least 1" :
			"a whole number of at least 0");
		return false;
	}
	return true;
}

enum cmd_id { CMD_LIST, CMD_STATUS, CMD_UNQUARANTINE, CMD_PROBE, CMD_NOVA, CMD_CHECK_COMPAT,
	      CMD_WATCH };

/* The commands, and how many operands each takes. */
static const struct {
	const char *name;
	enum cmd_id id;
	int nargs;
} commands[] = {
	{ "list", CMD_LIST, 0 },
	{ "status", CMD_STATUS, 1 },
	{ "unquarantine", CMD_UNQUARANTINE, 1 },
	{ "probe", CMD_PROBE, 1 },
	{ "nova-config", CMD_NOVA, 0 },
	{ "check-compat", CMD_CHECK_COMPAT, 2 },
	{ "watch", CMD_WATCH, 1 },
};

enum {
	OPT_JSON = 256, OPT_VERSION, OPT_PROBE, OPT_ALIAS, OPT_INTERVAL, OPT_COUNT, OPT_LINK,
	OPT_DOMAIN
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "probe", no_argument, NULL, OPT_PROBE },
		{ "modules-alias", required_argument, NULL, OPT_ALIAS },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "link", required_argument, NULL, OPT_LINK },
		{ "domain", required_argument, NULL, OPT_DOMAIN },
		{ NULL, 0, NULL, 0 }
	};
	const char *alias_file = NULL, *dom = NULL, *cmd;
	char **arg;
	double interval = 1000, count = 0, link = 10000;
	bool probe = false, watch_opt = false, nova_opt = false;
	int c, nargs;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			print_help(stdout);
			return EXIT_OK;
		case OPT_VERSION:
			printf("gpumigctl %s\n", GPUMIG_VERSION);
			return EXIT_OK;
		case OPT_PROBE:
			probe = true;
			nova_opt = true;
			break;
		case OPT_ALIAS:
			alias_file = optarg;
			nova_opt = true;
			break;
		case OPT_INTERVAL:
			if (!opt_number("interval", optarg, false, 1, &interval))
				return EXIT_USAGE;
			watch_opt = true;
			break;
		case OPT_COUNT:
			if (!opt_number("count", optarg, false, 0, &count))
				return EXIT_USAGE;
			watch_opt = true;
			break;
		case OPT_LINK:
			if (!opt_number("link", optarg, true, 0.001, &link))
				return EXIT_USAGE;
			watch_opt = true;
			break;
		case OPT_DOMAIN:
			dom = optarg;
			watch_opt = true;
			break;
		case ':':
			return usage("option %s needs a value", argv[optind - 1]);
		default:
			return usage("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		print_help(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	nargs = argc - optind - 1;
	for (c = 0; c < (int)ARRAY_SIZE(commands); c++)
		if (!strcmp(cmd, commands[c].name))
			break;
	if (c == (int)ARRAY_SIZE(commands))
		return usage("unknown command \"%s\"", cmd);
	if (watch_opt && commands[c].id != CMD_WATCH)
		return usage("--interval, --count, --link and --domain are watch's options, not %s's",
			     cmd);
	if (nova_opt && commands[c].id != CMD_NOVA)
		return usage("--probe and --modules-alias are nova-config's options, not %s's",
			     cmd);
	if (nargs != commands[c].nargs)
		return usage("%s: wrong number of arguments", cmd);
	arg = argv + optind + 1;
	switch (commands[c].id) {
	case CMD_LIST:
		return cmd_list();
	case CMD_STATUS:
		return cmd_status(arg[0]);
	case CMD_UNQUARANTINE:
		return cmd_unquarantine(arg[0]);
	case CMD_PROBE:
		return cmd_probe(arg[0]);
	case CMD_NOVA:
		return cmd_nova(probe, alias_file);
	case CMD_CHECK_COMPAT:
		return cmd_check_compat(arg[0], arg[1]);
	case CMD_WATCH:
		return cmd_watch(arg[0], (long)interval, (long)count, link, dom);
	}
	return EXIT_USAGE;
}
