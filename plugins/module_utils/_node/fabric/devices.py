# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's RDMA fabric from sysfs: devices, ports, GIDs, their network interfaces and PCI place, and each GPU's
distance to each NIC. PRIVATE to the collection.

Read as the kernel writes it (Documentation/ABI/stable/sysfs-class-infiniband; drivers/infiniband/core/sysfs.c):
/sys/class/infiniband/<dev> links to the device under its PCI function; `ports/<n>/state` is "4: ACTIVE",
`phys_state` "5: LinkUp", `rate` "200 Gb/sec (4X HDR)", `link_layer` "InfiniBand" or "Ethernet" (RoCE),
`gids/<i>` eight groups of four hex digits, `gid_attrs/types/<i>` "IB/RoCE v1" or "RoCE v2" and
`gid_attrs/ndevs/<i>` the interface of a RoCE GID (reading either for an empty GID fails with EINVAL). Everything a
node reports is bounded and stripped of control characters before it becomes a fact.
"""

from __future__ import annotations

import os
import re

MAX_DEVICES = 64
MAX_GIDS = 64  # per port; a port has 128 or more table entries, almost all empty
_TEXT = re.compile(r"[\x00-\x1f\x7f]")
_STATE = re.compile(r"^\s*(\d+):\s*([A-Za-z_]+)")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec")
_GID = re.compile(r"^[0-9a-f]{4}(:[0-9a-f]{4}){7}$")
_PCI = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_ROOT = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_NAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
# NCCL's and nvidia-smi topo's names for the path between two PCI devices, nearest first.
DISTANCES = ("PIX", "PXB", "PHB", "NODE", "SYS")
# NVLink 5 systems (HGX/DGX B200, B300): the NVSwitches are managed through a ConnectX-7 bridge on the GPU baseboard
# whose PCI functions are RDMA devices; their VPD carries the vendor field SMDL=SW_MNG (Fabric Manager user guide,
# "Systems Using Fourth Generation NVSwitches"). NVIDIA's driver container (_assert_nvlink5_system) and Fabric
# Manager's start script find them by grepping each /sys/class/infiniband/<dev>/device/vpd for "SW_MNG".
NVSWITCH_VPD_MARK = b"SW_MNG"
VPD_LIMIT = 32768  # PCI VPD is at most 32 KiB
MELLANOX_VENDOR = "0x15b3"
# Grace-based superchips, whose NVL systems (GH200 NVL32, GB200/GB300 NVL72) put GPUs of several nodes on one NVLink
# fabric; the names as NVML gives them (the matrix's gpu_release rows: "NVIDIA GB200", "NVIDIA GH200 144G HBM3e").
_GRACE = re.compile(r"^(NVIDIA )?G[BH]\d{3}")
ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def _read(path, limit=256):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return _TEXT.sub("", f.read(limit)).strip()
    except OSError:
        return None


def nvswitch_bridge(device_link):
    """The RDMA device is a function of the GPU baseboard's NVSwitch management bridge (its VPD says SW_MNG)."""
    try:
        with open(os.path.join(device_link, "vpd"), "rb") as f:
            return NVSWITCH_VPD_MARK in f.read(VPD_LIMIT)
    except OSError:
        return False


def bridge_functions(sysfs_root="/", devices=()):
    """The PCI functions of an NVSwitch management bridge (Mellanox functions whose VPD says SW_MNG), from the PCI
    bus so that they are found whether or not mlx5_core has made RDMA devices of them yet. A function read_rdma has
    read already (devices) is not read again: VPD reads go through the card, slowly."""
    known = {dev["pci_bus_id"]: dev["nvswitch_mgmt"] for dev in devices if dev.get("pci_bus_id")}
    base = os.path.join(sysfs_root, "sys", "bus", "pci", "devices")
    found = []
    for name in _names(base):
        function = os.path.join(base, name)
        if name in known:
            bridge = known[name]
        else:
            bridge = _read(os.path.join(function, "vendor"), 16) == MELLANOX_VENDOR and nvswitch_bridge(function)
        if bridge:
            found.append(name)
    return found


def _names(path):
    try:
        return sorted(n for n in os.listdir(path) if _NAME.match(n))
    except OSError:
        return []


def interfaces(sysfs_root="/"):
    """The node's network interfaces (/sys/class/net), sorted; [] when none can be read."""
    return _names(os.path.join(sysfs_root, "sys", "class", "net"))


