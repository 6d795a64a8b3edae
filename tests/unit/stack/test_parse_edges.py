"""The stack parsers at their edges: half of what they look for, foreign text, and the Horovod build marker."""

import json

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import parse as sp


def test_proc_driver_version_reads_only_the_nvrm_line():
    text = "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) 1.2.3 \n"
    assert sp.proc_driver_version(text) is None
    text += "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20\n"  # the version ends the line
    assert sp.proc_driver_version(text) == {"version": "570.133.20", "flavor": "proprietary"}
    assert sp.proc_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  (none)\n") is None


def test_sys_module_version_two_parts_and_padding():
    assert sp.sys_module_version(" 535.54\n") == "535.54"
    assert sp.sys_module_version("570.133.20.1") is None
    assert sp.sys_module_version(None) is None


def test_cuda_version_files_that_are_not_cuda_s():
    assert sp.cuda_version_json(json.dumps(["12.8.1"])) is None
    assert sp.cuda_version_json(json.dumps({"cuda": "12.8.1"})) is None
    assert sp.cuda_version_json(None) is None
    assert sp.cuda_version_txt("CUDA Version 12.8\n") == "12.8"
    assert sp.cuda_version_txt("Version 10.2.89") is None


def test_nvidia_smi_with_one_of_the_two():
    assert sp.nvidia_smi("Driver Version: 470.256.02   CUDA Version: N/A") == {"driver": "470.256.02", "cuda": None}
    assert sp.nvidia_smi("CUDA Version: 12.2") == {"driver": None, "cuda": "12.2"}
    assert sp.nvidia_smi(None) is None


def test_headers_with_a_missing_or_symbolic_part():
    assert sp.cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 8\n") is None
    assert sp.cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 8\n#define CUDNN_PATCHLEVEL X\n") is None
    nccl = "  #  define NCCL_MAJOR 2\n#define NCCL_MINOR 26\n#define NCCL_PATCH 2\n"
    assert sp.nccl_header(nccl) == "2.26.2"
    # A code written as an expression is not checked; a numeric one in the >= 2.9 encoding is.
    assert sp.nccl_header(nccl + "#define NCCL_VERSION_CODE NCCL_VERSION(2, 26, 2)\n") == "2.26.2"
    assert sp.nccl_header(nccl + "#define NCCL_VERSION_CODE 22602\n") == "2.26.2"
    assert sp.nccl_header("#define NCCL_MAJOR 2\n#define NCCL_MINOR 26\n") is None
    assert sp.nccl_header("#define NCCL_MAJOR 2\n#define NCCL_MINOR x\n#define NCCL_PATCH 2\n") is None


def test_library_version_needs_the_whole_name():
    assert sp.library_version("libcudnn.so", "libcudnn") is None
    assert sp.library_version("libcudnn.so.9.8.0.bak", "libcudnn") is None
    assert sp.library_version(None, "libcudnn") is None


def test_dist_metadata_pin_forms():
    text = (
        "Name: jax-cuda12-plugin\nVersion: 0.6.2\n"
        "Requires-Dist: NVIDIA_CUBLAS_CU12 [extra] (== 12.9.1.4) ; extra == 'with-cuda'\n"
        "Requires-Dist: nvidia-nccl-cu12>=2.26\n"
        "Requires-Dist: jax-cuda12-pjrt==0.6.2\n"
        "Requires-Dist\n"
        "\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70 (a pin quoted in the long description)\n"
    )
    assert sp.dist_metadata(text) == {
        "name": "jax-cuda12-plugin",
        "version": "0.6.2",
        "requires": {"nvidia-cublas-cu12": "12.9.1.4"},
    }
    assert sp.dist_metadata("Name: torch\n") is None
    assert sp.dist_metadata("Version: 2.7.1\n") is None
    assert sp.dist_metadata(None) is None


def test_torch_version_py_without_a_version_or_cuda():
    assert sp.torch_version_py("cuda = '12.8'\n") is None
    assert sp.torch_version_py('__version__ = "2.7.1+cu128"\ncuda = "12.8"\n') == {
        "version": "2.7.1+cu128",
        "cuda": "12.8",
    }
    assert sp.torch_version_py("__version__ = '2.7.1'\n") == {"version": "2.7.1", "cuda": None}
    assert sp.torch_version_py(None) is None


def test_tf_build_info_with_one_of_the_two():
    assert sp.tf_build_info("build_info = {'cuda_version': '12.5.1'}") == {"cuda": "12.5.1", "cudnn": None}
    assert sp.tf_build_info("('cudnn_version', '9')") == {"cuda": None, "cudnn": "9"}
    assert sp.tf_build_info("build_info = {'is_cuda_build': False}") is None
    assert sp.tf_build_info(None) is None


def test_first_line_version_four_parts_or_none():
    assert sp.first_line_version("nv-fabricmanager version 570.133.20.1") == "570.133.20.1"
    assert sp.first_line_version("version 1.17") is None
    assert sp.first_line_version(None) is None


MARKER = {"horovod": "0.28.1", "patched": 1, "patch": "cxx17.patch", "gpu_operations": "NCCL"}


@pytest.mark.parametrize(
    ("text", "version", "found"),
    [
        (json.dumps(MARKER), "0.28.1", {"patched": True, "patch": "cxx17.patch", "gpu_operations": "NCCL"}),
        (json.dumps({"horovod": "0.28.1"}), "0.28.1", {"patched": False, "patch": None, "gpu_operations": None}),
        (
            json.dumps(dict(MARKER, patch="", gpu_operations="")),
            "0.28.1",
            {"patched": True, "patch": None, "gpu_operations": None},
        ),
        (json.dumps(MARKER), "0.28.0", None),  # left by an uninstalled Horovod
        (json.dumps(["0.28.1"]), "0.28.1", None),
        ("{not json", "0.28.1", None),
        (None, "0.28.1", None),
    ],
)
def test_horovod_build_marker(text, version, found):
    assert sp.horovod_build(text, version) == found


def test_package_lines_keep_only_installed_rows_with_a_version():
    text = "a\t1.0\tii \nb\t2.0\thi \nc\t3.0\trc \nd\t4.0\tiU \ne\t\tii \nf\ng\t7.0\nh\t8.0\t \n"
    assert sp.package_lines(text) == {"a": "1.0", "b": "2.0", "g": "7.0", "h": "8.0"}
    assert sp.package_lines(None) == {}
