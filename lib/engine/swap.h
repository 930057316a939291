/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdarg.h>
#include <stdbool.h>

#include "lib/basic/config.h"
#include "lib/basic/findings.h"
#include "lib/engine/dryrun.h"
#include "lib/engine/journal.h"
#include "lib/engine/lock.h"
#include "lib/engine/plan.h"
#include "lib/basic/root.h"

/*
 * The swap engine: apply (pin the old kernel, repository, install, verify, arm a one-shot),
 * pin and rollback. Each step is recorded in the state journal before and after it runs; every
 * grubenv change is proven by a forecast of the next boots (lib/engine/bootctl.h) or undone.
 * Programs (apt-get, update-grub, systemctl) run through lib/basic/spawn.h; under a root that is
 * not this machine they get KSWAP_ROOT=DIR and must not be the system's own (tests put fakes
 * first on PATH), so that nothing ever acts on the running system by accident.
 */

typedef void (*ks_progress_fn)(void *userdata, const char *step, const char *message);

/* Formats one progress line and hands it to fn (nothing when fn is NULL). */
void ks_vprogressf(ks_progress_fn fn, void *userdata, const char *step, const char *fmt, va_list ap)
    _printf_(4, 0);

typedef struct ks_swap_common {
    const ks_config *config;
    unsigned lock_timeout_ms; /* 0: KS_LOCK_TIMEOUT_MS_DEFAULT */
    ks_progress_fn progress;  /* optional: one line per step, for stderr */
    void *userdata;
    /* Optional, with the same userdata: on a terminal, apt's progress within a phase as one
     * line that replaces itself (progress gets a line per phase either way); with -v, each
     * program kswap runs ("run", its argv) and each file that matters it reads or writes
     * ("read", "write", "remove", with the path inside the root). */
    ks_progress_fn live;
    ks_progress_fn trace;
    /* Optional: the caller holds the lock already and hands it over (*lock_handover becomes
     * NULL, the call releases it when done). accept pins this way, so that no other kswap and
     * no status --wait sees the lock free between its verdict and its pin. */
    ks_lock **lock_handover;
} ks_swap_common;

typedef struct ks_apply_opts {
    ks_swap_common common;
    const char *kernel;  /* --kernel RELEASE */
    const char *deb;     /* --deb FILE (on the running machine) */
    const char *package; /* --package NAME */
    ks_branch branch;
    const char *key_path;   /* --key FILE; NULL: the shipped XanMod key */
    const char *pinned_fpr; /* NULL: XanMod's fingerprint (or [repository] fingerprint) */
    bool reboot;
} ks_apply_opts;

typedef enum ks_swap_status {
    KS_SWAP_DONE,    /* armed / pinned / rolled back */
    KS_SWAP_ALREADY, /* nothing to do: armed already, pinned already, nothing to roll back */
    KS_SWAP_REFUSED, /* a finding blocks (plan, verify, a check of pin) */
    KS_SWAP_FAILED,  /* an action failed; the journal says which, the old kernel stays default */
    KS_SWAP_BUSY,    /* another kswap holds the lock */
} ks_swap_status;

typedef struct ks_swap_result {
    ks_swap_status status;
    ks_findings findings; /* why it refused, and warnings worth showing */
    char *error;          /* what failed, for people, with the program's last output line */
    char *output;         /* the failing program's captured output, when one failed */
    pid_t lock_holder;    /* KS_SWAP_BUSY */
    ks_journal *journal;  /* the journal as it ended (for --json and status) */
    bool rebooting;       /* systemctl reboot was called */
    ks_dryrun *dry;       /* apply --dry-run: what apply would do (ks_apply_dry_run) */
    /* rollback --purge: what it removed, in order; kind "package" (name is the package),
     * "apt-source", "apt-keyring", "grub-dropin" or "file" (name is a path inside the root). */
    struct ks_removed {
        char *kind;
        char *name;
        char *what; /* for people, may be NULL */
    } * removed;
    size_t n_removed;
    bool purged; /* rollback --purge ran its purge (n_removed 0: there was nothing to remove) */
} ks_swap_result;

void ks_swap_result_done(ks_swap_result *r);
DEFINE_TRIVIAL_DONE_FUNC(ks_swap_result, ks_swap_result_done);
#define _cleanup_swap_result_ _cleanup_(ks_swap_result_donep)

/*
 * One error channel for every engine call (ks_apply, ks_pin, ks_rollback here, ks_accept and
 * ks_accept_reboot in lib/engine/accept.h, ks_plan_run in lib/engine/plan.h):
 *   - a negative errno means the call could not evaluate or could not act: for apply, pin and
 *     rollback exactly when ret->status is KS_SWAP_FAILED;
 *   - 0 means it came to a verdict, and the result struct says which: done, nothing to do,
 *     refused (with the findings), busy (with the lock holder); accept's outcome.
 * In both cases the result is filled as far as memory allowed (ret->error says what failed,
 * ret->journal is the journal as it ended) and is freed with its _done() function; a caller
 * shows it either way and takes the exit code from the status. An error without a message
 * (out of memory before one could be written) is for the caller to name with strerror().
 */
int ks_apply(const ks_root *root, const ks_apply_opts *opts, ks_swap_result *ret);
/*
 * apply --dry-run: judges exactly as apply does before its first change (the plan and its
 * blocking findings, dpkg's and kswap's lock, an armed or interrupted swap in the journal,
 * accept's checklist on the running kernel, the repository check into a private folder) and
 * fills ret->dry with what apply would then do; nothing inside the root changes and no program
 * that changes anything runs. kswap's lock is taken shared and only when its file exists (the
 * file is neither created nor written): another kswap changing the system makes the dry run
 * busy, as it would make apply; two dry runs do not exclude each other. Status DONE: apply
 * would go ahead; REFUSED, BUSY, ALREADY, FAILED as apply.
 */
int ks_apply_dry_run(const ks_root *root, const ks_apply_opts *opts, ks_swap_result *ret);
/* release NULL: the journal's new kernel. force: skip "running and accepted" (refusals). */
int ks_pin(const ks_root *root, const ks_swap_common *c, const char *release, bool force,
           ks_swap_result *ret);
int ks_rollback(const ks_root *root, const ks_swap_common *c, bool purge, bool reboot,
                ks_swap_result *ret);
/* Read-only: what rollback --purge would remove now, as ret->removed (packages this swap's
 * applies installed that dpkg still has, but never the old or the running kernel's image; the
 * apt source and key; kswap's GRUB drop-in; the autoremove guard). -errno with ret->error. */
int ks_rollback_purge_preview(const ks_root *root, ks_swap_result *ret);

/* The drop-in apply writes: GRUB_DEFAULT=saved, and panic=10 unless one is set already. */
#define KS_GRUB_DROPIN_PATH "etc/default/grub.d/90-kswap.cfg"
char *ks_grub_dropin_text(bool add_panic);
