"""Helpers for gpu_facts tests: fixture files, a fake sysfs/procfs tree, running main() in-process."""

import fcntl
import glob
import json
import os
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache"
DEBS = CACHE / "debs"


def _apt_download(package):
    """apt-get download PACKAGE from bookworm (main, contrib, non-free) with lists kept under .cache/."""
    sources = CACHE / "apt-nonfree.list"
    sources.parent.mkdir(parents=True, exist_ok=True)
    sources.write_text("deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\n")
    for sub in ("apt-lists/partial", "apt-cache/archives/partial"):
        (CACHE / sub).mkdir(parents=True, exist_ok=True)
    opts = [
        f"-oDir::Etc::SourceList={sources}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={CACHE / 'apt-lists'}",
        f"-oDir::Cache={CACHE / 'apt-cache'}",
    ]
    DEBS.mkdir(parents=True, exist_ok=True)
    for argv in (["apt-get", *opts, "update"], ["apt-get", *opts, "download", package]):
        try:
            proc = subprocess.run(argv, cwd=DEBS, capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if proc.returncode:
            return f"apt-get {argv[-1]} failed: {proc.stderr.strip()[-300:]}"
    return None


def debian_package(package, dest):
    """Extract Debian's PACKAGE (cached .deb, downloaded once) into dest: (deb path, None) or (None, why not).
    Callers in other processes (xdist workers, a second checkout's run) wait for each other's download rather than
    meet apt's lock on the shared lists and give up."""
    DEBS.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "apt-download.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        debs = sorted(glob.glob(str(DEBS / f"{package}_*.deb")))
        error = None
        if not debs:
            error = _apt_download(package)
            debs = sorted(glob.glob(str(DEBS / f"{package}_*.deb")))
    if not debs:
        return None, error or "no .deb after apt-get download"
    subprocess.run(["dpkg", "-x", debs[-1], str(dest)], check=True)
    return Path(debs[-1]), None


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
