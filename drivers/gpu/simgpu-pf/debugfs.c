// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf debugfs: /sys/kernel/debug/simgpu-pf/<PF address>/ holds the
 * driver's own test knobs, and /sys/kernel/debug/simgpu-pf/<VF address>/
 * the VF's test knobs and counters, under the names the mdev simgpu uses in
 * /sys/kernel/debug/simgpu/<uuid>/, so one test client drives both.  They
 * are the PF's test registers: reachable from inside a VM, where the
 * hardware's host (QEMU) is not.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "simgpu_pf.h"

static struct dentry *simgpu_pf_debugfs_root;

static const char *const simgpu_pf_knob_names[SIMGPU_PF_NR_KNOBS] = {
	[SIMGPU_PF_KNOB_THROTTLE_US] = "throttle_us",
	[SIMGPU_PF_KNOB_KERNEL_STEP_US] = "kernel_step_us",
	[SIMGPU_PF_KNOB_PREEMPT] = "preempt",
	[SIMGPU_PF_KNOB_ACK_DELAY_MS] = "ack_delay_ms",
	[SIMGPU_PF_KNOB_ACK_DROP] = "ack_drop",
	[SIMGPU_PF_KNOB_DIRTY_RATE] = "dirty_rate",
};

static const char *const simgpu_pf_stat_names[SIMGPU_PF_NR_STATS] = {
	[SIMGPU_PF_STAT_CMDS] = "commands",
	[SIMGPU_PF_STAT_BYTES] = "bytes",
	[SIMGPU_PF_STAT_KERNEL_STEPS] = "kernel_steps",
	[SIMGPU_PF_STAT_FAULTS] = "faults",
	[SIMGPU_PF_STAT_INVALIDATIONS] = "invalidations",
	[SIMGPU_PF_STAT_INVAL_DROPPED] = "invalidations_dropped",
	[SIMGPU_PF_STAT_IRQS] = "irqs",
	[SIMGPU_PF_STAT_TLB_HITS] = "tlb_hits",
	[SIMGPU_PF_STAT_TLB_MISSES] = "tlb_misses",
	[SIMGPU_PF_STAT_DIRTY_PAGES] = "dirty_pages",
};

/*
 * A knob file's data is &vf->knob[k], which holds k: both the knob and,
 * k entries back, the VF it belongs to.
 */
static struct simgpu_pf_vf *simgpu_pf_knob_vf(u8 *knob)
{
	return container_of(knob - *knob, struct simgpu_pf_vf, knob[0]);
}

static int simgpu_pf_knob_get(void *data, u64 *val)
{
	u8 *knob = data;

	*val = simgpu_pf_vf_knob(simgpu_pf_knob_vf(knob), *knob);
	return 0;
}

static int simgpu_pf_knob_set(void *data, u64 val)
{
	u8 *knob = data;

	if (val > U32_MAX)
		return -EINVAL;
	simgpu_pf_vf_set_knob(simgpu_pf_knob_vf(knob), *knob, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(simgpu_pf_knob_fops, simgpu_pf_knob_get, simgpu_pf_knob_set,
			 "%llu\n");

static int simgpu_pf_stats_show(struct seq_file *m, void *v)
{
	struct simgpu_pf_vf *vf = m->private;
	unsigned int s;

	for (s = 0; s < SIMGPU_PF_NR_STATS; s++)
		seq_printf(m, "%s %llu\n", simgpu_pf_stat_names[s], simgpu_pf_vf_stat(vf, s));
	seq_printf(m, "resets %u\n", simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_RESETS));
	mutex_lock(&vf->cmd_lock);
	seq_printf(m, "mailbox_commands %llu\n", vf->mailbox);
	mutex_unlock(&vf->cmd_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(simgpu_pf_stats);

/**
 * simgpu_pf_debugfs_add() - a VF's directory, when SR-IOV enabled it
 * @vf: VF, with its PCI device
 *
 * Context: the PF's lock held.
 */
void simgpu_pf_debugfs_add(struct simgpu_pf_vf *vf)
{
	struct dentry *d = debugfs_create_dir(pci_name(vf->pdev), simgpu_pf_debugfs_root);
	unsigned int k;

	vf->debugfs = d;
	for (k = 0; k < SIMGPU_PF_NR_KNOBS; k++) {
		vf->knob[k] = k;
		debugfs_create_file_unsafe(simgpu_pf_knob_names[k], 0600, d, &vf->knob[k],
					   &simgpu_pf_knob_fops);
	}
	debugfs_create_file("stats", 0400, d, vf, &simgpu_pf_stats_fops);
}

/**
 * simgpu_pf_debugfs_remove() - remove a VF's directory
 * @vf: VF
 */
void simgpu_pf_debugfs_remove(struct simgpu_pf_vf *vf)
{
	debugfs_remove_recursive(vf->debugfs);
	vf->debugfs = NULL;
}

/**
 * simgpu_pf_debugfs_pf_add() - a PF's directory: its driver's test knobs
 * @pf: PF, bound
 *
 * sriov_delay_ms holds SR-IOV configuration open for a while between its
 * checks and the PCI core's enable or disable: a window for race tests.
 */
void simgpu_pf_debugfs_pf_add(struct simgpu_pf *pf)
{
	pf->debugfs = debugfs_create_dir(pci_name(pf->pdev), simgpu_pf_debugfs_root);
	debugfs_create_u32("sriov_delay_ms", 0600, pf->debugfs, &pf->sriov_delay_ms);
}

/**
 * simgpu_pf_debugfs_pf_remove() - remove a PF's directory
 * @pf: PF
 */
void simgpu_pf_debugfs_pf_remove(struct simgpu_pf *pf)
{
	debugfs_remove_recursive(pf->debugfs);
	pf->debugfs = NULL;
}

/** simgpu_pf_debugfs_init() - the module's directory */
void simgpu_pf_debugfs_init(void)
{
	simgpu_pf_debugfs_root = debugfs_create_dir("simgpu-pf", NULL);
}

/** simgpu_pf_debugfs_exit() - remove the module's directory */
void simgpu_pf_debugfs_exit(void)
{
	debugfs_remove_recursive(simgpu_pf_debugfs_root);
}
