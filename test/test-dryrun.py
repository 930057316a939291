#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""apply --dry-run and rollback --purge on copies of a fixture root, with the fakes of apt-get,
update-grub and systemctl first on PATH (test/fakes/, each records its calls under var/log).
Usage: test-dryrun.py KSWAP [SCENARIO...]"""
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import NEW, OLD, OLD_PATH, check, env

exe = os.path.abspath(sys.argv[1])
only = sys.argv[2:]
fakes = kstest.FAKES
base_root = kstest.EXAMPLE_ROOT
key = kstest.XANMOD_KEY
work = tempfile.mkdtemp(prefix="kswap-dryrun.")
FAKE_LOGS = ("var/log/fake-apt.log", "var/log/fake-apt-env.log", "var/log/fake-update-grub.log", "var/log/fake-systemctl.log")


def kswap(root, *args, timeout=120, **kw):
    return kstest.run_kswap(exe, root, *args, timeout=timeout, **kw)


def scenario(name):
    return not only or name in only


def make_deb(name, *opts):
    out = os.path.join(work, name)
    if not os.path.exists(out):
        subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW, out, *opts],
                       check=True, capture_output=True)
    return out


def fresh_root(name):
    """A copy of the example root with what the fakes make for their logs made already (the
    folders and empty logs), so that only what kswap itself does changes the tree."""
    r = os.path.join(work, name)
    shutil.copytree(base_root, r, symlinks=True)
    for d in ("var/log", "run"):
        os.makedirs(os.path.join(r, d), exist_ok=True)
    for n in ("apt", "apt-env", "update-grub", "systemctl", "nft", "tc", "wg", "journalctl"):
        open(os.path.join(r, f"var/log/fake-{n}.log"), "a").close()
    return r


def tree(root):
    """Every entry under root but the fakes' logs: type, mode, size, mtime (ns), content hash
    or link target. Directories too, so a file created and removed again shows (mtime)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if rel.startswith("var/log/fake-"):
                continue
            st = os.lstat(p)
            if os.path.islink(p):
                what = "link:" + os.readlink(p)
            elif os.path.isfile(p):
                what = hashlib.sha256(open(p, "rb").read()).hexdigest()
            else:
                what = "dir"
            out[rel] = (st.st_mode, st.st_size, st.st_mtime_ns, what)
    st = os.lstat(root)
    out["."] = (st.st_mode, st.st_mtime_ns)
    return out


def diff(a, b):
    return sorted(set(k for k in a.keys() | b.keys() if a.get(k) != b.get(k)))


def log(root, name):
    p = os.path.join(root, "var/log", name)
    return open(p).read() if os.path.exists(p) else ""


def clear_logs(root):
    for p in FAKE_LOGS:
        open(os.path.join(root, p), "w").close()


def nothing_ran(root, what):
    apt = log(root, "fake-apt.log")
    check(" install " not in apt and " purge " not in apt and " remove " not in apt,
          f"{what}: apt-get install/purge never ran", apt)
    check(log(root, "fake-update-grub.log") == "", f"{what}: update-grub never ran",
          log(root, "fake-update-grub.log"))
    check("reboot" not in log(root, "fake-systemctl.log"), f"{what}: no reboot")


def grubenv_list(root):
    p = subprocess.run(["grub-editenv", os.path.join(root, "boot/grub/grubenv"), "list"],
                       capture_output=True, text=True)
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


def files_of(d):
    return {f["path"]: f for f in ((d or {}).get("dry_run") or {}).get("files", [])}


def kernels(grub):
    return [b["kernel"] for b in (grub or {}).get("forecast", [])]


good = make_deb("xanmod.deb", "--bbr", "builtin", "--compress", "zst")
debs = os.path.join(work, "debs")
os.makedirs(debs, exist_ok=True)
subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW,
                os.path.join(debs, "linux-xanmod-lts-x64v3.deb"), "--package",
                "linux-xanmod-lts-x64v3", "--bbr", "builtin"], check=True, capture_output=True)

