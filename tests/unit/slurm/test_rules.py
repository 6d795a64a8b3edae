"""gres.conf from NVML's view (_node/slurm/gres) and node_drain's record (_controller/drain): pure rules."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import drain as dr
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import gres as sg


@pytest.mark.parametrize(
    ("name", "gtype"),
    [("NVIDIA A100-SXM4-40GB", "a100"), ("NVIDIA H100 80GB HBM3", "h100"), ("Tesla T4", "t4"),
     ("NVIDIA GeForce RTX 4090", "rtx_4090"), ("NVIDIA RTX A6000", "rtx_a6000"), ("NVIDIA L40S", "l40s")],
)  # fmt: skip
def test_short_types_are_substrings_of_autodetects(name, gtype):
    assert sg.gres_type(name) == gtype
    assert gtype in name.lower().replace(" ", "_")  # Slurm matches a configured type as a substring


def test_cores_follow_slurms_numbering():
    # Two sockets of 4 cores with 2 threads each; Linux numbers the second threads 16-31.
    topology = {cpu: (cpu // 4 % 2, cpu % 4) for cpu in range(16)}
    index = sg.core_index(topology)
    assert index[0] == index[8] == 0 and index[7] == index[15] == 7
    assert sg.ranges([index[c] for c in sg.parse_cpulist("0-3,8-11")]) == "0-3"
    assert sg.ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_the_file_and_the_gres_string():
    gpus = [{"minor_number": 1, "name": "NVIDIA A100-SXM4-40GB"}, {"minor_number": 0, "name": "NVIDIA A100-SXM4-40GB"}]
    text = sg.gres_conf("gpu-1", gpus, "a100", {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]})
    assert text.splitlines()[2:] == [
        "NodeName=gpu-1 Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-3",
        "NodeName=gpu-1 Name=gpu Type=a100 File=/dev/nvidia1 Cores=4-7",
    ]
    assert sg.gres_string(gpus, "a100") == "gpu:a100:2"
    assert "NodeName=gpu-1 AutoDetect=nvml Name=gpu Type=a100" in sg.gres_conf("gpu-1", gpus, "a100", autodetect=True)
    assert sg.gres_conf("gpu-1", gpus, "a100", extra=["Name=shard Count=8"]).endswith("\nName=shard Count=8\n")


def test_drain_record_keeps_its_times_on_a_rerun():
    drain = {"backend": "slurm", "node": "gpu-1", "reason": "gpufleet: upgrade", "ours": True, "jobs": ["12"]}
    first = dr.drain_record({}, "drained", drain, "T1")
    assert (first["requested_at"], first["drained_at"], first["jobs_at_request"]) == ("T1", "T1", ["12"])
    assert dr.drain_record(first, "drained", drain, "T2") == first
    failing = dict(drain, reason="gpufleet: x", failure="x")
    failed = dr.drain_record(first, "failed", failing, "T3")
    assert (failed["failure"], failed["failed_at"], failed["requested_at"]) == ("x", "T3", "T1")
    assert dr.drain_record(failed, "failed", failing, "T4") == failed
    blocked = dr.drain_record({}, "blocked", dict(drain, reason="gpufleet: blocked", blocked="pid 1"), "T5")
    assert (blocked["blocked"], blocked["blocked_at"]) == ("pid 1", "T5")
    with pytest.raises(ValueError, match="is not drained, failed or blocked"):
        dr.drain_record({}, "request", drain, "T")
