/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpumigctl: what its commands share (gpumigctl.c, watch.c, nova.c): the
 * devices in sysfs, and JSON written one object a line (json.c).
 */
#ifndef _GPUMIGCTL_H
#define _GPUMIGCTL_H

#include <stdbool.h>
#include <stddef.h>

#define MDEV_DIR "/sys/bus/mdev/devices"
#define PCI_DIR "/sys/bus/pci/devices"
#define GPUMIG_PCI_DRIVER "gpumig-vfio-pci"

/*
 * The version of the JSON objects' layout ("schema"): raised when a field
 * changes its meaning or type or goes; fields may be added without it.
 */
#define GPUMIGCTL_SCHEMA 1

/* Exit statuses (gpumigctl.8, EXIT STATUS). */
enum {
	EXIT_OK = 0,
	EXIT_NO = 1,		/* the answer is no, or the action failed */
	EXIT_USAGE = 2,		/* bad command line or bad input */
};

extern bool json;

int read_file(const char *path, char *buf, size_t len);
int dev_attr(const char *dir, const char *name, const char *attr, char *buf, size_t len);
const char *dev_dir(const char *name);
void link_name(const char *path, char *buf, size_t len);
void pci_driver(const char *addr, char *buf, size_t len);
int mig_attr(const char *dir, const char *name, const char *file, char *buf, size_t len);
long long mig_number(const char *dir, const char *name, const char *file);

/* json.c: one object a line on stdout, every string escaped. */
void json_begin(void);
void json_end(void);
void json_object(const char *key);
void json_close(void);
void json_str(const char *key, const char *v);
void json_int(const char *key, long long v);
void json_num(const char *key, double v);
void json_bool(const char *key, bool v);
void json_null(const char *key);
void json_descriptor(const char *key, const char *line);
void json_string_value(const char *s);

/* watch.c */
int cmd_watch(const char *name, long interval_ms, long count, double link_mbit,
	      const char *dom);

/* nova.c */
int cmd_probe(const char *addr);
int cmd_nova(bool probe, const char *alias_file);

#endif
