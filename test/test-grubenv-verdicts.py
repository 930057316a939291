#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""plan and apply agree on every grubenv: for each state of /boot/grub/grubenv in a table (a
valid block, none, wrong sizes, no signature, broken lines, a FIFO, a directory, links in and out
of the root, stale or dangling variables; and grub.cfg states that decide the same: a script
GRUB's parser stops at, Ubuntu's "lacks write support" marker), `kswap plan` blocks exactly when `kswap apply`
refuses, both name the same finding, and a refusing apply leaves grubenv and the boot forecast
as they were. Each case also says what it expects (allowed or blocked, the finding), so a change
that makes both commands wrong in the same way still fails. The real grub-editenv makes the
valid blocks. Usage: test-grubenv-verdicts.py KSWAP"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Optional

import kstest
from kstest import NEW, check

exe = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="kswap-grubenv.")
ENV = "boot/grub/grubenv"

if not shutil.which("grub-editenv"):
    print("grub-editenv not installed: skip")
    sys.exit(77)


def editenv(path, *args):
    subprocess.run(["grub-editenv", path, *args], check=True, capture_output=True)


def block(path, *assignments):
    """A valid environment block made by the real grub-editenv, with assignments set."""
    if os.path.lexists(path):
        os.unlink(path)
    editenv(path, "create")
    if assignments:
        editenv(path, "set", *assignments)


def raw(path, data):
    if os.path.lexists(path):
        os.unlink(path)
    with open(path, "wb") as f:
        f.write(data)


HEADER = b"# GRUB Environment Block\n"


def padded(body, size=1024):
    return (HEADER + body).ljust(size, b"#")


@dataclass
class Case:
    name: str
    setup: Callable[[str, str], None]  # (grubenv path, root)
    allowed: bool  # plan may proceed and apply arms the trial
    finding: Optional[str]  # the blocking finding plan names (None when allowed)
    message: Optional[str] = None  # part of what plan and apply both say (None: not checked)


def fifo(p, root):
    os.unlink(p)
    os.mkfifo(p)


def directory(p, root):
    os.unlink(p)
    os.mkdir(p)


def link_out(p, root):
    # Past the root by ../: resolved inside the root it is no environment block.
    os.unlink(p)
    os.symlink("../../../../../../../../../../etc/hostname", p)


def link_in(p, root):
    real = os.path.join(root, "boot/grub/grubenv.real")
    block(real, "saved_entry=0")
    os.unlink(p)
    os.symlink("grubenv.real", p)


def grub_cfg_append(text):
    def setup(p, root):
        with open(os.path.join(root, "boot/grub/grub.cfg"), "a") as f:
            f.write(text)
    return setup


CASES = [
    Case("valid, empty", lambda p, r: block(p), True, None),
    Case("absent", lambda p, r: os.unlink(p), True, None),
    Case("saved_entry of an existing entry", lambda p, r: block(p, "saved_entry=0"), True, None),
    Case("recordfail set", lambda p, r: block(p, "recordfail=1"), True, None),
    Case("a link inside the root", link_in, False, "grub.env-unwritable", "a symbolic link"),
    Case("1023 bytes", lambda p, r: raw(p, padded(b"", 1023)), False, "grub.env-unwritable",
         "not 1024 bytes"),
    Case("2048 bytes", lambda p, r: raw(p, padded(b"", 2048)), False, "grub.env-unwritable",
         "not 1024 bytes"),
    Case("empty file", lambda p, r: raw(p, b""), False, "grub.env-unwritable", "not 1024 bytes"),
    Case("no signature", lambda p, r: raw(p, b"#" * 1024), False, "grub.env-unwritable",
         "no signature"),
    Case("a line without =", lambda p, r: raw(p, padded(b"saved_entry\n")), False,
         "grub.env-unwritable", "broken lines"),
    # GRUB's envblk takes a NUL as any other byte of a value; prepare rewrites saved_entry.
    Case("a NUL in a value", lambda p, r: raw(p, padded(b"saved_entry=a\0b\n")), True, None),
    Case("a FIFO", fifo, False, "grub.env-unwritable", None),
    Case("a directory", directory, False, "grub.env-unwritable", None),
    Case("a link out of the root", link_out, False, "grub.env-unwritable", None),
    # apply's prepare step makes the running kernel the default and the trial replaces any
    # next_entry, so neither blocks; the forecast check below proves what apply left.
    Case("a stale next_entry", lambda p, r: block(p, "next_entry=0"), True, None),
    Case("saved_entry of no entry", lambda p, r: block(p, "saved_entry=no-such-entry"), True, None),
    Case("grub.cfg: a stray fi", grub_cfg_append("fi\n"), False, "grub.cfg-invalid",
         "GRUB's parser stops at line"),
    Case("grub.cfg: a loop without end", grub_cfg_append(
        "while true; do while true; do true; done; done\n"), False, "grub.cfg-invalid", None),
    Case("grub.cfg: GRUB lacks write support", grub_cfg_append(
        "# GRUB lacks write support for lvm, so recordfail support is disabled.\n"), False,
        "grub.env-unwritable", "lacks write support for lvm"),
    Case("grub.cfg: a comment that is not the marker", grub_cfg_append(
        "# GRUB lacks write support forever\n"), True, None),
]


