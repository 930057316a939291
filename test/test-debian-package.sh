#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the Debian package from the tree (dpkg-buildpackage -b in a copy of the tracked files,
# tests left to the other suites) and checks what it installs. Usage: test-debian-package.sh SRC
set -euo pipefail
src=$1
for t in dpkg-buildpackage dh git; do
    command -v "$t" > /dev/null || { echo "skip: $t is not installed"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The README's one command (test/dev.sh deb), without its apt-get.
if ! (cd "$src" && KSWAP_NO_APT=1 bash test/dev.sh deb "$work") > "$work/build.log" 2>&1; then
    tail -40 "$work/build.log"
    echo "FAIL: test/dev.sh deb"
    exit 1
fi
deb=$(ls "$work"/kswap_*.deb)
contents=$(dpkg-deb -c "$deb")
failed=0
for want in usr/sbin/kswap systemd/system/kswap-accept.service man8/kswap.8 man5/kswap.conf.5 \
            bash-completion/completions/kswap etc/kswap/kswap.conf share/kswap/keys/xanmod-archive-keyring.asc \
            systemd/system-generators/kswap-trial-generator kswap/kswap-trial-mark \
            kswap/kswap-trial-watchdog etc/apt/apt.conf.d/50kswap-metrics; do
    if grep -q "$want" <<< "$contents"; then echo "ok   $want"; else echo "FAIL $want missing"; failed=1; fi
done
dpkg-deb -f "$deb" Depends | grep -q libkmod2 && echo "ok   Depends names the dlopen()ed libkmod2" ||
    { echo "FAIL Depends lacks libkmod2"; failed=1; }
exit $failed
