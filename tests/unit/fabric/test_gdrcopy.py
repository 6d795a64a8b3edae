"""GDRCopy's gdrdrv through gpufleet.stack.gdrcopy_driver on a node's /sys and /proc: the driver loaded or not, a
stand-in modprobe that records its calls, /dev/gdrdrv made from the major gdrdrv registered (as its init script
does, which itself exits 0 whatever failed)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def gdrcopy(root, modprobe_rc=0, installed=True):
    """gpufleet.stack.gdrcopy_driver with a stand-in modprobe; the device node under root/dev."""
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "modprobe").write_text(
        f'#!/bin/sh\necho "$@" >> {root}/modprobe.calls\n'
        f"[ {modprobe_rc} = 0 ] || echo \"modprobe: ERROR: could not insert 'gdrdrv': Unknown symbol in module\" >&2\n"
        f"exit {modprobe_rc}\n"
    )
    (bin_dir / "modprobe").chmod(0o755)
    if installed:
        (root / "src" / "gdrdrv-2.5.1").mkdir(parents=True, exist_ok=True)
    args = {"device": str(root / "dev" / "gdrdrv"), "src_root": str(root / "src"), "sysfs_root": str(root),
            "procfs_root": str(root)}  # fmt: skip
    (root / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run(
        [sys.executable, "-m", "ansible_collections.gpufleet.stack.plugins.modules.gdrcopy_driver", "args.json"],
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "collections"), PATH=f"{bin_dir}:/usr/bin:/bin"),
        capture_output=True,
        text=True,
        check=False,
    )
    calls = (root / "modprobe.calls").read_text().splitlines() if (root / "modprobe.calls").exists() else []
    return json.loads(proc.stdout), calls


def test_without_the_driver_it_waits_for_the_next_boot(tmp_path):
    result, calls = gdrcopy(tmp_path)
    assert (result["changed"], result["loaded"], result["device"], calls) == (False, False, False, [])
    assert result["reason"].startswith("the NVIDIA driver is not loaded: gdrdrv and /dev/gdrdrv come with it")


def test_not_installed_is_said(tmp_path):
    result, _calls = gdrcopy(tmp_path, installed=False)
    assert result["failed"] and result["msg"].endswith("is gdrdrv-dkms installed?")


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root (CAP_MKNOD)")
def test_with_the_driver_gdrdrv_is_loaded_and_its_node_made(tmp_path):
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


def test_a_gdrdrv_that_will_not_load_fails_with_modprobes_message(tmp_path):
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)  # Debian's build: /proc/driver/nvidia/version says loaded
    (tmp_path / "proc/driver/nvidia/version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03\n")
    result, calls = gdrcopy(tmp_path, modprobe_rc=1)
    assert result["failed"] and "Unknown symbol in module" in result["msg"] and calls == ["gdrdrv"]
    assert "dkms status -m gdrdrv" in result["msg"]
