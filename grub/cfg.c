/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <stdarg.h>

#include "grub/cfg.h"

#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"

#define MAX_TEXT (64u << 20)
#define MAX_DEPTH 100

typedef enum tok_type {
    T_EOF,
    T_NEWLINE,
    T_SEMI,
    T_LBR,
    T_RBR,
    T_WORD,
} tok_type;

typedef struct lexer {
    const char *s;
    size_t len, pos;
    unsigned line, col;
    /* the current (peeked) token */
    bool have;
    tok_type type;
    ks_grub_word word;
    char *raw; /* the token text when the word is plain unquoted text, else NULL */
    unsigned tline, tcol;
    size_t tstart;
    unsigned depth;
    unsigned in_list; /* inside a block or an if/loop: no function definitions there */
    unsigned last_nd; /* delimiters after the last command of a list */
    unsigned brace_line, brace_col; /* the innermost open '{' */
    char *lacks_write_support;      /* see ks_grub_cfg */
    bool failed;
    ks_grub_error *err;
} lexer;

static void word_done(ks_grub_word *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->parts[i].s);
    free(w->parts);
    w->parts = NULL;
    w->n = w->cap = 0;
}

_printf_(4, 5) static int fail(lexer *lx, unsigned line, unsigned col, const char *fmt, ...)
{
    va_list ap;

    if (lx->failed)
        return -EBADMSG;
    lx->failed = true;
    if (lx->err) {
        lx->err->line = line;
        lx->err->column = col;
        va_start(ap, fmt);
        vsnprintf(lx->err->message, sizeof(lx->err->message), fmt, ap);
        va_end(ap);
    }
    return -EBADMSG;
}

static int cur(const lexer *lx)
{
    return lx->pos < lx->len ? (unsigned char)lx->s[lx->pos] : -1;
}

static int at(const lexer *lx, size_t off)
{
    return lx->pos + off < lx->len ? (unsigned char)lx->s[lx->pos + off] : -1;
}

static void adv(lexer *lx)
{
    if (lx->pos >= lx->len)
        return;
    if (lx->s[lx->pos] == '\n') {
        lx->line++;
        lx->col = 1;
    } else {
        lx->col++;
    }
    lx->pos++;
}

/*
 * Appends text to the word, merging with a last part of the same type. The last part's length
 * and allocation are remembered (tail), and grow by doubling: a long quoted word costs linear
 * time, not a strlen() and a realloc() per character.
 */
typedef struct word_tail {
    const char *s; /* the part they describe */
    size_t len, cap;
} word_tail;
static _Thread_local word_tail tail; /* parts are only made below, which sets it */

static int word_add(ks_grub_word *w, ks_grub_part_type type, const char *s, size_t n)
{
    ks_grub_part *p;
    char *ns;

    if (w->n > 0 && w->parts[w->n - 1].type == type && type != KS_GRUB_PART_VAR &&
        type != KS_GRUB_PART_DQVAR) {
        p = &w->parts[w->n - 1];
        if (tail.s != p->s) {
            tail.len = strlen(p->s);
            tail.cap = tail.len + 1;
        }
        if (tail.len + n + 1 > tail.cap) {
            size_t cap = tail.cap * 2 > tail.len + n + 1 ? tail.cap * 2 : tail.len + n + 1;
            ns = realloc(p->s, cap);
            if (!ns)
                return -ENOMEM;
            p->s = ns;
            tail.cap = cap;
        }
        memcpy(p->s + tail.len, s, n);
        tail.len += n;
        p->s[tail.len] = '\0';
        tail.s = p->s;
        return 0;
    }
    if (!GREEDY_REALLOC(w->parts, w->cap, w->n + 1))
        return -ENOMEM;
    ns = strndup(s, n);
    if (!ns)
        return -ENOMEM;
    tail = (word_tail){.s = ns, .len = n, .cap = n + 1};
    w->parts[w->n].type = type;
    w->parts[w->n].s = ns;
    w->n++;
    return 0;
}

static bool is_word_char(int c)
{
    return c >= 0 && !strchr("{}|&$;<> \t\n'\"\\", c);
}

static bool is_name_start(int c)
{
    return c >= 0 && (isalpha(c) || c == '_');
}

static bool is_name_char(int c)
{
    return c >= 0 && (isalnum(c) || c == '_');
}

