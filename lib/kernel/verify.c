/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdarg.h>

#include "lib/host/rootdev.h"
#include "lib/kernel/depmodconf.h"
#include "lib/kernel/initrd.h"
#include "lib/kernel/modinfo.h"
#include "lib/kernel/verify.h"
#include "lib/basic/string-table.h"

#define PROC_MODULES_MAX (4 * 1024 * 1024)

static const char *const driver_modules[][2] = {
    {"sd", "sd_mod"},
    {"sr", "sr_mod"},
};

static const char *const ks_verify_source_table[_KS_VERIFY_SOURCE_MAX] = {
    [KS_VERIFY_TREE] = "tree",
    [KS_VERIFY_DEB] = "deb",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_verify_source, ks_verify_source);

void ks_verify_result_done(ks_verify_result *r)
{
    if (!r)
        return;
    free(r->release);
    for (size_t i = 0; i < r->n_modules; i++)
        ks_module_report_done(&r->modules[i]);
    free(r->modules);
    ks_strv_free(r->workload_missing);
    ks_strv_free(r->initrd_missing);
    ks_findings_clear(&r->findings);
    *r = (ks_verify_result){0};
}

static void set_error(const ks_verify_opts *o, const char *fmt, ...) _printf_(2, 3);
static void set_error(const ks_verify_opts *o, const char *fmt, ...)
{
    va_list ap;

    if (!o->error)
        return;
    va_start(ap, fmt);
    (void)ks_set_first_verrorf(o->error, fmt, ap);
    va_end(ap);
}

/* Joins a string vector with ", " (for messages). */
static char *join(char *const *l)
{
    size_t len = 1;
    char *s, *p;

    for (char *const *x = l; x && *x; x++)
        len += strlen(*x) + 2;
    s = p = malloc(len);
    if (!s)
        return NULL;
    *p = '\0';
    for (char *const *x = l; x && *x; x++)
        p += sprintf(p, "%s%s", x == l ? "" : ", ", *x);
    return s;
}

/* "3" -> 3, "3.0-xanmod" -> 3; no leading digit -> 1 (an unnumbered version is not v3). */
static int parse_bbr_version(const char *v)
{
    int n = 0;
    if (!v || !isdigit((unsigned char)*v))
        return 1;
    for (; isdigit((unsigned char)*v) && n < 1000; v++)
        n = n * 10 + (*v - '0');
    return n;
}

static int check_modules(ks_modset *set, char *const *required, ks_verify_result *res)
{
    _cleanup_strv_free_ char **problems = NULL;
    _cleanup_free_ char *text = NULL;
    size_t n = ks_strv_length(required);
    int r;

    res->modules = calloc(n ? n : 1, sizeof(ks_module_report));
    if (!res->modules)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        ks_module_report *m = &res->modules[i];
        r = ks_modset_judge(set, required[i], m);
        if (r < 0)
            return r;
        res->n_modules++;
        if (m->state == KS_MODULE_MISSING) {
            r = ks_strv_push(&problems, ks_asprintf("%s", m->name));
        } else if (!ks_module_report_ok(m)) {
            _cleanup_free_ char *deps = join(m->missing_deps);
            r = ks_strv_push(&problems, deps ? ks_asprintf("%s (needs %s)", m->name, deps) : NULL);
        }
        if (r < 0)
            return r;
    }
    if (problems) {
        text = join(problems);
        if (!text)
            return -ENOMEM;
        return ks_findings_add(&res->findings, "modules.missing", KS_SEV_BLOCK,
                               "use a kernel build that has these modules, or change "
                               "[verify] modules in /etc/kswap/kswap.conf",
                               "kernel %s lacks required modules: %s", res->release, text);
    }
    return ks_findings_add(&res->findings, "modules.missing", KS_SEV_OK, NULL,
                           "all %zu required modules are present with their dependencies", n);
}

static int check_bbr(ks_modset *set, int want, ks_verify_result *res)
{
    ks_module_report m = {0};
    bool xanmod = strstr(res->release, "xanmod") != NULL;
    ks_severity sev = xanmod ? KS_SEV_BLOCK : KS_SEV_WARN;
    int r;

    r = ks_modset_judge(set, "tcp_bbr", &m);
    if (r < 0)
        return r;
    res->bbr_version = m.state == KS_MODULE_MISSING ? -1 : parse_bbr_version(m.version);
    ks_module_report_done(&m);
    if (res->bbr_version < 0)
        return ks_findings_add(&res->findings, "bbr.not-v3", sev,
                               "install a XanMod kernel, whose tcp_bbr is BBRv3",
                               "kernel %s has no tcp_bbr at all", res->release);
    if (res->bbr_version < want)
        return ks_findings_add(&res->findings, "bbr.not-v3", sev,
                               xanmod ? "this XanMod build is not what it claims; use another "
                                        "XanMod release"
                                      : "a XanMod kernel brings BBRv3",
                               "kernel %s has BBR version %d, not %d (tcp_bbr %s)", res->release,
                               res->bbr_version, want,
                               res->bbr_version == 1 ? "declares no version" : "is older");
    return ks_findings_add(&res->findings, "bbr.not-v3", KS_SEV_OK, NULL,
                           "kernel %s has BBR version %d", res->release, res->bbr_version);
}

