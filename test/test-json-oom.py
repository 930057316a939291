#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""--json when an allocation fails: each json-c building call of a run (the LD_PRELOAD
oom-json.c) fails once in turn. Every run must print the document of the run without a failure,
or the error document ({"command", the command's key, "error", "exit_code": 1} with the failure
named on stderr); never a part of a document, never nothing."""
import json
import os
import re
import subprocess
import sys

exe, shim = sys.argv[1], sys.argv[2]
src = os.environ.get("KS_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), ".."))
ROOT = os.path.join(src, "test", "roots", "ubuntu-24.04-kvm", "root")
# report needs the counters: the root of the node with traffic (a copy of this one).
ROOTS = {"report --connections": os.path.join(src, "test", "roots", "tcp-effect", "root")}
# Read-only commands that run on the fixture root; apply/pin/rollback/accept build through the
# same ks_print_json_built and ks_json_flush.
INVOCATIONS = ["plan", "plan --kernel 6.8.0-45-generic", "status", "status --history", "list",
               "check", "verify --kernel 6.8.0-48-generic", "--version", "help plan",
               "report --connections"]
ERROR_KEYS = {"command", "error", "exit_code"}
failed = 0


def run(args, n):
    env = dict(os.environ, NO_COLOR="1", KS_FAIL_NTH=str(n), LD_PRELOAD=shim)
    root = ROOTS.get(" ".join(args), ROOT)
    return subprocess.run([exe, "--root", root, "--json"] + args, capture_output=True, text=True,
                          env=env, timeout=60)


def verdict(p, ref, ref_doc):
    if p.stdout == ref.stdout and p.returncode == ref.returncode:
        return "unchanged"
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return "BAD: not one JSON document"
    key = set(d) - ERROR_KEYS
    if p.returncode != 1 or d.get("exit_code") != 1:
        return "BAD: exit code %d, exit_code %r" % (p.returncode, d.get("exit_code"))
    if not ERROR_KEYS <= set(d) or len(key) != 1 or set(d) == set(ref_doc):
        return "BAD: not the error document: keys %s" % sorted(d)
    if "cannot build the JSON document" not in p.stderr:
        return "BAD: the failure is not named on stderr"
    return "error document"


for inv in INVOCATIONS:
    args = inv.split()
    ref = run(args, 10**9)
    m = re.search(r"oom-shim: (\d+) calls", ref.stderr)
    if not m or int(m.group(1)) == 0:
        print("FAIL %s: the shim is not loaded (%s)" % (inv, ref.stderr[-300:]))
        failed += 1
        continue
    total, ref_doc, kinds = int(m.group(1)), json.loads(ref.stdout), {}
    for n in range(1, total + 1):
        p = run(args, n)
        v = verdict(p, ref, ref_doc) if "failing call %d " % n in p.stderr else "BAD: no failure"
        kinds[v] = kinds.get(v, 0) + 1
        if v.startswith("BAD"):
            failed += 1
            print("FAIL %s, call %d failing: %s\n%s%s" % (inv, n, v, p.stdout[:600],
                                                           p.stderr[-600:]))
    print("%-36s exit %d, %3d calls, each failed once: %s" % (inv, ref.returncode, total,
                                                                  kinds))
sys.exit(1 if failed else 0)
