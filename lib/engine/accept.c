/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The verdict of kswap accept and its actions: pin, disarm, the one reboot, motd, hooks. */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "lib/engine/accept.h"
#include "lib/engine/command-log.h"
#include "lib/engine/history.h"
#include "lib/engine/bootctl.h"
#include "lib/host/boot-identity.h"
#include "lib/host/bootfiles.h"
#include "lib/host/kernels.h"
#include "lib/engine/lock.h"
#include "lib/engine/metrics-file.h"
#include "lib/engine/rebootcheck.h"
#include "lib/engine/run-snapshot.h"
#include "lib/basic/escape.h"
#include "lib/basic/fileio.h"
#include "lib/basic/json-util.h"
#include "lib/basic/spawn.h"
#include "lib/engine/trial.h"
#include "lib/engine/trialboot.h"
#include "lib/basic/util.h"

typedef struct acc {
    const ks_root *root;
    const ks_accept_opts *o;
    ks_accept_result *r;
    ks_journal *j;
    char *root_abs;
    char *boot_id;
} acc;

static void progress(acc *a, const char *fmt, ...) _printf_(2, 3);
static void progress(acc *a, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(a->o->progress, a->o->userdata, "accept", fmt, ap);
    va_end(ap);
}

static void set_error(acc *a, const char *fmt, ...) _printf_(2, 3);
static void set_error(acc *a, const char *fmt, ...)
{
    va_list ap;

    /* The first error is the one that matters; later ones are consequences. */
    va_start(ap, fmt);
    (void)ks_set_first_verrorf(&a->r->error, fmt, ap);
    va_end(ap);
}

/* An [accept] number: the configuration was checked when it was read, the table has the
 * range and the default. */
static unsigned cfg_uint(const acc *a, const char *key)
{
    uint64_t v = 0;

    (void)ks_config_get_u64(a->o->config, "accept", key, &v);
    return v > UINT_MAX / 1000u ? UINT_MAX / 1000u : (unsigned)v;
}

void ks_accept_result_done(ks_accept_result *r)
{
    free(r->kernel);
    free(r->expected_kernel);
    free(r->old_kernel);
    free(r->summary);
    free(r->error);
    free(r->metrics_error);
    free(r->history_error);
    free(r->previous_boot);
    free(r->reboot_unsafe);
    ks_checklist_done(&r->checks);
    ks_journal_free(r->journal);
    ks_strv_free(r->new_items);
    ks_strv_free(r->not_snapshotted);
    free(r->conns_now);
    *r = (ks_accept_result){0};
}

char *ks_accept_motd_line(const ks_journal *j, const char *running)
{
    const char *new = strempty(ks_journal_get(j, KS_JF_NEW_KERNEL));
    const char *reason = ks_journal_get(j, KS_JF_REASON);

    switch (ks_journal_outcome(j)) {
    case KS_OUTCOME_HEALTH_FAILED:
        return ks_asprintf("kswap: trial of %s failed (%s); running %s, see kswap status", new,
                           reason ? reason : "a required check failed", strempty(running));
    case KS_OUTCOME_FELL_BACK:
        return ks_asprintf("kswap: trial of %s did not come up (fell back); running %s, see "
                           "kswap status",
                           new, strempty(running));
    case KS_OUTCOME_TRIAL_HUNG:
        return ks_asprintf("kswap: trial of %s hung and was rebooted into the old kernel (its "
                           "deadline, or emergency or rescue mode); running %s, see kswap status",
                           new, strempty(running));
    case KS_OUTCOME_TRIAL_OK:
        if (ks_journal_state(j) == KS_STATE_PINNED)
            return NULL;
        /* The trial boot ended before the pin (a power cut, a reboot): pin refuses on the old
         * kernel, so the advice must not be 'kswap pin'. */
        if (running && ks_journal_get(j, KS_JF_NEW_KERNEL) && !streq(running, new))
            return ks_asprintf("kswap: trial of %s passed acceptance, but the machine restarted "
                               "before it was pinned and %s runs; 'kswap apply' tries %s again, "
                               "'kswap pin --force' makes it the default without another trial",
                               new, running, new);
        return ks_asprintf("kswap: trial of %s passed acceptance; run 'kswap pin' to keep it", new);
    default:
        return NULL;
    }
}

/* The motd line of the journal's outcome (or none); a failure to write it is not a verdict. */
static void update_motd(acc *a)
{
    _cleanup_free_ char *line = ks_accept_motd_line(a->j, a->r->kernel);
    int r = line ? ks_motd_set(a->root, line) : ks_motd_clear(a->root);

    if (r < 0)
        progress(a, "cannot update /%s: %s", KS_MOTD_PATH, strerror(-r));
    free(a->r->summary);
    a->r->summary = line ? strdup(line) : NULL;
}

/* next_entry unset, and every boot forecast to start the old kernel. */
static int disarm(acc *a)
{
    _cleanup_free_ char *err = NULL, *detail = NULL;
    const char *old = ks_journal_get(a->j, KS_JF_OLD_KERNEL);
    ks_boot b = {0};
    int r;

    r = ks_boot_load(a->root, &b, &err);
    if (r < 0) {
        set_error(a, "cannot read the GRUB setup: %s", err ? err : strerror(-r));
        return r;
    }
    r = ks_journal_note_file(a->j, KS_GRUBENV_PATH);
    if (r >= 0)
        r = ks_boot_disarm(a->root, &b, old, &detail);
    /* A default that drifted (someone ran grub-set-default) is set back to the old kernel. */
    if (r == -EPROTO && old) {
        free(detail);
        detail = NULL;
        r = ks_boot_set_default(a->root, &b, old, &detail);
    }
    ks_boot_done(&b);
    if (r < 0)
        set_error(a, "cannot make sure the old kernel %s boots next: %s", strempty(old),
                  detail ? detail : strerror(-r));
    return r;
}

