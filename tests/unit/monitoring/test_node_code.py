"""The lookup gpufleet.stack.node_code: the node wing's Python files as the monitoring role installs them."""

import pytest
from ansible.errors import AnsibleLookupError
from ansible_collections.gpufleet.stack.plugins.lookup.node_code import LookupModule

DEST = "/usr/local/lib/gpufleet/health/ansible_collections/gpufleet/stack/plugins/module_utils"


def test_every_python_file_of_the_packages_under_dest_and_no_cache(tmp_path):
    (files,) = LookupModule().run(["_common", "_node"], dest=DEST + "/")
    assert files[f"{DEST}/_node/health/collector.py"].startswith("# Copyright")
    assert files[f"{DEST}/_node/__init__.py"] == "" and files[f"{DEST}/_node/gpu/__init__.py"] == ""
    assert f"{DEST}/_common/versions.py" in files
    assert all(p.endswith(".py") and "__pycache__" not in p for p in files)
    assert not any("/_compat/" in p or "/_controller/" in p for p in files)


@pytest.mark.parametrize("package", ["_nope", "..", "_node/../../..", "/etc", "_node/gpu", "", 5, None])
def test_a_name_that_is_not_a_package_is_refused(package):
    with pytest.raises(AnsibleLookupError, match="is not one of the collection's module_utils packages"):
        LookupModule().run([package], dest=DEST)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dest": "lib"}, "dest 'lib' is not an absolute path"),
        ({}, "dest None is not an absolute path"),
        ({"dest": DEST, "mode": "0600"}, "unknown options mode; it takes dest only"),
    ],
)
def test_dest_must_be_an_absolute_path_and_the_only_option(options, message):
    with pytest.raises(AnsibleLookupError, match=message):
        LookupModule().run(["_node"], **options)
