/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simgpu's device model: commands (core.c), registers (regs.c), a host's
 * controls (host.c), the GPU MMU (mmu.c) and the architectural state
 * (arch.c).  It knows nothing of VFIO
 * or of where it runs: guest memory, VRAM, the interrupt and the
 * processor that runs it are its host's (struct simgpu_env_ops); in the
 * kernel that is simgpu_host.h.
 *
 * The model reaches guest memory and the interrupt line only through
 * struct simgpu_env_ops, so that the VFIO front end (vfio_dma_rw and an
 * eventfd) and a KUnit fake (an array and a counter) can stand behind it.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _SIMGPU_H
#define _SIMGPU_H

#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <uapi/linux/simgpu.h>

/**
 * enum simgpu_run_state - what the command processor may do
 * @SIMGPU_RUN: everything
 * @SIMGPU_DRAIN: finish commands already started, start none (quiesce with
 *	preemption off)
 * @SIMGPU_STOPPED: nothing but host invalidation requests; in-flight
 *	commands stay where their last step left them
 */
enum simgpu_run_state {
	SIMGPU_RUN,
	SIMGPU_DRAIN,
	SIMGPU_STOPPED,
};

/* What this model implements: the CAPS register and the compat descriptor. */
#define SIMGPU_CAPS			(SIMGPU_CAP_PREEMPT | SIMGPU_CAP_DIRTY_WORKLOAD)
/* Layout version and size of the architectural state (arch.c). */
#define SIMGPU_ARCH_VERSION		1
#define SIMGPU_ARCH_SIZE		912

/* Not in the uapi header: the host could not back a VRAM page. */
#define SIMGPU_ERR_INTERNAL		10

#define SIMGPU_TLB_ENTRIES		64
#define SIMGPU_XFER_STEP		(64 * 1024)	/* FILL/COPY bytes per step */

/*
 * The host's throttle of the tenant (auto-converge): the tenant's work (its
 * queues and the background writer) runs in the first (100 - throttle) %
 * of each time slice, nothing of it in the rest.
 */
#define SIMGPU_SLICE_NS			10000000ULL	/* 10 ms */
#define SIMGPU_THROTTLE_MAX		99

/**
 * struct simgpu_env_ops - how the model reaches the outside world
 * @dma_rw: read or write guest memory at a device address (IOVA); returns
 *	0 or a negative errno when the address is not mapped
 * @vram_rw: read or write device memory at a VRAM offset; returns 0,
 *	-ERANGE outside VRAM, or another negative errno (the host could not
 *	back it).  Called with the core's lock held.
 * @raise_irq: signal the device's interrupt
 * @kick: work arrived (a doorbell, a request): run the processor soon
 * @stepped: a processor pass ended; whoever waits on the device may look
 * @guest_reset: the guest reset the device through its control register
 *	(optional): its state starts over, which a migration in pre-copy
 *	may want to know
 * @demand: optional: work waits on VRAM block @blk, which has not arrived
 *	yet (simgpu_core_set_absent()); called once each time a queue or the
 *	background writer starts to wait on it
 *
 * Every op may be called with the core's lock held and must not sleep on
 * it; @dma_rw and @vram_rw may sleep otherwise.
 */
struct simgpu_env_ops {
	int (*dma_rw)(void *ctx, u64 iova, void *buf, size_t len, bool write);
	int (*vram_rw)(void *ctx, u64 off, void *buf, size_t len, bool write);
	void (*raise_irq)(void *ctx);
	void (*kick)(void *ctx);
	void (*stepped)(void *ctx);
	void (*guest_reset)(void *ctx);
	void (*demand)(void *ctx, u64 blk);
};

/**
 * struct simgpu_cmd_state - a decoded command and how far it got
 * @op: SIMGPU_OP_*
 * @flags: SIMGPU_CMD_F_*
 * @args: operands
 * @progress: bytes (FILL, COPY) or iterations (KERNEL) completed
 */
