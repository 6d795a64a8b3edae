"""The package engine's decisions (module_utils/_node/apt/plan.py) on recorded apt-cache and dpkg output.

madison-debian-nonfree.txt is `apt-cache madison` against Debian's real bookworm and trixie archives (all components);
madison-mirror-debian12.txt and dpkg-*.txt were recorded on a sandbox node against sandbox/mirror.
"""

import itertools
import subprocess
from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt import plan as ap

FIXTURES = Path(__file__).parent / "fixtures"

# Versions as NVIDIA's and Debian's repositories number them, plus the edge cases of deb-version(7).
VERSIONS = [
    "570.133.20-1", "570.133.20-2", "570.172.08-1", "570.86.15-1", "580.95.05-1", "550.163.01-2",
    "550.163.01-1", "535.261.03-1", "535.171.04-1~deb12u1", "12.8.93-1", "12.8.1-1", "12.10.0-1",
    "2.26.2-1+cuda12.8", "2.26.2-1+cuda12.4", "2.26.2-1+cuda13.0", "9.8.0.87-1", "9.10.2.21-1",
    "8.9.7.29-1+cuda12.2", "1:1.0-1", "1.0~rc1-1", "1.0-1", "1.0", "20220217+3~deb12u1", "20240109+1",
]  # fmt: skip


def dpkg_order(a, b):
    """What dpkg itself says (the real part): -1, 0 or 1."""
    for answer, op in ((0, "eq"), (-1, "lt")):
        if subprocess.run(["dpkg", "--compare-versions", a, op, b], check=False).returncode == 0:
            return answer
    return 1


def test_version_order_is_dpkgs():
    pairs = list(itertools.combinations(VERSIONS, 2))
    wrong = [(a, b) for a, b in pairs if ap.compare_versions(a, b) != dpkg_order(a, b)]
    assert not wrong, wrong
    assert len(pairs) > 250


def test_newest_first_orders_numerically_not_as_text():
    assert ap.newest_first(["570.86.15-1", "570.172.08-1", "570.133.20-1", "570.86.15-1"]) == [
        "570.172.08-1",
        "570.133.20-1",
        "570.86.15-1",
    ]


def test_madison_of_debians_archive():
    rows = ap.parse_madison((FIXTURES / "madison-debian-nonfree.txt").read_text())
    assert ("nvidia-persistenced", "535.171.04-1~deb12u1", "http://deb.debian.org/debian") in rows
    offers = ap.offers_by_package(rows)
    assert offers["libnvidia-ml1"] == ["550.163.01-2", "535.261.03-1"]
    assert ap.offers_by_package(rows, exclude_urls=["http://deb.debian.org/debian"]) == {}


def test_madison_of_the_mirror_keeps_only_the_named_repository():
    rows = ap.parse_madison((FIXTURES / "madison-mirror-debian12.txt").read_text())
    nvidia = [r for r in rows if "/compute/cuda/repos/" in r[2]]
    assert nvidia and len(nvidia) < len(rows)  # Debian's own libnvidia-ml1 is listed too
    offers = ap.offers_by_package(rows, include_urls=[nvidia[0][2]])
    assert all(not v.endswith("~deb12u1") for v in offers["libnvidia-ml1"])
    assert offers["libnvidia-ml1"][0].startswith("580.")


@pytest.mark.parametrize(
    ("request_", "version", "revision", "expect"),
    [
        ("570", "570.133.20-1", "", True),
        ("570", "5700.1-1", "", False),
        ("570.133.20", "570.133.20-1", "", True),
        ("570.133.2", "570.133.20-1", "", False),
        ("570.133.20-1", "570.133.20-1", "", True),
        ("570.133.20-1", "570.133.20-2", "", False),
        ("12.8", "12.8.93-1", "", True),
        ("12.8", "12.80.1-1", "", False),
        ("9.8.0", "9.8.0.87-1", "", True),
        ("2.26.2", "2.26.2-1+cuda12.8", "*+cuda12.8", True),
        ("8.9.7", "8.9.7.29-1+cuda12.2", "*+cuda12.*", True),
        ("8.9.7", "8.9.7.29-1+cuda11.8", "*+cuda12.*", False),
        ("2.26.2", "2.26.2-1+cuda12.4", "*+cuda12.8", False),
        ("2.26.2", "2.26.2-1+cuda12.8", "*+cuda12.80", False),
    ],
)
def test_request_matches_on_dot_boundaries(request_, version, revision, expect):
    assert ap.matches(request_, version, revision) is expect


OFFERED = ["580.95.05-1", "570.172.08-1", "570.133.20-1", "570.124.06-1", "570.86.15-1"]


