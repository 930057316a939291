/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <limits.h>
#include <regex.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "lib/kernel/depmodconf.h"

typedef enum search_type {
    SEARCH_PATH,
    SEARCH_BUILTIN,
    SEARCH_EXTERNAL,
} search_type;

typedef struct search {
    search_type type;
    char *path; /* SEARCH_PATH only */
} search;

typedef struct versioned {
    char *kernel; /* "*" or an extended regular expression */
    char *path;   /* override: "SUBDIR/MODULE"; external: the directory */
} versioned;

/* All lists in the order of the files and lines; depmod prepends each to a linked list, so it
 * ranks and walks them from the end (see the loops below). */
struct ks_depmod_conf {
    search *searches;
    size_t n_searches, cap_searches;
    versioned *overrides;
    size_t n_overrides, cap_overrides;
    versioned *externals;
    size_t n_externals, cap_externals;
    char **excludes;
    size_t n_excludes, cap_excludes;
    size_t n_directives;
    /* What applies to one release (the last one asked about). */
    char *bound;
    bool *override_on;
    char **externals_on; /* depmod's order */
};

static const char *const depmod_dirs[] = {
    "etc/depmod.d", "run/depmod.d", "usr/local/lib/depmod.d", "usr/lib/depmod.d", "lib/depmod.d",
};

ks_depmod_conf *ks_depmod_conf_new(void)
{
    return calloc(1, sizeof(ks_depmod_conf));
}

static void unbind(ks_depmod_conf *c)
{
    free(c->bound);
    c->bound = NULL;
    free(c->override_on);
    c->override_on = NULL;
    c->externals_on = ks_strv_free(c->externals_on);
}

/* Drops what was added after the counts given (a file that failed to parse). */
static void truncate_to(ks_depmod_conf *c, size_t ns, size_t no, size_t ne, size_t nx, size_t nd)
{
    while (c->n_searches > ns)
        free(c->searches[--c->n_searches].path);
    while (c->n_overrides > no) {
        versioned *v = &c->overrides[--c->n_overrides];
        free(v->kernel);
        free(v->path);
    }
    while (c->n_externals > ne) {
        versioned *v = &c->externals[--c->n_externals];
        free(v->kernel);
        free(v->path);
    }
    while (c->n_excludes > nx)
        free(c->excludes[--c->n_excludes]);
    c->n_directives = nd;
}

ks_depmod_conf *ks_depmod_conf_free(ks_depmod_conf *c)
{
    if (!c)
        return NULL;
    truncate_to(c, 0, 0, 0, 0, 0);
    free(c->searches);
    free(c->overrides);
    free(c->externals);
    free(c->excludes);
    unbind(c);
    free(c);
    return NULL;
}

static int add_search(ks_depmod_conf *c, const char *word)
{
    search s = {.type = streq(word, "built-in")   ? SEARCH_BUILTIN
                        : streq(word, "external") ? SEARCH_EXTERNAL
                                                  : SEARCH_PATH};
    if (s.type == SEARCH_PATH && !(s.path = strdup(word)))
        return -ENOMEM;
    if (!GREEDY_REALLOC(c->searches, c->cap_searches, c->n_searches + 1)) {
        free(s.path);
        return -ENOMEM;
    }
    c->searches[c->n_searches++] = s;
    return 0;
}

