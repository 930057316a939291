/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>

#include "lib/host/osrelease.h"
#include "lib/basic/util.h"

#define OS_RELEASE_MAX (64 * 1024)

void ks_os_release_done(ks_os_release *o)
{
    if (!o)
        return;
    free(o->id);
    free(o->id_like);
    free(o->name);
    free(o->pretty_name);
    free(o->version_id);
    free(o->version_codename);
    free(o->ubuntu_codename);
    memset(o, 0, sizeof(*o));
}

static bool is_key_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static bool is_key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/*
 * Unquotes a value the way a POSIX shell would for the subset os-release(5) allows:
 * double quotes (\ escapes only $ " \ ` there), single quotes (literal), bare words with
 * backslash escapes, concatenated. Stops at unquoted white space; an unterminated quote
 * takes the rest of the line, which is what a lenient reader does with a hand-edited file.
 */
static char *unquote(const char *s, size_t n)
{
    char *out = malloc(n + 1), *o = out;
    size_t i = 0;

    if (!out)
        return NULL;
    while (i < n) {
        char c = s[i];

        if (c == '"') {
            for (i++; i < n && s[i] != '"'; i++) {
                if (s[i] == '\\' && i + 1 < n && strchr("$\"\\`", s[i + 1]))
                    i++;
                *o++ = s[i];
            }
            i++; /* closing quote, if any */
        } else if (c == '\'') {
            for (i++; i < n && s[i] != '\''; i++)
                *o++ = s[i];
            i++;
        } else if (c == '\\') {
            if (i + 1 < n)
                *o++ = s[i + 1];
            i += 2;
        } else if (isspace((unsigned char)c)) {
            break; /* trailing white space or a comment after the value */
        } else {
            *o++ = c;
            i++;
        }
    }
    *o = '\0';
    return out;
}

static char **field(ks_os_release *o, const char *key, size_t n)
{
    static const struct {
        const char *key;
        size_t offset;
    } table[] = {
        {"ID", offsetof(ks_os_release, id)},
        {"ID_LIKE", offsetof(ks_os_release, id_like)},
        {"NAME", offsetof(ks_os_release, name)},
        {"PRETTY_NAME", offsetof(ks_os_release, pretty_name)},
        {"VERSION_ID", offsetof(ks_os_release, version_id)},
        {"VERSION_CODENAME", offsetof(ks_os_release, version_codename)},
        {"UBUNTU_CODENAME", offsetof(ks_os_release, ubuntu_codename)},
    };

    for (size_t i = 0; i < ARRAY_SIZE(table); i++)
        if (strlen(table[i].key) == n && memcmp(table[i].key, key, n) == 0)
            return (char **)((char *)o + table[i].offset);
    return NULL;
}

int ks_os_release_parse(const char *text, size_t len, ks_os_release *ret)
{
    ks_os_release o = {};
    const char *line;
    size_t pos = 0, n;

    if (!text && len > 0)
        return -EINVAL;
    /* A NUL byte means this is not a text file (or a truncated binary one). */
    if (len > 0 && memchr(text, '\0', len))
        return -EBADMSG;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        const char *key, *eq;
        char **slot, *v;
        size_t i = 0;

        while (i < n && isspace((unsigned char)line[i]))
            i++;
        if (i == n || line[i] == '#')
            continue;
        /* CRLF files from Windows editors: the \r is not part of the value. */
        while (n > i && (line[n - 1] == '\r' || isspace((unsigned char)line[n - 1])))
            n--;
        key = line + i;
        if (!is_key_start(*key))
            continue;
        while (i < n && is_key_char(line[i]))
            i++;
        if (i == n || line[i] != '=')
            continue; /* not an assignment: ignored as os-release(5) readers do */
        eq = line + i;
        slot = field(&o, key, (size_t)(eq - key));
        if (!slot)
            continue;
        v = unquote(eq + 1, n - i - 1);
        if (!v) {
            ks_os_release_done(&o);
            return -ENOMEM;
        }
        free(*slot); /* the last assignment wins, as in a shell */
        *slot = v;
    }

    if (!o.id || !*o.id) {
        ks_os_release_done(&o);
        return -EBADMSG;
    }
    *ret = o;
    return 0;
}

int ks_os_release_load(const ks_root *root, ks_os_release *ret, const char **ret_path)
{
    static const char *const paths[] = {"etc/os-release", "usr/lib/os-release"};
    int r = -ENOENT;

    for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
        _cleanup_free_ char *buf = NULL;
        size_t len;

        r = ks_root_read_file(root, paths[i], OS_RELEASE_MAX, &buf, &len);
        if (r == -ENOENT)
            continue; /* os-release(5): fall back only when the first file is absent */
        if (r < 0)
            return r;
        r = ks_os_release_parse(buf, len, ret);
        if (r < 0)
            return r;
        if (ret_path)
            *ret_path = paths[i];
        return 0;
    }
    return r;
}
