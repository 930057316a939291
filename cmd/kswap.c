/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <getopt.h>
#include <locale.h>

#include "checks/check.h"
#include "cmd/cmd.h"
#include "build-config.h"

static const ks_cmd *const commands[] = {
    &ks_cmd_plan,    &ks_cmd_verify, &ks_cmd_apply,  &ks_cmd_pin,     &ks_cmd_rollback,
    &ks_cmd_accept,  &ks_cmd_check,  &ks_cmd_status, &ks_cmd_history, &ks_cmd_list,
    &ks_cmd_metrics, &ks_cmd_tidy,   &ks_cmd_report,
};

enum {
    G_ROOT = 1000,
    G_JSON,
    G_CONFIG,
    G_VERBOSE,
    G_QUIET,
    G_COLOR,
    G_HELP,
    G_VERSION,
};

const ks_option ks_global_options[] = {
    {"root", G_ROOT, "DIR", "resolve every path kswap finds by itself inside DIR", "/"},
    {"json", G_JSON, NULL, "print one JSON document on stdout, errors included", NULL},
    {"config", G_CONFIG, "FILE", "read FILE (on this machine) for the configuration",
     "/etc/kswap/kswap.conf"},
    {"verbose", G_VERBOSE, NULL, "also log each step's duration on stderr", NULL, 'v'},
    {"quiet", G_QUIET, NULL, "print only errors on stderr", NULL, 'q'},
    {"color", G_COLOR, "WHEN", "auto (a terminal, NO_COLOR empty, TERM not dumb), always, never",
     "auto"},
    {"help", G_HELP, NULL, "show this help, or the help of the command", NULL, 'h'},
    {"version", G_VERSION, NULL, "show the version", NULL},
    {},
};

