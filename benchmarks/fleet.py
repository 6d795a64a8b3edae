"""Fleet playbook benchmarks on the sandbox (see README "Performance"), measured side by side in one run.

1. site.yml on N fresh nodes (simulated 8x A100, driver from the offline mirror), then again on the converged
   nodes: wall time of each, tasks run and changed (goal: the second run changes nothing and takes <= 25% of
   the first); and the floor, a playbook of the converged run's shape (its host-side runs as pings, its other tasks
   as set_facts) on the same nodes: Ansible's fixed cost, below which no module change can take the run.
2. playbooks/upgrade.yml: one host alone (--limit) vs the whole fleet in B batches, alternating, each followed by
   an untimed rollback so every timed run does the same work; median wall times; ratio fleet / (B x one host)
   (goal <= 1.2x). --no-upgrade skips it.
3. With --compare-ref REF (a commit, e.g. HEAD~3): site.yml on the converged nodes from a checkout of REF and from
   this one, alternating, so a change's effect on the converged run is measured side by side.

    .venv/bin/python benchmarks/fleet.py [--nodes 4] [--serial 2] [--rounds 3] [--no-upgrade]
                                         [--compare-ref REF] [--keep] [--tasks]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FLEET = ROOT / "sandbox" / "fleet"
MIRROR = ROOT / "sandbox" / "mirror"
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)


def sh(argv, **kw):
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, **kw)


def extra_vars(work):
    """The sandbox inventory's variables with the mirror key's fingerprint resolved (the bench inventory lives in a
    temporary directory, where the sandbox group_vars' relative lookup would not find the mirror)."""
    data = yaml.safe_load((ROOT / "inventories/sandbox/group_vars/all.yml").read_text())
    data["gpufleet_nvidia_repo_key"]["fingerprint"] = (ROOT / ".cache/mirror/www/keys/fingerprint").read_text().strip()
    path = work / "vars.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def playbook(inventory, varfiles, playbook_path, *args, root=ROOT, extra_env=None):
    """Run a playbook of the checkout at root; return wall seconds and per-host recap
    {host: (ok, changed, failed, skipped)}."""
    env = {
        "ANSIBLE_CONFIG": str(root / "ansible.cfg"),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(inventory.parent / "facts"),  # not the checkout's fact cache
        "PATH": f"{BIN}:/usr/bin:/bin",
        "ANSIBLE_NOCOLOR": "1",
        **(extra_env or {}),
    }
    argv = [BIN / "ansible-playbook", "-i", inventory, playbook_path, *args]
    for varfile in varfiles:
        argv += ["-e", f"@{varfile}"]
    started = time.monotonic()
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, env=env, cwd=root)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{playbook_path} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}")
    # The nodes only: the preflight's row for localhost (one delegated task) is no host of the fleet.
    recap = {
        m[0]: (int(m[1]), int(m[2]), int(m[4]), int(m[5])) for m in RECAP.findall(proc.stdout) if m[0] != "localhost"
    }
    return wall, recap


def totals(recap):
    """(changed in all, most tasks run or skipped by one host) of a run's recap: the goal is per host, and the first
    host of a play also walks its run_once tasks."""
    return sum(v[1] for v in recap.values()), max(v[0] + v[3] for v in recap.values())


# Actions that run on the controller whatever the host: everything else is a module shipped to and run on the host
# (stack_assert without versions: runs stack_facts there; python_wheel: config_files).
CONTROLLER_ACTIONS = {
    "set_fact", "assert", "debug", "fail", "meta", "include_role", "import_role", "include_tasks", "import_tasks",
    "include_vars", "fleet_report", "add_host", "group_by", "validate_argument_spec",
    "inventory_check",  # an action plugin that reads variables and the schema on the controller
}  # fmt: skip


def ran_on_host(row):
    """A task_timer row of a task that ran (not skipped) as a module on the host itself. stack_assert runs stack_facts
    on the host unless it is given the versions or the installed facts (then it judges on the controller)."""
    action = row.get("action", "").rsplit(".", 1)[-1]
    judged_here = action == "stack_assert" and {"versions", "installed"} & set(row.get("args", []))
    return (
        not row.get("delegated")
        and action not in CONTROLLER_ACTIONS
        and not judged_here
        and row["status"] in ("ok", "failed")
    )


