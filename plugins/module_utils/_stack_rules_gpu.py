# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU-aware rules: the GPUs (gpu_facts on the host, or versions.gpu on the controller) against the driver branch,
the CUDA toolkits, the frameworks' CUDA builds and the kernel-module flavour, from the matrix's gpu_model and gpu_arch
rows.

Pure functions; see _stack_rules for the check shape.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.stack.plugins.module_utils import _matrix as mx
from ansible_collections.gpufleet.stack.plugins.module_utils import _stack_rules as r
from ansible_collections.gpufleet.stack.plugins.module_utils import _versions as v

_CC = re.compile(r"(\d+)\.(\d)")
_SM = re.compile(r"(?:sm|compute)_?(\d+)(\d)[a-z]?", re.I)


def parse_gpu(value):
    """{name, cc} from what a user writes in versions.gpu: a compute capability ("9.0"), an sm_XY target
    ("sm_90"), or a product name ("NVIDIA H100 80GB HBM3", "A100", "Tesla V100-SXM2-16GB")."""
    text = str(value).strip()
    cc = _CC.fullmatch(text)
    if cc:
        return {"name": None, "cc": text}
    sm = _SM.fullmatch(text)
    if sm:
        return {"name": None, "cc": f"{int(sm.group(1))}.{sm.group(2)}"}
    return {"name": text, "cc": None}


def from_fact(gpu):
    """A GPU as gpu_facts saw it on a host: NVML's name and compute capability."""
    return {"name": gpu.get("name"), "cc": gpu.get("compute_capability")}


def _distinct(gpus):
    counted = {}
    for gpu in gpus:
        key = (gpu.get("name"), gpu.get("cc"))
        counted[key] = counted.get(key, 0) + 1
    return [{"name": name, "cc": cc, "count": n} for (name, cc), n in counted.items()]


def _label(gpu, cc, arch=None):
    """ "8x NVIDIA H100 80GB HBM3 (Hopper, compute capability 9.0, sm_90)"."""
    major, minor = cc.split(".")[:2]
    what = gpu["name"] or "a GPU"
    times = f"{gpu['count']}x " if gpu["count"] > 1 else ""
    family = f"{arch['arch']}, " if arch else ""
    return f"{times}{what} ({family}compute capability {cc}, sm_{major}{minor})"


def _branch(driver):
    return v.major(driver)


def rule_gpu(matrix, stack, framework_cuda):
    """Per distinct GPU: its architecture known, and driven by the driver branch, compiled for by every CUDA toolkit
    and framework build (framework_cuda(matrix, fw) -> (cuda, how), from _stack_rules_fw), and driven by the
    kernel-module flavour."""
    out, builds = [], _builds(matrix, stack, framework_cuda)
    for gpu in _distinct(stack.get("gpus") or []):
        cc, row = gpu["cc"], None
        if not cc and gpu["name"]:
            cc, row = mx.gpu_model_cc(matrix, gpu["name"])
        if not cc:
            out.append(
                r.check(
                    "gpu",
                    r.UNKNOWN,
                    f"{gpu['name']}: its compute capability is unknown, so the driver, toolkits and kernel modules "
                    "cannot be checked against it; give versions.gpu as a compute capability ('9.0') or add a "
                    "gpu_model row with gpufleet_compat_matrix_extra",
                )
            )
            continue
        arch = mx.gpu_arch_row(matrix, cc, gpu["name"])
        if arch is None:
            out.append(
                r.check(
                    "gpu",
                    r.UNKNOWN,
                    f"{_label(gpu, cc)}: compute capability {cc} is not in the matrix; add a gpu_arch row with "
                    "gpufleet_compat_matrix_extra",
                    mx.cite(row) if row else None,
                )
            )
            continue
        target = {"label": _label(gpu, cc, arch), "cc": cc, "arch": arch}
        out += _driver(stack, target) + _toolkits(matrix, builds, target) + _flavor(stack, target)
    return out


def _driver(stack, target):
    arch, label = target["arch"], target["label"]
    driver = stack.get("driver")
    if not driver:
        return []
    branch, first, last = _branch(driver), arch.get("min_branch"), arch.get("last_branch")
    if first and branch < int(first):
        return [
            r.check(
                "gpu_driver",
                r.VIOLATION,
                f"driver {driver} does not drive {label}: {arch['arch']} needs driver branch {first} or newer; "
                f"upgrade the driver",
                mx.cite(arch),
            )
        ]
    if last and branch > int(last):
        return [
            r.check(
                "gpu_driver",
                r.VIOLATION,
                f"driver {driver} no longer drives {label}: branch {last} is the last for {arch['arch']}; pin the "
                f"driver to branch {last}",
                mx.cite(arch),
            )
        ]
    return [r.check("gpu_driver", r.OK, f"driver {driver} drives {label}", mx.cite(arch))]


