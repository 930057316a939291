/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <ini.h>
#include <strings.h>
#include <sys/stat.h>

#include "lib/basic/config.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"

#define INI_LINE_MAX 200 /* libinih's INI_MAX_LINE: longer lines are split silently */
#define CONFIG_FILE_MAX (1024 * 1024)

typedef struct entry {
    char *section, *key;
    char **values;
} entry;

struct ks_config {
    entry *v;
    size_t n, cap;
};

ks_config *ks_config_new(void)
{
    return calloc(1, sizeof(ks_config));
}

ks_config *ks_config_free(ks_config *c)
{
    if (!c)
        return NULL;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].section);
        free(c->v[i].key);
        ks_strv_free(c->v[i].values);
    }
    free(c->v);
    free(c);
    return NULL;
}

static entry *find(const ks_config *c, const char *section, const char *key)
{
    for (size_t i = 0; c && i < c->n; i++)
        if (strcasecmp(c->v[i].section, section) == 0 && strcasecmp(c->v[i].key, key) == 0)
            return &c->v[i];
    return NULL;
}

static int add_value(ks_config *c, const char *section, const char *key, const char *value)
{
    _cleanup_free_ char *v = strdup(value);
    entry *e = find(c, section, key);

    if (!v)
        return -ENOMEM;
    if (!e) {
        if (c->n == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 8;
            entry *nv = realloc(c->v, cap * sizeof(entry));
            if (!nv)
                return -ENOMEM;
            c->v = nv;
            c->cap = cap;
        }
        e = &c->v[c->n];
        *e = (entry){.section = strdup(section), .key = strdup(key)};
        if (!e->section || !e->key) {
            free(e->section);
            free(e->key);
            return -ENOMEM;
        }
        c->n++;
    }
    if (!*v) {
        /* An empty value resets the list, so a drop-in can replace instead of append. */
        e->values = ks_strv_free(e->values);
        return 0;
    }
    return ks_strv_push(&e->values, TAKE_PTR(v));
}

/*
 * The keys of the layers below the acceptance checks: [verify], [repository], [apply],
 * [metrics]. The [accept] keys belong to the check plug-ins, each with its own (checks/check.h,
 * checks/registry.c), and come in through ks_config_register(). docs/kswap.conf.5.scd
 * documents every key and test/test-conf-doc.py compares the two. A value that does not fit
 * its type is an error at load time naming the file and line, so no command acts on a
 * misread configuration.
 */
bool ks_config_item_name(const char *v)
{
    /* An interface, a module, a unit: a plain name, never a path nor an option. */
    return v[0] != '-' && !strchr(v, '/') && !streq(v, ".") && !streq(v, "..");
}

bool ks_config_item_any(const char *v)
{
    return v[0] != '\0';
}

/* One word of an apt source (a suite or a component): what apt's parser keeps as one. */
static bool item_apt_word(const char *v)
{
    if (!v[0] || v[0] == '-' || v[0] == '#')
        return false;
    for (; *v; v++)
        if (*v <= ' ' || *v == 0x7f || *v == '[' || *v == ']' || *v == '"')
            return false;
    return true;
}

/*
 * A repository URI apt fetches from: http(s)://, file:, copy: or a method in front of them
 * (mirror+http://, tor+https://). One word; apt itself says what it cannot reach.
 */
