/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "lib/basic/findings.h"
#include "lib/basic/json-util.h"
#include "lib/basic/root.h"
#include "lib/kernel/verify.h"

/* Exit codes: the stable contract (docs/design.md, "Command line and JSON"). */
enum {
    KS_EXIT_OK = 0,          /* done, or may proceed */
    KS_EXIT_ERROR = 1,       /* could not evaluate or act */
    KS_EXIT_REFUSED = 2,     /* refused or blocked by a finding */
    KS_EXIT_ACCEPT_FAILED = 3,
    KS_EXIT_NOTHING = 4,     /* nothing to judge yet */
};

/*
 * Per-command flags; each command has exactly one, and the dispatcher (cmd/kswap.c) checks
 * both before the command runs. The lock is not a flag: the engine takes it inside the calls
 * that change something (lib/engine/lock.h).
 */
enum {
    KS_READ_ONLY = 1 << 0,       /* changes nothing on disk: runs as any user */
    KS_NEEDS_ROOT_USER = 1 << 1, /* changes the boot setup: refused to a user other than uid 0
                                    when it acts on "/" */
};

typedef struct ks_ctx {
    ks_root *root;
    const char *config_path; /* --config, a path on the running machine */
    bool json;
    bool verbose;
    bool color;        /* stdout is a TTY and NO_COLOR is unset */
    bool stderr_color; /* the same for stderr (progress lines) */
} ks_ctx;

typedef struct ks_cmd {
    const char *name;
    int (*run)(ks_ctx *ctx, int argc, char **argv);
    const char *summary;
    const char *usage; /* options after the command name */
    unsigned flags;
} ks_cmd;

extern const ks_cmd ks_cmd_plan;
extern const ks_cmd ks_cmd_verify;
extern const ks_cmd ks_cmd_status;
extern const ks_cmd ks_cmd_apply;
extern const ks_cmd ks_cmd_pin;
extern const ks_cmd ks_cmd_rollback;
extern const ks_cmd ks_cmd_accept;
extern const ks_cmd ks_cmd_check;

/* Diagnostics on stderr, git style: "kswap: error: cannot open 'x': reason". */
void ks_error(const char *fmt, ...) _printf_(1, 2);
void ks_warn(const char *fmt, ...) _printf_(1, 2);
void ks_info(const ks_ctx *ctx, const char *fmt, ...) _printf_(2, 3); /* only with --verbose */
/* Prints the usage line of one command to stderr and returns KS_EXIT_ERROR. */
int ks_usage_error(const ks_cmd *cmd, const char *fmt, ...) _printf_(2, 3);

/* Prints one JSON document on stdout; returns an exit code. */
int ks_print_json(json_object *o);
/* JSON is built with lib/basic/json-util.h (one error rule: NULL for the whole on failure). */
json_object *ks_json_string_or_null(const char *s);
json_object *ks_json_findings(const ks_findings *f); /* NULL: out of memory */

/* The human table of findings: one line per finding with a mark, then the remedy. */
void ks_print_findings(const ks_ctx *ctx, const ks_findings *f);
const char *ks_color(const ks_ctx *ctx, ks_severity s);
const char *ks_color_reset(const ks_ctx *ctx);

/* A kernel's module set (verify, and plan when the target kernel is known). */
json_object *ks_json_verify(const ks_verify_result *r);
void ks_print_verify_modules(const ks_ctx *ctx, const ks_verify_result *r);
