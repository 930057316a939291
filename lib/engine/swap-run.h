/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdarg.h>
#include <stdbool.h>

#include "lib/engine/bootctl.h"
#include "lib/engine/journal.h"
#include "lib/engine/lock.h"
#include "lib/engine/rebootcheck.h"
#include "lib/repo/apt-status.h"
#include "lib/engine/swap.h"

/*
 * The run context every engine command that changes the system shares (apply and its steps,
 * pin, rollback, purge): the root, the options, the lock, the journal and the result, and the
 * helpers that keep them in step: a progress line, a step begun and ended in the journal, a
 * step that failed (the result and the journal say why), a program run through
 * lib/basic/spawn.h with apt's progress read from its status fd, dpkg's lock awaited. Only the
 * engine includes this header; cmd/ sees lib/engine/swap.h.
 */

/* apt speaks English to kswap whatever the operator's locale: its phases (the Status-Fd
 * messages, "Preparing %s") and the repository check's errors are read by their words. LANGUAGE
 * empty, since gettext would prefer it to the locale. */
#define KS_APT_ENV_LC_ALL "LC_ALL=C.UTF-8"
#define KS_APT_ENV_LANGUAGE "LANGUAGE="

/* apt-get as apply's install step runs it (apply --dry-run lists the same argv). */
#define KS_APT_UPDATE_ARGV                                                                         \
    (char *)"apt-get", (char *)"-q", (char *)"-o",                                                 \
        (char *)"Dir::Etc::sourcelist=sources.list.d/xanmod.sources", (char *)"-o",                \
        (char *)"Dir::Etc::sourceparts=-", (char *)"-o", (char *)"APT::Get::List-Cleanup=0",       \
        (char *)"update"
#define KS_APT_INSTALL_ARGV                                                                        \
    (char *)"apt-get", (char *)"-q", (char *)"-y", (char *)"--no-install-recommends",              \
        (char *)"-o", (char *)"Dpkg::Options::=--force-confdef", (char *)"-o",                     \
        (char *)"Dpkg::Options::=--force-confold", (char *)"install"

/* One run of an engine command: the root, the options, the journal and the result. */
typedef struct ks_run {
    const ks_root *root;
    const ks_swap_common *c;
    ks_journal *j;
    ks_swap_result *r;
    char *root_abs;      /* KSWAP_ROOT for the programs; NULL on the running system */
    char **items_before; /* the snapshot's items when this apply began (its check step) */
    bool locked;         /* kswap's lock is held: the swap history may be written */
    bool state_stays;    /* a failure now (the reboot) records its step, never the state */
    char *dropin_purged; /* rollback --purge: the drop-in's text it replaced or removed */
} ks_run;

/* Sets up x for root; the result starts empty. Fails (with the result saying why) only when
 * the root cannot be resolved. */
int ks_run_init(ks_run *x, const ks_root *root, const ks_swap_common *c, ks_swap_result *res);
/* kswap's lock (or the one handed over), else the result says busy or why not. */
int ks_run_lock(ks_run *x, ks_lock **ret);
/* The journal, with kswap.prom following its saves; an unreadable one fails the run. */
int ks_run_load_journal(ks_run *x);
/* The start every command that changes something shares: init, the lock, then the journal. */
int ks_run_start_locked(ks_run *x, const ks_root *root, const ks_swap_common *c,
                        ks_swap_result *res, ks_lock **lock);
/*
 * Hands the journal to the result and applies the rule of swap.h: a negative errno exactly when
 * the call could not evaluate or act (KS_SWAP_FAILED), 0 for every verdict in the result.
 */
int ks_run_end(ks_run *x, int r);

void ks_run_progress(ks_run *x, const char *step, const char *fmt, ...) _printf_(3, 4);
void ks_run_trace(ks_run *x, const char *what, const char *fmt, ...) _printf_(3, 4);
/* Records why a step failed: in the result for people, in the journal for later runs (step
 * NULL: no step had begun). Returns err, or -EIO for an err that is not negative. */
int ks_run_fail_step(ks_run *x, const char *step, int err, const char *fmt, ...) _printf_(4, 5);
/* A step begun (progress line, journal saved) and ended done. */
int ks_run_begin(ks_run *x, const char *step, const char *what);
int ks_run_done(ks_run *x, const char *step, const char *detail);
/* The journal could not be written: the result says so. Returns r. */
int ks_run_journal_error(ks_run *x, int r);

/* [apply] KEY in milliseconds, def_s seconds when unset or not positive. */
unsigned ks_run_timeout_ms(ks_run *x, const char *key, unsigned def_s);
/* name on PATH; -EPERM for this machine's own program under a root that is not "/". */
int ks_run_find_program(ks_run *x, const char *name, char **ret_path);
/* Runs a program for a step; a failure fills the result with its exit and last output line.
 * apt: apt-get's environment and its progress from its status fd. argv[0] is replaced. */
int ks_run_program(ks_run *x, const char *step, char **argv, unsigned tmo_ms, bool apt);
/* dpkg's lock free, waiting up to [apply] apt_timeout (step NULL: before any step began). */
int ks_run_wait_for_dpkg(ks_run *x, const char *step);

/* apt's Status-Fd lines while it runs: a progress line per phase, the live percent between. */
typedef struct ks_apt_watch {
    ks_run *x;
    const char *step;
    ks_apt_status_stream stream;
    ks_apt_phase phase;
    double start, phase_start;
    double took[_KS_APT_PHASE_MAX];
    bool seen[_KS_APT_PHASE_MAX];
} ks_apt_watch;
double ks_run_mono_s(void);
#define KS_APT_WATCH(x_, step_)                                                                    \
    ((ks_apt_watch){                                                                               \
        .x = (x_), .step = (step_), .phase = KS_APT_PHASE_NONE, .start = ks_run_mono_s()})
/* For on_status of ks_spawn and of lib/repo/probe.h, with the watch as userdata. */
void ks_apt_watch_bytes(void *userdata, const char *data, size_t n);
/* One line when apt is done: where the time went, phase by phase. */
void ks_apt_watch_summary(ks_apt_watch *w);

/* Releases installed under the root, as a strv. */
int ks_run_releases_now(const ks_root *root, char ***ret);
/* The running release; on failure the result says which file could not be read. */
int ks_run_running_kernel(const ks_root *root, ks_swap_result *ret, char **running);
/* update-grub, then the new grub.cfg with grubenv, grubenv's bytes noted in the journal. */
int ks_run_update_grub_and_load(ks_run *x, const char *step, ks_boot *b);
/* The trial's GRUB entries out of grub.cfg (pin, rollback): 1 removed, 0 there were none. */
int ks_run_remove_trial_entries(ks_run *x, const char *step);
/* [accept] deadline, seconds from the kernel's start; -ERANGE outside its limits. */
int ks_run_trial_deadline(ks_run *x, int *ret);
/* The reboot of apply --reboot and rollback --reboot, after the last look (step-reboot.c). */
int ks_run_reboot_now(ks_run *x, const char *step, const ks_reboot_expect *expect,
                      const char *stays);
/* rollback --purge (purge.c): what every apply of the swap installed, removed. */
int ks_run_purge(ks_run *x, const char *old, const char *running);
/* Whether the purge removed kswap's GRUB drop-in, and putting it back after all. */
bool ks_run_dropin_removed(const ks_swap_result *r);
int ks_run_keep_dropin(ks_run *x, ks_boot *b);
