"""gpu_facts run as a subprocess under the NVML simulator (sandbox/nvml-sim/replay), every profile and error path.

pynvml's own code runs against a C libnvidia-ml.so.1 that answers from each profile, so these tests check
the values a user of that real host would see. Profile values are read from the profile files themselves.
"""

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from .conftest import ROOT, debian_package

SIM = ROOT / "sandbox" / "nvml-sim"
REPLAY = SIM / "replay"
PROFILES = sorted((SIM / "profiles").glob("*.json"))
MODULE = "ansible_collections.gpufleet.stack.plugins.modules.gpu_facts"

pytestmark = [
    pytest.mark.skipif(not REPLAY.exists(), reason="sandbox/nvml-sim/replay absent: would run gpu_facts on NVML"),
    pytest.mark.skipif(
        not (shutil.which("cc") or shutil.which("gcc")),
        reason="no C compiler to build the NVML simulator: would run gpu_facts on each simulated host",
    ),
]


def run_replay(profile, argv, tmp_path, env=None, ok=(0,)):
    proc = subprocess.run(
        [sys.executable, str(REPLAY), str(profile), "--", *argv],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "collections"), **(env or {})),
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
        cwd=tmp_path,
    )
    assert proc.returncode in ok, f"rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def facts_for(profile, tmp_path, args=None, env=None):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}))
    out = run_replay(profile, [sys.executable, "-m", MODULE, str(path)], tmp_path, env)
    result = json.loads(out)
    assert result["changed"] is False
    return result["ansible_facts"]["gpufleet_gpu"]


def profile_data(name):
    return json.loads((SIM / "profiles" / f"{name}.json").read_text())


def expected_state(data):
    host = data.get("host") or {}
    if data.get("init_error"):
        return None
    if host.get("driver_loaded") is False:
        return "not_loaded"
    kmod = host.get("kernel_module_version")
    if kmod and kmod != data.get("driver_version"):
        return "mismatch"
    return "loaded"


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_profile_reports_its_gpus(profile, tmp_path):
    data = json.loads(profile.read_text())
    facts = facts_for(profile, tmp_path)
    assert (facts["simulated"], facts["source"]) == (True, "nvml-simulator")
    state = expected_state(data)
    if state:
        assert facts["driver_state"] == state, facts["driver_state_reason"]
    host = data.get("host") or {}
    assert facts["nouveau_loaded"] is bool(host.get("nouveau_loaded"))
    assert [d["bus_id"] for d in facts["pci_devices"]] == [d["bus_id"] for d in host.get("pci_devices", [])]
    if facts["driver_state"] != "loaded":
        assert facts["gpus"] == []
        return
    assert facts["driver_version"] == data["driver_version"]
    assert facts["kernel_module_flavor"] == host.get("kernel_module_flavor")
    visible = [g for g in data["gpus"] if g.get("nvml_visible", True)]
    assert facts["gpu_count"] == len(visible)
    assert facts["pci_gpu_count"] == sum(d["class"].startswith(("0x0300", "0x0302")) for d in host["pci_devices"])
    for gpu, want in zip(facts["gpus"], visible, strict=True):
        assert gpu["name"] == want["name"]
        assert gpu["uuid"] == want["uuid"]
        assert gpu["serial"] == want.get("serial")
        assert gpu["pci_bus_id"].lower() == want["pci"]["bus_id"].lower()
        assert gpu["memory_total_mib"] == want["memory"]["total_mib"]
        assert gpu["compute_capability"] == "{}.{}".format(*want["cuda_compute_capability"])
        assert gpu["temperature"]["current_c"] == want["temperature"]["gpu"]
        assert gpu["temperature"]["slowdown_c"] == want["temperature"].get("slowdown")
        assert gpu["persistence_mode"] == want.get("persistence_mode")
        assert gpu["nvlink"]["links_total"] == ((want.get("nvlink") or {}).get("links") or 0)
        assert len(gpu["mig"]["instances"]) == len((want.get("mig") or {}).get("devices") or [])
    assert facts["labels"]["nvidia.com/gpu.count"] == str(len(visible))


