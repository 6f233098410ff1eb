// SPDX-License-Identifier: GPL-2.0
/*
 * gpumigctl watch: samples of a device's migration metrics, with what
 * libvirt says of the domain's job for RAM beside them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpumigctl.h"

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

/* "2026-12-06T15:04:05.123Z": when a sample was taken, UTC. */
static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/**
 * struct sample - one reading of a device's migration files
 * @state: migration/state ("RUNNING"...)
 * @rem, @rate, @est, @drain, @redirty, @thr: the numbers; -1 for a file
 *	the device does not have (an older release)
 * @verdict: migration/converging, or "" when absent
 */
struct sample {
	char state[32];
	long long rem, rate, est, drain, redirty, thr;
	char verdict[16];
};

/* One sample: -1 when the device is gone (its state cannot be read). */
static int sample_read(const char *dir, const char *name, struct sample *s)
{
	if (mig_attr(dir, name, "state", s->state, sizeof(s->state)))
		return -1;
	s->rem = mig_number(dir, name, "remaining_bytes");
	s->rate = mig_number(dir, name, "dirty_rate_bytes_per_sec");
	s->est = mig_number(dir, name, "stopcopy_estimate_bytes");
	s->drain = mig_number(dir, name, "drain_rate_bytes_per_sec");
	s->redirty = mig_number(dir, name, "redirty_rate_bytes_per_sec");
	s->thr = mig_number(dir, name, "throttle_pct");
	if (mig_attr(dir, name, "converging", s->verdict, sizeof(s->verdict)))
		s->verdict[0] = 0;
	return 0;
}

static void json_count(const char *key, long long v)
{
	if (v < 0)
		json_null(key);
	else
		json_int(key, v);
}

/* A duration: null when it cannot be known (@known false). */
static void json_secs(const char *key, bool known, double v)
{
	if (known)
		json_num(key, v);
	else
		json_null(key);
}

/*
 * Samples of the metrics a switchover decision needs.  The rest's time is
 * remaining / (link - dirty rate): what pre-copy still has to send while
 * the device keeps dirtying VRAM; it never ends when the rate reaches the
 * link.  Ends when @count samples were taken, or with EXIT_NO when the
 * device goes away.
 */
int cmd_watch(const char *name, long interval_ms, long count, double link_mbit,
	      const char *dom)
{
	const char *dir = dev_dir(name);
	double link = link_mbit * 1e6 / 8;	/* bytes per second */
	struct timespec ts = { interval_ms / 1000, (interval_ms % 1000) * 1000000 };
	struct sample s;
	char when[40];
	long i;

	if (!dir) {
		fprintf(stderr, "gpumigctl: %s: no such device (neither an mdev UUID nor a PCI address in sysfs)\n",
			name);
		return EXIT_NO;
	}
	if (sample_read(dir, name, &s)) {
		fprintf(stderr, "gpumigctl: %s: no migration metrics: not a gpumig device that migrates (see gpumigctl status %s)\n",
			name, name);
		return EXIT_NO;
	}
	for (i = 0; !count || i < count; i++) {
		double eta, left, downtime, all_left = -1, all_stop = -1;
		bool at_link, measured, at_measured;
		struct ram_job j;

		if (i) {
			nanosleep(&ts, NULL);
			if (sample_read(dir, name, &s)) {
				fprintf(stderr, "gpumigctl: %s: the device is gone\n", name);
				return EXIT_NO;
			}
		}
		timestamp(when, sizeof(when));
		ram_job_read(dom, &j);
		at_link = s.rate >= 0 && s.rem >= 0 && link > s.rate;
		eta = at_link ? s.rem / (link - s.rate) : -1;
		/* At the rates auto-converge measured: the rest, then the stop. */
		measured = s.drain > 0 && s.redirty >= 0;
		at_measured = measured && s.drain > s.redirty;
		left = at_measured ? s.rem / (double)(s.drain - s.redirty) : -1;
		downtime = s.drain > 0 ? s.est / (double)s.drain : -1;
		if (j.ok)
			ram_and_device(&j, s.rem, s.redirty, s.est, &all_left, &all_stop);
		if (json) {
			json_begin();
			json_str("timestamp", when);
			json_str("device", name);
			json_str("state", s.state);
			json_count("remaining_bytes", s.rem);
			json_count("dirty_rate_bytes_per_sec", s.rate);
			json_count("stopcopy_estimate_bytes", s.est);
			json_num("link_bytes_per_sec", link);
			if (s.rate >= 0 && s.rem >= 0)
				json_bool("converges_at_link", at_link);
			else
				json_null("converges_at_link");
			json_secs("seconds_left", at_link, eta);
			json_count("drain_rate_bytes_per_sec", s.drain);
			json_count("redirty_rate_bytes_per_sec", s.redirty);
			json_count("throttle_pct", s.thr);
			json_str("converging", s.verdict[0] ? s.verdict : NULL);
			if (measured)
				json_bool("converges_at_measured", at_measured);
			else
				json_null("converges_at_measured");
			json_secs("seconds_left_measured", at_measured, left);
			json_secs("downtime_seconds", downtime >= 0, downtime);
			if (j.ok) {
				json_num("ram_remaining_bytes", j.remaining);
				json_num("ram_bandwidth_bytes_per_sec", j.bandwidth);
				json_num("ram_dirty_bytes_per_sec", j.dirty_rate * j.page);
				json_secs("ram_expected_downtime_seconds", j.downtime_ms >= 0,
					  j.downtime_ms / 1000);
				if (j.bandwidth > 0)
					json_bool("converges_with_ram", all_left >= 0);
				else
					json_null("converges_with_ram");
				json_secs("seconds_left_with_ram", all_left >= 0, all_left);
				json_secs("downtime_seconds_with_ram", all_stop >= 0, all_stop);
			}
			json_end();
			continue;
		}
		if (at_link)
			printf("%s %s %-12s remaining %lld B, dirty %lld B/s, stop-copy %lld B, %.2f s left at %g Mbit/s",
			       when, name, s.state, s.rem, s.rate, s.est, eta, link_mbit);
		else
			printf("%s %s %-12s remaining %lld B, dirty %lld B/s, stop-copy %lld B, never converges at %g Mbit/s",
			       when, name, s.state, s.rem, s.rate, s.est, link_mbit);
		printf("; drain %lld B/s, re-dirty %lld B/s, throttle %lld%%, converging %s",
		       s.drain, s.redirty, s.thr, s.verdict[0] ? s.verdict : "?");
		if (at_measured)
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
	return EXIT_OK;
}
