"""GDRCopy's gdrdrv through gpufleet.stack.gdrcopy_driver on a node's /sys and /proc: the driver loaded or not, a
stand-in modprobe that records its calls, /dev/gdrdrv made from the major gdrdrv registered (as its init script
does, which itself exits 0 whatever failed)."""

import os

import pytest


@pytest.fixture
def gdrcopy(exec_module, fake_modprobe):
    """call(root, modprobe_rc=0, installed=True) -> (result, modprobe's calls): gpufleet.stack.gdrcopy_driver with a
    stand-in modprobe, the device node under root/dev."""

    def call(root, modprobe_rc=0, installed=True):
        calls = fake_modprobe(root, modprobe_rc, "modprobe: ERROR: could not insert 'gdrdrv': Unknown symbol in module")
        if installed:
            (root / "src" / "gdrdrv-2.5.1").mkdir(parents=True, exist_ok=True)
        args = {"device": str(root / "dev" / "gdrdrv"), "src_root": str(root / "src"), "sysfs_root": str(root),
                "procfs_root": str(root)}  # fmt: skip
        return exec_module("gdrcopy_driver", args, root, root / "bin"), calls()

    return call


def test_without_the_driver_it_waits_for_the_next_boot(tmp_path, gdrcopy):
    result, calls = gdrcopy(tmp_path)
    assert (result["changed"], result["loaded"], result["device"], calls) == (False, False, False, [])
    assert result["reason"].startswith("the NVIDIA driver is not loaded: gdrdrv and /dev/gdrdrv come with it")


def test_not_installed_is_said(tmp_path, gdrcopy):
    result, _calls = gdrcopy(tmp_path, installed=False)
    assert result["failed"] and result["msg"].endswith("is gdrdrv-dkms installed?")


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root (CAP_MKNOD)")
def test_with_the_driver_gdrdrv_is_loaded_and_its_node_made(tmp_path, gdrcopy):
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text("Character devices:\n195 nvidia\n490 gdrdrv\n\nBlock devices:\n8 sd\n")
    result, calls = gdrcopy(tmp_path)
    if result.get("failed") and "Operation not permitted" in result.get("msg", ""):
        pytest.skip("this container may not make device nodes")
    assert (result["changed"], result["loaded"], result["device"], calls) == (True, True, True, ["gdrdrv"])
    assert result["reason"] == f"gdrdrv loaded now; {tmp_path}/dev/gdrdrv made"
    made = os.stat(tmp_path / "dev" / "gdrdrv")
    assert (os.major(made.st_rdev), made.st_mode & 0o777) == (490, 0o666)
    (tmp_path / "sys/module/gdrdrv").mkdir()
    again, calls = gdrcopy(tmp_path)
    assert (again["changed"], again["reason"], calls) == (False, "gdrdrv loaded and /dev/gdrdrv present", ["gdrdrv"])


def test_a_gdrdrv_that_will_not_load_fails_with_modprobes_message(tmp_path, gdrcopy):
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)  # Debian's build: /proc/driver/nvidia/version says loaded
    (tmp_path / "proc/driver/nvidia/version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03\n")
    result, calls = gdrcopy(tmp_path, modprobe_rc=1)
    assert result["failed"] and "Unknown symbol in module" in result["msg"] and calls == ["gdrdrv"]
    assert "dkms status -m gdrdrv" in result["msg"]
