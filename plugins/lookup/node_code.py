# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's node-side Python as files to install on a host (the gpu_monitoring role's collector)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_code
short_description: The collection's node-side Python, as files to install on a host
version_added: "0.9.0"
description:
  - Returns one dictionary, C(path -> text), of every C(.py) file of the C(module_utils) packages named (the node
    wing C(_node) and the helpers below it, C(_common)), each path under O(dest) as C(<dest>/<package>/...), for
    M(gpufleet.stack.config_files).
  - Caches (C(__pycache__), C(.pyc)) are left out. A package name must be one of the collection's C(module_utils)
    packages; anything else (a path, C(..)) is refused.
options:
  _terms:
    description: The package names, e.g. C(_node) and C(_common).
    required: true
    type: list
    elements: str
  dest:
    description: The directory the packages are installed in, the host's C(.../plugins/module_utils).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Install the collector's code
  gpufleet.stack.config_files:
    files: "{{ lookup('gpufleet.stack.node_code', '_common', '_node', dest='/usr/local/lib/x/module_utils') }}"
"""

RETURN = r"""
_raw:
  description: One dictionary, each installed path to its file's text.
  type: list
  elements: dict
"""

import os
import re

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

MODULE_UTILS = os.path.join(os.path.dirname(__file__), "..", "module_utils")
_PACKAGE = re.compile(r"_[a-z]+")


def package_files(package, dest):
    """{dest/package/relative path: text} of a module_utils package's Python files."""
    named = isinstance(package, str) and _PACKAGE.fullmatch(package)
    root = os.path.join(MODULE_UTILS, package) if named else ""
    if not named or not os.path.isfile(os.path.join(root, "__init__.py")):
        raise AnsibleLookupError(f"node_code: {package!r} is not one of the collection's module_utils packages")
    files = {}
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith(".py")):
            relative = os.path.relpath(os.path.join(here, name), MODULE_UTILS)
            with open(os.path.join(here, name), encoding="utf-8") as handle:
                files[f"{dest.rstrip('/')}/{relative}"] = handle.read()
    return files


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        dest = kwargs.pop("dest", None)
        if kwargs:
            raise AnsibleLookupError(f"node_code: unknown options {', '.join(sorted(kwargs))}; it takes dest only")
        if not isinstance(dest, str) or not dest.startswith("/"):
            raise AnsibleLookupError(f"node_code: dest {dest!r} is not an absolute path")
        files = {}
        for package in terms:
            files.update(package_files(package, dest))
        return [files]
