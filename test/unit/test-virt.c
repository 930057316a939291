/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/stat.h>

#include "lib/basic/util.h"
#include "lib/host/virt.h"
#include "test.h"

/*
 * Each case is a temporary root with the files systemd-detect-virt would look at. A content
 * starting with "@" names a real dump in test/fixtures/cpuinfo; a path ending in "/" is
 * a directory. Lengths are explicit because proc/1/environ holds NUL bytes.
 */
typedef struct file {
    const char *path;
    const char *data;
    size_t len;
} file;

#define F(p, s)                                                                                    \
    {                                                                                              \
        p, s, sizeof(s) - 1                                                                        \
    }
#define DIR_(p)                                                                                    \
    {                                                                                              \
        p, NULL, 0                                                                                 \
    }
#define DMI(name, s) F("sys/class/dmi/id/" name, s "\n")
#define CLOCKS(s) F("sys/devices/system/clocksource/clocksource0/available_clocksource", s "\n")
#define CPUINFO(fixture) F("proc/cpuinfo", "@" fixture)

#define CPU_KVM "kvm-guest-qemu-model-haswell-noTSX-ibrs-v3.txt"
#define CPU_QEMU64 "kvm-guest-default-qemu64-below-v2.txt"
#define CPU_NITRO "aws-ec2-nitro-kvm-xeon-8259cl-cascadelake-v4.txt"
#define CPU_XEN_HVM "aws-ec2-hvm-xeon-e5-2676v3-haswell-v3.txt"
#define CPU_AZURE "azure-hyperv-xeon-e5-2673v3-v3-empty-bugs.txt"
#define CPU_VBOX "virtualbox-guest-ivybridge-host-below-v2-no-hypervisor-flag.txt"
#define CPU_METAL "baremetal-server-2x-xeon-e5620-westmere-ep-v2-no-final-newline.txt"

/* SMBIOS type 0 with extension byte 2 (offset 19) bit 4 set or clear. */
#define SMBIOS(bit)                                                                                \
    F("sys/firmware/dmi/entries/0-0/raw",                                                          \
      "\x00\x18\x00\x00\x01\x02\x00\xf0\x03\xff\x80\x98\x8b\x3f\x01\x00\x11\x00\x03" bit           \
      "\x00\x00\x00\x00")