struct simgpu_cmd_state {
	u32 op;
	u32 flags;
	u64 args[6];
	u64 progress;
};

/**
 * struct simgpu_queue - one command ring
 * @ring: IOVA of the ring
 * @size: entries
 * @head: commands consumed (free running)
 * @tail: commands submitted (free running), written by the doorbell
 * @ctrl: SIMGPU_QCTRL_ENABLE
 * @error: SIMGPU_ERR_* that halted the queue, or 0
 * @fence: last fence value written
 * @active: @cur holds a command in progress
 * @cur: the command in progress
 * @ready_at: the next kernel step may not run before this (kernel_step_us)
 * @wait_blk: the absent VRAM block the current step waits for, or -1
 */
struct simgpu_queue {
	u64 ring;
	u32 size;
	u32 head;
	u32 tail;
	u32 ctrl;
	u32 error;
	u64 fence;
	bool active;
	struct simgpu_cmd_state cur;
	ktime_t ready_at;
	s64 wait_blk;
};

/**
 * struct simgpu_absent - device memory that has not arrived (absent.c)
 * @absent: one bit per block of 1 << @shift bytes that is still owed, or
 *	NULL when none ever was
 * @lost_blk: one bit per block that will never arrive (or part of it)
 * @lost: one bit per page (SIMGPU_PAGE_SIZE) of those that is still lost,
 *	made at the first loss (not in the stop: 512 KiB for 16 GiB); NULL
 *	when that failed, and then a lost block stays lost, whole, until a
 *	reset
 * @nr_blocks: bits of @absent and @lost_blk
 * @shift: log2 of the block
 * @nr_absent: bits set in @absent
 * @nr_lost: blocks in @lost_blk
 * @waits: times work started to wait on an absent block
 * @lost_hits: accesses refused with SIMGPU_ERR_VRAM_LOST
 */
struct simgpu_absent {
	unsigned long *absent;
	unsigned long *lost_blk;
	unsigned long *lost;
	u64 nr_blocks;
	u32 shift;
	u64 nr_absent;
	u64 nr_lost;
	u64 waits;
	u64 lost_hits;
};

/* What a step returns when it must wait for an absent block (never a queue's error). */
#define SIMGPU_STEP_WAIT		0xffffffffU

struct simgpu_tlb_entry {
	u64 vpn;
	u64 pte;
	bool valid;
};

/**
 * struct simgpu_knobs - test and demo controls (debugfs)
 * @throttle_us: pause of the command processor after each pass
 * @kernel_step_us: minimum time between two iterations of one kernel
 * @preempt: kernels yield to other queues between iterations; when off, a
 *	started kernel runs to completion before anything else
 * @ack_delay_ms: delay before an invalidation is acknowledged
 * @ack_drop: invalidation requests are lost (never acknowledged)
 * @dirty_rate: pages per second the background workload writes
 */
struct simgpu_knobs {
	u32 throttle_us;
	u32 kernel_step_us;
	bool preempt;
	u32 ack_delay_ms;
	bool ack_drop;
	u32 dirty_rate;
};

/**
 * struct simgpu_stats - counters (debugfs "stats")
 * @cmds: commands completed
 * @bytes: bytes moved by FILL, COPY and KERNEL
 * @kernel_steps: kernel iterations run
 * @faults: errors that halted a queue or the workload
 * @invalidations: invalidations acknowledged
 * @inval_dropped: invalidation requests lost to the ack_drop knob
 * @irqs: interrupts raised
 * @tlb_hits: translations served from the IOTLB
 * @tlb_misses: page-table walks
 * @dirty_pages: pages written by the background workload
 */
struct simgpu_stats {
	u64 cmds;
	u64 bytes;
	u64 kernel_steps;
	u64 faults;
	u64 invalidations;
	u64 inval_dropped;
	u64 irqs;
	u64 tlb_hits;
	u64 tlb_misses;
	u64 dirty_pages;
};