/* The first failure to write kswap.prom of j's saves, kept for the command to warn about. */
static void keep_metrics_error(ks_accept_result *r, const ks_journal *j)
{
    const char *err = ks_metrics_error(j);

    if (err && !r->metrics_error)
        r->metrics_error = strdup(err);
}

static int record(acc *a, ks_outcome outcome, ks_state state, const char *reason)
{
    int r = ks_journal_set_outcome(a->j, outcome);

    if (r >= 0 && reason)
        r = ks_journal_set(a->j, KS_JF_REASON, reason);
    if (r >= 0 && state != _KS_STATE_INVALID)
        r = ks_journal_set_state(a->j, state);
    if (r >= 0)
        r = ks_journal_save(a->j);
    if (r < 0)
        set_error(a, "cannot write the state journal '/%s': %s", KS_JOURNAL_PATH, strerror(-r));
    a->r->outcome = outcome;
    return r;
}

static int check_set_fmt(ks_check *chk, ks_check_status st, const char *fmt, ...) _printf_(3, 4);
static int check_set_fmt(ks_check *chk, ks_check_status st, const char *fmt, ...)
{
    _cleanup_free_ char *msg = NULL;
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_vasprintf_r(&msg, fmt, ap);
    va_end(ap);
    if (r < 0)
        return r;
    return ks_check_set(chk, st, msg);
}

/* The required check that failed, as "ID: detail", for the journal and the motd: the one that
 * failed finally and ended the wait when there is one (others may not have come back yet at
 * that moment), else the first. */
static char *first_failure(const ks_checklist *l)
{
    const ks_check *first = NULL;

    for (size_t i = 0; i < l->n; i++) {
        const ks_check *chk = &l->v[i];
        if (!chk->required || chk->status == KS_CHECK_PASS)
            continue;
        if (chk->status == KS_CHECK_FAIL && chk->final) {
            first = chk;
            break;
        }
        if (!first)
            first = chk;
    }
    if (!first)
        return strdup("a required check failed");
    return ks_asprintf("%s: %s", first->id, first->detail ? first->detail : "did not pass");
}

/* journalctl with argv on success and some output, else NULL. At most max bytes, cut between
 * characters (the JSON of accept carries it). */
static char *journal_query(acc *a, char **argv, size_t max)
{
    ks_check_ctx ctx = {.root = a->root, .root_abs = a->root_abs};
    struct ks_spawn_result res = {0};
    char *out = NULL;

    if (ks_check_spawn(&ctx, argv, 10000, &res) >= 0 && ks_spawn_succeeded(&res) &&
        res.output_len > 0)
        out = strndup(res.output, ks_utf8_cut(res.output, res.output_len, max));
    ks_spawn_result_done(&res);
    return out;
}

/* Boot ids as 32 lower-case hex digits: the kernel's has dashes, journald's _BOOT_ID none. */
static bool same_boot_id(const char *a, const char *b)
{
    for (;;) {
        while (*a == '-')
            a++;
        while (*b == '-')
            b++;
        if (!*a || !*b || *a == '\n' || *b == '\n')
            return (!*a || *a == '\n') && (!*b || *b == '\n');
        if (tolower((unsigned char)*a++) != tolower((unsigned char)*b++))
            return false;
    }
}

/*
 * Is the journal's previous boot the one of arming? Then the trial boot never reached the
 * journal: it stopped before the root filesystem was mounted (kernel panic, initramfs), and
 * only its console shows why. 1: another boot, 0: the arming boot, -1: unknown.
 */
