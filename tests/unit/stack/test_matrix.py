"""The shipped matrix loads, every row cites a source and a date, and inventory rows override by id."""

import datetime
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx

MATRIX = Path(__file__).resolve().parents[3] / "data" / "compat_matrix.yml"


@pytest.fixture(scope="module")
def shipped():
    return yaml.safe_load(MATRIX.read_text())


def test_every_row_has_a_source_and_read_date(shipped):
    matrix = mx.build(shipped)
    assert len(matrix["rows"]) == len(shipped["rows"])  # ids are unique
    for row in matrix["rows"]:
        assert row["source"].strip(), row["id"]
        assert "http" in row["source"] or row["kind"] == "nccl", f"{row['id']} cites no URL"
        # Read this month (the re-read of December 2026), never in the future.
        assert "2026-12-01" <= row["read"] <= datetime.date.today().isoformat(), row["id"]


def test_the_matrix_says_its_date_and_no_row_is_newer(shipped):
    """as_of is the day the matrix was brought up to date: whoever adds a row read later moves it."""
    matrix = mx.build(shipped)
    assert matrix["as_of"] == shipped["as_of"] <= datetime.date.today().isoformat()
    assert max(row["read"] for row in matrix["rows"]) <= matrix["as_of"]
    with pytest.raises(mx.MatrixError, match="as_of 'December 2026': write the date"):
        mx.build(dict(shipped, as_of="December 2026"))
    assert mx.build({"rows": []})["as_of"] is None


def test_every_rule_kind_is_covered(shipped):
    kinds = set(mx.build(shipped)["by_kind"])
    assert kinds == set(mx.REQUIRED)


def test_table3_facts(shipped):
    matrix = mx.build(shipped)
    assert mx.cuda_min_driver(matrix, "12.8.1")["min_driver"] == "570.26"
    assert mx.cuda_min_driver(matrix, "13.0")["min_driver"] == "580.65.06"
    assert mx.cuda_min_driver(matrix, "12.2.140")["min_driver"] == "535.54.03"
    assert mx.branch_row(matrix, "570.133.20")["max_cuda"] == "12.8"
    assert mx.minor_compat(matrix, "12.8")["min_driver"] == "525.60.13"
    assert mx.framework_row(matrix, "torch", "2.7.1+cu128")["default"] == "cu126"


def test_extra_rows_add_and_override(shipped):
    extra = [
        {
            "id": "cuda-12.8",
            "kind": "cuda_driver",
            "cuda": "12.8",
            "min_driver": "570.124.06",
            "source": "site policy: 12.8 Update 1",
            "read": "2026-12-02",
        },
        {
            "id": "cuda-13.5",
            "kind": "cuda_driver",
            "cuda": "13.5",
            "min_driver": "620.1",
            "source": "x",
            "read": "2027",
        },
    ]
    matrix = mx.build(shipped, extra)
    assert mx.cuda_min_driver(matrix, "12.8")["min_driver"] == "570.124.06"
    assert mx.cuda_min_driver(matrix, "12.8")["read"] == "2026-12-02"
    assert mx.cuda_min_driver(matrix, "13.5")["min_driver"] == "620.1"
    assert len(matrix["rows"]) == len(shipped["rows"]) + 1


# A GPU Display Driver bulletin as a site adds one with gpufleet_compat_matrix_extra before the collection has it.
BULLETIN = {"id": "x", "kind": "driver_cve", "bulletin": "9999", "date": "2026-05-19", "cve": "CVE-2026-1", "cvss": 8.8,
            "what": "w", "fixed_in": {"580": "580.159.03"}, "source": "s", "read": "2026-12-05"}  # fmt: skip


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"kind": "cuda_driver"}, "needs an `id`"),
        ({"id": "x", "kind": "wat", "source": "s", "read": "d"}, "kind 'wat' is not one of"),
        ({"id": "x", "kind": "cuda_driver", "cuda": "12.8", "read": "d"}, "missing min_driver, source"),
        ({"id": "x", "kind": "branch", "branch": "570", "max_cuda": "twelve", "source": "s", "read": "d"}, "max_cuda"),
        ({"id": "x", "kind": "branch", "branch": "570", "max_cuda": "12.8", "source": "s"}, "add `read: YYYY-MM-DD`"),
        (
            {
                "id": "x",
                "kind": "branch",
                "branch": "620",
                "max_cuda": "13.5",
                "flavors": ["closed"],
                "source": "s",
                "read": "d",
            },
            "flavors",
        ),
        (
            dict(BULLETIN, fixed_in={"580": "570.211.01"}),
            "fixed_in '580': '570.211.01': write the branch and a version",
        ),
        (dict(BULLETIN, fixed_in={"R580": "580.159.03"}), "fixed_in 'R580'"),
        (dict(BULLETIN, fixed_in=["580.159.03"]), "fixed_in must map each branch"),
        (dict(BULLETIN, date="May 2026"), "date 'May 2026': write the bulletin's date as YYYY-MM-DD"),
        ({k: val for k, val in BULLETIN.items() if k != "cvss"}, "missing cvss"),
    ],
)
def test_bad_extra_rows_are_named(row, message):
    with pytest.raises(mx.MatrixError, match=message):
        mx.build({"rows": []}, [row])
