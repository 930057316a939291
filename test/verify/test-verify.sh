#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kswap verify on synthetic kernels made here: installed trees (with and without depmod's
# indexes), .deb packages (xz, zstd, gzip, none), initramfs images, and broken packages.
# Needs: cc, depmod (kmod), dpkg-deb, xz, zstd, gzip, lz4, cpio, python3.
# Usage: test-verify.sh KSWAP
set -u
kswap=$1
here=$(cd "$(dirname "$0")" && pwd)
mkmod=$here/mkmod.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 checks=0

for tool in cc depmod dpkg-deb xz zstd gzip lz4 cpio python3; do
    if ! command -v "$tool" > /dev/null; then
        echo "SKIP: $tool is not installed"
        exit 77
    fi
done

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# run NAME EXPECTED_EXIT ARGS...: runs kswap with --json, keeps stdout in $work/NAME.json.
run() {
    local name=$1 want=$2
    shift 2
    checks=$((checks + 1))
    "$kswap" --json "$@" > "$work/$name.json" 2> "$work/$name.err"
    local got=$?
    if [ "$got" != "$want" ]; then
        fail "$name: exit $got, expected $want"
        sed 's/^/    /' "$work/$name.err" "$work/$name.json" | head -40
        return 1
    fi
    return 0
}

# check NAME PYTHON-EXPRESSION: evaluates the expression with d = the JSON of run NAME.
check() {
    local name=$1 expr=$2
    checks=$((checks + 1))
    if ! python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
m = {x['name']: x for x in d.get('modules', [])}
f = {x['id']: x for x in d.get('findings', [])}
sys.exit(0 if ($expr) else 1)
" "$work/$name.json"; then
        fail "$name: $expr"
        sed 's/^/    /' "$work/$name.json" | head -60
    fi
}

# mktree ROOT RELEASE: a kernel tree; MISSING, DROP, BBR (3, none, module) shape it.
mktree() {
    local root=$1 rel=$2 d
    d=$root/lib/modules/$rel
    mkdir -p "$d/kernel"
    local k=$d/kernel
    m() { # path name depends [version]
        case " ${MISSING:-} ${DROP:-} " in *" $2 "*) return 0 ;; esac
        "$mkmod" "$k/$1" "$2" "$3" "${4:-}"
    }
    m net/netfilter/nf_tables.ko.zst nf_tables nfnetlink
    m net/netfilter/nfnetlink.ko.xz nfnetlink ""
    m net/netfilter/nf_conntrack.ko nf_conntrack nf_defrag_ipv4,libcrc32c
    m net/ipv4/netfilter/nf_defrag_ipv4.ko.zst nf_defrag_ipv4 ""
    m lib/libcrc32c.ko libcrc32c ""
    # Compressed and ahead of wireguard in the tar: read in a second pass, and what they
    # need, further ahead still, in a third.
    m arch/a/libcurve25519-generic.ko.zst libcurve25519-generic ""
    m arch/x86/crypto/curve25519-x86_64.ko.zst curve25519-x86_64 libcurve25519-generic
    m drivers/net/wireguard/wireguard.ko.xz wireguard udp_tunnel,curve25519-x86_64 1.0.0
    m net/ipv4/udp_tunnel.ko udp_tunnel ""
    m net/sched/sch_cake.ko.zst sch_cake ""
    m drivers/block/virtio_blk.ko virtio_blk virtio,virtio_ring
    m drivers/virtio/virtio_pci.ko virtio_pci virtio,virtio_ring
    m drivers/virtio/virtio.ko virtio ""
    m drivers/virtio/virtio_ring.ko virtio_ring ""
    m net/ipv4/netfilter/ip_tables.ko ip_tables x_tables
    m net/netfilter/x_tables.ko x_tables ""
    m drivers/md/dm-mod.ko dm_mod ""
    m drivers/md/dm-crypt.ko dm_crypt dm_mod
    : > "$d/modules.builtin"
    : > "$d/modules.builtin.modinfo"
    printf 'kernel/net/sched/sch_fq.ko\nkernel/fs/ext4/ext4.ko\nkernel/net/ipv4/tcp_cubic.ko\n' \
        >> "$d/modules.builtin"
    printf 'tcp_cubic.license=GPL\0tcp_cubic.version=2.3\0ext4.license=GPL\0' \
        >> "$d/modules.builtin.modinfo"
    case ${BBR:-3} in
    3)
        echo kernel/net/ipv4/tcp_bbr.ko >> "$d/modules.builtin"
        printf 'tcp_bbr.license=Dual BSD/GPL\0tcp_bbr.version=3\0' >> "$d/modules.builtin.modinfo"
        ;;
    none)
        echo kernel/net/ipv4/tcp_bbr.ko >> "$d/modules.builtin"
        ;;
    module)
        "$mkmod" "$k/net/ipv4/tcp_bbr.ko" tcp_bbr ""
        ;;
    esac
    printf 'kernel/net/sched/sch_cake.ko\n' > "$d/modules.order"
    mkdir -p "$root/boot"
    echo kernel > "$root/boot/vmlinuz-$rel"
}

