/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <getopt.h>
#include <langinfo.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "lib/basic/escape.h"
#include "lib/host/units.h"

static char *first_error;     /* the first ks_error message, for the JSON of a failure */
static json_object *json_doc; /* the command's one document, printed by ks_json_flush */

/* ---- the one way kswap prints ---- */

/* kswap's own escape sequences: the only strings a %s argument passes unescaped, known by
 * their address (the same bytes from data are escaped like any other). */
static const char sgr_green[] = "\033[32m", sgr_yellow[] = "\033[33m", sgr_red[] = "\033[1;31m",
                  sgr_bold[] = "\033[1m", sgr_reset[] = "\033[0m";

static bool own_sequence(const char *s)
{
    return s == sgr_green || s == sgr_yellow || s == sgr_red || s == sgr_bold || s == sgr_reset;
}

const char *ks_bold(bool on)
{
    return on ? sgr_bold : "";
}

const char *ks_bold_end(bool on)
{
    return on ? sgr_reset : "";
}

static unsigned escape_flags(void)
{
    return KS_ESCAPE_KEEP_NEWLINE | (ks_locale_is_utf8() ? KS_ESCAPE_UTF8 : 0);
}

/* The length of the escape unit or character at e (what a precision never cuts in two). */
static size_t unit_len(const char *e, size_t left)
{
    size_t n;

    if (e[0] == '\\' && left >= 2)
        return e[1] == 'x' ? 4 : e[1] == 'u' ? 6 : 2;
    n = ks_utf8_char(e, left, NULL);
    return n ? n : 1;
}

/* A string argument: escaped (unless one of kswap's own sequences), cut to precision at a unit
 * boundary, padded to width (in bytes, as printf does). */
static void put_string(FILE *out, const char *arg, bool left, int width, int precision)
{
    _cleanup_free_ char *e = NULL;
    const char *s = arg ? arg : "(null)";
    size_t len;

    if (!own_sequence(s)) {
        e = ks_escape_terminal(s, strlen(s), escape_flags());
        s = e ? e : "?";
    }
    len = strlen(s);
    if (precision >= 0 && len > (size_t)precision) {
        size_t n = 0;
        for (size_t u; n < len && n + (u = unit_len(s + n, len - n)) <= (size_t)precision;)
            n += u;
        len = n;
    }
    if (!left)
        for (size_t i = len; width > 0 && i < (size_t)width; i++)
            fputc(' ', out);
    fwrite(s, 1, len, out);
    if (left)
        for (size_t i = len; width > 0 && i < (size_t)width; i++)
            fputc(' ', out);
}

/*
 * One conversion other than %s, %c, %m and %%: the spec (flags, width and precision given as
 * numbers) with the argument of the type its length modifier and conversion name. The spec is
 * taken from a format the compiler checked against its arguments (ks_printf's _printf_).
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void put_other(FILE *out, const char *spec, const char *len, char conv, va_list *ap)
{
    if (strchr("diouxX", conv)) {
        bool sign = conv == 'd' || conv == 'i';
        if (streq(len, "ll") || streq(len, "q"))
            sign ? fprintf(out, spec, va_arg(*ap, long long))
                 : fprintf(out, spec, va_arg(*ap, unsigned long long));
        else if (streq(len, "l"))
            sign ? fprintf(out, spec, va_arg(*ap, long))
                 : fprintf(out, spec, va_arg(*ap, unsigned long));
        else if (streq(len, "j"))
            sign ? fprintf(out, spec, va_arg(*ap, intmax_t))
                 : fprintf(out, spec, va_arg(*ap, uintmax_t));
        else if (streq(len, "z") || streq(len, "Z"))
            sign ? fprintf(out, spec, va_arg(*ap, ssize_t))
                 : fprintf(out, spec, va_arg(*ap, size_t));
        else if (streq(len, "t"))
            fprintf(out, spec, va_arg(*ap, ptrdiff_t));
        else
            sign ? fprintf(out, spec, va_arg(*ap, int)) : fprintf(out, spec, va_arg(*ap, unsigned));
    } else if (strchr("eEfFgGaA", conv)) {
        if (streq(len, "L"))
            fprintf(out, spec, va_arg(*ap, long double));
        else
            fprintf(out, spec, va_arg(*ap, double));
    } else if (conv == 'p') {
        fprintf(out, spec, va_arg(*ap, void *));
    } else if (conv == 'n') {
        (void)va_arg(*ap, int *); /* kswap counts nothing so */
    }
}
#pragma GCC diagnostic pop

