"""Helpers for gpu_facts tests: fixture files, a fake sysfs/procfs tree, running main() in-process."""

import json
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_text(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def fixture_json(name):
    return json.loads(fixture_text(name))


@pytest.fixture
def fake_root(tmp_path):
    """A directory standing in for / with helpers to add /sys and /proc entries."""

    class Root:
        path = tmp_path

        def write(self, rel, text):
            target = tmp_path / rel.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            return target

        def pci(self, bus_id, device, pci_class, driver=None):
            base = f"sys/bus/pci/devices/{bus_id}"
            self.write(f"{base}/vendor", "0x10de\n")
            self.write(f"{base}/device", f"{device}\n")
            self.write(f"{base}/class", f"{pci_class}\n")
            if driver:
                drv = tmp_path / "sys/bus/pci/drivers" / driver
                drv.mkdir(parents=True, exist_ok=True)
                os.symlink(drv, tmp_path / base / "driver")

        def module(self, name):
            (tmp_path / "sys/module" / name).mkdir(parents=True, exist_ok=True)

    return Root()
