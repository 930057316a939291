/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <getopt.h>
#include <locale.h>

#include "cmd/cmd.h"
#include "build-config.h"

static const ks_cmd *const commands[] = {
    &ks_cmd_plan,
    &ks_cmd_verify,
    &ks_cmd_apply,
    &ks_cmd_pin,
    &ks_cmd_rollback,
    &ks_cmd_accept,
    &ks_cmd_check,
    &ks_cmd_status,
};

static void print_help(void)
{
    printf("usage: kswap [--root DIR] [--json] [--config FILE] [--verbose] COMMAND [ARGS]\n"
           "\n"
           "Moves a server from its distribution kernel to a XanMod LTS kernel with a one-shot\n"
           "trial boot, acceptance after the reboot, then pin or rollback.\n"
           "\n"
           "commands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        printf("  %-9s %s\n", commands[i]->name, commands[i]->summary);
    printf("\n"
           "global options (before or after the command):\n"
           "  --root DIR     resolve every path kswap finds by itself inside DIR\n"
           "  --json         print one JSON document on stdout\n"
           "  --config FILE  read FILE instead of /etc/kswap/kswap.conf\n"
           "  -v, --verbose  log each step on stderr\n"
           "  -h, --help     show this help\n"
           "  --version      show the version\n"
           "\n"
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

/* Takes a global option at argv[*i] (and its value), or returns 0 when it is not one. */
static int take_global(int argc, char **argv, int *i, const char **root, ks_ctx *ctx,
                       bool *help, bool *version)
{
    const char *a = argv[*i], *v;
    static const char *const with_value[] = {"--root", "--config"};

    for (size_t k = 0; k < ARRAY_SIZE(with_value); k++) {
        const char *name = with_value[k];
        const char **dest = k == 0 ? root : &ctx->config_path;
        v = ks_startswith(a, name);
        if (!v)
            continue;
        if (*v == '=') {
            *dest = v + 1;
            return 1;
        }
        if (*v == '\0') {
            if (*i + 1 >= argc) {
                ks_error("option '%s' needs a value", name);
                return -EINVAL;
            }
            *dest = argv[++*i];
            return 1;
        }
    }
    if (streq(a, "--json"))
        ctx->json = true;
    else if (streq(a, "--verbose") || streq(a, "-v"))
        ctx->verbose = true;
    else if (streq(a, "--help") || streq(a, "-h"))
        *help = true;
    else if (streq(a, "--version"))
        *version = true;
    else
        return 0;
    return 1;
}

int main(int argc, char **argv)
{
    ks_ctx ctx = {0};
    const char *root_path = "/";
    const ks_cmd *cmd = NULL;
    bool help = false, version = false, dashdash = false;
    _cleanup_free_ char **rest = NULL;
    int n = 0, k, ret;

    setlocale(LC_ALL, "");
    rest = calloc((size_t)argc + 1, sizeof(char *));
    if (!rest)
        return KS_EXIT_ERROR;

    /* Global options are taken wherever they stand; the rest goes to the command. */
    for (int i = 1; i < argc; i++) {
        if (!dashdash && streq(argv[i], "--")) {
            dashdash = true;
            rest[n++] = argv[i];
            continue;
        }
        if (!dashdash) {
            k = take_global(argc, argv, &i, &root_path, &ctx, &help, &version);
            if (k < 0)
                return KS_EXIT_ERROR;
            if (k > 0)
                continue;
        }
        rest[n++] = argv[i];
    }

    if (version) {
        printf("kswap %s\n", KSWAP_VERSION);
        return KS_EXIT_OK;
    }
    if (n > 0 && rest[0][0] != '-') {
        cmd = find_command(rest[0]);
        if (!cmd) {
            ks_error("unknown command '%s'; run 'kswap --help' for the list", rest[0]);
            return KS_EXIT_ERROR;
        }
    }
    if (help && cmd) {
        printf("usage: kswap [global options] %s %s\n  %s\n", cmd->name, cmd->usage,
               cmd->summary);
        return KS_EXIT_OK;
    }
    if (help || n == 0) {
        print_help();
        return help ? KS_EXIT_OK : KS_EXIT_ERROR;
    }
    if (!cmd) {
        ks_error("unknown option '%s'; run 'kswap --help'", rest[0]);
        return KS_EXIT_ERROR;
    }

    k = ks_root_open(root_path, &ctx.root);
    if (k < 0) {
        ks_error("cannot open root directory '%s': %s", root_path, strerror(-k));
        return KS_EXIT_ERROR;
    }
    ctx.color = !ctx.json && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    ctx.stderr_color = isatty(STDERR_FILENO) && !getenv("NO_COLOR");

    /* A command says whether it changes anything: read-only, or for uid 0 only on "/". */
    assert(!(cmd->flags & KS_READ_ONLY) != !(cmd->flags & KS_NEEDS_ROOT_USER));
    if ((cmd->flags & KS_NEEDS_ROOT_USER) && ks_root_is_host(ctx.root) && geteuid() != 0) {
        ks_error("'kswap %s' changes the boot setup and must run as root; try 'sudo kswap %s'",
                 cmd->name, cmd->name);
        ks_root_free(ctx.root);
        return KS_EXIT_ERROR;
    }

    optind = 0; /* GNU getopt: start over for the command's own options */
    ret = cmd->run(&ctx, n, rest);
    if (fflush(stdout) == EOF && ret == KS_EXIT_OK) {
        ks_error("cannot write to standard output: %m");
        ret = KS_EXIT_ERROR;
    }
    ks_root_free(ctx.root);
    return ret;
}
