// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu-pf: the mailbox and every service of a VF's migration
 * (simgpu_pf.h; provider.c serves them to gpumig-vfio-pci).  One command
 * at a time per VF, under its command lock: arguments into the VF's
 * window, the opcode, then a wait for STATUS to leave BUSY (the PF's
 * interrupt wakes it).  Data moves by the PF's DMA through the VF's
 * coherent buffer.
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

#define SIMGPU_PF_GRACE_MS	1000	/* beyond a command's own bound */
#define SIMGPU_PF_FLR_MS	100	/* for the device to count a VF's FLR */

const char *const simgpu_pf_profile_names[SIMGPU_PF_NR_PROFILES] = {
	[SIMGPU_PF_PROFILE_64M] = "64M",
	[SIMGPU_PF_PROFILE_256M] = "256M",
	[SIMGPU_PF_PROFILE_1G] = "1G",
};

/**
 * simgpu_pf_read() - a PF register
 * @pf: PF, bound
 * @reg: offset
 *
 * Return: the register.
 */
u32 simgpu_pf_read(struct simgpu_pf *pf, u32 reg)
{
	return readl(pf->regs + reg);
}

/**
 * simgpu_pf_write() - write a PF register
 * @pf: PF, bound
 * @reg: offset
 * @val: value
 */
void simgpu_pf_write(struct simgpu_pf *pf, u32 reg, u32 val)
{
	writel(val, pf->regs + reg);
}

static u32 simgpu_pf_vf_off(struct simgpu_pf_vf *vf, u32 reg)
{
	return SIMGPU_PF_VF_BASE + vf->n * SIMGPU_PF_VF_STRIDE + reg;
}

/**
 * simgpu_pf_vf_reg() - a register of a VF's window
 * @vf: VF, its PF bound
 * @reg: SIMGPU_PF_VF_*
 *
 * Return: the register.
 */
u32 simgpu_pf_vf_reg(struct simgpu_pf_vf *vf, u32 reg)
{
	return simgpu_pf_read(vf->pf, simgpu_pf_vf_off(vf, reg));
}

/**
 * simgpu_pf_vf_set_reg() - write a register of a VF's window
 * @vf: VF, its PF bound
 * @reg: SIMGPU_PF_VF_*
 * @val: value
 */
void simgpu_pf_vf_set_reg(struct simgpu_pf_vf *vf, u32 reg, u32 val)
{
	simgpu_pf_write(vf->pf, simgpu_pf_vf_off(vf, reg), val);
}

/**
 * simgpu_pf_vf_stat() - one of a VF's counters
 * @vf: VF, its PF bound
 * @s: SIMGPU_PF_STAT_*
 *
 * Return: the counter.
 */
u64 simgpu_pf_vf_stat(struct simgpu_pf_vf *vf, unsigned int s)
{
	u32 lo = simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_STAT(s));

	return lo | (u64)simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_STAT(s) + 4) << 32;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_stat);

/**
 * simgpu_pf_vf_knob() - one of a VF's test knobs
 * @vf: VF, its PF bound
 * @k: SIMGPU_PF_KNOB_*
 *
 * Return: the knob's value.
 */
u32 simgpu_pf_vf_knob(struct simgpu_pf_vf *vf, unsigned int k)
{
	return simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_KNOB(k));
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_knob);

/**
 * simgpu_pf_vf_set_knob() - set one of a VF's test knobs
 * @vf: VF, its PF bound
 * @k: SIMGPU_PF_KNOB_*
 * @val: value
 *
 * The knobs are the PF's test registers (lost or late acknowledgments, a
 * kernel that will not preempt, the background writer...), for tests and
 * demos; nothing else needs them.
 */
void simgpu_pf_vf_set_knob(struct simgpu_pf_vf *vf, unsigned int k, u32 val)
{
	simgpu_pf_vf_set_reg(vf, SIMGPU_PF_VF_KNOB(k), val);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_set_knob);