# mkdeb TREE-ROOT OUT COMPRESSION: a kernel image package of the tree.
mkdeb() {
    local root=$1 out=$2 comp=$3 pkg=$work/pkg.$$
    rm -rf "$pkg"
    mkdir -p "$pkg/DEBIAN"
    cp -a "$root/." "$pkg/"
    rm -rf "$pkg/proc" "$pkg/etc"
    cat > "$pkg/DEBIAN/control" <<CTRL
Package: linux-image-test
Version: 1.0
Architecture: amd64
Maintainer: kswap tests <test@example.org>
Description: synthetic kernel for kswap's tests
CTRL
    dpkg-deb --root-owner-group -Z"$comp" --build "$pkg" "$out" > /dev/null || fail "dpkg-deb $out"
    rm -rf "$pkg"
}

xan=6.18.1-x64v3-xanmod1

# 1. A XanMod-like kernel: tcp_bbr built in, version 3; .ko, .ko.xz and .ko.zst modules.
mktree "$work/xan" "$xan"
run tree-noindex 0 --root "$work/xan" verify --kernel "$xan" &&
    check tree-noindex "d['verdict'] == 'ok' and d['source'] == 'tree' and d['kernel'] == '$xan'" &&
    check tree-noindex "d['bbr_version'] == 3 and m['tcp_bbr']['state'] == 'builtin' and m['tcp_bbr']['version'] == '3'" &&
    check tree-noindex "m['sch_fq']['state'] == 'builtin' and m['nf_tables']['file'] == 'kernel/net/netfilter/nf_tables.ko.zst'" &&
    check tree-noindex "m['wireguard']['version'] == '1.0.0' and m['wireguard']['file'].endswith('.ko.xz')" &&
    check tree-noindex "[x['name'] for x in d['modules']] == ['nf_tables', 'nf_conntrack', 'wireguard', 'sch_cake', 'sch_fq', 'tcp_bbr']" &&
    check tree-noindex "f['modules.missing']['severity'] == 'ok' and f['bbr.not-v3']['severity'] == 'ok'"

# The same tree with depmod's indexes: libkmod lookups, same answer.
cp -a "$work/xan" "$work/xan-idx"
depmod -b "$work/xan-idx" "$xan" 2> /dev/null || fail "depmod"
run tree-index 0 --root "$work/xan-idx" verify --kernel "$xan" &&
    check tree-index "d['modules'] == json.load(open(sys.argv[1].replace('tree-index', 'tree-noindex')))['modules']"

# Straight from packages, every compression dpkg-deb offers.
for comp in xz zstd gzip none; do
    mkdeb "$work/xan" "$work/xan-$comp.deb" "$comp"
    run "deb-$comp" 0 verify --deb "$work/xan-$comp.deb" &&
        check "deb-$comp" "d['source'] == 'deb' and d['verdict'] == 'ok' and d['bbr_version'] == 3" &&
        check "deb-$comp" "d['modules'] == json.load(open(sys.argv[1].replace('deb-$comp', 'tree-noindex')))['modules']"
done
# curve25519-x86_64.ko.zst comes before wireguard in the tar, libcurve25519-generic before it.
run deb-passes 0 --verbose verify --deb "$work/xan-xz.deb"
checks=$((checks + 1))
grep -q 'in 3 pass(es)' "$work/deb-passes.err" || fail "deb-passes: $(cat "$work/deb-passes.err")"
# Without it the wireguard chain is broken two levels down.
DROP=libcurve25519-generic mktree "$work/nolib" "$xan"
mkdeb "$work/nolib" "$work/nolib.deb" zstd
run nolib-deb 2 verify --deb "$work/nolib.deb" &&
    check nolib-deb "m['wireguard']['missing_deps'] == ['libcurve25519_generic']"
# --deb is a path on the running machine, also under --root.
run deb-under-root 0 --root "$work/xan" verify --deb "$work/xan-xz.deb"

