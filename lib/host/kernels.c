/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>

#include "lib/host/kernels.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/debversion.h"
#include "lib/basic/util.h"

#define LIST_MAX (16u * 1024 * 1024)
#define WALK_DEPTH_MAX 16

int ks_release_compare(const char *a, const char *b)
{
    return ks_deb_version_compare(a, b);
}

void ks_kernels_done(ks_kernels *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i].release);
    free(k->v);
    k->v = NULL;
    k->n = 0;
}

static int cmp_newest_first(const void *a, const void *b)
{
    return ks_release_compare(((const ks_kernel *)b)->release, ((const ks_kernel *)a)->release);
}

static bool is_dir(const ks_root *root, const char *path)
{
    struct stat st;
    return ks_root_stat(root, path, &st) >= 0 && S_ISDIR(st.st_mode);
}

/* lib/modules/RELEASE, or usr/lib/modules/RELEASE on a merged-/usr system without the link. */
static char *modules_dir(const ks_root *root, const char *release)
{
    static const char *const bases[] = {"lib/modules", "usr/lib/modules"};

    for (size_t i = 0; i < ARRAY_SIZE(bases); i++) {
        char *p = ks_asprintf("%s/%s", bases[i], release);
        if (!p)
            return NULL;
        if (is_dir(root, p))
            return p;
        free(p);
    }
    return strdup("");
}

static bool skip_image_name(const char *name)
{
    static const char *const suffixes[] = {".old",       ".bak",      "~",
                                           ".dpkg-old",  ".dpkg-new", ".dpkg-tmp",
                                           ".dpkg-dist", ".dpkg-bak", ".efi.signed"};

    for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++)
        if (ks_endswith(name, suffixes[i]))
            return true;
    return false;
}

