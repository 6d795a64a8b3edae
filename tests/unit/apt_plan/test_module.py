"""gpufleet.stack.nvidia_packages through its main(), with apt and dpkg answering from recorded output: what it runs,
and that check mode runs nothing that changes the host."""

import json
from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.gpufleet.stack.plugins.modules import nvidia_packages

FIXTURES = Path(__file__).parent / "fixtures"
SOURCES = ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules", "src:fabricmanager"]
ARGS = {
    "name": "nvidia-driver",
    "version": "570.172.08",
    "packages": ["nvidia-driver-cuda", "nvidia-kernel-open-dkms"],
    "pin": SOURCES,
    "members": SOURCES,
    "remove": ["nvidia-kernel-dkms"],
    "exclude_origins": ["Debian"],
}


def run(monkeypatch, capsys, tmp_path, args, dpkg_text, *, check=False, install=(0, "", "")):
    calls = []

    def fake(self, argv, **_kw):
        calls.append(argv)
        if argv[0] == "dpkg-query":
            return 0, dpkg_text, ""
        if argv[:2] == ["apt-cache", "madison"]:
            return 0, (FIXTURES / "madison-mirror-debian12.txt").read_text(), ""
        if argv[:2] == ["apt-get", "install"]:
            return install
        return 0, "", ""

    monkeypatch.setattr(nvidia_packages, "PIN_DIR", str(tmp_path))
    monkeypatch.setattr(basic.AnsibleModule, "run_command", fake)
    payload = {"ANSIBLE_MODULE_ARGS": {**args, "_ansible_check_mode": check, "_ansible_diff": True}}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps(payload)))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
    with pytest.raises(SystemExit):
        nvidia_packages.main()
    return json.loads(capsys.readouterr().out), calls


def installed_570133():
    lines = (FIXTURES / "dpkg-after-failed-dkms.txt").read_text().replace("570.86.15-1", "570.133.20-1")
    return lines.replace("\thF ", "\thi ")


def test_check_mode_predicts_the_upgrade_and_changes_nothing(monkeypatch, capsys, tmp_path):
    result, calls = run(monkeypatch, capsys, tmp_path, ARGS, installed_570133(), check=True)
    assert result["changed"] and result["version"] == "570.172.08-1"
    assert "nvidia-kernel-open-dkms=570.172.08-1" in result["installed"]
    assert "firmware-nvidia-gsp=570.172.08-1" in result["installed"]  # a part outside any name glob moves too
    assert all(argv[0] in ("dpkg-query", "apt-cache") for argv in calls), calls
    assert list(tmp_path.iterdir()) == []


def test_real_run_pins_installs_in_one_transaction(monkeypatch, capsys, tmp_path):
    result, calls = run(monkeypatch, capsys, tmp_path, ARGS, installed_570133())
    installs = [argv for argv in calls if argv[:2] == ["apt-get", "install"]]
    assert len(installs) == 1 and "libnvidia-ml1=570.172.08-1" in installs[0]
    pin = (tmp_path / "gpufleet-nvidia-driver.pref").read_text()
    assert "Pin: version 570.172.08-1" in pin and "Package: src:nvidia-graphics-drivers" in pin
    assert result["pin_file"].endswith("gpufleet-nvidia-driver.pref")


def test_a_held_lock_is_waited_for_then_refused_naming_its_holder(monkeypatch, capsys, tmp_path):
    """apt waits DPkg::Lock::Timeout seconds (what apt 2.6 printed on a Debian 12 node with the lock held), then the
    module fails naming the holder, without the failed-transaction path (no re-hold, nothing half-installed)."""
    said = (
        "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 812 "
        "(unattended-upgr)...\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another "
        "process using it?\n"
    )
    args = {**ARGS, "lock_timeout": 300}
    result, calls = run(monkeypatch, capsys, tmp_path, args, installed_570133(), install=(100, "", said))
    (install,) = [argv for argv in calls if argv[:2] == ["apt-get", "install"]]
    assert "DPkg::Lock::Timeout=300" in install
    assert (
        result["failed"]
        and result["lock_holder"] == "/var/lib/dpkg/lock-frontend, held by process 812 (unattended-upgr)"
    )
    assert "the package manager is busy" in result["msg"] and "waited 300 s" in result["msg"]
    assert not [argv for argv in calls if argv[0] == "apt-mark"]


def test_a_request_the_repository_lacks_fails_naming_it(monkeypatch, capsys, tmp_path):
    result, calls = run(
        monkeypatch, capsys, tmp_path, {**ARGS, "version": "570.999.99", "label": "gpufleet_stack.driver"}, ""
    )
    assert result["failed"]
    assert "gpufleet_stack.driver is '570.999.99'" in result["msg"] and "570.172.08-1" in result["msg"]
    assert not [argv for argv in calls if argv[0] in ("apt-get", "apt-mark")]


def test_a_bad_argument_fails_before_any_command(monkeypatch, capsys, tmp_path):
    result, calls = run(monkeypatch, capsys, tmp_path, {**ARGS, "version": "570\nTrusted: yes"}, "")
    assert result["failed"] and "version" in result["msg"] and calls == []
