#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every C file of the tree follows the project's own .clang-format (check only: it changes
# nothing). Lists the files that differ and how to fix them. Exit 77 (skip) without clang-format.
# Usage: check-format.sh [SOURCE_ROOT]
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 1
command -v clang-format >/dev/null || { echo "clang-format not installed: skipped"; exit 77; }
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find lib grub checks cmd test bench -name '*.[ch]')
bad=()
for f in "${files[@]}"; do
  clang-format --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
for f in "${bad[@]}"; do echo "FAIL $f differs from .clang-format"; done
echo "${#files[@]} files checked, ${#bad[@]} differ"
if [ "${#bad[@]}" -gt 0 ]; then
  echo "fix: clang-format -i ${bad[*]}"
  exit 1
fi
