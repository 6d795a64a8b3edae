"""The controller at fleet scale (see README "Performance"): the report, the inventory's groups and the preflight on
synthetic inventories whose cached facts are copies of a real sandbox node's.

One sandbox node (simulated 8x A100 with NVSwitch, the NVML simulator as its driver) runs playbooks/facts.yml once; its
jsonfile cache entry is copied to every synthetic host (none reachable: none is contacted). For each size, alternating
rounds, the median wall time and the peak memory (max RSS of the ansible process) of:
  report     a play on the controller running gpufleet.stack.fleet_report over every host (the cached facts), into
             an empty directory each time (an unchanged report is not rewritten: that would skip the rendering);
  inventory  ansible-inventory --graph with the shipped gpu_groups config (groups from the cached facts; --list would
             also print every host's 17 KiB of facts);
  preflight  site.yml --tags preflight (inventory_check over every host's variables, the matrix per distinct stack).
Goals: cost per host flat from 100 to 5,000 hosts; report plus inventory for 5,000 hosts within 10 s.

    .venv/bin/python benchmarks/scale.py [--hosts 100 1000 5000] [--rounds 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
STACK = {"driver": "570.133.20", "driver_flavor": "open", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"}
REPORT_PLAY = [
    {
        "name": "The fleet report over every host's cached facts",
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [
            {
                "name": "Write the report",
                "gpufleet.stack.fleet_report": {"hosts": "{{ groups['gpu'] }}", "dest": "{{ report_dir }}"},
            }
        ],
    }
]


def env(cache):
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_CACHE_PLUGIN="jsonfile",
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(cache),
        PATH=f"{BIN}:{os.environ['PATH']}",
    )


def run(argv, environment):
    """(wall seconds, peak RSS in MiB) of one command; fails loudly."""
    started = time.perf_counter()
    proc = subprocess.Popen(  # our own toolchain, arguments built here
        [str(a) for a in argv], cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{out.decode()[-4000:]}")
    return wall, usage.ru_maxrss / 1024


def real_facts(work):
    """facts.yml on one sandbox node: its cache entry (JSON) as a sandbox node really has it, and the entry's file
    name prefix (ansible-core 2.19's jsonfile names it s1_<host>)."""
    inventory, cache = work / "node.yml", work / "node-facts"
    subprocess.run(
        [FLEET, "up", "--name", "scale-node", "--fleet", "scale", "--profile", "a100-sxm4-40gb-x8-nvswitch",
         "--inventory", inventory],
        check=True, capture_output=True,
    )  # fmt: skip
    run([BIN / "ansible-playbook", "-i", inventory, ROOT / "playbooks/facts.yml", "-e",
         f"gpufleet_report_dir={work / 'node-report'}"], env(cache))  # fmt: skip
    (entry,) = cache.iterdir()
    return entry.read_text(), entry.name[: -len("scale-node")]


def fleet(work, count, facts, prefix):
    """An inventory of `count` hosts in group gpu (with the shipped gpu_groups config) and their cached facts."""
    base = work / f"fleet-{count}"
    inventory, cache = base / "inventory", base / "facts"
    inventory.mkdir(parents=True)
    cache.mkdir()
    hosts = {f"gpu-{i:05}": {"ansible_host": "192.0.2.1"} for i in range(count)}
    groups = {"gpu": {"hosts": hosts, "vars": {"gpufleet_stack": STACK}}}
    (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": groups}}))
    shutil.copy(ROOT / "inventories/sandbox/zz-gpufleet.groups.yml", inventory)
    for name in hosts:
        (cache / f"{prefix}{name}").write_text(facts)
    (base / "report.yml").write_text(yaml.safe_dump(REPORT_PLAY))
    return base


def measure(base, what):
    inventory, environment = base / "inventory", env(base / "facts")
    if what == "report":
        shutil.rmtree(base / "report", ignore_errors=True)
        return run([BIN / "ansible-playbook", "-i", inventory, base / "report.yml", "-e",
                    f"report_dir={base / 'report'}"], environment)  # fmt: skip
    if what == "inventory":
        return run([BIN / "ansible-inventory", "-i", inventory, "--graph", "--output", base / "inventory.txt"],
                   environment)  # fmt: skip
    return run([BIN / "ansible-playbook", "-i", inventory, ROOT / "site.yml", "--tags", "preflight"], environment)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the sandbox node and the synthetic fleets")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpufleet-scale-"))
    try:
        facts, prefix = real_facts(work)
        print(f"facts of one sandbox node: {len(facts) / 1024:.0f} KiB per host in the cache", flush=True)
        bases = {count: fleet(work, count, facts, prefix) for count in args.hosts}
        results = {(count, what): [] for count in args.hosts for what in ("report", "inventory", "preflight")}
        for _round in range(args.rounds):
            for count in args.hosts:
                for what in ("report", "inventory", "preflight"):
                    results[(count, what)].append(measure(bases[count], what))
        rows = json.loads((bases[args.hosts[0]] / "report" / "fleet-report.json").read_text())["rows"]
        assert len(rows) == args.hosts[0], "the report has a row per host"
        graph = (bases[args.hosts[0]] / "inventory.txt").read_text()
        assert "@gpu_model_a100_sxm4_40gb" in graph, "the groups were made from the cached facts"
        print(f"{args.rounds} rounds, alternating; median wall, max RSS; per host = wall / hosts")
        print(f"{'hosts':>6}  {'what':<10} {'wall':>8} {'per host':>10} {'max RSS':>9}")
        for count in args.hosts:
            for what in ("report", "inventory", "preflight"):
                walls = [r[0] for r in results[(count, what)]]
                wall, rss = statistics.median(walls), max(r[1] for r in results[(count, what)])
                print(f"{count:>6}  {what:<10} {wall:>7.1f}s {wall / count * 1000:>8.2f}ms {rss:>7.0f}MiB")
        big = max(args.hosts)
        both = sum(statistics.median(r[0] for r in results[(big, w)]) for w in ("report", "inventory"))
        print(f"report + inventory at {big} hosts: {both:.1f} s (goal <= 10 s)", flush=True)
    finally:
        if not args.keep:
            subprocess.run([FLEET, "down", "--fleet", "scale", "--inventory", "none"], capture_output=True, check=False)
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
