/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <limits.h>

#include "grub/eval.h"
#include "grub/resolve.h"

#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"

#define MAX_STEPS 200000u
#define MAX_CALLS 64
#define MAX_LOOP 1000u
#define MAX_VALUE (64u << 10)    /* a longer variable is a runaway script, not a boot setup */
#define MAX_EXPANDED (64u << 20) /* bytes of arguments one run may build in all */

typedef struct var {
    char *name;
    char *value;
    bool exported;
} var;

typedef struct context {
    var *v;
    size_t n, cap;
} context;

typedef struct func {
    char *name;
    const ks_grub_block *body;
} func;

typedef struct menu {
    ks_grub_entry *v;
    size_t n, cap;
} menu;

struct ks_grub_eval {
    const ks_grub_cfg *cfg;
    context *ctx; /* a stack: the last one is current */
    size_t n_ctx, ctx_cap;
    func *funcs;
    size_t n_funcs, funcs_cap;
    char **args; /* $1.. of the function or entry running */
    unsigned calls;
    ks_grubenv *env;
    bool env_writable;
    bool registering; /* running a submenu body only to collect its entries */
    menu top;
    menu *cur_menu;
    int status;
    unsigned steps;
    size_t expanded; /* bytes of arguments built so far, against MAX_EXPANDED */
    bool returning, breaking, stopped;
    bool efi; /* grub_platform=efi: fwsetup exists */
    unsigned save_env_failures;
    char **notes;
    /* what the entry being run did */
    bool loaded, halted, firmware_setup;
    char *linux_path, *linux_args;
    char **initrds; /* the last initrd command's files, since the last linux command */
};

/* ---- variables ---- */

static context *cur_ctx(const ks_grub_eval *ev)
{
    return &ev->ctx[ev->n_ctx - 1];
}

static var *find_var(const ks_grub_eval *ev, const char *name)
{
    context *c = cur_ctx(ev);
    for (size_t i = 0; i < c->n; i++)
        if (streq(c->v[i].name, name))
            return &c->v[i];
    return NULL;
}

const char *ks_grub_eval_get(const ks_grub_eval *ev, const char *name)
{
    var *v = find_var(ev, name);
    return v ? v->value : NULL;
}

static int var_set(ks_grub_eval *ev, const char *name, const char *value, bool exported)
{
    var *v = find_var(ev, name);
    context *c = cur_ctx(ev);
    char *nv;

    if (strlen(value) > MAX_VALUE)
        return -E2BIG;
    nv = strdup(value);
    if (!nv)
        return -ENOMEM;
    if (v) {
        free(v->value);
        v->value = nv;
        v->exported = v->exported || exported;
        return 0;
    }
    if (!GREEDY_REALLOC(c->v, c->cap, c->n + 1)) {
        free(nv);
        return -ENOMEM;
    }
    v = c->v;
    v[c->n].name = strdup(name);
    if (!v[c->n].name) {
        free(nv);
        return -ENOMEM;
    }
    v[c->n].value = nv;
    v[c->n].exported = exported;
    c->n++;
    return 0;
}

int ks_grub_eval_set(ks_grub_eval *ev, const char *name, const char *value)
{
    return var_set(ev, name, value, false);
}

static void var_unset(ks_grub_eval *ev, const char *name)
{
    context *c = cur_ctx(ev);
    var *v = find_var(ev, name);
    if (!v)
        return;
    free(v->name);
    free(v->value);
    *v = c->v[--c->n];
}

static void ctx_free(context *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].name);
        free(c->v[i].value);
    }
    free(c->v);
    c->v = NULL;
    c->n = c->cap = 0;
}

/* grub_env_context_open(): a new context holding copies of the exported variables. */
static int ctx_open(ks_grub_eval *ev)
{
    context *old;
    int r;

    if (!GREEDY_REALLOC(ev->ctx, ev->ctx_cap, ev->n_ctx + 1))
        return -ENOMEM;
    old = &ev->ctx[ev->n_ctx - 1];
    ev->ctx[ev->n_ctx++] = (context){0};
    for (size_t i = 0; i < old->n; i++)
        if (old->v[i].exported) {
            r = var_set(ev, old->v[i].name, old->v[i].value, true);
            if (r < 0)
                return r;
        }
    return 0;
}

