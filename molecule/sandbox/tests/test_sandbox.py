"""What every later scenario relies on: a booted systemd node of the right Debian release, where apt works, reached
over SSH as a real fleet is."""

import os
import subprocess
from pathlib import Path

import yaml

CODENAMES = {"sandbox-debian12": "bookworm", "sandbox-debian13": "trixie"}


def test_systemd_is_pid_1_and_booted(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state in ("running", "degraded"), host.run("systemctl --failed --no-legend").stdout


def test_release_matches_the_image(host):
    codename = host.system_info.codename
    assert codename == CODENAMES[host.backend.get_hostname()]


def test_apt_installed_the_package(host):
    jq = host.package("jq")
    assert jq.is_installed
    assert host.run("jq -n '1+1'").stdout.strip() == "2"


def test_non_free_is_enabled_for_nvidia_packages(host):
    assert "non-free" in host.file("/etc/apt/sources.list").content_string


def test_drop_in_loaded_by_systemd(host):
    drop_ins = host.run("systemctl show -p DropInPaths systemd-journald.service").stdout
    assert "10-gpufleet-sandbox.conf" in drop_ins


def test_ansible_came_in_over_ssh_as_an_unprivileged_user_and_became_root_with_pipelining(host):
    """What a real fleet's sshd and sudo see: a key login as `fleet`, then sudo to root running python3 with the
    module on its stdin (pipelining), never a module file left under the user's home first."""
    # OpenSSH 9.8+ (trixie) logs the login from its per-session process, sshd-session.
    log = host.run("journalctl --no-pager -q -o cat _COMM=sshd + _COMM=sshd-session + _COMM=sudo").stdout
    assert "Accepted publickey for fleet from 127.0.0.1" in log, log[-2000:]
    became = [line for line in log.splitlines() if line.strip().startswith("fleet : ") and "USER=root" in line]
    assert became, log[-2000:]
    assert any(line.rstrip().endswith("/usr/bin/python3'") for line in became), became[-3:]
    assert not any("AnsiballZ_" in line for line in became), [c for c in became if "AnsiballZ_" in c][:3]
    assert host.check_output("id -un") == "root"


def test_host_keys_are_checked_and_a_changed_key_is_refused(tmp_path):
    """The inventory Molecule wrote checks host keys against the keys the node made at its start; an entry with
    another key for the same address is refused."""
    inventory = yaml.safe_load(Path(os.environ["MOLECULE_INVENTORY_FILE"]).read_text())
    hostvars = inventory["all"]["hosts"]["sandbox-debian12"]
    args = hostvars["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in args and "UserKnownHostsFile=" in args, args
    known = args.split("UserKnownHostsFile=", 1)[1].split()[0]
    port, key = str(hostvars["ansible_port"]), hostvars["ansible_private_key_file"]

    def ssh(known_hosts):
        argv = ["ssh", "-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes", "-o",
                "BatchMode=yes", "-i", key, "-p", port, "fleet@127.0.0.1", "true"]  # fmt: skip
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    assert ssh(known).returncode == 0
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()[:2]
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(other)}\n")
    refused = ssh(tmp_path / "known_hosts")
    assert refused.returncode == 255 and "REMOTE HOST IDENTIFICATION HAS CHANGED" in refused.stderr, refused.stderr
