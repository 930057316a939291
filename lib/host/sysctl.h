/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/root.h"

/*
 * The value the sysctl files give key at boot, read in systemd-sysctl's order (sysctl.d(5):
 * etc, run, usr/local/lib, usr/lib, lib; same file name hides later directories; files sorted by
 * name; last assignment wins). Keys with '/' or '.' separators are the same key. *ret_value and
 * *ret_file (path inside the root) are NULL when no file sets it.
 */
int ks_sysctl_configured(const ks_root *root, const char *key, char **ret_value, char **ret_file);
/*
 * Every key the sysctl files assign explicitly (globs are not expanded), in sysctl's dotted form
 * ("net.ipv4.ip_forward", "net.ipv4.conf.eth0/1.rp_filter"), each once, in file order. An empty
 * list when no file sets anything.
 */
int ks_sysctl_configured_keys(const ks_root *root, char ***ret);
/* The live value from proc/sys/... (whitespace normalised). -ENOENT when absent. */
int ks_sysctl_live(const ks_root *root, const char *key, char **ret_value);
/*
 * Whether module is listed in modules-load.d(5) files (etc, run, usr/local/lib, usr/lib, lib)
 * or Debian's etc/modules. *ret_file names the file.
 */
int ks_modules_load_lists(const ks_root *root, const char *module, bool *ret, char **ret_file);
