/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "lib/host/dpkg.h"
#include "lib/basic/util.h"

/* Trims blanks and a CR at both ends of [*v, *v + *n). */
static void trim(const char **v, size_t *n)
{
    while (*n > 0 && (**v == ' ' || **v == '\t'))
        (*v)++, (*n)--;
    while (*n > 0 && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t' || (*v)[*n - 1] == '\r'))
        (*n)--;
}

/* Whether the stanza that starts at text + pos says "install ok installed". */
static bool stanza_installed(const char *text, size_t len, size_t pos)
{
    static const char want[] = "install ok installed";
    const char *l;
    size_t n;

    while (ks_next_line(text, len, &pos, &l, &n)) {
        if (n == 0 || (n == 1 && l[0] == '\r'))
            return false;
        if (n >= 7 && memcmp(l, "Status:", 7) == 0) {
            const char *v = l + 7;
            size_t vn = n - 7;
            trim(&v, &vn);
            return vn == sizeof(want) - 1 && memcmp(v, want, vn) == 0;
        }
    }
    return false;
}

int ks_dpkg_status_has(const char *text, size_t len, const char *package, bool *ret)
{
    size_t plen = strlen(package);
    const char *p = text, *end = text + len;

    /*
     * The status file of a server runs to megabytes: look for the name itself and check that it
     * stands on a "Package:" line, instead of walking every line.
     */
    *ret = false;
    if (plen == 0)
        return 0;
    while (p < end && (p = memmem(p, (size_t)(end - p), package, plen))) {
        const char *bol = p, *eol, *v;
        size_t vn;

        while (bol > text && bol[-1] != '\n')
            bol--;
        eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if ((size_t)(eol - bol) > 8 && memcmp(bol, "Package:", 8) == 0) {
            v = bol + 8;
            vn = (size_t)(eol - v);
            trim(&v, &vn);
            if (vn == plen && memcmp(v, package, plen) == 0 &&
                stanza_installed(text, len, (size_t)(bol - text))) {
                *ret = true;
                return 0;
            }
        }
        p = eol;
    }
    return 0;
}

int ks_dpkg_is_installed(const ks_root *root, const char *package, bool *ret)
{
    _cleanup_close_ int fd = -EBADF;
    struct stat st;
    void *p;
    int k;

    /* Megabytes on a server: mapped, not copied, and searched by name (see above). */
    fd = ks_root_open_regular(root, "var/lib/dpkg/status", 0);
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (st.st_size == 0) {
        *ret = false;
        return 0;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    k = ks_dpkg_status_has(p, (size_t)st.st_size, package, ret);
    munmap(p, (size_t)st.st_size);
    return k;
}
