/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * congestion_control: what the node's established connections run (sock_diag, never the
 * sysctl alone), against what the node configures. A connection keeps the congestion control it
 * was created with, and none survives a boot: on the trial boot every established connection
 * was opened on the trial kernel after its sysctls were set, so all of them count, and the
 * check is required once there are some (wanted while there is none: a quiet node cannot show
 * it). sock_diag gives no creation time, so on any other boot a connection may predate a
 * runtime `sysctl -w` and keep the old algorithm: there the check reports, never requires (it
 * must not refuse an apply over connections older than the setting). Connections to this node
 * itself (loopback) are not the node's traffic and are left out.
 */
#include <inttypes.h>

#include "checks/check.h"
#include "lib/basic/util.h"
#include "lib/host/sysctl.h"
#include "lib/host/tcpdiag.h"

#define CC_KIND "congestion-control"
#define CC_SYSCTL "net.ipv4.tcp_congestion_control"
/* Ports of connections that run another congestion control, named in the detail. */
#define CC_MAX_PORTS 5

/* ", tcp_bbr version 3", or what the module says instead; "" for another algorithm. */
static char *bbr_version(const ks_root *root, const char *cc)
{
    _cleanup_free_ char *v = NULL;
    int r;

    if (!streq(cc, "bbr"))
        return strdup("");
    r = ks_root_read_line(root, "sys/module/tcp_bbr/version", &v);
    if (r < 0 && r != -ENOENT)
        return ks_asprintf(", tcp_bbr version unreadable: %s", strerror(-r));
    if (!v)
        return strdup(", tcp_bbr declares no version: BBRv1");
    return ks_asprintf(", tcp_bbr version %s", ks_strstrip(v));
}

/* The congestion controls other than cc with their counts ("cubic 3, reno 1"), how many names
 * that is, and the first local ports of their connections. */
static int others(const ks_tcp_conns *c, const char *cc, char **ret_mix, size_t *ret_names,
                  char **ret_ports)
{
    _cleanup_free_ char *mix = NULL, *ports = NULL;
    size_t n_ports = 0, names = 0;

    for (size_t i = 0; i < c->n; i++) {
        const ks_tcp_conn *x = &c->v[i];
        size_t count = 0;
        bool seen = false;
        char *n;

        if (ks_tcp_conn_is_loopback(x) || streq(x->cc, cc))
            continue;
        if (n_ports < CC_MAX_PORTS) {
            n = ks_asprintf("%s%s%u", strempty(ports), ports ? ", " : "", x->local_port);
            if (!n)
                return -ENOMEM;
            free(ports);
            ports = n, n_ports++;
        }
        /* Each name once, with its count, in the order met. */
        for (size_t k = 0; k < i && !seen; k++)
            seen = !ks_tcp_conn_is_loopback(&c->v[k]) && streq(c->v[k].cc, x->cc);
        if (seen)
            continue;
        for (size_t k = i; k < c->n; k++)
            count += !ks_tcp_conn_is_loopback(&c->v[k]) && streq(c->v[k].cc, x->cc);
        n = ks_asprintf("%s%s%s %zu", strempty(mix), mix ? ", " : "", x->cc[0] ? x->cc : "unknown",
                        count);
        if (!n)
            return -ENOMEM;
        free(mix);
        mix = n, names++;
    }
    *ret_mix = TAKE_PTR(mix);
    *ret_names = names;
    *ret_ports = TAKE_PTR(ports);
    return 0;
}

