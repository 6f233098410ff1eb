// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-client: drive a simgpu instance through VFIO as a VMM would and
 * check every result byte for byte.  Prints KTAP.
 *
 *   simgpu-client [-s SCENARIO[,SCENARIO...]] [-n SUITE] [-d DST] [-l] DEVICE
 *
 * Each scenario opens the instance afresh (a new tenant), builds page
 * tables and rings in its "guest memory", runs work and checks it; what
 * it leaves open or changed is undone before the next one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/gpumig_stream.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "client.h"
#include "vfio_mig.h"

char fail_msg[512];
const char *dst_name;

int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
	va_end(ap);
	return -1;
}

static uint32_t rnd_state = 12345;

uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

void fill_random(void *p, size_t len)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = rnd();
}

uint32_t kernel_word(uint32_t w, uint32_t key, uint32_t it)
{
	return (w ^ key) * 2654435761U + it;
}

/* A guest buffer mapped at @va; returns its host pointer. */
void *sysbuf(struct gpu *g, uint64_t va, size_t len, uint64_t *iova)
{
	uint64_t a = galloc(g, len);

	gpu_map_range(g, va, a, (len + 4095) & ~4095ULL, SIMGPU_PTE_WRITE);
	if (iova)
		*iova = a;
	return gptr(g, a);
}

/*
 * The scenarios, in the order they run.  Flags: RUN_DEFAULT, run when no
 * -s list is given; NEEDS_DST, needs a second instance (-d) of the same
 * type, or of another type for "incompatible"; NEEDS_MIGRATION, needs the
 * device to offer VFIO migration (on one that does not, such as a VF on
 * plain vfio-pci, the scenario checks that migration is refused and is
 * skipped); NEEDS_SCRUB, needs a driver that scrubs the device between
 * tenants (plain vfio-pci does not: skipped there).
 */
enum { RUN_DEFAULT = 1, NEEDS_DST = 2, NEEDS_MIGRATION = 4, NEEDS_SCRUB = 8 };

