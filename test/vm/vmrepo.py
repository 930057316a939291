# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole-VM suite's signed apt repository (scenarios repo and repo-badsig of kswap-vm.py).

A XanMod-like archive made on the host at test time with Debian's own tools: the metapackage
kswap plan picks for the VM's CPU (-cpu Nehalem is x86-64-v2: linux-xanmod-lts-x64v2), built
with dpkg-deb, depends on a real Debian kernel image (apt-get download); apt-ftparchive writes
Packages and Release, gpg (a throwaway ed25519 key without passphrase in a temporary GNUPGHOME)
signs InRelease (clearsign) and Release.gpg. Two versions of the archive on one disk:

  dists-v1/bookworm: metapackage 1 (Depends: linux-image-A)
  dists-v2/bookworm: metapackage 1 and 2 (2 Depends: linux-image-B, a newer ABI)
  pool/v1, pool/v2: the packages; key.asc: the key kswap is told to trust; kswap.conf: the
  [repository] drop-in for /etc/kswap/kswap.conf.d (key, fingerprint, uri).

The disk is an ext4 image (no partition table) the VM sees as /dev/vdc, read-only; the VM
script mounts it on MOUNT and points URI_DIR/dists at dists-v1 or dists-v2 (a symlink on the
VM's own disk), so kswap's source is URIs: file:URI_DIR and no network is involved.
Variant badsig: the same archive whose InRelease and Release.gpg are signed by another
throwaway key than the one key.asc and the fingerprint name.

The image is cached under the suite's cache, keyed by its inputs (this file's text, the kernel
packages' names, the variant); building one takes seconds plus mkfs.
"""
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

PACKAGE = "linux-xanmod-lts-x64v2"   # ks_xanmod_package(2, lts): what kswap plan picks
SUITE = "bookworm"
MOUNT = "/mnt/kswap-repo"             # the repository disk in the VM, read-only
URI_DIR = "/srv/kswap-repo"           # kswap's URIs: file:URI_DIR; dists -> MOUNT/dists-vN
URI = "file:" + URI_DIR
KEY_IN_VM = MOUNT + "/key.asc"
DEVICE = "/dev/vdc"
# Whether the kswap under test reads [repository] uri (the coordinator's "Repository:" commit).
CONF_URI = True


def _run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw)


def releases():
    """linux-image-X.Y.Z-N-amd64 releases this machine's apt lists offer, oldest first."""
    names = subprocess.run(["apt-cache", "pkgnames", "linux-image-"], capture_output=True,
                           text=True, timeout=60).stdout.split()
    rels = []
    for n in names:
        m = re.fullmatch(r"linux-image-((\d+)\.(\d+)\.(\d+)-(\d+))-amd64", n)
        if m:
            rels.append((tuple(int(x) for x in m.groups()[1:]), m.group(1) + "-amd64"))
    return [r for _, r in sorted(rels)]


def start_release(a):
    """The kernel the repo scenarios start on: the newest one older than A (KS_VM_REPO_OLD
    overrides); None when the lists offer none."""
    if os.environ.get("KS_VM_REPO_OLD"):
        return os.environ["KS_VM_REPO_OLD"]
    rels = releases()
    older = rels[:rels.index(a)] if a in rels else []
    return older[-1] if older else None


def kernel_deb(cache, release):
    """linux-image-RELEASE's .deb from this machine's apt sources (apt-get download), cached in
    CACHE/debs. None when apt cannot get it."""
    d = os.path.join(cache, "debs")
    os.makedirs(d, exist_ok=True)

    def have():
        return sorted(n for n in os.listdir(d)
                      if n.startswith(f"linux-image-{release}_") and n.endswith(".deb"))
    if not have():
        subprocess.run(["apt-get", "download", f"linux-image-{release}"], cwd=d,
                       capture_output=True, text=True)
    h = have()
    return os.path.join(d, h[-1]) if h else None


def install_start_kernel(root, deb, purge):
    """The repo variant's tree: deb installed with dpkg -i in a chroot of root (its postinst
    makes the initrd with the image's initramfs-tools config), the packages in purge removed.
    Cheaper than another mmdebstrap layer: no download, one mkinitramfs."""
    mounts = []
    try:
        for src, dst, opts in (("proc", "proc", ["-t", "proc"]), ("/dev", "dev", ["--bind"]),
                               ("sysfs", "sys", ["-t", "sysfs"])):
            p = os.path.join(root, dst)
            _run("mount", *opts, src, p)
            mounts.append(p)
        shutil.copy(deb, os.path.join(root, "tmp"))
        inside = "/tmp/" + os.path.basename(deb)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8",
                   PATH="/usr/sbin:/usr/bin:/sbin:/bin")
        _run("chroot", root, "dpkg", "-i", inside, env=env)
        _run("chroot", root, "dpkg", "--purge", *purge, env=env)
        os.unlink(os.path.join(root, inside.lstrip("/")))
    finally:
        for p in reversed(mounts):
            subprocess.run(["umount", "-l", p], check=False)