def host_side_runs(times_file):
    """The most module runs on one host itself: tasks that ran (not skipped), a loop once per item."""
    per_host = {}
    for line in Path(times_file).read_text().splitlines():
        row = json.loads(line)
        per_host[row["host"]] = per_host.get(row["host"], 0) + (row.get("runs", 1) if ran_on_host(row) else 0)
    return max(per_host.values()) if per_host else 0


def print_host_side(times_file):
    """The converged run's host-side module runs of one host, slowest first: where a converged run's time goes."""
    rows = [json.loads(line) for line in Path(times_file).read_text().splitlines()]
    host = min(r["host"] for r in rows)
    mine = [r for r in rows if r["host"] == host and r["status"] in ("ok", "failed")]
    on_host = [r for r in mine if ran_on_host(r)]
    skipped = [r for r in rows if r["host"] == host and r["status"] == "skipped"]
    print(f"  {host}: {len(skipped)} tasks skipped:")
    for r in skipped:
        print(f"    {r['task']}")
    print(f"  {host}: {len(mine)} tasks ran, {sum(r['seconds'] for r in mine):.1f} s; on the host:")
    for r in sorted(on_host, key=lambda r: -r["seconds"]):
        runs = f" ({r.get('runs', 1)} runs)" if r.get("runs", 1) != 1 else ""
        print(f"    {r['seconds']:5.2f} s  {r['action']:<34} {r['task']}{runs}")


def site_bench(inventory, base, cache, nodes, show_tasks=False):
    site = ROOT / "site.yml"
    first, recap1 = playbook(inventory, [base], site, *cache)
    times = inventory.parent / "task-times.jsonl"
    timer = {
        "GPUFLEET_TASK_TIMES": str(times),
        "ANSIBLE_CALLBACKS_ENABLED": "task_timer",
        "ANSIBLE_CALLBACK_PLUGINS": str(ROOT / "benchmarks" / "callback_plugins"),
    }
    second, recap2 = playbook(inventory, [base], site, *cache, extra_env=timer)
    _changed1, tasks1 = totals(recap1)
    changed2, tasks2 = totals(recap2)
    print(f"site.yml on {nodes} nodes (simulated 8x A100, offline mirror):")
    print(f"  first converge  {first:6.1f} s, {statistics.median(v[1] for v in recap1.values()):.0f} changed per host")
    print(
        f"  second run      {second:6.1f} s, {changed2} changed in all, {tasks2:.0f} tasks per host "
        f"(first: {tasks1:.0f})"
    )
    print(f"  host-side module runs per host in the second run: {host_side_runs(times):.0f}  (goal <= 15)")
    print(f"  ratio second/first = {second / first:.2f}  (goal <= 0.25, 0 changed, <= 80 tasks per host)", flush=True)
    floor_bench(inventory, second, host_side_runs(times), tasks2)
    if show_tasks:
        print_host_side(times)


def floor_bench(inventory, converged, runs, tasks):
    """Ansible's own cost of a run of that shape: the converged run's host-side module runs as pings and its other
    tasks as set_facts, on the same nodes: what no change inside the roles' modules can go below."""
    book = inventory.parent / "floor.yml"
    lines = ["    - ansible.builtin.ping:\n"] * int(runs)
    lines += ["    - ansible.builtin.set_fact: {x: 1}\n"] * int(tasks - runs)
    book.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n" + "".join(lines))
    wall, _recap = playbook(inventory, [], book)
    print(
        f"  floor: {int(runs)} pings + {int(tasks - runs)} set_facts on the same nodes {wall:6.1f} s "
        f"= {wall / converged:.2f} of the converged run",
        flush=True,
    )


