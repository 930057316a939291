/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * update-grub (grub-mkconfig) sources etc/default/grub, then every etc/default/grub.d/\*.cfg in
 * glob order, into one shell. kswap understands the plain part of that shell: commands made
 * only of NAME=VALUE words, with '...', "..." and backslash quoting and $NAME / ${NAME}
 * expansion of what was assigned before. Everything else (command substitution, conditionals,
 * other commands) is skipped whole and counted, never guessed at.
 */
#include <assert.h>
#include <ctype.h>

#include "grub/defaults.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"

#define DEFAULTS_MAX (1024u * 1024)
#define VALUE_MAX (64u * 1024)
#define DROPIN_PATH "etc/default/grub.d/90-kswap.cfg"

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static int buf_put(buf *b, const char *s, size_t n)
{
    assert(b);
    assert(s || n == 0);
    if (!GREEDY_REALLOC(b->s, b->cap, b->n + n + 1))
        return -ENOMEM;
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static int buf_putc(buf *b, char c)
{
    return buf_put(b, &c, 1);
}

typedef struct word {
    char *text; /* after quote removal and expansion */
    ssize_t eq; /* index of the assignment '=' in text, -1 when not NAME=... */
    bool unsupported;
} word;

typedef struct parser {
    const char *s;
    size_t n, i;
    const ks_grub_defaults *d;
} parser;

static bool is_name_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static bool is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static bool is_name(const char *s)
{
    if (!s || !is_name_start(*s))
        return false;
    for (s++; *s; s++)
        if (!is_name_char(*s))
            return false;
    return true;
}

static bool ends_word(char c)
{
    return is_blank(c) || c == '\0' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' ||
           c == '>' || c == '(' || c == ')';
}

const char *ks_grub_defaults_get(const ks_grub_defaults *d, const char *key)
{
    if (!d || !key)
        return NULL;
    for (size_t i = 0; i < d->n; i++)
        if (streq(d->keys[i], key))
            return d->values[i];
    return NULL;
}

const char *ks_grub_defaults_file(const ks_grub_defaults *d, const char *key)
{
    if (!d || !key)
        return NULL;
    for (size_t i = 0; i < d->n; i++)
        if (streq(d->keys[i], key))
            return d->files[i];
    return NULL;
}

/* Skips to the end of `...` or $(...), so the command can be skipped whole. */
static void skip_substitution(parser *p, char open)
{
    int depth = 1;

    while (p->i < p->n && depth > 0) {
        char c = p->s[p->i++];
        if (c == '\\' && p->i < p->n)
            p->i++;
        else if (open == '`' && c == '`')
            depth = 0;
        else if (open == '(' && c == '(')
            depth++;
        else if (open == '(' && c == ')')
            depth--;
    }
}

/* $NAME, ${NAME}; anything fancier marks the word unsupported. p->i is after the '$'. */
static int expand(parser *p, buf *b, bool *unsupported)
{
    size_t start;
    const char *v;
    char *name;

    if (p->i >= p->n)
        return buf_putc(b, '$');
    if (p->s[p->i] == '(') {
        p->i++;
        skip_substitution(p, '(');
        *unsupported = true;
        return 0;
    }
    if (p->s[p->i] == '{') {
        start = ++p->i;
        while (p->i < p->n && is_name_char(p->s[p->i]))
            p->i++;
        if (p->i >= p->n || p->s[p->i] != '}' || p->i == start || !is_name_start(p->s[start])) {
            /* ${VAR:-x} and friends: find the closing brace and give up on this command. */
            while (p->i < p->n && p->s[p->i] != '}' && p->s[p->i] != '\n')
                p->i++;
            if (p->i < p->n && p->s[p->i] == '}')
                p->i++;
            *unsupported = true;
            return 0;
        }
        name = strndup(p->s + start, p->i - start);
        p->i++;
    } else if (is_name_start(p->s[p->i])) {
        start = p->i;
        while (p->i < p->n && is_name_char(p->s[p->i]))
            p->i++;
        name = strndup(p->s + start, p->i - start);
    } else if (strchr("0123456789@*#?$!-", p->s[p->i])) {
        p->i++;
        *unsupported = true;
        return 0;
    } else
        return buf_putc(b, '$');
    if (!name)
        return -ENOMEM;
    /* An unset variable expands to nothing, as in the shell. */
    v = ks_grub_defaults_get(p->d, name);
    free(name);
    if (!v)
        return 0;
    if (b->n + strlen(v) > VALUE_MAX) {
        /* A=$A$A repeated doubles every line: no real setting is this long. */
        *unsupported = true;
        return 0;
    }
    return buf_put(b, v, strlen(v));
}

/* Reads one word at p->i (not at a separator). -EBADMSG on an unterminated quote. */
static int read_word(parser *p, word *ret)
{
    buf b = {};
    bool name_ok = true, unsupported = false;
    ssize_t eq = -1;
    int r = 0;

    r = buf_put(&b, "", 0);
    while (r >= 0 && p->i < p->n && !ends_word(p->s[p->i])) {
        char c = p->s[p->i++];

        if (c == '=' && eq < 0 && name_ok && b.n > 0) {
            eq = (ssize_t)b.n;
            r = buf_putc(&b, c);
            continue;
        }
        if (eq < 0 && !(b.n == 0 ? is_name_start(c) : is_name_char(c)))
            name_ok = false;
        if (c == '\'') {
            const char *end = memchr(p->s + p->i, '\'', p->n - p->i);
            if (!end) {
                r = -EBADMSG;
                break;
            }
            r = buf_put(&b, p->s + p->i, (size_t)(end - (p->s + p->i)));
            p->i = (size_t)(end - p->s) + 1;
        } else if (c == '"') {
            bool closed = false;
            while (r >= 0 && p->i < p->n) {
                char q = p->s[p->i++];
                if (q == '"') {
                    closed = true;
                    break;
                }
                if (q == '\\' && p->i < p->n && strchr("$`\"\\\n", p->s[p->i])) {
                    if (p->s[p->i] != '\n')
                        r = buf_putc(&b, p->s[p->i]);
                    p->i++;
                } else if (q == '$')
                    r = expand(p, &b, &unsupported);
                else if (q == '`') {
                    skip_substitution(p, '`');
                    unsupported = true;
                } else
                    r = buf_putc(&b, q);
            }
            if (r >= 0 && !closed)
                r = -EBADMSG;
        } else if (c == '\\') {
            if (p->i < p->n) {
                if (p->s[p->i] != '\n')
                    r = buf_putc(&b, p->s[p->i]);
                p->i++;
            }
        } else if (c == '$')
            r = expand(p, &b, &unsupported);
        else if (c == '`') {
            skip_substitution(p, '`');
            unsupported = true;
        } else
            r = buf_putc(&b, c);
    }
    if (r < 0) {
        free(b.s);
        return r;
    }
    ret->text = b.s;
    ret->eq = name_ok ? eq : -1;
    ret->unsupported = unsupported;
    return 0;
}

static int set_value(ks_grub_defaults *d, const char *key, size_t key_len, const char *value,
                     const char *file)
{
    _cleanup_free_ char *k = NULL, *v = NULL, *f = NULL;

    assert(d);
    assert(key);
    assert(value);
    assert(file);
    k = strndup(key, key_len);
    v = strdup(value);
    f = strdup(file);
    if (!k || !v || !f)
        return -ENOMEM;
    for (size_t i = 0; i < d->n; i++)
        if (streq(d->keys[i], k)) {
            free(d->values[i]);
            free(d->files[i]);
            d->values[i] = TAKE_PTR(v);
            d->files[i] = TAKE_PTR(f);
            return 0;
        }
    /* Room for n + 1 entries and the NULL after them. */
    if (!GREEDY_REALLOC(d->keys, d->keys_cap, d->n + 2) ||
        !GREEDY_REALLOC(d->values, d->values_cap, d->n + 2) ||
        !GREEDY_REALLOC(d->files, d->files_cap, d->n + 2))
        return -ENOMEM;
    d->keys[d->n] = TAKE_PTR(k);
    d->values[d->n] = TAKE_PTR(v);
    d->files[d->n] = TAKE_PTR(f);
    d->n++;
    d->keys[d->n] = d->values[d->n] = d->files[d->n] = NULL;
    return 0;
}

static void words_free(word *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(w[i].text);
    free(w);
}

static bool word_is(const word *w, const char *s)
{
    return w->eq < 0 && !w->unsupported && streq(w->text, s);
}

/* Evaluates one command. *depth counts open if/case/for/while blocks: inside them nothing
 * is assigned, since kswap cannot know whether the branch runs. */
static int run_command(ks_grub_defaults *d, word *w, size_t n, bool bad, unsigned *depth,
                       const char *file)
{
    static const char *const open_kw[] = {"if", "case", "for", "while", "until"};
    static const char *const close_kw[] = {"fi", "esac", "done"};
    static const char *const lead_kw[] = {"then", "else", "do", "elif", "!"};
    size_t i = 0;
    bool lead = true, exported;
    int r;

    /* "then A=1" runs A=1 (inside the block): drop leading reserved words. */
    while (lead && i < n) {
        lead = false;
        for (size_t j = 0; j < ARRAY_SIZE(lead_kw); j++)
            if (word_is(&w[i], lead_kw[j])) {
                lead = !streq(lead_kw[j], "elif");
                if (!lead) {
                    /* elif is if without a new block */
                    d->n_skipped++;
                    return 0;
                }
                i++;
                break;
            }
    }
    if (i == n)
        return 0;
    for (size_t j = 0; j < ARRAY_SIZE(open_kw); j++)
        if (word_is(&w[i], open_kw[j])) {
            (*depth)++;
            d->n_skipped++;
            return 0;
        }
    for (size_t j = 0; j < ARRAY_SIZE(close_kw); j++)
        if (word_is(&w[i], close_kw[j])) {
            if (*depth > 0)
                (*depth)--;
            return 0;
        }
    if (bad || *depth > 0) {
        d->n_skipped++;
        return 0;
    }
    /* "export A=1 B" assigns A; marking B for export changes no value. */
    exported = word_is(&w[i], "export") || word_is(&w[i], "readonly");
    if (exported)
        i++;
    for (size_t j = i; j < n; j++) {
        if (exported && w[j].eq < 0 && !w[j].unsupported && is_name(w[j].text))
            continue;
        if (w[j].eq < 0 || w[j].unsupported) {
            /* A command, or an assignment kswap cannot evaluate: skip the whole command. */
            d->n_skipped++;
            return 0;
        }
    }
    for (size_t j = i; j < n; j++) {
        if (w[j].eq < 0)
            continue;
        r = set_value(d, w[j].text, (size_t)w[j].eq, w[j].text + w[j].eq + 1, file);
        if (r < 0)
            return r;
    }
    return 0;
}

int ks_grub_defaults_parse(ks_grub_defaults *d, const char *text, size_t len, const char *file)
{
    parser p = {.s = text, .n = len, .d = d};
    unsigned depth = 0;
    word *w = NULL;
    size_t nw = 0, cap = 0;
    bool bad = false;
    int r;

    if (!d || (!text && len > 0))
        return -EINVAL;
    if (!file)
        file = "";
    for (;;) {
        char c = p.i < p.n ? p.s[p.i] : '\n';
        bool at_end = p.i >= p.n;

        if (is_blank(c) || c == '\0') {
            p.i++;
            continue;
        }
        if (c == '#') {
            /* '#' starting a word starts a comment, also after "A=1 ". */
            while (p.i < p.n && p.s[p.i] != '\n')
                p.i++;
            continue;
        }
        if (c == '\n' || c == ';') {
            if (nw > 0 || bad) {
                r = run_command(d, w, nw, bad, &depth, file);
                words_free(w, nw);
                w = NULL;
                nw = cap = 0;
                bad = false;
                if (r < 0)
                    return r;
            }
            if (at_end)
                break;
            p.i++;
            continue;
        }
        if (c == '\\' && p.i + 1 < p.n && p.s[p.i + 1] == '\n') {
            p.i += 2; /* line continuation */
            continue;
        }
        if (ends_word(c)) {
            /* && || | & < > ( ): pipelines, lists, redirections, subshells. */
            bad = true;
            p.i++;
            continue;
        }
        if (!GREEDY_REALLOC(w, cap, nw + 1)) {
            words_free(w, nw);
            return -ENOMEM;
        }
        {
            r = read_word(&p, &w[nw]);
            if (r == -EBADMSG) {
                /* An unterminated quote swallows the rest of the file in the shell too. */
                d->n_skipped++;
                words_free(w, nw);
                return 0;
            }
            if (r < 0) {
                words_free(w, nw);
                return r;
            }
            nw++;
        }
    }
    words_free(w, nw);
    return 0;
}

void ks_grub_defaults_done(ks_grub_defaults *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->keys[i]);
        free(d->values[i]);
        free(d->files[i]);
    }
    free(d->keys);
    free(d->values);
    free(d->files);
    *d = (ks_grub_defaults){};
}

