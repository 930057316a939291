/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "lib/host/bootfiles.h"
#include "test.h"

#define REL "6.1.0-57-amd64"
/* The real Debian 12 kernels whose first KiB is in test/fixtures/boot (SOURCES.md). */
#define GENERIC_SIZE 8247232u /* its header says 8245760 */
#define CLOUD_SIZE 14190528u  /* its header says 14189056 */

static char *fixture(const char *name, size_t *ret_len)
{
    _cleanup_free_ char *p = ks_asprintf("%s/boot/%s", ks_fixture_dir(), name);
    char *buf = p ? ks_test_slurp(p, ret_len) : NULL;
    if (!buf) {
        fprintf(stderr, "cannot read the fixture '%s'\n", p ? p : name);
        exit(1);
    }
    return buf;
}

/* How a case changes the head it starts from. */
typedef enum head_edit {
    EDIT_NONE,
    EDIT_NO_MAGIC,    /* "HdrS" -> "XXXX" */
    EDIT_OLD_PROTO,   /* boot protocol 2.01 */
    EDIT_ZEROS,       /* every byte 0 */
    EDIT_SHORT_0x100, /* only the first 0x100 bytes */
} head_edit;

static const struct {
    const char *name;
    const char *head; /* fixture name, or NULL: literal */
    const char *literal;
    head_edit edit;
    uint64_t size;
    bool ok;
    const char *why; /* a part of the reason, for the failures */
} kernel_cases[] = {
    {"real generic kernel", "vmlinuz-6.1.0-57-amd64.head", NULL, EDIT_NONE, GENERIC_SIZE, true,
     NULL},
    {"real cloud kernel (signed: longer than its header)", "vmlinuz-6.1.0-57-cloud-amd64.head",
     NULL, EDIT_NONE, CLOUD_SIZE, true, NULL},
    {"exactly as long as the header says", "vmlinuz-6.1.0-57-amd64.head", NULL, EDIT_NONE, 8245760,
     true, NULL},
    {"one byte short", "vmlinuz-6.1.0-57-amd64.head", NULL, EDIT_NONE, 8245759, false,
     "truncated: 8245759 bytes, its header says at least 8245760"},
    {"cut after 1 MiB", "vmlinuz-6.1.0-57-cloud-amd64.head", NULL, EDIT_NONE, 1 << 20, false,
     "truncated"},
    {"empty", NULL, "", EDIT_NONE, 0, false, "empty (0 bytes)"},
    {"zeros where the header was", "vmlinuz-6.1.0-57-amd64.head", NULL, EDIT_ZEROS, GENERIC_SIZE,
     false, "first bytes are zeros"},
    {"wrong magic", "vmlinuz-6.1.0-57-amd64.head", NULL, EDIT_NO_MAGIC, GENERIC_SIZE, false,
     "no bzImage header (\"HdrS\" at 0x202)"},
    {"text, not a kernel", NULL,
     "synthetic kernel image 6.1.0-57-amd64\n", /* what an old fake wrote */
     EDIT_NONE, 4096, false, "not a kernel image"},
    {"boot protocol 2.01", "vmlinuz-6.1.0-57-amd64.head", NULL, EDIT_OLD_PROTO, GENERIC_SIZE, false,
     "older than 2.04"},
    {"header cut short", "vmlinuz-6.1.0-57-amd64.head", NULL, EDIT_SHORT_0x100, 0x100, false,
     "too short for a bzImage header"},
};

