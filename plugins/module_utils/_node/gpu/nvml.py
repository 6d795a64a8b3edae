# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-GPU and system queries through pynvml (nvidia-ml-py), after nvmlInit succeeded.

Every query goes through _query(): a card that does not support it (NVML_ERROR_NOT_SUPPORTED), an old
driver without the entry point (NVML_ERROR_FUNCTION_NOT_FOUND) or an older pynvml without the wrapper
gives None, never an exception. The nvml argument is the imported pynvml module.
"""

from __future__ import annotations

import ctypes
import uuid

from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.names import (
    architecture_name,
    compute_mode_name,
    mig_profile_from_name,
    nvlink_version_name,
    throttle_reason_names,
    topology_level_name,
)

MIB = 1024 * 1024


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").rstrip("\x00")
    return value


def _query(nvml, name, *args):
    func = getattr(nvml, name, None)
    if func is None:
        return None
    try:
        return _text(func(*args))
    except nvml.NVMLError:
        return None
    except UnicodeDecodeError as err:
        # nvidia-ml-py decodes NVML's bytes strictly (a damaged InfoROM's name): keep them, decoded with replacement.
        return _text(err.object)


def _first(nvml, names, *args):
    for name in names:
        value = _query(nvml, name, *args)
        if value is not None:
            return value
    return None


def _watts(milliwatts):
    return None if milliwatts is None else round(milliwatts / 1000.0, 1)


def system_info(nvml):
    """Driver, CUDA driver and NVML versions, and the device count."""
    return {
        "driver_version": _query(nvml, "nvmlSystemGetDriverVersion"),
        "cuda_driver_version_int": _query(nvml, "nvmlSystemGetCudaDriverVersion"),
        "nvml_version": _query(nvml, "nvmlSystemGetNVMLVersion"),
        "gpu_count": _query(nvml, "nvmlDeviceGetCount") or 0,
    }


def _ecc(nvml, handle):
    modes = _query(nvml, "nvmlDeviceGetEccMode", handle)
    current, pending = modes if modes else (None, None)

    def count(error_type, counter):
        return _query(nvml, "nvmlDeviceGetTotalEccErrors", handle, error_type, counter)

    corrected, uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    return {
        "current": None if current is None else bool(current),
        "pending": None if pending is None else bool(pending),
        "volatile_corrected": count(corrected, nvml.NVML_VOLATILE_ECC),
        "volatile_uncorrected": count(uncorrected, nvml.NVML_VOLATILE_ECC),
        "aggregate_corrected": count(corrected, nvml.NVML_AGGREGATE_ECC),
        "aggregate_uncorrected": count(uncorrected, nvml.NVML_AGGREGATE_ECC),
    }


def _retired_pages(nvml, handle):
    def count(cause):
        pages = _query(nvml, "nvmlDeviceGetRetiredPages", handle, cause)
        return None if pages is None else len(pages)

    pending = _query(nvml, "nvmlDeviceGetRetiredPagesPendingStatus", handle)
    return {
        "single_bit": count(nvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS),
        "double_bit": count(nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR),
        "pending": None if pending is None else bool(pending),
    }


def _remapped_rows(nvml, handle):
    rows = _query(nvml, "nvmlDeviceGetRemappedRows", handle)
    if not rows:
        return {"correctable": None, "uncorrectable": None, "pending": None, "failed": None}
    correctable, uncorrectable, pending, failed = rows
    return {
        "correctable": correctable,
        "uncorrectable": uncorrectable,
        "pending": bool(pending),
        "failed": bool(failed),
    }


def _clocks(nvml, handle, query):
    return {
        "graphics_mhz": _query(nvml, query, handle, nvml.NVML_CLOCK_GRAPHICS),
        "sm_mhz": _query(nvml, query, handle, nvml.NVML_CLOCK_SM),
        "memory_mhz": _query(nvml, query, handle, nvml.NVML_CLOCK_MEM),
    }


def _power(nvml, handle):
    constraints = _query(nvml, "nvmlDeviceGetPowerManagementLimitConstraints", handle)
    limit = _first(nvml, ("nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit"), handle)
    return {
        "draw_w": _watts(_query(nvml, "nvmlDeviceGetPowerUsage", handle)),
        "limit_w": _watts(limit),
        "default_limit_w": _watts(_query(nvml, "nvmlDeviceGetPowerManagementDefaultLimit", handle)),
        "max_limit_w": _watts(constraints[1]) if constraints else None,
    }


def _nvlink(nvml, handle):
    """Links that answer nvmlDeviceGetNvLinkState; a card without NVLink answers none (links_total 0)."""
    total, up, version = 0, 0, None
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        state = _query(nvml, "nvmlDeviceGetNvLinkState", handle, link)
        if state is None:
            continue
        total += 1
        if state:
            up += 1
            version = version or _query(nvml, "nvmlDeviceGetNvLinkVersion", handle, link)
    return {"links_up": up, "links_total": total, "version": nvlink_version_name(version)}


# NVML_GPU_FABRIC_STATE_* (nvml.h): the GPU's registration with Fabric Manager on NVSwitch systems, Hopper and newer.
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}


def _fabric(nvml, handle):
    """{state, status, clique_id, cluster_uuid} of nvmlDeviceGetGpuFabricInfoV (v2 struct), else the older
    nvmlDeviceGetGpuFabricInfo; None where the GPU has no fabric probe (A100, PCIe cards: NVML_ERROR_NOT_SUPPORTED).
    status is the NVML return code of the probe, meaningful once the state is completed (0: success). cluster_uuid
    and clique_id name the multi-node NVLink domain and partition (GB200 NVL72); a single-node HGX reports the
    all-zero UUID (see _fabric_domain)."""
    for func, struct in (
        ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
        ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
    ):
        if not hasattr(nvml, func) or not hasattr(nvml, struct):
            continue
        info = getattr(nvml, struct)()
        try:
            # pynvml hands the argument to the library as given: a Structure must go by reference (DCGM's tests
            # call it so); passed bare, ctypes copies it by value and the library sees a garbage version field.
            getattr(nvml, func)(handle, ctypes.byref(info))
        except nvml.NVMLError as exc:
            if getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_FUNCTION_NOT_FOUND", 13):
                continue  # a driver before R550 has no ...InfoV: the older call may answer
            return None
        # nvml.h declares the state an unsigned char; pynvml reads it as c_uint, so the padding bytes after it
        # (whatever the library left there) would land in the upper bits.
        state = int(info.state) & 0xFF
        return {
            "state": FABRIC_STATES.get(state, f"unknown-{state}"),
            "status": int(info.status),
            "clique_id": int(info.cliqueId),
            "cluster_uuid": str(uuid.UUID(bytes=bytes(info.clusterUuid))),
        }
    return None


def _processes(nvml, handle):
    """[{pid, used_memory_mib, name}] of the compute processes on the GPU (MIG instances included); None when the
    card cannot list them."""
    rows = _query(nvml, "nvmlDeviceGetComputeRunningProcesses", handle)
    if rows is None:
        return None
    found = []
    for row in rows:
        used = getattr(row, "usedGpuMemory", None)
        found.append(
            {
                "pid": row.pid,
                # NVML_VALUE_NOT_AVAILABLE (pynvml: None) on Windows WDDM and some MIG setups.
                "used_memory_mib": used // MIB if isinstance(used, int) else None,
                "name": _query(nvml, "nvmlSystemGetProcessName", row.pid),
            }
        )
    return found


def _mig(nvml, handle):
    modes = _query(nvml, "nvmlDeviceGetMigMode", handle)
    current, pending = modes if modes else (None, None)
    instances = []
    if current:
        for slot in range(_query(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0):
            mig = _query(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
            if mig is None:
                continue
            name = _query(nvml, "nvmlDeviceGetName", mig)
            memory = _query(nvml, "nvmlDeviceGetMemoryInfo", mig)
            instances.append(
                {
                    "index": slot,
                    "name": name,
                    "profile": mig_profile_from_name(name),
                    "uuid": _query(nvml, "nvmlDeviceGetUUID", mig),
                    "gpu_instance_id": _query(nvml, "nvmlDeviceGetGpuInstanceId", mig),
                    "compute_instance_id": _query(nvml, "nvmlDeviceGetComputeInstanceId", mig),
                    "memory_total_mib": memory.total // MIB if memory else None,
                }
            )
    return {
        "current": None if current is None else bool(current),
        "pending": None if pending is None else bool(pending),
        "instances": instances,
    }


def _pcie(nvml, handle):
    return {
        "gen_current": _query(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "gen_max": _first(
            nvml, ("nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration"), handle
        ),
        "width_current": _query(nvml, "nvmlDeviceGetCurrPcieLinkWidth", handle),
        "width_max": _query(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle),
    }


def gpu_info(nvml, index, handle, gather_processes=True):
    """All per-GPU facts of one device handle."""
    pci = _query(nvml, "nvmlDeviceGetPciInfo", handle)
    capability = _query(nvml, "nvmlDeviceGetCudaComputeCapability", handle)
    memory = _query(nvml, "nvmlDeviceGetMemoryInfo", handle)
    persistence = _query(nvml, "nvmlDeviceGetPersistenceMode", handle)
    utilization = _query(nvml, "nvmlDeviceGetUtilizationRates", handle)
    reasons = _first(
        nvml, ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"), handle
    )
    processes = _processes(nvml, handle) if gather_processes else None
    return {
        "index": index,
        "name": _query(nvml, "nvmlDeviceGetName", handle),
        "uuid": _query(nvml, "nvmlDeviceGetUUID", handle),
        "serial": _query(nvml, "nvmlDeviceGetSerial", handle),
        "pci_bus_id": _text(pci.busId) if pci else None,
        "pci_device_id": f"0x{pci.pciDeviceId >> 16:04x}" if pci else None,
        "minor_number": _query(nvml, "nvmlDeviceGetMinorNumber", handle),
        "architecture": architecture_name(_query(nvml, "nvmlDeviceGetArchitecture", handle)),
        "compute_capability": f"{capability[0]}.{capability[1]}" if capability else None,
        "memory_total_mib": memory.total // MIB if memory else None,
        "persistence_mode": None if persistence is None else bool(persistence),
        "compute_mode": compute_mode_name(_query(nvml, "nvmlDeviceGetComputeMode", handle)),
        "utilization_gpu_pct": utilization.gpu if utilization else None,
        "ecc": _ecc(nvml, handle),
        "retired_pages": _retired_pages(nvml, handle),
        "remapped_rows": _remapped_rows(nvml, handle),
        "temperature": {
            "current_c": _query(nvml, "nvmlDeviceGetTemperature", handle, nvml.NVML_TEMPERATURE_GPU),
            "slowdown_c": _query(
                nvml, "nvmlDeviceGetTemperatureThreshold", handle, nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
            ),
            "shutdown_c": _query(
                nvml, "nvmlDeviceGetTemperatureThreshold", handle, nvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
            ),
        },
        "power": _power(nvml, handle),
        "clocks": _clocks(nvml, handle, "nvmlDeviceGetClockInfo"),
        "clocks_max": _clocks(nvml, handle, "nvmlDeviceGetMaxClockInfo"),
        "throttle_reasons": throttle_reason_names(reasons),
        "pcie": _pcie(nvml, handle),
        "nvlink": _nvlink(nvml, handle),
        "mig": _mig(nvml, handle),
        "compute_processes": None if processes is None else len(processes),
        "processes": processes,
        "fabric": _fabric(nvml, handle),
    }


def collect_gpus(nvml, count, gather_processes=True):
    """(gpus, handles) for devices 0..count-1; a device NVML cannot open or name is listed with its error."""
    gpus, handles = [], []
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            # A card that fell off the bus still has a handle; its name query reports GPU_IS_LOST. (A name that is
            # not UTF-8 is a name: gpu_info reads it with replacement.)
            nvml.nvmlDeviceGetName(handle)
        except UnicodeDecodeError:
            pass
        except nvml.NVMLError as exc:
            gpus.append({"index": index, "error": str(exc)})
            continue
        handles.append((index, handle))
        gpus.append(gpu_info(nvml, index, handle, gather_processes))
    return gpus, handles


def collect_topology(nvml, handles):
    """{"0-1": "hostbridge", ...}: NVML's closest common ancestor of each GPU pair."""
    topology = {}
    for pos, (first, handle_a) in enumerate(handles):
        for second, handle_b in handles[pos + 1 :]:
            level = _query(nvml, "nvmlDeviceGetTopologyCommonAncestor", handle_a, handle_b)
            topology[f"{first}-{second}"] = topology_level_name(level)
    return topology
