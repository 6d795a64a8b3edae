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
