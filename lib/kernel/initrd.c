/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "lib/kernel/initrd.h"
#include "lib/kernel/modinfo.h"
#include "lib/kernel/archive-dl.h"
#include "lib/kernel/unpack.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"

#define NEWC_HDR 110
#define CPIO_BUF (1024 * 1024)

/* The compressions the kernel's initramfs unpacker knows that libarchive decodes in-process. */
#define INITRD_FILTERS                                                                             \
    (KS_FILTER_GZIP | KS_FILTER_BZIP2 | KS_FILTER_XZ | KS_FILTER_LZMA | KS_FILTER_LZ4 |            \
     KS_FILTER_ZSTD)

typedef struct cpio_source {
    ks_unpack *u;
    unsigned char *buf;
    int error;
} cpio_source;

static la_ssize_t cpio_read_cb(struct archive *a, void *userdata, const void **ret_buf)
{
    cpio_source *c = userdata;
    ssize_t n = ks_unpack_read(c->u, c->buf, CPIO_BUF);
    if (n < 0) {
        c->error = (int)n;
        sym_archive_set_error(a, EIO, "%s", strempty(ks_unpack_error(c->u)));
        return -1;
    }
    *ret_buf = c->buf;
    return n;
}

static int add_module_path(char ***names, const char *path)
{
    _cleanup_free_ char *name = NULL;

    /* Modules live under lib/modules/ or usr/lib/modules/ in an initramfs. */
    if (!strstr(path, "lib/modules/") || ks_module_name_from_path(path, &name) < 0)
        return 0;
    if (ks_strv_contains(*names, name))
        return 0;
    return ks_strv_push(names, TAKE_PTR(name));
}

static int hex8(const char *s, unsigned long *ret)
{
    unsigned long v = 0;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned long)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned long)(c - 'A' + 10);
        else
            return -EBADMSG;
    }
    *ret = v;
    return 0;
}

/*
 * Walks the uncompressed newc/crc cpio segments at the start (as the kernel's initramfs
 * unpacker does), recording module names; returns the offset of the first byte that is not
 * an uncompressed cpio header or zero padding.
 */
static int skip_plain_segments(int fd, off_t size, char ***names, off_t *ret_off)
{
    off_t off = 0;
    char hdr[NEWC_HDR];
    size_t n;
    int r;

    while (off < size) {
        unsigned long namesize, filesize;
        _cleanup_free_ char *name = NULL;

        r = ks_pread_all(fd, hdr, 4, off, &n);
        if (r < 0)
            return r;
        if (n == 4 && memcmp(hdr, "\0\0\0\0", 4) == 0) {
            off += 4; /* padding between segments */
            continue;
        }
        r = ks_pread_all(fd, hdr, sizeof(hdr), off, &n);
        if (r < 0)
            return r;
        if (n < 6 || (memcmp(hdr, "070701", 6) != 0 && memcmp(hdr, "070702", 6) != 0))
            break;
        if (n < sizeof(hdr) || hex8(hdr + 54, &filesize) < 0 || hex8(hdr + 94, &namesize) < 0 ||
            namesize == 0 || namesize > 4096)
            return -EBADMSG;
        name = malloc(namesize);
        if (!name)
            return -ENOMEM;
        r = ks_pread_all(fd, name, namesize, off + NEWC_HDR, &n);
        if (r < 0)
            return r;
        if (n < namesize)
            return -EBADMSG;
        name[namesize - 1] = '\0';
        off += ((NEWC_HDR + (off_t)namesize + 3) & ~(off_t)3);
        off += (((off_t)filesize + 3) & ~(off_t)3);
        if (off > size)
            return -EBADMSG;
        if (!streq(name, "TRAILER!!!")) {
            r = add_module_path(names, name);
            if (r < 0)
                return r;
        }
    }
    *ret_off = off;
    return 0;
}

/*
 * Reads every segment of an initramfs: the uncompressed cpio segments, then the compressed
 * tail as a cpio archive (module names into *names). drain: the compressed stream is read to
 * its very end after the archive's trailer, so that a stream cut short or a checksum that does
 * not match (gzip's CRC32 and length, xz's and zstd's checks sit at the end) is an error too.
 */
