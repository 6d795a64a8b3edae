"""DCGM's package set (_controller/dcgm_set.py): the CUDA build the driver's branch and the GPUs call for, DCGM 3
and the other builds removed, and the engine's plan on recorded apt-cache madison and dpkg-query output."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.dcgm_set import DcgmSetError, dcgm_set
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt import plan as ap

URL = "http://127.0.0.1:8790/compute/cuda/repos/debian12/x86_64  Packages"
MADISON = (
    "\n".join(
        f" {name} | {ver} | {URL}"
        for ver in ("1:4.5.3-1", "1:4.4.1-1")
        for name in (
            "datacenter-gpu-manager-4-core",
            "datacenter-gpu-manager-4-cuda12",
            "datacenter-gpu-manager-4-cuda13",
        )
    )
    + f"\n datacenter-gpu-manager | 1:3.3.9 | {URL}"
)
OFFERS = ap.offers_by_package(ap.parse_madison(MADISON))


def dpkg(*rows):
    return ap.parse_dpkg("\n".join("\t".join(r) for r in rows))


def test_driver_branch_picks_the_build():
    assert dcgm_set("4.4.1", "570.133.20")["packages"] == [
        "datacenter-gpu-manager-4-core",
        "datacenter-gpu-manager-4-cuda12",
    ]
    found = dcgm_set("4.4.1", "580")
    assert found["packages"][1] == "datacenter-gpu-manager-4-cuda13"
    assert found["reason"] == "driver 580 ships the CUDA 13 user-mode driver"
    assert dcgm_set("4.4.1", "470.256.02")["cuda"] == "11"


def test_pre_turing_gpus_on_580_take_cuda12():
    found = dcgm_set("4.4.1", "580.95.05", gpus=["7.0", "9.0"])
    assert found["cuda"] == "12"
    assert "compute capability 7.0 (before Turing)" in found["reason"]
    assert dcgm_set("4.4.1", "580.95.05", gpus=["7.5"])["cuda"] == "13"
    # On a 570 driver the old GPUs change nothing: cuda12 already.
    assert dcgm_set("4.4.1", "570", gpus=["6.0"])["cuda"] == "12"


def test_dcgm_cuda_overrides_the_driver():
    found = dcgm_set("4.4.1", "580", cuda="12")
    assert found["cuda"] == "12"
    assert found["reason"] == "CUDA 12 as dcgm_cuda sets"


def test_refusals_name_the_variable_and_the_fix():
    with pytest.raises(DcgmSetError, match=r"no CUDA 13 build .* set dcgm_version \(gpufleet_stack.dcgm\) to 4.4.1"):
        dcgm_set("4.2.3", "580.95.05")
    with pytest.raises(DcgmSetError, match="set dcgm_cuda to"):
        dcgm_set("4.4.1")
    with pytest.raises(DcgmSetError, match="not a DCGM 3 or 4 release"):
        dcgm_set("2.4.8", "570")
    with pytest.raises(DcgmSetError, match="older than any DCGM 4 build"):
        dcgm_set("4.4.1", "418")
    with pytest.raises(DcgmSetError, match="not a version"):
        dcgm_set("latest", "570")


def test_dcgm3_is_one_package_and_removes_dcgm4():
    found = dcgm_set("3.3.9", "535")
    assert found["packages"] == ["datacenter-gpu-manager"]
    assert found["remove"] == ["datacenter-gpu-manager-4-*"]


def plan(found, installed, request="4.4.1"):
    return ap.plan(found["packages"], request, OFFERS, installed, reference=found["reference"], remove=found["remove"])


def test_fresh_install_matches_the_epoch_versions():
    result = plan(dcgm_set("4.4.1", "570"), {})
    assert result["install"] == ["datacenter-gpu-manager-4-core=1:4.4.1-1", "datacenter-gpu-manager-4-cuda12=1:4.4.1-1"]
    assert result["remove"] == []


def test_driver_moved_to_580_swaps_the_build_in_one_transaction():
    installed = dpkg(
        ("datacenter-gpu-manager-4-core", "1:4.4.1-1", "hi ", "datacenter-gpu-manager-4"),
        ("datacenter-gpu-manager-4-cuda12", "1:4.4.1-1", "hi ", "datacenter-gpu-manager-4"),
    )
    result = plan(dcgm_set("4.4.1", "580.95.05"), installed)
    assert result["install"] == ["datacenter-gpu-manager-4-cuda13=1:4.4.1-1"]
    assert result["remove"] == ["datacenter-gpu-manager-4-cuda12"]


def test_dcgm3_host_moves_to_dcgm4_and_loses_the_old_package():
    installed = dpkg(("datacenter-gpu-manager", "1:3.3.9", "ii ", "datacenter-gpu-manager"))
    result = plan(dcgm_set("4.5.3", "570"), installed, "4.5.3")
    assert result["install"] == ["datacenter-gpu-manager-4-core=1:4.5.3-1", "datacenter-gpu-manager-4-cuda12=1:4.5.3-1"]
    assert result["remove"] == ["datacenter-gpu-manager"]


def test_pin_selects_every_dcgm4_package():
    pin = dcgm_set("4.4.1", "570")["pin"]
    for name in ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13", "datacenter-gpu-manager-4-config"):
        assert ap.selected(pin, name, name)
    assert not ap.selected(pin, "datacenter-gpu-manager-exporter", "datacenter-gpu-manager-exporter")


def test_product_names_do_not_count_for_the_pre_turing_rule():
    assert dcgm_set("4.4.1", "580", gpus=["Tesla V100-SXM2-16GB", "9.0"])["cuda"] == "13"


def test_sm_targets_count_and_dcgm_cuda_13_needs_a_cuda13_build():
    assert dcgm_set("4.4.1", "580", gpus=["sm_70"])["cuda"] == "12"
    with pytest.raises(DcgmSetError, match=r"dcgm_cuda 13 needs one: set dcgm_version \(gpufleet_stack.dcgm\)"):
        dcgm_set("4.2.3", "580", cuda="13")
    with pytest.raises(DcgmSetError, match=r"dcgm_driver \(gpufleet_stack.driver\) 'latest' is not a version such as"):
        dcgm_set("4.4.1", "latest")
