# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The thin I/O layer of stack_facts: which files to read under a root, which commands to run.

Every path is joined under `root` so tests point it at a tree of real files. Commands go through the `run`
callable (AnsibleModule.run_command in the module) as argv lists. Parsing lives in parse.
"""

from __future__ import annotations

import glob
import os
import re

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import packages as pk
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import parse as sp

LIB_DIRS = ["usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib"]
PKG_GLOBS = ["nvidia-*", "cuda-*", "libnvidia-compute-*", "libcudnn*", "cudnn*", "libnccl*", "kmod-nvidia*"]
# dist-info names (normalised to "_") of the frameworks and the NVIDIA wheels they pull in.
FRAMEWORKS = {
    "torch": "torch",
    "tensorflow": "tensorflow",
    "tensorflow_cpu": "tensorflow",
    "jax": "jax",
    "horovod": "horovod",
}
# CUDA 13's toolkit wheels carry no suffix (nvidia-cuda-runtime 13.x); cuDNN and NCCL keep theirs (-cu13).
WHEELS = {
    "cudnn": re.compile(r"nvidia_cudnn_cu(\d+)"),
    "nccl": re.compile(r"nvidia_nccl_cu(\d+)"),
    "cuda_runtime": re.compile(r"nvidia_cuda_runtime(?:_cu(\d+))?"),
}


class Scanner:
    def __init__(self, root="/", run=None, probe_libraries=True):
        self.root = root
        self.run = run
        # Only load the host's own libcuda: a library under a test root may be for another machine.
        self.probe_libraries = probe_libraries and os.path.realpath(root) == "/"

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    def read(self, rel, limit=1 << 20):
        try:
            with open(rel if rel.startswith(self.root) else self.path(rel), encoding="utf-8", errors="replace") as f:
                return f.read(limit)
        except OSError:
            return None

    def glob(self, pattern):
        return sorted(glob.glob(self.path(pattern)))

    def command(self, argv):
        if self.run is None or not os.path.exists(argv[0]):
            return None
        rc, out, _err = self.run(argv)
        return out if rc == 0 else None

    def modinfo(self, path):
        """A kernel module's version (modinfo reads compressed modules too); None without modinfo."""
        for tool in ("/usr/sbin/modinfo", "/sbin/modinfo"):
            if os.path.exists(tool):
                return (self.command([tool, "-F", "version", path]) or "").strip() or None
        return None

    def resolve(self, full):
        """Follow links like realpath, but keep absolute targets under root (/usr/local/cuda -> /etc/alternatives)."""
        for _hop in range(40):
            if not os.path.islink(full):
                break
            target = os.readlink(full)
            full = self.path(target) if os.path.isabs(target) else os.path.join(os.path.dirname(full), target)
        return os.path.normpath(full)

    def show(self, full):
        """A path as the user knows it on the host (without the test root)."""
        return "/" + os.path.relpath(full, self.root) if self.root not in ("", "/") else full

    # --- components ---------------------------------------------------------------------------------------
    def packages(self):
        if os.path.exists("/usr/bin/dpkg-query") and os.path.isdir(self.path("var/lib/dpkg")):
            argv = [
                "/usr/bin/dpkg-query",
                "--admindir",
                self.path("var/lib/dpkg"),
                "-W",
                "-f",
                "${Package}\t${Version}\t${db:Status-Abbrev}\n",
                *PKG_GLOBS,
            ]
            rc, out, _err = self.run(argv)  # rc 1 only says some pattern matched nothing
            return "dpkg", pk.classify(sp.package_lines(out if rc in (0, 1) else ""))
        if os.path.exists("/usr/bin/rpm") and self.root in ("", "/"):
            out = self.command(["/usr/bin/rpm", "-qa", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n"])
            return "rpm", pk.classify(sp.package_lines(out))
        return None, {}

    def driver(self, pkgs, manager):
        out = {
            "present": False,
            "loaded_version": None,
            "loaded_source": None,
            "flavor": None,
            "package_version": None,
            "package_name": None,
            "library_version": None,
            "max_cuda": None,
            "max_cuda_source": None,
        }
        proc = sp.proc_driver_version(self.read("proc/driver/nvidia/version"))
        sysv = sp.sys_module_version(self.read("sys/module/nvidia/version"))
        if proc:
            out.update(
                loaded_version=proc["version"], flavor=proc["flavor"], loaded_source="/proc/driver/nvidia/version"
            )
        elif sysv:
            out.update(loaded_version=sysv, loaded_source="/sys/module/nvidia/version")
        if pkgs.get("driver"):
            first = pkgs["driver"][0]
            out.update(package_version=first["version"], package_name=first["package"], package_source=manager)
            out["package_flavor"] = pk.driver_flavor(p["package"] for p in pkgs["driver"])
            out["flavor"] = out["flavor"] or out["package_flavor"]
        for lib_dir in LIB_DIRS:
            for lib in self.glob(f"{lib_dir}/libcuda.so.*"):
                found = sp.library_version(os.path.basename(lib), "libcuda")
                if found and len(found.split(".")) > 1:
                    out["library_version"], out["library_source"] = found, self.show(lib)
                    break
            if out["library_version"]:
                break
        out["present"] = any(out[k] for k in ("loaded_version", "package_version", "library_version"))
        userspace = out["package_version"] or out["library_version"]
        # After an un-rebooted upgrade the new user-space libraries meet the old kernel module: NVML then fails
        # with "Driver/library version mismatch". Flag it here where both versions are known.
        out["mismatch"] = bool(out["loaded_version"] and userspace and out["loaded_version"] != userspace)
        if self.probe_libraries:
            code = _cuda_driver_version()
            if code:
                out.update(max_cuda=v.cuda_from_code(code), max_cuda_source="libcuda cuDriverGetVersion")
        return out

    def cuda(self, pkgs):
        toolkits = []
        for home in self.glob("usr/local/cuda-*"):
            if os.path.islink(home) or not os.path.isdir(home):
                continue  # cuda-12 -> /etc/alternatives/cuda-12: the real directory is listed by itself
            toolkits.append(self._toolkit(home))
        distro = self.path("usr/lib/nvidia-cuda-toolkit")
        if os.path.isdir(distro):
            tk = self._toolkit(distro, nvcc=self.path("usr/bin/nvcc"))
            for p in pkgs.get("cuda_toolkit", []):
                if p["package"] == "nvidia-cuda-toolkit" and not tk["version"]:
                    tk.update(version=p["version"], source="package nvidia-cuda-toolkit")
            toolkits.append(tk)
        link = self.path("usr/local/cuda")
        default = None
        if os.path.islink(link) or os.path.isdir(link):
            target = self.resolve(link)
            default = next((t["path"] for t in toolkits if self.resolve(self.path(t["path"])) == target), None)
            default = default or self.show(target)
        return {"present": any(t["version"] for t in toolkits), "toolkits": toolkits, "default": default}

    def _toolkit(self, home, nvcc=None):
        version = sp.cuda_version_json(self.read(os.path.join(home, "version.json")))
        source = "version.json"
        if not version:
            version, source = sp.cuda_version_txt(self.read(os.path.join(home, "version.txt"))), "version.txt"
        if not version:
            nvcc = nvcc or os.path.join(home, "bin", "nvcc")
            version, source = sp.nvcc_version(self.command([nvcc, "--version"])), "nvcc --version"
        return {
            "path": self.show(home),
            "version": version,
            "source": f"{self.show(home)} {source}" if version else None,
        }

    def library(self, component, *, headers, parser, stem, pkgs, manager):
        findings = []
        for pattern in headers:
            for header in self.glob(pattern):
                found = parser(self.read(header))
                if found:
                    findings.append({"version": found, "source": f"header {self.show(header)}", "scope": "system"})
        for lib_dir in [*LIB_DIRS, "usr/local/cuda*/lib64", "usr/local/cuda*/targets/*/lib"]:
            for lib in self.glob(f"{lib_dir}/{stem}.so.*"):
                found = sp.library_version(os.path.basename(lib), stem)
                if found and not os.path.islink(lib):
                    findings.append({"version": found, "source": f"library {self.show(lib)}", "scope": "system"})
        for p in pkgs.get(component, []):
            findings.append(
                {
                    "version": p["version"],
                    "source": f"{manager} package {p['package']} {p['raw_version']}",
                    "cuda": p["cuda"],
                    "scope": "package",
                }
            )
        return summarise(findings)

    def simple_tool(self, component, tool, pkgs, manager):
        findings = [
            {"version": p["version"], "source": f"{manager} package {p['package']}"} for p in pkgs.get(component, [])
        ]
        found = sp.first_line_version(self.command([self.path(tool), "--version"]))
        if found:
            findings.insert(0, {"version": found, "source": f"/{tool} --version"})
        return summarise(findings)

    def site_dirs(self, env):
        full = self.path(env)
        if os.path.isfile(full):  # an interpreter: ask it (argv, no shell) where its site-packages are
            out = self.command([full, "-c", "import json,site;print(json.dumps(site.getsitepackages()))"])
            return [d for d in sp_json_list(out) if os.path.isdir(d)]
        if glob.glob(os.path.join(full, "*.dist-info")):
            return [full]
        return sorted(glob.glob(os.path.join(full, "lib", "python3*", "*-packages")))

    def python_env(self, env):
        """Frameworks and NVIDIA wheels in one environment, from dist-info and version files only."""
        frameworks, wheels, jax_plugin = {}, {}, None
        for site in self.site_dirs(env):
            for meta_path in glob.glob(os.path.join(site, "*.dist-info", "METADATA")):
                dist = os.path.basename(os.path.dirname(meta_path))[: -len(".dist-info")].rsplit("-", 1)[0]
                dist = dist.lower().replace("-", "_").replace(".", "_")
                # jax's CUDA build is a separate wheel: jax-cuda12-plugin / jax-cuda13-plugin.
                found = re.fullmatch(r"jax_cuda(\d+)_plugin", dist)
                if found:
                    jax_plugin = (found.group(1), self.show(meta_path))
                    continue
                wheel = next(((k, m) for k, p in WHEELS.items() for m in [p.fullmatch(dist)] if m), None)
                name = FRAMEWORKS.get(dist) or (wheel[0] if wheel else None)
                if not name:
                    continue
                meta = sp.dist_metadata(self.read(meta_path, limit=1 << 16))
                if not meta:
                    continue
                source = self.show(meta_path)
                if name in WHEELS:
                    wheels[name] = {
                        "version": meta["version"],
                        "source": f"wheel {meta['name']} {source}",
                        "cuda": wheel[1].group(1) or str(v.major(meta["version"])),
                    }
                    continue
                frameworks[name] = framework_entry(name, meta, source=source, site=site, read=self.read, env=env)
        if jax_plugin and "jax" in frameworks:
            frameworks["jax"].update(jax_build(jax_plugin, wheels))
        return frameworks, wheels


def jax_build(plugin, wheels):
    """jax's CUDA from its plugin wheel (jax-cuda12-plugin: 12), made exact by the runtime wheel installed with it
    (nvidia-cuda-runtime-cu12 12.9.79: 12.9); the cuDNN and NCCL wheels of that major are what it loads."""
    major, source = plugin
    found = {k: w for k, w in wheels.items() if w["cuda"] == major}
    runtime = found.get("cuda_runtime")
    build = {"cuda": major, "cuda_source": f"wheel {source}"}
    if runtime:
        build = {"cuda": v.major_minor(runtime["version"]), "cuda_source": f"{runtime['source']} with {source}"}
    build["bundles"] = {k: found[k]["version"] for k in ("cudnn", "nccl") if k in found}
    return build


def framework_entry(name, meta, *, source, site, read, env):
    entry = {"version": meta["version"], "env": env, "source": source, "cuda": None, "cuda_source": None, "bundles": {}}
    for dist, pin in meta["requires"].items():
        for key, prefix in (
            ("cudnn", "nvidia-cudnn-cu"),
            ("nccl", "nvidia-nccl-cu"),
            ("cuda_runtime", "nvidia-cuda-runtime-cu"),
        ):
            if dist.startswith(prefix):
                entry["bundles"][key] = pin
    if name == "torch":
        info = sp.torch_version_py(read(os.path.join(site, "torch", "version.py")))
        if info:
            entry.update(cuda=info["cuda"], cuda_source="torch/version.py")
    elif name == "tensorflow":
        info = sp.tf_build_info(read(os.path.join(site, "tensorflow", "python", "platform", "build_info.py")))
        if info:
            entry.update(cuda=info["cuda"], cuda_source="tensorflow build_info.py", built_cudnn=info["cudnn"])
    elif name == "horovod":
        # The 0.28.1 sdist needs a C++17 patch to build against torch >= 2.1 (horovod/horovod#3996); the role
        # that built it leaves a marker beside the package so the facts can say the build is patched.
        build = sp.horovod_build(read(os.path.join(site, "horovod", "gpufleet_build.json")), meta["version"])
        entry.update(build or {"patched": False, "patch": None, "gpu_operations": None})
    if not entry["cuda"] and v.cuda_from_variant(meta["version"]):
        entry.update(cuda=v.cuda_from_variant(meta["version"]), cuda_source="local version tag")
    elif not entry["cuda"] and entry["bundles"].get("cuda_runtime"):
        entry.update(cuda=v.major_minor(entry["bundles"]["cuda_runtime"]), cuda_source="Requires-Dist")
    return entry


def summarise(findings):
    """{present, version, source, consistent, findings}: the most precise version leads (most dotted parts)."""
    if not findings:
        return {"present": False, "version": None, "source": None, "consistent": True, "findings": []}
    best = max(findings, key=lambda f: len(v.parse(f["version"]) or ()))
    consistent = all(v.prefix_match(f["version"], best["version"]) for f in findings)
    return {
        "present": True,
        "version": best["version"],
        "source": best["source"],
        "consistent": consistent,
        "findings": findings,
    }


def sp_json_list(out):
    import json

    try:
        data = json.loads(out or "[]")
    except ValueError:
        return []
    return [d for d in data if isinstance(d, str)]


def _cuda_driver_version():
    """cuDriverGetVersion() from the host's libcuda: the highest CUDA the installed driver supports.

    It needs no GPU and no cuInit (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html).
    """
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        code = ctypes.c_int(0)
        return code.value if lib.cuDriverGetVersion(ctypes.byref(code)) == 0 and code.value else None
    except (OSError, AttributeError):
        return None
