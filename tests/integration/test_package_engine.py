"""The package engine against the mirror (sandbox/mirror: the driver graph as NVIDIA's has it) with real apt on a
debian12 sandbox node set up NVIDIA's way: cuda-keyring's source and key, and NVIDIA's pinning package for
another branch.

- the old glob pin fails exactly as users report it (parts outside the glob stay at the newer branch's candidate);
- apt_source adopts cuda-keyring's definition (a second one with another Signed-By breaks every apt command);
- nvidia_packages installs the compute-only 570 set with Fabric Manager, pins it by source, holds every part,
  removes the other branch's pinning package, and Debian's contrib helpers come from Debian;
- check mode predicts and moves nothing; an upgrade to 580 moves the whole set and renames Fabric Manager; a
  rollback moves it back; a converged run changes nothing.

Needs the local Docker engine and Debian's archive (the node resolves dkms and the contrib helpers from it).
"""

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.driver_set import driver_set

BIN = Path(sys.executable).parent
NODE, FLEET = "enginetest-1", "enginetest"
REPO = "compute/cuda/repos/debian12/x86_64"
OLD_PIN = "Package: nvidia-* libnvidia-ml1 libcuda1 cuda-drivers*\nPin: version 570.133.20-1\nPin-Priority: 1000\n"

pytestmark = pytest.mark.slow


def sh(*argv, check=True, timeout=900):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, timeout=timeout)
    assert not check or proc.returncode == 0, f"{argv}: rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def node(script, check=True):
    return sh("docker", "exec", NODE, "bash", "-ec", script, check=check)


def run(module, args, env, inventory, *flags):
    argv = [
        BIN / "ansible",
        NODE,
        "-i",
        inventory,
        "-m",
        f"gpufleet.stack.{module}",
        *(["-a", json.dumps(args)] if args else []),
        "-o",
        *flags,
    ]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=900)
    out = proc.stdout
    result = json.JSONDecoder().raw_decode(out[out.index("{") :])[0] if "{" in out else {}
    return proc.returncode, result, out + proc.stderr


def gpu_driver(env, inventory):
    rc, result, out = run("gpu_facts", {}, env, inventory)
    assert rc == 0 and "ansible_facts" in result, out
    return result["ansible_facts"]["gpufleet_gpu"]["driver_version"]


def dpkg():
    """{package: (version, status, source)} of the driver set on the node."""
    out = node("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev} ${source:Package}\\n'").stdout
    rows = [line.split() for line in out.splitlines()]
    return {r[0]: (r[1], r[2], r[3] if len(r) > 3 else r[0]) for r in rows if r[2][1:2] not in ("n", "c")}


def engine_args(version):
    spec = driver_set(version, flavor="open", scope="compute", fabricmanager=True)
    return {
        "name": "nvidia-driver",
        "label": "nvidia_driver_version",
        "version": version,
        "packages": spec["packages"],
        "reference": spec["reference"],
        "pin": spec["pin"],
        "members": spec["members"],
        "remove": spec["remove"],
        "exclude_origins": ["Debian"],
    }


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if shutil.which("docker") is None or sh("docker", "info", check=False).returncode != 0:
        pytest.skip("no Docker engine: would install NVIDIA's driver set through the engine on a node")
    tmp = tmp_path_factory.mktemp("engine")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = ROOT / ".cache" / "mirror-engine"
    base = f"http://127.0.0.1:{port}"
    sh(ROOT / "sandbox/mirror/build", "--out", out, "--url", base)
    sh(ROOT / "sandbox/mirror/serve", "start", "--dir", out, "--port", port)
    profile = json.loads((ROOT / "sandbox/nvml-sim/profiles/a100-sxm4-40gb-x8-nvswitch.json").read_text())
    profile["host"].pop("kernel_module_version", None)  # the installed library decides what NVML reports
    (tmp / "profile.json").write_text(json.dumps(profile))
    fleet = [ROOT / "sandbox/fleet", "up", "--name", NODE, "--fleet", FLEET, "--inventory", "none"]
    try:
        sh(*fleet, "--image", "debian12", "--profile", tmp / "profile.json")
        node("rm -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.* && ldconfig")
        # NVIDIA's way: cuda-keyring (its key and source line), then the 580 branch's pinning package.
        sh("docker", "cp", out / "www" / REPO / "cuda-keyring_1.1-1_amd64.deb", f"{NODE}:/root/cuda-keyring.deb")
        node("dpkg -i /root/cuda-keyring.deb && apt-get update -q && apt-get install -y -q nvidia-driver-pinning-580")
        inventory = tmp / "hosts.yml"
        inventory.write_text(
            f"all:\n  hosts:\n    {NODE}:\n      ansible_connection: community.docker.docker\n"
            "      ansible_python_interpreter: /usr/bin/python3\n"
        )
        fingerprint = (out / "www/keys/fingerprint").read_text().strip()
        yield {"inventory": inventory, "base": base, "fingerprint": fingerprint}
    finally:
        sh(ROOT / "sandbox/fleet", "down", "--fleet", FLEET, "--inventory", "none", check=False)
        sh(ROOT / "sandbox/mirror/serve", "stop", "--dir", out, check=False)


