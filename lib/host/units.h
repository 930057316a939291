/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

#define KS_ACCEPT_UNIT "kswap-accept.service"

typedef enum ks_unit_state {
    KS_UNIT_ENABLED,  /* starts at every boot */
    KS_UNIT_DISABLED, /* installed, not enabled */
    KS_UNIT_MISSING,  /* no such unit file */
    KS_UNIT_MASKED,   /* linked to /dev/null (or empty): never starts */
    KS_UNIT_RUNTIME,  /* wanted only from /run: starts now, gone after the next reboot */
} ks_unit_state;

/*
 * Whether a system unit starts at boot, from the files systemd reads at boot (the same on the
 * live host and under another root; no program runs): the unit's file is the first of its name
 * in systemd's system unit search path (/etc/systemd/system.control, /run/systemd/
 * system.control, /run/systemd/transient, /run/systemd/generator.early, /etc/systemd/system,
 * /etc/systemd/system.attached, /run/systemd/system, /run/systemd/system.attached,
 * /run/systemd/generator, /usr/local/lib/systemd/system, /usr/lib/systemd/system,
 * /lib/systemd/system, /run/systemd/generator.late); a symlink to /dev/null or an empty file
 * there masks it. It starts at boot when a symlink named after it, or after one of its aliases
 * (a symlink in a search path directory pointing to a file of the unit's name), is in a
 * *.wants/, *.requires/ or *.upholds/ directory of the search path; links under /run only
 * (other than a generator's) are gone after a reboot. ret_how names the evidence (free() it).
 */
int ks_unit_state_get(const ks_root *root, const char *unit, ks_unit_state *ret, char **ret_how);
