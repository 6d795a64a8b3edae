"""Facts benchmarks, measured side by side in one run on the sandbox fleet (see README "Performance").

1. gpu_facts vs ansible.builtin.setup on one 8-GPU node (simulated H100 x8), alternating, median task wall time
   per module as the callback measures it (goal: gpu_facts <= 0.5x setup); and a host's facts in one round trip
   (gpu_facts stack=true) vs ansible.builtin.ping, the cost of any round trip (goal: <= 1.3x ping).
2. playbooks/facts.yml on 32 nodes vs on 1 node, alternating whole runs, median wall time (goal: <= 5x).
3. The same nodes reached over SSH as a real fleet is (an unprivileged user, sudo, pipelining, host keys checked;
   sandbox/node-ssh.sh) beside docker exec as root, alternating: ping, gpu_facts and setup per task on the 8-GPU
   node, and facts.yml on the 32 nodes.

    .venv/bin/python benchmarks/facts.py [--rounds 5] [--nodes 32] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FLEET = ROOT / "sandbox" / "fleet"


def sh(argv, **kw):
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, **kw)


def up(fleet, count, prefix, profile, inventory):
    sh([FLEET, "up", count, "--name-prefix", prefix, "--fleet", fleet, "--profile", profile, "--inventory", inventory])


def env(**extra):
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH=f"{BIN}:{os.environ['PATH']}", **extra)


def module_times(inventory, rounds, limit):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as times:
        sh(
            [
                BIN / "ansible-playbook",
                "-i",
                inventory,
                ROOT / "benchmarks" / "gpu_facts_vs_setup.yml",
                "--limit",
                limit,
                "-e",
                f"gpufleet_bench_rounds={rounds}",
            ],
            env=env(
                GPUFLEET_TASK_TIMES=times.name,
                ANSIBLE_CALLBACKS_ENABLED="task_timer",
                ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "benchmarks" / "callback_plugins"),
            ),
        )
        records = [json.loads(line) for line in Path(times.name).read_text().splitlines()]
    by_task = {}
    for rec in records:
        by_task.setdefault(rec["task"], []).append(rec["seconds"])
    return {name[len("Bench ") :]: times for name, times in by_task.items() if name.startswith("Bench ")}


def module_process_times(inventory, rounds, node):
    """Wall time of the module process alone on the node (AnsiballZ payload run by python3 there, no controller)."""
    payloads = {}
    for module in ("ansible.builtin.setup", "gpufleet.stack.gpu_facts"):
        before = set(
            sh(["docker", "exec", node, "sh", "-c", "ls -d /root/.ansible/tmp/*/ 2>/dev/null || true"]).stdout.split()
        )
        sh(
            [BIN / "ansible", node, "-i", inventory, "-m", module],
            env=env(ANSIBLE_KEEP_REMOTE_FILES="1", ANSIBLE_PIPELINING="0"),
        )
        after = set(sh(["docker", "exec", node, "sh", "-c", "ls -d /root/.ansible/tmp/*/"]).stdout.split())
        (new,) = after - before
        payloads[module] = f"{new}AnsiballZ_{module.rsplit('.', 1)[1]}.py"
    times = {m: [] for m in payloads}
    for _round in range(rounds):
        for module, payload in payloads.items():
            started = time.monotonic()
            sh(["docker", "exec", node, "python3", payload])
            times[module].append(time.monotonic() - started)
    return times["ansible.builtin.setup"], times["gpufleet.stack.gpu_facts"]


def playbook_time(inventory, limit, cache_dir):
    """Wall time of one facts.yml run, and the controller CPU it used (the nodes' CPU is not in it)."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    sh(
        [
            BIN / "ansible-playbook",
            "-i",
            inventory,
            ROOT / "playbooks" / "facts.yml",
            "--limit",
            limit,
            "-e",
            f"gpufleet_report_dir={cache_dir}/report",
        ],
        env=env(ANSIBLE_CACHE_PLUGIN_CONNECTION=f"{cache_dir}/facts"),
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)


