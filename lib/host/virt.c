/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Follows systemd's src/basic/virt.c (detect_container(), then detect_vm()) step by step, so
 * that the word equals what systemd-detect-virt prints on the same host. Every file is read
 * through the root; CPUID and the PID-1/tracer/cgroup checks count only on the live host.
 */
#include <ctype.h>
#include <fcntl.h>
#include <sys/vfs.h>

#include "lib/host/cpu.h"
#include "lib/basic/util.h"
#include "lib/host/virt.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define SMALL_FILE_MAX (64 * 1024)
#define CPUINFO_MAX (4 * 1024 * 1024)

/* The result of one step: a word (static) and what showed it (allocated). */
typedef struct verdict {
    const char *word;
    char *evidence;
} verdict;

static int decide(verdict *v, const char *word, char *evidence)
{
    if (!evidence)
        return -ENOMEM;
    v->word = word;
    free(v->evidence);
    v->evidence = evidence;
    return 1;
}

/*
 * The first line of a file, ending at CR or LF as systemd's read_one_line_file() sees it
 * (other white space stays: "lxc " is not "lxc"). NULL when absent or unreadable.
 */
static int read_value(const ks_root *root, const char *path, char **ret)
{
    char *s = NULL;
    int r;

    r = ks_root_read_line(root, path, &s);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        *ret = NULL;
        return 0;
    }
    s[strcspn(s, "\r\n")] = '\0';
    *ret = s;
    return 0;
}

/* For evidence strings: a value shown to people stays printable and short. */
static char *printable(const char *s)
{
    char *p = strndup(s, 64);

    if (p)
        for (char *c = p; *c; c++)
            if (!isprint((unsigned char)*c))
                *c = '?';
    return p;
}

static const char *const container_words[] = {
    "lxc", "lxc-libvirt", "systemd-nspawn", "docker", "podman", "rkt", "wsl", "proot", "pouch",
};

bool ks_virt_is_container(const char *word)
{
    if (!word)
        return false;
    for (size_t i = 0; i < ARRAY_SIZE(container_words); i++)
        if (streq(word, container_words[i]))
            return true;
    return streq(word, "openvz") || streq(word, "container-other");
}

bool ks_virt_is_kvm(const char *word)
{
    return word && (streq(word, "kvm") || streq(word, "amazon"));
}

/* /run/.containerenv before /.dockerenv: an image may carry a stray .dockerenv. */
static int container_files(const ks_root *root, verdict *v)
{
    if (ks_root_exists(root, "run/.containerenv"))
        return decide(v, "podman", strdup("/run/.containerenv exists"));
    if (ks_root_exists(root, ".dockerenv"))
        return decide(v, "docker", strdup("/.dockerenv exists"));
    return 0;
}

/* A container manager's name as systemd translates it; unknown names are "container-other". */
static int translate(const ks_root *root, const char *name, const char *source, verdict *v)
{
    _cleanup_free_ char *shown = printable(name);
    int r;

    if (!shown)
        return -ENOMEM;
    if (streq(name, "oci")) {
        /* "oci" names no manager; systemd looks at the well-known files instead. */
        r = container_files(root, v);
        if (r != 0)
            return r;
        return decide(v, "container-other", ks_asprintf("%s says 'oci'", source));
    }
    for (size_t i = 0; i < ARRAY_SIZE(container_words); i++)
        if (streq(name, container_words[i]))
            return decide(v, container_words[i], ks_asprintf("%s says '%s'", source, shown));
    return decide(v, "container-other", ks_asprintf("%s says '%s'", source, shown));
}

/* Value of container= in proc/1/environ (NUL-separated); 1 when found. */
static int pid1_container_env(const ks_root *root, char **ret)
{
    _cleanup_free_ char *buf = NULL;
    size_t len, pos = 0;
    int r;

    r = ks_root_read_file(root, "proc/1/environ", SMALL_FILE_MAX, &buf, &len);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0; /* needs CAP_SYS_PTRACE on a live host: absent is not an error */
    while (pos < len) {
        const char *entry = buf + pos;
        size_t n = strnlen(entry, len - pos);
        const char *value = ks_startswith(entry, "container=");

        if (value && (size_t)(value - entry) <= n) {
            *ret = strndup(value, n - (size_t)(value - entry));
            return *ret ? 1 : -ENOMEM;
        }
        pos += n + 1;
    }
    return 0;
}

