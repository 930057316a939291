# SPDX-License-Identifier: GPL-2.0-or-later
"""The image's trees, each cached as a tar under the cache and keyed by its inputs.

Layer 1, rootfs-SUITE-KEY.tar: mmdebstrap minbase of the suite with systemd, both kernels,
GRUB's files for both firmwares (grub2-common, grub-pc-bin, grub-efi-amd64-bin), initrds made
with MODULES=list plus a hook adding virtio_pci, virtio_blk and ext4; the mirror lines are this
machine's apt sources (Debian ones only), NEW's .deb kept for apply --deb.

Layouts: how a disk is cut (fs: ext4, btrfs, smallboot) and which tree it carries. ext4, btrfs
and smallboot carry layer 1 as it is; the others a tree made from it (a second layer):
  repo   vmrepo.py: the tree runs REPO_OLD (the kernel before OLD), OLD and NEW purged;
  fleet  vmfleet.py: openssh-server, python3, cloud-init and networkd with DHCP;
  vpn    vpn.py: a VPN node (WireGuard, nftables, CAKE, haproxy, Docker, sshd on a socket),
         on Debian 12 and 13; its disk adds the test's own files (vpn.test_files);
  effect sc_effect.py: iproute2 and iperf3 for the traffic of scenario effect."""
import os
import subprocess
import sys
import tempfile
import time

from . import common, guestfiles, platforms, sc_effect, vpn
from .common import CACHE, log, sha, skip

import vmfleet
import vmrepo

RECIPE = "kswap-vm recipe 3"   # bump when the disk recipe (disk.make_disk, build_disk) changes
# Room for the two kernels apt installs on the repo disk (about 410 MB each unpacked).
REPO_EXTRA_MIB = 900


def build_rootfs(pf):
    """Layer 1 of the platform's suite: (tar, key)."""
    mirrors = pf.mirrors
    if not mirrors:
        skip("no Debian bookworm lines in /etc/apt/sources.list*")
    key = sha(RECIPE, pf.suite, *pf.packages, *mirrors, guestfiles.INITRAMFS_CONF,
              guestfiles.INITRAMFS_HOOK)
    tar = os.path.join(CACHE, f"rootfs-{pf.suite}-{key}.tar")
    if os.path.exists(tar):
        return tar, key
    platforms.check_mirror(mirrors)
    log(f"building the {pf.suite} root tree with mmdebstrap ({pf.old}, {pf.new}): a few minutes")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        init = os.path.join(tmp, "initramfs-tools")
        os.makedirs(init + "/conf.d")
        os.makedirs(init + "/hooks")
        with open(init + "/conf.d/kswap-vm.conf", "w") as f:
            f.write(guestfiles.INITRAMFS_CONF)
        with open(init + "/hooks/kswap-vm-virtio", "w") as f:
            f.write(guestfiles.INITRAMFS_HOOK)
        os.chmod(init + "/hooks/kswap-vm-virtio", 0o755)
        out = os.path.join(tmp, "rootfs.tar")
        # NEW's .deb as apt fetched it from the suite (for apply --deb) stays in the tree.
        cmd = ["mmdebstrap", "--variant=minbase", "--include=" + ",".join(pf.packages),
               "--essential-hook=mkdir -p \"$1/etc/initramfs-tools\"",
               f"--essential-hook=sync-in {init} /etc/initramfs-tools",
               f"--customize-hook=test -s \"$1/boot/initrd.img-{pf.old}\"",
               f"--customize-hook=test -s \"$1/boot/initrd.img-{pf.new}\"",
               "--customize-hook=mkdir -p \"$1/var/lib/kswap-vm\"",
               f"--customize-hook=cp \"$1\"/var/cache/apt/archives/linux-image-{pf.new}_*.deb "
               "\"$1/var/lib/kswap-vm/\"",
               "--customize-hook=rm -rf \"$1/var/cache/apt/archives\"/*.deb",
               pf.suite, out] + mirrors
        try:
            r = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=common.MMDEBSTRAP_TIMEOUT)
        except subprocess.TimeoutExpired:
            skip(f"mmdebstrap took more than {common.MMDEBSTRAP_TIMEOUT} s (a slow mirror?)")
        if r.returncode != 0:
            sys.stdout.write(r.stderr[-4000:])
            skip(f"mmdebstrap failed (exit {r.returncode}); see the log above")
        os.rename(out, tar)
    log(f"root tree: {time.monotonic() - t0:.0f} s, {os.path.getsize(tar) >> 20} MiB")
    return tar, key


