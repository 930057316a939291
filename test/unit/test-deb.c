/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The package and initramfs readers on hostile input: every member name and compression dpkg
 * or the kernel would refuse is refused, nothing is decompressed by an external program (fake
 * lzop, lrzip, grzip, lz4, ... on PATH leave a mark when started), duplicates and updates/ as
 * dpkg and modprobe see them, late "../" entries and second kernels, decompression bombs, and
 * dependency chains laid out backwards.
 */
#include <elf.h>
#include <fcntl.h>
#include <lzma.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "lib/kernel/deb.h"
#include "lib/kernel/initrd.h"
#include "lib/basic/util.h"
#include "test.h"

#define REL "6.1.0-9-amd64"
static char tmpdir[] = "/tmp/test-deb-XXXXXX";
static char marker[PATH_MAX];

typedef struct buf {
    unsigned char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 4096;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void put_zeros(buf *b, size_t n)
{
    static const unsigned char z[512];
    while (n > 0) {
        size_t k = n < sizeof(z) ? n : sizeof(z);
        put(b, z, k);
        n -= k;
    }
}

/* A minimal relocatable ELF64 object with a .modinfo section, like a .ko. */
static void put_elf(buf *b, const char *info, size_t info_len)
{
    static const char shstr[] = "\0.modinfo\0.shstrtab";
    Elf64_Ehdr eh = {0};
    Elf64_Shdr sh[3] = {{0}};
    size_t start = b->len, info_off = sizeof(eh), str_off = info_off + info_len,
           sh_off = (str_off + sizeof(shstr) + 7) & ~(size_t)7;

    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_REL;
    eh.e_machine = EM_X86_64;
    eh.e_shoff = sh_off;
    eh.e_ehsize = sizeof(eh);
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 3;
    eh.e_shstrndx = 2;
    sh[1] = (Elf64_Shdr){
        .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_offset = info_off, .sh_size = info_len};
    sh[2] = (Elf64_Shdr){
        .sh_name = 10, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = sizeof(shstr)};
    put(b, &eh, sizeof(eh));
    put(b, info, info_len);
    put(b, shstr, sizeof(shstr));
    put_zeros(b, sh_off - (b->len - start));
    put(b, sh, sizeof(sh));
}

/* Runs "/usr/bin/PROGRAM ARGS" on in, returning its output (the programs of this machine). */
static void xz_in_process(const buf *in, buf *out, lzma_check check)
{
    size_t pos = 0, cap = in->len + in->len / 2 + 4096;
    out->len = 0;
    put_zeros(out, cap);
    if (lzma_easy_buffer_encode(0, check, NULL, in->p, in->len, out->p, &pos, cap) != LZMA_OK)
        abort();
    out->len = pos;
}

static void filter(const char *cmd, const buf *in, buf *out)
{
    char ip[PATH_MAX + 8], op[PATH_MAX + 8], sh[3 * PATH_MAX];
    int fd;
    struct stat st;

    /* xz is the most used and the slowest to start: done in this process. */
    if (streq(cmd, "/usr/bin/xz -c --check=crc32") || streq(cmd, "/usr/bin/xz -c -1") ||
        streq(cmd, "/usr/bin/xz -c")) {
        xz_in_process(in, out, LZMA_CHECK_CRC32);
        return;
    }
    snprintf(ip, sizeof(ip), "%s/in", tmpdir);
    snprintf(op, sizeof(op), "%s/out", tmpdir);
    fd = open(ip, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, in->p, in->len) != (ssize_t)in->len)
        abort();
    close(fd);
    snprintf(sh, sizeof(sh), "%s <'%s' >'%s'", cmd, ip, op);
    if (system(sh) != 0)
        abort();
    fd = open(op, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        abort();
    out->len = 0;
    put_zeros(out, (size_t)st.st_size);
    if (pread(fd, out->p, (size_t)st.st_size, 0) != st.st_size)
        abort();
    close(fd);
}

static void tar_entry(buf *b, const char *path, const void *data, size_t len)
{
    char h[512] = {0};
    unsigned sum = 0;

    snprintf(h, 100, "%s", path);
    snprintf(h + 100, 8, "0000644");
    snprintf(h + 108, 8, "0000000");
    snprintf(h + 116, 8, "0000000");
    snprintf(h + 124, 12, "%011zo", len);
    snprintf(h + 136, 12, "%011o", 0);
    memset(h + 148, ' ', 8);
    h[156] = '0';
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    for (size_t i = 0; i < 512; i++)
        sum += (unsigned char)h[i];
    snprintf(h + 148, 8, "%06o", sum);
    put(b, h, 512);
    put(b, data, len);
    put_zeros(b, (512 - len % 512) % 512);
}

static void ar_member(buf *b, const char *name, const buf *data)
{
    char h[61];
    snprintf(h, sizeof(h), "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "100644",
             data->len);
    put(b, h, 60);
    put(b, data->p, data->len);
    if (data->len & 1)
        put(b, "\n", 1);
}

/* One tar entry of a case: a module (version, depends), a text file, or padding. */
typedef struct entry {
    const char *path;    /* NULL ends the list */
    const char *version; /* a module: its .modinfo; NULL: text (or zeros) */
    const char *depends;
    size_t zeros; /* a file of that many zero bytes */
    bool xz;      /* compress the module (.ko.xz) */
} entry;

static void make_tar(const entry *e, buf *tar)
{
    for (; e->path; e++) {
        buf f = {0};
        if (e->version) {
            char info[512];
            int n = snprintf(info, sizeof(info), "version=%s%cdepends=%s%cname=x%c", e->version, 0,
                             e->depends ? e->depends : "", 0, 0);
            put_elf(&f, info, (size_t)n);
            if (e->xz) {
                buf z = {0};
                filter("/usr/bin/xz -c --check=crc32", &f, &z);
                free(f.p);
                f = z;
            }
        } else {
            put_zeros(&f, e->zeros);
        }
        tar_entry(tar, e->path, f.p ? f.p : (unsigned char *)"", f.len);
        free(f.p);
    }
    put_zeros(tar, 1024);
}

#define BBR(path, v)                                                                               \
    {                                                                                              \
        "./lib/modules/" REL "/" path, v, NULL, 0, false                                           \
    }
#define BUILTIN                                                                                    \
    {                                                                                              \
        "./lib/modules/" REL "/modules.builtin", NULL, NULL, 0, false                              \
    }
#define BUILTIN_INFO                                                                               \
    {                                                                                              \
        "./lib/modules/" REL "/modules.builtin.modinfo", NULL, NULL, 0, false                      \
    }

typedef struct deb_case {
    const char *name;
    const char *control;  /* control member name; NULL: none */
    const char *data;     /* data member name */
    const char *compress; /* command that compresses data.tar; NULL: plain */
    const char *payload;  /* instead of the tar: these bytes (hostile magic) */
    size_t payload_len;
    const char *extra; /* a member between control and data, NULL: none */
    entry entries[24];
    uint64_t cap; /* 0: KS_DEB_DATA_MAX */
    int expect;
    const char *error; /* substring of the error */
    const char *bbr_version;
    const char *bbr_file;
    unsigned min_passes;
} deb_case;

static const deb_case deb_cases[] = {
    {"plain data.tar",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BUILTIN, BUILTIN_INFO, BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     "kernel/net/ipv4/tcp_bbr.ko",
     1},
    {"gzip",
     "control.tar.gz",
     "data.tar.gz",
     "/usr/bin/gzip -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     NULL,
     1},
    {"bzip2",
     "control.tar.xz",
     "data.tar.bz2",
     "/usr/bin/bzip2 -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     NULL,
     1},
    {"lzma",
     "control.tar.zst",
     "data.tar.lzma",
     "/usr/bin/xz --format=lzma -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     NULL,
     1},
    {"xz",
     "control.tar",
     "data.tar.xz",
     "/usr/bin/xz -c --check=crc32",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     NULL,
     1},
    {"zstd",
     "control.tar",
     "data.tar.zst",
     "/usr/bin/zstd -q -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     NULL,
     1},
    {"a member dpkg skips ('_' first)",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     "_gpgorigin",
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     NULL,
     1},
    /* Data dpkg would never unpack. */
    {"lz4 in data.tar",
     "control.tar",
     "data.tar",
     "/usr/bin/lz4 -q -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EBADMSG,
     "cannot read data.tar",
     NULL,
     NULL,
     0},
    {"xz in data.tar.gz",
     "control.tar",
     "data.tar.gz",
     "/usr/bin/xz -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EPROTONOSUPPORT,
     "not compressed in",
     NULL,
     NULL,
     0},
    {"gzip in data.tar",
     "control.tar",
     "data.tar",
     "/usr/bin/gzip -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EBADMSG,
     "cannot read data.tar",
     NULL,
     NULL,
     0},
    {"uuencoded data.tar",
     "control.tar",
     "data.tar",
     NULL,
     "begin 644 "
     "data.tar\nM+B]L:6(O;6]D=6QE<R\\V+C$N,\"TY+6%M9#8T+VME<FYE;\"]N970O:7!V-\"]T\n`\nend\n",
     0,
     NULL,
     {{NULL}},
     0,
     -EBADMSG,
     "cannot read data.tar",
     NULL,
     NULL,
     0},
    {"lzop magic in data.tar",
     "control.tar",
     "data.tar",
     NULL,
     "\x89LZO\0\r\n\x1a\n\x10\x30",
     11,
     NULL,
     {{NULL}},
     0,
     -EBADMSG,
     "cannot read data.tar",
     NULL,
     NULL,
     0},
    {"lrzip magic in data.tar",
     "control.tar",
     "data.tar",
     NULL,
     "LRZI\0\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
     24,
     NULL,
     {{NULL}},
     0,
     -EBADMSG,
     "cannot read data.tar",
     NULL,
     NULL,
     0},
    {"grzip magic in data.tar.gz",
     "control.tar",
     "data.tar.gz",
     NULL,
     "GRZipII\0\x02\x04:)\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
     24,
     NULL,
     {{NULL}},
     0,
     -EPROTONOSUPPORT,
     "not compressed in",
     NULL,
     NULL,
     0},
    {"lzop magic in data.tar.bz2",
     "control.tar",
     "data.tar.bz2",
     NULL,
     "\x89LZO\0\r\n\x1a\n\x10\x30\0\0\0\0\0",
     16,
     NULL,
     {{NULL}},
     0,
     -EPROTONOSUPPORT,
     "not compressed in",
     NULL,
     NULL,
     0},
    {"data.tar.lz4",
     "control.tar",
     "data.tar.lz4",
     "/usr/bin/lz4 -q -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EBADMSG,
     "dpkg would refuse",
     NULL,
     NULL,
     0},
    {"data.tar.uu",
     "control.tar",
     "data.tar.uu",
     NULL,
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EBADMSG,
     "dpkg would refuse",
     NULL,
     NULL,
     0},
    {"control.tar.bz2",
     "control.tar.bz2",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EBADMSG,
     "dpkg would refuse",
     NULL,
     NULL,
     0},
    {"no control.tar",
     NULL,
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EBADMSG,
     "expects control.tar",
     NULL,
     NULL,
     0},
    {"a stray member before data.tar",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     "evil",
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     -EBADMSG,
     "expects data.tar",
     NULL,
     NULL,
     0},
    /* Duplicates and search order. */
    {"same path twice: the last copy",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3"), BBR("kernel/net/ipv4/tcp_bbr.ko", "1")},
     0,
     0,
     NULL,
     "1",
     "kernel/net/ipv4/tcp_bbr.ko",
     1},
    {"same path twice, compressed: the last copy",
     "control.tar",
     "data.tar.xz",
     "/usr/bin/xz -c --check=crc32",
     NULL,
     0,
     NULL,
     {{"./lib/modules/" REL "/kernel/net/ipv4/tcp_bbr.ko.xz", "3", NULL, 0, true},
      {"./lib/modules/" REL "/kernel/net/ipv4/tcp_bbr.ko.xz", "1", NULL, 0, true}},
     0,
     0,
     NULL,
     "1",
     "kernel/net/ipv4/tcp_bbr.ko.xz",
     1},
    {"updates/ after kernel/",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3"), BBR("updates/tcp_bbr.ko", "1")},
     0,
     0,
     NULL,
     "1",
     "updates/tcp_bbr.ko",
     1},
    {"updates/ before kernel/",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BBR("updates/tcp_bbr.ko", "1"), BBR("kernel/net/ipv4/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "1",
     "updates/tcp_bbr.ko",
     1},
    {"two built-in paths: byte order, not tar order",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BBR("kernel/z/tcp_bbr.ko", "1"), BBR("kernel/a/tcp_bbr.ko", "3")},
     0,
     0,
     NULL,
     "3",
     "kernel/a/tcp_bbr.ko",
     1},
    /* The whole archive before a verdict. */
    {"a late ../ entry",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BUILTIN,
      BUILTIN_INFO,
      BBR("kernel/net/ipv4/tcp_bbr.ko", "3"),
      {"./lib/modules/" REL "/../../../etc/evil.ko", "3", NULL, 0, false}},
     0,
     -EBADMSG,
     "unsafe path",
     NULL,
     NULL,
     0},
    {"a late absolute path",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {BUILTIN,
      BUILTIN_INFO,
      BBR("kernel/net/ipv4/tcp_bbr.ko", "3"),
      {"/etc/evil", NULL, NULL, 4, false}},
     0,
     -EBADMSG,
     "unsafe path",
     NULL,
     NULL,
     0},
    {"a late second kernel",
     "control.tar",
     "data.tar.xz",
     "/usr/bin/xz -c",
     NULL,
     0,
     NULL,
     {BUILTIN,
      BUILTIN_INFO,
      BBR("kernel/net/ipv4/tcp_bbr.ko", "3"),
      {"./lib/modules/6.6.6-evil/kernel/x.ko", "1", NULL, 0, false}},
     0,
     -ENOTUNIQ,
     "more than one kernel",
     NULL,
     NULL,
     0},
    /* Bombs: 8 MiB of zeros against a 4 MiB cap, in every compression. */
    {"xz bomb",
     "control.tar",
     "data.tar.xz",
     "/usr/bin/xz -c -1",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3"), {"./zeros", NULL, NULL, 8u << 20, false}},
     4u << 20,
     -EFBIG,
     "more than 4 MiB",
     NULL,
     NULL,
     0},
    {"zstd bomb",
     "control.tar",
     "data.tar.zst",
     "/usr/bin/zstd -q -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3"), {"./zeros", NULL, NULL, 8u << 20, false}},
     4u << 20,
     -EFBIG,
     "more than 4 MiB",
     NULL,
     NULL,
     0},
    {"gzip bomb",
     "control.tar",
     "data.tar.gz",
     "/usr/bin/gzip -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3"), {"./zeros", NULL, NULL, 8u << 20, false}},
     4u << 20,
     -EFBIG,
     "more than 4 MiB",
     NULL,
     NULL,
     0},
    {"bzip2 bomb",
     "control.tar",
     "data.tar.bz2",
     "/usr/bin/bzip2 -c",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3"), {"./zeros", NULL, NULL, 8u << 20, false}},
     4u << 20,
     -EFBIG,
     "more than 4 MiB",
     NULL,
     NULL,
     0},
    {"under the cap",
     "control.tar",
     "data.tar.xz",
     "/usr/bin/xz -c -1",
     NULL,
     0,
     NULL,
     {BBR("kernel/net/ipv4/tcp_bbr.ko", "3"), {"./zeros", NULL, NULL, 2u << 20, false}},
     4u << 20,
     0,
     NULL,
     "3",
     NULL,
     1},
    /* Dependency chains laid out backwards: each level needs one more pass. */
    {"8-deep chain, backwards",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {{"./lib/modules/" REL "/kernel/c8.ko.xz", "1", "", 0, true},
      {"./lib/modules/" REL "/kernel/c7.ko.xz", "1", "c8", 0, true},
      {"./lib/modules/" REL "/kernel/c6.ko.xz", "1", "c7", 0, true},
      {"./lib/modules/" REL "/kernel/c5.ko.xz", "1", "c6", 0, true},
      {"./lib/modules/" REL "/kernel/c4.ko.xz", "1", "c5", 0, true},
      {"./lib/modules/" REL "/kernel/c3.ko.xz", "1", "c4", 0, true},
      {"./lib/modules/" REL "/kernel/c2.ko.xz", "1", "c3", 0, true},
      {"./lib/modules/" REL "/kernel/c1.ko.xz", "1", "c2", 0, true},
      {"./lib/modules/" REL "/kernel/net/ipv4/tcp_bbr.ko.xz", "3", "c1", 0, true}},
     0,
     0,
     NULL,
     "3",
     "kernel/net/ipv4/tcp_bbr.ko.xz",
     9},
    {"20-deep chain, backwards",
     "control.tar",
     "data.tar",
     NULL,
     NULL,
     0,
     NULL,
     {{"./lib/modules/" REL "/kernel/c20.ko.xz", "1", "", 0, true},
      {"./lib/modules/" REL "/kernel/c19.ko.xz", "1", "c20", 0, true},
      {"./lib/modules/" REL "/kernel/c18.ko.xz", "1", "c19", 0, true},
      {"./lib/modules/" REL "/kernel/c17.ko.xz", "1", "c18", 0, true},
      {"./lib/modules/" REL "/kernel/c16.ko.xz", "1", "c17", 0, true},
      {"./lib/modules/" REL "/kernel/c15.ko.xz", "1", "c16", 0, true},
      {"./lib/modules/" REL "/kernel/c14.ko.xz", "1", "c15", 0, true},
      {"./lib/modules/" REL "/kernel/c13.ko.xz", "1", "c14", 0, true},
      {"./lib/modules/" REL "/kernel/c12.ko.xz", "1", "c13", 0, true},
      {"./lib/modules/" REL "/kernel/c11.ko.xz", "1", "c12", 0, true},
      {"./lib/modules/" REL "/kernel/c10.ko.xz", "1", "c11", 0, true},
      {"./lib/modules/" REL "/kernel/c9.ko.xz", "1", "c10", 0, true},
      {"./lib/modules/" REL "/kernel/c8.ko.xz", "1", "c9", 0, true},
      {"./lib/modules/" REL "/kernel/c7.ko.xz", "1", "c8", 0, true},
      {"./lib/modules/" REL "/kernel/c6.ko.xz", "1", "c7", 0, true},
      {"./lib/modules/" REL "/kernel/c5.ko.xz", "1", "c6", 0, true},
      {"./lib/modules/" REL "/kernel/c4.ko.xz", "1", "c5", 0, true},
      {"./lib/modules/" REL "/kernel/c3.ko.xz", "1", "c4", 0, true},
      {"./lib/modules/" REL "/kernel/c2.ko.xz", "1", "c3", 0, true},
      {"./lib/modules/" REL "/kernel/c1.ko.xz", "1", "c2", 0, true},
      {"./lib/modules/" REL "/kernel/net/ipv4/tcp_bbr.ko.xz", "3", "c1", 0, true}},
     0,
     -ELOOP,
     "dependency chain too deep",
     NULL,
     NULL,
     0},
};