static int simgpu_pf_errno(u32 status)
{
	switch (status) {
	case SIMGPU_PF_OK:
		return 0;
	case SIMGPU_PF_ERR_OPCODE:
		return -EOPNOTSUPP;
	case SIMGPU_PF_ERR_BUSY:
		return -EBUSY;
	case SIMGPU_PF_ERR_TIMEOUT:
		return -ETIMEDOUT;
	case SIMGPU_PF_ERR_DMA:
		return -EIO;
	case SIMGPU_PF_ERR_DISABLED:
		return -ENODEV;
	case SIMGPU_PF_ERR_RESET:
		return -EAGAIN;
	default:	/* ARGS, STATE, ORDER, or nonsense */
		return -EINVAL;
	}
}

static bool simgpu_pf_idle(struct simgpu_pf_vf *vf)
{
	return !(simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_STATUS) & SIMGPU_PF_STATUS_BUSY);
}

/**
 * simgpu_pf_cmd() - run one mailbox command
 * @vf: VF, its command lock held
 * @op: SIMGPU_PF_CMD_*
 * @args: into ARG0..
 * @nargs: how many
 * @bound_ms: how long the device itself may take; a device that does not
 *	answer beyond it is not asked again
 * @result: RESULT, or NULL
 *
 * Return: 0, or the errno of the device's status.
 */
int simgpu_pf_cmd(struct simgpu_pf_vf *vf, u32 op, const u64 *args, unsigned int nargs,
		  unsigned int bound_ms, u64 *result)
{
	unsigned int i;
	long left;

	lockdep_assert_held(&vf->cmd_lock);
	if (vf->gone || !vf->buf)
		return -ENODEV;
	if (vf->resetting)
		return -EAGAIN;
	if (vf->wedged)
		return -EIO;
	for (i = 0; i < nargs; i++) {
		simgpu_pf_vf_set_reg(vf, SIMGPU_PF_VF_ARG0_LO + i * 8, lower_32_bits(args[i]));
		simgpu_pf_vf_set_reg(vf, SIMGPU_PF_VF_ARG0_HI + i * 8, upper_32_bits(args[i]));
	}
	simgpu_pf_vf_set_reg(vf, SIMGPU_PF_VF_CMD, op);
	vf->mailbox++;
	left = wait_event_timeout(vf->wq, simgpu_pf_idle(vf),
				  msecs_to_jiffies(bound_ms + SIMGPU_PF_GRACE_MS));
	if (!left && !simgpu_pf_idle(vf)) {
		vf->wedged = true;
		pci_err(vf->pf->pdev, "VF %u: command %u never completed; mailbox abandoned\n",
			vf->n, op);
		return -EIO;
	}
	if (result)
		*result = simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_RESULT_LO) |
			  (u64)simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_RESULT_HI) << 32;
	return simgpu_pf_errno(simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_STATUS));
}

static int simgpu_pf_simple(struct simgpu_pf_vf *vf, u32 op, u64 arg, unsigned int bound_ms)
{
	int ret;

	mutex_lock(&vf->cmd_lock);
	ret = simgpu_pf_cmd(vf, op, &arg, 1, bound_ms, NULL);
	mutex_unlock(&vf->cmd_lock);
	return ret;
}

/**
 * simgpu_pf_vf_pause() - stop the VF, verified
 * @vf: claimed VF
 * @timeout_ms: how long a drain may take (preemption off)
 *
 * Return: 0 when the VF is stopped; -EBUSY when it did not quiesce in
 * time (it runs as before); -ENODEV, -EIO.
 */
int simgpu_pf_vf_pause(struct simgpu_pf_vf *vf, unsigned int timeout_ms)
{
	return simgpu_pf_simple(vf, SIMGPU_PF_CMD_PAUSE, timeout_ms, timeout_ms);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_pause);

/**
 * simgpu_pf_vf_resume() - let the VF run again
 * @vf: claimed VF
 *
 * Return: 0 or a negative errno.
 */
int simgpu_pf_vf_resume(struct simgpu_pf_vf *vf)
{
	return simgpu_pf_simple(vf, SIMGPU_PF_CMD_RESUME, 0, SIMGPU_PF_CMD_MS);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_resume);

/**
 * simgpu_pf_vf_set_share() - the VF's scheduling share
 * @vf: claimed VF whose PF has SIMGPU_PF_CAP_SHARE
 * @pct: the share of each time slice the VF's work does not get, 0 to
 *	SIMGPU_PF_SHARE_MAX
 * @before: set to the value before, or NULL
 *
 * Return: 0, -EOPNOTSUPP without the capability, -EINVAL, or another
 * negative errno.
 */
