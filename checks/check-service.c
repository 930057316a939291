/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * service: the [accept] key services and every active service unit of what runs
 * ("service:UNIT"). `systemctl is-active UNIT`, the state the service manager has now; a unit
 * started on demand (by a socket, a timer or a path unit) counts as what starts it.
 */
#include "checks/check.h"
#include "checks/procnet.h"
#include "checks/snapshot.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

/* The value of KEY in `systemctl show` output ("KEY=VALUE" lines), NULL when absent. */
static char *show_value(const char *output, const char *key)
{
    size_t kl = strlen(key);
    const char *l = output;

    while (l && *l) {
        if (strncmp(l, key, kl) == 0 && l[kl] == '=')
            return strndup(l + kl + 1, strcspn(l + kl + 1, "\n"));
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    return NULL;
}

/* `systemctl show --property=PROPS UNIT`: 0 with its output, negative errno when systemctl
 * could not answer. */
static int unit_show(const ks_check_ctx *c, const char *unit, const char *props, char **ret)
{
    _cleanup_free_ char *opt = ks_asprintf("--property=%s", props);
    char *argv[] = {(char *)"systemctl", (char *)"show", opt, (char *)unit, NULL};
    ks_spawn_result res = {0};
    int r;

    if (!opt)
        return -ENOMEM;
    r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
    if (r < 0)
        return r;
    if (!ks_spawn_succeeded(&res)) {
        ks_spawn_result_done(&res);
        return -EIO;
    }
    *ret = strndup(res.output ? res.output : "", res.output_len);
    ks_spawn_result_done(&res);
    return *ret ? 0 : -ENOMEM;
}

/*
 * Whether systemd skipped the unit on this boot because one of its Condition*= does not hold:
 * ConditionResult=no with a condition time (a unit never started has ConditionResult=no and a
 * zero time).
 */
static bool condition_skipped(const char *show)
{
    _cleanup_free_ char *result = show_value(show, "ConditionResult"),
                        *when = show_value(show, "ConditionTimestampMonotonic");

    return result && streq(result, "no") && when && *when && !streq(when, "0");
}

/*
 * An inactive unit that systemd skipped by its own condition on this boot. A boot task
 * (Type=oneshot) that ran before the trial and is skipped now did what systemd decided this
 * boot needs: systemd-fsck-root.service is skipped whenever the initramfs checked the root
 * file system (ConditionPathExists=!/run/initramfs/fsck-root), and the old and the new
 * kernel's initramfs may differ in that (seen on a whole VM: the old initrd had no fsck, the
 * one apt built for the trial kernel had). That passes, for items of the snapshot only. A
 * daemon skipped so did not come back, and no waiting brings it: a final failure that says why.
 * Returns 1 (pass), 0 (fail) with the detail set, or -1 when the unit was not skipped so.
 */
static int judge_skipped(ks_check *chk, const char *unit, const char *show, char **detail)
{
    _cleanup_free_ char *type = show_value(show, "Type");

    if (!condition_skipped(show))
        return -1;
    free(*detail);
    if (type && streq(type, "oneshot") && chk->from_snapshot) {
        *detail = ks_asprintf("%s was skipped on this boot: one of its conditions does not hold "
                              "(a boot task; 'systemctl status %s' names the condition)",
                              unit, unit);
        return 1;
    }
    chk->final = true;
    *detail = ks_asprintf("%s was skipped on this boot: one of its conditions does not hold "
                          "('systemctl status %s' names it); waiting will not start it",
                          unit, unit);
    return 0;
}

/*
 * "[::]:22 (Stream)", "0.0.0.0:53 (Datagram)" (systemctl show's Listen= lines, one per socket):
 * the protocol and port of an IP socket; 0 for what is not one (a path, an abstract or vsock
 * socket, a FIFO, netlink).
 */
static int listen_port(const char *line, ks_sock_proto *ret_p, uint16_t *ret_port)
{
    const char *paren = strrchr(line, '('), *colon;
    _cleanup_free_ char *addr = NULL;
    unsigned long long port;
    size_t n;

    if (!paren || paren == line || paren[-1] != ' ')
        return 0;
    addr = strndup(line, (size_t)(paren - line - 1));
    if (!addr)
        return -ENOMEM;
    colon = strrchr(addr, ':');
    if (!colon || ks_safe_atou64(colon + 1, &port) < 0 || port == 0 || port > 65535)
        return 0;
    n = (size_t)(colon - addr);
    /* "[v6]:port" or "a.b.c.d:port"; "vsock:CID:PORT" and paths are not IP sockets. */
    if (!(addr[0] == '[' && n > 1 && addr[n - 1] == ']') && strspn(addr, "0123456789.") != n)
        return 0;
    if (streq(paren, "(Stream)"))
        *ret_p = addr[0] == '[' ? KS_SOCK_TCP6 : KS_SOCK_TCP;
    else if (streq(paren, "(Datagram)"))
        *ret_p = addr[0] == '[' ? KS_SOCK_UDP6 : KS_SOCK_UDP;
    else
        return 0;
    *ret_port = (uint16_t)port;
    return 1;
}

/* Whether something listens on port in either family of p's protocol (systemd's [::] socket
 * takes IPv4 too unless BindIPv6Only=ipv6-only, and sits in tcp6 then). */
static int port_listens(const ks_root *root, ks_sock_proto p, uint16_t port, bool *ret)
{
    bool tcp = p == KS_SOCK_TCP || p == KS_SOCK_TCP6;
    ks_sock_proto both[2] = {tcp ? KS_SOCK_TCP : KS_SOCK_UDP, tcp ? KS_SOCK_TCP6 : KS_SOCK_UDP6};

    *ret = false;
    for (size_t i = 0; i < 2 && !*ret; i++) {
        ks_socks s = {0};
        int r = ks_procnet_read(root, both[i], &s);
        if (r == -ENOENT)
            continue;
        if (r < 0)
            return r;
        *ret = ks_socks_listens(&s, both[i], port);
        ks_socks_done(&s);
    }
    return 0;
}

/*
 * The IP sockets of a socket unit (its Listen= lines) listen as the kernel shows them: 1 all
 * of them (*ret_what names them, "TCP port 22"; NULL when it has none), 0 one does not (*ret_what
 * names it).
 */
static int socket_listens(const ks_check_ctx *c, const char *show, char **ret_what)
{
    _cleanup_free_ char *what = NULL;
    const char *l = show;

    *ret_what = NULL;
    while (l && *l) {
        ks_sock_proto p;
        uint16_t port;
        bool ok;
        const char *v = ks_startswith(l, "Listen=");
        _cleanup_free_ char *line = v ? strndup(v, strcspn(v, "\n")) : NULL;
        int r;

        l = strchr(l, '\n');
        if (l)
            l++;
        if (v && !line)
            return -ENOMEM;
        if (!line || (r = listen_port(line, &p, &port)) == 0)
            continue;
        if (r < 0)
            return r;
        r = port_listens(c->root, p, port, &ok);
        if (r < 0)
            return r;
        free(what);
        what = ks_asprintf("%s port %u", p == KS_SOCK_TCP || p == KS_SOCK_TCP6 ? "TCP" : "UDP",
                           (unsigned)port);
        if (!what)
            return -ENOMEM;
        if (!ok) {
            *ret_what = TAKE_PTR(what);
            return 0;
        }
    }
    *ret_what = TAKE_PTR(what);
    return 1;
}

/*
 * The units that start UNIT on demand: systemctl's TriggeredBy= (sockets, timers, paths), or,
 * for an instance PREFIX@INSTANCE.service of a socket with Accept=yes (one instance per
 * connection, which systemd loads with no TriggeredBy= once the connection is gone),
 * PREFIX.socket.
 */
static int triggers_of(const ks_check_ctx *c, const char *unit, const char *show, char ***ret)
{
    _cleanup_free_ char *by = show_value(show, "TriggeredBy"), *sock = NULL, *sock_show = NULL,
                        *accept = NULL;
    const char *at = strchr(unit, '@');
    int r;

    if (by && *by)
        return ks_strv_split(by, " ", ret);
    *ret = NULL;
    if (!at || at == unit || !ks_endswith(unit, ".service"))
        return 0;
    sock = ks_asprintf("%.*s.socket", (int)(at - unit), unit);
    if (!sock)
        return -ENOMEM;
    r = unit_show(c, sock, "Accept", &sock_show);
    if (r < 0)
        return r == -ENOMEM ? r : 0;
    accept = show_value(sock_show, "Accept");
    if (!accept || !streq(accept, "yes"))
        return 0;
    r = ks_strv_push(ret, TAKE_PTR(sock));
    return r < 0 ? r : 0;
}

/*
 * An inactive unit that a socket, timer or path unit starts on demand counts as that unit:
 * sshd on Ubuntu 24.04 is socket-activated, ssh.service stays inactive until someone connects
 * and ssh.socket (PID 1) listens meanwhile; a node nobody logged into is healthy. It passes
 * when one of its triggering units is active and, for a socket, each of its IP sockets listens
 * (proc/net). Returns 1 (pass), 0 (fail) with the detail set, or -1 when nothing starts it on
 * demand.
 */
static int judge_triggered(const ks_check_ctx *c, ks_check *chk, const char *unit, const char *show,
                           char **detail)
{
    _cleanup_strv_free_ char **triggers = NULL;
    _cleanup_free_ char *why = NULL;
    bool all_failed = true;
    int r;

    r = triggers_of(c, unit, show, &triggers);
    if (r < 0)
        return r == -ENOMEM ? r : -1;
    if (!triggers || !*triggers)
        return -1;
    for (char **t = triggers; *t; t++) {
        _cleanup_free_ char *out = NULL, *state = NULL, *sub = NULL, *what = NULL;
        bool socket = ks_endswith(*t, ".socket");

        r = unit_show(c, *t, "ActiveState,SubState,Listen", &out);
        if (r == -ENOMEM)
            return r;
        if (r < 0) {
            all_failed = false;
            continue;
        }
        state = show_value(out, "ActiveState");
        sub = show_value(out, "SubState");
        if (!state || !streq(state, "active")) {
            all_failed = all_failed && state && streq(state, "failed");
            free(why);
            why =
                ks_asprintf("%s, which starts it on demand, is %s", *t, state ? state : "unknown");
            if (!why)
                return -ENOMEM;
            continue;
        }
        all_failed = false;
        r = socket ? socket_listens(c, out, &what) : 1;
        if (r < 0)
            return r;
        free(why);
        if (r == 0) {
            why = ks_asprintf("%s, which starts it on demand, is active but nothing listens on %s",
                              *t, what);
            if (!why)
                return -ENOMEM;
            continue;
        }
        free(*detail);
        *detail =
            ks_asprintf("%s is inactive and started on demand by %s, which is active (%s%s%s)",
                        unit, *t, strempty(sub), what ? ", listening on " : "", strempty(what));
        return *detail ? 1 : -ENOMEM;
    }
    free(*detail);
    *detail = ks_asprintf("%s is inactive; %s", unit, strempty(why));
    /* A failed socket or timer stays failed: nothing will start the unit by waiting. */
    chk->final = all_failed;
    return *detail ? 0 : -ENOMEM;
}

/* An inactive unit: skipped by its own condition, or started on demand, or not running. */
static int judge_inactive(const ks_check_ctx *c, ks_check *chk, const char *unit, char **detail)
{
    _cleanup_free_ char *show = NULL;
    int r;

    r = unit_show(c, unit, "Type,ConditionResult,ConditionTimestampMonotonic,TriggeredBy", &show);
    if (r < 0)
        return r == -ENOMEM ? r : -1;
    r = judge_skipped(chk, unit, show, detail);
    if (r >= 0)
        return *detail ? r : -ENOMEM;
    return judge_triggered(c, chk, unit, show, detail);
}

int ks_check_service(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **f = NULL;
    _cleanup_free_ char *last = NULL, *detail = NULL;
    ks_spawn_result res = {0};
    const char *unit;
    int verdict;
    int r;

    r = ks_check_arg_fields(chk->arg, 1, &f);
    if (r < 0)
        return r;
    unit = f[0];
    /* A unit name never starts with '-': it must not become an option of systemctl. */
    if (unit[0] == '-' || !*unit)
        return -EINVAL;
    r = ks_check_spawn(c, (char *[]){(char *)"systemctl", (char *)"is-active", (char *)unit, NULL},
                       c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
    if (r < 0)
        return r;
    last = ks_spawn_last_line(&res);
    verdict = ks_spawn_succeeded(&res);
    if (res.timed_out)
        detail = ks_asprintf("systemctl is-active %s did not answer in time", unit);
    else if (last && streq(last, "failed")) {
        /* systemd restarts a unit with Restart= while it is "activating (auto-restart)";
         * "failed" means it gave up, and nothing will bring the unit back by waiting. */
        chk->final = true;
        detail = ks_asprintf("%s is failed (systemd will not restart it)", unit);
    } else
        detail = ks_asprintf("%s is %s", unit, last && *last ? last : "unknown");
    ks_spawn_result_done(&res);
    if (!detail)
        return -ENOMEM;
    if (!verdict && last && streq(last, "inactive")) {
        r = judge_inactive(c, chk, unit, &detail);
        if (r == -ENOMEM)
            return r;
        if (r >= 0)
            verdict = r;
    }
    return ks_check_detail(chk, TAKE_PTR(detail), verdict);
}

/* `systemctl list-units --type=service --state=active`: "NAME loaded active running ...". */
static int take_services(const ks_check_ctx *c, ks_run_snapshot *s)
{
    char *argv[] = {(char *)"systemctl",      (char *)"list-units",
                    (char *)"--type=service", (char *)"--state=active",
                    (char *)"--plain",        (char *)"--no-legend",
                    (char *)"--no-pager",     NULL};
    _cleanup_free_ char *out = NULL;
    const char *line;
    size_t pos = 0, n;
    int r = ks_run_snapshot_program(c, s, "services", argv, &out);

    if (r <= 0)
        return r;
    while (ks_next_line(out, strlen(out), &pos, &line, &n)) {
        _cleanup_free_ char *unit = NULL;
        size_t w;

        while (n && (*line == ' ' || *line == '*' || *line == '\t')) {
            line++;
            n--;
        }
        w = strcspn(line, " \t");
        if (w > n)
            w = n;
        if (w <= 8 || strncmp(line + w - 8, ".service", 8) != 0 || line[0] == '-')
            continue;
        unit = strndup(line, w);
        if (!unit)
            return -ENOMEM;
        r = ks_run_snapshot_add_item(s, true, "service", unit, NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

static const char *const ignore[] = {
    /* Per login, per boot, bus-activated services that exit when idle, and kswap itself. */
    "service:user@*.service",
    "service:user-runtime-dir@*.service",
    "service:run-*.service",
    "service:kswap-accept.service",
    "service:apt-daily*.service",
    "service:packagekit.service",
    "service:fwupd.service",
    "service:systemd-hostnamed.service",
    "service:systemd-localed.service",
    "service:systemd-timedated.service",
    "service:polkit.service",
    "service:udisks2.service",
    /* Started by systemd-fsck@ while a boot's fsck runs, gone after 30 s idle (seen in the VM
     * suite: active when apply began, inactive a moment later). */
    "service:systemd-fsckd.service",
    NULL,
};

static const ks_config_key keys[] = {
    KS_CONFIG_LIST("accept", "services", ks_config_item_name, NULL, KS_CONFIG_HINT_NAME),
    {0},
};

const ks_check_kind ks_check_kind_service = {
    .name = "service",
    .max_fields = 1,
    .run = ks_check_service,
    .keys = keys,
    .item_key = "services",
    .ignore = ignore,
    .take = take_services,
};
