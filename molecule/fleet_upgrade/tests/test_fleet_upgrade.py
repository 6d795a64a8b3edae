"""Rolling upgrades of a live sandbox cluster with playbooks/upgrade.yml, against real Slurm (Debian's slurm-wlm).

Runs after converge (site.yml at driver 570.133.20, gres.conf on every node, Gres=gpu:a100:8 on the controller) and
idempotence. The tests run in file order, each starting from the state the previous one left: upgrade the fleet in
canary batches while a GPU job runs, inject a failing package, fix it and converge, block a node with a stray GPU
process and skip one whose job outlives the drain timeout, lose a GPU from NVML on one node while another refuses a
reboot into a kernel without the module (one batch), roll one node back, let site.yml's verification name the node
that differs, hold dpkg's lock on it past the wait, then cut its power mid-install and bring it back. Three GPU nodes
and few playbook runs: each run costs about a minute per batch on the 2-core CI machine (2026-12-06: 171 tasks, 64 s
for one node), so the tests share runs where the outcomes cannot interfere.

What runs for real: Slurm (drain, the job's life, slurmd registration, gres.conf validation, Gres counts), apt and
dpkg with NVIDIA's package graph, systemd units with their drop-ins, the stand-in daemons' journals. Through the
NVML simulator: the GPUs, their processes (a job registers its pid per GPU; sandbox/slurm/gpu-job), a GPU missing from
NVML, the loaded module's version. Containers cannot reboot: the reboot step is exercised up to the kernel guard
(refused) and the "reboot required" stop; the reboot itself and the post-reboot CDI regeneration are not.
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
NODES = ["fleet-gpu-1", "fleet-gpu-2", "fleet-gpu-3"]
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


def gres(name):
    out = node(CONTROLLER, f"scontrol show node {name} --oneliner")
    return next(f.split("=", 1)[1] for f in out.split() if f.startswith("Gres="))


def slurmd_evidence(name):
    """What a node's slurmd saw when the scheduler disagrees with NVML: its devices, gres.conf and log's tail."""
    seen = node(name, "ls /dev/nvidia*; cat /etc/slurm/gres.conf; tail -n 30 /var/log/slurm/slurmd.log", check=False)
    return seen + node(CONTROLLER, f"grep -i -e gres -e {name} /var/log/slurm/slurmctld.log | tail -n 30", check=False)


def why_failed(proc, name):
    """What a failed run said (its fatal lines, each after its task) and what Slurm and the node's slurmd saw."""
    lines, said, task = proc.stdout.splitlines(), [], ""
    for line in lines:
        if line.startswith("TASK ["):
            task = line
        elif line.startswith(("fatal:", "failed:")):
            said += [task, line[:3000]]
    scheduler = node(CONTROLLER, f"scontrol show node {name}", check=False)
    return "\n".join([*said, proc.stdout[-3000:], scheduler, slurmd_evidence(name)])


def state_file(name):
    return json.loads(node(name, "cat /var/lib/gpufleet/upgrade-state.json"))


def cdi_driver(name):
    """The driver version the node's CDI spec was generated for (its hook's --host-driver-version)."""
    spec = node(name, "cat /etc/cdi/nvidia.yaml")
    return spec.split("--host-driver-version=", 1)[1].split()[0]


def edit_profile(name, code):
    """Change the node's simulated GPUs: code runs with `p`, the profile (sandbox/nvml-sim/README.md)."""
    path = "/etc/gpufleet/nvml-sim/profile.json"
    script = f"import json; p = json.load(open('{path}')); {code}; json.dump(p, open('{path}', 'w'))"
    node(name, f'python3 -c "{script}"')


def batches(out):
    """The hosts of each batch of the rolling play, in order (Ansible prints the play once per batch)."""
    parts = out.split("PLAY [Roll the upgrade in batches]")[1:]
    found = []
    for part in parts:
        hosts = []
        for line in part.split("PLAY [", 1)[0].splitlines():
            for name in NODES:
                if f"[{name}]" in line and name not in hosts:
                    hosts.append(name)
        found.append(hosts)
    return found


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


