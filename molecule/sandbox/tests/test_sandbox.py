"""What every later scenario relies on: a booted systemd node of the right Debian release, where apt works."""

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
