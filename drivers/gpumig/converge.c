// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig device auto-converge: while a pre-copy runs, measure each period
 * what the VMM drained from the saving file and what turned dirty again,
 * throttle the tenant's GPU work in steps while the device re-dirties too
 * much of what is drained (QEMU's rule for guest CPUs, applied to the
 * device), and say whether the device's part converges.
 *
 * Each period (GPUMIG_CONVERGE_PERIOD_MS) the worker takes the state mutex
 * (it tries, and comes back shortly if it is busy: the state machine stops
 * the worker under it), and reads:
 *   drained     bytes read from the saving file in PRE_COPY in the period
 *   busy        the period less the time the file had nothing to give
 *               (from a read that found nothing to the next that found
 *               data): the drain rate is drained / busy
 *   redirtied   what the file owes now, less what it owed when the period
 *               began, plus what was drained: the bytes that became (or
 *               stayed) dirty again.  With a working set the device keeps
 *               rewriting, every block read is dirty again at once, so
 *               "dirty rate above drain rate" cannot be seen from blocks
 *               turning dirty; this can.
 * The rule fires when redirtied > threshold % of drained.  Every second
 * time it fires, with auto_converge on, the throttle steps: to
 * throttle_initial_pct first, then up by throttle_increment_pct, never
 * above throttle_max_pct.  A period where it does not fire holds the
 * throttle and the count, as QEMU's migration_trigger_throttle() keeps
 * dirty_rate_high_cnt: a drain that comes in bursts (a period with a
 * pause in it) does not start the count again.  The throttle ends (0) as
 * the pre-copy ends: stop-copy, cancel, a reset, a close, an error.
 *
 * The verdict over the last GPUMIG_CONVERGE_WINDOW periods: "unknown"
 * before that many periods; "yes" when the file owes nothing, or no more
 * than the last period drained (the rest would go in one period), or what
 * it owes shrank by at least a tenth of what was drained (redirtied <= 90 %
 * of drained); "unknown" when nothing was drained (the VMM is not reading);
 * "no" otherwise.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <kunit/visibility.h>
#include <linux/kstrtox.h>
#include <linux/string.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "engine.h"

#include <trace/events/gpumig.h>

/* When the state mutex is busy, look again this soon. */
#define GPUMIG_CONVERGE_RETRY_MS	20

static const char *const gpumig_verdict_names[] = {
	[GPUMIG_CONVERGE_UNKNOWN] = "unknown",
	[GPUMIG_CONVERGE_YES] = "yes",
	[GPUMIG_CONVERGE_NO] = "no",
};

/**
 * gpumig_converge_defaults() - QEMU's defaults: off, 20/10/99 %, 50 %
 * @cfg: filled
 */
void gpumig_converge_defaults(struct gpumig_converge_cfg *cfg)
{
	cfg->enabled = false;
	cfg->initial_pct = 20;
	cfg->increment_pct = 10;
	cfg->max_pct = 99;
	cfg->threshold_pct = 50;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_converge_defaults);

/**
 * gpumig_converge_begin() - a new pre-copy: nothing measured yet
 * @r: the rule's state
 */
void gpumig_converge_begin(struct gpumig_converge_rule *r)
{
	memset(r, 0, sizeof(*r));
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_converge_begin);

/**
 * gpumig_converge_period() - one period measured: the rule, the throttle
 * @r: the rule's state: the throttle, the periods the rule fired running,
 *	the window of the verdict
 * @cfg: the settings
 * @drained: bytes drained in the period
 * @redirtied: bytes that became dirty again in it
 * @owed: bytes the saving file owes at its end
 *
 * Return: true when the throttle changed (r->throttle holds it).
 */