int ks_check_cc(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *why = NULL, *version = NULL, *live = NULL, *mix = NULL, *ports = NULL,
                        *setting = NULL;
    _cleanup_strv_free_ char **f = NULL;
    ks_tcp_conns conns = {0};
    size_t total = 0, good = 0, names = 0;
    const char *want;
    int r;

    r = ks_check_arg_fields(chk->arg, 1, &f);
    if (r < 0)
        return r;
    want = f[0];
    r = ks_tcp_conns_read(c->root, &conns, &why);
    if (r < 0) {
        free(chk->detail);
        chk->detail = why ? ks_asprintf("cannot read the connections: %s", why) : NULL;
        return r;
    }
    for (size_t i = 0; i < conns.n; i++)
        if (!ks_tcp_conn_is_loopback(&conns.v[i])) {
            total++;
            good += streq(conns.v[i].cc, want);
        }
    r = others(&conns, want, &mix, &names, &ports);
    ks_tcp_conns_done(&conns);
    if (r < 0)
        return r;
    version = bbr_version(c->root, want);
    (void)ks_sysctl_live(c->root, CC_SYSCTL, &live);
    setting =
        version ? ks_asprintf("%s = %s%s", CC_SYSCTL, live ? live : "(unreadable)", version) : NULL;
    if (!setting)
        return -ENOMEM;
    free(chk->detail);
    /* A quiet node cannot show what new connections run: reported, not a failure; nor can a
     * boot other than the trial's tell new connections from old ones. */
    chk->required = total > 0 && c->trial;
    if (total == 0)
        chk->detail = ks_asprintf("no established TCP connection yet (loopback aside): cannot "
                                  "tell what new connections run; %s",
                                  setting);
    else if (good == total)
        chk->detail = ks_asprintf("%zu of %zu connections run %s (%s)", good, total, want, setting);
    else if (names == 1) /* mix is "NAME COUNT" */
        chk->detail = ks_asprintf("%zu of %zu connections run %.*s, not %s (%s); their local "
                                  "ports: %s",
                                  total - good, total, (int)strcspn(mix, " "), mix, want, setting,
                                  strempty(ports));
    else
        chk->detail = ks_asprintf("%zu of %zu connections run another congestion control than "
                                  "%s (%s; %s); their local ports: %s",
                                  total - good, total, want, mix, setting, strempty(ports));
    if (chk->detail && total > 0 && good < total && !c->trial) {
        char *d = ks_asprintf("%s; not the trial boot: a connection may be older than the "
                              "setting (reported, required on the trial boot)",
                              chk->detail);
        free(chk->detail);
        chk->detail = d;
    }
    if (!chk->detail)
        return -ENOMEM;
    return total > 0 && good == total;
}

/* A congestion control's name as the kernel has them (TCP_CA_NAME_MAX 16), auto or no. */
static bool item_cc(const char *v)
{
    return streq(v, "auto") || streq(v, "no") || ks_tcp_cc_name_is_valid(v);
}

/*
 * The check's place in the checklist: [accept] congestion_control names the algorithm, "no"
 * turns it off; unset, it is bbr when the node configures bbr (the live sysctl, or the sysctl.d
 * files: a trial kernel without bbr falls back to another one), and no check otherwise.
 */
static int add_cc(const ks_root *root, const ks_config *cfg, ks_checklist *l, char **ret_error)
{
    _cleanup_free_ char *live = NULL, *configured = NULL, *arg = NULL;
    const char *want = ks_config_get_string(cfg, "accept", "congestion_control", "auto");

    if (streq(want, "no"))
        return 0;
    /* Checked when the configuration was read; a checklist built from another one must not act
     * on a malformed value either. */
    if (!item_cc(want)) {
        if (ret_error)
            *ret_error = ks_asprintf("[accept] congestion_control: '%s' is not a congestion "
                                     "control's name, 'auto' or 'no'",
                                     want);
        return -EINVAL;
    }
    if (streq(want, "auto")) {
        (void)ks_sysctl_live(root, CC_SYSCTL, &live);
        (void)ks_sysctl_configured(root, CC_SYSCTL, &configured, NULL);
        if (!streq_ptr(live, "bbr") && !streq_ptr(configured, "bbr"))
            return 0;
        want = "bbr";
    }
    arg = ks_check_id_escape(want, true);
    if (!arg)
        return -ENOMEM;
    return ks_checklist_add(l, CC_KIND, arg, true, ks_check_cc);
}

static const ks_config_key keys[] = {
    {.section = "accept",
     .key = "congestion_control",
     .type = KS_CT_STRING,
     .item_ok = item_cc,
     .def = "auto",
     .hint = "a congestion control name, auto or no"},
    {0},
};

const ks_check_kind ks_check_kind_congestion_control = {
    .name = CC_KIND,
    .max_fields = 1,
    .run = ks_check_cc,
    .keys = keys,
    .add_configured = add_cc,
};
