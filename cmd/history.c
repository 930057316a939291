/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kswap history: the command log (lib/engine/command-log.h); --swaps: the swap history. */
#include <getopt.h>
#include <inttypes.h>

#include "cmd/cmd.h"
#include "cmd/history-output.h"
#include "lib/engine/command-log.h"

static const char *dash(const char *s)
{
    return s && *s ? s : "-";
}

static void print_log(const ks_ctx *ctx, const ks_command_log *l)
{
    if (l->n == 0) {
        ks_printf("no command in the log yet ('/%s')\n", KS_COMMAND_LOG_PATH);
        return;
    }
    ks_printf("%-5s %-20s %-10s %-12s %-8s %-16s %s\n", "ID", "TIME", "RESULT", "STATE", "SWAP",
              "BY", "COMMAND");
    for (size_t i = l->n; i-- > 0;) {
        const ks_command_entry *e = &l->v[i];
        char swap[9];

        /* The swap by the first 8 digits of its id, as git shortens a commit. */
        snprintf(swap, sizeof(swap), "%s", dash(e->swap_id));
        ks_printf("%-5" PRIu64 " %-20s %-10s %-12s %-8s %-16s kswap %s\n", e->id, e->time,
                  dash(e->result), dash(e->state), swap, dash(e->by), e->command);
        if (ctx->verbose && e->swap_id)
            ks_printf("      swap %s\n", e->swap_id);
    }
}

static const ks_option history_options[] = {
    {"swaps", 's', NULL, "the swaps that ended instead of the commands (as status --history)",
     NULL},
    {},
};

static int run_history(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_command_log_ ks_command_log l = {0};
    _cleanup_free_ char *err = NULL;
    bool swaps = false;
    int c, r;

    while ((c = ks_getopt(&ks_cmd_history, argc, argv)) != -1) {
        if (c != 's')
            return KS_EXIT_ERROR;
        swaps = true;
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_history, "unexpected argument '%s'", argv[optind]);
    if (swaps)
        return ks_status_history(ctx);
    r = ks_command_log_load(ctx->root, &l, &err);
    if (r < 0)
        ks_error("cannot read the command log '/%s': %s; the next command that changes "
                 "something moves it to '/%s' and starts a new one",
                 KS_COMMAND_LOG_PATH, err ? err : strerror(-r), KS_COMMAND_LOG_DAMAGED_PATH);
    if (ctx->json) {
        ks_json_builder b = {0};
        json_object *o = ks_jb_object(&b), *a = NULL;
        if (r >= 0) {
            a = ks_jb_array(&b);
            for (size_t i = l.n; i-- > 0;)
                ks_jb_push(&b, a, ks_jb_part(&b, ks_command_entry_to_json(&l.v[i])));
        }
        ks_jb_add(&b, o, "command", ks_jb_string(&b, "history"));
        ks_jb_add(&b, o, "result", ks_jb_string(&b, r < 0 ? "error" : "ok"));
        ks_jb_add(&b, o, "error", ks_jb_string(&b, r < 0 ? ks_first_error() : NULL));
        ks_jb_add(&b, o, "log_file", ks_jb_string(&b, "/" KS_COMMAND_LOG_PATH));
        ks_jb_add(&b, o, "commands", a);
        if (ks_print_json_built("history", &b, o) != KS_EXIT_OK)
            return KS_EXIT_ERROR;
    } else if (r >= 0)
        print_log(ctx, &l);
    return r < 0 ? KS_EXIT_ERROR : KS_EXIT_OK;
}

const ks_cmd ks_cmd_history = {
    .name = "history",
    .run = run_history,
    .summary = "every command that changed something, newest first (--swaps: the swaps)",
    .usage = "[--swaps]",
    .flags = KS_READ_ONLY,
    .options = history_options,
    .json_key = "result",
};
