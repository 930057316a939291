/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/basic/config.h"
#include "lib/basic/root.h"
#include "lib/engine/journal.h"
#include "lib/host/tcpsample.h"

/*
 * The swap's effect on the node's TCP traffic (kswap report): the old kernel's figures from its
 * boot to arming ("before", the baseline sample) beside the new kernel's ("after"), each the
 * retransmitted over sent segments, timeouts, the connections' congestion controls, median RTT
 * and delivery rate (lib/host/tcpsample.h).
 *
 * "after" is over a window on the new kernel: from the pin to now when the node still runs the
 * boot it was pinned in (two samples: the counters count from the boot), else from the current
 * boot of the new kernel to now. Without a live sample (kswap.prom, the history) the window ends
 * at the last `kswap report --record`, or, before one, it is the trial boot up to the pin.
 */

/* Takes a sample now and keeps it in j's slot (not saved). *ret_summary (may be NULL): one
 * line for the progress output. */
int ks_tcp_record(const ks_root *root, ks_journal *j, ks_tcp_slot slot, char **ret_summary);

typedef struct ks_tcp_compare {
    bool has_before;
    ks_tcp_figures before;
    bool has_after;
    ks_tcp_figures after;
    const char *no_after; /* why there is no "after", for people; NULL when there is one */
    /* The changes in percent, where both sides have the figure and before is not 0. */
    bool has_ratio_change, has_rtt_change, has_delivery_change;
    double ratio_change, rtt_change, delivery_change;
} ks_tcp_compare;

/*
 * The comparison of a swap's samples. now (may be NULL): a live sample, the end of "after" when
 * it runs new_kernel; without it, the recorded samples only (as above). The figures point into
 * e and now, which must outlive ret.
 */
void ks_tcp_compare_of(const ks_tcp_effect *e, const char *new_kernel, const ks_tcp_sample *now,
                       ks_tcp_compare *ret);

typedef struct ks_tcp_report {
    /* The swap the figures are of: the journal's when it has a baseline, else the newest
     * record of the history that has one; source NULL when no swap has one. */
    const char *source; /* "journal" or "history" */
    uint64_t history_id;
    char *swap_id;
    char *old_kernel, *new_kernel;
    char *status; /* the journal's state, or the record's outcome */
    ks_tcp_effect effect;
    ks_tcp_sample now;          /* taken by the report */
    ks_tcp_figures now_figures; /* now since its boot */
    ks_tcp_conns conns;         /* the connections now (all, loopback too) */
    char *conns_error;          /* why they could not be read; NULL when they were */
    ks_tcp_compare cmp;
    char *history_error; /* the history could not be read (the journal still counts) */
} ks_tcp_report;

void ks_tcp_report_done(ks_tcp_report *r);
DEFINE_TRIVIAL_DONE_FUNC(ks_tcp_report, ks_tcp_report_done);

/*
 * Builds the report: a sample now, the swap's samples, the comparison. Reads only. A negative
 * errno when the node's counters cannot be read (*ret_error says what) or the journal cannot.
 */
int ks_tcp_report_make(const ks_root *root, ks_tcp_report *ret, char **ret_error);

/*
 * kswap report --record: under the lock, a sample now becomes the journal's "after" (saved,
 * so kswap.prom is written with it) and the history's record of the swap is updated. Only for
 * a swap that ended pinned whose new kernel runs: -ESRCH otherwise, with *ret_error saying why.
 * -EBUSY when another kswap holds the lock.
 */
int ks_tcp_report_record(const ks_root *root, const ks_config *cfg, char **ret_error,
                         char **ret_warning);
