"""Where a rolling upgrade stands (_controller/rollout): Ansible's batches, the progress line, the summary."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import rollout as r

HOSTS = [f"gpu-{i:02d}" for i in range(1, 101)]


@pytest.mark.parametrize(
    ("serial", "sizes"),
    [(10, [10] * 10), ("10%", [10] * 10), ("25%", [25] * 4), ([1, "10%", "25%"], [1, 10, 25, 25, 25, 14]),
     ("0.5%", [1] * 100), (0, [100]), ([1, 2], [1] + [2] * 49 + [1])],
)  # fmt: skip
def test_batches_are_ansibles(serial, sizes):
    groups = r.batches(HOSTS, serial)
    assert [len(g) for g in groups] == sizes
    assert [h for g in groups for h in g] == HOSTS


def test_the_progress_line():
    outcomes = {h: "done" for h in HOSTS[:19]} | {"gpu-20": "failed/gpus"}
    line = r.progress(HOSTS, HOSTS[20:30], 10, outcomes)
    assert line == "batch 3 of 10: gpu-21…gpu-30 (10 hosts); 19 of 100 done, 1 failed, 80 to go"
    assert r.progress(HOSTS[:4], ["gpu-02", "gpu-03"], [1, 2], {"gpu-01": "at-target"}) == (
        "batch 2 of 3: gpu-02, gpu-03; 1 of 4 done, 0 failed, 3 to go"
    )


def test_the_summary_puts_the_hosts_not_reached_last():
    outcomes = {"gpu-01": "done", "gpu-02": "failed/install", "gpu-03": "at-target"}
    assert r.summary(HOSTS[:5], outcomes) == [
        "at-target: gpu-03", "done: gpu-01", "failed/install: gpu-02", "not reached: gpu-04, gpu-05"]  # fmt: skip


def test_an_unreachable_result_becomes_a_failure_the_rescue_can_see():
    """plugins/strategy/rollout.py: Ansible drops an unreachable host without its block's rescue."""
    result = {"unreachable": True, "changed": False, "msg": "Failed to connect to the host via ssh: Connection refused"}
    assert r.unreachable_as_failed(result)
    assert result == {
        "unreachable": False,
        "failed": True,
        "changed": False,
        "gpufleet_unreachable": True,
        "msg": "the host stopped answering: Failed to connect to the host via ssh: Connection refused",
    }


def test_a_loop_item_that_lost_its_host_fails_the_loop():
    result = {"results": [{"item": 1, "changed": True}, {"item": 2, "unreachable": True, "msg": "gone"}, "odd"]}
    assert r.unreachable_as_failed(result)
    assert result["results"][1]["failed"] and result["results"][1]["unreachable"] is False
    assert result["failed"] and result["gpufleet_unreachable"] and "during the loop" in result["msg"]
    assert "failed" not in result["results"][0]


def test_other_results_are_left_alone():
    for result in ({"changed": True}, {"failed": True, "msg": "E: dpkg"}, {"unreachable": False}):
        before = dict(result)
        assert not r.unreachable_as_failed(result) and result == before
    assert not r.unreachable_as_failed(None)


def test_the_job_across_a_batch_takes_its_nodes_at_the_step():
    """upgrade.yml's job across nodes: the batch's hosts at the step (not one that failed before it, nor one at the
    target), by their Slurm names, submitted from the first of them, held under that node's name."""
    batch = ["gpu-a.example", "gpu-b.example", "gpu-c.example", "gpu-d.example"]
    steps = {"gpu-a.example": "gate", "gpu-b.example": "multinode", "gpu-d.example": "multinode"}
    names = {"gpu-a.example": "gpu-a", "gpu-b.example": "node017", "gpu-c.example": "gpu-c", "gpu-d.example": ""}
    assert r.batch_job(batch, steps, names, "multinode") == {
        "nodes": ["node017", "gpu-d.example"],
        "submitter": "gpu-b.example",
        "reservation": "gpufleet-upgrade-node017",
        "skip": "",
    }
    one = r.batch_job(batch, steps, names, "gate")
    assert (one["nodes"], one["submitter"]) == (["gpu-a"], "gpu-a.example")
    assert one["reservation"] == "gpufleet-upgrade-gpu-a"
    assert one["skip"] == (
        "gpu-a is this batch's only node at the job across nodes, which needs two: a gpufleet_upgrade_serial of 2 or "
        "more pairs them"
    )
    assert r.batch_job(batch, steps, names, "scheduler") == {
        "nodes": [],
        "submitter": "",
        "reservation": "",
        "skip": "no node of this batch reached the job across nodes",
    }


def test_slurm_names_are_the_inventorys_else_the_short_host_name():
    hostvars = {
        "gpu-1.rack7.example": {"inventory_hostname_short": "gpu-1", "node_drain_slurm_node_name": "node001"},
        "gpu-2.rack7.example": {"inventory_hostname_short": "gpu-2"},
    }
    assert r.slurm_names(list(hostvars), hostvars) == ["node001", "gpu-2"]
