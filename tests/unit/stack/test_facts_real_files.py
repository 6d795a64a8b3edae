"""stack_facts against a host tree made of real files: NVIDIA's NCCL and cuDNN headers and libraries from their
PyPI wheels, the torch CPU wheel's metadata, a dpkg database read by the real dpkg-query, and nvcc/nv-fabricmanager
stand-ins that print what the real tools print.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.scan import Scanner
from ansible_collections.gpufleet.stack.plugins.modules import stack_facts

from .conftest import ROOT, place

LIB = "usr/lib/x86_64-linux-gnu"
SITE = "opt/venv/lib/python3.11/site-packages"
DPKG = {
    "nvidia-open": "570.133.20-1",
    "nvidia-fabricmanager-570": "570.124.06-1",
    "libnccl2": "2.19.3-1+cuda12.3",
    "libcudnn9-cuda-12": "9.6.0.74-1",
    "nvidia-container-toolkit": "1.17.5-1",
}


def run(argv):
    proc = subprocess.run(argv, check=False, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def script(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + textwrap.dedent(text))
    path.chmod(0o755)


@pytest.fixture
def host(tmp_path, nccl_wheel, cudnn_wheel, torch_cpu_wheel):
    root = tmp_path / "host"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    # The loaded module is older than the installed package: the un-rebooted upgrade case.
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Wed Mar  5 00:00:00 UTC 2025\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
    )
    dpkg = root / "var/lib/dpkg"
    (dpkg / "info").mkdir(parents=True)
    (dpkg / "updates").mkdir()
    (dpkg / "status").write_text(
        "".join(
            f"Package: {n}\nStatus: install ok installed\nVersion: {ver}\nArchitecture: amd64\nMaintainer: t\n"
            f"Description: t\n\n"
            for n, ver in DPKG.items()
        )
    )
    (root / f"{LIB}").mkdir(parents=True)
    (root / f"{LIB}/libcuda.so.570.133.20").write_bytes(b"")
    (root / f"{LIB}/libcuda.so.1").symlink_to("libcuda.so.570.133.20")
    # Toolkits: 12.8 with version.json (linked from /usr/local/cuda through alternatives, absolute links as on
    # Debian/Ubuntu), 12.2 with only nvcc.
    (root / "usr/local/cuda-12.8").mkdir(parents=True)
    (root / "usr/local/cuda-12.8/version.json").write_text(
        json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.8.1"}})
    )
    (root / "etc/alternatives").mkdir(parents=True)
    (root / "etc/alternatives/cuda").symlink_to("/usr/local/cuda-12.8")
    (root / "usr/local/cuda").symlink_to("/etc/alternatives/cuda")
    script(
        root / "usr/local/cuda-12.2/bin/nvcc",
        """\
        echo 'nvcc: NVIDIA (R) Cuda compiler driver'
        echo 'Cuda compilation tools, release 12.2, V12.2.140'
        echo 'Build cuda_12.2.r12.2/compiler.33053471_0'
        """,
    )
    script(root / "usr/bin/nv-fabricmanager", "echo 'Fabric Manager version is : 570.124.06'\n")
    # System cuDNN and NCCL laid out as NVIDIA's debs do (full-version file names), from the wheels' real files.
    place(
        cudnn_wheel / "nvidia/cudnn/include/cudnn_version_v9.h",
        root / "usr/include/x86_64-linux-gnu/cudnn_version_v9.h",
    )
    place(cudnn_wheel / "nvidia/cudnn/lib/libcudnn.so.9", root / f"{LIB}/libcudnn.so.9.6.0")
    (root / f"{LIB}/libcudnn.so.9").symlink_to("libcudnn.so.9.6.0")
    place(nccl_wheel / "nvidia/nccl/include/nccl.h", root / "usr/include/nccl.h")
    place(nccl_wheel / "nvidia/nccl/lib/libnccl.so.2", root / f"{LIB}/libnccl.so.2.19.3")
    (root / f"{LIB}/libnccl.so.2").symlink_to("libnccl.so.2.19.3")
    # A venv with torch's CPU wheel metadata and the NVIDIA wheels' dist-info.
    site = root / SITE
    with zipfile.ZipFile(torch_cpu_wheel) as z:
        for name in z.namelist():
            if name.endswith(".dist-info/METADATA") or name == "torch/version.py":
                z.extract(name, site)
    for wheel in (nccl_wheel, cudnn_wheel):
        for meta in wheel.glob("*.dist-info/METADATA"):
            place(meta, site / meta.parent.name / "METADATA")
    return root


def test_reads_every_component_with_its_source(host):
    # Its speed (goal: <= 1 s per host) is measured by benchmarks/facts.py, not asserted here: timings in tests flake.
    found = stack_facts.gather(Scanner(root=str(host), run=run), ["/opt/venv"])

    driver = found["driver"]
    assert driver["loaded_version"] == "570.124.06" and driver["flavor"] == "open"
    assert driver["package_version"] == "570.133.20" and driver["package_name"] == "nvidia-open"
    assert driver["library_version"] == "570.133.20"
    assert driver["mismatch"] is True
    assert driver["max_cuda"] is None  # a test root's libcuda is never loaded

    cuda = found["cuda"]
    assert {t["path"]: t["version"] for t in cuda["toolkits"]} == {
        "/usr/local/cuda-12.2": "12.2.140",
        "/usr/local/cuda-12.8": "12.8.1",
    }
    assert cuda["default"] == "/usr/local/cuda-12.8"
    assert "nvcc --version" in cuda["toolkits"][0]["source"]

    cudnn = found["cudnn"]
    assert cudnn["version"] == "9.6.0.74" and cudnn["consistent"] is True
    sources = {f["source"].split()[0]: f["version"] for f in cudnn["findings"]}
    assert sources["header"] == "9.6.0"  # cudnn_version_v9.h from the real wheel
    assert sources["library"] == "9.6.0"  # libcudnn.so.9.6.0
    assert sources["dpkg"] == "9.6.0.74"
    assert sources["wheel"] == "9.6.0.74"

    nccl = found["nccl"]
    assert [f["version"] for f in nccl["findings"]] == ["2.19.3", "2.19.3", "2.19.3", "2.19.3"]
    assert next(f for f in nccl["findings"] if f["scope"] == "package")["cuda"] == "12.3"

    fm = found["fabricmanager"]
    assert fm["version"] == "570.124.06" and fm["findings"][0]["source"] == "/usr/bin/nv-fabricmanager --version"
    assert found["container_toolkit"]["version"] == "1.17.5"

    (torch,) = found["frameworks"]["torch"]
    assert torch["version"] == "2.13.0+cpu" and torch["cuda"] is None and torch["cuda_source"] == "torch/version.py"
    assert torch["env"] == "/opt/venv" and torch["source"].startswith(f"/{SITE}/torch-2.13.0+cpu.dist-info")


def test_absent_components_are_reported_absent(tmp_path):
    found = stack_facts.gather(Scanner(root=str(tmp_path), run=run), ["/nowhere"])
    assert found["driver"]["present"] is False and found["driver"]["mismatch"] is False
    for key in ("cudnn", "nccl", "fabricmanager", "container_toolkit"):
        assert found[key] == {"present": False, "version": None, "source": None, "consistent": True, "findings": []}
    assert found["cuda"] == {"present": False, "toolkits": [], "default": None}
    assert found["frameworks"] == {}


def _library_version(lib, symbol, decode):
    """Call the library's own version function in a child process (a missing dependency aborts the process)."""
    code = textwrap.dedent(f"""\
        import ctypes, sys
        lib = ctypes.CDLL({str(lib)!r})
        if {symbol!r} == "cudnnGetVersion":
            lib.cudnnGetVersion.restype = ctypes.c_size_t
            print(lib.cudnnGetVersion())
        else:
            v = ctypes.c_int()
            assert lib.ncclGetVersion(ctypes.byref(v)) == 0
            print(v.value)
        """)
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return decode(int(proc.stdout))


