#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The fake apt-get and systemctl against a temporary root, with kernel packages made by
# make-kernel-deb.sh: install (by file and by name), dpkg status, depmod's indexes, modinfo,
# kswap verify on the result, remove/purge, failure modes; systemctl's log, reboot marker and
# is-active answers.
# Needs: cc, dpkg-deb, depmod, modinfo (kmod), xz, zstd.
# Usage: test-fakes.sh [KSWAP]
set -u
kswap=${1:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
failures=0 checks=0

for tool in cc dpkg-deb depmod modinfo xz zstd timeout; do
    if ! command -v "$tool" > /dev/null; then
        echo "SKIP: $tool is not installed"
        exit 77
    fi
done
# The fakes first on PATH, as kswap finds them, and a guard behind them: a fake gone missing
# (its checkout deleted under a running test) must fail, never fall through to this machine's
# own apt-get or systemctl. That happened once: the real apt-get installed a test kernel.
guard=$work/guard
mkdir -p "$guard"
for f in "$here"/*; do
    name=${f##*/}
    case $name in *.sh | *.py) continue ;; esac
    [ -x "$f" ] || continue
    printf '#!/bin/sh\necho "test-fakes.sh: the fake %s is gone; not running the real one" >&2\nexit 100\n' \
        "$name" > "$guard/$name"
    chmod +x "$guard/$name"
done
export PATH="$here:$guard:$PATH"
unset KSWAP_FAKE_APT_FAIL KSWAP_FAKE_APT_HANG KSWAP_FAKE_APT_GARBAGE KSWAP_FAKE_DEBS \
    KSWAP_FAKE_SYSTEMCTL_FAIL KSWAP_FAKE_SYSTEMCTL_HANG DEBIAN_FRONTEND
# The fake update-grub (another fake) is not part of what is tested here.
export KSWAP_FAKE_APT_HOOKS=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect NAME CONDITION...: runs the condition (a command) and counts it.
expect() {
    local name=$1
    shift
    checks=$((checks + 1))
    if ! "$@"; then
        fail "$name: $*"
        return 1
    fi
    return 0
}

# run NAME WANT_EXIT COMMAND...: output in $work/NAME.out.
run() {
    local name=$1 want=$2 got
    shift 2
    checks=$((checks + 1))
    "$@" > "$work/$name.out" 2>&1
    got=$?
    if [ "$got" != "$want" ]; then
        fail "$name: exit $got, expected $want"
        sed 's/^/    /' "$work/$name.out" | head -30
        return 1
    fi
    return 0
}

has() { grep -q -- "$2" "$1"; }
hasx() { grep -qx -- "$2" "$1"; }
lacks() { ! grep -q -- "$2" "$1"; }
count() { [ "$(grep -c -- "$2" "$1")" = "$3" ]; }

xan=6.18.45-x64v3-xanmod1
deb=$work/debs
mkdir -p "$deb"
"$here/make-kernel-deb.sh" "$xan" "$deb/linux-image-$xan.deb" --bbr-builtin --compress zst ||
    fail "make-kernel-deb xanmod"
"$here/make-kernel-deb.sh" 6.18.46-x64v3-xanmod1 "$deb/nocake.deb" --without sch_cake \
    --compress xz --package linux-image-nocake --no-initrd || fail "make-kernel-deb nocake"
"$here/make-kernel-deb.sh" 6.1.0-99-amd64 "$work/plain.deb" --bbr module-v1 --no-boot \
    --deb-compression zstd || fail "make-kernel-deb plain"

# 1. The package itself: contents, modinfo of the tiny modules, no depmod indexes.
dpkg-deb -c "$deb/linux-image-$xan.deb" > "$work/contents"
expect contents-cake has "$work/contents" "lib/modules/$xan/kernel/net/sched/sch_cake.ko.zst"
expect contents-builtin has "$work/contents" "lib/modules/$xan/modules.builtin.modinfo"
expect contents-vmlinuz has "$work/contents" "boot/vmlinuz-$xan"
expect contents-noindex lacks "$work/contents" "modules.dep"
expect contents-nobbr-ko lacks "$work/contents" "tcp_bbr.ko"
dpkg-deb -c "$deb/nocake.deb" > "$work/contents-nocake"
expect nocake-contents lacks "$work/contents-nocake" sch_cake
expect nocake-xz has "$work/contents-nocake" "nf_tables.ko.xz"
expect nocake-noinitrd lacks "$work/contents-nocake" "initrd.img"
dpkg-deb -c "$work/plain.deb" > "$work/contents-plain"
expect plain-noboot lacks "$work/contents-plain" "boot/"
expect plain-bbr-module has "$work/contents-plain" "tcp_bbr.ko$"
run usage 2 "$here/make-kernel-deb.sh" onlyone
run badopt 2 "$here/make-kernel-deb.sh" 1.0 "$work/x.deb" --frobnicate
run badrelease 2 "$here/make-kernel-deb.sh" ../x "$work/x.deb"

