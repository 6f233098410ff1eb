// SPDX-License-Identifier: GPL-2.0
/*
 * simgpu's emulated PCI config space: IDs, one 32-bit memory BAR (BAR0),
 * an MSI capability with a 64-bit address, no INTx.  Writable: the
 * command register's memory, bus-master and INTx-disable bits, BAR0's
 * address, the interrupt line, and MSI enable, address and data;
 * everything else is read-only.
 *
 * Copyright (C) 2026 The gpumig authors
 */
#include <linux/pci_regs.h>

#include "simgpu_mdev.h"

#define SIMGPU_MSI_CAP		0x40

static void simgpu_cfg_put16(u8 *c, u32 off, u16 val)
{
	*(__le16 *)&c[off] = cpu_to_le16(val);
}

static void simgpu_cfg_put32(u8 *c, u32 off, u32 val)
{
	*(__le32 *)&c[off] = cpu_to_le32(val);
}

/**
 * simgpu_cfg_init() - config space at reset
 * @sdev: device
 */
void simgpu_cfg_init(struct simgpu_dev *sdev)
{
	u8 *c = sdev->config;

	mutex_lock(&sdev->cfg_lock);
	memset(c, 0, SIMGPU_CFG_SIZE);
	simgpu_cfg_put16(c, PCI_VENDOR_ID, SIMGPU_PCI_VENDOR_ID);
	simgpu_cfg_put16(c, PCI_DEVICE_ID, SIMGPU_PCI_DEVICE_ID);
	simgpu_cfg_put16(c, PCI_STATUS, PCI_STATUS_CAP_LIST);
	c[PCI_REVISION_ID] = SIMGPU_ABI_VERSION;
	c[PCI_CLASS_PROG] = SIMGPU_PCI_CLASS & 0xff;
	simgpu_cfg_put16(c, PCI_CLASS_DEVICE, SIMGPU_PCI_CLASS >> 8);
	simgpu_cfg_put32(c, PCI_BASE_ADDRESS_0, PCI_BASE_ADDRESS_SPACE_MEMORY |
			 PCI_BASE_ADDRESS_MEM_TYPE_32);
	simgpu_cfg_put16(c, PCI_SUBSYSTEM_VENDOR_ID, SIMGPU_PCI_VENDOR_ID);
	simgpu_cfg_put16(c, PCI_SUBSYSTEM_ID, SIMGPU_PCI_DEVICE_ID);
	c[PCI_CAPABILITY_LIST] = SIMGPU_MSI_CAP;
	c[PCI_INTERRUPT_PIN] = 0;	/* MSI only */
	c[SIMGPU_MSI_CAP + PCI_CAP_LIST_ID] = PCI_CAP_ID_MSI;
	c[SIMGPU_MSI_CAP + PCI_CAP_LIST_NEXT] = 0;
	simgpu_cfg_put16(c, SIMGPU_MSI_CAP + PCI_MSI_FLAGS, PCI_MSI_FLAGS_64BIT);
	mutex_unlock(&sdev->cfg_lock);
}

/**
 * simgpu_cfg_read() - read one naturally aligned 1, 2 or 4 byte field
 * @sdev: device
 * @off: offset, below SIMGPU_CFG_SIZE
 * @len: 1, 2 or 4
 *
 * Return: the field, in CPU order.
 */
u32 simgpu_cfg_read(struct simgpu_dev *sdev, u32 off, u32 len)
{
	__le32 val = 0;

	mutex_lock(&sdev->cfg_lock);
	memcpy(&val, &sdev->config[off], len);
	mutex_unlock(&sdev->cfg_lock);
	return le32_to_cpu(val);
}

static void simgpu_cfg_write_msi(u8 *c, u32 off, u32 val, u32 len)
{
	u32 msi = SIMGPU_MSI_CAP;

	if (off == msi + PCI_MSI_FLAGS && len >= 2) {
		u16 f = le16_to_cpu(*(__le16 *)&c[off]);

		f = (f & ~PCI_MSI_FLAGS_ENABLE) | (val & PCI_MSI_FLAGS_ENABLE);
		simgpu_cfg_put16(c, off, f);
	} else if (off == msi + PCI_MSI_ADDRESS_LO && len == 4) {
		simgpu_cfg_put32(c, off, val & ~3U);
	} else if (off == msi + PCI_MSI_ADDRESS_HI && len == 4) {
		simgpu_cfg_put32(c, off, val);
	} else if (off == msi + PCI_MSI_DATA_64 && len >= 2) {
		simgpu_cfg_put16(c, off, val);
	}
}

/**
 * simgpu_cfg_write() - write one naturally aligned 1, 2 or 4 byte field
 * @sdev: device
 * @off: offset, below SIMGPU_CFG_SIZE
 * @val: value, CPU order
 * @len: 1, 2 or 4
 *
 * Writes to read-only fields are ignored, as hardware does.
 */
void simgpu_cfg_write(struct simgpu_dev *sdev, u32 off, u32 val, u32 len)
{
	u8 *c = sdev->config;

	mutex_lock(&sdev->cfg_lock);
	switch (off) {
	case PCI_COMMAND:
		if (len >= 2)
			simgpu_cfg_put16(c, off, val & (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER |
							PCI_COMMAND_INTX_DISABLE));
		break;
	case PCI_BASE_ADDRESS_0:
		if (len == 4)
			simgpu_cfg_put32(c, off, (val & ~(SIMGPU_BAR0_SIZE - 1)) |
					 PCI_BASE_ADDRESS_SPACE_MEMORY |
					 PCI_BASE_ADDRESS_MEM_TYPE_32);
		break;
	case PCI_INTERRUPT_LINE:
		c[off] = val;
		break;
	default:
		simgpu_cfg_write_msi(c, off, val, len);
		break;
	}
	mutex_unlock(&sdev->cfg_lock);
}
