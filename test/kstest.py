# SPDX-License-Identifier: GPL-2.0-or-later
"""What the Python test scripts share: the source tree's paths, the example root's kernels and
GRUB entry paths, the environment with the fakes first on PATH, and check() with its count.
Scripts in test/ import it directly; deeper ones put test/ on sys.path first."""
import json
import os
import subprocess
import sys

SRC = os.environ.get("KS_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKES = os.path.join(SRC, "test", "fakes")
ROOTS = os.path.join(SRC, "test", "roots")
EXAMPLE_ROOT = os.path.join(ROOTS, "ubuntu-24.04-kvm", "root")
XANMOD_KEY = os.path.join(SRC, "data", "keys", "xanmod-archive-keyring.asc")

# The example root (test/roots/ubuntu-24.04-kvm): its running kernel, the XanMod release the
# tests install, and both kernels' full GRUB id paths.
OLD, NEW = "6.8.0-48-generic", "6.18.45-x64v3-xanmod1"
UUID = "f93ca2dd-74af-4ee8-b478-970b29be5ca3"
OLD_PATH = f"gnulinux-advanced-{UUID}>gnulinux-{OLD}-advanced-{UUID}"
NEW_PATH = f"gnulinux-advanced-{UUID}>gnulinux-{NEW}-advanced-{UUID}"

failed = 0


def check(cond, what, extra=None):
    """Prints ok/FAIL; on failure counts it and shows extra (its head and tail when long)."""
    global failed
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failed += 1
        if extra:
            text = str(extra)
            if len(text) > 4000:
                text = text[:1000] + "\n[...]\n" + text[-3000:]
            print("     " + text.replace("\n", "\n     "), flush=True)


def env(**kw):
    """This process's environment with the fakes first on PATH, no colour, and kw added."""
    e = dict(os.environ, PATH=FAKES + ":" + os.environ["PATH"], NO_COLOR="1")
    e.update({k: str(v) for k, v in kw.items()})
    return e


def load_qemu_grub(tool):
    """test/grub/qemu-grub.py's functions (image, boot, grubenv offset) without running its
    scenarios; tool is its FORECAST_TOOL argument. Exits 77 when qemu or GRUB is missing."""
    harness = os.path.join(SRC, "test", "grub", "qemu-grub.py")
    with open(harness, encoding="utf-8") as f:
        code = f.read()
    tail = "\nsys.exit(main())\n"
    assert code.endswith(tail), "qemu-grub.py changed its last line"
    ns = {"__name__": "qemu_grub", "__file__": harness}
    argv = sys.argv
    sys.argv = [harness, tool]
    try:
        exec(compile(code[: -len(tail)] + "\n", harness, "exec"), ns)
    finally:
        sys.argv = argv
    return ns


def write_grub_boot_sectors(img, core, moddir="/usr/lib/grub/i386-pc", part_offset=1 << 20):
    """GRUB for BIOS as grub-bios-setup writes it: boot.img's code in the MBR (partition table
    kept), core.img in the gap before the first partition."""
    with open(os.path.join(moddir, "boot.img"), "rb") as f:
        boot = bytearray(f.read())
    boot[0x66:0x68] = b"\x90\x90"  # grub-bios-setup: no drive check for hard disks
    with open(core, "rb") as f:
        core_data = f.read()
    assert len(core_data) < part_offset - 512, "core.img does not fit before the partition"
    with open(img, "r+b") as f:
        f.write(boot[:440])
        f.seek(512)
        f.write(core_data)


def run_kswap(exe, root, *args, timeout=120, **env_kw):
    """kswap --root ROOT ARGS with the fakes first on PATH: (CompletedProcess, JSON document
    or None; parsed only with --json)."""
    p = subprocess.run([exe, "--root", root, *args], capture_output=True, text=True,
                       env=env(**env_kw), timeout=timeout)
    doc = None
    if "--json" in args:
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
    return p, doc
