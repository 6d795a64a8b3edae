"""Redis as the shared fact cache (community.general.redis, a real redis-server from Debian that this test starts):
facts.yml fills it, the shipped gpu_groups inventory config makes groups from it, and the report reads it; no
jsonfile cache is involved. Runs on this machine under the NVML simulator, as test_constructed_groups does with
jsonfile."""

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _facts_run import facts_playbook

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture
def redis_port(tmp_path):
    server = shutil.which("redis-server")
    if not server:
        pytest.skip("redis-server not installed (make setup installs it): would check Redis as the fact cache")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(  # a real server, on loopback only, for this test
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _attempt in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield port
    proc.terminate()
    proc.wait(timeout=10)


def test_redis_holds_the_facts_for_groups_and_the_report(tmp_path, ansible_env, redis_port):
    import redis

    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text(
        "all:\n  hosts:\n    node-r:\n      ansible_connection: local\n"
        f"      ansible_python_interpreter: {sys.executable}\n"
    )
    shutil.copy(ROOT / "inventories/sandbox/zz-gpufleet.groups.yml", inventory)
    env = dict(
        ansible_env,
        ANSIBLE_CACHE_PLUGIN="community.general.redis",
        ANSIBLE_CACHE_PLUGIN_CONNECTION=f"127.0.0.1:{redis_port}:0",
        ANSIBLE_CACHE_PLUGIN_PREFIX="gpufleet_",
    )
    env.pop("ANSIBLE_CACHE_PLUGIN_CONNECTION_JSONFILE", None)
    facts = facts_playbook(inventory, tmp_path / "report", env, "h100-sxm5-80gb-x8", check=False)
    assert facts.returncode == 0, facts.stdout[-4000:] + facts.stderr[-2000:]
    # The facts are in Redis, under the prefix, and nowhere else.
    client = redis.Redis(host="127.0.0.1", port=redis_port, db=0)
    keys = [k.decode() for k in client.keys("gpufleet_*node-r")]
    assert len(keys) == 1, sorted(k.decode() for k in client.keys("*"))
    cached = json.loads(client.get(keys[0]))
    cached = json.loads(cached["__payload__"]) if "__payload__" in cached else cached  # ansible-core 2.19's wrapper
    assert cached["gpufleet_gpu"]["gpu_count"] == 8
    assert cached["gpufleet_installed"]["driver"]["present"] is False  # this machine: no driver packages
    assert not (tmp_path / "facts").exists(), "the jsonfile cache was not used"
    # A later run reads them back: the groups from the cache, with no fact gathering.
    graph = subprocess.run([BIN / "ansible-inventory", "-i", inventory, "--export", "--list"],
                           env=env, capture_output=True, text=True, check=True)  # fmt: skip
    groups = {name: data.get("hosts", []) for name, data in json.loads(graph.stdout).items() if name != "_meta"}
    assert groups.get("gpu_model_h100_80gb_hbm3") == ["node-r"], sorted(groups)
    report = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    assert [(r["host"], r["gpus"]) for r in report["rows"]] == [("node-r", "8x NVIDIA H100 80GB HBM3")]
