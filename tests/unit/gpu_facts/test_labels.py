"""GPU Feature Discovery label names and value rules."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import labels
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.names import (
    mig_profile_from_name,
    throttle_reason_names,
)


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"),
        ("Tesla T4", "Tesla-T4"),
        ("NVIDIA GeForce RTX 4090", "NVIDIA-GeForce-RTX-4090"),
        ("NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"),
        ("Quadro RTX 6000 (rev) ", "Quadro-RTX-6000-rev"),
    ],
)
def test_sanitise_product(name, label):
    assert labels.sanitise(name) == label


@pytest.mark.parametrize(
    ("cc", "family"),
    [
        ("7.0", "volta"),
        ("7.5", "turing"),
        ("8.0", "ampere"),
        ("8.6", "ampere"),
        ("8.9", "ada-lovelace"),
        ("9.0", "hopper"),
        ("10.0", "blackwell"),
        ("4.0", "undefined"),
        (None, None),
    ],
)
def test_gpu_family(cc, family):
    assert labels.gpu_family(cc) == family


def test_gfd_labels_for_a100_host():
    gpus = [
        {
            "name": "NVIDIA A100-SXM4-40GB",
            "memory_total_mib": 40960,
            "compute_capability": "8.0",
            "mig": {"current": False},
        }
    ] * 8
    got = labels.gfd_labels("570.133.20", "12.8", gpus, "AS -4124GO-NART")
    assert got["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert got["nvidia.com/gpu.count"] == "8"
    assert got["nvidia.com/gpu.memory"] == "40960"
    assert got["nvidia.com/gpu.family"] == "ampere"
    assert (got["nvidia.com/gpu.compute.major"], got["nvidia.com/gpu.compute.minor"]) == ("8", "0")
    assert (got["nvidia.com/cuda.driver.major"], got["nvidia.com/cuda.driver.minor"]) == ("570", "133")
    assert got["nvidia.com/cuda.driver.rev"] == "20"
    assert got["nvidia.com/cuda.driver-version.full"] == "570.133.20"
    assert (got["nvidia.com/cuda.runtime.major"], got["nvidia.com/cuda.runtime.minor"]) == ("12", "8")
    assert got["nvidia.com/mig.capable"] == "true"
    assert got["nvidia.com/gpu.machine"] == "AS--4124GO-NART"  # GFD turns each space into "-"
    assert all(isinstance(v, str) for v in got.values())


def test_gfd_labels_consumer_card_not_mig_capable():
    got = labels.gfd_labels("550.54.14", "12.4", [{"name": "NVIDIA GeForce RTX 4090", "mig": {"current": None}}])
    assert got["nvidia.com/mig.capable"] == "false"
    assert "nvidia.com/gpu.memory" not in got


def test_gfd_labels_without_gpus():
    assert labels.gfd_labels(None, None, []) == {}


def test_throttle_reason_names():
    assert throttle_reason_names(0x1 | 0x40) == ["gpu_idle", "hw_thermal_slowdown"]
    assert throttle_reason_names(0) == []
    assert throttle_reason_names(None) is None


def test_mig_profile_from_name():
    assert mig_profile_from_name("NVIDIA A100-SXM4-40GB MIG 3g.20gb") == "3g.20gb"
    assert mig_profile_from_name("NVIDIA A100-SXM4-40GB") is None
