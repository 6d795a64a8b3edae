"""Fabric facts from sysfs: a real ConnectX-3 InfiniBand HCA's /sys recorded by hwloc's developers, and a RoCE port
whose GID table a real ConnectX-6 showed through show_gids (the rest in the kernel's formats; see each fixture's
header); GPU-to-NIC distances as nvidia-smi topo names them."""

import itertools
import shutil
from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import devices as fab

from .sysfs_tree import build

FIXTURES = Path(__file__).with_name("fixtures")


@pytest.fixture
def ib(tmp_path):
    return fab.read_rdma(str(build(FIXTURES / "hwloc-connectx3-ib.sysfs", tmp_path)))


@pytest.fixture
def roce(tmp_path):
    return fab.read_rdma(str(build(FIXTURES / "roce-connectx6-show_gids.sysfs", tmp_path)))


def test_a_real_infiniband_hca_is_read_as_the_kernel_wrote_it(ib):
    (dev,) = ib
    assert {k: dev[k] for k in ("name", "node_type", "fw_ver", "hca_type", "board_id", "node_guid")} == {
        "name": "mlx4_0",
        "node_type": "CA",
        "fw_ver": "2.11.500",
        "hca_type": "MT4099",
        "board_id": "DEL0A30000019",
        "node_guid": "0002:c903:00f9:bfa0",
    }
    assert dev["pci_path"] == ["pci0000:80", "0000:80:02.2", "0000:82:00.0"]
    assert (dev["pci_bus_id"], dev["numa_node"], dev["netdevs"]) == ("0000:82:00.0", 1, ["ib0"])
    (port,) = dev["ports"]
    assert {
        k: port[k] for k in ("port", "state", "active", "phys_state", "link_up", "rate", "rate_gbps", "link_layer")
    } == {
        "port": 1,
        "state": "ACTIVE",
        "active": True,
        "phys_state": "LinkUp",
        "link_up": True,
        "rate": "56 Gb/sec (4X FDR)",
        "rate_gbps": 56.0,
        "link_layer": "InfiniBand",
    }
    # 128 table entries, one in use: the others carry the subnet prefix with a zero interface id (kernel of 2013).
    assert port["gids"] == [
        {"index": 0, "gid": "fe80:0000:0000:0000:0002:c903:00f9:bfa1", "type": None, "ndev": None, "ipv4": None}
    ]
    assert fab.summary(ib) == "ib"


def test_a_roce_port_has_its_gid_types_interfaces_and_ipv4(roce):
    mlx5_0, mlx5_1 = roce
    assert mlx5_0["netdevs"] == ["ens1f0"] and mlx5_1["netdevs"] == ["ens1f1"]
    port = mlx5_0["ports"][0]
    assert (port["link_layer"], port["active"], port["rate_gbps"]) == ("Ethernet", True, 100.0)
    assert [(g["index"], g["type"], g["ndev"], g["ipv4"]) for g in port["gids"]] == [
        (0, "IB/RoCE v1", "ens1f0", None),
        (1, "RoCE v2", "ens1f0", None),
        (2, "IB/RoCE v1", "ens1f0", None),
        (3, "RoCE v2", "ens1f0", None),
        (4, "IB/RoCE v1", "ens1f0", "172.19.0.60"),
        (5, "RoCE v2", "ens1f0", "172.19.0.60"),
    ]  # index 6 is empty (zeros): not a GID
    down = mlx5_1["ports"][0]
    assert (down["state"], down["active"], down["phys_state"], down["link_up"]) == ("DOWN", False, "Disabled", False)
    assert fab.summary(roce) == "roce"


def test_no_rdma_device_is_an_empty_list(tmp_path):
    assert fab.read_rdma(str(tmp_path)) == []
    assert fab.summary([]) == "none"