static void ctx_close(ks_grub_eval *ev)
{
    if (ev->n_ctx <= 1)
        return;
    ctx_free(&ev->ctx[--ev->n_ctx]);
}

static const char *lookup(const char *name, void *userdata)
{
    ks_grub_eval *ev = userdata;
    static char buf[16];

    if (streq(name, "?")) {
        snprintf(buf, sizeof(buf), "%d", ev->status);
        return buf;
    }
    if (streq(name, "#")) {
        snprintf(buf, sizeof(buf), "%zu", ks_strv_length(ev->args));
        return buf;
    }
    if (isdigit((unsigned char)name[0])) {
        unsigned long n = strtoul(name, NULL, 10);
        if (n == 0 || n > ks_strv_length(ev->args))
            return NULL;
        return ev->args[n - 1];
    }
    if (streq(name, "*") || streq(name, "@"))
        return NULL; /* not used by generated configs */
    return ks_grub_eval_get(ev, name);
}

/* ---- life cycle ---- */

static void menu_free(menu *m)
{
    for (size_t i = 0; i < m->n; i++)
        ks_grub_entry_done(&m->v[i]);
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

ks_grub_eval *ks_grub_eval_free(ks_grub_eval *ev)
{
    if (!ev)
        return NULL;
    for (size_t i = 0; i < ev->n_ctx; i++)
        ctx_free(&ev->ctx[i]);
    free(ev->ctx);
    for (size_t i = 0; i < ev->n_funcs; i++)
        free(ev->funcs[i].name);
    free(ev->funcs);
    ks_grubenv_free(ev->env);
    menu_free(&ev->top);
    ks_strv_free(ev->notes);
    free(ev->linux_path);
    free(ev->linux_args);
    ks_strv_free(ev->initrds);
    free(ev);
    return NULL;
}

int ks_grub_eval_new(const ks_grub_cfg *cfg, const ks_grub_eval_opts *opts, ks_grub_eval **ret)
{
    /* normal.mod sets these features to "y" and exports them (grub-core/normal/main.c). */
    static const char *const features[] = {
        "feature_chainloader_bpb",      "feature_ntldr",
        "feature_platform_search_hint", "feature_default_font_path",
        "feature_all_video_module",     "feature_menuentry_id",
        "feature_menuentry_options",    "feature_200_final",
        "feature_nativedisk_cmd",       "feature_timeout_style",
    };
    ks_grub_eval *ev = calloc(1, sizeof(*ev));
    int r = -ENOMEM;

    if (!ev)
        return -ENOMEM;
    ev->cfg = cfg;
    ev->cur_menu = &ev->top;
    ev->env_writable = opts && opts->env_writable;
    ev->efi = opts && opts->efi;
    ev->ctx = calloc(1, sizeof(context));
    if (!ev->ctx)
        goto fail;
    ev->n_ctx = 1;
    if (opts && opts->env) {
        r = ks_grubenv_dup(opts->env, &ev->env);
        if (r < 0)
            goto fail;
    }
    for (size_t i = 0; i < ARRAY_SIZE(features); i++)
        if ((r = var_set(ev, features[i], "y", true)) < 0)
            goto fail;
    if ((r = var_set(ev, "grub_platform", opts && opts->efi ? "efi" : "pc", true)) < 0 ||
        (r = var_set(ev, "grub_cpu", opts && opts->efi ? "x86_64" : "i386", true)) < 0 ||
        (r = var_set(ev, "root", "hd0,msdos1", true)) < 0 ||
        (r = var_set(ev, "prefix", "(hd0,msdos1)/boot/grub", true)) < 0)
        goto fail;
    *ret = ev;
    return 0;
fail:
    ks_grub_eval_free(ev);
    return r;
}

int ks_grub_eval_status(const ks_grub_eval *ev)
{
    return ev->status;
}

const ks_grub_entry *ks_grub_eval_menu(const ks_grub_eval *ev, size_t *ret_n)
{
    *ret_n = ev->top.n;
    return ev->top.v;
}

const ks_grubenv *ks_grub_eval_env(const ks_grub_eval *ev)
{
    return ev->env;
}

unsigned ks_grub_eval_save_env_failures(const ks_grub_eval *ev)
{
    return ev->save_env_failures;
}

char **ks_grub_eval_notes(const ks_grub_eval *ev)
{
    return ev->notes;
}

static int note(ks_grub_eval *ev, char **argv)
{
    _cleanup_free_ char *s = NULL;
    for (size_t i = 0; argv[i]; i++) {
        char *t = ks_asprintf("%s%s%s", strempty(s), s ? " " : "", argv[i]);
        if (!t)
            return -ENOMEM;
        free(s);
        s = t;
    }
    if (ks_strv_contains(ev->notes, s))
        return 0;
    return ks_strv_push(&ev->notes, TAKE_PTR(s));
}

/* ---- test / [ (grub-core/commands/test.c) ---- */

static bool file_exists(ks_grub_eval *ev, const char *path, bool *ret_dir)
{
    const char *prefix = ks_grub_eval_get(ev, "prefix");
    _cleanup_free_ char *envpath = prefix ? ks_asprintf("%s/grubenv", prefix) : NULL;

    *ret_dir = false;
    if (prefix && streq(path, prefix)) {
        *ret_dir = true;
        return true;
    }
    return ev->env && envpath && (streq(path, envpath) || streq(path, "/boot/grub/grubenv"));
}

typedef struct test_ctx {
    bool and, or, invert;
} test_ctx;

static void update_val(bool val, test_ctx *c)
{
    c->and = c->and &&(c->invert ? !val : val);
    c->invert = false;
}

static long strtosl(const char *s)
{
    /* grub_strtol(s, 0, 0): an optional '-', then grub_strtoull's digits; 0 without digits,
     * LONG_MIN/LONG_MAX when out of range */
    unsigned long long m;
    bool neg = false;
    int r;

    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-') {
        neg = true;
        s++;
    }
    r = ks_grub_strtoull(s, &m);
    if (r == -EINVAL)
        return 0;
    if (neg)
        return r < 0 || m > (unsigned long long)LONG_MAX + 1 ? LONG_MIN : (long)(0 - m);
    return r < 0 || m > LONG_MAX ? LONG_MAX : (long)m;
}

