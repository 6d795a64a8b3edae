# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""IMEX on the nodes of a multi-node NVLink domain (GB200/GB300 NVL): which nodes one domain holds, its nodes file,
and its default channel. Pure functions. PRIVATE to the collection.

From NVIDIA's "IMEX Service for NVLink Networks" guide: the service reads /etc/nvidia-imex/config.cfg, whose
IMEX_NODE_CONFIG_FILE (/etc/nvidia-imex/nodes_config.cfg) lists the domain's nodes, one address per line, and the
file must be the same on every node of the domain (a node whose map differs shows !M! to its peers). CUDA's
fabric-memory calls need an IMEX channel: the driver registers the character device nvidia-caps-imex-channels
(/proc/devices) and creates /dev/nvidia-caps-imex-channels/channel0 at load time with NVreg_CreateImexChannel0=1;
otherwise an administrator makes it with mknod after every boot. NVIDIA's DRA driver names the domain
"<cluster uuid>.<clique id>" (what gpu_facts reports as nvlink_domain).
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.stack.plugins.module_utils._dev_char import char_major

NODES_FILE = "/etc/nvidia-imex/nodes_config.cfg"
MODPROBE_FILE = "/etc/modprobe.d/gpufleet-imex.conf"
MODPROBE_TEXT = "options nvidia NVreg_CreateImexChannel0=1\n"
CHANNEL_DEVICE = "nvidia-caps-imex-channels"
CHANNEL0 = "/dev/nvidia-caps-imex-channels/channel0"
# An IPv4 or IPv6 address or a DNS name (names from driver 570.158.01, per the DRA driver's use of them).
_ADDRESS = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.:-]{0,252})$")


def gpu_facts_of(hostvars):
    """A host's gpu_facts as this run or the fact cache has them (facts are also injected as top-level vars)."""
    facts = (hostvars.get("ansible_facts") or {}).get("gpufleet_gpu") or hostvars.get("gpufleet_gpu")
    return facts if isinstance(facts, dict) else {}


def address_of(hostvars, name):
    """The address IMEX peers reach the host on: gpufleet_imex_address, else ansible_host, else its name."""
    return str(hostvars.get("gpufleet_imex_address") or hostvars.get("ansible_host") or name)


def domain_nodes(hostvars, hosts, me):
    """{"domain", "nodes", "why"}: the addresses of every host whose facts put it in this host's NVLink domain,
    sorted (the file must be byte-identical on every node); no nodes, and why, when this host's domain is unknown."""
    mine = gpu_facts_of(hostvars[me]).get("nvlink_domain")
    if not mine:
        why = (
            f"{me} reports no NVLink domain (gpu_facts nvlink_domain: its GPUs have not registered with the fabric, "
            "or it has no multi-node NVLink): set nvidia_driver_imex_nodes to the domain's addresses"
        )
        return {"domain": None, "nodes": [], "why": why}
    members = [h for h in hosts if gpu_facts_of(hostvars[h]).get("nvlink_domain") == mine]
    nodes = sorted({address_of(hostvars[h], h) for h in members})
    return {"domain": mine, "nodes": nodes, "why": f"{len(nodes)} nodes whose facts report NVLink domain {mine}"}


def check_nodes(nodes):
    """The nodes list is addresses IMEX can read: one per line, no spaces or comments; problems, one line each."""
    if not nodes:
        return ["no IMEX nodes: the domain needs at least this node"]
    return [
        f"{node!r} is not an IP address or host name" for node in nodes if not _ADDRESS.match(str(node) if node else "")
    ]


def nodes_text(nodes):
    return "".join(f"{node}\n" for node in sorted(set(nodes)))


def channel_major(proc_devices):
    """The major number the driver registered nvidia-caps-imex-channels under (/proc/devices), else None."""
    return char_major(proc_devices, CHANNEL_DEVICE)
