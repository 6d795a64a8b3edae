"""NCCL's network settings from the fabric, held to NCCL's documented list syntax (NVIDIA/nccl
docs/userguide/source/env.rst: "^" excludes, "=" matches exactly, else prefixes; HCA entries may name a port) and
run through gpufleet.stack.nccl_conf on a node's sysfs: the RoCE card of fixtures/roce-connectx6-show_gids.sysfs and
the real ConnectX-3 InfiniBand HCA, with an H100 beside it."""

import json
from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import devices as fab
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import nccl as nn

from .sysfs_tree import build

FIXTURES = Path(__file__).with_name("fixtures")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("mlx5_0,mlx5_1", (False, False, [("mlx5_0", None), ("mlx5_1", None)])),
        ("=mlx5_0:1,mlx5_1:1", (False, True, [("mlx5_0", 1), ("mlx5_1", 1)])),
        ("^=mlx5_1", (True, True, [("mlx5_1", None)])),
        ("^docker,lo", (True, False, [("docker", None), ("lo", None)])),
        ("mlx5_0:1:0:1", (False, False, [("mlx5_0", 1)])),  # port, rail, plane (NCCL 2.27)
        ("", (False, False, [])),
    ],
)
def test_nccls_list_syntax(text, parsed):
    assert nn.parse_list(text) == parsed


def test_prefix_exact_and_port_matching():
    have = [("mlx5_0", 1), ("mlx5_10", 1)]
    assert nn.unmatched("mlx5_1", have) == []  # the prefix trap NCCL documents: mlx5_1 takes mlx5_10
    assert nn.unmatched("=mlx5_1", have) == [("mlx5_1", None)]
    assert nn.unmatched("=mlx5_0:2", have) == [("mlx5_0", 2)]
    assert nn.unmatched("^mlx5_7", have) == []  # excluding what is absent harms nothing


@pytest.fixture
def roce_node(tmp_path):
    root = build(FIXTURES / "roce-connectx6-show_gids.sysfs", tmp_path)
    return root, fab.read_rdma(str(root))


def test_roce_settings_name_the_active_port_and_its_v2_ipv4_gid(roce_node):
    _root, devices = roce_node
    settings, notes = nn.derive(devices, peermem=False, socket_ifname="ens1f0")
    assert settings == {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "=ens1f0", "NCCL_IB_GID_INDEX": "5"}
    assert notes == ["nvidia-peermem is not loaded: no GPUDirect RDMA, NCCL_NET_GDR_LEVEL not set"]


def test_gid_indexes_that_differ_are_left_to_nccl(roce_node):
    _root, devices = roce_node
    other = json.loads(json.dumps(devices[0]))
    other["name"] = "mlx5_2"
    for gid in other["ports"][0]["gids"]:
        gid["index"] += 2
    index, why = nn.roce_gid_index([devices[0], other])
    assert index is None and "differs between ports" in why
    no_v2 = json.loads(json.dumps(devices[0]))
    no_v2["ports"][0]["gids"] = [g for g in no_v2["ports"][0]["gids"] if g["type"] != "RoCE v2"]
    assert nn.roce_gid_index([no_v2]) == (
        None,
        "no RoCE v2 GID with an IPv4 address on mlx5_0:1: NCCL chooses (2.21 and later)",
    )


def test_gdr_level_is_the_farthest_nearest_hca_capped_at_phb():
    distances = {"gpu0": {"mlx5_0": "PIX", "mlx5_1": "SYS"}, "gpu1": {"mlx5_0": "SYS", "mlx5_1": "PXB"}}
    assert nn.gdr_level(distances, ["mlx5_0", "mlx5_1"]) == ("PXB", "")
    assert nn.gdr_level({"gpu0": {"mlx5_0": "NODE"}}, ["mlx5_0"]) == (
        "PHB",
        "GPUs gpu0 have no HCA within PHB: they stage through host memory",
    )
    assert nn.gdr_level({}, ["mlx5_0"])[0] is None


def test_no_active_port_derives_nothing():
    assert nn.derive([], peermem=True) == (
        {},
        ["no active RDMA port: NCCL's network settings are left to NCCL (sockets)"],
    )


def test_the_users_settings_are_checked_against_the_node(roce_node, nccl_conf):
    _root, devices = roce_node
    assert nn.problems({"NCCL_IB_HCA": "mlx5", "NCCL_SOCKET_IFNAME": "^docker,lo"}, devices, ["ens1f0", "lo"]) == []
    assert nn.problems({"NCCL_IB_HCA": "=mlx5_0:1,mlx5_4", "NCCL_SOCKET_IFNAME": "ib"}, devices, ["ens1f0", "lo"]) == [
        "NCCL_IB_HCA==mlx5_0:1,mlx5_4 names mlx5_4, which is no RDMA device of this node (it has: mlx5_0, mlx5_1)",
        "NCCL_SOCKET_IFNAME=ib names ib, which is no network interface of this node (it has: ens1f0, lo)",
    ]


