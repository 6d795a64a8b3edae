"""python_wheel: the wheel rules (digest, RECORD, pure-Python, metadata) and the action on localhost: a pinned
wheel from a file, a cache or an index, written once, checked in check mode, refused with the variable named."""

import base64
import hashlib
import os
import zipfile

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import wheel as wh

PYNVML = "NVML_SUCCESS = 0\n\ndef nvmlInit():\n    return None\n"


def _b64(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(directory, *, version="13.615.71", purelib="true", meta_version=None, tamper=False):
    """A wheel laid out as nvidia-ml-py's is (pynvml.py, example.py, dist-info with RECORD)."""
    dist = f"nvidia_ml_py-{version}.dist-info"
    files = {
        "pynvml.py": PYNVML.encode(),
        "example.py": b"print('example')\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.4\nName: nvidia-ml-py\nVersion: {meta_version or version}\n\n"
        "Python Bindings for the NVIDIA Management Library\n".encode(),
        f"{dist}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: {purelib}\nTag: py3-none-any\n".encode(),
        f"{dist}/top_level.txt": b"example\npynvml\n",
    }
    record = "".join(f"{name},sha256={_b64(data)},{len(data)}\n" for name, data in files.items()) + f"{dist}/RECORD,,\n"
    path = directory / wh.wheel_name("nvidia-ml-py", version)
    with zipfile.ZipFile(path, "w") as whl:
        for name, data in files.items():
            whl.writestr(name, data + (b"# changed\n" if tamper and name == "pynvml.py" else b""))
        whl.writestr(f"{dist}/RECORD", record)
    return path


# --- rules ---------------------------------------------------------------------------------------------------


def test_the_digest_is_the_given_one_or_the_recorded_one():
    known = {"13.615.71": "a" * 64}
    assert wh.expected_sha256("13.615.71", "", known, "pynvml_") == "a" * 64
    assert wh.expected_sha256("13.615.71", "sha256:" + "B" * 64, known, "pynvml_") == "b" * 64


@pytest.mark.parametrize(
    ("version", "sha256", "words"),
    [
        ("12.575.51", "", ["pynvml_version is '12.575.51'", "records no SHA-256", "13.615.71", "set pynvml_sha256"]),
        ("13.x", "", ["pynvml_version is '13.x'", "exact release"]),
        ("13.615.71", "abc", ["pynvml_sha256 is 'abc'", "64 hex digits"]),
    ],
)
def test_a_version_without_a_digest_or_a_bad_value_is_refused(version, sha256, words):
    with pytest.raises(wh.WheelError) as err:
        wh.expected_sha256(version, sha256, {"13.615.71": "a" * 64}, "pynvml_")
    assert all(word in str(err.value) for word in words), str(err.value)


def test_members_are_the_module_and_the_metadata_checked_against_record(tmp_path):
    files = wh.members(make_wheel(tmp_path), "nvidia-ml-py", "13.615.71", ["pynvml"])
    assert sorted(files) == ["nvidia_ml_py.dist-info/METADATA", "pynvml.py"]  # no example.py, no RECORD
    assert files["pynvml.py"] == PYNVML
    assert wh.host_files("/usr/local/lib/gpufleet/python", files) == {
        "/usr/local/lib/gpufleet/python/nvidia_ml_py.dist-info/METADATA": files["nvidia_ml_py.dist-info/METADATA"],
        "/usr/local/lib/gpufleet/python/pynvml.py": PYNVML,
    }


@pytest.mark.parametrize(
    ("kwargs", "modules", "words"),
    [
        ({"tamper": True}, ["pynvml"], "pynvml.py does not match the wheel's RECORD"),
        ({"purelib": "false"}, ["pynvml"], "not a pure-Python wheel"),
        ({"meta_version": "13.580.82"}, ["pynvml"], "holds nvidia-ml-py 13.580.82, not nvidia-ml-py 13.615.71"),
        ({}, ["pynvml_utils"], "has no pynvml_utils.py"),
    ],
)
def test_a_wheel_that_is_not_what_was_pinned_is_refused(tmp_path, kwargs, modules, words):
    with pytest.raises(wh.WheelError) as err:
        wh.members(make_wheel(tmp_path, **kwargs), "nvidia-ml-py", "13.615.71", modules)
    assert words in str(err.value)


def test_a_file_that_is_no_wheel_is_refused(tmp_path):
    path = tmp_path / "x.whl"
    path.write_text("<html>proxy login</html>")
    with pytest.raises(wh.WheelError, match="cannot be read as a wheel"):
        wh.members(path, "nvidia-ml-py", "13.615.71", ["pynvml"])


def test_the_download_takes_exactly_the_wheel():
    argv = wh.pip_download_argv("/venv/bin/python", "nvidia-ml-py", "13.615.71", "/c/tmp", "https://m/simple")
    assert argv == [
        "/venv/bin/python",
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--dest",
        "/c/tmp",
        "--index-url",
        "https://m/simple",
        "nvidia-ml-py==13.615.71",
    ]
    assert "--index-url" not in wh.pip_download_argv("p", "nvidia-ml-py", "1", "d")  # pip's own configuration


# --- the action on localhost ------------------------------------------------------------------------------------


def _args(tmp_path, built, **extra):
    return {
        "name": "nvidia-ml-py",
        "version": "13.615.71",
        "known_sha256": {"13.615.71": wh.file_sha256(built)},
        "modules": ["pynvml"],
        "dest": str(tmp_path / "host"),
        "cache": str(tmp_path / "cache"),
        "var_prefix": "pynvml_",
        **extra,
    }


def test_a_given_wheel_is_written_once_and_check_mode_changes_nothing(run_module, tmp_path):
    wheel = make_wheel(tmp_path)
    args = _args(tmp_path, wheel, wheel=str(wheel))
    rc, out = run_module("gpufleet.stack.python_wheel", args, "--check", "--diff", raw=True)
    assert rc == 0 and "CHANGED" in out and not (tmp_path / "host").exists()
    rc, result = run_module("gpufleet.stack.python_wheel", args)
    assert (rc, result["changed"], result["wheel_origin"]) == (0, True, "given"), result
    assert (tmp_path / "host" / "pynvml.py").read_text() == PYNVML
    assert "Version: 13.615.71" in (tmp_path / "host" / "nvidia_ml_py.dist-info" / "METADATA").read_text()
    rc, result = run_module("gpufleet.stack.python_wheel", args)
    assert (rc, result["changed"]) == (0, False)
    (tmp_path / "host" / "pynvml.py").write_text("# edited by hand\n")
    rc, result = run_module("gpufleet.stack.python_wheel", args)
    assert (rc, result["changed"]) == (0, True) and (tmp_path / "host" / "pynvml.py").read_text() == PYNVML


def test_a_wheel_with_another_digest_is_refused_and_nothing_is_written(run_module, tmp_path):
    wheel = make_wheel(tmp_path)
    args = _args(tmp_path, wheel, wheel=str(wheel), known_sha256={"13.615.71": "0" * 64})
    rc, result = run_module("gpufleet.stack.python_wheel", args)
    assert rc != 0 and "not the pinned " + "0" * 64 in result["msg"] and "pynvml_wheel" in result["msg"]
    assert not (tmp_path / "host").exists()
    rc, result = run_module("gpufleet.stack.python_wheel", {**args, "wheel": str(tmp_path / "nope.whl")})
    assert rc != 0 and "pynvml_wheel is" in result["msg"] and "not a file on the controller" in result["msg"]


def _index(tmp_path, wheel):
    """A PEP 503 index on disk (what a mirror serves), holding the one wheel."""
    project = tmp_path / "index" / "nvidia-ml-py"
    project.mkdir(parents=True)
    target = project / wheel.name
    target.write_bytes(wheel.read_bytes())
    (project / "index.html").write_text(f'<a href="{wheel.name}#sha256={wh.file_sha256(target)}">{wheel.name}</a>\n')
    return (tmp_path / "index").as_uri()


def _only_this_index(env):
    """pip on the controller sees no configuration of this machine's (its own wheel folders and indexes)."""
    env["PIP_CONFIG_FILE"] = os.devnull
    env.pop("PIP_FIND_LINKS", None)


def test_the_wheel_is_downloaded_once_into_the_cache(run_module, ansible_env, tmp_path):
    (tmp_path / "build").mkdir()
    wheel = make_wheel(tmp_path / "build")
    args = _args(tmp_path, wheel, index_url=_index(tmp_path, wheel))
    _only_this_index(ansible_env)
    rc, result = run_module("gpufleet.stack.python_wheel", args)
    assert (rc, result.get("wheel_origin")) == (0, "downloaded"), result
    assert (tmp_path / "cache" / wheel.name).read_bytes() == wheel.read_bytes()
    (tmp_path / "index" / "nvidia-ml-py" / wheel.name).unlink()  # the index is gone: the cache serves
    rc, result = run_module("gpufleet.stack.python_wheel", args)
    assert (rc, result["wheel_origin"], result["changed"]) == (0, "cache", False), result


def test_an_unreachable_index_names_the_variables_that_fix_it(run_module, ansible_env, tmp_path):
    wheel = make_wheel(tmp_path)
    _only_this_index(ansible_env)
    args = _args(tmp_path, wheel, index_url=(tmp_path / "empty").as_uri())
    rc, result = run_module("gpufleet.stack.python_wheel", args)
    assert rc != 0 and "could not be downloaded on the controller" in result["msg"]
    assert "pynvml_index_url" in result["msg"] and "pynvml_wheel" in result["msg"]
    assert not (tmp_path / "host").exists()
