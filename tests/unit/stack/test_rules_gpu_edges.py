"""The GPU rules (module_utils/_compat/rules_gpu) at their edges: whole messages, several kinds of GPU on one host
(each judged, none lost to the one before it), a compute capability given beside an unknown name, a driver branch
given alone, and PTX that runs forward only from its own target."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine as rules
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs as si
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.rules_gpu import carries_code

T4 = "Tesla T4 (Turing, compute capability 7.5, sm_75)"
H200 = "NVIDIA H200 (Hopper, compute capability 9.0, sm_90)"


def checks(matrix, versions, gpus=None):
    """[(rule, status, message)] of the GPU rules, in the engine's order."""
    stack = si.from_versions(versions)
    if gpus is not None:
        stack["gpus"] = si.gpus(gpus)
    found = rules.evaluate(matrix, stack, today="2026-12-02")
    return [(c["rule"], c["status"], c["message"]) for c in found if c["rule"].startswith("gpu")]


def fact(name, cc, index=0):
    return {"name": name, "compute_capability": cc, "index": index}


def test_one_gpu_has_no_count_and_two_of_a_kind_say_2x(matrix):
    assert checks(matrix, {"driver": "580.159.03"}, [fact("Tesla T4", "7.5")])[0] == (
        "gpu_driver",
        "ok",
        f"driver 580.159.03 drives {T4}",
    )
    two = checks(matrix, {"driver": "580.159.03"}, [fact("Tesla T4", "7.5", 0), fact("Tesla T4", "7.5", 1)])
    assert two[0] == ("gpu_driver", "ok", f"driver 580.159.03 drives 2x {T4}")


def test_a_compute_capability_outside_the_matrix_is_unknown_with_the_fix(matrix):
    # No name (versions.gpu as a compute capability) and no gpu_arch row: the label has no family.
    assert checks(matrix, {"driver": "570.133.20", "gpu": "11.0"}) == [
        (
            "gpu",
            "unknown",
            "a GPU (compute capability 11.0, sm_110): compute capability 11.0 is not in the matrix; add a gpu_arch "
            "row with gpufleet_compat_matrix_extra",
        )
    ]


def test_a_given_compute_capability_is_used_whatever_the_name(matrix):
    # NVML names a board the matrix has no gpu_model row for: its compute capability still places it.
    assert checks(matrix, {"driver": "570.133.20"}, [fact("NVIDIA Mystery Card", "9.0")]) == [
        ("gpu_driver", "ok", "driver 570.133.20 drives NVIDIA Mystery Card (Hopper, compute capability 9.0, sm_90)")
    ]


def test_every_kind_of_gpu_on_a_host_is_judged_after_one_that_cannot_be(matrix):
    gpus = [fact("NVIDIA Mystery Card", None, 0), fact("Jetson", "11.0", 1), fact("Tesla T4", "7.5", 2)]
    found = checks(matrix, {"driver": "580.159.03"}, gpus)
    assert [(rule, status) for rule, status, _m in found] == [
        ("gpu", "unknown"),  # no compute capability, and none for the name
        ("gpu", "unknown"),  # a compute capability without a gpu_arch row
        ("gpu_driver", "ok"),
        ("gpu_release", "ok"),
    ]
    assert found[0][2].startswith("NVIDIA Mystery Card: its compute capability is unknown")
    assert found[1][2].startswith("Jetson (compute capability 11.0, sm_110): compute capability 11.0 is not in")
    assert found[3] == ("gpu_release", "ok", f"driver 580.159.03's open kernel modules list {T4}")


def test_two_known_kinds_keep_both_sets_of_checks(matrix):
    gpus = [fact("NVIDIA H200", "9.0", 0), fact("Tesla T4", "7.5", 1)]
    found = checks(matrix, {"driver": "580.159.03"}, gpus)
    assert [m for rule, _s, m in found if rule == "gpu_driver"] == [
        f"driver 580.159.03 drives {H200}",
        f"driver 580.159.03 drives {T4}",
    ]


def test_a_branch_alone_is_its_newest_release_for_the_open_modules_list(matrix):
    # "550" is the 550 branch's newest release, which lists the H200 (from 550.90.07 on), not 550.0.
    assert ("gpu_release", "ok", f"driver 550's open kernel modules list {H200}") in checks(
        matrix, {"driver": "550", "gpu": "NVIDIA H200"}
    )


@pytest.mark.parametrize(
    ("driver", "gpu", "label", "fix"),
    [
        # A branch that never listed it, with two later branches that do: both named.
        ("545.29.06", "NVIDIA H200", H200, "use 550.90.07 (branch 550), 555.42.06 (branch 555)"),
        # Its own branch lists it later, and no later branch is in the row: the upgrade alone.
        (
            "570.86.15",
            "NVIDIA GB200",
            "NVIDIA GB200 (Blackwell, compute capability 10.0, sm_100)",
            "upgrade to 570.123.01 or newer",
        ),
    ],
)
def test_the_open_modules_list_messages_whole(matrix, driver, gpu, label, fix):
    message = (
        f"driver {driver}'s open kernel modules do not list {label} among the GPUs they support "
        f"(NVIDIA/open-gpu-kernel-modules at that release): {fix}"
    )
    assert ("gpu_release", "warning", message) in checks(matrix, {"driver": driver, "gpu": gpu})


def test_each_library_is_judged_after_the_one_before_it_passed(matrix):
    found = checks(matrix, {"driver": "580.159.03", "cudnn": "9.10.2", "nccl": "2.30.7", "gpu": "Tesla T4"})
    assert [(rule, status, m) for rule, status, m in found if rule in ("gpu_cudnn", "gpu_nccl")] == [
        ("gpu_cudnn", "ok", f"cuDNN 9.10.2 carries kernels for {T4}"),
        ("gpu_nccl", "ok", f"NCCL 2.30.7 carries kernels for {T4}"),
    ]


def test_no_library_build_in_the_matrix_that_carries_the_gpu_says_so(matrix):
    # NCCL 2.28.3 on: no Maxwell code; no NCCL row in the matrix has it, so there is no version to offer.
    (nccl,) = [c for c in checks(matrix, {"driver": "580.159.03", "nccl": "2.28.3", "gpu": "Tesla M10"})
               if c[0] == "gpu_nccl"]  # fmt: skip
    assert nccl[1] == "violation"
    assert nccl[2].startswith("NCCL 2.28.3 carries no kernels for Tesla M10 (Maxwell, compute capability 5.0, sm_50)")


@pytest.mark.parametrize(
    ("archs", "cc", "runs"),
    [
        # PTX for sm_90 cannot run on sm_80: only the last target's PTX is in the build, and it runs forward only.
        ("5.0;6.0;9.0+PTX", "8.0", False),
        ("5.0;6.0;7.0+PTX", "8.0", True),  # sm_70's PTX, JIT-compiled for sm_80
        ("5.0;6.0;7.0", "8.0", False),  # no PTX: no code for major 8
        ("8.0;9.0+PTX", "9.0", True),  # binary code for the last target, its +PTX taken off
        ("8.0;9.0+PTX", "9.2", True),
    ],
)
def test_ptx_runs_forward_from_the_last_target_only(archs, cc, runs):
    assert carries_code(archs, cc) is runs
