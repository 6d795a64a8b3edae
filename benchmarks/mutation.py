"""Mutation run over the pure module_utils code: how many one-line bugs the unit tests catch.

Usage: .venv/bin/python benchmarks/mutation.py [MODULE ...]  (make mutation; MODULES="_common/xid.py ..." for some)

mutmut (PyPI, 2.5.1: it mutates a file in place and runs a command) changes one operator, constant, comparison or
keyword at a time in each module below and runs that module's unit tests; a mutant the tests pass is one a real bug
of that shape would slip through. The run works on a copy of the tracked tree under .cache/mutation/tree, so an
interrupted run never leaves a mutated file in the checkout and a scenario may run beside it. Prints one row per
module (mutants, killed, survived, kill rate) and the total; the surviving mutants, as diffs, go to
.cache/mutation/survivors.txt. Not part of CI: a full run takes tens of minutes on two cores.
"""

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# GPUFLEET_MUTATION_DIR: another work directory, so that two runs (two modules) can go side by side on two cores.
WORK = Path(os.environ.get("GPUFLEET_MUTATION_DIR") or ROOT / ".cache" / "mutation")
TREE = WORK / "tree"
MUTMUT = "mutmut==2.5.1"
UTILS = "plugins/module_utils"
MUTANT_TIMEOUT = 300  # seconds for one mutant's tests; a module's tests take 1-15 s (_node/apt/plan's the longest)

# The tests that drive the compatibility engine (engine.evaluate over real matrix rows and stacks).
COMPAT = [
    "tests/unit/stack/test_rules.py",
    "tests/unit/stack/test_rules_gpu.py",
    "tests/unit/stack/test_rules_gpu_edges.py",
    "tests/unit/stack/test_rules_fw_edges.py",
    "tests/unit/stack/test_verdicts.py",
    "tests/unit/stack/test_shipped_stacks.py",
]
# Each pure module and the unit tests that are its specification. Every module here does no I/O of its own (or
# reads only a root it is given): what its tests do not pin, a mutant shows.
TARGETS = {
    "_common/versions.py": ["tests/unit/stack/test_versions.py"],
    "_common/xid.py": ["tests/unit/gpu_facts/test_xid.py", "tests/unit/gpu_facts/test_health.py"],
    "_node/gpu/findings.py": ["tests/unit/gpu_facts/test_findings.py", "tests/unit/gpu_facts/test_health.py"],
    "_node/kernels.py": ["tests/unit/kernels/test_kernels.py"],
    "_node/slurm/scontrol.py": ["tests/unit/slurm/test_slurm.py"],
    "_node/health/loop.py": ["tests/unit/monitoring/test_health_loop.py"],
    "_node/stack/packages.py": ["tests/unit/stack/test_packages.py", "tests/unit/stack/test_parse.py"],
    "_node/fabric/devices.py": ["tests/unit/fabric/test_fabric.py"],
    "_node/fabric/nccl.py": ["tests/unit/fabric/test_nccl_net.py"],
    "_node/fabric/multinode.py": ["tests/unit/validate/test_multinode.py"],
    "_node/gate.py": ["tests/unit/gate/test_gate_details.py", "tests/unit/gate/test_rules.py"],
    "_node/validate.py": ["tests/unit/validate/test_validate.py", "tests/unit/validate/test_validate_edges.py"],
    "_node/limits.py": ["tests/unit/slurm/test_limits.py"],
    "_node/slurm/conf.py": ["tests/unit/slurm/test_slurm_conf.py"],
    "_node/slurm/gres.py": ["tests/unit/slurm/test_rules.py"],
    "_controller/driver_set.py": [
        "tests/unit/apt_plan/test_driver_set.py",
        "tests/unit/apt_plan/test_driver_set_edges.py",
    ],
    "_controller/driver_host.py": ["tests/unit/apt_plan/test_driver_host.py"],
    "_controller/rollout.py": ["tests/unit/upgrade/test_rollout.py"],
    "_controller/upgrade.py": ["tests/unit/upgrade/test_failure.py"],
    "_controller/cuda_set.py": ["tests/unit/apt_plan/test_cuda_set.py", "tests/unit/apt_plan/test_cuda_set_edges.py"],
    "_controller/dcgm_set.py": ["tests/unit/apt_plan/test_dcgm_set.py", "tests/unit/apt_plan/test_dcgm_set_edges.py"],
    "_controller/wheel.py": [
        "tests/unit/python_wheel/test_wheel.py",
        "tests/unit/python_wheel/test_wheel_edges.py",
        "tests/unit/horovod/test_build_key.py",
    ],
    "_controller/inventory.py": [
        "tests/unit/inventory/test_schema.py",
        "tests/unit/inventory/test_domains.py",
        "tests/unit/inventory/test_inventory_edges.py",
    ],
    "_common/schema.py": ["tests/unit/inventory/test_schema.py", "tests/unit/inventory/test_domains.py"],
    "_node/apt/plan.py": [
        "tests/unit/apt_plan/test_plan.py",
        "tests/unit/apt_plan/test_lock.py",
        "tests/unit/apt_plan/test_dcgm_set.py",
    ],
    # Not tests/unit/mirror/test_packages.py: it builds the signed test mirror first (minutes per mutant).
    "_node/stack/parse.py": ["tests/unit/stack/test_parse.py", "tests/unit/stack/test_parse_edges.py"],
    # The compatibility engine: the rules are reached through engine.evaluate, so their tests are the engine's.
    "_compat/matrix.py": [
        "tests/unit/stack/test_matrix.py",
        "tests/unit/stack/test_matrix_edges.py",
        "tests/unit/stack/test_rules.py",
        "tests/unit/stack/test_rules_gpu.py",
        "tests/unit/stack/test_rules_gpu_edges.py",
        "tests/unit/stack/test_rules_fw_edges.py",
        "tests/unit/stack/test_verdicts.py",
        "tests/unit/stack/test_shipped_stacks.py",
    ],
    "_compat/inputs.py": [*COMPAT, "tests/unit/stack/test_inputs_edges.py"],
    "_compat/engine.py": [*COMPAT, "tests/unit/stack/test_engine_edges.py"],
    "_compat/rules.py": COMPAT,
    "_compat/rules_fw.py": COMPAT,
    "_compat/rules_gpu.py": COMPAT,
}
DETECTED = ("ok_killed", "bad_timeout", "ok_suspicious")


