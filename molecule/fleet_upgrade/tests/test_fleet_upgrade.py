"""Rolling upgrades of the sandbox fleet with playbooks/upgrade.yml, against real Slurm (Debian's slurm-wlm).

Runs after converge (site.yml at driver 570.133.20) and idempotence. The tests run in file order, each starting
from the state the previous one left: upgrade the fleet, inject a failing package on one node, fix it and
converge, refuse a busy GPU, roll one node back, and let site.yml's verification name the node that differs.
"""

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))
INVENTORY = os.environ.get("MOLECULE_INVENTORY_FILE", "")
NODES = ["fleet-gpu-1", "fleet-gpu-2", "fleet-gpu-3", "fleet-gpu-4"]
CONTROLLER = "fleet-ctl"
# The desired stack without a framework: this fleet has no training venv (horovod is not in gpufleet_components).
BASE = {"driver_flavor": "open", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"}
BROKEN = "570.86.15"  # the mirror's driver whose DKMS postinst fails

pytestmark = pytest.mark.skipif(not INVENTORY, reason="runs as the fleet_upgrade Molecule scenario's verifier")


def sh(*argv, check=True):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, timeout=1800)
    assert not check or proc.returncode == 0, f"{argv}: rc {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr}"
    return proc


def node(name, script, check=True):
    return sh("docker", "exec", name, "bash", "-c", script, check=check).stdout


def upgrade(tmp_path, driver, *extra, host_drivers=None, playbook="playbooks/upgrade.yml"):
    """playbooks/upgrade.yml (or another playbook) against the Molecule inventory, with the target stack as host
    variables of a second inventory source (host variables of an inventory file outrank Molecule's group_vars/all;
    group variables there would not)."""
    drivers = {name: (host_drivers or {}).get(name, driver) for name in NODES}
    overlay = {"all": {"hosts": {h: {"gpufleet_stack": dict(BASE, driver=d)} for h, d in drivers.items()}}}
    path = tmp_path / "target.yml"
    path.write_text(yaml.safe_dump(overlay))
    return sh(
        "ansible-playbook",
        "-i",
        INVENTORY,
        "-i",
        path,
        ROOT / playbook,
        "-e",
        "gpufleet_hosts=gpu",
        "-e",
        f"@{ROOT / 'molecule/_shared/mirror_vars.yml'}",
        "-e",
        f"gpufleet_report_dir={tmp_path / 'report'}",
        *extra,
        check=False,
    )


def packages(name):
    """{package: (version, selection)} of the driver parts the upgrade must keep together."""
    out = node(
        name,
        "dpkg-query -W -f '${Package} ${Version} ${Status}\\n' libnvidia-ml1 nvidia-driver-cuda firmware-nvidia-gsp "
        "nvidia-kernel-open-dkms 'nvidia-fabricmanager*' 'libnvidia-nscq*' 2>/dev/null",
        check=False,
    )
    return {f[0]: (f[1], f[2]) for f in (line.split() for line in out.splitlines()) if f[-1] == "installed"}


def nvml_driver(name):
    script = "import pynvml as n; n.nvmlInit(); print(n.nvmlSystemGetDriverVersion())"
    # The bindings the collection installed (roles/pynvml), as gpu_facts imports them.
    return node(name, f"PYTHONPATH=/usr/local/lib/gpufleet/python python3 -c '{script}'").strip()


def slurm_node(name):
    """(state, reason) as scontrol shows them on the controller."""
    out = node(CONTROLLER, f"scontrol show node {name} --oneliner")
    fields = dict(f.split("=", 1) for f in out.replace("Reason=", "\x00Reason=").split("\x00")[0].split() if "=" in f)
    reason = out.split("Reason=", 1)[1].rsplit(" [", 1)[0].strip() if "Reason=" in out else ""
    return fields["State"], reason