/* Reads digits or '*' (an int argument) at *p; -1 when there are none. */
static int spec_number(const char **p, va_list *ap)
{
    int v = -1;

    if (**p == '*') {
        (*p)++;
        return va_arg(*ap, int);
    }
    while (**p >= '0' && **p <= '9') {
        v = (v < 0 ? 0 : v * 10) + (**p - '0');
        (*p)++;
    }
    return v;
}

/* prefix, fmt with its arguments, suffix: written to f at once (prefix and suffix are kswap's). */
static void vprint(FILE *f, const char *prefix, const char *fmt, va_list ap_in, const char *suffix)
    __attribute__((format(printf, 3, 0)));

static void vprint(FILE *f, const char *prefix, const char *fmt, va_list ap_in, const char *suffix)
{
    _cleanup_free_ char *buf = NULL;
    int saved_errno = errno;
    size_t size = 0;
    va_list ap;
    FILE *out;

    /* The whole line is made first and written at once: a line interleaves with no other. */
    out = open_memstream(&buf, &size);
    if (!out)
        return;
    fputs(prefix, out);
    va_copy(ap, ap_in);
    for (const char *p = fmt; *p; p++) {
        char spec[64], len[3] = "", flags[8] = "";
        int width, precision = -1;
        size_t nf = 0;
        bool left, star;

        if (*p != '%') {
            fputc(*p, out);
            continue;
        }
        p++;
        while (*p && strchr("-+ #0'I", *p) && nf + 1 < sizeof(flags))
            flags[nf++] = *p++;
        flags[nf] = '\0';
        left = strchr(flags, '-') != NULL;
        star = *p == '*';
        width = spec_number(&p, &ap);
        if (star && width < 0) {
            /* a negative '*' width: left-justified in a field of its absolute value */
            left = true;
            width = width == INT_MIN ? INT_MAX : -width;
            if (!strchr(flags, '-') && nf + 1 < sizeof(flags))
                flags[nf++] = '-', flags[nf] = '\0';
        }
        if (*p == '.') {
            p++;
            star = *p == '*';
            precision = spec_number(&p, &ap);
            if (precision < 0)
                precision = star ? -1 : 0; /* a negative '*' precision: as if none */
        }
        for (size_t k = 0; *p && strchr("hlqLjzZt", *p) && k + 1 < sizeof(len); k++) {
            len[k] = *p++;
            len[k + 1] = '\0';
        }
        if (!*p)
            break;
        if (*p == '%') {
            fputc('%', out);
        } else if (*p == 's') {
            put_string(out, va_arg(ap, const char *), left, width, precision);
        } else if (*p == 'c') {
            char c[2] = {(char)va_arg(ap, int), '\0'};
            put_string(out, c, left, width, -1);
        } else if (*p == 'm') {
            put_string(out, strerror(saved_errno), left, width, precision);
        } else {
            snprintf(spec, sizeof(spec), "%%%s", flags);
            if (width >= 0)
                snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%d", width);
            if (precision >= 0)
                snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), ".%d", precision);
            snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%s%c", len, *p);
            put_other(out, spec, len, *p, &ap);
        }
    }
    va_end(ap);
    fputs(suffix, out);
    if (fclose(out) == 0 && size > 0)
        fwrite(buf, 1, size, f);
    errno = saved_errno;
}

void ks_vfprintf(FILE *f, const char *fmt, va_list ap)
{
    vprint(f, "", fmt, ap, "");
}