static bool test_parse(ks_grub_eval *ev, char **args, int *argn, int argc, int *depth)
{
    test_ctx c = {.and = true};

    while (*argn < argc) {
        const char *a = args[*argn];
        if (*argn + 2 < argc) {
            const char *op = args[*argn + 1], *b = args[*argn + 2];
            int cmp = strcmp(a, b);
            int r = -1;
            if (streq(op, "=") || streq(op, "=="))
                r = cmp == 0;
            else if (streq(op, "!="))
                r = cmp != 0;
            else if (streq(op, "<"))
                r = cmp < 0;
            else if (streq(op, "<="))
                r = cmp <= 0;
            else if (streq(op, ">"))
                r = cmp > 0;
            else if (streq(op, ">="))
                r = cmp >= 0;
            else if (streq(op, "-eq"))
                r = strtosl(a) == strtosl(b);
            else if (streq(op, "-ge"))
                r = strtosl(a) >= strtosl(b);
            else if (streq(op, "-gt"))
                r = strtosl(a) > strtosl(b);
            else if (streq(op, "-le"))
                r = strtosl(a) <= strtosl(b);
            else if (streq(op, "-lt"))
                r = strtosl(a) < strtosl(b);
            else if (streq(op, "-ne"))
                r = strtosl(a) != strtosl(b);
            else if (!strncmp(op, "-nt", 3) || !strncmp(op, "-ot", 3) || streq(op, "-pgt") ||
                     streq(op, "-plt"))
                r = 0; /* file times and version prefixes: not used by 00_header */
            if (r >= 0) {
                update_val(r, &c);
                *argn += 3;
                continue;
            }
        }
        if (*argn + 1 < argc) {
            const char *b = args[*argn + 1];
            bool dir, ex;
            int r = -1;
            if (streq(a, "-d")) {
                ex = file_exists(ev, b, &dir);
                r = ex && dir;
            } else if (streq(a, "-e")) {
                r = file_exists(ev, b, &dir);
            } else if (streq(a, "-f") || streq(a, "-s")) {
                ex = file_exists(ev, b, &dir);
                r = ex && !dir;
            } else if (streq(a, "-n")) {
                r = b[0] != '\0';
            } else if (streq(a, "-z")) {
                r = b[0] == '\0';
            }
            if (r >= 0) {
                update_val(r, &c);
                *argn += 2;
                continue;
            }
        }
        if (streq(a, ")")) {
            (*argn)++;
            if (*depth > 0)
                (*depth)--;
            return c.or || c.and;
        }
        if (streq(a, "(")) {
            (*argn)++;
            if (++(*depth) > 100)
                return c.or || c.and;
            update_val(test_parse(ev, args, argn, argc, depth), &c);
            continue;
        }
        if (streq(a, "!")) {
            c.invert = !c.invert;
            (*argn)++;
            continue;
        }
        if (streq(a, "-a")) {
            (*argn)++;
            continue;
        }
        if (streq(a, "-o")) {
            c.or = c.or || c.and;
            c.and = true;
            (*argn)++;
            continue;
        }
        update_val(a[0] != '\0', &c);
        (*argn)++;
    }
    return c.or || c.and;
}

