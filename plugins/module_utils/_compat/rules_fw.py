# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules for frameworks (wheel CUDA variant, bundled vs system libraries, Horovod).

Pure functions; see rules for the check shape.
"""

from __future__ import annotations

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import rules as r


def framework_cuda(matrix, fw):
    """(cuda, how) of a framework build: given, from its +cuXYZ tag, or the variant plain pip install gets."""
    if fw.get("cuda"):
        cuda, how = str(fw["cuda"]), fw.get("cuda_source") or "given"
        # A CUDA major alone (jax-cuda12-plugin on a host, `cuda: 13` for jax[cuda13]): the row's build for it.
        row = mx.framework_row(matrix, fw["name"], fw["version"]) if "." not in cuda else None
        found = next(
            (x for x in (row or {}).get("variants", []) if v.major(v.cuda_from_variant(x)) == v.major(cuda)), None
        )
        if found:
            extra = (row.get("extras") or {}).get(found, found)
            return v.cuda_from_variant(found), extra if how == "given" else f"{how}, {extra}"
        return cuda, how
    tagged = v.cuda_from_variant(fw["version"])
    if tagged:
        return tagged, "its +cu tag"
    if "+cpu" in fw["version"] or "+rocm" in fw["version"]:
        return None, "a build without CUDA"
    row = mx.framework_row(matrix, fw["name"], fw["version"])
    if row and row.get("default"):
        return v.cuda_from_variant(row["default"]), f"PyPI default {row['default']} for {fw['name']} {row['version']}"
    return None, None


def rule_framework(matrix, stack):
    out = []
    for fw in stack["frameworks"]:
        label = f"{fw['name']} {fw['version']}"
        if fw["name"] == "tensorflow":
            out += _tensorflow(matrix, stack, fw)
            continue
        cuda, how = framework_cuda(matrix, fw)
        row = mx.framework_row(matrix, fw["name"], fw["version"])
        if how == "a build without CUDA":
            out.append(r.check("framework_cuda", r.OK, f"{label} is a build without CUDA: no driver needed"))
            continue
        if row is not None and cuda is None and row.get("extras"):
            out.append(
                r.check(
                    "framework_cuda",
                    r.UNKNOWN,
                    f"{label}: a plain `pip install {fw['name']}` has no CUDA; give framework.cuda as the CUDA major "
                    f"of the build installed ({', '.join(row['extras'].values())})",
                    mx.cite(row),
                )
            )
            continue
        if row is None or cuda is None:
            out.append(
                r.check(
                    "framework_cuda",
                    r.UNKNOWN,
                    f"{label} is not in the matrix, so its CUDA variant and "
                    "bundled libraries are unknown; give framework.cuda or add a row",
                )
            )
            continue
        variant = v.variant_from_cuda(cuda)
        if variant not in row.get("variants", []) and row.get("variants_known") is False:
            out.append(
                r.check(
                    "framework_cuda",
                    r.UNKNOWN,
                    f"{label}: the matrix knows only its PyPI default ({row['default']}), not whether a {variant} "
                    "wheel exists; give framework.cuda as one the release publishes or add the variant to the row",
                    mx.cite(row),
                )
            )
            continue
        if variant not in row.get("variants", []):
            out.append(
                r.check(
                    "framework_cuda",
                    r.VIOLATION,
                    f"{label} has no {variant} wheel (variants: "
                    f"{', '.join(row.get('variants', []))}): choose one of those CUDA variants",
                    mx.cite(row),
                )
            )
            continue
        if stack["driver"]:
            res = r.driver_vs_cuda(
                matrix, stack["driver"], cuda, "framework_driver", f"{label} ({variant} wheel, CUDA from {how})"
            )
            out.append(res)
        out += _bundled(row, fw, variant, stack)
    return out


def _bundled(row, fw, variant, stack):
    """Wheels like torch's load the cuDNN/NCCL they pin (nvidia-*-cu12), not the system's: say which is used."""
    bundle = dict((row.get("bundles") or {}).get(variant) or {}, **{k: x for k, x in fw["bundles"].items() if x})
    if not bundle or row.get("uses_system"):
        return []
    parts = [f"{lib} {bundle[lib]}" for lib in ("cudnn", "nccl") if bundle.get(lib)]
    system = [f"{lib} {stack[lib]}" for lib in ("cudnn", "nccl") if stack.get(lib)]
    tail = f"; the system's ({', '.join(system)}) is not used by it" if system else ""
    floors = (row.get("floors") or {}).get(variant)
    if floors:  # jax: its CUDA plugin sets floors, pip installs the newest wheels above them
        found = "found on the host" if any(fw["bundles"].values()) else "pip's newest when the row was read"
        bounds = ", ".join(f"{lib} {floors[lib]}" for lib in ("cudnn", "nccl") if floors.get(lib))
        loads = f"the nvidia-* wheels pip installs with it ({found}: {', '.join(parts)}; its plugin requires {bounds})"
    else:
        loads = f"its bundled {', '.join(parts)}"
    return [
        r.check(
            "framework_libraries",
            r.OK,
            f"{fw['name']} {fw['version']} ({variant}) loads {loads}{tail}",
            mx.cite(row),
        )
    ]


def _tensorflow(matrix, stack, fw):
    label = f"tensorflow {fw['version']}"
    row = mx.tensorflow_row(matrix, fw["version"])
    if row is None:
        return [r.check("framework_cuda", r.UNKNOWN, f"{label} is not in the matrix (tested build configurations)")]
    out = []
    # Plain `tensorflow` wheels dlopen the system CUDA and cuDNN, so the system's must match its build.
    for lib, have in (("cuda", (stack["cuda"] or [None])[0]), ("cudnn", stack["cudnn"])):
        want = row[lib]
        if not have:
            continue
        if v.major(have) != v.major(want):
            out.append(
                r.check(
                    "framework_libraries",
                    r.VIOLATION,
                    f"{label} was built against {lib} {want} but the "
                    f"system has {lib} {have}: install {lib} {v.major(want)}.x (>= {want})",
                    mx.cite(row),
                )
            )
        elif lib == "cudnn" and v.compare(v.major_minor(have), v.major_minor(want)) < 0:
            # XLA refuses it at start: "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.
            # CuDNN library needs to have matching major version and equal or higher minor version."
            out.append(
                r.check(
                    "framework_libraries",
                    r.VIOLATION,
                    f"{label} was built against cudnn {want}; the system's cudnn {have} has an older minor version, "
                    f"which XLA refuses at start (same major, equal or newer minor): install cudnn >= {want}",
                    mx.cite(row),
                )
            )
        elif v.compare(have, want) < 0:
            out.append(
                r.check(
                    "framework_libraries",
                    r.WARNING,
                    f"{label} was built against {lib} {want}; the system's"
                    f" {lib} {have} is older: upgrade {lib} to >= {want}",
                    mx.cite(row),
                )
            )
        else:
            out.append(
                r.check(
                    "framework_libraries",
                    r.OK,
                    f"{label} built against {lib} {want}; system {lib} {have}",
                    mx.cite(row),
                )
            )
    if stack["driver"]:
        out.append(
            r.driver_vs_cuda(
                matrix, stack["driver"], row["cuda"], "framework_driver", f"{label} (built for CUDA {row['cuda']})"
            )
        )
    return out


def rule_horovod(matrix, stack):
    hvd = stack["horovod"]
    if not hvd:
        return []
    out = []
    for fw in stack["frameworks"]:
        rows = [x for x in mx.rows(matrix, "horovod") if x["framework"] == fw["name"] and v.matches(x["horovod"], hvd)]
        if not rows:
            out.append(r.check("horovod_framework", r.UNKNOWN, f"Horovod {hvd} with {fw['name']} is not in the matrix"))
            continue
        row, base = rows[0], fw["version"].split("+")[0]
        if row.get("breaks") and v.matches(row["breaks"], base):
            out.append(
                r.check(
                    "horovod_framework",
                    r.VIOLATION,
                    f"Horovod {hvd} does not build against {fw['name']} "
                    f"{fw['version']} ({fw['name']} {row['breaks']}): {row.get('fix', '')}",
                    mx.cite(row),
                )
            )
        elif row.get("works") and v.matches(row["works"], base):
            out.append(
                r.check(
                    "horovod_framework",
                    r.OK,
                    f"Horovod {hvd} is tested with {fw['name']} {fw['version']}",
                    mx.cite(row),
                )
            )
        else:
            out.append(
                r.check(
                    "horovod_framework",
                    r.UNKNOWN,
                    f"Horovod {hvd} is untested with {fw['name']} {fw['version']} (tested: {row.get('works')})",
                    mx.cite(row),
                )
            )
    return out