static int parse_file(const ks_root *root, ks_grub_defaults *d, const char *path)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r;

    r = ks_root_read_file(root, path, DEFAULTS_MAX, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    return ks_grub_defaults_parse(d, text, len, path);
}

int ks_grub_defaults_load(const ks_root *root, ks_grub_defaults *ret)
{
    _cleanup_strv_free_ char **names = NULL;
    ks_grub_defaults d = {};
    int r;

    r = parse_file(root, &d, "/etc/default/grub");
    if (r < 0)
        goto fail;
    r = ks_root_list_dir(root, "/etc/default/grub.d", &names);
    if (r < 0 && r != -ENOENT && r != -ENOTDIR)
        goto fail;
    /* The shell's glob "*.cfg": no dot files, sorted (C collation). */
    for (char **n = names; n && *n; n++) {
        _cleanup_free_ char *path = NULL;

        if ((*n)[0] == '.' || !ks_endswith(*n, ".cfg"))
            continue;
        path = ks_asprintf("/etc/default/grub.d/%s", *n);
        if (!path) {
            r = -ENOMEM;
            goto fail;
        }
        r = parse_file(root, &d, path);
        if (r < 0)
            goto fail;
    }
    *ret = d;
    return 0;
fail:
    ks_grub_defaults_done(&d);
    return r;
}

