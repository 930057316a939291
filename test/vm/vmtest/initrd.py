# SPDX-License-Identifier: GPL-2.0-or-later
"""The "kernel that dies" of scenario panic: NEW's own initrd without the root disk's driver."""
import os
import re
import shutil
import subprocess

from .common import run


def newc_end(data, pos):
    """End of the uncompressed cpio (newc) archive at pos: past TRAILER!!! and its zero padding."""
    while True:
        if data[pos:pos + 6] not in (b"070701", b"070702"):
            raise ValueError(f"no cpio header at offset {pos}")
        filesize = int(data[pos + 54:pos + 62], 16)
        namesize = int(data[pos + 94:pos + 102], 16)
        name = data[pos + 110:pos + 110 + namesize - 1]
        pos = (pos + 110 + namesize + 3) & ~3
        pos = (pos + filesize + 3) & ~3
        if name == b"TRAILER!!!":
            while pos < len(data) and data[pos] == 0:
                pos += 1
            return pos


DECOMPRESS = {b"\x28\xb5\x2f\xfd": "zstd", b"\xfd7zX": "xz", b"\x1f\x8b": "gzip",
              b"\x02\x21\x4c\x18": "lz4"}


# as mkinitramfs compresses: the kernel wants xz with CRC32 and lz4's legacy frames
COMPRESS = {"zstd": "zstd -q -c", "xz": "xz --check=crc32 -c", "gzip": "gzip -n -c",
            "lz4": "lz4 -l -c"}


def broken_initrd(src, tmp, out, new):
    """NEW's real initrd (initramfs-tools) without virtio_blk: it starts, waits for the root
    disk that never appears, and initramfs-tools' panic() reboots the machine (panic=5).
    Made after the image's own initrds exist. Early (uncompressed) cpio parts are kept, except
    those carrying modules (trixie's initramfs-tools stores the already compressed .ko.xz files
    in an uncompressed early part): those are unpacked with the main part and packed again."""
    data = open(src, "rb").read()
    d = os.path.join(tmp, "broken-initrd")
    os.makedirs(d)
    pos = 0
    early = b""
    while data[pos:pos + 6] in (b"070701", b"070702"):
        end = newc_end(data, pos)
        part = data[pos:end]
        if b"virtio_blk.ko" in part:
            run("cpio", "-idm", "--quiet", "--no-absolute-filenames", cwd=d, input=part)
        else:
            early += part
        pos = end
    main = data[pos:]
    tool = next((t for m, t in DECOMPRESS.items() if main.startswith(m)), None)
    if tool is None:
        raise ValueError(f"{src}: unknown compression {main[:4].hex()}")
    cpio = run(tool, "-dc", input=main).stdout
    run("cpio", "-idm", "--quiet", "--no-absolute-filenames", cwd=d, input=cpio)
    removed = []
    for base, _, files in os.walk(d):
        for n in files:
            if re.fullmatch(r"virtio_blk\.ko(\.xz|\.zst|\.gz)?", n):
                os.unlink(os.path.join(base, n))
                removed.append(n)
    if not removed or not os.path.exists(os.path.join(d, "init")):
        raise ValueError(f"{src}: no virtio_blk module or no /init in it")
    run("depmod", "-b", d, new)
    packed = subprocess.run("find . -print0 | LC_ALL=C sort -z | cpio -o -0 -H newc -R 0:0 --quiet"
                            f" | {COMPRESS[tool]}", shell=True, cwd=d, check=True, capture_output=True).stdout
    with open(out, "wb") as f:
        f.write(early + packed)
    shutil.rmtree(d)
