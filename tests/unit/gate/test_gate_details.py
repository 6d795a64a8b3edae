"""Each readiness gate's verdict whole, its detail included: the detail is what the upgrade records as the node's
state and what an operator reads in the drain reason (_node/gate.py; make mutation)."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node import gate as g

LOADED = {"driver_state": "loaded", "driver_version": "570.172.08"}


def verdict(found):
    return found["ok"], found["detail"]


@pytest.mark.parametrize(
    ("facts", "target", "expected"),
    [
        (LOADED, None, (True, "no driver target: not checked")),
        (LOADED, "570.172.08", (True, "driver 570.172.08 loaded")),
        (LOADED, "580.82.07", (False, "driver 580.82.07 is not the one loaded: NVML reports 570.172.08")),
        (
            {"driver_state": "mismatch", "driver_state_reason": "library 580.82.07, module 570.172.08"},
            "580.82.07",
            (
                False,
                "driver 580.82.07 is not the one loaded: NVML reports mismatch (library 580.82.07, module 570.172.08)",
            ),
        ),
        ({}, "580.82.07", (False, "driver 580.82.07 is not the one loaded: NVML reports unknown")),
    ],
)
def test_module(facts, target, expected):
    assert verdict(g.gate_module(facts, target)) == expected


@pytest.mark.parametrize(
    ("facts", "expected_gpus", "expected"),
    [
        ({"gpu_count": 7, "pci_gpu_count": 8}, None, (False, "7 of 8 GPUs: NVML enumerates 7, the PCI bus has 8")),
        ({"gpu_count": 8, "pci_gpu_count": 8}, 8, (True, "8 GPUs in NVML, 8 on PCI")),
        ({"gpu_count": 4}, 8, (False, "4 of 8 GPUs: NVML enumerates 4, gpufleet_expected_gpus is 8")),
        ({"gpu_count": 0, "pci_gpu_count": 0}, None, (True, "0 GPUs in NVML")),
    ],
)
def test_gpus(facts, expected_gpus, expected):
    assert verdict(g.gate_gpus(facts, expected_gpus)) == expected


def probe(state="completed", status=0):
    return {"state": state, "status": status}


@pytest.mark.parametrize(
    ("facts", "fm_active", "lines", "expected"),
    [
        ({}, False, [], (True, "no NVSwitch: Fabric Manager not needed")),
        (
            {"fabricmanager_required": True},
            False,
            [],
            (False, "Fabric Manager is not active on an NVSwitch system (CUDA answers error 802)"),
        ),
        (
            {
                "fabricmanager_required": True,
                "gpus": [{"index": 0, "fabric": probe()}, {"index": 1, "fabric": probe("in_progress")}],
            },
            True,
            [],
            (False, "the NVLink fabric has not finished training: GPU 1 in_progress"),
        ),
        (
            {"fabricmanager_required": True, "gpus": [{"index": 0, "fabric": probe("completed", 3)}]},
            True,
            [],
            (False, "the NVLink fabric has not finished training: GPU 0 completed (status 3)"),
        ),
        (
            {"fabricmanager_required": True, "gpus": [{"index": 0, "fabric": probe()}]},
            True,
            [],
            (True, "Fabric Manager active, 1 GPUs registered with the fabric"),
        ),
        (
            {"fabricmanager_required": True, "gpus": [{"index": 0}]},
            True,
            [],
            (False, f'Fabric Manager is active but has not logged "{g.FM_DONE}" since it started'),
        ),
        (
            {"imex_required": True, "gpus": [{"index": 0, "fabric": probe("in_progress")}]},
            False,
            [],
            (False, "the GPUs have not registered with the NVLink fabric: GPU 0 in_progress"),
        ),
        (
            {"imex_required": True, "gpus": [{"index": 0, "fabric": probe()}, {"index": 1, "fabric": probe()}]},
            False,
            [],
            (True, "2 GPUs registered with the rack's NVLink fabric"),
        ),
    ],
)
def test_fabric(facts, fm_active, lines, expected):
    assert verdict(g.gate_fabric(facts, fm_active, lines)) == expected


def test_nvlsm_imex_peermem_gdrdrv_and_persistence():
    b200 = {"nvlsm_required": True}
    assert verdict(g.gate_nvlsm({}, [])) == (True, "no NVLink 5 NVSwitch: NVLSM not needed")
    assert verdict(g.gate_nvlsm(b200, ["nv-fabricmanager", "nvlsm"])) == (True, "NVLSM running beside Fabric Manager")
    assert verdict(g.gate_nvlsm(b200, ["nv-fabricmanager"]))[1].startswith("NVLSM is not running on an NVLink 5 system")
    tray = {"imex_required": True, "nvlink_domain": "9c6f.4026"}
    assert verdict(g.gate_imex({}, False, False)) == (True, "no multi-node NVLink: IMEX not needed")
    assert verdict(g.gate_imex(tray, False, True)) == (
        False,
        "the IMEX service is not active on a multi-node NVLink node",
    )
    assert verdict(g.gate_imex(tray, True, False))[1].startswith("IMEX channel0 is missing")
    assert verdict(g.gate_imex(tray, True, True)) == (True, "IMEX active with channel0 in NVLink domain 9c6f.4026")
    assert verdict(g.gate_imex({"imex_required": True}, True, True))[1].endswith("NVLink domain unknown")
    assert verdict(g.gate_peermem(LOADED, False)) == (True, "nvidia-peermem not configured here")
    assert verdict(g.gate_peermem(LOADED, True, kernel_driver=False)) == (
        True,
        "the driver is not loaded: nvidia-peermem follows it",
    )
    assert verdict(g.gate_peermem({}, True)) == (True, "the driver is not loaded: nvidia-peermem follows it")
    assert verdict(g.gate_peermem({**LOADED, "fabric": {"peermem": True}}, True)) == (
        True,
        "nvidia-peermem loaded (GPUDirect RDMA)",
    )
    assert verdict(g.gate_peermem({}, True, kernel_driver=True))[0] is False
    assert verdict(g.gate_gdrdrv(LOADED, False, False, False)) == (True, "GDRCopy not installed here")
    assert verdict(g.gate_gdrdrv({}, True, False, False)) == (True, "the driver is not loaded: gdrdrv follows it")
    assert verdict(g.gate_gdrdrv(LOADED, True, False, False)) == (
        False,
        "GDRCopy is installed but gdrdrv is not loaded (see `modprobe gdrdrv`)",
    )
    assert verdict(g.gate_gdrdrv(LOADED, True, True, False)) == (
        False,
        "gdrdrv is loaded but /dev/gdrdrv is missing (gdrdrv.service makes it)",
    )
    assert verdict(g.gate_gdrdrv({}, True, True, True, kernel_driver=True)) == (
        True,
        "gdrdrv loaded, /dev/gdrdrv present",
    )
    gpus = {
        "gpus": [
            {"index": 0, "persistence_mode": True},
            {"index": 3, "persistence_mode": False},
            {"index": 5, "persistence_mode": False},
            {"index": 6},
        ]
    }
    assert verdict(g.gate_persistence(gpus, required=False)) == (True, "not required (nvidia-persistenced not managed)")
    assert verdict(g.gate_persistence(gpus))[1].startswith("persistence mode off on GPU 3, 5: ")
    assert verdict(g.gate_persistence({"gpus": [{"index": 0}]})) == (True, "persistence mode on")


def test_health_xid_and_cdi():
    old, new = "NVRM: Xid (PCI:0000:07:00): 79, old", "NVRM: Xid (PCI:0000:07:00): 48, new"
    facts = {
        "health_status": "critical",
        "health": [
            {"severity": "critical", "what": "Xid 79 in kernel log", "value": old},
            {"severity": "warning", "what": "temperature at or over threshold", "value": 86},
        ],
        "kernel_log": {"xid_lines": [old, new]},
    }
    assert verdict(g.gate_health(facts, [old])) == (True, "health critical")
    assert verdict(g.gate_health(facts, [])) == (False, "critical: Xid 79 in kernel log")
    assert verdict(g.gate_health({}, None)) == (True, "health ok")
    assert verdict(g.gate_xid(facts, [old])) == (False, f"1 new Xid since the upgrade began: {new}")
    assert verdict(g.gate_xid(facts, [old, new])) == (True, "no new Xid since the upgrade began")
    hook = "args: [nvidia-cdi-hook, update-ldcache, --host-driver-version=580.82.07]"
    libs = "hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.172.08\nhostPath: /usr/lib/libnvidia-ml.so.570.172.08"
    assert g.cdi_versions(hook + "\n" + libs) == ["580.82.07"]
    assert g.cdi_versions(libs) == ["570.172.08"]
    assert verdict(g.gate_cdi("", None, "580.82.07")) == (True, "no CDI spec expected")
    assert verdict(g.gate_cdi("/etc/cdi/nvidia.yaml", None, "580.82.07"))[1] == (
        "no CDI spec at /etc/cdi/nvidia.yaml: containers cannot request nvidia.com/gpu devices"
    )
    assert verdict(g.gate_cdi("/etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu", "580.82.07"))[1] == (
        "the CDI spec /etc/cdi/nvidia.yaml names no driver version (generated without a driver?)"
    )
    assert verdict(g.gate_cdi("/etc/cdi/nvidia.yaml", libs, "580.82.07")) == (
        False,
        "the CDI spec /etc/cdi/nvidia.yaml is for driver 570.172.08, 580.82.07 is loaded",
    )
    assert verdict(g.gate_cdi("/etc/cdi/nvidia.yaml", hook, "580.82.07")) == (True, "CDI spec for driver 580.82.07")
