# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU Feature Discovery style labels, so inventory groups and Kubernetes node labels speak alike.

Label names and value rules follow NVIDIA GPU Feature Discovery (k8s-device-plugin, docs/gpu-feature-discovery):
values are strings, the product is the NVML name sanitised (spaces to "-"), memory is MiB of the first GPU,
the family comes from the compute capability. Both the deprecated `cuda.driver.*` and the current
`cuda.driver-version.*` names are set, as GFD itself still does.
https://github.com/NVIDIA/k8s-device-plugin/blob/main/docs/gpu-feature-discovery/README.md
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_. -]")


def sanitise(text):
    """GFD's rule: drop characters outside [A-Za-z0-9-_. ], then join words with "-"."""
    return "-".join(_UNSAFE.sub("", text or "").split())


def gpu_family(capability):
    """GFD family name for a compute capability string such as "8.9"."""
    try:
        major, minor = (int(part) for part in str(capability).split(".", 1))
    except (TypeError, ValueError):
        return None
    families = {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper", 10: "blackwell"}
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    if major == 12:
        return "blackwell"
    return families.get(major, "undefined")


def _split_version(version, parts):
    pieces = (version or "").split(".")
    return [pieces[i] if i < len(pieces) else "" for i in range(parts)]


def gfd_labels(driver_version, cuda_driver_version, gpus, machine=None):
    """Labels for a host; {} when no GPU answered."""
    usable = [gpu for gpu in gpus if gpu.get("name")]
    if not usable:
        return {}
    first = usable[0]
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": str(len(usable)),
        "nvidia.com/gpu.product": sanitise(first["name"]),
    }
    if first.get("memory_total_mib") is not None:
        labels["nvidia.com/gpu.memory"] = str(first["memory_total_mib"])
    if driver_version:
        major, minor, rev = _split_version(driver_version, 3)
        labels.update(
            {
                "nvidia.com/cuda.driver.major": major,
                "nvidia.com/cuda.driver.minor": minor,
                "nvidia.com/cuda.driver.rev": rev,
                "nvidia.com/cuda.driver-version.major": major,
                "nvidia.com/cuda.driver-version.minor": minor,
                "nvidia.com/cuda.driver-version.revision": rev,
                "nvidia.com/cuda.driver-version.full": driver_version,
            }
        )
    if cuda_driver_version:
        # GFD's "runtime" labels carry the CUDA version the driver supports (cuDriverGetVersion).
        cmajor, cminor = _split_version(cuda_driver_version, 2)
        labels.update(
            {
                "nvidia.com/cuda.runtime.major": cmajor,
                "nvidia.com/cuda.runtime.minor": cminor,
                "nvidia.com/cuda.runtime-version.major": cmajor,
                "nvidia.com/cuda.runtime-version.minor": cminor,
                "nvidia.com/cuda.runtime-version.full": cuda_driver_version,
            }
        )
    capability = first.get("compute_capability")
    if capability:
        major, minor = capability.split(".", 1)
        labels["nvidia.com/gpu.compute.major"] = major
        labels["nvidia.com/gpu.compute.minor"] = minor
        labels["nvidia.com/gpu.family"] = gpu_family(capability)
    mig = first.get("mig") or {}
    labels["nvidia.com/mig.capable"] = "true" if mig.get("current") is not None else "false"
    if machine:
        labels["nvidia.com/gpu.machine"] = sanitise(machine)
    return labels
