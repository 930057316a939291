#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The fake update-grub (test/fakes/update-grub) against copies of fixture roots.

1. Ubuntu 24.04 with the settings of the machine the real fixture grub.cfg comes from
   (GRUB_DEFAULT=0, hidden timeout, "quiet splash", memtest86+, a 40_custom entry): the whole
   generated file equals test/fixtures/grub/ubuntu-24.04-two-kernels.cfg line for line; the
   only lines that differ are its five `linux` lines of 10_linux, which the fixture's
   repository (canonical/rt-conf, a tool that edits kernel command lines) rewrote: spaces
   collapsed and " no_hz" appended. Also the root's own settings (cloud-image drop-in).
2. kswap's drop-in (GRUB_DEFAULT=saved, panic=10 appended to GRUB_CMDLINE_LINUX_DEFAULT).
3. A XanMod kernel added: newest first, in the submenu; every full id path resolves to its
   entry in kswap's GRUB model (forecast-tool and `kswap --root DIR status --json`);
   version sort, .old, dpkg leftovers, dangling links.
4. GRUB_DISABLE_SUBMENU=true; / on LVM with /boot apart (byte for byte the real 24.04 server
   grub.cfg), /boot on btrfs and mdraid (recordfail marker); GRUB_FORCE_PARTUUID (the real
   22.04 AWS grub.cfg but for 2.12's 30_uefi-firmware); the Debian 12 root (equal to its
   grub.cfg); failure switches; refusal without KSWAP_ROOT, with KSWAP_ROOT=/ or a boot/
   symlinked out of the root.
usage: test-update-grub.py KSWAP FORECAST_TOOL
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

