"""Sandbox nodes only: keep the code that zipimport compiles from Ansible's AnsiballZ payloads.

Every module task sends its module_utils in a zip that the node's Python imports with zipimport, and zipimport
keeps no bytecode: each task compiles ansible.module_utils.basic and the rest from source again. Measured on
these machines (2026-12-07, py-spy), that compile is about half of a module task's CPU on a node.

This hook answers zipimport's compile from a cache keyed by the source's SHA-256 and Python's bytecode magic
number, so the same source compiles once per Python version across the sandbox. The code run is the code
compile() returns for that source; each code object gets the payload's own file name back, so tracebacks and
warnings name the file as they would have. Any problem with the cache falls back to compiling.

sandbox/fleet mounts this file, its .pth and the cache directory into every node. The venv's harness .pth (`make
venv`) loads it too, for the modules the controller runs on itself, where GPUFLEET_PYCODE_CACHE names a cache of the
controller's own (tests/conftest.py sets it). It is never installed on a real host: it is a test harness speed-up,
like a compiler cache.
"""

import os
import zipimport

CACHE = os.environ.get("GPUFLEET_PYCODE_CACHE", "/var/cache/gpufleet-pycode")
_compile_source = getattr(zipimport, "_compile_source", None)  # 3.11 and 3.13 have it


def _renamed(code, filename):
    consts = tuple(_renamed(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _cached_compile_source(pathname, source):
    import hashlib
    import marshal
    from importlib._bootstrap_external import MAGIC_NUMBER

    path = os.path.join(CACHE, hashlib.sha256(MAGIC_NUMBER + source).hexdigest())
    try:
        with open(path, "rb") as cached:
            return _renamed(marshal.loads(cached.read()), pathname)
    except Exception:  # absent, unreadable or torn: compile it
        pass
    code = _compile_source(pathname, source)
    try:
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "wb") as out:
            out.write(marshal.dumps(code))
        os.replace(tmp, path)
    except OSError:
        pass
    return code


if os.path.isdir(CACHE) and _compile_source is not None:
    zipimport._compile_source = _cached_compile_source
