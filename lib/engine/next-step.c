/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>

#include "lib/engine/apply-source.h"
#include "lib/engine/bootctl.h"
#include "lib/engine/next-step.h"

/* What a rule looks at. */
typedef struct next_ctx {
    const ks_next_input *in;
    ks_state state;
    const ks_state_info *info;
    ks_outcome outcome;
    const char *old, *new, *running;
    bool closed;
} next_ctx;

static bool is(const next_ctx *c, ks_state s)
{
    return c->state == s;
}

static bool runs_old(const next_ctx *c)
{
    return c->running && c->old && streq(c->running, c->old);
}

static bool runs_new(const next_ctx *c)
{
    return c->running && c->new &&streq(c->running, c->new);
}

/* ---- the conditions of the rules, each named for what it asks ---- */

static bool unreadable(const next_ctx *c)
{
    return !c->in->j;
}

static bool grubenv_unreadable(const next_ctx *c)
{
    return c->in->grub_error && strstr(c->in->grub_error, "grubenv");
}

static bool grub_unreadable(const next_ctx *c)
{
    return c->in->grub_error != NULL;
}

static bool drifted(const next_ctx *c)
{
    return c->in->drifted && !is(c, KS_STATE_PINNED);
}

static bool drifted_pinned(const next_ctx *c)
{
    return c->in->drifted && is(c, KS_STATE_PINNED);
}

static bool orphaned(const next_ctx *c)
{
    return c->in->orphan != NULL;
}

static bool rollback_cut(const next_ctx *c)
{
    const ks_journal_step *s = ks_journal_step_find(c->in->j, KS_STEP_ROLLBACK);
    return s && s->status == KS_STEP_STARTED;
}

/* A pin began and did not end (cut between GRUB's default and the journal's pinned). */
static bool pin_began(const ks_journal *j)
{
    const ks_journal_step *s = ks_journal_step_find(j, KS_STEP_PIN);
    return s && s->status == KS_STEP_STARTED && ks_journal_state(j) != KS_STATE_PINNED;
}

static bool pin_cut_passed(const next_ctx *c)
{
    return pin_began(c->in->j) && c->outcome == KS_OUTCOME_TRIAL_OK && runs_new(c);
}

static bool pin_cut(const next_ctx *c)
{
    return pin_began(c->in->j);
}

/* Day two: an idle or pinned node whose branch has a newer release, GRUB as kswap set it. */
static bool update_available(const next_ctx *c)
{
    return c->in->update_newest && c->in->update_command && !c->in->drifted &&
           (is(c, KS_STATE_IDLE) || is(c, KS_STATE_PINNED));
}

static bool idle(const next_ctx *c)
{
    return is(c, KS_STATE_IDLE);
}

/* Idle promises no boot, but a default that names no entry promises none either: the first
 * entry boots, which the next kernel apt installs takes over, tried or not. */
static bool idle_default_unresolved(const next_ctx *c)
{
    return is(c, KS_STATE_IDLE) && c->in->default_unresolved && c->running;
}

static bool stopped_elsewhere(const next_ctx *c)
{
    return c->info->resumable && !runs_old(c);
}

static bool stopped(const next_ctx *c)
{
    return c->info->resumable;
}

static bool armed_this_boot(const next_ctx *c)
{
    const char *armed = ks_journal_armed_boot_id(c->in->j);
    return is(c, KS_STATE_ARMED) && armed && c->in->boot_id && streq(armed, c->in->boot_id);
}

static bool passed_then_restarted(const next_ctx *c)
{
    return c->info->trial && c->outcome == KS_OUTCOME_TRIAL_OK && c->running && c->new &&
           !runs_new(c);
}

static bool passed_not_pinned(const next_ctx *c)
{
    return c->info->trial && c->outcome == KS_OUTCOME_TRIAL_OK;
}

static bool back_without_verdict(const ks_state_info *i, const next_ctx *c)
{
    return i->trial && c->running && c->new && !runs_new(c);
}

static bool trial_came_back(const next_ctx *c)
{
    return back_without_verdict(c->info, c);
}

static bool trial_waits(const next_ctx *c)
{
    return c->info->trial;
}

static bool pinned_other_runs(const next_ctx *c)
{
    return is(c, KS_STATE_PINNED) && c->running && c->new && !runs_new(c);
}

static bool pinned(const next_ctx *c)
{
    return is(c, KS_STATE_PINNED);
}

static bool failed_open(const next_ctx *c)
{
    return is(c, KS_STATE_FAILED) && !c->closed;
}

static bool failed_closed(const next_ctx *c)
{
    return is(c, KS_STATE_FAILED);
}