/* 'value' with every ' written as '\'' : nothing inside single quotes is special. */
static int put_quoted(buf *b, const char *v)
{
    int r = buf_putc(b, '\'');

    for (; r >= 0 && *v; v++)
        r = *v == '\'' ? buf_put(b, "'\\''", 4) : buf_putc(b, *v);
    return r < 0 ? r : buf_putc(b, '\'');
}

int ks_grub_defaults_write_dropin(const ks_root *root, const char *const *keys,
                                  const char *const *values, size_t n)
{
    static const char header[] =
        "# Written by kswap: the GRUB settings it manages. update-grub reads this file\n"
        "# after /etc/default/grub; kswap rewrites it, so change these with kswap.\n";
    buf b = {};
    int r;

    for (size_t i = 0; i < n; i++)
        if (!is_name(keys[i]) || !values[i])
            return -EINVAL;
    r = buf_put(&b, header, sizeof(header) - 1);
    for (size_t i = 0; r >= 0 && i < n; i++) {
        r = buf_put(&b, keys[i], strlen(keys[i]));
        if (r >= 0)
            r = buf_putc(&b, '=');
        if (r >= 0)
            r = put_quoted(&b, values[i]);
        if (r >= 0)
            r = buf_putc(&b, '\n');
    }
    if (r >= 0)
        r = ks_write_atomic(root, DROPIN_PATH, b.s, b.n, 0644);
    free(b.s);
    return r;
}