def _self_hash():
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    return h


def start_tree(cache, base_tar, base_key, deb, purge):
    """The repo variant's root tree as a cached tar (rootfs-repo-KEY.tar, keyed by the base
    tree's key, the package and this file): base_tar with deb installed and purge removed
    (install_start_kernel). A new kswap then costs the repo disk only a tar extraction."""
    h = _self_hash()
    for part in (base_key, os.path.basename(deb), *purge):
        h.update(part.encode() + b"\0")
    key = h.hexdigest()[:16]
    tar = os.path.join(cache, f"rootfs-repo-{key}.tar")
    if os.path.exists(tar):
        return tar, key
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        _run("tar", "-C", root, "-xpf", base_tar)
        install_start_kernel(root, deb, purge)
        out = os.path.join(tmp, "rootfs.tar")
        _run("tar", "-C", root, "--numeric-owner", "--xattrs", "-cf", out, ".")
        os.rename(out, tar)
    for n in os.listdir(cache):
        if n.startswith("rootfs-repo-") and n != os.path.basename(tar):
            os.unlink(os.path.join(cache, n))
    return tar, key


def _gpg(home, *args, **kw):
    return _run("gpg", "--homedir", home, "--batch", "--quiet", "--no-tty", *args, **kw)


def _new_key(home, uid):
    os.makedirs(home, mode=0o700)
    _gpg(home, "--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never")
    out = _gpg(home, "--with-colons", "--list-secret-keys").stdout.decode()
    return next(ln.split(":")[9] for ln in out.splitlines() if ln.startswith("fpr:"))


