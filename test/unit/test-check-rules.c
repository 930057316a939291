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
    for (size_t i = 0; i < MAX_FILES && files[i].path; i++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s", dir, files[i].path);
        _cleanup_free_ char *cmd = ks_asprintf("mkdir -p \"$(dirname '%s')\"", p);
        FILE *f;
        sh(cmd);
        f = fopen(p, "w");
        CHECK_MSG(f != NULL, "%s", p);
        if (f) {
            fputs(files[i].text, f);
            fclose(f);
        }
    }
    CHECK(ks_root_open(dir, &root) == 0);
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

    CHECK(ks_snapshot_take_wireguard(&(ks_check_ctx){.root = root, .root_abs = abs}, &s) == 0);
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
     true, "handshake 0 s ago"},
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
    cmd = ks_asprintf("rm -rf '%s'", base);
    sh(cmd);
    TEST_DONE();
}