def test_a100_hgx_with_nvswitch(tmp_path):
    facts = facts_for("a100-sxm4-40gb-x8-nvswitch", tmp_path)
    assert facts["gpu_count"] == 8
    assert facts["cuda_driver_version"] == "12.8"
    assert sum(d["is_nvswitch"] for d in facts["pci_devices"]) == 6
    assert (facts["nvswitch_present"], facts["fabricmanager_required"]) == (True, True)
    assert {g["architecture"] for g in facts["gpus"]} == {"ampere"}
    assert all(g["nvlink"]["links_up"] == 12 for g in facts["gpus"])
    assert len(facts["topology"]) == 28
    assert (facts["topology"]["0-1"], facts["topology"]["0-2"], facts["topology"]["0-4"]) == (
        "multiple",
        "node",
        "system",
    )
    labels = facts["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert (labels["nvidia.com/gpu.memory"], labels["nvidia.com/gpu.family"]) == ("40960", "ampere")
    assert (labels["nvidia.com/cuda.driver.major"], labels["nvidia.com/mig.capable"]) == ("570", "true")
    assert facts["health_status"] == "ok"


def test_h100_hgx(tmp_path):
    facts = facts_for("h100-sxm5-80gb-x8", tmp_path, {"gather_topology": False})
    assert facts["gpu_count"] == 8
    assert facts["topology"] == {}
    assert facts["labels"]["nvidia.com/gpu.family"] == "hopper"
    assert facts["gpus"][0]["nvlink"] == {"links_up": 18, "links_total": 18, "version": "4.0"}
    assert facts["gpus"][0]["pcie"]["gen_max"] == 5
    assert facts["fabricmanager_required"] is True


def test_a_gpu_missing_from_nvml_is_critical(tmp_path):
    facts = facts_for("a100-sxm4-40gb-x8-nvswitch-gpu-lost", tmp_path)
    assert (facts["gpu_count"], facts["pci_gpu_count"]) == (7, 8)
    lost = [f for f in facts["health"] if f["what"].startswith("NVML sees")]
    assert lost == [
        {
            "severity": "critical",
            "gpu": None,
            "what": "NVML sees 7 of 8 GPUs on the PCI bus",
            "value": 7,
            "threshold": 8,
        }
    ]
    assert facts["health_status"] == "critical"


def test_a_gpu_given_to_a_vm_is_not_missing(tmp_path):
    """A GPU bound to vfio-pci (passthrough) is on the bus but not the driver's: not counted against NVML."""
    data = profile_data("a100-sxm4-40gb-x8-nvswitch-gpu-lost")
    data["host"]["pci_devices"][7]["driver"] = "vfio-pci"
    path = tmp_path / "vfio.json"
    path.write_text(json.dumps(data))
    facts = facts_for(path, tmp_path)
    assert (facts["gpu_count"], facts["pci_gpu_count"], facts["health_status"]) == (7, 7, "ok")


def test_fabric_state_and_processes_with_pids(tmp_path):
    facts = facts_for("h100-sxm5-80gb-x8-fabric-in-progress", tmp_path)
    assert {g["fabric"]["state"] for g in facts["gpus"]} == {"in_progress"}
    assert facts_for("a100-sxm4-40gb-x8-nvswitch", tmp_path)["gpus"][0]["fabric"] is None
    busy = facts_for("a100-sxm4-40gb-x8-nvswitch", tmp_path)["gpus"][0]
    assert busy["processes"] == [{"pid": 41230, "used_memory_mib": 30720, "name": "python3"}]
    assert busy["compute_processes"] == 1


def test_a_next_kernel_without_an_nvidia_module_is_critical(tmp_path):
    """A kernel arrived without headers (no DKMS build): rebooting would lose the GPUs, reported before it happens."""
    boot = tmp_path / "root"
    (boot / "boot").mkdir(parents=True)
    (boot / "boot" / "vmlinuz-6.1.0-30-amd64").write_text("")
    (boot / "lib/modules/6.1.0-30-amd64/kernel").mkdir(parents=True)
    facts = facts_for("h100-sxm5-80gb-x8", tmp_path, {"boot_root": str(boot)})
    critical = [f["what"] for f in facts["health"] if f["severity"] == "critical"]
    assert len(critical) == 1 and critical[0].startswith(
        "the kernel that boots next (6.1.0-30-amd64, the newest installed kernel image) has no nvidia module"
    ), critical
    (boot / "lib/modules/6.1.0-30-amd64/updates/dkms").mkdir(parents=True)
    (boot / "lib/modules/6.1.0-30-amd64/updates/dkms/nvidia.ko").write_text("")
    (boot / "var/lib/dkms/nvidia/570.133.20/6.1.0-30-amd64").mkdir(parents=True)
    assert facts_for("h100-sxm5-80gb-x8", tmp_path, {"boot_root": str(boot)})["health_status"] == "ok"


def test_hot_failing_card_is_critical(tmp_path):
    facts = facts_for("hot-failing", tmp_path)
    assert facts["health_status"] == "critical"
    on_gpu1 = {(f["severity"], f["what"]) for f in facts["health"] if f["gpu"] == 1}
    assert {
        ("critical", "temperature at or over the card's slowdown threshold"),
        ("critical", "uncorrectable ECC errors since boot"),
        ("warning", "row remap pending: reset the GPU to apply it"),
        ("warning", "clocks throttled: hw_thermal_slowdown"),
        ("critical", "Xid 48 in kernel log"),
    } <= on_gpu1
    assert [f for f in facts["health"] if f["gpu"] == 0] == []
    assert facts["kernel_log"]["source"] == "simulator"


def test_temperature_threshold_option_under_simulator(tmp_path):
    data = profile_data("a100-sxm4-40gb-x8-nvswitch")
    hottest = max(g["temperature"]["gpu"] for g in data["gpus"])
    facts = facts_for("a100-sxm4-40gb-x8-nvswitch", tmp_path, {"temperature_threshold": hottest})
    hot = [f for f in facts["health"] if f["what"] == "temperature at or over threshold"]
    assert hot
    assert {f["value"] for f in hot} == {hottest}
    assert facts["health_status"] == "warning"


def test_mig_instances(tmp_path):
    facts = facts_for("a100-mig", tmp_path)
    mig = facts["gpus"][0]["mig"]
    assert (mig["current"], mig["pending"]) == (True, True)
    assert [(i["profile"], i["gpu_instance_id"]) for i in mig["instances"]] == [
        ("3g.20gb", 1),
        ("2g.10gb", 5),
        ("1g.5gb", 13),
    ]
    assert all(i["uuid"].startswith("MIG-") for i in mig["instances"])


def test_consumer_card_unsupported_fields_are_null(tmp_path):
    facts = facts_for("rtx-4090-x1", tmp_path)
    gpu = facts["gpus"][0]
    assert gpu["ecc"]["volatile_uncorrected"] is None
    assert gpu["mig"] == {"current": None, "pending": None, "instances": []}
    assert gpu["nvlink"]["links_total"] == 0
    assert facts["labels"]["nvidia.com/gpu.family"] == "ada-lovelace"
    assert facts["labels"]["nvidia.com/mig.capable"] == "false"


def test_driver_not_loaded(tmp_path):
    facts = facts_for("driver-not-loaded", tmp_path)
    assert facts["driver_state"] == "not_loaded"
    assert facts["nouveau_loaded"] is True
    assert facts["pci_devices"][0]["driver"] == "nouveau"
    assert facts["health_status"] == "critical"


def test_library_and_module_mismatch(tmp_path):
    facts = facts_for("lib-mismatch", tmp_path)
    assert facts["driver_state"] == "mismatch"
    assert (facts["library_version"], facts["kernel_module_version"]) == ("570.133.20", "550.144.03")
    assert "570.133.20" in facts["driver_state_reason"]
    assert "550.144.03" in facts["driver_state_reason"]


def derived_profile(tmp_path, base, change):
    data = profile_data(base)
    change(data)
    path = tmp_path / f"{base}-derived.json"
    path.write_text(json.dumps(data))
    return path


def test_hostile_gpu_strings_are_decoded_and_cleaned(tmp_path):
    """A damaged InfoROM's name (a lone surrogate: bytes that are not UTF-8, which nvidia-ml-py's strict decode
    raises on), markup and terminal escapes in NVML's strings: gathered, not raised, and kept as inert text."""

    def hostile(data):
        gpu = data["gpus"][0]
        gpu["name"] = "Tesla T4 \udcff<img src=x onerror=alert(1)>"
        gpu["serial"] = "\u001b[31m1324\u0007"

    facts = facts_for(derived_profile(tmp_path, "t4-x1", hostile), tmp_path)
    (gpu,) = facts["gpus"]
    assert gpu["name"].startswith("Tesla T4 \ufffd") and gpu["name"].endswith("<img src=x onerror=alert(1)>")
    assert gpu["serial"] == "\ufffd[31m1324\ufffd"
    assert facts["driver_state"] == "loaded"


def test_init_no_permission(tmp_path):
    profile = derived_profile(tmp_path, "t4-x1", lambda d: d.update(init_error="NO_PERMISSION"))
    facts = facts_for(profile, tmp_path)
    assert facts["driver_state"] == "error"
    assert "no permission" in facts["driver_state_reason"]


def test_gpu_fallen_off_the_bus(tmp_path):
    profile = derived_profile(tmp_path, "hot-failing", lambda d: d["gpus"][0].update(nvml_error="GPU_IS_LOST"))
    facts = facts_for(profile, tmp_path)
    assert facts["driver_state"] == "loaded"
    assert "error" in facts["gpus"][0]
    assert facts["gpus"][1]["name"] == "NVIDIA A100-SXM4-40GB"
    assert ("critical", 0, "gpu not accessible through NVML") in {
        (f["severity"], f["gpu"], f["what"]) for f in facts["health"]
    }


def test_simulator_without_profile_is_not_loaded(tmp_path):
    """The simulator library with no profile file behaves like a library without a driver.

    replay always sets a profile; the module is started through runpy after pointing the variable elsewhere.
    """
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"kernel_log": False}}))
    script = f"import os, runpy, sys; os.environ['GPUFLEET_NVML_SIM_PROFILE'] = {str(tmp_path / 'absent.json')!r}; "
    script += f"sys.argv = ['gpu_facts', {str(args)!r}]; runpy.run_module({MODULE!r}, run_name='__main__')"
    out = run_replay("t4-x1", [sys.executable, "-c", script], tmp_path)
    facts = json.loads(out)["ansible_facts"]["gpufleet_gpu"]
    assert (facts["simulated"], facts["driver_state"], facts["gpus"]) == (True, "not_loaded", [])