def test_engine_on_a_node_set_up_nvidias_way(setup, ansible_env, nvml_bindings):
    inv, env = setup["inventory"], dict(ansible_env, ANSIBLE_DEPRECATION_WARNINGS="0")
    nvml_bindings(inv)
    uri = f"{setup['base']}/{REPO}/"
    ours = f"Types: deb\nURIs: {uri}\nSuites: /\nSigned-By: /usr/share/keyrings/gpufleet-nvidia-cuda.gpg\n"
    sh(
        "docker",
        "cp",
        ROOT / ".cache/mirror-engine/www/keys/gpufleet-mirror.gpg",
        f"{NODE}:/usr/share/keyrings/gpufleet-nvidia-cuda.gpg",
    )

    # Two definitions of one URI with different Signed-By: every apt command fails (the failure users report).
    node(f"printf '{ours}' > /etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources")
    broken = node("apt-get update -q", check=False)
    assert broken.returncode != 0 and "Conflicting values set for option Signed-By" in broken.stdout + broken.stderr
    source = {"uri": uri, "dest": "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources", "content": ours,
              "fingerprint": setup["fingerprint"]}  # fmt: skip
    rc, result, out = run("apt_source", source, env, inv)
    assert rc == 0 and result["adopted"] == ["/etc/apt/sources.list.d/cuda-debian12-x86_64.list"], out
    node("apt-get update -q")  # one definition again
    assert run("apt_source", source, env, inv)[1]["changed"] is False

    # The old pin (a name glob) against NVIDIA's real graph: parts outside the glob keep the newer candidate.
    node(f"printf '{OLD_PIN}' > /etc/apt/preferences.d/old-glob.pref")
    old = node("apt-get install -s --no-install-recommends nvidia-driver-cuda=570.133.20-1"
               " nvidia-kernel-open-dkms=570.133.20-1", check=False)  # fmt: skip
    node("rm /etc/apt/preferences.d/old-glob.pref")
    assert old.returncode != 0 and "Unable to correct problems" in old.stdout + old.stderr

    # The engine: compute-only 570 with Fabric Manager, pinned by source, every part held.
    rc, result, out = run("nvidia_packages", engine_args("570.133.20"), env, inv)
    assert rc == 0, out
    have = dpkg()
    ours_parts = {
        n: v for n, v in have.items() if v[2] in ("nvidia-graphics-drivers", "nvidia-open-gpu-kernel-modules")
    }
    assert len(ours_parts) >= 12 and {v[0] for v in ours_parts.values()} == {"570.133.20-1"}
    assert all(v[1] == "hi" for v in ours_parts.values()), ours_parts
    assert have["firmware-nvidia-gsp"][0] == "570.133.20-1"  # outside every name glob, inside the source pin
    assert have["nvidia-fabricmanager-570"][:2] == ("570.133.20-1", "hi") and "libnvidia-nscq-570" in have
    assert "nvidia-driver-pinning-580" not in have and "xserver-xorg-video-nvidia" not in have  # compute only
    assert {"nvidia-support", "nvidia-kernel-common", "nvidia-installer-cleanup"} <= set(have)  # from Debian contrib
    policy = node("apt-cache policy nvidia-support").stdout
    assert "deb.debian.org" in policy
    assert gpu_driver(env, inv) == "570.133.20"

    # Converged: nothing to do. Check mode of an upgrade: predicted, nothing moved.
    assert run("nvidia_packages", engine_args("570.133.20"), env, inv)[1]["changed"] is False
    rc, result, out = run("nvidia_packages", engine_args("580.105.08"), env, inv, "--check")
    assert rc == 0 and result["changed"] and "nvidia-fabricmanager=580.105.08-1" in result["installed"], out
    assert dpkg()["libnvidia-ml1"][0] == "570.133.20-1"

    # Upgrade: the whole set moves, Fabric Manager takes its 580 name; rollback moves everything back.
    for version, fm, gone in (("580.105.08", "nvidia-fabricmanager", "nvidia-fabricmanager-570"),
                              ("570.133.20", "nvidia-fabricmanager-570", "nvidia-fabricmanager")):  # fmt: skip
        rc, result, out = run("nvidia_packages", engine_args(version), env, inv)
        assert rc == 0, out
        have = dpkg()
        parts = {
            n: v for n, v in have.items() if v[2] in ("nvidia-graphics-drivers", "fabricmanager", "libnvidia-nscq")
        }
        assert {v[0] for v in parts.values()} == {f"{version}-1"}, parts
        assert all(v[1] == "hi" for v in parts.values()) and fm in have and gone not in have
        assert gpu_driver(env, inv) == version