bool gpumig_converge_period(struct gpumig_converge_rule *r, const struct gpumig_converge_cfg *cfg,
			    u64 drained, u64 redirtied, u64 owed)
{
	u32 old = r->throttle, step;
	bool fires;

	r->owed = owed;
	r->last_drained = drained;
	r->drained[r->next] = drained;
	r->redirtied[r->next] = redirtied;
	r->next = (r->next + 1) % GPUMIG_CONVERGE_WINDOW;
	r->n = min(r->n + 1, (u32)GPUMIG_CONVERGE_WINDOW);

	fires = drained && redirtied > mul_u64_u32_div(drained, cfg->threshold_pct, 100);
	if (!cfg->enabled) {
		r->hits = 0;
		return false;
	}
	if (r->throttle > cfg->max_pct) {
		/* throttle_max_pct lowered during the pre-copy: from this period on */
		r->hits = 0;
		r->throttle = cfg->max_pct;
		return true;
	}
	if (!fires || ++r->hits < 2)
		return false;
	r->hits = 0;
	step = old ? old + cfg->increment_pct : cfg->initial_pct;
	r->throttle = min3(step, cfg->max_pct, (u32)GPUMIG_THROTTLE_MAX);
	return r->throttle != old;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_converge_period);

/**
 * gpumig_converge_verdict() - does the device's part converge?
 * @r: the rule's state
 *
 * Return: GPUMIG_CONVERGE_YES, _NO or _UNKNOWN (see the file's comment).
 */
enum gpumig_converge_verdict gpumig_converge_verdict(const struct gpumig_converge_rule *r)
{
	u64 drained = 0, redirtied = 0;
	u32 i;

	if (r->n < GPUMIG_CONVERGE_WINDOW)
		return GPUMIG_CONVERGE_UNKNOWN;
	if (!r->owed || (r->last_drained && r->owed <= r->last_drained))
		return GPUMIG_CONVERGE_YES;
	for (i = 0; i < GPUMIG_CONVERGE_WINDOW; i++) {
		drained += r->drained[i];
		redirtied += r->redirtied[i];
	}
	if (!drained)
		return GPUMIG_CONVERGE_UNKNOWN;
	return redirtied <= mul_u64_u32_div(drained, 9, 10) ? GPUMIG_CONVERGE_YES :
							      GPUMIG_CONVERGE_NO;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_converge_verdict);

/* Tell the backend; the throttle is what the device has. */
static void gpumig_converge_apply(struct gpumig_mig *m, u32 pct, u64 drain_rate,
				  u64 redirty_rate)
{
	struct gpumig_converge *c = &m->conv;
	int ret;

	lockdep_assert_held(&m->state_mutex);
	ret = m->ops->throttle(m->priv, pct);
	trace_gpumig_throttle(m->vdev->dev, pct, drain_rate, redirty_rate, ret);
	if (ret) {
		dev_warn_ratelimited(m->vdev->dev, "auto-converge: the device refused a throttle of %u%% (%d)\n",
				     pct, ret);
		return;
	}
	WRITE_ONCE(c->throttle, pct);
}

/* The period ended: measure, judge, step. */
static void gpumig_converge_tick(struct gpumig_mig *m)
{
	struct gpumig_converge *c = &m->conv;
	struct gpumig_mig_file *migf = m->saving;
	u64 now = ktime_get_ns(), drained, owed, idle, busy, redirtied, dr, rr;
	s64 grew;

	lockdep_assert_held(&m->state_mutex);
	drained = atomic64_read(&m->stats.precopy_bytes) - c->drained_at;
	mutex_lock(&migf->lock);
	owed = gpumig_file_pending_locked(migf, false);
	idle = migf->idle_ns;
	if (migf->idle_since) {
		idle += now - migf->idle_since;
		migf->idle_since = now;
	}
	migf->idle_ns = 0;
	mutex_unlock(&migf->lock);
	busy = now - c->period_at;
	busy = busy > idle ? busy - idle : 0;
	grew = (s64)owed - (s64)c->owed_at;
	redirtied = grew + (s64)drained > 0 ? grew + drained : 0;
	dr = busy ? mul_u64_u64_div_u64(drained, NSEC_PER_SEC, busy) : 0;
	rr = now > c->period_at ? mul_u64_u64_div_u64(redirtied, NSEC_PER_SEC,
						     now - c->period_at) : 0;
	WRITE_ONCE(c->drain_rate, dr);
	WRITE_ONCE(c->redirty_rate, rr);
	if (gpumig_converge_period(&c->rule, &c->cfg, drained, redirtied, owed))
		gpumig_converge_apply(m, c->rule.throttle, dr, rr);
	WRITE_ONCE(c->verdict, gpumig_converge_verdict(&c->rule));
	c->period_at = now;
	c->drained_at += drained;
	c->owed_at = owed;
}

