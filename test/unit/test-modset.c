/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/kernel/modverify.h"
#include "lib/basic/util.h"
#include "test.h"

int main(void)
{
    _cleanup_modset_ ks_modset *s = ks_modset_new("6.18.1-x64v3-xanmod1");
    _cleanup_strv_free_ char **mods = NULL, **missing = NULL;
    ks_module_report m = {0};

    CHECK(s != NULL);
    CHECK(ks_modset_add_builtin(s, "tcp_bbr") == 0);
    CHECK(ks_modset_set_builtin_version(s, "tcp_bbr", "3") == 0);
    CHECK(ks_modset_add_module(s, "nf_tables", "kernel/net/netfilter/nf_tables.ko.zst") == 0);
    CHECK(ks_modset_set_info(s, "nf_tables", "nfnetlink,libcrc32c", NULL) == 0);
    CHECK(ks_modset_add_module(s, "nfnetlink", "kernel/net/netfilter/nfnetlink.ko") == 0);
    CHECK(ks_modset_set_info(s, "nfnetlink", "", NULL) == 0);
    CHECK(ks_modset_add_builtin(s, "libcrc32c") == 0);
    /* A dependency missing two levels down, and a cycle. */
    CHECK(ks_modset_add_module(s, "wireguard", "kernel/drivers/net/wireguard/wireguard.ko") == 0);
    CHECK(ks_modset_set_info(s, "wireguard", "udp_tunnel,curve25519-x86_64", "1.0.0") == 0);
    CHECK(ks_modset_add_module(s, "udp_tunnel", "u.ko") == 0);
    CHECK(ks_modset_set_info(s, "udp_tunnel", "ip6_udp_tunnel", NULL) == 0);
    CHECK(ks_modset_add_module(s, "curve25519-x86_64", "c.ko") == 0);
    CHECK(ks_modset_set_info(s, "curve25519_x86_64", "wireguard", NULL) == 0);
    /* First file wins, as depmod's search order does. */
    CHECK(ks_modset_add_module(s, "nfnetlink", "updates/nfnetlink.ko") == 0);
    CHECK_INTEQ(ks_modset_count(s), 7);
    CHECK(ks_modset_needs_info(s, "udp_tunnel") == false);

    CHECK(ks_modset_judge(s, "tcp_bbr", &m) == 0);
    CHECK_INTEQ(m.state, KS_MODULE_BUILTIN);
    CHECK_STREQ(m.version, "3");
    CHECK(m.file == NULL);
    CHECK(ks_module_report_ok(&m));
    ks_module_report_done(&m);

    CHECK(ks_modset_judge(s, "nf_tables", &m) == 0);
    CHECK_INTEQ(m.state, KS_MODULE_LOADABLE);
    CHECK_STREQ(m.file, "kernel/net/netfilter/nf_tables.ko.zst");
    CHECK(m.missing_deps == NULL);
    CHECK(ks_module_report_ok(&m));
    ks_module_report_done(&m);

    CHECK(ks_modset_judge(s, "wireguard", &m) == 0);
    CHECK_INTEQ(m.state, KS_MODULE_LOADABLE);
    CHECK_STREQ(m.version, "1.0.0");
    CHECK_INTEQ(ks_strv_length(m.missing_deps), 1);
    CHECK_STREQ(m.missing_deps ? m.missing_deps[0] : NULL, "ip6_udp_tunnel");
    CHECK(!ks_module_report_ok(&m));
    ks_module_report_done(&m);

    CHECK(ks_modset_judge(s, "sch-cake", &m) == 0);
    CHECK_STREQ(m.name, "sch_cake");
    CHECK_INTEQ(m.state, KS_MODULE_MISSING);
    CHECK(!ks_module_report_ok(&m));
    ks_module_report_done(&m);

    CHECK(ks_modset_has(s, "libcrc32c") == 1);
    CHECK(ks_modset_has(s, "ip_tables") == 0);

    CHECK(ks_modset_closure(s, "nf_tables", &mods, &missing) == 0);
    CHECK_INTEQ(ks_strv_length(mods), 2); /* nf_tables, nfnetlink; libcrc32c is built in */
    CHECK(missing == NULL);
    mods = ks_strv_free(mods);
    CHECK(ks_modset_closure(s, "tcp_bbr", &mods, &missing) == 0);
    CHECK(mods == NULL && missing == NULL);
    CHECK(ks_modset_closure(s, "virtio_blk", &mods, &missing) == 0);
    CHECK(mods == NULL && ks_strv_length(missing) == 1);
    missing = ks_strv_free(missing);

    CHECK_STREQ(ks_module_state_to_string(KS_MODULE_LOADABLE), "module");
    CHECK_STREQ(ks_module_state_to_string(KS_MODULE_BUILTIN), "builtin");
    CHECK_STREQ(ks_module_state_to_string(KS_MODULE_MISSING), "missing");
    TEST_DONE();
}
