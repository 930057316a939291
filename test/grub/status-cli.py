#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`kswap status` on temporary roots: the forecast line, --json's grub.forecast and grub.env,
and clear errors for a broken grub.cfg or grubenv. grubenv files are made with the real
grub-editenv (exit 77 without it).

usage: status-cli.py KSWAP
"""
import json, os, shutil, subprocess, sys, tempfile

KSWAP = sys.argv[1]
FIX = os.path.join(os.environ.get("KS_FIXTURES", os.path.join(os.environ.get("KS_SOURCE_ROOT", "."), "test", "fixtures")), "grub")
if not shutil.which("grub-editenv"):
    print("grub-editenv not installed: skip")
    sys.exit(77)

U = "f93ca2dd-74af-4ee8-b478-970b29be5ca3"
ADV, K45 = f"gnulinux-advanced-{U}", f"gnulinux-6.8.0-45-generic-advanced-{U}"
failed = 0


def check(cond, what):
    global failed
    print(("ok: " if cond else "FAIL: ") + what)
    failed += not cond


def make_root(cfg_text, env_vars, env_bytes=None):
    root = tempfile.mkdtemp(prefix="kswap-status-")
    os.makedirs(f"{root}/boot/grub")
    os.makedirs(f"{root}/proc/sys/kernel")
    with open(f"{root}/proc/sys/kernel/osrelease", "w") as f:
        f.write("6.8.0-48-generic\n")
    with open(f"{root}/boot/grub/grub.cfg", "w") as f:
        f.write(cfg_text)
    env = f"{root}/boot/grub/grubenv"
    if env_bytes is not None:
        with open(env, "wb") as f:
            f.write(env_bytes)
    elif env_vars is not None:
        subprocess.run(["grub-editenv", env, "create"], check=True)
        if env_vars:
            subprocess.run(["grub-editenv", env, "set", *env_vars], check=True)
    return root


def status(root, *args):
    return subprocess.run([KSWAP, "--root", root, "status", *args], capture_output=True, text=True)


cfg = open(f"{FIX}/ubuntu-24.04-two-kernels.cfg").read()
roots = []

# A one-shot by full id path; GRUB's env writability unknown in a bare root: it repeats.
r = make_root(cfg, [f"next_entry={ADV}>{K45}", "saved_entry=0"])
roots.append(r)
p = status(r)
check(p.returncode == 0, "status exits 0")
check(p.stdout.startswith("running: 6.8.0-48-generic\nstate: idle (no swap recorded)\n"
                          "next boot: 6.8.0-45-generic (one-shot)"),
      "human line starts with the one-shot")
check("grub.env-unwritable" in p.stdout, "repeating one-shot reported")
p = status(r, "--json")
check(p.returncode == 0, "status --json exits 0")
j = json.loads(p.stdout)
fc = j["grub"]["forecast"]
check(len(fc) == 3 and [b["boot"] for b in fc] == [1, 2, 3], "three boots")
check(fc[0]["kernel"] == "6.8.0-45-generic" and fc[0]["one_shot"] is True and fc[0]["waits"] is False,
      "boot 1: trial kernel, one-shot")
check(fc[0]["id_path"] == f"{ADV}>{K45}", "boot 1: id path")
check(fc[0]["title_path"] == "Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-45-generic",
      "boot 1: title path")
check(j["grub"]["env"] == {"next_entry": f"{ADV}>{K45}", "saved_entry": "0"}, "grub.env as read")
check(set(fc[0]) >= {"boot", "kernel", "title_path", "id_path", "one_shot", "waits"},
      "forecast fields")
before = open(f"{r}/boot/grub/grubenv", "rb").read()
check(open(f"{r}/boot/grub/grubenv", "rb").read() == before, "read-only: grubenv unchanged")

# No one-shot, default 0: the newest kernel three times.
r = make_root(cfg, [])
roots.append(r)
p = status(r)
check("next boot: 6.8.0-48-generic (default) · then: 6.8.0-48-generic (default)" in p.stdout,
      "default boots")
# A bare title as one-shot: GRUB falls back to entry 0; reported as grub.entry-missing.
r = make_root(cfg, ["next_entry=Ubuntu, with Linux 6.8.0-45-generic"])
roots.append(r)
j = json.loads(status(r, "--json").stdout)
check(j["grub"]["forecast"][0]["kernel"] == "6.8.0-48-generic", "bare title boots the newest")
check(any(f["id"] == "grub.entry-missing" for f in j["findings"]), "grub.entry-missing finding")
# recordfail with GRUB_RECORDFAIL_TIMEOUT=-1: waits at the menu, kernel null.
r = make_root(cfg.replace("set timeout=30", "set timeout=-1", 1), ["recordfail=1"])
roots.append(r)
j = json.loads(status(r, "--json").stdout)
check(j["grub"]["forecast"][0]["waits"] is True and j["grub"]["forecast"][0]["kernel"] is None,
      "waits: kernel null")
# No grubenv at all.
r = make_root(cfg, None)
roots.append(r)
j = json.loads(status(r, "--json").stdout)
check(j["grub"]["env"] is None and j["grub"]["forecast"][0]["kernel"] == "6.8.0-48-generic",
      "no grubenv: env null")
# Broken inputs: clear errors, exit 1.
r = make_root(cfg + "\nmenuentry 'broken' {\n", [])
roots.append(r)
p = status(r)
where = f"line {cfg.count(chr(10)) + 2}, column 20"  # the unclosed '{'
check(p.returncode == 1 and where in p.stderr, "syntax error names line and column: "
      + p.stderr.strip())
r = make_root(cfg, None, env_bytes=b"saved_entry=0\n")
roots.append(r)
p = status(r)
check(p.returncode == 1 and "not a usable GRUB environment block" in p.stderr, "plain-text grubenv refused")
r = make_root("", None)
os.unlink(f"{r}/boot/grub/grub.cfg")
roots.append(r)
p = status(r)
check(p.returncode == 1 and "cannot read '/boot/grub/grub.cfg'" in p.stderr, "missing grub.cfg")

for r in roots:
    shutil.rmtree(r, ignore_errors=True)
sys.exit(1 if failed else 0)
