# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn stack_assert's inputs into one shape: from `versions:` as given, or from stack_facts' findings.

Pure functions. The shape ("stack"):
  driver, driver_flavor, max_cuda, max_cuda_source, cuda [list], cudnn, cudnn_cuda, nccl, nccl_cuda, fabricmanager,
  container_toolkit, horovod, frameworks [{name, version, cuda, cuda_source, bundles, env}], gpus [{name, cc}],
  origin, notes
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx

_CC = re.compile(r"(\d+)\.(\d)")
_SM = re.compile(r"(?:sm|compute)_?(\d+)(\d)[a-z]?", re.I)
KEYS = ("driver", "cuda", "cudnn", "nccl", "fabricmanager", "container_toolkit", "dcgm", "framework", "horovod")


class InputError(ValueError):
    """A `versions`/`expect` value stack_assert cannot read; the message names it and the fix."""


def parse_framework(value, where="versions.framework"):
    """{name, version, cuda?} from a dict or the shorthand "torch==2.7.1+cu128" / "torch==2.7.1"."""
    if isinstance(value, dict):
        if not value.get("name") or not value.get("version"):
            raise InputError(f"{where} {value!r} needs name and version, e.g. {{name: torch, version: '2.7.1'}}")
        return {
            "name": str(value["name"]).lower(),
            "version": str(value["version"]),
            "cuda": str(value["cuda"]) if value.get("cuda") else None,
        }
    found = re.fullmatch(r"\s*([A-Za-z][\w.-]*)\s*(?:\[([\w,-]+)\])?\s*==\s*([0-9][\w.+-]*)\s*", str(value or ""))
    if not found:
        raise InputError(f"{where} {value!r} is not NAME==VERSION; write e.g. 'torch==2.7.1+cu128'")
    # jax[cuda13]==0.12.0: the extra names the CUDA major of the pip wheels (tensorflow[and-cuda] names none;
    # jax[cuda12-local] loads the system's CUDA, which the rows do not describe).
    extra = re.search(r"(?<![\w-])cuda(\d+)(?![\w-])", found.group(2) or "")
    return {"name": found.group(1).lower(), "version": found.group(3), "cuda": extra.group(1) if extra else None}


def _text(value, key):
    if value in (None, ""):
        return None
    if isinstance(value, (dict, list)):
        raise InputError(f"versions.{key} must be a version string, got {value!r}")
    if v.parse(value) is None:
        raise InputError(f"versions.{key} {value!r} is not a version (e.g. '570.133.20', '12.8', '9.8.0')")
    return str(value)


def from_versions(versions):
    """The stack as declared (e.g. the inventory's gpufleet_stack); unknown keys are ignored (driver_flavor...)."""
    versions = versions or {}
    if not isinstance(versions, dict):
        raise InputError(f"versions must be a dict like gpufleet_stack, got {type(versions).__name__}")
    cuda = versions.get("cuda")
    cudas = [_text(c, "cuda") for c in (cuda if isinstance(cuda, list) else [cuda]) if c not in (None, "")]
    frameworks = []
    if versions.get("framework"):
        fw = parse_framework(versions["framework"])
        frameworks.append(dict(fw, cuda_source="given" if fw["cuda"] else None, bundles={}, env=None))
    nccl = versions.get("nccl")
    flavor = versions.get("driver_flavor")
    if flavor not in (None, "") and flavor not in mx.FLAVORS:
        raise InputError(f"versions.driver_flavor {flavor!r} is not one of {', '.join(mx.FLAVORS)}")
    given = versions.get("gpu")
    return {
        "origin": "versions",
        "driver": _text(versions.get("driver"), "driver"),
        "driver_flavor": flavor or None,
        "gpus": gpus(given if isinstance(given, list) else [given] if given not in (None, "") else [], "versions.gpu"),
        "max_cuda": None,
        "max_cuda_source": None,
        "cuda": cudas,
        "cudnn": _text(versions.get("cudnn"), "cudnn"),
        "cudnn_cuda": None,
        "nccl": _text(v.package_version(nccl) if nccl else None, "nccl"),
        "nccl_cuda": v.package_cuda_build(nccl),
        "fabricmanager": _text(versions.get("fabricmanager"), "fabricmanager"),
        "container_toolkit": _text(versions.get("container_toolkit"), "container_toolkit"),
        "dcgm": _text(versions.get("dcgm"), "dcgm"),
        "horovod": _text(versions.get("horovod"), "horovod"),
        "frameworks": frameworks,
        "notes": [],
    }


