/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/engine/states.h"

static const ks_state_info state_infos[_KS_STATE_MAX] = {
    [KS_STATE_IDLE] = {.name = "idle"},
    [KS_STATE_PREPARED] = {.name = "prepared", .in_flight = true, .resumable = true, .order = 1},
    [KS_STATE_INSTALLED] = {.name = "installed", .in_flight = true, .resumable = true, .order = 2},
    [KS_STATE_VERIFIED] = {.name = "verified", .in_flight = true, .resumable = true, .order = 3},
    [KS_STATE_ARMED] = {.name = "armed", .in_flight = true, .trial = true, .order = 4},
    [KS_STATE_TRIAL_BOOTED] = {.name = "trial-booted", .in_flight = true, .trial = true},
    [KS_STATE_PINNED] = {.name = "pinned", .terminal = true},
    [KS_STATE_FAILED] = {.name = "failed", .terminal = true},
    [KS_STATE_ROLLED_BACK] = {.name = "rolled-back", .terminal = true},
};

static const ks_outcome_info outcome_infos[_KS_OUTCOME_MAX] = {
    [KS_OUTCOME_NONE] = {.exit_code = KS_CODE_NOTHING},
    [KS_OUTCOME_TRIAL_OK] = {.name = "trial-ok", .final = true, .exit_code = KS_CODE_OK},
    [KS_OUTCOME_HEALTH_FAILED] = {.name = "health-failed",
                                  .failed = true,
                                  .final = true,
                                  .exit_code = KS_CODE_FAILED},
    [KS_OUTCOME_FELL_BACK] = {.name = "fell-back",
                              .failed = true,
                              .final = true,
                              .exit_code = KS_CODE_FAILED},
    [KS_OUTCOME_NO_REBOOT] = {.name = "no-reboot", .exit_code = KS_CODE_NOTHING},
    [KS_OUTCOME_TRIAL_HUNG] = {.name = "trial-hung",
                               .failed = true,
                               .final = true,
                               .exit_code = KS_CODE_FAILED},
};

const char *ks_state_to_string(ks_state s)
{
    const ks_state_info *i = ks_state_info_get(s);
    return i ? i->name : NULL;
}

ks_state ks_state_from_string(const char *s)
{
    for (int i = 0; s && i < _KS_STATE_MAX; i++)
        if (streq(state_infos[i].name, s))
            return (ks_state)i;
    return _KS_STATE_INVALID;
}

const char *ks_outcome_to_string(ks_outcome o)
{
    const ks_outcome_info *i = ks_outcome_info_get(o);
    return i ? i->name : NULL;
}

ks_outcome ks_outcome_from_string(const char *s)
{
    for (int i = 0; s && i < _KS_OUTCOME_MAX; i++)
        if (streq_ptr(outcome_infos[i].name, s))
            return (ks_outcome)i;
    return _KS_OUTCOME_INVALID;
}

/*
 * Every change of state kswap makes. "A step failed" is a step that began and failed (the
 * journal names it); a command refused before its first change records nothing
 * (lib/engine/swap-run.h, ks_run_refuse).
 */
