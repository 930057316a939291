/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "lib/kernel/deb.h"
#include "lib/kernel/depmodconf.h"
#include "lib/kernel/modinfo.h"
#include "lib/kernel/archive-dl.h"
#include "lib/kernel/compress-dl.h"
#include "lib/kernel/unpack.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"

#define IO_BUF (1024 * 1024)
#define BUILTIN_MAX (16u * 1024 * 1024)
#define SMALL_MODULE_MAX (2u * 1024 * 1024)
/* Passes over data.tar: each catches the compressed dependencies that went by before a module
 * of interest named them, so this bounds the depth of a dependency chain laid out backwards. */
#define DEB_PASSES_MAX 16
#define XZ_THREADS_MAX 8
/* Memory the multi-threaded decoder may use per thread. A block in flight costs its output
 * (Debian's data.tar.xz: 24 MiB blocks), its input (up to ~10 MiB) and the 8 MiB dictionary:
 * 48 MiB per thread lets one block per thread run, and no more, like dpkg-deb's peak. */
#define XZ_MEMLIMIT_PER_THREAD (48u * 1024 * 1024)

typedef enum comp {
    COMP_NONE, /* plain tar */
    COMP_XZ,   /* liblzma, multi-threaded */
    COMP_ZSTD, /* libzstd */
    COMP_GZIP, /* libarchive's in-process filters (lib/kernel/unpack.h) */
    COMP_BZIP2,
    COMP_LZMA,
} comp;

/* The members dpkg-deb unpacks, and how (dpkg's lib/dpkg/compress.c, dpkg-deb/extract.c). */
static const struct {
    const char *suffix;
    comp comp;
    bool control; /* allowed for control.tar too */
} member_suffixes[] = {
    {"", COMP_NONE, true},     {".gz", COMP_GZIP, true},    {".xz", COMP_XZ, true},
    {".zst", COMP_ZSTD, true}, {".bz2", COMP_BZIP2, false}, {".lzma", COMP_LZMA, false},
};

static int member_comp(const char *name, const char *base, comp *ret)
{
    const char *suffix = ks_startswith(name, base);
    if (!suffix)
        return -ENOENT;
    for (size_t i = 0; i < ARRAY_SIZE(member_suffixes); i++)
        if (streq(suffix, member_suffixes[i].suffix) &&
            (member_suffixes[i].control || streq(base, "data.tar"))) {
            *ret = member_suffixes[i].comp;
            return 0;
        }
    return -EPROTONOSUPPORT;
}

typedef struct source {
    int fd;
    uint64_t off, end; /* the data.tar member inside the file */
    comp comp;
    lzma_stream lz;
    bool lz_init;
    ZSTD_DCtx *zd;
    size_t zret; /* last ZSTD_decompressStream result: 0 at a frame's end */
    unsigned char *in, *out;
    size_t in_len, in_pos;
    bool in_eof, done;
    int error;
    char *errmsg;
    uint64_t produced, cap;
    int threads;
    ks_unpack *unpack; /* COMP_GZIP, COMP_BZIP2, COMP_LZMA */
} source;

typedef struct reader {
    ks_modset *set;
    ks_depmod_conf *conf; /* the root's depmod.d, NULL for none */
    char *release;
    char **interest; /* normalized names whose .modinfo is needed */
    char **pending;  /* in a later pass: those whose .modinfo was missing when it began */
    bool builtin_seen, builtin_info_seen;
    unsigned char *buf; /* one member at a time */
    size_t buf_cap;
    ks_deb_stats stats;
    char *errmsg;
    bool second_pass;
    uint64_t data_max;
} reader;

static void set_error(char **msg, const char *fmt, ...) _printf_(2, 3);
static void set_error(char **msg, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    if (*msg)
        return; /* the first error is the cause */
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    *msg = s;
}

