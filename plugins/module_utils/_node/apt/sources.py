# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt source definitions of one repository URI, wherever they are: one-line `.list` entries and deb822 `.sources`
stanzas. Pure: text in, findings and edited text out.

Why: a host set up NVIDIA's way already has the repository, from the cuda-keyring package
(/etc/apt/sources.list.d/cuda-debian12-x86_64.list: "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg]
https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /") or from the Container Toolkit's install
guide (nvidia-container-toolkit.list). A second definition of the same URI with another Signed-By makes every apt
command fail: "E: Conflicting values set for option Signed-By regarding source ...". So there is exactly one.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^\s*(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(.*)$")


def normalize_uri(uri):
    """The form apt compares: no trailing slash."""
    return uri.strip().rstrip("/")


def _options(text):
    out = {}
    for item in (text or "").split():
        key, _sep, value = item.partition("=")
        out[key.lower()] = value
    return out


def list_entries(text):
    """[(line_index, type, options dict, uri)] of the enabled one-line entries."""
    out = []
    for index, line in enumerate(text.splitlines()):
        found = _LINE.match(line)
        if found:
            out.append((index, found.group(1), _options(found.group(2)), found.group(3)))
    return out


def deb822_stanzas(text):
    """[(start, end, fields)]: line ranges [start, end) of each stanza and its fields (keys lower-cased)."""
    lines = text.splitlines()
    out, start, fields, key = [], None, {}, None
    for index, line in enumerate([*lines, ""]):
        if not line.strip():
            if start is not None:
                out.append((start, index, fields))
            start, fields, key = None, {}, None
            continue
        if line.lstrip().startswith("#"):
            start = index if start is None else start
            continue
        start = index if start is None else start
        if line[:1] in (" ", "\t") and key:
            fields[key] += "\n" + line.strip()
        else:
            key, _sep, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
    return out


def find(files, uri, arch="amd64"):
    """Every enabled definition of `uri` among {path: text}: [{"path", "format", "where", "signed_by"}].

    `where` is the line index (list) or the stanza's (start, end) (deb822). apt expands "$(ARCH)" in a URI (the
    Container Toolkit guide's list file: ".../stable/deb/$(ARCH) /"), so it counts as this host's architecture."""
    want = normalize_uri(uri)
    out = []
    for path, text in sorted(files.items()):
        if path.endswith(".sources"):
            for start, end, fields in deb822_stanzas(text):
                uris = [normalize_uri(u.replace("$(ARCH)", arch)) for u in fields.get("uris", "").split()]
                enabled = fields.get("enabled", "yes").lower() not in ("no", "false", "0")
                if want in uris and enabled:
                    out.append(
                        {
                            "path": path,
                            "format": "deb822",
                            "where": (start, end),
                            "signed_by": fields.get("signed-by", ""),
                        }
                    )
        else:
            for index, _kind, options, entry_uri in list_entries(text):
                if normalize_uri(entry_uri.replace("$(ARCH)", arch)) == want:
                    out.append(
                        {"path": path, "format": "list", "where": index, "signed_by": options.get("signed-by", "")}
                    )
    return out


def disable(text, found):
    """The file's text with the found definitions disabled, saying why: a list line commented out, a deb822 stanza
    given "Enabled: no"."""
    lines = text.splitlines()
    for item in sorted(found, key=lambda f: f["where"] if f["format"] == "list" else f["where"][0], reverse=True):
        note = "# Disabled by gpufleet.stack: this repository is defined in its own source file (one definition only)."
        if item["format"] == "list":
            lines[item["where"]] = f"{note}\n# {lines[item['where']]}"
        else:
            start, end = item["where"]
            lines[start:end] = [note, *lines[start:end], "Enabled: no"]
    return "\n".join(lines) + "\n"
