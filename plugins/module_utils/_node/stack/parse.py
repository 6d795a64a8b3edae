# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the files and command outputs that tell which NVIDIA stack is installed.

Pure functions over text (no file or process access), fed by stack_facts. Each returns None when the text does
not hold what it looks for, so an absent or foreign file reads as "absent", never as an error.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v


def proc_driver_version(text):
    """/proc/driver/nvidia/version -> {"version", "flavor"}.

    Proprietary: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Fri Feb 28 ..."; open:
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build ...".
    """
    for line in (text or "").splitlines():
        if line.startswith("NVRM version:"):
            found = re.search(r"\s(\d+\.\d+(?:\.\d+)?)\s", line + " ")
            if found:
                return {"version": found.group(1), "flavor": "open" if "Open Kernel Module" in line else "proprietary"}
    return None


def sys_module_version(text):
    """/sys/module/nvidia/version holds the bare loaded version ("570.133.20\\n")."""
    text = (text or "").strip()
    return text if re.fullmatch(r"\d+\.\d+(\.\d+)?", text) else None


def nvcc_version(text):
    """`nvcc --version` -> full version: "Cuda compilation tools, release 12.2, V12.2.140" -> "12.2.140".

    Falls back to the release ("12.2") when the V-number is missing.
    """
    found = re.search(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)", text or "")
    if found:
        return found.group(2)
    found = re.search(r"release (\d+\.\d+)", text or "")
    return found.group(1) if found else None


def cuda_version_json(text):
    """CUDA's version.json (11.1+): {"cuda": {"name": "CUDA SDK", "version": "12.8.1"}, ...} -> "12.8.1"."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    cuda = data.get("cuda") if isinstance(data, dict) else None
    return cuda.get("version") if isinstance(cuda, dict) else None


def cuda_version_txt(text):
    """Old toolkits' version.txt: "CUDA Version 10.2.89" -> "10.2.89"."""
    found = re.search(r"CUDA Version (\d+\.\d+(?:\.\d+)?)", text or "")
    return found.group(1) if found else None


def nvidia_smi(text):
    """Plain `nvidia-smi` banner -> {"driver", "cuda"}.

    Older: "Driver Version: 535.54.03   CUDA Version: 12.2"; since 580 the labels read
    "KMD Version: 580.65.06   CUDA UMD Version: 13.0" in some builds.
    """
    text = text or ""
    driver = re.search(r"(?:Driver|KMD) Version:\s*(\d+\.\d+(?:\.\d+)?)", text)
    cuda = re.search(r"CUDA (?:UMD )?Version:\s*(\d+\.\d+)", text)
    if not driver and not cuda:
        return None
    return {"driver": driver.group(1) if driver else None, "cuda": cuda.group(1) if cuda else None}


def _defines(text):
    return {
        m.group(1): m.group(2) for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(\S+)", text or "", re.M)
    }


def cudnn_header(text):
    """cudnn_version.h (8+) or cudnn.h (7) -> "M.m.p" from CUDNN_MAJOR/MINOR/PATCHLEVEL."""
    d = _defines(text)
    try:
        return f"{int(d['CUDNN_MAJOR'])}.{int(d['CUDNN_MINOR'])}.{int(d['CUDNN_PATCHLEVEL'])}"
    except (KeyError, ValueError):
        return None


def nccl_header(text):
    """nccl.h -> "M.m.p" from NCCL_MAJOR/MINOR/PATCH (cross-checked with NCCL_VERSION_CODE when numeric)."""
    d = _defines(text)
    try:
        version = f"{int(d['NCCL_MAJOR'])}.{int(d['NCCL_MINOR'])}.{int(d['NCCL_PATCH'])}"
    except (KeyError, ValueError):
        return None
    code = d.get("NCCL_VERSION_CODE", "")
    if code.isdigit() and v.nccl_from_code(code) != version:
        return None
    return version


