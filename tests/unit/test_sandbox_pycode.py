"""sandbox/pycode: the nodes' compile cache for AnsiballZ payloads runs the same code and never breaks an import."""

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "sandbox" / "pycode" / "gpufleet_pycode.py"

# A payload module like a module_utils file: a nested function (so a nested code object) that fails, to show where.
PAYLOAD = textwrap.dedent(
    """
    def outer():
        def inner():
            raise ValueError("from the payload")
        return inner
    """
)

# Runs in a fresh Python, as a node's python3 runs an AnsiballZ payload: the hook loaded, then a zip import.
PROBE = textwrap.dedent(
    """
    import importlib.util, json, sys, traceback
    spec = importlib.util.spec_from_file_location("gpufleet_pycode", sys.argv[1])
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    hook.CACHE = sys.argv[2]
    import zipimport
    zipimport._compile_source = hook._cached_compile_source
    sys.path.insert(0, sys.argv[3])
    import payload_mod
    try:
        payload_mod.outer()()
    except ValueError:
        frames = traceback.extract_tb(sys.exc_info()[2])
    print(json.dumps({"file": payload_mod.__file__, "where": [f.filename for f in frames][-1]}))
    """
)


def run_probe(tmp_path, cache):
    payload = tmp_path / "payload.zip"
    if not payload.exists():
        with zipfile.ZipFile(payload, "w") as zf:
            zf.writestr("payload_mod.py", PAYLOAD)
    out = subprocess.run([sys.executable, "-c", PROBE, str(HOOK), str(cache), str(payload)],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    return out.strip()


def test_the_second_import_is_answered_from_the_cache_with_the_payloads_own_file_name(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    first = run_probe(tmp_path, cache)
    entries = list(cache.iterdir())
    assert len(entries) == 1
    stamp = entries[0].stat().st_mtime_ns
    second = run_probe(tmp_path, cache)
    assert second == first
    assert entries[0].stat().st_mtime_ns == stamp  # read, not written again
    assert f"{tmp_path / 'payload.zip'}/payload_mod.py" in first  # the traceback names the zip's file


def test_a_torn_cache_entry_is_compiled_again_and_replaced(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    good = run_probe(tmp_path, cache)
    (entry,) = cache.iterdir()
    entry.write_bytes(b"\xe3torn")
    assert run_probe(tmp_path, cache) == good
    assert entry.read_bytes() != b"\xe3torn"


def test_an_unwritable_cache_still_imports(tmp_path):
    assert "payload_mod.py" in run_probe(tmp_path, tmp_path / "absent")


def test_the_venvs_harness_loads_it_only_where_a_controller_cache_is_named(tmp_path):
    """`make venv`'s .pth: the modules the controller runs on itself (-c local) use the hook with the cache that
    GPUFLEET_PYCODE_CACHE names (tests/conftest.py sets it); without the variable the venv's Python is untouched."""
    probe = "import zipimport; print(zipimport._compile_source.__module__)"
    env = {"PATH": "/usr/bin:/bin"}
    plain = subprocess.run([sys.executable, "-c", probe], env=env, check=True, capture_output=True, text=True)
    assert plain.stdout.strip() == "zipimport"
    hooked = subprocess.run([sys.executable, "-c", probe + "; import gpufleet_pycode; print(gpufleet_pycode.CACHE)"],
                            env={**env, "GPUFLEET_PYCODE_CACHE": str(tmp_path)},
                            check=True, capture_output=True, text=True)  # fmt: skip
    assert hooked.stdout.split() == ["gpufleet_pycode", str(tmp_path)]
