/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace events of the gpumig migration engine: every migration state
 * transition, the stop's quiesce and invalidation with their durations,
 * reads of the saving fd with what remains, refused streams, quarantine
 * and its lifting, and DMA logging.  Documentation/gpumig/tracing.rst.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM gpumig

#if !defined(_TRACE_GPUMIG_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_GPUMIG_H

#include <linux/device.h>
#include <linux/tracepoint.h>
#include <linux/vfio.h>

#define gpumig_show_state(s)						\
	__print_symbolic(s,						\
		{ VFIO_DEVICE_STATE_ERROR, "ERROR" },			\
		{ VFIO_DEVICE_STATE_STOP, "STOP" },			\
		{ VFIO_DEVICE_STATE_RUNNING, "RUNNING" },		\
		{ VFIO_DEVICE_STATE_STOP_COPY, "STOP_COPY" },		\
		{ VFIO_DEVICE_STATE_RESUMING, "RESUMING" },		\
		{ VFIO_DEVICE_STATE_RUNNING_P2P, "RUNNING_P2P" },	\
		{ VFIO_DEVICE_STATE_PRE_COPY, "PRE_COPY" },		\
		{ VFIO_DEVICE_STATE_PRE_COPY_P2P, "PRE_COPY_P2P" })

/* One step of the state machine (an arc the VFIO core chose), done or not. */
TRACE_EVENT(gpumig_state,
	TP_PROTO(struct device *dev, u32 from, u32 to, int ret),
	TP_ARGS(dev, from, to, ret),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(u32, from)
		__field(u32, to)
		__field(int, ret)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->from = from;
		__entry->to = to;
		__entry->ret = ret;
	),
	TP_printk("%s %s -> %s ret=%d", __get_str(dev),
		  gpumig_show_state(__entry->from), gpumig_show_state(__entry->to),
		  __entry->ret)
);

/* The device stopped taking work (or did not): how long it took. */
DECLARE_EVENT_CLASS(gpumig_timed,
	TP_PROTO(struct device *dev, u64 ns, int ret),
	TP_ARGS(dev, ns, ret),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(u64, ns)
		__field(int, ret)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->ns = ns;
		__entry->ret = ret;
	),
	TP_printk("%s us=%llu ret=%d", __get_str(dev), __entry->ns / 1000, __entry->ret)
);

DEFINE_EVENT(gpumig_timed, gpumig_quiesce,
	TP_PROTO(struct device *dev, u64 ns, int ret),
	TP_ARGS(dev, ns, ret));

/* Translations invalidated and the device's acknowledgment waited for. */
DEFINE_EVENT(gpumig_timed, gpumig_invalidate,
	TP_PROTO(struct device *dev, u64 ns, int ret),
	TP_ARGS(dev, ns, ret));

/*
 * Auto-converge stepped the tenant's throttle (or ended it, pct=0), with
 * the period's drain and re-dirty rates that decided it (bytes/s).
 */
TRACE_EVENT(gpumig_throttle,
	TP_PROTO(struct device *dev, u32 pct, u64 drain_rate, u64 redirty_rate, int ret),
	TP_ARGS(dev, pct, drain_rate, redirty_rate, ret),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(u32, pct)
		__field(u64, drain_rate)
		__field(u64, redirty_rate)
		__field(int, ret)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->pct = pct;
		__entry->drain_rate = drain_rate;
		__entry->redirty_rate = redirty_rate;
		__entry->ret = ret;
	),
	TP_printk("%s pct=%u drain=%llu redirty=%llu ret=%d", __get_str(dev), __entry->pct,
		  __entry->drain_rate, __entry->redirty_rate, __entry->ret)
);

/* A read() of the saving fd: bytes returned, what the fd still holds. */
TRACE_EVENT(gpumig_save_read,
	TP_PROTO(struct device *dev, bool stop_copy, s64 bytes, u64 remaining),
	TP_ARGS(dev, stop_copy, bytes, remaining),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(bool, stop_copy)
		__field(s64, bytes)
		__field(u64, remaining)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->stop_copy = stop_copy;
		__entry->bytes = bytes;
		__entry->remaining = remaining;
	),
	TP_printk("%s %s bytes=%lld remaining=%llu", __get_str(dev),
		  __entry->stop_copy ? "stop-copy" : "pre-copy", __entry->bytes,
		  __entry->remaining)
);

/*
 * One VRAM chunk or zero range of a stream, saved or restored: its offset
 * and length, whether it is zero, and the crc32_le(~0) of its data
 * (computed only while the event is on; 0 for zero).  Two devices' traces
 * show where a block's contents changed on its way.
 */
