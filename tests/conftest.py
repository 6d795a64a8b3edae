"""Shared pytest setup: import the collection from this checkout as ansible_collections.gpufleet.stack."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# collections/ansible_collections/gpufleet/stack links back to the checkout root.
sys.path.insert(0, str(ROOT / "collections"))


@pytest.fixture
def ansible_env(tmp_path):
    """Environment for running ansible/ansible-playbook from this checkout in a test: the checkout's ansible.cfg,
    the toolchain first on PATH, no colour, and a fact cache of the test's own (never the checkout's .cache/)."""
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"),
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    )
