/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/engine/bootctl.h"
#include "lib/basic/fileio.h"
#include "lib/host/bootfs.h"
#include "lib/basic/util.h"

int ks_boot_load(const ks_root *root, ks_boot *ret, char **ret_error)
{
    _cleanup_free_ char *text = NULL;
    ks_grub_error err = {0};
    ks_boot b = {0};
    ks_bootfs fs = {0};
    size_t len = 0;
    int r;

    r = ks_root_read_file(root, KS_GRUB_CFG_PATH, 64u << 20, &text, &len);
    if (r < 0) {
        if (ret_error)
            *ret_error = ks_asprintf("cannot read '/%s': %s", KS_GRUB_CFG_PATH, strerror(-r));
        return r;
    }
    r = ks_grub_cfg_parse(text, len, &b.cfg, &err);
    if (r < 0) {
        if (ret_error)
            *ret_error =
                r == -EBADMSG
                    ? ks_asprintf("cannot parse '/%s': line %u, column %u: %s", KS_GRUB_CFG_PATH,
                                  err.line, err.column, err.message)
                    : ks_asprintf("cannot parse '/%s': %s", KS_GRUB_CFG_PATH, strerror(-r));
        return r;
    }
    r = ks_grubenv_load(root, KS_GRUBENV_PATH, &b.env);
    if (r < 0 && r != -ENOENT) {
        if (ret_error)
            *ret_error = ks_asprintf("'/%s' is not a usable GRUB environment block: %s",
                                     KS_GRUBENV_PATH, ks_grubenv_strerror(r));
        ks_boot_done(&b);
        return r;
    }

    /* GRUB's platform follows the firmware that booted this system (as secureboot.c reads it). */
    b.efi = ks_root_exists(root, "sys/firmware/efi");

    /* Unknown counts as unwritable: that is the case where a one-shot would repeat. */
    r = ks_bootfs_probe(root, &fs);
    if (r >= 0) {
        b.env_writable = fs.env_writable;
        if (fs.unwritable_reason)
            b.unwritable_reason = strdup(fs.unwritable_reason);
        ks_bootfs_done(&fs);
    } else
        b.unwritable_reason =
            ks_asprintf("the filesystem of /boot/grub is unknown (%s)", strerror(-r));
    if (b.env_writable && b.cfg->lacks_write_support) {
        b.env_writable = false;
        free(b.unwritable_reason);
        b.unwritable_reason = ks_asprintf("grub.cfg says GRUB lacks write support for %s",
                                          b.cfg->lacks_write_support);
    }
    *ret = b;
    return 0;
}

void ks_boot_done(ks_boot *b)
{
    ks_grub_cfg_free(b->cfg);
    ks_grubenv_free(b->env);
    free(b->unwritable_reason);
    *b = (ks_boot){0};
}

int ks_boot_forecast(const ks_boot *b, ks_grub_forecast *ret)
{
    return ks_grub_forecast_run(b->cfg, b->env, b->env_writable, b->efi, KS_FORECAST_BOOTS, ret);
}

int ks_boot_forecast_findings(const ks_boot *b, const ks_grub_forecast *f, ks_findings *out)
{
    int r = 0;

    for (size_t i = 0; i < f->n && r >= 0; i++) {
        const ks_grub_forecast_boot *x = &f->v[i];
        if (x->fell_back && !ks_findings_get(out, "grub.entry-missing"))
            r = ks_findings_add(out, "grub.entry-missing", KS_SEV_BLOCK,
                                "name entries by their full id path, as kswap pin does",
                                "boot %u: default '%s' matches no menu entry at some level; "
                                "GRUB silently boots entry 0 there ('%s')",
                                x->boot, strempty(x->default_value), strempty(x->title_path));
        if (r >= 0 && x->waits && streq_ptr(x->wait_reason, "timeout") &&
            !ks_findings_get(out, "grub.recordfail-wait"))
            r = ks_findings_add(out, "grub.recordfail-wait", KS_SEV_BLOCK,
                                "set GRUB_RECORDFAIL_TIMEOUT to a value >= 0 and run update-grub",
                                "boot %u: GRUB stops at its menu and waits for a key", x->boot);
        else if (r >= 0 && x->waits && !ks_findings_get(out, "grub.boot-waits"))
            r = ks_findings_add(out, "grub.boot-waits", KS_SEV_BLOCK,
                                "check the default entry and GRUB's password settings",
                                "boot %u: GRUB waits at the console (%s)", x->boot,
                                strempty(x->wait_reason));
        if (r >= 0 && x->one_shot && i > 0 && f->v[i - 1].one_shot && !b->env_writable &&
            !ks_findings_get(out, "grub.env-unwritable"))
            r = ks_findings_add(out, "grub.env-unwritable", KS_SEV_BLOCK,
                                "remove it: grub-editenv /boot/grub/grubenv unset next_entry",
                                "GRUB cannot clear next_entry at boot (%s): the one-shot repeats "
                                "on every boot",
                                b->unwritable_reason ? b->unwritable_reason : "unknown reason");
    }
    return r;
}