int simgpu_pf_vf_set_share(struct simgpu_pf_vf *vf, u32 pct, u32 *before)
{
	u64 arg = pct, res = 0;
	int ret;

	if (!(vf->pf->info.caps & SIMGPU_PF_CAP_SHARE))
		return -EOPNOTSUPP;
	if (pct > SIMGPU_PF_SHARE_MAX)
		return -EINVAL;
	mutex_lock(&vf->cmd_lock);
	ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_SET_SHARE, &arg, 1, SIMGPU_PF_CMD_MS, &res);
	mutex_unlock(&vf->cmd_lock);
	if (!ret && before)
		*before = res;
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_set_share);

/**
 * simgpu_pf_vf_invalidate() - invalidate the VF's translations, acknowledged
 * @vf: claimed VF
 * @timeout_ms: how long the acknowledgment may take
 *
 * Return: 0 once the VF acknowledged; -ETIMEDOUT when it did not.
 */
int simgpu_pf_vf_invalidate(struct simgpu_pf_vf *vf, unsigned int timeout_ms)
{
	return simgpu_pf_simple(vf, SIMGPU_PF_CMD_INVALIDATE, timeout_ms, timeout_ms);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_invalidate);

/**
 * simgpu_pf_vf_save_state() - the paused VF's architectural state
 * @vf: claimed VF, paused
 * @buf: where
 * @len: its size, at least the state's (struct simgpu_pf_vf_info)
 *
 * Return: the state's length, or a negative errno (-EINVAL if not paused).
 */
ssize_t simgpu_pf_vf_save_state(struct simgpu_pf_vf *vf, void *buf, size_t len)
{
	u64 args[2], n;
	int ret;

	mutex_lock(&vf->cmd_lock);
	args[0] = vf->buf_dma;
	args[1] = min_t(size_t, len, SIMGPU_PF_BUF_SIZE);
	ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_SAVE_STATE, args, 2, SIMGPU_PF_CMD_MS, &n);
	if (!ret && (n > len || n > SIMGPU_PF_BUF_SIZE))
		ret = -EIO;
	if (!ret)
		memcpy(buf, vf->buf, n);
	mutex_unlock(&vf->cmd_lock);
	return ret ? ret : n;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_save_state);

/**
 * simgpu_pf_vf_restore_state() - check and install an architectural state
 * @vf: claimed VF, paused
 * @buf: the state (hostile until the device checked it)
 * @len: its length
 *
 * Return: 0, or -EINVAL when the device refused it.
 */
int simgpu_pf_vf_restore_state(struct simgpu_pf_vf *vf, const void *buf, size_t len)
{
	u64 args[2] = { 0, len };
	int ret;

	if (!len || len > SIMGPU_PF_BUF_SIZE)
		return -EINVAL;
	mutex_lock(&vf->cmd_lock);
	args[0] = vf->buf_dma;
	if (vf->buf)
		memcpy(vf->buf, buf, len);
	ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_RESTORE_STATE, args, 2, SIMGPU_PF_CMD_MS, NULL);
	mutex_unlock(&vf->cmd_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_restore_state);

/* @op: VRAM_READ, VRAM_READ_TAKE or VRAM_WRITE */
static int simgpu_pf_vram_xfer(struct simgpu_pf_vf *vf, u64 off, void *buf, u32 len, u32 op)
{
	u32 step = min_t(u32, SIMGPU_PF_BUF_SIZE, vf->pf->info.xfer_max);
	bool read = op != SIMGPU_PF_CMD_VRAM_WRITE;
	int ret = 0;

	mutex_lock(&vf->cmd_lock);
	/* Zeroes in one command where the device clears any range itself. */
	if (!read && !buf && (vf->pf->info.caps & SIMGPU_PF_CAP_ZERO_RANGE))
		step = len;
	while (len && !ret) {
		u32 n = min(len, step);
		u64 args[3] = { off, buf || read ? vf->buf_dma : 0, n };

		if (!read && buf && vf->buf)
			memcpy(vf->buf, buf, n);
		ret = simgpu_pf_cmd(vf, op, args, 3, SIMGPU_PF_CMD_MS, NULL);
		if (!ret && read)
			memcpy(buf, vf->buf, n);
		off += n;
		len -= n;
		if (buf)
			buf += n;
	}
	mutex_unlock(&vf->cmd_lock);
	return ret;
}