/* After '$': NAME, DIGITS, one of ?#*@, each also in braces (yylex.l VARIABLE). */
static int lex_var(lexer *lx, ks_grub_word *w, ks_grub_part_type type)
{
    unsigned l = lx->line, c = lx->col;
    bool brace = false;
    size_t start, n;

    adv(lx); /* '$' */
    if (cur(lx) == '{') {
        brace = true;
        adv(lx);
    }
    start = lx->pos;
    if (is_name_start(cur(lx))) {
        while (is_name_char(cur(lx)))
            adv(lx);
    } else if (cur(lx) >= 0 && isdigit(cur(lx))) {
        while (cur(lx) >= 0 && isdigit(cur(lx)))
            adv(lx);
    } else if (cur(lx) >= 0 && strchr("?#*@", cur(lx))) {
        adv(lx);
    } else {
        return fail(lx, l, c, "bad variable reference after '$'");
    }
    n = lx->pos - start;
    if (brace) {
        if (cur(lx) != '}')
            return fail(lx, l, c, "missing '}' in variable reference");
        adv(lx);
    }
    return word_add(w, type, lx->s + start, n);
}

static int lex_word(lexer *lx)
{
    ks_grub_word *w = &lx->word;
    bool plain = true;
    size_t start = lx->pos;
    int r = 0, c;

    for (;;) {
        c = cur(lx);
        if (is_word_char(c)) {
            size_t s = lx->pos;
            while (is_word_char(cur(lx)))
                adv(lx);
            r = word_add(w, KS_GRUB_PART_TEXT, lx->s + s, lx->pos - s);
        } else if (c == '\\') {
            unsigned l = lx->line, col = lx->col;
            plain = false;
            adv(lx);
            if (cur(lx) < 0)
                return fail(lx, l, col, "backslash at end of input");
            if (cur(lx) == '\n') {
                adv(lx); /* continuation inside a word */
                continue;
            }
            r = word_add(w, KS_GRUB_PART_TEXT, lx->s + lx->pos, 1);
            adv(lx);
        } else if (c == '\'') {
            unsigned l = lx->line, col = lx->col;
            size_t s;
            plain = false;
            adv(lx);
            s = lx->pos;
            while (cur(lx) >= 0 && cur(lx) != '\'')
                adv(lx);
            if (cur(lx) < 0)
                return fail(lx, l, col, "unterminated single quote");
            r = word_add(w, KS_GRUB_PART_SQ, lx->s + s, lx->pos - s);
            adv(lx);
        } else if (c == '"' || (c == '$' && at(lx, 1) == '"')) {
            /* "..." or $"..." (gettext string, kept untranslated and without variables) */
            unsigned l = lx->line, col = lx->col;
            bool i18n = c == '$';
            plain = false;
            if (i18n)
                adv(lx);
            adv(lx);
            r = word_add(w, KS_GRUB_PART_DQ, "", 0);
            for (;;) {
                int d = cur(lx);
                if (r < 0)
                    return r;
                if (d < 0)
                    return fail(lx, l, col, "unterminated double quote");
                if (d == '"') {
                    adv(lx);
                    break;
                }
                if (d == '\\') {
                    int e = at(lx, 1);
                    if (e == '\n') {
                        adv(lx);
                        adv(lx);
                        continue;
                    }
                    if (e == '"' || e == '\\' || (e == '$' && !i18n)) {
                        adv(lx);
                        r = word_add(w, KS_GRUB_PART_DQ, lx->s + lx->pos, 1);
                        adv(lx);
                        continue;
                    }
                    r = word_add(w, KS_GRUB_PART_DQ, "\\", 1);
                    adv(lx);
                    continue;
                }
                if (d == '$' && !i18n) {
                    r = lex_var(lx, w, KS_GRUB_PART_DQVAR);
                    continue;
                }
                r = word_add(w, KS_GRUB_PART_DQ, lx->s + lx->pos, 1);
                adv(lx);
            }
        } else if (c == '$') {
            plain = false;
            r = lex_var(lx, w, KS_GRUB_PART_VAR);
        } else {
            break;
        }
        if (r < 0)
            return r;
    }
    if (plain) {
        lx->raw = strndup(lx->s + start, lx->pos - start);
        if (!lx->raw)
            return -ENOMEM;
    }
    return 0;
}

static void tok_clear(lexer *lx)
{
    word_done(&lx->word);
    free(lx->raw);
    lx->raw = NULL;
}

#define LACKS_WRITE_MARKER "# GRUB lacks write support for"

/*
 * Ubuntu's 00_header writes "# GRUB lacks write support for X, so recordfail support is
 * disabled." into its recordfail function when grub-probe finds /boot/grub on a file system
 * or an abstraction (btrfs, zfs, lvm, diskfilter) GRUB cannot write. Comments run nothing, so
 * the parser keeps this one fact of them: the first marker's X.
 */
static int note_comment(lexer *lx, const char *comment, size_t len)
{
    const char *r, *end;
    size_t n = strlen(LACKS_WRITE_MARKER);

    if (lx->lacks_write_support || len < n || memcmp(comment, LACKS_WRITE_MARKER, n) != 0)
        return 0;
    r = comment + n;
    end = comment + len;
    if (r < end && *r != ' ' && *r != '\t' && *r != '\r')
        return 0; /* "... support forever" is not the marker */
    while (r < end && (*r == ' ' || *r == '\t'))
        r++;
    for (const char *p = r; p + 15 <= end; p++)
        if (memcmp(p, ", so recordfail", 15) == 0) {
            end = p;
            break;
        }
    while (end > r && (end[-1] == '.' || isspace((unsigned char)end[-1])))
        end--;
    lx->lacks_write_support = strndup(r, (size_t)(end - r));
    return lx->lacks_write_support ? 0 : -ENOMEM;
}

