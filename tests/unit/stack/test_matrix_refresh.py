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
