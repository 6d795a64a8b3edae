# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version strings of the NVIDIA stack: parse, compare, match pins, decode the integer encodings.

Pure functions, no AnsibleModule: used by the stack_facts module on hosts and the stack_assert action on the
controller.
"""

from __future__ import annotations

import re

_NUM = re.compile(r"^\d+(\.\d+)*")
_SPEC = re.compile(r"^\s*(>=|<=|==|!=|>|<)?\s*([0-9][0-9.]*)\s*$")


def parse(version):
    """Tuple of ints from the leading numeric part: "570.133.20" -> (570, 133, 20); "2.7.1+cu128" -> (2, 7, 1).

    None for a value with no leading number (absent, "unknown", "").
    """
    if version is None:
        return None
    match = _NUM.match(str(version).strip().lstrip("vV"))
    return tuple(int(p) for p in match.group(0).split(".")) if match else None


def compare(a, b):
    """-1, 0 or 1 comparing two versions numerically; missing trailing parts count as 0 ("12.8" == "12.8.0")."""
    pa, pb = parse(a), parse(b)
    if pa is None or pb is None:
        raise ValueError(f"cannot compare versions {a!r} and {b!r}")
    width = max(len(pa), len(pb))
    pa, pb = pa + (0,) * (width - len(pa)), pb + (0,) * (width - len(pb))
    return (pa > pb) - (pa < pb)


def major_minor(version):
    """ "12.8.93" -> "12.8"; "12" -> "12"; None when unparsable."""
    parts = parse(version)
    return ".".join(str(p) for p in parts[:2]) if parts else None


def major(version):
    parts = parse(version)
    return parts[0] if parts else None


def prefix_match(pin, actual):
    """True when `actual` equals `pin` or extends it on a dot boundary: "570" matches "570.133.20", not "5700.1"."""
    pa, pb = parse(pin), parse(actual)
    if pa is None or pb is None:
        return False
    return pb[: len(pa)] == pa


def matches(spec, actual):
    """True when `actual` satisfies `spec`.

    A spec is an exact version ("570.133.20"), a branch or prefix ("570", "12.8"), or comma-joined comparisons
    (">=12.4,<13"). Raises ValueError on a spec that is none of these, so callers can name the bad pin.
    """
    if spec is None or str(spec).strip() in ("", "*"):
        return True
    if parse(actual) is None:
        return False
    for part in str(spec).split(","):
        found = _SPEC.match(part)
        if not found:
            raise ValueError(f"not a version pin: {part!r} (use 570.133.20, 570 or >=12.4,<13)")
        op, ver = found.group(1), found.group(2).rstrip(".")
        if op is None:
            if not prefix_match(ver, actual):
                return False
            continue
        if op == "==":
            ok = prefix_match(ver, actual)
        elif op == "!=":
            ok = not prefix_match(ver, actual)
        else:
            cmp = compare(actual, ver)
            ok = {">=": cmp >= 0, "<=": cmp <= 0, ">": cmp > 0, "<": cmp < 0}[op]
        if not ok:
            return False
    return True


def valid_spec(spec):
    """None when `spec` is a usable pin, else the reason."""
    try:
        matches(spec, "0")
    except ValueError as err:
        return str(err)
    return None


def cudnn_from_code(code):
    """cudnnGetVersion()/CUDNN_VERSION integer to "M.m.p".

    cuDNN 8 packs major*1000 + minor*100 + patch (8902 = 8.9.2); cuDNN 9 changed to major*10000 + minor*100 + patch
    (90100 = 9.1.0), see https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-graph-library.html
    (cudnnGetVersion).
    """
    code = int(code)
    if code >= 90000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def nccl_from_code(code):
    """ncclGetVersion()/NCCL_VERSION_CODE integer to "M.m.p".

    NCCL up to 2.8 packs major*1000 + minor*100 + patch (2804 = 2.8.4); from 2.9 it is major*10000 + minor*100 +
    patch (21803 = 2.18.3), see NCCL_VERSION(X,Y,Z) in nccl.h (https://github.com/NVIDIA/nccl/blob/master/src/nccl.h.in).
    """
    code = int(code)
    if code >= 20900:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def cuda_from_code(code):
    """cuDriverGetVersion()/CUDA_VERSION integer to "M.m": 12080 -> "12.8" (major*1000 + minor*10)."""
    code = int(code)
    return f"{code // 1000}.{code % 1000 // 10}"


def cuda_from_variant(tag):
    """Wheel variant or local version to CUDA: "cu128" -> "12.8", "cu118" -> "11.8", "cu130" -> "13.0".

    Also "+cu128" / "2.7.1+cu128"; None for "cpu", "rocm6.3" and untagged versions.
    """
    if not tag:
        return None
    found = re.search(r"cu(\d{2})(\d)\b", str(tag))
    return f"{int(found.group(1))}.{found.group(2)}" if found else None


def variant_from_cuda(cuda):
    """ "12.8" -> "cu128"."""
    parts = parse(cuda)
    return f"cu{parts[0]}{parts[1] if len(parts) > 1 else 0}" if parts else None


def package_version(version):
    """Upstream version from a dpkg/rpm version: "570.133.20-1" -> "570.133.20", "1:9.8.0.87-1" -> "9.8.0.87".

    Debian's "11.8.89~11.8.0-5~deb12u1" -> "11.8.89"; NVIDIA's libnccl2 "2.26.2-1+cuda12.8" -> "2.26.2".
    """
    if not version:
        return None
    version = str(version).split(":", 1)[-1]
    return re.split(r"[-~+]", version, maxsplit=1)[0] or None


def package_cuda_build(version):
    """The CUDA a package was built for, from its version: "2.26.2-1+cuda12.8" -> "12.8"; None if untagged."""
    found = re.search(r"\+cuda(\d+\.\d+)", str(version or ""))
    return found.group(1) if found else None