def wait_running(job):
    for _attempt in range(30):
        if node(CONTROLLER, f"squeue -h -j {job} -o %T").strip() == "RUNNING":
            return
        time.sleep(1)


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
        assert slurm_node(name)[0] == "IDLE", (slurm_node(name), slurmd_evidence(name))
        # The scheduler sees the GPUs NVML counts: gres.conf from slurm_gres, the node line from its fact.
        assert gres(name) == "gpu:a100:8"
        assert cdi_driver(name) == "570.133.20"
        # nvidia-persistenced runs with persistence mode (the role's drop-in; the packaged unit says no), and
        # Fabric Manager is active: the driver's devices exist once its module package is in.
        assert "--persistence-mode" in node(name, "systemctl show -p ExecStart nvidia-persistenced")
        assert node(name, "cat /run/nvidia-persistenced/gpufleet-nvml-sim-persistence").strip() == "1"
        assert node(name, "systemctl is-active nvidia-fabricmanager nvidia-persistenced").split() == ["active"] * 2
        assert node(name, "readlink /dev/char/195:0").strip() == "../nvidia0"


def test_a_live_rollout_drains_waits_for_the_job_and_gives_every_node_back(tmp_path):
    """A GPU job runs on fleet-gpu-1 when the rollout starts: the node drains (no new jobs), the job ends, the node
    upgrades and comes back with its GPUs. Canary batches [1, 2]: the canary, then the other two together."""
    job = node(CONTROLLER, "sbatch --parsable -w fleet-gpu-1 --gres=gpu:8 -o /dev/null --wrap 'gpufleet-gpu-job 25'")
    job = job.strip()
    wait_running(job)
    time.sleep(1)
    procs = node("fleet-gpu-1", "ls /run/gpufleet/nvml-sim/processes/*/ | grep -c '^[0-9]'", check=False).strip()
    assert procs == "8", "the job holds a simulated CUDA context on each of its 8 GPUs"
    watch = DrainWatch()
    watch.start()
    try:
        # The readiness gate's validation hook (gpufleet_upgrade_validate): DCGM's check, not installed here.
        proc = upgrade(
            tmp_path,
            "570.172.08",
            "-e",
            '{"gpufleet_upgrade_serial": [1, 2], "gpufleet_upgrade_validate": true, "gpu_validation_checks": ["dcgm"]}',
        )
    finally:
        watch.stop.set()
        watch.join()
    assert proc.returncode == 0, proc.stdout[-6000:]
    print(f"most nodes drained at once: {watch.max_drained}; drained at some point: {sorted(watch.seen)}")
    assert [len(b) for b in batches(proc.stdout)] == [1, 2], batches(proc.stdout)
    # Where the rollout stands before each batch, and the hosts by outcome at the end.
    out = " ".join(proc.stdout.split())
    for line in (
        "batch 1 of 2: fleet-gpu-1; 0 of 3 done, 0 failed, 3 to go",
        "batch 2 of 2: fleet-gpu-2, fleet-gpu-3; 1 of 3 done, 0 failed, 2 to go",
        "done: fleet-gpu-1, fleet-gpu-2, fleet-gpu-3",
    ):
        assert line in out, f"{line!r} not in the output"
    assert watch.max_drained <= 2, f"{watch.max_drained} nodes drained at once with serial [1, 2]"
    assert watch.seen == set(NODES), "every node is drained for its upgrade"
    assert "JobState=COMPLETED" in node(CONTROLLER, f"scontrol show job {job}")
    record = json.loads(node("fleet-gpu-1", "cat /var/lib/gpufleet/stack-history.json"))[-1]
    assert record["status"] == "done"
    for name in NODES:
        assert_at(name, "570.172.08")
        assert slurm_node(name) == ("IDLE", ""), slurm_node(name)
        assert gres(name) == "gpu:a100:8"
        assert cdi_driver(name) == "570.172.08", "the CDI spec names the new driver"
        history = json.loads(node(name, "cat /var/lib/gpufleet/stack-history.json"))
        assert history[-1]["status"] == "done"
        assert history[-1]["from"]["driver"] == "570.133.20" and history[-1]["to"]["driver"] == "570.172.08"
    report = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    # The GPU nodes (gpufleet_hosts=gpu), each without drift; the Slurm controller is not a GPU host to report.
    assert sorted((r["host"], r["drift"]) for r in report["rows"]) == [(name, []) for name in NODES]
    # Each node went through the validation step of its gate, and the report says what it found.
    assert [r["validation"] for r in report["rows"]] == ["skipped (dcgm skipped)"] * len(NODES)


