"""Slurm's view of a node (_node/slurm/scontrol) on output recorded from Debian 12's slurm-wlm 22.05 (fixtures/),
and gpufleet.stack.slurm_node through Ansible against a stand-in scontrol/squeue that prints the same format."""

import json
import time
from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import scontrol as sl

FIXTURES = Path(__file__).with_name("fixtures")


def fixture(name):
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name", ["idle", "draining", "invalid"])
def test_both_layouts_parse_alike(name):
    assert sl.parse_node(fixture(f"{name}.txt")) == sl.parse_node(fixture(f"{name}.oneliner.txt"))


def test_idle_node():
    node = sl.parse_node(fixture("idle.txt"))
    assert (node["name"], node["state"], node["base"], node["flags"]) == ("exp-gpu-1", "IDLE", "IDLE", [])
    assert (node["gres"], node["gres_gpus"], node["reason"]) == ("gpu:a100:8", 8, "")
    assert sl.is_free(node) and not sl.is_drained(node)


def test_a_drain_of_ours_while_a_job_runs():
    node = sl.parse_node(fixture("draining.txt"))
    assert (node["base"], node["flags"]) == ("ALLOCATED", ["DRAIN"])
    assert (node["reason"], node["reason_by"]) == ("gpufleet: upgrade to driver 570.172.08", "root@2026-12-02T04:33:34")
    assert sl.is_ours(node, "gpufleet:") and not sl.is_free(node)
    assert sl.drain_action(node, "gpufleet: upgrade to driver 570.172.08", "gpufleet:") == "none"
    assert sl.drain_action(node, "gpufleet: upgrade failed at install", "gpufleet:") == "renew"


def test_slurm_drains_a_node_that_registers_fewer_gpus():
    node = sl.parse_node(fixture("invalid.txt"))
    assert node["flags"] == ["DRAIN", "INVALID_REG"]
    assert node["reason"] == "gres/gpu count reported lower than configured (7 < 8)"
    assert not sl.is_ours(node, "gpufleet:")
    assert sl.drain_action(node, "gpufleet: upgrade", "gpufleet:") == "keep"
    problems = sl.readiness_problems(node, 8)
    assert problems == [
        "Slurm shows exp-gpu-1 IDLE+DRAIN+INVALID_REG (gres/gpu count reported lower than configured (7 < 8))"
    ]


def test_readiness():
    idle = sl.parse_node(fixture("idle.txt"))
    assert sl.readiness_problems(idle, 8) == []
    assert sl.readiness_problems(idle, 7) == ["Slurm counts 8 GPUs (Gres=gpu:a100:8), the node has 7"]
    lost = sl.parse_node(fixture("not-responding.txt"))
    assert lost["flags"] == ["NOT_RESPONDING"]
    assert sl.readiness_problems(lost)[0].startswith("Slurm shows exp-gpu-1 IDLE+NOT_RESPONDING")


def test_a_node_slurm_has_down_is_not_back():
    """DOWN without DRAIN (slurmctld gave up on it: Reason=Not responding): resuming it is not having it back."""
    down = sl.parse_node(fixture("idle.txt").replace("State=IDLE", "State=DOWN"))
    assert (down["base"], down["flags"]) == ("DOWN", [])
    assert sl.readiness_problems(down, 8) == ["Slurm shows exp-gpu-1 DOWN"]
    assert sl.is_free(down) and not sl.is_drained(down)  # no job can run there: free, but not given back


@pytest.mark.parametrize(
    ("gres", "count"),
    [("gpu:a100:8", 8), ("gpu:a100:8(S:0-1)", 8), ("gpu:a100:4(S:0),gpu:t4:2(S:1)", 6), ("gpu:2", 2),
     ("gpu", 1), ("(null)", 0), ("", 0), ("shard:a100:16,gpu:a100:8", 8)],
)  # fmt: skip
def test_gres_gpu_count(gres, count):
    assert sl.gres_gpu_count(gres) == count


def test_jobs_and_their_pids():
    jobs = sl.parse_squeue(fixture("squeue.txt"))
    assert jobs == [{"id": "2", "user": "root", "name": "wrap", "state": "RUNNING", "time": "0:02"}]
    assert sl.describe_jobs(jobs) == "job 2 (wrap, user root, RUNNING for 0:02)"
    owned = sl.parse_listpids(fixture("listpids.txt"))
    assert owned == {795: "2", 796: "2"}
    procs = [{"pid": 795, "gpu": 0, "name": "python3", "used_memory_mib": 100},
             {"pid": 4242, "gpu": 5, "name": "train.py", "used_memory_mib": 30000}]  # fmt: skip
    strays = sl.stray_processes(procs, owned)
    assert sl.describe_processes(strays) == "pid 4242 (train.py, 30000 MiB) on GPU 5"