int ks_kernels_list(const ks_root *root, ks_kernels *ret)
{
    _cleanup_strv_free_ char **names = NULL;
    ks_kernels ks = {};
    size_t cap = 0;
    int r;

    r = ks_root_list_dir(root, "boot", &names);
    if (r < 0)
        return r;
    for (char **n = names; *n; n++) {
        _cleanup_free_ char *path = NULL, *initrd = NULL, *mdir = NULL;
        const char *release = ks_startswith(*n, "vmlinuz-");
        ks_kernel kern = {};
        struct stat st;

        if (!release || !*release || skip_image_name(*n))
            continue;
        path = ks_asprintf("boot/%s", *n);
        if (!path)
            goto oom;
        /* vmlinuz and vmlinuz.old are symlinks to real images; only real files count. */
        if (ks_root_lstat(root, path, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        kern.vmlinuz_size = (uint64_t)st.st_size;
        initrd = ks_asprintf("boot/initrd.img-%s", release);
        mdir = modules_dir(root, release);
        if (!initrd || !mdir)
            goto oom;
        if (ks_root_stat(root, initrd, &st) >= 0 && S_ISREG(st.st_mode)) {
            kern.has_initrd = true;
            kern.initrd_size = (uint64_t)st.st_size;
        }
        kern.has_modules = *mdir != '\0';
        kern.release = strdup(release);
        if (!kern.release)
            goto oom;
        if (!GREEDY_REALLOC(ks.v, cap, ks.n + 1)) {
            free(kern.release);
            goto oom;
        }
        ks.v[ks.n++] = kern;
    }
    if (ks.n > 1)
        qsort(ks.v, ks.n, sizeof(*ks.v), cmp_newest_first);
    *ret = ks;
    return 0;
oom:
    ks_kernels_done(&ks);
    return -ENOMEM;
}

const ks_kernel *ks_kernels_find(const ks_kernels *k, const char *release)
{
    if (!k || !release)
        return NULL;
    for (size_t i = 0; i < k->n; i++)
        if (streq(k->v[i].release, release))
            return &k->v[i];
    return NULL;
}

int ks_running_kernel(const ks_root *root, char **ret)
{
    _cleanup_free_ char *line = NULL;
    char *s;
    int r;

    r = ks_root_read_line(root, "proc/sys/kernel/osrelease", &line);
    if (r < 0)
        return r;
    s = ks_strstrip(line);
    if (!*s || strchr(s, '/'))
        return -EBADMSG;
    s = strdup(s);
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

/* "kernel/net/ipv4/tcp_bbr.ko.zst" names module "tcp_bbr" ('-' and '_' alike). */
static bool path_names_module(const char *path, size_t n, const char *module)
{
    static const char *const suffixes[] = {".ko", ".ko.xz", ".ko.zst", ".ko.gz"};
    const char *base = path;
    size_t bl, ml = strlen(module);

    for (size_t i = 0; i < n; i++)
        if (path[i] == '/')
            base = path + i + 1;
    bl = n - (size_t)(base - path);
    for (size_t s = 0; s < ARRAY_SIZE(suffixes); s++) {
        size_t sl = strlen(suffixes[s]);
        if (bl != ml + sl || memcmp(base + ml, suffixes[s], sl) != 0)
            continue;
        for (size_t i = 0; i < ml; i++) {
            char a = base[i] == '-' ? '_' : base[i], b = module[i] == '-' ? '_' : module[i];
            if (a != b)
                return false;
        }
        return true;
    }
    return false;
}

/* The path (relative to the modules dir) of the first list line naming module, or NULL. */
static char *list_find(const char *text, size_t len, const char *module)
{
    size_t pos = 0, n;
    const char *line;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        while (n > 0 && isspace((unsigned char)line[n - 1]))
            n--;
        if (n > 0 && path_names_module(line, n, module))
            return strndup(line, n);
    }
    return NULL;
}

/* modules.order names NAME.ko even when the package ships NAME.ko.zst: try every suffix. */
static bool module_file_exists(const ks_root *root, const char *mdir, const char *entry)
{
    static const char *const suffixes[] = {"", ".xz", ".zst", ".gz"};
    _cleanup_free_ char *base = strdup(entry);
    char *dot;

    if (!base)
        return false;
    dot = strstr(base, ".ko");
    if (!dot)
        return false;
    dot[3] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s%s", mdir, base, suffixes[i]);
        struct stat st;
        if (p && ks_root_stat(root, p, &st) >= 0 && S_ISREG(st.st_mode))
            return true;
    }
    return false;
}

/* Looks for a module file below dir without following symlinks (build/, source/). */
static int walk_find(const ks_root *root, const char *dir, const char *module, unsigned depth)
{
    _cleanup_strv_free_ char **names = NULL;
    int r;

    if (depth > WALK_DEPTH_MAX)
        return 0;
    if (ks_root_list_dir(root, dir, &names) < 0)
        return 0;
    for (char **n = names; *n; n++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s", dir, *n);
        struct stat st;

        if (!p)
            return -ENOMEM;
        if (ks_root_lstat(root, p, &st) < 0)
            continue;
        if (S_ISREG(st.st_mode) && path_names_module(*n, strlen(*n), module))
            return 1;
        if (S_ISDIR(st.st_mode)) {
            r = walk_find(root, p, module, depth + 1);
            if (r != 0)
                return r;
        }
    }
    return 0;
}

int ks_kernel_module_kind(const ks_root *root, const char *release, const char *module,
                          bool *ret_builtin, bool *ret_module)
{
    _cleanup_free_ char *mdir = NULL, *p = NULL, *text = NULL, *entry = NULL;
    bool builtin = false, loadable = false;
    size_t len;
    int r;

    if (!release || !*release || strchr(release, '/') || !module || !*module || strchr(module, '/'))
        return -EINVAL;
    mdir = modules_dir(root, release);
    if (!mdir)
        return -ENOMEM;
    if (!*mdir)
        return -ENOENT;

    p = ks_asprintf("%s/modules.builtin", mdir);
    if (!p)
        return -ENOMEM;
    if (ks_root_read_file(root, p, LIST_MAX, &text, &len) >= 0) {
        entry = list_find(text, len, module);
        builtin = entry != NULL;
    }
    if (!builtin) {
        free(p);
        free(text);
        text = NULL;
        p = ks_asprintf("%s/modules.order", mdir);
        if (!p)
            return -ENOMEM;
        if (ks_root_read_file(root, p, LIST_MAX, &text, &len) >= 0) {
            entry = list_find(text, len, module);
            loadable = entry && module_file_exists(root, mdir, entry);
        }
        if (!loadable) {
            r = walk_find(root, mdir, module, 0);
            if (r < 0)
                return r;
            loadable = r > 0;
        }
    }
    if (ret_builtin)
        *ret_builtin = builtin;
    if (ret_module)
        *ret_module = loadable;
    return 0;
}