/**
 * struct simgpu_core - one simulated GPU function
 * @env: outside world (fixed)
 * @ctx: argument for @env (fixed)
 * @nr_queues: queues this instance has (fixed)
 * @lock: guards every field from @control to @host_inval_at; held by the
 *	command processor for one step at a time and by every register
 *	access, so a register write is never seen half-applied by a step
 * @control: SIMGPU_REG_CONTROL
 * @int_status: SIMGPU_REG_INT_STATUS
 * @int_mask: SIMGPU_REG_INT_MASK
 * @err_code: first error since the last reset/clear
 * @err_queue: queue of @err_code
 * @err_addr: address of @err_code
 * @pt_root: IOVA of the root page table
 * @inval_req: last requested invalidation sequence number
 * @inval_ack: last acknowledged sequence number
 * @inval_pending: a request waits for the processor
 * @inval_at: when the pending request may be acknowledged
 * @dirty_base: GPU VA of the background workload's region
 * @dirty_pages: its size in pages
 * @dirty_count: pages written
 * @dirty_start: the tenant's run clock (simgpu_run_clock()) when the
 *	workload (re)started: it is paced in the device's run time, so a
 *	throttle slows it as it slows the queues
 * @dirty_done: pages written since @dirty_start
 * @q: queues (@q[i].active is also read racily by wait conditions, which
 *	recheck under @lock)
 * @tlb: translation cache
 * @vram_size: device memory, bytes (fixed)
 * @scratch: kernel buffer, SIMGPU_MAX_KERNEL_BUF bytes (little endian words)
 * @bounce: copy buffer, SIMGPU_XFER_STEP bytes
 * @rr: next queue to look at
 * @fault_addr: address of the last failed access (for error registers)
 * @stats: counters
 * @run_state: what the processor may do (migration quiesce); also read
 *	racily by wait conditions, which recheck under @lock
 * @host_inval_seq: last host (migration) invalidation requested
 * @host_inval_ack: last host invalidation acknowledged (also read racily
 *	by the waiter's condition, rechecked under @lock)
 * @host_inval_pending: a host request waits for the processor
 * @host_inval_at: when it may be acknowledged
 * @throttle_pct: the host's throttle of the tenant's work, 0..%SIMGPU_THROTTLE_MAX
 *	(simgpu_core_set_throttle())
 * @share_from: when @throttle_pct last changed: the time slices count from it
 * @share_base: the tenant's run clock at @share_from, ns
 * @knobs: test controls; no lock: each is one word, written by debugfs
 *	and read with READ_ONCE()
 */
struct simgpu_core {
	const struct simgpu_env_ops *env;
	void *ctx;
	u32 nr_queues;

	struct mutex lock;		/* see @lock above */
	u32 control;
	u32 int_status;
	u32 int_mask;
	u32 err_code;
	u32 err_queue;
	u64 err_addr;
	u64 pt_root;
	u32 inval_req;
	u32 inval_ack;
	bool inval_pending;
	ktime_t inval_at;
	u64 dirty_base;
	u32 dirty_pages;
	u32 dirty_count;
	u64 dirty_start;
	u64 dirty_done;
	struct simgpu_queue q[SIMGPU_MAX_QUEUES];
	struct simgpu_tlb_entry tlb[SIMGPU_TLB_ENTRIES];
	u64 vram_size;
	__le32 *scratch;
	u8 *bounce;
	u32 rr;
	u64 fault_addr;

	struct simgpu_stats stats;
	enum simgpu_run_state run_state;
	u32 host_inval_seq;
	u32 host_inval_ack;
	bool host_inval_pending;
	ktime_t host_inval_at;
	u32 throttle_pct;
	ktime_t share_from;
	u64 share_base;
	struct simgpu_absent ab;
	u64 wait_blk;
	s64 workload_wait;

	struct simgpu_knobs knobs;
};

