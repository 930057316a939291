/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "lib/kernel/depmodconf.h"
#include "lib/kernel/modinfo.h"
#include "lib/basic/fileio.h"
#include "lib/kernel/kmod-dl.h"
#include "lib/kernel/modverify.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/string-table.h"
#include "lib/basic/util.h"

#define BUILTIN_FILE_MAX (16 * 1024 * 1024)
#define TREE_DEPTH_MAX 16

typedef struct modent {
    char *name;
    char *file; /* relative to the tree; NULL for built-in or absent */
    char **depends;
    char *version;
    bool builtin, absent, info_loaded;
} modent;

struct ks_modset {
    char *release;
    modent *v;
    size_t n, cap;
    uint32_t *slots; /* open addressing: index + 1, 0 = empty */
    size_t nslots;
    /* Backend of an installed tree. */
    const ks_root *root; /* outlives the set */
    int dirfd;
    char *dir; /* "/proc/self/fd/N": the tree inside the root, for libkmod */
    struct kmod_ctx *kmod;
    bool indexed;
    char *error;
    /* The root's depmod.d (NULL: none), owned or borrowed, and whether files come in the
     * order depmod meets them (a tree: readdir, as depmod lists it) or not (a package). */
    ks_depmod_conf *conf;
    bool conf_owned, met_order;
};

static const char *const ks_module_state_table[_KS_MODULE_STATE_MAX] = {
    [KS_MODULE_MISSING] = "missing",
    [KS_MODULE_BUILTIN] = "builtin",
    [KS_MODULE_LOADABLE] = "module",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_module_state, ks_module_state);

void ks_module_report_done(ks_module_report *m)
{
    if (!m)
        return;
    free(m->name);
    free(m->version);
    free(m->file);
    ks_strv_free(m->missing_deps);
    *m = (ks_module_report){0};
}

bool ks_module_report_ok(const ks_module_report *m)
{
    return m->state == KS_MODULE_BUILTIN ||
           (m->state == KS_MODULE_LOADABLE && ks_strv_length(m->missing_deps) == 0);
}

ks_modset *ks_modset_new(const char *release)
{
    ks_modset *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->dirfd = -EBADF;
    s->release = strdup(release ? release : "");
    if (!s->release) {
        free(s);
        return NULL;
    }
    return s;
}

ks_modset *ks_modset_free(ks_modset *s)
{
    if (!s)
        return NULL;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].file);
        ks_strv_free(s->v[i].depends);
        free(s->v[i].version);
    }
    free(s->v);
    free(s->slots);
    if (s->kmod)
        sym_kmod_unref(s->kmod);
    if (s->dirfd >= 0)
        close(s->dirfd);
    free(s->dir);
    free(s->error);
    free(s->release);
    if (s->conf_owned)
        ks_depmod_conf_free(s->conf);
    free(s);
    return NULL;
}

const char *ks_modset_release(const ks_modset *s)
{
    return s->release;
}

int ks_modset_set_release(ks_modset *s, const char *release)
{
    char *r = strdup(release);
    if (!r)
        return -ENOMEM;
    free(s->release);
    s->release = r;
    return 0;
}

const char *ks_modset_error(const ks_modset *s)
{
    return s->error;
}

bool ks_modset_used_index(const ks_modset *s)
{
    return s->indexed;
}

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static modent *lookup(const ks_modset *s, const char *name)
{
    if (!s->nslots)
        return NULL;
    for (size_t i = hash(name) & (s->nslots - 1);; i = (i + 1) & (s->nslots - 1)) {
        uint32_t k = s->slots[i];
        if (!k)
            return NULL;
        if (streq(s->v[k - 1].name, name))
            return &s->v[k - 1];
    }
}

static void slot_insert(uint32_t *slots, size_t nslots, const char *name, size_t index)
{
    size_t i = hash(name) & (nslots - 1);
    while (slots[i])
        i = (i + 1) & (nslots - 1);
    slots[i] = (uint32_t)(index + 1);
}

static int rehash(ks_modset *s, size_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof(uint32_t));
    if (!slots)
        return -ENOMEM;
    for (size_t k = 0; k < s->n; k++)
        slot_insert(slots, nslots, s->v[k].name, k);
    free(s->slots);
    s->slots = slots;
    s->nslots = nslots;
    return 0;
}

