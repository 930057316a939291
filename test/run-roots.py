#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs kswap on one fixture root and compares with the expected files beside it.

A case folder holds root/ (the fixture root) and a 'cases' file, one line per invocation:
    NAME EXIT ARGS...
For each, kswap --root CASE/root ARGS runs; its exit code must be EXIT and its stdout must equal
CASE/expected/NAME (JSON documents are compared as data, with volatile fields such as free space
removed). KS_UPDATE_EXPECTED=1 rewrites the expected files instead.
"""
import json
import os
import shlex
import subprocess
import sys

import re

VOLATILE = {("boot", "free_bytes")}
# Free space under a fixture root is the test machine's, so it is masked in text too; so is
# the end of kswap report's window up to now (the test's clock).
MASKS = [(re.compile(r"\b\d+ MiB free"), "N MiB free"),
         (re.compile(r"to now, \d+ (s|min|h \d+ min|d \d+ h)\b"), "to now, N")]
# report's figures that end now: the window's end and length.
NOW_WINDOWS = ("now", "after")


def scrub(doc):
    if isinstance(doc, dict):
        for a, b in VOLATILE:
            if a in doc and isinstance(doc[a], dict):
                doc[a].pop(b, None)
        for k in NOW_WINDOWS if doc.get("command") == "report" else ():
            w = (doc.get(k) or {}).get("window")
            for f in ("to", "seconds") if isinstance(w, dict) else ():
                w.pop(f, None)
    for f in doc.get("findings", []) if isinstance(doc, dict) else []:
        for rx, repl in MASKS:
            f["message"] = rx.sub(repl, f["message"])
    return doc


def main():
    exe, case = sys.argv[1], sys.argv[2]
    root = os.path.join(case, "root")
    update = os.environ.get("KS_UPDATE_EXPECTED") == "1"
    failed = 0
    with open(os.path.join(case, "cases")) as f:
        lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    for line in lines:
        words = shlex.split(line)
        name, want_exit, args = words[0], int(words[1]), words[2:]
        p = subprocess.run([exe, "--root", root] + args, capture_output=True, text=True,
                           env=dict(os.environ, NO_COLOR="1"))
        exp_path = os.path.join(case, "expected", name)
        out = p.stdout
        for rx, repl in MASKS:
            out = rx.sub(repl, out)
        # next steps carry --root as they run when pasted: the checkout's path is masked
        for path in sorted({os.path.realpath(root), os.path.abspath(root)}, key=len, reverse=True):
            out = out.replace(path, "ROOT")
        if name.endswith(".json"):
            try:
                got = scrub(json.loads(out))
            except ValueError as e:
                print(f"{name}: stdout is not one JSON document: {e}\n{out}\n{p.stderr}")
                failed += 1
                continue
            out = json.dumps(got, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
        if update:
            os.makedirs(os.path.dirname(exp_path), exist_ok=True)
            with open(exp_path, "w") as f:
                f.write(out)
        if p.returncode != want_exit:
            print(f"{name}: exit {p.returncode}, expected {want_exit}\nstderr:\n{p.stderr}")
            failed += 1
        if not update:
            try:
                with open(exp_path) as f:
                    want = f.read()
            except FileNotFoundError:
                print(f"{name}: no expected file {exp_path}")
                failed += 1
                continue
            if want != out:
                import difflib
                print(f"{name}: output differs from {exp_path}:")
                sys.stdout.writelines(difflib.unified_diff(
                    want.splitlines(True), out.splitlines(True), "expected", "got"))
                failed += 1
    print(f"{len(lines) - failed} of {len(lines)} invocations as expected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