/* Reads the next token into lx unless one is waiting. */
static int peek(lexer *lx)
{
    int c, r;

    if (lx->have)
        return 0;
    if (lx->failed)
        return -EBADMSG;
    for (;;) {
        c = cur(lx);
        if (c == ' ' || c == '\t') {
            adv(lx);
        } else if (c == '\\' && at(lx, 1) == '\n') {
            adv(lx);
            adv(lx);
        } else if (c == '#') {
            size_t start = lx->pos;

            while (cur(lx) >= 0 && cur(lx) != '\n')
                adv(lx);
            r = note_comment(lx, lx->s + start, lx->pos - start);
            if (r < 0)
                return r;
        } else {
            break;
        }
    }
    lx->tline = lx->line;
    lx->tcol = lx->col;
    lx->tstart = lx->pos;
    lx->have = true;
    switch (c) {
    case -1:
        lx->type = T_EOF;
        return 0;
    case '\n':
        lx->type = T_NEWLINE;
        adv(lx);
        return 0;
    case ';':
        if (at(lx, 1) == ';')
            return fail(lx, lx->tline, lx->tcol, "';;' is not supported by GRUB's script");
        lx->type = T_SEMI;
        adv(lx);
        return 0;
    case '{':
        lx->type = T_LBR;
        adv(lx);
        return 0;
    case '}':
        lx->type = T_RBR;
        adv(lx);
        return 0;
    case '|':
    case '&':
    case '<':
    case '>':
        return fail(lx, lx->tline, lx->tcol, "'%c' is not supported by GRUB's script", c);
    default:
        break;
    }
    if (c == 0)
        return fail(lx, lx->tline, lx->tcol, "NUL byte in script");
    lx->type = T_WORD;
    r = lex_word(lx);
    if (r < 0)
        return r;
    return 0;
}

static void consume(lexer *lx)
{
    tok_clear(lx);
    lx->have = false;
}

static bool tok_is_kw(const lexer *lx, const char *kw)
{
    return lx->type == T_WORD && lx->raw && streq(lx->raw, kw);
}

static const char *tok_desc(const lexer *lx)
{
    switch (lx->type) {
    case T_EOF:
        return "end of input";
    case T_NEWLINE:
        return "newline";
    case T_SEMI:
        return "';'";
    case T_LBR:
        return "'{'";
    case T_RBR:
        return "'}'";
    default:
        return lx->raw ? lx->raw : "word";
    }
}

static const char *const keywords[] = {"case",   "do",   "done",  "elif",  "else",
                                       "esac",   "fi",   "for",   "if",    "in",
                                       "select", "then", "until", "while", "function"};

static bool tok_is_any_kw(const lexer *lx)
{
    for (size_t i = 0; i < ARRAY_SIZE(keywords); i++)
        if (tok_is_kw(lx, keywords[i]))
            return true;
    return false;
}

static void block_free(ks_grub_block *b);

static void node_free(ks_grub_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n_words; i++)
        word_done(&n->words[i]);
    free(n->words);
    free(n->name);
    for (size_t i = 0; i < n->n_conds; i++) {
        if (n->conds)
            block_free(&n->conds[i]);
        if (n->bodies)
            block_free(&n->bodies[i]);
    }
    free(n->conds);
    free(n->bodies);
    if (n->else_body) {
        block_free(n->else_body);
        free(n->else_body);
    }
    if (n->body) {
        block_free(n->body);
        free(n->body);
    }
    free(n);
}

static void block_free(ks_grub_block *b)
{
    for (size_t i = 0; i < b->n; i++)
        node_free(b->v[i]);
    free(b->v);
    b->v = NULL;
    b->n = b->cap = 0;
}

static int block_add(ks_grub_block *b, ks_grub_node *n)
{
    if (!GREEDY_REALLOC(b->v, b->cap, b->n + 1)) {
        node_free(n);
        return -ENOMEM;
    }
    b->v[b->n++] = n;
    return 0;
}

static int node_new(lexer *lx, ks_grub_node_type type, ks_grub_node **ret)
{
    ks_grub_node *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->type = type;
    n->line = lx->tline;
    n->column = lx->tcol;
    *ret = n;
    return 0;
}

static int skip_newlines(lexer *lx)
{
    int r;
    for (;;) {
        r = peek(lx);
        if (r < 0)
            return r;
        if (lx->type != T_NEWLINE)
            return 0;
        consume(lx);
    }
}

