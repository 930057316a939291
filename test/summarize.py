#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Counts the results of meson test runs (testlog.json files), prints the slowest tests (CI's
budget is 75 minutes), the skipped count and the closing line 'N passed, N failed'. Exits 1
when any test failed or no test ran."""
import json
import sys

passed = failed = skipped = 0
failures = []
durations = []
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
        durations.append((t.get("duration") or 0, f"{path.split('/')[0]}: {t.get('name')}"))
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
            failures.append(f"{path.split('/')[0]}: {t.get('name')} ({r})")
print("slowest:", ", ".join(f"{n} {d:.0f} s" for d, n in sorted(durations, reverse=True)[:12]))
for f in failures:
    print("FAILED:", f)
print(f"{skipped} skipped")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
