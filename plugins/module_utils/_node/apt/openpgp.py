# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Just enough OpenPGP (RFC 9580) to pin a repository key by fingerprint without gpg on the host.

Pure functions: dearmor an ASCII-armored key block, walk its packets, and compute the fingerprint of each
primary key (v4: SHA-1 over 0x99, a 2-octet length and the key body; v6: SHA-256 over 0x9B and a 4-octet length).
"""

from __future__ import annotations

import base64
import binascii
import hashlib

PUBLIC_KEY = 6
PUBLIC_SUBKEY = 14
ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"


class KeyError_(ValueError):
    """The data is not an OpenPGP public key block we can read."""


def dearmor(data):
    """Binary key data from armored or binary input (bytes)."""
    text = data.lstrip()
    if not text.startswith(ARMOR_BEGIN.encode()):
        return data
    lines = data.decode("ascii", "replace").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == ARMOR_BEGIN)
        # Armor headers (Version:, Comment:) end at the first empty line.
        body_at = next(i for i in range(start + 1, len(lines)) if not lines[i].strip()) + 1
    except StopIteration:
        raise KeyError_("armored key block without a header/body separator") from None
    body = []
    for text_line in lines[body_at:]:
        line = text_line.strip()
        if line.startswith("-----END") or (line.startswith("=") and len(line) == 5):
            break  # the CRC-24 checksum line, optional since RFC 9580
        body.append(line)
    try:
        return base64.b64decode("".join(body), validate=True)
    except binascii.Error as exc:
        raise KeyError_(f"armored key block is not valid base64: {exc}") from None


def packets(raw):
    """(tag, body) for each packet of binary OpenPGP data."""
    pos = 0
    while pos < len(raw):
        head = raw[pos]
        if not head & 0x80:
            raise KeyError_(f"not OpenPGP data: octet {head:#04x} at {pos} is no packet header")
        if head & 0x40:  # new format
            tag = head & 0x3F
            first = raw[pos + 1]
            if first < 192:
                length, pos = first, pos + 2
            elif first < 224:
                length, pos = ((first - 192) << 8) + raw[pos + 2] + 192, pos + 3
            elif first == 255:
                length, pos = int.from_bytes(raw[pos + 2 : pos + 6], "big"), pos + 6
            else:
                raise KeyError_("partial body lengths do not occur in key blocks")
        else:  # legacy format
            tag, kind = (head >> 2) & 0x0F, head & 0x03
            if kind == 3:
                raise KeyError_("indeterminate packet length does not occur in key blocks")
            size = (1, 2, 4)[kind]
            length, pos = int.from_bytes(raw[pos + 1 : pos + 1 + size], "big"), pos + 1 + size
        if pos + length > len(raw):
            raise KeyError_("truncated OpenPGP data")
        yield tag, raw[pos : pos + length]
        pos += length


def fingerprint(body):
    """Upper-case hex fingerprint of a public key packet body (v4 or v6)."""
    version = body[0] if body else None
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version == 6:
        return hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise KeyError_(f"OpenPGP key version {version} is not supported (4 and 6 are)")


def primary_fingerprints(data):
    """Fingerprints of the primary keys in a key block (armored or binary); subkeys are not listed."""
    raw = dearmor(data)
    found = [fingerprint(body) for tag, body in packets(raw) if tag == PUBLIC_KEY]
    if not found:
        raise KeyError_("no public key packet in the data")
    return raw, found


def normalize(text):
    """'EB69 3B30 ...' or 'eb693b30...' -> 'EB693B30...'."""
    return "".join(str(text).split()).upper()