static bool item_apt_uri(const char *v)
{
    static const char *const schemes[] = {"http://", "https://", "file:/", "copy:/"};
    const char *plus = strchr(v, '+'), *rest = v;

    if (!item_apt_word(v))
        return false;
    /* A method wrapper (mirror+, tor+) in front of a scheme, letters only. */
    if (plus && plus < strchr(v, ':')) {
        for (const char *c = v; c < plus; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
                return false;
        rest = plus + 1;
    }
    for (size_t i = 0; i < ARRAY_SIZE(schemes); i++)
        if (ks_startswith(rest, schemes[i]) && rest[strlen(schemes[i])] != '\0')
            return true;
    return false;
}

static bool item_abs_path(const char *v)
{
    return v[0] == '/';
}

#define LIST KS_CONFIG_LIST
#define UINT KS_CONFIG_UINT

static const ks_config_key base_keys[] = {
    LIST("verify", "modules", ks_config_item_name, KS_VERIFY_DEFAULT_MODULES, KS_CONFIG_HINT_NAME),
    UINT("verify", "bbr_version", 1, 255, 3),
    {.section = "repository", .key = "key", .type = KS_CT_STRING},
    {.section = "repository", .key = "fingerprint", .type = KS_CT_STRING},
    {.section = "repository",
     .key = "uri",
     .type = KS_CT_STRING,
     .def = KS_REPOSITORY_DEFAULT_URI,
     .item_ok = item_apt_uri,
     .hint = "one word: http://, https://, file:/ or copy:/, optionally behind mirror+ or tor+"},
    {.section = "repository",
     .key = "suite",
     .type = KS_CT_STRING,
     .item_ok = item_apt_word,
     .hint = "one word, no spaces or brackets"},
    LIST("repository", "components", item_apt_word, "main", "one word, no brackets"),
    {.section = "apply", .key = "add_panic", .type = KS_CT_BOOL, .def = "yes"},
    UINT("apply", "apt_timeout", 1, 86400, 1800),
    UINT("apply", "update_grub_timeout", 1, 86400, 300),
    UINT("apply", "systemctl_timeout", 1, 86400, 60),
    UINT("apply", "lock_timeout", 1, 86400, 10),
    /* node_exporter's textfile collector (lib/engine/metrics-file.h); empty: off. */
    {.section = "metrics",
     .key = "textfile_dir",
     .type = KS_CT_STRING,
     .item_ok = item_abs_path,
     .def = KS_METRICS_DEFAULT_TEXTFILE_DIR,
     .hint = "an absolute path"},
};

/*
 * Every known key: the table above, then the tables registered from above, in order. Static:
 * a handful of tables of a few dozen keys, set up once before any configuration is read.
 */
#define KEYS_MAX 128
#define TABLES_MAX 8
static ks_config_key keys[KEYS_MAX];
static size_t n_keys;
static const ks_config_key *tables[TABLES_MAX];
static size_t n_tables;

static void keys_init(void)
{
    if (n_keys)
        return;
    memcpy(keys, base_keys, sizeof(base_keys));
    n_keys = ARRAY_SIZE(base_keys);
}

const ks_config_key *ks_config_key_find(const char *section, const char *key)
{
    keys_init();
    for (size_t i = 0; i < n_keys; i++)
        if (strcasecmp(keys[i].section, section) == 0 && strcasecmp(keys[i].key, key) == 0)
            return &keys[i];
    return NULL;
}

int ks_config_register(const ks_config_key *table, size_t n)
{
    keys_init();
    for (size_t i = 0; i < n_tables; i++)
        if (tables[i] == table)
            return 0;
    if (n_tables == TABLES_MAX || n_keys + n > KEYS_MAX)
        return -E2BIG;
    for (size_t i = 0; i < n; i++)
        if (!table[i].section || !table[i].key ||
            ks_config_key_find(table[i].section, table[i].key))
            return -EEXIST;
    memcpy(keys + n_keys, table, n * sizeof(*table));
    n_keys += n;
    tables[n_tables++] = table;
    return 0;
}

const ks_config_key *ks_config_keys(size_t *ret_n)
{
    keys_init();
    *ret_n = n_keys;
    return keys;
}

static bool section_known(const char *section)
{
    keys_init();
    for (size_t i = 0; i < n_keys; i++)
        if (strcasecmp(keys[i].section, section) == 0)
            return true;
    return false;
}

/* Levenshtein distance, case-insensitive, for "did you mean"; short names only. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), d[64];

    if (la > 62 || lb > 62)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        d[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = d[0];
        d[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = d[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = prev + cost;
            if (d[j] + 1 < best)
                best = d[j] + 1;
            if (d[j - 1] + 1 < best)
                best = d[j - 1] + 1;
            d[j] = best;
            prev = cur;
        }
    }
    return d[lb];
}

/* The nearest known key of section (or the nearest section when key is NULL), or NULL. */
static const char *nearest(const char *section, const char *key)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;

    for (size_t i = 0; i < n_keys; i++) {
        const char *cand = key ? keys[i].key : keys[i].section;
        size_t d;

        if (key && strcasecmp(keys[i].section, section) != 0)
            continue;
        d = distance(key ? key : section, cand);
        if (d < best_d) {
            best_d = d;
            best = cand;
        }
    }
    /* A guess only when it is close: at most a third of the name, and at least one edit. */
    if (best && best_d <= 1 + strlen(best) / 3)
        return best;
    return NULL;
}

int ks_config_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
    unsigned long long v;

    /* Decimal digits only: no sign, no blanks, no 0x, no suffix; 64-bit overflow is ERANGE. */
    if (!s || !*s)
        return -EINVAL;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -EINVAL;
    if (ks_safe_atou64(s, &v) < 0)
        return -ERANGE;
    if (v < min || v > max)
        return -ERANGE;
    *ret = v;
    return 0;
}