static const struct scenario {
	const char *name;
	int (*fn)(struct gpu *g);
	unsigned int flags;
} scenarios[] = {
	{ "info", t_info, RUN_DEFAULT },
	{ "fill_copy", t_fill_copy, RUN_DEFAULT },
	{ "kernel", t_kernel, RUN_DEFAULT },
	{ "fences_irq", t_fences_irq, RUN_DEFAULT },
	{ "stale_tlb", t_stale_tlb, RUN_DEFAULT },
	{ "bad_ring", t_bad_ring, RUN_DEFAULT },
	{ "faults", t_faults, RUN_DEFAULT },
	{ "bad_args", t_bad_args, RUN_DEFAULT },
	{ "inval_storm", t_inval_storm, RUN_DEFAULT },
	{ "reset_busy", t_reset_busy, RUN_DEFAULT },
	{ "scrub", t_scrub, RUN_DEFAULT | NEEDS_SCRUB },
	{ "ack_knobs", t_ack_knobs, RUN_DEFAULT },
	{ "preempt", t_preempt, RUN_DEFAULT },
	{ "workload", t_workload, RUN_DEFAULT },
	{ "dma_logging", t_dma_logging, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "dma_log_race", t_dma_log_race, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "dma_log_cut", t_dma_log_cut, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "dma_log_lifecycle", t_dma_log_lifecycle, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "dma_log_span", t_dma_log_span, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "dirty_precopy", t_dirty_precopy, NEEDS_DST | NEEDS_MIGRATION },
	{ "aperture", t_aperture, NEEDS_DST | NEEDS_MIGRATION },
	{ "migrate", t_migrate, NEEDS_DST | NEEDS_MIGRATION },
	{ "postcopy", t_postcopy, NEEDS_DST | NEEDS_MIGRATION },
	{ "postcopy_abandon", t_postcopy_abandon, NEEDS_DST | NEEDS_MIGRATION },
	{ "postcopy_threads", t_postcopy_threads, NEEDS_DST | NEEDS_MIGRATION },
	{ "postcopy_mover", t_postcopy_mover, NEEDS_DST | NEEDS_MIGRATION },	/* GPUMIG_MOVER */
	{ "postcopy_reset", t_postcopy_reset, NEEDS_DST | NEEDS_MIGRATION },
	{ "postcopy_timeout", t_postcopy_timeout, NEEDS_DST | NEEDS_MIGRATION },
	{ "postcopy_hold", t_postcopy_hold, NEEDS_DST | NEEDS_MIGRATION },	/* VFs */
	{ "postcopy_pf_reset", t_postcopy_pf_reset, NEEDS_DST | NEEDS_MIGRATION },	/* VFs */
	{ "postcopy_pf_gone", t_postcopy_pf_gone, NEEDS_DST | NEEDS_MIGRATION },	/* the PF */
	{ "postcopy_remove", t_postcopy_remove, NEEDS_DST | NEEDS_MIGRATION },	/* mdevs */
	{ "postcopy_save", t_postcopy_save, NEEDS_MIGRATION },	/* GOLDEN_STREAM: writes it */
	{ "incompatible", t_incompatible, NEEDS_DST | NEEDS_MIGRATION },
	{ "stop_fails", t_stop_fails, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "p2p", t_p2p, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "poll", t_poll, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "metrics", t_metrics, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "notify", t_notify, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "converge_sysfs", t_converge_sysfs, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "converge", t_converge, NEEDS_DST | NEEDS_MIGRATION },	/* a hot workload */
	{ "converge_off", t_converge_off, NEEDS_MIGRATION },
	{ "converge_reset", t_converge_reset, NEEDS_MIGRATION },
	{ "hostile", t_hostile, NEEDS_DST | NEEDS_MIGRATION },
	{ "kill_resume", t_kill_resume, NEEDS_DST | NEEDS_MIGRATION },
	{ "pingpong", t_pingpong, NEEDS_DST | NEEDS_MIGRATION },
	{ "soak", t_soak, NEEDS_DST | NEEDS_MIGRATION },	/* SOAK_MIGRATIONS, 100 */
	{ "quarantine", t_quarantine, RUN_DEFAULT | NEEDS_MIGRATION },
	{ "race", t_race, NEEDS_DST | NEEDS_MIGRATION },	/* RACE_SECONDS, 10 */
	{ "fault_sweep", t_fault_sweep, NEEDS_MIGRATION },	/* fail-nth: the debug kernel */
	{ "pf_reset", t_pf_reset, NEEDS_MIGRATION },	/* resets the VF's PF */
	{ "pf_gone", t_pf_gone, NEEDS_MIGRATION },	/* unbinds the VF's PF */
	{ "remove_open", t_remove_open, 0 },	/* destroys the instance */
	{ "bench_dirty", t_bench_dirty, NEEDS_MIGRATION },	/* the benchmark, not a test */
	{ "bench_vram", t_bench_vram, NEEDS_DST | NEEDS_MIGRATION },	/* VRAM benchmark */
	{ "bench_converge", t_bench_converge, NEEDS_DST | NEEDS_MIGRATION },	/* converge */
	{ "bench_postcopy", t_bench_postcopy, NEEDS_DST | NEEDS_MIGRATION },	/* GPUMIG_MOVER */
	{ "golden_save", t_golden_save, NEEDS_MIGRATION },	/* GOLDEN_STREAM: writes it */
	{ "golden_load", t_golden_load, NEEDS_MIGRATION },	/* GOLDEN_STREAM: loads it */
	{ "golden_restore", t_golden_restore, NEEDS_MIGRATION },	/* ... unedited */
	{ "golden_refused", t_golden_refused, NEEDS_MIGRATION },	/* GOLDEN_WHY */
};

#define NR_SCENARIOS ARRAY_SIZE(scenarios)

static bool selected(const char *list, const struct scenario *sc)
{
	char *dup, *tok, *save;
	bool hit = false;

	if (!list)
		return sc->flags & RUN_DEFAULT;
	dup = strdup(list);
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, sc->name))
			hit = true;
	free(dup);
	return hit;
}

