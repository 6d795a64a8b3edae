"""Every shipped profile, read back through pynvml's own calls against the simulator library.

The generic test derives what NVML must answer from each profile file (MiB to bytes, watts to milliwatts,
names to NVML enum values, absent to NOT_SUPPORTED); the per-profile tests pin the hardware facts a user of
that host relies on, so a profile that drifts from the real card fails too.
"""

import json
import subprocess

import pynvml as n
import pytest

from .conftest import PROFILES

NOT_SUPPORTED = {"error": n.NVML_ERROR_NOT_SUPPORTED}
MIB = 1 << 20
# Expected nvmlInit outcome per shipped profile (None: success); a new profile must be added here on purpose.
INIT = {
    "a100-mig": None,
    "a100-sxm4-40gb-x8-nvswitch": None,
    "a100-sxm4-40gb-x8-nvswitch-gpu-lost": None,
    "b200-hgx-x8": None,
    "driver-not-loaded": n.NVML_ERROR_DRIVER_NOT_LOADED,
    "gb200-nvl72-tray-x4": None,
    "gb200-nvl72-tray-x4-fabric-insufficient": None,
    "h100-sxm5-80gb-x8": None,
    "h100-sxm5-80gb-x8-fabric-in-progress": None,
    "h100-sxm5-80gb-x8-fm-not-started": None,
    "hot-failing": None,
    "lib-mismatch": n.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    "rtx-4090-x1": None,
    "t4-x1": None,
}


def load(name):
    return json.loads((PROFILES / f"{name}.json").read_text())


def visible(data):
    """The GPUs NVML enumerates: a GPU with nvml_visible false is only on the PCI bus (host.pci_devices)."""
    return [g for g in data["gpus"] if g.get("nvml_visible", True)]


FABRIC_STATES = {"NOT_SUPPORTED": 0, "NOT_STARTED": 1, "IN_PROGRESS": 2, "COMPLETED": 3}


def reason_mask(names):
    mask = 0
    for name in names:
        mask |= getattr(n, "nvmlClocksThrottleReason" + "".join(p.capitalize() for p in name.split("_")))
    return mask


def watts(value):
    return round(value * 1000)  # the profile has watts, NVML answers milliwatts


def or_unsupported(section, key, convert=lambda v: v):
    value = (section or {}).get(key)
    return NOT_SUPPORTED if value is None else convert(value)


