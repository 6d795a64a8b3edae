"""stack_facts reports a Horovod build as patched only when the horovod role's marker vouches for that install."""

import json

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.scan import Scanner
from ansible_collections.gpufleet.stack.plugins.modules import stack_facts

MARKER = {
    "horovod": "0.28.1",
    "framework": "torch",
    "framework_version": "2.13.0",
    "framework_variant": "cpu",
    "gpu_operations": "gloo",
    "patched": True,
    "patch": "horovod-0.28.1-cxx17.patch",
    "built_by": "gpufleet.stack.horovod",
}


def no_commands(argv):
    return 1, "", f"{argv[0]}: not found"


def venv_with_horovod(root, version="0.28.1", marker=None):
    site = root / "venv/lib/python3.11/site-packages"
    (site / f"horovod-{version}.dist-info").mkdir(parents=True)
    (site / f"horovod-{version}.dist-info/METADATA").write_text(
        f"Metadata-Version: 2.1\nName: horovod\nVersion: {version}\nRequires-Dist: cloudpickle\n"
    )
    (site / "horovod").mkdir()
    if marker is not None:
        (site / "horovod/gpufleet_build.json").write_text(marker if isinstance(marker, str) else json.dumps(marker))


def horovod(root):
    found = stack_facts.gather(Scanner(root=str(root), run=no_commands, probe_libraries=False), ["/venv"])
    (entry,) = found["frameworks"]["horovod"]
    return entry


def test_marked_build_is_reported_patched(tmp_path):
    venv_with_horovod(tmp_path, marker=MARKER)
    entry = horovod(tmp_path)
    assert entry["version"] == "0.28.1"
    assert entry["patched"] is True
    assert entry["patch"] == "horovod-0.28.1-cxx17.patch"
    assert entry["gpu_operations"] == "gloo"
    assert entry["env"] == "/venv"


@pytest.mark.parametrize(
    "marker",
    [
        pytest.param(None, id="no-marker-pypi-install"),
        pytest.param("{not json", id="unreadable-marker"),
        # Left behind by an uninstall of a patched 0.28.1, next to a different install: it must not vouch for it.
        pytest.param(dict(MARKER, horovod="0.28.0"), id="marker-for-another-version"),
    ],
)
def test_unmarked_build_is_reported_unpatched(tmp_path, marker):
    venv_with_horovod(tmp_path, marker=marker)
    entry = horovod(tmp_path)
    assert entry["version"] == "0.28.1"
    assert entry["patched"] is False
    assert entry["patch"] is None