static const struct {
    const char *name;
    file files[8];
    const char *word;
    const char *evidence; /* a substring of *ret_evidence */
} cases[] = {
    /* VMs by DMI */
    {"kvm by DMI product_name",
     {DMI("product_name", "KVM"), DMI("sys_vendor", "Red Hat")},
     "kvm",
     "DMI product_name 'KVM'"},
    {"OpenStack",
     {DMI("product_name", "OpenStack Nova"), DMI("sys_vendor", "OpenStack Foundation"),
      CPUINFO(CPU_KVM)},
     "kvm",
     "DMI product_name 'OpenStack Nova'"},
    {"KubeVirt",
     {DMI("sys_vendor", "KubeVirt"), DMI("product_name", "None")},
     "kvm",
     "DMI sys_vendor 'KubeVirt'"},
    {"QEMU vendor with hypervisor flag and kvm-clock",
     {DMI("sys_vendor", "QEMU"), DMI("product_name", "Standard PC (i440FX + PIIX, 1996)"),
      DMI("bios_vendor", "SeaBIOS"), CPUINFO(CPU_KVM), CLOCKS("kvm-clock tsc acpi_pm ")},
     "kvm",
     "DMI sys_vendor 'QEMU' with hypervisor flag and kvm-clock"},
    {"hoster's name with hypervisor flag and kvm-clock",
     {DMI("sys_vendor", "Hetzner"), DMI("product_name", "vServer"), CPUINFO(CPU_QEMU64),
      CLOCKS("kvm-clock tsc acpi_pm")},
     "kvm",
     "DMI sys_vendor 'Hetzner' with hypervisor flag and kvm-clock"},
    {"hypervisor flag and kvm-clock, no DMI",
     {CPUINFO(CPU_KVM), CLOCKS("tsc kvm-clock")},
     "kvm",
     "hypervisor flag and kvm-clock"},
    {"QEMU without kvm-clock (TCG)",
     {DMI("sys_vendor", "QEMU"), DMI("product_name", "Standard PC (Q35 + ICH9, 2009)"),
      CPUINFO(CPU_KVM), CLOCKS("tsc hpet acpi_pm")},
     "qemu",
     "DMI sys_vendor 'QEMU'"},
    {"QEMU, kvm-clock but no hypervisor flag",
     {DMI("sys_vendor", "QEMU"), CPUINFO(CPU_METAL), CLOCKS("kvm-clock tsc")},
     "qemu",
     "DMI sys_vendor 'QEMU'"},
    {"QEMU, kvm-clock only as a substring",
     {DMI("sys_vendor", "QEMU"), CPUINFO(CPU_KVM), CLOCKS("notkvm-clock kvm-clocks tsc")},
     "qemu",
     "DMI sys_vendor 'QEMU'"},
    {"Amazon EC2 Nitro",
     {DMI("sys_vendor", "Amazon EC2"), DMI("product_name", "m5.large"),
      DMI("bios_vendor", "Amazon EC2"), CPUINFO(CPU_NITRO), CLOCKS("kvm-clock tsc hpet acpi_pm")},
     "amazon",
     "DMI sys_vendor 'Amazon EC2'"},
    {"Amazon EC2 metal instance",
     {DMI("sys_vendor", "Amazon EC2"), DMI("product_name", "m5.metal"), CPUINFO(CPU_METAL)},
     "none",
     "no container and no hypervisor"},
    {"Amazon EC2 metal by SMBIOS",
     {DMI("sys_vendor", "Amazon EC2"), DMI("product_name", "m5.large"), SMBIOS("\x00"),
      CPUINFO(CPU_METAL)},
     "none",
     NULL},
    {"Amazon EC2 VM by SMBIOS despite the name",
     {DMI("sys_vendor", "Amazon EC2"), DMI("product_name", "m5.metal"), SMBIOS("\x10")},
     "amazon",
     "SMBIOS VM bit"},
    {"Xen HVM by DMI",
     {DMI("sys_vendor", "Xen"), DMI("product_name", "HVM domU"), CPUINFO(CPU_XEN_HVM),
      CLOCKS("xen tsc hpet acpi_pm")},
     "xen",
     "DMI sys_vendor 'Xen'"},
    {"VMware",
     {DMI("product_name", "VMware Virtual Platform"), DMI("sys_vendor", "VMware, Inc.")},
     "vmware",
     "DMI product_name 'VMware Virtual Platform'"},
    {"VMware by VMW", {DMI("product_name", "VMW-123"), DMI("sys_vendor", "Acme")}, "vmware", NULL},
    {"VirtualBox",
     {DMI("product_name", "VirtualBox"), DMI("sys_vendor", "innotek GmbH"), CPUINFO(CPU_VBOX)},
     "oracle",
     "DMI product_name 'VirtualBox'"},
    {"VirtualBox with KVM paravirtualisation",
     {DMI("product_name", "VirtualBox"), CPUINFO(CPU_KVM), CLOCKS("kvm-clock tsc")},
     "oracle",
     NULL},
    {"VirtualBox by board_vendor",
     {DMI("product_name", "20N2S00600"), DMI("sys_vendor", "LENOVO"),
      DMI("board_vendor", "Oracle Corporation"), DMI("bios_vendor", "LENOVO")},
     "oracle",
     "DMI board_vendor 'Oracle Corporation'"},
    {"Hyper-V generation 2",
     {DMI("sys_vendor", "Microsoft Corporation"), DMI("product_name", "Virtual Machine"),
      DMI("product_version", "Hyper-V UEFI Release v4.1"), CPUINFO(CPU_AZURE)},
     "microsoft",
     "DMI product_version 'Hyper-V UEFI Release v4.1'"},
    {"Hyper-V generation 1 (files only)",
     {DMI("sys_vendor", "Microsoft Corporation"), DMI("product_name", "Virtual Machine"),
      DMI("product_version", "7.0"), CPUINFO(CPU_AZURE)},
     "microsoft",
     "hypervisor flag"},
    {"Surface laptop is no VM",
     {DMI("sys_vendor", "Microsoft Corporation"), DMI("product_name", "Surface Laptop 3"),
      CPUINFO(CPU_METAL)},
     "none",
     NULL},
    {"Bochs", {DMI("product_name", "Bochs"), DMI("sys_vendor", "Bochs")}, "bochs", NULL},
    {"Parallels", {DMI("sys_vendor", "Parallels Software International Inc.")}, "parallels", NULL},
    {"Parallels before CPUID",
     {DMI("sys_vendor", "Parallels International GmbH."), CPUINFO(CPU_KVM),
      CLOCKS("kvm-clock tsc")},
     "parallels",
     NULL},
    {"bhyve", {DMI("product_name", "BHYVE"), CPUINFO(CPU_KVM)}, "bhyve", NULL},
    {"Google",
     {DMI("product_name", "Google Compute Engine"), CPUINFO(CPU_KVM), CLOCKS("kvm-clock tsc")},
     "google",
     NULL},
    {"bare metal",
     {DMI("sys_vendor", "Dell Inc."), DMI("product_name", "PowerEdge R640"),
      DMI("bios_vendor", "Dell Inc."), CPUINFO(CPU_METAL), CLOCKS("tsc hpet acpi_pm")},
     "none",
     "no container and no hypervisor"},
    {"empty root", {{NULL}}, "none", NULL},
    {"hypervisor flag, nothing else", {CPUINFO(CPU_AZURE)}, "vm-other", "hypervisor flag"},
    {"SMBIOS VM bit, unknown vendor",
     {DMI("sys_vendor", "Acme"), SMBIOS("\x10")},
     "vm-other",
     "SMBIOS"},
    {"/sys/hypervisor/type xen",
     {F("sys/hypervisor/type", "xen\n"), CPUINFO(CPU_METAL)},
     "xen",
     "/sys/hypervisor/type"},
    {"/sys/hypervisor/type other",
     {F("sys/hypervisor/type", "s390\n")},
     "vm-other",
     "/sys/hypervisor/type is 's390'"},
    {"Xen domU by /proc/xen", {DIR_("proc/xen/"), CPUINFO(CPU_XEN_HVM)}, "xen", "/proc/xen"},
    {"Xen dom0 by capabilities",
     {F("proc/xen/capabilities", "control_d\n"), CPUINFO(CPU_METAL)},
     "none",
     "dom0"},
    {"Xen domU by features",
     {DIR_("proc/xen/"), F("sys/hypervisor/properties/features", "00002705\n")},
     "xen",
     "domU"},
    {"Xen dom0 by features bit 11",
     {DIR_("proc/xen/"), F("sys/hypervisor/properties/features", "00000800\n")},
     "none",
     "dom0"},
    {"User Mode Linux",
     {F("proc/cpuinfo", "processor\t: 0\nvendor_id\t: User Mode Linux\n")},
     "uml",
     "User Mode Linux"},

    /* Containers come first. */
    {"openvz",
     {DIR_("proc/vz/"), F("proc/vz/veinfo", ""), DMI("product_name", "KVM")},
     "openvz",
     "/proc/vz exists without /proc/bc"},
    {"openvz host node", {DIR_("proc/vz/"), DIR_("proc/bc/")}, "none", NULL},
    {"openvz before docker", {DIR_("proc/vz/"), F(".dockerenv", "")}, "openvz", NULL},
    {"lxc by /proc/1/environ",
     {F("proc/1/environ", "PATH=/usr/bin\0container=lxc\0TERM=linux\0"),
      DMI("product_name", "KVM")},
     "lxc",
     "container= in /proc/1/environ says 'lxc'"},
    {"lxc-libvirt", {F("proc/1/environ", "container=lxc-libvirt\0HOME=/\0")}, "lxc-libvirt", NULL},
    {"container= last without NUL", {F("proc/1/environ", "A=b\0container=lxc")}, "lxc", NULL},
    {"environ look-alikes",
     {F("proc/1/environ", "notcontainer=lxc\0xcontainer=docker\0")},
     "none",
     NULL},
    {"rkt", {F("proc/1/environ", "container=rkt\0")}, "rkt", NULL},
    {"pouch", {F("run/systemd/container", "pouch\n")}, "pouch", NULL},
    {"unknown manager",
     {F("proc/1/environ", "container=frobnicator\0")},
     "container-other",
     "'frobnicator'"},
    {"docker", {F(".dockerenv", ""), DMI("product_name", "KVM")}, "docker", "/.dockerenv exists"},
    {"podman",
     {F("run/.containerenv", "engine=\"podman-4.3.1\"\n")},
     "podman",
     "/run/.containerenv exists"},
    {"podman before a stray .dockerenv",
     {F("run/.containerenv", ""), F(".dockerenv", "")},
     "podman",
     NULL},
    {"systemd-nspawn",
     {F("run/systemd/container", "systemd-nspawn\n")},
     "systemd-nspawn",
     "/run/systemd/container says 'systemd-nspawn'"},
    {"/run/systemd/container before /proc/1/environ",
     {F("run/systemd/container", "systemd-nspawn\n"), F("proc/1/environ", "container=lxc\0")},
     "systemd-nspawn",
     NULL},
    {"CRLF in /run/systemd/container",
     {F("run/systemd/container", "systemd-nspawn\r\n")},
     "systemd-nspawn",
     NULL},
    {"trailing blank is part of the name",
     {F("run/systemd/container", "lxc \n")},
     "container-other",
     "'lxc '"},
    {"empty /run/systemd/container is ignored",
     {F("run/systemd/container", ""), F("proc/1/environ", "container=lxc\0")},
     "lxc",
     NULL},
    {"/run/host/container-manager first",
     {F("run/host/container-manager", "podman\n"), F("run/systemd/container", "docker\n"),
      F(".dockerenv", "")},
     "podman",
     "/run/host/container-manager says 'podman'"},
    {"oci with .dockerenv",
     {F("run/systemd/container", "oci\n"), F(".dockerenv", "")},
     "docker",
     "/.dockerenv"},
    {"oci alone", {F("run/systemd/container", "oci\n")}, "container-other", "'oci'"},
    {"WSL2",
     {F("proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")},
     "wsl",
     "kernel release '5.15.153.1-microsoft-standard-WSL2' names WSL"},
    {"WSL1", {F("proc/sys/kernel/osrelease", "4.4.0-19041-Microsoft\n")}, "wsl", NULL},
    {"WSL before container files",
     {F("proc/sys/kernel/osrelease", "5.15.0-WSL2\n"), F(".dockerenv", "")},
     "wsl",
     NULL},
    /* Live-only signals: in a root that is not this host they do not count. */
    {"cgroup namespace files under a root",
     {F("proc/self/ns/cgroup", ""), DIR_("sys/fs/cgroup/systemd/")},
     "none",
     NULL},
    {"proot tracer under a root",
     {F("proc/self/status", "Name:\tkswap\nTracerPid:\t5\n"), F("proc/5/comm", "proot\n")},
     "none",
     NULL},
    {"ordinary kernel release",
     {F("proc/sys/kernel/osrelease", "6.8.0-45-generic\n")},
     "none",
     NULL},
};

