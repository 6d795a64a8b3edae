# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compatibility matrix: merge the collection's rows with the inventory's, resolve sources, look rows up.

Pure functions over already-parsed data (the action plugin reads data/compat_matrix.yml on the controller).
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v

REQUIRED = {
    "cuda_driver": ("cuda", "min_driver"),
    "minor_compat": ("cuda_major", "min_driver"),
    "branch": ("branch", "max_cuda"),
    "cudnn": ("cudnn", "cuda"),
    "nccl": ("nccl", "cuda"),
    "framework": ("name", "version"),
    "tensorflow": ("version", "cuda", "cudnn"),
    "horovod": ("horovod", "framework"),
    "fabricmanager": ("rule",),
    "gpu_model": ("match", "cc"),
    "gpu_arch": ("arch", "cc"),
    "wheel_archs": ("name", "version", "variant", "archs"),
    "toolkit_cve": ("cve", "affected", "fixed", "what"),
    "driver_cve": ("bulletin", "date", "cve", "cvss", "fixed_in", "what"),
    "gpu_release": ("match", "since"),
    "lib_archs": ("name", "version", "cc"),
}
PINS = ("cuda", "min_driver", "branch", "max_cuda", "cudnn", "nccl", "version", "horovod", "works", "breaks", "cc")
PINS += ("min_branch", "last_branch", "cuda_min", "cuda_max", "affected", "fixed")
PATTERNS = ("match", "model")
FLAVORS = ("open", "proprietary")


class MatrixError(ValueError):
    """A row that cannot be used; the message names the row and the fix."""


def build(data, extra=None):
    """Merged, validated rows: {"rows": [...], "by_kind": {kind: [row]}, "as_of": the shipped data's date or None}.

    `extra` rows (from the inventory) replace a shipped row with the same id, or are added.
    Each row comes back with `source` as text ("title, url") and `read` (the date the source was read).
    """
    data = data or {}
    sources = data.get("sources") or {}
    rows = {}
    for origin, items in (("collection matrix", data.get("rows") or []), ("matrix_extra", extra or [])):
        if not isinstance(items, list):
            raise MatrixError(f"{origin} must be a list of rows, got {type(items).__name__}")
        for row in items:
            checked = _check(row, origin)
            rows[checked["id"]] = _resolve(checked, sources, data.get("read"), origin)
    by_kind = {}
    for row in rows.values():
        by_kind.setdefault(row["kind"], []).append(row)
    as_of = str(data["as_of"]) if data.get("as_of") else None
    if as_of and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of):
        raise MatrixError(f"the matrix's as_of {as_of!r}: write the date it was brought up to date as YYYY-MM-DD")
    return {"rows": list(rows.values()), "by_kind": by_kind, "as_of": as_of}


def _check(row, origin):
    if not isinstance(row, dict) or not row.get("id"):
        raise MatrixError(f"{origin}: every row needs an `id` (got {row!r})")
    kind = row.get("kind")
    if kind not in REQUIRED:
        raise MatrixError(f"{origin} row {row['id']}: kind {kind!r} is not one of {', '.join(REQUIRED)}")
    missing = [k for k in (*REQUIRED[kind], "source") if row.get(k) in (None, "")]
    if missing:
        raise MatrixError(f"{origin} row {row['id']}: missing {', '.join(missing)} (every row names its source)")
    for key in PINS:
        if key in row and row[key] not in (None, ""):
            bad = v.valid_spec(row[key])
            if bad:
                raise MatrixError(f"{origin} row {row['id']}: {key} {row[key]!r}: {bad}")
    for key in PATTERNS:
        if row.get(key):
            try:
                re.compile(str(row[key]))
            except re.error as err:
                msg = f"{origin} row {row['id']}: {key} {row[key]!r} is not a regular expression: {err}"
                raise MatrixError(msg) from err
    if kind == "wheel_archs" and not re.fullmatch(r"\d+\.\d+(;\d+\.\d+)*(\+PTX)?", str(row["archs"])):
        raise MatrixError(f"{origin} row {row['id']}: archs {row['archs']!r}: write them as 7.5;8.0;9.0+PTX")
    if row.get("eol") and not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?|ended", str(row["eol"])):
        raise MatrixError(f"{origin} row {row['id']}: eol {row['eol']!r}: write YYYY-MM, YYYY-MM-DD or ended")
    _check_kind(row, kind, origin)
    return dict(row)