# Human output and exit code without --json.
checks=$((checks + 1))
if ! "$kswap" --root "$work/xan" verify --kernel "$xan" > "$work/human.txt" 2>&1 ||
    ! grep -q '^verdict: ok' "$work/human.txt" || ! grep -q 'tcp_bbr .*builtin .*3' "$work/human.txt"; then
    fail "human output"
    cat "$work/human.txt"
fi

# 2. A tree missing sch_cake: blocked.
MISSING=sch_cake mktree "$work/nocake" "$xan"
run nocake 2 --root "$work/nocake" verify --kernel "$xan" &&
    check nocake "d['verdict'] == 'blocked' and m['sch_cake']['state'] == 'missing' and m['sch_cake']['file'] is None" &&
    check nocake "f['modules.missing']['severity'] == 'block' and 'sch_cake' in f['modules.missing']['message']"
mkdeb "$work/nocake" "$work/nocake.deb" zstd
run nocake-deb 2 verify --deb "$work/nocake.deb" &&
    check nocake-deb "m['sch_cake']['state'] == 'missing'"

# 3. A module whose dependency is missing: nf_tables without nfnetlink.
DROP=nfnetlink mktree "$work/nodep" "$xan"
run nodep 2 --root "$work/nodep" verify --kernel "$xan" &&
    check nodep "m['nf_tables']['state'] == 'module' and m['nf_tables']['missing_deps'] == ['nfnetlink']" &&
    check nodep "'nf_tables (needs nfnetlink)' in f['modules.missing']['message']"
mkdeb "$work/nodep" "$work/nodep.deb" xz
run nodep-deb 2 verify --deb "$work/nodep.deb" &&
    check nodep-deb "m['nf_tables']['missing_deps'] == ['nfnetlink']"

# 4. BBR: built in without a version on a XanMod release blocks; on another kernel it warns.
BBR=none mktree "$work/bbr1" "$xan"
run bbr1-xanmod 2 --root "$work/bbr1" verify --kernel "$xan" &&
    check bbr1-xanmod "d['bbr_version'] == 1 and f['bbr.not-v3']['severity'] == 'block'"
BBR=module mktree "$work/bbr1" 6.1.0-99-amd64
run bbr1-debian 0 --root "$work/bbr1" verify --kernel 6.1.0-99-amd64 &&
    check bbr1-debian "d['verdict'] == 'warn' and d['bbr_version'] == 1 and m['tcp_bbr']['state'] == 'module' and f['bbr.not-v3']['severity'] == 'warn'"
# The wanted version and the module list come from kswap.conf (and --config).
mkdir -p "$work/bbr1/etc/kswap/kswap.conf.d"
printf '[verify]\nbbr_version = 1\n' > "$work/bbr1/etc/kswap/kswap.conf"
printf '[verify]\nmodules =\nmodules = tcp_cubic, ext4\n' > "$work/bbr1/etc/kswap/kswap.conf.d/50-local.conf"
run config 0 --root "$work/bbr1" verify --kernel 6.1.0-99-amd64 &&
    check config "d['verdict'] == 'ok' and [x['name'] for x in d['modules']] == ['tcp_cubic', 'ext4'] and m['tcp_cubic']['version'] == '2.3'"
printf '[verify]\nbbr_version = 5\n' > "$work/host.conf"
run config-host 0 --root "$work/bbr1" --config "$work/host.conf" verify --kernel 6.1.0-99-amd64 &&
    check config-host "f['bbr.not-v3']['severity'] == 'warn' and 'not 5' in f['bbr.not-v3']['message']"
run config-missing 1 --root "$work/bbr1" --config "$work/nonexistent.conf" verify --kernel 6.1.0-99-amd64

# 5. Packages that cannot be judged: exit 1, verdict "error".
size=$(stat -c %s "$work/xan-xz.deb")
head -c $((size / 2)) "$work/xan-xz.deb" > "$work/truncated.deb"
run truncated 1 verify --deb "$work/truncated.deb" &&
    check truncated "d['verdict'] == 'error' and 'truncated' in d['error']"
head -c $((size - 100)) "$work/xan-xz.deb" > "$work/truncated-tail.deb"
run truncated-tail 1 verify --deb "$work/truncated-tail.deb"
size=$(stat -c %s "$work/xan-zstd.deb")
head -c $((size - 10)) "$work/xan-zstd.deb" > "$work/truncated-zst.deb"
run truncated-zst 1 verify --deb "$work/truncated-zst.deb"
mkdir -p "$work/empty/usr/share/doc/x"
echo hi > "$work/empty/usr/share/doc/x/README"
mkdeb "$work/empty" "$work/nomodules.deb" xz
run nomodules 1 verify --deb "$work/nomodules.deb" &&
    check nomodules "'no kernel modules' in d['error']"
