// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig: quarantine records.  A device whose teardown could not be
 * verified refuses tenants until an operator releases it.  The record
 * belongs to the device (the struct device a front end names), not to its
 * binding: an unbind and a bind of the driver (libvirt's managed hostdevs
 * do both at every domain stop and start) find it again, and so does a
 * front end without the engine's state machine (a function
 * gpumig-vfio-pci assigns without migration).  A record ends only when
 * the operator releases it or the device itself goes; the reason is then
 * logged, never dropped without a word.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/device.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "engine.h"

#include <trace/events/gpumig.h>

/**
 * struct gpumig_qrec - one quarantined device
 * @node: in gpumig_qrecs
 * @dev: the device, with a reference
 * @why: the reason, as reports show it after "quarantined: "
 */
struct gpumig_qrec {
	struct list_head node;
	struct device *dev;
	char why[GPUMIG_MSG_LEN];
};

static LIST_HEAD(gpumig_qrecs);
static DEFINE_MUTEX(gpumig_qlock);	/* guards gpumig_qrecs and each @why */

static struct gpumig_qrec *gpumig_qrec_find(struct device *dev)
{
	struct gpumig_qrec *q;

	lockdep_assert_held(&gpumig_qlock);
	list_for_each_entry(q, &gpumig_qrecs, node)
		if (q->dev == dev)
			return q;
	return NULL;
}

/**
 * gpumig_quarantine_set() - quarantine a device, or give its reason anew
 * @dev: the device (the VFIO device's parent: a PCI function, an mdev)
 * @why: the reason
 *
 * Return: 0, or -ENOMEM (the device is then quarantined only as long as
 * its binding lasts, and the log says so).
 */
int gpumig_quarantine_set(struct device *dev, const char *why)
{
	struct gpumig_qrec *q;

	mutex_lock(&gpumig_qlock);
	q = gpumig_qrec_find(dev);
	if (!q) {
		/* uncharged: a record outlives the fd and the binding that made it */
		q = kzalloc(sizeof(*q), GFP_KERNEL);
		if (!q) {
			mutex_unlock(&gpumig_qlock);
			dev_err(dev, "quarantine not recorded (no memory): a rebind would end it\n");
			return -ENOMEM;
		}
		q->dev = get_device(dev);
		list_add(&q->node, &gpumig_qrecs);
	}
	strscpy(q->why, why, sizeof(q->why));
	mutex_unlock(&gpumig_qlock);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_quarantine_set);

/**
 * gpumig_quarantine_get() - is a device quarantined, and why?
 * @dev: the device
 * @why: the reason, if quarantined; may be NULL
 * @len: its size
 *
 * Return: true when quarantined.
 */
bool gpumig_quarantine_get(struct device *dev, char *why, size_t len)
{
	struct gpumig_qrec *q;
	bool found;

	mutex_lock(&gpumig_qlock);
	q = gpumig_qrec_find(dev);
	found = q;
	if (q && why)
		strscpy(why, q->why, len);
	mutex_unlock(&gpumig_qlock);
	return found;
}
EXPORT_SYMBOL_GPL(gpumig_quarantine_get);

/**
 * gpumig_quarantine_note() - add to a quarantined device's reason
 * @dev: the device
 * @what: what else happened ("its PF was reset: ...")
 *
 * The reason keeps what made the quarantine first: "<why>; then <what>".
 */
void gpumig_quarantine_note(struct device *dev, const char *what)
{
	struct gpumig_qrec *q;

	mutex_lock(&gpumig_qlock);
	q = gpumig_qrec_find(dev);
	if (q) {
		size_t n = strlen(q->why);

		snprintf(q->why + n, sizeof(q->why) - n, "; then %s", what);
	}
	mutex_unlock(&gpumig_qlock);
}

/* Take @dev's record off the list: the caller frees it, or NULL. */
static struct gpumig_qrec *gpumig_qrec_take(struct device *dev)
{
	struct gpumig_qrec *q;

	mutex_lock(&gpumig_qlock);
	q = gpumig_qrec_find(dev);
	if (q)
		list_del(&q->node);
	mutex_unlock(&gpumig_qlock);
	return q;
}

static void gpumig_qrec_free(struct gpumig_qrec *q)
{
	put_device(q->dev);
	kfree(q);
}

/**
 * gpumig_quarantine_clear() - the operator released a device
 * @dev: the device
 *
 * Return: 0, or -EINVAL when it was not quarantined.
 */
int gpumig_quarantine_clear(struct device *dev)
{
	struct gpumig_qrec *q = gpumig_qrec_take(dev);

	if (!q)
		return -EINVAL;
	gpumig_qrec_free(q);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_quarantine_clear);

/**
 * gpumig_quarantine_gone() - a device is going away for good
 * @dev: the device
 * @how: what ends it ("removed")
 *
 * For a front end whose device ends (an mdev's removal); PCI functions
 * are followed through the PCI bus.  A quarantine ends with the device;
 * its reason goes to the kernel log and the trace.
 */
void gpumig_quarantine_gone(struct device *dev, const char *how)
{
	struct gpumig_qrec *q = gpumig_qrec_take(dev);

	if (!q)
		return;
	dev_warn(dev, "%s while quarantined: %s\n", how, q->why);
	trace_gpumig_quarantine_end(dev, how, q->why);
	gpumig_qrec_free(q);
}
EXPORT_SYMBOL_GPL(gpumig_quarantine_gone);

static int gpumig_pci_notify(struct notifier_block *nb, unsigned long action, void *data)
{
	if (action == BUS_NOTIFY_DEL_DEVICE)
		gpumig_quarantine_gone(data, "removed (SR-IOV disabled or hot-unplugged)");
	return NOTIFY_DONE;
}

static struct notifier_block gpumig_pci_nb = {
	.notifier_call = gpumig_pci_notify,
};

/** gpumig_quarantine_init() - follow PCI functions' removal */
int gpumig_quarantine_init(void)
{
	return bus_register_notifier(&pci_bus_type, &gpumig_pci_nb);
}

/** gpumig_quarantine_exit() - the engine goes: every record ends, logged */
void gpumig_quarantine_exit(void)
{
	struct gpumig_qrec *q, *t;

	bus_unregister_notifier(&pci_bus_type, &gpumig_pci_nb);
	list_for_each_entry_safe(q, t, &gpumig_qrecs, node) {
		dev_warn(q->dev, "gpumig unloaded while quarantined: %s\n", q->why);
		list_del(&q->node);
		gpumig_qrec_free(q);
	}
}
