#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole-machine test (suites vm and vm-extra): a real Debian under qemu (TCG) with real GRUB,
two real kernels, systemd and the kswap build under test goes through apply, the trial boot,
accept and pin, and survives failing, dying and stuck kernels. The harness is the package
test/vm/vmtest (its __init__.py says what lives where); this is its command line."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmtest import cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(sys.argv[1:]))