/* Finds or creates the entry of a (normalized) name. */
static int get_entry(ks_modset *s, const char *raw, modent **ret)
{
    _cleanup_free_ char *name = strdup(raw);
    modent *e;
    int r;

    if (!name)
        return -ENOMEM;
    ks_module_name_normalize(name);
    e = lookup(s, name);
    if (e) {
        *ret = e;
        return 0;
    }
    if (s->n >= UINT32_MAX - 1)
        return -E2BIG;
    if (!GREEDY_REALLOC(s->v, s->cap, s->n + 1))
        return -ENOMEM;
    if ((s->n + 1) * 2 > s->nslots) {
        r = rehash(s, s->nslots ? s->nslots * 2 : 128);
        if (r < 0)
            return r;
    }
    s->v[s->n] = (modent){.name = TAKE_PTR(name)};
    slot_insert(s->slots, s->nslots, s->v[s->n].name, s->n);
    *ret = &s->v[s->n++];
    return 0;
}

int ks_modset_add_builtin(ks_modset *s, const char *name)
{
    modent *e;
    int r = get_entry(s, name, &e);
    if (r < 0)
        return r;
    e->builtin = true;
    e->absent = false;
    e->info_loaded = true;
    return 0;
}

int ks_modset_set_builtin_version(ks_modset *s, const char *name, const char *version)
{
    modent *e;
    char *v;
    int r = get_entry(s, name, &e);
    if (r < 0)
        return r;
    /* modules.builtin.modinfo lists built-in modules as well; take it as a second source. */
    e->builtin = true;
    e->absent = false;
    e->info_loaded = true;
    v = strdup(version);
    if (!v)
        return -ENOMEM;
    free(e->version);
    e->version = v;
    return 0;
}

void ks_modset_use_depmod_conf(ks_modset *s, ks_depmod_conf *conf, bool take)
{
    if (s->conf_owned)
        ks_depmod_conf_free(s->conf);
    s->conf = conf;
    s->conf_owned = take;
}

/* Whether the file already recorded for a module stays when file comes along. */
static bool keeps_file(ks_modset *s, const char *old, const char *file)
{
    int a, b;

    if (s->met_order)
        return ks_depmod_conf_keeps_old(s->conf, s->release, old, file);
    /* A package: dpkg's unpacking order says nothing about readdir's later, so a tie goes to
     * the first name in byte order. */
    a = ks_depmod_conf_rank(s->conf, s->release, file);
    b = ks_depmod_conf_rank(s->conf, s->release, old);
    return a < b || (a == b && strcmp(file, old) > 0);
}

int ks_modset_add_module(ks_modset *s, const char *name, const char *file)
{
    modent *e;
    char *f;
    int r = get_entry(s, name, &e);
    if (r < 0)
        return r;
    if (e->builtin)
        return 0; /* modprobe takes modules.builtin's word */
    if (e->file && !streq(e->file, file) && keeps_file(s, e->file, file))
        return 0;
    /* A new file, a better one, or the same path again (dpkg keeps the last copy): what was
     * read of the old one no longer counts. */
    f = strdup(file);
    if (!f)
        return -ENOMEM;
    free(e->file);
    e->file = f;
    e->absent = false;
    e->info_loaded = false;
    e->depends = ks_strv_free(e->depends);
    free(e->version);
    e->version = NULL;
    return 0;
}

const char *ks_modset_get_file(const ks_modset *s, const char *name)
{
    const modent *e = lookup(s, name);
    return e ? e->file : NULL;
}

int ks_modset_set_info(ks_modset *s, const char *name, const char *depends, const char *version)
{
    _cleanup_strv_free_ char **deps = NULL;
    _cleanup_free_ char *v = NULL;
    modent *e;
    int r = get_entry(s, name, &e);

    if (r < 0)
        return r;
    if (depends) {
        r = ks_strv_split(depends, ",", &deps);
        if (r < 0)
            return r;
        for (char **d = deps; d && *d; d++)
            ks_module_name_normalize(*d);
    }
    if (version) {
        v = strdup(version);
        if (!v)
            return -ENOMEM;
    }
    ks_strv_free(e->depends);
    free(e->version);
    e->depends = TAKE_PTR(deps);
    e->version = TAKE_PTR(v);
    e->info_loaded = true;
    return 0;
}