def test_ansible_adhoc_check_mode(tmp_path):
    """`ansible localhost -m gpufleet.stack.gpu_facts --check` under the simulator, as the issue describes."""
    env = {
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_CACHE_PLUGIN": "memory",  # keep the shared fact cache of the checkout untouched
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_STDOUT_CALLBACK": "json",
    }
    argv = [
        str(Path(sys.executable).parent / "ansible"),
        "localhost",
        "-i",
        "localhost,",
        "-c",
        "local",
        "--check",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-m",
        "gpufleet.stack.gpu_facts",
    ]
    out = run_replay("a100-sxm4-40gb-x8-nvswitch", argv, tmp_path, env)
    result = json.loads(out)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    facts = result["ansible_facts"]["gpufleet_gpu"]
    assert result["changed"] is False
    assert (facts["driver_state"], facts["gpu_count"], facts["fabricmanager_required"]) == ("loaded", 8, True)


def busy_link_problems(data):
    gpu = data["gpus"][0]
    gpu["nvlink"]["inactive"] = [3, 7]
    gpu["pci"]["link_width_current"] = 8
    gpu["clocks_event_reasons"] = []
    gpu["utilization"]["gpu"] = 80
    gpu["persistence_mode"] = False


def test_nvlink_down_and_narrow_pcie_on_busy_gpu(tmp_path):
    profile = derived_profile(tmp_path, "a100-sxm4-40gb-x8-nvswitch", busy_link_problems)
    facts = facts_for(profile, tmp_path)
    gpu0 = {(f["severity"], f["what"], f["value"], f["threshold"]) for f in facts["health"] if f["gpu"] == 0}
    assert gpu0 == {
        ("warning", "NVLink link down", 10, 12),
        ("warning", "PCIe link width below its maximum", 8, 16),
        ("info", "persistence mode off", False, True),
    }
    assert facts["gpus"][0]["nvlink"]["links_up"] == 10
    assert facts["health_status"] == "warning"


