/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How acceptance judges what a node shows (kswap(8), WHAT RUNS): each rule as a table of
 * fixture roots, with the fakes of test/fakes first on PATH answering as systemctl, wg, tc
 * and nft do.
 */
#include <sys/stat.h>

#include "checks/check.h"
#include "checks/snapshot.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "test.h"

#define MAX_FILES 8

typedef struct file {
    const char *path, *text; /* inside the root */
} file;

static char base[] = "/tmp/kswap-test-rules.XXXXXX";

static void sh(const char *cmd)
{
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
}

/* A fresh root with the files; *ret_abs its path. */
static ks_root *make_root(const char *name, const file *files, char **ret_abs)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/%s", base, name);
    ks_root *root = NULL;

    CHECK(dir != NULL);
    CHECK(mkdir(dir, 0755) == 0);
    CHECK(ks_root_open(dir, &root) == 0);
    for (size_t i = 0; i < MAX_FILES && files[i].path; i++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s", dir, files[i].path),
                            *parent = strdup(files[i].path);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        FILE *f;

        /* In-process: a spawned mkdir per file made this test slow on a busy machine. */
        if (slash) {
            *slash = '\0';
            CHECK_MSG(ks_mkdir_p(root, parent, 0755) == 0, "mkdir -p %s", parent);
        }
        f = fopen(p, "w");
        CHECK_MSG(f != NULL, "%s", p);
        if (f) {
            fputs(files[i].text, f);
            fclose(f);
        }
    }
    *ret_abs = TAKE_PTR(dir);
    return root;
}

/* A check of kind "kind" on arg against the root, one attempt: its verdict, detail, final. */
static int run_one(const char *name, const file *files, const char *kind, const char *arg,
                   ks_check_fn fn, bool from_snapshot, ks_check *ret)
{
    _cleanup_free_ char *abs = NULL;
    _cleanup_root_ ks_root *root = make_root(name, files, &abs);
    ks_checklist l = {0};
    int r;

    CHECK(ks_checklist_add(&l, kind, arg, true, fn) == 0);
    l.v[0].from_snapshot = from_snapshot;
    l.v[0].attempts = 1;
    r = fn(&(ks_check_ctx){.root = root, .root_abs = abs, .kernel = "6.18.45-x64v3-xanmod1"},
           &l.v[0]);
    *ret = l.v[0];
    l.v[0] = (ks_check){0};
    ks_checklist_done(&l);
    return r;
}

static void check_done(ks_check *c)
{
    free(c->id);
    free(c->arg);
    free(c->detail);
    free(c->output);
}

#define TCP_HEADER                                                                                 \
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "  \
    "inode\n"
#define TCP6_HEADER                                                                                \
    "  sl  local_address                         remote_address                        st "        \
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
/* PID 1 holds ssh.socket's [::]:22 (tcp6, LISTEN). */
#define TCP6_LISTEN_22                                                                             \
    TCP6_HEADER "   0: 00000000000000000000000000000000:0016 "                                     \
                "00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 "          \
                "00000000     0        0 4 1 0 100 0 0 10 0\n"

/*
 * Socket-activated services count as their socket (Ubuntu 24.04's sshd): a service started on
 * demand by a socket, timer or path unit passes while that unit is active, and a socket's IP
 * ports listen.
 */
