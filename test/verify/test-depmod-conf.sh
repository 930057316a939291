#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The root's depmod.d against the real depmod: for each case a module tree and a depmod.d
# under a temp root; kswap verify reads the tree without indexes (its own walk and ranking),
# then real `depmod -b ROOT -C ROOT/etc/depmod.d -C ... RELEASE` (the root's directories in
# depmod's order: -b alone would read the host's /etc/depmod.d) writes modules.dep, and for
# every module the file kswap chose must be the one modules.dep lists. Then kswap reads the
# indexes depmod wrote and must agree too.
# Needs: cc, depmod (kmod), python3.  Usage: test-depmod-conf.sh KSWAP
set -u
kswap=$1
here=$(cd "$(dirname "$0")" && pwd)
mkmod=$here/mkmod.sh
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && echo "keeping $work"
rel=6.8.0-41-generic
failures=0 checks=0

for tool in cc depmod python3; do
    command -v "$tool" > /dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# One compiled module, copied under every name a case needs (the .modinfo name is not what
# depmod or kswap rank by: the file name is).
"$mkmod" "$work/proto.ko" proto "" || { echo "mkmod failed"; exit 1; }

# conf DIR NAME TEXT: a depmod.d file inside the case's root ("-> TARGET" makes a link).
conf() {
    mkdir -p "$root/$1"
    case $3 in
    "-> "*) ln -s "${3#-> }" "$root/$1/$2" ;;
    *) printf '%b' "$3" > "$root/$1/$2" ;;
    esac
}

# mods PATH...: module files below lib/modules/REL (.ko.xz / .ko.zst compressed).
mods() {
    local p
    for p in "$@"; do
        mkdir -p "$(dirname "$tree/$p")"
        case $p in
        *.ko.xz) xz -c "$work/proto.ko" > "$tree/$p" ;;
        *.ko.zst) zstd -q -c "$work/proto.ko" > "$tree/$p" ;;
        *) cp "$work/proto.ko" "$tree/$p" ;;
        esac
    done
}

# begin NAME: a fresh root for one case.
begin() {
    name=$1
    root=$work/$name
    tree=$root/lib/modules/$rel
    rm -rf "$root"
    mkdir -p "$tree" "$root/etc/kswap"
    # Every kernel ships one; without it depmod writes an empty modules.builtin.bin, which
    # libkmod cannot load (kswap then walks the tree and the index check proves nothing).
    printf 'kernel/lib/crc32c.ko\n' > "$tree/modules.builtin"
}

# kswap_files OUT: module -> file as kswap verify resolves them (every module of the tree).
kswap_files() {
    local names
    names=$(find "$tree" -name '*.ko*' -printf '%f\n' | sed 's/\.ko.*//; s/-/_/g' | sort -u | tr '\n' ' ')
    printf '[verify]\nmodules = %s\nbbr_version = 1\n' "$names" > "$root/etc/kswap/kswap.conf"
    "$kswap" --root "$root" --json verify --kernel "$rel" > "$1.json" 2> "$1.err"
    python3 - "$1.json" > "$1" << 'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for m in sorted(d.get("modules", []), key=lambda m: m["name"]):
    print(m["name"], m.get("file"))
EOF
}

