"""The mirror's driver graph (sandbox/mirror/driver_graph.py) held against recorded real control fields, so the
mirror cannot drift back into a toy. recorded/*.control are Debian's archive's own Packages stanzas (read
2026-12-01); NVIDIA's Debian packaging is the same `Source: nvidia-graphics-drivers` packaging (README "Evidence")."""

import pytest

from .conftest import CUDA12, CUDA13, MIRROR, parse_index

RELATIONS = ("Pre-Depends", "Depends", "Recommends", "Provides", "Conflicts", "Replaces", "Breaks")
RECORDED = MIRROR / "recorded" / "debian13-nvidia-graphics-drivers-550.163.01-2.control"


def index(mirror, repo):
    return parse_index((mirror / "www" / repo / "Packages").read_text())


def by_name(stanzas, version):
    return {s["Package"]: s for s in stanzas if s["Version"] == version}


def recorded():
    text = "\n".join(line for line in RECORDED.read_text().splitlines() if not line.startswith("#"))
    return parse_index(text.strip())


def test_debian13_graph_equals_the_recorded_real_one(mirror):
    real = recorded()
    assert len(real) >= 45  # the whole binary set of one version, not 7 packages
    ours = by_name(index(mirror, CUDA13), "550.163.01-1")
    differ = []
    for stanza in real:
        mine = ours.get(stanza["Package"])
        assert mine is not None, f"{stanza['Package']} is missing from the mirror"
        assert mine["Source"] == "nvidia-graphics-drivers"
        for field in RELATIONS:
            want = stanza.get(field, "").replace("550.163.01-2", "550.163.01-1")
            # The one documented change: NVIDIA's nvidia-driver names its own open kernel module package.
            want = want.replace("nvidia-open-kernel-550.163.01", "nvidia-kernel-open-dkms (= 550.163.01-1)")
            if mine.get(field, "").replace("\n", " ") != want.replace("\n", " "):
                differ.append((stanza["Package"], field, want, mine.get(field)))
    assert not differ, differ


def test_debian12_build_depends_on_what_bookworm_has(mirror):
    ours = by_name(index(mirror, CUDA12), "570.133.20-1")
    assert "libssl3 (>= 3.0.0)" in ours["libnvidia-pkcs11-openssl3"]["Depends"]
    assert "libssl3t64" not in " ".join(s.get("Depends", "") for s in ours.values())


@pytest.mark.parametrize(
    ("version", "names", "absent"),
    [
        ("570.133.20-1", ["nvidia-fabricmanager-570", "libnvidia-nscq-570", "libnvsdm-570", "nvidia-imex-570"],
         ["nvidia-fabricmanager"]),
        ("580.105.08-1", ["nvidia-fabricmanager", "libnvidia-nscq", "libnvsdm", "nvidia-imex"],
         ["nvidia-fabricmanager-580"]),
        ("550.127.08-1", ["nvidia-fabricmanager-550", "libnvidia-nscq-550", "nvidia-imex-550"], ["libnvsdm-550"]),
    ],
)  # fmt: skip
def test_fabric_manager_follows_the_branch_naming(mirror, version, names, absent):
    ours = by_name(index(mirror, CUDA12), version)
    assert all(n in ours for n in names), sorted(n for n in ours if "fabric" in n or "nscq" in n)
    assert not any(n in ours for n in absent)
    if names[0].endswith(version.split(".")[0]):  # below 580: suffixed names stand in for the unsuffixed one
        assert ours[names[0]]["Provides"] == "nvidia-fabricmanager" == ours[names[0]]["Conflicts"]


def test_metapackages_depend_unversioned_and_parts_exactly(mirror):
    ours = by_name(index(mirror, CUDA12), "570.133.20-1")
    assert ours["cuda-drivers-570"]["Depends"].startswith("nvidia-driver (>= 570.133.20), nvidia-driver-cuda (>= ")
    assert "libcuda1 (= 570.133.20-1)" in ours["nvidia-driver-cuda"]["Depends"]
    assert "firmware-nvidia-gsp (= 570.133.20)" in ours["nvidia-kernel-open-dkms"]["Depends"]
    contrib = {"nvidia-support", "nvidia-kernel-common (>= 20151021)", "nvidia-installer-cleanup"}
    named = {d.strip() for s in ours.values() for f in ("Depends", "Pre-Depends") for d in s.get(f, "").split(",")}
    assert contrib <= named  # Debian contrib packages, never in NVIDIA's repository


def test_pinning_packages_and_cuda_keyring(mirror, tmp_path):
    import subprocess

    stanzas = index(mirror, CUDA12)
    names = {(s["Package"], s["Version"]) for s in stanzas}
    assert ("nvidia-driver-pinning-570", "570-1") in names and (
        "nvidia-driver-pinning-570.133.20",
        "570.133.20-1",
    ) in names
    assert ("cuda-keyring", "1.1-1") in names
    deb = mirror / "www" / CUDA12 / "nvidia-driver-pinning-570_570-1_amd64.deb"
    subprocess.run(["dpkg-deb", "-x", deb, tmp_path], check=True)
    pin = (tmp_path / "etc/apt/preferences.d/nvidia-driver-pin").read_text()
    assert "Package: cuda-drivers* src:nvidia-open:any\nPin: version 570.*\nPin-Priority: 1000" in pin
    deb = mirror / "www" / CUDA12 / "cuda-keyring_1.1-1_amd64.deb"
    subprocess.run(["dpkg-deb", "-x", deb, tmp_path], check=True)
    line = (tmp_path / "etc/apt/sources.list.d/cuda-debian12-x86_64.list").read_text()
    assert line.startswith("deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] http://127.0.0.1:8790/")
    key = (tmp_path / "usr/share/keyrings/cuda-archive-keyring.gpg").read_bytes()
    assert key == (mirror / "www" / "keys" / "gpufleet-mirror.gpg").read_bytes()
