/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "grub/paths.h"
#include "lib/basic/util.h"
#include "lib/engine/bootpeek.h"

/* What repairs one file, then the caller's next step. */
static char *remedy(const ks_boot_peek *who, const char *path, bool initrd)
{
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

    if (!initrd)
        return ks_asprintf("reinstall the kernel ('apt-get install --reinstall linux-image-%s') "
                           "and check the disk ('dmesg' for I/O errors), %s",
                           who->release, who->then);
    if (ks_endswith(name, who->release))
        return ks_asprintf("rebuild the initrd ('update-initramfs -u -k %s') and check the disk "
                           "('dmesg' for I/O errors), %s",
                           who->release, who->then);
    return ks_asprintf("reinstall the package that ships /%s ('dpkg -S /%s' names it), %s", path,
                       path, who->then);
}

static int look(const ks_root *root, const char *path, ks_bootfile_kind kind,
                const ks_boot_peek *who, ks_findings *findings)
{
    _cleanup_free_ char *why = NULL, *fix = NULL;
    const char *format = NULL, *id;
    bool initrd = kind == KS_BOOTFILE_INITRD;
    int r;

    if (who->old)
        id = initrd ? "boot.old-initrd-damaged" : "boot.old-kernel-damaged";
    else
        id = initrd ? "boot.initrd-damaged" : "boot.kernel-damaged";
    r = ks_bootfile_peek(root, path, kind, &why, &format);
    if (r == -ENOMEM)
        return r;
    if (r >= 0 && !who->say_ok)
        return 0;
    if (r >= 0 && initrd)
        return ks_findings_add(findings, id, KS_SEV_OK, NULL,
                               "'/%s' %s starts as an initramfs (%s)", path, who->whose,
                               strempty(format));
    if (r >= 0)
        return ks_findings_add(findings, id, KS_SEV_OK, NULL,
                               "'/%s' %s has its bzImage header and the length it announces", path,
                               who->whose);
    /* A trial's file that is missing or unreadable is named so, as before arming. */
    if (!who->old && r != -EBADMSG)
        id = "boot.file-unreadable";
    fix = remedy(who, path, initrd);
    if (!fix)
        return -ENOMEM;
    r = ks_findings_add(findings, id, who->severity, fix, "'/%s' %s is %s: %s", path, who->whose,
                        r == -EBADMSG ? "damaged" : "unreadable", why ? why : strerror(-r));
    return r < 0 ? r : 1;
}

int ks_boot_peek_loads(const ks_root *root, const ks_boot_loads *l, const ks_boot_peek *who,
                       ks_findings *findings)
{
    int r, problems = 0;

    if (l->kernel) {
        r = look(root, l->kernel, KS_BOOTFILE_KERNEL, who, findings);
        if (r < 0)
            return r;
        problems += r;
    }
    for (char **i = l->initrds; i && *i; i++) {
        r = look(root, *i, KS_BOOTFILE_INITRD, who, findings);
        if (r < 0)
            return r;
        problems += r;
    }
    return problems;
}

int ks_boot_peek_kernel(const ks_root *root, const ks_grub_cfg *cfg, const ks_boot_peek *who,
                        ks_findings *findings)
{
    _cleanup_(ks_boot_loads_done) ks_boot_loads loads = {0};
    ks_grub_entry_path path = {0};
    int r;

    r = ks_grub_entry_path_find(cfg->entries, cfg->n_entries, who->release, &path);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0;
    r = ks_boot_loads_of_entry(path.entry, &loads);
    ks_grub_entry_path_done(&path);
    if (r < 0)
        return r;
    return ks_boot_peek_loads(root, &loads, who, findings);
}
