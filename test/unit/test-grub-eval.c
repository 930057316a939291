/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/eval.h"
#include "grub-test-util.h"

static ks_grub_eval *run(const char *text, const char *const *vars, bool writable,
                         ks_grub_cfg **ret_cfg)
{
    _cleanup_grubenv_ ks_grubenv *env = vars ? gt_env(vars) : NULL;
    ks_grub_eval_opts o = {.env = env, .env_writable = writable};
    ks_grub_cfg *c = gt_parse(text);
    ks_grub_eval *ev = NULL;

    *ret_cfg = c;
    if (!c || ks_grub_eval_new(c, &o, &ev) < 0)
        return NULL;
    if (ks_grub_eval_run(ev) < 0)
        return ks_grub_eval_free(ev);
    return ev;
}

static void test_commands(void)
{
    static const struct {
        const char *script, *var, *want;
    } cases[] = {
        {"set a=1", "a", "1"},
        {"set a=1; unset a", "a", NULL},
        {"a=x\"y z\"", "a", "xy z"},
        {"set a=1; set b=\"${a}2\"", "b", "12"},
        {"if [ a = a ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ a != a ]; then r=y; else r=n; fi", "r", "n"},
        {"if [ -n \"\" ]; then r=y; else r=n; fi", "r", "n"},
        {"if [ -z \"\" ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ ! -z x ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ \"\" ]; then r=y; else r=n; fi", "r", "n"},
        {"if [ ]; then r=y; else r=n; fi", "r", "y"}, /* test.c: no test is true */
        {"if [ 010 -eq 8 ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ 1 -lt 2 -a b = c ]; then r=y; else r=n; fi", "r", "n"},
        {"if [ a = b -o c = c ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ -e $prefix/grubenv ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ -s $prefix/grubenv ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ -f /custom.cfg ]; then r=y; else r=n; fi", "r", "n"},
        {"if [ -d $prefix ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ x\"${feature_menuentry_id}\" = xy ]; then r=y; else r=n; fi", "r", "y"},
        {"if [ \"$grub_platform\" = \"efi\" ]; then r=efi; elif [ \"$grub_platform\" = pc ]; then "
         "r=pc; fi",
         "r", "pc"},
        {"if false; then r=1; elif false; then r=2; else r=3; fi", "r", "3"},
        {"false; r=$?", "r", "1"},
        {"function f { r=\"${1}-$2\"; }\nf a b", "r", "a-b"},
        {"function f { return 3; r=no; }\nf; r=$?", "r", "3"},
        {"for i in a b c; do r=\"$r$i\"; done", "r", "abc"},
        {"i=0; while [ $i != 3 ]; do if [ $i = 0 ]; then i=1; elif [ $i = 1 ]; then i=2; else i=3; "
         "fi; done",
         "i", "3"},
        {"load_env; r=$saved_entry", "r", "s1"},
        {"load_env next_entry; r=\"$saved_entry\"", "r", ""},
        {"load_env -f /other; r=$?", "r", "1"},
        {"export e; r=\"$e\"", "r", ""},
        {"source $prefix/custom.cfg; r=$?", "r", "1"},
        /* A runaway value: the assignment fails, the script goes on. */
        {"a=x; while true; do a=\"$a$a$a\"; if [ $? != 0 ]; then break; fi; done; r=done", "r",
         "done"},
    };
    static const char *const vars[] = {"saved_entry=s1", "next_entry=n1", NULL};

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_grub_cfg *c = NULL;
        ks_grub_eval *ev = run(cases[i].script, vars, true, &c);
        CHECK_MSG(ev != NULL, "%s", cases[i].script);
        if (ev)
            CHECK_MSG(streq_ptr(ks_grub_eval_get(ev, cases[i].var), cases[i].want),
                      "'%s': %s='%s', want '%s'", cases[i].script, cases[i].var,
                      strempty(ks_grub_eval_get(ev, cases[i].var)), strempty(cases[i].want));
        ks_grub_eval_free(ev);
        ks_grub_cfg_free(c);
    }
}

static void test_save_env(void)
{
    static const char *const vars[] = {"next_entry=x", "keep=1", NULL};
    ks_grub_cfg *c = NULL;
    ks_grub_eval *ev;
    const ks_grubenv *e;

    ev = run("set next_entry=; save_env next_entry; set n=2; save_env n; unset keep; save_env keep",
             vars, true, &c);
    CHECK(ev != NULL);
    if (ev) {
        e = ks_grub_eval_env(ev);
        CHECK_STREQ(ks_grubenv_get(e, "next_entry"), "");
        CHECK_STREQ(ks_grubenv_get(e, "n"), "2");
        CHECK(ks_grubenv_get(e, "keep") == NULL);
        CHECK_INTEQ(ks_grub_eval_save_env_failures(ev), 0);
    }
    ev = ks_grub_eval_free(ev);
    c = ks_grub_cfg_free(c);
    /* Not writable at boot: errors, the block keeps what it had. */
    ev = run("set next_entry=; save_env next_entry", vars, false, &c);
    CHECK(ev != NULL);
    if (ev) {
        CHECK_STREQ(ks_grubenv_get(ks_grub_eval_env(ev), "next_entry"), "x");
        CHECK_INTEQ(ks_grub_eval_save_env_failures(ev), 1);
    }
    ev = ks_grub_eval_free(ev);
    c = ks_grub_cfg_free(c);
    /* Too big for the block: nothing of that save_env is written. */
    _cleanup_free_ char *big = ks_asprintf("set a=1; set b=%01000d; save_env a b", 0);
    ev = run(big, vars, true, &c);
    CHECK(ev != NULL);
    if (ev) {
        CHECK(ks_grubenv_get(ks_grub_eval_env(ev), "a") == NULL);
        CHECK_INTEQ(ks_grub_eval_save_env_failures(ev), 1);
    }
    ks_grub_eval_free(ev);
    ks_grub_cfg_free(c);
}