static int trial_boot_logged(acc *a)
{
    char *argv[] = {(char *)"journalctl", (char *)"-b", (char *)"-1",     (char *)"-n",
                    (char *)"1",          (char *)"-o", (char *)"export", (char *)"--no-pager",
                    (char *)"-q",         NULL};
    _cleanup_free_ char *out = journal_query(a, argv, 65536);
    const char *armed = ks_journal_armed_boot_id(a->j);
    const char *p;

    if (!out || !armed)
        return -1;
    for (p = out; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (ks_startswith(p, "_BOOT_ID="))
            return same_boot_id(p + strlen("_BOOT_ID="), armed) ? 0 : 1;
    return -1;
}

/*
 * What the trial boot left in the system journal: its warnings and errors, the last lines first
 * to go (a panic or a stuck unit shows there). Best effort: without a persistent journal, or
 * without journalctl, there is nothing to show and the verdict stays the same.
 */
static char *previous_boot_log(acc *a)
{
    char *argv[] = {(char *)"journalctl", (char *)"-b", (char *)"-1", (char *)"-p",
                    (char *)"warning",    (char *)"-n", (char *)"25", (char *)"--no-pager",
                    (char *)"-q",         NULL};

    return journal_query(a, argv, 4000);
}

/*
 * The trial kernel's file as GRUB finds it now, by the bzImage check apply ran on it before
 * arming (lib/host/bootfiles.h): missing or damaged now, it went bad after arming, GRUB could
 * not load it and went on to entry 0, the old kernel (fallback). NULL when it looks like a
 * kernel or cannot be read: nothing to say.
 */
static char *trial_kernel_damage(acc *a, const char *new)
{
    _cleanup_free_ char *path = new ? ks_asprintf("boot/vmlinuz-%s", new) : NULL;
    _cleanup_free_ char *why = NULL;
    _cleanup_close_ int fd = -EBADF;
    uint8_t head[1024];
    struct stat st;
    size_t n = 0;

    if (!path)
        return NULL;
    fd = ks_root_open_regular(a->root, path, 0);
    if (fd == -ENOENT)
        return ks_asprintf("/%s is missing", path);
    if (fd < 0 || fstat(fd, &st) < 0 || ks_pread_all(fd, head, sizeof(head), 0, &n) < 0)
        return NULL;
    if (ks_bootfile_kernel_check(head, n, (uint64_t)st.st_size, &why) >= 0)
        return NULL;
    return ks_asprintf("/%s: %s", path, why ? why : "damaged");
}

static int judge_fell_back(acc *a)
{
    _cleanup_free_ char *reason = NULL;
    bool hung = false;
    const char *new = ks_journal_get(a->j, KS_JF_NEW_KERNEL);
    int r;

    a->r->trial_boot_logged = trial_boot_logged(a);
    if (a->r->trial_boot_logged != 0)
        a->r->previous_boot = previous_boot_log(a);
    if (a->r->previous_boot)
        progress(a, "the previous boot's journal (warnings and errors):\n%s", a->r->previous_boot);

    {
        /* The trial boot's own marks (checks/kswap-trial-mark): did its deadline fire, or did
         * it send itself back from emergency or rescue mode? */
        _cleanup_free_ char *last = NULL, *stages = NULL, *how = NULL;
        ks_trial_end end = KS_TRIAL_END_UNKNOWN;
        unsigned at = 0;
        if (ks_trial_stages_read(a->root, &end, &at, &last, &stages) > 0) {
            progress(a, "the trial boot's stages (/%s):\n%s", KS_TRIAL_STAGES_PATH, stages);
            hung = end != KS_TRIAL_END_UNKNOWN;
            how = end == KS_TRIAL_END_DEADLINE
                      ? strdup("missed its boot deadline and was rebooted by force")
                  : end == KS_TRIAL_END_RETURNED
                      ? ks_asprintf("was stuck in %s mode and rebooted itself into the old "
                                    "kernel %u s after it started, without waiting for its "
                                    "deadline",
                                    last && streq(last, "rescue") ? "rescue" : "emergency", at)
                      : strdup("did not come up");
            if (how)
                reason =
                    ks_asprintf("the trial kernel %s %s; furthest stage: %s; %s runs (see "
                                "'journalctl -b -1')",
                                new, how, last ? last : "GRUB, kernel or initramfs", a->r->kernel);
        }
    }
    if (!reason && a->r->trial_boot_logged != 1) {
        /* No stage marks, no journal of its own: did the trial kernel ever start? */
        _cleanup_free_ char *damage = trial_kernel_damage(a, new);
        if (damage)
            reason = ks_asprintf("the trial kernel %s never started: GRUB could not load it (%s; "
                                 "it was read back intact before arming) and went on to the "
                                 "old kernel by itself; %s runs",
                                 new, damage, a->r->kernel);
    }
    if (!reason && a->r->trial_boot_logged == 0)
        reason = ks_asprintf("the trial kernel %s did not come up; %s runs; the trial boot left "
                             "nothing in the system journal (it stopped before the root "
                             "filesystem was mounted: kernel or initramfs), its console log "
                             "shows why",
                             new, a->r->kernel);
    else if (!reason)
        reason = ks_asprintf("the trial kernel %s did not come up; %s runs (see 'journalctl -b "
                             "-1' for the previous boot)",
                             new, a->r->kernel);
    if (!reason)
        return -ENOMEM;
    progress(a, "%s: %s", hung ? "TRIAL HUNG" : "FELL BACK", reason);
    /* The deadline unit kswap set up, or its emergency return, rebooted the trial boot by
     * force: a reboot kswap asked for, counted now that it is known. */
    if (hung)
        ks_journal_count_reboot(a->j);
    (void)ks_journal_step_begin(a->j, "accept");
    r = disarm(a);
    record(a, hung ? KS_OUTCOME_TRIAL_HUNG : KS_OUTCOME_FELL_BACK,
           r < 0 ? KS_STATE_FAILED : KS_STATE_ROLLED_BACK, reason);
    (void)ks_journal_step_end(a->j, "accept", KS_STEP_FAILED, reason);
    update_motd(a);
    return 0;
}

/* The items of the snapshot taken on the old kernel, after the configured checks. */
static int add_snapshot_checks(acc *a, const ks_check_ctx *ctx)
{
    const ks_run_snapshot *s = ks_journal_running(a->j);

    (void)ctx;
    if (!s) {
        progress(a, "no snapshot of what ran on the old kernel (armed by an older kswap): only "
                    "the configured checks run");
        return 0;
    }
    a->r->have_snapshot = true;
    a->r->established_before = s->established;
    for (char **p = s->skipped; p && *p; p++)
        if (ks_strv_extend(&a->r->not_snapshotted, *p) < 0)
            return -ENOMEM;
    return ks_checklist_add_snapshot(&a->r->checks, s, a->o->config);
}

/* What runs now that did not before (reported only), and the established counts now. */
static int diff_new(acc *a, const ks_check_ctx *ctx)
{
    const ks_run_snapshot *before = ks_journal_running(a->j);
    _cleanup_strv_free_ char **ignore = NULL;
    ks_run_snapshot now = {0};
    int r;

    if (!before)
        return 0;
    r = ks_run_snapshot_take(ctx, &now);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0;
    a->r->established_now = now.established;
    a->r->have_conns_now = true;
    a->r->conns_now = TAKE_PTR(now.conns);
    a->r->n_conns_now = now.n_conns;
    now.n_conns = 0;
    r = ks_config_get_strv(a->o->config, "accept", "ignore", NULL, &ignore);
    for (char **const *list = (char **const[]){now.items, now.wanted, NULL}; r >= 0 && *list;
         list++)
        for (char **p = *list; r >= 0 && p && *p; p++)
            if (!ks_strv_contains(before->items, *p) && !ks_strv_contains(before->wanted, *p) &&
                !ks_snapshot_ignored(*p, ignore))
                r = ks_strv_extend(&a->r->new_items, *p);
    ks_run_snapshot_done(&now);
    return r < 0 ? r : 0;
}

long long ks_accept_conns_now(const ks_accept_result *r, const ks_check *chk)
{
    const char *p = chk->run == ks_check_connections ? ks_startswith(chk->arg, "tcp:") : NULL;
    unsigned long long port;

    if (!r->have_conns_now || !p || ks_safe_atou64(p, &port) < 0)
        return -1;
    for (size_t i = 0; i < r->n_conns_now; i++)
        if (r->conns_now[i].port == port)
            return r->conns_now[i].established;
    return 0;
}

json_object *ks_accept_diff_json(const ks_accept_result *r)
{
    const ks_checklist *l = &r->checks;
    ks_json_builder b = {0};
    json_object *o, *back, *missing, *est, *conns;

    if (!r->have_snapshot)
        return NULL;
    o = ks_jb_object(&b);
    back = ks_jb_array(&b);
    missing = ks_jb_array(&b);
    conns = ks_jb_array(&b);
    for (size_t i = 0; i < l->n; i++) {
        const ks_check *chk = &l->v[i];
        if (chk->from_snapshot)
            ks_jb_push(&b, chk->status == KS_CHECK_PASS ? back : missing,
                       ks_jb_string(&b, chk->id));
        if (chk->run == ks_check_connections) {
            json_object *x = ks_jb_object(&b);
            long long now = ks_accept_conns_now(r, chk);
            ks_jb_add(&b, x, "port", ks_jb_string(&b, chk->arg));
            ks_jb_add(&b, x, "before", ks_jb_int(&b, chk->baseline));
            ks_jb_add(&b, x, "now", now >= 0 ? ks_jb_int(&b, now) : NULL);
            ks_jb_add(&b, x, "back", ks_jb_bool(&b, chk->status == KS_CHECK_PASS));
            ks_jb_add(&b, x, "required", ks_jb_bool(&b, chk->required));
            ks_jb_push(&b, conns, x);
        }
    }
    ks_jb_add(&b, o, "back", back);
    ks_jb_add(&b, o, "missing", missing);
    ks_jb_add(&b, o, "new", ks_jb_strv(&b, r->new_items));
    ks_jb_add(&b, o, "not_snapshotted", ks_jb_strv(&b, r->not_snapshotted));
    est = ks_jb_object(&b);
    ks_jb_add(&b, est, "before", ks_jb_int(&b, r->established_before));
    ks_jb_add(&b, est, "now", ks_jb_int(&b, r->established_now));
    ks_jb_add(&b, o, "established", est);
    ks_jb_add(&b, o, "connections", conns);
    return ks_jb_finish(&b, o);
}

/*
 * The last look before the one reboot back to the old kernel (lib/engine/rebootcheck.h): 0 with
 * *ret NULL when every next boot starts the old kernel from intact files; 0 with *ret saying
 * why not and what to do (for people); -ENOMEM. Rebooting anyway could leave the node at GRUB's
 * prompt, or in a kernel that cannot start, out of reach: the trial kernel, which runs, is the
 * better place to repair it from.
 */
static int old_boot_unsafe(const ks_root *root, const char *old, const char *running, char **ret)
{
    _cleanup_free_ char *why = NULL;
    ks_findings f = {0};
    int r;

    *ret = NULL;
    r = ks_reboot_check(
        root, &(ks_reboot_expect){.old = strempty(old), .then = "then 'kswap rollback --reboot'"},
        &f);
    for (size_t i = 0; r > 0 && i < f.n; i++) {
        char *n = ks_asprintf("%s%s%s: %s (%s)", strempty(why), why ? "; " : "", f.v[i].id,
                              f.v[i].message, strempty(f.v[i].remedy));
        free(why);
        why = n;
        if (!why)
            r = -ENOMEM;
    }
    ks_findings_clear(&f);
    if (r <= 0)
        return r;
    *ret = ks_asprintf("not rebooting into the old kernel %s: %s; %s keeps running (the trial is "
                       "disarmed and every boot starts %s, so no reboot before the repair)",
                       strempty(old), why, strempty(running), strempty(old));
    return *ret ? 0 : -ENOMEM;
}

/* Records why the reboot did not happen: the step "reboot" failed, the state as it was. */
static void note_no_reboot(ks_journal *j, const char *why)
{
    (void)ks_journal_step_begin(j, "reboot");
    (void)ks_journal_step_end(j, "reboot", KS_STEP_FAILED, why);
}

static int judge_checks(acc *a)
{
    const ks_config *cfg = a->o->config;
    _cleanup_free_ char *cfg_err = NULL, *on_failure = NULL;
    int timeout_s = a->o->timeout_s >= 0 ? a->o->timeout_s : (int)cfg_uint(a, "timeout");
    ks_check_ctx ctx = {
        .root = a->root,
        .root_abs = a->root_abs,
        .kernel = a->r->kernel,
        .program_timeout_ms = cfg_uint(a, "program_timeout") * 1000u,
        .script_timeout_ms = cfg_uint(a, "script_timeout") * 1000u,
        .tcp_baseline = ks_journal_tcp(a->j)->baseline,
        .trial = true,
    };
    int r, passed;

    r = ks_journal_set_state(a->j, KS_STATE_TRIAL_BOOTED);
    if (r >= 0)
        r = ks_journal_step_begin(a->j, "accept");
    if (r < 0) {
        set_error(a, "cannot write the state journal '/%s': %s", KS_JOURNAL_PATH, strerror(-r));
        return r;
    }
    on_failure =
        strdup(cfg ? ks_config_get_string(cfg, "accept", "on_failure", "reboot") : "reboot");
    if (!on_failure)
        return -ENOMEM;

    r = ks_checklist_from_config(a->root, cfg, &a->r->checks, &cfg_err);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        /* A broken checklist cannot prove anything: a failed check, not a silent pass. */
        r = ks_checklist_add(&a->r->checks, "config", NULL, true, NULL);
        if (r < 0)
            return r;
        r = check_set_fmt(&a->r->checks.v[a->r->checks.n - 1], KS_CHECK_FAIL, "%s",
                          cfg_err ? cfg_err : "cannot read the [accept] checks");
        if (r < 0)
            return r;
        passed = 0;
    } else {
        const ks_run_snapshot *snap = ks_journal_running(a->j);
        r = ks_checklist_add_floor(&a->r->checks, cfg, snap ? snap->items : NULL, snap != NULL);
        if (r >= 0)
            r = add_snapshot_checks(a, &ctx);
        if (r < 0)
            return r;
        progress(a, "running %zu checks on %s for up to %d s", a->r->checks.n - 2, a->r->kernel,
                 timeout_s);
        passed = ks_checks_run(&a->r->checks, &ctx,
                               &(ks_runner_opts){
                                   .timeout_ms = (unsigned)timeout_s * 1000u,
                                   .interval_ms = cfg_uint(a, "interval") * 1000u,
                                   .progress = a->o->check_progress,
                                   .userdata = a->o->userdata,
                               });
        if (passed < 0)
            return passed;
        r = diff_new(a, &ctx);
        if (r < 0)
            return r;
    }

    if (passed) {
        r = record(a, KS_OUTCOME_TRIAL_OK, _KS_STATE_INVALID, NULL);
        (void)ks_journal_step_end(a->j, "accept", KS_STEP_DONE, "every required check passed");
        progress(a, "trial-ok: every required check passed on %s", a->r->kernel);
        return r < 0 ? r : 1;
    }

    {
        _cleanup_free_ char *reason = first_failure(&a->r->checks);
        if (!reason)
            return -ENOMEM;
        progress(a, "HEALTH FAILED: %s", reason);
        r = disarm(a);
        record(a, KS_OUTCOME_HEALTH_FAILED, r < 0 ? KS_STATE_FAILED : KS_STATE_ROLLED_BACK, reason);
        (void)ks_journal_step_end(a->j, "accept", KS_STEP_FAILED, reason);
    }
    if (streq(on_failure, "reboot") && !a->o->no_reboot && !ks_journal_reboot_claimed(a->j)) {
        r = old_boot_unsafe(a->root, ks_journal_get(a->j, KS_JF_OLD_KERNEL), a->r->kernel,
                            &a->r->reboot_unsafe);
        if (r < 0)
            return r;
    }
    if (a->r->reboot_unsafe) {
        progress(a, "%s", a->r->reboot_unsafe);
        set_error(a, "%s", a->r->reboot_unsafe);
        note_no_reboot(a->j, a->r->reboot_unsafe);
    } else if (streq(on_failure, "reboot") && !a->o->no_reboot) {
        r = ks_journal_claim_reboot(a->j, a->boot_id);
        if (r == -EALREADY) {
            a->r->reboot_refused = true;
            progress(a, "not rebooting: this trial had its one reboot already");
        } else if (r < 0) {
            set_error(a, "cannot record the reboot in the state journal: %s", strerror(-r));
        } else {
            a->r->reboot_claimed = true;
        }
    }
    update_motd(a);
    return 0;
}

