# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a small file, or write it atomically: a temp file beside it, then AnsibleModule.atomic_move (no partial
file, ever)."""

from __future__ import annotations

import os
import tempfile


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
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.chmod(tmp, mode)
    module.atomic_move(tmp, dest)
    os.chmod(dest, mode)  # atomic_move keeps the old file's mode