def test_what_a_node_reports_is_bounded_and_stripped(tmp_path):
    port = tmp_path / "sys/class/infiniband/evil0/ports/1"
    (port / "gids").mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\x1b[2J\n")
    (port / "rate").write_text("x" * 5000)
    (port / "gids" / "0").write_text("not a gid")
    for i in range(fab.MAX_GIDS + 10):
        (port / "gids" / str(i + 1)).write_text(f"fe80:0000:0000:0000:0000:0000:0000:{i + 1:04x}\n")
    (dev,) = fab.read_rdma(str(tmp_path))
    (read,) = dev["ports"]
    assert read["state"] == "ACTIVE" and len(read["rate"]) <= 64 and read["rate_gbps"] is None
    assert len(read["gids"]) == fab.MAX_GIDS and read["gids"][0]["index"] == 1
    assert dev["pci_path"] == [] and dev["numa_node"] is None


@pytest.mark.parametrize(
    ("text", "gbps"),
    [("56 Gb/sec (4X FDR)", 56.0), ("2.5 Gb/sec (1X SDR)", 2.5), ("400 Gb/sec (4X NDR)", 400.0), ("", None)],
)
def test_rates(text, gbps):
    assert fab.rate_gbps(text) == gbps


NIC = ["pci0000:80", "0000:80:02.2", "0000:82:00.0"]  # the ConnectX-3 above
SWITCH = ["pci0000:00", "0000:00:01.0", "0000:01:00.0"]  # a root port and a PCIe switch's upstream port


@pytest.mark.parametrize(
    ("gpu", "gpu_numa", "nic", "nic_numa", "expected"),
    [
        ([*SWITCH, "0000:02:08.0", "0000:03:00.0"], 0, [*SWITCH, "0000:02:10.0", "0000:04:00.0"], 0, "PIX"),
        ([*SWITCH, "0000:02:08.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"], 0,
         [*SWITCH, "0000:02:10.0", "0000:04:00.0"], 0, "PXB"),
        (["pci0000:80", "0000:80:03.0", "0000:83:00.0"], 1, NIC, 1, "PHB"),
        (["pci0000:40", "0000:40:01.0", "0000:41:00.0"], 1, NIC, 1, "NODE"),
        (["pci0000:00", "0000:00:03.0", "0000:03:00.0"], 0, NIC, 1, "SYS"),
        ([], 0, NIC, 1, None),
    ],
)  # fmt: skip
def test_gpu_to_nic_distance(gpu, gpu_numa, nic, nic_numa, expected):
    assert fab.distance(gpu, nic, gpu_numa, nic_numa) == expected


def test_the_farthest_distance_and_a_table_per_gpu(ib):
    assert fab.farthest(["PIX", "PHB", None, "PXB"]) == "PHB"
    assert fab.farthest([None]) is None
    gpus = [{"bus_id": "0000:83:00.0", "pci_path": ["pci0000:80", "0000:80:03.0", "0000:83:00.0"], "numa_node": 1}]
    assert fab.gpu_nic_distances(gpus, ib) == {"0000:83:00.0": {"mlx4_0": "PHB"}}


@pytest.fixture
def b200(tmp_path):
    return fab.read_rdma(str(build(FIXTURES / "hgx-b200-nvswitch-bridge.sysfs", tmp_path)))


def test_the_nvswitch_bridge_of_an_nvlink_5_baseboard_is_known_by_its_vpd(b200):
    """HGX B200: the four functions of the baseboard's ConnectX-7 bridge (a real node's names and GUIDs) say SW_MNG
    in their VPD; the compute HCA does not. The bridge's active ports are not a network to other nodes."""
    assert [(d["name"], d["nvswitch_mgmt"]) for d in b200] == [
        ("mlx5_0", False), ("mlx5_10", True), ("mlx5_11", True), ("mlx5_8", True), ("mlx5_9", True)]  # fmt: skip
    assert [d["name"] for d in fab.network_devices(b200)] == ["mlx5_0"]
    assert fab.summary(b200) == "ib"
    bridge_only = [d for d in b200 if d["nvswitch_mgmt"]]
    assert fab.summary(bridge_only) == "none"


def test_the_bridge_is_found_on_the_pci_bus_before_mlx5_core_made_rdma_devices(tmp_path):
    """Without /sys/class/infiniband (mlx5_core not loaded yet) the bridge's functions are still Mellanox functions
    on the PCI bus whose VPD says SW_MNG; the compute HCA is not one of them."""
    root = build(FIXTURES / "hgx-b200-nvswitch-bridge.sysfs", tmp_path)
    expected = ["0000:a9:00.0", "0000:a9:00.1", "0000:a9:00.2", "0000:a9:00.3"]
    assert fab.bridge_functions(str(root)) == expected
    # What read_rdma has read is not read again: a function it found not to be the bridge stays out unread.
    assert fab.bridge_functions(str(root), [{"pci_bus_id": "0000:a9:00.0", "nvswitch_mgmt": False}]) == expected[1:]
    assert fab.fabric_facts(str(root))["nvswitch_bridge"] == expected
    shutil.rmtree(root / "sys" / "class" / "infiniband")
    facts = fab.fabric_facts(str(root))
    assert (facts["summary"], facts["devices"], facts["nvswitch_bridge"]) == ("none", [], expected)


def test_no_vpd_or_an_unreadable_one_is_not_the_bridge(tmp_path):
    (tmp_path / "vpd").write_bytes(b"\x82\x10\x00ConnectX-7 VPD\x90\x20\x00PN\x08MCX75310\x78")
    assert fab.nvswitch_bridge(str(tmp_path)) is False
    assert fab.nvswitch_bridge(str(tmp_path / "absent")) is False
    (tmp_path / "vpd").write_bytes(b"\x82\x10\x00" + b"\xff" * 100 + b"SMDL=SW_MNG\x78")  # binary around it
    assert fab.nvswitch_bridge(str(tmp_path)) is True


ZERO = fab.ZERO_UUID
GB200 = {"state": "completed", "status": 0, "clique_id": 4026, "cluster_uuid": "9c6f5af3-53bf-49b5-a436-b66766c413c3"}


@pytest.mark.parametrize(
    ("probes", "domain"),
    [
        ([GB200] * 4, "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"),  # a real GB200's probe (leptonai/gpud#1106)
        ([{**GB200, "cluster_uuid": ZERO, "clique_id": 32766}] * 8, None),  # single-node HGX: the zero UUID
        ([{**GB200, "status": 27, "clique_id": 0, "cluster_uuid": ZERO}] * 4, None),  # Insufficient Resources
        ([{**GB200, "status": 27}] * 4, None),  # completed with an error status: not trusted, whatever the UUID
        ([GB200] * 3 + [{**GB200, "state": "in_progress"}], None),  # one GPU still registering
        ([GB200] * 3 + [{**GB200, "clique_id": 4027}], None),  # GPUs that disagree
        ([GB200] * 3 + [None], None),
        ([], None),
    ],
)
def test_the_multi_node_nvlink_domain(probes, domain):
    assert fab.nvlink_domain([{"fabric": p} for p in probes]) == domain


@pytest.mark.parametrize(
    ("probes", "local", "multinode"),
    [
        ([GB200] * 4, False, True),  # a domain reported: the switches are outside
        ([{**GB200, "state": "not_started"}] * 4, False, False),  # no domain yet, and not said to be a Grace chip
        ([GB200] * 8, True, False),  # HGX: the NVSwitches are local, Fabric Manager's
        ([None] * 2, False, False),  # no fabric probe (A100, PCIe cards)
        ([{**GB200, "state": "not_supported"}], False, False),  # a single H100 PCIe (leptonai/gpud#1140)
        ([], False, False),
    ],
)
def test_gpus_on_nvlink_switches_outside_the_node(probes, local, multinode):
    assert fab.multinode_nvlink([{"fabric": p} for p in probes], local) is multinode


@pytest.mark.parametrize(
    ("name", "multinode"),
    [
        ("NVIDIA GB200", True),  # a tray whose fabric is down is still a tray
        ("NVIDIA GB300", True),
        ("NVIDIA GH200 144G HBM3e", True),
        ("NVIDIA B200", False),  # an HGX B200 whose bridge is not visible: not taken for a tray
        ("NVIDIA H100 80GB HBM3", False),
    ],
)
def test_a_grace_superchip_is_on_outside_switches_before_its_fabric_registers(name, multinode):
    gpus = [{"name": name, "fabric": {**GB200, "state": "not_started", "cluster_uuid": ZERO}}] * 4
    assert fab.multinode_nvlink(gpus, False) is multinode


# Each bound on what a node reports, and the second branches (make mutation).
def test_every_field_a_node_reports_is_cut_to_its_own_bound(tmp_path):
    dev = tmp_path / "sys/class/infiniband/mlx5_0"
    port = dev / "ports/1"
    for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / sub).mkdir(parents=True)
    long = "a" * 5000
    for name in ("node_guid", "fw_ver", "hca_type", "board_id"):
        (dev / name).write_text(long)
    (dev / "node_type").write_text("1: " + "CA" * 100)
    for name in ("link_layer", "lid", "state", "phys_state"):
        (port / name).write_text(long)
    (port / "gids" / "0").write_text("fe80:0000:0000:0000:0000:0000:0000:0001")
    (port / "gid_attrs/types/0").write_text(long)
    (port / "gid_attrs/ndevs/0").write_text(long)
    (read,) = fab.read_rdma(str(tmp_path))
    (got,) = read["ports"]
    lengths = {k: len(read[k]) for k in ("node_guid", "fw_ver", "hca_type", "board_id", "node_type")}
    assert lengths == {"node_guid": 32, "fw_ver": 64, "hca_type": 64, "board_id": 64, "node_type": 29}
    assert (len(got["link_layer"]), len(got["lid"])) == (32, 16)
    assert (len(got["gids"][0]["type"]), len(got["gids"][0]["ndev"])) == (32, 64)


