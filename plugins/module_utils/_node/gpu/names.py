# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVML enum values as the names gpu_facts reports. Values follow nvml.h (PyPI nvidia-nvml-dev)."""

from __future__ import annotations

import re

# nvmlDeviceArchitecture_t
ARCHITECTURES = {
    2: "kepler",
    3: "maxwell",
    4: "pascal",
    5: "volta",
    6: "turing",
    7: "ampere",
    8: "ada",
    9: "hopper",
    10: "blackwell",
}

# nvmlComputeMode_t
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}

# nvmlGpuTopologyLevel_t, named as `nvidia-smi topo -m` explains them (PIX/PXB/PHB/NODE/SYS).
TOPOLOGY_LEVELS = {0: "internal", 10: "single", 20: "multiple", 30: "hostbridge", 40: "node", 50: "system"}

# nvmlNvlinkVersion_t: nvmlDeviceGetNvLinkVersion answers this enum, not the NVLink generation itself.
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}

# nvmlClocksEventReasons bit masks (formerly "throttle reasons").
THROTTLE_REASONS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)

_MIG_PROFILE_RE = re.compile(r"\bMIG\s+(\S+)")


def architecture_name(value):
    if value is None:
        return None
    return ARCHITECTURES.get(value, "unknown")


def compute_mode_name(value):
    if value is None:
        return None
    return COMPUTE_MODES.get(value, f"unknown({value})")


def topology_level_name(value):
    if value is None:
        return None
    return TOPOLOGY_LEVELS.get(value, f"unknown({value})")


def nvlink_version_name(value):
    if value is None:
        return None
    return NVLINK_VERSIONS.get(value, f"unknown({value})")


def throttle_reason_names(mask):
    """Names of the bits set in an nvmlDeviceGetCurrentClocksEventReasons mask; None when unsupported."""
    if mask is None:
        return None
    return [name for bit, name in THROTTLE_REASONS if mask & bit]


def mig_profile_from_name(name):
    """ "NVIDIA A100-SXM4-40GB MIG 1g.5gb" -> "1g.5gb"."""
    match = _MIG_PROFILE_RE.search(name or "")
    return match.group(1) if match else None