# 2. Never without KSWAP_ROOT, never on /.
run apt-noroot 100 env -u KSWAP_ROOT apt-get install -y "$work/plain.deb" &&
    expect apt-noroot-msg has "$work/apt-noroot.out" "refusing to touch the real system"
run apt-slash 100 env KSWAP_ROOT=/ apt-get update
run apt-slash-dots 100 env KSWAP_ROOT=/tmp/.. apt-get update
run systemctl-noroot 1 env -u KSWAP_ROOT systemctl reboot
run systemctl-slash 1 env KSWAP_ROOT=/ systemctl reboot
expect no-host-marker test ! -e /run/fake-reboot-requested

root=$work/root
mkdir -p "$root/var/lib/dpkg"
# A package that was there before: its stanza must survive installs and removes.
printf 'Package: base-files\nStatus: install ok installed\nVersion: 13\n\n' \
    > "$root/var/lib/dpkg/status"
export KSWAP_ROOT=$root

# 3. update, limited to one source; the list must exist (inside the root or on the host).
mkdir -p "$root/etc/apt/sources.list.d"
echo "Types: deb" > "$root/etc/apt/sources.list.d/xanmod.sources"
run update 0 apt-get update -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/xanmod.sources \
    -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
run update-missing 100 apt-get update -o Dir::Etc::sourcelist=/etc/apt/nothing.sources
expect update-log hasx "$root/var/log/fake-apt.log" \
    "apt-get update -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/xanmod.sources -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0"

# 4. install FILE.deb: unpacked, depmod run, status stanza, log line.
run install-noyes 1 apt-get install "$deb/linux-image-$xan.deb" &&
    expect install-noyes-msg has "$work/install-noyes.out" "Abort"
expect install-noyes-nothing test ! -d "$root/lib/modules/$xan"
run install 0 env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "$deb/linux-image-$xan.deb"
m=$root/lib/modules/$xan
expect install-ko test -f "$m/kernel/net/sched/sch_cake.ko.zst"
expect install-depmod test -s "$m/modules.dep.bin"
expect install-builtin-bin test -s "$m/modules.builtin.bin"
expect install-dep has "$m/modules.dep" "^kernel/net/sched/sch_cake.ko.zst:"
expect install-dep-wg has "$m/modules.dep" "^kernel/drivers/net/wireguard/wireguard.ko.zst:"
expect install-vmlinuz test -f "$root/boot/vmlinuz-$xan"
expect install-status-kept hasx "$root/var/lib/dpkg/status" "Package: base-files"
expect install-status hasx "$root/var/lib/dpkg/status" "Package: linux-image-$xan"
awk -v p="Package: linux-image-$xan" 'BEGIN { RS = "" } index($0, p "\n") == 1' \
    "$root/var/lib/dpkg/status" > "$work/stanza"
expect stanza-status hasx "$work/stanza" "Status: install ok installed"
expect stanza-version hasx "$work/stanza" "Version: 1.0"
expect stanza-arch hasx "$work/stanza" "Architecture: amd64"
expect install-list has "$root/var/lib/dpkg/info/linux-image-$xan.list" "^/lib/modules/$xan/kernel/net/sched/sch_cake.ko.zst$"
expect install-log has "$root/var/log/fake-apt.log" \
    "^DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confdef"
# Real kmod tools read what depmod made.
modinfo -b "$root" -k "$xan" -F vermagic sch_cake > "$work/vermagic" 2>&1
expect modinfo-vermagic hasx "$work/vermagic" "$xan SMP mod_unload"
modinfo -b "$root" -k "$xan" -F version tcp_bbr > "$work/bbr" 2>&1
expect modinfo-bbr-builtin hasx "$work/bbr" 3
modinfo -b "$root" -k "$xan" -F version wireguard > "$work/wg" 2>&1
expect modinfo-wg hasx "$work/wg" 1.0.0
# And so does kswap verify.
if [ -n "$kswap" ]; then
    run verify-installed 0 "$kswap" --root "$root" --json verify --kernel "$xan" &&
        expect verify-installed-ok has "$work/verify-installed.out" '"verdict": *"ok"'
fi

# 5. install by name from KSWAP_FAKE_DEBS (file name or Package field); unknown names fail.
run install-unknown 100 env KSWAP_FAKE_DEBS="$deb" apt-get install -y linux-image-nonexistent &&
    expect install-unknown-msg has "$work/install-unknown.out" "Unable to locate package linux-image-nonexistent"