static void test_kernel(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(kernel_cases); i++) {
        _cleanup_free_ char *buf = NULL, *why = NULL;
        size_t len = 0;
        int r;

        if (kernel_cases[i].head)
            buf = fixture(kernel_cases[i].head, &len);
        else {
            /* The literal repeated over the first KiB (what kswap reads), as far as the file goes.
             */
            len = kernel_cases[i].size < 1024 ? (size_t)kernel_cases[i].size : 1024;
            buf = calloc(1, 1025);
            if (!buf)
                abort();
            for (size_t j = 0, n = strlen(kernel_cases[i].literal); n && j < len; j++)
                buf[j] = kernel_cases[i].literal[j % n];
        }
        switch (kernel_cases[i].edit) {
        case EDIT_NO_MAGIC:
            memcpy(buf + 0x202, "XXXX", 4);
            break;
        case EDIT_OLD_PROTO:
            buf[0x206] = 0x01;
            buf[0x207] = 0x02;
            break;
        case EDIT_ZEROS:
            memset(buf, 0, len);
            break;
        case EDIT_SHORT_0x100:
            len = 0x100;
            break;
        case EDIT_NONE:
            break;
        }
        r = ks_bootfile_kernel_check((const uint8_t *)buf, len, kernel_cases[i].size, &why);
        CHECK_MSG((r == 0) == kernel_cases[i].ok, "%s: %d (%s)", kernel_cases[i].name, r,
                  strempty(why));
        if (!kernel_cases[i].ok) {
            CHECK_INTEQ(r, -EBADMSG);
            CHECK_MSG(why && strstr(why, kernel_cases[i].why), "%s: '%s' lacks '%s'",
                      kernel_cases[i].name, strempty(why), kernel_cases[i].why);
        }
    }
}

static const struct {
    const char *name;
    const char *head; /* fixture, or NULL: literal of literal_len bytes */
    const char *literal;
    size_t literal_len;
    bool ok;
    const char *why;
} initrd_cases[] = {
    {"newc cpio (GNU cpio -H newc)", "initrd-newc.head", NULL, 0, true, NULL},
    {"zstd (initramfs-tools' default)", "initrd-zstd.head", NULL, 0, true, NULL},
    {"gzip", "initrd-gzip.head", NULL, 0, true, NULL},
    {"xz --check=crc32", "initrd-xz.head", NULL, 0, true, NULL},
    {"newc with crc", NULL, "07070200000001", 14, true, NULL},
    {"lz4 legacy", NULL, "\x02\x21\x4c\x18\x00\x00", 6, true, NULL},
    {"empty", NULL, "", 0, false, "empty (0 bytes)"},
    {"zeros", NULL, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16, false, "zeros"},
    {"the old fake's text", NULL, "fake initrd 6.1.0-57-amd64\n", 27, false,
     "neither a cpio archive nor a compression"},
    {"old binary cpio (odc): the kernel refuses it", NULL, "070707000000", 12, false, "neither"},
    {"an ELF file", NULL,
     "\x7f"
     "ELF\x02\x01\x01",
     7, false, "neither"},
};

static void test_initrd(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(initrd_cases); i++) {
        _cleanup_free_ char *buf = NULL, *why = NULL;
        const char *p;
        size_t len;
        int r;

        if (initrd_cases[i].head) {
            buf = fixture(initrd_cases[i].head, &len);
            p = buf;
        } else {
            p = initrd_cases[i].literal;
            len = initrd_cases[i].literal_len;
        }
        r = ks_bootfile_initrd_check((const uint8_t *)p, len, len, &why);
        CHECK_MSG((r == 0) == initrd_cases[i].ok, "%s: %d (%s)", initrd_cases[i].name, r,
                  strempty(why));
        /* the format is named exactly when the magic passes (an empty file has none) */
        CHECK_MSG(!ks_bootfile_initrd_format((const uint8_t *)p, len) == (r < 0), "%s: format '%s'",
                  initrd_cases[i].name,
                  strempty(ks_bootfile_initrd_format((const uint8_t *)p, len)));
        if (!initrd_cases[i].ok)
            CHECK_MSG(r == -EBADMSG && why && strstr(why, initrd_cases[i].why), "%s: '%s'",
                      initrd_cases[i].name, strempty(why));
    }
}

static void test_modindex(void)
{
    static const uint8_t good[] = {0xb0, 0x07, 0xf4, 0x57, 0x00, 0x02, 0x00, 0x01};
    static const uint8_t text[] = "kernel/fs/ext4.ko:";
    _cleanup_free_ char *why = NULL;

    CHECK_INTEQ(ks_bootfile_modindex_check(good, sizeof(good), sizeof(good), NULL), 0);
    CHECK_INTEQ(ks_bootfile_modindex_check(text, sizeof(text), sizeof(text), &why), -EBADMSG);
    CHECK(why && strstr(why, "0xB007F457"));
    CHECK_INTEQ(ks_bootfile_modindex_check(good, 0, 0, NULL), -EBADMSG);
}