/**
 * simgpu_pf_vf_vram_read() - copy VRAM out
 * @vf: claimed VF
 * @off: VRAM offset
 * @buf: where
 * @len: bytes
 *
 * Return: 0, -EINVAL outside VRAM, or another negative errno.
 */
int simgpu_pf_vf_vram_read(struct simgpu_pf_vf *vf, u64 off, void *buf, u32 len)
{
	return simgpu_pf_vram_xfer(vf, off, buf, len, SIMGPU_PF_CMD_VRAM_READ);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_read);

/**
 * simgpu_pf_vf_vram_write() - copy into VRAM
 * @vf: claimed VF
 * @off: VRAM offset
 * @buf: the data, or NULL for zeroes
 * @len: bytes
 *
 * Return: 0, -EINVAL outside VRAM, or another negative errno.
 */
int simgpu_pf_vf_vram_write(struct simgpu_pf_vf *vf, u64 off, const void *buf, u32 len)
{
	return simgpu_pf_vram_xfer(vf, off, (void *)buf, len, SIMGPU_PF_CMD_VRAM_WRITE);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_write);

/**
 * simgpu_pf_vf_vram_write_from() - copy into VRAM from what @fill puts in
 *	the VF's DMA buffer
 * @vf: claimed VF
 * @off: VRAM offset
 * @len: bytes
 * @fill: puts up to its @len bytes into @buf, the buffer the device reads,
 *	and returns how many (fewer ends the copy), or a negative errno
 * @ctx: its argument
 *
 * Saves the copy from a caller's own buffer into the DMA buffer: the
 * caller's source goes there directly (a user's buffer, say).  @fill runs
 * under the VF's command lock, so it must not fault (copy from a user with
 * page faults disabled) and must not call the PF.
 *
 * Return: the bytes written into VRAM, or a negative errno.
 */
ssize_t simgpu_pf_vf_vram_write_from(struct simgpu_pf_vf *vf, u64 off, u32 len,
				     ssize_t (*fill)(void *ctx, void *buf, u32 len), void *ctx)
{
	u32 step = min_t(u32, SIMGPU_PF_BUF_SIZE, vf->pf->info.xfer_max);
	ssize_t n, done = 0;
	int ret = 0;

	mutex_lock(&vf->cmd_lock);
	while (done < len && !ret) {
		u32 want = min_t(u32, len - done, step);
		u64 args[3] = { off + done, vf->buf_dma, 0 };

		if (vf->gone || !vf->buf) {
			ret = -ENODEV;
			break;
		}
		n = fill(ctx, vf->buf, want);
		if (n <= 0 || n > want) {
			ret = n > want ? -EINVAL : n;
			break;
		}
		args[2] = n;
		ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_VRAM_WRITE, args, 3, SIMGPU_PF_CMD_MS, NULL);
		if (!ret)
			done += n;
		if (n < want)
			break;
	}
	mutex_unlock(&vf->cmd_lock);
	return ret ?: done;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_write_from);

/**
 * simgpu_pf_vf_vram_track() - per-block VRAM dirty tracking on or off
 * @vf: claimed VF
 * @on: start (every block dirty) or stop
 *
 * Return: 0 or a negative errno.
 */
int simgpu_pf_vf_vram_track(struct simgpu_pf_vf *vf, bool on)
{
	return simgpu_pf_simple(vf, SIMGPU_PF_CMD_VRAM_TRACK, on, SIMGPU_PF_CMD_MS);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_track);

/**
 * simgpu_pf_vram_bitmap_bytes() - the size of one VRAM bitmap of VRAM_DIRTY
 * @vram_size: the VF's VRAM, bytes
 * @block_shift: its dirty block, log2 bytes
 *
 * VRAM_DIRTY puts two bitmaps (dirty, written) in the VF's DMA buffer.
 *
 * Return: the bytes of one, or 0 when the two do not fit the buffer (VRAM
 * over 64 GiB at 64 KiB blocks): such a VF's dirty bits cannot be read.
 */
