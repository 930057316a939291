/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sysctl.d(5) and modules-load.d(5) as systemd reads them (src/sysctl/sysctl.c,
 * src/modules-load/modules-load.c, src/basic/conf-files.c): *.conf files of etc, run,
 * usr/local/lib, usr/lib and lib, sorted by file name; a name in an earlier directory hides
 * the same name later; a symlink to /dev/null masks the name; hidden files are skipped.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <sys/sysmacros.h>

#include "lib/host/sysctl.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"

#define CONF_MAX (1024u * 1024)

static const char *const conf_dirs[] = {"/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib"};

/* Collapses runs of white space to one space and trims: "reno\tcubic\n" -> "reno cubic". */
static char *normalize_value(const char *s, size_t n)
{
    char *r = malloc(n + 1), *p = r;
    bool space = false;

    if (!r)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (isspace((unsigned char)s[i])) {
            space = p != r;
            continue;
        }
        if (space)
            *p++ = ' ';
        space = false;
        *p++ = s[i];
    }
    *p = '\0';
    return r;
}

/*
 * The key as a path under proc/sys (sysctl_normalize in systemd): when the first separator is
 * a '.', dots and slashes swap ("net.ipv4.conf.eth0/1.rp_filter" -> "net/ipv4/conf/eth0.1/...").
 */
static char *key_to_path(const char *key, size_t n)
{
    char *r, *p;
    size_t sep;

    while (n > 0 && *key == '/') {
        key++;
        n--;
    }
    r = strndup(key, n);
    if (!r)
        return NULL;
    sep = strcspn(r, "./");
    if (r[sep] == '.')
        for (p = r; *p; p++)
            *p = *p == '.' ? '/' : *p == '/' ? '.' : *p;
    return r;
}