int ks_ar_parse_header(const char hdr[60], char ret_name[17], uint64_t *ret_size)
{
    char name[17], size[11];
    unsigned long long v = 0;
    size_t n;

    if (hdr[58] != '`' || hdr[59] != '\n')
        return -EBADMSG;
    memcpy(name, hdr, 16);
    name[16] = '\0';
    n = 16;
    while (n > 0 && name[n - 1] == ' ')
        n--;
    if (n > 0 && name[n - 1] == '/') /* GNU ar */
        n--;
    name[n] = '\0';
    memcpy(size, hdr + 48, 10);
    size[10] = '\0';
    n = 10;
    while (n > 0 && size[n - 1] == ' ')
        n--;
    size[n] = '\0';
    if (n == 0)
        return -EBADMSG;
    for (size_t i = 0; i < n; i++) {
        if (size[i] < '0' || size[i] > '9')
            return -EBADMSG;
        v = v * 10 + (unsigned)(size[i] - '0');
    }
    memcpy(ret_name, name, 17);
    *ret_size = v;
    return 0;
}

/* Finds data.tar* in the ar container. */
static int find_data_member(int fd, uint64_t *ret_off, uint64_t *ret_size, comp *ret_comp,
                            char **err)
{
    char magic[8], hdr[60], name[17];
    uint64_t off = 8, size;
    struct stat st;
    size_t n;
    unsigned index = 0;
    bool control_seen = false;
    comp c;
    int r;

    if (fstat(fd, &st) < 0)
        return -errno;
    r = ks_pread_all(fd, magic, sizeof(magic), 0, &n);
    if (r < 0)
        return r;
    if (n < sizeof(magic) || memcmp(magic, "!<arch>\n", 8) != 0) {
        set_error(err, "not a Debian package (no ar archive signature)");
        return -EBADMSG;
    }
    for (;;) {
        r = ks_pread_all(fd, hdr, sizeof(hdr), off, &n);
        if (r < 0)
            return r;
        if (n == 0) {
            set_error(err, "package has no data.tar member");
            return -EBADMSG;
        }
        if (n < sizeof(hdr)) {
            set_error(err, "package is truncated (in an ar header)");
            return -EPIPE;
        }
        if (ks_ar_parse_header(hdr, name, &size) < 0) {
            set_error(err, "package is corrupt (bad ar header at offset %llu)",
                      (unsigned long long)off);
            return -EBADMSG;
        }
        off += sizeof(hdr);
        if (S_ISREG(st.st_mode) &&
            (size > (uint64_t)st.st_size || off > (uint64_t)st.st_size - size)) {
            set_error(err, "package is truncated ('%s' needs %llu bytes, file has %llu)", name,
                      (unsigned long long)size, (unsigned long long)((uint64_t)st.st_size - off));
            return -EPIPE;
        }
        if (index++ == 0) {
            if (!streq(name, "debian-binary")) {
                set_error(err, "not a Debian package (first member is '%s')", name);
                return -EBADMSG;
            }
        } else if (name[0] == '_') {
            /* dpkg-deb skips members whose name starts with '_'. */
        } else if (!control_seen) {
            r = member_comp(name, "control.tar", &c);
            if (r < 0) {
                set_error(err,
                          r == -ENOENT
                              ? "not a Debian package ('%s' where dpkg expects control.tar)"
                              : "dpkg would refuse the member '%s' (unknown compression)",
                          name);
                return -EBADMSG;
            }
            control_seen = true;
        } else {
            r = member_comp(name, "data.tar", &c);
            if (r < 0) {
                set_error(err,
                          r == -ENOENT ? "not a Debian package ('%s' where dpkg expects data.tar)"
                                       : "dpkg would refuse the member '%s' (unknown compression)",
                          name);
                return -EBADMSG;
            }
            *ret_comp = c;
            *ret_off = off;
            *ret_size = size;
            return 0;
        }
        off += size + (size & 1);
    }
}

