"""Build the test mirror once per session (cached under .cache/mirror-unit: rebuilt only when an input changes)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MIRROR = ROOT / "sandbox" / "mirror"
CUDA12 = "compute/cuda/repos/debian12/x86_64"
CUDA13 = "compute/cuda/repos/debian13/x86_64"
CONTAINER = "libnvidia-container/stable/deb/amd64"
SITE = "site/debian12"


@pytest.fixture(scope="session")
def mirror():
    missing = [tool for tool in ("dpkg-deb", "gpg", "gpgv", "cc") if not shutil.which(tool)]
    if missing:
        pytest.skip(f"{', '.join(missing)} missing: would build the signed mirror and check its indexes and packages")
    out = ROOT / ".cache" / "mirror-unit"
    proc = subprocess.run([MIRROR / "build", "--out", out], capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def parse_index(text):
    """Debian control stanzas -> list of dicts (continuation lines joined)."""
    stanzas = []
    for block in text.strip().split("\n\n"):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith(" ") and key:
                fields[key] += "\n" + line[1:]
            else:
                key, _sep, value = line.partition(":")
                fields[key] = value.strip()
        stanzas.append(fields)
    return stanzas


def index(mirror, rel):
    return parse_index((mirror / "www" / rel / "Packages").read_text())


def extract(mirror, rel, name, version, dest):
    deb = mirror / "www" / rel / f"{name}_{version}_amd64.deb"
    subprocess.run(["dpkg-deb", "-x", deb, dest], check=True)
    return dest
