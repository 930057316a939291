/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The takeover of one archive's sources by the deb822 source and binary keyring kswap writes,
 * so that apt never sees two Signed-By values for it, and its removal: planned as a file-change
 * transaction (lib/basic/transaction.h) that the caller journals, then applies.
 */
#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <sys/stat.h>

#include "lib/basic/transaction.h"
#include "lib/basic/util.h"
#include "lib/repo/aptsource-internal.h"
#include "lib/repo/aptsource.h"

/* The topmost folder of path that does not exist (NULL when its folder exists). */
static int missing_dir(const ks_root *root, const char *path, char **ret)
{
    _cleanup_free_ char *p = strdup(path);
    char *found = NULL, *slash;

    if (!p)
        return -ENOMEM;
    while ((slash = strrchr(p, '/')) && slash != p) {
        *slash = '\0';
        if (ks_root_exists(root, p))
            break;
        free(found);
        found = strdup(p);
        if (!found)
            return -ENOMEM;
    }
    *ret = found;
    return 0;
}

/* Plans writing data to path unless it holds exactly that already. */
static int plan_write(const ks_root *root, ks_transaction *l, const char *path, const void *data,
                      size_t len, mode_t mode, const char *what)
{
    _cleanup_file_change_ ks_file_change c = {.kind = KS_FILE_CHANGE_WRITE, .mode = mode};
    int r;

    assert(root);
    assert(l);
    assert(path);
    assert(data || len == 0);
    c.path = strdup(path);
    c.what = strdup(what);
    c.data = malloc(len ? len : 1);
    if (!c.path || !c.what || !c.data)
        return -ENOMEM;
    memcpy(c.data, data, len);
    c.len = len;
    r = missing_dir(root, path, &c.made_dir);
    if (r < 0)
        return r;
    r = ks_file_change_keep_old(root, &c, SOURCE_FILE_MAX);
    if (r < 0)
        return r;
    /* It holds exactly that already: nothing to do. */
    if (c.old_exists && c.old_len == len && memcmp(c.old_data, data, len) == 0 &&
        c.old_mode == mode)
        return 0;
    return ks_transaction_add(l, &c);
}

static bool valid_word(const char *s);
static bool valid_takeover(const ks_apt_takeover *t);

/* A suite that ends in '/' is an exact path (a flat repository): apt wants no components. */
static bool suite_is_flat(const char *suite)
{
    size_t n = strlen(suite);
    return n > 0 && suite[n - 1] == '/';
}

