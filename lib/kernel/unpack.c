/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>

#include "lib/kernel/unpack.h"
#include "lib/kernel/archive-dl.h"
#include "lib/basic/util.h"

#define RAW_BUF (256 * 1024)

struct ks_unpack {
    int fd;
    uint64_t off, end;
    struct archive *a;
    unsigned char *raw;
    uint64_t produced, cap;
    int code;
    bool eof;
    char *error;
};

static const struct {
    ks_filter filter;
    int code;
    const char *name;
    const char *library; /* as archive_version_details() names it */
    int (**enable)(struct archive *);
} filters_table[] = {
    {KS_FILTER_GZIP, ARCHIVE_FILTER_GZIP, "gzip", "zlib/", &sym_archive_read_support_filter_gzip},
    {KS_FILTER_BZIP2, ARCHIVE_FILTER_BZIP2, "bzip2", "bz2lib/",
     &sym_archive_read_support_filter_bzip2},
    {KS_FILTER_XZ, ARCHIVE_FILTER_XZ, "xz", "liblzma/", &sym_archive_read_support_filter_xz},
    {KS_FILTER_LZMA, ARCHIVE_FILTER_LZMA, "lzma", "liblzma/",
     &sym_archive_read_support_filter_lzma},
    {KS_FILTER_LZ4, ARCHIVE_FILTER_LZ4, "lz4", "liblz4/", &sym_archive_read_support_filter_lz4},
    {KS_FILTER_ZSTD, ARCHIVE_FILTER_ZSTD, "zstd", "libzstd/",
     &sym_archive_read_support_filter_zstd},
};

static la_ssize_t raw_cb(struct archive *a, void *userdata, const void **ret_buf)
{
    ks_unpack *u = userdata;
    size_t want;

    (void)a;
    if (u->off >= u->end)
        return 0;
    want = u->end - u->off < RAW_BUF ? (size_t)(u->end - u->off) : RAW_BUF;
    for (;;) {
        ssize_t n = pread(u->fd, u->raw, want, (off_t)u->off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        u->off += (uint64_t)n;
        if (n == 0)
            u->end = u->off;
        *ret_buf = u->raw;
        return n;
    }
}

static void set_errorf(char **err, const char *fmt, ...) _printf_(2, 3);
static void set_errorf(char **err, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    if (!err || *err)
        return;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    *err = s;
}

/* archive_version_details() leaks its previous string at every call: asked once. */
static const char *version_details(void)
{
    static char *details;
    if (!details)
        details = strdup(strempty(sym_archive_version_details()));
    return strempty(details);
}

int ks_unpack_open(int fd, uint64_t off, uint64_t end, unsigned filters, uint64_t cap,
                   ks_unpack **ret, char **ret_error)
{
    _cleanup_unpack_ ks_unpack *u = NULL;
    struct archive_entry *entry;
    const char *dlerr = NULL, *details;
    bool any = false, missing = false;
    int r;

    if (ks_dlopen_libarchive(&dlerr) < 0) {
        set_errorf(ret_error, "%s", dlerr);
        return -EOPNOTSUPP;
    }
    u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    *u = (ks_unpack){.fd = fd, .off = off, .end = end, .cap = cap};
    u->raw = malloc(RAW_BUF);
    u->a = sym_archive_read_new();
    if (!u->raw || !u->a)
        return -ENOMEM;
    details = version_details();
    for (size_t i = 0; i < ARRAY_SIZE(filters_table); i++) {
        if (!(filters & filters_table[i].filter))
            continue;
        if (!strstr(details, filters_table[i].library)) {
            missing = true; /* libarchive would run an external program for it */
            continue;
        }
        if ((*filters_table[i].enable)(u->a) != ARCHIVE_OK) {
            /* ARCHIVE_WARNING: registered, but as an external program. */
            set_errorf(ret_error, "libarchive would decode %s with an external program",
                       filters_table[i].name);
            return -EOPNOTSUPP;
        }
        any = true;
    }
    if (!any && !(filters & KS_FILTER_NONE)) {
        set_errorf(ret_error, "libarchive lacks the library of this compression (%s)", details);
        return -EOPNOTSUPP;
    }
    sym_archive_read_support_format_raw(u->a);
    if (sym_archive_read_open(u->a, u, NULL, raw_cb, NULL) != ARCHIVE_OK ||
        sym_archive_read_next_header(u->a, &entry) != ARCHIVE_OK) {
        set_errorf(ret_error, "cannot decompress: %s", strempty(sym_archive_error_string(u->a)));
        return -EBADMSG;
    }
    u->code = sym_archive_filter_code(u->a, 0);
    r = -EPROTONOSUPPORT;
    if (u->code == ARCHIVE_FILTER_NONE && (filters & KS_FILTER_NONE))
        r = 0;
    for (size_t i = 0; i < ARRAY_SIZE(filters_table); i++)
        if (u->code == filters_table[i].code && (filters & filters_table[i].filter))
            r = 0;
    if (r < 0) {
        set_errorf(ret_error, "%s",
                   missing ? "compressed in a format libarchive cannot decode in-process"
                           : "not compressed in an allowed format");
        return r;
    }
    *ret = TAKE_PTR(u);
    return 0;
}

ssize_t ks_unpack_read(ks_unpack *u, void *buf, size_t len)
{
    la_ssize_t n;

    if (u->eof)
        return 0;
    n = sym_archive_read_data(u->a, buf, len);
    if (n < 0) {
        free(u->error);
        u->error = ks_asprintf("%s data is corrupt: %s", ks_unpack_filter_name(u),
                               strempty(sym_archive_error_string(u->a)));
        return ks_startswith(strempty(sym_archive_error_string(u->a)), "Truncated") ? -EPIPE
                                                                                    : -EBADMSG;
    }
    if (n == 0) {
        u->eof = true;
        return 0;
    }
    u->produced += (uint64_t)n;
    if (u->produced > u->cap) {
        free(u->error);
        u->error =
            ks_asprintf("decompresses to more than %" PRIu64 " MiB (the limit)", u->cap >> 20);
        return -EFBIG;
    }
    return n;
}

uint64_t ks_unpack_produced(const ks_unpack *u)
{
    return u->produced;
}

const char *ks_unpack_filter_name(const ks_unpack *u)
{
    for (size_t i = 0; i < ARRAY_SIZE(filters_table); i++)
        if (u->code == filters_table[i].code)
            return filters_table[i].name;
    return "uncompressed";
}

const char *ks_unpack_error(const ks_unpack *u)
{
    return u->error;
}

ks_unpack *ks_unpack_free(ks_unpack *u)
{
    if (!u)
        return NULL;
    if (u->a)
        sym_archive_read_free(u->a);
    free(u->raw);
    free(u->error);
    free(u);
    return NULL;
}
