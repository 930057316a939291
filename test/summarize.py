#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Counts the results of meson test runs (testlog.json files) and prints the closing line
'N passed, N failed, N skipped'. Exits 1 when any test failed or no test ran."""
import json
import sys

passed = failed = skipped = 0
failures = []
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError as e:
        print(f"summarize: cannot read {path}: {e}")
        failed += 1
        continue
    for line in lines:
        t = json.loads(line)
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
            failures.append(f"{path.split('/')[0]}: {t.get('name')} ({r})")
for f in failures:
    print("FAILED:", f)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
