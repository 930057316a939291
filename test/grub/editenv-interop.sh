#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kswap's grubenv code and the real grub-editenv read and write each other's files, byte for
# byte the same after the same edits. Exit 77 (skip) without grub-editenv.
set -eu
tool=$1
command -v grub-editenv >/dev/null || { echo "grub-editenv not installed: skip"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if "$@"; then echo "ok: ${desc}"; else echo "FAIL: ${desc}"; fail=1; fi; }

nl=$'line1\nline2'
bs='C:\dir\\x\'
mixed=$'a\\\nb\\'
# The same sequence of edits by both tools gives the same 1024 bytes.
grub-editenv "$work/g" create
"$tool" "$work/k" create
for step in "set saved_entry=gnulinux-advanced-u>gnulinux-6.8.0-48-generic-advanced-u" \
            "set next_entry=$nl" "set bs=$bs" "set mixed=$mixed" "set next_entry=" \
            "unset bs" "set recordfail=1" "set saved_entry=0" "unset next_entry" \
            "set bs=$bs"; do
  op=${step%% *} arg=${step#* }
  if [ "$op" = set ]; then
    grub-editenv "$work/g" set "$arg"; "$tool" "$work/k" set "$arg"
  else
    grub-editenv "$work/g" unset "$arg"; "$tool" "$work/k" unset "$arg"
  fi
  desc="same bytes after '$op ${arg%%=*}'"; check cmp -s "$work/g" "$work/k"
done
desc="file stays 1024 bytes"; check test "$(stat -c %s "$work/k")" = 1024
# Each reads the other's file and lists the same values.
desc="grub-editenv lists what kswap wrote"
check diff <(grub-editenv "$work/k" list) <("$tool" "$work/k" list)
grub-editenv "$work/g2" create
grub-editenv "$work/g2" set "x=$nl" "y=$bs" "z=$mixed" "w="
desc="kswap lists what grub-editenv wrote"
check diff <(grub-editenv "$work/g2" list) <("$tool" "$work/g2" list)
desc="kswap reads newline value"
check grep -qx 'line2' <("$tool" "$work/g2" list)
# Too big a value: grub-editenv fails, kswap refuses and leaves the file alone.
cp "$work/k" "$work/k.before"
big=$(head -c 1100 /dev/zero | tr '\0' v)
desc="kswap refuses a value that does not fit"
check bash -c "! '$tool' '$work/k' set big=$big 2>/dev/null"
desc="refused write leaves the file unchanged"; check cmp -s "$work/k" "$work/k.before"
desc="grub-editenv refuses it too"
check bash -c "! grub-editenv '$work/g' set big=$big 2>/dev/null"
# Wrong size and missing signature are refused.
head -c 1000 "$work/g" > "$work/short"
desc="short file refused"; check bash -c "! '$tool' '$work/short' list 2>/dev/null"
printf 'saved_entry=0\n' > "$work/plain"
desc="plain text refused"; check bash -c "! '$tool' '$work/plain' list 2>/dev/null"
exit $fail
