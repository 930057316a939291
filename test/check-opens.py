#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every open of a file in kswap's C code goes through the one path that judges the type first
(lib/basic/root.h ks_root_open_file(), lib/basic/fileio.h ks_openat_regular() and
ks_fd_reopen()): outside lib/basic/root.c and lib/basic/fileio.c, a call of open(), openat(),
fopen(), freopen(), creat() or ks_root_open_at() must be one that cannot open a FIFO or a device: an O_PATH
lookup, an O_DIRECTORY open, an O_EXCL create, or /dev/null. Lists every other call with its
file and line; exit 1 when there is one.
usage: check-opens.py SOURCE_ROOT | --self-test"""
import os
import re
import sys

DIRS = ("lib", "cmd", "grub", "checks")
HOME = {os.path.join("lib", "basic", "root.c"), os.path.join("lib", "basic", "fileio.c")}
CALL = re.compile(r"(?<![\w.>])(open|openat|fopen|freopen|creat|ks_root_open_at)\s*\(")
SAFE = re.compile(r"\bO_PATH\b|\bO_DIRECTORY\b|\bO_EXCL\b|\"/dev/null\"")


def strip_comments(text):
    """C comments and string contents blanked (line numbers kept), except "/dev/null"."""
    def blank(m):
        s = m.group(0)
        if s == '"/dev/null"':
            return s
        if s.startswith('"'):
            return '""'
        return re.sub(r"[^\n]", " ", s)
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)


def arguments(text, start):
    """The text of the call's arguments from the '(' at start to its matching ')'."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return text[start + 1:]


def offenders(name, text):
    code = strip_comments(text)
    out = []
    for m in CALL.finditer(code):
        # a declaration or a definition of the function itself is not a call
        before = code[max(0, m.start() - 40):m.start()]
        if re.search(r"\b(int|FILE\s*\*)\s*$", before):
            continue
        args = arguments(code, m.end() - 1)
        if not SAFE.search(args):
            line = code.count("\n", 0, m.start()) + 1
            out.append(f"{name}:{line}: {m.group(1)}({' '.join(args.split())[:100]})")
    return out


def scan(src):
    found = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(src, d)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, src)
                if rel in HOME:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    found += offenders(rel, fh.read())
    return found


def self_test():
    cases = [
        ("fd = open(path, O_RDONLY | O_CLOEXEC);", 1),
        ("fd = openat(dfd, name,\n    O_RDWR | O_CREAT, 0644);", 1),
        ("f = fopen(p, \"r\");", 1),
        ("fd = openat(dfd, name, O_PATH | O_CLOEXEC);", 0),
        ("fd = openat(dfd, \".\", O_RDONLY | O_DIRECTORY | O_CLOEXEC);", 0),
        ("fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);", 0),
        ("int nul = open(\"/dev/null\", O_RDONLY);", 0),
        ("/* open(path, O_RDONLY) in a comment */", 0),
        ("ks_error(\"cannot open(x)\");", 0),
        ("int ks_open_regular(const char *path);", 0),
        ("s->open(s, O_RDONLY);", 0),
        ("fd = ks_root_open_at(root, KS_LOCK_PATH, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);", 1),
        ("fd = ks_root_open_at(root, dir, O_RDONLY | O_DIRECTORY, 0);", 0),
    ]
    bad = 0
    for text, want in cases:
        got = len(offenders("t.c", text))
        if got != want:
            bad += 1
            print(f"FAIL self-test: {text!r}: {got} offenders, expected {want}")
    print(f"{len(cases)} self-test cases, {bad} failed")
    return 1 if bad else 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    found = scan(sys.argv[1] if len(sys.argv) > 1 else ".")
    for f in found:
        print("FAIL " + f)
    print(f"{len(found)} opens outside the checked path (lib/basic/root.h ks_root_open_file(), "
          "lib/basic/fileio.h ks_openat_regular())")
    return 1 if found else 0


sys.exit(main())
