/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <time.h>

#include "lib/basic/util.h"
#include "lib/basic/time-util.h"
#include "lib/engine/dpkgwait.h"

#define POLL_MS 200u

static void say(ks_progress_fn fn, void *userdata, const char *fmt, ...) _printf_(3, 4);
static void say(ks_progress_fn fn, void *userdata, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(fn, userdata, "dpkg-lock", fmt, ap);
    va_end(ap);
}

char *ks_dpkg_lock_holder_describe(const ks_dpkg_lock_holder *h)
{
    assert(h);
    if (h->pid <= 0)
        return strdup("a process kswap cannot name (an open file description lock)");
    if (h->cmdline)
        return ks_asprintf("%s (pid %d: %s)", h->name ? h->name : "?", (int)h->pid, h->cmdline);
    return ks_asprintf("%s (pid %d)", h->name ? h->name : "a process", (int)h->pid);
}

char *ks_dpkg_lock_remedy(const ks_dpkg_lock_holder *h)
{
    assert(h);
    /* comm is cut to 15 bytes: "unattended-upgr" is unattended-upgrade(s). */
    if (h->name && ks_startswith(h->name, "unattended-upgr"))
        return strdup("wait for unattended-upgrades to finish, or stop it: systemctl stop "
                      "unattended-upgrades");
    if (h->pid > 0)
        return ks_asprintf("wait for %s (pid %d) to finish, or stop it; never remove the lock "
                           "file",
                           h->name ? h->name : "it", (int)h->pid);
    return ks_asprintf("find the holder with 'fuser -v /%s', wait for it or stop it", h->lock);
}

int ks_dpkg_lock_wait(const ks_root *root, unsigned timeout_ms, ks_progress_fn progress,
                      void *userdata, ks_dpkg_lock_holder *ret_holder)
{
    uint64_t start = (uint64_t)ks_monotonic_ms(), last_said = 0;
    bool said = false;

    assert(root);
    assert(ret_holder);
    for (;;) {
        ks_dpkg_lock_holder h = {0};
        uint64_t elapsed;
        int r = ks_dpkg_lock_probe(root, &h);

        if (r < 0)
            return r;
        elapsed = (uint64_t)ks_monotonic_ms() - start;
        if (r == 0) {
            if (said)
                say(progress, userdata, "the dpkg lock is free after %" PRIu64 " s, going on",
                    elapsed / 1000);
            return 0;
        }
        if (elapsed >= timeout_ms) {
            ks_dpkg_lock_holder_done(ret_holder);
            *ret_holder = h;
            return -ETIMEDOUT;
        }
        if (!said || elapsed - last_said >= KS_DPKG_WAIT_PROGRESS_S * 1000u) {
            _cleanup_free_ char *who = ks_dpkg_lock_holder_describe(&h);
            say(progress, userdata,
                "waiting for '/%s': held by %s; %" PRIu64 " s waited, at most %u s more", h.lock,
                who ? who : "a process", elapsed / 1000, (unsigned)((timeout_ms - elapsed) / 1000));
            said = true;
            last_said = elapsed;
        }
        ks_dpkg_lock_holder_done(&h);
        {
            uint64_t left = timeout_ms - elapsed;
            unsigned ms = left < POLL_MS ? (unsigned)left : POLL_MS;
            nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = (long)ms * 1000000L}, NULL);
        }
    }
}
