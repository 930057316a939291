/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "lib/basic/config.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "test.h"

static char base[] = "/tmp/kswap-test-config.XXXXXX";

static void sh(const char *cmd)
{
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
}

static const struct {
    const char *text, *error; /* error NULL: parses */
} cases[] = {
    {"[accept]\nservices = a.service b.service\n", NULL},
    {"[Accept]\nServices = a.service\n", NULL},
    {"[accept]\nservice = xray.service\n",
     "k.conf:2: unknown key 'service' in [accept]; did you mean 'services'?"},
    {"[accept]\n\n# c\nlsten = tcp:443\n",
     "k.conf:4: unknown key 'lsten' in [accept]; did you mean 'listen'?"},
    {"[accept]\nzzzzzzzz = 1\n", "k.conf:2: unknown key 'zzzzzzzz' in [accept]"},
    {"[accept]\nbbr = 3\n", "k.conf:2: unknown key 'bbr' in [accept]"},
    {"[accept]\nadd_panic = yes\n",
     "k.conf:2: unknown key 'add_panic' in [accept]; it belongs in [apply]"},
    {"[acept]\nservices = x\n", "k.conf:1: unknown section [acept]; did you mean [accept]?"},
    {"[network]\n", "k.conf:1: unknown section [network]"},
    {"[accept]\non_failure = rebot\n",
     "k.conf:2: [accept] on_failure = rebot is not one of reboot, stay; did you mean 'reboot'?"},
    {"[accept]\non_failure = stay\n", NULL},
    {"[accept]\non_failure = nothing\n",
     "k.conf:2: [accept] on_failure = nothing is not one of reboot, stay"},
    {"[accept]\nauto_pin = nope\n",
     "k.conf:2: [accept] auto_pin = nope is not a boolean (yes/no, true/false, on/off, 1/0)"},
    {"[accept]\nauto_pin = OFF\n", NULL},
    {"[accept]\nlisten = tcp:443 tcp:99999\n",
     "k.conf:2: [accept] 'tcp:99999' is not a valid item of listen (PROTO:PORT, PROTO tcp, tcp6, "
     "udp or udp6, PORT 1-65535)"},
    {"[accept]\nlisten = sctp:80\n",
     "k.conf:2: [accept] 'sctp:80' is not a valid item of listen (PROTO:PORT, PROTO tcp, tcp6, "
     "udp or udp6, PORT 1-65535)"},
    {"[accept]\nlisten = tcp:0\n",
     "k.conf:2: [accept] 'tcp:0' is not a valid item of listen (PROTO:PORT, PROTO tcp, tcp6, udp "
     "or udp6, PORT 1-65535)"},
    {"[accept]\nlisten = udp6:65535, tcp:1\n", NULL},
    {"[accept]\nreach = 10.0.0.1:443 [2001:db8::1]:22 ctl.example.net:8443\n", NULL},
    {"[accept]\nreach = 10.0.0.1\n",
     "k.conf:2: [accept] '10.0.0.1' is not a valid item of reach (HOST:PORT, PORT 1-65535, "
     "[ADDR]:PORT for IPv6)"},
    {"[accept]\nreach = 2001:db8::1:22\n",
     "k.conf:2: [accept] '2001:db8::1:22' is not a valid item of reach (HOST:PORT, PORT 1-65535, "
     "[ADDR]:PORT for IPv6)"},
    {"[accept]\nreach = host:0\n",
     "k.conf:2: [accept] 'host:0' is not a valid item of reach (HOST:PORT, PORT 1-65535, "
     "[ADDR]:PORT for IPv6)"},
    {"[accept]\nreach = []:80\n",
     "k.conf:2: [accept] '[]:80' is not a valid item of reach (HOST:PORT, PORT 1-65535, "
     "[ADDR]:PORT for IPv6)"},
    {"[accept]\nsysctl = novalue\n",
     "k.conf:2: [accept] 'novalue' is not a valid item of sysctl (KEY=VALUE)"},
    {"[accept]\nqdisc = eth0\n",
     "k.conf:2: [accept] 'eth0' is not a valid item of qdisc (IF:KIND)"},
    {"[accept]\ninterfaces = ../etc\n",
     "k.conf:2: [accept] '../etc' is not a valid item of interfaces (a name, not a path)"},
    {"[apply]\nupdate_grub_timeout = 115964117\n",
     "k.conf:2: [apply] update_grub_timeout = 115964117 is out of range (1 to 86400)"},
    {"[apply]\napt_timeout = 536870912\n",
     "k.conf:2: [apply] apt_timeout = 536870912 is out of range (1 to 86400)"},
    {"[apply]\napt_timeout = 99999999999999999999999\n",
     "k.conf:2: [apply] apt_timeout = 99999999999999999999999 is out of range (1 to 86400)"},
    {"[apply]\napt_timeout = -5\n",
     "k.conf:2: [apply] apt_timeout = -5 is not a number (decimal digits, 1 to 86400)"},
    {"[apply]\napt_timeout = 0\n",
     "k.conf:2: [apply] apt_timeout = 0 is out of range (1 to 86400)"},
    {"[apply]\napt_timeout = 10s\n",
     "k.conf:2: [apply] apt_timeout = 10s is not a number (decimal digits, 1 to 86400)"},
    {"[apply]\napt_timeout = 3600 ; an hour\n", NULL},
    {"[apply]\napt_timeout =\n", NULL},
    {"[accept]\nservices = a\n  b.service\n  c..service\n", NULL},
    {"[accept]\nservices = a\n  ../x\n",
     "k.conf:3: [accept] '../x' is not a valid item of services (a name, not a path)"},
    {"services = a\n", "k.conf:1: key 'services' outside a [section]"},
    {"[repository]\nuri = http://mirror.example/xanmod\nsuite = bookworm\ncomponents = main\n",
     NULL},
    {"[repository]\nuri = mirror+file:/etc/apt/mirrors.txt\n", NULL},
    {"[repository]\nuri = file:/srv/kswap-repo\nsuite = ./\n", NULL},
    {"[repository]\nuri = deb.xanmod.org\n",
     "k.conf:2: [repository] uri = deb.xanmod.org is not valid (one word: http://, https://, "
     "file:/ or copy:/, optionally behind mirror+ or tor+)"},
    {"[repository]\nuri = http://\n",
     "k.conf:2: [repository] uri = http:// is not valid (one word: http://, https://, file:/ or "
     "copy:/, optionally behind mirror+ or tor+)"},
    {"[repository]\nuri = http://a.example/ x\n",
     "k.conf:2: [repository] uri = http://a.example/ x is not valid (one word: http://, https://, "
     "file:/ or copy:/, optionally behind mirror+ or tor+)"},
    {"[repository]\nuri = [trusted=yes] http://a.example\n",
     "k.conf:2: [repository] uri = [trusted=yes] http://a.example is not valid (one word: "
     "http://, https://, file:/ or copy:/, optionally behind mirror+ or tor+)"},
    {"[repository]\nuri = Evil+http://a.example\n",
     "k.conf:2: [repository] uri = Evil+http://a.example is not valid (one word: http://, "
     "https://, file:/ or copy:/, optionally behind mirror+ or tor+)"},
    {"[repository]\nsuite = book worm\n",
     "k.conf:2: [repository] suite = book worm is not valid (one word, no spaces or brackets)"},
    {"[repository]\ncomponents = main [x]\n",
     "k.conf:2: [repository] '[x]' is not a valid item of components (one word, no brackets)"},
};

