"""The driver's package set (_controller/driver_set.py): compute-only by default, Fabric Manager and companions
named as the branch names them, the other flavour and NVIDIA's pinning packages removed, Debian's set for distro."""

import fnmatch

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.driver_set import driver_set, fabric_wanted


def test_compute_only_open_570_with_fabric_manager():
    spec = driver_set("570.133.20", flavor="open", fabricmanager=True)
    assert spec["packages"] == [
        "nvidia-driver-cuda",
        "nvidia-kernel-open-dkms",
        "nvidia-fabricmanager-570",
        "libnvidia-nscq-570",
        "libnvsdm-570",
    ]
    assert "src:nvidia-graphics-drivers" in spec["pin"] and "src:fabricmanager" in spec["pin"]
    assert not any("*" in s for s in spec["pin"])  # never src:*nvidia*: it would exclude Debian's contrib helpers
    for name in ("nvidia-kernel-dkms", "cuda-drivers-570", "nvidia-driver-pinning-580", "nvidia-fabricmanager"):
        assert any(fnmatch.fnmatchcase(name, s) for s in spec["remove"]), name


def test_580_names_fabric_manager_without_the_branch():
    spec = driver_set("580", flavor="proprietary", fabricmanager=True, imex=True)
    assert spec["packages"][:2] == ["nvidia-driver-cuda", "nvidia-kernel-dkms"]
    assert spec["fabric"] == ["nvidia-fabricmanager", "libnvidia-nscq", "libnvsdm", "nvidia-imex"]
    assert any(fnmatch.fnmatchcase("nvidia-fabricmanager-570", s) for s in spec["remove"])
    assert any(fnmatch.fnmatchcase("nvidia-kernel-open-dkms", s) for s in spec["remove"])


def test_full_scope_adds_the_branch_metapackages_and_550_has_no_nvsdm():
    spec = driver_set("550.127.08", flavor="open", scope="full", fabricmanager=True)
    assert spec["packages"][2:4] == ["nvidia-open", "nvidia-open-550"]
    assert spec["fabric"] == ["nvidia-fabricmanager-550", "libnvidia-nscq-550"]


def test_distro_channel_is_debians_set_and_ignores_nvidias_repository():
    spec = driver_set("550.163.01", channel="distro", packages=["nvidia-smi", "libnvidia-ml1"], kernel=True)
    assert spec["packages"] == ["nvidia-smi", "libnvidia-ml1", "nvidia-open-kernel-dkms"]
    assert (spec["same_version"], spec["series"], spec["pin_version"]) == (True, None, None)
    assert spec["exclude_urls"] == ["/compute/cuda/repos/"] and spec["exclude_origins"] == []


def test_imex_comes_without_fabric_manager_and_only_where_the_driver_makes_its_channel():
    """A GB200 tray needs IMEX but no Fabric Manager of its own; IMEX's channel0 needs NVreg_CreateImexChannel0,
    which the driver has from 555."""
    spec = driver_set("580.105.08", imex=True)
    assert spec["packages"] == ["nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-imex"]
    assert spec["fabric"] == ["nvidia-imex"]
    assert driver_set("570.133.20", imex=True)["fabric"] == ["nvidia-imex-570"]
    with pytest.raises(ValueError, match=r"IMEX with driver branch 550: .* from 555 .* nvidia_driver_imex=false"):
        driver_set("550.127.08", imex=True)


@pytest.mark.parametrize(
    ("facts", "settings", "wanted"),
    [
        ({"fabricmanager_required": True, "nvlsm_required": True}, {}, (True, True, False)),  # HGX B200
        ({"imex_required": True}, {}, (False, False, True)),  # GB200 tray
        ({"fabricmanager_required": True}, {"fabricmanager": False}, (False, False, False)),
        ({}, {"fabricmanager": "true", "nvlsm": "yes", "imex": True}, (True, True, True)),
        ({}, {"fabricmanager": "AUTO"}, (False, False, False)),
        (None, {}, (False, False, False)),  # no facts: nothing auto
        ({"imex_required": "yes"}, {}, (False, False, False)),  # only a real true from gpu_facts
    ],
)
def test_which_fabric_parts_a_node_gets(facts, settings, wanted):
    found = fabric_wanted(facts, **settings)
    assert (found["fabricmanager"], found["nvlsm"], found["imex"]) == wanted
