"""DCGM's package set at its edges: the first driver of each branch range, whole results and whole refusals."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.dcgm_set import (
    DcgmSetError,
    dcgm_set,
    flavour,
)


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("580.65.06", "13"),
        ("575.57.08", "12"),
        ("525.60.13", "12"),
        ("520.61.05", "11"),
        ("450.51.05", "11"),
        # A Debian package version: only the branch counts.
        ("570.133.20-1", "12"),
    ],
)
def test_each_branch_range_starts_where_its_cuda_major_does(driver, cuda):
    assert dcgm_set("4.4.1", driver)["cuda"] == cuda


def test_dcgm4_whole():
    assert dcgm_set("4.4.1", "570.133.20") == {
        "packages": ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda12"],
        "reference": "datacenter-gpu-manager-4-core",
        "pin": ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda*", "datacenter-gpu-manager-4-config"],
        "remove": ["datacenter-gpu-manager-4-cuda*", "datacenter-gpu-manager", "datacenter-gpu-manager-config"],
        "cuda": "12",
        "reason": "driver 570.133.20 ships the CUDA 12 user-mode driver",
    }


def test_dcgm3_whole():
    assert dcgm_set("3.3.9", "535.216.03") == {
        "packages": ["datacenter-gpu-manager"],
        "reference": "datacenter-gpu-manager",
        "pin": ["datacenter-gpu-manager", "datacenter-gpu-manager-config"],
        "remove": ["datacenter-gpu-manager-4-*"],
        "cuda": "",
        "reason": "DCGM 3 is one package for every CUDA",
    }


def test_the_pre_turing_reason_names_every_old_gpu_once_in_order():
    assert dcgm_set("4.4.1", "580.95.05", gpus=["7.0", "9.0", "6.0", "7.0"])["reason"] == (
        "driver 580.95.05 ships the CUDA 13 user-mode driver; GPUs of compute capability 6.0, 7.0 (before Turing) "
        "take the cuda12 build (DCGM#254)"
    )


def test_cuda13_builds_start_at_4_4():
    assert dcgm_set("4.4.0", "580")["cuda"] == "13"
    assert dcgm_set("4.4", "580")["cuda"] == "13"
    with pytest.raises(DcgmSetError):
        dcgm_set("4.3.9", "580")


def test_flavour_derives_the_build_from_the_driver_unless_cuda_is_given():
    assert flavour("4.4.1", "570") == ("12", "driver 570 ships the CUDA 12 user-mode driver")
    assert flavour("4.4.1", cuda="13") == ("13", "CUDA 13 as dcgm_cuda sets")
    with pytest.raises(DcgmSetError, match=r"neither dcgm_cuda nor gpufleet_stack\.driver is set"):
        flavour("4.4.1")


def refusal(*args, **kwargs):
    with pytest.raises(DcgmSetError) as err:
        dcgm_set(*args, **kwargs)
    return str(err.value)


def test_refusals_whole():
    assert refusal("4.4.1") == (
        "the DCGM build follows the driver's CUDA major, and neither dcgm_cuda nor gpufleet_stack.driver is set: "
        'set dcgm_cuda to "12" or "13" (the "CUDA Version" nvidia-smi prints)'
    )
    assert refusal("4.4.1", "449.80") == (
        "dcgm_driver (gpufleet_stack.driver) 449.80 is older than any DCGM 4 build (R450 is the oldest, with "
        "CUDA 11): install a newer driver, or set dcgm_version to DCGM 3 (3.3.9)"
    )
    assert refusal("4.2.3", "580.95.05") == (
        "DCGM 4.2.3 has no CUDA 13 build (datacenter-gpu-manager-4-cuda13 exists from 4.4.0) and driver 580.95.05 "
        "needs one: set dcgm_version (gpufleet_stack.dcgm) to 4.4.1 or newer"
    )
    assert refusal("5.0.0", "580") == "dcgm_version '5.0.0' is not a DCGM 3 or 4 release (such as 4.4.1)"
    assert refusal("latest", "570") == "dcgm_version 'latest' is not a version such as 4.4.1"
    assert refusal("4.4.1", "r570") == (
        "dcgm_driver (gpufleet_stack.driver) 'r570' is not a version such as 570.133.20 or 580"
    )
