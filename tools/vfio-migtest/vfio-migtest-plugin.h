/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vfio-migtest's device plug-in interface.
 *
 * vfio-migtest checks a device's VFIO migration uAPI knowing nothing of
 * the device.  Some checks need the device to do something only its own
 * driver knows how to ask for: hold recognisable state (to prove that a
 * destination holds what the source held), write guest memory by DMA (to
 * prove that DMA logging reports pages the device really dirtied), be
 * re-initialised by its guest (VFIO_PRECOPY_INFO_REINIT) or lose its state
 * under the VMM (VFIO_DEVICE_STATE_ERROR).  A plug-in is a shared object,
 * loaded with "vfio-migtest -p PLUGIN", that exports one
 * struct vfio_migtest_plugin named vfio_migtest_plugin.  Every operation
 * but attach and detach may be NULL; the checks that need a missing one
 * are skipped and say so.
 *
 * Before a check that needs it, the tool calls attach() on a freshly
 * opened device (RUNNING; memory decoding and bus mastering are the
 * plug-in's to enable), and detach() before it closes or reopens it.
 * Between the two the plug-in owns the device's registers and the IOVA
 * range [VFIO_MIGTEST_PLUGIN_IOVA, +VFIO_MIGTEST_PLUGIN_IOVA_LEN) for its
 * own guest memory; the tool's logged range (for dirty()) lies below it.
 * A destination is attached afresh after it was resumed: a plug-in lays
 * its guest memory out the same way every time, so what the restored
 * registers point at is there, as a VMM's migrated guest memory would be.
 *
 * This header is the whole contract: a plug-in links nothing of the tool.
 * Building one:  cc -shared -fPIC -o mydev.so mydev.c
 */
#ifndef _VFIO_MIGTEST_PLUGIN_H
#define _VFIO_MIGTEST_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define VFIO_MIGTEST_PLUGIN_ABI		1
#define VFIO_MIGTEST_PLUGIN_IOVA	0x40000000ULL	/* 1 GiB */
#define VFIO_MIGTEST_PLUGIN_IOVA_LEN	0x40000000ULL

/* What the tool lends a plug-in for one opened device. */
struct vfio_migtest_host {
	const char *name;	/* PCI address or mdev UUID */
	int device_fd;		/* the VFIO device fd */
	/*
	 * Map @len bytes at @vaddr (page aligned, the plug-in's memory) for
	 * the device's DMA at @iova, read and write: 0 or -errno.  Unmapped
	 * by unmap() or when the device is closed.
	 */
	int (*map)(const struct vfio_migtest_host *h, uint64_t iova, void *vaddr, uint64_t len);
	int (*unmap)(const struct vfio_migtest_host *h, uint64_t iova, uint64_t len);
	void *tool;		/* the tool's own */
};

/*
 * Operations return 0 on success and -errno on failure (-EOPNOTSUPP: the
 * device cannot do it, and the check is skipped); verify() returns 1 when
 * the device does not hold what it should, with why in @why.
 */
struct vfio_migtest_plugin {
	unsigned int abi;	/* VFIO_MIGTEST_PLUGIN_ABI */
	const char *name;
	/* A device the tool opened; returns the plug-in's state, or NULL. */
	void *(*attach)(const struct vfio_migtest_host *h);
	void (*detach)(void *dev);
	/*
	 * Put state derived from @seed in the running device (memory,
	 * registers, whatever its stream carries).  Called again with another
	 * seed, it replaces all of it.
	 */
	int (*load)(void *dev, uint32_t seed);
	/*
	 * The running device (just resumed from a stream, attached afresh)
	 * holds what load(@seed) put in the device the stream came from.
	 */
	int (*verify)(void *dev, uint32_t seed, char *why, size_t len);
	/* The running device writes guest memory [@iova, +@len) by DMA (mapped). */
	int (*dirty)(void *dev, uint64_t iova, uint64_t len);
	/* The running device is re-initialised as its own guest would do it. */
	int (*reinit)(void *dev);
	/*
	 * The device loses its state under the VMM (its hardware is reset or
	 * fails): the migration uAPI should then report ERROR.
	 */
	int (*lose)(void *dev);
};

#endif