def compare_bench(inventory, base, cache, ref, rounds):
    """site.yml on converged nodes from a checkout of ref and from this one, alternating."""
    other = Path(tempfile.mkdtemp(prefix="gpufleet-bench-ref-")) / "checkout"
    sh(["git", "-C", ROOT, "worktree", "add", "--detach", other, ref])
    try:
        times = {ref: [], "this checkout": []}
        for _round in range(rounds):
            for name, root in ((ref, other), ("this checkout", ROOT)):
                wall, recap = playbook(inventory, [base], root / "site.yml", *cache, root=root)
                times[name].append(wall)
                changed, tasks = totals(recap)
                print(f"  {name:>14}: {wall:6.1f} s, {changed} changed, {tasks:.0f} tasks per host", flush=True)
        m_ref, m_this = statistics.median(times[ref]), statistics.median(times["this checkout"])
        print(
            f"converged site.yml, {rounds} rounds alternating: {ref} median {m_ref:.1f} s, this checkout {m_this:.1f} s"
        )
        print(f"  ratio this / {ref} = {m_this / m_ref:.2f}", flush=True)
    finally:
        sh(["git", "-C", ROOT, "worktree", "remove", "--force", other])


def upgrade_bench(inventory, base, cache, args):
    upgrade = ROOT / "playbooks" / "upgrade.yml"
    target = ROOT / "sandbox" / "upgrade-target.yml"
    nodes, serial, rounds = args.nodes, args.serial, args.rounds
    batches = -(-nodes // serial)
    one, fleet = [], []
    rollback = ["-e", "gpufleet_upgrade_mode=rollback", "-e", "gpufleet_upgrade_serial=100%"]
    for _round in range(rounds):
        one.append(playbook(inventory, [base, target], upgrade, "--limit", "benchfleet-1", *cache)[0])
        playbook(inventory, [base], upgrade, "--limit", "benchfleet-1", *rollback, *cache)
        fleet.append(playbook(inventory, [base, target], upgrade, "-e", f"gpufleet_upgrade_serial={serial}", *cache)[0])
        playbook(inventory, [base], upgrade, *rollback, *cache)
    m_one, m_fleet = statistics.median(one), statistics.median(fleet)
    print(f"upgrade.yml 570.133.20 -> 570.172.08, {rounds} rounds alternating (each followed by a rollback):")
    print(f"  one host        median {m_one:6.1f} s  (all: {', '.join(f'{x:.1f}' for x in one)})")
    print(
        f"  {nodes} hosts, {batches} batches of {serial}  median {m_fleet:6.1f} s  "
        f"(all: {', '.join(f'{x:.1f}' for x in fleet)})"
    )
    print(f"  ratio fleet / ({batches} x one host) = {m_fleet / (batches * m_one):.2f}  (goal <= 1.2)", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--serial", type=int, default=2, help="hosts per batch of the fleet upgrade")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-upgrade", action="store_true", help="skip the rolling upgrade measurement")
    p.add_argument("--compare-ref", metavar="REF", help="also time converged site.yml runs of this commit vs REF")
    p.add_argument("--keep", action="store_true", help="leave the benchmark nodes running")
    p.add_argument("--tasks", action="store_true", help="list the converged run's host-side module runs of one host")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpufleet-bench-fleet-"))
    inventory = work / "hosts.yml"
    sh([MIRROR / "build"])
    sh([MIRROR / "serve", "start"])
    base = extra_vars(work)
    cache = ["-e", f"gpufleet_report_dir={work}/report"]
    profile = ["--profile", "a100-sxm4-40gb-x8-nvswitch", "--no-driver"]
    try:
        sh([FLEET, "down", "--fleet", "benchfleet", "--inventory", "none"])
        sh(
            [
                FLEET,
                "up",
                args.nodes,
                "--name-prefix",
                "benchfleet",
                "--fleet",
                "benchfleet",
                *profile,
                "--inventory",
                inventory,
            ]
        )
        site_bench(inventory, base, cache, args.nodes, args.tasks)
        if args.compare_ref:
            compare_bench(inventory, base, cache, args.compare_ref, args.rounds)
        if not args.no_upgrade:
            upgrade_bench(inventory, base, cache, args)
    finally:
        if not args.keep:
            sh([FLEET, "down", "--fleet", "benchfleet", "--inventory", "none"])


if __name__ == "__main__":
    main()