def copy_tree():
    """The tracked files (and the untracked ones git does not ignore) into TREE, afresh."""
    shutil.rmtree(TREE, ignore_errors=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        src, dst = ROOT / os.fsdecode(name), TREE / os.fsdecode(name)
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree, not yet in the index
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)


def mutmut():
    """The mutmut command, installed beside the toolchain on first use (not in requirements: CI never runs it)."""
    tool = ROOT / ".venv" / "bin" / "mutmut"
    if not tool.exists():
        subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "pip", "install", "-q", MUTMUT], check=True)
    return str(tool)


def run_one(tool, module, tests):
    pytest = f"{ROOT / '.venv' / 'bin' / 'python'} -m pytest -x -q -p no:cacheprovider -o addopts= " + " ".join(tests)
    # mutmut 2 counts only exit status 1 as tests failing; a mutant that breaks the tests' collection (a module-level
    # value the tests compute on import) makes pytest exit 2, which mutmut would count as a survivor.
    # A mutant can make a test wait forever (a lock's wait loop that never ends): `timeout` stops it, and a mutant
    # that hangs the tests counts as caught, as mutmut counts its own timeouts.
    runner = f"sh -c 'timeout --kill-after=10 {MUTANT_TIMEOUT} {pytest} || exit 1'"
    started = time.monotonic()
    subprocess.run(
        [tool, "run", "--paths-to-mutate", f"{UTILS}/{module}", "--runner", runner, "--no-progress", "--CI"],
        cwd=TREE,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.monotonic() - started


def counts(module):
    """{status: n} of the module's mutants in mutmut's cache."""
    with sqlite3.connect(TREE / ".mutmut-cache") as db:
        rows = db.execute(
            "SELECT Mutant.status, COUNT(*) FROM Mutant JOIN Line ON Mutant.line = Line.id "
            "JOIN SourceFile ON Line.sourcefile = SourceFile.id WHERE SourceFile.filename = ? GROUP BY Mutant.status",
            (f"{UTILS}/{module}",),
        ).fetchall()
    return dict(rows)


def survivors(tool):
    """Each surviving mutant as mutmut shows it (the diff)."""
    with sqlite3.connect(TREE / ".mutmut-cache") as db:
        ids = [row[0] for row in db.execute("SELECT id FROM Mutant WHERE status = 'bad_survived' ORDER BY id")]
    shown = [
        subprocess.run([tool, "show", str(i)], cwd=TREE, capture_output=True, text=True, check=True).stdout for i in ids
    ]
    return "\n".join(shown)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"modules under {UTILS} (default: all of {len(TARGETS)})")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in TARGETS]
    if unknown:
        parser.error(f"not a target: {', '.join(unknown)}; targets: {', '.join(TARGETS)}")
    tool = mutmut()
    copy_tree()
    print(f"{'module':32} {'mutants':>7} {'killed':>7} {'survived':>8} {'kill rate':>9} {'seconds':>8}")
    total = {"mutants": 0, "killed": 0}
    for module in args.modules or TARGETS:
        seconds = run_one(tool, module, TARGETS[module])
        found = counts(module)
        mutants = sum(found.values())
        killed = sum(found.get(s, 0) for s in DETECTED)
        survived = found.get("bad_survived", 0)
        total["mutants"] += mutants
        total["killed"] += killed
        rate = 100.0 * killed / mutants if mutants else 0.0
        print(f"{module:32} {mutants:7} {killed:7} {survived:8} {rate:8.1f}% {seconds:8.0f}", flush=True)
    rate = 100.0 * total["killed"] / total["mutants"] if total["mutants"] else 0.0
    print(f"{'total':32} {total['mutants']:7} {total['killed']:7} {total['mutants'] - total['killed']:8} {rate:8.1f}%")
    (WORK / "survivors.txt").write_text(survivors(tool))
    print(f"surviving mutants: {WORK / 'survivors.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
