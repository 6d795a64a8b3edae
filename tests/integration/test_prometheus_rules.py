"""The alert rules that ship with gpu_monitoring, and the textfile its collector writes, checked by Prometheus' own
promtool (Debian's prometheus package; `make tools` installs it)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "roles" / "gpu_monitoring" / "files" / "prometheus"
# Each rule file (the collector's gpufleet_* metrics, dcgm-exporter's DCGM_FI_*) with its rule count and its tests.
RULE_FILES = {"gpufleet-gpu": 14, "gpufleet-dcgm": 6}
COLLECTOR = ROOT / "roles" / "gpu_monitoring" / "files" / "gpufleet-gpu-health"
SIM = ROOT / "sandbox" / "nvml-sim"
PROFILES = sorted((SIM / "profiles").glob("*.json"))


def promtool(*argv, stdin=None):
    binary = shutil.which("promtool")
    assert binary, "promtool not found: `make tools` installs Debian's prometheus package, which has it"
    return subprocess.run([binary, *argv], input=stdin, capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.parametrize(("name", "count"), RULE_FILES.items())
def test_rules_are_valid(name, count):
    proc = promtool("check", "rules", str(RULES_DIR / f"{name}.rules.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {count} rules found" in proc.stdout


@pytest.mark.parametrize("name", RULE_FILES)
def test_rules_fire_and_clear_as_their_tests_say(name):
    proc = promtool("test", "rules", str(Path(__file__).parent / "prometheus" / f"{name}.rules.test.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_collector_textfile_passes_promtool(profile, tmp_path):
    """Every simulated host's textfile is valid exposition with no lint finding (node_exporter drops a whole file
    it cannot parse, so one bad line would hide every GPU metric of the node)."""
    config = tmp_path / "config.json"
    config.write_text(f'{{"textfile_dir": "{tmp_path}/tf", "state_dir": "{tmp_path}/state"}}')
    proc = subprocess.run(
        [sys.executable, str(SIM / "replay"), str(profile), "--", sys.executable, str(COLLECTOR), str(config)],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "collections")),
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (tmp_path / "tf" / "gpufleet_gpu.prom").read_text()
    assert "gpufleet_node_health_status" in text
    checked = promtool("check", "metrics", stdin=text)
    assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout + checked.stderr
