/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A scan of a generated grub.cfg for the few facts plan needs before the full GRUB model
 * exists. Ubuntu's 00_header (make_timeout, quick-boot.patch) writes:
 *
 *   if [ "${recordfail}" = 1 ] ; then
 *     set timeout=30                        <- GRUB_RECORDFAIL_TIMEOUT, default 30
 *   else
 *     if [ x$feature_timeout_style = xy ] ; then
 *       set timeout_style=hidden
 *       set timeout=0                       <- GRUB_TIMEOUT
 *     ...
 *   fi
 *
 * and, when recordfail cannot be saved ("GRUB lacks write support for X"), a block that sets
 * the recordfail timeout on every EFI boot: `if [ $grub_platform = efi ]; then` (newer) or
 * `if lsefi; then` (older), holding `set timeout=${GRUB_RECORDFAIL_TIMEOUT:-30}`.
 * Statements are split on ';' and newlines; brace blocks (functions, menu entries) do not run
 * when grub.cfg is loaded, so timeouts inside them do not count.
 */
#include <ctype.h>
#include <limits.h>

#include "grub/cfgscan.h"
#include "lib/basic/util.h"

#define MARKER "# GRUB lacks write support for"
#define DEPTH_MAX 64

typedef enum frame_kind {
    FRAME_IF,
    FRAME_RECORDFAIL,
    FRAME_EFI,
    FRAME_BRACE,
} frame_kind;

typedef struct frame {
    frame_kind kind;
    bool in_then; /* in the then-branch, not else/elif */
} frame;

typedef struct scan {
    frame f[DEPTH_MAX];
    size_t depth;    /* frames in f */
    size_t overflow; /* frames nested deeper than DEPTH_MAX: counted only */
    ks_grub_cfg_facts *out;
} scan;

void ks_grub_cfg_facts_done(ks_grub_cfg_facts *f)
{
    if (!f)
        return;
    free(f->lacks_write_reason);
    f->lacks_write_reason = NULL;
}

/* The rest of s after the reserved word w, or NULL when s does not start with it. */
static char *after_word(char *s, const char *w)
{
    const char *r = ks_startswith(s, w);

    if (!r || (*r && !isspace((unsigned char)*r)))
        return NULL;
    return ks_strstrip((char *)r);
}

static void strip_quotes(char *s)
{
    char *w = s;

    for (; *s; s++)
        if (*s != '"' && *s != '\'')
            *w++ = *s;
    *w = '\0';
}

static frame_kind classify(const char *cond)
{
    _cleanup_free_ char *c = strdup(cond);

    if (!c)
        return FRAME_IF;
    strip_quotes(c);
    if (strstr(c, "!="))
        return FRAME_IF;
    if ((strstr(c, "${recordfail}") || strstr(c, "$recordfail")) && strstr(c, "= 1"))
        return FRAME_RECORDFAIL;
    if (streq(ks_strstrip(c), "lsefi"))
        return FRAME_EFI;
    if (strstr(c, "grub_platform") && (strstr(c, "= efi") || strstr(c, "= xefi")))
        return FRAME_EFI;
    return FRAME_IF;
}

static void push(scan *s, frame_kind kind)
{
    if (s->depth == DEPTH_MAX) {
        s->overflow++;
        return;
    }
    s->f[s->depth++] = (frame){.kind = kind, .in_then = true};
}

/* Pops the innermost frame when it is (or is not, for "fi") a brace block. */
static void pop(scan *s, bool brace)
{
    if (s->overflow > 0) {
        s->overflow--;
        return;
    }
    if (s->depth > 0 && (s->f[s->depth - 1].kind == FRAME_BRACE) == brace)
        s->depth--;
}

static frame *top(scan *s)
{
    return s->depth > 0 && s->overflow == 0 ? &s->f[s->depth - 1] : NULL;
}