/* The motd once the verdict is trial-ok: cleared once pinned, the operator's step if not. */
static void motd_after_pin(acc *a)
{
    if (a->j)
        update_motd(a);
    else if (a->r->pinned) {
        (void)ks_motd_clear(a->root);
        free(a->r->summary);
        a->r->summary = ks_asprintf("kswap: %s passed acceptance and is pinned", a->r->kernel);
    } else {
        /* The pin failed: the journal says trial-ok, the operator must act. */
        acc b = *a;
        b.j = a->r->journal;
        update_motd(&b);
    }
}

/* The journal's trial passed and its pin began, never ended, while the kernel runs. */
static bool pin_cut_short(const ks_journal *j, const char *running)
{
    const ks_journal_step *pin = ks_journal_step_find(j, KS_STEP_PIN);

    return ks_journal_outcome(j) == KS_OUTCOME_TRIAL_OK &&
           ks_journal_state(j) == KS_STATE_TRIAL_BOOTED && pin && pin->status == KS_STEP_STARTED &&
           streq_ptr(ks_journal_get(j, KS_JF_NEW_KERNEL), running);
}

static int pin_now(acc *a, ks_lock **lock)
{
    /* ks_pin reads the journal itself, as `kswap pin` does, and takes over the lock held
     * since the verdict: status --wait waits while it is held (the pin follows trial-ok). */
    ks_swap_common common = {.config = a->o->config,
                             .progress = a->o->progress,
                             .userdata = a->o->userdata,
                             .lock_handover = lock};
    ks_swap_result pr = {0};
    int r;

    a->r->journal = TAKE_PTR(a->j);
    r = ks_pin(a->root, &common, NULL, false, &pr);
    if (r < 0) {
        set_error(a, "cannot pin: %s", strerror(-r));
    } else if (pr.status != KS_SWAP_DONE && pr.status != KS_SWAP_ALREADY) {
        set_error(a, "cannot pin: %s", pr.error ? pr.error : "pin failed");
    } else {
        a->r->pinned = true;
    }
    for (size_t i = 0; i < pr.findings.n && !a->r->history_error; i++)
        if (ks_startswith(pr.findings.v[i].id, "history."))
            a->r->history_error = strdup(pr.findings.v[i].message);
    if (pr.journal) {
        keep_metrics_error(a->r, a->r->journal);
        ks_journal_free(a->r->journal);
        a->r->journal = TAKE_PTR(pr.journal);
    }
    ks_swap_result_done(&pr);
    return 0;
}