VISIBLE_IF_KUNIT u64 simgpu_pf_vram_bitmap_bytes(u64 vram_size, u32 block_shift)
{
	u64 bytes = BITS_TO_LONGS(DIV_ROUND_UP_ULL(vram_size, 1ULL << block_shift)) *
		    sizeof(unsigned long);

	return bytes && bytes <= SIMGPU_PF_BUF_SIZE / 2 ? bytes : 0;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vram_bitmap_bytes);

/* VRAM_DIRTY (OR-ed into @dirty, cleared in the device) or _PEEK (copied). */
static int simgpu_pf_vram_bitmaps(struct simgpu_pf_vf *vf, unsigned long *dirty,
				  unsigned long *populated, bool peek)
{
	u64 args[2], n, blocks, bytes;
	int ret;

	mutex_lock(&vf->cmd_lock);
	if (vf->gone) {
		mutex_unlock(&vf->cmd_lock);
		return -ENODEV;
	}
	blocks = DIV_ROUND_UP(simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_VRAM_LO) |
			      (u64)simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_VRAM_HI) << 32,
			      1ULL << vf->pf->info.block_shift);
	bytes = simgpu_pf_vram_bitmap_bytes(blocks << vf->pf->info.block_shift,
					    vf->pf->info.block_shift);
	if (!bytes) {
		mutex_unlock(&vf->cmd_lock);
		return -E2BIG;
	}
	args[0] = vf->buf_dma;
	args[1] = bytes;
	ret = simgpu_pf_cmd(vf, peek ? SIMGPU_PF_CMD_VRAM_DIRTY_PEEK : SIMGPU_PF_CMD_VRAM_DIRTY,
			    args, 2, SIMGPU_PF_CMD_MS, &n);
	if (!ret && n != blocks)
		ret = -EIO;
	if (!ret) {
		if (peek)
			bitmap_copy(dirty, vf->buf, blocks);
		else
			bitmap_or(dirty, dirty, vf->buf, blocks);
		if (populated)
			bitmap_copy(populated, vf->buf + bytes, blocks);
	}
	mutex_unlock(&vf->cmd_lock);
	return ret;
}

/**
 * simgpu_pf_vf_vram_dirty() - the VRAM blocks written, and cleared
 * @vf: claimed VF
 * @dirty: OR-ed with the blocks written since the last call (by the VF or
 *	through the aperture; none while tracking is off); one bit per block
 *	of VRAM
 * @populated: set to the blocks written since the last scrub (others read
 *	as zeroes); may be NULL
 *
 * Return: 0 or a negative errno.
 */
int simgpu_pf_vf_vram_dirty(struct simgpu_pf_vf *vf, unsigned long *dirty,
			    unsigned long *populated)
{
	return simgpu_pf_vram_bitmaps(vf, dirty, populated, false);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_dirty);

/**
 * simgpu_pf_vf_vram_peek() - the VRAM blocks the device holds dirty
 * @vf: claimed VF whose PF has SIMGPU_PF_CAP_VRAM_COUNT
 * @dirty: set to the dirty blocks, which stay dirty in the device until
 *	taken (simgpu_pf_vf_vram_read_take(), simgpu_pf_vf_vram_take_zero())
 * @populated: set to the blocks written since the last scrub; may be NULL
 *
 * Return: 0, -EOPNOTSUPP without the capability, or another negative errno.
 */
int simgpu_pf_vf_vram_peek(struct simgpu_pf_vf *vf, unsigned long *dirty,
			   unsigned long *populated)
{
	if (!(vf->pf->info.caps & SIMGPU_PF_CAP_VRAM_COUNT))
		return -EOPNOTSUPP;
	return simgpu_pf_vram_bitmaps(vf, dirty, populated, true);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_peek);

/**
 * simgpu_pf_vf_vram_read_take() - copy whole blocks of VRAM out, taken
 * @vf: claimed VF whose PF has SIMGPU_PF_CAP_VRAM_COUNT
 * @off: VRAM offset, block aligned
 * @buf: where
 * @len: bytes, whole blocks
 *
 * The blocks' dirty bits are cleared before the copy: a write racing it
 * leaves its block dirty.
 *
 * Return: 0, -EOPNOTSUPP, -EINVAL, or another negative errno.
 */
