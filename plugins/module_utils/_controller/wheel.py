# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pure-Python wheel, pinned by version and SHA-256, turned into the files a host gets (python_wheel's rules).

The controller downloads and checks the wheel; the host only receives its modules and metadata as files, so it
needs neither pip nor the package index, and nothing else a distribution package would bring (Debian's
python3-pynvml depends on libnvidia-ml1, which would fight the NVIDIA driver's own NVML).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import zipfile

# \Z, not $: `$` also matches before a trailing newline, which would reach the wheel's file name.
VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*\Z")
SHA256 = re.compile(r"^[0-9a-f]{64}\Z")


class WheelError(Exception):
    """Bad input or a bad wheel; the message names the variable and says what to do."""


def normalized(name):
    """The wheel file name form of a distribution name (PEP 427): nvidia-ml-py -> nvidia_ml_py."""
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_name(name, version):
    """The file name a pure-Python (py3-none-any) wheel of name==version has."""
    return f"{normalized(name)}-{version}-py3-none-any.whl"


def expected_sha256(version, sha256, known, var):
    """The digest the wheel must have: sha256 when given, else the collection's recorded one for this version.

    var is the prefix of the caller's variables (pynvml_), so messages name what the user sets."""
    if not VERSION.match(str(version or "")):
        raise WheelError(f'{var}version is {version!r}; give an exact release such as "13.615.71" (quoted)')
    if sha256:
        digest = str(sha256).strip().lower().removeprefix("sha256:")
        if not SHA256.match(digest):
            raise WheelError(f"{var}sha256 is {sha256!r}; give the wheel's SHA-256 as 64 hex digits")
        return digest
    if version in (known or {}):
        return known[version]
    raise WheelError(
        f"{var}version is {version!r}, for which the collection records no SHA-256 (it does for "
        f"{', '.join(sorted(known or {})) or 'none'}); set {var}sha256 to the wheel's digest as the package index "
        f"lists it (PyPI: the file's sha256 under Download files)"
    )


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def check_digest(path, expected, origin):
    """Raise unless the file at path has the expected SHA-256."""
    actual = file_sha256(path)
    if actual != expected:
        raise WheelError(
            f"{os.path.basename(path)} from {origin} has SHA-256 {actual}, not the pinned {expected}: the file is not "
            "the release that was pinned (a changed mirror, a truncated download, or another build); nothing was "
            "installed"
        )


def pip_download_argv(python, name, version, dest, index_url=""):
    """The controller command that fetches exactly this wheel, nothing it depends on, never an sdist build.

    No index_url: pip's own configuration (pip.conf, PIP_INDEX_URL) decides, as for any pip on that machine."""
    argv = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check"]
    argv += ["--dest", dest, *(["--index-url", index_url] if index_url else [])]
    return [*argv, f"{name}=={version}"]


def _record_digests(record_text):
    """{path: urlsafe-base64 sha256} from a wheel's RECORD."""
    digests = {}
    for line in record_text.splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[1].startswith("sha256="):
            digests[parts[0]] = parts[1][len("sha256=") :]
    return digests


def _headers(text):
    """RFC 822 style headers (METADATA, WHEEL) up to the first blank line."""
    found = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep and not key.startswith((" ", "\t")):
            found.setdefault(key.strip().lower(), value.strip())
    return found


def members(path, name, version, modules):
    """{relative path: text} of the wheel's top-level modules and its METADATA, each checked against RECORD.

    The METADATA goes to an unversioned <name>.dist-info, so a version change rewrites it in place and
    importlib.metadata still reports the version; the wheel's other files (examples, RECORD) stay out."""
    dist_info = f"{normalized(name)}-{version}.dist-info"
    try:
        with zipfile.ZipFile(path) as whl:
            names = set(whl.namelist())
            wanted = {f"{m}.py": f"{m}.py" for m in modules}
            wanted[f"{dist_info}/METADATA"] = f"{normalized(name)}.dist-info/METADATA"
            for required in [f"{dist_info}/WHEEL", f"{dist_info}/RECORD", *wanted]:
                if required not in names:
                    raise WheelError(
                        f"{os.path.basename(path)} has no {required}: it is not {name} {version} "
                        f"with the module(s) {', '.join(modules)}"
                    )
            wheel = _headers(whl.read(f"{dist_info}/WHEEL").decode())
            if wheel.get("root-is-purelib", "").lower() != "true":
                raise WheelError(f"{os.path.basename(path)} is not a pure-Python wheel (Root-Is-Purelib is not true)")
            record = _record_digests(whl.read(f"{dist_info}/RECORD").decode())
            files = {}
            for member, dest in wanted.items():
                data = whl.read(member)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                if record.get(member) != digest:
                    raise WheelError(f"{os.path.basename(path)}: {member} does not match the wheel's RECORD")
                files[dest] = data.decode("utf-8")
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as err:
        raise WheelError(f"{os.path.basename(path)} cannot be read as a wheel: {err}") from err
    meta = _headers(files[f"{normalized(name)}.dist-info/METADATA"])
    if normalized(meta.get("name", "")) != normalized(name) or meta.get("version") != version:
        raise WheelError(
            f"{os.path.basename(path)} holds {meta.get('name')} {meta.get('version')}, not {name} {version}"
        )
    return files


def host_files(dest, files):
    """{absolute host path: text} for config_files."""
    return {os.path.join(dest, rel): text for rel, text in sorted(files.items())}


def build_key(inputs, python, machine, patch="", against=None):
    """The cache key of a wheel compiled on a node (horovod's horovod_wheel_cache): 16 hex digits of the SHA-256 of
    every declared build input, the interpreter (sys.implementation.cache_tag) and machine the wheel is for, the text
    of the patch applied (a changed patch under the same name is another build), and the libraries it compiles
    against (CUDA and NCCL for Horovod's NCCL operations). Equal keys mean the same wheel would be built."""
    if not isinstance(inputs, dict):
        raise WheelError(f"the build inputs must be a mapping, got {type(inputs).__name__}")
    for what, value in (("python", python), ("machine", machine)):
        if not isinstance(value, str) or not value:
            raise WheelError(f"the build key needs the node's {what}, got {value!r}")
    key = dict(inputs, python=python, machine=machine)
    if patch:
        key["patch_sha256"] = hashlib.sha256(patch.encode()).hexdigest()
    if against:
        key["against"] = against
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
