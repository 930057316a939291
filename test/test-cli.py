#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The command line itself: global options anywhere, exact names, exit codes, bad roots."""
import os
import subprocess
import sys
import tempfile

exe = sys.argv[1]
failed = 0


def run(*args):
    return subprocess.run([exe] + list(args), capture_output=True, text=True)


def check(cond, what, p=None):
    global failed
    if not cond:
        failed += 1
        print("FAIL:", what)
        if p is not None:
            print("  exit", p.returncode, "stdout", p.stdout[:500], "stderr", p.stderr[:500])


p = run("--version")
check(p.returncode == 0 and p.stdout.startswith("kswap "), "--version", p)
p = run("--help")
check(p.returncode == 0 and "plan" in p.stdout, "--help lists plan", p)
check("not implemented" not in p.stdout, "--help lists nothing unimplemented", p)
p = run()
check(p.returncode == 1, "no command is an error", p)
p = run("pla")
check(p.returncode == 1 and "unknown command 'pla'" in p.stderr, "no prefix matching", p)
p = run("--root")
check(p.returncode == 1 and "needs a value" in p.stderr, "--root without value", p)
with tempfile.NamedTemporaryFile() as f:
    p = run("--root", f.name, "plan")
    check(p.returncode == 1 and f.name in p.stderr, "--root on a file names it", p)
p = run("--root", "/nonexistent-kswap-root", "plan", "--json")
check(p.returncode == 1 and p.stdout == "", "--root missing: exit 1, nothing on stdout", p)
p = run("plan", "--help")
check(p.returncode == 0 and "usage" in p.stdout, "plan --help", p)

print("cli:", "ok" if not failed else f"{failed} failed")
sys.exit(1 if failed else 0)