int ks_accept(const ks_root *root, const ks_accept_opts *o, ks_accept_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *jerr = NULL, *root_abs = NULL, *boot_id = NULL;
    ks_accept_result res = {.trial_boot_logged = -1};
    acc a = {.root = root, .o = o, .r = &res};
    const char *armed;
    ks_outcome outcome;
    ks_state state;
    pid_t holder = 0;
    int r;

    if (!ks_root_is_host(root)) {
        root_abs = realpath(ks_root_path(root), NULL);
        if (!root_abs)
            return -errno;
    }
    a.root_abs = root_abs;
    r = ks_lock_acquire(root, KS_LOCK_TIMEOUT_MS_DEFAULT, &lock, &holder);
    if (r < 0) {
        res.error =
            r == -EBUSY && holder > 0
                ? ks_asprintf("another kswap (pid %d) is changing this system", (int)holder)
                : ks_asprintf("cannot take the lock '/%s': %s", KS_LOCK_PATH, ks_strerror(r));
        goto fail;
    }
    r = ks_journal_load(root, &a.j, &jerr);
    if (r < 0) {
        res.error = ks_asprintf("cannot use the state journal '/%s': %s", KS_JOURNAL_PATH,
                                jerr ? jerr : strerror(-r));
        goto fail;
    }
    /* kswap.prom follows every save of the verdict (lib/engine/metrics-file.h). */
    r = ks_metrics_attach(a.j, root, o->config);
    if (r < 0)
        goto fail;
    r = ks_running_kernel(root, &res.kernel);
    if (r >= 0)
        r = ks_read_boot_id(root, &boot_id);
    if (r < 0) {
        res.error = ks_asprintf("cannot read the running kernel and boot id: %s", strerror(-r));
        goto fail;
    }
    a.boot_id = boot_id;
    res.expected_kernel = ks_journal_get(a.j, KS_JF_NEW_KERNEL)
                              ? strdup(ks_journal_get(a.j, KS_JF_NEW_KERNEL))
                              : NULL;
    res.old_kernel = ks_journal_get(a.j, KS_JF_OLD_KERNEL)
                         ? strdup(ks_journal_get(a.j, KS_JF_OLD_KERNEL))
                         : NULL;
    /* Always first: what runs, and whether this is a new boot. */
    if (ks_checklist_add(&res.checks, "kernel", NULL, true, NULL) < 0 ||
        ks_checklist_add(&res.checks, "boot", NULL, true, NULL) < 0) {
        r = -ENOMEM;
        goto fail;
    }

    outcome = ks_journal_outcome(a.j);
    state = ks_journal_state(a.j);
    armed = ks_journal_armed_boot_id(a.j);
    if (outcome == KS_OUTCOME_TRIAL_OK || outcome == KS_OUTCOME_HEALTH_FAILED ||
        outcome == KS_OUTCOME_FELL_BACK || outcome == KS_OUTCOME_TRIAL_HUNG) {
        /* Judged before (an earlier run, or before the reboot back): report, act no more. */
        res.recorded = true;
        res.outcome = outcome;
        res.pinned = state == KS_STATE_PINNED;
        res.reboot_refused = outcome == KS_OUTCOME_HEALTH_FAILED && ks_journal_reboot_claimed(a.j);
        /* trial-ok, but the trial boot ended before the pin and another kernel runs */
        res.pin_lost = outcome == KS_OUTCOME_TRIAL_OK && !res.pinned && res.expected_kernel &&
                       !streq(res.kernel, res.expected_kernel);
        for (size_t i = 0; i < res.checks.n; i++)
            (void)ks_check_set(&res.checks.v[i], KS_CHECK_SKIP,
                               "judged before; the state journal keeps the verdict");
        progress(&a, "the trial of %s was judged already: %s", strempty(res.expected_kernel),
                 ks_outcome_to_string(outcome));
        if (pin_cut_short(a.j, res.kernel)) {
            /* The pin wrote saved_entry and the machine stopped before the journal said
             * pinned: GRUB starts the kernel that passed on every boot now, so the pin the
             * operator (or auto_pin) decided is finished, never left half done. */
            progress(&a, "the pin of %s was cut short: finishing it", res.kernel);
            pin_now(&a, &lock);
        }
        motd_after_pin(&a);
        goto done;
    }
    if (!res.expected_kernel || !armed ||
        (state != KS_STATE_ARMED && state != KS_STATE_TRIAL_BOOTED)) {
        res.outcome = KS_OUTCOME_NONE;
        res.summary = strdup("no trial is armed");
        (void)ks_check_set(&res.checks.v[0], KS_CHECK_SKIP, "no trial armed");
        (void)ks_check_set(&res.checks.v[1], KS_CHECK_SKIP, "no trial armed");
        goto done;
    }
    if (streq(boot_id, armed)) {
        (void)check_set_fmt(&res.checks.v[1], KS_CHECK_FAIL,
                            "boot id %s is the one of arming: no reboot since", boot_id);
        (void)ks_check_set(&res.checks.v[0], KS_CHECK_SKIP, "not judged before the reboot");
        res.summary = ks_asprintf("no reboot since the trial of %s was armed", res.expected_kernel);
        progress(&a, "%s", strempty(res.summary));
        record(&a, KS_OUTCOME_NO_REBOOT, _KS_STATE_INVALID, NULL);
        goto done;
    }
    (void)check_set_fmt(&res.checks.v[1], KS_CHECK_PASS,
                        "boot id %s differs from the one of arming", boot_id);
    if (!streq(res.kernel, res.expected_kernel)) {
        (void)check_set_fmt(&res.checks.v[0], KS_CHECK_FAIL, "%s runs, the trial kernel is %s",
                            res.kernel, res.expected_kernel);
        r = judge_fell_back(&a);
        if (r < 0)
            goto fail;
        goto done;
    }
    (void)check_set_fmt(&res.checks.v[0], KS_CHECK_PASS, "the trial kernel %s runs", res.kernel);
    r = judge_checks(&a);
    if (r < 0)
        goto fail;
    if (r > 0) {
        bool auto_pin = true;
        if (o->config && ks_config_get_bool(o->config, "accept", "auto_pin", true, &auto_pin) < 0)
            auto_pin = true;
        if (auto_pin && !o->no_pin)
            pin_now(&a, &lock);
        motd_after_pin(&a);
    }
done:
    /* A verdict that ended the swap goes into the history (a pin did so in ks_pin). */
    if (a.j && lock && !res.history_error)
        (void)ks_history_note(root, a.j, &res.history_error);
    if (a.j)
        res.journal = TAKE_PTR(a.j);
    /* A verdict this run recorded is a change: the command log has it, with the outcome. */
    if (!res.recorded && res.outcome != KS_OUTCOME_NONE && !res.history_error) {
        _cleanup_free_ char *warning = NULL;
        if (ks_command_log_append(root, o->command ? o->command : "accept",
                                  res.pinned ? "pinned" : ks_outcome_to_string(res.outcome),
                                  res.journal, &warning) < 0 ||
            warning)
            res.history_error = TAKE_PTR(warning);
    }
    keep_metrics_error(&res, res.journal);
    *ret = res;
    return 0;
fail:
    ks_journal_free(a.j);
    r = r < 0 ? r : -EIO;
    *ret = (ks_accept_result){.error = TAKE_PTR(res.error)};
    ks_accept_result_done(&res);
    return r;
}

