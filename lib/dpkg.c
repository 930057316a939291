/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "dpkg.h"
#include "util.h"

int ks_dpkg_status_has(const char *text, size_t len, const char *package, bool *ret)
{
    size_t pos = 0, n, plen = strlen(package);
    const char *l;
    bool in_pkg = false, found = false;

    /* Stanzas are separated by blank lines; Package: opens one, Status: judges it. */
    while (!found && ks_next_line(text, len, &pos, &l, &n)) {
        if (n == 0) {
            in_pkg = false;
            continue;
        }
        if (n > 8 && memcmp(l, "Package:", 8) == 0) {
            const char *v = l + 8;
            size_t vn = n - 8;
            while (vn > 0 && (*v == ' ' || *v == '\t'))
                v++, vn--;
            while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\r'))
                vn--;
            in_pkg = vn == plen && memcmp(v, package, plen) == 0;
        } else if (in_pkg && n >= 7 && memcmp(l, "Status:", 7) == 0) {
            static const char want[] = "install ok installed";
            const char *v = l + 7;
            size_t vn = n - 7;
            while (vn > 0 && (*v == ' ' || *v == '\t'))
                v++, vn--;
            found = vn >= sizeof(want) - 1 && memcmp(v, want, sizeof(want) - 1) == 0;
        }
    }
    *ret = found;
    return 0;
}

int ks_dpkg_is_installed(const ks_root *root, const char *package, bool *ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    int k;

    k = ks_root_read_file(root, "var/lib/dpkg/status", 256 * 1024 * 1024, &text, &len);
    if (k < 0)
        return k;
    return ks_dpkg_status_has(text, len, package, ret);
}