def _state(text):
    """ "4: ACTIVE" -> (4, "ACTIVE"); None when unreadable."""
    found = _STATE.match(text or "")
    return (int(found.group(1)), found.group(2)) if found else (None, None)


def rate_gbps(text):
    """ "200 Gb/sec (4X HDR)" -> 200.0; "2.5 Gb/sec (1X SDR)" -> 2.5; None when unreadable."""
    found = _RATE.match(text or "")
    return float(found.group(1)) if found else None


def ipv4_of_gid(gid):
    """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d, RoCE's routable GIDs), else None."""
    parts = gid.split(":")
    if len(parts) != 8 or parts[:6] != ["0000"] * 5 + ["ffff"]:
        return None
    value = int(parts[6] + parts[7], 16)
    return ".".join(str(value >> shift & 0xFF) for shift in (24, 16, 8, 0))


def read_gids(port_dir):
    """The port's populated GID entries: [{index, gid, type, ndev, ipv4}], index order, at most MAX_GIDS."""
    gids = []
    for name in sorted(_names(os.path.join(port_dir, "gids")), key=lambda n: int(n) if n.isdigit() else -1):
        if not name.isdigit():
            continue
        gid = (_read(os.path.join(port_dir, "gids", name)) or "").lower()
        # An empty entry reads as zeros, or (older kernels, mlx4) as the subnet prefix with a zero interface id.
        if not _GID.match(gid) or gid.endswith(ZERO_GID[20:]):
            continue
        gids.append(
            {
                "index": int(name),
                "gid": gid,
                "type": _read(os.path.join(port_dir, "gid_attrs", "types", name), 32),
                "ndev": _read(os.path.join(port_dir, "gid_attrs", "ndevs", name), 64),
                "ipv4": ipv4_of_gid(gid),
            }
        )
        if len(gids) == MAX_GIDS:
            break
    return gids


def read_port(dev_dir, number):
    port_dir = os.path.join(dev_dir, "ports", number)
    state, state_name = _state(_read(os.path.join(port_dir, "state")))
    phys, phys_name = _state(_read(os.path.join(port_dir, "phys_state")))
    rate = _read(os.path.join(port_dir, "rate"), 64)
    return {
        "port": int(number),
        "state": state_name,
        "active": state == 4,
        "phys_state": phys_name,
        "link_up": phys == 5,
        "rate": rate,
        "rate_gbps": rate_gbps(rate),
        "link_layer": _read(os.path.join(port_dir, "link_layer"), 32),
        "lid": _read(os.path.join(port_dir, "lid"), 16),
        "gids": read_gids(port_dir),
    }


def pci_path(device_link):
    """The PCI functions from the root complex down to the device: "/sys/devices/pci0000:80/0000:80:02.2/0000:82:00.0"
    -> ["pci0000:80", "0000:80:02.2", "0000:82:00.0"]; [] when it is not a PCI device."""
    real = os.path.realpath(device_link)
    parts = real.split(os.sep)
    roots = [i for i, part in enumerate(parts) if _ROOT.match(part)]
    if not roots:
        return []
    path = parts[roots[0] :]
    return path if len(path) > 1 and all(_PCI.match(p) for p in path[1:]) else []


def read_rdma(sysfs_root="/"):
    """Every RDMA device under /sys/class/infiniband: name, node type, firmware, its PCI function, NUMA node, the
    network interfaces on that function, and its ports. [] when there are none."""
    base = os.path.join(sysfs_root, "sys", "class", "infiniband")
    devices = []
    for name in _names(base)[:MAX_DEVICES]:
        dev_dir = os.path.join(base, name)
        device_link = os.path.join(dev_dir, "device")
        path = pci_path(device_link)
        numa = _read(os.path.join(device_link, "numa_node"), 8)
        devices.append(
            {
                "name": name,
                "node_type": _state(_read(os.path.join(dev_dir, "node_type"), 32))[1],
                "node_guid": _read(os.path.join(dev_dir, "node_guid"), 32),
                "fw_ver": _read(os.path.join(dev_dir, "fw_ver"), 64),
                "hca_type": _read(os.path.join(dev_dir, "hca_type"), 64),
                "board_id": _read(os.path.join(dev_dir, "board_id"), 64),
                "pci_bus_id": path[-1] if path else None,
                "pci_path": path,
                "numa_node": int(numa) if numa and numa.lstrip("-").isdigit() and int(numa) >= 0 else None,
                "netdevs": _names(os.path.join(device_link, "net")),
                "nvswitch_mgmt": nvswitch_bridge(device_link),
                "ports": [read_port(dev_dir, n) for n in _names(os.path.join(dev_dir, "ports")) if n.isdigit()],
            }
        )
    return devices


