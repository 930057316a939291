#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Writes the hostile seeds of the deb and initrd fuzz corpora (issue 19): compressions dpkg or
# the kernel would refuse, external-decompressor magic (lzop, lrzip, grzip, uuencode), late
# "../" and absolute entries, a second kernel, duplicates and updates/, a dependency chain
# laid out backwards, and small decompression bombs. Each file stays well under 64 KiB.
# Usage: test/fuzz/make-hostile-corpus.sh [CORPUS_DIR]   (default: test/fuzz/corpus)
set -eu
out=${1:-$(dirname "$0")/corpus}
exec python3 - "$out" <<'PY'
import bz2, gzip, io, lzma, os, struct, sys, tarfile

out = sys.argv[1]
REL = "6.1.0-9-amd64"

def elf(info):
    shstr = b"\0.modinfo\0.shstrtab"
    info_off = 64
    str_off = info_off + len(info)
    sh_off = (str_off + len(shstr) + 7) & ~7
    eh = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0,
                                                           sh_off, 0, 64, 0, 0, 64, 3, 2)
    body = eh + info + shstr
    body += b"\0" * (sh_off - len(body))
    sh = b"\0" * 64
    sh += struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, info_off, len(info), 0, 0, 1, 0)
    sh += struct.pack("<IIQQQQIIQQ", 10, 3, 0, 0, str_off, len(shstr), 0, 0, 1, 0)
    return body + sh

def module(version, depends=""):
    return elf(b"version=%s\0depends=%s\0" % (version.encode(), depends.encode()))

def tar(entries):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for path, data in entries:
            ti = tarfile.TarInfo(path)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return b.getvalue()

def member(name, data):
    h = b"%-16s%-12s%-6s%-6s%-8s%-10s`\n" % (name.encode(), b"0", b"0", b"0", b"100644",
                                              str(len(data)).encode())
    return h + data + (b"\n" if len(data) % 2 else b"")

def deb(data_name, data, control_name="control.tar", extra=None):
    d = b"!<arch>\n" + member("debian-binary", b"2.0\n") + member(control_name, tar([]))
    if extra:
        d += member(extra, b"x")
    return d + member(data_name, data)

def m(path):
    return "./lib/modules/%s/%s" % (REL, path)

bbr3 = (m("kernel/net/ipv4/tcp_bbr.ko"), module("3"))
bbr1 = (m("kernel/net/ipv4/tcp_bbr.ko"), module("1"))
builtin = [(m("modules.builtin"), b"kernel/fs/ext4/ext4.ko\n"), (m("modules.builtin.modinfo"), b"")]
plain = tar(builtin + [bbr3])
LZOP = b"\x89LZO\0\r\n\x1a\n\x10\x30\x20\xa0\0\0\0\0"
LRZIP = b"LRZI\0\x06" + b"\0" * 18
GRZIP = b"GRZipII\0\x02\x04:)" + b"\0" * 12
UU = b"begin 644 data.tar\nM+B]L:6(O;6]D=6QE<R\\V+C$N,\"TY+6%M9#8T\n`\nend\n"
zeros = b"\0" * (32 << 20)
chain = [(m("kernel/c%d.ko.xz" % i), lzma.compress(module("1", "c%d" % (i + 1) if i < 8 else "")))
         for i in range(8, 0, -1)]
chain.append((m("kernel/net/ipv4/tcp_bbr.ko.xz"), lzma.compress(module("3", "c1"))))

debs = {
    "hostile-gz.deb": deb("data.tar.gz", gzip.compress(plain)),
    "hostile-bz2.deb": deb("data.tar.bz2", bz2.compress(plain)),
    "hostile-lzma.deb": deb("data.tar.lzma", lzma.compress(plain, format=lzma.FORMAT_ALONE)),
    "hostile-lzop-in-data.tar.deb": deb("data.tar", LZOP + plain[:256]),
    "hostile-lrzip-in-data.tar.deb": deb("data.tar", LRZIP),
    "hostile-grzip-in-data.tar.gz.deb": deb("data.tar.gz", GRZIP),
    "hostile-uu-in-data.tar.deb": deb("data.tar", UU),
    "hostile-xz-in-data.tar.gz.deb": deb("data.tar.gz", lzma.compress(plain)),
    "hostile-data.tar.lz4.deb": deb("data.tar.lz4", plain),
    "hostile-control.tar.bz2.deb": deb("data.tar", plain, control_name="control.tar.bz2"),
    "hostile-stray-member.deb": deb("data.tar", plain, extra="evil"),
    "hostile-skipped-member.deb": deb("data.tar", plain, extra="_gpgorigin"),
    "hostile-late-dotdot.deb": deb("data.tar", tar(builtin + [bbr3, (m("../../../etc/evil.ko"), module("9"))])),
    "hostile-late-absolute.deb": deb("data.tar", tar(builtin + [bbr3, ("/etc/evil", b"x")])),
    "hostile-late-second-kernel.deb": deb("data.tar.xz", lzma.compress(tar(builtin + [bbr3, ("./lib/modules/6.6.6-evil/kernel/x.ko", module("1"))]))),
    "hostile-duplicate-last-wins.deb": deb("data.tar", tar(builtin + [bbr3, bbr1])),
    "hostile-updates-first.deb": deb("data.tar", tar(builtin + [bbr3, (m("updates/tcp_bbr.ko"), module("1"))])),
    "hostile-chain-backwards.deb": deb("data.tar", tar(builtin + chain)),
    "hostile-xz-bomb.deb": deb("data.tar.xz", lzma.compress(tar(builtin + [bbr3, ("./zeros", zeros)]), preset=9)),
    "hostile-bz2-bomb.deb": deb("data.tar.bz2", bz2.compress(tar([bbr3, ("./zeros", zeros)]))),
}

def newc(name, data):
    n = name.encode() + b"\0"
    h = b"070701" + b"".join(b"%08x" % v for v in (1, 0o100644, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(n), 0))
    pad = lambda k: b"\0" * ((4 - k % 4) % 4)
    return h + n + pad(110 + len(n)) + data + pad(len(data))

early = newc("kernel/x86/microcode/GenuineIntel.bin", b"abcd") + newc("TRAILER!!!", b"")
main = newc("usr/lib/modules/%s/kernel/fs/ext4/ext4.ko" % REL, b"\x7fELF") + newc("TRAILER!!!", b"")
bomb = newc("zeros", zeros) + newc("TRAILER!!!", b"")
initrds = {
    "hostile-gzip.img": early + gzip.compress(main),
    "hostile-xz.img": early + lzma.compress(main, check=lzma.CHECK_CRC32),
    "hostile-lzma.img": early + lzma.compress(main, format=lzma.FORMAT_ALONE),
    "hostile-bzip2.img": early + bz2.compress(main),
    "hostile-lzop.img": early + LZOP,
    "hostile-lrzip.img": early + LRZIP,
    "hostile-grzip.img": early + GRZIP,
    "hostile-uu.img": early + UU,
    "hostile-xz-bomb.img": early + lzma.compress(bomb, preset=9),
}

for sub, files in (("deb", debs), ("initrd", initrds)):
    os.makedirs(os.path.join(out, sub), exist_ok=True)
    for name, data in files.items():
        assert len(data) < 64 * 1024, (name, len(data))
        with open(os.path.join(out, sub, name), "wb") as f:
            f.write(data)
PY