run notadeb 1 verify --deb "$mkmod"
run nosuchdeb 1 verify --deb "$work/nonexistent.deb"
run nosuchkernel 1 --root "$work/xan" verify --kernel 9.9.9-none
run badrelease 1 --root "$work/xan" verify --kernel ../../etc
# A data.tar with ../ paths is refused, not followed.
python3 - "$work" <<'PY'
import io, os, sys, tarfile
work = sys.argv[1]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    for name, data in [("./lib/modules/6.1.0-1-amd64/modules.builtin", b"kernel/net/ipv4/tcp_bbr.ko\n"),
                       ("./lib/modules/6.1.0-1-amd64/../../../../etc/evil.ko", b"x")]:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
data = buf.getvalue()
ctrl = io.BytesIO()
with tarfile.open(fileobj=ctrl, mode="w:gz") as t:
    info = tarfile.TarInfo("./control")
    c = b"Package: evil\nVersion: 1\nArchitecture: all\nMaintainer: x <x@x>\nDescription: x\n"
    info.size = len(c)
    t.addfile(info, io.BytesIO(c))
def member(name, content):
    h = b"%-16s%-12s%-6s%-6s%-8s%-10s`\n" % (name.encode(), b"0", b"0", b"0", b"100644", str(len(content)).encode())
    return h + content + (b"\n" if len(content) % 2 else b"")
with open(os.path.join(work, "dotdot.deb"), "wb") as f:
    f.write(b"!<arch>\n" + member("debian-binary", b"2.0\n") + member("control.tar.gz", ctrl.getvalue()) + member("data.tar", data))
PY
run dotdot 1 verify --deb "$work/dotdot.deb" &&
    check dotdot "'unsafe path' in d['error']"
checks=$((checks + 1))
[ -e "$work/etc/evil.ko" ] && fail "dotdot: wrote outside"

# 6. The initramfs: the root device's drivers (virtio_blk on virtio_pci) and ext4 (built in).
mkroot_sys() { # ROOT: / on /dev/vda1 (252:1), virtio disk on a PCI function
    local r=$1 pci=$1/sys/devices/pci0000:00/0000:00:04.0
    mkdir -p "$r/proc/self" "$pci/virtio2/block/vda/vda1" "$r/sys/dev/block" \
        "$r/sys/bus/virtio/drivers/virtio_blk" "$r/sys/bus/pci/drivers/virtio-pci" "$r/boot"
    echo '25 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw' > "$r/proc/self/mountinfo"
    echo 1 > "$pci/virtio2/block/vda/vda1/partition"
    ln -s ../../../virtio2 "$pci/virtio2/block/vda/device"
    ln -s ../../../../bus/virtio/drivers/virtio_blk "$pci/virtio2/driver"
    ln -s ../../../../bus/virtio "$pci/virtio2/subsystem"
    ln -s ../../../bus/pci/drivers/virtio-pci "$pci/driver"
    ln -s ../../../bus/pci "$pci/subsystem"
    ln -s ../../devices/pci0000:00/0000:00:04.0/virtio2/block/vda/vda1 "$r/sys/dev/block/252:1"
    echo kernel > "$r/boot/vmlinuz-$xan"
}
# mkinitrd ROOT COMPRESSOR MODULES...: early microcode (plain cpio), then the main archive.
mkinitrd() {
    local r=$1 comp=$2 tmp=$work/initrd.$$
    shift 2
    rm -rf "$tmp"
    mkdir -p "$tmp/early/kernel/x86/microcode" "$tmp/main/usr/lib/modules/$xan/kernel" "$tmp/main/usr/bin"
    echo ucode > "$tmp/early/kernel/x86/microcode/GenuineIntel.bin"
    echo sh > "$tmp/main/usr/bin/sh"
    for m in "$@"; do
        find "$r/lib/modules/$xan/kernel" -name "$m.ko*" -exec cp {} "$tmp/main/usr/lib/modules/$xan/kernel/" \;
    done
    (cd "$tmp/early" && find . | cpio -o -H newc --quiet) > "$r/boot/initrd.img-$xan"
    (cd "$tmp/main" && find . | cpio -o -H newc --quiet | $comp) >> "$r/boot/initrd.img-$xan"
    rm -rf "$tmp"
}
mktree "$work/vm" "$xan"
mkroot_sys "$work/vm"
for comp in "zstd -q -c" "xz -c" "gzip -c" "lz4 -l -q -c"; do
    tag=${comp%% *}
    mkinitrd "$work/vm" "$comp" virtio_blk virtio_pci virtio virtio_ring
    run "initrd-$tag" 0 --root "$work/vm" verify --kernel "$xan" &&
        check "initrd-$tag" "f['initrd.missing-driver']['severity'] == 'ok' and 'virtio_blk' in f['initrd.missing-driver']['message'] and 'virtio_pci' in f['initrd.missing-driver']['message']"
