# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL's network settings from the node's fabric facts (devices), merged with the user's: pure functions. PRIVATE to
the collection.

From NCCL's environment documentation (NVIDIA/nccl docs/userguide/source/env.rst, the page
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) and its parser (src/misc/utils.cc parseStringList,
matchIfList):
- NCCL_IB_HCA and NCCL_SOCKET_IFNAME are comma-separated lists; a leading "^" excludes the entries, then a leading "="
  matches names exactly, else each entry is a prefix ("mlx5_1" also selects mlx5_10 to mlx5_19). An HCA entry may
  name a port, "mlx5_0:1". NCCL uses only IB ports in state ACTIVE with link layer InfiniBand or Ethernet.
- NCCL_IB_GID_INDEX picks the RoCE GID; NCCL 2.21 and later choose one themselves by default (-1: a RoCE v2 GID with
  an IPv4 address first), earlier releases take index 0, a link-local RoCE v1 GID that does not route.
- NCCL_NET_GDR_LEVEL is the farthest GPU-to-NIC distance at which GPUDirect RDMA is used (LOC, PIX, PXB, PHB, SYS;
  default PXB). GPUDirect RDMA needs nvidia-peermem loaded (or DMA-BUF), so it is only set where the module is.
- /etc/nccl.conf holds NAME=value lines; NCCL reads it at init and an environment variable of the same name wins.
"""

from __future__ import annotations

from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric.devices import (
    DISTANCES,
    farthest,
    network_devices,
)

# GPUDirect RDMA through the CPU's root complex is still worth it; across NUMA nodes it is slower than staging.
GDR_CAP = "PHB"


def parse_list(text):
    """NCCL's list syntax -> (exclude, exact, [(name, port or None)])."""
    text = (text or "").strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    entries = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _sep, rest = item.partition(":")
        port = rest.split(":", 1)[0]
        entries.append((name, int(port) if port.isdigit() else None))
    return exclude, exact, entries


def _matches(entry, name, port, exact):
    want_name, want_port = entry
    named = name == want_name if exact else name.startswith(want_name)
    return named and (want_port is None or port is None or want_port == port)


def unmatched(text, available):
    """The entries of a list that select nothing among `available` [(name, port or None)]; [] for an exclusion list
    (excluding what a node lacks harms nothing)."""
    exclude, exact, entries = parse_list(text)
    if exclude:
        return []
    return [e for e in entries if not any(_matches(e, name, port, exact) for name, port in available)]


def active_ports(devices):
    """[(device, port, link layer)] that NCCL can use: ACTIVE, InfiniBand or Ethernet."""
    return [
        (dev["name"], port["port"], port["link_layer"])
        for dev in devices
        for port in dev["ports"]
        if port["active"] and port["link_layer"] in ("InfiniBand", "Ethernet")
    ]


def roce_gid_index(devices):
    """(index, why): the GID index of a RoCE v2 GID with an IPv4 address on every active RoCE port when that index is
    the same on all of them, else (None, why)."""
    found = {}
    for dev in devices:
        for port in dev["ports"]:
            if port["active"] and port["link_layer"] == "Ethernet":
                v2 = [g["index"] for g in port["gids"] if g["type"] == "RoCE v2" and g["ipv4"]]
                found[f"{dev['name']}:{port['port']}"] = v2[0] if v2 else None
    if not found:
        return None, "no active RoCE port"
    missing = sorted(name for name, index in found.items() if index is None)
    if missing:
        return None, f"no RoCE v2 GID with an IPv4 address on {', '.join(missing)}: NCCL chooses (2.21 and later)"
    if len(set(found.values())) > 1:
        return None, f"the RoCE v2 IPv4 GID differs between ports ({found}): NCCL chooses (2.21 and later)"
    return next(iter(found.values())), ""


