"""The matrix's row checks (module_utils/_compat/matrix) at their edges: every version field a site's
gpufleet_compat_matrix_extra row may carry is held to a version spec, every pattern to a regular expression, and each
refusal names the origin, the row, the field and the fix, whole."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx

# A row of each kind with what it needs; the fields under test are added to it.
BASE = {"id": "x", "kind": "branch", "branch": "570", "max_cuda": "12.8", "source": "s", "read": "2026-12-05"}
VERSION_FIELDS = ["cuda", "min_driver", "branch", "max_cuda", "cudnn", "nccl", "version", "horovod", "works"]
VERSION_FIELDS += ["breaks", "cc", "min_branch", "last_branch", "cuda_min", "cuda_max", "affected", "fixed"]


def refused(row, extra=True):
    with pytest.raises(mx.MatrixError) as err:
        mx.build({"rows": []}, [row]) if extra else mx.build({"rows": [row]})
    return str(err.value)


@pytest.mark.parametrize("field", VERSION_FIELDS)
def test_every_version_field_is_held_to_a_version_spec(field):
    message = refused(dict(BASE, **{field: "twelve"}))
    assert message.startswith(f"matrix_extra row x: {field} 'twelve': "), message
    if field not in mx.REQUIRED["branch"]:
        assert mx.build({"rows": []}, [dict(BASE, **{field: ""})])["rows"]  # empty is not set


@pytest.mark.parametrize("field", ["match", "model"])
def test_every_pattern_field_is_held_to_a_regular_expression(field):
    message = refused(dict(BASE, **{field: "A100("}))
    assert message.startswith(f"matrix_extra row x: {field} 'A100(' is not a regular expression: "), message


def test_the_shipped_rows_are_named_as_the_collections():
    assert refused({"id": "y", "kind": "wat", "source": "s", "read": "d"}, extra=False) == (
        "collection matrix row y: kind 'wat' is not one of " + ", ".join(mx.REQUIRED)
    )


def test_rows_that_are_not_a_list_are_refused_naming_the_origin():
    with pytest.raises(mx.MatrixError, match=r"^matrix_extra must be a list of rows, got dict$"):
        mx.build({"rows": []}, {"id": "x"})
    with pytest.raises(mx.MatrixError, match=r"^collection matrix must be a list of rows, got str$"):
        mx.build({"rows": "x"})


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {
                "id": "a",
                "kind": "wheel_archs",
                "name": "torch",
                "version": "2.9",
                "variant": "cu128",
                "archs": "7.5,8.0",
                "source": "s",
            },
            "matrix_extra row a: archs '7.5,8.0': write them as 7.5;8.0;9.0+PTX",
        ),
        (
            dict(BASE, eol="Q3 2026"),
            "matrix_extra row x: eol 'Q3 2026': write YYYY-MM, YYYY-MM-DD or ended",
        ),
        (
            dict(BASE, flavors=["open", "closed"]),
            "matrix_extra row x: flavors ['open', 'closed']: each one of open, proprietary",
        ),
        (
            {"id": "l", "kind": "lib_archs", "name": "cublas", "version": "12", "cc": ">=7.5", "source": "s"},
            "matrix_extra row l: name 'cublas': cudnn or nccl",
        ),
        (
            {"id": "g", "kind": "gpu_release", "match": "^X$", "since": ["575.51.02"], "source": "s"},
            "matrix_extra row g: since must map each branch to a version of it",
        ),
        (
            {"id": "g", "kind": "gpu_release", "match": "^X$", "since": {"575": "570.1"}, "source": "s"},
            "matrix_extra row g: since '575': '570.1': write the branch and a version of it, e.g. \"580\": "
            '"580.159.03"',
        ),
        (
            {"id": "m", "kind": "cuda_driver", "cuda": "12.8", "source": "s"},
            "matrix_extra row m: missing min_driver (every row names its source)",
        ),
    ],
)
def test_bad_rows_are_refused_with_the_whole_fix(row, message):
    assert refused(dict(row, read=row.get("read", "2026-12-05"))) == message


@pytest.mark.parametrize("eol", ["2026-08", "2026-08-31", "ended"])
def test_the_end_of_life_forms_that_are_taken(eol):
    assert mx.build({"rows": []}, [dict(BASE, eol=eol)])["rows"][0]["eol"] == eol


def test_a_source_by_reference_gives_its_title_url_and_read_date():
    row = dict(BASE, source="ref")
    del row["read"]
    data = {"rows": [row], "sources": {"ref": {"title": "T", "url": "https://u", "read": "2026-01-02"}}}
    (row,) = mx.build(data)["rows"]
    assert (row["source"], row["read"]) == ("T, https://u", "2026-01-02")
    data["sources"]["ref"] = {"url": "https://u"}
    data["read"] = "2026-03-04"
    row = dict(BASE, source="ref")
    del row["read"]
    data["rows"] = [row]
    (row,) = mx.build(data)["rows"]
    assert (row["source"], row["read"]) == ("https://u", "2026-03-04")  # the matrix's own date when the source has none