# finish: compare kswap (walk), depmod's modules.dep, kswap (indexes).
finish() {
    local dirs=() d before=$failures
    checks=$((checks + 1))
    kswap_files "$work/$name.walk"
    for d in etc/depmod.d run/depmod.d usr/local/lib/depmod.d usr/lib/depmod.d lib/depmod.d; do
        [ -e "$root/$d" ] && dirs+=(-C "$root/$d")
    done
    # No -C at all would read the host's: give an empty directory then.
    [ ${#dirs[@]} -eq 0 ] && mkdir -p "$work/empty.d" && dirs=(-C "$work/empty.d")
    if ! depmod -b "$root" "${dirs[@]}" "$rel" 2> "$work/$name.depmod.err"; then
        fail "$name: depmod failed: $(cat "$work/$name.depmod.err")"
        return
    fi
    python3 - "$tree/modules.dep" > "$work/$name.dep" << 'EOF'
import re, sys
for line in open(sys.argv[1]):
    path = line.split(":", 1)[0]
    name = re.sub(r"\.ko(\.(xz|zst|gz))?$", "", path.rsplit("/", 1)[-1]).replace("-", "_")
    print(name, path)
EOF
    sort -o "$work/$name.dep" "$work/$name.dep"
    if ! diff -u "$work/$name.dep" "$work/$name.walk" > "$work/$name.diff"; then
        fail "$name: kswap's walk differs from depmod's modules.dep (- depmod, + kswap)"
        sed 's/^/    /' "$work/$name.diff" "$work/$name.walk.err"
    fi
    checks=$((checks + 1))
    if [ ! -s "$tree/modules.builtin.bin" ]; then
        fail "$name: depmod wrote no modules.builtin.bin"
        return
    fi
    kswap_files "$work/$name.idx"
    if ! diff -u "$work/$name.dep" "$work/$name.idx" > "$work/$name.idiff"; then
        fail "$name: kswap with depmod's indexes differs from modules.dep"
        sed 's/^/    /' "$work/$name.idiff" "$work/$name.idx.err"
    fi
    [ "$failures" = "$before" ] && echo "ok: $name ($(wc -l < "$work/$name.dep") modules)"
}

begin no-depmod.d
mods kernel/net/a.ko updates/a.ko kernel/b.ko extra/c.ko kernel/c.ko
finish

begin ubuntu
conf etc/depmod.d ubuntu.conf '# Ubuntu\nsearch updates ubuntu built-in\n'
mods kernel/a.ko ubuntu/a.ko ubuntu/b.ko updates/dkms/b.ko kernel/c.ko extra/c.ko \
    kernel/d.ko ubuntu/sub/d.ko.zst
finish

begin built-in-first
conf lib/depmod.d 00.conf 'search built-in updates\n'
mods kernel/a.ko updates/a.ko updates/b.ko extra/b.ko
finish

begin override
conf etc/depmod.d o.conf 'override a * extra\noverride b 5\\\\.[0-9]* extra\noverride c ^6\\\\.8 extra\n'
mods updates/a.ko extra/a.ko updates/b.ko extra/b.ko updates/c.ko extra/c.ko.xz \
    updates/d.ko extra/sub/d.ko
finish

begin exclude
conf etc/depmod.d x.conf 'exclude updates weird\n'
mods updates/a.ko kernel/a.ko kernel/weird/b.ko extra/b.ko kernel/build/c.ko extra/c.ko
finish

begin one-search-dir
mods updates/x/a.ko updates/y/a.ko updates/z/a.ko kernel/p/b.ko kernel/q/b.ko
finish

begin precedence
# etc hides lib's file of the same name; names sort across directories; a later search line
# adds words after the first file's.
conf lib/depmod.d 50-ubuntu.conf 'search updates ubuntu built-in\n'
conf etc/depmod.d 50-ubuntu.conf 'search ubuntu built-in\n'
conf run/depmod.d 10-first.conf 'search extra\n'
conf usr/local/lib/depmod.d notconf.txt 'search updates\n'
mods updates/a.ko ubuntu/a.ko extra/b.ko ubuntu/b.ko kernel/c.ko updates/c.ko
finish

begin masked
conf lib/depmod.d ubuntu.conf 'search ubuntu built-in\n'
conf etc/depmod.d ubuntu.conf '-> /dev/null'
mods updates/a.ko ubuntu/a.ko kernel/b.ko ubuntu/b.ko
finish

begin continuation
conf etc/depmod.d c.conf 'search \\\n  ubuntu\tbuilt-in\n#search updates\n\ninclude foo\nbogus words\n'
mods updates/a.ko ubuntu/a.ko kernel/b.ko updates/b.ko
finish

begin dashes
mods updates/a-b.ko kernel/a_b.ko kernel/x_y.ko extra/x-y.ko
finish

begin linked-dir
mods kernel/a.ko other/b.ko updates/real/c.ko
ln -s ../other "$tree/updates/link"
finish

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
