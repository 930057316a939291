/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * module: the [accept] key modules and every module of proc/modules ("module:NAME"): loaded
 * or built in for the RUNNING kernel: proc/modules, sys/module/NAME (loaded modules, and
 * built-in ones with parameters or a version), lib/modules/$(uname -r)/modules.builtin.
 */
#include "checks/snapshot.h"
#include "lib/basic/util.h"
#include "lib/host/sysctl.h"

/* '-' and '_' are the same in module names. */
static void normalize(char *s)
{
    for (; *s; s++)
        if (*s == '-')
            *s = '_';
}

static bool in_proc_modules(const char *text, size_t len, const char *name)
{
    const char *line;
    size_t pos = 0, n, nl = strlen(name);

    while (ks_next_line(text, len, &pos, &line, &n))
        if (n > nl && line[nl] == ' ' && strncmp(line, name, nl) == 0)
            return true;
    return false;
}

/* "kernel/net/ipv4/tcp_bbr.ko" lines; the base name is the module's name. */
static bool in_builtin(const char *text, size_t len, const char *name)
{
    const char *line;
    size_t pos = 0, n, nl = strlen(name);

    while (ks_next_line(text, len, &pos, &line, &n)) {
        const char *slash = memrchr(line, '/', n);
        const char *base = slash ? slash + 1 : line;
        size_t bl = (size_t)(line + n - base);
        bool same = bl == nl + 3 && memcmp(base + nl, ".ko", 3) == 0;

        for (size_t i = 0; same && i < nl; i++)
            same = (base[i] == '-' ? '_' : base[i]) == name[i];
        if (same)
            return true;
    }
    return false;
}

/* Whether modules.dep lists NAME.ko (any compression): the kernel can load it later. */
static bool in_modules_dep(const char *text, size_t len, const char *name)
{
    const char *line;
    size_t pos = 0, n, nl = strlen(name);

    while (ks_next_line(text, len, &pos, &line, &n)) {
        const char *colon = memchr(line, ':', n), *slash, *base;
        if (!colon)
            continue;
        slash = memrchr(line, '/', (size_t)(colon - line));
        base = slash ? slash + 1 : line;
        if ((size_t)(colon - base) >= nl + 3 && memcmp(base + nl, ".ko", 3) == 0) {
            bool same = true;
            for (size_t i = 0; same && i < nl; i++)
                same = (base[i] == '-' ? '_' : base[i]) == name[i];
            if (same)
                return true;
        }
    }
    return false;
}

int ks_check_module(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *name = ks_check_id_unescape(chk->arg, strlen(chk->arg)), *text = NULL,
                        *sys = NULL, *builtin = NULL;
    const char *how = NULL;
    size_t len;

    if (!name)
        return -ENOMEM;
    normalize(name);
    if (!*name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
        return -EINVAL;
    if (ks_root_read_file(c->root, "proc/modules", 16u << 20, &text, &len) >= 0 &&
        in_proc_modules(text, len, name))
        how = "loaded";
    sys = ks_asprintf("sys/module/%s", name);
    if (!sys)
        return -ENOMEM;
    if (!how && ks_root_exists(c->root, sys))
        how = "present in sys/module";
    if (!how && c->kernel) {
        free(text);
        text = NULL;
        builtin = ks_asprintf("lib/modules/%s/modules.builtin", c->kernel);
        if (!builtin)
            return -ENOMEM;
        if (ks_root_read_file(c->root, builtin, 16u << 20, &text, &len) >= 0 &&
            in_builtin(text, len, name))
            how = "built in";
    }
    if (!how && c->kernel) {
        /* Not in the running kernel's modules.dep either: nothing can load it, ever. */
        _cleanup_free_ char *dep = ks_asprintf("lib/modules/%s/modules.dep", c->kernel);
        free(text);
        text = NULL;
        if (!dep)
            return -ENOMEM;
        if (ks_root_read_file(c->root, dep, 64u << 20, &text, &len) >= 0 &&
            !in_modules_dep(text, len, name))
            chk->final = true;
    }
    free(chk->detail);
    chk->detail =
        how ? ks_asprintf("%s is %s", name, how)
        : chk->final
            ? ks_asprintf("%s is neither loaded nor built into %s, and %s has no such module", name,
                          strempty(c->kernel), strempty(c->kernel))
            : ks_asprintf("%s is neither loaded nor built into %s", name, strempty(c->kernel));
    return chk->detail ? how != NULL : -ENOMEM;
}

/*
 * Whether this boot is a trial whose softdog kswap loaded (kswap.softdog=1 on the command line,
 * lib/engine/trialboot.h): a node that applies again on the boot its last trial was pinned in
 * runs softdog and the watchdog core it pulled in, and the next trial loads them only when it
 * arms softdog itself. Seen in the VM suite's repo scenario: the second trial failed on both.
 */
static bool softdog_is_kswaps(const ks_check_ctx *c)
{
    _cleanup_free_ char *cmdline = NULL;
    _cleanup_strv_free_ char **words = NULL;

    return ks_root_read_line(c->root, "proc/cmdline", &cmdline) >= 0 &&
           ks_strv_split(cmdline, " \t", &words) >= 0 && ks_strv_contains(words, "kswap.softdog=1");
}

/*
 * Whether a module of proc/modules ("NAME SIZE REFCOUNT USED-BY STATE ADDRESS") serves what
 * runs: something holds it (its reference count: a qdisc, a socket's congestion control, a
 * mount, an open device; "-" when it cannot be unloaded), another module uses it, or the node
 * loads it on every boot (modules-load.d). A module loaded once by a command (tc's netem, ip
 * link's veth) and idle since comes back only if that command runs again: not required.
 */
static bool module_serves(const ks_root *root, const char *name, const char *line, size_t n)
{
    _cleanup_strv_free_ char **f = NULL;
    _cleanup_free_ char *copy = strndup(line, n);
    bool listed = false;

    if (!copy || ks_strv_split(copy, " \t", &f) < 0 || ks_strv_length(f) < 4)
        return true; /* not the format described: judged as before, required */
    if (!streq(f[2], "0") || !streq(f[3], "-"))
        return true;
    return ks_modules_load_lists(root, name, &listed, NULL) < 0 || listed;
}

static int take_modules(const ks_check_ctx *c, ks_run_snapshot *s)
{
    _cleanup_free_ char *text = NULL;
    const char *line;
    size_t len, pos = 0, n;
    bool skip_softdog = softdog_is_kswaps(c);
    int r = ks_root_read_file(c->root, "proc/modules", 4 * 1024 * 1024, &text, &len);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, "modules (proc/modules)", r);
    while (ks_next_line(text, len, &pos, &line, &n)) {
        size_t w = strcspn(line, " ");
        if (skip_softdog && ((w == 7 && memcmp(line, "softdog", 7) == 0) ||
                             (w == 8 && memcmp(line, "watchdog", 8) == 0)))
            continue;
        if (!w || w >= n)
            continue;
        _cleanup_free_ char *name = strndup(line, w);
        if (!name)
            return -ENOMEM;
        r = ks_run_snapshot_add_item(s, module_serves(c->root, name, line, n), "module", name,
                                     NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

static const ks_config_key keys[] = {
    KS_CONFIG_LIST("accept", "modules", ks_config_item_name, NULL, KS_CONFIG_HINT_NAME),
    {0},
};

const ks_check_kind ks_check_kind_module = {
    .name = "module",
    .max_fields = 1,
    .run = ks_check_module,
    .keys = keys,
    .item_key = "modules",
    .take = take_modules,
};