static void print_help(void)
{
    ks_printf("usage: kswap [global options] COMMAND [ARGS]\n"
              "\n"
              "Moves a server from its distribution kernel to a XanMod LTS kernel with a one-shot\n"
              "trial boot, acceptance after the reboot, then pin or rollback.\n"
              "\n"
              "commands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        ks_printf("  %-9s %s\n", commands[i]->name, commands[i]->summary);
    ks_printf("  %-9s %s\n", "help", "show this help, or every option of COMMAND (help COMMAND)");
    ks_printf("\nglobal options (before or after the command):\n");
    for (const ks_option *o = ks_global_options; o->name; o++) {
        char buf[64], letter[8] = "    ";
        if (o->letter)
            snprintf(letter, sizeof(letter), "-%c, ", o->letter);
        snprintf(buf, sizeof(buf), "%s--%s%s%s", letter, o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        ks_printf("  %-19s %s", buf, o->help);
        if (o->def)
            ks_printf(" (default: %s)", o->def);
        ks_printf("\n");
    }
    ks_printf("\n"
              "exit codes: 0 done or may proceed, 1 error, 2 refused or blocked,\n"
              "3 acceptance failed, 4 nothing to judge yet. See kswap(8).\n");
}

static const ks_cmd *find_command(const char *name)
{
    /* Exact names only: a prefix that matches today may match something else tomorrow. */
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        if (streq(commands[i]->name, name))
            return commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    const char *names[ARRAY_SIZE(commands) + 1], *near;

    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        names[i] = commands[i]->name;
    names[ARRAY_SIZE(commands)] = "help";
    near = ks_nearest(name, names, ARRAY_SIZE(names));
    if (near)
        ks_error("unknown command '%s'; did you mean '%s'?", name, near);
    else
        ks_error("unknown command '%s'; run 'kswap help' for the list", name);
    return KS_EXIT_ERROR;
}

static int unknown_global(const char *arg)
{
    const char *names[32], *near;
    _cleanup_free_ char *bad = strdup(arg);
    char *buf[32];
    size_t n = 0;

    if (!bad)
        return KS_EXIT_ERROR;
    bad[strcspn(bad, "=")] = '\0';
    for (const ks_option *o = ks_global_options; o->name && n < ARRAY_SIZE(buf); o++)
        if ((buf[n] = ks_asprintf("--%s", o->name)))
            names[n] = buf[n], n++;
    near = ks_nearest(bad, names, n);
    if (near)
        ks_error("unknown option '%s'; did you mean '%s'?", bad, near);
    else
        ks_error("unknown option '%s'; run 'kswap help'", bad);
    for (size_t i = 0; i < n; i++)
        free(buf[i]);
    return KS_EXIT_ERROR;
}

typedef struct globals {
    const char *root;
    int help, version;
    ks_color_mode color;
} globals;

/* Takes a global option at argv[*i] (and its value), or returns 0 when it is not one. */
static int take_global(int argc, char **argv, int *i, globals *g, ks_ctx *ctx)
{
    const char *a = argv[*i], *v = NULL;
    const ks_option *o;

    for (o = ks_global_options; o->name; o++) {
        const char *rest = a[0] == '-' && a[1] == '-' ? ks_startswith(a + 2, o->name) : NULL;
        if (rest && (*rest == '\0' || (*rest == '=' && o->arg)))
            break;
        if (rest && *rest == '=') {
            ks_error("option '--%s' takes no argument", o->name);
            return -EINVAL;
        }
        if (o->letter && a[0] == '-' && a[1] == o->letter && a[2] == '\0')
            break;
    }
    if (!o->name)
        return 0;
    if (o->arg) {
        const char *eq = strchr(a, '=');
        if (eq)
            v = eq + 1;
        else if (*i + 1 < argc)
            v = argv[++*i];
        else {
            ks_error("option '--%s' needs an argument (%s)", o->name, o->arg);
            return -EINVAL;
        }
    }
    switch (o->val) {
    case G_ROOT:
        g->root = v;
        break;
    case G_CONFIG:
        ctx->config_path = v;
        break;
    case G_JSON:
        ctx->json = true;
        break;
    case G_VERBOSE:
        ctx->verbose = true;
        break;
    case G_QUIET:
        ctx->quiet = true;
        break;
    case G_HELP:
        g->help = true;
        break;
    case G_COLOR:
        if (streq(v, "auto"))
            g->color = KS_COLOR_AUTO;
        else if (streq(v, "always"))
            g->color = KS_COLOR_ALWAYS;
        else if (streq(v, "never"))
            g->color = KS_COLOR_NEVER;
        else {
            ks_error("option '--color' needs auto, always or never, not '%s'", v);
            return -EINVAL;
        }
        break;
    case G_VERSION:
        g->version = true;
        break;
    }
    return 1;
}

static int run_main(int argc, char **argv, ks_ctx *ctx, const ks_cmd **cmdp)
{
    globals g = {.root = "/"};
    const char *root_path;
    const ks_cmd *cmd = NULL;
    bool dashdash = false, help_cmd = false;
    _cleanup_free_ char **args = NULL;
    char **rest;
    int n = 0, r, ret;

    rest = args = calloc((size_t)argc + 1, sizeof(char *));
    if (!args)
        return KS_EXIT_ERROR;

    /* Global options are taken wherever they stand; the rest goes to the command. */
    for (int i = 1; i < argc; i++) {
        if (!dashdash && streq(argv[i], "--")) {
            dashdash = true;
            rest[n++] = argv[i];
            continue;
        }
        if (!dashdash) {
            r = take_global(argc, argv, &i, &g, ctx);
            if (r < 0)
                return KS_EXIT_ERROR;
            if (r > 0)
                continue;
        }
        rest[n++] = argv[i];
    }
    root_path = g.root;
    ctx->sep = ks_locale_is_utf8() ? " · " : " - ";
    ks_set_quiet(ctx->quiet && !ctx->verbose);
    ks_lock_set_wait_hook(ks_lock_wait_print, NULL);

    if (g.version) {
        if (ctx->json) {
            ks_json_builder b = {0};
            json_object *o = ks_jb_object(&b);
            ks_jb_add(&b, o, "command", ks_jb_string(&b, "version"));
            ks_jb_add(&b, o, "version", ks_jb_string(&b, KSWAP_VERSION));
            return ks_print_json_built("version", &b, o);
        }
        ks_printf("kswap %s\n", KSWAP_VERSION);
        return KS_EXIT_OK;
    }
    if (n > 0 && streq(rest[0], "help")) {
        /* kswap help [COMMAND]: the same as kswap [COMMAND] --help */
        help_cmd = true;
        g.help = true;
        if (n > 2)
            return ks_error("help takes at most one command, not '%s'", rest[2]), KS_EXIT_ERROR;
        if (n == 1)
            n = 0;
        else
            rest++, n--;
    }
    if (n > 0 && rest[0][0] != '-') {
        cmd = find_command(rest[0]);
        if (!cmd)
            return unknown_command(rest[0]);
        *cmdp = cmd;
    } else if (n > 0 && !help_cmd && !g.help)
        return unknown_global(rest[0]);
    if (g.help) {
        if (ctx->json) {
            ks_json_builder b = {0};
            return ks_print_json_built("help", &b, ks_jb_part(&b, ks_json_command_help(cmd)));
        } else if (cmd)
            ks_print_command_help(cmd);
        else
            print_help();
        return KS_EXIT_OK;
    }
    if (n == 0) {
        if (!ctx->json)
            print_help();
        ks_error("no command given; run 'kswap help'");
        return KS_EXIT_ERROR;
    }

    /* The [accept] keys are the check plug-ins' own (checks/registry.c): known to the
     * configuration before a command reads it. */
    r = ks_checks_register_config();
    if (r < 0) {
        ks_error("cannot register the [accept] keys: %s", strerror(-r));
        return KS_EXIT_ERROR;
    }
    r = ks_root_open(root_path, &ctx->root);
    if (r < 0) {
        ks_error("cannot open root directory '%s': %s", root_path, strerror(-r));
        return KS_EXIT_ERROR;
    }
    ctx->color = !ctx->json && ks_want_color(g.color, STDOUT_FILENO);
    ctx->stderr_color = ks_want_color(g.color, STDERR_FILENO);

    /* A command says whether it changes anything: read-only, or for uid 0 only on "/". */
    assert(!(cmd->flags & KS_READ_ONLY) != !(cmd->flags & KS_NEEDS_ROOT_USER));
    if ((cmd->flags & KS_NEEDS_ROOT_USER) && ks_root_is_host(ctx->root) && geteuid() != 0) {
        ks_error("'kswap %s' changes the boot setup and must run as root; try 'sudo kswap %s'",
                 cmd->name, cmd->name);
        return KS_EXIT_ERROR;
    }

    optind = 0; /* GNU getopt: start over for the command's own options */
    ret = cmd->run(ctx, n, rest);
    if (fflush(stdout) == EOF && ret == KS_EXIT_OK) {
        ks_error("cannot write to standard output: %m");
        ret = KS_EXIT_ERROR;
    }
    return ret;
}

int main(int argc, char **argv)
{
    ks_ctx ctx = {0};
    const ks_cmd *cmd = NULL;
    int ret;

    setlocale(LC_ALL, "");
    /* Known before parsing, so that even a usage error answers with a JSON document. */
    for (int i = 1; i < argc && !streq(argv[i], "--"); i++)
        if (streq(argv[i], "--json"))
            ctx.json = true;
    ret = run_main(argc, argv, &ctx, &cmd);
    ret = ks_json_flush(cmd, ctx.json, ret);
    ks_root_free(ctx.root);
    return ret;
}
