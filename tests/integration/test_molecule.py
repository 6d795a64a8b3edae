"""Every Molecule scenario in molecule/, each a full `molecule test` (converge, idempotence, verify) on sandbox nodes.

`make molecule SCENARIO=name` runs one of them by hand.

The scenarios run side by side in GPUFLEET_MOLECULE_LANES lanes (default: one per two cores, so one on the 2-core
CI machine, where the controller's CPU is what a scenario waits for). They can share the host because each
one's nodes carry its own names and fleet label (sandbox/fleet), and each scenario that listens on 127.0.0.1 (the
nodes use the host's network) has ports of its own, set in its molecule.yml. The offline mirror is built and started
here, once, before any of them, so no two scenarios race to build or serve it. Each scenario's output is kept in
.cache/molecule-logs/; the summary prints how long each one took and in which lane.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))
MIRROR = ROOT / "sandbox" / "mirror"
LOGS = ROOT / ".cache" / "molecule-logs"
# The lane table, written as each scenario ends; tests/conftest.py prints it on the controller.
SUMMARY = LOGS / "summary.txt"
# callback_plugins/assert_count.py: each playbook run's passed assert tasks, so that a verifier checking nothing fails.
CALLBACKS = Path(__file__).with_name("callback_plugins")
# Started first, so that the longest one overlaps all the others (minutes on the 2-core CI machine, measured in one
# run); the rest follow in name order.
LONGEST_FIRST = [
    "fleet_upgrade",
    "kernel_layer",
    "gpu_validation",
    "horovod",
    "gpu_health",
    "slurm_drain",
    "nvidia_driver",
]


class Timings:
    """scenario -> (lane, start offset s, end offset s), written to SUMMARY as each scenario ends: pytest's controller
    prints it before the summary line (under xdist this module runs in a worker, whose report is not shown)."""

    def __init__(self):
        self.rows: dict[str, tuple[int, float, float]] = {}
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def add(self, scenario, lane, begin, end):
        with self.lock:
            self.rows[scenario] = (lane, begin - self.started, end - self.started)
            self.write()

    def write(self):
        lines = [
            f"lane {lane}  start {start / 60:5.1f} min  {(stop - start) / 60:5.1f} min  {name}"
            for name, (lane, start, stop) in sorted(self.rows.items(), key=lambda row: (row[1][0], row[1][1]))
        ]
        wall = max(stop for _lane, _start, stop in self.rows.values())
        total = sum(stop - start for _lane, start, stop in self.rows.values())
        lines.append(f"{len(self.rows)} scenarios: {total / 60:.1f} min of runs in {wall / 60:.1f} min")
        SUMMARY.parent.mkdir(parents=True, exist_ok=True)
        SUMMARY.write_text("\n".join(lines) + "\n")


def lanes() -> int:
    # One lane per two cores: on the 2-core CI machine two lanes measured no gain (each scenario ran at half speed).
    value = os.environ.get("GPUFLEET_MOLECULE_LANES", str(max(1, (os.cpu_count() or 2) // 2)))
    if not value.isdigit() or int(value) < 1:
        raise pytest.UsageError(f"GPUFLEET_MOLECULE_LANES must be a whole number >= 1, got {value!r}")
    return int(value)


def run_order(selected):
    first = [name for name in LONGEST_FIRST if name in selected]
    return first + [name for name in sorted(selected) if name not in first]


def molecule_test(scenario, timings):
    begin = time.monotonic()
    # ThreadPoolExecutor names its threads PREFIX_0, PREFIX_1, ...
    lane = int(threading.current_thread().name.rsplit("_", 1)[-1]) + 1
    asserts = LOGS / f"{scenario}.asserts.jsonl"
    LOGS.mkdir(parents=True, exist_ok=True)
    asserts.unlink(missing_ok=True)
    env = dict(
        os.environ,
        NO_COLOR="1",
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS),
        ANSIBLE_CALLBACKS_ENABLED="assert_count",
        GPUFLEET_ASSERT_LOG=str(asserts),
    )
    proc = subprocess.run(
        [Path(sys.executable).parent / "molecule", "test", "-s", scenario],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    output = proc.stdout + proc.stderr
    (LOGS / f"{scenario}.log").write_text(output)
    timings.add(scenario, lane, begin, time.monotonic())
    runs = [json.loads(line) for line in asserts.read_text().splitlines()] if asserts.exists() else []
    return proc.returncode, output, runs


def verifier_checks(output, runs):
    """How many checks the verify step ran: the tests Testinfra's pytest passed (none may be skipped: a skip is not a
    pass), or the assert tasks verify.yml passed (callback_plugins/assert_count.py's lines for it). Molecule logs its
    steps on stderr, after the playbooks' and pytest's stdout, so the summary line is looked for in the whole output;
    the verifier's pytest is the only one a scenario runs."""
    if "Executing Testinfra tests" in output:
        summary = re.findall(r"^=+ (.*) in [0-9.]+s", output, re.MULTILINE)
        counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary[-1] if summary else "")}
        return 0 if counts.get("skipped") else counts.get("passed", 0)
    return sum(run["asserts"] for run in runs if run["playbook"] == "verify.yml")