bool ks_modset_needs_info(const ks_modset *s, const char *name)
{
    _cleanup_free_ char *n = strdup(name);
    modent *e;
    if (!n)
        return false;
    ks_module_name_normalize(n);
    e = lookup(s, n);
    return e && e->file && !e->info_loaded;
}

bool ks_modset_is_resolved(const ks_modset *s, const char *name)
{
    const modent *e = lookup(s, name);
    return e && !e->absent && (e->builtin || (e->file && e->info_loaded));
}

char *const *ks_modset_get_depends(const ks_modset *s, const char *name)
{
    const modent *e = lookup(s, name);
    return e && e->info_loaded ? e->depends : NULL;
}

size_t ks_modset_count(const ks_modset *s)
{
    size_t c = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].builtin || s->v[i].file)
            c++;
    return c;
}

/* How a file of the set is named in messages: below /lib/modules/RELEASE, or absolute (a
 * module of an external directory of depmod.d). */
static char *shown(const ks_modset *s, const char *file)
{
    return file[0] == '/' ? strdup(file) : ks_asprintf("/lib/modules/%s/%s", s->release, file);
}

/*
 * What libkmod will open by path (/proc/self/fd/N/rel) must stay inside the root by the host's
 * rules and be a regular file (a FIFO would block it forever). 0; -ENOENT when absent; else an
 * error in s->error that names the file. An absolute file is one of an external directory,
 * resolved from the root.
 */
static int tree_check_full(ks_modset *s, const char *file, struct stat *ret_st, int *ret_fd)
{
    _cleanup_free_ char *link = NULL, *name = NULL;
    _cleanup_close_ int fd = -1;
    bool abs = file[0] == '/';
    int dfd = abs ? ks_root_fd(s->root) : s->dirfd;
    const char *rel = abs ? file + strspn(file, "/") : file;
    struct stat st;
    int r;

    if (!s->root)
        return 0;
    /* The fd of the file the check resolved: what is judged and handed on is that file. */
    fd = ks_root_open_beneath(s->root, dfd, rel, &link);
    r = fd < 0 ? fd : 0;
    if (r == -EXDEV) {
        name = shown(s, file);
        free(s->error);
        s->error = ks_asprintf("'%s' leads out of the root through the symbolic link '/%s'",
                               strempty(name), link ? link : rel);
        return r;
    }
    if (r < 0)
        return r;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (ret_st)
        *ret_st = st;
    if (!S_ISREG(st.st_mode)) {
        r = S_ISDIR(st.st_mode)    ? -EISDIR
            : S_ISFIFO(st.st_mode) ? -ESPIPE
            : S_ISSOCK(st.st_mode) ? -ENOTSOCK
                                   : -ENODEV;
        if (ret_st && S_ISDIR(st.st_mode))
            return r; /* the caller walks it */
        name = shown(s, file);
        free(s->error);
        s->error = ks_asprintf("'%s' %s", strempty(name), ks_strerror(r));
        return r;
    }
    if (ret_fd)
        *ret_fd = TAKE_FD(fd);
    return 0;
}

static int tree_check_stat(ks_modset *s, const char *file, struct stat *ret_st)
{
    return tree_check_full(s, file, ret_st, NULL);
}

static int tree_check(ks_modset *s, const char *file)
{
    return tree_check_full(s, file, NULL, NULL);
}

void (*ks_modset_test_before_kmod_open)(const char *file);

/* The path libkmod opens for a file of the set. */
static char *kmod_path(const ks_modset *s, const char *file)
{
    if (file[0] == '/')
        return ks_asprintf("/proc/self/fd/%d%s", ks_root_fd(s->root), file);
    return ks_asprintf("%s/%s", s->dir, file);
}

/* Whether an absolute path lies in one of the external directories depmod.d names. */
static bool in_external(ks_modset *s, const char *path)
{
    for (char *const *e = ks_depmod_conf_externals(s->conf, s->release); *e; e++) {
        const char *rest = ks_startswith(path, *e);
        if (rest && rest[0] == '/' && !strstr(rest, "/../"))
            return true;
    }
    return false;
}

