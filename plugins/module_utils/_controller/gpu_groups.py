# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The groups a host's cached GPU facts put it in (the gpu_groups inventory plugin): pure functions.

The same names the shipped constructed config used to make with Jinja, for every host of a fleet in a fraction of
the time (no templating per host): gpu_model_<model>, driver_branch_<branch>, gpu_health_<status>,
fabricmanager_required, nvlsm_required (NVLink 5 NVSwitches), imex_required (GPUs on NVLink switches outside the node),
nvlink_domain_<cluster uuid>_<clique> (the multi-node NVLink domain: the hosts one IMEX domain holds),
gpu_driver_not_loaded; and from the RDMA fabric, fabric_ib, fabric_roce or fabric_down (RDMA
devices, no active port; a node without any is in none of them) and gpudirect_rdma (nvidia-peermem loaded).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def safe(name):
    """A group name as Ansible makes one safe (constructed's keyed groups): every other character becomes '_'."""
    return _UNSAFE.sub("_", name)


def groups_for(facts, prefixes=None):
    """The group names for one host's cached facts (the fact cache's dict: gpufleet_gpu at its top)."""
    prefixes = {"model": "gpu_model", "branch": "driver_branch", "health": "gpu_health", **(prefixes or {})}
    gpu = (facts or {}).get("gpufleet_gpu")
    if not isinstance(gpu, dict):
        return []
    found = []
    found += [name for name in ("fabricmanager_required", "nvlsm_required", "imex_required") if gpu.get(name) is True]
    if isinstance(gpu.get("nvlink_domain"), str) and gpu["nvlink_domain"]:
        found.append(safe(f"nvlink_domain_{gpu['nvlink_domain']}"))
    if gpu.get("driver_state") in ("not_loaded", "mismatch"):
        found.append("gpu_driver_not_loaded")
    models = []
    for card in gpu.get("gpus") or []:
        name = card.get("name") if isinstance(card, dict) else None
        if name and name not in models:
            models.append(name)
    found += [safe(f"{prefixes['model']}_{re.sub(r'^NVIDIA ', '', m).lower()}") for m in models]
    version = gpu.get("driver_version")
    if isinstance(version, str) and version:
        found.append(safe(f"{prefixes['branch']}_{version.split('.')[0]}"))
    if gpu.get("health_status"):
        found.append(safe(f"{prefixes['health']}_{gpu['health_status']}"))
    fabric = gpu.get("fabric") if isinstance(gpu.get("fabric"), dict) else {}
    if fabric.get("summary") in ("ib", "roce", "down"):
        found.append(f"fabric_{fabric['summary']}")
    if fabric.get("peermem") is True:
        found.append("gpudirect_rdma")
    return found
