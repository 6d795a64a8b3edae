# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Xid lines of the NVIDIA driver ("NVRM: Xid (PCI:0000:07:00): 79, ...") and PCI bus ids: decoded alike on the node
(health findings, Slurm's gres) and on the controller (the fleet report reads the lines a node reported). Pure.
"""

from __future__ import annotations

import re

# Xid meanings: https://docs.nvidia.com/deploy/xid-errors/index.html
# Hardware or driver faults that need a reset or service: double-bit/uncontained ECC (48, 95), row-remap
# failure (64), micro-controller halts (61, 62), NVLink (74), fallen off the bus (79), high single-bit
# ECC rate (92), GSP errors (119, 120), unrecovered ECC (140).
XID_CRITICAL = frozenset({48, 61, 62, 64, 74, 79, 92, 95, 119, 120, 140})
# Errors a user program causes (illegal address, page fault, reset channel, preemptive cleanup).
XID_APPLICATION = frozenset({13, 31, 43, 45})

_XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f]+):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\S*\):\s*(\d+)")


def _bus_key(domain, bus, device):
    return (int(domain, 16), int(bus, 16), int(device, 16))


def pci_key(bus_id):
    """ "00000000:07:00.0" or "0000:07:00" -> (0, 7, 0); None when unparsable."""
    match = re.match(r"([0-9A-Fa-f]+):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})", bus_id or "")
    return _bus_key(*match.groups()) if match else None


def parse_xid(line):
    """(pci_key, xid) of an "NVRM: Xid (PCI:0000:07:00): 79, ..." line, or None."""
    match = _XID_RE.search(line)
    if not match:
        return None
    domain, bus, device, xid = match.groups()
    return _bus_key(domain, bus, device), int(xid)


def xid_severity(xid):
    if xid in XID_CRITICAL:
        return "critical"
    if xid in XID_APPLICATION:
        return "info"
    return "warning"
