"""Parsers of the files and outputs that reveal the stack, fed the texts the real tools and files contain."""

import json

from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import packages as pk
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import parse as sp

PROC_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Fri Feb 28 07:46:35 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
PROC_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)"
    "  Sun Jul 27 07:09:41 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n"
)
PROC_TWO_PARTS = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54  Tue Jun  6 22:20:39 UTC 2023\n"


def test_proc_driver_version_both_flavours_and_two_part_versions():
    assert sp.proc_driver_version(PROC_PROPRIETARY) == {"version": "570.133.20", "flavor": "proprietary"}
    assert sp.proc_driver_version(PROC_OPEN) == {"version": "580.65.06", "flavor": "open"}
    assert sp.proc_driver_version(PROC_TWO_PARTS)["version"] == "535.54"
    assert sp.proc_driver_version("") is None
    assert sp.proc_driver_version(None) is None


def test_sys_module_version():
    assert sp.sys_module_version("570.133.20\n") == "570.133.20"
    assert sp.sys_module_version("garbage") is None


def test_nvcc_version():
    text = (
        "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2023 NVIDIA Corporation\n"
        "Built on Tue_Jun_13_19:16:58_PDT_2023\nCuda compilation tools, release 12.2, V12.2.140\n"
        "Build cuda_12.2.r12.2/compiler.33053471_0\n"
    )
    assert sp.nvcc_version(text) == "12.2.140"
    assert sp.nvcc_version("Cuda compilation tools, release 11.8") == "11.8"
    assert sp.nvcc_version("bash: nvcc: command not found") is None


def test_cuda_version_files():
    doc = {
        "cuda": {"name": "CUDA SDK", "version": "12.8.1"},
        "cuda_cudart": {"name": "CUDA Runtime", "version": "12.8.90"},
    }
    assert sp.cuda_version_json(json.dumps(doc)) == "12.8.1"
    assert sp.cuda_version_json("{not json") is None
    assert sp.cuda_version_txt("CUDA Version 10.2.89\n") == "10.2.89"


def test_nvidia_smi_old_and_new_labels():
    old = "| NVIDIA-SMI 535.54.03              Driver Version: 535.54.03    CUDA Version: 12.2     |"
    new = "| NVIDIA-SMI 580.65.06     KMD Version: 580.65.06     CUDA UMD Version: 13.0     |"
    assert sp.nvidia_smi(old) == {"driver": "535.54.03", "cuda": "12.2"}
    assert sp.nvidia_smi(new) == {"driver": "580.65.06", "cuda": "13.0"}
    assert sp.nvidia_smi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") is None


def test_headers():
    cudnn8 = "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n"
    assert sp.cudnn_header(cudnn8) == "8.9.7"
    nccl = '#define NCCL_MAJOR 2\n#define NCCL_MINOR 8\n#define NCCL_PATCH 4\n#define NCCL_SUFFIX ""\n'
    assert sp.nccl_header(nccl + "#define NCCL_VERSION_CODE 2804\n") == "2.8.4"
    # A header whose code disagrees with its parts is not trusted.
    assert sp.nccl_header(nccl + "#define NCCL_VERSION_CODE 21803\n") is None
    assert sp.cudnn_header("/* nothing */") is None
    # An include guard with no value right before the numbers (as in cuDNN 9's cudnn_version.h).
    assert sp.cudnn_header("#define CUDNN_VERSION_H_\n" + cudnn8) == "8.9.7"


def test_library_names():
    assert sp.library_version("libcudnn.so.9.8.0", "libcudnn") == "9.8.0"
    assert sp.library_version("libnccl.so.2.26.2", "libnccl") == "2.26.2"
    assert sp.library_version("libnccl.so.2", "libnccl") == "2"
    assert sp.library_version("libcudnn_ops.so.9.8.0", "libcudnn") is None  # a sub-library, not the dispatcher
    assert sp.library_version("libcuda.so.570.133.20", "libcuda") == "570.133.20"


