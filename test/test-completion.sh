#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Sources completions/kswap in a plain bash (no bash-completion package needed) and checks
# COMPREPLY for a few command lines. Usage: test-completion.sh COMPLETION-FILE
set -u
comp=${1:?usage: test-completion.sh COMPLETION-FILE}
failed=0
work=$(mktemp -d /tmp/kswap-completion.XXXXXX)
trap 'rm -rf "$work"' EXIT

# A fake root with two kernels (and files that are not kernels).
mkdir -p "$work/root/boot" "$work/debs/sub"
touch "$work/root/boot/vmlinuz-6.8.0-48-generic" "$work/root/boot/vmlinuz-6.18.45-x64v3-xanmod1" \
  "$work/root/boot/vmlinuz-6.8.0-48-generic.dpkg-tmp" "$work/root/boot/initrd.img-6.8.0-48-generic" \
  "$work/debs/a.deb" "$work/debs/notes.txt"

# shellcheck disable=SC1090
source "$comp" || { echo "FAIL cannot source $comp"; exit 1; }

# expect "WANT (sorted, space-separated)" WORD... : completes the last word, or word number
# $CWORD when set (words after the cursor, as bash passes them too).
expect() {
  local want=$1 got
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=${CWORD:-$((${#COMP_WORDS[@]} - 1))}
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _kswap kswap "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]:-}"
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
  if [ "$got" = "$want" ]; then
    echo "ok   '${*:1}' -> [$got]"
  else
    echo "FAIL '${*:1}' -> [$got], want [$want]"
    failed=$((failed + 1))
  fi
}

cd "$work" || exit 1
expect "accept apply check help history list metrics pin plan report rollback status tidy verify" kswap ""
expect "help history" kswap h
expect "--color --config --help --json --quiet --root --swaps --verbose --version" kswap history --
expect "--color --config --connections" kswap report --c
expect "--record" kswap report --rec
expect "pin plan" kswap p
expect "--root" kswap --ro
expect "status" kswap --json st
expect "--ack --color --config --help --history --json --quiet --root --timeout --verbose --version --wait" kswap status --
expect "always auto" kswap --color a
expect "--ack" kswap --color never status --a
expect "pin plan" kswap help p
expect "" kswap help plan ""
expect "-q" kswap -q
expect "--reboot --root" kswap apply --r
expect "--deb --dry-run" kswap apply --d
expect "--kernel" kswap --json verify --k
expect "--deb" kswap --json verify --d
expect "--no-pin --no-reboot" kswap accept --no
expect "lts main" kswap plan --branch ""
# Kernel releases come from --root DIR's boot/, wherever --root stands.
expect "6.18.45-x64v3-xanmod1 6.8.0-48-generic" kswap --root root verify --kernel ""
CWORD=3 expect "6.18.45-x64v3-xanmod1" kswap apply --kernel 6.1 --root root
expect "6.18.45-x64v3-xanmod1" kswap --root=root pin 6.1
expect "6.18.45-x64v3-xanmod1 6.8.0-48-generic" kswap pin --root "$work/root" ""
expect "" kswap --root root pin 6.8.0-48-generic ""
expect "" kswap --root "$work/nothing" verify --kernel ""
# Files: --deb offers directories and .deb files only; --root directories only.
expect "debs/a.deb debs/sub" kswap verify --deb debs/
expect "debs/sub" kswap --root debs/
expect "" kswap accept --timeout ""
expect "" kswap nosuchcommand --
echo "$failed failed"
[ "$failed" = 0 ]