/* libkmod lookup of one name in an indexed tree. */
static int resolve_indexed(ks_modset *s, const char *name)
{
    struct kmod_list *list = NULL, *l;
    modent *e;
    int r;

    r = sym_kmod_module_new_from_lookup(s->kmod, name, &list);
    if (r < 0)
        return r;
    r = get_entry(s, name, &e);
    if (r < 0)
        goto out;
    e->absent = true;
    for (l = list; l; l = sym_kmod_list_next(list, l)) {
        struct kmod_module *m = sym_kmod_module_get_module(l);
        const char *mname = sym_kmod_module_get_name(m), *path = sym_kmod_module_get_path(m);
        _cleanup_free_ char *n = strdup(mname ? mname : "");

        if (n)
            ks_module_name_normalize(n);
        if (n && streq(n, e->name) && path) {
            const char *rel = ks_startswith(path, s->dir);
            int checked;
            if (!rel && path[0] == '/' && in_external(s, path))
                rel = path; /* depmod.d's external: absolute in modules.dep, kept so */
            else if (rel)
                rel += strspn(rel, "/");
            if (!rel || !*rel) {
                /* An absolute path in modules.dep: outside the tree libkmod was given. */
                free(s->error);
                s->error =
                    ks_asprintf("modules.dep of %s names '%s', outside the tree", s->release, path);
                sym_kmod_module_unref(m);
                r = -EXDEV;
                goto out;
            }
            /* The index may name a file that is gone: only a file counts. */
            checked = tree_check(s, rel);
            if (checked == 0) {
                e->file = strdup(rel);
                e->absent = !e->file;
            } else if (checked != -ENOENT) {
                sym_kmod_module_unref(m);
                r = checked;
                goto out;
            }
        }
        sym_kmod_module_unref(m);
        if (!e->absent)
            break;
    }
    r = 0;
out:
    sym_kmod_module_unref_list(list);
    return r;
}

/* The .modinfo of a module file of the tree, through libkmod (which decompresses). */
static int load_tree_info(ks_modset *s, modent *e)
{
    _cleanup_free_ char *path = NULL, *deps = NULL, *version = NULL;
    _cleanup_close_ int fd = -EBADF;
    struct kmod_module *m = NULL;
    struct kmod_list *info = NULL, *l;
    int r;

    r = tree_check_full(s, e->file, NULL, &fd);
    if (r < 0)
        return r;
    /* libkmod opens the module by path. Not by its path in the tree, which could be swapped
     * for a link out of the root after the check, but through the O_PATH fd of the file the
     * check resolved: /proc/self/fd/N walks nothing. (The host's "/" checks nothing.) */
    path = fd >= 0 ? ks_asprintf("/proc/self/fd/%d", fd) : kmod_path(s, e->file);
    if (!path)
        return -ENOMEM;
    if (ks_modset_test_before_kmod_open)
        ks_modset_test_before_kmod_open(e->file);
    r = sym_kmod_module_new_from_path(s->kmod, path, &m);
    if (r < 0)
        return r;
    r = sym_kmod_module_get_info(m, &info);
    if (r < 0) {
        sym_kmod_module_unref(m);
        return r;
    }
    for (l = info; l; l = sym_kmod_list_next(info, l)) {
        const char *k = sym_kmod_module_info_get_key(l), *v = sym_kmod_module_info_get_value(l);
        if (streq_ptr(k, "depends") && !deps)
            deps = strdup(strempty(v));
        else if (streq_ptr(k, "version") && !version)
            version = strdup(strempty(v));
    }
    sym_kmod_module_info_free_list(info);
    sym_kmod_module_unref(m);
    return ks_modset_set_info(s, e->name, deps, version);
}

/* The entry of name with its information loaded; NULL (and 0) when the kernel lacks it. */
static int need(ks_modset *s, const char *raw, modent **ret)
{
    _cleanup_free_ char *name = strdup(raw);
    modent *e;
    int r;

    if (!name)
        return -ENOMEM;
    ks_module_name_normalize(name);
    e = lookup(s, name);
    if (!e && s->kmod && s->indexed) {
        r = resolve_indexed(s, name);
        if (r < 0)
            return r;
        e = lookup(s, name);
    }
    if (!e || e->absent || (!e->builtin && !e->file)) {
        *ret = NULL;
        return 0;
    }
    if (!e->info_loaded && s->kmod) {
        size_t idx = (size_t)(e - s->v);
        r = load_tree_info(s, e);
        if (r < 0 && s->error)
            return r; /* it said which file and why */
        if (r < 0) {
            _cleanup_free_ char *what = shown(s, s->v[idx].file);
            free(s->error);
            s->error =
                ks_asprintf("cannot read the .modinfo of '%s': %s", strempty(what), strerror(-r));
            return r;
        }
        e = &s->v[idx]; /* the array may have moved */
    }
    *ret = e;
    return 0;
}

