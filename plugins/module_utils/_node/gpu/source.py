# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seam between the node's GPU code and where its answers come from: NVML's library (libnvidia-ml.so.1, probed
without nvmlInit) and the host readings beside it (the kernel module, nouveau, the PCI functions, the machine, the
kernel log). PRIVATE to the collection.

The only node code that knows the sandbox's NVML simulator (sandbox/nvml-sim). The simulator is a libnvidia-ml.so.1
that exports marker symbols; it stands in for the kernel module too, so in a sandbox node its profile's `host` object
answers what sysfs answers on a real node (a container's sysfs is the container host's). Everything above this module
(gather, driver_state) asks library(), host_view() and kernel_log() and reads the answers the same way either way;
the one thing the sandbox says about itself is `simulated`, which gpu_facts reports.
"""

from __future__ import annotations

import ctypes
import json
import os

from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import host

LIBRARY = "libnvidia-ml.so.1"  # the soname pynvml loads on Linux
SIM_MARKER = "gpufleet_nvml_sim_profile_path"
NO_MODULE = {"loaded": False, "version": None, "flavor": None, "nouveau_loaded": False}
NO_LIBRARY = {"found": False, "path": None, "version": None, "source": "nvml", "standalone": None, "stand_in": {}}


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


def library():
    """dlopen libnvidia-ml.so.1 the way pynvml will, without nvmlInit: {found, path, version, error, source,
    standalone, stand_in}.

    dlopen of the real library runs no code that touches /dev (tests/unit/gpu_facts/test_real_libnvidia_ml.py
    proves it with Debian's libnvidia-ml1); only nvmlInit does. The simulator exports marker symbols: then
    `standalone` says why nvmlInit is safe without a kernel module, and `stand_in` is its profile's host readings.
    """
    try:
        lib = ctypes.CDLL(LIBRARY)
    except OSError as exc:
        return {**NO_LIBRARY, "error": str(exc)}
    path = _mapped_path("libnvidia-ml")
    probe = {**NO_LIBRARY, "found": True, "path": path, "version": host.library_version_from_path(path)}
    if hasattr(lib, SIM_MARKER):
        found = {}
        for name, key in ((SIM_MARKER, "profile"), ("gpufleet_nvml_sim_host_json", "host_json")):
            func = getattr(lib, name, None)
            if func is not None:
                func.restype = ctypes.c_char_p
                raw = func()
                found[key] = raw.decode("utf-8", "replace") if raw else None
        probe.update(
            source="nvml-simulator",
            standalone="libnvidia-ml.so.1 is the gpufleet NVML simulator; it is safe to initialise",
            stand_in={**simulated_host(found.get("host_json")), "simulated": True},
            version=probe["version"] or simulated_library_version(found.get("profile")),
        )
    return probe


def host_view(lib, sysfs_root="/", procfs_root="/"):
    """What the node says beside the library: {kernel_module {loaded, version, flavor, nouveau_loaded}, pci_devices,
    machine, kernel_log_lines (only where a stand-in gives them), simulated}.

    From sysfs and procfs, except what a library standing in for the driver says instead (the simulator's host
    object: a sandbox node's sysfs is the container host's), and a sandbox node with simulated GPUs and no library
    yet, whose PCI functions come from the simulator's profile (see unpowered_simulated_host)."""
    pci = host.read_pci_devices(sysfs_root)
    stand_in = lib.get("stand_in") or {}
    if not lib.get("found") and not any(dev["is_gpu"] for dev in pci):
        stand_in = unpowered_simulated_host()
    # Under a stand-in the container's sysfs is the container host's: only the stand-in speaks for the module.
    kmod = dict(NO_MODULE) if stand_in else host.read_kernel_module(sysfs_root, procfs_root)
    kmod.update({k: stand_in[k] for k in NO_MODULE if k in stand_in})
    view = {
        "kernel_module": kmod,
        "pci_devices": stand_in.get("pci_devices", pci),
        "machine": stand_in["machine"] if "machine" in stand_in else host.read_machine(sysfs_root),
        "simulated": bool(stand_in),
    }
    if "kernel_log_lines" in stand_in:
        view["kernel_log_lines"] = stand_in["kernel_log_lines"]
    return view


def kernel_log(view, read_kernel_log):
    """(lines or None, source, note): the stand-in's lines where it gives them, else read_kernel_log()."""
    if "kernel_log_lines" in view:
        return view["kernel_log_lines"], "simulator", "kernel log lines from the simulator profile"
    return read_kernel_log()


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
    return {"pci_devices": mapped["pci_devices"], "simulated": True} if mapped.get("pci_devices") else {}


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
