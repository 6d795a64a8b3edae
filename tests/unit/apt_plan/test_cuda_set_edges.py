"""cuda_set at its edges: no toolkit listed, the default package stem, and two toolkits dropped at once."""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.cuda_set import cuda_set

DPKG = [
    "cuda-toolkit-12-4|12.4.1-1|install ok installed",
    "cuda-nvcc-12-4|12.4.131-1|hold ok installed",
    "cuda-toolkit-12-6|12.6.3-1|install ok installed",
    "libcublas-12-6|12.6.4.1-1|hold ok installed",
    "cuda-toolkit-12-8|12.8.1-1|hold ok installed",
]


def test_nothing_listed_decides_nothing():
    assert cuda_set([]) == {
        "toolkits": [],
        "dashes": [],
        "default_xy": "",
        "installs": [],
        "links": {},
        "unlisted": [],
        "unlisted_parts": [],
        "unlisted_held": [],
    }


def test_the_toolkit_metapackage_is_the_default_stem():
    (install,) = cuda_set("12.8")["installs"]
    assert install["packages"] == ["cuda-toolkit-12-8"]


def test_two_toolkits_no_longer_listed_are_both_removed():
    found = cuda_set(["12.8"], dpkg_lines=DPKG)
    assert found["unlisted"] == ["12-4", "12-6"]
    assert found["unlisted_parts"] == ["cuda-toolkit-12-4", "cuda-nvcc-12-4", "cuda-toolkit-12-6", "libcublas-12-6"]
    assert found["unlisted_held"] == ["cuda-nvcc-12-4", "libcublas-12-6"]


def test_a_version_with_a_trailing_newline_is_no_toolkit():
    # A YAML block scalar ("cuda: |") ends in a newline; `$` alone would have taken it, and the spec with it.
    assert cuda_set(["12.8\n"])["toolkits"] == []
    assert [t["spec"] for t in cuda_set(["12.8", "12.6.3"])["toolkits"]] == ["12.8", "12.6.3"]