/* Skips ';' and newlines; returns how many were skipped (GRUB's delimiters). */
static int skip_delimiters(lexer *lx, unsigned *ret_n)
{
    unsigned n = 0;
    int r;
    for (;;) {
        r = peek(lx);
        if (r < 0)
            return r;
        if (lx->type != T_NEWLINE && lx->type != T_SEMI)
            break;
        consume(lx);
        n++;
    }
    *ret_n = n;
    return 0;
}

static int parse_command(lexer *lx, ks_grub_node **ret);

/*
 * commands1 delimiters: commands up to one of the terminator keywords (or '}'), which is
 * left for the caller. need_delim: the terminator must follow a delimiter (as "then" and
 * "fi" must); the last command's delimiters are consumed.
 */
static int parse_list(lexer *lx, const char *const *terms, bool rbr_ends, ks_grub_block *ret)
{
    ks_grub_block b = {0};
    unsigned nd = 0;
    int r;

    lx->in_list++;
    r = skip_newlines(lx);
    for (;;) {
        ks_grub_node *n = NULL;
        bool is_term = false;

        if (r < 0)
            goto fail;
        r = peek(lx);
        if (r < 0)
            goto fail;
        for (const char *const *t = terms; t && *t; t++)
            if (tok_is_kw(lx, *t))
                is_term = true;
        if (is_term || (rbr_ends && lx->type == T_RBR)) {
            if (b.n == 0) {
                r = fail(lx, lx->tline, lx->tcol, "expected a command before %s", tok_desc(lx));
                goto fail;
            }
            break;
        }
        if (lx->type == T_EOF && rbr_ends) {
            r = fail(lx, lx->brace_line, lx->brace_col, "missing '}' for this '{'");
            goto fail;
        }
        if (lx->type == T_EOF) {
            r = fail(lx, lx->tline, lx->tcol, "unexpected end of input (missing '%s')",
                     terms && terms[0] ? terms[0] : "}");
            goto fail;
        }
        r = parse_command(lx, &n);
        if (r < 0)
            goto fail;
        r = block_add(&b, n);
        if (r < 0)
            goto fail;
        r = skip_delimiters(lx, &nd);
        if (r < 0)
            goto fail;
        r = peek(lx);
        if (r < 0)
            goto fail;
        if (nd == 0 && !(rbr_ends && lx->type == T_RBR)) {
            r = fail(lx, lx->tline, lx->tcol, "unexpected %s after a command", tok_desc(lx));
            goto fail;
        }
    }
    lx->in_list--;
    lx->last_nd = nd;
    *ret = b;
    return 0;
fail:
    lx->in_list--;
    block_free(&b);
    return r;
}

static int expect_kw(lexer *lx, const char *kw)
{
    int r = peek(lx);
    if (r < 0)
        return r;
    if (!tok_is_kw(lx, kw))
        return fail(lx, lx->tline, lx->tcol, "expected '%s', found %s", kw, tok_desc(lx));
    consume(lx);
    return 0;
}

static int parse_block(lexer *lx, bool need_delim, ks_grub_block **ret, size_t *ret_start,
                       size_t *ret_end)
{
    ks_grub_block *b;
    unsigned line = lx->tline, col = lx->tcol;
    size_t start = lx->pos; /* just after '{' */
    unsigned ol = lx->brace_line, oc = lx->brace_col;
    int r;

    lx->brace_line = line;
    lx->brace_col = col;
    consume(lx); /* '{' */
    b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    if (++lx->depth > MAX_DEPTH) {
        r = fail(lx, line, col, "blocks nested too deep");
        goto fail;
    }
    r = parse_list(lx, NULL, true, b);
    lx->depth--;
    lx->brace_line = ol;
    lx->brace_col = oc;
    if (r < 0)
        goto fail;
    r = peek(lx);
    if (r < 0)
        goto fail;
    if (lx->type != T_RBR) {
        r = fail(lx, line, col, "missing '}' for the '{' here");
        goto fail;
    }
    if (need_delim && lx->last_nd == 0) {
        r = fail(lx, lx->tline, lx->tcol, "expected ';' or newline before '}'");
        goto fail;
    }
    if (ret_start)
        *ret_start = start;
    if (ret_end)
        *ret_end = lx->tstart;
    consume(lx);
    *ret = b;
    return 0;
fail:
    block_free(b);
    free(b);
    return r;
}

static int take_word(lexer *lx, ks_grub_node *n)
{
    if (!GREEDY_REALLOC(n->words, n->words_cap, n->n_words + 1))
        return -ENOMEM;
    n->words[n->n_words++] = lx->word;
    lx->word = (ks_grub_word){0};
    consume(lx);
    return 0;
}

