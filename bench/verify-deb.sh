#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kswap verify --deb on a real Debian kernel package against (a) the floor,
# `dpkg-deb --fsys-tarfile FILE > /dev/null` (decompresses data.tar once, multi-threaded), and
# (b) the shell peer (dpkg-deb -x, depmod -b, modinfo; bench/peers/peer-verify-deb.sh).
# Prints, per command, the median wall time and CPU time (user+sys), the peak RSS and the bytes
# written to storage (/proc/PID/io write_bytes, children included) over RUNS runs.
# Usage: bench/verify-deb.sh [-n RUNS] [FILE.deb]    (env: KSWAP, PEER, KS_CACHE)
set -eu
runs=5
if [ "${1:-}" = -n ]; then
    runs=$2
    shift 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
kswap=${KSWAP:-$src/build-verify/cmd/kswap}
peer=${PEER:-$src/bench/peers/peer-verify-deb.sh}
deb=${1:-$("$src/test/verify/fetch-kernels.sh" generic)}
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
[ -x "$kswap" ] || { echo "no kswap at $kswap (build first, or set KSWAP)" >&2; exit 1; }
# The peer unpacks into mktemp -d: keep that on a real disk, where write_bytes counts.
export TMPDIR=${TMPDIR:-/var/tmp}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# measure LABEL CMD...: one run; appends "wall cpu rss_kib write_bytes" to $out/LABEL.
measure() {
    local label=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$out/time" bash -c '
        "$@" > /dev/null 2>&1 || echo "failed: $*" >&2
        while read -r k v; do if [ "$k" = write_bytes: ]; then echo "$v"; fi; done < /proc/$$/io
    ' measure "$@" > "$out/io"
    read -r wall user sys rss < <(tail -n 1 "$out/time")
    echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss $(cat "$out/io")" >> "$out/$label"
}

median() { # column of $out/LABEL
    sort -n -k"$2" "$out/$1" | awk -v c="$2" '{v[NR] = $c} END {print v[int((NR + 1) / 2)]}'
}
peak() {
    sort -n -k"$2" "$out/$1" | tail -n 1 | awk -v c="$2" '{print $c}'
}

echo "package: $deb ($(du -h "$deb" | cut -f1)), $runs runs each, $(nproc) CPUs" >&2
run_one() { # LABEL COMMAND: the three commands, by name
    case $2 in
    floor) measure "$1" sh -c 'dpkg-deb --fsys-tarfile "$1" > /dev/null' sh "$deb" ;;
    kswap) measure "$1" "$kswap" verify --deb "$deb" ;;
    peer) measure "$1" bash "$peer" "$deb" ;;
    esac
}
# Interleaved, so that a change in the machine's load hits all three alike.
for cmd in floor kswap peer; do
    run_one warmup "$cmd" # page cache
done
for _ in $(seq "$runs"); do
    for cmd in floor kswap peer; do
        run_one "$cmd" "$cmd"
    done
done

printf '%-6s %10s %10s %14s %16s\n' command "wall (s)" "cpu (s)" "peak RSS (MiB)" "written (bytes)"
for cmd in floor kswap peer; do
    printf '%-6s %10s %10s %14s %16s\n' "$cmd" "$(median "$cmd" 1)" "$(median "$cmd" 2)" \
        "$(awk -v k="$(peak "$cmd" 3)" 'BEGIN {printf "%.1f", k / 1024}')" "$(median "$cmd" 4)"
done
kw=$(median kswap 1) fw=$(median floor 1) pw=$(median peer 1)
awk -v k="$kw" -v f="$fw" -v p="$pw" 'BEGIN {printf "kswap/floor wall: %.2fx, peer/kswap wall: %.2fx\n", k / f, p / k}'
