"""Node validation's parsing and verdicts, on recorded outputs (fixtures/SOURCES.md) and the shipped floors."""

import json
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.stack.plugins.module_utils._node import validate as va

FIXTURES = Path(__file__).parent / "fixtures"
FLOORS = yaml.safe_load((Path(__file__).resolve().parents[3] / "data" / "nccl_floors.yml").read_text())["floors"]


def text(name):
    return (FIXTURES / name).read_text()


def test_real_nccl_tests_output_is_read():
    found = va.parse_nccl_tests(text("nccl-tests-a100-sxm4-80gb-x8.txt"))
    assert found["gpus"] == 8 and found["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    assert [r["bytes"] for r in found["results"]] == [1073741824, 2147483648, 4294967296]
    assert [r["busbw_gbs"] for r in found["results"]] == [227.83, 230.13, 232.44]
    assert found["avg_busbw_gbs"] == 66.2058 and found["wrong"] == 0


def test_the_a100_run_passes_the_a100_floor():
    verdict = va.nccl_check(va.parse_nccl_tests(text("nccl-tests-a100-sxm4-80gb-x8.txt")), FLOORS, 8)
    assert verdict["status"] == "passed"
    assert verdict["reason"] == "peak bus bandwidth 232.4 GB/s, floor 195 GB/s"


def test_a_node_with_a_link_down_fails_its_floor():
    """The same node at the bandwidth of 8 GPUs over PCIe Gen4 (about 25 GB/s busbw)."""
    slow = va.parse_nccl_tests(text("nccl-tests-a100-sxm4-80gb-x8.txt").replace("232.44", "24.90"))
    for row in slow["results"]:
        row["busbw_gbs"] = min(row["busbw_gbs"], 24.9)
    verdict = va.nccl_check(slow, FLOORS, 8)
    assert verdict["status"] == "failed"
    assert verdict["reason"].startswith("peak bus bandwidth 24.9 GB/s is under the floor of 195 GB/s for 8x A100 SXM4")
    assert "nccl-tests/issues/149" in verdict["reason"]


def test_a_run_on_fewer_gpus_than_the_node_has_fails():
    found = va.parse_nccl_tests(text("nccl-tests-a100-sxm4-80gb-x8.txt"))
    assert va.nccl_check(found, FLOORS, 7)["reason"] == "the test ran on 8 GPUs, the node has 7"


def test_wrong_values_fail():
    found = {"ok": True, "gpus": 8, "gpu_name": "NVIDIA H100 80GB HBM3", "wrong": 3, "results": []}
    assert va.nccl_check(found, FLOORS, 8)["status"] == "failed"


@pytest.mark.parametrize(
    ("name", "gpus", "floor"),
    [
        ("NVIDIA H100 80GB HBM3", 8, 315),
        ("NVIDIA H200", 8, 315),
        ("NVIDIA H200 NVL", 8, None),  # PCIe cards with NVLink bridges, not the SXM board
        ("NVIDIA A100-SXM4-40GB", 8, 195),
        ("NVIDIA A100-SXM4-40GB", 4, None),  # a 4-GPU board has other links: no floor rather than a wrong one
        ("NVIDIA L40S", 8, None),
    ],
)
def test_floors_by_model_and_count(name, gpus, floor):
    row = va.floor_for(FLOORS, name, gpus)
    assert (row["busbw_gbs"] if row else None) == floor


def test_a_model_without_floor_is_measured_not_judged():
    found = {"ok": True, "gpus": 2, "gpu_name": "NVIDIA L40S", "wrong": 0, "results": [{"busbw_gbs": 21.5}]}
    verdict = va.nccl_check(found, FLOORS, 2)
    assert verdict["status"] == "passed" and "no floor for 2x NVIDIA L40S" in verdict["reason"]


def test_no_driver_under_the_simulator_is_refused_with_the_reason():
    found = va.parse_allreduce(text("allreduce-no-driver.json"))
    verdict = va.nccl_check(found, FLOORS, 8, simulated=True)
    assert verdict["status"] == "refused"
    assert verdict["reason"].startswith("no CUDA driver answers on this node (cudaErrorInsufficientDriver:")
    assert verdict["reason"].endswith(
        "its GPUs are the NVML simulator's (a sandbox node): nothing can run CUDA on them"
    )


def test_real_gpus_that_cuda_cannot_start_on_fail_the_node():
    """Fabric Manager down (cudaErrorSystemNotReady), a driver upgraded without a reboot: the node is broken."""
    for code in ("cudaErrorSystemNotReady", "cudaErrorSystemDriverMismatch"):
        found = {"ok": False, "stage": "cuda", "code": code, "error": "x", "cuda_runtime": 12080, "cuda_driver": 12080}
        verdict = va.nccl_check(found, FLOORS, 8)
        assert verdict["status"] == "failed" and verdict["reason"].startswith("CUDA cannot start on this node's GPUs")
    no_gpu = {"ok": False, "stage": "cuda", "code": "cudaErrorNoDevice", "error": "x", "cuda_driver": 12080}
    assert va.nccl_check(no_gpu, FLOORS, 0)["status"] == "refused"


def test_a_run_that_failed_midway_fails():
    found = {"ok": False, "stage": "run", "code": "cudaMalloc", "error": "could not allocate the buffers"}
    assert va.nccl_check(found, FLOORS, 8)["status"] == "failed"


def test_an_old_driver_is_refused_naming_both_cuda_versions():
    found = dict(json.loads(text("allreduce-no-driver.json")), cuda_driver=12080)
    assert va.refusal_reason(found).startswith("the driver supports CUDA 12.8 but the toolkit built for CUDA 13.0")


def test_nccl_failure_is_a_failure():
    found = {"ok": False, "stage": "nccl", "code": "ncclCommInitAll", "error": "unhandled system error"}
    assert va.nccl_check(found, FLOORS)["status"] == "failed"


DOCKER_RUNTIMES = (
    '{"io.containerd.runc.v2":{"path":"runc"},"nvidia":{"path":"nvidia-container-runtime"},"runc":{"path":"runc"}}'
)
CDI_LIST = "INFO[0000] Found 3 CDI devices\nnvidia.com/gpu=0\nnvidia.com/gpu=1\nnvidia.com/gpu=all\n"


def test_runtime_wiring_without_a_gpu_is_refused_not_passed():
    verdict = va.runtime_check(
        va.parse_docker_runtimes(DOCKER_RUNTIMES), va.parse_cdi_list(CDI_LIST), 2, "no /dev/nvidiactl: ..."
    )
    assert verdict["status"] == "refused" and verdict["runtimes"] == ["io.containerd.runc.v2", "nvidia", "runc"]
    assert verdict["cdi_devices"] == ["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all"]


def test_runtime_wiring_faults_fail():
    verdict = va.runtime_check(["runc"], ["nvidia.com/gpu=0", "nvidia.com/gpu=all"], 8, "x")
    assert verdict["status"] == "failed"
    assert verdict["reason"] == "Docker has no nvidia runtime (runtimes: runc); the CDI spec names 1 GPUs, NVML sees 8"


def test_containers_must_see_every_gpu():
    runtimes, devices = ["nvidia"], [f"nvidia.com/gpu={i}" for i in (0, 1)] + ["nvidia.com/gpu=all"]
    assert va.runtime_check(runtimes, devices, 2, {"legacy": 2, "cdi": 2})["status"] == "passed"
    failed = va.runtime_check(runtimes, devices, 2, {"legacy": 2, "cdi": "unknown flag: --device"})
    assert failed["status"] == "failed" and "cdi container failed: unknown flag" in failed["reason"]


def test_nvidia_smi_list_is_counted():
    assert (
        va.count_smi_gpus("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n")
        == 2
    )


def test_overall_is_the_worst():
    assert va.overall([va.result("a", "passed", ""), va.result("b", "refused", "")]) == "refused"
    assert va.overall([va.result("a", "skipped", "")]) == "skipped"
    assert va.overall([va.result("a", "failed", ""), va.result("b", "refused", "")]) == "failed"


def test_without_a_driver_a_missing_cdi_spec_is_part_of_the_refusal():
    verdict = va.runtime_check(["nvidia", "runc"], [], 8, "no /dev/nvidiactl: ...", driver_loaded=False, simulated=True)
    assert verdict["status"] == "refused"
    real = va.runtime_check(["nvidia", "runc"], [], 8, "no /dev/nvidiactl: ...", driver_loaded=False)
    assert real["status"] == "failed" and real["reason"].startswith("NVML sees 8 GPUs but no container can use them")
    with_driver = va.runtime_check(["nvidia", "runc"], [], 8, "no image given", driver_loaded=True)
    assert with_driver["status"] == "failed" and "no nvidia.com/gpu=all" in with_driver["reason"]


def test_dcgm4_failure_names_the_test_the_gpu_and_dcgms_message():
    verdict = va.dcgm_check(226, text("dcgmi-diag-r2-4.x-row-remap.json"), "", 2)
    assert verdict["status"] == "failed"
    assert verdict["reason"] == (
        "dcgmi diag -r 2: software on GPU 1: GPU 1 had uncorrectable memory errors and row remapping failed."
    )
    assert verdict["tests"] == {"software": "Fail", "memory": "Pass", "pcie": "Warn"}


def test_dcgm4_isolate_exit_is_said():
    verdict = va.dcgm_check(205, text("dcgmi-diag-r2-4.x-row-remap.json"), "", 2)
    assert verdict["reason"].startswith("dcgmi diag -r 2 (DCGM says: isolate the GPU): software on GPU 1")


def test_dcgm3_pass_with_a_warning():
    verdict = va.dcgm_check(0, text("dcgmi-diag-r1-3.x-pass.json"), "", 1)
    assert verdict["status"] == "passed"
    assert verdict["reason"] == (
        "dcgmi diag -r 1: 5 tests passed on 1 GPU (Denylist, NVML Library, Persistence Mode, Graphics Processes, "
        "Page Retirement/Row Remap); warnings: Persistence Mode on GPU 0: Persistence mode for GPU 0 is disabled."
    )


def test_dcgm_without_host_engine_says_how_to_start_it():
    out = (
        "Error: unable to establish a connection to the specified host: localhost\n"
        "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
    )
    verdict = va.dcgm_check(235, out, "", 1)
    assert verdict["status"] == "failed"
    assert verdict["reason"].endswith("start DCGM with systemctl enable --now nvidia-dcgm")


def test_dcgm_output_that_is_not_a_diagnostic_fails():
    verdict = va.dcgm_check(124, "", "", 3)
    assert verdict == {
        "check": "dcgm",
        "status": "failed",
        "reason": "dcgmi diag -r 3 exited 124 without a diagnostic: no output",
    }
    assert va.dcgm_check(0, '{"other": 1}', "", 1)["status"] == "failed"


def test_dcgm_nonzero_exit_without_a_failed_test_is_not_a_pass():
    passing = text("dcgmi-diag-r1-3.x-pass.json")
    assert va.dcgm_check(1, passing, "", 1)["reason"].endswith("exit 1 with no failed test in its report")


def test_dcgm_tests_that_did_not_run_are_not_a_pass():
    not_run = json.loads(text("dcgmi-diag-r2-4.x-row-remap.json"))
    software = not_run["DCGM Diagnostic"]["test_categories"][0]["tests"][0]
    software["results"] = [dict(r, status="Not Run", warnings=[]) for r in software["results"]]
    software["test_summary"] = {"status": "Not Run"}
    verdict = va.dcgm_check(0, json.dumps(not_run), "", 2)
    assert verdict["tests"]["software"] == "Skip"
    empty = va.dcgm_check(0, json.dumps({"DCGM Diagnostic": {"test_categories": []}}), "", 1)
    assert empty["status"] == "failed"
    assert empty["reason"] == "dcgmi diag -r 1 ran no test on any GPU: 0 tests listed"