static int source_init(source *s, int fd, uint64_t off, uint64_t size, comp c, uint64_t cap)
{
    *s = (source){.fd = fd, .off = off, .end = off + size, .comp = c, .threads = 1, .cap = cap};
    if (c == COMP_GZIP || c == COMP_BZIP2 || c == COMP_LZMA) {
        unsigned f = c == COMP_GZIP    ? KS_FILTER_GZIP
                     : c == COMP_BZIP2 ? KS_FILTER_BZIP2
                                       : KS_FILTER_LZMA;
        int r = ks_unpack_open(fd, off, off + size, f, cap, &s->unpack, &s->errmsg);
        if (r < 0)
            return r;
    }
    s->in = malloc(IO_BUF);
    s->out = malloc(IO_BUF);
    if (!s->in || !s->out)
        return -ENOMEM;
    if ((c == COMP_XZ && ks_dlopen_liblzma(NULL) < 0) ||
        (c == COMP_ZSTD && ks_dlopen_libzstd(NULL) < 0))
        return -EOPNOTSUPP;
    if (c == COMP_XZ) {
        uint32_t cpus = sym_lzma_cputhreads();
        uint32_t threads = cpus == 0 ? 1 : cpus > XZ_THREADS_MAX ? XZ_THREADS_MAX : cpus;
        lzma_mt mt = {
            .flags = LZMA_CONCATENATED,
            .threads = threads,
            .memlimit_threading = (uint64_t)XZ_MEMLIMIT_PER_THREAD * threads,
            .memlimit_stop = UINT64_MAX,
        };
        s->lz = (lzma_stream)LZMA_STREAM_INIT;
        if (sym_lzma_stream_decoder_mt(&s->lz, &mt) != LZMA_OK)
            return -ENOMEM;
        s->lz_init = true;
        s->threads = (int)mt.threads;
    } else if (c == COMP_ZSTD) {
        s->zd = sym_ZSTD_createDCtx();
        if (!s->zd)
            return -ENOMEM;
    }
    return 0;
}

static void source_done(source *s)
{
    if (s->lz_init)
        sym_lzma_end(&s->lz);
    if (s->zd)
        sym_ZSTD_freeDCtx(s->zd);
    ks_unpack_free(s->unpack);
    free(s->in);
    free(s->out);
    free(s->errmsg);
    *s = (source){.fd = -1};
}

/* Raw bytes of the member; sets in_eof at its end. */
static int source_fill(source *s)
{
    size_t want, n;
    int r;

    s->in_pos = s->in_len = 0;
    want = s->end - s->off < IO_BUF ? (size_t)(s->end - s->off) : IO_BUF;
    if (want == 0) {
        s->in_eof = true;
        return 0;
    }
    r = ks_pread_all(s->fd, s->in, want, s->off, &n);
    if (r < 0)
        return r;
    if (n < want) {
        set_error(&s->errmsg, "package is truncated (data.tar ends early)");
        return -EPIPE;
    }
    s->off += n;
    s->in_len = n;
    return 0;
}

