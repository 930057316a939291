# SPDX-License-Identifier: GPL-2.0-or-later
"""What the Python test scripts share: the source tree's paths, the example root's kernels and
GRUB entry paths, the environment with the fakes first on PATH, and check() with its count.
Scripts in test/ import it directly; deeper ones put test/ on sys.path first."""
import json
import shlex
import os
import subprocess
import sys

SRC = os.environ.get("KS_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKES = os.path.join(SRC, "test", "fakes")
ROOTS = os.path.join(SRC, "test", "roots")
EXAMPLE_ROOT = os.path.join(ROOTS, "ubuntu-24.04-kvm", "root")
XANMOD_KEY = os.path.join(SRC, "data", "keys", "xanmod-archive-keyring.asc")

# The example root (test/roots/ubuntu-24.04-kvm): its running kernel, the XanMod release the
# tests install, and both kernels' full GRUB id paths.
OLD, NEW = "6.8.0-48-generic", "6.18.45-x64v3-xanmod1"
UUID = "f93ca2dd-74af-4ee8-b478-970b29be5ca3"
OLD_PATH = f"gnulinux-advanced-{UUID}>gnulinux-{OLD}-advanced-{UUID}"
NEW_PATH = f"gnulinux-advanced-{UUID}>gnulinux-{NEW}-advanced-{UUID}"

failed = 0


def check(cond, what, extra=None):
    """Prints ok/FAIL; on failure counts it and shows extra (its head and tail when long)."""
    global failed
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failed += 1
        if extra:
            text = str(extra)
            if len(text) > 4000:
                text = text[:1000] + "\n[...]\n" + text[-3000:]
            print("     " + text.replace("\n", "\n     "), flush=True)


def env(**kw):
    """This process's environment with the fakes first on PATH, no colour, and kw added."""
    e = dict(os.environ, PATH=FAKES + ":" + os.environ["PATH"], NO_COLOR="1")
    e.update({k: str(v) for k, v in kw.items()})
    return e


def load_qemu_grub(tool, build="2.06-pc"):
    """test/grub/qemu-grub.py's functions (image, boot, grubenv offset) without running its
    scenarios; tool is its FORECAST_TOOL argument, build its --build. Exits 77 when qemu or
    GRUB is missing."""
    harness = os.path.join(SRC, "test", "grub", "qemu-grub.py")
    with open(harness, encoding="utf-8") as f:
        code = f.read()
    tail = "\nsys.exit(main())\n"
    assert code.endswith(tail), "qemu-grub.py changed its last line"
    ns = {"__name__": "qemu_grub", "__file__": harness}
    argv = sys.argv
    sys.argv = [harness, tool, "--build", build]
    try:
        exec(compile(code[: -len(tail)] + "\n", harness, "exec"), ns)
    finally:
        sys.argv = argv
    return ns


def write_grub_boot_sectors(img, core, moddir="/usr/lib/grub/i386-pc", part_offset=1 << 20):
    """GRUB for BIOS as grub-bios-setup writes it: boot.img's code in the MBR (partition table
    kept), core.img in the gap before the first partition."""
    with open(os.path.join(moddir, "boot.img"), "rb") as f:
        boot = bytearray(f.read())
    boot[0x66:0x68] = b"\x90\x90"  # grub-bios-setup: no drive check for hard disks
    with open(core, "rb") as f:
        core_data = f.read()
    assert len(core_data) < part_offset - 512, "core.img does not fit before the partition"
    with open(img, "r+b") as f:
        f.write(boot[:440])
        f.seek(512)
        f.write(core_data)


def unroot(command, root):
    """A next step as kswap prints it after a --root run (kswap --root ROOT ...: it runs when
    pasted) with the --root taken out, to compare with the command for the host."""
    if not command:
        return command
    for word in (shlex.quote(root), shlex.quote(os.path.realpath(root))):
        prefix = f"kswap --root {word} "
        if command.startswith(prefix):
            return "kswap " + command[len(prefix):]
    return command


def run_kswap(exe, root, *args, timeout=120, **env_kw):
    """kswap --root ROOT ARGS with the fakes first on PATH: (CompletedProcess, JSON document
    or None; parsed only with --json)."""
    p = subprocess.run([exe, "--root", root, *args], capture_output=True, text=True,
                       env=env(**env_kw), timeout=timeout)
    doc = None
    if "--json" in args:
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
    return p, doc


def kill_inside_update_grub(exe, root, args, saved_entry, timeout=60):
    """kswap --root ROOT ARGS with update-grub made slow (the fake sleeps after its work),
    killed (SIGKILL, its whole process group) once grubenv's saved_entry is saved_entry: a
    power cut between GRUB's default and the rest of the command. True when the cut fell
    there, while the command still ran."""
    import signal
    import time
    grubenv = os.path.join(root, "boot/grub/grubenv")

    def saved():
        p = subprocess.run(["grub-editenv", grubenv, "list"], capture_output=True, text=True)
        return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l).get("saved_entry")

    p = subprocess.Popen([exe, "--root", root, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True,
                         env=env(KSWAP_FAKE_UPDATE_GRUB_POST_HOOK="sleep 60"))
    deadline = time.time() + timeout
    while saved() != saved_entry and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    cut = p.poll() is None and saved() == saved_entry
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate()
    return cut

# --- GRUB builds of Debian 13 (trixie), OVMF, EFI system partitions: shared by test/grub and
# test/vm. Nothing here touches the host's apt state, /boot or GRUB.

CACHE = os.environ.get("KS_CACHE", "/var/cache/kswap-test")


class Unavailable(Exception):
    """A test input cannot be had (archive unreachable, package missing): the caller skips (77)
    with str(e) as the reason."""


def debian_mirror():
    """The Debian mirror the host's apt sources name for its own Debian suites (the first URI of
    a deb source whose suites are Debian's: bookworm, trixie, ...), or deb.debian.org;
    KS_DEBIAN_MIRROR overrides it."""
    import glob
    import re

    if os.environ.get("KS_DEBIAN_MIRROR"):
        return os.environ["KS_DEBIAN_MIRROR"].rstrip("/")
    texts = []
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*")):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append((path, f.read()))
        except OSError:
            continue
    suites = r"(bookworm|trixie|bullseye|forky|sid|stable|testing|unstable)"
    for path, text in texts:
        if path.endswith(".sources"):  # deb822 stanzas
            for stanza in re.split(r"\n\s*\n", text):
                uri = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
                suite = re.search(r"^Suites:\s*" + suites + r"(\s|$)", stanza, re.M)
                if uri and suite and re.search(r"^Types:.*\bdeb\b", stanza, re.M) and \
                        not uri.group(1).rstrip("/").endswith("-security"):
                    return uri.group(1).rstrip("/")
        else:
            for line in text.splitlines():
                m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+" + suites + r"(\s|$)", line)
                if m and not m.group(1).rstrip("/").endswith("-security"):
                    return m.group(1).rstrip("/")
    return "http://deb.debian.org/debian"


def _private_apt(state, suite):
    """apt-get options for a private apt state in directory state (its own sources.list, lists,
    cache, an empty dpkg status): the host's apt configuration and state are never read or
    written."""
    for d in ("lists/partial", "cache/archives/partial", "etc"):
        os.makedirs(os.path.join(state, d), exist_ok=True)
    src = os.path.join(state, "etc", "sources.list")
    with open(src, "w", encoding="utf-8") as f:
        f.write(f"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {debian_mirror()} "
                f"{suite} main\n")
    return ["-o", f"Dir::Etc::sourcelist={src}", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State::Lists={state}/lists", "-o", f"Dir::Cache={state}/cache",
            "-o", "Dir::State::status=/dev/null", "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=root", "-o", "Acquire::Retries=2",
            "-o", "Acquire::http::Timeout=30"]


def debian_packages(suite, packages):
    """The named packages of Debian's suite (binary-amd64), fetched with apt-get download
    through a private apt state (signatures checked against debian-archive-keyring) and
    unpacked with dpkg-deb -x, never installed: returns (version of packages[0], directory of
    the unpacked tree). The tree is cached in CACHE/debian/SUITE/NAMES-VERSION; a cached tree
    is used as is when the archive cannot be reached. Raises Unavailable."""
    import fcntl
    import glob
    import shutil
    import tempfile

    base = os.path.join(CACHE, "debian", suite)
    os.makedirs(base, exist_ok=True)
    key = "+".join(packages)
    with open(os.path.join(base, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel tests fetch once
        opts = _private_apt(os.path.join(base, "apt"), suite)
        up = subprocess.run(["apt-get", *opts, "-q", "update"], capture_output=True, text=True,
                            timeout=300)
        cached = sorted(glob.glob(os.path.join(base, key + "-*", ".complete")), key=os.path.getmtime)
        if up.returncode != 0 or "Err:" in up.stdout or "Failed to fetch" in up.stderr:
            if cached:  # offline: the newest tree fetched before
                d = os.path.dirname(cached[-1])
                return _version_of(d), d
            lines = (up.stdout + up.stderr).splitlines()
            why = [l for l in lines if "Failed to fetch" in l] or [l for l in lines if l.startswith("E:")] \
                or lines[-1:] or ["apt-get update failed"]
            raise Unavailable(f"Debian {suite} archive at {debian_mirror()} unreachable (and "
                              f"nothing cached in {base}): {why[0].strip()}")
        versions = []
        for p in packages:
            q = subprocess.run(["apt-cache", *opts, "show", "--no-all-versions", p],
                               capture_output=True, text=True)
            v = [l.split(":", 1)[1].strip() for l in q.stdout.splitlines() if l.startswith("Version:")]
            if q.returncode != 0 or not v:
                raise Unavailable(f"Debian {suite} has no package {p}")
            versions.append(v[0])
        d = os.path.join(base, f"{key}-{versions[0]}")
        if os.path.exists(os.path.join(d, ".complete")):
            return versions[0], d
        tmp = tempfile.mkdtemp(prefix=".unpack-", dir=base)
        try:
            dl = os.path.join(tmp, "debs")
            os.makedirs(dl)
            g = subprocess.run(["apt-get", *opts, "-q", "download",
                                *[f"{p}={v}" for p, v in zip(packages, versions)]],
                               cwd=dl, capture_output=True, text=True, timeout=600)
            if g.returncode != 0:
                raise Unavailable(f"apt-get download {' '.join(packages)} from Debian {suite} "
                                  f"failed: {g.stderr.strip()}")
            tree = os.path.join(tmp, "tree")
            for deb in sorted(glob.glob(os.path.join(dl, "*.deb"))):
                subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
            with open(os.path.join(tree, ".complete"), "w") as f:
                f.write("".join(f"{p} {v}\n" for p, v in zip(packages, versions)))
            shutil.rmtree(d, ignore_errors=True)
            os.rename(tree, d)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return versions[0], d


def _version_of(tree):
    with open(os.path.join(tree, ".complete"), encoding="utf-8") as f:
        return f.readline().split()[1]


def trixie_grub():
    """GRUB 2.12 of Debian 13: grub-pc-bin, grub-efi-amd64-bin and grub-common unpacked
    (debian_packages): (version, tree); tree/usr/lib/grub/{i386-pc,x86_64-efi}."""
    return debian_packages("trixie", ["grub-pc-bin", "grub-efi-amd64-bin", "grub-common"])


def grub_mkimage(tree=None):
    """The grub-mkimage to run for a GRUB tree: its own (tree/usr/bin/grub-mkimage) when it runs
    on this host, else the host's; modules always come from the tree's -d directory. Returns
    (argv0, description)."""
    import shutil

    own = os.path.join(tree, "usr", "bin", "grub-mkimage") if tree else None
    if own and os.path.exists(own):
        p = subprocess.run([own, "--version"], capture_output=True, text=True)
        if p.returncode == 0:
            return own, p.stdout.strip()
        why = (p.stderr.strip().splitlines() or ["does not run"])[-1]
    host = shutil.which("grub-mkimage") or "/usr/bin/grub-mkimage"
    p = subprocess.run([host, "--version"], capture_output=True, text=True)
    desc = p.stdout.strip() + " (host)"
    if own:
        desc += f"; the tree's own does not run here: {why}"
    return host, desc


def find_ovmf():
    """OVMF of Debian's package ovmf: (code, vars template) paths, 4M build first; None when
    not installed. Boot with a private copy of the vars template (it is written)."""
    for code, vars_ in (("OVMF_CODE_4M.fd", "OVMF_VARS_4M.fd"), ("OVMF_CODE.fd", "OVMF_VARS.fd")):
        c, v = (os.path.join("/usr/share/OVMF", n) for n in (code, vars_))
        if os.path.exists(c) and os.path.exists(v):
            return c, v
    return None


def ovmf_qemu_args(code, vars_copy):
    """qemu-system-x86_64 arguments for UEFI firmware: OVMF code read-only, vars writable
    (the non-secure-boot builds run on the default pc machine and on q35)."""
    return ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={code}",
            "-drive", f"if=pflash,format=raw,unit=1,file={vars_copy}"]


def make_esp(img, size_mb, files):
    """An EFI system partition image (FAT, made by mkfs.vfat, filled by mtools' mcopy: no
    mount): files maps a path inside it ("EFI/BOOT/BOOTX64.EFI") to a host file."""
    with open(img, "wb") as f:
        f.truncate(size_mb << 20)
    subprocess.run(["mkfs.vfat", "-n", "ESP", img], check=True, capture_output=True,
                   env=dict(os.environ, PATH=os.environ["PATH"] + ":/usr/sbin:/sbin"))
    made = set()
    for path in sorted(files):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in made:
                subprocess.run(["mmd", "-i", img, "::/" + d], check=True, capture_output=True)
                made.add(d)
        subprocess.run(["mcopy", "-i", img, files[path], "::/" + "/".join(parts)], check=True,
                       capture_output=True)


ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
LINUX_TYPE = "0FC63DAF-8483-4772-8E79-3D69E4EB1C4D"


def partition_gpt(img, parts):
    """A GPT on disk image img (sfdisk): parts is a list of (start byte, size bytes, type GUID),
    both multiples of 1 MiB."""
    script = "label: gpt\n" + "".join(f"start={s // 512}, size={n // 512}, type={t}\n"
                                      for s, n, t in parts)
    subprocess.run(["sfdisk", "-q", img], input=script.encode(), check=True, capture_output=True,
                   env=dict(os.environ, PATH=os.environ["PATH"] + ":/usr/sbin:/sbin"))
