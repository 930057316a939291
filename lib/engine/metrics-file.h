/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/config.h"
#include "lib/basic/findings.h"
#include "lib/basic/root.h"
#include "lib/engine/journal.h"
#include "lib/engine/metrics.h"
#include "lib/engine/update.h"

/*
 * kswap.prom for node_exporter's textfile collector, written after every save of the state
 * journal (ks_journal_on_save): each step of apply, arming, the trial boot, accept's verdict,
 * pin, rollback. The directory is [metrics] textfile_dir (default
 * KS_METRICS_DEFAULT_TEXTFILE_DIR) inside the root; metrics are off when it is set empty or when
 * the directory does not exist (kswap never creates it). The file is replaced atomically
 * (lib/basic/fileio.h: the temporary file does not end in .prom, so node_exporter skips it).
 * A failure to write never fails or changes the swap: the first one is kept for the command to
 * report as the warning finding metrics.unwritable.
 */
#define KS_METRICS_FILE "kswap.prom"

/* The values for the renderer, with the strings they point to. */
typedef struct ks_metrics_values {
    ks_metrics m;
    char *running; /* proc/sys/kernel/osrelease */
    char *pinned;  /* the kernel of the first forecast boot that is not a one-shot */
    ks_tcp_figures tcp_before, tcp_after; /* pointing into the journal */
    ks_update update;
} ks_metrics_values;

void ks_metrics_values_done(ks_metrics_values *v);

/*
 * From the journal and the root: state, outcome and kernels from the journal; the running
 * kernel; the pinned kernel as `kswap status` forecasts it (lib/engine/bootctl.h: what GRUB's
 * saved default starts); last change = the journal's "updated"; trial duration = outcome_at -
 * armed_at when the trial has a verdict (not no-reboot); a newer release of the node's branch
 * (lib/engine/update.h, the repository of cfg, NULL: defaults); the swap's TCP figures before
 * and after from the journal's samples (lib/engine/tcp-report.h). What cannot be read is left
 * empty.
 */
int ks_metrics_collect(const ks_root *root, const ks_journal *j, const ks_config *cfg,
                       ks_metrics_values *ret);

/* [metrics] textfile_dir, or the default when unset; NULL when set empty (off). */
const char *ks_metrics_textfile_dir(const ks_config *cfg);

/*
 * Renders and writes DIR/kswap.prom inside the root. 1: written; 0: off (DIR does not exist);
 * negative errno: could not, and *ret_error (when given) says what, for people.
 */
int ks_metrics_write(const ks_root *root, const char *dir, const ks_journal *j,
                     const ks_config *cfg, char **ret_error);

/* Writes the metrics after every save of j from now on (nothing when the config turns it off);
 * cfg must outlive j. */
int ks_metrics_attach(ks_journal *j, const ks_root *root, const ks_config *cfg);
/* The first failure since attaching, for people; NULL when none (or not attached). */
const char *ks_metrics_error(const ks_journal *j);
/* That failure as the warning finding metrics.unwritable; nothing without one. 0 or -ENOMEM. */
int ks_metrics_add_finding(const ks_journal *j, ks_findings *f);
