"""gpufleet.stack.driver_state (Secure Boot from mokutil or the EFI variable, the loaded module) and
gpufleet.stack.systemd_units (what each unit needs), on recorded answers; driver_state once on localhost."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import source
from ansible_collections.gpufleet.stack.plugins.modules import driver_state as ds
from ansible_collections.gpufleet.stack.plugins.modules import systemd_units as su


@pytest.mark.parametrize(
    ("answer", "efivar", "enabled", "source"),
    [
        ("SecureBoot enabled", None, True, "mokutil"),
        ("SecureBoot disabled", None, False, "mokutil"),
        # mokutil on a host booted without EFI: a non-zero exit that means "no Secure Boot"
        ("EFI variables are not supported on this system", None, False, "mokutil"),
        (None, bytes([6, 0, 0, 0, 1]), True, "efivar"),  # 4 bytes of attributes, then 1 = on
        (None, bytes([6, 0, 0, 0, 0]), False, "efivar"),
        (None, None, False, "none"),
    ],
)
def test_secure_boot(answer, efivar, enabled, source):
    found = ds.secure_boot(answer, efivar)
    assert (found["enabled"], found["source"]) == (enabled, source)


def test_the_running_version_is_read_only_where_the_kernel_is_ours(tmp_path, monkeypatch):
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text("570.133.20\n")
    none = source.NO_LIBRARY
    monkeypatch.setenv("GPUFLEET_NVML_SIM_PROFILE", str(tmp_path / "absent.json"))
    assert ds.running_version(none, str(tmp_path), str(tmp_path), in_container=False) == "570.133.20"
    assert ds.running_version(none, str(tmp_path), str(tmp_path), in_container=True) == ""
    assert ds.running_version(none, str(tmp_path / "absent"), str(tmp_path / "absent"), in_container=False) == ""
    # A sandbox node: the NVML simulator's profile stands in for the kernel module (host.kernel_module_version), and
    # only it: the container's sysfs is the container host's.
    sim = {**none, "found": True, "stand_in": {"version": "570.133.21", "simulated": True}}
    assert ds.running_version(sim, str(tmp_path), str(tmp_path), True) == "570.133.21"
    assert ds.running_version(sim, str(tmp_path), str(tmp_path), False) == "570.133.21"
    loaded = {**sim, "stand_in": {"loaded": True, "simulated": True}}
    assert ds.running_version(loaded, str(tmp_path), str(tmp_path), True) == ""


def test_the_next_boot_kernel_is_read_for_the_driver(run_module, tmp_path):
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot/vmlinuz-6.1.0-30-amd64").write_text("")
    args = {"driver_version": "570.172.08", "boot_root": str(tmp_path), "secure_boot_var": str(tmp_path / "none")}
    rc, result = run_module("gpufleet.stack.driver_state", args, "--check")
    assert rc == 0, result
    assert result["kernels"]["next_boot"] == "6.1.0-30-amd64"
    assert result["next_boot_problem"].startswith("the kernel that boots next (6.1.0-30-amd64")
    rc, result = run_module("gpufleet.stack.driver_state", {"secure_boot_var": str(tmp_path / "none")}, "--check")
    assert (rc, result["next_boot_problem"], "kernels" in result) == (0, "", False)


def test_headers_are_asked_for_only_where_a_repository_has_them(run_module, tmp_path):
    """package_query (apt-cache show on Debian) is asked about each target kernel's headers: the next boot's
    6.1.0-99 has none anywhere, so only DKMS and the metapackage are installed, and the kernel is named."""
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot/vmlinuz-6.1.0-99-amd64").write_text("")
    query = tmp_path / "query"
    query.write_text('#!/bin/sh\ncase "$1" in linux-headers-6.1.0-99-amd64) exit 100;; esac\n')
    query.chmod(0o755)
    args = {
        "boot_root": str(tmp_path),
        "secure_boot_var": str(tmp_path / "none"),
        "in_container": True,
        "dkms": True,
        "package_query": [str(query)],
    }
    rc, result = run_module("gpufleet.stack.driver_state", args, "--check")
    assert rc == 0, result
    assert result["kernel_packages"] == ["dkms", "linux-headers-amd64"]
    assert result["headers_unavailable"] == ["6.1.0-99-amd64"]
    query.write_text("#!/bin/sh\nexit 0\n")
    rc, result = run_module("gpufleet.stack.driver_state", args, "--check")
    assert result["kernel_packages"] == ["dkms", "linux-headers-6.1.0-99-amd64", "linux-headers-amd64"], result
    assert result["headers_unavailable"] == []


def test_one_run_reads_every_part(run_module, tmp_path):
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text("570.133.20\n")
    (tmp_path / "nvidiactl").write_text("")
    (tmp_path / "efivar").write_bytes(bytes([6, 0, 0, 0, 1]))
    args = {
        "sysfs_root": str(tmp_path),
        "procfs_root": str(tmp_path),
        "device": str(tmp_path / "nvidiactl"),
        "initramfs_tool": str(tmp_path / "update-initramfs"),
        "secure_boot_var": str(tmp_path / "efivar"),
    }
    rc, result = run_module("gpufleet.stack.driver_state", args, "--check")
    assert rc == 0, result
    assert (result["running_version"], result["device"], result["initramfs_tool"]) == ("570.133.20", True, False)
    assert result["changed"] is False
    # This machine has no mokutil: the EFI variable decides.
    assert result["secure_boot"] == {"enabled": True, "source": "efivar", "detail": "SecureBoot byte 1"}


@pytest.mark.parametrize(
    ("enabled", "active", "started", "want"),
    [
        ("enabled", "active", True, []),
        ("enabled", "inactive", False, []),  # no device: enabled is enough
        ("disabled", "inactive", True, ["enable", "start"]),
        ("static", "failed", True, ["start"]),
        ("enabled-runtime", "active", True, []),
    ],
)
def test_what_a_unit_needs(enabled, active, started, want):
    assert su.actions(enabled, active, started) == want


# Answers as systemd does, from a state file the test writes; enable/start/daemon-reload are logged.
FAKE_SYSTEMCTL = """#!/bin/sh
log="$(dirname "$0")/calls"
echo "$*" >> "$log"
verb=$1; unit=$2
case "$verb" in
  is-enabled|is-active)
    line=$(grep "^$unit " "$(dirname "$0")/states") || { [ "$verb" = is-active ] && echo inactive; exit 3; }
    set -- $line
    [ "$verb" = is-enabled ] && echo "$2" || echo "$3" ;;