static int parse_if(lexer *lx, ks_grub_node *n)
{
    static const char *const then_t[] = {"then", NULL};
    static const char *const body_t[] = {"fi", "elif", "else", NULL};
    static const char *const else_t[] = {"fi", NULL};
    int r;

    consume(lx); /* if */
    for (;;) {
        ks_grub_block c = {0}, b = {0};
        bool ok;

        r = parse_list(lx, then_t, false, &c);
        if (r < 0)
            return r;
        r = expect_kw(lx, "then");
        if (r >= 0)
            r = parse_list(lx, body_t, false, &b);
        ok = GREEDY_REALLOC(n->conds, n->conds_cap, n->n_conds + 1);
        if (ok)
            ok = GREEDY_REALLOC(n->bodies, n->bodies_cap, n->n_conds + 1);
        if (!ok) {
            block_free(&c);
            block_free(&b);
            return -ENOMEM;
        }
        n->conds[n->n_conds] = c;
        n->bodies[n->n_conds] = b;
        n->n_conds++;
        if (r < 0)
            return r;
        if (tok_is_kw(lx, "elif")) {
            consume(lx);
            continue;
        }
        if (tok_is_kw(lx, "else")) {
            consume(lx);
            n->else_body = calloc(1, sizeof(ks_grub_block));
            if (!n->else_body)
                return -ENOMEM;
            r = parse_list(lx, else_t, false, n->else_body);
            if (r < 0)
                return r;
        }
        return expect_kw(lx, "fi");
    }
}

static int parse_loop(lexer *lx, ks_grub_node *n)
{
    static const char *const do_t[] = {"do", NULL};
    static const char *const done_t[] = {"done", NULL};
    unsigned nd;
    int r;

    consume(lx); /* for/while/until */
    if (n->type == KS_GRUB_NODE_FOR) {
        r = peek(lx);
        if (r < 0)
            return r;
        if (lx->type != T_WORD || !lx->raw || !is_name_start(lx->raw[0]))
            return fail(lx, lx->tline, lx->tcol, "expected a variable name after 'for'");
        n->name = TAKE_PTR(lx->raw);
        consume(lx);
        r = expect_kw(lx, "in");
        if (r < 0)
            return r;
        for (;;) {
            r = peek(lx);
            if (r < 0)
                return r;
            if (lx->type != T_WORD)
                break;
            r = take_word(lx, n);
            if (r < 0)
                return r;
        }
        r = skip_delimiters(lx, &nd);
        if (r < 0)
            return r;
        if (nd == 0)
            return fail(lx, lx->tline, lx->tcol, "expected ';' or newline before 'do'");
    } else {
        n->conds = calloc(1, sizeof(ks_grub_block));
        if (!n->conds)
            return -ENOMEM;
        n->n_conds = 1;
        r = parse_list(lx, do_t, false, n->conds);
        if (r < 0)
            return r;
    }
    r = expect_kw(lx, "do");
    if (r < 0)
        return r;
    n->body = calloc(1, sizeof(ks_grub_block));
    if (!n->body)
        return -ENOMEM;
    r = parse_list(lx, done_t, false, n->body);
    if (r < 0)
        return r;
    return expect_kw(lx, "done");
}

static int parse_function(lexer *lx, ks_grub_node *n)
{
    unsigned line, col;
    int r;

    consume(lx); /* function */
    r = peek(lx);
    if (r < 0)
        return r;
    if (lx->type != T_WORD || !lx->raw || !is_name_start(lx->raw[0]))
        return fail(lx, lx->tline, lx->tcol, "expected a function name");
    for (const char *p = lx->raw; *p; p++)
        if (!is_name_char((unsigned char)*p))
            return fail(lx, lx->tline, lx->tcol, "bad function name '%s'", lx->raw);
    n->name = TAKE_PTR(lx->raw);
    consume(lx);
    r = skip_newlines(lx);
    if (r < 0)
        return r;
    if (lx->type != T_LBR)
        return fail(lx, lx->tline, lx->tcol, "expected '{' after the function name");
    line = lx->tline;
    col = lx->tcol;
    r = parse_block(lx, true, &n->body, NULL, NULL);
    (void)line;
    (void)col;
    return r;
}