/* proot ptraces us: our tracer's comm starts with "proot". Live host only. */
static int detect_proot(const ks_root *root, verdict *v)
{
    _cleanup_free_ char *status = NULL, *comm = NULL, *path = NULL;
    const char *line;
    size_t len, pos = 0, n;
    int pid = 0, r;

    r = ks_root_read_file(root, "proc/self/status", SMALL_FILE_MAX, &status, &len);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0;
    while (ks_next_line(status, len, &pos, &line, &n)) {
        char num[16];
        size_t i = strlen("TracerPid:");

        if (n < i || memcmp(line, "TracerPid:", i) != 0)
            continue;
        while (i < n && isspace((unsigned char)line[i]))
            i++;
        if (n - i == 0 || n - i >= sizeof(num))
            return 0;
        memcpy(num, line + i, n - i);
        num[n - i] = '\0';
        if (ks_safe_atoi(num, &pid) < 0)
            return 0;
        break;
    }
    if (pid <= 0)
        return 0;
    path = ks_asprintf("proc/%d/comm", pid);
    if (!path)
        return -ENOMEM;
    r = read_value(root, path, &comm);
    if (r < 0)
        return r;
    if (comm && ks_startswith(comm, "proot")) {
        _cleanup_free_ char *shown = printable(comm);
        if (!shown)
            return -ENOMEM;
        return decide(v, "proot", ks_asprintf("traced by '%s' (pid %d)", shown, pid));
    }
    return 0;
}

/* systemd's running_in_cgroupns(): a nested cgroup namespace is some container. */
static bool in_cgroupns(const ks_root *root)
{
    _cleanup_close_ int fd = -EBADF;
    struct statfs sfs;

    if (!ks_root_exists(root, "proc/self/ns/cgroup"))
        return false;
    fd = ks_root_open_at(root, "sys/fs/cgroup", O_PATH | O_DIRECTORY, 0);
    if (fd < 0 || fstatfs(fd, &sfs) < 0)
        return false;
    if ((unsigned long)sfs.f_type == CGROUP2_SUPER_MAGIC) {
        /* The root cgroup has no cgroup.events; nested ones have it, and cgroup.type. */
        if (!ks_root_exists(root, "sys/fs/cgroup/cgroup.events"))
            return false;
        if (ks_root_exists(root, "sys/fs/cgroup/cgroup.type"))
            return true;
        return !ks_root_exists(root, "sys/kernel/cgroup/features");
    }
    /* cgroup v1: release_agent exists only in the root cgroup. */
    if (!ks_root_exists(root, "sys/fs/cgroup/systemd"))
        return false;
    return !ks_root_exists(root, "sys/fs/cgroup/systemd/release_agent");
}

