"""The readiness gate's rules (module_utils/_node/gate): each failure an upgraded node must not be resumed with, on
facts shaped as gpu_facts returns them."""

from ansible_collections.gpufleet.stack.plugins.module_utils._node import gate as g

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
    names = ["module", "gpus", "fabric", "nvlsm", "imex", "peermem", "gdrdrv", "persistence", "health", "xid", "cdi"]
    assert [x["gate"] for x in gates] == names
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
    a100 = facts(nvswitch_present=True, fabricmanager_required=True)
    assert "Fabric Manager is not active" in g.first_failure(verdicts(a100))["detail"]
    started = ["Starting NVIDIA fabric manager service...", "Connected to 1 node."]
    assert g.first_failure(verdicts(a100, fm_active=True, fm_lines=started))["gate"] == "fabric"
    done = [*started, "Successfully configured all the available GPUs and NVSwitches to route NVLink traffic."]
    assert g.first_failure(verdicts(a100, fm_active=True, fm_lines=done)) is None
    # A restart after the success: only lines since the last start count.
    assert g.first_failure(verdicts(a100, fm_active=True, fm_lines=[*done, "Starting NVIDIA fabric manager"]))
    hopper = facts(nvswitch_present=True, fabricmanager_required=True,
                   gpus=[{"index": i, "persistence_mode": True, "fabric": {"state": "in_progress", "status": 0}}
                         for i in range(8)])  # fmt: skip
    failure = g.first_failure(verdicts(hopper, fm_active=True))
    assert failure["detail"].startswith("the NVLink fabric has not finished training: GPU 0 in_progress, GPU 1")


def probe(state="completed", status=0):
    return {"state": state, "status": status, "clique_id": 4026, "cluster_uuid": "9c6f5af3-53bf-49b5-a436-b66766c413c3"}


def test_an_hgx_b200_needs_fabric_manager_and_nvlsm_running():
    b200 = facts(fabricmanager_required=True, nvlsm_required=True,
                 gpus=[{"index": i, "persistence_mode": True, "fabric": probe()} for i in range(8)])  # fmt: skip
    assert g.first_failure(verdicts(b200))["detail"].startswith("Fabric Manager is not active on an NVSwitch system")
    failure = g.first_failure(verdicts(b200, fm_active=True, processes=["systemd", "nv-fabricmanager"]))
    assert failure["gate"] == "nvlsm" and failure["detail"].startswith("NVLSM is not running on an NVLink 5 system")
    assert g.first_failure(verdicts(b200, fm_active=True, processes=["nv-fabricmanager", "nvlsm"])) is None


def test_a_gb200_tray_needs_its_gpus_registered_and_imex_with_channel0():
    """No Fabric Manager of its own: the rack's switch trays run it; the tray's GPUs register with that fabric."""
    gpus = [{"index": i, "persistence_mode": True, "fabric": probe()} for i in range(4)]
    tray = facts(imex_required=True, nvlink_domain="9c6f5af3-53bf-49b5-a436-b66766c413c3.4026", gpu_count=4,
                 pci_gpu_count=4, gpus=gpus)  # fmt: skip
    ready = {"imex_active": True, "imex_channel0": True}
    assert g.first_failure(verdicts(tray, **ready)) is None
    assert g.first_failure(verdicts(tray))["detail"] == "the IMEX service is not active on a multi-node NVLink node"
    no_channel = g.first_failure(verdicts(tray, imex_active=True))
    assert no_channel["gate"] == "imex" and no_channel["detail"].startswith("IMEX channel0 is missing")
    failed = facts(**{**tray, "gpus": [{"index": 0, "persistence_mode": True, "fabric": probe(status=23)}]})
    assert g.first_failure(verdicts(failed, **ready))["detail"] == (
        "the GPUs have not registered with the NVLink fabric: GPU 0 completed (status 23)"
    )


