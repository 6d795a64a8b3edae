"""Every Molecule scenario in molecule/, each a full `molecule test` (converge, idempotence, verify) on sandbox nodes.

`make molecule SCENARIO=name` runs one of them by hand.

The scenarios run side by side in GPUFLEET_MOLECULE_LANES lanes (default: one per two cores, so one on the 2-core
CI machine, where the controller's CPU is what a scenario waits for), and under xdist one more lane for each other
worker, which opens when that worker has run all its tests (tests/conftest.py marks it done): on the 2-core machine the
lint, unit and other integration tests take about a sixth of the run, and the core they leave would otherwise idle
for the rest of it. A lane takes the next scenario in run_order when it is free. They can share the host because each
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
from collections import Counter, deque
from concurrent.futures import Future
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))
MIRROR = ROOT / "sandbox" / "mirror"
LOGS = ROOT / ".cache" / "molecule-logs"
# The lane table, written as each scenario ends; tests/conftest.py prints it on the controller.
SUMMARY = LOGS / "summary.txt"
# An xdist worker that has run all its tests writes WORKER_DONE.<its id> (tests/conftest.py): a borrowed lane opens.
WORKER_DONE = LOGS / "worker-done"  # as tests/conftest.py names it
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

    def add(self, scenario, lane, begin, end, where=""):
        with self.lock:
            self.rows[scenario] = (lane, begin - self.started, end - self.started, where)
            self.write()

    def write(self):
        lines = [
            f"lane {lane}  start {start / 60:5.1f} min  {(stop - start) / 60:5.1f} min  {name}"
            + (f"  ({where})" if where else "")
            for name, (lane, start, stop, where) in sorted(self.rows.items(), key=lambda row: (row[1][0], row[1][1]))
        ]
        wall = max(stop for _lane, _start, stop, _where in self.rows.values())
        total = sum(stop - start for _lane, start, stop, _where in self.rows.values())
        lines.append(f"{len(self.rows)} scenarios: {total / 60:.1f} min of runs in {wall / 60:.1f} min")
        SUMMARY.parent.mkdir(parents=True, exist_ok=True)
        SUMMARY.write_text("\n".join(lines) + "\n")


def lanes() -> int:
    # One lane per two cores: on the 2-core CI machine two lanes measured no gain (each scenario ran at half speed).
    value = os.environ.get("GPUFLEET_MOLECULE_LANES", str(max(1, (os.cpu_count() or 2) // 2)))
    if not value.isdigit() or int(value) < 1:
        raise pytest.UsageError(f"GPUFLEET_MOLECULE_LANES must be a whole number >= 1, got {value!r}")
    return int(value)


def minutes_by_playbook(runs, top=4):
    """Where a scenario's minutes went, from callback_plugins/assert_count.py's lines: the playbooks with the most
    wall time, each with its number of runs (a run started from inside another, as a verifier's, overlaps it)."""
    seconds, count = Counter(), Counter()
    for run in runs:
        seconds[run["playbook"]] += run.get("seconds", 0)
        count[run["playbook"]] += 1
    return ", ".join(
        f"{name} {spent / 60:.1f}" + (f" x{count[name]}" if count[name] > 1 else "")
        for name, spent in seconds.most_common(top)
    )


def run_order(selected):
    first = [name for name in LONGEST_FIRST if name in selected]
    return first + [name for name in sorted(selected) if name not in first]


class Lanes:
    """Scenarios handed out in order to lanes as each lane comes free. `opens` has one callable per lane that
    returns once the lane may start (at once for the fixed lanes, when another xdist worker is done for a borrowed
    one); a lane that opens after the queue has emptied runs nothing."""

    def __init__(self, order, run, opens):
        self.queue = deque(order)
        self.futures = {name: Future() for name in order}
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self.lane, args=(number, run, wait), name=f"molecule-lane-{number}", daemon=True)
            for number, wait in enumerate(opens, start=1)
        ]

    def start(self):
        for thread in self.threads:
            thread.start()
        return self.futures

    def take(self):
        with self.lock:
            return self.queue.popleft() if self.queue else None

    def lane(self, number, run, wait):
        if not wait(self.queue):
            return
        while (name := self.take()) is not None:
            try:
                self.futures[name].set_result(run(name, number))
            except Exception as failed:  # handed to the test that waits for this scenario
                self.futures[name].set_exception(failed)

    def join(self, timeout=None):
        for thread in self.threads:
            thread.join(timeout)