int ks_accept_reboot(const ks_root *root, ks_accept_result *result, char **ret_error)
{
    _cleanup_free_ char *root_abs = NULL;
    char *argv[] = {(char *)"systemctl", (char *)"reboot", NULL};
    ks_spawn_result res = {0};
    ks_check_ctx ctx = {.root = root};
    int r;

    if (!ks_root_is_host(root)) {
        root_abs = realpath(ks_root_path(root), NULL);
        if (!root_abs)
            return -errno;
        ctx.root_abs = root_abs;
    }
    {
        /* The hooks ran since the verdict: look once more, right before the reboot. */
        _cleanup_free_ char *unsafe = NULL;
        r = old_boot_unsafe(root, result->old_kernel, result->kernel, &unsafe);
        if (r < 0)
            return r;
        if (unsafe) {
            if (result->journal) {
                note_no_reboot(result->journal, unsafe);
                keep_metrics_error(result, result->journal);
            }
            if (ret_error)
                *ret_error = TAKE_PTR(unsafe);
            return -EPERM;
        }
    }
    if (result->journal) {
        ks_journal_count_reboot(result->journal);
        (void)ks_journal_step_begin(result->journal, "reboot");
    }
    r = ks_check_spawn(&ctx, argv, 60000, &res);
    if (r >= 0 && !ks_spawn_succeeded(&res)) {
        _cleanup_free_ char *last = ks_spawn_last_line(&res);
        if (ret_error)
            *ret_error =
                ks_asprintf("systemctl reboot failed: %s", last && *last ? last : "(no output)");
        r = -EIO;
    } else if (r < 0 && ret_error) {
        *ret_error = ks_asprintf("cannot run systemctl reboot: %s", strerror(-r));
    }
    ks_spawn_result_done(&res);
    if (result->journal)
        (void)ks_journal_step_end(result->journal, "reboot", r < 0 ? KS_STEP_FAILED : KS_STEP_DONE,
                                  "systemctl reboot");
    keep_metrics_error(result, result->journal);
    return r;
}