def test_header_and_library_agree(host, nccl_wheel, cudnn_wheel):
    from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v

    found = stack_facts.gather(Scanner(root=str(host), run=run), [])
    header = {
        k: next(f["version"] for f in found[k]["findings"] if f["source"].startswith("header"))
        for k in ("cudnn", "nccl")
    }
    assert (
        _library_version(cudnn_wheel / "nvidia/cudnn/lib/libcudnn.so.9", "cudnnGetVersion", v.cudnn_from_code)
        == header["cudnn"]
    )
    assert (
        _library_version(nccl_wheel / "nvidia/nccl/lib/libnccl.so.2", "ncclGetVersion", v.nccl_from_code)
        == header["nccl"]
    )


def run_module(root):
    """stack_facts' main() in its own process, as Ansible runs it, on the host tree ROOT with /opt/venv."""
    args = {"ANSIBLE_MODULE_ARGS": {"root": str(root), "python_envs": ["/opt/venv"], "_ansible_check_mode": True}}
    proc = subprocess.run(
        [sys.executable, "-m", "ansible_collections.gpufleet.stack.plugins.modules.stack_facts"],
        input=json.dumps(args),
        check=False,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "collections")),
        timeout=60,
    )
    return json.loads(proc.stdout)


def test_module_main_returns_facts_under_one_key(host):
    result = run_module(host)
    assert result["changed"] is False
    assert list(result["ansible_facts"]) == ["gpufleet_installed"]
    assert result["ansible_facts"]["gpufleet_installed"]["cudnn"]["version"] == "9.6.0.74"