def expected_gpu(gpu):
    """What pynvml must return for one profile GPU, computed from the profile alone."""
    mem = gpu["memory"]
    total, reserved, used = (mem.get(k, 0) * MIB for k in ("total_mib", "reserved_mib", "used_mib"))
    ecc = gpu.get("ecc")
    errors = (ecc or {}).get("errors") or {}
    temp, power, nvlink, mig = (gpu.get(k) for k in ("temperature", "power", "nvlink", "mig"))
    links = (nvlink or {}).get("links", 0)
    inactive = set((nvlink or {}).get("inactive", []))
    return {
        "name": gpu["name"],
        "uuid": gpu["uuid"],
        "serial": gpu.get("serial", NOT_SUPPORTED),
        "board_part_number": gpu.get("board_part_number", NOT_SUPPORTED),
        "vbios_version": gpu.get("vbios_version", NOT_SUPPORTED),
        "brand": getattr(n, f"NVML_BRAND_{gpu['brand']}"),
        "architecture": getattr(n, f"NVML_DEVICE_ARCH_{gpu['architecture']}"),
        "cuda_compute_capability": gpu["cuda_compute_capability"],
        "minor_number": gpu["minor_number"],
        "memory_v1": {"total": total, "used": used + reserved, "free": total - used - reserved},
        "memory_v2": {
            "version": n.nvmlMemory_v2,
            "total": total,
            "reserved": reserved,
            "used": used,
            "free": total - used - reserved,
        },
        "persistence_mode": int(gpu["persistence_mode"]),
        "compute_mode": getattr(n, f"NVML_COMPUTEMODE_{gpu['compute_mode']}"),
        "ecc_mode": [int(ecc["current"]), int(ecc["pending"])] if ecc else NOT_SUPPORTED,
        "ecc_errors": {
            f"{c}.{k}": errors[c][k] if errors.get(c) else NOT_SUPPORTED
            for c in ("volatile", "aggregate")
            for k in ("corrected", "uncorrected")
        },
        "remapped_rows": (
            [int(gpu["remapped_rows"][k]) for k in ("correctable", "uncorrectable", "pending", "failure")]
            if gpu.get("remapped_rows")
            else NOT_SUPPORTED
        ),
        "retired_pending": or_unsupported(gpu.get("retired_pages"), "pending", int),
        "temperature": temp["gpu"],
        "temperature_v": temp["gpu"],
        "thresholds": {k: or_unsupported(temp, k) for k in ("shutdown", "slowdown", "max_operating", "memory_max")},
        "power_usage": or_unsupported(power, "usage_w", watts),
        "power_limit": or_unsupported(power, "limit_w", watts),
        "power_default_limit": or_unsupported(power, "default_limit_w", watts),
        "power_enforced_limit": or_unsupported(power, "enforced_limit_w", watts),
        "power_constraints": [watts(power["min_limit_w"]), watts(power["max_limit_w"])],
        "clocks": {k: gpu["clocks"][k] for k in ("graphics", "sm", "memory")},
        "max_clocks": {k: gpu["max_clocks"][k] for k in ("graphics", "sm", "memory")},
        "event_reasons": reason_mask(gpu["clocks_event_reasons"]),
        "throttle_reasons": reason_mask(gpu["clocks_event_reasons"]),
        "pcie": {
            "gen_current": gpu["pci"]["link_gen_current"],
            "gen_max": gpu["pci"]["link_gen_max"],
            "width_current": gpu["pci"]["link_width_current"],
            "width_max": gpu["pci"]["link_width_max"],
        },
        "nvlink_state": [
            int(link not in inactive) if link < links else NOT_SUPPORTED for link in range(n.NVML_NVLINK_MAX_LINKS)
        ],
        "nvlink_version": [
            nvlink["version"] if link < links else NOT_SUPPORTED for link in range(n.NVML_NVLINK_MAX_LINKS)
        ],
        "mig_mode": [int(mig["current"]), int(mig["pending"])] if mig else NOT_SUPPORTED,
        "max_mig_devices": mig["max_devices"] if mig else NOT_SUPPORTED,
        "is_mig": 0,
        "utilization": (
            {"gpu": gpu["utilization"]["gpu"], "memory": gpu["utilization"]["memory"]}
            if gpu.get("utilization")
            else NOT_SUPPORTED
        ),
        "gpu_instance_id_on_parent": NOT_SUPPORTED,
        "fabric": (
            {
                "state": FABRIC_STATES[gpu["fabric"]["state"]],
                "status": getattr(
                    n, "NVML_" + ("" if gpu["fabric"]["status"] == "SUCCESS" else "ERROR_") + gpu["fabric"]["status"]
                ),
                "cliqueId": gpu["fabric"]["clique_id"],
            }
            if gpu.get("fabric")
            else NOT_SUPPORTED
        ),
    }


def expected_process_rows(gpu):
    """Every process the profile puts on this GPU, its MIG devices included."""
    rows = list(gpu.get("processes", []))
    for dev in (gpu.get("mig") or {}).get("devices", []):
        rows += dev["processes"]
    return rows


def expected_processes(gpu):
    none = 0xFFFFFFFF
    rows = [(p["pid"], p["used_memory_mib"] * MIB, none, none) for p in gpu.get("processes", [])]
    for dev in (gpu.get("mig") or {}).get("devices", []):
        rows += [
            (p["pid"], p["used_memory_mib"] * MIB, dev["gpu_instance_id"], dev["compute_instance_id"])
            for p in dev["processes"]
        ]
    return sorted(rows)


def test_the_shipped_profiles_are_the_ones_tested():
    assert sorted(p.stem for p in PROFILES.glob("*.json")) == sorted(INIT)