static void record_timeout(scan *s, char *value)
{
    frame_kind where = FRAME_IF;
    int v;

    strip_quotes(value);
    if (ks_safe_atoi(ks_strstrip(value), &v) < 0)
        return;
    if (s->overflow > 0)
        return;
    for (size_t i = s->depth; i > 0; i--) {
        const frame *f = &s->f[i - 1];
        if (f->kind == FRAME_BRACE)
            return;
        if (where == FRAME_IF && (f->kind == FRAME_RECORDFAIL || f->kind == FRAME_EFI))
            where = f->in_then ? f->kind : FRAME_IF;
    }
    /* The first one counts: later ones are fallbacks (sleep --interruptible) or os-prober's. */
    if (where == FRAME_RECORDFAIL) {
        if (s->out->recordfail_timeout == INT_MIN)
            s->out->recordfail_timeout = v;
    } else if (where == FRAME_EFI) {
        if (s->out->efi_recordfail_timeout == INT_MIN)
            s->out->efi_recordfail_timeout = v;
    } else if (s->out->timeout == INT_MIN)
        s->out->timeout = v;
}

static void statement(scan *s, char *st)
{
    char *r;
    size_t n;

    for (;;) {
        st = ks_strstrip(st);
        if ((r = after_word(st, "then")) || (r = after_word(st, "do"))) {
            st = r;
            continue;
        }
        if ((r = after_word(st, "else"))) {
            frame *f = top(s);
            if (f && f->kind != FRAME_BRACE)
                f->in_then = false;
            st = r;
            continue;
        }
        break;
    }
    if (!*st || *st == '#')
        return;
    if ((r = after_word(st, "elif"))) {
        frame *f = top(s);
        if (f && f->kind != FRAME_BRACE)
            f->in_then = false;
        return;
    }
    if ((r = after_word(st, "if")) || (r = after_word(st, "while"))) {
        push(s, st[0] == 'i' ? classify(r) : FRAME_IF);
        return;
    }
    if (after_word(st, "fi") || after_word(st, "done")) {
        pop(s, false);
        return;
    }
    if (streq(st, "}")) {
        pop(s, true);
        return;
    }
    n = strlen(st);
    if (st[n - 1] == '{') {
        /* menuentry '...' {, submenu ... {, function name { */
        push(s, FRAME_BRACE);
        return;
    }
    if ((r = after_word(st, "set")))
        st = r;
    if ((r = (char *)ks_startswith(st, "timeout=")))
        record_timeout(s, r);
}

static int marker(ks_grub_cfg_facts *f, const char *line)
{
    const char *r = ks_startswith(line, MARKER);
    const char *end;

    if (!r || (*r && *r != ' ') || f->lacks_write_support)
        return 0;
    while (*r == ' ')
        r++;
    end = strstr(r, ", so recordfail");
    if (!end)
        end = r + strlen(r);
    while (end > r && (end[-1] == '.' || isspace((unsigned char)end[-1])))
        end--;
    f->lacks_write_support = true;
    f->lacks_write_reason = strndup(r, (size_t)(end - r));
    return f->lacks_write_reason ? 0 : -ENOMEM;
}

int ks_grub_cfg_scan(const char *text, size_t len, ks_grub_cfg_facts *ret)
{
    ks_grub_cfg_facts f = {
        .recordfail_timeout = INT_MIN,
        .efi_recordfail_timeout = INT_MIN,
        .timeout = INT_MIN,
    };
    scan s = {.out = &f};
    size_t pos = 0, n;
    const char *line;
    int k;

    if (!text && len > 0)
        return -EINVAL;
    while (ks_next_line(text, len, &pos, &line, &n)) {
        _cleanup_free_ char *l = strndup(line, n);
        char *p, *start;
        char quote = 0;

        if (!l) {
            ks_grub_cfg_facts_done(&f);
            return -ENOMEM;
        }
        p = ks_strstrip(l);
        if (*p == '#') {
            k = marker(&f, p);
            if (k < 0) {
                ks_grub_cfg_facts_done(&f);
                return k;
            }
            continue;
        }
        /* Split on ';' outside quotes. */
        for (start = p; *p; p++) {
            if (quote) {
                if (*p == quote)
                    quote = 0;
                else if (*p == '\\' && quote == '"' && p[1])
                    p++;
            } else if (*p == '\'' || *p == '"')
                quote = *p;
            else if (*p == '\\' && p[1])
                p++;
            else if (*p == ';') {
                *p = '\0';
                statement(&s, start);
                start = p + 1;
            }
        }
        statement(&s, start);
    }
    *ret = f;
    return 0;
}
