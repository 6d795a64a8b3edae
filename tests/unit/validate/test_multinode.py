"""A job across nodes through Slurm: the srun command, the ranks' reports (bounded, escaped) and the verdicts; the
rank lines are those gpufleet-torch-allreduce.py printed in the multinode scenario (two sandbox nodes, Gloo)."""

import json
import os
import subprocess

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import multinode as mn
from ansible_collections.gpufleet.stack.plugins.modules import multinode_validate

NODES = ["mn-gpu1", "mn-gpu2"]


def rank(n, **over):
    line = {
        "algbw_gbs": 0.9,
        "backend": "gloo",
        "busbw_gbs": 0.9,
        "bytes": 16777216,
        "expected": 3.0,
        "node": NODES[n],
        "ok": True,
        "rank": n,
        "seconds": 0.018,
        "torch": "2.13.0+cpu",
        "value": 3.0,
        "world": 2,
    }
    line.update(over)
    return mn.MARK + json.dumps(line, sort_keys=True)


def test_srun_starts_one_task_on_each_node():
    assert mn.srun_argv("/usr/bin/srun", NODES, ["/opt/train/bin/python", "x.py"], partition="gpu") == [
        "/usr/bin/srun",
        "--nodes=2",
        "--ntasks-per-node=1",
        "--nodelist=mn-gpu1,mn-gpu2",
        "--job-name=gpufleet-multinode",
        "--time=10",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        "--partition=gpu",
        "/opt/train/bin/python",
        "x.py",
    ]
    # An upgrade's batch is held in a reservation: the job asks for it (or Slurm would not place it there).
    held = mn.srun_argv("/usr/bin/srun", NODES, ["true"], reservation="gpufleet-upgrade-mn-gpu1")
    assert held[-2:] == ["--reservation=gpufleet-upgrade-mn-gpu1", "true"]
    assert not [a for a in mn.srun_argv("/usr/bin/srun", NODES, ["true"]) if a.startswith("--reservation")]


def test_every_rank_with_the_right_sum_on_its_own_node_passes():
    out = "\n".join(["srun: job 7 queued and waiting for resources", rank(1), rank(0)])
    check = mn.allreduce_check(mn.parse_ranks(out), NODES)
    assert check["status"] == "passed"
    assert [r["rank"] for r in check["ranks"]] == [0, 1]
    assert check["reason"].startswith("gloo all-reduce of 16777216 bytes across 2 nodes: every rank has the sum 3.0")
    assert check["busbw_gbs"] == 0.9


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        ([rank(0)], "ranks ran on ['mn-gpu1'], not one on each of ['mn-gpu1', 'mn-gpu2']"),
        ([rank(0), rank(1, node="mn-gpu1")], "ranks ran on ['mn-gpu1', 'mn-gpu1']"),
        ([rank(0), rank(1, ok=False, value=2.0)], "rank 1 on mn-gpu2: sum 2.0, expected 3.0"),
        ([rank(0), rank(1, ok=False, error="RuntimeError: Connection refused")], "rank 1 on mn-gpu2: RuntimeError"),
        ([rank(0, world=1), rank(1)], "rank 0 saw a world of 1, not 2"),
    ],
)
def test_a_missing_wrong_or_misplaced_rank_fails(lines, reason):
    check = mn.allreduce_check(mn.parse_ranks("\n".join(lines)), NODES)
    assert check["status"] == "failed" and reason in check["reason"]


def test_no_rank_at_all_names_srun_and_its_error():
    check = mn.allreduce_check([], NODES, rc=1, stderr="srun: error: Unable to allocate resources: Invalid node name")
    assert check["status"] == "failed"
    assert (
        check["reason"]
        == "no rank reported (srun exit 1): srun: error: Unable to allocate resources: Invalid node name"
    )


def test_one_node_is_refused():
    assert mn.allreduce_check([], ["mn-gpu1"])["status"] == "refused"