static int cmd_test(ks_grub_eval *ev, char **argv)
{
    int argc = (int)ks_strv_length(argv) - 1, argn = 0, depth = 0;
    char **args = argv + 1;

    if (argc >= 1 && streq(args[argc - 1], "]"))
        argc--;
    return test_parse(ev, args, &argn, argc, &depth) ? 0 : 1;
}

/* ---- environment block commands (grub-core/commands/loadenv.c) ---- */

/* -f FILE / --file=FILE and --skip-sig; returns the first plain argument's index. */
static int env_options(char **argv, bool *ret_other_file)
{
    int i = 1;
    *ret_other_file = false;
    for (; argv[i]; i++) {
        if (streq(argv[i], "-f") || streq(argv[i], "--file")) {
            *ret_other_file = true;
            if (argv[i + 1])
                i++;
        } else if (ks_startswith(argv[i], "--file=")) {
            *ret_other_file = true;
        } else if (streq(argv[i], "-s") || streq(argv[i], "--skip-sig")) {
            continue;
        } else {
            break;
        }
    }
    return i;
}

static int cmd_load_env(ks_grub_eval *ev, char **argv)
{
    bool other;
    int first = env_options(argv, &other), k;

    if (other || !ev->env)
        return 1; /* file not found */
    for (size_t i = 0; i < ks_grubenv_count(ev->env); i++) {
        const char *name = ks_grubenv_name(ev->env, i);
        if (argv[first] && !ks_strv_contains(argv + first, name))
            continue;
        k = var_set(ev, name, ks_grubenv_value(ev->env, i), false);
        if (k < 0)
            return k;
    }
    return 0;
}

static int cmd_save_env(ks_grub_eval *ev, char **argv)
{
    _cleanup_grubenv_ ks_grubenv *copy = NULL;
    bool other;
    int first = env_options(argv, &other), k;

    if (!argv[first])
        return 1; /* "no variable is specified" */
    if (ev->registering)
        return 0;
    if (other || !ev->env || !ev->env_writable) {
        /* GRUB prints the error and goes on; the block keeps what it had. */
        ev->save_env_failures++;
        return 1;
    }
    k = ks_grubenv_dup(ev->env, &copy);
    if (k < 0)
        return k;
    for (int i = first; argv[i]; i++) {
        const char *v = ks_grub_eval_get(ev, argv[i]);
        k = v ? ks_grubenv_set(copy, argv[i], v) : ks_grubenv_unset(copy, argv[i]);
        if (k == -ENOSPC || k == -EINVAL) {
            /* "environment block too small": nothing is written */
            ev->save_env_failures++;
            return 1;
        }
        if (k < 0)
            return k;
    }
    ks_grubenv_free(ev->env);
    ev->env = TAKE_PTR(copy);
    return 0;
}

/* ---- execution ---- */

static int exec_block(ks_grub_eval *ev, const ks_grub_block *b);

