#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""kswap apply's repository check against real apt: local repositories made with Debian's own
tools (apt-ftparchive, gpg with a throwaway key), served as file: URIs, and the real
/usr/bin/apt-get for the check's `apt-get update` into its private folder
(test/fakes/real-apt-update/apt-get; every other apt call is the fake's, on a copy of the
example root). A repository apt refuses (unsigned, signed by another key, no such suite) or
that does not carry the metapackage is refused before anything changes, with apt's own words;
a good one goes on to the install. Usage: test-repo-probe.py KSWAP (exit 77 without apt-get,
apt-ftparchive or gpg)."""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import NEW, check, env

exe = os.path.abspath(sys.argv[1])
for tool in ("/usr/bin/apt-get", "apt-ftparchive", "gpg", "dpkg-deb"):
    if not shutil.which(tool):
        print(f"SKIP: {tool} not found (apt-get install apt-utils gpg dpkg-dev)")
        sys.exit(77)
work = tempfile.mkdtemp(prefix="kswap-repo-probe.")
os.chmod(work, 0o755)  # apt fetches file: URIs as its sandbox user _apt
META = "linux-xanmod-lts-x64v3"  # the example root's CPU is x86-64-v3
wrapper = os.path.join(kstest.FAKES, "real-apt-update")


def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def make_key(name):
    home = os.path.join(work, "gnupg-" + name)
    os.makedirs(home, mode=0o700)
    gpg = ["gpg", "--homedir", home, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]
    sh(*gpg, "--quick-gen-key", f"kswap test {name} <{name}@kswap.invalid>", "ed25519", "sign",
       "never")
    fpr = [ln.split(":")[9] for ln in sh(*gpg, "--with-colons", "--list-keys").stdout.splitlines()
           if ln.startswith("fpr:")][0]
    asc = os.path.join(work, f"{name}.asc")
    with open(asc, "w") as f:
        f.write(sh(*gpg, "--armor", "--export", fpr).stdout)
    return gpg, fpr, asc


def make_repo(name, suite, packages, signer):
    """A Debian-style repository: pool/*.deb, dists/SUITE/main/binary-amd64/Packages, Release,
    InRelease and Release.gpg signed by signer (None: unsigned)."""
    repo = os.path.join(work, "repo-" + name)
    pool = os.path.join(repo, "pool")
    bindir = os.path.join(repo, "dists", suite, "main", "binary-amd64")
    os.makedirs(pool)
    os.makedirs(bindir)
    for pkg in packages:
        d = os.path.join(work, "build-" + name + "-" + pkg)
        os.makedirs(os.path.join(d, "DEBIAN"))
        with open(os.path.join(d, "DEBIAN", "control"), "w") as f:
            f.write(f"Package: {pkg}\nVersion: 6.18.45-0~test1\nArchitecture: amd64\n"
                    "Maintainer: kswap tests <t@kswap.invalid>\nDepends: linux-image-x\n"
                    "Description: XanMod-like metapackage for kswap's tests\n")
        sh("dpkg-deb", "--root-owner-group", "--build", d, os.path.join(pool, f"{pkg}.deb"))
    packages_text = sh("apt-ftparchive", "packages", "pool", cwd=repo).stdout
    with open(os.path.join(bindir, "Packages"), "w") as f:
        f.write(packages_text)
    release = sh("apt-ftparchive", "-o", f"APT::FTPArchive::Release::Suite={suite}",
                 "-o", f"APT::FTPArchive::Release::Codename={suite}",
                 "-o", "APT::FTPArchive::Release::Components=main",
                 "-o", "APT::FTPArchive::Release::Architectures=amd64",
                 "release", os.path.join("dists", suite), cwd=repo).stdout
    rel = os.path.join(repo, "dists", suite, "Release")
    with open(rel, "w") as f:
        f.write(release)
    if signer:
        sh(*signer, "--clearsign", "-o", os.path.join(repo, "dists", suite, "InRelease"), rel)
        sh(*signer, "-abs", "-o", os.path.join(repo, "dists", suite, "Release.gpg"), rel)
    for base, dirs, files in os.walk(repo):
        os.chmod(base, 0o755)
        for n in files:
            os.chmod(os.path.join(base, n), 0o644)
    return repo


def fresh_root(name, repo, suite, key, fpr):
    r = os.path.join(work, "root-" + name)
    shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
    os.makedirs(os.path.join(r, "etc/kswap/kswap.conf.d"), exist_ok=True)
    with open(os.path.join(r, "etc/kswap/kswap.conf.d/50-test-repo.conf"), "w") as f:
        f.write(f"[repository]\nuri = file:{repo}\nsuite = {suite}\nkey = {key}\n"
                f"fingerprint = {fpr}\n")
    return r


def apply(root, debs):
    e = env(KSWAP_FAKE_DEBS=debs, TMPDIR=work)
    e["PATH"] = wrapper + ":" + e["PATH"]
    p = subprocess.run([exe, "--root", root, "--json", "apply", "--yes"], capture_output=True,
                       text=True, env=e, timeout=300)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = None
    return p, d


def same_tree(a, b, skip=("var/lib/kswap", "run", "var/log")):
    """The files that differ between the two trees: kswap's own state folder aside, and the
    fakes' logs and their run/ folder (systemctl, nft, tc, wg for the checklist)."""
    c = filecmp.dircmp(a, b)
    def walk(c, rel):
        diff = [os.path.join(rel, x) for x in c.left_only + c.right_only + c.diff_files +
                c.funny_files]
        out = [x for x in diff if x not in skip]
        for n, sub in c.subdirs.items():
            r = os.path.join(rel, n)
            if r not in skip:
                out += walk(sub, r)
        return out
    return walk(c, "")


good_signer, good_fpr, good_key = make_key("good")
other_signer, _, _ = make_key("other")
debs = os.path.join(work, "debs")
os.makedirs(debs)
sh("bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, os.path.join(debs, f"{META}.deb"),
   "--package", META, "--bbr", "builtin")

cases = [
    # name, suite of the repo, suite configured, packages, signer, refused, words in the error
    ("good", "bookworm", "bookworm", [META, "linux-headers-x"], good_signer, False, None),
    ("unsigned", "bookworm", "bookworm", [META], None, True, "is not signed"),
    ("other-key", "bookworm", "bookworm", [META], other_signer, True, "NO_PUBKEY"),
    ("no-meta", "bookworm", "bookworm", ["linux-xanmod-x64v3"], good_signer, True,
     f"does not carry {META}"),
    ("no-suite", "bookworm", "trixie", [META], good_signer, True, "does not have a Release file"),
]
for name, repo_suite, suite, packages, signer, refused, words in cases:
    repo = make_repo(name, repo_suite, packages, signer)
    root = fresh_root(name, repo, suite, good_key, good_fpr)
    before = os.path.join(work, "before-" + name)
    shutil.copytree(root, before, symlinks=True)
    p, d = apply(root, debs)
    err = (d or {}).get("error") or ""
    if refused:
        check(p.returncode == 2 and d and d.get("result") == "refused",
              f"{name}: apply refuses the repository (exit 2)", f"{p.returncode} {p.stdout[-1500:]} {p.stderr[-1500:]}")
        check(words in err and "nothing was changed" in err, f"{name}: apt's words in the error: {words}",
              err)
        print("     " + err)
        changed = same_tree(before, root)
        check(changed == [], f"{name}: nothing changed on disk (GRUB, apt sources, packages)",
              " ".join(changed))
        check(not os.path.exists(os.path.join(root, "var/log/fake-apt.log")) or
              "install" not in open(os.path.join(root, "var/log/fake-apt.log")).read(),
              f"{name}: apt-get install never ran")
    else:
        check(p.returncode == 0 and d and d.get("state") == "armed",
              f"{name}: a repository apt trusts and that carries {META}: armed",
              f"{p.returncode} {err} {p.stderr[-2000:]}")
        check("[repository] apt download: " in p.stderr and "[repository] apt took " in p.stderr
              and "Reading package lists" not in p.stderr,
              f"{name}: the check's progress is kswap's own lines from APT::Status-Fd, not apt's output",
              p.stderr[-2000:])
        src = open(os.path.join(root, "etc/apt/sources.list.d/xanmod.sources")).read()
        check(f"URIs: file:{repo}\n" in src and "Suites: bookworm\n" in src,
              f"{name}: the source kswap wrote names the repository", src)
    check(not [n for n in os.listdir(work) if n.startswith("kswap-repo-probe.")],
          f"{name}: the private folder of the check is gone")

shutil.rmtree(work, ignore_errors=True)
print("repo-probe:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