static int check_workload(const ks_root *root, ks_modset *set, ks_verify_result *res)
{
    _cleanup_free_ char *text = NULL, *list = NULL;
    size_t len, pos = 0, llen;
    const char *line;
    int r;

    r = ks_root_read_file(root, "proc/modules", PROC_MODULES_MAX, &text, &len);
    if (r == -ENOENT)
        return 0; /* no running system to compare with (a bare fixture) */
    if (r < 0)
        return r;
    while (ks_next_line(text, len, &pos, &line, &llen)) {
        _cleanup_free_ char *name =
            strndup(line, strcspn(line, " \t\n") < llen ? strcspn(line, " \t\n") : llen);
        if (!name)
            return -ENOMEM;
        if (!*name)
            continue;
        ks_module_name_normalize(name);
        r = ks_modset_has(set, name);
        if (r < 0)
            return r;
        if (r == 0 && !ks_strv_contains(res->workload_missing, name)) {
            r = ks_strv_push(&res->workload_missing, TAKE_PTR(name));
            if (r < 0)
                return r;
        }
    }
    if (res->workload_missing) {
        ks_strv_sort(res->workload_missing);
        list = join(res->workload_missing);
        if (!list)
            return -ENOMEM;
        return ks_findings_add(&res->findings, "modules.workload-missing", KS_SEV_WARN,
                               "move what uses them (for example iptables-legacy rules to "
                               "nftables) before switching, or check that nothing needs them",
                               "modules loaded now that kernel %s does not have: %s", res->release,
                               list);
    }
    return ks_findings_add(&res->findings, "modules.workload-missing", KS_SEV_OK, NULL,
                           "kernel %s has every module loaded now", res->release);
}

static int check_initrd(const ks_root *root, ks_modset *set, const ks_verify_opts *o,
                        ks_verify_result *res)
{
    _cleanup_free_ char *initrd = ks_asprintf("boot/initrd.img-%s", res->release);
    _cleanup_free_ char *vmlinuz = ks_asprintf("boot/vmlinuz-%s", res->release);
    _cleanup_free_ char *fs = NULL, *why = NULL, *list = NULL, *need_text = NULL;
    _cleanup_strv_free_ char **drivers = NULL, **inside = NULL, **need = NULL;
    int r;

    if (!initrd || !vmlinuz)
        return -ENOMEM;
    if (!ks_root_exists(root, vmlinuz)) {
        r = ks_findings_add(&res->findings, "kernel.image-missing", KS_SEV_BLOCK,
                            "reinstall the kernel package", "'/%s' does not exist", vmlinuz);
        if (r < 0)
            return r;
    }
    r = ks_root_device_drivers(root, &drivers, &fs);
    if (r == -ENOENT)
        return 0; /* no mountinfo: nothing to compare with */
    if (r < 0)
        return r;
    /* sysfs names drivers, not modules: the few that differ on the usual root devices. */
    for (char **d = drivers; d && *d; d++)
        for (size_t i = 0; i < ARRAY_SIZE(driver_modules); i++)
            if (streq(*d, driver_modules[i][0])) {
                char *m = strdup(driver_modules[i][1]);
                if (!m)
                    return -ENOMEM;
                free(*d);
                *d = m;
            }
    r = ks_strv_extend(&drivers, fs); /* ext4, xfs, btrfs: modules of the same name */
    if (r < 0)
        return r;

    /* What must be in the initrd: each driver's loadable closure in the new kernel. */
    for (char **d = drivers; *d; d++) {
        _cleanup_strv_free_ char **mods = NULL, **missing = NULL;
        r = ks_modset_closure(set, *d, &mods, &missing);
        if (r < 0)
            return r;
        /* A driver name the kernel does not know (built into the running kernel under
         * another name, e.g. "sd" for sd_mod) cannot be judged; only the fs must exist. */
        for (char **m = mods; m && *m; m++)
            if (!ks_strv_contains(need, *m) && (r = ks_strv_extend(&need, *m)) < 0)
                return r;
        for (char **m = missing; m && *m; m++)
            if ((!streq(*m, *d) || streq(*d, fs)) && !ks_strv_contains(res->initrd_missing, *m) &&
                (r = ks_strv_extend(&res->initrd_missing, *m)) < 0)
                return r;
    }
    if (need) {
        if (!ks_root_exists(root, initrd)) {
            need_text = join(need);
            return ks_findings_add(&res->findings, "initrd.missing-driver", KS_SEV_BLOCK,
                                   "run 'update-initramfs -c -k RELEASE'",
                                   "'/%s' does not exist but the root file system needs %s", initrd,
                                   need_text ? need_text : "modules");
        }
        r = ks_initrd_list_modules(root, initrd, &inside, &why);
        if (r < 0) {
            set_error(o, "cannot read '/%s': %s", initrd, why ? why : strerror(-r));
            return r;
        }
        for (char **m = need; *m; m++)
            if (!ks_strv_contains(inside, *m) && !ks_strv_contains(res->initrd_missing, *m) &&
                (r = ks_strv_extend(&res->initrd_missing, *m)) < 0)
                return r;
    } else if (!ks_root_exists(root, initrd)) {
        r = ks_findings_add(&res->findings, "initrd.missing-driver", KS_SEV_WARN,
                            "run 'update-initramfs -c -k RELEASE'",
                            "'/%s' does not exist (the root device's drivers are built in)",
                            initrd);
        return r;
    }
    if (res->initrd_missing) {
        list = join(res->initrd_missing);
        if (!list)
            return -ENOMEM;
        return ks_findings_add(&res->findings, "initrd.missing-driver", KS_SEV_BLOCK,
                               "add them to /etc/initramfs-tools/modules and run "
                               "'update-initramfs -u -k RELEASE'",
                               "the new kernel cannot mount / (%s): missing from its initrd: %s",
                               fs, list);
    }
    list = join(drivers);
    return ks_findings_add(&res->findings, "initrd.missing-driver", KS_SEV_OK, NULL,
                           "initrd of %s has what / needs (%s)", res->release, list ? list : "");
}