@pytest.fixture(scope="module")
def debian_pynvml(tmp_path_factory):
    dest = tmp_path_factory.mktemp("python3-pynvml")
    deb, error = debian_package("python3-pynvml", dest)
    if deb is None:
        pytest.skip(f"cannot download Debian's python3-pynvml ({error}); would compare its facts with nvidia-ml-py's")
    return dest / "usr/lib/python3/dist-packages", deb.name


@pytest.mark.parametrize("profile", ["hot-failing", "a100-mig", "t4-x1"])
def test_debian_python3_pynvml_gives_the_same_facts(profile, tmp_path, debian_pynvml):
    """Debian hosts may carry python3-pynvml (11.525) instead of nvidia-ml-py: older wrappers, same facts."""
    path, name = debian_pynvml
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {}}))
    script = (
        f"import sys, runpy; sys.path.insert(0, {str(path)!r}); import pynvml; "
        f"assert pynvml.__file__.startswith({str(path)!r}), pynvml.__file__; "
        f"sys.argv = ['gpu_facts', {str(args)!r}]; runpy.run_module({MODULE!r}, run_name='__main__')"
    )
    old = json.loads(run_replay(profile, [sys.executable, "-c", script], tmp_path))["ansible_facts"]["gpufleet_gpu"]
    new = facts_for(profile, tmp_path)
    assert old["gpu_count"] == new["gpu_count"] > 0, name
    assert old.pop("nvml_bindings")["path"].startswith(str(path)), name  # the facts say which bindings they used
    assert new.pop("nvml_bindings")["version"] == version("nvidia-ml-py")
    assert old.pop("gathered_at") <= new.pop("gathered_at")  # two runs, seconds apart
    assert old == new


