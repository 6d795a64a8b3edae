"""Run a playbook of the collection against an inventory whose only host cannot be reached.

The host points at 127.0.0.1 port 1 over ssh: contacting it shows UNREACHABLE. A check on the controller that stops
the run leaves no UNREACHABLE in the output; a run that passes the checks does try the host, so the same test can
fail both ways.
"""

import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "ansible-playbook"
HOST = {
    "ansible_host": "127.0.0.1",
    "ansible_port": 1,
    "ansible_connection": "ssh",
    "ansible_ssh_common_args": "-o ConnectTimeout=3",
}


def run(  # pylint: disable=too-many-arguments
    workdir, env, group_vars, *, playbook="site.yml", host_vars_text="", extra=(), hosts=None, host_vars=None
):
    """(rc, output) of ansible-playbook; group_vars is data, host_vars_text raw YAML (for what YAML itself does to a
    value, such as an unquoted 12.10) for gpu-x, which outranks group_vars; host_vars: {host: raw YAML} instead, one
    file per host; hosts: the inventory's hosts, by default those that have host_vars."""
    host_vars = host_vars or {"gpu-x": host_vars_text}
    hosts = hosts or tuple(host_vars)
    inv = Path(workdir) / "inventory"
    (inv / "group_vars").mkdir(parents=True, exist_ok=True)
    (inv / "host_vars").mkdir(exist_ok=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": dict.fromkeys(hosts, HOST)}}))
    (inv / "group_vars" / "all.yml").write_text(yaml.safe_dump(group_vars))
    for host, text in host_vars.items():
        (inv / "host_vars" / f"{host}.yml").write_text(text or "{}\n")
    binary = str(PLAYBOOK_BIN) if PLAYBOOK_BIN.exists() else shutil.which("ansible-playbook")
    # Each run's own report and upgrade locks: runs side by side name the same host.
    argv = [binary, "-i", str(inv), playbook, "-e", f"gpufleet_report_dir={Path(workdir) / 'report'}",
            "-e", f"gpufleet_upgrade_lock_dir={Path(workdir) / 'locks'}", *extra]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr
