/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/host/tcpsample.h"

/*
 * kswap's metrics in the Prometheus text exposition format (version 0.0.4), for node_exporter's
 * textfile collector. Pure: a struct in, text out; lib/engine/metrics-file.h collects the values
 * and writes the file. Every family has its # HELP and # TYPE lines; a family without a value
 * (no trial judged yet) is left out whole, never written as NaN.
 */
typedef struct ks_metrics {
    /* Labels of kswap_info; NULL is the empty value. */
    const char *state;   /* the journal's state: idle, armed, pinned, ... */
    const char *outcome; /* the trial's outcome: trial-ok, fell-back, ...; NULL: not judged */
    const char *running_kernel;
    const char *pinned_kernel; /* what GRUB's saved default starts */
    const char *old_kernel;
    const char *new_kernel;
    bool has_last_change;
    int64_t last_change; /* kswap_last_change_timestamp_seconds: seconds since the epoch */
    bool has_trial_duration;
    int64_t trial_duration;     /* kswap_trial_duration_seconds: arming to verdict */
    uint64_t reboots_requested; /* kswap_reboots_requested_total */
    /* The swap's TCP figures (lib/engine/tcp-report.h): the old kernel's before, the new
     * kernel's after; NULL when there are none. The kswap_tcp_* families, labelled by kernel
     * and phase. */
    const ks_tcp_figures *tcp_before, *tcp_after;
    /* kswap_update_available (day two, lib/engine/update.h); left out without update_current */
    const char *update_current, *update_newest, *update_package;
    bool update_installed;
} ks_metrics;

/*
 * A label value as the format wants it between its double quotes: backslash, double quote and
 * line feed escaped (\\, \", \n); bytes that are not UTF-8 become U+FFFD, since the format is
 * UTF-8 and node_exporter refuses the whole file otherwise. NULL is "". NULL on -ENOMEM.
 */
char *ks_metrics_escape_label(const char *s);
/* The whole file, ending with a newline. 0 or -ENOMEM. */
int ks_metrics_render(const ks_metrics *m, char **ret);
