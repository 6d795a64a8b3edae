# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Assemble ansible_facts['gpufleet_gpu']: probe the library safely, then NVML, then health and labels.

The kernel-log reader is passed in by the module (it needs run_command); everything else is here.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sys

from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric.devices import (
    fabric_facts,
    multinode_nvlink,
    nvlink_domain,
)
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import findings as health
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import host
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.labels import gfd_labels
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.nvml import (
    collect_gpus,
    collect_topology,
    system_info,
)
from ansible_collections.gpufleet.stack.plugins.module_utils._node.kernels import kernel_report, next_boot_problem

LIBRARY = "libnvidia-ml.so.1"  # the soname pynvml loads on Linux
SIM_MARKER = "gpufleet_nvml_sim_profile_path"
# Where the pynvml role puts nvidia-ml-py (roles/pynvml/vars/main.yml); searched before the interpreter's own paths.
BINDINGS_DIR = "/usr/local/lib/gpufleet/python"


def _mapped_path(fragment):
    """Path of the first mapped file whose name contains fragment (what dlopen really loaded)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if fragment in path and path.startswith("/"):
                    return path
    except OSError:
        pass
    return None


def probe_library():
    """dlopen libnvidia-ml.so.1 the way pynvml will, without nvmlInit.

    dlopen of the real library runs no code that touches /dev (tests/unit/gpu_facts/test_real_libnvidia_ml.py
    proves it with Debian's libnvidia-ml1); only nvmlInit does. The simulator exports marker symbols.
    """
    try:
        lib = ctypes.CDLL(LIBRARY)
    except OSError as exc:
        return {"found": False, "simulator": False, "path": None, "version": None, "error": str(exc)}
    path = _mapped_path("libnvidia-ml")
    probe = {"found": True, "simulator": False, "path": path, "version": host.library_version_from_path(path)}
    if hasattr(lib, SIM_MARKER):
        probe["simulator"] = True
        for name, key in ((SIM_MARKER, "profile"), ("gpufleet_nvml_sim_host_json", "host_json")):
            func = getattr(lib, name, None)
            if func is not None:
                func.restype = ctypes.c_char_p
                raw = func()
                probe[key] = raw.decode("utf-8", "replace") if raw else None
        probe["version"] = probe["version"] or simulated_library_version(probe.get("profile"))
    return probe


def simulated_library_version(profile_path):
    """The driver version the simulator stands in for: its override variable, else the profile's."""
    override = os.environ.get("GPUFLEET_NVML_SIM_DRIVER_VERSION")
    if override:
        return override
    try:
        with open(profile_path or "", encoding="utf-8") as handle:
            version = json.load(handle).get("driver_version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


# The sandbox's NVML simulator reads its profile from here (sandbox/nvml-sim); see unpowered_simulated_host.
SIM_PROFILE = "/etc/gpufleet/nvml-sim/profile.json"


def unpowered_simulated_host():
    """A sandbox node with simulated GPUs and no driver yet: only their PCI functions, from the simulator's profile.

    On real hardware sysfs lists the GPUs and NVSwitches before any driver is installed, which is how the driver
    role decides on Fabric Manager for a new host; a sandbox node's sysfs is the host machine's, so the profile
    stands in for it. Nothing else of the profile is used: without the library there is no NVML to ask."""
    try:
        with open(os.environ.get("GPUFLEET_NVML_SIM_PROFILE") or SIM_PROFILE, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    mapped = simulated_host(json.dumps(data.get("host") or {})) if isinstance(data, dict) else {}
    return {"pci_devices": mapped["pci_devices"]} if mapped.get("pci_devices") else {}


def simulated_host(host_json):
    """The simulator profile's `host` object mapped onto our host facts; {} when absent or unreadable."""
    try:
        data = json.loads(host_json or "{}")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    mapped = {}
    if "driver_loaded" in data:
        mapped["loaded"] = bool(data["driver_loaded"])
    for key, ours in (
        ("kernel_module_version", "version"),
        ("kernel_module_flavor", "flavor"),
        ("nouveau_loaded", "nouveau_loaded"),
        ("machine", "machine"),
    ):
        if key in data:
            mapped[ours] = data[key]
    lines = data.get("xid_lines", data.get("kernel_log"))
    if isinstance(lines, str):
        lines = lines.splitlines()
    if isinstance(lines, list):
        mapped["kernel_log_lines"] = [str(line) for line in lines]
    devices = data.get("pci_devices")
    if isinstance(devices, list):
        mapped["pci_devices"] = [
            host.pci_device(
                dev.get("bus_id"),
                dev.get("vendor_id", host.NVIDIA_PCI_VENDOR),
                dev.get("device_id"),
                dev.get("class", ""),
                dev.get("driver"),
            )
            for dev in devices
            if isinstance(dev, dict)
        ]
    return mapped


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


def gather(params, read_kernel_log, probe=None):
    """Build the facts dict. read_kernel_log() -> (lines or None, source, note)."""
    facts = empty_facts()
    probe = probe if probe is not None else probe_library()
    kmod = host.read_kernel_module(params.get("sysfs_root", "/"), params.get("procfs_root", "/"))
    pci = host.read_pci_devices(params.get("sysfs_root", "/"))
    sim = simulated_host(probe.get("host_json")) if probe.get("simulator") else {}
    if not probe.get("found") and not any(dev["is_gpu"] for dev in pci):
        sim = unpowered_simulated_host()
    kmod.update({k: sim[k] for k in ("loaded", "version", "flavor", "nouveau_loaded") if k in sim})
    pci = sim.get("pci_devices", pci)
    facts.update(
        {
            "simulated": bool(probe.get("simulator") or sim),
            "library_version": probe.get("version"),
            "kernel_module_version": kmod["version"],
            "kernel_module_flavor": kmod["flavor"] if kmod["loaded"] else None,
            "nouveau_loaded": bool(kmod["nouveau_loaded"]),
            "pci_devices": pci,
            "nvswitch_present": any(dev["is_nvswitch"] for dev in pci),
            # GPUs given to a VM (vfio-pci) are not the driver's to bring up.
            "pci_gpu_count": sum(bool(dev["is_gpu"]) and dev.get("driver") != "vfio-pci" for dev in pci),
        }
    )

    call_init, state, reason = host.plan_probe(kmod["loaded"], probe.get("found"), probe.get("simulator"))
    if call_init and not probe.get("simulator") and host.versions_mismatch(probe.get("version"), kmod["version"]):
        # Packages upgraded without a reboot: nvmlInit would only answer LIB_RM_VERSION_MISMATCH.
        call_init, state, reason = (
            False,
            *host.classify_init_error(host.NVML_ERROR_LIB_RM_VERSION_MISMATCH, probe.get("version"), kmod["version"]),
        )
    facts["driver_state"], facts["driver_state_reason"] = state, reason
    nvml, facts["nvml_bindings"] = _import_pynvml() if call_init else (None, None)
    if call_init and nvml is None:
        facts["driver_state"] = "error"
        facts["driver_state_reason"] = "the pynvml module (PyPI nvidia-ml-py) is not installed on the managed host"
    elif call_init:
        facts["source"] = "nvml-simulator" if probe.get("simulator") else "nvml"
        _run_nvml(facts, nvml, params, kmod)

    if params.get("gather_fabric", True):
        buses = [gpu["pci_bus_id"] for gpu in facts["gpus"] if gpu.get("pci_bus_id")]
        facts["fabric"] = fabric_facts(params.get("sysfs_root", "/"), buses)
    _nvlink_needs(facts)
    _health_and_labels(facts, params, read_kernel_log, sim)
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


def _health_and_labels(facts, params, read_kernel_log, sim):
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
        if "kernel_log_lines" in sim:
            lines, source, note = sim["kernel_log_lines"], "simulator", "kernel log lines from the simulator profile"
        else:
            lines, source, note = read_kernel_log()
        xid_lines = host.kernel_log_xid_lines("\n".join(lines or []))
        facts["kernel_log"] = {"read": lines is not None, "source": source, "note": note, "xid_lines": xid_lines}
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
        sim.get("machine", host.read_machine(params.get("sysfs_root", "/"))),
    )
