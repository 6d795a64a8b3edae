"""The OpenPGP fingerprint reader against keys gpg made (the mirror's) and gpg's own answer."""

import base64
import shutil
import subprocess

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt import openpgp


@pytest.fixture(scope="module")
def mirror_keys(mirror):
    keys = mirror / "www" / "keys"
    return {
        "asc": (keys / "gpufleet-mirror.asc").read_bytes(),
        "gpg": (keys / "gpufleet-mirror.gpg").read_bytes(),
        "fingerprint": (keys / "fingerprint").read_text().strip(),
    }


def gpg_fingerprints(path):
    out = subprocess.run(
        ["gpg", "--batch", "--show-keys", "--with-colons", path], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    return [lines[i + 1].split(":")[9] for i, line in enumerate(lines) if line.startswith("pub:")]


def test_armored_and_binary_give_gpgs_fingerprint(mirror_keys, tmp_path):
    raw_a, found_a = openpgp.primary_fingerprints(mirror_keys["asc"])
    raw_b, found_b = openpgp.primary_fingerprints(mirror_keys["gpg"])
    assert found_a == found_b == [mirror_keys["fingerprint"]]
    assert raw_a == raw_b == mirror_keys["gpg"]  # dearmoring gives exactly gpg --export's bytes
    if shutil.which("gpg"):
        (tmp_path / "k.asc").write_bytes(mirror_keys["asc"])
        assert gpg_fingerprints(tmp_path / "k.asc") == found_a


def test_subkeys_are_not_primary_keys(mirror_keys):
    tags = [tag for tag, _body in openpgp.packets(mirror_keys["gpg"])]
    assert tags.count(openpgp.PUBLIC_KEY) == 1
    assert len(tags) >= 2  # user id + signatures follow the key
    # A subkey packet (tag 14, new format) appended to the key: still one primary fingerprint, the same one.
    body = next(body for tag, body in openpgp.packets(mirror_keys["gpg"]) if tag == openpgp.PUBLIC_KEY)
    with_subkey = mirror_keys["gpg"] + bytes([0xC0 | openpgp.PUBLIC_SUBKEY, len(body)]) + body
    assert openpgp.PUBLIC_SUBKEY in [tag for tag, _body in openpgp.packets(with_subkey)]
    assert openpgp.primary_fingerprints(with_subkey)[1] == [mirror_keys["fingerprint"]]


def test_two_keys_in_one_file_are_both_reported(mirror_keys, tmp_path):
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    subprocess.run(
        [
            "gpg",
            "--batch",
            "--homedir",
            home,
            "--passphrase",
            "",
            "--quick-gen-key",
            "intruder@example.org",
            "ed25519",
            "sign",
            "never",
        ],
        check=True,
        capture_output=True,
    )
    other = subprocess.run(["gpg", "--batch", "--homedir", home, "--export"], check=True, capture_output=True).stdout
    _raw, found = openpgp.primary_fingerprints(mirror_keys["gpg"] + other)
    assert len(found) == 2 and found[0] == mirror_keys["fingerprint"]


def test_armor_with_headers_and_checksum_line(mirror_keys):
    body = base64.b64encode(mirror_keys["gpg"]).decode()
    armored = "\n".join(
        [
            openpgp.ARMOR_BEGIN,
            "Comment: test",
            "",
            *[body[i : i + 64] for i in range(0, len(body), 64)],
            "=abcd",
            "-----END PGP PUBLIC KEY BLOCK-----",
            "",
        ]
    ).encode()
    assert openpgp.primary_fingerprints(armored)[1] == [mirror_keys["fingerprint"]]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<html>404 Not Found</html>", "no packet header"),
        (b"", "no public key packet"),
        (b"\x99\x01\x00\x04", "truncated"),
        (openpgp.ARMOR_BEGIN.encode() + b"\n\n!!!not base64!!!\n", "not valid base64"),
    ],
)
def test_garbage_is_refused_with_a_reason(data, message):
    with pytest.raises(openpgp.KeyError_, match=message):
        openpgp.primary_fingerprints(data)


def test_normalize_accepts_gpg_spacing():
    assert openpgp.normalize("eb69 3b30 35cd 5710") == "EB693B3035CD5710"