static int parse_command(lexer *lx, ks_grub_node **ret)
{
    ks_grub_node *n = NULL;
    int r;

    r = peek(lx);
    if (r < 0)
        return r;
    if (lx->type != T_WORD)
        return fail(lx, lx->tline, lx->tcol, "unexpected %s", tok_desc(lx));
    if (++lx->depth > MAX_DEPTH)
        return fail(lx, lx->tline, lx->tcol, "commands nested too deep");

    if (tok_is_kw(lx, "if")) {
        r = node_new(lx, KS_GRUB_NODE_IF, &n);
        if (r >= 0)
            r = parse_if(lx, n);
    } else if (tok_is_kw(lx, "for") || tok_is_kw(lx, "while") || tok_is_kw(lx, "until")) {
        r = node_new(lx,
                     tok_is_kw(lx, "for")     ? KS_GRUB_NODE_FOR
                     : tok_is_kw(lx, "while") ? KS_GRUB_NODE_WHILE
                                              : KS_GRUB_NODE_UNTIL,
                     &n);
        if (r >= 0)
            r = parse_loop(lx, n);
    } else if (tok_is_kw(lx, "function") && lx->in_list == 0) {
        r = node_new(lx, KS_GRUB_NODE_FUNCTION, &n);
        if (r >= 0)
            r = parse_function(lx, n);
    } else if (tok_is_any_kw(lx)) {
        r = fail(lx, lx->tline, lx->tcol, "unexpected '%s'", lx->raw);
    } else {
        r = node_new(lx, KS_GRUB_NODE_CMD, &n);
        while (r >= 0) {
            r = peek(lx);
            if (r < 0)
                break;
            if (lx->type == T_WORD) {
                r = take_word(lx, n);
                continue;
            }
            if (lx->type == T_LBR)
                r = parse_block(lx, false, &n->body, &n->body_start, &n->body_end);
            break;
        }
    }
    lx->depth--;
    if (r < 0) {
        node_free(n);
        return r;
    }
    *ret = n;
    return 0;
}

static void entries_free(ks_grub_entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ks_grub_entry_done(&v[i]);
    free(v);
}

void ks_grub_entry_done(ks_grub_entry *e)
{
    free(e->title);
    free(e->id);
    ks_strv_free(e->classes);
    free(e->users);
    free(e->linux_path);
    free(e->release);
    free(e->linux_args);
    free(e->initrd);
    entries_free(e->children, e->n_children);
    *e = (ks_grub_entry){0};
}

ks_grub_cfg *ks_grub_cfg_free(ks_grub_cfg *c)
{
    if (!c)
        return NULL;
    block_free(&c->script);
    entries_free(c->entries, c->n_entries);
    free(c->lacks_write_support);
    free(c->text);
    free(c);
    return NULL;
}

/* grub_script_argv_split_append(): fields on white space, the first joins the current one. */
static int argv_append(char ***argv, size_t *n, size_t *cap, bool *open, const char *s, size_t len)
{
    char **v;

    assert(argv);
    assert(n);
    assert(cap);
    assert(open);
    if (!*open) {
        if (!GREEDY_REALLOC(*argv, *cap, *n + 2))
            return -ENOMEM;
        v = *argv;
        v[*n] = strdup("");
        v[*n + 1] = NULL;
        if (!v[*n])
            return -ENOMEM;
        (*n)++;
        *open = true;
    }
    v = *argv;
    size_t ol = strlen(v[*n - 1]);
    char *ns;

    if (ol + len > (1u << 20))
        return -E2BIG; /* a runaway expansion, not a boot setup */
    ns = realloc(v[*n - 1], ol + len + 1);
    if (!ns)
        return -ENOMEM;
    memcpy(ns + ol, s, len);
    ns[ol + len] = '\0';
    v[*n - 1] = ns;
    return 0;
}

int ks_grub_words_expand(const ks_grub_word *words, size_t n, ks_grub_lookup_fn lookup,
                         void *userdata, char ***ret_argv)
{
    _cleanup_strv_free_ char **argv = NULL;
    size_t argc = 0, cap = 1;
    int r = 0;

    argv = calloc(1, sizeof(char *));
    if (!argv)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        bool open = false;
        for (size_t j = 0; j < words[i].n && r >= 0; j++) {
            const ks_grub_part *p = &words[i].parts[j];
            const char *v;

            switch (p->type) {
            case KS_GRUB_PART_TEXT:
                if (p->s[0])
                    r = argv_append(&argv, &argc, &cap, &open, p->s, strlen(p->s));
                break;
            case KS_GRUB_PART_SQ:
            case KS_GRUB_PART_DQ:
                r = argv_append(&argv, &argc, &cap, &open, p->s, strlen(p->s));
                break;
            case KS_GRUB_PART_DQVAR:
                v = lookup(p->s, userdata);
                if (v && v[0])
                    r = argv_append(&argv, &argc, &cap, &open, v, strlen(v));
                break;
            case KS_GRUB_PART_VAR:
                v = lookup(p->s, userdata);
                if (!v)
                    break;
                while (*v && r >= 0) {
                    const char *s = v;
                    while (*v && !isspace((unsigned char)*v))
                        v++;
                    r = argv_append(&argv, &argc, &cap, &open, s, (size_t)(v - s));
                    while (*v && isspace((unsigned char)*v))
                        v++;
                    if (*v)
                        open = false;
                }
                break;
            }
        }
        if (r < 0)
            return r;
    }
    *ret_argv = TAKE_PTR(argv);
    return 0;
}