def test_a_failing_package_stops_the_rollout_and_leaves_that_node_drained(tmp_path):
    before = {name: node(name, "stat -c %Y /var/lib/gpufleet/upgrade-state.json") for name in NODES}
    proc = upgrade(tmp_path, "570.133.20", "-e", "gpufleet_upgrade_serial=1", host_drivers={"fleet-gpu-2": BROKEN})
    assert proc.returncode != 0
    # ansible-core 2.19 prints a failed task's message on stderr; the YAML callback folds it across lines.
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "fleet-gpu-2: upgrade failed/install at step install" in out and "rerun this playbook" in out, out[-6000:]
    assert "batch 2 of 3: fleet-gpu-2; 1 of 3 done, 0 failed, 2 to go" in out
    for line in ("done: fleet-gpu-1", "failed/install: fleet-gpu-2", "not reached: fleet-gpu-3"):
        assert line in out, f"{line!r} not in the output"
    # Batch 1 (gpu-1) went down to 570.133.20; batch 2 (gpu-2) failed; batch 3 never started.
    assert_at("fleet-gpu-1", "570.133.20")
    for name in ("fleet-gpu-3",):
        assert_at(name, "570.172.08")
        assert slurm_node(name) == ("IDLE", "")
        assert node(name, "stat -c %Y /var/lib/gpufleet/upgrade-state.json") == before[name], "untouched"
    state, reason = slurm_node("fleet-gpu-2")
    assert "DRAIN" in state and reason.startswith("gpufleet: upgrade failed at install"), (state, reason)
    recorded = state_file("fleet-gpu-2")
    assert (recorded["outcome"], recorded["from"]["driver"]) == ("failed/install", "570.172.08")
    assert packages("fleet-gpu-2")["libnvidia-ml1"][1] == "hold"  # nothing released


def test_rerun_after_the_fix_resumes_and_the_fleet_converges(tmp_path):
    proc = upgrade(tmp_path, "570.133.20", "-e", "gpufleet_upgrade_serial=1")
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert "fleet-gpu-1 is at the target stack" in proc.stdout  # resumed where it stopped
    for name in NODES:
        assert_at(name, "570.133.20")
        assert slurm_node(name) == ("IDLE", "")