void ks_fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ks_vfprintf(f, fmt, ap);
    va_end(ap);
}

void ks_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ks_vfprintf(stdout, fmt, ap);
    va_end(ap);
}

static void vmsg(const char *level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void vmsg(const char *level, const char *fmt, va_list ap)
{
    char prefix[32];

    snprintf(prefix, sizeof(prefix), "kswap: %s", level);
    vprint(stderr, prefix, fmt, ap, "\n");
}

static void remember_error(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void remember_error(const char *fmt, va_list ap)
{
    if (!first_error && vasprintf(&first_error, fmt, ap) < 0)
        first_error = NULL;
}

void ks_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    remember_error(fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    vmsg("error: ", fmt, ap);
    va_end(ap);
}

const char *ks_first_error(void)
{
    return first_error;
}

static bool quiet;

void ks_set_quiet(bool q)
{
    quiet = q;
}

void ks_warn(const char *fmt, ...)
{
    va_list ap;
    if (quiet)
        return;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

void ks_lock_wait_print(void *userdata, const ks_lock_wait *w)
{
    static bool told;
    bool tty = isatty(STDERR_FILENO);
    _cleanup_free_ char *who = NULL;

    if (quiet)
        return;
    if (w->done) {
        /* The countdown line goes; the command's own lines follow. */
        if (tty && told)
            fputs("\r\033[K", stderr);
        told = false;
        return;
    }
    /* Without a terminal one line says it (cron, journald); on one the seconds count down. */
    if (told && !tty)
        return;
    who = w->holder > 0 ? ks_asprintf("pid %d%s%s%s", (int)w->holder, w->holder_command ? " (" : "",
                                      strempty(w->holder_command), w->holder_command ? ")" : "")
                        : strdup("another kswap");
    /* the holder's command line is data (any process can name itself): escaped like any other */
    if (tty)
        ks_fprintf(stderr,
                   "\r\033[Kkswap: waiting for the lock '/" KS_LOCK_PATH "', held by %s: %u s left",
                   who ? who : "another kswap", (w->remaining_ms + 999) / 1000);
    else
        ks_fprintf(stderr,
                   "kswap: waiting for the lock '/" KS_LOCK_PATH "', held by %s: %u s left\n",
                   who ? who : "another kswap", (w->remaining_ms + 999) / 1000);
    (void)userdata;
    told = true;
}

void ks_info(const ks_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    if (!ctx->verbose)
        return;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
}

static void usage_hint(const ks_cmd *cmd)
{
    ks_fprintf(stderr,
               "usage: kswap [global options] %s %s\n(run 'kswap help %s' for every option)\n",
               cmd->name, cmd->usage, cmd->name);
}

int ks_usage_error(const ks_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    remember_error(fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    vmsg("error: ", fmt, ap);
    va_end(ap);
    usage_hint(cmd);
    return KS_EXIT_ERROR;
}

int ks_print_json(json_object *o)
{
    /* One document per run: a second one would make stdout unparseable. */
    if (!o || json_doc)
        return KS_EXIT_OK;
    json_doc = json_object_get(o);
    return KS_EXIT_OK;
}

int ks_print_json_built(const char *what, ks_json_builder *b, json_object *o)
{
    assert(b);
    o = ks_jb_finish(b, o);
    if (!o) {
        ks_error("%s: cannot build the JSON document: %s", what, strerror(ENOMEM));
        return KS_EXIT_ERROR;
    }
    ks_print_json(o);
    json_object_put(o);
    return KS_EXIT_OK;
}

/* The document printed when the command handed none over, or its own could not be finished. */
static json_object *error_document(const ks_cmd *cmd, int exit_code)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b);

    ks_jb_add(&b, o, "command", ks_jb_string(&b, cmd ? cmd->name : NULL));
    ks_jb_add(&b, o, cmd && cmd->json_key ? cmd->json_key : "verdict",
              ks_jb_string(&b, exit_code == KS_EXIT_REFUSED ? "refused" : "error"));
    ks_jb_add(&b, o, "error", ks_jb_string(&b, first_error ? first_error : "failed"));
    ks_jb_add(&b, o, "exit_code", ks_jb_int(&b, exit_code));
    return ks_jb_finish(&b, o);
}

/*
 * Every document says which command made it, first: a copy of o with "command" in front
 * (json-c keeps keys in the order they were added). A document that has one keeps it (help's
 * "command" is the command it describes). NULL: out of memory (o is released).
 */
static json_object *with_command(json_object *o, const char *name)
{
    ks_json_builder b = {0};
    json_object *c;

    if (!json_object_is_type(o, json_type_object) || json_object_object_get_ex(o, "command", NULL))
        return o;
    c = ks_jb_object(&b);
    ks_jb_add(&b, c, "command", ks_jb_string(&b, name));
    json_object_object_foreach(o, key, value) ks_jb_add(&b, c, key, json_object_get(value));
    json_object_put(o);
    return ks_jb_finish(&b, c);
}

int ks_json_flush(const ks_cmd *cmd, bool json, int exit_code)
{
    json_object *o = json_doc;
    _cleanup_free_ char *s = NULL;

    json_doc = NULL;
    if (!json) {
        json_object_put(o);
        return exit_code;
    }
    if (o) {
        o = with_command(o, cmd ? cmd->name : NULL);
        if (!o) {
            ks_error("%s: cannot build the JSON document: %s", cmd ? cmd->name : "kswap",
                     strerror(ENOMEM));
            exit_code = KS_EXIT_ERROR;
        }
    }
    if (o) {
        ks_json_builder b = {0};
        ks_jb_add(&b, o, "exit_code", ks_jb_int(&b, exit_code));
        o = ks_jb_finish(&b, o);
        if (!o) {
            ks_error("%s: cannot build the JSON document: %s", cmd ? cmd->name : "kswap",
                     strerror(ENOMEM));
            exit_code = KS_EXIT_ERROR;
        }
    }
    /* The command failed before it had anything to show: still one document. */
    if (!o)
        o = error_document(cmd, exit_code);
    if (o)
        s = ks_json_to_utf8(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                   JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!s) {
        /* Not even the error document: stdout stays empty rather than half a document. */
        ks_error("cannot build the JSON document: %s", strerror(ENOMEM));
        exit_code = KS_EXIT_ERROR;
    } else if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
        ks_error("cannot write to standard output: %m");
        exit_code = KS_EXIT_ERROR;
    }
    json_object_put(o);
    return exit_code;
}

/* Levenshtein distance, enough for option and command names. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

    if (la >= ARRAY_SIZE(prev) || lb >= ARRAY_SIZE(prev))
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1,
                   sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            cur[j] = del < ins ? (del < sub ? del : sub) : (ins < sub ? ins : sub);
        }
        memcpy(prev, cur, sizeof(prev));
    }
    return prev[lb];
}

const char *ks_nearest(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX, limit = strlen(word) / 3 + 1;

    if (limit < 2)
        limit = 2;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

static const ks_option *option_by_val(const ks_cmd *cmd, int val)
{
    for (const ks_option *o = cmd->options; o && o->name; o++)
        if (o->val == val)
            return o;
    return NULL;
}

int ks_getopt(const ks_cmd *cmd, int argc, char **argv)
{
    struct option lo[32];
    _cleanup_free_ char *bad = NULL;
    char *names[64];
    size_t n = 0, nn = 0;
    const ks_option *o;
    const char *near;
    int c;

    for (o = cmd->options; o && o->name && n + 1 < ARRAY_SIZE(lo); o++)
        lo[n++] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->val};
    lo[n] = (struct option){0};

    opterr = 0; /* the messages are ours, one per mistake */
    c = getopt_long(argc, argv, ":", lo, NULL);
    if (c != '?' && c != ':')
        return c;

    if (c == ':' && (o = option_by_val(cmd, optopt)))
        return ks_usage_error(cmd, "option '--%s' needs an argument (%s)", o->name, o->arg),
               KS_OPT_ERROR;
    if (optopt && (o = option_by_val(cmd, optopt)))
        return ks_usage_error(cmd, "option '--%s' takes no argument", o->name), KS_OPT_ERROR;
    if (optopt)
        return ks_usage_error(cmd, "unknown option '-%c' for '%s'", optopt, cmd->name),
               KS_OPT_ERROR;

    bad = strdup(optind > 0 && optind <= argc ? argv[optind - 1] : "?");
    if (!bad)
        return ks_usage_error(cmd, "unknown option"), KS_OPT_ERROR;
    bad[strcspn(bad, "=")] = '\0';
    for (o = cmd->options; o && o->name && nn < ARRAY_SIZE(names) / 2; o++)
        if ((names[nn] = ks_asprintf("--%s", o->name)))
            nn++;
    for (o = ks_global_options; o->name && nn < ARRAY_SIZE(names); o++)
        if ((names[nn] = ks_asprintf("--%s", o->name)))
            nn++;
    near = ks_nearest(bad, (const char *const *)names, nn);
    if (near)
        ks_usage_error(cmd, "unknown option '%s' for '%s'; did you mean '%s'?", bad, cmd->name,
                       near);
    else
        ks_usage_error(cmd, "unknown option '%s' for '%s'", bad, cmd->name);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    return KS_OPT_ERROR;
}