int ks_aptsource_text(const ks_apt_takeover *t, const char *keyring_path, char **ret)
{
    static char *const main_only[] = {(char *)"main", NULL};
    const char *uri = t->uri ? t->uri : KS_APT_XANMOD_URI;
    _cleanup_free_ char *components = NULL;
    char *s;

    if (!valid_takeover(t) || !keyring_path || keyring_path[0] != '/')
        return -EINVAL;
    if (!suite_is_flat(t->suite)) {
        components = ks_strv_join(t->components ? t->components : main_only, " ");
        if (!components)
            return -ENOMEM;
    }
    s = ks_asprintf(KS_APT_SOURCE_MARKER ": the XanMod kernel archive. "
                                         "`kswap rollback --purge` removes it.\n"
                                         "Types: deb\n"
                                         "URIs: %s\n"
                                         "Suites: %s\n"
                                         "%s%s%s"
                                         "Signed-By: %s\n",
                    uri, t->suite, components ? "Components: " : "", strempty(components),
                    components ? "\n" : "", keyring_path);
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

/* The components fit the suite: words, at least one, none for a flat repository. */
static bool valid_components(const ks_apt_takeover *t)
{
    if (!t->components)
        return true;
    if (suite_is_flat(t->suite) || !t->components[0])
        return suite_is_flat(t->suite) && !t->components[0];
    for (char *const *c = t->components; *c; c++)
        if (!valid_word(*c))
            return false;
    return true;
}

static bool valid_word(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (isspace((unsigned char)*s) || !isprint((unsigned char)*s))
            return false;
    return true;
}

static bool valid_takeover(const ks_apt_takeover *t)
{
    return t && valid_word(t->suite) && t->keyring && t->keyring_len > 0 &&
           (!t->uri || valid_word(t->uri)) && valid_components(t);
}

/* Text with lines [first, last] of each range prefixed (or, when uncomment, un-prefixed). */
static int rewrite_lines(const char *text, size_t len, const bool *mark, size_t n_lines,
                         bool uncomment, char **ret, size_t *ret_len)
{
    static const char prefix[] = KS_APT_DISABLED_PREFIX;
    const size_t pn = sizeof(prefix) - 1;
    size_t pos = 0, n, out_n = 0, cap = len + n_lines * pn + 1;
    _cleanup_free_ char *out = malloc(cap);
    const char *l;
    size_t i = 0;

    if (!out)
        return -ENOMEM;
    while (ks_next_line(text, len, &pos, &l, &n)) {
        bool nl = l + n < text + len; /* the line had its '\n' */
        if (i < n_lines && mark[i]) {
            if (uncomment) {
                l += pn;
                n -= pn;
            } else {
                memcpy(out + out_n, prefix, pn);
                out_n += pn;
            }
        }
        memcpy(out + out_n, l, n);
        out_n += n;
        if (nl)
            out[out_n++] = '\n';
        i++;
    }
    out[out_n] = '\0';
    *ret_len = out_n;
    *ret = TAKE_PTR(out);
    return 0;
}

static size_t count_lines(const char *text, size_t len)
{
    size_t pos = 0, n, c = 0;
    const char *l;
    while (ks_next_line(text, len, &pos, &l, &n))
        c++;
    return c;
}

static char *disabled_name(const char *path)
{
    return ks_asprintf("%s" KS_APT_DISABLED_SUFFIX, path);
}

/* Plans the neutralisation of the enabled sources of the archive in one file. */
static int plan_neutralise(const ks_root *root, const ks_apt_takeover *t, const source_file *sf,
                           ks_transaction *l)
{
    _cleanup_free_ char *text = NULL, *target = NULL, *out = NULL, *what = NULL;
    _cleanup_free_ bool *mark = NULL;
    _cleanup_apt_sources_ ks_apt_sources s = {0};
    size_t len, out_len = 0, n_lines, hits = 0, others = 0;
    ks_file_change c = {0};
    int r;

    r = ks_root_read_file(root, sf->path, SOURCE_FILE_MAX, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    r = apt_parse_text(text, len, sf->path, sf->format, &s);
    if (r < 0)
        return r;
    n_lines = count_lines(text, len);
    mark = calloc(n_lines + 1, sizeof(bool));
    if (!mark)
        return -ENOMEM;
    for (size_t i = 0; i < s.n; i++) {
        if (!ks_apt_source_is_archive(&s.v[i], t->archive_uris)) {
            others++;
            continue;
        }
        if (!s.v[i].enabled) {
            others++; /* apt skips it already: leave it as the admin wrote it */
            continue;
        }
        hits++;
        for (unsigned ln = s.v[i].line_first; ln <= s.v[i].line_last && ln <= n_lines; ln++)
            mark[ln - 1] = true;
    }
    others += s.n_bad;
    ks_apt_sources_done(&s);
    if (hits == 0)
        return 0;

    target = disabled_name(sf->path);
    if (!target)
        return -ENOMEM;
    /* The main sources.list is never renamed: apt and people expect it to be there. */
    if (others == 0 && !streq(sf->path, SOURCES_LIST) && !ks_root_exists(root, target)) {
        c.kind = KS_FILE_CHANGE_RENAME;
        c.path = strdup(sf->path);
        c.new_path = TAKE_PTR(target);
        c.what = ks_asprintf("disable %s (it holds only the archive's sources) by renaming it "
                             "to %s",
                             sf->path, c.new_path);
        if (!c.path || !c.what) {
            ks_file_change_done(&c);
            return -ENOMEM;
        }
        r = ks_transaction_add(l, &c);
        ks_file_change_done(&c);
        return r;
    }
    r = rewrite_lines(text, len, mark, n_lines, false, &out, &out_len);
    if (r < 0)
        return r;
    what = ks_asprintf("comment out %zu %s of the archive in %s", hits,
                       hits == 1 ? "entry" : "entries", sf->path);
    if (!what)
        return -ENOMEM;
    {
        struct stat st;
        mode_t mode = ks_root_stat(root, sf->path, &st) == 0 ? st.st_mode & 07777 : 0644;
        return plan_write(root, l, sf->path, out, out_len, mode, what);
    }
}

int ks_aptsource_plan(const ks_root *root, const ks_apt_takeover *t, ks_transaction *ret)
{
    _cleanup_free_ char *src = NULL;
    _cleanup_transaction_ ks_transaction l = {0};
    source_file *files = NULL;
    size_t n = 0;
    int r;

    if (!valid_takeover(t))
        return -EINVAL;
    r = ks_aptsource_text(t, "/" KS_APT_KEYRING_PATH, &src);
    if (r < 0)
        return r;

    /* Our own file may be rewritten only when it holds nothing but the archive. */
    {
        _cleanup_free_ char *text = NULL;
        _cleanup_apt_sources_ ks_apt_sources s = {0};
        size_t len;

        r = ks_root_read_file(root, KS_APT_SOURCE_PATH, SOURCE_FILE_MAX, &text, &len);
        if (r >= 0) {
            r = ks_aptsource_parse_deb822(text, len, KS_APT_SOURCE_PATH, &s);
            for (size_t i = 0; r >= 0 && i < s.n; i++)
                if (!ks_apt_source_is_archive(&s.v[i], t->archive_uris))
                    r = -EEXIST;
        } else if (r == -ENOENT)
            r = 0;
        if (r < 0)
            return r;
    }

    r = plan_write(root, &l, KS_APT_KEYRING_PATH, t->keyring, t->keyring_len, 0644,
                   "write the archive keyring " KS_APT_KEYRING_PATH);
    if (r >= 0)
        r = apt_list_source_files(root, &files, &n);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (!streq(files[i].path, KS_APT_SOURCE_PATH))
            r = plan_neutralise(root, t, &files[i], &l);
    apt_source_files_free(files, n);
    if (r >= 0)
        r = plan_write(root, &l, KS_APT_SOURCE_PATH, src, strlen(src), 0644,
                       "write the deb822 source " KS_APT_SOURCE_PATH);
    if (r < 0)
        return r;
    *ret = TAKE_STRUCT(l);
    return 0;
}

/* Whether a Signed-By value names the keyring kswap writes. */
static bool signed_by_names_keyring(const char *v)
{
    _cleanup_strv_free_ char **w = NULL;
    if (!v || ks_strv_split(v, ", \t\r\n", &w) < 0)
        return false;
    for (char **p = w; p && *p; p++)
        if (streq(*p, "/" KS_APT_KEYRING_PATH))
            return true;
    return false;
}

int ks_aptsource_plan_remove(const ks_root *root, ks_transaction *ret)
{
    _cleanup_strv_free_ char **names = NULL;
    _cleanup_transaction_ ks_transaction l = {0};
    source_file *files = NULL;
    size_t n = 0;
    bool keyring_used = false;
    int r;

    /* 1. The source kswap wrote, recognised by its first line. */
    {
        _cleanup_free_ char *text = NULL;
        size_t len;
        r = ks_root_read_file(root, KS_APT_SOURCE_PATH, SOURCE_FILE_MAX, &text, &len);
        if (r >= 0 && ks_startswith(text, KS_APT_SOURCE_MARKER)) {
            ks_file_change c = {.kind = KS_FILE_CHANGE_REMOVE};
            c.path = strdup(KS_APT_SOURCE_PATH);
            c.what = strdup("remove the deb822 source " KS_APT_SOURCE_PATH);
            r = c.path && c.what ? ks_file_change_keep_old(root, &c, SOURCE_FILE_MAX) : -ENOMEM;
            if (r >= 0)
                r = ks_transaction_add(&l, &c);
            ks_file_change_done(&c);
        } else if (r >= 0 || r == -ENOENT)
            r = 0;
    }

    /* 2. Files kswap renamed, unless someone put a file of that name back meanwhile. */
    if (r >= 0) {
        r = ks_root_list_dir(root, SOURCES_DIR, &names);
        if (r == -ENOENT || r == -ENOTDIR)
            r = 0;
    }
    for (char **nm = names; r >= 0 && nm && *nm; nm++) {
        _cleanup_free_ char *from = NULL, *to = NULL, *text = NULL;
        ks_file_change c = {.kind = KS_FILE_CHANGE_RENAME};
        ks_apt_format f;
        size_t len;

        if (!ks_endswith(*nm, KS_APT_DISABLED_SUFFIX))
            continue;
        from = ks_asprintf("%s/%s", SOURCES_DIR, *nm);
        to = from ? strndup(from, strlen(from) - strlen(KS_APT_DISABLED_SUFFIX)) : NULL;
        if (!from || !to) {
            r = -ENOMEM;
            break;
        }
        if (!apt_source_part_name(to + strlen(SOURCES_DIR) + 1, &f) || ks_root_exists(root, to))
            continue;
        /* What apt will read again decides whether the keyring is still needed. */
        if (ks_root_read_file(root, from, SOURCE_FILE_MAX, &text, &len) >= 0) {
            ks_apt_sources s = {0};
            if (apt_parse_text(text, len, to, f, &s) >= 0)
                for (size_t i = 0; i < s.n; i++)
                    if (s.v[i].enabled && signed_by_names_keyring(s.v[i].signed_by))
                        keyring_used = true;
            ks_apt_sources_done(&s);
        }
        c.path = TAKE_PTR(from);
        c.new_path = TAKE_PTR(to);
        c.what = ks_asprintf("enable %s again (rename to %s)", c.path, c.new_path);
        r = c.what ? ks_transaction_add(&l, &c) : -ENOMEM;
        ks_file_change_done(&c);
    }

    /* 3. Lines kswap commented out; and whether anything left names the keyring. */
    if (r >= 0)
        r = apt_list_source_files(root, &files, &n);
    for (size_t i = 0; r >= 0 && i < n; i++) {
        _cleanup_free_ char *text = NULL, *out = NULL, *what = NULL;
        _cleanup_free_ bool *mark = NULL;
        size_t len, out_len, n_lines, pos = 0, ln, hits = 0, m;
        const char *line;
        ks_apt_sources s = {0};
        bool removed =
            l.n > 0 && streq(l.v[0].path, files[i].path) && l.v[0].kind == KS_FILE_CHANGE_REMOVE;

        if (removed)
            continue;
        r = ks_root_read_file(root, files[i].path, SOURCE_FILE_MAX, &text, &len);
        if (r == -ENOENT) {
            r = 0;
            continue;
        }
        if (r < 0)
            break;
        n_lines = count_lines(text, len);
        mark = calloc(n_lines + 1, sizeof(bool));
        if (!mark) {
            r = -ENOMEM;
            break;
        }
        for (ln = 0; ks_next_line(text, len, &pos, &line, &m); ln++)
            if (m >= strlen(KS_APT_DISABLED_PREFIX) &&
                memcmp(line, KS_APT_DISABLED_PREFIX, strlen(KS_APT_DISABLED_PREFIX)) == 0) {
                mark[ln] = true;
                hits++;
            }
        if (hits > 0)
            r = rewrite_lines(text, len, mark, n_lines, true, &out, &out_len);
        else {
            out = TAKE_PTR(text);
            out_len = len;
        }
        if (r >= 0)
            r = apt_parse_text(out, out_len, files[i].path, files[i].format, &s);
        for (size_t j = 0; r >= 0 && j < s.n; j++)
            if (s.v[j].enabled && signed_by_names_keyring(s.v[j].signed_by))
                keyring_used = true;
        ks_apt_sources_done(&s);
        if (r < 0 || hits == 0)
            continue;
        what = ks_asprintf("enable %zu line%s disabled by kswap in %s again", hits,
                           hits == 1 ? "" : "s", files[i].path);
        if (!what) {
            r = -ENOMEM;
            break;
        }
        {
            struct stat st;
            mode_t mode = ks_root_stat(root, files[i].path, &st) == 0 ? st.st_mode & 07777 : 0644;
            r = plan_write(root, &l, files[i].path, out, out_len, mode, what);
        }
    }
    apt_source_files_free(files, n);

    /* 4. The keyring, last, unless a source left enabled names it. */
    if (r >= 0 && !keyring_used && ks_root_exists(root, KS_APT_KEYRING_PATH)) {
        ks_file_change c = {.kind = KS_FILE_CHANGE_REMOVE};
        c.path = strdup(KS_APT_KEYRING_PATH);
        c.what = strdup("remove the archive keyring " KS_APT_KEYRING_PATH);
        r = c.path && c.what ? ks_file_change_keep_old(root, &c, SOURCE_FILE_MAX) : -ENOMEM;
        if (r >= 0)
            r = ks_transaction_add(&l, &c);
        ks_file_change_done(&c);
    }
    if (r < 0)
        return r;
    *ret = TAKE_STRUCT(l);
    return 0;
}

static int plan_and_apply(const ks_root *root, int plan_k, ks_transaction *l,
                          ks_transaction *ret_changes)
{
    int r;

    if (plan_k < 0)
        return plan_k;
    r = ks_transaction_apply(root, l);
    if (r < 0) {
        ks_transaction_undo(root, l);
        ks_transaction_done(l);
        return r;
    }
    *ret_changes = *l;
    return 0;
}

int ks_aptsource_takeover(const ks_root *root, const ks_apt_takeover *t,
                          ks_transaction *ret_changes)
{
    ks_transaction l = {0};
    return plan_and_apply(root, ks_aptsource_plan(root, t, &l), &l, ret_changes);
}

int ks_aptsource_remove(const ks_root *root, ks_transaction *ret_changes)
{
    ks_transaction l = {0};
    return plan_and_apply(root, ks_aptsource_plan_remove(root, &l), &l, ret_changes);
}