def test_a_stray_gpu_process_blocks_its_node_and_a_long_job_skips_its_own(tmp_path):
    """A process on GPU 5 of fleet-gpu-3 that no Slurm job owns (started by hand, outside Slurm): after the drain
    the node is refused and stays drained with the process in its reason. Default (stop): the rollout ends there.
    Then, with continue and a drain timeout shorter than the job on fleet-gpu-2, one rollout over the three nodes:
    fleet-gpu-1 is upgraded, fleet-gpu-2 given back to Slurm under its job (skipped), fleet-gpu-3 blocked again."""
    stray = "CUDA_VISIBLE_DEVICES=5 setsid nohup gpufleet-gpu-job 900 stray.py >/dev/null 2>&1 &"
    stray += " echo $! > /root/stray.pid"
    node("fleet-gpu-3", f"{stray}; sleep 1")
    job = ""
    try:
        proc = upgrade(tmp_path, "570.172.08", "--limit", "fleet-gpu-3")
        assert proc.returncode != 0
        out = " ".join((proc.stdout + proc.stderr).split())
        assert "GPU processes that no Slurm job owns: pid" in out, out[-4000:]
        assert "(stray.py, 30000 MiB) on GPU 5" in out, out[-4000:]
        state, reason = slurm_node("fleet-gpu-3")
        assert "DRAIN" in state and reason.startswith("gpufleet: blocked: GPU processes that no Slurm job owns: pid")
        assert state_file("fleet-gpu-3")["outcome"] == "blocked/drain"
        assert_at("fleet-gpu-3", "570.133.20")  # nothing installed under the stray

        long_job = "sbatch --parsable -w fleet-gpu-2 --gres=gpu:2 -o /dev/null --wrap 'gpufleet-gpu-job 600'"
        job = node(CONTROLLER, long_job).strip()
        wait_running(job)
        first = state_file("fleet-gpu-3")["time"]
        time.sleep(1)  # the state's time has whole seconds
        proc = upgrade(tmp_path, "570.172.08",
                       "-e", "gpufleet_upgrade_serial=1", "-e", "gpufleet_upgrade_drain_timeout=3",
                       "-e", "gpufleet_upgrade_on_blocked=continue")  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-6000:]
        # The job outlived the drain timeout: the node is given back to Slurm, the job keeps running.
        recorded = state_file("fleet-gpu-2")
        assert recorded["outcome"] == "skipped/drain" and "drain timeout" in recorded["message"], recorded
        assert f"still runs job {job}" in recorded["message"]
        state, reason = slurm_node("fleet-gpu-2")
        assert "DRAIN" not in state and state.split("+")[0] in ("MIXED", "ALLOCATED"), (state, reason)
        assert_at("fleet-gpu-2", "570.133.20")  # not upgraded under its job
        # The stray blocks its node again; with continue the rollout went on to the end: every node had its turn.
        again = state_file("fleet-gpu-3")
        assert again["outcome"] == "blocked/drain" and again["time"] != first, "blocked again by this run"
        assert "DRAIN" in slurm_node("fleet-gpu-3")[0]
        assert_at("fleet-gpu-1", "570.172.08")
        assert slurm_node("fleet-gpu-1") == ("IDLE", "")
    finally:
        node("fleet-gpu-3", "kill $(cat /root/stray.pid) || true")
        if job:
            node(CONTROLLER, f"scancel {job}")
    # The stray gone, a rerun finishes the node it blocked.
    proc = upgrade(tmp_path, "570.172.08", "--limit", "fleet-gpu-3")
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert_at("fleet-gpu-3", "570.172.08")
    assert slurm_node("fleet-gpu-3") == ("IDLE", "")