int simgpu_pf_vf_vram_read_take(struct simgpu_pf_vf *vf, u64 off, void *buf, u32 len)
{
	u64 mask = (1ULL << vf->pf->info.block_shift) - 1;

	if (!(vf->pf->info.caps & SIMGPU_PF_CAP_VRAM_COUNT))
		return -EOPNOTSUPP;
	if ((off | len) & mask)
		return -EINVAL;
	return simgpu_pf_vram_xfer(vf, off, buf, len, SIMGPU_PF_CMD_VRAM_READ_TAKE);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_read_take);

/**
 * simgpu_pf_vf_vram_take_zero() - take dirty blocks sent as zeroes
 * @vf: claimed VF whose PF has SIMGPU_PF_CAP_VRAM_COUNT
 * @first: first block
 * @n: blocks
 * @taken: how many were dirty and never written since the scrub, now clean
 *	(a block written meanwhile stays dirty: its data is sent later)
 *
 * Return: 0, -EOPNOTSUPP, or another negative errno.
 */
int simgpu_pf_vf_vram_take_zero(struct simgpu_pf_vf *vf, u64 first, u64 n, u64 *taken)
{
	u64 args[2] = { first, n };
	int ret;

	if (!(vf->pf->info.caps & SIMGPU_PF_CAP_VRAM_COUNT))
		return -EOPNOTSUPP;
	mutex_lock(&vf->cmd_lock);
	ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_VRAM_TAKE_ZERO, args, 2, SIMGPU_PF_CMD_MS, taken);
	mutex_unlock(&vf->cmd_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_take_zero);

/**
 * simgpu_pf_vf_vram_count() - the dirty VRAM blocks, counted by the device
 * @vf: claimed VF whose PF has SIMGPU_PF_CAP_VRAM_COUNT
 * @dirty: the blocks dirty now (every block while tracking is off)
 * @written: those of them written since the last scrub
 *
 * One command, without DMA: what it costs does not grow with VRAM.
 *
 * Return: 0, -EOPNOTSUPP, or another negative errno.
 */
int simgpu_pf_vf_vram_count(struct simgpu_pf_vf *vf, u64 *dirty, u64 *written)
{
	u64 res = 0;
	int ret;

	if (!(vf->pf->info.caps & SIMGPU_PF_CAP_VRAM_COUNT))
		return -EOPNOTSUPP;
	mutex_lock(&vf->cmd_lock);
	ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_VRAM_COUNT, NULL, 0, SIMGPU_PF_CMD_MS, &res);
	mutex_unlock(&vf->cmd_lock);
	if (!ret) {
		*dirty = lower_32_bits(res);
		*written = upper_32_bits(res);
		if (*written > *dirty)
			ret = -EIO;
	}
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_vram_count);

/**
 * simgpu_pf_vf_scrub() - VRAM zeroed and the VF reset, for a new tenant
 * @vf: claimed VF
 *
 * Return: 0 or a negative errno.
 */
int simgpu_pf_vf_scrub(struct simgpu_pf_vf *vf)
{
	return simgpu_pf_simple(vf, SIMGPU_PF_CMD_SCRUB, 0, SIMGPU_PF_CMD_MS);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_scrub);

/**
 * simgpu_pf_vf_dma_log_start() - track guest pages the VF writes by DMA
 * @vf: claimed VF
 * @ranges: sorted, apart, page aligned
 * @nr: how many (at most the PF's log_ranges)
 * @page_size: SIMGPU_PF_LOG_PAGE_SIZE
 *
 * Return: 0, -E2BIG over the device's limits, -EINVAL, or another errno.
 */
