/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The snapshot of what runs, taken when a trial is armed and kept in the state journal. */
#include <limits.h>

#include "lib/engine/run-snapshot.h"
#include "lib/basic/util.h"

int ks_check_ctx_for_root(const ks_root *root, const ks_config *cfg, const char *kernel,
                          ks_check_ctx *ret, char **ret_root_abs)
{
    uint64_t prog = 30, script = 60;
    char *abs = NULL;

    if (!ks_root_is_host(root)) {
        abs = realpath(ks_root_path(root), NULL);
        if (!abs)
            return -errno;
    }
    (void)ks_config_get_u64(cfg, "accept", "program_timeout", &prog);
    (void)ks_config_get_u64(cfg, "accept", "script_timeout", &script);
    *ret = (ks_check_ctx){
        .root = root,
        .root_abs = abs,
        .kernel = kernel,
        .program_timeout_ms = (unsigned)prog * 1000u,
        .script_timeout_ms = (unsigned)script * 1000u,
    };
    *ret_root_abs = abs;
    return 0;
}

/* Moves the module items not in before (loaded by the apply itself) to the skipped list. */
static int drop_new_modules(ks_run_snapshot *s, char *const *before)
{
    size_t w = 0;

    for (size_t i = 0; s->items && s->items[i]; i++) {
        char *item = s->items[i];
        if (ks_startswith(item, "module:") && !ks_strv_contains(before, item)) {
            char *why = ks_asprintf("%s: loaded by this apply (not before it)", item);
            if (!why || ks_strv_push(&s->skipped, why) < 0)
                return -ENOMEM;
            free(item);
            continue;
        }
        s->items[w++] = item;
    }
    if (s->items)
        s->items[w] = NULL;
    return 0;
}

int ks_record_running(const ks_root *root, const ks_config *cfg, const char *kernel, ks_journal *j,
                      char *const *modules_before, char **ret_summary)
{
    _cleanup_free_ char *abs = NULL;
    ks_run_snapshot *s = calloc(1, sizeof(*s));
    ks_check_ctx ctx;
    int r, n;

    if (!s)
        return -ENOMEM;
    r = ks_check_ctx_for_root(root, cfg, kernel, &ctx, &abs);
    if (r >= 0)
        r = ks_run_snapshot_take(&ctx, s);
    if (r >= 0 && modules_before)
        r = drop_new_modules(s, modules_before);
    if (r < 0) {
        ks_run_snapshot_done(s);
        free(s);
        return r;
    }
    n = (int)ks_strv_length(s->items);
    if (ret_summary) {
        _cleanup_free_ char *skipped = NULL;
        for (char **p = s->skipped; p && *p; p++) {
            char *nx = ks_asprintf("%s; %s", strempty(skipped), *p);
            if (!nx)
                break;
            free(skipped);
            skipped = nx;
        }
        *ret_summary =
            ks_asprintf("what runs now, to come back after the trial boot: %d items, "
                        "%u established connections%s%s",
                        n, s->established, skipped ? "; not snapshotted" : "", strempty(skipped));
    }
    ks_journal_set_running(j, s);
    return n;
}
