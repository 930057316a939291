/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <limits.h>
#include <stdarg.h>

#include "lib/host/cpu.h"
#include "lib/host/dpkg.h"
#include "grub/cfg.h"
#include "grub/timeouts.h"
#include "grub/defaults.h"
#include "grub/grubenv.h"
#include "lib/basic/fileio.h"
#include "lib/host/osrelease.h"
#include "lib/engine/bootctl.h"
#include "lib/engine/bootpeek.h"
#include "lib/engine/plan.h"
#include "lib/engine/plan-newer.h"
#include "lib/engine/plan-words.h"
#include "lib/engine/trialboot.h"
#include "lib/basic/string-table.h"
#include "lib/host/sysctl.h"
#include "lib/host/virt.h"

#define MIB (1024ULL * 1024ULL)

static const char *const ks_branch_table[_KS_BRANCH_MAX] = {
    [KS_BRANCH_LTS] = "lts",
    [KS_BRANCH_MAIN] = "main",
};
DEFINE_STRING_TABLE_LOOKUP(ks_branch, ks_branch);

const char *ks_xanmod_package(int level, ks_branch branch)
{
    /* XanMod builds x64v2 and x64v3 only (x64v4 was dropped): a v4 CPU runs the v3 build. */
    static const char *const pkg[_KS_BRANCH_MAX][2] = {
        {"linux-xanmod-lts-x64v2", "linux-xanmod-lts-x64v3"},
        {"linux-xanmod-x64v2", "linux-xanmod-x64v3"},
    };
    if (branch < 0 || branch >= _KS_BRANCH_MAX || level < 2)
        return NULL;
    return pkg[branch][level >= 3 ? 1 : 0];
}

/* "24.04" → 2404, "12" → 1200; -1 when not a version. */
static int version_number(const char *v)
{
    unsigned major = 0, minor = 0;
    int n = 0;

    if (!v || sscanf(v, "%u%n.%u%n", &major, &n, &minor, &n) < 1 || v[n] != '\0')
        return -1;
    if (major > 9999 || minor > 99)
        return -1;
    return (int)(major * 100 + minor);
}

const char *ks_xanmod_suite(const char *os_id, const char *version_id, const char *codename,
                            bool *ret_supported)
{
    int v = version_number(version_id);

    *ret_supported = false;
    if (streq_ptr(os_id, "ubuntu")) {
        if (v >= 2404 && codename) {
            *ret_supported = true;
            return codename;
        }
        /* jammy: supported, but XanMod's archive has an empty index for it. */
        if (v == 2204)
            *ret_supported = true;
        return NULL;
    }
    if (streq_ptr(os_id, "debian")) {
        /* Debian testing has no VERSION_ID; the codename still names the suite. */
        if (v == 1200 || (v < 0 && streq_ptr(codename, "bookworm"))) {
            *ret_supported = true;
            return "bookworm";
        }
        if (v == 1300 || (v < 0 && streq_ptr(codename, "trixie"))) {
            *ret_supported = true;
            return "trixie";
        }
    }
    return NULL;
}