run install-nodir 100 apt-get install -y linux-image-nocake
run install-name 0 env KSWAP_FAKE_DEBS="$deb" apt-get install -y --no-install-recommends linux-image-nocake
n=$root/lib/modules/6.18.46-x64v3-xanmod1
expect name-depmod test -s "$n/modules.dep.bin"
expect name-nocake test ! -e "$n/kernel/net/sched/sch_cake.ko.xz"
expect name-xz test -f "$n/kernel/net/netfilter/nf_tables.ko.xz"
# It shipped no initrd: a newc cpio, listed as the package's file.
expect name-initrd test -f "$root/boot/initrd.img-6.18.46-x64v3-xanmod1"
expect name-initrd-listed has "$root/var/lib/dpkg/info/linux-image-nocake.list" "^/boot/initrd.img-6.18.46-x64v3-xanmod1$"
if [ -n "$kswap" ]; then
    run verify-nocake 2 "$kswap" --root "$root" --json verify --kernel 6.18.46-x64v3-xanmod1
fi
# No boot files at all: a synthetic bzImage and a newc cpio, as the kernel would load them.
run install-plain 0 apt-get install -y "$work/plain.deb"
expect plain-vmlinuz has "$root/boot/vmlinuz-6.1.0-99-amd64" "HdrS"
expect plain-vmlinuz-release has "$root/boot/vmlinuz-6.1.0-99-amd64" "synthetic kernel image 6.1.0-99-amd64"
expect plain-initrd has "$root/boot/initrd.img-6.1.0-99-amd64" "^070701"
expect plain-initrd-text has "$root/boot/initrd.img-6.1.0-99-amd64" "fake initrd 6.1.0-99-amd64"
modinfo -b "$root" -k 6.1.0-99-amd64 -F version tcp_bbr > "$work/bbr1" 2>&1
expect plain-bbr-v1 test ! -s "$work/bbr1"
# Installing again replaces the stanza instead of adding a second one.
run reinstall 0 apt-get install -y "$work/plain.deb"
expect reinstall-one-stanza count "$root/var/lib/dpkg/status" "^Package: linux-image-6.1.0-99-amd64$" 1

# 6. remove and purge undo it; the rest stays.
run remove 0 apt-get remove -y linux-image-nocake
expect remove-gone test ! -e "$n"
expect remove-boot-gone test ! -e "$root/boot/initrd.img-6.18.46-x64v3-xanmod1"
expect remove-boot-gone2 test ! -e "$root/boot/vmlinuz-6.18.46-x64v3-xanmod1"
expect remove-status lacks "$root/var/lib/dpkg/status" "linux-image-nocake"
expect remove-list test ! -e "$root/var/lib/dpkg/info/linux-image-nocake.list"
expect remove-other-kept test -s "$m/modules.dep.bin"
expect remove-base-kept hasx "$root/var/lib/dpkg/status" "Package: base-files"
run remove-again 0 apt-get remove -y linux-image-nocake &&
    expect remove-again-msg has "$work/remove-again.out" "is not installed"
run purge 0 apt-get purge -y "linux-image-$xan" linux-image-6.1.0-99-amd64
expect purge-gone test ! -e "$root/lib/modules"
expect purge-boot-gone test ! -e "$root/boot/vmlinuz-$xan"
expect purge-status lacks "$root/var/lib/dpkg/status" "linux-image"
expect purge-base-kept hasx "$root/var/lib/dpkg/status" "Package: base-files"
# A package known only from the status file (a fixture root) is forgotten there.
run purge-status-only 0 apt-get purge -y base-files
expect purge-status-only-gone lacks "$root/var/lib/dpkg/status" "base-files"
run remove-noyes 1 apt-get remove linux-image-x
run bad-op 100 apt-get frobnicate
run bad-opt 100 apt-get --frobnicate install -y x

# 7. Failure modes.
run fail 100 env KSWAP_FAKE_APT_FAIL=1 apt-get install -y "$deb/linux-image-$xan.deb" &&
    expect fail-msg has "$work/fail.out" "^E: Sub-process /usr/bin/dpkg returned an error code (1)"
expect fail-nothing test ! -e "$root/lib/modules/$xan"
run fail-update 100 env KSWAP_FAKE_APT_FAIL=update apt-get update &&
    expect fail-update-msg has "$work/fail-update.out" "^E: Some index files failed to download"