/* detect_container(): 1 with *v set when in a container, 0 when not. */
static int detect_container(const ks_root *root, verdict *v)
{
    _cleanup_free_ char *osrel = NULL, *m = NULL, *env = NULL;
    bool host = ks_root_is_host(root);
    int r;

    /* /proc/vz exists inside and outside OpenVZ containers, /proc/bc only outside. */
    if (ks_root_exists(root, "proc/vz") && !ks_root_exists(root, "proc/bc"))
        return decide(v, "openvz", strdup("/proc/vz exists without /proc/bc"));

    /* Microsoft's documented way to recognise WSL. */
    r = read_value(root, "proc/sys/kernel/osrelease", &osrel);
    if (r < 0)
        return r;
    if (osrel && (strstr(osrel, "Microsoft") || strstr(osrel, "WSL"))) {
        _cleanup_free_ char *shown = printable(osrel);
        if (!shown)
            return -ENOMEM;
        return decide(v, "wsl", ks_asprintf("kernel release '%s' names WSL", shown));
    }

    if (host) {
        r = detect_proot(root, v);
        if (r != 0)
            return r;
    }

    r = read_value(root, "run/host/container-manager", &m);
    if (r < 0)
        return r;
    if (m && *m)
        return translate(root, m, "/run/host/container-manager", v);

    if (host && getpid() == 1) {
        /* As PID 1 our own environment is authoritative; an empty $container means none. */
        const char *e = getenv("container");

        if (e && !*e)
            return 0;
        if (e)
            return translate(root, e, "$container", v);
    } else {
        /* PID 1 (systemd) leaves it in /run; other inits only in their environment. */
        free(TAKE_PTR(m));
        r = read_value(root, "run/systemd/container", &m);
        if (r < 0)
            return r;
        if (m && *m)
            return translate(root, m, "/run/systemd/container", v);

        r = pid1_container_env(root, &env);
        if (r < 0)
            return r;
        if (r > 0)
            return translate(root, env, "container= in /proc/1/environ", v);
    }

    /* The well-known files only now: a stray /.dockerenv must not hide another manager. */
    r = container_files(root, v);
    if (r != 0)
        return r;
    if (host && in_cgroupns(root))
        return decide(v, "container-other", strdup("inside a cgroup namespace"));
    return 0;
}

/* The DMI fields systemd reads, product_name first so KVM wins over QEMU. */
static const char *const dmi_files[] = {
    "product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version",
};

static const struct {
    const char *prefix;
    const char *word;
} dmi_vendors[] = {
    {"KVM", "kvm"},
    {"OpenStack", "kvm"},
    {"KubeVirt", "kvm"},
    {"Amazon EC2", "amazon"},
    {"QEMU", "qemu"},
    {"VMware", "vmware"},
    {"VMW", "vmware"},
    {"innotek GmbH", "oracle"},
    {"VirtualBox", "oracle"},
    {"Oracle Corporation", "oracle"},
    {"Xen", "xen"},
    {"Bochs", "bochs"},
    {"Parallels", "parallels"},
    {"BHYVE", "bhyve"},
    {"Hyper-V", "microsoft"},
    {"Apple Virtualization", "apple"},
    {"Google Compute Engine", "google"},
};

/* What DMI says; the values are kept for later steps and evidence. */
typedef struct dmi {
    char *value[ARRAY_SIZE(dmi_files)];
    const char *word;    /* NULL: nothing matched */
    const char *file;    /* the file that matched */
    const char *matched; /* its value */
} dmi;

static void dmi_done(dmi *d)
{
    for (size_t i = 0; i < ARRAY_SIZE(dmi_files); i++)
        free(d->value[i]);
}

static const char *dmi_get(const dmi *d, const char *file)
{
    for (size_t i = 0; i < ARRAY_SIZE(dmi_files); i++)
        if (streq(dmi_files[i], file))
            return d->value[i];
    return NULL;
}

/* SMBIOS BIOS characteristics extension byte 2, bit 4: "this is a virtual machine". */
static int smbios_vm_bit(const ks_root *root)
{
    _cleanup_free_ char *raw = NULL;
    size_t len;

    if (ks_root_read_file(root, "sys/firmware/dmi/entries/0-0/raw", SMALL_FILE_MAX, &raw, &len) < 0)
        return -1;
    if (len < 20 || (unsigned char)raw[1] < 20)
        return -1;
    return ((unsigned char)raw[19] & (1U << 4)) ? 1 : 0;
}

static int read_dmi(const ks_root *root, dmi *d)
{
    for (size_t i = 0; i < ARRAY_SIZE(dmi_files); i++) {
        _cleanup_free_ char *path = ks_asprintf("sys/class/dmi/id/%s", dmi_files[i]);
        int r;

        if (!path)
            return -ENOMEM;
        r = read_value(root, path, &d->value[i]);
        if (r < 0)
            return r;
    }
    for (size_t i = 0; i < ARRAY_SIZE(dmi_files) && !d->word; i++) {
        if (!d->value[i])
            continue;
        for (size_t j = 0; j < ARRAY_SIZE(dmi_vendors); j++)
            if (ks_startswith(d->value[i], dmi_vendors[j].prefix)) {
                d->word = dmi_vendors[j].word;
                d->file = dmi_files[i];
                d->matched = d->value[i];
                break;
            }
    }
    return 0;
}

