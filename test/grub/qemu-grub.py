#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Real GRUB under qemu-system-x86_64 -accel tcg against kswap's forecast, for three builds:
  2.06-pc   Debian 12's GRUB of the host (grub-pc-bin, /usr/lib/grub/i386-pc), MBR disk
  2.12-pc   Debian 13's grub-pc-bin, MBR disk
  2.12-efi  Debian 13's grub-efi-amd64-bin under OVMF: GPT disk, BOOTX64.EFI on an EFI system
            partition whose early config hands over to /boot/grub on the ext4 partition
The 2.12 packages are fetched from the Debian archive and unpacked into a cache, never installed
(test/kstest.py trixie_grub); images are made with grub-mkimage -d of the build's modules.

For each scenario: a disk image is built from files (mkfs.ext4 -d at a partition offset,
grub-mkimage core.img after boot.img in the MBR gap, or BOOTX64.EFI on the ESP), with a grub.cfg
whose menu entry bodies only are replaced (the grubenv-writing calls stay, then `echo KSWAP-BOOT
<release>; halt`) and a given grubenv. The image boots three times; after each boot grubenv is
read out of the image (debugfs bmap + offset) and compared byte for byte with what kswap's
forecast says GRUB leaves, and the printed release with the forecast's kernel. Between boots only
`grub-editenv unset recordfail` touches the block, as a booted system's grub-common.service does.
A boot the forecast says waits must show GRUB's menu or password prompt on the serial line and
then nothing booted for the scenario's wait.