if scenario("deb"):
    r = fresh_root("deb")
    before = tree(r)
    p, d = kswap(r, "--json", "apply", "--dry-run", "--deb", good)
    after = tree(r)
    check(p.returncode == 0 and d and d.get("result") == "dry-run", "dry run of apply --deb: exit 0, "
          "result dry-run", p.stderr[-2000:])
    check(not diff(before, after), "nothing under the root changed (content, modes, mtimes)",
          diff(before, after))
    nothing_ran(r, "--deb")
    dr = (d or {}).get("dry_run") or {}
    f = files_of(d)
    check(dr.get("old_kernel") == OLD and dr.get("new_kernel") == NEW and dr.get("package") == f"linux-image-{NEW}",
          "old and new kernels named, the package by the name the journal records", dr)
    check(dr.get("source", {}).get("kind") == "deb" and dr.get("source", {}).get("name") == os.path.realpath(good),
          "the source is the local package", dr.get("source"))
    drop = f.get("etc/default/grub.d/90-kswap.cfg", {})
    check("GRUB_DEFAULT=saved\n" in (drop.get("content") or "") and "panic=10" in drop["content"],
          "the drop-in's content as apply writes it", drop)
    env_ = f.get("boot/grub/grubenv", {})
    check(f"saved_entry={OLD_PATH}\n" in (env_.get("content") or "") and
          "next_entry=kswap-trial\n" in env_["content"] and env_.get("size") == 1024,
          "the grubenv as arming leaves it: saved_entry old, next_entry the trial", env_)
    progs = [(x["step"], x["argv"]) for x in dr.get("programs", [])]
    check(("install", ["apt-get", "-q", "-y", "--no-install-recommends", "-o",
                       "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
                       "install", os.path.realpath(good)]) in progs and
          [s for s, a in progs if a == ["update-grub"]] == ["prepare", "arm", "arm"],
          "programs: apt-get install of the file, update-grub at prepare and twice at arm", progs)
    check([s["name"] for s in dr.get("steps", [])] == ["check", "prepare", "install", "verify", "arm"],
          "the journal's steps", dr.get("steps"))
    check(not dr.get("forecast_known") and "known only once apt installed it" in dr.get("forecast_note", ""),
          "a kernel not installed yet: the forecast after arming is not guessed, the note says so", dr)
    p2, _ = kswap(r, "apply", "--dry-run", "--deb", good)
    check(p2.returncode == 0 and "GRUB_DEFAULT=saved" in p2.stdout and "next_entry=kswap-trial" in p2.stdout
          and "nothing was changed" in p2.stdout, "text: the content of the drop-in and grubenv",
          p2.stdout[-3000:])
    check(not diff(before, tree(r)), "... and the text run changed nothing either")