@pytest.mark.parametrize("name", sorted(INIT))
def test_profile_answers_through_pynvml(name, probe):
    data = load(name)
    out = probe(name)
    # The library is loaded but not initialised: it must refuse, not answer.
    assert out["before_init"] == {k: n.NVML_ERROR_UNINITIALIZED for k in ("count", "shutdown", "driver_version")}
    assert json.loads(out["host_json"]) == data["host"]
    assert out["profile_path"] == str(PROFILES / f"{name}.json")
    if INIT[name] is not None:
        assert out["init"] == {"error": INIT[name]}
        return
    assert out["init"] is None
    assert out["driver_version"] == data["driver_version"]
    assert out["nvml_version"] == data["nvml_version"]
    assert out["cuda_driver_version"] == data["cuda_driver_version"]
    gpus = visible(data)
    assert out["count"] == len(gpus)
    for index, (gpu, got) in enumerate(zip(gpus, out["gpus"], strict=True)):
        want = expected_gpu(gpu)
        assert {k: got[k] for k in want} == want, f"GPU {index}"
        assert got["index"] == got["index_by_uuid"] == got["index_by_pci"] == index
        assert got["pci"]["busId"] == gpu["pci"]["bus_id"]
        assert f"0x{got['pci']['pciDeviceId']:08X}" == gpu["pci"]["device_id"]
        assert f"0x{got['pci']['pciSubSystemId']:08X}" == gpu["pci"]["subsystem_id"]
        procs = sorted(tuple(p.values()) for p in got["processes"])
        assert procs == expected_processes(gpu), f"GPU {index}"
    names = {str(p["pid"]): p["name"] for gpu in gpus for p in expected_process_rows(gpu)}
    assert out["process_names"] == names
    assert out["unknown_process"] == {"error": n.NVML_ERROR_NOT_FOUND}
    first_serial = next((g["serial"] for g in gpus if g.get("serial")), None)
    assert out["index_by_serial"] == (0 if first_serial else None)
    assert out["handle_out_of_range"] == {"error": n.NVML_ERROR_INVALID_ARGUMENT}
    assert out["unknown_uuid"] == {"error": n.NVML_ERROR_NOT_FOUND}
    # nvmlInit is reference counted: the first of two shutdowns keeps the library usable.
    assert out["count_after_one_shutdown"] == len(gpus)
    assert out["count_after_shutdown"] == {"error": n.NVML_ERROR_UNINITIALIZED}


def test_hgx_a100_with_nvswitch(probe):
    out = probe("a100-sxm4-40gb-x8-nvswitch")
    assert out["count"] == 8
    assert {g["name"] for g in out["gpus"]} == {"NVIDIA A100-SXM4-40GB"}
    for gpu in out["gpus"]:
        assert gpu["nvlink_state"][:12] == [n.NVML_FEATURE_ENABLED] * 12  # NVLink3: 12 links per A100
        assert gpu["nvlink_state"][12] == NOT_SUPPORTED
        assert gpu["memory_v2"]["total"] == 40960 * MIB
        assert gpu["cuda_compute_capability"] == [8, 0]
        assert gpu["power_constraints"] == [100000, 400000]
    top = out["gpus"][0]["topology"]
    assert top[:5] == [n.NVML_TOPOLOGY_INTERNAL, n.NVML_TOPOLOGY_MULTIPLE, n.NVML_TOPOLOGY_NODE,
                       n.NVML_TOPOLOGY_NODE, n.NVML_TOPOLOGY_SYSTEM]  # fmt: skip
    pci = json.loads(out["host_json"])["pci_devices"]
    assert sum(d["class"].startswith("0x0680") for d in pci) == 6  # six NVSwitch chips on HGX A100
    assert sum(d["class"].startswith("0x0302") for d in pci) == 8


