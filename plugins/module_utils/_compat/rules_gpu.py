# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU-aware rules: the GPUs (gpu_facts on the host, or versions.gpu on the controller) against the driver branch,
the CUDA toolkits, the frameworks' CUDA builds and the kernel-module flavour, from the matrix's gpu_model and gpu_arch
rows.

Pure functions; see rules for the check shape.
"""

from __future__ import annotations

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import rules as r
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.rules_fw import framework_cuda


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


def rule_gpu(matrix, stack):
    """Per distinct GPU: its architecture known, and driven by the driver branch, compiled for by every CUDA toolkit
    and framework build (framework_cuda(matrix, fw) -> (cuda, how), from _stack_rules_fw), and driven by the
    kernel-module flavour."""
    out, builds = [], _builds(matrix, stack)
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
        target = {"label": _label(gpu, cc, arch), "cc": cc, "arch": arch, "name": gpu["name"]}
        out += _driver(stack, target) + _release(matrix, stack, target) + _toolkits(matrix, builds, target)
        out += _flavor(stack, target) + _libraries(matrix, stack, target)
    return out


def _release(matrix, stack, target):
    """A GPU that arrived after its architecture, against the releases whose open kernel modules list it (gpu_release
    rows: per branch, the first release from which every later one of the branch lists its PCI id; a branch newer
    than all of them lists it from its first). The list is the open modules': not judged for the proprietary ones."""
    driver, row = stack.get("driver"), mx.gpu_release_row(matrix, target["name"])
    if not driver or row is None or stack.get("driver_flavor") == "proprietary":
        return []
    since = {int(b): str(x) for b, x in row["since"].items()}
    branch, label = _branch(driver), target["label"]
    bare = len(v.parse(driver) or ()) == 1  # "580": the branch's newest release
    if branch > max(since) or (branch in since and (bare or v.compare(driver, since[branch]) >= 0)):
        return [r.check("gpu_release", r.OK, f"driver {driver}'s open kernel modules list {label}", mx.cite(row))]
    later = ", ".join(f"{x} (branch {b})" for b, x in sorted(since.items()) if b > branch)
    newer = f"; or a branch that lists it: {later}" if later else ""
    # Not in `since` and not newer than all of it (that returned above): some later branch lists it.
    fix = f"upgrade to {since[branch]} or newer{newer}" if branch in since else f"use {later}"
    return [
        r.check(
            "gpu_release",
            r.WARNING,
            f"driver {driver}'s open kernel modules do not list {label} among the GPUs they support "
            f"(NVIDIA/open-gpu-kernel-modules at that release): {fix}",
            mx.cite(row),
        )
    ]


def _libraries(matrix, stack, target):
    """cuDNN and NCCL against the compute capabilities their builds carry kernels for (lib_archs rows): cuDNN 9.11 on
    has none before Turing, NCCL 2.28.3 on none for Maxwell."""
    out, label, cc = [], target["label"], target["cc"]
    for name, title in (("cudnn", "cuDNN"), ("nccl", "NCCL")):
        version = stack.get(name)
        row = mx.lib_archs_row(matrix, name, version) if version else None
        if row is None:
            continue
        if v.matches(row["cc"], cc):
            out.append(r.check(f"gpu_{name}", r.OK, f"{title} {version} carries kernels for {label}", mx.cite(row)))
            continue
        older = [o["version"] for o in mx.rows(matrix, "lib_archs") if o["name"] == name and v.matches(o["cc"], cc)]
        fix = f"use a {title} of {' or '.join(older)}" if older else f"no {title} in the matrix carries them"
        msg = f"{title} {version} carries no kernels for {label}: its builds are for compute capability {row['cc']}"
        msg += f"; {fix}"
        out.append(r.check(f"gpu_{name}", r.VIOLATION, msg, mx.cite(row)))
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


def _builds(matrix, stack):
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
