# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node reports, made safe to keep and to show: text decoded (invalid UTF-8 replaced, never an exception),
control characters other than tab and newline replaced, and every string bounded in length. Pure functions; the
fact modules pass their whole result through contained() before it leaves the node.

A real node's NVML strings are short (NVML_DEVICE_NAME_V2_BUFFER_SIZE is 96 bytes), but a damaged InfoROM, a
hostile process in the stack scan or a flooded kernel log can hand over anything: whatever the collection stores in
the fact cache and renders in reports goes through here first.
"""

from __future__ import annotations

import re

# Longer than any real value the facts carry (PATH_MAX is 4096; a kernel log line at most 1024).
MAX_TEXT = 4096
REPLACEMENT = "\ufffd"
# C0 and C1 controls except tab and newline, DEL, and the Unicode line and paragraph separators.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def text(value, limit=MAX_TEXT):
    """A string from a node (bytes or str) as safe text of at most `limit` characters and a note of what was cut."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    value = CONTROL.sub(REPLACEMENT, value.encode("utf-8", "replace").decode("utf-8"))
    if len(value) > limit:
        value = f"{value[:limit]}... [{len(value) - limit} more characters cut]"
    return value


def contained(value, limit=MAX_TEXT):
    """value with every string in it (keys too) made safe by text(); numbers, booleans and None unchanged."""
    if isinstance(value, (str, bytes, bytearray)):
        return text(value, limit)
    if isinstance(value, dict):
        return {
            contained(k, limit) if isinstance(k, (str, bytes)) else k: contained(v, limit) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [contained(v, limit) for v in value]
    return value
