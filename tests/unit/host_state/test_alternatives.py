"""gpufleet.stack.alternatives_manual: update-alternatives --query as Debian's dpkg prints it."""

from ansible_collections.gpufleet.stack.plugins.modules.alternatives_manual import parse_query

QUERY = """Name: cuda
Link: /usr/local/cuda
Status: auto
Best: /usr/local/cuda-12.8
Value: /usr/local/cuda-12.8

Alternative: /usr/local/cuda-12.4
Priority: 124

Alternative: /usr/local/cuda-12.8
Priority: 128
"""


def test_the_query_gives_mode_value_and_the_registered_paths():
    assert parse_query(QUERY) == {
        "status": "auto",
        "value": "/usr/local/cuda-12.8",
        "alternatives": ["/usr/local/cuda-12.4", "/usr/local/cuda-12.8"],
    }
    assert parse_query("") == {"status": "", "value": "", "alternatives": []}
