"""GPU-aware rules (module_utils/_compat/rules_gpu) with real product names (as NVML and nvidia-smi print them, from
sandbox/nvml-sim/samples/real), real driver versions and real wheels: the driver branch drives the architecture,
every toolkit and framework build compiles for it, the kernel-module flavour drives it."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine as rules
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs as si
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.inputs import parse_gpu
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.rules_gpu import carries_code


def gpu_checks(matrix, versions, gpus=None):
    stack = si.from_versions(versions)
    if gpus is not None:
        stack["gpus"] = si.gpus(gpus)
    return {
        (c["rule"], c["status"], c["message"])
        for c in rules.evaluate(matrix, stack, today="2026-12-02")
        if c["rule"].startswith("gpu")
    }


def gpu_rows(matrix, versions):
    """The checks (dicts, with their sources) of the GPU rules for versions."""
    return [
        c for c in rules.evaluate(matrix, si.from_versions(versions), today="2026-12-02") if c["rule"].startswith("gpu")
    ]


def violations(matrix, versions, gpus=None):
    return sorted((rule, msg) for rule, status, msg in gpu_checks(matrix, versions, gpus) if status == "violation")


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA GH200 480GB", "9.0"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA GB300", "10.3"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "12.0"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("NVIDIA A100-SXM4-40GB", "8.0"),
        ("NVIDIA A10", "8.6"),
        ("NVIDIA A10G", "8.6"),
        ("NVIDIA RTX A5000", "8.6"),
        ("Tesla T4", "7.5"),
        ("NVIDIA TITAN V", "7.0"),
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("Tesla P100-PCIE-16GB", "6.0"),
        ("Quadro P400", "6.1"),
        ("Tesla M10", "5.0"),
        ("Tesla M60", "5.2"),
        ("Tesla K80", "3.7"),
    ],
)
def test_product_names_to_compute_capability(matrix, name, cc):
    assert mx.gpu_model_cc(matrix, name)[0] == cc


def test_what_a_user_writes_for_a_gpu():
    assert parse_gpu("9.0") == {"name": None, "cc": "9.0"}
    assert parse_gpu("sm_120") == {"name": None, "cc": "12.0"}
    assert parse_gpu("sm_90a") == {"name": None, "cc": "9.0"}
    assert parse_gpu(8.6) == {"name": None, "cc": "8.6"}
    assert parse_gpu("H100") == {"name": "H100", "cc": None}


def test_a_current_stack_on_hopper_is_clean(matrix):
    versions = {"driver": "570.133.20", "driver_flavor": "open", "cuda": "12.8", "framework": "torch==2.8.0",
                "gpu": "NVIDIA H100 80GB HBM3"}  # fmt: skip
    checks = gpu_checks(matrix, versions)
    assert {status for _r, status, _m in checks} == {"ok"}
    assert {rule for rule, _s, _m in checks} == {"gpu_driver", "gpu_release", "gpu_cuda", "gpu_wheel", "gpu_flavor"}


def test_a_driver_too_old_for_blackwell(matrix):
    found = violations(matrix, {"driver": "535.161.08", "cuda": "12.2", "gpu": "NVIDIA B200"})
    assert found == [
        ("gpu_cuda", "CUDA toolkit 12.2 cannot compile for NVIDIA B200 (Blackwell, compute capability 10.0, sm_100): "
                     "Blackwell needs CUDA 12.8 or newer"),
        ("gpu_driver", "driver 535.161.08 does not drive NVIDIA B200 (Blackwell, compute capability 10.0, sm_100): "
                       "Blackwell needs driver branch 570 or newer; upgrade the driver"),
    ]  # fmt: skip


def test_a_driver_past_the_last_branch_for_volta(matrix):
    ((rule, msg),) = violations(matrix, {"driver": "590.44.01", "gpu": "Tesla V100-SXM2-16GB"})
    assert rule == "gpu_driver" and "branch 580 is the last for Volta; pin the driver to branch 580" in msg
    assert violations(matrix, {"driver": "580.95.05", "gpu": "Tesla V100-SXM2-16GB"}) == []
    ((rule, msg),) = violations(matrix, {"driver": "535.261.03", "gpu": "Tesla K80"})
    assert "branch 470 is the last for Kepler" in msg


def test_cuda_13_no_longer_compiles_before_turing(matrix):
    ((rule, msg),) = violations(matrix, {"cuda": "13.0", "gpu": "Tesla P100-PCIE-16GB"})
    assert rule == "gpu_cuda" and msg.startswith("CUDA toolkit 13.0 no longer compiles for Tesla P100-PCIE-16GB")
    assert "CUDA 12.9 is the last toolkit that compiles for Pascal; choose CUDA 12.9 or older" in msg
    assert violations(matrix, {"cuda": "12.9", "gpu": "Tesla P100-PCIE-16GB"}) == []
    ((rule, msg),) = violations(matrix, {"cuda": "12.0", "gpu": "Tesla K80"})
    assert "CUDA 11.8 is the last toolkit that compiles for Kepler" in msg


@pytest.mark.parametrize(
    ("flavor", "gpu", "fix"),
    [
        ("open", "Tesla V100-SXM2-16GB", '"proprietary"'),
        ("open", "Tesla M10", '"proprietary"'),
        ("proprietary", "NVIDIA B200", '"open"'),
        ("proprietary", "NVIDIA GH200 480GB", '"open"'),
        ("proprietary", "NVIDIA GeForce RTX 5090", '"open"'),
    ],
)
def test_the_kernel_module_flavour_that_drives_the_gpu(matrix, flavor, gpu, fix):
    ((rule, msg),) = violations(matrix, {"driver_flavor": flavor, "gpu": gpu})
    assert rule == "gpu_flavor" and msg.endswith(f"set gpufleet_stack.driver_flavor (or nvidia_driver_flavor) to {fix}")


def test_both_flavours_drive_turing_to_hopper_but_grace_hopper_only_open(matrix):
    for gpu in ("Tesla T4", "NVIDIA A100-SXM4-40GB", "NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3"):
        for flavor in ("open", "proprietary"):
            assert violations(matrix, {"driver_flavor": flavor, "gpu": gpu}) == [], (gpu, flavor)
    assert violations(matrix, {"driver_flavor": "open", "gpu": "NVIDIA GH200 480GB"}) == []


def test_the_default_torch_wheel_on_blackwell_and_on_pascal(matrix):
    """torch 2.7's PyPI default is cu126, built for 5.0-9.0 without PTX: an RTX 5090 gets "sm_120 is not compatible";
    torch 2.8's default cu128 dropped Maxwell and Pascal."""
    ((rule, msg),) = violations(matrix, {"framework": "torch==2.7.1", "gpu": "NVIDIA GeForce RTX 5090"})
    assert rule == "gpu_wheel"
    assert msg == (
        "torch 2.7.1 (cu126 wheel) carries no code for NVIDIA GeForce RTX 5090 (Blackwell, compute capability 12.0, "
        "sm_120): it is built for 5.0;6.0;7.0;7.5;8.0;8.6;9.0; use the cu128 wheel"
    )
    ((rule, msg),) = violations(matrix, {"framework": "torch==2.8.0", "gpu": "Tesla P100-PCIE-16GB"})
    assert msg.endswith("it is built for 7.0;7.5;8.0;8.6;9.0;10.0;12.0; use the cu126 wheel")
    assert violations(matrix, {"framework": "torch==2.8.0+cu126", "gpu": "Tesla P100-PCIE-16GB"}) == []


