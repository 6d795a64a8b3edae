"""Reading the test mirror (the `mirror` fixture, tests/unit/conftest.py, builds it): indexes and packages."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MIRROR = ROOT / "sandbox" / "mirror"
CUDA12 = "compute/cuda/repos/debian12/x86_64"
CUDA13 = "compute/cuda/repos/debian13/x86_64"
CONTAINER = "libnvidia-container/stable/deb/amd64"
SITE = "site/debian12"


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