int ks_config_parse_bool(const char *s, bool *ret)
{
    static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false",
                                                                                "off"};
    for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *ret = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *ret = false;
            return 0;
        }
    }
    return -EINVAL;
}

/* NULL when value fits k, else why not (allocated). */
static char *value_problem(const ks_config_key *k, const char *value)
{
    _cleanup_strv_free_ char **words = NULL;
    uint64_t u;
    bool b;
    int r;

    switch (k->type) {
    case KS_CT_STRING:
        if (k->item_ok && !k->item_ok(value))
            return ks_asprintf("%s = %s is not valid%s%s%s", k->key, value, k->hint ? " (" : "",
                               strempty(k->hint), k->hint ? ")" : "");
        return NULL;
    case KS_CT_LIST:
        if (ks_strv_split(value, " \t,", &words) < 0)
            return NULL;
        for (char **w = words; w && *w; w++)
            if (k->item_ok && !k->item_ok(*w))
                return ks_asprintf("'%s' is not a valid item of %s%s%s%s", *w, k->key,
                                   k->hint ? " (" : "", strempty(k->hint), k->hint ? ")" : "");
        return NULL;
    case KS_CT_UINT:
        r = ks_config_parse_u64(value, k->min, k->max, &u);
        if (r == -ERANGE)
            return ks_asprintf("%s = %s is out of range (%" PRIu64 " to %" PRIu64 ")", k->key,
                               value, k->min, k->max);
        if (r < 0)
            return ks_asprintf("%s = %s is not a number (decimal digits, %" PRIu64 " to %" PRIu64
                               ")",
                               k->key, value, k->min, k->max);
        return NULL;
    case KS_CT_BOOL:
        if (ks_config_parse_bool(value, &b) < 0)
            return ks_asprintf("%s = %s is not a boolean (yes/no, true/false, on/off, 1/0)", k->key,
                               value);
        return NULL;
    case KS_CT_ENUM:
        for (const char *const *e = k->enum_values; *e; e++)
            if (streq(value, *e))
                return NULL;
        {
            const char *best = NULL;
            size_t bd = SIZE_MAX;
            for (const char *const *e = k->enum_values; *e; e++) {
                size_t d = distance(value, *e);
                if (d < bd) {
                    bd = d;
                    best = *e;
                }
            }
            _cleanup_free_ char *list = NULL;
            bool close = best && bd <= 1 + strlen(best) / 3;
            for (const char *const *e = k->enum_values; *e; e++) {
                char *nl = ks_asprintf("%s%s%s", list ? list : "", list ? ", " : "", *e);
                if (!nl)
                    return NULL;
                free(list);
                list = nl;
            }
            return ks_asprintf("%s = %s is not one of %s%s%s%s", k->key, value, strempty(list),
                               close ? "; did you mean '" : "", close ? best : "",
                               close ? "'?" : "");
        }
    }
    return NULL;
}

typedef struct parse_state {
    ks_config *c;
    const char *origin;
    const char *text;
    size_t pos, len;
    unsigned lineno;
    int error;
    char *message;
} parse_state;

/* libinih's reader: one line at a time, so that the handler knows its line. */
static char *reader(char *str, int num, void *stream)
{
    parse_state *s = stream;
    size_t n = 0;

    if (s->pos >= s->len || num < 2)
        return NULL;
    while (s->pos < s->len && n < (size_t)num - 1) {
        char ch = s->text[s->pos++];
        str[n++] = ch;
        if (ch == '\n')
            break;
    }
    str[n] = '\0';
    s->lineno++;
    return str;
}

static int fail(parse_state *s, int error, char *message)
{
    if (!message)
        error = -ENOMEM;
    s->error = error;
    free(s->message);
    s->message = message;
    return 0;
}