class DrainWatch(threading.Thread):
    """Polls sinfo on the controller while a rollout runs: the most nodes drained at once, and which."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop, self.max_drained, self.seen = threading.Event(), 0, set()

    def run(self):
        while not self.stop.is_set():
            out = node(CONTROLLER, "sinfo -h -N -o '%N %t'", check=False)
            drained = {n for n, state in (line.split() for line in out.splitlines()) if "dr" in state}
            self.max_drained = max(self.max_drained, len(drained))
            self.seen |= drained
            time.sleep(0.3)


def assert_at(name, version):
    pkgs = packages(name)
    assert pkgs["libnvidia-ml1"] == (f"{version}-1", "hold"), pkgs
    assert pkgs["nvidia-fabricmanager-570"] == (f"{version}-1", "hold"), pkgs  # Fabric Manager equals the driver
    # A part that only arrives through dependencies (outside any name glob) moved and is held with the rest.
    assert pkgs["firmware-nvidia-gsp"] == pkgs["libnvidia-nscq-570"] == (f"{version}-1", "hold"), pkgs
    assert nvml_driver(name) == version


def test_converge_built_every_node_at_the_first_driver():
    for name in NODES:
        assert_at(name, "570.133.20")
        assert slurm_node(name)[0] == "IDLE"


def test_rolling_upgrade_drains_at_most_one_batch_and_resumes_every_node(tmp_path):
    watch = DrainWatch()
    watch.start()
    try:
        proc = upgrade(tmp_path, "570.172.08", "-e", "gpufleet_upgrade_serial=2")
    finally:
        watch.stop.set()
        watch.join()
    assert proc.returncode == 0, proc.stdout[-6000:]
    print(f"most nodes drained at once: {watch.max_drained}; drained at some point: {sorted(watch.seen)}")
    assert watch.max_drained <= 2, f"{watch.max_drained} nodes drained at once with serial=2"
    assert watch.seen == set(NODES), "every node is drained for its upgrade"
    for name in NODES:
        assert_at(name, "570.172.08")
        assert slurm_node(name) == ("IDLE", ""), slurm_node(name)
        history = json.loads(node(name, "cat /var/lib/gpufleet/stack-history.json"))
        assert history[-1]["status"] == "done"
        assert history[-1]["from"]["driver"] == "570.133.20" and history[-1]["to"]["driver"] == "570.172.08"
    report = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    # The GPU nodes (gpufleet_hosts=gpu), each without drift; the Slurm controller is not a GPU host to report.
    assert sorted((r["host"], r["drift"]) for r in report["rows"]) == [(name, []) for name in NODES]


def test_a_failing_package_stops_the_rollout_and_leaves_that_node_drained(tmp_path):
    before = {name: node(name, "stat -c %Y /var/lib/gpufleet/upgrade-state.json") for name in NODES}
    proc = upgrade(tmp_path, "570.133.20", "-e", "gpufleet_upgrade_serial=1", host_drivers={"fleet-gpu-2": BROKEN})
    assert proc.returncode != 0
    # ansible-core 2.19 prints a failed task's message on stderr; the YAML callback folds it across lines.
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "fleet-gpu-2: upgrade failed at step install" in out and "rerun this playbook" in out, out[-6000:]
    # Batch 1 (gpu-1) went down to 570.133.20; batch 2 (gpu-2) failed; batches 3 and 4 never started.
    assert_at("fleet-gpu-1", "570.133.20")
    for name in ("fleet-gpu-3", "fleet-gpu-4"):
        assert_at(name, "570.172.08")
        assert slurm_node(name) == ("IDLE", "")
        assert node(name, "stat -c %Y /var/lib/gpufleet/upgrade-state.json") == before[name], "untouched"
    state, reason = slurm_node("fleet-gpu-2")
    assert "DRAIN" in state and reason.startswith("gpufleet: upgrade failed at install"), (state, reason)
    recorded = json.loads(node("fleet-gpu-2", "cat /var/lib/gpufleet/upgrade-state.json"))
    assert (recorded["status"], recorded["step"], recorded["from"]["driver"]) == ("failed", "install", "570.172.08")
    assert packages("fleet-gpu-2")["libnvidia-ml1"][1] == "hold"  # nothing released


def test_rerun_after_the_fix_resumes_and_the_fleet_converges(tmp_path):
    proc = upgrade(tmp_path, "570.133.20", "-e", "gpufleet_upgrade_serial=1")
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert "fleet-gpu-1 is at the target stack" in proc.stdout  # resumed where it stopped
    for name in NODES:
        assert_at(name, "570.133.20")
        assert slurm_node(name) == ("IDLE", "")


def test_a_busy_gpu_blocks_its_node(tmp_path):
    profile = "/etc/gpufleet/nvml-sim/profile.json"
    node(
        "fleet-gpu-3",
        f"cp {profile} /root/profile.idle && python3 -c \"import json; p=json.load(open('{profile}')); "
        f"p['gpus'][5]['processes']=[{{'pid': 4242, 'name': 'python3', 'used_memory_mib': 30000}}]; "
        f"json.dump(p, open('{profile}', 'w'))\"",
    )
    try:
        proc = upgrade(tmp_path, "570.172.08", "--limit", "fleet-gpu-3")
    finally:
        node("fleet-gpu-3", f"mv /root/profile.idle {profile}")
    assert proc.returncode != 0
    assert "compute process" in proc.stdout and "fleet-gpu-3" in proc.stdout, proc.stdout[-6000:]
    assert_at("fleet-gpu-3", "570.133.20")
    assert slurm_node("fleet-gpu-3")[0] == "IDLE"  # refused before the drain


def test_rollback_returns_a_node_to_its_recorded_stack(tmp_path):
    proc = upgrade(tmp_path, "570.133.20", "--limit", "fleet-gpu-4", "-e", "gpufleet_upgrade_mode=rollback")
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert_at("fleet-gpu-4", "570.172.08")  # back to what it had before its last upgrade
    assert slurm_node("fleet-gpu-4") == ("IDLE", "")


def test_site_names_a_host_that_fails_verification(tmp_path):
    """site.yml's verification alone (--tags verify) on the fleet as the rollback left it: fleet-gpu-4 has 570.172.08
    while every node should have 570.133.20. That host fails, named with the reason in the output and the report;
    the others pass; nothing is installed."""
    proc = upgrade(tmp_path, "570.133.20", "--tags", "verify", playbook="site.yml")
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())
    reason = "desired driver 570.133.20, host has 570.172.08"
    assert "fleet-gpu-4 failed verification:" in out and reason in out, out[-6000:]
    for name in NODES[:3]:
        assert f"{name} failed verification" not in out
    rows = json.loads((tmp_path / "report" / "fleet-report.json").read_text())["rows"]
    failed = {r["host"]: d for r in rows for d in r["drift"] if d.startswith("verification failed:")}
    assert list(failed) == ["fleet-gpu-4"] and reason in failed["fleet-gpu-4"], failed
    assert_at("fleet-gpu-4", "570.172.08")  # verification changed nothing
