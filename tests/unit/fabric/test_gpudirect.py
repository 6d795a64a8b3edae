"""nvidia-peermem (GPUDirect RDMA) through gpufleet.stack.gpudirect_rdma on a node's sysfs: the recorded RDMA trees
of fixtures/, the driver loaded or not, a stand-in modprobe that records its calls."""

from pathlib import Path

import pytest

from .sysfs_tree import build

FIXTURES = Path(__file__).with_name("fixtures")


@pytest.fixture
def gpudirect(exec_module, fake_modprobe):
    """call(root, args, modprobe_rc=0) -> (result, modules-load file, modprobe's calls): gpufleet.stack.gpudirect_rdma
    with a stand-in modprobe; by default on a kernel whose IB core has the peer-memory API (MLNX_OFED's), the inbox
    one asked for by name."""

    def call(root, args, modprobe_rc=0):
        calls = fake_modprobe(root, modprobe_rc, "modprobe: FATAL: Module nvidia-peermem not found.")
        path = root / "modules-load.d" / "gpufleet-nvidia-peermem.conf"
        args = {"modules_load_file": str(path), "sysfs_root": str(root), "modules_root": str(FIXTURES / "modules"),
                "kernel": "6.1.0-50-amd64-mofed", **args}  # fmt: skip
        return exec_module("gpudirect_rdma", args, root, root / "bin"), path, calls()

    return call


def test_peermem_is_loaded_at_boot_and_now_where_an_rdma_device_and_the_driver_are(tmp_path, gpudirect):
    root = build(FIXTURES / "roce-connectx6-show_gids.sysfs", tmp_path)
    (root / "sys/module/nvidia").mkdir(parents=True)
    result, path, calls = gpudirect(root, {"header": "# managed"})
    assert (result["changed"], result["wanted"], result["loaded"]) == (True, True, True)
    assert result["reason"] == "RDMA devices mlx5_0, mlx5_1; nvidia-peermem loaded now"
    assert path.read_text() == "# managed\nnvidia-peermem\n" and calls == ["nvidia-peermem"]
    (root / "sys/module/nvidia_peermem").mkdir()
    again, _path, calls = gpudirect(root, {"header": "# managed"})
    assert (again["changed"], again["loaded"]) == (False, True) and calls == ["nvidia-peermem"]  # no second modprobe


def test_without_the_driver_it_waits_for_the_next_boot(tmp_path, gpudirect):
    root = build(FIXTURES / "hwloc-connectx3-ib.sysfs", tmp_path)
    result, path, calls = gpudirect(root, {})
    assert (result["wanted"], result["loaded"], calls) == (True, False, [])
    assert result["reason"].endswith("the driver is not loaded: nvidia-peermem loads with it at the next boot")
    assert path.read_text() == "nvidia-peermem\n"


def test_a_peermem_that_will_not_load_fails_with_modprobes_message(tmp_path, gpudirect):
    root = build(FIXTURES / "hwloc-connectx3-ib.sysfs", tmp_path)
    (root / "sys/module/nvidia").mkdir(parents=True)
    result, _path, _calls = gpudirect(root, {}, modprobe_rc=1)
    assert result["failed"] and "Module nvidia-peermem not found" in result["msg"] and "ib_core" in result["msg"]


def test_no_rdma_device_no_peermem_and_our_file_goes(tmp_path, gpudirect):
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    path = tmp_path / "modules-load.d" / "gpufleet-nvidia-peermem.conf"
    path.parent.mkdir()
    path.write_text("nvidia-peermem\n")
    result, path, calls = gpudirect(tmp_path, {})
    assert (result["changed"], result["wanted"], calls) == (True, False, [])
    assert result["reason"] == "no RDMA device to other nodes in /sys/class/infiniband" and not path.exists()
    forced, path, calls = gpudirect(tmp_path, {"state": "present"})
    assert (forced["wanted"], calls, path.read_text()) == (True, ["nvidia-peermem"], "nvidia-peermem\n")


def test_an_inbox_ib_core_has_no_peer_memory_api_so_no_peermem(tmp_path, gpudirect):
    """Debian's own kernel (its modules.symbols recorded): nvidia-peermem would fail to load (its init returns EINVAL
    without the peer-memory API), so auto does not ask for it and says DMA-BUF is the way; forced, it is written."""
    root = build(FIXTURES / "roce-connectx6-show_gids.sysfs", tmp_path)
    (root / "sys/module/nvidia").mkdir(parents=True)
    result, path, calls = gpudirect(root, {"kernel": "6.1.0-50-amd64"})
    assert (result["wanted"], result["peer_memory_api"], result["dmabuf"], calls) == (False, False, True, [])
    assert result["reason"] == (
        "RDMA devices mlx5_0, mlx5_1; but kernel 6.1.0-50-amd64's IB core has no peer-memory API "
        "(ib_register_peer_memory_client: an inbox RDMA stack, not MLNX_OFED or DOCA-OFED), so nvidia-peermem cannot "
        "load (its init returns EINVAL); GPUDirect RDMA goes through DMA-BUF (open kernel modules)"
    )
    assert not path.exists()
    unknown, _path, _calls = gpudirect(root, {"kernel": "6.99.0-unknown"})  # symbols unreadable: as before
    assert (unknown["wanted"], unknown["peer_memory_api"]) == (True, None)