#define OLD "6.1.0-56-amd64"
#define UUID "4f3a2c1e-0d9b-4e8a-9c7f-1b2d3e4f5a6b"
#define WAYBACK_ENTRY                                                                              \
    "menuentry 'kswap way back: " OLD "' --class gnu-linux --class os $menuentry_id_option "       \
    "'kswap-way-back' {\n\tlinux\t/boot/vmlinuz-" OLD " root=/dev/vda1 ro\n"                       \
    "\tinitrd\t/boot/initrd.img-" OLD "\n}\n"
/* OLD's own entry as Debian's 10_linux writes it: what saved_entry names. */
#define OLD_ENTRY                                                                                  \
    "submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option "                        \
    "'gnulinux-advanced-" UUID "' {\n\tmenuentry 'Debian GNU/Linux, with Linux " OLD "' "          \
    "$menuentry_id_option 'gnulinux-" OLD "-advanced-" UUID "' {\n\t\tlinux\t/boot/vmlinuz-" OLD   \
    " root=/dev/vda1 ro\n\t\tinitrd\t/boot/initrd.img-" OLD "\n\t}\n}\n"
#define TRIAL_ENTRY                                                                                \
    "menuentry 'kswap trial: " REL "' --class gnu-linux --class os $menuentry_id_option "          \
    "'kswap-trial' {\n\tlinux\t/boot/vmlinuz-" REL " root=/dev/vda1 ro kswap.trial=1\n"            \
    "\tinitrd\t/boot/initrd.img-" REL "\n}\n"

static const struct {
    const char *name;
    const char *prefix; /* before the fixture's text */
    const char *suffix; /* after it */
    bool fixture;       /* test/fixtures/grub/ubuntu-24.04-two-kernels.cfg in between */
    int ret;
    const char *why;
} cfg_cases[] = {
    {"real grub.cfg with the trial entry after its header", NULL, TRIAL_ENTRY, true, 0, NULL},
    {"real grub.cfg without it", NULL, NULL, true, -ENOENT, "no top-level entry 'kswap-trial'"},
    {"the entry loads another kernel", NULL,
     "menuentry 'kswap trial' --id kswap-trial {\n\tlinux /boot/vmlinuz-6.8.0-48-generic ro\n}\n",
     true, -ENOENT, "loads '/boot/vmlinuz-6.8.0-48-generic', not vmlinuz-" REL},
    {"the entry only inside a submenu", NULL, "submenu 'x' --id x {\n" TRIAL_ENTRY "}\n", true,
     -ENOENT, "no top-level entry"},
    {"cut off inside the trial entry", NULL,
     "menuentry 'kswap trial' --id kswap-trial {\n\tlinux /boot/vmlinuz-" REL "\n", true, -EBADMSG,
     "does not parse"},
    {"NUL bytes at the end (a torn write)", NULL, TRIAL_ENTRY "\0\0\0\0", true, -EBADMSG,
     "NUL bytes"},
    {"empty", NULL, NULL, false, -EBADMSG, "empty"},
};

static void test_grub_cfg(void)
{
    _cleanup_free_ char *path =
        ks_asprintf("%s/grub/ubuntu-24.04-two-kernels.cfg", ks_fixture_dir());
    size_t flen = 0;
    _cleanup_free_ char *real = ks_test_slurp(path, &flen);

    CHECK(real != NULL);
    if (!real)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(cfg_cases); i++) {
        _cleanup_free_ char *text = NULL, *why = NULL;
        const char *pre = cfg_cases[i].prefix ? cfg_cases[i].prefix : "";
        const char *suf = cfg_cases[i].suffix ? cfg_cases[i].suffix : "";
        /* The NUL case: four NULs after the entry, counted by hand. */
        size_t suf_len = strlen(suf) + (strstr(cfg_cases[i].name, "NUL") ? 4 : 0);
        size_t len = strlen(pre) + (cfg_cases[i].fixture ? flen : 0) + suf_len;
        int r;

        text = calloc(1, len + 1);
        if (!text)
            abort();
        memcpy(text, pre, strlen(pre));
        if (cfg_cases[i].fixture)
            memcpy(text + strlen(pre), real, flen);
        memcpy(text + len - suf_len, suf, suf_len);
        r = ks_bootfile_grub_cfg_check(text, len, "kswap-trial", REL, &why);
        CHECK_MSG(r == cfg_cases[i].ret, "%s: %d, want %d (%s)", cfg_cases[i].name, r,
                  cfg_cases[i].ret, strempty(why));
        if (cfg_cases[i].why)
            CHECK_MSG(why && strstr(why, cfg_cases[i].why), "%s: '%s' lacks '%s'",
                      cfg_cases[i].name, strempty(why), cfg_cases[i].why);
    }
}

