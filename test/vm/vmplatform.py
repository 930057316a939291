# SPDX-License-Identifier: GPL-2.0-or-later
"""Platforms of the whole-VM test (test/vm/kswap-vm.py): the Debian suite of the image (bookworm,
trixie) and its firmware (bios: MBR + core.img; uefi: OVMF, GPT, an EFI system partition).

Nothing here reads this machine's apt state for another suite: the kernels of trixie come from
trixie's own Packages index, fetched from the host's Debian mirror and checked against the
archive keyring (InRelease signature, then the index's SHA256)."""
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import time
import urllib.request

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
LINUX_TYPE = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
ESP_MIB = 64
ESP_VOLID = "5A1E0003"          # vfat serial: UUID=5A1E-0003 in fstab
INDEX_MAX_AGE = 6 * 3600        # a fetched Packages index is reused this long


class PlatformError(Exception):
    """The platform's prerequisites are missing (the caller skips)."""


def suite_lines(host_lines, host_suite, suite):
    """The host's Debian mirror lines with the suite replaced (bookworm-updates -> trixie-updates)."""
    if suite == host_suite:
        return list(host_lines)
    out = []
    for ln in host_lines:
        w = ln.split()
        i = next(i for i, x in enumerate(w) if "://" in x) + 1
        w[i] = re.sub(rf"^{re.escape(host_suite)}", suite, w[i])
        out.append(" ".join(w))
    return out


def _get(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def packages_index(uri, suite, cache):
    """main/binary-amd64/Packages of uri's suite, verified: InRelease signed by a key of the
    Debian archive keyring, the index's SHA256 as InRelease lists it. Cached for a few hours."""
    d = os.path.join(cache, "index")
    os.makedirs(d, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9.-]", "_", f"{uri}_{suite}")
    path = os.path.join(d, name + ".Packages")
    if os.path.exists(path) and time.time() - os.path.getmtime(path) < INDEX_MAX_AGE:
        return open(path, encoding="utf-8", errors="replace").read()
    try:
        inrel = _get(f"{uri}/dists/{suite}/InRelease")
    except Exception as e:  # noqa: BLE001
        raise PlatformError(f"{uri} {suite}: InRelease not reachable: {e}") from e
    sig = os.path.join(d, name + ".InRelease")
    with open(sig, "wb") as f:
        f.write(inrel)
    r = subprocess.run(["gpgv", "--keyring", KEYRING, sig], capture_output=True, text=True)
    if r.returncode != 0:
        raise PlatformError(f"{uri} {suite}: InRelease is not signed by {KEYRING}: "
                            f"{r.stderr.strip()[-300:]}")
    text = inrel.decode(errors="replace")
    sums = text.split("\nSHA256:", 1)[1] if "\nSHA256:" in text else ""
    m = re.search(r"^ ([0-9a-f]{64})\s+\d+\s+main/binary-amd64/Packages\.xz$", sums, re.M)
    if not m:
        raise PlatformError(f"{uri} {suite}: InRelease lists no main/binary-amd64/Packages.xz")
    xz = _get(f"{uri}/dists/{suite}/main/binary-amd64/Packages.xz")
    if hashlib.sha256(xz).hexdigest() != m.group(1):
        raise PlatformError(f"{uri} {suite}: Packages.xz does not match InRelease's SHA256")
    data = lzma.decompress(xz).decode(errors="replace")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(data)
    os.rename(path + ".tmp", path)
    return data


def _release_key(rel):
    """Sort key of a Debian kernel release: 6.1.0-57 and 6.12.117+deb13 alike."""
    return tuple(int(x) for x in re.findall(r"\d+", rel))


def kernels_from_indexes(texts):
    """OLD and NEW: the two newest linux-image-REL-amd64 ABIs the indexes offer; with only one ABI
    NEW is its -cloud-amd64 flavour. Returns (old, new) as kernel releases (uname -r)."""
    rels = set()
    for t in texts:
        for m in re.finditer(r"^Package: linux-image-(\d+\.\d+\.\d+(?:-\d+|\+deb\d+))-amd64$", t,
                             re.M):
            rels.add(m.group(1))
    if not rels:
        raise PlatformError("no linux-image-*-amd64 in the suite's Packages indexes")
    rels = sorted(rels, key=_release_key)
    if len(rels) >= 2:
        return rels[-2] + "-amd64", rels[-1] + "-amd64"
    return rels[-1] + "-amd64", rels[-1] + "-cloud-amd64"


def suite_kernels(lines, suite, cache):
    """OLD and NEW of a suite from its own Packages indexes (every mirror line of the suite)."""
    texts = []
    for ln in lines:
        w = ln.split()
        i = next(i for i, x in enumerate(w) if "://" in x)
        texts.append(packages_index(w[i], w[i + 1], cache))
    return kernels_from_indexes(texts)


def ovmf_args(work):
    """qemu options for OVMF: the firmware read-only, a private copy of its variable store."""
    for p in (OVMF_CODE, OVMF_VARS):
        if not os.path.exists(p):
            raise PlatformError(f"{p} missing (apt-get install ovmf)")
    vars_copy = os.path.join(work, "OVMF_VARS.fd")
    shutil.copyfile(OVMF_VARS, vars_copy)
    return ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
            "-drive", f"if=pflash,format=raw,unit=1,file={vars_copy}", "-boot", "menu=off"]


def gpt_layout(total_mib):
    """sfdisk input of the UEFI disk: p1 the ESP, p2 the root file system (to the end)."""
    start2 = 2048 + ESP_MIB * 2048
    return (f"label: gpt\nstart=2048, size={ESP_MIB * 2048}, type={ESP_TYPE}, name=esp\n"
            f"start={start2}, type={LINUX_TYPE}, name=root\n").encode(), start2 * 512


def make_esp(part, files):
    """A FAT32 ESP image at part holding files {path on the ESP: host file}."""
    with open(part, "wb") as f:
        f.truncate(ESP_MIB << 20)
    subprocess.run(["mkfs.vfat", "-F", "32", "-s", "1", "-i", ESP_VOLID, "-n", "EFI", part],
                   check=True, capture_output=True)
    made = set()
    for dst in sorted(files):
        parts = dst.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in made:
                subprocess.run(["mmd", "-i", part, "::/" + d], check=True, capture_output=True)
                made.add(d)
        subprocess.run(["mcopy", "-i", part, files[dst], "::/" + dst.strip("/")], check=True,
                       capture_output=True)


def esp_fstab_uuid():
    return f"{ESP_VOLID[:4]}-{ESP_VOLID[4:]}"
