#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What GRUB reads after kswap wrote (issue 18): GRUB's file system drivers read the home
blocks of ext4 and never replay its journal. fsync puts a rename into the journal only; its
directory entry and inode reach their home blocks when the kernel checkpoints the journal (up
to about 30 s later, or at unmount). A power cut in between: Linux replays the journal and sees
the new grubenv, GRUB still finds the renamed one's previous inode and its old bytes.

The fixture root lives on a real ext4 file system (a loop-mounted image, with its journal);
after apply, pin and rollback, debugfs reads grubenv and grub.cfg from the image as GRUB would
(debugfs does not replay the journal either) while it is still mounted, and they must be what
the kernel shows. Without the checkpoint (lib/basic/fileio.h, ks_fs_checkpoint) debugfs sees the
blocks from before the command. Needs root, a loop device, mkfs.ext4 and debugfs (exit 77
otherwise). Usage: test-grub-view.py KSWAP"""
import os
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import NEW, OLD, check

SKIP = 77
exe = os.path.abspath(sys.argv[1])


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


if os.getuid() != 0:
    skip("needs root (a loop mount)")
for tool in ("mkfs.ext4", "debugfs", "mount", "umount", "losetup", "grub-editenv"):
    if not shutil.which(tool):
        skip(f"{tool} not found")

work = tempfile.mkdtemp(prefix="kswap-grubview.")
img = os.path.join(work, "fs.img")
mnt = os.path.join(work, "mnt")
os.makedirs(mnt)
with open(img, "wb") as f:
    f.truncate(256 << 20)
subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "kswapview", img], check=True)
p = subprocess.run(["mount", "-o", "loop", img, mnt], capture_output=True, text=True)
if p.returncode != 0:
    skip(f"cannot loop-mount an ext4 image: {p.stderr.strip()}")


def grub_reads(rel):
    """The file's bytes as a reader of the home blocks sees them (debugfs: no journal replay)."""
    p = subprocess.run(["debugfs", "-R", f"cat /{rel}", img], capture_output=True)
    return p.stdout


def kernel_reads(rel):
    with open(os.path.join(root, rel), "rb") as f:
        return f.read()


def env_of(data):
    lines = data.decode(errors="replace").splitlines()
    return dict(ln.split("=", 1) for ln in lines if "=" in ln and not ln.startswith("#"))


def same_view(when):
    for rel in ("boot/grub/grubenv", "boot/grub/grub.cfg"):
        k, g = kernel_reads(rel), grub_reads(f"root/{rel}")
        check(k == g, f"{when}: GRUB reads the {os.path.basename(rel)} the kernel shows",
              f"kernel: {env_of(k) if rel.endswith('grubenv') else len(k)}\n"
              f"home blocks: {env_of(g) if rel.endswith('grubenv') else len(g)}")


try:
    root = os.path.join(mnt, "root")
    shutil.copytree(kstest.EXAMPLE_ROOT, root, symlinks=True)
    subprocess.run(["sync"], check=True)
    # commit what the copy left pending and write it home: the start is GRUB's view too
    subprocess.run(["umount", mnt], check=True)
    subprocess.run(["mount", "-o", "loop", img, mnt], check=True)
    same_view("before")

    deb = os.path.join(work, "xanmod.deb")
    subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr",
                    "builtin", "--compress", "zst"], check=True, capture_output=True)
    p, d = kstest.run_kswap(exe, root, "--json", "apply", "--deb", deb, "--yes")
    check(p.returncode == 0 and d and d.get("state") == "armed", "apply arms the trial",
          p.stderr[-2000:] + str([f for f in (d or {}).get("findings", [])
                                  if f.get("severity") == "block"]))
    same_view("after apply")
    check(env_of(grub_reads("root/boot/grub/grubenv")).get("next_entry") == "kswap-trial",
          "... GRUB finds next_entry = kswap-trial")

    p, d = kstest.run_kswap(exe, root, "--json", "rollback")
    check(p.returncode == 0, "rollback disarms", p.stderr[-2000:])
    same_view("after rollback")
    check("next_entry" not in env_of(grub_reads("root/boot/grub/grubenv")),
          "... GRUB finds no next_entry")

    p, d = kstest.run_kswap(exe, root, "--json", "pin", "--force", NEW)
    check(p.returncode == 0, "pin --force makes NEW the default", p.stderr[-2000:])
    same_view("after pin")
    se = env_of(grub_reads("root/boot/grub/grubenv")).get("saved_entry", "")
    check(NEW in se and OLD not in se, f"... GRUB finds saved_entry naming {NEW} ({se})")
finally:
    subprocess.run(["umount", mnt])
    shutil.rmtree(work, ignore_errors=True)

sys.exit(1 if kstest.failed else 0)
