/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "lib/basic/util.h"
#include "lib/engine/dpkgwait.h"
#include "lock-holder.h"
#include "test.h"

typedef struct lines {
    unsigned n;
    char last[512];
} lines;

static void collect(void *userdata, const char *step, const char *message)
{
    lines *l = userdata;
    l->n++;
    snprintf(l->last, sizeof(l->last), "%s: %s", step, message);
}

static const struct {
    const char *name;
    int hold_ms; /* -1: nobody holds it; 0: held until the end; > 0: released then */
    unsigned timeout_ms;
    int ret;
    bool progress; /* at least one line naming the holder */
} cases[] = {
    {"free: no wait, no line", -1, 1000, 0, false},
    {"held, then released before the timeout: goes on", 700, 20000, 0, true},
    {"held past the timeout: -ETIMEDOUT naming the holder", 0, 400, -ETIMEDOUT, true},
};

int main(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char base[] = "/tmp/kswap-dpkgwait.XXXXXX";
        _cleanup_free_ char *cmd = NULL, *path = NULL;
        _cleanup_root_ ks_root *root = NULL;
        ks_dpkg_lock_holder h = {0};
        lock_holder child = {0};
        lines l = {0};
        int r;

        if (!mkdtemp(base))
            abort();
        cmd = ks_asprintf("mkdir -p '%s/var/lib/dpkg'", base);
        if (!cmd || system(cmd) != 0)
            abort();
        path = ks_asprintf("%s/%s", base, KS_DPKG_FRONTEND_LOCK_PATH);
        if (cases[i].hold_ms >= 0)
            child =
                lock_holder_start_for(path, LOCK_POSIX_WRITE, "unattended-upgr", cases[i].hold_ms);
        CHECK(ks_root_open(base, &root) == 0);
        r = ks_dpkg_lock_wait(root, cases[i].timeout_ms, collect, &l, &h);
        CHECK_MSG(r == cases[i].ret, "%s: %d", cases[i].name, r);
        CHECK_MSG((l.n > 0) == cases[i].progress, "%s: %u lines", cases[i].name, l.n);
        if (r == -ETIMEDOUT) {
            _cleanup_free_ char *who = ks_dpkg_lock_holder_describe(&h);
            _cleanup_free_ char *todo = ks_dpkg_lock_remedy(&h);
            CHECK_STREQ(h.lock, KS_DPKG_FRONTEND_LOCK_PATH);
            CHECK_INTEQ(h.pid, child.pid);
            CHECK_STREQ(h.name, "unattended-upgr");
            CHECK_MSG(who && ks_startswith(who, "unattended-upgr (pid "), "'%s'", strempty(who));
            CHECK_STREQ(todo, "wait for unattended-upgrades to finish, or stop it: systemctl "
                              "stop unattended-upgrades");
            CHECK_MSG(strstr(l.last, "dpkg-lock: waiting for '/var/lib/dpkg/lock-frontend': "
                                     "held by unattended-upgr (pid "),
                      "'%s'", l.last);
        }
        if (cases[i].ret == 0 && cases[i].progress)
            CHECK_MSG(strstr(l.last, "the dpkg lock is free"), "'%s'", l.last);
        lock_holder_stop(&child);
        ks_dpkg_lock_holder_done(&h);
        free(cmd);
        cmd = ks_asprintf("rm -rf '%s'", base);
        if (!cmd || system(cmd) != 0)
            abort();
    }
    {
        /* A holder /proc cannot name, and another program. */
        ks_dpkg_lock_holder anon = {.lock = KS_DPKG_LOCK_PATH};
        ks_dpkg_lock_holder apt = {.lock = KS_DPKG_LOCK_PATH, .pid = 77, .name = (char *)"apt"};
        _cleanup_free_ char *a = ks_dpkg_lock_remedy(&anon), *b = ks_dpkg_lock_remedy(&apt);
        _cleanup_free_ char *c = ks_dpkg_lock_holder_describe(&apt);
        CHECK_STREQ(a,
                    "find the holder with 'fuser -v /var/lib/dpkg/lock', wait for it or stop it");
        CHECK_STREQ(b, "wait for apt (pid 77) to finish, or stop it; never remove the lock file");
        CHECK_STREQ(c, "apt (pid 77)");
    }
    TEST_DONE();
}