static char *unknown_section(const parse_state *s, const char *section)
{
    const char *near = nearest(section, NULL);
    return ks_asprintf("%s:%u: unknown section [%s]%s%s%s", s->origin, s->lineno, section,
                       near ? "; did you mean [" : "", near ? near : "", near ? "]?" : "");
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_state *s = user;
    const ks_config_key *k;
    _cleanup_free_ char *v = NULL;
    char *hash, *why;
    int r;

    if (s->error < 0)
        return 0;
    if (!name) /* a section header alone (INI_CALL_HANDLER_ON_NEW_SECTION) */
        return section && *section && !section_known(section)
                   ? fail(s, -EBADMSG, unknown_section(s, section))
                   : 1;
    if (!*section)
        return fail(s, -EBADMSG,
                    ks_asprintf("%s:%u: key '%s' outside a [section]", s->origin, s->lineno, name));
    if (!section_known(section))
        return fail(s, -EBADMSG, unknown_section(s, section));
    k = ks_config_key_find(section, name);
    if (!k) {
        const char *near = nearest(section, name), *other = NULL;
        for (size_t i = 0; !near && i < n_keys; i++)
            if (strcasecmp(keys[i].key, name) == 0)
                other = keys[i].section;
        if (other)
            return fail(s, -EBADMSG,
                        ks_asprintf("%s:%u: unknown key '%s' in [%s]; it belongs in [%s]",
                                    s->origin, s->lineno, name, section, other));
        return fail(s, -EBADMSG,
                    ks_asprintf("%s:%u: unknown key '%s' in [%s]%s%s%s", s->origin, s->lineno, name,
                                section, near ? "; did you mean '" : "", near ? near : "",
                                near ? "'?" : ""));
    }
    v = strdup(value ? value : "");
    if (!v)
        return fail(s, -ENOMEM, NULL);
    /* libinih keeps " # comment" in the value; nothing kswap reads contains " #". */
    hash = strstr(v, " #");
    if (!hash)
        hash = strstr(v, "\t#");
    if (hash)
        *hash = '\0';
    ks_strstrip(v);
    if (*v) {
        why = value_problem(k, v);
        if (why) {
            char *m = ks_asprintf("%s:%u: [%s] %s", s->origin, s->lineno, k->section, why);
            free(why);
            return fail(s, -EBADMSG, m);
        }
    }
    r = add_value(s->c, k->section, k->key, v);
    if (r < 0)
        return fail(s, r, ks_asprintf("%s:%u: %s", s->origin, s->lineno, strerror(-r)));
    return 1;
}

int ks_config_parse(ks_config *c, const char *text, const char *origin, char **ret_error)
{
    size_t pos = 0, len = strlen(text), llen;
    const char *line;
    parse_state s = {.c = c, .origin = origin, .text = text, .len = len};
    unsigned lineno = 0;
    int r;

    while (ks_next_line(text, len, &pos, &line, &llen)) {
        lineno++;
        if (llen >= INI_LINE_MAX - 1) {
            if (ret_error)
                *ret_error = ks_asprintf("%s:%u: line longer than %d bytes", origin, lineno,
                                         INI_LINE_MAX - 2);
            return -EBADMSG;
        }
        /* Section headers here: libinih tells the handler about keys only. */
        while (llen && (*line == ' ' || *line == '\t')) {
            line++;
            llen--;
        }
        if (llen && *line == '[') {
            const char *close = memchr(line, ']', llen);
            _cleanup_free_ char *name =
                close ? strndup(line + 1, (size_t)(close - line - 1)) : NULL;
            if (name && *name && !section_known(name)) {
                s.lineno = lineno;
                (void)fail(&s, -EBADMSG, unknown_section(&s, name));
                if (ret_error)
                    *ret_error = TAKE_PTR(s.message);
                free(s.message);
                return s.error;
            }
        }
    }
    r = ini_parse_stream(reader, &s, handler, &s);
    if (s.error == -ENOMEM || r == -2) {
        free(s.message);
        return -ENOMEM;
    }
    if (s.error < 0) {
        if (ret_error)
            *ret_error = TAKE_PTR(s.message);
        free(s.message);
        return s.error;
    }
    if (r != 0) {
        if (ret_error)
            *ret_error = r > 0 ? ks_asprintf("%s:%d: cannot parse line (a key outside a "
                                             "[section], or no '=')",
                                             origin, r)
                               : ks_asprintf("%s: cannot parse", origin);
        return -EBADMSG;
    }
    return 0;
}

static int read_host_file(const char *path, char **ret)
{
    /* Never blocks on a FIFO or a device given as --config (lib/basic/fileio.h). */
    _cleanup_close_ int fd = ks_open_regular(path);

    if (fd < 0)
        return fd;
    return ks_read_fd(fd, CONFIG_FILE_MAX, ret, NULL);
}