static bool marked(void)
{
    return access(marker, F_OK) == 0;
}

static void test_deb(const deb_case *c)
{
    char *wanted[] = {"tcp_bbr", NULL};
    buf tar = {0}, data = {0}, deb = {0}, control = {0}, bin = {0};
    _cleanup_free_ char *error = NULL;
    ks_modset *set = NULL;
    ks_deb_stats stats = {0};
    int fd, r;

    if (c->payload) {
        put(&data, c->payload, c->payload_len ? c->payload_len : strlen(c->payload));
    } else {
        make_tar(c->entries, &tar);
        if (c->compress)
            filter(c->compress, &tar, &data);
        else
            put(&data, tar.p, tar.len);
    }
    put_zeros(&control, 1024);
    put(&bin, "2.0\n", 4);
    put(&deb, "!<arch>\n", 8);
    ar_member(&deb, "debian-binary", &bin);
    if (c->control)
        ar_member(&deb, c->control, &control);
    if (c->extra)
        ar_member(&deb, c->extra, &bin);
    ar_member(&deb, c->data, &data);

    fd = memfd_create("deb", MFD_CLOEXEC);
    CHECK(fd >= 0 && write(fd, deb.p, deb.len) == (ssize_t)deb.len);
    r = ks_deb_read_modset_fd_max(fd, wanted, c->cap ? c->cap : KS_DEB_DATA_MAX, &set, &stats,
                                  &error);
    CHECK_MSG(r == c->expect, "%s: %d (%s), expected %d", c->name, r, strempty(error), c->expect);
    if (c->error)
        CHECK_MSG(error && strstr(error, c->error), "%s: error '%s' lacks '%s'", c->name,
                  strempty(error), c->error);
    CHECK_MSG(!marked(), "%s: an external program was started", c->name);
    if (r == 0) {
        ks_module_report m = {0};
        CHECK_STREQ(ks_modset_release(set), REL);
        CHECK(ks_modset_judge(set, "tcp_bbr", &m) == 0);
        CHECK_MSG(ks_module_report_ok(&m), "%s: tcp_bbr not ok", c->name);
        CHECK_MSG(streq_ptr(m.version, c->bbr_version), "%s: version %s, expected %s", c->name,
                  strempty(m.version), c->bbr_version);
        if (c->bbr_file)
            CHECK_MSG(streq_ptr(m.file, c->bbr_file), "%s: file %s", c->name, strempty(m.file));
        CHECK_MSG(stats.passes >= c->min_passes, "%s: %u passes", c->name, stats.passes);
        ks_module_report_done(&m);
        ks_modset_free(set);
    }
    close(fd);
    free(tar.p);
    free(data.p);
    free(deb.p);
    free(control.p);
    free(bin.p);
}