int ks_verify_run(const ks_root *root, const ks_config *cfg, const ks_verify_opts *opts,
                  ks_verify_result *ret)
{
    _cleanup_(ks_verify_result_done) ks_verify_result res = {.bbr_version = -1};
    _cleanup_strv_free_ char **required = NULL, **wanted = NULL;
    _cleanup_depmod_conf_ ks_depmod_conf *conf = NULL; /* declared first: the set borrows it */
    _cleanup_modset_ ks_modset *set = NULL;
    _cleanup_free_ char *why = NULL;
    int want_bbr, r;

    if (!opts || !!opts->release == !!opts->deb_path)
        return -EINVAL;
    r = ks_config_verify_modules(cfg, &required);
    if (r < 0)
        return r;
    r = ks_config_verify_bbr_version(cfg, &want_bbr);
    if (r < 0) {
        set_error(opts, "[verify] bbr_version must be a positive integer");
        return r;
    }

    if (opts->release) {
        res.source = KS_VERIFY_TREE;
        r = ks_modset_open_tree_full(root, opts->release, &set, &why);
        if (r < 0 && why) {
            set_error(opts, "%s", why);
            return r;
        }
        if (r < 0) {
            set_error(opts,
                      r == -ENOENT ? "kernel %s is not installed (no '/lib/modules/%s')"
                                   : "cannot read '/lib/modules/%s': %s",
                      opts->release, r == -ENOENT ? opts->release : strerror(-r));
            return r;
        }
    } else {
        res.source = KS_VERIFY_DEB;
        r = ks_strv_extend(&wanted, "tcp_bbr");
        for (char **m = required; r >= 0 && m && *m; m++)
            r = ks_strv_extend(&wanted, *m);
        if (r < 0)
            return r;
        /* The package's postinst runs depmod with the root's depmod.d: rank its files so. */
        r = ks_depmod_conf_load(root, &conf, &why);
        if (r < 0) {
            set_error(opts, "%s", why ? why : strerror(-r));
            return r;
        }
        r = ks_deb_read_modset_conf(opts->deb_path, wanted, conf, &set, &res.deb_stats, &why);
        if (r < 0) {
            set_error(opts, "cannot read '%s': %s", opts->deb_path, why ? why : strerror(-r));
            return r;
        }
    }
    res.release = strdup(ks_modset_release(set));
    if (!res.release)
        return -ENOMEM;

    r = check_modules(set, required, &res);
    if (r >= 0)
        r = check_bbr(set, want_bbr, &res);
    if (r >= 0 && res.source == KS_VERIFY_TREE && !opts->skip_initrd)
        r = check_initrd(root, set, opts, &res);
    if (r >= 0 && !opts->skip_workload)
        r = check_workload(root, set, &res);
    if (r < 0) {
        if (ks_modset_error(set))
            set_error(opts, "%s", ks_modset_error(set));
        set_error(opts, "cannot verify kernel %s: %s", res.release, strerror(-r));
        return r;
    }
    *ret = res;
    res = (ks_verify_result){0};
    return 0;
}