/* Where GRUB's paths are inside the root. */
static void test_root_path(void)
{
    static const struct {
        const char *grub, *want; /* want NULL: -EINVAL */
    } cases[] = {
        {"/boot/vmlinuz-" REL, "boot/vmlinuz-" REL},
        {"/vmlinuz-" REL, "boot/vmlinuz-" REL}, /* /boot a partition of its own */
        {"(hd0,msdos1)/boot/initrd.img-" REL, "boot/initrd.img-" REL},
        {"($root)/initrd.img-" REL, "boot/initrd.img-" REL},
        {"/@/boot/vmlinuz-" REL, "boot/vmlinuz-" REL}, /* a btrfs subvolume's path */
        {"initrd.img-" REL, "boot/initrd.img-" REL},
        {"/boot/intel-ucode.img", "boot/intel-ucode.img"},
        {"$prefix/initrd.img", NULL},
        {"/boot/${rel}", NULL},
        {"/boot/", NULL},
        {"/boot/..", NULL},
        {"(hd0,1)", NULL},
        {"", NULL},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *got = NULL;
        int r = ks_bootfile_root_path(cases[i].grub, &got);
        CHECK_MSG(cases[i].want ? r == 0 && streq(got, cases[i].want) : r == -EINVAL,
                  "'%s': %d '%s', want '%s'", cases[i].grub, r, strempty(got),
                  strempty(cases[i].want));
    }
}

/* The files of an entry as written: the first linux line and the initrd line's files. */
static void test_entry_loads(void)
{
    static const struct {
        const char *body;
        const char *kernel;  /* NULL: none kswap can place */
        const char *initrds; /* joined by '|'; NULL: none */
    } cases[] = {
        {"\tlinux\t/boot/vmlinuz-" REL " root=/dev/vda1 ro\n\tinitrd\t/boot/initrd.img-" REL "\n",
         "boot/vmlinuz-" REL, "boot/initrd.img-" REL},
        {"\tlinux /vmlinuz-" REL "\n\tinitrd /intel-ucode.img /amd-ucode.img /initrd.img-" REL "\n",
         "boot/vmlinuz-" REL, "boot/intel-ucode.img|boot/amd-ucode.img|boot/initrd.img-" REL},
        {"\tlinux /vmlinuz-" REL "\n", "boot/vmlinuz-" REL, NULL}, /* an initrd-less boot */
        {"\tlinux /vmlinuz-" REL "\n\tinitrd --nounzip /x.img /x.img\n", "boot/vmlinuz-" REL,
         "boot/x.img"},
        {"\tlinux $kernel\n\tinitrd $prefix/i /boot/i2\n", NULL, "boot/i2"},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *text = ks_asprintf("menuentry 'e' --id e {\n%s}\n", cases[i].body);
        _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;
        _cleanup_(ks_boot_loads_done) ks_boot_loads l = {0};
        _cleanup_free_ char *joined = NULL;
        ks_grub_error err = {0};

        CHECK(text && ks_grub_cfg_parse(text, strlen(text), &cfg, &err) == 0 &&
              cfg->n_entries == 1);
        if (!cfg || cfg->n_entries != 1)
            continue;
        CHECK(ks_boot_loads_of_entry(&cfg->entries[0], &l) == 0);
        joined = l.initrds ? ks_strv_join(l.initrds, "|") : NULL;
        CHECK_MSG(streq_ptr(l.kernel, cases[i].kernel) && streq_ptr(joined, cases[i].initrds),
                  "case %zu: kernel '%s' initrds '%s', want '%s' '%s'", i, strempty(l.kernel),
                  strempty(joined), strempty(cases[i].kernel), strempty(cases[i].initrds));
    }
}

