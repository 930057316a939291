#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Downloads one real Debian 12 kernel package of each flavour (generic, cloud) into the cache
# directory and prints their paths. Exit 77 (skip) when the archive cannot be reached.
# Usage: fetch-kernels.sh [generic|cloud]...   (default: both)
set -eu
cache=${KS_CACHE:-/var/cache/kswap-test}
mkdir -p "$cache"
[ $# -gt 0 ] || set -- generic cloud
for flavour in "$@"; do
    case $flavour in
    generic) pat='^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
    cloud) pat='^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' ;;
    *) echo "unknown flavour '$flavour'" >&2; exit 2 ;;
    esac
    # A cached package of this flavour is good enough: the tests need a real one, not the newest.
    have=$(ls "$cache"/linux-image-6.1.0-*_amd64.deb 2>/dev/null | grep -E "/$(echo "$pat" | sed 's/^\^//; s/\$$//')_" | sort -V | tail -n1 || true)
    if [ -n "$have" ]; then
        echo "$have"
        continue
    fi
    name=$(apt-cache search --names-only "$pat" 2>/dev/null | cut -d' ' -f1 | sort -V | tail -n1)
    if [ -z "$name" ]; then
        echo "fetch-kernels: no package matches $pat (run apt-get update?)" >&2
        exit 77
    fi
    if ! (cd "$cache" && apt-get download -q "$name" >&2); then
        echo "fetch-kernels: cannot download $name from the archive" >&2
        exit 77
    fi
    ls "$cache"/"$name"_*_amd64.deb | sort -V | tail -n1
done
