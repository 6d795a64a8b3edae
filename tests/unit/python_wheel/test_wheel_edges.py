"""python_wheel's rules at their edges: names, versions and digests as users write them, RECORD and the
RFC 822 headers as wheels really carry them (PEP 427, PEP 376), and a wheel that is larger than one read block."""

import hashlib
import zipfile

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import wheel as wh

from .test_wheel import PYNVML, _b64, make_wheel

KNOWN = {"13.615.71": "a" * 64}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nvidia-ml-py", "nvidia_ml_py"),
        ("Nvidia.ML__py", "nvidia_ml_py"),  # runs of -, _ and . are one _, and the name is lower case
        ("a-._b", "a_b"),
        ("plain", "plain"),
    ],
)
def test_names_are_normalized_as_pep_427_writes_them(name, expected):
    assert wh.normalized(name) == expected
    assert wh.wheel_name(name, "1.0") == f"{expected}-1.0-py3-none-any.whl"


@pytest.mark.parametrize("version", ["13", "13.615.71", "0.0.0.1"])
def test_exact_releases_are_accepted(version):
    assert wh.expected_sha256(version, "c" * 64, KNOWN, "pynvml_") == "c" * 64


# A trailing newline too (a YAML block scalar): `$` alone would let it through into the wheel's file name.
@pytest.mark.parametrize("version", ["", None, "13.", ".13", "13..1", "13.615.71rc1", "v13", " 13", "13.615.71\n"])
def test_anything_but_an_exact_release_is_refused_before_the_digest_is_read(version):
    with pytest.raises(wh.WheelError, match=r"pynvml_version is .*; give an exact release"):
        wh.expected_sha256(version, "c" * 64, KNOWN, "pynvml_")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("  " + "d" * 64 + "\n", "d" * 64),  # pasted with spaces around it
        ("sha256:" + "E" * 64, "e" * 64),
        ("SHA256:" + "F" * 64, "f" * 64),  # read without regard to case, the prefix too
        ("d" * 63, None),
        ("d" * 65, None),
        ("g" * 64, None),
        ("sha256:", None),
    ],
)
def test_a_given_digest_is_tidied_then_held_to_64_hex_digits(given, expected):
    if expected:
        assert wh.expected_sha256("13.615.71", given, KNOWN, "pynvml_") == expected
    else:
        with pytest.raises(wh.WheelError, match=r"pynvml_sha256 is .*64 hex digits"):
            wh.expected_sha256("13.615.71", given, KNOWN, "pynvml_")


@pytest.mark.parametrize("known", [None, {}])
def test_no_recorded_digests_says_none_and_the_variable_to_set(known):
    with pytest.raises(wh.WheelError) as err:
        wh.expected_sha256("13.615.71", "", known, "x_")
    message = str(err.value)
    assert "x_version is '13.615.71'" in message and "(it does for none)" in message and "set x_sha256" in message


def test_the_recorded_versions_are_listed_sorted():
    with pytest.raises(wh.WheelError, match=r"it does for 12\.1, 13\.615\.71\)"):
        wh.expected_sha256("1.0", "", {"13.615.71": "a" * 64, "12.1": "b" * 64}, "p_")


def test_a_file_larger_than_one_read_block_is_hashed_whole(tmp_path):
    data = b"x" * (1 << 16) + b"tail"
    path = tmp_path / "big.whl"
    path.write_bytes(data)
    assert wh.file_sha256(path) == hashlib.sha256(data).hexdigest()
    wh.check_digest(path, hashlib.sha256(data).hexdigest(), "the cache")
    with pytest.raises(wh.WheelError) as err:
        wh.check_digest(path, "0" * 64, "https://m/simple")
    message = str(err.value)
    assert message.startswith(f"big.whl from https://m/simple has SHA-256 {hashlib.sha256(data).hexdigest()}")
    assert "not the pinned " + "0" * 64 in message and "nothing was installed" in message


def test_record_lines_are_read_from_the_right_and_only_sha256_entries_count():
    record = "\n".join(
        [
            "pkg/a,b.py,sha256=AAA,10",  # a comma in the path: the digest and size are the last two fields
            "pkg/c.py,md5=BBB,3",
            "pkg/RECORD,,",
            "junk",
            "pkg/d.py,sha256=,0",
        ]
    )
    assert wh._record_digests(record) == {"pkg/a,b.py": "AAA", "pkg/d.py": ""}  # pylint: disable=protected-access


def test_headers_stop_at_the_body_keep_the_first_and_skip_continuations():
    text = "Name: first\nname: second\n  Version: 9\n\tSummary: x\nVersion :  1.0  \nNoColon\n\nBody: not a header\n"
    assert wh._headers(text) == {"name": "first", "version": "1.0"}  # pylint: disable=protected-access