/* ---- the files on disk, in a temporary root ---- */

typedef enum mutation {
    MUT_NONE,
    MUT_REMOVE,   /* path removed */
    MUT_TRUNCATE, /* path cut to size bytes */
    MUT_WRITE,    /* path replaced by data */
    MUT_MKDIR,    /* path replaced by a directory */
} mutation;

static const struct {
    const char *name;
    mutation mut;
    const char *path;
    const char *data;
    off_t size;
    const char *id;   /* the one finding expected; NULL: none */
    const char *what; /* a part of its message */
} disk_cases[] = {
    {"good files", MUT_NONE, NULL, NULL, 0, NULL, NULL},
    {"truncated kernel", MUT_TRUNCATE, "boot/vmlinuz-" REL, NULL, 4 << 20, "boot.kernel-damaged",
     "'/boot/vmlinuz-" REL "' is damaged: it is truncated: 4194304 bytes"},
    {"zero-size initrd", MUT_TRUNCATE, "boot/initrd.img-" REL, NULL, 0, "boot.initrd-damaged",
     "'/boot/initrd.img-" REL "' is damaged: it is empty"},
    {"text instead of a kernel", MUT_WRITE, "boot/vmlinuz-" REL, "not a kernel, only text", 0,
     "boot.kernel-damaged", "too short for a bzImage header"},
    {"initrd with the wrong magic", MUT_WRITE, "boot/initrd.img-" REL, "fake initrd", 0,
     "boot.initrd-damaged", "neither a cpio archive"},
    {"missing kernel", MUT_REMOVE, "boot/vmlinuz-" REL, NULL, 0, "boot.file-unreadable",
     "cannot open '/boot/vmlinuz-" REL "': it does not exist"},
    {"missing initrd", MUT_REMOVE, "boot/initrd.img-" REL, NULL, 0, "boot.file-unreadable",
     "'/boot/initrd.img-" REL "'"},
    {"kernel is a directory", MUT_MKDIR, "boot/vmlinuz-" REL, NULL, 0, "boot.file-unreadable",
     "is a directory"},
    {"missing modules.dep", MUT_REMOVE, "lib/modules/" REL "/modules.dep", NULL, 0,
     "boot.file-unreadable", "modules.dep' does not exist: depmod did not run"},
    {"modules.dep.bin of zeros", MUT_WRITE, "lib/modules/" REL "/modules.dep.bin",
     "\0\0\0\0\0\0\0\0", 0, "boot.modules-damaged", "modules.dep.bin' is damaged"},
    {"grub.cfg without the trial entry", MUT_WRITE, "boot/grub/grub.cfg",
     "set default=0\nmenuentry 'x' --id x {\n\tlinux /boot/vmlinuz-" REL
     "\n}\n" WAYBACK_ENTRY OLD_ENTRY,
     0, "boot.trial-entry-missing", "no top-level entry 'kswap-trial'"},
    {"grub.cfg cut off", MUT_WRITE, "boot/grub/grub.cfg",
     "menuentry 'kswap trial' --id kswap-trial {\n\tlinux /boot/vmlinuz-", 0,
     "boot.grub-cfg-damaged", "does not parse"},
    {"missing grub.cfg", MUT_REMOVE, "boot/grub/grub.cfg", NULL, 0, "boot.file-unreadable",
     "'/boot/grub/grub.cfg'"},
    {"trial initrd that does not decompress", MUT_WRITE, "boot/initrd.img-" REL, "070701 BROKEN", 0,
     "boot.initrd-damaged", "does not decompress: stub: broken"},
    /* The way back: the old kernel's files, by the way-back entry and OLD's own entry. */
    {"truncated old kernel", MUT_TRUNCATE, "boot/vmlinuz-" OLD, NULL, 1 << 20,
     "boot.old-kernel-damaged",
     "'/boot/vmlinuz-" OLD "', a file of the way back, is damaged: it is truncated: 1048576"},
    {"old kernel of zeros", MUT_WRITE, "boot/vmlinuz-" OLD, "\0\0\0\0\0\0\0\0", 1 << 20,
     "boot.old-kernel-damaged", "first bytes are zeros"},
    {"missing old kernel", MUT_REMOVE, "boot/vmlinuz-" OLD, NULL, 0, "boot.old-kernel-damaged",
     "cannot open '/boot/vmlinuz-" OLD "', a file of the way back: it does not exist"},
    {"old initrd of zeros", MUT_WRITE, "boot/initrd.img-" OLD, "\0\0\0\0\0\0\0\0", 4096,
     "boot.old-initrd-damaged", "zeros"},
    {"old initrd that does not decompress", MUT_WRITE, "boot/initrd.img-" OLD, "070701 BROKEN", 0,
     "boot.old-initrd-damaged", "does not decompress: stub: broken"},
    {"old initrd in a compression kswap does not read", MUT_WRITE, "boot/initrd.img-" OLD,
     "\x89LZO\x01", 0, NULL, NULL},
    {"missing old initrd", MUT_REMOVE, "boot/initrd.img-" OLD, NULL, 0, "boot.old-initrd-damaged",
     "'/boot/initrd.img-" OLD "', a file of the way back: it does not exist"},
    {"grub.cfg without the way-back entry", MUT_WRITE, "boot/grub/grub.cfg",
     "set default=0\n" TRIAL_ENTRY OLD_ENTRY, 0, "boot.way-back-entry-missing",
     "no top-level entry 'kswap-way-back'"},
    {"the way-back entry loads the trial kernel", MUT_WRITE, "boot/grub/grub.cfg",
     "set default=0\nmenuentry 'kswap way back' --id kswap-way-back {\n\tlinux /boot/vmlinuz-" REL
     "\n}\n" TRIAL_ENTRY OLD_ENTRY,
     0, "boot.way-back-entry-missing", "loads '/boot/vmlinuz-" REL "', not vmlinuz-" OLD},
    {"an early microcode initrd of the way back, damaged", MUT_WRITE, "boot/grub/grub.cfg",
     "set default=0\nmenuentry 'kswap way back' --id kswap-way-back {\n\tlinux /boot/vmlinuz-" OLD
     "\n\tinitrd /boot/ucode.img /boot/initrd.img-" OLD "\n}\n" TRIAL_ENTRY OLD_ENTRY,
     0, "boot.old-initrd-damaged", "cannot open '/boot/ucode.img', a file of the way back"},
};

