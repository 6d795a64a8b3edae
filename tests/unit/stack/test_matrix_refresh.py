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


# --- NVIDIA's security bulletins (CSAF 2.0, tests/fixtures/security/, pruned from NVIDIA/product-security) --------
SECURITY = ROOT / "tests" / "fixtures" / "security"


def test_the_bulletin_rows_are_what_the_recorded_csaf_files_say():
    mr = tool()
    assert mr.security_differences(SECURITY) == []
    may_2026 = mr.bulletin_facts(json.loads((SECURITY / "5821.json").read_text()))
    assert may_2026["driver"] == {
        "fixed_in": {"595": "595.71.05", "580": "580.159.03", "535": "535.309.01"},
        "cvss": 8.8,
        "cves": may_2026["driver"]["cves"],
    }
    assert "CVE-2026-24187" in may_2026["driver"]["cves"] and may_2026["date"] == "2026-05-19"
    june_2026 = mr.bulletin_facts(json.loads((SECURITY / "5850.json").read_text()))
    assert (june_2026["driver"], june_2026["toolkit"]) == (None, {"CVE-2026-24260": "1.19.1"})
    # September 2026: four Linux branches, no R535 (ended) and none for R620; 80 of its 114 CVEs have Tesla rows.
    september = mr.bulletin_facts(json.loads((SECURITY / "5861.json").read_text()))
    assert september["driver"]["fixed_in"] == {"580": "580.178.04", "595": "595.91.07", "610": "610.57.04",
                                               "615": "615.71.09"}  # fmt: skip
    assert (len(september["driver"]["cves"]), september["driver"]["cvss"], september["date"]) == (80, 7.8, "2026-09-30")


def test_a_bulletin_that_drifted_or_is_missing_is_named(tmp_path):
    mr = tool()
    for f in SECURITY.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    doc = json.loads((SECURITY / "5821.json").read_text())
    for branch in doc["product_tree"]["branches"]:
        for node in branch["branches"]:
            if node["product"]["name"] == "580.159.03":
                node["product"]["name"] = "580.159.04"  # a revised bulletin
    (tmp_path / "5821.json").write_text(json.dumps(doc))
    new = copy.deepcopy(doc)
    new["document"]["tracking"].update(id="5999", initial_release_date="2026-11-20T00:00:00Z")
    new["document"]["title"] = "Security Bulletin: GPU Display Driver - November 2026"
    (tmp_path / "5999.json").write_text(json.dumps(new))
    toolkit = json.loads((SECURITY / "5850.json").read_text())
    for branch in toolkit["product_tree"]["branches"]:
        for node in branch["branches"]:
            node["product"]["name"] = node["product"]["name"].replace("1.19.1", "1.19.2")
    (tmp_path / "5850.json").write_text(json.dumps(toolkit))
    meta = json.loads((SECURITY / "index.json").read_text())
    (tmp_path / "index.json").write_text(json.dumps(dict(meta, bulletins=[*meta["bulletins"], "5999"])))
    found = mr.security_differences(tmp_path)
    assert found[0].startswith("driver_cve driver-bulletin-5821: fixed_in {'595': '595.71.05', '580': '580.159.03'")
    assert "the bulletin says {'595': '595.71.05', '580': '580.159.04', '535': '535.309.01'}" in found[0]
    assert found[1] == "toolkit_cve ctk-cve-2026-24260: CVE-2026-24260 fixed in 1.19.1, the bulletin says 1.19.2"
    assert found[2] == (
        "bulletin 5999 (Security Bulletin: GPU Display Driver - November 2026, 2026-11-20) fixes the data-center "
        "driver: no driver_cve row"
    )


