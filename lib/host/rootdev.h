/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

/*
 * The modules the device that holds "/" needs (from proc/self/mountinfo and sysfs
 * sys/dev/block/MAJ:MIN): dm_mod/dm_crypt and md_mod/raidN for device-mapper and md devices,
 * then through their slaves the disks' drivers, walking up to the bus (e.g. "virtio_blk",
 * "virtio_pci"; driver names, e.g. "sd" for sd_mod, where sysfs has no module link), and the
 * root file system type ("ext4"). ret_drivers may be empty (NULL) when sysfs tells nothing.
 */
int ks_root_device_drivers(const ks_root *root, char ***ret_drivers, char **ret_fs_type);