static void print_option_table(const ks_option *opts)
{
    size_t w = 0;
    char buf[128];

    for (const ks_option *o = opts; o && o->name; o++) {
        size_t l = strlen(o->name) + 2 + (o->arg ? strlen(o->arg) + 1 : 0) + (o->letter ? 4 : 0);
        if (l > w)
            w = l;
    }
    for (const ks_option *o = opts; o && o->name; o++) {
        char letter[8] = "";
        if (o->letter)
            snprintf(letter, sizeof(letter), "-%c, ", o->letter);
        snprintf(buf, sizeof(buf), "%s--%s%s%s", letter, o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        ks_printf("  %-*s  %s", (int)w, buf, o->help);
        if (o->def)
            ks_printf(" (default: %s)", o->def);
        ks_printf("\n");
    }
}

void ks_print_command_help(const ks_cmd *cmd)
{
    ks_printf("usage: kswap [global options] %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
    if (cmd->options && cmd->options->name) {
        ks_printf("\noptions:\n");
        print_option_table(cmd->options);
    }
    ks_printf("\nglobal options (before or after the command):\n");
    print_option_table(ks_global_options);
    ks_printf("\nSee kswap(8) for what each step does, the JSON fields and the exit codes.\n");
}

static json_object *options_json(ks_json_builder *b, const ks_option *opts)
{
    json_object *a = ks_jb_array(b);
    for (const ks_option *o = opts; o && o->name; o++) {
        json_object *j = ks_jb_object(b);
        ks_jb_add(b, j, "name", ks_jb_string(b, o->name));
        ks_jb_add(b, j, "argument", ks_jb_string(b, o->arg));
        ks_jb_add(b, j, "help", ks_jb_string(b, o->help));
        ks_jb_add(b, j, "default", ks_jb_string(b, o->def));
        ks_jb_push(b, a, j);
    }
    return a;
}

json_object *ks_json_command_help(const ks_cmd *cmd)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b);
    ks_jb_add(&b, o, "command", ks_jb_string(&b, cmd ? cmd->name : NULL));
    ks_jb_add(&b, o, "usage", ks_jb_string(&b, cmd ? cmd->usage : NULL));
    ks_jb_add(&b, o, "summary", ks_jb_string(&b, cmd ? cmd->summary : NULL));
    if (cmd)
        ks_jb_add(&b, o, "options", options_json(&b, cmd->options));
    ks_jb_add(&b, o, "global_options", options_json(&b, ks_global_options));
    return ks_jb_finish(&b, o);
}