static char *dmi_evidence(const dmi *d, const char *suffix)
{
    _cleanup_free_ char *shown = printable(d->matched);

    if (!shown)
        return NULL;
    return ks_asprintf("DMI %s '%s'%s", d->file, shown, suffix);
}

/* detect_vm_dmi(): Amazon needs SMBIOS or the product name to tell metal from Nitro VMs. */
static int vm_dmi(const ks_root *root, const dmi *d, verdict *v)
{
    int bit;

    if (d->word && streq(d->word, "amazon")) {
        const char *product = dmi_get(d, "product_name");
        const char *metal;

        bit = smbios_vm_bit(root);
        if (bit == 1)
            return decide(v, "amazon", dmi_evidence(d, " and the SMBIOS VM bit"));
        if (bit == 0)
            return decide(v, "none", dmi_evidence(d, " without the SMBIOS VM bit (metal)"));
        metal = product ? strstr(product, ".metal") : NULL;
        if (metal && (metal[6] == '\0' || metal[6] == '-'))
            return decide(v, "none", dmi_evidence(d, " on a .metal instance"));
        return decide(v, "amazon", dmi_evidence(d, ""));
    }
    if (d->word)
        return decide(v, d->word, dmi_evidence(d, ""));
    if (smbios_vm_bit(root) == 1)
        return decide(v, "vm-other", strdup("SMBIOS says virtual machine"));
    return decide(v, "none", strdup("no virtualization found in DMI"));
}

/* detect_vm_uml(): the first vendor_id of proc/cpuinfo. */
static int vm_uml(const char *cpuinfo, size_t len, verdict *v)
{
    const char *line;
    size_t pos = 0, n;

    while (ks_next_line(cpuinfo, len, &pos, &line, &n)) {
        static const char key[] = "vendor_id\t: ";

        if (n < sizeof(key) - 1 || memcmp(line, key, sizeof(key) - 1) != 0)
            continue;
        if (n - (sizeof(key) - 1) >= strlen("User Mode Linux") &&
            memcmp(line + sizeof(key) - 1, "User Mode Linux", strlen("User Mode Linux")) == 0)
            return decide(v, "uml", strdup("/proc/cpuinfo vendor_id 'User Mode Linux'"));
        break;
    }
    return 0;
}

/* detect_vm_xen_dom0(): 1 for dom0 (the hardware domain), 0 for a guest. */
static int xen_dom0(const ks_root *root)
{
    _cleanup_free_ char *features = NULL, *caps = NULL;
    _cleanup_strv_free_ char **l = NULL;
    int r;

    r = read_value(root, "sys/hypervisor/properties/features", &features);
    if (r < 0)
        return r;
    if (features) {
        char *end;
        unsigned long f;

        errno = 0;
        f = strtoul(features, &end, 16);
        if (errno == 0 && end != features)
            return (f & (1UL << 11)) ? 1 : 0; /* XENFEAT_dom0 */
    }
    r = read_value(root, "proc/xen/capabilities", &caps);
    if (r < 0)
        return r;
    if (!caps)
        return 0;
    r = ks_strv_split(caps, ",", &l);
    if (r < 0)
        return r;
    return ks_strv_contains(l, "control_d") ? 1 : 0;
}

static const struct {
    const char sig[13];
    const char *word;
} cpuid_vendors[] = {
    {"XenVMMXenVMM", "xen"},   {"KVMKVMKVM", "kvm"},       {"Linux KVM Hv", "kvm"},
    {"TCGTCGTCGTCG", "qemu"},  {"VMwareVMware", "vmware"}, {"Microsoft Hv", "microsoft"},
    {"bhyve bhyve ", "bhyve"}, {"QNXQVMBSQG", "qnx"},      {"ACRNACRNACRN", "acrn"},
    {"SRESRESRESRE", "sre"},   {"Apple VZ", "apple"},
};

