/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

#define KS_ACCEPT_UNIT "kswap-accept.service"

typedef enum ks_unit_state {
    KS_UNIT_ENABLED,  /* starts at boot */
    KS_UNIT_DISABLED, /* installed, not enabled */
    KS_UNIT_MISSING,  /* no such unit file */
} ks_unit_state;

/*
 * Whether a systemd unit starts at boot. On the live host systemctl is-enabled answers (through
 * spawn); under another root only files count: the unit file in etc/systemd/system,
 * lib/systemd/system or usr/lib/systemd/system, and a link to it in an
 * etc/systemd/system/ *.wants/ directory. ret_how names the evidence (free() it).
 */
int ks_unit_state_get(const ks_root *root, const char *unit, ks_unit_state *ret, char **ret_how);
