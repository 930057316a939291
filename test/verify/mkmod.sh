#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Makes a fake kernel module: a relocatable ELF object whose .modinfo section holds the given
# strings, as a real .ko does. Compression follows the output name (.ko, .ko.xz, .ko.zst).
# Usage: mkmod.sh OUT NAME DEPENDS [VERSION]   (MKMOD_VERMAGIC overrides the vermagic string)
set -eu
out=$1 name=$2 deps=$3 version=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    printf 'static const char modinfo[] __attribute__((section(".modinfo"), used, aligned(1))) =\n'
    printf '    "license=GPL\\0" "depends=%s\\0" "name=%s\\0"' "$deps" "$name"
    [ -n "$version" ] && printf ' "version=%s\\0"' "$version"
    printf ' "vermagic=%s\\0";\n' "${MKMOD_VERMAGIC:-6.18.1 SMP mod_unload}"
    # Bulk, so that compressed members span more than one buffer.
    printf 'static const char pad[8192] __attribute__((used)) = {1};\n'
} > "$tmp/m.c"
${CC:-cc} -c -o "$tmp/m.ko" "$tmp/m.c"
mkdir -p "$(dirname "$out")"
case $out in
*.ko.xz) xz --check=crc32 -c "$tmp/m.ko" > "$out" ;;
*.ko.zst) zstd -q -c "$tmp/m.ko" > "$out" ;;
*.ko) cp "$tmp/m.ko" "$out" ;;
*) echo "mkmod: unknown suffix: $out" >&2; exit 2 ;;
esac