static const struct service_case {
    const char *name;
    const char *unit;
    bool from_snapshot;
    file files[MAX_FILES];
    int verdict; /* 1 pass, 0 fail */
    bool final;
    const char *detail; /* a part of it */
} service_cases[] = {
    {"socket-listening",
     "ssh.service",
     false,
     {{"run/fake-units/ssh.service", "inactive\n"},
      {"run/fake-units/ssh.service.triggered-by", "ssh.socket\n"},
      {"run/fake-units/ssh.socket", "active\n"},
      {"run/fake-units/ssh.socket.listen", "[::]:22 (Stream)\n"},
      {"proc/net/tcp", TCP_HEADER},
      {"proc/net/tcp6", TCP6_LISTEN_22}},
     1,
     false,
     "ssh.service is inactive and started on demand by ssh.socket, which is active (listening, "
     "listening on TCP port 22)"},
    {"socket-active-port-closed",
     "ssh.service",
     false,
     {{"run/fake-units/ssh.service", "inactive\n"},
      {"run/fake-units/ssh.service.triggered-by", "ssh.socket\n"},
      {"run/fake-units/ssh.socket", "active\n"},
      {"run/fake-units/ssh.socket.listen", "0.0.0.0:22 (Stream)\n"},
      {"proc/net/tcp", TCP_HEADER},
      {"proc/net/tcp6", TCP6_HEADER}},
     0,
     false,
     "ssh.socket, which starts it on demand, is active but nothing listens on TCP port 22"},
    {"socket-inactive",
     "ssh.service",
     false,
     {{"run/fake-units/ssh.service", "inactive\n"},
      {"run/fake-units/ssh.service.triggered-by", "ssh.socket\n"},
      {"run/fake-units/ssh.socket", "inactive\n"}},
     0,
     false,
     "ssh.service is inactive; ssh.socket, which starts it on demand, is inactive"},
    {"socket-failed",
     "ssh.service",
     false,
     {{"run/fake-units/ssh.service", "inactive\n"},
      {"run/fake-units/ssh.service.triggered-by", "ssh.socket\n"},
      {"run/fake-units/ssh.socket", "failed\n"}},
     0,
     true,
     "ssh.socket, which starts it on demand, is failed"},
    {"socket-unix-only",
     "docker.service",
     true,
     {{"run/fake-units/docker.service", "inactive\n"},
      {"run/fake-units/docker.service.triggered-by", "docker.socket\n"},
      {"run/fake-units/docker.socket", "active\n"},
      {"run/fake-units/docker.socket.listen", "/run/docker.sock (Stream)\n"}},
     1,
     false,
     "started on demand by docker.socket, which is active (listening)"},
    {"service-active",
     "ssh.service",
     false,
     {{"run/fake-units/ssh.service", "active\n"},
      {"run/fake-units/ssh.service.triggered-by", "ssh.socket\n"},
      {"run/fake-units/ssh.socket", "active\n"}},
     1,
     false,
     "ssh.service is active"},
    {"not-socket-activated",
     "ssh.service",
     false,
     {{"run/fake-units/ssh.service", "inactive\n"}},
     0,
     false,
     "ssh.service is inactive"},
    {"accept-yes-instance",
     "ssh@3-10.0.0.2:22-10.0.0.9:51234.service",
     true,
     {{"run/fake-units/ssh.socket", "active\n"},
      {"run/fake-units/ssh.socket.accept", "yes\n"},
      {"run/fake-units/ssh.socket.listen", "[::]:22 (Stream)\n"},
      {"proc/net/tcp", TCP_HEADER},
      {"proc/net/tcp6", TCP6_LISTEN_22}},
     1,
     false,
     "started on demand by ssh.socket"},
    {"accept-no-instance",
     "getty@tty1.service",
     true,
     {{"run/fake-units/getty.socket", "active\n"}},
     0,
     false,
     "getty@tty1.service is inactive"},
    {"timer",
     "backup.service",
     true,
     {{"run/fake-units/backup.service", "inactive\n"},
      {"run/fake-units/backup.service.triggered-by", "backup.timer\n"},
      {"run/fake-units/backup.timer", "active\n"}},
     1,
     false,
     "started on demand by backup.timer, which is active (waiting)"},
    {"failed-stays-final",
     "ssh.service",
     false,
     {{"run/fake-units/ssh.service", "failed\n"},
      {"run/fake-units/ssh.service.triggered-by", "ssh.socket\n"},
      {"run/fake-units/ssh.socket", "active\n"}},
     0,
     true,
     "ssh.service is failed"},
};

static void test_services(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(service_cases); i++) {
        const struct service_case *t = &service_cases[i];
        _cleanup_free_ char *name = ks_asprintf("service-%s", t->name);
        ks_check c;
        int r = run_one(name, t->files, "service", t->unit, ks_check_service, t->from_snapshot, &c);

        CHECK_MSG(r == t->verdict, "%s: verdict %d (%s)", t->name, r, strempty(c.detail));
        CHECK_MSG(c.final == t->final, "%s: final %d", t->name, c.final);
        CHECK_MSG(c.detail && strstr(c.detail, t->detail), "%s: detail '%s'", t->name,
                  strempty(c.detail));
        check_done(&c);
    }
}

/*
 * WireGuard peers are judged like users: `wg show all dump` (NOW: a handshake this second, AGO:
 * an hour ago, as the fake wg writes them). At arming, a peer in touch whose link the node
 * keeps up by itself (an endpoint and a persistent keepalive) is required, one in touch
 * without that (a roaming client) is wanted, an idle one is not listed.
 */
#define WG_IF "wg0\tPRIV=\tPUB=\t51820\toff\n"
#define WG_DUMP_ARMING                                                                             \
    WG_IF "wg0\tSITE=\t(none)\t198.51.100.7:51820\t10.9.0.2/32\tNOW\t100\t200\t25\n"               \
          "wg0\tROAM=\t(none)\t203.0.113.9:40000\t10.9.0.3/32\tNOW\t100\t200\toff\n"               \
          "wg0\tIDLE=\t(none)\t203.0.113.10:40001\t10.9.0.5/32\tAGO\t100\t200\toff\n"              \
          "wg0\tNEVER=\t(none)\t(none)\t10.9.0.6/32\t0\t0\t0\toff\n"