def gpus(items, where="gpus"):
    """[{name, cc}] from gpu_facts' GPUs (dicts with name and compute_capability) or from what a user writes (product
    names, compute capabilities, sm_XY)."""
    out = []
    for item in items or []:
        if isinstance(item, dict) and (item.get("name") or item.get("compute_capability")):
            out.append(from_fact(item))
        elif isinstance(item, (str, int, float)) and str(item).strip():
            out.append(parse_gpu(item))
        else:
            raise InputError(f"{where}: {item!r} is not a GPU; give a product name (H100), a compute capability "
                             "('9.0') or gpu_facts' GPUs")  # fmt: skip
    return out


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


def from_installed(installed):
    """The stack as stack_facts found it on a host (ansible_facts.gpufleet_installed)."""
    installed = installed or {}
    driver = installed.get("driver") or {}
    toolkits = (installed.get("cuda") or {}).get("toolkits") or []
    default = (installed.get("cuda") or {}).get("default")
    # /usr/local/cuda's target first: it is what builds pick up.
    toolkits = sorted(toolkits, key=lambda t: t.get("path") != default)
    cudnn = installed.get("cudnn") or {}
    nccl = installed.get("nccl") or {}
    frameworks, horovod = [], None
    for name, entries in (installed.get("frameworks") or {}).items():
        for entry in entries if isinstance(entries, list) else [entries]:
            if name == "horovod":
                horovod = horovod or entry.get("version")
                continue
            frameworks.append(
                {
                    "name": name,
                    "version": entry.get("version"),
                    "cuda": entry.get("cuda"),
                    "cuda_source": entry.get("cuda_source"),
                    "bundles": entry.get("bundles") or {},
                    "env": entry.get("env"),
                    "built_cudnn": entry.get("built_cudnn"),
                }
            )
    notes = []
    if driver.get("mismatch"):
        notes.append(driver)
    return {
        "origin": "host",
        "driver": driver.get("loaded_version") or driver.get("package_version") or driver.get("library_version"),
        "driver_flavor": driver.get("flavor"),
        "gpus": [],
        "max_cuda": driver.get("max_cuda"),
        "max_cuda_source": driver.get("max_cuda_source"),
        "cuda": [t["version"] for t in toolkits if t.get("version")],
        "cudnn": _system_version(cudnn),
        "cudnn_cuda": _finding_cuda(cudnn),
        "nccl": _system_version(nccl),
        "nccl_cuda": _finding_cuda(nccl),
        "fabricmanager": (installed.get("fabricmanager") or {}).get("version"),
        "container_toolkit": (installed.get("container_toolkit") or {}).get("version"),
        "dcgm": (installed.get("dcgm") or {}).get("version"),
        "horovod": horovod,
        "frameworks": frameworks,
        "notes": notes,
        "driver_detail": driver,
    }


def _system_version(component):
    """The version the system provides (headers, libraries, packages); a wheel serves only its own venv."""
    system = [f for f in component.get("findings") or [] if f.get("scope") != "wheel" and f.get("version")]
    return max((f["version"] for f in system), key=lambda x: len(v.parse(x) or ()), default=None)


def _finding_cuda(component):
    """The CUDA build a package finding names ("12.8" from +cuda12.8, "12" from -cuda-12), if any."""
    for finding in component.get("findings") or []:
        if finding.get("cuda") and finding.get("scope") == "package":
            return str(finding["cuda"])
    return None


def check_expect(expect):
    """Validate `expect` pins early so a typo fails with its name, not deep in a comparison."""
    for key, pin in (expect or {}).items():
        if key not in KEYS:
            raise InputError(f"expect.{key} is not one of {', '.join(KEYS)}")
        if key == "framework":
            parse_framework(pin, "expect.framework")
            continue
        for one in pin if isinstance(pin, list) else [pin]:
            bad = v.valid_spec(one)
            if bad:
                raise InputError(f"expect.{key} {one!r}: {bad}")