def test_text_is_decoded_with_replacement_and_control_characters_removed(tmp_path):
    dev = tmp_path / "sys/class/infiniband/mlx5_0"
    dev.mkdir(parents=True)
    (dev / "fw_ver").write_bytes(b"28.39\xff.1002\x07\n")
    (read,) = fab.read_rdma(str(tmp_path))
    assert read["fw_ver"] == "28.39\ufffd.1002"


def test_at_most_64_devices_and_64_gids_in_index_order(tmp_path):
    base = tmp_path / "sys/class/infiniband"
    for i in range(70):
        (base / f"mlx5_{i:02d}").mkdir(parents=True)
    assert len(fab.read_rdma(str(tmp_path))) == 64
    port = tmp_path / "port"
    (port / "gids").mkdir(parents=True)
    for i in range(70):
        (port / "gids" / str(i)).write_text(f"fe80:0000:0000:0000:0000:0000:0000:{i + 1:04x}")
    (port / "gids" / "default").write_text("fe80:0000:0000:0000:0000:0000:0000:ffff")
    (port / "gids" / "2").write_text("fe80:0000:0000:0000:0000:0000:0000:0000")  # empty: the zero interface id
    (port / "gids" / "3").write_text("0000:0000:0000:0000:0000:0000:0000:0000")
    gids = fab.read_gids(str(port))
    assert [g["index"] for g in gids[:4]] == [0, 1, 4, 5] and len(gids) == 64 and gids[-1]["index"] == 65
    assert gids[0]["gid"] == "fe80:0000:0000:0000:0000:0000:0000:0001" and gids[0]["type"] is None


