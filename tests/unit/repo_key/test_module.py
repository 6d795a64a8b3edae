"""gpufleet.stack.repo_key run by Ansible on localhost: writes only the pinned key, idempotent, check mode, refusals."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
KEYS = ROOT / ".cache" / "mirror-unit" / "www" / "keys"


@pytest.fixture(scope="module")
def key():
    subprocess.run([ROOT / "sandbox/mirror/build", "--out", KEYS.parents[1]], check=True, capture_output=True)
    return (KEYS / "gpufleet-mirror.asc").read_text(), (KEYS / "fingerprint").read_text().strip()


def run(ansible_env, args, *flags):
    proc = subprocess.run(
        [
            Path(sys.executable).parent / "ansible",
            "localhost",
            "-c",
            "local",
            "-i",
            "localhost,",
            "-o",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-m",
            "gpufleet.stack.repo_key",
            "-a",
            json.dumps(args),
            *flags,
        ],
        env=ansible_env,
        capture_output=True,
        text=True,
        check=False,
    )
    out = proc.stdout
    return proc.returncode, json.loads(out[out.index("{") :]) if "{" in out else {"msg": out + proc.stderr}


def test_pinned_key_is_written_once(ansible_env, key, tmp_path):
    armored, fingerprint = key
    dest = tmp_path / "keyrings" / "mirror.gpg"
    args = {
        "content": armored,
        "fingerprint": " ".join(fingerprint[i : i + 4] for i in range(0, 40, 4)),
        "dest": str(dest),
    }
    rc, result = run(ansible_env, args, "--check")
    assert (rc, result["changed"], dest.exists()) == (0, True, False)  # check mode predicts, writes nothing
    rc, result = run(ansible_env, args)
    assert (rc, result["changed"], result["fingerprint"]) == (0, True, fingerprint)
    assert dest.read_bytes() == (KEYS / "gpufleet-mirror.gpg").read_bytes()
    assert oct(dest.stat().st_mode & 0o777) == "0o644"
    rc, result = run(ansible_env, args)
    assert (rc, result["changed"]) == (0, False)


def test_wrong_fingerprint_leaves_dest_alone(ansible_env, key, tmp_path):
    armored, fingerprint = key
    dest = tmp_path / "mirror.gpg"
    dest.write_bytes(b"old key")
    wrong = "EB693B3035CD5710E231E123A4B469963BF863CC"  # NVIDIA's Debian 12 CUDA key: not this file's
    rc, result = run(ansible_env, {"content": armored, "fingerprint": wrong, "dest": str(dest)})
    assert rc != 0
    assert fingerprint in result["msg"] and wrong in result["msg"] and "left unchanged" in result["msg"]
    assert dest.read_bytes() == b"old key"


def test_short_key_id_is_refused_with_the_fix(ansible_env, key, tmp_path):
    rc, result = run(ansible_env, {"content": key[0], "fingerprint": "3bf863cc", "dest": str(tmp_path / "k.gpg")})
    assert rc != 0 and "not a full key fingerprint" in result["msg"] and "40 hex digits" in result["msg"]