static const ks_grub_block *find_func(const ks_grub_eval *ev, const char *name)
{
    for (size_t i = 0; i < ev->n_funcs; i++)
        if (streq(ev->funcs[i].name, name))
            return ev->funcs[i].body;
    return NULL;
}

static int call_block(ks_grub_eval *ev, const ks_grub_block *body, char **args)
{
    char **saved = ev->args;
    int r;

    if (ev->calls >= MAX_CALLS)
        return 1;
    ev->calls++;
    ev->args = args;
    r = exec_block(ev, body);
    ev->args = saved;
    ev->calls--;
    ev->returning = false;
    return r < 0 ? r : ev->status;
}

static int register_entry(ks_grub_eval *ev, const ks_grub_node *n, char **argv)
{
    ks_grub_entry e = {0};
    menu *saved = ev->cur_menu;
    int r;

    if (ks_grub_entry_from_argv(argv, &e) < 0)
        return 1; /* GRUB refuses the entry and goes on */
    e.node = n;
    if (e.submenu) {
        /* Collect the submenu's entries the way its body will register them when chosen: in
         * a new context that sees only exported variables. */
        menu sub = {0};
        bool was = ev->registering;
        r = ctx_open(ev);
        if (r < 0) {
            ks_grub_entry_done(&e);
            return r;
        }
        ev->cur_menu = &sub;
        ev->registering = true;
        r = call_block(ev, n->body, NULL);
        ev->registering = was;
        ev->stopped = false;
        ev->cur_menu = saved;
        ctx_close(ev);
        e.children = sub.v;
        e.n_children = sub.n;
        if (r < 0) {
            ks_grub_entry_done(&e);
            return r;
        }
    } else {
        ks_grub_entry_scan_body(&e);
    }
    if (!GREEDY_REALLOC(ev->cur_menu->v, ev->cur_menu->cap, ev->cur_menu->n + 1)) {
        ks_grub_entry_done(&e);
        return -ENOMEM;
    }
    ev->cur_menu->v[ev->cur_menu->n++] = e;
    return 0;
}

