/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/defaults.h"
#include "lib/engine/journal.h"
#include "lib/engine/plan-words.h"
#include "lib/engine/trialboot.h"

static const char *const kswap_words[] = {"kswap.trial", "kswap.deadline", "kswap.softdog"};

bool ks_is_kswap_word(const char *word)
{
    for (size_t i = 0; i < ARRAY_SIZE(kswap_words); i++) {
        const char *rest = ks_startswith(word, kswap_words[i]);
        if (rest && (*rest == '=' || *rest == '\0'))
            return true;
    }
    return false;
}

/* The trial id of the armed trial ("" when none is armed or the journal cannot be read). */
static void armed_trial_id(const ks_root *root, char id[static KS_TRIAL_ID_MAX])
{
    _cleanup_journal_ ks_journal *j = NULL;
    _cleanup_free_ char *err = NULL;

    id[0] = '\0';
    if (ks_journal_load(root, &j, &err) >= 0 && ks_journal_armed_boot_id(j))
        ks_trial_id(ks_journal_armed_boot_id(j), id);
}

/*
 * Appends to *found the kswap words of text, except, when own_from is not NULL, those from the
 * word own_from on (the trial entry's, appended after the node's own). -ENOMEM.
 */
static int collect(const char *text, const char *own_from, char ***found)
{
    _cleanup_strv_free_ char **words = NULL;
    size_t end;
    int r;

    if (!text)
        return 0;
    r = ks_strv_split(text, " \t\n", &words);
    if (r < 0)
        return r;
    end = ks_strv_length(words);
    if (own_from)
        for (size_t i = 0; words[i]; i++)
            if (streq(words[i], own_from))
                end = i; /* the last one: kswap appends its words at the end of the entry */
    for (size_t i = 0; i < end; i++)
        if (ks_is_kswap_word(words[i]) && !ks_strv_contains(*found, words[i]) &&
            (r = ks_strv_extend(found, words[i])) < 0)
            return r;
    return 0;
}

int ks_plan_kswap_words(const ks_root *root, ks_plan *p)
{
    static const char *const keys[] = {"GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT"};
    _cleanup_strv_free_ char **running = NULL, **config = NULL, **where = NULL;
    _cleanup_free_ char *cmdline = NULL, *marker = NULL, *words = NULL, *places = NULL;
    ks_grub_defaults d = {0};
    char id[KS_TRIAL_ID_MAX];
    int r;

    armed_trial_id(root, id);
    if (id[0] && !(marker = ks_asprintf("kswap.trial=%s", id)))
        return -ENOMEM;
    if (ks_root_read_line(root, "proc/cmdline", &cmdline) >= 0) {
        r = collect(cmdline, marker, &running);
        if (r < 0)
            return r;
        if (running && *running && (r = ks_strv_extend(&where, "/proc/cmdline (this boot)")) < 0)
            return r;
    }
    if (ks_grub_defaults_load(root, &d) >= 0)
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
            _cleanup_strv_free_ char **here = NULL;
            const char *file = ks_grub_defaults_file(&d, keys[i]);
            r = collect(ks_grub_defaults_get(&d, keys[i]), NULL, &here);
            if (r >= 0 && here && *here) {
                _cleanup_free_ char *w = ks_asprintf(
                    "%s in /%s", keys[i], file ? file + (*file == '/') : "etc/default/grub");
                for (char **h = here; r >= 0 && *h; h++)
                    if (!ks_strv_contains(config, *h))
                        r = ks_strv_extend(&config, *h);
                if (r >= 0)
                    r = w ? ks_strv_extend(&where, w) : -ENOMEM;
            }
            if (r < 0) {
                ks_grub_defaults_done(&d);
                return r;
            }
        }
    ks_grub_defaults_done(&d);
    if (!where)
        return 0;
    for (char **c = config; c && *c; c++)
        if (!ks_strv_contains(running, *c) && (r = ks_strv_extend(&running, *c)) < 0)
            return r;
    words = ks_strv_join(running, " ");
    places = ks_strv_join(where, ", ");
    if (!words || !places)
        return -ENOMEM;
    return ks_findings_add(&p->findings, "boot.kswap-words", KS_SEV_WARN,
                           "remove kswap.trial=, kswap.deadline= and kswap.softdog= from "
                           "GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT, run update-grub",
                           "the node's own kernel command line carries kswap's trial words (%s: "
                           "%s): they belong on the trial entry kswap writes; the trial boot "
                           "ignores a marker kswap did not arm, but every boot looks like a "
                           "trial to people and tools, and an old trial's deadline and softdog "
                           "come back with it",
                           words, places);
}