def connection_figures(inventories, rounds, node, limit, work):
    """Per connection: the median task times (ping, gpu_facts, setup) on NODE and the median facts.yml wall time on
    LIMIT, the connections alternating round by round."""
    tasks = {c: {} for c in inventories}
    runs = {c: [] for c in inventories}
    for _round in range(rounds):
        for connection, inventory in inventories.items():
            for task, times in module_times(inventory, 1, node).items():
                tasks[connection].setdefault(task, []).extend(times)
            runs[connection].append(playbook_time(inventory, limit, work)[0])
    return {
        c: {**{t: statistics.median(v) for t, v in tasks[c].items()}, "facts.yml": statistics.median(runs[c])}
        for c in inventories
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--keep", action="store_true", help="leave the benchmark nodes running")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpufleet-bench-"))
    inventory = work / "hosts.yml"
    try:
        up("bench", args.nodes, "bench", "a100-sxm4-40gb-x8-nvswitch", inventory)
        sh(
            [
                FLEET,
                "up",
                "--name",
                "bench-h100",
                "--fleet",
                "bench",
                "--profile",
                "h100-sxm5-80gb-x8",
                "--inventory",
                inventory,
            ]
        )
        times = module_times(inventory, args.rounds, "bench-h100")
        setup_s, gpu_s, stack_s = times["setup"], times["gpu_facts"], times["stack_facts"]
        ping_s, both_s = times["ping"], times["gpu_facts with stack"]
        p_setup, p_gpu = module_process_times(inventory, args.rounds, "bench-h100")
        one, many = [], []
        for _round in range(args.rounds):
            one.append(playbook_time(inventory, "bench-1", work))
            many.append(playbook_time(inventory, "bench-*:!bench-h100", work))
        m_setup, m_gpu, m_stack = (statistics.median(x) for x in (setup_s, gpu_s, stack_s))
        m_one, m_many = (statistics.median(run[0] for run in runs) for runs in (one, many))
        c_one, c_many = (statistics.median(run[1] for run in runs) for runs in (one, many))
        print(f"gpu_facts vs setup on 1 node, 8x H100 (simulated), {len(gpu_s)} runs each, alternating:")
        print(f"  setup     median {m_setup:.3f} s  (min {min(setup_s):.3f})")
        print(f"  gpu_facts median {m_gpu:.3f} s  (min {min(gpu_s):.3f})")
        print(f"  stack_facts median {m_stack:.3f} s  (min {min(stack_s):.3f})")
        print(f"  ratio gpu_facts/setup = {m_gpu / m_setup:.2f}x  (goal <= 0.5x)")
        m_ping, m_both = statistics.median(ping_s), statistics.median(both_s)
        print(f"a host's facts in one round trip vs ping, {len(ping_s)} runs each, alternating:")
        print(f"  ping                      median {m_ping:.3f} s")
        print(f"  gpu_facts stack=true      median {m_both:.3f} s  (two tasks before: {m_gpu + m_stack:.3f} s)")
        print(f"  ratio one round trip / ping = {m_both / m_ping:.2f}x  (goal <= 1.3x)")
        p_setup, p_gpu = statistics.median(p_setup), statistics.median(p_gpu)
        print(
            f"  module process alone on the node (docker exec python3 AnsiballZ_*.py): setup {p_setup:.3f} s, "
            f"gpu_facts {p_gpu:.3f} s, ratio {p_gpu / p_setup:.2f}x"
        )
        print(f"playbooks/facts.yml, {args.rounds} runs each, alternating:")
        print(f"  1 node    median {m_one:.1f} s wall, controller CPU {c_one:.1f} s")
        print(f"  {args.nodes} nodes  median {m_many:.1f} s wall, controller CPU {c_many:.1f} s")
        print(f"  ratio {args.nodes}/1 = {m_many / m_one:.2f}x wall (goal <= 5x), {c_many / c_one:.2f}x controller CPU")
        ssh_inventory = work / "ssh.yml"
        sh([FLEET, "up", "--name", "bench-h100", "--fleet", "bench", "--profile", "h100-sxm5-80gb-x8",
            "--inventory", ssh_inventory, "--connection", "ssh"])  # fmt: skip
        figures = connection_figures(
            {"docker exec": inventory, "ssh": ssh_inventory}, args.rounds, "bench-h100", "bench-*:!bench-h100", work
        )
        print(f"SSH (user fleet, sudo, pipelining) beside docker exec (root), {args.rounds} rounds, alternating:")
        for what in ("ping", "gpu_facts", "setup", "facts.yml"):
            dock, ssh = figures["docker exec"][what], figures["ssh"][what]
            where = f"{args.nodes} nodes" if what == "facts.yml" else "1 node"
            print(f"  {what:10} {where:9} docker exec {dock:.3f} s, ssh {ssh:.3f} s, ssh/docker {ssh / dock:.2f}x")
    finally:
        if not args.keep:
            sh([FLEET, "down", "--fleet", "bench", "--inventory", "none"])


if __name__ == "__main__":
    main()
