#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark (not a test): parse + forecast of a typical Ubuntu grub.cfg and of a large one
# with many kernels (the Ubuntu 24.04 fixture's submenu entries repeated).
#   bench/grub-forecast.sh BUILD_DIR
set -eu
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
fix=${KS_FIXTURES:-$src/test/fixtures}/grub
bench=$build/test/grub/grub-forecast-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bench" "$fix/ubuntu-24.04-two-kernels.cfg" 500
# 200 kernels: each with a normal and a recovery entry, 10_linux's exact body shape.
python3 - "$fix/ubuntu-24.04-two-kernels.cfg" "$work/many.cfg" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
start = text.index("\tmenuentry 'Ubuntu, with Linux 6.8.0-48-generic'")
end = text.index("\tmenuentry 'Ubuntu, with Linux 6.8.0-45-generic'")
block = text[start:end]
many = "".join(block.replace("6.8.0-48-generic", "6.8.0-%d-generic" % (1000 - i)) for i in range(200))
open(sys.argv[2], "w").write(text[:start] + many + text[start:])
PY
"$bench" "$work/many.cfg" 50