def distance(a_path, b_path, a_numa=None, b_numa=None):
    """The PCI distance between two devices by their pci_path, as nvidia-smi topo and NCCL name it: PIX (one PCIe
    switch between them), PXB (several switches, no host bridge), PHB (through their root complex), NODE (another
    root complex on the same NUMA node), SYS (across NUMA nodes). None when a path is unknown."""
    if not a_path or not b_path:
        return None
    if a_path[0] != b_path[0]:
        return "NODE" if a_numa is not None and a_numa == b_numa else "SYS"
    common = 0
    while common < min(len(a_path), len(b_path)) and a_path[common] == b_path[common]:
        common += 1
    if common <= 2:  # only the root complex (and its root port) in common: through the host bridge
        return "PHB"
    # Below a common PCIe switch's upstream port, each side is its downstream port and then the device: one switch.
    return "PIX" if max(len(a_path), len(b_path)) - common <= 2 else "PXB"


def farthest(names):
    """The worst of several distances ("PIX" < "PXB" < "PHB" < "NODE" < "SYS"); None for none."""
    known = [n for n in names if n in DISTANCES]
    return max(known, key=DISTANCES.index) if known else None


def gpu_nic_distances(gpus, devices):
    """{gpu bus id: {rdma device: distance}} from the GPUs' [{bus_id, pci_path, numa_node}] and read_rdma's devices."""
    table = {}
    for gpu in gpus:
        table[gpu["bus_id"]] = {
            dev["name"]: distance(gpu.get("pci_path"), dev["pci_path"], gpu.get("numa_node"), dev["numa_node"])
            for dev in devices
        }
    return table


def network_devices(devices):
    """The RDMA devices that reach other nodes: not the NVSwitch management bridge's functions (NVLink 5 systems),
    whose ports lead to the baseboard's NVSwitches, never to another node."""
    return [d for d in devices if not d.get("nvswitch_mgmt")]


def summary(devices):
    """ "ib" (an active InfiniBand port), "roce" (an active Ethernet one), "down" (devices, none active), "none";
    the NVSwitch management bridge's functions do not count."""
    devices = network_devices(devices)
    active = [p for d in devices for p in d["ports"] if p["active"]]
    if any(p["link_layer"] == "InfiniBand" for p in active):
        return "ib"
    if any(p["link_layer"] == "Ethernet" for p in active):
        return "roce"
    return "down" if devices else "none"


def sysfs_bus_id(bus_id):
    """NVML's "00000000:83:00.0" (8-digit domain) as sysfs names it, "0000:83:00.0"."""
    text = (bus_id or "").strip().lower()
    domain, _sep, rest = text.partition(":")
    return f"{domain[-4:]}:{rest}" if rest else text


def place(sysfs_root, bus_id):
    """{bus_id, pci_path, numa_node} of a PCI function (a GPU) from /sys/bus/pci/devices."""
    link = os.path.join(sysfs_root, "sys", "bus", "pci", "devices", sysfs_bus_id(bus_id))
    numa = _read(os.path.join(link, "numa_node"), 8)
    numa_node = int(numa) if numa and numa.isdigit() else None
    return {"bus_id": sysfs_bus_id(bus_id), "pci_path": pci_path(link), "numa_node": numa_node}


# nvidia-peermem registers with the IB core's peer-memory API, which only MLNX_OFED's (DOCA-OFED's) ib_core exports;
# built against an inbox ib_core, its init returns -EINVAL (NVIDIA/open-gpu-kernel-modules: conftest.sh
# check_for_ib_peer_memory_symbols, nvidia-peermem.c nv_mem_client_init without NV_MLNX_IB_PEER_MEM_SYMBOLS_PRESENT).
# Inbox kernels from 5.12 have DMA-BUF memory registration instead (ib_umem_dmabuf_get), which NCCL uses for
# GPUDirect RDMA with the open kernel modules. depmod's modules.symbols names the module exporting each symbol.
PEER_MEMORY_SYMBOL = "ib_register_peer_memory_client"
DMABUF_SYMBOL = "ib_umem_dmabuf_get"