static void gpumig_converge_work(struct work_struct *work)
{
	struct gpumig_converge *c = container_of(to_delayed_work(work), struct gpumig_converge,
						 work);
	struct gpumig_mig *m = container_of(c, struct gpumig_mig, conv);
	unsigned long next = msecs_to_jiffies(GPUMIG_CONVERGE_PERIOD_MS);

	if (!mutex_trylock(&m->state_mutex)) {
		queue_delayed_work(system_long_wq, &c->work,
				   msecs_to_jiffies(GPUMIG_CONVERGE_RETRY_MS));
		return;
	}
	if (c->active && m->saving) {
		gpumig_converge_tick(m);
		queue_delayed_work(system_long_wq, &c->work, next);
	}
	gpumig_state_mutex_unlock(m);
}

/**
 * gpumig_converge_init() - a device's auto-converge, off
 * @m: device, being created
 */
void gpumig_converge_init(struct gpumig_mig *m)
{
	INIT_DELAYED_WORK(&m->conv.work, gpumig_converge_work);
	gpumig_converge_defaults(&m->conv.cfg);
}

/**
 * gpumig_converge_start() - a pre-copy began: measure from now
 * @m: device, state mutex held, its saving file just made
 */
void gpumig_converge_start(struct gpumig_mig *m)
{
	struct gpumig_converge *c = &m->conv;

	lockdep_assert_held(&m->state_mutex);
	gpumig_converge_begin(&c->rule);
	c->active = true;
	c->period_at = ktime_get_ns();
	c->drained_at = atomic64_read(&m->stats.precopy_bytes);
	c->owed_at = gpumig_file_pending(m->saving, false);
	WRITE_ONCE(c->drain_rate, 0);
	WRITE_ONCE(c->redirty_rate, 0);
	WRITE_ONCE(c->verdict, GPUMIG_CONVERGE_UNKNOWN);
	queue_delayed_work(system_long_wq, &c->work,
			   msecs_to_jiffies(GPUMIG_CONVERGE_PERIOD_MS));
}

/**
 * gpumig_converge_stop() - the pre-copy ended: the throttle goes at once
 * @m: device, state mutex held
 *
 * The worker is not waited for (it takes the state mutex): it finds the
 * measurement over and stops.  The rates and the verdict of the last
 * period stay readable.
 */
void gpumig_converge_stop(struct gpumig_mig *m)
{
	struct gpumig_converge *c = &m->conv;

	lockdep_assert_held(&m->state_mutex);
	if (!c->active)
		return;
	c->active = false;
	cancel_delayed_work(&c->work);
	if (READ_ONCE(c->throttle))
		gpumig_converge_apply(m, 0, READ_ONCE(c->drain_rate), READ_ONCE(c->redirty_rate));
	c->rule.throttle = 0;
}

/**
 * gpumig_converge_exit() - the device goes: no worker left behind
 * @m: device, its files disabled (gpumig_converge_stop() ran)
 */
void gpumig_converge_exit(struct gpumig_mig *m)
{
	cancel_delayed_work_sync(&m->conv.work);
}

/* ---- migration/: the settings and what the device says ------------------ */

/**
 * gpumig_converge_show() - the show of auto-converge's files
 * @m: device
 * @which: enum gpumig_converge_file
 * @buf: sysfs buffer
 *
 * Return: bytes written.
 */