static int initrd_walk(int fd, uint64_t data_max, bool drain, char ***names, char **ret_error)
{
    struct archive *a;
    struct archive_entry *entry;
    struct stat st;
    off_t off = 0;
    int r, ar;

    if (fstat(fd, &st) < 0)
        return -errno;
    r = skip_plain_segments(fd, st.st_size, names, &off);
    if (r < 0) {
        if (ret_error)
            *ret_error = strdup("corrupt uncompressed cpio segment");
        return r;
    }
    if (off < st.st_size) {
        _cleanup_unpack_ ks_unpack *u = NULL;
        _cleanup_free_ unsigned char *buf = NULL;
        _cleanup_free_ char *why = NULL;
        cpio_source src;

        r = ks_unpack_open(fd, (uint64_t)off, UINT64_MAX, INITRD_FILTERS, data_max, &u, &why);
        if (r < 0) {
            if (ret_error)
                *ret_error =
                    ks_asprintf("cannot read the compressed part: %s", why ? why : strerror(-r));
            return r;
        }
        buf = malloc(CPIO_BUF);
        a = sym_archive_read_new();
        if (!buf || !a) {
            if (a)
                sym_archive_read_free(a);
            return -ENOMEM;
        }
        src = (cpio_source){.u = u, .buf = buf};
        sym_archive_read_support_format_cpio(a);
        sym_archive_read_support_filter_none(a);
        if (sym_archive_read_open(a, &src, NULL, cpio_read_cb, NULL) != ARCHIVE_OK) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read the compressed part: %s",
                                         strempty(sym_archive_error_string(a)));
            sym_archive_read_free(a);
            return src.error < 0 ? src.error : -EBADMSG;
        }
        while ((ar = sym_archive_read_next_header(a, &entry)) == ARCHIVE_OK) {
            const char *p = sym_archive_entry_pathname(entry);
            if (p && sym_archive_entry_filetype(entry) == AE_IFREG) {
                r = add_module_path(names, p);
                if (r < 0) {
                    sym_archive_read_free(a);
                    return r;
                }
            }
        }
        if (ar != ARCHIVE_EOF) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read the compressed part: %s",
                                         src.error < 0 ? strempty(ks_unpack_error(u))
                                                       : strempty(sym_archive_error_string(a)));
            sym_archive_read_free(a);
            return src.error < 0 ? src.error : -EBADMSG;
        }
        sym_archive_read_free(a);
        for (ssize_t n = 1; drain && n > 0;) {
            n = ks_unpack_read(u, buf, CPIO_BUF);
            if (n < 0) {
                if (ret_error)
                    *ret_error = ks_asprintf("cannot read the compressed part to its end: %s",
                                             strempty(ks_unpack_error(u)));
                return (int)n;
            }
        }
    } else if (!*names && st.st_size > 0 && off == 0) {
        if (ret_error)
            *ret_error = strdup("not an initramfs (no cpio archive)");
        return -EBADMSG;
    }
    return 0;
}

int ks_initrd_list_modules_fd(int fd, char ***ret_names, char **ret_error)
{
    return ks_initrd_list_modules_fd_max(fd, KS_INITRD_DATA_MAX, ret_names, ret_error);
}

int ks_initrd_list_modules_fd_max(int fd, uint64_t data_max, char ***ret_names, char **ret_error)
{
    _cleanup_strv_free_ char **names = NULL;
    int r = initrd_walk(fd, data_max, false, &names, ret_error);

    if (r < 0)
        return r;
    ks_strv_sort(names);
    *ret_names = TAKE_PTR(names);
    return 0;
}

int ks_initrd_unpacks_fd(int fd, uint64_t data_max, char **ret_error)
{
    _cleanup_strv_free_ char **names = NULL;

    return initrd_walk(fd, data_max, true, &names, ret_error);
}

int ks_initrd_list_modules(const ks_root *root, const char *path, char ***ret_names,
                           char **ret_error)
{
    _cleanup_close_ int fd = ks_root_open_regular(root, path, 0);
    if (fd < 0)
        return fd;
    return ks_initrd_list_modules_fd(fd, ret_names, ret_error);
}