def test_the_gate_and_the_kernel_guard_keep_their_nodes_drained(tmp_path):
    """One batch of two nodes, each failing a different check after its install (max_fail_percentage 100, so
    neither cuts the other short):
    - fleet-gpu-1 (back to 570.133.20): NVML enumerates 7 of the 8 GPUs on the PCI bus after the install. The gate
      keeps the node drained, failed/gpus; gres.conf is not shrunk to 7 (Slurm would drain the node for its own
      reason).
    - fleet-gpu-2 runs driver 570.133.20's module (the simulator's loaded module) when 570.172.08 is installed, so a
      reboot is needed; its next kernel came without headers, so DKMS built nothing for it. Without
      gpufleet_upgrade_reboot_ok the node waits as reboot-required; with it the reboot is refused, naming the kernel.
    Then both fixed ("rebooted": the loaded module follows the library again), one rerun finishes both."""
    kernel = "6.1.0-99-amd64"
    targets = {"fleet-gpu-1": "570.133.20"}  # fleet-gpu-2 (skipped under its job above) to 570.172.08
    both = ["--limit", "fleet-gpu-1,fleet-gpu-2", "-e", "gpufleet_upgrade_serial=2"]
    edit_profile("fleet-gpu-1", "p['gpus'][7]['nvml_visible'] = False")
    node("fleet-gpu-2", f"touch /boot/vmlinuz-{kernel} && mkdir -p /lib/modules/{kernel}/kernel")
    edit_profile("fleet-gpu-2", "p['host']['kernel_module_version'] = '570.133.20'")
    try:
        try:
            proc = upgrade(tmp_path, "570.172.08", *both, "-e", "gpufleet_upgrade_max_fail_percentage=100",
                           host_drivers=targets)  # fmt: skip
            assert proc.returncode != 0
            state, reason = slurm_node("fleet-gpu-1")
            assert "DRAIN" in state and "7 of 8 GPUs" in reason, (state, reason)
            assert state_file("fleet-gpu-1")["outcome"] == "failed/gpus"
            assert node("fleet-gpu-1", "grep -c File= /etc/slurm/gres.conf").strip() == "8"
            state, reason = slurm_node("fleet-gpu-2")
            assert "DRAIN" in state and reason.startswith("gpufleet: reboot required"), (state, reason)
            assert state_file("fleet-gpu-2")["outcome"] == "reboot-required/reboot"
        finally:
            edit_profile("fleet-gpu-1", "p['gpus'][7].pop('nvml_visible', None)")

        proc = upgrade(tmp_path, "570.172.08", "--limit", "fleet-gpu-2", "-e", "gpufleet_upgrade_reboot_ok=true")
        assert proc.returncode != 0
        out = " ".join((proc.stdout + proc.stderr).split())
        assert f"did not reboot: the kernel that boots next ({kernel}" in out, out[-4000:]
        state, reason = slurm_node("fleet-gpu-2")
        assert "DRAIN" in state and f"the kernel that boots next ({kernel}" in reason, (state, reason)
        assert state_file("fleet-gpu-2")["outcome"] == "failed/reboot"
    finally:
        edit_profile("fleet-gpu-2", "p['host'].pop('kernel_module_version', None)")
        node("fleet-gpu-2", f"rm -rf /boot/vmlinuz-{kernel} /lib/modules/{kernel}")
    proc = upgrade(tmp_path, "570.172.08", *both, host_drivers=targets)
    assert proc.returncode == 0, proc.stdout[-6000:]
    for name, version in (("fleet-gpu-1", "570.133.20"), ("fleet-gpu-2", "570.172.08")):
        assert_at(name, version)
        assert slurm_node(name) == ("IDLE", "")
        assert gres(name) == "gpu:a100:8"


def test_rollback_returns_a_node_to_its_recorded_stack(tmp_path):
    # fleet-gpu-3's last completed upgrade took it from 570.133.20 to 570.172.08 (once the stray was gone).
    proc = upgrade(tmp_path, "570.172.08", "--limit", "fleet-gpu-3", "-e", "gpufleet_upgrade_mode=rollback")
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert_at("fleet-gpu-3", "570.133.20")  # back to what it had before its last upgrade
    assert slurm_node("fleet-gpu-3") == ("IDLE", "")


