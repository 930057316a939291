/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd.h"

static int run_plan(ks_ctx *ctx, int argc, char **argv)
{
    ks_error("plan is being written");
    return KS_EXIT_ERROR;
}

const ks_cmd ks_cmd_plan = {
    .name = "plan",
    .run = run_plan,
    .summary = "read-only assessment of this host and the target kernel",
    .usage = "[--kernel RELEASE | --deb FILE] [--branch lts|main]",
    .flags = KS_READ_ONLY,
};