int ks_modset_has(ks_modset *s, const char *name)
{
    modent *e;
    _cleanup_free_ char *n = strdup(name);
    int r;

    if (!n)
        return -ENOMEM;
    ks_module_name_normalize(n);
    e = lookup(s, n);
    if (!e && s->kmod && s->indexed) {
        r = resolve_indexed(s, n);
        if (r < 0)
            return r;
        e = lookup(s, n);
    }
    return e && !e->absent && (e->builtin || e->file);
}

/* Walks the dependencies of name: loadable modules go to mods, unknown names to missing. */
static int walk_deps(ks_modset *s, const char *name, char ***seen, char ***mods, char ***missing,
                     unsigned depth)
{
    _cleanup_strv_free_ char **deps = NULL;
    modent *e;
    int r;

    if (depth > 64)
        return -ELOOP;
    r = need(s, name, &e);
    if (r < 0)
        return r;
    if (!e || e->builtin)
        return 0;
    /* Copy: need() below may move the entries. */
    for (char **d = e->depends; d && *d; d++) {
        r = ks_strv_extend(&deps, *d);
        if (r < 0)
            return r;
    }
    for (char **d = deps; d && *d; d++) {
        modent *de;
        if (ks_strv_contains(*seen, *d))
            continue;
        r = ks_strv_extend(seen, *d);
        if (r < 0)
            return r;
        r = need(s, *d, &de);
        if (r < 0)
            return r;
        if (!de) {
            r = ks_strv_extend(missing, *d);
            if (r < 0)
                return r;
            continue;
        }
        if (de->builtin)
            continue;
        if (mods) {
            r = ks_strv_extend(mods, *d);
            if (r < 0)
                return r;
        }
        r = walk_deps(s, *d, seen, mods, missing, depth + 1);
        if (r < 0)
            return r;
    }
    return 0;
}

int ks_modset_judge(ks_modset *s, const char *raw, ks_module_report *ret)
{
    _cleanup_(ks_module_report_done) ks_module_report m = {0};
    _cleanup_strv_free_ char **seen = NULL;
    modent *e;
    int r;

    m.name = strdup(raw);
    if (!m.name)
        return -ENOMEM;
    ks_module_name_normalize(m.name);
    r = need(s, m.name, &e);
    if (r < 0)
        return r;
    if (!e) {
        m.state = KS_MODULE_MISSING;
    } else {
        m.state = e->builtin ? KS_MODULE_BUILTIN : KS_MODULE_LOADABLE;
        if (e->version && !(m.version = strdup(e->version)))
            return -ENOMEM;
        if (e->file && !(m.file = strdup(e->file)))
            return -ENOMEM;
        r = ks_strv_extend(&seen, m.name);
        if (r < 0)
            return r;
        r = walk_deps(s, m.name, &seen, NULL, &m.missing_deps, 0);
        if (r < 0)
            return r;
    }
    *ret = m;
    m = (ks_module_report){0};
    return 0;
}

int ks_modset_closure(ks_modset *s, const char *name, char ***ret_modules, char ***ret_missing)
{
    _cleanup_strv_free_ char **seen = NULL, **mods = NULL, **missing = NULL;
    _cleanup_free_ char *n = strdup(name);
    modent *e;
    int r;

    if (!n)
        return -ENOMEM;
    ks_module_name_normalize(n);
    r = need(s, n, &e);
    if (r < 0)
        return r;
    if (!e) {
        r = ks_strv_extend(&missing, n);
    } else if (!e->builtin) {
        r = ks_strv_extend(&mods, n);
        if (r >= 0)
            r = ks_strv_extend(&seen, n);
        if (r >= 0)
            r = walk_deps(s, n, &seen, &mods, &missing, 0);
    }
    if (r < 0)
        return r;
    *ret_modules = TAKE_PTR(mods);
    *ret_missing = TAKE_PTR(missing);
    return 0;
}

/* Tree backend. */