def test_debian_toolkit_and_container_toolkit(tmp_path):
    """Debian's nvidia-cuda-toolkit lives in /usr/lib/nvidia-cuda-toolkit with nvcc in /usr/bin (no version.json)."""
    (tmp_path / "usr/lib/nvidia-cuda-toolkit/bin").mkdir(parents=True)
    script(
        tmp_path / "usr/bin/nvcc",
        """\
        echo 'nvcc: NVIDIA (R) Cuda compiler driver'
        echo 'Cuda compilation tools, release 11.8, V11.8.89'
        """,
    )
    script(
        tmp_path / "usr/bin/nvidia-ctk",
        """\
        echo 'NVIDIA Container Toolkit CLI version 1.17.5'
        echo 'commit: f785e908a7f72149f8912617058644fd84e38cde'
        """,
    )
    found = stack_facts.gather(Scanner(root=str(tmp_path), run=run), [])
    assert found["cuda"]["toolkits"] == [
        {
            "path": "/usr/lib/nvidia-cuda-toolkit",
            "version": "11.8.89",
            "source": "/usr/lib/nvidia-cuda-toolkit nvcc --version",
        }
    ]
    assert found["cuda"]["default"] is None  # no /usr/local/cuda link
    assert found["container_toolkit"]["version"] == "1.17.5"
    assert found["container_toolkit"]["source"] == "/usr/bin/nvidia-ctk --version"


