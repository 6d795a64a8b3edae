"""gpu_validate's all-reduce test built for real: NVIDIA's nvcc 13.0 and NCCL 2.28.9 (PyPI wheels, the same files
NVIDIA's CUDA repository packages) compile gpufleet-allreduce with the host's g++, and the module runs it. With no
GPU and no driver here, the run must end refused with the reason, never passed.

The wheels (about 300 MB, tools/validation-toolchain) are kept in .cache/validation-toolchain across runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "roles" / "gpu_validation" / "files" / "gpufleet-allreduce.cu"


@pytest.fixture(scope="module")
def toolchain():
    """tools/validation-toolchain: NVIDIA's nvcc 13.0 and NCCL 2.28.9 from PyPI, installed once into .cache."""
    proc = subprocess.run(
        [ROOT / "tools" / "validation-toolchain", sys.executable],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert proc.returncode == 0, f"pip could not install NVIDIA's wheels from PyPI: {proc.stderr[-2000:]}"
    home = Path(proc.stdout.strip())
    return {"nvcc": home / "nvidia" / "cu13" / "bin" / "nvcc", "nccl_home": home / "nvidia" / "nccl"}


def test_allreduce_builds_against_real_nccl_and_is_refused_without_a_gpu(run_module, toolchain, tmp_path):
    """This machine has no GPU (NVML would count 0): the test cannot run here, and says why."""
    args = {
        "checks": ["nccl"],
        "gpus": 0,
        "nvcc": str(toolchain["nvcc"]),
        "nccl_home": str(toolchain["nccl_home"]),
        "source": str(SOURCE),
        "build_dir": str(tmp_path),
    }
    rc, result = run_module("gpufleet.stack.gpu_validate", args)
    assert rc == 0, result
    facts = result["ansible_facts"]["gpufleet_validation"]
    (check,) = facts["checks"]
    assert (facts["status"], check["status"]) == ("refused", "refused"), facts
    assert check["reason"].startswith("no CUDA driver answers on this node (cudaErrorInsufficientDriver"), check
    assert check["reason"].endswith("NVML sees no GPU on this node"), check
    assert check["nccl_version"] == 22809  # the NCCL it linked is the one it ran with
    binary = tmp_path / "gpufleet-allreduce"
    needed = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    assert "[libnccl.so.2]" in needed
    # A second run reuses the build (same source, nvcc and nccl.h). Told the node has 8 real GPUs, the same
    # start-up failure is the node's fault: failed, not refused.
    built = binary.stat().st_mtime_ns
    rc, result = run_module("gpufleet.stack.gpu_validate", dict(args, gpus=8))
    assert binary.stat().st_mtime_ns == built
    (check,) = result["ansible_facts"]["gpufleet_validation"]["checks"]
    assert check["status"] == "failed" and check["reason"].startswith("CUDA cannot start on this node's GPUs"), check


def test_without_nvcc_the_check_is_refused(run_module, tmp_path):
    args = {"checks": ["nccl"], "nvcc": str(tmp_path / "nvcc"), "source": str(SOURCE), "build_dir": str(tmp_path)}
    rc, result = run_module("gpufleet.stack.gpu_validate", args)
    assert rc == 0
    (check,) = result["ansible_facts"]["gpufleet_validation"]["checks"]
    assert check["status"] == "refused" and check["reason"].startswith("no nvcc on this node")


def test_a_source_that_does_not_build_fails_with_the_compiler_message(run_module, toolchain, tmp_path):
    broken = tmp_path / "broken.cu"
    broken.write_text(SOURCE.read_text().replace("ncclCommInitAll(", "ncclCommInitAllX("))
    args = {
        "checks": ["nccl"],
        "nvcc": str(toolchain["nvcc"]),
        "nccl_home": str(toolchain["nccl_home"]),
        "source": str(broken),
        "build_dir": str(tmp_path / "build"),
    }
    rc, result = run_module("gpufleet.stack.gpu_validate", args)
    assert rc == 0  # the outcome is the facts; role gpu_validation fails the host on it
    facts = result["ansible_facts"]["gpufleet_validation"]
    (check,) = facts["checks"]
    assert facts["status"] == check["status"] == "failed"
    assert "building gpufleet-allreduce failed" in check["reason"] and "ncclCommInitAllX" in check["reason"]
    assert os.path.exists(tmp_path / "build")


def test_gpus_in_use_are_not_tested(run_module, tmp_path):
    """A job's processes on the GPUs: the NCCL check would share them with it, so it is refused before any build."""
    args = {"checks": ["nccl"], "gpus": 8, "gpu_processes": 2, "source": str(SOURCE), "build_dir": str(tmp_path)}
    rc, result = run_module("gpufleet.stack.gpu_validate", args)
    assert rc == 0
    (check,) = result["ansible_facts"]["gpufleet_validation"]["checks"]
    assert check == {
        "check": "nccl",
        "status": "refused",
        "reason": "2 processes are using the GPUs: drain the node first (role node_drain)",
    }
    assert not (tmp_path / "gpufleet-allreduce").exists()
