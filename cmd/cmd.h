/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "lib/basic/findings.h"
#include "lib/basic/json-util.h"
#include "lib/basic/root.h"
#include "lib/engine/lock.h"
#include "lib/engine/states.h"
#include "lib/engine/update.h"
#include "lib/kernel/verify.h"

/* Exit codes: the stable contract (docs/design.md, "Command line and JSON"), the numbers the
 * engine's state and outcome tables answer with (lib/engine/states.h). */
enum {
    KS_EXIT_OK = KS_CODE_OK,           /* done, or may proceed */
    KS_EXIT_ERROR = KS_CODE_ERROR,     /* could not evaluate or act */
    KS_EXIT_REFUSED = KS_CODE_REFUSED, /* refused or blocked by a finding */
    KS_EXIT_ACCEPT_FAILED = KS_CODE_FAILED,
    KS_EXIT_NOTHING = KS_CODE_NOTHING, /* nothing to judge yet */
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
    bool quiet;        /* -q: only errors on stderr */
    bool color;        /* colour on stdout: --color, else a TTY, NO_COLOR empty, TERM not dumb */
    bool stderr_color; /* the same for stderr (progress lines) */
    const char *sep;   /* " · " in a UTF-8 locale, else " - " */
} ks_ctx;

typedef enum ks_color_mode {
    KS_COLOR_AUTO,
    KS_COLOR_ALWAYS,
    KS_COLOR_NEVER,
} ks_color_mode;

/* Whether output on fd gets colour: --color, then NO_COLOR (non-empty), TERM=dumb, a TTY. */
bool ks_want_color(ks_color_mode mode, int fd);
/* Whether the locale's character set is UTF-8 (else output stays ASCII). */
bool ks_locale_is_utf8(void);
/* What the human table names a finding by: its subject when it passed, else its id. */
const char *ks_finding_subject(const char *id);

/*
 * One option of a command: the parser (ks_getopt) and the help (kswap help COMMAND) read the
 * same table, so what is documented is what is accepted. Tables end with {}.
 */
typedef struct ks_option {
    const char *name; /* without the leading "--" */
    int val;          /* what ks_getopt returns for it */
    const char *arg;  /* the argument's name ("RELEASE"), NULL for a flag */
    const char *help; /* one line */
    const char *def;  /* the default, NULL when there is none worth saying */
    char letter;      /* a one-letter form ("-v"), global options only */
} ks_option;

typedef struct ks_cmd {
    const char *name;
    int (*run)(ks_ctx *ctx, int argc, char **argv);
    const char *summary;
    const char *usage; /* options after the command name */
    unsigned flags;
    const ks_option *options;
    const char *json_key; /* the field that says "error" in the JSON of a failure */
} ks_cmd;

/* --root, --json, ...: taken by main() wherever they stand. */
extern const ks_option ks_global_options[];

/* Returned by ks_getopt after it reported a usage error; the command exits 1. */
#define KS_OPT_ERROR '?'
/* getopt_long over cmd->options, with one coherent message for each mistake. */
int ks_getopt(const ks_cmd *cmd, int argc, char **argv);
/* The option table of a command as help text (kswap help COMMAND, COMMAND --help). */
void ks_print_command_help(const ks_cmd *cmd);
json_object *ks_json_command_help(const ks_cmd *cmd); /* NULL: out of memory */
/* The candidate nearest to word by edit distance, or NULL when none is near enough. */
const char *ks_nearest(const char *word, const char *const *candidates, size_t n);

extern const ks_cmd ks_cmd_plan;
extern const ks_cmd ks_cmd_verify;
extern const ks_cmd ks_cmd_status;
extern const ks_cmd ks_cmd_apply;
extern const ks_cmd ks_cmd_pin;
extern const ks_cmd ks_cmd_rollback;
extern const ks_cmd ks_cmd_accept;
extern const ks_cmd ks_cmd_check;
extern const ks_cmd ks_cmd_list;
extern const ks_cmd ks_cmd_history;
extern const ks_cmd ks_cmd_metrics;
extern const ks_cmd ks_cmd_tidy;
extern const ks_cmd ks_cmd_report;