esac
"""


@pytest.fixture
def systemctl(tmp_path, ansible_env):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(FAKE_SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    ansible_env["PATH"] = f"{bin_dir}:{ansible_env['PATH']}"
    return bin_dir


def test_units_are_fixed_only_where_needed(run_module, systemctl):
    (systemctl / "states").write_text("a.service enabled active\nb.service disabled inactive\n")
    args = {"units": ["a.service", "b.service"], "started": True, "daemon_reload": True}
    rc, result = run_module("gpufleet.stack.systemd_units", args, "--check")
    assert (rc, result["changed"]) == (0, True)
    assert [u["actions"] for u in result["units"]] == [[], ["enable", "start"]]
    assert all(c.startswith("is-") for c in (systemctl / "calls").read_text().splitlines())  # check mode: read only
    rc, result = run_module("gpufleet.stack.systemd_units", args)
    calls = (systemctl / "calls").read_text().splitlines()
    assert rc == 0 and calls[-2:] == ["enable b.service", "start b.service"] and "daemon-reload" in calls


def test_a_unit_systemd_does_not_know(run_module, systemctl):
    (systemctl / "states").write_text("")
    rc, result = run_module("gpufleet.stack.systemd_units", {"units": ["nvidia-x.service"]}, "--check")
    assert (rc, result["units"][0]["actions"]) == (0, ["enable"])  # its package may be only predicted
    rc, result = run_module("gpufleet.stack.systemd_units", {"units": ["nvidia-x.service"]})
    assert rc != 0 and "systemd has no unit nvidia-x.service" in result["msg"]