done
mkinitrd "$work/vm" "zstd -q -c" virtio_pci virtio virtio_ring
run initrd-no-virtio-blk 2 --root "$work/vm" verify --kernel "$xan" &&
    check initrd-no-virtio-blk "d['verdict'] == 'blocked' and f['initrd.missing-driver']['severity'] == 'block' and f['initrd.missing-driver']['message'].endswith('missing from its initrd: virtio_blk')"
mkinitrd "$work/vm" "zstd -q -c" virtio_blk virtio_pci virtio
run initrd-no-dep 2 --root "$work/vm" verify --kernel "$xan" &&
    check initrd-no-dep "f['initrd.missing-driver']['message'].endswith(': virtio_ring')"
rm "$work/vm/boot/initrd.img-$xan"
run initrd-none 2 --root "$work/vm" verify --kernel "$xan" &&
    check initrd-none "f['initrd.missing-driver']['severity'] == 'block' and 'does not exist' in f['initrd.missing-driver']['message']"
echo garbage > "$work/vm/boot/initrd.img-$xan"
run initrd-garbage 1 --root "$work/vm" verify --kernel "$xan"

# LVM on LUKS on /dev/vda2: dm-0 (LVM) on dm-1 (crypt) on the virtio disk.
mkinitrd "$work/vm" "zstd -q -c" virtio_blk virtio_pci virtio virtio_ring dm-mod
v=$work/vm/sys/devices/virtual/block
pci=sys/devices/pci0000:00/0000:00:04.0
mkdir -p "$v/dm-0/dm" "$v/dm-0/slaves" "$v/dm-1/dm" "$v/dm-1/slaves" "$work/vm/$pci/virtio2/block/vda/vda2"
echo 2 > "$work/vm/$pci/virtio2/block/vda/vda2/partition"
echo LVM-abc > "$v/dm-0/dm/uuid"
echo CRYPT-LUKS2-def-vda2_crypt > "$v/dm-1/dm/uuid"
ln -s ../../dm-1 "$v/dm-0/slaves/dm-1"
ln -s ../../../../pci0000:00/0000:00:04.0/virtio2/block/vda/vda2 "$v/dm-1/slaves/vda2"
ln -s ../../devices/virtual/block/dm-0 "$work/vm/sys/dev/block/254:0"
echo '25 1 254:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw' > "$work/vm/proc/self/mountinfo"
run initrd-lvm-luks 2 --root "$work/vm" verify --kernel "$xan" &&
    check initrd-lvm-luks "f['initrd.missing-driver']['message'].endswith('missing from its initrd: dm_crypt')"
mkinitrd "$work/vm" "zstd -q -c" virtio_blk virtio_pci virtio virtio_ring dm-mod dm-crypt
run initrd-lvm-luks-ok 0 --root "$work/vm" verify --kernel "$xan" &&
    check initrd-lvm-luks-ok "f['initrd.missing-driver']['severity'] == 'ok' and '(dm_mod, dm_crypt, virtio_blk, virtio_pci, ext4)' in f['initrd.missing-driver']['message']"

# 7. The workload: modules loaded now that the new kernel lacks.
printf 'wireguard 98304 0 - Live 0x0\nip_tables 32768 0 - Live 0x0\nxt_conntrack 16384 1 - Live 0x0\nnft_compat 20480 0 - Live 0x0\n' \
    > "$work/xan/proc-modules"
mkdir -p "$work/xan/proc"
mv "$work/xan/proc-modules" "$work/xan/proc/modules"
run workload 0 --root "$work/xan" verify --kernel "$xan" &&
    check workload "d['verdict'] == 'warn' and f['modules.workload-missing']['severity'] == 'warn' and f['modules.workload-missing']['message'].endswith(': nft_compat, xt_conntrack')"
run workload-deb 0 --root "$work/xan" verify --deb "$work/xan-zstd.deb" &&
    check workload-deb "f['modules.workload-missing']['message'].endswith(': nft_compat, xt_conntrack')"

# 8. Usage errors.
run usage-none 1 verify
run usage-both 1 verify --kernel a --deb b

echo "$checks checks, $failures failed"
[ "$failures" = 0 ]