static void mkdir_parents(char *path, size_t skip)
{
    for (char *s = strchr(path + skip, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
}

static void put(const char *base, const file *f)
{
    _cleanup_free_ char *path = ks_asprintf("%s/%s", base, f->path);
    _cleanup_free_ char *fixture = NULL;
    const char *data = f->data;
    size_t len = f->len;
    FILE *out;

    mkdir_parents(path, strlen(base) + 1);
    if (ks_endswith(f->path, "/"))
        return;
    if (data && data[0] == '@') {
        _cleanup_free_ char *fp = ks_asprintf("%s/cpuinfo/%s", ks_fixture_dir(), data + 1);
        fixture = ks_test_slurp(fp, &len);
        CHECK_MSG(fixture != NULL, "cannot read %s", fp);
        data = fixture;
    }
    out = fopen(path, "wb");
    CHECK_MSG(out != NULL, "cannot create %s", path);
    if (!out)
        return;
    if (len)
        CHECK(fwrite(data, 1, len, out) == len);
    fclose(out);
}

static void test_cases(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char base[] = "/tmp/kswap-test-virt.XXXXXX";
        _cleanup_free_ char *word = NULL, *evidence = NULL, *cmd = NULL;
        ks_root *root = NULL;
        int r;

        CHECK(mkdtemp(base) != NULL);
        for (const file *f = cases[i].files; f->path; f++)
            put(base, f);
        CHECK(ks_root_open(base, &root) == 0);
        if (!root)
            continue;
        CHECK(!ks_root_is_host(root));
        r = ks_virt_detect(root, &word, &evidence);
        CHECK_MSG(r == 0, "%s: %d", cases[i].name, r);
        CHECK_MSG(streq_ptr(word, cases[i].word), "%s: got '%s', want '%s' (%s)", cases[i].name,
                  strempty(word), cases[i].word, strempty(evidence));
        CHECK_MSG(evidence && *evidence, "%s: no evidence", cases[i].name);
        if (cases[i].evidence)
            CHECK_MSG(evidence && strstr(evidence, cases[i].evidence),
                      "%s: evidence '%s' lacks '%s'", cases[i].name, strempty(evidence),
                      cases[i].evidence);
        /* The evidence is optional for the caller. */
        free(TAKE_PTR(word));
        CHECK_INTEQ(ks_virt_detect(root, &word, NULL), 0);
        CHECK_STREQ(word, cases[i].word);

        ks_root_free(root);
        cmd = ks_asprintf("rm -rf '%s'", base);
        CHECK(system(cmd) == 0);
    }
}

static void test_words(void)
{
    static const struct {
        const char *word;
        bool container, kvm;
    } words[] = {
        {"kvm", false, true},
        {"amazon", false, true},
        {"qemu", false, false},
        {"none", false, false},
        {"vmware", false, false},
        {"microsoft", false, false},
        {"xen", false, false},
        {"oracle", false, false},
        {"vm-other", false, false},
        {"openvz", true, false},
        {"lxc", true, false},
        {"lxc-libvirt", true, false},
        {"systemd-nspawn", true, false},
        {"docker", true, false},
        {"podman", true, false},
        {"rkt", true, false},
        {"wsl", true, false},
        {"proot", true, false},
        {"pouch", true, false},
        {"container-other", true, false},
        {"", false, false},
        {"kvmx", false, false},
        {"dockerx", false, false},
    };

    for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
        CHECK_MSG(ks_virt_is_container(words[i].word) == words[i].container, "%s", words[i].word);
        CHECK_MSG(ks_virt_is_kvm(words[i].word) == words[i].kvm, "%s", words[i].word);
    }
    CHECK(!ks_virt_is_container(NULL));
    CHECK(!ks_virt_is_kvm(NULL));
}

static void test_errors(void)
{
    char *word = (char *)"untouched", *evidence = (char *)"untouched";

    CHECK_INTEQ(ks_virt_detect(NULL, &word, &evidence), -EINVAL);
    CHECK_STREQ(word, "untouched");
    CHECK_STREQ(evidence, "untouched");
}

int main(void)
{
    test_cases();
    test_words();
    test_errors();
    TEST_DONE();
}
