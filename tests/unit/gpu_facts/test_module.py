"""gpu_facts through main() with patched arguments: driver states, missing pynvml, unsupported queries."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pynvml
import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import gather, source
from ansible_collections.gpufleet.stack.plugins.modules import gpu_facts

from .conftest import fixture_text

ROOT = Path(__file__).resolve().parents[3]

NO_LIB = source.NO_LIBRARY
REAL_LIB = {**NO_LIB, "found": True, "path": "/usr/lib/libnvidia-ml.so.570.133.20", "version": "570.133.20"}


def run_main(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        gpu_facts.main()
    result = json.loads(capsys.readouterr().out)
    return exc.value.code, result


class Forbidden:
    """Stands in for pynvml where nvmlInit must not be reached."""

    def __getattr__(self, name):
        raise AssertionError(f"pynvml.{name} used although the driver is not loaded")


class Unsupported:
    """pynvml whose every device query answers NVML_ERROR_NOT_SUPPORTED, like an old consumer card."""

    def __init__(self, count=1):
        self.count = count
        self.calls = []

    def __getattr__(self, name):
        if not name.startswith("nvml"):
            return getattr(pynvml, name)

        def call(*args):
            self.calls.append(name)
            answers = {
                "nvmlInit": None,
                "nvmlShutdown": None,
                "nvmlDeviceGetCount": self.count,
                "nvmlDeviceGetHandleByIndex": object(),
                "nvmlDeviceGetName": "NVIDIA GeForce GTX 1080",
                "nvmlSystemGetDriverVersion": "535.261.03",
                "nvmlSystemGetCudaDriverVersion": 12020,
            }
            if name in answers:
                return answers[name]
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

        return call


@pytest.fixture
def roots(fake_root):
    return {"sysfs_root": str(fake_root.path), "procfs_root": str(fake_root.path), "kernel_log": False}


def test_not_installed(capsys, monkeypatch, roots, tmp_path):
    monkeypatch.setenv("GPUFLEET_NVML_SIM_PROFILE", str(tmp_path / "absent.json"))
    monkeypatch.setattr(source, "library", lambda: NO_LIB)
    monkeypatch.setattr(gather, "_import_pynvml", Forbidden)
    rc, result = run_main(capsys, roots)
    facts = result["ansible_facts"]["gpufleet_gpu"]
    assert rc == 0
    assert result["changed"] is False
    assert (facts["driver_state"], facts["source"], facts["gpu_count"]) == ("not_installed", "sysfs", 0)


def test_sandbox_gpus_without_a_driver_show_their_pci_functions(capsys, monkeypatch, roots):
    """A sandbox node made with `fleet up --profile X --no-driver`: no NVML library yet, but the GPUs and NVSwitches
    are on the bus, as sysfs shows them on hardware; the driver role decides on Fabric Manager from this."""
    monkeypatch.setenv(
        "GPUFLEET_NVML_SIM_PROFILE", str(ROOT / "sandbox/nvml-sim/profiles/a100-sxm4-40gb-x8-nvswitch.json")
    )
    monkeypatch.setattr(source, "library", lambda: NO_LIB)
    monkeypatch.setattr(gather, "_import_pynvml", Forbidden)
    facts = run_main(capsys, roots)[1]["ansible_facts"]["gpufleet_gpu"]
    assert (facts["driver_state"], facts["gpu_count"], facts["simulated"]) == ("not_installed", 0, True)
    assert facts["nvswitch_present"] and facts["fabricmanager_required"]
    assert (
        sum(d["is_gpu"] for d in facts["pci_devices"]) == 8 and sum(d["is_nvswitch"] for d in facts["pci_devices"]) == 6
    )


def test_library_without_module_never_initialises(capsys, monkeypatch, roots, fake_root):
    fake_root.pci("0000:07:00.0", "0x20b0", "0x030200")
    fake_root.pci("0000:c1:00.0", "0x1af1", "0x068000")
    monkeypatch.setattr(source, "library", lambda: REAL_LIB)
    monkeypatch.setattr(gather, "_import_pynvml", Forbidden)
    result = run_main(capsys, {**roots, "_ansible_check_mode": True})[1]
    facts = result["ansible_facts"]["gpufleet_gpu"]
    assert facts["driver_state"] == "not_loaded"
    assert facts["library_version"] == "570.133.20"
    assert [d["bus_id"] for d in facts["pci_devices"]] == ["0000:07:00.0", "0000:c1:00.0"]
    assert facts["nvswitch_present"] is True
    assert facts["fabricmanager_required"] is True
    assert facts["health_status"] == "critical"
    assert facts["health"][0]["what"] == "NVIDIA GPUs present but driver not_loaded"


def test_missing_pynvml_gives_facts(capsys, monkeypatch, roots, fake_root):
    fake_root.module("nvidia")
    fake_root.write("proc/driver/nvidia/version", fixture_text("proc-version-open-570.txt"))
    monkeypatch.setattr(source, "library", lambda: REAL_LIB)
    monkeypatch.setattr(gather, "_import_pynvml", lambda: (None, None))
    rc, result = run_main(capsys, roots)
    facts = result["ansible_facts"]["gpufleet_gpu"]
    assert rc == 0
    assert facts["driver_state"] == "error"
    assert "nvidia-ml-py" in facts["driver_state_reason"]
    assert (facts["kernel_module_version"], facts["kernel_module_flavor"]) == ("570.133.20", "open")


def test_the_collections_bindings_come_first_and_say_their_version(tmp_path):
    """What the pynvml role writes (pynvml.py and an unversioned dist-info) wins over the interpreter's own
    nvidia-ml-py (this venv has one), and importlib.metadata reports its release. A fresh process: this one has
    imported pynvml already."""
    (tmp_path / "nvidia_ml_py.dist-info").mkdir()
    metadata = "Metadata-Version: 2.4\nName: nvidia-ml-py\nVersion: 99.1\n"
    (tmp_path / "nvidia_ml_py.dist-info" / "METADATA").write_text(metadata)
    (tmp_path / "pynvml.py").write_text("FROM = 'collection'\n")
    code = (
        "import json\n"
        "from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import gather\n"
        f"nvml, bindings = gather._import_pynvml({str(tmp_path)!r})\n"
        "print(json.dumps([nvml.FROM, bindings]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "collections"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["collection", {"path": str(tmp_path / "pynvml.py"), "version": "99.1"}]


def test_unsupported_queries_are_null(capsys, monkeypatch, roots, fake_root):
    fake_root.module("nvidia")
    fake = Unsupported(count=2)
    monkeypatch.setattr(source, "library", lambda: REAL_LIB)
    monkeypatch.setattr(gather, "_import_pynvml", lambda: (fake, {"path": "fake", "version": None}))
    result = run_main(capsys, roots)[1]
    facts = result["ansible_facts"]["gpufleet_gpu"]
    assert (facts["driver_state"], facts["driver_version"], facts["cuda_driver_version"]) == (
        "loaded",
        "535.261.03",
        "12.2",
    )
    assert facts["gpu_count"] == 2
    gpu = facts["gpus"][1]
    assert gpu["name"] == "NVIDIA GeForce GTX 1080"
    assert gpu["uuid"] is None
    assert gpu["temperature"] == {"current_c": None, "slowdown_c": None, "shutdown_c": None}
    assert gpu["ecc"]["volatile_uncorrected"] is None
    assert gpu["throttle_reasons"] is None
    assert gpu["nvlink"] == {"links_up": 0, "links_total": 0, "version": None}
    assert gpu["mig"] == {"current": None, "pending": None, "instances": []}
    assert facts["topology"] == {"0-1": None}
    assert facts["health_status"] == "ok"
    assert fake.calls[-1] == "nvmlShutdown"


def test_init_mismatch_from_nvml(capsys, monkeypatch, roots, fake_root):
    """The library file name tells no version (a vendor symlink farm): nvmlInit's answer decides."""
    fake_root.module("nvidia")
    fake_root.write("proc/driver/nvidia/version", fixture_text("proc-version-proprietary-535.txt"))

    class Mismatch(Unsupported):
        def __getattr__(self, name):
            if name == "nvmlInit":

                def init():
                    raise pynvml.NVMLError(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)

                return init
            return super().__getattr__(name)

    fake = Mismatch()
    monkeypatch.setattr(source, "library", lambda: {**REAL_LIB, "path": "/opt/libnvidia-ml.so.1", "version": None})
    monkeypatch.setattr(gather, "_import_pynvml", lambda: (fake, {"path": "fake", "version": None}))
    result = run_main(capsys, roots)[1]
    facts = result["ansible_facts"]["gpufleet_gpu"]
    assert facts["driver_state"] == "mismatch"
    assert "kernel module 535.183.01" in facts["driver_state_reason"]
    assert facts["gpus"] == []
    assert "nvmlDeviceGetCount" not in fake.calls