usage: qemu-grub.py FORECAST_TOOL [--build 2.06-pc|2.12-pc|2.12-efi] [SCENARIO...]
exit 77 when a tool, OVMF or the Debian archive (for 2.12) is missing
"""
import concurrent.futures, os, re, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kstest  # noqa: E402

TOOL = sys.argv[1]
ARGS = sys.argv[2:]
BUILD = "2.06-pc"
if ARGS[:1] == ["--build"]:
    BUILD, ARGS = ARGS[1], ARGS[2:]
ONLY = ARGS
BUILDS = ("2.06-pc", "2.12-pc", "2.12-efi")
if BUILD not in BUILDS:
    sys.exit(f"qemu-grub.py: unknown build {BUILD!r}; one of {', '.join(BUILDS)}")
EFI = BUILD.endswith("-efi")
PLATFORM = "x86_64-efi" if EFI else "i386-pc"
FIX = os.path.join(os.environ.get("KS_FIXTURES", os.path.join(os.environ.get("KS_SOURCE_ROOT", "."), "test", "fixtures")), "grub")
PART_OFFSET = 1048576
ESP_MB = 8
FS_UUID = "5e1ec7ed-0000-4000-8000-00000000b007"  # of /boot's filesystem, for search.fs_uuid
# A bound for a boot that never ends, not a measure: boots that wait are timed from GRUB's menu.
# OVMF under TCG takes longer before GRUB runs, and the machine may be shared.
BOOT_TIMEOUT = float(os.environ.get("KS_QEMU_BOOT_TIMEOUT", "300" if EFI else "120"))

for tool in ("qemu-system-x86_64", "grub-mkimage", "grub-editenv", "mkfs.ext4", "debugfs", "sfdisk") + \
        (("mkfs.vfat", "mcopy", "mmd") if EFI else ()):
    if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
        print(f"{tool} not installed: skip")
        sys.exit(77)

os.environ["PATH"] += ":/usr/sbin:/sbin"

if BUILD == "2.06-pc":
    GRUB_VERSION = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "grub-pc-bin"],
                                  capture_output=True, text=True).stdout or "host"
    MODDIR = "/usr/lib/grub/i386-pc"
    MKIMAGE = "grub-mkimage"
else:
    try:
        GRUB_VERSION, _tree = kstest.trixie_grub()
    except (kstest.Unavailable, subprocess.SubprocessError, OSError) as e:
        print(f"GRUB 2.12 of Debian 13 not available: {e}: skip")
        sys.exit(77)
    MODDIR = os.path.join(_tree, "usr/lib/grub", PLATFORM)
    MKIMAGE, MKIMAGE_DESC = kstest.grub_mkimage(_tree)
if not os.path.exists(os.path.join(MODDIR, "kernel.img")):
    print(f"{MODDIR}: no GRUB modules (grub-pc-bin not installed?): skip")
    sys.exit(77)
if EFI:
    OVMF = kstest.find_ovmf()
    if not OVMF:
        print("OVMF not installed (Debian package ovmf): skip")
        sys.exit(77)

U24 = "f93ca2dd-74af-4ee8-b478-970b29be5ca3"
ADV24 = "gnulinux-advanced-" + U24
K45 = "gnulinux-6.8.0-45-generic-advanced-" + U24
K48 = "gnulinux-6.8.0-48-generic-advanced-" + U24
U22 = "b78b2f9f-3a08-427a-ad4e-4a04f235761c"
K1026 = "gnulinux-5.15.0-1026-aws-advanced-" + U22


def fixture(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return f.read()


def saved_default(text):
    # GRUB_DEFAULT=saved: 00_header writes default="${saved_entry}"
    assert 'set default="0"' in text
    return text.replace('set default="0"', 'set default="${saved_entry}"', 1)


def flat(text, uuid):
    # GRUB_DISABLE_SUBMENU=true: 10_linux writes the same entries without the submenu
    head = f"submenu 'Advanced options for Ubuntu' $menuentry_id_option 'gnulinux-advanced-{uuid}' {{\n"
    assert head in text
    text = text.replace(head, "", 1)
    tail = "}\n\n### END /etc/grub.d/10_linux ###"
    assert tail in text
    return text.replace(tail, "\n### END /etc/grub.d/10_linux ###", 1)


def russian(text):
    # Titles as update-grub writes them under LANG=ru_RU.UTF-8; ids are not translated
    text = text.replace("'Advanced options for Ubuntu'", "'Дополнительные параметры для Ubuntu'")
    return re.sub(r"'Ubuntu, with Linux ([^' ]+)", r"'Ubuntu, с Linux \1", text)


SCENARIOS = [
    # name, grub.cfg text, grubenv variables
    ("default-0", lambda: fixture("ubuntu-24.04-two-kernels.cfg"), []),
    ("one-shot-id-path", lambda: fixture("ubuntu-24.04-two-kernels.cfg"),
     [f"next_entry={ADV24}>{K45}"]),
    ("saved-plus-one-shot", lambda: saved_default(fixture("ubuntu-24.04-two-kernels.cfg")),
     [f"saved_entry={ADV24}>{K48}", f"next_entry={ADV24}>{K45}"]),
    ("one-shot-title-path", lambda: fixture("ubuntu-24.04-two-kernels.cfg"),
     ["next_entry=Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-45-generic"]),
    ("one-shot-bare-title", lambda: fixture("ubuntu-24.04-two-kernels.cfg"),
     ["next_entry=Ubuntu, with Linux 6.8.0-45-generic"]),
    ("localized-ru", lambda: russian(saved_default(fixture("ubuntu-24.04-two-kernels.cfg"))),
     [f"saved_entry={ADV24}>{K48}", f"next_entry={ADV24}>{K45}"]),
    ("flat-menu", lambda: flat(saved_default(fixture("ubuntu-24.04-two-kernels.cfg")), U24),
     [f"saved_entry={K48}", f"next_entry={K45}"]),
    ("u22-initrdfail-submenu", lambda: fixture("ubuntu-22.04-aws-force-partuuid-two-kernels.cfg"),
     [f"next_entry=gnulinux-advanced-{U22}>{K1026}"]),
    ("u22-initrdfail-flat", lambda: flat(fixture("ubuntu-22.04-aws-force-partuuid-two-kernels.cfg"), U22),
     [f"next_entry={K1026}"]),
    ("u22-initrdfail-rearm", lambda: flat(fixture("ubuntu-22.04-aws-force-partuuid-two-kernels.cfg"), U22),
     [f"next_entry={K1026}>2"]),
    ("debian-one-shot", lambda: fixture("debian-lvm.cfg"),
     ["next_entry=gnulinux-advanced-3378f75a-e05c-4372-88dd-b98c02822c90>"
      "gnulinux-4.9.0-3-amd64-advanced-3378f75a-e05c-4372-88dd-b98c02822c90"]),
    ("u22-cloud", lambda: fixture("ubuntu-22.04-cloud.cfg"), []),
    # GRUB_RECORDFAIL_TIMEOUT=-1 after a failed boot: the menu waits for a key.
    ("recordfail-waits", lambda: fixture("ubuntu-24.04-two-kernels.cfg").replace(
        "set timeout=30", "set timeout=-1", 1), ["recordfail=1"], {"wait": 12}),
    # A GRUB password: restricted entries ask for a user name on the console.
    ("superusers-waits", lambda: fixture("ubuntu-24.04-two-kernels.cfg").replace(
        "### END /etc/grub.d/00_header ###", "set superusers=root\n### END /etc/grub.d/00_header ###", 1),
     [], {"wait": 12}),
    # A real grubenv (saved_entry=2) with GRUB_DEFAULT=saved: entry 2 is memtest86+.
    ("real-grubenv-numeric", lambda: saved_default(fixture("ubuntu-24.04-two-kernels.cfg")), None,
     {"env_file": "grubenv.saved_entry-numeric-2"}),
    # GRUB_DEFAULT=saved, saved_entry=4: on EFI 30_uefi-firmware's "UEFI Firmware Settings"
    # (fwsetup), on BIOS "Linux with custom options" (40_custom): $grub_platform decides.
    ("platform-entry-4", lambda: saved_default(fixture("ubuntu-24.04-two-kernels.cfg")),
     ["saved_entry=4"]),
    # /boot on btrfs: save_env cannot write ("sparse file not allowed"), the one-shot repeats.
    ("btrfs-one-shot-repeats", lambda: fixture("ubuntu-24.04-two-kernels.cfg"),
     [f"next_entry={ADV24}>{K45}"], {"fs": "btrfs", "writable": False}),
]


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw)


MODULES = ["part_msdos", "ext2", "normal", "configfile", "echo", "test", "loadenv", "serial",
           "terminal", "search", "search_fs_uuid", "halt", "sleep", "linux", "boot", "btrfs"]


def build_base(work):
    """The boot image, made once per run (the config differs per scenario, not the image):
    i386-pc core.img with its prefix on (hd0,msdos1); x86_64-efi BOOTX64.EFI whose early config
    finds /boot's filesystem by UUID and sets the prefix there, as Debian's grub-install does."""
    early = os.path.join(work, "early.cfg")
    serial = "serial --unit=0 --speed=115200\nterminal_input serial\nterminal_output serial\n"
    if not EFI:
        core = os.path.join(work, "core.img")
        with open(early, "w") as f:
            f.write(serial)
        run(MKIMAGE, "-d", MODDIR, "-O", "i386-pc", "-o", core, "-c", early, "-p",
            "(hd0,msdos1)/boot/grub", "biosdisk", *MODULES)
        return core
    efi = os.path.join(work, "BOOTX64.EFI")
    with open(early, "w") as f:
        f.write(serial + f"search.fs_uuid {FS_UUID} root\nset prefix=($root)'/boot/grub'\n")
    run(MKIMAGE, "-d", MODDIR, "-O", "x86_64-efi", "-o", efi, "-c", early, "-p", "/boot/grub",
        "part_gpt", "fat", "efi_gop", *MODULES)
    warm_vars(work, efi)
    return efi


def warm_vars(work, efi):
    """OVMF's first boot on empty variables is slower (it formats the store, enumerates the
    disk's boot option): one boot of a GRUB that halts at once, whose variables every image
    then starts from (VARS below)."""
    global VARS
    d = os.path.join(work, "warm-up")
    os.makedirs(d)
    env = os.path.join(d, "grubenv")
    run("grub-editenv", env, "create")
    VARS = OVMF[1]
    img = make_image(d, efi, "echo KSWAP-BOOT warm-up\nhalt\n", env, "ext4")
    got, secs = boot(img, os.path.join(d, "serial.log"), BOOT_TIMEOUT)
    if got != "warm-up":
        raise RuntimeError(f"OVMF warm-up boot printed {got}: see {d}/serial.log")
    print(f"  OVMF warm-up boot on empty variables: {secs:.1f}s", flush=True)
    VARS = os.path.join(work, "OVMF_VARS.warm.fd")
    shutil.copy(img + ".vars", VARS)
    shutil.rmtree(d)


def make_image(work, core, cfg_text, env_path, fs, extra=None):
    """extra: {path inside the filesystem: bytes}, more files (a damaged kernel). /boot's
    filesystem is the first partition at PART_OFFSET in every build; 2.12-efi puts its EFI
    system partition after it."""
    root = os.path.join(work, "root")
    shutil.rmtree(root, ignore_errors=True)
    mods = os.path.join(root, "boot/grub", PLATFORM)
    os.makedirs(mods)
    for path, data in (extra or {}).items():
        os.makedirs(os.path.dirname(os.path.join(root, path.lstrip("/"))), exist_ok=True)
        with open(os.path.join(root, path.lstrip("/")), "wb") as f:
            f.write(data)
    for n in os.listdir(MODDIR):
        # No terminal.lst: gfxterm must not autoload, the serial line is the only output.
        if n.endswith(".mod") or (n.endswith(".lst") and n != "terminal.lst"):
            shutil.copy(os.path.join(MODDIR, n), mods)
    with open(os.path.join(root, "boot/grub/grub.cfg"), "w", encoding="utf-8") as f:
        f.write(cfg_text)
    shutil.copy(env_path, os.path.join(root, "boot/grub/grubenv"))
    img = os.path.join(work, "disk.img")
    part_mb = 31 if fs == "ext4" else 129
    size_mb = 1 + part_mb + (ESP_MB + 1 if EFI else 0)  # + the GPT's backup at the end
    with open(img, "wb") as f:
        f.truncate(size_mb << 20)
    if EFI:
        esp_at = PART_OFFSET + (part_mb << 20)
        kstest.partition_gpt(img, [(PART_OFFSET, part_mb << 20, kstest.LINUX_TYPE),
                                   (esp_at, ESP_MB << 20, kstest.ESP_TYPE)])
    else:
        run("sfdisk", "-q", img, input=b"2048,,83,*\n")
    part_kib = part_mb << 10
    if fs == "ext4":
        run("mkfs.ext4", "-q", "-F", "-b", "4096", "-U", FS_UUID, "-E", f"offset={PART_OFFSET}",
            "-d", root, img, f"{part_kib}k")
    else:
        # mkfs.btrfs has no offset: make the partition apart and copy it in.
        part = os.path.join(work, "part.img")
        with open(part, "wb") as f:
            f.truncate(part_kib << 10)
        run("mkfs.btrfs", "-q", "-f", "-U", FS_UUID, "-r", root, part)
        copy_in(part, img, PART_OFFSET)
    if EFI:
        esp = os.path.join(work, "esp.img")
        kstest.make_esp(esp, ESP_MB, {"EFI/BOOT/BOOTX64.EFI": core})
        copy_in(esp, img, esp_at)
        shutil.copy(VARS, img + ".vars")  # this disk's firmware variables
    else:
        kstest.write_grub_boot_sectors(img, core, MODDIR, PART_OFFSET)
    return img


def copy_in(part, img, offset):
    with open(part, "rb") as src, open(img, "r+b") as dst:
        dst.seek(offset)
        shutil.copyfileobj(src, dst, 1 << 20)
    os.unlink(part)


def env_offset(img, fs):
    if fs != "ext4":
        # btrfs keeps a small file inline in its metadata (twice: DUP): find the first whole
        # block by its signature, its warning line and 1024 bytes of text (loadenv.mod holds
        # the signature too, and the metadata fragments of it).
        with open(img, "rb") as f:
            data = f.read()
        head = b"# GRUB Environment Block\n# WARNING: Do not edit this file by tools other than grub-editenv!!!\n"
        i = data.find(head, PART_OFFSET)
        while i >= 0:
            block = data[i:i + 1024]
            if block.endswith(b"#") and all(c in (9, 10) or 32 <= c < 256 for c in block):
                return i
            i = data.find(head, i + 1)
        raise RuntimeError(f"{img}: no grubenv block in the btrfs partition")
    out = run("debugfs", "-R", "bmap /boot/grub/grubenv 0", f"{img}?offset={PART_OFFSET}").stdout
    return PART_OFFSET + int(out.split()[-1]) * 4096


def read_env(img, off):
    with open(img, "rb") as f:
        f.seek(off)
        return f.read(1024)


def write_env(img, off, data):
    assert len(data) == 1024
    with open(img, "r+b") as f:
        f.seek(off)
        f.write(data)


# GRUB has reached its decision on the serial line: the menu (its header) or the password prompt.
AT_MENU = re.compile(rb"GNU GRUB +version|Enter username:")


def boot(img, log, timeout, wait=None):
    """One boot; returns (release printed or None, seconds). wait: seconds to watch after GRUB
    showed its menu or password prompt (a boot that waits); None when GRUB never did."""
    t0 = time.monotonic()
    fw = kstest.ovmf_qemu_args(OVMF[0], img + ".vars") if EFI else []
    with open(log, "wb") as out:
        p = subprocess.Popen(["qemu-system-x86_64", "-accel", "tcg", "-m", "128" if EFI else "64",
                              "-nodefaults", "-display", "none", "-no-reboot", "-serial", "stdio",
                              *fw, "-drive", f"file={img},format=raw,if=ide"],
                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = t0 + timeout
        seen = None
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            if wait is not None and seen is None:
                with open(log, "rb") as f:
                    if AT_MENU.search(f.read()):
                        seen = time.monotonic()
                        deadline = seen + wait
        if p.poll() is None:
            p.kill()
        p.wait()
    with open(log, "rb") as f:
        text = f.read()
    m = re.search(rb"KSWAP-BOOT (\S+)", text)
    if wait is not None and not m and not AT_MENU.search(text):
        return "no menu", time.monotonic() - t0
    return (m.group(1).decode() if m else None), time.monotonic() - t0


def list_env(data):
    tmp = tempfile.NamedTemporaryFile(delete=False)
    tmp.write(data)
    tmp.close()
    try:
        return run("grub-editenv", tmp.name, "list").stdout.decode("utf-8", "replace").strip()
    finally:
        os.unlink(tmp.name)


def scenario(work, core, name, make_cfg, env_vars, opts):
    """Runs one scenario; returns (ok, report lines)."""
    out = []
    print = out.append  # scenarios run in parallel: report in one piece at the end
    fs = opts.get("fs", "ext4")
    writable = opts.get("writable", True)
    sdir = os.path.join(work, name)
    os.makedirs(sdir)
    cfg = os.path.join(sdir, "grub.cfg")
    with open(cfg, "w", encoding="utf-8") as f:
        f.write(make_cfg())
    env = os.path.join(sdir, "grubenv")
    if "env_file" in opts:
        shutil.copy(os.path.join(FIX, opts["env_file"]), env)
    else:
        run("grub-editenv", env, "create")
    if env_vars:
        run("grub-editenv", env, "set", *env_vars)
    stub = os.path.join(sdir, "stub.cfg")
    run(TOOL, "stub", cfg, stub)
    lines = run(TOOL, "forecast", cfg, env, "1" if writable else "0", sdir,
                *(["efi"] if EFI else [])).stdout.decode().splitlines()
    want = [dict(kv.split("=", 1) for kv in l.split()) for l in lines]
    with open(stub, encoding="utf-8") as f:
        img = make_image(sdir, core, f.read(), env, fs)
    off = env_offset(img, fs)
    ok = True
    for i, w in enumerate(want, 1):
        # The stub prints "firmware-setup" where fwsetup would reset into the firmware's UI.
        fw = w.get("reason") == "firmware-setup"
        waits = w["waits"] == "1" and not fw
        got, secs = boot(img, os.path.join(sdir, f"serial-{i}.log"), BOOT_TIMEOUT,
                         opts.get("wait", 12) if waits else None)
        if fw:
            want_rel = "firmware-setup"
        elif waits:
            want_rel = None
        else:
            want_rel = w["kernel"] if w["kernel"] != "-" else "none"
        after = read_env(img, off)
        with open(os.path.join(sdir, f"after-{i}.env"), "rb") as f:
            want_env = f.read()
        same_env = after == want_env
        print(f"  {name} boot {i}: GRUB {got or 'waits'}, kswap {want_rel or 'waits'}"
              f"{' (one-shot)' if w['one_shot'] == '1' else ''}; grubenv "
              f"{'same' if same_env else 'DIFFERENT'} ({secs:.1f}s)")
        if got != want_rel or not same_env:
            ok = False
            if not same_env:
                print("    GRUB left:  " + list_env(after).replace("\n", " | "))
                print("    kswap says: " + list_env(want_env).replace("\n", " | "))
            print(f"    serial log: {sdir}/serial-{i}.log")
            break
        if fs != "ext4":
            continue  # GRUB could not write it; userspace would rewrite the file elsewhere
        # The booted system's grub-common.service: grub-editenv grubenv unset recordfail
        tmp = os.path.join(sdir, "userspace.env")
        with open(tmp, "wb") as f:
            f.write(after)
        run("grub-editenv", tmp, "unset", "recordfail")
        with open(tmp, "rb") as f:
            write_env(img, off, f.read())
    return ok, out


def main():
    work = tempfile.mkdtemp(prefix="kswap-qemu-")
    keep = os.environ.get("KS_KEEP")
    t0 = time.monotonic()
    failed = []
    try:
        core = build_base(work)
        jobs = int(os.environ.get("KS_QEMU_JOBS", "2"))
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [(sc[0], pool.submit(scenario, work, core, sc[0], sc[1], sc[2],
                                           sc[3] if len(sc) > 3 else {}))
                       for sc in SCENARIOS if not ONLY or sc[0] in ONLY]
            for name, fut in futures:
                ok, lines = fut.result()
                print("\n".join(lines), flush=True)
                if not ok:
                    failed.append(name)
    finally:
        if not keep and not failed:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")
    print(f"{time.monotonic() - t0:.0f}s, failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


sys.exit(main())