/* detect_vm_cpuid() on the live host: "none", "vm-other" (unknown vendor) or a word. */
static int vm_cpuid(verdict *v)
{
    _cleanup_free_ char *vendor = NULL, *shown = NULL;
    bool present = false;
    int r;

    r = ks_cpuid_hypervisor(&present, &vendor);
    if (r == -ENOMEM)
        return r;
    if (r < 0 || !present)
        return decide(v, "none", strdup("no hypervisor bit in CPUID"));
    shown = printable(strempty(vendor));
    if (!shown)
        return -ENOMEM;
    for (size_t i = 0; i < ARRAY_SIZE(cpuid_vendors); i++)
        if (vendor && streq(vendor, cpuid_vendors[i].sig))
            return decide(v, cpuid_vendors[i].word,
                          ks_asprintf("CPUID hypervisor vendor '%s'", shown));
    return decide(v, "vm-other", ks_asprintf("CPUID hypervisor vendor '%s' unknown", shown));
}

/*
 * Under a root that is not this host there is no CPUID. The cpuinfo "hypervisor" flag
 * together with kvm-clock (offered only when the KVM paravirt CPUID leaves exist) stands in
 * for the KVM signature; "Microsoft Corporation" + "Virtual Machine" for Hyper-V's.
 */
static int vm_files_cpuid(const ks_root *root, const dmi *d, bool hypervisor_flag, verdict *v)
{
    _cleanup_free_ char *clocks = NULL;
    const char *vendor = dmi_get(d, "sys_vendor"), *product = dmi_get(d, "product_name");
    int r;

    if (!hypervisor_flag)
        return decide(v, "none", strdup("no hypervisor flag in /proc/cpuinfo"));
    r = read_value(root, "sys/devices/system/clocksource/clocksource0/available_clocksource",
                   &clocks);
    if (r < 0)
        return r;
    if (clocks) {
        _cleanup_strv_free_ char **l = NULL;

        r = ks_strv_split(clocks, " \t", &l);
        if (r < 0)
            return r;
        if (ks_strv_contains(l, "kvm-clock")) {
            if (d->word)
                return decide(v, "kvm", dmi_evidence(d, " with hypervisor flag and kvm-clock"));
            if (vendor) {
                _cleanup_free_ char *shown = printable(vendor);
                if (!shown)
                    return -ENOMEM;
                return decide(v, "kvm",
                              ks_asprintf("DMI sys_vendor '%s' with hypervisor flag and "
                                          "kvm-clock",
                                          shown));
            }
            return decide(v, "kvm", strdup("hypervisor flag and kvm-clock"));
        }
    }
    if (streq_ptr(vendor, "Microsoft Corporation") && streq_ptr(product, "Virtual Machine"))
        return decide(v, "microsoft",
                      strdup("DMI 'Microsoft Corporation' 'Virtual Machine' with hypervisor "
                             "flag"));
    return decide(v, "vm-other", strdup("hypervisor flag in /proc/cpuinfo, vendor unknown"));
}

static bool cpuinfo_hypervisor(const char *text, size_t len)
{
    ks_cpuinfo c = {};
    bool h;

    if (!text || ks_cpuinfo_parse(text, len, &c) < 0)
        return false;
    h = c.hypervisor;
    ks_cpuinfo_done(&c);
    return h;
}

/* Moves a step's verdict into the result. */
static int take(verdict *v, verdict *from)
{
    free(v->evidence);
    *v = *from;
    *from = (verdict){};
    return 1;
}