@pytest.mark.parametrize(("text", "numa"), [("1", 1), ("0", 0), ("-1", None), ("x", None), ("", None)])
def test_a_numa_node_of_minus_one_is_unknown(tmp_path, text, numa):
    dev = tmp_path / "sys/class/infiniband/mlx5_0"
    (dev / "device").mkdir(parents=True)
    (dev / "device" / "numa_node").write_text(text)
    assert fab.read_rdma(str(tmp_path))[0]["numa_node"] == numa


def test_a_path_that_is_only_a_root_complex_is_no_pci_place(tmp_path):
    root = tmp_path / "sys/devices/pci0000:00"
    root.mkdir(parents=True)
    assert fab.pci_path(str(root)) == []
    (root / "0000:00:01.0").mkdir()
    assert fab.pci_path(str(root / "0000:00:01.0")) == ["pci0000:00", "0000:00:01.0"]


def test_distances_rank_nearest_first():
    nearest_first = ["PIX", "PXB", "PHB", "NODE", "SYS"]  # nvidia-smi topo -m's legend
    assert [fab.farthest([b, a]) for a, b in itertools.pairwise(nearest_first)] == nearest_first[1:]
    assert fab.farthest(["SYS", "PIX"]) == "SYS" and fab.farthest(["PIX"]) == "PIX" and fab.farthest([None]) is None


def test_interfaces_are_sorted_names(tmp_path):
    net = tmp_path / "sys/class/net"
    for name in ("ib0", "eth0", "lo"):
        (net / name).mkdir(parents=True)
    assert fab.interfaces(str(tmp_path)) == ["eth0", "ib0", "lo"]
    assert fab.interfaces(str(tmp_path / "none")) == []


def test_a_zero_cluster_uuid_is_no_domain():
    probe = {"state": "completed", "status": 0, "cluster_uuid": fab.ZERO_UUID, "clique_id": 1}
    assert fab.nvlink_domain([{"fabric": probe}]) is None
    assert fab.ZERO_UUID == "00000000-0000-0000-0000-000000000000"