static la_ssize_t read_cb(struct archive *a, void *userdata, const void **ret_buf)
{
    source *s = userdata;
    int r;

    if (s->error < 0)
        return -1;
    if (s->done)
        return 0;
    if (s->comp == COMP_NONE) {
        r = source_fill(s);
        if (r < 0)
            goto fail;
        if (s->in_eof) {
            s->done = true;
            return 0;
        }
        *ret_buf = s->in;
        s->produced += s->in_len;
        return (la_ssize_t)s->in_len;
    }
    if (s->unpack) {
        ssize_t n = ks_unpack_read(s->unpack, s->out, IO_BUF);
        if (n < 0) {
            set_error(&s->errmsg, "data.tar %s", strempty(ks_unpack_error(s->unpack)));
            r = (int)n;
            goto fail;
        }
        if (n == 0) {
            s->done = true;
            return 0;
        }
        *ret_buf = s->out;
        s->produced += (uint64_t)n;
        return (la_ssize_t)n;
    }
    for (;;) {
        size_t produced;
        if (s->comp == COMP_XZ) {
            lzma_ret lr;
            if (s->lz.avail_in == 0 && !s->in_eof) {
                r = source_fill(s);
                if (r < 0)
                    goto fail;
                s->lz.next_in = s->in;
                s->lz.avail_in = s->in_len;
            }
            s->lz.next_out = s->out;
            s->lz.avail_out = IO_BUF;
            lr = sym_lzma_code(&s->lz, s->in_eof ? LZMA_FINISH : LZMA_RUN);
            produced = IO_BUF - s->lz.avail_out;
            if (lr == LZMA_STREAM_END) {
                s->done = true;
            } else if (lr == LZMA_BUF_ERROR && s->in_eof) {
                set_error(&s->errmsg, "package is truncated (xz stream ends early)");
                r = -EPIPE;
                goto fail;
            } else if (lr != LZMA_OK) {
                set_error(&s->errmsg, "data.tar.xz is corrupt (liblzma error %d)", (int)lr);
                r = lr == LZMA_MEM_ERROR ? -ENOMEM : -EBADMSG;
                goto fail;
            }
        } else {
            ZSTD_inBuffer in;
            ZSTD_outBuffer out = {.dst = s->out, .size = IO_BUF};
            if (s->in_pos == s->in_len && !s->in_eof) {
                r = source_fill(s);
                if (r < 0)
                    goto fail;
            }
            if (s->in_pos == s->in_len && s->in_eof) {
                if (s->zret != 0) {
                    set_error(&s->errmsg, "package is truncated (zstd frame ends early)");
                    r = -EPIPE;
                    goto fail;
                }
                s->done = true;
                return 0;
            }
            in = (ZSTD_inBuffer){.src = s->in, .size = s->in_len, .pos = s->in_pos};
            s->zret = sym_ZSTD_decompressStream(s->zd, &out, &in);
            if (sym_ZSTD_isError(s->zret)) {
                set_error(&s->errmsg, "data.tar.zst is corrupt (%s)",
                          sym_ZSTD_getErrorName(s->zret));
                r = -EBADMSG;
                goto fail;
            }
            s->in_pos = in.pos;
            produced = out.pos;
        }
        if (produced > 0) {
            *ret_buf = s->out;
            s->produced += produced;
            if (s->produced > s->cap) {
                set_error(&s->errmsg, "data.tar decompresses to more than %u MiB (the limit)",
                          (unsigned)(s->cap >> 20));
                r = -EFBIG;
                goto fail;
            }
            return (la_ssize_t)produced;
        }
        if (s->done)
            return 0;
    }
fail:
    s->error = r;
    sym_archive_set_error(a, EIO, "%s", s->errmsg ? s->errmsg : strerror(-r));
    return -1;
}

/* "./lib/modules/x" -> "lib/modules/x"; -EBADMSG for an absolute path or a ".." component. */
static int normalize_path(const char *p, const char **ret)
{
    const char *c;

    if (p[0] == '/')
        return -EBADMSG;
    for (;;) {
        if (p[0] == '/')
            p++;
        else if (p[0] == '.' && p[1] == '/')
            p += 2;
        else
            break;
    }
    for (c = p; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return -EBADMSG;
        c += n;
        c += strspn(c, "/");
    }
    *ret = p;
    return 0;
}

static int read_member(reader *rd, struct archive *a, size_t size, size_t max)
{
    size_t len = 0;

    if (size > max)
        return -EFBIG;
    if (size + 1 > rd->buf_cap) {
        size_t cap = size + 1 < 1024 * 1024 ? 1024 * 1024 : size + 1;
        unsigned char *nb = realloc(rd->buf, cap);
        if (!nb)
            return -ENOMEM;
        rd->buf = nb;
        rd->buf_cap = cap;
    }
    while (len < size) {
        la_ssize_t k = sym_archive_read_data(a, rd->buf + len, size - len);
        if (k < 0)
            return -EIO;
        if (k == 0)
            break;
        len += (size_t)k;
    }
    if (len < size)
        return -EPIPE;
    rd->buf[len] = 0;
    return (int)(len > INT32_MAX ? INT32_MAX : len);
}