int simgpu_pf_vf_dma_log_start(struct simgpu_pf_vf *vf,
			       const struct simgpu_pf_iova_range *ranges, unsigned int nr,
			       u64 page_size)
{
	struct simgpu_pf_range *r;
	u64 args[3], pages = 0;
	unsigned int i;
	int ret;

	if (page_size != SIMGPU_PF_LOG_PAGE_SIZE)
		return -EINVAL;
	if (!nr || nr > vf->pf->info.log_ranges ||
	    nr * sizeof(*r) > SIMGPU_PF_BUF_SIZE)
		return -E2BIG;
	for (i = 0; i < nr; i++)
		pages += ranges[i].length / page_size;
	if (pages > vf->pf->info.log_pages)
		return -E2BIG;
	mutex_lock(&vf->cmd_lock);
	r = vf->buf;
	for (i = 0; r && i < nr; i++) {
		r[i].iova = cpu_to_le64(ranges[i].iova);
		r[i].length = cpu_to_le64(ranges[i].length);
	}
	args[0] = vf->buf_dma;
	args[1] = nr;
	args[2] = page_size;
	ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_DMA_LOG_START, args, 3, SIMGPU_PF_CMD_MS, NULL);
	mutex_unlock(&vf->cmd_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_dma_log_start);

/**
 * simgpu_pf_vf_dma_log_stop() - stop tracking guest pages
 * @vf: claimed VF
 *
 * Return: 0 or a negative errno.
 */
int simgpu_pf_vf_dma_log_stop(struct simgpu_pf_vf *vf)
{
	return simgpu_pf_simple(vf, SIMGPU_PF_CMD_DMA_LOG_STOP, 0, SIMGPU_PF_CMD_MS);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_dma_log_stop);

/**
 * simgpu_pf_vf_dma_log_report() - guest pages written, and cleared
 * @vf: claimed VF, logging
 * @iova: start, aligned to SIMGPU_PF_LOG_PAGE_SIZE
 * @len: bytes, a multiple of it
 * @bitmap: bit i set when page @iova + i pages was written since the last
 *	report; only pages inside [@iova, @iova + @len) are cleared
 *
 * Return: 0, -EINVAL when logging is off, or another negative errno.
 */
int simgpu_pf_vf_dma_log_report(struct simgpu_pf_vf *vf, u64 iova, u64 len,
				unsigned long *bitmap)
{
	const u64 chunk = (u64)SIMGPU_PF_BUF_SIZE * BITS_PER_BYTE;	/* pages */
	const u64 pg = SIMGPU_PF_LOG_PAGE_SIZE;	/* the device's, not the host's */
	u64 pages = len / pg, done = 0;
	int ret = 0;

	if (!len || (iova | len) & (pg - 1))
		return -EINVAL;
	mutex_lock(&vf->cmd_lock);
	while (done < pages && !ret) {
		u64 n = min(pages - done, chunk);
		u64 args[4] = { iova + done * pg, n * pg, vf->buf_dma,
				DIV_ROUND_UP(n, BITS_PER_BYTE) };

		ret = simgpu_pf_cmd(vf, SIMGPU_PF_CMD_DMA_LOG_REPORT, args, 4, SIMGPU_PF_CMD_MS,
				    NULL);
		if (!ret) {
			/* @chunk is a multiple of BITS_PER_LONG: whole words. */
			memset((u8 *)vf->buf + args[3], 0,
			       BITS_TO_LONGS(n) * sizeof(long) - args[3]);
			bitmap_copy(bitmap + done / BITS_PER_LONG, vf->buf, n);
		}
		done += n;
		cond_resched();
	}
	mutex_unlock(&vf->cmd_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_dma_log_report);

/**
 * simgpu_pf_vf_info() - the VF's profile and the PF's limits
 * @vf: claimed VF
 * @info: filled
 */
void simgpu_pf_vf_info(struct simgpu_pf_vf *vf, struct simgpu_pf_vf_info *info)
{
	struct simgpu_pf *pf = vf->pf;

	*info = pf->info;
	mutex_lock(&pf->lock);
	info->profile = pf->profile[vf->n];
	mutex_unlock(&pf->lock);
	info->name = simgpu_pf_profile_names[info->profile];
	mutex_lock(&vf->cmd_lock);
	if (!vf->gone) {
		info->vram_size = simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_VRAM_LO) |
				  (u64)simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_VRAM_HI) << 32;
		info->nr_queues = simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_QUEUES);
	}
	mutex_unlock(&vf->cmd_lock);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_info);

/**
 * simgpu_pf_vf_state() - what the PF says of the VF now
 * @vf: claimed VF
 *
 * Return: SIMGPU_PF_VF_STATE_* bits (paused, tracking, logging...), or 0
 * once the PF is gone.
 */
