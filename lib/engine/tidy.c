/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>

#include "lib/basic/alloc-util.h"
#include "lib/engine/swap-run.h"
#include "lib/engine/journal.h"
#include "lib/engine/kernel-list.h"
#include "lib/engine/lock.h"
#include "lib/engine/tidy.h"
#include "lib/host/dpkg.h"
#include "lib/host/kernels.h"
#include "lib/repo/autoremove.h"

/* The distribution's kernel metapackages (Ubuntu's flavours and HWE stacks, Debian's). */
#define DISTRO_META_RE                                                                             \
    "^linux-(image-|headers-|modules-)?(generic|virtual|kvm|lowlatency|amd64|cloud-amd64|"         \
    "rt-amd64|(generic|virtual|lowlatency)-hwe-[0-9.]+)$"
#define STATUS_MAX (256u * 1024 * 1024)

static void item_done(ks_tidy_item *i)
{
    free(i->release);
    ks_strv_free(i->packages);
    free(i->why);
}

void ks_tidy_done(ks_tidy *t)
{
    for (size_t i = 0; i < t->n; i++)
        item_done(&t->v[i]);
    free(t->v);
    free(t->running);
    free(t->fallback);
    free(t->refused);
    free(t->remedy);
    ks_strv_free(t->kept_metapackages);
    free(t->kept_why);
    ks_strv_free(t->removed);
    free(t->error);
    free(t->output);
    *t = (ks_tidy){0};
}

char **ks_tidy_packages(const ks_tidy *t)
{
    size_t n = 0;
    char **all;

    for (size_t i = 0; i < t->n; i++)
        n += ks_strv_length(t->v[i].packages);
    all = calloc(n + 1, sizeof(char *));
    if (!all)
        return NULL;
    n = 0;
    for (size_t i = 0; i < t->n; i++)
        for (char **p = t->v[i].packages; p && *p; p++)
            all[n++] = *p;
    return all;
}

static int refuse(ks_tidy *t, const char *remedy, const char *fmt, ...) _printf_(3, 4);
static int refuse(ks_tidy *t, const char *remedy, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_vasprintf_r(&t->refused, fmt, ap);
    va_end(ap);
    if (r < 0)
        return r;
    t->remedy = remedy ? strdup(remedy) : NULL;
    return remedy && !t->remedy ? -ENOMEM : 0;
}

/* The release a package of linux-*-RELEASE belongs to, among releases; NULL when none. */
static const char *release_of(const char *pkg, char *const *releases)
{
    for (char *const *r = releases; r && *r; r++) {
        size_t pl = strlen(pkg), rl = strlen(*r);
        if (pl > rl + 1 && pkg[pl - rl - 1] == '-' && streq(pkg + pl - rl, *r))
            return *r;
    }
    return NULL;
}

static int add_item(ks_tidy *t, const char *release, char **packages, const char *why)
{
    ks_tidy_item *i;

    if (!GREEDY_REALLOC0(t->v, t->cap, t->n + 1))
        return -ENOMEM;
    i = &t->v[t->n];
    i->release = release ? strdup(release) : NULL;
    i->why = strdup(why);
    if ((release && !i->release) || !i->why) {
        item_done(i);
        *i = (ks_tidy_item){0};
        return -ENOMEM;
    }
    i->packages = packages;
    t->n++;
    return 0;
}

/* Who the node relies on: the journal's pinned swap, and the kernel it runs. */
static int read_swap(const ks_root *root, ks_tidy *t, char **ret_pinned)
{
    _cleanup_free_ char *jerr = NULL, *def = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    const char *pinned, *old;
    ks_boot b = {0};
    ks_state s;
    int r;

    r = ks_journal_load(root, &j, &jerr);
    if (r < 0)
        return refuse(t, "read it with 'kswap status'", "cannot read the state journal: %s",
                      jerr ? jerr : strerror(-r));
    s = ks_journal_state(j);
    pinned = ks_journal_get(j, KS_JF_NEW_KERNEL);
    old = ks_journal_get(j, KS_JF_OLD_KERNEL);
    if (s == KS_STATE_IDLE)
        return refuse(t, NULL, "no swap: tidy removes only what a pinned swap left behind");
    if (s == KS_STATE_FAILED || s == KS_STATE_ROLLED_BACK)
        return refuse(t, "kswap rollback --purge",
                      "the swap ended %s: what it installed goes with rollback --purge",
                      ks_state_to_string(s));
    if (s != KS_STATE_PINNED || !pinned || !old)
        return refuse(t, "kswap status --wait",
                      "a swap is in flight (%s): the old kernel is its way back until the new "
                      "one is pinned",
                      ks_state_to_string(s));
    r = ks_running_kernel(root, &t->running);
    if (r < 0)
        return r == -ENOMEM ? r
                            : refuse(t, NULL, "cannot read the running kernel: %s", strerror(-r));
    if (!streq(t->running, pinned))
        return refuse(t, "reboot into the pinned kernel, then 'kswap tidy'",
                      "the node runs %s, not %s, the kernel kswap pinned", t->running, pinned);
    if (ks_boot_load(root, &b, NULL) >= 0) {
        r = ks_boot_default_kernel(&b, &def);
        ks_boot_done(&b);
        if (r == -ENOMEM)
            return r;
    }
    if (!streq_ptr(def, pinned))
        return refuse(t, "kswap status",
                      "GRUB's default starts %s, not %s, the kernel kswap pinned",
                      def ? def : "no kernel kswap knows", pinned);
    t->fallback = strdup(old);
    *ret_pinned = strdup(pinned);
    return t->fallback && *ret_pinned ? 0 : -ENOMEM;
}