static void test_wireguard_snapshot(void)
{
    static const file files[MAX_FILES] = {{"run/fake-wg/dump", WG_DUMP_ARMING}};
    _cleanup_free_ char *abs = NULL;
    _cleanup_root_ ks_root *root = make_root("wg-arming", files, &abs);
    ks_run_snapshot s = {0};
    char *items[] = {(char *)"wg-peer:wg0:SITE=", (char *)"wireguard:wg0", NULL};
    char *wanted[] = {(char *)"wg-peer:wg0:ROAM=", NULL};

    CHECK(ks_check_kind_of("wireguard", NULL)
              ->take(&(ks_check_ctx){.root = root, .root_abs = abs}, &s) == 0);
    ks_strv_sort(s.items);
    CHECK_MSG(ks_strv_length(s.items) == 2 && streq(s.items[0], items[0]) &&
                  streq(s.items[1], items[1]),
              "required: %s", strempty(s.items ? ks_strv_join(s.items, " ") : NULL));
    CHECK_MSG(ks_strv_length(s.wanted) == 1 && streq(s.wanted[0], wanted[0]), "wanted: %s",
              s.wanted && s.wanted[0] ? s.wanted[0] : "(none)");
    ks_run_snapshot_done(&s);
}

/* After the trial boot: required stays required only while the node keeps the link up. */
static const struct wg_case {
    const char *name;
    const char *kind, *arg;
    const char *dump;
    int verdict;
    bool required; /* after the check ran (it started required) */
    const char *detail;
} wg_cases[] = {
    {"site-back", "wg-peer",
     "wg0:SITE=", WG_IF "wg0\tSITE=\t(none)\t198.51.100.7:51820\t10.9.0.2/32\tNOW\t1\t2\t25\n", 1,
     true, "peer SITE= of wg0: handshake"},
    {"site-not-yet", "wg-peer",
     "wg0:SITE=", WG_IF "wg0\tSITE=\t(none)\t198.51.100.7:51820\t10.9.0.2/32\t0\t0\t0\t25\n", 0,
     true, "no handshake within 180 s yet"},
    {"roaming-idle", "wg-peer",
     "wg0:ROAM=", WG_IF "wg0\tROAM=\t(none)\t(none)\t10.9.0.3/32\t0\t0\t0\toff\n", 0, false,
     "a roaming client comes back in its own time (reported, not required)"},
    /* Taken as site-to-site at arming (keepalive set on the server, endpoint the client had
     * taught): no endpoint after the reboot says the node cannot reach it. */
    {"learned-endpoint", "wg-peer",
     "wg0:KA=", WG_IF "wg0\tKA=\t(none)\t(none)\t10.9.0.4/32\t0\t0\t0\t25\n", 0, false,
     "no endpoint configured here"},
    {"endpoint-no-keepalive", "wg-peer",
     "wg0:EP=", WG_IF "wg0\tEP=\t(none)\t198.51.100.8:51820\t10.9.0.7/32\tAGO\t0\t0\toff\n", 0,
     false, "reported, not required"},
    {"roaming-back", "wg-peer",
     "wg0:ROAM=", WG_IF "wg0\tROAM=\t(none)\t203.0.113.9:40000\t10.9.0.3/32\tNOW\t1\t2\toff\n", 1,
     true, "handshake"},
    {"peer-gone", "wg-peer", "wg0:SITE=", WG_IF, 0, true, "peer SITE= of wg0: not configured"},
    {"no-wireguard", "wg-peer", "wg0:SITE=", "", 0, true, "not configured"},
    {"interface", "wireguard", "wg0", WG_IF, 1, true,
     "WireGuard interface wg0 configured, listen port 51820"},
    {"interface-gone", "wireguard", "wg0", "", 0, true, "missing from wg show"},
};

static void test_wireguard_checks(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(wg_cases); i++) {
        const struct wg_case *t = &wg_cases[i];
        _cleanup_free_ char *name = ks_asprintf("wg-%s", t->name);
        file files[MAX_FILES] = {{"run/fake-wg/dump", t->dump}};
        bool peer = streq(t->kind, "wg-peer");
        ks_check c;
        int r = run_one(name, files, t->kind, t->arg, peer ? ks_check_wg_peer : ks_check_wireguard,
                        true, &c);

        CHECK_MSG(r == t->verdict, "%s: verdict %d (%s)", t->name, r, strempty(c.detail));
        CHECK_MSG(c.required == t->required, "%s: required %d", t->name, c.required);
        CHECK_MSG(!c.final, "%s: final", t->name);
        CHECK_MSG(c.detail && strstr(c.detail, t->detail), "%s: detail '%s'", t->name,
                  strempty(c.detail));
        check_done(&c);
    }
}

