"""Credentials in a repository URL, as apt_repositories writes them (the source without them, the login in
/etc/apt/auth.conf.d), against this machine's real apt: `apt-get update` in a private apt tree fetches from a
local server that answers 401 without the right Basic credentials. Without the auth file it must fail (the
control), with it succeed; apt runs its download methods as _apt, so a root-only 0600 file must be enough."""

import base64
import functools
import http.server
import os
import shutil
import subprocess
import threading
import typing

import pytest
from ansible_collections.gpufleet.stack.plugins.modules.apt_repositories import definition

LOGIN, PASSWORD = "ci@site", "s3cr/t"  # '@' and '/' are percent-encoded in the URL
pytestmark = pytest.mark.skipif(
    not shutil.which("apt-get") or os.geteuid() != 0, reason="needs apt-get run as root (it checks real apt's auth)"
)


class Handler(http.server.SimpleHTTPRequestHandler):
    seen: typing.ClassVar[list] = []  # (path, authorised) of every request

    def do_GET(self):
        want = "Basic " + base64.b64encode(f"{LOGIN}:{PASSWORD}".encode()).decode()
        ok = self.headers.get("Authorization") == want
        self.seen.append((self.path, ok))
        if not ok:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="mirror"')
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def tree(tmp_path_factory):
    # Under /var/tmp with 0755 directories: apt's _apt user must reach the lists directory, as on a host.
    root = tmp_path_factory.mktemp("apt", numbered=True)
    base = os.path.join("/var/tmp", f"gpufleet-{root.name}-{os.getpid()}")
    for sub in ("repo/nvidia", "etc/sources.list.d", "etc/auth.conf.d", "lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(base, sub), mode=0o755)
    with open(os.path.join(base, "repo/nvidia/Packages"), "w", encoding="utf-8"):
        pass
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=os.path.join(base, "repo"))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield base, server.server_address[1]
    server.shutdown()
    shutil.rmtree(base)


def apt_update(base):
    opts = {
        "Dir::Etc::sourcelist": "/dev/null",
        "Dir::Etc::sourceparts": f"{base}/etc/sources.list.d",
        "Dir::Etc::netrc": "/dev/null",
        "Dir::Etc::netrcparts": f"{base}/etc/auth.conf.d",
        "Dir::State::Lists": f"{base}/lists",
        "Dir::Cache": f"{base}/cache",
        # The test repository is unsigned; what is under test is the login, not the signature.
        "Acquire::AllowInsecureRepositories": "true",
    }
    argv = ["apt-get", "update", *(f"-o{k}={v}" for k, v in opts.items())]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)


def test_apt_logs_in_with_the_auth_file_and_the_source_holds_no_credentials(tree):
    base, port = tree
    url = f"http://ci%40site:s3cr%2Ft@127.0.0.1:{port}/nvidia"
    repo = {"name": "nvidia-cuda", "url": f"{url}/key.asc", "fingerprint": "EB69", "repo_url": url}
    _keyring, _dest, _uri, text, (_path, line) = definition(repo, f"{base}/keys")
    assert "s3cr" not in text and "ci%40site" not in text
    # Signed-By names a key this test does not have: the unsigned test repository is trusted instead.
    source = text.replace(f"Signed-By: {base}/keys/gpufleet-nvidia-cuda.gpg", "Trusted: yes")
    with open(f"{base}/etc/sources.list.d/gpufleet-nvidia-cuda.sources", "w", encoding="utf-8") as f:
        f.write(source)

    Handler.seen.clear()
    proc = apt_update(base)
    assert "401" in proc.stdout + proc.stderr and not any(ok for _p, ok in Handler.seen), proc.stdout  # the control

    auth = f"{base}/etc/auth.conf.d/gpufleet-nvidia-cuda.conf"
    with open(os.open(auth, os.O_WRONLY | os.O_CREAT, 0o600), "w", encoding="utf-8") as f:
        f.write(line)
    Handler.seen.clear()
    proc = apt_update(base)
    assert proc.returncode == 0 and "401" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "unsandboxed" not in proc.stderr, proc.stderr  # the download ran as _apt, as on a host
    assert ("/nvidia/Packages", True) in Handler.seen, Handler.seen
    lists = os.listdir(f"{base}/lists")
    assert any(name.startswith(f"127.0.0.1:{port}_nvidia_Packages") for name in lists), lists