static int add_builtin_cb(void *userdata, const char *module)
{
    return ks_modset_add_builtin(userdata, module);
}

static int builtin_info_cb(void *userdata, const char *module, const char *key, const char *value)
{
    if (streq(key, "version"))
        return ks_modset_set_builtin_version(userdata, module, value);
    return 0;
}

static int read_at(ks_modset *s, const char *path, size_t max, char **ret, size_t *ret_len)
{
    _cleanup_close_ int pfd = -EBADF, fd = -EBADF;
    int r;

    /* The file the check judged is the one read (its O_PATH fd; none on the host's "/"). */
    r = tree_check_full(s, path, NULL, &pfd);
    if (r < 0)
        return r;
    fd = pfd >= 0 ? ks_fd_reopen(pfd, O_RDONLY, KS_FILE_REGULAR) : -EXDEV;
    if (fd == -EXDEV)
        fd = ks_openat_regular(s->dirfd, path, 0);
    if (fd < 0)
        return fd;
    r = ks_read_fd(fd, max, ret, ret_len);
    if (r < 0) {
        free(s->error);
        s->error =
            ks_asprintf("cannot read '/lib/modules/%s/%s': %s", s->release, path, ks_strerror(r));
    }
    return r;
}

/* The files libkmod reads by itself when it loads the indexes or judges a built-in module. */
static const char *const kmod_files[] = {
    "modules.dep.bin",
    "modules.alias.bin",
    "modules.symbols.bin",
    "modules.builtin.bin",
    "modules.builtin.alias.bin",
    "modules.builtin.modinfo",
    "modules.softdep",
    "modules.weakdep",
    "modules.devname",
    "modules.order",
    "modules.dep",
    "modules.alias",
};

/*
 * Records every module file below rel (relative to dirfd; prefix: what the recorded names start
 * with, "" inside lib/modules/RELEASE, the directory of an external one) as depmod lists
 * them: readdir order, depth first, entries depmod.d excludes left out at every depth, links
 * followed (only inside the root: one that leads out is an error, a dangling one no module).
 */
