# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host-side work of a repository: its signing key only when it is the pinned one (repo_key), and exactly one
source definition of its URI (apt_source). Shared by those modules and apt_repositories, which does every
repository of a host and the index refresh in one module run."""

from __future__ import annotations

import glob
import os
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from ansible.module_utils.urls import fetch_url
from ansible_collections.gpufleet.stack.plugins.module_utils._common import schema as sc
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt import sources as src
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt.openpgp import (
    KeyError_,
    normalize,
    primary_fingerprints,
)
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read as read_file
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import write

MAIN = "/etc/apt/sources.list"
PARTS = "/etc/apt/sources.list.d"
# apt_auth.conf(5): apt reads credentials from here, so that they never stand in a world-readable sources file.
AUTH_DIR = "/etc/apt/auth.conf.d"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class RepoError(Exception):
    """Refused: the message says what and what to do (the module puts its name in front); extra holds fields for
    the result."""

    def __init__(self, msg, **extra):
        super().__init__(msg)
        self.extra = extra


def check_url(option, url):
    """Refuse a URL apt or the key download could not use safely: a newline or space would add a line or a second
    URI to the sources file (Trusted: yes, defeating the pinned key). The message never shows a password."""
    problems = sc.check({"type": "url", "credentials": True}, url, option, {})
    if problems:
        raise RepoError(problems[0])


def check_name(option, name):
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise RepoError(f"{option} is {sc.shown(name)}: a file name of letters, digits, '.', '_' and '-' (nvidia-cuda)")


def split_auth(url):
    """(url without user:password@, the apt_auth.conf line for it or None)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    netloc = parts.netloc.rpartition("@")[2]  # host[:port] as written: an IPv6 address keeps its brackets
    bare = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    # apt matches `machine` against host[:port]/path of the URI, without the scheme (https-only unless it says http).
    machine = netloc + parts.path.rstrip("/")
    machine = machine if parts.scheme == "https" else f"{parts.scheme}://{machine}"
    login, password = unquote(parts.username or ""), unquote(parts.password or "")
    if not login or not password:
        raise RepoError(
            f"{sc.redact(url)} needs both a user and a password (user:password@): apt_auth.conf cannot hold one "
            "without the other; for a token, write it as the password of a user your mirror accepts"
        )
    if re.search(r"\s", login + password):
        raise RepoError(
            f"the user name or password of {sc.redact(url)} holds whitespace, which apt_auth.conf cannot hold"
        )
    return bare, f"machine {machine} login {login} password {password}\n"


def ensure_auth(module, path, line):
    """path holds exactly line (mode 0600, root's), or is absent when there are no credentials; {changed, path}."""
    current, current_mode = read_file(path)
    if line is None:
        if current is not None and not module.check_mode:
            os.unlink(path)
        return {"changed": current is not None, "path": path}
    changed = current != line.encode() or current_mode != 0o600
    if changed and not module.check_mode:
        write(module, path, line, 0o600)
    return {"changed": changed, "path": path}


def fetch_key(module, url, content, timeout):
    """(bytes, where they came from)."""
    if content is not None:
        return content.encode(), "content"
    response, info = fetch_url(module, url, timeout=timeout)
    if info["status"] != 200:
        why = sc.redact(str(info.get("msg")))
        raise RepoError(f"could not download url {sc.redact(url)}: {why} (HTTP {info['status']})")
    return response.read(), sc.redact(url)


def ensure_key(module, data, source, fingerprint, dest, *, mode=0o644):
    """Write the key (binary) to dest when it is exactly the pinned key; {changed, fingerprint, dest}."""
    want = normalize(fingerprint)
    if len(want) not in (40, 64) or any(c not in "0123456789ABCDEF" for c in want):
        raise RepoError(
            f"fingerprint {fingerprint!r} is not a full key fingerprint; "
            "give all 40 hex digits (gpg --show-keys --with-fingerprint KEYFILE), not a short key id"
        )
    try:
        raw, found = primary_fingerprints(data)
    except KeyError_ as exc:
        raise RepoError(f"{source} is not an OpenPGP public key: {exc}") from exc
    if found != [want]:
        raise RepoError(
            f"{source} holds key(s) {', '.join(found)}, not the pinned fingerprint {want}; "
            f"{dest} was left unchanged. If the repository really rotated its key, check the new fingerprint "
            "with its publisher and update the pin.",
            found=found,
        )
    current, current_mode = read_file(dest)
    result = {"changed": current != raw or current_mode != mode, "fingerprint": want, "dest": dest}
    if result["changed"] and not module.check_mode:
        write(module, dest, raw, mode)  # sets the mode too
    return result


def read(path):
    """The text of path, or None."""
    data = read_file(path)[0]
    return None if data is None else data.decode("utf-8")


def host_arch(module):
    """dpkg's architecture (what $(ARCH) and [arch=] in apt sources mean); amd64 when dpkg cannot say."""
    rc, out, _err = module.run_command(["dpkg", "--print-architecture"])
    return out.strip() if rc == 0 else "amd64"


def keyring_fingerprints(path):
    try:
        with open(path, "rb") as f:
            return primary_fingerprints(f.read())[1]
    except (OSError, KeyError_):
        return []


def ensure_source(module, uri, dest, content, fingerprint, *, adopt=True, arch=None):
    """Exactly one definition of uri: adopt another one whose keyring holds the pinned key, else disable the others
    and write dest. (result {adopted, disabled, source, changed}, diffs)."""
    paths = [MAIN, *sorted(glob.glob(f"{PARTS}/*.list") + glob.glob(f"{PARTS}/*.sources"))]
    files = {path: text for path in paths if path != dest and (text := read(path)) is not None}
    foreign = src.find(files, uri, arch or host_arch(module))
    pinned = normalize(fingerprint)
    adoptable = bool(foreign) and adopt and all(keyring_fingerprints(f["signed_by"]) == [pinned] for f in foreign)
    current = read(dest)
    result = {"adopted": [], "disabled": [], "source": dest, "changed": False}
    diffs = []
    if adoptable:
        result["adopted"] = sorted({f["path"] for f in foreign})
        result["source"] = result["adopted"][0]
        if current is not None:
            result["changed"] = True
            diffs.append({"before_header": dest, "before": current, "after": ""})
            if not module.check_mode:
                os.unlink(dest)
        return result, diffs
    for path in sorted({f["path"] for f in foreign}):
        text = src.disable(files[path], [f for f in foreign if f["path"] == path])
        diffs.append({"before_header": path, "after_header": path, "before": files[path], "after": text})
        result["disabled"].append(path)
        if not module.check_mode:
            write(module, path, text)
    if current != content:
        diffs.append({"before_header": dest, "after_header": dest, "before": current or "", "after": content})
        if not module.check_mode:
            write(module, dest, content)
    result["changed"] = bool(result["disabled"]) or current != content
    return result, diffs