/*
 * An interface is judged as it was at arming: up without a carrier then (docker0 with no
 * container on its bridge, virbr0, an unplugged NIC) asks for administratively up only.
 */
static const struct iface_case {
    const char *name;
    const char *flags, *operstate; /* of the interface at arming */
    const char *item;              /* the snapshot's item, NULL: none */
} iface_snapshot_cases[] = {
    {"ethernet", "0x1003\n", "up\n", "interface:x0"},
    {"wireguard", "0x91\n", "unknown\n", "interface:x0"},
    {"bridge-no-ports", "0x1003\n", "down\n", "interface:x0:no-carrier"},
    {"veth-peer-down", "0x1003\n", "lowerlayerdown\n", "interface:x0:no-carrier"},
    {"dormant", "0x1003\n", "dormant\n", "interface:x0:no-carrier"},
    {"admin-down", "0x1002\n", "down\n", NULL},
};

static const struct iface_check_case {
    const char *name;
    const char *arg;
    const char *flags, *operstate; /* on the trial; NULL: the interface does not exist */
    int verdict;
    const char *detail;
} iface_check_cases[] = {
    {"no-carrier-then-and-now", "x0:no-carrier", "0x1003\n", "down\n", 1,
     "x0: operstate down, administratively up (no carrier at arming: up is all it needs)"},
    {"no-carrier-then-carrier-now", "x0:no-carrier", "0x1003\n", "up\n", 1, "operstate up"},
    {"no-carrier-then-admin-down", "x0:no-carrier", "0x1002\n", "down\n", 0,
     "administratively down"},
    {"no-carrier-then-gone", "x0:no-carrier", NULL, NULL, 0, "interface x0 does not exist"},
    {"configured-needs-carrier", "x0", "0x1003\n", "down\n", 0, "x0: operstate down"},
    {"lowerlayerdown", "x0", "0x1003\n", "lowerlayerdown\n", 0, "operstate lowerlayerdown"},
    {"up", "x0", "0x1003\n", "up\n", 1, "x0: operstate up, administratively up"},
    {"tunnel", "x0", "0x91\n", "unknown\n", 1, "operstate unknown"},
    {"unknown-state-word", "x0:carrier", "0x1003\n", "up\n", -EINVAL, ""},
};

static void test_interfaces(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(iface_snapshot_cases); i++) {
        const struct iface_case *t = &iface_snapshot_cases[i];
        _cleanup_free_ char *name = ks_asprintf("if-snap-%s", t->name), *abs = NULL;
        file files[MAX_FILES] = {{"sys/class/net/x0/flags", t->flags},
                                 {"sys/class/net/x0/operstate", t->operstate}};
        _cleanup_root_ ks_root *root = make_root(name, files, &abs);
        ks_run_snapshot s = {0};
        size_t n = 0;

        CHECK(ks_run_snapshot_take(&(ks_check_ctx){.root = root, .root_abs = abs}, &s) == 0);
        for (char **p = s.items; p && *p; p++)
            if (ks_startswith(*p, "interface:")) {
                n++;
                CHECK_MSG(t->item && streq(*p, t->item), "%s: item %s", t->name, *p);
            }
        CHECK_MSG(n == (t->item ? 1 : 0), "%s: %zu interface items", t->name, n);
        ks_run_snapshot_done(&s);
    }
    for (size_t i = 0; i < ARRAY_SIZE(iface_check_cases); i++) {
        const struct iface_check_case *t = &iface_check_cases[i];
        _cleanup_free_ char *name = ks_asprintf("if-check-%s", t->name);
        file files[MAX_FILES] = {{"sys/class/net/x0/flags", t->flags},
                                 {"sys/class/net/x0/operstate", t->operstate}};
        ks_check c;
        int r;

        if (!t->flags)
            files[0] = files[1] = (file){"sys/class/net/lo/flags", "0x9\n"};
        r = run_one(name, files, "interface", t->arg, ks_check_interface, true, &c);
        CHECK_MSG(r == t->verdict, "%s: verdict %d (%s)", t->name, r, strempty(c.detail));
        CHECK_MSG(r < 0 || (c.detail && strstr(c.detail, t->detail)), "%s: detail '%s'", t->name,
                  strempty(c.detail));
        check_done(&c);
    }
}

