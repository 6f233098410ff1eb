// SPDX-License-Identifier: GPL-2.0
/*
 * gpumig: the registry of PF providers (include/gpumig/provider.h).  A PF
 * driver registers the calls that serve its VFs; gpumig-vfio-pci asks
 * each provider in turn whether a VF is one of its, and holds the
 * provider's module while it has a VF claimed.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/err.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>

#include <gpumig/provider.h>

static LIST_HEAD(gpumig_providers);
static DEFINE_MUTEX(gpumig_providers_lock);	/* guards gpumig_providers */

/**
 * gpumig_provider_register() - a PF driver can serve its VFs
 * @p: the provider, with @name, @owner and @claim set
 *
 * Return: 0, or -EINVAL for a provider without @claim.
 */
int gpumig_provider_register(struct gpumig_provider *p)
{
	if (!p->claim || !p->name)
		return -EINVAL;
	mutex_lock(&gpumig_providers_lock);
	list_add_tail(&p->node, &gpumig_providers);
	mutex_unlock(&gpumig_providers_lock);
	pr_info("gpumig: %s serves VFs\n", p->name);
	return 0;
}
EXPORT_SYMBOL_GPL(gpumig_provider_register);

/**
 * gpumig_provider_unregister() - the PF driver stops serving VFs
 * @p: the provider
 *
 * No claim is in flight afterwards; VFs claimed already keep their
 * provider's module, so this runs only once they were released.
 */
void gpumig_provider_unregister(struct gpumig_provider *p)
{
	mutex_lock(&gpumig_providers_lock);
	list_del(&p->node);
	mutex_unlock(&gpumig_providers_lock);
}
EXPORT_SYMBOL_GPL(gpumig_provider_unregister);

/**
 * gpumig_vf_claim() - claim a VF from whichever provider serves it
 * @pdev: the VF
 * @ev: what the claimer hears from the provider
 * @priv: their argument
 * @why: on failure, what to tell the operator
 * @len: its size
 *
 * Return: the VF's services, or ERR_PTR: -ENODEV when no provider serves
 * @pdev, or the provider's error.
 */
struct gpumig_vf *gpumig_vf_claim(struct pci_dev *pdev, const struct gpumig_vf_events *ev,
				  void *priv, char *why, size_t len)
{
	struct gpumig_vf *vf = ERR_PTR(-ENODEV);
	struct gpumig_provider *p;

	mutex_lock(&gpumig_providers_lock);
	list_for_each_entry(p, &gpumig_providers, node) {
		if (!try_module_get(p->owner))
			continue;
		snprintf(why, len, "%s refused it", p->name);
		vf = p->claim(pdev, ev, priv, why, len);
		if (!IS_ERR(vf))
			break;
		module_put(p->owner);
		if (PTR_ERR(vf) != -ENODEV)
			break;
	}
	if (PTR_ERR(vf) == -ENODEV)
		snprintf(why, len,
			 "no PF driver serves it (none registered a gpumig provider for it)");
	mutex_unlock(&gpumig_providers_lock);
	if (!IS_ERR(vf))
		vf->owner = p->owner;
	return vf;
}
EXPORT_SYMBOL_GPL(gpumig_vf_claim);

/**
 * gpumig_vf_release() - let go of a claimed VF
 * @vf: claimed VF, or NULL
 */
void gpumig_vf_release(struct gpumig_vf *vf)
{
	struct module *owner;

	if (!vf)
		return;
	owner = vf->owner;
	vf->ops->release(vf);
	module_put(owner);
}
EXPORT_SYMBOL_GPL(gpumig_vf_release);
