"""sandbox/mirror/serve: 127.0.0.1 only, idempotent start/stop, status by exit code."""

import socket
import subprocess
import urllib.request

from .conftest import CUDA12, MIRROR


def serve(*args):
    return subprocess.run([MIRROR / "serve", *map(str, args)], capture_output=True, text=True, check=False, timeout=30)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_start_status_stop(mirror):
    port = free_port()
    try:
        assert serve("status", "--dir", mirror).returncode == 3
        first = serve("start", "--dir", mirror, "--port", port)
        assert first.returncode == 0, first.stderr
        again = serve("start", "--dir", mirror, "--port", port)
        assert again.returncode == 0 and "already running" in again.stdout
        assert serve("start", "--dir", mirror, "--port", free_port()).returncode == 1  # one server per mirror
        assert serve("status", "--dir", mirror).returncode == 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{CUDA12}/InRelease", timeout=5) as reply:
            assert reply.read().startswith(b"-----BEGIN PGP SIGNED MESSAGE-----")
        listening = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True)
        assert [line.split()[3] for line in listening.stdout.splitlines()] == [f"127.0.0.1:{port}"]
    finally:
        stopped = serve("stop", "--dir", mirror)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert serve("stop", "--dir", mirror).returncode == 0
    assert serve("status", "--dir", mirror).returncode == 3


def test_start_refuses_an_unbuilt_mirror(tmp_path):
    out = serve("start", "--dir", tmp_path, "--port", free_port())
    assert out.returncode == 1 and "sandbox/mirror/build" in out.stderr