/*
 * Receive Packet Steering (checks/check-rps.c): the snapshot takes each receive queue that
 * steers, as "rps:IF:QUEUE:CPUS:FLOWS" with the mask without commas and leading zeros; the
 * check compares what runs with it.
 */
static const struct rps_case {
    const char *name;
    const char *cpus, *flows; /* sys/class/net/x0/queues/rx-0/; NULL: no such file */
    const char *item;         /* the snapshot's item; NULL: none */
    const char *arg;          /* the check's */
    int verdict;              /* 1 pass, 0 fail, negative errno */
    const char *detail;       /* a part of it */
} rps_cases[] = {
    {"steers", "3\n", "32768\n", "rps:x0:rx-0:3:32768", "x0:rx-0:3:32768", 1,
     "x0 rx-0: rps_cpus 3, rps_flow_cnt 32768"},
    {"wide-mask", "00000000,0000000f\n", "0\n", "rps:x0:rx-0:f:0", "x0:rx-0:0000000F:0", 1,
     "rps_cpus f"},
    {"off", "00000000\n", "0\n", NULL, "x0:rx-0:3:32768", 0,
     "rps_cpus 0, rps_flow_cnt 0; wanted rps_cpus 3, rps_flow_cnt 32768"},
    {"flows-lost", "3\n", "0\n", "rps:x0:rx-0:3:0", "x0:rx-0:3:32768", 0,
     "rps_flow_cnt 0; wanted rps_cpus 3, rps_flow_cnt 32768"},
    {"no-rps-kernel", NULL, NULL, NULL, "x0:rx-0:3:32768", 0, "has no receive queue rx-0"},
    {"garbage", "zz\n", "1\n", NULL, "x0:rx-0:3:1", -EBADMSG, NULL},
    {"bad-arg", "3\n", "1\n", "rps:x0:rx-0:3:1", "x0:tx-0:3:1", -EINVAL, NULL},
    {"bad-mask-arg", "3\n", "1\n", "rps:x0:rx-0:3:1", "x0:rx-0:3g:1", -EINVAL, NULL},
};

static void test_rps(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(rps_cases); i++) {
        const struct rps_case *t = &rps_cases[i];
        _cleanup_free_ char *name = ks_asprintf("rps-snap-%s", t->name), *abs = NULL,
                            *cname = ks_asprintf("rps-check-%s", t->name);
        file files[MAX_FILES] = {{"sys/class/net/x0/flags", "0x1003\n"},
                                 {"sys/class/net/x0/operstate", "up\n"}};
        ks_run_snapshot s = {0};
        size_t n = 0;
        ks_check c;
        int r;

        if (t->cpus) {
            files[2] = (file){"sys/class/net/x0/queues/rx-0/rps_cpus", t->cpus};
            files[3] = (file){"sys/class/net/x0/queues/rx-0/rps_flow_cnt", t->flows};
            files[4] = (file){"sys/class/net/x0/queues/tx-0/xps_cpus", "0\n"};
        }
        _cleanup_root_ ks_root *root = make_root(name, files, &abs);
        CHECK(ks_run_snapshot_take(&(ks_check_ctx){.root = root, .root_abs = abs}, &s) == 0);
        for (char **p = s.items; p && *p; p++)
            if (ks_startswith(*p, "rps:")) {
                n++;
                CHECK_MSG(t->item && streq(*p, t->item), "%s: item %s", t->name, *p);
            }
        CHECK_MSG(n == (t->item ? 1 : 0), "%s: %zu rps items", t->name, n);
        ks_run_snapshot_done(&s);

        r = run_one(cname, files, "rps", t->arg, ks_check_rps, true, &c);
        CHECK_MSG(r == t->verdict, "%s: verdict %d (%s)", t->name, r, strempty(c.detail));
        CHECK_MSG(!t->detail || (c.detail && strstr(c.detail, t->detail)), "%s: detail '%s'",
                  t->name, strempty(c.detail));
        check_done(&c);
    }
}

/*
 * Modules (checks/check-module.c): what serves the node is required of the trial (a holder, a
 * module that uses it, modules-load.d); a module a command loaded once and idle since is
 * wanted: it comes back only if that command runs again (the effect VM's netem and veth sent
 * a good kernel back).
 */