ssize_t gpumig_converge_show(struct gpumig_mig *m, unsigned int which, char *buf)
{
	struct gpumig_converge *c = &m->conv;
	struct gpumig_converge_cfg *cfg = &c->cfg;

	/* Lockless, every value one word: a reader costs the device nothing. */
	switch (which) {
	case GPUMIG_CONV_ENABLED:
		return sysfs_emit(buf, "%u\n", READ_ONCE(cfg->enabled));
	case GPUMIG_CONV_INITIAL:
		return sysfs_emit(buf, "%u\n", READ_ONCE(cfg->initial_pct));
	case GPUMIG_CONV_INCREMENT:
		return sysfs_emit(buf, "%u\n", READ_ONCE(cfg->increment_pct));
	case GPUMIG_CONV_MAX:
		return sysfs_emit(buf, "%u\n", READ_ONCE(cfg->max_pct));
	case GPUMIG_CONV_THRESHOLD:
		return sysfs_emit(buf, "%u\n", READ_ONCE(cfg->threshold_pct));
	case GPUMIG_CONV_DRAIN_RATE:
		return sysfs_emit(buf, "%llu\n", READ_ONCE(c->drain_rate));
	case GPUMIG_CONV_REDIRTY_RATE:
		return sysfs_emit(buf, "%llu\n", READ_ONCE(c->redirty_rate));
	case GPUMIG_CONV_THROTTLE:
		return sysfs_emit(buf, "%u\n", READ_ONCE(c->throttle));
	case GPUMIG_CONV_VERDICT:
		return sysfs_emit(buf, "%s\n", gpumig_verdict_names[READ_ONCE(c->verdict)]);
	}
	return -EINVAL;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_converge_show);

/**
 * gpumig_converge_store() - set one of auto-converge's settings
 * @m: device
 * @which: enum gpumig_converge_file, a setting
 * @buf: what was written: 0 or 1 (auto_converge; also y/n, on/off), or a
 *	percentage (1 to 99; the threshold 1 to 100), a newline at most
 *
 * Takes effect at the next period, also during a migration (as QEMU's
 * migrate-set-parameters).  Turning auto-converge off during a pre-copy
 * keeps the throttle reached until the pre-copy ends; it no longer steps.
 *
 * Return: 0; -EINVAL for another value; -EOPNOTSUPP to turn auto-converge
 * on for a device that cannot be throttled.
 */
int gpumig_converge_store(struct gpumig_mig *m, unsigned int which, const char *buf)
{
	struct gpumig_converge_cfg *cfg = &m->conv.cfg;
	u32 v, lo = 1, hi = GPUMIG_THROTTLE_MAX;
	bool on;

	if (which == GPUMIG_CONV_ENABLED) {
		/* kstrtobool() takes "1anything": only the words themselves here */
		if (sysfs_streq(buf, "1") || sysfs_streq(buf, "y") || sysfs_streq(buf, "on"))
			on = true;
		else if (sysfs_streq(buf, "0") || sysfs_streq(buf, "n") || sysfs_streq(buf, "off"))
			on = false;
		else
			return -EINVAL;
		if (on && !m->ops->throttle)
			return -EOPNOTSUPP;
		gpumig_state_mutex_lock(m);
		WRITE_ONCE(cfg->enabled, on);
		gpumig_state_mutex_unlock(m);
		return 0;
	}
	if (which == GPUMIG_CONV_THRESHOLD)
		hi = 100;
	if (which > GPUMIG_CONV_THRESHOLD || kstrtou32(buf, 10, &v) || v < lo || v > hi)
		return -EINVAL;
	gpumig_state_mutex_lock(m);
	switch (which) {
	case GPUMIG_CONV_INITIAL:
		WRITE_ONCE(cfg->initial_pct, v);
		break;
	case GPUMIG_CONV_INCREMENT:
		WRITE_ONCE(cfg->increment_pct, v);
		break;
	case GPUMIG_CONV_MAX:
		WRITE_ONCE(cfg->max_pct, v);
		break;
	case GPUMIG_CONV_THRESHOLD:
		WRITE_ONCE(cfg->threshold_pct, v);
		break;
	}
	gpumig_state_mutex_unlock(m);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(gpumig_converge_store);