/*
 * Whatever a scenario left behind, pass or fail, goes before the next
 * one: knobs back to their values, data fds closed, devices closed.  A
 * failed scenario may leave its instance quarantined (a knob that loses
 * acknowledgments, say): that is lifted too, and said, so that the next
 * scenario starts clean.
 */
static void scenario_cleanup(const char *name, bool failed)
{
	int n;

	knobs_restore();
	data_fds_close();
	n = gpus_close();
	if (failed && n)
		printf("    # %s: cleanup closed %d device(s) it left open\n", name, n);
	if (failed && !unquarantine_all())
		printf("    # %s: cleanup lifted a quarantine it caused\n", name);
}

/* A device that offers no migration refuses a state change, cleanly. */
static int migration_refused(struct gpu *g)
{
	int ret = mig_set(g, VFIO_DEVICE_STATE_STOP, NULL);

	CHECK(ret == -ENOTTY, "no migration offered, yet a state change gave %d", ret);
	snprintf(fail_msg, sizeof(fail_msg), "the device offers no VFIO migration (%s), and refuses it",
		 g->driver[0] ? g->driver : "mdev");
	return SKIP;
}

/* 0 passed, SKIP skipped (fail_msg says why), else failed. */
static int run(const struct scenario *sc, const char *dev)
{
	struct gpu g;
	int ret;

	fail_msg[0] = 0;
	/* The dirty-tracking benchmark's 10,000 pages need more. */
	guest_size = sc->fn == t_bench_dirty ? GUEST_MAX : GUEST_DEFAULT;
	if (sc->flags & NEEDS_DST && !dst_name)
		return fail("needs a destination (-d)");
	if (gpu_open(&g, dev))
		return fail("cannot open %s", dev);
	if (sc->flags & NEEDS_MIGRATION && !g.migration) {
		ret = migration_refused(&g);
	} else if (sc->flags & NEEDS_SCRUB && !strcmp(g.driver, "vfio-pci")) {
		snprintf(fail_msg, sizeof(fail_msg),
			 "plain vfio-pci does not scrub a VF between tenants");
		ret = SKIP;
	} else {
		ret = sc->fn(&g);
	}
	gpu_close(&g);
	scenario_cleanup(sc->name, ret < 0);
	return ret;
}

static void print_usage(const char *me)
{
	fprintf(stderr, "usage: %s [-s SCENARIO,...] [-n SUITE] [-d DST] [-l] DEVICE\n"
		"  DEVICE, DST: an mdev UUID or a PCI address bound to vfio-pci\n", me);
}

int main(int argc, char **argv)
{
	const char *list = NULL, *suite = "simgpu";
	unsigned int i, n = 0, failed = 0;
	struct timespec t0, t1;
	double took;
	int opt, ret;

	while ((opt = getopt(argc, argv, "s:n:d:l")) != -1) {
		switch (opt) {
		case 'd':
			dst_name = optarg;
			break;
		case 's':
			list = optarg;
			break;
		case 'n':
			suite = optarg;
			break;
		case 'l':
			for (i = 0; i < NR_SCENARIOS; i++)
				printf("%s%s\n", scenarios[i].name,
				       scenarios[i].flags & RUN_DEFAULT ? "" : " (only with -s)");
			return 0;
		default:
			print_usage(argv[0]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		print_usage(argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n",
	       suite);
	for (i = 0; i < NR_SCENARIOS; i++) {
		if (!selected(list, &scenarios[i]))
			continue;
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ret = run(&scenarios[i], argv[optind]);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		took = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (ret == SKIP) {
			printf("    ok %u %s # SKIP %s\n", n, scenarios[i].name, fail_msg);
		} else if (ret) {
			failed++;
			printf("    # %s: %s\n    # %s took %.1f s\n    not ok %u %s\n",
			       scenarios[i].name, fail_msg, scenarios[i].name,
			       took, n, scenarios[i].name);
		} else {
			printf("    # %s took %.1f s\n    ok %u %s\n",
			       scenarios[i].name, took, n, scenarios[i].name);
		}
	}
	printf("    1..%u\n%s 1 %s\n", n, failed ? "not ok" : "ok", suite);
	return failed ? 1 : 0;
}