static const struct module_case {
    const char *name;
    const char *line;   /* of proc/modules */
    const char *listed; /* etc/modules-load.d/x.conf; NULL: none */
    const char *item;   /* module:NAME */
    int required;       /* 1 items, 0 wanted */
} module_cases[] = {
    {"held", "sch_cake 45056 1 - Live 0x0\n", NULL, "module:sch_cake", 1},
    {"used-by", "nf_nat 61440 0 nft_chain_nat,xt_MASQUERADE, Live 0x0\n", NULL, "module:nf_nat", 1},
    {"cannot-unload", "sunrpc 1 - - Live 0x0\n", NULL, "module:sunrpc", 1},
    {"idle-listed", "tcp_bbr 20480 0 - Live 0x0\n", "tcp_bbr\n", "module:tcp_bbr", 1},
    {"idle-listed-dash", "sch-fq 20480 0 - Live 0x0\n", "# qdisc\nsch_fq\n", "module:sch-fq", 1},
    {"idle-netem", "sch_netem 20480 0 - Live 0x0\n", NULL, "module:sch_netem", 0},
    {"idle-veth", "veth 36864 0 - Live 0x0\n", "wireguard\n", "module:veth", 0},
    {"short-line", "odd 1\n", NULL, "module:odd", 1},
};

static void test_module_snapshot(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(module_cases); i++) {
        const struct module_case *t = &module_cases[i];
        _cleanup_free_ char *name = ks_asprintf("mod-snap-%s", t->name), *abs = NULL;
        file files[MAX_FILES] = {{"proc/modules", t->line},
                                 {t->listed ? "etc/modules-load.d/x.conf" : NULL, t->listed}};
        _cleanup_root_ ks_root *root = make_root(name, files, &abs);
        ks_run_snapshot s = {0};

        CHECK(ks_run_snapshot_take(&(ks_check_ctx){.root = root, .root_abs = abs}, &s) == 0);
        CHECK_MSG(ks_strv_contains(s.items, t->item) == (t->required == 1),
                  "%s: %s %s the required items", t->name, t->item, t->required ? "not in" : "in");
        CHECK_MSG(ks_strv_contains(s.wanted, t->item) == (t->required == 0),
                  "%s: %s %s the wanted items", t->name, t->item, t->required ? "in" : "not in");
        ks_run_snapshot_done(&s);
    }
}

/*
 * Ids round-trip whatever names hold: each field escaped, split on the first n-1 colons, the
 * fields come back byte for byte; an id is one word of printable, valid UTF-8.
 */
static bool id_is_clean(const char *id)
{
    const unsigned char *p = (const unsigned char *)id;

    for (; *p; p++)
        if (*p <= ' ' || *p == 0x7f || *p == ',' || *p == '"' || *p == '\'')
            return false;
    return true;
}

static const struct id_case {
    const char *kind;
    const char *fields[4];
    const char *id; /* NULL: not compared, only the round trip */
} id_cases[] = {
    {"nft-chain", {"inet", "filter", "allow:ssh"}, "nft-chain:inet:filter:allow:ssh"},
    {"nft-chain", {"inet", "my:table", "input"}, "nft-chain:inet:my%3Atable:input"},
    {"nft-chain", {"inet", "my table", "a chain"}, "nft-chain:inet:my%20table:a%20chain"},
    {"nft-chain", {"ip", "filter", "it's \"q\""}, "nft-chain:ip:filter:it%27s%20%22q%22"},
    {"nft-chain", {"ip", "t,1", "c"}, "nft-chain:ip:t%2C1:c"},
    {"interface", {"esc\033[31m"}, "interface:esc%1B[31m"},
    {"interface", {"bad\xff", "no-carrier"}, "interface:bad%FF:no-carrier"},
    {"interface",
     {"\xc2\x9b"
      "c1"},
     "interface:%C2%9Bc1"},
    {"interface", {"тест"}, "interface:тест"},
    {"interface",
     {"rtl\xe2\x80\xae"
      "x"},
     "interface:rtl%E2%80%AEx"},
    {"qdisc", {"100%", "%41"}, "qdisc:100%25:%2541"},
    {"service",
     {"systemd-fsck@dev-disk-by\\x2duuid-1.service"},
     "service:systemd-fsck@dev-disk-by\\x2duuid-1.service"},
    {"sysctl",
     {"net.ipv4.tcp_rmem=4096 131072\t6291456"},
     "sysctl:net.ipv4.tcp_rmem=4096%20131072%096291456"},
    {"address", {"wg\xff", "2001:db8::1/64"}, "address:wg%FF:2001:db8::1/64"},
    {"route", {"default", "e\033x"}, "route:default:e%1Bx"},
    {"wg-peer", {"wg0", "ab+/cd="}, "wg-peer:wg0:ab+/cd="},
    {"reach", {"[2001:db8::1]:443"}, "reach:[2001:db8::1]:443"},
    {"nft-table", {"inet", ""}, "nft-table:inet:"},
    {"nft-chain", {"inet", "x", "\x01\x02\x7f\x80\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80"}, NULL},
};