static int walk_tree(ks_modset *s, int dirfd, const char *prefix, const char *rel, bool follow,
                     unsigned depth)
{
    _cleanup_closedir_ DIR *d = NULL;
    struct dirent *de;
    int fd, r;

    if (depth > TREE_DEPTH_MAX)
        return 0;
    fd = openat(dirfd, rel[0] ? rel : ".",
                O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0)
        return -errno;
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -errno;
    }
    while ((de = readdir(d))) {
        _cleanup_free_ char *p = NULL, *file = NULL, *name = NULL;
        unsigned char type = de->d_type;

        if (ks_depmod_conf_excludes(s->conf, de->d_name))
            continue;
        p = rel[0] ? ks_asprintf("%s/%s", rel, de->d_name) : strdup(de->d_name);
        file = !p ? NULL : prefix[0] ? ks_asprintf("%s/%s", prefix, p) : strdup(p);
        if (!file)
            return -ENOMEM;
        if (type == DT_UNKNOWN) {
            /* Some file systems do not fill d_type. */
            struct stat st;
            if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            type = S_ISDIR(st.st_mode)   ? DT_DIR
                   : S_ISREG(st.st_mode) ? DT_REG
                   : S_ISLNK(st.st_mode) ? DT_LNK
                                         : DT_FIFO;
        }
        if (type == DT_DIR) {
            r = walk_tree(s, dirfd, prefix, p, follow, depth + 1);
            if (r < 0)
                return r;
        } else if (type == DT_REG && ks_module_name_from_path(de->d_name, &name) == 0) {
            r = ks_modset_add_module(s, name, file);
            if (r < 0)
                return r;
        } else if (type == DT_LNK) {
            struct stat st;
            r = tree_check_stat(s, file, &st);
            if (r == -ENOENT)
                continue;
            if (r == -EISDIR) {
                r = walk_tree(s, dirfd, prefix, p, true, depth + 1);
                if (r < 0)
                    return r;
                continue;
            }
            if (ks_module_name_from_path(de->d_name, &name) < 0)
                continue;
            if (r < 0)
                return r;
            r = ks_modset_add_module(s, name, file);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* depmod walks its external directories after the tree, in its own order. */
static int walk_externals(ks_modset *s)
{
    _cleanup_strv_free_ char **dirs = NULL;
    int r;

    for (char *const *e = ks_depmod_conf_externals(s->conf, s->release); *e; e++) {
        r = ks_strv_extend(&dirs, *e);
        if (r < 0)
            return r;
    }
    for (char **e = dirs; e && *e; e++) {
        _cleanup_close_ int fd = -1;
        if ((*e)[0] != '/')
            continue; /* depmod opens it from its working directory: nothing to judge */
        fd = ks_root_open_at(s->root, *e, O_RDONLY | O_DIRECTORY, 0);
        if (fd == -ENOENT || fd == -ENOTDIR)
            continue; /* depmod: "ignore external dir absence" */
        if (fd < 0)
            return fd;
        r = walk_tree(s, fd, *e, "", false, 0);
        if (r < 0)
            return r;
    }
    return 0;
}

int ks_modset_open_tree(const ks_root *root, const char *release, ks_modset **ret)
{
    return ks_modset_open_tree_full(root, release, ret, NULL);
}

int ks_modset_open_tree_full(const ks_root *root, const char *release, ks_modset **ret,
                             char **ret_error)
{
    _cleanup_modset_ ks_modset *s = NULL;
    _cleanup_free_ char *rel = NULL, *buf = NULL;
    const char *null_config[] = {NULL}, *dlerr = NULL;
    size_t len;
    struct stat st;
    int r;

    if (!release || !*release || strchr(release, '/') || streq(release, "..") ||
        streq(release, "."))
        return -EINVAL;
    s = ks_modset_new(release);
    if (!s)
        return -ENOMEM;
    rel = ks_asprintf("lib/modules/%s", release);
    if (!rel)
        return -ENOMEM;
    r = ks_root_open_at(root, rel, O_RDONLY | O_DIRECTORY, 0);
    if (r < 0)
        return r;
    s->dirfd = r;
    s->root = root;
    s->met_order = true;
    /* depmod.d of the root, as the depmod of that system reads it. */
    r = ks_depmod_conf_load(root, &s->conf, &s->error);
    if (r < 0)
        goto fail;
    s->conf_owned = true;
    /* libkmod wants a path: this one stays inside the root whatever the symlinks say. */
    s->dir = ks_asprintf("/proc/self/fd/%d", s->dirfd);
    if (!s->dir)
        return -ENOMEM;

    /* Built-in modules from the text files every kernel package ships. */
    r = read_at(s, "modules.builtin", BUILTIN_FILE_MAX, &buf, &len);
    if (r < 0 && r != -ENOENT)
        goto fail;
    if (r >= 0) {
        r = ks_builtin_foreach(buf, len, add_builtin_cb, s);
        if (r < 0)
            return r;
        free(TAKE_PTR(buf));
    }
    r = read_at(s, "modules.builtin.modinfo", BUILTIN_FILE_MAX, &buf, &len);
    if (r < 0 && r != -ENOENT)
        goto fail;
    if (r >= 0) {
        r = ks_builtin_modinfo_foreach(buf, len, builtin_info_cb, s);
        if (r < 0)
            return r;
        free(TAKE_PTR(buf));
    }

    /* Ignore the host's modprobe.d: the tree is another kernel's. */
    r = ks_dlopen_libkmod(&dlerr);
    if (r < 0)
        return r; /* libkmod2 comes with kmod on every Debian and Ubuntu system */
    s->kmod = sym_kmod_new(s->dir, null_config);
    if (!s->kmod)
        return -ENOMEM;
    for (size_t i = 0; i < ARRAY_SIZE(kmod_files); i++) {
        r = tree_check(s, kmod_files[i]);
        if (r < 0 && r != -ENOENT)
            goto fail;
    }
    s->indexed = fstatat(s->dirfd, "modules.dep.bin", &st, 0) == 0 && S_ISREG(st.st_mode);
    if (s->indexed) {
        r = sym_kmod_load_resources(s->kmod);
        if (r < 0)
            s->indexed = false;
    }
    if (!s->indexed) {
        r = walk_tree(s, s->dirfd, "", "", false, 0);
        if (r >= 0)
            r = walk_externals(s);
        if (r < 0)
            goto fail;
    }
    *ret = TAKE_PTR(s);
    return 0;
fail:
    if (ret_error && s->error)
        *ret_error = TAKE_PTR(s->error);
    return r;
}