def test_site_names_a_host_that_fails_verification(tmp_path):
    """site.yml's verification alone (--tags verify) on the fleet as the rollback left it: fleet-gpu-3 has 570.133.20
    where it should have 570.172.08, as fleet-gpu-2 does (fleet-gpu-1 should have, and has, 570.133.20). That host
    fails, named with the reason in the output and the report; the others pass; nothing is installed."""
    proc = upgrade(tmp_path, "570.172.08", "--tags", "verify", playbook="site.yml",
                   host_drivers={"fleet-gpu-1": "570.133.20"})  # fmt: skip
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())
    reason = "desired driver 570.172.08, host has 570.133.20"
    assert "fleet-gpu-3 failed verification:" in out and reason in out, out[-6000:]
    for name in NODES[:2]:
        assert f"{name} failed verification" not in out
    rows = json.loads((tmp_path / "report" / "fleet-report.json").read_text())["rows"]
    failed = {r["host"]: d for r in rows for d in r["drift"] if d.startswith("verification failed:")}
    assert list(failed) == ["fleet-gpu-3"] and reason in failed["fleet-gpu-3"], failed
    assert_at("fleet-gpu-3", "570.133.20")  # verification changed nothing


# Holds the package manager's locks as apt and unattended-upgrades do (fcntl write locks on dpkg's lock-frontend and
# lock; apt names the holder from them), until killed or, with "until-apt-waits", until an apt-get install with a
# lock timeout (the package engine's) has waited 3 s for them.
LOCK_HOLDER = """
import fcntl, os, subprocess, sys, time
locks = [os.open(p, os.O_RDWR | os.O_CREAT, 0o640) for p in ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock")]
for fd in locks:
    fcntl.lockf(fd, fcntl.LOCK_EX)
open("/run/gpufleet-lock-holder.pid", "w").write(str(os.getpid()))
waiting = ["pgrep", "-f", "apt-get install .*DPkg::Lock::Timeout="]
while len(sys.argv) < 2 or subprocess.run(waiting, capture_output=True).returncode != 0:
    time.sleep(0.5)
time.sleep(3)
"""


def hold_package_lock(name, until_apt_waits=False):
    """Start LOCK_HOLDER on the node in the background; its pid once it holds the locks."""
    node(name, f"cat > /run/gpufleet-lock-holder.py <<'EOF'\n{LOCK_HOLDER}\nEOF\nrm -f /run/gpufleet-lock-holder.pid")
    mode = ["until-apt-waits"] if until_apt_waits else []
    sh("docker", "exec", "-d", name, "python3", "/run/gpufleet-lock-holder.py", *mode)
    for _attempt in range(50):
        pid = node(name, "cat /run/gpufleet-lock-holder.pid 2>/dev/null", check=False).strip()
        if pid:
            return pid
        time.sleep(0.2)
    raise AssertionError(f"{name}: the lock holder did not start")


def test_a_held_package_lock_is_waited_for_then_refused_naming_its_holder(tmp_path):
    """fleet-gpu-3 (570.133.20) is to go to 570.172.08 while another process holds dpkg's locks, as unattended-upgrades
    would. apt waits gpufleet_apt_lock_timeout (2 s here), then the install is refused naming the holder; nothing was
    installed, the node stays drained with the reason and the outcome failed/install is recorded. (That a wait ends
    when the lock is let go is shown by the next test's rerun.)"""
    victim = "fleet-gpu-3"
    pid = hold_package_lock(victim)
    try:
        proc = upgrade(tmp_path, "570.172.08", "--limit", victim, "-e", "gpufleet_apt_lock_timeout=2")
    finally:
        node(victim, f"kill {pid}", check=False)
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())
    holder = f"/var/lib/dpkg/lock-frontend, held by process {pid} (python3) (waited 2 s, gpufleet_apt_lock_timeout)"
    assert "the package manager is busy, no package was installed or removed" in out and holder in out, out[-6000:]
    assert_at(victim, "570.133.20")
    state, reason = slurm_node(victim)
    assert "DRAIN" in state and reason.startswith("gpufleet: upgrade failed at install"), (state, reason)
    assert state_file(victim)["outcome"] == "failed/install"


