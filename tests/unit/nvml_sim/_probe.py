"""Run inside a subprocess whose environment points pynvml at the simulator; print what NVML answers as JSON.

pynvml keeps the loaded library for the life of the process, so each profile gets its own interpreter.
Errors become {"error": <nvmlReturn_t value>} so the test can tell NOT_SUPPORTED from a wrong value.
"""

import ctypes
import json
import sys

import pynvml as n


def call(fn, *args):
    try:
        value = fn(*args)
    except n.NVMLError as exc:
        return {"error": exc.value}
    return plain(value)


def plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, ctypes.Structure):
        return {field[0]: plain(getattr(value, field[0])) for field in value._fields_}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, n.nvmlFriendlyObject):
        return {k: plain(v) for k, v in vars(value).items()}
    if isinstance(value, ctypes.c_uint):
        return value.value
    return value


def processes(handle):
    rows = call(n.nvmlDeviceGetComputeRunningProcesses, handle)
    if isinstance(rows, dict):
        return rows
    return [{k: r[k] for k in ("pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId")} for r in rows]


def sizing(lib, handle):
    """The raw two-call protocol of nvmlDeviceGetComputeRunningProcesses_v3 and of string getters."""
    count = ctypes.c_uint(0)
    first = lib.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(count), None)
    needed = count.value
    result = {"first_call": first, "needed": needed}
    if needed:
        short = ctypes.c_uint(needed - 1)
        buf = (n.c_nvmlProcessInfo_v3_t * needed)()
        result["short_call"] = lib.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(short), buf)
        result["short_count"] = short.value
    name = ctypes.create_string_buffer(4)
    result["name_in_4_bytes"] = lib.nvmlDeviceGetName(handle, name, ctypes.c_uint(4))
    return result


def fabric(handle):
    """nvmlDeviceGetGpuFabricInfoV with the v2 struct (by reference, as the real library needs it)."""
    info = n.c_nvmlGpuFabricInfoV_t()
    try:
        n.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    except n.NVMLError as exc:
        return {"error": exc.value}
    return {"state": info.state & 0xFF, "status": info.status, "cliqueId": info.cliqueId}


