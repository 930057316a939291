/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/paths.h"

#include "lib/basic/string-table.h"
#include "lib/basic/util.h"

typedef struct candidate {
    const ks_grub_entry *chain[KS_GRUB_MAX_DEPTH];
    size_t depth;
    int score;
} candidate;

static void search(const ks_grub_entry *menu, size_t n, const char *release, candidate *cur,
                   candidate *best)
{
    if (cur->depth >= KS_GRUB_MAX_DEPTH)
        return;
    for (size_t i = 0; i < n; i++) {
        const ks_grub_entry *e = &menu[i];
        /* kswap's own trial entries (lib/engine/trialboot.h) are never a kernel's entry. */
        if (e->id && ks_startswith(e->id, "kswap-"))
            continue;
        cur->chain[cur->depth++] = e;
        if (e->submenu) {
            search(e->children, e->n_children, release, cur, best);
        } else if (!e->recovery && e->release && streq(e->release, release)) {
            /* An id naming the release, or a place in a submenu, stays right when a newer
             * kernel arrives; the top "simple" entry follows the newest kernel. */
            int score = 1 + ((e->id && strstr(e->id, release)) ? 2 : 0) + (cur->depth > 1 ? 1 : 0);
            if (score > best->score) {
                *best = *cur;
                best->score = score;
            }
        }
        cur->depth--;
    }
}

static int build(const candidate *c, bool ids, char **ret)
{
    _cleanup_free_ char *s = NULL;
    for (size_t d = 0; d < c->depth; d++) {
        const char *comp = ids ? ks_grub_entry_id(c->chain[d]) : c->chain[d]->title;
        if (ks_grub_path_append(&s, comp) < 0)
            return -ENOMEM;
    }
    *ret = TAKE_PTR(s);
    return 0;
}

void ks_grub_entry_path_done(ks_grub_entry_path *p)
{
    free(p->id_path);
    free(p->title_path);
    *p = (ks_grub_entry_path){0};
}

static bool resolves_to(const ks_grub_entry *menu, size_t n, const char *path,
                        const ks_grub_entry *want)
{
    ks_grub_resolution r;
    return ks_grub_resolve(menu, n, path, &r) == 0 && !r.fell_back && !r.ignored_rest &&
           r.entry == want;
}

int ks_grub_entry_path_find(const ks_grub_entry *menu, size_t n, const char *release,
                            ks_grub_entry_path *ret)
{
    candidate cur = {0}, best = {0};
    ks_grub_entry_path p = {0};
    int r;

    search(menu, n, release, &cur, &best);
    if (best.score == 0)
        return -ENOENT;
    p.entry = best.chain[best.depth - 1];
    r = build(&best, true, &p.id_path);
    if (r >= 0)
        r = build(&best, false, &p.title_path);
    if (r < 0) {
        ks_grub_entry_path_done(&p);
        return r;
    }
    if (!resolves_to(menu, n, p.id_path, p.entry)) {
        ks_grub_entry_path_done(&p);
        return -EADDRNOTAVAIL;
    }
    p.title_path_ok = resolves_to(menu, n, p.title_path, p.entry);
    *ret = p;
    return 0;
}

ks_grub_path_verdict ks_grub_path_check(const ks_grub_entry *menu, size_t n, const char *path,
                                        const char *release, const ks_grub_entry **ret_entry)
{
    ks_grub_resolution r;

    if (ks_grub_resolve(menu, n, path, &r) < 0)
        return KS_GRUB_PATH_NO_ENTRY;
    if (ret_entry)
        *ret_entry = r.entry;
    if (r.fell_back)
        return KS_GRUB_PATH_FALLS_BACK;
    if (r.entry->recovery)
        return KS_GRUB_PATH_RECOVERY;
    if (!r.entry->release || (release && !streq(r.entry->release, release)))
        return KS_GRUB_PATH_OTHER_KERNEL;
    return KS_GRUB_PATH_OK;
}

static const char *const path_verdict_table[_KS_GRUB_PATH_VERDICT_MAX] = {
    [KS_GRUB_PATH_OK] = "ok",
    [KS_GRUB_PATH_FALLS_BACK] = "falls-back",
    [KS_GRUB_PATH_RECOVERY] = "recovery",
    [KS_GRUB_PATH_OTHER_KERNEL] = "other-kernel",
    [KS_GRUB_PATH_NO_ENTRY] = "no-entry",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(path_verdict, ks_grub_path_verdict);

const char *ks_grub_path_verdict_to_string(ks_grub_path_verdict v)
{
    return path_verdict_to_string(v) ?: "invalid";
}
