# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Assemble ansible_facts['gpufleet_gpu']: the library and the host (source), then NVML, then health and labels.

The kernel-log reader is passed in by the module (it needs run_command); everything else is here.
"""

from __future__ import annotations

import contextlib
import os
import sys

from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric.devices import (
    fabric_facts,
    multinode_nvlink,
    nvlink_domain,
)
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import findings as health
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import host, source
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.labels import gfd_labels
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.nvml import (
    collect_gpus,
    collect_topology,
    system_info,
)
from ansible_collections.gpufleet.stack.plugins.module_utils._node.kernels import kernel_report, next_boot_problem

# Where the pynvml role puts nvidia-ml-py (roles/pynvml/vars/main.yml); searched before the interpreter's own paths.
BINDINGS_DIR = "/usr/local/lib/gpufleet/python"


def empty_facts():
    return {
        "driver_state": "error",
        "driver_state_reason": None,
        "driver_version": None,
        "library_version": None,
        "kernel_module_version": None,
        "cuda_driver_version": None,
        "nvml_version": None,
        "kernel_module_flavor": None,
        "nouveau_loaded": False,
        "pci_devices": [],
        "nvswitch_present": False,
        "pci_gpu_count": 0,
        "fabricmanager_required": False,
        "nvlink5_switch": False,
        "nvlsm_required": False,
        "nvlink_domain": None,
        "imex_required": False,
        "gpu_count": 0,
        "gpus": [],
        "topology": {},
        "labels": {},
        "health": [],
        "health_status": "ok",
        "kernel_log": {"read": False, "source": None, "note": None, "xid_lines": []},
        "source": "sysfs",
        "simulated": False,
        "nvml_bindings": None,
        "fabric": {"summary": "none", "devices": [], "peermem": False, "gpu_nic": {}, "nvswitch_bridge": []},
    }


def _import_pynvml(bindings_dir=BINDINGS_DIR):
    """(pynvml module or None, {"path", "version"} or None): the collection's copy first, else the interpreter's."""
    if os.path.isfile(os.path.join(bindings_dir, "pynvml.py")) and bindings_dir not in sys.path:
        sys.path.insert(0, bindings_dir)
    try:
        import pynvml
    except ImportError:
        return None, None
    path = getattr(pynvml, "__file__", None)
    return pynvml, {"path": path, "version": _bindings_release(path)}


def _bindings_release(path):
    """nvidia-ml-py's release from the metadata beside the imported pynvml.py (not another copy's elsewhere on
    sys.path); None for Debian's python3-pynvml or a file copied without its metadata."""
    try:
        from importlib.metadata import distributions
    except ImportError:
        return None
    for dist in distributions(path=[os.path.dirname(path)]) if path else []:
        if (dist.metadata["Name"] or "").lower().replace("_", "-") == "nvidia-ml-py":
            return dist.version
    return None