int ks_accept_stay(const ks_root *root, char **ret_error)
{
    char *argv[] = {(char *)"systemctl", (char *)"stop", (char *)"--no-block",
                    (char *)KS_TRIAL_DEADLINE_UNIT, NULL};
    _cleanup_free_ char *root_abs = NULL, *cmdline = NULL;
    _cleanup_strv_free_ char **words = NULL;
    ks_check_ctx ctx = {.root = root};
    ks_spawn_result res = {0};
    bool trial = false;
    int r;

    /* Only the trial boot has the deadline (kswap.trial= on its command line). */
    if (ks_root_read_line(root, "proc/cmdline", &cmdline) < 0)
        return 0;
    if (ks_strv_split(cmdline, " \t", &words) < 0)
        return -ENOMEM;
    for (char **w = words; w && *w && !trial; w++)
        trial = ks_startswith(*w, "kswap.trial=") != NULL;
    if (!trial)
        return 0;
    if (!ks_root_is_host(root)) {
        root_abs = realpath(ks_root_path(root), NULL);
        if (!root_abs)
            return -errno;
        ctx.root_abs = root_abs;
    }
    r = ks_check_spawn(&ctx, argv, 60000, &res);
    if (r >= 0 && !ks_spawn_succeeded(&res)) {
        _cleanup_free_ char *last = ks_spawn_last_line(&res);
        if (ret_error)
            *ret_error = ks_asprintf("cannot stop %s: %s", KS_TRIAL_DEADLINE_UNIT,
                                     last && *last ? last : "(no output)");
        r = -EIO;
    } else if (r < 0 && ret_error)
        *ret_error =
            ks_asprintf("cannot run systemctl stop %s: %s", KS_TRIAL_DEADLINE_UNIT, strerror(-r));
    ks_spawn_result_done(&res);
    return r < 0 ? r : 1;
}

