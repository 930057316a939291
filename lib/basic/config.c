/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <ini.h>
#include <strings.h>
#include <sys/stat.h>

#include "lib/basic/config.h"
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
    char *hash;

    if (!v)
        return -ENOMEM;
    /* libinih keeps " # comment" in the value; nothing kswap reads contains " #". */
    hash = strstr(v, " #");
    if (!hash)
        hash = strstr(v, "\t#");
    if (hash)
        *hash = '\0';
    ks_strstrip(v);
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

typedef struct parse_state {
    ks_config *c;
    int error;
} parse_state;

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_state *s = user;
    int r;

    if (!name) /* a section header alone (INI_CALL_HANDLER_ON_NEW_SECTION) */
        return 1;
    if (!*section) {
        s->error = -EBADMSG;
        return 0;
    }
    r = add_value(s->c, section, name, value ? value : "");
    if (r < 0) {
        s->error = r;
        return 0;
    }
    return 1;
}

int ks_config_parse(ks_config *c, const char *text, const char *origin, char **ret_error)
{
    size_t pos = 0, len = strlen(text), llen;
    const char *line;
    parse_state s = {.c = c};
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
    }
    r = ini_parse_string(text, handler, &s);
    if (s.error == -ENOMEM || r == -2)
        return -ENOMEM;
    if (r != 0 || s.error < 0) {
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
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;
    struct stat st;

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    buf = malloc(CONFIG_FILE_MAX + 1);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t k = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (k == 0)
            break;
        len += (size_t)k;
        if (len > CONFIG_FILE_MAX)
            return -EFBIG;
    }
    buf[len] = '\0';
    *ret = TAKE_PTR(buf);
    return 0;
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
                *ret_error = ks_asprintf("cannot read '%s': %s", path, strerror(-r));
            return r;
        }
        r = ks_config_parse(c, text, path, ret_error);
    } else {
        r = ks_root_read_file(root, KS_CONFIG_PATH, CONFIG_FILE_MAX, &text, &len);
        if (r == -ENOENT)
            r = 0;
        else if (r < 0) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read '%s': %s", KS_CONFIG_PATH, strerror(-r));
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
                *ret_error = ks_asprintf("cannot read '%s': %s", p, strerror(-r));
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
    int v, r;

    if (!s) {
        *ret = def;
        return 0;
    }
    r = ks_safe_atoi(s, &v);
    if (r < 0)
        return -EINVAL;
    *ret = v;
    return 0;
}

int ks_config_get_bool(const ks_config *c, const char *section, const char *key, bool def,
                       bool *ret)
{
    static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false",
                                                                                "off"};
    const char *s = ks_config_get_string(c, section, key, NULL);

    if (!s) {
        *ret = def;
        return 0;
    }
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