def at_once(_queue):
    return True


def when_done(worker, poll=5.0):
    """A borrowed lane's opening: once `worker` has marked itself done (tests/conftest.py), or never if the queue
    empties first."""

    def wait(queue):
        mark = WORKER_DONE.with_name(f"{WORKER_DONE.name}.{worker}")
        while queue:
            if mark.exists():
                return True
            time.sleep(poll)
        return False

    return wait


def lane_openings():
    """The fixed lanes, then one borrowed lane per other xdist worker (none without xdist)."""
    me = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    others = [f"gw{n}" for n in range(count) if f"gw{n}" != me] if me else []
    return [at_once] * lanes() + [when_done(worker) for worker in others]


def molecule_test(scenario, timings, lane):
    begin = time.monotonic()
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
    runs = [json.loads(line) for line in asserts.read_text().splitlines()] if asserts.exists() else []
    timings.add(scenario, lane, begin, time.monotonic(), minutes_by_playbook(runs))
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
    scheduler = Lanes(run_order(selected), lambda name, lane: molecule_test(name, timings, lane), lane_openings())
    yield scheduler.start()
    scheduler.queue.clear()
    scheduler.join()
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


def test_the_summary_says_which_playbooks_took_a_scenarios_minutes():
    runs = [
        {"playbook": "converge.yml", "asserts": 0, "seconds": 120.0},
        {"playbook": "converge.yml", "asserts": 0, "seconds": 30.0},
        {"playbook": "create.yml", "asserts": 0, "seconds": 12.0},
        {"playbook": "upgrade.yml", "asserts": 0, "seconds": 300.0},
        {"playbook": "verify.yml", "asserts": 4},  # a line from before the callback timed runs
    ]
    assert minutes_by_playbook(runs, top=3) == "upgrade.yml 5.0, converge.yml 2.5 x2, create.yml 0.2"
    assert minutes_by_playbook([]) == ""


def test_lanes_take_scenarios_in_order_as_they_come_free():
    ran, opened = [], threading.Event()

    def run(name, lane):
        ran.append((name, lane))
        if name == "b":
            opened.set()  # the borrowed lane opens while lane 1 runs b
            time.sleep(0.2)
        if name == "c":
            raise RuntimeError("c failed")
        return name.upper()

    def borrowed(queue):
        opened.wait(5)
        return bool(queue)

    scheduler = Lanes(["a", "b", "c", "d"], run, [at_once, borrowed])
    futures = scheduler.start()
    assert [futures[name].result(5) for name in ("a", "b", "d")] == ["A", "B", "D"]
    with pytest.raises(RuntimeError, match="c failed"):
        futures["c"].result(5)
    scheduler.join(5)
    assert [name for name, _lane in ran] == ["a", "b", "c", "d"]
    assert dict(ran)["a"] == 1 and dict(ran)["c"] == 2  # c went to the lane that opened while b ran


def test_a_borrowed_lane_waits_for_its_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "WORKER_DONE", tmp_path / "worker-done")
    queue = deque(["a"])
    wait = when_done("gw1", poll=0.01)
    opened = []
    waiter = threading.Thread(target=lambda: opened.append(wait(queue)))
    waiter.start()
    time.sleep(0.05)
    assert waiter.is_alive()  # gw1 is still running tests
    (tmp_path / "worker-done.gw0").touch()  # another worker's mark does not open it
    time.sleep(0.05)
    assert waiter.is_alive()
    (tmp_path / "worker-done.gw1").touch()
    waiter.join(5)
    assert opened == [True]
    # A lane whose worker is never done gives up once the scenarios are all taken.
    assert when_done("gw9", poll=0.01)(deque()) is False


def test_one_borrowed_lane_per_other_worker(monkeypatch):
    monkeypatch.setenv("GPUFLEET_MOLECULE_LANES", "1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    openings = lane_openings()
    assert len(openings) == 2 and openings[0] is at_once and openings[1] is not at_once
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert lane_openings() == [at_once]
