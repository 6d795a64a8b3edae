"""tests/harness/gpufleet_ansiballz_cache.py: a kept module_utils walk gives the payload the same files, and a file
that changed since is walked again."""

import json
import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "harness"
MODULES = [
    "ansible.builtin.stat",
    "gpufleet.stack.gpu_facts",
    "gpufleet.stack.upgrade_gate",
    "gpufleet.stack.slurm_node",
]

# Builds each module's module_utils part of the payload as ansible-core does, then prints {module: {file: sha256}}.
PROBE = f"""
import datetime, hashlib, io, json, sys, zipfile
sys.path.insert(0, {str(HARNESS)!r})
import os
if os.environ.get("GPUFLEET_ANSIBALLZ_CACHE"):
    import gpufleet_ansiballz_cache
from ansible.plugins.loader import init_plugin_loader, module_loader
init_plugin_loader([{str(ROOT / "collections")!r}])
from ansible.executor import module_common
from ansible._internal._ansiballz import _builder
from ansible._internal._datatag._tags import Origin
found = {{}}
for name in {MODULES!r}:
    ctx = module_loader.find_plugin_with_context(name)
    fqn = ("ansible.modules." if name.startswith("ansible.") else "ansible_collections.gpufleet.stack.plugins.modules.")
    fqn += name.rsplit(".", 1)[1]
    data = Origin(path=ctx.plugin_resolved_path).tag(open(ctx.plugin_resolved_path, "rb").read())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        meta = module_common.recursive_finder(name.rsplit(".", 1)[1], fqn, data, zf, datetime.datetime(2026, 1, 1),
                                              _builder.ExtensionManager.create(task_vars={{}}))
    with zipfile.ZipFile(buf) as zf:
        found[name] = {{i.filename: hashlib.sha256(zf.read(i)).hexdigest() for i in zf.infolist()}}
    found[name]["profile"] = meta.serialization_profile
print(json.dumps(found))
"""


def payloads(cache=None):
    env = {k: v for k, v in os.environ.items() if k != "GPUFLEET_ANSIBALLZ_CACHE"}
    if cache:
        env["GPUFLEET_ANSIBALLZ_CACHE"] = str(cache)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def walked():
    return payloads()


@pytest.fixture(scope="module")
def kept(walked, tmp_path_factory):
    """A cache the first walks filled: (directory, what those walks gave)."""
    cache = tmp_path_factory.mktemp("kept")
    return cache, payloads(cache)


def test_a_kept_walk_gives_every_payload_the_same_files_as_ansible_cores_own(walked, kept):
    cache, first = kept
    assert all(len(files) > 50 for files in walked.values())
    entries = sorted(cache.iterdir())
    assert len(entries) == len(MODULES)
    stamps = [p.stat().st_mtime_ns for p in entries]
    assert first == walked
    assert payloads(cache) == walked
    assert [p.stat().st_mtime_ns for p in entries] == stamps  # answered from the cache, not walked and stored again


def test_a_file_that_changed_since_is_walked_again(walked, kept, tmp_path, monkeypatch):
    shutil.copytree(kept[0], tmp_path, dirs_exist_ok=True)
    # Imported here only for _replay: its import-time hook goes into a meta_path this test throws away.
    monkeypatch.syspath_prepend(str(HARNESS))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setenv("GPUFLEET_ANSIBALLZ_CACHE", str(tmp_path))
    import gpufleet_ansiballz_cache as harness

    for path in tmp_path.iterdir():
        entry = pickle.loads(path.read_bytes())
        last = max(i for i, file in enumerate(entry["files"]) if file[1])  # the last one read from a file
        arcname, source, digest, inline = entry["files"][last]
        assert len(digest) == 64
        entry["files"][last] = (arcname, source, "0" * 64, inline)  # as if the file had changed after it was kept
        path.write_bytes(pickle.dumps(entry))
        with zipfile.ZipFile(tmp_path / "probe.zip", "w") as zf:
            assert harness._replay(None, entry, zf, None) is False
            assert zf.namelist() == []  # nothing written when any file differs
    assert payloads(tmp_path) == walked  # walked again, and kept again with the right digests
    for path in (p for p in tmp_path.iterdir() if p.suffix != ".zip"):
        assert all(file[2] != "0" * 64 for file in pickle.loads(path.read_bytes())["files"])