int ks_boot_entry_path(const ks_boot *b, const char *release, ks_grub_entry_path *ret)
{
    return ks_grub_entry_path_find(b->cfg->entries, b->cfg->n_entries, release, ret);
}

/* Checks the forecast against what was promised; *ret_detail says what differs. */
static int check_promise(const ks_boot *b, const char *first, bool first_one_shot, const char *rest,
                         char **ret_detail)
{
    ks_grub_forecast f = {0};
    int r;

    r = ks_boot_forecast(b, &f);
    if (r < 0) {
        *ret_detail = ks_asprintf("cannot forecast the next boots: %s", strerror(-r));
        return r;
    }
    r = 0;
    for (size_t i = 0; i < KS_FORECAST_BOOTS; i++) {
        const char *want = i == 0 ? first : rest;
        bool want_one_shot = i == 0 && first_one_shot;
        const ks_grub_forecast_boot *x = i < f.n ? &f.v[i] : NULL;

        if (!want)
            continue;
        if (!x || x->waits || !streq_ptr(x->kernel, want) || x->one_shot != want_one_shot ||
            x->fell_back || x->recovery) {
            *ret_detail = ks_asprintf("boot %zu would start %s%s%s instead of %s%s", i + 1,
                                      !x          ? "nothing"
                                      : x->waits  ? "nothing (GRUB waits at the menu)"
                                      : x->kernel ? x->kernel
                                                  : "an entry without Linux",
                                      x && x->one_shot ? " as a one-shot" : "",
                                      x && x->fell_back ? " (the path fell back to entry 0)" : "",
                                      want, want_one_shot ? " as a one-shot" : "");
            r = -EPROTO;
            break;
        }
    }
    ks_grub_forecast_done(&f);
    return r;
}

/* Puts the previous block back on disk (or removes a block that did not exist before). */
static int restore_env(const ks_root *root, const ks_grubenv *old)
{
    int r;

    if (old)
        return ks_grubenv_save(old, root, KS_GRUBENV_PATH);
    r = ks_unlink_durable(root, KS_GRUBENV_PATH);
    /* GRUB must not find the removed block either (lib/basic/fileio.h). */
    if (r >= 0)
        r = ks_fs_checkpoint_path(root, "boot/grub");
    return r < 0 ? r : 0;
}

/*
 * Applies edit to a copy of the block, writes it, reads it back from disk and checks the
 * promise. When anything fails after the write, the previous block goes back on disk.
 */
static int change_env(const ks_root *root, ks_boot *b, int (*edit)(ks_grubenv *e, const void *arg),
                      const void *arg, const char *first, bool first_one_shot, const char *rest,
                      char **ret_detail)
{
    _cleanup_grubenv_ ks_grubenv *next = NULL, *reread = NULL;
    _cleanup_free_ char *detail = NULL;
    ks_grubenv *old = b->env;
    int r;

    r = old ? ks_grubenv_dup(old, &next) : ks_grubenv_new(&next);
    if (r < 0)
        return r;
    r = edit(next, arg);
    if (r < 0) {
        detail = ks_asprintf("cannot edit the environment block: %s",
                             r == -ENOSPC ? "the values do not fit into 1024 bytes" : strerror(-r));
        goto out;
    }
    /* An atomic write that fails leaves the previous file as it was. */
    r = ks_grubenv_save(next, root, KS_GRUBENV_PATH);
    if (r < 0) {
        detail = ks_asprintf("cannot write '/%s': %s", KS_GRUBENV_PATH, strerror(-r));
        goto out;
    }
    /* What counts is what is on disk now, not what we meant to write. */
    r = ks_grubenv_load(root, KS_GRUBENV_PATH, &reread);
    if (r < 0 || !ks_grubenv_equal(reread, next)) {
        detail = ks_asprintf("'/%s' reads back differently after writing it", KS_GRUBENV_PATH);
        r = r < 0 ? r : -EIO;
        (void)restore_env(root, old);
        goto out;
    }
    b->env = reread;
    r = check_promise(b, first, first_one_shot, rest, &detail);
    if (r < 0) {
        b->env = old;
        (void)restore_env(root, old);
        goto out;
    }
    reread = NULL; /* b->env now */
    ks_grubenv_free(old);
out:
    if (ret_detail && detail)
        *ret_detail = TAKE_PTR(detail);
    return r;
}

typedef struct path_arg {
    const char *path;
} path_arg;

