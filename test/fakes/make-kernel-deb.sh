#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds a synthetic kernel image package with dpkg-deb: lib/modules/RELEASE with tiny real ELF
# modules (made by test/verify/mkmod.sh: a .modinfo section with name=, depends=, version=,
# vermagic=RELEASE SMP mod_unload), modules.builtin, modules.builtin.modinfo, modules.order,
# and boot/vmlinuz-RELEASE (synthetic-vmlinuz.py: a bzImage's setup header, not bootable) and
# boot/initrd.img-RELEASE (optional). No depmod indexes: like a
# real package, its postinst (here the fake apt-get) runs depmod.
#
# Usage: make-kernel-deb.sh RELEASE OUT.deb [options]
#   --package NAME       package name (default linux-image-RELEASE)
#   --version VERSION    package version (default 1.0)
#   --bbr MODE           tcp_bbr: module (default: tcp_bbr.ko, version=3), builtin (built in,
#                        tcp_bbr.version=3 in modules.builtin.modinfo, as XanMod), builtin-v1 and
#                        module-v1 (no version: BBRv1), none (no tcp_bbr at all)
#   --bbr-builtin        the same as --bbr builtin
#   --without NAME       leave module NAME out (repeatable), e.g. --without sch_cake or
#                        --without softdog (the trial's watchdog without a device)
#   --compress KIND      module files .ko (none, default), .ko.xz (xz) or .ko.zst (zst)
#   --no-boot            ship neither boot/vmlinuz-RELEASE nor boot/initrd.img-RELEASE
#   --no-initrd          ship boot/vmlinuz-RELEASE only
#   --initrd-without M   leave module M out of the (real, zstd cpio) initrd
#   --deb-compression C  dpkg-deb -Z (xz, zstd, gzip, none; default xz)
#   --meta               a metapackage instead, as XanMod's linux-xanmod-lts-x64v3: no files,
#                        Depends: linux-image-RELEASE (give its name with --package)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mkmod=$here/../verify/mkmod.sh

