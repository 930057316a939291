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

/*
 * The items not in before, the sample taken when this apply began (its check step), did not
 * run all along on the old kernel. A module is one the apply itself loaded (update-grub's
 * grub-probe loads dm_mod on Debian 13): skipped. Anything else came and went while the old
 * kernel ran (a unit restarting, a link flapping, a peer in touch now and then): the old
 * kernel's own boot showed it as not stable, so it is reported after the trial (wanted), never
 * required. *ret_unstable: those items, for the progress line.
 */
/* A wanted module that was not loaded before this apply (an idle one: checks/check-module.c)
 * is the apply's own too: skipped, as a required one is. */
static int drop_loaded_by_apply(ks_run_snapshot *s, char *const *before)
{
    size_t w = 0, i;
    int r = 0;

    for (i = 0; s->wanted && s->wanted[i]; i++) {
        char *item = s->wanted[i];
        if (r < 0 || !ks_startswith(item, "module:") || ks_strv_contains(before, item)) {
            s->wanted[w++] = item;
            continue;
        }
        r = ks_strv_push(&s->skipped,
                         ks_asprintf("%s: loaded by this apply (not before it)", item));
        free(item);
    }
    if (s->wanted)
        s->wanted[w] = NULL;
    return r;
}

static int drop_unstable(ks_run_snapshot *s, char *const *before, char ***ret_unstable)
{
    size_t w = 0, i;
    int r = 0;

    for (i = 0; s->items && s->items[i] && r >= 0; i++) {
        char *item = s->items[i];
        if (ks_strv_contains(before, item))
            s->items[w++] = item;
        else if (ks_startswith(item, "module:")) {
            r = ks_strv_push(&s->skipped,
                             ks_asprintf("%s: loaded by this apply (not before it)", item));
            free(item);
        } else {
            r = ks_strv_extend(ret_unstable, item);
            if (r >= 0)
                r = ks_strv_push(&s->wanted, item); /* frees item when it fails */
            else
                free(item);
        }
    }
    /* Out of memory: what was not looked at yet goes too, nothing is freed twice. */
    for (; s->items && s->items[i]; i++)
        free(s->items[i]);
    if (s->items)
        s->items[w] = NULL;
    if (r >= 0)
        r = drop_loaded_by_apply(s, before);
    ks_strv_sort(s->wanted);
    return r;
}

int ks_record_running(const ks_root *root, const ks_config *cfg, const char *kernel, ks_journal *j,
                      char *const *items_before, char **ret_summary)
{
    _cleanup_free_ char *abs = NULL;
    _cleanup_strv_free_ char **unstable = NULL;
    ks_run_snapshot *s = calloc(1, sizeof(*s));
    ks_check_ctx ctx;
    int r, n;

    if (!s)
        return -ENOMEM;
    r = ks_check_ctx_for_root(root, cfg, kernel, &ctx, &abs);
    if (r >= 0)
        r = ks_run_snapshot_take(&ctx, s);
    if (r >= 0 && items_before)
        r = drop_unstable(s, items_before, &unstable);
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
        _cleanup_free_ char *moved = unstable ? ks_strv_join(unstable, " ") : NULL;
        *ret_summary = ks_asprintf(
            "what runs now, to come back after the trial boot: %d items, %u established "
            "connections%s%s%s%s",
            n, s->established,
            moved ? "; not running all along since this apply began, reported but not "
                    "required: "
                  : "",
            strempty(moved), skipped ? "; not snapshotted" : "", strempty(skipped));
    }
    ks_journal_set_running(j, s);
    return n;
}