def test_reasons_stay_on_one_line():
    assert sl.one_line_reason("gpufleet: upgrade failed:\nE: x\tdone") == "gpufleet: upgrade failed: E: x done"
    assert sl.one_line_reason("GPU 0 \x1b[2J\x1b]0;owned\x07 hot\x9b") == "GPU 0 [2J ]0;owned hot"
    assert len(sl.one_line_reason("gpufleet: " + "x" * 500)) == sl.REASON_MAX


# --- gpufleet.stack.slurm_node through Ansible, against the stand-in -------------------------------------------
@pytest.fixture
def cluster(fake_slurm, run_module):
    state = fake_slurm

    def setup(**data):
        state.write_text(json.dumps({"name": "gpu-1", "flags": [], "reason": "", "gres": "gpu:a100:8", **data}))

    def read():
        return json.loads(state.read_text())

    def run(args, *flags):
        return run_module("gpufleet.stack.slurm_node", {"name": "gpu-1", "poll_interval": 1, **args}, *flags)

    return setup, read, run


def job(seconds, job_id="12"):
    return {"id": job_id, "user": "ana", "name": "train", "until": time.time() + seconds, "start": time.time()}


def test_drain_waits_for_the_running_job(cluster):
    setup, read, run = cluster
    # The job ends 6 s after it is written: the module (a cold Python start on a loaded 2-core machine can take
    # seconds) still has to wait for it.
    setup(jobs=[job(6)])
    rc, result = run({"state": "drained", "reason": "gpufleet: upgrade to driver 570.172.08", "timeout": 30})
    assert rc == 0, result
    assert result["changed"] and result["ours"] and not result["timed_out"]
    assert [j["id"] for j in result["jobs_at_request"]] == ["12"]
    assert result["waited"] >= 2
    assert result["node"]["state"] == "IDLE+DRAIN"
    assert read()["reason"] == "gpufleet: upgrade to driver 570.172.08"
    rc, again = run({"state": "drained", "reason": "gpufleet: upgrade to driver 570.172.08", "timeout": 30})
    assert (rc, again["changed"]) == (0, False)


def test_a_job_that_outlives_the_timeout(cluster):
    setup, read, run = cluster
    setup(jobs=[job(600)])
    rc, result = run({"state": "drained", "reason": "gpufleet: upgrade", "timeout": 2})
    assert rc != 0
    assert "still runs job 12 (train, user ana, RUNNING" in result["msg"] and "scancel 12" in result["msg"]
    assert read()["flags"] == ["DRAIN"]  # stays drained
    rc, result = run({"state": "drained", "reason": "gpufleet: upgrade", "timeout": 1, "on_timeout": "resume"})
    assert rc == 0, result
    assert (result["timed_out"], result["resumed"]) == (True, True)
    assert read()["flags"] == [] and read()["reason"] == ""


def test_an_admins_drain_is_kept_and_never_resumed(cluster):
    setup, read, run = cluster
    setup(flags=["DRAIN"], reason="bad DIMM, ticket 4711", by="admin")
    rc, result = run({"state": "drained", "reason": "gpufleet: upgrade", "timeout": 0})
    assert (rc, result["ours"], result["changed"]) == (0, False, False)
    rc, result = run({"state": "resumed"})
    assert (rc, result["resumed"]) == (0, False)
    assert read()["reason"] == "bad DIMM, ticket 4711"
    rc, result = run({"state": "failed", "reason": "gpufleet: upgrade failed at install: E: boom"})
    assert (rc, result["ours"]) == (0, False)
    assert read()["reason"] == "bad DIMM, ticket 4711"


def test_check_mode_changes_nothing(cluster):
    setup, read, run = cluster
    setup(jobs=[job(600)])
    rc, result = run({"state": "drained", "reason": "gpufleet: upgrade", "timeout": 600}, "--check")
    assert (rc, result["changed"]) == (0, True)
    assert [c for c in read()["calls"] if c[1] == "update"] == []


def test_resume_waits_until_slurm_has_the_node_back(cluster):
    setup, _read, run = cluster
    setup(flags=["DRAIN"], reason="gpufleet: upgrade")
    rc, result = run({"state": "resumed", "expected_gpus": 8, "ready_timeout": 5})
    assert rc == 0, result
    assert (result["resumed"], result["problems"], result["node"]["state"]) == (True, [], "IDLE")
    setup(flags=["DRAIN"], reason="gpufleet: upgrade")
    rc, result = run({"state": "resumed", "expected_gpus": 7, "ready_timeout": 1})
    assert rc != 0
    assert "Slurm counts 8 GPUs (Gres=gpu:a100:8), the node has 7" in result["msg"]


def test_a_reason_without_the_prefix_is_refused(cluster):
    setup, read, run = cluster
    setup()
    rc, result = run({"state": "drained", "reason": "upgrade"})
    assert rc != 0 and 'must start with prefix "gpufleet:"' in result["msg"]
    assert read().get("calls", []) == []
