/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small, named helpers for API differences between the kernels gpumig
 * supports (Debian's 6.12 up to 7.3).  Each says which change it covers.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#ifndef _GPUMIG_COMPAT_H
#define _GPUMIG_COMPAT_H

#include <linux/gfp.h>
#include <linux/module.h>

/*
 * 6.13 made MODULE_IMPORT_NS() take a string literal instead of a bare
 * identifier, so neither spelling builds on both.  What both expand to is
 * this modinfo tag, so use it directly: no version check needed.  Symbols
 * exported with EXPORT_SYMBOL_IF_KUNIT() live in this namespace.
 */
#define GPUMIG_IMPORT_KUNIT_NS()	MODULE_INFO(import_ns, "EXPORTED_FOR_KUNIT_TESTING")

/* iova_bitmap_set() and friends live in the IOMMUFD namespace. */
#define GPUMIG_IMPORT_IOMMUFD_NS()	MODULE_INFO(import_ns, "IOMMUFD")

/*
 * 6.14 renamed alloc_pages_bulk_array() (fill the NULL slots of an array
 * with pages; return how many slots hold one) to alloc_pages_bulk(), when
 * the list variant went away.
 */
#ifdef alloc_pages_bulk_array
#define gpumig_alloc_pages_bulk(gfp, nr, pages)	alloc_pages_bulk_array(gfp, nr, pages)
#else
#define gpumig_alloc_pages_bulk(gfp, nr, pages)	alloc_pages_bulk(gfp, nr, pages)
#endif

/*
 * A huge mapping of device memory (a PMD or PUD of pfns, read-only in the
 * page tables as vfio-pci-core's): 6.12 takes a pfn_t, which 6.17 removed
 * with its header: Kbuild defines GPUMIG_HAVE_PFN_T where the header is.
 */
#ifdef GPUMIG_HAVE_PFN_T
#include <linux/pfn_t.h>
#define gpumig_insert_pfn_pmd(vmf, pfn)	vmf_insert_pfn_pmd(vmf, __pfn_to_pfn_t(pfn, PFN_DEV), false)
#define gpumig_insert_pfn_pud(vmf, pfn)	vmf_insert_pfn_pud(vmf, __pfn_to_pfn_t(pfn, PFN_DEV), false)
#else
#define gpumig_insert_pfn_pmd(vmf, pfn)	vmf_insert_pfn_pmd(vmf, pfn, false)
#define gpumig_insert_pfn_pud(vmf, pfn)	vmf_insert_pfn_pud(vmf, pfn, false)
#endif

#endif /* _GPUMIG_COMPAT_H */