run fail-only-update 0 env KSWAP_FAKE_APT_FAIL=update apt-get install -y "$work/plain.deb"
run garbage 0 env KSWAP_FAKE_APT_GARBAGE=1 apt-get remove -y linux-image-6.1.0-99-amd64
expect garbage-binary grep -qaP '\x00|\xff' "$work/garbage.out"
expect garbage-still-worked lacks "$root/var/lib/dpkg/status" "linux-image-6.1.0-99-amd64"
start=$(date +%s)
# timeout signals its whole process group: the fake's sleep goes too.
run hang 124 timeout 2 env KSWAP_FAKE_APT_HANG=1 apt-get update
expect hang-waited test $(($(date +%s) - start)) -ge 2
expect log-every-call test "$(grep -c '' "$root/var/log/fake-apt.log")" -ge 20

# 8. systemctl: log, reboot marker (one line per reboot), is-active from run/fake-units.
run sc-reboot 0 systemctl reboot
expect sc-marker test "$(grep -c '' "$root/run/fake-reboot-requested")" = 1
run sc-reboot2 0 systemctl --no-block reboot
expect sc-marker2 test "$(grep -c '' "$root/run/fake-reboot-requested")" = 2
mkdir -p "$root/run/fake-units"
echo active > "$root/run/fake-units/xray.service"
echo failed > "$root/run/fake-units/wg-quick@wg0.service"
run sc-active 0 systemctl is-active xray.service &&
    expect sc-active-out hasx "$work/sc-active.out" active
run sc-failed 3 systemctl is-active wg-quick@wg0.service &&
    expect sc-failed-out hasx "$work/sc-failed.out" failed
run sc-missing 3 systemctl is-active nothing.service &&
    expect sc-missing-out hasx "$work/sc-missing.out" inactive
run sc-quiet 3 systemctl --quiet is-active nothing.service &&
    expect sc-quiet-out test ! -s "$work/sc-quiet.out"
run sc-any 0 systemctl is-active nothing.service xray.service
run sc-is-failed 0 systemctl is-failed wg-quick@wg0.service
run sc-is-failed-no 1 systemctl is-failed xray.service
run sc-escape 3 systemctl is-active ../../etc/passwd
# A unit that becomes active on the fourth question.
printf 'activating\nactivating\nactivating\nactive\n' > "$root/run/fake-units/late.service"
for i in 1 2 3; do
    run "sc-late-$i" 3 systemctl is-active late.service
done
run sc-late-4 0 systemctl is-active late.service
run sc-late-5 0 systemctl is-active late.service
# show: what a socket-activated sshd looks like (Ubuntu 24.04), as systemctl prints it.
echo inactive > "$root/run/fake-units/ssh.service"
echo ssh.socket > "$root/run/fake-units/ssh.service.triggered-by"
echo active > "$root/run/fake-units/ssh.socket"
printf '0.0.0.0:22 (Stream)\n[::]:22 (Stream)\n' > "$root/run/fake-units/ssh.socket.listen"
run sc-show-svc 0 systemctl show -p Triggers,TriggeredBy,ActiveState,SubState ssh.service &&
    expect sc-show-svc-out diff -u - "$work/sc-show-svc.out" <<'EOF'
ActiveState=inactive
SubState=dead
Triggers=
TriggeredBy=ssh.socket
EOF
run sc-show-sock 0 systemctl show --property=ActiveState,SubState,Triggers,Accept,Listen ssh.socket &&
    expect sc-show-sock-out diff -u - "$work/sc-show-sock.out" <<'EOF'
ActiveState=active
SubState=listening
Triggers=ssh.service
Accept=no
Listen=0.0.0.0:22 (Stream)
Listen=[::]:22 (Stream)
EOF
echo active > "$root/run/fake-units/ssh.service"
run sc-show-sock-running 0 systemctl show -p SubState ssh.socket &&
    expect sc-show-sock-running-out hasx "$work/sc-show-sock-running.out" SubState=running
run sc-show-two 0 systemctl show -p Id ssh.service ssh.socket &&
    expect sc-show-two-out diff -u - "$work/sc-show-two.out" <<'EOF'
Id=ssh.service

Id=ssh.socket
EOF
run sc-other 0 systemctl daemon-reload
run sc-fail 1 env KSWAP_FAKE_SYSTEMCTL_FAIL=reboot systemctl reboot
expect sc-fail-no-marker test "$(grep -c '' "$root/run/fake-reboot-requested")" = 2
run sc-hang 124 timeout 1 env KSWAP_FAKE_SYSTEMCTL_HANG=1 systemctl is-active x.service
run sc-noverb 1 systemctl
expect sc-log hasx "$root/var/log/fake-systemctl.log" "systemctl --no-block reboot"
expect sc-log-active hasx "$root/var/log/fake-systemctl.log" "systemctl --quiet is-active nothing.service"

echo "$checks checks, $failures failed"
[ "$failures" = 0 ]