def test_branch_keeps_the_installed_version_while_offered():
    version, reason = ap.choose("570", OFFERED, installed="570.133.20-1")
    assert version == "570.133.20-1" and "kept" in reason
    assert ap.choose("570", OFFERED, installed="570.133.20-1", keep_installed=False)[0] == "570.172.08-1"
    # Installed from another branch: the newest of the requested branch.
    assert ap.choose("570", OFFERED, installed="580.95.05-1")[0] == "570.172.08-1"


def test_no_fit_names_what_is_offered():
    version, reason = ap.choose("575", OFFERED)
    assert version == "" and "580.95.05-1" in reason and "575" in reason


def installed(*rows):
    """parse_dpkg input lines: (name, version, abbrev, source)."""
    return ap.parse_dpkg("".join("\t".join(r) + "\n" for r in rows))


def test_dpkg_status_abbreviations():
    have = ap.parse_dpkg((FIXTURES / "dpkg-after-failed-dkms.txt").read_text())
    broken = [n for n, p in have.items() if p["present"] and not p["complete"]]
    assert broken, "the recorded failure left a half-configured package"
    assert all(have[n]["held"] for n in have if n.startswith("nvidia-kernel-open-dkms"))
    assert have["libnvidia-ml1"]["source"] == "nvidia-graphics-drivers"
    gone = installed(("nvidia-fabricmanager-570", "570.133.20-1", "rc ", "fabricmanager"))
    assert not gone["nvidia-fabricmanager-570"]["present"]


SRC = ["src:nvidia-graphics-drivers"]


def test_upgrade_moves_every_installed_part_of_the_set_together():
    have = installed(
        ("nvidia-driver-cuda", "570.133.20-1", "hi ", "nvidia-graphics-drivers"),
        ("libcuda1", "570.133.20-1", "hi ", "nvidia-graphics-drivers"),
        ("firmware-nvidia-gsp", "570.133.20-1", "hi ", "nvidia-graphics-drivers"),
        ("libnvidia-ptxjitcompiler1", "570.133.20-1", "hi ", "nvidia-graphics-drivers"),
        ("nvidia-support", "20220217+3~deb12u1", "ii ", "nvidia-support"),
    )
    offers = {n: ["570.172.08-1", "570.133.20-1"] for n in have if n != "nvidia-support"}
    decided = ap.plan(["nvidia-driver-cuda"], "570.172.08", offers, have, members_of=SRC)
    assert decided["version"] == "570.172.08-1"
    assert sorted(decided["install"]) == sorted(f"{n}=570.172.08-1" for n in offers)
    assert "nvidia-support=" not in " ".join(decided["install"])  # Debian's contrib package is not ours


def test_converged_set_plans_nothing():
    have = installed(
        ("nvidia-driver-cuda", "570.133.20-1", "hi ", "nvidia-graphics-drivers"),
        ("libcuda1", "570.133.20-1", "hi ", "nvidia-graphics-drivers"),
    )
    offers = {n: ["580.95.05-1", "570.133.20-1"] for n in have}
    decided = ap.plan(["nvidia-driver-cuda"], "570", offers, have, members_of=SRC)
    assert (decided["install"], decided["remove"], decided["missing"]) == ([], [], [])
    assert ap.to_hold(have, ["nvidia-driver-cuda"], SRC) == []


def test_half_configured_package_is_installed_again():
    have = installed(("nvidia-kernel-open-dkms", "570.86.15-1", "hF ", "nvidia-open-gpu-kernel-modules"))
    decided = ap.plan(["nvidia-kernel-open-dkms"], "570.86.15", {"nvidia-kernel-open-dkms": ["570.86.15-1"]}, have)
    assert decided["install"] == ["nvidia-kernel-open-dkms=570.86.15-1"]


def test_other_flavour_and_pinning_package_are_removed_in_the_same_transaction():
    have = installed(
        ("nvidia-kernel-dkms", "570.133.20-1", "hi ", "nvidia-graphics-drivers"),
        ("nvidia-driver-pinning-575", "575.57.08-1", "ii ", "nvidia-driver-pinning-575"),
        ("nvidia-kernel-open-dkms", "570.133.20-1", "rc ", "nvidia-open-gpu-kernel-modules"),
    )
    offers = {"nvidia-kernel-open-dkms": ["570.133.20-1"], "nvidia-driver-cuda": ["570.133.20-1"]}
    decided = ap.plan(
        ["nvidia-driver-cuda", "nvidia-kernel-open-dkms"],
        "570.133.20",
        offers,
        have,
        members_of=SRC,
        remove=["nvidia-kernel-dkms", "nvidia-driver-pinning-*"],
    )
    assert decided["remove"] == ["nvidia-driver-pinning-575", "nvidia-kernel-dkms"]
    assert decided["install"] == ["nvidia-driver-cuda=570.133.20-1", "nvidia-kernel-open-dkms=570.133.20-1"]