static void test_ids(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(id_cases); i++) {
        const struct id_case *t = &id_cases[i];
        _cleanup_free_ char *id = ks_check_id_join(t->kind, (char *const *)t->fields);
        _cleanup_strv_free_ char **back = NULL;
        const char *arg = NULL;
        const ks_check_kind *kind = ks_check_kind_of(id ? id : "", &arg);
        size_t n = 0;

        while (n < 4 && t->fields[n])
            n++;
        CHECK_MSG(id && (!t->id || streq(id, t->id)), "case %zu: id '%s'", i, strempty(id));
        CHECK_MSG(id && id_is_clean(id), "case %zu: '%s' is not one clean word", i, strempty(id));
        CHECK_MSG(kind && arg && ks_check_arg_fields(arg, kind->max_fields, &back) == 0 &&
                      ks_strv_length(back) == n,
                  "case %zu: %zu fields back", i, ks_strv_length(back));
        for (size_t j = 0; back && j < n && back[j]; j++)
            CHECK_MSG(streq(back[j], t->fields[j]), "case %zu: field %zu '%s'", i, j, back[j]);
    }

    /* A '%' without two hex digits is itself; %00 too (no name holds NUL). */
    {
        static const struct {
            const char *in, *out;
        } un[] = {{"100%", "100%"}, {"%4", "%4"},     {"%zz", "%zz"},
                  {"%00", "%00"},   {"%41%42", "AB"}, {"%e2%80%ae", "\xe2\x80\xae"},
                  {"", ""}};
        for (size_t i = 0; i < ARRAY_SIZE(un); i++) {
            _cleanup_free_ char *o = ks_check_id_unescape(un[i].in, strlen(un[i].in));
            CHECK_MSG(o && streq(o, un[i].out), "unescape '%s': '%s'", un[i].in, strempty(o));
        }
    }

    /* Details and script output: printable text whatever the node's names hold. */
    {
        static const struct {
            const char *in;
            bool multiline;
            const char *out;
        } tx[] = {
            {"e\033x\xff: operstate up, 100% fine", false, "e%1Bx%FF: operstate up, 100% fine"},
            {"line 1\nline\t2\r", true, "line 1\nline\t2%0D"},
            {"line 1\nline 2", false, "line 1%0Aline 2"},
            {"тест: ok \xc2\x9b[31m", false, "тест: ok %C2%9B[31m"},
            {"\xe2\x80\xaerlo", false, "%E2%80%AErlo"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(tx); i++) {
            _cleanup_free_ char *o = ks_check_text_escape(tx[i].in, tx[i].multiline);
            CHECK_MSG(o && streq(o, tx[i].out), "text %zu: '%s'", i, strempty(o));
        }
    }

    /* Journals written before ids were escaped: split as they were written, escaped now. */
    {
        static const struct {
            const char *old, *now;
        } up[] = {
            {"nft-chain:inet:filter:allow:ssh", "nft-chain:inet:filter:allow:ssh"},
            {"sysctl:net.ipv4.tcp_rmem=4096 131072 6291456",
             "sysctl:net.ipv4.tcp_rmem=4096%20131072%206291456"},
            {"address:eth0:2001:db8::1/64", "address:eth0:2001:db8::1/64"},
            {"interface:esc\033", "interface:esc%1B"},
            {"qdisc:eth0:cake", "qdisc:eth0:cake"},
            {"service:100%.service", "service:100%25.service"},
            {"bbr-version", "bbr-version"},
            {"unknown:a b", "unknown:a b"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(up); i++) {
            _cleanup_free_ char *o = ks_check_id_upgrade(up[i].old);
            CHECK_MSG(o && streq(o, up[i].now), "upgrade '%s': '%s'", up[i].old, strempty(o));
        }
    }
}

/*
 * Every kind with hostile names on a node: the snapshot takes them, its ids are clean, the
 * JSON of the journal gives them back, and each check of them passes on the same node.
 */
#define HOSTILE_TABLES                                                                             \
    "{\"nftables\": [{\"metainfo\": {\"json_schema_version\": 1}},"                                \
    " {\"table\": {\"family\": \"inet\", \"name\": \"my table\"}},"                                \
    " {\"table\": {\"family\": \"inet\", \"name\": \"a:b\"}}]}\n"
#define HOSTILE_CHAINS                                                                             \
    "{\"nftables\": [{\"metainfo\": {\"json_schema_version\": 1}},"                                \
    " {\"chain\": {\"family\": \"inet\", \"table\": \"a:b\", \"name\": \"allow:ssh\"}},"           \
    " {\"chain\": {\"family\": \"inet\", \"table\": \"my table\", \"name\": \"it's \\\"q\\\"\"}}," \
    " {\"chain\": {\"family\": \"inet\", \"table\": \"a:b\", \"name\": \"esc\033[0m,\xff\"}}]}\n"

static void test_hostile_names(void)
{
    static const file files[MAX_FILES] = {
        {"run/fake-nft/tables.json", HOSTILE_TABLES},
        {"run/fake-nft/chains.json", HOSTILE_CHAINS},
        {"sys/class/net/e\033x\xff/flags", "0x1003\n"},
        {"sys/class/net/e\033x\xff/operstate", "up\n"},
        {"run/fake-tc/e\033x\xff.json", "[{\"kind\":\"fq\",\"handle\":\"0:\",\"root\":true}]\n"},
        {"run/fake-wg/dump", "wg\xff\tPRIV=\tPUB=\t51820\toff\n"
                             "wg\xff\tK+/=\t(none)\t192.0.2.7:51820\t10.9.0.2/32\tNOW\t1\t2\t25\n"},
        {"proc/net/route",
         "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
         "e\033x\xff\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
         "e\033x\xff\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n"},
        {"run/fake-units/systemd-fsck@dev-disk-by\\x2duuid-1.service", "active\n"},
    };
    static const char *const want[] = {
        "nft-table:inet:my%20table",
        "nft-table:inet:a:b",
        "nft-chain:inet:a%3Ab:allow:ssh",
        "nft-chain:inet:my%20table:it%27s%20%22q%22",
        "nft-chain:inet:a%3Ab:esc%1B[0m%2C%FF",
        "interface:e%1Bx%FF",
        "qdisc:e%1Bx%FF:fq",
        "wireguard:wg%FF",
        "wg-peer:wg%FF:K+/=",
        "route:default:e%1Bx%FF",
        "network:e%1Bx%FF:10.0.0.0/24",
        "service:systemd-fsck@dev-disk-by\\x2duuid-1.service",
    };
    _cleanup_free_ char *abs = NULL;
    _cleanup_root_ ks_root *root = make_root("hostile", files, &abs);
    ks_check_ctx ctx = {.root = root, .root_abs = abs, .kernel = "6.18.45-x64v3-xanmod1"};
    ks_run_snapshot s = {0}, back = {0};
    ks_checklist l = {0};
    json_object *o;

    CHECK(ks_run_snapshot_take(&ctx, &s) == 0);
    for (size_t i = 0; i < ARRAY_SIZE(want); i++)
        CHECK_MSG(ks_strv_contains(s.items, want[i]) || ks_strv_contains(s.wanted, want[i]),
                  "the snapshot has %s", want[i]);
    for (char **p = s.items; p && *p; p++)
        CHECK_MSG(id_is_clean(*p), "'%s' is one clean word", *p);
    o = ks_run_snapshot_to_json(&s);
    CHECK(o && ks_run_snapshot_from_json(o, &back) == 0);
    CHECK_INTEQ(ks_strv_length(back.items), ks_strv_length(s.items));
    for (size_t i = 0; back.items && s.items && s.items[i]; i++)
        CHECK_MSG(back.items[i] && streq(back.items[i], s.items[i]), "%s back from JSON",
                  s.items[i]);
    json_object_put(o);
    CHECK(ks_checklist_add_snapshot(&l, &back, NULL) == 0);
    CHECK(ks_checks_run(&l, &ctx, &(ks_runner_opts){.timeout_ms = 0}) >= 0);
    for (size_t i = 0; i < l.n; i++)
        CHECK_MSG(!l.v[i].from_snapshot || l.v[i].status == KS_CHECK_PASS, "%s: %s", l.v[i].id,
                  strempty(l.v[i].detail));
    CHECK(ks_checklist_find(&l, "nft-chain:inet:a%3Ab:allow:ssh") != NULL);
    ks_checklist_done(&l);
    ks_run_snapshot_done(&s);
    ks_run_snapshot_done(&back);
}

int main(void)
{
    const char *src = getenv("KS_SOURCE_ROOT");
    _cleanup_free_ char *path = NULL, *cmd = NULL;

    CHECK(mkdtemp(base) != NULL);
    /* The fakes answer as systemctl, wg, tc and nft do, inside KSWAP_ROOT only. */
    path = ks_asprintf("%s/test/fakes:%s", src ? src : ".", strempty(getenv("PATH")));
    CHECK(path && setenv("PATH", path, 1) == 0);
    test_services();
    test_wireguard_snapshot();
    test_wireguard_checks();
    test_interfaces();
    test_rps();
    test_module_snapshot();
    test_ids();
    test_hostile_names();
    cmd = ks_asprintf("rm -rf '%s'", base);
    sh(cmd);
    TEST_DONE();
}
