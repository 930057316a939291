# SPDX-License-Identifier: GPL-2.0-or-later
"""Layer 2, disk-[PLATFORM-]LAYOUT-KEY.img: a layout's tree plus kswap (meson install), the
test's files (guestfiles.py), an MBR disk with GRUB for BIOS (boot.img + core.img, as
test/grub/qemu-grub.py) or a GPT disk with an EFI system partition for UEFI; ext4 root (layout
btrfs: /boot on its own btrfs partition; smallboot: its own 160 MiB ext4). One first boot
inside qemu runs the real update-grub and powers off."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import kstest
import vmplatform

from . import common, guestfiles, initrd, layers
from .common import CACHE, Lock, log, run, sha, skip, tree_hash
from .guestfiles import BOOT_UUID, ROOT_UUID

PART_OFFSET = 1 << 20
UEFI_RECIPE = "uefi 2"          # bump when only the uefi disk's recipe changes
BOOT_PART_RECIPE = "boot part 2"  # bump when only the recipe of /boot's own partition changes


def stage_kswap(tmp):
    build = os.environ.get("KS_BUILD_ROOT")
    if not build:
        skip("KS_BUILD_ROOT is not set (run through meson test, or set it to a build dir)")
    stage = os.path.join(tmp, "stage")
    r = subprocess.run(["meson", "install", "-C", build, "--destdir", stage, "--no-rebuild",
                        "--quiet"], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
        sys.exit(1)  # a broken build is a real failure, not an environment problem
    return stage


def du_mib(d):
    return int(run("du", "-sxm", d).stdout.split()[0])


def grub_mkimage(root, tmp, target, out, early, prefix, modules):
    """The image's own grub-mkimage (chroot) with the image's modules: GRUB 2.12 on trixie."""
    inside = os.path.join(root, "tmp", "kswap-vm-mkimage")
    os.makedirs(inside)
    shutil.copy(early, os.path.join(inside, "early.cfg"))
    run("chroot", root, "grub-mkimage", "-O", target, "-d", f"/usr/lib/grub/{target}",
        "-o", "/tmp/kswap-vm-mkimage/core", "-c", "/tmp/kswap-vm-mkimage/early.cfg",
        "-p", prefix, *modules)
    shutil.move(os.path.join(inside, "core"), out)
    shutil.rmtree(inside)


CORE_MODULES = ["normal", "configfile", "echo", "test", "loadenv", "serial", "terminal", "search",
                "search_fs_uuid", "linux", "boot", "gzio", "ext2"]


# Layouts with /boot on its own partition (p1; / is p2): its file system and size. btrfs: GRUB
# cannot write its environment block there (apply refuses). smallboot (issue 18): a small ext4
# /boot with room for OLD, GRUB and a little more than plan's estimate of a new kernel (120 MiB):
# scenario boot-full fills it in the middle of the install.
BOOT_PART_FS = {"btrfs": "btrfs", "smallboot": "ext4"}
BOOT_PART_MIB = {"btrfs": 384, "smallboot": 160}


def make_disk(root, tmp, layout, img, pf, old=None, extra_mib=0):
    """root: the image tree. ext4: one ext4 partition. btrfs: p1 btrfs /boot, p2 ext4 /.
    smallboot: p1 a 160 MiB ext4 /boot, p2 ext4 /.
    uefi (ext4 only): GPT, p1 the ESP (vfat, /boot/efi), p2 ext4 /. old: the kernel of the
    first boot (default the platform's OLD); extra_mib: more room on the root file system."""
    old = old or pf.old
    grubdir_rel = "boot/grub"
    moddir = os.path.join(root, "usr/lib/grub", pf.grub_target)
    mods = os.path.join(root, grubdir_rel, pf.grub_target)
    os.makedirs(mods, exist_ok=True)
    # what grub-install copies: the platform's modules in /boot/grub/TARGET
    for n in os.listdir(moddir):
        if n.endswith(".mod") or n.endswith(".lst") or n.endswith(".img"):
            shutil.copy(os.path.join(moddir, n), mods)
    run("grub-editenv", os.path.join(root, grubdir_rel, "grubenv"), "create")
    core = os.path.join(tmp, "core.img")
    early = os.path.join(tmp, "early.cfg")
    with open(early, "w") as f:
        f.write("serial --unit=0 --speed=115200\nterminal_input serial\nterminal_output serial\n")
    prefix = "(hd0,msdos1)/boot/grub" if layout == "ext4" else "(hd0,msdos1)/grub"
    fstab = f"UUID={ROOT_UUID} / ext4 errors=remount-ro 0 1\n"
    if layout in BOOT_PART_FS:
        # udev's device for it (btrfs: after the module's raid6 and xor benchmarks) came after
        # systemd's 90 s on a busy machine under TCG and the boot went to emergency mode
        fstab += (f"UUID={BOOT_UUID} /boot {BOOT_PART_FS[layout]} "
                  "defaults,x-systemd.device-timeout=600 0 2\n")
    if pf.firmware == "uefi":
        # As Debian's installer writes it, but with a device timeout for TCG on a busy machine:
        # udev took longer than systemd's 90 s here and the boot went to emergency mode.
        fstab += (f"UUID={vmplatform.esp_fstab_uuid()} /boot/efi vfat "
                  "umask=0077,x-systemd.device-timeout=600 0 1\n")
        os.makedirs(os.path.join(root, "boot/efi"), exist_ok=True)
    with open(os.path.join(root, "etc/fstab"), "w") as f:
        f.write(fstab)
    with open(os.path.join(root, grubdir_rel, "grub.cfg"), "w") as f:
        f.write(guestfiles.first_grub_cfg("/boot" if layout == "ext4" else "", old))
    if pf.firmware == "uefi":
        if layout != "ext4":
            raise ValueError("the uefi platform has the ext4 layout only")
        # As grub-install --target=x86_64-efi leaves it (Debian): grubx64.efi whose prefix is
        # the ESP's EFI/debian, where grub.cfg hands over to /boot/grub on the root file system.
        # OVMF's fresh variables have no boot entry: the same binary on the fallback path.
        grub_mkimage(root, tmp, "x86_64-efi", core, early, "/EFI/debian",
                     CORE_MODULES + ["part_gpt", "fat", "efi_gop"])
        stub = os.path.join(tmp, "esp-grub.cfg")
        with open(stub, "w") as f:
            f.write(f"search.fs_uuid {ROOT_UUID} root\nset prefix=($root)'/boot/grub'\n"
                    "configfile $prefix/grub.cfg\n")
        esp = os.path.join(tmp, "esp.part")
        vmplatform.make_esp(esp, {"EFI/debian/grubx64.efi": core, "EFI/debian/grub.cfg": stub,
                                  "EFI/BOOT/BOOTX64.EFI": core})
        root_mib = du_mib(root) * 13 // 10 + 400 + extra_mib
        total = 1 + vmplatform.ESP_MIB + root_mib + 1
        with open(img, "wb") as f:
            f.truncate(total << 20)
        table, off2 = vmplatform.gpt_layout(total)
        run("sfdisk", "-q", img, input=table)
        with open(esp, "rb") as src, open(img, "r+b") as dst:
            dst.seek(PART_OFFSET)
            shutil.copyfileobj(src, dst, 1 << 20)
        os.unlink(esp)
        run("mkfs.ext4", "-q", "-F", "-U", ROOT_UUID, "-E", f"offset={off2}", "-d", root,
            img, f"{root_mib << 10}k")
        return
    grub_mkimage(root, tmp, "i386-pc", core, early, prefix,
                 CORE_MODULES + ["biosdisk", "part_msdos", "btrfs"])
    root_mib = du_mib(root) * 13 // 10 + 400 + extra_mib
    if layout == "ext4":
        total = root_mib + 2
        with open(img, "wb") as f:
            f.truncate(total << 20)
        run("sfdisk", "-q", img, input=b"2048,,83,*\n")
        run("mkfs.ext4", "-q", "-F", "-U", ROOT_UUID, "-E", f"offset={PART_OFFSET}", "-d", root,
            img, f"{(total - 1) << 10}k")
    else:
        bootdir = os.path.join(tmp, "bootfs")
        shutil.move(os.path.join(root, "boot"), bootdir)
        os.makedirs(os.path.join(root, "boot"))
        boot_mib = BOOT_PART_MIB[layout]
        root_mib = du_mib(root) * 13 // 10 + 300
        total = 1 + boot_mib + root_mib + 1
        with open(img, "wb") as f:
            f.truncate(total << 20)
        run("sfdisk", "-q", img,
            input=f"2048,{boot_mib * 2048},83,*\n{2048 + boot_mib * 2048},,83\n".encode())
        part = os.path.join(tmp, "boot.part")
        with open(part, "wb") as f:
            f.truncate(boot_mib << 20)
        if layout == "btrfs":
            run("mkfs.btrfs", "-q", "-f", "-U", BOOT_UUID, "-r", bootdir, part)
        else:
            # no blocks reserved for root: what df shows free is what dpkg can write
            run("mkfs.ext4", "-q", "-F", "-m", "0", "-U", BOOT_UUID, "-d", bootdir, part)
        with open(part, "rb") as src, open(img, "r+b") as dst:
            dst.seek(PART_OFFSET)
            shutil.copyfileobj(src, dst, 1 << 20)
        os.unlink(part)
        off2 = PART_OFFSET + (boot_mib << 20)
        run("mkfs.ext4", "-q", "-F", "-U", ROOT_UUID, "-E", f"offset={off2}", "-d", root,
            img, f"{root_mib << 10}k")
    kstest.write_grub_boot_sectors(img, core, moddir, PART_OFFSET)


def build_disk(pf, layout):
    """The disk of layout on platform pf (built, or found in the cache): its path."""
    lay = layers.LAYOUTS[layout]
    if not lay.available(pf):
        raise ValueError(f"the {layout} layout does not exist on {pf.name}")
    os.makedirs(CACHE, exist_ok=True)
    # one lock per suite's root tree (two suites' mmdebstrap may run side by side), one for disks
    with Lock(os.path.join(CACHE, f"lock-rootfs-{pf.suite}")):
        tar, key1 = layers.build_rootfs(pf)
    with Lock(os.path.join(CACHE, "lock")):
        tree = layers.layout_tree(pf, layout, tar, key1)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            stage = stage_kswap(tmp)
            files = guestfiles.vm_files(pf, tree.old)
            if lay.files:
                files.update(lay.files(pf))
            key = sha(tree.key, pf.name, layout, tree_hash(stage),
                      json.dumps(sorted((k, v) for k, v in files.items())),
                      guestfiles.first_grub_cfg("", tree.old), layers.RECIPE, vmplatform.ESP_MIB,
                      *([UEFI_RECIPE] if pf.firmware == "uefi" else []),
                      *([BOOT_PART_RECIPE] if lay.fs in BOOT_PART_FS else []),
                      *([f"extra {tree.extra_mib}"] if tree.extra_mib else []))
            img = os.path.join(CACHE, f"disk-{pf.tag}{layout}-{key}.img")
            if os.path.exists(img):
                return img
            t0 = time.monotonic()
            log(f"building the {pf.name} {layout} disk (key {key})")
            root = os.path.join(tmp, "root")
            os.makedirs(root)
            run("tar", "-C", root, "-xpf", tree.tar)
            # kswap as meson installs it: /usr/local/sbin/kswap, the unit in /lib/systemd/system.
            subprocess.run(f"tar -C {stage} -cf - . | tar -C {root} -xpf - --keep-directory-symlink",
                           shell=True, check=True)
            for rel, (mode, text) in files.items():
                p = os.path.join(root, rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "w") as f:
                    f.write(text)
                os.chmod(p, mode)
            kdir = os.path.join(root, "var/lib/kswap-vm")
            debs = [n for n in os.listdir(kdir)
                    if n.startswith(f"linux-image-{pf.new}_") and n.endswith(".deb")]
            if tree.start_deb:
                # The repo disk installs NEW from the repository only: no package of it here.
                for n in debs:
                    os.unlink(os.path.join(kdir, n))
            elif not debs:
                # NEW's package, for apply --deb (the same release as the installed one), came
                # with the root tree.
                print(f"FAIL: the {pf.suite} root tree {tree.tar} has no "
                      f"linux-image-{pf.new}_*.deb in /var/lib/kswap-vm (remove it to rebuild)",
                      flush=True)
                sys.exit(1)
            else:
                # NEW's initrd without the root disk's driver, for the "kernel that dies".
                initrd.broken_initrd(os.path.join(root, f"boot/initrd.img-{pf.new}"), tmp,
                                     os.path.join(root, "usr/local/lib/kswap-vm/initrd-broken.img"),
                                     pf.new)
            run("systemctl", f"--root={root}", "enable", "kswap-accept.service",
                "kswap-vm-early.service", "kswap-vm-firstboot.service", "kswap-vm.service",
                "vm-app.service", "vm-listen.socket", *lay.enable)
            run("systemctl", f"--root={root}", "mask", "serial-getty@ttyS0.service",
                "getty.target", "apt-daily.timer", "apt-daily-upgrade.timer")
            # root without a password is not needed: nobody logs in.
            part_img = img + ".tmp"
            make_disk(root, tmp, lay.fs, part_img, pf, tree.old, tree.extra_mib)
            t1 = time.monotonic()
            log(f"disk files: {t1 - t0:.0f} s; first boot (update-grub)")
            serial = os.path.join(tmp, "firstboot.log")
            with open(serial, "wb") as out:
                p = subprocess.Popen(pf.qemu(tmp) + ["-serial", "stdio", "-no-reboot", "-drive",
                                                     f"file={part_img},format=raw,if=virtio"],
                                     stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                try:
                    p.wait(timeout=common.BOOT_TIMEOUT)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            text = open(serial, "rb").read().decode(errors="replace")
            shutil.copy(serial, os.path.join(CACHE, f"firstboot-{pf.tag}{layout}.log"))
            if "KSWAP-VM FIRSTBOOT OK" not in text:
                # The packages are there: a first boot that fails is the recipe's or kswap's
                # fault (its unit is enabled in the image), not the environment's.
                sys.stdout.write(text[-6000:])
                os.unlink(part_img)
                print(f"FAIL: the first boot of the new image failed (serial log "
                      f"{CACHE}/firstboot-{pf.tag}{layout}.log)", flush=True)
                sys.exit(1)
            os.rename(part_img, img)
            log(f"{pf.name} {layout} disk ready: {time.monotonic() - t0:.0f} s "
                f"(first boot {time.monotonic() - t1:.0f} s)")
            # Old disks of this layout are stale now.
            for n in os.listdir(CACHE):
                if n.startswith(f"disk-{pf.tag}{layout}-") and n != os.path.basename(img):
                    os.unlink(os.path.join(CACHE, n))
            return img