bool ks_want_color(ks_color_mode mode, int fd)
{
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");

    if (mode != KS_COLOR_AUTO)
        return mode == KS_COLOR_ALWAYS;
    /* no-color.org: only a non-empty NO_COLOR turns colour off */
    if (no_color && no_color[0])
        return false;
    if (term && streq(term, "dumb"))
        return false;
    return isatty(fd);
}

bool ks_locale_is_utf8(void)
{
    const char *cs = nl_langinfo(CODESET);
    return cs && (streq(cs, "UTF-8") || streq(cs, "utf8"));
}

/* A finding is counted once even when two steps report it (plan, then verify in apply). */
static bool seen_before(const ks_findings *f, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (streq(f->v[k].id, f->v[i].id) && streq_ptr(f->v[k].message, f->v[i].message))
            return true;
    return false;
}

static const struct {
    const char *prefix, *subject;
} subjects[] = {
    {"os", "operating system"},    {"virt", "virtualization"}, {"cpu", "CPU level"},
    {"secureboot", "Secure Boot"}, {"boot", "/boot"},          {"grub", "GRUB"},
    {"kernel", "kernel"},          {"modules", "modules"},     {"bbr", "BBR"},
    {"initrd", "initramfs"},       {"repo", "repository"},     {"config", "configuration"},
    {"accept", "acceptance"},      {"host", "host"},           {"metrics", "metrics"},
    {"history", "swap history"},
};