def _rezip(path, change):
    """The wheel at path with its members rewritten by change({name: bytes}) and RECORD made to match again."""
    with zipfile.ZipFile(path) as whl:
        files = {name: whl.read(name) for name in whl.namelist() if not name.endswith("RECORD")}
        record_name = next(name for name in whl.namelist() if name.endswith("RECORD"))
    files = change(files)
    record = "".join(f"{name},sha256={_b64(data)},{len(data)}\n" for name, data in files.items())
    with zipfile.ZipFile(path, "w") as whl:
        for name, data in files.items():
            whl.writestr(name, data)
        whl.writestr(record_name, record + f"{record_name},,\n")
    return path


def test_root_is_purelib_is_read_without_regard_to_case(tmp_path):
    files = wh.members(make_wheel(tmp_path, purelib="True"), "nvidia-ml-py", "13.615.71", ["pynvml"])
    assert files["pynvml.py"] == PYNVML


def test_a_wheel_without_root_is_purelib_is_refused(tmp_path):
    def drop(files):
        name = next(n for n in files if n.endswith("/WHEEL"))
        return dict(files, **{name: b"Wheel-Version: 1.0\nTag: py3-none-any\n"})

    path = _rezip(make_wheel(tmp_path), drop)
    with pytest.raises(wh.WheelError, match="not a pure-Python wheel"):
        wh.members(path, "nvidia-ml-py", "13.615.71", ["pynvml"])


def test_metadata_names_compare_normalized_and_versions_exactly(tmp_path):
    def rename(name, version):
        def change(files):
            meta = next(n for n in files if n.endswith("/METADATA"))
            return dict(files, **{meta: f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n\n".encode()})

        return change

    path = _rezip(make_wheel(tmp_path), rename("NVIDIA_ML.py", "13.615.71"))
    assert "pynvml.py" in wh.members(path, "nvidia-ml-py", "13.615.71", ["pynvml"])
    for name, version, held in (
        ("other", "13.615.71", "other 13.615.71, not"),
        ("nvidia-ml-py", "13.615.7", "nvidia-ml-py 13.615.7, not"),
    ):
        path = _rezip(make_wheel(tmp_path), rename(name, version))
        with pytest.raises(wh.WheelError) as err:
            wh.members(path, "nvidia-ml-py", "13.615.71", ["pynvml"])
        assert f"holds {held}" in str(err.value)


def test_a_member_missing_from_record_is_refused(tmp_path):
    path = make_wheel(tmp_path)
    with zipfile.ZipFile(path) as whl:
        files = {name: whl.read(name) for name in whl.namelist()}
    record_name = next(name for name in files if name.endswith("RECORD"))
    files[record_name] = b"".join(line + b"\n" for line in files[record_name].splitlines() if b"pynvml.py" not in line)
    with zipfile.ZipFile(path, "w") as whl:
        for name, data in files.items():
            whl.writestr(name, data)
    with pytest.raises(wh.WheelError, match=r"pynvml\.py does not match the wheel's RECORD"):
        wh.members(path, "nvidia-ml-py", "13.615.71", ["pynvml"])


@pytest.mark.parametrize("missing", ["WHEEL", "RECORD", "METADATA"])
def test_each_required_dist_info_file_is_named_when_absent(tmp_path, missing):
    path = make_wheel(tmp_path)
    with zipfile.ZipFile(path) as whl:
        files = {name: whl.read(name) for name in whl.namelist() if not name.endswith("/" + missing)}
    with zipfile.ZipFile(path, "w") as whl:
        for name, data in files.items():
            whl.writestr(name, data)
    with pytest.raises(wh.WheelError, match=f"has no nvidia_ml_py-13.615.71.dist-info/{missing}: it is not"):
        wh.members(path, "nvidia-ml-py", "13.615.71", ["pynvml"])


def test_a_module_that_is_not_utf8_is_refused(tmp_path):
    path = _rezip(make_wheel(tmp_path), lambda files: dict(files, **{"pynvml.py": b"\xff\xfe"}))
    with pytest.raises(wh.WheelError, match="cannot be read as a wheel"):
        wh.members(path, "nvidia-ml-py", "13.615.71", ["pynvml"])


def test_host_files_are_joined_under_dest_in_path_order():
    got = wh.host_files("/opt/p", {"b.py": "B", "a.dist-info/METADATA": "M", "a.py": "A"})
    assert list(got) == ["/opt/p/a.dist-info/METADATA", "/opt/p/a.py", "/opt/p/b.py"]
    assert got["/opt/p/b.py"] == "B"


def test_an_empty_patch_or_library_set_is_no_part_of_the_build_key():
    # tests/unit/horovod/test_build_key.py holds that every real difference changes the key.
    inputs = {"horovod": "0.28.1"}
    plain = wh.build_key(inputs, "cpython-311", "x86_64")
    assert wh.build_key(inputs, "cpython-311", "x86_64", patch="", against=None) == plain
    assert wh.build_key(inputs, "cpython-311", "x86_64", against={}) == plain
    assert inputs == {"horovod": "0.28.1"}  # the caller's mapping is not changed
