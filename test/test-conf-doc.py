#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""docs/kswap.conf.5.scd documents every key the code reads: the key tables of
lib/basic/config.c, of the check plug-ins (checks/check-*.c, their [accept] keys) and of
checks/registry.c (the [accept] settings), with their numeric defaults; the [section] key pairs
of ks_config_get_*() calls (each must be in a table), the [apply] timeouts (timeout_ms), the
[accept] settings (cfg_int), and every key of checks/kswap.conf.example; numeric defaults in the
code match the page's "Default *N*". Usage: test-conf-doc.py"""
import glob
import os
import re
import sys

src = os.environ.get("KS_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
page = open(os.path.join(src, "docs", "kswap.conf.5.scd")).read()
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    failed += not cond


# The page's sections: "# [name]" up to the next "# " heading; keys are lines "*key* = ...".
sections = {}
for m in re.finditer(r"^# \[(\w+)\]\n(.*?)(?=^# )", page, re.S | re.M):
    sections[m.group(1)] = m.group(2)


def entry(section, key):
    """The text of one key's entry in the page, or None."""
    body = sections.get(section, "")
    m = re.search(r"^\*" + re.escape(key) + r"\* =.*?\n((?:\t.*\n|\n)*)", body, re.M)
    return m.group(1) if m else None


code = ""
for f in sorted(glob.glob(os.path.join(src, "lib", "*", "*.c")) + glob.glob(os.path.join(src, "checks", "*.c")) +
                glob.glob(os.path.join(src, "cmd", "*.c"))):
    code += open(f).read()

keys = {}  # (section, key) -> default from the code, or None
# The tables of lib/basic/config.c and of the check plug-ins, registered with it: the only keys
# a configuration may hold.
table_src = "".join(open(f).read() for f in [os.path.join(src, "lib", "basic", "config.c")] +
                    sorted(glob.glob(os.path.join(src, "checks", "*.c"))))
table = {}
for s_, k, d in re.findall(r'UINT\("(\w+)", "(\w+)", \d+, \d+, (\d+)\)', table_src):
    table[(s_, k)] = None if d == "0" else d
for s_, k in re.findall(r'LIST\("(\w+)", "(\w+)"', table_src):
    table[(s_, k)] = None
for s_, k in re.findall(r'\.section = "(\w+)",\s*\.key = "(\w+)"', table_src):
    table[(s_, k)] = None
check(len(table) >= 24, f"found {len(table)} keys in the tables of lib/basic/config.c and checks/")
check(not [k for k in table if k[0] == "accept" and re.search(r'"accept", "%s"' % k[1], open(os.path.join(
    src, "lib", "basic", "config.c")).read())], "lib/basic/config.c knows no [accept] key itself")
keys.update(table)
for s, k in re.findall(r'ks_config_get_\w+\(\s*[^,]+,\s*"(\w+)",\s*"(\w+)"', code):
    keys.setdefault((s, k), None)
for k, d in re.findall(r'timeout_ms\(\s*&?\w+,\s*"(\w+)",\s*(\d+)', code):
    keys[("apply", k)] = d
for k, d in re.findall(r'cfg_int\(\s*\w+,\s*"(\w+)",\s*(\w+)\)', code):
    keys[("accept", k)] = d if d.isdigit() else None
defines = dict(re.findall(r"#define (KS_\w+) (\d+)", "".join(open(f).read() for f in glob.glob(os.path.join(src, "*", "*.h")) + glob.glob(os.path.join(src, "lib", "*", "*.h")))))
for k, d in re.findall(r'ks_config_get_int\(\s*[^,]+,\s*"accept",\s*"(\w+)",\s*(\w+)', code):
    keys[("accept", k)] = d if d.isdigit() else defines.get(d)
keys[("apply", "lock_timeout")] = str(int(defines["KS_LOCK_TIMEOUT_MS_DEFAULT"]) // 1000)
keys[("verify", "bbr_version")] = defines["KS_VERIFY_DEFAULT_BBR_VERSION"]

check(len(keys) >= 20, f"found {len(keys)} keys in the code")
for sk in sorted(set(keys) - set(table)):
    check(False, f"[{sk[0]}] {sk[1]} is read by the code but not in the table (a strict load refuses it)")
for (s, k), d in sorted(keys.items()):
    e = entry(s, k)
    check(e is not None, f"[{s}] {k} is documented")
    if e is not None and d is not None:
        check(f"Default *{d}*" in e, f"[{s}] {k}: default {d} as in the code")

section = None
for line in open(os.path.join(src, "checks", "kswap.conf.example")):
    m = re.match(r"\[(\w+)\]", line)
    if m:
        section = m.group(1)
    m = re.match(r"(\w+)\s*=", line)
    if m:
        check(entry(section, m.group(1)) is not None, f"example key [{section}] {m.group(1)} is documented")

print(f"{failed} failed")
sys.exit(1 if failed else 0)
