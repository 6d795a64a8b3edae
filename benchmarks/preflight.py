"""The controller preflight at fleet size, side by side in one run (see README "Performance").

Synthetic inventories of N hosts (none reachable: the preflight contacts none), half in each of two groups with
different desired stacks. Times, alternating rounds, the median wall time of:
  new  playbooks/site.yml's preflight play: one inventory_check task for the whole play (schema + matrix per
       distinct stack), as site.yml runs it;
  old  the preflight before the schema: stack_assert per host, delegated to localhost (matrix only).

    .venv/bin/python benchmarks/preflight.py [--hosts 100 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STACKS = {
    "a": {"driver": "570.133.20", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"},
    "b": {"driver": "580.65.06", "cuda": ["13.0", "12.8"], "cudnn": "9.13.0", "nccl": "2.27.7"},
}
OLD = [
    {
        "name": "Preflight as before the schema: the matrix, per host",
        "hosts": "all",
        "gather_facts": False,
        "any_errors_fatal": True,
        "tasks": [
            {
                "name": "Check gpufleet_stack against the compatibility matrix",
                "gpufleet.stack.stack_assert": {"versions": "{{ gpufleet_stack }}"},
                "delegate_to": "localhost",
            }
        ],
    }
]


def inventory(path, count):
    groups = {
        name: {"hosts": {f"gpu-{name}-{i:05}": {"ansible_host": "192.0.2.1"} for i in range(count // 2)}}
        for name in STACKS
    }
    for name, stack in STACKS.items():
        groups[name]["vars"] = {"gpufleet_stack": stack, "nccl_settings": {"NCCL_DEBUG": "WARN"}}
    path.write_text(yaml.safe_dump({"all": {"children": groups}}))


def timed(argv, env):
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpufleet-preflight-") as tmp:
        work = Path(tmp)
        old = work / "old.yml"
        old.write_text(yaml.safe_dump(OLD))
        new = work / "new.yml"
        # The preflight plays of site.yml as they are, without the plays that contact hosts.
        plays = yaml.safe_load((ROOT / "playbooks/site.yml").read_text())
        for play in plays:
            if "ansible.builtin.import_playbook" in play:
                play["ansible.builtin.import_playbook"] = str(
                    ROOT / "playbooks" / play.pop("ansible.builtin.import_playbook")
                )
        chosen = [play for play in plays if play["name"].startswith(("Check the host", "Preflight"))]
        # A renamed play must not leave this timing an empty playbook: the preflight task has to be in it.
        if "gpufleet.stack.inventory_check" not in yaml.safe_dump(chosen):
            raise SystemExit(
                "benchmarks/preflight.py: no preflight play with inventory_check found in playbooks/site.yml"
            )
        new.write_text(yaml.safe_dump(chosen))
        env = dict(
            os.environ,
            ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
            ANSIBLE_CACHE_PLUGIN="memory",
            PATH=f"{BIN}:{os.environ['PATH']}",
        )
        for count in args.hosts:
            inv = work / f"hosts-{count}.yml"
            inventory(inv, count)
            runs = {"new": [], "old": []}
            for _round in range(args.rounds):
                for name, book in (("new", new), ("old", old)):
                    runs[name].append(timed([BIN / "ansible-playbook", "-i", inv, book], env))
            n, o = statistics.median(runs["new"]), statistics.median(runs["old"])
            line = f"{count:6} hosts: new {n:6.1f} s (schema + matrix, one task)  old {o:6.1f} s (matrix, per host)"
            print(f"{line}  new/old {n / o:.2f}", flush=True)


if __name__ == "__main__":
    main()