static int exec_cmd(ks_grub_eval *ev, const ks_grub_node *n)
{
    _cleanup_strv_free_ char **argv = NULL;
    const ks_grub_block *fn;
    const char *c;
    int r;

    r = ks_grub_words_expand(n->words, n->n_words, lookup, ev, &argv);
    if (r < 0)
        return r;
    for (size_t i = 0; argv[i]; i++)
        ev->expanded += strlen(argv[i]) + 1;
    if (ev->expanded > MAX_EXPANDED)
        return -ELOOP;
    if (!argv[0])
        return 0;
    c = argv[0];

    if (n->body && (streq(c, "menuentry") || streq(c, "submenu")))
        return register_entry(ev, n, argv);
    if (streq(c, "set")) {
        char *eq;
        if (!argv[1])
            return 0;
        eq = strchr(argv[1], '=');
        if (!eq)
            return 1;
        *eq = '\0';
        r = var_set(ev, argv[1], eq + 1, false);
        return r < 0 ? r : 0;
    }
    if (streq(c, "unset")) {
        for (size_t i = 1; argv[i]; i++)
            var_unset(ev, argv[i]);
        return 0;
    }
    if (streq(c, "export")) {
        for (size_t i = 1; argv[i]; i++) {
            const char *v = ks_grub_eval_get(ev, argv[i]);
            _cleanup_free_ char *copy = strdup(v ? v : "");
            if (!copy)
                return -ENOMEM;
            r = var_set(ev, argv[i], copy, true);
            if (r < 0)
                return r;
        }
        return 0;
    }
    if (streq(c, "[") || streq(c, "test"))
        return cmd_test(ev, argv);
    if (streq(c, "true"))
        return 0;
    if (streq(c, "false"))
        return 1;
    if (streq(c, "load_env"))
        return cmd_load_env(ev, argv);
    if (streq(c, "save_env"))
        return cmd_save_env(ev, argv);
    if (streq(c, "linux") || streq(c, "linux16") || streq(c, "linuxefi")) {
        _cleanup_free_ char *args = NULL;
        if (!argv[1] || ev->registering)
            return 1;
        for (size_t i = 2; argv[i]; i++) {
            char *t = ks_asprintf("%s%s%s", strempty(args), args ? " " : "", argv[i]);
            if (!t)
                return -ENOMEM;
            free(args);
            args = t;
        }
        free(ev->linux_path);
        free(ev->linux_args);
        ev->linux_path = strdup(argv[1]);
        ev->linux_args = TAKE_PTR(args);
        /* A new kernel drops the initrd loaded before it (grub-core/loader/i386/linux.c). */
        ev->initrds = ks_strv_free(ev->initrds);
        ev->loaded = true;
        return 0;
    }
    if (streq(c, "initrd") || streq(c, "initrd16") || streq(c, "initrdefi")) {
        _cleanup_strv_free_ char **files = NULL;
        if (ev->registering || !ev->loaded)
            return 1; /* "you need to load the kernel first" */
        for (size_t i = 1; argv[i]; i++) {
            if (ks_startswith(argv[i], "--")) /* --nounzip and the like: not a file */
                continue;
            r = ks_strv_extend(&files, argv[i]);
            if (r < 0)
                return r;
        }
        ks_strv_free(ev->initrds);
        ev->initrds = TAKE_PTR(files);
        return 0;
    }
    if (streq(c, "fwsetup")) {
        /* grub-core/commands/efi/efifwsetup.c, EFI only: --is-supported answers whether the
         * firmware offers its setup UI (OVMF and servers' firmware do); without arguments it
         * reboots into that UI, which waits for someone at the console. */
        if (!ev->efi)
            return 1; /* no such command on i386-pc: an error */
        if (argv[1] || ev->registering)
            return 0;
        ev->firmware_setup = true;
        ev->stopped = true;
        return 0;
    }
    if (streq(c, "lsefi"))
        return ev->efi ? 0 : 1; /* grub-core/commands/efi/lsefi.c: EFI only, like fwsetup */
    if (streq(c, "halt") || streq(c, "reboot") || streq(c, "poweroff")) {
        if (ev->registering)
            return 0;
        ev->halted = true;
        ev->stopped = true;
        return 0;
    }
    if (streq(c, "boot")) {
        ev->stopped = !ev->registering;
        return 0;
    }
    if (streq(c, "return")) {
        ev->returning = true;
        return argv[1] ? (int)strtol(argv[1], NULL, 0) & 0xff : ev->status;
    }
    if (streq(c, "break")) {
        ev->breaking = true;
        return 0;
    }
    if (streq(c, "source") || streq(c, "configfile") || streq(c, ".") || streq(c, "normal") ||
        streq(c, "extract_entries_source") || streq(c, "extract_entries_configfile")) {
        /* Files are not modelled: only $prefix/grubenv exists. */
        r = note(ev, argv);
        return r < 0 ? r : 1;
    }
    /* Builtins come first in GRUB; the header's functions have names no builtin has. */
    fn = find_func(ev, c);
    if (fn)
        return call_block(ev, fn, argv + 1);
    if (strchr(c, '=') && c[0] != '=') {
        /* NAME=VALUE: execute.c's assignment form */
        char *eq = strchr(argv[0], '=');
        *eq = '\0';
        r = var_set(ev, argv[0], eq + 1, false);
        return r < 0 ? r : 0;
    }
    return 0; /* insmod, search, loadfont, terminal_output, echo, initrd, ...: succeed */
}