static bool is_meta_of(const regex_t *re, const char *pkg)
{
    return regexec(re, pkg, 0, NULL, 0) == 0;
}

int ks_tidy_plan(const ks_root *root, ks_tidy *ret)
{
    _cleanup_(ks_tidy_done) ks_tidy t = {0};
    _cleanup_free_ char *pinned = NULL, *status = NULL;
    _cleanup_strv_free_ char **installed = NULL, **releases = NULL, **metas = NULL;
    ks_kernels k = {0};
    bool xanmod_meta = false;
    size_t len = 0;
    regex_t re;
    int r;

    assert(root);
    assert(ret);
    r = read_swap(root, &t, &pinned);
    if (r < 0 || t.refused)
        goto out;
    r = ks_root_read_file(root, "var/lib/dpkg/status", STATUS_MAX, &status, &len);
    if (r >= 0)
        r = ks_dpkg_status_installed_prefixed(status, len, "linux-", &installed);
    else if (r != -ENOMEM)
        r = refuse(&t, NULL, "cannot read dpkg's status '/var/lib/dpkg/status': %s", strerror(-r));
    if (r < 0 || t.refused)
        goto out;
    /* The releases: what /boot has, and what dpkg has images of. */
    r = ks_kernels_list(root, &k);
    if (r < 0 && r != -ENOENT)
        goto out;
    r = 0;
    for (size_t i = 0; i < k.n && r >= 0; i++)
        r = ks_strv_contains(releases, k.v[i].release) ? 0
                                                       : ks_strv_extend(&releases, k.v[i].release);
    for (char **p = installed; p && *p && r >= 0; p++) {
        const char *rel = ks_startswith(*p, "linux-image-");
        if (rel && rel[0] >= '0' && rel[0] <= '9' && !ks_strv_contains(releases, rel))
            r = ks_strv_extend(&releases, rel);
        /* XanMod's images are linux-image-RELEASE: linux-xanmod-* are its metapackages. */
        if (ks_startswith(*p, "linux-xanmod-"))
            xanmod_meta = true;
    }
    if (r < 0)
        goto out;
    for (char **rel = releases; rel && *rel; rel++) {
        _cleanup_strv_free_ char **pkgs = NULL;
        _cleanup_free_ char *why = NULL;

        if (streq(*rel, t.running) || streq(*rel, pinned) || streq(*rel, t.fallback))
            continue;
        for (char **p = installed; p && *p; p++) {
            /* Never a package of a kept release, even when two releases share a suffix. */
            if (!streq_ptr(release_of(*p, (char *[]){*rel, NULL}), *rel) ||
                release_of(*p, (char *[]){t.running, t.fallback, NULL}))
                continue;
            r = ks_strv_extend(&pkgs, *p);
            if (r < 0)
                goto out;
        }
        if (!pkgs)
            continue; /* files without a package (a hand-built kernel): left alone */
        why = ks_asprintf("an older kernel, neither running (%s) nor the fallback (%s)", t.running,
                          t.fallback);
        if (!why) {
            r = -ENOMEM;
            goto out;
        }
        r = add_item(&t, *rel, TAKE_PTR(pkgs), why);
        if (r < 0)
            goto out;
    }
    if (regcomp(&re, DISTRO_META_RE, REG_EXTENDED | REG_NOSUB) != 0) {
        r = -ENOMEM;
        goto out;
    }
    for (char **p = installed; p && *p && r >= 0; p++)
        if (is_meta_of(&re, *p))
            r = ks_strv_extend(&metas, *p);
    regfree(&re);
    if (r < 0 || !metas)
        goto out;
    if (xanmod_meta) {
        r = add_item(&t, NULL, TAKE_PTR(metas),
                     "the distribution's kernel metapackage: it brings distribution kernels "
                     "nobody boots; the XanMod metapackage brings the kernel updates now");
    } else {
        t.kept_metapackages = TAKE_PTR(metas);
        t.kept_why = strdup("kept: no XanMod metapackage is installed, and the node needs a "
                            "package that brings kernel updates");
        r = t.kept_why ? 0 : -ENOMEM;
    }
out:
    ks_kernels_done(&k);
    if (r < 0)
        return r;
    *ret = TAKE_STRUCT(t);
    return 0;
}