TRACE_EVENT(gpumig_vram,
	TP_PROTO(struct device *dev, bool save, u64 offset, u64 len, bool zero, u32 crc),
	TP_ARGS(dev, save, offset, len, zero, crc),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(bool, save)
		__field(bool, zero)
		__field(u64, offset)
		__field(u64, len)
		__field(u32, crc)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->save = save;
		__entry->zero = zero;
		__entry->offset = offset;
		__entry->len = len;
		__entry->crc = crc;
	),
	TP_printk("%s %s offset=0x%llx len=0x%llx %s crc=%08x", __get_str(dev),
		  __entry->save ? "save" : "load", __entry->offset, __entry->len,
		  __entry->zero ? "zero" : "data", __entry->crc)
);

/* A destination refused a stream: the error and the parser's reason. */
TRACE_EVENT(gpumig_stream_refused,
	TP_PROTO(struct device *dev, int err, const char *why),
	TP_ARGS(dev, err, why),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(int, err)
		__string(why, why)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->err = err;
		__assign_str(why);
	),
	TP_printk("%s err=%d %s", __get_str(dev), __entry->err, __get_str(why))
);

/* The device failed its teardown check and will not be reused. */
TRACE_EVENT(gpumig_quarantine,
	TP_PROTO(struct device *dev, const char *why),
	TP_ARGS(dev, why),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__string(why, why)
	),
	TP_fast_assign(
		__assign_str(dev);
		__assign_str(why);
	),
	TP_printk("%s %s", __get_str(dev), __get_str(why))
);

/* A quarantine ended with its device (removed, or the engine unloaded). */
TRACE_EVENT(gpumig_quarantine_end,
	TP_PROTO(struct device *dev, const char *how, const char *why),
	TP_ARGS(dev, how, why),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__string(how, how)
		__string(why, why)
	),
	TP_fast_assign(
		__assign_str(dev);
		__assign_str(how);
		__assign_str(why);
	),
	TP_printk("%s %s: %s", __get_str(dev), __get_str(how), __get_str(why))
);

/* An operator asked to lift a quarantine: 0 when it was lifted. */
TRACE_EVENT(gpumig_unquarantine,
	TP_PROTO(struct device *dev, int ret),
	TP_ARGS(dev, ret),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(int, ret)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->ret = ret;
	),
	TP_printk("%s ret=%d", __get_str(dev), __entry->ret)
);

/* DMA logging of guest memory started (ranges, page size used) or not. */
TRACE_EVENT(gpumig_dma_log_start,
	TP_PROTO(struct device *dev, u32 nranges, u64 page_size, int ret),
	TP_ARGS(dev, nranges, page_size, ret),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(u32, nranges)
		__field(u64, page_size)
		__field(int, ret)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->nranges = nranges;
		__entry->page_size = page_size;
		__entry->ret = ret;
	),
	TP_printk("%s ranges=%u page_size=%llu ret=%d", __get_str(dev),
		  __entry->nranges, __entry->page_size, __entry->ret)
);

TRACE_EVENT(gpumig_dma_log_stop,
	TP_PROTO(struct device *dev),
	TP_ARGS(dev),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
	),
	TP_fast_assign(
		__assign_str(dev);
	),
	TP_printk("%s", __get_str(dev))
);

/* A report: the range asked for and the dirty bytes reported in it. */
TRACE_EVENT(gpumig_dma_log_report,
	TP_PROTO(struct device *dev, u64 iova, u64 length, u64 dirty, int ret),
	TP_ARGS(dev, iova, length, dirty, ret),
	TP_STRUCT__entry(
		__string(dev, dev_name(dev))
		__field(u64, iova)
		__field(u64, length)
		__field(u64, dirty)
		__field(int, ret)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->iova = iova;
		__entry->length = length;
		__entry->dirty = dirty;
		__entry->ret = ret;
	),
	TP_printk("%s iova=0x%llx length=0x%llx dirty_bytes=%llu ret=%d", __get_str(dev),
		  __entry->iova, __entry->length, __entry->dirty, __entry->ret)
);

/*
 * A post-copy session (Documentation/gpumig/postcopy.rst) began or ended:
 * the device (the session may outlive it), its side, the session's state
 * (active, done, abandoned), the blocks still owed, and once abandoned how
 * many were lost and the first of them (-1: none).
 */
TRACE_EVENT(gpumig_postcopy,
	TP_PROTO(const char *dev, bool source, const char *state, u64 owed, u64 lost,
		 s64 first_lost),
	TP_ARGS(dev, source, state, owed, lost, first_lost),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(bool, source)
		__string(state, state)
		__field(u64, owed)
		__field(u64, lost)
		__field(s64, first_lost)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->source = source;
		__assign_str(state);
		__entry->owed = owed;
		__entry->lost = lost;
		__entry->first_lost = first_lost;
	),
	TP_printk("%s %s %s owed=%llu lost=%llu first_lost=%lld", __get_str(dev),
		  __entry->source ? "source" : "destination", __get_str(state), __entry->owed,
		  __entry->lost, __entry->first_lost)
);

#endif /* _TRACE_GPUMIG_H */

#include <trace/define_trace.h>