/* core.c: the command processor, interrupts, reset */
int simgpu_core_init(struct simgpu_core *core, const struct simgpu_env_ops *env,
		     void *ctx, u32 nr_queues, u64 vram_size);
void simgpu_core_destroy(struct simgpu_core *core);
void simgpu_core_reset(struct simgpu_core *core);
void simgpu_core_clear_stats(struct simgpu_core *core);
void simgpu_core_lost(struct simgpu_core *core);
bool simgpu_core_run(struct simgpu_core *core, unsigned int budget);
bool simgpu_core_idle(struct simgpu_core *core);
bool simgpu_core_timed_work(struct simgpu_core *core);
u64 simgpu_share_ns(u64 elapsed, u32 pct);
bool simgpu_share_on(u64 elapsed, u32 pct);
u64 simgpu_run_clock(struct simgpu_core *core, ktime_t now);
u32 simgpu_cmd_check(const struct simgpu_cmd_state *c);
u32 simgpu_kernel_word(u32 w, u32 key, u32 iteration);
/* for regs.c and host.c: the core's lock held */
bool simgpu_queue_has_work(struct simgpu_core *core, struct simgpu_queue *q);
void simgpu_reset_locked(struct simgpu_core *core);
void simgpu_drain_done(struct simgpu_core *core);

/* regs.c: the register file */
u32 simgpu_mmio_read(struct simgpu_core *core, u32 offset);
void simgpu_mmio_write(struct simgpu_core *core, u32 offset, u32 val);

/* host.c: what a host drives for migration */
bool simgpu_core_pause(struct simgpu_core *core, bool drain);
bool simgpu_core_paused(struct simgpu_core *core);
bool simgpu_core_paused_racy(struct simgpu_core *core);
void simgpu_core_resume(struct simgpu_core *core);
u32 simgpu_core_host_inval(struct simgpu_core *core);
bool simgpu_core_host_inval_acked_racy(struct simgpu_core *core, u32 seq);
bool simgpu_core_host_inval_end(struct simgpu_core *core, u32 seq);
void simgpu_core_set_throttle(struct simgpu_core *core, u32 pct);
u32 simgpu_core_throttle(struct simgpu_core *core);

/* mmu.c */
u32 simgpu_mmu_translate(struct simgpu_core *core, u64 va, bool write, u64 *pte);
void simgpu_mmu_flush(struct simgpu_core *core);
bool simgpu_tlb_empty(struct simgpu_core *core);
u32 simgpu_mem_access(struct simgpu_core *core, u64 va, void *buf, size_t len,
		      bool write);

/* absent.c: VRAM a migration still owes (post-copy) */
int simgpu_core_set_absent(struct simgpu_core *core, const unsigned long *map,
			   u64 nr_blocks, u32 shift);
int simgpu_core_block_arrived(struct simgpu_core *core, u64 blk);
int simgpu_core_block_lost(struct simgpu_core *core, u64 blk);
void simgpu_core_absent_clear(struct simgpu_core *core);
u64 simgpu_core_absent_count(struct simgpu_core *core);
int simgpu_absent_arrive_check(struct simgpu_core *core, u64 blk);
void simgpu_absent_arrived_locked(struct simgpu_core *core, u64 blk);
u32 simgpu_absent_probe(struct simgpu_core *core, u64 va, size_t len, bool write);
void simgpu_absent_written(struct simgpu_core *core, u64 addr, size_t len);
void simgpu_absent_wake_locked(struct simgpu_core *core, s64 blk);
void simgpu_absent_reset_locked(struct simgpu_core *core);
void simgpu_absent_free(struct simgpu_core *core);

/* arch.c */
size_t simgpu_arch_size(void);
ssize_t simgpu_arch_save(struct simgpu_core *core, void *buf, size_t len);
int simgpu_arch_restore(struct simgpu_core *core, const void *buf, size_t len);

#endif /* _SIMGPU_H */
