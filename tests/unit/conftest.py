"""The sandbox's developer tools (sandbox/fleet, sandbox/bootcheck: scripts without a .py name), loaded as modules so
that their pure parts can be tested without Docker or qemu."""

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_sandbox_tool(name):
    loader = importlib.machinery.SourceFileLoader(name, str(ROOT / "sandbox" / name))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fleet():
    return load_sandbox_tool("fleet")


@pytest.fixture(scope="module")
def bootcheck():
    return load_sandbox_tool("bootcheck")
