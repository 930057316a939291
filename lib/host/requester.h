/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

/*
 * Who asked for what kswap does now, for the swap history (lib/engine/history.h), in this
 * order:
 *   1. SUDO_USER, as sudo sets it for the user who ran sudo;
 *   2. the audit login uid (proc/self/loginuid inside the root; 4294967295 means none, as
 *      for services started by PID 1), named from the root's etc/passwd, else "uid N";
 *   3. in a systemd service (INVOCATION_ID set, as systemd sets it for every unit it starts,
 *      systemd-run's included), the unit's name from proc/self/cgroup, e.g.
 *      "kswap-accept.service";
 *   4. the effective user, named from etc/passwd, else "uid N".
 * Always gives a name (-ENOMEM only).
 */
int ks_requester(const ks_root *root, char **ret);

/* The name of uid in passwd text (the file's format, passwd(5)); NULL when not found. */
char *ks_passwd_name(const char *text, size_t len, unsigned long uid);
/* The service (or scope) unit a cgroup file (cgroup v1 or v2) names, e.g. "kswap-accept.service";
 * NULL when none. */
char *ks_cgroup_unit(const char *text, size_t len);