/* Decompresses a .ko.xz / .ko.zst held in rd->buf into a new buffer. */
static int decompress_module(const unsigned char *in, size_t in_len, unsigned char **ret,
                             size_t *ret_len)
{
    static const unsigned char xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0};
    static const unsigned char zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    _cleanup_free_ unsigned char *out = NULL;
    size_t cap = 0, len = 0;

    if (in_len >= sizeof(xz_magic) && memcmp(in, xz_magic, sizeof(xz_magic)) == 0) {
        lzma_stream lz = LZMA_STREAM_INIT;
        lzma_ret lr;
        if (ks_dlopen_liblzma(NULL) < 0)
            return -EOPNOTSUPP;
        if (sym_lzma_stream_decoder(&lz, 256u * 1024 * 1024, LZMA_CONCATENATED) != LZMA_OK)
            return -ENOMEM;
        lz.next_in = in;
        lz.avail_in = in_len;
        do {
            if (len == cap) {
                unsigned char *n;
                if (cap >= KS_DEB_MODULE_MAX) {
                    sym_lzma_end(&lz);
                    return -EFBIG;
                }
                cap = cap ? cap * 2 : 256 * 1024;
                n = realloc(out, cap);
                if (!n) {
                    sym_lzma_end(&lz);
                    return -ENOMEM;
                }
                out = n;
            }
            lz.next_out = out + len;
            lz.avail_out = cap - len;
            lr = sym_lzma_code(&lz, LZMA_FINISH);
            len = cap - lz.avail_out;
        } while (lr == LZMA_OK);
        sym_lzma_end(&lz);
        if (lr != LZMA_STREAM_END)
            return -EBADMSG;
    } else if (in_len >= sizeof(zstd_magic) && memcmp(in, zstd_magic, sizeof(zstd_magic)) == 0) {
        ZSTD_DCtx *zd = ks_dlopen_libzstd(NULL) < 0 ? NULL : sym_ZSTD_createDCtx();
        ZSTD_inBuffer ib = {.src = in, .size = in_len};
        size_t zr = 1;
        if (!zd)
            return -ENOMEM;
        while (ib.pos < ib.size || zr != 0) {
            ZSTD_outBuffer ob;
            if (len == cap) {
                unsigned char *n;
                if (cap >= KS_DEB_MODULE_MAX) {
                    sym_ZSTD_freeDCtx(zd);
                    return -EFBIG;
                }
                cap = cap ? cap * 2 : 256 * 1024;
                n = realloc(out, cap);
                if (!n) {
                    sym_ZSTD_freeDCtx(zd);
                    return -ENOMEM;
                }
                out = n;
            }
            ob = (ZSTD_outBuffer){.dst = out, .size = cap, .pos = len};
            zr = sym_ZSTD_decompressStream(zd, &ob, &ib);
            len = ob.pos;
            if (sym_ZSTD_isError(zr) || (ib.pos == ib.size && zr != 0 && ob.pos < ob.size)) {
                sym_ZSTD_freeDCtx(zd);
                return -EBADMSG;
            }
        }
        sym_ZSTD_freeDCtx(zd);
    } else {
        return -EBADMSG;
    }
    *ret = TAKE_PTR(out);
    *ret_len = len;
    return 0;
}

static int add_interest(reader *rd, const char *name)
{
    char *const *deps;
    int r;

    if (ks_strv_contains(rd->interest, name))
        return 0;
    r = ks_strv_extend(&rd->interest, name);
    if (r < 0)
        return r;
    deps = ks_modset_get_depends(rd->set, name);
    for (; deps && *deps; deps++) {
        r = add_interest(rd, *deps);
        if (r < 0)
            return r;
    }
    return 0;
}

static int builtin_cb(void *userdata, const char *module)
{
    return ks_modset_add_builtin(userdata, module);
}

static int builtin_info_cb(void *userdata, const char *module, const char *key, const char *value)
{
    if (streq(key, "version"))
        return ks_modset_set_builtin_version(userdata, module, value);
    return 0;
}