def _check_kind(row, kind, origin):
    """The fields only some kinds have: a branch's or architecture's flavors, a bulletin's fixed_in and date."""
    if kind in ("gpu_arch", "branch") and not set(row.get("flavors") or FLAVORS) <= set(FLAVORS):
        raise MatrixError(f"{origin} row {row['id']}: flavors {row['flavors']!r}: each one of {', '.join(FLAVORS)}")
    if kind == "driver_cve":
        _check_by_branch(row, "fixed_in", origin)
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(row["date"])):
            raise MatrixError(
                f"{origin} row {row['id']}: date {row['date']!r}: write the bulletin's date as YYYY-MM-DD"
            )
    if kind == "gpu_release":
        _check_by_branch(row, "since", origin)
    if kind == "lib_archs" and row["name"] not in ("cudnn", "nccl"):
        raise MatrixError(f"{origin} row {row['id']}: name {row['name']!r}: cudnn or nccl")


def _check_by_branch(row, field, origin):
    """A field mapping each driver branch to a version of it (a bulletin's fixed_in, a GPU's since)."""
    value = row[field]
    if not isinstance(value, dict):
        raise MatrixError(f"{origin} row {row['id']}: {field} must map each branch to a version of it")
    for branch, version in value.items():
        if not re.fullmatch(r"\d{3}", str(branch)) or str(v.major(str(version))) != str(branch):
            raise MatrixError(
                f"{origin} row {row['id']}: {field} {branch!r}: {version!r}: write the branch and a version of it, "
                'e.g. "580": "580.159.03"'
            )


def _resolve(row, sources, default_read, origin):
    ref = sources.get(row["source"]) if isinstance(row["source"], str) else None
    if isinstance(ref, dict):
        row["source"] = ", ".join(p for p in (ref.get("title"), ref.get("url")) if p)
        if ref.get("read"):  # else the matrix's own date below, not None
            row.setdefault("read", ref["read"])
    row.setdefault("read", default_read)
    if not row.get("read"):
        raise MatrixError(f"{origin} row {row['id']}: add `read: YYYY-MM-DD`, the date its source was read")
    row["read"] = str(row["read"])
    return row


def cite(row):
    """The `source` text of a check: the row id, its source and the date read."""
    return f"{row['id']}: {row['source']} (read {row['read']})"


def rows(matrix, kind):
    return matrix["by_kind"].get(kind, [])


def cuda_min_driver(matrix, cuda):
    """The Table 3 row for a toolkit's major.minor, or None."""
    mm = v.major_minor(cuda)
    return next((r for r in rows(matrix, "cuda_driver") if v.major_minor(r["cuda"]) == mm), None)


def minor_compat(matrix, cuda):
    return next((r for r in rows(matrix, "minor_compat") if int(r["cuda_major"]) == v.major(cuda)), None)


def branch_row(matrix, driver):
    return next((r for r in rows(matrix, "branch") if v.prefix_match(r["branch"], driver)), None)


def framework_row(matrix, name, version):
    """The most specific framework row whose version pin matches ("2.7" matches "2.7.1+cu128")."""
    found = [r for r in rows(matrix, "framework") if r["name"] == name and v.matches(r["version"], version)]
    return max(found, key=lambda r: len(str(r["version"])), default=None)


def tensorflow_row(matrix, version):
    found = [r for r in rows(matrix, "tensorflow") if v.matches(r["version"], version)]
    return max(found, key=lambda r: len(str(r["version"])), default=None)


def gpu_model_cc(matrix, name):
    """The compute capability of a product name ("NVIDIA H100 80GB HBM3" -> "9.0") from the gpu_model rows, or None."""
    row = next((r for r in rows(matrix, "gpu_model") if re.search(str(r["match"]), name or "", re.I)), None)
    return (str(row["cc"]), row) if row else (None, None)


def gpu_release_row(matrix, name):
    """The gpu_release row whose `match` finds the product name (case-insensitive), or None."""
    for row in rows(matrix, "gpu_release"):
        if name and re.search(str(row["match"]), name, re.I):
            return row
    return None


def lib_archs_row(matrix, name, version):
    """The lib_archs row of a library (cudnn, nccl) whose `version` range holds version, or None."""
    for row in rows(matrix, "lib_archs"):
        if row["name"] == name and v.matches(row["version"], version):
            return row
    return None


def gpu_arch_row(matrix, cc, name=None):
    """The gpu_arch row for a compute capability; one narrowed to matching product names (Grace Hopper) first."""
    fits = [r for r in rows(matrix, "gpu_arch") if v.matches(r["cc"], cc)]
    named = [r for r in fits if r.get("model") and re.search(str(r["model"]), name or "", re.I)]
    return next(iter(named), None) or next((r for r in fits if not r.get("model")), None)


def wheel_archs_row(matrix, name, version, variant):
    """The most specific wheel_archs row for a framework build, or None."""
    found = [
        r
        for r in rows(matrix, "wheel_archs")
        if r["name"] == name and r["variant"] == variant and v.matches(r["version"], version)
    ]
    return max(found, key=lambda r: len(str(r["version"])), default=None)
