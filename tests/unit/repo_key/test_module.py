"""gpufleet.stack.repo_key run by Ansible on localhost: writes only the pinned key, idempotent, check mode, refusals."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
KEYS = ROOT / ".cache" / "mirror-unit" / "www" / "keys"


@pytest.fixture(scope="module")
def key(mirror):
    assert mirror / "www" / "keys" == KEYS
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


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"mode": "77777"}, "not an octal file mode"),
        ({"mode": "0666"}, "world-writable"),
        ({"dest": "keyrings/"}, "not an absolute path"),
        ({"dest": "DIR/"}, "is a directory"),
        ({"url": "https://u:hunter2@mirror.example.org/key\nTrusted: yes", "content": None}, "control character"),
    ],
    ids=["mode-not-octal", "mode-world-writable", "dest-relative", "dest-directory", "url-newline"],
)
def test_arguments_are_checked_before_anything_is_fetched_or_written(run_module, key, tmp_path, change, expected):
    armored, fingerprint = key
    tmp_path = tmp_path / "keyrings"
    tmp_path.mkdir()
    args = {"content": armored, "fingerprint": fingerprint, "dest": str(tmp_path / "k.gpg")}
    args.update({k: (v.replace("DIR", str(tmp_path)) if isinstance(v, str) else v) for k, v in change.items()})
    args = {k: v for k, v in args.items() if v is not None}
    rc, result = run_module("gpufleet.stack.repo_key", args)
    assert rc != 0 and expected in result["msg"], result
    assert "hunter2" not in result["msg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, no temp file
