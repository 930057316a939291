#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The command line itself: global options anywhere, exact names, exit codes, bad roots."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

exe = sys.argv[1]
src = os.environ.get("KS_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), ".."))
ROOT = os.path.join(src, "test", "roots", "ubuntu-24.04-kvm", "root")
COMMANDS = ["plan", "verify", "apply", "pin", "rollback", "accept", "status", "list", "report"]
failed = 0


def run(*args, **env):
    return subprocess.run([exe] + list(args), capture_output=True, text=True,
                          env=dict(os.environ, **env), stdin=subprocess.DEVNULL)


def check(cond, what, p=None):
    global failed
    if not cond:
        failed += 1
        print("FAIL:", what)
        if p is not None:
            print("  exit", p.returncode, "stdout", p.stdout[:500], "stderr", p.stderr[:500])


p = run("--version")
check(p.returncode == 0 and p.stdout.startswith("kswap "), "--version", p)
p = run("--help")
check(p.returncode == 0 and "plan" in p.stdout, "--help lists plan", p)
check("not implemented" not in p.stdout, "--help lists nothing unimplemented", p)
p = run()
check(p.returncode == 1, "no command is an error", p)
p = run("pla")
check(p.returncode == 1 and "unknown command 'pla'" in p.stderr, "no prefix matching", p)
p = run("--root")
check(p.returncode == 1 and "option '--root' needs an argument (DIR)" in p.stderr
      and p.stdout == "", "--root without value", p)
with tempfile.NamedTemporaryFile() as f:
    p = run("--root", f.name, "plan")
    check(p.returncode == 1 and f.name in p.stderr, "--root on a file names it", p)
p = run("plan", "--help")
check(p.returncode == 0 and "usage" in p.stdout, "plan --help", p)


# --json: exactly one document on stdout on every path, with the exit code inside.
def one_document(args, want_exit, key=None, value=None, what=""):
    p = run(*args)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        check(False, f"{what or args}: stdout is one JSON document", p)
        return None
    check(p.returncode == want_exit, f"{what or args}: exit {want_exit}", p)
    check(doc.get("exit_code") == p.returncode, f"{what or args}: exit_code in the JSON", p)
    if key:
        check(doc.get(key) == value, f"{what or args}: {key} is {value!r}", p)
        check(isinstance(doc.get("error"), str) and doc["error"] in p.stderr,
              f"{what or args}: the error, as on stderr", p)
    return doc


tmp = tempfile.mkdtemp(prefix="kswap-cli.")
try:
    d = one_document(["--root", "/nonexistent-kswap-root", "plan", "--json"], 1, "verdict",
                     "error", "--root missing")
    check(d and "/nonexistent-kswap-root" in d["error"], "--root missing names the root")
    bad = os.path.join(tmp, "bad.conf")
    with open(bad, "w") as f:
        f.write("[verify\nmodules = x\n")
    # plan assesses a bad configuration as a blocking finding (config.invalid) naming the line.
    d = one_document(["--root", ROOT, "--config", bad, "plan", "--json"], 2,
                     what="config syntax error")
    inv = [f for f in (d or {}).get("findings", []) if f["id"] == "config.invalid"]
    check(d and d.get("verdict") == "blocked" and inv and f"{bad}:" in inv[0]["message"],
          "config syntax error: plan blocks with config.invalid naming file:line")
    one_document(["--root", ROOT, "--json", "--config", bad, "apply", "--yes"], 1, "result",
                 "error", "apply with a bad config")
    # An unreadable grub.cfg (a directory where the file should be) in status.
    r = os.path.join(tmp, "root")
    shutil.copytree(ROOT, r, symlinks=True)
    os.unlink(os.path.join(r, "boot/grub/grub.cfg"))
    os.mkdir(os.path.join(r, "boot/grub/grub.cfg"))
    d = one_document(["--root", r, "status", "--json"], 1, "state", "error", "status, no grub.cfg")
    check(d and d.get("grub") is None and "running" in d, "status error keeps the journal fields")
    # A state journal that cannot be parsed is an error, never "idle".
    shutil.rmtree(r)
    shutil.copytree(ROOT, r, symlinks=True)
    os.makedirs(os.path.join(r, "var/lib/kswap"), exist_ok=True)
    with open(os.path.join(r, "var/lib/kswap/state.json"), "w") as f:
        f.write("{not json")
    d = one_document(["--root", r, "status", "--json"], 1, "state", "error", "garbled journal")
    check(d and "state journal" in d["error"], "garbled journal: the error names the journal", d)
    # Usage errors with --json, before and after the command is known.
    one_document(["--json", "paln"], 1, "verdict", "error", "unknown command")
    one_document(["--json"], 1, "verdict", "error", "no command")
    one_document(["--json", "--bogus"], 1, "verdict", "error", "unknown global option")
    one_document(["--json", "help", "x", "y"], 1, "verdict", "error", "help with two commands")
    one_document(["--json", "--root"], 1, "verdict", "error", "--root without value")
    one_document(["--json", "plan", "--kernel"], 1, "verdict", "error", "missing argument")
    one_document(["--json", "status", "--ack", "--wait"], 1, "state", "error", "exclusive")
    one_document(["--json", "apply", "--bogus"], 1, "result", "error", "unknown apply option")
    one_document(["--json", "--root", ROOT, "apply", "--deb", "x.deb"], 2, "result", "refused",
                 "apply without --yes and a terminal")
    one_document(["--json", "--root", ROOT, "plan"], 0, what="plan")
    d = one_document(["--json", "--root", ROOT, "status"], 0, what="status")
    check(d and d.get("state") == "idle" and d.get("error") is None, "status: state idle", None)
    d = one_document(["--json", "--version"], 0, what="--version")
    check(d and d.get("version"), "--version --json has the version")
    d = one_document(["--json", "help", "apply"], 0, what="help --json")
    check(d and any(o["name"] == "key" and o["argument"] == "FILE" for o in d["options"]),
          "help --json lists apply's options")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# Usage errors: one coherent message, the nearest name, exclusive options refused.
p = run("paln")
check(p.returncode == 1 and "unknown command 'paln'; did you mean 'plan'?" in p.stderr,
      "paln: did you mean plan", p)
p = run("help", "stauts")
check(p.returncode == 1 and "did you mean 'status'?" in p.stderr, "help stauts", p)
p = run("plan", "--kernel")
check(p.returncode == 1 and "option '--kernel' needs an argument (RELEASE)" in p.stderr
      and p.stderr.count("error:") == 1, "missing argument: one message", p)
p = run("apply", "--kernle", "x")
check(p.returncode == 1 and "did you mean '--kernel'?" in p.stderr
      and p.stderr.count("error:") == 1, "--kernle: did you mean --kernel", p)
p = run("--jsno", "plan")
check(p.returncode == 1 and "did you mean '--json'?" in p.stderr, "--jsno: did you mean --json", p)
p = run("apply", "--yes=1")
check(p.returncode == 1 and "option '--yes' takes no argument" in p.stderr, "--yes=1", p)
for args, what in [(["status", "--ack", "--wait"], "--ack --wait"),
                   (["plan", "--kernel", "a", "--deb", "b"], "plan --kernel --deb"),
                   (["apply", "--kernel", "a", "--deb", "b"], "apply --kernel --deb"),
                   (["apply", "--deb", "b", "--key", "k"], "apply --deb --key"),
                   (["apply", "--package", "p", "--branch", "main"], "apply --package --branch"),
                   (["status", "--timeout", "5"], "--timeout without --wait")]:
    p = run(*args)
    check(p.returncode == 1 and "exclude" in p.stderr or "goes with" in p.stderr,
          f"{what} refused", p)

# Help: kswap help COMMAND is COMMAND --help, and names every option with its argument.
man = open(os.path.join(src, "docs", "kswap.8.scd")).read()


def man_section(title):
    m = re.search(r"^# " + title + r"\n(.*?)(?=^# )", man, re.S | re.M)
    return m.group(1) if m else ""


def help_options(text):
    """Options of the first table after 'options:' (the command's own)."""
    m = re.search(r"^options:\n((?:  .*\n)+)", text, re.M)
    return set(re.findall(r"--([a-z-]+)", m.group(1))) if m else set()


commands_text = man_section("COMMANDS")
for c in COMMANDS:
    a, b = run("help", c), run(c, "--help")
    check(a.returncode == 0 and a.stdout == b.stdout, f"help {c} == {c} --help", a)
    opts = help_options(a.stdout)
    # The man page's synopsis lines of the command (lines starting with *c*).
    heads = re.findall(r"^\*" + c + r"\*.*$", commands_text, re.M)
    check(heads, f"the man page has a synopsis for {c}")
    man_opts = set()
    for h in heads:
        man_opts |= set(re.findall(r"\*--([a-z-]+)\*", h))
    check(opts == man_opts, f"{c}: --help options {sorted(opts)} == man page {sorted(man_opts)}")
    table = a.stdout.split("\noptions:\n")[1].split("\n\n")[0].splitlines() if opts else []
    for o in opts:
        line = [l for l in table if re.match(r"  --" + o + r"\b", l)]
        check(line and re.match(r"  --\S+( [A-Z|a-z]+)?  +\S", line[0]),
              f"{c} --{o} has a description", a)
        arg = re.search(r"_([A-Z]+)_", "".join(heads).split("*--" + o + "*")[1][:12]) \
            if "*--" + o + "* _" in "".join(heads) else None
        if arg:
            check(re.match(r"  --" + o + " " + arg.group(1) + " ", line[0]),
                  f"{c} --{o} takes {arg.group(1)} in --help as in the man page", a)
p = run("--help")
glob = set(re.findall(r"--([a-z-]+)", p.stdout.split("global options (")[1].split("\n\n")[0]))
man_glob = set(re.findall(r"^\*(?:-\w\*, \*)?--([a-z-]+)\*", man_section("GLOBAL OPTIONS"), re.M))
check(glob == man_glob, f"global options in --help {sorted(glob)} == man page {sorted(man_glob)}")
for c in COMMANDS + ["help"]:
    check(re.search(r"^  " + c + r"\b", p.stdout, re.M), f"--help lists {c}", p)

# Every JSON key the code emits is named in the man page.
keys = set()
for d in ["cmd", os.path.join("lib", "engine"), "checks"]:
    for name in sorted(os.listdir(os.path.join(src, d))):
        if not name.endswith(".c"):
            continue
        text = open(os.path.join(src, d, name)).read()
        keys |= set(re.findall(r'json_object_object_add\(\s*[\w>-]+,\s*"(\w+)"', text))
        keys |= set(re.findall(r'ks_jb_add\(&?\w+,\s*\w+,\s*"(\w+)"', text))
        m = re.search(r"ks_journal_field_table\[[^]]*\]\s*=\s*\{(.*?)\};", text, re.S)
        if m:
            keys |= set(re.findall(r'"(\w+)"', m.group(1)))
check(len(keys) > 80, f"found the JSON keys in the code ({len(keys)})")
for k in sorted(keys):
    check("*" + k + "*" in man, f"JSON key '{k}' is documented in docs/kswap.8.scd")

# Every finding id in the code is documented in the man page's FINDINGS (its own entry line).
SUBJECTS = "os|virt|cpu|secureboot|boot|grub|kernel|modules|bbr|initrd|repo|config|accept|host|metrics|history"
DEPMOD_FILES = re.compile(r"^modules\.(dep|alias|builtin|symbols|softdep|weakdep|devname|order)(\.|$)")
ids = set()
for d in ["cmd", "checks", "grub", os.path.join("lib", "basic"), os.path.join("lib", "engine"),
          os.path.join("lib", "host"), os.path.join("lib", "kernel"), os.path.join("lib", "repo")]:
    for name in sorted(os.listdir(os.path.join(src, d))):
        if name.endswith(".c"):
            text = open(os.path.join(src, d, name)).read()
            ids |= {i for i in re.findall(r'"((?:' + SUBJECTS + r')\.[a-z0-9-]+)"', text)
                    if not DEPMOD_FILES.match(i)}
findings_text = man_section("FINDINGS")
check(len(ids) > 30 and "boot.old-kernel-damaged" in ids, f"found the finding ids in the code ({len(ids)})")
for i in sorted(ids):
    check(re.search(r"^\*" + re.escape(i) + r"\* \(", findings_text, re.M),
          f"finding '{i}' has its entry in kswap(8), FINDINGS")

# Colour: --color, NO_COLOR (only a non-empty value), TERM=dumb; ASCII outside UTF-8 locales.
def on_pty(*args, **env):
    """Runs kswap with stdout on a terminal; returns what it wrote there."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([exe] + list(args), stdout=slave, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, env=dict(os.environ, **env))
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait()
    os.close(master)
    return out.decode(errors="replace")


ESC = "\033["
plan = ["--root", ROOT, "plan"]
check(ESC in on_pty(*plan, NO_COLOR="", TERM="xterm"), "an empty NO_COLOR keeps colour")
check(ESC not in on_pty(*plan, NO_COLOR="1", TERM="xterm"), "NO_COLOR=1: no colour")
check(ESC not in on_pty(*plan, NO_COLOR="", TERM="dumb"), "TERM=dumb: no colour")
check(ESC not in on_pty(*plan, "--color=never", NO_COLOR="", TERM="xterm"), "--color=never")
check(ESC in on_pty(*plan, "--color", "always", NO_COLOR="1", TERM="dumb"),
      "--color always wins over NO_COLOR and TERM=dumb")
p = run(*plan, "--color=always")
check(p.returncode == 0 and ESC in p.stdout, "--color=always on a pipe", p)
p = run(*plan, "--color=always", "--json")
check(p.returncode == 0 and ESC not in p.stdout, "never colour in JSON", p)
p = run(*plan, "--color=sometimes")
check(p.returncode == 1 and "auto, always or never" in p.stderr, "--color=sometimes refused", p)
p = run(*plan, LC_ALL="C", LANG="C")
check(p.returncode == 0 and p.stdout.isascii() and " - kvm - " in p.stdout, "LANG=C: ASCII", p)
p = run(*plan, LC_ALL="C.UTF-8")
check(p.returncode == 0 and "·" in p.stdout, "UTF-8 locale: the middle dot", p)

# Passing checks read as their subject; ids stay in JSON and on problems.
p = run(*plan)
check(re.search(r"^  ok +virtualization +kvm guest", p.stdout, re.M), "ok virtualization", p)
check("virt.not-kvm" not in p.stdout and "os.unsupported" not in p.stdout,
      "no failure id on a passing line", p)
check(re.search(r"^  WARN +grub.default-not-saved", p.stdout, re.M), "a warning keeps its id", p)
p = run(*plan, "--json")
check("virt.not-kvm" in p.stdout, "ids stay in JSON", p)
p = run("-q", "--root", ROOT, "apply", "--deb", "/nonexistent.deb")
check(p.returncode == 2 and p.stderr.startswith("kswap: error:"), "-q: only errors", p)

# Progress: elapsed seconds on every step line; -v adds each step's duration; -q silences.
tmp = tempfile.mkdtemp(prefix="kswap-cli-progress.")
try:
    r = os.path.join(tmp, "root")
    shutil.copytree(ROOT, r, symlinks=True)
    p = run("--root", r, "apply", "--deb", "/nonexistent.deb", "--yes")
    check(p.returncode == 1 and re.search(r"^\[plan\] checking the host \(\d+ s\)$", p.stderr, re.M)
          and "took" not in p.stderr, "progress lines carry the elapsed seconds", p)
    p = run("-v", "--root", r, "apply", "--deb", "/nonexistent.deb", "--yes")
    check(re.search(r"^\[plan\] took \d+\.\d s$", p.stderr, re.M), "-v: the step's duration", p)
    d = one_document(["-v", "--root", r, "--json", "apply", "--deb", "/nonexistent.deb", "--yes"],
                     1, what="apply -v --json")
    check(d and d.get("result") == "failed" and "[plan]" not in p.stdout, "progress never on stdout")
    p = run("-q", "--root", r, "apply", "--deb", "/nonexistent.deb", "--yes")
    check("[plan]" not in p.stderr and "error:" in p.stderr, "-q: no progress, the error stays", p)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# kswap-accept.service: plan blocks and apply refuses alike (issue 31: they agree on every
# blocking finding), naming the command to run.
tmp = tempfile.mkdtemp(prefix="kswap-cli-unit.")
try:
    r = os.path.join(tmp, "root")
    shutil.copytree(ROOT, r, symlinks=True)

    def unit_finding():
        d = json.loads(run("--root", r, "plan", "--json").stdout)
        return next((f for f in d["findings"] if f["id"] == "accept.unit-disabled"), None)

    f = unit_finding()
    check(f and f["severity"] == "ok", "plan: the enabled unit is ok", f)
    wants = os.path.join(r, "etc/systemd/system/multi-user.target.wants/kswap-accept.service")
    os.unlink(wants)
    f = unit_finding()
    check(f and f["severity"] == "block" and f["remedy"] == "systemctl enable kswap-accept.service",
          "plan: installed, not enabled: block, systemctl enable", f)
    p = run("--root", r, "plan")
    check(p.returncode == 2, "plan exits 2 (blocked), as apply refuses", p.returncode)
    before = open(os.path.join(r, "boot/grub/grub.cfg"), "rb").read()
    d = one_document(["--root", r, "--json", "apply", "--deb", "/nonexistent.deb", "--yes"], 2,
                     "result", "refused", "apply without the unit enabled")
    check(d and "systemctl enable kswap-accept.service" in d["error"], "apply names the command", d)
    check(not os.path.exists(os.path.join(r, "var/lib/kswap/state.json")) and
          open(os.path.join(r, "boot/grub/grub.cfg"), "rb").read() == before, "... nothing changed")
    os.unlink(os.path.join(r, "usr/lib/systemd/system/kswap-accept.service"))
    f = unit_finding()
    check(f and f["severity"] == "block" and "not installed" in f["message"], "plan: no unit file", f)
    p = run("--root", r, "plan")
    check(re.search(r"^  BLOCK +accept.unit-disabled", p.stdout, re.M), "the block keeps its id", p)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# status: one exit code per state, and the next step in text and JSON.
OLD_K, NEW_K = "6.8.0-48-generic", "6.18.1-x64v3-xanmod1"
tmp = tempfile.mkdtemp(prefix="kswap-cli-state.")
try:
    r = os.path.join(tmp, "root")
    shutil.copytree(ROOT, r, symlinks=True)
    os.makedirs(os.path.join(r, "var/lib/kswap"), exist_ok=True)
    boot_id = open(os.path.join(r, "proc/sys/kernel/random/boot_id")).read().strip()
    other = "00000000-0000-4000-8000-000000000001"
    # The next steps come from the engine's table (lib/engine/next-step.c); each runs as printed:
    # --yes where apply would ask, no terminal assumed (issue 31).
    for state, outcome, armed, running, want_exit, want_next in [
            ("idle", None, None, OLD_K, 0, "kswap plan"),
            ("verified", None, None, OLD_K, 4, "kswap apply --yes"),
            ("verified", None, None, NEW_K, 3, "kswap rollback"),
            # armed in this boot, but GRUB holds no one-shot (this journal is made up): the
            # next boots are not what kswap set up, rollback is the way back (a real arming
            # boot: test/test-state-machine.py, next-steps)
            ("armed", None, boot_id, OLD_K, 3, "kswap rollback"),
            ("armed", None, other, NEW_K, 4, "kswap status --wait"),
            # back on the old kernel and nobody judged the trial yet: accept does
            ("armed", None, other, OLD_K, 4, "kswap accept"),
            # trial-ok but the old kernel runs (the root's): restarted before the pin, a power
            # cut (test/vm/powercut.py); 'kswap pin' would refuse here
            ("trial-booted", "trial-ok", other, OLD_K, 3, "kswap apply --yes"),
            # pinned, but GRUB starts the old kernel (made up here): pin it again
            ("pinned", "trial-ok", other, OLD_K, 3, f"kswap pin {NEW_K} --force"),
            ("failed", None, None, OLD_K, 3, "kswap rollback"),
            ("rolled-back", "health-failed", other, OLD_K, 3, "kswap status --ack"),
            ("rolled-back", "trial-hung", other, OLD_K, 3, "kswap status --ack"),
            ("rolled-back", "fell-back", other, NEW_K, 3, "kswap rollback --reboot"),
            ("rolled-back", None, None, OLD_K, 0, None)]:
        j = {"version": 1, "state": state, "outcome": outcome, "old_kernel": OLD_K,
             "new_kernel": NEW_K, "reason": "why" if state in ("failed", "rolled-back") else None}
        if armed:
            j.update(armed_boot_id=armed, armed_btime=5, armed_at="2026-01-01T00:00:00Z")
        with open(os.path.join(r, "var/lib/kswap/state.json"), "w") as f:
            json.dump({k: v for k, v in j.items() if v is not None}, f)
        with open(os.path.join(r, "proc/sys/kernel/osrelease"), "w") as f:
            f.write(running + "\n")
        what = (f"status in {state}/{outcome}/{'arming boot' if armed == boot_id else 'later'}"
                f"/{running}")
        p = run("--root", r, "status")
        check(p.returncode == want_exit, f"{what}: exit {want_exit}", p)
        printed = want_next and want_next.replace("kswap ", f"kswap --root {r} ", 1)
        check(re.search(r"^next: " + (re.escape(printed) + r"  \(" if want_next else
                                      "nothing to do"), p.stdout, re.M),
              f"{what}: next: {printed}", p)
        d = one_document(["--root", r, "status", "--json"], want_exit, what=what + " --json")
        check(d and d.get("next") == printed and d.get("next_reason"), f"{what}: JSON next", d)
    with open(os.path.join(r, "proc/sys/kernel/osrelease"), "w") as f:
        f.write(OLD_K + "\n")
    # --wait on the boot that armed: at once, exit 4.
    with open(os.path.join(r, "var/lib/kswap/state.json"), "w") as f:
        json.dump({"version": 1, "state": "armed", "old_kernel": OLD_K, "new_kernel": NEW_K,
                   "armed_boot_id": boot_id, "armed_btime": 5,
                   "armed_at": "2026-01-01T00:00:00Z"}, f)
    import time
    t0 = time.time()
    p = run("--root", r, "status", "--wait", "--timeout", "5")
    check(p.returncode == 4 and time.time() - t0 < 3 and "reboot to start the trial" in p.stderr,
          "status --wait on the arming boot: exit 4 at once", p)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("cli:", "ok" if not failed else f"{failed} failed")
sys.exit(1 if failed else 0)