/* The initramfs reader: which compressed segments it opens, and in which process. */
typedef struct initrd_case {
    const char *name;
    const char *compress; /* NULL: the payload bytes follow the plain segment */
    const char *payload;
    size_t payload_len;
    size_t zeros; /* a file of zeros inside the compressed cpio */
    uint64_t cap;
    int expect;
    const char *error;
    bool has_ext4;
} initrd_case;

static const initrd_case initrd_cases[] = {
    {"gzip", "/usr/bin/gzip -c", NULL, 0, 0, 0, 0, NULL, true},
    {"zstd", "/usr/bin/zstd -q -c", NULL, 0, 0, 0, 0, NULL, true},
    {"xz", "/usr/bin/xz -c --check=crc32", NULL, 0, 0, 0, 0, NULL, true},
    {"lzma", "/usr/bin/xz --format=lzma -c", NULL, 0, 0, 0, 0, NULL, true},
    {"bzip2", "/usr/bin/bzip2 -c", NULL, 0, 0, 0, 0, NULL, true},
    {"lz4 (legacy, as the kernel wants)", "/usr/bin/lz4 -l -q -c", NULL, 0, 0, 0, 0, NULL, true},
    {"lzop magic", NULL, "\x89LZO\0\r\n\x1a\n\x10\x30\0\0\0\0\0", 16, 0, 0, -EPROTONOSUPPORT,
     "not compressed in", false},
    {"lrzip magic", NULL, "LRZI\0\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24, 0, 0,
     -EPROTONOSUPPORT, "not compressed in", false},
    {"grzip magic", NULL, "GRZipII\0\x02\x04:)\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24, 0, 0,
     -EPROTONOSUPPORT, "not compressed in", false},
    {"uuencoded", NULL, "begin 644 x\nM(\n`\nend\n", 0, 0, 0, -EPROTONOSUPPORT, "not compressed in",
     false},
    {"gzip bomb", "/usr/bin/gzip -c", NULL, 0, 8u << 20, 4u << 20, -EFBIG, "more than 4 MiB",
     false},
    {"zstd bomb", "/usr/bin/zstd -q -c", NULL, 0, 8u << 20, 4u << 20, -EFBIG, "more than 4 MiB",
     false},
    {"under the cap", "/usr/bin/xz -c", NULL, 0, 1u << 20, 4u << 20, 0, NULL, true},
};