def test_reports_from_nodes_are_bounded_and_escaped():
    hostile = mn.MARK + json.dumps({"rank": 0, "world": 2, "node": "a\x1b[31m\nb", "ok": True, "error": "x" * 3000})
    (found,) = mn.parse_ranks(hostile)
    assert found["node"] == "a?[31m?b" and len(found["error"]) == 500
    assert mn.parse_ranks(mn.MARK + json.dumps({"rank": 0, "value": "3"})) == []  # a number that is not one
    assert mn.parse_ranks(mn.MARK + "{not json") == []
    assert mn.parse_ranks(mn.MARK + json.dumps({"rank": 0, "pad": "x" * mn.MAX_LINE})) == []
    assert mn.parse_ranks(mn.MARK + json.dumps({"rank": "0"})) == []


def test_rdma_is_refused_with_the_nodes_that_have_no_device():
    devices = mn.parse_rdma_devices("mn-gpu1\nmn-gpu2\n")
    assert devices == {"mn-gpu1": [], "mn-gpu2": []}
    check = mn.rdma_check(devices, NODES)
    assert check["status"] == "refused"
    assert check["reason"].startswith("no RDMA device on mn-gpu1, mn-gpu2 (/sys/class/infiniband is empty)")
    one = mn.rdma_check(mn.parse_rdma_devices("mn-gpu1 mlx5_0 mlx5_1\nmn-gpu2\n"), NODES)
    assert one["reason"].startswith("no RDMA device on mn-gpu2 ")


# perftest's ib_write_bw client output with --report_gbits (the table as perftest 4.5 prints it; linux-rdma/perftest
# README and its perftest_parameters.h REPORT_FMT).
IB_WRITE_BW = """
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : mlx5_0
 Number of qps   : 1            Transport type : IB
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             392.18             392.06              0.747795
---------------------------------------------------------------------------------------
"""


def test_ib_write_bw_reports_its_average():
    devices = {"mn-gpu1": ["mlx5_0"], "mn-gpu2": ["mlx5_0"]}
    check = mn.rdma_check(devices, NODES, IB_WRITE_BW)
    assert check["status"] == "passed" and check["average_gbits"] == 392.06 and check["bytes"] == 65536
    assert check["reason"] == "ib_write_bw mn-gpu1 <- mn-gpu2: 392.06 Gb/s average at 65536 bytes"
    failed = mn.rdma_check(devices, NODES, " Couldn't connect to mn-gpu1:18515", rc=1)
    assert failed["status"] == "failed" and "Couldn't connect" in failed["reason"]


def test_the_rdma_listing_leaves_out_the_nvswitch_bridge(recorded_sysfs):
    """An HGX B200's compute HCA is listed; its baseboard's NVSwitch bridge (VPD SW_MNG) is not a path between nodes."""
    root = recorded_sysfs("hgx-b200-nvswitch-bridge.sysfs")
    script = multinode_validate._LIST_RDMA.replace("/sys/", f"{root}/sys/")
    env = {"SLURMD_NODENAME": "gpu-1", "PATH": os.environ["PATH"]}
    out = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert mn.parse_rdma_devices(out) == {"gpu-1": ["mlx5_0"]}


# Each field's check and each verdict whole (make mutation).
@pytest.mark.parametrize("key", ["rank", "world", "bytes", "seconds", "algbw_gbs", "busbw_gbs", "value", "expected"])
def test_a_rank_whose_figure_is_not_a_number_is_left_out(key):
    assert mn.parse_ranks(rank(0, **{key: "12"}) + "\n" + rank(1)) == mn.parse_ranks(rank(1))


