"""The driver's package set (_controller/driver_set.py) whole, as the nvidia_packages engine receives it: every source
pinned and held, every package removed in the same transaction, per channel, flavour and scope; and the boundaries of
the branches that rename or refuse a part."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.driver_set import driver_set, fabric_wanted

# NVIDIA's driver set by source package: the pin and the holds name each one (never a wildcard).
NVIDIA_SOURCES = [
    "src:nvidia-graphics-drivers",
    "src:nvidia-open-gpu-kernel-modules",
    "src:nvidia-open",
    "src:cuda-drivers",
    "src:nvidia-persistenced",
    "src:nvidia-modprobe",
    "src:nvidia-settings",
    "src:nvidia-xconfig",
    "src:fabricmanager",
    "src:libnvidia-nscq",
    "src:libnvsdm",
    "src:nvidia-imex",
]
# Fabric Manager and companions of any branch, removed unless wanted (the engine keeps what it installs).
FABRIC_REMOVED = [
    "nvidia-fabricmanager",
    "nvidia-fabricmanager-[0-9]*",
    "nvidia-fabricmanager-dev",
    "nvidia-fabricmanager-dev-[0-9]*",
    "libnvidia-nscq",
    "libnvidia-nscq-[0-9]*",
    "libnvsdm",
    "libnvsdm-[0-9]*",
    "nvidia-imex",
    "nvidia-imex-[0-9]*",
]


def test_the_default_set_is_compute_only_open_from_nvidias_repository():
    assert driver_set("570.133.20") == {
        "branch": "570",
        "packages": ["nvidia-driver-cuda", "nvidia-kernel-open-dkms"],
        "reference": "nvidia-driver-cuda",
        "pin": NVIDIA_SOURCES,
        "members": NVIDIA_SOURCES,
        # Compute scope keeps no desktop metapackage of either flavour, of any branch.
        "remove": [
            "nvidia-kernel-dkms",
            "cuda-drivers",
            "cuda-drivers-[0-9]*",
            "nvidia-driver-pinning-*",
            "cuda-drivers-fabricmanager*",
            *FABRIC_REMOVED,
        ],
        "same_version": True,
        "series": None,
        "pin_version": None,
        "exclude_origins": ["Debian", "Ubuntu"],
        "exclude_urls": [],
        "fabric": [],
    }


def test_full_proprietary_scope_installs_its_branch_metapackage_and_removes_other_branches():
    spec = driver_set("570.133.20", flavor="proprietary", scope="full")
    assert spec["packages"] == ["nvidia-driver-cuda", "nvidia-kernel-dkms", "cuda-drivers", "cuda-drivers-570"]
    assert spec["remove"] == [
        "nvidia-kernel-open-dkms",
        "nvidia-open",
        "nvidia-open-[0-9]*",
        "nvidia-driver-pinning-*",
        "cuda-drivers-fabricmanager*",
        "cuda-drivers-[0-9]*",
        *FABRIC_REMOVED,
    ]


def test_debians_proprietary_driver_with_its_kernel_module():
    spec = driver_set(
        "550.163.01", flavor="proprietary", channel="distro", packages=["nvidia-smi", "libcuda1"], kernel=True
    )
    assert spec == {
        "branch": "550",
        "packages": ["nvidia-smi", "libcuda1", "nvidia-kernel-dkms"],
        "reference": "libnvidia-ml1",
        "pin": ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules"],
        "members": ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules"],
        "remove": ["nvidia-open-kernel-dkms"],
        "same_version": True,
        "series": None,
        "pin_version": None,
        "exclude_origins": [],
        "exclude_urls": ["/compute/cuda/repos/"],
        "fabric": [],
    }


def test_debians_driver_without_the_kernel_module_is_the_packages_given():
    assert driver_set("550.163.01", channel="distro", packages=["libnvidia-ml1"])["packages"] == ["libnvidia-ml1"]
    assert driver_set("550.163.01", channel="distro")["packages"] == []


def test_imex_starts_at_the_first_branch_that_makes_its_channel():
    assert driver_set("555.42.02", imex=True)["fabric"] == ["nvidia-imex-555"]
    with pytest.raises(ValueError, match=r"IMEX with driver branch 554: "):
        driver_set("554.1", imex=True)


NEEDS_ALL = {"fabricmanager_required": True, "nvlsm_required": True, "imex_required": True}


@pytest.mark.parametrize(
    ("facts", "settings", "wanted"),
    [
        ({}, {"fabricmanager": "on", "nvlsm": "1", "imex": 1}, True),
        ({}, {"fabricmanager": " On ", "nvlsm": "Yes", "imex": "TRUE"}, True),
        (NEEDS_ALL, {"fabricmanager": "off", "nvlsm": "0", "imex": "no"}, False),
    ],
)
def test_a_forced_setting_in_each_spelling_beats_what_the_node_needs(facts, settings, wanted):
    assert fabric_wanted(facts, **settings) == {"fabricmanager": wanted, "nvlsm": wanted, "imex": wanted}
