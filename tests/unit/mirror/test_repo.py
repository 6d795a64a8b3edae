"""The mirror's repositories as apt sees them: signed indexes, hashes that match, NVIDIA's names and versions."""

import gzip
import hashlib
import json
import re
import subprocess

import pytest

from .conftest import CONTAINER, CUDA12, CUDA13, MIRROR, index

REPOS = [CUDA12, CUDA13, CONTAINER]


def gpgv(keyring, *files):
    return subprocess.run(["gpgv", "--keyring", keyring, *files], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("rel", REPOS)
def test_release_signatures_verify_with_the_exported_key(mirror, rel, tmp_path):
    repo, keyring = mirror / "www" / rel, mirror / "www" / "keys" / "gpufleet-mirror.gpg"
    fingerprint = (mirror / "www" / "keys" / "fingerprint").read_text().strip()
    good = gpgv(keyring, repo / "InRelease")
    assert good.returncode == 0, good.stderr
    assert fingerprint in good.stderr  # signed by the key whose fingerprint roles pin
    assert gpgv(keyring, repo / "Release.gpg", repo / "Release").returncode == 0
    # The check can fail: a Release changed after signing does not verify.
    tampered = tmp_path / "Release"
    tampered.write_text((repo / "Release").read_text().replace("amd64", "i386"))
    assert gpgv(keyring, repo / "Release.gpg", tampered).returncode != 0
    # InRelease carries the same text as Release.
    assert (repo / "Release").read_text().strip() in (repo / "InRelease").read_text()
    assert (repo / f"{fingerprint[-8:].lower()}.pub").read_text().startswith("-----BEGIN PGP PUBLIC KEY BLOCK")


@pytest.mark.parametrize("rel", REPOS)
def test_release_hashes_and_package_files_match(mirror, rel):
    repo = mirror / "www" / rel
    release = (repo / "Release").read_text()
    for name in ("Packages", "Packages.gz"):
        data = (repo / name).read_bytes()
        assert f" {hashlib.sha256(data).hexdigest()} {len(data):>16} {name}" in release
    assert gzip.decompress((repo / "Packages.gz").read_bytes()).decode() == (repo / "Packages").read_text()
    for stanza in index(mirror, rel):
        deb = repo / stanza["Filename"]
        assert deb.read_bytes() and hashlib.sha256(deb.read_bytes()).hexdigest() == stanza["SHA256"]
        assert int(stanza["Size"]) == deb.stat().st_size
        assert "test fixture" in stanza["Description"]


def versions(stanzas, name):
    return sorted(
        (s["Version"] for s in stanzas if s["Package"] == name), key=lambda v: [int(x) for x in re.findall(r"\d+", v)]
    )


def depends(stanzas, name, version):
    return next(s.get("Depends", "") for s in stanzas if s["Package"] == name and s["Version"] == version)


@pytest.mark.parametrize("rel", [CUDA12, CUDA13])
def test_cuda_repo_driver_branches_and_flavours(mirror, rel):
    stanzas = index(mirror, rel)
    good550 = ["550.54.15-1", "550.127.08-1", "550.163.01-1"]
    good570 = ["570.124.06-1", "570.133.20-1", "570.172.08-1"]
    assert versions(stanzas, "nvidia-open-550") == good550
    assert versions(stanzas, "cuda-drivers-570") == ["570.86.15-1", *good570]  # 570.86.15: the broken one
    assert versions(stanzas, "nvidia-open-580") == ["580.95.05-1", "580.105.08-1", "580.178.04-1"]
    assert versions(stanzas, "nvidia-open-595") == ["595.91.07-1"]
    for branch, vers in (("550", good550), ("570", good570)):
        assert versions(stanzas, f"nvidia-fabricmanager-{branch}") == versions(stanzas, f"nvidia-open-{branch}")
        for ver in vers:
            up = ver.removesuffix("-1")
            # NVIDIA's metapackages: unversioned names with >= (no upper bound), so only a pin holds a branch.
            assert depends(stanzas, "nvidia-open", ver) == f"nvidia-open-{branch} (>= {up})"
            assert f"nvidia-kernel-open-dkms (>= {up})" in depends(stanzas, f"nvidia-open-{branch}", ver)
            assert f"nvidia-kernel-dkms (>= {up})" in depends(stanzas, f"cuda-drivers-{branch}", ver)
            assert f"libnvidia-ml1 (= {ver})" in depends(stanzas, "nvidia-driver-cuda", ver)
    open_dkms = next(s for s in stanzas if s["Package"] == "nvidia-kernel-open-dkms")
    assert open_dkms["Conflicts"] == "nvidia-kernel-dkms"
    assert "nvidia-kernel-dkms-any (= " in open_dkms["Provides"]
    assert not [s for s in stanzas if s["Package"].startswith(("nvidia-container", "libnvidia-container"))]


def test_cuda_toolkits_cudnn_and_nccl(mirror):
    stanzas = index(mirror, CUDA12)
    assert versions(stanzas, "cuda-toolkit-12-4") == ["12.4.1-1"]
    assert depends(stanzas, "cuda-toolkit-12-8", "12.8.1-1") == (
        "cuda-compiler-12-8 (>= 12.8.1), cuda-libraries-12-8 (>= 12.8.1)"
    )
    assert depends(stanzas, "cuda-compiler-12-8", "12.8.1-1") == "cuda-nvcc-12-8 (>= 12.8.93)"
    assert versions(stanzas, "cuda-nvcc-12-4") == ["12.4.131-1"]
    assert versions(stanzas, "libcudnn8") == ["8.9.7.29-1+cuda12.2"]
    assert versions(stanzas, "libcudnn9-cuda-12") == ["9.1.1.17-1", "9.8.0.87-1"]
    assert depends(stanzas, "libcudnn9-dev-cuda-12", "9.8.0.87-1") == "libcudnn9-cuda-12 (= 9.8.0.87-1)"
    assert versions(stanzas, "libnccl2") == ["2.21.5-1+cuda12.4", "2.26.2-1+cuda12.8"]
    assert depends(stanzas, "libnccl-dev", "2.26.2-1+cuda12.8") == "libnccl2 (= 2.26.2-1+cuda12.8)"
    assert not [s for s in stanzas if s["Package"] == "cuda"]  # the metapackage that drags a driver in


def test_container_toolkit_repo(mirror):
    stanzas = index(mirror, CONTAINER)
    assert {s["Package"] for s in stanzas} == {
        "nvidia-container-toolkit",
        "nvidia-container-toolkit-base",
        "libnvidia-container-tools",
        "libnvidia-container1",
    }
    assert versions(stanzas, "nvidia-container-toolkit") == ["1.17.4-1", "1.17.8-1", "1.19.1-1"]
    assert depends(stanzas, "nvidia-container-toolkit", "1.17.8-1").startswith(
        "nvidia-container-toolkit-base (= 1.17.8-1), libnvidia-container-tools (>= 1.17.8-1)"
    )
    # From 1.18.0 NVIDIA's control file pins the tools to the same version.
    assert depends(stanzas, "nvidia-container-toolkit", "1.19.1-1").startswith(
        "nvidia-container-toolkit-base (= 1.19.1-1), libnvidia-container-tools (= 1.19.1-1)"
    )


def test_toolkit_base_ships_the_cdi_refresh_units_from_1_18(mirror, tmp_path):
    """1.18.0 added nvidia-cdi-refresh.{service,path} to the base package (in /etc/systemd/system) and a postinst that
    enables and starts them where systemd runs: the service writes the CDI spec to /var/run/cdi, not /etc/cdi."""
    for version, has_units in (("1.17.8-1", False), ("1.19.1-1", True)):
        deb = mirror / "www" / CONTAINER / f"nvidia-container-toolkit-base_{version}_amd64.deb"
        root, ctl = tmp_path / version / "root", tmp_path / version / "ctl"
        root.mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)
        service = root / "etc/systemd/system/nvidia-cdi-refresh.service"
        units = [service, root / "etc/systemd/system/nvidia-cdi-refresh.path"]
        assert [u.exists() for u in units] == [has_units, has_units]
        assert (ctl / "postinst").exists() == has_units
    text = service.read_text()
    assert "Environment=NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml" in text
    assert "modules.dep" in text and "ExecStart=/usr/bin/nvidia-ctk cdi generate" in text
    postinst = (ctl / "postinst").read_text()
    assert "for unit in nvidia-cdi-refresh.path nvidia-cdi-refresh.service" in postinst
    assert 'systemctl enable --now "$unit"' in postinst and "running|degraded)" in postinst


def test_manifest_and_rebuild_only_on_change(mirror):
    manifest = json.loads((mirror / "manifest.json").read_text())
    assert manifest["fingerprint"] == (mirror / "www" / "keys" / "fingerprint").read_text().strip()
    assert manifest["broken_driver"] == "570.86.15"
    assert {p["package"] for p in manifest["repos"][CUDA13]} >= {"nvidia-open-570", "cuda-toolkit-12-8"}
    before = (mirror / "www" / CUDA12 / "Release").stat().st_mtime_ns
    again = subprocess.run([MIRROR / "build", "--out", mirror], capture_output=True, text=True, check=True)
    assert "up to date" in again.stdout
    assert again.stdout.strip().splitlines()[-1] == manifest["fingerprint"]
    assert (mirror / "www" / CUDA12 / "Release").stat().st_mtime_ns == before
    assert not (mirror / "www" / "gnupg").exists()  # the secret key is outside the served tree
