"""The readiness gate (module_utils/_gate), and gpufleet.stack.upgrade_gate run under the NVML simulator on the
profiles of the failures it must catch: a GPU missing from NVML, a fabric still training, persistence off, a CDI
spec for the old driver."""

import json
import sys

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils import _gate as g

from . import test_simulator
from .test_simulator import SIM, run_replay

pytestmark = test_simulator.pytestmark  # the simulator tests' skips (no compiler: no simulator)

MODULE = "ansible_collections.gpufleet.stack.plugins.modules.upgrade_gate"
SPEC_OLD = "  - --host-driver-version=570.133.20\n  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.133.20\n"
SPEC_NEW = SPEC_OLD.replace("570.133.20", "570.172.08")


def facts(**over):
    base = {
        "driver_state": "loaded",
        "driver_version": "570.172.08",
        "gpu_count": 8,
        "pci_gpu_count": 8,
        "nvswitch_present": False,
        "gpus": [{"index": i, "persistence_mode": True, "fabric": None} for i in range(8)],
        "health": [],
        "health_status": "ok",
        "kernel_log": {"xid_lines": []},
    }
    return {**base, **over}


def verdicts(f, **over):
    args = {"target": "570.172.08", "expected_gpus": None, "fm_active": False, "fm_lines": [], "xid_baseline": [],
            "cdi_path": "", "cdi_text": None, **over}  # fmt: skip
    return g.evaluate(f, **args)


def test_a_healthy_node_passes_every_gate():
    gates = verdicts(facts(), cdi_path="/etc/cdi/nvidia.yaml", cdi_text=SPEC_NEW)
    assert [x["gate"] for x in gates] == ["module", "gpus", "fabric", "persistence", "health", "xid", "cdi"]
    assert g.first_failure(gates) is None


def test_the_old_module_still_loaded():
    failure = g.first_failure(verdicts(facts(driver_state="mismatch", driver_version=None,
                                             driver_state_reason="NVML library 570.172.08 does not match kernel "
                                             "module 570.133.20; reboot")))  # fmt: skip
    assert failure["gate"] == "module"
    assert failure["detail"].startswith("driver 570.172.08 is not the one loaded: NVML reports mismatch (NVML library")


def test_seven_of_eight_gpus():
    assert g.first_failure(verdicts(facts(gpu_count=7)))["detail"] == (
        "7 of 8 GPUs: NVML enumerates 7, the PCI bus has 8"
    )
    assert g.first_failure(verdicts(facts(pci_gpu_count=0), expected_gpus=4))["detail"].startswith("8 of 4 GPUs")


def test_fabric_on_nvswitch_hosts():
    a100 = facts(nvswitch_present=True)
    assert "Fabric Manager is not active" in g.first_failure(verdicts(a100))["detail"]
    started = ["Starting NVIDIA fabric manager service...", "Connected to 1 node."]
    assert g.first_failure(verdicts(a100, fm_active=True, fm_lines=started))["gate"] == "fabric"
    done = [*started, "Successfully configured all the available GPUs and NVSwitches to route NVLink traffic."]
    assert g.first_failure(verdicts(a100, fm_active=True, fm_lines=done)) is None
    # A restart after the success: only lines since the last start count.
    assert g.first_failure(verdicts(a100, fm_active=True, fm_lines=[*done, "Starting NVIDIA fabric manager"]))
    hopper = facts(nvswitch_present=True,
                   gpus=[{"index": i, "persistence_mode": True, "fabric": {"state": "in_progress", "status": 0}}
                         for i in range(8)])  # fmt: skip
    failure = g.first_failure(verdicts(hopper, fm_active=True))
    assert failure["detail"].startswith("the NVLink fabric has not finished training: GPU 0 in_progress, GPU 1")


def test_persistence_health_xid_and_cdi():
    off = facts(gpus=[{"index": 0, "persistence_mode": False, "fabric": None}])
    assert g.first_failure(verdicts(off))["gate"] == "persistence"
    old_xid = "NVRM: Xid (PCI:0000:0f:00): 48, pid=9921"
    hot = facts(health=[{"severity": "critical", "what": "Xid 48 in kernel log", "value": old_xid}],
                kernel_log={"xid_lines": [old_xid]})  # fmt: skip
    assert g.first_failure(verdicts(hot, xid_baseline=[old_xid])) is None  # there before the upgrade
    failure = g.first_failure(verdicts(hot))
    assert (failure["gate"], failure["detail"]) == ("health", "critical: Xid 48 in kernel log")
    new = facts(kernel_log={"xid_lines": [old_xid, "NVRM: Xid (PCI:0000:07:00): 13, pid=1"]})
    assert g.first_failure(verdicts(new, xid_baseline=[old_xid]))["detail"].startswith("1 new Xid since the upgrade")
    cdi = g.first_failure(verdicts(facts(), cdi_path="/etc/cdi/nvidia.yaml", cdi_text=SPEC_OLD))
    assert cdi["detail"] == "the CDI spec /etc/cdi/nvidia.yaml is for driver 570.133.20, 570.172.08 is loaded"
    missing = g.first_failure(verdicts(facts(), cdi_path="/etc/cdi/nvidia.yaml"))
    assert missing["detail"].startswith("no CDI spec at /etc/cdi/nvidia.yaml")


def run_gate(profile, tmp_path, args):
    """upgrade_gate under the simulator; a failed gate is the module's own answer (rc 1), not a test error."""
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"timeout": 0, **args}}))
    argv = [sys.executable, "-m", MODULE, str(path)]
    return json.loads(run_replay(SIM / "profiles" / f"{profile}.json", argv, tmp_path, ok=(0, 1)))


@pytest.mark.parametrize(
    ("profile", "gate", "detail"),
    [
        ("a100-sxm4-40gb-x8-nvswitch-gpu-lost", "gpus", "7 of 8 GPUs"),
        ("h100-sxm5-80gb-x8-fabric-in-progress", "fabric", ""),
        ("t4-x1", "", ""),
    ],
)
def test_the_module_under_the_simulator(profile, gate, detail, tmp_path):
    data = json.loads((SIM / "profiles" / f"{profile}.json").read_text())
    result = run_gate(profile, tmp_path, {"driver_version": data["driver_version"]})
    assert result["failed_gate"] == gate, result
    if gate:
        assert result["failed"] and result["msg"].startswith(f"failed/{gate}: {detail}")
    assert result["ansible_facts"]["gpufleet_gpu"]["driver_version"] == data["driver_version"]