char *ks_grub_word_display(const ks_grub_word *w)
{
    size_t len = 1;
    char *s, *p;

    for (size_t i = 0; i < w->n; i++)
        len += strlen(w->parts[i].s) + 3;
    s = p = malloc(len);
    if (!s)
        return NULL;
    for (size_t i = 0; i < w->n; i++) {
        if (w->parts[i].type == KS_GRUB_PART_VAR || w->parts[i].type == KS_GRUB_PART_DQVAR)
            *p++ = '$';
        p = stpcpy(p, w->parts[i].s);
    }
    *p = '\0';
    return s;
}

const char *ks_grub_word_literal(const ks_grub_word *w, char **ret_buf)
{
    size_t len = 1;
    char *s, *p;

    *ret_buf = NULL;
    for (size_t i = 0; i < w->n; i++) {
        if (w->parts[i].type == KS_GRUB_PART_VAR || w->parts[i].type == KS_GRUB_PART_DQVAR)
            return NULL;
        len += strlen(w->parts[i].s);
    }
    if (w->n == 1)
        return w->parts[0].s;
    s = p = malloc(len);
    if (!s)
        return NULL;
    *p = '\0';
    for (size_t i = 0; i < w->n; i++)
        p = stpcpy(p, w->parts[i].s);
    *ret_buf = s;
    return s;
}

char *ks_grub_release_from_path(const char *path)
{
    static const char *const prefixes[] = {"vmlinuz-", "vmlinux-", "kernel-"};
    const char *base = strrchr(path, '/');

    base = base ? base + 1 : path;
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
        const char *r = ks_startswith(base, prefixes[i]);
        if (r && r[0])
            return strdup(r);
    }
    return NULL;
}

int ks_grub_entry_from_argv(char **argv, ks_grub_entry *ret)
{
    ks_grub_entry e = {0};
    bool opts = true;
    int r = -EINVAL;

    if (!argv[0])
        return -EINVAL;
    e.submenu = streq(argv[0], "submenu");
    /* GRUB's argument parser takes options anywhere; the first plain argument is the title. */
    for (size_t i = 1; argv[i]; i++) {
        static const char *const with_value[] = {"--class", "--users", "--hotkey", "--source",
                                                 "--id"};
        const char *a = argv[i], *val = NULL;
        size_t o;

        if (opts && streq(a, "--")) {
            opts = false;
            continue;
        }
        if (!opts || a[0] != '-' || !a[1]) {
            if (!e.title) {
                e.title = strdup(a);
                if (!e.title)
                    goto fail;
            }
            continue;
        }
        if (streq(a, "--unrestricted")) {
            e.unrestricted = true;
            continue;
        }
        for (o = 0; o < ARRAY_SIZE(with_value); o++) {
            const char *rest = ks_startswith(a, with_value[o]);
            if (rest && *rest == '=') {
                val = rest + 1;
                break;
            }
            if (rest && !*rest) {
                val = argv[i + 1];
                if (!val)
                    goto fail;
                i++;
                break;
            }
        }
        if (o == ARRAY_SIZE(with_value))
            goto fail; /* unknown option: GRUB refuses the whole menuentry */
        if (o == 0) {
            if (ks_strv_extend(&e.classes, val) < 0)
                goto fail;
        } else if (o == 1) {
            free(e.users);
            e.users = strdup(val);
        } else if (o == 4) {
            free(e.id);
            e.id = strdup(val);
            if (!e.id)
                goto fail;
        }
    }
    if (!e.title || !e.title[0])
        goto fail;
    *ret = e;
    return 0;
fail:
    ks_grub_entry_done(&e);
    return r;
}

static const char *static_lookup(const char *name, void *userdata)
{
    /* Every GRUB since 2.00 sets feature_menuentry_id=y, so 00_header makes this "--id". */
    return streq(name, "menuentry_id_option") ? "--id" : NULL;
}

static char *join_display(const ks_grub_node *n, size_t from)
{
    char *s = strdup("");
    for (size_t i = from; s && i < n->n_words; i++) {
        _cleanup_free_ char *w = ks_grub_word_display(&n->words[i]);
        char *t = w ? ks_asprintf("%s%s%s", s, s[0] ? " " : "", w) : NULL;
        free(s);
        s = t;
    }
    return s;
}