static bool back_not_booted(const next_ctx *c)
{
    return is(c, KS_STATE_ROLLED_BACK) && c->running && c->old && !runs_old(c);
}

static bool trial_failed_open(const next_ctx *c)
{
    return is(c, KS_STATE_ROLLED_BACK) && ks_outcome_failed(c->outcome) && !c->closed;
}

static bool leftovers(const next_ctx *c)
{
    return is(c, KS_STATE_ROLLED_BACK) && ks_swap_has_leftovers(c->in->j, c->running);
}

static bool rolled_back(const next_ctx *c)
{
    return is(c, KS_STATE_ROLLED_BACK);
}

/* The exit code of a rule that depends on the verdict: a failed trial not closed yet fails. */
#define KS_CODE_TRIAL -1

/*
 * The rules, first match wins. In command and why, {old}, {new}, {running}, {state},
 * {outcome}, {error} are the journal's and this boot's, {update_*} day two's; {apply} is "kswap
 * apply" with the options of the journal's source (lib/engine/apply-source.h).
 */
static const struct next_rule {
    bool (*when)(const next_ctx *c);
    const char *command;
    const char *why;
    int exit_code;
} rules[] = {
    {grubenv_unreadable, "grub-editenv /" KS_GRUBENV_PATH " create",
     "GRUB's environment block cannot be read ({grub}): no kswap command changes GRUB before it "
     "is repaired; recreate it, then run 'kswap status' again (its next step makes the right "
     "kernel the default)",
     KS_CODE_ERROR},
    {grub_unreadable, "update-grub",
     "GRUB's state cannot be read ({grub}): regenerate grub.cfg, then run 'kswap status' again",
     KS_CODE_ERROR},
    {unreadable, "kswap rollback",
     "the state journal cannot be read ({error}): 'kswap rollback' moves it aside to "
     "/" KS_JOURNAL_DAMAGED_PATH ", disarms a kswap trial GRUB still holds and makes the old "
     "kernel the default",
     KS_CODE_ERROR},
    {orphaned, "kswap rollback",
     "a kswap trial is in GRUB's setup but the state journal does not know it: rollback disarms "
     "it and makes the old kernel ({old}) the default",
     KS_CODE_FAILED},
    {rollback_cut, "kswap rollback",
     "a rollback began and did not end (cut by a power loss or a kill): run it again",
     KS_CODE_FAILED},
    {pin_cut_passed, "kswap pin",
     "the pin of {new} began and did not end (cut by a power loss or a kill): run it again",
     KS_CODE_FAILED},
    {pin_cut, "kswap pin {new} --force",
     "the pin of {new} began and did not end (cut by a power loss or a kill; GRUB may start "
     "{new} already): run it again, or 'kswap rollback' makes {old} the default",
     KS_CODE_FAILED},
    {idle_default_unresolved, "kswap pin {running} --force",
     "GRUB's default names no entry (grubenv recreated or edited): GRUB falls back to its first "
     "entry, which the next kernel installed takes over whether it was tried or not; pin makes "
     "the running kernel ({running}), which boots, the default",
     KS_CODE_FAILED},
    {update_available, "{update_command} --yes",
     "{update_newest} is {update_where}, newer than {update_current}: a trial boot of it, "
     "{update_current} stays the way back",
     KS_CODE_OK},
    {idle, "kswap plan", "assess this host, then 'kswap apply'", KS_CODE_OK},
    {drifted_pinned, "kswap pin {new} --force",
     "{new} is pinned, but GRUB's next boots are not all {new} (grubenv was changed by someone "
     "else): pin makes it the default again",
     KS_CODE_FAILED},
    {drifted, "kswap rollback",
     "the journal says {state}, but GRUB's next boots are not what kswap set up (grubenv was "
     "changed by someone else): rollback makes {old} the default again",
     KS_CODE_FAILED},
    {stopped_elsewhere, "kswap rollback",
     "an apply started on {old} stopped after '{state}', and {running} runs: it cannot resume "
     "here; rollback undoes it",
     KS_CODE_FAILED},
    {stopped, "{apply} --yes",
     "an apply stopped after '{state}': running it again resumes; 'kswap rollback' undoes it",
     KS_CODE_NOTHING},
    {armed_this_boot, "{apply} --yes --reboot",
     "reboot to start the trial of {new} (kswap looks at what the next boots load first); "
     "'kswap rollback' cancels it",
     KS_CODE_NOTHING},
    {passed_then_restarted, "{apply} --yes",
     "acceptance passed on {new}, but the machine restarted before it was pinned and {running} "
     "runs: apply tries it again, 'kswap pin {new} --force' pins it without a trial",
     KS_CODE_FAILED},
    {passed_not_pinned, "kswap pin", "acceptance passed on {new} but it is not pinned yet",
     KS_CODE_OK},
    {trial_came_back, "kswap accept",
     "the trial boot of {new} is over and {running} runs without a verdict: accept judges it "
     "(kswap-accept.service does at boot)",
     KS_CODE_NOTHING},
    {trial_waits, "kswap status --wait",
     "the trial boot of {new} waits for kswap-accept.service's verdict (journalctl -u "
     "kswap-accept.service)",
     KS_CODE_NOTHING},
    {pinned_other_runs, "systemctl reboot", "{new} is pinned but {running} runs", KS_CODE_OK},
    {pinned, NULL, "nothing to do: {new} starts on every boot", KS_CODE_OK},
    {failed_open, "kswap rollback",
     "the swap to {new} failed (see the reason): rollback makes {old} the default again and "
     "closes it, --purge also removes what was installed; 'kswap status --ack' closes it as it "
     "is",
     KS_CODE_FAILED},
    {failed_closed, "kswap rollback",
     "the swap to {new} failed and was acknowledged: rollback makes {old} the default again",
     KS_CODE_OK},
    {back_not_booted, "kswap rollback --reboot",
     "{old} is the default again but {running} still runs (kswap looks at what the next boots "
     "load before it reboots)",
     KS_CODE_TRIAL},
    {trial_failed_open, "kswap status --ack",
     "the trial of {new} failed ({outcome}) and {old} runs again: read why (journalctl -b -1 -p "
     "warning), then 'kswap status --ack' closes it; 'kswap rollback --purge' also removes what "
     "was installed, 'kswap apply' tries again",
     KS_CODE_FAILED},
    {leftovers, "kswap rollback --purge",
     "{old} is the default; --purge removes what kswap installed", KS_CODE_OK},
    {rolled_back, NULL, "nothing to do: {old} starts on every boot", KS_CODE_OK},
};