class Tree:
    """What a layout's disk starts from: the tree's tar and key, the kernel of its first boot,
    the kernel package the first boot runs from when it is not layer 1's (repo), and the room
    the disk needs besides the tree."""

    def __init__(self, tar, key, old, start_deb=None, extra_mib=0):
        self.tar, self.key, self.old = tar, key, old
        self.start_deb, self.extra_mib = start_deb, extra_mib


def _repo_tree(pf, tar, key):
    if not platforms.REPO_OLD:
        skip(f"this machine's apt lists offer no kernel older than {platforms.OLD} to start on")
    start_deb = vmrepo.kernel_deb(CACHE, platforms.REPO_OLD)
    if not start_deb:
        skip(f"apt-get download linux-image-{platforms.REPO_OLD} failed")
    t_k = time.monotonic()
    tar, key = vmrepo.start_tree(CACHE, tar, key, start_deb,
                                 [f"linux-image-{platforms.OLD}", f"linux-image-{platforms.NEW}"])
    log(f"the repo tree ({platforms.REPO_OLD} installed, {platforms.OLD} and {platforms.NEW} "
        f"purged): {time.monotonic() - t_k:.0f} s")
    return Tree(tar, key, platforms.REPO_OLD, start_deb, REPO_EXTRA_MIB)


def _fleet_tree(pf, tar, key):
    t_k = time.monotonic()
    try:
        tar, key = vmfleet.tree(CACHE, tar, key)
    except vmfleet.LayerError as e:
        skip(str(e))
    log(f"the fleet tree ({' '.join(vmfleet.PACKAGES)}): {time.monotonic() - t_k:.0f} s")
    return Tree(tar, key, pf.old)


def _vpn_tree(pf, tar, key):
    t_k = time.monotonic()
    tar, key = vpn.tree(CACHE, pf, tar, key)
    log(f"the {pf.suite} vpn tree: {time.monotonic() - t_k:.0f} s")
    return Tree(tar, key, pf.old)


# The first boot's NIC for a layout with nic: qemu's user network as the scenarios have it
# (cli.nic_args, without the forwarded port), before the drives as there (the same PCI slot,
# so the same interface name).
DISK_NIC = ["-nic", "user,restrict=on,model=virtio-net-pci"]


def _effect_tree(pf, tar, key):
    tar, key = sc_effect.tree(CACHE, pf, tar, key)
    return Tree(tar, key, pf.old)


class Layout:
    """fs: the disk's cut (disk.make_disk); tree: layer 1 -> this layout's Tree (None: layer 1
    as it is); only: the platforms it exists on (None: every one); firmware: the firmwares;
    files(pf): path -> (mode, text) the disk adds over guestfiles.vm_files; enable: more units
    the disk enables; nic: the disk's first boot has the scenarios' NIC (DISK_NIC) too, for a
    tree whose units wait for their uplink; firstboot_timeout: the first boot's bound when it
    is longer than a boot's (common.BOOT_TIMEOUT)."""

    def __init__(self, fs, tree=None, only=None, firmware=("bios", "uefi"), files=None,
                 enable=(), nic=False, firstboot_timeout=0):
        self.fs, self.tree, self.only, self.firmware = fs, tree, only, firmware
        self.files, self.enable, self.nic = files, list(enable), nic
        self.firstboot_timeout = firstboot_timeout

    def available(self, pf):
        return pf.firmware in self.firmware and (self.only is None or pf.name in self.only)


LAYOUTS = {
    "ext4": Layout("ext4"),
    "btrfs": Layout("btrfs", firmware=("bios",)),
    "smallboot": Layout("smallboot", firmware=("bios",)),
    "repo": Layout("ext4", _repo_tree, only=("bookworm-bios",)),
    "fleet": Layout("ext4", _fleet_tree, only=("bookworm-bios",)),
    "vpn": Layout("ext4", _vpn_tree, only=("bookworm-bios", "trixie-bios"), firmware=("bios",),
                  files=vpn.test_files, enable=vpn.ENABLE, nic=True,
                  firstboot_timeout=vpn.FIRSTBOOT_TIMEOUT),
    "effect": Layout("ext4", _effect_tree, only=("bookworm-bios",), firmware=("bios",),
                     files=sc_effect.files),
}


def layout_tree(pf, layout, base_tar, base_key):
    """The Tree of layout on platform pf, built on layer 1 when it is not cached (under the
    caller's disk lock)."""
    lay = LAYOUTS[layout]
    if not lay.available(pf):
        raise ValueError(f"the {layout} layout does not exist on {pf.name}")
    if lay.tree is None:
        return Tree(base_tar, base_key, pf.old)
    return lay.tree(pf, base_tar, base_key)
