# SPDX-License-Identifier: GPL-2.0-or-later
"""The platforms of the whole-VM suite: the image's Debian suite and firmware, the two kernels
each one swaps between, the Debian mirror lines the images are built from, and the check that
a serial log ran on the platform it claims.

OLD and NEW are the two newest linux-image-X.Y.Z-N-amd64 of this machine's apt lists (Debian's
archive drops old ABIs); KS_VM_OLD and KS_VM_NEW override. Other suites take theirs from their
own Packages indexes (vmplatform.py); KS_VM_TRIXIE_OLD and KS_VM_TRIXIE_NEW override."""
import os
import re
import subprocess
import urllib.request

from . import common
from .common import expect, skip

import vmplatform
import vmrepo

SUITE = "bookworm"          # this machine's suite: its apt lists and mirror lines
# The root tree of a suite carries GRUB's files for both firmwares (one tree per suite); the
# libraries kswap links (trixie renamed two in the 64-bit time_t transition).
PACKAGES = ["systemd-sysv", "udev", "kmod", "initramfs-tools", "zstd", "linux-base",
            "grub2-common", "grub-pc-bin", "grub-efi-amd64-bin", "libinih1", "libjson-c5",
            "libkmod2", "libzstd1", "liblzma5", "libmnl0"]
SUITE_PACKAGES = {"bookworm": ["libarchive13", "libgpgme11"],
                  "trixie": ["libarchive13t64", "libgpgme11t64"]}
GRUB_TARGET = {"bios": "i386-pc", "uefi": "x86_64-efi"}
GRUB_VERSION = {"bookworm": "2.06", "trixie": "2.12"}


def pick_kernels():
    """OLD and NEW: the two newest linux-image-X.Y.Z-N-amd64 this machine's apt lists offer (the
    archive drops old ABIs, so fixed names would break one day), else NEW is OLD's -cloud-amd64
    flavour. KS_VM_OLD / KS_VM_NEW override."""
    old, new = os.environ.get("KS_VM_OLD"), os.environ.get("KS_VM_NEW")
    if old and new:
        return old, new
    try:
        names = subprocess.run(["apt-cache", "pkgnames", "linux-image-"], capture_output=True,
                               text=True, timeout=60).stdout.split()
    except (OSError, subprocess.SubprocessError):
        names = []
    rels = []
    for n in names:
        m = re.fullmatch(r"linux-image-((\d+)\.(\d+)\.(\d+)-(\d+))-amd64", n)
        if m:
            rels.append((tuple(int(x) for x in m.groups()[1:]), m.group(1) + "-amd64"))
    rels.sort()
    if len(rels) >= 2:
        return old or rels[-2][1], new or rels[-1][1]
    if rels:
        return old or rels[-1][1], new or rels[-1][1].replace("-amd64", "-cloud-amd64")
    return old or "6.1.0-56-amd64", new or "6.1.0-57-amd64"


OLD, NEW = pick_kernels()
# The repo scenarios (test/vm/vmrepo.py, bookworm BIOS only) start on the kernel before OLD;
# apt brings OLD (the repository's version 1, "A") and then NEW (version 2, "B").
REPO_OLD = vmrepo.start_release(OLD)


def mirror_lines():
    """One-line 'deb' entries of this machine's Debian sources (.list and deb822 .sources)."""
    lines = []
    files = ["/etc/apt/sources.list"]
    d = "/etc/apt/sources.list.d"
    if os.path.isdir(d):
        files += [os.path.join(d, n) for n in sorted(os.listdir(d))
                  if n.endswith(".list") or n.endswith(".sources")]
    for fn in files:
        if not os.path.isfile(fn):
            continue
        text = open(fn).read()
        if fn.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                f = {}
                for ln in stanza.splitlines():
                    m = re.match(r"([A-Za-z-]+):\s*(.*)", ln)
                    if m and not ln.startswith("#"):
                        f[m.group(1).lower()] = m.group(2).strip()
                if "deb" not in f.get("types", "").split() or f.get("enabled", "yes") == "no":
                    continue
                opt = f" [signed-by={f['signed-by']}]" if "signed-by" in f else ""
                for uri in f.get("uris", "").split():
                    for suite in f.get("suites", "").split():
                        lines.append(f"deb{opt} {uri} {suite} {f.get('components', 'main')}")
        else:
            lines += [ln.strip() for ln in text.splitlines() if ln.strip().startswith("deb ")]
    # Only Debian's own archive for bookworm; nothing else from this machine (other suites:
    # these lines with the suite replaced, Platform.mirrors).
    lines = [ln for ln in lines if "/debian" in ln and f" {SUITE}" in ln]
    return lines


def check_mirror(lines):
    for ln in lines:
        uri = [w for w in ln.split() if "://" in w][0]
        suite = ln.split()[-2]
        try:
            urllib.request.urlopen(f"{uri}/dists/{suite}/InRelease", timeout=15).read(64)
        except Exception as e:  # noqa: BLE001
            skip(f"the Debian mirror {uri} ({suite}) is not reachable: {e}")


class Platform:
    """The image's Debian suite and firmware. OLD and NEW: bookworm's from this machine's apt
    lists (as before), any other suite's from its own Packages indexes (vmplatform)."""

    def __init__(self, suite, firmware):
        self.suite, self.firmware = suite, firmware
        self.name = f"{suite}-{firmware}"
        # bookworm BIOS keeps the disk names it always had
        self.tag = "" if (suite, firmware) == ("bookworm", "bios") else self.name + "-"
        self.mirrors = vmplatform.suite_lines(mirror_lines(), SUITE, suite)
        if suite == SUITE:
            self.old, self.new = OLD, NEW
        else:
            env_old = os.environ.get(f"KS_VM_{suite.upper()}_OLD")
            env_new = os.environ.get(f"KS_VM_{suite.upper()}_NEW")
            if env_old and env_new:
                self.old, self.new = env_old, env_new
            else:
                try:
                    self.old, self.new = vmplatform.suite_kernels(self.mirrors, suite,
                                                                  common.CACHE)
                except vmplatform.PlatformError as e:
                    skip(str(e))
        self.packages = (PACKAGES + SUITE_PACKAGES[suite] +
                         [f"linux-image-{self.old}", f"linux-image-{self.new}"])
        self.grub_target = GRUB_TARGET[firmware]

    def qemu(self, work):
        """qemu's command line up to the drives: the firmware's options added."""
        if self.firmware == "uefi":
            try:
                return common.QEMU + vmplatform.ovmf_args(work)
            except vmplatform.PlatformError as e:
                skip(str(e))
        return list(common.QEMU)


def check_platform(pf, text, grub):
    """The VM ran on the platform it claims: GRUB's menu names the suite's GRUB in every boot,
    and each kernel GRUB started says it came up on EFI (uefi) or none does (bios)."""
    vers = re.findall(r"GNU GRUB +version (\S+)", text)
    expect(vers and all(v.startswith(GRUB_VERSION[pf.suite]) for v in vers),
           f"GRUB's menu says version {sorted(set(vers))}, expected {GRUB_VERSION[pf.suite]} "
           f"({pf.suite})")
    efi = len(re.findall(r"\] efi: EFI v\d", text))
    want = len(grub) if pf.firmware == "uefi" else 0
    expect(efi == want, f"{efi} of {len(grub)} kernels started on EFI, expected {want} "
           f"({pf.firmware})")