def test_a_rank_line_is_bounded_and_its_fields_cleaned():
    long = rank(0, pad="x" * (mn.MAX_LINE - len(rank(0, pad=""))))
    assert len(long) == mn.MAX_LINE and len(mn.parse_ranks(long)) == 1
    assert mn.parse_ranks(rank(0, pad="x" * mn.MAX_LINE)) == []
    (got,) = mn.parse_ranks(
        "srun: prologue\n" + rank(0, torch="2\x1b[31m" + "y" * 600, ok=True, **{"k" * 39: 1, "k" * 40: 2})
    )
    assert got["torch"] == "2?[31m" + "y" * 494 and got["ok"] is True and "k" * 39 in got and "k" * 40 not in got
    assert mn.parse_ranks(mn.MARK + "[1, 2]\n" + mn.MARK + '{"rank": "0"}\n' + mn.MARK + "{not json") == []
    assert mn.parse_ranks(None) == []


def test_every_problem_of_a_failed_job_is_named():
    ranks = mn.parse_ranks(
        rank(0, ok=False, value=2.0, world=3) + "\n" + rank(1, node="mn-gpu1", error="Gloo connectFullMesh failed")
    )
    check = mn.allreduce_check(ranks, NODES)
    assert (check["status"], check["reason"]) == (
        "failed",
        "ranks ran on ['mn-gpu1', 'mn-gpu1'], not one on each of ['mn-gpu1', 'mn-gpu2']; "
        "rank 0 on mn-gpu1: sum 2.0, expected 3.0; rank 0 saw a world of 3, not 2; "
        "rank 1 on mn-gpu1: Gloo connectFullMesh failed",
    )
    assert check["nodes"] == NODES and check["ranks"] == ranks


def test_a_passing_job_reports_the_slowest_rank_s_bandwidth():
    check = mn.allreduce_check(mn.parse_ranks(rank(0, busbw_gbs=1.5) + "\n" + rank(1, busbw_gbs=0.7)), NODES)
    assert check["reason"] == (
        "gloo all-reduce of 16777216 bytes across 2 nodes: every rank has the sum 3.0; bus bandwidth 0.7 GB/s "
        "(torch 2.13.0+cpu)"
    )
    assert (check["busbw_gbs"], check["backend"]) == (0.7, "gloo")


def test_no_rank_and_one_node_are_said_whole():
    silent = mn.allreduce_check([], NODES, rc=1, stderr="x" * 500 + "srun: error: Unable to allocate resources\x07")
    assert (
        silent["reason"]
        == "no rank reported (srun exit 1): " + "x" * 358 + "srun: error: Unable to allocate resources?"
    )
    one = mn.allreduce_check([], ["mn-gpu1"])
    assert (one["status"], one["reason"]) == ("refused", "a job across nodes needs two or more nodes; got ['mn-gpu1']")


def test_ib_write_bw_verdicts_whole():
    devices = {"mn-gpu1": ["mlx5_0"], "mn-gpu2": ["mlx5_0"]}
    assert mn.parse_perftest(IB_WRITE_BW) == {
        "bytes": 65536,
        "iterations": 5000,
        "peak_gbits": 392.18,
        "average_gbits": 392.06,
        "mpps": 0.747795,
    }
    failed = mn.rdma_check(devices, NODES, IB_WRITE_BW, rc=1)  # a row, but the run failed
    assert failed["status"] == "failed" and failed["reason"].startswith("ib_write_bw gave no result (exit 1): ")
    assert (
        mn.rdma_check(devices, NODES, "\x1b no row", rc=0)["reason"] == "ib_write_bw gave no result (exit 0): ? no row"
    )
    assert mn.rdma_refusal(devices, ["mn-gpu1"]) == "a bandwidth test between nodes needs two nodes"
    assert mn.rdma_refusal({"mn-gpu1": ["mlx5_0"], "mn-gpu2": []}, NODES).startswith("no RDMA device on mn-gpu2 (")
    assert mn.parse_rdma_devices("mn-gpu1 mlx5_1 mlx5_0\n\nmn-gpu2\n") == {
        "mn-gpu1": ["mlx5_0", "mlx5_1"],
        "mn-gpu2": [],
    }
