/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files a root supplies: a FIFO, socket, device node or directory where kswap reads a file is
 * an error of its own and never blocks (alarm() fails the test instead of hanging); symbolic
 * links in lib/modules/RELEASE that lead out of the root (absolute, or "../" above it) are an
 * error naming the link, also for what libkmod opens by path; links that stay inside count.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "lib/basic/fileio.h"
#include "lib/basic/root.h"
#include "lib/basic/spawn.h"
#include "lib/kernel/deb.h"
#include "lib/kernel/initrd.h"
#include "lib/kernel/modverify.h"
#include "lib/basic/util.h"
#include "test.h"

#define REL "6.1.0-9-amd64"
static char base[] = "/tmp/test-hostile-XXXXXX";
static char root_dir[PATH_MAX], host_dir[PATH_MAX];

typedef enum kind { K_FILE, K_DIR, K_FIFO, K_SOCK, K_DEV, K_LINK } kind;

static void make(const char *dir, const char *rel, kind k, const char *content)
{
    char p[2 * PATH_MAX], cmd[5 * PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && rm -rf '%s'", p, p);
    if (system(cmd) != 0)
        abort();
    switch (k) {
    case K_FILE: {
        FILE *f = fopen(p, "we");
        if (!f)
            abort();
        fputs(content ? content : "", f);
        fclose(f);
        break;
    }
    case K_DIR:
        mkdir(p, 0755);
        break;
    case K_FIFO:
        mkfifo(p, 0644);
        break;
    case K_SOCK: {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (strlen(p) >= sizeof(sa.sun_path))
            abort();
        memcpy(sa.sun_path, p, strlen(p) + 1);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            abort();
        close(fd);
        break;
    }
    case K_DEV:
        if (mknod(p, S_IFCHR | 0644, makedev(1, 3)) < 0)
            symlink("/dev/null", p); /* no CAP_MKNOD: the host's /dev/null via a link */
        break;
    case K_LINK:
        if (symlink(content, p) < 0)
            abort();
        break;
    }
}

/* ks_root_read_file and ks_open_regular on each kind of file. */
typedef struct read_case {
    const char *name;
    kind kind;
    const char *content;
    size_t max;
    int expect;
    const char *words; /* ks_strerror(expect) contains */
} read_case;

static const read_case read_cases[] = {
    {"regular", K_FILE, "GRUB_DEFAULT=0\n", 4096, 0, NULL},
    {"FIFO", K_FIFO, NULL, 4096, -ESPIPE, "FIFO"},
    {"socket", K_SOCK, NULL, 4096, -ENOTSOCK, "socket"},
    {"directory", K_DIR, NULL, 4096, -EISDIR, "directory"},
    {"over the size limit", K_FILE, "0123456789abcdef0123456789abcdef", 16, -EFBIG, "larger"},
    {"a link to a FIFO inside", K_LINK, "/fifo-target", 4096, -ESPIPE, "FIFO"},
};

static void test_reads(const ks_root *root)
{
    make(root_dir, "fifo-target", K_FIFO, NULL);
    for (size_t i = 0; i < ARRAY_SIZE(read_cases); i++) {
        const read_case *c = &read_cases[i];
        _cleanup_free_ char *buf = NULL;
        char host[2 * PATH_MAX];
        size_t len;
        int r, fd;

        make(root_dir, "etc/file", c->kind, c->content);
        r = ks_root_read_file(root, "etc/file", c->max, &buf, &len);
        CHECK_MSG(r == c->expect, "%s: ks_root_read_file %d, expected %d", c->name, r, c->expect);
        if (c->words)
            CHECK_MSG(strstr(ks_strerror(r), c->words), "%s: '%s'", c->name, ks_strerror(r));
        if (c->kind == K_LINK)
            continue; /* on the host the link would point elsewhere */
        snprintf(host, sizeof(host), "%s/etc/file", root_dir);
        fd = ks_open_regular(host);
        if (c->expect == -EFBIG)
            CHECK(fd >= 0);
        else
            CHECK_MSG(fd == c->expect || (c->expect == 0 && fd >= 0), "%s: ks_open_regular %d",
                      c->name, fd);
        if (fd >= 0) {
            CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
            close(fd);
        }
    }
    /* A device node: a device, whichever way it was made. */
    {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;
        make(root_dir, "dev/null", K_DEV, NULL);
        make(root_dir, "etc/dev", K_DEV, NULL);
        r = ks_root_read_file(root, "etc/dev", 4096, &buf, &len);
        CHECK_MSG(r == -ENODEV, "device: %d", r);
    }
    /* The package and initrd readers, given FIFOs. */
    {
        char p[2 * PATH_MAX];
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_free_ char **names = NULL;
        ks_modset *set = NULL;
        snprintf(p, sizeof(p), "%s/fifo-target", root_dir);
        CHECK(ks_deb_read_modset(p, NULL, &set, NULL, &err) == -ESPIPE);
        CHECK(err && strstr(err, "FIFO"));
        CHECK(ks_initrd_list_modules(root, "fifo-target", &names, NULL) == -ESPIPE);
    }
}

/* The modules tree. */
typedef struct tree_case {
    const char *name;
    const char *file; /* in lib/modules/REL */
    kind kind;
    const char *target; /* K_LINK: link target; K_FILE: content */
    int expect;
    const char *error; /* substring of the error */
    bool has_bbr;      /* tcp_bbr found (unindexed tree walk) */
    bool bbr_builtin;
} tree_case;

static const tree_case tree_cases[] = {
    {"plain tree", NULL, K_FILE, NULL, 0, NULL, true, false},
    {"modules.builtin: absolute link out", "modules.builtin", K_LINK, "@HOST@/builtin", -EXDEV,
     "modules.builtin", false, false},
    {"modules.builtin: ../ link above the root", "modules.builtin", K_LINK,
     "../../../../../../../../../../../../../..@HOST@/builtin", -EXDEV, "modules.builtin", false,
     false},
    {"modules.builtin: ../ link inside the root", "modules.builtin", K_LINK,
     "../../../etc/builtin-inside", 0, NULL, true, true},
    {"modules.builtin.modinfo: absolute link out", "modules.builtin.modinfo", K_LINK,
     "@HOST@/builtin.modinfo", -EXDEV, "modules.builtin.modinfo", false, false},
    {"modules.dep.bin: absolute link out", "modules.dep.bin", K_LINK, "@HOST@/builtin", -EXDEV,
     "modules.dep.bin", false, false},
    {"a module: absolute link out", "kernel/net/ipv4/tcp_bbr2.ko", K_LINK, "@HOST@/tcp_bbr.ko",
     -EXDEV, "tcp_bbr2.ko", false, false},
    {"a directory: absolute link out", "kernel/net/evil", K_LINK, "@HOST@", 0, NULL, true,
     false}, /* the walk does not enter linked directories */
    {"modules.builtin: FIFO", "modules.builtin", K_FIFO, NULL, -ESPIPE, "FIFO", false, false},
    {"modules.dep.bin: FIFO", "modules.dep.bin", K_FIFO, NULL, -ESPIPE, "FIFO", false, false},
    {"modules.builtin: socket", "modules.builtin", K_SOCK, NULL, -ENOTSOCK, "socket", false, false},
    {"modules.builtin: directory", "modules.builtin", K_DIR, NULL, -EISDIR, "directory", false,
     false},
};

static void test_tree(const ks_root *root)
{
    for (size_t i = 0; i < ARRAY_SIZE(tree_cases); i++) {
        const tree_case *c = &tree_cases[i];
        _cleanup_free_ char *err = NULL, *target = NULL;
        ks_modset *set = NULL;
        int r;
        char cmd[2 * PATH_MAX];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s/lib/modules'", root_dir);
        if (system(cmd) != 0)
            abort();
        make(root_dir, "lib/modules/" REL "/kernel/net/ipv4/tcp_bbr.ko", K_FILE, "\177ELF");
        if (c->file) {
            const char *t = c->target;
            if (t && strstr(t, "@HOST@")) {
                const char *at = strstr(t, "@HOST@");
                target = ks_asprintf("%.*s%s%s", (int)(at - t), t, host_dir, at + 6);
                t = target;
            }
            {
                char rel[PATH_MAX];
                snprintf(rel, sizeof(rel), "lib/modules/" REL "/%s", c->file);
                make(root_dir, rel, c->kind, t);
            }
        }
        alarm(20);
        r = ks_modset_open_tree_full(root, REL, &set, &err);
        alarm(0);
        CHECK_MSG(r == c->expect, "%s: %d (%s), expected %d", c->name, r, strempty(err), c->expect);
        if (c->error)
            CHECK_MSG(err && strstr(err, c->error), "%s: error '%s' lacks '%s'", c->name,
                      strempty(err), c->error);
        if (r == 0) {
            CHECK_MSG((ks_modset_has(set, "tcp_bbr") > 0) == c->has_bbr, "%s: tcp_bbr", c->name);
            if (c->bbr_builtin) {
                ks_module_report m = {0};
                CHECK(ks_modset_judge(set, "tcp_bbr", &m) == 0);
                CHECK_MSG(m.state == KS_MODULE_BUILTIN, "%s: %s", c->name,
                          ks_module_state_to_string(m.state));
                ks_module_report_done(&m);
            }
            ks_modset_free(set);
        }
    }
}

/* Programs a root supplies (hooks, check scripts) run as opened inside the root. */
typedef struct exec_case {
    const char *name;
    kind kind;
    const char *target; /* K_LINK: target (@HOST@ = the host directory); K_FILE: content */
    mode_t mode;
    int expect_open;
    const char *output; /* what the program printed */
    const char *error;  /* part of the worded error of a refused #! interpreter */
} exec_case;

static const exec_case exec_cases[] = {
    {"a script", K_FILE, "#!/bin/sh\necho root-script\n", 0755, 0, "root-script\n"},
    {"an absolute link: the root's file of that path", K_LINK, "@HOST@/prog", 0, 0, "root-copy\n"},
    {"an absolute link to what only the host has", K_LINK, "@HOST@/only-host", 0, -ENOENT, NULL},
    {"a ../ link above the root", K_LINK, "../../../../../../../../../../..@HOST@/only-host", 0,
     -ENOENT, NULL},
    {"not executable", K_FILE, "#!/bin/sh\necho no\n", 0644, -EACCES, NULL},
    {"a FIFO", K_FIFO, NULL, 0, -ESPIPE, NULL},
    {"a directory", K_DIR, NULL, 0, -EISDIR, NULL},
    /* The #! interpreter: the kernel looks it up on the running machine, not in the root. */
    {"#! with blanks and an argument", K_FILE, "#!  /bin/sh -e\necho sh-e\n", 0755, 0, "sh-e\n"},
    {"#! outside the program directories", K_FILE, "#!@HOST@/prog\necho no\n", 0755, -EPERM, NULL,
     "is not a program of /bin, /sbin, /usr/bin"},
    {"#! climbing out of /bin", K_FILE, "#!/bin/../tmp/x\n", 0755, -EPERM, NULL,
     "'/bin/../tmp/x' is not a program of"},
    {"#! relative", K_FILE, "#!sh\n", 0755, -EPERM, NULL, "'sh' is not a program of"},
    {"#! that does not exist", K_FILE, "#!/usr/bin/kswap-no-such-interpreter\n", 0755, -ENOENT,
     NULL, "does not exist on this machine"},
    {"#! a directory", K_FILE, "#!/usr/bin/X11\n", 0755, -EACCES, NULL,
     "is not a regular executable file (a directory)"},
    {"#! with no name", K_FILE, "#!   \necho\n", 0755, -ENOEXEC, NULL, "names no interpreter"},
    {"#! longer than the kernel reads", K_FILE,
     "#!/bin/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
     0755, -ENOEXEC, NULL, "has no end within 256 bytes"},
};

static void test_exec(const ks_root *root)
{
    char rel_prog[2 * PATH_MAX];

    make(host_dir, "prog", K_FILE, "#!/bin/sh\necho host\n");
    make(host_dir, "only-host", K_FILE, "#!/bin/sh\necho host\n");
    snprintf(rel_prog, sizeof(rel_prog), "%s/prog", host_dir);
    chmod(rel_prog, 0755);
    snprintf(rel_prog, sizeof(rel_prog), "%s/prog", host_dir + 1);
    make(root_dir, rel_prog, K_FILE, "#!/bin/sh\necho root-copy\n");
    {
        char p[3 * PATH_MAX];
        snprintf(p, sizeof(p), "%s/%s", root_dir, rel_prog);
        chmod(p, 0755);
    }
    for (size_t i = 0; i < ARRAY_SIZE(exec_cases); i++) {
        const exec_case *c = &exec_cases[i];
        _cleanup_free_ char *target = NULL, *err = NULL;
        ks_spawn_result res = {0};
        char *argv[] = {"hook", NULL};
        int fd;

        if (c->target && strstr(c->target, "@HOST@")) {
            const char *at = strstr(c->target, "@HOST@");
            target = ks_asprintf("%.*s%s%s", (int)(at - c->target), c->target, host_dir, at + 6);
        }
        make(root_dir, "etc/kswap/hooks.d/pinned/hook", c->kind, target ? target : c->target);
        if (c->kind == K_FILE && target) {
            /* a script naming a host path as its interpreter */
            make(root_dir, "etc/kswap/hooks.d/pinned/hook", K_FILE, target);
        }
        if (c->kind == K_FILE) {
            char p[2 * PATH_MAX];
            snprintf(p, sizeof(p), "%s/etc/kswap/hooks.d/pinned/hook", root_dir);
            chmod(p, c->mode);
        }
        fd = ks_spawn_open_in_root_full(root, "etc/kswap/hooks.d/pinned/hook", &err);
        CHECK_MSG(fd == c->expect_open || (c->expect_open == 0 && fd >= 0), "%s: open %d (%s)",
                  c->name, fd, strempty(err));
        if (c->error)
            CHECK_MSG(err && strstr(err, c->error), "%s: '%s' lacks '%s'", c->name, strempty(err),
                      c->error);
        free(TAKE_PTR(err));
        if (fd < 0)
            continue;
        CHECK(ks_spawn(argv, KS_SPAWN_OPTS(.timeout_ms = 10000, .exec_fd = fd), &res) == 0);
        CHECK_MSG(streq_ptr(res.output, c->output), "%s: printed '%s'", c->name,
                  strempty(res.output));
        ks_spawn_result_done(&res);
        close(fd);
    }
}

/* The check-then-open window: the module file is swapped for a link to a host file after
 * kswap checked it and before libkmod opens it; libkmod must still read the checked file. */
static char swap_target[2 * PATH_MAX];
static void swap_for_link(const char *file)
{
    char p[3 * PATH_MAX];
    snprintf(p, sizeof(p), "%s/lib/modules/" REL "/%s", root_dir, file);
    if (unlink(p) < 0 || symlink(swap_target, p) < 0)
        abort();
}

static void test_swap(const ks_root *root)
{
    char cmd[6 * PATH_MAX];
    ks_modset *set = NULL;
    ks_module_report m = {0};
    _cleanup_free_ char *err = NULL;

    snprintf(cmd, sizeof(cmd),
             "rm -rf '%s/lib/modules' && sh '%s/verify/mkmod.sh' "
             "'%s/lib/modules/" REL "/kernel/net/ipv4/tcp_bbr.ko' tcp_bbr '' 3 && "
             "sh '%s/verify/mkmod.sh' '%s/bbr1.ko' tcp_bbr '' 1",
             root_dir, TEST_DIR, root_dir, TEST_DIR, host_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "swap: cannot make modules (cc?), skipped\n");
        return;
    }
    snprintf(swap_target, sizeof(swap_target), "%s/bbr1.ko", host_dir);
    ks_modset_test_before_kmod_open = swap_for_link;
    CHECK(ks_modset_open_tree_full(root, REL, &set, &err) == 0);
    if (set) {
        CHECK_MSG(ks_modset_judge(set, "tcp_bbr", &m) == 0, "%s", strempty(ks_modset_error(set)));
        CHECK_MSG(streq_ptr(m.version, "3"),
                  "swapped: libkmod read version '%s', not the checked "
                  "file's 3",
                  strempty(m.version));
        ks_module_report_done(&m);
        ks_modset_free(set);
    }
    ks_modset_test_before_kmod_open = NULL;
}

int main(void)
{
    _cleanup_root_ ks_root *root = NULL;
    char cmd[2 * PATH_MAX];

    alarm(120); /* a hang is a failure */
    if (!mkdtemp(base))
        return 1;
    snprintf(root_dir, sizeof(root_dir), "%s/root", base);
    snprintf(host_dir, sizeof(host_dir), "%s/host", base);
    make(host_dir, "builtin", K_FILE, "kernel/net/ipv4/tcp_bbr.ko\n");
    make(host_dir, "builtin.modinfo", K_FILE, "");
    make(host_dir, "tcp_bbr.ko", K_FILE, "\177ELF");
    make(root_dir, "etc/builtin-inside", K_FILE, "kernel/net/ipv4/tcp_bbr.ko\n");
    if (ks_root_open(root_dir, &root) < 0)
        return 1;

    test_reads(root);
    test_tree(root);
    test_exec(root);
    test_swap(root);

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    if (system(cmd) != 0)
        return 1;
    TEST_DONE();
}