static void newc(buf *b, const char *name, size_t filesize, const void *data)
{
    char h[128];
    size_t nlen = strlen(name) + 1;
    snprintf(h, sizeof(h), "070701%08x%08x%08x%08x%08x%08x%08zx%08x%08x%08x%08x%08zx%08x", 1,
             0100644, 0, 0, 1, 0, filesize, 0, 0, 0, 0, nlen, 0);
    put(b, h, 110);
    put(b, name, nlen);
    put_zeros(b, (4 - (110 + nlen) % 4) % 4);
    if (data)
        put(b, data, filesize);
    else
        put_zeros(b, filesize);
    put_zeros(b, (4 - filesize % 4) % 4);
}

static void test_initrd(const initrd_case *c)
{
    buf img = {0}, cpio = {0}, z = {0};
    _cleanup_strv_free_ char **names = NULL;
    _cleanup_free_ char *error = NULL;
    int fd, r;

    newc(&img, "kernel/x86/microcode/GenuineIntel.bin", 4, "abcd");
    newc(&img, "TRAILER!!!", 0, NULL);
    if (c->compress) {
        newc(&cpio, "usr/lib/modules/" REL "/kernel/fs/ext4/ext4.ko", 4, "\177ELF");
        if (c->zeros)
            newc(&cpio, "zeros", c->zeros, NULL);
        newc(&cpio, "TRAILER!!!", 0, NULL);
        filter(c->compress, &cpio, &z);
        put(&img, z.p, z.len);
    } else {
        put(&img, c->payload, c->payload_len ? c->payload_len : strlen(c->payload));
    }
    fd = memfd_create("initrd", MFD_CLOEXEC);
    CHECK(fd >= 0 && write(fd, img.p, img.len) == (ssize_t)img.len);
    r = ks_initrd_list_modules_fd_max(fd, c->cap ? c->cap : KS_INITRD_DATA_MAX, &names, &error);
    CHECK_MSG(r == c->expect, "initrd %s: %d (%s), expected %d", c->name, r, strempty(error),
              c->expect);
    if (c->error)
        CHECK_MSG(error && strstr(error, c->error), "initrd %s: error '%s' lacks '%s'", c->name,
                  strempty(error), c->error);
    if (r == 0)
        CHECK_MSG(ks_strv_contains(names, "ext4") == c->has_ext4, "initrd %s: ext4", c->name);
    CHECK_MSG(!marked(), "initrd %s: an external program was started", c->name);
    close(fd);
    free(img.p);
    free(cpio.p);
    free(z.p);
}

