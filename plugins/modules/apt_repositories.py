#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt_repositories
short_description: Several apt repositories, each with its key pinned by fingerprint and one source, in one run
version_added: "0.1.0"
description:
  - For each repository of O(repositories), what M(gpufleet.stack.repo_key) and M(gpufleet.stack.apt_source) do,
    the signing key only when it is exactly the pinned key, and exactly one source definition of the URI (one made
    another way, such as cuda-keyring's, is adopted when its keyring holds the pinned key, else disabled).
  - Then refreshes the package index (C(apt-get update)) when a key or source changed, or when the index is older
    than O(index_max_age) seconds. The refresh changes no state a user relies on, so it is not reported as a change
    (RV(index_refreshed) says it ran).
  - One module run for all of a host's repositories, where the separate modules cost two per repository and a stat.
  - A refused key stops the module before any source is written, so apt never sees a source whose key is missing.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  repositories:
    description:
      - "The repositories, each C({name, url, fingerprint, repo_url}): the key comes from C(url) and must have
        C(fingerprint); the key goes to C(<keyring_dir>/gpufleet-<name>.gpg), the source to
        C(/etc/apt/sources.list.d/gpufleet-<name>.sources): a deb822 stanza for the flat repository C(repo_url)
        (C(Suites: /)) with that C(Signed-By)."
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The files' name (C(nvidia-cuda)).
        type: str
        required: true
      url:
        description: Where the host downloads the signing key.
        type: str
        required: true
      fingerprint:
        description: Full fingerprint of the one primary key the key file must hold.
        type: str
        required: true
      repo_url:
        description: The repository's URL (a flat repository, as NVIDIA's are).
        type: str
        required: true
  keyring_dir:
    description: Where the keys go.
    type: path
    default: /usr/share/keyrings
  header:
    description: Comment lines at the top of each source file (C(ansible_managed | comment)).
    type: str
    default: ""
  index_max_age:
    description: Refresh the package index when it is older than this (seconds), even if nothing changed.
    type: int
    default: 3600
  validate_certs:
    description: Verify the key server's TLS certificate.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for a key download.
    type: int
    default: 30
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Downloads and checks the keys, compares the files, writes nothing and refreshes no index.
  diff_mode:
    support: full
  platform:
    platforms: debian
seealso:
  - module: gpufleet.stack.repo_key
  - module: gpufleet.stack.apt_source
"""

EXAMPLES = r"""
- name: NVIDIA's CUDA repository, key pinned
  gpufleet.stack.apt_repositories:
    repositories:
      - name: nvidia-cuda
        url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
        fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
        repo_url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64
"""

RETURN = r"""
repositories:
  description: "Per repository: C(name), C(key) (repo_key's result) and C(source) (apt_source's result)."
  returned: success
  type: list
  elements: dict
index_refreshed:
  description: Whether C(apt-get update) ran.
  returned: success
  type: bool
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._common.schema import secrets
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt.repo import (
    AUTH_DIR,
    RepoError,
    check_name,
    check_url,
    ensure_auth,
    ensure_key,
    ensure_source,
    fetch_key,
    host_arch,
    split_auth,
)

INDEX = "/var/cache/apt/pkgcache.bin"
SOURCES = "/etc/apt/sources.list.d"
REPO_SPEC = {
    "name": {"type": "str", "required": True},
    "url": {"type": "str", "required": True},
    "fingerprint": {"type": "str", "required": True},
    "repo_url": {"type": "str", "required": True},
}


def definition(repo, keyring_dir, header=""):
    """(keyring path, source path, uri, source text, (auth path, auth line or None)) of one repository; refuses a
    name or URL that would write a file apt misreads. Credentials in repo_url go to apt_auth.conf, never the source."""
    check_name("repositories[].name", repo["name"])
    check_url(f"repositories[{repo['name']}].url", repo["url"])
    check_url(f"repositories[{repo['name']}].repo_url", repo["repo_url"])
    bare, auth = split_auth(repo["repo_url"])
    keyring = os.path.join(keyring_dir, f"gpufleet-{repo['name']}.gpg")
    uri = bare.rstrip("/") + "/"
    if any(ch in header for ch in "\r\0"):
        raise RepoError("header holds a carriage return or NUL; give plain comment lines")
    # Every header line a comment, so that no header can add a field (Trusted: yes) to the stanza.
    head = "\n".join(
        line if line.startswith("#") else f"# {line}" for line in header.strip("\n").splitlines() if line.strip()
    )
    head = head + "\n" if head else ""
    text = f"{head}Types: deb\nURIs: {uri}\nSuites: /\nSigned-By: {keyring}\n"
    auth_file = (os.path.join(AUTH_DIR, f"gpufleet-{repo['name']}.conf"), auth)
    return keyring, os.path.join(SOURCES, f"gpufleet-{repo['name']}.sources"), uri, text, auth_file


def index_stale(path, max_age, now=None):
    """The index is missing or older than max_age seconds."""
    try:
        return ((now or time.time()) - os.stat(path).st_mtime) > max_age
    except FileNotFoundError:
        return True


def main():
    module = AnsibleModule(
        argument_spec={
            "repositories": {"type": "list", "elements": "dict", "required": True, "options": REPO_SPEC},
            "keyring_dir": {"type": "path", "default": "/usr/share/keyrings"},
            "header": {"type": "str", "default": ""},
            "index_max_age": {"type": "int", "default": 3600},
            "validate_certs": {"type": "bool", "default": True},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    p = module.params
    for repo in p["repositories"]:
        module.no_log_values.update(secrets(repo["url"]) + secrets(repo["repo_url"]))
    try:
        repos = [(repo, definition(repo, p["keyring_dir"], p["header"])) for repo in p["repositories"]]
        # Every key first: a refused one stops the run before any source is written.
        keys = [fetch_key(module, repo["url"], None, p["timeout"]) for repo, _d in repos]
        results = [
            {"name": repo["name"], "key": ensure_key(module, data, origin, repo["fingerprint"], keyring)}
            for (repo, (keyring, *_rest)), (data, origin) in zip(repos, keys, strict=True)
        ]
    except RepoError as err:
        module.fail_json(msg=f"apt_repositories: {err}", **err.extra)
    arch, diffs = host_arch(module), []
    for (repo, (_k, dest, uri, text, (auth_path, auth))), result in zip(repos, results, strict=True):
        result["auth"] = ensure_auth(module, auth_path, auth)
        result["source"], diff = ensure_source(module, uri, dest, text, repo["fingerprint"], arch=arch)
        diffs += diff
    changed = any(r["key"]["changed"] or r["source"]["changed"] or r["auth"]["changed"] for r in results)
    refresh = (changed or index_stale(INDEX, p["index_max_age"])) and not module.check_mode
    if refresh:
        rc, out, err = module.run_command(["apt-get", "update", "-q"])
        if rc != 0:
            module.fail_json(msg=f"apt-get update failed ({rc}): {(err or out).strip()[-2000:]}", repositories=results)
    module.exit_json(changed=changed, repositories=results, index_refreshed=refresh, diff=diffs)


if __name__ == "__main__":
    main()
