"""The readiness gate (module_utils/_node/gate), and gpufleet.stack.upgrade_gate run under the NVML simulator on the
profiles of the failures it must catch: a GPU missing from NVML, a fabric still training, persistence off, a CDI
spec for the old driver."""

import json
import os
import sys

import pytest

from . import test_simulator
from .test_simulator import SIM, run_replay

pytestmark = test_simulator.pytestmark  # the simulator tests' skips (no compiler: no simulator)

MODULE = "ansible_collections.gpufleet.stack.plugins.modules.upgrade_gate"
# A systemd whose Fabric Manager is active, and whose journal of it says what FM_LINES holds.
FAKE_SYSTEMD = {
    "systemctl": '#!/bin/sh\n[ "$1" = is-active ] && echo active && exit 0\nexit 3\n',
    "journalctl": '#!/bin/sh\nprintf "%s\\n" "Starting nvidia-fabricmanager.service..." "$FM_LINES"\n',
}


def run_gate(profile, tmp_path, args, fm_lines=""):
    """upgrade_gate under the simulator, with Fabric Manager active; a failed gate is the module's own answer (rc 1),
    not a test error."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in FAKE_SYSTEMD.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"timeout": 0, **args}}))
    argv = [sys.executable, "-m", MODULE, str(path)]
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FM_LINES": fm_lines}
    return json.loads(run_replay(SIM / "profiles" / f"{profile}.json", argv, tmp_path, env=env, ok=(0, 1)))


FM_DONE = "Successfully configured all the available GPUs and NVSwitches to route NVLink traffic."


@pytest.mark.parametrize(
    ("profile", "fm_lines", "gate", "detail"),
    [
        ("a100-sxm4-40gb-x8-nvswitch-gpu-lost", FM_DONE, "gpus", "7 of 8 GPUs: NVML enumerates 7, the PCI bus has 8"),
        ("h100-sxm5-80gb-x8-fabric-in-progress", "", "fabric", "the NVLink fabric has not finished training: GPU 0"),
        ("a100-sxm4-40gb-x8-nvswitch", "Connected to 1 node.", "fabric", "Fabric Manager is active but has not"),
        ("a100-sxm4-40gb-x8-nvswitch", FM_DONE, "", ""),
        ("h100-sxm5-80gb-x8", "", "", ""),  # Hopper: NVML's fabric state says it, whatever the journal
        ("t4-x1", "", "", ""),  # no NVSwitch: no Fabric Manager to ask
    ],
)
def test_the_module_under_the_simulator(profile, fm_lines, gate, detail, tmp_path):
    data = json.loads((SIM / "profiles" / f"{profile}.json").read_text())
    result = run_gate(profile, tmp_path, {"driver_version": data["driver_version"]}, fm_lines)
    assert result["failed_gate"] == gate, result
    if gate:
        assert result["failed"] and result["msg"].startswith(f"failed/{gate}: {detail}"), result["msg"]
    assert result["ansible_facts"]["gpufleet_gpu"]["driver_version"] == data["driver_version"]


def test_the_module_refuses_the_old_driver(tmp_path):
    result = run_gate("t4-x1", tmp_path, {"driver_version": "550.163.01"})
    assert result["msg"].startswith("failed/module: driver 550.163.01 is not the one loaded: NVML reports 535.230.02")


def test_a_gb200_tray_is_ready_only_with_imex_active_and_channel0(tmp_path):
    """The tray's GPUs registered with the rack's fabric (a real GB200's probe); the fake systemd says every unit is
    active, so the channel's device node decides."""
    channel = tmp_path / "channel0"
    args = {"driver_version": "580.105.08", "imex_channel": str(channel)}
    result = run_gate("gb200-nvl72-tray-x4", tmp_path, args)
    assert result["failed_gate"] == "imex" and result["msg"].startswith("failed/imex: IMEX channel0 is missing")
    channel.write_text("")
    result = run_gate("gb200-nvl72-tray-x4", tmp_path, args)
    assert result["failed_gate"] == "", result["msg"]
    assert next(g for g in result["gates"] if g["gate"] == "fabric")["detail"] == (
        "4 GPUs registered with the rack's NVLink fabric"
    )
    failed = run_gate("gb200-nvl72-tray-x4-fabric-insufficient", tmp_path, args)
    assert failed["msg"] == (
        "failed/fabric: the GPUs have not registered with the NVLink fabric: GPU 0 completed (status 23), "
        "GPU 1 completed (status 23), GPU 2 completed (status 23), GPU 3 completed (status 23)"
    )


def test_kernel_modules_that_follow_the_driver_after_the_change(tmp_path):
    """nvidia-peermem configured at boot (role rdma's file) and GDRCopy installed: once the kernel has the NVIDIA
    module (kernel_root/sys/module/nvidia), each must be loaded too (no /sys/module/nvidia_peermem on this machine;
    gdrdrv and /dev/gdrdrv under kernel_root); while it has not, nothing is asked of them."""
    kernel = tmp_path / "kernel"
    load_file = tmp_path / "gpufleet-nvidia-peermem.conf"
    load_file.write_text("nvidia-peermem\n")
    (tmp_path / "src" / "gdrdrv-2.5.1").mkdir(parents=True)
    args = {"driver_version": "535.230.02", "peermem_load_file": str(load_file), "kernel_root": str(kernel),
            "gdrdrv_src_root": str(tmp_path / "src")}  # fmt: skip
    assert run_gate("t4-x1", tmp_path, args)["failed_gate"] == ""  # the kernel has no NVIDIA module: they follow it
    (kernel / "sys/module/nvidia").mkdir(parents=True)
    result = run_gate("t4-x1", tmp_path, args)
    assert result["failed_gate"] == "peermem" and "NCCL stages through host memory" in result["msg"]
    load_file.unlink()
    result = run_gate("t4-x1", tmp_path, args)
    assert result["msg"] == "failed/gdrdrv: GDRCopy is installed but gdrdrv is not loaded (see `modprobe gdrdrv`)"
    (kernel / "sys/module/gdrdrv").mkdir(parents=True)
    (kernel / "dev").mkdir()
    (kernel / "dev/gdrdrv").write_text("")
    assert run_gate("t4-x1", tmp_path, args)["failed_gate"] == ""