/*
 * Whether an initrd decompresses to its end (ks_initrd_unpacks_fd, what apply reads back
 * before arming): the image above with a 256 KiB file of random bytes in its compressed part
 * (more than libarchive reads ahead when it opens the stream), then its tail damaged. why: a
 * piece of the error text; NULL: it decompresses.
 */
typedef enum damage {
    INTACT,
    CUT_TAIL, /* the last `arg` bytes of the file gone */
    CUT_HALF, /* the compressed part cut in the middle */
    FLIP,     /* one byte of the compressed part, `arg` bytes before the end, inverted */
} damage;

static const struct {
    const char *name, *compress;
    damage how;
    size_t arg;
    const char *why;
    bool pad; /* 1 MiB of zeros after the cpio trailer, inside the compressed stream (the kernel
               * skips zero padding): the archive ends long before the stream does */
} unpack_cases[] = {
    {"zstd intact", "/usr/bin/zstd -q -c", INTACT, 0, NULL},
    {"gzip intact", "/usr/bin/gzip -c", INTACT, 0, NULL},
    {"xz intact", "/usr/bin/xz -c --check=crc32", INTACT, 0, NULL},
    {"plain cpio intact", NULL, INTACT, 0, NULL},
    {"zstd without its checksum", "/usr/bin/zstd -q -c", CUT_TAIL, 4, "Truncated zstd input"},
    {"zstd, checksum wrong", "/usr/bin/zstd -q -c", FLIP, 2, "checksum"},
    {"zstd cut in half", "/usr/bin/zstd -q -c", CUT_HALF, 0, "Truncated zstd input"},
    {"gzip cut in half", "/usr/bin/gzip -c", CUT_HALF, 0, "gzip data is corrupt"},
    {"gzip without its trailer", "/usr/bin/gzip -c", CUT_TAIL, 8, "gzip data is corrupt"},
    {"xz cut short", "/usr/bin/xz -c --check=crc32", CUT_TAIL, 12, "xz data is corrupt"},
    {"xz, check wrong", "/usr/bin/xz -c --check=crc32", FLIP, 14, "xz data is corrupt"},
    {"xz cut in half", "/usr/bin/xz -c --check=crc32", CUT_HALF, 0, "xz data is corrupt"},
    {"plain cpio cut in a member", NULL, CUT_HALF, 0, "corrupt uncompressed cpio segment"},
    {"lzop (not decoded in-process)", "lzop", INTACT, 0, "not compressed in an allowed format"},
    /* The checks at the end of the stream, past the archive: found only by reading on. */
    {"zstd padded intact", "/usr/bin/zstd -q -c", INTACT, 0, NULL, true},
    {"zstd padded, checksum wrong", "/usr/bin/zstd -q -c", FLIP, 2, "checksum", true},
    {"zstd padded, cut short", "/usr/bin/zstd -q -c", CUT_TAIL, 4, "Truncated zstd input", true},
    {"xz padded, cut short", "/usr/bin/xz -c --check=crc32", CUT_TAIL, 30, "xz data is corrupt",
     true},
};

