#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Calls that go through one place in kswap's C code, checked on the source (issue 34): a rule
names the calls, the files that are their home, and what makes a call safe elsewhere. Lists
every other call with its file and line; exit 1 when there is one.

opens   every open of a file goes through the path that judges its type first (lib/basic/root.h
        ks_root_open_file(), lib/basic/fileio.h ks_openat_regular() and ks_fd_reopen()):
        outside lib/basic/root.c and lib/basic/fileio.c a call of open(), openat(), fopen(),
        freopen(), creat() or ks_root_open_at() must be one that cannot open a FIFO or a
        device: an O_PATH lookup, an O_DIRECTORY open, an O_EXCL create, or /dev/null.
output  kswap prints through one layer (cmd/output.c: ks_printf(), ks_fprintf(),
        ks_vfprintf() escape every string argument for the terminal; ks_json_flush() writes
        JSON as valid UTF-8): no other file calls printf(), fprintf(), puts(), fputs(),
        putchar(), fputc(), fwrite(), vprintf(), vfprintf(), dprintf() or perror(), nor
        json_object_to_json_string*() (lib/basic/json-util.h ks_json_to_utf8() instead), except
        the journal and history writers (files kswap reads back byte for byte) and the metrics
        file (Prometheus' text format, escaped by its own rules).

usage: check-calls.py opens|output SOURCE_ROOT | --self-test"""
import os
import re
import sys

DIRS = ("lib", "cmd", "grub", "checks")
J = os.path.join
RULES = {
    "opens": [(re.compile(r"(?<![\w.>])(open|openat|fopen|freopen|creat|ks_root_open_at)\s*\("),
               re.compile(r"\bO_PATH\b|\bO_DIRECTORY\b|\bO_EXCL\b|\"/dev/null\""),
               {J("lib", "basic", "root.c"), J("lib", "basic", "fileio.c")})],
    "output": [(re.compile(r"(?<![\w.>])(printf|fprintf|vprintf|vfprintf|dprintf|puts|fputs|"
                           r"putchar|fputc|putc|fwrite|perror)\s*\("), None,
                {J("cmd", "output.c"), J("lib", "engine", "metrics.c")}),
               (re.compile(r"(?<![\w.>])(json_object_to_json_string(?:_ext|_length)?|"
                           r"json_object_to_fd|json_object_to_file(?:_ext)?)\s*\("), None,
                {J("lib", "basic", "json-util.c"), J("lib", "engine", "journal.c"),
                 J("lib", "engine", "history.c")})],
}


def strip(text):
    """C comments and string contents blanked (line numbers kept), except "/dev/null"."""
    def blank(m):
        s = m.group(0)
        if s == '"/dev/null"':
            return s
        return '""' if s.startswith('"') else re.sub(r"[^\n]", " ", s)
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)


def arguments(code, start):
    """The text of a call's arguments from the '(' at start to its matching ')'."""
    depth = 0
    for i in range(start, len(code)):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            return code[start + 1:i]
    return code[start + 1:]


def offenders(rule, name, text):
    code = strip(text)
    out = []
    for call, safe, home in RULES[rule]:
        if name in home:
            continue
        for m in call.finditer(code):
            # the declaration or definition of a function of that name is not a call
            if re.search(r"\b(int|FILE\s*\*)\s*$", code[max(0, m.start() - 40):m.start()]):
                continue
            args = arguments(code, m.end() - 1)
            if safe and safe.search(args):
                continue
            line = code.count("\n", 0, m.start()) + 1
            out.append(f"{name}:{line}: {m.group(1)}({' '.join(args.split())[:100]})")
    return out


def scan(rule, src):
    found = []
    for d in DIRS:
        for dirpath, _, files in os.walk(J(src, d)):
            for f in sorted(files):
                if f.endswith(".c"):
                    path = J(dirpath, f)
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        found += offenders(rule, os.path.relpath(path, src), fh.read())
    return found


SELF_TEST = [
    ("opens", "fd = open(path, O_RDONLY | O_CLOEXEC);", 1),
    ("opens", "fd = openat(dfd, name,\n    O_RDWR | O_CREAT, 0644);", 1),
    ("opens", 'f = fopen(p, "r");', 1),
    ("opens", "fd = openat(dfd, name, O_PATH | O_CLOEXEC);", 0),
    ("opens", 'fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);', 0),
    ("opens", "fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);", 0),
    ("opens", 'int nul = open("/dev/null", O_RDONLY);', 0),
    ("opens", "/* open(path, O_RDONLY) in a comment */", 0),
    ("opens", 'ks_error("cannot open(x)");', 0),
    ("opens", "int ks_open_regular(const char *path);", 0),
    ("opens", "s->open(s, O_RDONLY);", 0),
    ("opens", "fd = ks_root_open_at(root, KS_LOCK_PATH, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);", 1),
    ("opens", "fd = ks_root_open_at(root, dir, O_RDONLY | O_DIRECTORY, 0);", 0),
    ("output", 'printf("%s\\n", name);', 1),
    ("output", 'fprintf(stderr, "x");', 1),
    ("output", "fputs(s, stdout);", 1),
    ("output", "fwrite(buf, 1, n, f);", 1),
    ("output", 'ks_printf("%s\\n", name);', 0),
    ("output", 'ks_fprintf(stderr, "x %s", s);', 0),
    ("output", 'snprintf(buf, sizeof(buf), "%s", s);', 0),
    ("output", '/* printf("x") */', 0),
    ("output", 'ks_error("cannot printf(x)");', 0),
    ("output", "s = json_object_to_json_string_ext(o, 0);", 1),
]


def self_test():
    bad = 0
    for rule, text, want in SELF_TEST:
        got = len(offenders(rule, "t.c", text))
        if got != want:
            bad += 1
            print(f"FAIL self-test {rule}: {text!r}: {got} offenders, expected {want}")
    # a home file may make its calls
    if offenders("output", J("cmd", "output.c"), "fprintf(out, spec, v);"):
        bad += 1
        print("FAIL self-test: cmd/output.c may print")
    print(f"{len(SELF_TEST) + 1} self-test cases, {bad} failed")
    return 1 if bad else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 3 or sys.argv[1] not in RULES:
        print(__doc__)
        return 2
    found = scan(sys.argv[1], sys.argv[2])
    for f in found:
        print("FAIL " + f)
    print(f"{len(found)} calls outside their place (rule {sys.argv[1]}; see {sys.argv[0]})")
    return 1 if found else 0


sys.exit(main())