def test_jax_cuda_plugin_gives_its_cuda_major(tmp_path):
    site = tmp_path / "site"
    for dist, version in (("jax", "0.6.2"), ("jax_cuda12_plugin", "0.6.2"), ("jaxlib", "0.6.2")):
        (site / f"{dist}-{version}.dist-info").mkdir(parents=True)
        name = dist.replace("_", "-")
        (site / f"{dist}-{version}.dist-info/METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        )
    found = stack_facts.gather(Scanner(root=str(tmp_path), run=run), ["/site"])
    (jax,) = found["frameworks"]["jax"]
    assert jax["version"] == "0.6.2" and jax["cuda"] == "12"
    assert jax["cuda_source"] == "wheel /site/jax_cuda12_plugin-0.6.2.dist-info/METADATA"


def test_jax_cuda_from_the_runtime_wheel_installed_with_its_plugin(tmp_path):
    """jax[cuda13] installs CUDA 13's unsuffixed nvidia-cuda-runtime next to nvidia-cudnn-cu13 and nvidia-nccl-cu13
    (pip install jax[cuda13]==0.12.0, 2026-12-03): the runtime makes the CUDA exact, cuDNN and NCCL are what jax
    loads. A CUDA 12 wheel in the same environment (another package's) is not jax's."""
    site = tmp_path / "site"
    dists = (
        ("jax", "0.12.0"),
        ("jax_cuda13_plugin", "0.12.0"),
        ("nvidia_cuda_runtime", "13.5.37"),
        ("nvidia_cudnn_cu13", "9.28.1.4"),
        ("nvidia_nccl_cu13", "2.32.3"),
        ("nvidia_nccl_cu12", "2.26.2"),
    )
    for dist, version in dists:
        (site / f"{dist}-{version}.dist-info").mkdir(parents=True)
        (site / f"{dist}-{version}.dist-info/METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: {version}\n"
        )
    found = stack_facts.gather(Scanner(root=str(tmp_path), run=run), ["/site"])
    (jax,) = found["frameworks"]["jax"]
    assert jax["cuda"] == "13.5"
    assert jax["cuda_source"].startswith("wheel nvidia-cuda-runtime /site/nvidia_cuda_runtime-13.5.37.dist-info")
    assert jax["bundles"] == {"cudnn": "9.28.1.4", "nccl": "2.32.3"}


def test_interpreter_env_is_asked_for_its_site_packages(tmp_path):
    """A python_envs entry that is an interpreter is asked (argv, no shell) where its site-packages are."""
    site = tmp_path / "site"
    (site / "horovod-0.28.1.dist-info").mkdir(parents=True)
    (site / "horovod-0.28.1.dist-info/METADATA").write_text("Metadata-Version: 2.1\nName: horovod\nVersion: 0.28.1\n")
    interp = tmp_path / "python"
    script(interp, f"echo '[\"{site}\"]'\n")
    found = stack_facts.gather(Scanner(root="/", run=run, probe_libraries=False), [str(interp)])
    assert found["frameworks"]["horovod"][0]["version"] == "0.28.1"
    assert shutil.which("dpkg-query")  # the host path ran the real package query too
    assert found["package_manager"] == "dpkg"


def test_module_main_contains_what_a_wheel_says_of_itself(tmp_path):
    """A wheel's METADATA is the node's to write: a Name with terminal escapes, markup and 60 000 more characters
    reaches the facts as one bounded line with the escapes replaced; the version is still read."""
    meta = tmp_path / SITE / "nvidia_nccl_cu12-2.26.2.dist-info" / "METADATA"
    meta.parent.mkdir(parents=True)
    name = "nvidia-nccl-cu12\x1b]0;owned\x07<img src=x onerror=alert(1)>" + "x" * 60000
    meta.write_bytes(f"Metadata-Version: 2.1\nName: {name}\nVersion: 2.26.2\n".encode() + b"Summary: \xff\xfe\n")
    nccl = run_module(tmp_path)["ansible_facts"]["gpufleet_installed"]["nccl"]
    wheel = next(f for f in nccl["findings"] if f.get("scope") == "wheel")
    assert wheel["version"] == nccl["version"] == "2.26.2"
    source = wheel["source"]
    assert source.startswith("wheel nvidia-nccl-cu12\ufffd]0;owned\ufffd<img src=x onerror=alert(1)>xxx"), source[:80]
    assert len(source) < 4200 and source.endswith("more characters cut]"), source[-80:]
