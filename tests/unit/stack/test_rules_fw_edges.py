"""The framework rules (module_utils/_compat/rules_fw) at their edges: several frameworks on one host (each judged,
none lost to the one before it, whatever that one's verdict), ROCm builds, where a CUDA major came from, whole
messages for the libraries a wheel loads, and a row that says the framework loads the system's libraries."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine as rules
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs as si
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import rules_fw

TORCH_291 = (
    "framework_driver",
    "ok",
    "torch 2.9.1 (cu128 wheel, CUDA from PyPI default cu128 for torch 2.9) is fully supported by driver 580.95.05 "
    "(needs >= 570.26)",
)
TORCH_291_LIBS = ("framework_libraries", "ok", "torch 2.9.1 (cu128) loads its bundled cudnn 9.10.2.21, nccl 2.27.5")


def checks(matrix, versions, frameworks):
    """The framework checks, in order, for a host with these frameworks (as the stack scan finds them: several)."""
    stack = si.from_versions(versions)
    stack["frameworks"] = [si.from_versions({"framework": fw})["frameworks"][0] for fw in frameworks]
    found = rules.evaluate(matrix, stack, today="2026-12-02")
    return [(c["rule"], c["status"], c["message"]) for c in found if c["rule"].startswith("framework")]


@pytest.mark.parametrize(
    ("first", "its_checks"),
    [
        (
            "tensorflow==2.20.0",
            [
                (
                    "framework_driver",
                    "ok",
                    "tensorflow 2.20.0 (built for CUDA 12.5) is fully supported by driver 580.95.05 (needs >= "
                    "555.42.02)",
                )
            ],
        ),
        (
            "torch==2.5.1+rocm6.2",
            [("framework_cuda", "ok", "torch 2.5.1+rocm6.2 is a build without CUDA: no driver needed")],
        ),
        (
            "torch==1.13.1",
            [
                (
                    "framework_cuda",
                    "unknown",
                    "torch 1.13.1 is not in the matrix, so its CUDA variant and bundled libraries are unknown; give "
                    "framework.cuda or add a row",
                )
            ],
        ),
        (
            "jax==0.12.0",
            [
                (
                    "framework_cuda",
                    "unknown",
                    "jax 0.12.0: a plain `pip install jax` has no CUDA; give framework.cuda as the CUDA major of the "
                    "build installed (jax[cuda12], jax[cuda13])",
                )
            ],
        ),
        (
            {"name": "torch", "version": "2.7.1", "cuda": "12.4"},
            [
                (
                    "framework_cuda",
                    "violation",
                    "torch 2.7.1 has no cu124 wheel (variants: cu118, cu126, cu128): choose one of those CUDA variants",
                )
            ],
        ),
    ],
)
def test_a_framework_after_another_is_judged_whatever_the_first_ones_verdict(matrix, first, its_checks):
    assert checks(matrix, {"driver": "580.95.05"}, [first, "torch==2.9.1"]) == [*its_checks, TORCH_291, TORCH_291_LIBS]


def test_the_system_libraries_a_bundling_wheel_does_not_use_are_named(matrix):
    found = checks(matrix, {"driver": "580.95.05", "cudnn": "9.8.0", "nccl": "2.26.2"}, ["torch==2.9.1"])
    assert found[-1] == (
        "framework_libraries",
        "ok",
        "torch 2.9.1 (cu128) loads its bundled cudnn 9.10.2.21, nccl 2.27.5; the system's (cudnn 9.8.0, nccl 2.26.2) "
        "is not used by it",
    )


def test_jax_loads_the_wheels_pip_installs_above_its_plugins_floors(matrix):
    found = checks(matrix, {"driver": "580.95.05", "cudnn": "9.8.0"}, ["jax[cuda12]==0.12.0"])
    assert found[-1] == (
        "framework_libraries",
        "ok",
        "jax 0.12.0 (cu129) loads the nvidia-* wheels pip installs with it (pip's newest when the row was read: cudnn "
        "9.28.0.42, nccl 2.32.3; its plugin requires cudnn <10.0,>=9.10.2.21, nccl >=2.18.1); the system's (cudnn "
        "9.8.0) is not used by it",
    )


def test_tensorflow_judges_cudnn_without_a_system_cuda_and_names_an_unknown_release(matrix):
    assert checks(matrix, {"driver": "580.95.05", "cudnn": "9.8.0"}, ["tensorflow==2.20.0"])[0] == (
        "framework_libraries",
        "ok",
        "tensorflow 2.20.0 built against cudnn 9.3; system cudnn 9.8.0",
    )
    assert checks(matrix, {"driver": "580.95.05"}, ["tensorflow==2.99.0"]) == [
        ("framework_cuda", "unknown", "tensorflow 2.99.0 is not in the matrix (tested build configurations)")
    ]


def test_where_a_cuda_major_came_from_is_kept_beside_the_build_it_means(matrix):
    jax = {"name": "jax", "version": "0.12.0", "cuda": "12"}
    assert rules_fw.framework_cuda(matrix, jax) == ("12.9", "jax[cuda12]")
    found = dict(jax, cuda_source="found on the host")
    assert rules_fw.framework_cuda(matrix, found) == ("12.9", "found on the host, jax[cuda12]")
    # A full CUDA version is taken as given, with where it came from.
    assert rules_fw.framework_cuda(matrix, {"name": "torch", "version": "2.9.1", "cuda": "12.6"}) == ("12.6", "given")


@pytest.mark.parametrize("version", ["2.5.1+rocm6.2", "2.9.1+cpu"])
def test_builds_without_cuda(matrix, version):
    assert rules_fw.framework_cuda(matrix, {"name": "torch", "version": version}) == (None, "a build without CUDA")


def test_a_row_that_loads_the_system_libraries_says_nothing_of_bundles():
    fw = {"name": "torch", "version": "2.9.1", "bundles": {}}
    row = {"bundles": {"cu128": {"cudnn": "9.10.2.21"}}, "uses_system": True, "id": "x", "source": "s", "read": "d"}
    assert rules_fw._bundled(row, fw, "cu128", {"cudnn": "9.8.0"}) == []  # pylint: disable=protected-access
    assert rules_fw._bundled(dict(row, uses_system=False), fw, "cu128", {}) != []  # pylint: disable=protected-access


def test_tensorflow_after_another_framework_keeps_both(matrix):
    found = checks(matrix, {"driver": "580.95.05"}, ["torch==2.9.1", "tensorflow==2.20.0"])
    assert found == [
        TORCH_291,
        TORCH_291_LIBS,
        (
            "framework_driver",
            "ok",
            "tensorflow 2.20.0 (built for CUDA 12.5) is fully supported by driver 580.95.05 (needs >= 555.42.02)",
        ),
    ]


def test_horovod_against_each_framework_on_the_host(matrix):
    stack = si.from_versions({"horovod": "0.28.1"})
    frameworks = ["jax[cuda12]==0.12.0", "torch==2.0.1+cu118", "tensorflow==2.20.0", "tensorflow==2.12.0"]
    stack["frameworks"] = [si.from_versions({"framework": fw})["frameworks"][0] for fw in frameworks]
    found = [(c["status"], c["message"]) for c in rules.evaluate(matrix, stack, today="2026-12-02")
             if c["rule"] == "horovod_framework"]  # fmt: skip
    assert found == [
        ("unknown", "Horovod 0.28.1 with jax is not in the matrix"),
        # The local version (+cu118) is not part of what the row's bounds compare.
        ("ok", "Horovod 0.28.1 is tested with torch 2.0.1+cu118"),
        ("unknown", "Horovod 0.28.1 is untested with tensorflow 2.20.0 (tested: <2.13)"),
        ("ok", "Horovod 0.28.1 is tested with tensorflow 2.12.0"),
    ]