int ks_config_load(const ks_root *root, const char *path, ks_config **ret, char **ret_error)
{
    _cleanup_config_ ks_config *c = ks_config_new();
    _cleanup_strv_free_ char **names = NULL;
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r;

    if (!c)
        return -ENOMEM;
    if (path) {
        r = read_host_file(path, &text);
        if (r < 0) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read '%s': %s", path, ks_strerror(r));
            return r;
        }
        r = ks_config_parse(c, text, path, ret_error);
    } else {
        r = ks_root_read_file(root, KS_CONFIG_PATH, CONFIG_FILE_MAX, &text, &len);
        if (r == -ENOENT)
            r = 0;
        else if (r < 0) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read '%s': %s", KS_CONFIG_PATH, ks_strerror(r));
            return r;
        } else
            r = ks_config_parse(c, text, KS_CONFIG_PATH, ret_error);
    }
    if (r < 0)
        return r;

    r = ks_root_list_dir(root, KS_CONFIG_DROPIN_DIR, &names);
    if (r < 0 && r != -ENOENT && r != -ENOTDIR) {
        if (ret_error)
            *ret_error = ks_asprintf("cannot list '%s': %s", KS_CONFIG_DROPIN_DIR, strerror(-r));
        return r;
    }
    for (char **n = names; n && *n; n++) {
        _cleanup_free_ char *p = NULL, *t = NULL;
        if (!ks_endswith(*n, ".conf") || (*n)[0] == '.')
            continue;
        p = ks_asprintf("%s/%s", KS_CONFIG_DROPIN_DIR, *n);
        if (!p)
            return -ENOMEM;
        r = ks_root_read_file(root, p, CONFIG_FILE_MAX, &t, &len);
        if (r < 0) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read '%s': %s", p, ks_strerror(r));
            return r;
        }
        r = ks_config_parse(c, t, p, ret_error);
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(c);
    return 0;
}

char *const *ks_config_get_values(const ks_config *c, const char *section, const char *key)
{
    entry *e = find(c, section, key);
    return e ? e->values : NULL;
}

bool ks_config_is_set(const ks_config *c, const char *section, const char *key)
{
    return find(c, section, key);
}

const char *ks_config_get_string(const ks_config *c, const char *section, const char *key,
                                 const char *def)
{
    char *const *v = ks_config_get_values(c, section, key);
    size_t n = ks_strv_length(v);
    return n ? v[n - 1] : def;
}

int ks_config_get_strv(const ks_config *c, const char *section, const char *key, const char *def,
                       char ***ret)
{
    char *const *v = ks_config_get_values(c, section, key);
    _cleanup_strv_free_ char **out = NULL;
    int r;

    if (!v) {
        if (!def) {
            *ret = NULL;
            return 0;
        }
        return ks_strv_split(def, " \t,", ret);
    }
    for (; *v; v++) {
        _cleanup_strv_free_ char **words = NULL;
        r = ks_strv_split(*v, " \t,", &words);
        if (r < 0)
            return r;
        for (char **w = words; w && *w; w++) {
            r = ks_strv_extend(&out, *w);
            if (r < 0)
                return r;
        }
    }
    if (!out) {
        out = calloc(1, sizeof(char *));
        if (!out)
            return -ENOMEM;
    }
    *ret = TAKE_PTR(out);
    return 0;
}

int ks_config_get_int(const ks_config *c, const char *section, const char *key, int def, int *ret)
{
    const char *s = ks_config_get_string(c, section, key, NULL);
    uint64_t v;

    if (!s) {
        *ret = def;
        return 0;
    }
    if (ks_config_parse_u64(s, 0, INT_MAX, &v) < 0)
        return -EINVAL;
    *ret = (int)v;
    return 0;
}

int ks_config_get_u64(const ks_config *c, const char *section, const char *key, uint64_t *ret)
{
    const ks_config_key *k = ks_config_key_find(section, key);
    const char *s;

    if (!k || k->type != KS_CT_UINT)
        return -ENOKEY;
    s = ks_config_get_string(c, section, key, k->def);
    return ks_config_parse_u64(s, k->min, k->max, ret) < 0 ? -EINVAL : 0;
}

int ks_config_get_bool(const ks_config *c, const char *section, const char *key, bool def,
                       bool *ret)
{
    const char *s = ks_config_get_string(c, section, key, NULL);

    if (!s) {
        *ret = def;
        return 0;
    }
    return ks_config_parse_bool(s, ret);
}

int ks_config_verify_modules(const ks_config *c, char ***ret)
{
    return ks_config_get_strv(c, "verify", "modules", KS_VERIFY_DEFAULT_MODULES, ret);
}

int ks_config_verify_bbr_version(const ks_config *c, int *ret)
{
    int v, r = ks_config_get_int(c, "verify", "bbr_version", KS_VERIFY_DEFAULT_BBR_VERSION, &v);
    if (r < 0)
        return r;
    if (v < 1)
        return -EINVAL;
    *ret = v;
    return 0;
}
