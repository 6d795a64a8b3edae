"""tools/matrix-refresh: the committed torch rows are what PyPI's recorded metadata (tests/fixtures/pypi/torch.json,
read with pip --report) gives, and the tool notices a row that drifted from it."""

import copy
import json
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "matrix-refresh"
RECORDED = json.loads((ROOT / "tests" / "fixtures" / "pypi" / "torch.json").read_text())


def tool():
    loader = SourceFileLoader("matrix_refresh", str(TOOL))
    module = module_from_spec(spec_from_loader("matrix_refresh", loader))
    loader.exec_module(module)
    return module


def test_the_committed_rows_match_the_recorded_metadata():
    proc = subprocess.run([sys.executable, str(TOOL), "check"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(RECORDED["releases"]) >= {"2.0.1", "2.7.1", "2.11.0", "2.15.0"}


def test_rows_from_both_metadata_forms():
    mr = tool()
    # torch 2.0.1: "nvidia-cuda-runtime-cu11 (==11.7.99)" in its day's form; 2.11.0: cuda-toolkit[...]==13.0.2.
    old, new = (mr.row_from(v, RECORDED["releases"][v]["requires"]) for v in ("2.0.1", "2.11.0"))
    assert old == {"id": "torch-2.0", "default": "cu117",
                   "bundles": {"cu117": {"cudnn": "8.5.0.96", "nccl": "2.14.3"}}}  # fmt: skip
    assert new == {"id": "torch-2.11", "default": "cu130",
                   "bundles": {"cu130": {"cudnn": "9.19.0.56", "nccl": "2.28.9"}}}  # fmt: skip


def test_a_drifted_row_is_reported():
    mr = tool()
    changed = copy.deepcopy(RECORDED)
    changed["releases"]["2.8.0"]["requires"] = [
        r.replace("nvidia-nccl-cu12==2.27.3", "nvidia-nccl-cu12==2.27.4")
        for r in changed["releases"]["2.8.0"]["requires"]
    ]
    assert mr.differences(changed) == [
        "torch-2.8: bundles.cu128 {'cudnn': '9.10.2.21', 'nccl': '2.27.3'} but PyPI 2.8.0 requires "
        "{'cudnn': '9.10.2.21', 'nccl': '2.27.4'}"
    ]


def test_tensorflow_rows_are_what_its_and_cuda_extra_requires():
    """tensorflow[and-cuda] pins exactly up to 2.17 and gives ranges later; both read as the lowest allowed."""
    recorded = json.loads((ROOT / "tests" / "fixtures" / "pypi" / "tensorflow.json").read_text())
    assert {"2.14.1", "2.17.1", "2.21.0"} <= set(recorded["releases"])
    mr = tool()
    assert mr.tensorflow_differences(recorded) == []
    changed = copy.deepcopy(recorded)
    changed["releases"]["2.21.0"]["requires"] = [
        r.replace(">=9.3.0.75", ">=9.5.0.1") for r in changed["releases"]["2.21.0"]["requires"]
    ]
    assert mr.tensorflow_differences(changed) == ["tf-2.21: cudnn 9.3 but PyPI 2.21.0[and-cuda] requires 9.5"]


def test_jax_rows_are_what_its_cuda_plugins_require():
    """jax-cuda12/13-plugin[with-cuda] give floors; a row's variant and bundles are pip's newest wheels above them."""
    recorded = json.loads((ROOT / "tests" / "fixtures" / "pypi" / "jax.json").read_text())
    assert {"0.4.38", "0.7.2", "0.12.0"} <= set(recorded["releases"])
    mr = tool()
    assert mr.jax_differences(recorded) == []
    old, new = (mr.jax_row_from(v, recorded["releases"][v], recorded["newest"]) for v in ("0.4.38", "0.12.0"))
    assert old["variants"] == ["cu129"] and old["floors"]["cu129"]["cudnn"] == "<10.0,>=9.1"
    assert new["variants"] == ["cu129", "cu135"] and new["extras"]["cu135"] == "jax[cuda13]"
    assert new["floors"]["cu135"] == {"cuda-runtime": ">=13.0.48", "cudnn": "<10.0,>=9.12.0.46", "nccl": ">=2.27.7"}
    # A new CUDA 13 runtime on PyPI moves the cuda13 variant: the committed rows no longer match.
    changed = copy.deepcopy(recorded)
    changed["newest"]["nvidia-cuda-runtime"] = "13.6.20"
    assert "jax-0.12: variants ['cu129', 'cu135'] but PyPI 0.12.0 gives ['cu129', 'cu136']" in mr.jax_differences(
        changed
    )


def test_arch_flags_read_from_the_wheel_hold_the_default_variants_rows():
    """record keeps the CUDA_ARCH_FLAGS of each PyPI wheel; check holds each default variant's wheel_archs row."""
    mr = tool()
    assert RECORDED["releases"]["2.0.1"]["archs"] == "sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86"
    assert RECORDED["releases"]["2.11.0"]["archs"] == "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"
    assert mr.arch_differences(RECORDED) == []
    assert mr.archs_from_flags("sm_75 sm_90 sm_120 compute_120") == "7.5;9.0;12.0+PTX"
    assert mr.archs_from_flags("sm_80 sm_90a compute_80") == "8.0;9.0"  # PTX of an older one is not "+PTX"
    changed = copy.deepcopy(RECORDED)
    changed["releases"]["2.11.0"]["archs"] += " compute_120"
    assert mr.arch_differences(changed) == [
        "torch-archs-2.11-cu130: archs 7.5;8.0;8.6;9.0;10.0;12.0 but the torch 2.11.0 cu130 wheel carries "
        "7.5;8.0;8.6;9.0;10.0;12.0+PTX"
    ]


def test_arch_flags_come_from_one_member_of_the_wheel(monkeypatch):
    """A wheel (zip) whose libtorch_python.so holds the flags: only byte ranges of it are asked for."""
    import io
    import zipfile

    body = io.BytesIO()
    with zipfile.ZipFile(body, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr("torch/__init__.py", "")
        wheel.writestr("torch/lib/libtorch_python.so", b"\0ELF..." + b"sm_75 sm_80 sm_90 sm_100 compute_100\0" * 2)
    blob = body.getvalue()
    index = {"releases": {"9.9.0": [{"filename": "torch-9.9.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                                     "url": "../../packages/t/torch-9.9.0.whl", "size": len(blob)}]}}  # fmt: skip
    asked = []

    class Answer(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def urlopen(request, timeout):
        if isinstance(request, str):
            return Answer(json.dumps(index).encode())
        assert request.full_url == "https://pypi.org/packages/t/torch-9.9.0.whl"
        start, end = map(int, request.headers["Range"].removeprefix("bytes=").split("-"))
        asked.append(end - start + 1)
        return Answer(blob[max(start, 0) : end + 1])

    mr = tool()
    monkeypatch.setattr(mr.urllib.request, "urlopen", urlopen)
    assert mr.wheel_arch_flags("9.9.0") == "sm_75 sm_80 sm_90 sm_100 compute_100"
    assert len(asked) == 4  # end of the zip, its directory, the member's header, the member
