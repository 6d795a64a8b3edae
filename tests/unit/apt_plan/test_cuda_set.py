"""The cuda_toolkit role's decisions (_controller/cuda_set.py): toolkits, the engine's arguments, the links and
the toolkits no longer listed, on the forms users write and dpkg's real output."""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.cuda_set import cuda_set

DPKG = [
    "cuda-toolkit-12-4|12.4.1-1|hold ok installed",
    "cuda-nvcc-12-4|12.4.131-1|hold ok installed",
    "libcublas-12-4|12.4.5.8-1|install ok installed",
    "cuda-toolkit-12-4-config-common|12.4.127-1|hold ok installed",
    "cuda-toolkit-12-8|12.8.1-1|hold ok installed",
    "cuda-toolkit-12-config-common|12.8.90-1|hold ok installed",
    "cuda-toolkit-11-8|11.8.0-1|deinstall ok config-files",
    "libnvidia-ml1|570.133.20-1|hold ok installed",
]


def test_one_toolkit_given_as_a_string_or_a_float():
    for given in ("12.8", 12.8, ["12.8"]):
        found = cuda_set(given)
        assert found["toolkits"] == [{"spec": "12.8", "xy": "12.8", "dash": "12-8", "major": "12"}]
        assert found["default_xy"] == "12.8"
        assert found["links"] == {"cuda": "/usr/local/cuda-12.8", "cuda-12": "/usr/local/cuda-12.8"}


def test_the_engine_arguments_pin_the_series_and_hold_every_part():
    (install,) = cuda_set(["12.8.1"], stems=["cuda-toolkit", "cuda-libraries-dev"])["installs"]
    assert install == {
        "name": "cuda-12-8",
        "version": "12.8.1",
        "series": "12.8",
        "reference": "cuda-toolkit-12-8",
        "packages": ["cuda-toolkit-12-8", "cuda-libraries-dev-12-8"],
        "pin": ["cuda-*-12-8", "cuda-toolkit-12-8-config-common"],
        "pin_version": "12.8.*",
        "members": [
            "cuda-*-12-8", "libcu*-12-8", "libnv*-12-8", "libnpp*-12-8",
            "cuda-toolkit-12-8-config-common", "cuda-toolkit-12-config-common", "cuda-toolkit-config-common",
        ],
    }  # fmt: skip


def test_each_major_link_takes_the_default_of_its_major_else_the_first_listed():
    found = cuda_set(["11.8", "12.4", "12.8", "13.0"], default="12.8.1")
    assert found["default_xy"] == "12.8"
    assert found["links"] == {
        "cuda": "/usr/local/cuda-12.8",
        "cuda-12": "/usr/local/cuda-12.8",
        "cuda-11": "/usr/local/cuda-11.8",
        "cuda-13": "/usr/local/cuda-13.0",
    }


def test_bad_versions_are_left_to_preflight():
    found = cuda_set(["12", "12.x", "12.8"], default="11.8")
    assert found["dashes"] == ["12-8"]
    assert found["default_xy"] == "11.8"  # preflight then says it is not among the toolkits


def test_the_toolkits_no_longer_listed_and_their_parts():
    found = cuda_set(["12.8"], dpkg_lines=DPKG)
    assert found["unlisted"] == ["12-4"]  # 11.8 left only its config files: not installed
    assert found["unlisted_parts"] == [
        "cuda-toolkit-12-4", "cuda-nvcc-12-4", "libcublas-12-4", "cuda-toolkit-12-4-config-common",
    ]  # fmt: skip
    assert found["unlisted_held"] == ["cuda-toolkit-12-4", "cuda-nvcc-12-4", "cuda-toolkit-12-4-config-common"]
    assert cuda_set(["12.4", "12.8"], dpkg_lines=DPKG)["unlisted"] == []