@pytest.mark.parametrize(
    ("bus_id", "sysfs"),
    [("00000000:83:00.0", "0000:83:00.0"), ("0001:C1:00.0", "0001:c1:00.0"), (" 83:00.0 ", "83:00.0"), (None, "")],
)
def test_nvml_bus_ids_as_sysfs_names_them(bus_id, sysfs):
    assert fab.sysfs_bus_id(bus_id) == sysfs


def test_a_gpu_s_place_and_its_distance_in_the_node_s_facts(tmp_path):
    root = tmp_path / "sys/devices/pci0000:00/0000:00:01.0"
    gpu, nic = root / "0000:01:00.0", root / "0000:02:00.0"
    for function in (gpu, nic):
        function.mkdir(parents=True)
    (gpu / "numa_node").write_text("1\n")
    devices = tmp_path / "sys/bus/pci/devices"
    devices.mkdir(parents=True)
    (devices / "0000:01:00.0").symlink_to(gpu)
    assert fab.place(str(tmp_path), "00000000:01:00.0") == {
        "bus_id": "0000:01:00.0",
        "pci_path": ["pci0000:00", "0000:00:01.0", "0000:01:00.0"],
        "numa_node": 1,
    }
    (nic / "numa_node").write_text("-1\n")
    hca = tmp_path / "sys/class/infiniband/mlx5_0"
    hca.mkdir(parents=True)
    (hca / "device").symlink_to(nic)
    facts = fab.fabric_facts(str(tmp_path), ["00000000:01:00.0", "00000000:09:00.0"])
    assert facts["gpu_nic"] == {"0000:01:00.0": {"mlx5_0": "PHB"}}  # the GPU sysfs does not show has no row
    assert (facts["summary"], facts["peermem"], facts["nvswitch_bridge"]) == ("down", False, [])


@pytest.mark.parametrize(
    "rel", ["module/nvidia_peermem", "kernel/mm/memory_peers/nv_mem", "kernel/mm/memory_peers/nv_mem_nc"]
)
def test_peermem_is_loaded_by_either_module_s_sysfs_entry(tmp_path, rel):
    assert fab.peermem_loaded(str(tmp_path)) is False
    (tmp_path / "sys" / rel).mkdir(parents=True)
    assert fab.peermem_loaded(str(tmp_path)) is True


def test_the_kernel_s_rdma_api_from_its_modules_symbols(tmp_path):
    modules = tmp_path / "lib/modules"
    (modules / "k1").mkdir(parents=True)
    (modules / "k1" / "modules.symbols").write_bytes(
        b"# Aliases for symbols, used by symbol_request().\n"
        b"alias symbol:ib_umem_dmabuf_get ib_uverbs\n"
        b"alias symbol:ib_register_peer_memory_client_x other\n\xff\n"
    )
    assert fab.kernel_rdma_api(str(modules), "k1") == {"peer_memory": False, "dmabuf": True}
    (modules / "k2").mkdir()
    (modules / "k2" / "modules.symbols").write_text("alias symbol:ib_register_peer_memory_client ib_core\n")
    assert fab.kernel_rdma_api(str(modules), "k2") == {"peer_memory": True, "dmabuf": False}
    assert fab.kernel_rdma_api(str(modules), "absent") == {"peer_memory": None, "dmabuf": None}


@pytest.mark.parametrize(
    ("gpu", "nic", "expected"),
    [
        # Only the root port in common (two functions straight below it): through the host bridge.
        (["pci0000:80", "0000:80:02.0", "0000:81:00.0"], ["pci0000:80", "0000:80:02.0", "0000:81:00.1"], "PHB"),
        # Three levels below the common switch on one side: more than one switch.
        ([*SWITCH, "0000:02:08.0", "0000:05:00.0", "0000:06:00.0"], [*SWITCH, "0000:02:10.0", "0000:04:00.0"], "PXB"),
        ([*SWITCH, "0000:02:08.0"], [*SWITCH, "0000:02:10.0", "0000:04:00.0"], "PIX"),
        (
            [*SWITCH, "0000:02:08.0", "0000:03:00.0", "0000:0a:00.0"],
            [*SWITCH, "0000:02:08.0", "0000:03:00.0", "0000:0b:00.0"],
            "PIX",
        ),
    ],
)
def test_distance_at_each_edge(gpu, nic, expected):
    assert fab.distance(gpu, nic, 0, 0) == expected