def test_volta_leaves_torch_cu128_in_2_11_and_cu130_never_had_it(matrix):
    assert violations(matrix, {"framework": "torch==2.10.0+cu128", "gpu": "Tesla V100-SXM2-16GB"}) == []
    assert [r for r, _m in violations(matrix, {"framework": "torch==2.11.0+cu128", "gpu": "Tesla V100-SXM2-16GB"})] == [
        "gpu_wheel"
    ]
    found = violations(matrix, {"framework": "torch==2.9.0+cu130", "gpu": "Tesla V100-SXM2-16GB"})
    assert [r for r, _m in found] == ["gpu_cuda"]  # built by CUDA 13.0, which cannot target sm_70


def test_binary_and_ptx_compatibility():
    assert carries_code("7.0;7.5;8.0;8.6;9.0;10.0;12.0", "10.3")  # sm_100 code runs on sm_103
    assert carries_code("7.0;7.5;8.0;8.6;9.0;10.0;12.0", "12.1")
    assert carries_code("7.5;8.0;8.6;9.0", "8.9")  # sm_86 code runs on sm_89
    assert not carries_code("5.0;6.0;7.0;7.5;8.0;8.6;9.0", "12.0")  # no code for major 12, no PTX
    assert carries_code("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "12.1")
    assert carries_code("8.0;9.0+PTX", "8.6")  # sm_80 code runs on sm_86
    assert not carries_code("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "7.0")  # PTX runs forward only


def test_gpus_from_gpu_facts_on_the_host(matrix):
    """Verification passes gpu_facts' GPUs: NVML's name and compute capability, eight of them: one check each."""
    facts = [{"name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0", "index": i} for i in range(8)]
    checks = gpu_checks(matrix, {"driver": "590.44.01", "driver_flavor": "open"}, facts)
    assert {(rule, status) for rule, status, _m in checks} == {("gpu_driver", "violation"), ("gpu_flavor", "violation")}
    assert all("8x Tesla V100-SXM2-32GB (Volta, compute capability 7.0, sm_70)" in m for _r, _s, m in checks)


def test_an_unknown_gpu_is_unknown_not_ok(matrix):
    checks = gpu_checks(matrix, {"driver": "570.133.20", "gpu": "NVIDIA Mystery Card"})
    assert [(rule, status) for rule, status, _m in checks] == [("gpu", "unknown")]
    checks = gpu_checks(matrix, {"driver": "570.133.20", "gpu": "11.0"})  # Jetson Thor: no gpu_arch row
    assert [(rule, status) for rule, status, _m in checks] == [("gpu", "unknown")]


def test_bad_gpu_input_names_the_variable():
    with pytest.raises(si.InputError, match=r"versions.gpu: \{'name': ''\} is not a GPU"):
        si.from_versions({"gpu": [{"name": ""}]})
    with pytest.raises(si.InputError, match=r"versions\.driver_flavor 'closed' is not one of open, proprietary"):
        si.from_versions({"driver_flavor": "closed"})


@pytest.mark.parametrize(
    ("driver", "gpu", "status", "words"),
    [
        # The 550 releases most fleets ran for CUDA 12.4 do not list the H200: from 550.90.07 on they do.
        ("550.54.15", "NVIDIA H200", "warning", "upgrade to 550.90.07 or newer; or a branch that lists it: 555.42.06"),
        ("550.90.07", "NVIDIA H200", "ok", "550.90.07's open kernel modules list NVIDIA H200"),
        ("570.133.20", "NVIDIA H200", "ok", "list NVIDIA H200"),  # a branch newer than every listed one
        ("580", "NVIDIA H200", "ok", "list NVIDIA H200"),  # a branch alone: its newest release
        ("545.29.06", "NVIDIA H20", "warning", "use 550.40.53 (branch 550)"),  # no 545 release lists it
        ("535.154.05", "NVIDIA H20", "warning", "upgrade to 535.161.07 or newer"),
        ("570.133.20", "NVIDIA B300 SXM6 AC", "warning", "use 580.95.05 (branch 580)"),
        ("580.159.03", "NVIDIA B300 SXM6 AC", "ok", "list NVIDIA B300 SXM6 AC"),
        ("570.124.06", "NVIDIA GB200", "ok", "list NVIDIA GB200"),  # 570.124.06 is after 570.123.01
        ("570.86.15", "NVIDIA GB200", "warning", "upgrade to 570.123.01 or newer"),
        ("535.104.05", "NVIDIA L40S", "ok", "list NVIDIA L40S"),
    ],
)
def test_gpus_that_arrived_after_their_architecture(matrix, driver, gpu, status, words):
    (c,) = [x for x in gpu_rows(matrix, {"driver": driver, "gpu": gpu}) if x["rule"] == "gpu_release"]
    assert c["status"] == status and words in c["message"], c
    assert "open-gpu-kernel-modules" in c["source"]


def test_the_release_list_is_the_open_modules_and_names_match_exactly(matrix):
    # The proprietary modules' support is not what the list says: not judged.
    assert [x for x in gpu_rows(matrix, {"driver": "570.133.20", "driver_flavor": "proprietary", "gpu": "Tesla T4"})
            if x["rule"] == "gpu_release"] == []  # fmt: skip
    # "NVIDIA H200" must not catch the GH200 or the H200 NVL, which have rows of their own.
    (c,) = [
        x for x in gpu_rows(matrix, {"driver": "550.90.07", "gpu": "NVIDIA H200 NVL"}) if x["rule"] == "gpu_release"
    ]
    assert c["status"] == "warning" and "use 565.57.01 (branch 565)" in c["message"]
    (c,) = [
        x for x in gpu_rows(matrix, {"driver": "550.90.07", "gpu": "NVIDIA GH200 480GB"}) if x["rule"] == "gpu_release"
    ]
    assert c["status"] == "ok" and "gpu-release-gh200:" in c["source"]


@pytest.mark.parametrize(
    ("versions", "rule", "status", "words"),
    [
        # cuDNN 9.11 dropped Maxwell, Pascal and Volta: a V100 fleet that upgrades cuDNN loses its kernels.
        (
            {"cudnn": "9.13.0", "gpu": "Tesla V100-SXM2-32GB"},
            "gpu_cudnn",
            "violation",
            "cuDNN 9.13.0 carries no kernels for Tesla V100-SXM2-32GB (Volta, compute capability 7.0, sm_70): its "
            "builds are for compute capability >=7.5; use a cuDNN of >=9.0,<9.11",
        ),
        ({"cudnn": "9.10.2", "gpu": "Tesla V100-SXM2-32GB"}, "gpu_cudnn", "ok", "carries kernels for Tesla V100"),
        ({"cudnn": "9.13.0", "gpu": "Tesla T4"}, "gpu_cudnn", "ok", "carries kernels for Tesla T4"),
        ({"cudnn": "9.8.0", "gpu": "Tesla P100-PCIE-16GB"}, "gpu_cudnn", "ok", "cuDNN 9.8.0 carries kernels"),
        # NCCL 2.28.3 removed Maxwell's code from its CUDA 12 builds; Pascal and Volta are still in.
        (
            {"nccl": "2.28.3", "gpu": "Tesla M10"},
            "gpu_nccl",
            "violation",
            "NCCL 2.28.3 carries no kernels for Tesla M10",
        ),
        ({"nccl": "2.30.7", "gpu": "Tesla V100-SXM2-32GB"}, "gpu_nccl", "ok", "NCCL 2.30.7 carries kernels"),
    ],
)
def test_libraries_carry_kernels_for_the_gpu(matrix, versions, rule, status, words):
    (c,) = [x for x in gpu_rows(matrix, dict(versions, driver="580.159.03")) if x["rule"] == rule]
    assert c["status"] == status and words in c["message"], c
    # A cuDNN 8 (no lib_archs row): not judged.
    assert [x for x in gpu_rows(matrix, {"driver": "580.159.03", "cudnn": "8.9.7", "gpu": "Tesla M10"})
            if x["rule"] == "gpu_cudnn"] == []  # fmt: skip