/* Reads the .modinfo of the module member in rd->buf (len bytes). */
static int module_info(reader *rd, const char *name, const char *file, size_t len)
{
    _cleanup_free_ unsigned char *plain = NULL;
    _cleanup_free_ char *deps = NULL, *version = NULL;
    const unsigned char *elf = rd->buf;
    const char *info;
    size_t elf_len = len, info_len;
    int r;

    if (!ks_endswith(file, ".ko")) {
        r = decompress_module(rd->buf, len, &plain, &elf_len);
        if (r < 0) {
            set_error(&rd->errmsg, "cannot decompress module '%s'", file);
            return r;
        }
        elf = plain;
    }
    r = ks_elf_find_modinfo(elf, elf_len, &info, &info_len);
    if (r == -ENOENT)
        return ks_modset_set_info(rd->set, name, NULL, NULL);
    if (r < 0) {
        set_error(&rd->errmsg, "module '%s' is not a valid ELF object", file);
        return r;
    }
    r = ks_modinfo_get(info, info_len, "depends", &deps);
    if (r < 0 && r != -ENOENT)
        return r;
    r = ks_modinfo_get(info, info_len, "version", &version);
    if (r < 0 && r != -ENOENT)
        return r;
    r = ks_modset_set_info(rd->set, name, deps, version);
    if (r < 0)
        return r;
    /* What a module of interest needs becomes of interest too. */
    if (ks_strv_contains(rd->interest, name)) {
        char *const *d = ks_modset_get_depends(rd->set, name);
        for (; d && *d; d++) {
            r = add_interest(rd, *d);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

static int handle_entry(reader *rd, struct archive *a, struct archive_entry *entry)
{
    const char *raw = sym_archive_entry_pathname(entry), *path, *rest, *file;
    _cleanup_free_ char *release = NULL, *name = NULL;
    int64_t size = sym_archive_entry_size(entry);
    int r;

    rd->stats.members++;
    if (!raw)
        return 0;
    if (normalize_path(raw, &path) < 0) {
        set_error(&rd->errmsg, "package holds an unsafe path '%s' (absolute or with '..')", raw);
        return -EBADMSG;
    }
    rest = ks_startswith(path, "lib/modules/");
    if (!rest)
        rest = ks_startswith(path, "usr/lib/modules/");
    if (!rest || !(file = strchr(rest, '/')) || sym_archive_entry_filetype(entry) != AE_IFREG)
        return 0;
    release = strndup(rest, (size_t)(file - rest));
    if (!release)
        return -ENOMEM;
    file++;
    if (!*release || !*file)
        return 0;

    if (streq(file, "modules.builtin") || streq(file, "modules.builtin.modinfo") ||
        ks_is_module_path(file)) {
        if (!rd->release) {
            rd->release = TAKE_PTR(release);
            /* depmod.d's overrides and externals name kernels: the set ranks by it. */
            r = ks_modset_set_release(rd->set, rd->release);
            if (r < 0)
                return r;
        } else if (!streq(rd->release, release)) {
            set_error(&rd->errmsg, "package holds modules of more than one kernel ('%s', '%s')",
                      rd->release, release);
            return -ENOTUNIQ;
        }
    } else {
        return 0;
    }

    if (rd->second_pass) {
        /* Every copy of the file that counts: the last one read is the one dpkg unpacks. */
        if (!ks_is_module_path(file) || ks_module_name_from_path(file, &name) < 0 ||
            !ks_strv_contains(rd->pending, name) ||
            !streq_ptr(ks_modset_get_file(rd->set, name), file))
            return 0;
    } else if (streq(file, "modules.builtin") || streq(file, "modules.builtin.modinfo")) {
        bool info = streq(file, "modules.builtin.modinfo");
        r = read_member(rd, a, size < 0 ? 0 : (size_t)size, BUILTIN_MAX);
        if (r < 0) {
            set_error(&rd->errmsg, "cannot read '%s' from the package", path);
            return r;
        }
        r = info ? ks_builtin_modinfo_foreach((char *)rd->buf, (size_t)r, builtin_info_cb, rd->set)
                 : ks_builtin_foreach((char *)rd->buf, (size_t)r, builtin_cb, rd->set);
        if (r < 0)
            return r;
        if (info)
            rd->builtin_info_seen = true;
        else
            rd->builtin_seen = true;
        return 0;
    } else {
        r = ks_module_name_from_path(file, &name);
        if (r < 0)
            return 0;
        if (ks_depmod_conf_excludes_path(rd->conf, file))
            return 0; /* depmod will not list it: build/, source/, depmod.d's exclude */
        rd->stats.modules++;
        r = ks_modset_add_module(rd->set, name, file);
        if (r < 0)
            return r;
        if (!streq_ptr(ks_modset_get_file(rd->set, name), file))
            return 0; /* another file of that name counts (depmod's search order) */
        /* Small plain modules are cheap to read, so their dependencies are known when they
         * become needed later; compressed or large ones are read only when needed (a second
         * pass catches those that went by too early). */
        if ((!ks_endswith(file, ".ko") || size > (int64_t)SMALL_MODULE_MAX) &&
            !ks_strv_contains(rd->interest, name))
            return 0;
    }

    if (size < 0 || (uint64_t)size > KS_DEB_MODULE_MAX) {
        if (ks_strv_contains(rd->interest, name)) {
            set_error(&rd->errmsg, "module '%s' is too large to inspect", file);
            return -EFBIG;
        }
        return 0;
    }
    r = read_member(rd, a, (size_t)size, KS_DEB_MODULE_MAX);
    if (r < 0) {
        set_error(&rd->errmsg, "cannot read '%s' from the package", path);
        return r;
    }
    r = module_info(rd, name, file, (size_t)size);
    if (r < 0) {
        /* A broken module nobody needs does not spoil the verdict. */
        if (!ks_strv_contains(rd->interest, name))
            r = 0;
        free(TAKE_PTR(rd->errmsg));
        if (r < 0)
            set_error(&rd->errmsg, "cannot read the .modinfo of '%s'", path);
        return r;
    }
    /* No stop before the end: every entry is checked ("..", absolute paths, a second kernel)
     * before any verdict, and a later copy of a file replaces an earlier one. */
    return 0;
}

static int one_pass(reader *rd, int fd, uint64_t off, uint64_t size, comp c)
{
    _cleanup_(source_done) source src = {.fd = -1};
    struct archive *a = NULL;
    struct archive_entry *entry;
    int r, ar;

    const char *dlerr = NULL;

    if (ks_dlopen_libarchive(&dlerr) < 0) {
        set_error(&rd->errmsg, "%s", dlerr);
        return -EOPNOTSUPP;
    }
    r = source_init(&src, fd, off, size, c, rd->data_max);
    if (r < 0) {
        if (src.errmsg)
            set_error(&rd->errmsg, "cannot read data.tar: %s", src.errmsg);
        return r;
    }
    rd->stats.threads = src.threads;
    a = sym_archive_read_new();
    if (!a)
        return -ENOMEM;
    sym_archive_read_support_format_tar(a);
    sym_archive_read_support_filter_none(a); /* decompression is the source's */
    if (sym_archive_read_open(a, &src, NULL, read_cb, NULL) != ARCHIVE_OK) {
        r = src.error < 0 ? src.error : -EBADMSG;
        set_error(&rd->errmsg, "cannot read data.tar: %s",
                  src.errmsg ? src.errmsg : strempty(sym_archive_error_string(a)));
        sym_archive_read_free(a);
        return r;
    }
    while ((ar = sym_archive_read_next_header(a, &entry)) == ARCHIVE_OK) {
        r = handle_entry(rd, a, entry);
        if (r < 0) {
            if (src.error < 0) {
                free(TAKE_PTR(rd->errmsg));
                set_error(&rd->errmsg, "%s", src.errmsg ? src.errmsg : strerror(-src.error));
                r = src.error;
            }
            sym_archive_read_free(a);
            return r;
        }
    }
    if (ar != ARCHIVE_EOF) {
        r = src.error < 0 ? src.error : -EBADMSG;
        if (r == -EBADMSG && ks_startswith(strempty(sym_archive_error_string(a)), "Truncated"))
            r = -EPIPE;
        set_error(&rd->errmsg, "cannot read data.tar: %s",
                  src.errmsg ? src.errmsg : strempty(sym_archive_error_string(a)));
        sym_archive_read_free(a);
        return r;
    }
    {
        /* Drain to the end of the compressed stream: a truncated tail is an error too. */
        const void *b;
        while (!src.done && src.error == 0 && read_cb(a, &src, &b) > 0)
            ;
        if (src.error < 0) {
            set_error(&rd->errmsg, "%s", src.errmsg ? src.errmsg : strerror(-src.error));
            sym_archive_read_free(a);
            return src.error;
        }
    }
    rd->stats.data_bytes += src.produced;
    sym_archive_read_free(a);
    return 0;
}

int ks_deb_read_modset_fd(int fd, char *const *wanted, ks_modset **ret, ks_deb_stats *ret_stats,
                          char **ret_error)
{
    return ks_deb_read_modset_fd_max(fd, wanted, KS_DEB_DATA_MAX, ret, ret_stats, ret_error);
}

int ks_deb_read_modset_fd_max(int fd, char *const *wanted, uint64_t data_max, ks_modset **ret,
                              ks_deb_stats *ret_stats, char **ret_error)
{
    return ks_deb_read_modset_fd_conf(fd, wanted, data_max, NULL, ret, ret_stats, ret_error);
}

int ks_deb_read_modset_fd_conf(int fd, char *const *wanted, uint64_t data_max, ks_depmod_conf *conf,
                               ks_modset **ret, ks_deb_stats *ret_stats, char **ret_error)
{
    _cleanup_modset_ ks_modset *set = ks_modset_new(NULL);
    reader rd = {.set = set, .data_max = data_max, .conf = conf};
    uint64_t off = 0, size = 0;
    comp c = COMP_NONE;
    int r;

    if (!set)
        return -ENOMEM;
    ks_modset_use_depmod_conf(set, conf, false);
    for (char *const *w = wanted; w && *w; w++) {
        _cleanup_free_ char *n = strdup(*w);
        if (!n) {
            r = -ENOMEM;
            goto out;
        }
        ks_module_name_normalize(n);
        r = add_interest(&rd, n);
        if (r < 0)
            goto out;
    }
    r = find_data_member(fd, &off, &size, &c, &rd.errmsg);
    if (r < 0)
        goto out;
    rd.stats.passes = 1;
    r = one_pass(&rd, fd, off, size, c);
    if (r < 0)
        goto out;
    if (!rd.release) {
        set_error(&rd.errmsg, "package holds no kernel modules (no lib/modules/RELEASE/)");
        r = -ENOENT;
        goto out;
    }
    /* Compressed modules that became needed only after they went by; each pass may find
     * further dependencies that went by earlier still. */
    for (unsigned pass = 2;; pass++) {
        bool again = false;
        for (char **i = rd.interest; i && *i; i++)
            if (ks_modset_needs_info(set, *i))
                again = true;
        if (!again)
            break;
        if (pass > DEB_PASSES_MAX) {
            for (char **i = rd.interest; i && *i; i++)
                if (ks_modset_needs_info(set, *i)) {
                    set_error(&rd.errmsg,
                              "dependency chain too deep: module '%s' is still unread after %d "
                              "passes over the package (each finds one more level of "
                              "dependencies that came earlier in it)",
                              *i, DEB_PASSES_MAX);
                    break;
                }
            r = -ELOOP;
            goto out;
        }
        rd.pending = ks_strv_free(rd.pending);
        for (char **i = rd.interest; i && *i; i++)
            if (ks_modset_needs_info(set, *i)) {
                r = ks_strv_extend(&rd.pending, *i);
                if (r < 0)
                    goto out;
            }
        rd.second_pass = true;
        rd.stats.passes = pass;
        r = one_pass(&rd, fd, off, size, c);
        if (r < 0)
            goto out;
    }
    /* The set was created before the release was known. */
    r = ks_modset_set_release(set, rd.release);
    if (r < 0)
        goto out;
    *ret = TAKE_PTR(set);
    if (ret_stats)
        *ret_stats = rd.stats;
    r = 0;
out:
    if (r < 0 && ret_error && !*ret_error)
        *ret_error = TAKE_PTR(rd.errmsg);
    free(rd.errmsg);
    free(rd.release);
    free(rd.buf);
    ks_strv_free(rd.interest);
    ks_strv_free(rd.pending);
    return r;
}

int ks_deb_read_modset(const char *path, char *const *wanted, ks_modset **ret,
                       ks_deb_stats *ret_stats, char **ret_error)
{
    return ks_deb_read_modset_conf(path, wanted, NULL, ret, ret_stats, ret_error);
}

int ks_deb_read_modset_conf(const char *path, char *const *wanted, ks_depmod_conf *conf,
                            ks_modset **ret, ks_deb_stats *ret_stats, char **ret_error)
{
    _cleanup_close_ int fd = ks_open_regular(path);

    if (fd < 0) {
        if (ret_error)
            *ret_error = strdup(ks_strerror(fd));
        return fd;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return ks_deb_read_modset_fd_conf(fd, wanted, KS_DEB_DATA_MAX, conf, ret, ret_stats, ret_error);
}