def test_peermem_is_loaded_after_the_change_where_the_node_loads_it_at_boot():
    with_peermem = facts(fabric={"peermem": True})
    without = facts(fabric={"peermem": False})
    assert g.first_failure(verdicts(with_peermem, peermem_wanted=True)) is None
    failure = g.first_failure(verdicts(without, peermem_wanted=True))
    assert failure["gate"] == "peermem" and "NCCL stages through host memory" in failure["detail"]
    assert g.first_failure(verdicts(without)) is None  # not configured to load here: not asked
    # The driver not loaded is the module gate's to say, not peermem's.
    assert g.gate_peermem(facts(driver_state="not_loaded", fabric={}), True)["ok"]


def test_gdrcopy_installed_needs_gdrdrv_and_its_device_once_the_driver_is_loaded():
    """gdrdrv.service's init script exits 0 whatever failed: the module and the node are what is asked."""
    assert g.first_failure(verdicts(facts(), gdrdrv_installed=True, gdrdrv_loaded=True, gdrdrv_device=True)) is None
    failure = g.first_failure(verdicts(facts(), gdrdrv_installed=True, gdrdrv_loaded=False, gdrdrv_device=False))
    assert (failure["gate"], failure["detail"]) == (
        "gdrdrv", "GDRCopy is installed but gdrdrv is not loaded (see `modprobe gdrdrv`)")  # fmt: skip
    no_node = g.first_failure(verdicts(facts(), gdrdrv_installed=True, gdrdrv_loaded=True, gdrdrv_device=False))
    assert no_node["detail"] == "gdrdrv is loaded but /dev/gdrdrv is missing (gdrdrv.service makes it)"
    assert g.gate_gdrdrv(facts(driver_state="not_loaded"), True, False, False)["ok"]
    # The kernel's account wins over NVML's: no NVIDIA module in the kernel, nothing that depends on it is asked for.
    assert g.gate_gdrdrv(facts(), True, False, False, kernel_driver=False)["ok"]
    assert not g.gate_gdrdrv(facts(driver_state="not_loaded"), True, False, False, kernel_driver=True)["ok"]
    assert g.first_failure(verdicts(facts(), gdrdrv_loaded=False)) is None  # not installed: not asked


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


def test_a_success_line_from_an_earlier_start_does_not_count():
    """Fabric Manager's log is appended across restarts: only lines after the newest start count."""
    log = [
        "[Dec 01 2026 10:00:00] [INFO] [tid 10] Fabric Manager version 570.133.20 is running",
        "[Dec 01 2026 10:00:09] [INFO] [tid 10] Successfully configured all the available GPUs and NVSwitches to route",
        "[Dec 02 2026 08:00:00] [INFO] [tid 22] Fabric Manager version 570.172.08 is running",
        "[Dec 02 2026 08:00:03] [ERROR] [tid 22] request to query NVSwitch device information failed",
    ]
    assert g.fm_configured(log) is False
    assert g.fm_configured(log[:2]) is True
    assert g.fm_configured(["Successfully configured all the available GPUs and NVSwitches"]) is False  # no start seen


def test_cdi_versions_are_the_drivers_not_other_libraries():
    spec = (
        "  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.172.08\n"
        "  - containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-egl-wayland.so.1.1.13\n"
        "  - containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-egl-gbm.so.1.1.2\n"
        "  - containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.172.08\n"
    )
    assert g.cdi_versions(spec) == ["570.172.08"]
    assert g.cdi_versions(spec + "    - --host-driver-version=570.172.08\n") == ["570.172.08"]
    assert g.gate_cdi("/etc/cdi/nvidia.yaml", spec, "570.172.08")["ok"]


def test_persistence_is_not_required_where_the_daemon_is_not_managed():
    off = facts(gpus=[{"index": 0, "persistence_mode": False, "fabric": None}])
    assert g.first_failure(verdicts(off, persistence=False)) is None
