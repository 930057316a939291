#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Whether kswap-accept.service starts at boot, read from systemd's files (lib/host/units.c),
for a table of unit layouts, against the real `systemctl --root=DIR is-enabled` where the two
ask the same question (systemctl reports enablement; kswap asks what the next boot starts)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

exe = sys.argv[1]
src = os.environ.get("KS_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), ".."))
ROOT = os.path.join(src, "test", "roots", "ubuntu-24.04-kvm", "root")
UNIT = "kswap-accept.service"
BODY = "[Unit]\nDescription=x\n[Service]\nType=oneshot\nExecStart=/bin/true\n" \
       "[Install]\nWantedBy=multi-user.target\n"
failed = 0

# Each case: files ("path": text, or "->target" for a symlink), kswap's severity, a word of its
# message, and what systemctl is-enabled prints (None: systemctl answers another question).
CASES = [
    ("no unit file", {}, "warn", "not installed", "not-found|No such file"),
    ("vendor file, no link", {"usr/lib/systemd/system/" + UNIT: BODY}, "warn", "not enabled",
     "disabled"),
    ("vendor file, /etc link", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/multi-user.target.wants/" + UNIT: "->/usr/lib/systemd/system/" + UNIT,
    }, "ok", "starts at boot", "enabled"),
    ("split-usr /lib file, /etc link", {
        "lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/multi-user.target.wants/" + UNIT: "->/lib/systemd/system/" + UNIT,
    }, "ok", "starts at boot", "enabled"),
    ("/etc file, relative link in a .requires dir", {
        "etc/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/boot-complete.target.requires/" + UNIT: "->../" + UNIT,
    }, "ok", "starts at boot", "enabled"),
    ("/usr/local file, /etc link", {
        "usr/local/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/multi-user.target.wants/" + UNIT:
            "->/usr/local/lib/systemd/system/" + UNIT,
    }, "ok", "starts at boot", "enabled"),
    # systemd follows .wants/ links by their name only: a dangling one still pulls the unit in.
    ("dangling link named after the unit", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/multi-user.target.wants/" + UNIT: "->/nowhere/" + UNIT,
    }, "ok", "starts at boot", "enabled"),
    ("masked in /etc, link still there", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/" + UNIT: "->/dev/null",
        "etc/systemd/system/multi-user.target.wants/" + UNIT: "->/usr/lib/systemd/system/" + UNIT,
    }, "warn", "masked", "masked"),
    ("masked by an empty file in /etc", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/" + UNIT: "",
        "etc/systemd/system/multi-user.target.wants/" + UNIT: "->/usr/lib/systemd/system/" + UNIT,
    }, "warn", "masked", "masked"),
    ("masked in /run", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "run/systemd/system/" + UNIT: "->/dev/null",
        "etc/systemd/system/multi-user.target.wants/" + UNIT: "->/usr/lib/systemd/system/" + UNIT,
    }, "warn", "masked", "masked-runtime"),
    # systemctl says enabled-runtime; the trial boot comes after a reboot, which clears /run.
    ("enabled in /run only", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "run/systemd/system/multi-user.target.wants/" + UNIT: "->/usr/lib/systemd/system/" + UNIT,
    }, "warn", "this boot only", "enabled-runtime"),
    # A package's own link: systemctl reports the enablement (none), the boot starts it.
    ("vendor link in /usr/lib", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "usr/lib/systemd/system/multi-user.target.wants/" + UNIT: "->../" + UNIT,
    }, "ok", "starts at boot", None),
    # An alias (a link in the search path to the unit's file), as the boot resolves it named in a .wants/ directory.
    ("wanted under an alias", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/kacc.service": "->/usr/lib/systemd/system/" + UNIT,
        "etc/systemd/system/multi-user.target.wants/kacc.service": "->/etc/systemd/system/kacc.service",
    }, "ok", "kacc.service", None),
    ("a link of another name to nothing of ours", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/multi-user.target.wants/other.service": "->/usr/lib/systemd/system/" + UNIT,
    }, "warn", "not enabled", None),
    ("a .wants file that is no directory", {
        "usr/lib/systemd/system/" + UNIT: BODY,
        "etc/systemd/system/multi-user.target.wants": "not a directory",
    }, "warn", "not enabled", "disabled"),
]


def check(cond, what, detail=None):
    global failed
    if not cond:
        failed += 1
        print("FAIL:", what)
        if detail is not None:
            print("  ", detail)


def build(root, files):
    for d in ("etc/systemd", "run/systemd", "usr/lib/systemd", "usr/local/lib/systemd",
              "lib/systemd"):
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
    for path, content in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.lexists(full):
            os.unlink(full)
        if content.startswith("->"):
            os.symlink(content[2:], full)
        else:
            with open(full, "w") as f:
                f.write(content)


def finding(root):
    p = subprocess.run([exe, "--root", root, "plan", "--json"], capture_output=True, text=True)
    d = json.loads(p.stdout)
    return next((f for f in d["findings"] if f["id"] == "accept.unit-disabled"), None)


systemctl = shutil.which("systemctl")
tmp = tempfile.mkdtemp(prefix="kswap-units.")
try:
    root = os.path.join(tmp, "root")
    shutil.copytree(ROOT, root, symlinks=True)
    if os.path.islink(os.path.join(root, "lib")):
        os.unlink(os.path.join(root, "lib"))
    compared = 0
    for name, files, severity, word, real in CASES:
        build(root, files)
        f = finding(root)
        check(f and f["severity"] == severity and word in f["message"],
              f"{name}: {severity}, '{word}'", f)
        if real is None or not systemctl:
            continue
        p = subprocess.run([systemctl, "--root=" + root, "is-enabled", UNIT], capture_output=True,
                           text=True)
        said = (p.stdout.strip() or p.stderr.strip()).splitlines()[-1] if (p.stdout or p.stderr) else ""
        check(any((w in said) if " " in w else (w in said.split()) for w in real.split("|")),
              f"{name}: systemctl says {real}", said)
        compared += 1
    print(f"{len(CASES)} layouts, {compared} compared with systemctl is-enabled")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{failed} failed")
sys.exit(1 if failed else 0)
