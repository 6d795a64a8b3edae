"""Version parsing, pins and the integer encodings, with version strings as NVIDIA's headers and tools print them."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (8902, "8.9.2"),  # cuDNN 8: major*1000 + minor*100 + patch (cudnn_version.h of 8.9.2)
        (8907, "8.9.7"),
        (7605, "7.6.5"),
        (90000, "9.0.0"),  # the first code of the new encoding (not "90.0.0")
        (90100, "9.1.0"),  # cuDNN 9: major*10000 + minor*100 + patch
        (90600, "9.6.0"),
        (91000, "9.10.0"),  # minor 10 only fits the new encoding
        (91002, "9.10.2"),
    ],
)
def test_cudnn_code(code, expected):
    assert v.cudnn_from_code(code) == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (2804, "2.8.4"),  # before 2.9: major*1000 + minor*100 + patch
        (2708, "2.7.8"),
        (20900, "2.9.0"),  # the first code of the new encoding
        (20903, "2.9.3"),  # from 2.9: major*10000 + minor*100 + patch
        (21803, "2.18.3"),
        (21903, "2.19.3"),
        (22602, "2.26.2"),
    ],
)
def test_nccl_code(code, expected):
    assert v.nccl_from_code(code) == expected


def test_cuda_driver_code():
    assert v.cuda_from_code(12080) == "12.8"
    assert v.cuda_from_code(13000) == "13.0"
    assert v.cuda_from_code(11040) == "11.4"


@pytest.mark.parametrize(
    ("a", "b", "cmp"),
    [
        ("570.133.20", "570.26", 1),  # three parts vs two: 133 > 26
        ("535.54", "535.54.03", -1),  # a two-part driver version is older than its .03 release
        ("12.8", "12.8.0", 0),
        ("2.7.1+cu128", "2.7.1", 0),
        ("9.10.2.21", "9.8.0", 1),  # numeric, not lexical
    ],
)
def test_compare(a, b, cmp):
    assert v.compare(a, b) == cmp


def test_compare_refuses_nonsense():
    with pytest.raises(ValueError, match="cannot compare"):
        v.compare("latest", "1.0")


@pytest.mark.parametrize(
    ("spec", "actual", "ok"),
    [
        ("570.133.20", "570.133.20", True),
        ("570.133.20", "570.133.2", False),
        ("570", "570.133.20", True),  # a branch pin
        ("570", "5700.1", False),  # only on dot boundaries
        ("57", "570.133.20", False),
        (">=12.4,<13", "12.8", True),
        (">=12.4,<13", "13.0", False),
        (">=12.4,<13", "12.2.140", False),
        ("==9", "9.8.0", True),
        ("!=9", "8.9.7", True),
        (">9.8", "9.8.0", False),
        ("<=2.7", "2.7.1", False),  # 2.7.1 > 2.7.0
        ("", "anything", True),
        ("570", None, False),
    ],
)
def test_matches(spec, actual, ok):
    assert v.matches(spec, actual) is ok


def test_bad_spec_names_the_fix():
    assert "use 570.133.20, 570 or >=12.4,<13" in v.valid_spec("~>12")
    assert v.valid_spec(">=12.4,<13") is None


@pytest.mark.parametrize(
    ("tag", "cuda"),
    [("cu128", "12.8"), ("2.7.1+cu126", "12.6"), ("cu118", "11.8"), ("cu130", "13.0"), ("2.13.0+cpu", None)],
)
def test_cuda_from_variant(tag, cuda):
    assert v.cuda_from_variant(tag) == cuda


def test_variant_from_cuda():
    assert v.variant_from_cuda("12.8") == "cu128"
    assert v.variant_from_cuda("12.8.93") == "cu128"
    assert v.variant_from_cuda("13") == "cu130"


@pytest.mark.parametrize(
    ("raw", "upstream", "build"),
    [
        ("570.133.20-1", "570.133.20", None),  # NVIDIA's nvidia-open / cuda-drivers
        ("2.26.2-1+cuda12.8", "2.26.2", "12.8"),  # NVIDIA's libnccl2
        ("9.8.0.87-1", "9.8.0.87", None),  # libcudnn9-cuda-12
        ("8.9.7.29-1+cuda12.2", "8.9.7.29", "12.2"),  # libcudnn8
        ("11.8.89~11.8.0-5~deb12u1", "11.8.89", None),  # Debian's nvidia-cuda-toolkit
        ("535.216.03-1~deb12u1", "535.216.03", None),  # Debian's nvidia-driver
        ("1:1.17.5-1", "1.17.5", None),  # an epoch
    ],
)
def test_package_versions(raw, upstream, build):
    assert v.package_version(raw) == upstream
    assert v.package_cuda_build(raw) == build


# Boundaries and second branches (make mutation): each comparison at its edge, on both sides.
@pytest.mark.parametrize(
    ("code", "expected"),
    [(90000, "9.0.0"), (89999, "89.9.99"), (8902, "8.9.2"), (91002, "9.10.2"), ("90100", "9.1.0")],
)
def test_cudnn_code_at_the_format_change(code, expected):
    """cuDNN 9.0.0 is 90000, the first code of the new packing; a code just below it is the old packing's."""
    assert v.cudnn_from_code(code) == expected


@pytest.mark.parametrize(
    ("code", "expected"), [(20900, "2.9.0"), (20899, "20.8.99"), (2804, "2.8.4"), (22803, "2.28.3")]
)
def test_nccl_code_at_the_format_change(code, expected):
    assert v.nccl_from_code(code) == expected


@pytest.mark.parametrize(
    ("spec", "actual", "ok"),
    [
        (">=12.4", "12.4", True),
        (">=12.4", "12.3.9", False),
        ("<=12.4", "12.4", True),
        ("<=12.4", "12.4.1", False),
        (">12.4", "12.4", False),
        (">12.4", "12.4.1", True),
        ("<13", "13", False),
        ("<13", "12.9", True),
        ("570.", "570.133.20", True),  # a trailing dot is the branch
        ("570,>=570.2", "570.1", False),  # a branch that matches does not end the check
        ("570,>=570.2", "570.2", True),
        ("==12.8", "12.8.1", True),
        ("!=12.8", "12.8.1", False),
        ("*", "anything", True),
        (" ", "12.8", True),
        (None, None, True),
        ("12.8", "unknown", False),
    ],
)
def test_matches_at_each_edge(spec, actual, ok):
    assert v.matches(spec, actual) is ok


@pytest.mark.parametrize(
    ("version", "parsed", "xy", "major"),
    [
        (" v12.8.93 ", (12, 8, 93), "12.8", 12),
        ("V570", (570,), "570", 570),
        ("unknown", None, None, None),
        (None, None, None, None),
    ],
)
def test_parse_major_minor_and_major(version, parsed, xy, major):
    assert (v.parse(version), v.major_minor(version), v.major(version)) == (parsed, xy, major)


def test_prefix_match_needs_both_sides():
    assert v.prefix_match(None, "570.1") is False
    assert v.prefix_match("570", None) is False
    assert v.prefix_match("570", "5700.1") is False


def test_compare_names_both_values_when_it_cannot():
    with pytest.raises(ValueError, match=r"cannot compare versions 'x' and '12.8'"):
        v.compare("x", "12.8")


@pytest.mark.parametrize(
    ("raw", "upstream"),
    [("-1", None), ("", None), (None, None), ("2:1.2-1", "1.2"), ("1:9.8.0.87-1", "9.8.0.87")],
)
def test_package_version_edges(raw, upstream):
    assert v.package_version(raw) == upstream