int main(void)
{
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_strv_free_ char **mods = NULL;
    _cleanup_free_ char *err = NULL, *cmd = NULL, *hostconf = NULL;
    ks_config *c = NULL;
    char long_line[400];
    int v;
    bool b;

    /*
     * The configuration layer does not know the [accept] keys itself: until the check plug-ins
     * register theirs (checks/registry.c), [accept] is an unknown section.
     */
    c = ks_config_new();
    CHECK(ks_config_parse(c, "[accept]\nservices = ssh.service\n", "k.conf", &err) == -EBADMSG);
    CHECK_MSG(err && streq(err, "k.conf:1: unknown section [accept]"), "%s", strempty(err));
    free(TAKE_PTR(err));
    c = ks_config_free(c);
    CHECK(ks_config_key_find("accept", "services") == NULL);
    CHECK(ks_checks_register_config() == 0);
    CHECK(ks_checks_register_config() == 0); /* once is enough; again changes nothing */
    CHECK(ks_config_key_find("accept", "services") != NULL);
    CHECK(ks_config_key_find("accept", "timeout") != NULL);
    {
        /* A key given twice is a programming error, not a silent override. */
        static const ks_config_key clash[] = {KS_CONFIG_UINT("accept", "timeout", 1, 9, 5)};
        static const ks_config_key other[] = {KS_CONFIG_UINT("test", "x", 1, 9, 5)};
        size_t n0, n1;
        ks_config_keys(&n0);
        CHECK(ks_config_register(clash, ARRAY_SIZE(clash)) == -EEXIST);
        CHECK(ks_config_register(other, ARRAY_SIZE(other)) == 0);
        ks_config_keys(&n1);
        CHECK_INTEQ(n1, n0 + 1);
    }

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
                          "modules = tcp_bbr ; inline\nbbr_version = 2\n[accept]\nauto_Pin = no\n",
                          "t", &err) == 0);
    CHECK(ks_config_verify_modules(c, &mods) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 3);
    CHECK_STREQ(mods[0], "nf_tables");
    CHECK_STREQ(mods[1], "wireguard");
    CHECK_STREQ(mods[2], "tcp_bbr");
    mods = ks_strv_free(mods);
    CHECK(ks_config_verify_bbr_version(c, &v) == 0);
    CHECK_INTEQ(v, 2);
    CHECK(ks_config_get_bool(c, "ACCEPT", "auto_pin", true, &b) == 0 && !b);
    CHECK(ks_config_get_bool(c, "apply", "add_panic", true, &b) == 0 && b);
    CHECK_STREQ(ks_config_get_string(c, "accept", "missing", "d"), "d");
    CHECK_INTEQ(ks_strv_length(ks_config_get_values(c, "verify", "modules")), 2);

    /* An empty value resets; a bad integer is refused at parse time, with its line. */
    CHECK(ks_config_parse(c, "[verify]\nmodules =\nmodules = sch_fq\n", "u", &err) == 0);
    CHECK(ks_config_verify_modules(c, &mods) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 1);
    mods = ks_strv_free(mods);
    CHECK(ks_config_parse(c, "[verify]\nbbr_version = x\n", "u", &err) == -EBADMSG);
    CHECK(err && ks_startswith(err, "u:2: [verify] bbr_version = x is not a number"));
    free(TAKE_PTR(err));
    c = ks_config_free(c);

    /* Table-driven: each text either parses, or fails with exactly this message. */
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        c = ks_config_new();
        int r = ks_config_parse(c, cases[i].text, "k.conf", &err);
        CHECK_MSG(cases[i].error ? r == -EBADMSG : r == 0, "case %zu: %d", i, r);
        if (cases[i].error)
            CHECK_MSG(err && streq(err, cases[i].error), "case %zu: '%s'", i, strempty(err));
        free(TAKE_PTR(err));
        c = ks_config_free(c);
    }

    /* Every key of the table has a default that fits its own type. */
    {
        size_t n;
        const ks_config_key *keys = ks_config_keys(&n);
        CHECK(n >= 24);
        for (size_t i = 0; i < n; i++) {
            uint64_t u;
            if (keys[i].type == KS_CT_UINT && keys[i].def && !streq(keys[i].def, "0"))
                CHECK_MSG(ks_config_parse_u64(keys[i].def, keys[i].min, keys[i].max, &u) == 0,
                          "[%s] %s default %s", keys[i].section, keys[i].key, keys[i].def);
            if (keys[i].type == KS_CT_UINT)
                CHECK(ks_config_get_u64(NULL, keys[i].section, keys[i].key, &u) == 0 ||
                      streq(keys[i].def, "0"));
            CHECK(ks_config_key_find(keys[i].section, keys[i].key) == &keys[i]);
        }
        CHECK(ks_config_get_u64(NULL, "accept", "services", &(uint64_t){0}) == -ENOKEY);
    }
    {
        uint64_t u = 0;
        c = ks_config_new();
        CHECK(ks_config_parse(c, "[apply]\nupdate_grub_timeout = 86400\n", "m", &err) == 0);
        CHECK(ks_config_get_u64(c, "apply", "update_grub_timeout", &u) == 0 && u == 86400);
        CHECK(ks_config_get_u64(c, "apply", "apt_timeout", &u) == 0 && u == 1800);
        c = ks_config_free(c);
        CHECK(ks_config_parse_u64("18446744073709551615", 0, UINT64_MAX, &u) == 0 &&
              u == UINT64_MAX);
        CHECK(ks_config_parse_u64("18446744073709551616", 0, UINT64_MAX, &u) == -ERANGE);
        CHECK(ks_config_parse_u64("+5", 0, 9, &u) == -EINVAL);
        CHECK(ks_config_parse_u64(" 5", 0, 9, &u) == -EINVAL);
        CHECK(ks_config_parse_u64("0x5", 0, 9, &u) == -EINVAL);
        CHECK(ks_config_parse_u64("", 0, 9, &u) == -EINVAL);
    }

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