def _metapackage(tmp, version, kernel, out_dir):
    d = os.path.join(tmp, f"meta-{version}")
    os.makedirs(os.path.join(d, "DEBIAN"))
    with open(os.path.join(d, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {PACKAGE}\nVersion: {version}\nArchitecture: amd64\n"
                "Maintainer: kswap tests <kswap-tests@example.invalid>\n"
                f"Depends: linux-image-{kernel}\nSection: kernel\nPriority: optional\n"
                "Description: kswap VM test: XanMod-like LTS x64v2 metapackage\n"
                f" Version {version} brings linux-image-{kernel}.\n")
    _run("dpkg-deb", "--root-owner-group", "-Zxz", "--build", d,
         os.path.join(out_dir, f"{PACKAGE}_{version}_amd64.deb"))


def _dists(repo, name, pools, home, fpr):
    """dists-NAME/SUITE from the packages of pools (dirs under repo), signed with fpr."""
    top = os.path.join(repo, f"dists-{name}", SUITE)
    bin_dir = os.path.join(top, "main", "binary-amd64")
    os.makedirs(bin_dir)
    packages = b"".join(_run("apt-ftparchive", "packages", p, cwd=repo).stdout for p in pools)
    with open(os.path.join(bin_dir, "Packages"), "wb") as f:
        f.write(packages)
    _run("sh", "-c", "gzip -9n < Packages > Packages.gz", cwd=bin_dir)
    release = _run("apt-ftparchive", "-o", f"APT::FTPArchive::Release::Origin=kswap-test",
                   "-o", "APT::FTPArchive::Release::Label=kswap-test",
                   "-o", f"APT::FTPArchive::Release::Suite={SUITE}",
                   "-o", f"APT::FTPArchive::Release::Codename={SUITE}",
                   "-o", "APT::FTPArchive::Release::Architectures=amd64",
                   "-o", "APT::FTPArchive::Release::Components=main",
                   "release", ".", cwd=top).stdout
    with open(os.path.join(top, "Release"), "wb") as f:
        f.write(release)
    _gpg(home, "--local-user", fpr, "--digest-algo", "SHA512", "--clearsign",
         "-o", os.path.join(top, "InRelease"), os.path.join(top, "Release"))
    _gpg(home, "--local-user", fpr, "--digest-algo", "SHA512", "--armor", "--detach-sign",
         "-o", os.path.join(top, "Release.gpg"), os.path.join(top, "Release"))


def conf_text(fpr):
    """The VM's /etc/kswap/kswap.conf.d drop-in: which repository kswap installs from."""
    text = f"# kswap VM test (test/vm/vmrepo.py): the local signed repository.\n" \
           f"[repository]\nkey = {KEY_IN_VM}\nfingerprint = {fpr}\n"
    if CONF_URI:
        text += f"uri = {URI}\n"
    return text


def build(cache, kernel_a, kernel_b, badsig=False):
    """The repository disk (ext4 image) for kernels A (v1) and B (v2), cached. Returns its
    path. Raises OSError or CalledProcessError when a tool fails; None when a kernel package
    cannot be downloaded."""
    debs = [kernel_deb(cache, kernel_a), kernel_deb(cache, kernel_b)]
    if None in debs:
        return None
    h = _self_hash()
    for part in (kernel_a, kernel_b, *map(os.path.basename, debs), str(badsig), str(CONF_URI)):
        h.update(part.encode() + b"\0")
    variant = "badsig" if badsig else "good"
    img = os.path.join(cache, f"repo-{variant}-{h.hexdigest()[:16]}.img")
    if os.path.exists(img):
        return img
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        repo = os.path.join(tmp, "repo")
        home = os.path.join(tmp, "gnupg")
        fpr = _new_key(home, "kswap VM test repository <kswap-tests@example.invalid>")
        sign_home, sign_fpr = home, fpr
        if badsig:
            sign_home = os.path.join(tmp, "gnupg-other")
            sign_fpr = _new_key(sign_home, "someone else <other@example.invalid>")
        for v, kernel, deb in (("1", kernel_a, debs[0]), ("2", kernel_b, debs[1])):
            pool = os.path.join(repo, "pool", f"v{v}")
            os.makedirs(pool)
            os.link(deb, os.path.join(pool, os.path.basename(deb)))
            _metapackage(tmp, v, kernel, pool)
        _dists(repo, "v1", ["pool/v1"], sign_home, sign_fpr)
        _dists(repo, "v2", ["pool/v1", "pool/v2"], sign_home, sign_fpr)
        with open(os.path.join(repo, "key.asc"), "wb") as f:
            f.write(_gpg(home, "--armor", "--export", fpr).stdout)
        with open(os.path.join(repo, "kswap.conf"), "w") as f:
            f.write(conf_text(fpr))
        mib = int(_run("du", "-sm", repo).stdout.split()[0]) * 11 // 10 + 16
        part = os.path.join(tmp, "repo.img")
        with open(part, "wb") as f:
            f.truncate(mib << 20)
        _run("mkfs.ext4", "-q", "-F", "-L", "kswaprepo", "-d", repo, part)
        os.rename(part, img)
    for n in os.listdir(cache):
        if n.startswith(f"repo-{variant}-") and n != os.path.basename(img):
            os.unlink(os.path.join(cache, n))
    return img


# The VM script's part (shell functions pasted into the guest driver, vmtest/driver.sh): mount the
# disk, point the URI's dists at version $1, install the drop-in.
VM_SHELL = f"""repo_show() {{
  mkdir -p {MOUNT} {URI_DIR} /etc/kswap/kswap.conf.d
  mountpoint -q {MOUNT} || mount -o ro,noload {DEVICE} {MOUNT} || say "REPO mount failed"
  ln -sfn {MOUNT}/pool {URI_DIR}/pool
  ln -sfn {MOUNT}/dists-$1 {URI_DIR}/dists
  cp {MOUNT}/kswap.conf /etc/kswap/kswap.conf.d/50-vm-repo.conf; sync
  say "REPO $n shows $1: $(grep -h '^Version:' {URI_DIR}/dists/{SUITE}/main/binary-amd64/Packages | tr '\\n' ' ')"
}}
repo_info() {{
  say "REPOSRC $n $(tr '\\n' '|' < /etc/apt/sources.list.d/xanmod.sources 2>/dev/null)"
  say "REPOLISTS $n $(ls /var/lib/apt/lists | grep kswap-repo | tr '\\n' ' ')"
  say "REPOPKGS $n $(dpkg-query -W -f '${{Package}}=${{Version}};${{Status}} ' '{PACKAGE}' 'linux-image-*' 2>/dev/null | sed 's/install ok //g')"
  say "JOURNAL $n $(tr -d '\\n' < /var/lib/kswap/state.json 2>/dev/null)"
}}
"""