KSWAP, TOOL = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "update-grub")
SRC = os.environ.get("KS_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
FIX = os.environ.get("KS_FIXTURES", os.path.join(SRC, "test", "fixtures"))
ROOTS = os.path.join(SRC, "test", "roots")
U = "f93ca2dd-74af-4ee8-b478-970b29be5ca3"
XAN = "6.18.45-x64v3-xanmod1"
UBUNTU_SCRIPTS = ["00_header", "05_debian_theme", "10_linux", "10_linux_zfs", "20_linux_xen",
                  "20_memtest86+", "25_bli", "30_os-prober", "30_uefi-firmware", "35_fwupd",
                  "40_custom", "41_custom"]

checks = 0
failures = 0
work = tempfile.mkdtemp(prefix="kswap-ugrub-")


def check(name, cond, detail=""):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL: {name}" + (f"\n    {detail}" if detail else ""))
    return cond


def read(p):
    with open(p, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def write(p, text, mode=None):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)
    if mode is not None:
        os.chmod(p, mode)


def fresh(name, src="ubuntu-24.04-kvm"):
    d = os.path.join(work, name)
    shutil.copytree(os.path.join(ROOTS, src, "root"), os.path.join(d, "root"), symlinks=True)
    return os.path.join(d, "root")


def env_for(root, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSWAP_")}
    env.update(LANG="en_US.UTF-8", KSWAP_ROOT=root)
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def run_fake(root, timeout=60, **extra):
    env = env_for(root, **extra)
    if root is None:
        env.pop("KSWAP_ROOT")
    return subprocess.run([FAKE], env=env, capture_output=True, timeout=timeout)


def cfg(root):
    return read(os.path.join(root, "boot/grub/grub.cfg"))


def section(text, name):
    m = re.search(rf"### BEGIN /etc/grub.d/{re.escape(name)} ###\n(.*?)### END /etc/grub.d/{re.escape(name)} ###\n",
                  text, re.S)
    return m.group(1) if m else None


def editenv(root, *assign):
    env = os.path.join(root, "boot/grub/grubenv")
    os.unlink(env)
    subprocess.run(["grub-editenv", env, "create"], check=True)
    if assign:
        subprocess.run(["grub-editenv", env, "set", *assign], check=True)
    return env


def forecast(root, *assign):
    """forecast-tool's kernels for 3 boots with the given grubenv variables."""
    env = editenv(root, *assign)
    out = os.path.join(os.path.dirname(root), "fc")
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([TOOL, "forecast", os.path.join(root, "boot/grub/grub.cfg"), env, "1", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr
    return [dict(kv.split("=", 1) for kv in l.split())["kernel"] for l in p.stdout.splitlines()], ""


def status(root):
    p = subprocess.run([KSWAP, "--root", root, "status", "--json"], capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def script_check(path):
    exe = shutil.which("grub-script-check")
    if not exe:
        return None
    return subprocess.run([exe, path], capture_output=True).returncode == 0


def fixture_settings(root):
    """The settings of the machine of the real fixture: stock 24.04 /etc/default/grub, no
    cloud-image drop-in, memtest86+ installed, a hand-written 40_custom entry, /etc/grub.d."""
    os.unlink(os.path.join(root, "etc/default/grub.d/50-cloudimg-settings.cfg"))
    write(os.path.join(root, "boot/memtest86+x64.bin"), "fake memtest\n")
    fx = read(os.path.join(FIX, "grub/ubuntu-24.04-two-kernels.cfg"))
    custom = section(fx, "40_custom")
    for s in UBUNTU_SCRIPTS:
        body = "#!/bin/sh\nexec tail -n +3 $0\n" + custom if s == "40_custom" else "#!/bin/sh\n"
        write(os.path.join(root, "etc/grub.d", s), body, 0o755)
    write(os.path.join(root, "etc/grub.d/README"), "not a script\n", 0o644)


# ------------------------------------------------------------------------------- 1. fixture
def test_fixture():
    root = fresh("fixture")
    fixture_settings(root)
    p = run_fake(root)
    check("fixture: exit 0", p.returncode == 0, p.stderr.decode())
    got = cfg(root).split("\n")
    want = read(os.path.join(FIX, "grub/ubuntu-24.04-two-kernels.cfg")).split("\n")
    check("fixture: same number of lines", len(got) == len(want), f"{len(got)} != {len(want)}")
    edited = 0
    for i, (g, w) in enumerate(zip(got, want), 1):
        if g == w:
            continue
        m = re.match(r"^(\t*linux\t)(.*)$", g)
        # rt-conf's edit of the fixture: words joined by one space, " no_hz" appended.
        if m and m.group(1) + " ".join(m.group(2).split()) + " no_hz" == w:
            edited += 1
            continue
        check(f"fixture: line {i}", False, f"got:  {g!r}\n    want: {w!r}")
    check("fixture: only the 5 rt-conf-edited linux lines differ", edited == 5, f"{edited} differ")
    text = cfg(root)
    # What real grub-mkconfig writes (compare the other real fixtures): empty
    # GRUB_CMDLINE_LINUX leaves two spaces, the recovery line ends with a space.
    check("fixture: real spacing of normal entries",
          f"root=UUID={U} ro  quiet splash $vt_handoff\n" in text)
    check("fixture: real spacing of recovery entries",
          f"root=UUID={U} ro recovery nomodeset dis_ucode_ldr \n" in text)
    check("fixture: grub-script-check", script_check(os.path.join(root, "boot/grub/grub.cfg")) is not False)
    check("fixture: README in grub.d skipped", "README" not in text)
    err = p.stderr.decode()
    for line in ("Sourcing file `/etc/default/grub'", "Generating grub configuration file ...",
                 "Found linux image: /boot/vmlinuz-6.8.0-48-generic",
                 "Found initrd image: /boot/initrd.img-6.8.0-45-generic", "done"):
        check(f"fixture: stderr has {line!r}", line in err, err)
    log = read(os.path.join(root, "var/log/fake-update-grub.log"))
    check("fixture: call logged", log.startswith("update-grub\n"), log)

    # GRUB_CMDLINE_LINUX=no_hz: the recovery lines are then the fixture's, byte for byte.
    write(os.path.join(root, "etc/default/grub.d/60-nohz.cfg"), 'GRUB_CMDLINE_LINUX="no_hz"\n')
    run_fake(root)
    text = cfg(root)
    for rel in ("6.8.0-48-generic", "6.8.0-45-generic"):
        line = (f"\t\tlinux\t/boot/vmlinuz-{rel} root=UUID={U} ro recovery nomodeset dis_ucode_ldr no_hz\n")
        check(f"fixture: recovery line of {rel} with GRUB_CMDLINE_LINUX=no_hz", line in text)
    # A chmod -x script is skipped, as grub-mkconfig does.
    os.chmod(os.path.join(root, "etc/grub.d/20_memtest86+"), 0o644)
    run_fake(root)
    check("fixture: non-executable 20_memtest86+ skipped", "memtest" not in cfg(root))

    # The root's own settings: the cloud-image drop-in (console terminal, recordfail timeout 0,
    # console=tty1 console=ttyS0), no /etc/grub.d, no memtest.
    root = fresh("own-settings")
    p = run_fake(root)
    text = cfg(root)
    check("own settings: exit 0", p.returncode == 0, p.stderr.decode())
    hdr = section(text, "00_header") or ""
    check("own settings: console terminal", "terminal_input console\nterminal_output console\n" in hdr
          and "loadfont" not in hdr, hdr)
    check("own settings: GRUB_RECORDFAIL_TIMEOUT=0",
          'if [ "${recordfail}" = 1 ] ; then\n  set timeout=0\n' in hdr)
    check("own settings: command line", f"ro  console=tty1 console=ttyS0\n" in text)
    check("own settings: no $vt_handoff without splash", "$vt_handoff\n" not in text)
    check("own settings: kswap reads it", status(root) is not None)
    # No grub.cfg yet: the UUID comes from the filesystem image dev/vda1 inside the root.
    os.unlink(os.path.join(root, "boot/grub/grub.cfg"))
    run_fake(root, KSWAP_FAKE_ROOT_UUID=None)
    check("UUID from the root device image", f"'gnulinux-simple-{U}'" in cfg(root))
    run_fake(root, KSWAP_FAKE_ROOT_UUID="11111111-2222-3333-4444-555555555555")
    check("KSWAP_FAKE_ROOT_UUID wins", "'gnulinux-simple-11111111-2222-3333-4444-555555555555'" in cfg(root)
          and f"root=UUID=11111111-2222-3333-4444-555555555555 ro" in cfg(root))


# ------------------------------------------------------------------------------- 2. drop-in
def test_dropin():
    root = fresh("dropin")
    os.unlink(os.path.join(root, "etc/default/grub.d/50-cloudimg-settings.cfg"))
    write(os.path.join(root, "etc/default/grub.d/90-kswap.cfg"),
          "# kswap: boot the old kernel until the new one passed acceptance\nGRUB_DEFAULT=saved\n"
          'GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} panic=10"\n')
    p = run_fake(root)
    text = cfg(root)
    check("drop-in: exit 0", p.returncode == 0, p.stderr.decode())
    check("drop-in: default saved", 'else\n   set default="${saved_entry}"\nfi\n' in text)
    check("drop-in: no default=0", 'set default="0"' not in text)
    normal = re.findall(r"^\t*linux\t.* ro  quiet splash panic=10 \$vt_handoff$", text, re.M)
    check("drop-in: panic=10 on the 3 normal entries", len(normal) == 3, text)
    rec = re.findall(r"^\t*linux\t.*recovery nomodeset dis_ucode_ldr $", text, re.M)
    check("drop-in: recovery entries without panic=10", len(rec) == 2)
    sourced = re.findall(r"^Sourcing file `(.*)'$", p.stderr.decode(), re.M)
    check("drop-in: sourcing order (C collation: digits before letters)", sourced ==
          ["/etc/default/grub", "/etc/default/grub.d/90-kswap.cfg",
           "/etc/default/grub.d/init-select.cfg"], f"{sourced}")
    # GRUB_SAVEDEFAULT=true: savedefault after recordfail in non-recovery entries
    write(os.path.join(root, "etc/default/grub.d/95-save.cfg"), "GRUB_SAVEDEFAULT=true\n")
    run_fake(root)
    text = cfg(root)
    check("savedefault: 3 calls", len(re.findall(r"^\tsavedefault$", text, re.M)) == 3)
    check("savedefault: after recordfail",
          f"gnulinux-simple-{U}' {{\n\trecordfail\n\tsavedefault\n\tload_video\n" in text)
    # GRUB_DEFAULT as a string, GRUB_TIMEOUT_STYLE=menu, GRUB_RECORDFAIL_TIMEOUT
    write(os.path.join(root, "etc/default/grub.d/96-more.cfg"),
          f"GRUB_DEFAULT='gnulinux-advanced-{U}>gnulinux-6.8.0-45-generic-advanced-{U}'\n"
          "GRUB_TIMEOUT_STYLE=menu\nGRUB_TIMEOUT=7\nGRUB_RECORDFAIL_TIMEOUT=-1\n")
    run_fake(root)
    hdr = section(cfg(root), "00_header")
    check("string default", f'   set default="gnulinux-advanced-{U}>gnulinux-6.8.0-45-generic-advanced-{U}"\n' in hdr)
    check("menu timeout", "    set timeout_style=menu\n    set timeout=7\n  # Fallback normal timeout code"
          in hdr and "  else\n    set timeout=7\n  fi\nfi\n" in hdr, hdr)
    check("recordfail timeout -1", 'if [ "${recordfail}" = 1 ] ; then\n  set timeout=-1\n' in hdr)
    fc, err = forecast(root)
    check("string default resolves", fc == ["6.8.0-45-generic"] * 3, f"{fc} {err}")


# ------------------------------------------------------------------------------- 3. new kernel
def add_kernel(root, rel, initrd=True):
    write(os.path.join(root, f"boot/vmlinuz-{rel}"), f"fake vmlinuz {rel}\n")
    if initrd:
        write(os.path.join(root, f"boot/initrd.img-{rel}"), f"fake initrd {rel}\n")


def test_new_kernel():
    root = fresh("xanmod")
    add_kernel(root, XAN)
    p = run_fake(root)
    text = cfg(root)
    check("xanmod: exit 0", p.returncode == 0, p.stderr.decode())
    order = re.findall(r"^\tmenuentry 'Ubuntu, with Linux ([^' ]+)'", text, re.M)
    check("xanmod: submenu order", order == [XAN, "6.8.0-48-generic", "6.8.0-45-generic"], order)
    top = re.search(r"^menuentry 'Ubuntu' .*?^}", text, re.M | re.S).group(0)
    check("xanmod: top entry boots it", f"\tlinux\t/boot/vmlinuz-{XAN} root=UUID={U} ro " in top
          and f"\tinitrd\t/boot/initrd.img-{XAN}\n" in top, top)
    check("xanmod: grub-script-check", script_check(os.path.join(root, "boot/grub/grub.cfg")) is not False)
    fc, err = forecast(root)
    check("xanmod: GRUB_DEFAULT=0 boots the newest", fc == [XAN] * 3, f"{fc} {err}")
    adv = f"gnulinux-advanced-{U}"
    for rel in (XAN, "6.8.0-48-generic", "6.8.0-45-generic"):
        path = f"{adv}>gnulinux-{rel}-advanced-{U}"
        fc, err = forecast(root, f"next_entry={path}")
        check(f"xanmod: one-shot {rel} (forecast-tool)", fc == [rel, XAN, XAN], f"{fc} {err}")
        st = status(root)
        boots = (st or {}).get("grub", {}).get("forecast", [])
        check(f"xanmod: one-shot {rel} (kswap status)",
              len(boots) == 3 and boots[0]["kernel"] == rel and boots[0]["id_path"] == path
              and boots[0]["one_shot"] and boots[1]["kernel"] == XAN, json.dumps(boots)[:400])
        rpath = f"{adv}>gnulinux-{rel}-recovery-{U}"
        fc, err = forecast(root, f"next_entry={rpath}")
        check(f"xanmod: recovery path {rel}", fc and fc[0] == rel, f"{fc} {err}")
    # kswap's setup: GRUB_DEFAULT=saved, saved_entry = old kernel, next_entry = new kernel
    write(os.path.join(root, "etc/default/grub.d/90-kswap.cfg"),
          'GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} panic=10"\n')
    run_fake(root)
    old = f"{adv}>gnulinux-6.8.0-48-generic-advanced-{U}"
    new = f"{adv}>gnulinux-{XAN}-advanced-{U}"
    fc, err = forecast(root, f"saved_entry={old}", f"next_entry={new}")
    check("xanmod: armed trial: new once, then old", fc == [XAN, "6.8.0-48-generic", "6.8.0-48-generic"],
          f"{fc} {err}")
    st = status(root)
    boots = (st or {}).get("grub", {}).get("forecast", [])
    check("xanmod: kswap status agrees", [b["kernel"] for b in boots] ==
          [XAN, "6.8.0-48-generic", "6.8.0-48-generic"], json.dumps(boots)[:400])

    # Version sort, .old, leftovers, links, a kernel without initrd (root=/dev/vda1).
    root = fresh("sort")
    add_kernel(root, "6.8.0-100-generic")
    add_kernel(root, "6.8.0-9-generic")
    add_kernel(root, "6.8.0-48-generic.old", initrd=False)
    add_kernel(root, "5.15.0-1-generic", initrd=False)
    write(os.path.join(root, "boot/vmlinuz-6.9.0-1-generic.dpkg-tmp"), "x\n")
    write(os.path.join(root, "boot/vmlinuz-6.9.0-2-generic.sig"), "x\n")
    os.symlink("vmlinuz-missing", os.path.join(root, "boot/vmlinuz-7.0.0-1-generic"))
    os.symlink("vmlinuz-6.8.0-45-generic", os.path.join(root, "boot/vmlinuz-6.8.0-45-link"))
    run_fake(root)
    text = cfg(root)
    order = re.findall(r"^\tmenuentry 'Ubuntu, with Linux ([^' ]+)'", text, re.M)
    want = ["6.8.0-100-generic", "6.8.0-48-generic", "6.8.0-48-generic.old", "6.8.0-45-link",
            "6.8.0-45-generic", "6.8.0-9-generic", "5.15.0-1-generic"]
    check("sort: sort -V -r, .old after its kernel, leftovers and dangling links skipped",
          order == want, f"{order}")
    check("sort: .old uses the initrd of its kernel",
          "\t\tinitrd\t/boot/initrd.img-6.8.0-48-generic\n" in
          re.search(r"'gnulinux-6\.8\.0-48-generic\.old-advanced-.*?\n\t}", text, re.S).group(0))
    check("sort: no initrd: root=/dev/vda1, no initrd line",
          "\t\tlinux\t/boot/vmlinuz-5.15.0-1-generic root=/dev/vda1 ro " in text and
          "initrd.img-5.15.0-1-generic" not in text)


# ------------------------------------------------------------------------------- 4. the rest
def test_flat():
    root = fresh("flat")
    add_kernel(root, XAN)
    write(os.path.join(root, "etc/default/grub.d/70-flat.cfg"), "GRUB_DISABLE_SUBMENU=true\n")
    run_fake(root)
    text = cfg(root)
    check("flat: no submenu", "submenu " not in text)
    check("flat: no simple entry (10_linux writes it only with the submenu)",
          "gnulinux-simple-" not in text)
    ids = re.findall(r"^menuentry '[^']*' .* '(gnulinux-[^']*)' \{$", text, re.M)
    want = []
    for rel in (XAN, "6.8.0-48-generic", "6.8.0-45-generic"):
        want += [f"gnulinux-{rel}-advanced-{U}", f"gnulinux-{rel}-recovery-{U}"]
    check("flat: same ids at top level", ids == want, f"{ids}")
    check("flat: one tab indentation", f"\n\trecordfail\n\tload_video\n\tgfxmode $linux_gfx_mode\n" in text)
    for rel in (XAN, "6.8.0-45-generic"):
        fc, err = forecast(root, f"next_entry=gnulinux-{rel}-advanced-{U}")
        check(f"flat: one-shot {rel}", fc == [rel, XAN, XAN], f"{fc} {err}")
    write(os.path.join(root, "etc/default/grub.d/71-norec.cfg"), 'GRUB_DISABLE_RECOVERY="true"\n')
    run_fake(root)
    check("GRUB_DISABLE_RECOVERY", "recovery" not in section(cfg(root), "10_linux"))


def test_separate_boot():
    # The layout of Ubuntu 24.04's server installer: / on LVM, /boot on its own ext4, EFI.
    # Byte for byte the real test/fixtures/grub/ubuntu-24.04-server-efi-lvm-root-separate-boot.cfg.
    root = fresh("lvm-boot")
    os.unlink(os.path.join(root, "etc/default/grub.d/50-cloudimg-settings.cfg"))
    os.unlink(os.path.join(root, "boot/grub/grub.cfg"))
    for a, b in (("vmlinuz-6.8.0-45-generic", "vmlinuz-6.8.0-47-generic"),
                 ("initrd.img-6.8.0-45-generic", "initrd.img-6.8.0-47-generic")):
        os.rename(os.path.join(root, "boot", a), os.path.join(root, "boot", b))
    mi = os.path.join(root, "proc/self/mountinfo")
    text = re.sub(r"(?m)^28 1 252:1 / / .*$",
                  "28 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/ubuntu--vg-ubuntu--lv rw",
                  read(mi)) + "41 28 252:2 / /boot rw,relatime shared:30 - ext4 /dev/vda2 rw\n"
    write(mi, text)
    os.makedirs(os.path.join(root, "sys/firmware/efi"))
    write(os.path.join(root, "boot/memtest86+x64.efi"), "fake memtest\n")
    p = run_fake(root, KSWAP_FAKE_ROOT_UUID="d1c56d78-5745-408e-abf0-505cca2e2162",
                 KSWAP_FAKE_BOOT_UUID="a30dc3a1-6a7c-4205-88aa-a78853baf7f6")
    want = read(os.path.join(FIX, "grub/ubuntu-24.04-server-efi-lvm-root-separate-boot.cfg"))
    got = cfg(root)
    check("lvm + /boot: equal to the real 24.04 server grub.cfg", p.returncode == 0 and got == want,
          "".join(__import__("difflib").unified_diff(want.splitlines(True), got.splitlines(True)))[:3000])
    # Second run: the UUIDs come from the grub.cfg just written.
    run_fake(root)
    check("lvm + /boot: UUIDs kept from the existing grub.cfg", cfg(root) == want)

    # /boot on btrfs: Ubuntu's recordfail marker, paths relative to /boot.
    root = fresh("boot-btrfs", "boot-btrfs")
    run_fake(root)
    text = cfg(root)
    check("boot on btrfs: recordfail marker",
          "  # GRUB lacks write support for btrfs, so recordfail support is disabled.\n}\n" in text)
    check("boot on btrfs: kernel paths relative to /boot, insmod btrfs",
          "\tlinux\t/vmlinuz-6.8.0-48-generic root=UUID=" in text and "\tinsmod btrfs\n" in text)
    root = fresh("boot-mdraid", "boot-mdraid")
    run_fake(root)
    check("boot on mdraid: diskfilter marker",
          "# GRUB lacks write support for diskfilter, so recordfail support is disabled." in cfg(root))


def test_force_partuuid():
    # An Ubuntu cloud image on AWS (initrd-less boot): the real 22.04 grub.cfg
    # ubuntu-22.04-aws-force-partuuid-two-kernels.cfg. Its GRUB is 2.06: 30_uefi-firmware
    # decided at update-grub time there (nothing on BIOS), at boot time in 2.12; the rest
    # must be equal byte for byte.
    U22 = "b78b2f9f-3a08-427a-ad4e-4a04f235761c"
    root = fresh("aws")
    for n in os.listdir(os.path.join(root, "boot")):
        if n.startswith(("vmlinuz-", "initrd.img-")):
            os.unlink(os.path.join(root, "boot", n))
    os.unlink(os.path.join(root, "boot/grub/grub.cfg"))
    for k in ("5.15.0-1028-aws", "5.15.0-1026-aws"):
        add_kernel(root, k)
    write(os.path.join(root, "boot/microcode.cpio"), "early\n")
    write(os.path.join(root, "etc/default/grub.d/50-cloudimg-settings.cfg"),
          "GRUB_RECORDFAIL_TIMEOUT=0\nGRUB_TIMEOUT=0\n"
          'GRUB_CMDLINE_LINUX_DEFAULT="console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295"\n'
          "GRUB_TERMINAL=console\n")
    write(os.path.join(root, "etc/default/grub.d/40-force-partuuid.cfg"),
          "GRUB_FORCE_PARTUUID=5685b7d3-4911-4237-9405-e73d2d78ca3e\n")
    for s in ("00_header", "01_track_initrdless_boot_fallback", "05_debian_theme", "10_linux",
              "10_linux_zfs", "20_linux_xen", "30_os-prober", "30_uefi-firmware", "35_fwupd",
              "41_custom"):
        write(os.path.join(root, "etc/grub.d", s), "#!/bin/sh\n", 0o755)
    write(os.path.join(root, "etc/grub.d/40_custom"),
          "#!/bin/sh\nexec tail -n +3 $0\n# This file provides an easy way to add custom menu "
          "entries.  Simply type the\n# menu entries you want to add after this comment.  Be "
          "careful not to change\n# the 'exec tail' line above.\n", 0o755)
    p = run_fake(root, KSWAP_FAKE_ROOT_UUID=U22)
    got = cfg(root)
    want = read(os.path.join(FIX, "grub/ubuntu-22.04-aws-force-partuuid-two-kernels.cfg"))
    uefi = section(got, "30_uefi-firmware")
    check("force-partuuid: equal to the real AWS grub.cfg but for 2.12's 30_uefi-firmware",
          p.returncode == 0 and uefi and got.replace(uefi, "", 1) == want,
          "".join(__import__("difflib").unified_diff(want.splitlines(True), got.splitlines(True)))[:3000])
    adv = f"gnulinux-advanced-{U22}"
    fc, err = forecast(root, f"next_entry={adv}>gnulinux-5.15.0-1026-aws-advanced-{U22}")
    check("force-partuuid: one-shot resolves", fc == ["5.15.0-1026-aws"] + ["5.15.0-1028-aws"] * 2,
          f"{fc} {err}")


def test_debian():
    root = fresh("debian", "debian-12-kvm")
    before = cfg(root)
    p = run_fake(root)
    check("debian: exit 0", p.returncode == 0, p.stderr.decode())
    text = cfg(root)
    check("debian: equal to the root's grub.cfg (debian-12.grub.cfg.in)", text == before,
          "".join(l for l in __import__("difflib").unified_diff(before.splitlines(True),
                                                                 text.splitlines(True)))[:3000])
    check("debian: title", "menuentry 'Debian GNU/Linux' --class debian" in text)
    check("debian: no recordfail", "recordfail" not in text and "initrdfail" not in text)
    add_kernel(root, "6.1.0-30-amd64")
    run_fake(root)
    fc, err = forecast(root, "saved_entry=gnulinux-advanced-{0}>gnulinux-6.1.0-28-amd64-advanced-{0}".format(
        re.search(r"gnulinux-simple-(\S+)'", text).group(1)))
    check("debian: saved_entry keeps the old kernel", fc == ["6.1.0-28-amd64"] * 3, f"{fc} {err}")


def test_failures():
    root = fresh("fail")
    before = cfg(root)
    p = run_fake(root, KSWAP_FAKE_UPDATE_GRUB_FAIL="1")
    check("FAIL: exit 1", p.returncode == 1)
    check("FAIL: error line", b"error" in p.stderr, p.stderr.decode())
    check("FAIL: grub.cfg untouched", cfg(root) == before)
    check("FAIL: logged", read(os.path.join(root, "var/log/fake-update-grub.log")) == "update-grub\n")

    try:
        run_fake(root, timeout=3, KSWAP_FAKE_UPDATE_GRUB_HANG="1")
        check("HANG: still running after 3 s", False)
    except subprocess.TimeoutExpired:
        check("HANG: still running after 3 s", True)
    check("HANG: grub.cfg untouched", cfg(root) == before)

    p = run_fake(root, KSWAP_FAKE_UPDATE_GRUB_GARBAGE="1")
    check("GARBAGE: exit 0 (the damage is silent)", p.returncode == 0)
    text = cfg(root)
    check("GARBAGE: grub.cfg changed and cut short", text != before and not text.endswith("}\n"))
    ok = script_check(os.path.join(root, "boot/grub/grub.cfg"))
    check("GARBAGE: grub-script-check rejects it", ok is not True)
    fc, err = forecast(root)
    check("GARBAGE: kswap's parser rejects it", fc is None, f"{fc}")

    root = fresh("missing")
    add_kernel(root, XAN)
    p = run_fake(root, KSWAP_FAKE_UPDATE_GRUB_GARBAGE="missing")
    text = cfg(root)
    check("GARBAGE=missing: exit 0, valid, newest kernel absent", p.returncode == 0 and
          script_check(os.path.join(root, "boot/grub/grub.cfg")) is not False and
          XAN not in text and "gnulinux-6.8.0-48-generic-advanced-" in text)
    fc, err = forecast(root, f"next_entry=gnulinux-advanced-{U}>gnulinux-{XAN}-advanced-{U}")
    check("GARBAGE=missing: the new kernel's path does not resolve (GRUB falls back)",
          fc is not None and XAN not in fc, f"{fc} {err}")

    # Refusals: no KSWAP_ROOT, KSWAP_ROOT=/ (and a path that resolves to /).
    stamp = os.stat("/boot/grub/grub.cfg").st_mtime_ns if os.path.exists("/boot/grub/grub.cfg") else None
    p = run_fake(None)
    check("refuses without KSWAP_ROOT", p.returncode == 1 and b"KSWAP_ROOT is not set" in p.stderr)
    for r in ("/", "/tmp/../"):
        p = run_fake(r)
        check(f"refuses KSWAP_ROOT={r}", p.returncode == 1 and b"refusing" in p.stderr, p.stderr.decode())
    root = os.path.join(work, "escape", "root")
    os.makedirs(os.path.join(root, "var/log"))
    os.symlink(os.path.join(work, "outside"), os.path.join(root, "boot"))
    p = run_fake(root)
    check("refuses a boot/ that leads outside the root", p.returncode == 1 and
          not os.path.exists(os.path.join(work, "outside")), p.stderr.decode())
    now = os.stat("/boot/grub/grub.cfg").st_mtime_ns if os.path.exists("/boot/grub/grub.cfg") else None
    check("this machine's grub.cfg untouched", stamp == now)

    # Settings that fail to source: exit 1, grub.cfg untouched.
    root = fresh("badsettings")
    before = cfg(root)
    write(os.path.join(root, "etc/default/grub.d/99-bad.cfg"), "GRUB_DEFAULT=\"unterminated\n")
    p = run_fake(root)
    check("bad settings: exit 1, grub.cfg untouched", p.returncode == 1 and cfg(root) == before,
          p.stderr.decode())

    # The fake apt-get's hook runs this fake after an install.
    root = fresh("apt-hook")
    add_kernel(root, XAN)
    p = subprocess.run([os.path.join(HERE, "apt-get"), "remove", "-y", "no-such-package"],
                       env=env_for(root), capture_output=True)
    check("apt-get hook runs update-grub", p.returncode == 0 and
          f"gnulinux-{XAN}-advanced-" in cfg(root), (p.stdout + p.stderr).decode())


def main():
    missing = [t for t in ("grub-editenv", "sort") if not shutil.which(t)]
    if missing:
        print(f"SKIP: {' '.join(missing)} not installed")
        return 77
    try:
        for t in (test_fixture, test_dropin, test_new_kernel, test_flat, test_separate_boot,
                  test_force_partuuid,
                  test_debian, test_failures):
            t()
    finally:
        if os.environ.get("KEEP"):
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{checks} checks, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