static void write_file(const char *base, const char *rel, const void *data, size_t len, off_t size)
{
    _cleanup_free_ char *p = ks_asprintf("%s/%s", base, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || (len && write(fd, data, len) != (ssize_t)len) ||
        (size && ftruncate(fd, size) < 0)) {
        fprintf(stderr, "cannot write '%s': %m\n", p);
        exit(1);
    }
    close(fd);
}

static void make_good_root(const char *base)
{
    static const uint8_t dep_bin[] = {0xb0, 0x07, 0xf4, 0x57, 0x00, 0x02, 0x00, 0x01, 0, 0, 0, 0};
    _cleanup_free_ char *kernel = NULL, *initrd = NULL, *cfg = NULL, *cmd = NULL;
    size_t klen = 0, ilen = 0;

    cmd = ks_asprintf("mkdir -p '%s/boot/grub' '%s/lib/modules/" REL "'", base, base);
    if (!cmd || system(cmd) != 0)
        exit(1);
    kernel = fixture("vmlinuz-6.1.0-57-amd64.head", &klen);
    initrd = fixture("initrd-zstd.head", &ilen);
    /* The real kernel's first KiB, then a hole up to its real size (sparse: no disk used). */
    write_file(base, "boot/vmlinuz-" REL, kernel, klen, GENERIC_SIZE);
    write_file(base, "boot/initrd.img-" REL, initrd, ilen, 0);
    write_file(base, "lib/modules/" REL "/modules.dep", "kernel/fs/ext4.ko:\n", 19, 0);
    write_file(base, "lib/modules/" REL "/modules.dep.bin", dep_bin, sizeof(dep_bin), 0);
    write_file(base, "lib/modules/" REL "/modules.builtin", "kernel/fs/ext4.ko\n", 18, 0);
    {
        /* The old kernel: the real cloud kernel's first KiB, sparse up to its size. */
        _cleanup_free_ char *okernel = NULL, *oinitrd = NULL;
        size_t olen = 0, oilen = 0;
        okernel = fixture("vmlinuz-6.1.0-57-cloud-amd64.head", &olen);
        oinitrd = fixture("initrd-gzip.head", &oilen);
        write_file(base, "boot/vmlinuz-" OLD, okernel, olen, CLOUD_SIZE);
        write_file(base, "boot/initrd.img-" OLD, oinitrd, oilen, 0);
    }
    cfg = ks_asprintf("set default=0\n%s%s%s", WAYBACK_ENTRY, TRIAL_ENTRY, OLD_ENTRY);
    write_file(base, "boot/grub/grub.cfg", cfg, strlen(cfg), 0);
}