def test_pruning_keeps_what_is_read_and_drops_the_rest():
    """A CSAF file in NVIDIA's shape with Windows, GeForce and vGPU rows beside the Linux data-center ones: the pruned
    file says the same for the matrix, without the rest."""
    mr = tool()

    def version(arch, line, name, pid):
        return {
            "category": "architecture",
            "name": arch,
            "branches": [{"category": "product_version", "name": line, "product": {"name": name, "product_id": pid}}],
        }

    full = {
        "document": {
            "title": "Security Bulletin: GPU Display Driver - May 2026",
            "category": "csaf_security_advisory",
            "tracking": {
                "id": "5821",
                "initial_release_date": "2026-05-19T00:00:00Z",
                "version": "3.0.0",
                "revision_history": [{"number": "1.0.0"}],
            },
        },
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "NVIDIA",
                    "branches": [
                        version("Linux(R580)", "Tesla", "580.159.03", "linuxr580_tesla_580_159_03"),
                        version("Windows(R580)", "Tesla", "582.41", "windowsr580_tesla_582_41"),
                        version("Linux(R580)", "GeForce", "580.159.03", "linuxr580_geforce_580_159_03"),
                        version(
                            "Linux(R580 vGPU 19)", "Guest driver", "580.159.03(vGPU 19.5)", "linuxr580vgpu19_guest"
                        ),
                    ],
                }
            ]
        },
        "vulnerabilities": [
            {
                "cve": "CVE-2026-24187",
                "cwe": {"id": "CWE-416"},
                "notes": [{"text": "..."}],
                "product_status": {"fixed": ["linuxr580_tesla_580_159_03", "windowsr580_tesla_582_41"]},
                "scores": [
                    {
                        "cvss_v3": {"baseScore": 8.8, "vectorString": "CVSS:3.1/AV:L"},
                        "products": ["linuxr580_tesla_580_159_03"],
                    }
                ],
            },
            {
                "cve": "CVE-2026-24191",
                "product_status": {"fixed": ["windowsr580_tesla_582_41"]},
                "scores": [{"cvss_v3": {"baseScore": 9.1}, "products": ["windowsr580_tesla_582_41"]}],
            },
        ],
    }
    pruned = mr.prune_csaf(full)
    assert mr.bulletin_facts(pruned) == mr.bulletin_facts(full)
    assert mr.bulletin_facts(full)["driver"] == {
        "fixed_in": {"580": "580.159.03"},
        "cvss": 8.8,
        "cves": ["CVE-2026-24187"],
    }
    assert list(mr.csaf_products(pruned).values()) == [("Linux(R580)", "Tesla", "580.159.03")]
    assert [v["cve"] for v in pruned["vulnerabilities"]] == ["CVE-2026-24187"]  # the Windows-only one is dropped


# --- GPUs per release (tests/fixtures/gpus/open-gpu-modules.json, from NVIDIA/open-gpu-kernel-modules' tags) -------
GPUS = json.loads((ROOT / "tests" / "fixtures" / "gpus" / "open-gpu-modules.json").read_text())


def test_the_gpu_release_rows_are_what_the_recorded_readmes_give():
    mr = tool()
    assert mr.gpu_differences(GPUS) == []
    assert GPUS["tags"][0] == "515.48.07" and len(GPUS["tags"]) >= 190
    # The H200 (2335): in 550.40.65 (a side series) but not in 550.54.14-550.78; in every 550 from 550.90.07.
    assert "550.40.65" in GPUS["listed"]["2335"] and "550.54.15" not in GPUS["listed"]["2335"]


def test_since_is_the_first_release_after_which_a_branch_always_lists_the_gpu():
    mr = tool()
    tags = ["550.40.07", "550.40.65", "550.54.15", "550.90.07", "550.100", "555.42.02", "555.42.06", "560.28.03"]
    # Listed by a side series, then missing, then for good; 555's first release lacks it; 560 has it from its first.
    listing = ["550.40.65", "550.90.07", "550.100", "555.42.06", "560.28.03"]
    assert mr.since_from(tags, listing) == {"550": "550.90.07", "555": "555.42.06"}
    # Listed from the first release of its first branch on: that branch alone.
    assert mr.since_from(tags, tags) == {"550": "550.40.07"}
    # A branch that never lists it (545 between) is left out, so the rule reads it as "not listed".
    assert mr.since_from(["535.1", "535.2", "545.1", "550.1"], ["535.2", "550.1"]) == {"535": "535.2"}
    assert mr.since_from(tags, []) == {}


def test_a_gpu_row_that_drifted_is_named_and_the_table_is_read():
    mr = tool()
    changed = copy.deepcopy(GPUS)
    changed["listed"]["2335"] = [t for t in changed["listed"]["2335"] if t != "550.90.07"]
    (line,) = mr.gpu_differences(changed)
    assert line.startswith("gpu_release gpu-release-h200: since {'550': '550.90.07', '555': '555.42.06'}, the README")
    readme = "# x\n## Compatible GPUs\n| Product Name | PCI ID |\n| --- | --- |\n| NVIDIA H200 | 2335 10DE 18BE |\n" \
             "| Tesla T4 | 1eb8 |\n| not a row |\n"  # fmt: skip
    assert mr.readme_device_ids(readme) == {"2335", "1EB8"}
    assert mr.readme_device_ids("no table here") == set()