@pytest.fixture(scope="module")
def scenario_runs(request):
    """Start the selected scenarios in lanes; each test waits for its own. The mirror is stopped after the last,
    unless it was serving before (someone's `make demo`)."""
    selected = {
        item.callspec.params["scenario"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_molecule_scenario"
    }
    serve = MIRROR / "serve"
    serving_before = subprocess.run([serve, "status"], capture_output=True, check=False).returncode == 0
    subprocess.run([MIRROR / "build"], capture_output=True, check=True)
    subprocess.run([serve, "start", "--port", "8790"], capture_output=True, check=True)
    timings = Timings()
    pool = ThreadPoolExecutor(max_workers=lanes(), thread_name_prefix="molecule-lane")
    futures = {name: pool.submit(molecule_test, name, timings) for name in run_order(selected)}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)
    if not serving_before:
        subprocess.run([serve, "stop"], capture_output=True, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario, scenario_runs):
    returncode, output, runs = scenario_runs[scenario].result()
    assert returncode == 0, f"molecule test -s {scenario} failed ({returncode}):\n{output[-20000:]}"
    # A scenario that ran no converge or verify, or whose verifier checked nothing, has proved nothing.
    for step in ("converge", "idempotence", "verify"):
        assert f"{scenario} > {step}: Executed: Successful" in output, f"{step} did not run:\n{output[-5000:]}"
    assert verifier_checks(output, runs) > 0, f"the verifier of {scenario} checked nothing:\n{output[-5000:]}"


def test_every_scenario_is_found():
    assert "sandbox" in SCENARIOS


def test_run_order_starts_the_longest_and_keeps_every_scenario():
    order = run_order(set(SCENARIOS))
    assert order[:2] == ["fleet_upgrade", "kernel_layer"]
    assert sorted(order) == SCENARIOS
    assert run_order({"nccl", "gpu_health"}) == ["gpu_health", "nccl"]


# As test_molecule_scenario gets it: the verifier's pytest on stdout, Molecule's step lines on stderr after it.
TESTINFRA = """TASK [Wait until every node is registered and not down] ************************
ok: [fleet-ctl]
============================= test session starts ==============================
tests/test_fleet_upgrade.py {marks}
============================= slowest 12 durations =============================
123.23s call     molecule/fleet_upgrade/tests/test_fleet_upgrade.py::test_a_live_rollout
======================== {summary} in 547.29s (0:09:07) ========================
PLAY [Destroy sandbox nodes] ***************************************************
INFO     [fleet_upgrade > verify] Executing
INFO     [fleet_upgrade > verify] Executing Testinfra tests found in molecule/fleet_upgrade/tests/...
INFO     [fleet_upgrade > verify] Verifier completed successfully.
INFO     [fleet_upgrade > verify] Executed: Successful
"""
ANSIBLE = """INFO     [horovod > verify] Executing
PLAY RECAP ***
horovod-debian12 : ok=9 changed=0 unreachable=0 failed=0 skipped=0
INFO     [horovod > verify] Executed: Successful
"""


@pytest.mark.parametrize(
    ("output", "runs", "checks"),
    [
        (TESTINFRA.format(marks="..........", summary="10 passed"), [], 10),
        # Every test skipped (no Molecule inventory): nothing was checked.
        (TESTINFRA.format(marks="ssssssssss", summary="10 skipped"), [], 0),
        (TESTINFRA.format(marks=".s", summary="1 passed, 1 skipped"), [], 0),
        (TESTINFRA.format(marks="", summary="no tests ran"), [], 0),
        (ANSIBLE, [{"playbook": "converge.yml", "asserts": 3}, {"playbook": "verify.yml", "asserts": 4}], 4),
        # Asserts in converge (or a verify.yml of debug tasks) are not the verifier's.
        (ANSIBLE, [{"playbook": "converge.yml", "asserts": 3}, {"playbook": "verify.yml", "asserts": 0}], 0),
        (ANSIBLE, [], 0),
    ],
)
def test_a_verifier_that_checked_nothing_counts_zero(output, runs, checks):
    assert verifier_checks(output, runs) == checks