def node(root, gpu=True, peermem=False, route="ens1f0"):
    """The rest of a node's sysfs and procfs around a fixture: interfaces, an H100, nvidia-peermem, the default
    route."""
    for name in ("ens1f0", "ens1f1", "ib0", "lo"):
        (root / "sys/class/net" / name).mkdir(parents=True, exist_ok=True)
    if gpu:
        dev = root / "sys/devices/pci0000:00/0000:00:03.0/0000:3c:00.0"
        dev.mkdir(parents=True)
        for name, value in {"vendor": "0x10de", "device": "0x2330", "class": "0x030200", "numa_node": "0"}.items():
            (dev / name).write_text(value + "\n")
        (root / "sys/bus/pci/devices").mkdir(parents=True)
        (root / "sys/bus/pci/devices/0000:3c:00.0").symlink_to(dev)
    if peermem:
        (root / "sys/module/nvidia_peermem").mkdir(parents=True)
    (root / "proc/net").mkdir(parents=True)
    (root / "proc/net/route").write_text(
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "ens1f1\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
        f"{route}\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
    )
    return root


@pytest.fixture
def nccl_conf(exec_module):
    """call(root, args): gpufleet.stack.nccl_conf on root's /sys and /proc, writing root/nccl.conf."""

    def call(root, args):
        paths = {"path": str(root / "nccl.conf"), "sysfs_root": str(root), "procfs_root": str(root)}
        return exec_module("nccl_conf", {**paths, **args}, root)

    return call


def test_the_module_merges_the_fabric_with_the_users_settings_which_win(tmp_path, nccl_conf):
    root = node(build(FIXTURES / "roce-connectx6-show_gids.sysfs", tmp_path), peermem=True)
    result = nccl_conf(root, {"settings": {"NCCL_DEBUG": "WARN", "NCCL_IB_GID_INDEX": "3"}, "header": "# managed"})
    assert result["fabric"] == "roce"
    assert result["derived"] == {
        "NCCL_IB_HCA": "=mlx5_0:1",
        "NCCL_SOCKET_IFNAME": "=ens1f0",  # the default route's
        "NCCL_IB_GID_INDEX": "5",
        "NCCL_NET_GDR_LEVEL": "PHB",  # the H100 reaches mlx5_0 through the root complex
    }
    assert (root / "nccl.conf").read_text() == (
        "# managed\nNCCL_DEBUG=WARN\nNCCL_IB_GID_INDEX=3\nNCCL_IB_HCA==mlx5_0:1\nNCCL_NET_GDR_LEVEL=PHB\n"
        "NCCL_SOCKET_IFNAME==ens1f0\n"
    )
    again = nccl_conf(root, {"settings": {"NCCL_DEBUG": "WARN", "NCCL_IB_GID_INDEX": "3"}, "header": "# managed"})
    assert again["changed"] is False


def test_an_infiniband_node_without_peermem_gets_no_gdr_level(tmp_path, nccl_conf):
    root = node(build(FIXTURES / "hwloc-connectx3-ib.sysfs", tmp_path), route="eth0")
    result = nccl_conf(root, {"settings": {}, "socket_ifname": "ib0"})
    assert result["derived"] == {"NCCL_IB_HCA": "=mlx4_0:1", "NCCL_SOCKET_IFNAME": "=ib0"}
    assert result["notes"] == ["nvidia-peermem is not loaded: no GPUDirect RDMA, NCCL_NET_GDR_LEVEL not set"]


def test_a_node_without_rdma_keeps_the_users_file_and_an_empty_one_is_removed(tmp_path, nccl_conf):
    root = node(tmp_path)
    result = nccl_conf(root, {"settings": {"NCCL_DEBUG": "WARN"}})
    assert (result["fabric"], result["derived"], (root / "nccl.conf").read_text()) == ("none", {}, "NCCL_DEBUG=WARN\n")
    assert nccl_conf(root, {"settings": {}})["changed"] is True
    assert not (root / "nccl.conf").exists()


def test_a_setting_naming_what_the_node_lacks_is_refused_before_writing(tmp_path, nccl_conf):
    root = node(build(FIXTURES / "roce-connectx6-show_gids.sysfs", tmp_path))
    result = nccl_conf(root, {"settings": {"NCCL_IB_HCA": "=mlx5_3"}})
    assert result["failed"]
    assert (
        "NCCL_IB_HCA==mlx5_3 names mlx5_3, which is no RDMA device of this node (it has: mlx5_0, mlx5_1)"
        in result["msg"]
    )
    assert not (root / "nccl.conf").exists()


def test_the_nvswitch_bridge_is_never_an_hca_for_nccl(tmp_path):
    """HGX B200: the baseboard's bridge functions have active InfiniBand ports, but they lead to the NVSwitches."""
    devices = fab.read_rdma(str(build(FIXTURES / "hgx-b200-nvswitch-bridge.sysfs", tmp_path)))
    settings, notes = nn.derive(devices, peermem=False)
    assert settings == {"NCCL_IB_HCA": "=mlx5_0:1"}
    assert notes[0] == "mlx5_10, mlx5_11, mlx5_8, mlx5_9: the NVSwitch management bridge, not an HCA for NCCL"


def test_naming_the_nvswitch_bridge_as_nccls_hca_is_refused(tmp_path):
    devices = fab.read_rdma(str(build(FIXTURES / "hgx-b200-nvswitch-bridge.sysfs", tmp_path)))
    (wrong,) = nn.problems({"NCCL_IB_HCA": "=mlx5_8:1"}, devices, [])
    assert wrong == (
        "NCCL_IB_HCA==mlx5_8:1 names mlx5_8:1, which is no RDMA device of this node (it has: mlx5_0; mlx5_10, "
        "mlx5_11, mlx5_8, mlx5_9: the NVSwitch management bridge, not an HCA)"
    )
    assert nn.problems({"NCCL_IB_HCA": "=mlx5_0:1"}, devices, []) == []
    assert fab.interfaces(str(tmp_path / "absent")) == []
