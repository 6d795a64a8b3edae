# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a small file, or write it atomically: a temp file beside it, then AnsibleModule.atomic_move (no partial
file, ever)."""

from __future__ import annotations

import grp
import os
import pwd
import re
import tempfile


class TargetError(ValueError):
    """An argument that would write the wrong file or mode: the message names it, the value and the fix."""


def parse_mode(option, text):
    """The mode of a configuration file from its octal text; refuses what no configuration file should have
    (setuid, setgid, sticky, world-writable) and what is not a mode ("77777", "rw-r--r--")."""
    # A leading 0 is required: an unquoted YAML 0644 arrives as the number 420, which would read as r---w----.
    if not isinstance(text, str) or not re.fullmatch(r"0[0-7]{3}", text.strip()):
        raise TargetError(f'{option} {text!r} is not an octal file mode; quote four octal digits: "0644"')
    mode = int(text, 8)
    if mode & 0o002:
        raise TargetError(f"{option} {text!r} makes the file world-writable; use 0644 (or 0600 for secrets)")
    return mode


def check_dest(option, path):
    """path can be written as a file: absolute, one line, not a directory (nor ending in /)."""
    if not isinstance(path, str) or not path.startswith("/") or re.search(r"[\x00-\x1f\x7f]", path):
        raise TargetError(f"{option} {path!r} is not an absolute path on one line; e.g. /etc/nccl.conf")
    if path.endswith("/") or os.path.isdir(path):
        raise TargetError(
            f"{option} {path!r} is a directory; name the file to write, e.g. {path.rstrip('/')}/gpufleet.conf"
        )


def check_owner(owner=None, group=None):
    """The owner and group exist on the host (names or numeric ids), checked before anything is written."""
    for option, value, lookup in (("owner", owner, pwd.getpwnam), ("group", group, grp.getgrnam)):
        if value is None or str(value).isdigit():
            continue
        try:
            lookup(value)
        except KeyError:
            raise TargetError(
                f"{option} {value!r} does not exist on this host; create it first or give an existing one"
            ) from None


def read(path):
    """(bytes, mode) of path, or (None, None) when it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read(), os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return None, None


def write(module, dest, data, mode=0o644):
    """dest gets data (bytes or str) with the given mode; missing parent directories are made (0755)."""
    parent = os.path.dirname(dest)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(dest)}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        if mode & 0o077 == 0:
            # A private file (credentials): a plain rename keeps the temp file's 0600 throughout, where atomic_move
            # would give a new file the umask's mode (0644) until the chmod below.
            os.replace(tmp, dest)
        else:
            module.atomic_move(tmp, dest)
    finally:
        if os.path.exists(tmp):  # atomic_move failed (it exits the module): never leave the temp file behind
            os.unlink(tmp)
    os.chmod(dest, mode)  # atomic_move keeps the old file's mode
