"""playbooks/upgrade.yml refuses a rollout that a host has no room for, before any batch (issue 30): the check runs
on every host in the play that records where each host is, and stops the run with each host's figures. The host is
this machine (local connection); its /dev/shm is asked for more than it has."""

import os
import sys

from _unreachable import run

BASE = {"gpufleet_stack": {"driver": "570.133.20", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"}}


def test_a_host_without_room_stops_the_rollout_before_any_batch(tmp_path, ansible_env):
    st = os.statvfs("/dev/shm")
    asked = st.f_bavail * st.f_frsize // (1024 * 1024) + 1024
    host_vars = (
        f"ansible_connection: local\nansible_python_interpreter: {sys.executable}\n"
        f"gpufleet_upgrade_free_mib: {{/dev/shm: {asked}}}\n"
    )
    rc, out = run(tmp_path, ansible_env, BASE, playbook="playbooks/upgrade.yml", host_vars_text=host_vars)
    assert rc != 0, out
    assert "not enough free space for the install, nothing was changed" in out, out
    assert f"MiB free for /dev/shm (the install, {asked} MiB): {asked} MiB needed" in out, out
    # Stopped in the play that records where every host is: no batch started, nothing drained or installed.
    assert "TASK [Upgrade the host when it is not at the target]" not in out and "Drain" not in out, out
