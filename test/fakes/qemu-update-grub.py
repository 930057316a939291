#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Real GRUB under qemu boots what the fake update-grub writes, as kswap's forecast says.

Builds grub.cfg with test/fakes/update-grub on copies of the ubuntu-24.04-kvm root (a XanMod
kernel added) and runs them through test/grub/qemu-grub.py's scenario(): image, three boots,
printed release and grubenv after each boot compared with forecast-tool.
  trial-submenu   kswap's drop-in (GRUB_DEFAULT=saved, panic=10), saved_entry = old kernel,
                  next_entry = XanMod: boot 1 XanMod, boots 2 and 3 the old kernel
  default-0       stock settings with GRUB_TERMINAL="console serial": the newest kernel
  trial-flat      GRUB_DISABLE_SUBMENU=true, one-shot by bare entry id
usage: qemu-update-grub.py FORECAST_TOOL      exit 77 when a tool is missing
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kstest  # noqa: E402
from kstest import EXAMPLE_ROOT, OLD  # noqa: E402
from kstest import NEW as XAN  # noqa: E402
from kstest import UUID as U  # noqa: E402

TOOL = sys.argv[1]
ADV = f"gnulinux-advanced-{U}"


def make_cfg(work, name, dropins):
    root = os.path.join(work, "roots", name, "root")
    shutil.copytree(EXAMPLE_ROOT, root, symlinks=True)
    os.unlink(os.path.join(root, "etc/default/grub.d/50-cloudimg-settings.cfg"))
    for rel, text in ((f"boot/vmlinuz-{XAN}", "vmlinuz\n"), (f"boot/initrd.img-{XAN}", "initrd\n")):
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    for fname, text in dropins.items():
        with open(os.path.join(root, "etc/default/grub.d", fname), "w") as f:
            f.write(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSWAP_")}
    env.update(KSWAP_ROOT=root, LANG="C.UTF-8")
    subprocess.run([os.path.join(kstest.FAKES, "update-grub")], env=env, check=True, capture_output=True)
    with open(os.path.join(root, "boot/grub/grub.cfg"), encoding="utf-8") as f:
        return f.read()


KSWAP_DROPIN = 'GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} panic=10"\n'
SCENARIOS = [
    ("trial-submenu", {"90-kswap.cfg": KSWAP_DROPIN},
     [f"saved_entry={ADV}>gnulinux-{OLD}-advanced-{U}", f"next_entry={ADV}>gnulinux-{XAN}-advanced-{U}"],
     [XAN, OLD, OLD]),
    ("default-0", {"60-serial.cfg": 'GRUB_TERMINAL="console serial"\n'
                   'GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"\n'},
     [], [XAN, XAN, XAN]),
    ("trial-flat", {"90-kswap.cfg": KSWAP_DROPIN, "70-flat.cfg": "GRUB_DISABLE_SUBMENU=true\n"},
     [f"saved_entry=gnulinux-{OLD}-advanced-{U}", f"next_entry=gnulinux-{XAN}-advanced-{U}"],
     [XAN, OLD, OLD]),
]


def main():
    h = kstest.load_qemu_grub(TOOL)
    work = tempfile.mkdtemp(prefix="kswap-qemu-ugrub-")
    failed = []
    try:
        core = h["build_base"](work)
        for name, dropins, env_vars, want in SCENARIOS:
            text = make_cfg(work, name, dropins)
            # kswap's forecast must name the releases this test expects before GRUB is asked.
            cfg = os.path.join(work, name + ".cfg")
            with open(cfg, "w", encoding="utf-8") as f:
                f.write(text)
            envf = os.path.join(work, name + ".env")
            subprocess.run(["grub-editenv", envf, "create"], check=True)
            if env_vars:
                subprocess.run(["grub-editenv", envf, "set", *env_vars], check=True)
            out = subprocess.run([TOOL, "forecast", cfg, envf, "1", work], check=True,
                                 capture_output=True, text=True).stdout
            got = [dict(kv.split("=", 1) for kv in l.split())["kernel"] for l in out.splitlines()]
            if got != want:
                print(f"  {name}: kswap forecast {got}, expected {want}")
                failed.append(name)
                continue
            ok, lines = h["scenario"](work, core, name, lambda t=text: t, env_vars, {})
            print("\n".join(lines), flush=True)
            if not ok:
                failed.append(name)
    finally:
        if failed or os.environ.get("KS_KEEP"):
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