# cudnn's selectors (roles/cudnn/vars/main.yml): another cuDNN major, or this major built for another CUDA major.
CUDNN_OTHER = r"re:^(lib)?cudnn(?!9(?![0-9]))[0-9]+|^(lib)?cudnn9(-[a-z0-9]+)*-cuda-(?!12$)[0-9]+$"


def test_a_regular_expression_removes_the_other_builds_only():
    have = installed(
        ("libcudnn8", "8.9.7.29-1+cuda12.2", "hi ", "cudnn"),
        ("libcudnn8-dev", "8.9.7.29-1+cuda12.2", "hi ", "cudnn"),
        ("libcudnn9-cuda-11", "9.8.0.87-1", "ii ", "cudnn9"),
        ("libcudnn9-cuda-12", "9.8.0.87-1", "hi ", "cudnn9"),
        ("libcudnn9-samples", "9.8.0.87-1", "ii ", "cudnn9"),
        ("cudnn", "9.8.0-1", "ii ", "cudnn-meta"),
    )
    decided = ap.plan(
        ["libcudnn9-cuda-12"],
        "9.8.0",
        {"libcudnn9-cuda-12": ["9.8.0.87-1"]},
        have,
        remove=[CUDNN_OTHER, "cudnn9-cuda-12"],
    )
    assert decided["remove"] == ["libcudnn8", "libcudnn8-dev", "libcudnn9-cuda-11"]
    assert decided["install"] == []  # the build wanted is installed


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("pin", ["re:nvidia-.*"], "not a package glob or src:<source package>"),  # apt's files take no regex
        ("remove", ["re:(cudnn"], "not a regular expression"),
    ],
)
def test_regular_expressions_only_where_nothing_is_written_for_apt(key, value, words):
    problem = ap.argument_problem({"packages": ["libcudnn9-cuda-12"], key: value})
    assert problem.startswith(key) and words in problem
    assert ap.argument_problem({"packages": ["libcudnn9-cuda-12"], "remove": [CUDNN_OTHER]}) is None


def test_part_missing_at_the_chosen_version_is_reported_not_guessed():
    offers = {"nvidia-driver-cuda": ["570.133.20-1"], "nvidia-fabricmanager-570": ["570.124.06-1"]}
    decided = ap.plan(["nvidia-driver-cuda", "nvidia-fabricmanager-570"], "570.133.20", offers, {})
    assert decided["missing"] == ["nvidia-fabricmanager-570: not offered at 570.133.20-1"]


def test_series_gives_each_component_its_own_number():
    offers = {
        "cuda-toolkit-12-8": ["12.8.1-1", "12.8.0-1"],
        "cuda-nvcc-12-8": ["12.8.93-1", "12.8.61-1"],
    }
    decided = ap.plan(["cuda-toolkit-12-8", "cuda-nvcc-12-8"], "12.8.0", offers, {}, same_version=False, series="12.8")
    assert decided["versions"] == {"cuda-toolkit-12-8": "12.8.0-1", "cuda-nvcc-12-8": "12.8.93-1"}


def test_pin_text_is_nvidias_source_pin_with_the_origin_excluded():
    text = ap.pin_text("nvidia-driver", SRC, "570.133.20-1", ["Debian"])
    stanzas = [s for s in text.split("\n\n") if "Package:" in s]
    assert stanzas[0].splitlines()[-3:] == [
        "Package: src:nvidia-graphics-drivers",
        "Pin: release o=Debian",
        "Pin-Priority: -1",
    ]
    assert stanzas[1].splitlines() == [
        "Package: src:nvidia-graphics-drivers",
        "Pin: version 570.133.20-1",
        "Pin-Priority: 1001",  # above NVIDIA's pinning package's 1000 (test_package_engine shows why)
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("name", "nvidia\ndriver"),
        ("packages", ["libnccl2 libnccl-dev"]),
        ("version", "570.133.20\nTrusted: yes"),
        ("version", ""),
        ("pin", ["nvidia-*\nPin-Priority: 1001"]),
        ("exclude_origins", ["Debian\nPackage: *"]),
        ("revision", "+cuda 12.8"),
        ("remove", ["*; rm -rf /"]),
    ],
)
def test_arguments_that_would_reach_a_file_or_argv_are_refused(key, value):
    params = {
        "name": "nvidia-driver",
        "packages": ["nvidia-driver-cuda"],
        "reference": None,
        "version": "570",
        "series": None,
        "pin_version": None,
        "revision": "",
        "pin": [],
        "members": [],
        "remove": [],
        "exclude_origins": [],
    }
    assert ap.argument_problem(params) is None
    params[key] = value
    problem = ap.argument_problem(params)
    assert problem and problem.startswith(key)


def test_apt_errors_of_a_recorded_failure():
    errors = ap.apt_errors((FIXTURES / "apt-failed-dkms.txt").read_text())
    assert any("Bad return status" in e for e in errors)
    assert any(e.startswith("E: ") for e in errors)
