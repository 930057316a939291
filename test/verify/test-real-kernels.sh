#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kswap verify on real Debian 12 kernel packages (fetched once into ${KS_CACHE}): straight from
# the .deb, then from the unpacked tree without and with depmod's indexes; all three agree.
# Skips (77) only when the archive cannot be reached. Usage: test-real-kernels.sh KSWAP
set -u
kswap=$1
here=$(cd "$(dirname "$0")" && pwd)
debs=$("$here/fetch-kernels.sh" generic cloud)
rc=$?
if [ $rc = 77 ]; then
    echo "SKIP: cannot fetch Debian kernel packages"
    exit 77
elif [ $rc != 0 ]; then
    echo "FAIL: fetch-kernels.sh exited $rc"
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 checks=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

check() { # JSON-FILE PYTHON-EXPRESSION
    checks=$((checks + 1))
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
m = {x['name']: x for x in d.get('modules', [])}
f = {x['id']: x for x in d.get('findings', [])}
sys.exit(0 if ($2) else 1)
" "$1" || { fail "$(basename "$1"): $2"; head -c 3000 "$1"; }
}

printf '[verify]\nmodules = tcp_cubic nf_tables nf_conntrack wireguard sch_cake sch_fq tcp_bbr nft_compat ip_tables\n' \
    > "$work/all.conf"
for deb in $debs; do
    tag=$(basename "$deb" .deb)
    echo "checking $tag"
    rel=$(dpkg-deb -f "$deb" Package | sed 's/^linux-image-//')
    checks=$((checks + 1))
    "$kswap" --json verify --deb "$deb" > "$work/$tag.deb.json" 2> "$work/err"
    [ $? = 0 ] || { fail "$tag: verify --deb exit"; cat "$work/err"; }
    check "$work/$tag.deb.json" "d['kernel'] == '$rel' and d['source'] == 'deb' and d['verdict'] == 'warn'"
    check "$work/$tag.deb.json" "all(m[n]['state'] == 'module' and m[n]['missing_deps'] == [] for n in ['nf_tables', 'nf_conntrack', 'wireguard', 'sch_cake', 'sch_fq', 'tcp_bbr'])"
    check "$work/$tag.deb.json" "d['bbr_version'] == 1 and m['tcp_bbr']['version'] is None and f['bbr.not-v3']['severity'] == 'warn'"
    check "$work/$tag.deb.json" "f['modules.missing']['severity'] == 'ok'"
    "$kswap" --json --config "$work/all.conf" verify --deb "$deb" > "$work/$tag.all.json" 2> /dev/null
    check "$work/$tag.all.json" "m['tcp_cubic']['state'] == 'builtin' and m['tcp_cubic']['version'] == '2.3' and m['nft_compat']['state'] == 'module' and m['ip_tables']['state'] == 'module'"

    # The unpacked tree (no .bin indexes, as the package ships it), then with depmod's.
    mkdir -p "$work/root"
    dpkg-deb -x "$deb" "$work/root"
    "$kswap" --json --config "$work/all.conf" --root "$work/root" verify --kernel "$rel" \
        > "$work/$tag.tree.json" 2> "$work/err"
    check "$work/$tag.tree.json" "d['modules'] == json.load(open('$work/$tag.all.json'))['modules']"
    depmod -b "$work/root" "$rel"
    "$kswap" --json --config "$work/all.conf" --root "$work/root" verify --kernel "$rel" \
        > "$work/$tag.index.json" 2> "$work/err"
    check "$work/$tag.index.json" "d['modules'] == json.load(open('$work/$tag.all.json'))['modules']"
    rm -rf "$work/root"
done

echo "$checks checks, $failures failed"
[ "$failures" = 0 ]
