"""Finding and disabling other definitions of a repository (module_utils/_node/apt/sources.py).

The texts are as NVIDIA's installers write them: cuda-keyring's list file, the Container Toolkit guide's list
file, and the collection's own deb822 file.
"""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt import sources as src

CUDA = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
KEYRING_LIST = f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {CUDA} /\n"
CTK_LIST = (
    "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] "
    "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n"
)
OURS = (
    f"# Ansible managed\nTypes: deb\nURIs: {CUDA}\nSuites: /\nSigned-By: /usr/share/keyrings/gpufleet-nvidia-cuda.gpg\n"
)


def test_finds_the_same_uri_in_both_formats_with_or_without_the_slash():
    files = {
        "/etc/apt/sources.list.d/cuda-debian12-x86_64.list": KEYRING_LIST,
        "/etc/apt/sources.list.d/other.sources": OURS.replace(CUDA, CUDA.rstrip("/")),
        "/etc/apt/sources.list.d/nvidia-container-toolkit.list": CTK_LIST,
        "/etc/apt/sources.list": "deb http://deb.debian.org/debian bookworm main contrib\n",
    }
    found = src.find(files, CUDA)
    assert [(f["path"], f["format"], f["signed_by"]) for f in found] == [
        ("/etc/apt/sources.list.d/cuda-debian12-x86_64.list", "list", "/usr/share/keyrings/cuda-archive-keyring.gpg"),
        ("/etc/apt/sources.list.d/other.sources", "deb822", "/usr/share/keyrings/gpufleet-nvidia-cuda.gpg"),
    ]


def test_disabled_definitions_are_no_longer_found_and_say_why():
    files = {"/a.list": "deb http://deb.debian.org/debian bookworm main\n" + KEYRING_LIST, "/b.sources": OURS}
    for path, text in files.items():
        files[path] = src.disable(text, src.find({path: text}, CUDA))
    assert src.find(files, CUDA) == []
    assert "deb http://deb.debian.org/debian bookworm main" in files["/a.list"].splitlines()
    assert "# Disabled by gpufleet.stack" in files["/a.list"] and "Enabled: no" in files["/b.sources"]


def test_the_container_toolkit_guides_arch_variable_is_this_hosts_architecture():
    path = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
    found = src.find({path: CTK_LIST}, "https://nvidia.github.io/libnvidia-container/stable/deb/amd64/")
    assert [f["signed_by"] for f in found] == ["/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"]
    assert src.find({path: CTK_LIST}, "https://nvidia.github.io/libnvidia-container/stable/deb/amd64/", "arm64") == []


def test_a_disabled_deb822_stanza_is_not_a_definition():
    assert src.find({"/x.sources": OURS + "Enabled: no\n"}, CUDA) == []
    assert len(src.find({"/x.sources": OURS + "\n" + OURS}, CUDA)) == 2


# --- apt_repositories: the files it owns, and when the index is refreshed ---------------------------------------


def test_apt_repositories_writes_a_flat_deb822_stanza_per_repository():
    from ansible_collections.gpufleet.stack.plugins.modules.apt_repositories import definition

    repo = {"name": "nvidia-cuda", "url": f"{CUDA}3bf863cc.pub", "fingerprint": "EB69", "repo_url": CUDA.rstrip("/")}
    keyring, dest, uri, text, auth = definition(repo, "/usr/share/keyrings", "# Ansible managed")
    assert auth == ("/etc/apt/auth.conf.d/gpufleet-nvidia-cuda.conf", None)  # no credentials: no auth file
    assert (keyring, dest, uri) == (
        "/usr/share/keyrings/gpufleet-nvidia-cuda.gpg",
        "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources",
        CUDA,
    )
    assert text == OURS  # the same stanza the role's template wrote before
    assert src.find({dest: text}, CUDA, "amd64")[0]["signed_by"] == keyring


def test_credentials_go_to_apt_auth_conf_never_the_source():
    from ansible_collections.gpufleet.stack.plugins.modules.apt_repositories import definition

    mirror = "https://ci%40site:s3cr%2Ft@mirror.example.org:8443/nvidia/cuda"
    repo = {
        "name": "nvidia-cuda",
        "url": "https://mirror.example.org/key.asc",
        "fingerprint": "EB69",
        "repo_url": mirror,
    }
    _keyring, _dest, uri, text, (path, line) = definition(repo, "/usr/share/keyrings")
    assert uri == "https://mirror.example.org:8443/nvidia/cuda/"
    assert (
        "s3cr" not in text
        and "ci%40site" not in text
        and "URIs: https://mirror.example.org:8443/nvidia/cuda/\n" in text
    )
    assert path == "/etc/apt/auth.conf.d/gpufleet-nvidia-cuda.conf"
    # apt_auth.conf(5): without a protocol the entry matches https only; the password is percent-decoded.
    assert line == "machine mirror.example.org:8443/nvidia/cuda login ci@site password s3cr/t\n"
    # IPv6 keeps its brackets in the source and the machine line.
    v6 = dict(repo, repo_url="https://u:p@[2001:db8::1]:8443/nvidia")
    assert definition(v6, "/k")[2] == "https://[2001:db8::1]:8443/nvidia/"
    assert definition(v6, "/k")[4][1] == "machine [2001:db8::1]:8443/nvidia login u password p\n"
    http = dict(repo, repo_url="http://u:p@10.0.0.1/nvidia")
    assert definition(http, "/k")[4][1] == "machine http://10.0.0.1/nvidia login u password p\n"


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("repo_url", "http://mirror.example.org/nvidia\nTrusted: yes", "control character"),
        ("repo_url", "http://mirror.example.org/nvidia http://evil.example.org", "whitespace"),
        ("repo_url", "ftp://mirror.example.org/nvidia", "scheme must be http, https or file"),
        ("repo_url", "http:///nvidia", "names no host"),
        ("url", "https://u:hunter2@mirror.example.org/key\n", "control character"),
        ("name", "../../etc/passwd", "a file name of letters"),
        ("repo_url", "https://:hunter2@mirror.example.org/nvidia", "needs both a user and a password"),
        ("repo_url", "https://hunter2@mirror.example.org/nvidia", "needs both a user and a password"),
    ],
)
def test_a_url_or_name_that_would_write_a_broken_file_is_refused(field, value, expected):
    from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt.repo import RepoError
    from ansible_collections.gpufleet.stack.plugins.modules.apt_repositories import definition

    repo = {"name": "nvidia-cuda", "url": "https://m.example.org/k.asc", "fingerprint": "EB69", "repo_url": CUDA}
    with pytest.raises(RepoError) as err:
        definition(dict(repo, **{field: value}), "/usr/share/keyrings")
    assert expected in str(err.value)
    assert "hunter2" not in str(err.value)


def test_the_index_is_refreshed_when_missing_or_older_than_the_limit(tmp_path):
    from ansible_collections.gpufleet.stack.plugins.modules.apt_repositories import index_stale

    index = tmp_path / "pkgcache.bin"
    assert index_stale(str(index), 3600)
    index.write_text("")
    mtime = index.stat().st_mtime
    assert not index_stale(str(index), 3600, now=mtime + 3599)
    assert index_stale(str(index), 3600, now=mtime + 3601)
