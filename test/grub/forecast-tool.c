/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test helper for the qemu suite.
 *   forecast-tool forecast CFG ENV|- WRITABLE(0|1) OUTDIR [efi]
 *       kswap's 3-boot forecast (for GRUB x86_64-efi with "efi", else i386-pc): one line per
 *       boot on stdout
 *       ("boot=N kernel=K|- one_shot=0|1 waits=0|1 fell_back=0|1"), and the 1024-byte block
 *       GRUB should leave after boot N in OUTDIR/after-N.env.
 *   forecast-tool stub CFG OUT
 *       CFG with only the bodies of menu entries replaced: the calls that write grubenv
 *       (recordfail, savedefault, initrdfail) stay in their order, then
 *       `echo KSWAP-BOOT <release>` and `halt` (<release> "none" for an entry without a
 *       kernel, "firmware-setup" for one that runs fwsetup). Everything else stays byte for
 *       byte.
 */
#include <stdio.h>

#include "grub/cfg.h"
#include "grub/forecast.h"
#include "lib/basic/fileio.h"
#include "lib/basic/root.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"

static int read_all(const ks_root *root, const char *path, char **ret, size_t *len)
{
    int r = ks_root_read_file(root, path, 64u << 20, ret, len);
    if (r < 0)
        fprintf(stderr, "forecast-tool: %s: %s\n", path, strerror(-r));
    return r;
}

static int do_forecast(const ks_root *root, int argc, char **argv)
{
    _cleanup_free_ char *text = NULL, *envdata = NULL;
    _cleanup_grub_cfg_ ks_grub_cfg *c = NULL;
    _cleanup_grubenv_ ks_grubenv *env = NULL;
    ks_grub_forecast f = {0};
    ks_grub_error err = {0};
    size_t len = 0, elen = 0;
    int r;

    if (read_all(root, argv[2], &text, &len) < 0)
        return 1;
    r = ks_grub_cfg_parse(text, len, &c, &err);
    if (r < 0) {
        fprintf(stderr, "forecast-tool: %s:%u:%u: %s\n", argv[2], err.line, err.column,
                err.message);
        return 1;
    }
    if (!streq(argv[3], "-")) {
        if (read_all(root, argv[3], &envdata, &elen) < 0 ||
            ks_grubenv_parse(envdata, elen, &env) < 0)
            return 1;
    }
    r = ks_grub_forecast_run(c, env, streq(argv[4], "1"), argc == 7 && streq(argv[6], "efi"), 3,
                             &f);
    if (r < 0)
        return 1;
    for (size_t i = 0; i < f.n; i++) {
        const ks_grub_forecast_boot *b = &f.v[i];
        printf("boot=%u kernel=%s one_shot=%d waits=%d fell_back=%d reason=%s\n", b->boot,
               b->kernel ? b->kernel : "-", b->one_shot, b->waits, b->fell_back,
               b->wait_reason ? b->wait_reason : "-");
        if (b->env_after) {
            _cleanup_free_ char *p = ks_asprintf("%s/after-%u.env", argv[5], b->boot);
            if (!p ||
                ks_write_atomic(root, p, ks_grubenv_data(b->env_after), KS_GRUBENV_SIZE, 0644) < 0)
                return 1;
        }
    }
    ks_grub_forecast_done(&f);
    return 0;
}

typedef struct edit {
    size_t start, end;
    char *text;
} edit;

static const char *cmd_name(const ks_grub_node *n, char **buf)
{
    if (n->type != KS_GRUB_NODE_CMD || n->n_words == 0)
        return NULL;
    return ks_grub_word_literal(&n->words[0], buf);
}

