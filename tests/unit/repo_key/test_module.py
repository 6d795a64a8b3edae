"""gpufleet.stack.repo_key run by Ansible on localhost: writes only the pinned key, idempotent, check mode, refusals."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
KEYS = ROOT / ".cache" / "mirror-unit" / "www" / "keys"


@pytest.fixture(scope="module")
def key():
    subprocess.run([ROOT / "sandbox/mirror/build", "--out", KEYS.parents[1]], check=True, capture_output=True)
    return (KEYS / "gpufleet-mirror.asc").read_text(), (KEYS / "fingerprint").read_text().strip()


def test_pinned_key_is_written_once(run_module, key, tmp_path):
    armored, fingerprint = key
    dest = tmp_path / "keyrings" / "mirror.gpg"
    args = {
        "content": armored,
        "fingerprint": " ".join(fingerprint[i : i + 4] for i in range(0, 40, 4)),
        "dest": str(dest),
    }
    rc, result = run_module("gpufleet.stack.repo_key", args, "--check")
    assert (rc, result["changed"], dest.exists()) == (0, True, False)  # check mode predicts, writes nothing
    rc, result = run_module("gpufleet.stack.repo_key", args)
    assert (rc, result["changed"], result["fingerprint"]) == (0, True, fingerprint)
    assert dest.read_bytes() == (KEYS / "gpufleet-mirror.gpg").read_bytes()
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    rc, result = run_module("gpufleet.stack.repo_key", args)
    assert (rc, result["changed"]) == (0, False)


def test_wrong_fingerprint_leaves_dest_alone(run_module, key, tmp_path):
    armored, fingerprint = key
    dest = tmp_path / "mirror.gpg"
    dest.write_bytes(b"old key")
    wrong = "EB693B3035CD5710E231E123A4B469963BF863CC"  # NVIDIA's Debian 12 CUDA key: not this file's
    rc, result = run_module("gpufleet.stack.repo_key", {"content": armored, "fingerprint": wrong, "dest": str(dest)})
    assert rc != 0
    assert fingerprint in result["msg"] and wrong in result["msg"] and "left unchanged" in result["msg"]
    assert dest.read_bytes() == b"old key"


def test_short_key_id_is_refused_with_the_fix(run_module, key, tmp_path):
    rc, result = run_module(
        "gpufleet.stack.repo_key", {"content": key[0], "fingerprint": "3bf863cc", "dest": str(tmp_path / "k.gpg")}
    )
    assert rc != 0 and "not a full key fingerprint" in result["msg"] and "40 hex digits" in result["msg"]
