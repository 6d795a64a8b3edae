# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""IMEX on a node of a multi-node NVLink domain (GB200/GB300 NVL): its nodes file and its default channel (which nodes
one domain holds is the controller's, _controller/imex_nodes). Pure functions. PRIVATE to the collection.

From NVIDIA's "IMEX Service for NVLink Networks" guide: the service reads /etc/nvidia-imex/config.cfg, whose
IMEX_NODE_CONFIG_FILE (/etc/nvidia-imex/nodes_config.cfg) lists the domain's nodes, one address per line, and the
file must be the same on every node of the domain (a node whose map differs shows !M! to its peers). CUDA's
fabric-memory calls need an IMEX channel: the driver registers the character device nvidia-caps-imex-channels
(/proc/devices) and creates /dev/nvidia-caps-imex-channels/channel0 at load time with NVreg_CreateImexChannel0=1;
otherwise an administrator makes it with mknod after every boot.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.stack.plugins.module_utils._node.dev_char import char_major

NODES_FILE = "/etc/nvidia-imex/nodes_config.cfg"
MODPROBE_FILE = "/etc/modprobe.d/gpufleet-imex.conf"
MODPROBE_TEXT = "options nvidia NVreg_CreateImexChannel0=1\n"
CHANNEL_DEVICE = "nvidia-caps-imex-channels"
CHANNEL0 = "/dev/nvidia-caps-imex-channels/channel0"
# An IPv4 or IPv6 address or a DNS name (names from driver 570.158.01, per the DRA driver's use of them).
# \Z, not $: `$` also matches before a final newline, which would write an empty line into the nodes file.
_ADDRESS = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.:-]{0,252})\Z")


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