static int collect(const ks_grub_block *b, edit **v, size_t *n, size_t *cap)
{
    for (size_t i = 0; i < b->n; i++) {
        const ks_grub_node *nd = b->v[i];
        _cleanup_free_ char *buf = NULL;
        const char *name;

        if (nd->type == KS_GRUB_NODE_IF) {
            for (size_t j = 0; j < nd->n_conds; j++)
                if (collect(&nd->bodies[j], v, n, cap) < 0)
                    return -ENOMEM;
            if (nd->else_body && collect(nd->else_body, v, n, cap) < 0)
                return -ENOMEM;
            continue;
        }
        name = cmd_name(nd, &buf);
        if (!name || !nd->body)
            continue;
        if (streq(name, "submenu")) {
            if (collect(nd->body, v, n, cap) < 0)
                return -ENOMEM;
            continue;
        }
        if (!streq(name, "menuentry"))
            continue;

        /* The release the static view sees on the entry's linux line; "firmware-setup" for
         * 30_uefi-firmware's entry (fwsetup would reset into the firmware's UI). */
        ks_grub_entry e = {.node = nd};
        ks_grub_entry_scan_body(&e);
        _cleanup_free_ char *before = strdup(""), *after = strdup("");
        bool fwsetup = false;
        for (size_t j = 0; j < nd->body->n && before && after; j++) {
            _cleanup_free_ char *b2 = NULL;
            const char *c = cmd_name(nd->body->v[j], &b2);
            char **dst = c && streq(c, "initrdfail") ? &after : &before;
            fwsetup = fwsetup || streq_ptr(c, "fwsetup");
            if (!c ||
                (!streq(c, "recordfail") && !streq(c, "savedefault") && !streq(c, "initrdfail")))
                continue;
            char *t = ks_asprintf("%s\t%s\n", *dst, c);
            free(*dst);
            *dst = t;
        }
        if (!before || !after || !GREEDY_REALLOC(*v, *cap, *n + 1)) {
            ks_grub_entry_done(&e);
            return -ENOMEM;
        }
        edit *nv = *v;
        nv[*n].start = nd->body_start;
        nv[*n].end = nd->body_end;
        nv[*n].text =
            ks_asprintf("\n%s\tterminal_output serial\n\techo KSWAP-BOOT %s\n%s\thalt\n", before,
                        e.release ? e.release
                        : fwsetup ? "firmware-setup"
                                  : "none",
                        after);
        (*n)++;
        ks_grub_entry_done(&e);
    }
    return 0;
}

static int do_stub(const ks_root *r, char **argv)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_grub_cfg_ ks_grub_cfg *c = NULL;
    ks_grub_error err = {0};
    edit *v = NULL;
    size_t len = 0, n = 0, cap = 0, pos = 0;
    FILE *out;

    if (read_all(r, argv[2], &text, &len) < 0)
        return 1;
    if (ks_grub_cfg_parse(text, len, &c, &err) < 0) {
        fprintf(stderr, "forecast-tool: %s:%u:%u: %s\n", argv[2], err.line, err.column,
                err.message);
        return 1;
    }
    if (collect(&c->script, &v, &n, &cap) < 0)
        return 1;
    out = fopen(argv[3], "we");
    if (!out)
        return 1;
    /* Bodies come in source order and never overlap. */
    for (size_t i = 0; i < n; i++) {
        fwrite(text + pos, 1, v[i].start - pos, out);
        fputs(v[i].text, out);
        pos = v[i].end;
        free(v[i].text);
    }
    fwrite(text + pos, 1, len - pos, out);
    free(v);
    return fclose(out) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    _cleanup_root_ ks_root *r = NULL;

    if (ks_root_open("/", &r) < 0)
        return 1;
    if ((argc == 6 || (argc == 7 && streq(argv[6], "efi"))) && streq(argv[1], "forecast"))
        return do_forecast(r, argc, argv);
    if (argc == 4 && streq(argv[1], "stub"))
        return do_stub(r, argv);
    fprintf(stderr,
            "usage: forecast-tool forecast CFG ENV|- WRITABLE OUTDIR [efi] | stub CFG OUT\n");
    return 2;
}