/* The header of a fixture, up to its END marker, with mutations; default and boot_once as
 * GRUB computes them. */
static void test_headers(void)
{
    static const char *const next[] = {"next_entry=N", "saved_entry=S", NULL};
    static const char *const saved[] = {"saved_entry=S", NULL};
    static const char *const prev[] = {"next_entry=N", "prev_saved_entry=P", NULL};
    static const char *const initrd1[] = {"initrdfail=1", "prev_entry=PE", NULL};
    static const char *const rf[] = {"recordfail=1", NULL};
    static const struct {
        const char *name, *file;
        const char *from, *to;
        const char *const *vars;
        const char *want_default, *want_boot_once, *want_saved, *want_timeout;
    } cases[] = {
        {"u24 plain", "ubuntu-24.04-two-kernels.cfg", NULL, NULL, NULL, "0", NULL, NULL, "0"},
        {"u24 next", "ubuntu-24.04-two-kernels.cfg", NULL, NULL, next, "N", "true", "S", "0"},
        {"u24 saved", "ubuntu-24.04-two-kernels.cfg", "set default=\"0\"",
         "set default=\"${saved_entry}\"", saved, "S", NULL, "S", "0"},
        {"u24 other default", "ubuntu-24.04-two-kernels.cfg", "set default=\"0\"",
         "set default=\"1>2\"", saved, "1>2", NULL, "S", "0"},
        {"u24 initrdfail re-arm", "ubuntu-24.04-two-kernels.cfg", NULL, NULL, initrd1, "PE", "true",
         NULL, "0"},
        {"u24 prev_saved", "ubuntu-24.04-two-kernels.cfg", NULL, NULL, prev, "N", "true", "P", "0"},
        /* Blocks reordered: prev_saved_entry before next_entry: same outcome. */
        {"u24 reordered", "ubuntu-24.04-two-kernels.cfg", "if [ \"${next_entry}\" ] ; then",
         "if [ \"${prev_saved_entry}\" ]; then\n  set saved_entry=\"${prev_saved_entry}\"\n"
         "  save_env saved_entry\n  set prev_saved_entry=\n  save_env prev_saved_entry\n"
         "  set boot_once=true\nfi\nif [ \"${next_entry}\" ] ; then",
         prev, "N", "true", "P", "0"},
        /* An extra variable and branch after the default block. */
        {"u24 extra branch", "ubuntu-24.04-two-kernels.cfg",
         "if [ x\"${feature_menuentry_id}\" = xy ]; then",
         "set extra=yes\nif [ \"$extra\" = no ]; then\n  set default=9\nelif [ \"$extra\" = yes ]; "
         "then\n"
         "  set default=\"${default}>1\"\nfi\nif [ x\"${feature_menuentry_id}\" = xy ]; then",
         NULL, "0>1", NULL, NULL, "0"},
        /* The recordfail timeout branch. */
        {"u24 recordfail", "ubuntu-24.04-two-kernels.cfg", NULL, NULL, rf, "0", NULL, NULL, "30"},
        {"u22 cloud", "ubuntu-22.04-cloud.cfg", NULL, NULL, next, "N", "true", "S", "0"},
        {"u22 aws initrdfail", "ubuntu-22.04-aws-force-partuuid-two-kernels.cfg", NULL, NULL,
         initrd1, "PE", "true", NULL, "0"},
        {"debian", "debian-lvm.cfg", NULL, NULL, next, "N", "true", "S", "5"},
        {"debian saved", "debian-lvm.cfg", "set default=\"0\"", "set default=\"${saved_entry}\"",
         saved, "S", NULL, "S", "5"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *text = gt_read_fixture(cases[i].file, NULL);
        _cleanup_free_ char *mut = NULL;
        char *end;
        ks_grub_cfg *c = NULL;
        ks_grub_eval *ev;

        CHECK(text != NULL);
        if (!text)
            continue;
        end = strstr(text, "### END /etc/grub.d/00_header ###");
        CHECK(end != NULL);
        if (end)
            *end = '\0';
        if (cases[i].from) {
            mut = gt_replace(text, cases[i].from, cases[i].to);
            CHECK_MSG(mut != NULL, "%s: mutation not found", cases[i].name);
            if (!mut)
                continue;
        }
        ev = run(mut ? mut : text, cases[i].vars, true, &c);
        CHECK_MSG(ev != NULL, "%s", cases[i].name);
        if (ev) {
            CHECK_MSG(streq_ptr(ks_grub_eval_get(ev, "default"), cases[i].want_default),
                      "%s: default '%s'", cases[i].name, strempty(ks_grub_eval_get(ev, "default")));
            CHECK_MSG(streq_ptr(ks_grub_eval_get(ev, "boot_once"), cases[i].want_boot_once),
                      "%s: boot_once '%s'", cases[i].name,
                      strempty(ks_grub_eval_get(ev, "boot_once")));
            CHECK_MSG(streq_ptr(ks_grub_eval_get(ev, "saved_entry"), cases[i].want_saved),
                      "%s: saved_entry '%s'", cases[i].name,
                      strempty(ks_grub_eval_get(ev, "saved_entry")));
            CHECK_MSG(streq_ptr(ks_grub_eval_get(ev, "timeout"), cases[i].want_timeout),
                      "%s: timeout '%s'", cases[i].name, strempty(ks_grub_eval_get(ev, "timeout")));
            if (cases[i].vars == next)
                CHECK_STREQ(ks_grubenv_get(ks_grub_eval_env(ev), "next_entry"), "");
        }
        ks_grub_eval_free(ev);
        ks_grub_cfg_free(c);
    }
}

static void test_submenu_context(void)
{
    /* Only exported variables reach a submenu's body (grub_env_context_open). */
    static const char script[] =
        "set plain=1\nset ex=1\nexport ex\n"
        "submenu 'S' --id s {\n"
        "  if [ \"$plain\" ]; then menuentry 'plain seen' { linux /vmlinuz-1 }; fi\n"
        "  if [ \"$ex\" ]; then menuentry 'exported seen' { linux /vmlinuz-2 }; fi\n"
        "}\n";
    ks_grub_cfg *c = NULL;
    ks_grub_eval *ev = run(script, NULL, true, &c);
    const ks_grub_entry *m;
    size_t n = 0;

    CHECK(ev != NULL);
    if (ev) {
        m = ks_grub_eval_menu(ev, &n);
        CHECK_INTEQ(n, 1);
        if (n == 1) {
            CHECK_INTEQ(m[0].n_children, 1);
            if (m[0].n_children == 1)
                CHECK_STREQ(m[0].children[0].title, "exported seen");
        }
    }
    ks_grub_eval_free(ev);
    ks_grub_cfg_free(c);
}

/* The files a boot loads: the initrd command after the last linux command (the kernel loader
 * drops an earlier initrd), GRUB's paths as the script expands them. */
static void test_boot_files(void)
{
    static const struct {
        const char *body, *want; /* want: the initrds joined by '|', NULL: none */
    } cases[] = {
        {"linux /boot/vmlinuz-1 ro\n initrd /boot/initrd.img-1", "/boot/initrd.img-1"},
        {"linux /vmlinuz-1\n initrd /boot/ucode.img /boot/initrd.img-1",
         "/boot/ucode.img|/boot/initrd.img-1"},
        {"set d=/boot\n linux $d/vmlinuz-1\n initrd $d/initrd.img-1", "/boot/initrd.img-1"},
        {"linux /vmlinuz-1\n initrd --nounzip /initrd.img-1", "/initrd.img-1"},
        {"linux /vmlinuz-1\n initrd /a\n initrd /b", "/b"},
        {"linux /vmlinuz-1\n initrd /a\n linux /vmlinuz-2", NULL},
        {"initrd /a\n linux /vmlinuz-1", NULL}, /* no kernel yet: GRUB refuses the initrd */
        {"linux /vmlinuz-1", NULL},
        {"linux16 /vmlinuz-1\n initrd16 /i16", "/i16"},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *script =
            ks_asprintf("set timeout=0\nmenuentry 'e' {\n %s\n}\n", cases[i].body);
        _cleanup_free_ char *got = NULL;
        ks_grub_boot_result res = {0};
        ks_grub_cfg *c = NULL;
        ks_grub_eval *ev = script ? run(script, NULL, true, &c) : NULL;

        CHECK_MSG(ev != NULL, "%s", cases[i].body);
        if (ev && ks_grub_eval_boot(ev, &res) >= 0) {
            got = res.initrds ? ks_strv_join(res.initrds, "|") : NULL;
            CHECK_MSG(res.loaded && streq_ptr(got, cases[i].want), "'%s': initrds '%s', want '%s'",
                      cases[i].body, strempty(got), strempty(cases[i].want));
        } else
            CHECK_MSG(false, "'%s': no boot", cases[i].body);
        ks_grub_boot_result_done(&res);
        ks_grub_eval_free(ev);
        ks_grub_cfg_free(c);
    }
}

int main(void)
{
    test_commands();
    test_boot_files();
    test_save_env();
    test_headers();
    test_submenu_context();
    TEST_DONE();
}