def gdr_level(distances, hcas):
    """(level, why): the farthest of each GPU's nearest HCA, capped at PHB; None when no GPU is near enough."""
    nearest = []
    for gpu, by_nic in sorted(distances.items()):
        known = [by_nic.get(h) for h in hcas if by_nic.get(h)]
        if known:
            nearest.append((gpu, min(known, key=DISTANCES.index)))
    if not nearest:
        return None, "the GPUs' distance to the HCAs is unknown"
    level = farthest(d for _gpu, d in nearest)
    if DISTANCES.index(level) > DISTANCES.index(GDR_CAP):
        far = sorted(gpu for gpu, d in nearest if DISTANCES.index(d) > DISTANCES.index(GDR_CAP))
        return GDR_CAP, f"GPUs {', '.join(far)} have no HCA within {GDR_CAP}: they stage through host memory"
    return level, ""


def derive(devices, *, peermem, distances=None, socket_ifname=""):
    """({NCCL_*: value}, [notes]) for a node with an active RDMA port; ({}, [why]) for one without. The NVSwitch
    management bridge's functions (NVLink 5 baseboards) are never NCCL's HCAs: their ports lead to the NVSwitches."""
    bridge = sorted(dev["name"] for dev in devices if dev.get("nvswitch_mgmt"))
    devices = network_devices(devices)
    ports = active_ports(devices)
    if not ports:
        return {}, ["no active RDMA port: NCCL's network settings are left to NCCL (sockets)"]
    hcas = sorted({dev for dev, _port, _layer in ports})
    settings = {"NCCL_IB_HCA": "=" + ",".join(f"{dev}:{port}" for dev, port, _layer in sorted(ports))}
    notes = [f"{', '.join(bridge)}: the NVSwitch management bridge, not an HCA for NCCL"] if bridge else []
    if socket_ifname:
        settings["NCCL_SOCKET_IFNAME"] = "=" + socket_ifname
    if any(layer == "Ethernet" for _dev, _port, layer in ports):
        index, why = roce_gid_index(devices)
        if index is None:
            notes.append(why)
        else:
            settings["NCCL_IB_GID_INDEX"] = str(index)
    if not peermem:
        notes.append("nvidia-peermem is not loaded: no GPUDirect RDMA, NCCL_NET_GDR_LEVEL not set")
    else:
        level, why = gdr_level(distances or {}, hcas)
        if level:
            settings["NCCL_NET_GDR_LEVEL"] = level
        if why:
            notes.append(why)
    return settings, notes


def problems(user, devices, interfaces):
    """What in the user's NCCL_IB_HCA / NCCL_SOCKET_IFNAME names nothing on this node (or, for HCAs, only the NVSwitch
    management bridge of an NVLink 5 baseboard, which leads to no other node), one line each."""
    found = []
    hcas = [(dev["name"], port["port"]) for dev in network_devices(devices) for port in dev["ports"]]
    bridge = ", ".join(sorted(d["name"] for d in devices if d.get("nvswitch_mgmt")))
    for key, available, what in (
        ("NCCL_IB_HCA", hcas, "RDMA device"),
        ("NCCL_SOCKET_IFNAME", [(name, None) for name in interfaces], "network interface"),
    ):
        if key in user:
            missing = unmatched(str(user[key]), available)
            if missing:
                names = ", ".join(n if p is None else f"{n}:{p}" for n, p in missing)
                have = ", ".join(sorted({n for n, _p in available})) or "none"
                aside = (
                    f"; {bridge}: the NVSwitch management bridge, not an HCA"
                    if bridge and what == "RDMA device"
                    else ""
                )
                found.append(
                    f"{key}={user[key]} names {names}, which is no {what} of this node (it has: {have}{aside})"
                )
    return found


def render(settings, header=""):
    """/etc/nccl.conf: the header, then sorted KEY=VALUE lines."""
    lines = [header.rstrip("\n")] if header else []
    lines += [f"{key}={value}" for key, value in sorted(settings.items())]
    return "\n".join(lines) + "\n"
