"""gpufleet.stack.config_files run by Ansible on localhost: writes what differs, one run for many files, check and
diff modes, modes, owner and group, refusals."""

import os


def test_writes_only_the_files_that_differ(run_module, tmp_path):
    tmp_path = tmp_path / "etc"
    tmp_path.mkdir()
    same, other, new = tmp_path / "same.conf", tmp_path / "other.conf", tmp_path / "d" / "sub" / "new.conf"
    same.write_text("a=1\n")
    same.chmod(0o644)
    other.write_text("b=old\n")
    other.chmod(0o644)
    before = same.stat().st_mtime_ns
    args = {"files": {str(same): "a=1\n", str(other): "b=2\n", str(new): "c=3\n"}}
    rc, result = run_module("gpufleet.stack.config_files", args)
    assert rc == 0, result
    assert result["changed"] and result["changed_files"] == [str(other), str(new)]
    assert [r["created"] for r in result["files"]] == [False, False, True]
    assert (other.read_text(), new.read_text()) == ("b=2\n", "c=3\n")
    assert same.stat().st_mtime_ns == before  # an equal file is not rewritten
    assert oct(new.stat().st_mode & 0o777) == "0o644" and oct(new.parent.stat().st_mode & 0o777) == "0o755"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "other.conf", "same.conf"]  # no temporary files left
    rc, result = run_module("gpufleet.stack.config_files", args)
    assert (rc, result["changed"], result["changed_files"]) == (0, False, [])


def test_a_mode_difference_alone_is_a_change(run_module, tmp_path):
    path = tmp_path / "x.sh"
    path.write_text("true\n")
    path.chmod(0o600)
    rc, result = run_module("gpufleet.stack.config_files", {"files": {str(path): "true\n"}, "mode": "0755"})
    assert (rc, result["changed"]) == (0, True)
    assert oct(path.stat().st_mode & 0o777) == "0o755" and path.read_text() == "true\n"


def test_check_mode_predicts_and_diff_shows_the_text(run_module, tmp_path):
    path = tmp_path / "nccl.conf"
    path.write_text("NCCL_DEBUG=INFO\n")
    rc, out = run_module(
        "gpufleet.stack.config_files", {"files": {str(path): "NCCL_DEBUG=WARN\n"}}, "--check", "--diff", raw=True
    )
    assert rc == 0 and "CHANGED" in out
    assert path.read_text() == "NCCL_DEBUG=INFO\n"  # check mode wrote nothing
    # The default callback prints the diff.
    assert f"--- before: {path}" in out and "-NCCL_DEBUG=INFO" in out and "+NCCL_DEBUG=WARN" in out


def test_bad_input_is_refused_with_the_fix(run_module, tmp_path):
    rc, result = run_module("gpufleet.stack.config_files", {"files": {"etc/nccl.conf": "x\n"}})
    assert rc != 0 and "'etc/nccl.conf'" in result["msg"] and "absolute path" in result["msg"]
    rc, result = run_module("gpufleet.stack.config_files", {"files": {str(tmp_path / "a"): "x\n"}, "mode": "rw-r--r--"})
    assert rc != 0 and "not an octal file mode" in result["msg"] and not (tmp_path / "a").exists()


def test_owner_and_group_are_set_when_given_and_left_alone_otherwise(run_module, tmp_path):
    path = tmp_path / "nccl.conf"
    path.write_text("NCCL_DEBUG=WARN\n")
    path.chmod(0o644)
    os.chown(path, 65534, 65534)  # nobody:nogroup, as if someone had changed it
    rc, result = run_module("gpufleet.stack.config_files", {"files": {str(path): "NCCL_DEBUG=WARN\n"}})
    assert (rc, result["changed"], path.stat().st_uid) == (0, False, 65534)  # no owner asked for: left alone
    args = {"files": {str(path): "NCCL_DEBUG=WARN\n"}, "owner": "root", "group": "root"}
    rc, result = run_module("gpufleet.stack.config_files", args, "--check")
    assert (rc, result["changed"], path.stat().st_uid) == (0, True, 65534)  # predicted, not done
    rc, result = run_module("gpufleet.stack.config_files", args)
    assert (rc, result["changed"], result["changed_files"]) == (0, True, [str(path)])
    assert (path.stat().st_uid, path.stat().st_gid) == (0, 0)
    rc, result = run_module("gpufleet.stack.config_files", args)
    assert (rc, result["changed"]) == (0, False)


def test_every_argument_is_checked_before_the_first_file_is_written(run_module, tmp_path):
    """A bad mode, a directory, a path ending in / or an unknown owner stops the run with nothing written, even for
    the good entries listed before it, and no temp file is left."""
    tmp_path = tmp_path / "etc"
    tmp_path.mkdir()
    good = str(tmp_path / "good.conf")
    cases = [
        ({"files": {good: "x\n"}, "mode": "77777"}, "not an octal file mode"),  # setuid and world-writable, 5 digits
        ({"files": {good: "x\n"}, "mode": "0666"}, "world-writable"),
        ({"files": {good: "x\n"}, "mode": "420"}, "not an octal file mode"),  # an unquoted YAML 0644
        ({"files": {good: "x\n", str(tmp_path / "sub") + "/": "y\n"}}, "is a directory"),
        ({"files": {good: "x\n", str(tmp_path): "y\n"}}, "is a directory"),
        ({"files": {good: "x\n", str(tmp_path / "a\nb"): "y\n"}}, "on one line"),
        ({"files": {good: "x\n"}, "owner": "no-such-user-gpufleet"}, "owner 'no-such-user-gpufleet' does not exist"),
        ({"files": {good: "x\n"}, "group": "no-such-group-gpufleet"}, "group 'no-such-group-gpufleet' does not exist"),
    ]
    for args, expected in cases:
        rc, result = run_module("gpufleet.stack.config_files", args)
        assert rc != 0 and expected in result["msg"], (args, result)
        assert sorted(p.name for p in tmp_path.iterdir()) == [], (args, list(tmp_path.iterdir()))


def test_a_private_file_is_never_readable_by_others(run_module, tmp_path):
    path = tmp_path / "auth.conf"
    rc, result = run_module(
        "gpufleet.stack.config_files", {"files": {str(path): "machine m login u password p\n"}, "mode": "0600"}
    )
    assert (rc, result["changed"]) == (0, True)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
