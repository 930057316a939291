/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/config.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "test.h"

static char base[] = "/tmp/kswap-test-config.XXXXXX";

static void sh(const char *cmd)
{
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
}

int main(void)
{
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_strv_free_ char **mods = NULL;
    _cleanup_free_ char *err = NULL, *cmd = NULL, *hostconf = NULL;
    ks_config *c = NULL;
    char long_line[400];
    int v;
    bool b;

    /* Defaults without any file. */
    CHECK(ks_config_verify_modules(NULL, &mods) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 6);
    CHECK_STREQ(mods[5], "tcp_bbr");
    mods = ks_strv_free(mods);
    CHECK(ks_config_verify_bbr_version(NULL, &v) == 0);
    CHECK_INTEQ(v, 3);

    /* Repeated keys append, lists split on spaces and commas, " #" and " ;" end a value. */
    c = ks_config_new();
    CHECK(ks_config_parse(c,
                          "# comment\n[verify]\nmodules = nf_tables, wireguard # net\n"
                          "modules = tcp_bbr ; inline\nbbr_version = 2\n[accept]\nflag = yes\n",
                          "t", &err) == 0);
    CHECK(ks_config_verify_modules(c, &mods) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 3);
    CHECK_STREQ(mods[0], "nf_tables");
    CHECK_STREQ(mods[1], "wireguard");
    CHECK_STREQ(mods[2], "tcp_bbr");
    mods = ks_strv_free(mods);
    CHECK(ks_config_verify_bbr_version(c, &v) == 0);
    CHECK_INTEQ(v, 2);
    CHECK(ks_config_get_bool(c, "ACCEPT", "Flag", false, &b) == 0 && b);
    CHECK(ks_config_get_bool(c, "accept", "none", true, &b) == 0 && b);
    CHECK_STREQ(ks_config_get_string(c, "accept", "missing", "d"), "d");
    CHECK_INTEQ(ks_strv_length(ks_config_get_values(c, "verify", "modules")), 2);

    /* An empty value resets; a bad integer is refused. */
    CHECK(ks_config_parse(c, "[verify]\nmodules =\nmodules = sch_fq\nbbr_version = x\n", "u",
                          &err) == 0);
    CHECK(ks_config_verify_modules(c, &mods) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 1);
    mods = ks_strv_free(mods);
    CHECK(ks_config_verify_bbr_version(c, &v) == -EINVAL);
    c = ks_config_free(c);

    /* Errors carry file and line. */
    c = ks_config_new();
    CHECK(ks_config_parse(c, "[verify]\nmodules = a\nthis line has no equals\n", "f.conf", &err) ==
          -EBADMSG);
    CHECK_STREQ(err, "f.conf:3: cannot parse line (a key outside a [section], or no '=')");
    free(TAKE_PTR(err));
    CHECK(ks_config_parse(c, "modules = a\n", "g.conf", &err) == -EBADMSG);
    free(TAKE_PTR(err));
    memset(long_line, 'a', sizeof(long_line) - 1);
    long_line[sizeof(long_line) - 1] = '\0';
    memcpy(long_line, "[verify]\nmodules=", 17);
    CHECK(ks_config_parse(c, long_line, "h.conf", &err) == -EBADMSG);
    CHECK(err && strstr(err, "h.conf:2: line longer"));
    free(TAKE_PTR(err));
    c = ks_config_free(c);

    /* Files inside the root, drop-ins in name order. */
    CHECK(mkdtemp(base) != NULL);
    cmd =
        ks_asprintf("mkdir -p %s/etc/kswap/kswap.conf.d && "
                    "printf '[verify]\\nmodules = a\\n' > %s/etc/kswap/kswap.conf && "
                    "printf '[verify]\\nmodules = c\\n' > %s/etc/kswap/kswap.conf.d/20-c.conf && "
                    "printf '[verify]\\nmodules = b\\n' > %s/etc/kswap/kswap.conf.d/10-b.conf && "
                    "printf '[verify]\\nmodules = z\\n' > %s/etc/kswap/kswap.conf.d/30.disabled && "
                    "printf '[verify]\\nbbr_version = 1\\n' > %s/host.conf",
                    base, base, base, base, base, base);
    sh(cmd);
    CHECK(ks_root_open(base, &root) == 0);
    CHECK(ks_config_load(root, NULL, &c, &err) == 0);
    CHECK(ks_config_verify_modules(c, &mods) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 3);
    CHECK(mods && streq(mods[0], "a") && streq(mods[1], "b") && streq(mods[2], "c"));
    mods = ks_strv_free(mods);
    c = ks_config_free(c);

    /* --config: a path on the running machine replaces the main file; drop-ins still apply. */
    hostconf = ks_asprintf("%s/host.conf", base);
    CHECK(ks_config_load(root, hostconf, &c, &err) == 0);
    CHECK(ks_config_verify_bbr_version(c, &v) == 0);
    CHECK_INTEQ(v, 1);
    CHECK(ks_config_verify_modules(c, &mods) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 2);
    mods = ks_strv_free(mods);
    c = ks_config_free(c);
    CHECK(ks_config_load(root, "/nonexistent/kswap.conf", &c, &err) == -ENOENT);
    CHECK(err != NULL);
    free(TAKE_PTR(err));

    free(cmd);
    cmd = ks_asprintf("rm -rf %s", base);
    sh(cmd);
    TEST_DONE();
}
