"""stack_assert's inputs at their edges: every key of the normalised stack, empty values, each InputError's words."""

import re

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs

GPU_FIX = "is not a GPU; give a product name (H100), a compute capability ('9.0') or gpu_facts' GPUs"
FRAMEWORK_FIX = "is not NAME==VERSION; write e.g. 'torch==2.7.1+cu128'"
VERSION_FIX = "is not a version (e.g. '570.133.20', '12.8', '9.8.0')"
EMPTY = {
    "origin": "versions",
    "driver": None,
    "driver_flavor": None,
    "gpus": [],
    "max_cuda": None,
    "max_cuda_source": None,
    "cuda": [],
    "cudnn": None,
    "cudnn_cuda": None,
    "nccl": None,
    "nccl_cuda": None,
    "fabricmanager": None,
    "container_toolkit": None,
    "dcgm": None,
    "horovod": None,
    "frameworks": [],
    "notes": [],
}


def fails(call, message):
    """The whole InputError text, not a fragment: a user reads all of it."""
    with pytest.raises(inputs.InputError, match=f"^{re.escape(message)}$"):
        call()


# from_versions: the stack as declared


def test_declared_versions_fill_every_key_of_the_stack():
    stack = inputs.from_versions(
        {
            "driver": "580.95.05",
            "driver_flavor": "open",
            "gpu": "H100",
            "cuda": ["12.8", "13.0"],
            "cudnn": "9.13.0",
            "nccl": "2.27.7-1+cuda13.0",
            "fabricmanager": "580.95.05",
            "container_toolkit": "1.17.8",
            "dcgm": "4.2.3",
            "horovod": "0.28.1",
            "framework": "jax[cuda13]==0.7.2",
        }
    )
    assert stack == dict(
        EMPTY,
        driver="580.95.05",
        driver_flavor="open",
        gpus=[{"name": "H100", "cc": None}],
        cuda=["12.8", "13.0"],
        cudnn="9.13.0",
        nccl="2.27.7",  # the upstream version of the package's, its CUDA build apart
        nccl_cuda="13.0",
        fabricmanager="580.95.05",
        container_toolkit="1.17.8",
        dcgm="4.2.3",
        horovod="0.28.1",
        frameworks=[
            {"name": "jax", "version": "0.7.2", "cuda": "13", "cuda_source": "given", "bundles": {}, "env": None}
        ],
    )


def test_no_versions_is_an_empty_stack_with_every_key():
    assert inputs.from_versions(None) == EMPTY
    assert inputs.from_versions({}) == EMPTY


def test_a_framework_without_a_cuda_extra_has_no_cuda_source():
    (fw,) = inputs.from_versions({"framework": "torch==2.7.1+cu128"})["frameworks"]
    assert fw == {
        "name": "torch",
        "version": "2.7.1+cu128",
        "cuda": None,
        "cuda_source": None,
        "bundles": {},
        "env": None,
    }


@pytest.mark.parametrize("key", ["driver", "cudnn", "nccl", "fabricmanager", "container_toolkit", "dcgm", "horovod"])
def test_an_empty_version_is_not_given(key):
    # An inventory often carries `key: ""` for a component a host does not have.
    assert inputs.from_versions({key: ""}) == EMPTY


def test_empty_cuda_gpu_and_flavor_are_not_given():
    assert inputs.from_versions({"cuda": "", "gpu": "", "driver_flavor": ""}) == EMPTY
    assert inputs.from_versions({"cuda": ["12.8", "", None]})["cuda"] == ["12.8"]


def test_yaml_numbers_are_read_as_version_strings():
    # YAML reads `cuda: 12.8` as a float and `driver: 570` as an int.
    stack = inputs.from_versions({"driver": 570, "cuda": 12.8})
    assert (stack["driver"], stack["cuda"]) == ("570", ["12.8"])


def test_versions_that_is_not_a_dict_names_its_type():
    fails(lambda: inputs.from_versions(["570"]), "versions must be a dict like gpufleet_stack, got list")
    fails(lambda: inputs.from_versions("570"), "versions must be a dict like gpufleet_stack, got str")


@pytest.mark.parametrize(
    "key", ["driver", "cuda", "cudnn", "nccl", "fabricmanager", "container_toolkit", "dcgm", "horovod"]
)
def test_a_value_that_is_not_a_version_names_its_key_and_value(key):
    fails(lambda: inputs.from_versions({key: "latest"}), f"versions.{key} 'latest' {VERSION_FIX}")