if scenario("repo"):
    r = fresh_root("repo")
    before = tree(r)
    p, d = kswap(r, "--json", "apply", "--dry-run", "--key", key, KSWAP_FAKE_DEBS=debs)
    check(p.returncode == 0 and d and d.get("result") == "dry-run", "dry run from the repository: exit 0",
          p.stderr[-2000:])
    check(not diff(before, tree(r)), "nothing under the root changed", diff(before, tree(r)))
    nothing_ran(r, "repository")
    apt = log(r, "fake-apt.log")
    check(apt.count("apt-get") == 1 and " update" in apt and "Dir::State::Lists=" in apt,
          "the one apt-get that ran is the repository check's update into a private folder", apt)
    dr = (d or {}).get("dry_run") or {}
    f = files_of(d)
    src = f.get("etc/apt/sources.list.d/xanmod.sources", {})
    check("Types: deb" in (src.get("content") or "") and "Signed-By: /etc/apt/keyrings/xanmod-archive-keyring.gpg"
          in src["content"], "the deb822 source with its content", src)
    kr = f.get("etc/apt/keyrings/xanmod-archive-keyring.gpg", {})
    check(kr.get("action") == "write" and kr.get("content") is None and kr.get("size", 0) > 100,
          "the keyring: binary, its size", kr)
    check(dr.get("package") == "linux-xanmod-lts-x64v3" and dr.get("source", {}).get("kind") == "repository"
          and dr["source"]["name"].startswith("http://deb.xanmod.org "), "package and repository named", dr.get("source"))
    progs = [x["argv"] for x in dr.get("programs", [])]
    check(["apt-get", "-q", "-y", "--no-install-recommends", "-o", "Dpkg::Options::=--force-confdef", "-o",
           "Dpkg::Options::=--force-confold", "install", "linux-xanmod-lts-x64v3"] in progs,
          "apt-get install of the metapackage listed", progs)
    # The key refused: apply refuses before any change, the dry run with the same words and exit.
    p1, d1 = kswap(fresh_root("repo-badkey-apply"), "--json", "apply", "--yes", "--key", os.path.join(kstest.SRC, "README.md"),
                   KSWAP_FAKE_DEBS=debs)
    p2, d2 = kswap(r, "--json", "apply", "--dry-run", "--key", os.path.join(kstest.SRC, "README.md"), KSWAP_FAKE_DEBS=debs)
    check(p1.returncode == p2.returncode != 0 and d2 and d1 and d2.get("error") == d1.get("error")
          and d2.get("result") == d1.get("result"), "a refused key: the dry run fails as apply does",
          (p1.returncode, p2.returncode, d1 and d1.get("error"), d2 and d2.get("error")))
    check(not diff(before, tree(r)), "... and changed nothing")

if scenario("kernel"):
    # An installed kernel: the forecast after arming is evaluated, and apply then makes exactly it.
    r = fresh_root("kernel")
    subprocess.run([os.path.join(fakes, "apt-get"), "install", "-y", good], env=env(KSWAP_ROOT=r),
                   check=True, capture_output=True)
    clear_logs(r)
    before = tree(r)
    p, d = kswap(r, "--json", "apply", "--dry-run", "--kernel", NEW)
    check(p.returncode == 0 and d and d.get("result") == "dry-run", "dry run of --kernel INSTALLED", p.stderr[-2000:])
    check(not diff(before, tree(r)), "nothing under the root changed", diff(before, tree(r)))
    nothing_ran(r, "--kernel")
    dr = (d or {}).get("dry_run") or {}
    f = files_of(d)
    check(dr.get("forecast_known") and dr.get("forecast_promised") and
          kernels(dr.get("grub_after")) == [NEW, OLD, OLD], "forecast after arming: new once, then old",
          (dr.get("forecast_note"), kernels(dr.get("grub_after"))))
    check(dr["grub_after"]["forecast"][0]["one_shot"] and dr["grub_after"]["forecast"][0]["id_path"] == "kswap-trial",
          "boot 1 is the one-shot trial entry", dr.get("grub_after", {}).get("forecast"))
    trial = f.get("etc/grub.d/01_kswap_trial", {}).get("content") or ""
    check("menuentry 'kswap trial: " + NEW in trial and "kswap.deadline=900" in trial, "the trial script's content", trial[:500])
    check(dr.get("package") is None and [s["detail"] for s in dr.get("steps", []) if s["name"] == "install"] ==
          ["skipped: installed already"], "nothing to install", dr.get("steps"))
    p2, d2 = kswap(r, "--json", "apply", "--kernel", NEW, "--yes")
    check(p2.returncode == 0 and d2 and d2.get("state") == "armed", "apply --kernel for real", p2.stderr[-2000:])
    check(d2 and kernels(d2.get("grub")) == kernels(dr.get("grub_after")), "apply's forecast is the dry run's",
          (kernels((d2 or {}).get("grub")), kernels(dr.get("grub_after"))))
    real = grubenv_list(r)
    want = dict(l.split("=", 1) for l in f["boot/grub/grubenv"]["content"].splitlines())
    check({k: real.get(k) for k in ("saved_entry", "next_entry")} == {k: want.get(k) for k in ("saved_entry", "next_entry")},
          "the grubenv apply wrote holds what the dry run showed", (real, want))
    drop = open(os.path.join(r, "etc/default/grub.d/90-kswap.cfg")).read()
    check(drop == f["etc/default/grub.d/90-kswap.cfg"]["content"], "the drop-in apply wrote is the dry run's")
    # Armed now: the dry run says so as apply does (exit 0, unchanged) and changes nothing.
    before = tree(r)
    p3, d3 = kswap(r, "--json", "apply", "--dry-run", "--kernel", NEW)
    p4, d4 = kswap(r, "--json", "apply", "--kernel", NEW, "--yes")
    check(p3.returncode == p4.returncode == 0 and d3 and d4 and d3.get("result") == d4.get("result") == "unchanged"
          and d3.get("error") == d4.get("error"), "armed already: the same answer as apply", (d3 and d3.get("error")))