static const ks_transition transitions[] = {
    /* apply, step by step */
    {KS_STATE_IDLE, KS_STATE_PREPARED, "apply: prepare done"},
    {KS_STATE_PREPARED, KS_STATE_INSTALLED, "apply: install done (or skipped)"},
    {KS_STATE_INSTALLED, KS_STATE_VERIFIED, "apply: verify done"},
    {KS_STATE_VERIFIED, KS_STATE_ARMED, "apply: arm done"},
    /* a new swap over one that ended (apply; pin of another kernel) */
    {KS_STATE_PINNED, KS_STATE_IDLE, "apply or pin RELEASE: a new swap"},
    {KS_STATE_FAILED, KS_STATE_IDLE, "apply or pin RELEASE: a new swap"},
    {KS_STATE_ROLLED_BACK, KS_STATE_IDLE, "apply or pin RELEASE: a new swap"},
    {KS_STATE_TRIAL_BOOTED, KS_STATE_IDLE,
     "apply: trial-ok but the old kernel runs (restarted before the pin): the trial again"},
    /* the trial */
    {KS_STATE_ARMED, KS_STATE_TRIAL_BOOTED, "accept: the trial kernel runs, its checks begin"},
    {KS_STATE_TRIAL_BOOTED, KS_STATE_PINNED, "accept or pin: trial-ok, pinned"},
    {KS_STATE_TRIAL_BOOTED, KS_STATE_ROLLED_BACK, "accept: health-failed, disarmed; rollback"},
    {KS_STATE_ARMED, KS_STATE_ROLLED_BACK, "accept: fell-back or trial-hung, disarmed; rollback"},
    /* pin --force */
    {KS_STATE_IDLE, KS_STATE_PINNED, "pin --force"},
    {KS_STATE_PREPARED, KS_STATE_PINNED, "pin --force of the new kernel"},
    {KS_STATE_INSTALLED, KS_STATE_PINNED, "pin --force of the new kernel"},
    {KS_STATE_VERIFIED, KS_STATE_PINNED, "pin --force of the new kernel"},
    {KS_STATE_ARMED, KS_STATE_PINNED, "pin --force of the trial kernel"},
    {KS_STATE_FAILED, KS_STATE_PINNED, "pin --force"},
    {KS_STATE_ROLLED_BACK, KS_STATE_PINNED, "pin --force"},
    /* rollback */
    {KS_STATE_IDLE, KS_STATE_ROLLED_BACK,
     "rollback: an apply stopped before prepare, or a trial the journal lost"},
    {KS_STATE_PREPARED, KS_STATE_ROLLED_BACK, "rollback"},
    {KS_STATE_INSTALLED, KS_STATE_ROLLED_BACK, "rollback"},
    {KS_STATE_VERIFIED, KS_STATE_ROLLED_BACK, "rollback"},
    {KS_STATE_PINNED, KS_STATE_ROLLED_BACK, "rollback"},
    {KS_STATE_FAILED, KS_STATE_ROLLED_BACK, "rollback"},
    /* a step that began failed */
    {KS_STATE_IDLE, KS_STATE_FAILED, "apply: repository or prepare failed; pin failed"},
    {KS_STATE_PREPARED, KS_STATE_FAILED, "apply: install failed; rollback failed"},
    {KS_STATE_INSTALLED, KS_STATE_FAILED, "apply: verify failed or blocked; rollback failed"},
    {KS_STATE_VERIFIED, KS_STATE_FAILED, "apply: arm failed or blocked; rollback failed"},
    {KS_STATE_ARMED, KS_STATE_FAILED, "accept: fell-back but not disarmed; pin or rollback failed"},
    {KS_STATE_TRIAL_BOOTED, KS_STATE_FAILED,
     "accept: health-failed but not disarmed; pin or rollback failed"},
    {KS_STATE_PINNED, KS_STATE_FAILED, "pin or rollback failed"},
    {KS_STATE_ROLLED_BACK, KS_STATE_FAILED, "rollback failed"},
};

const ks_state_info *ks_state_info_get(ks_state s)
{
    return s >= 0 && s < _KS_STATE_MAX ? &state_infos[s] : NULL;
}

const ks_outcome_info *ks_outcome_info_get(ks_outcome o)
{
    return o >= 0 && o < _KS_OUTCOME_MAX ? &outcome_infos[o] : NULL;
}

const ks_transition *ks_transitions(size_t *ret_n)
{
    *ret_n = ARRAY_SIZE(transitions);
    return transitions;
}

bool ks_state_transition_ok(ks_state from, ks_state to, const ks_transition **ret)
{
    if (!ks_state_info_get(from) || !ks_state_info_get(to))
        return false;
    if (from == to) {
        if (ret)
            *ret = NULL;
        return true;
    }
    for (size_t i = 0; i < ARRAY_SIZE(transitions); i++)
        if (transitions[i].from == from && transitions[i].to == to) {
            if (ret)
                *ret = &transitions[i];
            return true;
        }
    return false;
}