u32 simgpu_pf_vf_state(struct simgpu_pf_vf *vf)
{
	u32 st = 0;

	mutex_lock(&vf->cmd_lock);
	if (!vf->gone)
		st = simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_STATE);
	mutex_unlock(&vf->cmd_lock);
	return st;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_state);

/* A per-VF counter register, or 0 once the PF is gone. */
static u32 simgpu_pf_vf_counter(struct simgpu_pf_vf *vf, u32 reg)
{
	u32 n = 0;

	mutex_lock(&vf->cmd_lock);
	if (!vf->gone)
		n = simgpu_pf_vf_reg(vf, reg);
	mutex_unlock(&vf->cmd_lock);
	return n;
}

/**
 * simgpu_pf_vf_resets() - function-level resets of the VF since it was enabled
 * @vf: claimed VF
 *
 * Return: the count, or 0 once the PF is gone.
 */
u32 simgpu_pf_vf_resets(struct simgpu_pf_vf *vf)
{
	return simgpu_pf_vf_counter(vf, SIMGPU_PF_VF_RESETS);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_resets);

/**
 * simgpu_pf_vf_guest_resets() - resets the VF's user made through the VF's
 *	own control register since it was enabled
 * @vf: claimed VF
 *
 * A migration driver compares it during pre-copy: a guest that started its
 * GPU over has new initial data (VFIO_PRECOPY_INFO_REINIT).
 *
 * Return: the count, or 0 once the PF is gone.
 */
u32 simgpu_pf_vf_guest_resets(struct simgpu_pf_vf *vf)
{
	return simgpu_pf_vf_counter(vf, SIMGPU_PF_VF_GUEST_RESETS);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_guest_resets);

/**
 * simgpu_pf_vf_flr_prepare() - the VF is about to be reset (an FLR)
 * @vf: claimed VF
 *
 * Holds the VF's mailbox until simgpu_pf_vf_flr_done(): a command in
 * flight finishes first (it is bounded), and none starts during the reset.
 * The device ends a command the reset catches (-EAGAIN); this way no
 * service a migration driver asked for is lost to a tenant's FLR.
 */
void simgpu_pf_vf_flr_prepare(struct simgpu_pf_vf *vf)
{
	mutex_lock(&vf->cmd_lock);
	vf->flr_from = vf->gone || !vf->buf ? 0 : simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_RESETS);
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_flr_prepare);

/**
 * simgpu_pf_vf_flr_done() - the VF's reset is over
 * @vf: VF passed to simgpu_pf_vf_flr_prepare()
 *
 * Waits, at most %SIMGPU_PF_FLR_MS, until the device counted the reset (its
 * part of the FLR is over), then lets commands go again.  A mailbox
 * abandoned before is trusted again once idle: the reset ended its
 * command.
 *
 * Return: 0; -ETIMEDOUT when the device did not count the reset; -ENODEV
 * when the PF is gone or the VF disabled.
 */
int simgpu_pf_vf_flr_done(struct simgpu_pf_vf *vf)
{
	unsigned long end = jiffies + msecs_to_jiffies(SIMGPU_PF_FLR_MS);
	int ret = 0;

	lockdep_assert_held(&vf->cmd_lock);
	for (;;) {
		if (vf->gone || !vf->buf) {
			ret = -ENODEV;
			break;
		}
		if (simgpu_pf_vf_reg(vf, SIMGPU_PF_VF_RESETS) != vf->flr_from)
			break;
		if (time_after(jiffies, end)) {
			ret = -ETIMEDOUT;
			break;
		}
		usleep_range(100, 200);
	}
	if (!ret && vf->wedged && simgpu_pf_idle(vf)) {
		vf->wedged = false;
		pci_info(vf->pf->pdev, "VF %u: mailbox trusted again after its reset\n", vf->n);
	}
	mutex_unlock(&vf->cmd_lock);
	if (ret == -ETIMEDOUT)
		pci_warn(vf->pf->pdev, "VF %u: the device did not count its reset in %u ms\n",
			 vf->n, SIMGPU_PF_FLR_MS);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(simgpu_pf_vf_flr_done);