static int note_error(ks_tidy *t, int r, const char *fmt, ...) _printf_(3, 4);
static int note_error(ks_tidy *t, int r, const char *fmt, ...)
{
    va_list ap;

    free(t->error);
    t->error = NULL;
    va_start(ap, fmt);
    (void)ks_vasprintf_r(&t->error, fmt, ap);
    va_end(ap);
    return r < 0 ? r : -EIO;
}

/* After apt: what dpkg no longer has, and the kernels the node relies on still there. */
static int check_after(const ks_root *root, ks_tidy *t, char *const *pkgs)
{
    _cleanup_free_ char *status = NULL;
    size_t len = 0;
    int r;

    r = ks_root_read_file(root, "var/lib/dpkg/status", STATUS_MAX, &status, &len);
    if (r < 0)
        return note_error(t, r, "cannot read dpkg's status after apt-get: %s", strerror(-r));
    for (char *const *p = pkgs; *p; p++) {
        bool still = false;
        r = ks_dpkg_status_has(status, len, *p, &still);
        if (r < 0)
            return r;
        if (!still && (r = ks_strv_extend(&t->removed, *p)) < 0)
            return r;
    }
    for (const char *const *rel = (const char *const[]){t->running, t->fallback, NULL}; *rel;
         rel++) {
        _cleanup_free_ char *img = ks_asprintf("boot/vmlinuz-%s", *rel);
        if (!img)
            return -ENOMEM;
        if (!ks_root_exists(root, img))
            return note_error(t, -ENOENT,
                              "after apt-get, '/%s' is gone: the node needs it; reinstall "
                              "linux-image-%s now",
                              img, *rel);
    }
    return 0;
}

/* The run's failure in the tidy result: its words and apt's output. */
static int take_error(ks_tidy *t, ks_swap_result *res, int r)
{
    free(t->error);
    t->error = TAKE_PTR(res->error);
    free(t->output);
    t->output = TAKE_PTR(res->output);
    return r < 0 ? r : -EIO;
}

static int tidy_locked(ks_run *x, ks_tidy *t)
{
    _cleanup_free_ char **pkgs = NULL, **argv = NULL;
    size_t n, i = 0;
    int r;

    /* Planned again under the lock: what another kswap changed meanwhile counts. */
    ks_tidy_done(t);
    r = ks_tidy_plan(x->root, t);
    if (r < 0)
        return r;
    if (t->refused)
        return -EPERM;
    r = ks_autoremove_keep(x->root, (char *[]){t->running, t->fallback, NULL});
    if (r == -EEXIST)
        return note_error(t, r, "'/%s' is not kswap's: move it away, then tidy again",
                          KS_AUTOREMOVE_PATH);
    if (r < 0)
        return note_error(t, r, "cannot write '/%s': %s", KS_AUTOREMOVE_PATH, strerror(-r));
    t->guard_written = r > 0;
    pkgs = ks_tidy_packages(t);
    if (!pkgs)
        return -ENOMEM;
    n = ks_strv_length(pkgs);
    if (n == 0)
        return 0;
    argv = calloc(n + 4, sizeof(char *));
    if (!argv)
        return -ENOMEM;
    argv[i++] = (char *)"apt-get";
    argv[i++] = (char *)"-y";
    argv[i++] = (char *)"purge";
    for (char **p = pkgs; *p; p++)
        argv[i++] = *p;
    r = ks_run_wait_for_dpkg(x, "tidy");
    if (r < 0)
        return take_error(t, x->r, r);
    ks_run_progress(x, "tidy", "removing %zu packages with apt-get purge", n);
    /* ks_run_program() puts the program's path into argv[0] and frees it afterwards. */
    r = ks_run_program(x, "tidy", argv, ks_run_timeout_ms(x, "apt_timeout", 1800), true);
    if (r < 0) {
        (void)check_after(x->root, t, pkgs);
        return take_error(t, x->r, r);
    }
    return check_after(x->root, t, pkgs);
}

int ks_tidy_run(const ks_root *root, const ks_swap_common *c, ks_tidy *t)
{
    _cleanup_lock_ ks_lock *lock = NULL;
    ks_swap_result res = {0};
    ks_run x;
    int r;

    assert(root);
    assert(c);
    assert(t);
    /* A run without a journal: tidy changes no swap's record (x.j stays NULL). */
    r = ks_run_init(&x, root, c, &res);
    if (r >= 0)
        r = ks_run_lock(&x, &lock);
    if (r < 0)
        r = take_error(t, &res, r);
    else
        r = tidy_locked(&x, t);
    (void)ks_run_end(&x, 0);
    ks_swap_result_done(&res);
    return r;
}