const char *ks_finding_subject(const char *id)
{
    size_t l = strcspn(id, ".");
    for (size_t i = 0; i < ARRAY_SIZE(subjects); i++)
        if (strlen(subjects[i].prefix) == l && strncmp(id, subjects[i].prefix, l) == 0)
            return subjects[i].subject;
    return id;
}

int ks_accept_unit_finding(const ks_ctx *ctx, ks_findings *f)
{
    _cleanup_free_ char *how = NULL;
    ks_unit_state s;
    int r = ks_unit_state_get(ctx->root, KS_ACCEPT_UNIT, &s, &how);

    if (r < 0)
        return r;
    if (s == KS_UNIT_ENABLED)
        r = ks_findings_add(f, "accept.unit-disabled", KS_SEV_OK, NULL,
                            KS_ACCEPT_UNIT " starts at boot (%s)", how);
    else if (s == KS_UNIT_DISABLED)
        r = ks_findings_add(f, "accept.unit-disabled", KS_SEV_WARN,
                            "systemctl enable " KS_ACCEPT_UNIT,
                            KS_ACCEPT_UNIT " is installed but not enabled (%s): the trial boot "
                                           "would run unjudged",
                            how);
    else if (s == KS_UNIT_MASKED)
        r = ks_findings_add(
            f, "accept.unit-disabled", KS_SEV_WARN,
            "systemctl unmask " KS_ACCEPT_UNIT " && systemctl enable " KS_ACCEPT_UNIT,
            KS_ACCEPT_UNIT " is masked (%s): the trial boot would run unjudged", how);
    else if (s == KS_UNIT_RUNTIME)
        r = ks_findings_add(f, "accept.unit-disabled", KS_SEV_WARN,
                            "systemctl enable " KS_ACCEPT_UNIT,
                            KS_ACCEPT_UNIT " is enabled for this boot only (%s): the trial boot "
                                           "would run unjudged",
                            how);
    else
        r = ks_findings_add(f, "accept.unit-disabled", KS_SEV_WARN,
                            "install kswap's package, or copy " KS_ACCEPT_UNIT
                            " to /etc/systemd/system, then systemctl enable " KS_ACCEPT_UNIT,
                            KS_ACCEPT_UNIT " is not installed (%s): the trial boot would run "
                                           "unjudged",
                            how);
    return r < 0 ? r : s == KS_UNIT_ENABLED;
}

