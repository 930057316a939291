/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/util.h"
#include "lib/host/units.h"

typedef enum dir_kind {
    DIR_CONFIG,    /* /etc: what the administrator enabled, kept across reboots */
    DIR_RUNTIME,   /* /run: gone at the next boot */
    DIR_GENERATOR, /* /run/systemd/generator*: written anew by generators at every boot */
    DIR_VENDOR,    /* /usr/lib, /lib, /usr/local/lib: the packages' own links */
} dir_kind;

/* systemd's system unit search path, in its order (src/basic/path-lookup.c). */
static const struct {
    const char *path;
    dir_kind kind;
} search_path[] = {
    {"etc/systemd/system.control", DIR_CONFIG},
    {"run/systemd/system.control", DIR_RUNTIME},
    {"run/systemd/transient", DIR_RUNTIME},
    {"run/systemd/generator.early", DIR_GENERATOR},
    {"etc/systemd/system", DIR_CONFIG},
    {"etc/systemd/system.attached", DIR_CONFIG},
    {"run/systemd/system", DIR_RUNTIME},
    {"run/systemd/system.attached", DIR_RUNTIME},
    {"run/systemd/generator", DIR_GENERATOR},
    {"usr/local/lib/systemd/system", DIR_VENDOR},
    {"usr/lib/systemd/system", DIR_VENDOR},
    {"lib/systemd/system", DIR_VENDOR},
    {"run/systemd/generator.late", DIR_GENERATOR},
};

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/*
 * The first file of the unit's name in the search path: 1 found (*ret_dir its index,
 * *ret_masked when it is a link to /dev/null or empty), 0 none. A link that leads nowhere is
 * skipped, as systemd skips what it cannot load.
 */
static int find_unit_file(const ks_root *root, const char *unit, size_t *ret_dir, bool *ret_masked)
{
    for (size_t i = 0; i < ARRAY_SIZE(search_path); i++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s", search_path[i].path, unit), *dest = NULL;
        struct stat st;

        if (!p)
            return -ENOMEM;
        if (ks_root_lstat(root, p, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode) && ks_root_readlink(root, p, &dest) >= 0 &&
            streq(dest, "/dev/null")) {
            *ret_dir = i, *ret_masked = true;
            return 1;
        }
        if (ks_root_stat(root, p, &st) < 0)
            continue;
        *ret_dir = i;
        *ret_masked = S_ISCHR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size == 0);
        return 1;
    }
    return 0;
}

/*
 * The names the unit also goes by: symlinks at the top of a search path directory that point
 * to a file of the unit's name (what `systemctl enable` makes of Alias=). A .wants/ link under
 * such a name starts the unit too.
 */
static int collect_aliases(const ks_root *root, const char *unit, char ***aliases)
{
    for (size_t i = 0; i < ARRAY_SIZE(search_path); i++) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (ks_root_opendir(root, search_path[i].path, &d) < 0)
            continue;
        while ((de = readdir(d))) {
            char dest[PATH_MAX];
            ssize_t n;
            int r;

            if (de->d_type != DT_LNK || streq(de->d_name, unit))
                continue;
            n = readlinkat(dirfd(d), de->d_name, dest, sizeof(dest) - 1);
            if (n < 0)
                continue;
            dest[n] = '\0';
            if (!streq(basename_of(dest), unit) || ks_strv_contains(*aliases, de->d_name))
                continue;
            r = ks_strv_extend(aliases, de->d_name);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

static bool is_dependency_dir(const struct dirent *de)
{
    const char *dot = strrchr(de->d_name, '.');
    /* systemd follows only real directories here (install.c, find_symlinks). */
    return de->d_type == DT_DIR && dot &&
           (streq(dot, ".wants") || streq(dot, ".requires") || streq(dot, ".upholds"));
}

/* The first link under one of names in a dependency directory of dir: "dir/x.wants/name". */
static int find_wants_link(const ks_root *root, const char *dir, char *const *names, char **ret)
{
    _cleanup_closedir_ DIR *d = NULL;
    struct dirent *de;

    if (ks_root_opendir(root, dir, &d) < 0)
        return 0;
    while ((de = readdir(d))) {
        _cleanup_free_ char *sub = NULL;
        _cleanup_closedir_ DIR *w = NULL;
        struct dirent *le;

        if (!is_dependency_dir(de))
            continue;
        sub = ks_asprintf("%s/%s", dir, de->d_name);
        if (!sub)
            return -ENOMEM;
        if (ks_root_opendir(root, sub, &w) < 0)
            continue;
        while ((le = readdir(w)))
            if (le->d_type == DT_LNK && ks_strv_contains(names, le->d_name)) {
                *ret = ks_asprintf("/%s/%s", sub, le->d_name);
                return *ret ? 1 : -ENOMEM;
            }
    }
    return 0;
}

int ks_unit_state_get(const ks_root *root, const char *unit, ks_unit_state *ret, char **ret_how)
{
    _cleanup_strv_free_ char **names = NULL;
    _cleanup_free_ char *link = NULL, *runtime_link = NULL;
    bool masked = false;
    size_t dir = 0;
    int r;

    assert(root);
    assert(unit);
    r = find_unit_file(root, unit, &dir, &masked);
    if (r < 0)
        return r;
    if (r == 0) {
        *ret_how = strdup("no unit file in systemd's unit search path (/etc/systemd/system, "
                          "/run/systemd/system, /usr/lib/systemd/system, ...)");
        if (!*ret_how)
            return -ENOMEM;
        *ret = KS_UNIT_MISSING;
        return 0;
    }
    if (masked) {
        *ret_how = ks_asprintf("/%s/%s links to /dev/null (masked)", search_path[dir].path, unit);
        if (!*ret_how)
            return -ENOMEM;
        *ret = KS_UNIT_MASKED;
        return 0;
    }

    r = ks_strv_extend(&names, unit);
    if (r >= 0)
        r = collect_aliases(root, unit, &names);
    if (r < 0)
        return r;
    /* The search path's order: a link in /etc settles it, a runtime one only when nothing
     * lasting wants the unit. */
    for (size_t i = 0; i < ARRAY_SIZE(search_path); i++) {
        _cleanup_free_ char *found = NULL;
        r = find_wants_link(root, search_path[i].path, names, &found);
        if (r < 0)
            return r;
        if (r == 0)
            continue;
        if (search_path[i].kind != DIR_RUNTIME) {
            link = TAKE_PTR(found);
            break;
        }
        if (!runtime_link)
            runtime_link = TAKE_PTR(found);
    }
    if (link) {
        *ret_how = TAKE_PTR(link);
        *ret = KS_UNIT_ENABLED;
    } else if (runtime_link) {
        *ret_how = ks_asprintf("only %s, under /run: gone after the next reboot", runtime_link);
        if (!*ret_how)
            return -ENOMEM;
        *ret = KS_UNIT_RUNTIME;
    } else {
        *ret_how = ks_asprintf("/%s/%s, no link to it in a *.wants/ or *.requires/ directory",
                               search_path[dir].path, unit);
        if (!*ret_how)
            return -ENOMEM;
        *ret = KS_UNIT_DISABLED;
    }
    return 0;
}