uint64_t ks_boot_space_needed(const ks_kernels *k)
{
    /* A XanMod kernel with a MODULES=most initrd takes about 90 MiB on Ubuntu. */
    uint64_t largest = 96 * MIB;
    for (size_t i = 0; i < k->n; i++)
        if (k->v[i].vmlinuz_size + k->v[i].initrd_size > largest)
            largest = k->v[i].vmlinuz_size + k->v[i].initrd_size;
    return largest + largest / 4;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Files are named as an operator knows them: /etc/..., whatever root they were read in. */
static void make_abs(char **path)
{
    char *a;
    if (!*path || **path == '/')
        return;
    a = ks_asprintf("/%s", *path);
    if (a) {
        free(*path);
        *path = a;
    }
}

static int add(ks_plan *p, const char *id, ks_severity sev, const char *remedy, const char *fmt,
               ...) _printf_(5, 6);

static int add(ks_plan *p, const char *id, ks_severity sev, const char *remedy, const char *fmt,
               ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_findings_addv(&p->findings, id, sev, remedy, fmt, ap);
    va_end(ap);
    return r;
}

static int fail(ks_plan *p, const char *file, int err)
{
    free(p->error_file);
    p->error_file = strdup(file);
    make_abs(&p->error_file);
    return err;
}

/*
 * The repository apply installs from: kswap.conf's [repository] uri, suite and components
 * (a mirror or an apt cache in front of XanMod's archive), else XanMod's archive with the
 * OS's suite and "main". A suite ending in '/' is a flat repository: no components.
 */
static int resolve_repository(const ks_config *config, const char *os_suite, ks_plan *p)
{
    const char *uri = config ? ks_config_get_string(config, "repository", "uri", NULL) : NULL;
    const char *suite = config ? ks_config_get_string(config, "repository", "suite", NULL) : NULL;
    bool components_given =
        config && ks_config_get_values(config, "repository", "components") != NULL;
    int r;

    p->repo_configured = uri || suite;
    p->repo_uri = strdup(uri ? uri : KS_REPOSITORY_DEFAULT_URI);
    p->xanmod_suite = dup_or_null(suite ? suite : os_suite);
    if (!p->repo_uri || ((suite || os_suite) && !p->xanmod_suite))
        return -ENOMEM;
    if (p->xanmod_suite && ks_endswith(p->xanmod_suite, "/"))
        return components_given
                   ? add(p, "config.invalid", KS_SEV_BLOCK,
                         "remove [repository] components, or give a suite that is not a path",
                         "[repository] suite = %s is a flat repository (it ends in '/'): apt "
                         "takes no components for it",
                         p->xanmod_suite)
                   : 0;
    r = config ? ks_config_get_strv(config, "repository", "components", "main", &p->repo_components)
               : ks_strv_split("main", " ", &p->repo_components);
    if (r >= 0 && !p->repo_components[0])
        return add(p, "config.invalid", KS_SEV_BLOCK,
                   "name at least one component in [repository] components (XanMod's is main)",
                   "[repository] components is empty");
    return r;
}

static int check_os(const ks_root *root, const ks_plan_opts *opts, ks_plan *p)
{
    ks_os_release os = {0};
    const char *file = NULL, *suite;
    bool supported;
    int r;

    r = ks_os_release_load(root, &os, &file);
    if (r < 0)
        return fail(p,
                    file                                     ? file
                    : ks_root_exists(root, "etc/os-release") ? "etc/os-release"
                                                             : "usr/lib/os-release",
                    r);
    p->os_release_file = strdup(file);
    make_abs(&p->os_release_file);
    p->os_id = dup_or_null(os.id);
    p->os_version_id = dup_or_null(os.version_id);
    p->os_codename = dup_or_null(os.version_codename ? os.version_codename : os.ubuntu_codename);
    p->os_pretty_name = dup_or_null(os.pretty_name ? os.pretty_name : os.name);
    ks_os_release_done(&os);

    suite = ks_xanmod_suite(p->os_id, p->os_version_id, p->os_codename, &supported);
    r = resolve_repository(opts->config, suite, p);
    if (r < 0)
        return r;
    suite = p->xanmod_suite;
    if (!supported)
        return add(p, "os.unsupported", KS_SEV_BLOCK,
                   "use Ubuntu 24.04 or later, Debian 12 or Debian 13",
                   "%s is not supported (kswap knows Ubuntu 24.04+, 22.04 with a local package, "
                   "Debian 12 and 13)",
                   strempty(p->os_pretty_name));
    if (!suite) {
        bool local = opts->kernel || opts->deb;
        return add(p, "os.no-xanmod-suite", local ? KS_SEV_OK : KS_SEV_WARN,
                   "install from a local package: kswap apply --deb FILE (or --kernel RELEASE)",
                   "%s: XanMod's archive has no packages for '%s'%s", strempty(p->os_pretty_name),
                   strempty(p->os_codename), local ? ", a local kernel is given" : "");
    }
    return add(p, "os.unsupported", KS_SEV_OK, NULL, "%s is supported (XanMod suite '%s')",
               strempty(p->os_pretty_name), suite);
}

static int check_virt(const ks_root *root, ks_plan *p)
{
    int r = ks_virt_detect(root, &p->virt, &p->virt_evidence);
    if (r < 0)
        return fail(p, "virtualization", r);
    if (ks_virt_is_container(p->virt))
        return add(p, "virt.container", KS_SEV_BLOCK,
                   "run kswap on the host or VM that owns the kernel, not inside the container",
                   "this is a %s container (%s): a container cannot change its kernel", p->virt,
                   strempty(p->virt_evidence));
    if (!ks_virt_is_kvm(p->virt))
        return add(p, "virt.not-kvm", KS_SEV_WARN,
                   "kswap is proven on KVM guests; check the console access of this machine first",
                   streq(p->virt, "none") ? "no hypervisor found (%s): bare metal"
                                          : "hypervisor is %s, not KVM",
                   streq(p->virt, "none") ? strempty(p->virt_evidence) : p->virt);
    return add(p, "virt.not-kvm", KS_SEV_OK, NULL, "%s guest (%s)", p->virt,
               strempty(p->virt_evidence));
}

static int check_cpu(const ks_root *root, ks_plan *p)
{
    _cleanup_free_ char *text = NULL;
    ks_cpuinfo ci = {0};
    size_t len;
    int r, live = -1;

    r = ks_root_read_file(root, "proc/cpuinfo", 16 * MIB, &text, &len);
    if (r >= 0)
        r = ks_cpuinfo_parse(text, len, &ci);
    if (ks_root_is_host(root))
        live = ks_cpu_level_live();
    if (r < 0 && live < 0)
        return fail(p, "proc/cpuinfo", r);
    if (r >= 0) {
        p->x86_64_level_cpuinfo = ci.level;
        p->n_processors = ci.n_processors;
        p->cpu_model = dup_or_null(ci.model_name);
        ks_cpuinfo_done(&ci);
    } else
        p->x86_64_level_cpuinfo = -1;
    /* On the live host CPUID and XGETBV decide, as ld.so does; files only under --root. */
    p->level_from_cpuid = live >= 0;
    p->x86_64_level = live >= 0 ? live : p->x86_64_level_cpuinfo;

    if (!ks_xanmod_package(p->x86_64_level, p->branch))
        return add(p, "cpu.level", KS_SEV_BLOCK,
                   "move the VM to a CPU model with x86-64-v2 or better (for KVM: host-passthrough "
                   "or a named model instead of qemu64)",
                   "the CPU is x86-64-v%d: XanMod builds need x86-64-v2 or v3", p->x86_64_level);
    return add(p, "cpu.level", KS_SEV_OK, NULL, "the CPU is x86-64-v%d: %s fits", p->x86_64_level,
               ks_xanmod_package(p->x86_64_level, p->branch));
}

static bool has_xanmod(const char *release)
{
    return release && strstr(release, "xanmod");
}

static int check_kernels(const ks_root *root, const ks_plan_opts *opts, ks_plan *p)
{
    int r;

    r = ks_running_kernel(root, &p->running_kernel);
    if (r < 0)
        return fail(p, "proc/sys/kernel/osrelease", r);
    r = ks_kernels_list(root, &p->kernels);
    if (r < 0 && r != -ENOENT)
        return fail(p, "boot", r);

    if (opts->kernel) {
        p->target_release = strdup(opts->kernel);
        p->target_package = ks_asprintf("linux-image-%s", opts->kernel);
        p->target_installed = ks_kernels_find(&p->kernels, opts->kernel) != NULL;
    } else if (!opts->deb) {
        bool installed = false;
        const char *pkg = ks_xanmod_package(p->x86_64_level, p->branch);
        p->target_package = dup_or_null(pkg);
        if (pkg && ks_dpkg_is_installed(root, pkg, &installed) >= 0 && installed)
            p->target_installed = true;
        /* The newest XanMod kernel on disk is the one the meta package brought. */
        for (size_t i = 0; i < p->kernels.n; i++)
            if (has_xanmod(p->kernels.v[i].release)) {
                p->target_release = strdup(p->kernels.v[i].release);
                break;
            }
    }
    return 0;
}

/* The target's module set: from --deb, or from the tree of an installed target kernel. */
static int check_target_modules(const ks_root *root, const ks_plan_opts *opts, ks_plan *p)
{
    _cleanup_free_ char *err = NULL;
    ks_verify_opts vo = {.error = &err};
    int r;

    if (opts->deb)
        vo.deb_path = opts->deb;
    else if (p->target_release && ks_kernels_find(&p->kernels, p->target_release))
        vo.release = p->target_release;
    else
        return 0;
    r = ks_verify_run(root, opts->config, &vo, &p->verify);
    if (r < 0) {
        _cleanup_free_ char *dir = ks_asprintf("lib/modules/%s", strempty(vo.release));
        free(p->error_detail);
        p->error_detail = TAKE_PTR(err);
        r = fail(p, dir ? dir : "lib/modules", r);
        if (opts->deb) {
            /* a path on the running machine, as given, not one inside the root */
            free(p->error_file);
            p->error_file = strdup(opts->deb);
        }
        return r;
    }
    p->verified = true;
    if (opts->deb && p->verify.release) {
        free(p->target_release);
        p->target_release = strdup(p->verify.release);
        p->target_installed = ks_kernels_find(&p->kernels, p->verify.release) != NULL;
    }
    for (size_t i = 0; i < p->verify.findings.n && r >= 0; i++) {
        const ks_finding *f = &p->verify.findings.v[i];
        r = ks_findings_add(&p->findings, f->id, f->severity, f->remedy, "%s", f->message);
    }
    return r;
}

/*
 * grub.cfg through GRUB's own rules (grub/cfg.h): a script GRUB's parser stops at, the
 * "lacks write support" marker and the countdowns of boots kswap cannot watch. The model
 * is the one apply arms with (lib/engine/bootctl.c), so plan blocks exactly where apply
 * would refuse.
 */
static int read_grub_cfg(const ks_root *root, ks_plan *p, ks_grub_cfg **ret)
{
    _cleanup_free_ char *text = NULL;
    ks_grub_error err = {0};
    ks_grub_timeouts t;
    size_t len;
    int r;

    r = ks_root_read_file(root, KS_GRUB_CFG_PATH, 64 * MIB, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0) /* Too large, a FIFO, unreadable: an error about the file, not "no grub.cfg". */
        return fail(p, KS_GRUB_CFG_PATH, r);
    p->grub_cfg_found = true;
    r = ks_grub_cfg_parse(text, len, ret, &err);
    if (r == -EBADMSG)
        return add(p, "grub.cfg-invalid", KS_SEV_BLOCK,
                   "run update-grub and look at the scripts in /etc/grub.d it names",
                   "/%s: GRUB's parser stops at line %u, column %u: %s", KS_GRUB_CFG_PATH, err.line,
                   err.column, err.message);
    if (r < 0)
        return fail(p, KS_GRUB_CFG_PATH, r);
    r = ks_grub_timeouts_run(*ret, &t);
    if (r == -ELOOP)
        return add(p, "grub.cfg-invalid", KS_SEV_BLOCK,
                   "run update-grub and look at the scripts in /etc/grub.d it names",
                   "/%s runs more than kswap's GRUB model follows (a loop that does not end?)",
                   KS_GRUB_CFG_PATH);
    if (r < 0)
        return fail(p, KS_GRUB_CFG_PATH, r);
    p->recordfail_timeout = t.after_failure;
    p->efi_recordfail_timeout = t.efi;
    return 0;
}

/*
 * The running kernel is the way back of every trial: the files its own entry loads (the one
 * saved_entry will name, and the way-back entry will copy) must be intact, by the cheap look
 * (header, length, magic; apply reads them back whole and decompresses the initrds before
 * arming). No entry of it in grub.cfg: nothing to look at here (apply cannot arm then anyway).
 */
static int check_running_files(const ks_root *root, const ks_grub_cfg *cfg, ks_plan *p)
{
    int r;

    if (!cfg || !p->running_kernel)
        return 0;
    r = ks_boot_peek_kernel(
        root, cfg,
        &(ks_boot_peek){.release = p->running_kernel,
                        .old = true,
                        .whose = "of the running kernel, the way back of a trial,",
                        .then = "then 'kswap plan' again",
                        .severity = KS_SEV_BLOCK,
                        .say_ok = true},
        &p->findings);
    return r < 0 ? r : 0;
}

static int check_boot(const ks_root *root, ks_plan *p)
{
    _cleanup_grubenv_ ks_grubenv *env = NULL;
    _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;
    int env_k;
    int r;

    r = ks_bootfs_probe(root, &p->bootfs);
    if (r < 0)
        return fail(p, "proc/self/mountinfo", r);
    p->bootfs_known = true;
    p->recordfail_timeout = INT_MIN;

    r = read_grub_cfg(root, p, &cfg);
    if (r >= 0)
        r = check_running_files(root, cfg, p);
    if (r < 0)
        return r;

    if (!p->grub_cfg_found)
        r = add(p, "grub.env-unwritable", KS_SEV_BLOCK,
                "kswap needs GRUB: install grub-pc (BIOS) or grub-efi-amd64 and run update-grub",
                "no /boot/grub/grub.cfg: without GRUB there is no one-shot boot");
    else if (!p->bootfs.env_writable)
        r = add(p, "grub.env-unwritable", KS_SEV_BLOCK,
                "put /boot on a plain ext4, xfs or vfat partition; until then kswap cannot arm a "
                "one-shot safely",
                "%s", strempty(p->bootfs.unwritable_reason));
    else if (cfg && cfg->lacks_write_support)
        r = add(p, "grub.env-unwritable", KS_SEV_BLOCK,
                "put /boot on a plain ext4, xfs or vfat partition and run update-grub",
                "/boot/grub/grub.cfg says GRUB lacks write support for %s: next_entry would never "
                "be cleared",
                cfg->lacks_write_support);
    else if ((env_k = ks_grubenv_load(root, "boot/grub/grubenv", &env)) < 0 && env_k != -ENOENT)
        /* apply refuses the same block (lib/engine/bootctl.c ks_boot_load): say so now. */
        r = add(p, "grub.env-unwritable", KS_SEV_BLOCK,
                "recreate it with grub-editenv /boot/grub/grubenv create",
                "/boot/grub/grubenv is not a usable GRUB environment block: %s",
                ks_grubenv_strerror(env_k));
    else {
        p->env_writable = true;
        r = add(p, "grub.env-unwritable", KS_SEV_OK, NULL,
                "GRUB can write its environment block (%s on %s)", strempty(p->bootfs.fs_type),
                strempty(p->bootfs.source));
    }
    if (r < 0)
        return r;

    p->boot_needed_bytes = p->target_installed ? 0 : ks_boot_space_needed(&p->kernels);
    if (p->bootfs.free_bytes < p->boot_needed_bytes)
        return add(p, "boot.space", KS_SEV_BLOCK,
                   "remove old kernels (apt autoremove --purge) or grow /boot",
                   "/boot has %llu MiB free, a new kernel needs about %llu MiB",
                   (unsigned long long)(p->bootfs.free_bytes / MIB),
                   (unsigned long long)(p->boot_needed_bytes / MIB));
    return add(p, "boot.space", KS_SEV_OK, NULL, "/boot has %llu MiB free, %llu MiB needed",
               (unsigned long long)(p->bootfs.free_bytes / MIB),
               (unsigned long long)(p->boot_needed_bytes / MIB));
}

static int check_secureboot(const ks_root *root, ks_plan *p)
{
    int r = ks_secureboot_read(root, &p->secureboot);
    if (r < 0)
        return fail(p, "sys/firmware/efi/efivars", r);
    if (p->secureboot.enabled && !p->secureboot.shim_validation_off)
        return add(p, "secureboot.enabled", KS_SEV_BLOCK,
                   "disable Secure Boot in the firmware (or shim validation with mokutil "
                   "--disable-validation) before moving to XanMod",
                   "Secure Boot is on: the shim rejects XanMod kernels and GRUB then waits at "
                   "the menu");
    return add(p, "secureboot.enabled", KS_SEV_OK, NULL, "%s",
               !p->secureboot.efi      ? "BIOS boot, no Secure Boot"
               : p->secureboot.enabled ? "UEFI, Secure Boot on but shim validation off"
                                       : "UEFI, Secure Boot off");
}

/* The last panic=N in a space-separated command line, or NULL. */
static const char *last_panic(char *const *words)
{
    const char *v = NULL;
    for (; words && *words; words++) {
        const char *x = ks_startswith(*words, "panic=");
        if (x)
            v = x;
    }
    return v;
}

static bool panic_reboots(const char *v)
{
    int n;
    return v && ks_safe_atoi(v, &n) >= 0 && n != 0;
}

static int check_grub_settings(const ks_root *root, ks_plan *p)
{
    _cleanup_free_ char *cmdline = NULL, *config_cmdline = NULL, *rf_file = NULL;
    _cleanup_strv_free_ char **words = NULL, **cwords = NULL;
    ks_grub_defaults d = {0};
    const char *v, *rf;
    int r;

    r = ks_grub_defaults_load(root, &d);
    if (r < 0 && r != -ENOENT)
        return fail(p, "etc/default/grub", r);

    v = ks_grub_defaults_get(&d, "GRUB_DEFAULT");
    p->grub_default = strdup(v ? v : "0");
    p->grub_default_file = dup_or_null(ks_grub_defaults_file(&d, "GRUB_DEFAULT"));
    make_abs(&p->grub_default_file);
    if (!streq(p->grub_default, "saved"))
        r = add(p, "grub.default-not-saved", KS_SEV_WARN,
                "kswap apply sets GRUB_DEFAULT=saved in etc/default/grub.d/90-kswap.cfg and pins "
                "the running kernel before installing anything",
                "GRUB_DEFAULT is '%s'%s%s: installing a kernel would make it the default at once",
                p->grub_default, p->grub_default_file ? " in " : " (unset)",
                strempty(p->grub_default_file));
    else
        r = add(p, "grub.default-not-saved", KS_SEV_OK, NULL, "GRUB_DEFAULT=saved (%s)",
                strempty(p->grub_default_file));
    if (r < 0)
        goto out;

    rf = ks_grub_defaults_get(&d, "GRUB_RECORDFAIL_TIMEOUT");
    rf_file = dup_or_null(ks_grub_defaults_file(&d, "GRUB_RECORDFAIL_TIMEOUT"));
    make_abs(&rf_file);
    if (p->recordfail_timeout != INT_MIN && p->recordfail_timeout < 0)
        r = add(p, "grub.recordfail-wait", KS_SEV_BLOCK,
                "set GRUB_RECORDFAIL_TIMEOUT=30 (or 0) in /etc/default/grub.d and run update-grub",
                "/boot/grub/grub.cfg waits at the menu forever after a failed boot (recordfail "
                "timeout %d): a headless node would never come back",
                p->recordfail_timeout);
    else if (p->secureboot.efi && p->efi_recordfail_timeout != INT_MIN &&
             p->efi_recordfail_timeout < 0)
        r = add(p, "grub.recordfail-wait", KS_SEV_BLOCK,
                "set GRUB_RECORDFAIL_TIMEOUT=30 (or 0) in /etc/default/grub.d and run update-grub",
                "/boot/grub/grub.cfg waits at the menu forever on every EFI boot (GRUB cannot save "
                "recordfail here, timeout %d)",
                p->efi_recordfail_timeout);
    else if (rf && streq(rf, "-1"))
        r = add(p, "grub.recordfail-wait", KS_SEV_BLOCK,
                "set GRUB_RECORDFAIL_TIMEOUT=30 (or 0) and run update-grub",
                "GRUB_RECORDFAIL_TIMEOUT=-1 in %s: after the next update-grub a failed boot "
                "waits at the menu forever",
                strempty(rf_file));
    else
        r = add(p, "grub.recordfail-wait", KS_SEV_OK, NULL,
                "after a failed boot GRUB does not wait forever");
    if (r < 0)
        goto out;

    /* What runs counts first; the configuration is what the trial boot will get. */
    r = ks_root_read_line(root, "proc/cmdline", &cmdline);
    if (r >= 0 && ks_strv_split(cmdline, " \t", &words) >= 0 && panic_reboots(last_panic(words))) {
        p->panic_value = strdup(last_panic(words));
        p->panic_source = strdup("proc/cmdline");
    } else {
        config_cmdline =
            ks_asprintf("%s %s", strempty(ks_grub_defaults_get(&d, "GRUB_CMDLINE_LINUX")),
                        strempty(ks_grub_defaults_get(&d, "GRUB_CMDLINE_LINUX_DEFAULT")));
        if (config_cmdline && ks_strv_split(config_cmdline, " \t", &cwords) >= 0 &&
            panic_reboots(last_panic(cwords))) {
            p->panic_value = strdup(last_panic(cwords));
            p->panic_source = strdup("GRUB_CMDLINE_LINUX*");
        }
    }
    if (p->panic_value)
        r = add(p, "kernel.no-panic-reboot", KS_SEV_OK, NULL,
                "panic=%s (%s): a trial kernel that panics reboots by itself", p->panic_value,
                p->panic_source);
    else
        r = add(p, "kernel.no-panic-reboot", KS_SEV_WARN,
                "kswap apply adds panic=10 to GRUB_CMDLINE_LINUX_DEFAULT in its drop-in",
                "no panic=N on the kernel command line: a trial kernel that panics would hang "
                "until someone resets the machine");
out:
    ks_grub_defaults_done(&d);
    return r;
}

static int check_bbr(const ks_root *root, ks_plan *p)
{
    _cleanup_free_ char *detail = NULL;
    bool cc_off, qdisc_off;
    int r;

    (void)ks_sysctl_live(root, "net.ipv4.tcp_congestion_control", &p->cc_live);
    (void)ks_sysctl_live(root, "net.core.default_qdisc", &p->qdisc_live);
    r = ks_sysctl_configured(root, "net.ipv4.tcp_congestion_control", &p->cc_config,
                             &p->cc_config_file);
    if (r < 0 && r != -ENOENT)
        return fail(p, "etc/sysctl.d", r);
    r = ks_sysctl_configured(root, "net.core.default_qdisc", &p->qdisc_config,
                             &p->qdisc_config_file);
    if (r < 0 && r != -ENOENT)
        return fail(p, "etc/sysctl.d", r);
    make_abs(&p->cc_config_file);
    make_abs(&p->qdisc_config_file);

    cc_off = streq_ptr(p->cc_config, "bbr") && !streq_ptr(p->cc_live, "bbr");
    qdisc_off = streq_ptr(p->cc_config, "bbr") && p->qdisc_config &&
                !streq_ptr(p->qdisc_live, p->qdisc_config);
    if (cc_off || qdisc_off) {
        detail = ks_asprintf(
            "%s asks for %s%s%s, but the live values are %s and %s", strempty(p->cc_config_file),
            p->cc_config, p->qdisc_config ? " with default_qdisc " : "", strempty(p->qdisc_config),
            p->cc_live ? p->cc_live : "(unknown)", p->qdisc_live ? p->qdisc_live : "(unknown)");
        r = add(p, "bbr.not-active", KS_SEV_WARN,
                "modprobe tcp_bbr && sysctl --system; list tcp_bbr in /etc/modules-load.d so it "
                "is loaded before systemd-sysctl runs",
                "BBR is configured but not active: %s", strempty(detail));
    } else if (streq_ptr(p->cc_config, "bbr"))
        r = add(p, "bbr.not-active", KS_SEV_OK, NULL, "bbr is configured and live (qdisc %s)",
                p->qdisc_live ? p->qdisc_live : "unknown");
    else
        r = add(p, "bbr.not-active", KS_SEV_OK, NULL,
                "BBR is not configured in the sysctl files (live: %s)",
                p->cc_live ? p->cc_live : "unknown");
    if (r < 0)
        return r;

    if (p->running_kernel)
        (void)ks_kernel_module_kind(root, p->running_kernel, "tcp_bbr", &p->bbr_builtin,
                                    &p->bbr_module);
    r = ks_modules_load_lists(root, "tcp_bbr", &p->bbr_listed, &p->bbr_listed_file);
    if (r < 0 && r != -ENOENT)
        return fail(p, "etc/modules-load.d", r);
    make_abs(&p->bbr_listed_file);
    if (p->bbr_module && !p->bbr_listed)
        return add(p, "bbr.modules-load", KS_SEV_WARN,
                   "echo tcp_bbr > /etc/modules-load.d/bbr.conf",
                   "tcp_bbr is a module of %s and no modules-load.d file lists it: on some boots "
                   "systemd-sysctl runs before it is loaded and the node stays on cubic",
                   p->running_kernel);
    if (p->bbr_module)
        return add(p, "bbr.modules-load", KS_SEV_OK, NULL, "tcp_bbr is loaded at boot (%s)",
                   strempty(p->bbr_listed_file));
    return add(p, "bbr.modules-load", KS_SEV_OK, NULL, "%s",
               p->bbr_builtin ? "tcp_bbr is built into the running kernel"
                              : "tcp_bbr is not a module of the running kernel");
}

/*
 * What covers a trial kernel that hangs without panicking: a watchdog device (a hypervisor's
 * i6300esb, a hardware one) that the trial boot arms (lib/engine/trialboot.h, softdog where
 * there is none). And a pvpanic device: on a panic the guest tells the host, which may pause or
 * power it off instead of letting panic= reboot it (drivers/misc/pvpanic: ACPI QEMU0001, PCI
 * 1b36:0011). Both warn, never block.
 */
static int check_watchdog(const ks_root *root, ks_plan *p)
{
    _cleanup_strv_free_ char **wd = NULL, **pci = NULL;
    _cleanup_free_ char *identity = NULL, *where = NULL;
    const char *dev = NULL;
    int r;

    /* The node's own device: a softdog (one an earlier trial loaded) is not one. */
    if (ks_root_list_dir(root, "sys/class/watchdog", &wd) >= 0)
        for (char **n = wd; n && *n && !dev; n++)
            if (!ks_trial_watchdog_is_softdog(root, *n))
                dev = *n;
    if (dev) {
        _cleanup_free_ char *path = ks_asprintf("sys/class/watchdog/%s/identity", dev);
        if (path)
            (void)ks_root_read_line(root, path, &identity);
        r = add(p, "host.watchdog", KS_SEV_OK, NULL,
                "%s (%s) can reset this machine when a kernel hangs without panicking: the trial "
                "boot arms it (systemd.watchdog_sec=%d), the verdict gives it back to the node's "
                "own setting",
                dev, identity ? identity : "unknown", KS_TRIAL_WATCHDOG_SEC);
    } else
        r = add(p, "host.watchdog", KS_SEV_WARN,
                "attach a watchdog device (KVM: -device i6300esb -action watchdog=reset) or "
                "keep a console at hand for the first trial",
                "no watchdog device (/sys/class/watchdog has none, or only softdog): the trial "
                "boot loads softdog "
                "where the new kernel has it, which resets a hung PID 1 or a kernel that still "
                "runs timers, but a lockup of every CPU stays hung (nmi_watchdog=panic catches a "
                "stuck CPU only where the kernel has a hard lockup detector), and the boot "
                "deadline needs a running kernel and systemd");
    if (r < 0)
        return r;

    if (ks_root_exists(root, "sys/bus/acpi/devices/QEMU0001:00"))
        where = strdup("ACPI QEMU0001");
    else if (ks_root_list_dir(root, "sys/bus/pci/devices", &pci) >= 0)
        for (char **d = pci; d && *d && !where; d++) {
            _cleanup_free_ char *vp = ks_asprintf("sys/bus/pci/devices/%s/vendor", *d);
            _cleanup_free_ char *dp = ks_asprintf("sys/bus/pci/devices/%s/device", *d);
            _cleanup_free_ char *v = NULL, *dv = NULL;
            if (vp && dp && ks_root_read_line(root, vp, &v) >= 0 &&
                ks_root_read_line(root, dp, &dv) >= 0 && streq(v, "0x1b36") && streq(dv, "0x0011"))
                where = ks_asprintf("PCI %s (1b36:0011)", *d);
        }
    if (!where && ks_root_exists(root, "sys/module/pvpanic"))
        where = strdup("the pvpanic module is loaded");
    if (where)
        return add(p, "host.pvpanic", KS_SEV_WARN,
                   "make sure the host resets (not pauses) a guest that panics, or keep pvpanic "
                   "a module: the trial blacklists pvpanic, pvpanic_mmio and pvpanic_pci",
                   "a pvpanic device (%s): on a panic the host may pause or power off this "
                   "guest before panic= reboots it; a pvpanic built into the trial kernel is "
                   "not stopped by the trial's modprobe.blacklist=",
                   where);
    return add(p, "host.pvpanic", KS_SEV_OK, NULL, "no pvpanic device");
}

int ks_plan_run(const ks_root *root, const ks_plan_opts *opts, ks_plan *ret)
{
    ks_plan p = {
        .branch = opts->branch,
        .recordfail_timeout = INT_MIN,
        .efi_recordfail_timeout = INT_MIN,
    };
    int r;

    /* Order matters only for output: host first, then boot, then run-time BBR. */
    r = check_os(root, opts, &p);
    if (r >= 0)
        r = check_virt(root, &p);
    if (r >= 0)
        r = check_cpu(root, &p);
    if (r >= 0)
        r = check_watchdog(root, &p);
    if (r >= 0)
        r = check_kernels(root, opts, &p);
    /* Day two: a newer kernel of the pinned flavour is the target (lib/engine/plan-newer.h). */
    if (r >= 0)
        r = ks_plan_newer_xanmod(root, opts, &p);
    if (r >= 0)
        r = check_target_modules(root, opts, &p);
    if (r >= 0)
        r = check_secureboot(root, &p);
    if (r >= 0)
        r = check_boot(root, &p);
    if (r >= 0)
        r = check_grub_settings(root, &p);
    /* kswap's trial words on the node's own command line (lib/engine/plan-words.h). */
    if (r >= 0)
        r = ks_plan_kswap_words(root, &p);
    if (r >= 0)
        r = check_bbr(root, &p);
    *ret = p;
    return r < 0 ? r : 0;
}

void ks_plan_done(ks_plan *p)
{
    char **strings[] = {
        &p->os_id,           &p->os_version_id,  &p->os_codename,    &p->os_pretty_name,
        &p->os_release_file, &p->xanmod_suite,   &p->virt,           &p->virt_evidence,
        &p->cpu_model,       &p->running_kernel, &p->grub_default,   &p->grub_default_file,
        &p->panic_value,     &p->panic_source,   &p->cc_live,        &p->cc_config,
        &p->cc_config_file,  &p->qdisc_live,     &p->qdisc_config,   &p->qdisc_config_file,
        &p->bbr_listed_file, &p->target_package, &p->target_release, &p->error_file,
        &p->error_detail,    &p->repo_uri,
    };
    for (size_t i = 0; i < ARRAY_SIZE(strings); i++) {
        free(*strings[i]);
        *strings[i] = NULL;
    }
    p->repo_components = ks_strv_free(p->repo_components);
    ks_kernels_done(&p->kernels);
    ks_update_done(&p->update);
    if (p->bootfs_known)
        ks_bootfs_done(&p->bootfs);
    if (p->verified)
        ks_verify_result_done(&p->verify);
    ks_findings_clear(&p->findings);
}