json_object *ks_json_findings(const ks_findings *f)
{
    ks_json_builder b = {0};
    json_object *a = ks_jb_array(&b);

    assert(f);
    for (size_t i = 0; i < f->n; i++) {
        if (seen_before(f, i))
            continue;
        json_object *o = ks_jb_object(&b);
        ks_jb_add(&b, o, "id", ks_jb_string(&b, f->v[i].id));
        ks_jb_add(&b, o, "severity", ks_jb_string(&b, ks_severity_to_string(f->v[i].severity)));
        ks_jb_add(&b, o, "message", ks_jb_string(&b, f->v[i].message));
        ks_jb_add(&b, o, "remedy", ks_jb_string(&b, f->v[i].remedy));
        ks_jb_push(&b, a, o);
    }
    return ks_jb_finish(&b, a);
}

const char *ks_color(const ks_ctx *ctx, ks_severity s)
{
    if (!ctx->color)
        return "";
    switch (s) {
    case KS_SEV_OK:
        return sgr_green;
    case KS_SEV_WARN:
        return sgr_yellow;
    default:
        return sgr_red;
    }
}

const char *ks_color_reset(const ks_ctx *ctx)
{
    return ctx->color ? sgr_reset : "";
}

void ks_print_findings(const ks_ctx *ctx, const ks_findings *f)
{
    static const char *const marks[_KS_SEV_MAX] = {"ok", "WARN", "BLOCK"};
    size_t w = 0;

#define LABEL(x) ((x)->severity == KS_SEV_OK ? ks_finding_subject((x)->id) : (x)->id)
    for (size_t i = 0; i < f->n; i++)
        if (strlen(LABEL(&f->v[i])) > w)
            w = strlen(LABEL(&f->v[i]));
    for (size_t i = 0; i < f->n; i++) {
        const ks_finding *x = &f->v[i];
        if (seen_before(f, i))
            continue;
        /* A passed check reads as what was checked; a problem keeps its id to look up. */
        ks_printf("  %s%-5s%s  %-*s  %s\n", ks_color(ctx, x->severity), marks[x->severity],
                  ks_color_reset(ctx), (int)w, LABEL(x), x->message);
        if (x->remedy && x->severity != KS_SEV_OK)
            ks_printf("  %-5s  %-*s  -> %s\n", "", (int)w, "", x->remedy);
    }
#undef LABEL
}

/* word as the shell reads it back: as it is when only safe characters, else in single quotes. */
static char *shell_word(const char *word)
{
    size_t n = strlen(word), extra = 0;
    char *out, *o;

    if (n > 0 && strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                              "_./:=+-@%,") == n)
        return strdup(word);
    for (const char *p = word; *p; p++)
        extra += *p == '\'' ? 3 : 0;
    o = out = malloc(n + extra + 3);
    if (!out)
        return NULL;
    *o++ = '\'';
    for (const char *p = word; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else
            *o++ = *p;
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

char *ks_command_line(const ks_ctx *ctx, const char *command)
{
    _cleanup_free_ char *root = NULL, *config = NULL;

    if (!ks_root_is_host(ctx->root) && !(root = shell_word(ks_root_path(ctx->root))))
        return NULL;
    if (ctx->config_path && !(config = shell_word(ctx->config_path)))
        return NULL;
    return ks_asprintf("kswap%s%s%s%s %s", root ? " --root " : "", strempty(root),
                       config ? " --config " : "", strempty(config), command);
}

json_object *ks_json_update(const ks_update *u, const char *apply_command)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b);

    ks_jb_add(&b, o, "available", ks_jb_bool(&b, u->newest != NULL));
    ks_jb_add(&b, o, "current", ks_jb_string(&b, u->current));
    ks_jb_add(&b, o, "package", ks_jb_string(&b, u->package));
    ks_jb_add(&b, o, "newest", ks_jb_string(&b, u->newest));
    ks_jb_add(&b, o, "installed", ks_jb_bool(&b, u->installed));
    ks_jb_add(&b, o, "package_version", ks_jb_string(&b, u->package_version));
    ks_jb_add(&b, o, "seen_in", ks_jb_string(&b, u->seen_in));
    ks_jb_add(&b, o, "command", ks_jb_string(&b, u->newest ? apply_command : NULL));
    return ks_jb_finish(&b, o);
}
