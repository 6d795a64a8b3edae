"""What the nvidia_driver role leaves out on a host, and whether it rebuilds the initramfs (_controller/driver_host)."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.driver_host import leaves_out

NOUVEAU = "/etc/modprobe.d/gpufleet-blacklist-nouveau.conf"
OWN = {"owns_kernels": True, "initramfs_tool": True, "kernel_targets": ["6.1.0-41-amd64"]}
SETTINGS = {"blacklist_nouveau": True, "dkms": True, "changed_files": [NOUVEAU], "nouveau_file": NOUVEAU}


def test_a_server_that_changed_its_blacklist_rebuilds_and_skips_nothing():
    assert leaves_out(OWN, in_container=False, **SETTINGS) == {"skipped": [], "initramfs_rebuild": True}


@pytest.mark.parametrize(
    ("state", "settings"),
    [
        (OWN, {"changed_files": []}),  # the blacklist is as it was
        (OWN, {"changed_files": ["/etc/systemd/system/nvidia-persistenced.service.d/gpufleet.conf"]}),
        (OWN, {"blacklist_nouveau": False}),
        (dict(OWN, initramfs_tool=False), {}),  # no update-initramfs: said, not run
        (dict(OWN, owns_kernels=False), {}),  # a container without kernels
        ({}, {}),  # driver_state did not run (a stage chosen by tags)
        (None, {}),
    ],
)
def test_no_rebuild_unless_the_blacklist_changed_on_a_host_that_owns_its_kernels_and_has_the_tool(state, settings):
    assert leaves_out(state, in_container=False, **dict(SETTINGS, **settings))["initramfs_rebuild"] is False


def test_a_container_says_why_once_with_or_without_kernels_of_its_own():
    (bare,) = leaves_out({"owns_kernels": False}, in_container=True, virtualization="docker", **SETTINGS)["skipped"]
    assert bare.startswith("this host is a container (docker) and holds no kernel of its own")
    (kept,) = leaves_out(OWN, in_container=True, virtualization="docker", **SETTINGS)["skipped"]
    assert "holds kernels of its own (6.1.0-41-amd64 boots next)" in kept


def test_dkms_off_and_a_missing_initramfs_tool_are_said_only_where_the_kernels_are_the_hosts():
    no_dkms = {**SETTINGS, "dkms": False}
    found = leaves_out(dict(OWN, initramfs_tool=False), in_container=False, **no_dkms)
    assert found["skipped"] == [
        "DKMS and headers are not installed: nvidia_driver_dkms is false",
        "the initramfs is not rebuilt after blacklisting nouveau: update-initramfs is not installed, so the "
        "blacklist applies from the next boot only if nouveau is not loaded from an initramfs",
    ]
    bare = leaves_out({"owns_kernels": False}, in_container=True, **no_dkms)["skipped"]
    assert len(bare) == 1


def test_imex_without_nodes_says_why_and_given_or_found_nodes_silence_it():
    domain = {"domain": None, "nodes": [], "why": "gb-1 reports no NVLink domain"}
    found = leaves_out(OWN, in_container=False, imex=True, imex_domain=domain)["skipped"]
    assert found == ["IMEX is installed but its nodes file is not written: gb-1 reports no NVLink domain"]
    assert leaves_out(OWN, in_container=False, imex=True, imex_nodes=["10.0.0.1"], imex_domain=domain)["skipped"] == []
    found = dict(domain, nodes=["10.0.0.1", "10.0.0.2"])
    assert leaves_out(OWN, in_container=False, imex=True, imex_domain=found)["skipped"] == []
    assert leaves_out(OWN, in_container=False, imex=False, imex_domain=domain)["skipped"] == []
