// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf: a VF's life as its PF's driver sees it.  A claimer's claim
 * and release (simgpu_pf.h), and the driver's side: SR-IOV enabling and
 * disabling the VF (its DMA buffer), the PF's reset and removal (every
 * service fails from then on, cmds.c).
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <kunit/visibility.h>
#include "simgpu_pf.h"

/* ---- claims --------------------------------------------------------------- */

/**
 * simgpu_pf_vf_get() - claim a VF's services
 * @vf_pdev: a simgpu-pci VF whose PF is bound to this driver
 * @ops: callbacks, or NULL
 * @priv: their argument
 *
 * One claimer at a time.  While claimed, SR-IOV cannot be disabled.  When
 * the PF's driver goes away, @ops->pf_gone runs under the PF's lock: it
 * may not claim or release a VF.
 *
 * Return: the VF, -ENODEV when it is not a simgpu-pci VF of a bound PF,
 * -EBUSY when someone else claimed it, or -EAGAIN while its PF is
 * enabling or disabling SR-IOV.
 */
struct simgpu_pf_vf *simgpu_pf_vf_get(struct pci_dev *vf_pdev,
				      const struct gpumig_vf_events *ops, void *priv)
{
	static const struct gpumig_vf_events none;
	struct simgpu_pf_vf *vf = ERR_PTR(-ENODEV);
	struct simgpu_pf *pf;
	int id;

	if (!vf_pdev->is_virtfn)
		return ERR_PTR(-ENODEV);
	pf = pci_iov_get_pf_drvdata(vf_pdev, &simgpu_pf_driver);
	if (IS_ERR(pf))
		return ERR_PTR(-ENODEV);
	id = pci_iov_vf_id(vf_pdev);
	mutex_lock(&pf->lock);
	if (pf->sriov_changing) {
		vf = ERR_PTR(-EAGAIN);
	} else if (id >= 0 && id < pf->num_vfs && pf->vf[id].pdev == vf_pdev &&
		   !READ_ONCE(pf->vf[id].gone)) {
		vf = &pf->vf[id];
		if (vf->ops) {
			vf = ERR_PTR(-EBUSY);
		} else {
			vf->ops = ops ? ops : &none;
			vf->priv = priv;
			kref_get(&pf->ref);
		}
	}
	mutex_unlock(&pf->lock);
	return vf;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_get);

/**
 * simgpu_pf_vf_put() - release a claim
 * @vf: claimed VF; may be used after its PF's driver went away
 */
void simgpu_pf_vf_put(struct simgpu_pf_vf *vf)
{
	struct simgpu_pf *pf = vf->pf;

	mutex_lock(&pf->lock);
	vf->ops = NULL;
	vf->priv = NULL;
	mutex_unlock(&pf->lock);
	kref_put(&pf->ref, simgpu_pf_free);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_put);

/* ---- the driver's side ------------------------------------------------- */

/**
 * simgpu_pf_vf_enable() - SR-IOV enabled the VF: its buffer and device
 * @vf: VF
 * @pdev: its PCI device
 *
 * Context: the PF's lock held.
 * Return: 0 or -ENOMEM.
 */
int simgpu_pf_vf_enable(struct simgpu_pf_vf *vf, struct pci_dev *pdev)
{
	void *buf;

	lockdep_assert_held(&vf->pf->lock);
	buf = dma_alloc_coherent(&vf->pf->pdev->dev, SIMGPU_PF_BUF_SIZE, &vf->buf_dma,
				 GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	mutex_lock(&vf->cmd_lock);
	vf->buf = buf;
	vf->wedged = false;
	mutex_unlock(&vf->cmd_lock);
	vf->pdev = pdev;
	return 0;
}

/**
 * simgpu_pf_vf_disable() - SR-IOV is disabling the VF
 * @vf: VF, unclaimed
 *
 * Context: the PF's lock held.
 */
void simgpu_pf_vf_disable(struct simgpu_pf_vf *vf)
{
	lockdep_assert_held(&vf->pf->lock);
	mutex_lock(&vf->cmd_lock);
	if (vf->buf)
		dma_free_coherent(&vf->pf->pdev->dev, SIMGPU_PF_BUF_SIZE, vf->buf, vf->buf_dma);
	vf->buf = NULL;
	mutex_unlock(&vf->cmd_lock);
	vf->pdev = NULL;
}

/**
 * simgpu_pf_vf_set_resetting() - the PF's reset begins or ends
 * @vf: VF
 * @on: begins (services fail with -EAGAIN) or ends
 *
 * Waits for a command in flight to finish (it is bounded): none may see
 * the device's registers change under it.  A mailbox abandoned before is
 * trusted again after a reset.
 */
void simgpu_pf_vf_set_resetting(struct simgpu_pf_vf *vf, bool on)
{
	mutex_lock(&vf->cmd_lock);
	if (on)
		simgpu_pf_vf_hold_lost(vf, "the PF is being reset", false);
	vf->resetting = on;
	if (!on)
		vf->wedged = false;
	mutex_unlock(&vf->cmd_lock);
}

/**
 * simgpu_pf_vf_set_gone() - the PF's driver is going: no more services
 * @vf: VF
 *
 * Waits for a command in flight to finish (it is bounded).
 */
void simgpu_pf_vf_set_gone(struct simgpu_pf_vf *vf)
{
	mutex_lock(&vf->cmd_lock);
	simgpu_pf_vf_hold_lost(vf, "the PF's driver is going away", true);
	WRITE_ONCE(vf->gone, true);	/* simgpu_pf_vf_get() reads it under the PF's lock */
	mutex_unlock(&vf->cmd_lock);
}