def kernel_rdma_api(modules_root, kernel):
    """{"peer_memory", "dmabuf"}: whether the kernel's modules export the IB core's peer-memory API and DMA-BUF
    registration, from /lib/modules/<kernel>/modules.symbols; both None when it cannot be read (a container's
    running kernel is the host's, whose modules it does not hold)."""
    found = {"peer_memory": None, "dmabuf": None}
    wanted = {f"alias symbol:{PEER_MEMORY_SYMBOL} ": "peer_memory", f"alias symbol:{DMABUF_SYMBOL} ": "dmabuf"}
    try:
        with open(os.path.join(modules_root, kernel, "modules.symbols"), encoding="utf-8", errors="replace") as f:
            found = {"peer_memory": False, "dmabuf": False}
            for line in f:
                for prefix, key in wanted.items():
                    if line.startswith(prefix):
                        found[key] = True
    except OSError:
        pass
    return found


def peermem_loaded(sysfs_root="/"):
    """nvidia-peermem (GPUDirect RDMA through the IB core) is loaded: NCCL checks /sys/module/nvidia_peermem and the
    legacy nv_peer_mem's /sys/kernel/mm/memory_peers/nv_mem (src/transport/net_ib/gdr.cc)."""
    return any(
        os.path.exists(os.path.join(sysfs_root, "sys", *rel.split("/")))
        for rel in ("module/nvidia_peermem", "kernel/mm/memory_peers/nv_mem", "kernel/mm/memory_peers/nv_mem_nc")
    )


def fabric_facts(sysfs_root="/", gpu_bus_ids=()):
    """The node's fabric as gpu_facts reports it: summary, devices, peermem, and each GPU's distance to each RDMA
    device (only GPUs and devices whose PCI place sysfs shows)."""
    devices = read_rdma(sysfs_root)
    gpus = [place(sysfs_root, bus) for bus in gpu_bus_ids]
    table = gpu_nic_distances([g for g in gpus if g["pci_path"]], devices) if devices else {}
    return {
        "summary": summary(devices),
        "devices": devices,
        "peermem": peermem_loaded(sysfs_root),
        "gpu_nic": table,
        "nvswitch_bridge": bridge_functions(sysfs_root, devices),
    }


def nvlink_domain(gpus):
    """The multi-node NVLink domain the GPUs are in, "<cluster uuid>.<clique id>" (the form NVIDIA's DRA driver
    labels nodes with), or None. Every GPU must report its fabric probe completed with status success and a
    non-zero cluster UUID: single-node HGX H100s report the all-zero UUID with state completed, and a GB200 tray
    whose registration failed reports status "Insufficient Resources" with a zero UUID (meta-pytorch/torchcomms#1385,
    Azure/azhpc-images#506); GPUs that disagree are no domain."""
    probes = [g.get("fabric") for g in gpus]
    if not probes or not all(p and p.get("state") == "completed" and p.get("status") == 0 for p in probes):
        return None
    if any(p.get("cluster_uuid") in (None, ZERO_UUID) for p in probes):
        return None
    found = {f"{p['cluster_uuid']}.{p.get('clique_id')}" for p in probes}
    return found.pop() if len(found) == 1 else None


def multinode_nvlink(gpus, local_nvswitch):
    """The GPUs are wired to NVLink switches outside this node (GB200/GB300 NVL compute trays): they have a fabric
    probe (Hopper and newer behind NVLink switches), the node has no NVSwitch of its own, neither on PCI nor behind
    an NVLink 5 management bridge, and they are Grace superchips or already report a multi-node domain. Such a
    node needs IMEX for memory across nodes, not a Fabric Manager of its own (that runs on the switch trays)."""
    probes = [g.get("fabric") for g in gpus]
    if not probes or local_nvswitch or not all(p and p.get("state") != "not_supported" for p in probes):
        return False
    # An HGX B200 whose bridge is not visible yet looks the same: a Grace superchip, or a domain its GPUs report, says
    # the switches really are outside.
    return bool(nvlink_domain(gpus)) or any(_GRACE.match(str(g.get("name") or "")) for g in gpus)
