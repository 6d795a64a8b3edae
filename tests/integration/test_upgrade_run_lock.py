"""Two runs of playbooks/upgrade.yml against the same hosts (issue 30): the second refuses on the controller, before
any host is contacted, naming the run that holds them; a killed run's record holds nothing, and a run gives its hosts
back in its last play. The run that holds them is this test's own process (alive, on this controller)."""

import json
import os
import socket

from _unreachable import run

BASE = {"gpufleet_stack": {"driver": "570.133.20", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"}}


def record(locks, pid, hosts):
    locks.mkdir(exist_ok=True)
    here = socket.gethostname()
    path = locks / f"run-{here}-{pid}.json"
    path.write_text(json.dumps({"user": "ana", "controller": here, "pid": pid, "started": 0, "hosts": hosts,
                                "playbook": "playbooks/upgrade.yml"}))  # fmt: skip
    return path


def test_a_second_run_refuses_naming_the_first_and_a_killed_run_holds_nothing(tmp_path, ansible_env):
    locks = tmp_path / "locks"
    live = record(locks, os.getpid(), ["gpu-x", "gpu-y"])
    rc, out = run(tmp_path, ansible_env, BASE, playbook="playbooks/upgrade.yml")
    assert rc != 0 and "UNREACHABLE" not in out, out
    assert "another upgrade is running on these hosts: ana on " in out, out
    assert f"(pid {os.getpid()}, playbooks/upgrade.yml, running " in out and "holds gpu-x" in out, out

    live.unlink()
    dead = record(locks, 2**22 + 1, ["gpu-x"])  # above pid_max's default: no such process
    rc, out = run(tmp_path, ansible_env, BASE, playbook="playbooks/upgrade.yml")
    assert "UNREACHABLE" in out and "another upgrade is running" not in out, out
    # The killed run's record was cleared; this run held the hosts (its record removed, so changed) and gave them
    # back at the end.
    assert not dead.exists() and list(locks.glob("run-*.json")) == [], sorted(locks.iterdir())
    released = out.split("TASK [Give this run's hosts back]", 1)[1].split("TASK [", 1)[0]
    assert "changed: [localhost]" in released, out