static int edit_default(ks_grubenv *e, const void *arg)
{
    const path_arg *a = arg;
    int r = ks_grubenv_set(e, "saved_entry", a->path);
    /* grub-set-default does the same: a leftover prev_saved_entry overwrites saved_entry. */
    if (r >= 0)
        r = ks_grubenv_unset(e, "next_entry");
    if (r >= 0)
        r = ks_grubenv_unset(e, "prev_saved_entry");
    return r;
}

static int edit_arm(ks_grubenv *e, const void *arg)
{
    const path_arg *a = arg;
    return ks_grubenv_set(e, "next_entry", a->path);
}

static int edit_disarm(ks_grubenv *e, const void *arg)
{
    return ks_grubenv_unset(e, "next_entry");
}

static int path_of(const ks_boot *b, const char *release, ks_grub_entry_path *p, char **ret_detail)
{
    int r = ks_boot_entry_path(b, release, p);
    if (r < 0 && ret_detail)
        *ret_detail = r == -ENOENT
                          ? ks_asprintf("/%s has no normal entry for %s", KS_GRUB_CFG_PATH, release)
                          : ks_asprintf("the entry of %s cannot be named unambiguously: %s",
                                        release, strerror(-r));
    return r;
}

int ks_boot_set_default(const ks_root *root, ks_boot *b, const char *release, char **ret_detail)
{
    ks_grub_entry_path p = {0};
    int r;

    r = path_of(b, release, &p, ret_detail);
    if (r < 0)
        return r;
    r = change_env(root, b, edit_default, &(path_arg){p.id_path}, release, false, release,
                   ret_detail);
    ks_grub_entry_path_done(&p);
    return r;
}

bool ks_boot_every_boot_starts(const ks_boot *b, const char *release)
{
    _cleanup_free_ char *detail = NULL;
    return check_promise(b, release, false, release, &detail) == 0;
}

int ks_boot_default_holds(const ks_boot *b, const char *release, char **ret_detail)
{
    _cleanup_grubenv_ ks_grubenv *next = NULL;
    ks_grub_entry_path p = {0};
    ks_boot copy = *b;
    int r;

    r = path_of(b, release, &p, ret_detail);
    if (r < 0)
        return r;
    r = b->env ? ks_grubenv_dup(b->env, &next) : ks_grubenv_new(&next);
    if (r >= 0)
        r = edit_default(next, &(path_arg){p.id_path});
    ks_grub_entry_path_done(&p);
    if (r < 0) {
        if (ret_detail && r != -ENOMEM)
            *ret_detail =
                ks_asprintf("the environment block cannot hold the entry's path: %s",
                            r == -ENOSPC ? "it does not fit into 1024 bytes" : strerror(-r));
        return r;
    }
    /* The same promise ks_boot_set_default() checks, on a copy: nothing is written. */
    copy.env = next;
    return check_promise(&copy, release, false, release, ret_detail);
}

int ks_boot_arm(const ks_root *root, ks_boot *b, const char *new_release, const char *old_release,
                const char *entry_id, char **ret_detail)
{
    ks_grub_entry_path p = {0};
    int r;

    if (!b->env_writable) {
        if (ret_detail)
            *ret_detail = ks_asprintf("GRUB cannot clear next_entry at boot: %s",
                                      strempty(b->unwritable_reason));
        return -EROFS;
    }
    if (entry_id) {
        /* Only a top-level entry of that id that loads new_release: the promise checks the rest. */
        const ks_grub_entry *e = NULL;
        for (size_t i = 0; i < b->cfg->n_entries; i++)
            if (streq_ptr(b->cfg->entries[i].id, entry_id)) {
                if (e) {
                    e = NULL;
                    break;
                }
                e = &b->cfg->entries[i];
            }
        if (!e || e->submenu || !streq_ptr(e->release, new_release)) {
            if (ret_detail)
                *ret_detail = ks_asprintf("/%s has no single top-level entry '%s' for %s",
                                          KS_GRUB_CFG_PATH, entry_id, new_release);
            return -ENOENT;
        }
    }
    if (entry_id)
        return change_env(root, b, edit_arm, &(path_arg){entry_id}, new_release, true, old_release,
                          ret_detail);
    r = path_of(b, new_release, &p, ret_detail);
    if (r < 0)
        return r;
    r = change_env(root, b, edit_arm, &(path_arg){p.id_path}, new_release, true, old_release,
                   ret_detail);
    ks_grub_entry_path_done(&p);
    return r;
}

int ks_boot_disarm(const ks_root *root, ks_boot *b, const char *expect, char **ret_detail)
{
    if (b->env && !ks_grubenv_get(b->env, "next_entry"))
        return expect ? check_promise(b, expect, false, expect, ret_detail) : 0;
    return change_env(root, b, edit_disarm, NULL, expect, false, expect, ret_detail);
}
