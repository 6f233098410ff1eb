// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig: a device's reason, the quarantine's or the last refusal's, which
 * reports show.  The state machine (under the state mutex) and a resuming
 * file (under its own lock) both write it, so it has a lock of its own;
 * the producer a resumed stream named shares it.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/spinlock.h>
#include <linux/sprintf.h>
#include <linux/string.h>

#include "engine.h"

/**
 * gpumig_set_why() - record the quarantine reason or the last refusal
 * @m: device
 * @fmt: message format; an empty message clears it
 *
 * Any context that may sleep; the reason has its own lock because the
 * state machine and a resuming file both write it.  Control characters
 * (a hostile stream's type name, say) become '?'.  A poll() on
 * migration/last_error wakes when the reason changed.
 */
void gpumig_set_why(struct gpumig_mig *m, const char *fmt, ...)
{
	char why[GPUMIG_MSG_LEN], *c;
	va_list args;
	bool changed;

	va_start(args, fmt);
	vsnprintf(why, sizeof(why), fmt, args);
	va_end(args);
	/* One line of text, whatever a stream's bytes put in it. */
	for (c = why; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			*c = '?';
	spin_lock(&m->why_lock);
	changed = strcmp(m->why, why);
	strscpy(m->why, why, sizeof(m->why));
	spin_unlock(&m->why_lock);
	if (changed)
		gpumig_notify(m, GPUMIG_NOTIFY_ERROR);
}

/**
 * gpumig_get_why() - copy the reason out
 * @m: device
 * @buf: where
 * @len: its size
 */
void gpumig_get_why(struct gpumig_mig *m, char *buf, size_t len)
{
	spin_lock(&m->why_lock);
	strscpy(buf, m->why, len);
	spin_unlock(&m->why_lock);
}

/**
 * gpumig_set_source() - the producer the stream being resumed named
 * @m: device
 * @producer: e.g. "gpumig/0.1", or "" when not known (yet)
 */
void gpumig_set_source(struct gpumig_mig *m, const char *producer)
{
	spin_lock(&m->why_lock);
	strscpy(m->source, producer, sizeof(m->source));
	spin_unlock(&m->why_lock);
}

/**
 * gpumig_get_source() - copy the last resumed stream's producer out
 * @m: device
 * @buf: where
 * @len: its size
 */
void gpumig_get_source(struct gpumig_mig *m, char *buf, size_t len)
{
	spin_lock(&m->why_lock);
	strscpy(buf, m->source, len);
	spin_unlock(&m->why_lock);
}