@pytest.mark.parametrize("key", ["driver", "cudnn", "dcgm"])
def test_a_mapping_for_a_version_names_its_key(key):
    fails(lambda: inputs.from_versions({key: {"a": 1}}), f"versions.{key} must be a version string, got {{'a': 1}}")


def test_a_bad_cuda_in_a_list_is_named_alone():
    fails(lambda: inputs.from_versions({"cuda": ["12.8", "next"]}), f"versions.cuda 'next' {VERSION_FIX}")
    fails(lambda: inputs.from_versions({"cuda": [["12.8"]]}), "versions.cuda must be a version string, got ['12.8']")


def test_an_unknown_flavor_lists_the_known_ones():
    fails(
        lambda: inputs.from_versions({"driver_flavor": "closed"}),
        "versions.driver_flavor 'closed' is not one of open, proprietary",
    )


def test_a_bad_declared_framework_is_named_as_versions_framework():
    fails(lambda: inputs.from_versions({"framework": "torch 2.7"}), f"versions.framework 'torch 2.7' {FRAMEWORK_FIX}")
    fails(
        lambda: inputs.from_versions({"framework": {"name": "torch"}}),
        "versions.framework {'name': 'torch'} needs name and version, e.g. {name: torch, version: '2.7.1'}",
    )


# parse_framework


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("torch==2.7.1", {"name": "torch", "version": "2.7.1", "cuda": None}),
        (" Torch == 2.7.1+cu128 ", {"name": "torch", "version": "2.7.1+cu128", "cuda": None}),
        ("jax[cuda12]==0.6.2", {"name": "jax", "version": "0.6.2", "cuda": "12"}),
        ("jax[cuda12-local]==0.6.2", {"name": "jax", "version": "0.6.2", "cuda": None}),  # the system's CUDA
        ("tensorflow[and-cuda]==2.20.0", {"name": "tensorflow", "version": "2.20.0", "cuda": None}),
        (
            {"name": "TensorFlow", "version": 2.2, "cuda": 12.8},
            {"name": "tensorflow", "version": "2.2", "cuda": "12.8"},
        ),
        ({"name": "torch", "version": "2.7.1"}, {"name": "torch", "version": "2.7.1", "cuda": None}),
    ],
)
def test_a_framework_is_read_from_shorthand_or_mapping(value, parsed):
    assert inputs.parse_framework(value) == parsed


@pytest.mark.parametrize("value", [None, "", "torch", "torch==", "==2.7.1", "torch>=2.7"])
def test_a_framework_without_name_and_version_is_refused_whole(value):
    fails(lambda: inputs.parse_framework(value, "expect.framework"), f"expect.framework {value!r} {FRAMEWORK_FIX}")


# gpus, parse_gpu, from_fact