def _builds(matrix, stack, framework_cuda):
    """(what, cuda, framework or None) for each CUDA toolkit and each framework's CUDA build."""
    builds = [(f"CUDA toolkit {c}", c, None) for c in stack.get("cuda") or []]
    for fw in stack.get("frameworks") or []:
        cuda, how = framework_cuda(matrix, fw)
        if cuda:
            builds.append((f"{fw['name']} {fw['version']} (built with CUDA {cuda}, {how})", cuda, fw))
    return builds


def carries_code(archs, cc):
    """Whether a build for `archs` ("7.0;8.0;9.0+PTX") runs on compute capability `cc`: code for the same major
    version and an equal or lower minor, or the PTX "+PTX" adds for the last one, on an equal or newer GPU."""
    targets = archs.removesuffix("+PTX").split(";")
    if any(v.major(t) == v.major(cc) and v.compare(t, cc) <= 0 for t in targets):
        return True
    return archs.endswith("+PTX") and v.compare(targets[-1], cc) <= 0


def _wheel(matrix, fw, cuda, target):
    """The framework wheel's own architecture list (wheel_archs rows), when the matrix has it."""
    label, cc = target["label"], target["cc"]
    variant = v.variant_from_cuda(cuda)
    row = mx.wheel_archs_row(matrix, fw["name"], fw["version"], variant)
    if row is None:
        return None
    what = f"{fw['name']} {fw['version']} ({variant} wheel)"
    if carries_code(row["archs"], cc):
        return r.check("gpu_wheel", r.OK, f"{what} carries code for {label}", mx.cite(row))
    others = [
        o["variant"]
        for o in mx.rows(matrix, "wheel_archs")
        if o["name"] == fw["name"] and v.matches(o["version"], fw["version"]) and carries_code(o["archs"], cc)
    ]
    fix = (
        f"use the {' or '.join(sorted(set(others)))} wheel"
        if others
        else f"no {fw['name']} {v.package_version(fw['version'])} wheel in the matrix does; choose another release"
    )
    msg = f"{what} carries no code for {label}: it is built for {row['archs']}; {fix}"
    return r.check("gpu_wheel", r.VIOLATION, msg, mx.cite(row))


def _toolkits(matrix, builds, target):
    arch, label = target["arch"], target["label"]
    out = []
    first, last = arch.get("cuda_min"), arch.get("cuda_max")
    for what, cuda, fw in builds:
        if fw is None and first and v.compare(cuda, first) < 0:
            msg = f"{what} cannot compile for {label}: {arch['arch']} needs CUDA {first} or newer"
            out.append(r.check("gpu_cuda", r.VIOLATION, msg, mx.cite(arch)))
        elif last and v.compare(v.major_minor(cuda), last) > 0:
            # A build by a toolkit that cannot target the GPU holds no code for it, and PTX only runs forward.
            done = "no longer compiles" if fw is None else "cannot carry code"
            msg = (
                f"{what} {done} for {label}: CUDA {last} is the last toolkit that compiles for {arch['arch']}; "
                f"choose CUDA {last} or older"
            )
            out.append(r.check("gpu_cuda", r.VIOLATION, msg, mx.cite(arch)))
        elif fw is not None:
            out.append(_wheel(matrix, fw, cuda, target) or r.check(
                "gpu_cuda", r.OK, f"{what}: CUDA {v.major_minor(cuda)} compiles for {label}", mx.cite(arch)
            ))  # fmt: skip
        else:
            out.append(r.check("gpu_cuda", r.OK, f"{what} compiles for {label}", mx.cite(arch)))
    return out


def _flavor(stack, target):
    arch, label = target["arch"], target["label"]
    flavor = stack.get("driver_flavor")
    allowed = arch.get("flavors") or ["open", "proprietary"]
    if not flavor:
        return []
    if flavor in allowed:
        return [r.check("gpu_flavor", r.OK, f"the {flavor} kernel modules drive {label}", mx.cite(arch))]
    other = allowed[0]
    why = "they need Turing or newer" if flavor == "open" else f"{arch['arch']} is unsupported by them"
    return [
        r.check(
            "gpu_flavor",
            r.VIOLATION,
            f"the {flavor} kernel modules do not drive {label}: {why}; set "
            f'gpufleet_stack.driver_flavor (or nvidia_driver_flavor) to "{other}"',
            mx.cite(arch),
        )
    ]