/* detect_vm(): the order and the fallbacks are systemd's. */
static int detect_vm(const ks_root *root, verdict *v)
{
    _cleanup_(dmi_done) dmi d = {};
    _cleanup_free_ char *cpuinfo = NULL, *hvtype = NULL, *other = NULL;
    verdict dv = {}, cv = {};
    bool host = ks_root_is_host(root), hyperv = false;
    size_t cpuinfo_len = 0;
    int dom0 = 0, r;

    r = read_dmi(root, &d);
    if (r < 0)
        return r;
    r = ks_root_read_file(root, "proc/cpuinfo", CPUINFO_MAX, &cpuinfo, &cpuinfo_len);
    if (r == -ENOMEM)
        return r;

    /* First VirtualBox, Amazon, Parallels, Google and Xen by DMI, even when they use KVM. */
    r = vm_dmi(root, &d, &dv);
    if (r < 0)
        goto out;
    if (streq(dv.word, "oracle") || streq(dv.word, "xen") || streq(dv.word, "amazon") ||
        streq(dv.word, "parallels") || streq(dv.word, "google")) {
        r = take(v, &dv);
        goto out;
    }

    if (cpuinfo) {
        r = vm_uml(cpuinfo, cpuinfo_len, v);
        if (r != 0)
            goto out;
    }

    /* Xen PV does not override CPUID when nested, so /proc/xen comes before it. */
    if (ks_root_exists(root, "proc/xen")) {
        dom0 = xen_dom0(root);
        if (dom0 < 0) {
            r = dom0;
            goto out;
        }
        if (dom0 == 0) {
            r = decide(v, "xen", strdup("/proc/xen exists (domU)"));
            goto out;
        }
    }

    if (host)
        r = vm_cpuid(&cv);
    else
        r = vm_files_cpuid(root, &d, cpuinfo_hypervisor(cpuinfo, cpuinfo_len), &cv);
    if (r < 0)
        goto out;
    if (streq(cv.word, "microsoft")) {
        /* QEMU with Hyper-V enlightenments also says "Microsoft Hv": ask DMI first. */
        hyperv = true;
    } else if (streq(cv.word, "vm-other")) {
        other = TAKE_PTR(cv.evidence);
    } else if (!streq(cv.word, "none")) {
        r = take(v, &cv);
        goto out;
    }
    /* A Xen dom0 is the host, not a guest: only CPUID (a nesting hypervisor) counts. */
    if (dom0 == 0) {
        if (streq(dv.word, "vm-other")) {
            free(other);
            other = TAKE_PTR(dv.evidence);
        } else if (!streq(dv.word, "none")) {
            r = take(v, &dv);
            goto out;
        }

        r = read_value(root, "sys/hypervisor/type", &hvtype);
        if (r < 0)
            goto out;
        if (hvtype && streq(hvtype, "xen")) {
            r = decide(v, "xen", strdup("/sys/hypervisor/type is 'xen'"));
            goto out;
        }
        if (hvtype) {
            _cleanup_free_ char *shown = printable(hvtype);

            free(other);
            other = shown ? ks_asprintf("/sys/hypervisor/type is '%s'", shown) : NULL;
            if (!other) {
                r = -ENOMEM;
                goto out;
            }
        }
    }

    /* Nothing clear: Hyper-V enlightenments alone mean Microsoft, any hint means a VM. */
    if (hyperv)
        r = take(v, &cv);
    else if (other)
        r = decide(v, "vm-other", TAKE_PTR(other));
    else if (dom0 > 0)
        r = decide(v, "none", strdup("Xen dom0 (the host itself)"));
    else
        r = decide(v, "none", strdup("no container and no hypervisor found"));

out:
    free(dv.evidence);
    free(cv.evidence);
    return r;
}

int ks_virt_detect(const ks_root *root, char **ret_word, char **ret_evidence)
{
    _cleanup_free_ char *word = NULL;
    verdict v = {};
    int r;

    if (!root)
        return -EINVAL;
    r = detect_container(root, &v);
    if (r == 0)
        r = detect_vm(root, &v);
    if (r < 0) {
        free(v.evidence);
        return r;
    }
    word = strdup(v.word);
    if (!word) {
        free(v.evidence);
        return -ENOMEM;
    }
    *ret_word = TAKE_PTR(word);
    if (ret_evidence)
        *ret_evidence = v.evidence;
    else
        free(v.evidence);
    return 0;
}