usage() {
    awk '/^set -eu/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0" >&2
    exit 2
}
[ $# -ge 2 ] || usage
release=$1 out=$2
shift 2
case $release in */* | "" | .*) echo "make-kernel-deb: bad release '$release'" >&2; exit 2 ;; esac

initrd_without=" "
package=linux-image-$release version=1.0 bbr=module suffix=.ko boot=1 initrd=1 debz=xz meta=0
without=" "
while [ $# -gt 0 ]; do
    case $1 in
    --package) package=$2; shift ;;
    --version) version=$2; shift ;;
    --bbr) bbr=$2; shift ;;
    --bbr-builtin) bbr=builtin ;;
    --without) without="$without$2 "; shift ;;
    --compress)
        case $2 in
        none | ko) suffix=.ko ;;
        xz) suffix=.ko.xz ;;
        zst | zstd) suffix=.ko.zst ;;
        *) echo "make-kernel-deb: unknown compression '$2'" >&2; exit 2 ;;
        esac
        shift
        ;;
    --no-boot) boot=0 initrd=0 ;;
    --no-initrd) initrd=0 ;;
    --initrd-without)
        initrd_without="$initrd_without $2 "
        shift
        ;;
    --deb-compression) debz=$2; shift ;;
    --meta) meta=1 ;;
    -h | --help) usage ;;
    *) echo "make-kernel-deb: unknown option '$1'" >&2; usage ;;
    esac
    shift
done
case $bbr in module | module-v1 | builtin | builtin-v1 | none) ;; *)
    echo "make-kernel-deb: unknown --bbr mode '$bbr'" >&2
    exit 2
    ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$meta" = 1 ]; then
    mkdir -p "$work/meta/DEBIAN"
    cat > "$work/meta/DEBIAN/control" << CTRL
Package: $package
Version: $version
Architecture: amd64
Maintainer: kswap tests <test@example.org>
Depends: linux-image-$release
Section: kernel
Priority: optional
Description: synthetic kernel metapackage for kswap's tests
 Depends on linux-image-$release, as XanMod's metapackages depend on their kernel.
CTRL
    mkdir -p "$(dirname "$out")"
    dpkg-deb --root-owner-group -Z"$debz" --build "$work/meta" "$out" > /dev/null
    exit 0
fi
pkg=$work/pkg
mods=$pkg/lib/modules/$release
mkdir -p "$pkg/DEBIAN" "$mods/kernel"
export MKMOD_VERMAGIC="$release SMP mod_unload"

# mod PATH NAME DEPENDS [VERSION]: one module under kernel/, unless left out.
mod() {
    case $without in *" $2 "*) return 0 ;; esac
    "$mkmod" "$mods/kernel/$1$suffix" "$2" "$3" "${4:-}"
    echo "kernel/$1$suffix" >> "$mods/modules.order"
}
: > "$mods/modules.order"
mod net/netfilter/nfnetlink nfnetlink ""
mod net/netfilter/nf_tables nf_tables nfnetlink
mod lib/libcrc32c libcrc32c ""
mod net/ipv4/netfilter/nf_defrag_ipv4 nf_defrag_ipv4 ""
mod net/ipv6/netfilter/nf_defrag_ipv6 nf_defrag_ipv6 ""
mod net/netfilter/nf_conntrack nf_conntrack nf_defrag_ipv4,nf_defrag_ipv6,libcrc32c
mod net/ipv4/udp_tunnel udp_tunnel ""
mod net/ipv6/ip6_udp_tunnel ip6_udp_tunnel ""
mod arch/x86/crypto/curve25519-x86_64 curve25519-x86_64 ""
mod drivers/net/wireguard/wireguard wireguard udp_tunnel,ip6_udp_tunnel,curve25519-x86_64 1.0.0
mod net/sched/sch_cake sch_cake ""
mod net/sched/sch_fq sch_fq ""
mod drivers/block/virtio_blk virtio_blk ""
mod drivers/watchdog/softdog softdog ""

# Built in: what the kernel has without loading anything (ext4, tcp_cubic as in Debian).
{
    echo kernel/fs/ext4/ext4.ko
    echo kernel/net/ipv4/tcp_cubic.ko
} > "$mods/modules.builtin"
printf 'ext4.license=GPL\0tcp_cubic.license=GPL\0tcp_cubic.version=2.3\0' \
    > "$mods/modules.builtin.modinfo"
case $without in *" tcp_bbr "*) bbr=none ;; esac
case $bbr in
module) mod net/ipv4/tcp_bbr tcp_bbr "" 3 ;;
module-v1) mod net/ipv4/tcp_bbr tcp_bbr "" ;;
builtin | builtin-v1)
    echo kernel/net/ipv4/tcp_bbr.ko >> "$mods/modules.builtin"
    printf 'tcp_bbr.license=Dual BSD/GPL\0' >> "$mods/modules.builtin.modinfo"
    [ "$bbr" = builtin ] && printf 'tcp_bbr.version=3\0' >> "$mods/modules.builtin.modinfo"
    ;;
esac

if [ "$boot" = 1 ]; then
    mkdir -p "$pkg/boot"
    python3 "$here/synthetic-vmlinuz.py" "$release" "$pkg/boot/vmlinuz-$release"
    printf 'synthetic config %s\nCONFIG_TCP_CONG_BBR=%s\n' "$release" \
        "$(case $bbr in builtin*) echo y ;; none) echo n ;; *) echo m ;; esac)" \
        > "$pkg/boot/config-$release"
    if [ "$initrd" = 1 ]; then
        # A real initramfs as update-initramfs makes it: a zstd-compressed newc cpio with the
        # root disk's driver (virtio_blk); --initrd-without NAME leaves a module out of it.
        ird=$work/initrd
        mkdir -p "$ird/usr/lib/modules/$release"
        (cd "$mods" && find kernel -name '*.ko*' | while read -r f; do
            n=$(basename "$f"); n=${n%%.ko*}
            case "virtio_blk" in "$n") ;; *) continue ;; esac
            case $initrd_without in *" $n "*) continue ;; esac
            mkdir -p "$ird/usr/lib/modules/$release/$(dirname "$f")"
            cp "$f" "$ird/usr/lib/modules/$release/$f"
        done)
        (cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | zstd -q -c > "$pkg/boot/initrd.img-$release"
    fi
fi

cat > "$pkg/DEBIAN/control" << CTRL
Package: $package
Version: $version
Architecture: amd64
Maintainer: kswap tests <test@example.org>
Installed-Size: $(du -sk "$pkg" | cut -f1)
Provides: linux-image, wireguard-modules (= 1.0.0)
Section: kernel
Priority: optional
Description: synthetic Linux kernel $release for kswap's tests
 Tiny ELF modules with real .modinfo sections; not bootable.
CTRL
mkdir -p "$(dirname "$out")"
dpkg-deb --root-owner-group -Z"$debz" --build "$pkg" "$out" > /dev/null