static int add_versioned(versioned **v, size_t *n, size_t *cap, const char *kernel, char *path)
{
    versioned x = {.kernel = strdup(kernel), .path = path};
    if (!x.kernel || !x.path || !GREEDY_REALLOC(*v, *cap, *n + 1)) {
        free(x.kernel);
        free(x.path);
        return -ENOMEM;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int add_exclude(ks_depmod_conf *c, const char *word)
{
    char *x = strdup(word);
    if (!x || !GREEDY_REALLOC(c->excludes, c->cap_excludes, c->n_excludes + 1)) {
        free(x);
        return -ENOMEM;
    }
    c->excludes[c->n_excludes++] = x;
    return 0;
}

static int too_many(const char *name, unsigned lineno, char **ret_error)
{
    ks_set_first_errorf(ret_error,
                        "%s:%u: more than %d depmod.d directives in all files together: remove "
                        "the excess (depmod needs a handful)",
                        name, lineno, KS_DEPMOD_DIRECTIVES_MAX);
    return -E2BIG;
}

/* glibc's regcomp copies the parse tree for every "+" and "{n,m}", so nested or chained
 * repetitions grow it geometrically: "b++++++++++++++++++++" takes gigabytes. Estimate the
 * copies as the product of every repetition's count (an over-estimate for repetitions side
 * by side) and refuse a pattern whose copies times its length exceed
 * KS_DEPMOD_PATTERN_COST_MAX before compiling it. Returns the copies, or limit + 1. */
static unsigned long pattern_copies(const char *p, unsigned long limit)
{
    unsigned long copies = 1;

    for (; *p; p++) {
        unsigned long count = 1;
        if (*p == '\\') {
            if (!*++p)
                break;
            continue;
        }
        if (*p == '[') { /* a bracket expression repeats nothing; "]" first is a member */
            const char *q = p + 1;
            if (*q == '^')
                q++;
            if (*q == ']')
                q++;
            while (*q && *q != ']')
                q++;
            if (!*q)
                break;
            p = q;
            continue;
        }
        if (*p == '+')
            count = 2;
        else if (*p == '{' && p[1] >= '0' && p[1] <= '9') {
            char *end;
            unsigned long lo = strtoul(p + 1, &end, 10), hi = lo;
            if (*end == ',')
                hi = end[1] == '}' ? lo : strtoul(end + 1, &end, 10);
            /* a bound past the limit (ULONG_MAX from strtoul too) must not wrap to 0 */
            if (lo >= limit || hi >= limit)
                return limit + 1;
            count = (hi > lo ? hi : lo) + 1;
        }
        if (count > limit || copies * count > limit)
            return limit + 1;
        copies *= count;
    }
    return copies;
}

static int check_pattern(const char *name, unsigned lineno, const char *pattern, char **ret_error)
{
    unsigned long limit = KS_DEPMOD_PATTERN_COST_MAX / (strlen(pattern) + 1);

    if (pattern_copies(pattern, limit) <= limit)
        return 0;
    ks_set_first_errorf(
        ret_error,
        "%s:%u: the kernel pattern \"%.60s%s\" nests too many repetitions (\"+\", "
        "\"{n,m}\") to be compiled safely: write it with fewer, for example \"^6.8.\"",
        name, lineno, pattern, strlen(pattern) > 60 ? "..." : "");
    return -EBADMSG;
}

/* One logical line (continuations joined), split on blanks as strtok_r(" \t") does. */
static int parse_line(ks_depmod_conf *c, const char *name, unsigned lineno, char *line,
                      char **ret_error)
{
    char *words[4] = {0}, *save = NULL, *w;
    size_t nw = 0;
    int r;

    if (line[0] == '\0' || line[0] == '#')
        return 0;
    w = strtok_r(line, "\t ", &save);
    if (!w)
        return 0;
    words[nw++] = w;
    while ((w = strtok_r(NULL, "\t ", &save))) {
        if (strlen(w) > KS_DEPMOD_WORD_MAX) {
            ks_set_first_errorf(ret_error,
                                "%s:%u: a word of %zu bytes (depmod.d paths and patterns have "
                                "at most %d): shorten or remove that line",
                                name, lineno, strlen(w), KS_DEPMOD_WORD_MAX);
            return -E2BIG;
        }
        if (streq(words[0], "search") || streq(words[0], "exclude")) {
            /* Every word is one directive. */
            if (++c->n_directives > KS_DEPMOD_DIRECTIVES_MAX)
                return too_many(name, lineno, ret_error);
            r = streq(words[0], "search") ? add_search(c, w) : add_exclude(c, w);
            if (r < 0)
                return r;
            continue;
        }
        if (nw < ARRAY_SIZE(words))
            words[nw] = w;
        nw++;
    }
    if (streq(words[0], "override") || streq(words[0], "external")) {
        bool ov = streq(words[0], "override");
        /* depmod ignores a line without all its words ("ignoring bad line"). */
        if (nw < (ov ? 4u : 3u))
            return 0;
        if (++c->n_directives > KS_DEPMOD_DIRECTIVES_MAX)
            return too_many(name, lineno, ret_error);
        r = check_pattern(name, lineno, ov ? words[2] : words[1], ret_error);
        if (r < 0)
            return r;
        if (ov)
            return add_versioned(&c->overrides, &c->n_overrides, &c->cap_overrides, words[2],
                                 ks_asprintf("%s/%s", words[3], words[1]));
        return add_versioned(&c->externals, &c->n_externals, &c->cap_externals, words[1],
                             strdup(words[2]));
    }
    /* search/exclude were handled word by word; include, make_map_files and anything else
     * depmod ignores too. */
    return 0;
}

int ks_depmod_conf_parse(ks_depmod_conf *c, const char *name, const char *text, size_t len,
                         char **ret_error)
{
    size_t ns = c->n_searches, no = c->n_overrides, ne = c->n_externals, nx = c->n_excludes,
           nd = c->n_directives;
    _cleanup_free_ char *line = malloc(len + 1);
    unsigned lineno = 1, next = 1;
    size_t n = 0;
    int r = 0;

    if (!line)
        return -ENOMEM;
    for (size_t i = 0; i <= len && r >= 0; i++) {
        unsigned char ch = i < len ? (unsigned char)text[i] : '\n';
        if (i < len && (ch == '\0' || (ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f)) {
            ks_set_first_errorf(ret_error,
                                "%s:%u: %s 0x%02x: not a depmod.d text file (binary data, or "
                                "a carriage return): rewrite it as plain text or remove it",
                                name, next, ch == '\0' ? "a NUL byte" : "control character", ch);
            r = -EBADMSG;
            break;
        }
        if (ch == '\\' && i + 1 < len) {
            /* freadline_wrapped: backslash-newline joins lines, a backslash before anything
             * else is dropped and the character kept. */
            i++;
            if (text[i] == '\n') {
                next++;
                continue;
            }
            ch = (unsigned char)text[i];
            if (ch == '\0' || (ch < 0x20 && ch != '\t') || ch == 0x7f) {
                i--;
                continue; /* reported on the next round */
            }
        } else if (ch == '\\') {
            continue; /* a backslash at the end of the file */
        }
        if (ch == '\n') {
            if (i == len && n == 0)
                break;
            line[n] = '\0';
            r = parse_line(c, name, lineno, line, ret_error);
            n = 0;
            lineno = ++next;
            continue;
        }
        line[n++] = (char)ch;
    }
    if (r < 0)
        truncate_to(c, ns, no, ne, nx, nd);
    else
        unbind(c);
    return r;
}

static bool kernel_matches(const char *pattern, const char *release)
{
    regex_t re;
    bool m;

    if (streq(pattern, "*"))
        return true;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return false; /* depmod: no match */
    m = regexec(&re, release, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

static int bind(ks_depmod_conf *c, const char *release)
{
    if (!release)
        release = "";
    if (c->bound && streq(c->bound, release))
        return 0;
    unbind(c);
    c->bound = strdup(release);
    c->override_on = calloc(c->n_overrides + 1, sizeof(bool));
    if (!c->bound || !c->override_on)
        return -ENOMEM;
    for (size_t i = 0; i < c->n_overrides; i++)
        c->override_on[i] = kernel_matches(c->overrides[i].kernel, release);
    for (size_t i = c->n_externals; i-- > 0;)
        if (kernel_matches(c->externals[i].kernel, release)) {
            int r = ks_strv_extend(&c->externals_on, c->externals[i].path);
            if (r < 0)
                return r;
        }
    if (!c->externals_on && !(c->externals_on = calloc(1, sizeof(char *))))
        return -ENOMEM;
    return 0;
}

char *const *ks_depmod_conf_externals(ks_depmod_conf *c, const char *release)
{
    static char *const none[] = {NULL};
    if (!c || bind(c, release) < 0)
        return none;
    return c->externals_on;
}

static const char *const always_excluded[] = {".", "..", "build", "source"};

bool ks_depmod_conf_excludes(const ks_depmod_conf *c, const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(always_excluded); i++)
        if (streq(name, always_excluded[i]))
            return true;
    for (size_t i = 0; c && i < c->n_excludes; i++)
        if (streq(name, c->excludes[i]))
            return true;
    return false;
}

bool ks_depmod_conf_excludes_path(const ks_depmod_conf *c, const char *path)
{
    _cleanup_free_ char *p = strdup(path);
    char *save = NULL;

    if (!p)
        return false;
    for (char *w = strtok_r(p, "/", &save); w; w = strtok_r(NULL, "/", &save))
        if (ks_depmod_conf_excludes(c, w))
            return true;
    return false;
}

/* A module file as depmod sees it: its absolute path on the node cut after the module name
 * (baselen + modnamelen in depmod.c, so ".ko.xz" is never compared), and the part of it
 * below lib/modules/RELEASE, NULL for an external module. */
typedef struct modpath {
    char *abs;
    size_t len;
    const char *rel;
    size_t rellen;
} modpath;

static int modpath_make(const char *release, const char *file, modpath *ret)
{
    _cleanup_free_ char *dir = ks_asprintf("/lib/modules/%s", release ? release : "");
    const char *base;
    size_t dlen;

    if (!dir)
        return -ENOMEM;
    ret->abs = file[0] == '/' ? strdup(file) : ks_asprintf("%s/%s", dir, file);
    if (!ret->abs)
        return -ENOMEM;
    base = strrchr(ret->abs, '/') + 1;
    ret->len = (size_t)(base - ret->abs) + strcspn(base, ".");
    dlen = strlen(dir);
    ret->rel = NULL;
    ret->rellen = 0;
    if (strncmp(ret->abs, dir, dlen) == 0 && ret->len > dlen + 1) {
        ret->rel = ret->abs + dlen + 1;
        ret->rellen = ret->len - dlen - 1;
    }
    return 0;
}

static bool starts_with_dir(const char *path, size_t len, const char *prefix)
{
    size_t plen = strlen(prefix);
    return len > plen && path[plen] == '/' && memcmp(path, prefix, plen) == 0;
}

static bool in_search_path(const modpath *m, const search *se)
{
    size_t sl = strlen(se->path);
    return m->rel && m->rellen > sl && m->rel[sl] == '/' && memcmp(se->path, m->rel, sl) == 0;
}

static bool is_override(const ks_depmod_conf *c, const modpath *m, size_t i)
{
    const char *p = c->overrides[i].path;
    return c->override_on[i] && m->rel && m->rellen == strlen(p) &&
           memcmp(p, m->rel, m->rellen) == 0;
}

/* The default when no file has a search line: depmod adds "updates" at load. */
static const search default_search = {.type = SEARCH_PATH, .path = (char *)"updates"};

bool ks_depmod_conf_keeps_old(ks_depmod_conf *c, const char *release, const char *old,
                              const char *new)
{
    modpath o = {0}, n = {0};
    const search *list = &default_search;
    size_t nsearch = 1;
    int i = 0, bprio = -1, oldprio = -1, newprio = -1;
    bool keep = true;

    if (modpath_make(release, old, &o) < 0 || modpath_make(release, new, &n) < 0 ||
        (c && bind(c, release) < 0))
        goto out; /* out of memory: the first one found stays */
    if (c && c->n_searches) {
        list = c->searches;
        nsearch = c->n_searches;
    }
    /* depmod_module_is_higher_priority(), line by line: overrides (last one first) ... */
    for (size_t k = c ? c->n_overrides : 0; k-- > 0;) {
        if (is_override(c, &n, k)) {
            keep = false;
            goto out;
        }
        if (is_override(c, &o, k))
            goto out;
    }
    /* ... then the search list from its last word to its first, so that the first word of
     * the first file ends with the highest number. The else-if chain is depmod's: when both
     * files fall in one search path only the new one gets its number. */
    for (size_t k = nsearch; k-- > 0; i++) {
        const search *se = &list[k];
        if (se->type == SEARCH_BUILTIN) {
            bprio = i;
        } else if (se->type == SEARCH_EXTERNAL) {
            for (char *const *e = c->externals_on; e && *e; e++, i++) {
                if (starts_with_dir(n.abs, n.len, *e))
                    newprio = i;
                if (starts_with_dir(o.abs, o.len, *e))
                    oldprio = i;
            }
        } else if (in_search_path(&n, se)) {
            newprio = i;
        } else if (in_search_path(&o, se)) {
            oldprio = i;
        }
    }
    if (newprio < 0)
        newprio = bprio;
    if (oldprio < 0)
        oldprio = bprio;
    keep = newprio <= oldprio;
out:
    free(o.abs);
    free(n.abs);
    return keep;
}

int ks_depmod_conf_rank(ks_depmod_conf *c, const char *release, const char *file)
{
    modpath m = {0};
    const search *list = &default_search;
    size_t nsearch = 1;
    int i = 0, bprio = -1, prio = -1;

    if (modpath_make(release, file, &m) < 0 || (c && bind(c, release) < 0)) {
        free(m.abs);
        return -1;
    }
    if (c && c->n_searches) {
        list = c->searches;
        nsearch = c->n_searches;
    }
    for (size_t k = c ? c->n_overrides : 0; k-- > 0;)
        if (is_override(c, &m, k)) {
            free(m.abs);
            return INT_MAX;
        }
    for (size_t k = nsearch; k-- > 0; i++) {
        const search *se = &list[k];
        if (se->type == SEARCH_BUILTIN)
            bprio = i;
        else if (se->type == SEARCH_EXTERNAL)
            for (char *const *e = c->externals_on; e && *e; e++, i++) {
                if (starts_with_dir(m.abs, m.len, *e))
                    prio = i;
            }
        else if (in_search_path(&m, se))
            prio = i;
    }
    free(m.abs);
    return prio < 0 ? bprio : prio;
}

char *ks_depmod_conf_describe(ks_depmod_conf *c, const char *release)
{
    _cleanup_strv_free_ char **w = NULL;
    const search *list = &default_search;
    size_t nsearch = 1;
    int r = 0;

    if (c && bind(c, release) < 0)
        return NULL;
    if (c && c->n_searches) {
        list = c->searches;
        nsearch = c->n_searches;
    }
    /* Best first: depmod's highest number is the first word. */
    for (size_t k = 0; k < nsearch && r >= 0; k++)
        r = ks_strv_extend(&w, list[k].type == SEARCH_BUILTIN    ? "built-in"
                               : list[k].type == SEARCH_EXTERNAL ? "external"
                                                                 : list[k].path);
    for (size_t k = 0; c && k < c->n_excludes && r >= 0; k++)
        r = ks_strv_push(&w, ks_asprintf("exclude:%s", c->excludes[k]));
    for (size_t k = c ? c->n_overrides : 0; k-- > 0 && r >= 0;)
        if (c->override_on[k])
            r = ks_strv_push(&w, ks_asprintf("override:%s", c->overrides[k].path));
    for (char *const *e = c ? c->externals_on : NULL; e && *e && r >= 0; e++)
        r = ks_strv_push(&w, ks_asprintf("external:%s", *e));
    if (r < 0)
        return NULL;
    return w ? ks_strv_join(w, " ") : strdup("");
}

/* One candidate file: its name and the directory it comes from. */
typedef struct conf_file {
    char *name;
    const char *dir;
} conf_file;

static int conf_file_cmp(const void *a, const void *b)
{
    return strcmp(((const conf_file *)a)->name, ((const conf_file *)b)->name);
}

static bool is_dev_null(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

static int read_one(const ks_root *root, ks_depmod_conf *c, const char *path, char **ret_error)
{
    _cleanup_free_ char *text = NULL, *link = NULL, *shown = ks_asprintf("/%s", path);
    struct stat st;
    size_t len;
    int r;

    if (!shown)
        return -ENOMEM;
    /* A name linked to /dev/null is masked (empty); in a root without /dev it still is. */
    if (ks_root_readlink(root, path, &link) == 0 && streq(link, "/dev/null"))
        return 0;
    if (ks_root_stat(root, path, &st) == 0 && is_dev_null(&st))
        return 0;
    r = ks_root_read_file(root, path, KS_DEPMOD_FILE_MAX, &text, &len);
    if (r == -ENOENT)
        return 0; /* a dangling link: depmod says so and goes on */
    if (r == -EFBIG) {
        ks_set_first_errorf(ret_error,
                            "'%s' is larger than %d KiB, too large for a depmod.d file: "
                            "shorten it or remove it",
                            shown, KS_DEPMOD_FILE_MAX / 1024);
        return r;
    }
    if (r < 0) {
        ks_set_first_errorf(ret_error,
                            "cannot read '%s': %s (depmod reads every *.conf there: remove it "
                            "or make it a text file)",
                            shown, ks_strerror(r));
        return r;
    }
    return ks_depmod_conf_parse(c, shown, text, len, ret_error);
}

int ks_depmod_conf_load(const ks_root *root, ks_depmod_conf **ret, char **ret_error)
{
    _cleanup_depmod_conf_ ks_depmod_conf *c = ks_depmod_conf_new();
    conf_file *files = NULL;
    size_t n = 0, cap = 0;
    int r = 0;

    if (!c)
        return -ENOMEM;
    for (size_t d = 0; d < ARRAY_SIZE(depmod_dirs) && r >= 0; d++) {
        _cleanup_strv_free_ char **names = NULL;
        struct stat st;

        if (ks_root_stat(root, depmod_dirs[d], &st) < 0)
            continue;
        if (!S_ISDIR(st.st_mode)) {
            /* depmod takes a configuration path that is no directory as one file. */
            r = ks_strv_extend(&names, "");
        } else {
            r = ks_root_list_dir(root, depmod_dirs[d], &names);
            if (r < 0) {
                ks_set_first_errorf(ret_error, "cannot list '/%s': %s", depmod_dirs[d],
                                    strerror(-r));
                break;
            }
        }
        for (char **nm = names; r >= 0 && nm && *nm; nm++) {
            _cleanup_free_ char *p = NULL;
            bool dup = false;

            if (**nm) {
                if ((*nm)[0] == '.' || strlen(*nm) < 6 || !ks_endswith(*nm, ".conf"))
                    continue;
                p = ks_asprintf("%s/%s", depmod_dirs[d], *nm);
                if (!p) {
                    r = -ENOMEM;
                    break;
                }
                if (ks_root_stat(root, p, &st) == 0 && S_ISDIR(st.st_mode))
                    continue; /* depmod: "directories inside directories are not supported" */
            }
            for (size_t k = 0; k < n && !dup; k++)
                dup = streq(files[k].name, **nm ? *nm : "depmod.d");
            if (dup)
                continue; /* an earlier directory has that name */
            if (n >= KS_DEPMOD_FILES_MAX) {
                ks_set_first_errorf(ret_error,
                                    "more than %d depmod.d files (at '/%s/%s'): remove what "
                                    "does not belong there",
                                    KS_DEPMOD_FILES_MAX, depmod_dirs[d], *nm);
                r = -E2BIG;
                break;
            }
            if (!GREEDY_REALLOC(files, cap, n + 1)) {
                r = -ENOMEM;
                break;
            }
            files[n].name = strdup(**nm ? *nm : "depmod.d");
            files[n].dir = depmod_dirs[d];
            if (!files[n].name) {
                r = -ENOMEM;
                break;
            }
            n++;
        }
    }
    if (r >= 0 && n > 1) /* qsort(NULL, 0) is undefined: no file at all */
        qsort(files, n, sizeof(*files), conf_file_cmp);
    for (size_t k = 0; k < n && r >= 0; k++) {
        _cleanup_free_ char *p = NULL;
        struct stat st;
        if (ks_root_stat(root, files[k].dir, &st) == 0 && !S_ISDIR(st.st_mode))
            p = strdup(files[k].dir);
        else
            p = ks_asprintf("%s/%s", files[k].dir, files[k].name);
        if (!p) {
            r = -ENOMEM;
            break;
        }
        r = read_one(root, c, p, ret_error);
    }
    for (size_t k = 0; k < n; k++)
        free(files[k].name);
    free(files);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(c);
    return 0;
}