/* Stands in for lib/kernel's reader: "BROKEN" in the file does not decompress, lzo's magic
 * cannot be told. */
static int stub_unpacks(int fd, char **ret_why)
{
    char buf[4096] = "";
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

    if (n < 0)
        return -errno;
    if (memcmp(buf, "\x89LZO", 4) == 0)
        return -EPROTONOSUPPORT;
    if (memmem(buf, (size_t)n, "BROKEN", 6)) {
        *ret_why = strdup("stub: broken");
        return -EBADMSG;
    }
    return 0;
}

static void test_settle(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(disk_cases); i++) {
        char base[] = "/tmp/kswap-bootfiles.XXXXXX";
        _cleanup_root_ ks_root *root = NULL;
        _cleanup_free_ char *path = NULL, *cmd = NULL;
        ks_bootfiles_stats st = {0};
        ks_findings f = {0};
        int r;

        if (!mkdtemp(base))
            abort();
        make_good_root(base);
        path = disk_cases[i].path ? ks_asprintf("%s/%s", base, disk_cases[i].path) : NULL;
        switch (disk_cases[i].mut) {
        case MUT_REMOVE:
            CHECK(unlink(path) == 0);
            break;
        case MUT_TRUNCATE:
            CHECK(truncate(path, disk_cases[i].size) == 0);
            break;
        case MUT_WRITE: {
            size_t n = strlen(disk_cases[i].data);
            write_file(base, disk_cases[i].path, disk_cases[i].data, n ? n : 8, disk_cases[i].size);
            break;
        }
        case MUT_MKDIR:
            CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0);
            break;
        case MUT_NONE:
            break;
        }
        CHECK(ks_root_open(base, &root) == 0);
        r = ks_bootfiles_settle(root,
                                &(ks_bootfiles_want){.release = REL,
                                                     .entry_id = "kswap-trial",
                                                     .old_release = OLD,
                                                     .wayback_id = "kswap-way-back",
                                                     .initrd_unpacks = stub_unpacks},
                                &f, &st);
        CHECK_MSG(r == (disk_cases[i].id ? 1 : 0), "%s: %d problems, %zu findings (%s)",
                  disk_cases[i].name, r, f.n, f.n ? f.v[0].message : "");
        if (disk_cases[i].id && f.n == 1) {
            CHECK_STREQ(f.v[0].id, disk_cases[i].id);
            CHECK_INTEQ(f.v[0].severity, KS_SEV_BLOCK);
            CHECK_MSG(strstr(f.v[0].message, disk_cases[i].what), "%s: '%s' lacks '%s'",
                      disk_cases[i].name, f.v[0].message, disk_cases[i].what);
            CHECK(f.v[0].remedy && strstr(f.v[0].remedy, "nothing is armed"));
            if (ks_startswith(f.v[0].id, "boot.old-"))
                CHECK_MSG(strstr(f.v[0].remedy, "the way back must be intact first"), "%s: '%s'",
                          disk_cases[i].name, f.v[0].remedy);
        }
        if (!disk_cases[i].id) {
            bool lzo = strstr(disk_cases[i].name, "compression") != NULL;
            /* kernel, initrd, 3 module files, grub.cfg, the old kernel and its initrd; their 4
             * directories; the module tree */
            CHECK_INTEQ(st.files_synced + st.syncfs_instead, 8);
            CHECK_INTEQ(st.dirs_synced, 4);
            CHECK_INTEQ(st.syncfs_calls, 1 + st.syncfs_instead);
            CHECK_INTEQ(st.old_files, 2);
            CHECK_INTEQ(st.initrds_unpacked, lzo ? 1 : 2);
            CHECK_INTEQ(st.initrds_magic_only, lzo ? 1 : 0);
        }
        ks_findings_clear(&f);
        cmd = ks_asprintf("rm -rf '%s'", base);
        if (!cmd || system(cmd) != 0)
            abort();
    }
}

