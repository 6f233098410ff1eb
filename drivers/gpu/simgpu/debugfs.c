// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu debugfs: /sys/kernel/debug/simgpu/<instance>/ holds the test and
 * demo knobs of struct simgpu_knobs and the device's counters ("stats").
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <gpumig/dirty.h>

#include "simgpu_mdev.h"

static struct dentry *simgpu_debugfs_root;

static int simgpu_stats_show(struct seq_file *m, void *v)
{
	struct simgpu_dev *sdev = m->private;
	struct gpumig_mig_status st;
	struct simgpu_stats s;
	unsigned long present;

	mutex_lock(&sdev->core.lock);
	s = sdev->core.stats;
	present = sdev->vram.present;
	mutex_unlock(&sdev->core.lock);
	gpumig_mig_status(sdev->mig, &st);
	seq_printf(m, "commands %llu\nbytes %llu\nkernel_steps %llu\nfaults %llu\n",
		   s.cmds, s.bytes, s.kernel_steps, s.faults);
	seq_printf(m, "invalidations %llu\ninvalidations_dropped %llu\nirqs %llu\n",
		   s.invalidations, s.inval_dropped, s.irqs);
	seq_printf(m, "tlb_hits %llu\ntlb_misses %llu\ndirty_pages %llu\nvram_pages_backed %lu\n",
		   s.tlb_hits, s.tlb_misses, s.dirty_pages, present);
	seq_printf(m, "dma_log_bytes %zu\ndma_log_reports %llu\ndma_log_report_ns %llu\n",
		   gpumig_dirty_bytes(sdev->dirty), st.log_reports, st.log_report_ns);
	seq_printf(m, "dma_log_bitmap_ns %llu\n", st.log_bitmap_ns);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(simgpu_stats);

/* The host's throttle of the tenant's work (simgpu_core_set_throttle()). */
static int simgpu_share_throttle_get(void *data, u64 *val)
{
	*val = simgpu_core_throttle(data);
	return 0;
}

static int simgpu_share_throttle_set(void *data, u64 val)
{
	if (val > SIMGPU_THROTTLE_MAX)
		return -EINVAL;
	simgpu_core_set_throttle(data, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(simgpu_share_throttle_fops, simgpu_share_throttle_get,
			 simgpu_share_throttle_set, "%llu\n");

/**
 * simgpu_debugfs_add() - an instance's directory
 * @sdev: device
 */
void simgpu_debugfs_add(struct simgpu_dev *sdev)
{
	struct simgpu_knobs *k = &sdev->core.knobs;
	struct dentry *d;

	d = debugfs_create_dir(dev_name(sdev->vdev.dev), simgpu_debugfs_root);
	sdev->debugfs = d;
	debugfs_create_u32("throttle_us", 0600, d, &k->throttle_us);
	debugfs_create_u32("kernel_step_us", 0600, d, &k->kernel_step_us);
	debugfs_create_bool("preempt", 0600, d, &k->preempt);
	debugfs_create_u32("ack_delay_ms", 0600, d, &k->ack_delay_ms);
	debugfs_create_bool("ack_drop", 0600, d, &k->ack_drop);
	debugfs_create_u32("dirty_rate", 0600, d, &k->dirty_rate);
	debugfs_create_file_unsafe("share_throttle", 0600, d, &sdev->core,
				   &simgpu_share_throttle_fops);
	debugfs_create_file("stats", 0400, d, sdev, &simgpu_stats_fops);
}

/**
 * simgpu_debugfs_remove() - remove an instance's directory
 * @sdev: device
 */
void simgpu_debugfs_remove(struct simgpu_dev *sdev)
{
	debugfs_remove_recursive(sdev->debugfs);
}

/** simgpu_debugfs_init() - the module's directory */
void simgpu_debugfs_init(void)
{
	simgpu_debugfs_root = debugfs_create_dir("simgpu", NULL);
}

/** simgpu_debugfs_exit() - remove the module's directory */
void simgpu_debugfs_exit(void)
{
	debugfs_remove_recursive(simgpu_debugfs_root);
}
