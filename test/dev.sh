#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The two set-up commands of the README, for a fresh Debian 12 / Ubuntu 24.04 machine as root:
#   test/dev.sh demo   install what is needed, build, run kswap plan on the example node
#   test/dev.sh test   install what is needed, build twice, run every suite, print the summary
#   test/dev.sh deb [DIR]  install what is needed, build the Debian package kswap_VERSION_amd64.deb
#                      from the tracked files (a clean copy, dpkg-buildpackage -b) into DIR
#                      (default: the checkout); then: apt install ./kswap_*.deb
# .ci/run calls 'test/dev.sh test'. KSWAP_NO_APT=1 skips the package installation; KSWAP_VM=0
# leaves out the whole-VM suites (vm and vm-powercut: Debian 12 VMs under qemu, about 30
# minutes with the image build).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}

# Build: meson, a C compiler, the libraries. Tests: real tools instead of mocks (grub-editenv,
# mkfs, depmod/modinfo, gpg, qemu with Debian's GRUB), clang for the fuzz and sanitizer build.
build_pkgs="meson ninja-build pkg-config gcc libc6-dev libblkid-dev libjson-c-dev libkmod-dev
  libarchive-dev liblzma-dev libzstd-dev libgpgme-dev libgpg-error-dev libinih-dev libmnl-dev scdoc python3"
test_pkgs="clang systemd e2fsprogs btrfs-progs dosfstools fdisk kmod xz-utils zstd cpio gzip lz4
  dpkg-dev gpg gpgv grub-common grub-pc-bin qemu-system-x86 qemu-utils ovmf mtools time util-linux strace
  nftables iproute2 ansible-core openssh-client cloud-image-utils bash-completion debhelper mmdebstrap clang-format apt-utils prometheus python3-yaml"

install_packages() {
  [ "${KSWAP_NO_APT:-0}" = 1 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "dev.sh: run as root (it installs packages with apt-get), or set KSWAP_NO_APT=1" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $build_pkgs ${1:-}
  if [ -n "${1:-}" ]; then
    # libFuzzer and the sanitizer runtimes ship with the matching compiler-rt package.
    local v
    v=$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
    apt-get install -y -q --no-install-recommends "libclang-rt-$v-dev" ||
      echo "dev.sh: libclang-rt-$v-dev not available; the fuzz suite will be skipped" >&2
  fi
}

case "$mode" in
demo)
  install_packages ""
  [ -d build ] || meson setup build
  ninja -C build cmd/kswap
  echo
  echo "\$ kswap --root test/roots/ubuntu-24.04-kvm/root plan"
  ./build/cmd/kswap --root test/roots/ubuntu-24.04-kvm/root plan || true
  ;;
test)
  install_packages "$test_pkgs"
  logs=()
  t0=$SECONDS
  # 1. plain build: every suite; qemu-extra and vm-extra (the long runs, see the README) only
  # by hand: meson test --suite X
  [ -d build ] || meson setup build
  ninja -C build
  export KSWAP_VM=${KSWAP_VM:-1}
  meson test -C build --print-errorlogs --num-processes 2 --no-rebuild \
    --no-suite qemu-extra --no-suite vm-extra --no-suite vm --no-suite vm-powercut || true
  logs+=(build/meson-logs/testlog.json)
  t_plain=$((SECONDS - t0))
  # then the whole-VM suite (one VM at a time) and, beside it, the reduced power-cut matrix:
  # a VM under TCG waits for its guest more than it computes, and the two share the image
  meson test -C build --print-errorlogs --no-rebuild --suite vm-powercut --logbase powercut \
    > build/meson-logs/powercut.out 2>&1 &
  pc=$!
  meson test -C build --print-errorlogs --no-rebuild --suite vm --logbase vm || true
  wait "$pc" || true
  cat build/meson-logs/powercut.out
  # meson shows a passing test's output nowhere: the matrix's verdict line and any unsafe point
  grep -aE '^(power cuts:|matrix:|  unsafe )' build/meson-logs/powercut.txt 2>/dev/null || true
  logs+=(build/meson-logs/vm.json build/meson-logs/powercut.json)
  t_vm=$((SECONDS - t0 - t_plain))
  # 2. ASan + UBSan (clang, with libFuzzer targets): unit, fixture roots and bounded fuzzing
  fuzz=true
  echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' > /tmp/kswap-fuzz-probe.c
  clang -fsanitize=fuzzer,address /tmp/kswap-fuzz-probe.c -o /tmp/kswap-fuzz-probe 2>/dev/null || fuzz=false
  [ -d build-san ] || CC=clang meson setup build-san -Db_sanitize=address,undefined -Db_lundef=false \
    -Dfuzz=$fuzz -Dfuzz_seconds="${KSWAP_FUZZ_SECONDS:-20}"
  ninja -C build-san
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-san --print-errorlogs --num-processes 2 --suite unit --suite roots --suite fuzz || true
  logs+=(build-san/meson-logs/testlog.json)
  echo "phases: plain $((t_plain / 60)) min, VM suite and power cuts $((t_vm / 60)) min," \
    "ASan+UBSan $(((SECONDS - t0 - t_plain - t_vm) / 60)) min, in all $(((SECONDS - t0) / 60)) min"
  python3 test/summarize.py "${logs[@]}"
  ;;
deb)
  out=$(realpath "${2:-.}")
  install_packages "debhelper dpkg-dev fakeroot bash-completion systemd git"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir "$work/kswap"
  # Tracked and new (not ignored) files, as a fresh clone would have them.
  git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - --no-recursion |
    tar -xf - -C "$work/kswap"
  (cd "$work/kswap" && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -b -us -uc) > "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log" >&2; echo "dev.sh: dpkg-buildpackage failed" >&2; exit 1; }
  cp "$work"/kswap_*.deb "$out/"
  ls "$out"/kswap_*.deb
  ;;
*)
  echo "usage: $0 demo|test|deb [DIR]" >&2
  exit 1
  ;;
esac