def test_hgx_h100(probe):
    out = probe("h100-sxm5-80gb-x8")
    assert out["count"] == 8
    gpu = out["gpus"][0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["architecture"] == n.NVML_DEVICE_ARCH_HOPPER
    assert gpu["cuda_compute_capability"] == [9, 0]
    assert gpu["nvlink_state"][:18] == [n.NVML_FEATURE_ENABLED] * 18  # NVLink4: 18 links per H100 SXM5
    assert gpu["nvlink_state"][18] == NOT_SUPPORTED
    assert gpu["pcie"]["gen_max"] == 5
    assert gpu["power_limit"] == 700000


def test_t4_uses_page_retirement_not_row_remapping(probe):
    gpu = probe("t4-x1")["gpus"][0]
    assert gpu["architecture"] == n.NVML_DEVICE_ARCH_TURING
    assert gpu["retired_single_bit"] == [0x3A7F2000]
    assert gpu["retired_double_bit_v2"] == []
    assert gpu["retired_pending"] == n.NVML_FEATURE_DISABLED
    assert gpu["remapped_rows"] == NOT_SUPPORTED
    assert gpu["ecc_errors"]["volatile.corrected"] == 3


def test_consumer_card_lacks_datacenter_features(probe):
    gpu = probe("rtx-4090-x1")["gpus"][0]
    assert gpu["brand"] == n.NVML_BRAND_GEFORCE
    for key in ("serial", "ecc_mode", "remapped_rows", "mig_mode", "max_mig_devices", "retired_pending"):
        assert gpu[key] == NOT_SUPPORTED, key
    assert list(gpu["ecc_errors"].values()) == [NOT_SUPPORTED] * 4
    assert all(state == NOT_SUPPORTED for state in gpu["nvlink_state"])
    assert gpu["event_reasons"] == n.nvmlClocksEventReasonSwPowerCap


def test_mig_instances(probe):
    gpu = probe("a100-mig")["gpus"][0]
    assert gpu["mig_mode"] == [n.NVML_DEVICE_MIG_ENABLE, n.NVML_DEVICE_MIG_ENABLE]
    migs = [m for m in gpu["mig_devices"] if "error" not in m]
    assert [(m["gpu_instance_id"], m["compute_instance_id"]) for m in migs] == [(1, 0), (5, 0), (13, 0)]
    assert [m["name"].rsplit(" ", 1)[-1] for m in migs] == ["3g.20gb", "2g.10gb", "1g.5gb"]
    assert all(m["is_mig"] == 1 and m["parent_uuid"] == gpu["uuid"] for m in migs)
    assert all(m["uuid"].startswith("MIG-") for m in migs)
    assert all(m["by_uuid_is_mig"] == 1 for m in migs)  # nvmlDeviceGetHandleByUUID takes MIG UUIDs too
    assert [m["processes"][0]["pid"] for m in migs if m["processes"]] == [5101, 5102]
    assert migs[0]["temperature"] == NOT_SUPPORTED  # per-instance sensors do not exist
    assert [m["error"] for m in gpu["mig_devices"] if "error" in m] == [n.NVML_ERROR_NOT_FOUND] * 4
    # The parent lists every instance's processes, tagged with their GPU/compute instance ids.
    assert sorted((p["pid"], p["gpuInstanceId"]) for p in gpu["processes"]) == [(5101, 1), (5102, 13)]
    assert gpu["utilization"] == NOT_SUPPORTED


def test_hot_failing_gpu(probe):
    out = probe("hot-failing")
    healthy, hot = out["gpus"]
    assert hot["temperature"] > hot["thresholds"]["slowdown"] == 89
    assert hot["temperature"] < hot["thresholds"]["shutdown"]
    assert hot["event_reasons"] & n.nvmlClocksEventReasonSwThermalSlowdown
    assert hot["event_reasons"] & n.nvmlClocksEventReasonHwThermalSlowdown
    assert hot["clocks"]["graphics"] < hot["max_clocks"]["graphics"]
    assert hot["ecc_errors"]["volatile.uncorrected"] == 2
    assert hot["remapped_rows"] == [0, 1, 1, 0]  # one uncorrectable row remap pending a GPU reset
    assert healthy["event_reasons"] == n.nvmlClocksEventReasonGpuIdle
    assert healthy["remapped_rows"] == [0, 0, 0, 0]
    xids = json.loads(out["host_json"])["xid_lines"]
    assert [line.split(": ")[2].split(",")[0] for line in xids] == ["48", "63"]


def test_sizing_protocol_and_short_buffers(probe):
    gpu = probe("a100-sxm4-40gb-x8-nvswitch")["gpus"][0]
    assert gpu["sizing"] == {
        "first_call": n.NVML_ERROR_INSUFFICIENT_SIZE,
        "needed": 1,
        "short_call": n.NVML_ERROR_INSUFFICIENT_SIZE,
        "short_count": 1,
        "name_in_4_bytes": n.NVML_ERROR_INSUFFICIENT_SIZE,
    }
    idle = probe("h100-sxm5-80gb-x8")["gpus"][0]
    assert idle["sizing"]["first_call"] == n.NVML_SUCCESS
    assert idle["processes"] == []


def test_gpu_on_the_bus_but_missing_from_nvml(probe):
    """What a card that fell off the bus before the driver loaded looks like: 7 GPUs in NVML, 8 on PCI."""
    out = probe("a100-sxm4-40gb-x8-nvswitch-gpu-lost")
    assert out["count"] == 7
    assert [g["index_by_uuid"] for g in out["gpus"]] == list(range(7))
    pci = json.loads(out["host_json"])["pci_devices"]
    assert sum(d["class"].startswith("0x0302") for d in pci) == 8


def test_hopper_fabric_states(probe):
    """nvmlDeviceGetGpuFabricInfoV: completed on a healthy HGX H100, in progress while Fabric Manager trains the
    fabric, not started without it; NOT_SUPPORTED on A100 (no fabric probe before Hopper)."""
    done = probe("h100-sxm5-80gb-x8")["gpus"][0]["fabric"]
    assert done == {"state": n.NVML_GPU_FABRIC_STATE_COMPLETED, "status": n.NVML_SUCCESS, "cliqueId": 32766}
    training = probe("h100-sxm5-80gb-x8-fabric-in-progress")["gpus"][0]["fabric"]
    assert training["state"] == n.NVML_GPU_FABRIC_STATE_IN_PROGRESS
    assert (
        probe("h100-sxm5-80gb-x8-fm-not-started")["gpus"][0]["fabric"]["state"] == n.NVML_GPU_FABRIC_STATE_NOT_STARTED
    )
    assert probe("a100-sxm4-40gb-x8-nvswitch")["gpus"][0]["fabric"] == NOT_SUPPORTED


def test_live_processes_come_and_go_with_their_process(probe, tmp_path):
    """A registered process is listed (with its name and memory) while it lives; a dead one is not."""
    live = tmp_path / "procs"
    (live / "2").mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "60"])  # a process that lives through the probe
    try:
        (live / "2" / str(sleeper.pid)).write_text("train.py 30000\n")
        (live / "2" / "999999").write_text("gone 10\n")  # no such process: the driver lists nothing for it
        (live / "2" / "notapid").write_text("ignored\n")
        out = probe("h100-sxm5-80gb-x8", env={"GPUFLEET_NVML_SIM_PROCESSES_DIR": str(live)})
    finally:
        sleeper.kill()
        sleeper.wait()
    none = 0xFFFFFFFF
    assert out["gpus"][2]["processes"] == [
        {"pid": sleeper.pid, "usedGpuMemory": 30000 * MIB, "gpuInstanceId": none, "computeInstanceId": none}
    ]
    assert out["gpus"][1]["processes"] == []
    assert out["process_names"] == {str(sleeper.pid): "train.py"}
    after = probe("h100-sxm5-80gb-x8", env={"GPUFLEET_NVML_SIM_PROCESSES_DIR": str(live)})
    assert after["gpus"][2]["processes"] == []


def test_persistence_mode_follows_the_daemon(probe, tmp_path):
    """nvidia-persistenced's stand-in writes 1 (default) or 0 (--no-persistence-mode); without the file the
    profile's captured value stands."""
    flag = tmp_path / "persistence"
    flag.write_text("0\n")
    off = probe("h100-sxm5-80gb-x8", env={"GPUFLEET_NVML_SIM_PERSISTENCE_FILE": str(flag)})
    assert {g["persistence_mode"] for g in off["gpus"]} == {n.NVML_FEATURE_DISABLED}
    flag.write_text("1\n")
    on = probe("rtx-4090-x1", env={"GPUFLEET_NVML_SIM_PERSISTENCE_FILE": str(flag)})
    assert on["gpus"][0]["persistence_mode"] == n.NVML_FEATURE_ENABLED
    absent = probe("rtx-4090-x1", env={"GPUFLEET_NVML_SIM_PERSISTENCE_FILE": str(tmp_path / "none")})
    assert absent["gpus"][0]["persistence_mode"] == n.NVML_FEATURE_DISABLED