if scenario("refused"):
    # A blocking finding: the same findings and exit code as apply, nothing changed.
    bad = make_deb("nocake.deb", "--bbr", "builtin", "--without", "sch_cake")
    r = fresh_root("refused")
    before = tree(r)
    p1, d1 = kswap(r, "--json", "apply", "--dry-run", "--deb", bad)
    check(not diff(before, tree(r)), "refused dry run: nothing changed", diff(before, tree(r)))
    p2, d2 = kswap(r, "--json", "apply", "--deb", bad, "--yes")
    ids = lambda d: sorted((f["id"], f["severity"]) for f in (d or {}).get("findings", []))
    check(p1.returncode == p2.returncode == 2 and ids(d1) == ids(d2) and ("modules.missing", "block") in ids(d1)
          and d1.get("result") == "refused", "blocked: exit 2 and the same findings as apply",
          (p1.returncode, p2.returncode, ids(d1), ids(d2)))
    # Another kswap holds the lock: busy, exit 1, as apply (whose lock file exists now).
    r = fresh_root("busy")
    os.makedirs(os.path.join(r, "var/lib/kswap"), exist_ok=True)
    lock = os.path.join(r, "var/lib/kswap/lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"%d\n" % os.getpid())
    fcntl.flock(fd, fcntl.LOCK_EX)
    cfg = os.path.join(work, "lock.conf")
    with open(cfg, "w") as fh:
        fh.write("[apply]\nlock_timeout = 1\n")
    before = tree(r)
    p1, d1 = kswap(r, "--json", "--config", cfg, "apply", "--dry-run", "--deb", good)
    check(p1.returncode == 1 and d1 and d1.get("result") == "busy" and str(os.getpid()) in (d1.get("error") or ""),
          "the lock held: busy, exit 1, the holder named", (p1.returncode, d1 and d1.get("error")))
    check(not diff(before, tree(r)), "... the lock file untouched (the dry run never writes its pid)",
          diff(before, tree(r)))
    fcntl.flock(fd, fcntl.LOCK_UN)
    fcntl.flock(fd, fcntl.LOCK_SH)
    p2, d2 = kswap(r, "--json", "--config", cfg, "apply", "--dry-run", "--deb", good)
    check(p2.returncode == 0, "a shared holder (another dry run) does not make it busy", p2.stderr[-1000:])
    os.close(fd)

if scenario("purge"):
    # apply --deb, a health failure, a second apply --kernel, rollback --purge: everything any
    # apply of this swap installed goes, and is listed.
    r = fresh_root("purge")
    conf = os.path.join(work, "purge.conf")
    with open(conf, "w") as fh:
        fh.write("[accept]\nservices = app.service\ntimeout = 2\ninterval = 1\n")
    units = os.path.join(r, "run/fake-units")
    os.makedirs(units, exist_ok=True)
    open(os.path.join(units, "app.service"), "w").write("active\n")
    p, d = kswap(r, "--json", "--config", conf, "apply", "--deb", good, "--yes")
    check(p.returncode == 0 and d and d.get("state") == "armed", "apply --deb arms", p.stderr[-2000:])
    kstest_boot = lambda rel: (open(os.path.join(r, "proc/sys/kernel/osrelease"), "w").write(rel + "\n"),
                               open(os.path.join(r, "proc/sys/kernel/random/boot_id"), "w").write(
                                   "%08x-0000-4000-8000-000000000000\n" % (abs(hash(rel + str(len(os.listdir(work))))) % 2**32)))
    kstest_boot(NEW)
    open(os.path.join(units, "app.service"), "w").write("inactive\n")
    p, d = kswap(r, "--json", "--config", conf, "accept", "--timeout", "4")
    check(p.returncode == 3 and d and d.get("outcome") == "health-failed", "the trial fails its health check",
          p.stderr[-2000:])
    kstest_boot(OLD)
    open(os.path.join(units, "app.service"), "w").write("active\n")
    p, d = kswap(r, "--json", "--config", conf, "apply", "--kernel", NEW, "--yes")
    check(p.returncode == 0 and d and d.get("state") == "armed", "second apply --kernel arms", p.stderr[-2000:])
    pk = [c["name"] for c in (d or {}).get("changes", []) if c.get("kind") == "package"]
    check(f"linux-image-{NEW}" in pk, "the second apply's journal still holds the first one's package", pk)
    clear_logs(r)
    p, d = kswap(r, "--json", "--config", conf, "rollback", "--purge")
    check(p.returncode == 0 and d and d.get("result") == "done", "rollback --purge", p.stderr[-2000:])
    removed = [(x["kind"], x.get("name") or x.get("path")) for x in (d or {}).get("removed", [])]
    check(removed == [("package", f"linux-image-{NEW}"), ("grub-dropin", "etc/default/grub.d/90-kswap.cfg"),
                      ("autoremove-guard", "etc/apt/apt.conf.d/01autoremove-kswap")],
          "removed lists the package, the drop-in and the autoremove guard", removed)
    apt = log(r, "fake-apt.log")
    check(f"purge linux-image-{NEW}" in apt, "the fake apt-get recorded the purge", apt)
    dpkg = open(os.path.join(r, "var/lib/dpkg/status")).read()
    check(f"Package: linux-image-{NEW}\n" not in dpkg and not os.path.exists(os.path.join(r, f"boot/vmlinuz-{NEW}")),
          "the package is gone from dpkg's status and /boot")
    check(not os.path.exists(os.path.join(r, "etc/default/grub.d/90-kswap.cfg")), "the drop-in is gone", p.stderr + json.dumps(d.get("removed")))
    check(kernels(d.get("grub") if d else None) == [OLD, OLD, OLD], "every boot starts the old kernel",
          kernels(d.get("grub") if d else None))
    p, d = kswap(r, "--config", conf, "rollback", "--purge")
    check(p.returncode == 0 and "nothing to remove" in p.stdout and "rollback: done, nothing was removed" in p.stdout,
          "a second purge says there was nothing to remove", p.stdout + p.stderr)
    # The repository's source and keyring go too.
    r = fresh_root("purge-repo")
    p, d = kswap(r, "--json", "apply", "--key", key, "--yes", KSWAP_FAKE_DEBS=debs)
    check(p.returncode == 0 and d and d.get("state") == "armed", "apply from the repository arms", p.stderr[-2000:])
    p, d = kswap(r, "rollback", "--purge")
    check(p.returncode == 0 and "apt-source" in p.stdout and "apt-keyring" in p.stdout and "grub-dropin" in p.stdout
          and "linux-xanmod-lts-x64v3" in p.stdout, "purge lists the metapackage, source, keyring and drop-in", p.stdout)
    check(not os.path.exists(os.path.join(r, "etc/apt/sources.list.d/xanmod.sources")) and
          not os.path.exists(os.path.join(r, "etc/apt/keyrings/xanmod-archive-keyring.gpg")), "source and keyring gone")

if scenario("progress"):
    # apt's phases from its Status-Fd lines (the fake writes them as apt does): one line each on
    # a log, live on a terminal; -v shows programs and files; -q only errors.
    r = fresh_root("progress")
    p, d = kswap(r, "apply", "--deb", good, "--yes")
    err = p.stderr
    check(p.returncode == 0, "apply --deb with stderr on a pipe", err[-2000:])
    check(f"-o APT::Status-Fd=3 -q -y --no-install-recommends" in log(r, "fake-apt.log"),
          "apt-get install runs with -o APT::Status-Fd=3", log(r, "fake-apt.log"))
    phases = re.findall(r"^\[install\] apt (\w+): (.*) \((\d+) s\)$", err, re.M)
    check([ph for ph, _, _ in phases] == ["unpack", "setup"] and phases[0][1] == f"Preparing linux-image-{NEW}"
          and phases[1][1] == f"Preparing to configure linux-image-{NEW}",
          "one line per apt phase, with the elapsed seconds", phases)
    took = re.search(r"^\[install\] apt took ([0-9.]+) s: unpack ([0-9.]+) s, setup ([0-9.]+) s \(\d+ s\)$", err, re.M)
    check(took is not None, "a last line says where apt's time went, phase by phase", err[-2000:])
    check("\r" not in err and "\033[K" not in err, "no live line on a pipe")
    p, d = kswap(r, "rollback", "--purge")
    check(re.search(r"^\[purge\] apt remove: Preparing to completely remove linux-image-", p.stderr, re.M),
          "the purge's apt phase", p.stderr[-1500:])
    # From the repository: the download phase.
    r = fresh_root("progress-repo")
    p, d = kswap(r, "-v", "apply", "--key", key, "--yes", KSWAP_FAKE_DEBS=debs)
    check(p.returncode == 0 and re.search(r"^\[install\] apt download: Retrieving file 1 of 1 \(\d+ s\)$",
                                           p.stderr, re.M), "apt's download phase from the repository",
          p.stderr[-2000:])
    check(re.search(r"^  run \S+/apt-get -o APT::Status-Fd=3 -q -y --no-install-recommends .* install linux-xanmod-lts-x64v3$",
                    p.stderr, re.M) and re.search(r"^  run \S+/update-grub$", p.stderr, re.M),
          "-v: each program with its argv", p.stderr[-3000:])
    for what in ("write /etc/default/grub.d/90-kswap.cfg", "write /etc/apt/sources.list.d/xanmod.sources",
                 "write /etc/apt/keyrings/xanmod-archive-keyring.gpg", "write /etc/grub.d/01_kswap_trial",
                 "read /boot/grub/grub.cfg, /boot/grub/grubenv", "read /var/lib/kswap/state.json"):
        check("  " + what in p.stderr, f"-v: {what}", p.stderr[-3000:])
    check(re.search(r"^  write /boot/grub/grubenv: saved_entry = .*, next_entry = kswap-trial$", p.stderr, re.M),
          "-v: the grubenv write of arming")
    r = fresh_root("progress-quiet")
    p, d = kswap(r, "-q", "apply", "--deb", good, "--yes")
    check(p.returncode == 0 and p.stderr == "", "-q: nothing on stderr when all goes well", p.stderr[-1000:])
    # On a terminal: the same phase lines, and the percent within a phase live on one line.
    import pty, select
    r = fresh_root("progress-tty")
    master, slave = pty.openpty()
    proc = subprocess.Popen([exe, "--root", r, "apply", "--deb", good, "--yes"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=slave, env=env(TERM="xterm"))
    os.close(slave)
    out = b""
    while True:
        rd, _, _ = select.select([master], [], [], 120)
        if not rd:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=120)
    os.close(master)
    tty = out.decode(errors="replace")
    check(proc.returncode == 0 and f"\r\033[K[install] apt unpack " in tty and f"Unpacking linux-image-{NEW}" in tty,
          "on a terminal: the percent within a phase on one live line", tty[-2000:])
    check(f"[install] apt setup: Preparing to configure linux-image-{NEW}" in tty,
          "... and the phase lines as on a pipe")

shutil.rmtree(work, ignore_errors=True)
print("dryrun:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