static void test_initrd_unpacks(size_t i)
{
    static uint8_t noise[256 * 1024];
    buf img = {0}, cpio = {0}, z = {0};
    _cleanup_free_ char *error = NULL;
    uint32_t x = 2463534242u;
    size_t plain;
    int fd, r;

    for (size_t k = 0; k < sizeof(noise); k++) { /* xorshift32: incompressible, reproducible */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[k] = (uint8_t)x;
    }
    newc(&img, "kernel/x86/microcode/GenuineIntel.bin", 4, "abcd");
    newc(&img, "TRAILER!!!", 0, NULL);
    plain = img.len;
    newc(&cpio, "usr/lib/modules/" REL "/kernel/fs/ext4/ext4.ko", 4, "\177ELF");
    newc(&cpio, "usr/lib/noise", sizeof(noise), noise);
    newc(&cpio, "TRAILER!!!", 0, NULL);
    if (unpack_cases[i].pad)
        put_zeros(&cpio, 1u << 20);
    if (!unpack_cases[i].compress) {
        put(&img, cpio.p, cpio.len);
    } else if (streq(unpack_cases[i].compress, "lzop")) {
        put(&img, "\x89LZO\0\r\n\x1a\n\x10\x30\0\0\0\0\0", 16);
    } else {
        filter(unpack_cases[i].compress, &cpio, &z);
        put(&img, z.p, z.len);
    }
    if (unpack_cases[i].how == CUT_TAIL)
        img.len -= unpack_cases[i].arg;
    else if (unpack_cases[i].how == CUT_HALF)
        img.len = plain + (img.len - plain) / 2;
    else if (unpack_cases[i].how == FLIP)
        img.p[img.len - unpack_cases[i].arg] ^= 0xff;
    fd = memfd_create("initrd", MFD_CLOEXEC);
    CHECK(fd >= 0 && write(fd, img.p, img.len) == (ssize_t)img.len);
    r = ks_initrd_unpacks_fd(fd, KS_INITRD_DATA_MAX, &error);
    if (!unpack_cases[i].why)
        CHECK_MSG(r == 0 && !error, "unpacks %s: %d (%s)", unpack_cases[i].name, r,
                  strempty(error));
    else
        CHECK_MSG(r < 0 && error && strstr(error, unpack_cases[i].why),
                  "unpacks %s: %d, error '%s' lacks '%s'", unpack_cases[i].name, r, strempty(error),
                  unpack_cases[i].why);
    if (unpack_cases[i].pad && unpack_cases[i].why) {
        /* the archive reader alone stops at the trailer and misses it */
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *list_error = NULL;
        r = ks_initrd_list_modules_fd_max(fd, KS_INITRD_DATA_MAX, &names, &list_error);
        CHECK_MSG(r == 0, "list %s: %d (%s): the damage sits past the archive",
                  unpack_cases[i].name, r, strempty(list_error));
    }
    CHECK_MSG(!marked(), "unpacks %s: an external program was started", unpack_cases[i].name);
    close(fd);
    free(img.p);
    free(cpio.p);
    free(z.p);
}