def library_version(filename, stem):
    """Version from a library file name: ("libcudnn.so.9.8.0", "libcudnn") -> "9.8.0"; "libnccl.so.2" -> "2".

    A major-only name (the SONAME link, or the only name a PyPI wheel ships) says just the major.
    """
    found = re.fullmatch(re.escape(stem) + r"\.so\.(\d+(?:\.\d+)*)", filename or "")
    return found.group(1) if found else None


def dist_metadata(text):
    """A *.dist-info/METADATA -> {"name", "version", "requires": {dist: pin}} for the nvidia-* pins.

    Requires-Dist lines such as 'nvidia-cudnn-cu12==9.7.1.26; platform_system == "Linux"' give the CUDA
    libraries a framework wheel pulls in.
    """
    headers, requires = {}, {}
    for line in (text or "").splitlines():
        if not line.strip():
            break  # the body (long description) starts after the first blank line
        key, _sep, value = line.partition(":")
        value = value.strip()
        if key in ("Name", "Version"):
            headers[key.lower()] = value
        elif key == "Requires-Dist":
            found = re.match(r"([A-Za-z0-9_.-]+)\s*(?:\[[^\]]*\])?\s*\(?\s*==\s*([^;,\s)]+)", value)
            name = found.group(1).lower().replace("_", "-") if found else ""
            if name.startswith("nvidia-"):  # nvidia_cudnn_cu12 is the same distribution (PEP 503)
                requires[name] = found.group(2)
    if "name" not in headers or "version" not in headers:
        return None
    return {"name": headers["name"], "version": headers["version"], "requires": requires}


def torch_version_py(text):
    """torch/version.py -> {"version", "cuda"}; read as text because importing torch takes seconds."""
    version = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text or "", re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]+)?=\s*['\"]([^'\"]+)['\"]", text or "", re.M)
    if not version:
        return None
    return {"version": version.group(1), "cuda": cuda.group(1) if cuda else None}


def horovod_build(text, version):
    """horovod/gpufleet_build.json, written by the gpufleet.stack.horovod role next to the build it describes ->
    {"patched", "patch", "gpu_operations"}; None when absent, unreadable or about another Horovod version
    (a marker left behind by an uninstall must not vouch for a later, different install)."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(data, dict) or str(data.get("horovod")) != str(version):
        return None
    return {
        "patched": bool(data.get("patched")),
        "patch": data.get("patch") or None,
        "gpu_operations": data.get("gpu_operations") or None,
    }


def tf_build_info(text):
    """tensorflow/python/platform/build_info.py -> {"cuda", "cudnn"} the wheel was built against."""
    cuda = re.search(r"['\"]cuda_version['\"]\s*[:,]\s*['\"]([\d.]+)['\"]", text or "")
    cudnn = re.search(r"['\"]cudnn_version['\"]\s*[:,]\s*['\"]([\d.]+)['\"]", text or "")
    if not cuda and not cudnn:
        return None
    return {"cuda": cuda.group(1) if cuda else None, "cudnn": cudnn.group(1) if cudnn else None}


def first_line_version(text):
    """The first dotted version in a tool's --version output (nvidia-ctk, nv-fabricmanager)."""
    found = re.search(r"(\d+\.\d+\.\d+(?:\.\d+)?)", text or "")
    return found.group(1) if found else None


def package_lines(text):
    """`dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'` or rpm's name\\tversion-release lines ->
    {name: version} of installed packages. dpkg rows count when their status letter (the second) is "i": "ii", and
    "hi" for a package held by apt-mark/dpkg --set-selections, as the install roles leave theirs; "rc" (removed,
    config files left) and half-installed states are dropped.
    """
    out = {}
    for line in (text or "").splitlines():
        cols = line.split("\t")
        if len(cols) < 2 or not cols[1]:
            continue
        if len(cols) > 2 and cols[2].strip() and cols[2][1:2] != "i":
            continue
        out[cols[0]] = cols[1]
    return out