/* The value of a {key} of the templates. */
static char *value_of(const next_ctx *c, const char *key, size_t n)
{
    const ks_journal *j = c->in->j;
#define KEY(k) (n == strlen(k) && strncmp(key, k, n) == 0)
    if (KEY("apply"))
        return ks_apply_command(j ? ks_journal_get(j, KS_JF_SOURCE) : NULL, NULL);
    if (KEY("old"))
        return strdup(c->old ? c->old : "the old kernel");
    if (KEY("new"))
        return strdup(c->new ? c->new : "the new kernel");
    if (KEY("running"))
        return strdup(c->running ? c->running : "another kernel");
    if (KEY("state"))
        return strdup(strempty(ks_state_to_string(c->state)));
    if (KEY("outcome"))
        return strdup(c->outcome ? strempty(ks_outcome_to_string(c->outcome)) : "not judged");
    if (KEY("error"))
        return strdup(c->in->journal_error ? c->in->journal_error : "unreadable");
    if (KEY("grub"))
        return strdup(c->in->grub_error ? c->in->grub_error : "unreadable");
    if (KEY("update_command"))
        return strdup(strempty(c->in->update_command));
    if (KEY("update_newest"))
        return strdup(strempty(c->in->update_newest));
    if (KEY("update_current"))
        return strdup(c->in->update_current ? c->in->update_current : "the running kernel");
    if (KEY("update_where"))
        return strdup(c->in->update_installed ? "installed but not the default" : "in apt's lists");
#undef KEY
    return strndup(key - 1, n + 2); /* not a key: as written */
}

static char *expand(const next_ctx *c, const char *template)
{
    char *out = strdup("");

    for (const char *p = template; out && *p;) {
        const char *open = strchr(p, '{'), *close = open ? strchr(open, '}') : NULL;
        _cleanup_free_ char *v = NULL;
        char *n;

        if (!open || !close) {
            n = ks_asprintf("%s%s", out, p);
            free(out);
            return n;
        }
        v = value_of(c, open + 1, (size_t)(close - open - 1));
        n = v ? ks_asprintf("%s%.*s%s", out, (int)(open - p), p, v) : NULL;
        free(out);
        out = n;
        p = close + 1;
    }
    return out;
}

/* Boot i of the forecast starts release (as a one-shot or not), and GRUB neither waits nor fell
 * back to entry 0. */
static bool boot_is(const ks_grub_forecast *f, size_t i, const char *release, bool one_shot)
{
    const ks_grub_forecast_boot *b = i < f->n ? &f->v[i] : NULL;
    return b && release && !b->waits && !b->fell_back && streq_ptr(b->kernel, release) &&
           b->one_shot == one_shot;
}