def test_gpu_facts_gpus_need_only_a_name_or_a_compute_capability():
    assert inputs.gpus(
        [
            {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "index": 0},
            {"name": "NVIDIA A100-SXM4-80GB"},
            {"compute_capability": "8.6"},
        ]
    ) == [
        {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0"},
        {"name": "NVIDIA A100-SXM4-80GB", "cc": None},
        {"name": None, "cc": "8.6"},
    ]


@pytest.mark.parametrize(
    ("text", "cc"),
    [
        ("10.0", "10.0"),
        ("sm_100a", "10.0"),
        ("SM_89", "8.9"),
        ("compute_120", "12.0"),
        ("sm75", "7.5"),
        (" 9.0 ", "9.0"),
    ],
)
def test_a_compute_capability_or_sm_target_gives_the_capability(text, cc):
    assert inputs.parse_gpu(text) == {"name": None, "cc": cc}


def test_anything_else_is_a_product_name():
    assert inputs.parse_gpu(" Tesla V100-SXM2-16GB ") == {"name": "Tesla V100-SXM2-16GB", "cc": None}
    assert inputs.parse_gpu("9.0.1") == {"name": "9.0.1", "cc": None}


@pytest.mark.parametrize("item", [None, " ", {}, {"name": "", "compute_capability": None}, ["H100"]])
def test_what_is_not_a_gpu_is_named_with_where_it_came_from(item):
    fails(lambda: inputs.gpus([item]), f"gpus: {item!r} {GPU_FIX}")  # stack_assert's gpus option
    fails(lambda: inputs.from_versions({"gpu": [item]}), f"versions.gpu: {item!r} {GPU_FIX}")


# from_installed: the stack as stack_facts found it


def test_host_facts_fill_every_key_of_the_stack():
    driver = {
        "loaded_version": "570.133.20",
        "package_version": "570.133.20",
        "library_version": "570.133.20",
        "flavor": "open",
        "mismatch": False,
        "max_cuda": "12.8",
        "max_cuda_source": "libcuda cuDriverGetVersion",
    }
    torch = {
        "version": "2.7.1+cu128",
        "env": "/opt/venv",
        "cuda": "12.8",
        "cuda_source": "torch/version.py",
        "bundles": {"cudnn": "9.7.1.26", "nccl": "2.26.2"},
        "source": "/opt/venv/lib/python3.11/site-packages/torch-2.7.1+cu128.dist-info/METADATA",
    }
    tensorflow = {
        "version": "2.20.0",
        "env": "/opt/tf",
        "cuda": "12.5",
        "cuda_source": "tensorflow build_info.py",
        "built_cudnn": "9",
    }
    stack = inputs.from_installed(
        {
            "driver": driver,
            "cuda": {"toolkits": [{"path": "/usr/local/cuda-12.8", "version": "12.8.1"}], "default": None},
            "cudnn": {"findings": [{"version": "9.8.0.87", "scope": "package", "cuda": "12"}]},
            "nccl": {"findings": [{"version": "2.26.2", "scope": "package", "cuda": "12.8"}]},
            "fabricmanager": {"version": "570.133.20"},
            "container_toolkit": {"version": "1.17.8"},
            "dcgm": {"version": "4.2.3"},
            "frameworks": {"torch": [torch], "tensorflow": tensorflow, "horovod": [{"version": "0.28.1"}]},
        }
    )
    assert stack == {
        "origin": "host",
        "driver": "570.133.20",
        "driver_flavor": "open",
        "gpus": [],
        "max_cuda": "12.8",
        "max_cuda_source": "libcuda cuDriverGetVersion",
        "cuda": ["12.8.1"],
        "cudnn": "9.8.0.87",
        "cudnn_cuda": "12",
        "nccl": "2.26.2",
        "nccl_cuda": "12.8",
        "fabricmanager": "570.133.20",
        "container_toolkit": "1.17.8",
        "dcgm": "4.2.3",
        "horovod": "0.28.1",
        "frameworks": [
            {
                "name": "torch",
                "version": "2.7.1+cu128",
                "cuda": "12.8",
                "cuda_source": "torch/version.py",
                "bundles": {"cudnn": "9.7.1.26", "nccl": "2.26.2"},
                "env": "/opt/venv",
                "built_cudnn": None,
            },
            {
                "name": "tensorflow",
                "version": "2.20.0",
                "cuda": "12.5",
                "cuda_source": "tensorflow build_info.py",
                "bundles": {},
                "env": "/opt/tf",
                "built_cudnn": "9",
            },
        ],
        "notes": [],
        "driver_detail": driver,
    }


def test_no_host_facts_is_an_empty_host_stack():
    stack = inputs.from_installed(None)
    assert stack["origin"] == "host" and stack["driver_detail"] == {} and stack["gpus"] == []
    assert all(stack[k] is None for k in ("driver", "driver_flavor", "cudnn", "cudnn_cuda", "nccl", "dcgm", "horovod"))
    assert (stack["cuda"], stack["frameworks"], stack["notes"]) == ([], [], [])


@pytest.mark.parametrize(
    ("driver", "version"),
    [
        (
            {"loaded_version": "570.124.06", "package_version": "570.133.20", "library_version": "570.133.20"},
            "570.124.06",
        ),
        ({"package_version": "570.133.20", "library_version": "570.124.06"}, "570.133.20"),  # not loaded (container)
        ({"library_version": "570.133.20"}, "570.133.20"),  # a runfile install: no package
    ],
)
def test_the_driver_is_the_loaded_one_then_the_package_then_the_library(driver, version):
    assert inputs.from_installed({"driver": driver})["driver"] == version


def test_a_driver_mismatch_is_kept_as_a_note():
    driver = {"loaded_version": "570.124.06", "package_version": "570.133.20", "mismatch": True}
    stack = inputs.from_installed({"driver": driver})
    assert stack["notes"] == [driver] and stack["driver_detail"] == driver


def test_the_default_toolkit_comes_first_then_the_others_in_their_order():
    toolkits = [
        {"path": "/usr/local/cuda-12.4", "version": "12.4.1"},
        {"path": "/usr/local/cuda-12.6", "version": "12.6.3"},
        {"path": "/usr/local/cuda-12.8", "version": "12.8.1"},
        {"path": "/usr/local/cuda-13.0"},  # no version.json: not a toolkit version
    ]
    cuda = inputs.from_installed({"cuda": {"toolkits": toolkits, "default": "/usr/local/cuda-12.8"}})["cuda"]
    assert cuda == ["12.8.1", "12.4.1", "12.6.3"]
    assert inputs.from_installed({"cuda": {"toolkits": toolkits}})["cuda"] == ["12.4.1", "12.6.3", "12.8.1"]


def test_the_most_precise_system_finding_is_the_library_version():
    findings = [
        {"version": "9.8.0", "source": "header /usr/include/cudnn_version.h", "scope": "system"},
        {"version": "9.8.0.87", "source": "dpkg libcudnn9-cuda-12", "scope": "package"},
        {"version": "9.10.2.21", "scope": "wheel", "env": "/opt/venv"},  # serves only its venv
    ]
    assert inputs.from_installed({"cudnn": {"findings": findings}})["cudnn"] == "9.8.0.87"
    assert inputs.from_installed({"nccl": {"findings": findings[:1]}})["nccl"] == "9.8.0"


def test_only_a_package_finding_names_the_cuda_build():
    findings = [
        {"version": "2.26.2", "scope": "system"},
        {"version": "2.26.2", "scope": "wheel", "cuda": "12"},
        {"version": "2.26.2", "scope": "package"},
        {"version": "2.26.2", "scope": "package", "cuda": 12.8},
    ]
    stack = inputs.from_installed({"nccl": {"findings": findings}, "cudnn": {"findings": findings[:3]}})
    assert (stack["nccl_cuda"], stack["cudnn_cuda"]) == ("12.8", None)


def test_horovod_is_its_own_key_not_a_framework_and_the_first_known_version_wins():
    frameworks = {
        # a METADATA with an empty Version line in the first environment
        "horovod": [{"version": "", "env": "/opt/a"}, {"version": "0.28.1", "env": "/opt/b"}, {"version": "0.27.0"}],
        "torch": [{"version": "2.7.1+cu128"}],
    }
    stack = inputs.from_installed({"frameworks": frameworks})
    assert stack["horovod"] == "0.28.1"
    assert [(f["name"], f["version"], f["bundles"]) for f in stack["frameworks"]] == [("torch", "2.7.1+cu128", {})]


# check_expect


def test_every_expect_key_takes_a_valid_pin():
    assert (
        inputs.check_expect(
            {
                "driver": "570",
                "cuda": ["12.8", ">=13.0,<14"],
                "cudnn": ">=9,<10",
                "nccl": "2.26.2",
                "fabricmanager": "==570.133.20",
                "container_toolkit": ">=1.17.8",
                "dcgm": "4",
                "framework": "torch==2.7.1",
                "horovod": "0.28.1",
            }
        )
        is None
    )
    assert inputs.check_expect(None) is None


def test_an_unknown_expect_key_lists_the_keys_in_order():
    fails(
        lambda: inputs.check_expect({"cudn": "9"}),
        "expect.cudn is not one of driver, cuda, cudnn, nccl, fabricmanager, container_toolkit, dcgm, framework, "
        "horovod",
    )


def test_a_bad_expect_pin_is_named_with_the_reason():
    fails(
        lambda: inputs.check_expect({"cudnn": "~9"}),
        "expect.cudnn '~9': not a version pin: '~9' (use 570.133.20, 570 or >=12.4,<13)",
    )
    fails(
        lambda: inputs.check_expect({"cuda": ["12.8", "13.x"]}),
        "expect.cuda '13.x': not a version pin: '13.x' (use 570.133.20, 570 or >=12.4,<13)",
    )


def test_a_bad_expect_framework_is_named_as_expect_framework():
    fails(lambda: inputs.check_expect({"framework": "torch 2.7"}), f"expect.framework 'torch 2.7' {FRAMEWORK_FIX}")


def test_pins_after_a_framework_are_still_checked():
    fails(
        lambda: inputs.check_expect({"framework": "torch==2.7.1", "dcgm": "four"}),
        "expect.dcgm 'four': not a version pin: 'four' (use 570.133.20, 570 or >=12.4,<13)",
    )
