/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

/*
 * Files that tell the rest of the system about a trial. The flag var/lib/kswap/trial exists
 * from arming until the trial is settled (pin, rollback, or the operator's acknowledgement of a
 * failure): kswap-accept.service runs only while it exists (ConditionPathExists=). The motd line
 * run/motd.d/kswap is what people see when they log in; /run is emptied at every boot, so accept
 * writes it again from the state journal.
 */
#define KS_TRIAL_FLAG_PATH "var/lib/kswap/trial"
#define KS_MOTD_PATH "run/motd.d/kswap"

/* Creates the flag (content: the trial kernel's release and a newline). */
int ks_trial_flag_set(const ks_root *root, const char *release);
/* Removes the flag; a missing flag is fine. */
int ks_trial_flag_clear(const ks_root *root);
/* Writes line (a newline is added) as the motd status. */
int ks_motd_set(const ks_root *root, const char *line);
/* Removes the motd status; a missing file is fine. */
int ks_motd_clear(const ks_root *root);
