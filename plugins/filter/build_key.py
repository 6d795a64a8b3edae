# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wheel cache key of a build done on a node (module_utils/_controller/wheel.py build_key), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: build_key
short_description: The cache key of a wheel compiled on a node
version_added: "0.1.0"
description:
  - 16 hex digits of the SHA-256 of the build's declared inputs, the interpreter and machine the wheel is for, the
    text of the patch applied and the libraries it compiles against. Equal keys mean the same wheel would be built,
    so a wheel one node compiled can be installed on another (C(horovod_wheel_cache)).
options:
  _input:
    description: The build's declared inputs (the horovod role's C(__horovod_build_inputs)).
    type: dict
    required: true
  python:
    description: The interpreter's C(sys.implementation.cache_tag) (C(cpython-311)).
    type: str
    required: true
  machine:
    description: C(platform.machine()) on the node (C(x86_64), C(aarch64)).
    type: str
    required: true
  patch:
    description: The text of the patch applied to the sources; empty for none.
    type: str
    default: ""
  against:
    description: What the build compiles against, such as CUDA and NCCL versions by name; empty for nothing.
    type: dict
    default: {}
"""

EXAMPLES = r"""
cache_dir: "{{ horovod_wheel_cache }}/{{ __horovod_build_inputs | gpufleet.stack.build_key('cpython-311', 'x86_64') }}"
"""

RETURN = r"""
_value:
  description: The key, 16 lower-case hex digits.
  type: str
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.wheel import WheelError, build_key


def build_key_filter(inputs, python, machine, patch="", against=None):
    try:
        return build_key(inputs, python, machine, str(patch or ""), against or None)
    except WheelError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"build_key": build_key_filter}
