# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 16: the main path through real apt from a local signed repository (vmrepo.py, a third
disk /dev/vdc; layout repo, bookworm BIOS only: the ext4 disk whose tree runs REPO_OLD, the
kernel before OLD, without OLD and NEW). repo (suite vm-extra): REPO_OLD -> OLD -> NEW, each
installed by apt, tried, accepted and pinned; repo-badsig (suite vm): the repository signed by
another key, apt refuses it, nothing changes."""
import json
import shutil

import vmrepo

from .common import CACHE, Scenario, expect, skip
from .platforms import NEW, OLD, REPO_OLD


def check_repo(ctx):
    """The repo scenarios' own assertions (see SCENARIOS)."""
    name, boots, state, outcome = ctx.name, ctx.boots, ctx.state, ctx.outcome
    def pkgs(n):
        return dict(w.split(";")[0].split("=", 1) for w in boots[n].get("repopkgs", "").split()
                    if "=" in w and w.endswith(";installed"))
    last = (boots[max(boots)].get("status") or {}).get("grub") or {}
    fc = [b.get("kernel") for b in last.get("forecast") or []]
    a1 = boots[1]
    if name == "repo-badsig":
        # refused (exit 2) by the repository check, before anything changed
        expect(a1.get("apply_rc") == 2, f"apply exited {a1.get('apply_rc')} with a wrongly "
               "signed archive, expected 2 (refused)")
        err = json.dumps(a1.get("apply"))
        for n in (1, 2):
            src = boots[n].get("reposrc", "")
            expect("Written by kswap" not in src, f"boot {n}: a source was written: {src[:300]}")
        # apt's own words (apt 2.6: "The following signatures couldn't be verified ...
        # NO_PUBKEY ..." and "The repository '...' is not signed.")
        expect("NO_PUBKEY" in err or "is not signed" in err, f"apply's error: {err[:1500]}")
        for n in (1, 2):
            got = pkgs(n)
            expect(vmrepo.PACKAGE not in got and f"linux-image-{OLD}" not in got,
                   f"boot {n}: installed {got}")
        expect(state not in ("armed", "trial-booted", "pinned"), f"journal {state} {outcome}")
        expect(fc[:3] == [REPO_OLD] * 3, f"forecast {fc}")
        return
    expect(a1.get("apply_rc") in (None, 0) and "wait-expired" not in a1,
           f"boot 1: apply exited {a1.get('apply_rc')} or did not reboot")
    expect("wait-expired" not in boots[2], "boot 2: the second apply did not reboot")
    for n, old, new, meta in ((2, REPO_OLD, OLD, "1"), (3, OLD, NEW, "2")):
        j = (boots[n].get("status") or {}).get("journal") or {}
        expect((j.get("state"), j.get("outcome")) == ("pinned", "trial-ok"),
               f"boot {n}: journal {j.get('state')} {j.get('outcome')}")
        expect((j.get("old_kernel"), j.get("new_kernel")) == (old, new),
               f"boot {n}: the trial went {j.get('old_kernel')} -> {j.get('new_kernel')}, "
               f"expected {old} -> {new}")
        got = pkgs(n)
        expect(got.get(vmrepo.PACKAGE) == meta and f"linux-image-{new}" in got,
               f"boot {n}: installed {got}")
        # The source kswap wrote, and apt's lists of it: apt read the repository.
        src = boots[n].get("reposrc", "").split("|")
        want = ["Types: deb", f"URIs: {vmrepo.URI}", f"Suites: {vmrepo.SUITE}", "Components: main",
                "Signed-By: /etc/apt/keyrings/xanmod-archive-keyring.gpg"]
        expect(src[0].startswith("# Written by kswap") and src[1:6] == want,
               f"boot {n}: etc/apt/sources.list.d/xanmod.sources is {src}")
        lists = boots[n].get("repolists", "").split()
        base = vmrepo.URI_DIR.strip("/").replace("/", "_")
        # (Packages may be stored compressed: Packages.lz4 with Acquire::GzipIndexes)
        for f in (f"_{base}_dists_{vmrepo.SUITE}_InRelease",
                  f"_{base}_dists_{vmrepo.SUITE}_main_binary-amd64_Packages"):
            expect(any(x == f or x.startswith(f + ".") for x in lists),
                   f"boot {n}: apt's lists have no {f}: {lists}")
    expect(f"linux-image-{REPO_OLD}" in pkgs(4), f"boot 4: {REPO_OLD} was removed: {pkgs(4)}")
    expect((state, outcome) == ("pinned", "trial-ok"), f"journal {state} {outcome}")
    expect(fc[:3] == [NEW] * 3, f"forecast after the second pin: {fc}")


def repo_disk(pf, name):
    for tool in ("apt-ftparchive", "dpkg-deb", "gpg"):
        if not shutil.which(tool):
            skip(f"{tool} not found (apt-get install apt-utils dpkg gpg)")
    img = vmrepo.build(CACHE, OLD, NEW, badsig=name == "repo-badsig")
    if not img:
        skip(f"apt-get download linux-image-{OLD} or {NEW} failed")
    return [img]


SCENARIOS = {
    # REPO_OLD -> OLD (the repository's metapackage 1) -> NEW (metapackage 2, shown only after OLD
    # is pinned), each tried, accepted and pinned; the last boot runs NEW by GRUB's default. Two
    # real apt installs (mkinitramfs under TCG) in four boots, 30-50 minutes: a boot that
    # installs gets its own bound unless KS_VM_BOOT_TIMEOUT is set.
    "repo": Scenario("repo", "src=repo\n1=repo1,apply-reboot,wait\n2=repoinfo,repo2,apply-reboot,"
                     "wait\n3=repoinfo,reboot\n4=repoinfo,poweroff",
                     ["REPO_OLD", "OLD", "NEW", "NEW"], ["REPO_OLD", "OLD", "NEW", "NEW"],
                     check=check_repo, disks=repo_disk, timeout=3000, boot_timeout=1800),
    # The same repository signed by another key than the configured one: apt refuses it, apply
    # fails with apt's words, nothing is installed, the next boot is REPO_OLD again.
    "repo-badsig": Scenario("repo", "src=repo\n1=repo1,apply,repoinfo,reboot\n2=repoinfo,poweroff",
                            ["REPO_OLD", "REPO_OLD"], ["REPO_OLD", "REPO_OLD"], check=check_repo,
                            disks=repo_disk, timeout=1500),
}
