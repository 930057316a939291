#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes a synthetic kernel image for tests: not bootable, but with the x86 boot protocol's
setup header a real bzImage has (Documentation/arch/x86/boot.rst): setup_sects at 0x1f1,
syssize at 0x1f4, boot_flag 0xAA55 at 0x1fe, "HdrS" at 0x202, protocol 2.15 at 0x206, and
exactly as many bytes as that header announces ((setup_sects + 1) * 512 + syssize * 16).
Usage: synthetic-vmlinuz.py RELEASE OUT [--truncate BYTES | --no-magic | --zeros]"""
import struct
import sys


def image(release, size=4096):
    setup_sects = 1
    body = size - (setup_sects + 1) * 512
    b = bytearray(size)
    b[0x1f1] = setup_sects
    struct.pack_into("<I", b, 0x1f4, body // 16)
    struct.pack_into("<H", b, 0x1fe, 0xAA55)
    b[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", b, 0x206, 0x020F)
    text = f"synthetic kernel image {release}\n".encode()
    b[1024:1024 + len(text)] = text
    return bytes(b)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    data = image(argv[1])
    opts = argv[3:]
    if opts[:1] == ["--truncate"] and len(opts) == 2:
        data = data[:int(opts[1])]
    elif opts == ["--no-magic"]:
        data = data[:0x202] + b"XXXX" + data[0x206:]
    elif opts == ["--zeros"]:
        data = bytes(len(data))
    elif opts:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2], "wb") as f:
        f.write(data)
    return 0


sys.exit(main(sys.argv))
