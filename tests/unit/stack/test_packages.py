"""Which installed packages carry which stack component (_node/stack/packages.py), by the names NVIDIA's, Debian's,
Ubuntu's and RHEL's repositories give them: each pattern, its order, and the kernel-module flavour."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import packages as pk


@pytest.mark.parametrize(
    ("name", "component"),
    [
        ("nvidia-driver-570-server-open", "driver"),  # Ubuntu
        ("nvidia-driver", "driver"),  # Debian
        ("nvidia-open-570", "driver"),  # NVIDIA's CUDA repository
        ("cuda-drivers-570", "driver"),
        ("nvidia-kernel-open-dkms", "driver"),  # Debian, open
        ("nvidia-kernel-dkms", "driver"),
        ("libnvidia-compute-570", "driver"),
        ("nvidia-driver-cuda", "driver"),  # RHEL
        ("nvidia-driver-libs", "driver"),
        ("kmod-nvidia-open-dkms", "driver"),
        ("nvidia-fabricmanager-570", "fabricmanager"),
        ("nvidia-fabric-manager", "fabricmanager"),
        ("cuda-drivers-fabricmanager-570", "fabricmanager"),
        ("libcudnn9-cuda-12", "cudnn"),
        ("cudnn9-cuda-12", "cudnn"),
        ("libcudnn9-dev-cuda-12", "cudnn"),
        ("nvidia-cudnn", "cudnn"),
        ("libnccl2", "nccl"),
        ("libnccl-devel", "nccl"),
        ("nvidia-container-toolkit-base", "container_toolkit"),
        ("datacenter-gpu-manager-4-core", "dcgm"),
        ("datacenter-gpu-manager", "dcgm"),
        ("cuda-toolkit-12-8", "cuda_toolkit"),
        ("nvidia-cuda-toolkit", "cuda_toolkit"),
        ("cuda-toolkit", "cuda_toolkit"),
    ],
)
def test_each_name_is_its_component(name, component):
    found = pk.classify({name: "1.2.3-1"})
    assert list(found) == [component] and found[component][0]["package"] == name


@pytest.mark.parametrize(
    "name",
    ["nvidia-settings", "libnvidia-compute", "nvidia-cudnn-frontend", "libnccl3", "datacenter-gpu-manager-4-cuda12"],
)
def test_names_beside_them_are_none(name):
    assert pk.classify({name: "1.0-1"}) == {}


def test_the_first_pattern_that_matches_gives_the_version_and_each_package_counts_once():
    found = pk.classify(
        {
            "datacenter-gpu-manager": "1:3.3.9",
            "datacenter-gpu-manager-4-core": "1:4.2.3-1",
            "libcudnn9-cuda-12": "9.8.0.87-1",
            "libcudnn9-dev-cuda-12": "9.8.0.87-1",
            "libnccl2": "2.26.2-1+cuda12.8",
            "cuda-toolkit-12-8": "12.8.1-1",
            "cuda-toolkit": "12.8.1-1",
        }
    )
    assert [f["package"] for f in found["dcgm"]] == ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager"]
    assert found["dcgm"][0]["version"] == "4.2.3"
    assert [f["package"] for f in found["cudnn"]] == ["libcudnn9-cuda-12", "libcudnn9-dev-cuda-12"]
    assert found["cudnn"][0] == {
        "package": "libcudnn9-cuda-12",
        "version": "9.8.0.87",
        "raw_version": "9.8.0.87-1",
        "cuda": "12",
    }
    assert found["nccl"] == [
        {"package": "libnccl2", "version": "2.26.2", "raw_version": "2.26.2-1+cuda12.8", "cuda": "12.8"}
    ]
    assert [f["package"] for f in found["cuda_toolkit"]] == ["cuda-toolkit-12-8", "cuda-toolkit"]
    assert found["cuda_toolkit"][0]["cuda"] is None


@pytest.mark.parametrize(
    ("names", "flavor"),
    [
        (["nvidia-open"], "open"),
        (["nvidia-open-570"], "open"),
        (["nvidia-driver-570-open"], "open"),
        (["nvidia-kernel-open-dkms"], "open"),
        (["kmod-nvidia-open-dkms"], "open"),
        (["cuda-drivers-570"], "proprietary"),
        (["cuda-drivers"], "proprietary"),
        (["nvidia-kernel-dkms"], "proprietary"),
        (["nvidia-driver"], "proprietary"),
        (["nvidia-driver-570"], None),  # Ubuntu's closed driver says nothing of its flavour by name
        (["nvidia-openness"], None),
        (["libnvidia-compute-570"], None),
        ([], None),
    ],
)
def test_driver_flavor(names, flavor):
    assert pk.driver_flavor(names) == flavor