def test_kernel_log_unreadable_is_said(capsys, monkeypatch, roots):
    monkeypatch.setattr(source, "library", lambda: NO_LIB)
    monkeypatch.setattr(gpu_facts.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result = run_main(capsys, {**roots, "kernel_log": True})[1]
    log = result["ansible_facts"]["gpufleet_gpu"]["kernel_log"]
    assert log["read"] is False
    assert "dmesg not found" in log["note"]


def test_kernel_log_xids_become_findings(capsys, monkeypatch, roots):
    monkeypatch.setattr(source, "library", lambda: NO_LIB)
    monkeypatch.setattr(gpu_facts.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: f"/usr/bin/{name}")
    argvs = []

    def run_command(self, argv, *args, **kwargs):
        argvs.append(argv)
        return 0, fixture_text("dmesg-xid.txt"), ""

    monkeypatch.setattr(gpu_facts.AnsibleModule, "run_command", run_command)
    result = run_main(capsys, {**roots, "kernel_log": True, "_ansible_check_mode": True})[1]
    facts = result["ansible_facts"]["gpufleet_gpu"]
    assert argvs == [["/usr/bin/dmesg"]]  # read-only, also in check mode
    assert facts["kernel_log"]["source"] == "dmesg"
    assert len(facts["kernel_log"]["xid_lines"]) == 4
    assert [f["what"] for f in facts["health"] if f["severity"] == "critical"] == [
        "Xid 48 in kernel log",
        "Xid 79 in kernel log",
    ]
    assert facts["health_status"] == "critical"


def test_bad_threshold_fails_naming_the_option(capsys, roots):
    rc, result = run_main(capsys, {**roots, "temperature_threshold": 0})
    assert rc == 1
    assert result["failed"] is True
    assert "temperature_threshold 0" in result["msg"]


def test_versions_differ_without_init(capsys, monkeypatch, roots, fake_root):
    """/proc says 535.183.01, the library file is 570.133.20: mismatch, and NVML is not even imported."""
    fake_root.module("nvidia")
    fake_root.write("proc/driver/nvidia/version", fixture_text("proc-version-proprietary-535.txt"))
    monkeypatch.setattr(source, "library", lambda: REAL_LIB)
    monkeypatch.setattr(gather, "_import_pynvml", Forbidden)
    facts = run_main(capsys, roots)[1]["ansible_facts"]["gpufleet_gpu"]
    assert facts["driver_state"] == "mismatch"
    assert (facts["library_version"], facts["kernel_module_version"]) == ("570.133.20", "535.183.01")
    assert facts["health_status"] == "critical"


def test_the_library_probe_on_a_host_without_one():
    """This CI machine has no libnvidia-ml.so.1: the probe says so instead of raising. Run in a fresh process,
    since another test in this one may have loaded the simulator, which dlopen would then find by its soname."""
    code = (
        "import ctypes, json, sys\n"
        "try:\n    ctypes.CDLL('libnvidia-ml.so.1')\nexcept OSError:\n    pass\nelse:\n    sys.exit(3)\n"
        "from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import source\n"
        "print(json.dumps(source.library()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["PYTHONPATH"] = str(ROOT / "collections")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if proc.returncode == 3:
        pytest.skip("a libnvidia-ml.so.1 is on this machine's library path; would check the not-found probe")
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout)
    assert (probe["found"], probe["standalone"], probe["stand_in"], probe["version"]) == (False, None, {}, None)


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]"])
def test_simulated_host_tolerates_bad_json(text):
    assert source.simulated_host(text) == {}


def test_simulated_host_maps_profile_keys():
    got = source.simulated_host(
        json.dumps(
            {
                "driver_loaded": False,
                "kernel_module_flavor": "open",
                "xid_lines": "NVRM: Xid (PCI:0000:07:00): 79, pid=0\nother line",
                "pci_devices": [{"bus_id": "0000:c1:00.0", "device_id": "0x1af1", "class": "0x068000"}],
            }
        )
    )
    assert (got["loaded"], got["flavor"]) == (False, "open")
    assert len(got["kernel_log_lines"]) == 2
    assert got["pci_devices"][0]["is_nvswitch"] is True