static bool has_word(const char *args, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = args; p && (p = strstr(p, word)); p += wl)
        if ((p == args || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\0'))
            return true;
    return false;
}

static void scan_block(ks_grub_entry *e, const ks_grub_block *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const ks_grub_node *n = b->v[i];
        _cleanup_free_ char *buf = NULL;
        const char *cmd;

        if (n->type == KS_GRUB_NODE_IF) {
            for (size_t j = 0; j < n->n_conds; j++)
                scan_block(e, &n->bodies[j]);
            if (n->else_body)
                scan_block(e, n->else_body);
            continue;
        }
        if (n->type != KS_GRUB_NODE_CMD || n->n_words < 2)
            continue;
        cmd = ks_grub_word_literal(&n->words[0], &buf);
        if (!cmd)
            continue;
        if (!e->linux_path &&
            (streq(cmd, "linux") || streq(cmd, "linux16") || streq(cmd, "linuxefi"))) {
            e->linux_path = ks_grub_word_display(&n->words[1]);
            e->release = e->linux_path ? ks_grub_release_from_path(e->linux_path) : NULL;
            e->linux_args = join_display(n, 2);
        } else if (!e->initrd &&
                   (streq(cmd, "initrd") || streq(cmd, "initrd16") || streq(cmd, "initrdefi"))) {
            e->initrd = join_display(n, 1);
        }
    }
}

void ks_grub_entry_scan_body(ks_grub_entry *e)
{
    const ks_grub_block *b = e->node ? e->node->body : NULL;
    if (!b)
        return;
    scan_block(e, b);
    e->recovery = (e->id && strstr(e->id, "-recovery-")) || has_word(e->linux_args, "recovery") ||
                  has_word(e->linux_args, "single");
}

/* The static menu tree: every menuentry/submenu, in every branch of every if. */
static int collect(const ks_grub_cfg *c, const ks_grub_block *b, ks_grub_entry **v, size_t *n,
                   size_t *cap, unsigned depth)
{
    int r;

    if (depth > MAX_DEPTH)
        return 0;
    for (size_t i = 0; i < b->n; i++) {
        const ks_grub_node *nd = b->v[i];
        _cleanup_strv_free_ char **argv = NULL;
        ks_grub_entry e = {0};
        size_t children_cap = 0;

        if (nd->type == KS_GRUB_NODE_IF) {
            for (size_t j = 0; j < nd->n_conds; j++) {
                r = collect(c, &nd->bodies[j], v, n, cap, depth + 1);
                if (r < 0)
                    return r;
            }
            if (nd->else_body) {
                r = collect(c, nd->else_body, v, n, cap, depth + 1);
                if (r < 0)
                    return r;
            }
            continue;
        }
        if (nd->type != KS_GRUB_NODE_CMD || !nd->body)
            continue;
        r = ks_grub_words_expand(nd->words, nd->n_words, static_lookup, NULL, &argv);
        if (r < 0)
            return r;
        if (!argv[0] || (!streq(argv[0], "menuentry") && !streq(argv[0], "submenu")))
            continue;
        if (ks_grub_entry_from_argv(argv, &e) < 0)
            continue;
        e.node = nd;
        if (e.submenu) {
            r = collect(c, nd->body, &e.children, &e.n_children, &children_cap, depth + 1);
        } else {
            ks_grub_entry_scan_body(&e);
            r = 0;
        }
        if (r >= 0 && !GREEDY_REALLOC(*v, *cap, *n + 1))
            r = -ENOMEM;
        if (r < 0) {
            ks_grub_entry_done(&e);
            return r;
        }
        (*v)[(*n)++] = e;
    }
    return 0;
}

int ks_grub_cfg_parse(const char *text, size_t len, ks_grub_cfg **ret, ks_grub_error *ret_error)
{
    ks_grub_cfg *c;
    ks_grub_error err = {0};
    lexer lx = {.line = 1, .col = 1, .err = &err};
    size_t entries_cap = 0;
    int r;

    if (len > MAX_TEXT)
        return -EFBIG;
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->text = malloc(len + 1);
    if (!c->text) {
        free(c);
        return -ENOMEM;
    }
    memcpy(c->text, text, len);
    c->text[len] = '\0';
    c->len = len;
    lx.s = c->text;
    lx.len = len;

    /* script: (statement delimiter newlines0)* ; the last delimiter may be the end. */
    for (;;) {
        ks_grub_node *n = NULL;
        unsigned nd;

        r = skip_newlines(&lx);
        if (r < 0)
            break;
        if (lx.type == T_EOF)
            break;
        r = parse_command(&lx, &n);
        if (r < 0)
            break;
        r = block_add(&c->script, n);
        if (r < 0)
            break;
        r = skip_delimiters(&lx, &nd);
        if (r < 0)
            break;
        if (nd == 0 && lx.type != T_EOF) {
            r = fail(&lx, lx.tline, lx.tcol, "unexpected %s after a command", tok_desc(&lx));
            break;
        }
    }
    tok_clear(&lx);
    c->lacks_write_support = TAKE_PTR(lx.lacks_write_support);
    if (r >= 0)
        r = collect(c, &c->script, &c->entries, &c->n_entries, &entries_cap, 0);
    if (r < 0) {
        if (r == -EBADMSG && ret_error)
            *ret_error = err;
        ks_grub_cfg_free(c);
        return r;
    }
    *ret = c;
    return 0;
}
