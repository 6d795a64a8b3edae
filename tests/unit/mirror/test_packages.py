"""What the synthetic packages hold: files at NVIDIA's paths that the collection's own parsers read, an NVML
that reports its package's version, and the deliberately broken driver."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import parse as sp

from .conftest import CUDA12, ROOT, SITE, extract

DEVNODES = "/usr/lib/nvidia/gpufleet-sandbox-devnodes"  # the module package's device-node maker and its unit
DEVNODES_UNIT = "gpufleet-sandbox-nvidia-devnodes.service"

LIB = "usr/lib/x86_64-linux-gnu"


@pytest.mark.parametrize(("version", "cuda"), [("550.163.01", 12040), ("570.172.08", 12080)])
def test_libnvidia_ml1_reports_its_own_driver_version(mirror, tmp_path, version, cuda):
    root = extract(mirror, CUDA12, "libnvidia-ml1", f"{version}-1", tmp_path)
    assert os.readlink(root / LIB / "libnvidia-ml.so.1") == f"libnvidia-ml.so.{version}"
    profile = json.loads((ROOT / "sandbox/nvml-sim/profiles/h100-sxm5-80gb-x8.json").read_text())
    profile["host"].pop("kernel_module_version", None)  # no loaded module to disagree with the library
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    probe = (
        "import pynvml as n; n.nvmlInit(); print(n.nvmlSystemGetDriverVersion(), n.nvmlSystemGetCudaDriverVersion())"
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(root / LIB), GPUFLEET_NVML_SIM_PROFILE=str(tmp_path / "profile.json"))
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [version, str(cuda)]


def test_cuda_toolkit_files_parse_like_real_ones(mirror, tmp_path):
    extract(mirror, CUDA12, "cuda-nvcc-12-8", "12.8.93-1", tmp_path)
    extract(mirror, CUDA12, "cuda-toolkit-12-8", "12.8.1-1", tmp_path)
    extract(mirror, CUDA12, "cuda-cudart-12-8", "12.8.90-1", tmp_path)
    home = tmp_path / "usr/local/cuda-12.8"
    nvcc = subprocess.run([home / "bin/nvcc", "--version"], capture_output=True, text=True, check=True).stdout
    assert nvcc.splitlines()[0] == "nvcc: NVIDIA (R) Cuda compiler driver"
    assert "Cuda compilation tools, release 12.8, V12.8.93" in nvcc
    assert sp.nvcc_version(nvcc) in ("12.8", "12.8.93")
    assert subprocess.run([home / "bin/nvcc", "x.cu"], capture_output=True, check=False).returncode != 0
    assert sp.cuda_version_json((home / "version.json").read_text()) == "12.8.1"
    assert os.readlink(home / "lib64") == "targets/x86_64-linux/lib"
    assert (home / "lib64" / "libcudart.so.12").exists()


@pytest.mark.parametrize(
    "case",
    [
        ("libcudnn8-dev", "8.9.7.29-1+cuda12.2", "usr/include/x86_64-linux-gnu/cudnn_version_v8.h", "8.9.7"),
        ("libcudnn9-dev-cuda-12", "9.8.0.87-1", "usr/include/x86_64-linux-gnu/cudnn_version_v9.h", "9.8.0"),
        ("libnccl-dev", "2.26.2-1+cuda12.8", "usr/include/nccl.h", "2.26.2"),
    ],
)
def test_headers_parse_like_real_ones(mirror, tmp_path, case):
    name, version, header, expect = case
    text = (extract(mirror, CUDA12, name, version, tmp_path) / header).read_text()
    parser = sp.nccl_header if "nccl" in name else sp.cudnn_header
    assert parser(text) == expect


def test_version_calls_answer_without_a_gpu(mirror, tmp_path):
    """libcuda/libcudnn/libnccl are real shared objects whose version calls answer, as stack_facts probes them."""
    extract(mirror, CUDA12, "libcudnn9-cuda-12", "9.8.0.87-1", tmp_path)
    extract(mirror, CUDA12, "libnccl2", "2.21.5-1+cuda12.4", tmp_path)
    extract(mirror, CUDA12, "libcuda1", "550.54.15-1", tmp_path)
    probe = (
        "import ctypes, sys; d = sys.argv[1]; v = ctypes.c_int()\n"
        "ctypes.CDLL(d + '/libcuda.so.1').cuDriverGetVersion(ctypes.byref(v)); a = v.value\n"
        "ctypes.CDLL(d + '/libnccl.so.2').ncclGetVersion(ctypes.byref(v)); b = v.value\n"
        "c = ctypes.CDLL(d + '/libcudnn.so.9'); c.cudnnGetVersion.restype = ctypes.c_size_t\n"
        "print(a, b, c.cudnnGetVersion())"
    )
    out = subprocess.run([sys.executable, "-c", probe, tmp_path / LIB], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["12040", "22105", "90800"]


def test_broken_driver_postinst_fails_and_good_one_succeeds(mirror, tmp_path):
    """The postinst is dh_dkms's (Debian's common.postinst builds, for real, where a kernel has headers: the
    kernel_layer scenario); where no kernel has headers, the broken version still fails as a DKMS build would."""
    if list(Path("/lib/modules").glob("*/build/include")):
        pytest.skip("this host has kernel headers: the broken postinst would hand the failure to DKMS' real build")
    for version, expect_rc in (("570.86.15-1", 10), ("570.133.20-1", 0)):
        ctl = tmp_path / version
        deb = mirror / "www" / CUDA12 / f"nvidia-kernel-open-dkms_{version}_amd64.deb"
        subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)
        script = (ctl / "postinst").read_text()
        assert f"/usr/lib/dkms/common.postinst nvidia {version[:-2]} /usr/share/nvidia-dkms" in script
        assert f"dkms remove -m nvidia -v {version[:-2]} --all" in (ctl / "prerm").read_text()
        # common.postinst is Debian's dkms, not on this host: stood in by `true` (DKMS builds nothing without headers),
        # as is the device-node maker (it needs a simulated GPU and CAP_MKNOD: the next test reads what it is).
        script = script.replace("/usr/lib/dkms/common.postinst", "true").replace(DEVNODES, "true")
        (ctl / "postinst").write_text(script)
        proc = subprocess.run(["sh", ctl / "postinst", "configure"], capture_output=True, text=True, check=False)
        assert proc.returncode == expect_rc, proc.stderr
        assert ("Bad return status for module build" in proc.stderr) == bool(expect_rc)


def test_the_device_nodes_come_back_at_every_boot_before_slurmd(mirror, tmp_path):
    """A real node loads nvidia.ko at boot and udev makes /dev/nvidia* again; a container starts on a fresh /dev, so the
    module package ships a oneshot unit, enabled (a wants link in the package), ordered before slurmd: without it a
    node back from a power cut has no /dev/nvidiaN and slurmd exits waiting for its gres.conf File=."""
    deb = mirror / "www" / CUDA12 / "nvidia-kernel-open-dkms_570.133.20-1_amd64.deb"
    subprocess.run(["dpkg-deb", "-x", deb, tmp_path], check=True)
    unit = tmp_path / "lib/systemd/system" / DEVNODES_UNIT
    assert f"ExecStart={DEVNODES}" in unit.read_text() and "Before=slurmd.service" in unit.read_text()
    wants = tmp_path / "lib/systemd/system/multi-user.target.wants" / DEVNODES_UNIT
    assert wants.is_symlink() and wants.resolve() == unit.resolve()
    made = (tmp_path / DEVNODES.lstrip("/")).read_text()
    assert 'node "/dev/nvidia$i" 195 "$i"' in made and "node /dev/nvidiactl 195 255" in made


def test_dkms_source_is_the_module_tree_nvidia_packages_ship(mirror, tmp_path):
    for flavor, package, modules in (
        ("open", "nvidia-kernel-open-dkms", 5),
        ("proprietary", "nvidia-kernel-dkms", 4),
    ):
        root = extract(mirror, CUDA12, package, "570.133.20-1", tmp_path / flavor)
        src = root / "usr/src/nvidia-570.133.20"
        conf = (src / "dkms.conf").read_text()
        assert 'PACKAGE_NAME="nvidia"' in conf and 'PACKAGE_VERSION="570.133.20"' in conf
        assert "KERNEL_UNAME=${kernelver} modules" in conf
        assert conf.count("BUILT_MODULE_NAME[") == modules
        assert ('"nvidia-peermem"' in conf) == (flavor == "open")
        assert 'MODULE_VERSION("570.133.20")' in (src / "nvidia.c").read_text()
        assert "EXPORT_SYMBOL(nvidia_p2p_get_pages)" in (src / "nvidia.c").read_text()  # what gdrdrv links against
        assert "int nvidia_p2p_get_pages(uint64_t p2p_token" in (src / "nv-p2p.h").read_text()
        assert "obj-m := nvidia.o nvidia-uvm.o" in (src / "Makefile").read_text()
    broken = extract(mirror, CUDA12, "nvidia-kernel-open-dkms", "570.86.15-1", tmp_path / "broken")
    assert "does not compile" in (broken / "usr/src/nvidia-570.86.15/nvidia.c").read_text()


def test_fabricmanager_and_persistenced_print_their_version(mirror, tmp_path):
    root = extract(mirror, CUDA12, "nvidia-fabricmanager-550", "550.127.08-1", tmp_path)
    out = subprocess.run([root / "usr/bin/nv-fabricmanager", "--version"], capture_output=True, text=True, check=True)
    assert sp.first_line_version(out.stdout) == "550.127.08"
    assert (
        "ExecStart=/usr/bin/nv-fabricmanager" in (root / "lib/systemd/system/nvidia-fabricmanager.service").read_text()
    )


def test_gdrcopy_is_built_as_its_own_packaging_builds_it(mirror, tmp_path):
    """NVIDIA/gdrcopy packages/: gdrdrv-dkms's DKMS tree and init script, the relations of its four packages."""
    manifest = json.loads((mirror / "manifest.json").read_text())["repos"][SITE]
    depends = {(p["package"], p["version"]): p["depends"] for p in manifest}
    assert depends[("gdrcopy", "2.5.1-1")] == [
        "gdrdrv-dkms (= 2.5.1-1)", "libgdrapi (= 2.5.1-1)", "gdrcopy-tests (= 2.5.1-1)"]  # fmt: skip
    assert depends[("gdrdrv-dkms", "2.4.4")] == ["dkms (>= 1.95)"]
    assert depends[("gdrcopy-tests", "2.5.1-1")] == ["libgdrapi (>= 2.5.1-1)"]
    root = extract(mirror, SITE, "gdrdrv-dkms", "2.5.1-1", tmp_path)
    conf = (root / "usr/src/gdrdrv-2.5.1/dkms.conf").read_text()
    assert 'PACKAGE_NAME="gdrdrv"' in conf and 'BUILT_MODULE_NAME[0]="gdrdrv"' in conf and 'AUTOINSTALL="yes"' in conf
    assert "obj-m := nv-p2p-dummy.o gdrdrv.o" in (root / "usr/src/gdrdrv-2.5.1/Makefile").read_text()
    init = (root / "etc/init.d/gdrdrv").read_text()
    assert "mknod -m 666 /dev/gdrdrv" in init and init.rstrip().endswith("exit 0")
    lib = extract(mirror, SITE, "libgdrapi", "2.5.1-1", tmp_path / "lib")
    assert os.readlink(lib / LIB / "libgdrapi.so.2") == "libgdrapi.so.2.5"