def fresh(i):
    r = os.path.join(work, f"r{i}")
    shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
    for d in ("var/log", "run"):
        os.makedirs(os.path.join(r, d), exist_ok=True)
    return r


def snapshot(path):
    """What grubenv is: its type and, for a regular file or link, its bytes or target."""
    if not os.path.lexists(path):
        return ("absent",)
    if os.path.islink(path):
        return ("link", os.readlink(path))
    st = os.lstat(path)
    if not os.path.isfile(path):
        return ("special", st.st_mode)
    with open(path, "rb") as f:
        return ("file", f.read())


def forecast(root):
    p, d = kstest.run_kswap(exe, root, "--json", "status", timeout=60)
    if not d or not d.get("grub"):
        return None  # status cannot read the block either (exit 1)
    return [(b["kernel"], b["one_shot"]) for b in d["grub"]["forecast"]]


def blocking(doc):
    return sorted(f["id"] for f in (doc or {}).get("findings", []) if f.get("severity") == "block")


deb = os.path.join(work, "xanmod.deb")
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr",
                "builtin"], check=True, capture_output=True)

for i, c in enumerate(CASES):
    root = fresh(i)
    path = os.path.join(root, ENV)
    c.setup(path, root)
    before, fc_before = snapshot(path), forecast(root)

    # plan: exit 2 and the finding when blocked, 0 when it may proceed; never a hang
    try:
        plan, doc = kstest.run_kswap(exe, root, "--json", "plan", "--deb", deb, timeout=60)
    except subprocess.TimeoutExpired:
        check(False, f"{c.name}: plan answers")
        continue
    blocks = blocking(doc)
    plan_allows = plan.returncode == 0
    check(plan.returncode in (0, 2) and doc is not None,
          f"{c.name}: plan answers with a verdict (exit {plan.returncode})", plan.stderr)

    try:
        apply, adoc = kstest.run_kswap(exe, root, "--json", "apply", "--deb", deb, "--yes",
                                       timeout=300)
    except subprocess.TimeoutExpired:
        check(False, f"{c.name}: apply answers")
        continue
    apply_allows = apply.returncode == 0
    fc_after = forecast(root)

    check(plan_allows == apply_allows,
          f"{c.name}: plan and apply agree ({'allow' if plan_allows else 'block'} / "
          f"{'armed' if apply_allows else 'refused'})",
          f"plan exit {plan.returncode} {blocks}\napply exit {apply.returncode}: {apply.stderr}")
    check(plan_allows == c.allowed,
          f"{c.name}: {'allowed' if c.allowed else 'blocked'} as the case expects",
          f"plan exit {plan.returncode}, blocking {blocks}")
    if c.finding:
        check(c.finding in blocks, f"{c.name}: plan names {c.finding}", blocks)
        apply_text = apply.stdout + apply.stderr
        check(c.finding in apply_text or c.finding in json.dumps(adoc or {}),
              f"{c.name}: apply names {c.finding} too", apply_text[-1500:])
    if c.message:
        plan_text = json.dumps(doc or {}) + plan.stderr
        check(c.message in plan_text and c.message in apply.stdout + apply.stderr,
              f"{c.name}: both say '{c.message}'", (plan_text[-800:], apply.stderr[-800:]))
    if apply_allows:
        check(fc_after == [(NEW, True)] + fc_after[1:] if fc_after else False,
              f"{c.name}: apply armed the new kernel once", fc_after)
    else:
        check(apply.returncode in (1, 2), f"{c.name}: apply refuses with exit 1 or 2 "
              f"(exit {apply.returncode})", apply.stderr[-800:])
        check(snapshot(path) == before, f"{c.name}: the refused apply left grubenv as it was")
        check(fc_after == fc_before, f"{c.name}: ... and the boot forecast", (fc_before, fc_after))

shutil.rmtree(work, ignore_errors=True)
print(f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
