"""Host-side parsing and the decisions that keep nvmlInit away from hosts without a loaded driver."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import host

from .conftest import fixture_text


def test_parse_nvrm_version_open_module():
    assert host.parse_nvrm_version(fixture_text("proc-version-open-570.txt")) == ("570.133.20", "open")


def test_parse_nvrm_version_proprietary_module():
    assert host.parse_nvrm_version(fixture_text("proc-version-proprietary-535.txt")) == ("535.183.01", "proprietary")


def test_parse_nvrm_version_absent():
    assert host.parse_nvrm_version(None) == (None, None)


@pytest.mark.parametrize(
    ("path", "version"),
    [
        ("/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535.261.03", "535.261.03"),
        ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.133.20", "570.133.20"),
        ("/opt/sim/libnvidia-ml.so.1", None),
        (None, None),
    ],
)
def test_library_version_from_path(path, version):
    assert host.library_version_from_path(path) == version


@pytest.mark.parametrize(
    ("kmod", "lib", "standalone", "expected"),
    [
        (False, False, None, (False, "not_installed")),
        (False, True, None, (False, "not_loaded")),  # the /dev/nvidiactl case: never init
        (True, False, None, (False, "error")),
        (True, True, None, (True, None)),
        (False, True, "the simulator", (True, None)),  # a library that touches no device is safe without a module
        (False, False, "the simulator", (False, "not_installed")),  # but only where it was found
    ],
)
def test_plan_probe(kmod, lib, standalone, expected):
    call_init, state, reason = host.plan_probe(kmod, lib, standalone)
    assert (call_init, state) == expected
    assert reason == standalone if standalone and lib else reason


@pytest.mark.parametrize(
    ("code", "state"),
    [(18, "mismatch"), (9, "not_loaded"), (12, "not_installed"), (4, "error"), (999, "error")],
)
def test_classify_init_error(code, state):
    got, reason = host.classify_init_error(code, "570.133.20", "570.86.15")
    assert got == state
    if state == "mismatch":
        assert "570.133.20" in reason
        assert "570.86.15" in reason


def test_versions_mismatch():
    assert host.versions_mismatch("570.133.20", "570.86.15")
    assert not host.versions_mismatch("570.133.20", "570.133.20")
    assert not host.versions_mismatch(None, "570.86.15")


@pytest.mark.parametrize(
    ("value", "text"), [(12080, "12.8"), (12020, "12.2"), (11040, "11.4"), (None, None), (0, None)]
)
def test_cuda_version_string(value, text):
    assert host.cuda_version_string(value) == text


def test_read_kernel_module_absent(fake_root):
    assert host.read_kernel_module(str(fake_root.path), str(fake_root.path)) == {
        "loaded": False,
        "version": None,
        "flavor": None,
        "nouveau_loaded": False,
    }


def test_read_kernel_module_open_flavor(fake_root):
    fake_root.module("nvidia")
    fake_root.module("nouveau")
    fake_root.write("proc/driver/nvidia/version", fixture_text("proc-version-open-570.txt"))
    got = host.read_kernel_module(str(fake_root.path), str(fake_root.path))
    assert got == {"loaded": True, "version": "570.133.20", "flavor": "open", "nouveau_loaded": True}


def test_read_kernel_module_sysfs_only(fake_root):
    fake_root.module("nvidia")
    fake_root.write("sys/module/nvidia/version", "550.144.03\n")
    got = host.read_kernel_module(str(fake_root.path), str(fake_root.path))
    assert got["loaded"] is True
    assert got["version"] == "550.144.03"


def test_read_pci_devices_finds_gpus_and_nvswitch_without_driver(fake_root):
    fake_root.pci("0000:07:00.0", "0x20b0", "0x030200", driver="nvidia")
    fake_root.pci("0000:0f:00.0", "0x20b0", "0x030200")
    fake_root.pci("0000:c1:00.0", "0x1af1", "0x068000")
    fake_root.write("sys/bus/pci/devices/0000:00:1f.0/vendor", "0x8086\n")
    devices = host.read_pci_devices(str(fake_root.path))
    assert [d["bus_id"] for d in devices] == ["0000:07:00.0", "0000:0f:00.0", "0000:c1:00.0"]
    assert [d["is_gpu"] for d in devices] == [True, True, False]
    assert [d["is_nvswitch"] for d in devices] == [False, False, True]
    assert devices[0]["driver"] == "nvidia"
    assert devices[1]["driver"] is None


def test_read_pci_devices_without_sysfs(fake_root):
    assert host.read_pci_devices(str(fake_root.path)) == []


def test_kernel_log_xid_lines():
    lines = host.kernel_log_xid_lines(fixture_text("dmesg-xid.txt"))
    assert len(lines) == 4
    assert all("NVRM: Xid" in line for line in lines)