def gpu(handle, lib):
    q = {
        "fabric": fabric(handle),
        "name": call(n.nvmlDeviceGetName, handle),
        "uuid": call(n.nvmlDeviceGetUUID, handle),
        "serial": call(n.nvmlDeviceGetSerial, handle),
        "board_part_number": call(n.nvmlDeviceGetBoardPartNumber, handle),
        "vbios_version": call(n.nvmlDeviceGetVbiosVersion, handle),
        "brand": call(n.nvmlDeviceGetBrand, handle),
        "architecture": call(n.nvmlDeviceGetArchitecture, handle),
        "cuda_compute_capability": call(n.nvmlDeviceGetCudaComputeCapability, handle),
        "minor_number": call(n.nvmlDeviceGetMinorNumber, handle),
        "index": call(n.nvmlDeviceGetIndex, handle),
        "pci": call(n.nvmlDeviceGetPciInfo, handle),
        "memory_v1": call(n.nvmlDeviceGetMemoryInfo, handle),
        "memory_v2": call(n.nvmlDeviceGetMemoryInfo, handle, n.nvmlMemory_v2),
        "persistence_mode": call(n.nvmlDeviceGetPersistenceMode, handle),
        "compute_mode": call(n.nvmlDeviceGetComputeMode, handle),
        "ecc_mode": call(n.nvmlDeviceGetEccMode, handle),
        "ecc_errors": {
            f"{counter}.{kind}": call(n.nvmlDeviceGetTotalEccErrors, handle, error_type, counter_type)
            for counter, counter_type in (("volatile", n.NVML_VOLATILE_ECC), ("aggregate", n.NVML_AGGREGATE_ECC))
            for kind, error_type in (
                ("corrected", n.NVML_MEMORY_ERROR_TYPE_CORRECTED),
                ("uncorrected", n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
            )
        },
        "retired_single_bit": call(
            n.nvmlDeviceGetRetiredPages, handle, n.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
        ),
        "retired_double_bit_v2": call(
            n.nvmlDeviceGetRetiredPages_v2, handle, n.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
        ),
        "retired_pending": call(n.nvmlDeviceGetRetiredPagesPendingStatus, handle),
        "remapped_rows": call(n.nvmlDeviceGetRemappedRows, handle),
        "temperature": call(n.nvmlDeviceGetTemperature, handle, n.NVML_TEMPERATURE_GPU),
        "temperature_v": call(n.nvmlDeviceGetTemperatureV, handle, n.NVML_TEMPERATURE_GPU),
        "thresholds": {
            name: call(n.nvmlDeviceGetTemperatureThreshold, handle, value)
            for name, value in (
                ("shutdown", n.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
                ("slowdown", n.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
                ("max_operating", n.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
                ("memory_max", n.NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
            )
        },
        "power_usage": call(n.nvmlDeviceGetPowerUsage, handle),
        "power_limit": call(n.nvmlDeviceGetPowerManagementLimit, handle),
        "power_default_limit": call(n.nvmlDeviceGetPowerManagementDefaultLimit, handle),
        "power_enforced_limit": call(n.nvmlDeviceGetEnforcedPowerLimit, handle),
        "power_constraints": call(n.nvmlDeviceGetPowerManagementLimitConstraints, handle),
        "clocks": {
            name: call(n.nvmlDeviceGetClockInfo, handle, value)
            for name, value in (
                ("graphics", n.NVML_CLOCK_GRAPHICS),
                ("sm", n.NVML_CLOCK_SM),
                ("memory", n.NVML_CLOCK_MEM),
            )
        },
        "max_clocks": {
            name: call(n.nvmlDeviceGetMaxClockInfo, handle, value)
            for name, value in (
                ("graphics", n.NVML_CLOCK_GRAPHICS),
                ("sm", n.NVML_CLOCK_SM),
                ("memory", n.NVML_CLOCK_MEM),
            )
        },
        "event_reasons": call(n.nvmlDeviceGetCurrentClocksEventReasons, handle),
        "throttle_reasons": call(n.nvmlDeviceGetCurrentClocksThrottleReasons, handle),
        "pcie": {
            "gen_current": call(n.nvmlDeviceGetCurrPcieLinkGeneration, handle),
            "gen_max": call(n.nvmlDeviceGetMaxPcieLinkGeneration, handle),
            "width_current": call(n.nvmlDeviceGetCurrPcieLinkWidth, handle),
            "width_max": call(n.nvmlDeviceGetMaxPcieLinkWidth, handle),
        },
        "nvlink_state": [call(n.nvmlDeviceGetNvLinkState, handle, link) for link in range(n.NVML_NVLINK_MAX_LINKS)],
        "nvlink_version": [call(n.nvmlDeviceGetNvLinkVersion, handle, link) for link in range(n.NVML_NVLINK_MAX_LINKS)],
        "mig_mode": call(n.nvmlDeviceGetMigMode, handle),
        "max_mig_devices": call(n.nvmlDeviceGetMaxMigDeviceCount, handle),
        "is_mig": call(n.nvmlDeviceIsMigDeviceHandle, handle),
        "utilization": call(n.nvmlDeviceGetUtilizationRates, handle),
        "processes": processes(handle),
        "sizing": sizing(lib, handle),
    }
    migs = []
    max_mig = q["max_mig_devices"] if isinstance(q["max_mig_devices"], int) else 0
    for slot in range(max_mig):
        mig = call(n.nvmlDeviceGetMigDeviceHandleByIndex, handle, slot)
        if isinstance(mig, dict):
            migs.append({"slot": slot, "error": mig["error"]})
            continue
        mig = n.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        parent = n.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)
        migs.append(
            {
                "slot": slot,
                "is_mig": call(n.nvmlDeviceIsMigDeviceHandle, mig),
                "gpu_instance_id": call(n.nvmlDeviceGetGpuInstanceId, mig),
                "compute_instance_id": call(n.nvmlDeviceGetComputeInstanceId, mig),
                "name": call(n.nvmlDeviceGetName, mig),
                "uuid": call(n.nvmlDeviceGetUUID, mig),
                "memory_v2": call(n.nvmlDeviceGetMemoryInfo, mig, n.nvmlMemory_v2),
                "processes": processes(mig),
                "parent_uuid": call(n.nvmlDeviceGetUUID, parent),
                "by_uuid_is_mig": call(
                    n.nvmlDeviceIsMigDeviceHandle, n.nvmlDeviceGetHandleByUUID(n.nvmlDeviceGetUUID(mig))
                ),
                "temperature": call(n.nvmlDeviceGetTemperature, mig, n.NVML_TEMPERATURE_GPU),
            }
        )
    q["mig_devices"] = migs
    q["gpu_instance_id_on_parent"] = call(n.nvmlDeviceGetGpuInstanceId, handle)
    return q


def main():
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    for name in ("gpufleet_nvml_sim_profile_path", "gpufleet_nvml_sim_host_json"):
        getattr(lib, name).restype = ctypes.c_char_p
    lib.nvmlErrorString.restype = ctypes.c_char_p
    raw_host = lib.gpufleet_nvml_sim_host_json()
    count = ctypes.c_uint(0)
    out = {
        "profile_path": lib.gpufleet_nvml_sim_profile_path().decode(),
        "host_json": raw_host.decode() if raw_host else None,
        # Straight into the library, before any init: pynvml would refuse on its own before reaching it.
        "before_init": {
            "count": lib.nvmlDeviceGetCount_v2(ctypes.byref(count)),
            "shutdown": lib.nvmlShutdown(),
            "driver_version": lib.nvmlSystemGetDriverVersion(ctypes.create_string_buffer(80), 80),
        },
        "error_strings": {code: lib.nvmlErrorString(code).decode() for code in (0, 3, 9, 18)},
    }
    out["init"] = call(n.nvmlInit)
    if out["init"] is not None:
        print(json.dumps(out))
        return
    out["driver_version"] = call(n.nvmlSystemGetDriverVersion)
    out["nvml_version"] = call(n.nvmlSystemGetNVMLVersion)
    out["cuda_driver_version"] = call(n.nvmlSystemGetCudaDriverVersion_v2)
    out["count"] = call(n.nvmlDeviceGetCount)
    handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(out["count"])]
    out["gpus"] = [gpu(h, lib) for h in handles]
    for i, q in enumerate(out["gpus"]):
        by_uuid = call(n.nvmlDeviceGetHandleByUUID, q["uuid"]) if isinstance(q["uuid"], str) else None
        q["index_by_uuid"] = call(n.nvmlDeviceGetIndex, n.nvmlDeviceGetHandleByUUID(q["uuid"])) if by_uuid else None
        bus = q["pci"]["busIdLegacy"] if isinstance(q["pci"], dict) and "busIdLegacy" in q["pci"] else None
        q["index_by_pci"] = call(n.nvmlDeviceGetIndex, n.nvmlDeviceGetHandleByPciBusId(bus)) if bus else None
        q["topology"] = [call(n.nvmlDeviceGetTopologyCommonAncestor, handles[i], other) for other in handles]
    pids = [p["pid"] for q in out["gpus"] if isinstance(q["processes"], list) for p in q["processes"]]
    out["process_names"] = {str(pid): call(n.nvmlSystemGetProcessName, pid) for pid in pids}
    out["unknown_process"] = call(n.nvmlSystemGetProcessName, 999999)
    serial = next((q["serial"] for q in out["gpus"] if isinstance(q["serial"], str)), None)
    out["index_by_serial"] = call(n.nvmlDeviceGetIndex, n.nvmlDeviceGetHandleBySerial(serial)) if serial else None
    out["handle_out_of_range"] = call(n.nvmlDeviceGetHandleByIndex, out["count"])
    out["unknown_uuid"] = call(n.nvmlDeviceGetHandleByUUID, "GPU-00000000-0000-0000-0000-000000000000")
    n.nvmlInit()  # reference counted: one shutdown must leave it initialised
    n.nvmlShutdown()
    out["count_after_one_shutdown"] = call(n.nvmlDeviceGetCount)
    n.nvmlShutdown()
    out["count_after_shutdown"] = call(n.nvmlDeviceGetCount)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