def test_dist_metadata_requires_and_body():
    text = (
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.1+cu128\n"
        'Requires-Dist: nvidia-cudnn-cu12==9.7.1.26; platform_system == "Linux" and platform_machine == "x86_64"\n'
        'Requires-Dist: nvidia-nccl-cu12==2.26.2; platform_system == "Linux"\n'
        "Requires-Dist: filelock\nRequires-Dist: sympy>=1.13.3\n\nRequires-Dist: in-the-body==1\n"
    )
    meta = sp.dist_metadata(text)
    assert meta == {
        "name": "torch",
        "version": "2.7.1+cu128",
        "requires": {"nvidia-cudnn-cu12": "9.7.1.26", "nvidia-nccl-cu12": "2.26.2"},
    }
    assert sp.dist_metadata("Summary: nothing\n") is None


def test_torch_and_tensorflow_version_files():
    torch = "__version__ = '2.7.1+cu128'\ndebug = False\ncuda: Optional[str] = '12.8'\ngit_version = 'e2d141dbde'\n"
    assert sp.torch_version_py(torch) == {"version": "2.7.1+cu128", "cuda": "12.8"}
    cpu = "__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n"
    assert sp.torch_version_py(cpu) == {"version": "2.13.0+cpu", "cuda": None}
    tf = "build_info = {'cpu_compiler': '/usr/lib/llvm-18/bin/clang', 'cuda_version': '12.5.1', 'cudnn_version': '9'}\n"
    assert sp.tf_build_info(tf) == {"cuda": "12.5.1", "cudnn": "9"}


def test_tool_versions():
    assert (
        sp.first_line_version(
            "NVIDIA Container Toolkit CLI version 1.17.5\ncommit: f785e908a7f72149f8912617058644fd84e38cde"
        )
        == "1.17.5"
    )
    assert sp.first_line_version("Fabric Manager version is : 570.133.20") == "570.133.20"


def test_package_lines_and_classification():
    dpkg = (
        "nvidia-open\t570.133.20-1\tii \n"
        "cuda-drivers-570\t570.133.20-1\tii \n"
        "nvidia-fabricmanager-570\t570.124.06-1\tii \n"
        "libcudnn9-cuda-12\t9.8.0.87-1\tii \n"
        "libnccl2\t2.26.2-1+cuda12.8\thi \n"  # held (apt-mark hold), as the nccl role leaves it: installed
        "nvidia-container-toolkit\t1.17.5-1\tii \n"
        "cuda-toolkit-12-8\t12.8.1-1\tii \n"
        "nvidia-driver-535\t535.54.03-0ubuntu1\trc \n"  # removed, config files left: not installed
    )
    found = pk.classify(sp.package_lines(dpkg))
    assert [p["package"] for p in found["driver"]] == ["nvidia-open", "cuda-drivers-570"]
    assert found["driver"][0]["version"] == "570.133.20"
    assert found["fabricmanager"][0]["version"] == "570.124.06"
    assert found["cudnn"][0] == {
        "package": "libcudnn9-cuda-12",
        "version": "9.8.0.87",
        "raw_version": "9.8.0.87-1",
        "cuda": "12",
    }
    assert found["nccl"][0]["cuda"] == "12.8"
    assert found["container_toolkit"][0]["version"] == "1.17.5"
    assert found["cuda_toolkit"][0]["version"] == "12.8.1"


def test_installed_stack_as_pins_is_a_rollback_target():
    from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.gather import as_pins
    from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.packages import driver_flavor

    installed = {
        "driver": {"package_version": "570.133.20", "loaded_version": None, "flavor": "open"},
        "cuda": {
            "default": "/usr/local/cuda-12.4",
            "toolkits": [
                {"path": "/usr/local/cuda-12.8", "version": "12.8.1"},
                {"path": "/usr/local/cuda-12.4", "version": "12.4.1"},
            ],
        },
        "cudnn": {"present": True, "version": "9.8.0.87"},
        "nccl": {"present": True, "version": "2.26.2"},
        "fabricmanager": {"present": False, "version": None},
    }
    assert as_pins(installed) == {
        "driver": "570.133.20",
        "driver_flavor": "open",
        "cuda": ["12.4", "12.8"],
        "cudnn": "9.8.0.87",
        "nccl": "2.26.2",
    }
    assert as_pins({}) == {}
    assert driver_flavor(["nvidia-driver", "nvidia-kernel-open-dkms", "nvidia-open"]) == "open"
    assert driver_flavor(["cuda-drivers-550", "nvidia-kernel-dkms", "nvidia-driver"]) == "proprietary"
    assert driver_flavor(["libnvidia-ml1"]) is None