static bool every_boot(const ks_grub_forecast *f, const char *release)
{
    for (size_t i = 0; i < 3; i++)
        if (!boot_is(f, i, release, false))
            return false;
    return true;
}

static bool armed_boots(const ks_grub_forecast *f, const char *new, const char *old)
{
    return boot_is(f, 0, new, true) && boot_is(f, 1, old, false) && boot_is(f, 2, old, false);
}

bool ks_forecast_default_unresolved(const ks_grub_forecast *f)
{
    return f->n > 0 && f->v[0].fell_back;
}

bool ks_state_forecast_holds(const ks_journal *j, const ks_grub_forecast *f, const char *boot_id)
{
    const char *old = ks_journal_get(j, KS_JF_OLD_KERNEL),
               *new = ks_journal_get(j, KS_JF_NEW_KERNEL), *armed = ks_journal_armed_boot_id(j);

    /* A pin cut short made the new kernel the default before the journal said so. */
    if (pin_began(j) && every_boot(f, new))
        return true;
    switch (ks_journal_state(j)) {
    case KS_STATE_IDLE:
        return true;
    case KS_STATE_PINNED:
        return every_boot(f, new);
    case KS_STATE_ARMED:
        /* in the boot that armed it the one-shot is there; later the trial boot spent it */
        if (armed && boot_id && streq(armed, boot_id))
            return armed_boots(f, new, old);
        return every_boot(f, old) || armed_boots(f, new, old);
    case KS_STATE_PREPARED:
    case KS_STATE_INSTALLED:
    case KS_STATE_VERIFIED:
    case KS_STATE_FAILED:
        return every_boot(f, old) || armed_boots(f, new, old);
    default: /* trial-booted, rolled-back */
        return every_boot(f, old);
    }
}

bool ks_swap_closed(const ks_journal *j)
{
    const ks_journal_step *rb = ks_journal_step_find(j, KS_STEP_ROLLBACK),
                          *ack = ks_journal_step_find(j, KS_STEP_ACKNOWLEDGE);

    return (rb && rb->status == KS_STEP_DONE) || (ack && ack->status == KS_STEP_DONE);
}

bool ks_swap_has_leftovers(const ks_journal *j, const char *running)
{
    const char *old = ks_journal_get(j, KS_JF_OLD_KERNEL);

    for (size_t i = 0; i < ks_journal_n_changes(j); i++) {
        const ks_journal_change *ch = ks_journal_change_get(j, i);
        const char *rel = ks_startswith(ch->name, "linux-image-");

        if (ch->kind == KS_CHANGE_PACKAGE &&
            !(rel && (streq_ptr(rel, old) || streq_ptr(rel, running))))
            return true;
        if (ch->kind == KS_CHANGE_FILE && ks_startswith(ch->name, "etc/apt/"))
            return true;
    }
    return false;
}

int ks_next_step(const ks_next_input *in, ks_next *ret)
{
    next_ctx c = {.in = in, .running = in->running};
    const struct next_rule *rule = NULL;

    if (in->j) {
        c.state = ks_journal_state(in->j);
        c.outcome = ks_journal_outcome(in->j);
        c.old = ks_journal_get(in->j, KS_JF_OLD_KERNEL);
        c.new = ks_journal_get(in->j, KS_JF_NEW_KERNEL);
        c.closed = ks_swap_closed(in->j);
    }
    if (in->orphan) {
        c.old = in->orphan->old ? in->orphan->old : in->running;
        c.new = in->orphan->new;
    }
    c.info = ks_state_info_get(c.state);
    for (size_t i = 0; i < ARRAY_SIZE(rules) && !rule; i++)
        if (rules[i].when(&c))
            rule = &rules[i];
    assert(rule); /* rolled_back and pinned end every state's list */
    *ret = (ks_next){
        .command = rule->command ? expand(&c, rule->command) : NULL,
        .why = expand(&c, rule->why),
        .exit_code = rule->exit_code != KS_CODE_TRIAL            ? (ks_code)rule->exit_code
                     : ks_outcome_failed(c.outcome) && !c.closed ? KS_CODE_FAILED
                                                                 : KS_CODE_OK,
    };
    if (!ret->why || (rule->command && !ret->command)) {
        ks_next_done(ret);
        return -ENOMEM;
    }
    return 0;
}

void ks_next_done(ks_next *n)
{
    free(n->command);
    free(n->why);
    *n = (ks_next){0};
}
