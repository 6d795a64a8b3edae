"""The wheel cache's key (horovod_wheel_cache): equal only when the same wheel would be built."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.stack.plugins.filter.build_key import build_key_filter
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.wheel import WheelError, build_key

from .test_stack_facts_marker import MARKER

# The horovod role's __horovod_build_inputs for the Molecule scenario's build (the marker it writes).
INPUTS = MARKER
PATCH = "-set(CMAKE_CXX_STANDARD 14)\n+set(CMAKE_CXX_STANDARD 17)\n"
BASE = build_key(INPUTS, "cpython-311", "x86_64", PATCH)


def test_the_key_is_16_hex_digits_and_stable():
    assert len(BASE) == 16 and int(BASE, 16) >= 0
    assert build_key(dict(reversed(list(INPUTS.items()))), "cpython-311", "x86_64", PATCH) == BASE  # order-free


@pytest.mark.parametrize(
    ("inputs", "python", "machine", "patch", "against"),
    [
        pytest.param(dict(INPUTS, framework_version="2.13.1"), "cpython-311", "x86_64", PATCH, None, id="torch"),
        pytest.param(dict(INPUTS, framework_variant="cu128"), "cpython-311", "x86_64", PATCH, None, id="variant"),
        pytest.param(dict(INPUTS, gpu_operations="nccl"), "cpython-311", "x86_64", PATCH, None, id="operations"),
        pytest.param(INPUTS, "cpython-312", "x86_64", PATCH, None, id="python"),
        pytest.param(INPUTS, "cpython-311", "aarch64", PATCH, None, id="machine"),
        # The same patch name with another text is another build.
        pytest.param(INPUTS, "cpython-311", "x86_64", PATCH.replace("17", "20"), None, id="patch-text"),
        pytest.param(INPUTS, "cpython-311", "x86_64", "", None, id="unpatched"),
        pytest.param(INPUTS, "cpython-311", "x86_64", PATCH, {"cuda": "12.8", "nccl": "2.26.2"}, id="against"),
    ],
)
def test_any_build_difference_changes_the_key(inputs, python, machine, patch, against):
    assert build_key(inputs, python, machine, patch, against) != BASE


def test_nccl_builds_against_other_libraries_differ():
    one = build_key(INPUTS, "cpython-311", "x86_64", PATCH, {"cuda": "12.8", "nccl": "2.26.2"})
    assert one != build_key(INPUTS, "cpython-311", "x86_64", PATCH, {"cuda": "12.8", "nccl": "2.27.3"})
    assert one != build_key(INPUTS, "cpython-311", "x86_64", PATCH, {"cuda": "12.9", "nccl": "2.26.2"})


@pytest.mark.parametrize(
    ("inputs", "python", "machine", "message"),
    [
        (["horovod"], "cpython-311", "x86_64", "the build inputs must be a mapping, got list"),
        (INPUTS, "", "x86_64", "the build key needs the node's python, got ''"),
        (INPUTS, "cpython-311", None, "the build key needs the node's machine, got None"),
    ],
)
def test_missing_parts_are_refused(inputs, python, machine, message):
    with pytest.raises(WheelError, match=message):
        build_key(inputs, python, machine)
    with pytest.raises(AnsibleFilterError, match=message):
        build_key_filter(inputs, python, machine)


def test_the_filter_reads_empty_options_as_none():
    assert build_key_filter(INPUTS, "cpython-311", "x86_64", patch=PATCH, against={}) == BASE