def _run_nvml(facts, nvml, params, kmod):
    """nvmlInit, gather, nvmlShutdown: sets driver_state and the NVML facts in place."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        facts["driver_state"], facts["driver_state_reason"] = host.classify_init_error(
            getattr(exc, "value", None), facts["library_version"], kmod.get("version")
        )
        return
    try:
        info = system_info(nvml)
        facts["driver_state"] = "loaded"
        facts["driver_state_reason"] = "nvmlInit succeeded"
        facts["driver_version"] = info["driver_version"]
        facts["library_version"] = facts["library_version"] or info["driver_version"]
        facts["cuda_driver_version"] = host.cuda_version_string(info["cuda_driver_version_int"])
        facts["nvml_version"] = info["nvml_version"]
        facts["gpus"], handles = collect_gpus(nvml, info["gpu_count"], params.get("gather_processes", True))
        facts["gpu_count"] = len(facts["gpus"])
        if params.get("gather_topology", True):
            facts["topology"] = collect_topology(nvml, handles)
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def gather(params, read_kernel_log):
    """Build the facts dict. read_kernel_log() -> (lines or None, source, note)."""
    facts = empty_facts()
    lib = source.library()
    view = source.host_view(lib, params.get("sysfs_root", "/"), params.get("procfs_root", "/"))
    kmod, pci = view["kernel_module"], view["pci_devices"]
    facts.update(
        {
            "simulated": view["simulated"],
            "library_version": lib.get("version"),
            "kernel_module_version": kmod["version"],
            "kernel_module_flavor": kmod["flavor"] if kmod["loaded"] else None,
            "nouveau_loaded": bool(kmod["nouveau_loaded"]),
            "pci_devices": pci,
            "nvswitch_present": any(dev["is_nvswitch"] for dev in pci),
            # GPUs given to a VM (vfio-pci) are not the driver's to bring up.
            "pci_gpu_count": sum(bool(dev["is_gpu"]) and dev.get("driver") != "vfio-pci" for dev in pci),
        }
    )

    call_init, state, reason = host.plan_probe(kmod["loaded"], lib.get("found"), lib.get("standalone"))
    if call_init and not lib.get("standalone") and host.versions_mismatch(lib.get("version"), kmod["version"]):
        # Packages upgraded without a reboot: nvmlInit would only answer LIB_RM_VERSION_MISMATCH.
        call_init, state, reason = (
            False,
            *host.classify_init_error(host.NVML_ERROR_LIB_RM_VERSION_MISMATCH, lib.get("version"), kmod["version"]),
        )
    facts["driver_state"], facts["driver_state_reason"] = state, reason
    nvml, facts["nvml_bindings"] = _import_pynvml() if call_init else (None, None)
    if call_init and nvml is None:
        facts["driver_state"] = "error"
        facts["driver_state_reason"] = "the pynvml module (PyPI nvidia-ml-py) is not installed on the managed host"
    elif call_init:
        facts["source"] = lib.get("source") or "nvml"
        _run_nvml(facts, nvml, params, kmod)

    if params.get("gather_fabric", True):
        buses = [gpu["pci_bus_id"] for gpu in facts["gpus"] if gpu.get("pci_bus_id")]
        facts["fabric"] = fabric_facts(params.get("sysfs_root", "/"), buses)
    _nvlink_needs(facts)
    _health_and_labels(facts, params, read_kernel_log, view)
    return facts


def _nvlink_needs(facts):
    """What the NVLink fabric needs on this node (Fabric Manager user guide; NVIDIA's driver container): Fabric
    Manager where NVSwitches are local (on PCI up to NVLink 4, behind the baseboard's management bridge from NVLink
    5, which also needs NVLSM); IMEX where the GPUs are wired to NVLink switches outside the node (GB200 NVL)."""
    facts["nvlink5_switch"] = bool(facts["fabric"].get("nvswitch_bridge"))
    local = facts["nvswitch_present"] or facts["nvlink5_switch"]
    facts["fabricmanager_required"] = local
    facts["nvlsm_required"] = facts["nvlink5_switch"]
    facts["imex_required"] = multinode_nvlink(facts["gpus"], local)
    facts["nvlink_domain"] = nvlink_domain(facts["gpus"]) if facts["imex_required"] else None


def _health_and_labels(facts, params, read_kernel_log, view):
    findings = health.host_findings(
        facts["driver_state"],
        facts["driver_state_reason"],
        facts["pci_devices"],
        facts["nouveau_loaded"],
        facts["gpu_count"],
    )
    for gpu in facts["gpus"]:
        findings.extend(health.gpu_findings(gpu, params.get("temperature_threshold", 85)))
    if params.get("kernel_log", True):
        lines, where, note = source.kernel_log(view, read_kernel_log)
        xid_lines = host.kernel_log_xid_lines("\n".join(lines or []))
        facts["kernel_log"] = {"read": lines is not None, "source": where, "note": note, "xid_lines": xid_lines}
        findings.extend(health.xid_findings(xid_lines, facts["gpus"]))
    else:
        facts["kernel_log"]["note"] = "kernel_log=false: not read"
    if params.get("kernels", True) and facts["library_version"]:
        report = kernel_report(params.get("boot_root", "/"), None, facts["library_version"], params.get("modinfo"))
        problem = next_boot_problem(report, facts["library_version"])
        if problem:
            findings.append(health.finding("critical", None, problem, report["next_boot"], facts["library_version"]))
    facts["health"] = findings
    facts["health_status"] = health.health_status(findings)
    facts["labels"] = gfd_labels(
        facts["driver_version"],
        facts["cuda_driver_version"],
        facts["gpus"],
        view["machine"],
    )