def power_cut_when(name, marker, timeout=900):
    """docker kill NAME (the container, its sshd and every process at once, as a power cut) once MARKER exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sh("docker", "exec", name, "test", "-e", marker, check=False).returncode == 0:
            sh("docker", "kill", name)
            return
        time.sleep(0.3)


def test_a_node_that_vanishes_mid_install_is_named_unreachable_recorded_and_resumed(tmp_path):
    """fleet-gpu-3 (570.133.20 since the rollback) goes to 570.172.08 and loses its power while apt holds the install:
    an apt hook on the node (DPkg::Pre-Invoke) marks the moment and waits, and the test kills the container then. Over
    SSH the connection drops (Ansible's unreachable). The rollout (with fleet-gpu-2, already at the target) names the
    host unreachable at the install step, marks it failed in Slurm through fleet-gpu-2's scontrol (the node's own
    cannot run), records it in the fact cache, refreshes the report (the host
    critical, its last facts kept) and prints the summary and what next. Back on, a rerun resumes and finishes it."""
    victim, marker = "fleet-gpu-3", "/run/gpufleet-vanish"
    hook = "/etc/apt/apt.conf.d/00gpufleet-vanish"
    node(victim, f"""echo 'DPkg::Pre-Invoke {{ "touch {marker}; sleep 600"; }};' > {hook}""")
    cut = threading.Thread(target=power_cut_when, args=(victim, marker), daemon=True)
    cut.start()
    try:
        proc = upgrade(tmp_path, "570.172.08", "--limit", f"fleet-gpu-2,{victim}")
    finally:
        cut.join(timeout=10)
        sh("docker", "start", victim)
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())
    said = out[out.find(f"{victim}: upgrade unreachable/install") :][:3000]
    assert f"{victim}: upgrade unreachable/install at step install:" in out, out[-6000:]
    assert "the module returned no result, so what the host has is not known" in said, said
    assert "The node stopped answering and stays drained in slurm (the controller's fact cache records it)" in said, (
        said
    )
    assert "Next: bring the node back (power, network, sshd), then fix the cause and rerun" in said, said
    assert f"unreachable/install: {victim}" in out, "the summary names it"
    state, reason = slurm_node(victim)
    assert "DRAIN" in state and reason.startswith("gpufleet: upgrade lost the node at install"), (state, reason)
    assert slurm_node("fleet-gpu-2") == ("IDLE", ""), "the host that ran scontrol for it is untouched"
    row = next(r for r in json.loads((tmp_path / "report" / "fleet-report.json").read_text())["rows"]
               if r["host"] == victim)  # fmt: skip
    assert row["upgrade"]["outcome"] == "unreachable/install" and row["health"] == "critical", row
    assert "the host stopped answering during its upgrade, at step install" in row["findings"][0]["what"], row
    assert row["facts_at"], "its last known facts are kept, with their time"

    for _attempt in range(90):  # back on: systemd boots, sshd comes up on the node's port
        if node(victim, "systemctl is-system-running", check=False).strip() in ("running", "degraded"):
            break
        time.sleep(1)
    node(victim, f"rm -f {hook}")
    # As a real node's module loads at boot, the device nodes are back before slurmd checks its gres.conf Files.
    booted = node(victim, "ls /dev/nvidia7 && systemctl is-active slurmd", check=False).split()
    assert booted == ["/dev/nvidia7", "active"], (booted, slurmd_evidence(victim))
    # What it had before the power cut is still there (apt had not started dpkg), and the run's record says where
    # it stopped; the rerun resumes the host from it. Another process holds dpkg's locks when it comes to install
    # and lets go after apt has waited 3 s: the install waits for it (gpufleet_apt_lock_timeout, 120 s by default).
    holder = hold_package_lock(victim, until_apt_waits=True)
    proc = upgrade(tmp_path, "570.172.08", "--limit", victim)
    assert proc.returncode == 0, why_failed(proc, victim)
    assert node(victim, f"test -d /proc/{holder} || echo gone").strip() == "gone", "the holder let go"
    assert_at(victim, "570.172.08")
    assert slurm_node(victim) == ("IDLE", "")
    assert state_file(victim)["outcome"] == "done"