/*
 * The one way kswap prints (cmd/output.c; test/check-output.py keeps every other printf out of
 * cmd/): the format is kswap's own text and goes out as it is; every string argument (%s, %c,
 * %m) is data and goes through ks_escape_terminal() (lib/basic/escape.h): control characters,
 * C1, invalid UTF-8 (every byte above ASCII when the locale is not UTF-8) come out as \xNN, so
 * an interface, a GRUB title or a journal's reason cannot drive the terminal. A precision cuts
 * the escaped text between characters and escapes, never inside one. The colour codes of
 * ks_color() and ks_bold() are the only strings passed through unescaped.
 */
void ks_printf(const char *fmt, ...) _printf_(1, 2);
void ks_fprintf(FILE *f, const char *fmt, ...) _printf_(2, 3);
void ks_vfprintf(FILE *f, const char *fmt, va_list ap) _printf_(2, 0);
/* Bold for a stream that gets colour (on), and its end; "" when off. */
const char *ks_bold(bool on);
const char *ks_bold_end(bool on);

/* Diagnostics on stderr, git style: "kswap: error: cannot open 'x': reason". */
void ks_error(const char *fmt, ...) _printf_(1, 2);
void ks_warn(const char *fmt, ...) _printf_(1, 2);
void ks_info(const ks_ctx *ctx, const char *fmt, ...) _printf_(2, 3); /* only with --verbose */
void ks_set_quiet(bool quiet);                                        /* -q: ks_warn says nothing */
/* The lock's wait hook (lib/engine/lock.h): whom kswap waits for, counting down on a terminal. */
void ks_lock_wait_print(void *userdata, const ks_lock_wait *w);
/* Prints the usage line of one command to stderr and returns KS_EXIT_ERROR. */
int ks_usage_error(const ks_cmd *cmd, const char *fmt, ...) _printf_(2, 3);

/*
 * Hands over the command's one JSON document (a reference is taken). main() prints it once the
 * exit code is known, with "exit_code" added; a command that fails before handing one over gets
 * {"<json_key>": "error", "error": the first error message, "exit_code": N} instead, so --json
 * prints exactly one document on every path. Returns KS_EXIT_OK.
 */
int ks_print_json(json_object *o);
/*
 * JSON is built with lib/basic/json-util.h (one error rule: NULL for the whole on failure).
 * Finishes b's document o and hands it over; when any call of b failed, nothing is handed over
 * and the command's error is "<what>: cannot build the JSON document: ..." (so main() prints
 * the error document). Returns KS_EXIT_OK or KS_EXIT_ERROR.
 */
int ks_print_json_built(const char *what, ks_json_builder *b, json_object *o);
/* Prints the document handed over (or the error document) with exit_code; returns the code. */
int ks_json_flush(const ks_cmd *cmd, bool json, int exit_code);
/* The first message given to ks_error, or NULL. */
const char *ks_first_error(void);
json_object *ks_json_findings(const ks_findings *f); /* NULL: out of memory */

/* The human table of findings: one line per finding with a mark, then the remedy. */
void ks_print_findings(const ks_ctx *ctx, const ks_findings *f);
const char *ks_color(const ks_ctx *ctx, ks_severity s);
const char *ks_color_reset(const ks_ctx *ctx);

/*
 * accept.unit-disabled: whether kswap-accept.service starts at boot, as a finding (ok, or block:
 * without it nothing judges the trial boot, and apply refuses; plan says the same).
 * Returns 1 when enabled, 0 when not, negative errno when it cannot be told (no finding added).
 */
int ks_accept_unit_finding(const ks_ctx *ctx, ks_findings *f);

/*
 * The command line that runs command on the same root with the same configuration, as an
 * operator pastes it: "kswap apply", "kswap --root /srv/node1 apply" (words quoted for the
 * shell where needed). NULL: out of memory.
 */
char *ks_command_line(const ks_ctx *ctx, const char *command);

/* A newer release of the node's branch (lib/engine/update.h) and the command that swaps to it:
 * {"available", "current", "package", "newest", "installed", "package_version", "seen_in",
 * "command"}. NULL: out of memory. */
json_object *ks_json_update(const ks_update *u, const char *apply_command);

/* A kernel's module set (verify, and plan when the target kernel is known). */
json_object *ks_json_verify(const ks_verify_result *r); /* NULL: out of memory */
void ks_print_verify_modules(const ks_ctx *ctx, const ks_verify_result *r);