int main(void)
{
    static const char *const fakes[] = {"lzop",     "lrzip", "grzip", "lz4",  "zstd",
                                        "gzip",     "bzip2", "xz",    "lzma", "lzip",
                                        "uudecode", "lzcat", "unzstd"};
    char bin[PATH_MAX], path[2 * PATH_MAX];

    if (!mkdtemp(tmpdir))
        return 1;
    snprintf(marker, sizeof(marker), "%s/started", tmpdir);
    snprintf(bin, sizeof(bin), "%s/bin", tmpdir);
    if (mkdir(bin, 0755) < 0)
        return 1;
    /* Fake decompressors first on PATH: any of them started leaves the marker. */
    for (size_t i = 0; i < ARRAY_SIZE(fakes); i++) {
        char p[PATH_MAX + 32];
        FILE *f;
        snprintf(p, sizeof(p), "%s/%s", bin, fakes[i]);
        f = fopen(p, "we");
        if (!f)
            return 1;
        fprintf(f, "#!/bin/sh\necho %s >>'%s'\nexit 1\n", fakes[i], marker);
        fclose(f);
        chmod(p, 0755);
    }
    snprintf(path, sizeof(path), "%s:%s", bin, strempty(getenv("PATH")));
    setenv("PATH", path, 1);

    for (size_t i = 0; i < ARRAY_SIZE(deb_cases); i++)
        test_deb(&deb_cases[i]);
    for (size_t i = 0; i < ARRAY_SIZE(initrd_cases); i++)
        test_initrd(&initrd_cases[i]);
    for (size_t i = 0; i < ARRAY_SIZE(unpack_cases); i++)
        test_initrd_unpacks(i);

    {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            return 1;
    }
    TEST_DONE();
}
