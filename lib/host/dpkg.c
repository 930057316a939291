/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "lib/basic/alloc-util.h"
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
    int r;

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
    r = ks_dpkg_status_has(p, (size_t)st.st_size, package, ret);
    munmap(p, (size_t)st.st_size);
    return r;
}

void ks_dpkg_unfinished_list_done(ks_dpkg_unfinished_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].package);
        free(l->v[i].state);
    }
    free(l->v);
    *l = (ks_dpkg_unfinished_list){0};
}

static bool unfinished_state(const char *s, size_t n)
{
    static const char *const states[] = {"half-installed", "unpacked", "half-configured",
                                         "triggers-awaited", "triggers-pending"};
    for (size_t i = 0; i < ARRAY_SIZE(states); i++)
        if (strlen(states[i]) == n && memcmp(states[i], s, n) == 0)
            return true;
    return false;
}

bool ks_dpkg_unfinished_is_configurable(const ks_dpkg_unfinished *u)
{
    return !u->reinstreq && !streq(u->state, "half-installed");
}

/* One stanza's Package and Status values (each [v, v + n)), then adds it when unfinished. */
static int stanza_done(const char *pkg, size_t pkg_n, const char *st, size_t st_n,
                       ks_dpkg_unfinished_list *l)
{
    const char *w[3];
    size_t wn[3], k = 0, i = 0;

    if (!pkg || !st || pkg_n == 0)
        return 0;
    /* "WANT FLAG STATE": three words separated by blanks. */
    while (i < st_n && k < 3) {
        while (i < st_n && (st[i] == ' ' || st[i] == '\t'))
            i++;
        if (i == st_n)
            break;
        w[k] = st + i;
        while (i < st_n && st[i] != ' ' && st[i] != '\t')
            i++;
        wn[k] = (size_t)(st + i - w[k]);
        k++;
    }
    if (k != 3)
        return 0;
    {
        bool reinstreq = wn[1] == 9 && memcmp(w[1], "reinstreq", 9) == 0;
        if (!reinstreq && !unfinished_state(w[2], wn[2]))
            return 0;
        if (!GREEDY_REALLOC(l->v, l->cap, l->n + 1))
            return -ENOMEM;
        l->v[l->n] = (ks_dpkg_unfinished){
            .package = strndup(pkg, pkg_n), .state = strndup(w[2], wn[2]), .reinstreq = reinstreq};
        if (!l->v[l->n].package || !l->v[l->n].state) {
            free(l->v[l->n].package);
            free(l->v[l->n].state);
            return -ENOMEM;
        }
        l->n++;
    }
    return 0;
}

int ks_dpkg_status_unfinished(const char *text, size_t len, ks_dpkg_unfinished_list *ret)
{
    ks_dpkg_unfinished_list l = {0};
    const char *pkg = NULL, *st = NULL, *line;
    size_t pkg_n = 0, st_n = 0, pos = 0, n;
    int r = 0;

    assert(text || len == 0);
    assert(ret);
    while (r >= 0 && ks_next_line(text, len, &pos, &line, &n)) {
        const char *v;
        size_t vn;

        if (n == 0 || (n == 1 && line[0] == '\r')) {
            r = stanza_done(pkg, pkg_n, st, st_n, &l);
            pkg = st = NULL;
            continue;
        }
        if (n > 8 && memcmp(line, "Package:", 8) == 0) {
            v = line + 8;
            vn = n - 8;
            trim(&v, &vn);
            pkg = v;
            pkg_n = vn;
        } else if (n > 7 && memcmp(line, "Status:", 7) == 0) {
            v = line + 7;
            vn = n - 7;
            trim(&v, &vn);
            st = v;
            st_n = vn;
        }
    }
    if (r >= 0)
        r = stanza_done(pkg, pkg_n, st, st_n, &l);
    if (r < 0) {
        ks_dpkg_unfinished_list_done(&l);
        return r;
    }
    *ret = l;
    return 0;
}

int ks_dpkg_read_unfinished(const ks_root *root, ks_dpkg_unfinished_list *ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    assert(root);
    r = ks_root_read_file(root, "var/lib/dpkg/status", 256u << 20, &text, &len);
    if (r == -ENOENT) {
        *ret = (ks_dpkg_unfinished_list){0};
        return 0;
    }
    if (r < 0)
        return r;
    return ks_dpkg_status_unfinished(text, len, ret);
}

char *ks_dpkg_error_from_output(const char *output)
{
    const char *hit = NULL, *p;

    if (!output)
        return NULL;
    for (p = output; (p = strstr(p, "dpkg: error processing ")); p++)
        if (p == output || p[-1] == '\n')
            hit = p;
    if (!hit)
        return NULL;
    {
        size_t a = strcspn(hit, "\r\n");
        const char *next = hit + a;
        size_t b;

        next += strspn(next, "\r\n");
        next += strspn(next, " \t");
        b = strcspn(next, "\r\n");
        if (b == 0)
            return strndup(hit, a);
        return ks_asprintf("%.*s %.*s", (int)a, hit, (int)b, next);
    }
}

int ks_dpkg_status_installed_prefixed(const char *text, size_t len, const char *prefix,
                                      char ***names)
{
    size_t pl = strlen(prefix), pos = 0, n;
    const char *line;

    assert(text || len == 0);
    assert(names);
    /* Every "Package: PREFIX..." line, kept when its stanza says "install ok installed". */
    for (size_t start = 0; ks_next_line(text, len, &pos, &line, &n); start = pos) {
        const char *v = line + 8;
        size_t vn = n >= 8 ? n - 8 : 0;
        _cleanup_free_ char *name = NULL;
        int r;

        if (n <= 8 || memcmp(line, "Package:", 8) != 0)
            continue;
        trim(&v, &vn);
        if (vn < pl || memcmp(v, prefix, pl) != 0 || memchr(v, ' ', vn) || memchr(v, '\0', vn))
            continue;
        /* The stanza starts at its first line: look for Status from there. */
        while (start > 0 && !(text[start - 1] == '\n' && (start < 2 || text[start - 2] == '\n')))
            start--;
        if (!stanza_installed(text, len, start))
            continue;
        name = strndup(v, vn);
        if (!name)
            return -ENOMEM;
        if (ks_strv_contains(*names, name))
            continue;
        r = ks_strv_push(names, TAKE_PTR(name));
        if (r < 0)
            return r;
    }
    return 0;
}