/* The cheap look of plan and of the check before a reboot: no sync, the same verdicts. */
static void test_peek(void)
{
    static const struct {
        const char *path;
        ks_bootfile_kind kind;
        mutation mut;
        off_t size;
        int ret;
        const char *why, *format;
    } cases[] = {
        {"boot/vmlinuz-" OLD, KS_BOOTFILE_KERNEL, MUT_NONE, 0, 0, NULL, NULL},
        {"boot/initrd.img-" OLD, KS_BOOTFILE_INITRD, MUT_NONE, 0, 0, NULL, "gzip"},
        {"boot/initrd.img-" REL, KS_BOOTFILE_INITRD, MUT_NONE, 0, 0, NULL, "zstd"},
        {"boot/vmlinuz-" OLD, KS_BOOTFILE_KERNEL, MUT_TRUNCATE, 4096, -EBADMSG, "truncated", NULL},
        {"boot/vmlinuz-" OLD, KS_BOOTFILE_KERNEL, MUT_REMOVE, 0, -ENOENT, "does not exist", NULL},
        {"boot/vmlinuz-" OLD, KS_BOOTFILE_KERNEL, MUT_MKDIR, 0, -EISDIR, "cannot open it", NULL},
        {"boot/initrd.img-" OLD, KS_BOOTFILE_INITRD, MUT_TRUNCATE, 0, -EBADMSG, "empty", NULL},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char base[] = "/tmp/kswap-bootfiles.XXXXXX";
        _cleanup_root_ ks_root *root = NULL;
        _cleanup_free_ char *path = NULL, *why = NULL, *cmd = NULL;
        const char *format = NULL;
        int r;

        if (!mkdtemp(base))
            abort();
        make_good_root(base);
        path = ks_asprintf("%s/%s", base, cases[i].path);
        if (cases[i].mut == MUT_TRUNCATE)
            CHECK(truncate(path, cases[i].size) == 0);
        else if (cases[i].mut == MUT_REMOVE)
            CHECK(unlink(path) == 0);
        else if (cases[i].mut == MUT_MKDIR)
            CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0);
        CHECK(ks_root_open(base, &root) == 0);
        r = ks_bootfile_peek(root, cases[i].path, cases[i].kind, &why, &format);
        CHECK_MSG(r == cases[i].ret, "peek %zu %s: %d (%s), want %d", i, cases[i].path, r,
                  strempty(why), cases[i].ret);
        if (cases[i].why)
            CHECK_MSG(why && strstr(why, cases[i].why), "peek %zu: '%s' lacks '%s'", i,
                      strempty(why), cases[i].why);
        CHECK_MSG(streq_ptr(format, cases[i].format), "peek %zu: format '%s'", i, strempty(format));
        cmd = ks_asprintf("rm -rf '%s'", base);
        if (!cmd || system(cmd) != 0)
            abort();
    }
}

int main(void)
{
    test_kernel();
    test_initrd();
    test_modindex();
    test_grub_cfg();
    test_root_path();
    test_entry_loads();
    test_settle();
    test_peek();
    TEST_DONE();
}