/* Components neither empty nor "." nor "..": the key stays below proc/sys. */
static bool path_is_plain(const char *p)
{
    for (;;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

typedef struct conf_file {
    char *name; /* file name, for sorting */
    char *path; /* inside the root */
} conf_file;

static void conf_files_free(conf_file *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(f[i].name);
        free(f[i].path);
    }
    free(f);
}

static int cmp_conf(const void *a, const void *b)
{
    return strcmp(((const conf_file *)a)->name, ((const conf_file *)b)->name);
}

static bool is_mask(const ks_root *root, const char *path)
{
    _cleanup_free_ char *target = NULL;
    struct stat st;

    if (ks_root_readlink(root, path, &target) >= 0 && streq(target, "/dev/null"))
        return true;
    return ks_root_stat(root, path, &st) >= 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
           minor(st.st_rdev) == 3;
}

/* The files of "<dir>/<sub>" for every conf dir, in systemd's order, masks dropped. */
static int conf_files_list(const ks_root *root, const char *sub, conf_file **ret, size_t *ret_n)
{
    _cleanup_strv_free_ char **seen = NULL;
    conf_file *v = NULL;
    size_t n = 0, cap = 0;
    int r;

    for (size_t d = 0; d < ARRAY_SIZE(conf_dirs); d++) {
        _cleanup_free_ char *dir = ks_asprintf("%s/%s", conf_dirs[d], sub);
        _cleanup_strv_free_ char **names = NULL;

        if (!dir) {
            conf_files_free(v, n);
            return -ENOMEM;
        }
        if (ks_root_list_dir(root, dir, &names) < 0)
            continue;
        for (char **nm = names; *nm; nm++) {
            _cleanup_free_ char *path = NULL;

            if ((*nm)[0] == '.' || !ks_endswith(*nm, ".conf"))
                continue;
            if (ks_strv_contains(seen, *nm))
                continue;
            r = ks_strv_extend(&seen, *nm);
            path = ks_asprintf("%s/%s", dir, *nm);
            if (r < 0 || !path) {
                conf_files_free(v, n);
                return -ENOMEM;
            }
            if (is_mask(root, path))
                continue;
            if (!GREEDY_REALLOC(v, cap, n + 1)) {
                conf_files_free(v, n);
                return -ENOMEM;
            }
            v[n].name = strdup(*nm);
            v[n].path = TAKE_PTR(path);
            n++;
            if (!v[n - 1].name) {
                conf_files_free(v, n);
                return -ENOMEM;
            }
        }
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_conf);
    *ret = v;
    *ret_n = n;
    return 0;
}

typedef struct sysctl_match {
    char *value; /* explicit assignment */
    char *file;
    char *glob_value; /* from a glob pattern; explicit assignments win over it (systemd) */
    char *glob_file;
    bool glob_excluded; /* "-pattern" without a value excludes the key from globs */
} sysctl_match;

static int set_str(char **dst, const char *src)
{
    char *c = strdup(src);
    if (!c)
        return -ENOMEM;
    free(*dst);
    *dst = c;
    return 0;
}

/* Looks for want (into m), or, with want NULL, appends each explicitly assigned key to *keys. */
static int sysctl_parse_file(const char *text, size_t len, const char *file, const char *want,
                             sysctl_match *m, char ***keys)
{
    size_t pos = 0, n;
    const char *line;
    int r;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        _cleanup_free_ char *l = strndup(line, n), *path = NULL, *value = NULL;
        char *p, *eq;
        bool glob, dash = false;

        if (!l)
            return -ENOMEM;
        p = ks_strstrip(l);
        if (!*p || *p == '#' || *p == ';')
            continue;
        eq = strchr(p, '=');
        /* "-key = value": a failure to write is ignored, the assignment still counts. */
        if (*p == '-') {
            dash = true;
            p++;
        }
        if (!eq) {
            /* "-pattern": excludes keys from glob assignments; other lines are not assignments. */
            if (!dash)
                continue;
            path = key_to_path(ks_strstrip(p), strlen(ks_strstrip(p)));
            if (!path)
                return -ENOMEM;
            if (want && fnmatch(path, want, 0) == 0)
                m->glob_excluded = true;
            continue;
        }
        *eq = '\0';
        p = ks_strstrip(p);
        if (!*p)
            continue;
        path = key_to_path(p, strlen(p));
        value = normalize_value(eq + 1, strlen(eq + 1));
        if (!path || !value)
            return -ENOMEM;
        glob = strpbrk(path, "*?[") != NULL;
        if (!want) {
            r = glob || ks_strv_contains(*keys, path) ? 0 : ks_strv_extend(keys, path);
        } else if (!glob && streq(path, want)) {
            r = set_str(&m->value, value);
            if (r >= 0)
                r = set_str(&m->file, file);
        } else if (glob && fnmatch(path, want, 0) == 0) {
            r = set_str(&m->glob_value, value);
            if (r >= 0)
                r = set_str(&m->glob_file, file);
        } else
            r = 0;
        if (r < 0)
            return r;
    }
    return 0;
}

/* Every sysctl.d file in systemd's order through sysctl_parse_file(). */
static int sysctl_parse_all(const ks_root *root, const char *want, sysctl_match *m, char ***keys)
{
    conf_file *files = NULL;
    size_t n = 0;
    int r = conf_files_list(root, "sysctl.d", &files, &n);

    if (r < 0)
        return r;
    for (size_t i = 0; i < n && r >= 0; i++) {
        _cleanup_free_ char *text = NULL;
        size_t len;

        if (ks_root_read_file(root, files[i].path, CONF_MAX, &text, &len) < 0)
            continue;
        r = sysctl_parse_file(text, len, files[i].path, want, m, keys);
    }
    conf_files_free(files, n);
    return r;
}