int ks_accept_run_hooks(const ks_root *root, const char *which, const char *json,
                        unsigned timeout_ms, char ***ret_failures)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/%s", KS_HOOKS_DIR, which), *root_abs = NULL;
    _cleanup_free_ char *root_env = NULL;
    _cleanup_strv_free_ char **names = NULL, **failures = NULL;
    _cleanup_close_ int fd = -1;
    char *env[2] = {NULL, NULL};
    size_t len = strlen(json);
    int r;

    if (!dir)
        return -ENOMEM;
    r = ks_root_list_dir(root, dir, &names);
    if (r == -ENOENT || r == -ENOTDIR)
        return 0;
    if (r < 0)
        return r;
    if (!ks_root_is_host(root)) {
        root_abs = realpath(ks_root_path(root), NULL);
        if (!root_abs)
            return -errno;
        root_env = ks_asprintf("KSWAP_ROOT=%s", root_abs);
        if (!root_env)
            return -ENOMEM;
        env[0] = root_env;
    }
    /* The JSON on stdin: one memory file, rewound for every hook. */
    fd = memfd_create("kswap-accept.json", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (write(fd, json, len) != (ssize_t)len)
        return -EIO;
    for (char **n = names; n && *n; n++) {
        _cleanup_free_ char *rel = NULL, *path = NULL, *why = NULL, *interp_error = NULL;
        char *argv[2] = {NULL, NULL};
        ks_spawn_result res = {0};
        _cleanup_close_ int exe = -1;
        struct stat st;

        if ((*n)[0] == '.' || ks_endswith(*n, "~"))
            continue;
        rel = ks_asprintf("%s/%s", dir, *n);
        if (!rel)
            return -ENOMEM;
        if (ks_root_stat(root, rel, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
            continue;
        path = ks_asprintf("%s/%s", root_abs ? root_abs : "", rel);
        if (!path || lseek(fd, 0, SEEK_SET) < 0)
            return -ENOMEM;
        argv[0] = path;
        /* Run as opened inside the root: a link to /sbin/reboot names the root's file. */
        exe = ks_spawn_open_in_root_full(root, rel, &interp_error);
        r = exe < 0 ? exe
                    : ks_spawn(argv,
                               KS_SPAWN_OPTS(.timeout_ms = timeout_ms, .env = env, .stdin_fd = fd,
                                             .max_output = 4096, .exec_fd = exe),
                               &res);
        if (r < 0 && interp_error)
            why = ks_asprintf("%s: cannot run: %s", *n, interp_error);
        else if (r < 0)
            why = ks_asprintf("%s: cannot run: %s", *n, strerror(-r));
        else if (res.timed_out)
            why = ks_asprintf("%s: did not finish in %u s and was stopped", *n, timeout_ms / 1000);
        else if (!ks_spawn_succeeded(&res)) {
            _cleanup_free_ char *last = ks_spawn_last_line(&res);
            why = ks_asprintf("%s: exit %d%s%s", *n, res.exit_code, last && *last ? ": " : "",
                              strempty(last));
        }
        if (r >= 0)
            ks_spawn_result_done(&res);
        if (why && ks_strv_push(&failures, TAKE_PTR(why)) < 0)
            return -ENOMEM;
    }
    if (ret_failures)
        *ret_failures = TAKE_PTR(failures);
    return 0;
}

void ks_check_now_result_done(ks_check_now_result *r)
{
    free(r->kernel);
    ks_checklist_done(&r->checks);
    ks_strv_free(r->items);
    ks_strv_free(r->wanted);
    ks_strv_free(r->not_snapshotted);
    free(r->error);
    *r = (ks_check_now_result){0};
}

/* The trial boot carries kswap.trial= on its command line (lib/engine/trialboot.h). */
static bool is_trial_boot(const ks_root *root)
{
    _cleanup_free_ char *cmdline = NULL;
    _cleanup_strv_free_ char **words = NULL;

    if (ks_root_read_line(root, "proc/cmdline", &cmdline) < 0 ||
        ks_strv_split(cmdline, " \t", &words) < 0)
        return false;
    for (char **w = words; w && *w; w++)
        if (ks_startswith(*w, "kswap.trial="))
            return true;
    return false;
}

static int check_now(const ks_root *root, const ks_config *cfg, bool with_items,
                     ks_check_now_result *ret)
{
    _cleanup_free_ char *abs = NULL, *cfg_err = NULL;
    ks_check_now_result res = {0};
    ks_run_snapshot now = {0};
    ks_check_ctx ctx;
    int r;

    r = ks_running_kernel(root, &res.kernel);
    if (r < 0) {
        res.error = ks_asprintf("cannot read the running kernel: %s", strerror(-r));
        goto fail;
    }
    r = ks_check_ctx_for_root(root, cfg, res.kernel, &ctx, &abs);
    if (r < 0) {
        res.error = ks_asprintf("cannot resolve the root: %s", strerror(-r));
        goto fail;
    }
    ctx.trial = is_trial_boot(root);
    r = ks_checklist_from_config(root, cfg, &res.checks, &cfg_err);
    if (r < 0) {
        res.error = ks_asprintf("cannot read the checklist: %s", cfg_err ? cfg_err : strerror(-r));
        goto fail;
    }
    r = ks_run_snapshot_take(&ctx, &now);
    /* The floor asks what accept will ask of a trial armed now, given the snapshot arming
     * would take: a node with no default route (or nothing on the management port) today is
     * not asked for one after the trial either. */
    if (r >= 0)
        r = ks_checklist_add_floor(&res.checks, cfg, now.items, true);
    /* Before apply, what runs now is the snapshot itself: judging it against itself proves
     * nothing and trips over units that come and go in that moment. */
    if (r >= 0 && with_items)
        r = ks_checklist_add_snapshot(&res.checks, &now, cfg);
    if (r < 0) {
        res.error = ks_asprintf("cannot take the snapshot of what runs: %s", strerror(-r));
        goto fail;
    }
    res.n_items = (unsigned)ks_strv_length(now.items);
    res.established = now.established;
    res.not_snapshotted = TAKE_PTR(now.skipped);
    res.items = TAKE_PTR(now.items);
    res.wanted = TAKE_PTR(now.wanted);
    ks_run_snapshot_done(&now);
    r = ks_checks_run(&res.checks, &ctx, &(ks_runner_opts){.timeout_ms = 0});
    if (r < 0) {
        res.error = strdup(strerror(-r));
        goto fail;
    }
    res.passed = r > 0;
    *ret = res;
    return 0;
fail:
    ks_run_snapshot_done(&now);
    *ret = (ks_check_now_result){.error = TAKE_PTR(res.error)};
    ks_check_now_result_done(&res);
    return r < 0 ? r : -EIO;
}

int ks_check_now(const ks_root *root, const ks_config *cfg, ks_check_now_result *ret)
{
    return check_now(root, cfg, true, ret);
}

int ks_check_before_apply(const ks_root *root, const ks_config *cfg, ks_check_now_result *ret)
{
    return check_now(root, cfg, false, ret);
}
