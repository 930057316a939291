#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs one libFuzzer target for a bounded time on a scratch copy of its seeds.
set -eu
exe=$(realpath "$1") seconds=$2 # meson passes a path relative to the build dir
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
for s in "$@"; do
  if [ -d "$s" ]; then cp -r "$s"/. "$work/corpus/"; else cp "$s" "$work/corpus/"; fi
done
cd "$work"
exec "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 corpus
