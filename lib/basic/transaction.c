/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <sys/stat.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/fileio.h"
#include "lib/basic/transaction.h"

void ks_file_change_done(ks_file_change *c)
{
    assert(c);
    free(c->path);
    free(c->new_path);
    free(c->data);
    free(c->old_data);
    free(c->made_dir);
    free(c->what);
    *c = (ks_file_change){0};
}

void ks_transaction_done(ks_transaction *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        ks_file_change_done(&t->v[i]);
    free(t->v);
    *t = (ks_transaction){0};
}

const char *ks_file_change_kind_to_string(ks_file_change_kind k)
{
    static const char *const names[_KS_FILE_CHANGE_KIND_MAX] = {
        [KS_FILE_CHANGE_WRITE] = "write",
        [KS_FILE_CHANGE_RENAME] = "rename",
        [KS_FILE_CHANGE_REMOVE] = "remove",
    };
    if (k < 0 || k >= _KS_FILE_CHANGE_KIND_MAX)
        return NULL;
    return names[k];
}

int ks_transaction_add(ks_transaction *t, ks_file_change *c)
{
    ks_file_change *v;

    assert(t);
    assert(c);
    v = reallocarray(t->v, t->n + 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    t->v = v;
    t->v[t->n++] = *c;
    *c = (ks_file_change){0};
    return 0;
}

int ks_file_read_old(const ks_root *root, const char *path, size_t max, bool nofollow,
                     bool *ret_exists, char **ret_data, size_t *ret_len, mode_t *ret_mode)
{
    _cleanup_close_ int fd = -EBADF;
    _cleanup_free_ char *data = NULL;
    struct stat st;
    size_t len = 0;
    int r;

    assert(root);
    assert(path);
    assert(ret_exists);
    assert(ret_data);
    assert(ret_len);
    assert(ret_mode);
    fd = ks_root_open_file(root, path, O_RDONLY | (nofollow ? O_NOFOLLOW : 0), 0, KS_FILE_REGULAR);
    if (fd == -ENOENT) {
        *ret_exists = false;
        *ret_data = NULL;
        *ret_len = 0;
        *ret_mode = 0;
        return 0;
    }
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -EISDIR;
    if ((uint64_t)st.st_size > max)
        return -EFBIG;
    r = ks_read_fd(fd, (size_t)st.st_size, &data, &len);
    /* Grew while we read: not the content we were told about. */
    if (r == -EFBIG)
        return -EAGAIN;
    if (r < 0)
        return r;
    *ret_exists = true;
    *ret_data = TAKE_PTR(data);
    *ret_len = len;
    *ret_mode = st.st_mode & 07777;
    return 0;
}

int ks_file_change_keep_old(const ks_root *root, ks_file_change *c, size_t max)
{
    assert(c);
    return ks_file_read_old(root, c->path, max, false, &c->old_exists, &c->old_data, &c->old_len,
                            &c->old_mode);
}

/* Removes the empty folders between path's folder and top (inclusive) that kswap made. */
static void remove_made_dirs(const ks_root *root, const char *path, const char *top)
{
    _cleanup_free_ char *p = strdup(path);
    char *slash;

    if (!p || !top)
        return;
    while ((slash = strrchr(p, '/')) && slash != p) {
        _cleanup_free_ char *parent = NULL, *base = NULL;
        _cleanup_close_ int dfd = -EBADF;
        char *s2;

        *slash = '\0';
        if (!ks_startswith(p, top))
            return;
        parent = strdup(p);
        if (!parent)
            return;
        s2 = strrchr(parent, '/');
        if (s2) {
            base = strdup(s2 + 1);
            *s2 = '\0';
        } else {
            base = strdup(parent);
            strcpy(parent, ".");
        }
        if (!base)
            return;
        dfd = ks_root_open_at(root, parent, O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0 || unlinkat(dfd, base, AT_REMOVEDIR) < 0)
            return; /* not empty (someone else's files), or gone: stop */
        fsync(dfd);
        if (streq(p, top))
            return;
    }
}

/* Renames inside one folder of the root without replacing anything, then syncs the folder. */
static int rename_in_root(const ks_root *root, const char *from, const char *to)
{
    _cleanup_free_ char *a = strdup(from), *b = strdup(to), *c = strdup(from);
    _cleanup_close_ int dfd = -EBADF;
    const char *dir, *fb, *tb;

    if (!a || !b || !c)
        return -ENOMEM;
    dir = dirname(a);
    fb = basename(c);
    tb = basename(b);
    dfd = ks_root_open_at(root, dir, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return dfd;
    if (renameat2(dfd, fb, dfd, tb, RENAME_NOREPLACE) < 0)
        return -errno;
    return fsync(dfd) < 0 ? -errno : 0;
}

static bool exists_nofollow(const ks_root *root, const char *path)
{
    struct stat st;
    return ks_root_lstat(root, path, &st) == 0;
}

static int apply_one(const ks_root *root, const ks_file_change *c)
{
    int r;

    switch (c->kind) {
    case KS_FILE_CHANGE_WRITE:
        return ks_write_atomic(root, c->path, c->data, c->len, c->mode);
    case KS_FILE_CHANGE_RENAME:
        /* Done already by an interrupted run? */
        if (!exists_nofollow(root, c->path) && exists_nofollow(root, c->new_path))
            return 0;
        return rename_in_root(root, c->path, c->new_path);
    case KS_FILE_CHANGE_REMOVE:
        r = ks_unlink_durable(root, c->path);
        return r == -ENOENT ? 0 : r;
    default:
        return -EINVAL;
    }
}

static int undo_one(const ks_root *root, const ks_file_change *c)
{
    int r;

    switch (c->kind) {
    case KS_FILE_CHANGE_WRITE:
    case KS_FILE_CHANGE_REMOVE:
        if (c->old_exists)
            return ks_write_atomic(root, c->path, c->old_data, c->old_len, c->old_mode);
        r = ks_unlink_durable(root, c->path);
        if (r < 0 && r != -ENOENT)
            return r;
        remove_made_dirs(root, c->path, c->made_dir);
        return 0;
    case KS_FILE_CHANGE_RENAME:
        if (exists_nofollow(root, c->path) && !exists_nofollow(root, c->new_path))
            return 0;
        return rename_in_root(root, c->new_path, c->path);
    default:
        return -EINVAL;
    }
}

int ks_transaction_apply(const ks_root *root, const ks_transaction *t)
{
    assert(root);
    assert(t);
    for (size_t i = 0; i < t->n; i++) {
        int r = apply_one(root, &t->v[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

int ks_transaction_undo(const ks_root *root, const ks_transaction *t)
{
    int ret = 0;

    assert(root);
    assert(t);
    /* Every step is tried, so that one failure does not leave the rest undone. */
    for (size_t i = t->n; i > 0; i--) {
        int r = undo_one(root, &t->v[i - 1]);
        if (r < 0 && ret == 0)
            ret = r;
    }
    return ret;
}