def test_what_the_nvlink_fabric_needs_on_each_kind_of_node(tmp_path, recorded_sysfs):
    """HGX H100: NVSwitches on PCI, Fabric Manager. HGX B200: no NVSwitch on PCI, but the baseboard's management
    bridge in /sys/class/infiniband: Fabric Manager and NVLSM. GB200 tray: GPUs on the rack's NVLink switches, no
    switch of its own: IMEX, in the domain its GPUs report (a real GB200's probe)."""
    keys = ("nvswitch_present", "nvlink5_switch", "fabricmanager_required", "nvlsm_required", "imex_required")
    h100 = facts_for("h100-sxm5-80gb-x8", tmp_path)
    assert [h100[k] for k in keys] == [True, False, True, False, False] and h100["nvlink_domain"] is None
    zero = "00000000-0000-0000-0000-000000000000"
    assert h100["gpus"][0]["fabric"] == {"state": "completed", "status": 0, "clique_id": 32766, "cluster_uuid": zero}
    root = recorded_sysfs("hgx-b200-nvswitch-bridge.sysfs")
    b200 = facts_for("b200-hgx-x8", tmp_path, {"sysfs_root": str(root)})
    assert [b200[k] for k in keys] == [False, True, True, True, False] and b200["nvlink_domain"] is None
    assert b200["fabric"]["summary"] == "ib"
    # The sandbox's case: no bridge to see (a container's /sys). Nothing is asked for, and it is not taken for a tray.
    unseen = facts_for("b200-hgx-x8", tmp_path)
    assert [unseen[k] for k in keys] == [False, False, False, False, False]
    gb200 = facts_for("gb200-nvl72-tray-x4", tmp_path)
    assert [gb200[k] for k in keys] == [False, False, False, False, True]
    assert gb200["nvlink_domain"] == "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
    failed = facts_for("gb200-nvl72-tray-x4-fabric-insufficient", tmp_path)
    assert failed["imex_required"] is True and failed["nvlink_domain"] is None
    assert {g["fabric"]["status"] for g in failed["gpus"]} == {23}  # NVML_ERROR_INSUFFICIENT_RESOURCES
