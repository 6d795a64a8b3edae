"""nvmlInit failing as real hosts fail, driver version overrides, per-device errors, symbols and the JSON reader."""

import ctypes
import json
import subprocess

import pynvml as n
import pytest

from .conftest import PROFILES, SIM, build, run_probe

# pynvml calls these names for the queries the collection uses (checked against pynvml 13's wrappers).
PYNVML_SYMBOLS = (
    "nvmlInit",
    "nvmlInit_v2",
    "nvmlInitWithFlags",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetNVMLVersion",
    "nvmlSystemGetCudaDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlSystemGetProcessName",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetHandleByUUID",
    "nvmlDeviceGetHandleBySerial",
    "nvmlDeviceGetHandleByPciBusId",
    "nvmlDeviceGetHandleByPciBusId_v2",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetBoardPartNumber",
    "nvmlDeviceGetVbiosVersion",
    "nvmlDeviceGetBrand",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetMinorNumber",
    "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetComputeMode",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetDefaultEccMode",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetRetiredPages_v2",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetTemperatureV",
    "nvmlDeviceGetTemperatureThreshold",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetPowerManagementLimitConstraints",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetPowerManagementMode",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetSupportedClocksEventReasons",
    "nvmlDeviceGetSupportedClocksThrottleReasons",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkVersion",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceIsMigDeviceHandle",
    "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetComputeInstanceId",
    "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetTopologyCommonAncestor",
    "nvmlDeviceGetUtilizationRates",
    "gpufleet_nvml_sim_profile_path",
    "gpufleet_nvml_sim_host_json",
)


def test_exports_every_symbol_pynvml_calls_and_nothing_internal(libdir):
    lib = ctypes.CDLL(str(libdir / "libnvidia-ml.so.1"))
    missing = [name for name in PYNVML_SYMBOLS if not hasattr(lib, name)]
    assert missing == []
    for internal in ("sim_field", "sj_parse", "sim_dev"):
        assert not hasattr(lib, internal), internal
    soname = subprocess.run(
        ["objdump", "-p", str(libdir / "libnvidia-ml.so.1")], capture_output=True, text=True, check=False
    ).stdout
    if soname:  # binutils present: the SONAME is what ld.so and package tools look for
        assert "SONAME               libnvidia-ml.so.1" in soname


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda d: d.update(init_error="NO_PERMISSION"), n.NVML_ERROR_NO_PERMISSION),
        (lambda d: d.update(init_error="NVML_ERROR_DRIVER_NOT_LOADED"), n.NVML_ERROR_DRIVER_NOT_LOADED),
        (lambda d: d["host"].update(driver_loaded=False), n.NVML_ERROR_DRIVER_NOT_LOADED),
        (lambda d: d["host"].update(kernel_module_version="530.30.02"), n.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
        (lambda d: d.update(init_error="NOT_A_REAL_ERROR"), n.NVML_ERROR_UNKNOWN),
    ],
    ids=["no-permission", "explicit-not-loaded", "module-not-loaded", "module-older-than-library", "bad-name"],
)
def test_init_failures(change, code, probe, derived):
    out = probe(derived("t4-x1", change))
    assert out["init"] == {"error": code}
    assert out["host_json"] is not None  # host facts stay readable without nvmlInit


def test_no_profile_is_a_host_without_driver(probe, tmp_path):
    out = probe(tmp_path / "absent.json")
    assert out["init"] == {"error": n.NVML_ERROR_DRIVER_NOT_LOADED}
    assert out["host_json"] is None


def test_broken_profile_fails_init_with_unknown(probe, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"gpus": [ {"name": "x",} ]}')
    assert probe(path)["init"] == {"error": n.NVML_ERROR_UNKNOWN}


def test_error_strings(probe):
    assert probe("t4-x1")["error_strings"] == {
        "0": "Success",
        "3": "Not Supported",
        "9": "Driver Not Loaded",
        "18": "RM has detected an NVML/RM version mismatch.",
    }


def test_driver_version_env_override_clears_a_mismatch(probe):
    # lib-mismatch: packages say 570.133.20, the loaded module is 550.144.03.
    out = probe("lib-mismatch", env={"GPUFLEET_NVML_SIM_DRIVER_VERSION": "550.144.03"})
    assert out["init"] is None
    assert out["driver_version"] == "550.144.03"
    assert out["nvml_version"] == "12.550.144.03"


def test_library_built_for_a_driver_version_reports_it(tmp_path, derived):
    """What a driver package ships: the library reports its own version, whatever the profile says."""
    libdir = build(tmp_path / "lib575", "--driver-version", "575.57.08", "--cuda-version", "12090")
    stale = run_probe(libdir, PROFILES / "a100-sxm4-40gb-x8-nvswitch.json")
    assert stale["init"] == {"error": n.NVML_ERROR_LIB_RM_VERSION_MISMATCH}  # upgraded, not rebooted
    rebooted = derived("a100-sxm4-40gb-x8-nvswitch", lambda d: d["host"].update(kernel_module_version="575.57.08"))
    out = run_probe(libdir, rebooted)
    assert (out["driver_version"], out["nvml_version"], out["cuda_driver_version"]) == (
        "575.57.08",
        "12.575.57.08",
        12090,
    )


def test_build_rejects_a_malformed_version(tmp_path):
    proc = subprocess.run(
        [str(SIM / "build.sh"), str(tmp_path), "--driver-version", "570; rm -rf /"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "--driver-version must look like 570.133.20" in proc.stderr


def test_lost_gpu_fails_its_queries_only(probe, derived):
    out = probe(derived("hot-failing", lambda d: d["gpus"][1].update(nvml_error="GPU_IS_LOST")))
    assert out["count"] == 2
    assert out["gpus"][0]["name"] == "NVIDIA A100-SXM4-40GB"
    lost = {"error": n.NVML_ERROR_GPU_IS_LOST}
    assert (out["gpus"][1]["name"], out["gpus"][1]["temperature"], out["gpus"][1]["processes"]) == (lost,) * 3


def test_field_level_error_and_null_is_unsupported(probe, derived):
    def change(d):
        d["gpus"][0]["temperature"]["gpu"] = {"nvml_error": "NO_DATA"}
        d["gpus"][0]["power"] = None

    gpu = probe(derived("t4-x1", change))["gpus"][0]
    assert gpu["temperature"] == {"error": n.NVML_ERROR_NO_DATA}
    assert gpu["power_usage"] == gpu["power_limit"] == {"error": n.NVML_ERROR_NOT_SUPPORTED}
    assert gpu["thresholds"]["slowdown"] == 93


def test_json_reader_decodes_escapes_and_keeps_64_bit_integers(probe, tmp_path):
    data = json.loads((PROFILES / "t4-x1.json").read_text())
    data["gpus"][0]["name"] = 'Tesla T4 \u00e9\u2603\U0001f600 "q" \\ /'
    data["gpus"][0]["memory"]["total_mib"] = 2**43  # 2**63 bytes: beyond double precision
    data["gpus"][0]["memory"]["used_mib"] = 1
    path = tmp_path / "escapes.json"
    path.write_text(json.dumps(data, ensure_ascii=True))  # every non-ASCII char as \\uXXXX, emoji as a surrogate pair
    gpu = probe(path)["gpus"][0]
    assert gpu["name"] == data["gpus"][0]["name"]
    assert gpu["memory_v2"]["total"] == 2**63
