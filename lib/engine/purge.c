/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rollback --purge: what every apply of the swap installed, removed (packages, apt source and
 * key, kswap's GRUB drop-in, the autoremove guard). */
#include <assert.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/fileio.h"
#include "lib/engine/swap-run.h"
#include "lib/host/dpkg.h"
#include "lib/repo/aptsource.h"
#include "lib/repo/autoremove.h"

static int add_removed(ks_run *x, const char *kind, const char *name, const char *what)
{
    ks_swap_result *r = x->r;
    size_t cap = r->n_removed;
    struct ks_removed *e;

    if (!GREEDY_REALLOC(r->removed, cap, r->n_removed + 1))
        return -ENOMEM;
    ks_run_trace(x, "remove", "%s%s", streq(kind, "package") ? "package " : "/", name);
    e = &r->removed[r->n_removed++];
    *e = (struct ks_removed){
        .kind = strdup(kind), .name = strdup(name), .what = what ? strdup(what) : NULL};
    return e->kind && e->name && (!what || e->what) ? 0 : -ENOMEM;
}

/* The package of the old or the running kernel is never purged, whoever installed it. */
static bool package_is_kept(const char *pkg, const char *old, const char *running)
{
    const char *rel = ks_startswith(pkg, "linux-image-") ? pkg + strlen("linux-image-") : NULL;
    return rel && (streq_ptr(rel, old) || streq_ptr(rel, running));
}

/* Whether dpkg still has the package: installed, or left unfinished (half-configured, ...). */
static bool package_present(ks_run *x, const char *pkg)
{
    _cleanup_(ks_dpkg_unfinished_list_done) ks_dpkg_unfinished_list l = {0};
    bool installed = false;

    if (ks_dpkg_is_installed(x->root, pkg, &installed) < 0 || installed)
        return true; /* unreadable: apt-get decides */
    if (ks_dpkg_read_unfinished(x->root, &l) < 0)
        return true;
    for (size_t i = 0; i < l.n; i++)
        if (streq(l.v[i].package, pkg))
            return true;
    return false;
}

/* The packages every apply of this swap installed that dpkg still has: apt-get purge. */
static int purge_packages(ks_run *x, const char *old, const char *running)
{
    _cleanup_strv_free_ char **pkgs = NULL, **gone = NULL;
    int r;

    for (size_t i = 0; i < ks_journal_n_changes(x->j); i++) {
        const ks_journal_change *ch = ks_journal_change_get(x->j, i);

        if (ch->kind != KS_CHANGE_PACKAGE || ch->name[0] == '/' ||
            package_is_kept(ch->name, old, running) || ks_strv_contains(pkgs, ch->name))
            continue;
        if (!package_present(x, ch->name))
            r = ks_strv_extend(&gone, ch->name);
        else
            r = ks_strv_extend(&pkgs, ch->name);
        if (r < 0)
            return r;
    }
    /* Removed already (by hand, by an earlier purge): nothing to do, nothing to list. */
    for (char **g = gone; g && *g; g++)
        (void)ks_journal_forget_change(x->j, KS_CHANGE_PACKAGE, *g);
    if (!pkgs)
        return 0;
    {
        _cleanup_free_ char **argv = calloc(ks_strv_length(pkgs) + 4, sizeof(char *));
        size_t n = 0;
        if (!argv)
            return -ENOMEM;
        argv[n++] = (char *)"apt-get";
        argv[n++] = (char *)"-y";
        argv[n++] = (char *)"purge";
        for (char **p = pkgs; *p; p++)
            argv[n++] = *p;
        r = ks_run_wait_for_dpkg(x, "purge");
        if (r < 0)
            return r;
        ks_run_progress(x, "purge", "removing the packages kswap installed: %zu",
                        ks_strv_length(pkgs));
        r = ks_run_program(x, "purge", argv, ks_run_timeout_ms(x, "apt_timeout", 1800), true);
        if (r < 0)
            return r;
    }
    for (char **p = pkgs; *p; p++) {
        if (package_present(x, *p))
            continue; /* apt kept it (another package depends on it): not removed */
        r = add_removed(x, "package", *p, NULL);
        if (r < 0)
            return r;
        (void)ks_journal_forget_change(x->j, KS_CHANGE_PACKAGE, *p);
    }
    return 0;
}

/* The source kswap wrote and its keyring go; what it disabled is enabled again. */
static int purge_apt_source(ks_run *x)
{
    _cleanup_transaction_ ks_transaction changes = {0};
    int r;

    r = ks_aptsource_remove(x->root, &changes);
    if (r < 0)
        return ks_run_fail_step(x, "purge", r, "cannot remove the XanMod apt source: %s",
                                strerror(-r));
    for (size_t i = 0; i < changes.n && r >= 0; i++) {
        const ks_file_change *c = &changes.v[i];
        const char *kind = streq(c->path, KS_APT_SOURCE_PATH)    ? "apt-source"
                           : streq(c->path, KS_APT_KEYRING_PATH) ? "apt-keyring"
                           : c->kind == KS_FILE_CHANGE_REMOVE    ? "file"
                                                                 : "apt-restored";
        r = add_removed(x, kind, c->path, c->what);
        if (r >= 0)
            (void)ks_journal_forget_change(x->j, KS_CHANGE_FILE, c->path);
    }
    return r;
}

/*
 * kswap's GRUB drop-in: the content from before kswap goes back when there was one, else the
 * file goes (only kswap's own, by its first line). 1: changed (update-grub must run).
 */
static int purge_dropin(ks_run *x)
{
    static const char marker[] = "# Written by kswap";
    const ks_journal_change *ch = ks_journal_change_find(x->j, KS_CHANGE_FILE, KS_GRUB_DROPIN_PATH);
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    r = ks_root_read_file(x->root, KS_GRUB_DROPIN_PATH, 1u << 20, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return ks_run_fail_step(x, "purge", r, "cannot read '/%s': %s", KS_GRUB_DROPIN_PATH,
                                strerror(-r));
    /* A file from before kswap goes back; one an earlier apply of kswap wrote does not. */
    if (ch && ch->existed &&
        !(ch->previous_len >= strlen(marker) &&
          memcmp(ch->previous, marker, strlen(marker)) == 0)) {
        if (len == ch->previous_len && memcmp(text, ch->previous, len) == 0)
            return 0;
        r = ks_write_atomic(x->root, KS_GRUB_DROPIN_PATH, (const char *)ch->previous,
                            ch->previous_len, ch->mode ? ch->mode : 0644);
        if (r < 0)
            return ks_run_fail_step(x, "purge", r, "cannot restore '/%s': %s", KS_GRUB_DROPIN_PATH,
                                    strerror(-r));
        r = add_removed(x, "grub-dropin", KS_GRUB_DROPIN_PATH,
                        "kswap's settings; the file as it was before kswap is back");
    } else {
        if (!ks_startswith(text, marker))
            return 0; /* not kswap's: the operator's file stays */
        r = ks_unlink_durable(x->root, KS_GRUB_DROPIN_PATH);
        if (r < 0)
            return ks_run_fail_step(x, "purge", r, "cannot remove '/%s': %s", KS_GRUB_DROPIN_PATH,
                                    strerror(-r));
        r = add_removed(x, "grub-dropin", KS_GRUB_DROPIN_PATH,
                        "GRUB_DEFAULT=saved and panic=10 of kswap");
    }
    if (r >= 0)
        (void)ks_journal_forget_change(x->j, KS_CHANGE_FILE, KS_GRUB_DROPIN_PATH);
    if (r >= 0)
        x->dropin_purged = TAKE_PTR(text);
    return r < 0 ? r : 1;
}

bool ks_run_dropin_removed(const ks_swap_result *r)
{
    for (size_t i = 0; i < r->n_removed; i++)
        if (streq(r->removed[i].kind, "grub-dropin"))
            return true;
    return false;
}

/* Writes kswap's drop-in back after all, runs update-grub and loads what it wrote. */
int ks_run_keep_dropin(ks_run *x, ks_boot *b)
{
    /* A fresh argv: ks_run_program() replaces argv[0] with a path it frees afterwards. */
    char *update[] = {(char *)"update-grub", NULL};
    _cleanup_free_ char *err = NULL;
    const char *text = x->dropin_purged;
    size_t i;
    int r;

    if (!text)
        return -ENOENT;
    ks_run_progress(x, "purge",
                    "GRUB's own default would not start the old kernel: kswap's drop-in stays");
    r = ks_journal_note_file(x->j, KS_GRUB_DROPIN_PATH);
    if (r >= 0)
        r = ks_write_atomic(x->root, KS_GRUB_DROPIN_PATH, text, strlen(text), 0644);
    if (r < 0)
        return ks_run_fail_step(x, "rollback", r, "cannot write '/%s': %s", KS_GRUB_DROPIN_PATH,
                                strerror(-r));
    for (i = 0; i < x->r->n_removed; i++)
        if (streq(x->r->removed[i].kind, "grub-dropin"))
            break;
    if (i < x->r->n_removed) {
        free(x->r->removed[i].kind);
        free(x->r->removed[i].name);
        free(x->r->removed[i].what);
        memmove(&x->r->removed[i], &x->r->removed[i + 1],
                (x->r->n_removed - i - 1) * sizeof(x->r->removed[0]));
        x->r->n_removed--;
    }
    r = ks_run_program(x, "rollback", update, ks_run_timeout_ms(x, "update_grub_timeout", 300),
                       false);
    if (r < 0)
        return r;
    r = ks_boot_load(x->root, b, &err);
    return r < 0 ? ks_run_fail_step(x, "rollback", r, "%s", strempty(err)) : 0;
}

static int purge_autoremove_guard(ks_run *x, const char *old, const char *new)
{
    _cleanup_free_ char *what = NULL;
    int r = ks_autoremove_release(x->root);

    if (r == -EEXIST)
        return 0; /* not kswap's: the operator's file stays */
    if (r < 0)
        return ks_run_fail_step(x, "purge", r, "cannot remove '/%s': %s", KS_AUTOREMOVE_PATH,
                                ks_strerror(r));
    if (r == 0)
        return 0;
    what = new ? ks_asprintf("kept %s and %s from apt autoremove", old, new)
               : ks_asprintf("kept %s from apt autoremove", old);
    return what ? add_removed(x, "autoremove-guard", KS_AUTOREMOVE_PATH, what) : -ENOMEM;
}

int ks_run_purge(ks_run *x, const char *old, const char *running)
{
    const char *new = ks_journal_get(x->j, KS_JF_NEW_KERNEL);
    int r;

    if (new &&streq(new, running))
        return ks_run_fail_step(
            x, "purge", -EBUSY,
            "%s is running: boot the old kernel first ('kswap rollback --reboot'), "
            "then purge",
            new);
    x->r->purged = true;
    r = purge_packages(x, old, running);
    if (r >= 0)
        r = purge_apt_source(x);
    if (r >= 0)
        r = purge_dropin(x);
    if (r >= 0)
        r = purge_autoremove_guard(x, old, new);
    return r < 0 ? r : 0;
}

/* Whether a file is kswap's own: its first line starts with marker. */
static bool file_is_kswaps(const ks_root *root, const char *path, const char *marker)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    return ks_root_read_file(root, path, 1u << 20, &text, &len) >= 0 && ks_startswith(text, marker);
}

int ks_rollback_purge_preview(const ks_root *root, ks_swap_result *ret)
{
    _cleanup_free_ char *running = NULL;
    ks_run x;
    int r;

    assert(root);
    assert(ret);
    /* Read-only: the journal is read, nothing is run or written (x.c is never used). */
    x = (ks_run){.root = root, .c = &(ks_swap_common){0}, .r = ret};
    *ret = (ks_swap_result){0};
    r = ks_run_running_kernel(root, ret, &running);
    if (r < 0)
        return r;
    {
        _cleanup_free_ char *jerr = NULL;
        r = ks_journal_load(root, &x.j, &jerr);
        if (r < 0) {
            ret->status = KS_SWAP_FAILED;
            ret->error = ks_asprintf("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                                     jerr ? jerr : strerror(-r));
            return r;
        }
    }
    for (size_t i = 0; i < ks_journal_n_changes(x.j) && r >= 0; i++) {
        const ks_journal_change *ch = ks_journal_change_get(x.j, i);
        bool seen = false;

        if (ch->kind != KS_CHANGE_PACKAGE || ch->name[0] == '/' ||
            package_is_kept(ch->name, ks_journal_get(x.j, KS_JF_OLD_KERNEL), running) ||
            !package_present(&x, ch->name))
            continue;
        for (size_t k = 0; k < ret->n_removed; k++)
            seen = seen || streq(ret->removed[k].name, ch->name);
        if (!seen)
            r = add_removed(&x, "package", ch->name, NULL);
    }
    if (r >= 0 && ks_root_exists(root, KS_APT_SOURCE_PATH))
        r = add_removed(&x, "apt-source", KS_APT_SOURCE_PATH,
                        "the XanMod source kswap wrote (sources it disabled come back)");
    if (r >= 0 && ks_root_exists(root, KS_APT_KEYRING_PATH))
        r = add_removed(&x, "apt-keyring", KS_APT_KEYRING_PATH, "XanMod's key for apt");
    if (r >= 0 && file_is_kswaps(root, KS_GRUB_DROPIN_PATH, "# Written by kswap"))
        r = add_removed(&x, "grub-dropin", KS_GRUB_DROPIN_PATH,
                        "GRUB_DEFAULT=saved and panic=10 of kswap");
    if (r >= 0 && file_is_kswaps(root, KS_AUTOREMOVE_PATH, KS_AUTOREMOVE_MARKER))
        r = add_removed(&x, "autoremove-guard", KS_AUTOREMOVE_PATH,
                        "the kernels kept from apt autoremove");
    ks_journal_free(x.j);
    return r < 0 ? r : 0;
}