int ks_sysctl_configured(const ks_root *root, const char *key, char **ret_value, char **ret_file)
{
    _cleanup_free_ char *want = NULL;
    sysctl_match m = {};
    int r;

    want = key_to_path(key, strlen(key));
    if (!want)
        return -ENOMEM;
    r = sysctl_parse_all(root, want, &m, NULL);
    if (r >= 0 && !m.value && m.glob_value && !m.glob_excluded) {
        m.value = TAKE_PTR(m.glob_value);
        free(m.file);
        m.file = TAKE_PTR(m.glob_file);
    }
    if (r >= 0) {
        *ret_value = TAKE_PTR(m.value);
        if (ret_file)
            *ret_file = TAKE_PTR(m.file);
    }
    free(m.value);
    free(m.file);
    free(m.glob_value);
    free(m.glob_file);
    return r < 0 ? r : 0;
}

int ks_sysctl_configured_keys(const ks_root *root, char ***ret)
{
    _cleanup_strv_free_ char **keys = NULL;
    int r = sysctl_parse_all(root, NULL, NULL, &keys);

    if (r < 0)
        return r;
    /* The paths back into sysctl's dotted form: the same swap key_to_path makes. */
    for (char **p = keys; p && *p; p++)
        for (char *c = *p; *c; c++)
            *c = *c == '/' ? '.' : *c == '.' ? '/' : *c;
    if (!keys && !(keys = calloc(1, sizeof(char *))))
        return -ENOMEM;
    *ret = TAKE_PTR(keys);
    return 0;
}

int ks_sysctl_live(const ks_root *root, const char *key, char **ret_value)
{
    _cleanup_free_ char *path = NULL, *rel = NULL, *text = NULL;
    char *v;
    size_t len;
    int r;

    rel = key_to_path(key, strlen(key));
    if (!rel)
        return -ENOMEM;
    if (!path_is_plain(rel))
        return -EINVAL;
    path = ks_asprintf("proc/sys/%s", rel);
    if (!path)
        return -ENOMEM;
    r = ks_root_read_file(root, path, 64 * 1024, &text, &len);
    if (r < 0)
        return r;
    v = normalize_value(text, len);
    if (!v)
        return -ENOMEM;
    *ret_value = v;
    return 0;
}

/* Module names treat '-' and '_' alike (kmod's alias normalisation). */
static bool module_name_eq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);

    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++) {
        char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
        if (x != y)
            return false;
    }
    return true;
}

/* One module name per line; etc/modules also allows arguments after the name. */
static bool list_has_module(const char *text, size_t len, const char *module)
{
    size_t pos = 0, n;
    const char *line;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        size_t i = 0, w;
        while (i < n && isspace((unsigned char)line[i]))
            i++;
        if (i == n || line[i] == '#' || line[i] == ';')
            continue;
        w = i;
        while (w < n && !isspace((unsigned char)line[w]))
            w++;
        if (module_name_eq(line + i, w - i, module))
            return true;
    }
    return false;
}

int ks_modules_load_lists(const ks_root *root, const char *module, bool *ret, char **ret_file)
{
    conf_file *files = NULL;
    size_t n = 0;
    char *found = NULL;
    int r;

    r = conf_files_list(root, "modules-load.d", &files, &n);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n && !found; i++) {
        _cleanup_free_ char *text = NULL;
        size_t len;

        if (ks_root_read_file(root, files[i].path, CONF_MAX, &text, &len) < 0)
            continue;
        if (list_has_module(text, len, module)) {
            found = TAKE_PTR(files[i].path);
            if (!found) {
                conf_files_free(files, n);
                return -ENOMEM;
            }
        }
    }
    conf_files_free(files, n);
    if (!found) {
        /* Debian's kmod reads etc/modules (etc/modules-load.d/modules.conf links to it). */
        _cleanup_free_ char *text = NULL;
        size_t len;

        if (ks_root_read_file(root, "/etc/modules", CONF_MAX, &text, &len) >= 0 &&
            list_has_module(text, len, module)) {
            found = strdup("/etc/modules");
            if (!found)
                return -ENOMEM;
        }
    }
    *ret = found != NULL;
    if (ret_file)
        *ret_file = found;
    else
        free(found);
    return 0;
}
