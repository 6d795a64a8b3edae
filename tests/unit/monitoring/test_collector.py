"""The collector's I/O layer with a fake host: what it runs in Slurm, and when it reads the stack again."""

import os
from pathlib import Path

from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.findings import finding
from ansible_collections.gpufleet.stack.plugins.module_utils._node.health import collector as hc

SLURM = Path(__file__).resolve().parents[1] / "slurm" / "fixtures"
HOT = finding("critical", 3, "temperature at or over the card's slowdown threshold", 95, 89)


class FakeHost:
    def __init__(self, show, update_rc=0):
        self.show, self.update_rc, self.calls = show, update_rc, []

    def run_command(self, argv, check_rc=False):
        self.calls.append(argv)
        if argv[:2] == ["scontrol", "show"]:
            return (
                (0, self.show, "")
                if self.show
                else (1, "", "slurm_load_node error: Unable to contact slurm controller")
            )
        return self.update_rc, "", "" if self.update_rc == 0 else "Invalid user id"


def config(tmp_path, **extra):
    return dict(hc.DEFAULTS, state_dir=str(tmp_path), slurm_node="exp-gpu-1", **extra)


def test_critical_drains_and_is_recorded(tmp_path):
    host = FakeHost((SLURM / "idle.txt").read_text())
    record, error = hc.slurm_step(host, config(tmp_path), [HOT])
    assert error is None
    assert record["action"] == "drain" and record["drained_by_us"] is True
    assert host.calls[-1][:4] == ["scontrol", "update", "NodeName=exp-gpu-1", "State=DRAIN"]


def test_a_failed_update_is_an_error_the_unit_reports(tmp_path):
    host = FakeHost((SLURM / "idle.txt").read_text(), update_rc=1)
    record, error = hc.slurm_step(host, config(tmp_path), [HOT])
    assert error == "scontrol update NodeName=exp-gpu-1 exited 1: Invalid user id"
    assert record["drained_by_us"] is False


def test_an_unreachable_controller_changes_nothing(tmp_path):
    host = FakeHost("")
    record, error = hc.slurm_step(host, config(tmp_path), [HOT])
    assert "Unable to contact slurm controller" in error
    assert record == {"node": "exp-gpu-1"}
    assert len(host.calls) == 1


def test_the_stack_is_read_again_only_when_dpkg_or_an_environment_changed(tmp_path, monkeypatch):
    status = tmp_path / "status"
    status.write_text("Package: a\n")
    reads = []
    monkeypatch.setattr(hc, "gather_installed", lambda scanner, envs: reads.append(envs) or {"stack": {}})
    monkeypatch.setattr(hc, "scanner_for", lambda host: None)
    cfg = config(tmp_path, dpkg_status=str(status))
    for _run in range(3):
        hc.installed_stack(None, cfg)
    assert len(reads) == 1
    status.write_text("Package: a\n\nPackage: b\n")
    os.utime(status, ns=(1, 2))
    hc.installed_stack(None, cfg)
    assert len(reads) == 2


def test_xid_lines_outlive_the_kernel_ring_buffer_until_the_next_boot(tmp_path):
    boot = tmp_path / "boot_id"
    boot.write_text("boot-1\n")
    xid = "[ 1234.5] NVRM: Xid (PCI:0000:07:00): 79, pid=0, name=, GPU has fallen off the bus."
    logs = [[xid, "[ 1234.6] other"], ["[ 9999.0] the buffer wrapped"]]
    reader = hc.remembered_kernel_log(lambda: (logs.pop(0), "dmesg", None), str(tmp_path), str(boot))
    assert reader()[0] == [xid, "[ 1234.6] other"]
    assert reader()[0] == [xid, "[ 9999.0] the buffer wrapped"]  # gone from dmesg, still reported
    boot.write_text("boot-2\n")
    reader = hc.remembered_kernel_log(lambda: (["[ 1.0] fresh boot"], "dmesg", None), str(tmp_path), str(boot))
    assert reader()[0] == ["[ 1.0] fresh boot"]


def test_an_unreadable_log_with_nothing_remembered_stays_unreadable(tmp_path):
    reader = hc.remembered_kernel_log(lambda: (None, None, "dmesg exited 1"), str(tmp_path), str(tmp_path / "none"))
    assert reader() == (None, None, "dmesg exited 1")
