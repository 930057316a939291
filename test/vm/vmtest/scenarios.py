# SPDX-License-Identifier: GPL-2.0-or-later
"""The scenarios: the registry of the family modules (sc_*.py), the other platforms' variants,
and the assertions every scenario shares (the kernels boot after boot, kswap status agreeing
with what booted, the last boot reaching the end of its plan)."""
from . import platforms, sc_effect, sc_install, sc_repo, sc_stuck, sc_swap, sc_vpn
from .boot import journal
from .common import Ctx, expect

FAMILIES = (sc_swap, sc_stuck, sc_repo, sc_install, sc_vpn, sc_effect)
SCENARIOS = {}
for _fam in FAMILIES:
    SCENARIOS.update(_fam.SCENARIOS)

# Other platforms: name -> (suite, firmware, the bookworm BIOS scenario it repeats). Each asserts
# what its twin does, with the platform's OLD and NEW.
VARIANTS = {
    "trixie-happy": ("trixie", "bios", "happy"),
    "trixie-panic": ("trixie", "bios", "panic"),
    "uefi-happy": ("bookworm", "uefi", "happy"),
    "uefi-panic": ("bookworm", "uefi", "panic"),
    "trixie-vpn-healthy": ("trixie", "bios", "vpn-healthy"),
}
ALL = list(SCENARIOS) + list(VARIANTS)


def resolve(name):
    """(platform, twin, scenario, GRUB's kernels, userspace kernels) of a scenario: the kernel
    names made the platform's releases."""
    suite, firmware, twin = VARIANTS.get(name, ("bookworm", "bios", name))
    pf = platforms.Platform(suite, firmware)
    sc = SCENARIOS[twin]
    rel = {"OLD": pf.old, "NEW": pf.new, "REPO_OLD": platforms.REPO_OLD}
    return (pf, twin, sc, None if sc.grub is None else [rel[k] for k in sc.grub],
            None if sc.user is None else [rel[k] for k in sc.user])


def context(name, text, grub, boots, seen=None):
    pf, twin, sc, want_grub, want_user = resolve(name)
    return Ctx(pf, twin, sc, want_grub, want_user, text, grub, boots, seen)


def check_scenario(ctx):
    """The shared assertions, then the family's (ctx.sc.check)."""
    sc, grub, boots = ctx.sc, ctx.grub, ctx.boots
    want_grub, want_user = ctx.want_grub, ctx.want_user
    if sc.user_fn:
        want_user = ctx.want_user = sc.user_fn(ctx, want_user)
    if want_grub is not None:
        expect(grub == want_grub, f"GRUB started {grub}, expected {want_grub}")
    if want_user is not None:
        got_user = [boots.get(i, {}).get("kernel") for i in range(1, len(want_user) + 1)]
        expect(got_user == want_user, f"userspace boots ran {got_user}, expected {want_user}")
    # kswap status agrees with what booted: its running kernel is the boot's, and where the
    # boot's plan leaves GRUB alone its forecast names the kernel GRUB starts next.
    steps = dict(ln.split("=", 1) for ln in sc.plan.splitlines())
    for n, b in sorted(boots.items()):
        st = b.get("status")
        if not st:
            continue
        expect(st.get("running") == b.get("kernel"),
               f"boot {n}: status says running {st.get('running')}, uname {b.get('kernel')}")
        # a boot without a line of its own runs the plan of "*" (driver.sh)
        step = steps.get(str(n), steps.get("*", "poweroff"))
        quiet = not set(step.split(",")) - {"reboot", "poweroff", "wait",
                                                                       "repoinfo"}
        if want_grub == want_user and quiet and n < len(grub):
            fc = (st.get("grub") or {}).get("forecast") or [{}]
            expect(fc[0].get("kernel") == grub[n],
                   f"boot {n}: status forecast {fc[0].get('kernel')}, GRUB then started {grub[n]}")
    n_last = len(want_user) if want_user is not None else max(boots, default=0)
    ctx.last = last = boots.get(n_last, {})
    expect("done" in last, f"boot {n_last} did not reach the end of its plan")
    ctx.state, ctx.outcome = journal(last.get("status"))
    if sc.check:
        sc.check(ctx)


def check_all(ctx):
    """Everything a scenario asserts on its serial log."""
    platforms.check_platform(ctx.pf, ctx.text, ctx.grub)
    check_scenario(ctx)
    if ctx.sc.serial:
        ctx.sc.serial(ctx)