static int exec_node(ks_grub_eval *ev, const ks_grub_node *n)
{
    int r = 0;

    if (++ev->steps > MAX_STEPS)
        return -ELOOP;
    switch (n->type) {
    case KS_GRUB_NODE_CMD:
        r = exec_cmd(ev, n);
        break;
    case KS_GRUB_NODE_FUNCTION: {
        func *f;
        for (size_t i = 0; i < ev->n_funcs; i++)
            if (streq(ev->funcs[i].name, n->name)) {
                ev->funcs[i].body = n->body;
                return 0;
            }
        if (!GREEDY_REALLOC(ev->funcs, ev->funcs_cap, ev->n_funcs + 1))
            return -ENOMEM;
        f = ev->funcs;
        f[ev->n_funcs].name = strdup(n->name);
        if (!f[ev->n_funcs].name)
            return -ENOMEM;
        f[ev->n_funcs++].body = n->body;
        return 0;
    }
    case KS_GRUB_NODE_IF: {
        size_t i;
        for (i = 0; i < n->n_conds; i++) {
            r = exec_block(ev, &n->conds[i]);
            if (r < 0 || ev->stopped || ev->returning)
                return r;
            if (ev->status == 0) {
                r = exec_block(ev, &n->bodies[i]);
                break;
            }
        }
        if (i == n->n_conds && n->else_body)
            r = exec_block(ev, n->else_body);
        else if (i == n->n_conds)
            ev->status = 0;
        return r < 0 ? r : 0;
    }
    case KS_GRUB_NODE_FOR: {
        _cleanup_strv_free_ char **list = NULL;
        r = ks_grub_words_expand(n->words, n->n_words, lookup, ev, &list);
        if (r < 0)
            return r;
        for (size_t i = 0; list[i] && !ev->stopped && !ev->returning; i++) {
            r = var_set(ev, n->name, list[i], false);
            if (r >= 0)
                r = exec_block(ev, n->body);
            if (r < 0)
                return r;
            if (ev->breaking) {
                ev->breaking = false;
                break;
            }
        }
        return 0;
    }
    case KS_GRUB_NODE_WHILE:
    case KS_GRUB_NODE_UNTIL:
        for (unsigned it = 0; it < MAX_LOOP && !ev->stopped && !ev->returning; it++) {
            r = exec_block(ev, &n->conds[0]);
            if (r < 0)
                return r;
            if ((ev->status == 0) != (n->type == KS_GRUB_NODE_WHILE))
                break;
            r = exec_block(ev, n->body);
            if (r < 0)
                return r;
            if (ev->breaking) {
                ev->breaking = false;
                break;
            }
        }
        return 0;
    }
    if (r == -E2BIG)
        r = 1; /* GRUB runs out of memory there: the command fails, the script goes on */
    if (r < 0)
        return r;
    ev->status = r;
    return 0;
}

static int exec_block(ks_grub_eval *ev, const ks_grub_block *b)
{
    int r;
    for (size_t i = 0; i < b->n; i++) {
        r = exec_node(ev, b->v[i]);
        if (r < 0)
            return r;
        if (ev->stopped || ev->returning || ev->breaking)
            break;
    }
    return 0;
}

int ks_grub_eval_block(ks_grub_eval *ev, const ks_grub_block *b)
{
    return exec_block(ev, b);
}

int ks_grub_eval_run(ks_grub_eval *ev)
{
    if (!ev->cfg)
        return -EINVAL;
    return exec_block(ev, &ev->cfg->script);
}

/* ---- one boot: menu.c's run_menu() and grub_menu_execute_entry() ---- */

void ks_grub_boot_result_done(ks_grub_boot_result *r)
{
    free(r->default_value);
    free(r->title_path);
    free(r->id_path);
    free(r->linux_path);
    free(r->kernel);
    free(r->linux_args);
    ks_strv_free(r->initrds);
    *r = (ks_grub_boot_result){0};
}

int ks_grub_eval_timeout(const ks_grub_eval *ev)
{
    const char *v = ks_grub_eval_get(ev, "timeout");
    unsigned long long t;

    if (!v)
        return -1;
    while (isspace((unsigned char)*v))
        v++;
    if (!isdigit((unsigned char)*v) || ks_grub_strtoull(v, &t) < 0)
        return -1;
    return (int)t;
}

/* chosen and default as grub_menu_execute_entry() sets them before running the entry. */
static int enter_entry(ks_grub_eval *ev, const ks_grub_entry *e, const char *rest)
{
    const char *old = ks_grub_eval_get(ev, "chosen");
    _cleanup_free_ char *chosen = old ? strdup(old) : NULL;
    int r;

    if (old && !chosen)
        return -ENOMEM;
    r = ks_grub_path_append(&chosen, ks_grub_entry_id(e));
    if (r < 0)
        return r;
    r = var_set(ev, "chosen", chosen, true);
    if (r < 0)
        return r;
    if (rest)
        return var_set(ev, "default", rest, false);
    var_unset(ev, "default");
    return 0;
}

