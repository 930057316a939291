/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modules: loaded or built in for the RUNNING kernel: proc/modules, sys/module/NAME (loaded
 * modules, and built-in ones with parameters or a version), lib/modules/$(uname -r)/
 * modules.builtin.
 */
#include "checks/check.h"
#include "lib/basic/util.h"

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
    _cleanup_free_ char *name = strdup(chk->arg), *text = NULL, *sys = NULL, *builtin = NULL;
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