int ks_grub_eval_boot(ks_grub_eval *ev, ks_grub_boot_result *ret)
{
    ks_grub_boot_result res = {.timeout = -1};
    const ks_grub_entry *m = ev->top.v;
    size_t n = ev->top.n;
    menu subs[KS_GRUB_MAX_DEPTH] = {{0}};
    size_t n_subs = 0;
    _cleanup_free_ char *def = NULL;
    const char *bo = ks_grub_eval_get(ev, "boot_once");
    int r = 0;

    res.one_shot = bo && bo[0];
    if (ks_grub_eval_get(ev, "default")) {
        res.default_value = strdup(ks_grub_eval_get(ev, "default"));
        def = strdup(res.default_value);
        if (!res.default_value || !def)
            return -ENOMEM;
    }
    for (;;) {
        ks_grub_level_how how;
        const ks_grub_entry *e;
        _cleanup_free_ char *rest = NULL;
        int i;

        res.timeout = ks_grub_eval_timeout(ev);
        if (n == 0 || n_subs >= KS_GRUB_MAX_DEPTH) {
            res.waits = true; /* nothing to boot: GRUB drops to its prompt */
            res.wait_reason = "no-entries";
            break;
        }
        i = ks_grub_entry_number(m, n, def, &how);
        if (how == KS_GRUB_LEVEL_FALLBACK)
            res.fell_back = true;
        e = &m[i];
        if (ks_grub_path_append(&res.title_path, e->title) < 0 ||
            ks_grub_path_append(&res.id_path, ks_grub_entry_id(e)) < 0) {
            r = -ENOMEM;
            break;
        }
        if (res.timeout < 0) {
            res.waits = true; /* the menu shows with this entry highlighted and waits */
            res.wait_reason = "timeout";
            break;
        }
        if (!e->unrestricted && ks_grub_eval_get(ev, "superusers")) {
            /* auth.c: with superusers set, a restricted entry asks for a user and password */
            res.waits = true;
            res.wait_reason = "password";
            break;
        }
        rest = ks_grub_default_rest(def);
        if (e->submenu) {
            menu *sub = &subs[n_subs++];
            menu *saved = ev->cur_menu;

            r = ctx_open(ev);
            if (r >= 0)
                r = var_set(ev, "timeout", "0", false); /* auto_boot */
            if (r >= 0)
                r = enter_entry(ev, e, rest);
            if (r < 0)
                break;
            ev->cur_menu = sub;
            r = call_block(ev, e->node->body, NULL);
            ev->cur_menu = saved;
            ev->stopped = false;
            if (r < 0)
                break;
            free(def);
            def = TAKE_PTR(rest);
            m = sub->v;
            n = sub->n;
            continue;
        }
        r = enter_entry(ev, e, rest);
        if (r < 0)
            break;
        res.recovery = e->recovery;
        ev->loaded = ev->halted = ev->firmware_setup = false;
        ev->initrds = ks_strv_free(ev->initrds);
        r = call_block(ev, e->node->body, NULL);
        ev->stopped = false;
        if (r < 0)
            break;
        r = 0;
        res.halted = ev->halted;
        res.loaded = ev->loaded;
        if (ev->firmware_setup) {
            res.waits = true; /* the firmware's setup UI, after a reset */
            res.wait_reason = "firmware-setup";
        } else if (ev->loaded) {
            res.linux_path = strdup(ev->linux_path);
            res.linux_args = ev->linux_args ? strdup(ev->linux_args) : NULL;
            res.kernel = ks_grub_release_from_path(ev->linux_path);
            for (char **f = ev->initrds; f && *f && r >= 0; f++)
                r = ks_strv_extend(&res.initrds, *f);
            if (r < 0)
                break;
        } else if (!ev->halted) {
            /* Nothing loaded: back to the menu, whose timeout execute_entry unset. */
            res.waits = true;
            res.wait_reason = "nothing-loaded";
        }
        break;
    }
    while (n_subs > 0) {
        menu_free(&subs[--n_subs]);
        ctx_close(ev);
    }
    if (r < 0) {
        ks_grub_boot_result_done(&res);
        return r;
    }
    *ret = res;
    return 0;
}
